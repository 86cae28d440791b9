#!/usr/bin/env bash
# The scaling figures on a many-core machine, in one pass that fits a few minutes: the native
# harness's larson, threadtest and prod-con against glibc, jemalloc and mimalloc; the compacting
# heap's cache churn (lanes, thread-owned pages, malloc, and at 2 and all threads a handle table
# over malloc: the floor of any store of handles) at rising thread counts, and its reads
# alone; CacheBenchmark's 5% and 50% write rows against OHC at 2 and all threads; the Java
# allocator rows (64 B allocate+touch+free at 1 and all threads, threadtest, larson) against the
# allocators through FFM; the one-thread replace; with JCSTRESS_JAR set, the compacting heap's
# and the core's jcstress tests (quick mode) and the two randomized stress programs with as many
# platform threads as cores. With BASE_CLASSES set, also the compacting heap's churn at 2 and
# all threads and CacheBenchmark's 50% write row at all threads for a build before, alternating
# with this one.
#
#   tools/many-cores.sh OUT_DIR [THREADS]        THREADS: the top thread count (default nproc, at most 16)
#   BASE_CLASSES=DIR tools/many-cores.sh ...     DIR: the core classes of the build before (its
#                                                core/target/classes), put in front of the jar
#
# Needs: java (>= 22) on PATH, jmh/target/benchmarks.jar (or BENCHMARKS_JAR), native/build/libspanheap.so and
# native/bench/build/spanheap-bench (make -C native lib && make -C native/bench), and the peers'
# libraries (libmimalloc.so.2, libjemalloc.so.2) in LD_LIBRARY_PATH or ldconfig's cache. On a
# machine without Java, unpack a JDK beside it and point BENCHMARKS_JAR at the jar
# (docs/building.md, "Many-core runs").
# Writes OUT_DIR/native.csv (one harness line per run, the scaling sweep included),
# OUT_DIR/churn.txt (with TLB shootdowns, the machine's page faults and CPU seconds per run),
# OUT_DIR/parks.txt (the churn's parks by stack), OUT_DIR/churn.jfr (its JFR recording: parks,
# rounds, execution samples) and OUT_DIR/churn-jfr.txt (its event counts), OUT_DIR/jmh-*.txt,
# OUT_DIR/jcstress.txt, OUT_DIR/stress.txt and
# OUT_DIR/machine.txt. Runs one thing at a time; every line is a single run, so read ratios
# of runs next to each other, not absolute figures.
set -uo pipefail
out=${1:?usage: tools/many-cores.sh OUT_DIR [THREADS]}
top=${2:-$(nproc)}; [ "$top" -gt 16 ] && top=16
mkdir -p "$out"
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd); cd "$root"
jar=${BENCHMARKS_JAR:-jmh/target/benchmarks.jar}
bench=native/bench/build/spanheap-bench
# QUICK=1: every run shortened to a few hundred milliseconds, to check the script itself
if [ "${QUICK:-0}" = 1 ]; then lsec=0.3; csec=1; it=(-wi 1 -w 200ms -i 1 -r 200ms); tt=(--objects 10000 --rounds 50)
else lsec=2; csec=4; it=(-wi 2 -w 1s -i 3 -r 1s); tt=(); fi

lib() { # the peer's library: LD_LIBRARY_PATH first, then ldconfig
    local d
    for d in ${LD_LIBRARY_PATH:+${LD_LIBRARY_PATH//:/ }}; do [ -e "$d/$1" ] && { echo "$d/$1"; return; }; done
    ldconfig -p | awk -v n="$1" '$1==n {print $NF; exit}'
}
{ date -u +%FT%TZ; uname -srm; nproc; grep -m1 'model name' /proc/cpuinfo; java -version 2>&1 | head -1
  grep -E '^(MemTotal)' /proc/meminfo; } > "$out/machine.txt"

# --- native harness: the C API (sh) against each allocator as the process's malloc
mim=$(lib libmimalloc.so.2); jem=$(lib libjemalloc.so.2)
echo "allocator,$("$bench" --header)" > "$out/native.csv"
native() { # ALLOCATOR WORKLOAD ARGS...
    local a=$1; shift
    case $a in
        sh) "$bench" "$@" --backend sh ;;
        glibc) "$bench" "$@" --backend malloc ;;
        mimalloc) [ -n "$mim" ] && LD_PRELOAD=$mim "$bench" "$@" --backend malloc ;;
        jemalloc) [ -n "$jem" ] && LD_PRELOAD=$jem "$bench" "$@" --backend malloc ;;
    esac 2>>"$out/native.log" | sed "s/^/$a,/" >> "$out/native.csv"
}
for rep in 1 2; do
    for a in sh glibc jemalloc mimalloc; do
        native $a larson --threads "$top" --size 16-1024 --seconds $lsec
        native $a threadtest --threads "$top" --size 64 "${tt[@]}"
        [ $rep = 1 ] && native $a larson --threads 4 --size 16-1024 --seconds $lsec
        [ $rep = 1 ] && native $a prod-con --threads "$top" --size 16-512
    done
