package org.spanheap.stress;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;

/**
 * The values {@link CacheStress} stores: each encodes its key and its length, so any hit can
 * be checked on its own, whichever put of that key it came from. Layout: the key, the length,
 * then {@link StressPattern} of an id mixed from both (at least 16 bytes in all).
 */
final class CacheValue {

    static final int MIN_LENGTH = 16;

    private CacheValue() {
    }

    static byte[] of(long key, int length) {
        if (length < MIN_LENGTH) {
            throw new IllegalArgumentException("a value needs " + MIN_LENGTH + " bytes: " + length);
        }
        byte[] b = new byte[length];
        MemorySegment s = MemorySegment.ofArray(b);
        s.set(JAVA_LONG_UNALIGNED, 0, key);
        s.set(JAVA_LONG_UNALIGNED, 8, length);
        StressPattern.fill(s.asSlice(16), id(key, length));
        return b;
    }

    /** {@return null if {@code s} is a whole value of {@code key}, else what is wrong} */
    static String check(MemorySegment s, long key) {
        long length = s.byteSize();
        if (length < MIN_LENGTH) {
            return "value of key " + key + " has " + length + " bytes";
        }
        long foundKey = s.get(JAVA_LONG_UNALIGNED, 0);
        long foundLength = s.get(JAVA_LONG_UNALIGNED, 8);
        if (foundKey != key || foundLength != length) {
            return "value of key " + key + " (" + length + " B) holds key " + foundKey + ", length " + foundLength;
        }
        long offset = StressPattern.mismatch(s.asSlice(16), id(key, length));
        if (offset >= 0) {
            return "value of key " + key + " (" + length + " B) corrupted at offset " + (16 + offset);
        }
        return null;
    }

    private static long id(long key, long length) {
        return key * 0x100000001B3L ^ length;
    }
}
