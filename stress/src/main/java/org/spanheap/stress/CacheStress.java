package org.spanheap.stress;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import org.spanheap.cache.CacheStats;
import org.spanheap.cache.OffHeapCache;
import org.spanheap.cache.Serializers;

/**
 * A randomized long-running stress of one {@link OffHeapCache}{@code <Long, byte[]>} with many
 * platform and virtual threads: every hit must be a whole value of its key while entries are
 * replaced, evicted and moved by the cache's compacting heap, and the cache's accounting must
 * match what it holds.
 *
 * <p>The capacity is a quarter of the budget and the key space is large enough that the data
 * set is many times the capacity, so eviction runs all the time. Values ({@link CacheValue})
 * encode their key and length; their sizes shift over the run through four phases (small,
 * medium, large enough to be mapped alone, a mix up to 1 MiB), so the heap's size classes
 * fill and empty in turn. A third of the lookups go to a small hot set, so there are hits.
 * Workers (a {@link WorkerPool}) do get (in place and copying), put, putIfAbsent,
 * computeIfAbsent, remove, containsKey, stats and cleanUp, and very rarely clear.
 *
 * <p>At the end: every key is looked up and checked; the values found must be as many as the
 * cache's entries and their bytes its live bytes; the weighed size must be within the
 * capacity, and eviction must have run; after {@code clear()} entries, weight and live bytes
 * must be 0. Any corrupted value or worker exception fails the run (exit code 1).
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -cp stress/target/jcstress.jar \
 *     org.spanheap.stress.CacheStress [--seconds 60] [--platform 8] [--virtual 32] \
 *     [--budget-mib 256] [--seed n] [--rss-every-seconds 0]
 * </pre>
 */
public final class CacheStress {

    /** No progress for this long is a hang (the watchdog fails the run); far above any pause seen. */
    private static final int STALL_SECONDS = 30;

    private static final int HOT_KEYS = 4096;
    private static final int PHASES = 4;

    private final StressOptions options;
    private final Failures failures = new Failures();
    private final WorkerPool workers;
    private final OffHeapCache<Long, byte[]> cache;
    private final long keySpace;
    /** Which value sizes are written now; advanced by the supervising loop. */
    private volatile int phase;

    private final AtomicLong ops = new AtomicLong();
    private final AtomicLong lookups = new AtomicLong();
    private final AtomicLong hits = new AtomicLong();
    private final AtomicLong puts = new AtomicLong();
    private final AtomicLong loads = new AtomicLong();
    private final AtomicLong removes = new AtomicLong();
    private final AtomicLong clears = new AtomicLong();

    private CacheStress(StressOptions options) {
        this.options = options;
        this.cache = OffHeapCache.builder(Serializers.longs(), Serializers.bytes())
                .capacity(options.budgetBytes() / 4)
                .build();
        // ~300 B charged per entry at least: even the small phase's data set is several capacities
        this.keySpace = options.budgetBytes() / 256;
        this.workers = new WorkerPool(options.platform(), options.virtual(), options.seed(), failures, this::work);
    }

    public static void main(String[] args) throws InterruptedException {
        StressOptions options = StressOptions.parse("CacheStress",
                "A randomized stress of one OffHeapCache: every hit is checked while entries"
                + " are replaced, evicted and moved.", args);
        System.exit(new CacheStress(options).run());
    }

    // ---------------------------------------------------------------- run

