package org.spanheap.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.spanheap.CompactingHeap;

/**
 * When two reclaim batches of freed bytes wait, a free waits for the round in
 * progress (and runs one if that was not enough), so the limbo stays under two
 * batches however slowly epoch changes come. Busy threads that outnumber the
 * cores make them slow here, as 16 cache threads on 2 cores did: an epoch
 * change is a handshake, which a descheduled thread answers only when it runs.
 */
class CompactingHeapFreeBackpressureTest {

    private static final long BATCH = 1 << 20;
    private static final int BLOCK = 1024;
    private static final int OBJECTS = 16 << 10; // 16 MiB: the heap's batch stays BATCH (committed / 32 is less)

    @Test
    void aSingleFreeingThreadNeverLeavesTwoBatchesWaiting() {
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> busy = new ArrayList<>();
        try (CompactingHeap heap = CompactingHeap.builder().reclaimBatchBytes(BATCH).build()) {
            long[] h = new long[OBJECTS];
            for (int i = 0; i < h.length; i++) {
                h[i] = heap.allocate(BLOCK);
                heap.setLong(h[i], 0, i);
            }
            for (int t = 0; t < 3 * Runtime.getRuntime().availableProcessors(); t++) {
                Thread b = new Thread(() -> spin(stop), "busy-" + t);
                b.setDaemon(true);
                b.start();
                busy.add(b);
            }
            long maxPending = 0;
            int samples = 0;
            for (int round = 0; round < 4; round++) { // free half, refill, and again: four bursts
                for (int i = round & 1; i < h.length; i += 2) {
                    heap.free(h[i]);
                    h[i] = 0;
                    if ((i & 127) < 2) { // every 64th free: the limbo as the free left it
                        maxPending = Math.max(maxPending, heap.stats().pendingReclaimBytes());
                        samples++;
                    }
                }
                for (int i = round & 1; i < h.length; i += 2) {
                    h[i] = heap.allocate(BLOCK);
                    heap.setLong(h[i], 0, i);
                }
            }
            assertTrue(samples > 0);
            assertTrue(maxPending < 2 * BATCH,
                    "freed bytes waiting after a free: " + maxPending + ", at most two batches (" + 2 * BATCH + ")");
            for (int i = 0; i < h.length; i++) {
                assertEquals(i, heap.getLong(h[i], 0), "object " + i + " survived the rounds");
            }
        } finally {
            stop.set(true);
            joinAll(busy);
        }
    }

    /**
     * Waits for the busy threads even if this thread is interrupted, and keeps the interrupt:
     * a join that threw here would replace the test's own outcome (in one CI run the surefire
     * fork's test thread arrived interrupted, from outside this test and the heap).
     */
    private static void joinAll(List<Thread> threads) {
        boolean interrupted = false;
        for (Thread t : threads) {
            for (;;) {
                try {
                    t.join();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Runs Java code (a loop with safepoint polls) until told to stop. */
    private static void spin(AtomicBoolean stop) {
        long x = 1;
        while (!stop.get()) {
            x = x * 6364136223846793005L + 1442695040888963407L;
        }
        if (x == 42) {
            System.out.print(""); // keeps the loop's result live
        }
    }
}
