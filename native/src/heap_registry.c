/*
 * heap_registry.c — the live heaps of the process and their generations.
 *
 * A heap gets a generation unique in the process when it is registered;
 * per-thread LAB lookups (frontend.c) remember (heap, generation) and check
 * them here, under the registry lock, before they touch a heap that may
 * have been destroyed. sh_heap_destroy unregisters first, under the same
 * lock, so a thread-exit destructor holding it cannot see a heap that is
 * being torn down. A bottom layer: it calls nothing of the core.
 */
#include "heap_registry.h"

#include "heap_types.h"

static pthread_mutex_t registry = PTHREAD_MUTEX_INITIALIZER;
static sh_heap *registry_head;
static _Atomic uint64_t next_gen = 1;

void sh_registry_lock(void)
{
    pthread_mutex_lock(&registry);
}

void sh_registry_unlock(void)
{
    pthread_mutex_unlock(&registry);
}

void sh_registry_add(sh_heap *h)
{
    h->gen = atomic_fetch_add_explicit(&next_gen, 1, memory_order_relaxed); /* unique only */
    sh_registry_lock();
    h->reg_next = registry_head;
    registry_head = h;
    sh_registry_unlock();
}

void sh_registry_remove(sh_heap *h)
{
    sh_registry_lock();
    for (sh_heap **pp = &registry_head; *pp; pp = &(*pp)->reg_next) {
        if (*pp == h) {
            *pp = h->reg_next;
            break;
        }
    }
    sh_registry_unlock();
}

bool sh_heap_is_live(const sh_heap *h, uint64_t gen)
{
    for (sh_heap *x = registry_head; x; x = x->reg_next)
        if (x == h && x->gen == gen)
            return true;
    return false;
}

sh_heap *sh_registry_first(void)
{
    return registry_head;
}

void sh_registry_reinit(void)
{
    pthread_mutex_init(&registry, NULL);
}
