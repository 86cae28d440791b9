#!/usr/bin/env bash
# mimalloc-bench.sh — the programs of mimalloc-bench (the suite allocator authors
# compare on) under libspanheap-malloc.so and its peers, through LD_PRELOAD.
#
#   native/bench/mimalloc-bench.sh                 clone, build, run, write the table
#   native/bench/mimalloc-bench.sh --repo DIR      use a local clone (no network needed)
#   native/bench/mimalloc-bench.sh --programs "larson malloc-large" --repeat 1
#
# What it does:
#  1. Installs the peers from Debian when their library is missing (needs root
#     and the network; --no-install skips this, a missing peer is then left
#     out with one line): apt-get install -y libjemalloc2 libmimalloc2.0
#     libtcmalloc-minimal4.
#  2. Clones the suite (--repo, default its GitHub repository) at --commit and
#     builds its own benchmark programs (bench/CMakeLists.txt; shbench is left
#     out: its sources are downloaded separately by the suite's setup script,
#     from a third site).
#  3. Builds native/build/libspanheap-malloc.so (make -C native malloc).
#  4. Runs every program with every allocator, --repeat times, interleaved
#     (allocator order rotates per repetition), each run its own process:
#     the arguments are those of the suite's bench.sh with its -j set to
#     --threads. glibc is the process's own malloc (no LD_PRELOAD).
#  5. Writes runs.csv (every run), results.md (medians; the figure of merit and
#     peak RSS per allocator; spanheap against the best of glibc and mimalloc,
#     the issue's comparison) and machine.txt into --out.
#
# The figure of merit is the suite's own: seconds, lower is better. For larson
# and xmalloc-test it is the "relative time" the program prints (a fixed amount
# of work divided by the measured rate), for glibc-thread 1e9 / iterations, for
# rptest 2e6 / ops/s; for the others the elapsed wall time.
set -euo pipefail
trap 'echo "mimalloc-bench.sh: failed at line $LINENO: $BASH_COMMAND" >&2' ERR

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)

repo=https://github.com/daanx/mimalloc-bench
commit=ce5784f1cef3d48ddc931479e4899ffad5ab3943  # the suite commit this script was written against
threads=2
repeat=3
programs="larson larson-sized malloc-large alloc-test1 alloc-testN xmalloc-test glibc-thread glibc-simple espresso cfrac barnes mstress rptest cache-scratch cache-thrash mleak"
allocators="sh glibc mimalloc jemalloc tcmalloc"
work=${TMPDIR:-/tmp}/spanheap-mimalloc-bench
out=$root/docs/benchmarks/mimalloc-bench
install=1
sh_base=
command_line="native/bench/mimalloc-bench.sh$(printf ' %q' "$@")"

usage() {
    sed -n '2,33p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    cat <<EOF
options:
  --repo URL|DIR      the suite's repository (default $repo)
  --commit REF        its commit to build (default $commit)
  --threads N         the suite's -j (default $threads)
  --repeat N          runs per program and allocator; the median is reported (default $repeat)
  --programs "LIST"   default: $programs
  --allocators "LIST" default: $allocators (sh is libspanheap-malloc.so)
  --work DIR          clone and build directory (default: \$TMPDIR/spanheap-mimalloc-bench)
  --out DIR           results directory (default docs/benchmarks/mimalloc-bench)
  --no-install        do not apt-get install missing peers
  --sh-base FILE      another build of libspanheap-malloc.so (say, of the commit before
                      a change), run as the allocator sh-base beside sh: a change
                      measured side by side in one run (add sh-base to --allocators)
EOF
}

while [[ $# -gt 0 ]]; do
    case $1 in
        --repo) repo=$2; shift 2 ;;
        --commit) commit=$2; shift 2 ;;
        --threads) threads=$2; shift 2 ;;
        --repeat) repeat=$2; shift 2 ;;
        --programs) programs=$2; shift 2 ;;
        --allocators) allocators=$2; shift 2 ;;
        --work) work=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --no-install) install=0; shift ;;
        --sh-base) sh_base=$2; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "mimalloc-bench.sh: unknown option: $1 (--help lists them)" >&2; exit 2 ;;
    esac
