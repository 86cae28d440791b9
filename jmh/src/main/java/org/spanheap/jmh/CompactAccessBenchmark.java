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
import org.openjdk.jmh.infra.Blackhole;
import org.spanheap.CompactingHeap;

/**
 * The price of handles: resolve a {@link CompactingHeap} handle and read 64
 * bytes (eight longs) from the object, against reading 64 bytes through a
 * plain segment kept in an array (global scope, and a shared arena's scope as
 * the epoch segments have). Objects are visited in a shuffled order, so both
 * sides pay the same cache misses for the data; the handle side pays the
 * handle-table load in addition. {@code objects} 4096 fits the L2 cache,
 * 1048576 does not.
 *
 * <p>Score: nanoseconds per object read. The target: {@code handleSegment}
 * and {@code handleRead} at most 1.5x {@code plainGlobal}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED"})
@State(Scope.Benchmark)
public class CompactAccessBenchmark {

    static final ValueLayout.OfLong L = ValueLayout.JAVA_LONG_UNALIGNED;

    @Param({"4096", "1048576"})
    public int objects;

    private CompactingHeap heap;
    private Arena shared;
    private long[] handles;
    private MemorySegment[] plain;
    private MemorySegment[] sharedScope;
    private int[] order;
    private int next;

    @Setup(Level.Trial)
    public void setup() {
        heap = CompactingHeap.builder().build();
        shared = Arena.ofShared();
        handles = new long[objects];
        plain = new MemorySegment[objects];
        sharedScope = new MemorySegment[objects];
        for (int i = 0; i < objects; i++) {
            handles[i] = heap.allocate(64);
            for (int k = 0; k < 8; k++) {
                heap.setLong(handles[i], k * 8L, i + k);
            }
            // the same memory, reachable without the handle (the heap does not move it: no frees)
            plain[i] = heap.segment(handles[i]).reinterpret(64, Arena.global(), null);
            sharedScope[i] = plain[i].reinterpret(64, shared, null);
        }
        order = new int[objects];
        for (int i = 0; i < objects; i++) {
            order[i] = i;
        }
        SplittableRandom rnd = new SplittableRandom(1);
        for (int i = objects - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        shared.close();
        heap.close();
    }

    private int nextIndex() {
        int i = next;
        next = i + 1 == objects ? 0 : i + 1;
        return order[i];
    }

    static long sum8(MemorySegment s) {
        return s.get(L, 0) + s.get(L, 8) + s.get(L, 16) + s.get(L, 24) + s.get(L, 32) + s.get(L, 40)
                + s.get(L, 48) + s.get(L, 56);
    }

    @Benchmark
    public long plainGlobal() {
        return sum8(plain[nextIndex()]);
    }

    @Benchmark
    public long plainSharedScope() {
        return sum8(sharedScope[nextIndex()]);
    }

    /** Resolve, then read; an epoch change would make the read throw (none happens here). */
    @Benchmark
    public long handleSegment() {
        return sum8(heap.segment(handles[nextIndex()]));
    }

    /** The retrying API users are meant to use. */
    @Benchmark
    public long handleRead() {
        return heap.read(handles[nextIndex()], CompactAccessBenchmark::sum8);
    }

    /** Eight separate {@code getLong} calls: eight resolves. */
    @Benchmark
    public void handleGetLong(Blackhole bh) {
        long h = handles[nextIndex()];
        for (int k = 0; k < 8; k++) {
            bh.consume(heap.getLong(h, k * 8L));
        }
    }
}
