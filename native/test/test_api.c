/*
 * test_api.c — every public function and every error code of spanheap.h:
 * size classes and their geometry, alignment, usable size, the free mark,
 * bad frees, batch calls, statistics, byte limit, arena exhaustion, several
 * heaps, destroy then create.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "spanheap.h"
#include "test_util.h"

/* Lower bound of the default reservation: 1 TiB, 64 GiB under TSan, less in
 * the qemu-user run (native/Makefile, test-aarch64, says why). */
#ifndef SH_TEST_MIN_RESERVE
#define SH_TEST_MIN_RESERVE ((size_t)64 << 30)
#endif

static int last_cb_error;
static void *last_cb_ptr;
static int cb_calls;

static void on_error(sh_heap *h, int err, void *p, void *ctx)
{
    (void)h;
    (void)ctx;
    last_cb_error = err;
    last_cb_ptr = p;
    cb_calls++;
}

static sh_heap *heap_with(size_t reserve, size_t limit)
{
    sh_config cfg;
    sh_config_init(&cfg);
    cfg.reserve_bytes = reserve;
    cfg.byte_limit = limit;
    cfg.on_error = on_error;
    sh_heap *h = sh_heap_create(&cfg);
    REQUIRE(h != NULL);
    return h;
}

/* The virtual span holding arena address p, by the rule of spanheap.h
 * (sh_layout): bit band_shift set means the small band. */
static uint64_t vspan_size(const sh_layout *L, const void *p)
{
    return ((uintptr_t)p >> L->band_shift) & 1 ? L->small_span_size : L->span_size;
}

static uintptr_t vspan_of(const sh_layout *L, const void *p)
{
    return (uintptr_t)p & ~(uintptr_t)(vspan_size(L, p) - 1);
}

static uint64_t word1(const void *p)
{
    return ((const uint64_t *)p)[1];
}

static void test_abi_version(void)
{
    CHECK_EQ(sh_abi_version(), SH_ABI_VERSION);
    CHECK_EQ(sh_abi_sizeof(SH_STRUCT_CONFIG), sizeof(sh_config));
    CHECK_EQ(sh_abi_sizeof(SH_STRUCT_CLASS_INFO), sizeof(sh_class_info));
    CHECK_EQ(sh_abi_sizeof(SH_STRUCT_LAYOUT), sizeof(sh_layout));
    CHECK_EQ(sh_abi_sizeof(SH_STRUCT_HEAP_STATS), sizeof(sh_heap_stats));
    CHECK_EQ(sh_abi_sizeof(0), 0);
    CHECK_EQ(sh_abi_sizeof(SH_STRUCT_HEAP_STATS + 1), 0);
}

/* One name per code, the same for the code and its negation (the form an
 * int-returning call gives back). */
static void test_error_names(void)
{
    static const char *const names[] = {"SH_OK", "SH_E_INVALID", "SH_E_NOMEM", "SH_E_LIMIT",
                                        "SH_E_NOT_OWNED", "SH_E_DOUBLE_FREE", "SH_E_INTERIOR"};
    for (int c = SH_OK; c <= SH_E_INTERIOR; c++) {
        CHECK(strcmp(sh_error_name(c), names[c]) == 0);
        CHECK(strcmp(sh_error_name(-c), names[c]) == 0);
    }
    CHECK(strcmp(sh_error_name(SH_E_INTERIOR + 1), "SH_E_UNKNOWN") == 0);
    CHECK(strcmp(sh_error_name(INT_MIN), "SH_E_UNKNOWN") == 0);
    /* the sign rule: a failing int-returning call gives the negated code */
    sh_class_info ci;
    CHECK(strcmp(sh_error_name(sh_class_get(-1, &ci)), "SH_E_INVALID") == 0);
}

static void test_classes(void)
{
    int n = sh_class_count();
    CHECK(n > 0 && n <= SH_MAX_CLASSES);
    sh_class_info ci, prev = {0};
    CHECK_EQ(sh_class_get(-1, &ci), -SH_E_INVALID);
    CHECK_EQ(sh_class_get(n, &ci), -SH_E_INVALID);
    CHECK_EQ(sh_class_of(0), 0);
    CHECK_EQ(sh_class_of(16), 0);
    CHECK_EQ(sh_class_of(17), 1);
    CHECK_EQ(sh_class_of((size_t)1 << 20), n - 1);
    CHECK_EQ(sh_class_of(((size_t)1 << 20) + 1), -SH_E_INVALID);
    for (int c = 0; c < n; c++) {
        REQUIRE(sh_class_get(c, &ci) == SH_OK);
        CHECK(ci.block_size % 16 == 0);
        CHECK(ci.block_size > prev.block_size);
        CHECK(ci.block_count >= 1);
        CHECK(ci.payload_offset >= 64);
        CHECK((uint64_t)ci.payload_offset + (uint64_t)ci.block_count * ci.block_size <= ci.real_span_size);
        CHECK(ci.real_span_size <= (2u << 20));
        CHECK_EQ(sh_class_of(ci.block_size), c);
        if (c > 0)
            CHECK_EQ(sh_class_of(prev.block_size + 1), c);
        /* at most 25% internal fragmentation above 128 bytes */
        if (prev.block_size >= 128)
            CHECK((double)ci.block_size / (prev.block_size + 1) <= 1.25);
        prev = ci;
    }
    CHECK(prev.block_size >= (1u << 20));
}

static void test_alloc_free_every_class(void)
{
    sh_heap *h = heap_with(0, 0);
    sh_layout L;
    sh_heap_layout(h, &L);
    CHECK(L.arena_base % (L.span_size * 2) == 0 && L.arena_base % ((uint64_t)2 << L.band_shift) == 0);
    CHECK(L.small_span_size < L.span_size && (L.small_span_size & (L.small_span_size - 1)) == 0);
    CHECK(L.arena_size >= (uint64_t)SH_TEST_MIN_RESERVE);
    CHECK_EQ(L.max_small_size, 1 << 20);
    CHECK(L.free_key != 0);
    int n = sh_class_count();
    void *ptrs[SH_MAX_CLASSES];
    for (int c = 0; c < n; c++) {
        sh_class_info ci;
        sh_class_get(c, &ci);
        void *p = sh_alloc(h, ci.block_size);
        REQUIRE(p != NULL);
        CHECK((uintptr_t)p % 16 == 0);
        CHECK_EQ(sh_usable_size(h, p), ci.block_size);
        CHECK_EQ(word1(p), 0);
        memset(p, 0xab, ci.block_size);
        /* span header, as the Java fast path reads it */
        uintptr_t span = vspan_of(&L, p);
        CHECK_EQ(*(uint32_t *)span, SH_SPAN_MAGIC);
        /* real spans up to 64 KiB in the small band, the others in the large */
        CHECK_EQ(vspan_size(&L, p), ci.real_span_size <= L.small_span_size ? L.small_span_size : L.span_size);
        CHECK_EQ(*(uint16_t *)(span + 4), c);
        CHECK(((uintptr_t)p - span - ci.payload_offset) % ci.block_size == 0);
        /* readable below the frontier */
        uint64_t frontier = atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)L.frontier_addr,
                                                 memory_order_acquire);
        CHECK((uintptr_t)p + ci.block_size <= frontier);
        ptrs[c] = p;
    }
    sh_heap_stats st;
    sh_stats(h, &st);
    for (int c = 0; c < n; c++) {
        CHECK_EQ(st.class_live_blocks[c], 1);
        CHECK_EQ(st.class_spans[c], 1);
    }
    CHECK_EQ(st.spans_hot, n);
    for (int c = 0; c < n; c++) {
        CHECK_EQ(sh_free_checked(h, ptrs[c]), SH_OK);
        CHECK_EQ(word1(ptrs[c]), L.free_key ^ (uint64_t)(uintptr_t)ptrs[c]);
        CHECK_EQ(sh_usable_size(h, ptrs[c]), 0);
    }
    sh_stats(h, &st);
    CHECK_EQ(st.live_bytes, 0);
    /* size 0 */
    void *z = sh_alloc(h, 0);
    CHECK(z != NULL);
    CHECK_EQ(sh_usable_size(h, z), 16);
    sh_free(h, z);
    sh_heap_destroy(h);
}