done
# how each scales: threadtest and larson at 1, 2, 4 and 8 threads (the top count is above)
for t in 1 2 4 8; do
    [ "$t" -ge "$top" ] && break
    for a in sh glibc jemalloc mimalloc; do
        native $a threadtest --threads "$t" --size 64 "${tt[@]}"
        native $a larson --threads "$t" --size 16-1024 --seconds "$(awk -v s=$lsec 'BEGIN {print s / 2}')"
    done
done

# --- the cache churn on the public CompactingHeap API, against malloc/free through FFM; per run
# also the TLB shootdowns on all cores (the TLB line of /proc/interrupts) and the CPU seconds
tlb() { awk '/TLB/ {s=0; for (i=2;i<=NF;i++) if ($i ~ /^[0-9]+$/) s+=$i; print s}' /proc/interrupts; }
faults() { awk '$1=="pgfault" {print $2}' /proc/vmstat; }
churn_jvm=(--enable-native-access=ALL-UNNAMED -Xms1g -Xmx1g -XX:+AlwaysPreTouch)
churn=("${churn_jvm[@]}" -cp "$jar" org.spanheap.jmh.CacheChurnBenchmark)
churn_run() { # STORE THREADS [ARGS...]: one run, one line; with BUILD=base, the build before
    local s=$1 t=$2 t0 f0 r cp=$jar; shift 2
    [ "${BUILD:-}" = base ] && cp=$BASE_CLASSES:$jar
    t0=$(tlb); f0=$(faults)
    r=$( { TIMEFORMAT='cpu %U user %S sys %R wall'; time timeout 60 java "${churn_jvm[@]}" -cp "$cp" \
        org.spanheap.jmh.CacheChurnBenchmark --store "$s" --seconds $csec --threads "$t" "$@"; } 2>&1 )
    printf '%s%s threads=%s%s: %s tlb=%s faults=%s %s\n' "$s" "${BUILD:+@$BUILD}" "$t" "${*:+ $*}" \
        "$(echo "$r" | grep -E '^max:' || echo failed)" "$(( $(tlb) - t0 ))" "$(( $(faults) - f0 ))" \
        "$(echo "$r" | grep '^cpu ')" >> "$out/churn.txt"
}
for t in 1 2 4 8 "$top"; do
    stores=(COMPACTING MALLOC_FFM)
    [ "$t" = 2 ] || [ "$t" = "$top" ] && stores=(COMPACTING COMPACTING_OWNED MALLOC_FFM HANDLES_ON_MALLOC)
    for s in "${stores[@]}"; do churn_run "$s" "$t"; done
done
for t in 1 "$top"; do # the reads alone: the same objects and index, no replace
    for s in COMPACTING MALLOC_FFM; do churn_run "$s" "$t" --read-percent 100; done
done
if [ -n "${BASE_CLASSES:-}" ]; then # the build before against this one, alternating: four pairs
    for t in 2 "$top"; do
        for pair in 1 2 3 4; do BUILD=base churn_run COMPACTING "$t"; churn_run COMPACTING "$t"; done
    done
fi
# where the compacting heap's threads wait at the top thread count: every park, by its stack; the
# recording (OUT_DIR/churn.jfr) also keeps every round (org.spanheap.CompactionRound: duration,
# handshake, bytes reclaimed and moved) and the execution samples of the profile settings, for
# `jfr print` or `jfr view` elsewhere
java -XX:StartFlightRecording:filename="$out/churn.jfr",settings=profile,jdk.ThreadPark#threshold=0ms,org.spanheap.CompactionRound#enabled=true,org.spanheap.CompactionRound#threshold=0ms "${churn[@]}" \
    --store COMPACTING --seconds $csec --threads "$top" > /dev/null 2>&1
