package org.spanheap.jcache;

import java.lang.management.ManagementFactory;
import javax.cache.CacheException;
import javax.management.InstanceAlreadyExistsException;
import javax.management.InstanceNotFoundException;
import javax.management.MBeanServer;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import javax.management.StandardMBean;

/**
 * Registers a JCache cache's MXBeans with the platform MBean server, under the
 * names the specification gives them:
 * {@code javax.cache:type=CacheStatistics|CacheConfiguration,CacheManager=<uri>,Cache=<name>},
 * with {@code : = , \n} in the manager's URI and the cache's name replaced by dots.
 */
final class ManagementBeans {
    private ManagementBeans() {}

    static ObjectName name(String type, String managerUri, String cacheName) {
        try {
            return new ObjectName("javax.cache:type=" + type + ",CacheManager=" + safe(managerUri)
                    + ",Cache=" + safe(cacheName));
        } catch (MalformedObjectNameException e) {
            throw new CacheException("no MBean name for cache " + cacheName + ": " + e, e);
        }
    }

    private static String safe(String s) {
        return s == null ? "" : s.replaceAll(":|=|\n|,", ".");
    }

    /** Registers {@code bean} (an implementation of {@code type}) under {@code name}, if nothing is there yet. */
    static <T> void register(ObjectName name, T bean, Class<T> type) {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        try {
            if (!server.isRegistered(name)) {
                server.registerMBean(new StandardMBean(bean, type, true), name);
            }
        } catch (InstanceAlreadyExistsException raced) {
            // registered by a concurrent call for the same cache
        } catch (Exception e) {
            throw new CacheException("cannot register MBean " + name + ": " + e, e);
        }
    }

    static void unregister(ObjectName name) {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        try {
            server.unregisterMBean(name);
        } catch (InstanceNotFoundException gone) {
            // not registered: nothing to do
        } catch (Exception e) {
            throw new CacheException("cannot unregister MBean " + name + ": " + e, e);
        }
    }
}
