#!/bin/bash
# interleaved A/B, each build run from its own tree (python -m puts the working folder first on sys.path)
export WORKBENCH_DATA_DIR=/root/.local/share/vllm-workbench QT_QPA_PLATFORM=offscreen
args="--prompt-len 128 --output-len 128"
for i in $(seq 1 $1); do
  for b in old new; do
    d=/tmp/exp/ab3/$b-short-$i; mkdir -p $d
    if [ $b = old ]; then cd /tmp/wt-old; else cd /work/main; fi
    /work/main/.venv/bin/python -c "import workbench; print('code from', workbench.__file__)" > $d/which.txt
    /work/main/.venv/bin/python -m workbench bench compare --requests 64 $args --repeats 8 --single-samples 1 --paths a,d --out $d > $d/full.log 2>&1
    grep -v -E "^\(|WARNING|INFO|^\[W|Warning|warnings.warn|^  if hasattr|^  wrapper|Loading safetensors|^$|Triton is installed" $d/full.log > $d/console.log
    echo "$b-short-$i $(cat $d/which.txt) $(grep 'throughput, per repeat' $d/full.log | sed 's/.*median/median/' | cut -c1-40) | a $(grep '^| (a)' $d/full.log | cut -d'|' -f3)"
  done
done
