/*
 * prod-con — producer-consumer: every block is freed by a thread other than
 * the one that allocated it (Hoard's section 2.2, scalloc's section 7.3).
 *
 * t threads form t/2 pairs. In each pair the producer allocates blocks of
 * random size in [size_min, size_max], stamps them and hands them over in
 * batches through a bounded single-producer/single-consumer queue; the
 * consumer checks every block and frees it. So every free is a remote free,
 * and an allocator that does not give remotely freed memory back to the
 * allocating thread's heap shows it as growing peak RSS (blowup).
 *
 * The total work is fixed (`objects` blocks over all pairs). scalloc's ACDC
 * setup uses 16..512-byte objects.
 */
#include <stdatomic.h>
#include <stdio.h>

#include "bench.h"

enum { BATCH = 64, QUEUE_BATCHES = 64 }; /* at most 4096 blocks in flight */

struct prodcon_queue {
    /* Batches published by the producer. Release on publish, acquire on
     * read: the consumer must see the batch's pointers and the blocks'
     * stamps written before it. */
    _Atomic uint64_t head __attribute__((aligned(CACHE_LINE)));
    /* Batches consumed. Release/acquire the other way: the producer may
     * overwrite a slot only after the consumer has finished reading it. */
    _Atomic uint64_t tail __attribute__((aligned(CACHE_LINE)));
    void **blocks;   /* QUEUE_BATCHES * BATCH */
    size_t *sizes;
    long batches;    /* batches this pair moves */
};

struct prodcon_worker {
    const struct bench_params *p;
    struct prodcon_queue *q;
    int producer;
    uint64_t rng;
} __attribute__((aligned(CACHE_LINE)));

static void produce(struct prodcon_worker *w)
{
    struct prodcon_queue *q = w->q;
    for (long n = 0; n < q->batches; n++) {
        unsigned spins = 0;
        while (n - (long)atomic_load_explicit(&q->tail, memory_order_acquire) >= QUEUE_BATCHES)
            wait_step(&spins);
        size_t base = (size_t)(n % QUEUE_BATCHES) * BATCH;
        for (int i = 0; i < BATCH; i++) {
            size_t size = pick_size(w->p, &w->rng);
            void *b = bench_alloc(size);
            if (b == NULL)
                bench_out_of_memory("prod-con", size);
            block_stamp(b, size);
            q->blocks[base + i] = b;
            q->sizes[base + i] = size;
        }
        atomic_store_explicit(&q->head, (uint64_t)n + 1, memory_order_release);
    }
}

static void consume(struct prodcon_worker *w)
{
    struct prodcon_queue *q = w->q;
    for (long n = 0; n < q->batches; n++) {
        unsigned spins = 0;
        while ((long)atomic_load_explicit(&q->head, memory_order_acquire) <= n)
            wait_step(&spins);
        size_t base = (size_t)(n % QUEUE_BATCHES) * BATCH;
        for (int i = 0; i < BATCH; i++) {
            block_check(q->blocks[base + i], q->sizes[base + i]);
            bench_free(q->blocks[base + i]);
        }
        atomic_store_explicit(&q->tail, (uint64_t)n + 1, memory_order_release);
    }
}

static void *prodcon_thread(void *arg)
{
    struct prodcon_worker *w = arg;
    if (w->producer)
        produce(w);
    else
        consume(w);
    return NULL;
}

int prodcon_run(const struct bench_params *p, struct bench_result *r)
{
    if (p->threads < 2 || p->threads % 2 != 0) {
        fprintf(stderr, "prod-con: threads must be even and >= 2 (pairs of producer and consumer), not %d\n",
                p->threads);
        return -1;
    }
    int pairs = p->threads / 2;
    long batches = p->objects / BATCH / pairs;
    if (batches < 1)
        batches = 1;

    struct prodcon_queue *queues = harness_calloc((size_t)pairs, sizeof *queues);
    struct prodcon_worker *w = harness_calloc((size_t)p->threads, sizeof *w);
    for (int i = 0; i < pairs; i++) {
        queues[i].blocks = harness_calloc(QUEUE_BATCHES * BATCH, sizeof(void *));
        queues[i].sizes = harness_calloc(QUEUE_BATCHES * BATCH, sizeof(size_t));
        queues[i].batches = batches;
        for (int role = 0; role < 2; role++) {
            struct prodcon_worker *x = &w[2 * i + role];
            x->p = p;
            x->q = &queues[i];
            x->producer = role == 0;
            x->rng = rng_seed(p->seed, (uint64_t)i);
        }
    }

    r->seconds = run_threads(p->threads, prodcon_thread, w, sizeof *w);
    r->ops = 2ull * (uint64_t)batches * BATCH * (uint64_t)pairs;
    return 0;
}
