/*
 * span_pool.c — free spans, kept per real-span size and per core in
 * lock-free Treiber stacks whose links live inside the free spans' headers.
 *
 * ABA protection: the stack head is a tagged pointer. Spans are
 * user-space addresses (< 2^47 on x86-64, < 2^48 on aarch64;
 * sh_arena_init refuses anything higher), so the top 16 bits are free for a
 * counter that every successful push and pop increments:
 *
 *     63          48 47                                   0
 *    +--------------+--------------------------------------+
 *    |  tag (16 b)  |  address of the top span (or 0)      |
 *    +--------------+--------------------------------------+
 *
 * A pop that read head = (t, A) and next = B fails its CAS if, meanwhile,
 * A was popped and pushed back (head is now (t+2, A)), so it never installs
 * the stale B. The tag wraps after 65536 operations; a pop would have to be
 * stalled across exactly a multiple of that between its read and its CAS.
 * A stalled pop may read the link of a span that is already reused: the
 * header page is never madvised and the arena never unmapped, so the read
 * is harmless and the CAS then fails.
 *
 * Spans whose touched (resident) size reaches SH_MADVISE_THRESHOLD are
 * madvise(MADV_DONTNEED)'d, all but the header page, when they enter the
 * pool (scalloc); smaller ones stay resident for fast reuse. If the OS
 * refuses the madvise, the span enters the pool resident, counted as such.
 *
 * Search order of sh_pool_take: the caller's stripe of the wanted real-span
 * size, the other stripes of that size, then the other real-span sizes of
 * the same band (16 and 64 KiB: the small band; 256 KiB, 1 and 2 MiB: the
 * large band; spans never change band, see arena.c). A
 * span taken for a smaller real size than it had gives back the pages past
 * the new size first (span_fit): a kept 2 MiB span serving a smaller class
 * held 2 MiB resident for as long as that class used it (a cache churn of
 * 64 B-1 MiB values held 735 MiB for 26 MiB live).
 *
 * The pool keeps free spans and nothing else: what a span is (state, class,
 * byte limit, the LAB spare slot) is span.c's, which takes spans from here
 * and gives them back. This file calls only os.c (and metadata.c for its
 * stack array).
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "span_pool.h"

#include "heap_types.h"
#include "metadata.h"
#include "os.h"

#define TAG_SHIFT 48
#define PTR_MASK (((uint64_t)1 << TAG_SHIFT) - 1)

int sh_pool_init(sh_heap *h)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    if (n > 64)
        n = 64;
    h->ncores = (unsigned)n;
    size_t bytes = sizeof(sh_pool_stack) * SH_NUM_REAL * h->ncores;
    h->pool = sh_meta_alloc(bytes, 64);
    if (!h->pool)
        return SH_E_NOMEM;
    memset(h->pool, 0, bytes);
    for (size_t i = 0; i < SH_NUM_REAL * h->ncores; i++)
        atomic_init(&h->pool[i].head, 0);
    return SH_OK;
}

void sh_pool_destroy(sh_heap *h)
{
    sh_meta_free(h->pool);
    h->pool = NULL;
}

static void stack_push(sh_pool_stack *st, sh_span *s)
{
    /* relaxed: the CAS below re-validates the head */
    uint64_t old = atomic_load_explicit(&st->head, memory_order_relaxed);
    uint64_t nw;
    do {
        /* relaxed: the link is published by the release CAS */
        atomic_store_explicit(&s->pool_next, old & PTR_MASK, memory_order_relaxed);
        nw = (uint64_t)(uintptr_t)s | (((old >> TAG_SHIFT) + 1) << TAG_SHIFT);
        /* release: the popper (acquire) sees the span's header and link */
    } while (!atomic_compare_exchange_weak_explicit(&st->head, &old, nw, memory_order_release,
                                                    memory_order_relaxed));
}

static sh_span *stack_pop(sh_pool_stack *st)
{
    /* acquire: to read the top span's link written before its push */
    uint64_t old = atomic_load_explicit(&st->head, memory_order_acquire);
    uint64_t nw;
    sh_span *s;
    do {
        s = (sh_span *)(uintptr_t)(old & PTR_MASK);
        if (!s)
            return NULL;
        /* relaxed: may be stale if s was popped meanwhile; the tag makes
         * the CAS fail then */
        uint64_t next = atomic_load_explicit(&s->pool_next, memory_order_relaxed);
        nw = next | (((old >> TAG_SHIFT) + 1) << TAG_SHIFT);
        /* acquire on success: we own s and read what its pusher wrote;
         * acquire on failure: we read the new top's link next round */
    } while (!atomic_compare_exchange_weak_explicit(&st->head, &old, nw, memory_order_acquire,
                                                    memory_order_acquire));
    return s;
}

/* A span of another real size, taken for one of real_size bytes: what it
 * holds resident past real_size would sit unused while the span serves the
 * smaller size (and go back with it into that size's stacks), so it is
 * given back now. If the OS refuses, it stays resident and counted. */
static void span_fit(sh_heap *h, sh_span *s, size_t real_size)
{
    if (s->touched <= real_size)
        return;
    size_t len = s->touched - real_size;
    if (!sh_os_advise((char *)s + real_size, len, MADV_DONTNEED))
        return;
    /* relaxed: statistics only */
    atomic_fetch_add_explicit(&h->madvise_calls, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&h->resident, (int64_t)len, memory_order_relaxed);
    s->touched = (uint32_t)real_size;
}

