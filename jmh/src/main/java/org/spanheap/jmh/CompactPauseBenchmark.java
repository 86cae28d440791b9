package org.spanheap.jmh;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import joptsimple.OptionParser;
import joptsimple.OptionSet;
import joptsimple.OptionSpec;
import org.spanheap.CompactingHeap;

/**
 * Pauses of the compacting heap with many threads alive: what a mutator
 * thread experiences per operation, how long a compaction round takes, and
 * how long its epoch change (the shared arena's handshake with every thread)
 * takes, with 2, 16, 64 and 256 platform threads alive, most of them parked
 * as in a service's idle pools.
 *
 * <p>Per configuration: a default {@link CompactingHeap} holds a cache's
 * values (an index of {@code --keys} handles under 1024 shard locks, values of
 * 64 B to 8 KiB, one in 500 of 64 KiB to 1 MiB); {@code --mutators} threads run
 * the churn (75% read both ends of a value, 25% replace it, freeing the old
 * value outside the lock) and time every operation; a driver thread calls
 * {@code compact()} every 250 ms and {@code relocate()} on a random value every
 * 10 ms (one epoch change with one move, timed); the heap's background
 * thread runs its rounds. Round durations and their epoch-close times come
 * from the heap's JFR event {@code org.spanheap.CompactionRound}. Percentiles
 * come from a log-linear histogram (16 buckets per power of two, so a figure
 * is the upper bound of its bucket, at most 6% above the sample).
 *
 * {@snippet lang = "sh" :
 * java --enable-native-access=ALL-UNNAMED -cp jmh/target/benchmarks.jar org.spanheap.jmh.CompactPauseBenchmark \
 *      --threads 2,16,64,256 --seconds 10
 * }
 */
public final class CompactPauseBenchmark {

    private static final String ROUND_EVENT = "org.spanheap.CompactionRound";

    private CompactPauseBenchmark() {
    }

    /** Counts of nanosecond samples in log-linear buckets. */
    static final class Histogram {
        private final long[] counts = new long[64 * 16];
        private long max;
        private long total;

        void record(long nanos) {
            long v = Math.max(1, nanos);
            int exp = 63 - Long.numberOfLeadingZeros(v);
            int sub = exp < 4 ? 0 : (int) ((v >>> (exp - 4)) & 15);
            counts[exp * 16 + sub]++;
            max = Math.max(max, v);
            total++;
        }

        void add(Histogram o) {
            for (int i = 0; i < counts.length; i++) {
                counts[i] += o.counts[i];
            }
            max = Math.max(max, o.max);
            total += o.total;
        }

        /** Upper bound of the bucket holding the {@code q}-quantile. */
        long quantile(double q) {
            long rank = (long) Math.ceil(q * total);
            long seen = 0;
            for (int i = 0; i < counts.length; i++) {
                seen += counts[i];
                if (seen >= rank && counts[i] > 0) {
                    int exp = i / 16, sub = i % 16;
                    long upper = exp < 4 ? (2L << exp) - 1 : ((16L + sub + 1) << (exp - 4)) - 1;
                    return Math.min(upper, max);
                }
            }
            return max;
        }

        String describe() {
            return String.format("n=%d p50 %s p99 %s p99.9 %s max %s", total, us(quantile(0.5)), us(quantile(0.99)),
                    us(quantile(0.999)), us(max));
        }

        static String us(long nanos) {
            return nanos < 10_000 ? String.format("%.1f us", nanos / 1e3) : String.format("%.0f us", nanos / 1e3);
        }
    }

