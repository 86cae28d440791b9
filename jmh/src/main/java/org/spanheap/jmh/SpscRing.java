package org.spanheap.jmh;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A bounded single-producer single-consumer ring of blocks (Lamport's queue with cached indices,
 * as JCTools' {@code SpscArrayQueue}), so that the producer-consumer benchmark measures the
 * allocators and not a lock.
 *
 * <p>Ordering: the producer writes the slot (plain) and then publishes {@code tail} with release;
 * the consumer reads {@code tail} with acquire before reading the slot, so it sees the element.
 * Symmetrically the consumer clears the slot (plain) and releases {@code head}; the producer
 * acquires {@code head} before reusing the slot. Each side caches the other's index and re-reads
 * it only when the cached value says full or empty. The two sides' fields sit on separate cache
 * lines (padding by inheritance, JCTools-style) so the ring itself does not false-share.
 */
final class SpscRing extends SpscRingConsumerFields {

    private final Object[] slots;
    private final int mask;

    SpscRing(int capacity) {
        if (Integer.bitCount(capacity) != 1) {
            throw new IllegalArgumentException("capacity must be a power of two: " + capacity);
        }
        slots = new Object[capacity];
        mask = capacity - 1;
    }

    /** Producer side: returns {@code false} if the ring is full. */
    boolean offer(Object e) {
    long t = tail; // plain: only the producer writes tail
        if (t - headCache >= slots.length) {
            headCache = (long) HEAD.getAcquire(this);
            if (t - headCache >= slots.length) {
                return false;
            }
        }
        slots[(int) t & mask] = e;
        TAIL.setRelease(this, t + 1);
        return true;
    }

    /** Consumer side: returns {@code null} if the ring is empty. */
    Object poll() {
    long h = head; // plain: only the consumer writes head
        if (h >= tailCache) {
            tailCache = (long) TAIL.getAcquire(this);
            if (h >= tailCache) {
                return null;
            }
        }
        int i = (int) h & mask;
        Object e = slots[i];
        slots[i] = null;
        HEAD.setRelease(this, h + 1);
        return e;
    }

    private static final VarHandle HEAD;
    private static final VarHandle TAIL;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            HEAD = l.findVarHandle(SpscRingConsumerFields.class, "head", long.class);
            TAIL = l.findVarHandle(SpscRingProducerFields.class, "tail", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}

// Padding by inheritance: the JVM lays out superclass fields first, so the producer's and the
// consumer's fields each get at least 64 bytes of padding on both sides.

abstract class SpscRingPad0 {
    long p00, p01, p02, p03, p04, p05, p06, p07;
}

abstract class SpscRingProducerFields extends SpscRingPad0 {
    long tail;
    long headCache;
}

abstract class SpscRingPad1 extends SpscRingProducerFields {
    long p10, p11, p12, p13, p14, p15, p16, p17;
}

abstract class SpscRingConsumerFields extends SpscRingPad1 {
    long head;
    long tailCache;
    long p20, p21, p22, p23, p24, p25, p26, p27;
}
