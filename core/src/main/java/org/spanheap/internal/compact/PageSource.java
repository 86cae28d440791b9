package org.spanheap.internal.compact;

import java.lang.foreign.MemorySegment;

/**
 * Where a {@code CompactingHeap} gets its pages from: fixed-size, 16-byte
 * aligned blocks of native memory that it cuts into blocks of one size class.
 *
 * <p>A page given back with {@link #freePage} is no longer read or written by
 * the compacting heap; the source may return its memory to the OS at once.
 * Implementations must be thread-safe, but the compacting heap calls them only
 * while holding its own lock.
 */
public interface PageSource extends AutoCloseable {

    /** Bytes per page; a power of two, at least 4096. */
    long pageSize();

    /**
     * Returns a new page of {@link #pageSize()} bytes (contents unspecified).
     *
     * @throws OutOfMemoryError if no page can be had
     */
    MemorySegment allocatePage();

    /** Gives back a page from {@link #allocatePage()}. */
    void freePage(MemorySegment page);

    /**
     * Bytes of the unit in which the source returns memory to the OS: pages in
     * one aligned group of this size go back together (a real span of the span
     * heap), so compaction empties whole groups first. Defaults to the page size.
     */
    default long groupSize() {
        return pageSize();
    }

    /** Bytes of pages currently handed out (committed on behalf of the heap). */
    long committedBytes();

    /** Releases whatever the source itself holds; pages still out are lost. */
    @Override
    void close();
}
