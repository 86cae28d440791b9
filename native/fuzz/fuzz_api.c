/*
 * fuzz_api.c — libFuzzer target for the C API of spanheap.h.
 *
 * Each input is a program: a heap configuration, then operations decoded
 * one byte at a time (fuzz_input.h). A shadow model records every block the
 * program holds -- address, usable size, fill byte, and whether it sits in
 * a "Java cache" (taken by sh_alloc_batch or free-marked by hand, as the
 * Java fast path does) -- and every call's result is checked against it:
 * alignment, usable size, no overlap with a held block, contents intact
 * until freed, statistics equal to the model, and the documented error code
 * for every bad pointer (interior, foreign, double, stale, never handed
 * out). Misuse that spanheap.h documents as undetected is not fed: a live
 * or already freed block given to sh_free_batch (it trusts its blocks to be
 * free-marked), and a stale pointer that is again the start of a live block.
 *
 * One heap per input, created with a small reservation and destroyed at the
 * end, so inputs do not influence each other (the only state kept across
 * inputs is a second heap used as a source of foreign blocks, and the OS
 * call counters of the fault injection, which every input disarms).
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_input.h"
#include "spanheap.h"

enum { MAX_HELD = 256, MAX_STALE = 32, MAX_BATCH = 16 };

typedef struct held {
    uint8_t *p;
    size_t usable;
    uint8_t fill;
    uint8_t cached; /* free-marked, in the Java cache: contents not ours */
} held;

static struct {
    sh_heap *h;
    sh_layout L;
    held b[MAX_HELD];
    int n;
    uintptr_t stale[MAX_STALE]; /* blocks freed by this input */
    int nstale;
    uint8_t next_fill;
    int cb_calls, cb_err;
    void *cb_ptr;
} m;

static sh_heap *other_heap; /* kept across inputs: its block is "foreign" */
static void *other_block;

static void on_error(sh_heap *h, int err, void *p, void *ctx)
{
    (void)ctx;
    FZ_CHECK(h == m.h, "callback for another heap");
    m.cb_calls++;
    m.cb_err = err;
    m.cb_ptr = p;
}

/* ---- model helpers ----------------------------------------------------- */

/* Large objects are mapped on their own, outside the arena (also small
 * requests with an alignment above what the classes serve). */
static int is_large(const held *b)
{
    return (uintptr_t)b->p - m.L.arena_base >= m.L.arena_size;
}

static uint64_t free_mark(const void *p)
{
    return m.L.free_key ^ (uint64_t)(uintptr_t)p;
}

static void fill(held *b)
{
    b->fill = (uint8_t)(++m.next_fill | 1); /* never 0: fresh pages are zero */
    memset(b->p, b->fill, b->usable);
}

static void check_intact(const held *b)
{
    static uint8_t want[4096];
    memset(want, b->fill, sizeof want);
    for (size_t off = 0; off < b->usable; off += sizeof want) {
        size_t k = b->usable - off < sizeof want ? b->usable - off : sizeof want;
        FZ_CHECK(memcmp(b->p + off, want, k) == 0, "block %p (%zu bytes) changed near offset %zu",
                 (void *)b->p, b->usable, off);
    }
}

/* The held block containing addr, or NULL. */
static held *containing(uintptr_t addr)
{
    for (int i = 0; i < m.n; i++)
        if (addr - (uintptr_t)m.b[i].p < m.b[i].usable)
            return &m.b[i];
    return NULL;
}

static void check_new_block(void *p, size_t usable)
{
    uintptr_t u = (uintptr_t)p;
    for (int i = 0; i < m.n; i++) {
        uintptr_t q = (uintptr_t)m.b[i].p;
        FZ_CHECK(u + usable <= q || q + m.b[i].usable <= u,
                 "new block %p+%zu overlaps held block %p+%zu", p, usable, (void *)q,
                 m.b[i].usable);
    }
}

