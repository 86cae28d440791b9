/*
 * fuzz_malloc.c — libFuzzer target for the malloc shim's C allocation API
 * (malloc/malloc_shim.c): malloc, calloc, realloc, reallocarray,
 * posix_memalign, aligned_alloc, memalign, valloc, pvalloc, free,
 * malloc_usable_size, against a shadow model as in fuzz_api.c.
 *
 * The shim is linked with its API renamed to fz_* (shim_renames.txt says
 * why), so the target calls fz_malloc & co while libFuzzer and ASan keep
 * libc's names. The checks are the C standard's and glibc's contracts as
 * the shim documents them (docs/malloc.md): alignment, usable size, calloc
 * zeroing, realloc keeping the contents, errno and return codes for
 * overflow and bad alignments, and bad pointers (interior, foreign, double,
 * stale) ignored by free, answered with 0 by malloc_usable_size and EINVAL
 * by realloc, never corrupting a live block.
 *
 * The shim has one default heap per process, so unlike fuzz_api this state
 * outlives an input: each input frees all it allocated and checks that the
 * heap's live bytes are back to zero.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_input.h"
#include "spanheap.h"
#include "meta.h"

void *fz_malloc(size_t size);
void fz_free(void *p);
void *fz_calloc(size_t n, size_t size);
void *fz_realloc(void *p, size_t size);
void *fz_reallocarray(void *p, size_t n, size_t size);
int fz_posix_memalign(void **out, size_t alignment, size_t size);
void *fz_aligned_alloc(size_t alignment, size_t size);
void *fz_memalign(size_t alignment, size_t size);
void *fz_valloc(size_t size);
void *fz_pvalloc(size_t size);
size_t fz_malloc_usable_size(void *p);
int spanheap_malloc_stats(sh_heap_stats *out);
int spanheap_malloc_owns(const void *p);

enum { MAX_HELD = 128, MAX_STALE = 32, PAGE = 4096 };

typedef struct held {
    uint8_t *p;
    size_t usable;
    uint8_t fill;
} held;

static struct {
    held b[MAX_HELD];
    int n;
    uintptr_t stale[MAX_STALE];
    int nstale;
    uint8_t next_fill;
} m;

/* ---- model helpers ----------------------------------------------------- */

static void fill(held *b)
{
    b->fill = (uint8_t)(++m.next_fill | 1);
    memset(b->p, b->fill, b->usable);
}

static void check_bytes(const uint8_t *p, size_t n, uint8_t v, const char *what)
{
    static uint8_t want[4096];
    memset(want, v, sizeof want);
    for (size_t off = 0; off < n; off += sizeof want) {
        size_t k = n - off < sizeof want ? n - off : sizeof want;
        FZ_CHECK(memcmp(p + off, want, k) == 0, "%s: %p (%zu bytes) differs near offset %zu",
                 what, (const void *)p, n, off);
    }
}

static void check_intact(const held *b)
{
    check_bytes(b->p, b->usable, b->fill, "held block changed");
}

/* The cheap form used between operations: both ends of every block (where
 * a neighbour's overrun or a double hand-out shows first); the whole block
 * is checked when it is freed or reallocated. */
static void check_ends(const held *b)
{
    size_t k = b->usable < 64 ? b->usable : 64;
    check_bytes(b->p, k, b->fill, "held block's head changed");
    check_bytes(b->p + b->usable - k, k, b->fill, "held block's tail changed");
}

static held *containing(uintptr_t a)
{
    for (int i = 0; i < m.n; i++)
        if (a - (uintptr_t)m.b[i].p < m.b[i].usable)
            return &m.b[i];
    return NULL;
}

