package org.spanheap.internal.compact;

/**
 * Where a compacting heap gets its pages from: fixed-size, 4096-byte aligned
 * blocks of native memory that it cuts into blocks of one size class.
 *
 * <p>A page given back with {@link #freePage} is no longer read or written by
 * the compacting heap, and its memory leaves the process's resident set at
 * once. Implementations are thread-safe: size classes take and give back
 * pages under their own locks, concurrently.
 */
interface PageSource extends AutoCloseable {

    /** Bytes per page; a power of two, at least 4096. */
    long pageSize();

    /**
     * Returns the address of a new page of {@link #pageSize()} bytes (contents unspecified).
     *
     * @throws OutOfMemoryError if no page can be had
     * @throws IllegalStateException if the source can no longer give pages (its span heap was closed)
     */
    long allocatePage();

    /** Gives back a page from {@link #allocatePage()}. */
    void freePage(long page);

    /**
     * Gives back {@code count} pages from {@link #allocatePage()}, {@code pages[0..count)}, in
     * any order; a source may reorder the array. One call per batch lets a source give the
     * memory of adjacent pages back to the OS in one call (one TLB flush instead of one a page).
     */
    default void freePages(long[] pages, int count) {
        for (int i = 0; i < count; i++) {
            freePage(pages[i]);
        }
    }

    /** Bytes of pages currently handed out. */
    long committedBytes();

    /** Releases whatever the source itself holds; pages still out are lost. */
    @Override
    void close();
}
