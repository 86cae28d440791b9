#!/usr/bin/env bash
# test-real-programs.sh — real programs under LD_PRELOAD=libspanheap-malloc.so
# must print exactly what they print without it.
#
#   native/malloc/test-real-programs.sh [path/to/libspanheap-malloc.so]
#
# Programs: python3 (threads, subprocess, multiprocessing with fork), git
# (init, add, commit, log, gc), gcc (compile and run), g++ (threads,
# thread_local destructors, aligned new), sort (10^5 lines, parallel),
# sqlite3. A missing program is skipped with a message. preload-check makes
# sure the shim is really mapped (python3 reads its own /proc/self/maps), and
# every run fails if the loader reports that it could not preload it.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lib=${1:-$here/../build/libspanheap-malloc.so}
if [ ! -f "$lib" ]; then
    echo "test-real-programs: $lib is missing (make -C native malloc)" >&2
    exit 1
fi
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

pass=0 fail=0 skip=0

# run NAME CMD...: CMD once plainly and once preloaded (in fresh copies of
# $work/<NAME>.in if it exists), compare stdout+exit status.
run() {
    local name=$1
    shift
    local d
    for mode in plain shim; do
        d=$work/$name.$mode
        rm -rf "$d"
        if [ -d "$work/$name.in" ]; then cp -a "$work/$name.in" "$d"; else mkdir -p "$d"; fi
        if [ $mode = shim ]; then
            (cd "$d" && LD_PRELOAD=$lib timeout 300 "$@") >"$work/$name.$mode.out" 2>"$work/$name.$mode.err"
        else
            (cd "$d" && timeout 300 "$@") >"$work/$name.$mode.out" 2>"$work/$name.$mode.err"
        fi
        echo "exit=$?" >>"$work/$name.$mode.out"
    done
    if grep -q "cannot be preloaded" "$work/$name.shim.err"; then
        echo "FAIL $name: the loader did not preload $lib"
        fail=$((fail + 1))
    elif grep -q "spanheap-malloc:" "$work/$name.shim.err"; then
        echo "FAIL $name: the shim reported bad pointers:"
        head -5 "$work/$name.shim.err" | sed 's/^/    /'
        fail=$((fail + 1))
    elif cmp -s "$work/$name.plain.out" "$work/$name.shim.out"; then
        echo "ok   $name ($(wc -l <"$work/$name.shim.out") lines of output identical)"
        pass=$((pass + 1))
    else
        echo "FAIL $name: output differs under the shim"
        diff "$work/$name.plain.out" "$work/$name.shim.out" | head -10 | sed 's/^/    /'
        sed 's/^/    stderr: /' "$work/$name.shim.err" | head -10
        fail=$((fail + 1))
    fi
}

have() {
    if command -v "$1" >/dev/null 2>&1; then
        return 0
    fi
    echo "skip $2: $1 is not installed"
    skip=$((skip + 1))
    return 1
}

# ---- the shim is mapped (a program that prints its own maps) --------------
if have python3 preload-check; then
    if LD_PRELOAD=$lib python3 -c 'import sys; sys.exit(0 if "libspanheap-malloc.so" in open("/proc/self/maps").read() else 1)'; then
        echo "ok   preload-check (libspanheap-malloc.so is mapped in python3)"
        pass=$((pass + 1))
    else
        echo "FAIL preload-check: libspanheap-malloc.so not mapped"
        fail=$((fail + 1))
    fi
fi

# ---- python3: threads, subprocess, multiprocessing (fork) -----------------
if have python3 python3-threads; then
    mkdir -p "$work/python.in"
    cat >"$work/python.in/prog.py" <<'PY'
import hashlib, json, multiprocessing as mp, subprocess, sys, threading

def work(seed, out, i):
    d = {}
    x = seed
    for k in range(60000):
        x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        d[str(x % 5000)] = [x, str(x) * (x % 7), {"k": k}]
        if k % 3 == 0:
            d.pop(str((x >> 7) % 5000), None)
    out[i] = hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()

def square(n):
    return sum(i * i for i in range(n)) + len(bytearray(n * 100))

if __name__ == "__main__":
    out = [None] * 8
    ts = [threading.Thread(target=work, args=(s, out, i)) for i, s in enumerate(range(1, 9))]
    for t in ts: t.start()
    for t in ts: t.join()
    print("\n".join(out))
    print(subprocess.run(["python3", "-c", "print(sum(range(10**6)))"],
                         capture_output=True, text=True).stdout.strip())
    ctx = mp.get_context("fork")
    with ctx.Pool(3) as p:
        print(p.map(square, range(100, 4000, 97)))
    big = [bytes(1 << 20) for _ in range(50)]
    print(sum(len(b) for b in big), sorted({i: str(i) * 3 for i in range(100000)}.items())[-1])
PY
    run python python3 prog.py
fi

# ---- git ---------------------------------------------------------------------
if have git git; then
    mkdir -p "$work/git.in"
    cat >"$work/git.in/script.sh" <<'SH'
