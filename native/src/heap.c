/*
 * heap.c — the public API (spanheap.h): heap lifetime, allocation and free
 * entry points, pointer validation, batch calls, statistics. It calls the
 * layers below it and no core file calls it (docs/native-core.md,
 * "Layers").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "arena.h"
#include "errors.h"
#include "frontend.h"
#include "heap_registry.h"
#include "large.h"
#include "metadata.h"
#include "size_class.h"
#include "span.h"
#include "span_pool.h"

/* ---- ABI version ----------------------------------------------------- */

/* SH_ABI_VERSION_OVERRIDE exists for one build only: the library with a
 * wrong version that tests the Java loader's check (Makefile, test-lib-abi). */
#ifndef SH_ABI_VERSION_OVERRIDE
#define SH_ABI_VERSION_OVERRIDE SH_ABI_VERSION
#endif

SH_API int sh_abi_version(void)
{
    return SH_ABI_VERSION_OVERRIDE;
}

/* SH_ABI_STATS_SKEW exists for one build only: the library whose
 * sh_heap_stats size disagrees with the Java mirror (Makefile,
 * test-lib-abi), for the loader's layout check. */
#ifndef SH_ABI_STATS_SKEW
#define SH_ABI_STATS_SKEW 0
#endif

SH_API uint64_t sh_abi_sizeof(int which)
{
    switch (which) {
    case SH_STRUCT_CONFIG: return sizeof(sh_config);
    case SH_STRUCT_CLASS_INFO: return sizeof(sh_class_info);
    case SH_STRUCT_LAYOUT: return sizeof(sh_layout);
    case SH_STRUCT_HEAP_STATS: return sizeof(sh_heap_stats) + SH_ABI_STATS_SKEW;
    default: return 0;
    }
}

/* ---- lifetime ---------------------------------------------------------- */

SH_API void sh_config_init(sh_config *cfg)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof *cfg);
    cfg->reserve_bytes = SH_DEFAULT_RESERVE;
    cfg->reuse_threshold_pct = SH_DEFAULT_REUSE_PCT;
}

static uint64_t random_key(void)
{
    uint64_t k = 0;
    if (getrandom(&k, sizeof k, GRND_NONBLOCK) != (ssize_t)sizeof k) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        k = ((uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull) ^ (uint64_t)(uintptr_t)&k;
    }
    /* top bit set: key ^ address is never 0 (user addresses < 2^48), so
     * zeroed memory never looks free-marked */
    return k | ((uint64_t)1 << 63);
}

SH_API sh_heap *sh_heap_create(const sh_config *cfg_in)
{
    sh_size_classes_init();
    sh_span_chains_init();
    sh_config cfg;
    if (cfg_in)
        cfg = *cfg_in;
    else
        sh_config_init(&cfg);
    if (cfg.reuse_threshold_pct == 0)
        cfg.reuse_threshold_pct = SH_DEFAULT_REUSE_PCT;
    if (cfg.reuse_threshold_pct > 100) {
        sh_set_error(SH_E_INVALID);
        return NULL;
    }
    sh_heap *h = sh_meta_alloc(sizeof(sh_heap), 64);
    if (!h) {
        sh_set_error(SH_E_NOMEM);
        return NULL;
    }
    memset(h, 0, sizeof *h);
    h->free_key = random_key();
    h->byte_limit = cfg.byte_limit;
    h->on_error = cfg.on_error;
    h->on_error_ctx = cfg.on_error_ctx;
    for (unsigned c = 0; c < SH_NUM_CLASSES; c++) {
        uint32_t bc = sh_classes[c].block_count;
        uint32_t t = (uint32_t)(((uint64_t)bc * cfg.reuse_threshold_pct + 99) / 100);
        h->reuse_thr[c] = t ? t : 1;
    }
    int rc = sh_arena_init(&h->arena, cfg.reserve_bytes, cfg.allow_huge_pages);
    if (rc != SH_OK) {
        sh_meta_free(h);
        sh_set_error(rc);
        return NULL;
    }
    pthread_mutex_init(&h->lab_lock, NULL);
    h->labs = sh_meta_calloc(SH_MAX_LABS + 1, sizeof *h->labs);
    /* the orphanage is a LAB like the others (index, lock, reusable sets;
     * fork and destroy handle it with them), bound to no thread */
    if (sh_pool_init(h) != SH_OK || sh_large_init(h) != SH_OK || !h->labs ||
        !(h->orphans = sh_lab_new(h))) {
        sh_pool_destroy(h);
        sh_meta_free(h->large.v);
        sh_meta_free(h->labs);
        sh_arena_destroy(&h->arena);
        sh_meta_free(h);
        sh_set_error(SH_E_NOMEM);
        return NULL;
    }
    sh_registry_add(h);
    return h;
}