static void test_aligned(void)
{
    sh_heap *h = heap_with(0, 0);
    size_t sizes[] = {0, 1, 16, 100, 1000, 5000, 70000, 1 << 20, (1 << 20) + 1};
    for (size_t a = 1; a <= ((size_t)1 << 16); a <<= 1) {
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            void *p = sh_alloc_aligned(h, sizes[i], a);
            REQUIRE(p != NULL);
            CHECK((uintptr_t)p % a == 0);
            CHECK((uintptr_t)p % 16 == 0);
            CHECK(sh_usable_size(h, p) >= sizes[i]);
            memset(p, 1, sizes[i]);
            CHECK_EQ(sh_free_checked(h, p), SH_OK);
        }
    }
    CHECK(sh_alloc_aligned(h, 16, 0) == NULL);
    CHECK_EQ(sh_last_error(), SH_E_INVALID);
    CHECK(sh_alloc_aligned(h, 16, 24) == NULL);
    CHECK_EQ(sh_last_error(), SH_E_INVALID);
    CHECK(sh_alloc(h, (size_t)-1) == NULL);
    CHECK_EQ(sh_last_error(), SH_E_INVALID);
    sh_heap_stats st;
    sh_stats(h, &st);
    CHECK_EQ(st.live_bytes, 0);
    CHECK_EQ(st.large_count, 0);
    sh_heap_destroy(h);
}

static void test_bad_frees(void)
{
    sh_heap *h = heap_with(0, 0);
    sh_heap *other = heap_with(0, 0);
    int stack_var = 0;
    void *m = malloc(64);
    void *p = sh_alloc(h, 64);
    void *q = sh_alloc(h, 64);
    REQUIRE(p && q);
    memset(p, 0x5a, 64);
    sh_layout L;
    sh_heap_layout(h, &L);

    CHECK_EQ(sh_free_checked(h, NULL), SH_OK);
    CHECK_EQ(sh_free_checked(h, &stack_var), -SH_E_NOT_OWNED);
    CHECK_EQ(sh_last_error(), SH_E_NOT_OWNED);
    CHECK_EQ(sh_free_checked(h, m), -SH_E_NOT_OWNED);
    CHECK_EQ(sh_free_checked(other, p), -SH_E_NOT_OWNED);
    CHECK_EQ(sh_free_checked(h, (char *)p + 16), -SH_E_INTERIOR);
    CHECK_EQ(sh_free_checked(h, (char *)p + 1), -SH_E_INTERIOR);
    uintptr_t span = vspan_of(&L, p);
    CHECK_EQ(sh_free_checked(h, (void *)(span + 8)), -SH_E_NOT_OWNED);       /* header */
    CHECK_EQ(sh_free_checked(h, (void *)(uintptr_t)(L.arena_base + L.arena_size - 64)),
             -SH_E_NOT_OWNED);                                              /* beyond frontier */
    CHECK_EQ(sh_free_checked(h, (void *)(span + vspan_size(&L, p) - 64)), -SH_E_NOT_OWNED); /* past real span */
    /* never handed out: beyond the bump index, or in the chunk the LAB has
     * already moved to its local list (free-marked, so a double free) */
    CHECK_EQ(sh_free_checked(h, (char *)q + 64 * 200), -SH_E_NOT_OWNED);
    CHECK_EQ(sh_free_checked(h, (char *)q + 64 * 10), -SH_E_DOUBLE_FREE);
    /* nothing was modified */
    for (int i = 0; i < 64; i++)
        CHECK_EQ(((unsigned char *)p)[i], 0x5a);
    CHECK_EQ(sh_usable_size(h, p), 64);
    CHECK_EQ(sh_usable_size(h, (char *)p + 16), 0);
    CHECK_EQ(sh_usable_size(h, &stack_var), 0);

    CHECK_EQ(sh_free_checked(h, p), SH_OK);
    CHECK_EQ(sh_free_checked(h, p), -SH_E_DOUBLE_FREE);
    CHECK_EQ(sh_last_error(), SH_E_DOUBLE_FREE);
    /* sh_free reports through on_error and otherwise ignores */
    cb_calls = 0;
    sh_free(h, p);
    CHECK_EQ(cb_calls, 1);
    CHECK_EQ(last_cb_error, SH_E_DOUBLE_FREE);
    CHECK(last_cb_ptr == p);
    sh_free(h, &stack_var);
    CHECK_EQ(last_cb_error, SH_E_NOT_OWNED);
    sh_free(h, (char *)q + 32);
    CHECK_EQ(last_cb_error, SH_E_INTERIOR);
    CHECK_EQ(cb_calls, 3);
    /* the heap still works and hands p out again */
    void *r = sh_alloc(h, 64);
    CHECK(r == p);
    CHECK_EQ(word1(r), 0);
    sh_free(h, r);
    sh_free(h, q);
    CHECK_EQ(cb_calls, 3);

    /* large objects */
    /* over SH_LARGE_CACHE_ONE: unmapped at once, nothing remembers it */
    void *huge = sh_alloc(h, (size_t)40 << 20);
    REQUIRE(huge != NULL);
    CHECK_EQ(sh_free_checked(h, huge), SH_OK);
    CHECK_EQ(sh_free_checked(h, huge), -SH_E_NOT_OWNED);
    void *big = sh_alloc(h, (size_t)3 << 20);
    REQUIRE(big != NULL);
    memset(big, 7, (size_t)3 << 20);
    CHECK_EQ(sh_usable_size(h, big), (size_t)3 << 20);
    CHECK_EQ(sh_free_checked(h, (char *)big + 4096), -SH_E_NOT_OWNED);
    CHECK_EQ(sh_free_checked(h, big), SH_OK);
    /* kept for reuse: a second free is recognised as a double free */
    CHECK_EQ(sh_free_checked(h, big), -SH_E_DOUBLE_FREE);
    CHECK_EQ(sh_usable_size(h, big), 0);

    /* a freed large mapping is kept and serves the next request: the
     * smallest that holds it (tail unmapped), else the largest, grown; it
     * counts as committed, not as live */
    sh_heap_stats lst;
    sh_stats(h, &lst);
    CHECK_EQ(lst.large_bytes, 0);
    CHECK(lst.committed_bytes >= ((size_t)3 << 20));
    void *again = sh_alloc(h, ((size_t)3 << 20) - 100);
    CHECK(again == big);
    CHECK_EQ(sh_usable_size(h, again), (size_t)3 << 20);
    void *bigger = sh_alloc(h, (size_t)4 << 20); /* 3 MiB kept one is too small */
    REQUIRE(bigger != NULL);
    CHECK(bigger != big);
    CHECK_EQ(sh_free_checked(h, bigger), SH_OK);
    void *smaller = sh_alloc(h, (size_t)2 << 20); /* the 4 MiB kept one, trimmed */
    REQUIRE(smaller != NULL);
    CHECK(smaller == bigger);
    CHECK_EQ(sh_usable_size(h, smaller), (size_t)2 << 20);
    memset(smaller, 0x5a, (size_t)2 << 20);
    CHECK_EQ(sh_free_checked(h, smaller), SH_OK);
    /* none kept holds 3 MiB: the 2 MiB one grows (mremap), its pages along */
    void *grown = sh_alloc(h, (size_t)3 << 20);
    REQUIRE(grown != NULL);
    CHECK_EQ(sh_usable_size(h, grown), (size_t)3 << 20);
    CHECK_EQ(((unsigned char *)grown)[0], 0x5a);
    CHECK_EQ(((unsigned char *)grown)[((size_t)2 << 20) - 1], 0x5a);
    CHECK_EQ(((unsigned char *)grown)[((size_t)3 << 20) - 1], 0); /* the new part */
    memset(grown, 1, (size_t)3 << 20);
    sh_stats(h, &lst);
    CHECK_EQ(lst.large_bytes, (size_t)6 << 20); /* grown and again */
    CHECK_EQ(sh_free_checked(h, grown), SH_OK);
    CHECK_EQ(sh_free_checked(h, again), SH_OK);
    CHECK_EQ(sh_free_checked(h, again), -SH_E_DOUBLE_FREE);

    /* a span returned to the pool: its old block is reported, not touched */
    sh_class_info ci;
    sh_class_get(sh_class_of(100000), &ci);
    void *x = sh_alloc(h, 100000);
    REQUIRE(x);
    void *y = sh_alloc(h, 100000); /* x's span stays hot; fill it so it retires */
    REQUIRE(y);
    sh_free(h, x);
    sh_free(h, y);
    free(m);
    sh_heap_destroy(other);
    sh_heap_destroy(h);
}

