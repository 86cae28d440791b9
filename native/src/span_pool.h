/*
 * span_pool.h — free spans: per real-span size, per core Treiber stacks
 * (span_pool.c).
 */
#ifndef SH_SPAN_POOL_H
#define SH_SPAN_POOL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "span_header.h"

typedef struct sh_pool_stack {
    _Atomic uint64_t head;        /* tagged pointer, see span_pool.c        */
    char pad[56];
} sh_pool_stack;

/* span_pool.c: free spans only */
int sh_pool_init(sh_heap *h);
void sh_pool_destroy(sh_heap *h);
/* A free span for real size real_idx (real_size bytes) from stripe core
 * first, then the other stripes, then the other sizes of the same band
 * (SH_SMALL_REAL); NULL if the pool has none. A span of a larger size gives
 * back what it holds beyond real_size. */
sh_span *sh_pool_take(sh_heap *h, unsigned real_idx, size_t real_size, unsigned core);
void sh_pool_put(sh_heap *h, unsigned real_idx, unsigned core, sh_span *s);
size_t sh_pool_trim(sh_heap *h);

#endif /* SH_SPAN_POOL_H */
