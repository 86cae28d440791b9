package org.spanheap.micrometer;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.lang.ref.WeakReference;
import java.util.Objects;
import java.util.function.ToLongFunction;
import org.spanheap.HeapStats;
import org.spanheap.SpanHeap;

/**
 * Binds a {@link SpanHeap}'s memory and span pool to a Micrometer {@link MeterRegistry}.
 *
 * <p>Meters, each tagged {@code heap=<name>} and with the tags given (the names follow
 * Micrometer's conventions: dotted, lower case, bytes as the base unit):
 * <ul>
 * <li>{@code spanheap.memory.live}, {@code .committed}, {@code .resident}, {@code .reserved}
 *     (bytes): blocks handed out, memory made accessible, its part in RAM (an estimate), and
 *     the virtual memory reserved ({@link HeapStats});</li>
 * <li>{@code spanheap.memory.cached} (bytes): free blocks held in thread caches, ready for the
 *     threads that hold them;</li>
 * <li>{@code spanheap.memory.large} (bytes) and {@code spanheap.large.objects}: large objects,
 *     mapped one by one;</li>
 * <li>{@code spanheap.memory.limit} and {@code spanheap.memory.limited} (bytes): the byte
 *     limit (0 if none) and what counts against it;</li>
 * <li>{@code spanheap.spans{state=hot|floating|reusable|free}}: spans by state; {@code free}
 *     is the span pool;</li>
 * <li>{@code spanheap.spans.carved} and {@code spanheap.memory.releases} (counters): spans
 *     taken from the arena, and calls that gave span memory back to the OS.</li>
 * </ul>
 *
 * <p>The binder holds the heap weakly; once the heap is closed or collected its gauges read
 * NaN and its counters keep the last values they read.
 *
 * {@snippet :
 * new SpanHeapMetrics(heap, "buffers", Tags.empty()).bindTo(registry);
 * }
 *
 * @implNote Each meter's read takes a {@link SpanHeap#stats()} snapshot: O(threads that used
 *     the heap + size classes) under a lock shared with thread-cache creation, which also
 *     returns the caches of terminated threads to the heap.
 */
public final class SpanHeapMetrics implements MeterBinder {

    private final WeakReference<SpanHeap> heap;
    private final Iterable<Tag> tags;
    /** The last snapshot read while the heap was open: what the counters show once it is closed. */
    private volatile HeapStats last;

    /**
     * Creates a binder of {@code heap}'s meters, tagged {@code heap=<name>} and with {@code tags}.
     *
     * @param heap the heap
     * @param name the value of the {@code heap} tag
     * @param tags more tags for every meter
     * @throws NullPointerException if an argument is null
     * @throws IllegalStateException if the heap is closed
     */
    public SpanHeapMetrics(SpanHeap heap, String name, Iterable<Tag> tags) {
        this.heap = new WeakReference<>(Objects.requireNonNull(heap, "heap"));
        this.tags = Tags.concat(Objects.requireNonNull(tags, "tags"), "heap", Objects.requireNonNull(name, "name"));
        this.last = heap.stats();
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        bytes(registry, "spanheap.memory.live", HeapStats::liveBytes,
                "Bytes in blocks handed out to callers, large objects included");
        bytes(registry, "spanheap.memory.committed", HeapStats::committedBytes,
                "Bytes made accessible and not given back to the OS");
        bytes(registry, "spanheap.memory.resident", HeapStats::residentBytes, "Committed bytes in RAM, estimated");
        bytes(registry, "spanheap.memory.reserved", HeapStats::reservedBytes,
                "Virtual memory reserved for the heap's arena");
        bytes(registry, "spanheap.memory.cached", HeapStats::cachedBytes,
                "Bytes in free blocks held by thread caches");
        bytes(registry, "spanheap.memory.large", HeapStats::largeBytes, "Bytes mapped for live large objects");
        bytes(registry, "spanheap.memory.limit", HeapStats::limitBytes, "The heap's byte limit, 0 if none");
        bytes(registry, "spanheap.memory.limited", HeapStats::limitedBytes,
                "Bytes counted against the byte limit, cached blocks included");
        Gauge.builder("spanheap.large.objects", this, b -> b.gauge(HeapStats::largeCount)).tags(tags)
                .baseUnit(BaseUnits.OBJECTS).description("Live large objects")
                .strongReference(true).register(registry);
        spans(registry, "hot", HeapStats::spansHot, "Spans a thread allocates from");
        spans(registry, "floating", HeapStats::spansFloating, "Spans neither allocated from nor reusable");
        spans(registry, "reusable", HeapStats::spansReusable, "Spans with enough free blocks to be reused");
        spans(registry, "free", HeapStats::spansFree, "Empty spans in the span pool");
        FunctionCounter.builder("spanheap.spans.carved", this, b -> b.counter(HeapStats::spansCarved)).tags(tags)
                .description("Spans taken from the arena").register(registry);
        FunctionCounter.builder("spanheap.memory.releases", this, b -> b.counter(HeapStats::madviseCalls)).tags(tags)
                .description("Calls that gave span memory back to the OS").register(registry);
    }

    private void bytes(MeterRegistry registry, String name, ToLongFunction<HeapStats> value, String description) {
        Gauge.builder(name, this, b -> b.gauge(value)).tags(tags).baseUnit(BaseUnits.BYTES).description(description)
                .strongReference(true).register(registry);
    }

    private void spans(MeterRegistry registry, String state, ToLongFunction<HeapStats> value, String description) {
        Gauge.builder("spanheap.spans", this, b -> b.gauge(value)).tags(tags).tag("state", state)
                .description(description).strongReference(true).register(registry);
    }

    /** {@return the heap's statistics now, or null if it is closed or collected} */
    private HeapStats stats() {
        SpanHeap h = heap.get();
        if (h == null || !h.isOpen()) {
            return null;
        }
        try {
            HeapStats s = h.stats();
            last = s;
            return s;
        } catch (IllegalStateException closedMeanwhile) {
            return null;
        }
    }

    private double gauge(ToLongFunction<HeapStats> value) {
        HeapStats s = stats();
        return s != null ? value.applyAsLong(s) : Double.NaN;
    }

    private long counter(ToLongFunction<HeapStats> value) {
        HeapStats s = stats();
        return value.applyAsLong(s != null ? s : last);
    }
}
