/*
 * span.c — the span header, its free lists and its state transitions.
 *
 * A span in the frontend holds one size class. Its free blocks are in the
 * owner's private local free list (only while HOT; kept in the LAB,
 * lab->local[cls]; it also holds the chunk of never-used blocks that
 * sh_span_extend moved there), the never-used
 * bump region [bump, block_count), the shared free list in the anchor word
 * (see span_header.h for its layout), a freeing thread's deferred chain
 * (frontend.c), or the chain its owner's retired ring keeps for it ("Frees
 * into the LAB's retired spans" below); chains are not yet counted in the
 * anchor. Every state change
 * and every shared-list push is one CAS on the anchor, so a free racing
 * with a state change is serialised (LRMalloc's anchor technique with
 * scalloc's states):
 *
 *     pool --acquire--> HOT --retire (full)--> FLOATING --free reaches
 *      ^                 ^                       |         threshold--> REUSABLE
 *      |                 +---------take (owner)--+---------------------+  |
 *      +----- EMPTYING <---- last free (any thread) ---------------------+
 *
 *   HOT       a LAB allocates from it. Remote frees push to the anchor list;
 *             the owner takes that list whole when its local list is empty.
 *             A HOT span is never returned by a free (it is the LAB's
 *             buffer); it leaves HOT when full or when its thread exits.
 *   FLOATING  not HOT, in no list, fewer than reuse_thr free blocks (more
 *             only for a moment at thread exit, see REUSABLE). The
 *             free that reaches the threshold moves it to REUSABLE and into
 *             the owning LAB's reusable set, or, if that LAB's thread has
 *             exited (orphan), into the freeing thread's set (adoption).
 *             Its LAB may also take it back HOT with fewer free blocks
 *             than that, rather than carve a new span (the second tier,
 *             span_take_retired).
 *   REUSABLE  in its owner's reusable set (a small mutex-protected list per
 *             LAB and class, as in scalloc; only span events take it). When
 *             a thread exits, its reusable spans, and its hot spans that
 *             have a free block, move to the orphanage (a LAB of the heap
 *             bound to no thread), whose sets every LAB's refill searches
 *             after its own; there a span may have fewer than reuse_thr
 *             free blocks.
 *   EMPTYING  the push (a free chain, see frontend.c's deferred frees) that
 *             makes every block free wins this state in its CAS and returns
 *             the span to the pool or the pusher's spare slot (eager
 *             return), whether local or remote; the CAS makes the winner
 *             unique.
 *
 * Anchor count: for a HOT span the blocks in the shared list; otherwise all
 * free blocks (listed + never bumped), so "empty" is count == block_count.
 *
 * Layering: span.c calls down into span_pool.c (free spans), arena.c (new
 * spans), limit.c and errors.c; nothing below calls back up. The reusable
 * sets it keeps are fields of sh_lab (heap_types.h), not frontend.c's code.
 *
 * Memory orders: pushes use release so the taker (acquire) sees the link
 * written into the block and the user's last writes before the free; state
 * changes that hand the span (its header fields and lists) to another
 * thread use acq_rel so both sides see each other's plain writes. Failed
 * CASes are relaxed: the loop re-reads and recomputes everything.
 */
#include "span.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "errors.h"
#include "heap_types.h"
#include "limit.h"
#include "metadata.h"
#include "os.h"
#include "size_class.h"
#include "span_pool.h"

#define AO_RELAXED memory_order_relaxed
#define AO_ACQ_REL memory_order_acq_rel

/* A span moves from state counter `from` to `to` (SH_CNT_*, or STAT_NONE),
 * counted in the acting thread's LAB (heap_types.h, sh_tally). */
#define STAT_NONE SH_CNT_N
static void stat_move(sh_heap *h, sh_lab *actor, unsigned from, unsigned to)
{
    if (from != STAT_NONE)
        sh_tally(h, actor, from, -1);
    if (to != STAT_NONE)
        sh_tally(h, actor, to, 1);
}

_Static_assert(SH_NUM_CLASSES <= 64, "reusable_mask has a bit per class");

/* Keeps lab->reusable_mask's bit for cls equal to "the set is not empty"
 * (lab->lock held; relaxed: the mask is only a hint for readers without the
 * lock, who take the lock before they touch the set). */
static void reusable_mask_update(sh_lab *lab, unsigned cls)
{
    uint64_t bit = (uint64_t)1 << cls;
    uint64_t m = atomic_load_explicit(&lab->reusable_mask, AO_RELAXED);
    m = lab->reusable[cls] ? m | bit : m & ~bit;
    atomic_store_explicit(&lab->reusable_mask, m, AO_RELAXED);
}

static void reusable_set_push(sh_lab *lab, unsigned cls, sh_span *s) /* lab->lock held */
{
    s->rl_prev = NULL;
    s->rl_next = lab->reusable[cls];
    if (s->rl_next)
        s->rl_next->rl_prev = s;
    lab->reusable[cls] = s;
    reusable_mask_update(lab, cls);
}

/* Unlinks s given its neighbours as read while we still owned s; writes
 * only the neighbours (in this set, so guarded by lab->lock), never s:
 * after a REUSABLE -> FLOATING CAS another thread may already be linking s
 * into its own set. */
static void reusable_set_unlink(sh_lab *lab, unsigned cls, sh_span *prev, sh_span *next)
{
    if (prev)
        prev->rl_next = next;
    else
        lab->reusable[cls] = next;
    if (next)
        next->rl_prev = prev;
    reusable_mask_update(lab, cls);
}

static void reusable_set_remove(sh_lab *lab, unsigned cls, sh_span *s) /* lab->lock held, s ours */
{
    reusable_set_unlink(lab, cls, s->rl_prev, s->rl_next);
    s->rl_prev = s->rl_next = NULL;
}

static sh_lab *lab_at(sh_heap *h, unsigned idx)
{
    /* acquire: pairs with the release store that published the LAB */
    return atomic_load_explicit(&h->labs[idx], memory_order_acquire);
}

