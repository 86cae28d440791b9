package org.spanheap.cache;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * Built-in {@link Serializer}s for {@code byte[]}, {@code String}, {@code Long}
 * and {@code MemorySegment}.
 */
public final class Serializers {
    private Serializers() {}

    private static final ValueLayout.OfLong BIG_ENDIAN_LONG =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    /**
     * {@return a copy of the segment's bytes} Not {@code MemorySegment.toArray}: on
     * JDK 25 it looks up a class name by reflection on every call, the hottest
     * frame of a cache hit.
     */
    static byte[] copyOut(MemorySegment source) {
        long n = source.byteSize();
        if (n > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("too large for an array: " + n + " bytes");
        }
        byte[] b = new byte[(int) n];
        MemorySegment.copy(source, ValueLayout.JAVA_BYTE, 0, b, 0, (int) n);
        return b;
    }

    /** {@return a serializer writing a {@code byte[]} as its bytes} The array is copied in and out. */
    public static Serializer<byte[]> bytes() {
        return ByteArrays.INSTANCE;
    }

    /** {@return a serializer writing a {@code String} as UTF-8} */
    public static Serializer<String> utf8() {
        return Utf8.INSTANCE;
    }

    /** {@return a serializer writing a {@code Long} as 8 big-endian bytes} */
    public static Serializer<Long> longs() {
        return Longs.INSTANCE;
    }

    /**
     * {@return a serializer for {@code MemorySegment}s} Writing copies the
     * segment's bytes straight in (any segment: heap, native, mapped); reading
     * copies them into a heap segment. To read without copying, use
     * {@link OffHeapCache#get(Object, java.util.function.Function)}.
     */
    public static Serializer<MemorySegment> segments() {
        return Segments.INSTANCE;
    }

    /**
     * {@return whether {@code serializer} is one of these built-ins, which write every byte of
     * the size they give} A cache need not zero the blocks they write.
     */
    static boolean writesEveryByte(Serializer<?> serializer) {
        return serializer instanceof ByteArrays || serializer instanceof Utf8 || serializer instanceof Longs
                || serializer instanceof Segments;
    }

    enum ByteArrays implements Serializer<byte[]> {
        INSTANCE;

        @Override
        public long size(byte[] value) {
            return value.length;
        }

        @Override
        public void write(byte[] value, MemorySegment target) {
            MemorySegment.copy(value, 0, target, ValueLayout.JAVA_BYTE, 0, value.length);
        }

        @Override
        public byte[] read(MemorySegment source) {
            return copyOut(source);
        }
    }

    enum Utf8 implements Serializer<String> {
        INSTANCE;

        @Override
        public long size(String value) {
            long n = value.length();
            for (int i = 0; i < value.length(); i++) {
                char c = value.charAt(i);
                if (c >= 0x80) {
                    return value.getBytes(StandardCharsets.UTF_8).length; // rare: let the JDK count
                }
            }
            return n;
        }

        @Override
        public void write(String value, MemorySegment target) {
            for (int i = 0; i < value.length(); i++) {
                char c = value.charAt(i);
                if (c >= 0x80) { // not ASCII: let the JDK encode it, as size() counted it
                    byte[] b = value.getBytes(StandardCharsets.UTF_8);
                    MemorySegment.copy(b, 0, target, ValueLayout.JAVA_BYTE, 0, b.length);
                    return;
                }
                target.set(ValueLayout.JAVA_BYTE, i, (byte) c);
            }
        }

        @Override
        public String read(MemorySegment source) {
            return new String(copyOut(source), StandardCharsets.UTF_8);
        }
    }

    enum Longs implements Serializer<Long> {
        INSTANCE;

        @Override
        public long size(Long value) {
            return Long.BYTES;
        }

        @Override
        public void write(Long value, MemorySegment target) {
            target.set(BIG_ENDIAN_LONG, 0, value);
        }

        @Override
        public Long read(MemorySegment source) {
            if (source.byteSize() != Long.BYTES) {
                throw new IllegalArgumentException("a long takes 8 bytes, not " + source.byteSize());
            }
            return source.get(BIG_ENDIAN_LONG, 0);
        }
    }

    enum Segments implements Serializer<MemorySegment> {
        INSTANCE;

        @Override
        public long size(MemorySegment value) {
            return value.byteSize();
        }

        @Override
        public void write(MemorySegment value, MemorySegment target) {
            MemorySegment.copy(value, 0, target, 0, value.byteSize());
        }

        @Override
        public MemorySegment read(MemorySegment source) {
            return MemorySegment.ofArray(copyOut(source));
        }
    }
}
