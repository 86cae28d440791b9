package org.spanheap.jmh;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.Locale;
import java.util.SplittableRandom;
import javax.cache.Cache;
import javax.cache.CacheManager;
import javax.cache.Caching;
import org.spanheap.cache.OffHeapCache;
import org.spanheap.cache.Serializers;
import org.spanheap.jcache.OffHeapConfiguration;
import org.spanheap.jcache.SpanheapCachingProvider;

/**
 * What the JCache layer costs spanheap-cache, measured so that a shared, loaded machine
 * disturbs it little: {@link JCacheBenchmark}'s operation on one thread, on an
 * {@link OffHeapCache} through its own API and on one through spanheap's JCache provider,
 * both alive in one JVM, in alternating rounds; each round's cost is the thread's CPU time per
 * operation (time the thread waited for a core is not counted). Prints, per workload row, the
 * median CPU nanoseconds per operation of each and the median of the rounds' ratios.
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -cp jmh/target/benchmarks.jar org.spanheap.jmh.JCacheOverhead \
 *     [rounds] [ops-per-round]
 * </pre>
 */
public final class JCacheOverhead {

    /** One cache under the operation: a get, and a put of a fresh value on a miss or a write. */
    private interface Target {
        byte[] get(long key);

        void put(long key, byte[] value);
    }

    public static void main(String[] args) {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 21;
        int opsPerRound = args.length > 1 ? Integer.parseInt(args[1]) : 300_000;
        long capacity = 64L << 20;
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        CacheManager manager = Caching.getCachingProvider(SpanheapCachingProvider.class.getName()).getCacheManager();
        System.out.println("| zipf | write % | values | API CPU ns/op | JCache CPU ns/op | JCache / API (median of "
                + rounds + " paired rounds) |");
        System.out.println("|---|---|---|---|---|---|");
        double[] allRatios = new double[8];
        int row = 0;
        for (String values : new String[] {"100", "100-8192"}) {
            for (int writePercent : new int[] {5, 50}) {
                for (double zipf : new double[] {0.9, 0.99}) {
                    CacheBenchmark.ValueSizes sizes = CacheBenchmark.ValueSizes.of(values);
                    int[] sample = CacheBenchmark.ZipfSample.of(sizes.keys(), zipf);
                    try (OffHeapCache<Long, byte[]> api = OffHeapCache.builder(Serializers.longs(), Serializers.bytes())
                            .capacity(capacity).build()) {
                        OffHeapConfiguration<Long, byte[]> config = new OffHeapConfiguration<Long, byte[]>()
                                .setCapacity(capacity).setSerializers(Serializers.longs(), Serializers.bytes());
                        config.setTypes(Long.class, byte[].class);
                        Cache<Long, byte[]> jcache = manager.createCache("overhead-" + row, config);
                        Target viaApi = new Target() {
                            public byte[] get(long key) {
                                return api.get(key);
                            }

                            public void put(long key, byte[] value) {
                                api.put(key, value);
                            }
                        };
                        Target viaJCache = new Target() {
                            public byte[] get(long key) {
                                return jcache.get(key);
                            }

                            public void put(long key, byte[] value) {
                                jcache.put(key, value);
                            }
                        };
                        SplittableRandom random = new SplittableRandom(row);
                        // warm-up: fill both caches and let the JIT settle
                        for (int i = 0; i < 5; i++) {
                            run(viaApi, sample, sizes, writePercent, opsPerRound, random);
                            run(viaJCache, sample, sizes, writePercent, opsPerRound, random);
                        }
                        double[] apiNs = new double[rounds];
                        double[] jNs = new double[rounds];
                        double[] ratio = new double[rounds];
                        for (int r = 0; r < rounds; r++) {
                            boolean apiFirst = (r & 1) == 0; // alternate the order: drift hits both alike
                            for (int k = 0; k < 2; k++) {
                                boolean isApi = apiFirst == (k == 0);
                                long t0 = threads.getCurrentThreadCpuTime();
                                run(isApi ? viaApi : viaJCache, sample, sizes, writePercent, opsPerRound, random);
                                double ns = (threads.getCurrentThreadCpuTime() - t0) / (double) opsPerRound;
                                if (isApi) {
                                    apiNs[r] = ns;
                                } else {
                                    jNs[r] = ns;
                                }
                            }
                            ratio[r] = jNs[r] / apiNs[r];
                        }
                        double medianRatio = median(ratio);
                        allRatios[row++] = medianRatio;
                        System.out.printf(Locale.ROOT, "| %s | %d | %s | %.0f | %.0f | %.3f |%n", zipf, writePercent,
                                values, median(apiNs), median(jNs), medianRatio);
                        manager.destroyCache(jcache.getName());
                    }
                }
            }
        }
        double logSum = 0;
        for (double r : allRatios) {
            logSum += Math.log(r);
        }
        System.out.printf(Locale.ROOT, "%ngeometric mean of the rows' JCache / API: %.3f%n",
                Math.exp(logSum / allRatios.length));
        manager.close();
    }

    private static long sink;

    /** {@code ops} of CacheBenchmark's operation on {@code target}. */
    private static void run(Target target, int[] sample, CacheBenchmark.ValueSizes sizes, int writePercent, int ops,
            SplittableRandom random) {
        int position = random.nextInt(1 << 30);
        long found = 0;
        for (int i = 0; i < ops; i++) {
            long key = CacheBenchmark.ZipfSample.key(sample[position++ & (sample.length - 1)]);
            if (random.nextInt(100) < writePercent) {
                target.put(key, sizes.fresh(key));
                continue;
            }
            byte[] v = target.get(key);
            if (v == null) {
                target.put(key, sizes.fresh(key));
            } else {
                found += v.length;
            }
        }
        sink += found;
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }
}
