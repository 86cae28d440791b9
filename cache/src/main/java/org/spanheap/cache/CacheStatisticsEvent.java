package org.spanheap.cache;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.FlightRecorder;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.Period;
import jdk.jfr.StackTrace;

/**
 * JFR event {@code org.spanheap.CacheStatistics}: every open {@link OffHeapCache}'s
 * figures, once per period (1 s by default) while a recording has it enabled.
 * Its resident bytes are asked of the OS at each period ({@link OffHeapCache#residentBytes()}:
 * a few milliseconds for a hundred MiB of values), so a recording that does not enable the
 * event costs nothing.
 */
@Name("org.spanheap.CacheStatistics")
@Label("Off-heap cache statistics")
@Category({"spanheap", "Cache"})
@Description("The counters and memory of an OffHeapCache, sampled periodically.")
@Period("1 s")
@StackTrace(false)
final class CacheStatisticsEvent extends jdk.jfr.Event {
    @Label("Cache")
    String cache;

    @Label("Hits")
    long hits;

    @Label("Misses")
    long misses;

    @Label("Evictions")
    long evictions;

    @Label("Expirations")
    long expirations;

    @Label("Entries")
    long entries;

    @Label("Charged")
    @DataAmount
    long chargedBytes;

    @Label("Capacity")
    @DataAmount
    long capacityBytes;

    @Label("Live")
    @Description("Bytes of the values now stored, unrounded")
    @DataAmount
    long liveBytes;

    @Label("Committed")
    @DataAmount
    long committedBytes;

    @Label("Resident")
    @Description("Of the committed bytes, those in RAM, as the OS says (mincore where it can, else the committed bytes)")
    @DataAmount
    long residentBytes;

    @Label("Moved by compaction")
    @DataAmount
    long movedBytes;

    private static final Set<OffHeapCache<?, ?>> OPEN = ConcurrentHashMap.newKeySet();

    static {
        FlightRecorder.addPeriodicEvent(CacheStatisticsEvent.class, CacheStatisticsEvent::emitAll);
    }

    static void opened(OffHeapCache<?, ?> cache) {
        OPEN.add(cache);
    }

    static void closed(OffHeapCache<?, ?> cache) {
        OPEN.remove(cache);
    }

    private static void emitAll() {
        for (OffHeapCache<?, ?> c : OPEN) {
            String name;
            CacheStats s;
            long resident;
            try {
                name = c.name();
                s = c.stats();
                resident = c.residentBytes();
            } catch (IllegalStateException closing) {
                continue;
            }
            CacheStatisticsEvent e = new CacheStatisticsEvent();
            e.cache = name;
            e.hits = s.hits();
            e.misses = s.misses();
            e.evictions = s.evictions();
            e.expirations = s.expirations();
            e.entries = s.entries();
            e.chargedBytes = s.weightedBytes();
            e.capacityBytes = s.capacityBytes();
            e.liveBytes = s.liveBytes();
            e.committedBytes = s.committedBytes();
            e.residentBytes = resident;
            e.movedBytes = s.movedBytes();
            e.commit();
        }
    }
}