static held *pick(fz_input *in)
{
    return m.n ? &m.b[fz_u8(in) % m.n] : NULL;
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

/* A new block of at least size bytes aligned to align: checked, recorded
 * and filled (the caller checks contents first where the API promises
 * some, calloc's zeros or realloc's copy). */
static held *add(void *p, size_t size, size_t align)
{
    FZ_CHECK((uintptr_t)p % align == 0, "%p not aligned to %zu", p, align);
    size_t u = fz_malloc_usable_size(p);
    FZ_CHECK(u >= size, "usable %zu < requested %zu", u, size);
    FZ_CHECK(spanheap_malloc_owns(p), "%p not owned by the heap", p);
    for (int i = 0; i < m.n; i++) {
        uintptr_t q = (uintptr_t)m.b[i].p;
        FZ_CHECK((uintptr_t)p + u <= q || q + m.b[i].usable <= (uintptr_t)p,
                 "new block %p+%zu overlaps held block %p+%zu", p, u, (void *)q, m.b[i].usable);
    }
    held *b = &m.b[m.n++];
    *b = (held){.p = p, .usable = u};
    return b;
}

/* NULL from an allocation: only for want_errno (ENOMEM, EINVAL) */
static void check_null(void *p, int want_errno, const char *what)
{
    FZ_CHECK(p == NULL, "%s succeeded", what);
    FZ_CHECK(errno == want_errno, "%s: errno %d, expected %d", what, errno, want_errno);
}

/* ---- allocation -------------------------------------------------------- */

static void op_malloc(fz_input *in)
{
    size_t size = fz_size(in);
    errno = 0;
    void *p = fz_malloc(size);
    if (!p) {
        check_null(p, ENOMEM, "malloc");
        return;
    }
    fill(add(p, size, 16));
}

static void op_calloc(fz_input *in)
{
    size_t n, size;
    uint8_t how = fz_u8(in);
    if (how % 8 == 7) { /* overflowing product */
        n = ((size_t)1 << 33) + fz_u8(in);
        size = ((size_t)1 << 31) + fz_u8(in);
    } else {
        n = 1 + (how >> 3);
        size = fz_size(in) / n;
    }
    errno = 0;
    void *p = fz_calloc(n, size);
    if (!p) {
        check_null(p, ENOMEM, "calloc");
        return;
    }
    FZ_CHECK(how % 8 != 7, "calloc(%zu, %zu) overflowed yet succeeded", n, size);
    held *b = add(p, n * size, 16);
    check_bytes(b->p, n * size, 0, "calloc not zeroed");
    fill(b);
}

static void op_realloc(fz_input *in)
{
    uint8_t how = fz_u8(in);
    held *b = how & 1 ? pick(in) : NULL;
    size_t size = fz_size(in);
    if (b)
        check_intact(b);
    uint8_t *old = b ? b->p : NULL;
    size_t old_usable = b ? b->usable : 0;
    uint8_t old_fill = b ? b->fill : 0;
    errno = 0;
    if (how & 2) { /* reallocarray, sometimes overflowing */
        size_t n = how & 4 ? ((size_t)1 << 40) : 1;
        size_t each = how & 4 ? ((size_t)1 << 30) : size;
        void *q = fz_reallocarray(old, n, each);
        if (how & 4) {
            check_null(q, ENOMEM, "overflowing reallocarray");
            if (b)
                check_intact(b); /* the old block stays valid and unchanged */
            return;
        }
        if (!q && size == 0 && old) { /* glibc: size 0 frees */
            drop(b);
            remember_stale(old);
            return;
        }
        FZ_CHECK(q != NULL, "reallocarray(%p, 1, %zu) failed: %d", (void *)old, size, errno);
        if (b)
            drop(b);
        held *nb = add(q, size, 16);
        size_t keep = size < old_usable ? size : old_usable;
        check_bytes(nb->p, keep, old_fill, "reallocarray lost contents");
        if (old && q != old)
            remember_stale(old);
        fill(nb);
        return;
    }
    void *q = fz_realloc(old, size);
    if (old && size == 0) {
        FZ_CHECK(q == NULL, "realloc(p, 0) returned %p", q);
        drop(b);
        remember_stale(old);
        return;
    }
    if (!q) {
        check_null(q, ENOMEM, "realloc");
        if (b)
            check_intact(b);
        return;
    }
    if (b)
        drop(b);
    held *nb = add(q, size, 16);
    size_t keep = size < old_usable ? size : old_usable;
    check_bytes(nb->p, keep, old_fill, "realloc lost contents");
    if (old && q != old)
        remember_stale(old);
    fill(nb);
}

static void op_memalign_family(fz_input *in)
{
    uint8_t how = fz_u8(in);
    size_t size = fz_size(in);
    size_t align = fz_alignment(in);
    void *p = NULL;
    errno = 0;
    switch (how % 6) {
    case 0: {
        if (how & 8)
            align = align * 3 + 8 * (how >> 4); /* not a power of two, or below sizeof(void *) */
        if (how & 64)
            align = 4;
        int bad = (align & (align - 1)) || align % sizeof(void *);
        void *out = (void *)&m; /* must stay untouched on failure */
        int rc = fz_posix_memalign(&out, align, size);
        if (bad) {
            FZ_CHECK(rc == EINVAL && out == (void *)&m, "posix_memalign(%zu): %d", align, rc);
            return;
        }
        if (rc == ENOMEM)
            return;
        FZ_CHECK(rc == 0, "posix_memalign(%zu, %zu): %d", align, size, rc);
        FZ_CHECK(errno == 0, "posix_memalign changed errno");
        p = out;
        break;
    }
    case 1:
        if (how & 8) {
            check_null(fz_aligned_alloc(align * 3, size), EINVAL, "aligned_alloc(3 * 2^k)");
            return;
        }
        p = fz_aligned_alloc(align, size);
        break;
    case 2:
        if (how & 8) {
            /* any alignment: rounded up to a power of two */
            size_t a = align + (how >> 4);
            p = fz_memalign(a, size);
            while (align < a)
                align <<= 1;
        } else if (how & 16) {
            check_null(fz_memalign(((size_t)1 << 62) + 1 + (how >> 5), size), EINVAL,
                       "memalign(> 2^62)");
            return;
        } else {
            p = fz_memalign(align, size);
        }
        break;
    case 3:
        p = fz_valloc(size);
        align = PAGE;
        break;
    case 4:
        p = fz_pvalloc(size);
        align = PAGE;
        size = size ? (size + PAGE - 1) & ~(size_t)(PAGE - 1) : PAGE;
        break;
    default: /* requests too large for any heap */
        size = (size_t)-1 - fz_u8(in) * (size_t)PAGE;
        switch (how >> 3 & 3) {
        case 0: check_null(fz_malloc(size), ENOMEM, "huge malloc"); break;
        case 1: check_null(fz_pvalloc(size), ENOMEM, "huge pvalloc"); break;
        case 2: check_null(fz_memalign(64, size), ENOMEM, "huge memalign"); break;
        default: check_null(fz_aligned_alloc(PAGE, size / 2), ENOMEM, "huge aligned_alloc"); break;
        }
        return;
    }
    if (!p) {
        check_null(p, ENOMEM, "aligned allocation");
        return;
    }
    fill(add(p, size, align < 16 ? 16 : align));
}

/* ---- free and bad pointers --------------------------------------------- */

static void op_free(fz_input *in)
{
    held *b = pick(in);
    if (!b)
        return;
    check_intact(b);
    void *p = b->p;
    fz_free(p);
    FZ_CHECK(fz_malloc_usable_size(p) == 0, "freed %p still has a usable size", p);
    drop(b);
    remember_stale(p);
}

/* free, malloc_usable_size and realloc of a pointer that is no block the
 * program owns: ignored (free reports it on stderr), 0, NULL with EINVAL. */
static void op_bad_pointer(fz_input *in)
{
    int stack_probe = 0;
    void *libc_probe = malloc(48);
    FZ_CHECK(libc_probe != NULL, "malloc");
    held *b = pick(in);
    uintptr_t a = 0;
    switch (fz_u8(in) % 6) {
    case 0: /* interior */
        if (b && b->usable > 1)
            a = (uintptr_t)b->p + 1 + fz_u32(in) % (b->usable - 1);
        break;
    case 1: /* interior, 16-aligned */
        if (b && b->usable > 16)
            a = (uintptr_t)b->p + 16 * (1 + fz_u32(in) % ((b->usable - 1) / 16));
        break;
    case 2: /* stale */
        if (m.nstale)
            a = m.stale[fz_u8(in) % m.nstale];
        break;
    case 3: /* neighbours: free or never handed out */
        if (b)
            a = (uintptr_t)b->p + (uintptr_t)((int)(fz_u8(in) % 9) - 4) * b->usable;
        break;
    case 4:
        a = (uintptr_t)&stack_probe;
        break;
    default:
        a = (uintptr_t)libc_probe;
        break;
    }
    held *in_block = a ? containing(a) : NULL;
    /* Not fed: a block we own (no misuse), and an address that a neighbour
     * probe found in the meta allocator's reservation: free() trusts such
     * addresses to be its blocks (docs/malloc.md), and the program never
     * had them from malloc. */
    if (!a || (in_block && in_block->p == (uint8_t *)a) || sh_meta_owns((void *)a)) {
        free(libc_probe);
        return;
    }
    void *p = (void *)a;
    FZ_CHECK(fz_malloc_usable_size(p) == 0, "usable size of bad pointer %p", p);
    FZ_CHECK(!spanheap_malloc_owns(p), "bad pointer %p owned", p);
    switch (fz_u8(in) % 3) {
    case 0:
        fz_free(p);
        break;
    case 1:
        errno = 0;
        check_null(fz_realloc(p, 1 + fz_u8(in)), EINVAL, "realloc of a bad pointer");
        break;
    default:
        break;
    }
    if (in_block)
        check_intact(in_block);
    free(libc_probe);
}

/* ---- queries ----------------------------------------------------------- */

static void op_usable(fz_input *in)
{
    held *b = pick(in);
    if (b)
        FZ_CHECK(fz_malloc_usable_size(b->p) == b->usable, "usable size of %p changed",
                 (void *)b->p);
}

/* The default heap serves only this target's calls, so its live bytes are
 * exactly the model's. */
static void check_stats(void)
{
    uint64_t live = 0;
    for (int i = 0; i < m.n; i++)
        live += m.b[i].usable;
    sh_heap_stats st;
    FZ_CHECK(spanheap_malloc_stats(&st) == 0, "no default heap");
    FZ_CHECK(st.live_bytes == live, "live_bytes %llu, model %llu",
             (unsigned long long)st.live_bytes, (unsigned long long)live);
}

/* ---- one input ---------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int started;
    if (!started) {
        /* read once, when the shim creates its heap: keep the arena small */
        setenv("SPANHEAP_MALLOC_RESERVE", "1g", 1);
        started = 1;
    }
    fz_input in = {data, size};
    memset(&m, 0, sizeof m);
    while (fz_more(&in)) {
        uint8_t op = fz_u8(&in);
        if (m.n >= MAX_HELD && op % 12 < 4)
            op = 4; /* full: free instead of allocating */
        switch (op % 12) {
        case 0: op_malloc(&in); break;
        case 1: op_calloc(&in); break;
        case 2: op_realloc(&in); break;
        case 3: op_memalign_family(&in); break;
        case 4: case 5: op_free(&in); break;
        case 6: case 7: op_bad_pointer(&in); break;
        case 8: op_usable(&in); break;
        case 9: check_stats(); break;
        default:
            for (int i = 0; i < m.n; i++)
                check_ends(&m.b[i]);
            break;
        }
    }
    for (int i = 0; i < m.n; i++) {
        check_intact(&m.b[i]);
        fz_free(m.b[i].p);
    }
    m.n = 0;
    check_stats();
    return 0;
}
