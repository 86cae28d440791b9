package org.spanheap.internal.compact;

import java.util.Arrays;

/**
 * A page source in front of another one that keeps a few emptied pages
 * instead of giving them back at once, and hands them out again first. A
 * page given back to the OS (madvised or unmapped) costs 16 page faults of
 * the next user of its memory, and a cache under churn empties and fills pages
 * all the time: without the reserve the churn benchmark spent a quarter of its
 * CPU time in the kernel (docs/compacting-heap.md). The reserve is bounded
 * (16 pages, or 1/32 of the pages out if more) and counts as committed, since
 * its pages stay resident.
 */
final class PageReserve implements PageSource {

    private static final int MIN_PAGES = 16;
    private final PageSource delegate;
    private final long pageSize;
    // guarded by this
    private long[] pages = new long[MIN_PAGES];
    private int count;
    /** Bytes of pages handed to the delegate to give back to the OS, ever (for the MemoryRelease event). */
    private long releasedBytes;

    PageReserve(PageSource delegate) {
        this.delegate = delegate;
        this.pageSize = delegate.pageSize();
    }

    @Override
    public long pageSize() {
        return pageSize;
    }

    @Override
    public long allocatePage() {
        synchronized (this) {
            if (count > 0) {
                return pages[--count];
            }
        }
        return delegate.allocatePage();
    }

    @Override
    public void freePage(long page) {
        synchronized (this) {
            if (keep(page)) {
                return;
            }
            releasedBytes += pageSize; // given back just below
        }
        delegate.freePage(page);
    }

    /** Keeps {@code page} if the reserve has room for it; {@return whether it did} Caller holds this. */
    private boolean keep(long page) {
        long out = delegate.committedBytes() / pageSize - count; // pages in use
        if (count >= Math.max(MIN_PAGES, out / 32)) {
            return false;
        }
        if (count == pages.length) {
            pages = Arrays.copyOf(pages, count * 2);
        }
        pages[count++] = page;
        return true;
    }

    /**
     * Keeps as many of the pages as the reserve takes (as {@link #freePage}) and gives the
     * rest to the source in one batch ({@link PageSource#freePages}). May reorder the array.
     */
    @Override
    public void freePages(long[] given, int n) {
        int rest = 0;
        synchronized (this) {
            for (int i = 0; i < n; i++) {
                if (!keep(given[i])) {
                    given[rest++] = given[i]; // i >= rest: nothing unread is overwritten
                }
            }
            releasedBytes += rest * pageSize; // given back just below
        }
        if (rest > 0) {
            delegate.freePages(given, rest);
        }
    }

    /** Adds the kept pages to {@code ranges} (to ask the OS which are in RAM). */
    synchronized void addRanges(MemoryRanges ranges) {
        for (int i = 0; i < count; i++) {
            ranges.add(pages[i], pageSize);
        }
    }

    /** {@return the bytes of the pages given back to the delegate so far: a counter that only grows} */
    synchronized long releasedBytes() {
        return releasedBytes;
    }

    /** Pages out plus the reserve: all of it is resident. */
    @Override
    public long committedBytes() {
        return delegate.committedBytes();
    }

    /** Gives every reserved page back (heap close, or a trim). */
    synchronized void drain() {
        while (count > 0) {
            delegate.freePage(pages[--count]);
            releasedBytes += pageSize;
        }
    }

    @Override
    public void close() {
        drain();
        delegate.close();
    }
}
