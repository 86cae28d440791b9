package org.spanheap.micrometer;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.lang.ref.WeakReference;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.ToLongFunction;
import org.spanheap.CompactingHeap;
import org.spanheap.CompactingHeapStats;

/**
 * Binds a {@link CompactingHeap}'s memory and compaction to a Micrometer {@link MeterRegistry}.
 *
 * <p>Meters, each tagged {@code heap=<name>} and with the tags given:
 * <ul>
 * <li>{@code spanheap.compacting.memory.live}, {@code .committed}, {@code .resident} (bytes):
 *     bytes of live objects, memory held from the OS, and its part in RAM as the OS says
 *     ({@link CompactingHeap#residentBytes()});</li>
 * <li>{@code spanheap.compacting.memory.pending} (bytes): freed bytes waiting for the next
 *     reclaim;</li>
 * <li>{@code spanheap.compacting.objects}: live objects;</li>
 * <li>{@code spanheap.compacting.moved} (bytes, a counter): bytes moved by compaction;</li>
 * <li>{@code spanheap.compacting.rounds} (a function timer: count and total time): compaction
 *     rounds that moved objects, and the time all rounds took; {@code
 *     spanheap.compacting.round.max} (a time gauge): the longest round, what an access to a
 *     moving object may wait;</li>
 * <li>{@code spanheap.compacting.epochs} (a counter) and {@code spanheap.compacting.epoch.close.max}
 *     (a time gauge): epochs closed, and the longest close.</li>
 * </ul>
 *
 * <p>The heap's counters give the rounds' count and their total, not each round's time;
 * {@link CompactionPauseMetrics} times each round, with percentiles, from the rounds' JFR
 * events.
 *
 * <p>The binder holds the heap weakly; once the heap is closed or collected its gauges read
 * NaN and its counters keep the last values they read.
 *
 * {@snippet :
 * new CompactingHeapMetrics(heap, "values", Tags.empty()).bindTo(registry);
 * }
 *
 * @implNote The resident gauge asks the OS at every read (milliseconds per hundred MiB:
 *     see {@link CompactingHeap#residentBytes()}); the other meters read a
 *     {@link CompactingHeap#stats()} snapshot each.
 */
public final class CompactingHeapMetrics implements MeterBinder {

    private final WeakReference<CompactingHeap> heap;
    private final Iterable<Tag> tags;
    /** The last snapshot read while the heap was open: what the counters show once it is closed. */
    private volatile CompactingHeapStats last;

    /**
     * Creates a binder of {@code heap}'s meters, tagged {@code heap=<name>} and with {@code tags}.
     *
     * @param heap the heap
     * @param name the value of the {@code heap} tag
     * @param tags more tags for every meter
     * @throws NullPointerException if an argument is null
     * @throws IllegalStateException if the heap is closed
     */
    public CompactingHeapMetrics(CompactingHeap heap, String name, Iterable<Tag> tags) {
        this.heap = new WeakReference<>(Objects.requireNonNull(heap, "heap"));
        this.tags = Tags.concat(Objects.requireNonNull(tags, "tags"), "heap", Objects.requireNonNull(name, "name"));
        this.last = heap.stats();
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        bytes(registry, "spanheap.compacting.memory.live", CompactingHeapStats::liveBytes,
                "Bytes requested by live objects");
        bytes(registry, "spanheap.compacting.memory.committed", CompactingHeapStats::committedBytes,
                "Bytes the heap holds from the OS: pages and large mappings");
        Gauge.builder("spanheap.compacting.memory.resident", this, CompactingHeapMetrics::resident).tags(tags)
                .baseUnit(BaseUnits.BYTES).description("Committed bytes in RAM, as the OS says")
                .strongReference(true).register(registry);
        bytes(registry, "spanheap.compacting.memory.pending", CompactingHeapStats::pendingReclaimBytes,
                "Bytes of freed objects waiting for the next reclaim");
        Gauge.builder("spanheap.compacting.objects", this, b -> b.gauge(CompactingHeapStats::liveObjects)).tags(tags)
                .baseUnit(BaseUnits.OBJECTS).description("Live objects")
                .strongReference(true).register(registry);
        FunctionCounter.builder("spanheap.compacting.moved", this, b -> b.counter(CompactingHeapStats::movedBytes))
                .tags(tags).baseUnit(BaseUnits.BYTES).description("Bytes moved by compaction").register(registry);
        FunctionTimer.builder("spanheap.compacting.rounds", this,
                        b -> b.counter(CompactingHeapStats::compactionIncrements),
                        b -> b.counter(CompactingHeapStats::totalIncrementNanos), TimeUnit.NANOSECONDS)
                .tags(tags).description("Compaction rounds that moved objects, and the time of all rounds")
                .register(registry);
        TimeGauge.builder("spanheap.compacting.round.max", this, TimeUnit.NANOSECONDS,
                        b -> b.gauge(CompactingHeapStats::maxIncrementNanos))
                .tags(tags).description("The longest compaction round: what an access to a moving object may wait")
                .strongReference(true).register(registry);
        FunctionCounter.builder("spanheap.compacting.epochs", this, b -> b.counter(CompactingHeapStats::epochs))
                .tags(tags).description("Epochs closed").register(registry);
        TimeGauge.builder("spanheap.compacting.epoch.close.max", this, TimeUnit.NANOSECONDS,
                        b -> b.gauge(CompactingHeapStats::maxEpochCloseNanos))
                .tags(tags).description("The longest epoch close (the arena handshake)")
                .strongReference(true).register(registry);
    }

    private void bytes(MeterRegistry registry, String name, ToLongFunction<CompactingHeapStats> value,
            String description) {
        Gauge.builder(name, this, b -> b.gauge(value)).tags(tags).baseUnit(BaseUnits.BYTES).description(description)
                .strongReference(true).register(registry);
    }

    /** {@return the heap's statistics now, or null if it is closed or collected} */
    private CompactingHeapStats stats() {
        CompactingHeap h = heap.get();
        if (h == null) {
            return null;
        }
        try {
            CompactingHeapStats s = h.stats();
            last = s;
            return s;
        } catch (IllegalStateException closed) {
            return null;
        }
    }

    private double resident() {
        CompactingHeap h = heap.get();
        if (h == null) {
            return Double.NaN;
        }
        try {
            return h.residentBytes();
        } catch (IllegalStateException closed) {
            return Double.NaN;
        }
    }

    private double gauge(ToLongFunction<CompactingHeapStats> value) {
        CompactingHeapStats s = stats();
        return s != null ? value.applyAsLong(s) : Double.NaN;
    }

    private long counter(ToLongFunction<CompactingHeapStats> value) {
        CompactingHeapStats s = stats();
        return value.applyAsLong(s != null ? s : last);
    }
}
