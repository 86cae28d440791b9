/*
 * arena.c — one reservation of virtual memory per heap, cut into virtual
 * spans of two bands by one atomic bump index per band.
 *
 * Geometry (base.h): the arena is a sequence of periods of SH_PERIOD
 * (32 MiB). The first half of each period holds 8 large-band virtual spans
 * of 2 MiB, the second half 128 small-band ones of 128 KiB:
 *
 *     base                                                    base + size
 *     | large 0..7 | small 0..127 | large 8..15 | small 128..255 | ...
 *     |<- 16 MiB ->|<-- 16 MiB -->|
 *
 * So bit SH_BAND_SHIFT of an address names its band and the span of an
 * address is a bit test and a mask (sh_span_of): no table, no load, no
 * second frontier. A real
 * span of 16 or 64 KiB sits in a 128 KiB virtual span, 16 to a 2 MiB
 * page-table page, instead of alone in a 2 MiB one; 256 KiB..2 MiB real
 * spans keep 2 MiB virtual spans. Each band has half the arena.
 *
 * The reservation is PROT_NONE + MAP_NORESERVE, aligned to the period.
 * It is committed on demand: when a carved span lies beyond the committed
 * frontier, one thread (commit_lock) mprotects at least SH_COMMIT_BYTES up
 * to the span's end and then publishes the new frontier with a release
 * store. The frontier is one address for both bands: it covers every
 * period up to the furthest span of either band (the other band's half of
 * those periods is then accessible but untouched: address space, no
 * memory). The frontier only grows and nothing is ever re-protected: every
 * address in [base, frontier) stays readable until the heap is destroyed
 * (free spans are given back with madvise(MADV_DONTNEED), which keeps the
 * mapping readable). The Java fast path relies on this: it reads span
 * headers below the frontier without asking the native side.
 *
 * Transparent huge pages: MADV_NOHUGEPAGE on the whole arena unless
 * sh_config.allow_huge_pages. A virtual span usually holds a smaller real
 * span (16 KiB in 128 KiB, 256 KiB in 2 MiB); with THP the kernel would
 * back a whole 2 MiB with one huge page and inflate RSS up to 8x for
 * small classes, and khugepaged would undo our madvise of free spans.
 */
#include <stdbool.h>
#include <sys/mman.h>

#include "arena.h"

#include "base.h"
#include "os.h"

/* log2 of the spans of band b in half a period: 3 (large), 7 (small) */
static unsigned half_shift(unsigned band)
{
    return SH_BAND_SHIFT - (band == SH_BAND_SMALL ? SH_SMALL_SPAN_SHIFT : SH_SPAN_SHIFT);
}

int sh_arena_init(sh_arena *a, size_t reserve, int allow_huge_pages)
{
    if (reserve == 0)
        reserve = SH_DEFAULT_RESERVE;
    if (reserve > ((size_t)1 << 46))
        return SH_E_INVALID;
    size_t size = (reserve + SH_PERIOD - 1) & ~(SH_PERIOD - 1);
    size_t map_size = size + SH_PERIOD;
    void *m = sh_os_map(map_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE);
    if (!m)
        return SH_E_NOMEM;
    /* period-aligned, so bit SH_BAND_SHIFT of an address names its band */
    uintptr_t base = ((uintptr_t)m + SH_PERIOD - 1) & ~(uintptr_t)(SH_PERIOD - 1);
    /* trim the unaligned head and the tail so only [base, base+size) stays */
    size_t head = base - (uintptr_t)m;
    if (head)
        sh_os_unmap(m, head);
    size_t tail = map_size - head - size;
    if (tail)
        sh_os_unmap((void *)(base + size), tail);
    /* span_pool.c keeps an ABA tag in bits 48..63 of span addresses. Linux
     * maps above 2^47 (x86-64, 5-level paging) or 2^48 (aarch64, 52-bit VA)
     * only for an mmap hint that high, and we pass none; should it happen,
     * refuse the heap rather than lose address bits. */
    if (SH_UNLIKELY(base + size > ((uintptr_t)1 << 48))) {
        sh_os_unmap((void *)base, size);
        return SH_E_NOMEM;
    }
    a->map = (void *)base;
    a->map_size = size;
    a->base = base;
    a->size = size;
    for (unsigned b = 0; b < 2; b++) {
        a->nspans[b] = (size / SH_PERIOD) << half_shift(b);
        atomic_init(&a->next[b], 0);
    }
    atomic_init(&a->frontier, (uint64_t)base);
    atomic_init(&a->frontier_len, 0);
    pthread_mutex_init(&a->commit_lock, NULL);
    if (!allow_huge_pages)
        (void)sh_os_advise((void *)base, size, MADV_NOHUGEPAGE); /* best effort */
    return SH_OK;
}

