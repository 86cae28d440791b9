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
import org.spanheap.cache.Serializers;

/**
 * A zero-copy read racing with a remove, which frees the value's handle: the
 * read sees the value whole or finds no value; it never reads freed memory.
 * r1: the version read (1, or 0 for none; 99 torn); r2: whether the key is
 * still there afterwards (1) or not (0).
 */
@JCStressTest
@Description("OffHeapCache: a read racing with a remove sees the value whole or no value.")
@Outcome(id = "1, 0", expect = Expect.ACCEPTABLE, desc = "The read came first: the value, whole.")
@Outcome(id = "0, 0", expect = Expect.ACCEPTABLE, desc = "The remove came first (or the actors did not run).")
@Outcome(expect = Expect.FORBIDDEN, desc = "A torn value, or a key that survived its remove.")
@State
public class CacheGetVsRemoveTest {

    static final OffHeapCache<Long, MemorySegment> CACHE = CacheGetVsReplaceTest.CACHE;
    static final AtomicLong KEYS = new AtomicLong(1L << 40);

    final long key = KEYS.incrementAndGet();
    long seen;
    boolean removed;

    public CacheGetVsRemoveTest() {
        CACHE.put(key, CacheGetVsReplaceTest.value(key, 1));
    }

    @Actor
    public void reader() {
        seen = CacheGetVsReplaceTest.readVersion(CACHE, key);
    }

    @Actor
    public void remover() {
        CACHE.remove(key);
        removed = true;
    }

    @Arbiter
    public void arbiter(JJ_Result r) {
        if (!removed) {
            CACHE.remove(key);
            return; // jcstress runs the arbiter alone once, to estimate the test's footprint
        }
        r.r1 = seen;
        r.r2 = CACHE.containsKey(key) ? 1 : 0;
        CACHE.remove(key);
    }
}
