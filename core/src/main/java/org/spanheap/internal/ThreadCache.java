package org.spanheap.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.WeakReference;

/**
 * One platform thread's magazines of free blocks for one heap: per size class a bounded
 * stack of block addresses inside one flat {@code long[]}.
 *
 * <pre>
 * slots: | class 0: [base0 .. top0) cached, [top0 .. limit0) empty | class 1: ... |
 * top[c]: index of the next empty slot of class c; base[c], limit[c] live in the heap
 * </pre>
 *
 * <p>Only the owner thread reads or writes {@link #slots} and {@link #top} while it is
 * alive; {@code top} is written with plain stores. Two other readers exist:
 * <ul>
 * <li>{@code stats()} of any thread reads {@code top} with {@link #cachedTop opaque} loads:
 *     an estimate while the owner runs, exact once the owner is quiescent.</li>
 * <li>After {@link #isOwnerDead()} is true, a drainer reads everything with plain loads:
 *     {@link Thread#isAlive()} returning false happens-after every action of the dead thread
 *     (JLS 17.4.4). A cleared weak reference implies termination too, since a live thread is a
 *     GC root.</li>
 * </ul>
 * Each cache is allocated by its owner thread, in that thread's TLAB, so different
 * threads' magazines do not share cache lines in practice; no padding is added.
 */
public final class ThreadCache {
    private static final VarHandle TOP = MethodHandles.arrayElementVarHandle(int[].class);

    /** Block addresses; class {@code c} uses {@code [base[c], limit[c])}. */
    final long[] slots;
    /** Per class, the index of the next empty slot. */
    final int[] top;
    /** {@link Thread#threadId()} of the owner: unique for the life of the JVM, never reused; -1 for a stripe. */
    final long ownerId;
    /** The owner thread; null for a stripe. */
    private final WeakReference<Thread> owner;
    /** Index in {@link #top} of a stripe's lock word (0 free, 1 taken); unused by a thread's cache. */
    private final int lockIndex;

    /** A platform thread's cache. */
    ThreadCache(int slotCount, int[] base, Thread owner) {
        this.slots = new long[slotCount];
        this.top = base.clone();
        this.ownerId = owner.threadId();
        this.owner = new WeakReference<>(owner);
        this.lockIndex = -1;
    }

    /**
     * A stripe: a cache shared by virtual threads, used only under its lock. The lock word
     * sits in {@code top} after the class tops (the lock holder touches that line anyway),
     * followed by 16 spare ints so the word does not share a cache line with whatever the
     * allocator places next (the next stripe's cache object, read by other threads).
     */
    ThreadCache(int slotCount, int[] base) {
        this.slots = new long[slotCount];
        this.top = java.util.Arrays.copyOf(base, base.length + 1 + 16);
        this.ownerId = -1;
        this.owner = null;
        this.lockIndex = base.length;
    }

    /** {@return whether the owner thread has terminated; never for a stripe} */
    boolean isOwnerDead() {
        if (owner == null) {
            return false;
        }
        Thread t = owner.get();
        return t == null || !t.isAlive();
    }

    /**
     * {@return whether this stripe's lock was free and is now held} CAS (volatile): acquires,
     * so the previous holder's plain writes to {@link #slots} and {@link #top} are visible.
     */
    boolean tryLock() {
        return TOP.compareAndSet(top, lockIndex, 0, 1);
    }

    /** Releases this stripe's lock; release store: publishes this holder's plain writes. */
    void unlock() {
        TOP.setRelease(top, lockIndex, 0);
    }

    /** {@return top[c], read opaque: some value the owner wrote, never a torn or invented one} */
    int cachedTop(int c) {
        return (int) TOP.getOpaque(top, c);
    }
}