static void test_eager_return_and_stats(void)
{
    sh_heap *h = heap_with(0, 0);
    sh_layout L;
    sh_heap_layout(h, &L);
    enum { N = 20000 };
    static void *v[N];
    size_t sz = 48;
    for (int i = 0; i < N; i++) {
        v[i] = sh_alloc(h, sz);
        REQUIRE(v[i]);
        memset(v[i], i & 0xff, sz);
    }
    sh_heap_stats st;
    sh_stats(h, &st);
    int cls = sh_class_of(sz);
    CHECK_EQ(st.class_live_blocks[cls], N);
    CHECK_EQ(st.live_bytes, (uint64_t)N * 48);
    CHECK(st.class_spans[cls] > 1);
    CHECK_EQ(st.spans_hot, 1);
    CHECK_EQ(st.spans_floating, st.class_spans[cls] - 1);
    uint64_t spans = st.class_spans[cls];
    CHECK(st.limited_bytes > 0);
    for (int i = 0; i < N; i++)
        sh_free(h, v[i]);
    sh_stats(h, &st);
    CHECK_EQ(st.live_bytes, 0);
    CHECK_EQ(st.class_live_blocks[cls], 0);
    /* every non-hot span went back at once */
    CHECK_EQ(st.class_spans[cls], 1);
    CHECK_EQ(st.spans_free, spans - 1);
    CHECK_EQ(st.spans_floating + st.spans_reusable, 0);
    CHECK(st.committed_bytes >= st.resident_bytes / 2);

    /* large real spans are madvised when they enter the pool, once the
     * pool keeps SH_POOL_KEEP (32 MiB) of them resident: 320 blocks of
     * 224 KiB fill about 36 spans of 2 MiB */
    uint64_t before = st.madvise_calls;
    for (int i = 0; i < 320; i++)
        v[i] = sh_alloc(h, 200000);
    for (int i = 0; i < 320; i++)
        sh_free(h, v[i]);
    sh_stats(h, &st);
    CHECK(st.madvise_calls > before);
    CHECK_EQ(st.live_bytes, 0);
    CHECK(st.spans_carved >= st.spans_free);

    /* spans are reused across classes sharing a real-span size */
    uint64_t carved = st.spans_carved;
    for (int i = 0; i < 64; i++)
        v[i] = sh_alloc(h, 150000);
    for (int i = 0; i < 64; i++)
        sh_free(h, v[i]);
    sh_stats(h, &st);
    CHECK_EQ(st.spans_carved, carved);
    sh_heap_destroy(h);
}

static void test_batch(void)
{
    sh_heap *h = heap_with(0, 0);
    sh_layout L;
    sh_heap_layout(h, &L);
    enum { N = 3000 };
    static void *v[N];
    int cls = sh_class_of(256);
    int got = 0;
    while (got < N) {
        int r = sh_alloc_batch(h, cls, v + got, N - got > 64 ? 64 : N - got);
        REQUIRE(r >= 1);
        got += r;
    }
    for (int i = 0; i < N; i++) {
        CHECK_EQ(word1(v[i]), L.free_key ^ (uint64_t)(uintptr_t)v[i]); /* cached free */
        CHECK_EQ(sh_usable_size(h, v[i]), 0);
        CHECK_EQ(sh_free_checked(h, v[i]), -SH_E_DOUBLE_FREE);
    }
    sh_heap_stats st;
    sh_stats(h, &st);
    CHECK_EQ(st.class_live_blocks[cls], N); /* Java-cached blocks count as live */
    CHECK_EQ(sh_free_batch(h, v, N), SH_OK);
    sh_stats(h, &st);
    CHECK_EQ(st.live_bytes, 0);
    CHECK_EQ(st.spans_floating + st.spans_reusable, 0);
    /* errors */
    CHECK_EQ(sh_alloc_batch(h, -1, v, 4), -SH_E_INVALID);
    CHECK_EQ(sh_alloc_batch(h, sh_class_count(), v, 4), -SH_E_INVALID);
    CHECK_EQ(sh_alloc_batch(h, cls, v, 0), -SH_E_INVALID);
    CHECK_EQ(sh_alloc_batch(h, cls, NULL, 4), -SH_E_INVALID);
    CHECK_EQ(sh_free_batch(h, NULL, 3), -SH_E_INVALID);
    CHECK_EQ(sh_free_batch(h, v, -1), -SH_E_INVALID);
    CHECK_EQ(sh_free_batch(h, v, 0), SH_OK);
    int stack_var;
    int r = sh_alloc_batch(h, cls, v, 2);
    REQUIRE(r == 2);
    void *mixed[3] = {v[0], &stack_var, v[1]};
    CHECK_EQ(sh_free_batch(h, mixed, 3), -SH_E_NOT_OWNED);
    sh_stats(h, &st);
    CHECK_EQ(st.live_bytes, 0); /* the good ones were taken back */
    /* mixed classes in one batch */
    for (int i = 0; i < 100; i++) {
        CHECK_EQ(sh_alloc_batch(h, i % 10, v + i, 1), 1);
    }
    CHECK_EQ(sh_free_batch(h, v, 100), SH_OK);
    sh_stats(h, &st);
    CHECK_EQ(st.live_bytes, 0);
    sh_heap_destroy(h);
}

/* The Java cache's refill and drain: the magazine's top and the shift of the
 * kept half are done by the call itself. */
