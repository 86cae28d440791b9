/*
 * size_class.h — block sizes, payload offsets, real-span sizes
 * (size_class.c).
 */
#ifndef SH_SIZE_CLASS_H
#define SH_SIZE_CLASS_H

#include <stddef.h>
#include <stdint.h>

#include "base.h"

typedef struct sh_class_desc {
    uint32_t block_size;
    uint32_t payload_offset;
    uint32_t block_count;
    uint32_t real_span_size;
    uint32_t real_idx;       /* index into sh_real_sizes                    */
    uint32_t align;          /* natural alignment of every block (<= 4096)  */
    uint64_t recip;          /* ceil(2^43 / block_size): exact division     */
} sh_class_desc;

extern SH_HIDDEN sh_class_desc sh_classes[SH_NUM_CLASSES];
extern const uint32_t sh_real_sizes[SH_NUM_REAL];
void sh_size_classes_init(void);

/* Smallest class holding size bytes; size <= SH_MAX_SMALL. Classes:
 * 16..128 in steps of 16, then four per power of two (2^p + k*2^(p-2)). */
static inline unsigned sh_size_to_class_calc(size_t size)
{
    if (size <= 128)
        return size ? (unsigned)((size - 1) >> 4) : 0;
    unsigned p = 63u - (unsigned)__builtin_clzll((unsigned long long)(size - 1));
    unsigned k = (unsigned)((size - 1) >> (p - 2)) & 3u;
    return 8u + (p - 7u) * 4u + k;
}

/* The same for the hot paths: a table lookup up to SH_LUT_MAX (every
 * class size is a multiple of 16, so the class of ceil(size/16)*16 is the
 * class of size). The table is built with sh_classes, before any heap. */
#define SH_LUT_MAX 1024u
extern SH_HIDDEN uint8_t sh_small_class[SH_LUT_MAX / 16 + 1];
static inline unsigned sh_size_to_class(size_t size)
{
    if (SH_LIKELY(size <= SH_LUT_MAX))
        return sh_small_class[(size + 15) >> 4];
    return sh_size_to_class_calc(size);
}

/* Block index of byte offset x (from the first block); exact for x < 2^21. */
static inline uint32_t sh_block_index(const sh_class_desc *c, uint64_t x)
{
    return (uint32_t)((x * c->recip) >> 43);
}

/* Class for an aligned request, or -1 if no class's blocks are naturally
 * aligned to alignment (then it becomes a large object). */
int sh_class_for_aligned(size_t size, size_t alignment);

#endif /* SH_SIZE_CLASS_H */
