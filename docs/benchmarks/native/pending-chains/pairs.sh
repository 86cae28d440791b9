#!/bin/bash
# pairs.sh OUT [REPS]: runs the baseline and the candidate build of native/bench's
# spanheap-bench alternately (base, new, base, new, ...) on each configuration,
# REPS rounds, the sh backend; one CSV line per run, prefixed "base," or "new,".
# BASE and NEW name the two binaries (each linked against its own libspanheap.so:
# make -C native/bench LIBDIR=dir).
OUT=$1; REPS=${2:-3}
NEW=${NEW:?the candidate build of spanheap-bench}
BASE=${BASE:?spanheap-bench linked against the baseline libspanheap.so}
: > "$OUT"
for r in $(seq "$REPS"); do
  for cfg in "larson --threads 1 --size 16-1024 --slots 1000" "larson --threads 2 --size 16-1024 --slots 1000" \
             "larson --threads 2 --size 8-1000 --slots 5000" "threadtest --threads 2 --rounds 100" \
             "prod-con --threads 2 --objects 4000000"; do
    for v in base new; do
      if [ $v = base ]; then B=$BASE; else B=$NEW; fi
      echo "$v,$($B $cfg --backend sh)" >> "$OUT"
    done
  done
done