static void test_cache_refill_drain(void)
{
    sh_heap *h = heap_with(0, 0);
    int cls = sh_class_of(64);
    int64_t m[1 + 1 + 40]; /* m[1] is the top; blocks from index 2 */
    memset(m, 0, sizeof m);
    enum { TOP = 1, BASE = 2 };
    int got = sh_cache_refill(h, cls, m, BASE, 32, TOP);
    CHECK_EQ(got, 32);
    CHECK_EQ(m[TOP], BASE + 32);
    for (int i = 0; i < 32; i++)
        CHECK_EQ(sh_usable_size(h, (void *)(uintptr_t)m[BASE + i]), 0); /* cached free */
    int64_t kept0 = m[BASE + 12];
    CHECK_EQ(sh_cache_drain(h, m, BASE, 12, 32, TOP), SH_OK); /* the 12 oldest go back */
    CHECK_EQ(m[TOP], BASE + 20);
    CHECK_EQ(m[BASE], kept0); /* the rest moved down */
    CHECK_EQ(sh_cache_drain(h, m, BASE, 20, 20, TOP), SH_OK); /* all of them */
    CHECK_EQ(m[TOP], BASE);
    sh_heap_stats st;
    sh_stats(h, &st);
    CHECK_EQ(st.class_live_blocks[cls], 0);
    int64_t before = m[TOP];
    CHECK_EQ(sh_cache_refill(h, -1, m, BASE, 4, TOP), -SH_E_INVALID);
    CHECK_EQ(sh_cache_refill(h, cls, m, BASE, 0, TOP), -SH_E_INVALID);
    CHECK_EQ(sh_cache_refill(h, cls, NULL, BASE, 4, TOP), -SH_E_INVALID);
    CHECK_EQ(m[TOP], before); /* unchanged on error */
    CHECK_EQ(sh_cache_drain(h, m, BASE, 3, 2, TOP), -SH_E_INVALID);
    CHECK_EQ(sh_cache_drain(h, m, -1, 0, 0, TOP), -SH_E_INVALID);
    sh_heap_destroy(h);
}

static void test_byte_limit(void)
{
    size_t limit = (size_t)1 << 20;
    sh_heap *h = heap_with(0, limit);
    enum { N = 1000 };
    static void *v[N];
    int n = 0;
    while (n < N) {
        v[n] = sh_alloc(h, 20000);
        if (!v[n])
            break;
        n++;
    }
    CHECK(n > 0 && n < N);
    CHECK_EQ(sh_last_error(), SH_E_LIMIT);
    sh_heap_stats st;
    sh_stats(h, &st);
    CHECK(st.limited_bytes <= limit);
    CHECK_EQ(st.limit_bytes, limit);
    CHECK(sh_alloc(h, (size_t)2 << 20) == NULL);
    CHECK_EQ(sh_last_error(), SH_E_LIMIT);
    CHECK_EQ(sh_alloc_batch(h, sh_class_of(20000), v + n, 10), -SH_E_LIMIT);
    /* still usable: small classes in the hot span, and after frees */
    for (int i = 0; i < n; i++)
        sh_free(h, v[i]);
    void *p = sh_alloc(h, 20000);
    CHECK(p != NULL);
    void *big = sh_alloc(h, (size_t)1 << 19 | 1); /* large object within the limit */
    CHECK(big == NULL || sh_free_checked(h, big) == SH_OK);
    sh_free(h, p);
    sh_stats(h, &st);
    CHECK_EQ(st.live_bytes, 0);
    sh_heap_destroy(h);
}

/* Each band has its own half of the arena: exhausting one leaves the other
 * usable. 4 MiB rounds up to one period: 8 large-band spans (2 MiB) and 128
 * small-band ones (128 KiB). */
static void test_exhaustion(void)
{
    sh_heap *h = heap_with((size_t)4 << 20, 0);
    sh_heap_stats st;
    sh_stats(h, &st);
    CHECK_EQ(st.reserved_bytes, (uint64_t)32 << 20);
    sh_layout L;
    sh_heap_layout(h, &L);
    uint64_t nlarge = L.arena_size / 2 / L.span_size, nsmall = L.arena_size / 2 / L.small_span_size;
    CHECK_EQ(nlarge, 8);
    CHECK_EQ(nsmall, 128);

    /* the large band: one 1 MiB block per 2 MiB span */
    void *big[9];
    for (uint64_t i = 0; i < nlarge; i++) {
        big[i] = sh_alloc(h, (size_t)1 << 20);
        REQUIRE(big[i]);
        CHECK_EQ(vspan_size(&L, big[i]), L.span_size);
    }
    CHECK(sh_alloc(h, (size_t)1 << 20) == NULL);
    CHECK_EQ(sh_last_error(), SH_E_NOMEM);
    void *mid = sh_alloc(h, 5000); /* a 64 KiB span: the small band still serves */
    CHECK(mid != NULL);
    /* the small band: 1 KiB blocks, 63 to a 64 KiB span */
    int cls = sh_class_of(1024);
    sh_class_info ci;
    REQUIRE(sh_class_get(cls, &ci) == SH_OK);
    static void *small[128 * 64];
    unsigned n = 0;
    while (n < sizeof small / sizeof *small && (small[n] = sh_alloc(h, 1024)) != NULL) {
        CHECK_EQ(vspan_size(&L, small[n]), L.small_span_size);
        n++;
    }
    CHECK_EQ(sh_last_error(), SH_E_NOMEM);
    CHECK(n < sizeof small / sizeof *small);
    CHECK_EQ(n, (nsmall - 1) * ci.block_count); /* every small span but the 5000 B block's */
    CHECK_EQ(sh_alloc_batch(h, cls, &small[n], 1), -SH_E_NOMEM);
    sh_stats(h, &st);
    CHECK_EQ(st.spans_carved, nlarge + nsmall);
    /* large objects do not use the arena */
    void *obj = sh_alloc(h, (size_t)8 << 20);
    CHECK(obj != NULL);
    sh_free(h, obj);
    for (uint64_t i = 0; i < nlarge; i++)
        sh_free(h, big[i]);
    for (unsigned i = 0; i < n; i++)
        sh_free(h, small[i]);
    sh_free(h, mid);
    sh_stats(h, &st);
    CHECK_EQ(st.live_bytes, 0);
    /* freed spans are reused within their band */
    void *again = sh_alloc(h, (size_t)1 << 20);
    CHECK(again != NULL);
    sh_free(h, again);
    sh_heap_destroy(h);
}

static void *thread_error(void *arg)
{
    (void)arg;
    CHECK_EQ(sh_last_error(), 0);
    return NULL;
}

static void test_heaps_and_lifetime(void)
{
    sh_config bad;
    sh_config_init(&bad);
    CHECK(bad.reserve_bytes >= SH_TEST_MIN_RESERVE);
    bad.reuse_threshold_pct = 101;
    CHECK(sh_heap_create(&bad) == NULL);
    CHECK_EQ(sh_last_error(), SH_E_INVALID);
    pthread_t t;
    pthread_create(&t, NULL, thread_error, NULL); /* last error is per thread */
    pthread_join(t, NULL);

    for (int round = 0; round < 20; round++) {
        sh_heap *hs[4];
        void *p[4];
        for (int i = 0; i < 4; i++) {
            hs[i] = sh_heap_create(NULL);
            REQUIRE(hs[i]);
            p[i] = sh_alloc(hs[i], 32 + 16 * (size_t)i);
            REQUIRE(p[i]);
        }
        for (int i = 0; i < 4; i++) {
            CHECK_EQ(sh_free_checked(hs[(i + 1) % 4], p[i]), -SH_E_NOT_OWNED);
            CHECK_EQ(sh_usable_size(hs[i], p[i]), 32 + 16 * i);
        }
        /* destroy with live blocks: everything is unmapped */
        for (int i = 0; i < 4; i++)
            sh_heap_destroy(hs[i]);
    }
    sh_heap_destroy(NULL);

    /* default error report: one line on stderr, then the free is ignored */
    sh_heap *h = sh_heap_create(NULL);
    REQUIRE(h);
    int x;
    FILE *tmp = tmpfile();
    REQUIRE(tmp);
    fflush(stderr);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    sh_free(h, &x);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    char line[256] = {0};
    CHECK(fgets(line, sizeof line, tmp) != NULL);
    CHECK(strstr(line, "not owned") != NULL);
    CHECK(fgets(line, sizeof line, tmp) == NULL);
    fclose(tmp);
    CHECK_EQ(sh_last_error(), SH_E_NOT_OWNED);
    sh_heap_destroy(h);
}


