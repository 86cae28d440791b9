package org.spanheap.examples.cache;

import org.spanheap.CompactingHeap;
import org.spanheap.CompactingHeapStats;
import org.spanheap.SpanHeap;

import java.lang.foreign.MemorySegment;

/**
 * Entries in a {@link CompactingHeap}: the reference is the object's handle, so the heap
 * may move entries to compact its pages while the cache runs. The pages come from a
 * {@link SpanHeap} of the store's own (whose statistics give the resident bytes), or are
 * mapped one by one and unmapped as soon as compaction or frees empty them.
 *
 * <p>Every access goes through {@link CompactingHeap#read} or {@link CompactingHeap#write},
 * which rerun the function if a compaction moved the entry meanwhile; the functions here
 * only copy bytes, so a rerun is harmless.
 */
public final class CompactingEntryStore implements EntryStore {

    private final SpanHeap pages;
    private final CompactingHeap heap;
    private final String name;

    private CompactingEntryStore(SpanHeap pages, CompactingHeap heap, String name) {
        this.pages = pages;
        this.heap = heap;
        this.name = name;
    }

    /**
     * {@return a store whose compacting heap keeps at most {@code kappa} not-full pages per
     * size class} {@link CompactingHeap#KAPPA_INFINITE} turns compaction off.
     *
     * @param kappa the partial compaction bound
     */
    public static CompactingEntryStore create(int kappa) {
        return create(kappa, 64 * 1024, 1024 * 1024);
    }

    /**
     * {@return a store with the given compaction settings} See
     * {@link CompactingHeap.Builder}: each compaction increment (at most {@code iota} bytes)
     * and each reclaim of {@code reclaimBatchBytes} freed bytes costs one epoch change, a
     * handshake with all threads; larger values mean fewer handshakes.
     *
     * @param kappa             the partial compaction bound
     * @param iota              the compaction increment in bytes
     * @param reclaimBatchBytes freed bytes collected before they are reclaimed
     */
    public static CompactingEntryStore create(int kappa, long iota, long reclaimBatchBytes) {
        return create(kappa, iota, reclaimBatchBytes, false);
    }

    /**
     * {@return a store with the given compaction settings and page source}
     *
     * @param kappa             the partial compaction bound
     * @param iota              the compaction increment in bytes
     * @param reclaimBatchBytes freed bytes collected before they are reclaimed
     * @param mappedPages       whether every page is its own {@code mmap} (unmapped as soon as
     *                          compaction empties it) instead of a block of a span heap
     */
    public static CompactingEntryStore create(int kappa, long iota, long reclaimBatchBytes, boolean mappedPages) {
        SpanHeap pages = mappedPages ? null : SpanHeap.create();
        try {
            CompactingHeap.Builder b = CompactingHeap.builder().kappa(kappa).iota(iota)
                    .reclaimBatchBytes(reclaimBatchBytes);
            CompactingHeap heap = (mappedPages ? b.mappedPages() : b.spanHeap(pages)).build();
            String name = (kappa == CompactingHeap.KAPPA_INFINITE ? "no compaction" : "compacting k=" + kappa)
                    + (mappedPages ? ", mmap pages" : ", span-heap pages");
            return new CompactingEntryStore(pages, heap, name);
        } catch (RuntimeException | Error e) {
            if (pages != null) {
                pages.close();
            }
            throw e;
        }
    }

    /** {@return the compacting heap (for its statistics, or an explicit {@code compact()})} */
    public CompactingHeap heap() {
        return heap;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public long maxEntryBytes() {
        return heap.maxObjectSize();
    }

    @Override
    public long store(byte[] key, MemorySegment value) {
        long h = heap.allocate(EntryStore.entryBytes(key.length, value.byteSize()));
        try {
            heap.write(h, entry -> EntryStore.writeEntry(entry, key, value));
        } catch (RuntimeException | Error e) {
            heap.free(h);
            throw e;
        }
        return h;
    }

    @Override
    public boolean keyEquals(long ref, byte[] key) {
        return heap.read(ref, entry -> EntryStore.keyEquals(entry, key));
    }

    @Override
    public int copyValue(long ref, MemorySegment dst) {
        return heap.read(ref, entry -> EntryStore.copyValue(entry, dst));
    }

    @Override
    public byte[] value(long ref) {
        return heap.read(ref, EntryStore::value);
    }

    @Override
    public void free(long ref) {
        heap.free(ref);
    }

    @Override
    public Memory memory() {
        CompactingHeapStats s = heap.stats();
        // with mmap pages, every committed page is touched: resident = committed
        long resident = pages == null ? s.committedBytes() : pages.stats().residentBytes();
        return new Memory(s.committedBytes(), resident, s.movedBytes());
    }

    @Override
    public void close() {
        try {
            heap.close();
        } finally {
            if (pages != null) {
                pages.close();
            }
        }
    }
}