void sh_span_init(sh_heap *h, sh_lab *lab, sh_span *s, unsigned cls)
{
    const sh_class_desc *c = &sh_classes[cls];
    if (s->touched < c->real_span_size) {
        /* relaxed: statistics only */
        atomic_fetch_add_explicit(&h->resident, (int64_t)(c->real_span_size - s->touched), AO_RELAXED);
        s->touched = c->real_span_size;
    }
    if (s->kept) {
        /* relaxed: the pool's budget, see span_advise */
        atomic_fetch_sub_explicit(&h->pool_kept, (int64_t)s->kept, AO_RELAXED);
        s->kept = 0;
    }
    if (s->advised) {
        /* relaxed: statistics only */
        atomic_fetch_sub_explicit(&h->advised, (int64_t)s->advised, AO_RELAXED);
        s->advised = 0;
    }
    s->rl_prev = s->rl_next = NULL;
    /* relaxed: the span is exclusively ours; other threads only learn of it
     * through blocks we hand out, which the user publishes */
    atomic_store_explicit(&s->bump, 0, AO_RELAXED);
    /* relaxed, as bump: a LAB whose ring still names s (it retired s before
     * s was emptied) learns that the entry is stale from this NULL before
     * it frees a block we hand out */
    atomic_store_explicit(&s->owner_slot, NULL, AO_RELAXED);
    atomic_store_explicit(&s->anchor, sh_anchor_pack(SH_ST_HOT, lab->idx, 0, 0), AO_RELAXED);
    atomic_store_explicit(&s->size_class, (uint16_t)cls, AO_RELAXED);
    /* relaxed: published with the class by the magic's release below */
    atomic_store_explicit(&s->blk_size, c->block_size, AO_RELAXED);
    atomic_store_explicit(&s->blk_off, c->payload_offset, AO_RELAXED);
    atomic_store_explicit(&s->blk_count, c->block_count, AO_RELAXED);
    atomic_store_explicit(&s->blk_recip, c->recip, AO_RELAXED);
    /* release: a validator that sees the magic (acquire) sees the class */
    atomic_store_explicit(&s->magic, SH_SPAN_MAGIC, memory_order_release);
    sh_tally(h, lab, SH_CNT_CLASS0 + cls, 1);
    stat_move(h, lab, STAT_NONE, SH_CNT_HOT);
}

/* ---- taking spans and giving them back ---------------------------------
 *
 * Where a span comes from and where an empty one goes: the LAB's spare
 * slot, the span pool, the arena. Byte-limit accounting goes with it: a
 * span counts against the limit from sh_span_acquire to sh_span_release. */

static sh_span *span_take_retired(sh_heap *h, sh_lab *lab, unsigned cls);

/* Before the arena carves a span (the heap grows), the chains that other
 * threads' LABs hold go to their spans, at most once per
 * SH_SWEEP_INTERVAL_NS: a chain pins its span, and a thread that has gone
 * idle never pushes its own (sh_heap_sweep_chains). Only when growing, so a
 * steady state pays nothing; rate-limited, so a growing heap pays one sweep
 * per interval, not one per span. */
static void sweep_chains_now_and_then(sh_heap *h, sh_lab *lab)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    uint64_t now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    /* relaxed: a rate limit; the CAS elects one sweeper per interval */
    uint64_t last = atomic_load_explicit(&h->sweep_ns, AO_RELAXED);
    if (now - last >= SH_SWEEP_INTERVAL_NS &&
        atomic_compare_exchange_strong_explicit(&h->sweep_ns, &last, now, AO_RELAXED, AO_RELAXED))
        sh_heap_sweep_chains(h, lab, false);
}

/* Takes a span for class cls (counted against the byte limit) and makes it
 * the HOT span of lab: the LAB's spare span of that real size, else one
 * from the pool (own stripe, other stripes, other sizes), else a span the
 * LAB retired that is a quarter free (span_take_retired; counted already),
 * else a new one from the arena. NULL with sh_last_error set on failure. */
sh_span *sh_span_acquire(sh_heap *h, sh_lab *lab, unsigned cls)
{
    const sh_class_desc *c = &sh_classes[cls];
    if (!sh_limit_acquire(h, lab, c->real_span_size)) {
        sh_span *r = span_take_retired(h, lab, cls);
        if (r)
            return r;
        sh_set_error(SH_E_LIMIT);
        return NULL;
    }
    sh_span *s = NULL;
    if (c->real_idx < SH_SPARE_REAL && lab->spare[c->real_idx]) {
        s = lab->spare[c->real_idx];
        lab->spare[c->real_idx] = NULL;
        sh_tally(h, lab, SH_CNT_FREE, -1);
    } else {
        s = sh_pool_take(h, c->real_idx, c->real_span_size, lab->core);
        if (s)
            sh_tally(h, lab, SH_CNT_FREE, -1);
    }
    if (!s) {
        sh_span *r = span_take_retired(h, lab, cls);
        if (r) {
            sh_limit_release(h, lab, c->real_span_size); /* it was counted when first taken */
            return r;
        }
        sweep_chains_now_and_then(h, lab);
        s = sh_arena_carve(&h->arena, c->real_idx < SH_SMALL_REAL ? SH_BAND_SMALL : SH_BAND_LARGE);
        if (!s) {
            sh_limit_release(h, lab, c->real_span_size);
            sh_set_error(SH_E_NOMEM);
            return NULL;
        }
    }
    sh_span_init(h, lab, s, cls);
    return s;
}

/* Returns an empty span (state EMPTYING, exclusively ours) to the pool, or
 * keeps it as the spare of the emptying thread's LAB (me, may be NULL) for
 * its real size: a thread that empties spans and needs one again at once
 * (threadtest's rounds) then skips the pool, and for 64 and 256 KiB spans
 * also the madvise and the page faults after it. A spare is free in every
 * other respect (magic, anchor, byte limit, statistics). */
