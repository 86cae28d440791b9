package org.spanheap.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.spanheap.CompactingHeap;

/**
 * An epoch change closes a shared arena; on JDK 25 a thread that the close
 * stops inside an access is left with its interrupt status set (JDK-8306324).
 * The heap's own accesses (read, write, getLong, setLong, the copy of an
 * allocation) retry on a fresh segment and must leave the status as it was:
 * clear if it was clear, set if it was set.
 */
class CompactingHeapInterruptTest {

    private static final int OBJECTS = 2048;
    private static final int SIZE = 8192; // long copies: accesses that a close is likely to stop midway

    @Test
    void accessesThatAnEpochChangeStopsLeaveNoInterrupt() throws Exception {
        assertStatusKept(false, "a thread nobody interrupted was interrupted");
    }

    @Test
    void anInterruptFromBeforeTheAccessStays() throws Exception {
        assertStatusKept(true, "an interrupted thread was no longer interrupted");
    }

    /** Runs {@link #churn} and asserts that no operation changed the workers' interrupt status. */
    private static void assertStatusKept(boolean interruptSelf, String what) throws Exception {
        AtomicLong wrong = new AtomicLong();
        long ops = churn(interruptSelf, wrong);
        assertTrue(ops > 0);
        assertEquals(0, wrong.get(), "operations after which " + what + " (of " + ops + ")");
    }

    /**
     * Two threads read, write and replace objects while a third compacts without pause;
     * each worker checks its interrupt status after every operation, which must be
     * {@code interruptSelf}. Returns the operations done; {@code wrong} counts the checks
     * that failed.
     */
    private static long churn(boolean interruptSelf, AtomicLong wrong) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicLong ops = new AtomicLong();
        try (CompactingHeap heap = CompactingHeap.builder().reclaimBatchBytes(256 << 10).build();
                Arena arena = Arena.ofShared()) {
            MemorySegment source = arena.allocate(SIZE);
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                int seed = t;
                threads.add(Thread.ofPlatform().start(() -> {
                    try {
                        if (interruptSelf) {
                            Thread.currentThread().interrupt();
                        }
                        work(heap, source, seed, interruptSelf, stop, wrong, ops);
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    } finally {
                        Thread.interrupted(); // leave the thread as we found it
                    }
                }));
            }
            threads.add(Thread.ofPlatform().start(() -> {
                try {
                    while (!stop.get()) {
                        heap.compact(); // an epoch change per call
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            }));
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(1500);
            while (System.nanoTime() < end && wrong.get() == 0 && failure.get() == null) {
                Thread.sleep(20);
            }
            stop.set(true);
            for (Thread t : threads) {
                t.join();
            }
        }
        if (failure.get() != null) {
            throw new AssertionError("a thread failed", failure.get());
        }
        return ops.get();
    }

    private static void work(CompactingHeap heap, MemorySegment source, int seed, boolean interruptSelf,
            AtomicBoolean stop, AtomicLong wrong, AtomicLong ops) {
        SplittableRandom random = new SplittableRandom(seed);
        long[] handles = new long[OBJECTS];
        for (int i = 0; i < OBJECTS; i++) {
            handles[i] = heap.allocateFrom(source);
        }
        byte[] into = new byte[SIZE];
        long n = 0;
        while (!stop.get()) {
            int i = random.nextInt(OBJECTS);
            switch (random.nextInt(5)) {
                case 0 -> heap.read(handles[i], s -> {
                    MemorySegment.copy(s, ValueLayout.JAVA_BYTE, 0, into, 0, SIZE);
                    return null;
                });
                case 1 -> heap.write(handles[i], s -> MemorySegment.copy(source, 0, s, 0, SIZE));
                case 2 -> heap.setLong(handles[i], 0, n);
                case 3 -> heap.getLong(handles[i], SIZE - 8);
                default -> {
                    heap.free(handles[i]);
                    handles[i] = heap.allocateFrom(source); // the copy runs in the current epoch too
                }
            }
            n++;
            if (Thread.currentThread().isInterrupted() != interruptSelf) {
                wrong.incrementAndGet();
                if (interruptSelf) {
                    Thread.currentThread().interrupt(); // keep checking with the status we started with
                } else {
                    Thread.interrupted();
                }
            }
        }
        ops.addAndGet(n);
        for (long h : handles) {
            heap.free(h);
        }
    }
}