static held *add(void *p, size_t usable, int cached)
{
    check_new_block(p, usable);
    held *b = &m.b[m.n++];
    *b = (held){.p = p, .usable = usable, .cached = (uint8_t)cached};
    if (!cached)
        fill(b);
    return b;
}

static void drop(held *b)
{
    *b = m.b[--m.n];
}

static void remember_stale(void *p)
{
    if (m.nstale < MAX_STALE)
        m.stale[m.nstale++] = (uintptr_t)p;
    else
        m.stale[m.next_fill % MAX_STALE] = (uintptr_t)p;
}

/* A held block chosen by the input: cached ones only if want_cached, else
 * only blocks the program owns. NULL if there is none of that kind. */
static held *pick(fz_input *in, int want_cached)
{
    if (!m.n)
        return NULL;
    int start = fz_u8(in) % m.n;
    for (int k = 0; k < m.n; k++) {
        held *b = &m.b[(start + k) % m.n];
        if (b->cached == want_cached)
            return b;
    }
    return NULL;
}

/* ---- allocation -------------------------------------------------------- */

static void check_failed_alloc(size_t size)
{
    int e = sh_last_error();
    FZ_CHECK(e == SH_E_NOMEM || e == SH_E_LIMIT, "allocation of %zu failed with error %d", size, e);
}

static void op_alloc(fz_input *in)
{
    size_t size = fz_size(in);
    void *p = sh_alloc(m.h, size);
    if (!p) {
        check_failed_alloc(size);
        return;
    }
    FZ_CHECK((uintptr_t)p % 16 == 0, "sh_alloc(%zu) = %p not 16-aligned", size, p);
    size_t u = sh_usable_size(m.h, p);
    FZ_CHECK(u >= size, "usable %zu < requested %zu", u, size);
    if (size <= m.L.max_small_size) {
        sh_class_info ci;
        FZ_CHECK(sh_class_get(sh_class_of(size), &ci) == SH_OK, "class of %zu", size);
        FZ_CHECK(u == ci.block_size, "usable %zu is not the class size %u", u, ci.block_size);
    }
    add(p, u, 0);
}

static void op_alloc_aligned(fz_input *in)
{
    size_t size = fz_size(in);
    size_t align = fz_alignment(in);
    void *p = sh_alloc_aligned(m.h, size, align);
    if (!p) {
        check_failed_alloc(size);
        return;
    }
    FZ_CHECK((uintptr_t)p % align == 0 && (uintptr_t)p % 16 == 0,
             "sh_alloc_aligned(%zu, %zu) = %p misaligned", size, align, p);
    size_t u = sh_usable_size(m.h, p);
    FZ_CHECK(u >= size, "usable %zu < requested %zu", u, size);
    add(p, u, 0);
}

/* Requests the API must refuse with SH_E_INVALID, leaving the heap as it was. */
static void op_invalid(fz_input *in)
{
    void *out[2];
    switch (fz_u8(in) % 7) {
    case 0:
        FZ_CHECK(sh_alloc(m.h, (size_t)-1 - fz_u8(in)) == NULL, "huge sh_alloc succeeded");
        break;
    case 1:
        FZ_CHECK(sh_alloc_aligned(m.h, 16, fz_u8(in) | 0x300) == NULL, "bad alignment accepted");
        break;
    case 2:
        FZ_CHECK(sh_alloc_aligned(m.h, 16, 0) == NULL, "alignment 0 accepted");
        break;
    case 3:
        FZ_CHECK(sh_alloc_aligned(m.h, ((size_t)1 << 62) + fz_u8(in), 64) == NULL,
                 "huge sh_alloc_aligned succeeded");
        break;
    case 4:
        FZ_CHECK(sh_alloc_batch(m.h, sh_class_count() + fz_u8(in) % 4, out, 1) == -SH_E_INVALID,
                 "bad class accepted");
        return;
    case 5:
        FZ_CHECK(sh_alloc_batch(m.h, 0, out, -(int)(fz_u8(in) % 3)) == -SH_E_INVALID,
                 "batch of n <= 0 accepted");
        return;
    default:
        FZ_CHECK(sh_free_batch(m.h, NULL, 1 + fz_u8(in) % 3) == -SH_E_INVALID,
                 "NULL batch accepted");
        FZ_CHECK(sh_free_batch(m.h, out, -1) == -SH_E_INVALID, "negative batch accepted");
        return;
    }
    FZ_CHECK(sh_last_error() == SH_E_INVALID, "error %d, not SH_E_INVALID", sh_last_error());
}

