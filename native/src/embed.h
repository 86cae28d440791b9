/*
 * embed.h — the core as an embedder sees it: everything the malloc shim
 * (malloc/malloc_shim.c) uses beyond the public API of spanheap.h, and
 * nothing more. `make -C native check-layers` fails if the shim names an
 * sh_/SH_ identifier that neither this header nor spanheap.h nor
 * malloc/meta.h declares.
 *
 * An embedder serves one heap from inside the allocation functions of the
 * process, so it needs what the public API keeps inside: whether the
 * calling thread is bound to the heap (its one-entry LAB cache names it),
 * binding it, a LAB for threads that cannot have their own, the inline
 * small-block fast path, fork handlers, and the core's metadata memory
 * (metadata.h: an embedder that is malloc defines sh_meta_alloc,
 * sh_meta_calloc, sh_meta_realloc and sh_meta_free itself and links them
 * instead of metadata.c).
 *
 * Also for embedders, from base.h: the constants SH_MAX_SMALL (largest
 * size class), SH_PAGE, SH_DEFAULT_RESERVE, the fork phases SH_FORK_*, and
 * the attribute macros SH_LIKELY, SH_UNLIKELY, SH_NOINLINE, SH_COLD.
 *
 * The inline functions below need the core's types and fast paths, hence
 * the headers of frontend.c, size_class.c and large.c; an embedder uses
 * only the names listed here.
 */
#ifndef SH_EMBED_H
#define SH_EMBED_H

#include <string.h>

#include "base.h"
#include "frontend.h"
#include "large.h"
#include "metadata.h"
#include "size_class.h"

/* ---- binding the calling thread to a heap ------------------------------ */

/* The calling thread's calls on h run on the LAB its one-entry cache names:
 * its own, or one borrowed with sh_embed_borrow. */
static inline bool sh_embed_bound(const sh_heap *h)
{
    return sh_tls_last.heap == h;
}

/* Binds the calling thread to its own LAB of h, creating it if needed.
 * May allocate metadata (and pthread_setspecific may call malloc): an
 * embedder that is malloc must serve such recursion itself. False, with
 * sh_last_error() set, if no LAB can be had. */
static inline bool sh_embed_bind(sh_heap *h)
{
    return sh_lab_get_slow(h) != NULL;
}

/* True once the calling thread's TLS destructor has run: later destructors
 * and libc's thread cleanup may still allocate, but a new LAB would never
 * be released, so such calls should borrow a LAB instead. */
bool sh_thread_exited(void);

/* A LAB of h bound to no thread, for sh_embed_borrow; NULL if none can be
 * had. It frees directly (no deferred chains) since no thread flushes it. */
static inline sh_lab *sh_embed_lab_new(sh_heap *h)
{
    return sh_lab_new(h);
}

/* Binds the calling thread to lab of h until sh_embed_unbind; the caller
 * makes sure only one thread at a time uses lab (a lock). */
static inline void sh_embed_borrow(sh_heap *h, sh_lab *lab)
{
    sh_tls_last = (sh_tls_entry){h, h->gen, lab};
}

static inline void sh_embed_unbind(void)
{
    memset(&sh_tls_last, 0, sizeof sh_tls_last);
}

/* ---- fast paths -------------------------------------------------------- */

/* A block of at least size (<= SH_MAX_SMALL) bytes from the bound LAB:
 * the core's inline fast path, no call unless the hot span is used up.
 * The thread must be bound to h. NULL with sh_last_error() on failure. */
static inline void *sh_embed_alloc_small(sh_heap *h, size_t size)
{
    return sh_lab_alloc(h, sh_tls_last.lab, sh_size_to_class(size), false);
}

/* p lies in h's arena (a small block, or a bad pointer into it); anything
 * else is a large object or not h's. */
static inline bool sh_embed_in_arena(const sh_heap *h, const void *p)
{
    return (uintptr_t)p - h->arena.base < h->arena.size;
}

/* True if this thread's last large allocation reused a kept mapping (old
 * contents); false if it was a fresh, zeroed mapping (calloc skips the
 * memset then). */
static inline bool sh_embed_large_reused(void)
{
    return sh_large_last_reused != 0;
}

/* ---- errors and fork --------------------------------------------------- */

/* What an error code means, for messages ("double free"); code or -code.
 * The same table as sh_error_name. (errors.c) */
const char *sh_error_text(int code);

/* pthread_atfork handlers: prepare takes every core lock of every live
 * heap in the core's nesting order, parent releases them, child
 * re-initialises them (fork.c). An embedder takes its own locks around
 * them; its metadata allocator gets the phases SH_FORK_PREPARE,
 * SH_FORK_PARENT and SH_FORK_CHILD. */
void sh_fork_prepare(void);
void sh_fork_parent(void);
void sh_fork_child(void);

#endif /* SH_EMBED_H */
