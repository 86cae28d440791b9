/*
 * fuzz_input.h — reads a fuzzer's input as a stream of small decisions.
 *
 * Running out of bytes yields zeros rather than stopping mid-operation, so
 * every prefix of an input is itself a valid program (libFuzzer's mutations
 * that cut inputs short then still exercise something).
 */
#ifndef SH_FUZZ_INPUT_H
#define SH_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct fz_input {
    const uint8_t *p;
    size_t left;
} fz_input;

static inline int fz_more(const fz_input *in)
{
    return in->left > 0;
}

static inline uint8_t fz_u8(fz_input *in)
{
    if (!in->left)
        return 0;
    in->left--;
    return *in->p++;
}

static inline uint32_t fz_u16(fz_input *in)
{
    uint32_t lo = fz_u8(in);
    return lo | (uint32_t)fz_u8(in) << 8;
}

static inline uint32_t fz_u32(fz_input *in)
{
    uint32_t lo = fz_u16(in);
    return lo | fz_u16(in) << 16;
}

/* A request size, skewed towards small ones: most allocations in real use
 * are small, and the large paths cost an mmap per call. */
static inline size_t fz_size(fz_input *in)
{
    uint8_t kind = fz_u8(in);
    switch (kind & 7) {
    case 0: case 1: case 2:
        return kind >> 3;                          /* 0..31: the smallest classes */
    case 3: case 4:
        return fz_u16(in) & 0xfff;                 /* up to 4 KiB */
    case 5:
        return fz_u32(in) & 0x3ffff;               /* up to 256 KiB */
    case 6:
        return ((size_t)1 << 20) - 64 + (fz_u8(in) & 127); /* around the largest class */
    default:
        return fz_u32(in) % ((size_t)5 << 20);     /* up to 5 MiB: large objects */
    }
}

/* An alignment 2^0 .. 2^20 (the core serves up to 4 KiB from classes). */
static inline size_t fz_alignment(fz_input *in)
{
    return (size_t)1 << (fz_u8(in) % 21);
}

/* A failed check: report and abort, which libFuzzer records as a crash. */
#define FZ_CHECK(cond, ...)                                                        \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "%s:%d: fuzz check failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                          \
            fputc('\n', stderr);                                                   \
            abort();                                                               \
        }                                                                          \
    } while (0)

#endif