/* ---- free -------------------------------------------------------------- */

static void op_free(fz_input *in)
{
    held *b = pick(in, 0);
    if (!b)
        return;
    check_intact(b);
    void *p = b->p;
    if (fz_u8(in) & 1) {
        FZ_CHECK(sh_free_checked(m.h, p) == SH_OK, "free of live block %p refused", p);
    } else {
        int calls = m.cb_calls;
        sh_free(m.h, p);
        FZ_CHECK(m.cb_calls == calls, "free of live block %p reported error %d", p, m.cb_err);
    }
    FZ_CHECK(sh_usable_size(m.h, p) == 0, "freed block %p still has a usable size", p);
    drop(b);
    remember_stale(p);
}

/* An address chosen by the input among the kinds of bad pointer; 0 if the
 * chosen kind has no candidate now. *foreign is set for addresses that are
 * certainly no block of this heap (SH_E_NOT_OWNED). */
static uintptr_t bad_address(fz_input *in, int *stack_probe, void *heap_probe, int *foreign)
{
    held *b = m.n ? &m.b[fz_u8(in) % m.n] : NULL;
    switch (fz_u8(in) % 9) {
    case 0: /* interior */
        if (!b || b->usable < 2)
            return 0;
        return (uintptr_t)b->p + 1 + fz_u32(in) % (b->usable - 1);
    case 1: /* interior, 16-aligned: looks like a block start of a smaller class */
        if (!b || b->usable <= 16)
            return 0;
        return (uintptr_t)b->p + 16 * (1 + fz_u32(in) % ((b->usable - 1) / 16));
    case 2: /* stale: freed earlier by this input */
        return m.nstale ? m.stale[fz_u8(in) % m.nstale] : 0;
    case 3: /* neighbours: free, never handed out, span headers, past the span */
        if (!b)
            return 0;
        return (uintptr_t)b->p + (uintptr_t)((int)(fz_u8(in) % 9) - 4) * b->usable;
    case 4:
        *foreign = 1;
        return (uintptr_t)stack_probe;
    case 5:
        *foreign = 1;
        return (uintptr_t)heap_probe;
    case 6:
        *foreign = 1;
        return (uintptr_t)other_block;
    case 7: /* anywhere in the arena, 16-aligned: headers, beyond the frontier */
        return (uintptr_t)m.L.arena_base + ((uint64_t)fz_u32(in) * 16 % m.L.arena_size);
    default: /* just outside the arena */
        return fz_u8(in) & 1 ? (uintptr_t)m.L.arena_base - 16
                             : (uintptr_t)(m.L.arena_base + m.L.arena_size);
    }
}

/* A bad pointer given to sh_free_checked, sh_free or sh_usable_size must
 * get its documented answer and change nothing. */
