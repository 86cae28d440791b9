/*
 * spanheap.h — public C API of the spanheap native core.
 *
 * A heap owns one large reservation of virtual memory (the arena), cut into
 * virtual spans of two fixed sizes (see sh_layout). Small blocks (up to the largest size class)
 * live in real spans inside virtual spans; larger requests are mapped
 * directly. Several heaps may live in one process, each with its own arena.
 *
 * Thread safety: every function except sh_heap_create/sh_heap_destroy may be
 * called concurrently from any thread on the same heap. sh_heap_destroy must
 * not race with any other call on that heap.
 *
 * Java bindings (core/, org.spanheap.internal) mirror the structs and
 * constants below; keep both in step (SH_ABI_VERSION). A binding checks
 * sh_abi_version() and sh_abi_sizeof() when it loads the library.
 *
 * Errors, one rule for the whole API:
 *   - a function returning int returns SH_OK (0) or a count (>= 0) on
 *     success and a negated error code, -SH_E_*, on failure;
 *   - a function returning a pointer returns NULL on failure and sets
 *     this thread's sh_last_error();
 *   - sh_last_error() and the on_error callback carry the code itself,
 *     SH_E_* (positive).
 * sh_error_name() names either form: sh_error_name(-SH_E_LIMIT) and
 * sh_error_name(SH_E_LIMIT) are both "SH_E_LIMIT".
 */
#ifndef SPANHEAP_H
#define SPANHEAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a struct layout or constant below changes meaning.
 * 2: sh_free_checked and sh_class_get return negated codes; sh_error_name,
 *    sh_abi_sizeof.
 * 4: sh_layout names two bands of virtual spans (small_span_size,
 *    band_shift). */
#define SH_ABI_VERSION 4

/* SH_ABI_VERSION of the headers this library was built from. A binding
 * (the Java loader) checks it before any other call and refuses a library
 * whose version differs from the one it mirrors. */
int sh_abi_version(void);

/* Zeroes n bytes at p (any memory; the Java binding's zeroed allocations):
 * memset, or on x86-64 with AVX2 a store loop at sizes where it is faster. */
void sh_zero(void *p, size_t n);

/* Upper bound on the number of size classes; sh_heap_stats arrays use it. */
#define SH_MAX_CLASSES 64

/* Error codes; an int-returning function returns them negated (see above). */
typedef enum sh_error {
    SH_OK = 0,
    SH_E_INVALID = 1,      /* bad argument: size, alignment, class index   */
    SH_E_NOMEM = 2,        /* arena exhausted or the OS refused memory      */
    SH_E_LIMIT = 3,        /* the configured byte limit would be exceeded   */
    SH_E_NOT_OWNED = 4,    /* pointer is not a block of this heap           */
    SH_E_DOUBLE_FREE = 5,  /* block is already free                         */
    SH_E_INTERIOR = 6      /* pointer is inside a block, not at its start   */
} sh_error;

typedef struct sh_heap sh_heap;

/* Called when sh_free detects a bad pointer. The block is left untouched. */
typedef void (*sh_error_fn)(sh_heap *heap, int error, void *ptr, void *ctx);

typedef struct sh_config {
    size_t reserve_bytes;   /* arena reservation, rounded up to 32 MiB;
                               0 = default (1 TiB)                          */
    size_t byte_limit;      /* cap on memory taken from the OS by spans in
                               use and large objects; 0 = unlimited          */
    unsigned reuse_threshold_pct; /* scalloc's reusability threshold, in
                               percent of a span's blocks; 0 = default      */
    int allow_huge_pages;   /* 0 (default): MADV_NOHUGEPAGE on the arena   */
    sh_error_fn on_error;   /* NULL = report once on stderr, then ignore   */
    void *on_error_ctx;
} sh_config;

/* Fills cfg with the defaults. */
void sh_config_init(sh_config *cfg);

/* Creates a heap; cfg NULL means defaults. NULL on failure (sh_last_error). */
sh_heap *sh_heap_create(const sh_config *cfg);

/* Releases the arena and all large objects. Threads that used the heap keep
 * no dangling state (their per-thread caches for it are invalidated). */
void sh_heap_destroy(sh_heap *heap);

/* Allocates size bytes (size 0 allowed: a minimal block), aligned to at
 * least 16. Contents are unspecified. NULL on failure, sh_last_error says
 * why. */
void *sh_alloc(sh_heap *heap, size_t size);

/* As sh_alloc, aligned to alignment (a power of two). */
void *sh_alloc_aligned(sh_heap *heap, size_t size, size_t alignment);

