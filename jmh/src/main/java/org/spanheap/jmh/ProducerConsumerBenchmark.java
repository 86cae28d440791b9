package org.spanheap.jmh;

import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Group;
import org.openjdk.jmh.annotations.GroupThreads;
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
import org.openjdk.jmh.infra.Control;
import org.openjdk.jmh.infra.ThreadParams;

/**
 * Producer-consumer (Hoard's blowup scenario; scalloc's remote frees): in each JMH thread group
 * one producer allocates blocks, writes them and passes them through a bounded
 * {@link SpscRing} of {@value #CAPACITY}; one consumer reads and frees them. Every free is a
 * remote free: the block goes back to an allocator structure owned by another thread.
 *
 * <p>Threads come in pairs: {@code -t 2} is one pair, {@code -t 16} eight pairs (each with its
 * own ring, all on one allocator). Score: nanoseconds per operation of each side (JMH reports
 * {@code produce} and {@code consume} as secondary results); a transfer costs about the larger
 * of the two. A side waiting on a full or empty ring spins and yields; the wait ends at the end
 * of each iteration through {@link Control#stopMeasurement}, so the benchmark cannot hang.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED", Allocator.HEAP_FLAG, Allocator.INLINE_FLAG,
        Allocator.NETTY_UNSAFE_FLAG, Allocator.EXECUTOR_FLAG, Allocator.EXECUTOR_CLASS_FLAG})
@State(Scope.Benchmark)
public class ProducerConsumerBenchmark {

    static final int CAPACITY = 256;
    static final int SPINS_BEFORE_YIELD = 64;

    /**
     * Default: the peers that need no optional library; the runner adds MIMALLOC_FFM and
     * JEMALLOC_FFM where they load.
     */
    @Param({"SPANHEAP", "SPANHEAP_ZEROED", "MALLOC_FFM",
            "ARENA_SHARED", "NETTY_POOLED", "NETTY_POOLED_NOLEAK",
            "NETTY_ADAPTIVE", "NETTY_ADAPTIVE_NOLEAK", "DIRECT_BYTEBUFFER"})
    public Allocator allocator;

    @Param({"64"})
    public long size;

    SharedPeer shared;

    @Setup(Level.Trial)
    public void open() {
        shared = new SharedPeer(allocator.openForCrossThreadFree());
    }

    @TearDown(Level.Trial)
    public void close() {
        shared.release();
    }

    /** The ring of one producer-consumer pair. */
    @State(Scope.Group)
    public static class Channel {
        final SpscRing ring = new SpscRing(CAPACITY);
        Peer peer;
        SharedPeer shared;

        @Setup(Level.Trial)
        public void open(ProducerConsumerBenchmark bench, ThreadParams thread) {
            if (thread.getGroupThreadCount() != 2) {
                throw new IllegalStateException("the ring is single-producer single-consumer: "
                        + "run one producer and one consumer per group (-tg 1,1), not "
                        + thread.getGroupThreadCount() + " threads per group");
            }
            peer = bench.shared.acquire();
            shared = bench.shared;
        }

        @TearDown(Level.Trial)
        public void drain() {
            for (Object block; (block = ring.poll()) != null; ) {
                peer.free(block);
            }
            shared.release();
        }
    }

    @Benchmark
    @Group("transfer")
    @GroupThreads(1)
    public byte produce(Channel channel, Control control) {
        Peer p = channel.peer;
        Object block = p.allocate(size);
        byte b = p.touch(block, (byte) 7);
        int spins = 0;
        while (!channel.ring.offer(block)) {
            if (control.stopMeasurement) {
                p.free(block);
                return b;
            }
            if (++spins < SPINS_BEFORE_YIELD) {
                Thread.onSpinWait();
            } else {
                Thread.yield();
            }
        }
        return b;
    }

    @Benchmark
    @Group("transfer")
    @GroupThreads(1)
    public byte consume(Channel channel, Control control) {
        Object block;
        int spins = 0;
        while ((block = channel.ring.poll()) == null) {
            if (control.stopMeasurement) {
                return 0;
            }
            if (++spins < SPINS_BEFORE_YIELD) {
                Thread.onSpinWait();
            } else {
                Thread.yield();
            }
        }
        Peer p = channel.peer;
        byte b = p.touch(block, (byte) 9);
        p.free(block);
        return b;
    }
}
