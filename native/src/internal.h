/*
 * internal.h — types shared by the layers of the spanheap native core.
 *
 * The files, bottom layer first; each calls only files listed before it
 * (docs/native-core.md, "Layers"):
 *
 *   os.c             the calls to the OS for memory (mmap, mprotect,
 *                    madvise, munmap) and the test-only fault injector
 *   metadata.c       memory for the core's own structures (libc; the malloc
 *                    shim links its own instead)
 *   errors.c         this thread's last error; the error names
 *   limit.c          the byte limit
 *   heap_registry.c  live heaps and their generations
 *   size_class.c     block sizes, payload offsets, real-span sizes
 *   arena.c          one reservation per heap, cut into virtual spans
 *   span_pool.c      free spans: per real-span size, per core Treiber stacks
 *   span.c           span header, remote free list, state transitions
 *                    (anchor); taking spans from the pool, giving them back
 *   frontend.c       per-thread local allocation buffers (LABs)
 *   large.c          directly mapped large objects
 *   heap.c           the public API (spanheap.h)
 *   fork.c           fork support for an embedder (embed.h)
 *
 * embed.h declares what an embedder such as the malloc shim uses.
 *
 * See docs/native-core.md for the design and its reasons.
 */
#ifndef SH_INTERNAL_H
#define SH_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spanheap.h"

#define SH_API __attribute__((visibility("default")))
#define SH_LIKELY(x) __builtin_expect(!!(x), 1)
#define SH_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SH_NOINLINE __attribute__((noinline))
#define SH_COLD __attribute__((cold, noinline))
/* data shared only inside the library: direct (RIP-relative) access, no GOT */
#define SH_HIDDEN __attribute__((visibility("hidden")))

/* ---- OS calls (os.c), the bottom layer --------------------------------- */

#define SH_OS_KINDS (SH_OS_MADVISE + 1)
/* mmap(NULL, len, prot, flags, -1, 0); NULL (not MAP_FAILED) on failure */
void *sh_os_map(size_t len, int prot, int flags);
bool sh_os_protect(void *p, size_t len, int prot); /* mprotect; false: failed */
bool sh_os_advise(void *p, size_t len, int advice); /* madvise; false: failed  */
void sh_os_unmap(void *p, size_t len);

/* ---- geometry ---------------------------------------------------------- */

#define SH_SPAN_SHIFT 21u                       /* virtual span: 2 MiB     */
#define SH_SPAN_SIZE ((size_t)1 << SH_SPAN_SHIFT)
#define SH_PAGE ((size_t)4096)
/* 1 TiB of address space per heap (docs/native-core.md, "Arena"): each real
 * span takes a whole 2 MiB virtual span, so the reservation bounds how many
 * spans a heap can hold. TSan cannot map that much; its build overrides it. */
#ifndef SH_DEFAULT_RESERVE
#define SH_DEFAULT_RESERVE ((size_t)1 << 40)
#endif
#define SH_COMMIT_SPANS 8u                      /* mprotect 16 MiB at once */
#define SH_MADVISE_THRESHOLD ((size_t)32 << 10) /* scalloc's 32 KiB        */
#define SH_POOL_KEEP ((int64_t)32 << 20)        /* resident bytes the pool may
                                                   keep before it madvises  */
#define SH_NUM_CLASSES 60
#define SH_MAX_SMALL ((size_t)1 << 20)          /* largest class: 1 MiB    */
#define SH_NUM_REAL 5                           /* distinct real-span sizes */
#define SH_HEADER_SIZE 256u                     /* span header, rounded    */
#define SH_MAX_ALIGN_SMALL 4096u                /* alignments served by classes */
#define SH_MAX_SIZE ((size_t)1 << 46)           /* larger requests: SH_E_INVALID */
#define SH_FREE_SPAN_MAGIC 0x46524545u          /* "FREE": span is in the pool */
#define SH_MAX_LABS 65535u                      /* LAB index fits 16 bits  */
#define SH_DEFAULT_REUSE_PCT 80u                /* scalloc's default       */
#define SH_EXTEND_BYTES 4096u                  /* bump chunk moved to the
                                                   local list at once      */
