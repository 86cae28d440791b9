#!/bin/sh
# run-fuzz.sh — fuzz the native core with libFuzzer (docs/testing.md, "Fuzzing").
#
#   native/fuzz/run-fuzz.sh [seconds per target] [target...]
#
# Targets: api, malloc (default: both, one after the other, one core each;
# default 60 s each). Needs clang with libFuzzer: if clang is missing, this
# script runs `apt-get install -y clang` (Debian 12's clang 14 ships
# libFuzzer in its runtime), so on a bare machine it needs root.
# New inputs that add coverage are merged into native/fuzz/corpus/<target>;
# a finding stops the run, leaves crash-* in native/build/fuzz and exits
# non-zero.
set -eu
cd "$(dirname "$0")/.."
seconds=${1:-60}
[ $# -gt 0 ] && shift
targets=${*:-api malloc}

if ! command -v clang >/dev/null 2>&1; then
    echo "clang not found: installing it (apt-get install -y clang)"
    apt-get install -y clang >/dev/null || { apt-get update && apt-get install -y clang; }
fi

for t in $targets; do
    make --no-print-directory "fuzz-$t" FUZZ_SECONDS="$seconds"
done
