package org.spanheap.jmh;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.SplittableRandom;
import joptsimple.OptionSet;
import joptsimple.OptionSpec;
import org.spanheap.CompactingHeap;

/**
 * {@link CompactReplaceBenchmark#replace}'s loop as a plain program, for quick A/B runs of two
 * builds (one process each, alternating): one thread replaces values of {@code 64..--max-size}
 * bytes over 1,024 keys in a {@code CompactingHeap} (allocate with a copy, free the old handle)
 * and prints the median nanoseconds per replace of its half-second windows after a 2 s
 * warm-up. JMH's figures are the ones to quote; this one shows a change within seconds.
 *
 * <p>Run: {@code java --enable-native-access=ALL-UNNAMED -cp jmh/target/benchmarks.jar
 * org.spanheap.jmh.ReplaceLoop --heap owned|lanes --seconds 3}.
 */
public final class ReplaceLoop {

    private static final int KEYS = 1024;
    private static final int MIN_SIZE = 64;
    private static final int SEQUENCE = 1 << 16;
    private static final long WINDOW_NANOS = 500_000_000L;
    private static final int WARM_UP_WINDOWS = 4;

    private ReplaceLoop() {
    }

    public static void main(String[] args) {
        CommandLine cli = new CommandLine(ReplaceLoop.class,
                "Median ns per replace of one thread in a CompactingHeap (allocate with a copy, free the old).");
        OptionSpec<String> heapOpt = cli.parser().accepts("heap", "lanes (the default heap) or owned (threadOwnedPages)")
                .withRequiredArg().defaultsTo("lanes");
        OptionSpec<Integer> secondsOpt = cli.parser().accepts("seconds", "measured seconds, after 2 s of warm-up")
                .withRequiredArg().ofType(Integer.class).defaultsTo(3);
        OptionSpec<Integer> maxOpt = cli.parser().accepts("max-size", "largest value in bytes")
                .withRequiredArg().ofType(Integer.class).defaultsTo(128);
        OptionSet o = cli.parse(args);
        String heapKind = o.valueOf(heapOpt);
        int seconds = o.valueOf(secondsOpt);
        int maxSize = o.valueOf(maxOpt);
        cli.check(heapKind.equals("lanes") || heapKind.equals("owned"), "--heap must be lanes or owned: " + heapKind);
        cli.check(seconds > 0, "--seconds must be positive: " + seconds);
        cli.check(maxSize >= MIN_SIZE, "--max-size must be at least " + MIN_SIZE + ": " + maxSize);

        SplittableRandom random = new SplittableRandom(42);
        int[] sizes = new int[SEQUENCE];
        int[] order = new int[SEQUENCE];
        for (int i = 0; i < SEQUENCE; i++) {
            sizes[i] = MIN_SIZE + random.nextInt(maxSize - MIN_SIZE + 1);
            order[i] = random.nextInt(KEYS);
        }
        try (Arena arena = Arena.ofShared(); // as CompactReplaceBenchmark
                CompactingHeap heap = heapKind.equals("owned")
                        ? CompactingHeap.builder().threadOwnedPages(true).build() : CompactingHeap.create()) {
            MemorySegment source = arena.allocate(maxSize, 16);
            long[] handles = new long[KEYS];
            for (int k = 0; k < KEYS; k++) {
                handles[k] = heap.allocateFrom(source.asSlice(0, sizes[k]));
            }
            int windows = seconds * 2;
            double[] nanosPerOp = new double[windows];
            int next = 0;
            for (int w = -WARM_UP_WINDOWS; w < windows; w++) {
                long start = System.nanoTime();
                long ops = 0;
                while (System.nanoTime() - start < WINDOW_NANOS) {
                    for (int j = 0; j < 1000; j++) {
                        int i = next++ & (SEQUENCE - 1);
                        int key = order[i];
                        long h = heap.allocateFrom(source.asSlice(0, sizes[(i * 7) & (SEQUENCE - 1)]));
                        heap.free(handles[key]);
                        handles[key] = h;
                    }
                    ops += 1000;
                }
                if (w >= 0) {
                    nanosPerOp[w] = (System.nanoTime() - start) / (double) ops;
                }
            }
            Arrays.sort(nanosPerOp);
            System.out.printf("%s %.1f ns per replace (median of %d windows; fastest %.1f, slowest %.1f)%n",
                    heapKind, nanosPerOp[windows / 2], windows, nanosPerOp[0], nanosPerOp[windows - 1]);
        }
    }
}
