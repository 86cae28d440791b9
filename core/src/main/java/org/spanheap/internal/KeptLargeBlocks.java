package org.spanheap.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * Freed large blocks that a heap keeps, still allocated in the native core and with their
 * own scopes still open, to hand out again. Each large block has a shared arena of its own
 * ({@link OwnScopes}), and closing it is a handshake with every thread of the JVM: about
 * 30 us with a few threads, half the cost of allocating, zeroing and freeing a 2 MiB block
 * (docs/java-core.md, "Large blocks kept with their scopes"). A block kept here is freed
 * from the caller's point of view but still mapped, so handing it out again needs neither
 * a handshake nor a native call; its scope is closed only when it leaves for good (no room,
 * {@code trim}, a failed allocation, the heap's close).
 *
 * <p>The price: a use after free of a kept block is not detected (it reads or writes the
 * block, or its next owner's data, like a small block's), where a block that leaves is
 * closed first. The bounds mirror the native core's kept mappings (large.c): at most
 * {@value #MAX_BLOCKS} blocks, each at most {@value #MAX_ONE_BYTES} bytes, in all at most
 * {@value #MAX_BYTES} bytes. A request takes the smallest kept block that holds it if that
 * block is at most twice its size, so a kept block wastes at most half of itself.
 *
 * <p>Thread-safe: one lock; large allocations are rare and each costs microseconds anyway.
 */
final class KeptLargeBlocks {

    /** One kept block: its start, its usable bytes in the native core, its open scope. */
    record Kept(long address, long usable, Arena scope) {
    }

    static final int MAX_BLOCKS = 8;
    static final long MAX_ONE_BYTES = 32L << 20;
    static final long MAX_BYTES = 64L << 20;

    private final Kept[] kept = new Kept[MAX_BLOCKS];
    private long bytes;
    private int count;
    private boolean closed;

    /** {@return whether a block of {@code usable} bytes may be kept at all} */
    static boolean eligible(long usable) {
        return usable <= MAX_ONE_BYTES;
    }

    /** Keeps {@code k} if there is room and the heap is not closing; false: the caller frees it. */
    synchronized boolean keep(Kept k) {
        if (closed || !eligible(k.usable()) || bytes + k.usable() > MAX_BYTES) {
            return false;
        }
        for (int i = 0; i < MAX_BLOCKS; i++) {
            if (kept[i] == null) {
                kept[i] = k;
                bytes += k.usable();
                count++;
                return true;
            }
        }
        return false;
    }

    /** Removes and returns the smallest kept block that holds {@code size} bytes and at most twice that, or null. */
    synchronized Kept take(long size) {
        int best = -1;
        for (int i = 0; i < MAX_BLOCKS; i++) {
            Kept k = kept[i];
            if (k != null && k.usable() >= size && k.usable() / 2 <= size
                    && (best < 0 || k.usable() < kept[best].usable())) {
                best = i;
            }
        }
        if (best < 0) {
            return null;
        }
        Kept k = kept[best];
        kept[best] = null;
        bytes -= k.usable();
        count--;
        return k;
    }

    /** {@return whether {@code segment} starts a kept block, with that block's scope}: a second free. */
    synchronized boolean holds(MemorySegment segment) {
        for (Kept k : kept) {
            if (k != null && k.address() == segment.address() && k.scope().scope() == segment.scope()) {
                return true;
            }
        }
        return false;
    }

    /**
     * Removes and returns every kept block; with {@code close}, nothing is kept from now on
     * (the heap is closing: a block kept after its last drain would keep its scope open
     * over memory the heap's destruction unmaps).
     */
    synchronized List<Kept> takeAll(boolean close) {
        closed |= close;
        List<Kept> all = new ArrayList<>(count);
        for (int i = 0; i < MAX_BLOCKS; i++) {
            if (kept[i] != null) {
                all.add(kept[i]);
                kept[i] = null;
            }
        }
        bytes = 0;
        count = 0;
        return all;
    }

    /** How much is kept: usable bytes and blocks, read together. */
    record Totals(long bytes, int count) {
    }

    /** {@return the usable bytes and the number of the kept blocks} */
    synchronized Totals totals() {
        return new Totals(bytes, count);
    }
}