static void span_release(sh_heap *h, sh_lab *me, sh_span *s, unsigned cls)
{
    const sh_class_desc *c = &sh_classes[cls];
    /* relaxed: a stale reader only uses it to classify a bad pointer */
    atomic_store_explicit(&s->magic, SH_FREE_SPAN_MAGIC, AO_RELAXED);
    /* relaxed: we own the span (EMPTYING); the pool push releases it */
    atomic_store_explicit(&s->anchor, sh_anchor_pack(SH_ST_FREE, 0, 0, 0), AO_RELAXED);
    sh_tally(h, me, SH_CNT_CLASS0 + cls, -1);
    sh_limit_release(h, me, c->real_span_size);
    sh_tally(h, me, SH_CNT_FREE, 1); /* a spare or a pooled span is free */
    if (me && me->defer && c->real_idx < SH_SPARE_REAL && !me->spare[c->real_idx]) {
        me->spare[c->real_idx] = s;
        return;
    }
    sh_pool_put(h, c->real_idx, me ? me->core : 0, s);
}

/* The LAB's spare spans go to the pool (madvised as usual): at thread exit,
 * and when its thread trims the heap. */
void sh_lab_drop_spares(sh_heap *h, sh_lab *lab)
{
    for (unsigned r = 0; r < SH_SPARE_REAL; r++) {
        sh_span *s = lab->spare[r];
        if (!s)
            continue;
        lab->spare[r] = NULL; /* still free: SH_CNT_FREE stays */
        sh_pool_put(h, r, lab->core, s);
    }
}

/* ---- state transitions ----------------------------------------------- */

/* The whole span is free and we won EMPTYING: unlink it (if it sits in a
 * reusable set) and give it to the pool. */
static void span_emptied(sh_heap *h, sh_lab *me, sh_span *s, unsigned cls, uint64_t old)
{
    unsigned st = sh_anchor_state(old);
    if (st == SH_ST_REUSABLE) {
        sh_lab *owner = lab_at(h, sh_anchor_lab(old));
        pthread_mutex_lock(&owner->lock);
        reusable_set_remove(owner, cls, s);
        pthread_mutex_unlock(&owner->lock);
        stat_move(h, me, SH_CNT_REUSABLE, STAT_NONE);
    } else if (st == SH_ST_FLOATING) {
        stat_move(h, me, SH_CNT_FLOATING, STAT_NONE);
    } else {
        stat_move(h, me, SH_CNT_HOT, STAT_NONE);
    }
    span_release(h, me, s, cls);
}

/* FLOATING -> REUSABLE with the target LAB's lock held across the CAS, so
 * a later emptier (which locks the same LAB) always finds it linked.
 * Returns false if the anchor no longer allows the move (caller retries). */
static bool span_make_reusable(sh_heap *h, sh_lab *me, sh_span *s, unsigned cls, void *first,
                               void *last, uint32_t k, uint64_t a)
{
    const sh_class_desc *c = &sh_classes[cls];
    sh_lab *target = lab_at(h, sh_anchor_lab(a));
    /* relaxed hint; re-checked under the lock */
    if (!target || atomic_load_explicit(&target->closed, AO_RELAXED))
        target = me;
    pthread_mutex_lock(&target->lock);
    if (atomic_load_explicit(&target->closed, AO_RELAXED) && target != me) {
        pthread_mutex_unlock(&target->lock);
        target = me;
        pthread_mutex_lock(&target->lock);
    }
    for (;;) {
        uint32_t n = sh_anchor_count(a) + k;
        if (sh_anchor_state(a) != SH_ST_FLOATING || n >= c->block_count || n < h->reuse_thr[cls]) {
            pthread_mutex_unlock(&target->lock);
            return false;
        }
        *(void **)last = sh_block_at(s, sh_anchor_head(a));
        uint64_t nw = sh_anchor_pack(SH_ST_REUSABLE, target->idx, n, sh_head_of(s, first));
        /* acq_rel: publishes the pushed blocks (release) and orders our
         * header writes (rl links) after the owner's earlier ones */
        if (atomic_compare_exchange_weak_explicit(&s->anchor, &a, nw, AO_ACQ_REL, AO_RELAXED)) {
            reusable_set_push(target, cls, s);
            pthread_mutex_unlock(&target->lock);
            stat_move(h, me, SH_CNT_FLOATING, SH_CNT_REUSABLE);
            return true;
        }
    }
}

/* Pushes the chain first..last (k blocks, linked through word 0, already
 * free-marked) onto s's shared list and performs the state change the new
 * count calls for. Used by every free that is not a local free into the
 * caller's own HOT span. */
void sh_span_free_chain(sh_heap *h, sh_lab *me, sh_span *s, unsigned cls, void *first, void *last,
                        uint32_t k)
{
    const sh_class_desc *c = &sh_classes[cls];
    /* relaxed: the CAS re-validates */
    uint64_t a = atomic_load_explicit(&s->anchor, AO_RELAXED);
    for (;;) {
        unsigned st = sh_anchor_state(a);
        uint32_t n = sh_anchor_count(a) + k;
        uint64_t nw;
        *(void **)last = sh_block_at(s, sh_anchor_head(a));
        if (st == SH_ST_HOT) {
            nw = sh_anchor_pack(SH_ST_HOT, sh_anchor_lab(a), n, sh_head_of(s, first));
        } else if (st == SH_ST_FLOATING || st == SH_ST_REUSABLE) {
            if (n >= c->block_count) {
                nw = sh_anchor_pack(SH_ST_EMPTYING, sh_anchor_lab(a), n, sh_head_of(s, first));
            } else if (st == SH_ST_FLOATING && n >= h->reuse_thr[cls]) {
                if (span_make_reusable(h, me, s, cls, first, last, k, a))
                    return;
                a = atomic_load_explicit(&s->anchor, AO_RELAXED); /* relaxed: retried */
                continue;
            } else {
                nw = sh_anchor_pack(st, sh_anchor_lab(a), n, sh_head_of(s, first));
            }
        } else {
            return; /* FREE/EMPTYING: only a racing double free gets here */
        }
        /* release: the taker sees our link and the block contents; acquire
         * (for EMPTYING): we then own the span and its header */
        if (atomic_compare_exchange_weak_explicit(&s->anchor, &a, nw, AO_ACQ_REL, AO_RELAXED)) {
            if (sh_anchor_state(nw) == SH_ST_EMPTYING)
                span_emptied(h, me, s, cls, a);
            return;
        }
    }
}

