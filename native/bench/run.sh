#!/usr/bin/env bash
# run.sh — build the native benchmark harness and compare allocators.
#
#   native/bench/run.sh --quick      sanity pass, seconds: small counts, 1 run each
#   native/bench/run.sh              full suite: every workload at 1..16 threads,
#                                    every allocator, median of 5 runs
#
# Allocators: sh (sh_alloc/sh_free, libspanheap.so), glibc (the process's
# malloc), and through LD_PRELOAD whichever of mimalloc, jemalloc, tcmalloc
# are installed (Debian: apt-get install libmimalloc2.0 libjemalloc2
# libtcmalloc-minimal4), plus sh-malloc when native/build/libspanheap-malloc.so
# exists. Every run is its own process, so its peak RSS is its own.
#
# Writes (default docs/benchmarks/native/): runs.csv (every run), results.csv
# (medians), results.md (tables, targets, machine), results.png (if python3
# has matplotlib), runs.log (stderr of runs that printed any).
set -euo pipefail
trap 'echo "run.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$root"

mode=full
repeat=
threads_list=
workloads="threadtest larson prod-con cache-thrash cache-scratch"
allocators="sh glibc mimalloc jemalloc tcmalloc sh-malloc"
out=docs/benchmarks/native
build=1
command_line="native/bench/run.sh$(printf ' %q' "$@")"

usage() {
    sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    cat <<EOF
options:
  --quick             small counts, 1 run each, threads 1 2 4
  --full              (default) full counts, 5 runs each, threads 1 2 4 8 16
  --repeat N          runs per measurement (median reported)
  --threads "LIST"    thread counts, e.g. "1 2 4"
  --workloads "LIST"  subset of: $workloads
  --allocators "LIST" subset of: $allocators
  --out DIR           output directory (default $out)
  --no-build          use the binaries as they are
EOF
}

while [ $# -gt 0 ]; do
    case "$1" in
    --quick) mode=quick ;;
    --full) mode=full ;;
    --repeat) repeat=$2; shift ;;
    --threads) threads_list=$2; shift ;;
    --workloads) workloads=$2; shift ;;
    --allocators) allocators=$2; shift ;;
    --out) out=$2; shift ;;
    --no-build) build=0 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown option: $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

# ---- scale --------------------------------------------------------------------
# Full counts follow the seeds, scaled to finish in minutes on 2 cores
# (scalloc runs threadtest for 10^4 rounds and larson for 10 s).
if [ "$mode" = quick ]; then
    : "${repeat:=1}" "${threads_list:=1 2 4}"
    timeout_s=60
    args_threadtest="--rounds 20"
    args_larson="--seconds 0.3"
    args_prodcon="--objects 500000"
    args_cache="--iterations 100 --repetitions 100000"
else
    : "${repeat:=5}" "${threads_list:=1 2 4 8 16}"
    timeout_s=300
    args_threadtest="--rounds 500"
    args_larson="--seconds 2"
    args_prodcon="--objects 10000000"
    args_cache="--iterations 1000 --repetitions 100000"
fi

workload_args() {
    case "$1" in
    threadtest) echo "$args_threadtest" ;;
    larson) echo "$args_larson" ;;
    prod-con) echo "$args_prodcon" ;;
    cache-thrash|cache-scratch) echo "$args_cache" ;;
    esac
}

# ---- build --------------------------------------------------------------------
bin=native/bench/build/spanheap-bench
if [ "$build" = 1 ]; then
    if ! make -s -C native lib >/dev/null; then
        echo "run.sh: building libspanheap.so failed (make -C native lib)" >&2
    fi
    make -s -C native/bench
fi
if [ ! -x "$bin" ]; then
    echo "run.sh: $bin is missing (make -C native lib && make -C native/bench)" >&2
    exit 1
fi

# Snapshot the spanheap libraries: the native core may be rebuilt while the
# suite runs, and every run should use the same one. LD_LIBRARY_PATH is
# searched before the binary's RUNPATH.
snapshot=$(mktemp -d)
trap 'rm -rf "$snapshot"' EXIT
for lib in libspanheap.so libspanheap-malloc.so; do
    [ -f "native/build/$lib" ] && cp "native/build/$lib" "$snapshot/"
done
export LD_LIBRARY_PATH=$snapshot${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# ---- allocators -----------------------------------------------------------------
# A peer is found through the dynamic linker's cache, not a fixed path.
ldconfig_bin=$(command -v ldconfig || echo /sbin/ldconfig)
find_lib() {
    local name
    for name in "$@"; do
        "$ldconfig_bin" -p 2>/dev/null | awk -v n="$name" '$1 == n { print $NF; exit }' | grep . && return 0
    done
    return 1
}

declare -A preload
selected=()
for a in $allocators; do
    case "$a" in
    sh) selected+=(sh) ;;
    glibc) selected+=(glibc) ;;
    mimalloc|jemalloc|tcmalloc)
        case "$a" in
        mimalloc) names="libmimalloc.so.2 libmimalloc.so"; pkg=libmimalloc2.0 ;;
        jemalloc) names="libjemalloc.so.2 libjemalloc.so"; pkg=libjemalloc2 ;;
        tcmalloc) names="libtcmalloc_minimal.so.4 libtcmalloc.so.4"; pkg=libtcmalloc-minimal4 ;;
        esac
        # shellcheck disable=SC2086
        if lib=$(find_lib $names); then
            preload[$a]=$lib
            selected+=("$a")
        else
            echo "run.sh: skipping $a: none of $names is installed (apt-get install $pkg)" >&2
        fi ;;
    sh-malloc)
        # The malloc-compatible build (libspanheap-malloc.so, make -C native malloc).
        if [ -f "$snapshot/libspanheap-malloc.so" ]; then
            preload[$a]=$snapshot/libspanheap-malloc.so
            selected+=("$a")
        else
            echo "run.sh: skipping sh-malloc: native/build/libspanheap-malloc.so is not built" >&2
        fi ;;
    *) echo "run.sh: unknown allocator $a" >&2; exit 2 ;;
    esac
