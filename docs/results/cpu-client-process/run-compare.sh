cd /work/wt-split
for client in $CLIENTS; do
  PYTHONPATH=/work/wt-split WORKBENCH_DATA_DIR=/tmp/wbdata-split QT_QPA_PLATFORM=offscreen /work/main/.venv/bin/python -m workbench bench compare --requests 64 --prompt-len 128 --output-len 128 --repeats 8 --single-samples 1 --paths a,d --client $client --out docs/results/cpu-client-process/compare-$client$SUFFIX 2>&1 | grep -v " INFO " > docs/results/cpu-client-process/compare-$client$SUFFIX.log
done
echo ALLDONE > /tmp/split-bench/done
# runs 1-2: CLIENTS="thread process", then "process thread" with SUFFIX=-run2; runs 3-4 the same with -run3, -run4
