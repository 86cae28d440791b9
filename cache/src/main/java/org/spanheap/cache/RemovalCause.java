package org.spanheap.cache;

/** Why an entry left an {@link OffHeapCache}. */
public enum RemovalCause {
    /** Removed by {@code remove} or {@code clear}. */
    EXPLICIT,
    /** Its value was replaced by {@code put}. */
    REPLACED,
    /** Evicted to keep the cache within its capacity. */
    SIZE,
    /** Its expire-after-write or expire-after-access time passed. */
    EXPIRED
}