done
if [ ${#selected[@]} -eq 0 ]; then
    echo "run.sh: no allocator to run" >&2
    exit 1
fi

# ---- machine ------------------------------------------------------------------
mkdir -p "$out"
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
{
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "command=$command_line"
    echo "mode=$mode"
    echo "repeat=$repeat"
    echo "threads=$threads_list"
    for w in $workloads; do echo "args.$w=$(workload_args "$w")"; done
    echo "nproc=$(nproc)"
    echo "cpu=$cpu"
    echo "kernel=$(uname -sr)"
    echo "glibc=$(ldd --version 2>/dev/null | head -n 1 | awk '{ print $NF }')"
    echo "compiler=$(${CC:-cc} --version | head -n 1)"
    echo "git=$(git rev-parse --short HEAD 2>/dev/null || echo none)$(git status --porcelain 2>/dev/null | grep -q . && echo ' (uncommitted changes)')"
    for lib in "$snapshot"/*.so; do
        [ -f "$lib" ] && echo "${lib##*/}=sha256 $(sha256sum "$lib" | cut -c1-16), built $(date -u -r "native/build/${lib##*/}" +%H:%M:%SZ)"
    done
    for a in "${selected[@]}"; do
        if [ -n "${preload[$a]:-}" ]; then
            pkgver=$(dpkg -S "$(readlink -f "${preload[$a]}")" 2>/dev/null | cut -d: -f1 | head -n 1 || true)
            [ -n "$pkgver" ] && pkgver="$pkgver $(dpkg-query -W -f='${Version}' "$pkgver" 2>/dev/null || true)"
            shown=${preload[$a]}
            [[ $shown == "$snapshot"/* ]] && shown="native/build/${shown##*/} (snapshot)"
            echo "allocator.$a=LD_PRELOAD=$shown ${pkgver:-}"
        fi
    done
    echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/machine.txt"

# ---- runs ---------------------------------------------------------------------
runs=$out/runs.csv
log=$out/runs.log
echo "allocator,rep,status,$("$bin" --header)" > "$runs"
: > "$log"

total=0
for w in $workloads; do for t in $threads_list; do
    [ "$w" = prod-con ] && [ $((t % 2)) -ne 0 ] && continue
    total=$((total + ${#selected[@]} * repeat))
done; done
echo "run.sh: $mode mode, ${selected[*]}, threads $threads_list, $repeat run(s) each: $total runs"

# Repetition is the outer loop so that a burst of load from other processes
# hits one run of many configurations rather than every run of one.
n=0
for rep in $(seq 1 "$repeat"); do
    [ -t 2 ] || echo "run.sh: repetition $rep of $repeat ($(date -u +%H:%M:%S))" >&2
    echo "load_rep$rep=$(cut -d' ' -f1-3 /proc/loadavg) at $(date -u +%H:%M:%SZ)" >> "$out/machine.txt"
    for w in $workloads; do
        for t in $threads_list; do
            # prod-con needs pairs; 1 thread is not a producer-consumer.
            [ "$w" = prod-con ] && [ $((t % 2)) -ne 0 ] && continue
            for a in "${selected[@]}"; do
                n=$((n + 1))
                backend=malloc; [ "$a" = sh ] && backend=sh
                # shellcheck disable=SC2046
                set -- "$bin" "$w" --backend "$backend" --threads "$t" $(workload_args "$w")
                errf=$(mktemp)
                status=ok
                if line=$(LD_PRELOAD=${preload[$a]:-} timeout "$timeout_s" "$@" 2>"$errf"); then
                    :
                else
                    rc=$?
                    status=fail:$rc; [ $rc = 124 ] && status=timeout
                    line="$w,$backend,$t,,,,,,,,"
                fi
                echo "$a,$rep,$status,$line" >> "$runs"
                if [ -s "$errf" ] || [ "$status" != ok ]; then
                    { echo "== [$status] ${preload[$a]:+LD_PRELOAD=${preload[$a]} }$*"; cat "$errf"; } >> "$log"
                fi
                rm -f "$errf"
                if [ -t 2 ]; then
                    printf '\r[%d/%d] %-13s %-9s t=%-2s %s   ' "$n" "$total" "$w" "$a" "$t" "$status" >&2
                elif [ "$status" != ok ]; then
                    echo "[$n/$total] $w $a threads=$t: $status" >&2
                fi
            done
        done
    done
done
[ -t 2 ] && echo >&2
echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/machine.txt"

python3 "$here/report.py" "$out"
echo "run.sh: wrote $out/results.md, $out/results.csv, $out/runs.csv"
if [ -s "$log" ]; then
    echo "run.sh: some runs printed to stderr or failed, see $log" >&2
fi
