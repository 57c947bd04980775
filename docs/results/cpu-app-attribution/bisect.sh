#!/bin/bash
# d/a on CPU at several commits: 64 streams, 4 repeats each
for c in "$@"; do
  rm -rf /tmp/bis-$c; git -C /work/main worktree add -q --detach /tmp/bis-$c $c
  cd /tmp/bis-$c
  PYTHONPATH=/tmp/bis-$c WORKBENCH_DATA_DIR=/tmp/wbdata-me QT_QPA_PLATFORM=offscreen timeout 600 /work/main/.venv/bin/python -m workbench bench compare --requests 64 --prompt-len 128 --output-len 128 --repeats 6 --single-samples 1 --paths a,d --out /tmp/cpu-d/bis-$c > /tmp/cpu-d/bis-$c.log 2>&1
  echo "== $c"; grep -E "per repeat|CPU µs" /tmp/cpu-d/bis-$c.log
  cd /work/main; git worktree remove --force /tmp/bis-$c
done
