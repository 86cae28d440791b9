#!/usr/bin/env bash
# Paired runs of the cache churn's memory mode (CacheChurnBenchmark): A and B alternate, and
# the median of the pairwise throughput ratios A/B is printed. On a shared, noisy machine single
# runs move by 10-15%; a ratio of runs made seconds apart moves much less.
#
#   jmh/churn-pairs.sh [options] STORE_A [STORE_B]
#
# STORE_A, STORE_B: CacheChurnBenchmark stores (COMPACTING, MALLOC_FFM, HANDLES_ON_MALLOC, ...);
# STORE_B defaults to STORE_A, to compare two jars or two sets of JVM flags on one store.
# Options:
#   -n PAIRS        pairs to run (default 5)
#   -t THREADS      churn threads (default 2)
#   -s SECONDS      length of each run (default 6)
#   --jvm-a FLAGS   extra JVM flags for A (e.g. "-Dsome.switch=true"); --jvm-b for B
#   --jar-a JAR     the benchmarks jar for A (default jmh/target/benchmarks.jar); --jar-b for B
#   -- ARGS...      extra arguments for every run (e.g. -- --keys 1024)
#
# Each run: java --enable-native-access=ALL-UNNAMED -Xms512m -Xmx512m -XX:+AlwaysPreTouch -cp JAR
# org.spanheap.jmh.CacheChurnBenchmark --store S --seconds SECONDS --threads THREADS; its "max:"
# line gives ops/us, the highest committed/live and RSS growth/live. Build the jar first
# (./mvnw -B -pl jmh -am -DskipTests package). JAVA_HOME: a JDK >= 22 (else the newest found).
# Prints one line per pair, then the medians; exits non-zero if a run fails. Each run also shows
# the cross-CPU round trip before and after it (tools/cpu-round-trip.c, built with gcc if
# present; "?" otherwise): a shared VM runs at two speeds, and only pairs whose runs agree compare
# (docs/benchmarks/README.md, "Reading the results").
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
usage() { sed -n '2,25p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }

pairs=5; threads=2; seconds=6; jvm_a=""; jvm_b=""
jar_a="$root/jmh/target/benchmarks.jar"; jar_b="$jar_a"; stores=(); extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    -n) pairs="$2"; shift 2 ;;
    -t) threads="$2"; shift 2 ;;
    -s) seconds="$2"; shift 2 ;;
    --jvm-a) jvm_a="$2"; shift 2 ;;
    --jvm-b) jvm_b="$2"; shift 2 ;;
    --jar-a) jar_a="$2"; shift 2 ;;
    --jar-b) jar_b="$2"; shift 2 ;;
    -h|--help) usage 0 ;;
    --) shift; extra=("$@"); break ;;
    -*) echo "unknown option: $1" >&2; usage ;;
    *) stores+=("$1"); shift ;;
  esac
done
[[ ${#stores[@]} -ge 1 && ${#stores[@]} -le 2 ]] || usage
store_a="${stores[0]}"; store_b="${stores[1]:-$store_a}"
for jar in "$jar_a" "$jar_b"; do
  [[ -f "$jar" ]] || { echo "no jar at $jar: build it with ./mvnw -B -pl jmh -am -DskipTests package" >&2; exit 1; }
done

# shellcheck source=find-java.sh
source "$here/find-java.sh"
# jemalloc (Debian's libjemalloc2) uses initial-exec TLS: dlopen needs optional static TLS room.
export GLIBC_TUNABLES="${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.rtld.optional_static_tls=4096"

rtt_bin=""
if command -v gcc >/dev/null; then
  rtt_dir="$(mktemp -d)"
  trap 'rm -rf "$rtt_dir"' EXIT
  gcc -O2 -pthread -o "$rtt_dir/cpu-round-trip" "$root/tools/cpu-round-trip.c" 2>/dev/null && rtt_bin="$rtt_dir/cpu-round-trip"
fi
# Prints the cross-CPU round trip in ns, or "?".
rtt() { { [[ -n "$rtt_bin" ]] && "$rtt_bin" 2>/dev/null | awk '{print $1}'; } || echo "?"; }

# Prints "OPS COMMITTED/LIVE RSS-GROWTH/LIVE rtt BEFORE/AFTER" of one run.
run() {
  local jar="$1" store="$2" flags="$3" out line before
  before="$(rtt)"
  # shellcheck disable=SC2086 # the flags are words on purpose
  out="$("$JAVA" $flags --enable-native-access=ALL-UNNAMED -Xms512m -Xmx512m -XX:+AlwaysPreTouch -cp "$jar" \
      org.spanheap.jmh.CacheChurnBenchmark --store "$store" --seconds "$seconds" --threads "$threads" \
      "${extra[@]}" 2>&1)" || { echo "$out" >&2; echo "the run of $store failed" >&2; exit 1; }
  line="$(grep '^max:' <<<"$out")" || { echo "$out" >&2; echo "no max: line from $store" >&2; exit 1; }
  echo "$(sed -E 's/.*committed\/live ([0-9.]+),.*RSS growth\/live ([0-9.]+); ([0-9.]+) ops.*/\3 \1 \2/' <<<"$line") rtt $before/$(rtt)"
}

shown() { [[ "$1" == "$root"/* ]] && echo "${1#"$root"/}" || echo "$1"; } # no machine paths in pasted output
echo "A: $store_a ${jvm_a:+($jvm_a) }$(shown "$jar_a")"
echo "B: $store_b ${jvm_b:+($jvm_b) }$(shown "$jar_b")"
echo "$threads threads, $seconds s per run, $pairs pairs; per run: ops/us, max committed/live, max RSS growth/live, round trip ns before/after"
results=()
for ((i = 1; i <= pairs; i++)); do
  a="$(run "$jar_a" "$store_a" "$jvm_a")"
  b="$(run "$jar_b" "$store_b" "$jvm_b")"
  echo "pair $i: A $a | B $b"
  results+=("${a%% *} ${b%% *}")
done
printf '%s\n' "${results[@]}" | awk '
  function median(v, n,   i, j, t) {
    for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  { n++; a[n] = $1; b[n] = $2; r[n] = $1 / $2; lo = (n == 1 || r[n] < lo) ? r[n] : lo; hi = (n == 1 || r[n] > hi) ? r[n] : hi }
  END { printf "A median %.2f, B median %.2f ops/us; A/B pairwise median %.3f (min %.3f, max %.3f)\n", median(a, n), median(b, n), median(r, n), lo, hi }'
