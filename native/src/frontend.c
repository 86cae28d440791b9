/*
 * frontend.c — per-thread local allocation buffers (LABs).
 *
 * Each thread that uses a heap gets one LAB for it: a hot span per size
 * class, a reusable set per class (span.c), and per-class allocation and
 * free counters that only this thread writes (sh_stats sums them). LABs
 * live as long as their heap; when a thread exits its LAB is closed (hot
 * spans detached; those with a free block and the reusable spans go to the
 * heap's orphanage, full ones float as orphans) and parked on the heap's
 * idle list for the next new thread.
 *
 * Thread-local lookup: several heaps may live in one process, so each
 * thread keeps a small table of (heap, generation, LAB). A heap's
 * generation is unique per process; a destroyed heap's entries (even if a
 * new heap reuses its address) never match and are dropped lazily. A
 * one-entry cache (initial-exec TLS) makes the common lookup two compares.
 * A pthread key destructor releases the LABs of heaps that are still live
 * (checked in the heap registry, under its lock, so a concurrent
 * sh_heap_destroy cannot pull the heap away meanwhile).
 */
#include <stdlib.h>
#include <string.h>

#include "frontend.h"

#include "errors.h"
#include "heap_registry.h"
#include "metadata.h"
#include "span.h"

sh_span sh_no_span;

__thread sh_tls_entry sh_tls_last __attribute__((tls_model("initial-exec")));

typedef struct tls_table {
    sh_tls_entry *v;
    size_t n, cap;
    bool registered; /* pthread key value set */
    bool exited;     /* the destructor ran: the thread is exiting */
} tls_table;

static __thread tls_table tls_tab;
static pthread_key_t tls_key;
static pthread_once_t tls_key_once = PTHREAD_ONCE_INIT;

static void lab_release(sh_heap *h, sh_lab *lab)
{
    sh_lab_flush(h, lab, -1); /* before closing: the chains may make spans reusable */
    lab->defer = false;
    sh_lab_close_reusable(h, lab);
    for (unsigned cls = 0; cls < SH_NUM_CLASSES; cls++) {
        sh_span *s = lab->hot[cls];
        if (s != &sh_no_span) {
            lab->hot[cls] = &sh_no_span;
            sh_span_detach(h, lab, s, cls);
        }
    }
    sh_lab_drop_spares(h, lab);
    pthread_mutex_lock(&h->lab_lock);
    lab->free_next = h->idle_labs;
    h->idle_labs = lab;
    pthread_mutex_unlock(&h->lab_lock);
}

static void tls_destructor(void *arg)
{
    (void)arg;
    tls_table *t = &tls_tab;
    sh_registry_lock();
    for (size_t i = 0; i < t->n; i++)
        if (sh_heap_is_live(t->v[i].heap, t->v[i].gen))
            lab_release(t->v[i].heap, t->v[i].lab);
    sh_registry_unlock();
    sh_meta_free(t->v);
    memset(t, 0, sizeof *t);
    memset(&sh_tls_last, 0, sizeof sh_tls_last);
    /* later destructors or libc's own thread cleanup may still allocate or
     * free; an embedder that checks sh_thread_exited() can serve them
     * without a new LAB that nobody would release */
    t->exited = true;
}

bool sh_thread_exited(void)
{
    return tls_tab.exited;
}

static void tls_key_create(void)
{
    (void)pthread_key_create(&tls_key, tls_destructor);
}

sh_lab *sh_lab_new(sh_heap *h)
{
    sh_lab *lab = NULL;
    pthread_mutex_lock(&h->lab_lock);
    if (h->idle_labs) {
        lab = h->idle_labs;
        h->idle_labs = lab->free_next;
        lab->free_next = NULL;
        lab->defer = false;
        pthread_mutex_lock(&lab->lock);
        atomic_store_explicit(&lab->closed, 0, memory_order_relaxed); /* relaxed: under lock */
        pthread_mutex_unlock(&lab->lock);
    } else if (h->nlabs < SH_MAX_LABS) {
        lab = sh_meta_alloc(sizeof(sh_lab), 64);
        if (lab) {
            memset(lab, 0, sizeof *lab);
            for (unsigned c = 0; c < SH_NUM_CLASSES; c++)
                lab->hot[c] = &sh_no_span;
            pthread_mutex_init(&lab->lock, NULL);
            lab->idx = ++h->nlabs;
            lab->core = (lab->idx - 1) % h->ncores;
            /* release: a free that finds this index in an anchor sees the
             * initialised LAB */
            atomic_store_explicit(&h->labs[lab->idx], lab, memory_order_release);
        }
    }
    pthread_mutex_unlock(&h->lab_lock);
    return lab;
}