SH_API void sh_heap_destroy(sh_heap *h)
{
    if (!h)
        return;
    /* unregister first: an exiting thread's destructor (which holds the
     * registry lock while it releases its LAB) no longer finds the heap */
    sh_registry_remove(h);
    sh_labs_destroy(h);
    sh_large_destroy(h);
    sh_pool_destroy(h);
    sh_arena_destroy(&h->arena);
    pthread_mutex_destroy(&h->lab_lock);
    sh_meta_free(h->labs);
    sh_meta_free(h);
}

/* ---- validation ------------------------------------------------------ */

/* For a pointer inside the arena: SH_OK with sp and clsp set if it is the
 * start of a block of a span holding a class, else the error. Reads only
 * header fields (atomics) and never writes. */
static inline __attribute__((always_inline)) int classify(sh_heap *h, const void *p, sh_span **sp, unsigned *clsp)
{
    uintptr_t u = (uintptr_t)p;
    /* acquire: pairs with the frontier's release; the header is readable */
    if (u >= atomic_load_explicit(&h->arena.frontier, memory_order_acquire))
        return SH_E_NOT_OWNED;
    sh_span *s = sh_span_of(p);
    /* acquire: pairs with the release in sh_span_init, so the class read
     * below belongs to this magic */
    uint32_t magic = atomic_load_explicit(&s->magic, memory_order_acquire);
    if (magic != SH_SPAN_MAGIC && magic != SH_FREE_SPAN_MAGIC)
        return SH_E_NOT_OWNED;
    unsigned cls = atomic_load_explicit(&s->size_class, memory_order_relaxed);
    if (cls >= SH_NUM_CLASSES)
        return SH_E_NOT_OWNED;
    const sh_class_desc *c = &sh_classes[cls];
    uint64_t off = u - (uintptr_t)s;
    if (off < c->payload_offset)
        return SH_E_NOT_OWNED;
    uint64_t x = off - c->payload_offset;
    uint32_t i = sh_block_index(c, x);
    if (i >= c->block_count)
        return SH_E_NOT_OWNED;
    bool exact = (uint64_t)i * c->block_size == x;
    if (magic == SH_FREE_SPAN_MAGIC)
        return exact ? SH_E_DOUBLE_FREE : SH_E_NOT_OWNED; /* span is in the pool */
    if (!exact)
        return SH_E_INTERIOR;
    /* relaxed: a block handed out was bumped before (the hand-out orders
     * it); a block at or beyond bump was never handed out */
    if (i >= atomic_load_explicit(&s->bump, memory_order_relaxed))
        return SH_E_NOT_OWNED;
    *sp = s;
    *clsp = cls;
    return SH_OK;
}

static inline bool in_arena(const sh_heap *h, const void *p)
{
    return (uintptr_t)p - h->arena.base < h->arena.size;
}

static inline uint64_t free_mark(const sh_heap *h, const void *p)
{
    return h->free_key ^ (uint64_t)(uintptr_t)p;
}

/* ---- allocation ------------------------------------------------------ */

SH_COLD static void *alloc_large(sh_heap *h, size_t size, size_t alignment)
{
    if (!h || size > SH_MAX_SIZE) {
        sh_set_error(SH_E_INVALID);
        return NULL;
    }
    return sh_large_alloc(h, size, alignment);
}