done
# Results name no local paths: a local clone given to --repo is written as such.
if [[ -d $repo ]]; then
    command_line=${command_line//"$repo"/LOCAL-CLONE}
    repo_name="a local clone (LOCAL-CLONE) of the suite's repository"
else
    repo_name=$repo
fi
[[ -n $sh_base ]] && command_line=${command_line//"$sh_base"/BASE-BUILD}
[[ $threads =~ ^[1-9][0-9]*$ ]] || { echo "mimalloc-bench.sh: --threads must be a positive number" >&2; exit 2; }
[[ $repeat =~ ^[1-9][0-9]*$ ]] || { echo "mimalloc-bench.sh: --repeat must be a positive number" >&2; exit 2; }
command -v cmake >/dev/null || { echo "mimalloc-bench.sh: needs cmake (apt-get install cmake)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "mimalloc-bench.sh: needs GNU time (apt-get install time)" >&2; exit 1; }

libdir=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
lib_of() {
    case $1 in
        sh) echo "$root/native/build/libspanheap-malloc.so" ;;
        sh-base) [[ -f $sh_base ]] || { echo "mimalloc-bench.sh: sh-base needs --sh-base FILE" >&2; exit 2; }
                 echo "$sh_base" ;;
        glibc) echo "" ;;
        mimalloc) ls "$libdir"/libmimalloc.so.2 2>/dev/null || true ;;
        jemalloc) ls "$libdir"/libjemalloc.so.2 2>/dev/null || true ;;
        tcmalloc) ls "$libdir"/libtcmalloc_minimal.so.4 2>/dev/null || true ;;
        *) echo "mimalloc-bench.sh: unknown allocator $1" >&2; exit 2 ;;
    esac
}
package_of() {
    case $1 in
        mimalloc) echo libmimalloc2.0 ;;
        jemalloc) echo libjemalloc2 ;;
        tcmalloc) echo libtcmalloc-minimal4 ;;
    esac
}

# 1. peers
missing=()
for a in $allocators; do
    case $a in sh|sh-base|glibc) continue ;; esac
    [[ -n $(lib_of "$a") ]] || missing+=("$(package_of "$a")")
done
if (( ${#missing[@]} > 0 )) && (( install )); then
    echo "[mimalloc-bench] installing ${missing[*]}"
    if ! { apt-get update -qq && apt-get install -y -qq "${missing[@]}"; } >/dev/null 2>&1; then
        echo "[mimalloc-bench] could not install ${missing[*]} (root and network needed); those are left out"
    fi
fi
run_allocators=()
for a in $allocators; do
    if [[ $a == sh || $a == sh-base || $a == glibc || -n $(lib_of "$a") ]]; then
        run_allocators+=("$a")
    else
        echo "[mimalloc-bench] $a: not installed, left out"
    fi
done

# 2. the suite
mkdir -p "$work"
src=$work/src
if [[ ! -d $src/.git ]]; then
    echo "[mimalloc-bench] cloning $repo"
    git clone -q "$repo" "$src"
fi
git -C "$src" checkout -q --force "$commit"
git -C "$src" clean -qfdx
# shbench's sources are not in the repository (the suite's setup script downloads them)
sed -i '/^if(NOT APPLE)$/,/^endif()$/d' "$src/bench/CMakeLists.txt"
build=$work/build
rm -rf "$build"
echo "[mimalloc-bench] building the suite's programs"
cmake -S "$src/bench" -B "$build" -DCMAKE_BUILD_TYPE=Release >"$work/cmake.log" 2>&1 \
    || { echo "mimalloc-bench.sh: cmake failed, see $work/cmake.log" >&2; exit 1; }
targets=$(for p in $programs; do case $p in alloc-test1|alloc-testN) echo alloc-test ;; *) echo "$p" ;; esac; done | sort -u)
# shellcheck disable=SC2086
make -C "$build" -j"$(nproc)" $targets >"$work/make.log" 2>&1 \
    || { echo "mimalloc-bench.sh: build failed, see $work/make.log" >&2; exit 1; }

# 3. spanheap's malloc
make -s -C "$root/native" malloc

# 4. runs
command_of() {
    local t=$threads
    case $1 in
        larson) echo "./larson 5 8 1000 5000 100 4141 $t" ;;
        larson-sized) echo "./larson-sized 5 8 1000 5000 100 4141 $t" ;;
        malloc-large) echo "./malloc-large" ;;
        alloc-test1) echo "./alloc-test 1" ;;
        alloc-testN) echo "./alloc-test $(( t > 16 ? 16 : t ))" ;;
        xmalloc-test) echo "./xmalloc-test -w $t -t 5 -s 64" ;;
        glibc-thread) echo "./glibc-thread $t" ;;
        glibc-simple) echo "./glibc-simple" ;;
        espresso) echo "./espresso $src/bench/espresso/largest.espresso" ;;
        cfrac) echo "./cfrac 17545186520507317056371138836327483792789528" ;;
        barnes) echo "./barnes" ;;
        mstress) echo "./mstress $t 50 25" ;;
        rptest) echo "./rptest $t 0 1 2 500 1000 100 8 16000" ;;
        cache-scratch) echo "./cache-scratch $t 1000 1 2000000 $t" ;;
        cache-thrash) echo "./cache-thrash $t 1000 1 2000000 $t" ;;
        mleak) echo "./mleak 50" ;;
        *) echo "mimalloc-bench.sh: unknown program $1" >&2; exit 2 ;;
    esac
}
# The suite's figure of merit from a run's output and elapsed time (seconds, lower is better).
merit() {
    local program=$1 outfile=$2 elapsed=$3 v
    case $program in
        larson*) v=$(sed -n 's/.*relative time: \([0-9.]*\)s.*/\1/p' "$outfile" | tail -1) ;;
        xmalloc-test) v=$(sed -n 's/^rtime: \([0-9.]*\).*/\1/p' "$outfile" | tail -1) ;;
        glibc-thread) v=$(awk 'NR == 1 && $1 + 0 > 0 { printf "%.4f", 1e9 / $1 }' "$outfile") ;;
        rptest) v=$(sed -n 's/.*\.\.\.\([0-9]*\) memory ops.*/\1/p' "$outfile" | awk '$1 > 0 { printf "%.4f", 2e6 / $1 }' | tail -1) ;;
        *) v=$elapsed ;;
    esac
    echo "${v:-nan}"
}

