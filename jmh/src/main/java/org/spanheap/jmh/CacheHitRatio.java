package org.spanheap.jmh;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

import joptsimple.OptionSet;
import joptsimple.OptionSpec;

/**
 * Hit ratio of the cache peers on one trace, the same for every peer: the eviction policies
 * compared without the scheduler in it. {@link CacheBenchmark} reports a hit ratio beside its
 * throughput, but there threads interleave differently in every run and nothing is prefilled,
 * so a slower peer reaches fewer of the popular keys in its warm-up and its ratio follows its
 * speed. Here one thread replays {@link CacheBenchmark}'s operation (Zipf keys; a put with
 * probability {@code writePercent}, else a get and, on a miss, a put) from the same start, with
 * the same random choices, first {@code --warmup-ops} operations uncounted (the cache fills and
 * settles), then {@code --ops} counted. Every peer has the same byte bound, as in the benchmark.
 *
 * <p>Run: {@code java --enable-native-access=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow
 * -cp jmh/target/benchmarks.jar org.spanheap.jmh.CacheHitRatio}; it prints one row per
 * workload (the benchmark's eight): each peer's hit ratio in percent and, in brackets, the
 * thousands of entries it held at the end (what its bound let it keep), then spanheap's
 * difference to OHC and to Caffeine in points.
 */
public final class CacheHitRatio {

    private CacheHitRatio() {}

    /**
     * Runs the eight workloads for each peer and prints the table.
     *
     * @param args {@code --peers LIST --values LIST --writes LIST --zipf LIST --warmup-ops N --ops N
     *             --capacity-mib N}
     */
    public static void main(String[] args) {
        CommandLine cli = new CommandLine(CacheHitRatio.class, "Hit ratio of each cache peer on the same"
                + " single-threaded trace of CacheBenchmark's operation, after a warm-up that fills the cache.");
        OptionSpec<String> peersOpt = cli.parser().accepts("peers", "comma-separated: "
                + Arrays.toString(CachePeer.Kind.values())).withRequiredArg().describedAs("LIST")
                .defaultsTo("SPANHEAP,OHC,OHC_TINYLFU,CAFFEINE_HEAP");
        OptionSpec<Long> warmOpt = cli.parser().accepts("warmup-ops", "operations before counting")
                .withRequiredArg().describedAs("N").ofType(Long.class).defaultsTo(8L << 20);
        OptionSpec<Long> opsOpt = cli.parser().accepts("ops", "operations counted").withRequiredArg()
                .describedAs("N").ofType(Long.class).defaultsTo(4L << 20);
        OptionSpec<String> valuesOpt = cli.parser().accepts("values", "value sizes, as CacheBenchmark's param")
                .withRequiredArg().describedAs("100,100-8192").defaultsTo("100,100-8192");
        OptionSpec<String> writesOpt = cli.parser().accepts("writes", "percent of operations that are puts")
                .withRequiredArg().describedAs("5,50").defaultsTo("5,50");
        OptionSpec<String> zipfOpt = cli.parser().accepts("zipf", "exponents of the key distribution")
                .withRequiredArg().describedAs("0.9,0.99").defaultsTo("0.9,0.99");
        OptionSpec<Long> capOpt = cli.parser().accepts("capacity-mib", "every peer's bound").withRequiredArg()
                .describedAs("MIB").ofType(Long.class).defaultsTo(64L);
        OptionSet o = cli.parse(args);
        List<CachePeer.Kind> peers = new ArrayList<>();
        for (String name : o.valueOf(peersOpt).split(",")) {
            try {
                peers.add(CachePeer.Kind.valueOf(name.trim()));
            } catch (IllegalArgumentException e) {
                cli.check(false, "--peers: no peer " + name.trim() + "; one of " + Arrays.toString(CachePeer.Kind.values()));
            }
        }
        String[] valueSpecs = o.valueOf(valuesOpt).split(",");
        int[] writeShares;
        double[] exponents;
        try {
            writeShares = Arrays.stream(o.valueOf(writesOpt).split(",")).mapToInt(w -> Integer.parseInt(w.trim()))
                    .toArray();
            exponents = Arrays.stream(o.valueOf(zipfOpt).split(",")).mapToDouble(z -> Double.parseDouble(z.trim()))
                    .toArray();
        } catch (NumberFormatException e) {
            cli.check(false, "--writes and --zipf take comma-separated numbers: " + e.getMessage());
            return;
        }
        for (int w : writeShares) {
            cli.check(w >= 0 && w <= 100, "--writes must be 0 to 100: " + w);
        }
        for (double z : exponents) {
            cli.check(z > 0 && z < 10, "--zipf must be above 0 and below 10: " + z);
        }
        for (String v : valueSpecs) {
            cli.check(v.equals("100") || v.equals("100-8192"), "--values: 100 or 100-8192, not " + v);
        }
        long warm = o.valueOf(warmOpt);
        long ops = o.valueOf(opsOpt);
        long capacityMib = o.valueOf(capOpt);
        cli.check(warm >= 0, "--warmup-ops must be 0 or more: " + warm);
        cli.check(ops > 0, "--ops must be positive: " + ops);
        cli.check(capacityMib > 0 && capacityMib < 1L << 20, "--capacity-mib must be 1 to 1048575: " + capacityMib);

        System.out.printf(Locale.ROOT, "bound %d MiB, %d operations of warm-up, %d counted, one thread%n",
                capacityMib, warm, ops);
        System.out.println("| values | writes | Zipf | " + String.join(" | ", peers.stream().map(Enum::name).toList())
                + " | spanheap minus OHC | spanheap minus Caffeine |");
        for (String values : valueSpecs) {
            for (int writes : writeShares) {
                for (double zipf : exponents) {
                    CacheBenchmark.ValueSizes sizes = CacheBenchmark.ValueSizes.of(values);
                    int[] sample = CacheBenchmark.ZipfSample.of(sizes.keys(), zipf);
                    double[] ratio = new double[peers.size()];
                    StringBuilder row = new StringBuilder(String.format(Locale.ROOT, "| %s | %d%% | %s |",
                            values, writes, zipf));
                    for (int p = 0; p < peers.size(); p++) {
                        Replay r = replay(peers.get(p), capacityMib << 20, sizes, sample, writes, warm, ops);
                        ratio[p] = r.hitRatio();
                        row.append(String.format(Locale.ROOT, " %.2f (%d k) |", 100 * r.hitRatio(), r.entries() / 1000));
                    }
                    row.append(difference(peers, ratio, CachePeer.Kind.OHC)).append(
                            difference(peers, ratio, CachePeer.Kind.CAFFEINE_HEAP));
                    System.out.println(row);
                }
            }
        }
    }

