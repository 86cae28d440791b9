package org.spanheap.jmh;

import joptsimple.OptionSet;
import joptsimple.OptionSpec;
import org.spanheap.SpanHeap;

import java.lang.foreign.MemorySegment;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/**
 * What a thread's start and end cost the span heap's thread caches: larson's pattern without
 * JMH. 1024 live blocks of 16-256 B; each generation is a new platform thread that frees a
 * block at a random slot and allocates a new one there, {@code --ops} times, then ends; the
 * next generation inherits the slots. Prints the time per generation for each of five rounds.
 * Meant to be timed whole, two builds against each other:
 * {@code farm-bench -n 6 --vs "java --enable-native-access=ALL-UNNAMED -cp BEFORE.jar
 * org.spanheap.jmh.ThreadTurnover" -- java --enable-native-access=ALL-UNNAMED -cp AFTER.jar
 * org.spanheap.jmh.ThreadTurnover} (docs/java-core.md, "Thread caches").
 */
public final class ThreadTurnover {

    private ThreadTurnover() {
    }

    public static void main(String[] args) throws InterruptedException {
        CommandLine cli = new CommandLine(ThreadTurnover.class,
                "Threads that each replace random blocks of a span heap, then end; five rounds.");
        OptionSpec<Integer> gensOpt = cli.parser().accepts("generations", "threads per round")
                .withRequiredArg().ofType(Integer.class).defaultsTo(2000);
        OptionSpec<Integer> opsOpt = cli.parser().accepts("ops", "replacements per thread")
                .withRequiredArg().ofType(Integer.class).defaultsTo(1000);
        OptionSet o = cli.parse(args);
        int generations = o.valueOf(gensOpt);
        int ops = o.valueOf(opsOpt);
        cli.check(generations > 0, "--generations must be positive: " + generations);
        cli.check(ops >= 0, "--ops must be 0 or more: " + ops);

        try (SpanHeap heap = SpanHeap.create()) {
            MemorySegment[] live = new MemorySegment[1024];
            for (int i = 0; i < live.length; i++) {
                live[i] = heap.allocateUninitialized(16 + (i % 16) * 16);
            }
            long[] rng = {0x9E3779B97F4A7C15L};
            Throwable[] failure = new Throwable[1];
            for (int round = 0; round < 5; round++) {
                long start = System.nanoTime();
                for (int g = 0; g < generations; g++) {
                    Thread t = new Thread(() -> {
                        long x = rng[0];
                        for (int r = 0; r < ops; r++) {
                            x ^= x << 13; // xorshift64, as LarsonBenchmark
                            x ^= x >>> 7;
                            x ^= x << 17;
                            int slot = (int) (x >>> 54);
                            heap.free(live[slot]);
                            live[slot] = heap.allocateUninitialized(16 + ((x >>> 20) & 15) * 16);
                            live[slot].set(JAVA_BYTE, 0, (byte) r);
                        }
                        rng[0] = x;
                    });
                    t.setUncaughtExceptionHandler((th, e) -> failure[0] = e);
                    t.start();
                    t.join();               // happens-after the thread's writes to live and rng
                    if (failure[0] != null) {
                        throw new IllegalStateException("generation " + g + " failed", failure[0]);
                    }
                }
                long ns = System.nanoTime() - start;
                System.out.printf("round %d: %.1f us per generation, %.1f ns per replacement%n",
                        round, ns / 1e3 / generations, ops == 0 ? 0.0 : ns / (double) generations / ops);
            }
            for (MemorySegment s : live) {
                heap.free(s);
            }
        }
    }
}
