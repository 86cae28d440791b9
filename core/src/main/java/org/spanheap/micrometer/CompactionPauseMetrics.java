package org.spanheap.micrometer;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.Objects;
import jdk.jfr.consumer.RecordingStream;

/**
 * A timer of every compaction round of one {@link org.spanheap.CompactingHeap}, with
 * percentiles: what an access to a moving object may wait, round by round. The heap counts
 * its rounds and sums their time ({@link CompactingHeapMetrics}); each round's own time is in
 * its JFR event {@code org.spanheap.CompactionRound}, and this binder reads those events from
 * a {@link RecordingStream} of its own, as Micrometer's JFR-based binders do.
 *
 * <p>Meter: {@code spanheap.compacting.pauses} (a timer, tagged {@code heap=<name>} and with
 * the tags given), publishing the 0.5, 0.9, 0.99 and 0.999 percentiles. The heap is found by
 * its name in the events: the name it was registered with
 * ({@link org.spanheap.CompactingHeap#registerMXBean(String)}). A round shows in the timer
 * when the stream delivers its event, about a second after it ends.
 *
 * {@snippet :
 * heap.registerMXBean("values");
 * CompactionPauseMetrics pauses = new CompactionPauseMetrics("values", Tags.empty());
 * pauses.bindTo(registry);
 * // ...
 * pauses.close(); // ends the event stream
 * }
 *
 * @implNote The stream is a JFR recording of one event type, at no threshold: while it runs,
 *     every compaction round of every heap in the process commits an event (a few hundred
 *     nanoseconds each), and a thread of the stream parses them once a second. Close the
 *     binder to end it.
 */
public final class CompactionPauseMetrics implements MeterBinder, AutoCloseable {

    /** The JFR event of a compaction round (its duration is the round's). */
    static final String EVENT = "org.spanheap.CompactionRound";

    private final HeapEventStream events;
    private final Iterable<Tag> tags;

    /**
     * Creates a binder of the rounds of the heap registered as {@code heapName}, tagged
     * {@code heap=<heapName>} and with {@code tags}.
     *
     * @param heapName the name the heap was registered with
     * @param tags more tags for the timer
     * @throws NullPointerException if an argument is null
     */
    public CompactionPauseMetrics(String heapName, Iterable<Tag> tags) {
        this.events = new HeapEventStream(EVENT, "heapName", heapName);
        this.tags = Tags.concat(Objects.requireNonNull(tags, "tags"), "heap", heapName);
    }

    /**
     * Registers the timer and starts the event stream that feeds it.
     *
     * @throws IllegalStateException if the binder is bound already, or closed
     */
    @Override
    public void bindTo(MeterRegistry registry) {
        Objects.requireNonNull(registry, "registry");
        Timer timer = Timer.builder("spanheap.compacting.pauses").tags(tags)
                .description("Compaction rounds, each: what an access to a moving object may wait")
                .publishPercentiles(0.5, 0.9, 0.99, 0.999).register(registry);
        events.start(event -> timer.record(event.getDuration()));
    }

    /** Ends the event stream; the timer keeps what it recorded. Idempotent. */
    @Override
    public void close() {
        events.close();
    }
}
