package org.spanheap.micrometer;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.Objects;
import jdk.jfr.consumer.RecordingStream;

/**
 * Counters of the thread caches of terminated threads that one {@link org.spanheap.SpanHeap}
 * drained back into the heap. The heap drains such a cache lazily (when another thread
 * creates its cache, on {@code stats()}, {@code flushThreadCache()}, {@code trim()}, or when an
 * allocation meets the byte limit) and commits a JFR event {@code
 * org.spanheap.DeadThreadCacheDrain} for each cache that held blocks; {@code HeapStats} does
 * not count them. This binder reads those events from a {@link RecordingStream} of its own.
 *
 * <p>Meters, tagged {@code heap=<name>} and with the tags given:
 * {@code spanheap.thread.caches.drained} (caches drained) and
 * {@code spanheap.thread.caches.drained.memory} (bytes of the free blocks they held). The heap
 * is found by its name in the events: the name it was registered with
 * ({@link org.spanheap.SpanHeap#registerMXBean(String)}). A drain shows in the counters when
 * the stream delivers its event, about a second after it.
 *
 * {@snippet :
 * heap.registerMXBean("buffers");
 * ThreadCacheDrainMetrics drains = new ThreadCacheDrainMetrics("buffers", Tags.empty());
 * drains.bindTo(registry);
 * // ...
 * drains.close(); // ends the event stream
 * }
 *
 * @implNote The stream is a JFR recording of one event type: while it runs, every drain of
 *     every span heap in the process counts the cache's blocks and commits an event, and a
 *     thread of the stream parses the events once a second. Close the binder to end it.
 */
public final class ThreadCacheDrainMetrics implements MeterBinder, AutoCloseable {

    /** The JFR event of a drained cache. */
    static final String EVENT = "org.spanheap.DeadThreadCacheDrain";

    private final HeapEventStream events;
    private final Iterable<Tag> tags;

    /**
     * Creates a binder of the drains of the heap registered as {@code heapName}, tagged
     * {@code heap=<heapName>} and with {@code tags}.
     *
     * @param heapName the name the heap was registered with
     * @param tags more tags for the counters
     * @throws NullPointerException if an argument is null
     */
    public ThreadCacheDrainMetrics(String heapName, Iterable<Tag> tags) {
        this.events = new HeapEventStream(EVENT, "heap", heapName);
        this.tags = Tags.concat(Objects.requireNonNull(tags, "tags"), "heap", heapName);
    }

    /**
     * Registers the counters and starts the event stream that feeds them.
     *
     * @throws IllegalStateException if the binder is bound already, or closed
     */
    @Override
    public void bindTo(MeterRegistry registry) {
        Objects.requireNonNull(registry, "registry");
        Counter caches = Counter.builder("spanheap.thread.caches.drained").tags(tags)
                .description("Thread caches of terminated threads returned to the heap").register(registry);
        Counter bytes = Counter.builder("spanheap.thread.caches.drained.memory").tags(tags)
                .baseUnit(BaseUnits.BYTES).description("Bytes of the free blocks those caches held")
                .register(registry);
        events.start(event -> {
            caches.increment();
            bytes.increment(event.getLong("bytes"));
        });
    }

    /** Ends the event stream; the counters keep what they counted. Idempotent. */
    @Override
    public void close() {
        events.close();
    }
}
