/*
 * limit.h — the byte limit (limit.c).
 */
#ifndef SH_LIMIT_H
#define SH_LIMIT_H

#include <stdbool.h>
#include <stddef.h>

#include "spanheap.h"

/* limit.c: false if bytes more would exceed the heap's byte limit. actor:
 * the calling thread's LAB, or NULL (large objects): without a byte limit
 * the bytes are only a statistic and go to the actor's own counter. */
typedef struct sh_lab sh_lab;
bool sh_limit_acquire(sh_heap *h, sh_lab *actor, size_t bytes);
void sh_limit_release(sh_heap *h, sh_lab *actor, size_t bytes);

#endif /* SH_LIMIT_H */
