/*
 * span_header.h — the header at the start of every virtual span: its
 * layout and the anchor word. Spans are carved by arena.c, kept free by
 * span_pool.c and used by span.c and the layers above, so the layout is
 * here, below all of them (span.h declares span.c's functions).
 */
#ifndef SH_SPAN_HEADER_H
#define SH_SPAN_HEADER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"

/* The header occupies the first SH_HEADER_SIZE bytes of a virtual span (the
 * page holding it is never madvised, so stale readers can always read it).
 * Line 0 holds the stable prefix read by Java and read-mostly fields that
 * every free validates against; line 1 the anchor written by remote
 * frees; line 2 the links. The owner's local free list, written by every
 * local allocation and free, is not here but in its LAB (heap_types.h):
 * headers sit 128 KiB or 2 MiB apart and so share the L1's and L2's cache
 * sets. */

/* Anchor word (one 64-bit CAS covers the remote free list and the state):
 *
 *   63      55 54          39 38   36 35          18 17           0
 *  +----------+--------------+-------+--------------+--------------+
 *  | unused   |  LAB index   | state |    count     |    head      |
 *  +----------+--------------+-------+--------------+--------------+
 *
 *  head  : (offset of the first block of the shared free list) / 16, 0 = empty
 *  count : HOT span: blocks in the shared (remote) list;
 *          otherwise: every free block = listed + never bumped
 *  state : SH_ST_* below; LAB index: the owning LAB (HOT/FLOATING/REUSABLE)
 *
 * No ABA tag is needed: the list is only pushed to (CAS) or taken whole
 * (CAS to empty); a push that sees the same head again links to the current
 * head, which is correct, and count/state are compared in the same CAS. */
enum {
    SH_ST_FREE = 0,      /* in the span pool (or being set up)              */
    SH_ST_HOT = 1,       /* a LAB allocates from it                         */
    SH_ST_FLOATING = 2,  /* owned, few free blocks, in no list              */
    SH_ST_REUSABLE = 3,  /* in its owning LAB's reusable set                */
    SH_ST_EMPTYING = 4   /* all blocks free; the winner returns it to pool  */
};

#define SH_ANCHOR_HEAD_MASK ((uint64_t)0x3ffff)
#define SH_ANCHOR_COUNT_SHIFT 18
#define SH_ANCHOR_STATE_SHIFT 36
#define SH_ANCHOR_LAB_SHIFT 39

static inline uint64_t sh_anchor_head(uint64_t a) { return a & SH_ANCHOR_HEAD_MASK; }
static inline uint32_t sh_anchor_count(uint64_t a)
{
    return (uint32_t)((a >> SH_ANCHOR_COUNT_SHIFT) & 0x3ffff);
}
static inline unsigned sh_anchor_state(uint64_t a) { return (unsigned)((a >> SH_ANCHOR_STATE_SHIFT) & 7); }
static inline unsigned sh_anchor_lab(uint64_t a) { return (unsigned)((a >> SH_ANCHOR_LAB_SHIFT) & 0xffff); }
static inline uint64_t sh_anchor_pack(unsigned state, unsigned lab, uint32_t count, uint64_t head)
{
    return head | ((uint64_t)count << SH_ANCHOR_COUNT_SHIFT) | ((uint64_t)state << SH_ANCHOR_STATE_SHIFT) |
           ((uint64_t)lab << SH_ANCHOR_LAB_SHIFT);
}

typedef struct sh_span {
    /* line 0: stable prefix (spanheap.h) and read-mostly fields: every
     * free reads this line, so nothing here is written per block */
    _Atomic uint32_t magic;       /* SH_SPAN_MAGIC while it holds a class   */
    _Atomic uint16_t size_class;  /* offset 4                               */
    uint16_t reserved;
    _Atomic uint32_t bump;        /* blocks below it were handed to the
                                     local list (sh_span_extend, a chunk at
                                     a time); the owner writes it only while
                                     HOT                                     */
    uint32_t touched;             /* bytes counted resident (pool owner)    */
    uint32_t advised;             /* bytes currently given back (madvise)   */
    uint32_t kept;                /* in the pool: resident bytes counted in
                                     heap->pool_kept (not madvised)          */
    /* copy of the class geometry (sh_classes[size_class]); written with
     * size_class, before the magic */
    _Atomic uint32_t blk_size;    /* offset 24                              */
    _Atomic uint32_t blk_off;     /* payload offset                         */
    _Atomic uint32_t blk_count;
    uint32_t unused0;
    _Atomic uint64_t blk_recip;   /* offset 40, see sh_block_index          */
    /* the entry of the retired ring (heap_types.h, sh_retired) whose LAB
     * keeps its own frees into this span in a private chain, or NULL;
     * written by that LAB on span events (retire, take, evict) and cleared
     * when the span is set up for a class; read by every free of a span
     * that is not the freeing LAB's hot one, which compares it with its own
     * ring (span.c, "Frees into the LAB's retired spans") */
    _Atomic(struct sh_retired *) owner_slot; /* offset 48               */
    char pad0[64 - 56];
    /* line 1: shared, written by every remote free */
    _Atomic uint64_t anchor;
    char pad1[56];
    /* line 2: links, written on span events */
    _Atomic uint64_t pool_next;   /* Treiber link; read by racing pops      */
    struct sh_span *rl_prev;      /* reusable set; owning LAB's lock        */
    struct sh_span *rl_next;
} sh_span;

_Static_assert(sizeof(sh_span) <= SH_HEADER_SIZE, "span header too big");
_Static_assert(offsetof(sh_span, size_class) == 4, "stable header layout");
_Static_assert(offsetof(sh_span, anchor) == 64, "anchor on its own line");
_Static_assert(offsetof(sh_span, blk_recip) == 40, "geometry on line 0");
_Static_assert(offsetof(sh_span, owner_slot) < 64, "owner slot on line 0: read with the geometry");

/* The span holding arena address p (arena.c, "Geometry"): bit
 * SH_BAND_SHIFT set means the small band, then the band's mask. A branch
 * predicted for the small band, where most frees land: the mask then costs
 * no more latency on the way to the header load than one fixed mask did.
 * Measured against the alternatives (larson, 2-core VM): a select of both
 * masks (cmov) adds a cycle on that path, a mask shifted by the band bit
 * four, and both made frees of 16..128 B blocks 4-6% slower, where the
 * branch costs 0-2%; random sizes of both bands (16..16,384 B) showed no
 * misprediction cost (docs/benchmarks/native/geometry-bands). */
static inline sh_span *sh_span_of(const void *p)
{
    uintptr_t u = (uintptr_t)p;
    if (__builtin_expect_with_probability((u >> SH_BAND_SHIFT) & 1, 1, 0.99))
        return (sh_span *)(u & ~(uintptr_t)(SH_SMALL_SPAN_SIZE - 1));
    return (sh_span *)(u & ~(uintptr_t)(SH_SPAN_SIZE - 1));
}
static inline void *sh_block_at(const sh_span *s, uint64_t head)
{
    return head ? (char *)s + (head << 4) : NULL;
}
static inline uint64_t sh_head_of(const sh_span *s, const void *b)
{
    return (uint64_t)((const char *)b - (const char *)s) >> 4;
}

#endif /* SH_SPAN_HEADER_H */
