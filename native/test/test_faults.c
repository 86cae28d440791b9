/*
 * test_faults.c — what the core does when the OS refuses memory, with the
 * test-only fault injector of spanheap.h (sh_debug_fail_os_call):
 *
 *   mmap      heap creation fails cleanly; a large object fails with
 *             SH_E_NOMEM and gives back its share of the byte limit
 *   mprotect  a new span fails with SH_E_NOMEM; the span index is given back
 *   madvise   free spans stay resident and are counted as such
 *
 * After each failure nothing is left counted (live, limited, large bytes),
 * the blocks allocated before are intact, and the heap works again once the
 * injector stops. Single-threaded: the injector is process-wide.
 */
#include <stdint.h>
#include <string.h>

#include "spanheap.h"
#include "test_util.h"

#define MiB ((size_t)1 << 20)

static sh_heap *heap_with_limit(size_t limit)
{
    sh_config cfg;
    sh_config_init(&cfg);
    cfg.byte_limit = limit;
    sh_heap *h = sh_heap_create(&cfg);
    REQUIRE(h != NULL);
    return h;
}

static sh_heap_stats stats_of(sh_heap *h)
{
    sh_heap_stats s;
    sh_stats(h, &s);
    return s;
}

/* Spans held by the heap's classes (a thread keeps its hot span even when
 * it is empty), in bytes: with the large objects, what the byte limit
 * counts. */
static uint64_t span_bytes(const sh_heap_stats *s)
{
    uint64_t sum = 0;
    for (int c = 0; c < sh_class_count(); c++) {
        sh_class_info ci;
        REQUIRE(sh_class_get(c, &ci) == SH_OK);
        sum += s->class_spans[c] * ci.real_span_size;
    }
    return sum;
}

/* Everything freed: no live bytes, no large objects, and the byte limit
 * counts exactly the spans still held, so no failed path kept a share. */
static void check_nothing_counted(sh_heap *h, int line)
{
    sh_heap_stats s = stats_of(h);
    if (s.live_bytes || s.large_bytes || s.large_count || s.limited_bytes != span_bytes(&s)) {
        fprintf(stderr,
                "test_faults.c:%d: left counted: live %llu, large %llu x%llu, limited %llu for "
                "%llu of spans\n",
                line, (unsigned long long)s.live_bytes, (unsigned long long)s.large_bytes,
                (unsigned long long)s.large_count, (unsigned long long)s.limited_bytes,
                (unsigned long long)span_bytes(&s));
        t_failures++;
    }
}
#define CHECK_NOTHING_COUNTED(h) check_nothing_counted((h), __LINE__)

static void fill(void *p, size_t n, unsigned seed)
{
    memset(p, (int)(seed & 0xff), n);
}

static int intact(const void *p, size_t n, unsigned seed)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i += 512)
        if (b[i] != (unsigned char)(seed & 0xff) || b[n - 1] != (unsigned char)(seed & 0xff))
            return 0;
    return 1;
}

static void test_arguments(void)
{
    CHECK_EQ(sh_debug_fail_os_call(0, 1, 1), -SH_E_INVALID);
    CHECK_EQ(sh_debug_fail_os_call(SH_OS_MADVISE + 1, 1, 1), -SH_E_INVALID);
    CHECK_EQ(sh_debug_fail_os_call(SH_OS_MMAP, -1, 1), -SH_E_INVALID);
    CHECK_EQ(sh_debug_fail_os_call(SH_OS_MMAP, 1, 0), -SH_E_INVALID);
    CHECK_EQ(sh_debug_fail_os_call(SH_OS_MMAP, 1, -2), -SH_E_INVALID);
    CHECK_EQ(sh_debug_fail_os_call(SH_OS_MMAP, 0, 0), SH_OK); /* disarm */
    CHECK_EQ(sh_debug_os_calls(0), 0);
}

/* mmap of the arena reservation refused: no heap, SH_E_NOMEM; the next
 * creation works. A refused MADV_NOHUGEPAGE is only a hint lost. */
static void test_create(void)
{
    uint64_t maps = sh_debug_os_calls(SH_OS_MMAP);
    CHECK_EQ(sh_debug_fail_os_call(SH_OS_MMAP, 1, 1), SH_OK);
    CHECK(sh_heap_create(NULL) == NULL);
    CHECK_EQ(sh_last_error(), SH_E_NOMEM);
    CHECK_EQ(sh_debug_os_calls(SH_OS_MMAP), maps + 1);

    uint64_t advises = sh_debug_os_calls(SH_OS_MADVISE);
    CHECK_EQ(sh_debug_fail_os_call(SH_OS_MADVISE, 1, 1), SH_OK);
    sh_heap *h = sh_heap_create(NULL);
    REQUIRE(h != NULL);
    CHECK_EQ(sh_debug_os_calls(SH_OS_MADVISE), advises + 1); /* it was asked, and refused */
    void *p = sh_alloc(h, 100);
    REQUIRE(p != NULL);
    fill(p, 100, 7);
    CHECK(intact(p, 100, 7));
    sh_free(h, p);
    CHECK_NOTHING_COUNTED(h);
    sh_heap_destroy(h);
}

