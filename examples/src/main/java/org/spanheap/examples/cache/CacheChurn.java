package org.spanheap.examples.cache;

import org.spanheap.CompactingHeap;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;

/**
 * A churn workload on {@link OffHeapCache}: worker threads get keys drawn from a Zipf-like
 * distribution and put the value on a miss (cache-aside), and also overwrite keys with
 * values of a new size. Value sizes alternate between a "small" phase (min .. 1 KiB) and
 * a "large" phase (1 KiB .. max) so that the size classes in use keep changing: that is
 * what leaves pages half empty in an allocator that cannot move its objects.
 *
 * <p>The same workload runs once per store; each run prints a progress line per second,
 * and {@link #report} prints a table: throughput, hit ratio, live bytes (the cache's
 * entries), the store's committed bytes, and the growth of the process's resident memory
 * ({@code VmRSS} in {@code /proc/self/status}) since the run started.
 */
public final class CacheChurn {

    /** Settings of a run; see {@link #parse(String[])} for the flags. */
    public static final class Options {
        /** Seconds each store runs. */
        public double seconds = 8;
        /** Worker threads. */
        public int threads = 2;
        /** The cache's memory bound in MiB. */
        public long maxMib = 64;
        /** Distinct keys. */
        public int keys = 400_000;
        /** Zipf exponent of the key popularity. */
        public double zipf = 0.9;
        /** Smallest and largest value in bytes. */
        public int minValue = 64;
        /** Largest value in bytes. */
        public int maxValue = 8192;
        /** Seconds per size phase. */
        public double phaseSeconds = 3;
        /** Percent of operations that overwrite a key. */
        public int writePercent = 10;
        /** Shards of the cache index. */
        public int shards = 64;
        /** Which stores to run, in order (see {@link #USAGE}). */
        public List<String> stores = List.of("compacting", "no-compaction", "compacting-mmap", "malloc");
        /** Random seed. */
        public long seed = 42;
        /** kappa of the compacting store (the library's default). */
        public int kappa = 2;
        /** iota (compaction increment) of the compacting stores, KiB (the library's default). */
        public int iotaKib = 256;
        /** Reclaim batch of the compacting stores, KiB (the library's default). */
        public int reclaimKib = 1024;
        /** Milliseconds between full compactions ({@code compact()}) of the compacting store; 0: none. */
        public int compactMs = 1000;
        /** Seconds of an unreported warm-up run (JIT) before the first store. */
        public double warmupSeconds = 1.5;
        /** Print a progress line per second. */
        public boolean progress = true;

        /** Flags accepted by {@link #parse}, for {@code -help}. */
        public static final String USAGE = """
                flags (one or two leading dashes):
                  -seconds S        seconds per store (default 8)
                  -threads N        worker threads (default 2)
                  -max-mib M        the cache's memory bound in MiB (default 64)
                  -keys N           distinct keys (default 400000)
                  -zipf X           Zipf exponent of key popularity (default 0.9)
                  -min-value B      smallest value in bytes (default 64)
                  -max-value B      largest value in bytes (default 8192)
                  -phase-seconds S  seconds per size phase, small then large (default 3)
                  -write-percent P  share of operations that overwrite a key (default 10)
                  -stores LIST      comma-separated, run in this order (default
                                    compacting,no-compaction,compacting-mmap,malloc):
                                    compacting       CompactingHeap with its default page source (a span
                                                     heap of its own), kappa as below, plus compact() every
                                                     -compact-ms
                                    no-compaction    the same with kappa infinite and no compact()
                                    compacting-mmap, no-compaction-mmap: each 64 KiB page its own mmap
                                    malloc           malloc/free per entry
                  -seed N           random seed (default 42)
                  -compact-ms M     a background thread calls compact() on the compacting store every M ms
                                    (default 1000; 0: only the automatic compaction of kappa)
                  -warmup-seconds S unreported warm-up before the first store (default 1.5)
                  -kappa K          not-full pages per size class of the compacting store (default 2)
                  -iota-kib I       compaction increment in KiB (default 256)
                  -reclaim-kib R    freed KiB collected before a round reclaims them (default 1024)
                  -quiet            no progress lines
                """;

