package org.spanheap.jmh;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;

/**
 * The work of the false-sharing benchmarks (Hoard's cache-thrash and cache-scratch, LRMalloc's
 * false-sharing tests): write every byte of a small block {@value #REPETITIONS} times. The stores
 * are opaque, so the JIT keeps each one and they reach the cache; if the allocator has put blocks
 * of different threads on one cache line, every store makes that line bounce between cores and
 * the score rises sharply with threads.
 *
 * <p>The stores go to the block's address through one unbounded segment of the global scope, the
 * same code for every peer, as Hoard's benchmarks write through raw pointers. Writing through each
 * peer's own segment instead would add that segment's per-access checks (a scoped segment checks
 * its scope on each of the 1,600 stores) and measure access cost rather than block placement;
 * that cost is measured by the other benchmarks.
 */
final class FalseSharing {

    static final int REPETITIONS = 100;
    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();
    /** All of the address space, global scope: no scope check, bounds checks fold away. */
    private static final MemorySegment EVERYTHING = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    private FalseSharing() {
    }

    /**
     * Writes each byte of the first {@code size} bytes of {@code s} {@value #REPETITIONS} times,
     * at its address (the caller keeps the block allocated meanwhile).
     */
    static int writeRepeatedly(MemorySegment s, int size) {
        if (s.byteSize() < size) {
            throw new IllegalArgumentException("block of " + s.byteSize() + " bytes, expected " + size);
        }
        long address = s.address();
        for (int r = 0; r < REPETITIONS; r++) {
            for (int i = 0; i < size; i++) {
                BYTE.setOpaque(EVERYTHING, address + i, (byte) (r + i));
            }
        }
        return (byte) BYTE.getOpaque(EVERYTHING, address);
    }
}
