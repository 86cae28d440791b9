package org.spanheap.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The index on its own: its hash table, its policy and its byte bound, without a heap (handles are plain numbers). */
class CacheIndexTest {

    @ParameterizedTest(name = "long keys {0}")
    @ValueSource(booleans = {false, true})
    void theHashTableAgreesWithAMapThroughInsertsAndDeletesOfCollidingKeys(boolean longKeys) {
        // hashes from 64 values, so long probe runs form and deletions must shift them back
        IndexSegment s = new IndexSegment(Long.MAX_VALUE / 4, longKeys, Expiry.NONE);
        // long keys: 64 groups of keys with one Long.hashCode each (an index of long keys hashes the key itself)
        java.util.function.IntFunction<Object> keyOf = k -> longKeys ? (Object) ((long) (k / 64) << 32 | ((k / 64) ^ (k % 64))) : (Object) k;
        java.util.function.IntUnaryOperator hashOf = k -> longKeys ? CacheIndex.hash((long) (Long) keyOf.apply(k)) : (k % 64) * 0x0101_0101;
        Map<Integer, Long> model = new HashMap<>();
        Random rnd = new Random(7);
        for (int op = 0; op < 200_000; op++) {
            int key = rnd.nextInt(3_000);
            int hash = hashOf.applyAsInt(key);
            Removals out = new Removals();
            if (rnd.nextInt(3) == 0) {
                boolean had = model.remove(key) != null;
                assertEquals(had, s.remove(keyOf.apply(key), hash, out), "op " + op);
                assertEquals(had ? 1 : 0, out.size());
            } else {
                long handle = op + 1;
                s.put(keyOf.apply(key), hash, handle, 10, 0, Expiry.FOREVER_NANOS, false, out);
                Long old = model.put(key, handle);
                assertEquals(old == null ? 0 : 1, out.size(), "op " + op);
                if (old != null) {
                    assertEquals(old, out.handle(0));
                    assertEquals(keyOf.apply(key), out.key(0), "the removal names the key");
                    assertEquals(RemovalCause.REPLACED, out.cause(0));
                }
            }
            if (op % 10_000 == 0) {
                for (int k = 0; k < 3_000; k++) {
                    long expected = model.getOrDefault(k, 0L);
                    assertEquals(expected, s.lookup(keyOf.apply(k), hashOf.applyAsInt(k), 0), "key " + k + " at op " + op);
                }
            }
        }
        assertEquals(model.size(), s.count());
        assertEquals(10L * model.size(), s.charged());
    }

    @Test
    void frequentlyReadKeysSurviveAScanOfOneTimeKeys() {
        // W-TinyLFU's promise: a burst of keys seen once does not flush the popular ones (LRU would lose them all)
        IndexSegment s = new IndexSegment(100 * 100, false, Expiry.NONE); // room for 100 entries of 100 bytes
        Removals out = new Removals();
        for (int k = 0; k < 80; k++) {
            s.put(k, CacheIndex.hash(k), k + 1, 100, 0, Expiry.FOREVER_NANOS, false, out);
        }
        for (int round = 0; round < 5; round++) {
            for (int k = 0; k < 80; k++) {
                assertEquals(k + 1, s.lookup(k, CacheIndex.hash(k), 0));
            }
        }
        for (int k = 1_000; k < 11_000; k++) {
            s.put(k, CacheIndex.hash(k), k + 1, 100, 0, Expiry.FOREVER_NANOS, false, out);
            assertTrue(s.charged() <= 100 * 100);
        }
        int kept = 0;
        for (int k = 0; k < 80; k++) {
            if (s.contains(k, CacheIndex.hash(k), 0)) {
                kept++;
            }
        }
        assertTrue(kept >= 70, "popular keys kept: " + kept + " of 80");
        for (int i = 0; i < out.size(); i++) {
            assertEquals(RemovalCause.SIZE, out.cause(i));
        }
    }

