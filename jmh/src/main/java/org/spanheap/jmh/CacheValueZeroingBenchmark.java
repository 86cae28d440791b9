package org.spanheap.jmh;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
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
import org.spanheap.CompactingHeap;
import org.spanheap.cache.OffHeapCache;
import org.spanheap.cache.Serializers;

/**
 * What zeroing a value's block costs a cache store. One thread replaces random values of
 * {@code size} bytes over {@code keys} keys in a heap built as a cache builds it
 * ({@link OffHeapCache#defaultHeap()}): {@code storeCopy} allocates the new block with an
 * initializer that copies the value in, as a serializer does; {@code storeZeroedCopy} fills the
 * block with zeros first, as {@code OffHeapCache} does; the old block is freed. {@code cachePut}
 * is a whole {@link OffHeapCache#put} of the same values (index, charge, eviction, zeroing),
 * the figure the difference of the first two is a share of.
 *
 * <p>Run: {@code java --enable-native-access=ALL-UNNAMED -jar jmh/target/benchmarks.jar
 * CacheValueZeroingBenchmark -f 1 -wi 3 -i 5 -w 1s -r 1s}. Score: nanoseconds per operation.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED", Allocator.HEAP_FLAG, Allocator.INLINE_FLAG})
@State(Scope.Thread)
public class CacheValueZeroingBenchmark {

    @Param({"100", "1000", "8192"})
    public int size;

    @Param({"1024"})
    public int keys;

    /** Precomputed keys, so that the random numbers cost nothing in the loop. */
    private static final int SEQUENCE = 1 << 16;

    private CompactingHeap heap;
    private OffHeapCache<Long, MemorySegment> cache;
    private long[] handles;
    private int[] order;
    private MemorySegment source;
    private Arena sourceArena;
    private int next;

    @Setup(Level.Trial)
    public void setUp() {
        SplittableRandom random = new SplittableRandom(42);
        order = new int[SEQUENCE];
        for (int i = 0; i < SEQUENCE; i++) {
            order[i] = random.nextInt(keys);
        }
        sourceArena = Arena.ofShared();
        source = sourceArena.allocate(size, 16);
        for (long i = 0; i < size; i++) {
            source.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
        }
        heap = OffHeapCache.defaultHeap().build();
        handles = new long[keys];
        for (int k = 0; k < keys; k++) {
            handles[k] = heap.allocateFrom(source);
        }
        cache = OffHeapCache.builder(Serializers.longs(), Serializers.segments()).capacity(256L << 20).build();
        for (long k = 0; k < keys; k++) {
            cache.put(k, source);
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        cache.close();
        heap.close();
        sourceArena.close();
    }

    /** A new block written by a copy, the old one freed. */
    @Benchmark
    public long storeCopy() {
        int key = order[next++ & (SEQUENCE - 1)];
        long h = heap.allocate(size, target -> MemorySegment.copy(source, 0, target, 0, size));
        heap.free(handles[key]);
        handles[key] = h;
        return h;
    }

    /** A new block zeroed, then written by a copy, the old one freed. */
    @Benchmark
    public long storeZeroedCopy() {
        int key = order[next++ & (SEQUENCE - 1)];
        long h = heap.allocate(size, target -> {
            target.fill((byte) 0);
            MemorySegment.copy(source, 0, target, 0, size);
        });
        heap.free(handles[key]);
        handles[key] = h;
        return h;
    }

    /** A cache's put of one value over another. */
    @Benchmark
    public void cachePut() {
        cache.put((long) order[next++ & (SEQUENCE - 1)], source);
    }
}
