package org.spanheap.cache;

/**
 * When a cache's entries expire, as the index keeps it: after their write,
 * after their last access (either 0 when off), and whether each entry carries a
 * deadline of its own ({@link OffHeapCache#put(Object, Object, java.time.Duration)}).
 * Times are nanoseconds of the cache's {@link Ticker}.
 */
record Expiry(long afterWriteNanos, long afterAccessNanos, boolean deadlines) {

    /** Nothing expires. */
    static final Expiry NONE = new Expiry(0, 0, false);

    /**
     * The longest time to live a deadline stands for; a longer one, and an
     * entry stored without one, gets this (about 146 years): {@code now -
     * deadline} then stays a valid comparison of ticker readings.
     */
    static final long FOREVER_NANOS = Long.MAX_VALUE >>> 1;

    Expiry {
        if (afterWriteNanos < 0 || afterAccessNanos < 0) {
            throw new IllegalArgumentException("negative expiry: " + afterWriteNanos + ", " + afterAccessNanos);
        }
    }

    /** {@return whether anything can expire, so that the ticker must be read} */
    boolean any() {
        return afterWriteNanos > 0 || afterAccessNanos > 0 || deadlines;
    }

    /** {@return the deadline of an entry stored at {@code now} to live {@code ttlNanos} (clamped to {@link #FOREVER_NANOS})} */
    static long deadline(long now, long ttlNanos) {
        return now + Math.min(ttlNanos, FOREVER_NANOS);
    }
}
