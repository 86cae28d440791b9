#ifndef SH_ZERO_H
#define SH_ZERO_H

#include <stddef.h>

/* Zeroes n bytes at p, for the Java binding's zeroed allocations (spanheap.h). */
void sh_zero(void *p, size_t n);

#endif
