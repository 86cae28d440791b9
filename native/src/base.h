/*
 * base.h — what every layer of the spanheap native core uses: the public
 * header, the attribute macros, the geometry constants and the fork phases.
 *
 * The core is one file per layer, bottom layer first in the Makefile's
 * LAYERS (docs/native-core.md, "Layers"); each .c has a header of the same
 * name declaring what it offers the layers above it. The data read across
 * layers (the span header, LABs, the heap) is in span_header.h and
 * heap_types.h. See docs/native-core.md for the design and its reasons.
 */
#ifndef SH_BASE_H
#define SH_BASE_H

#include <stddef.h>
#include <stdint.h>

#include "spanheap.h"

#define SH_API __attribute__((visibility("default")))
#define SH_LIKELY(x) __builtin_expect(!!(x), 1)
#define SH_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define SH_NOINLINE __attribute__((noinline))
#define SH_COLD __attribute__((cold, noinline))
/* data shared only inside the library: direct (RIP-relative) access, no GOT */
#define SH_HIDDEN __attribute__((visibility("hidden")))

/* ---- geometry ---------------------------------------------------------- */

/* Two bands of virtual spans (docs/native-core.md, "Arena"): the arena is
 * cut into periods of SH_PERIOD bytes; the first half of each period holds
 * large-band virtual spans of SH_SPAN_SIZE (2 MiB, real spans of 256 KiB and
 * more), the second half small-band ones of SH_SMALL_SPAN_SIZE (128 KiB,
 * real spans of 16 and 64 KiB). So bit SH_BAND_SHIFT of an arena address
 * (the arena is period-aligned) names its band, and the span of an address
 * is one mask that this bit selects (sh_span_of). */
#define SH_SPAN_SHIFT 21u                       /* large band: 2 MiB       */
#define SH_SPAN_SIZE ((size_t)1 << SH_SPAN_SHIFT)
#define SH_SMALL_SPAN_SHIFT 17u                 /* small band: 128 KiB     */
#define SH_SMALL_SPAN_SIZE ((size_t)1 << SH_SMALL_SPAN_SHIFT)
#define SH_BAND_SHIFT 24u                       /* half a period: 16 MiB   */
#define SH_PERIOD ((size_t)2 << SH_BAND_SHIFT)  /* 32 MiB                  */
enum { SH_BAND_LARGE = 0, SH_BAND_SMALL = 1 };  /* = bit SH_BAND_SHIFT      */
#define SH_SMALL_REAL 2u                        /* real sizes [0, 2) (16 and
                                                   64 KiB) are the small band */
#define SH_PAGE ((size_t)4096)
/* 1 TiB of address space per heap (docs/native-core.md, "Arena"): each real
 * span takes a whole virtual span, and each band has half the arena, so
 * the reservation bounds how many spans a heap can hold. TSan cannot map
 * that much; its build overrides it. */
#ifndef SH_DEFAULT_RESERVE
#define SH_DEFAULT_RESERVE ((size_t)1 << 40)
#endif
#define SH_COMMIT_BYTES ((size_t)16 << 20)     /* mprotect at least 16 MiB */
#define SH_MADVISE_THRESHOLD ((size_t)32 << 10) /* scalloc's 32 KiB        */
#define SH_POOL_KEEP ((int64_t)32 << 20)        /* resident bytes the pool may
                                                   keep before it madvises  */
#define SH_NUM_CLASSES 60
#define SH_MAX_SMALL ((size_t)1 << 20)          /* largest class: 1 MiB    */
#define SH_NUM_REAL 5                           /* distinct real-span sizes */
/* real span of a class: the smallest real size holding SH_MIN_BLOCKS blocks,
 * SH_SMALL_MIN_BLOCKS for blocks of at most SH_SMALL_BAND_MAX bytes
 * (size_class.c, docs/native-core.md "Size classes") */
#define SH_MIN_BLOCKS 8u
#define SH_SMALL_BAND_MAX 1024u
#define SH_SMALL_MIN_BLOCKS 60u
#define SH_HEADER_SIZE 256u                     /* span header, rounded    */
#define SH_MAX_ALIGN_SMALL 4096u                /* alignments served by classes */
#define SH_MAX_SIZE ((size_t)1 << 46)           /* larger requests: SH_E_INVALID */
#define SH_FREE_SPAN_MAGIC 0x46524545u          /* "FREE": span is in the pool */
#define SH_MAX_LABS 65535u                      /* LAB index fits 16 bits  */
#define SH_DEFAULT_REUSE_PCT 80u                /* scalloc's default       */
#define SH_EXTEND_BYTES 4096u                  /* bump chunk moved to the
                                                   local list at once      */
#define SH_SPARE_REAL 3u                        /* LABs keep a spare empty span
                                                   of the real sizes 16..256 KiB */
#define SH_RETIRED_RING 16u                     /* spans a LAB retired, per
                                                   class, looked at before the
                                                   arena (span.c, second tier) */
#define SH_SWEEP_INTERVAL_NS 10000000u          /* a growing heap pushes idle
                                                   LABs' chains at most this
                                                   often (span.c)             */
#define SH_RETIRED_MIN_PCT 25u                  /* ...if at least this share
                                                   of their blocks is free    */

/* fork support, per layer that owns locks (arena.h, frontend.h, large.h:
 * sh_*_fork(..., phase), phases SH_FORK_*, embed.h); fork.c drives them in
 * the core's nesting order */
enum { SH_FORK_PREPARE, SH_FORK_PARENT, SH_FORK_CHILD };

#endif /* SH_BASE_H */
