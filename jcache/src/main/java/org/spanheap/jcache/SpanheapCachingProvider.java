package org.spanheap.jcache;

import java.net.URI;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.WeakHashMap;
import javax.cache.CacheManager;
import javax.cache.configuration.OptionalFeature;
import javax.cache.spi.CachingProvider;

/**
 * spanheap's JCache provider: its caches are {@link org.spanheap.cache.OffHeapCache}s.
 * {@code Caching.getCachingProvider()} finds it through the service loader.
 *
 * <p>Cache managers are kept per class loader and URI; a closed one is replaced
 * by a new one on the next {@link #getCacheManager}. Store-by-reference is not
 * supported ({@link #isSupported} says so): keys and values are always stored as
 * their serialized bytes.
 */
public final class SpanheapCachingProvider implements CachingProvider {

    /** The URI of the default cache manager. */
    public static final URI DEFAULT_URI = URI.create("urn:spanheap:jcache");

    private final Map<ClassLoader, Map<URI, SpanheapCacheManager>> managers = new WeakHashMap<>();

    /** A provider; the service loader makes one through this constructor. */
    public SpanheapCachingProvider() {}

    @Override
    public synchronized CacheManager getCacheManager(URI uri, ClassLoader classLoader, Properties properties) {
        URI u = uri == null ? getDefaultURI() : uri;
        ClassLoader loader = classLoader == null ? getDefaultClassLoader() : classLoader;
        Properties props = properties == null ? getDefaultProperties() : properties;
        Map<URI, SpanheapCacheManager> byUri = managers.computeIfAbsent(loader, l -> new HashMap<>());
        SpanheapCacheManager manager = byUri.get(u);
        if (manager == null || manager.isClosed()) {
            manager = new SpanheapCacheManager(this, u, loader, props);
            byUri.put(u, manager);
        }
        return manager;
    }

    @Override
    public ClassLoader getDefaultClassLoader() {
        ClassLoader context = Thread.currentThread().getContextClassLoader();
        return context != null ? context : SpanheapCachingProvider.class.getClassLoader();
    }

    @Override
    public URI getDefaultURI() {
        return DEFAULT_URI;
    }

    @Override
    public Properties getDefaultProperties() {
        return new Properties();
    }

    @Override
    public CacheManager getCacheManager(URI uri, ClassLoader classLoader) {
        return getCacheManager(uri, classLoader, getDefaultProperties());
    }

    @Override
    public CacheManager getCacheManager() {
        return getCacheManager(getDefaultURI(), getDefaultClassLoader(), getDefaultProperties());
    }

    @Override
    public void close() {
        Map<ClassLoader, Map<URI, SpanheapCacheManager>> all;
        synchronized (this) {
            all = new HashMap<>(managers);
            managers.clear();
        }
        for (Map<URI, SpanheapCacheManager> byUri : all.values()) {
            byUri.values().forEach(SpanheapCacheManager::close);
        }
    }

    @Override
    public void close(ClassLoader classLoader) {
        Map<URI, SpanheapCacheManager> byUri;
        synchronized (this) {
            byUri = managers.remove(classLoader == null ? getDefaultClassLoader() : classLoader);
        }
        if (byUri != null) {
            byUri.values().forEach(SpanheapCacheManager::close);
        }
    }

    @Override
    public void close(URI uri, ClassLoader classLoader) {
        SpanheapCacheManager manager;
        synchronized (this) {
            Map<URI, SpanheapCacheManager> byUri =
                    managers.get(classLoader == null ? getDefaultClassLoader() : classLoader);
            manager = byUri == null ? null : byUri.remove(uri == null ? getDefaultURI() : uri);
        }
        if (manager != null) {
            manager.close();
        }
    }

    /** Forgets a manager that closed itself, so that the next request makes a new one. */
    synchronized void closed(SpanheapCacheManager manager) {
        Map<URI, SpanheapCacheManager> byUri = managers.get(manager.getClassLoader());
        if (byUri != null) {
            byUri.remove(manager.getURI(), manager);
        }
    }

    @Override
    public boolean isSupported(OptionalFeature feature) {
        return switch (feature) {
            case STORE_BY_REFERENCE -> false;
        };
    }
}
