/*
 * test_stress.c — multi-threaded stress of the native core with content
 * checks.
 *
 * 8 worker threads at a time (more than the cores), 3 generations of them
 * (new threads are created while others still run, and every worker exits
 * while it still owns spans and blocks). Workers allocate blocks of mixed
 * sizes from three heaps (sh_alloc, sh_alloc_aligned, and the batch calls the
 * Java caches use), write a pattern into every block, keep some, free some
 * themselves and hand others through a shared exchange to other threads,
 * which verify the pattern and free them remotely. The third heap has a
 * byte limit (allocations may fail with SH_E_LIMIT) and reuses only empty
 * spans (threshold 100%). At the end every block
 * is freed, live bytes are zero and every span is back in the span pool.
 * Then a larson-like run of short-lived threads (test_thread_turnover), and
 * sweeps of the LABs' chains racing their owners (test_sweeps_race_owners).
 *
 * usage: test_stress [scale] [tsan]   (scale multiplies the operation count)
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "spanheap.h"
#include "test_util.h"

enum { NHEAPS = 3, CONCURRENT = 8, GENERATIONS = 3, KEEP = 256, XCAP = 4096, BATCH = 32 };

typedef struct block {
    unsigned char *p;
    size_t size;
    int heap;
    int cached; /* from sh_alloc_batch: free it the way the Java cache does */
} block;

static sh_heap *heaps[NHEAPS];
static uint64_t free_key[NHEAPS];
static long ops_per_thread;

/* shared exchange of live blocks (remote frees) */
static pthread_mutex_t xlock = PTHREAD_MUTEX_INITIALIZER;
static block xq[XCAP];
static int xhead, xcount;

static _Atomic long bad_content;

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static unsigned char pat(const unsigned char *base, size_t i)
{
    return (unsigned char)(((uintptr_t)base >> 4) * 31 + i * 7 + 1);
}

/* pattern over the whole block up to 2 KiB; head, tail and one byte per
 * page for bigger blocks */
static void fill(block *b)
{
    size_t n = b->size;
    if (n <= 2048) {
        for (size_t i = 0; i < n; i++)
            b->p[i] = pat(b->p, i);
        return;
    }
    for (size_t i = 0; i < 1024; i++) {
        b->p[i] = pat(b->p, i);
        b->p[n - 1 - i] = pat(b->p, n - 1 - i);
    }
    for (size_t i = 1024; i < n - 1024; i += 4096)
        b->p[i] = pat(b->p, i);
}

static void verify(const block *b)
{
    size_t n = b->size;
    int ok = 1;
    if (n <= 2048) {
        for (size_t i = 0; i < n; i++)
            ok &= b->p[i] == pat(b->p, i);
    } else {
        for (size_t i = 0; i < 1024; i++)
            ok &= b->p[i] == pat(b->p, i) && b->p[n - 1 - i] == pat(b->p, n - 1 - i);
        for (size_t i = 1024; i < n - 1024; i += 4096)
            ok &= b->p[i] == pat(b->p, i);
    }
    if (!ok)
        atomic_fetch_add(&bad_content, 1);
}

static void release(block *b)
{
    verify(b);
    if (b->cached) {
        /* what the Java cache does: mark free, give back in a batch */
        ((uint64_t *)b->p)[1] = free_key[b->heap] ^ (uint64_t)(uintptr_t)b->p;
        void *one = b->p;
        CHECK_EQ(sh_free_batch(heaps[b->heap], &one, 1), SH_OK);
    } else {
        CHECK_EQ(sh_free_checked(heaps[b->heap], b->p), SH_OK);
    }
}

static size_t pick_size(uint64_t *s)
{
    uint64_t r = rnd(s);
    switch (r % 16) {
    case 0: return (size_t)(r >> 8) % 65536 + 1;      /* medium */
    case 1: return (size_t)(r >> 8) % 8192;
    default: return (size_t)(r >> 8) % 512;           /* small, incl. 0 */
    }
}

static int xpush(block *b)
{
    pthread_mutex_lock(&xlock);
    int ok = xcount < XCAP;
    if (ok) {
        xq[(xhead + xcount) % XCAP] = *b;
        xcount++;
    }
    pthread_mutex_unlock(&xlock);
    return ok;
}