/* Owner, HOT span with an empty local list: take the shared list whole
 * into *local (the LAB's slot for the class). Returns false if it was
 * empty. */
bool sh_span_collect(sh_span *s, sh_lab *lab, void **local)
{
    /* relaxed: the CAS re-validates */
    uint64_t a = atomic_load_explicit(&s->anchor, AO_RELAXED);
    while (sh_anchor_count(a) != 0) {
        /* acquire: see the links and contents the pushers released */
        if (atomic_compare_exchange_weak_explicit(&s->anchor, &a,
                                                  sh_anchor_pack(SH_ST_HOT, lab->idx, 0, 0),
                                                  memory_order_acquire, AO_RELAXED)) {
            *local = sh_block_at(s, sh_anchor_head(a));
            return true;
        }
    }
    return false;
}

/* Owner, HOT span with an empty local list: hands the next chunk of the
 * never-used region (about SH_EXTEND_BYTES, at least one block) to the
 * local list (*local, the LAB's slot for the class), each block
 * free-marked, and advances bump past it. Bump is thus written once per
 * chunk, not per allocation, and line 0 (which
 * every free reads) stays clean; a bad free of a block of the chunk that
 * was not handed out yet is a double free (it carries the mark). Returns
 * false if the region is used up. */
bool sh_span_extend(sh_heap *h, sh_span *s, void **local)
{
    /* relaxed: we are the HOT owner, the only writer of bump; the geometry
     * is fixed while the span holds its class */
    uint32_t i = atomic_load_explicit(&s->bump, AO_RELAXED);
    uint32_t n = atomic_load_explicit(&s->blk_count, AO_RELAXED);
    if (i >= n)
        return false;
    uint32_t bs = atomic_load_explicit(&s->blk_size, AO_RELAXED);
    uint32_t k = SH_EXTEND_BYTES / bs;
    if (k == 0)
        k = 1;
    if (k > n - i)
        k = n - i;
    char *first = (char *)s + atomic_load_explicit(&s->blk_off, AO_RELAXED) + (size_t)i * bs;
    const uint64_t key = h->free_key; /* local: the stores below alias everything */
    char *b = first, *last = first + (size_t)(k - 1) * bs;
    for (; b != last; b += bs) {
        ((uint64_t *)b)[0] = (uint64_t)(uintptr_t)(b + bs);
        ((uint64_t *)b)[1] = key ^ (uint64_t)(uintptr_t)b;
    }
    ((uint64_t *)last)[0] = 0; /* extend runs on an empty local list */
    ((uint64_t *)last)[1] = key ^ (uint64_t)(uintptr_t)last;
    *local = first;
    /* relaxed: validators of a handed-out block were ordered after this by
     * the hand-out; the marks make the rest of the chunk read as free */
    atomic_store_explicit(&s->bump, i + k, AO_RELAXED);
    return true;
}

/* ---- frees into the LAB's retired spans ---------------------------------
 *
 * A thread's frees into its own spans other than the hot one (a span it
 * filled and retired, whose blocks its program frees later: larson, a
 * cache's values) would each pay a CAS on the span's anchor, and more than
 * the CAS, the miss on the anchor's line, which a random free finds cold.
 * Scalloc frees into any span of the thread's own without an atomic; here
 * the LAB's retired ring (the last SH_RETIRED_RING spans it retired per
 * class, heap_types.h) keeps a private chain per span: the free links the
 * block into the entry that the span's owner_slot names, on line 0, which
 * the free has read anyway to validate the block.
 *
 * Such a chain holds blocks back only from a span that is below the reuse
 * threshold, which nobody allocates from anyway: the chain is pushed, with
 * one CAS that also performs the state change, once it could make the span
 * reusable (k reaches lim: the threshold less the free blocks the anchor
 * had at the last look), or empty (a REUSABLE span, at block_count). Frees
 * by other threads go to the anchor as before and may move the span on by
 * themselves (REUSABLE, or HOT in another LAB after an adoption); the chain
 * is then pushed late, never lost: when the entry is reused, found stale by
 * the second tier, taken back, or flushed (sh_stats, sh_trim, thread exit).
 * A span cannot become empty, and so cannot be set up anew for another
 * class, while a chain holds some of its blocks; when one holds none, a new
 * setup clears owner_slot (sh_span_init), so a free never links a block
 * into an entry of another span.
 *
 * Invariant: s->owner_slot == e, e in LAB L's ring, implies e->span == s
 * and e's chain holds only free-marked blocks of s counted in no anchor.
 * Only L's holder writes e and stores e into owner_slot; sh_span_init
 * stores NULL; L clears it with a CAS from e, so a span set up anew and
 * retired by another LAB keeps that LAB's entry. */

/* The chains lock. The owner of a LAB reaches its ring's chains at every
 * free into a span it retired; a sweeper (sh_heap_sweep_chains, trim, the
 * fork handler) rarely, to push an idle owner's chains. So the two sides
 * pay differently (an asymmetric lock, as in user-space RCU):
 *
 *   owner:   chain_busy = 1; compiler barrier; lock word free? enter.
 *            (else chain_busy = 0 and take the lock as a sweeper does)
 *            ... chains ...; chain_busy = 0 (release)
 *   sweeper: take the lock word (atomic exchange); membarrier, which makes
 *            every running thread of the process execute a full barrier;
 *            wait until chain_busy is 0 (acquire); ... chains ...; unlock
 *
 * The owner's store of chain_busy may still sit in its store buffer when it
 * loads the lock word; that is what the membarrier covers. If the owner's
 * barrier falls before its store, its load comes after the barrier and
 * sees the lock taken, so it backs off; if after, the store is visible
 * when membarrier returns, so the sweeper waits for the owner to leave
 * (both may back off at once: the owner then waits on the lock word, and
 * the sweeper, seeing chain_busy 0, goes in). So the owner's free into its
 * ring costs two plain stores and a load, where an atomic exchange would
 * wait for every earlier load and store of the thread (a free reads a cold
 * block; the frees and allocations before it wrote others).
 *
 * Memory orders: the owner's release store of chain_busy = 0 pairs with
 * the sweeper's acquire load of it; the sweeper's release unlock with the
 * owner's acquire load of the lock word. Where membarrier is missing
 * (chains_asymmetric false, set once before the first heap exists) the
 * owner takes the lock word like everyone else. Lock order: the lock
 * word before any LAB's mutex (a push may link the span into a reusable
 * set); a sweeper holds no other lock while it waits for chain_busy, and
 * the owner's section takes only LAB mutexes. */
