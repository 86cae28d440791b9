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
 */
final class FalseSharing {

    static final int REPETITIONS = 100;
    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();

    private FalseSharing() {
    }

    /** Writes each byte of the first {@code size} bytes {@value #REPETITIONS} times. */
    static int writeRepeatedly(MemorySegment s, int size) {
        for (int r = 0; r < REPETITIONS; r++) {
            for (int i = 0; i < size; i++) {
                BYTE.setOpaque(s, (long) i, (byte) (r + i));
            }
        }
        return (byte) BYTE.getOpaque(s, 0L);
    }
}
