package org.spanheap.jmh;

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

/**
 * cache-thrash (active false sharing, Hoard): every thread repeatedly allocates a small block,
 * writes it ({@link FalseSharing#writeRepeatedly}) and frees it. An allocator that hands blocks
 * of one cache line to different threads makes their writes contend, though no data is shared.
 * Compare {@code -t 1} with {@code -t 2}/{@code -t 16}: without false sharing the time per
 * operation stays flat up to the core count.
 *
 * <p>Score: nanoseconds per allocate+write+free, per thread.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED", Allocator.HEAP_FLAG, Allocator.INLINE_FLAG,
        Allocator.NETTY_UNSAFE_FLAG, Allocator.EXECUTOR_FLAG, Allocator.EXECUTOR_CLASS_FLAG})
@State(Scope.Benchmark)
public class CacheThrashBenchmark {

    /**
     * Default: the peers that need no optional library; the runner adds MIMALLOC_FFM and
     * JEMALLOC_FFM where they load.
     */
    @Param({"SPANHEAP", "SPANHEAP_ZEROED", "MALLOC_FFM",
            "ARENA_CONFINED", "ARENA_SHARED", "NETTY_POOLED", "NETTY_POOLED_NOLEAK",
            "NETTY_ADAPTIVE", "NETTY_ADAPTIVE_NOLEAK", "DIRECT_BYTEBUFFER"})
    public Allocator allocator;

    /** Block size in bytes; small, so that several blocks share a 64-byte line. */
    @Param({"16"})
    public int size;

    private Peer peer;

    @Setup(Level.Trial)
    public void open() {
        peer = allocator.open();
    }

    @TearDown(Level.Trial)
    public void close() {
        peer.close();
    }

    @Benchmark
    public int allocateWriteFree() {
        Peer p = peer;
        Object block = p.allocate(size);
        int r = FalseSharing.writeRepeatedly(p.segment(block), size);
        p.free(block);
        return r;
    }
}
