package org.spanheap.internal.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

class LimboTest {

    @Test
    void countsUnitsPerStripeAndEstimatesTheWhole() {
        HandleTable t = new HandleTable();
        try {
            Limbo limbo = new Limbo(t);
            assertTrue(limbo.isEmpty());
            int i = t.takeIndices(1);
            assertEquals(Limbo.STRIPES, limbo.push(i, 1), "one unit at least, times the stripes");
            int j = t.takeIndices(1);
            assertEquals(4L * Limbo.STRIPES, limbo.push(j, 48), "48 bytes are three units more");
            assertEquals(4, limbo.pendingUnits());
            assertFalse(limbo.isEmpty());
            int[] heads = new int[Limbo.STRIPES];
            limbo.drain(heads);
            assertTrue(limbo.isEmpty());
            assertEquals(0, limbo.pendingUnits());
            assertEquals(Set.of(i, j), walk(t, heads));
        } finally {
            t.close();
        }
    }

    @Test
    void everyPushOfManyThreadsIsDrainedOnce() throws InterruptedException {
        HandleTable t = new HandleTable();
        try {
            Limbo limbo = new Limbo(t);
            int threads = 6, each = 5_000;
            int[] indices = new int[threads * each];
            for (int n = 0; n < indices.length; n++) {
                indices[n] = t.takeIndices(1);
            }
            CountDownLatch go = new CountDownLatch(1);
            List<Thread> pushers = new ArrayList<>();
            for (int k = 0; k < threads; k++) {
                int base = k * each;
                Thread th = new Thread(() -> {
                    try {
                        go.await();
                    } catch (InterruptedException e) {
                        throw new AssertionError(e);
                    }
                    for (int n = 0; n < each; n++) {
                        limbo.push(indices[base + n], 16);
                    }
                });
                th.start();
                pushers.add(th);
            }
            go.countDown();
            Set<Integer> seen = new HashSet<>();
            int[] heads = new int[Limbo.STRIPES];
            boolean running = true;
            while (running) { // drains while they push, as rounds do
                running = pushers.stream().anyMatch(Thread::isAlive);
                limbo.drain(heads);
                for (int i : walk(t, heads)) {
                    assertTrue(seen.add(i), "drained twice: " + i);
                }
            }
            assertEquals(threads * each, seen.size());
            assertTrue(limbo.isEmpty());
        } finally {
            t.close();
        }
    }

    private static Set<Integer> walk(HandleTable t, int[] heads) {
        Set<Integer> got = new HashSet<>();
        for (int h : heads) {
            for (int i = h; i != HandleTable.NO_INDEX; i = t.link(i)) {
                assertTrue(got.add(i), "a chain visits " + i + " twice");
            }
        }
        return got;
    }
}