static bool chains_asymmetric;
static pthread_once_t chains_once = PTHREAD_ONCE_INIT;

static void chains_init_once(void)
{
    chains_asymmetric = sh_os_barrier_register();
}

void sh_span_chains_init(void)
{
    pthread_once(&chains_once, chains_init_once);
}

static void chains_lock(sh_lab *lab)
{
    /* acquire: the previous holder's chain writes happen before ours */
    while (atomic_exchange_explicit(&lab->chain_lock, 1, memory_order_acquire)) {
        /* held by a sweep (pushing a few chains) or by the owner while a
         * sweep waits: yield now and then, so that a holder preempted on a
         * busy machine gets the CPU back */
        for (unsigned spins = 0; atomic_load_explicit(&lab->chain_lock, AO_RELAXED); spins++)
            if (spins % 64 == 63)
                sched_yield();
    }
}

static void chains_unlock(sh_lab *lab)
{
    atomic_store_explicit(&lab->chain_lock, 0, memory_order_release);
}

/* The owner enters its chains' section. True: the plain way (chain_busy),
 * to be left with owner_chains_leave(lab, true); false: through the lock. */
static inline bool owner_chains_enter(sh_lab *lab)
{
    if (SH_LIKELY(chains_asymmetric)) {
        /* relaxed, and only a compiler barrier before the load: see above */
        atomic_store_explicit(&lab->chain_busy, 1, AO_RELAXED);
        atomic_signal_fence(memory_order_seq_cst);
        /* acquire: a sweeper's chain writes, released by its unlock */
        if (SH_LIKELY(!atomic_load_explicit(&lab->chain_lock, memory_order_acquire)))
            return true;
        /* release: our earlier sections' writes, for the sweeper that waits */
        atomic_store_explicit(&lab->chain_busy, 0, memory_order_release);
    }
    chains_lock(lab);
    return false;
}

static inline void owner_chains_leave(sh_lab *lab, bool plain)
{
    if (plain)
        atomic_store_explicit(&lab->chain_busy, 0, memory_order_release); /* see above */
    else
        chains_unlock(lab);
}

/* A thread other than lab's owner takes its chains (the lock word, then
 * the owner out of its section); false if !wait and the lock was taken. */
static bool sweeper_chains_lock(sh_lab *lab, bool wait)
{
    if (wait)
        chains_lock(lab);
    else if (atomic_exchange_explicit(&lab->chain_lock, 1, memory_order_acquire))
        return false;
    if (chains_asymmetric) {
        /* registered before the first heap: the call does not fail then */
        (void)sh_os_barrier_all();
        for (unsigned spins = 0; atomic_load_explicit(&lab->chain_busy, memory_order_acquire); spins++)
            if (spins % 64 == 63)
                sched_yield(); /* an owner preempted in its section */
    }
    return true;
}

void sh_lab_lock_chains(sh_lab *lab)
{
    (void)sweeper_chains_lock(lab, true);
}

void sh_lab_unlock_chains(sh_lab *lab)
{
    chains_unlock(lab);
}

/* The k at which a chain of class cls, whose span's anchor had n free
 * blocks at the last look, is pushed: when it could make the span reusable. */
static uint32_t retired_limit(const sh_heap *h, unsigned cls, uint32_t n)
{
    uint32_t thr = h->reuse_thr[cls];
    return thr > n ? thr - n : 1;
}

/* lab's count of entries that hold a chain moves by d: a hint for sweepers
 * (relaxed), written only under lab's chains lock. */
static void chains_count(sh_lab *lab, int d)
{
    atomic_store_explicit(&lab->chains, atomic_load_explicit(&lab->chains, AO_RELAXED) + (uint32_t)d,
                          AO_RELAXED);
}

/* Pushes e's chain, if any, to its span's anchor; actor is the pushing
 * thread's LAB (statistics, and the spare slot if the span empties). Chains
 * lock of e's LAB held. */
static void retired_push_chain(sh_heap *h, sh_lab *owner, sh_lab *actor, sh_retired *e,
                               unsigned cls)
{
    if (e->k) {
        uint32_t k = e->k;
        e->k = 0;
        chains_count(owner, -1);
        sh_span_free_chain(h, actor, e->span, cls, e->first, e->last, k);
    }
}

/* Ends entry e: its span's frees go to the anchor again. Chains lock held. */
static void retired_evict(sh_heap *h, sh_lab *lab, sh_retired *e, unsigned cls)
{
    if (!e->span)
        return;
    sh_retired *want = e;
    /* relaxed: see the invariant above; the chain's blocks are published by
     * the push's release */
    (void)atomic_compare_exchange_strong_explicit(&e->span->owner_slot, &want, NULL, AO_RELAXED,
                                                  AO_RELAXED);
    retired_push_chain(h, lab, lab, e, cls);
    e->span = NULL;
}

/* e's chain reached its limit: push it, and look at the span again.
 * Chains lock held. */
static SH_NOINLINE void retired_push(sh_heap *h, sh_lab *lab, sh_retired *e, unsigned cls)
{
    sh_span *s = e->span;
    retired_push_chain(h, lab, lab, e, cls);
    /* relaxed: a hint for the next limit; pushes and takes re-validate */
    uint64_t a = atomic_load_explicit(&s->anchor, AO_RELAXED);
    unsigned st = sh_anchor_state(a);
    if (st == SH_ST_FLOATING && sh_anchor_lab(a) == lab->idx) {
        e->lim = retired_limit(h, cls, sh_anchor_count(a));
    } else if (st == SH_ST_REUSABLE) {
        uint32_t n = sh_anchor_count(a), all = sh_classes[cls].block_count;
        e->lim = all > n ? all - n : 1; /* next: the push that empties it */
    } else {
        retired_evict(h, lab, e, cls); /* HOT elsewhere, emptied, or another LAB's */
    }
}

