/*
 * large.h — directly mapped large objects (large.c). The table of them,
 * sh_large_table, is in heap_types.h.
 */
#ifndef SH_LARGE_H
#define SH_LARGE_H

#include <stddef.h>

#include "spanheap.h"

int sh_large_init(sh_heap *h);
void sh_large_destroy(sh_heap *h);
void *sh_large_alloc(sh_heap *h, size_t size, size_t alignment);
/* 1 if this thread's last successful sh_large_alloc reused a kept mapping
 * (its contents are old); 0 if it was a fresh, zeroed mapping. */
extern __thread int sh_large_last_reused;
int sh_large_free(sh_heap *h, void *p);
size_t sh_large_usable(sh_heap *h, const void *p);
size_t sh_large_trim(sh_heap *h);
/* fork phases SH_FORK_* (base.h), called by fork.c */
void sh_large_fork(sh_heap *h, int phase);

#endif /* SH_LARGE_H */
