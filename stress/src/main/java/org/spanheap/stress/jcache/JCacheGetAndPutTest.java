package org.spanheap.stress.jcache;

import java.util.concurrent.atomic.AtomicLong;
import javax.cache.Cache;
import javax.cache.Caching;
import javax.cache.configuration.MutableConfiguration;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.JJJ_Result;
import org.spanheap.jcache.SpanheapCachingProvider;

/**
 * The JCache provider's per-key lock protocol: a compound operation holds its key's lock
 * stripe from its read to its write, so two {@code getAndPut}s of one key are ordered, each
 * returning the value the other stored or the initial one. r1, r2: what the first and the
 * second actor got back (0 is the initial value); r3: the value left.
 */
@JCStressTest
@Description("spanheap JCache: two getAndPut of one key are atomic, one after the other.")
@Outcome(id = "0, 1, 2", expect = Expect.ACCEPTABLE, desc = "The first actor went first, the second got its value.")
@Outcome(id = "2, 0, 1", expect = Expect.ACCEPTABLE, desc = "The second actor went first, the first got its value.")
@Outcome(id = "-1, -1, 0", expect = Expect.ACCEPTABLE, desc = "The actors did not run: jcstress runs the arbiter alone once to estimate the test's footprint.")
@Outcome(expect = Expect.FORBIDDEN, desc = "Both read the same value (a lost update), or a value nobody stored.")
@State
public class JCacheGetAndPutTest {

    static final Cache<Long, Long> CACHE = Caching.getCachingProvider(SpanheapCachingProvider.class.getName())
            .getCacheManager().createCache("jcstress-getAndPut",
                    new MutableConfiguration<Long, Long>().setTypes(Long.class, Long.class));
    static final AtomicLong KEYS = new AtomicLong();

    final long key = KEYS.incrementAndGet();
    long first = -1;
    long second = -1;

    public JCacheGetAndPutTest() {
        CACHE.put(key, 0L);
    }

    @Actor
    public void first() {
        first = CACHE.getAndPut(key, 1L);
    }

    @Actor
    public void second() {
        second = CACHE.getAndPut(key, 2L);
    }

    @Arbiter
    public void arbiter(JJJ_Result r) {
        r.r1 = first;
        r.r2 = second;
        Long left = CACHE.getAndRemove(key);
        r.r3 = left == null ? -1 : left;
    }
}
