package org.spanheap.stress.cache;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicLong;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.JJ_Result;
import org.spanheap.cache.OffHeapCache;

/**
 * A lookup without the segment's lock racing with the removal of another key
 * whose entry lies before its own in the same probe run. The two keys have the
 * same hash ({@code Long.hashCode} of {@code k} and {@code k ^ (1L << 32 | 1)}
 * are equal), so they share a segment and a home cell; removing the first
 * shifts the second's cell back by one, and a lookup that read the first cell
 * before the shift and the second after it would find an empty cell and
 * report a miss. The index's seqlock must make it look again instead: the
 * lookup finds the key every time.
 * <p>r1: the version read (1; 0 a miss; 99, 98, 97 a torn, another key's or
 * misshapen value); r2: whether the removed key is gone afterwards (1).
 */
@JCStressTest
@Description("OffHeapCache: a lookup without the lock finds its key while a removal shifts the key's cell.")
@Outcome(id = "1, 1", expect = Expect.ACCEPTABLE, desc = "The key found, whole; the other key removed.")
@Outcome(id = "0, 0", expect = Expect.ACCEPTABLE, desc = "The actors did not run (jcstress's resource estimation).")
@Outcome(expect = Expect.FORBIDDEN, desc = "A key that is there reported missing, or a wrong value.")
@State
public class CacheLookupVsShiftTest {

    static final OffHeapCache<Long, MemorySegment> CACHE = CacheGetVsReplaceTest.CACHE;
    /** Keys in their own range (the other cache tests count from 1 and from 2^40). */
    static final AtomicLong KEYS = new AtomicLong(1L << 50);
    static final long SAME_HASH = 1L << 32 | 1;

    final long key = KEYS.incrementAndGet();
    final long before = key ^ SAME_HASH;
    long seen;
    boolean ran;

    public CacheLookupVsShiftTest() {
        CACHE.put(before, CacheGetVsReplaceTest.value(before, 1)); // first in the probe run
        CACHE.put(key, CacheGetVsReplaceTest.value(key, 1));
    }

    @Actor
    public void reader() {
        seen = CacheGetVsReplaceTest.readVersion(CACHE, key);
    }

    @Actor
    public void remover() {
        CACHE.remove(before);
        ran = true;
    }

    @Arbiter
    public void arbiter(JJ_Result r) {
        if (ran) {
            r.r1 = seen;
            r.r2 = CACHE.containsKey(before) ? 0 : 1;
        }
        CACHE.remove(key);
        CACHE.remove(before);
    }
}
