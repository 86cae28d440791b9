package org.spanheap.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.function.Consumer;

/**
 * Which {@link ThreadCache} a thread of one heap uses, and the registry of every cache of
 * the heap: platform threads' own caches, the stripes virtual threads share, and the private
 * caches of promoted virtual threads. The engine moves blocks in and out of the caches; this
 * class only finds, creates and retires them.
 *
 * <h2>Finding the calling thread's cache</h2>
 * {@link #byThread}: slot {@code threadId & (TABLE_SIZE - 1)} holds the array of at most one
 * thread, whose id is its word 0; a platform thread whose slot is taken by another live
 * thread finds its cache through a {@code ThreadLocal} instead. A {@code ThreadLocal} lookup
 * costs about 5 ns, twice per allocate+free; the table costs a field and an array load. The
 * table holds the array itself, not the {@link ThreadCache}, to save a dependent load on
 * every operation.
 * Plain loads suffice: a thread uses an array only if word 0 holds its own id, and only the
 * owner ever wrote its id there (word 0 is 0 in the template the array is cloned from), so a
 * racing reader sees 0 or another thread's id and goes its own way; the owner sees its own
 * writes. Stores are releases under the registry lock.
 *
 * <h2>Virtual threads</h2>
 * They share {@link #stripes} (4 per core, a power of two), chosen by thread id and used under
 * a try-lock: a virtual thread that finds its stripe taken does not wait (its caller then
 * calls the native heap directly). A virtual thread that makes {@link #PROMOTE_AFTER}
 * consecutive operations through its stripe (no other thread in between) is promoted: it gets
 * a private cache in {@link #byThread} and takes the platform threads' fast path from then on.
 * At most as many virtual threads as there are stripes hold one, so a million virtual threads
 * do not create a million caches; short-lived ones never reach the streak and pay nothing.
 *
 * <h2>Dead threads</h2>
 * A platform thread that needs a cache adopts a terminated platform thread's cache if there is
 * one, blocks and all, instead of a new empty one ({@link #newThreadCache()}): the blocks the
 * dead thread held go on serving allocations without a round trip through the native core
 * (larson, where each generation of threads frees what the previous one allocated; measured in
 * docs/java-core.md). The other caches of terminated threads (promoted virtual ones too) are
 * drained by whoever takes the registry lock next ({@link #drainDead()}) and give their place
 * back.
 */
final class ThreadCaches {
    /** Slots of the thread-id-indexed table, a power of two. */
    static final int TABLE_SIZE = 1024;
    /** Consecutive operations through a stripe after which a virtual thread is promoted. */
    static final int PROMOTE_AFTER = 1024;
    private static final VarHandle TABLE = MethodHandles.arrayElementVarHandle(long[][].class);

    /** Cache arrays by thread id; read by the engine's fast paths (plain, see the class comment). */
    final long[][] byThread = new long[TABLE_SIZE][];
    /**
     * The {@link ThreadCache} whose array is in the same slot of {@link #byThread}, for the slow
     * paths; written before that slot (same lock), so an owner that finds its array here
     * finds its cache too (its own registration wrote both, in program order).
     */
    private final ThreadCache[] cacheByThread = new ThreadCache[TABLE_SIZE];
    /** Caches shared by virtual threads; empty if no class is cached. */
    final ThreadCache[] stripes;
    private final long[] template;
    private final int[] overflowCapacity;
    /** The calling platform thread's cache, created on first use (never used by virtual threads). */
    private final ThreadLocal<ThreadCache> caches = ThreadLocal.withInitial(this::newThreadCache);
    /** Returns every block of a terminated thread's cache to the heap. */
    private final Consumer<ThreadCache> drainer;
    private final int maxVirtualCaches;
    /** Registered caches of platform threads and promoted virtual threads; guarded by itself. */
    private final ArrayList<ThreadCache> registry = new ArrayList<>();
    /** Virtual threads' caches in {@link #registry}; guarded by the registry lock. */
    private int virtualCaches;

    /**
     * @param layout the heap's magazine layout (no stripes when it caches no class)
     * @param drainer empties a dead thread's cache into the heap; called under the registry
     *                lock, so it must not take it
     */
    ThreadCaches(MagazineLayout layout, Consumer<ThreadCache> drainer) {
        this.template = layout.template;
        this.overflowCapacity = layout.overflowCapacity;
        this.drainer = drainer;
        int stripeCount = layout.cachedClassCount == 0 ? 0
                : Integer.highestOneBit(Math.max(1, 4 * Runtime.getRuntime().availableProcessors() - 1)) << 1;
        stripes = new ThreadCache[stripeCount];
        maxVirtualCaches = stripeCount;
        for (int k = 0; k < stripeCount; k++) {
            stripes[k] = new ThreadCache(template, overflowCapacity);
        }
    }

    /** {@return the calling thread's cache, created on first use; null on a virtual thread without one} */
    ThreadCache own() {
        Thread t = Thread.currentThread();
        long id = t.threadId();
        int slot = (int) id & (TABLE_SIZE - 1);
        long[] m = byThread[slot];                 // plain, see the class comment
        if (m != null && m[ThreadCache.OWNER] == id) {
            ThreadCache cache = cacheByThread[slot];
            if (cache != null && cache.m == m) {
                return cache;
            }
        }
        return t.isVirtual() ? null : caches.get();
    }

