package org.spanheap.internal.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

class IndexCacheTest {

    /** Every index is in exactly one place: held by the caller, in the cache, or on the table's free list. */
    private static void assertConserved(HandleTable t, IndexCache c, Set<Integer> held) {
        assertEquals(t.capacity() - 1, t.freeCount() + c.count() + held.size(), "index 0 is never handed out");
    }

    @Test
    void popsWhatWasPushedLatestFirstThenTakesFromTheTable() {
        HandleTable t = new HandleTable();
        try {
            IndexCache c = new IndexCache();
            int a = c.pop(t, 4), b = c.pop(t, 4);
            assertEquals(2, c.count(), "a batch of 4, two taken");
            c.push(t, a, 100);
            c.push(t, b, 100);
            assertEquals(b, c.pop(t, 4));
            assertEquals(a, c.pop(t, 4));
            assertEquals(2, c.count());
            assertEquals(HandleTable.NO_INDEX, new IndexCache().popCachedOrNone(t), "an empty cache takes nothing from the table");
        } finally {
            t.close();
        }
    }

    @Test
    void holdsAtMostTwoLimitsAndGivesTheRestBackWhole() {
        HandleTable t = new HandleTable();
        try {
            IndexCache c = new IndexCache();
            Set<Integer> held = new HashSet<>();
            for (int k = 0; k < 100; k++) {
                assertTrue(held.add(t.takeIndices(1)));
            }
            int freeBefore = t.freeCount();
            for (int i : held) {
                c.push(t, i, 10);
                assertTrue(c.count() <= 20, "two chains of at most 10: " + c.count());
            }
            held.clear();
            assertConserved(t, c, held);
            assertTrue(t.freeCount() >= freeBefore + 80, "the chains set aside went back to the table");
            // the table takes the given chains out again, each index once
            Set<Integer> seen = new HashSet<>();
            int free = c.count() + t.freeCount();
            for (int k = 0; k < free; k++) {
                int i = c.pop(t, 8);
                assertNotEquals(HandleTable.NO_INDEX, i);
                assertTrue(seen.add(i), "index " + i + " handed out twice");
            }
            assertEquals(free, seen.size());
        } finally {
            t.close();
        }
    }

    @Test
    void randomPushesAndPopsNeverLoseOrDuplicateAnIndex() {
        Random r = new Random(42);
        HandleTable t = new HandleTable();
        try {
            IndexCache c = new IndexCache();
            Set<Integer> held = new HashSet<>();
            List<Integer> order = new ArrayList<>();
            for (int step = 0; step < 200_000; step++) {
                int limit = 1 + r.nextInt(64);
                if (!order.isEmpty() && r.nextInt(100) < 50) {
                    int i = order.remove(r.nextInt(order.size()));
                    held.remove(i);
                    c.push(t, i, limit);
                    assertTrue(c.count() <= 2 * 64);
                } else if (r.nextBoolean()) {
                    int i = c.popCachedOrNone(t);
                    if (i != HandleTable.NO_INDEX) {
                        assertTrue(held.add(i), "index " + i + " handed out twice");
                        order.add(i);
                    }
                } else {
                    int i = c.pop(t, 1 + r.nextInt(64));
                    assertTrue(held.add(i), "index " + i + " handed out twice");
                    order.add(i);
                }
                if (step % 997 == 0) {
                    assertConserved(t, c, held);
                }
            }
            assertConserved(t, c, held);
        } finally {
            t.close();
        }
    }
}
