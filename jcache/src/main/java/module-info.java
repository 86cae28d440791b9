/**
 * spanheap-jcache: a JCache (JSR-107) provider whose caches are
 * {@link org.spanheap.cache.OffHeapCache}s, found by
 * {@code javax.cache.Caching.getCachingProvider()} through the service loader.
 *
 * <p>Needs native access for the core module: {@code --enable-native-access=org.spanheap} on
 * the module path.
 */
module org.spanheap.jcache {
    requires transitive org.spanheap.cache;
    // The JSR-107 API jar has no module descriptor: its automatic module name comes from the
    // jar's file name (cache-api-1.1.1.jar).
    requires transitive cache.api;
    requires java.management;

    exports org.spanheap.jcache;

    provides javax.cache.spi.CachingProvider with org.spanheap.jcache.SpanheapCachingProvider;
}
