package org.spanheap.internal.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.spanheap.StaleHandleException;

class HandleTableTest {

    @Test
    void handlesNameTheirTableAndGeneration() {
        HandleTable a = new HandleTable(), b = new HandleTable();
        try {
            int ia = a.takeIndices(1), ib = b.takeIndices(1);
            assertEquals(ia, ib, "fresh tables hand out the same first index");
            a.publishLive(ia, 0x1000, 24, null);
            b.publishLive(ib, 0x2000, 24, null);
            long ha = a.handleOf(ia), hb = b.handleOf(ib);
            assertNotEquals(ha, hb);
            assertTrue(ha > 0 && hb > 0);
            assertEquals(ia, a.liveIndex(ha));
            assertThrows(StaleHandleException.class, () -> a.liveIndex(hb), "another table's handle");
            long before = a.kill(ha);
            assertEquals(24, HandleTable.size(before));
            assertThrows(StaleHandleException.class, () -> a.liveIndex(ha), "killed");
            assertThrows(StaleHandleException.class, () -> a.kill(ha), "double kill");
            a.giveIndices(ia);
            int again = a.takeIndices(1);
            assertEquals(ia, again, "the index comes back");
            a.publishLive(again, 0x3000, 8, null);
            long h2 = a.handleOf(again);
            assertNotEquals(ha, h2, "with a new generation");
            assertThrows(StaleHandleException.class, () -> a.liveIndex(ha));
            assertEquals(again, a.liveIndex(h2));
        } finally {
            a.close();
            b.close();
        }
    }

    @Test
    void movingBitDoesNotTouchTheSize() {
        HandleTable t = new HandleTable();
        try {
            int i = t.takeIndices(1);
            long big = 1L << 30; // once the MOVING bit, now an ordinary size
            t.publishLive(i, 0x1000, big, null);
            long h = t.handleOf(i);
            assertEquals(big, HandleTable.size(t.stateAcquire(i)));
            assertTrue(t.markMoving(i));
            assertFalse(t.markMoving(i), "already moving");
            assertEquals(i, t.liveIndex(h), "a moving object is live");
            assertTrue(t.publishMoved(i, 0x9000, null));
            assertEquals(0x9000, t.address(i));
            assertEquals(big, HandleTable.size(t.stateAcquire(i)));
            assertTrue(t.markMoving(i));
            t.kill(h); // freed while moving: the move's publication must fail
            assertFalse(t.publishMoved(i, 0xA000, null));
            assertEquals(0x9000, t.address(i), "a failed move leaves the address: the release finds the old slot by it");
        } finally {
            t.close();
        }
    }

    @Test
    void exhaustedGenerationsRetireTheIndex() {
        HandleTable t = new HandleTable();
        try {
            int first = t.takeIndices(1);
            int i = first;
            long cycles = 0;
            while (i == first) {
                t.publishLive(i, 0x1000, 16, null);
                t.kill(t.handleOf(i));
                t.giveIndices(i);
                cycles++;
                i = t.takeIndices(1);
            }
            assertEquals(HandleTable.MAX_GENERATION - 1, cycles, "every generation used once, then retired");
            assertEquals(1, t.retired());
        } finally {
            t.close();
        }
    }

    @Test
    void anIndexReusedWithoutTheTableIsExhaustedAtItsLastGeneration() {
        // a size class reuses released indices itself and must retire them by this predicate, as giveIndices does
        HandleTable t = new HandleTable();
        try {
            int i = t.takeIndices(1);
            long cycles = 0;
            do {
                t.publishLive(i, 0x1000, 16, null);
                long h = t.handleOf(i);
                t.kill(h);
                assertThrows(StaleHandleException.class, () -> t.liveIndex(h));
                cycles++;
            } while (!HandleTable.exhausted(t.stateAcquire(i)));
            assertEquals(HandleTable.MAX_GENERATION - 1, cycles, "every generation used once");
            assertEquals(0, HandleTable.size(t.stateAcquire(i)) & ~16, "the kill keeps the size");
        } finally {
            t.close();
        }
    }

    @Test
    void tagsAreReusedOnlyAfterClose() {
        HandleTable[] open = new HandleTable[100];
        java.util.Set<Long> tags = new java.util.HashSet<>();
        for (int k = 0; k < open.length; k++) {
            open[k] = new HandleTable();
            assertTrue(tags.add(open[k].tag()), "tags of open tables differ");
        }
        for (HandleTable t : open) {
            t.close();
        }
    }
}