sh_span *sh_pool_take(sh_heap *h, unsigned real_idx, size_t real_size, unsigned core)
{
    /* only sizes of the same band: a span's virtual size is fixed by its
     * address (arena.c), so a 128 KiB virtual span cannot hold a 256 KiB
     * real span, and a 2 MiB one holding a 16 KiB span would undo the
     * small band's density */
    unsigned lo = real_idx < SH_SMALL_REAL ? 0 : SH_SMALL_REAL;
    unsigned hi = real_idx < SH_SMALL_REAL ? SH_SMALL_REAL : SH_NUM_REAL;
    for (unsigned r = lo; r < hi; r++) {
        unsigned ri = r == lo ? real_idx : (r <= real_idx ? r - 1 : r);
        for (unsigned i = 0; i < h->ncores; i++) {
            sh_span *s = stack_pop(&h->pool[ri * h->ncores + (core + i) % h->ncores]);
            if (s) {
                if (ri != real_idx)
                    span_fit(h, s, real_size);
                return s;
            }
        }
    }
    return NULL;
}

/* A span entering the pool gives back all but its header page once its
 * resident part reaches SH_MADVISE_THRESHOLD (scalloc's 32 KiB) -- unless
 * the pool keeps it resident: up to SH_POOL_KEEP bytes of such spans per
 * heap stay as they are, so a program that frees and reallocates a working
 * set of big-block spans (threadtest with 4 KiB blocks) does not pay a
 * madvise and a page fault per page each time. sh_span_init (span.c) takes
 * a kept span's bytes off the budget when it leaves the pool. */
static void span_advise(sh_heap *h, sh_span *s)
{
    if (s->touched < SH_MADVISE_THRESHOLD)
        return;
    /* relaxed: a bound on a counter, it orders no data (the span itself is
     * published by the pool push) */
    int64_t t = (int64_t)s->touched;
    if (atomic_fetch_add_explicit(&h->pool_kept, t, memory_order_relaxed) + t <= SH_POOL_KEEP) {
        s->kept = s->touched;
        return;
    }
    atomic_fetch_sub_explicit(&h->pool_kept, t, memory_order_relaxed); /* as above */
    size_t len = s->touched - SH_PAGE;
    if (!sh_os_advise((char *)s + SH_PAGE, len, MADV_DONTNEED))
        return; /* refused: the pages stay resident and counted as such */
    /* relaxed: statistics only */
    atomic_fetch_add_explicit(&h->madvise_calls, 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&h->resident, (int64_t)len, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->advised, (int64_t)len, memory_order_relaxed);
    s->advised += (uint32_t)len;
    s->touched = SH_PAGE;
}

/* Puts a free span (magic and anchor already FREE, nobody else holds it)
 * into stripe core of its real size, madvised first unless the keep budget
 * holds it. */
void sh_pool_put(sh_heap *h, unsigned real_idx, unsigned core, sh_span *s)
{
    span_advise(h, s);
    stack_push(&h->pool[real_idx * h->ncores + core % h->ncores], s);
}

/* Gives back all but the header page of every pooled span that holds more:
 * the spans the pool keeps resident (SH_POOL_KEEP) and the small ones below
 * SH_MADVISE_THRESHOLD. Each stack is emptied first, so the spans are ours
 * while we advise them, then pushed back; an acquirer that finds a stack
 * empty meanwhile carves a new span, which costs address space, not memory.
 * Returns the bytes given back. */
size_t sh_pool_trim(sh_heap *h)
{
    size_t released = 0;
    for (size_t i = 0; i < SH_NUM_REAL * h->ncores; i++) {
        sh_pool_stack *st = &h->pool[i];
        sh_span *mine = NULL;
        sh_span *s;
        while ((s = stack_pop(st)) != NULL) {
            /* relaxed: s is ours now; the link only chains our private list */
            atomic_store_explicit(&s->pool_next, (uint64_t)(uintptr_t)mine, memory_order_relaxed);
            mine = s;
        }
        while (mine) {
            s = mine;
            /* relaxed: written by us above */
            mine = (sh_span *)(uintptr_t)atomic_load_explicit(&s->pool_next, memory_order_relaxed);
            if (s->touched > SH_PAGE) {
                size_t len = s->touched - SH_PAGE;
                if (sh_os_advise((char *)s + SH_PAGE, len, MADV_DONTNEED)) {
                    /* relaxed: statistics and a budget, see span_advise */
                    atomic_fetch_add_explicit(&h->madvise_calls, 1, memory_order_relaxed);
                    atomic_fetch_sub_explicit(&h->resident, (int64_t)len, memory_order_relaxed);
                    atomic_fetch_add_explicit(&h->advised, (int64_t)len, memory_order_relaxed);
                    atomic_fetch_sub_explicit(&h->pool_kept, (int64_t)s->kept, memory_order_relaxed);
                    s->kept = 0;
                    s->advised += (uint32_t)len;
                    s->touched = SH_PAGE;
                    released += len;
                }
            }
            stack_push(st, s);
        }
    }
    return released;
}
