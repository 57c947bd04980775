#!/bin/bash
# 64 streams, (a) against (d), the two workloads taking turns; raw output kept per command
cd /work/main
export WORKBENCH_DATA_DIR=/root/.local/share/vllm-workbench QT_QPA_PLATFORM=offscreen
out=${OUT:-/tmp/exp/series}
mkdir -p $out
for i in 1 2 3; do
  for w in long short; do
    if [ $w = long ]; then args="--prompt-len 512 --output-len 256"; else args="--prompt-len 128 --output-len 128"; fi
    d=$out/$w-$i; mkdir -p $d
    .venv/bin/python -m workbench bench compare --requests 64 $args --repeats 8 --single-samples 1 --paths a,d --out $d > $d/full.log 2>&1
    grep -v -E "^\(|WARNING|INFO|^\[W|Warning|warnings.warn|^  if hasattr|^  wrapper|Loading safetensors|^$|Triton is installed" $d/full.log > $d/console.log
    echo "$w-$i $(grep 'per repeat' $d/full.log | head -1)"
  done
done
