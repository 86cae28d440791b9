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
 * Allocate one block of a fixed size, write its first byte, free it: the allocator's fast path
 * (the block comes straight back from the thread's cache) plus, for large sizes, its large-object
 * path. Run with {@code -t 1}, {@code -t 2}, {@code -t 16} for scaling; each thread works alone
 * on one shared allocator.
 *
 * <p>Score: nanoseconds per allocate+touch+free, per thread.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED", Allocator.HEAP_FLAG, Allocator.INLINE_FLAG,
        Allocator.NETTY_UNSAFE_FLAG, Allocator.EXECUTOR_FLAG, Allocator.EXECUTOR_CLASS_FLAG})
@State(Scope.Benchmark)
public class AllocFreeBenchmark {

    /**
     * Default: the peers that need no optional library; the runner adds MIMALLOC_FFM and
     * JEMALLOC_FFM where they load.
     */
    @Param({"SPANHEAP", "SPANHEAP_ZEROED", "MALLOC_FFM",
            "ARENA_CONFINED", "ARENA_SHARED", "NETTY_POOLED", "NETTY_POOLED_NOLEAK",
            "NETTY_ADAPTIVE", "NETTY_ADAPTIVE_NOLEAK", "DIRECT_BYTEBUFFER"})
    public Allocator allocator;

    /** Block size in bytes: 16 B, 64 B, 1 KiB, 16 KiB, 256 KiB, 4 MiB. */
    @Param({"16", "64", "1024", "16384", "262144", "4194304"})
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

    @Benchmark
    public byte allocateTouchFree() {
        Object block = peer.allocate(size);
        byte b = peer.touch(block, (byte) 1);
        peer.free(block);
        return b;
    }
}