    public static void main(String[] args) throws Exception {
        CommandLine cli = new CommandLine(CompactPauseBenchmark.class, "Mutator latency, compaction rounds and"
                + " epoch closes of a compacting heap under churn, one configuration per --threads value.");
        OptionParser parser = cli.parser();
        OptionSpec<Integer> threadsOpt = parser.accepts("threads", "platform threads alive, comma-separated")
                .withRequiredArg().describedAs("N,N,...").ofType(Integer.class).withValuesSeparatedBy(',')
                .defaultsTo(2, 16, 64, 256);
        OptionSpec<Integer> secondsOpt = parser.accepts("seconds", "seconds per configuration").withRequiredArg()
                .describedAs("S").ofType(Integer.class).defaultsTo(10);
        OptionSpec<Integer> mutatorsOpt = parser.accepts("mutators", "threads running the churn").withRequiredArg()
                .describedAs("N").ofType(Integer.class).defaultsTo(2);
        OptionSpec<Integer> keysOpt = parser.accepts("keys", "values in the index").withRequiredArg()
                .describedAs("N").ofType(Integer.class).defaultsTo(16384);
        OptionSpec<Integer> kappaOpt = parser.accepts("kappa", "kappa of the heap (0: infinite)").withRequiredArg()
                .ofType(Integer.class).defaultsTo(2);
        OptionSpec<Integer> iotaOpt = parser.accepts("iota-kib", "iota of the heap, KiB").withRequiredArg()
                .ofType(Integer.class).defaultsTo(256);
        OptionSpec<Integer> batchOpt = parser.accepts("batch-kib", "reclaim batch of the heap, KiB").withRequiredArg()
                .ofType(Integer.class).defaultsTo(1024);
        OptionSpec<Integer> compactOpt = parser.accepts("compact-ms", "ms between compact() calls (0: none)")
                .withRequiredArg().ofType(Integer.class).defaultsTo(250);
        OptionSpec<Integer> intervalOpt = parser.accepts("interval-ms", "the heap's compaction interval, ms")
                .withRequiredArg().ofType(Integer.class).defaultsTo(100);
        OptionSpec<Void> verboseOpt = parser.accepts("verbose", "print the heap's memory figures every second");
        OptionSpec<Void> mappedOpt = parser.accepts("mapped-pages",
                "pages mapped one by one instead of the default page source");
        OptionSet o = cli.parse(args);
        for (int t : o.valuesOf(threadsOpt)) {
            cli.check(t >= 0, "--threads must not be negative: " + t);
        }
        cli.check(o.valueOf(secondsOpt) > 0, "--seconds must be positive: " + o.valueOf(secondsOpt));
        cli.check(o.valueOf(mutatorsOpt) > 0, "--mutators must be positive: " + o.valueOf(mutatorsOpt));
        cli.check(o.valueOf(keysOpt) > 0, "--keys must be positive: " + o.valueOf(keysOpt));
        cli.check(o.valueOf(kappaOpt) >= 0, "--kappa must not be negative: " + o.valueOf(kappaOpt));
        cli.check(o.valueOf(compactOpt) >= 0, "--compact-ms must not be negative: " + o.valueOf(compactOpt));
        verbose = o.has(verboseOpt);
        compactMillis = o.valueOf(compactOpt);
        int kappa = o.valueOf(kappaOpt);
        CompactingHeap.Builder builder;
        try { // the builder checks the heap's settings and names the bad one
            builder = CompactingHeap.builder()
                    .notFullPagesPerClass(kappa == 0 ? CompactingHeap.NOT_FULL_PAGES_UNBOUNDED : kappa).movedBytesPerRound(o.valueOf(iotaOpt) * 1024L)
                    .reclaimBatchBytes(o.valueOf(batchOpt) * 1024L)
                    .compactionInterval(java.time.Duration.ofMillis(o.valueOf(intervalOpt)));
        } catch (IllegalArgumentException e) {
            throw cli.fail(e.getMessage());
        }
        if (o.has(mappedOpt)) {
            builder.mappedPages();
        }
        System.out.printf("compacting heap pauses: %d mutators, %d keys, %d s per configuration, Java %s, %d cpus%n",
                o.valueOf(mutatorsOpt), o.valueOf(keysOpt), o.valueOf(secondsOpt), Runtime.version(),
                Runtime.getRuntime().availableProcessors());
        System.out.println("| threads alive | mutator ops/s | op p50 | p99 | p99.9 | max | round p50 | p99 | max"
                + " | epoch close p50 | p99 | max | relocate p50 | p99 | max | rounds/s |");
        System.out.println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        System.out.printf("heap: kappa %s, iota %d KiB, reclaim batch %d KiB%n", kappa == 0 ? "infinite" : kappa,
                o.valueOf(iotaOpt), o.valueOf(batchOpt));
        for (int t : o.valuesOf(threadsOpt)) {
            run(builder, t, o.valueOf(mutatorsOpt), o.valueOf(keysOpt), o.valueOf(secondsOpt));
        }
    }

