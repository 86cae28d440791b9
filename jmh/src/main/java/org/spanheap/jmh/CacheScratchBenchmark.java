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
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.ThreadParams;

/**
 * cache-scratch (passive false sharing, Hoard): one thread allocates one small block per
 * benchmark thread, back to back (so they share cache lines), and hands one to each thread. Each
 * thread frees the block it was given, then repeatedly allocates a block of the same size, writes
 * it ({@link FalseSharing#writeRepeatedly}) and frees it. An allocator that gives the freed block
 * (or its line neighbours) back to the thread that freed it recreates the false sharing the
 * first thread set up; one that keeps per-thread spans does not.
 *
 * <p>Score: nanoseconds per allocate+write+free, per thread. Needs cross-thread free, so
 * confined arenas take no part.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED", Allocator.HEAP_FLAG, Allocator.INLINE_FLAG,
        Allocator.NETTY_UNSAFE_FLAG, Allocator.EXECUTOR_FLAG, Allocator.EXECUTOR_CLASS_FLAG})
@State(Scope.Benchmark)
public class CacheScratchBenchmark {

    /**
     * Default: the peers that need no optional library; the runner adds MIMALLOC_FFM and
     * JEMALLOC_FFM where they load.
     */
    @Param({"SPANHEAP", "SPANHEAP_ZEROED", "MALLOC_FFM",
            "ARENA_SHARED", "NETTY_POOLED", "NETTY_POOLED_NOLEAK",
            "NETTY_ADAPTIVE", "NETTY_ADAPTIVE_NOLEAK", "DIRECT_BYTEBUFFER"})
    public Allocator allocator;

    /** Block size in bytes; small, so that several blocks share a 64-byte line. */
    @Param({"16"})
    public int size;

    Peer peer;
    /** Blocks allocated back to back by the setup thread, one per benchmark thread. */
    Object[] handedOut;

    @Setup(Level.Trial)
    public void open(BenchmarkParams params) {
        peer = allocator.openForCrossThreadFree();
        handedOut = new Object[params.getThreads()];
        for (int i = 0; i < handedOut.length; i++) {
            handedOut[i] = peer.allocate(size);
            peer.touch(handedOut[i], (byte) i);
        }
    }

    @TearDown(Level.Trial)
    public void close() {
        peer.close();
    }

    /** Frees, on the benchmark thread, the block the setup thread allocated for it. */
    @State(Scope.Thread)
    public static class Handover {
        @Setup(Level.Trial)
        public void freeGivenBlock(CacheScratchBenchmark bench, ThreadParams thread) {
            int i = thread.getThreadIndex();
            FalseSharing.writeRepeatedly(bench.peer.segment(bench.handedOut[i]), bench.size);
            bench.peer.free(bench.handedOut[i]);
            bench.handedOut[i] = null;
        }
    }

    @Benchmark
    public int allocateWriteFree(Handover handover) {
        Peer p = peer;
        Object block = p.allocate(size);
        int r = FalseSharing.writeRepeatedly(p.segment(block), size);
        p.free(block);
        return r;
    }
}
