/*
 * cache-thrash and cache-scratch — allocator-induced false sharing (Hoard's
 * active-false and passive-false, section 5.3; LRMalloc's section 6.3).
 *
 * cache-thrash (active): each of t threads, `iterations` times, allocates a
 * small block, writes every byte of it repetitions/t times and frees it. An
 * allocator that hands neighbouring blocks of one cache line to different
 * threads makes the threads' writes fight over that line.
 *
 * cache-scratch (passive): the main thread first allocates t small blocks
 * back to back (so they share cache lines) and gives block i to thread i,
 * which frees it (a remote free) and then runs the cache-thrash loop. An
 * allocator that lets a thread reuse the block it just freed for its next
 * allocation spreads one cache line over several threads.
 *
 * The total work is fixed, so with no false sharing the time falls as
 * threads are added, up to the number of cores. The figure is seconds
 * (lower is better). Blocks are not content-checked here: the loop itself
 * overwrites them.
 */
#include "bench.h"

struct fs_worker {
    const struct bench_params *p;
    long passes;            /* write passes per block for this thread */
    void *handed;           /* cache-scratch: block to free first      */
} __attribute__((aligned(CACHE_LINE)));

static void *fs_thread(void *arg)
{
    struct fs_worker *w = arg;
    const size_t size = w->p->size_min;

    if (w->handed != NULL)
        bench_free(w->handed);

    for (long it = 0; it < w->p->iterations; it++) {
        volatile unsigned char *b = bench_alloc(size);
        if (b == NULL)
            bench_out_of_memory("cache-thrash", size);
        for (long pass = 0; pass < w->passes; pass++) {
            for (size_t k = 0; k < size; k++) {
                b[k] = (unsigned char)(k + (size_t)pass);
                (void)b[k];
            }
        }
        bench_free((void *)b);
    }
    return 0;
}

static int fs_run(const struct bench_params *p, struct bench_result *r, int passive)
{
    long passes = p->repetitions / p->threads;
    if (passes < 1)
        passes = 1;

    struct fs_worker *w = harness_calloc((size_t)p->threads, sizeof *w);
    for (int i = 0; i < p->threads; i++) {
        w[i].p = p;
        w[i].passes = passes;
    }
    if (passive) {
        /* Back to back, from one thread: the blocks share cache lines. */
        for (int i = 0; i < p->threads; i++) {
            unsigned char *b = bench_alloc(p->size_min);
            if (b == NULL)
                bench_out_of_memory("cache-scratch", p->size_min);
            memset(b, 0xa5, p->size_min);
            w[i].handed = b;
        }
    }

    r->seconds = run_threads(p->threads, fs_thread, w, sizeof *w);
    r->ops = 2ull * (uint64_t)p->iterations * (uint64_t)p->threads + (passive ? (uint64_t)p->threads : 0);
    return 0;
}

int cache_thrash_run(const struct bench_params *p, struct bench_result *r)
{
    return fs_run(p, r, 0);
}

int cache_scratch_run(const struct bench_params *p, struct bench_result *r)
{
    return fs_run(p, r, 1);
}