#define SH_SPARE_REAL 3u                        /* LABs keep a spare empty span
                                                   of the real sizes 16..256 KiB */

typedef struct sh_class_desc {
    uint32_t block_size;
    uint32_t payload_offset;
    uint32_t block_count;
    uint32_t real_span_size;
    uint32_t real_idx;       /* index into sh_real_sizes                    */
    uint32_t align;          /* natural alignment of every block (<= 4096)  */
    uint64_t recip;          /* ceil(2^43 / block_size): exact division     */
} sh_class_desc;

extern SH_HIDDEN sh_class_desc sh_classes[SH_NUM_CLASSES];
extern const uint32_t sh_real_sizes[SH_NUM_REAL];
void sh_size_classes_init(void);

/* Smallest class holding size bytes; size <= SH_MAX_SMALL. Classes:
 * 16..128 in steps of 16, then four per power of two (2^p + k*2^(p-2)). */
static inline unsigned sh_size_to_class_calc(size_t size)
{
    if (size <= 128)
        return size ? (unsigned)((size - 1) >> 4) : 0;
    unsigned p = 63u - (unsigned)__builtin_clzll((unsigned long long)(size - 1));
    unsigned k = (unsigned)((size - 1) >> (p - 2)) & 3u;
    return 8u + (p - 7u) * 4u + k;
}

/* The same for the hot paths: a table lookup up to SH_LUT_MAX (every
 * class size is a multiple of 16, so the class of ceil(size/16)*16 is the
 * class of size). The table is built with sh_classes, before any heap. */
#define SH_LUT_MAX 1024u
extern SH_HIDDEN uint8_t sh_small_class[SH_LUT_MAX / 16 + 1];
static inline unsigned sh_size_to_class(size_t size)
{
    if (SH_LIKELY(size <= SH_LUT_MAX))
        return sh_small_class[(size + 15) >> 4];
    return sh_size_to_class_calc(size);
}

/* Block index of byte offset x (from the first block); exact for x < 2^21. */
static inline uint32_t sh_block_index(const sh_class_desc *c, uint64_t x)
{
    return (uint32_t)((x * c->recip) >> 43);
}

/* Class for an aligned request, or -1 if no class's blocks are naturally
 * aligned to alignment (then it becomes a large object). */
int sh_class_for_aligned(size_t size, size_t alignment);

/* ---- span header --------------------------------------------------------
 *
 * The header occupies the first SH_HEADER_SIZE bytes of a virtual span (the
 * page holding it is never madvised, so stale readers can always read it).
 * Line 0 holds the stable prefix read by Java and read-mostly fields that
 * every free validates against; line 1 the anchor written by remote
 * frees; line 2 the links; line 3 the owner's local free list, written by
 * every local allocation and free. So the owner's fast path and remote
 * frees do not false-share. */

/* Anchor word (one 64-bit CAS covers the remote free list and the state):
 *
 *   63      55 54          39 38   36 35          18 17           0
 *  +----------+--------------+-------+--------------+--------------+
 *  | unused   |  LAB index   | state |    count     |    head      |
 *  +----------+--------------+-------+--------------+--------------+
 *
 *  head  : (offset of the first block of the shared free list) / 16, 0 = empty
 *  count : HOT span: blocks in the shared (remote) list;
 *          otherwise: every free block = listed + never bumped
 *  state : SH_ST_* below; LAB index: the owning LAB (HOT/FLOATING/REUSABLE)
 *
 * No ABA tag is needed: the list is only pushed to (CAS) or taken whole
 * (CAS to empty); a push that sees the same head again links to the current
 * head, which is correct, and count/state are compared in the same CAS. */
enum {
    SH_ST_FREE = 0,      /* in the span pool (or being set up)              */
    SH_ST_HOT = 1,       /* a LAB allocates from it                         */
    SH_ST_FLOATING = 2,  /* owned, few free blocks, in no list              */
    SH_ST_REUSABLE = 3,  /* in its owning LAB's reusable set                */
    SH_ST_EMPTYING = 4   /* all blocks free; the winner returns it to pool  */
};

