/*
 * test_thread_exit.c — a thread's exit path against the frees and span
 * reuse that race with it, interleaved on purpose.
 *
 * An exiting thread detaches its hot spans (FLOATING, with its LAB's index)
 * and then offers each one with free blocks to the orphanage, under the
 * orphanage's lock. Between the two steps the span is no longer the
 * thread's: other threads may empty it, take it from the pool for another
 * class and retire it, so that it is FLOATING with free blocks again. The
 * test holds the orphanage's lock (an internal field: this test reads the
 * core's headers) so that the exiting thread stops exactly there, does all
 * of that meanwhile, and then checks that the orphanage did not take the
 * span for the class it held before: the next allocation of that class
 * must get a block of its own size, not one of the other class's blocks.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "heap_types.h"
#include "spanheap.h"
#include "test_util.h"

enum { A_BLOCKS = 3 };

static sh_heap *heap;
static size_t big_size, small_size;     /* two classes, one real span size */
static void *a_blocks[A_BLOCKS];
static pthread_mutex_t step_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t step_cond = PTHREAD_COND_INITIALIZER;
static int step;

static void step_to(int s)
{
    pthread_mutex_lock(&step_lock);
    step = s;
    pthread_cond_broadcast(&step_cond);
    pthread_mutex_unlock(&step_lock);
}

static void step_wait(int s)
{
    pthread_mutex_lock(&step_lock);
    while (step < s)
        pthread_cond_wait(&step_cond, &step_lock);
    pthread_mutex_unlock(&step_lock);
}

/* Thread A: a few live blocks of the big class in its hot span, handed to
 * main; then it exits when told to. */
static void *exiting_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < A_BLOCKS; i++) {
        a_blocks[i] = sh_alloc(heap, big_size);
        REQUIRE(a_blocks[i]);
        memset(a_blocks[i], 0xA5, big_size);
    }
    step_to(1);
    step_wait(2);
    return NULL; /* exit: detach the hot span, then offer it to the orphanage */
}

static uint64_t anchor_of(const void *p)
{
    const sh_span *s = sh_span_of(p);
    return atomic_load_explicit(&s->anchor, memory_order_acquire);
}

static int class_info(size_t size, sh_class_info *ci)
{
    int cls = sh_class_of(size);
    REQUIRE(cls >= 0 && sh_class_get(cls, ci) == SH_OK);
    return cls;
}

static void test_orphan_after_span_reuse(void)
{
    heap = sh_heap_create(NULL);
    REQUIRE(heap);
    sh_class_info big, small;
    big_size = 1024;
    small_size = 512;
    int big_cls = class_info(big_size, &big), small_cls = class_info(small_size, &small);
    REQUIRE(big_cls != small_cls && big.real_span_size == small.real_span_size);

    /* main's LAB first, so that the span emptied below becomes its spare */
    void *warm = sh_alloc(heap, 16);
    REQUIRE(warm);

    pthread_t a;
    REQUIRE(pthread_create(&a, NULL, exiting_thread, NULL) == 0);
    step_wait(1);
    uintptr_t span = (uintptr_t)sh_span_of(a_blocks[0]);
    for (int i = 1; i < A_BLOCKS; i++)
        REQUIRE((uintptr_t)sh_span_of(a_blocks[i]) == span);

    /* hold the orphanage: A stops after detaching its span */
    pthread_mutex_lock(&heap->orphans->lock);
    step_to(2);
    while (sh_anchor_state(anchor_of(a_blocks[0])) != SH_ST_FLOATING)
        sched_yield();

    /* empty A's span (one chain, pushed by sh_stats' flush): it goes to
     * main's spare slot */
    for (int i = 0; i < A_BLOCKS; i++)
        sh_free(heap, a_blocks[i]);
    sh_heap_stats st;
    sh_stats(heap, &st);

    /* take it again for the small class, fill it, move on (it retires
     * FLOATING with main's index), and free one of its blocks */
    void **small_blocks = calloc(small.block_count + 1, sizeof(void *));
    REQUIRE(small_blocks);
    int in_span = 0;
    for (uint32_t i = 0; i <= small.block_count; i++) {
        small_blocks[i] = sh_alloc(heap, small_size);
        REQUIRE(small_blocks[i]);
        memset(small_blocks[i], 0x5A, small_size);
        in_span += (uintptr_t)sh_span_of(small_blocks[i]) == span;
    }
    CHECK_EQ(in_span, small.block_count); /* the spare was reused */
    void *freed = NULL;
    for (uint32_t i = 0; i <= small.block_count && !freed; i++) {
        if ((uintptr_t)sh_span_of(small_blocks[i]) == span) {
            freed = small_blocks[i];
            small_blocks[i] = NULL;
            sh_free(heap, freed);
        }
    }
    sh_stats(heap, &st); /* pushes the free: FLOATING, one free block */
    uint64_t an = anchor_of(freed);
    CHECK_EQ(sh_anchor_state(an), SH_ST_FLOATING);
    CHECK_EQ(sh_anchor_count(an), 1);

    /* let A go on: its span is not the one it detached any more */
    pthread_mutex_unlock(&heap->orphans->lock);
    pthread_join(a, NULL);
    CHECK_EQ(sh_anchor_state(anchor_of(freed)), SH_ST_FLOATING);

    /* a big block must be a big block, and write nothing of anyone else's */
    void *b = sh_alloc(heap, big_size);
    REQUIRE(b);
    CHECK(sh_usable_size(heap, b) >= big_size);
    CHECK((uintptr_t)sh_span_of(b) != span);
    memset(b, 0xC3, big_size);
    for (uint32_t i = 0; i <= small.block_count; i++) {
        if (!small_blocks[i])
            continue;
        const unsigned char *p = small_blocks[i];
        int ok = 1;
        for (size_t j = 0; j < small_size; j++)
            ok &= p[j] == 0x5A;
        CHECK(ok);
        sh_free(heap, small_blocks[i]);
    }
    sh_free(heap, b);
    sh_free(heap, warm);
    free(small_blocks);
    sh_stats(heap, &st);
    CHECK_EQ(st.live_bytes, 0);
    sh_heap_destroy(heap);
}

int main(void)
{
    test_orphan_after_span_reuse();
    if (t_failures) {
        fprintf(stderr, "test_thread_exit: %d check(s) failed\n", t_failures);
        return 1;
    }
    printf("test_thread_exit: ok\n");
    return 0;
}
