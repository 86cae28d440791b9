/*
 * limit.c — the heap's byte limit: real-span bytes of spans in use plus
 * mapped large objects, taken when a span leaves the pool or the arena (or
 * a large object is mapped) and given back when it returns. A bottom
 * layer: the span and large-object layers call it, it calls nothing.
 */
#include "limit.h"

#include "heap_types.h"

bool sh_limit_acquire(sh_heap *h, size_t bytes)
{
    /* relaxed: a counter with a bound; it orders no other data */
    if (!h->byte_limit) {
        atomic_fetch_add_explicit(&h->limited, (int64_t)bytes, memory_order_relaxed);
        return true;
    }
    int64_t cur = atomic_load_explicit(&h->limited, memory_order_relaxed);
    do {
        if ((uint64_t)cur + bytes > h->byte_limit)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(&h->limited, &cur, cur + (int64_t)bytes,
                                                    memory_order_relaxed, memory_order_relaxed));
    return true;
}

void sh_limit_release(sh_heap *h, size_t bytes)
{
    atomic_fetch_sub_explicit(&h->limited, (int64_t)bytes, memory_order_relaxed); /* see above */
}