/* ---- ownership across threads: remote frees, reusable spans, orphans ---- */

enum { RN = 5000 };
static void *rv[RN];
static sh_heap *rh;
static sem_t go_alloc, allocated, go_again, again_done, go_exit;

static void *owner_thread(void *arg)
{
    size_t sz = (size_t)(uintptr_t)arg;
    sem_wait(&go_alloc);
    for (int i = 0; i < RN; i++) {
        rv[i] = sh_alloc(rh, sz);
        REQUIRE(rv[i]);
        memset(rv[i], 0x33, sz);
    }
    sem_post(&allocated);
    sem_wait(&go_again);
    /* allocate again: must come from the reusable set, not new spans */
    for (int i = 0; i < RN; i += 10) {
        if (!rv[i]) {
            rv[i] = sh_alloc(rh, sz);
            REQUIRE(rv[i]);
        }
    }
    sem_post(&again_done);
    sem_wait(&go_exit);
    return NULL; /* exits owning spans with live blocks */
}

static void test_remote_and_orphans(void)
{
    rh = heap_with(0, 0);
    sem_init(&go_alloc, 0, 0);
    sem_init(&allocated, 0, 0);
    sem_init(&go_again, 0, 0);
    sem_init(&again_done, 0, 0);
    sem_init(&go_exit, 0, 0);
    size_t sz = 64;
    int cls = sh_class_of(sz);
    sh_class_info ci;
    sh_class_get(cls, &ci);
    pthread_t t;
    pthread_create(&t, NULL, owner_thread, (void *)(uintptr_t)sz);
    sem_post(&go_alloc);
    sem_wait(&allocated);
    sh_heap_stats st;
    sh_stats(rh, &st);
    uint64_t spans = st.class_spans[cls];
    CHECK(spans >= RN / ci.block_count);
    CHECK_EQ(st.spans_hot, 1);

    /* remote frees of 9 in 10 blocks: spans cross the threshold and become
     * reusable in the (live) owner's set */
    for (int i = 0; i < RN; i++) {
        if (i % 10) {
            CHECK_EQ(sh_free_checked(rh, rv[i]), SH_OK);
            rv[i] = NULL;
        }
    }
    sh_stats(rh, &st);
    CHECK(st.spans_reusable >= spans - 2);
    CHECK_EQ(st.class_live_blocks[cls], (RN + 9) / 10);
    uint64_t carved = st.spans_carved;
    sem_post(&go_again);
    sem_wait(&again_done);
    sh_stats(rh, &st);
    CHECK_EQ(st.spans_carved, carved); /* reused, not carved */

    /* remote frees of everything outside one span: eager return */
    /* free all but the blocks of one span, which the owner takes with it */
    void *keep = NULL;
    for (int i = 0; i < RN; i++) {
        if (!rv[i])
            continue;
        if (!keep) {
            keep = rv[i];
            continue;
        }
        sh_layout L;
        sh_heap_layout(rh, &L);
        if (vspan_of(&L, rv[i]) == vspan_of(&L, keep))
            continue; /* same span as keep */
        CHECK_EQ(sh_free_checked(rh, rv[i]), SH_OK);
        rv[i] = NULL;
    }
    sh_stats(rh, &st);
    CHECK(st.class_spans[cls] <= 2); /* keep's span and the owner's hot span */
    CHECK_EQ(st.spans_reusable + st.spans_floating + st.spans_hot, st.class_spans[cls]);

    /* the owner exits: its spans become orphans, freed by this thread */
    sem_post(&go_exit);
    pthread_join(t, NULL);
    sh_stats(rh, &st);
    CHECK_EQ(st.spans_hot, 0);
    for (int i = 0; i < RN; i++)
        if (rv[i])
            CHECK_EQ(sh_free_checked(rh, rv[i]), SH_OK);
    sh_stats(rh, &st);
    CHECK_EQ(st.live_bytes, 0);
    CHECK_EQ(st.spans_hot + st.spans_floating + st.spans_reusable, 0);
    CHECK_EQ(st.spans_free, st.spans_carved);
    CHECK_EQ(st.limited_bytes, 0);
    sh_heap_destroy(rh);
}

/* Short-lived threads that each leave one live block behind (mimalloc-bench's
 * mleak): the span an exiting thread leaves goes to the heap's orphanage,
 * and the next thread's first allocation of that class takes it, so the
 * blocks of 200 such threads share a span or two instead of holding 200. */
enum { ORPHAN_THREADS = 200 };
static void *orphan_blocks[ORPHAN_THREADS];

static void *leave_one_block(void *arg)
{
    uintptr_t i = (uintptr_t)arg;
    orphan_blocks[i] = sh_alloc(rh, 64);
    REQUIRE(orphan_blocks[i]);
    memset(orphan_blocks[i], (int)i, 64);
    return NULL;
}

static void test_exited_threads_leave_spans_to_the_next(void)
{
    rh = heap_with(0, 0);
    int cls = sh_class_of(64);
    sh_class_info ci;
    sh_class_get(cls, &ci);
    for (uintptr_t i = 0; i < ORPHAN_THREADS; i++) {
        pthread_t t;
        REQUIRE(pthread_create(&t, NULL, leave_one_block, (void *)i) == 0);
        pthread_join(t, NULL);
    }
    sh_heap_stats st;
    sh_stats(rh, &st);
    CHECK_EQ(st.class_live_blocks[cls], ORPHAN_THREADS);
    CHECK(st.class_spans[cls] <= ORPHAN_THREADS / ci.block_count + 1);
    CHECK_EQ(st.spans_hot, 0);
    for (int i = 0; i < ORPHAN_THREADS; i++) {
        for (int j = 0; j < 64; j++)
            CHECK_EQ(((unsigned char *)orphan_blocks[i])[j], (unsigned char)i);
        CHECK_EQ(sh_free_checked(rh, orphan_blocks[i]), SH_OK);
    }
    sh_stats(rh, &st);
    CHECK_EQ(st.live_bytes, 0);
    CHECK_EQ(st.spans_hot + st.spans_floating + st.spans_reusable, 0);
    CHECK_EQ(st.spans_free, st.spans_carved);
    sh_heap_destroy(rh);
}

/* The second tier of reuse: spans a thread retired full and that are now
 * half free (under the 80% that makes a span reusable) serve its next
 * refills before the pool or the arena hands out another span. */
