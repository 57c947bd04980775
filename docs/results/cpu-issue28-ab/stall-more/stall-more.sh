#!/bin/bash
# gui-stall alone, interleaved, B first: more samples of the stall figures.
export WORKBENCH_DATA_DIR=/tmp/wb-lead-data QT_QPA_PLATFORM=offscreen
out=/tmp/ab/out28-stall; mkdir -p $out
for i in 1 2 3; do for b in B A; do
  (cd /tmp/ab/$b && /work/main/.venv/bin/python -m workbench bench gui-stall --requests 256 --output-len 256 --blocks 120000 > $out/$b-$i-full.log 2>&1)
  grep -v -E "^\(|WARNING|INFO|^\[W|Warning|warnings.warn|^  if hasattr|^  wrapper|Loading safetensors|^$|Triton is installed" $out/$b-$i-full.log > $out/$b-$i.log
  echo "$b-$i $(date +%T) $(grep -A2 'stall ms p50' $out/$b-$i.log | tail -1)"
done; done
