package org.spanheap.jmh;

import java.lang.foreign.MemorySegment;

/**
 * One allocator under test, seen through the smallest interface every workload needs.
 *
 * <p>A block is whatever the allocator hands out ({@code MemorySegment}, Netty {@code ByteBuf},
 * {@code ByteBuffer}, or a small holder for an arena); workloads keep it as an {@code Object} and
 * pass it back. Each JMH fork runs one {@link Allocator}, so every call site here sees exactly one
 * implementation class and the JIT inlines it: the interface costs nothing in the figures.
 *
 * <p>An instance is shared by all benchmark threads of a fork and is thread-safe, except that a
 * block of a peer whose {@link #freesFromAnyThread()} is {@code false} must be freed by the thread
 * that allocated it.
 */
public interface Peer extends AutoCloseable {

    /**
     * Returns a new block of at least {@code size} bytes, contents as the allocator leaves them
     * (see {@link Allocator} for which peers zero).
     */
    Object allocate(long size);

    /**
     * Writes {@code value} into the block's first byte through the peer's ordinary API (what a
     * user would write), and returns the byte then read back; the workloads hand the result to a
     * blackhole so that neither the allocation nor the write can be optimised away.
     */
    byte touch(Object block, byte value);

    /** Frees a block from {@link #allocate}; for {@code ByteBuffer.allocateDirect} a no-op (GC). */
    void free(Object block);

    /**
     * Returns a native segment over the block's bytes, for workloads that write through
     * {@code VarHandle}s (false sharing). May allocate a small view object.
     */
    MemorySegment segment(Object block);

    /** Whether a block may be freed by a thread other than the one that allocated it. */
    default boolean freesFromAnyThread() {
        return true;
    }

    /** Releases the allocator (heap, pool) after the workload freed its blocks. */
    @Override
    default void close() {
    }
}
