/*
 * malloc_shim.c — libspanheap-malloc.so: the C allocation API of glibc on
 * one default spanheap heap, for LD_PRELOAD (see docs/malloc.md).
 *
 * Fast path (a thread that already has its LAB): one relaxed load of the
 * heap pointer (a plain mov), one initial-exec TLS compare, then the core's
 * inline LAB allocation or sh_free. The shim adds no lock and no atomic RMW
 * to it. Everything else goes through enter(), which picks one of:
 *
 *   MODE_LAB   the thread has (now) a LAB of the default heap: call the core
 *   MODE_EXIT  the thread is past its TLS destructor (later destructors and
 *              libc's thread cleanup still free), or could not get a LAB:
 *              borrow the shared exit LAB under exit_lock for this one call
 *   MODE_META  the heap is not there yet or this thread is already inside
 *              the shim (libc allocating while we create the heap or a LAB):
 *              serve from the meta allocator, whose blocks free() recognises
 *
 * Fork: pthread_atfork handlers take exit_lock, every core lock
 * (sh_fork_prepare) and the meta lock, in that order, and release them in
 * the parent / re-initialise them in the child.
 *
 * The core is reached through spanheap.h and src/embed.h only; its
 * metadata comes from meta.c, linked in place of the core's metadata.c.
 */
#include "meta.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "embed.h" /* the core as an embedder sees it; nothing else of it */

#define SHIM_API __attribute__((visibility("default")))

/* the aliases below need not repeat libc's declaration attributes */
#pragma GCC diagnostic ignored "-Wmissing-attributes"

/* The default heap: NULL until initialised, then fixed for the process.
 * Fast paths load it relaxed: a thread only takes them once its TLS names
 * the heap, which it set after an acquire load in enter(). */
static _Atomic(sh_heap *) the_heap;
static _Atomic int init_state;           /* 0 none, 1 running, 2 done */
static sh_lab *exit_lab;                 /* LAB of threads without their own */
static pthread_mutex_t exit_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread int busy __attribute__((tls_model("initial-exec"))); /* inside the shim */

enum { MODE_LAB, MODE_EXIT, MODE_META };

/* ---- bad pointers ------------------------------------------------------ */

static _Atomic unsigned bad_reports;

