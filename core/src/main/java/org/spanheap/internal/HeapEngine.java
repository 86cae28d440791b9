package org.spanheap.internal;

import org.spanheap.Engine;
import org.spanheap.HeapStats;

import java.lang.foreign.MemorySegment;

/**
 * What {@link org.spanheap.SpanHeap}, its arenas ({@link HeapArena}) and a compacting
 * heap's page source need from the memory underneath: blocks by address, segments over
 * them, the checked free, stats, trim, and a lifetime with references.
 *
 * <p>Two engines implement it: {@link SpanHeapImpl} over the native span allocator (thread
 * caches, span pool; Linux on x86-64 or aarch64 with the native library), and {@link MallocEngine} over
 * the C runtime's {@code malloc} through FFM, which runs wherever the JDK's linker does.
 * {@link EngineChoice} picks one per heap. Both give the same exceptions, with the same
 * messages, for the same misuse (docs/misuse.md).
 *
 * <p>Contract shared by both:
 * <ul>
 * <li>Segments from {@link #segment} carry {@link #scope()}, the heap's lifetime scope,
 *     except blocks that may be mapped for themselves (and so unmapped by their free), which
 *     get a scope of their own that their free closes ({@link OwnScopes}). After
 *     {@link #close()} every access through them throws.</li>
 * <li>{@link #acquireRef()} / {@link #releaseRef()}: the heap holds one reference, every
 *     open arena and page source one; the memory goes when the last one is released.</li>
 * <li>Every method but {@code isOpen}, {@code close}, {@code releaseRef} and the names
 *     throws {@link IllegalStateException} once the heap is closed.</li>
 * </ul>
 */
public sealed interface HeapEngine permits SpanHeapImpl, MallocEngine {

    /**
     * How long {@code close()} waits for native calls that hold the heap before it throws
     * {@link IllegalStateException} (see {@link SharedArenas#closeWithin}): far longer than
     * any call takes, short enough that a heap that can never close does not hang its caller.
     */
    long CLOSE_PATIENCE_NANOS = 10_000_000_000L;

    /** {@return which engine this is} */
    org.spanheap.Engine kind();

    /**
     * {@return the address of a new block of at least {@code size} bytes aligned to
     * {@code alignment}} Contents are unspecified.
     *
     * @throws IllegalArgumentException if {@code size < 0} or {@code alignment} is not a power of two
     * @throws org.spanheap.SpanHeapOutOfMemoryError if the byte limit or the OS refuses
     */
    long allocateAddress(long size, long alignment);

    /** {@return a segment of {@code size} bytes over the block at {@code address}, see the class comment for its scope} */
    MemorySegment segment(long address, long size);

    /**
     * Frees a segment from {@link #segment}; checks it starts a live block of this heap.
     *
     * @throws IllegalArgumentException if it does not (foreign, interior, heap segment)
     * @throws IllegalStateException if the block is already free, or the heap is closed
     */
    void free(MemorySegment segment);

    /** Frees the block at {@code address}, which a caller in this package or a page source allocated. */
    void freeAddress(long address);

    /** Frees the blocks of a closing arena (the first {@code n} of {@code blocks}); nothing if the heap is closing. */
    void freeArenaBlocks(long[] blocks, int n);

    /** {@return a snapshot of the heap's memory use} */
    HeapStats stats();

    /** {@return the usable bytes of the live block that {@code segment} starts} */
    long usableSize(MemorySegment segment);

    /** Returns cached free blocks to the heap, where the engine caches any. */
    void flushThreadCache();

    /** Gives memory the heap holds but does not use back to the OS; {@return the bytes released, as far as known}. */
    long trim();

    /** {@return whether the heap is open} */
    boolean isOpen();

    /** {@return whether this is the global heap, which cannot be closed} */
    boolean isGlobal();

    /** {@return the heap's name in JFR events} */
    String name();

    /** Names the heap in later JFR events (its MXBean's name). */
    void name(String name);

    /** {@return the heap's lifetime scope: the scope of the segments from {@link #segment}, large blocks excepted} */
    MemorySegment.Scope scope();

    /** Takes a reference for an arena or a page source; throws if the heap is closed. */
    void acquireRef();

    /** Drops a reference; the last one releases the heap's memory. */
    void releaseRef();

    /**
     * Closes the heap: no allocation, free or access through its segments succeeds afterwards.
     * Idempotent.
     *
     * @throws UnsupportedOperationException if this is the global heap
     */
    void close();
}