        /**
         * Parses flags such as {@code -seconds 30 -threads 4}.
         *
         * @throws IllegalArgumentException on an unknown flag or a bad value
         */
        public static Options parse(String[] args) {
            Options o = new Options();
            for (int i = 0; i < args.length; i++) {
                String flag = args[i].replaceFirst("^--?", "");
                if (flag.equals("quiet")) {
                    o.progress = false;
                    continue;
                }
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("missing value for " + args[i]);
                }
                String v = args[++i];
                switch (flag) {
                    case "seconds" -> o.seconds = Double.parseDouble(v);
                    case "threads" -> o.threads = Integer.parseInt(v);
                    case "max-mib" -> o.maxMib = Long.parseLong(v);
                    case "keys" -> o.keys = Integer.parseInt(v);
                    case "zipf" -> o.zipf = Double.parseDouble(v);
                    case "min-value" -> o.minValue = Integer.parseInt(v);
                    case "max-value" -> o.maxValue = Integer.parseInt(v);
                    case "phase-seconds" -> o.phaseSeconds = Double.parseDouble(v);
                    case "write-percent" -> o.writePercent = Integer.parseInt(v);
                    case "stores" -> o.stores = List.of(v.split(","));
                    case "seed" -> o.seed = Long.parseLong(v);
                    case "shards" -> o.shards = Integer.parseInt(v);
                    case "compact-ms" -> o.compactMs = Integer.parseInt(v);
                    case "warmup-seconds" -> o.warmupSeconds = Double.parseDouble(v);
                    case "kappa" -> o.kappa = Integer.parseInt(v);
                    case "iota-kib" -> o.iotaKib = Integer.parseInt(v);
                    case "reclaim-kib" -> o.reclaimKib = Integer.parseInt(v);
                    default -> throw new IllegalArgumentException("unknown flag " + args[i - 1]);
                }
            }
            if (o.threads < 1 || o.keys < 1 || o.minValue < 16 || o.maxValue < o.minValue || o.maxValue > (1 << 30)
                    || o.seconds <= 0 || o.phaseSeconds <= 0 || o.writePercent < 0 || o.writePercent > 100) {
                throw new IllegalArgumentException("bad settings; " + USAGE);
            }
            if (o.shards < 1 || Integer.bitCount(o.shards) != 1
                    || EntryStore.entryBytes(8, o.maxValue) > (o.maxMib << 20) / o.shards) {
                throw new IllegalArgumentException("-max-mib too small for values of " + o.maxValue + " bytes in "
                        + o.shards + " shards (each shard holds max-mib / shards)");
            }
            return o;
        }
    }

    /** The outcome of one run. */
    public record Result(String store, long ops, double seconds, double hitRatio, long liveBytes, long committedBytes,
            long peakCommittedBytes, long residentBytes, long rssGrowth, long peakRssGrowth, long movedBytes,
            long errors) {
        /** {@return operations per second} */
        public double opsPerSecond() {
            return ops / seconds;
        }
    }

    private final Options options;
    private final PrintStream out;
    private final double[] zipfCdf;

    /** Prepares the workload (the key distribution) for {@code options}. */
    public CacheChurn(Options options, PrintStream out) {
        this(options, out, zipfCdf(options.keys, options.zipf));
    }

    private CacheChurn(Options options, PrintStream out, double[] zipfCdf) {
        this.options = options;
        this.out = out;
        this.zipfCdf = zipfCdf;
    }

    private static double[] zipfCdf(int n, double s) {
        double[] cdf = new double[n];
        double sum = 0;
        for (int i = 0; i < n; i++) {
            sum += 1.0 / Math.pow(i + 1, s);
            cdf[i] = sum;
        }
        for (int i = 0; i < n; i++) {
            cdf[i] /= sum;
        }
        return cdf;
    }

    private int nextKey(SplittableRandom rnd) {
        double u = rnd.nextDouble();
        int lo = 0;
        int hi = zipfCdf.length - 1;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (zipfCdf[mid] < u) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo; // the rank; the cache hashes the key bytes, so hot keys spread over shards anyway
    }

    /** {@return a new store for one of the names of {@link Options#stores}, with default settings} */
    public static EntryStore newStore(String name) {
        return newStore(name, new Options());
    }

    /** {@return a new store for one of the names of {@link Options#stores}} */
    public static EntryStore newStore(String name, Options o) {
        long iota = o.iotaKib * 1024L;
        long batch = o.reclaimKib * 1024L;
        return switch (name) {
            case "compacting" -> CompactingEntryStore.create(o.kappa, iota, batch, false);
            case "no-compaction" -> CompactingEntryStore.create(CompactingHeap.KAPPA_INFINITE, iota, batch, false);
            case "compacting-mmap" -> CompactingEntryStore.create(o.kappa, iota, batch, true);
            case "no-compaction-mmap" -> CompactingEntryStore.create(CompactingHeap.KAPPA_INFINITE, iota, batch, true);
            case "malloc" -> new MallocEntryStore();
            default -> throw new IllegalArgumentException("unknown store " + name);
        };
    }

    /** Runs every store of the options in turn and returns the results. */
    public List<Result> runAll() throws InterruptedException {
        if (options.warmupSeconds > 0) {
            if (options.progress) {
                out.printf(Locale.ROOT, "  warming up for %.1f s (not reported)%n", options.warmupSeconds);
            }
            Options w = copyForWarmup();
            new CacheChurn(w, out, zipfCdf).run(() -> newStore("compacting", w), false);
            new CacheChurn(w, out, zipfCdf).run(() -> newStore("malloc", w), false);
        }
        List<Result> results = new ArrayList<>();
        for (String name : options.stores) {
            results.add(run(() -> newStore(name, options), name.startsWith("compacting") && options.compactMs > 0));
        }
        return results;
    }

    private Options copyForWarmup() {
        Options w = new Options();
        w.seconds = options.warmupSeconds / 2;
        w.threads = options.threads;
        w.maxMib = Math.min(options.maxMib, 16);
        w.keys = options.keys;
        w.zipf = options.zipf;
        w.minValue = options.minValue;
        w.maxValue = options.maxValue;
        w.phaseSeconds = w.seconds / 2;
        w.kappa = options.kappa;
        w.iotaKib = options.iotaKib;
        w.reclaimKib = options.reclaimKib;
        w.progress = false;
        w.warmupSeconds = 0;
        return w;
    }

    /**
     * Runs the workload on a cache over a store from {@code storeFactory}.
     *
     * @param backgroundCompaction whether a thread calls {@code compact()} on a
     *        {@link CompactingEntryStore} every {@link Options#compactMs} milliseconds
     */
    public Result run(Supplier<EntryStore> storeFactory, boolean backgroundCompaction) throws InterruptedException {
        long rss0 = vmRssBytes();
        LongAdder ops = new LongAdder();
        LongAdder errors = new LongAdder();
        long peakCommitted = 0;
        long peakRss = 0;
        Result result;
        try (OffHeapCache cache = new OffHeapCache(storeFactory.get(), options.maxMib << 20, options.shards)) {
            long committed0 = Math.max(0, cache.store().memory().committedBytes());
            long start = System.nanoTime();
            long end = start + (long) (options.seconds * 1e9);
            Thread[] workers = new Thread[options.threads];
            for (int t = 0; t < workers.length; t++) {
                long seed = options.seed * 1_000_003L + t;
                workers[t] = new Thread(() -> {
                    try {
                        work(cache, seed, start, end, ops, errors);
                    } catch (RuntimeException | Error e) {
                        errors.increment();
                        out.println("worker failed: " + e);
                    }
                }, "churn-" + t);
                workers[t].setDaemon(true);
                workers[t].start();
            }
            String name = cache.store().name();
            Thread compactor = null;
            if (backgroundCompaction && cache.store() instanceof CompactingEntryStore cs) {
                compactor = new Thread(() -> {
                    try {
                        while (System.nanoTime() < end) {
                            Thread.sleep(options.compactMs);
                            cs.heap().compact();
                        }
                    } catch (InterruptedException | IllegalStateException e) {
                        // stopped, or the heap closed
                    }
                }, "compactor");
                compactor.setDaemon(true);
                compactor.start();
            }
            long lastOps = 0;
            long lastT = start;
            for (int tick = 1; ; tick++) {
                long next = start + tick * 1_000_000_000L;
                long now = System.nanoTime();
                if (now >= end) {
                    break;
                }
                Thread.sleep(Math.max(1, (Math.min(next, end) - now) / 1_000_000));
                now = System.nanoTime();
                OffHeapCache.Stats st = cache.stats();
                EntryStore.Memory mem = cache.store().memory();
                long committed = mem.committedBytes() < 0 ? -1 : mem.committedBytes() - committed0;
                long rss = vmRssBytes() - rss0;
                peakCommitted = Math.max(peakCommitted, committed);
                peakRss = Math.max(peakRss, rss);
                long o = ops.sum();
                if (options.progress) {
                    out.printf(Locale.ROOT, "  [%-31s] %4.0fs  %-5s %9.0f ops/s  hit %3.0f%%  live %6.1f MiB"
                                    + "  committed %6s MiB  resident %6s MiB  RSS %+7.1f MiB%n",
                            name, (now - start) / 1e9, phaseName(now - start), (o - lastOps) / ((now - lastT) / 1e9),
                            100 * st.hitRatio(), mib(st.bytes()), mibOrNa(committed), mibOrNa(mem.residentBytes()), mib(rss));
                }
                lastOps = o;
                lastT = now;
            }
            for (Thread w : workers) {
                w.join();
            }
            if (compactor != null) {
                compactor.interrupt();
                compactor.join();
            }
            double secs = (System.nanoTime() - start) / 1e9;
            OffHeapCache.Stats st = cache.stats();
            EntryStore.Memory mem = cache.store().memory();
            long committed = mem.committedBytes() < 0 ? -1 : mem.committedBytes() - committed0;
            long rss = vmRssBytes() - rss0;
            peakCommitted = Math.max(peakCommitted, committed);
            peakRss = Math.max(peakRss, rss);
            result = new Result(name, ops.sum(), secs, st.hitRatio(), st.bytes(), committed, peakCommitted,
                    mem.residentBytes(), rss, peakRss, mem.movedBytes(), errors.sum());
        }
        return result;
    }

    private String phaseName(long elapsedNanos) {
        return isSmallPhase(elapsedNanos) ? "small" : "large";
    }

    private boolean isSmallPhase(long elapsedNanos) {
        return ((long) (elapsedNanos / (options.phaseSeconds * 1e9)) & 1) == 0;
    }

    private void work(OffHeapCache cache, long seed, long start, long end, LongAdder ops, LongAdder errors) {
        SplittableRandom rnd = new SplittableRandom(seed);
        MemorySegment value = MemorySegment.ofArray(new byte[options.maxValue]);
        for (long i = 0; i < value.byteSize(); i++) {
            value.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt());
        }
        MemorySegment dst = MemorySegment.ofArray(new byte[options.maxValue]);
        byte[] key = new byte[8];
        MemorySegment keySeg = MemorySegment.ofArray(key);
        int mid = Math.max(options.minValue, Math.min(1024, options.maxValue));
        long n = 0;
        long now = System.nanoTime();
        while (now < end) {
            int k = nextKey(rnd);
            keySeg.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, k);
            boolean write = rnd.nextInt(100) < options.writePercent;
            int len = -1;
            if (!write) {
                len = cache.get(key, dst);
                if (len >= 0 && (len < 12 || dst.get(ValueLayout.JAVA_LONG_UNALIGNED, 0) != k
                        || dst.get(ValueLayout.JAVA_INT_UNALIGNED, 8) != len)) {
                    errors.increment(); // a value must carry its own key and length
                }
            }
            if (len < 0) {
                boolean small = isSmallPhase(now - start);
                int lo = small ? options.minValue : mid;
                int hi = small ? mid : options.maxValue;
                int size = logUniform(rnd, lo, hi);
                value.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, k);
                value.set(ValueLayout.JAVA_INT_UNALIGNED, 8, size);
                cache.put(key, value.asSlice(0, size));
            }
            if ((++n & 63) == 0) {
                ops.add(64);
                now = System.nanoTime();
            }
        }
        ops.add(n & 63);
    }

    private static int logUniform(SplittableRandom rnd, int lo, int hi) {
        if (hi <= lo) {
            return lo;
        }
        return (int) Math.min(hi, Math.round(lo * Math.exp(rnd.nextDouble() * Math.log((double) hi / lo))));
    }

    /** Prints the results as a table. */
    public static void report(List<Result> results, PrintStream out) {
        out.println();
        out.println("| store                           |     ops/s | hit % | live MiB | committed MiB (peak) "
                + "| committed/live | resident MiB | RSS growth MiB (peak) | moved MiB |");
        out.println("|---------------------------------|----------:|------:|---------:|---------------------:"
                + "|---------------:|-------------:|----------------------:|----------:|");
        for (Result r : results) {
            out.printf(Locale.ROOT, "| %-31s | %9.0f | %5.1f | %8.1f | %8s (%8s) | %14s | %12s | %9.1f (%9.1f) | %9.1f |%n",
                    r.store(), r.opsPerSecond(), 100 * r.hitRatio(), mib(r.liveBytes()), mibOrNa(r.committedBytes()),
                    mibOrNa(r.peakCommittedBytes()),
                    r.committedBytes() < 0 || r.liveBytes() == 0 ? "n/a"
                            : String.format(Locale.ROOT, "%.2f", (double) r.committedBytes() / r.liveBytes()),
                    mibOrNa(r.residentBytes()), mib(r.rssGrowth()), mib(r.peakRssGrowth()), mib(r.movedBytes()));
        }
        long errors = results.stream().mapToLong(Result::errors).sum();
        if (errors != 0) {
            out.println("ERROR: " + errors + " values did not carry their key and length, or workers failed");
        }
    }

    private static double mib(long bytes) {
        return bytes / (1024.0 * 1024.0);
    }

    private static String mibOrNa(long bytes) {
        return bytes < 0 ? "n/a" : String.format(Locale.ROOT, "%.1f", mib(bytes));
    }

    /** {@return VmRSS of this process in bytes, from /proc/self/status; 0 if unreadable} */
    public static long vmRssBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    String[] f = line.trim().split("\\s+");
                    return Long.parseLong(f[1]) * 1024; // kB
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or no procfs
        }
        return 0;
    }
}
