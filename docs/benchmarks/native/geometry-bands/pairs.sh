#!/usr/bin/env bash
# Paired runs of two builds of native/bench's spanheap-bench (--backend sh):
# every configuration runs once per build per round, the two builds back to
# back in alternating order, so both see the same load.
#
#   pairs.sh BASE_BENCH NEW_BENCH ROUNDS > runs.csv
#
# Output: the harness's CSV lines, each prefixed with round and build
# (base/new). Operations per CPU-second = ops / cpu_seconds.
set -euo pipefail
base="$1" new="$2" rounds="${3:-6}"
configs=(
  "larson --threads 1 --size 16-1024 --seconds 2"
  "larson --threads 2 --size 16-1024 --seconds 2"
  "larson --threads 2 --size 16-128 --seconds 2"
  "threadtest --threads 1 --size 64"
  "threadtest --threads 2 --size 64"
  "prod-con --threads 2 --size 16-512"
)
echo "round,build,$("$base" --header)"
for ((r = 1; r <= rounds; r++)); do
  for c in "${configs[@]}"; do
    if ((r % 2)); then order=(base new); else order=(new base); fi
    for b in "${order[@]}"; do
      bin="$base"; [[ "$b" == new ]] && bin="$new"
      # shellcheck disable=SC2086
      line="$("$bin" $c --backend sh)" || line="failed: $c"
      echo "$r,$b,$line"
    done
  done
done
