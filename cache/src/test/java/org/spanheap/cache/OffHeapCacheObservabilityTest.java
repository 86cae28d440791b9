package org.spanheap.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;

class OffHeapCacheObservabilityTest {

    @Test
    void theMXBeanShowsTheStatsThroughThePlatformServerUntilClose() throws Exception {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        ObjectName name = new ObjectName("org.spanheap:type=OffHeapCache,name=\"orders\"");
        try (OffHeapCache<String, byte[]> c = OffHeapCache.builder(Serializers.utf8(), Serializers.bytes())
                .capacity(1 << 20).registerMXBean("orders").build()) {
            c.put("a", new byte[100]);
            c.get("a");
            c.get("b");
            assertEquals(1L, server.getAttribute(name, "Hits"));
            assertEquals(1L, server.getAttribute(name, "Misses"));
            assertEquals(0.5, (Double) server.getAttribute(name, "HitRatio"), 1e-9);
            assertEquals(1L, server.getAttribute(name, "Entries"));
            assertEquals(c.charge(IndexKeys.OBJECT_KEY_BYTES + 1, 100), server.getAttribute(name, "ChargedBytes"));
            assertEquals(100L, server.getAttribute(name, "LiveBytes"));
            assertEquals((long) (1 << 20), server.getAttribute(name, "CapacityBytes"));
            server.setAttribute(name, new javax.management.Attribute("CapacityBytes", 2L << 20));
            assertEquals(2L << 20, c.capacity(), "the capacity is writable through JMX");
            assertEquals(2L << 20, server.getAttribute(name, "CapacityBytes"));
            long resident = (Long) server.getAttribute(name, "ResidentBytes");
            assertTrue(resident <= c.stats().committedBytes(), resident + " resident > committed");
            // a second cache cannot take the same name, and leaves nothing behind
            IllegalArgumentException taken = assertThrows(IllegalArgumentException.class,
                    () -> OffHeapCache.builder(Serializers.utf8(), Serializers.bytes()).capacity(1 << 20)
                            .registerMXBean("orders").build());
            assertTrue(taken.getMessage().contains("orders"), taken.getMessage());
        }
        assertFalse(server.isRegistered(name));
    }

    @Test
    void residentBytesCountWhatTheValuesWroteWithinWhatIsCommitted() {
        boolean linux = System.getProperty("os.name", "").toLowerCase(java.util.Locale.ROOT).startsWith("linux");
        try (OffHeapCache<Long, byte[]> c = OffHeapCache.builder(Serializers.longs(), Serializers.bytes())
                .capacity(64 << 20).build()) {
            byte[] value = new byte[4000];
            java.util.Arrays.fill(value, (byte) 7);
            for (long k = 0; k < 2048; k++) {
                c.put(k, value); // 8 MB of values, every byte written
            }
            long resident = c.residentBytes();
            long committed = c.stats().committedBytes();
            assertTrue(resident <= committed, resident + " resident > committed " + committed);
            assertTrue(resident >= (linux ? 2048L * 4000 : committed), "resident " + resident);
        }
    }

    @Test
    void residentBytesOfAClosedCacheThrow() {
        OffHeapCache<Long, byte[]> c = OffHeapCache.builder(Serializers.longs(), Serializers.bytes()).capacity(1 << 20).build();
        c.close();
        assertThrows(IllegalStateException.class, c::residentBytes);
    }

    @Test
    void aRecordingHasTheCacheStatisticsEvent() throws Exception {
        Path file = Files.createTempFile("spanheap-cache", ".jfr");
        try (Recording r = new Recording()) {
            // emitted when a chunk ends (at stop, with the cache open), not on a timer: no waiting
            r.enable("org.spanheap.CacheStatistics").with("period", "endChunk");
            r.start();
            try (OffHeapCache<String, byte[]> c = OffHeapCache.builder(Serializers.utf8(), Serializers.bytes())
                    .capacity(1 << 20).registerMXBean("jfr-test").build()) {
                for (int i = 0; i < 100; i++) {
                    c.put("k" + i, new byte[1000]);
                }
                r.stop();
            }
            r.dump(file);
        }
        List<RecordedEvent> events = RecordingFile.readAllEvents(file).stream()
                .filter(e -> e.getEventType().getName().equals("org.spanheap.CacheStatistics"))
                .filter(e -> "jfr-test".equals(e.getString("cache")))
                .toList();
        Files.delete(file);
        assertFalse(events.isEmpty(), "no CacheStatistics event recorded");
        RecordedEvent last = events.get(events.size() - 1);
        assertEquals(100, last.getLong("entries"));
        assertTrue(last.getLong("committedBytes") >= 100 * 1000, last.toString());
        assertTrue(last.getLong("liveBytes") >= 100 * 1000, last.toString());
        assertTrue(last.getLong("residentBytes") >= last.getLong("liveBytes")
                && last.getLong("residentBytes") <= last.getLong("committedBytes"), last.toString());
        assertEquals(1 << 20, last.getLong("capacityBytes"));
    }
}
