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
import org.openjdk.jmh.infra.ThreadParams;

/**
 * larson (server simulation, with thread turnover): each benchmark thread owns {@value #SLOTS}
 * slots of live blocks (uniform 16..256 B). One operation of the benchmark is one <em>generation</em>:
 * a new platform thread is started, replaces {@value #ROUNDS} blocks at random slots (free the old,
 * allocate a new one, write it) and exits; the next generation inherits the slots. So most frees
 * are of blocks allocated by a thread that has since died: the allocator's handling of dead
 * threads' caches and spans (orphaning, adoption; scalloc, SSMalloc) is on the measured path.
 *
 * <p>Score: nanoseconds per replacement, per benchmark thread, including the amortised start and
 * join of one platform thread per {@value #ROUNDS} replacements (the same for every peer; a
 * Netty {@code FastThreadLocalThread}, see {@link NettyThreadExecutor}).
 * Confined arenas cannot take part (their blocks die with the allocating thread's ownership).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED", Allocator.HEAP_FLAG, Allocator.INLINE_FLAG,
        Allocator.NETTY_UNSAFE_FLAG, Allocator.EXECUTOR_FLAG, Allocator.EXECUTOR_CLASS_FLAG})
@State(Scope.Benchmark)
public class LarsonBenchmark {

    static final int SLOTS = 1024;
    static final int ROUNDS = 10_000;
    static final int SIZES = 4096;

    /**
     * Default: the peers that need no optional library; the runner adds MIMALLOC_FFM and
     * JEMALLOC_FFM where they load.
     */
    @Param({"SPANHEAP", "SPANHEAP_ZEROED", "MALLOC_FFM",
            "ARENA_SHARED", "NETTY_POOLED", "NETTY_POOLED_NOLEAK",
            "NETTY_ADAPTIVE", "NETTY_ADAPTIVE_NOLEAK", "DIRECT_BYTEBUFFER"})
    public Allocator allocator;

    SharedPeer shared;

    @Setup(Level.Trial)
    public void open() {
        shared = new SharedPeer(allocator.openForCrossThreadFree());
    }

    @TearDown(Level.Trial)
    public void close() {
        shared.release();
    }

    /** The slots one benchmark thread hands from generation to generation. */
    @State(Scope.Thread)
    public static class Slots implements Runnable {
        final Object[] blocks = new Object[SLOTS];
        long[] sizes;
        long rng;
        int nextSize;
        int checksum;
        Peer peer;
        SharedPeer shared;

        @Setup(Level.Trial)
        public void fill(LarsonBenchmark bench, ThreadParams thread) {
            peer = bench.shared.acquire();
            shared = bench.shared;
            sizes = SizeMix.uniform(SIZES, 16, 256, 0x1A250_0000L + thread.getThreadIndex());
            rng = 0x9E3779B97F4A7C15L * (thread.getThreadIndex() + 1);
            for (int i = 0; i < SLOTS; i++) {
                blocks[i] = peer.allocate(sizes[i]);
            }
        }

        @TearDown(Level.Trial)
        public void drain() {
            for (int i = 0; i < SLOTS; i++) {
                peer.free(blocks[i]);
                blocks[i] = null;
            }
            shared.release();
        }

        /** One generation's work, on its own short-lived thread. */
        @Override
        public void run() {
            Peer p = peer;
            long x = rng;
            int n = nextSize;
            int sum = checksum;
            for (int r = 0; r < ROUNDS; r++) {
                x ^= x << 13; // xorshift64: cheap, the same sequence for every peer
                x ^= x >>> 7;
                x ^= x << 17;
                int slot = (int) (x >>> 54); // top 10 bits: 0..1023
                p.free(blocks[slot]);
                Object block = p.allocate(sizes[n++ & (SIZES - 1)]);
                blocks[slot] = block;
                sum += p.touch(block, (byte) r);
            }
            rng = x;
            nextSize = n;
            checksum = sum;
        }
    }

    @Benchmark
    @OperationsPerInvocation(ROUNDS)
    public int generation(Slots slots) throws Exception {
        Throwable[] failure = new Throwable[1];
        Thread t = NettyThreadExecutor.newThread(slots);
        t.setUncaughtExceptionHandler((th, e) -> failure[0] = e);
        t.start();
        t.join();
        if (failure[0] != null) {
            throw new IllegalStateException("generation failed", failure[0]);
        }
        return slots.checksum;
    }
}
