#!/bin/bash
# Interleaved rounds for BENCHMARKS.md ("Every fused f32 kernel at sixteen lanes"): main's
# HEAD (target/graphlift-base) beside this build (target/release/graphlift) and the C loops
# (target/c_exprs), ns per element on one thread, E1-E4 and x1-x4 at 2^14 and 2^24.
# Prints "expr n build ns" lines; the table takes the median of the rounds.
#   git worktree add /tmp/base <main> && (cd /tmp/base && cargo build --release -p graphlift-cli)
#   cp /tmp/base/target/release/graphlift target/graphlift-base
#   gcc -O3 -march=native -ffast-math -fopenmp-simd scripts/c_exprs.c -o target/c_exprs -lm
#   scripts/bench-vector-width.sh [ROUNDS]
set -e
cd "$(dirname "$0")/.."
py=target/models/venv/bin/python
for n in 16384 16777216; do
  [ -f target/vector-width/$n/x4.onnx ] || $py scripts/vector_width_models.py target/vector-width/$n $n
done
export GRAPHLIFT_NUM_THREADS=1
for round in $(seq "${1:-3}"); do
  for n in 16384 16777216; do
    for e in E1 E2 E3 E4 x1 x2 x3 x4; do
      expr=$e; [ "${e:0:1}" = x ] && expr=target/vector-width/$n/$e.onnx
      for bin in target/graphlift-base target/release/graphlift; do
        ns=$($bin bench-expr "$expr" $n | grep -o 'ns_per_element=.*' | cut -d= -f2)
        echo "$e $n $(basename $bin) $ns"
      done
    done
    target/c_exprs $n | awk '{split($3, a, "="); print $1, $2, "C", a[2]}'
  done
done
