/* Zeroing for the Java binding's zeroed allocations (SpanHeap.allocate, arenas).
 *
 * From 512 B up on x86-64 with AVX2, a loop of aligned 32-byte stores; libc's memset
 * otherwise. The loop is what the arena we are compared with does: since JDK 23
 * Unsafe.setMemory (Arena.allocate's zeroing) is a vector store loop at every size.
 * glibc 2.36 picks `rep stosb` or non-temporal stores instead, and which wins depends
 * on the host: on the AVX-512 EPYC of 2026-11-24 memset lost at 64-512 KiB (256 KiB
 * 1.5 against 1.0 us) and won at 1 MiB (6.0 against 6.9 us); on the EPYC of 2026-11-27
 * (no AVX-512) the loop won at every size from 64 KiB to 4 MiB by 5-15%
 * (docs/java-core.md, "Zeroing"). Below 512 B the call costs more than the stores.
 * Calls nothing of the core. */
#include "zero.h"
#include "base.h"

#include <stdint.h>
#include <string.h>

#define SH_ZERO_LOOP_MIN ((size_t)512)

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2"))) static void zero_avx2(void *p, size_t n)
{
    char *c = p;
    char *end = c + n;
    __m256i z = _mm256_setzero_si256();
    _mm256_storeu_si256((__m256i *)c, z); /* head, up to the first 32-byte boundary */
    char *a = (char *)(((uintptr_t)c + 32) & ~(uintptr_t)31);
    for (; a + 128 <= end; a += 128) {
        _mm256_store_si256((__m256i *)a, z);
        _mm256_store_si256((__m256i *)(a + 32), z);
        _mm256_store_si256((__m256i *)(a + 64), z);
        _mm256_store_si256((__m256i *)(a + 96), z);
    }
    for (; a + 32 <= end; a += 32)
        _mm256_store_si256((__m256i *)a, z);
    _mm256_storeu_si256((__m256i *)(end - 32), z); /* tail: n >= 512, so it stays inside */
}

/* 0 unknown, 1 has AVX2, -1 has not. A race only computes the same value twice. */
static int avx2_state;

static int has_avx2(void)
{
    int s = __atomic_load_n(&avx2_state, __ATOMIC_RELAXED);
    if (s == 0) {
        __builtin_cpu_init();
        s = __builtin_cpu_supports("avx2") ? 1 : -1;
        __atomic_store_n(&avx2_state, s, __ATOMIC_RELAXED);
    }
    return s > 0;
}
#endif

SH_API void sh_zero(void *p, size_t n)
{
#if defined(__x86_64__)
    if (n >= SH_ZERO_LOOP_MIN && has_avx2()) {
        zero_avx2(p, n);
        return;
    }
#endif
    memset(p, 0, n);
}
