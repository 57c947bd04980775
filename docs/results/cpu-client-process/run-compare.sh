cd /work/wt-split
for client in $CLIENTS; do
  PYTHONPATH=/work/wt-split WORKBENCH_DATA_DIR=/tmp/wbdata-split QT_QPA_PLATFORM=offscreen /work/main/.venv/bin/python -m workbench bench compare --requests 64 --prompt-len 128 --output-len 128 --repeats 8 --single-samples 1 --paths a,d --client $client --out docs/results/cpu-client-process/compare-$client$SUFFIX 2>&1 | grep -v " INFO " > docs/results/cpu-client-process/compare-$client$SUFFIX.log
done
echo ALLDONE > /tmp/split-bench/done
