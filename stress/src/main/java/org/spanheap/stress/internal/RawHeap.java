package org.spanheap.stress.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import org.spanheap.internal.NativeHeap;
import org.spanheap.internal.SpanLayout;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A native heap driven through {@link NativeHeap} alone, without the Java thread caches, for
 * the jcstress tests of the native protocols (span pool, remote free). Each test class keeps
 * one in a static field: jcstress creates millions of states, and a heap per state would map
 * an arena for each. The heap lives as long as the forked VM (never destroyed).
 */
final class RawHeap {
    /** {@code sh_heap *}, a zero-length global segment. */
    final MemorySegment handle;
    final long freeKey;
    /** The whole arena reservation (global scope), to stamp and check blocks. */
    private final MemorySegment arena;
    private final long base;

    RawHeap() {
        try (Arena tmp = Arena.ofConfined()) {
            MemorySegment config = tmp.allocate(SpanLayout.SH_CONFIG);
            NativeHeap.configInit(config);
            long h = NativeHeap.heapCreate(config);
            if (h == 0) {
                throw new IllegalStateException("sh_heap_create failed: " + NativeHeap.lastError());
            }
            handle = MemorySegment.ofAddress(h);
            MemorySegment layout = tmp.allocate(SpanLayout.SH_LAYOUT);
            NativeHeap.heapLayout(handle, layout);
            base = layout.get(JAVA_LONG, SpanLayout.LAYOUT_ARENA_BASE);
            freeKey = layout.get(JAVA_LONG, SpanLayout.LAYOUT_FREE_KEY);
            arena = MemorySegment.ofAddress(base)
                    .reinterpret(layout.get(JAVA_LONG, SpanLayout.LAYOUT_ARENA_SIZE));
        }
    }

    /** {@return the block at {@code address}, {@code size} bytes} Arena blocks only. */
    MemorySegment block(long address, long size) {
        return arena.asSlice(address - base, size);
    }

    long alloc(long size) {
        return NativeHeap.alloc(handle, size);
    }

    /** {@return SH_OK or a negated sh_error code} */
    int free(long address) {
        return NativeHeap.freeChecked(handle, address);
    }

    /** Takes n free-marked blocks of class cls into {@code out[from..)}; {@return the count or -error} */
    int allocBatch(int cls, long[] out, int from, int n) {
        return NativeHeap.allocBatch(handle, cls, MemorySegment.ofArray(out).asSlice(8L * from), n);
    }

    /** Returns n free-marked blocks; {@return SH_OK or -error} */
    int freeBatch(long[] blocks, int n) {
        return NativeHeap.freeBatch(handle, MemorySegment.ofArray(blocks), n);
    }

    /** {@return the free mark a cached free block carries in its second word} */
    long freeMark(long address) {
        return freeKey ^ address;
    }

    /** Counters of {@code sh_stats} the tests check; exact only when the heap is quiescent. */
    record Counters(long carved, long hot, long floating, long reusable, long free,
                    long committed, long liveBytes, long[] classLive) {
        /** {@return whether every carved span is in exactly one state: hot, floating, reusable or pooled} */
        boolean spansBalanced() {
            return hot + floating + reusable + free == carved;
        }
    }

    /**
     * {@return the counters once {@code settled} holds for them, or the last reading after about
     * 200 ms} An arbiter runs when no actor runs, but a thread that jcstress just joined (its
     * API and resource checks start fresh threads) may still be running its native exit
     * handler, which detaches its hot spans: a span in transit between two states is counted
     * in neither for a moment. A real inconsistency persists; a transient one settles.
     */
    Counters settledCounters(java.util.function.Predicate<Counters> settled) {
        Counters c = counters();
        for (int i = 0; i < 200 && !settled.test(c); i++) {
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            c = counters();
        }
        return c;
    }

    Counters counters() {
        try (Arena tmp = Arena.ofConfined()) {
            MemorySegment s = tmp.allocate(SpanLayout.SH_HEAP_STATS);
            NativeHeap.stats(handle, s);
            long[] live = new long[SpanLayout.MAX_CLASSES];
            for (int c = 0; c < live.length; c++) {
                live[c] = s.get(JAVA_LONG, SpanLayout.STATS_CLASS_LIVE_BLOCKS + 8L * c);
            }
            return new Counters(s.get(JAVA_LONG, SpanLayout.STATS_SPANS_CARVED),
                    s.get(JAVA_LONG, SpanLayout.STATS_SPANS_HOT),
                    s.get(JAVA_LONG, SpanLayout.STATS_SPANS_FLOATING),
                    s.get(JAVA_LONG, SpanLayout.STATS_SPANS_REUSABLE),
                    s.get(JAVA_LONG, SpanLayout.STATS_SPANS_FREE),
                    s.get(JAVA_LONG, SpanLayout.STATS_COMMITTED),
                    s.get(JAVA_LONG, SpanLayout.STATS_LIVE), live);
        }
    }
}
