cd /work/wt-split
for client in process thread; do
  PYTHONPATH=/work/wt-split WORKBENCH_DATA_DIR=/tmp/wbdata-split QT_QPA_PLATFORM=offscreen timeout 600 /work/main/.venv/bin/python -m workbench bench gui-stall --requests 256 --output-len 256 --blocks 120000 --client $client 2>&1 | grep -v " INFO " > docs/results/cpu-client-process/gui-stall-120k-$client.log
done
PYTHONPATH=/work/wt-split /work/main/.venv/bin/python -m workbench bench client-wire > docs/results/cpu-client-process/client-wire.log 2>&1
echo ALLDONE > /tmp/split-bench/stalldone
