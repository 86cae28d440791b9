package org.spanheap.examples;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import joptsimple.OptionException;
import joptsimple.OptionParser;
import joptsimple.OptionSet;
import joptsimple.OptionSpec;
import org.spanheap.CompactingHeap;
import org.spanheap.cache.OffHeapCache;
import org.spanheap.cache.Serializers;
import org.spanheap.examples.cache.CacheWorkload;

/**
 * The README demo: spanheap-cache's {@link OffHeapCache} under a service's load while the mix
 * of value sizes shifts ({@link CacheWorkload}), first as it comes (its compacting heap moves
 * values to give emptied pages back), then with compaction off. It prints a line per second and
 * a table at the end, and exits with 1 if any value read was not whole. {@code --help} lists
 * the flags.
 */
public final class Demo {

    private Demo() {
    }

    /**
     * Runs the demo.
     *
     * @param args flags, e.g. {@code --seconds 30 --threads 4}
     * @throws InterruptedException if interrupted
     * @throws IOException if the help text cannot be printed
     */
    public static void main(String[] args) throws InterruptedException, IOException {
        OptionParser p = new OptionParser(false); // GNU style, --name value; no abbreviations
        OptionSpec<Double> secondsOpt = p.accepts("seconds", "seconds per run").withRequiredArg().describedAs("S")
                .ofType(Double.class).defaultsTo(12.0);
        OptionSpec<Integer> threadsOpt = p.accepts("threads", "worker threads").withRequiredArg().describedAs("N")
                .ofType(Integer.class).defaultsTo(2);
        OptionSpec<Long> capacityOpt = p.accepts("capacity-mib", "the cache's capacity").withRequiredArg()
                .describedAs("MIB").ofType(Long.class).defaultsTo(64L);
        OptionSpec<Integer> keysOpt = p.accepts("keys", "distinct keys per phase").withRequiredArg().describedAs("N")
                .ofType(Integer.class).defaultsTo(100_000);
        OptionSpec<Double> phaseOpt = p.accepts("phase-seconds", "length of a value-size phase").withRequiredArg()
                .describedAs("S").ofType(Double.class).defaultsTo(3.0);
        OptionSpec<Void> helpOpt = p.accepts("help", "print this text and exit").forHelp();
        CacheWorkload w;
        long capacityMib;
        try {
            OptionSet o = p.parse(args);
            if (o.has(helpOpt)) {
                System.out.println("usage: Demo [options]");
                System.out.println("An OffHeapCache under a service's load while value sizes shift: one run as it"
                        + " comes, one with compaction off.");
                System.out.println();
                p.printHelpOn(System.out);
                return;
            }
            if (!o.nonOptionArguments().isEmpty()) {
                throw usageError("unexpected argument: " + o.nonOptionArguments().getFirst());
            }
            // Values convert here, so inside the try.
            w = new CacheWorkload(o.valueOf(secondsOpt), o.valueOf(threadsOpt), o.valueOf(keysOpt),
                    o.valueOf(phaseOpt));
            capacityMib = o.valueOf(capacityOpt);
        } catch (OptionException e) {
            throw usageError(e.getMessage());
        }
        if (!(w.seconds() > 0 && w.phaseSeconds() > 0)) {
            throw usageError("--seconds and --phase-seconds must be positive: " + w.seconds() + ", "
                    + w.phaseSeconds());
        }
        if (w.threads() <= 0 || w.keys() <= 0) {
            throw usageError("--threads and --keys must be positive: " + w.threads() + ", " + w.keys());
        }
        if (capacityMib <= 0 || capacityMib >= 1L << 30) {
            throw usageError("--capacity-mib must be 1 to 2^30 - 1: " + capacityMib);
        }
        long bytes = capacityMib << 20;
        System.out.printf(Locale.ROOT, "spanheap demo: an OffHeapCache<Long, byte[]> of %d MiB on Java %s; %d threads;"
                        + " %d keys (Zipf 0.9) per phase; values of 100 B..1 KiB and 4..16 KiB in turns of %.0f s,"
                        + " 0.1%% of 64 KiB..1 MiB; 95%% reads (a miss loads the value), 5%% writes; %.0f s per run%n",
                bytes >> 20, Runtime.version(), w.threads(), w.keys(), w.phaseSeconds(), w.seconds());
        // Warm-up, not reported: the JIT compiles the paths and its own memory grows here, not in a run.
        CacheWorkload warmUp = new CacheWorkload(Math.min(3, w.seconds()), w.threads(), w.keys(), w.phaseSeconds());
        System.out.printf(Locale.ROOT, "  warming up for %.1f s (not reported), then two runs of %.0f s: compacting,"
                + " compaction off%n", warmUp.seconds(), w.seconds());
        try (OffHeapCache<Long, byte[]> cache = OffHeapCache.builder(Serializers.longs(), Serializers.bytes())
                .capacity(bytes).build()) {
            warmUp.run("warm-up", cache, new java.io.PrintStream(java.io.OutputStream.nullOutputStream()));
        }
        List<CacheWorkload.Result> results = new ArrayList<>();
        try (OffHeapCache<Long, byte[]> cache = OffHeapCache.builder(Serializers.longs(), Serializers.bytes())
                .capacity(bytes).build()) {
            results.add(w.run("compacting", cache, System.out));
        }
        CompactingHeap.Builder noCompaction = OffHeapCache.defaultHeap()
                .notFullPagesPerClass(CompactingHeap.NOT_FULL_PAGES_UNBOUNDED).backgroundCompaction(false);
        try (OffHeapCache<Long, byte[]> cache = OffHeapCache.builder(Serializers.longs(), Serializers.bytes())
                .capacity(bytes).heap(noCompaction).build()) {
            results.add(w.run("compaction off", cache, System.out));
        }
        System.out.printf(Locale.ROOT, "%n%-16s %12s %9s %8s %14s %14s %14s %16s%n", "run", "ops/s", "hit ratio",
                "errors", "charged MiB", "committed MiB", "peak RSS MiB", "committed/bound");
        for (CacheWorkload.Result r : results) {
            System.out.printf(Locale.ROOT, "%-16s %12.0f %9.3f %8d %14d %14d %14d %16.2f%n", r.name(),
                    r.opsPerSecond(), r.hitRatio(), r.errors(), r.last().weightedBytes() >> 20,
                    r.last().committedBytes() >> 20, r.peakRssGrowth() >> 20,
                    (double) r.last().committedBytes() / bytes);
        }
        System.out.println("""

                charged: what the entries are charged against the capacity (value blocks, keys, index entries);
                committed: the cache's off-heap memory at the end (its heap's pages and large mappings);
                peak RSS: the most the process's resident memory grew during the run (the Java heap is fixed and
                pre-touched, so this is off-heap memory, plus the JVM's own growth: compiled code, GC tables).""");
        if (results.stream().anyMatch(r -> r.errors() != 0)) {
            System.exit(1);
        }
    }

    /** Prints {@code message} as a usage error and exits with 2; never returns normally. */
    private static IllegalArgumentException usageError(String message) {
        System.err.println("Demo: " + message + " (--help lists the options)");
        System.exit(2);
        return new IllegalArgumentException(message);
    }
}
