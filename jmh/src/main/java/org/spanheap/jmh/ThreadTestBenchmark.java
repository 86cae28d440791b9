package org.spanheap.jmh;

import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * threadtest (Hoard, scalloc, LRMalloc evaluations): each thread allocates a batch of
 * {@value #BATCH} blocks of one size, writes each, then frees them all, over and over. Unlike
 * {@link AllocFreeBenchmark} the thread cache runs dry and overflows on every batch, so refill
 * and drain (span pool traffic) are on the measured path.
 *
 * <p>Score: nanoseconds per allocate+touch+free of one block, per thread.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED", Allocator.HEAP_FLAG, Allocator.INLINE_FLAG,
        Allocator.NETTY_UNSAFE_FLAG, Allocator.EXECUTOR_FLAG, Allocator.EXECUTOR_CLASS_FLAG})
@State(Scope.Benchmark)
public class ThreadTestBenchmark {

    static final int BATCH = 1000;

    /**
     * Default: the peers that need no optional library; the runner adds MIMALLOC_FFM and
     * JEMALLOC_FFM where they load.
     */
    @Param({"SPANHEAP", "SPANHEAP_ZEROED", "MALLOC_FFM",
            "ARENA_CONFINED", "ARENA_SHARED", "NETTY_POOLED", "NETTY_POOLED_NOLEAK",
            "NETTY_ADAPTIVE", "NETTY_ADAPTIVE_NOLEAK", "DIRECT_BYTEBUFFER"})
    public Allocator allocator;

    @Param({"64"})
    public long size;

    private Peer peer;

    @Setup(Level.Trial)
    public void open() {
        peer = allocator.open();
    }

    @TearDown(Level.Trial)
    public void close() {
        peer.close();
    }

    /** One thread's batch. */
    @State(Scope.Thread)
    public static class Batch {
        final Object[] blocks = new Object[BATCH];
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void allocateAllFreeAll(Batch batch, Blackhole bh) {
        Object[] blocks = batch.blocks;
        Peer p = peer;
        long s = size;
        for (int i = 0; i < BATCH; i++) {
            Object block = p.allocate(s);
            bh.consume(p.touch(block, (byte) i));
            blocks[i] = block;
        }
        for (int i = 0; i < BATCH; i++) {
            p.free(blocks[i]);
            blocks[i] = null;
        }
    }
}
