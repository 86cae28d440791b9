/*
 * threadtest — thread-local batches (Hoard's threadtest, as configured in
 * scalloc's evaluation, section 7.2.1).
 *
 * t threads, no sharing. Each thread runs `rounds` rounds; in each round it
 * allocates objects/t blocks of one size, then frees them in allocation
 * order. The total work is fixed (objects * rounds blocks), so on an
 * allocator that scales the time falls as threads are added, up to the
 * number of cores. scalloc: 10^4 rounds of 10^5/t objects of 64 bytes.
 *
 * A round's working set (10^5 * 64 B = 6.4 MB over all threads) is larger
 * than any thread cache, so every round also goes through the allocator's
 * backend (span pool, arenas).
 */
#include "bench.h"

struct threadtest_worker {
    const struct bench_params *p;
    long per_thread;
    void **blocks;
} __attribute__((aligned(CACHE_LINE)));

static void *threadtest_thread(void *arg)
{
    struct threadtest_worker *w = arg;
    const size_t size = w->p->size_min;
    void **blocks = w->blocks;

    for (long round = 0; round < w->p->rounds; round++) {
        for (long i = 0; i < w->per_thread; i++) {
            void *b = bench_alloc(size);
            if (b == NULL)
                bench_out_of_memory("threadtest", size);
            block_stamp(b, size);
            blocks[i] = b;
        }
        for (long i = 0; i < w->per_thread; i++) {
            block_check(blocks[i], size);
            bench_free(blocks[i]);
        }
    }
    return NULL;
}

int threadtest_run(const struct bench_params *p, struct bench_result *r)
{
    long per_thread = p->objects / p->threads;
    if (per_thread < 1)
        per_thread = 1;

    struct threadtest_worker *w = harness_calloc((size_t)p->threads, sizeof *w);
    for (int i = 0; i < p->threads; i++) {
        w[i].p = p;
        w[i].per_thread = per_thread;
        w[i].blocks = harness_calloc((size_t)per_thread, sizeof(void *));
    }

    r->seconds = run_threads(p->threads, threadtest_thread, w, sizeof *w);
    r->ops = 2ull * (uint64_t)per_thread * (uint64_t)p->rounds * (uint64_t)p->threads;
    return 0;
}
