package org.spanheap.internal.compact;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Pages mapped one by one: every page is its own anonymous {@code mmap},
 * unmapped by {@link #freePage}. Needs nothing but libc.
 *
 * @implNote one system call per page taken or given back (a few
 * microseconds), small against the cost of filling a page of 64 KiB.
 */
final class MappedPageSource implements PageSource {

    private final long pageSize;
    private final AtomicLong committed = new AtomicLong();

    MappedPageSource(long pageSize) {
        this.pageSize = pageSize;
    }

    @Override
    public long pageSize() {
        return pageSize;
    }

    @Override
    public long allocatePage() {
        long p = OsMemory.map(pageSize);
        committed.addAndGet(pageSize);
        return p;
    }

    @Override
    public void freePage(long page) {
        OsMemory.unmap(page, pageSize);
        committed.addAndGet(-pageSize);
    }

    @Override
    public long committedBytes() {
        return committed.get();
    }

    @Override
    public void close() {
    }
}