jfr print --events jdk.ThreadPark --stack-depth 12 "$out/churn.jfr" 2>/dev/null \
    | awk '/stackTrace = \[/ {s=1; n=0; k=""; next}
           s && NF && $0 !~ /^ *\]/ && $1 !~ /^(jdk\.internal\.misc|java\.util\.concurrent\.locks)\./ && n < 3 {k=k" < "$1; n++}
           /^ *\]/ {if (s) print k; s=0}' \
    | sort | uniq -c | sort -rn | head -15 > "$out/parks.txt"
jfr summary "$out/churn.jfr" 2>/dev/null | grep -E 'CompactionRound|ExecutionSample|ThreadPark' > "$out/churn-jfr.txt"

jmh() { # NAME ARGS...: one JMH invocation, its text output kept
    local name=$1; shift
    timeout 200 java -Djmh.ignoreLock=true --enable-native-access=ALL-UNNAMED "$@" > "$out/jmh-$name.txt" 2>&1
}
# --- CacheBenchmark: 100 B values, Zipf 0.9, 5% and 50% writes; the heap default and with owned pages
for t in 2 "$top"; do
    jmh cache-t$t -jar "$jar" 'org.spanheap.jmh.CacheBenchmark.op$' -p peer=SPANHEAP,OHC -p zipf=0.9 -p writePercent=5,50 \
        -p values=100 -t "$t" -f 1 "${it[@]}"
done
if [ -n "${BASE_CLASSES:-}" ]; then # the 50% write row, the build before and this one, twice
    for pair in 1 2; do
        for b in base this; do
            cp=$jar; [ $b = base ] && cp=$BASE_CLASSES:$jar
            jmh cache50-$b$pair-t$top -cp "$cp" org.openjdk.jmh.Main 'org.spanheap.jmh.CacheBenchmark.op$' -p peer=SPANHEAP \
                -p zipf=0.9 -p writePercent=50 -p values=100 -t "$top" -f 1 "${it[@]}"
        done
    done
fi
jmh cache-owned -Dbench.heap=owned -jar "$jar" 'org.spanheap.jmh.CacheBenchmark.op$' -p peer=SPANHEAP -p zipf=0.9 -p writePercent=50 \
    -p values=100 -t "$top" -f 1 "${it[@]}"
# --- Java: 64 B allocate+touch+free at 1 thread and all; threadtest and larson at all
peers=SPANHEAP,MALLOC_FFM,JEMALLOC_FFM,MIMALLOC_FFM
for t in 1 "$top"; do
    jmh alloc64-t$t -jar "$jar" 'AllocFreeBenchmark' -p allocator=$peers -p size=64 -t "$t" -f 1 "${it[@]}"
done
jmh threadtest -jar "$jar" 'ThreadTestBenchmark' -p allocator=$peers -t "$top" -f 1 "${it[@]}"
jmh larson -jar "$jar" 'LarsonBenchmark' -p allocator=$peers -t "$top" -f 1 "${it[@]}"
# --- the replace, 64-128 B, one thread
jmh replace -jar "$jar" 'CompactReplaceBenchmark.replace$' -p store=COMPACTING,COMPACTING_OWNED,MALLOC_FFM \
    -p keys=1024 -p maxSize=128 -f 1 "${it[@]}"
# --- correctness with real parallelism: jcstress (quick) on the compacting heap's and the core's
# protocols, then the randomized stress programs with a platform thread per core
if [ -n "${JCSTRESS_JAR:-}" ]; then
    ( cd "$out" && timeout 150 java -jar "$JCSTRESS_JAR" -jvmArgs --enable-native-access=ALL-UNNAMED \
        -m quick -t "${JCSTRESS_TESTS:-compact|internal}" > jcstress-full.txt 2>&1
      echo "exit $?" >> jcstress-full.txt
      # the last progress line (a jlink'd JDK without java.desktop cannot write the HTML report;
      # the results file jcstress-results-*.bin.gz stays, and `java -jar jcstress.jar -p FILE` reads it)
      { grep -F '(Results:' jcstress-full.txt | tail -1; grep -E 'FAILED|ERROR|exit ' jcstress-full.txt | tail -20; } > jcstress.txt
      rm -rf results jcstress-full.txt )
    for p in CompactingHeapStress CacheStress; do
        echo "== $p" >> "$out/stress.txt"
        timeout 60 java --enable-native-access=ALL-UNNAMED -cp "$JCSTRESS_JAR" org.spanheap.stress.$p --seconds 15 \
            --platform "$top" --virtual $((2 * top)) 2>&1 | tail -15 >> "$out/stress.txt"
        echo "exit ${PIPESTATUS[0]}" >> "$out/stress.txt"
    done
fi
echo "done $(date -u +%T)" >> "$out/machine.txt"