    @Test
    void anEntryTheSketchHasSeenOftenWinsItsDuelAgainstANewKeyAfterTheSegmentFilled() {
        // Only keys that leave the window while room is being made are candidates; those admitted while the
        // segment filled are members of probation. (The index once kept the first of them as the candidate for
        // good, so every eviction took probation's oldest entry without asking the sketch.)
        IndexSegment s = new IndexSegment(100 * 100, false, Expiry.NONE); // 100 entries of 100 bytes; window: 1
        Removals out = new Removals();
        for (int k = 0; k < 99; k++) {
            s.put(k, k * 0x9E37_79B9, k + 1, 100, 0, Expiry.FOREVER_NANOS, false, out); // key 0 leaves the window first: probation's head
        }
        for (int i = 0; i < 5; i++) {
            // another key with key 0's hash: the sketch counts the hash (key 0 stays unmarked, as if its
            // reads had come before it reached probation)
            s.put("twin", 0, 500, 100, 0, Expiry.FOREVER_NANOS, false, out);
            assertTrue(s.remove("twin", 0, out));
        }
        s.put(1_000, 1_000 * 0x9E37_79B9, 1_001, 100, 0, Expiry.FOREVER_NANOS, false, out); // 100 entries: no eviction yet
        s.put(1_001, 1_001 * 0x9E37_79B9, 1_002, 100, 0, Expiry.FOREVER_NANOS, false, out); // 1_000 leaves the window and duels key 0
        assertEquals(1, s.lookup(0, 0, 0), "the frequent key stays");
        assertEquals(0, s.lookup(1_000, 1_000 * 0x9E37_79B9, 0), "the new key seen once lost its duel");
        assertEquals(100, s.count());
    }

    @Test
    void anEntryLargerThanItsSegmentsShareFitsByEvictingElsewhere() {
        long capacity = 4L << 20;
        CacheIndex index = new CacheIndex(capacity, true, Expiry.NONE);
        assertTrue(index.segmentCount() > 1, "the test needs several segments");
        Removals out = new Removals();
        for (long k = 0; k < 10_000; k++) {
            index.put(k, CacheIndex.hash(k), k + 1, 1_000, 0, Expiry.FOREVER_NANOS, false, out);
            assertTrue(index.charged() <= capacity);
        }
        long big = capacity * 3 / 4;
        index.put(-1L, CacheIndex.hash(-1L), 99, (int) big, 0, Expiry.FOREVER_NANOS, false, out);
        assertTrue(index.charged() <= capacity, index.charged() + " > " + capacity);
        assertEquals(99, index.lookup(-1L, CacheIndex.hash(-1L), 0), "the large entry itself is kept");
        long[] counts = index.counts();
        assertEquals(big + 1_000 * (counts[0] - 1), index.charged(), "the charge is the entries' sum");
        assertTrue(counts[0] > 500, "only what the large entry needed was evicted: " + counts[0] + " entries left");
    }

    @Test
    void expiredEntriesAreMissesAndLeaveOnCleanUp() {
        IndexSegment s = new IndexSegment(1 << 20, false, new Expiry(100, 0, false));
        Removals out = new Removals();
        s.put("a", CacheIndex.hash("a"), 1, 10, 0, Expiry.FOREVER_NANOS, false, out);
        s.put("b", CacheIndex.hash("b"), 2, 10, 50, Expiry.FOREVER_NANOS, false, out);
        assertEquals(1, s.lookup("a", CacheIndex.hash("a"), 99));
        assertEquals(0, s.lookup("a", CacheIndex.hash("a"), 100), "written at 0, expires at 100");
        assertEquals(2, s.count(), "a lookup does not remove");
        s.expireAll(120, out);
        assertEquals(1, out.size());
        assertEquals(RemovalCause.EXPIRED, out.cause(0));
        assertEquals(1, out.handle(0));
        assertEquals(1, s.count());
        assertEquals(10, s.charged());
    }

