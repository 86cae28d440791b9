package org.spanheap.cache;

/**
 * An {@link OffHeapCache}'s figures for JMX tools, registered with
 * {@link OffHeapCache.Builder#registerMXBean(String)} under
 * {@code org.spanheap:type=OffHeapCache,name=<name>} and unregistered by
 * {@link OffHeapCache#close()}. Each attribute is read from a fresh
 * {@link CacheStats} snapshot, except {@code ResidentBytes}, which asks the OS.
 * {@code CapacityBytes} can be written.
 */
public interface OffHeapCacheMXBean {
    /** {@return lookups that found a value} */
    long getHits();

    /** {@return lookups that found none} */
    long getMisses();

    /** {@return hits over lookups} */
    double getHitRatio();

    /** {@return values loaded by a loader} */
    long getLoads();

    /** {@return entries evicted to stay within the capacity} */
    long getEvictions();

    /** {@return entries removed because their time passed} */
    long getExpirations();

    /** {@return entries now held} */
    long getEntries();

    /** {@return bytes the entries are charged against the capacity} */
    long getChargedBytes();

    /** {@return the capacity in bytes} */
    long getCapacityBytes();

    /**
     * Changes the capacity: {@link OffHeapCache#setCapacity(long)}.
     *
     * @param bytes the new capacity, positive
     */
    void setCapacityBytes(long bytes);

    /** {@return bytes of the values stored off-heap} */
    long getLiveBytes();

    /** {@return off-heap memory the cache's heap holds} */
    long getCommittedBytes();

    /** {@return the part of the committed bytes in RAM now: {@link OffHeapCache#residentBytes()}, asked of the OS at every read} */
    long getResidentBytes();

    /** {@return bytes compaction has moved} */
    long getMovedBytes();
}