static void test_retired_half_free_spans_serve_the_next_refill(void)
{
    sh_heap *h = heap_with(0, 0);
    int cls = sh_class_of(64);
    sh_class_info ci;
    sh_class_get(cls, &ci);
    uint32_t bc = ci.block_count;
    REQUIRE(bc >= 8);
    size_t n = (size_t)bc * 3;
    void **v = calloc(n, sizeof *v);
    REQUIRE(v);
    for (size_t i = 0; i < n; i++)
        REQUIRE((v[i] = sh_alloc(h, 64)));
    sh_heap_stats st;
    sh_stats(h, &st);
    CHECK_EQ(st.class_spans[cls], 3);
    /* every other block of the first two spans (both retired, full) */
    for (size_t i = 0; i < 2 * (size_t)bc; i += 2) {
        CHECK_EQ(sh_free_checked(h, v[i]), SH_OK);
        v[i] = NULL;
    }
    /* as many blocks as were freed: they fit in the two half-free spans */
    size_t more = (size_t)bc;
    void **w = calloc(more, sizeof *w);
    REQUIRE(w);
    for (size_t i = 0; i < more; i++)
        REQUIRE((w[i] = sh_alloc(h, 64)));
    sh_stats(h, &st);
    CHECK_EQ(st.class_spans[cls], 3);
    for (size_t i = 0; i < n; i++)
        if (v[i])
            CHECK_EQ(sh_free_checked(h, v[i]), SH_OK);
    for (size_t i = 0; i < more; i++)
        CHECK_EQ(sh_free_checked(h, w[i]), SH_OK);
    free(v);
    free(w);
    sh_heap_destroy(h);
}

/* Every block freed by the calling thread: nothing live, and the class
 * holds only its hot span (sh_stats pushes the caller's chains). */
static void check_class_back_to_its_hot_span(sh_heap *h, int cls)
{
    sh_heap_stats st;
    sh_stats(h, &st);
    CHECK_EQ(st.live_bytes, 0);
    CHECK_EQ(st.class_spans[cls], 1);
    CHECK_EQ(st.spans_floating + st.spans_reusable, 0);
}

/* The owner's frees into a span it retired wait in its LAB's chain for that
 * span (span.c, "Frees into the LAB's retired spans") and meet the remote
 * frees of the same span: the span goes back to the pool once the owner's
 * chain is pushed (here by its sh_stats), a second free of a waiting block
 * is still a double free, and a thread that frees nothing of its own sees
 * the span held until then. */
static void *free_odd_blocks(void *arg)
{
    void **v = arg; /* NULL-terminated */
    for (size_t i = 0; v[i]; i++)
        if (i % 2)
            CHECK_EQ(sh_free_checked(rh, v[i]), SH_OK);
    return NULL;
}

static void test_own_frees_into_retired_spans_meet_remote_frees(void)
{
    rh = heap_with(0, 0);
    sh_layout L;
    sh_heap_layout(rh, &L);
    int cls = sh_class_of(64);
    sh_class_info ci;
    sh_class_get(cls, &ci);
    uint32_t bc = ci.block_count;
    REQUIRE(bc >= 8);
    size_t n = (size_t)bc * 3;
    void **v = calloc(n + 2, sizeof *v);
    REQUIRE(v);
    for (size_t i = 0; i < n; i++)
        REQUIRE((v[i] = sh_alloc(rh, 64)));
    /* the blocks of the first span (retired full), with a NULL after them */
    void **first = calloc((size_t)bc + 2, sizeof *first);
    REQUIRE(first);
    size_t nf = 0;
    uintptr_t span0 = vspan_of(&L, v[0]);
    for (size_t i = 0; i < n; i++)
        if (vspan_of(&L, v[i]) == span0)
            first[nf++] = v[i], v[i] = NULL;
    CHECK_EQ(nf, bc);
    /* the owner frees the even ones: half a span, below the threshold */
    for (size_t i = 0; i < nf; i += 2) {
        CHECK_EQ(sh_free_checked(rh, first[i]), SH_OK);
    }
    CHECK_EQ(sh_free_checked(rh, first[0]), -SH_E_DOUBLE_FREE);
    /* another thread frees the odd ones: every block of the span is free */
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, free_odd_blocks, first) == 0);
    pthread_join(t, NULL);
    sh_heap_stats st;
    sh_stats(rh, &st); /* pushes this thread's chains */
    CHECK_EQ(st.class_live_blocks[cls], (uint64_t)2 * bc);
    CHECK_EQ(st.class_spans[cls], 2);
    CHECK_EQ(st.spans_floating, 1);
    for (size_t i = 0; i < n; i++)
        if (v[i])
            CHECK_EQ(sh_free_checked(rh, v[i]), SH_OK);
    check_class_back_to_its_hot_span(rh, cls);
    free(first);
    free(v);
    sh_heap_destroy(rh);
}

/* More spans retired than the ring holds: an entry taken for a new span
 * lets go of its old span first, so the owner's frees into the old span go
 * to that span, never into the chain of the span that took the entry. The
 * blocks are then allocated again and must not overlap. */
/* A thread that frees into its retired spans and then sleeps holds its
 * chains (span.c, sh_heap_sweep_chains): here the other half of a span is
 * freed by another thread, so only the sleeper's chain keeps the span. A
 * growing heap (a span carved from the arena, at most once per 10 ms) and
 * sh_trim push such chains, and the span goes back to the pool. */
static sem_t idle_freed, idle_go_exit;

static void *free_even_then_sleep(void *arg)
{
    void **v = arg; /* NULL-terminated */
    for (size_t i = 0; v[i]; i += 2) {
        CHECK_EQ(sh_free_checked(rh, v[i]), SH_OK);
        if (!v[i + 1])
            break;
    }
    sem_post(&idle_freed);
    sem_wait(&idle_go_exit);
    return NULL;
}

static void *alloc_blocks(void *arg)
{
    void **v = arg; /* v[0]: count, then the blocks */
    size_t n = (size_t)(uintptr_t)v[0];
    for (size_t i = 1; i <= n; i++)
        REQUIRE((v[i] = sh_alloc(rh, 64)));
    return NULL;
}

/* Allocates 3 spans of 64 B blocks in a thread of its own, gives the
 * blocks of the first span (NULL-terminated, in out) to a sleeper that
 * frees the even ones, frees the odd ones here; the span is then pinned. */
static pthread_t pin_one_span(sh_heap *h, void ***first_out, void ***rest_out, size_t *nrest)
{
    sh_layout L;
    sh_heap_layout(h, &L);
    sh_class_info ci;
    sh_class_get(sh_class_of(64), &ci);
    size_t n = (size_t)ci.block_count * 3;
    void **v = calloc(n + 1, sizeof *v);
    REQUIRE(v);
    v[0] = (void *)(uintptr_t)n;
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, alloc_blocks, v) == 0);
    pthread_join(t, NULL); /* its LAB is parked with the spans it retired */
    void **first = calloc(n + 1, sizeof *first), **rest = calloc(n + 1, sizeof *rest);
    REQUIRE(first && rest);
    size_t nf = 0, nr = 0;
    uintptr_t span0 = vspan_of(&L, v[1]);
    for (size_t i = 1; i <= n; i++) {
        if (vspan_of(&L, v[i]) == span0)
            first[nf++] = v[i];
        else
            rest[nr++] = v[i];
    }
    free(v);
    /* the sleeper takes the parked LAB, and with it the ring that names
     * span 0: its frees of the even blocks wait in its chain */
    REQUIRE(pthread_create(&t, NULL, free_even_then_sleep, first) == 0);
    sem_wait(&idle_freed);
    for (size_t i = 1; i < nf; i += 2)
        CHECK_EQ(sh_free_checked(h, first[i]), SH_OK);
    *first_out = first;
    *rest_out = rest;
    *nrest = nr;
    return t;
}

