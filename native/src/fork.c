/*
 * fork.c — fork support for an embedder's pthread_atfork handlers (the
 * malloc shim; embed.h). prepare takes every core lock of every live heap
 * in the core's nesting order (registry, LAB list, LABs by index, large
 * table, arena commit); parent releases them; child re-initialises them
 * (the child has one thread; LABs of the parent's other threads stay open
 * in the child and keep their hot spans). A top layer: it reaches every
 * layer that owns a lock.
 */
#include "arena.h"
#include "embed.h" /* declares sh_fork_* */
#include "frontend.h"
#include "heap_registry.h"
#include "large.h"

static void heaps_fork(int phase)
{
    for (sh_heap *h = sh_registry_first(); h; h = h->reg_next) {
        sh_labs_fork(h, phase);
        sh_large_fork(h, phase);
        sh_arena_fork(&h->arena, phase);
    }
}

void sh_fork_prepare(void)
{
    sh_registry_lock();
    heaps_fork(SH_FORK_PREPARE);
}

void sh_fork_parent(void)
{
    heaps_fork(SH_FORK_PARENT);
    sh_registry_unlock();
}

void sh_fork_child(void)
{
    heaps_fork(SH_FORK_CHILD);
    sh_registry_reinit();
}
