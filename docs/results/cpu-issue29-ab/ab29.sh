#!/bin/bash
# Issue 29's figure that must not move: bench gui-stall at 120,000 blocks, before (A) and after (B),
# interleaved in one run, each build from its own tree (git worktree add /tmp/ab/A <before>, /tmp/ab/B <after>).
export WORKBENCH_DATA_DIR=/tmp/wb-lead-data QT_QPA_PLATFORM=offscreen
out=${OUT:-/tmp/ab/out29}; n=${N:-6}
mkdir -p $out
for i in $(seq 1 $n); do for b in A B; do
  (cd /tmp/ab/$b && git log --oneline -1 > $out/$b-$i-which.txt
   /work/main/.venv/bin/python -m workbench bench gui-stall --requests 256 --output-len 256 --blocks 120000 > $out/$b-$i-full.log 2>&1)
  grep -v -E "^\(|WARNING|INFO|^\[W|Warning|warnings.warn|^  if hasattr|^  wrapper|Loading safetensors|^$|Triton is installed" $out/$b-$i-full.log > $out/$b-$i.log
  echo "$b-$i $(date +%T) $(grep -A2 'stall ms p50' $out/$b-$i.log | tail -1)"
done; done
