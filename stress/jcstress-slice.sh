#!/usr/bin/env bash
# Runs one slice of the jcstress tests in a real mode, or all of them, through the
# run-jcstress profile of stress/pom.xml (the JDK the build selects, forks with native access).
#
#   bash stress/jcstress-slice.sh                   CI: this commit's slice, quick mode
#   bash stress/jcstress-slice.sh --slice 2         slice 2 (of 8), quick mode
#   bash stress/jcstress-slice.sh --all             every test, default mode (hours on 2 cores)
#   bash stress/jcstress-slice.sh --list            print the slices, run nothing
#
# Options: --slices N (default 8), --mode sanity|quick|default|tough (default: quick, with
# --all: default); arguments after -- go to Maven (e.g. -- -o for an offline build).
#
# The tests are the classes annotated @JCStressTest under stress/src/main/java, sorted; slice
# k of N holds every test whose index i has i mod N == k (so the slow compacting-heap tests,
# adjacent in the sorted list, spread over all slices). CI's slice is the commit count mod N:
# consecutive commits rotate through the slices, so N CI runs cover every test. In a shallow
# clone (count unknown) the commit hash mod N is used instead. docs/testing.md has the timings.
#
# Fails when jcstress fails (it exits non-zero on a forbidden outcome, an error or a timeout),
# when its summary reports failed or error tests, or when a selected test left no report.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

slices=8
slice=
mode=
all=false
list=false
while [[ $# -gt 0 ]]; do
  case $1 in
    --slices) slices=$2; shift 2 ;;
    --slice) slice=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --all) all=true; shift ;;
    --list) list=true; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "jcstress-slice: unknown argument: $1 (--help lists them)" >&2; exit 2 ;;
  esac
done
die() { echo "jcstress-slice: $*" >&2; exit 1; }
[[ $slices =~ ^[1-9][0-9]*$ ]] || die "--slices must be a positive number: $slices"
if [[ -n $slice ]]; then
  [[ $slice =~ ^[0-9]+$ ]] && (( slice < slices )) || die "--slice must be in [0, $slices): $slice"
fi
if [[ -z $mode ]]; then
  if $all; then mode=default; else mode=quick; fi
fi
case $mode in sanity|quick|default|tough) ;; *) die "--mode must be sanity, quick, default or tough: $mode" ;; esac

# Every test class, sorted: one top-level @JCStressTest class per file (jcstress names a nested
# one differently; refuse it rather than silently leave it out of every slice).
tests=()
while IFS= read -r f; do
  top=$(grep -c '^@JCStressTest' "$f" || true)
  any=$(grep -c '@JCStressTest' "$f" || true)
  [[ $top == 1 && $any == 1 ]] || die "$f: expected one top-level @JCStressTest class, found $any"
  pkg=$(sed -n 's/^package \([A-Za-z0-9_.]*\);.*/\1/p' "$f")
  tests+=("${pkg:+$pkg.}$(basename "$f" .java)")
done < <(grep -rl --include='*.java' '@JCStressTest' stress/src/main/java | LC_ALL=C sort)
(( ${#tests[@]} > 0 )) || die "no @JCStressTest class under stress/src/main/java"
mapfile -t tests < <(printf '%s\n' "${tests[@]}" | LC_ALL=C sort)

slice_of_commit() {
  if [[ $(git rev-parse --is-shallow-repository 2>/dev/null) == false ]]; then
    local count
    count=$(git rev-list --count HEAD)
    echo "$((count % slices)) commit count $count mod $slices"
  elif hash=$(git rev-parse --short=12 HEAD 2>/dev/null); then
    echo "$((16#$hash % slices)) shallow clone: commit $hash mod $slices"
  else
    echo "0 no git history: slice 0"
  fi
}

if $list; then
  for ((k = 0; k < slices; k++)); do
    echo "slice $k:"
    for ((i = k; i < ${#tests[@]}; i += slices)); do echo "  ${tests[i]}"; done
  done
  exit 0
fi

selected=()
if $all; then
  selected=("${tests[@]}")
  echo "jcstress: all ${#tests[@]} tests, $mode mode"
  label=all
else
  why="chosen with --slice"
  if [[ -z $slice ]]; then
    read -r slice why <<<"$(slice_of_commit)"
  fi
  for ((i = slice; i < ${#tests[@]}; i += slices)); do selected+=("${tests[i]}"); done
  echo "jcstress: slice $slice of $slices ($why), $mode mode, ${#selected[@]} of ${#tests[@]} tests:"
  label=slice
fi
printf '  %s\n' "${selected[@]}"
(( ${#selected[@]} > 0 )) || { echo "jcstress: slice $slice is empty (fewer tests than slices)"; exit 0; }

# A regex of exactly these names ("[.]" rather than "\." keeps backslashes away from Maven's and
# exec's argument parsing).
regex="^($(printf '%s|' "${selected[@]}" | sed 's/[.]/[.]/g; s/|$//'))\$"
results=results-$label
rm -rf "stress/target/$results"
mkdir -p stress/target
log=stress/target/jcstress-$label.log

./mvnw -B -pl stress -am -DskipTests -Prun-jcstress package \
  "-Djcstress.args=-m $mode -r $results -t $regex" "$@" 2>&1 | tee "$log"

# jcstress exited 0; check its summary and that every selected test reported.
grep -q '^ *Failed tests: No matches' "$log" || die "jcstress reports failed tests (see $log)"
grep -q '^ *Error tests: No matches' "$log" || die "jcstress reports error tests (see $log)"
for t in "${selected[@]}"; do
  [[ -f stress/target/$results/$t.html ]] || die "no report for $t in stress/target/$results"
done
echo "jcstress: ${#selected[@]} tests passed in $mode mode; reports in stress/target/$results/"
