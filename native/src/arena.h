/*
 * arena.h — one reservation per heap, cut into virtual spans (arena.c).
 */
#ifndef SH_ARENA_H
#define SH_ARENA_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "span_header.h"

typedef struct sh_arena {
    uintptr_t base;
    size_t size;
    size_t nspans;
    _Atomic uint64_t frontier;    /* committed end; published with release  */
    _Atomic uint64_t frontier_len; /* frontier - base, published the same way
                                     (sh_free's one-compare range check)    */
    /* own cache line: written per carve, while every free reads frontier */
    _Alignas(64) _Atomic uint64_t next; /* bump pointer: next span index  */
    pthread_mutex_t commit_lock;  /* serialises the rare mprotect calls     */
    void *map;                    /* the mapping to unmap                   */
    size_t map_size;
} sh_arena;

int sh_arena_init(sh_arena *a, size_t reserve, int allow_huge_pages);
void sh_arena_destroy(sh_arena *a);
sh_span *sh_arena_carve(sh_arena *a);
/* fork phases SH_FORK_* (base.h), called by fork.c */
void sh_arena_fork(sh_arena *a, int phase);

#endif /* SH_ARENA_H */