    private int run() throws InterruptedException {
        long phaseSeconds = Math.clamp(options.seconds() / 8, 2, 60);
        System.out.printf(Locale.ROOT, "CacheStress: %d s, %d platform + %d virtual workers, capacity %d MiB,"
                        + " %d keys, size phase every %d s, seed %d%n",
                options.seconds(), options.platform(), options.virtual(), cache.capacity() >> 20, keySpace,
                phaseSeconds, options.seed());
        long start = System.nanoTime();
        RssLog rss = new RssLog(options.rssEverySeconds(), start);
        Watchdog watchdog = new Watchdog("CacheStress", ops::get, STALL_SECONDS);
        workers.start();
        long end = start + options.seconds() * 1_000_000_000L;
        long nextReport = start + 5_000_000_000L;
        while (System.nanoTime() < end && !failures.any()) {
            Thread.sleep(20);
            watchdog.tick();
            workers.replaceEnded();
            long now = System.nanoTime();
            phase = (int) ((now - start) / 1_000_000_000L / phaseSeconds % PHASES);
            CacheStats s = cache.stats();
            rss.maybeLog(now, s::committedBytes, s::liveBytes);
            if (now >= nextReport) {
                nextReport += 5_000_000_000L;
                report((now - start) / 1_000_000_000L, s);
            }
        }
        watchdog.workersStopped();
        workers.stopAndJoin(Duration.ofSeconds(STALL_SECONDS));
        watchdog.tick();
        checkContents(watchdog);
        cache.clear();
        cache.cleanUp();
        CacheStats after = cache.stats();
        report((System.nanoTime() - start) / 1_000_000_000L, after);
        rss.log(System.nanoTime(), after.committedBytes(), after.liveBytes());
        if (after.entries() != 0 || after.weightedBytes() != 0 || after.liveBytes() != 0) {
            failures.fail("after clear() the cache reports " + after.entries() + " entries weighing "
                    + after.weightedBytes() + " B, " + after.liveBytes() + " live bytes");
        }
        System.out.printf(Locale.ROOT, "summary: %d ops, %d lookups (%d hits), %d puts, %d loads, %d removes,"
                        + " %d clears, %d evictions, moved %d MiB in %d rounds, committed now %d KiB,"
                        + " threads %d started / %d ended, peak RSS %d KiB%n",
                ops.get(), lookups.get(), hits.get(), puts.get(), loads.get(), removes.get(), clears.get(),
                after.evictions(), after.movedBytes() >> 20, after.compactionRounds(), after.committedBytes() >> 10,
                workers.started(), workers.ended(), ResidentMemory.peakKib());
        cache.close();
        return failures.verdict();
    }

    /** Every key checked with no worker running: the cache's figures must match what it holds. */
    private void checkContents(Watchdog watchdog) {
        cache.cleanUp();
        CacheStats s = cache.stats();
        long found = 0;
        long bytes = 0;
        long corrupt = 0;
        String firstCorrupt = null;
        for (long key = 0; key < keySpace; key++) {
            if ((key & 0xFFFF) == 0) {
                watchdog.tick();
            }
            long k = key;
            Long length = cache.get(key, seg -> {
                String error = CacheValue.check(seg, k);
                return error == null ? seg.byteSize() : -1L;
            });
            if (length == null) {
                continue;
            }
            if (length < 0) {
                corrupt++;
                if (firstCorrupt == null) {
                    firstCorrupt = cache.get(key, seg -> CacheValue.check(seg, k));
                }
                length = cache.get(key, MemorySegment::byteSize);   // still counts toward the figures below
            }
            found++;
            bytes += length;
        }
        if (corrupt != 0) {
            failures.fail("at the end " + corrupt + " values are corrupted; the first: " + firstCorrupt);
        }
        if (found != s.entries() || bytes != s.liveBytes()) {
            failures.fail("at the end the cache holds " + found + " values of " + bytes + " B in all, but reports "
                    + s.entries() + " entries and " + s.liveBytes() + " live bytes");
        }
        if (s.weightedBytes() > s.capacityBytes()) {
            failures.fail("after cleanUp() the entries weigh " + s.weightedBytes() + " B, over the capacity of "
                    + s.capacityBytes());
        }
        // A short run may end before the data set outgrows the capacity; from 10 s on it has not done its job.
        if (s.evictions() == 0 && options.seconds() >= 10) {
            failures.fail("no entry was evicted: the run did not exercise eviction");
        }
        System.out.printf(Locale.ROOT, "end: %d entries, %d KiB of values, weighed %d KiB of %d KiB, checked%n",
                found, bytes >> 10, s.weightedBytes() >> 10, s.capacityBytes() >> 10);
    }

