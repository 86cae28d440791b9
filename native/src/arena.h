/*
 * arena.h — one reservation per heap, cut into virtual spans of two bands
 * (arena.c).
 */
#ifndef SH_ARENA_H
#define SH_ARENA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "span_header.h"

typedef struct sh_arena {
    uintptr_t base;               /* SH_PERIOD-aligned                      */
    size_t size;                  /* a multiple of SH_PERIOD                */
    size_t nspans[2];             /* per band (SH_BAND_*): spans it holds   */
    _Atomic uint64_t frontier;    /* committed end; published with release  */
    _Atomic uint64_t frontier_len; /* frontier - base, published the same way
                                     (sh_free's one-compare range check)    */
    /* own cache line: written per carve, while every free reads frontier */
    _Alignas(64) _Atomic uint64_t next[2]; /* per band: next span index   */
    pthread_mutex_t commit_lock;  /* serialises the rare mprotect calls     */
    void *map;                    /* the mapping to unmap                   */
    size_t map_size;
} sh_arena;

int sh_arena_init(sh_arena *a, size_t reserve, int allow_huge_pages);
void sh_arena_destroy(sh_arena *a);
/* A new virtual span of band (SH_BAND_*), committed; NULL when the band's
 * half of the arena is used up or the OS refuses the commit. */
sh_span *sh_arena_carve(sh_arena *a, unsigned band);
/* fork phases SH_FORK_* (base.h), called by fork.c */
void sh_arena_fork(sh_arena *a, int phase);

#endif /* SH_ARENA_H */
