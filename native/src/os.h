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
/* mremap(p, old_len, new_len, MREMAP_MAYMOVE): the mapping's pages move
 * along, resident ones stay resident; NULL on failure (p is then unchanged).
 * Counted and injected as SH_OS_MMAP: it maps memory. */
void *sh_os_remap(void *p, size_t old_len, size_t new_len);

/* membarrier(2), private expedited: sh_os_barrier_register() once, before
 * the first sh_os_barrier_all(); false where the kernel lacks it. After a
 * true return, sh_os_barrier_all() makes every running thread of the
 * process execute a full memory barrier before it returns (false: failed,
 * nothing can be assumed). Not counted or injected: they map no memory. */
bool sh_os_barrier_register(void);
bool sh_os_barrier_all(void);

#endif /* SH_OS_H */