static void op_bad_pointer(fz_input *in)
{
    int stack_probe = 0;
    void *heap_probe = malloc(64);
    FZ_CHECK(heap_probe != NULL, "malloc");
    int foreign = 0;
    uintptr_t a = bad_address(in, &stack_probe, heap_probe, &foreign);
    int how = fz_u8(in) % 3;
    held *in_block = a ? containing(a) : NULL;
    if (!a || (in_block && in_block->p == (uint8_t *)a && !in_block->cached)) {
        free(heap_probe); /* nothing to try, or a block we own: not misuse */
        return;
    }
    void *p = (void *)a;
    /* what spanheap.h and test_api.c promise */
    int want = 0; /* 0: any of the three bad-pointer errors */
    if (in_block && in_block->p == (uint8_t *)a)
        want = SH_E_DOUBLE_FREE; /* a cached block is free-marked */
    else if (in_block)
        want = is_large(in_block) ? SH_E_NOT_OWNED : SH_E_INTERIOR;
    else if (foreign)
        want = SH_E_NOT_OWNED;
    int got;
    if (how == 0) {
        FZ_CHECK(sh_usable_size(m.h, p) == 0, "usable size of bad pointer %p not 0", p);
        free(heap_probe);
        return;
    } else if (how == 1) {
        got = -sh_free_checked(m.h, p); /* negated, as every int-returning call */
        FZ_CHECK(got == SH_OK || sh_last_error() == got, "last error %d after %d",
                 sh_last_error(), got);
    } else {
        int calls = m.cb_calls;
        sh_free(m.h, p);
        FZ_CHECK(m.cb_calls == calls + 1, "sh_free(%p) of a bad pointer not reported", p);
        FZ_CHECK(m.cb_ptr == p, "reported pointer %p, freed %p", m.cb_ptr, p);
        got = m.cb_err;
    }
    if (want)
        FZ_CHECK(got == want, "bad pointer %p: error %d, expected %d", p, got, want);
    else
        FZ_CHECK(got == SH_E_NOT_OWNED || got == SH_E_DOUBLE_FREE || got == SH_E_INTERIOR,
                 "bad pointer %p: error %d", p, got);
    if (in_block && !in_block->cached)
        check_intact(in_block);
    free(heap_probe);
}

/* ---- the Java cache's batch calls --------------------------------------- */

static void op_alloc_batch(fz_input *in)
{
    int cls = fz_u8(in) % sh_class_count();
    int n = 1 + fz_u8(in) % MAX_BATCH;
    if (n > MAX_HELD - m.n)
        n = MAX_HELD - m.n;
    if (n <= 0)
        return;
    void *out[MAX_BATCH];
    int got = sh_alloc_batch(m.h, cls, out, n);
    if (got < 0) {
        FZ_CHECK(got == -SH_E_NOMEM || got == -SH_E_LIMIT, "sh_alloc_batch: %d", got);
        return;
    }
    FZ_CHECK(got >= 1 && got <= n, "sh_alloc_batch returned %d of %d", got, n);
    sh_class_info ci;
    sh_class_get(cls, &ci);
    for (int i = 0; i < got; i++) {
        uint64_t *w = out[i];
        FZ_CHECK(w[1] == free_mark(w), "batch block %p not free-marked", out[i]);
        FZ_CHECK(sh_usable_size(m.h, w) == 0, "cached block %p has a usable size", out[i]);
        add(out[i], ci.block_size, 1);
    }
}

/* Returns cached blocks, mixed with bad pointers the call must skip. */
static void op_free_batch(fz_input *in)
{
    void *v[MAX_BATCH];
    int n = 0, want = SH_OK;
    int stack_probe = 0;
    void *heap_probe = malloc(32);
    FZ_CHECK(heap_probe != NULL, "malloc");
    int k = 1 + fz_u8(in) % MAX_BATCH;
    while (n < k) {
        uint8_t c = fz_u8(in);
        if (c % 8 != 7) {
            held *b = pick(in, 1);
            if (!b)
                break;
            v[n++] = b->p;
            drop(b);
            continue;
        }
        /* bad pointers that the call detects (classify() or outside the arena) */
        held *b = m.n ? &m.b[fz_u8(in) % m.n] : NULL;
        switch ((c >> 3) % 4) {
        case 0:
            v[n++] = &stack_probe;
            want = -SH_E_NOT_OWNED;
            break;
        case 1:
            v[n++] = heap_probe;
            want = -SH_E_NOT_OWNED;
            break;
        case 2:
            if (!b || b->usable < 2)
                continue;
            v[n++] = b->p + 1 + fz_u16(in) % (b->usable - 1);
            want = is_large(b) ? -SH_E_NOT_OWNED : -SH_E_INTERIOR;
            break;
        default:
            if (!b || !is_large(b))
                continue;
            v[n++] = b->p; /* a live large object is not a cached block */
            want = -SH_E_NOT_OWNED;
            break;
        }
    }
    int rc = sh_free_batch(m.h, v, n);
    FZ_CHECK(rc == want, "sh_free_batch of %d: %d, expected %d", n, rc, want);
    free(heap_probe);
}