/* The entry of lab's ring for class cls that s's owner_slot names, or NULL. */
static sh_retired *retired_entry(sh_lab *lab, const sh_span *s, unsigned cls)
{
    /* relaxed: only lab's own stores can make it name lab's ring (see above) */
    sh_retired *e = atomic_load_explicit(&((sh_span *)s)->owner_slot, AO_RELAXED);
    return e && (uintptr_t)e - (uintptr_t)lab->retired[cls] < SH_RETIRED_RING * sizeof *e ? e : NULL;
}

bool sh_span_chain_owned(sh_heap *h, sh_lab *lab, sh_span *s, unsigned cls, void *first,
                         void *last, uint32_t k)
{
    sh_retired *e = retired_entry(lab, s, cls);
    if (!e)
        return false;
    bool plain = owner_chains_enter(lab);
    *(void **)last = e->first;
    e->first = first;
    if (e->k == 0) {
        e->last = last;
        chains_count(lab, 1);
    }
    e->k += k;
    if (SH_UNLIKELY(e->k >= e->lim))
        retired_push(h, lab, e, cls);
    owner_chains_leave(lab, plain);
    return true;
}

/* lab just took s HOT (class cls, local list in lab->local[cls]): if its
 * ring holds s, the chain joins the local list and the entry ends. Chains
 * lock held. */
static void retired_take(sh_lab *lab, sh_span *s, unsigned cls)
{
    sh_retired *e = retired_entry(lab, s, cls);
    if (!e)
        return;
    /* relaxed: s is our HOT span; no other LAB stores into its owner_slot */
    atomic_store_explicit(&s->owner_slot, NULL, AO_RELAXED);
    if (e->k) {
        *(void **)e->last = lab->local[cls];
        lab->local[cls] = e->first;
        e->k = 0;
        chains_count(lab, -1);
    }
    e->span = NULL;
}

void sh_lab_push_retired(sh_heap *h, sh_lab *lab)
{
    bool plain = owner_chains_enter(lab);
    for (unsigned cls = 0; cls < SH_NUM_CLASSES; cls++)
        for (unsigned i = 0; lab->retired[cls] && i < SH_RETIRED_RING; i++)
            if (lab->retired[cls][i].k)
                retired_push(h, lab, &lab->retired[cls][i], cls);
    owner_chains_leave(lab, plain);
}

/* Pushes the chains of every LAB but me (the caller's, may be NULL) that
 * holds any: all of them if wait, else those whose lock is free. A chain
 * pins its span (a span cannot empty while one of its blocks waits in a
 * chain), and an idle thread never pushes its own: a thread that set a
 * heap up and then sleeps kept every span it had freed into from returning
 * to the pool. The pushed entries stay; the owner's next free into each
 * pushes at once (lim 1) and looks at the span again. */
void sh_heap_sweep_chains(sh_heap *h, sh_lab *me, bool wait)
{
    pthread_mutex_lock(&h->lab_lock);
    unsigned n = h->nlabs;
    pthread_mutex_unlock(&h->lab_lock);
    for (unsigned i = 1; i <= n; i++) {
        sh_lab *lab = lab_at(h, i);
        /* relaxed: a hint; the chains are read under the lock */
        if (!lab || lab == me || !atomic_load_explicit(&lab->chains, AO_RELAXED))
            continue;
        if (!sweeper_chains_lock(lab, wait))
            continue;
        for (unsigned cls = 0; cls < SH_NUM_CLASSES; cls++) {
            for (unsigned j = 0; lab->retired[cls] && j < SH_RETIRED_RING; j++) {
                sh_retired *e = &lab->retired[cls][j];
                if (e->k) {
                    retired_push_chain(h, lab, me, e, cls);
                    e->lim = 1;
                }
            }
        }
        chains_unlock(lab);
    }
}

/* lab's ring row for class cls, at its first retire of the class. Chains
 * lock held. False if there is no memory for it. */
static SH_NOINLINE bool retired_row_new(sh_lab *lab, unsigned cls)
{
    sh_retired *row = sh_meta_alloc(SH_RETIRED_RING * sizeof *row, 64);
    if (!row)
        return false;
    memset(row, 0, SH_RETIRED_RING * sizeof *row);
    lab->retired[cls] = row;
    return true;
}

void sh_lab_free_retired(sh_lab *lab)
{
    for (unsigned cls = 0; cls < SH_NUM_CLASSES; cls++) {
        sh_meta_free(lab->retired[cls]);
        lab->retired[cls] = NULL;
    }
}

/* Owner, HOT span with nothing local: HOT -> FLOATING if the shared list is
 * still empty. Returns false if frees arrived (caller collects them). */
bool sh_span_retire(sh_heap *h, sh_lab *lab, sh_span *s)
{
    uint64_t expect = sh_anchor_pack(SH_ST_HOT, lab->idx, 0, 0);
    /* release: a later taker of the span sees our header writes (bump) */
    if (atomic_compare_exchange_strong_explicit(&s->anchor, &expect,
                                                sh_anchor_pack(SH_ST_FLOATING, lab->idx, 0, 0),
                                                memory_order_release, AO_RELAXED)) {
        stat_move(h, lab, SH_CNT_HOT, SH_CNT_FLOATING);
        /* relaxed: we set the class when we took the span */
        unsigned cls = atomic_load_explicit(&s->size_class, AO_RELAXED);
        bool plain = owner_chains_enter(lab);
        if (SH_UNLIKELY(!lab->retired[cls]) && !retired_row_new(lab, cls)) {
            owner_chains_leave(lab, plain); /* no memory for a ring: the span just floats */
            return true;
        }
        sh_retired *e = &lab->retired[cls][lab->retired_next[cls]++ % SH_RETIRED_RING];
        retired_evict(h, lab, e, cls);
        *e = (sh_retired){.span = s, .lim = retired_limit(h, cls, 0)};
        /* relaxed: only this LAB acts on the value (frees by other LABs
         * compare it with their own rings); the span is FLOATING with our
         * index, so nobody but us can take it or set it up anew meanwhile */
        atomic_store_explicit(&s->owner_slot, e, AO_RELAXED);
        owner_chains_leave(lab, plain);
        return true;
    }
    return false;
}