    static boolean verbose;
    static int compactMillis;

    static void run(CompactingHeap.Builder builder, int alive, int mutators, int keys, int seconds)
            throws Exception {
        Path jfr = Files.createTempFile("spanheap-pauses", ".jfr");
        try (CompactingHeap heap = builder.build(); Arena arena = Arena.ofShared();
                Recording recording = new Recording()) {
            recording.enable(ROUND_EVENT).withThreshold(Duration.ZERO);
            MemorySegment source = arena.allocate(1 << 20);
            SplittableRandom init = new SplittableRandom(1);
            for (long i = 0; i < source.byteSize(); i += 8) {
                source.set(ValueLayout.JAVA_LONG, i, init.nextLong());
            }
            AtomicLongArray index = new AtomicLongArray(keys);
            ReentrantLock[] shards = new ReentrantLock[1024];
            for (int i = 0; i < shards.length; i++) {
                shards[i] = new ReentrantLock();
            }
            for (int k = 0; k < keys; k++) {
                index.set(k, heap.allocateFrom(source.asSlice(0, valueSize(init, 0))));
            }
            // the idle pool: parked platform threads
            int parked = Math.max(0, alive - mutators - 1);
            CountDownLatch stop = new CountDownLatch(1);
            List<Thread> idle = new ArrayList<>();
            for (int i = 0; i < parked; i++) {
                Thread th = new Thread(() -> {
                    while (stop.getCount() > 0) {
                        LockSupport.parkNanos(100_000_000L);
                    }
                }, "idle-" + i);
                th.setDaemon(true);
                th.start();
                idle.add(th);
            }
            recording.start();
            long start = System.nanoTime();
            long deadline = start + seconds * 1_000_000_000L;
            Histogram[] perThread = new Histogram[mutators];
            Thread[] workers = new Thread[mutators];
            for (int m = 0; m < mutators; m++) {
                Histogram h = perThread[m] = new Histogram();
                int id = m;
                workers[m] = new Thread(() -> churn(heap, index, shards, source, h, id, start, deadline),
                        "mutator-" + m);
                workers[m].start();
            }
            Histogram relocate = new Histogram();
            SplittableRandom rnd = new SplittableRandom(3);
            long nextCompact = start + 250_000_000L;
            long nextSample = start + 1_000_000_000L; // after the first second's fill-up
            int samples = 0;
            double maxRatio = 0;
            while (System.nanoTime() < deadline) {
                LockSupport.parkNanos(10_000_000L);
                if (compactMillis > 0 && System.nanoTime() >= nextCompact) {
                    heap.compact();
                    nextCompact += compactMillis * 1_000_000L;
                }
                if (System.nanoTime() >= nextSample) {
                    var st = heap.stats();
                    maxRatio = Math.max(maxRatio, st.committedPerLive());
                    if (verbose && samples++ % 10 == 0) {
                        System.out.printf("    %4.1fs live %6.1f MiB committed %6.1f MiB (%.2f) pending %5.1f MiB"
                                + " large %d (%.1f MiB) notFull max %d RSS %d MiB%n", (System.nanoTime() - start) / 1e9,
                                st.liveBytes() / 1048576.0, st.committedBytes() / 1048576.0, st.committedPerLive(),
                                st.pendingReclaimBytes() / 1048576.0, st.largeObjects(), st.largeBytes() / 1048576.0,
                                st.maxNotFullPages(), CompactChurnBenchmark.rssBytes() >> 20);
                    }
                    nextSample += 37_000_000L; // not in step with compact() or the phases
                }
                int k = rnd.nextInt(keys);
                ReentrantLock lock = shards[k & 1023];
                lock.lock(); // the value cannot be replaced and freed meanwhile
                try {
                    long t0 = System.nanoTime();
                    heap.relocate(index.get(k));
                    relocate.record(System.nanoTime() - t0);
                } finally {
                    lock.unlock();
                }
            }
            for (Thread w : workers) {
                w.join();
            }
            recording.stop();
            recording.dump(jfr);
            stop.countDown();
            Histogram ops = new Histogram();
            for (Histogram h : perThread) {
                ops.add(h);
            }
            Histogram rounds = new Histogram();
            Histogram closes = new Histogram();
            for (RecordedEvent e : RecordingFile.readAllEvents(jfr)) {
                if (!e.getEventType().getName().equals(ROUND_EVENT)) {
                    continue; // the recording also holds the JDK's own bookkeeping events
                }
                rounds.record(e.getDuration().toNanos());
                closes.record(e.getLong("epochCloseNanos"));
            }
            System.out.printf("| %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |%n",
                    alive, ops.total / seconds, Histogram.us(ops.quantile(0.5)), Histogram.us(ops.quantile(0.99)),
                    Histogram.us(ops.quantile(0.999)), Histogram.us(ops.max), Histogram.us(rounds.quantile(0.5)),
                    Histogram.us(rounds.quantile(0.99)), Histogram.us(rounds.max), Histogram.us(closes.quantile(0.5)),
                    Histogram.us(closes.quantile(0.99)), Histogram.us(closes.max),
                    Histogram.us(relocate.quantile(0.5)), Histogram.us(relocate.quantile(0.99)),
                    Histogram.us(relocate.max), rounds.total / seconds);
            if (verbose) {
                System.out.printf("    highest committed/live in %d samples: %.2f%n", samples, maxRatio);
            }
            for (int k = 0; k < keys; k++) {
                heap.free(index.get(k));
            }
        } finally {
            Files.deleteIfExists(jfr);
        }
    }

