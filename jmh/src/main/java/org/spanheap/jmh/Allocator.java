package org.spanheap.jmh;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Supplier;
import joptsimple.NonOptionArgumentSpec;

/**
 * The allocators measured side by side: spanheap and what a user would pick instead. Used as a
 * JMH {@code @Param}; each fork opens one of them.
 *
 * <p>Zeroing differs and is part of what each peer costs: {@link #SPANHEAP_ZEROED}, the JDK arenas
 * and {@code ByteBuffer.allocateDirect} zero the block; {@link #SPANHEAP}, malloc, mimalloc,
 * jemalloc and Netty do not.
 */
public enum Allocator {
    /** {@code SpanHeap.allocateUninitialized} + {@code free}: compare with malloc and Netty. */
    SPANHEAP(() -> new SpanHeapPeer(false)),
    /** {@code SpanHeap.allocate} (zeroed) + {@code free}: compare with the JDK arenas. */
    SPANHEAP_ZEROED(() -> new SpanHeapPeer(true)),
    /** glibc {@code malloc}/{@code free} through critical FFM downcalls. */
    MALLOC_FFM(NativeMallocPeer.Glibc::new),
    /** mimalloc's {@code mi_malloc}/{@code mi_free} (Debian's libmimalloc2.0), where it loads. */
    MIMALLOC_FFM(NativeMallocPeer.Mimalloc::new),
    /** jemalloc's {@code malloc}/{@code free} from Debian's libjemalloc2, where it loads. */
    JEMALLOC_FFM(NativeMallocPeer.Jemalloc::new),
    /** {@code Arena.ofConfined()} per block: allocate, then {@code close()} to free. */
    ARENA_CONFINED(() -> new JdkArenaPeer(false)),
    /** {@code Arena.ofShared()} per block: allocate, then {@code close()} (a handshake) to free. */
    ARENA_SHARED(() -> new JdkArenaPeer(true)),
    /** Netty {@code PooledByteBufAllocator.DEFAULT} {@code directBuffer} + {@code release}. */
    NETTY_POOLED(() -> NettyPeer.pooled(true)),
    /** As {@link #NETTY_POOLED} with {@code ResourceLeakDetector} level {@code DISABLED}. */
    NETTY_POOLED_NOLEAK(() -> NettyPeer.pooled(false)),
    /** Netty {@code AdaptiveByteBufAllocator} (4.2's default) {@code directBuffer} + {@code release}. */
    NETTY_ADAPTIVE(() -> NettyPeer.adaptive(true)),
    /** As {@link #NETTY_ADAPTIVE} with {@code ResourceLeakDetector} level {@code DISABLED}. */
    NETTY_ADAPTIVE_NOLEAK(() -> NettyPeer.adaptive(false)),
    /** {@code ByteBuffer.allocateDirect}; freed by the GC's cleaner, so "free" is dropping it. */
    DIRECT_BYTEBUFFER(DirectByteBufferPeer::new);

    /**
     * JVM flag every benchmark fork gets: Netty 4.2 on JDK 25+ turns its {@code sun.misc.Unsafe}
     * fast paths off ({@code io.netty.noUnsafe=true} by default) unless the JVM allows Unsafe
     * memory access. Allowing it gives Netty the code path it runs on JDK 24 and earlier, its
     * fastest; spanheap and the other peers do not use Unsafe. To measure Netty as JDK 25 ships
     * it, replace the forks' own flags ({@code -jvmArgsPrepend "..."} without this one).
     */
    public static final String NETTY_UNSAFE_FLAG = "--sun-misc-unsafe-memory-access=allow";

    /**
     * JVM flag every benchmark fork gets: a 2 GiB Java heap, as a service might run with,
     * instead of a quarter of the machine's memory ({@link MemoryChurn} fixes its own heap). It also bounds
     * {@code ByteBuffer.allocateDirect} and Netty (both default their direct-memory limit to the
     * heap's maximum), so a peer that frees late cannot take many GiB of a shared machine.
     */
    public static final String HEAP_FLAG = "-Xmx2g";