mkdir -p "$out"
runs=$out/runs.csv
echo "program,allocator,repetition,merit_s,elapsed_s,peak_rss_kib,exit" >"$runs"
{
    echo "command: $command_line"
    echo "suite: $repo_name at $(git -C "$src" rev-parse HEAD)"
    echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "machine: $(nproc) CPUs, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1), $(uname -sr)"
    echo "gcc: $(gcc -dumpfullversion)"
    for a in "${run_allocators[@]}"; do
        l=$(lib_of "$a")
        if [[ -n $l ]]; then
            shown=${l#"$root"/}
            [[ $a == sh-base ]] && shown=BASE-BUILD
            echo "allocator $a: $shown sha256 $(sha256sum "$l" | cut -c1-16)"
        else
            echo "allocator $a: glibc malloc of the process, $(ldd --version | head -1)"
        fi
    done
} >"$out/machine.txt"

n=${#run_allocators[@]}
for ((r = 1; r <= repeat; r++)); do
    echo "[mimalloc-bench] repetition $r of $repeat (load average $(cut -d' ' -f1-3 /proc/loadavg))"
    echo "repetition $r: load average $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"
    for p in $programs; do
        cmd=$(command_of "$p")
        for ((k = 0; k < n; k++)); do
            a=${run_allocators[(k + r - 1) % n]}
            l=$(lib_of "$a")
            o=$work/out-$p-$a.txt
            tf=$work/time-$p-$a.txt
            input=/dev/null
            [[ $p == barnes ]] && input=$src/bench/barnes/input
            rc=0
            (cd "$build" && env ${l:+LD_PRELOAD=$l} /usr/bin/time -o "$tf" -f '%e %M' $cmd <"$input" >"$o" 2>&1) || rc=$?
            read -r elapsed rss < <(tail -1 "$tf")
            m=$(merit "$p" "$o" "$elapsed")
            echo "$p,$a,$r,$m,$elapsed,$rss,$rc" >>"$runs"
            printf '  %-14s %-9s %8s s  %8s KiB%s\n' "$p" "$a" "$m" "$rss" "$( ((rc)) && echo "  exit $rc" )"
        done
    done
done

# 5. table
python3 - "$runs" "$out/results.md" "$command_line" "$threads" <<'EOF'
import csv, statistics, sys
runs, md, command, threads = sys.argv[1:5]
rows = list(csv.DictReader(open(runs)))
progs, allocs, cell = [], [], {}
for r in rows:
    if r['program'] not in progs: progs.append(r['program'])
    if r['allocator'] not in allocs: allocs.append(r['allocator'])
    ok = r['exit'] == '0' and r['merit_s'] != 'nan'
    c = cell.setdefault((r['program'], r['allocator']), ([], [], []))
    if ok:
        c[0].append(float(r['merit_s'])); c[1].append(int(r['peak_rss_kib']))
    else:
        c[2].append(r['exit'])
order = ['sh'] + [a for a in ['glibc', 'mimalloc', 'jemalloc', 'tcmalloc'] if a in allocs]
def med(p, a, i):
    c = cell.get((p, a))
    return statistics.median(c[i]) if c and c[i] else None
out = [f"# mimalloc-bench at {threads} threads\n",
       f"Command: `{command}` (machine and suite commit: machine.txt; every run: runs.csv).\n",
       "Seconds, lower is better (the suite's figure of merit: larson and xmalloc-test their relative time, "
       "glibc-thread 1e9/iterations, rptest 2e6/(ops/s), the others elapsed time); median of the runs. "
       "sh is libspanheap-malloc.so. **sh / best** is the best of glibc and mimalloc divided by sh "
       "(above 1.0: sh is faster); **RSS / lowest** is sh's peak RSS over the lowest of all.\n",
       "| program | " + " | ".join(order) + " | sh / best | RSS / lowest |",
       "|---|" + "---|" * (len(order) + 2)]
for p in progs:
    vals = [med(p, a, 0) for a in order]
    rss = [med(p, a, 1) for a in order]
    def fmt(i):
        v = vals[i]
        if v is None: return 'failed'
        return f"{v:.2f} ({rss[i] / 1024:.0f} MiB)"
    best = [vals[order.index(a)] for a in ('glibc', 'mimalloc') if a in order and vals[order.index(a)] is not None]
    ratio = f"{min(best) / vals[0]:.2f}x" if vals[0] and best else '-'
    low = [x for x in rss if x]
    rr = f"{rss[0] / min(low):.2f}" if rss[0] and low else '-'
    out.append(f"| {p} | " + " | ".join(fmt(i) for i in range(len(order))) + f" | {ratio} | {rr} |")
open(md, 'w').write("\n".join(out) + "\n")
print("\n".join(out))
EOF
echo "[mimalloc-bench] wrote $out/results.md"
