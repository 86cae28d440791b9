/*
 * span.h — spans in use: span header, remote free list, state transitions
 * (anchor); taking spans from the pool, giving them back (span.c). The
 * header's layout is in span_header.h.
 */
#ifndef SH_SPAN_H
#define SH_SPAN_H

#include <stdbool.h>
#include <stdint.h>

#include "heap_types.h"

sh_span *sh_span_acquire(sh_heap *h, sh_lab *lab, unsigned cls);
void sh_lab_drop_spares(sh_heap *h, sh_lab *lab);
void sh_span_init(sh_heap *h, sh_lab *lab, sh_span *s, unsigned cls);
void sh_span_free_chain(sh_heap *h, sh_lab *me, sh_span *s, unsigned cls, void *first,
                        void *last, uint32_t k);
bool sh_span_collect(sh_span *s, sh_lab *lab, void **local);
bool sh_span_extend(sh_heap *h, sh_span *s, void **local);
bool sh_span_retire(sh_heap *h, sh_lab *lab, sh_span *s);
/* lab's thread hands the chain first..last (k blocks of s, class cls, not
 * its hot span; free-marked, counted) to the chain of lab's retired-ring
 * entry for s, if s's owner_slot names one (span.c, "Frees into the LAB's
 * retired spans"). False if it does not: the caller pushes it to s. */
bool sh_span_chain_owned(sh_heap *h, sh_lab *lab, sh_span *s, unsigned cls, void *first,
                         void *last, uint32_t k);
/* Pushes every chain of lab's retired ring to its span (owner thread). */
void sh_lab_push_retired(sh_heap *h, sh_lab *lab);
/* Pushes the chains of every LAB but me (the caller's, may be NULL): all if
 * wait, else those whose chains lock is free at the moment. */
void sh_heap_sweep_chains(sh_heap *h, sh_lab *me, bool wait);
/* Frees lab's retired-ring rows (heap destroy). */
void sh_lab_free_retired(sh_lab *lab);
/* Once per process, before the first heap: how the owner of a LAB enters
 * its retired ring's chains (span.c, "The chains lock"). */
void sh_span_chains_init(void);
/* lab's chains lock, taken by a thread that is not its owner (fork
 * support, frontend.c's sh_labs_fork) */
void sh_lab_lock_chains(sh_lab *lab);
void sh_lab_unlock_chains(sh_lab *lab);
void sh_span_detach(sh_heap *h, sh_lab *lab, sh_span *s, unsigned cls);
sh_span *sh_span_take_reusable(sh_heap *h, sh_lab *lab, sh_lab *from, unsigned cls);
void sh_lab_close_reusable(sh_heap *h, sh_lab *lab);

#endif /* SH_SPAN_H */