/* mmap of a large object refused: SH_E_NOMEM, the byte limit's share given
 * back (with a limit of 8 MiB a 6 MiB object fits again afterwards), the
 * other large objects intact. */
static void test_large(void)
{
    sh_heap *h = heap_with_limit(8 * MiB);
    void *keep = sh_alloc(h, 2 * MiB);
    REQUIRE(keep != NULL);
    fill(keep, 2 * MiB, 11);
    sh_heap_stats before = stats_of(h);

    CHECK_EQ(sh_debug_fail_os_call(SH_OS_MMAP, 1, 1), SH_OK);
    CHECK(sh_alloc(h, 5 * MiB) == NULL);
    CHECK_EQ(sh_last_error(), SH_E_NOMEM);
    sh_heap_stats after = stats_of(h);
    CHECK_EQ(after.live_bytes, before.live_bytes);
    CHECK_EQ(after.limited_bytes, before.limited_bytes);
    CHECK_EQ(after.large_count, before.large_count);
    CHECK_EQ(after.committed_bytes, before.committed_bytes);

    /* aligned large objects take the same path */
    CHECK_EQ(sh_debug_fail_os_call(SH_OS_MMAP, 1, -1), SH_OK);
    CHECK(sh_alloc_aligned(h, 64 << 10, MiB) == NULL);
    CHECK_EQ(sh_last_error(), SH_E_NOMEM);
    CHECK(sh_alloc(h, 3 * MiB) == NULL);
    CHECK_EQ(sh_last_error(), SH_E_NOMEM);
    CHECK_EQ(stats_of(h).limited_bytes, before.limited_bytes);
    CHECK_EQ(sh_debug_fail_os_call(SH_OS_MMAP, 0, 0), SH_OK);

    /* failures stopped: 6 MiB fits beside the 2 MiB only if nothing leaked */
    void *p = sh_alloc(h, 6 * MiB);
    REQUIRE(p != NULL);
    fill(p, 6 * MiB, 12);
    CHECK(intact(keep, 2 * MiB, 11));
    CHECK(intact(p, 6 * MiB, 12));
    sh_free(h, p);
    sh_free(h, keep);
    CHECK_NOTHING_COUNTED(h);
    sh_heap_destroy(h);
}

/* mremap of a kept large mapping refused (it would grow it for a larger
 * request): the kept mapping is given back and a fresh one mapped; if that
 * is refused too, the allocation fails with nothing counted or kept. */
static void test_remap(void)
{
    sh_heap *h = heap_with_limit(16 * MiB);
    void *p = sh_alloc(h, 2 * MiB);
    REQUIRE(p != NULL);
    fill(p, 2 * MiB, 21);
    sh_free(h, p); /* kept for reuse */
    CHECK(stats_of(h).committed_bytes >= 2 * MiB);

    /* the remap (1st SH_OS_MMAP call) fails, the fresh mmap (2nd) works */
    CHECK_EQ(sh_debug_fail_os_call(SH_OS_MMAP, 1, 1), SH_OK);
    void *q = sh_alloc(h, 3 * MiB);
    REQUIRE(q != NULL);
    CHECK_EQ(sh_usable_size(h, q), 3 * MiB);
    CHECK_EQ(((unsigned char *)q)[0], 0); /* fresh, not the kept one's pages */
    fill(q, 3 * MiB, 22);
    CHECK_EQ(sh_free_checked(h, p), -SH_E_NOT_OWNED); /* the kept one is gone */
    sh_free(h, q); /* kept now */

    /* both refused: the request fails, the kept one is gone, nothing counted */
    CHECK_EQ(sh_debug_fail_os_call(SH_OS_MMAP, 1, 2), SH_OK);
    CHECK(sh_alloc(h, 4 * MiB) == NULL);
    CHECK_EQ(sh_last_error(), SH_E_NOMEM);
    CHECK_EQ(sh_debug_fail_os_call(SH_OS_MMAP, 0, 0), SH_OK);
    CHECK_NOTHING_COUNTED(h);
    sh_heap_stats s = stats_of(h);
    CHECK_EQ(s.large_bytes, 0);

    /* the OS agrees again: the heap maps again */
    void *r = sh_alloc(h, 4 * MiB);
    REQUIRE(r != NULL);
    fill(r, 4 * MiB, 23);
    CHECK(intact(r, 4 * MiB, 23));
    sh_free(h, r);
    CHECK_NOTHING_COUNTED(h);
    sh_heap_destroy(h);
}

/* mprotect of the next part of the arena refused: the allocation that needs
 * a new span fails with SH_E_NOMEM, no span index is lost, earlier blocks
 * are intact, and the heap grows again once the OS agrees. */
