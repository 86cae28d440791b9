package org.spanheap.internal.compact;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicLong;
import org.spanheap.SpanHeap;

/**
 * Pages from a {@link SpanHeap}: a page is one block of the span heap's
 * size class for {@code pageSize} (64 KiB pages live 15 to a 1 MiB real span).
 * A page given back is freed to the span heap; when every page of a real span
 * is free the span goes back to the span pool and is madvised, so memory of
 * pages emptied by compaction returns to the OS through the span machinery.
 * Pages of more than 1 MiB are mapped directly by the native core and
 * unmapped on free.
 *
 * @implNote Pages come from {@link SpanHeap#allocateUninitialized(long, long)}
 * aligned to 4096 (so a page never straddles more OS pages than it must); the
 * compacting heap calls this source under its own lock.
 */
public final class SpanHeapPageSource implements PageSource {

    private final SpanHeap heap;
    private final long pageSize;
    private final boolean ownsHeap;
    private final AtomicLong committed = new AtomicLong();

    /**
     * @param heap the span heap to take pages from
     * @param pageSize bytes per page, a power of two of at least 4096
     * @param ownsHeap whether {@link #close()} closes {@code heap}
     */
    public SpanHeapPageSource(SpanHeap heap, long pageSize, boolean ownsHeap) {
        if (pageSize < 4096 || Long.bitCount(pageSize) != 1) {
            throw new IllegalArgumentException("page size must be a power of two >= 4096: " + pageSize);
        }
        this.heap = heap;
        this.pageSize = pageSize;
        this.ownsHeap = ownsHeap;
    }

    @Override
    public long pageSize() {
        return pageSize;
    }

    /**
     * The real-span size that holds blocks of {@code pageSize} in the native
     * core: the smallest of 16/64/256 KiB, 1/2 MiB with room for 8 blocks after
     * the span header (mirrors native/src/size_class.c); above 1 MiB pages are
     * mapped one by one. Used only to steer compaction, never for safety.
     */
    @Override
    public long groupSize() {
        if (pageSize > (1L << 20)) {
            return pageSize;
        }
        long header = Math.min(4096, pageSize);
        for (long real : new long[] {16 << 10, 64 << 10, 256 << 10, 1 << 20}) {
            if ((real - header) / pageSize >= 8) {
                return real;
            }
        }
        return 2L << 20;
    }

    @Override
    public MemorySegment allocatePage() {
        MemorySegment p = heap.allocateUninitialized(pageSize, 4096);
        committed.addAndGet(pageSize);
        return p;
    }

    @Override
    public void freePage(MemorySegment page) {
        heap.free(page);
        committed.addAndGet(-pageSize);
    }

    @Override
    public long committedBytes() {
        return committed.get();
    }

    @Override
    public void close() {
        if (ownsHeap) {
            heap.close();
        }
    }
}