    /** 64 B..1 KiB in even phases of 2 s, 1..8 KiB in odd ones; one in 500 is 64 KiB..1 MiB. */
    static int valueSize(SplittableRandom rnd, long phase) {
        if (rnd.nextInt(500) == 0) {
            return 64 * 1024 + rnd.nextInt((1 << 20) - 64 * 1024 + 1);
        }
        return (phase & 1) == 0 ? 64 + rnd.nextInt(1024 - 64 + 1) : 1024 + rnd.nextInt(8192 - 1024 + 1);
    }

    static void churn(CompactingHeap heap, AtomicLongArray index, ReentrantLock[] shards, MemorySegment source,
            Histogram latency, int id, long start, long deadline) {
        SplittableRandom rnd = new SplittableRandom(id * 31L + 7);
        long sink = 0;
        int keys = index.length();
        for (long now = System.nanoTime(); now < deadline; now = System.nanoTime()) {
            int k = rnd.nextInt(keys);
            ReentrantLock lock = shards[k & 1023];
            if (rnd.nextInt(4) != 0) {
                lock.lock();
                try {
                    MemorySegment v = heap.segment(index.get(k));
                    sink += v.get(ValueLayout.JAVA_LONG_UNALIGNED, 0)
                            + v.get(ValueLayout.JAVA_LONG_UNALIGNED, v.byteSize() - 8);
                } catch (IllegalStateException epochClosed) {
                    sink++; // the value moved under us; a real reader would resolve again
                } finally {
                    lock.unlock();
                }
            } else {
                long fresh = heap.allocateFrom(source.asSlice(0, valueSize(rnd, (now - start) / 2_000_000_000L)));
                long old;
                lock.lock();
                try {
                    old = index.getAndSet(k, fresh);
                } finally {
                    lock.unlock();
                }
                heap.free(old);
            }
            latency.record(System.nanoTime() - now);
        }
        if (sink == 42) {
            System.out.print("");
        }
    }
}