static void test_commit(void)
{
    sh_heap *h = heap_with_limit(0);
    uint64_t protects = sh_debug_os_calls(SH_OS_MPROTECT);
    CHECK_EQ(sh_debug_fail_os_call(SH_OS_MPROTECT, 1, 1), SH_OK);
    CHECK(sh_alloc(h, 64) == NULL); /* the first span needs the first commit */
    CHECK_EQ(sh_last_error(), SH_E_NOMEM);
    CHECK_EQ(sh_debug_os_calls(SH_OS_MPROTECT), protects + 1);
    sh_heap_stats s = stats_of(h);
    CHECK_EQ(s.spans_carved, 0);
    CHECK_EQ(s.committed_bytes, 0);
    CHECK_NOTHING_COUNTED(h);

    /* fill the first commit (16 MiB: 8 virtual spans) with 64 KiB blocks,
     * then refuse every commit: the allocation that needs a 9th span fails */
    enum { MAX = 512 };
    static void *blocks[MAX];
    size_t bs = 64 << 10;
    int n = 0;
    while (n < MAX) {
        blocks[n] = sh_alloc(h, bs);
        REQUIRE(blocks[n] != NULL);
        fill(blocks[n], bs, (unsigned)n);
        n++;
        if (stats_of(h).spans_carved == 8)
            break;
    }
    REQUIRE(stats_of(h).spans_carved == 8);
    CHECK_EQ(sh_debug_fail_os_call(SH_OS_MPROTECT, 1, -1), SH_OK);
    int failed = 0;
    while (n < MAX) {
        void *p = sh_alloc(h, bs);
        if (!p) {
            failed = 1;
            break;
        }
        fill(p, bs, (unsigned)n);
        blocks[n++] = p;
    }
    CHECK(failed);
    CHECK_EQ(sh_last_error(), SH_E_NOMEM);
    CHECK(sh_alloc(h, 64 << 10) == NULL); /* still refused, still no span lost */
    CHECK_EQ(stats_of(h).spans_carved, 8);
    CHECK_EQ(stats_of(h).live_bytes, (uint64_t)n * bs);

    CHECK_EQ(sh_debug_fail_os_call(SH_OS_MPROTECT, 0, 0), SH_OK);
    void *p = sh_alloc(h, bs);
    REQUIRE(p != NULL);
    fill(p, bs, 0xee);
    CHECK_EQ(stats_of(h).spans_carved, 9);
    for (int i = 0; i < n; i++)
        CHECK(intact(blocks[i], bs, (unsigned)i));
    CHECK(intact(p, bs, 0xee));
    for (int i = 0; i < n; i++)
        sh_free(h, blocks[i]);
    sh_free(h, p);
    CHECK_NOTHING_COUNTED(h);
    sh_heap_destroy(h);
}

/* madvise of free spans refused: the spans go to the pool resident and are
 * counted as committed (no madvise counted); they are reused as they are,
 * and once the OS agrees again freeing gives memory back. */
static void test_advise(void)
{
    sh_heap *h = heap_with_limit(0);
    enum { N = 1024 }; /* 64 MiB of 64 KiB blocks: beyond the 32 MiB the pool keeps */
    static void *blocks[N];
    size_t bs = 64 << 10;
    for (int i = 0; i < N; i++) {
        blocks[i] = sh_alloc(h, bs);
        REQUIRE(blocks[i] != NULL);
        fill(blocks[i], bs, (unsigned)i);
    }
    sh_heap_stats full = stats_of(h);

    uint64_t advises = sh_debug_os_calls(SH_OS_MADVISE);
    CHECK_EQ(sh_debug_fail_os_call(SH_OS_MADVISE, 1, -1), SH_OK);
    for (int i = 0; i < N; i++)
        sh_free(h, blocks[i]);
    sh_heap_stats refused = stats_of(h);
    CHECK(sh_debug_os_calls(SH_OS_MADVISE) > advises); /* asked, refused */
    CHECK_EQ(refused.madvise_calls, full.madvise_calls);
    /* every span still resident, so committed as before */
    CHECK_EQ(refused.committed_bytes, full.committed_bytes);
    CHECK_NOTHING_COUNTED(h);

    CHECK_EQ(sh_debug_fail_os_call(SH_OS_MADVISE, 0, 0), SH_OK);
    for (int i = 0; i < N; i++) {
        blocks[i] = sh_alloc(h, bs);
        REQUIRE(blocks[i] != NULL);
        fill(blocks[i], bs, (unsigned)i + 1);
    }
    /* reused without being counted twice */
    CHECK_EQ(stats_of(h).committed_bytes, full.committed_bytes);
    for (int i = 0; i < N; i++)
        CHECK(intact(blocks[i], bs, (unsigned)i + 1));
    for (int i = 0; i < N; i++)
        sh_free(h, blocks[i]);
    sh_heap_stats freed = stats_of(h);
    CHECK(freed.madvise_calls > full.madvise_calls);
    CHECK(freed.committed_bytes < full.committed_bytes);
    CHECK_NOTHING_COUNTED(h);
    sh_heap_destroy(h);
}

int main(void)
{
    test_arguments();
    test_create();
    test_large();
    test_remap();
    test_commit();
    test_advise();
    for (int k = SH_OS_MMAP; k <= SH_OS_MADVISE; k++)
        sh_debug_fail_os_call(k, 0, 0);
    if (t_failures) {
        fprintf(stderr, "test_faults: %d check(s) failed\n", t_failures);
        return 1;
    }
    printf("test_faults: ok\n");
    return 0;
}
