/*
 * meta.h — the malloc shim's allocator for the core's own metadata.
 *
 * In libspanheap-malloc.so the core cannot take its metadata (the heap
 * struct, the LAB table, LABs, the large-object table, per-thread lookup
 * tables) from malloc: malloc is the shim itself. The Makefile compiles the
 * core sources with `-include malloc/meta.h`, which maps the core's calls of
 * malloc/calloc/realloc/free/aligned_alloc to sh_meta_* below. The shim also
 * serves from here what libc asks for while the shim is busy in the core or
 * initialising (recursion), so free() recognises these blocks by address.
 */
#ifndef SH_META_H
#define SH_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h> /* declare the libc names before the macros below */

void *sh_meta_alloc(size_t size, size_t alignment);
void *sh_meta_calloc(size_t n, size_t size);
void *sh_meta_realloc(void *p, size_t size);
void sh_meta_free(void *p);
bool sh_meta_owns(const void *p);
size_t sh_meta_usable(const void *p);
void sh_meta_fork(int phase); /* SH_FORK_* of internal.h */

#ifndef SH_META_NO_REDIRECT
#define malloc(n) sh_meta_alloc((n), 16)
#define calloc(n, s) sh_meta_calloc((n), (s))
#define realloc(p, n) sh_meta_realloc((p), (n))
#define free(p) sh_meta_free(p)
#define aligned_alloc(a, n) sh_meta_alloc((n), (a))
#endif

#endif /* SH_META_H */