/* Frees a block from sh_alloc/sh_alloc_aligned. NULL is ignored. A bad
 * pointer (not owned, double free, interior) is reported to on_error and
 * otherwise ignored: nothing is corrupted. */
void sh_free(sh_heap *heap, void *ptr);

/* As sh_free, but returns SH_OK or a negated error (-SH_E_NOT_OWNED,
 * -SH_E_DOUBLE_FREE, -SH_E_INTERIOR, -SH_E_INVALID for a NULL heap,
 * -SH_E_NOMEM if no thread state could be had) instead of calling
 * on_error. */
int sh_free_checked(sh_heap *heap, void *ptr);

/* Usable bytes of the block at ptr; 0 if ptr is not a live block's start. */
size_t sh_usable_size(sh_heap *heap, const void *ptr);

/* Error code of the last failing call on this OS thread. */
int sh_last_error(void);

/* The name of an error code, "SH_E_DOUBLE_FREE"; code may be negated, as
 * returned. "SH_E_UNKNOWN" for a code this library does not know. The
 * string is static. */
const char *sh_error_name(int code);

/* Gives memory that the heap holds but does not use back to the OS: the
 * calling thread's deferred frees and spare spans go to the span pool, every
 * pooled span is madvised down to its header page (also those the pool
 * keeps resident for fast reuse), and the freed large mappings kept for
 * reuse are unmapped. Returns the bytes given back: committed_bytes drops by
 * as much when no other thread uses the heap meanwhile. Other threads'
 * caches and spans in use are not touched. May be called concurrently with
 * any call but sh_heap_destroy; an allocation racing with it may map a new
 * span instead of reusing a pooled one. */
size_t sh_trim(sh_heap *heap);

/* ---- size classes ---------------------------------------------------- */

typedef struct sh_class_info {
    uint32_t block_size;     /* bytes per block                           */
    uint32_t payload_offset; /* offset of the first block from span start */
    uint32_t block_count;    /* blocks per real span                      */
    uint32_t real_span_size; /* bytes of the real span                    */
} sh_class_info;

/* Number of size classes (<= SH_MAX_CLASSES). */
int sh_class_count(void);
/* Index of the smallest class that holds size bytes, or -SH_E_INVALID (-1)
 * if too large. */
int sh_class_of(size_t size);
/* Fills *out for class idx; SH_OK, or -SH_E_INVALID for a bad index. */
int sh_class_get(int idx, sh_class_info *out);

/* ---- batch entry points for the Java thread caches -------------------
 *
 * Blocks moved by these calls are *cached free* blocks: they carry the free
 * mark (see sh_layout.free_key) and are not counted as live by the caller's
 * heap until the Java side hands them out. */

/* Takes up to n free blocks of class cls into out[0..). Returns the number
 * taken (>= 1), or a negative sh_error (-SH_E_LIMIT, -SH_E_NOMEM,
 * -SH_E_INVALID). */
int sh_alloc_batch(sh_heap *heap, int cls, void **out, int n);

/* Returns n cached free blocks (any classes, already free-marked) to the
 * heap. Returns SH_OK or a negative sh_error if some pointer was not a
 * block of this heap (such pointers are skipped). */
int sh_free_batch(sh_heap *heap, void *const *blocks, int n);

/* The Java thread cache's refill and drain, each one call with its
 * bookkeeping, so that a caller that dies right after the call loses nothing
 * (a Java StackOverflowError can strike at the next method entry). m is the
 * cache's long[] and m[top] the magazine's top index.
 * sh_cache_refill: sh_alloc_batch into m[base..base+n), then m[top] = base +
 * taken; returns taken (>= 1) or a negative sh_error (m unchanged).
 * sh_cache_drain: sh_free_batch of m[base..base+n), then moves
 * m[base+n..base+count) down to m[base..) and sets m[top] = base + count - n;
 * returns as sh_free_batch. -SH_E_INVALID for bad indices. */
int sh_cache_refill(sh_heap *heap, int cls, int64_t *m, int base, int n, int top);
int sh_cache_drain(sh_heap *heap, int64_t *m, int base, int n, int count, int top);

/* ---- layout shared with the Java fast path ---------------------------
 *
 * The arena has two bands of virtual spans: an arena address a belongs to
 * the small band, whose virtual spans are small_span_size bytes, when bit
 * band_shift of a is set, else to the large band of span_size bytes. The
 * virtual span holding a starts at a & ~(small_span_size - 1) or
 * a & ~(span_size - 1) accordingly (arena_base is aligned to
 * 2^(band_shift + 1)).
 *
 * Every virtual span starts with a header whose first 8 bytes are stable:
 *
 *   offset 0  uint32  magic       SH_SPAN_MAGIC while the span holds a size
 *                                 class, anything else otherwise
 *   offset 4  uint16  size_class
 *   offset 6  uint16  reserved
 *
 * A block is free (in a span free list, in the span pool's spans, or in a
 * Java cache) exactly when its second 8-byte word equals
 * (free_key ^ block_address); every allocation path clears that word. */
