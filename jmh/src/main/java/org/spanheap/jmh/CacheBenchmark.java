package org.spanheap.jmh;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

import joptsimple.OptionSet;
import joptsimple.OptionSpec;
import org.openjdk.jmh.annotations.AuxCounters;
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
 * An off-heap cache under a cache's load, against the caches a Java service would use instead
 * ({@link CachePeer.Kind}), all bounded by the same number of bytes (64 MiB by default).
 *
 * <p>One operation: draw a key from a Zipf distribution (exponent {@code zipf}) over
 * {@code keys} keys; with probability {@code writePercent} put a fresh value for it; otherwise
 * get it, and on a miss put a fresh value (cache-aside, as a loader would). A fresh value is a
 * new {@code byte[]} of the key's size (every peer is handed its own array, as from a backend).
 * Sizes: {@code values=100} all 100 B; {@code values=100-8192} one of 64 sizes from 100 B to
 * 8101 B, fixed per key. Key spaces: 1,000,000 keys of 100 B, or 40,000 mixed ones (about twice
 * the bound in data either way). Hits and misses are counted per thread ({@link Counts}), so the
 * hit ratio comes with the throughput.
 *
 * <p>Run: {@code java -jar jmh/target/benchmarks.jar CacheBenchmark -t 2 -prof gc}; threads
 * with {@code -t}. The memory mode ({@link #main}) runs one peer per JVM under phases of shifting
 * value sizes and reports resident memory: see docs/cache.md.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 1, time = 4)
@Measurement(iterations = 2, time = 3)
@Fork(value = 1, jvmArgsPrepend = {"-Xmx2g", "--enable-native-access=ALL-UNNAMED",
        "--add-opens=java.base/java.nio=ALL-UNNAMED", "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED"})
@State(Scope.Benchmark)
public class CacheBenchmark {

    @Param({"SPANHEAP", "OHC", "OHC_TINYLFU", "CAFFEINE_HEAP", "EHCACHE_OFFHEAP"})
    public CachePeer.Kind peer;

    @Param({"0.9", "0.99"})
    public double zipf;

    @Param({"5", "50"})
    public int writePercent;

    @Param({"100", "100-8192"})
    public String values;

    @Param("64")
    public long capacityMiB;

    CachePeer cache;
    int[] sample;
    ValueSizes sizes;

    @Setup(Level.Trial)
    public void open() {
        sizes = ValueSizes.of(values);
        sample = ZipfSample.of(sizes.keys, zipf);
        cache = peer.open(capacityMiB << 20);
    }

    @TearDown(Level.Trial)
    public void close() {
        cache.close();
    }

    /** Per-thread hit and miss counts, reported by JMH beside the throughput. */
    @State(Scope.Thread)
    @AuxCounters(AuxCounters.Type.EVENTS)
    public static class Counts {
        public long hits;
        public long misses;
        int position;
        final SplittableRandom random = new SplittableRandom();

        @Setup(Level.Iteration)
        public void reset() {
            hits = 0;
            misses = 0;
            position = random.nextInt(1 << 30);
        }
    }

    @Benchmark
    public byte[] op(Counts c) {
        long key = ZipfSample.key(sample[c.position++ & (sample.length - 1)]);
        if (c.random.nextInt(100) < writePercent) {
            cache.put(key, sizes.fresh(key));
            return null;
        }
        byte[] v = cache.get(key);
        if (v == null) {
            c.misses++;
            cache.put(key, sizes.fresh(key));
        } else {
            c.hits++;
        }
        return v;
    }

    /** Value sizes per key, and the key space that goes with them. */
    record ValueSizes(int keys, int[] sizeOfClass, byte[] template) {
        static ValueSizes of(String spec) {
            return switch (spec) {
                case "100" -> new ValueSizes(1_000_000, new int[] {100}, new byte[100]);
                case "100-8192" -> {
                    int[] s = new int[64];
                    for (int i = 0; i < 64; i++) {
                        s[i] = 100 + i * 127;
                    }
                    yield new ValueSizes(40_000, s, new byte[8192]);
                }
                default -> throw new IllegalArgumentException("values: 100 or 100-8192, not " + spec);
            };
        }

        int size(long key) {
            return sizeOfClass[(int) ((key >>> 40) % sizeOfClass.length)];
        }

        byte[] fresh(long key) {
            return Arrays.copyOf(template, size(key));
        }
    }

    /** A table of 2^21 Zipf-distributed key ranks, made once per key space and exponent. */
    static final class ZipfSample {
        private static final ConcurrentHashMap<String, int[]> MADE = new ConcurrentHashMap<>();

        static int[] of(int keys, double exponent) {
            return MADE.computeIfAbsent(keys + "/" + exponent, k -> make(keys, exponent));
        }

        /** Rank to key: a bijection that spreads popular ranks over the key space's bits. */
        static long key(int rank) {
            return (rank + 1L) * 0x9E3779B97F4A7C15L;
        }

        private static int[] make(int keys, double exponent) {
            double[] cdf = new double[keys];
            double sum = 0;
            for (int i = 0; i < keys; i++) {
                sum += 1.0 / Math.pow(i + 1, exponent);
                cdf[i] = sum;
            }
            SplittableRandom r = new SplittableRandom(12345);
            int[] out = new int[1 << 21];
            for (int j = 0; j < out.length; j++) {
                int at = Arrays.binarySearch(cdf, r.nextDouble() * sum);
                out[j] = at >= 0 ? at : Math.min(keys - 1, -at - 1);
            }
            return out;
        }
    }

    // ---- memory mode: resident memory under shifting value sizes ------------

    /**
     * Memory mode: one peer in this JVM, {@code --threads} threads doing the benchmark's
     * operation (Zipf 0.9, 5% writes) for {@code --seconds}, while value sizes shift every
     * {@code --phase-seconds}: 100 B..1 KiB, then 4..16 KiB, and back. Prints the resident
     * memory (VmRSS) before the cache is made, its peak and end during the run, what the Java
     * heap holds after a full collection at the end (the on-heap index, or on-heap values), and
     * the throughput and hit ratio. Run it with a fixed, pre-touched Java heap
     * ({@code -Xms512m -Xmx512m -XX:+AlwaysPreTouch}) so that RSS growth is memory outside it.
     *
     * <p>Before the measured run, the same load runs for {@code --warmup-seconds} on another
     * instance of the peer, which is then closed; a full collection and glibc's
     * {@code malloc_trim(0)} (where the C library has it) follow, and only then is the RSS
     * before taken. The RSS growth is then the measured cache's, not the JIT compiler's: without
     * the warm-up the JVM's own growth (compiled code and the compiler's freed working memory,
     * which glibc keeps) came on top of every peer's and varied by 15 to 38 MiB between runs of
     * one peer (docs/cache.md). {@code --warmup-seconds 0} measures from a cold JVM.
     *
     * @param args {@code --peer KIND --seconds N --threads N --phase-seconds N --capacity-mib N
     *             --warmup-seconds N}
     * @throws Exception if a thread fails
     */
    public static void main(String[] args) throws Exception {
        CommandLine cli = new CommandLine(CacheBenchmark.class, "Memory mode of CacheBenchmark: one cache peer"
                + " under the benchmark's load while value sizes shift; prints its resident memory and throughput.");
        OptionSpec<CachePeer.Kind> peerOpt = cli.parser().accepts("peer", "the cache: "
                + Arrays.toString(CachePeer.Kind.values())).withRequiredArg().describedAs("KIND")
                .ofType(CachePeer.Kind.class).required();
        OptionSpec<Integer> secondsOpt = cli.parser().accepts("seconds", "how long the load runs").withRequiredArg()
                .describedAs("S").ofType(Integer.class).defaultsTo(30);
        OptionSpec<Integer> threadsOpt = cli.parser().accepts("threads", "threads doing the operation")
                .withRequiredArg().describedAs("N").ofType(Integer.class).defaultsTo(2);
        OptionSpec<Integer> phaseOpt = cli.parser().accepts("phase-seconds", "length of a value-size phase")
                .withRequiredArg().describedAs("S").ofType(Integer.class).defaultsTo(5);
        OptionSpec<Long> capOpt = cli.parser().accepts("capacity-mib", "the cache's capacity").withRequiredArg()
                .describedAs("MIB").ofType(Long.class).defaultsTo(64L);
        OptionSpec<Integer> warmupOpt = cli.parser().accepts("warmup-seconds", "the same load on a throwaway"
                + " instance first, so that the JIT's memory is in the RSS before").withRequiredArg().describedAs("S")
                .ofType(Integer.class).defaultsTo(8);
        OptionSpec<Void> verboseOpt = cli.parser().accepts("verbose",
                "print the RSS and the peer's own figures every 250 ms");
        OptionSet o = cli.parse(args);
        CachePeer.Kind kind = o.valueOf(peerOpt);
        boolean verbose = o.has(verboseOpt);
        int seconds = o.valueOf(secondsOpt);
        int threads = o.valueOf(threadsOpt);
        int phaseSeconds = o.valueOf(phaseOpt);
        long capacityMib = o.valueOf(capOpt);
        int warmupSeconds = o.valueOf(warmupOpt);
        cli.check(seconds > 0, "--seconds must be positive: " + seconds);
        cli.check(threads > 0, "--threads must be positive: " + threads);
        cli.check(phaseSeconds > 0, "--phase-seconds must be positive: " + phaseSeconds);
        cli.check(capacityMib > 0 && capacityMib < 1L << 20, "--capacity-mib must be 1 to 1048575: " + capacityMib);
        cli.check(warmupSeconds >= 0, "--warmup-seconds must be 0 or more: " + warmupSeconds);
        long capacity = capacityMib << 20;
        long phaseNanos = TimeUnit.SECONDS.toNanos(phaseSeconds);

        if (warmupSeconds > 0) {
            CachePeer throwaway = kind.open(capacity);
            Load warm = new Load(throwaway, phaseNanos, TimeUnit.SECONDS.toNanos(warmupSeconds));
            warm.start(threads);
            warm.join();
            throwaway.close();
            if (warm.failed.get()) {
                System.exit(1); // the stack trace is printed: a wrong value or a failed call in the warm-up
            }
        }
        long heapBefore = heapLiveBytes(); // the full GC first: it lets direct buffers' memory go back to the C heap
        MallocTrim.run();
        long rssBefore = rss();
        CachePeer cache = kind.open(capacity);
        Load load = new Load(cache, phaseNanos, TimeUnit.SECONDS.toNanos(seconds));
        load.start(threads);
        long peak = 0;
        StringBuilder trace = new StringBuilder();
        while (System.nanoTime() < load.end) {
            Thread.sleep(250);
            long rss = rss();
            peak = Math.max(peak, rss);
            trace.append(String.format(Locale.ROOT, "%.2f:%d ", (System.nanoTime() - load.start) / 1e9,
                    (rss - rssBefore) >> 20));
            if (verbose) {
                System.out.printf(Locale.ROOT, "  %.2f s: RSS growth %d MiB %s%n",
                        (System.nanoTime() - load.start) / 1e9, (rss - rssBefore) >> 20, cache.memory());
            }
        }
        load.join();
        long rssEnd = rss();
        long heapHeld = heapLiveBytes() - heapBefore;
        double secs = (System.nanoTime() - load.start) / 1e9;
        long hits = load.hits.sum(), misses = load.misses.sum();
        System.out.printf(Locale.ROOT, "peer %s threads %d seconds %d capacity %d MiB warm-up %d s: %.0f ops/s,"
                        + " hit ratio %.4f, entries %d%n", kind, threads, seconds, capacity >> 20, warmupSeconds,
                load.ops.sum() / secs, (double) hits / (hits + misses), cache.size());
        System.out.printf(Locale.ROOT, "  RSS before %d MiB; growth peak %d MiB (%.2fx the bound), end %d MiB%n",
                rssBefore >> 20, (peak - rssBefore) >> 20, (double) (peak - rssBefore) / capacity,
                (rssEnd - rssBefore) >> 20);
        System.out.printf(Locale.ROOT, "  Java heap held after a full GC: %d MiB; end RSS growth + heap held: %.2fx"
                + " the bound%n", heapHeld >> 20, (double) (rssEnd - rssBefore + heapHeld) / capacity);
        System.out.println("  growth trace (s:MiB): " + trace);
        cache.close();
        if (load.failed.get()) {
            System.exit(1);
        }
    }

    /** The memory mode's load on one cache: threads, counters, and its start and end times. */
    private static final class Load {
        final CachePeer cache;
        final long phaseNanos;
        final long start;
        final long end;
        final LongAdder ops = new LongAdder();
        final LongAdder hits = new LongAdder();
        final LongAdder misses = new LongAdder();
        final AtomicBoolean failed = new AtomicBoolean();
        private final List<Thread> workers = new java.util.ArrayList<>();
        private final int[] sample = ZipfSample.of(100_000, 0.9);
        private final byte[] template = new byte[16 * 1024];

        Load(CachePeer cache, long phaseNanos, long nanos) {
            this.cache = cache;
            this.phaseNanos = phaseNanos;
            this.start = System.nanoTime();
            this.end = start + nanos;
        }

        void start(int threads) {
            for (int t = 0; t < threads; t++) {
                workers.add(Thread.ofPlatform().start(this::work));
            }
        }

        void join() throws InterruptedException {
            for (Thread w : workers) {
                w.join();
            }
        }

        private void work() {
            SplittableRandom r = new SplittableRandom();
            int pos = r.nextInt(1 << 30);
            try {
                long n = 0;
                long now;
                while ((now = System.nanoTime()) < end) {
                    boolean large = ((now - start) / phaseNanos & 1) == 1;
                    for (int i = 0; i < 256; i++) {
                        long key = ZipfSample.key(sample[pos++ & (sample.length - 1)]);
                        // a key's size depends on the phase: each phase brings its own values
                        long h = (key >>> 40) ^ (large ? 0x5555 : 0);
                        int size = large ? 4096 + (int) (h % 12289) : 100 + (int) (h % 925);
                        if (r.nextInt(100) < 5) {
                            cache.put(key ^ (large ? 1 : 0), Arrays.copyOf(template, size));
                        } else if (cache.get(key ^ (large ? 1 : 0)) == null) {
                            misses.increment();
                            cache.put(key ^ (large ? 1 : 0), Arrays.copyOf(template, size));
                        } else {
                            hits.increment();
                        }
                    }
                    n += 256;
                }
                ops.add(n);
            } catch (Throwable e) {
                failed.set(true);
                e.printStackTrace();
            }
        }
    }

    /** glibc's {@code malloc_trim(0)}: gives the C heap's free memory back to the OS; nothing elsewhere. */
    private static final class MallocTrim {
        static void run() {
            java.lang.foreign.Linker linker = java.lang.foreign.Linker.nativeLinker();
            var symbol = linker.defaultLookup().find("malloc_trim");
            if (symbol.isEmpty()) {
                return;
            }
            try {
                int unused = (int) linker.downcallHandle(symbol.get(), java.lang.foreign.FunctionDescriptor.of(
                        java.lang.foreign.ValueLayout.JAVA_INT, java.lang.foreign.ValueLayout.JAVA_LONG))
                        .invokeExact(0L);
            } catch (Throwable t) {
                throw new IllegalStateException("malloc_trim failed", t);
            }
        }
    }

    /** {@return bytes in use on the Java heap after a full collection} */
    private static long heapLiveBytes() {
        for (int i = 0; i < 3; i++) {
            System.gc();
        }
        Runtime r = Runtime.getRuntime();
        return r.totalMemory() - r.freeMemory();
    }

    private static long rss() throws java.io.IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) << 10;
            }
        }
        throw new IllegalStateException("no VmRSS in /proc/self/status");
    }
}
