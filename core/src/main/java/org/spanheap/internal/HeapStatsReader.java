package org.spanheap.internal;

import org.spanheap.HeapStats;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/** Reads the native core's {@code sh_heap_stats} into the public {@link HeapStats}. */
final class HeapStatsReader {
    private HeapStatsReader() {
    }

    /**
     * {@return the stats in {@code s}, with the blocks held in Java thread caches and the
     * kept large blocks counted as cached rather than live} The native core counts such a
     * block as live (it handed it out and has not had it back); {@code cached[c]} is the
     * number of class c's blocks in the caches, {@code keptLarge} the kept large blocks.
     */
    static HeapStats read(MemorySegment s, SizeClassTable classes, long[] cached, KeptLargeBlocks.Totals keptLarge) {
        long cachedBytes = 0;
        List<HeapStats.SizeClass> perClass = new ArrayList<>(classes.count);
        for (int c = 0; c < classes.count; c++) {
            long live = s.get(JAVA_LONG, SpanLayout.STATS_CLASS_LIVE_BLOCKS + 8L * c);
            long spans = s.get(JAVA_LONG, SpanLayout.STATS_CLASS_SPANS + 8L * c);
            cachedBytes += cached[c] * classes.blockSize[c];
            perClass.add(new HeapStats.SizeClass(c, classes.blockSize[c],
                    Math.max(0, live - cached[c]), cached[c], spans));
        }
        cachedBytes += keptLarge.bytes();
        return new HeapStats(
                s.get(JAVA_LONG, SpanLayout.STATS_RESERVED),
                s.get(JAVA_LONG, SpanLayout.STATS_COMMITTED),
                s.get(JAVA_LONG, SpanLayout.STATS_RESIDENT),
                Math.max(0, s.get(JAVA_LONG, SpanLayout.STATS_LIVE) - cachedBytes),
                cachedBytes,
                Math.max(0, s.get(JAVA_LONG, SpanLayout.STATS_LARGE_BYTES) - keptLarge.bytes()),
                Math.max(0, s.get(JAVA_LONG, SpanLayout.STATS_LARGE_COUNT) - keptLarge.count()),
                s.get(JAVA_LONG, SpanLayout.STATS_LIMIT),
                s.get(JAVA_LONG, SpanLayout.STATS_LIMITED),
                s.get(JAVA_LONG, SpanLayout.STATS_SPANS_CARVED),
                s.get(JAVA_LONG, SpanLayout.STATS_SPANS_HOT),
                s.get(JAVA_LONG, SpanLayout.STATS_SPANS_FLOATING),
                s.get(JAVA_LONG, SpanLayout.STATS_SPANS_REUSABLE),
                s.get(JAVA_LONG, SpanLayout.STATS_SPANS_FREE),
                s.get(JAVA_LONG, SpanLayout.STATS_MADVISE_CALLS),
                perClass);
    }
}