/* Everything sh_alloc's fast path does not serve: large or bad requests,
 * and the first call of a thread (or a thread whose one-entry LAB cache
 * names another heap). */
SH_NOINLINE static void *alloc_slow(sh_heap *h, size_t size)
{
    if (size > SH_MAX_SMALL || h == NULL)
        return alloc_large(h, size, 0);
    sh_lab *lab = sh_lab_get(h);
    if (SH_UNLIKELY(!lab))
        return NULL;
    return sh_lab_alloc(h, lab, sh_size_to_class(size), false);
}

SH_API void *sh_alloc(sh_heap *h, size_t size)
{
    /* the LAB cache check inline (sh_lab_get without its slow call), so
     * the fast path is a leaf and every miss a tail call */
    if (SH_LIKELY(h != NULL && sh_lab_cached(h))) {
        if (SH_LIKELY(size <= SH_LUT_MAX))
            return sh_lab_alloc(h, sh_tls_last.lab, sh_small_class[(size + 15) >> 4], false);
        if (size <= SH_MAX_SMALL)
            return sh_lab_alloc(h, sh_tls_last.lab, sh_size_to_class_calc(size), false);
    }
    return alloc_slow(h, size);
}

SH_API void *sh_alloc_aligned(sh_heap *h, size_t size, size_t alignment)
{
    if (alignment == 0 || (alignment & (alignment - 1)) || !h) {
        sh_set_error(SH_E_INVALID);
        return NULL;
    }
    if (alignment <= 16)
        return sh_alloc(h, size);
    if (size > SH_MAX_SIZE) {
        sh_set_error(SH_E_INVALID);
        return NULL;
    }
    int cls = sh_class_for_aligned(size, alignment);
    if (cls < 0)
        return alloc_large(h, size, alignment);
    sh_lab *lab = sh_lab_get(h);
    if (!lab)
        return NULL;
    return sh_lab_alloc(h, lab, (unsigned)cls, false);
}

/* ---- free -------------------------------------------------------------- */

/* The whole free with every check, for what the fast path below does not
 * serve: NULL, large objects, bad pointers (classified exactly, reported
 * if report), and a thread whose LAB cache names another heap. Returns
 * SH_OK or the (positive) code; sh_free_checked negates it. */
SH_NOINLINE static int free_slow(sh_heap *h, void *p, bool report)
{
    if (!p)
        return SH_OK;
    int rc;
    if (!h) {
        rc = SH_E_INVALID;
    } else if (in_arena(h, p)) {
        sh_span *s;
        unsigned cls;
        rc = classify(h, p, &s, &cls);
        if (rc == SH_OK) {
            uint64_t *w = p;
            if (w[1] == free_mark(h, p)) {
                rc = SH_E_DOUBLE_FREE;
            } else {
                sh_lab *lab = sh_lab_get(h);
                if (SH_UNLIKELY(!lab))
                    return SH_E_NOMEM; /* block stays allocated */
                w[1] = free_mark(h, p);
                sh_count(&lab->frees[cls], 1);
                sh_lab_free(h, lab, s, cls, p);
                return SH_OK;
            }
        }
    } else {
        rc = sh_large_free(h, p);
        if (rc == SH_OK)
            return SH_OK;
    }
    sh_set_error(rc);
    if (report) {
        if (h && h->on_error)
            h->on_error(h, rc, p, h->on_error_ctx);
        else
            fprintf(stderr, "spanheap: sh_free(%p): %s (ignored)\n", p, sh_error_text(rc));
    }
    return rc;
}

/* Fast path of sh_free: a block of a span holding a class, freed by a
 * thread whose LAB cache names this heap. The checks are classify()'s in
 * their cheapest form -- one compare for arena and frontier, the magic,
 * the exact block boundary, the bump index (below it: handed out; it is
 * <= block_count) and the free mark -- and anything unusual goes to
 * free_slow, which classifies it exactly. Block boundary: x is the offset
 * from the first block; the reciprocal is exact for x < 2^21, and an
 * offset below the payload wraps x to >= 2^64 - 4096, which no
 * i * block_size (< 2^52) equals, so one compare covers both. */