#define SH_A_HEAD_MASK ((uint64_t)0x3ffff)
#define SH_A_CNT_SHIFT 18
#define SH_A_STATE_SHIFT 36
#define SH_A_LAB_SHIFT 39

static inline uint64_t sh_a_head(uint64_t a) { return a & SH_A_HEAD_MASK; }
static inline uint32_t sh_a_cnt(uint64_t a) { return (uint32_t)((a >> SH_A_CNT_SHIFT) & 0x3ffff); }
static inline unsigned sh_a_state(uint64_t a) { return (unsigned)((a >> SH_A_STATE_SHIFT) & 7); }
static inline unsigned sh_a_lab(uint64_t a) { return (unsigned)((a >> SH_A_LAB_SHIFT) & 0xffff); }
static inline uint64_t sh_a_make(unsigned state, unsigned lab, uint32_t cnt, uint64_t head)
{
    return head | ((uint64_t)cnt << SH_A_CNT_SHIFT) | ((uint64_t)state << SH_A_STATE_SHIFT) |
           ((uint64_t)lab << SH_A_LAB_SHIFT);
}

typedef struct sh_span {
    /* line 0: stable prefix (spanheap.h) and read-mostly fields: every
     * free reads this line, so nothing here is written per block */
    _Atomic uint32_t magic;       /* SH_SPAN_MAGIC while it holds a class   */
    _Atomic uint16_t size_class;  /* offset 4                               */
    uint16_t reserved;
    _Atomic uint32_t bump;        /* blocks below it were handed to the
                                     local list (sh_span_extend, a chunk at
                                     a time); the owner writes it only while
                                     HOT                                     */
    uint32_t touched;             /* bytes counted resident (pool owner)    */
    uint32_t advised;             /* bytes currently given back (madvise)   */
    uint32_t kept;                /* in the pool: resident bytes counted in
                                     heap->pool_kept (not madvised)          */
    /* copy of the class geometry (sh_classes[size_class]); written with
     * size_class, before the magic */
    _Atomic uint32_t blk_size;    /* offset 24                              */
    _Atomic uint32_t blk_off;     /* payload offset                         */
    _Atomic uint32_t blk_count;
    uint32_t unused0;
    _Atomic uint64_t blk_recip;   /* offset 40, see sh_block_index          */
    char pad0[64 - 48];
    /* line 1: shared, written by every remote free */
    _Atomic uint64_t anchor;
    char pad1[56];
    /* line 2: links, written on span events */
    _Atomic uint64_t pool_next;   /* Treiber link; read by racing pops      */
    struct sh_span *rl_prev;      /* reusable set; owning LAB's lock        */
    struct sh_span *rl_next;
    char pad2[64 - 24];
    /* line 3: owner-private, written by every local allocation and free */
    void *local_free;             /* owner-private while HOT                */
} sh_span;

_Static_assert(sizeof(sh_span) <= SH_HEADER_SIZE, "span header too big");
_Static_assert(offsetof(sh_span, size_class) == 4, "stable header layout");
_Static_assert(offsetof(sh_span, anchor) == 64, "anchor on its own line");
_Static_assert(offsetof(sh_span, blk_recip) == 40, "geometry on line 0");
_Static_assert(offsetof(sh_span, local_free) == 192, "owner list on its own line");

static inline sh_span *sh_span_of(const void *p)
{
    return (sh_span *)((uintptr_t)p & ~(uintptr_t)(SH_SPAN_SIZE - 1));
}
static inline void *sh_block_at(const sh_span *s, uint64_t head)
{
    return head ? (char *)s + (head << 4) : NULL;
}
static inline uint64_t sh_head_of(const sh_span *s, const void *b)
{
    return (uint64_t)((const char *)b - (const char *)s) >> 4;
}

/* ---- arena --------------------------------------------------------------- */

