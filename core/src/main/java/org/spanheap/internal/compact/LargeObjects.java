package org.spanheap.internal.compact;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Objects above the largest size class, never moved: up to
 * {@link LargeSegments#MAX_OBJECT} bytes a run of granules in a segment that
 * stays mapped ({@link LargeSegments}); larger ones each in a mapping of its own
 * ({@link OsMemory#map}, zeroed by the OS), unmapped when released, as malloc
 * does with blocks that large. Their entries have no page; where an
 * object lives and what it holds follow from its size ({@link LargeSegments#fits},
 * {@link OsMemory#mappedSize}).
 *
 * <p>{@link #lock} guards the handle indices kept for large objects, the
 * allocation counters and a publication against the heap's close (which takes
 * it too, so that nothing is published after close has walked the table).
 * Releases run on the round's thread (under the heap's round lock).
 */
final class LargeObjects {

    private final HandleTable table;
    private final PageReserve pages;
    /** Bytes mapped for live large objects of their own mappings and those freed and not yet released. */
    final AtomicLong mappedBytes = new AtomicLong();
    /** The runs of the large objects that fit a segment (under {@link #lock}). */
    final LargeSegments segments = new LargeSegments();
    final ReentrantLock lock = new ReentrantLock();

    // ---- under lock ----
    private int indexHead = HandleTable.NO_INDEX;
    /** Objects allocated and their requested bytes (under lock; read racily as hints). */
    long allocated, allocatedBytes;
    /** Objects released by rounds and their bytes (round thread; read under the round lock or racily). */
    long released, releasedBytes;
    /** Bytes of own mappings unmapped by releases so far (round thread; read racily). */
    private volatile long unmappedBytes;

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

    /**
     * {@return a run for an object of {@code size} bytes that fits a segment, bit 0 set if it may
     * hold non-zero bytes} Caller holds {@link #lock}.
     */
    long takeRun(long size) {
        return segments.take(size);
    }

    /** Gives back a run from {@link #takeRun} that was never published (its fill failed). */
    void giveUnpublishedRun(long address, long size) {
        lock.lock();
        try {
            segments.give(address, size);
        } finally {
            lock.unlock();
        }
    }

    /** Bytes held for live large objects and those freed and not yet released: mappings and runs. */
    long heldBytes() {
        return mappedBytes.get() + segments.usedBytes();
    }

    /** Bytes the segments map but do not count as committed: granules never touched or given back. */
    long segmentBytesNotCommitted() {
        lock.lock();
        try {
            return segments.mappedBytes() - segments.residentBytes();
        } finally {
            lock.unlock();
        }
    }

    /** Adds the segments' resident granules to {@code ranges} (to ask the OS which pages are in RAM). */
    void addSegmentRanges(MemoryRanges ranges) {
        lock.lock();
        try {
            segments.addRanges(ranges);
        } finally {
            lock.unlock();
        }
    }

    /** Bytes that large objects add to the heap's committed bytes: their mappings and the resident runs. */
    long committedBytes() {
        return mappedBytes.get() + segments.residentBytes();
    }

    /** {@return the bytes given back to the OS so far: unmapped mappings and released runs} */
    long releasedBytes() {
        return unmappedBytes + segments.releasedBytes();
    }

    /** {@return a fresh zeroed mapping for {@code size} bytes} Counts it as mapped. */
    long map(long size) {
        long address = OsMemory.map(size);
        mappedBytes.addAndGet(OsMemory.mappedSize(size));
        return address;
    }

    /** Unmaps a mapping from {@link #map} that was never published (its fill failed). */
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

    /**
     * Gives the segments' free resident granules back to the OS once they exceed a sixteenth of
     * the heap's pages and large objects (at least {@link #FREE_RUNS_FLOOR}), down to half of
     * that, and only granules free for {@link #FREE_RUN_DECAY_NANOS}: a churn that frees and
     * takes runs all the time then pays no {@code madvise} and no page faults after it. Over
     * twice the mark, younger granules go too, down to the mark. Both go lazily (see
     * {@link LargeSegments}), and those still lazy after {@link LargeSegments#LAZY_PURGE_NANOS}
     * go for good. {@return the bytes given back} Round thread, or a trim ({@code all}: every
     * free granule, at once).
     */
    long giveBackRuns(boolean all) {
        long now = System.nanoTime();
        boolean purge = segments.purgeDue(now);
        long high = Math.max(FREE_RUNS_FLOOR, (pages.committedBytes() + heldBytes()) / 16);
        if (!all && !purge && segments.residentBytes() - segments.usedBytes() <= high) {
            return 0; // racy reads: a hint, the next round looks again
        }
        lock.lock();
        try {
            if (all) {
                return segments.giveBack(0);
            }
            if (purge) {
                purgeDue(); // counted as given back when they went lazy
            }
            long given = segments.giveBack(high / 2, FREE_RUN_DECAY_NANOS, now);
            if (segments.residentBytes() - segments.usedBytes() > 2 * high) {
                given += segments.giveBack(high, 0, now); // a burst of frees: over twice the mark, young granules go too
            }
            return given;
        } finally {
            lock.unlock();
        }
    }

    /** {@return whether lazy granules wait for their purge} A racy hint for the background thread's idle tick. */
    boolean lazyRunsDue() {
        return segments.purgeDue(System.nanoTime());
    }

    /** Releases for good the lazy granules given back over {@link LargeSegments#LAZY_PURGE_NANOS} ago (caller holds the round lock). */
    void purgeLazyRuns() {
        lock.lock();
        try {
            purgeDue();
        } finally {
            lock.unlock();
        }
    }

    /** Purges the lazy granules that are due (caller holds {@link #lock}). */
    private void purgeDue() {
        segments.purgeLazy(System.nanoTime() - LargeSegments.LAZY_PURGE_NANOS);
    }

    /**
     * How long a free granule stays resident before a round may give it back: 20 ms, two idle
     * ticks of the background thread. On the cache churn at 8 threads (2-core machine) it took
     * the heap's page faults from 2-3x malloc's to below them (docs/decisions.md).
     */
    static final long FREE_RUN_DECAY_NANOS = 20_000_000L;

    /** Free resident granules the segments keep in any small heap: 1 MiB, a few objects' worth. */
    static final long FREE_RUNS_FLOOR = 1L << 20;

    /**
     * Releases the large objects of {@code piece}'s group {@code group}: nobody can reach them any
     * more (their epoch is closed); each run goes back to its segment, each mapping is unmapped, each index goes
     * back to the table. {@return the mapped bytes released} Round thread only.
     */
    long release(ReleasePiece piece, int group) {
        long bytes = 0;
        int head = HandleTable.NO_INDEX;
        lock.lock(); // the runs: allocations take them under it
        try {
            for (int k = piece.groupStart(group); k < piece.groupEnd(group); k++) {
                int pos = piece.at(k);
                int i = piece.index(pos);
                long size = HandleTable.size(piece.state(pos));
                if (LargeSegments.fits(size)) {
                    segments.give(piece.address(pos), size);
                    bytes += LargeSegments.heldSize(size);
                } else {
                    long mapped = OsMemory.mappedSize(size);
                    OsMemory.unmap(piece.address(pos), mapped);
                    mappedBytes.addAndGet(-mapped);
                    unmappedBytes += mapped;
                    bytes += mapped;
                }
                released++;
                releasedBytes += size;
                table.setLink(i, head);
                head = i;
            }
        } finally {
            lock.unlock();
        }
        if (head != HandleTable.NO_INDEX) {
            table.giveIndices(head); // large objects are rare: their indices go straight back
        }
        return bytes;
    }

    /**
     * Adds the mapping of entry {@code index} to {@code ranges} if it is a large object's of its
     * own mapping (runs count with their segments: {@link LargeSegments#addRanges}).
     */
    void addIfLarge(int index, MemoryRanges ranges) {
        long address = table.address(index);
        if (table.pageOf(index) == null && address != 0
                && !LargeSegments.fits(HandleTable.size(table.stateAcquire(index)))) {
            ranges.add(address, OsMemory.mappedSize(HandleTable.size(table.stateAcquire(index))));
        }
    }

    /**
     * Unmaps the mapping of entry {@code index} if it is a large object's of its own mapping (at
     * close; the segments go with {@link LargeSegments#unmapAll}).
     */
    void unmapIfLarge(int index) {
        long size = HandleTable.size(table.stateAcquire(index));
        if (table.pageOf(index) == null && table.address(index) != 0 && !LargeSegments.fits(size)) {
            long mapped = OsMemory.mappedSize(size);
            OsMemory.unmap(table.address(index), mapped);
            mappedBytes.addAndGet(-mapped);
        }
    }
}
