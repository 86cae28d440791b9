/*
 * large.c — objects beyond the largest size class (1 MiB), and aligned
 * requests above 4096, mapped directly with mmap and unmapped on free.
 *
 * A mutex-protected open-addressing table (keyed by the user pointer)
 * records every live mapping, so sh_free / sh_usable_size recognise large
 * objects and reject unknown pointers without touching them.
 *
 * A few freed mappings are kept for reuse (bounds in heap_types.h): a program
 * that allocates and frees a 4 MiB buffer in a loop would otherwise pay an
 * mmap, a munmap and the TLB shootdown every time (~15 us against ~50 ns for
 * glibc, which keeps such chunks), and a page fault for every page it
 * touches again. Kept mappings serve only requests that need page alignment
 * at most: the smallest kept one that holds the request, its tail beyond
 * the request unmapped; if none holds it, the largest one grown by mremap
 * (its pages stay resident: only the new part faults). So a program that
 * cycles through buffers of varying sizes (mimalloc-bench's malloc-large:
 * 5-25 MiB) faults only for the growth, not for every buffer.
 */
#include <stdlib.h>
#include <sys/mman.h>

#include "large.h"

#include "errors.h"
#include "heap_types.h"
#include "limit.h"
#include "metadata.h"
#include "os.h"

#define EMPTY 0u
#define TOMB 1u

int sh_large_init(sh_heap *h)
{
    pthread_mutex_init(&h->large.lock, NULL);
    h->large.cap = 64;
    h->large.v = sh_meta_calloc(h->large.cap, sizeof(sh_large_entry));
    return h->large.v ? SH_OK : SH_E_NOMEM;
}

__thread int sh_large_last_reused;

void sh_large_destroy(sh_heap *h)
{
    sh_large_table *t = &h->large;
    for (size_t i = 0; i < t->cap; i++)
        if (t->v && t->v[i].ptr > TOMB)
            sh_os_unmap((void *)t->v[i].ptr, t->v[i].size);
    for (size_t i = 0; i < SH_LARGE_CACHE; i++)
        if (t->cache[i].ptr)
            sh_os_unmap((void *)t->cache[i].ptr, t->cache[i].size);
    sh_meta_free(t->v);
    t->v = NULL;
    pthread_mutex_destroy(&t->lock);
}

/* fork: the table's lock (see sh_fork_prepare) */
void sh_large_fork(sh_heap *h, int phase)
{
    if (phase == SH_FORK_PREPARE)
        pthread_mutex_lock(&h->large.lock);
    else if (phase == SH_FORK_PARENT)
        pthread_mutex_unlock(&h->large.lock);
    else
        pthread_mutex_init(&h->large.lock, NULL);
}

static size_t slot_of(uintptr_t p, size_t cap)
{
    uint64_t x = (uint64_t)p >> 12;
    x *= 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 17) & (cap - 1);
}

static sh_large_entry *find(sh_large_table *t, uintptr_t p) /* lock held */
{
    for (size_t i = slot_of(p, t->cap), n = 0; n < t->cap; i = (i + 1) & (t->cap - 1), n++) {
        if (t->v[i].ptr == p)
            return &t->v[i];
        if (t->v[i].ptr == EMPTY)
            return NULL;
    }
    return NULL;
}

static void put(sh_large_entry *v, size_t cap, uintptr_t p, size_t size)
{
    size_t i = slot_of(p, cap);
    while (v[i].ptr > TOMB)
        i = (i + 1) & (cap - 1);
    v[i].ptr = p;
    v[i].size = size;
}

static bool insert(sh_large_table *t, uintptr_t p, size_t size) /* lock held */
{
    if ((t->used + t->tomb + 1) * 2 > t->cap) {
        size_t cap = 64;
        while (cap < (t->used + 1) * 4)
            cap *= 2;
        sh_large_entry *v = sh_meta_calloc(cap, sizeof *v);
        if (!v)
            return false;
        for (size_t i = 0; i < t->cap; i++)
            if (t->v[i].ptr > TOMB)
                put(v, cap, t->v[i].ptr, t->v[i].size);
        sh_meta_free(t->v);
        t->v = v;
        t->cap = cap;
        t->tomb = 0;
    }
    put(t->v, t->cap, p, size);
    t->used++;
    return true;
}

/* Removes a kept mapping from the cache for a request of usable bytes: the
 * smallest that holds it, else the largest; false if none is kept. Lock
 * held. */
static bool cache_pick(sh_heap *h, size_t usable, sh_large_entry *out)
{
    sh_large_table *t = &h->large;
    int fit = -1, largest = -1;
    for (int i = 0; i < SH_LARGE_CACHE; i++) {
        size_t sz = t->cache[i].size;
        if (!t->cache[i].ptr)
            continue;
        if (sz >= usable && (fit < 0 || sz < t->cache[fit].size))
            fit = i;
        if (largest < 0 || sz > t->cache[largest].size)
            largest = i;
    }
    int pick = fit >= 0 ? fit : largest;
    if (pick < 0)
        return false;
    *out = t->cache[pick];
    t->cache[pick].ptr = 0;
    t->cache_bytes -= out->size;
    /* relaxed: statistics only */
    atomic_fetch_sub_explicit(&h->large_cached, (int64_t)out->size, memory_order_relaxed);
    return true;
}

/* A kept mapping made exactly usable bytes long (tail unmapped, or grown by
 * mremap); NULL if none is kept or the growth failed (the kept one is then
 * unmapped). Called without the lock: the system calls run outside it. */
