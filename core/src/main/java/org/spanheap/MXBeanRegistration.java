package org.spanheap;

import java.lang.management.ManagementFactory;
import java.util.Hashtable;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import javax.management.InstanceAlreadyExistsException;
import javax.management.JMException;
import javax.management.ObjectName;

/**
 * A heap's MXBean on the platform MBean server: at most one per heap,
 * unregistered when the heap closes. Registering and closing hold this
 * object's lock, so a registration racing with close either fails or is
 * undone by it.
 */
final class MXBeanRegistration {

    /** The domain of every spanheap MXBean (the cache's too). */
    static final String DOMAIN = "org.spanheap";

    private ObjectName registered; // guarded by this
    private boolean closed;        // guarded by this

    /**
     * Registers {@code bean} as {@code org.spanheap:type=<type>,name="<name>"} and returns that name.
     *
     * @param open whether the heap is still open, checked under the lock
     * @throws IllegalArgumentException if the name is blank or taken
     * @throws IllegalStateException if the heap is closed or already has an MXBean
     */
    synchronized ObjectName register(String type, String name, Object bean, BooleanSupplier open) {
        Objects.requireNonNull(name, "name");
        if (name.isBlank()) {
            throw new IllegalArgumentException("an MXBean name must not be blank: \"" + name + "\"");
        }
        if (closed || !open.getAsBoolean()) {
            throw new IllegalStateException("heap is closed");
        }
        if (registered != null) {
            throw new IllegalStateException("this heap's MXBean is already registered as " + registered);
        }
        ObjectName on = objectName(type, name);
        try {
            ManagementFactory.getPlatformMBeanServer().registerMBean(bean, on);
        } catch (InstanceAlreadyExistsException e) {
            throw new IllegalArgumentException("an MXBean named \"" + name + "\" is already registered: " + on, e);
        } catch (JMException e) {
            throw new IllegalArgumentException("cannot register an MXBean named \"" + name + "\" as " + on + ": " + e, e);
        }
        registered = on;
        return on;
    }

    /** Unregisters the MXBean if there is one; later registrations fail. Idempotent. */
    synchronized void close() {
        closed = true;
        if (registered != null) {
            try {
                ManagementFactory.getPlatformMBeanServer().unregisterMBean(registered);
            } catch (JMException e) {
                // already gone: someone unregistered it by hand
            }
            registered = null;
        }
    }

    /** {@return {@code org.spanheap:type=<type>,name="<name>"}, the name quoted so that any string is valid} */
    static ObjectName objectName(String type, String name) {
        Hashtable<String, String> p = new Hashtable<>();
        p.put("type", type);
        p.put("name", ObjectName.quote(name));
        try {
            return new ObjectName(DOMAIN, p);
        } catch (JMException e) {
            throw new IllegalArgumentException("not a valid MXBean name: \"" + name + "\"", e); // not with a quoted value
        }
    }
}
