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
import org.openjdk.jmh.infra.ThreadParams;

/**
 * Random mixed sizes ({@link SizeMix}: mostly small, some up to 256 KiB): each thread keeps a
 * window of {@value #WINDOW} live blocks and, per operation, frees the oldest and allocates a new
 * one of the next random size. Many size classes are hot at once and blocks live for a while, so
 * this is the allocator's slower paths (class lookup, span refill) more than the pure fast path.
 *
 * <p>Score: nanoseconds per free+allocate+touch, per thread.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED", Allocator.HEAP_FLAG, Allocator.INLINE_FLAG,
        Allocator.NETTY_UNSAFE_FLAG, Allocator.EXECUTOR_FLAG, Allocator.EXECUTOR_CLASS_FLAG})
@State(Scope.Benchmark)
public class MixedSizeBenchmark {

    static final int WINDOW = 256;
    static final int SIZES = 4096;

    /**
     * Default: the peers that need no optional library; the runner adds MIMALLOC_FFM and
     * JEMALLOC_FFM where they load.
     */
    @Param({"SPANHEAP", "SPANHEAP_ZEROED", "MALLOC_FFM",
            "ARENA_CONFINED", "ARENA_SHARED", "NETTY_POOLED", "NETTY_POOLED_NOLEAK",
            "NETTY_ADAPTIVE", "NETTY_ADAPTIVE_NOLEAK", "DIRECT_BYTEBUFFER"})
    public Allocator allocator;

    /**
     * {@code shared}: all threads use one allocator instance (one heap), as a service would;
     * {@code perThread}: each thread opens its own (for spanheap, its own heap), to tell what
     * sharing costs (docs/java-core.md, "Open problems").
     */
    @Param({"shared"})
    public String heaps;

    SharedPeer shared;

    @Setup(Level.Trial)
    public void open() {
        if (!heaps.equals("shared") && !heaps.equals("perThread")) {
            throw new IllegalArgumentException("heaps must be shared or perThread: " + heaps);
        }
        shared = new SharedPeer(allocator.open());
    }

    @TearDown(Level.Trial)
    public void close() {
        shared.release();
    }

    /** One thread's window of live blocks and its size sequence. */
    @State(Scope.Thread)
    public static class Window {
        final Object[] blocks = new Object[WINDOW];
        long[] sizes;
        int next;
        Peer peer;
        SharedPeer shared;
        /** Whether {@link #shared} is this thread's own allocator ({@code heaps=perThread}). */
        boolean own;

        @Setup(Level.Trial)
        public void fill(MixedSizeBenchmark bench, ThreadParams thread) {
            own = !bench.heaps.equals("shared");
            shared = own ? new SharedPeer(bench.allocator.open()) : bench.shared;
            peer = shared.acquire();
            sizes = SizeMix.draw(SIZES, 0x5EED_0000L + thread.getThreadIndex());
            for (int i = 0; i < WINDOW; i++) {
                blocks[i] = peer.allocate(sizes[i]);
            }
            next = WINDOW;
        }

        @TearDown(Level.Trial)
        public void drain() {
            for (int i = 0; i < WINDOW; i++) {
                peer.free(blocks[i]);
                blocks[i] = null;
            }
            shared.release();
            if (own) {
                shared.release();                  // the state's own count: closes the thread's peer
            }
        }
    }

    @Benchmark
    public byte replaceOldest(Window w) {
        int i = w.next++;
        int slot = i & (WINDOW - 1);
        Peer p = w.peer;
        p.free(w.blocks[slot]);
        Object block = p.allocate(w.sizes[i & (SIZES - 1)]);
        w.blocks[slot] = block;
        return p.touch(block, (byte) i);
    }
}
