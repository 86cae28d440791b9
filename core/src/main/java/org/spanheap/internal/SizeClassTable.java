package org.spanheap.internal;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_INT;

/**
 * The native core's size classes ({@code sh_class_get}), read once, with what the Java
 * fast path precomputes from them: a size-to-class table in 16-byte steps and, per class,
 * the constants that check "is this offset a block start?" without a 64-bit division.
 *
 * <p>Block-boundary check (Lemire, Kaser, Kurz: "Faster remainder by direct computation",
 * 2019): for a divisor {@code d < 2^32} let {@code M = ceil(2^64 / d)}; then for every
 * {@code n < 2^32}, {@code n % d == 0} exactly when {@code n * M mod 2^64 <= M - 1}
 * (unsigned). One multiply and one compare instead of a ~25-cycle {@code div}.
 */
public final class SizeClassTable {
    /** Number of size classes. */
    public final int count;
    /** Per class: bytes per block. */
    public final int[] blockSize;
    /** Per class: offset of block 0 from the span start. */
    public final long[] payloadOffset;
    /** Per class: {@code block_count * block_size}, bytes of blocks after {@link #payloadOffset}. */
    public final long[] payloadBytes;
    /** Per class: {@code ceil(2^64 / block_size)}, for the divisibility check. */
    public final long[] divisor;
    /** Per class: the alignment every block of the class has (span starts are span-aligned). */
    public final long[] blockAlignment;
    /** Largest block size; larger requests are large objects. */
    public final int maxSmallSize;
    /** {@code classOf[(size + 15) >>> 4]} is the class for {@code size <= maxSmallSize}. */
    private final byte[] classOf;

    private SizeClassTable() {
        int n = NativeHeap.classCount();
        if (n <= 0 || n > SpanLayout.MAX_CLASSES) {
            throw new IllegalStateException("sh_class_count() returned " + n);
        }
        count = n;
        blockSize = new int[n];
        payloadOffset = new long[n];
        payloadBytes = new long[n];
        divisor = new long[n];
        blockAlignment = new long[n];
        long[] info = new long[2]; // one sh_class_info (16 B) in a heap array
        MemorySegment out = MemorySegment.ofArray(info);
        int max = 0;
        for (int c = 0; c < n; c++) {
            int rc = NativeHeap.classGet(c, out);
            if (rc != SpanLayout.SH_OK) {
                throw new IllegalStateException("sh_class_get(" + c + ") returned " + rc
                        + " (" + NativeHeap.errorName(rc) + ")");
            }
            int size = out.get(JAVA_INT, SpanLayout.CLASS_BLOCK_SIZE);
            int payload = out.get(JAVA_INT, SpanLayout.CLASS_PAYLOAD_OFFSET);
            long blocks = Integer.toUnsignedLong(out.get(JAVA_INT, SpanLayout.CLASS_BLOCK_COUNT));
            if (size <= 0 || (size & 15) != 0 || payload < 0) {
                throw new IllegalStateException("size class " + c + ": block_size " + size
                        + ", payload_offset " + payload + " break the 16-byte alignment contract");
            }
            blockSize[c] = size;
            payloadOffset[c] = payload;
            payloadBytes[c] = blocks * size;
            divisor[c] = Long.divideUnsigned(-1L, size) + 1;
            blockAlignment[c] = Long.lowestOneBit(size | (payload == 0 ? (1L << 62) : payload));
            max = Math.max(max, size);
        }
        maxSmallSize = max;
        classOf = new byte[(max >>> 4) + 1];
        for (int i = 0; i < classOf.length; i++) {
            int c = NativeHeap.classOf((long) i << 4);
            if (c < 0 || c >= n || blockSize[c] < (i << 4)) {
                throw new IllegalStateException("sh_class_of(" + (i << 4) + ") returned " + c);
            }
            classOf[i] = (byte) c;
        }
    }

    private static final class Holder {
        static final SizeClassTable TABLE = new SizeClassTable();
    }

    /** {@return the table, read from the native library on first use} */
    public static SizeClassTable get() {
        return Holder.TABLE;
    }

    /** {@return the shared size-to-class table: {@code table[(size + 15) >>> 4]}; do not modify} */
    byte[] classOfTable() {
        return classOf;
    }

    /**
     * {@return the class that holds {@code size} bytes}
     *
     * @param size the size in bytes; requires {@code 0 <= size <= maxSmallSize}
     */
    public int classOf(long size) {
        return classOf[(int) ((size + 15) >>> 4)];
    }
}
