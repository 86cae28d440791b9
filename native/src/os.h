/*
 * os.h — the OS calls for memory (os.c), the bottom layer.
 */
#ifndef SH_OS_H
#define SH_OS_H

#include <stdbool.h>
#include <stddef.h>

#include "spanheap.h"

#define SH_OS_KINDS (SH_OS_MADVISE + 1)
/* mmap(NULL, len, prot, flags, -1, 0); NULL (not MAP_FAILED) on failure */
void *sh_os_map(size_t len, int prot, int flags);
bool sh_os_protect(void *p, size_t len, int prot); /* mprotect; false: failed */
bool sh_os_advise(void *p, size_t len, int advice); /* madvise; false: failed  */
void sh_os_unmap(void *p, size_t len);

#endif /* SH_OS_H */