void sh_arena_destroy(sh_arena *a)
{
    if (a->map)
        sh_os_unmap(a->map, a->map_size);
    pthread_mutex_destroy(&a->commit_lock);
    a->map = NULL;
}

/* fork: the commit lock (see sh_fork_prepare) */
void sh_arena_fork(sh_arena *a, int phase)
{
    if (phase == SH_FORK_PREPARE)
        pthread_mutex_lock(&a->commit_lock);
    else if (phase == SH_FORK_PARENT)
        pthread_mutex_unlock(&a->commit_lock);
    else
        pthread_mutex_init(&a->commit_lock, NULL);
}

SH_COLD static bool arena_commit_slow(sh_arena *a, uint64_t need)
{
    bool ok = true;
    pthread_mutex_lock(&a->commit_lock);
    /* relaxed: the frontier is only written under commit_lock */
    uint64_t f = atomic_load_explicit(&a->frontier, memory_order_relaxed);
    if (f < need) {
        uint64_t end = a->base + a->size;
        uint64_t want = f + SH_COMMIT_BYTES;
        if (want < need)
            want = need;
        if (want > end)
            want = end;
        if (sh_os_protect((void *)f, want - f, PROT_READ | PROT_WRITE)) {
            /* release: a reader that sees the new frontier (acquire) also
             * sees the pages as accessible and the headers written after */
            atomic_store_explicit(&a->frontier, want, memory_order_release);
            /* release: the same for readers of the length (sh_free) */
            atomic_store_explicit(&a->frontier_len, want - a->base, memory_order_release);
        } else {
            ok = false;
        }
    }
    pthread_mutex_unlock(&a->commit_lock);
    return ok;
}

sh_span *sh_arena_carve(sh_arena *a, unsigned band)
{
    _Atomic uint64_t *next = &a->next[band];
    /* relaxed: the index only has to be unique; the span's memory is
     * published by the frontier (release/acquire) */
    uint64_t i = atomic_load_explicit(next, memory_order_relaxed);
    do {
        if (i >= a->nspans[band])
            return NULL; /* exhausted: caller reports SH_E_NOMEM */
    } while (!atomic_compare_exchange_weak_explicit(next, &i, i + 1, memory_order_relaxed,
                                                    memory_order_relaxed));
    /* span i of the band: period i >> k, slot i & (2^k - 1) of the band's half */
    unsigned k = half_shift(band);
    unsigned vshift = band == SH_BAND_SMALL ? SH_SMALL_SPAN_SHIFT : SH_SPAN_SHIFT;
    uint64_t at = a->base + (i >> k) * SH_PERIOD + ((uint64_t)band << SH_BAND_SHIFT) +
                  ((i & (((uint64_t)1 << k) - 1)) << vshift);
    uint64_t need = at + ((uint64_t)1 << vshift);
    /* acquire: pairs with the release store in arena_commit_slow */
    if (SH_UNLIKELY(atomic_load_explicit(&a->frontier, memory_order_acquire) < need) &&
        !arena_commit_slow(a, need)) {
        /* The OS refused to commit: give the index back unless another
         * thread carved after it (then it is lost: address space only, no
         * memory). relaxed: as for the carve itself */
        uint64_t mine = i + 1;
        (void)atomic_compare_exchange_strong_explicit(next, &mine, i, memory_order_relaxed,
                                                      memory_order_relaxed);
        return NULL;
    }
    return (sh_span *)(uintptr_t)at;
}
