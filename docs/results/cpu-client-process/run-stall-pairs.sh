#!/bin/bash
# Two more pairs of the GUI stall bench at 120,000 blocks, the clients taking turns: thread, process, process, thread.
cd /work/wt-split
i=0
for client in thread process process thread; do
  i=$((i + 1))
  PYTHONPATH=/work/wt-split WORKBENCH_DATA_DIR=/tmp/wbdata-split QT_QPA_PLATFORM=offscreen timeout 600 /work/main/.venv/bin/python -m workbench bench gui-stall --requests 256 --output-len 256 --blocks 120000 --client $client 2>&1 | grep -v " INFO " > docs/results/cpu-client-process/gui-stall-120k-$client-pair$i.log
done
