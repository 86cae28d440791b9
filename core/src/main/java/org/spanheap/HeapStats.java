package org.spanheap;

import java.util.List;

/**
 * An immutable snapshot of a {@link SpanHeap}'s memory use, from {@link SpanHeap#stats()}.
 *
 * <p>Block counts and live bytes count whole blocks (the block size of the size class,
 * not the requested size). Blocks that sit free in the Java thread caches, and freed large
 * blocks the heap keeps to hand out again, are counted in {@link #cachedBytes()}, not in
 * {@link #liveBytes()}, {@link #largeBytes()} or {@link #largeCount()}. The figures are exact when no other
 * thread uses the heap, and a consistent-enough estimate while other threads run.
 *
 * <p>A heap of the {@linkplain Engine#MALLOC malloc engine} fills in only
 * {@code liveBytes} and {@code committedBytes} (both the bytes of live blocks, each size
 * rounded up to 16: malloc's own overhead is not visible), {@code largeBytes} and
 * {@code largeCount} (blocks over 128 KiB), {@code limitBytes} and {@code limitedBytes};
 * every other figure is 0 and {@code sizeClasses} is empty.
 *
 * @param reservedBytes  bytes of virtual memory reserved for the arena
 * @param committedBytes arena bytes made accessible minus those returned to the OS, plus
 *                       large-object mappings
 * @param residentBytes  estimate of the bytes backed by RAM
 * @param liveBytes      bytes in blocks handed out to callers, plus large objects
 * @param cachedBytes    bytes in free blocks held by Java thread caches or kept large blocks
 * @param largeBytes     bytes mapped for live large objects
 * @param largeCount     number of live large objects
 * @param limitBytes     the configured byte limit, 0 if none
 * @param limitedBytes   bytes counted against the byte limit (includes cached blocks)
 * @param spansCarved    virtual spans taken from the arena so far
 * @param spansHot       spans owned by a thread as its allocation span
 * @param spansFloating  spans neither hot nor reusable
 * @param spansReusable  spans below the reuse threshold, ready for reuse
 * @param spansFree      spans in the span pool
 * @param madviseCalls   calls that returned span memory to the OS
 * @param sizeClasses    one entry per size class, in class order
 */
public record HeapStats(long reservedBytes, long committedBytes, long residentBytes,
                        long liveBytes, long cachedBytes, long largeBytes, long largeCount,
                        long limitBytes, long limitedBytes, long spansCarved, long spansHot,
                        long spansFloating, long spansReusable, long spansFree, long madviseCalls,
                        List<SizeClass> sizeClasses) {

    /**
     * Creates a snapshot; {@code sizeClasses} is copied.
     */
    public HeapStats {
        sizeClasses = List.copyOf(sizeClasses);
    }

    /**
     * Use of one size class.
     *
     * @param index        the class index
     * @param blockSize    bytes per block
     * @param liveBlocks   blocks handed out to callers
     * @param cachedBlocks free blocks held by Java thread caches
     * @param spans        spans currently holding this class
     */
    public record SizeClass(int index, int blockSize, long liveBlocks, long cachedBlocks, long spans) {
    }
}
