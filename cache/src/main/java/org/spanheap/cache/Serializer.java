package org.spanheap.cache;

import java.lang.foreign.MemorySegment;

/**
 * Turns keys or values into bytes off the Java heap and back.
 *
 * <p>An {@link OffHeapCache} asks {@link #size} first, then lets {@link #write}
 * fill a segment of exactly that size. Keys are equal for the cache when their
 * written bytes are equal, so a key serializer must write equal keys alike.
 * Built-ins are in {@link Serializers}.
 *
 * @param <T> the type serialized
 */
public interface Serializer<T> {

    /**
     * {@return how many bytes {@link #write} writes for {@code value}}
     *
     * @param value a non-null value
     */
    long size(T value);

    /**
     * Writes {@code value} into {@code target}, whose size is {@code size(value)}.
     * {@code target} starts zeroed, as a new array does: bytes left unwritten read
     * back as zeros, never as bytes of another value. It may be called more than
     * once for one value (a write interrupted by compaction is redone), so it must
     * not consume {@code value}.
     *
     * @param value a non-null value
     * @param target the bytes to fill, exactly {@code size(value)} long
     */
    void write(T value, MemorySegment target);

    /**
     * Reads a value back from what {@link #write} wrote. {@code source} is
     * read-only, and valid only during the call: copy whatever the result keeps. It may be called
     * again if compaction moved the bytes while it ran.
     *
     * @param source the written bytes
     * @return the value
     */
    T read(MemorySegment source);
}
