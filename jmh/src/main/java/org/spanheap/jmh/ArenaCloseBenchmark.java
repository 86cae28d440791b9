package org.spanheap.jmh;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

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

/**
 * Arena allocate-many-then-close: open an arena, allocate {@link #blocks} blocks of
 * {@link #size} bytes from it (writing each), close it. spanheap's {@code SpanHeap.newArena()}
 * against the JDK's {@code Arena.ofConfined()} and {@code Arena.ofShared()}; all three zero what
 * they allocate ({@code Arena.allocate}'s contract).
 *
 * <p>Score: nanoseconds per arena (open, {@link #blocks} allocations, close), per thread.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED", Allocator.HEAP_FLAG, Allocator.INLINE_FLAG,
        Allocator.NETTY_UNSAFE_FLAG, Allocator.EXECUTOR_FLAG, Allocator.EXECUTOR_CLASS_FLAG})
@State(Scope.Benchmark)
public class ArenaCloseBenchmark {

    /** Which kind of {@code java.lang.foreign.Arena}. */
    public enum Kind { SPANHEAP, CONFINED, SHARED }

    @Param({"SPANHEAP", "CONFINED", "SHARED"})
    public Kind arena;

    @Param({"64"})
    public int blocks;

    @Param({"64"})
    public long size;

    private SpanHeapPeer heap;
    private Supplier<Arena> factory;

    @Setup(Level.Trial)
    public void open() {
        switch (arena) {
            case SPANHEAP -> {
                heap = new SpanHeapPeer(false);
                factory = heap::newArena;
            }
            case CONFINED -> factory = Arena::ofConfined;
            case SHARED -> factory = Arena::ofShared;
        }
    }

    @TearDown(Level.Trial)
    public void close() {
        if (heap != null) {
            heap.close();
        }
    }

    @Benchmark
    public byte allocateManyThenClose() {
        byte sum = 0;
        try (Arena a = factory.get()) {
            for (int i = 0; i < blocks; i++) {
                MemorySegment s = a.allocate(size);
                s.set(ValueLayout.JAVA_BYTE, 0, (byte) i);
                sum += s.get(ValueLayout.JAVA_BYTE, 0);
            }
        }
        return sum;
    }
}
