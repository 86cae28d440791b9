/*
 * bench.h — shared pieces of the native benchmark harness.
 *
 * One binary (spanheap-bench) runs one workload once and prints one result
 * line. The allocator is chosen at run time:
 *
 *   sh      sh_alloc/sh_free on one heap made with sh_heap_create(NULL)
 *   malloc  the process's malloc/free; LD_PRELOAD decides whose (glibc,
 *           mimalloc, jemalloc, tcmalloc, libspanheap-malloc.so)
 *
 * Workloads (one file each) only call bench_alloc/bench_free below, so every
 * backend runs exactly the same code around the allocator calls.
 */
#ifndef SPANHEAP_BENCH_H
#define SPANHEAP_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sched.h>

#include "spanheap.h"

/* ---- allocator backend ------------------------------------------------ */

enum bench_backend { BACKEND_SH, BACKEND_MALLOC };

extern enum bench_backend bench_backend;
extern sh_heap *bench_heap;

/* A predictable branch and a direct call: no function pointer, so the
 * backends pay the same (near zero) dispatch cost. */
static inline void *bench_alloc(size_t size)
{
    if (bench_backend == BACKEND_SH)
        return sh_alloc(bench_heap, size);
    return malloc(size);
}

static inline void bench_free(void *ptr)
{
    if (bench_backend == BACKEND_SH)
        sh_free(bench_heap, ptr);
    else
        free(ptr);
}

/* Exits with a message when an allocation fails (a benchmark that cannot
 * allocate has no meaningful result). */
void bench_out_of_memory(const char *workload, size_t size);

/* ---- parameters and result ------------------------------------------- */

struct bench_params {
    int threads;
    size_t size_min;        /* object size; a range when size_max > size_min */
    size_t size_max;
    long objects;           /* threadtest, prod-con: objects per round / run  */
    long rounds;            /* threadtest rounds; larson rounds per slot      */
    long slots;             /* larson: blocks per thread slice               */
    double seconds;         /* larson: run time                               */
    long iterations;        /* cache-*: allocations per thread                */
    long repetitions;       /* cache-*: write passes per object, all threads  */
    uint64_t seed;
};

enum bench_metric { METRIC_MOPS, METRIC_SECONDS };

struct bench_result {
    uint64_t ops;           /* allocations + frees in the timed part */
    double seconds;         /* wall time of the timed part           */
    long generations;       /* larson: threads started (turnover)    */
};

int threadtest_run(const struct bench_params *p, struct bench_result *r);
int larson_run(const struct bench_params *p, struct bench_result *r);
int prodcon_run(const struct bench_params *p, struct bench_result *r);
int cache_thrash_run(const struct bench_params *p, struct bench_result *r);
int cache_scratch_run(const struct bench_params *p, struct bench_result *r);

/* ---- helpers ----------------------------------------------------------- */

/* Starts n threads running fn on args[i] (args + i * stride bytes), lets
 * them go at the same moment and returns the wall time from that moment
 * until the last one has ended. Thread creation is not timed. */
double run_threads(int n, void *(*fn)(void *), void *args, size_t stride);

/* calloc for the harness's own bookkeeping (never timed, never the
 * allocator under test when the backend is sh); exits on failure. */
void *harness_calloc(size_t count, size_t size);

static inline double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* xorshift64*: a small, fast per-thread generator; state must not be 0. */
static inline uint64_t rng_next(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}

static inline uint64_t rng_seed(uint64_t seed, uint64_t stream)
{
    uint64_t s = (seed + 1) * 0x9e3779b97f4a7c15ull ^ (stream + 1) * 0xbf58476d1ce4e5b9ull;
    return s ? s : 1;
}

static inline size_t pick_size(const struct bench_params *p, uint64_t *rng)
{
    if (p->size_max <= p->size_min)
        return p->size_min;
    return p->size_min + (size_t)(rng_next(rng) % (p->size_max - p->size_min + 1));
}

/*
 * Content check. Every workload stamps a block right after allocating it
 * (first bytes and last byte, derived from the block's address) and checks
 * the stamp right before freeing it. A block handed out twice, or memory
 * overwritten by the allocator while live, fails the check; the benchmark
 * then stops with an error instead of printing a figure. The cost is one
 * or two stores and loads per block, the same for every backend.
 */
static inline uint64_t stamp_of(const void *ptr)
{
    return (uint64_t)(uintptr_t)ptr * 0x9e3779b97f4a7c15ull;
}

static inline void block_stamp(void *ptr, size_t size)
{
    unsigned char *b = ptr;
    uint64_t tag = stamp_of(ptr);
    if (size == 0)
        return;
    if (size >= sizeof tag)
        memcpy(b, &tag, sizeof tag);
    else
        memcpy(b, &tag, size);
    b[size - 1] = (unsigned char)(tag >> 56);
}

void bench_corrupt(const void *ptr, size_t size);

static inline void block_check(const void *ptr, size_t size)
{
    const unsigned char *b = ptr;
    uint64_t tag = stamp_of(ptr);
    if (size == 0)
        return;
    if ((size >= sizeof tag ? memcmp(b, &tag, sizeof tag) : memcmp(b, &tag, size)) != 0
        || b[size - 1] != (unsigned char)(tag >> 56))
        bench_corrupt(ptr, size);
}

/* Busy-wait step for hand-offs between threads. More threads than cores is
 * normal here (up to 16 on 2 cores), so waiting yields the CPU soon. */
static inline void wait_step(unsigned *spins)
{
    if (++*spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        /* isb, not yield: yield is a no-op on most cores, isb stalls the
         * core for tens of cycles, as pause does (HotSpot spins with isb on
         * Neoverse cores) */
        __asm__ __volatile__("isb" ::: "memory");
#endif
    } else {
        *spins = 0;
        sched_yield();
    }
}

#define CACHE_LINE 64

#endif /* SPANHEAP_BENCH_H */