/* The Java side hands a cached block out: it clears the free mark. */
static void op_java_handout(fz_input *in)
{
    held *b = pick(in, 1);
    if (!b)
        return;
    ((uint64_t *)b->p)[1] = 0;
    FZ_CHECK(sh_usable_size(m.h, b->p) == b->usable, "handed-out block %p: usable size",
             (void *)b->p);
    b->cached = 0;
    fill(b);
}

/* The Java side frees a small block into its cache: it writes the free mark. */
static void op_java_free(fz_input *in)
{
    held *b = pick(in, 0);
    if (!b || is_large(b))
        return;
    check_intact(b);
    ((uint64_t *)b->p)[1] = free_mark(b->p);
    b->cached = 1;
    FZ_CHECK(sh_free_checked(m.h, b->p) == -SH_E_DOUBLE_FREE, "cached block %p freed",
             (void *)b->p);
}

/* ---- queries ----------------------------------------------------------- */

static void op_usable(fz_input *in)
{
    held *b = pick(in, 0);
    if (b)
        FZ_CHECK(sh_usable_size(m.h, b->p) == b->usable, "usable size of %p changed",
                 (void *)b->p);
}

static void check_stats(void)
{
    uint64_t live = 0, large = 0, nlarge = 0, per_class[SH_MAX_CLASSES] = {0};
    for (int i = 0; i < m.n; i++) {
        live += m.b[i].usable;
        if (is_large(&m.b[i])) {
            large += m.b[i].usable;
            nlarge++;
        } else {
            per_class[sh_class_of(m.b[i].usable)]++;
        }
    }
    sh_heap_stats st;
    sh_stats(m.h, &st);
    FZ_CHECK(st.live_bytes == live, "live_bytes %llu, model %llu",
             (unsigned long long)st.live_bytes, (unsigned long long)live);
    FZ_CHECK(st.large_bytes == large, "large_bytes %llu, model %llu",
             (unsigned long long)st.large_bytes, (unsigned long long)large);
    FZ_CHECK(st.large_count == nlarge, "large_count %llu, model %llu",
             (unsigned long long)st.large_count, (unsigned long long)nlarge);
    for (int c = 0; c < sh_class_count(); c++)
        FZ_CHECK(st.class_live_blocks[c] == per_class[c], "class %d: %llu live, model %llu", c,
                 (unsigned long long)st.class_live_blocks[c], (unsigned long long)per_class[c]);
    FZ_CHECK(st.reserved_bytes == m.L.arena_size, "reserved_bytes");
    FZ_CHECK(st.committed_bytes >= st.large_bytes, "committed below large");
    FZ_CHECK(st.limit_bytes == 0 || st.limited_bytes <= st.limit_bytes, "limit exceeded");
    FZ_CHECK(st.spans_carved <= m.L.arena_size / 2 / m.L.span_size + m.L.arena_size / 2 / m.L.small_span_size,
             "more spans than the arena");
}

/* sh_trim returns what it gave back; with one thread committed_bytes drops
 * by exactly as much. */
static void op_trim(void)
{
    sh_heap_stats before, after;
    sh_stats(m.h, &before);
    size_t r = sh_trim(m.h);
    sh_stats(m.h, &after);
    FZ_CHECK(before.committed_bytes - after.committed_bytes == r,
             "sh_trim returned %zu, committed %llu -> %llu", r,
             (unsigned long long)before.committed_bytes,
             (unsigned long long)after.committed_bytes);
}

