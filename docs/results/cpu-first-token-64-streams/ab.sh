#!/bin/bash
# Interleaved A/B of two builds, each run from its own tree (python -m puts the working folder first
# on sys.path, so the tree run is the build measured); 64 streams, short or long workload.
export WORKBENCH_DATA_DIR=/root/.local/share/vllm-workbench QT_QPA_PLATFORM=offscreen
out=${OUT:-/tmp/ab/out}; n=${N:-3}; w=${W:-short}
mkdir -p $out
if [ $w = long ]; then args="--prompt-len 512 --output-len 256"; else args="--prompt-len 128 --output-len 128"; fi
for i in $(seq 1 $n); do
  for b in ${BUILDS:-A B}; do
    d=$out/$b-$w-$i; mkdir -p $d
    (cd /tmp/ab/$b && /work/main/.venv/bin/python -c "import workbench, sys; print(workbench.__file__)" > $d/which.txt
     /work/main/.venv/bin/python -m workbench bench compare --requests 64 $args --repeats 8 --single-samples 1 --paths a,d --out $d > $d/full.log 2>&1)
    grep -v -E "^\(|WARNING|INFO|^\[W|Warning|warnings.warn|^  if hasattr|^  wrapper|Loading safetensors|^$|Triton is installed" $d/full.log > $d/console.log
    echo "$b-$w-$i $(grep -o 'median \*\*[0-9.]*\*\*' $d/benchmark.md | head -1) $(grep "run's edges" $d/benchmark.md | sed 's/.*token: //')"
  done
done
