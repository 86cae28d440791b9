package org.spanheap.jcache;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.NotSerializableException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.ObjectStreamClass;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import javax.cache.CacheException;
import org.spanheap.cache.Serializer;

/**
 * The default {@link Serializer} of a JCache cache: Java serialization, for
 * keys and values of any {@link java.io.Serializable} type.
 *
 * <p>{@link #size} serializes the object into a byte array and keeps it for the
 * {@link #write} that follows on the same thread, so that each store serializes
 * once. Classes are resolved through the cache's class loader when reading.
 *
 * @implNote A store costs one serialization into an array and one copy into the
 * cache's heap; a read, one copy out and one deserialization. For hot types an
 * explicit serializer ({@link OffHeapConfiguration#setSerializers}) is faster.
 *
 * @param <T> the type serialized
 */
final class JavaSerializer<T> implements Serializer<T> {

    private final ClassLoader classLoader;
    /** The last object {@link #size} serialized on this thread, and its bytes. */
    private final ThreadLocal<Object[]> last = ThreadLocal.withInitial(() -> new Object[2]);

    JavaSerializer(ClassLoader classLoader) {
        this.classLoader = classLoader;
    }

    @Override
    public long size(T value) {
        byte[] bytes = serialize(value);
        Object[] slot = last.get();
        slot[0] = value;
        slot[1] = bytes;
        return bytes.length;
    }

    @Override
    public void write(T value, MemorySegment target) {
        Object[] slot = last.get();
        byte[] bytes = slot[0] == value ? (byte[]) slot[1] : serialize(value);
        slot[0] = null; // keep no reference to a stored value
        slot[1] = null;
        MemorySegment.copy(bytes, 0, target, ValueLayout.JAVA_BYTE, 0, bytes.length);
    }

    @Override
    @SuppressWarnings("unchecked")
    public T read(MemorySegment source) {
        byte[] bytes = source.toArray(ValueLayout.JAVA_BYTE);
        try (ObjectInputStream in = new LoaderObjectInputStream(new ByteArrayInputStream(bytes), classLoader)) {
            return (T) in.readObject();
        } catch (IOException | ClassNotFoundException e) {
            throw new CacheException("cannot deserialize a stored object: " + e, e);
        }
    }

    /** {@return {@code value} as Java serialization writes it} */
    byte[] serialize(Object value) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64);
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(value);
        } catch (NotSerializableException e) {
            throw new CacheException("not serializable, and no serializer configured for it: "
                    + value.getClass().getName(), e);
        } catch (IOException e) {
            throw new CacheException("cannot serialize a " + value.getClass().getName() + ": " + e, e);
        }
        return bytes.toByteArray();
    }

    /** Resolves classes through a given loader (the cache's), falling back to the default resolution. */
    private static final class LoaderObjectInputStream extends ObjectInputStream {
        private final ClassLoader loader;

        LoaderObjectInputStream(InputStream in, ClassLoader loader) throws IOException {
            super(in);
            this.loader = loader;
        }

        @Override
        protected Class<?> resolveClass(ObjectStreamClass desc) throws IOException, ClassNotFoundException {
            try {
                return Class.forName(desc.getName(), false, loader);
            } catch (ClassNotFoundException e) {
                return super.resolveClass(desc);
            }
        }
    }
}
