#!/bin/bash
# Interleaved A/B for issue 27: A = 7e3386c (before), B = the build after; each run from its own tree.
export WORKBENCH_DATA_DIR=/tmp/wb-lead-data QT_QPA_PLATFORM=offscreen
out=${OUT:-/tmp/ab/out27}; n=${N:-2}
mkdir -p $out
for i in $(seq 1 $n); do
  for b in A B; do
    d=$out/$b-$i; mkdir -p $d
    (cd /tmp/ab/$b && git log --oneline -1 > $d/which.txt && /work/main/.venv/bin/python -c "import workbench; print(workbench.__file__)" >> $d/which.txt
     /work/main/.venv/bin/python -m workbench bench compare --requests 64 --prompt-len 128 --output-len 128 --repeats 8 --single-samples 1 --paths a,d --out $d > $d/compare-full.log 2>&1
     /work/main/.venv/bin/python -m workbench bench gui-stall --requests 256 --output-len 256 --blocks 120000 > $d/gui-stall-full.log 2>&1)
    for f in compare gui-stall; do
      grep -v -E "^\(|WARNING|INFO|^\[W|Warning|warnings.warn|^  if hasattr|^  wrapper|Loading safetensors|^$|Triton is installed" $d/$f-full.log > $d/$f.log
    done
    echo "$b-$i $(date +%T) $(grep -o 'median \*\*[0-9.]*\*\*' $d/benchmark.md | head -1) | $(grep -A3 'stall ms p50' $d/gui-stall.log | tail -1)"
  done
done
d=$out/B-ui-stalls; mkdir -p $d
(cd /tmp/ab/B && /work/main/.venv/bin/python -m workbench bench ui-stalls --preset low-latency > $d/full.log 2>&1)
grep -v -E "^\(|WARNING|INFO|^\[W|Warning|warnings.warn|^  if hasattr|^  wrapper|Loading safetensors|^$|Triton is installed" $d/full.log > $d/ui-stalls.log
echo "ui-stalls done $(date +%T)"
