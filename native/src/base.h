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

#define SH_SPAN_SHIFT 21u                       /* virtual span: 2 MiB     */
#define SH_SPAN_SIZE ((size_t)1 << SH_SPAN_SHIFT)
#define SH_PAGE ((size_t)4096)
/* 1 TiB of address space per heap (docs/native-core.md, "Arena"): each real
 * span takes a whole 2 MiB virtual span, so the reservation bounds how many
 * spans a heap can hold. TSan cannot map that much; its build overrides it. */
#ifndef SH_DEFAULT_RESERVE
#define SH_DEFAULT_RESERVE ((size_t)1 << 40)
#endif
#define SH_COMMIT_SPANS 8u                      /* mprotect 16 MiB at once */
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
#define SH_RETIRED_MIN_PCT 25u                  /* ...if at least this share
                                                   of their blocks is free    */

/* fork support, per layer that owns locks (arena.h, frontend.h, large.h:
 * sh_*_fork(..., phase), phases SH_FORK_*, embed.h); fork.c drives them in
 * the core's nesting order */
enum { SH_FORK_PREPARE, SH_FORK_PARENT, SH_FORK_CHILD };

#endif /* SH_BASE_H */