    private void report(long second, CacheStats s) {
        System.out.printf(Locale.ROOT, "[%3d s] ops %d, phase %d, threads %d started / %d ended, entries %d,"
                        + " live %d MiB, committed %d MiB, hit ratio %.2f, evictions %d, moved %d MiB in %d rounds%n",
                second, ops.get(), phase, workers.started(), workers.ended(), s.entries(), s.liveBytes() >> 20,
                s.committedBytes() >> 20, s.hitRatio(), s.evictions(), s.movedBytes() >> 20, s.compactionRounds());
    }

    // ---------------------------------------------------------------- one worker

    private void work(SplittableRandom r, boolean platform) {
        long lifeOps = 100 + r.nextLong(platform ? 4_000 : 1_000);   // short lives: thread churn
        for (long n = 0; n < lifeOps && !workers.stopping() && !failures.any(); n++) {
            ops.incrementAndGet();
            long key = r.nextInt(3) == 0 ? r.nextLong(HOT_KEYS) : r.nextLong(keySpace);
            int op = r.nextInt(1000);
            if (op < 450) {
                lookups.incrementAndGet();
                String result = cache.get(key, checker(key));
                if (result != null) {
                    hits.incrementAndGet();
                    if (!result.equals(OK)) {
                        failures.fail("get(key, reader): " + result);
                    }
                }
            } else if (op < 500) {
                lookups.incrementAndGet();
                byte[] v = cache.get(key);
                if (v != null) {
                    hits.incrementAndGet();
                    checkCopy(v, key, "get(key)");
                }
            } else if (op < 700) {
                cache.put(key, CacheValue.of(key, length(r)));
                puts.incrementAndGet();
            } else if (op < 730) {
                cache.putIfAbsent(key, CacheValue.of(key, length(r)));
                puts.incrementAndGet();
            } else if (op < 830) {
                int length = length(r);
                byte[] v = cache.computeIfAbsent(key, k -> {
                    loads.incrementAndGet();
                    return CacheValue.of(k, length);
                });
                checkCopy(v, key, "computeIfAbsent");
            } else if (op < 930) {
                if (cache.remove(key)) {
                    removes.incrementAndGet();
                }
            } else if (op < 970) {
                cache.containsKey(key);
            } else if (op < 990) {
                CacheStats s = cache.stats();
                if (s.entries() < 0 || s.weightedBytes() < 0 || s.liveBytes() < 0 || s.committedBytes() < 0) {
                    failures.fail("negative figure in concurrent stats: " + s);
                }
            } else if (op < 999) {
                cache.cleanUp();
            } else if (r.nextInt(200) == 0) {
                cache.clear();
                clears.incrementAndGet();
            }
        }
    }

    private static final String OK = "ok";

    /** A reader for {@code get(key, reader)}: pure, as it may run again if the value moves. */
    private static Function<MemorySegment, String> checker(long key) {
        return seg -> {
            String error = CacheValue.check(seg, key);
            return error == null ? OK : error;
        };
    }

    private void checkCopy(byte[] v, long key, String call) {
        String error = v == null ? "no value" : CacheValue.check(MemorySegment.ofArray(v), key);
        if (error != null) {
            failures.fail(call + ": " + error);
        }
    }

    /** {@return a value length of the current phase} */
    private int length(SplittableRandom r) {
        return switch (phase) {
            case 0 -> r.nextInt(CacheValue.MIN_LENGTH, 257);
            case 1 -> r.nextInt(257, 4097);
            case 2 -> r.nextInt(16_385, 65_537);                 // mapped one by one
            default -> {
                int k = r.nextInt(100);
                yield k < 70 ? r.nextInt(CacheValue.MIN_LENGTH, 257)
                        : k < 95 ? r.nextInt(257, 16_385) : r.nextInt(16_385, (1 << 20) + 1);
            }
        };
    }
}