static void *reuse_kept(sh_heap *h, size_t usable)
{
    sh_large_entry e;
    pthread_mutex_lock(&h->large.lock);
    bool picked = cache_pick(h, usable, &e);
    pthread_mutex_unlock(&h->large.lock);
    if (!picked)
        return NULL;
    char *p = (char *)e.ptr;
    if (e.size > usable) {
        sh_os_unmap(p + usable, e.size - usable);
    } else if (e.size < usable) {
        char *q = sh_os_remap(p, e.size, usable);
        if (!q) {
            sh_os_unmap(p, e.size);
            return NULL;
        }
        p = q;
    }
    return p;
}

/* Keeps a freed mapping for reuse if the bounds allow; false: unmap it. */
static bool cache_keep(sh_heap *h, uintptr_t p, size_t size) /* lock held */
{
    sh_large_table *t = &h->large;
    if (size > SH_LARGE_CACHE_ONE || t->cache_bytes + size > SH_LARGE_CACHE_BYTES)
        return false;
    for (int i = 0; i < SH_LARGE_CACHE; i++) {
        if (!t->cache[i].ptr) {
            t->cache[i].ptr = p;
            t->cache[i].size = size;
            t->cache_bytes += size;
            /* relaxed: statistics only */
            atomic_fetch_add_explicit(&h->large_cached, (int64_t)size, memory_order_relaxed);
            return true;
        }
    }
    return false;
}

void *sh_large_alloc(sh_heap *h, size_t size, size_t alignment)
{
    size_t usable = (size + SH_PAGE - 1) & ~(SH_PAGE - 1);
    if (usable == 0)
        usable = SH_PAGE;
    if (alignment < SH_PAGE)
        alignment = SH_PAGE;
    if (!sh_limit_acquire(h, NULL, usable)) {
        sh_set_error(SH_E_LIMIT);
        return NULL;
    }
    char *p = alignment == SH_PAGE ? reuse_kept(h, usable) : NULL;
    int reused = p != NULL;
    if (!p) {
        size_t map_len = usable + (alignment > SH_PAGE ? alignment : 0);
        char *m = sh_os_map(map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS);
        if (!m) {
            sh_limit_release(h, NULL, usable);
            sh_set_error(SH_E_NOMEM);
            return NULL;
        }
        p = (char *)(((uintptr_t)m + alignment - 1) & ~(uintptr_t)(alignment - 1));
        if (map_len != usable) {
            if (p > m)
                sh_os_unmap(m, (size_t)(p - m));
            size_t tail = map_len - (size_t)(p - m) - usable;
            if (tail)
                sh_os_unmap(p + usable, tail);
        }
    }
    pthread_mutex_lock(&h->large.lock);
    bool ok = insert(&h->large, (uintptr_t)p, usable);
    pthread_mutex_unlock(&h->large.lock);
    if (!ok) {
        sh_os_unmap(p, usable);
        sh_limit_release(h, NULL, usable);
        sh_set_error(SH_E_NOMEM);
        return NULL;
    }
    /* relaxed: statistics only */
    atomic_fetch_add_explicit(&h->large_bytes, (int64_t)usable, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->large_count, 1, memory_order_relaxed);
    sh_large_last_reused = reused;
    return p;
}

/* Whether p is a freed mapping kept for reuse: a second free of it is a
 * double free, not a foreign pointer. Lock held. */
static bool is_kept(const sh_large_table *t, uintptr_t p)
{
    for (int i = 0; i < SH_LARGE_CACHE; i++)
        if (t->cache[i].ptr == p)
            return true;
    return false;
}

int sh_large_free(sh_heap *h, void *p)
{
    pthread_mutex_lock(&h->large.lock);
    sh_large_entry *e = find(&h->large, (uintptr_t)p);
    size_t size = 0;
    bool kept = false;
    bool double_free = false;
    if (e) {
        size = e->size;
        e->ptr = TOMB;
        h->large.used--;
        h->large.tomb++;
        kept = cache_keep(h, (uintptr_t)p, size);
    } else {
        double_free = is_kept(&h->large, (uintptr_t)p);
    }
    pthread_mutex_unlock(&h->large.lock);
    if (!e)
        return double_free ? SH_E_DOUBLE_FREE : SH_E_NOT_OWNED;
    if (!kept)
        sh_os_unmap(p, size);
    sh_limit_release(h, NULL, size);
    /* relaxed: statistics only */
    atomic_fetch_sub_explicit(&h->large_bytes, (int64_t)size, memory_order_relaxed);
    atomic_fetch_sub_explicit(&h->large_count, 1, memory_order_relaxed);
    return SH_OK;
}

/* Unmaps every freed mapping kept for reuse; returns their bytes. A later
 * second free of such a pointer is then reported as not owned instead of as
 * a double free, as for a mapping that was never kept. */
size_t sh_large_trim(sh_heap *h)
{
    sh_large_entry gone[SH_LARGE_CACHE];
    size_t bytes = 0;
    pthread_mutex_lock(&h->large.lock);
    for (int i = 0; i < SH_LARGE_CACHE; i++) {
        gone[i] = h->large.cache[i];
        h->large.cache[i].ptr = 0;
    }
    h->large.cache_bytes = 0;
    pthread_mutex_unlock(&h->large.lock);
    for (int i = 0; i < SH_LARGE_CACHE; i++) {
        if (!gone[i].ptr)
            continue;
        sh_os_unmap((void *)gone[i].ptr, gone[i].size);
        /* relaxed: statistics only */
        atomic_fetch_sub_explicit(&h->large_cached, (int64_t)gone[i].size, memory_order_relaxed);
        bytes += gone[i].size;
    }
    return bytes;
}

size_t sh_large_usable(sh_heap *h, const void *p)
{
    pthread_mutex_lock(&h->large.lock);
    sh_large_entry *e = find(&h->large, (uintptr_t)p);
    size_t size = e ? e->size : 0;
    pthread_mutex_unlock(&h->large.lock);
    return size;
}