    private static String difference(List<CachePeer.Kind> peers, double[] ratio, CachePeer.Kind other) {
        int s = peers.indexOf(CachePeer.Kind.SPANHEAP);
        int x = peers.indexOf(other);
        return s < 0 || x < 0 ? " - |" : String.format(Locale.ROOT, " %+.2f |", 100 * (ratio[s] - ratio[x]));
    }

    /** What one peer did on the trace: the share of counted gets that hit, and the entries it held at the end. */
    record Replay(double hitRatio, long entries) {}

    /** One peer on the trace. */
    static Replay replay(CachePeer.Kind kind, long capacity, CacheBenchmark.ValueSizes sizes, int[] sample,
            int writePercent, long warm, long ops) {
        try (CachePeer cache = kind.open(capacity)) {
            SplittableRandom random = new SplittableRandom(42); // the same choices for every peer
            long hits = 0;
            long misses = 0;
            for (long i = 0; i < warm + ops; i++) {
                long key = CacheBenchmark.ZipfSample.key(sample[(int) (i & (sample.length - 1))]);
                if (random.nextInt(100) < writePercent) {
                    cache.put(key, sizes.fresh(key));
                    continue;
                }
                boolean hit = cache.get(key) != null;
                if (!hit) {
                    cache.put(key, sizes.fresh(key));
                }
                if (i >= warm) {
                    if (hit) {
                        hits++;
                    } else {
                        misses++;
                    }
                }
            }
            return new Replay(hits + misses == 0 ? Double.NaN : (double) hits / (hits + misses), cache.size());
        }
    }
}
