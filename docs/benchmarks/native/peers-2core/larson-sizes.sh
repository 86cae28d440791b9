#!/bin/bash
# larson-sizes.sh OUT [REPS]: larson at 16-1024 B, 1,000 slots a thread (the issue's
# C-API setting), 1 and 2 threads, sh_alloc/sh_free against glibc, jemalloc and
# mimalloc as the process's malloc; the allocators interleaved in each round.
# Run from the repository root after make -C native lib && make -C native/bench.
OUT=$1; REPS=${2:-3}
BIN=native/bench/build/spanheap-bench
JE=$(ldconfig -p | awk '$1=="libjemalloc.so.2"{print $NF; exit}')
MI=$(ldconfig -p | awk '$1=="libmimalloc.so.2"{print $NF; exit}')
: > "$OUT"
for r in $(seq "$REPS"); do
  for t in 1 2; do
    args="larson --threads $t --size 16-1024 --slots 1000"
    echo "sh,$($BIN $args --backend sh)" >> "$OUT"
    echo "glibc,$($BIN $args --backend malloc)" >> "$OUT"
    echo "jemalloc,$(LD_PRELOAD=$JE $BIN $args --backend malloc)" >> "$OUT"
    echo "mimalloc,$(LD_PRELOAD=$MI $BIN $args --backend malloc)" >> "$OUT"
  done
done
