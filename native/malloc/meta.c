/*
 * meta.c — a small allocator for the malloc shim's metadata and for libc's
 * recursive requests (see meta.h).
 *
 * One reservation (SH_META_RESERVE, PROT_NONE) is committed by mprotect as
 * it is used, so free() can tell a meta block by its address. Blocks are
 * powers of two from 64 B, naturally aligned up to 64 KiB: classes below
 * 64 KiB carve a 64 KiB granule each, block by block as they are asked for
 * (a class used for one LAB touches its pages, not the granule's sixteen),
 * larger ones take whole granules from the bump pointer. A byte per granule records its class, so free() needs
 * no header. Freed blocks go to per-class lists (blocks of 128 KiB and more
 * are madvised first). One mutex guards everything: the core asks for
 * metadata only on rare events (heap creation, a thread's first use, large
 * table growth), never on the allocation fast path.
 */
#include "meta.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "embed.h"

#define META_RESERVE ((size_t)1 << 30)  /* 1 GiB of address space */
#define GRANULE_SHIFT 16u                /* 64 KiB */
#define GRANULE ((size_t)1 << GRANULE_SHIFT)
#define COMMIT_STEP ((size_t)1 << 20)    /* mprotect 1 MiB at a time */
#define MIN_SHIFT 6u                     /* 64 B */
#define MAX_SHIFT 29u                    /* 512 MiB */

static pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t meta_base;      /* 0 until the reservation exists; then fixed */
static size_t meta_bump;         /* bytes handed out from the reservation */
static size_t meta_committed;    /* bytes made read/write */
static void *meta_free_list[MAX_SHIFT + 1];
static char *carve_next[GRANULE_SHIFT], *carve_end[GRANULE_SHIFT]; /* a class's granule */
static uint8_t granule_class[META_RESERVE >> GRANULE_SHIFT];

static unsigned shift_for(size_t n)
{
    if (n <= ((size_t)1 << MIN_SHIFT))
        return MIN_SHIFT;
    return 64u - (unsigned)__builtin_clzll((unsigned long long)(n - 1));
}

/* meta_lock held: n bytes (a multiple of GRANULE) aligned to align from the
 * reservation, committed. */
static void *bump(size_t n, size_t align)
{
    if (!meta_base) {
        void *m = mmap(NULL, META_RESERVE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        meta_base = (uintptr_t)m;
    }
    uintptr_t start = (meta_base + meta_bump + align - 1) & ~(uintptr_t)(align - 1);
    size_t end = start - meta_base + n;
    if (end > META_RESERVE)
        return NULL;
    if (end > meta_committed) {
        size_t want = (end + COMMIT_STEP - 1) & ~(COMMIT_STEP - 1);
        if (mprotect((void *)(meta_base + meta_committed), want - meta_committed,
                     PROT_READ | PROT_WRITE) != 0)
            return NULL;
        meta_committed = want;
    }
    meta_bump = end;
    return (void *)start;
}

/* *zero (if not NULL): set when the block is known to read as zero in full
 * (fresh from the reservation, or madvised when it was freed except for the
 * list link, which is cleared here). */
static void *meta_alloc(size_t size, size_t alignment, bool *zero)
{
    if (alignment > size)
        size = alignment;
    if (size > ((size_t)1 << MAX_SHIFT)) {
        errno = ENOMEM;
        return NULL;
    }
    unsigned k = shift_for(size);
    pthread_mutex_lock(&meta_lock);
    void *b = meta_free_list[k];
    bool z = false;
    if (b) {
        meta_free_list[k] = *(void **)b;
        if (k > GRANULE_SHIFT) { /* madvised by sh_meta_free */
            *(void **)b = NULL;
            z = true;
        }
    } else if (k < GRANULE_SHIFT) {
        if (carve_next[k] == carve_end[k]) {
            char *g = bump(GRANULE, GRANULE);
            if (g) {
                granule_class[((uintptr_t)g - meta_base) >> GRANULE_SHIFT] = (uint8_t)k;
                carve_next[k] = g;
                carve_end[k] = g + GRANULE;
            }
        }
        if (carve_next[k] != carve_end[k]) {
            b = carve_next[k];
            carve_next[k] += (size_t)1 << k;
            z = true; /* never used */
        }
    } else {
        size_t n = (size_t)1 << k;
        b = bump(n, alignment > GRANULE ? alignment : GRANULE);
        if (b)
            granule_class[((uintptr_t)b - meta_base) >> GRANULE_SHIFT] = (uint8_t)k;
        z = true; /* never used */
    }
    pthread_mutex_unlock(&meta_lock);
    if (!b)
        errno = ENOMEM;
    if (zero)
        *zero = z;
    return b;
}

void *sh_meta_alloc(size_t size, size_t alignment)
{
    return meta_alloc(size, alignment, NULL);
}

void *sh_meta_calloc(size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    bool zero;
    void *p = meta_alloc(bytes, 16, &zero);
    if (p && !zero) /* skip it for the big ones: the core's 512 KiB LAB table */
        memset(p, 0, bytes);
    return p;
}

bool sh_meta_owns(const void *p)
{
    /* meta_base is written once, before any block exists */
    return meta_base && (uintptr_t)p - meta_base < META_RESERVE;
}

size_t sh_meta_usable(const void *p)
{
    return (size_t)1 << granule_class[((uintptr_t)p - meta_base) >> GRANULE_SHIFT];
}

void *sh_meta_realloc(void *p, size_t size)
{
    if (!p)
        return sh_meta_alloc(size, 16);
    size_t have = sh_meta_usable(p);
    if (size <= have)
        return p;
    void *q = sh_meta_alloc(size, 16);
    if (q) {
        memcpy(q, p, have);
        sh_meta_free(p);
    }
    return q;
}

void sh_meta_free(void *p)
{
    if (!p)
        return;
    unsigned k = granule_class[((uintptr_t)p - meta_base) >> GRANULE_SHIFT];
    if (k > GRANULE_SHIFT)
        (void)madvise(p, (size_t)1 << k, MADV_DONTNEED); /* give big blocks back */
    pthread_mutex_lock(&meta_lock);
    *(void **)p = meta_free_list[k];
    meta_free_list[k] = p;
    pthread_mutex_unlock(&meta_lock);
}

void sh_meta_fork(int phase)
{
    if (phase == SH_FORK_PREPARE)
        pthread_mutex_lock(&meta_lock);
    else if (phase == SH_FORK_PARENT)
        pthread_mutex_unlock(&meta_lock);
    else
        pthread_mutex_init(&meta_lock, NULL);
}
