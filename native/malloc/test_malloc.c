/*
 * test_malloc.c — the malloc API of libspanheap-malloc.so, run under
 * LD_PRELOAD (make test-malloc). Without the shim it fails at once: the
 * first check is that malloc really is served by the default heap.
 *
 *   API       sizes, alignment, zeroing, realloc contents, errno on failure
 *   threads   content-checked stress with cross-thread frees
 *   exit      threads that free and allocate after the shim's TLS destructor
 *   fork      forks while other threads allocate; the child allocates,
 *             starts a thread and frees the parent's blocks
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spanheap.h"
#include "../test/test_util.h"

typedef int (*stats_fn)(sh_heap_stats *);
typedef int (*owns_fn)(const void *);
static stats_fn heap_stats;
static owns_fn heap_owns;

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void stamp(void *p, size_t n, uint64_t tag)
{
    unsigned char *c = p;
    for (size_t i = 0; i < n; i += 61)
        c[i] = (unsigned char)(tag + i);
    if (n)
        c[n - 1] = (unsigned char)(tag * 7);
}

static int stamp_ok(const void *p, size_t n, uint64_t tag)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i += 61)
        if (c[i] != (unsigned char)(tag + i) && !(i == n - 1))
            return 0;
    return n == 0 || c[n - 1] == (unsigned char)(tag * 7);
}

static int aligned(const void *p, size_t a)
{
    return ((uintptr_t)p & (a - 1)) == 0;
}

/* ---- API ------------------------------------------------------------------ */

static void test_in_use(void)
{
    heap_stats = (stats_fn)dlsym(RTLD_DEFAULT, "spanheap_malloc_stats");
    heap_owns = (owns_fn)dlsym(RTLD_DEFAULT, "spanheap_malloc_owns");
    REQUIRE(heap_stats && heap_owns); /* run under LD_PRELOAD=libspanheap-malloc.so */
    sh_heap_stats before, after;
    REQUIRE(heap_stats(&before) == 0);
    enum { N = 1000 };
    static void *v[N];
    for (int i = 0; i < N; i++) {
        v[i] = malloc(100);
        CHECK(heap_owns(v[i]));
    }
    REQUIRE(heap_stats(&after) == 0);
    CHECK(after.live_bytes >= before.live_bytes + N * 100);
    for (int i = 0; i < N; i++)
        free(v[i]);
    void *big = malloc(5 << 20);
    CHECK(heap_owns(big));
    REQUIRE(heap_stats(&after) == 0);
    CHECK(after.large_count >= 1);
    free(big);
    /* libc's own allocations go through the shim too */
    char *d = strdup("spanheap");
    CHECK(heap_owns(d));
    free(d);
}

static void test_api(void)
{
    for (size_t n = 0; n < (3u << 20); n = n < 64 ? n + 1 : n * 5 / 4) {
        unsigned char *p = malloc(n);
        REQUIRE(p);
        CHECK(aligned(p, 16));
        CHECK(malloc_usable_size(p) >= n);
        memset(p, 0xab, n);
        free(p);
        p = calloc(1, n);
        REQUIRE(p);
        size_t nz = 0;
        for (size_t i = 0; i < n; i++)
            nz += p[i] != 0;
        CHECK_EQ(nz, 0);
        free(p);
    }
    /* realloc keeps contents across small, large and back */
    size_t sizes[] = {10, 100, 5000, 300000, 2u << 20, 9u << 20, 70000, 24, 1};
    unsigned char *p = malloc(1);
    p[0] = 0x5a;
    size_t have = 1;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        size_t n = sizes[i];
        unsigned char *q = realloc(p, n);
        REQUIRE(q);
        size_t keep = have < n ? have : n;
        CHECK(q[0] == 0x5a);
        CHECK(have < 2 || have > n || q[keep - 1] == (unsigned char)have);
        memset(q + 1, 0, n - 1);
        if (n > 1)
            q[n - 1] = (unsigned char)n;
        p = q;
        have = n;
    }
    errno = 0;
    CHECK(realloc(p, 0) == NULL);
    /* alignment */
    for (size_t a = 8; a <= (1u << 22); a *= 2) {
        void *x = NULL;
        CHECK_EQ(posix_memalign(&x, a, 100), 0);
        CHECK(x && aligned(x, a));
        free(x);
        x = aligned_alloc(a, 3 * a);
        CHECK(x && aligned(x, a));
        free(x);
        x = memalign(a, 1);
        CHECK(x && aligned(x, a));
        free(x);
    }
    void *x = (void *)1;
    CHECK_EQ(posix_memalign(&x, 24, 10), EINVAL);
    CHECK(x == (void *)1);
    x = memalign(24, 10);
    CHECK(x && aligned(x, 32));
    free(x);
    x = valloc(10);
    CHECK(x && aligned(x, 4096));
    free(x);
    x = pvalloc(10);
    CHECK(x && aligned(x, 4096) && malloc_usable_size(x) >= 4096);
    free(x);
    /* failures: NULL with ENOMEM (volatile: hide the sizes from the compiler) */
    volatile size_t huge = SIZE_MAX / 2, many = SIZE_MAX / 4;
    errno = 0;
    CHECK(malloc(huge) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(calloc(many, 8) == NULL && errno == ENOMEM);
    errno = 0;
    CHECK(reallocarray(NULL, many, 8) == NULL && errno == ENOMEM);
    void *keep = malloc(10);
    errno = 0;
    CHECK(realloc(keep, huge) == NULL && errno == ENOMEM);
    free(keep); /* still valid */
    free(NULL);
    CHECK_EQ(malloc_usable_size(NULL), 0);
}

