package org.spanheap.examples.cache;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.spanheap.cache.CacheStats;
import org.spanheap.cache.OffHeapCache;

/**
 * A service's cache under load: threads look keys up (Zipf-distributed), load a value on a
 * miss, and overwrite 5% of the time, while the mix of value sizes shifts every phase (small
 * values, 100 B..1 KiB, then large ones, 4..16 KiB, and back) and 0.1% of the values are huge
 * (64 KiB..1 MiB). Every value carries its key and a fill byte made from it, and every hit is
 * checked in place through the zero-copy read: a torn or misplaced value counts as an error.
 *
 * @param seconds how long to run
 * @param threads worker threads
 * @param keys distinct keys
 * @param phaseSeconds length of a size phase
 */
public record CacheWorkload(double seconds, int threads, int keys, double phaseSeconds) {

    /** What a run measured. */
    public record Result(String name, double opsPerSecond, double hitRatio, long errors, CacheStats last,
            long peakRssGrowth, long endRssGrowth) {}

    private static final ValueLayout.OfLong KEY = ValueLayout.JAVA_LONG_UNALIGNED;

    /**
     * Runs the workload on {@code cache}, printing one line per second to {@code out}.
     *
     * @param name what to call the run
     * @param cache the cache; the caller closes it
     * @param out where the lines go
     * @return the figures of the run
     * @throws InterruptedException if interrupted while waiting for the workers
     */
    public Result run(String name, OffHeapCache<Long, byte[]> cache, PrintStream out) throws InterruptedException {
        long rssBefore = rss();
        long start = System.nanoTime();
        long end = start + (long) (seconds * 1e9);
        long phaseNanos = (long) (phaseSeconds * 1e9);
        int[] ranks = zipfRanks(keys);
        LongAdder ops = new LongAdder();
        LongAdder hits = new LongAdder();
        LongAdder misses = new LongAdder();
        LongAdder errors = new LongAdder();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            long seed = 1000 + t;
            workers.add(Thread.ofPlatform().name("cache-worker-" + t).start(() -> {
                SplittableRandom r = new SplittableRandom(seed);
                int pos = r.nextInt(ranks.length);
                long now;
                while ((now = System.nanoTime()) < end) {
                    boolean large = ((now - start) / phaseNanos & 1) == 1;
                    for (int i = 0; i < 64; i++) {
                        long key = ranks[pos++ % ranks.length] * 2L + (large ? 1 : 0);
                        if (r.nextInt(100) < 5) {
                            cache.put(key, value(key, large, r));
                            continue;
                        }
                        Boolean whole = cache.get(key, s -> isWhole(key, s));
                        if (whole == null) {
                            misses.increment();
                            cache.put(key, value(key, large, r));
                        } else {
                            hits.increment();
                            if (!whole) {
                                errors.increment();
                            }
                        }
                    }
                    ops.add(64);
                }
            }));
        }
        long peak = 0;
        long lastOps = 0;
        long lastTime = start;
        CacheStats s = cache.stats();
        while (workers.stream().anyMatch(Thread::isAlive)) {
            Thread.sleep(Math.max(1, Math.min(1000, TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime()))));
            long now = System.nanoTime();
            long growth = rss() - rssBefore;
            peak = Math.max(peak, growth);
            s = cache.stats();
            long n = ops.sum();
            out.printf(Locale.ROOT, "  %-18s %5.1f s %s  %9.0f ops/s  hit ratio %.3f  entries %7d  charged %4d MiB"
                            + "  live %4d MiB  committed %4d MiB  RSS growth %4d MiB%n", name, (now - start) / 1e9,
                    ((now - start) / phaseNanos & 1) == 1 ? "large" : "small", (n - lastOps) * 1e9 / (now - lastTime),
                    hitRatio(hits, misses), s.entries(), s.weightedBytes() >> 20, s.liveBytes() >> 20,
                    s.committedBytes() >> 20, growth >> 20);
            lastOps = n;
            lastTime = now;
        }
        for (Thread w : workers) {
            w.join();
        }
        double secs = (System.nanoTime() - start) / 1e9;
        return new Result(name, ops.sum() / secs, hitRatio(hits, misses), errors.sum(), s, peak, rss() - rssBefore);
    }

    private static double hitRatio(LongAdder hits, LongAdder misses) {
        long h = hits.sum();
        long m = misses.sum();
        return h + m == 0 ? 0 : (double) h / (h + m);
    }

    /** A fresh value for {@code key}: its key, then its fill byte. */
    static byte[] value(long key, boolean large, SplittableRandom r) {
        int size;
        if (r.nextInt(1000) == 0) {
            size = 64 * 1024 + r.nextInt(960 * 1024);
        } else {
            size = large ? 4096 + r.nextInt(12 * 1024 + 1) : 100 + r.nextInt(925);
        }
        byte[] v = new byte[size];
        Arrays.fill(v, fill(key));
        MemorySegment.ofArray(v).set(KEY, 0, key);
        return v;
    }

    static boolean isWhole(long key, MemorySegment s) {
        if (s.byteSize() < 8 || s.get(KEY, 0) != key) {
            return false;
        }
        byte f = fill(key);
        for (long i = 8; i < s.byteSize(); i++) {
            if (s.get(ValueLayout.JAVA_BYTE, i) != f) {
                return false;
            }
        }
        return true;
    }

    private static byte fill(long key) {
        return (byte) (key * 0x9E3779B97F4A7C15L >>> 56);
    }

    /** 2^20 ranks drawn from a Zipf distribution (exponent 0.9) over {@code keys} keys. */
    static int[] zipfRanks(int keys) {
        double[] cdf = new double[keys];
        double sum = 0;
        for (int i = 0; i < keys; i++) {
            sum += 1.0 / Math.pow(i + 1, 0.9);
            cdf[i] = sum;
        }
        SplittableRandom r = new SplittableRandom(7);
        int[] out = new int[1 << 20];
        for (int j = 0; j < out.length; j++) {
            int at = Arrays.binarySearch(cdf, r.nextDouble() * sum);
            out[j] = at >= 0 ? at : Math.min(keys - 1, -at - 1);
        }
        return out;
    }

    /** {@return the process's resident memory, VmRSS, or 0 where /proc is missing} */
    static long rss() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("VmRSS:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) << 10;
                }
            }
        } catch (IOException | RuntimeException e) {
            return 0;
        }
        return 0;
    }
}
