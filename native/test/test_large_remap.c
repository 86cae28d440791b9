/*
 * test_large_remap.c — a kept large mapping grown over the address range
 * that another heap's kept mapping left when it was grown and moved.
 *
 * Growing a kept mapping (large.c, reuse_kept) moves it or extends it in
 * place; the kernel orders that against every earlier use of the range
 * (its mappings change under one lock), but a thread sanitizer sees only
 * the calls it intercepts: mmap and munmap reset its record of a range's
 * past accesses, a move or extension by mremap does not. A block grown
 * by mremap over a range whose last user freed it to another heap, with
 * no lock or atomic between the two threads, would carry that user's
 * accesses into its record, and its new owner's first write would be
 * reported as a race. So the TSan build remaps by mmap, copy and munmap
 * (os.c, sh_os_remap).
 *
 * Three threads, two heaps, ordered only by relaxed atomics (which give a
 * sanitizer no happens-before edge):
 *
 *   A  maps L in heap 1 (2 MiB), writes it whole, frees it (kept)
 *   C  maps K in heap 2 (2 MiB; the kernel places it just below L),
 *      writes it, frees it (kept)
 *   B  allocates 6 MiB in heap 1: L is grown by 4 MiB, which the room
 *      above it (less than 2 MiB: Linux places an anonymous mapping of
 *      2 MiB at the top of a free range, on a 2 MiB boundary) cannot
 *      hold, so it moves; its old range is a hole
 *   C  allocates 4 MiB in heap 2: K is grown, in place into that hole
 *      when the kernel placed K below L
 *   C  writes the whole 4 MiB: under TSan a stale record of A's writes
 *      in the hole is a reported race
 *
 * In every build the grown mappings must keep what was written before
 * (the checks below); under TSan the run must also stay free of reports.
 * Whether K really grew over L's old range depends on the kernel's
 * placement, so it is printed, not checked.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "spanheap.h"
#include "test_util.h"

#define MiB ((size_t)1 << 20)

static sh_heap *heap1, *heap2;
static unsigned char *l_old, *k_old;
/* relaxed everywhere: the steps must not be a synchronisation a race
 * detector could see; the kernel's mapping changes order them */
static _Atomic int step;

static void wait_step(int s)
{
    while (atomic_load_explicit(&step, memory_order_relaxed) < s)
        sched_yield();
}

static void set_step(int s)
{
    atomic_store_explicit(&step, s, memory_order_relaxed);
}

static int filled(const unsigned char *p, size_t n, unsigned char v)
{
    for (size_t i = 0; i < n; i += 4096)
        if (p[i] != v || p[i + 4095] != v)
            return 0;
    return 1;
}

static void *thread_a(void *arg)
{
    (void)arg;
    unsigned char *l = sh_alloc(heap1, 2 * MiB);
    REQUIRE(l != NULL);
    memset(l, 0xa1, 2 * MiB);
    l_old = l; /* read by main after the joins */
    CHECK_EQ(sh_free_checked(heap1, l), SH_OK); /* kept */
    set_step(1);
    return NULL;
}

static void *thread_b(void *arg)
{
    (void)arg;
    wait_step(2);
    unsigned char *l = sh_alloc(heap1, 6 * MiB); /* L, grown */
    REQUIRE(l != NULL);
    CHECK(filled(l, 2 * MiB, 0xa1));
    CHECK_EQ(sh_free_checked(heap1, l), SH_OK);
    set_step(3);
    return NULL;
}

static void *thread_c(void *arg)
{
    unsigned char **grown = arg;
    wait_step(1);
    unsigned char *k = sh_alloc(heap2, 2 * MiB);
    REQUIRE(k != NULL);
    memset(k, 0xc1, 2 * MiB);
    k_old = k;
    CHECK_EQ(sh_free_checked(heap2, k), SH_OK); /* kept */
    set_step(2);
    wait_step(3);
    k = sh_alloc(heap2, 4 * MiB); /* K, grown */
    REQUIRE(k != NULL);
    CHECK(filled(k, 2 * MiB, 0xc1));
    memset(k, 0xc2, 4 * MiB);
    CHECK(filled(k, 4 * MiB, 0xc2));
    *grown = k;
    CHECK_EQ(sh_free_checked(heap2, k), SH_OK);
    return NULL;
}

int main(void)
{
    sh_config cfg;
    sh_config_init(&cfg);
    cfg.reserve_bytes = (size_t)1 << 30; /* two heaps; only large objects are used */
    heap1 = sh_heap_create(&cfg);
    heap2 = sh_heap_create(&cfg);
    REQUIRE(heap1 && heap2);
    unsigned char *k_grown = NULL;
    pthread_t a, b, c;
    REQUIRE(pthread_create(&c, NULL, thread_c, &k_grown) == 0);
    REQUIRE(pthread_create(&b, NULL, thread_b, NULL) == 0);
    REQUIRE(pthread_create(&a, NULL, thread_a, NULL) == 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    pthread_join(c, NULL);
    int over = k_grown == k_old && k_old + 2 * MiB == l_old;
    sh_heap_destroy(heap1);
    sh_heap_destroy(heap2);
    if (t_failures) {
        fprintf(stderr, "test_large_remap: %d check(s) failed\n", t_failures);
        return 1;
    }
    printf("test_large_remap: ok (the second heap's mapping grew %s)\n",
           over ? "in place over the range the first heap's left" : "elsewhere");
    return 0;
}