static void test_idle_threads_chains_are_swept(void)
{
    int cls = sh_class_of(64);
    sh_class_info ci;
    sh_class_get(cls, &ci);
    sem_init(&idle_freed, 0, 0);
    sem_init(&idle_go_exit, 0, 0);
    for (int how = 0; how < 2; how++) {
        rh = heap_with(0, 0);
        void **first, **rest;
        size_t nr;
        pthread_t t = pin_one_span(rh, &first, &rest, &nr);
        sh_heap_stats st;
        sh_stats(rh, &st);
        CHECK_EQ(st.class_live_blocks[cls], (uint64_t)nr);
        CHECK_EQ(st.class_spans[cls], 3); /* span 0 is pinned */
        if (how == 0) {
            sh_trim(rh);
        } else {
            /* a span carved from the arena more than 10 ms after the last
             * sweep: a class of another real size, so that the pool (which
             * holds nothing yet) cannot serve it */
            usleep(20000);
            void *big = sh_alloc(rh, 4000);
            REQUIRE(big);
            CHECK_EQ(sh_free_checked(rh, big), SH_OK);
        }
        sh_stats(rh, &st);
        CHECK_EQ(st.class_spans[cls], 2);
        sem_post(&idle_go_exit);
        pthread_join(t, NULL);
        for (size_t i = 0; i < nr; i++)
            CHECK_EQ(sh_free_checked(rh, rest[i]), SH_OK);
        sh_stats(rh, &st);
        CHECK_EQ(st.live_bytes, 0);
        free(first);
        free(rest);
        sh_heap_destroy(rh);
    }
}

static int ptr_cmp(const void *x, const void *y)
{
    uintptr_t a = (uintptr_t)*(void *const *)x, b = (uintptr_t)*(void *const *)y;
    return a < b ? -1 : a > b;
}

static void test_retired_ring_reuse_keeps_frees_in_their_span(void)
{
    sh_heap *h = heap_with(0, 0);
    int cls = sh_class_of(64);
    sh_class_info ci;
    sh_class_get(cls, &ci);
    uint32_t bc = ci.block_count;
    enum { SPANS = 20 }; /* more than the ring's 16 retired spans */
    size_t n = (size_t)bc * SPANS;
    void **v = calloc(n, sizeof *v);
    REQUIRE(v);
    for (size_t i = 0; i < n; i++) {
        REQUIRE((v[i] = sh_alloc(h, 64)));
        memset(v[i], (int)(i % 251), 64);
    }
    sh_heap_stats st;
    sh_stats(h, &st);
    CHECK_EQ(st.class_spans[cls], SPANS);
    /* half of the blocks of every span: owner frees, below the threshold */
    for (size_t i = 0; i < n; i += 2) {
        CHECK_EQ(sh_free_checked(h, v[i]), SH_OK);
        v[i] = NULL;
    }
    sh_stats(h, &st); /* pushes the chains */
    CHECK_EQ(st.class_live_blocks[cls], n / 2);
    CHECK_EQ(st.class_spans[cls], SPANS);
    /* allocate the freed half again: every block new to the caller and in
     * the class's geometry, and the live blocks keep their bytes */
    size_t m = n / 2;
    void **all = calloc(n, sizeof *all);
    REQUIRE(all);
    size_t na = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i])
            all[na++] = v[i];
    for (size_t i = 0; i < m; i++) {
        void *p = sh_alloc(h, 64);
        REQUIRE(p);
        CHECK_EQ(sh_usable_size(h, p), ci.block_size);
        memset(p, 0xee, 64);
        all[na++] = p;
    }
    qsort(all, na, sizeof *all, ptr_cmp);
    for (size_t i = 1; i < na; i++)
        CHECK((char *)all[i - 1] + ci.block_size <= (char *)all[i]);
    for (size_t i = 0; i < n; i++)
        if (v[i])
            for (int j = 0; j < 64; j++)
                CHECK_EQ(((unsigned char *)v[i])[j], (unsigned char)(i % 251));
    for (size_t i = 0; i < na; i++)
        CHECK_EQ(sh_free_checked(h, all[i]), SH_OK);
    check_class_back_to_its_hot_span(h, cls);
    free(v);
    free(all);
    sh_heap_destroy(h);
}

/* sh_trim gives back pooled spans kept resident and kept large mappings,
 * reports what it gave back, and finds nothing on a second call */
/* 64 blocks of 200 KB, written and freed: about 7 spans of 2 MiB, all kept
 * resident in the pool (under SH_POOL_KEEP). v holds 64 pointers. */
static void fill_pool_with_2mib_spans(sh_heap *h, void **v)
{
    for (int i = 0; i < 64; i++) {
        v[i] = sh_alloc(h, 200000);
        REQUIRE(v[i]);
        memset(v[i], 0x5a, 200000);
    }
    for (int i = 0; i < 64; i++)
        sh_free(h, v[i]);
}

static void test_trim(void)
{
    sh_heap *h = heap_with(0, 0);
    enum { N = 64 };
    static void *v[N];
    fill_pool_with_2mib_spans(h, v);
    /* a 4 MiB large object, freed: its mapping is kept for reuse */
    void *big = sh_alloc(h, (size_t)4 << 20);
    REQUIRE(big);
    memset(big, 1, (size_t)4 << 20);
    sh_free(h, big);
    sh_heap_stats st;
    sh_stats(h, &st);
    uint64_t committed = st.committed_bytes;
    uint64_t madvised = st.madvise_calls;
    CHECK_EQ(st.live_bytes, 0);
    CHECK(committed >= ((uint64_t)12 << 20) + ((uint64_t)4 << 20));

    size_t released = sh_trim(h);
    sh_stats(h, &st);
    CHECK(released >= ((uint64_t)12 << 20) + ((uint64_t)4 << 20));
    CHECK_EQ(st.committed_bytes, committed - released);
    CHECK(st.madvise_calls > madvised);
    CHECK_EQ(sh_trim(h), 0);

    /* the trimmed spans and the heap still work */
    for (int i = 0; i < N; i++) {
        v[i] = sh_alloc(h, 200000);
        REQUIRE(v[i]);
        memset(v[i], 0xa5, 200000);
    }
    for (int i = 0; i < N; i++)
        sh_free(h, v[i]);
    CHECK_EQ(sh_trim(NULL), 0);
    sh_heap_destroy(h);
}

/* A free span of a larger real size taken for a smaller one of its band
 * keeps only the smaller size resident: before, a kept 2 MiB span serving a
 * smaller class held its 2 MiB for as long as that class used it. A class
 * of the other band never takes it: its virtual span has the wrong size. */
static void test_span_taken_for_smaller_size(void)
{
    sh_heap *h = heap_with(0, 0);
    static void *v[64];
    fill_pool_with_2mib_spans(h, v);
    sh_heap_stats st;
    sh_stats(h, &st);
    uint64_t committed = st.committed_bytes;
    uint64_t carved = st.spans_carved;
    CHECK(committed >= ((uint64_t)12 << 20));

    /* a 16 KiB block needs a 256 KiB span (large band); the pool has only
     * 2 MiB ones */
    int cls = sh_class_of(16384);
    sh_class_info ci;
    REQUIRE(sh_class_get(cls, &ci) == SH_OK);
    REQUIRE(ci.real_span_size == (256u << 10));
    void *b[64];
    unsigned n = 0;
    for (; n < 64 && n < ci.block_count; n++) {
        b[n] = sh_alloc(h, 16384);
        REQUIRE(b[n]);
        memset(b[n], 0x33, 16384);
    }
    sh_stats(h, &st);
    CHECK_EQ(st.spans_carved, carved);
    CHECK_EQ(st.class_spans[cls], 1);
    CHECK(st.committed_bytes + ((uint64_t)2 << 20) - ci.real_span_size <= committed);

    /* a 48-byte block needs a 16 KiB span (small band): a new one */
    void *s48 = sh_alloc(h, 48);
    REQUIRE(s48);
    sh_stats(h, &st);
    CHECK_EQ(st.spans_carved, carved + 1);
    sh_free(h, s48);
    for (unsigned i = 0; i < n; i++) {
        CHECK_EQ(((unsigned char *)b[i])[16383], 0x33);
        sh_free(h, b[i]);
    }
    sh_heap_destroy(h);
}

