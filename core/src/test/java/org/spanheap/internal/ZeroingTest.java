package org.spanheap.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.spanheap.SpanHeap;

class ZeroingTest {

    /** Clears exactly the segment at sizes around each threshold (fill, the store loop, memset, critical). */
    @Test
    void zeroesExactlyTheSegment() {
        long[] sizes = {0, 1, 255, 511, 512, 513, 4099, 65536, (512 << 10) - 1, 512 << 10, (512 << 10) + 1,
            (1 << 20) + 3};
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment all = arena.allocate((1 << 20) + 4096, 64);
            for (long n : sizes) {
                for (long off : new long[] {0, 8, 13}) {
                    all.fill((byte) 0x5a);
                    Zeroing.zero(all.asSlice(64 + off, n));
                    long bad = 0;
                    for (long i = 0; i < all.byteSize(); i++) {
                        boolean inside = i >= 64 + off && i < 64 + off + n;
                        if (all.get(ValueLayout.JAVA_BYTE, i) != (inside ? 0 : 0x5a)) {
                            bad++;
                        }
                    }
                    assertEquals(0, bad, "size " + n + " at offset " + off);
                }
            }
        }
    }

    @Test
    void aClosedSegmentThrowsAndIsNotTouched() {
        Arena arena = Arena.ofConfined();
        MemorySegment s = arena.allocate(4096);
        arena.close();
        assertThrows(IllegalStateException.class, () -> Zeroing.zero(s));
    }

    /** With the native engine, the library is loaded before zeroing is set up, so zeroing uses it. */
    @Test
    @Tag("native-engine")
    void theNativeEngineZeroesWithTheLibrary() {
        try (SpanHeap heap = SpanHeap.create()) {
            MemorySegment s = heap.allocate(100_000);
            assertTrue(Zeroing.usesSpanheapZero());
            heap.free(s);
        }
    }
}
