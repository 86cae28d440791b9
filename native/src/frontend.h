/*
 * frontend.h — per-thread local allocation buffers (LABs): the one-entry
 * LAB cache and the inline allocation fast path (frontend.c). The LAB
 * itself (sh_lab) is in heap_types.h.
 */
#ifndef SH_FRONTEND_H
#define SH_FRONTEND_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base.h"
#include "heap_types.h"

/* lab->hot[cls] when the LAB has no hot span for cls: an immutable,
 * all-zero header that no block belongs to (bump 0 >= blk_count 0), so the
 * paths that compare or read it need no NULL check. */
extern SH_HIDDEN sh_span sh_no_span;

typedef struct sh_tls_entry {
    sh_heap *heap;
    uint64_t gen;
    sh_lab *lab;
} sh_tls_entry;
extern __thread sh_tls_entry sh_tls_last __attribute__((tls_model("initial-exec"))) SH_HIDDEN;

/* The one-entry LAB cache holds h: generations are unique per process and
 * h (a live heap, the caller's contract) has its own, so comparing the
 * generation alone identifies the heap instance (0 never matches). */
static inline bool sh_lab_cached(const sh_heap *h)
{
    return sh_tls_last.gen == h->gen;
}
sh_lab *sh_lab_get_slow(sh_heap *h);
sh_lab *sh_lab_find(sh_heap *h); /* this thread's LAB of h if it has one */
sh_lab *sh_lab_new(sh_heap *h);  /* a LAB bound to no thread (lab_lock) */
void *sh_lab_alloc_slow(sh_heap *h, sh_lab *lab, unsigned cls, bool mark);
void sh_labs_destroy(sh_heap *h);

static inline sh_lab *sh_lab_get(sh_heap *h)
{
    if (SH_LIKELY(sh_lab_cached(h)))
        return sh_tls_last.lab;
    return sh_lab_get_slow(h);
}

/* Owner-only counter bump: a plain load and store (no lock prefix); the
 * atomic type only makes sh_stats' concurrent reads well defined. */
static inline void sh_count(_Atomic uint64_t *c, uint64_t n)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                          memory_order_relaxed);
}

/* The free mark lives in a block's second word (docs/native-core.md, "Free mark"). */
static inline void sh_free_mark_store(void *b, uint64_t v)
{
    ((uint64_t *)b)[1] = v;
}

/* Fast path: pop the hot span's local free list, kept in the LAB (its
 * blocks are free-marked). mark: leave the block free-marked (batch to the Java
 * caches) or clear the mark. Every miss (an empty list, which is also
 * what a class without a hot span has) is a tail call to
 * sh_lab_alloc_slow, so this stays a leaf. */
static inline void *sh_lab_alloc(sh_heap *h, sh_lab *lab, unsigned cls, bool mark)
{
    void *b = lab->local[cls];
    if (SH_UNLIKELY(b == NULL))
        return sh_lab_alloc_slow(h, lab, cls, mark);
    lab->local[cls] = *(void **)b;
    sh_free_mark_store(b, mark ? (h->free_key ^ (uint64_t)(uintptr_t)b) : 0);
    sh_count(&lab->allocs[cls], 1);
    return b;
}

/* Frees block b (valid, allocated, already free-marked and counted) of
 * span s, class cls, by the thread owning lab: onto the hot span's local
 * list, onto the pending chain of that span, or (sh_lab_free_switch) a new
 * chain. No atomics unless the chain switches spans. */
void sh_lab_free_switch(sh_heap *h, sh_lab *lab, sh_span *s, unsigned cls, void *b);
static inline void sh_lab_free(sh_heap *h, sh_lab *lab, sh_span *s, unsigned cls, void *b)
{
    if (SH_LIKELY(lab->hot[cls] == s)) {
        *(void **)b = lab->local[cls]; /* owner-private list, no atomics */
        lab->local[cls] = b;
        return;
    }
    sh_pending *pd = &lab->pend[cls];
    if (SH_LIKELY(pd->span == s)) {
        *(void **)b = pd->first;
        pd->first = b;
        pd->k++;
        return;
    }
    sh_lab_free_switch(h, lab, s, cls, b);
}

/* Hands lab's pending chains (class cls, or all if cls < 0) to their spans. */
void sh_lab_flush(sh_heap *h, sh_lab *lab, int cls);

/* fork phases SH_FORK_* (base.h), called by fork.c */
void sh_labs_fork(sh_heap *h, int phase);

/* True once the calling thread's TLS destructor has run (embed.h says
 * what an embedder does with it). */
bool sh_thread_exited(void);

#endif /* SH_FRONTEND_H */
