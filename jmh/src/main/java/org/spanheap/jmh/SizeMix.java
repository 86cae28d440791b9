package org.spanheap.jmh;

import java.util.SplittableRandom;

/**
 * Random block sizes for the mixed workloads, drawn once per thread from a fixed seed so every
 * peer sees the same sequence. The mix leans to small blocks, as off-heap caches and buffer pools
 * see them: 80% in [16 B, 1 KiB), 18% in [1 KiB, 32 KiB), 2% in [32 KiB, 256 KiB], each
 * log-uniform inside its band.
 */
final class SizeMix {

    private SizeMix() {
    }

    /** Returns {@code n} sizes from the mix (a power of two {@code n} lets callers mask). */
    static long[] draw(int n, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        long[] sizes = new long[n];
        for (int i = 0; i < n; i++) {
            int band = r.nextInt(100);
            sizes[i] = band < 80 ? logUniform(r, 16, 1024)
                    : band < 98 ? logUniform(r, 1024, 32 * 1024)
                    : logUniform(r, 32 * 1024, 256 * 1024);
        }
        return sizes;
    }

    /** Returns {@code n} sizes uniform in {@code [min, max]} (larson's distribution). */
    static long[] uniform(int n, long min, long max, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        long[] sizes = new long[n];
        for (int i = 0; i < n; i++) {
            sizes[i] = r.nextLong(min, max + 1);
        }
        return sizes;
    }

    static long logUniform(SplittableRandom r, long min, long max) {
        double x = Math.log(min) + r.nextDouble() * (Math.log(max) - Math.log(min));
        return Math.max(min, Math.min(max, (long) Math.exp(x)));
    }
}