sh_lab *sh_lab_find(sh_heap *h)
{
    tls_table *t = &tls_tab;
    for (size_t i = 0; i < t->n; i++)
        if (t->v[i].heap == h && t->v[i].gen == h->gen)
            return t->v[i].lab;
    return NULL;
}

SH_NOINLINE sh_lab *sh_lab_get_slow(sh_heap *h)
{
    tls_table *t = &tls_tab;
    for (size_t i = 0; i < t->n; i++) {
        if (t->v[i].heap == h && t->v[i].gen == h->gen) {
            sh_tls_last = t->v[i];
            return t->v[i].lab;
        }
    }
    pthread_once(&tls_key_once, tls_key_create);
    if (!t->registered) {
        if (pthread_setspecific(tls_key, t) != 0) {
            sh_set_error(SH_E_NOMEM);
            return NULL;
        }
        t->registered = true;
    }
    /* drop entries of destroyed heaps (a new thread has none: it skips
     * the process-wide registry lock) */
    if (t->n > 0) {
        sh_registry_lock();
        size_t j = 0;
        for (size_t i = 0; i < t->n; i++)
            if (sh_heap_is_live(t->v[i].heap, t->v[i].gen))
                t->v[j++] = t->v[i];
        t->n = j;
        sh_registry_unlock();
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 4;
        sh_tls_entry *v = sh_meta_realloc(t->v, cap * sizeof *v);
        if (!v) {
            sh_set_error(SH_E_NOMEM);
            return NULL;
        }
        t->v = v;
        t->cap = cap;
    }
    sh_lab *lab = sh_lab_new(h);
    if (!lab) {
        sh_set_error(SH_E_NOMEM);
        return NULL;
    }
    lab->defer = true; /* bound to this thread: lab_release flushes it */
    t->v[t->n++] = (sh_tls_entry){h, h->gen, lab};
    sh_tls_last = t->v[t->n - 1];
    return lab;
}

/* ---- deferred frees ----------------------------------------------------
 *
 * A free that is not a local free into the LAB's own hot span does not CAS
 * the span's anchor at once. A free into a span the LAB retired recently
 * joins that span's chain in the LAB's retired ring (span.c, "Frees into
 * the LAB's retired spans"). For other spans the LAB keeps, per class, one
 * chain of freed blocks of one span (lab->pend) and pushes it whole
 * (sh_span_free_chain, one CAS) when a free of that class hits another
 * span, when the LAB allocates that class on its slow path, when sh_stats
 * is called by the LAB's thread, and when the thread exits. Consecutive frees into the same
 * span -- a thread freeing its own blocks in allocation order, a consumer
 * freeing what one producer allocated -- then cost one CAS per chain, not
 * one per block. Blocks in a chain are free-marked (double frees are still
 * detected) but cannot be allocated until the chain is pushed, and they
 * keep their span from becoming reusable or empty: at most one span per
 * class per thread is held back this way (bounded, like the hot spans).
 * Only LABs bound to a thread (lab->defer) defer; a LAB that no thread
 * flushes (the malloc shim's exit LAB) pushes every free directly. */

static void pending_chain_push(sh_heap *h, sh_lab *lab, unsigned cls)
{
    sh_pending *pd = &lab->pend[cls];
    sh_span *s = pd->span;
    if (s) {
        pd->span = NULL;
        sh_span_free_chain(h, lab, s, cls, pd->first, pd->last, pd->k);
    }
}

SH_NOINLINE void sh_lab_free_switch(sh_heap *h, sh_lab *lab, sh_span *s, unsigned cls, void *b)
{
    if (SH_UNLIKELY(!lab->defer)) {
        sh_span_free_chain(h, lab, s, cls, b, b, 1);
        return;
    }
    if (sh_span_chain_owned(h, lab, s, cls, b, b, 1))
        return;
    pending_chain_push(h, lab, cls);
    lab->pend[cls] = (sh_pending){.span = s, .first = b, .last = b, .k = 1};
}

