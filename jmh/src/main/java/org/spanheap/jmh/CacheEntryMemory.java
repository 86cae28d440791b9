package org.spanheap.jmh;

import java.io.BufferedReader;
import java.io.File;
import java.io.FileReader;
import java.io.IOException;
import java.nio.file.Files;
import java.time.Duration;
import org.spanheap.cache.OffHeapCache;
import org.spanheap.cache.Serializers;

/**
 * What an {@link OffHeapCache} entry takes on the Java heap: the live bytes of
 * every class (by {@code jcmd <pid> GC.class_histogram}, which collects first;
 * G1's filler objects left out) before and after storing N entries with
 * {@code Long} keys and 100-byte values, divided by N. The figure behind
 * {@code OffHeapCache.ENTRY_OVERHEAD} (docs/cache.md).
 *
 * <p>Usage: {@code java --enable-native-access=ALL-UNNAMED -cp jmh/target/benchmarks.jar
 * org.spanheap.jmh.CacheEntryMemory N [expiry]} (with {@code expiry}: both kinds of expiry on).
 * Needs {@code jcmd} beside the running {@code java}.
 */
public final class CacheEntryMemory {

    private CacheEntryMemory() {}

    public static void main(String[] args) throws Exception {
        int n = Integer.parseInt(args[0]);
        boolean expiry = args.length > 1 && args[1].equals("expiry");
        var builder = OffHeapCache.builder(Serializers.longs(), Serializers.bytes()).capacity(1L << 40);
        if (expiry) {
            builder.expireAfterWrite(Duration.ofHours(1)).expireAfterAccess(Duration.ofHours(1));
        }
        try (OffHeapCache<Long, byte[]> cache = builder.build()) {
            byte[] value = new byte[100];
            cache.put(-1L, value); // the cache's fixed structures exist before the first sample
            long before = liveHeapBytes();
            for (long k = 1_000; k < 1_000 + n; k++) {
                cache.put(k, value);
            }
            long after = liveHeapBytes();
            System.out.printf("%d entries%s: %.1f bytes each on the Java heap, key included%n", n,
                    expiry ? " (both expiries on)" : "", (after - before) / (double) n);
        }
    }

    /** Live bytes of all classes but G1's fillers, from a class histogram of this JVM. */
    private static long liveHeapBytes() throws IOException, InterruptedException {
        File out = File.createTempFile("histogram", ".txt");
        try {
            Process p = new ProcessBuilder(System.getProperty("java.home") + "/bin/jcmd",
                    Long.toString(ProcessHandle.current().pid()), "GC.class_histogram")
                    .redirectErrorStream(true).redirectOutput(out).start();
            if (p.waitFor() != 0) {
                throw new IOException("jcmd failed: " + Files.readString(out.toPath()));
            }
            long total = 0;
            try (BufferedReader r = new BufferedReader(new FileReader(out))) {
                for (String line; (line = r.readLine()) != null; ) {
                    String[] f = line.trim().split("\\s+");
                    // rows: "num: instances bytes class-name"
                    if (f.length >= 4 && f[0].endsWith(":") && !line.contains("jdk.internal.vm.Filler")) {
                        total += Long.parseLong(f[2]);
                    }
                }
            }
            return total;
        } finally {
            out.delete();
        }
    }
}
