package org.spanheap.jmh;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

import joptsimple.OptionSet;
import joptsimple.OptionSpec;
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
import org.spanheap.CompactingHeap;
import org.spanheap.CompactingHeapStats;
import org.spanheap.HeapStats;
import org.spanheap.SpanHeap;

/**
 * Cache storage churn: the value storage of an off-heap cache, written against each store's
 * public API, while the mix of value sizes keeps changing. One store per fork ({@link Store}).
 *
 * <p>The workload. A shared index of {@code keys} entries (default 16384) holds one value per
 * key: its reference (a {@link CompactingHeap} handle or a native address), its segment where
 * the store's {@code free} needs it ({@link SpanHeap}) and its size. 1024 shard locks guard it
 * (shard {@code key & 1023}). Every key gets a value before the trial starts. One operation
 * ({@link #op}) picks a key uniformly at random, then:
 * <ul>
 *   <li>{@code readPercent}% (default 75): <em>read</em>: under the shard lock, read the value's
 *       first and last 8 bytes;</li>
 *   <li>the rest: <em>replace</em>: outside the lock, allocate a new value and write all of it; under
 *       the lock, swap it into the index; after unlocking, free the old value. The old value was
 *       allocated by whichever thread last replaced that key, so with several threads most frees
 *       happen on another thread than the allocation.</li>
 * </ul>
 * Value sizes: uniform in 64 B..1 KiB during even 2-second phases and in 1..8 KiB during odd
 * ones (phases counted from the end of the fill), and in either phase 0.2% of new values are
 * uniform in 64 KiB..1 MiB. A value larger than the store's maximum object size is not stored:
 * the key keeps its old value, and the value is counted as <em>rejected</em> and reported.
 *
 * <p>Every store gets the same bytes: each new value is a copy of the first {@code size} bytes
 * of one prepared random segment, and no store zeroes (like with like). The stores:
 * <ul>
 *   <li>{@code COMPACTING}: {@code CompactingHeap.create()} (defaults, background compaction on)
 *       plus a daemon thread calling {@code compact()} every 250 ms (250 ms after the previous
 *       call returned). New value: {@code allocateFrom(source slice)}, which copies without
 *       zeroing first. Read: {@code segment(h)} and two {@code get}s, resolving again if a
 *       compaction closed the segment's epoch meanwhile. Free: {@code free(h)}.</li>
 *   <li>{@code SPANHEAP}: {@code SpanHeap.create()}, {@code allocateUninitialized} and a copy;
 *       read through the kept segment; {@code free(segment)}.</li>
 *   <li>{@code MALLOC_FFM}, {@code JEMALLOC_FFM}, {@code MIMALLOC_FFM}: {@code malloc} /
 *       {@code mi_malloc} and {@code free} / {@code mi_free} through critical FFM downcalls
 *       ({@link NativeMallocPeer}), a copy; the index keeps the address, reads go to it.</li>
 *   <li>{@code JAVA_HEAP} (not in the default list): a {@code byte[]} per value (the JVM zeroes
 *       it) and a copy; the GC frees it. In memory mode, with the Java heap fixed and pre-touched,
 *       its RSS growth is the JVM's own under this churn (code, metadata, GC and JIT memory): the
 *       control to subtract from the other stores' growth.</li>
 * </ul>
 *
 * <p>The shard locks are {@code ReentrantLock}s rather than monitors: the figures should be
 * about the stores, and a {@code ReentrantLock} costs the same on every JDK this suite runs on,
 * while {@code synchronized} changed its implementation between JDK 22 and 25 (lightweight
 * locking by default since 23, monitors no longer pinning virtual threads since 24).
 *
 * <p>Score: operations (reads and replaces) per microsecond over all threads. At the end of a
 * trial one line reports live bytes (the sum of the values' sizes), the store's committed bytes
 * by its own statistics ({@code CompactingHeap}'s and {@code SpanHeap}'s {@code stats()},
 * glibc's {@code mallinfo2()} which includes the JVM's own {@code malloc} use, mimalloc's
 * {@code mi_process_info}; none for jemalloc), the process's RSS and the rejected count. Then
 * it checks the first and last 8 bytes of every value against what was written, and fails the
 * trial if any differ (a value lost or moved wrongly).
 *
 * <p>Run (2 s iterations, so that the 3 + 4 iterations cover both size phases):
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -jar jmh/target/benchmarks.jar CacheChurnBenchmark -t 2
 * java --enable-native-access=ALL-UNNAMED -jar jmh/target/benchmarks.jar CacheChurnBenchmark -t 2 \
 *     -p store=COMPACTING,MALLOC_FFM -p keys=65536
 * </pre>
 * jemalloc and mimalloc are Debian's ({@code apt-get install libjemalloc2 libmimalloc2.0});
 * jemalloc loads only with {@code GLIBC_TUNABLES=glibc.rtld.optional_static_tls=4096} in the
 * environment (see {@link NativeMallocPeer}), else its trial fails with "jemalloc not found".
 *
 * <p>Memory mode ({@link #main}): the same churn on one store for a number of seconds, without
 * JMH, printing every 250 ms the elapsed time, operations so far, live MiB, committed MiB,
 * committed/live, RSS and the RSS growth since the start of the run divided by live bytes, then
 * the maxima. Fix the Java heap so that RSS growth is off-heap memory:
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -Xms512m -Xmx512m -XX:+AlwaysPreTouch \
 *     -cp jmh/target/benchmarks.jar org.spanheap.jmh.CacheChurnBenchmark \
 *     --store COMPACTING --seconds 60 --threads 2 --keys 16384
 * </pre>
 * With {@code -Dbench.heap=trace} the {@code COMPACTING} store also prints its heap's figures with
 * every sample (see {@link #TRACE}).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 4, time = 2)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED", Allocator.HEAP_FLAG, Allocator.INLINE_FLAG,
        Allocator.NETTY_UNSAFE_FLAG, Allocator.EXECUTOR_FLAG, Allocator.EXECUTOR_CLASS_FLAG})
@State(Scope.Benchmark)
public class CacheChurnBenchmark {

    static final int SHARDS = 1024;
    static final int SHARD_MASK = SHARDS - 1;
    static final int SMALL_MIN = 64;
    static final int SMALL_MAX = 1024;
    static final int LARGE_MIN = 1024;
    static final int LARGE_MAX = 8192;
    static final int BIG_MIN = 64 << 10;
    static final int BIG_MAX = 1 << 20;
    /** One new value in 500 (0.2%) is a big one. */
    static final int BIG_ONE_IN = 500;
    static final long PHASE_NANOS = TimeUnit.SECONDS.toNanos(2);
    static final long COMPACT_EVERY_MILLIS = 250;
    static final long SEED = 42;

    /** The stores compared; each opens fresh for a trial. */
    public enum Store {
        COMPACTING,
        /** As {@code COMPACTING} with thread-owned pages ({@code threadOwnedPages(true)}). */
        COMPACTING_OWNED,
        /** As {@code COMPACTING} with kappa infinite: only the periodic {@code compact()} moves objects. */
        COMPACTING_NO_KAPPA,
        /** As {@code COMPACTING} with one allocation lane per size class: one lock per class, as in the paper. */
        COMPACTING_ONE_LANE,
        SPANHEAP,
        MALLOC_FFM,
        JEMALLOC_FFM,
        MIMALLOC_FFM,
        /**
         * glibc's blocks named by handles: a table of generation-checked entries in front of
         * {@code MALLOC_FFM}, with nothing else (no pages, no moves, no epochs, no limbo). Not a
         * store to use (a read racing a free is safe here only because the benchmark's shard
         * locks order them); the floor of what naming values by handles costs on this churn.
         */
        HANDLES_ON_MALLOC,
        /**
         * Values as {@code byte[]} on the Java heap (zeroed by the JVM, then copied): what a cache
         * with on-heap values does, and in memory mode a control for the JVM's own RSS growth (with
         * a fixed, pre-touched Java heap its values add no RSS).
         */
        JAVA_HEAP;

        /**
         * @throws UnsupportedOperationException if the store's library does not load here
         */
        ValueStore open() {
            return switch (this) {
                case COMPACTING -> new CompactingStore(CompactingHeap.create());
                case COMPACTING_OWNED -> new CompactingStore(CompactingHeap.builder().threadOwnedPages(true).build());
                case COMPACTING_NO_KAPPA -> new CompactingStore(
                        CompactingHeap.builder().notFullPagesPerClass(CompactingHeap.NOT_FULL_PAGES_UNBOUNDED).build());
                case COMPACTING_ONE_LANE -> new CompactingStore(CompactingHeap.builder().allocationLanes(1).build());
                case SPANHEAP -> new SpanHeapStore((SpanHeapPeer) Allocator.SPANHEAP.open());
                case MALLOC_FFM -> new NativeStore(Allocator.MALLOC_FFM.open(),
                        ChurnTarget.GlibcMallinfo::committedBytes);
                case JEMALLOC_FFM -> new NativeStore(Allocator.JEMALLOC_FFM.open(), () -> -1);
                case MIMALLOC_FFM -> new NativeStore(Allocator.MIMALLOC_FFM.open(),
                        NativeMallocPeer.Mimalloc::committedBytes);
                case HANDLES_ON_MALLOC -> new HandleTableStore(new NativeStore(Allocator.MALLOC_FFM.open(),
                        ChurnTarget.GlibcMallinfo::committedBytes));
                case JAVA_HEAP -> new JavaHeapStore();
            };
        }
    }

    @Param({"COMPACTING", "COMPACTING_NO_KAPPA", "SPANHEAP", "MALLOC_FFM", "JEMALLOC_FFM", "MIMALLOC_FFM"})
    public Store store;

    /** Entries of the index, each holding one value. */
    @Param("16384")
    public int keys;

    /** Operations that read, in percent (the rest replace): 100 and 0 time each kind alone. */
    @Param("75")
    public int readPercent;

    // The index: entry k is (refs[k], segments[k], sizes[k]), guarded by locks[k & SHARD_MASK].
    private ReentrantLock[] locks;
    private long[] refs;
    private MemorySegment[] segments;
    private int[] sizes;

    private ValueStore valueStore;
    private long maxValueSize;
    private Arena sourceArena;
    /** Random bytes; every new value is a copy of its first {@code size} bytes. */
    private MemorySegment source;
    private final LongAdder liveBytes = new LongAdder();
    private final LongAdder rejected = new LongAdder();
    /** Where the size phases count from. */
    private long startNanos;

    @Setup(Level.Trial)
    public void open() {
        if (keys <= 0) {
            throw new IllegalArgumentException("keys must be positive: " + keys);
        }
        valueStore = store.open();
        maxValueSize = valueStore.maxValueSize();
        sourceArena = Arena.ofShared();
        source = sourceArena.allocate(BIG_MAX, Long.BYTES);
        SplittableRandom random = new SplittableRandom(SEED);
        for (long offset = 0; offset < BIG_MAX; offset += Long.BYTES) {
            source.set(ValueLayout.JAVA_LONG, offset, random.nextLong());
        }
        locks = new ReentrantLock[SHARDS];
        for (int i = 0; i < SHARDS; i++) {
            locks[i] = new ReentrantLock();
        }
        refs = new long[keys];
        segments = new MemorySegment[keys];
        sizes = new int[keys];
        NewValue value = new NewValue();
        for (int key = 0; key < keys; key++) {
            int size = nextSize(random, 0);
            while (size > maxValueSize) { // every key needs a value: draw again, but count it
                rejected.increment();
                size = nextSize(random, 0);
            }
            valueStore.allocate(source, size, value);
            refs[key] = value.ref;
            segments[key] = value.segment;
            sizes[key] = size;
            liveBytes.add(size);
        }
        startNanos = System.nanoTime();
    }

    /** Per-thread state: the random stream and the holder of the value being put. */
    @State(Scope.Thread)
    public static class ThreadState {
        SplittableRandom random;
        final NewValue newValue = new NewValue();

        @Setup(Level.Trial)
        public void seed(ThreadParams params) {
            seedFor(params.getThreadIndex());
        }

        void seedFor(int threadIndex) {
            random = new SplittableRandom(SEED + 1 + threadIndex);
        }
    }

    @Benchmark
    public long op(ThreadState thread) {
        SplittableRandom random = thread.random;
        int key = random.nextInt(keys);
        if (random.nextInt(100) < readPercent) {
            return read(key);
        }
        return replace(key, nextSize(random, System.nanoTime() - startNanos), thread.newValue);
    }

    private long read(int key) {
        ReentrantLock lock = locks[key & SHARD_MASK];
        lock.lock();
        try {
            return valueStore.readEnds(refs[key], segments[key], sizes[key]);
        } finally {
            lock.unlock();
        }
    }

    private long replace(int key, int size, NewValue value) {
        if (size > maxValueSize) {
            rejected.increment();
            return 0;
        }
        valueStore.allocate(source, size, value); // outside the lock, as a cache would
        long oldRef;
        MemorySegment oldSegment;
        int oldSize;
        ReentrantLock lock = locks[key & SHARD_MASK];
        lock.lock();
        try {
            oldRef = refs[key];
            oldSegment = segments[key];
            oldSize = sizes[key];
            refs[key] = value.ref;
            segments[key] = value.segment;
            sizes[key] = size;
        } finally {
            lock.unlock();
        }
        liveBytes.add(size - oldSize);
        // Unreachable now (readers hold the lock while they read), so free outside the lock.
        valueStore.free(oldRef, oldSegment, oldSize);
        return oldRef;
    }

    /** A new value's size, for {@code elapsedNanos} since the start of the size phases. */
    static int nextSize(SplittableRandom random, long elapsedNanos) {
        if (random.nextInt(BIG_ONE_IN) == 0) {
            return random.nextInt(BIG_MIN, BIG_MAX + 1);
        }
        boolean largePhase = ((elapsedNanos / PHASE_NANOS) & 1) != 0;
        return largePhase ? random.nextInt(LARGE_MIN, LARGE_MAX + 1) : random.nextInt(SMALL_MIN, SMALL_MAX + 1);
    }

    @TearDown(Level.Trial)
    public void close() {
        System.out.println();
        System.out.println("  " + memoryLine());
        int wrong = 0;
        for (int key = 0; key < keys; key++) {
            // A cheap check that the store kept what was written (moves included): the ends.
            if (valueStore.readEnds(refs[key], segments[key], sizes[key]) != expectedEnds(sizes[key])) {
                wrong++;
            }
            valueStore.free(refs[key], segments[key], sizes[key]);
            segments[key] = null;
        }
        liveBytes.reset();
        valueStore.close();
        sourceArena.close();
        if (wrong != 0) {
            throw new IllegalStateException(store + ": " + wrong + " of " + keys + " values do not hold what was written");
        }
    }

    /** What {@link ValueStore#readEnds} returns for an intact value of {@code size} bytes. */
    private long expectedEnds(int size) {
        return ends(source, size);
    }

    /** The sum of the first and the last 8 bytes of {@code s}'s first {@code size} bytes ({@code size >= 8}). */
    static long ends(MemorySegment s, int size) {
        return s.get(ValueLayout.JAVA_LONG_UNALIGNED, 0) + s.get(ValueLayout.JAVA_LONG_UNALIGNED, size - 8);
    }

    /** Live, committed, RSS and rejected values, as the trial's teardown prints them. */
    String memoryLine() {
        long live = liveBytes.sum();
        long committed = valueStore.committedBytes();
        return String.format(Locale.ROOT, "cache churn %s: live %.1f MiB, committed %s, RSS %.1f MiB,"
                + " rejected %d values (%s)%s", store, mib(live),
                committed < 0 ? "n/a" : String.format(Locale.ROOT, "%.1f MiB (%.2f x live)", mib(committed),
                        (double) committed / live),
                mib(CompactChurnBenchmark.rssBytes()), rejected.sum(),
                maxValueSize == Long.MAX_VALUE ? "no size limit" : "limit " + maxValueSize + " B",
                valueStore.notes());
    }

    static double mib(long bytes) {
        return bytes / (double) (1 << 20);
    }

    /** The value a thread is putting: what the store returned for it. */
    static final class NewValue {
        /** Handle or address. */
        long ref;
        /** The segment, for stores whose free takes it; else null. */
        MemorySegment segment;
    }

    /**
     * What the churn does with a store, the same calls for every store. A value is named by its
     * reference, its segment (null for stores that do not need it) and its size, all of which the
     * index keeps. Thread-safe; a value may be freed by any thread.
     */
    interface ValueStore extends AutoCloseable {

        /** Largest value the store accepts, in bytes. */
        long maxValueSize();

        /** Allocates a value of {@code size} bytes holding the first {@code size} bytes of {@code source}. */
        void allocate(MemorySegment source, int size, NewValue value);

        /** Returns the sum of the value's first and last 8 bytes ({@code size >= 8}). */
        long readEnds(long ref, MemorySegment segment, int size);

        void free(long ref, MemorySegment segment, int size);

        /** Bytes the store holds from the OS by its own statistics, or -1 if it has none. */
        long committedBytes();

        /** Of those, the bytes in RAM as the OS says, or -1 if the store cannot tell. */
        default long residentBytes() {
            return -1;
        }

        /** Extra figures for the report line, starting with ", ", or empty. */
        default String notes() {
            return "";
        }

        @Override
        void close();
    }

    /** {@link CompactingHeap} with its defaults, compacted every 250 ms by a thread of its own. */
    static final class CompactingStore implements ValueStore {
        private final CompactingHeap heap;
        private final Thread compactor;
        private volatile boolean stopping;
        private volatile Throwable compactorFailure;
        private volatile long compactCalls;

        CompactingStore(CompactingHeap heap) {
            this.heap = heap;
            compactor = Thread.ofPlatform().daemon().name("cache-churn-compact").unstarted(this::compactPeriodically);
            compactor.start();
        }

        private void compactPeriodically() {
            try {
                while (!stopping) {
                    Thread.sleep(COMPACT_EVERY_MILLIS);
                    heap.compact();
                    compactCalls++; // one writer
                }
            } catch (InterruptedException e) {
                // close() stops us
            } catch (Throwable t) {
                compactorFailure = t;
            }
        }

        @Override
        public long maxValueSize() {
            return heap.maxObjectSize();
        }

        @Override
        public void allocate(MemorySegment source, int size, NewValue value) {
            value.ref = allocateCopy(source, size);
            value.segment = null;
        }

        /** A new object holding the first {@code size} bytes of {@code source}, not zeroed first. */
        private long allocateCopy(MemorySegment source, int size) {
            return heap.allocateFrom(source.asSlice(0, size));
        }

        @Override
        public long readEnds(long handle, MemorySegment unused, int size) {
            MemorySegment s = heap.readOnlySegment(handle); // as a cache reads: never waits for a move
            try {
                return ends(s, size);
            } catch (IllegalStateException e) {
                return readEndsAgain(handle, size, s.scope(), e); // the scope: see CompactingHeap.read
            }
        }

        /** Out of line: a compaction closed the segment's epoch; resolve again until a read completes. */
        private long readEndsAgain(long handle, int size, MemorySegment.Scope scope, IllegalStateException e) {
            for (;;) {
                if (scope.isAlive()) {
                    throw e; // not an epoch change
                }
                MemorySegment s = heap.readOnlySegment(handle);
                scope = s.scope();
                try {
                    return ends(s, size);
                } catch (IllegalStateException again) {
                    e = again;
                }
            }
        }

        @Override
        public void free(long handle, MemorySegment unused, int size) {
            heap.free(handle);
        }

        @Override
        public long committedBytes() {
            CompactingHeapStats s = heap.stats();
            if (TRACE) {
                System.err.printf(Locale.ROOT, "    heap: live %.1f blocks %.1f committed %.1f (pages %d, large %.1f)"
                        + " holes %.1f pending %.1f MiB, not-full pages per class %s%n", mib(s.liveBytes()),
                        mib(s.blockBytes()), mib(s.committedBytes()), s.pages(), mib(s.largeBytes()),
                        mib(s.sizeClassFragmentationBytes()), mib(s.pendingReclaimBytes()),
                        Arrays.toString(s.notFullPages()));
            }
            return s.committedBytes();
        }

        @Override
        public long residentBytes() {
            return heap.residentBytes();
        }

        @Override
        public String notes() {
            CompactingHeapStats s = heap.stats();
            return String.format(Locale.ROOT, ", compact() calls %d, moved %.1f MiB, large objects %d, epochs %d"
                    + " (longest close %.2f ms), resident %.1f MiB", compactCalls, mib(s.movedBytes()), s.largeObjects(),
                    s.epochs(), s.maxEpochCloseNanos() / 1e6, mib(heap.residentBytes()));
        }

        @Override
        public void close() {
            stopping = true;
            compactor.interrupt();
            try {
                compactor.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            heap.close();
            if (compactorFailure != null) {
                throw new IllegalStateException("compact() failed", compactorFailure);
            }
        }
    }

    /** {@link SpanHeap}: uninitialized blocks; the index keeps the segment for {@code free}. */
    static final class SpanHeapStore implements ValueStore {
        private final SpanHeapPeer peer;

        SpanHeapStore(SpanHeapPeer peer) {
            this.peer = peer;
        }

        @Override
        public long maxValueSize() {
            return Long.MAX_VALUE;
        }

        @Override
        public void allocate(MemorySegment source, int size, NewValue value) {
            MemorySegment block = (MemorySegment) peer.allocate(size);
            MemorySegment.copy(source, 0, block, 0, size);
            value.ref = block.address();
            value.segment = block;
        }

        @Override
        public long readEnds(long unused, MemorySegment block, int size) {
            return ends(block, size);
        }

        @Override
        public void free(long unused, MemorySegment block, int size) {
            peer.free(block);
        }

        @Override
        public long committedBytes() {
            return peer.committedBytes();
        }

        @Override
        public String notes() {
            HeapStats s = peer.stats();
            return String.format(Locale.ROOT, ", heap's own: live %.1f MiB, cached in threads %.1f MiB, resident %.1f MiB,"
                    + " large %.1f MiB (%d), spans hot/floating/reusable/free %d/%d/%d/%d", mib(s.liveBytes()),
                    mib(s.cachedBytes()), mib(s.residentBytes()), mib(s.largeBytes()), s.largeCount(), s.spansHot(),
                    s.spansFloating(), s.spansReusable(), s.spansFree());
        }

        @Override
        public void close() {
            peer.close();
        }
    }

    /**
     * {@link NativeStore}'s blocks behind a handle table (see {@link Store#HANDLES_ON_MALLOC}):
     * per entry a state word (generation, live bit, size) and the address, in one {@code long[]};
     * a handle is generation and index. Allocation publishes the entry with a release store, a
     * read checks the state (acquire) before it follows the address, a free retires the entry by
     * CAS and keeps its index in the freeing thread's stack for its next allocation.
     */
    static final class HandleTableStore implements ValueStore {
        private static final VarHandle WORDS = MethodHandles.arrayElementVarHandle(long[].class);
        /** State word: generation (20 bits) at 42, then this bit, then the size below 42. */
        private static final long LIVE = 1L << 62;
        private static final int GENERATION_SHIFT = 42;
        private static final long GENERATION_MASK = (1L << 20) - 1;
        private static final int MAX_ENTRIES = 1 << 22;

        private final NativeStore blocks;
        private final long[] words = new long[2 * MAX_ENTRIES];
        private final AtomicInteger fresh = new AtomicInteger(1);
        private final ThreadLocal<int[]> freeIndices = ThreadLocal.withInitial(() -> new int[1]);

        HandleTableStore(NativeStore blocks) {
            this.blocks = blocks;
        }

        @Override
        public long maxValueSize() {
            return blocks.maxValueSize();
        }

        @Override
        public void allocate(MemorySegment source, int size, NewValue value) {
            blocks.allocate(source, size, value);
            long address = value.ref;
            int[] stack = freeIndices.get();
            int i = stack[0] > 0 ? stack[stack[0]--] : fresh.getAndIncrement();
            if (i >= MAX_ENTRIES) {
                throw new IllegalStateException("handle table full");
            }
            long generation = generationOf(words[2 * i]);
            words[2 * i + 1] = address;
            WORDS.setRelease(words, 2 * i, generation << GENERATION_SHIFT | LIVE | size);
            value.ref = generation << 32 | i;
        }

        @Override
        public long readEnds(long handle, MemorySegment unused, int size) {
            int i = (int) handle;
            long state = (long) WORDS.getAcquire(words, 2 * i);
            if (!names(state, handle)) {
                throw new IllegalStateException("stale handle " + Long.toHexString(handle));
            }
            return blocks.readEnds(words[2 * i + 1], null, size);
        }

        @Override
        public void free(long handle, MemorySegment unused, int size) {
            int i = (int) handle;
            long state = (long) WORDS.getAcquire(words, 2 * i);
            long dead = ((generationOf(state) + 1) & GENERATION_MASK) << GENERATION_SHIFT;
            if (!names(state, handle) || !WORDS.compareAndSet(words, 2 * i, state, dead)) {
                throw new IllegalStateException("stale handle " + Long.toHexString(handle));
            }
            blocks.free(words[2 * i + 1], null, size);
            int[] stack = freeIndices.get();
            if (stack[0] + 1 == stack.length) {
                stack = Arrays.copyOf(stack, stack.length * 2);
                freeIndices.set(stack);
            }
            stack[++stack[0]] = i;
        }

        private static long generationOf(long state) {
            return (state >>> GENERATION_SHIFT) & GENERATION_MASK;
        }

        /** Whether {@code state} is live with the generation {@code handle} carries. */
        private static boolean names(long state, long handle) {
            return (state & LIVE) != 0 && generationOf(state) == handle >>> 32;
        }

        @Override
        public long committedBytes() {
            return blocks.committedBytes();
        }

        @Override
        public void close() {
            blocks.close();
        }
    }

    /** A C allocator through FFM downcalls; the index keeps the address. */
    @SuppressWarnings("restricted") // reads at raw addresses are what a user of malloc does
    static final class NativeStore implements ValueStore {
        /** All of memory, to read a value at its address without building a segment per read. */
        private static final MemorySegment ALL_MEMORY = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

        private final Peer peer;
        private final LongSupplier committed;

        NativeStore(Peer peer, LongSupplier committed) {
            this.peer = peer;
            this.committed = committed;
        }

        @Override
        public long maxValueSize() {
            return Long.MAX_VALUE;
        }

        @Override
        public void allocate(MemorySegment source, int size, NewValue value) {
            MemorySegment block = peer.segment(peer.allocate(size));
            MemorySegment.copy(source, 0, block, 0, size);
            value.ref = block.address();
            value.segment = null;
        }

        @Override
        public long readEnds(long address, MemorySegment unused, int size) {
            return ALL_MEMORY.get(ValueLayout.JAVA_LONG_UNALIGNED, address)
                    + ALL_MEMORY.get(ValueLayout.JAVA_LONG_UNALIGNED, address + size - 8);
        }

        @Override
        public void free(long address, MemorySegment unused, int size) {
            peer.free(MemorySegment.ofAddress(address));
        }

        @Override
        public long committedBytes() {
            return committed.getAsLong();
        }

        @Override
        public void close() {
            peer.close();
        }
    }

    /** Values as {@code byte[]}, viewed through heap segments; "free" drops the array. */
    static final class JavaHeapStore implements ValueStore {

        @Override
        public long maxValueSize() {
            return Integer.MAX_VALUE - 8;
        }

        @Override
        public void allocate(MemorySegment source, int size, NewValue value) {
            MemorySegment block = MemorySegment.ofArray(new byte[size]);
            MemorySegment.copy(source, 0, block, 0, size);
            value.ref = 0;
            value.segment = block;
        }

        @Override
        public long readEnds(long unused, MemorySegment segment, int size) {
            return ends(segment, size);
        }

        @Override
        public void free(long unused, MemorySegment segment, int size) {
            // the index drops its reference; the GC reclaims the array
        }

        @Override
        public long committedBytes() {
            return -1;
        }

        @Override
        public void close() {
        }
    }

    /** Memory mode: a sample slower than this says so (the store's stats may wait on its work). */
    static final long SLOW_SAMPLE_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

    /** Keeps the memory mode's reads from being optimised away. */
    static volatile long sink;

    /**
     * {@code -Dbench.heap=trace}: the memory mode prints the compacting heap's {@code stats()}
     * with every sample (live, block, committed and large bytes, pages, holes, limbo, not-full
     * pages per class), to split committed/live into its parts
     * (docs/benchmarks/compacting/measurements.md, "What the churn's committed memory is made of").
     */
    static final boolean TRACE = "trace".equals(System.getProperty("bench.heap"));

    /**
     * Memory mode: the churn on one store for {@code --seconds} with {@code --threads} threads,
     * sampled every 250 ms (see the class comment). Options: {@code --store}, {@code --seconds},
     * {@code --threads}, {@code --keys}, {@code --resident}, {@code --help}.
     */
    public static void main(String[] args) throws Exception {
        CommandLine cli = new CommandLine(CacheChurnBenchmark.class,
                "Memory mode of CacheChurnBenchmark: the cache churn on one store, sampled every 250 ms.");
        OptionSpec<Store> storeOption = cli.parser().accepts("store", "the store: COMPACTING, SPANHEAP, MALLOC_FFM,"
                + " JEMALLOC_FFM, MIMALLOC_FFM, HANDLES_ON_MALLOC (the floor of a store of handles)")
                .withRequiredArg().describedAs("STORE").ofType(Store.class)
                .defaultsTo(Store.COMPACTING);
        OptionSpec<Double> secondsOption = cli.parser().accepts("seconds", "how long the churn runs")
                .withRequiredArg().describedAs("S").ofType(Double.class).defaultsTo(10.0);
        OptionSpec<Integer> threadsOption = cli.parser().accepts("threads", "churning threads")
                .withRequiredArg().describedAs("N").ofType(Integer.class).defaultsTo(2);
        OptionSpec<Integer> keysOption = cli.parser().accepts("keys", "entries of the index")
                .withRequiredArg().describedAs("N").ofType(Integer.class).defaultsTo(16384);
        OptionSpec<Integer> readOption = cli.parser().accepts("read-percent", "operations that read, in percent;"
                + " the rest replace").withRequiredArg().describedAs("P").ofType(Integer.class).defaultsTo(75);
        OptionSpec<Void> residentOption = cli.parser().accepts("resident", "also ask the OS, at every sample, how"
                + " much of the store's memory is resident (CompactingHeap.residentBytes(): mincore; COMPACTING only)");
        OptionSpec<Void> lazyFreeOption = cli.parser().accepts("lazy-free", "also read, at every sample, the"
                + " process's LazyFree bytes (/proc/self/smaps_rollup: pages given back with MADV_FREE that the kernel"
                + " has not taken) and report the RSS growth without them");
        OptionSet options = cli.parse(args);
        Store store = options.valueOf(storeOption);
        double seconds = options.valueOf(secondsOption);
        int threads = options.valueOf(threadsOption);
        int keys = options.valueOf(keysOption);
        cli.check(seconds > 0, "--seconds must be positive: " + seconds);
        cli.check(threads > 0, "--threads must be positive: " + threads);
        cli.check(keys > 0, "--keys must be positive: " + keys);
        int readPercent = options.valueOf(readOption);
        cli.check(readPercent >= 0 && readPercent <= 100, "--read-percent must be in [0, 100]: " + readPercent);
        try {
            store.open().close(); // fails early, before the run's header, where a library does not load
        } catch (UnsupportedOperationException | LinkageError e) {
            System.err.println(store + " is not available here: " + e.getMessage());
            System.exit(MemoryChurn.EXIT_UNAVAILABLE);
        }
        runMemoryMode(store, seconds, threads, keys, readPercent, options.has(residentOption),
                options.has(lazyFreeOption));
    }

    static void runMemoryMode(Store store, double seconds, int threads, int keys, int readPercent, boolean sampleResident,
            boolean sampleLazyFree) throws InterruptedException {
        boolean heapFixed = ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                .anyMatch(a -> a.startsWith("-Xms"));
        System.gc();
        long rssAtStart = CompactChurnBenchmark.rssBytes();
        System.out.printf(Locale.ROOT, "cache churn memory mode: store %s, %d threads, %d keys, %d%% reads, %.1f s on"
                + " Java %s; RSS at start %.1f MiB%n", store, threads, keys, readPercent, seconds, Runtime.version(),
                mib(rssAtStart));
        if (!heapFixed) {
            System.out.println("  (Java heap not fixed: RSS growth includes the Java heap's; run with"
                    + " -Xms512m -Xmx512m -XX:+AlwaysPreTouch)");
        }
        CacheChurnBenchmark bench = new CacheChurnBenchmark();
        bench.store = store;
        bench.keys = keys;
        bench.readPercent = readPercent;
        bench.open();

        LongAdder ops = new LongAdder();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> workers = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            ThreadState state = new ThreadState();
            state.seedFor(i);
            Thread worker = Thread.ofPlatform().daemon().name("cache-churn-" + i).unstarted(() -> {
                try {
                    long sum = 0;
                    while (!stop.get()) {
                        for (int n = 0; n < 1024; n++) {
                            sum += bench.op(state);
                        }
                        ops.add(1024);
                    }
                    sink = sum;
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            });
            workers.add(worker);
        }
        long start = System.nanoTime();
        workers.forEach(Thread::start);

        long end = start + (long) (seconds * 1e9);
        long sampleEvery = TimeUnit.MILLISECONDS.toNanos(250);
        long next = start + sampleEvery;
        double maxLive = 0;
        double maxCommitted = -1;
        double maxCommittedPerLive = -1;
        double maxRss = 0;
        double maxGrowthPerLive = 0;
        double maxResidentPerLive = -1;
        double maxResidentGrowthPerLive = -1;
        double maxGrowthWithoutLazyPerLive = -1;
        long maxLazyFree = -1;
        long longestSampleNanos = 0;
        while (next <= end && failure.get() == null) {
            long wait = next - System.nanoTime();
            if (wait > 0) {
                TimeUnit.NANOSECONDS.sleep(wait);
            }
            long sampleStart = System.nanoTime();
            // Live right after committed: a store's stats() may wait, and live moves meanwhile.
            long committed = bench.valueStore.committedBytes();
            long live = bench.liveBytes.sum();
            long rss = CompactChurnBenchmark.rssBytes();
            long resident = sampleResident ? bench.valueStore.residentBytes() : -1;
            long lazyFree = sampleLazyFree ? CompactChurnBenchmark.lazyFreeBytes() : -1;
            long sampleNanos = System.nanoTime() - sampleStart;
            longestSampleNanos = Math.max(longestSampleNanos, sampleNanos);
            double growthPerLive = (double) (rss - rssAtStart) / live;
            System.out.printf(Locale.ROOT, "  %6.2f s  ops %,12d  live %8.1f MiB  committed %s  RSS %8.1f MiB"
                    + "  RSS growth/live %5.2f%s%n", (System.nanoTime() - start) / 1e9, ops.sum(), mib(live),
                    committed < 0 ? "     n/a                    "
                            : String.format(Locale.ROOT, "%8.1f MiB  committed/live %5.2f", mib(committed),
                                    (double) committed / live), mib(rss), growthPerLive,
                    (resident < 0 ? "" : String.format(Locale.ROOT, "  resident %8.1f MiB  resident/live %5.2f",
                            mib(resident), (double) resident / live))
                    + (lazyFree < 0 ? "" : String.format(Locale.ROOT, "  LazyFree %6.1f MiB  without it %5.2f",
                            mib(lazyFree), (double) (rss - lazyFree - rssAtStart) / live))
                    + (sampleNanos > SLOW_SAMPLE_NANOS ? String.format(Locale.ROOT, "  (sample took %.0f ms)",
                            sampleNanos / 1e6) : ""));
            maxLive = Math.max(maxLive, mib(live));
            if (committed >= 0) {
                maxCommitted = Math.max(maxCommitted, mib(committed));
                maxCommittedPerLive = Math.max(maxCommittedPerLive, (double) committed / live);
            }
            maxRss = Math.max(maxRss, mib(rss));
            if (resident >= 0) {
                maxResidentPerLive = Math.max(maxResidentPerLive, (double) resident / live);
                // what the process's RSS grew by beyond the store's own resident memory: the JVM's
                maxResidentGrowthPerLive = Math.max(maxResidentGrowthPerLive, (double) (rss - rssAtStart - resident) / live);
            }
            maxGrowthPerLive = Math.max(maxGrowthPerLive, growthPerLive);
            if (lazyFree >= 0) {
                maxLazyFree = Math.max(maxLazyFree, lazyFree);
                maxGrowthWithoutLazyPerLive = Math.max(maxGrowthWithoutLazyPerLive,
                        (double) (rss - lazyFree - rssAtStart) / live);
            }
            do { // a late sample (the sampler was starved, or a store's stats waited) skips the missed ticks
                next += sampleEvery;
            } while (next < System.nanoTime());
        }
        stop.set(true);
        for (Thread worker : workers) {
            worker.join();
        }
        double elapsed = (System.nanoTime() - start) / 1e9;
        if (failure.get() != null) {
            throw new IllegalStateException("cache churn on " + store + " failed", failure.get());
        }
        System.out.printf(Locale.ROOT, "max: live %.1f MiB, committed %s, committed/live %s, RSS %.1f MiB,"
                + " RSS growth/live %.2f; %.2f ops/us over %.1f s; longest sample (stats and RSS) %.1f ms%n", maxLive,
                maxCommitted < 0 ? "n/a" : String.format(Locale.ROOT, "%.1f MiB", maxCommitted),
                maxCommittedPerLive < 0 ? "n/a" : String.format(Locale.ROOT, "%.2f", maxCommittedPerLive),
                maxRss, maxGrowthPerLive, ops.sum() / elapsed / 1e6, elapsed, longestSampleNanos / 1e6);
        if (maxResidentPerLive >= 0) {
            System.out.printf(Locale.ROOT, "max resident: the store's resident/live %.2f; RSS growth beyond it/live %.2f%n",
                    maxResidentPerLive, maxResidentGrowthPerLive);
        } else if (sampleResident) {
            System.out.println("max resident: n/a (" + store + " cannot say what of its memory is resident)");
        }
        if (maxLazyFree >= 0) {
            System.out.printf(Locale.ROOT, "max LazyFree %.1f MiB; RSS growth without it/live %.2f%n", mib(maxLazyFree),
                    maxGrowthWithoutLazyPerLive);
        } else if (sampleLazyFree) {
            System.out.println("max LazyFree: n/a (no LazyFree line in /proc/self/smaps_rollup here)");
        }
        bench.close();
    }
}