void sh_lab_flush(sh_heap *h, sh_lab *lab, int cls)
{
    if (cls >= 0) {
        pending_chain_push(h, lab, (unsigned)cls);
        return;
    }
    for (unsigned c = 0; c < SH_NUM_CLASSES; c++)
        pending_chain_push(h, lab, c);
    sh_lab_push_retired(h, lab);
}

/* Slow path of sh_lab_alloc: the hot span has no local block. Push our
 * pending chain of this class (it may refill a span we can take), take the
 * remote frees, else the next chunk of the never-used region; else retire
 * the hot span and take a reusable span (the LAB's own, else one an exited
 * thread left in the orphanage), else a span from the LAB's spare or the
 * pool, else one it retired that is a quarter free (span.c's second tier),
 * else a new span from the arena. */
SH_NOINLINE void *sh_lab_alloc_slow(sh_heap *h, sh_lab *lab, unsigned cls, bool mark)
{
    pending_chain_push(h, lab, cls);
    sh_span *s = lab->hot[cls];
    if (s != &sh_no_span) {
        for (;;) {
            if (sh_span_collect(s, lab, &lab->local[cls]) || sh_span_extend(h, s, &lab->local[cls]))
                return sh_lab_alloc(h, lab, cls, mark);
            if (sh_span_retire(h, lab, s))
                break;
        }
        lab->hot[cls] = &sh_no_span;
    }
    s = sh_span_take_reusable(h, lab, lab, cls);
    if (!s)
        s = sh_span_take_reusable(h, lab, h->orphans, cls);
    if (!s) {
        s = sh_span_acquire(h, lab, cls);
        if (!s)
            return NULL; /* error already set */
    }
    lab->hot[cls] = s;
    /* a new span, or a reusable one whose free blocks are all unbumped */
    if (!lab->local[cls])
        (void)sh_span_extend(h, s, &lab->local[cls]);
    return sh_lab_alloc(h, lab, cls, mark);
}

/* fork: lab_lock, then every LAB's chains lock by index, then every LAB's
 * mutex by index. The core never holds two LAB mutexes at once, nor takes
 * lab_lock while holding a lock of a LAB; a chains lock is held across
 * taking a mutex (span.c: a chain's push may link its span into a reusable
 * set), so the chains locks come first. */
void sh_labs_fork(sh_heap *h, int phase)
{
    if (phase == SH_FORK_PREPARE)
        pthread_mutex_lock(&h->lab_lock);
    for (int pass = 0; pass < 2; pass++) {
        for (unsigned i = 1; i <= h->nlabs; i++) {
            /* relaxed: lab_lock is held, which orders the publication */
            sh_lab *lab = atomic_load_explicit(&h->labs[i], memory_order_relaxed);
            if (!lab)
                continue;
            bool chains = pass == (phase == SH_FORK_PREPARE ? 0 : 1);
            if (phase == SH_FORK_PREPARE) {
                if (chains)
                    sh_lab_lock_chains(lab);
                else
                    pthread_mutex_lock(&lab->lock);
            } else if (chains) {
                sh_lab_unlock_chains(lab); /* in the child: its only thread held it */
            } else if (phase == SH_FORK_PARENT) {
                pthread_mutex_unlock(&lab->lock);
            } else {
                pthread_mutex_init(&lab->lock, NULL);
            }
        }
    }
    if (phase == SH_FORK_PARENT)
        pthread_mutex_unlock(&h->lab_lock);
    else if (phase == SH_FORK_CHILD)
        pthread_mutex_init(&h->lab_lock, NULL);
}

/* sh_heap_destroy: the LABs die with the heap. */
void sh_labs_destroy(sh_heap *h)
{
    for (unsigned i = 1; i <= h->nlabs; i++) {
        /* relaxed: destroy does not race with any other call */
        sh_lab *lab = atomic_load_explicit(&h->labs[i], memory_order_relaxed);
        if (lab) {
            sh_lab_free_retired(lab);
            pthread_mutex_destroy(&lab->lock);
            sh_meta_free(lab);
        }
    }
    if (sh_tls_last.heap == h)
        memset(&sh_tls_last, 0, sizeof sh_tls_last);
}
