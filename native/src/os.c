/*
 * os.c — every call the core makes to the OS for memory: mmap, mprotect,
 * madvise and munmap, at the bottom of the layers (it calls nothing else
 * of the core).
 *
 * All of them are slow-path calls (heap creation, committing 16 MiB of the
 * arena, a span entering the pool, a large object), each a system call of
 * a microsecond or more; routing them through one place costs a relaxed
 * atomic add and a load per call, nothing on any allocation fast path.
 *
 * It also holds the one call that is not about memory's mapping but its
 * ordering, membarrier, for the retired ring's chains lock (span.c).
 *
 * The one place also holds a test-only fault injector,
 * sh_debug_fail_os_call (spanheap.h): it makes chosen calls of one kind fail
 * with ENOMEM as the OS would, so the tests can check what each failure
 * gives (docs/testing.md, "Fault injection"):
 *
 *   calls of a kind:   1   2   3   4   5   6   ...    (sequence numbers)
 *                              ^^^^^^^^^
 *                              [fail_from, fail_to): these fail
 *
 * The window is process-wide. Arming it while other threads make calls of
 * the same kind is allowed but then which call fails is a matter of timing.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "os.h"

#include "base.h"

typedef struct os_counter {
    _Atomic uint64_t calls;     /* calls made so far, failed ones included */
    _Atomic uint64_t fail_from; /* first sequence number that fails        */
    _Atomic uint64_t fail_to;   /* first one that no longer fails; 0: off  */
} os_counter;

static os_counter counters[SH_OS_KINDS];

/* Counts a call of kind k; true if the injector wants it to fail. */
static bool os_call_fails(int k)
{
    os_counter *c = &counters[k];
    /* relaxed: a sequence number only; it orders no memory */
    uint64_t n = atomic_fetch_add_explicit(&c->calls, 1, memory_order_relaxed) + 1;
    /* acquire: pairs with the release store of fail_to in
     * sh_debug_fail_os_call, so fail_from below is the one armed with it */
    uint64_t to = atomic_load_explicit(&c->fail_to, memory_order_acquire);
    if (SH_LIKELY(n >= to))
        return false; /* disarmed (0) or past the window */
    /* relaxed: ordered by the acquire load above */
    return n >= atomic_load_explicit(&c->fail_from, memory_order_relaxed);
}

void *sh_os_map(size_t len, int prot, int flags)
{
    if (SH_UNLIKELY(os_call_fails(SH_OS_MMAP))) {
        errno = ENOMEM;
        return NULL;
    }
    void *p = mmap(NULL, len, prot, flags, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

bool sh_os_protect(void *p, size_t len, int prot)
{
    if (SH_UNLIKELY(os_call_fails(SH_OS_MPROTECT))) {
        errno = ENOMEM;
        return false;
    }
    return mprotect(p, len, prot) == 0;
}

bool sh_os_advise(void *p, size_t len, int advice)
{
    if (SH_UNLIKELY(os_call_fails(SH_OS_MADVISE))) {
        errno = ENOMEM;
        return false;
    }
    return madvise(p, len, advice) == 0;
}

/* Under ThreadSanitizer a remap is a fresh mapping, a copy and an unmap.
 * TSan keeps a record of the last accesses to every address and resets it
 * for the ranges that mmap and munmap map and unmap, the calls it
 * intercepts; it does not intercept mremap (GCC 12's runtime does not), so
 * after a move the record of the old range stays, and a mapping that a
 * later mremap grows or moves onto that range (the kernel orders the two,
 * TSan sees nothing between them) carries the old user's accesses: its new
 * owner's first write is reported as a race with a thread that freed the
 * old mapping to another heap (test_large_remap.c). The copy keeps what
 * the caller may read: the contents. Only the sanitizer build pays for
 * it. */
#if defined(__SANITIZE_THREAD__)
#define SH_OS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SH_OS_TSAN 1
#endif
#endif

void *sh_os_remap(void *p, size_t old_len, size_t new_len)
{
    if (SH_UNLIKELY(os_call_fails(SH_OS_MMAP))) {
        errno = ENOMEM;
        return NULL;
    }
#ifdef SH_OS_TSAN
    /* the protection and flags of the only mappings remapped: large
     * objects (large.c) */
    void *q = mmap(NULL, new_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED)
        return NULL;
    memcpy(q, p, old_len < new_len ? old_len : new_len);
    (void)munmap(p, old_len);
    return q;
#else
    void *q = mremap(p, old_len, new_len, MREMAP_MAYMOVE);
    return q == MAP_FAILED ? NULL : q;
#endif
}

void sh_os_unmap(void *p, size_t len)
{
    /* munmap of a range we mapped fails only for bad arguments; nothing to
     * recover, and not injectable */
    (void)munmap(p, len);
}

SH_API int sh_debug_fail_os_call(int kind, int64_t nth, int64_t count)
{
    if (kind < SH_OS_MMAP || kind > SH_OS_MADVISE || nth < 0 || (nth > 0 && count == 0) ||
        count < -1)
        return -SH_E_INVALID;
    os_counter *c = &counters[kind];
    /* disarm first, so a call racing the re-arming sees no half-set window
     * (relaxed: the release store below publishes the new window) */
    atomic_store_explicit(&c->fail_to, 0, memory_order_relaxed);
    if (nth == 0)
        return SH_OK;
    uint64_t from = atomic_load_explicit(&c->calls, memory_order_relaxed) + (uint64_t)nth;
    uint64_t to = count < 0 ? UINT64_MAX : from + (uint64_t)count;
    atomic_store_explicit(&c->fail_from, from, memory_order_relaxed);
    /* release: a call that sees this fail_to also sees fail_from */
    atomic_store_explicit(&c->fail_to, to, memory_order_release);
    return SH_OK;
}

SH_API uint64_t sh_debug_os_calls(int kind)
{
    if (kind < SH_OS_MMAP || kind > SH_OS_MADVISE)
        return 0;
    /* relaxed: a counter read for tests */
    return atomic_load_explicit(&counters[kind].calls, memory_order_relaxed);
}

/* The commands of membarrier(2) (linux/membarrier.h, spelled out so that
 * older headers do). */
#define SH_MEMBARRIER_PRIVATE_EXPEDITED (1 << 3)
#define SH_MEMBARRIER_REGISTER_PRIVATE_EXPEDITED (1 << 4)

bool sh_os_barrier_register(void)
{
#ifdef SYS_membarrier
    return syscall(SYS_membarrier, SH_MEMBARRIER_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
    return false;
#endif
}

bool sh_os_barrier_all(void)
{
#ifdef SYS_membarrier
    return syscall(SYS_membarrier, SH_MEMBARRIER_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
    return false;
#endif
}
