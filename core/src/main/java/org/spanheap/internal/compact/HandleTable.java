package org.spanheap.internal.compact;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;

/**
 * The A2C map of Compact-fit: handle index to concrete address, with a
 * generation per entry. Descriptor of one entry: two longs in the flat
 * {@code long[]} that resolves read (four entries per cache line):
 *
 * <pre>
 *  long 2i    state    63            32 31   30    29                 0
 *                     +----------------+----+------+-------------------+
 *                     | generation     |LIVE|MOVING| size in bytes     |
 *                     +----------------+----+------+-------------------+
 *  long 2i+1  address  concrete address of the block (meaningful while LIVE)
 * </pre>
 *
 * and, touched only under the heap lock, {@code pageId[i]}, {@code slot[i]}
 * (where the block is) and {@code link[i]} (next free index).
 *
 * <p>A handle is {@code generation << 32 | index}; generations start at 1, so
 * no valid handle is 0 or negative, and index 0 is never used. An index whose
 * generation reaches {@link #MAX_GENERATION} is retired, never reused: a stale
 * handle can never match a later incarnation of its entry.
 *
 * <p>Concurrency: entries are written only under the heap lock; the state is
 * written with release after the address and read with acquire before it.
 * The table grows by copying; a reader may keep reading an old copy whose
 * entries no longer change. That is safe for the same reason a stale epoch
 * segment is: the reader read its epoch first, and every later change that
 * retires an address (a move, the release of a freed block) closes that epoch
 * before the old memory is reused (see {@link CompactFitHeap}).
 */
public final class HandleTable {

    public static final long LIVE = 1L << 31;
    public static final long MOVING = 1L << 30;
    public static final long SIZE_MASK = (1L << 30) - 1;
    public static final long GEN_MASK = 0xFFFF_FFFFL << 32;
    public static final long MAX_GENERATION = 0x7FFF_FFFFL;
    static final int MAX_ENTRIES = 1 << 30;

    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);

    /** The hot table; replaced (never shrunk) by {@link #grow()}, read by resolves. */
    private volatile long[] entries = new long[0];
    // heap lock only
    private int[] pageId = new int[0];
    private int[] slotInPage = new int[0];
    private int[] link = new int[0];
    private int capacity;
    private int freeHead = -1;
    private long retired;

    /** The hot table to resolve in (volatile read). */
    public long[] entries() {
        return entries;
    }

    public static long stateAcquire(long[] entries, int index) {
        return (long) LONGS.getAcquire(entries, index << 1);
    }

    public static long address(long[] entries, int index) {
        return entries[(index << 1) + 1];
    }

    // ---- heap-lock side -------------------------------------------------

    /** Takes a free index; its state word holds the generation to use. */
    int takeIndex() {
        if (freeHead < 0) {
            grow();
        }
        int i = freeHead;
        freeHead = link[i];
        return i;
    }

    private void grow() {
        int old = capacity;
        int cap = old == 0 ? 4096 : old * 2;
        if (old >= MAX_ENTRIES) {
            throw new OutOfMemoryError("handle table full: " + old + " handles");
        }
        long[] e = Arrays.copyOf(entries, cap * 2);
        pageId = Arrays.copyOf(pageId, cap);
        slotInPage = Arrays.copyOf(slotInPage, cap);
        link = Arrays.copyOf(link, cap);
        for (int i = cap - 1; i >= Math.max(old, 1); i--) {
            e[i << 1] = 1L << 32; // generation 1, not live
            link[i] = freeHead;
            freeHead = i;
        }
        if (old == 0) {
            e[0] = 0; // index 0: generation 0, never live, never handed out
        }
        capacity = cap;
        entries = e; // volatile write publishes the initialised copy
    }

    void publishLive(int index, long address, long size, int page, int slot) {
        long[] e = entries;
        long gen = e[index << 1] & GEN_MASK;
        e[(index << 1) + 1] = address;
        pageId[index] = page;
        slotInPage[index] = slot;
        LONGS.setRelease(e, index << 1, gen | LIVE | size); // address before state
    }

    long handleOf(int index) {
        return (entries[index << 1] & GEN_MASK) | index;
    }

    /** Kills the entry: bumps the generation, clears LIVE. Address and place stay for the deferred release. */
    void kill(int index) {
        long[] e = entries;
        long gen = (e[index << 1] >>> 32) + 1;
        LONGS.setVolatile(e, index << 1, gen << 32);
    }

    /** Returns a killed index to the free list (after the epoch that could still see it is closed). */
    void recycle(int index) {
        long[] e = entries;
        if ((e[index << 1] >>> 32) >= MAX_GENERATION) {
            retired++;
            return;
        }
        e[(index << 1) + 1] = 0;
        link[index] = freeHead;
        freeHead = index;
    }

    int pageIdOf(int index) {
        return pageId[index];
    }

    int slotInPageOf(int index) {
        return slotInPage[index];
    }

    long rawState(int index) {
        return entries[index << 1];
    }

    void setMoving(int index) {
        long[] e = entries;
        LONGS.setVolatile(e, index << 1, e[index << 1] | MOVING);
    }

    /** Publishes the new place of a moved block and clears MOVING (address before state). */
    void publishMoved(int index, long address, int page, int slot) {
        long[] e = entries;
        e[(index << 1) + 1] = address;
        pageId[index] = page;
        slotInPage[index] = slot;
        LONGS.setRelease(e, index << 1, e[index << 1] & ~MOVING);
    }

    int capacity() {
        return capacity;
    }

    long retired() {
        return retired;
    }
}
