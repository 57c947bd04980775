#!/bin/bash
for i in 1 2 3 4 5 6 7 8; do
  for w in short long; do
    OUT=/tmp/ab/out N=1 W=$w BUILDS=B bash /work/main/docs/results/cpu-first-token-64-streams/ab.sh | sed "s/B-$w-1/B-$w-$i/"
    mv /tmp/ab/out/B-$w-1 /tmp/ab/out/B-$w-$i.tmp
  done
done
for d in /tmp/ab/out/*.tmp; do mv $d ${d%.tmp}; done