static inline __attribute__((always_inline)) int free_impl(sh_heap *h, void *p, bool report)
{
    if (SH_LIKELY(h != NULL)) {
        uintptr_t u = (uintptr_t)p;
        /* acquire: pairs with the frontier's release; the header is readable */
        uint64_t len = atomic_load_explicit(&h->arena.frontier_len, memory_order_acquire);
        if (SH_LIKELY(u - h->arena.base < len)) {
            sh_span *s = sh_span_of(p);
            /* acquire: pairs with the release in sh_span_init, so the class
             * read below belongs to this magic */
            uint32_t magic = atomic_load_explicit(&s->magic, memory_order_acquire);
            if (SH_LIKELY(magic == SH_SPAN_MAGIC)) {
                /* relaxed: class and geometry were stored before the magic
                 * (a span holding a class always has a valid one) */
                unsigned cls = atomic_load_explicit(&s->size_class, memory_order_relaxed);
                uint64_t x = (u - (uintptr_t)s) -
                             atomic_load_explicit(&s->blk_off, memory_order_relaxed);
                uint32_t i = (uint32_t)((x * atomic_load_explicit(&s->blk_recip,
                                                                   memory_order_relaxed)) >> 43);
                /* relaxed bump: as in classify */
                if (SH_LIKELY((uint64_t)i * atomic_load_explicit(&s->blk_size,
                                                                 memory_order_relaxed) == x &&
                              i < atomic_load_explicit(&s->bump, memory_order_relaxed))) {
                    uint64_t *w = p;
                    uint64_t mark = free_mark(h, p);
                    if (SH_LIKELY(w[1] != mark && sh_lab_cached(h))) {
                        sh_lab *lab = sh_tls_last.lab;
                        w[1] = mark;
                        sh_count(&lab->frees[cls], 1);
                        sh_lab_free(h, lab, s, cls, p);
                        return SH_OK;
                    }
                }
            }
        }
    }
    return free_slow(h, p, report);
}

SH_API int sh_free_checked(sh_heap *h, void *p)
{
    return -free_impl(h, p, false); /* negated, as every int-returning call */
}

SH_API void sh_free(sh_heap *h, void *p)
{
    (void)free_impl(h, p, true);
}

SH_API size_t sh_usable_size(sh_heap *h, const void *p)
{
    if (!p || !h)
        return 0;
    if (in_arena(h, p)) {
        sh_span *s;
        unsigned cls;
        if (classify(h, p, &s, &cls) != SH_OK)
            return 0;
        if (((const uint64_t *)p)[1] == free_mark(h, p))
            return 0; /* free block */
        return sh_classes[cls].block_size;
    }
    return sh_large_usable(h, p);
}

/* ---- batch entry points ---------------------------------------------- */

SH_API int sh_alloc_batch(sh_heap *h, int cls, void **out, int n)
{
    if (!h || cls < 0 || cls >= SH_NUM_CLASSES || !out || n <= 0)
        return -SH_E_INVALID;
    sh_lab *lab = sh_lab_get(h);
    if (!lab)
        return -SH_E_NOMEM;
    for (int i = 0; i < n; i++) {
        void *b = sh_lab_alloc(h, lab, (unsigned)cls, true);
        if (SH_UNLIKELY(!b))
            return i ? i : -sh_last_error();
        out[i] = b;
    }
    return n;
}

/* Pending per-span chains of sh_free_batch: blocks of one span go back in
 * one CAS even when the batch interleaves a few spans. */
enum { BATCH_CHAINS = 8 };
typedef struct batch_chain {
    sh_span *span;
    unsigned cls;
    uint32_t k;
    void *first, *last;
} batch_chain;

