package org.spanheap.jmh;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.spanheap.HeapStats;
import org.spanheap.SpanHeap;

/**
 * spanheap as a {@link Peer}. Every use of the spanheap API by the benchmark suite is in this one
 * file (allocation, the heap's arenas, its statistics), so an API change is fixed here only.
 *
 * <p>One {@link SpanHeap} per trial, shared by all benchmark threads, as a service would share it.
 */
final class SpanHeapPeer implements Peer {

    private final SpanHeap heap;
    private final boolean zeroed;

    SpanHeapPeer(boolean zeroed) {
        this.heap = SpanHeap.create();
        this.zeroed = zeroed;
    }

    @Override
    public Object allocate(long size) {
        return zeroed ? heap.allocate(size) : heap.allocateUninitialized(size);
    }

    @Override
    public byte touch(Object block, byte value) {
        MemorySegment s = (MemorySegment) block;
        s.set(ValueLayout.JAVA_BYTE, 0, value);
        return s.get(ValueLayout.JAVA_BYTE, 0);
    }

    @Override
    public void free(Object block) {
        heap.free((MemorySegment) block);
    }

    @Override
    public MemorySegment segment(Object block) {
        return (MemorySegment) block;
    }

    @Override
    public void close() {
        heap.close();
    }

    /** A confined arena backed by this heap ({@code SpanHeap.newArena()}). */
    Arena newArena() {
        return heap.newArena();
    }

    /** Bytes the heap holds from the OS (its statistics' committed bytes). */
    long committedBytes() {
        return heap.stats().committedBytes();
    }

    /** The heap's statistics, for workloads that report more than committed bytes. */
    HeapStats stats() {
        return heap.stats();
    }
}