    private ThreadCache newThreadCache() {
        Thread thread = Thread.currentThread();
        synchronized (registry) {
            ThreadCache cache = adoptDeadLocked(thread);
            drainDeadLocked();
            if (cache == null) {
                cache = new ThreadCache(template, overflowCapacity, thread);
                registry.add(cache);
            }
            int slot = (int) cache.ownerId & (TABLE_SIZE - 1);
            if (byThread[slot] == null) {
                cacheByThread[slot] = cache;
                TABLE.setRelease(byThread, slot, cache.m);
            }
            return cache;
        }
    }

    /**
     * {@return a terminated platform thread's cache, now {@code thread}'s (still registered,
     * out of its old table slot), or null if there is none} Caller holds the registry lock.
     */
    private ThreadCache adoptDeadLocked(Thread thread) {
        for (ThreadCache cache : registry) {
            if (!cache.virtual && cache.isOwnerDead()) {
                forgetSlotLocked(cache);
                cache.adopt(thread);
                return cache;
            }
        }
        return null;
    }

    /** Takes a cache's array out of its owner's table slot, if it is there. Caller holds the registry lock. */
    private void forgetSlotLocked(ThreadCache cache) {
        int slot = (int) cache.ownerId & (TABLE_SIZE - 1);
        if (byThread[slot] == cache.m) {
            TABLE.setRelease(byThread, slot, null);
            cacheByThread[slot] = null;
        }
    }

    /** {@return the calling virtual thread's stripe, locked; null if it is taken or there is none} */
    ThreadCache lockedStripe() {
        ThreadCache[] s = stripes;
        if (s.length == 0) {
            return null;
        }
        Thread t = Thread.currentThread();
        long id = t.threadId();
        ThreadCache stripe = s[(int) id & (s.length - 1)];
        if (!stripe.tryLock()) {
            return null;
        }
        // The streak fields are guarded by the stripe's lock.
        if (stripe.lastUser != id) {
            stripe.lastUser = id;
            stripe.streak = 0;
        } else if (++stripe.streak >= PROMOTE_AFTER) {
            // A hot virtual thread: try to give it a private cache; on failure (bound
            // reached, table slot taken) try again only after 16 times as many operations.
            // Its next operation finds the cache in byThread; this one still uses the stripe.
            boolean promoted;
            try {
                promoted = promoteVirtual(t);
            } catch (RuntimeException | Error e) {
                stripe.unlock();                   // e.g. the heap closed during the drain
                throw e;
            }
            stripe.streak = promoted ? 0 : -16 * PROMOTE_AFTER;
        }
        return stripe;
    }

    /**
     * Gives the calling virtual thread a private cache if fewer than {@link #maxVirtualCaches}
     * exist and its {@link #byThread} slot is free (a promoted virtual thread is found only
     * there, never through a {@code ThreadLocal}). Called with a stripe locked: the registry
     * lock is never held while a stripe lock is taken, so this cannot deadlock.
     */
    private boolean promoteVirtual(Thread t) {
        synchronized (registry) {
            drainDeadLocked();
            int slot = (int) t.threadId() & (TABLE_SIZE - 1);
            if (virtualCaches >= maxVirtualCaches || byThread[slot] != null) {
                return false;
            }
            ThreadCache cache = new ThreadCache(template, overflowCapacity, t);
            virtualCaches++;
            registry.add(cache);
            cacheByThread[slot] = cache;
            TABLE.setRelease(byThread, slot, cache.m);
            return true;
        }
    }

    /** Drains and unregisters the caches of terminated threads. */
    void drainDead() {
        synchronized (registry) {
            drainDeadLocked();
        }
    }

    /** Caller holds the registry lock. */
    private void drainDeadLocked() {
        for (int i = registry.size() - 1; i >= 0; i--) {
            ThreadCache cache = registry.get(i);
            if (cache.isOwnerDead()) {
                // Drain first, then remove (the registry's lock keeps drainers apart): a drainer
                // that dies halfway (a StackOverflowError) leaves the cache registered, each
                // class either drained or whole (one native call per class), for the next
                // drainer; draining a drained cache again does nothing.
                drainer.accept(cache);
                registry.set(i, registry.getLast());
                registry.removeLast();
                if (cache.virtual) {
                    virtualCaches--;
                }
                forgetSlotLocked(cache);
            }
        }
    }

    /** Applies {@code action} to each stripe that is free now, under its lock; a taken stripe is skipped, not waited for. */
    void forEachFreeStripe(Consumer<ThreadCache> action) {
        for (ThreadCache stripe : stripes) {
            if (stripe.tryLock()) {
                try {
                    action.accept(stripe);
                } finally {
                    stripe.unlock();
                }
            }
        }
    }

    /**
     * {@return per class, the blocks held in all caches} After draining the dead ones; the
     * live caches' counts are opaque reads, each some value its owner wrote.
     */
    long[] cachedBlocks(int classCount, int cachedClassCount, int[] base) {
        long[] cached = new long[classCount];
        synchronized (registry) {
            drainDeadLocked();
            for (ThreadCache cache : registry) {
                for (int c = 0; c < cachedClassCount; c++) {
                    cached[c] += cache.topOpaque(c) - base[c] + cache.overflow.blocks(c);
                }
            }
            for (ThreadCache stripe : stripes) {
                for (int c = 0; c < cachedClassCount; c++) {
                    cached[c] += stripe.topOpaque(c) - base[c] + stripe.overflow.blocks(c);
                }
            }
        }
        return cached;
    }
}