static void report_bad_pointer(sh_heap *h, int err, void *ptr, void *ctx)
{
    (void)h;
    (void)ctx;
    /* relaxed: only caps the number of messages */
    if (atomic_fetch_add_explicit(&bad_reports, 1, memory_order_relaxed) >= 16)
        return;
    char buf[160];
    int n = snprintf(buf, sizeof buf, "spanheap-malloc: free(%p): %s (ignored)\n", ptr,
                     sh_error_text(err));
    if (n > 0)
        (void)!write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

/* ---- initialisation and fork ------------------------------------------ */

static void fork_prepare(void)
{
    pthread_mutex_lock(&exit_lock);
    sh_fork_prepare();
    sh_meta_fork(SH_FORK_PREPARE);
}

static void fork_parent(void)
{
    sh_meta_fork(SH_FORK_PARENT);
    sh_fork_parent();
    pthread_mutex_unlock(&exit_lock);
}

static void fork_child(void)
{
    sh_meta_fork(SH_FORK_CHILD);
    sh_fork_child();
    pthread_mutex_init(&exit_lock, NULL);
}

/* SPANHEAP_MALLOC_RESERVE: arena size in bytes, or with a k/m/g suffix. */
static size_t reserve_from_env(void)
{
    const char *s = getenv("SPANHEAP_MALLOC_RESERVE");
    if (!s || !*s)
        return SH_DEFAULT_RESERVE;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    switch (*end | 0x20) {
    case 'k': v <<= 10; break;
    case 'm': v <<= 20; break;
    case 'g': v <<= 30; break;
    default: break;
    }
    return v ? (size_t)v : SH_DEFAULT_RESERVE;
}

SH_COLD static sh_heap *heap_init(void)
{
    int expect = 0;
    /* acq_rel: the winner publishes the heap below with a release store;
     * losers wait for it */
    if (!atomic_compare_exchange_strong_explicit(&init_state, &expect, 1, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        while (atomic_load_explicit(&init_state, memory_order_acquire) == 1)
            sched_yield();
        return atomic_load_explicit(&the_heap, memory_order_acquire);
    }
    busy = 1; /* libc's allocations meanwhile come from the meta allocator */
    sh_config cfg;
    sh_config_init(&cfg);
    cfg.on_error = report_bad_pointer;
    sh_heap *h = NULL;
    /* behave under an address-space limit (ulimit -v): try smaller arenas */
    size_t r = reserve_from_env();
    do {
        cfg.reserve_bytes = r;
        h = sh_heap_create(&cfg);
    } while (!h && (r /= 4) >= ((size_t)1 << 28));
    if (h) {
        exit_lab = sh_embed_lab_new(h);
        if (!exit_lab || pthread_atfork(fork_prepare, fork_parent, fork_child) != 0)
            h = NULL; /* cannot be used safely: everything goes to meta */
    }
    busy = 0;
    /* release: a thread that sees the heap sees it initialised */
    atomic_store_explicit(&the_heap, h, memory_order_release);
    atomic_store_explicit(&init_state, 2, memory_order_release);
    return h;
}

/* Slow-path entry: see the modes above. For MODE_LAB and MODE_EXIT *hp is
 * the heap and the thread is bound to it; MODE_EXIT must be ended by leave(). */
SH_NOINLINE static int enter(sh_heap **hp)
{
    if (busy)
        return MODE_META;
    /* acquire: pairs with the release in heap_init */
    sh_heap *h = atomic_load_explicit(&the_heap, memory_order_acquire);
    if (!h && !(h = heap_init()))
        return MODE_META;
    *hp = h;
    if (sh_embed_bound(h))
        return MODE_LAB;
    if (!sh_thread_exited()) {
        busy = 1; /* pthread_setspecific may allocate */
        bool bound = sh_embed_bind(h);
        busy = 0;
        if (bound)
            return MODE_LAB;
    }
    pthread_mutex_lock(&exit_lock);
    busy = 1;
    sh_embed_borrow(h, exit_lab);
    return MODE_EXIT;
}

static void leave(int mode)
{
    if (mode == MODE_EXIT) {
        sh_embed_unbind();
        busy = 0;
        pthread_mutex_unlock(&exit_lock);
    }
}

/* ---- allocation -------------------------------------------------------- */

SH_NOINLINE static void *alloc_slow(size_t size, size_t alignment)
{
    sh_heap *h = NULL;
    int mode = enter(&h);
    if (mode == MODE_META)
        return sh_meta_alloc(size, alignment);
    void *p = alignment <= 16 ? sh_alloc(h, size) : sh_alloc_aligned(h, size, alignment);
    leave(mode);
    if (!p)
        errno = ENOMEM;
    return p;
}

SHIM_API void *malloc(size_t size)
{
    /* relaxed: see the_heap */
    sh_heap *h = atomic_load_explicit(&the_heap, memory_order_relaxed);
    if (SH_LIKELY(h != NULL && sh_embed_bound(h) && size <= SH_MAX_SMALL)) {
        void *p = sh_embed_alloc_small(h, size);
        if (SH_LIKELY(p != NULL))
            return p;
        errno = ENOMEM;
        return NULL;
    }
    return alloc_slow(size, 0);
}

static void *alloc_aligned(size_t alignment, size_t size)
{
    if (alignment <= 16)
        return malloc(size);
    sh_heap *h = atomic_load_explicit(&the_heap, memory_order_relaxed); /* see the_heap */
    if (SH_LIKELY(h != NULL && sh_embed_bound(h))) {
        void *p = sh_alloc_aligned(h, size, alignment);
        if (!p)
            errno = ENOMEM;
        return p;
    }
    return alloc_slow(size, alignment);
}

SHIM_API void *calloc(size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = malloc(bytes);
    /* large objects are fresh mappings, already zero, unless one kept for
     * reuse served it (large.c) */
    if (p && (bytes <= SH_MAX_SMALL || sh_meta_owns(p) || sh_embed_large_reused()))
        memset(p, 0, bytes);
    return p;
}

/* ---- free -------------------------------------------------------------- */

SH_NOINLINE static void free_slow(void *p)
{
    if (!p)
        return;
    if (sh_meta_owns(p)) {
        sh_meta_free(p);
        return;
    }
    sh_heap *h = NULL;
    int mode = enter(&h);
    if (mode == MODE_META)
        return; /* a heap block freed by libc while we are busy: keep it */
    sh_free(h, p);
    leave(mode);
}

SHIM_API void free(void *p)
{
    sh_heap *h = atomic_load_explicit(&the_heap, memory_order_relaxed); /* see the_heap */
    if (SH_LIKELY(h != NULL && sh_embed_bound(h) && sh_embed_in_arena(h, p))) {
        sh_free(h, p);
        return;
    }
    free_slow(p);
}

SHIM_API void cfree(void *p) __attribute__((alias("free")));

SHIM_API size_t malloc_usable_size(void *p)
{
    if (!p)
        return 0;
    if (sh_meta_owns(p))
        return sh_meta_usable(p);
    sh_heap *h = atomic_load_explicit(&the_heap, memory_order_acquire); /* see heap_init */
    return h ? sh_usable_size(h, p) : 0;
}

SHIM_API void *realloc(void *p, size_t size)
{
    if (!p)
        return malloc(size);
    if (size == 0) { /* glibc: frees and returns NULL */
        free(p);
        return NULL;
    }
    size_t have = malloc_usable_size(p);
    if (SH_UNLIKELY(have == 0)) {
        report_bad_pointer(NULL, SH_E_NOT_OWNED, p, NULL);
        errno = EINVAL;
        return NULL;
    }
    /* keep the block when it fits and wastes at most half of it */
    if (size <= have && size >= have / 2)
        return p;
    void *q = malloc(size);
    if (!q)
        return NULL; /* p stays valid, errno is ENOMEM */
    memcpy(q, p, size < have ? size : have);
    free(p);
    return q;
}

SHIM_API void *reallocarray(void *p, size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, bytes);
}

/* ---- aligned ----------------------------------------------------------- */

static bool pow2(size_t x)
{
    return x && !(x & (x - 1));
}

SHIM_API int posix_memalign(void **out, size_t alignment, size_t size)
{
    if (!pow2(alignment) || alignment % sizeof(void *))
        return EINVAL;
    int saved = errno;
    void *p = alloc_aligned(alignment, size);
    errno = saved; /* POSIX: the result is the return value */
    if (!p)
        return ENOMEM;
    *out = p;
    return 0;
}

/* glibc >= 2.38: a non-power-of-two alignment is EINVAL */
SHIM_API void *aligned_alloc(size_t alignment, size_t size)
{
    if (!pow2(alignment)) {
        errno = EINVAL;
        return NULL;
    }
    return alloc_aligned(alignment, size);
}

/* glibc: any alignment, rounded up to a power of two */
SHIM_API void *memalign(size_t alignment, size_t size)
{
    if (alignment > ((size_t)1 << 62)) {
        errno = EINVAL;
        return NULL;
    }
    if (!pow2(alignment))
        alignment = alignment < 16 ? 16 : (size_t)1 << (64 - __builtin_clzll(alignment));
    return alloc_aligned(alignment, size);
}

SHIM_API void *valloc(size_t size)
{
    return alloc_aligned(SH_PAGE, size);
}

SHIM_API void *pvalloc(size_t size)
{
    size_t r = (size + SH_PAGE - 1) & ~(SH_PAGE - 1);
    if (r < size) {
        errno = ENOMEM;
        return NULL;
    }
    return alloc_aligned(SH_PAGE, r ? r : SH_PAGE);
}

/* glibc's internal names, called directly by a few programs */
SHIM_API void *__libc_malloc(size_t size) __attribute__((alias("malloc")));
SHIM_API void __libc_free(void *p) __attribute__((alias("free")));
SHIM_API void *__libc_calloc(size_t n, size_t size) __attribute__((alias("calloc")));
SHIM_API void *__libc_realloc(void *p, size_t size) __attribute__((alias("realloc")));
SHIM_API void *__libc_memalign(size_t alignment, size_t size) __attribute__((alias("memalign")));
SHIM_API void *__libc_valloc(size_t size) __attribute__((alias("valloc")));
SHIM_API void *__libc_pvalloc(size_t size) __attribute__((alias("pvalloc")));

/* ---- introspection ----------------------------------------------------- */

/* Fills *out with the default heap's statistics; -1 if there is no heap
 * (initialisation failed, everything came from the meta allocator). */
SHIM_API int spanheap_malloc_stats(sh_heap_stats *out)
{
    sh_heap *h = atomic_load_explicit(&the_heap, memory_order_acquire); /* see heap_init */
    if (!h && !busy)
        h = heap_init();
    if (!h || !out)
        return -1;
    sh_stats(h, out);
    return 0;
}

/* 1 if p is a live block of the default heap (small or large). */
SHIM_API int spanheap_malloc_owns(const void *p)
{
    sh_heap *h = atomic_load_explicit(&the_heap, memory_order_acquire); /* see heap_init */
    return h && p && sh_usable_size(h, p) != 0;
}
