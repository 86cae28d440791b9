/*
 * metadata.h — memory for the core's own structures (metadata.c).
 */
#ifndef SH_METADATA_H
#define SH_METADATA_H

#include <stddef.h>

/* metadata.c: memory for the core's own structures, never for blocks.
 * Every such allocation of the core goes through these (an embedder that
 * is malloc links its own definitions, see metadata.c); alignment is a
 * power of two, the rest as malloc/calloc/realloc/free. */
void *sh_meta_alloc(size_t size, size_t alignment);
void *sh_meta_calloc(size_t n, size_t size);
void *sh_meta_realloc(void *p, size_t size);
void sh_meta_free(void *p);

#endif /* SH_METADATA_H */
