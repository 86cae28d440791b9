package org.spanheap.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * A confined {@link Arena} whose memory comes from a {@link HeapEngine}.
 *
 * <p>Segments are bound to an inner {@link Arena#ofConfined() confined arena}: access
 * after {@link #close()} throws, and closing costs no handshake (the inner arena is
 * confined). Close first closes the inner arena, so no segment can reach a block again,
 * then frees every block through the owner thread's cache (or in batches to the native
 * heap), so an arena per request recycles the same blocks without leaving Java.
 *
 * <p>The arena holds a reference on the native heap: if the heap is closed first, its
 * memory stays mapped until this arena closes, so this arena's segments stay valid and
 * never point at unmapped memory.
 */
public final class HeapArena implements Arena {
    private final HeapEngine heap;
    private final Arena inner;
    private final Thread owner;
    private long[] blocks = new long[16];
    private int count;
    private boolean closed;

    /**
     * Opens an arena confined to the calling thread; it holds a reference on
     * {@code heap}'s native memory until it is closed.
     *
     * @param heap the heap the arena's blocks come from
     */
    public HeapArena(HeapEngine heap) {
        heap.acquireRef();
        this.heap = heap;
        this.inner = Arena.ofConfined();
        this.owner = Thread.currentThread();
    }

    private void checkOwnerAndOpen() {
        if (Thread.currentThread() != owner) {
            throw new WrongThreadException("arena is confined to " + owner + "; called from "
                    + Thread.currentThread());
        }
        if (closed) {
            throw new IllegalStateException("arena is closed");
        }
    }

    /**
     * {@return a zeroed segment of {@code byteSize} bytes aligned to {@code byteAlignment},
     * bound to this arena's scope}
     */
    @Override
    public MemorySegment allocate(long byteSize, long byteAlignment) {
        checkOwnerAndOpen();
        long address = heap.allocateAddress(byteSize, byteAlignment);
        if (count == blocks.length) {
            try {
                blocks = Arrays.copyOf(blocks, count * 2);
            } catch (OutOfMemoryError e) {
                heap.freeAddress(address);
                throw e;
            }
        }
        blocks[count++] = address;
        MemorySegment segment = MemorySegment.ofAddress(address).reinterpret(byteSize, inner, null);
        Zeroing.zero(segment);
        return segment;
    }

    @Override
    public MemorySegment.Scope scope() {
        return inner.scope();
    }

    /**
     * Closes this arena: its segments become inaccessible and their blocks return to the heap.
     *
     * @throws IllegalStateException if the arena is already closed
     * @throws WrongThreadException if called from a thread other than the owner
     */
    @Override
    public void close() {
        checkOwnerAndOpen();
        closed = true;
        inner.close();                 // from here no segment of this arena reaches a block
        try {
            heap.freeArenaBlocks(blocks, count);
        } finally {
            count = 0;
            blocks = null;
            heap.releaseRef();
        }
    }

    @Override
    public String toString() {
        return "HeapArena[owner=" + owner.getName() + ", blocks=" + count + (closed ? ", closed]" : "]");
    }
}
