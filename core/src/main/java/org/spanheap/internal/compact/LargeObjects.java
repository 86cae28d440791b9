package org.spanheap.internal.compact;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Objects above the largest size class: each in a mapping of its own
 * ({@link OsMemory#map}, zeroed by the OS) or in a kept mapping of a reclaimed
 * one ({@link LargeMappings}, dirty), never moved. Their entries have no page;
 * a mapping's size follows from the object's size ({@link OsMemory#mappedSize}).
 *
 * <p>{@link #lock} guards the handle indices kept for large objects, the
 * allocation counters and a publication against the heap's close (which takes
 * it too, so that nothing is published after close has walked the table).
 * Releases run on the round's thread (under the heap's round lock).
 */
final class LargeObjects {

    private final HandleTable table;
    private final PageReserve pages;
    /** Bytes mapped for live large objects and those freed and not yet released. */
    final AtomicLong mappedBytes = new AtomicLong();
    /** Reclaimed large objects' mappings, reused by the next large objects. */
    final LargeMappings kept = new LargeMappings();
    final ReentrantLock lock = new ReentrantLock();

    // ---- under lock ----
    private int indexHead = HandleTable.NO_INDEX;
    /** Objects allocated and their requested bytes (under lock; read racily as hints). */
    long allocated, allocatedBytes;
    /** Objects released by rounds and their bytes (round thread; read under the round lock or racily). */
    long released, releasedBytes;

    LargeObjects(HandleTable table, PageReserve pages) {
        this.table = table;
        this.pages = pages;
    }

    /**
     * Checks that {@code size} fits a handle and a mapping.
     *
     * @throws IllegalArgumentException if it does not
     */
    static void checkSize(long size) {
        if (size > HandleTable.MAX_SIZE) {
            throw new IllegalArgumentException("size must be at most " + HandleTable.MAX_SIZE + ": " + size);
        }
        if ((OsMemory.mappedSize(size) >>> 12) > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("size too large: " + size);
        }
    }

    /** {@return a kept mapping for {@code size} bytes (dirty), or 0 if none} Counts it as mapped. */
    long takeKept(long size) {
        long address = kept.take(size);
        if (address != 0) {
            mappedBytes.addAndGet(OsMemory.mappedSize(size));
        }
        return address;
    }

    /** {@return a fresh zeroed mapping for {@code size} bytes} Counts it as mapped. */
    long map(long size) {
        long address = OsMemory.map(size);
        mappedBytes.addAndGet(OsMemory.mappedSize(size));
        return address;
    }

    /** Unmaps a mapping from {@link #takeKept} or {@link #map} that was never published (its fill failed). */
    void unmapUnpublished(long address, long size) {
        OsMemory.unmap(address, size);
        mappedBytes.addAndGet(-OsMemory.mappedSize(size));
    }

    /** Publishes a filled mapping as a live object; {@return its handle index} Caller holds {@link #lock}. */
    int publish(long address, long size) {
        if (indexHead == HandleTable.NO_INDEX) {
            indexHead = table.takeIndices(SizeClassPages.INDEX_BATCH);
        }
        int index = indexHead;
        indexHead = table.link(index);
        table.publishLive(index, address, size, null); // its mapping: mappedSize(size)
        allocated++;
        allocatedBytes += size;
        return index;
    }

    /** The kept mappings' bound: 1/16 of what the heap holds, at least 2 MiB. */
    private long keptCap() {
        return Math.max(2L << 20, (pages.committedBytes() + mappedBytes.get()) / 16);
    }

    /**
     * Releases the large objects of {@code piece}'s group {@code group}: nobody can reach them any
     * more (their epoch is closed); each mapping is kept for reuse or unmapped, each index goes
     * back to the table. {@return the mapped bytes released} Round thread only.
     */
    long release(ReleasePiece piece, int group) {
        long bytes = 0;
        int head = HandleTable.NO_INDEX;
        for (int k = piece.groupStart(group); k < piece.groupEnd(group); k++) {
            int pos = piece.at(k);
            int i = piece.index(pos);
            long size = HandleTable.size(piece.state(pos));
            long mapped = OsMemory.mappedSize(size);
            mappedBytes.addAndGet(-mapped);
            kept.give(piece.address(pos), mapped, keptCap());
            released++;
            releasedBytes += size;
            bytes += mapped;
            table.setLink(i, head);
            head = i;
        }
        if (head != HandleTable.NO_INDEX) {
            table.giveIndices(head); // large objects are rare: their indices go straight back
        }
        return bytes;
    }

    /** Adds the mapping of entry {@code index} to {@code ranges} if it is a large object's. */
    void addIfLarge(int index, MemoryRanges ranges) {
        long address = table.address(index);
        if (table.pageOf(index) == null && address != 0) {
            ranges.add(address, OsMemory.mappedSize(HandleTable.size(table.stateAcquire(index))));
        }
    }

    /** Unmaps the mapping of entry {@code index} if it is a large object's (at close). */
    void unmapIfLarge(int index) {
        if (table.pageOf(index) == null && table.address(index) != 0) {
            long mapped = OsMemory.mappedSize(HandleTable.size(table.stateAcquire(index)));
            OsMemory.unmap(table.address(index), mapped);
            mappedBytes.addAndGet(-mapped);
        }
    }
}
