package org.spanheap.jmh;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.spanheap.SpanHeap;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Allocate and free one 64-byte block on one thread, side by side:
 * <ul>
 * <li>spanheap: {@code allocateUninitialized + free} and {@code allocate} (zeroing) {@code + free},
 *     and an {@code Arena} from {@code newArena()} allocate + close;</li>
 * <li>glibc {@code malloc}/{@code free} through critical FFM downcalls (the cost a user
 *     pays for "just call malloc");</li>
 * <li>{@code Arena.ofConfined()} allocate + close (the JDK's own answer).</li>
 * </ul>
 * Target: spanheap at most 0.5x malloc+free through FFM.
 *
 * <p>Each benchmark writes one long into the block so the allocation cannot be elided, and
 * returns the written value rather than the segment (no escape needed for the blackhole).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsPrepend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class AllocFree64Benchmark {

    static final long SIZE = 64;

    private static final MethodHandle MALLOC;
    private static final MethodHandle FREE;
    static {
        Linker linker = Linker.nativeLinker();
        Linker.Option critical = Linker.Option.critical(false);
        MALLOC = linker.downcallHandle(linker.defaultLookup().find("malloc").orElseThrow(),
                FunctionDescriptor.of(JAVA_LONG, JAVA_LONG), critical);
        FREE = linker.downcallHandle(linker.defaultLookup().find("free").orElseThrow(),
                FunctionDescriptor.ofVoid(JAVA_LONG), critical);
    }

    private SpanHeap heap;
    private long counter;

    @Setup(Level.Trial)
    public void setUp() {
        heap = SpanHeap.create();
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        heap.close();
    }

    /** spanheap, contents unspecified: the thread-cache fast path only. */
    @Benchmark
    public long spanheapUninitialized() {
        MemorySegment s = heap.allocateUninitialized(SIZE);
        s.set(JAVA_LONG, 0, ++counter);
        heap.free(s);
        return counter;
    }

    /** spanheap, zeroed like {@code Arena.allocate}. */
    @Benchmark
    public long spanheapZeroed() {
        MemorySegment s = heap.allocate(SIZE);
        s.set(JAVA_LONG, 0, ++counter);
        heap.free(s);
        return counter;
    }

    /** spanheap confined arena: new arena, allocate (zeroed), close. */
    @Benchmark
    public long spanheapArenaAllocateClose() {
        try (Arena arena = heap.newArena()) {
            MemorySegment s = arena.allocate(SIZE);
            s.set(JAVA_LONG, 0, ++counter);
        }
        return counter;
    }

    /** glibc malloc/free through critical downcalls; the block is written through a segment. */
    @Benchmark
    public long mallocFree() throws Throwable {
        long p = (long) MALLOC.invokeExact(SIZE);
        MemorySegment.ofAddress(p).reinterpret(SIZE).set(JAVA_LONG, 0, ++counter);
        FREE.invokeExact(p);
        return counter;
    }

    /** The JDK's confined arena: allocate (zeroed, malloc inside), close. */
    @Benchmark
    public long confinedArenaAllocateClose() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = arena.allocate(SIZE);
            s.set(JAVA_LONG, 0, ++counter);
        }
        return counter;
    }
}
