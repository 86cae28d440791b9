/*
 * larson — a server with thread turnover (Larson and Krishnan, ISMM 1998, as
 * described in the Hoard paper, scalloc's section 7.2.3 and LRMalloc's
 * chapter 6).
 *
 * The blocks live in t slices of `slots` entries. Before the clock starts the
 * main thread fills every slot (so the first frees of every worker are remote
 * frees of main-thread blocks). Then one worker per slice repeatedly picks a
 * random slot, frees its block and puts a new block of random size in
 * [size_min, size_max] there. After rounds * slots replacements a worker
 * starts a successor thread on the same slice and exits: the successor frees
 * blocks its predecessor allocated, from spans the predecessor's thread
 * owned, so the allocator must hand over or adopt an exited thread's memory.
 * The run lasts `seconds`; the figure is (allocations + frees) per second.
 *
 * scalloc: 10 s, 7..8-byte objects, 1000 slots, 10^4 rounds per slot.
 * LRMalloc: 16..128 bytes, 1000 slots, 10^7 allocations per thread.
 * Hoard: 10..100 bytes. The harness defaults are listed in main.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "bench.h"

struct larson_slice {
    const struct bench_params *p;
    void **blocks;
    size_t *sizes;
    uint64_t rng;
    uint64_t ops;           /* plain: one thread at a time owns the slice; */
    long generations;       /* pthread_create orders predecessor/successor */
} __attribute__((aligned(CACHE_LINE)));

/* Set once by the main thread when the time is up; relaxed is enough, the
 * workers only need to see it eventually. */
static atomic_int larson_stop;

static pthread_mutex_t chains_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t chains_cond = PTHREAD_COND_INITIALIZER;
static int chains_done;

static void *larson_thread(void *arg);

/* Starts a detached worker on slice s; 0 on success. */
static int larson_spawn(struct larson_slice *s)
{
    pthread_attr_t attr;
    pthread_t tid;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&tid, &attr, larson_thread, s);
    pthread_attr_destroy(&attr);
    return rc;
}

static void *larson_thread(void *arg)
{
    struct larson_slice *s = arg;
    const struct bench_params *p = s->p;
    const long generation_ops = p->rounds * p->slots;

    for (;;) {
        s->generations++;
        for (long i = 0; i < generation_ops; i++) {
            if (atomic_load_explicit(&larson_stop, memory_order_relaxed))
                break;
            long victim = (long)(rng_next(&s->rng) % (uint64_t)p->slots);
            block_check(s->blocks[victim], s->sizes[victim]);
            bench_free(s->blocks[victim]);

            size_t size = pick_size(p, &s->rng);
            void *b = bench_alloc(size);
            if (b == NULL)
                bench_out_of_memory("larson", size);
            block_stamp(b, size);
            s->blocks[victim] = b;
            s->sizes[victim] = size;
            s->ops += 2;
        }
        if (atomic_load_explicit(&larson_stop, memory_order_relaxed))
            break;
        /* Turnover: hand the slice to a new thread and end this one. If the
         * system refuses a thread (EAGAIN), keep going in this one. */
        if (larson_spawn(s) == 0)
            return NULL;
    }

    pthread_mutex_lock(&chains_lock);
    chains_done++;
    pthread_cond_signal(&chains_cond);
    pthread_mutex_unlock(&chains_lock);
    return NULL;
}

int larson_run(const struct bench_params *p, struct bench_result *r)
{
    struct larson_slice *slices = harness_calloc((size_t)p->threads, sizeof *slices);

    /* Warm-up, not timed: the main thread allocates every slot. */
    for (int t = 0; t < p->threads; t++) {
        struct larson_slice *s = &slices[t];
        s->p = p;
        s->rng = rng_seed(p->seed, (uint64_t)t);
        s->blocks = harness_calloc((size_t)p->slots, sizeof(void *));
        s->sizes = harness_calloc((size_t)p->slots, sizeof(size_t));
        for (long i = 0; i < p->slots; i++) {
            size_t size = pick_size(p, &s->rng);
            void *b = bench_alloc(size);
            if (b == NULL)
                bench_out_of_memory("larson", size);
            block_stamp(b, size);
            s->blocks[i] = b;
            s->sizes[i] = size;
        }
    }

    double start = now_seconds();
    for (int t = 0; t < p->threads; t++) {
        int rc = larson_spawn(&slices[t]);
        if (rc != 0) {
            fprintf(stderr, "larson: cannot start thread: %s\n", strerror(rc));
            return -1;
        }
    }

    struct timespec nap = { .tv_sec = (time_t)p->seconds,
                            .tv_nsec = (long)((p->seconds - (double)(time_t)p->seconds) * 1e9) };
    while (nanosleep(&nap, &nap) != 0 && errno == EINTR)
        ;
    atomic_store_explicit(&larson_stop, 1, memory_order_relaxed);

    pthread_mutex_lock(&chains_lock);
    while (chains_done < p->threads)
        pthread_cond_wait(&chains_cond, &chains_lock);
    pthread_mutex_unlock(&chains_lock);
    r->seconds = now_seconds() - start;

    /* Not timed: free what is left, so a leak check after the run is exact. */
    r->ops = 0;
    r->generations = 0;
    for (int t = 0; t < p->threads; t++) {
        struct larson_slice *s = &slices[t];
        for (long i = 0; i < p->slots; i++) {
            block_check(s->blocks[i], s->sizes[i]);
            bench_free(s->blocks[i]);
        }
        r->ops += s->ops;
        r->generations += s->generations;
    }
    return 0;
}