/* ---- threads: content-checked, cross-thread frees -------------------------- */

enum { THREADS = 4, SLOTS = 4096 };
static _Atomic(uintptr_t) shared_slots[SLOTS]; /* block | (size in a side array) */
static size_t shared_size[SLOTS];
static _Atomic int stress_errors;

static void *stress_thread(void *arg)
{
    uint64_t s = (uintptr_t)arg * 0x9E3779B97F4A7C15ull + 1;
    void *own[256] = {0};
    size_t own_n[256];
    for (int it = 0; it < 200000; it++) {
        uint64_t r = rng_next(&s);
        int i = (int)(r % 256);
        if (own[i]) {
            if (!stamp_ok(own[i], own_n[i], (uintptr_t)own[i]))
                atomic_fetch_add(&stress_errors, 1);
            if (r & 0x100000) {
                /* hand it to whoever takes the slot: a remote free */
                unsigned k = (unsigned)(r >> 24) % SLOTS;
                uintptr_t old = atomic_exchange(&shared_slots[k], 0);
                if (old) {
                    void *b = (void *)old;
                    if (!stamp_ok(b, shared_size[k], old)) /* slot k's blocks: its size */
                        atomic_fetch_add(&stress_errors, 1);
                    free(b);
                }
                free(own[i]);
            } else {
                free(own[i]);
            }
            own[i] = NULL;
        } else {
            size_t n = (r >> 32) & 1 ? (size_t)(r >> 40) % 512 : (size_t)(r >> 40) % 70000;
            if ((r & 0xff) == 7)
                n = (size_t)(r >> 40) % (3u << 20);
            own[i] = malloc(n);
            if (!own[i]) {
                atomic_fetch_add(&stress_errors, 1);
                continue;
            }
            own_n[i] = n;
            stamp(own[i], n, (uintptr_t)own[i]);
        }
    }
    for (int i = 0; i < 256; i++)
        free(own[i]);
    return NULL;
}

/* Cross-thread frees through a simpler channel: every thread allocates
 * fixed-size stamped blocks into slots and frees what it finds there. */
static void *exchange_thread(void *arg)
{
    uint64_t s = (uintptr_t)arg * 0x2545F4914F6CDD1Dull + 3;
    for (int it = 0; it < 200000; it++) {
        uint64_t r = rng_next(&s);
        unsigned k = (unsigned)(r % SLOTS);
        size_t n = 16 + (k % 64) * 24; /* the size is a function of the slot */
        void *b = malloc(n);
        if (!b) {
            atomic_fetch_add(&stress_errors, 1);
            continue;
        }
        stamp(b, n, (uintptr_t)b);
        uintptr_t old = atomic_exchange(&shared_slots[k], (uintptr_t)b);
        if (old) {
            if (!stamp_ok((void *)old, n, old))
                atomic_fetch_add(&stress_errors, 1);
            free((void *)old);
        }
    }
    return NULL;
}

