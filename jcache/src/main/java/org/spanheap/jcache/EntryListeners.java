package org.spanheap.jcache;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import javax.cache.configuration.CacheEntryListenerConfiguration;
import javax.cache.configuration.Factory;
import javax.cache.event.CacheEntryCreatedListener;
import javax.cache.event.CacheEntryEvent;
import javax.cache.event.CacheEntryEventFilter;
import javax.cache.event.CacheEntryExpiredListener;
import javax.cache.event.CacheEntryListener;
import javax.cache.event.CacheEntryListenerException;
import javax.cache.event.CacheEntryRemovedListener;
import javax.cache.event.CacheEntryUpdatedListener;
import javax.cache.event.EventType;

/**
 * The entry listeners registered with one cache, and their dispatch.
 *
 * <p>An operation collects its events while it holds its key's lock and hands
 * them here after releasing it, in the order they happened. A synchronous
 * listener is called on the operation's thread before the operation returns;
 * what it throws reaches the caller as a {@link CacheEntryListenerException}.
 * Asynchronous listeners are called on one thread per cache, in the order the
 * events were dispatched (so a key's events arrive in order); what they throw
 * is dropped. A filter is asked about each event before its listener sees it.
 *
 * @param <K> the key type
 * @param <V> the value type
 */
final class EntryListeners<K, V> {

    /** A listener as registered: its configuration, the listener and filter it made. */
    record Registration<K, V>(CacheEntryListenerConfiguration<K, V> configuration,
            CacheEntryListener<? super K, ? super V> listener, CacheEntryEventFilter<? super K, ? super V> filter) {

        static <K, V> Registration<K, V> of(CacheEntryListenerConfiguration<K, V> configuration) {
            Factory<CacheEntryListener<? super K, ? super V>> listenerFactory =
                    Objects.requireNonNull(configuration.getCacheEntryListenerFactory(), "the listener factory");
            Factory<CacheEntryEventFilter<? super K, ? super V>> filterFactory =
                    configuration.getCacheEntryEventFilterFactory();
            return new Registration<>(configuration, Objects.requireNonNull(listenerFactory.create(), "the listener"),
                    filterFactory == null ? null : filterFactory.create());
        }

        boolean listensTo(EventType type) {
            return switch (type) {
                case CREATED -> listener instanceof CacheEntryCreatedListener;
                case UPDATED -> listener instanceof CacheEntryUpdatedListener;
                case REMOVED -> listener instanceof CacheEntryRemovedListener;
                case EXPIRED -> listener instanceof CacheEntryExpiredListener;
            };
        }
    }

    private final CopyOnWriteArrayList<Registration<K, V>> registrations = new CopyOnWriteArrayList<>();
    /** Runs the asynchronous listeners; made on the first asynchronous registration. */
    private volatile ExecutorService async;

    /** {@return whether any listener is registered} An operation collects events only then. */
    boolean any() {
        return !registrations.isEmpty();
    }

    List<CacheEntryListenerConfiguration<K, V>> configurations() {
        List<CacheEntryListenerConfiguration<K, V>> out = new ArrayList<>();
        for (Registration<K, V> r : registrations) {
            out.add(r.configuration());
        }
        return out;
    }

    /**
     * Registers a listener.
     *
     * @throws IllegalArgumentException if the same configuration is registered already
     */
    synchronized void register(CacheEntryListenerConfiguration<K, V> configuration) {
        for (Registration<K, V> r : registrations) {
            if (r.configuration().equals(configuration)) {
                throw new IllegalArgumentException("this listener configuration is registered already: " + configuration);
            }
        }
        Registration<K, V> r = Registration.of(configuration);
        if (!configuration.isSynchronous() && async == null) {
            async = Executors.newSingleThreadExecutor(task -> {
                Thread t = new Thread(task, "spanheap-jcache-listeners");
                t.setDaemon(true);
                return t;
            });
        }
        registrations.add(r);
    }

    /** Removes a registration, if there is one for {@code configuration}. */
    synchronized void deregister(CacheEntryListenerConfiguration<K, V> configuration) {
        registrations.removeIf(r -> r.configuration().equals(configuration));
    }

    /**
     * Tells the listeners of {@code events}, in order.
     *
     * @throws CacheEntryListenerException if a synchronous listener or filter threw
     */
    void dispatch(List<EntryEvent<K, V>> events) {
        if (events == null || events.isEmpty()) {
            return;
        }
        CacheEntryListenerException failure = null;
        for (Registration<K, V> r : registrations) {
            if (r.configuration().isSynchronous()) {
                try {
                    deliver(r, events);
                } catch (RuntimeException e) {
                    if (failure == null) {
                        failure = e instanceof CacheEntryListenerException l ? l
                                : new CacheEntryListenerException("an entry listener threw: " + e, e);
                    }
                }
            } else {
                ExecutorService executor = async;
                executor.execute(() -> {
                    try {
                        deliver(r, events);
                    } catch (RuntimeException ignored) {
                        // an asynchronous listener's failure has no caller to reach
                    }
                });
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    /** Calls {@code r}'s listener on the runs of events of one type it listens to and its filter lets through. */
    @SuppressWarnings("unchecked")
    private static <K, V> void deliver(Registration<K, V> r, List<EntryEvent<K, V>> events) {
        boolean old = r.configuration().isOldValueRequired();
        int i = 0;
        while (i < events.size()) {
            EventType type = events.get(i).getEventType();
            List<CacheEntryEvent<? extends K, ? extends V>> run = new ArrayList<>();
            for (; i < events.size() && events.get(i).getEventType() == type; i++) {
                EntryEvent<K, V> e = events.get(i).forListener(old);
                if (r.listensTo(type) && (r.filter() == null || r.filter().evaluate(e))) {
                    run.add(e);
                }
            }
            if (run.isEmpty()) {
                continue;
            }
            switch (type) {
                case CREATED -> ((CacheEntryCreatedListener<K, V>) r.listener()).onCreated(run);
                case UPDATED -> ((CacheEntryUpdatedListener<K, V>) r.listener()).onUpdated(run);
                case REMOVED -> ((CacheEntryRemovedListener<K, V>) r.listener()).onRemoved(run);
                case EXPIRED -> ((CacheEntryExpiredListener<K, V>) r.listener()).onExpired(run);
            }
        }
    }

    /** Lets the asynchronous listeners finish what was dispatched (up to a second), then stops their thread. */
    void close() {
        ExecutorService executor = async;
        if (executor != null) {
            executor.shutdown();
            try {
                executor.awaitTermination(1, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        for (Registration<K, V> r : registrations) {
            closeQuietly(r.listener());
            closeQuietly(r.filter());
        }
        registrations.clear();
    }

    static void closeQuietly(Object o) {
        if (o instanceof AutoCloseable c) {
            try {
                c.close();
            } catch (Exception ignored) {
                // closing a user's listener, loader or writer must not keep the cache open
            }
        }
    }
}
