#!/bin/bash
# new, old, new, old: the GUI stall bench at 120,000 blocks on CPU, the same machine load for both builds
cd /work/main
for i in 3 4 5; do
  for build in new old; do
    if [ $build = new ]; then PP=/work/main; else PP=/work/wt-old; fi
    PYTHONPATH=$PP WORKBENCH_DATA_DIR=/tmp/wbdata-me QT_QPA_PLATFORM=offscreen timeout 600 /work/main/.venv/bin/python -m workbench bench gui-stall --requests 256 --output-len 256 --blocks 120000 > /tmp/prof/stall-$build-$i.log 2>&1
    echo "== $build $i $(date +%T)"; grep -A4 "^GUI event-loop" /tmp/prof/stall-$build-$i.log
  done
done
