#!/usr/bin/env bash
# Runs a profile of the JMH suite and the memory churn, then renders charts and a table.
#
#   jmh/run-benchmarks.sh quick    6-10 minutes on 2 cores: the main sizes, a few thread counts
#   jmh/run-benchmarks.sh full     about 1 hour: every size, peer and thread count, 1 fork of 3+4 s
#   jmh/run-benchmarks.sh smoke    CI: a few benchmarks, one short iteration, errors fail the run
#
# Options (after the profile):
#   --out DIR      results directory (default docs/benchmarks/<profile>, smoke: jmh/target/smoke)
#   --no-build     use the existing jmh/target/benchmarks.jar
#   --no-render    skip charts and table
#   --only REGEX   run only the steps whose name matches (e.g. --only 'allocfree|memory')
#   -- ARGS...     extra JMH arguments for every step (e.g. -- -prof gc)
#
# Environment: JAVA_HOME (a JDK >= 22; else the newest JDK >= 22 found), PYTHON (python3),
# BENCHMARKS_JAR (a prebuilt jar instead of building jmh/target/benchmarks.jar), JAVA_OPTS (flags
# for the host JVM, passed on to the forks).
# Writes into the results directory: jmh-<step>.json (JMH -rf json), memory.csv,
# memory-summary.csv, run-info.md (command, machine, JDK), results.md and *.png (render.py).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"

usage() { sed -n '2,19p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit "${1:-2}"; }

[[ $# -ge 1 ]] || usage
invocation="jmh/run-benchmarks.sh $*"
profile="$1"; shift
case "$profile" in quick|full|smoke) ;; -h|--help) usage 0 ;; *) echo "unknown profile: $profile" >&2; usage ;; esac

out=""; build=1; render=1; only=""; extra=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --no-render) render=0; shift ;;
    --only) only="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "unknown option: $1" >&2; usage ;;
  esac
done
if [[ -z "$out" ]]; then
  if [[ "$profile" == smoke ]]; then out="$root/jmh/target/smoke"; else out="$root/docs/benchmarks/$profile"; fi
fi
mkdir -p "$out"
out="$(cd "$out" && pwd)"

# --- a JDK >= 22 --------------------------------------------------------------------------
# shellcheck source=find-java.sh
source "$here/find-java.sh"

# jemalloc (Debian's libjemalloc2) uses initial-exec TLS: dlopen needs optional static TLS room.
export GLIBC_TUNABLES="${GLIBC_TUNABLES:+$GLIBC_TUNABLES:}glibc.rtld.optional_static_tls=4096"

jar="${BENCHMARKS_JAR:-$root/jmh/target/benchmarks.jar}"
if [[ "$build" == 1 && -z "${BENCHMARKS_JAR:-}" ]]; then
  echo "== building $jar"
  (cd "$root" && ./mvnw -q -B -pl jmh -am package -DskipTests)
fi
[[ -f "$jar" ]] || { echo "missing $jar (build: ./mvnw -pl jmh -am package -DskipTests)" >&2; exit 1; }

# JAVA_OPTS: extra flags for the host JVMs (JMH passes them on to its forks), e.g. -Djmh.ignoreLock=true
read -ra java_opts <<<"${JAVA_OPTS:-}"
run_java() { "$JAVA" --enable-native-access=ALL-UNNAMED "${java_opts[@]}" "$@"; }

# benchmarks in the jar (steps whose regex matches none are skipped, e.g. before Compact* exist)
listing="$(run_java -jar "$jar" -l 2>/dev/null | grep '^org\.' || true)"

# --- which allocators load here -----------------------------------------------------------
available="$(run_java -cp "$jar" org.spanheap.jmh.Allocator)"
echo "== allocators available: $available"
# keep only the available ones of a comma-separated list
pick() {
  local want="$1" a res=()
  IFS=, read -ra wanted <<<"$want"
  for a in "${wanted[@]}"; do [[ ",$available," == *",$a,"* ]] && res+=("$a"); done
  local IFS=,; echo "${res[*]}"
}