SH_API int sh_free_batch(sh_heap *h, void *const *blocks, int n)
{
    if (!h || n < 0 || (n && !blocks))
        return -SH_E_INVALID;
    if (n == 0)
        return SH_OK;
    sh_lab *lab = sh_lab_get(h);
    if (!lab)
        return -SH_E_NOMEM;
    int rc = SH_OK;
    batch_chain ch[BATCH_CHAINS];
    unsigned nch = 0, victim = 0;
    for (int i = 0; i < n; i++) {
        void *p = blocks[i];
        sh_span *s;
        unsigned cls;
        int e = in_arena(h, p) ? classify(h, p, &s, &cls) : SH_E_NOT_OWNED;
        if (SH_UNLIKELY(e != SH_OK)) {
            rc = -e;
            continue;
        }
        sh_count(&lab->frees[cls], 1);
        if (lab->hot[cls] == s) {
            /* local free into our own hot span */
            *(void **)p = lab->local[cls];
            lab->local[cls] = p;
            continue;
        }
        unsigned j = 0;
        while (j < nch && ch[j].span != s)
            j++;
        if (j < nch) {
            *(void **)p = ch[j].first;
            ch[j].first = p;
            ch[j].k++;
            continue;
        }
        if (nch == BATCH_CHAINS) {
            j = victim;
            victim = (victim + 1) % BATCH_CHAINS;
            sh_span_free_chain(h, lab, ch[j].span, ch[j].cls, ch[j].first, ch[j].last, ch[j].k);
        } else {
            j = nch++;
        }
        ch[j] = (batch_chain){s, cls, 1, p, p};
    }
    for (unsigned j = 0; j < nch; j++)
        sh_span_free_chain(h, lab, ch[j].span, ch[j].cls, ch[j].first, ch[j].last, ch[j].k);
    if (rc != SH_OK)
        sh_set_error(-rc);
    return rc;
}

/* ---- the Java thread cache's refill and drain ------------------------ */

/* Each is one call that also does the magazine's bookkeeping (its top index,
 * the shift of the kept half), so that a Java caller that dies right after the
 * call, by a StackOverflowError thrown at the entry of whatever method it calls
 * next, cannot lose the blocks taken or keep blocks already freed. */

SH_API int sh_cache_refill(sh_heap *h, int cls, int64_t *m, int base, int n, int top)
{
    if (!m || base < 0 || top < 0 || n <= 0)
        return -SH_E_INVALID;
    int got = sh_alloc_batch(h, cls, (void **)(m + base), n);
    if (got > 0)
        m[top] = (int64_t)base + got;
    return got;
}

SH_API int sh_cache_drain(sh_heap *h, int64_t *m, int base, int n, int count, int top)
{
    if (!m || base < 0 || top < 0 || n < 0 || count < n)
        return -SH_E_INVALID;
    int rc = sh_free_batch(h, (void *const *)(m + base), n);
    memmove(m + base, m + base + n, (size_t)(count - n) * sizeof *m);
    m[top] = (int64_t)base + count - n;
    return rc;
}

/* ---- layout and statistics ------------------------------------------- */

SH_API void sh_heap_layout(const sh_heap *h, sh_layout *out)
{
    if (!h || !out)
        return;
    out->arena_base = h->arena.base;
    out->arena_size = h->arena.size;
    out->span_size = SH_SPAN_SIZE;
    out->small_span_size = SH_SMALL_SPAN_SIZE;
    out->band_shift = SH_BAND_SHIFT;
    out->frontier_addr = (uint64_t)(uintptr_t)&h->arena.frontier;
    out->free_key = h->free_key;
    out->max_small_size = SH_MAX_SMALL;
}

static uint64_t nonneg(int64_t v)
{
    return v > 0 ? (uint64_t)v : 0;
}

/* relaxed: a statistic, exact only when quiescent */
static size_t resident_now(sh_heap *h)
{
    return (size_t)nonneg(atomic_load_explicit(&h->resident, memory_order_relaxed));
}

SH_API size_t sh_trim(sh_heap *h)
{
    if (!h)
        return 0;
    size_t before = resident_now(h);
    /* the caller's deferred frees and spare spans first: they are its own,
     * so only this thread may hand them to the pool */
    sh_lab *mine = sh_lab_find(h);
    if (mine) {
        sh_lab_flush(h, mine, -1);
        sh_lab_drop_spares(h, mine);
    }
    /* other threads' chains of their own frees: each pins a span that may
     * be free otherwise (span.c, sh_heap_sweep_chains) */
    sh_heap_sweep_chains(h, mine, true);
    size_t after_flush = resident_now(h);
    size_t released = before > after_flush ? before - after_flush : 0;
    return released + sh_pool_trim(h) + sh_large_trim(h);
}

