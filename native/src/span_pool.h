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
sh_span *sh_pool_take(sh_heap *h, unsigned real_idx, unsigned core);
void sh_pool_put(sh_heap *h, unsigned real_idx, unsigned core, sh_span *s);
size_t sh_pool_trim(sh_heap *h);

#endif /* SH_SPAN_POOL_H */
