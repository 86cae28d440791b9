package org.spanheap.jmh;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

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
import org.spanheap.CompactingHeap;
import org.spanheap.CompactingHeapStats;
import org.spanheap.HeapStats;
import org.spanheap.SpanHeap;

/**
 * Churn: fill about {@code megabytes} MiB with objects of 16 B to 4 KiB, free
 * a random 75%, compact. The JMH score is the time of {@code compact()}
 * (single shot); the memory figures (committed/live before and after, and the
 * same workload on a {@link SpanHeap} without compaction), compaction
 * throughput and the longest increment are printed. {@link #main} runs the
 * workload once without JMH:
 * {@code java --enable-native-access=ALL-UNNAMED -cp jmh/target/benchmarks.jar org.spanheap.jmh.CompactChurnBenchmark 1024}.
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 1)
@Measurement(iterations = 3)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED", "-Xmx2g"})
@State(Scope.Benchmark)
public class CompactChurnBenchmark {

    @Param({"256"})
    public int megabytes;

    private SpanHeap spans;
    private CompactingHeap heap;

    @Setup(Level.Iteration)
    public void fillAndFree() {
        spans = SpanHeap.create();
        heap = CompactingHeap.builder().spanHeap(spans).notFullPagesPerClass(CompactingHeap.NOT_FULL_PAGES_UNBOUNDED).build();
        churn(heap, megabytes << 20, 42);
    }

    @Benchmark
    public long compact() {
        return heap.compact();
    }

    @TearDown(Level.Iteration)
    public void report() {
        System.out.println();
        System.out.println("  after compact: " + describe(heap.stats(), spans == null ? null : spans.stats()));
        heap.close();
        spans.close();
    }

    /** Fills to {@code bytes} live bytes, frees a random 75%; returns the surviving handles. */
    static long[] churn(CompactingHeap heap, long bytes, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        long[] hs = new long[(int) (bytes / 1024) + 16];
        int n = 0;
        long live = 0;
        while (live < bytes) {
            long size = 16 + rnd.nextInt(4096 - 16 + 1);
            long h = heap.allocate(size);
            heap.setLong(h, 0, h);
            if (n == hs.length) {
                hs = java.util.Arrays.copyOf(hs, n * 2);
            }
            hs[n++] = h;
            live += size;
        }
        int kept = 0;
        for (int i = 0; i < n; i++) {
            if (rnd.nextInt(4) == 0) {
                hs[kept++] = hs[i];
            } else {
                heap.free(hs[i]);
            }
        }
        return java.util.Arrays.copyOf(hs, kept);
    }

    static String describe(CompactingHeapStats c, HeapStats s) {
        return String.format("live %d MiB, pages %d MiB (committed/live %.3f), %s, RSS %d MiB", c.liveBytes() >> 20,
                c.committedBytes() >> 20, c.committedPerLive(), s == null ? "mmap per page"
                        : String.format("span heap committed %d MiB", s.committedBytes() >> 20), rssBytes() >> 20);
    }

    /** Resident set size of this process, from /proc/self/statm (0 if unreadable). */
    /**
     * {@return the process's pages given back with {@code MADV_FREE} that the kernel has not
     * taken yet (the {@code LazyFree} line of {@code /proc/self/smaps_rollup}), -1 where the file
     * says nothing} They count in the RSS until the kernel needs memory. Reading the file walks
     * every mapping of the process: about a millisecond for a JVM.
     */
    static long lazyFreeBytes() {
        try {
            for (String line : java.nio.file.Files.readAllLines(java.nio.file.Path.of("/proc/self/smaps_rollup"))) {
                if (line.startsWith("LazyFree:")) {
                    return Long.parseLong(line.substring("LazyFree:".length()).replace("kB", "").trim()) * 1024;
                }
            }
        } catch (java.io.IOException | RuntimeException e) {
            // not Linux, or a kernel without the file
        }
        return -1;
    }

    static long rssBytes() {
        try {
            String[] f = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/self/statm")).trim().split(" ");
            return Long.parseLong(f[1]) * 4096;
        } catch (java.io.IOException | RuntimeException e) {
            return 0;
        }
    }

    /** One run without JMH, three heaps one after the other; {@code --fill-mib N} (default 1024), {@code --help}. */
    public static void main(String[] args) {
        CommandLine cli = new CommandLine(CompactChurnBenchmark.class, "The churn once per heap (no compaction,"
                + " kappa 2, mapped pages) without JMH: fill, free 75%, compact(), with times and memory.");
        OptionSpec<Long> fillOpt = cli.parser().accepts("fill-mib", "bytes to allocate in the fill phase")
                .withRequiredArg().describedAs("MIB").ofType(Long.class).defaultsTo(1024L);
        long mib = cli.parse(args).valueOf(fillOpt);
        cli.check(mib > 0 && mib < 1L << 20, "--fill-mib must be 1 to 1048575: " + mib);
        long bytes = mib << 20;
        System.out.printf("RSS at start %d MiB%n", rssBytes() >> 20);
        for (int run = 0; run < 3; run++) {
            int kappa = run == 1 ? 2 : CompactingHeap.NOT_FULL_PAGES_UNBOUNDED;
            boolean mapped = run == 2;
            try (SpanHeap spans = mapped ? null : SpanHeap.create();
                    CompactingHeap heap = mapped ? CompactingHeap.builder().mappedPages().notFullPagesPerClass(kappa).build()
                            : CompactingHeap.builder().spanHeap(spans).notFullPagesPerClass(kappa).build()) {
                long t0 = System.nanoTime();
                long[] kept = churn(heap, bytes, 42);
                long t1 = System.nanoTime();
                String k = (kappa == CompactingHeap.NOT_FULL_PAGES_UNBOUNDED ? "inf" : Integer.toString(kappa))
                        + (mapped ? " (mmap pages)" : " (span heap pages)");
                System.out.printf("kappa=%s fill+free %d ms; before compact(): %s%n", k, (t1 - t0) / 1_000_000,
                        describe(heap.stats(), spans == null ? null : spans.stats()));
                CompactingHeapStats before = heap.stats();
                long t2 = System.nanoTime();
                long moved = heap.compact();
                long t3 = System.nanoTime();
                CompactingHeapStats after = heap.stats();
                long incNanos = after.totalIncrementNanos() - before.totalIncrementNanos();
                System.out.printf("kappa=%s compact(): moved %d MiB in %d ms (%.0f MB/s wall, %.0f MB/s inside"
                        + " increments), %d increments, longest increment %d us, longest epoch close %d us%n", k,
                        moved >> 20, (t3 - t2) / 1_000_000, moved / 1e6 / ((t3 - t2) / 1e9),
                        moved / 1e6 / Math.max(1e-9, incNanos / 1e9), after.compactionIncrements()
                                - before.compactionIncrements(), after.maxIncrementNanos() / 1000,
                        after.maxEpochCloseNanos() / 1000);
                System.out.printf("kappa=%s after compact(): %s%n", k, describe(after, spans == null ? null : spans.stats()));
                for (long h : kept) {
                    if (heap.getLong(h, 0) != h) {
                        throw new AssertionError("object moved wrongly: " + Long.toHexString(h));
                    }
                }
            }
        }
        try (SpanHeap spans = SpanHeap.create()) {
            SplittableRandom rnd = new SplittableRandom(42);
            MemorySegment[] segs = new MemorySegment[(int) (bytes / 1024) + 16];
            long[] sizes = new long[segs.length];
            int n = 0;
            long live = 0;
            while (live < bytes) {
                long size = 16 + rnd.nextInt(4096 - 16 + 1);
                if (n == segs.length) {
                    segs = java.util.Arrays.copyOf(segs, n * 2);
                    sizes = java.util.Arrays.copyOf(sizes, n * 2);
                }
                segs[n] = spans.allocate(size);
                segs[n].set(ValueLayout.JAVA_LONG, 0, n);
                sizes[n++] = size;
                live += size;
            }
            for (int i = 0; i < n; i++) {
                if (rnd.nextInt(4) == 0) {
                    continue;
                }
                spans.free(segs[i]);
                live -= sizes[i];
            }
            spans.flushThreadCache();
            HeapStats s = spans.stats();
            System.out.printf("SpanHeap (no compaction) after the same churn: live %d MiB, committed %d MiB"
                    + " (committed/live %.3f), live by its stats %d MiB, RSS %d MiB%n", live >> 20,
                    s.committedBytes() >> 20, (double) s.committedBytes() / live, s.liveBytes() >> 20,
                    rssBytes() >> 20);
        }
    }
}
