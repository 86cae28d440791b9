/**
 * spanheap-cache: {@link org.spanheap.cache.OffHeapCache}, a bounded cache whose values live in
 * a {@link org.spanheap.CompactingHeap}, with a W-TinyLFU index of its own.
 *
 * <p>Needs native access for the core module: {@code --enable-native-access=org.spanheap} on
 * the module path.
 */
// micrometer.core is an automatic module (micrometer-core ships no module-info), read only by the binders.
@SuppressWarnings("requires-automatic")
module org.spanheap.cache {
    // The API names the core's CompactingHeap.Builder (OffHeapCache.Builder.heap).
    requires transitive org.spanheap;
    // OffHeapCacheMXBean and the CacheStatistics JFR event.
    requires java.management;
    requires jdk.jfr;
    // Only for org.spanheap.cache.micrometer: an optional dependency.
    requires static micrometer.core;

    exports org.spanheap.cache;
    exports org.spanheap.cache.micrometer;
}