# --- profiles -----------------------------------------------------------------------------
all="SPANHEAP,SPANHEAP_ZEROED,MALLOC_FFM,MIMALLOC_FFM,JEMALLOC_FFM,ARENA_CONFINED,ARENA_SHARED,NETTY_POOLED,NETTY_POOLED_NOLEAK,NETTY_ADAPTIVE,NETTY_ADAPTIVE_NOLEAK,DIRECT_BYTEBUFFER"
remote="SPANHEAP,SPANHEAP_ZEROED,MALLOC_FFM,MIMALLOC_FFM,JEMALLOC_FFM,ARENA_SHARED,NETTY_POOLED,NETTY_POOLED_NOLEAK,NETTY_ADAPTIVE,NETTY_ADAPTIVE_NOLEAK,DIRECT_BYTEBUFFER"
quick_all="SPANHEAP,MALLOC_FFM,MIMALLOC_FFM,JEMALLOC_FFM,ARENA_CONFINED,ARENA_SHARED,NETTY_POOLED,NETTY_ADAPTIVE,DIRECT_BYTEBUFFER"
quick_remote="SPANHEAP,MALLOC_FFM,MIMALLOC_FFM,JEMALLOC_FFM,ARENA_SHARED,NETTY_POOLED,NETTY_ADAPTIVE,DIRECT_BYTEBUFFER"

# step NAME THREADS BENCHMARK-REGEX [JMH -p ARGS...]
steps=()
step() { steps+=("$*"); }
case "$profile" in
  quick)
    timing=(-f 1 -wi 2 -w 500ms -i 2 -r 500ms)
    P="$(pick "$quick_all")"; R="$(pick "$quick_remote")"
    step allocfree-t1   1  'AllocFreeBenchmark'        -p allocator="$P" -p size=64,4194304
    step allocfree-t2   2  'AllocFreeBenchmark'        -p allocator="$P" -p size=64
    step allocfree-t16  16 'AllocFreeBenchmark'        -p allocator="$P" -p size=64
    step mixed-t1       1  'MixedSizeBenchmark'        -p allocator="$P"
    step threadtest-t1  1  'ThreadTestBenchmark'       -p allocator="$P"
    step threadtest-t16 16 'ThreadTestBenchmark'       -p allocator="$P"
    step larson-t2      2  'LarsonBenchmark'           -p allocator="$R"
    step prodcons-t2    2  'ProducerConsumerBenchmark' -p allocator="$R"
    step thrash-t16     16 'CacheThrashBenchmark'      -p allocator="$P"
    step scratch-t16    16 'CacheScratchBenchmark'     -p allocator="$R"
    step arena-t1       1  'ArenaCloseBenchmark'
    step allocfree64-t1 1  'AllocFree64Benchmark'
    step compact-t1     1  'Compact[A-Za-z0-9]*Benchmark'
    memory=(--live-mib 128)
    ;;
  full)
    timing=(-f 1 -wi 3 -w 1s -i 4 -r 1s)
    P="$(pick "$all")"; R="$(pick "$remote")"
    step allocfree-t1   1  'AllocFreeBenchmark'        -p allocator="$P"
    for t in 2 16; do
      step allocfree-t$t  $t 'AllocFreeBenchmark'      -p allocator="$P" -p size=64,1024,16384
    done
    for t in 1 2 16; do
      step mixed-t$t      $t 'MixedSizeBenchmark'        -p allocator="$P"
      step threadtest-t$t $t 'ThreadTestBenchmark'       -p allocator="$P"
      step larson-t$t     $t 'LarsonBenchmark'           -p allocator="$R"
      step thrash-t$t     $t 'CacheThrashBenchmark'      -p allocator="$P"
      step scratch-t$t    $t 'CacheScratchBenchmark'     -p allocator="$R"
      step arena-t$t      $t 'ArenaCloseBenchmark'
    done
    for t in 2 16; do
      step prodcons-t$t   $t 'ProducerConsumerBenchmark' -p allocator="$R"
    done
    step allocfree64-t1 1  'AllocFree64Benchmark'
    step compact-t1     1  'Compact[A-Za-z0-9]*Benchmark'
    memory=(--live-mib 1024)
    ;;
  smoke)
    timing=(-f 1 -wi 0 -i 1 -r 100ms -foe true)
    step allocfree-t1   1  'AllocFreeBenchmark'        -p allocator="$(pick SPANHEAP,MALLOC_FFM,ARENA_CONFINED,NETTY_POOLED)" -p size=64
    step larson-t1      1  'LarsonBenchmark'           -p allocator=SPANHEAP
    step prodcons-t2    2  'ProducerConsumerBenchmark' -p allocator=SPANHEAP
    step arena-t1       1  'ArenaCloseBenchmark'       -p arena=SPANHEAP
    memory=(--live-mib 16 --peers SPANHEAP,MALLOC_FFM)
    ;;
