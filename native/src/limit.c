/*
 * limit.c — the heap's byte limit: real-span bytes of spans in use plus
 * mapped large objects, taken when a span leaves the pool or the arena (or
 * a large object is mapped) and given back when it returns. Without a
 * byte limit the bytes are a statistic kept per LAB (sh_span_counts). A
 * bottom layer: the span and large-object layers call it, it calls
 * nothing.
 */
#include "limit.h"

#include "heap_types.h"

bool sh_limit_acquire(sh_heap *h, sh_lab *actor, size_t bytes)
{
    if (!h->byte_limit) {
        sh_tally(h, actor, SH_CNT_LIMITED, (int64_t)bytes); /* a statistic only */
        return true;
    }
    /* one heap-wide counter, so the bound holds; relaxed: it orders no
     * other data */
    _Atomic int64_t *lim = &h->counts.v[SH_CNT_LIMITED];
    int64_t cur = atomic_load_explicit(lim, memory_order_relaxed);
    do {
        if ((uint64_t)cur + bytes > h->byte_limit)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(lim, &cur, cur + (int64_t)bytes,
                                                    memory_order_relaxed, memory_order_relaxed));
    return true;
}

void sh_limit_release(sh_heap *h, sh_lab *actor, size_t bytes)
{
    /* the counter its acquire used: the heap's with a byte limit */
    sh_tally(h, h->byte_limit ? NULL : actor, SH_CNT_LIMITED, -(int64_t)bytes);
}
