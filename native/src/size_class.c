/*
 * size_class.c — block sizes and the geometry of real spans.
 *
 * Classes: 16..128 in steps of 16 (8 classes), then four per power of two
 * up to 1 MiB (2^p + k*2^(p-2), k = 1..4): 60 classes, all multiples of 16;
 * above 128 B a request wastes at most 25% (129 B in a 160 B block is the
 * worst case, 24%).
 *
 * Geometry of a class (reported by sh_class_get, and read by the Java fast
 * path, so it must be exactly what span.c uses):
 *   payload_offset = max(SH_HEADER_SIZE, min(4096, lowest set bit of size))
 *   so every block start is aligned to min(4096, lowbit(block_size)); an
 *   aligned request picks the smallest class whose blocks are naturally
 *   aligned (sh_class_for_aligned).
 *   real_span_size = the smallest of 16/64/256 KiB, 1/2 MiB holding at least
 *   SH_MIN_BLOCKS (8) blocks (2 MiB, the whole virtual span, for the biggest
 *   classes), and at least SH_SMALL_MIN_BLOCKS (60) for blocks of up to
 *   SH_SMALL_BAND_MAX (1 KiB): 16 KiB up to 256 B, 64 KiB for 320 B..1 KiB.
 *   A small-block span that holds only 15..50 blocks is refilled, retired
 *   and made reusable every few dozen operations, and a thread's random
 *   frees spread over many such spans (larson at 16..1024 B did 1.7x the
 *   work per CPU-second with the band, docs/benchmarks/native/larson-scaling).
 *   Few distinct real sizes, so free spans are shared by many classes.
 */
#include <pthread.h>

#include "size_class.h"

#include "base.h"

const uint32_t sh_real_sizes[SH_NUM_REAL] = {16u << 10, 64u << 10, 256u << 10, 1u << 20, 2u << 20};
/* the bands (base.h): the first SH_SMALL_REAL real sizes fit a small-band
 * virtual span, the others need a large-band one */
_Static_assert((64u << 10) <= SH_SMALL_SPAN_SIZE && (256u << 10) > SH_SMALL_SPAN_SIZE && SH_SMALL_REAL == 2,
               "sh_real_sizes[0..SH_SMALL_REAL) and only they fit the small band");

sh_class_desc sh_classes[SH_NUM_CLASSES];
uint8_t sh_small_class[SH_LUT_MAX / 16 + 1];

static uint32_t class_block_size(unsigned c)
{
    if (c < 8)
        return 16u * (c + 1);
    unsigned p = 7 + (c - 8) / 4, k = (c - 8) % 4 + 1;
    return (1u << p) + k * (1u << (p - 2));
}

static void classes_build(void)
{
    for (unsigned c = 0; c < SH_NUM_CLASSES; c++) {
        sh_class_desc *d = &sh_classes[c];
        uint32_t bs = class_block_size(c);
        uint32_t low = bs & (~bs + 1);
        uint32_t align = low < SH_MAX_ALIGN_SMALL ? low : SH_MAX_ALIGN_SMALL;
        uint32_t off = align > SH_HEADER_SIZE ? align : SH_HEADER_SIZE;
        uint32_t min_blocks = bs <= SH_SMALL_BAND_MAX ? SH_SMALL_MIN_BLOCKS : SH_MIN_BLOCKS;
        unsigned ri = SH_NUM_REAL - 1;
        for (unsigned r = 0; r < SH_NUM_REAL; r++) {
            if ((sh_real_sizes[r] - off) / bs >= min_blocks) {
                ri = r;
                break;
            }
        }
        d->block_size = bs;
        d->payload_offset = off;
        d->real_span_size = sh_real_sizes[ri];
        d->real_idx = ri;
        d->block_count = (sh_real_sizes[ri] - off) / bs;
        d->align = align;
        d->recip = (((uint64_t)1 << 43) + bs - 1) / bs;
    }
    for (unsigned j = 0; j <= SH_LUT_MAX / 16; j++)
        sh_small_class[j] = (uint8_t)sh_size_to_class_calc((size_t)j * 16);
}

static pthread_once_t classes_once = PTHREAD_ONCE_INIT;

/* Built before main (constructor) so the hot paths never check; the
 * pthread_once makes the public class queries safe even if called from
 * another constructor first. */
__attribute__((constructor)) void sh_size_classes_init(void)
{
    pthread_once(&classes_once, classes_build);
}

int sh_class_for_aligned(size_t size, size_t alignment)
{
    if (alignment > SH_MAX_ALIGN_SMALL)
        return -1;
    size_t need = size > alignment ? size : alignment;
    if (need > SH_MAX_SMALL)
        return -1;
    for (unsigned c = sh_size_to_class(need); c < SH_NUM_CLASSES; c++)
        if (sh_classes[c].align >= alignment)
            return (int)c;
    return -1;
}

SH_API int sh_class_count(void)
{
    return SH_NUM_CLASSES;
}

SH_API int sh_class_of(size_t size)
{
    return size <= SH_MAX_SMALL ? (int)sh_size_to_class_calc(size) : -SH_E_INVALID;
}

SH_API int sh_class_get(int idx, sh_class_info *out)
{
    sh_size_classes_init();
    if (idx < 0 || idx >= SH_NUM_CLASSES || out == NULL)
        return -SH_E_INVALID; /* negated, as every int-returning call */
    const sh_class_desc *d = &sh_classes[idx];
    out->block_size = d->block_size;
    out->payload_offset = d->payload_offset;
    out->block_count = d->block_count;
    out->real_span_size = d->real_span_size;
    return SH_OK;
}
