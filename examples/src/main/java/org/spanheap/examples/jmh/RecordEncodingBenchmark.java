package org.spanheap.examples.jmh;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.Options;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.spanheap.SpanHeap;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;

/**
 * The JMH study of docs/jmh-study.md: "my code" encodes a record (an id and
 * {@code fields} longs) into a freshly allocated off-heap buffer, sums it back, and frees
 * it; the benchmarks differ only in where the buffer comes from.
 *
 * <ul>
 *   <li>{@code globalHeap}: {@link SpanHeap#global()}, shared by every benchmark thread;</li>
 *   <li>{@code perThreadHeap}: a {@link SpanHeap} per benchmark thread ({@link Scope#Thread}
 *       state), closed in its tear-down;</li>
 *   <li>{@code heapArena}: a confined arena of the global heap per operation;</li>
 *   <li>{@code jdkConfinedArena}: {@link Arena#ofConfined()} per operation (the JDK's
 *       {@code malloc}-backed arena), the baseline.</li>
 * </ul>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 2, jvmArgsPrepend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Benchmark)
public class RecordEncodingBenchmark {

    /** Longs per record (record size = 8 * (fields + 1) bytes). */
    @Param({"8", "128"})
    public int fields;

    /** Shared, read-only input: made once per trial, outside the measurement. */
    private long[] values;

    /** Fills the input. */
    @Setup(Level.Trial)
    public void makeInput() {
        values = new long[fields];
        for (int i = 0; i < fields; i++) {
            values[i] = i * 0x9E3779B97F4A7C15L;
        }
    }

    /** A heap owned by one benchmark thread: JMH makes one per thread and tears it down. */
    @State(Scope.Thread)
    public static class ThreadHeap {
        SpanHeap heap;

        /** Creates the thread's heap. */
        @Setup(Level.Trial)
        public void open() {
            heap = SpanHeap.create();
        }

        /** Checks that the benchmark freed everything, then closes the heap. */
        @TearDown(Level.Trial)
        public void close() {
            long live = heap.stats().liveBytes();
            heap.close();
            if (live != 0) {
                throw new IllegalStateException("leaked " + live + " bytes");
            }
        }
    }

    /** The code under test: writes the record, reads it back, returns a checksum. */
    private long encodeAndSum(MemorySegment buf) {
        buf.set(ValueLayout.JAVA_LONG, 0, fields);
        for (int i = 0; i < fields; i++) {
            buf.setAtIndex(ValueLayout.JAVA_LONG, i + 1, values[i]);
        }
        long sum = 0;
        for (int i = 0; i <= fields; i++) {
            sum += buf.getAtIndex(ValueLayout.JAVA_LONG, i);
        }
        return sum;
    }

    private long recordBytes() {
        return 8L * (fields + 1);
    }

    /** Buffer from the process-wide heap. */
    @Benchmark
    public long globalHeap() {
        SpanHeap heap = SpanHeap.global();
        MemorySegment buf = heap.allocateUninitialized(recordBytes());
        long sum = encodeAndSum(buf);
        heap.free(buf);
        return sum; // returned values are consumed by JMH: no dead-code elimination
    }

    /** Buffer from the thread's own heap. */
    @Benchmark
    public long perThreadHeap(ThreadHeap t) {
        MemorySegment buf = t.heap.allocateUninitialized(recordBytes());
        long sum = encodeAndSum(buf);
        t.heap.free(buf);
        return sum;
    }

    /** Buffer from a confined arena of the global heap; two results go to the Blackhole. */
    @Benchmark
    public void heapArena(Blackhole bh) {
        try (Arena arena = SpanHeap.global().newArena()) {
            MemorySegment buf = arena.allocate(recordBytes());
            bh.consume(encodeAndSum(buf));
            bh.consume(buf.address());
        }
    }

    /** Baseline: the JDK's confined arena. */
    @Benchmark
    public void jdkConfinedArena(Blackhole bh) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(recordBytes());
            bh.consume(encodeAndSum(buf));
            bh.consume(buf.address());
        }
    }

    /**
     * Runs the study with the JMH API: without arguments a quick pass (1 fork, short
     * iterations); with arguments, they are JMH's command line.
     *
     * @param args JMH command-line arguments, or none
     * @throws Exception if JMH fails
     */
    public static void main(String[] args) throws Exception {
        if (args.length > 0) {
            org.openjdk.jmh.Main.main(args);
            return;
        }
        Options opt = new OptionsBuilder()
                .include(RecordEncodingBenchmark.class.getSimpleName())
                .forks(1)
                .warmupIterations(2)
                .warmupTime(org.openjdk.jmh.runner.options.TimeValue.milliseconds(500))
                .measurementIterations(3)
                .measurementTime(org.openjdk.jmh.runner.options.TimeValue.milliseconds(500))
                .build();
        new Runner(opt).run();
    }
}