/* The second tier of reuse. A FLOATING span joins a reusable set only when
 * reuse_thr of its blocks are free (80%: few moves, long runs per refill).
 * Spans less free than that hold memory that nobody allocates from, and
 * when neither a set nor the pool has a span, the arena carves a new one:
 * the process grows. Before that, the refill looks at the last spans its
 * LAB retired in this class and takes the freest one with at least
 * SH_RETIRED_MIN_PCT of its blocks free, FLOATING -> HOT, without any
 * lock: no free pays for this tier, and a span that crossed the threshold
 * meanwhile is in a set (REUSABLE) and skipped. Not before the pool: there
 * it saved as much and slowed larson by an eighth or more (shorter runs
 * per refill; docs/native-core.md, "The second tier").
 *
 * Why an entry can be trusted after the CAS: a span is FLOATING with our
 * LAB's index only after a retire by this LAB (our thread, or the exited
 * thread whose LAB we took over): frees change its count and head or move
 * it on, and only a take by this LAB can bring it back to FLOATING with our
 * index. The ring's owner is that taker, so the anchor word the CAS
 * compares cannot come back between our read and the CAS, and the class we
 * read with it is the span's. NULL when no entry qualifies. */
static sh_span *span_take_retired_locked(sh_heap *h, sh_lab *lab, unsigned cls)
{
    const sh_class_desc *c = &sh_classes[cls];
    uint32_t min = (uint32_t)(((uint64_t)c->block_count * SH_RETIRED_MIN_PCT + 99) / 100);
    if (min == 0)
        min = 1;
    if (!lab->retired[cls])
        return NULL;
    for (;;) {
        unsigned best = SH_RETIRED_RING;
        uint64_t best_a = 0;
        uint32_t best_n = 0;
        for (unsigned i = 0; i < SH_RETIRED_RING; i++) {
            sh_retired *e = &lab->retired[cls][i];
            sh_span *s = e->span;
            if (!s)
                continue;
            /* relaxed: a hint, validated by the CAS below */
            uint64_t a = atomic_load_explicit(&s->anchor, AO_RELAXED);
            if (sh_anchor_state(a) != SH_ST_FLOATING || sh_anchor_lab(a) != lab->idx ||
                atomic_load_explicit(&s->size_class, AO_RELAXED) != cls) {
                retired_evict(h, lab, e, cls); /* moved on: not ours to take any more */
                continue;
            }
            /* free blocks: the anchor's and our chain's (held for s only
             * while s's owner_slot names e, see "Frees into the LAB's
             * retired spans") */
            uint32_t n = sh_anchor_count(a) + e->k;
            if (n >= min && n > best_n)
                best = i, best_a = a, best_n = n;
        }
        if (best == SH_RETIRED_RING)
            return NULL;
        sh_span *s = lab->retired[cls][best].span;
        /* acquire: see the pushed links, as a take from a reusable set does */
        if (atomic_compare_exchange_strong_explicit(&s->anchor, &best_a,
                                                    sh_anchor_pack(SH_ST_HOT, lab->idx, 0, 0),
                                                    memory_order_acquire, AO_RELAXED)) {
            lab->local[cls] = sh_block_at(s, sh_anchor_head(best_a));
            retired_take(lab, s, cls);
            lab->retired[cls][best].span = NULL;
            stat_move(h, lab, SH_CNT_FLOATING, SH_CNT_HOT);
            return s;
        }
        /* a free changed it meanwhile: look again */
    }
}

static sh_span *span_take_retired(sh_heap *h, sh_lab *lab, unsigned cls)
{
    bool plain = owner_chains_enter(lab);
    sh_span *s = span_take_retired_locked(h, lab, cls);
    owner_chains_leave(lab, plain);
    return s;
}

/* FLOATING -> REUSABLE in the orphanage: a span an exiting thread leaves
 * with free blocks waits there for the next refill of its class by any
 * thread, instead of holding its few live blocks in a span nobody allocates
 * from while every new thread takes a fresh one (mleak's pattern:
 * short-lived threads that each leave a block behind). Unlike a threshold
 * free, this takes spans with fewer than reuse_thr free blocks too: the
 * moves are bounded by thread exits, not by frees. The orphanage's lock is
 * held across the CAS, as in span_make_reusable, so an emptier always finds
 * the span linked. Nothing happens to a full span, or if a free moved it
 * meanwhile (adopted, emptying).
 *
 * lab is the exiting LAB, which made s FLOATING with its own index just
 * before (sh_span_detach, reusable_set_release_one) and since then owns s
 * no more: a free may have emptied it, and another thread may have taken
 * it from the pool for another class and retired it, FLOATING again with
 * free blocks. The CAS therefore also requires lab's index: while its
 * thread exits nobody else holds lab, and a span is FLOATING with a LAB's
 * index only after a retire or detach by that LAB, so a span that still
 * carries it is the one lab left, of the class cls. (Without the check such
 * a span went into the orphanage's set of the wrong class, and the next
 * refill carved blocks of one size from a span of another.) */
static void span_orphan(sh_heap *h, sh_lab *lab, sh_span *s, unsigned cls)
{
    sh_lab *o = h->orphans;
    pthread_mutex_lock(&o->lock);
    /* relaxed: the CAS re-validates */
    uint64_t a = atomic_load_explicit(&s->anchor, AO_RELAXED);
    while (sh_anchor_state(a) == SH_ST_FLOATING && sh_anchor_lab(a) == lab->idx &&
           sh_anchor_count(a) > 0) {
        uint64_t nw = sh_anchor_pack(SH_ST_REUSABLE, o->idx, sh_anchor_count(a), sh_anchor_head(a));
        /* acq_rel: our link writes are ordered after the previous owner's
         * header writes, and a taker (acquire) sees them */
        if (atomic_compare_exchange_weak_explicit(&s->anchor, &a, nw, AO_ACQ_REL, AO_RELAXED)) {
            reusable_set_push(o, cls, s);
            stat_move(h, lab, SH_CNT_FLOATING, SH_CNT_REUSABLE);
            break;
        }
    }
    pthread_mutex_unlock(&o->lock);
}

