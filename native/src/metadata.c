/*
 * metadata.c — memory for the core's own metadata (the heap struct, the
 * LAB table and LABs, the large-object table, the per-thread lookup
 * tables), from libc. Every such allocation of the core goes through the
 * four functions of metadata.h.
 *
 * An embedder that cannot let the core call malloc -- the malloc shim, which
 * is malloc -- links its own definitions of these functions instead of this
 * file (native/Makefile, MALLOC_OBJS; malloc/meta.c). A bottom layer.
 */
#include <stdlib.h>

#include "metadata.h"

void *sh_meta_alloc(size_t size, size_t alignment)
{
    if (alignment <= 16)
        return malloc(size);
    /* C11 wants a size that is a multiple of the alignment */
    return aligned_alloc(alignment, (size + alignment - 1) & ~(alignment - 1));
}

void *sh_meta_calloc(size_t n, size_t size)
{
    return calloc(n, size);
}

void *sh_meta_realloc(void *p, size_t size)
{
    return realloc(p, size);
}

void sh_meta_free(void *p)
{
    free(p);
}
