package org.spanheap.compact;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import org.spanheap.CompactingHeap;

/**
 * JMH-free quick measurement of the access protocol (the JMH benchmark
 * {@code CompactAccessBenchmark} in jmh/ is the reference):
 * <ul>
 * <li>{@code plain}: read 64 bytes (eight longs) through a plain segment held in an array;</li>
 * <li>{@code epoch}: resolve a handle (epoch protocol, the one chosen) and read them;</li>
 * <li>{@code read(fn)}: the same through the retrying {@code read} API;</li>
 * <li>{@code ebr-pin}: the per-access cost candidate B (per-thread epochs) adds on top of a
 *     plain read: announce the epoch with a volatile store (a StoreLoad fence on x86) and
 *     leave with a release store; B would pay this plus the handle lookup.</li>
 * <li>{@code cas-pin}: a writer pin of candidate B (a per-object pin count that a mover
 *     must find zero): CAS up before the access, CAS down after it.</li>
 * </ul>
 * Prints the minimum over rounds. Run from the core module's test classes:
 * {@code java --enable-native-access=ALL-UNNAMED -cp <core classes>:<test classes> org.spanheap.compact.CompactAccessBench 10}
 */
public final class CompactAccessBench {

    static final int N = 4096;
    static final int REPS = 2000;
    static final ValueLayout.OfLong L = ValueLayout.JAVA_LONG_UNALIGNED;
    static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(long[].class);
    static volatile long globalEpoch = 1;

    public static void main(String[] args) {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 10;
        try (CompactingHeap heap = CompactingHeap.builder().build()) {
            long[] handles = new long[N];
            MemorySegment[] plain = new MemorySegment[N];
            for (int i = 0; i < N; i++) {
                handles[i] = heap.allocate(64);
                plain[i] = heap.segment(handles[i]).reinterpret(64, Arena.global(), null);
                for (int k = 0; k < 8; k++) {
                    heap.setLong(handles[i], k * 8L, i * 8L + k);
                }
            }
            long[] slots = new long[32]; // the announcing thread's slot at 16, away from other lines
            long[] pins = new long[N];
            double[] best = {Double.MAX_VALUE, Double.MAX_VALUE, Double.MAX_VALUE, Double.MAX_VALUE,
                    Double.MAX_VALUE};
            long sink = 0;
            double ops = (double) REPS * N;
            for (int r = 0; r < rounds; r++) {
                long t0 = System.nanoTime();
                sink += plainRead(plain);
                long t1 = System.nanoTime();
                sink += segmentRead(heap, handles);
                long t2 = System.nanoTime();
                sink += lambdaRead(heap, handles);
                long t3 = System.nanoTime();
                sink += ebrPinnedRead(plain, slots);
                long t4 = System.nanoTime();
                sink += casPinnedRead(plain, pins);
                long t5 = System.nanoTime();
                best[4] = Math.min(best[4], (t5 - t4) / ops);
                best[0] = Math.min(best[0], (t1 - t0) / ops);
                best[1] = Math.min(best[1], (t2 - t1) / ops);
                best[2] = Math.min(best[2], (t3 - t2) / ops);
                best[3] = Math.min(best[3], (t4 - t3) / ops);
            }
            System.out.printf("min over %d rounds, ns per 64-byte read: plain %.2f, epoch resolve+read %.2f (%.2fx),"
                    + " read(fn) %.2f (%.2fx), ebr-pin+plain %.2f (%.2fx), cas-pin+plain %.2f (%.2fx)   [sink %d]%n",
                    rounds, best[0], best[1], best[1] / best[0], best[2], best[2] / best[0], best[3],
                    best[3] / best[0], best[4], best[4] / best[0], sink & 1);
        }
    }

    static long sum8(MemorySegment s) {
        return s.get(L, 0) + s.get(L, 8) + s.get(L, 16) + s.get(L, 24) + s.get(L, 32) + s.get(L, 40)
                + s.get(L, 48) + s.get(L, 56);
    }

    static long plainRead(MemorySegment[] segs) {
        long s = 0;
        for (int r = 0; r < REPS; r++) {
            for (MemorySegment m : segs) {
                s += sum8(m);
            }
        }
        return s;
    }

    static long segmentRead(CompactingHeap heap, long[] handles) {
        long s = 0;
        for (int r = 0; r < REPS; r++) {
            for (long h : handles) {
                s += sum8(heap.segment(h));
            }
        }
        return s;
    }

    static long lambdaRead(CompactingHeap heap, long[] handles) {
        long s = 0;
        for (int r = 0; r < REPS; r++) {
            for (long h : handles) {
                s += heap.read(h, CompactAccessBench::sum8);
            }
        }
        return s;
    }

    static long casPinnedRead(MemorySegment[] segs, long[] pins) {
        long s = 0;
        for (int r = 0; r < REPS; r++) {
            for (int i = 0; i < segs.length; i++) {
                long p = (long) SLOT.getVolatile(pins, i);
                while (!SLOT.compareAndSet(pins, i, p, p + 1)) {
                    p = (long) SLOT.getVolatile(pins, i);
                }
                s += sum8(segs[i]);
                SLOT.getAndAdd(pins, i, -1L);
            }
        }
        return s;
    }

    static long ebrPinnedRead(MemorySegment[] segs, long[] slots) {
        long s = 0;
        for (int r = 0; r < REPS; r++) {
            for (MemorySegment m : segs) {
                SLOT.setVolatile(slots, 16, globalEpoch); // announce: StoreLoad before the reads
                s += sum8(m);
                SLOT.setRelease(slots, 16, 0L); // leave
            }
        }
        return s;
    }
}