static void test_threads(void)
{
    for (unsigned k = 0; k < SLOTS; k++)
        shared_size[k] = 16 + (k % 64) * 24;
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        REQUIRE(pthread_create(&t[i], NULL, i % 2 ? stress_thread : exchange_thread,
                               (void *)(i + 1)) == 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (unsigned k = 0; k < SLOTS; k++) {
        uintptr_t b = atomic_exchange(&shared_slots[k], 0);
        if (b) {
            CHECK(stamp_ok((void *)b, shared_size[k], b));
            free((void *)b);
        }
    }
    CHECK_EQ(atomic_load(&stress_errors), 0);
}

/* ---- thread exit: allocation after the shim's destructor ------------------ */

static pthread_key_t late_key;
static void *late_block;

static void late_destructor(void *p)
{
    /* runs after the shim's key destructor (created later, higher index) */
    free(p);
    void *q = malloc(200);
    stamp(q, 200, 99);
    if (!stamp_ok(q, 200, 99))
        atomic_fetch_add(&stress_errors, 1);
    free(late_block); /* a block of another thread: remote free, no LAB */
    late_block = NULL;
    free(q);
}

static void *short_thread(void *arg)
{
    (void)arg;
    void *v[64];
    for (int i = 0; i < 64; i++)
        v[i] = malloc((size_t)i * 40);
    for (int i = 0; i < 64; i++)
        free(v[i]);
    pthread_setspecific(late_key, malloc(1000));
    return NULL;
}

static void test_thread_exit(void)
{
    REQUIRE(pthread_key_create(&late_key, late_destructor) == 0);
    sh_heap_stats a, b;
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 300; i++) {
            late_block = malloc(3000);
            pthread_t t;
            REQUIRE(pthread_create(&t, NULL, short_thread, NULL) == 0);
            pthread_join(t, NULL);
            CHECK(late_block == NULL);
        }
        REQUIRE(heap_stats(round ? &b : &a) == 0);
    }
    /* exited threads leave nothing behind: the second round of 300 threads
     * takes no further spans (LABs and their spans are reused) */
    CHECK(b.spans_carved <= a.spans_carved + 1);
    CHECK(b.live_bytes <= a.live_bytes + 4096);
    CHECK_EQ(atomic_load(&stress_errors), 0);
}

/* ---- fork ------------------------------------------------------------------ */

static _Atomic int fork_stop;

static void *busy_thread(void *arg)
{
    uint64_t s = (uintptr_t)arg + 17;
    void *v[64] = {0};
    while (!atomic_load(&fork_stop)) {
        uint64_t r = rng_next(&s);
        int i = (int)(r % 64);
        free(v[i]);
        size_t n = (r >> 8) % 4 == 0 ? (size_t)(r >> 20) % (2u << 20) : (size_t)(r >> 20) % 2000;
        v[i] = malloc(n);
        if (v[i] && n)
            ((char *)v[i])[n - 1] = 1;
    }
    for (int i = 0; i < 64; i++)
        free(v[i]);
    return NULL;
}

static void *child_thread(void *arg)
{
    free(arg);
    for (int i = 0; i < 1000; i++)
        free(malloc((size_t)i * 10));
    return malloc(10);
}

static void test_fork(void)
{
    pthread_t t[2];
    for (uintptr_t i = 0; i < 2; i++)
        REQUIRE(pthread_create(&t[i], NULL, busy_thread, (void *)i) == 0);
    void *parent_block = malloc(500);
    for (int round = 0; round < 40; round++) {
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            alarm(20); /* a deadlock in the child fails the test */
            free(parent_block);
            void *v[100];
            for (int i = 0; i < 100; i++)
                v[i] = malloc((size_t)i * 100 + (i % 10 == 0 ? (3u << 20) : 0));
            pthread_t ct;
            if (pthread_create(&ct, NULL, child_thread, malloc(77)) != 0)
                _exit(2);
            void *r;
            pthread_join(ct, &r);
            free(r);
            for (int i = 0; i < 100; i++)
                free(v[i]);
            _exit(heap_owns(v) ? 3 : 0); /* v is on the stack: not owned */
        }
        int st = 0;
        REQUIRE(waitpid(pid, &st, 0) == pid);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    atomic_store(&fork_stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    free(parent_block);
}

int main(void)
{
    alarm(120);
    test_in_use();
    test_api();
    test_threads();
    test_thread_exit();
    test_fork();
    if (t_failures) {
        fprintf(stderr, "test_malloc: %d failures\n", t_failures);
        return 1;
    }
    printf("test_malloc: ok\n");
    return 0;
}
