package org.spanheap.stress;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;

/**
 * The contents the stress programs write and check: a pattern derived from a unique id. The
 * first long is the id itself, so a mismatch can say whose contents were found (a mixed-up
 * handle or a copy to the wrong place shows as another live id); the rest is a hash of the
 * id and the position. Small objects carry it in every long; large ones at a stride and in
 * their last long, which keeps filling a 64 MiB object cheap.
 */
final class StressPattern {

    private StressPattern() {
    }

    static long word(long id, long i) {
        if (i == 0) {
            return id;
        }
        long x = id * 0x9E3779B97F4A7C15L + i * 0xC2B2AE3D27D4EB4FL;
        x ^= x >>> 31;
        return x * 0xBF58476D1CE4E5B9L;
    }

    /** Long indexes that carry the pattern: all of a small object, a stride of a big one. */
    private static long step(long words) {
        return words <= 512 ? 1 : 61;
    }

    static void fill(MemorySegment s, long id) {
        long words = s.byteSize() >>> 3;
        long step = step(words);
        for (long i = 0; i < words; i += step) {
            s.set(JAVA_LONG_UNALIGNED, i << 3, word(id, i));
        }
        if (words > 0) {
            s.set(JAVA_LONG_UNALIGNED, (words - 1) << 3, word(id, words - 1));
        }
        for (long j = words << 3; j < s.byteSize(); j++) {
            s.set(JAVA_BYTE, j, (byte) word(id, j));
        }
    }

    /** {@return the offset of the first byte that differs from {@code id}'s pattern, or -1} */
    static long mismatch(MemorySegment s, long id) {
        long words = s.byteSize() >>> 3;
        long step = step(words);
        for (long i = 0; i < words; i += step) {
            if (s.get(JAVA_LONG_UNALIGNED, i << 3) != word(id, i)) {
                return i << 3;
            }
        }
        if (words > 0 && s.get(JAVA_LONG_UNALIGNED, (words - 1) << 3) != word(id, words - 1)) {
            return (words - 1) << 3;
        }
        for (long j = words << 3; j < s.byteSize(); j++) {
            if (s.get(JAVA_BYTE, j) != (byte) word(id, j)) {
                return j;
            }
        }
        return -1;
    }

    /** {@return the id the object's first long names, for failure messages; -1 if it has none} */
    static long foundId(MemorySegment s) {
        return s.byteSize() >= 8 ? s.get(JAVA_LONG_UNALIGNED, 0) : -1;
    }

    /** {@return whether the pattern positions (and the tail) hold zeros} */
    static boolean zeroed(MemorySegment s) {
        long words = s.byteSize() >>> 3;
        long step = step(words);
        for (long i = 0; i < words; i += step) {
            if (s.get(JAVA_LONG_UNALIGNED, i << 3) != 0) {
                return false;
            }
        }
        for (long j = words << 3; j < s.byteSize(); j++) {
            if (s.get(JAVA_BYTE, j) != 0) {
                return false;
            }
        }
        return true;
    }
}
