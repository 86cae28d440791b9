package org.spanheap.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;

import org.junit.jupiter.api.Test;

class HotKeysTest {

    @Test
    void keepsTheHighestEstimatesAgainstASort() {
        SplittableRandom random = new SplittableRandom(7);
        for (int round = 0; round < 200; round++) {
            int limit = random.nextInt(0, 70);
            int offered = random.nextInt(0, 300);
            HotKeys hot = new HotKeys(limit);
            List<int[]> all = new ArrayList<>(); // {frequency, key}
            for (int key = 0; key < offered; key++) {
                int frequency = random.nextInt(16);
                all.add(new int[] {frequency, key});
                if (hot.wants(frequency)) {
                    hot.offer(frequency, key);
                }
            }
            all.sort(Comparator.comparingInt((int[] e) -> -e[0]));
            List<Object> kept = hot.hottestFirst();
            assertEquals(Math.min(limit, offered), kept.size(), "round " + round);
            int[] frequencyOf = new int[offered];
            for (int[] e : all) {
                frequencyOf[e[1]] = e[0];
            }
            for (int i = 0; i < kept.size(); i++) {
                // the same estimates as the sorted list's head, in the same order; keys may differ on ties
                assertEquals(all.get(i)[0], frequencyOf[(Integer) kept.get(i)], "round " + round + " place " + i);
            }
            assertEquals(kept.size(), kept.stream().distinct().count(), "no key twice");
        }
    }

    @Test
    void theFirstOfEqualEstimatesStays() {
        HotKeys hot = new HotKeys(2);
        hot.offer(3, "a");
        hot.offer(3, "b");
        assertFalse(hot.wants(3));
        assertTrue(hot.wants(4));
        assertEquals(List.of("a", "b"), sorted(hot.hottestFirst()));
        assertFalse(new HotKeys(0).wants(15), "a limit of 0 keeps nothing");
    }

    private static List<Object> sorted(List<Object> keys) {
        List<Object> out = new ArrayList<>(keys);
        out.sort(Comparator.comparing(Object::toString));
        return out;
    }
}