typedef struct sh_arena {
    uintptr_t base;
    size_t size;
    size_t nspans;
    _Atomic uint64_t frontier;    /* committed end; published with release  */
    _Atomic uint64_t frontier_len; /* frontier - base, published the same way
                                     (sh_free's one-compare range check)    */
    /* own cache line: written per carve, while every free reads frontier */
    _Alignas(64) _Atomic uint64_t next; /* bump pointer: next span index  */
    pthread_mutex_t commit_lock;  /* serialises the rare mprotect calls     */
    void *map;                    /* the mapping to unmap                   */
    size_t map_size;
} sh_arena;

int sh_arena_init(sh_arena *a, size_t reserve, int allow_huge_pages);
void sh_arena_destroy(sh_arena *a);
sh_span *sh_arena_carve(sh_arena *a);

/* ---- span pool ----------------------------------------------------------- */

typedef struct sh_pool_stack {
    _Atomic uint64_t head;        /* tagged pointer, see span_pool.c        */
    char pad[56];
} sh_pool_stack;

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

/* lab->hot[cls] when the LAB has no hot span for cls: an immutable,
 * all-zero header (no local list, bump 0 >= blk_count 0), so the fast path
 * needs no NULL check and falls into the slow path. */
extern SH_HIDDEN sh_span sh_no_span;

typedef struct sh_lab {
    sh_span *hot[SH_NUM_CLASSES]; /* &sh_no_span: none                   */
    sh_pending pend[SH_NUM_CLASSES]; /* owner thread only                   */
    /* per-class counters: written only by the owning thread (plain load +
     * store, no lock prefix), read by sh_stats */
    _Atomic uint64_t allocs[SH_NUM_CLASSES];
    _Atomic uint64_t frees[SH_NUM_CLASSES];
    pthread_mutex_t lock;         /* guards reusable[] and closed           */
    sh_span *reusable[SH_NUM_CLASSES];
    _Atomic int closed;           /* owner thread exited (LAB idle)         */
    bool defer;                   /* bound to a thread that flushes it: frees
                                     may use pend[] (see sh_lab_flush) and
                                     empty spans may stay in spare[]         */
    sh_span *spare[SH_SPARE_REAL]; /* one empty span per small real size,
                                     owner thread only (span_pool.c)        */
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
    _Alignas(64) pthread_mutex_t lab_lock; /* guards nlabs and idle_labs    */
    unsigned nlabs;
    sh_lab *idle_labs;

    sh_large_table large;

    /* slow-path counters (span events, not block events): relaxed atomics,
     * on their own cache lines, away from the read-mostly fields above that
     * every sh_alloc/sh_free reads */
    _Alignas(64) _Atomic int64_t limited;
    _Atomic int64_t n_hot, n_floating, n_reusable, n_free;
    _Atomic int64_t class_spans[SH_NUM_CLASSES];
    _Atomic int64_t resident;
    _Atomic int64_t advised;
    _Atomic int64_t pool_kept;    /* resident bytes of pooled spans that
                                     reached the madvise threshold           */
    _Atomic uint64_t madvise_calls;
    _Atomic int64_t large_bytes, large_count;
    _Atomic int64_t large_cached;  /* bytes of freed mappings kept (large.c) */

    struct sh_heap *reg_next;     /* registry of live heaps                 */
};

/* ---- services at the bottom: metadata.c, errors.c, limit.c,
 * heap_registry.c. Every layer may call these; they call nothing of the
 * core. */

/* metadata.c: memory for the core's own structures, never for blocks.
 * Every such allocation of the core goes through these (an embedder that
 * is malloc links its own definitions, see metadata.c); alignment is a
 * power of two, the rest as malloc/calloc/realloc/free. */
void *sh_meta_alloc(size_t size, size_t alignment);
void *sh_meta_calloc(size_t n, size_t size);
void *sh_meta_realloc(void *p, size_t size);
void sh_meta_free(void *p);

/* errors.c */
void sh_set_error(int err);          /* this thread's sh_last_error()      */
const char *sh_error_text(int code); /* "double free"; code or -code       */