set -e
export GIT_CONFIG_NOSYSTEM=1 HOME=$PWD GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.org \
       GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.org
git init -q -b main repo
cd repo
for c in 1 2 3 4 5 6; do
    export GIT_AUTHOR_DATE="2026-01-0$c 12:00:00 +0000" GIT_COMMITTER_DATE="2026-01-0$c 12:00:00 +0000"
    for f in $(seq 1 40); do seq $((f * c)) $((f * c + 300)) >"file$f.txt"; done
    mkdir -p sub; seq 1 $((c * 1000)) | sed 's/^/line /' >sub/big.txt
    git add -A
    git commit -q -m "commit $c"
done
git log --stat --format='%H %an %ad %s' | head -200
git gc -q --aggressive
git count-objects -v | grep -v size
git fsck --full 2>&1
git diff HEAD~3 HEAD --stat | tail -3
git rev-list --all | wc -l
SH
    run git bash script.sh
fi

# ---- gcc: compile and run -----------------------------------------------------
if have gcc gcc; then
    mkdir -p "$work/gcc.in"
    cat >"$work/gcc.in/prog.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }
int main(void) {
    int n = 200000, *v = malloc(n * sizeof *v);
    unsigned x = 1;
    for (int i = 0; i < n; i++) { x = x * 1103515245 + 12345; v[i] = (int)(x >> 8); }
    qsort(v, n, sizeof *v, cmp);
    char **s = calloc(1000, sizeof *s);
    for (int i = 0; i < 1000; i++) { s[i] = malloc(32); snprintf(s[i], 32, "%d", v[i * 200]); }
    long sum = 0;
    for (int i = 0; i < 1000; i++) { sum += strlen(s[i]); free(s[i]); }
    printf("%d %d %ld\n", v[0], v[n - 1], sum);
    free(s); free(v);
    return 0;
}
C
    run gcc bash -c 'gcc -O2 -Wall -o prog prog.c && ./prog && gcc -O0 -g -c prog.c -o prog.o && nm prog.o | wc -l'
fi

# ---- g++: threads, thread_local destructors, aligned new ---------------------
if have g++ g++-threads; then
    mkdir -p "$work/gxx.in"
    cat >"$work/gxx.in/prog.cc" <<'CC'
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
struct alignas(256) Wide { double v[32]; };
struct Tls { std::vector<std::string> v; ~Tls() { v.emplace_back(std::string(500, 'x')); } };
thread_local Tls tls;
int main() {
    std::mutex m;
    std::map<int, std::string> all;
    std::vector<std::thread> ts;
    for (int t = 0; t < 16; t++)
        ts.emplace_back([&, t] {
            std::map<int, std::string> mine;
            for (int i = 0; i < 20000; i++) mine[(i * 7919 + t) % 5000] = std::to_string(i * t);
            auto w = std::make_unique<Wide[]>(100);
            tls.v.push_back("t" + std::to_string(t));
            std::lock_guard<std::mutex> g(m);
            for (auto &kv : mine) all[kv.first * 16 + t] = kv.second;
        });
    for (auto &t : ts) t.join();
    size_t len = 0;
    for (auto &kv : all) len += kv.second.size();
    std::printf("%zu %zu\n", all.size(), len);
}
CC
    run gxx bash -c 'g++ -O1 -std=c++17 -pthread -o prog prog.cc && ./prog'
fi

# ---- sort: 10^5 lines, parallel, small buffer (temp files) --------------------
if have sort sort; then
    mkdir -p "$work/sort.in"
    awk 'BEGIN { x = 7; for (i = 0; i < 100000; i++) { x = (x * 1103515245 + 12345) % 2147483648;
         printf "%d key%d %s\n", x % 100000, x % 977, substr("abcdefghijklmnopqrstuvwxyz", x % 26 + 1) } }' \
        >"$work/sort.in/data.txt"
    run sort bash -c 'sort --parallel=2 -S 1M data.txt | md5sum; sort -n -k1,1 -s data.txt | md5sum;
                      sort -k2,2 -k1,1n data.txt | uniq -c -f1 | sort -rn | head -5'
fi

# ---- sqlite3 -------------------------------------------------------------------
if have sqlite3 sqlite3; then
    run sqlite3 sqlite3 test.db "
        CREATE TABLE t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT);
        WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 50000)
        INSERT INTO t SELECT i, (i * 7919) % 1000, printf('%08d', i * 31) FROM c;
        CREATE INDEX tk ON t(k);
        SELECT count(*), sum(k), max(v) FROM t;
        SELECT k, count(*), min(v) FROM t GROUP BY k ORDER BY k DESC LIMIT 5;
        UPDATE t SET v = v || v WHERE k < 100;
        DELETE FROM t WHERE id % 3 = 0;
        VACUUM;
        SELECT count(*), sum(length(v)) FROM t;
        PRAGMA integrity_check;"
fi

echo "test-real-programs: $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