static int xpop(block *b)
{
    pthread_mutex_lock(&xlock);
    int ok = xcount > 0;
    if (ok) {
        *b = xq[xhead];
        xhead = (xhead + 1) % XCAP;
        xcount--;
    }
    pthread_mutex_unlock(&xlock);
    return ok;
}

static _Atomic long limit_hits;

/* Only the limited heap may refuse, and only with SH_E_LIMIT. */
static int allocation_failed(const block *b, int err)
{
    REQUIRE(b->heap == NHEAPS - 1 && err == SH_E_LIMIT);
    atomic_fetch_add(&limit_hits, 1);
    return 1;
}

static void *worker(void *arg)
{
    uint64_t seed = (uint64_t)(uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
    block keep[KEEP];
    int nkeep = 0;
    for (long op = 0; op < ops_per_thread; op++) {
        uint64_t r = rnd(&seed);
        int action = (int)(r % 100);
        if (action < 45 || nkeep == 0) {
            /* allocate */
            block b = {0};
            b.heap = (int)((r >> 8) % NHEAPS);
            b.size = pick_size(&seed);
            if ((r >> 12) % 500 == 0)
                b.size = ((size_t)1 << 20) + (size_t)(r >> 20) % 600000; /* large */
            if ((r >> 16) % 10 == 0) {
                size_t align = (size_t)16 << ((r >> 24) % 9); /* 16..4096 */
                b.p = sh_alloc_aligned(heaps[b.heap], b.size, align);
                if (!b.p && allocation_failed(&b, sh_last_error()))
                    continue;
                REQUIRE(b.p && (uintptr_t)b.p % align == 0);
            } else if ((r >> 16) % 10 == 1 && b.size <= 4096) {
                /* a Java-style refill: a batch, use one, give the rest back */
                void *v[BATCH];
                int cls = sh_class_of(b.size);
                int n = sh_alloc_batch(heaps[b.heap], cls, v, BATCH);
                if (n < 0 && allocation_failed(&b, -n))
                    continue;
                REQUIRE(n >= 1);
                b.p = v[0];
                ((uint64_t *)b.p)[1] = 0; /* handed out: mark cleared */
                b.cached = 1;
                if (n > 1)
                    CHECK_EQ(sh_free_batch(heaps[b.heap], v + 1, n - 1), SH_OK);
            } else {
                b.p = sh_alloc(heaps[b.heap], b.size);
                if (!b.p && allocation_failed(&b, sh_last_error()))
                    continue;
                REQUIRE(b.p != NULL);
            }
            CHECK(sh_usable_size(heaps[b.heap], b.p) >= b.size);
            if (b.size < 16)
                b.size = 16; /* the pattern covers the whole minimal block */
            fill(&b);
            if (nkeep < KEEP) {
                keep[nkeep++] = b;
            } else if (!xpush(&b)) {
                release(&b);
            }
        } else if (action < 70) {
            /* local free */
            int i = (int)((r >> 8) % (uint64_t)nkeep);
            release(&keep[i]);
            keep[i] = keep[--nkeep];
        } else if (action < 85) {
            /* hand one to another thread */
            int i = (int)((r >> 8) % (uint64_t)nkeep);
            if (xpush(&keep[i]))
                keep[i] = keep[--nkeep];
        } else {
            /* free one that another thread allocated (remote free) */
            block b;
            if (xpop(&b))
                release(&b);
        }
    }
    /* exit while owning spans: half of what is left goes to other threads,
     * the rest is freed here */
    for (int i = 0; i < nkeep; i++)
        if ((i & 1) || !xpush(&keep[i]))
            release(&keep[i]);
    return NULL;
}

/* A thread that used a heap which is destroyed before the thread exits. */
/* ---- thread turnover (larson) -------------------------------------------
 *
 * TURN_SLICES slices of TURN_SLOTS blocks of 16..1024 bytes; each slice is
 * worked by a chain of short-lived threads: a thread replaces random slots
 * (check the pattern, free, allocate, fill) TURN_REPLACE times, starts its
 * successor on the slice and exits while it still owns spans. The
 * successor frees its predecessor's blocks, and new threads take over the
 * LABs and the orphaned spans of exited ones while other chains empty and
 * reuse spans: the exit path races with frees, emptying and span reuse on
 * every thread. The spans an exiting thread leaves behind must go to the
 * orphanage only while they are still the ones it detached; a span that
 * was emptied and taken for another class meanwhile must not. */
enum { TURN_SLICES = 8, TURN_SLOTS = 512, TURN_REPLACE = 1000 };

typedef struct turn_slice {
    sh_heap *heap;
    unsigned char *p[TURN_SLOTS];
    size_t size[TURN_SLOTS];
    uint64_t rng;
    long threads_left; /* plain: one thread owns the slice at a time;
                          pthread_create orders predecessor and successor */
    pthread_t last;    /* the chain's last thread (joined by main) */
} turn_slice;

static pthread_mutex_t turn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_cond = PTHREAD_COND_INITIALIZER;
static int turn_done;

/* a stamp, not a full pattern: the first word and the last byte (cheap,
 * so that threads turn over fast) */
static uint64_t turn_tag(const unsigned char *p)
{
    return (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
}

static void turn_fill(unsigned char *p, size_t n)
{
    uint64_t t = turn_tag(p);
    memcpy(p, &t, sizeof t);
    p[n - 1] = (unsigned char)(t >> 56);
}

static void turn_verify(const unsigned char *p, size_t n)
{
    uint64_t t = turn_tag(p);
    if (memcmp(p, &t, sizeof t) != 0 || p[n - 1] != (unsigned char)(t >> 56))
        atomic_fetch_add(&bad_content, 1);
}

static void *turn_worker(void *arg)
{
    turn_slice *sl = arg;
    for (int i = 0; i < TURN_REPLACE; i++) {
        unsigned k = (unsigned)(rnd(&sl->rng) % TURN_SLOTS);
        turn_verify(sl->p[k], sl->size[k]);
        CHECK_EQ(sh_free_checked(sl->heap, sl->p[k]), SH_OK);
        size_t n = 16 + (size_t)(rnd(&sl->rng) % 1009);
        unsigned char *b = sh_alloc(sl->heap, n);
        if (!b) {
            sh_heap_stats st;
            sh_stats(sl->heap, &st);
            fprintf(stderr, "test_thread_turnover: sh_alloc(%zu): %s carved %llu committed %llu left %ld\n", n, sh_error_name(sh_last_error()), (unsigned long long)st.spans_carved, (unsigned long long)st.committed_bytes, sl->threads_left);
            exit(1);
        }
        turn_fill(b, n);
        sl->p[k] = b;
        sl->size[k] = n;
    }
    if (--sl->threads_left > 0) {
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        pthread_t t;
        int rc = pthread_create(&t, &a, turn_worker, sl);
        pthread_attr_destroy(&a);
        if (rc == 0)
            return NULL;
        REQUIRE(rc == EAGAIN); /* no thread to spare: end the chain here */
    }
    pthread_mutex_lock(&turn_lock);
    turn_done++;
    pthread_cond_signal(&turn_cond);
    pthread_mutex_unlock(&turn_lock);
    return NULL;
}

static void test_thread_turnover(long threads_per_slice)
{
    sh_config cfg;
    sh_config_init(&cfg);
    cfg.reserve_bytes = (size_t)8 << 30; /* as the heaps above (qemu-user) */
    sh_heap *h = sh_heap_create(&cfg);
    REQUIRE(h);
    static turn_slice slices[TURN_SLICES];
    for (int s = 0; s < TURN_SLICES; s++) {
        turn_slice *sl = &slices[s];
        sl->heap = h;
        sl->rng = 0x9E3779B97F4A7C15ull * (uint64_t)(s + 1);
        sl->threads_left = threads_per_slice;
        for (int k = 0; k < TURN_SLOTS; k++) {
            sl->size[k] = 16 + (size_t)(rnd(&sl->rng) % 1009);
            sl->p[k] = sh_alloc(h, sl->size[k]);
            REQUIRE(sl->p[k]);
            turn_fill(sl->p[k], sl->size[k]);
        }
    }
    for (int s = 0; s < TURN_SLICES; s++) {
        pthread_t t;
        REQUIRE(pthread_create(&t, NULL, turn_worker, &slices[s]) == 0);
        pthread_detach(t);
    }
    pthread_mutex_lock(&turn_lock);
    while (turn_done < TURN_SLICES)
        pthread_cond_wait(&turn_cond, &turn_lock);
    pthread_mutex_unlock(&turn_lock);
    for (int s = 0; s < TURN_SLICES; s++) {
        for (int k = 0; k < TURN_SLOTS; k++) {
            turn_verify(slices[s].p[k], slices[s].size[k]);
            CHECK_EQ(sh_free_checked(h, slices[s].p[k]), SH_OK);
        }
    }
    CHECK_EQ(atomic_load(&bad_content), 0);
    sh_heap_stats st;
    sh_stats(h, &st);
    CHECK_EQ(st.live_bytes, 0);
    printf("test_stress: thread turnover: %d chains of %ld threads, %llu spans carved\n", TURN_SLICES,
           threads_per_slice, (unsigned long long)st.spans_carved);
    /* the last threads may still be in their exit path: only what they
     * cannot change any more is checked (no block of theirs is live) */
    sh_heap_destroy(h);
}

static pthread_mutex_t dlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dcond = PTHREAD_COND_INITIALIZER;
static int dstage;

static void *doomed_user(void *arg)
{
    sh_heap *h = arg;
    for (int i = 0; i < 1000; i++) {
        void *p = sh_alloc(h, (size_t)i % 300);
        REQUIRE(p);
        if (i % 3)
            sh_free(h, p);
    }
    pthread_mutex_lock(&dlock);
    dstage = 1;
    pthread_cond_broadcast(&dcond);
    while (dstage != 2)
        pthread_cond_wait(&dcond, &dlock);
    pthread_mutex_unlock(&dlock);
    /* the heap is gone; a new one (maybe at the same address) must work */
    sh_heap *h2 = sh_heap_create(NULL);
    REQUIRE(h2);
    void *p = sh_alloc(h2, 100);
    REQUIRE(p);
    sh_free(h2, p);
    sh_heap_destroy(h2);
    return NULL; /* thread exit: the destructor must skip the dead heap */
}

static void test_destroy_before_thread_exit(void)
{
    sh_heap *h = sh_heap_create(NULL);
    REQUIRE(h);
    pthread_t t;
    pthread_create(&t, NULL, doomed_user, h);
    pthread_mutex_lock(&dlock);
    while (dstage != 1)
        pthread_cond_wait(&dcond, &dlock);
    sh_heap_destroy(h);
    dstage = 2;
    pthread_cond_broadcast(&dcond);
    pthread_mutex_unlock(&dlock);
    pthread_join(t, NULL);
}

/* ---- sweeps racing the owners' chains ------------------------------------
 *
 * Owners free blocks of the spans they retired into their LABs' chains
 * (span.c, "Frees into the LAB's retired spans") while another thread
 * sweeps those chains with sh_trim (sh_heap_sweep_chains), and while the
 * owners take the same spans back: every block keeps its contents until
 * freed, none is handed out twice, and everything is back at the end. */
enum { SWEEP_OWNERS = 3, SWEEP_BLOCKS = 3000 };
static atomic_int sweep_owners_left;

static void *sweep_owner(void *arg)
{
    sh_heap *h = ((void **)arg)[0];
    long rounds = (long)(intptr_t)((void **)arg)[1];
    uint64_t rng = (uint64_t)(uintptr_t)&rng * 0x9E3779B97F4A7C15ull;
    static _Thread_local unsigned char *p[SWEEP_BLOCKS];
    static _Thread_local size_t n[SWEEP_BLOCKS];
    for (long r = 0; r < rounds; r++) {
        for (int i = 0; i < SWEEP_BLOCKS; i++) {
            n[i] = 16 + (size_t)(rnd(&rng) % 1009);
            p[i] = sh_alloc(h, n[i]);
            REQUIRE(p[i]);
            turn_fill(p[i], n[i]);
        }
        /* free in random order: most frees hit retired spans */
        for (int i = SWEEP_BLOCKS - 1; i > 0; i--) {
            int j = (int)(rnd(&rng) % (uint64_t)(i + 1));
            unsigned char *tp = p[i];
            size_t tn = n[i];
            p[i] = p[j], n[i] = n[j];
            p[j] = tp, n[j] = tn;
        }
        for (int i = 0; i < SWEEP_BLOCKS; i++) {
            turn_verify(p[i], n[i]);
            CHECK_EQ(sh_free_checked(h, p[i]), SH_OK);
        }
    }
    atomic_fetch_sub(&sweep_owners_left, 1);
    return NULL;
}

static void test_sweeps_race_owners(long rounds)
{
    sh_heap *h = sh_heap_create(NULL);
    REQUIRE(h);
    atomic_store(&sweep_owners_left, SWEEP_OWNERS);
    void *arg[2] = {h, (void *)(intptr_t)rounds};
    pthread_t t[SWEEP_OWNERS];
    for (int i = 0; i < SWEEP_OWNERS; i++)
        REQUIRE(pthread_create(&t[i], NULL, sweep_owner, arg) == 0);
    long sweeps = 0;
    while (atomic_load(&sweep_owners_left) > 0) {
        sh_trim(h);
        sweeps++;
    }
    for (int i = 0; i < SWEEP_OWNERS; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(atomic_load(&bad_content), 0);
    sh_heap_stats st;
    sh_stats(h, &st);
    CHECK_EQ(st.live_bytes, 0);
    CHECK_EQ(st.spans_hot + st.spans_floating + st.spans_reusable, 0);
    CHECK_EQ(st.spans_free, st.spans_carved);
    printf("test_stress: sweeps racing owners: %d owners, %ld rounds, %ld sweeps\n", SWEEP_OWNERS, rounds,
           sweeps);
    sh_heap_destroy(h);
}

int main(int argc, char **argv)
{
    long scale = argc > 1 ? atol(argv[1]) : 1;
    int tsan = argc > 2 && strcasecmp(argv[2], "tsan") == 0;
    if (scale < 1)
        scale = 1;
    ops_per_thread = (tsan ? 6000 : 40000) * scale;

    for (int i = 0; i < NHEAPS; i++) {
        sh_config cfg;
        sh_config_init(&cfg);
        cfg.reserve_bytes = (size_t)8 << 30;
        cfg.reuse_threshold_pct = i == 0 ? 0 : i == 1 ? 50 : 100; /* 0: default 80% */
        if (i == NHEAPS - 1)
            cfg.byte_limit = (size_t)24 << 20;
        heaps[i] = sh_heap_create(&cfg);
        REQUIRE(heaps[i]);
        sh_layout L;
        sh_heap_layout(heaps[i], &L);
        free_key[i] = L.free_key;
    }

    /* generations overlap: thread k of generation g+1 starts as soon as
     * thread k of generation g has finished, while the others still run */
    pthread_t th[CONCURRENT];
    long id = 1;
    for (int k = 0; k < CONCURRENT; k++)
        pthread_create(&th[k], NULL, worker, (void *)id++);
    for (int g = 1; g < GENERATIONS; g++) {
        for (int k = 0; k < CONCURRENT; k++) {
            pthread_join(th[k], NULL);
            pthread_create(&th[k], NULL, worker, (void *)id++);
        }
    }
    for (int k = 0; k < CONCURRENT; k++)
        pthread_join(th[k], NULL);

    /* the main thread frees what is left in the exchange: remote frees into
     * orphaned spans */
    block b;
    while (xpop(&b))
        release(&b);

    CHECK_EQ(atomic_load(&bad_content), 0);
    for (int i = 0; i < NHEAPS; i++) {
        sh_heap_stats st;
        sh_stats(heaps[i], &st);
        CHECK_EQ(st.live_bytes, 0);
        CHECK_EQ(st.large_count, 0);
        CHECK_EQ(st.large_bytes, 0);
        CHECK_EQ(st.spans_hot, 0);
        CHECK_EQ(st.spans_floating, 0);
        CHECK_EQ(st.spans_reusable, 0);
        CHECK_EQ(st.spans_free, st.spans_carved);
        CHECK_EQ(st.limited_bytes, 0);
        for (int c = 0; c < sh_class_count(); c++) {
            CHECK_EQ(st.class_live_blocks[c], 0);
            CHECK_EQ(st.class_spans[c], 0);
        }
        printf("test_stress: heap %d: %llu spans carved, %llu madvise calls, committed %llu KiB, resident %llu KiB\n",
               i, (unsigned long long)st.spans_carved, (unsigned long long)st.madvise_calls,
               (unsigned long long)st.committed_bytes >> 10, (unsigned long long)st.resident_bytes >> 10);
        sh_heap_destroy(heaps[i]);
    }
    test_destroy_before_thread_exit();
    test_thread_turnover((tsan ? 20 : 200) * scale);
    test_sweeps_race_owners((tsan ? 4 : 40) * scale);
    if (t_failures) {
        fprintf(stderr, "test_stress: %d check(s) failed\n", t_failures);
        return 1;
    }
    printf("test_stress: ok (%d threads, %ld ops each, %ld allocations refused by the byte limit)\n",
           CONCURRENT * GENERATIONS, ops_per_thread, atomic_load(&limit_hits));
    return 0;
}