/* limit.c: false if bytes more would exceed the heap's byte limit */
bool sh_limit_acquire(sh_heap *h, size_t bytes);
void sh_limit_release(sh_heap *h, size_t bytes);

/* heap_registry.c */
void sh_registry_add(sh_heap *h);    /* gives h its generation            */
void sh_registry_remove(sh_heap *h);
void sh_registry_lock(void);
void sh_registry_unlock(void);
bool sh_heap_is_live(const sh_heap *h, uint64_t gen); /* registry lock held */
sh_heap *sh_registry_first(void);    /* then ->reg_next; lock held         */
void sh_registry_reinit(void);       /* fork child                         */

/* fork support, per layer that owns locks (phases: SH_FORK_*, embed.h);
 * fork.c drives them in the core's nesting order */
enum { SH_FORK_PREPARE, SH_FORK_PARENT, SH_FORK_CHILD };
void sh_labs_fork(sh_heap *h, int phase);
void sh_large_fork(sh_heap *h, int phase);
void sh_arena_fork(sh_arena *a, int phase);

/* span_pool.c: free spans only */
int sh_pool_init(sh_heap *h);
void sh_pool_destroy(sh_heap *h);
sh_span *sh_pool_take(sh_heap *h, unsigned real_idx, unsigned core);
void sh_pool_put(sh_heap *h, unsigned real_idx, unsigned core, sh_span *s);
size_t sh_pool_trim(sh_heap *h);

/* span.c: spans in use, and their way in and out of the pool */
sh_span *sh_span_acquire(sh_heap *h, sh_lab *lab, unsigned cls);
void sh_lab_drop_spares(sh_heap *h, sh_lab *lab);
void sh_span_init(sh_heap *h, sh_lab *lab, sh_span *s, unsigned cls);
void sh_span_free_chain(sh_heap *h, sh_lab *me, sh_span *s, unsigned cls, void *first,
                        void *last, uint32_t k);
bool sh_span_collect(sh_span *s, sh_lab *lab);
bool sh_span_extend(sh_heap *h, sh_span *s);
bool sh_span_retire(sh_heap *h, sh_lab *lab, sh_span *s);
void sh_span_detach(sh_heap *h, sh_lab *lab, sh_span *s, unsigned cls);
sh_span *sh_span_take_reusable(sh_heap *h, sh_lab *lab, unsigned cls);
void sh_lab_close_reusable(sh_heap *h, sh_lab *lab);

/* frontend.c */
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

static inline void sh_word1_set(void *b, uint64_t v)
{
    ((uint64_t *)b)[1] = v;
}

/* Fast path: pop the hot span's local free list (its blocks are
 * free-marked). mark: leave the block free-marked (batch to the Java
 * caches) or clear the mark. Every miss (including "no hot span", see
 * sh_no_span) is a tail call to sh_lab_alloc_slow, so this stays a leaf. */
static inline void *sh_lab_alloc(sh_heap *h, sh_lab *lab, unsigned cls, bool mark)
{
    sh_span *s = lab->hot[cls]; /* never NULL, see sh_no_span */
    void *b = s->local_free;
    if (SH_UNLIKELY(b == NULL))
        return sh_lab_alloc_slow(h, lab, cls, mark);
    s->local_free = *(void **)b;
    sh_word1_set(b, mark ? (h->free_key ^ (uint64_t)(uintptr_t)b) : 0);
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
        *(void **)b = s->local_free; /* owner-private list, no atomics */
        s->local_free = b;
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

/* large.c */
int sh_large_init(sh_heap *h);
void sh_large_destroy(sh_heap *h);
void *sh_large_alloc(sh_heap *h, size_t size, size_t alignment);
/* 1 if this thread's last successful sh_large_alloc reused a kept mapping
 * (its contents are old); 0 if it was a fresh, zeroed mapping. */
extern __thread int sh_large_last_reused;
int sh_large_free(sh_heap *h, void *p);
size_t sh_large_usable(sh_heap *h, const void *p);
size_t sh_large_trim(sh_heap *h);

#endif /* SH_INTERNAL_H */
