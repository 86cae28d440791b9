package org.spanheap.stress.cache;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
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
 * A zero-copy read racing with a put that replaces the value: the replaced
 * value's handle is freed by the put (its removal notification), so the read
 * either finishes on the old value or finds its handle stale and looks the
 * key up again. It must see one value whole, never nothing and never a mix.
 * r1: the version read (1 old, 2 new; 0 none; 99 torn); r2: the version the
 * arbiter reads afterwards.
 */
@JCStressTest
@Description("OffHeapCache: a read racing with a replacing put sees the old or the new value whole.")
@Outcome(id = "1, 2", expect = Expect.ACCEPTABLE, desc = "The read came first: the old value, whole.")
@Outcome(id = "2, 2", expect = Expect.ACCEPTABLE, desc = "The read came after the put: the new value, whole.")
@Outcome(id = "0, 0", expect = Expect.ACCEPTABLE, desc = "The actors did not run (jcstress's resource estimation).")
@Outcome(expect = Expect.FORBIDDEN, desc = "A missing, torn or lost value.")
@State
public class CacheGetVsReplaceTest {

    static final OffHeapCache<Long, MemorySegment> CACHE = OffHeapCache.builder(Serializers.longs(),
            Serializers.segments()).capacity(256L << 20).build();
    static final AtomicLong KEYS = new AtomicLong();

    final long key = KEYS.incrementAndGet();
    long seen;
    boolean ran;

    public CacheGetVsReplaceTest() {
        CACHE.put(key, value(1));
    }

    static MemorySegment value(long version) {
        MemorySegment s = MemorySegment.ofArray(new long[8]);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, version);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, 56, version);
        return s;
    }

    static long version(MemorySegment s) {
        long first = s.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
        return first == s.get(ValueLayout.JAVA_LONG_UNALIGNED, 56) && s.byteSize() == 64 ? first : 99;
    }

    @Actor
    public void reader() {
        Long v = CACHE.get(key, CacheGetVsReplaceTest::version);
        seen = v == null ? 0 : v;
        ran = true;
    }

    @Actor
    public void writer() {
        CACHE.put(key, value(2));
    }

    @Arbiter
    public void arbiter(JJ_Result r) {
        if (!ran) {
            return; // jcstress runs the arbiter alone once, to estimate the test's footprint
        }
        r.r1 = seen;
        Long after = CACHE.get(key, CacheGetVsReplaceTest::version);
        r.r2 = after == null ? 0 : after;
        CACHE.remove(key); // keeps the cache small: no eviction can touch another test's key
    }
}
