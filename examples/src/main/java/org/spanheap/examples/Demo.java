package org.spanheap.examples;

import org.spanheap.examples.cache.CacheChurn;

import java.util.List;

/**
 * The README demo: the off-heap cache of {@link org.spanheap.examples.cache} under a churn
 * workload, on a compacting heap (kappa 4 plus a background {@code compact()} every second),
 * on the same heap with compaction off (kappa infinite), on a compacting heap that takes its
 * pages from a span heap, and on {@code malloc} per entry; it prints a line per second and a
 * table at the end. Flags: see {@link CacheChurn.Options#USAGE} ({@code -help}).
 */
public final class Demo {

    private Demo() {
    }

    /**
     * Runs the demo.
     *
     * @param args flags, e.g. {@code -seconds 30 -threads 4}
     * @throws InterruptedException if interrupted
     */
    public static void main(String[] args) throws InterruptedException {
        if (List.of(args).contains("-help") || List.of(args).contains("--help")) {
            System.out.print(CacheChurn.Options.USAGE);
            return;
        }
        CacheChurn.Options o;
        try {
            o = CacheChurn.Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage());
            System.exit(2);
            return;
        }
        System.out.printf(java.util.Locale.ROOT, "spanheap demo: off-heap cache churn on Java %s, %d threads, bound %d MiB,"
                        + " %d keys (Zipf %.2f), values %d B..%d B (small/large phases of %.0f s), %.0f s per store;"
                        + " compacting stores: kappa %d, iota %d KiB, compact() every %d ms%n",
                Runtime.version(), o.threads, o.maxMib, o.keys, o.zipf, o.minValue, o.maxValue, o.phaseSeconds,
                o.seconds, o.kappa, o.iotaKib, o.compactMs);
        List<CacheChurn.Result> results = new CacheChurn(o, System.out).runAll();
        CacheChurn.report(results, System.out);
        System.out.println("""

                live: the cache's entry bytes (header + key + value) at the end of the run, the bound is the cache's;
                committed: the store's memory (compacting heap: its pages, a small reserve of empty pages and
                large objects' mappings; malloc: growth of glibc's mallinfo2 arena + mmap bytes during the run);
                resident: the store's own estimate (compacting heap: its committed bytes, all of them written, and
                emptied pages go back to the OS); RSS growth: the process's VmRSS now minus when the run started
                (the Java heap is fixed and pre-touched); moved: bytes compaction copied.""");
        if (results.stream().anyMatch(r -> r.errors() != 0)) {
            System.exit(1);
        }
    }
}
