package org.spanheap.examples.cache;

import org.spanheap.CompactingHeap;
import org.spanheap.CompactingHeapStats;

import java.lang.foreign.MemorySegment;

/**
 * Entries in a {@link CompactingHeap}: the reference is the object's handle, so the heap
 * may move entries to compact its pages while the cache runs. The pages come from the
 * heap's default page source (a span heap of its own; an emptied page's memory is given
 * back to the OS at once), or are mapped one by one and unmapped when they empty.
 *
 * <p>Every access goes through {@link CompactingHeap#read} or {@link CompactingHeap#write},
 * which rerun the function if a compaction moved the entry meanwhile; the functions here
 * only copy bytes, so a rerun is harmless.
 */
public final class CompactingEntryStore implements EntryStore {

    private final CompactingHeap heap;
    private final String name;

    private CompactingEntryStore(CompactingHeap heap, String name) {
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
     * {@link CompactingHeap.Builder}: the heap's background thread reclaims freed entries
     * in rounds of an epoch change each (a handshake with all threads) when
     * {@code reclaimBatchBytes} are waiting, and moves at most {@code iota} bytes per round.
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
     *                          it empties) instead of the default page source
     */
    public static CompactingEntryStore create(int kappa, long iota, long reclaimBatchBytes, boolean mappedPages) {
        CompactingHeap.Builder b = CompactingHeap.builder().kappa(kappa).iota(iota)
                .reclaimBatchBytes(reclaimBatchBytes);
        CompactingHeap heap = (mappedPages ? b.mappedPages() : b).build();
        String name = (kappa == CompactingHeap.KAPPA_INFINITE ? "no compaction" : "compacting k=" + kappa)
                + (mappedPages ? ", mmap pages" : ", default pages");
        return new CompactingEntryStore(heap, name);
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
        // written once before it is published: no zeroing, no second pass
        return heap.allocate(EntryStore.entryBytes(key.length, value.byteSize()),
                entry -> EntryStore.writeEntry(entry, key, value));
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
        // every page the heap holds has been written, and an emptied page's memory is
        // released when the heap gives it back (munmap, or madvise for span-heap pages)
        return new Memory(s.committedBytes(), s.committedBytes(), s.movedBytes());
    }

    @Override
    public void close() {
        heap.close();
    }
}
