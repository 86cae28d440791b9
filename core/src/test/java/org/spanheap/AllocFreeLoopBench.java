package org.spanheap;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * JMH-free measurement of allocate+free of 64 B on one thread (the JMH benchmark
 * {@code AllocFree64Benchmark} in jmh/ is the reference), for quick A/B work on a loaded
 * machine. Each operation reads a volatile flag, as JMH's loop does, so C2 cannot hoist the
 * fast path's loads and checks out of the loop. Operations run in chunks of 20,000 for one
 * second per peer and round; the figure printed is the <em>minimum</em> ns/op over the
 * chunks, the least disturbed by other processes (on the 2-core VM it repeats to ~1% while
 * JMH means vary by 30%).
 * <ul>
 * <li>{@code spanheap}: {@code allocateUninitialized} + write one long + {@code free};</li>
 * <li>{@code zeroed}: the same with {@code allocate};</li>
 * <li>{@code malloc}: glibc {@code malloc}/{@code free} through critical downcalls;</li>
 * <li>{@code confined}: {@code Arena.ofConfined()}, allocate, close;</li>
 * <li>{@code vthread}: {@code spanheap} on a virtual thread (stripes or direct calls). Run it
 *     in a JVM of its own: it shares the compiled loop with {@code spanheap} and its slow
 *     paths change C2's profile.</li>
 * </ul>
 * Run from the core module's classes:
 * {@code java --enable-native-access=ALL-UNNAMED -cp core/target/classes:core/target/test-classes
 * org.spanheap.AllocFreeLoopBench spanheap,zeroed,malloc,confined 5}
 */
public final class AllocFreeLoopBench {
    private static final MethodHandle MALLOC;
    private static final MethodHandle FREE;
    static {
        Linker linker = Linker.nativeLinker();
        Linker.Option critical = Linker.Option.critical(false);
        MALLOC = linker.downcallHandle(linker.defaultLookup().find("malloc").orElseThrow(),
                FunctionDescriptor.of(JAVA_LONG, JAVA_LONG), critical);
        FREE = linker.downcallHandle(linker.defaultLookup().find("free").orElseThrow(),
                FunctionDescriptor.ofVoid(JAVA_LONG), critical);
    }

    private volatile boolean done;
    private final SpanHeap heap = SpanHeap.create();
    private long counter;
    private long sink;

    private long spanheap(int n) {
        long x = 0;
        for (int k = 0; k < n && !done; k++) {
            MemorySegment s = heap.allocateUninitialized(64);
            s.set(JAVA_LONG, 0, ++counter);
            heap.free(s);
            x += counter;
        }
        return x;
    }

    private long zeroed(int n) {
        long x = 0;
        for (int k = 0; k < n && !done; k++) {
            MemorySegment s = heap.allocate(64);
            s.set(JAVA_LONG, 0, ++counter);
            heap.free(s);
            x += counter;
        }
        return x;
    }

    private long malloc(int n) throws Throwable {
        long x = 0;
        for (int k = 0; k < n && !done; k++) {
            long p = (long) MALLOC.invokeExact(64L);
            MemorySegment.ofAddress(p).reinterpret(64).set(JAVA_LONG, 0, ++counter);
            FREE.invokeExact(p);
            x += counter;
        }
        return x;
    }

    private long confined(int n) {
        long x = 0;
        for (int k = 0; k < n && !done; k++) {
            try (Arena a = Arena.ofConfined()) {
                a.allocate(64).set(JAVA_LONG, 0, ++counter);
            }
            x += counter;
        }
        return x;
    }

    private long vthread(int n) throws InterruptedException {
        long[] r = new long[1];
        Thread.ofVirtual().start(() -> r[0] = spanheap(n)).join();
        return r[0];
    }

    private interface Op {
        long run(int n) throws Throwable;
    }

    public static void main(String[] args) throws Throwable {
        String[] peers = (args.length > 0 ? args[0] : "spanheap,zeroed,malloc,confined").split(",");
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        int chunk = 20_000;
        AllocFreeLoopBench b = new AllocFreeLoopBench();
        for (int r = 0; r < rounds; r++) {
            StringBuilder line = new StringBuilder("round " + r + " (min ns/op):");
            for (String peer : peers) {
                Op op = switch (peer) {
                    case "spanheap" -> b::spanheap;
                    case "zeroed" -> b::zeroed;
                    case "malloc" -> b::malloc;
                    case "confined" -> b::confined;
                    case "vthread" -> b::vthread;
                    default -> throw new IllegalArgumentException("unknown peer " + peer);
                };
                double min = Double.MAX_VALUE;
                long end = System.nanoTime() + 1_000_000_000L;
                while (System.nanoTime() < end) {
                    long t0 = System.nanoTime();
                    b.sink += op.run(chunk);
                    min = Math.min(min, (System.nanoTime() - t0) / (double) chunk);
                }
                line.append(String.format(" %s=%.2f", peer, min));
            }
            System.out.println(line);
        }
        b.heap.close();
    }
}