esac

# The revision, marked when the work tree has local changes other than the results folder
# (which this run is writing).
git_revision() {
  local rev spec=(.)
  rev="$(cd "$root" && git rev-parse --short HEAD 2>/dev/null)" || { echo 'no commit'; return; }
  [[ "$out" == "$root"/* ]] && spec+=(":(exclude)${out#"$root"/}")
  if [[ -n "$(cd "$root" && git status --porcelain -- "${spec[@]}")" ]]; then rev+=' (with local changes)'; fi
  echo "$rev"
}

# --- run ----------------------------------------------------------------------------------
{
  echo "# Benchmark run: $profile"
  echo
  echo "- command: \`$invocation\`"
  echo "- started: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo "- git: $(git_revision)"
  echo "- JDK: $("$JAVA" -version 2>&1 | sed -n 2p)"
  echo "- CPU: $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $(nproc) cores online"
  echo "- memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "- kernel: $(uname -sr)"
  echo "- load before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo "- JMH timing: ${timing[*]}"
  echo "- allocators available: $available"
} > "$out/run-info.md"

start=$(date +%s)
for s in "${steps[@]}"; do
  read -ra a <<<"$s"
  name="${a[0]}"; threads="${a[1]}"; regex="${a[2]}"; params=("${a[@]:3}")
  [[ -z "$only" || "$name" =~ $only ]] || continue
  if ! grep -Eq "^org\.spanheap\.jmh\.${regex}\." <<<"$listing"; then echo "== $name: no benchmark matches $regex, skipped"; continue; fi
  echo "== $name: $regex -t $threads ${params[*]} ($(( ($(date +%s) - start) / 60 )) min into the run)"
  log="$out/jmh-$name.log"
  set +e +o pipefail
  run_java -jar "$jar" "^org\.spanheap\.jmh\.${regex}\." -t "$threads" "${params[@]}" "${timing[@]}" \
    -rf json -rff "$out/jmh-$name.json" "${extra[@]}" 2>&1 | grep --line-buffered -v '^WARNING: ' \
    | tee "$log" | grep --line-buffered -E '^(# Run progress|[A-Za-z0-9]+Benchmark\.|ERROR|<failure>)'
  status=${PIPESTATUS[0]}
  set -e -o pipefail
  if [[ "$status" != 0 ]]; then echo "step $name failed (exit $status): see $log" >&2; exit "$status"; fi
  # Without -foe (quick, full) a failing benchmark leaves the others' results; keep its log.
  if grep -q '<failure>' "$log"; then echo "warning: step $name had failures, see $log" >&2; continue; fi
  rm -f "$log"
done
if [[ -z "$only" || "memory" =~ $only ]]; then
  echo "== memory churn ${memory[*]}"
  run_java -cp "$jar" org.spanheap.jmh.MemoryChurn --out "$out" "${memory[@]}"
fi
echo "- finished: $(date -u '+%Y-%m-%d %H:%M UTC') ($(( ($(date +%s) - start) / 60 )) min)" >> "$out/run-info.md"

# --- render -------------------------------------------------------------------------------
if [[ "$render" == 1 ]]; then
  py="${PYTHON:-python3}"
  if [[ "$profile" == smoke ]]; then
    "$py" "$here/render.py" "$out" --table-only
  else
    if ! "$py" -c 'import matplotlib' 2>/dev/null; then
      venv="$root/jmh/target/render-venv"
      if [[ ! -x "$venv/bin/python" ]]; then
        echo "== installing matplotlib into $venv"
        "$py" -m venv "$venv" && "$venv/bin/pip" -q install matplotlib \
          || { rm -rf "$venv"; "$py" -m pip install -q --user matplotlib; venv=""; }
      fi
      [[ -n "$venv" ]] && py="$venv/bin/python"
    fi
    "$py" "$here/render.py" "$out"
  fi
fi
echo "== results in $out"
