package org.spanheap.cache;

import java.lang.management.ManagementFactory;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;

/** Serves {@link OffHeapCacheMXBean} from a cache's stats, and registers it on the platform MBean server. */
final class CacheMXBeanAdapter implements OffHeapCacheMXBean {
    private final OffHeapCache<?, ?> cache;
    private final ObjectName name;

    private CacheMXBeanAdapter(OffHeapCache<?, ?> cache, ObjectName name) {
        this.cache = cache;
        this.name = name;
    }

    /** Registers an MXBean for {@code cache} under {@code name}; throws if the name is taken or malformed. */
    static CacheMXBeanAdapter register(OffHeapCache<?, ?> cache, String name) {
        try {
            ObjectName on = new ObjectName("org.spanheap", props(name));
            CacheMXBeanAdapter bean = new CacheMXBeanAdapter(cache, on);
            ManagementFactory.getPlatformMBeanServer().registerMBean(bean, on);
            return bean;
        } catch (JMException e) {
            throw new IllegalArgumentException("cannot register the cache's MXBean as " + name + ": " + e, e);
        }
    }

    private static java.util.Hashtable<String, String> props(String name) {
        java.util.Hashtable<String, String> p = new java.util.Hashtable<>();
        p.put("type", "OffHeapCache");
        p.put("name", ObjectName.quote(name));
        return p;
    }

    void unregister() {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        try {
            server.unregisterMBean(name);
        } catch (JMException e) {
            // already gone: someone unregistered it by hand
        }
    }

    @Override
    public long getHits() {
        return cache.stats().hits();
    }

    @Override
    public long getMisses() {
        return cache.stats().misses();
    }

    @Override
    public double getHitRatio() {
        return cache.stats().hitRatio();
    }

    @Override
    public long getLoads() {
        return cache.stats().loads();
    }

    @Override
    public long getEvictions() {
        return cache.stats().evictions();
    }

    @Override
    public long getExpirations() {
        return cache.stats().expirations();
    }

    @Override
    public long getEntries() {
        return cache.stats().entries();
    }

    @Override
    public long getChargedBytes() {
        return cache.stats().weightedBytes();
    }

    @Override
    public long getCapacityBytes() {
        return cache.capacity();
    }

    @Override
    public void setCapacityBytes(long bytes) {
        cache.setCapacity(bytes);
    }

    @Override
    public long getLiveBytes() {
        return cache.stats().liveBytes();
    }

    @Override
    public long getCommittedBytes() {
        return cache.stats().committedBytes();
    }

    @Override
    public long getResidentBytes() {
        return cache.residentBytes();
    }

    @Override
    public long getMovedBytes() {
        return cache.stats().movedBytes();
    }
}
