/*
 * heap_registry.h — live heaps and their generations (heap_registry.c).
 */
#ifndef SH_HEAP_REGISTRY_H
#define SH_HEAP_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>

#include "spanheap.h"

void sh_registry_add(sh_heap *h);    /* gives h its generation            */
void sh_registry_remove(sh_heap *h);
void sh_registry_lock(void);
void sh_registry_unlock(void);
bool sh_heap_is_live(const sh_heap *h, uint64_t gen); /* registry lock held */
sh_heap *sh_registry_first(void);    /* then ->reg_next; lock held         */
void sh_registry_reinit(void);       /* fork child                         */

#endif /* SH_HEAP_REGISTRY_H */
