#!/usr/bin/env bash
# Runs bench compare and bench snapshot on the build before the structure step (3fd56ce, worktree
# /work/wt-before, its plugin entry point from /tmp/before-ep) and on the current build, alternating.
set -u
OUT=$1; mkdir -p $OUT
PY=/work/main/.venv/bin/python
export WORKBENCH_DATA_DIR=/tmp/wbdata-main
for round in 1 2; do
  for build in before after; do
    if [ $build = before ]; then dir=/work/wt-before; extra=/tmp/before-ep; else dir=/work/main; extra=; fi
    echo "=== round $round: $build" | tee -a $OUT/summary.txt
    (cd $dir && PYTHONPATH=$dir${extra:+:$extra} $PY -m workbench bench compare --requests 64 --prompt-len 128 --output-len 128 --repeats 3 --hf-tokens 16 --single-samples 2 --out $OUT/compare-$build-$round > $OUT/compare-$build-$round.log 2>&1)
    grep -A12 "^Workload" $OUT/compare-$build-$round.log | tee -a $OUT/summary.txt
    (cd $dir && PYTHONPATH=$dir${extra:+:$extra} $PY -m workbench bench --max-num-seqs 256 snapshot --blocks 120000 --running 256 --prompt-len 512 --samples 100 --kv-bytes 2400000000 > $OUT/snapshot-$build-$round.log 2>&1)
    grep -A3 "^| blocks" $OUT/snapshot-$build-$round.log | tee -a $OUT/summary.txt
  done
done