    @Test
    void anEntrysOwnDeadlineIsAThirdBoundAndAReplaceSetsItAgain() {
        IndexSegment s = new IndexSegment(1 << 20, true, new Expiry(1_000, 0, true));
        Removals out = new Removals();
        long a = 1L, b = 2L, c = 3L;
        s.put(a, CacheIndex.hash(a), 11, 10, 0, Expiry.deadline(0, 50), false, out);
        s.put(b, CacheIndex.hash(b), 12, 10, 0, Expiry.deadline(0, Expiry.FOREVER_NANOS), false, out);
        s.put(c, CacheIndex.hash(c), 13, 10, 0, Expiry.deadline(0, 5_000), false, out);
        assertEquals(11, s.lookupWithoutLock(a, CacheIndex.hash(a), 49));
        assertEquals(0, s.lookupWithoutLock(a, CacheIndex.hash(a), 50), "its own deadline, without the lock");
        assertEquals(0, s.lookup(a, CacheIndex.hash(a), 50), "and under it");
        assertEquals(12, s.lookup(b, CacheIndex.hash(b), 999), "no deadline: the time after write holds");
        assertEquals(0, s.lookup(c, CacheIndex.hash(c), 1_000), "the time after write comes before its deadline");
        s.put(a, CacheIndex.hash(a), 21, 10, 60, Expiry.deadline(60, 100), false, out);
        assertEquals(RemovalCause.EXPIRED, out.cause(0), "the write met the expired entry and removed it first");
        out = new Removals();
        assertEquals(21, s.lookup(a, CacheIndex.hash(a), 159));
        s.put(a, CacheIndex.hash(a), 31, 10, 100, Expiry.deadline(100, Expiry.FOREVER_NANOS), false, out);
        assertEquals(RemovalCause.REPLACED, out.cause(0));
        assertEquals(31, s.lookup(a, CacheIndex.hash(a), 999), "a replace without a time to live clears the deadline");
        out = new Removals();
        s.expireAll(1_050, out);
        assertEquals(2, out.size(), "b and c, written at 0; a was written at 100");
        assertEquals(1, s.count());
    }

    @Test
    void aDeadlineOfForeverOutlivesTheTickersWrap() {
        IndexSegment s = new IndexSegment(1 << 20, true, new Expiry(0, 0, true));
        Removals out = new Removals();
        long start = Long.MAX_VALUE - 10; // a ticker about to wrap, as System.nanoTime() may be
        s.put(7L, CacheIndex.hash(7L), 70, 10, start, Expiry.deadline(start, Long.MAX_VALUE), false, out);
        assertEquals(70, s.lookup(7L, CacheIndex.hash(7L), start + 1_000_000));
        assertEquals(70, s.lookup(7L, CacheIndex.hash(7L), start + (Expiry.FOREVER_NANOS - 1)));
        assertEquals(0, s.lookup(7L, CacheIndex.hash(7L), start + Expiry.FOREVER_NANOS));
    }

    @Test
    void aPutCheckedAgainstACapacityLoweredSinceEvictsItselfAndNotAReplacement() {
        CacheIndex index = new CacheIndex(4L << 20, true, Expiry.NONE);
        Removals out = new Removals();
        for (long k = 0; k < 1_000; k++) {
            index.put(k, CacheIndex.hash(k), k + 1, 1_000, 0, Expiry.FOREVER_NANOS, false, out);
        }
        index.setCapacity(256 << 10, 0, out);
        assertTrue(index.charged() <= 256 << 10, "the shrink evicted at once: " + index.charged());
        assertTrue(out.size() > 700, "evictions reported: " + out.size());
        out = new Removals();
        long late = -1L;
        index.put(late, CacheIndex.hash(late), 77, 300 << 10, 0, Expiry.FOREVER_NANOS, false, out); // larger than the whole capacity now
        assertEquals(0, index.lookup(late, CacheIndex.hash(late), 0), "the entry that cannot fit is not stored");
        assertEquals(1, out.size(), "it alone is reported, nothing else evicted for it");
        assertEquals(77, out.handle(0));
        assertEquals(RemovalCause.SIZE, out.cause(0));
        long[] counts = index.counts();
        assertTrue(counts[0] > 200, "the entries that fit stay: " + counts[0]);
        assertEquals(1_000L * counts[0], index.charged(), "the charge is the entries' sum");
        long kept = 0;
        while (index.lookup(kept, CacheIndex.hash(kept), 0) == 0) {
            kept++;
        }
        assertEquals(kept + 1, index.put(kept, CacheIndex.hash(kept), 88, 300 << 10, 0, Expiry.FOREVER_NANOS, true, out),
                "a putIfAbsent of a present key returns the handle there, as always");
        assertEquals(1, out.size(), "and evicts nothing");
        out = new Removals();
        index.put(kept, CacheIndex.hash(kept), 99, 300 << 10, 0, Expiry.FOREVER_NANOS, false, out);
        assertEquals(0, index.lookup(kept, CacheIndex.hash(kept), 0), "a put replaces: the old value does not stay");
        assertEquals(2, out.size());
        assertEquals(kept + 1, out.handle(0));
        assertEquals(RemovalCause.REPLACED, out.cause(0));
        assertEquals(99, out.handle(1));
        assertEquals(RemovalCause.SIZE, out.cause(1));
        assertEquals(1_000L * index.counts()[0], index.charged(), "the charge is the entries' sum");
    }
}
