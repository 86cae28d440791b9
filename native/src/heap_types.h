/*
 * heap_types.h — the heap and the per-thread and large-object structures
 * it holds: struct sh_heap, the LAB (sh_lab) and the large-object table.
 * Their fields are read across layers (limit.c reads the heap's byte
 * limit, span.c a LAB's reusable set and spare spans, frontend.c its hot
 * spans), so they are defined here, below every file that reads them, and
 * not in the header of the layer that owns them; the functions are in the
 * layers' headers (frontend.h, large.h, ...).
 */
#ifndef SH_HEAP_TYPES_H
#define SH_HEAP_TYPES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "base.h"
#include "span_header.h"

/* ---- span-event counters ------------------------------------------------- */

/* What sh_stats reports about spans: how many are in each state, how many
 * hold each class, and the real-span bytes counted against the byte limit.
 * They change on span events (a span taken, retired, made reusable,
 * emptied), which larson's threads cause every twenty operations or so; one
 * shared counter line written by all of them was the heap's most contended
 * line. So every LAB keeps its own signed deltas (v[] below), written only by
 * the thread that holds the LAB, and sh_stats sums the heap's and every
 * LAB's: a LAB that retires a span another LAB took goes negative, the sum
 * does not. The heap's own copy counts the events of callers without a LAB
 * and, as v[SH_CNT_LIMITED], the bytes of a heap with a byte limit, which
 * must be one counter to be bounded (limit.c). */
enum {
    SH_CNT_HOT,        /* spans HOT                                      */
    SH_CNT_FLOATING,   /* spans FLOATING                                 */
    SH_CNT_REUSABLE,   /* spans REUSABLE                                 */
    SH_CNT_FREE,       /* free spans: in the pool or a LAB's spare slot  */
    SH_CNT_LIMITED,    /* real-span and large bytes (limit.c)            */
    SH_CNT_CLASS0,     /* + cls: spans holding class cls                 */
    SH_CNT_N = SH_CNT_CLASS0 + SH_NUM_CLASSES
};

typedef struct sh_span_counts {
    _Atomic int64_t v[SH_CNT_N];
} sh_span_counts;

/* ---- LAB (local allocation buffer, one per thread per heap) -------------- */

/* A deferred free chain: blocks of one span (not the LAB's hot span for
 * that class), already free-marked and linked through word 0, that the LAB
 * hands to the span's anchor in one CAS when a free of the same class hits
 * another span, when it allocates that class on its slow path, or when it
 * is released (sh_lab_flush). */
typedef struct sh_pending {
    sh_span *span;                /* NULL: no chain                         */
    void *first, *last;
    uint32_t k;                   /* blocks in the chain                    */
    uint32_t unused;
} sh_pending;

/* A span the LAB retired (HOT -> FLOATING), one entry of its retired ring
 * (span.c, "The second tier" and "Frees into the LAB's retired spans"):
 * the span, and the LAB's own frees into it that are not yet in its
 * anchor, free-marked and linked through word 0. While the span's
 * owner_slot names this entry, the LAB's thread frees into it here without
 * touching the span's anchor line, and pushes the chain (one CAS) when k
 * reaches lim, when the entry is reused or found stale, when the LAB takes
 * the span back HOT (then the chain joins the local list), and in
 * sh_lab_flush. Owner thread only. */
typedef struct sh_retired {
    sh_span *span;                /* NULL: empty                            */
    void *first, *last;           /* the chain, k blocks of span            */
    uint32_t k;
    uint32_t lim;                 /* push the chain when k reaches it       */
} sh_retired;

typedef struct sh_lab {
    sh_span *hot[SH_NUM_CLASSES]; /* &sh_no_span: none                   */
    /* the hot spans' local free lists (free-marked blocks of hot[cls],
     * linked through word 0): owner-private, so they live here and not in
     * the span headers, which sit a virtual span apart and share cache sets */
    void *local[SH_NUM_CLASSES];
    sh_pending pend[SH_NUM_CLASSES]; /* owner thread only                   */
    /* per-class counters: written only by the owning thread (plain load +
     * store, no lock prefix), read by sh_stats */
    _Atomic uint64_t allocs[SH_NUM_CLASSES];
    _Atomic uint64_t frees[SH_NUM_CLASSES];
    pthread_mutex_t lock;         /* guards reusable[] and closed           */
    sh_span *reusable[SH_NUM_CLASSES];
    /* bit cls set iff reusable[cls] is not empty: written under lock,
     * read without it as a hint (a refill skips the lock of an empty set) */
    _Atomic uint64_t reusable_mask;
    _Atomic int closed;           /* owner thread exited (LAB idle)         */
    bool defer;                   /* bound to a thread that flushes it: frees
                                     may use pend[] (see sh_lab_flush) and
                                     empty spans may stay in spare[]         */
    /* span-event deltas of this LAB's thread (sh_tally); on their own
     * lines: only the owner writes them, sh_stats reads them */
    _Alignas(64) sh_span_counts counts;
    sh_span *spare[SH_SPARE_REAL]; /* one empty span per small real size,
                                     owner thread only (span_pool.c)        */
    /* the last spans this LAB retired per class (HOT -> FLOATING), a row of
     * SH_RETIRED_RING entries per class, allocated at the class's first
     * retire (NULL: none yet; a thread that uses few classes keeps its LAB
     * small), written under chain_lock; entries are hints, checked by a
     * CAS on the anchor when taken (span.c, span_take_retired), and hold the
     * owner's frees into their span (sh_retired) */
    sh_retired *retired[SH_NUM_CLASSES];
    uint8_t retired_next[SH_NUM_CLASSES];
    /* guards the chains of retired[] (span.c, chains_lock): taken by the
     * owner, and by a thread that sweeps an idle owner's chains */
    _Alignas(64) _Atomic int chain_lock;
    _Atomic int chain_busy;       /* the owner is in its chains' section
                                     without the lock (span.c)             */
    _Atomic uint32_t chains;      /* entries of retired[] with a chain: a
                                     hint for sweepers, written under it  */
    unsigned idx;                 /* 1..SH_MAX_LABS                         */
    unsigned core;                /* span pool stripe                       */
    struct sh_lab *free_next;     /* heap's idle-LAB list                   */
} sh_lab;