/* The span of an address depends on its band (bit band_shift, spanheap.h):
 * a block of each band is freed through its own span's header, an interior
 * pointer is named as such only when the right mask finds the header, and
 * addresses of the arena in no carved span -- the end of a band's half,
 * uncarved spans below the frontier, beyond the frontier -- and addresses
 * outside the arena are rejected with SH_E_NOT_OWNED. */
static void test_band_boundary(void)
{
    sh_heap *h = heap_with(0, 0);
    sh_layout L;
    sh_heap_layout(h, &L);
    uintptr_t base = (uintptr_t)L.arena_base, half = (uintptr_t)1 << L.band_shift;
    uintptr_t small = (uintptr_t)L.small_span_size, large = (uintptr_t)L.span_size;
    void *s64 = sh_alloc(h, 64);      /* 16 KiB real span: small band, its span 0 */
    void *s512 = sh_alloc(h, 512);    /* 64 KiB real span: small band, span 1     */
    void *l16k = sh_alloc(h, 16384);  /* 256 KiB real span: large band, span 0    */
    REQUIRE(s64 && s512 && l16k);
    CHECK_EQ(vspan_of(&L, s64), base + half);
    CHECK_EQ(vspan_of(&L, s512), base + half + small);
    CHECK_EQ(vspan_of(&L, l16k), base);
    uint64_t frontier = atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)L.frontier_addr,
                                             memory_order_acquire);
    REQUIRE(frontier >= base + half + 3 * small);

    /* interior pointers: SH_E_INTERIOR proves the header was found. With
     * the other band's mask the first would read the zeroed memory at
     * base + 128 KiB, the second the 64 B span's header. */
    CHECK_EQ(sh_free_checked(h, (char *)base + 4096 + small + 16), -SH_E_INTERIOR);
    CHECK_EQ(sh_free_checked(h, (char *)s512 + 8), -SH_E_INTERIOR);
    /* in the arena, below the frontier, in no carved span */
    CHECK_EQ(sh_free_checked(h, (char *)base + half - 16), -SH_E_NOT_OWNED);          /* end of large half */
    CHECK_EQ(sh_free_checked(h, (char *)base + large + 256), -SH_E_NOT_OWNED);        /* large span 1 */
    CHECK_EQ(sh_free_checked(h, (char *)base + half + 2 * small + 256), -SH_E_NOT_OWNED); /* small span 2 */
    CHECK_EQ(sh_free_checked(h, (char *)vspan_of(&L, s64) + (16u << 10)), -SH_E_NOT_OWNED); /* past real span */
    /* beyond the frontier, at the end of the arena, and outside it */
    CHECK_EQ(sh_free_checked(h, (void *)(uintptr_t)((frontier + 2 * half) & ~(uint64_t)(2 * half - 1))),
             -SH_E_NOT_OWNED);
    CHECK_EQ(sh_free_checked(h, (void *)(base + (uintptr_t)L.arena_size - 16)), -SH_E_NOT_OWNED);
    CHECK_EQ(sh_free_checked(h, (void *)(base - 16)), -SH_E_NOT_OWNED);
    CHECK_EQ(sh_free_checked(h, (void *)(base + (uintptr_t)L.arena_size)), -SH_E_NOT_OWNED);

    /* a block of each band frees, once */
    CHECK_EQ(sh_free_checked(h, s64), SH_OK);
    CHECK_EQ(sh_free_checked(h, s512), SH_OK);
    CHECK_EQ(sh_free_checked(h, l16k), SH_OK);
    CHECK_EQ(sh_free_checked(h, s512), -SH_E_DOUBLE_FREE);
    CHECK_EQ(sh_free_checked(h, l16k), -SH_E_DOUBLE_FREE);
    sh_heap_stats st;
    sh_stats(h, &st);
    CHECK_EQ(st.live_bytes, 0);
    sh_heap_destroy(h);
}

/* sh_zero clears exactly [p, p + n) at every size and offset around the
 * thresholds of its store loop, and nothing on either side. */
static void test_zero(void)
{
    size_t sizes[] = {0, 1, 31, 32, 33, 511, 512, 513, 1000, 4096, 4099,
                      65536, 65537, (512u << 10) - 1, 512u << 10, (512u << 10) + 1, 1u << 20};
    size_t cap = (1u << 20) + 256;
    unsigned char *buf = malloc(cap);
    REQUIRE(buf);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        for (size_t off = 0; off < 64; off += 7) {
            size_t n = sizes[s];
            memset(buf, 0xa5, cap);
            sh_zero(buf + 64 + off, n);
            size_t bad = 0;
            for (size_t i = 0; i < cap; i++) {
                int inside = i >= 64 + off && i < 64 + off + n;
                if (buf[i] != (inside ? 0 : 0xa5))
                    bad++;
            }
            CHECK_EQ(bad, 0);
        }
    }
    free(buf);
}

/* The owner's allocations and frees inside its hot span's current chunk write
 * nothing in the span header: its local free list lives in the LAB, because
 * headers sit a span size apart and share cache sets (docs/native-core.md,
 * "Span header"). Only span events (a new chunk, a CAS) write the header. */
static void test_hot_path_leaves_header_alone(void)
{
    sh_heap *h = heap_with(0, 0);
    sh_layout L;
    sh_heap_layout(h, &L);
    void *first = sh_alloc(h, 64); /* takes the span and its first chunk */
    REQUIRE(first != NULL);
    uintptr_t span = vspan_of(&L, first);
    unsigned char before[256], after[256];
    memcpy(before, (void *)span, sizeof before);
    void *p[8];
    for (int i = 0; i < 8; i++) {
        p[i] = sh_alloc(h, 64);
        REQUIRE(p[i] != NULL);
        CHECK_EQ(vspan_of(&L, p[i]), span);
    }
    for (int i = 0; i < 8; i++)
        sh_free(h, p[i]);
    for (int i = 0; i < 8; i++) /* the freed blocks come back first */
        p[i] = sh_alloc(h, 64);
    memcpy(after, (void *)span, sizeof after);
    CHECK_EQ(memcmp(before, after, sizeof before), 0);
    for (int i = 0; i < 8; i++)
        sh_free(h, p[i]);
    sh_free(h, first);
    sh_heap_destroy(h);
}

int main(void)
{
    test_abi_version();
    test_error_names();
    test_classes();
    test_alloc_free_every_class();
    test_aligned();
    test_bad_frees();
    test_eager_return_and_stats();
    test_batch();
    test_cache_refill_drain();
    test_byte_limit();
    test_exhaustion();
    test_heaps_and_lifetime();
    test_remote_and_orphans();
    test_exited_threads_leave_spans_to_the_next();
    test_retired_half_free_spans_serve_the_next_refill();
    test_own_frees_into_retired_spans_meet_remote_frees();
    test_retired_ring_reuse_keeps_frees_in_their_span();
    test_idle_threads_chains_are_swept();
    test_trim();
    test_span_taken_for_smaller_size();
    test_zero();
    test_hot_path_leaves_header_alone();
    test_band_boundary();
    if (t_failures) {
        fprintf(stderr, "test_api: %d check(s) failed\n", t_failures);
        return 1;
    }
    printf("test_api: ok\n");
    return 0;
}
