package org.spanheap.internal.compact;

import java.util.concurrent.atomic.AtomicLong;
import org.spanheap.internal.HeapEngine;

/**
 * Pages from a span heap: a page is one block of the span heap's size class
 * for {@code pageSize} (64 KiB pages live 15 to a 1 MiB real span), aligned to
 * 4096. A page given back is first released to the OS with
 * {@code madvise(MADV_DONTNEED)}, then freed to the span heap: the real span
 * around it may stay in use by other pages, but the emptied page's memory
 * leaves the process now. Over a span heap of the malloc engine a page is a
 * {@code posix_memalign}ed block (4096-aligned) and the same steps apply; where
 * {@link OsMemory#MAPS} is false (outside Linux) the {@code madvise} is left
 * out and the page's memory goes back when malloc decides.
 *
 * <p>The source holds a reference on the span heap, as its arenas do: a user
 * who closes the span heap given to the builder before the compacting heap
 * makes later page requests fail with {@link IllegalStateException}, while the
 * native memory of the pages already out stays mapped until this source
 * closes.
 */
final class SpanHeapPageSource implements PageSource {

    private final HeapEngine heap;
    private final long pageSize;
    private final AutoCloseable owned;
    private final AtomicLong committed = new AtomicLong();
    /** The page runs of one {@link #freePages} call, given back together. */
    private final ReleaseBatch releases = new ReleaseBatch(false);

    /**
     * @param heap the span heap to take pages from (a reference is taken on it)
     * @param owned what {@link #close()} closes besides (the span heap if the source made it), or null
     * @throws IllegalStateException if {@code heap} is closed
     */
    SpanHeapPageSource(HeapEngine heap, long pageSize, AutoCloseable owned) {
        heap.acquireRef();
        this.heap = heap;
        this.pageSize = pageSize;
        this.owned = owned;
    }

    @Override
    public long pageSize() {
        return pageSize;
    }

    @Override
    public long allocatePage() {
        long p;
        try {
            p = heap.allocateAddress(pageSize, OsMemory.OS_PAGE);
        } catch (IllegalStateException e) {
            throw new IllegalStateException("the span heap this compacting heap takes its pages from is closed", e);
        }
        committed.addAndGet(pageSize);
        return p;
    }

    @Override
    public void freePage(long page) {
        OsMemory.release(page, pageSize);
        committed.addAndGet(-pageSize);
        freeToHeap(page);
    }

    /** Frees a released page to the span heap. */
    private void freeToHeap(long page) {
        try {
            heap.freeAddress(page);
        } catch (IllegalStateException closed) {
            // the user closed the span heap: its memory goes when our reference is dropped
        }
    }

    /**
     * Sorts the pages and releases each run of adjacent ones as one range (pages of one real
     * span are often neighbours), all runs in one batch ({@link ReleaseBatch}: one system call
     * and one TLB shootdown where the OS takes them at once), then frees them to the span heap.
     */
    @Override
    public void freePages(long[] pages, int count) {
        java.util.Arrays.sort(pages, 0, count);
        ReleaseBatch batch = releases;
        synchronized (batch) { // rounds free pages one batch at a time; a trim may come from another thread
            for (int i = 0; i < count;) {
                int j = i + 1;
                while (j < count && pages[j] == pages[j - 1] + pageSize) {
                    j++;
                }
                batch.add(pages[i], (j - i) * pageSize);
                i = j;
            }
            batch.flush();
        }
        committed.addAndGet(-count * pageSize);
        for (int i = 0; i < count; i++) {
            freeToHeap(pages[i]);
        }
    }

    @Override
    public long committedBytes() {
        return committed.get();
    }

    @Override
    public void close() {
        if (owned != null) {
            try {
                owned.close();
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }
        heap.releaseRef();
    }
}