    /**
     * JVM flag every benchmark fork gets: the {@link Peer} adapters are inlined into the
     * workloads for every allocator alike, so the harness adds no call of its own. Without it
     * HotSpot may compile an adapter method on its own first; a caller then inlines it only if
     * that compiled code is below {@code -XX:InlineSmallCode} (2500 bytes). spanheap's checked
     * free compiles to about 2.2 KB, so its adapter crossed that line: the free became a real
     * call, the segment escaped, and allocate+free of 64 B measured 26-31 ns instead of 14-15 ns
     * (docs/benchmarks/README.md). The JMH-generated code inlines the benchmark methods the same way.
     */
    public static final String INLINE_FLAG = "-XX:CompileCommand=inline,org.spanheap.jmh.*::*";

    /** JVM flag every benchmark fork gets: JMH's benchmark threads come from a custom executor. */
    public static final String EXECUTOR_FLAG = "-Djmh.executor=CUSTOM";

    /**
     * JVM flag every benchmark fork gets: the executor is {@link NettyThreadExecutor}, whose
     * threads are Netty {@code FastThreadLocalThread}s, as Netty's own event loops use.
     */
    public static final String EXECUTOR_CLASS_FLAG =
            "-Djmh.executor.class=org.spanheap.jmh.NettyThreadExecutor";

    private final Supplier<Peer> factory;

    Allocator(Supplier<Peer> factory) {
        this.factory = factory;
    }

    /**
     * Opens this allocator for one benchmark trial.
     *
     * @throws UnsupportedOperationException if the allocator cannot be had on this machine (a
     *     library that does not load); the message says why
     */
    public Peer open() {
        return factory.get();
    }

    /**
     * Opens this allocator for a workload that frees blocks on other threads than the ones that
     * allocated them.
     *
     * @throws UnsupportedOperationException if this allocator's blocks must be freed by their
     *     allocating thread (a confined arena), or it cannot be had on this machine
     */
    public Peer openForCrossThreadFree() {
        Peer peer = open();
        if (!peer.freesFromAnyThread()) {
            peer.close();
            throw new UnsupportedOperationException(
                    name() + " cannot free a block on another thread than its owner");
        }
        return peer;
    }

    /** Returns why this allocator is unavailable here, or {@code null} if it opens. */
    public String unavailableReason() {
        try {
            open().close();
            return null;
        } catch (UnsupportedOperationException | LinkageError e) {
            return String.valueOf(e.getMessage());
        }
    }

    /**
     * Prints the allocators that open on this machine, comma-separated, for the runner script
     * ({@code java -cp benchmarks.jar org.spanheap.jmh.Allocator [NAME...]}); with names, only
     * those are checked. The reasons for the others go to standard error.
     */
    public static void main(String[] args) {
        CommandLine cli = new CommandLine(Allocator.class, "Prints the allocators that open on this machine,"
                + " comma-separated (all, or those named); the reasons for the others go to standard error.");
        NonOptionArgumentSpec<String> namesSpec = cli.arguments("allocator names, each or comma-separated: "
                + Arrays.toString(values()));
        List<String> names = cli.parse(args).valuesOf(namesSpec);
        List<Allocator> candidates = new ArrayList<>();
        if (names.isEmpty()) {
            candidates.addAll(List.of(values()));
        } else {
            for (String arg : names) {
                for (String name : arg.split(",")) {
                    if (!name.isBlank()) {
                        try {
                            candidates.add(valueOf(name.strip()));
                        } catch (IllegalArgumentException e) {
                            throw cli.fail("unknown allocator: " + name.strip() + " (one of "
                                    + Arrays.toString(values()) + ")");
                        }
                    }
                }
            }
        }
        List<String> available = new ArrayList<>();
        for (Allocator a : candidates) {
            String reason = a.unavailableReason();
            if (reason == null) {
                available.add(a.name());
            } else {
                System.err.println("skipping " + a + ": " + reason);
            }
        }
        System.out.println(String.join(",", available));
    }
}
