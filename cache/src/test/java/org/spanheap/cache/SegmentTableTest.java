package org.spanheap.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The table alone: every key it holds is found at its slot, through growth, deletions and reuse of slots. */
class SegmentTableTest {

    @Test
    void findsEveryKeyThroughInsertsAndDeletesWithLongAndObjectKeys() {
        for (boolean longKeys : new boolean[] {true, false}) {
            SegmentTable t = new SegmentTable(longKeys, new Expiry(1, 0, true));
            Map<Long, Integer> slots = new HashMap<>();
            SplittableRandom random = new SplittableRandom(7);
            for (int op = 0; op < 50_000; op++) {
                long k = random.nextInt(2_000);
                Object key = longKeys ? (Object) k : "key-" + k;
                int hash = CacheIndex.hash(key);
                Integer slot = slots.get(k);
                assertEquals(slot == null ? SegmentTable.NONE : slot, t.find(key, hash), "key " + k);
                if (slot == null) {
                    int e = t.insert(key, hash, k + 1, EntryCharge.encode(100), op, op + 5);
                    assertTrue(t.holdsEntry(e));
                    assertEquals(k + 1, t.handle(e));
                    assertEquals(key, t.keyAt(e));
                    assertEquals(hash, t.hashOf(e));
                    assertEquals(100, t.chargeOf(e));
                    slots.put(k, e);
                } else {
                    t.delete(slot);
                    assertTrue(!t.holdsEntry(slot), "a deleted slot is free");
                    slots.remove(k);
                }
                assertEquals(slots.size(), t.count());
            }
            for (Map.Entry<Long, Integer> e : slots.entrySet()) {
                Object key = longKeys ? (Object) e.getKey() : "key-" + e.getKey();
                assertEquals((int) e.getValue(), t.find(key, CacheIndex.hash(key)));
            }
            assertTrue(t.slotsUsed() <= 2_000, "freed slots are reused: " + t.slotsUsed());
            t.clear();
            assertEquals(0, t.count());
            assertEquals(SegmentTable.NONE, t.find(longKeys ? (Object) 1L : "key-1", CacheIndex.hash(longKeys ? (Object) 1L : "key-1")));
        }
    }
}