/* ---- large objects ------------------------------------------------------- */

typedef struct sh_large_entry {
    uintptr_t ptr;                /* 0 empty, 1 tombstone                   */
    size_t size;                  /* bytes mapped at ptr                    */
} sh_large_entry;

/* Freed mappings kept for reuse (glibc keeps freed large chunks too): at
 * most SH_LARGE_CACHE of them, each at most SH_LARGE_CACHE_ONE bytes, in all
 * at most SH_LARGE_CACHE_BYTES. They count as committed, not as live, and
 * not against the byte limit. */
#define SH_LARGE_CACHE 8
#define SH_LARGE_CACHE_ONE ((size_t)32 << 20)
#define SH_LARGE_CACHE_BYTES ((size_t)64 << 20)

typedef struct sh_large_table {
    pthread_mutex_t lock;
    sh_large_entry *v;
    size_t cap, used, tomb;
    sh_large_entry cache[SH_LARGE_CACHE]; /* ptr 0 = unused slot         */
    size_t cache_bytes;
} sh_large_table;

/* ---- heap ---------------------------------------------------------------- */

/* the span pool's stacks (span_pool.h); the heap holds only a pointer */
typedef struct sh_pool_stack sh_pool_stack;

struct sh_heap {
    uint64_t gen;                 /* unique per heap instance (TLS check)   */
    uint64_t free_key;
    sh_arena arena;
    size_t byte_limit;
    sh_error_fn on_error;
    void *on_error_ctx;
    uint32_t reuse_thr[SH_NUM_CLASSES]; /* free blocks to become reusable */

    sh_pool_stack *pool;          /* [SH_NUM_REAL][ncores]                  */
    unsigned ncores;

    _Atomic(sh_lab *) *labs;      /* [SH_MAX_LABS + 1], index 0 unused      */
    /* the orphanage: a LAB bound to no thread, never closed, whose
     * reusable sets hold the partly used spans of exited threads; every
     * LAB's refill takes from it before the pool (span.c) */
    sh_lab *orphans;
    _Alignas(64) pthread_mutex_t lab_lock; /* guards nlabs and idle_labs    */
    unsigned nlabs;
    sh_lab *idle_labs;

    sh_large_table large;

    /* span events of callers without a LAB, and the byte limit's counter
     * (see sh_span_counts); relaxed atomics on their own cache lines, away
     * from the read-mostly fields above that every sh_alloc/sh_free reads */
    _Alignas(64) sh_span_counts counts;
    /* memory counters, changed when a span's pages are first touched or
     * given back (not per span event in a steady state) */
    _Alignas(64) _Atomic int64_t resident;
    _Atomic int64_t advised;
    _Atomic int64_t pool_kept;    /* resident bytes of pooled spans that
                                     reached the madvise threshold           */
    _Atomic uint64_t madvise_calls;
    _Atomic int64_t large_bytes, large_count;
    _Atomic int64_t large_cached;  /* bytes of freed mappings kept (large.c) */
    _Atomic uint64_t sweep_ns;    /* last sweep of the LABs' chains (span.c) */

    struct sh_heap *reg_next;     /* registry of live heaps                 */
};

/* Adds n to span-event counter which (SH_CNT_*) on behalf of actor, the
 * calling thread's LAB: a plain load and store of the LAB's own delta (no
 * lock prefix: only the thread holding the LAB writes it, and a LAB passes
 * between threads only through lab_lock or a borrower's lock, which order
 * the writes); relaxed, because sh_stats only needs each value eventually
 * and the counters order no data. Without an actor (NULL), an atomic add
 * to the heap's copy. */
static inline void sh_tally(sh_heap *h, sh_lab *actor, unsigned which, int64_t n)
{
    if (actor) {
        _Atomic int64_t *c = &actor->counts.v[which];
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
                              memory_order_relaxed);
    } else {
        atomic_fetch_add_explicit(&h->counts.v[which], n, memory_order_relaxed);
    }
}

#endif /* SH_HEAP_TYPES_H */