#define SH_SPAN_MAGIC 0x5350414eu /* "SPAN" */

typedef struct sh_layout {
    uint64_t arena_base;     /* first byte of the arena, aligned to
                                2^(band_shift + 1)                          */
    uint64_t arena_size;     /* bytes reserved                              */
    uint64_t span_size;      /* virtual span size of the large band, a power
                                of two                                      */
    uint64_t frontier_addr;  /* address of a uint64_t: every address in
                                [arena_base, *frontier) is readable; read it
                                with acquire ordering                        */
    uint64_t free_key;       /* per-heap random key for the free mark       */
    uint64_t max_small_size; /* largest size served by a size class         */
    uint64_t small_span_size; /* virtual span size of the small band, a power
                                of two below span_size                      */
    uint64_t band_shift;     /* bit of an arena address: set = small band   */
} sh_layout;

/* Fills *out with this heap's layout. */
void sh_heap_layout(const sh_heap *heap, sh_layout *out);

/* ---- statistics ------------------------------------------------------ */

typedef struct sh_heap_stats {
    uint64_t reserved_bytes;     /* arena reservation                       */
    uint64_t committed_bytes;    /* real spans held (not returned with
                                    madvise) plus large maps; the unused tail
                                    of each virtual span is not counted      */
    uint64_t resident_bytes;     /* upper-bound estimate of memory backed by
                                    RAM (today equal to committed_bytes)     */
    uint64_t live_bytes;         /* bytes in blocks handed out (block size),
                                    including Java-cached blocks, plus large */
    uint64_t large_bytes;        /* bytes mapped for large objects          */
    uint64_t large_count;
    uint64_t limit_bytes;        /* configured byte limit, 0 = none         */
    uint64_t limited_bytes;      /* bytes counted against the limit         */
    uint64_t spans_carved;       /* virtual spans taken from the arena      */
    uint64_t spans_hot;
    uint64_t spans_floating;
    uint64_t spans_reusable;
    uint64_t spans_free;         /* in the span pool                        */
    uint64_t madvise_calls;      /* madvise calls that gave a free span's
                                    pages back (refused ones not counted)  */
    uint64_t class_live_blocks[SH_MAX_CLASSES];
    uint64_t class_spans[SH_MAX_CLASSES];
} sh_heap_stats;

/* Fills *out. Counters are exact when the heap is quiescent and a
 * consistent-enough estimate while other threads run. */
void sh_stats(sh_heap *heap, sh_heap_stats *out);

/* ---- layout check ----------------------------------------------------- */

/* The structs above, for sh_abi_sizeof. */
#define SH_STRUCT_CONFIG 1     /* sh_config     */
#define SH_STRUCT_CLASS_INFO 2 /* sh_class_info */
#define SH_STRUCT_LAYOUT 3     /* sh_layout     */
#define SH_STRUCT_HEAP_STATS 4 /* sh_heap_stats */

/* sizeof the struct `which` names, as this library was compiled; 0 for an
 * unknown which. A binding compares each with its own mirror when it loads
 * the library (with sh_abi_version), so a library built from other headers
 * is refused before any struct crosses the boundary. */
uint64_t sh_abi_sizeof(int which);

/* ---- test-only: fault injection ---------------------------------------
 *
 * For tests of the error paths (docs/testing.md, "Fault injection"): makes
 * the core's own calls of one kind to the OS fail with ENOMEM, as the OS
 * would. Process-wide, for every heap; not for production use. */
#define SH_OS_MMAP 1     /* heap creation (arena reservation), large objects
                           (mmap; mremap when a kept one grows)            */
#define SH_OS_MPROTECT 2 /* committing the next 16 MiB of an arena           */
#define SH_OS_MADVISE 3  /* giving a free span's pages back; MADV_NOHUGEPAGE  */

/* From now on, the nth call of kind (1 = the next one) and the count-1
 * calls after it fail; count -1: every call from the nth on. nth 0 disarms
 * the kind (count is then ignored). Returns SH_OK, or -SH_E_INVALID for a
 * bad kind, a negative nth, or count 0 or below -1. */
int sh_debug_fail_os_call(int kind, int64_t nth, int64_t count);

/* Calls of kind the core has made in this process, failed ones included;
 * 0 for a bad kind. */
uint64_t sh_debug_os_calls(int kind);

#ifdef __cplusplus
}
#endif
#endif /* SPANHEAP_H */