SH_API void sh_stats(sh_heap *h, sh_heap_stats *out)
{
    if (!h || !out)
        return;
    memset(out, 0, sizeof *out);
    /* the caller's own deferred frees first, so that a thread that freed
     * everything sees every span it emptied back in the pool */
    sh_lab *mine = sh_lab_find(h);
    if (mine)
        sh_lab_flush(h, mine, -1);
    pthread_mutex_lock(&h->lab_lock);
    unsigned nlabs = h->nlabs;
    pthread_mutex_unlock(&h->lab_lock);
    /* relaxed everywhere: statistics, exact only when quiescent */
    int64_t live[SH_NUM_CLASSES] = {0};
    int64_t cnt[SH_CNT_N];
    for (unsigned k = 0; k < SH_CNT_N; k++)
        cnt[k] = atomic_load_explicit(&h->counts.v[k], memory_order_relaxed);
    for (unsigned i = 1; i <= nlabs; i++) {
        /* acquire: pairs with the release that published the LAB */
        sh_lab *lab = atomic_load_explicit(&h->labs[i], memory_order_acquire);
        if (!lab)
            continue;
        for (unsigned c = 0; c < SH_NUM_CLASSES; c++)
            live[c] += (int64_t)(atomic_load_explicit(&lab->allocs[c], memory_order_relaxed) -
                                 atomic_load_explicit(&lab->frees[c], memory_order_relaxed));
        /* the span-event deltas of the LAB's threads (heap_types.h) */
        for (unsigned k = 0; k < SH_CNT_N; k++)
            cnt[k] += atomic_load_explicit(&lab->counts.v[k], memory_order_relaxed);
    }
    int64_t large = atomic_load_explicit(&h->large_bytes, memory_order_relaxed);
    uint64_t live_bytes = nonneg(large);
    for (unsigned c = 0; c < SH_NUM_CLASSES; c++) {
        out->class_live_blocks[c] = nonneg(live[c]);
        out->class_spans[c] = nonneg(cnt[SH_CNT_CLASS0 + c]);
        live_bytes += out->class_live_blocks[c] * sh_classes[c].block_size;
    }
    /* each band's index stays at or below its span count (sh_arena_carve) */
    uint64_t carved = atomic_load_explicit(&h->arena.next[SH_BAND_LARGE], memory_order_relaxed) +
                      atomic_load_explicit(&h->arena.next[SH_BAND_SMALL], memory_order_relaxed);
    out->reserved_bytes = h->arena.size;
    /* Committed = real spans held (not given back with madvise) + large
     * maps, live or kept for reuse. The rest of each virtual span is never touched, so the
     * accessible arena (frontier - base) would overstate memory use many
     * times over; it is address space, like the reservation. */
    out->committed_bytes = nonneg(atomic_load_explicit(&h->resident, memory_order_relaxed) + large +
                                  atomic_load_explicit(&h->large_cached, memory_order_relaxed));
    out->resident_bytes = out->committed_bytes;
    out->live_bytes = live_bytes;
    out->large_bytes = nonneg(large);
    out->large_count = nonneg(atomic_load_explicit(&h->large_count, memory_order_relaxed));
    out->limit_bytes = h->byte_limit;
    out->limited_bytes = nonneg(cnt[SH_CNT_LIMITED]);
    out->spans_carved = carved;
    out->spans_hot = nonneg(cnt[SH_CNT_HOT]);
    out->spans_floating = nonneg(cnt[SH_CNT_FLOATING]);
    out->spans_reusable = nonneg(cnt[SH_CNT_REUSABLE]);
    out->spans_free = nonneg(cnt[SH_CNT_FREE]);
    out->madvise_calls = atomic_load_explicit(&h->madvise_calls, memory_order_relaxed);
}
