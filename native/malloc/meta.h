/*
 * meta.h — the malloc shim's allocator for the core's own metadata.
 *
 * In libspanheap-malloc.so the core cannot take its metadata (the heap
 * struct, the LAB table, LABs, the large-object table, per-thread lookup
 * tables) from malloc: malloc is the shim itself. meta.c defines the core's
 * metadata functions (sh_meta_alloc, sh_meta_calloc, sh_meta_realloc,
 * sh_meta_free; declared in src/metadata.h) and is linked in place of the
 * core's src/metadata.c. The shim also serves from here what libc asks for
 * while the shim is busy in the core or initialising (recursion), so
 * free() recognises these blocks by address.
 */
#ifndef SH_META_H
#define SH_META_H

#include <stdbool.h>
#include <stddef.h>

void *sh_meta_alloc(size_t size, size_t alignment);
void *sh_meta_calloc(size_t n, size_t size);
void *sh_meta_realloc(void *p, size_t size);
void sh_meta_free(void *p);
bool sh_meta_owns(const void *p);
size_t sh_meta_usable(const void *p);
void sh_meta_fork(int phase); /* SH_FORK_* (embed.h) */

#endif /* SH_META_H */
