#!/bin/bash
# Issue 27's tests (from main's HEAD) against the code of 7e3386c, the build before the issue's work.
cd /tmp/before27
export QT_QPA_PLATFORM=offscreen WORKBENCH_DATA_DIR=/tmp/wb-lead-data
git log --oneline -1 > /tmp/before27-out/which.txt
/work/main/.venv/bin/python -c "import workbench; print(workbench.__file__)" >> /tmp/before27-out/which.txt
for f in test_early_question test_status_true test_off_gui_thread test_conversation_titles test_batch_progress test_session_report test_install_xcb test_client_process; do
  timeout 1500 nice -n 5 /work/main/.venv/bin/python -m pytest -p no:cacheprovider -q -rA --junitxml=/tmp/before27-out/$f.xml tests/$f.py > /tmp/before27-out/$f.log 2>&1
  echo "$f rc=$? $(tail -1 /tmp/before27-out/$f.log)" >> /tmp/before27-out/summary.txt
done
echo done >> /tmp/before27-out/summary.txt
