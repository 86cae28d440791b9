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
import org.spanheap.CompactingHeap;
import org.spanheap.cache.OffHeapCache;
import org.spanheap.cache.Serializers;

/**
 * A zero-copy read racing with a put that replaces the value: the replaced
 * value's handle is freed by the put (its removal notification), so the read
 * either finishes on the old value or finds its handle stale and looks the
 * key up again. It must see one value whole, never nothing and never a mix.
 * <p>The cache's heap runs without its compactor thread: its reclaim rounds (each an
 * epoch change, a handshake with every thread) run on the actors themselves, every
 * 64 KiB of frees, so they happen inside the race. With the compactor thread on, jcstress's
 * own ordering breaks: the arbiter runs while the writer actor is still inside
 * {@code writer()}, seen as outcome 1, 1 (see {@link CompactorOrderingProbe} and
 * docs/cache.md, "The jcstress anomaly with the compactor thread").
 * <p>r1: the version read (1 old, 2 new; 0 none; 99 torn; 98 another key's value; 97 a
 * length that is not its version's);
 * r2: the version the arbiter reads afterwards.
 */
@JCStressTest
@Description("OffHeapCache: a read racing with a replacing put sees the old or the new value whole.")
@Outcome(id = "1, 2", expect = Expect.ACCEPTABLE, desc = "The read came first: the old value, whole.")
@Outcome(id = "2, 2", expect = Expect.ACCEPTABLE, desc = "The read came after the put: the new value, whole.")
@Outcome(id = "0, 0", expect = Expect.ACCEPTABLE, desc = "The actors did not run (jcstress's resource estimation).")
@Outcome(expect = Expect.FORBIDDEN, desc = "A missing, torn, misplaced or lost value (1, 1: the replacing put lost).")
@State
public class CacheGetVsReplaceTest {

    static final OffHeapCache<Long, MemorySegment> CACHE = OffHeapCache.builder(Serializers.longs(),
            Serializers.segments()).capacity(256L << 20)
            .heap(CompactingHeap.builder().mappedPages().backgroundCompaction(false).reclaimBatchBytes(64 << 10))
            .build();
    static final AtomicLong KEYS = new AtomicLong();

    final long key = KEYS.incrementAndGet();
    long seen;
    boolean ran;

    public CacheGetVsReplaceTest() {
        CACHE.put(key, value(key, 1));
    }

    /**
     * A value of {@code key}: its version at both ends, the key in between; version v is
     * 56 + 8v bytes long, so a value's bytes found in another value's block show.
     */
    static MemorySegment value(long key, long version) {
        MemorySegment s = MemorySegment.ofArray(new long[(int) (7 + version)]);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, version);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, 8, key);
        s.set(ValueLayout.JAVA_LONG_UNALIGNED, s.byteSize() - 8, version);
        return s;
    }

    /**
     * {@return the version of a whole value of {@code key}} 99 if torn, 98 if another
     * key's, 97 if its length is not its version's.
     */
    static long version(long key, MemorySegment s) {
        long first = s.get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
        if (s.byteSize() != 56 + 8 * first) {
            return 97;
        }
        if (first != s.get(ValueLayout.JAVA_LONG_UNALIGNED, s.byteSize() - 8)) {
            return 99;
        }
        return s.get(ValueLayout.JAVA_LONG_UNALIGNED, 8) == key ? first : 98;
    }

    /** {@return the version of {@code key}'s value in {@code cache}, read in place ({@link #version}), or 0 if absent} */
    static long readVersion(OffHeapCache<Long, MemorySegment> cache, long key) {
        Long v = cache.get(key, s -> version(key, s));
        return v == null ? 0 : v;
    }

    @Actor
    public void reader() {
        seen = readVersion(CACHE, key);
        ran = true;
    }

    @Actor
    public void writer() {
        CACHE.put(key, value(key, 2));
    }

    @Arbiter
    public void arbiter(JJ_Result r) {
        if (!ran) {
            return; // jcstress runs the arbiter alone once, to estimate the test's footprint
        }
        r.r1 = seen;
        r.r2 = readVersion(CACHE, key);
        CACHE.remove(key); // keeps the cache small: no eviction can touch another test's key
    }
}