/* Owner gives up its HOT span (thread exit): the local list and the
 * never-bumped blocks join the shared state; the span becomes FLOATING,
 * then goes to the orphanage if it has a free block, or, if it is entirely
 * free, goes to the pool. */
void sh_span_detach(sh_heap *h, sh_lab *lab, sh_span *s, unsigned cls)
{
    const sh_class_desc *c = &sh_classes[cls];
    void *first = lab->local[cls], *last = NULL;
    uint32_t nlocal = 0;
    for (void *b = first; b; b = *(void **)b) {
        last = b;
        nlocal++;
    }
    /* relaxed: we are the HOT owner, the only writer of bump */
    uint32_t extra = nlocal + (c->block_count - atomic_load_explicit(&s->bump, AO_RELAXED));
    lab->local[cls] = NULL;
    /* relaxed: the CAS re-validates */
    uint64_t a = atomic_load_explicit(&s->anchor, AO_RELAXED);
    for (;;) {
        uint64_t head = sh_anchor_head(a);
        if (first) {
            *(void **)last = sh_block_at(s, head);
            head = sh_head_of(s, first);
        }
        uint32_t n = sh_anchor_count(a) + extra;
        unsigned st = n >= c->block_count ? SH_ST_EMPTYING : SH_ST_FLOATING;
        uint64_t nw = sh_anchor_pack(st, lab->idx, n, head);
        /* acq_rel: hands our private header state to the next owner, and
         * acquires the remote pushes if we return the span */
        if (atomic_compare_exchange_weak_explicit(&s->anchor, &a, nw, AO_ACQ_REL, AO_RELAXED)) {
            if (st == SH_ST_EMPTYING) {
                span_emptied(h, lab, s, cls, a);
            } else {
                stat_move(h, lab, SH_CNT_HOT, SH_CNT_FLOATING);
                span_orphan(h, lab, s, cls);
            }
            return;
        }
    }
}

/* Makes a span of from's reusable set (lab's own, or the orphanage's) the
 * HOT span of lab. NULL if the set has none (spans that a racing free is
 * emptying are skipped; that free unlinks). */
sh_span *sh_span_take_reusable(sh_heap *h, sh_lab *lab, sh_lab *from, unsigned cls)
{
    /* relaxed: a hint; a span pushed just now is found at a later refill,
     * and the set itself is read under the lock */
    if (!((atomic_load_explicit(&from->reusable_mask, AO_RELAXED) >> cls) & 1))
        return NULL;
    pthread_mutex_lock(&from->lock);
    for (sh_span *s = from->reusable[cls]; s; s = s->rl_next) {
        /* relaxed: the CAS re-validates */
        uint64_t a = atomic_load_explicit(&s->anchor, AO_RELAXED);
        while (sh_anchor_state(a) == SH_ST_REUSABLE) {
            /* acquire: see the pushed links and the previous owner's
             * header writes (bump, local list) */
            if (atomic_compare_exchange_weak_explicit(&s->anchor, &a,
                                                      sh_anchor_pack(SH_ST_HOT, lab->idx, 0, 0),
                                                      memory_order_acquire, AO_RELAXED)) {
                reusable_set_remove(from, cls, s);
                pthread_mutex_unlock(&from->lock);
                lab->local[cls] = sh_block_at(s, sh_anchor_head(a));
                bool plain = owner_chains_enter(lab);
                retired_take(lab, s, cls);
                owner_chains_leave(lab, plain);
                stat_move(h, lab, SH_CNT_REUSABLE, SH_CNT_HOT);
                return s;
            }
        }
    }
    pthread_mutex_unlock(&from->lock);
    return NULL;
}

/* The first span of lab's set for cls that is still REUSABLE, turned
 * FLOATING and unlinked; NULL when none is left (spans that a racing free
 * is emptying stay linked: their emptier unlinks). */
static sh_span *reusable_set_release_one(sh_heap *h, sh_lab *lab, unsigned cls)
{
    pthread_mutex_lock(&lab->lock);
    for (sh_span *s = lab->reusable[cls]; s; s = s->rl_next) {
        sh_span *prev = s->rl_prev, *next = s->rl_next; /* read while s is ours */
        uint64_t a = atomic_load_explicit(&s->anchor, AO_RELAXED); /* relaxed: CAS re-validates */
        while (sh_anchor_state(a) == SH_ST_REUSABLE) {
            uint64_t nw = sh_anchor_pack(SH_ST_FLOATING, sh_anchor_lab(a), sh_anchor_count(a),
                                         sh_anchor_head(a));
            /* release: an adopter that links s into its set (after its
             * acq_rel CAS) sees our reads of the links done */
            if (atomic_compare_exchange_weak_explicit(&s->anchor, &a, nw, memory_order_release,
                                                      AO_RELAXED)) {
                reusable_set_unlink(lab, cls, prev, next);
                pthread_mutex_unlock(&lab->lock);
                stat_move(h, lab, SH_CNT_REUSABLE, SH_CNT_FLOATING);
                return s;
            }
        }
    }
    pthread_mutex_unlock(&lab->lock);
    return NULL;
}

/* Thread exit: close the LAB (later threshold frees adopt instead of
 * inserting here) and move its reusable spans to the orphanage, one at a
 * time through FLOATING, so that no thread holds two LAB locks at once
 * (sh_labs_fork takes them in index order). */
void sh_lab_close_reusable(sh_heap *h, sh_lab *lab)
{
    pthread_mutex_lock(&lab->lock);
    atomic_store_explicit(&lab->closed, 1, AO_RELAXED); /* relaxed: read under lock, or as a hint */
    pthread_mutex_unlock(&lab->lock);
    for (unsigned cls = 0; cls < SH_NUM_CLASSES; cls++) {
        sh_span *s;
        while ((s = reusable_set_release_one(h, lab, cls)) != NULL)
            span_orphan(h, lab, s, cls);
    }
}
