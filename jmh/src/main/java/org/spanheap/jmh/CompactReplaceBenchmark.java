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

/**
 * The price of one cache-store operation without the cache around it: one thread replaces
 * random values (a new block holding a copy of {@code 64..maxSize} bytes, then the old one
 * freed) or reads both ends of one, over {@code keys} values. {@code keys} 1024 keeps the
 * values (about 0.5 MiB) in the CPU caches, so the figures are the stores' own work, not the
 * memory's; {@link CacheChurnBenchmark} is the same operations with an index, shard locks,
 * threads and size phases.
 *
 * <p>The stores: {@code COMPACTING} is {@code CompactingHeap.create()} (its background
 * thread reclaims and compacts; nobody calls {@code compact()}), a value is a handle,
 * {@code allocateFrom} copies, a read resolves the handle to a segment; {@code COMPACTING_OWNED}
 * is the same heap built with {@code threadOwnedPages(true)}. The others are
 * {@link Allocator} peers: {@code SPANHEAP} ({@code allocateUninitialized}), {@code MALLOC_FFM}
 * (glibc through critical downcalls), and where Debian's libraries load {@code JEMALLOC_FFM},
 * {@code MIMALLOC_FFM}: a value is the peer's block, the copy goes through its segment. No store
 * zeroes.
 *
 * <p>Two reads split {@code read} in its parts: {@code readSize} is the resolution without the
 * value, {@code readResolvedOnce} the value without the resolution. With {@code -p keys=16384
 * -p maxSize=8192} (about 66 MiB of values) the values no longer fit the caches, and a read
 * shows what the handle's entry costs when it has to come from memory too.
 *
 * <p>Run: {@code java --enable-native-access=ALL-UNNAMED -jar jmh/target/benchmarks.jar
 * CompactReplaceBenchmark -f 1 -wi 3 -i 5 -w 1s -r 1s}. Score: nanoseconds per operation.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED", Allocator.HEAP_FLAG, Allocator.INLINE_FLAG})
@State(Scope.Thread)
public class CompactReplaceBenchmark {

    @Param({"COMPACTING", "COMPACTING_OWNED", "SPANHEAP", "MALLOC_FFM"})
    public String store;

    @Param({"1024"})
    public int keys;

    @Param({"1024"})
    public int maxSize;

    private static final int MIN_SIZE = 64;
    /** Precomputed keys and sizes, so that the random numbers cost nothing in the loop. */
    private static final int SEQUENCE = 1 << 16;

    private CompactingHeap heap;
    private Peer peer;
    private long[] handles;
    private Object[] blocks;
    private int[] sizes;
    private int[] order;
    /** Every value's segment, resolved once at set-up ({@link #readResolvedOnce}). */
    private MemorySegment[] resolved;
    private MemorySegment source;
    private Arena sourceArena;
    private int next;

    @Setup(Level.Trial)
    public void setUp() {
        SplittableRandom random = new SplittableRandom(42);
        sizes = new int[SEQUENCE];
        order = new int[SEQUENCE];
        for (int i = 0; i < SEQUENCE; i++) {
            sizes[i] = MIN_SIZE + random.nextInt(maxSize - MIN_SIZE + 1);
            order[i] = random.nextInt(keys);
        }
        sourceArena = Arena.ofShared();
        source = sourceArena.allocate(maxSize, 16);
        for (long i = 0; i < maxSize; i++) {
            source.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31 + 7));
        }
        if (store.startsWith("COMPACTING")) {
            heap = store.equals("COMPACTING_OWNED")
                    ? CompactingHeap.builder().threadOwnedPages(true).build()
                    : CompactingHeap.create();
            handles = new long[keys];
            for (int k = 0; k < keys; k++) {
                handles[k] = heap.allocateFrom(source.asSlice(0, sizes[k]));
            }
        } else {
            peer = Allocator.valueOf(store).open();
            blocks = new Object[keys];
            for (int k = 0; k < keys; k++) {
                blocks[k] = newBlock(sizes[k]);
            }
        }
        resolved = new MemorySegment[keys];
        for (int k = 0; k < keys; k++) {
            resolved[k] = heap != null ? heap.segment(handles[k]) : peer.segment(blocks[k]);
        }
    }

    private Object newBlock(int size) {
        Object b = peer.allocate(size);
        MemorySegment.copy(source, 0, peer.segment(b), 0, size);
        return b;
    }

    /** Replaces one value: a new block with a copy, then the old block freed. */
    @Benchmark
    public long replace() {
        int i = next++ & (SEQUENCE - 1);
        int key = order[i];
        int size = sizes[(i * 7) & (SEQUENCE - 1)];
        if (heap != null) {
            long h = heap.allocateFrom(source.asSlice(0, size));
            heap.free(handles[key]);
            handles[key] = h;
            return h;
        }
        Object b = newBlock(size);
        peer.free(blocks[key]);
        blocks[key] = b;
        return size;
    }

    /** Reads the first and the last 8 bytes of one value. */
    @Benchmark
    public long read() {
        int key = order[next++ & (SEQUENCE - 1)];
        MemorySegment s = heap != null ? heap.segment(handles[key]) : peer.segment(blocks[key]);
        return s.get(ValueLayout.JAVA_LONG_UNALIGNED, 0) + s.get(ValueLayout.JAVA_LONG_UNALIGNED, s.byteSize() - 8);
    }

    /**
     * Reads the size of one value: for {@code COMPACTING} the handle's resolution without the
     * value (the entry's state), for the others the segment's size field.
     */
    @Benchmark
    public long readSize() {
        int key = order[next++ & (SEQUENCE - 1)];
        return heap != null ? heap.size(handles[key]) : peer.segment(blocks[key]).byteSize();
    }

    /**
     * Reads both ends of one value through a segment resolved at set-up: the value's memory
     * without the handle's resolution. For {@code COMPACTING} valid while no epoch changes, as
     * none does when nothing is freed (an epoch change would make this throw, not mismeasure).
     */
    @Benchmark
    public long readResolvedOnce() {
        MemorySegment s = resolved[order[next++ & (SEQUENCE - 1)]];
        return s.get(ValueLayout.JAVA_LONG_UNALIGNED, 0) + s.get(ValueLayout.JAVA_LONG_UNALIGNED, s.byteSize() - 8);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        if (heap != null) {
            System.out.println();
            System.out.println("  heap: " + heap.stats().epochs() + " epochs, moved " + heap.stats().movedBytes() + " B");
            heap.close();
        } else {
            for (Object b : blocks) {
                peer.free(b);
            }
            peer.close();
        }
        sourceArena.close();
    }
}