/* The OS refusing memory (test-only fault injection): calls fail with
 * SH_E_NOMEM and must leave the heap usable. */
static void op_fail_os(fz_input *in)
{
    int kind = 1 + fz_u8(in) % 3;
    int64_t nth = fz_u8(in) % 5; /* 0 disarms */
    int64_t count = fz_u8(in) % 4;
    FZ_CHECK(sh_debug_fail_os_call(kind, nth, count ? count : -1) == SH_OK, "fail_os_call");
}

static void disarm_faults(void)
{
    for (int k = SH_OS_MMAP; k <= SH_OS_MADVISE; k++)
        sh_debug_fail_os_call(k, 0, 0);
}

/* ---- one input ---------------------------------------------------------- */

static void setup(fz_input *in)
{
    if (!other_heap) {
        sh_config oc;
        sh_config_init(&oc);
        oc.reserve_bytes = (size_t)4 << 20;
        other_heap = sh_heap_create(&oc);
        FZ_CHECK(other_heap != NULL, "second heap");
        other_block = sh_alloc(other_heap, 64);
        FZ_CHECK(other_block != NULL, "second heap's block");
    }
    uint8_t c = fz_u8(in);
    static const size_t reserves[4] = {(size_t)4 << 20, (size_t)16 << 20, (size_t)64 << 20,
                                       (size_t)256 << 20};
    static const size_t limits[4] = {0, 0, (size_t)512 << 10, (size_t)8 << 20};
    sh_config cfg;
    sh_config_init(&cfg);
    cfg.reserve_bytes = reserves[c & 3];
    cfg.byte_limit = limits[(c >> 2) & 3];
    cfg.reuse_threshold_pct = fz_u8(in) % 101;
    cfg.on_error = on_error;
    memset(&m, 0, sizeof m);
    m.h = sh_heap_create(&cfg);
    FZ_CHECK(m.h != NULL, "sh_heap_create: %d", sh_last_error());
    sh_heap_layout(m.h, &m.L);
}

/* Frees everything through the API (or, if the input says so, leaves it to
 * sh_heap_destroy) and destroys the heap. */
static void teardown(int free_all)
{
    disarm_faults();
    for (int i = 0; i < m.n; i++)
        if (!m.b[i].cached)
            check_intact(&m.b[i]);
    if (free_all) {
        void *cached[MAX_HELD];
        int nc = 0;
        for (int i = 0; i < m.n; i++) {
            if (m.b[i].cached)
                cached[nc++] = m.b[i].p;
            else
                FZ_CHECK(sh_free_checked(m.h, m.b[i].p) == SH_OK, "final free of %p",
                         (void *)m.b[i].p);
        }
        FZ_CHECK(sh_free_batch(m.h, cached, nc) == SH_OK, "final batch free");
        m.n = 0;
        check_stats();
    }
    sh_heap_destroy(m.h);
    m.h = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_input in = {data, size};
    setup(&in);
    int free_all = fz_u8(&in) % 4 != 0;
    while (fz_more(&in)) {
        uint8_t op = fz_u8(&in);
        if (m.n >= MAX_HELD && op % 16 < 2)
            op = 2; /* full: free instead of allocating */
        switch (op % 16) {
        case 0: op_alloc(&in); break;
        case 1: op_alloc_aligned(&in); break;
        case 2: case 3: op_free(&in); break;
        case 4: case 5: op_bad_pointer(&in); break;
        case 6: op_alloc_batch(&in); break;
        case 7: op_free_batch(&in); break;
        case 8: op_java_handout(&in); break;
        case 9: op_java_free(&in); break;
        case 10: op_usable(&in); break;
        case 11: check_stats(); break;
        case 12: op_trim(); break;
        case 13: op_fail_os(&in); break;
        case 14: op_invalid(&in); break;
        default:
            for (int i = 0; i < m.n; i++)
                if (!m.b[i].cached)
                    check_intact(&m.b[i]);
            break;
        }
    }
    teardown(free_all);
    return 0;
}
