package org.spanheap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import jdk.jfr.Configuration;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;

/** The settings file shipped in the jar: it parses, enables every spanheap event, and records them. */
class JfcSettingsTest {

    private static final List<String> EVENTS = List.of("org.spanheap.CompactionRound", "org.spanheap.EpochChange",
            "org.spanheap.MemoryRelease", "org.spanheap.ByteLimitRefusal", "org.spanheap.DeadThreadCacheDrain",
            "org.spanheap.CacheStatistics");

    private static Configuration load() throws Exception {
        try (InputStream in = SpanHeap.class.getResourceAsStream("/org/spanheap/spanheap.jfc")) {
            assertNotNull(in, "org/spanheap/spanheap.jfc is not on the class path");
            try (Reader r = new InputStreamReader(in, StandardCharsets.UTF_8)) {
                return Configuration.create(r);
            }
        }
    }

    @Test
    void theSettingsParseAndEnableEverySpanheapEvent() throws Exception {
        Configuration c = load();
        assertEquals("spanheap", c.getLabel());
        assertEquals("spanheap", c.getProvider());
        Map<String, String> s = c.getSettings();
        for (String e : EVENTS) {
            assertEquals("true", s.get(e + "#enabled"), e + " is not enabled: " + s);
        }
        assertEquals("true", s.get("org.spanheap.ByteLimitRefusal#stackTrace"));
        assertEquals("1 s", s.get("org.spanheap.CacheStatistics#period"));
    }

    @Test
    void aRecordingWithTheSettingsGetsTheEvents() throws Exception {
        Path file = Files.createTempFile("spanheap-jfc", ".jfr");
        try {
            try (Recording r = new Recording(load())) {
                r.start();
                try (SpanHeap heap = SpanHeap.create()) {
                    heap.registerMXBean("jfc-trim");
                    heap.trim();
                }
                r.stop();
                r.dump(file);
            }
            List<RecordedEvent> events = RecordingFile.readAllEvents(file).stream()
                    .filter(e -> e.getEventType().getName().equals("org.spanheap.MemoryRelease"))
                    .filter(e -> "jfc-trim".equals(e.getString("heap")))
                    .toList();
            assertEquals(1, events.size(), events.toString());
            assertTrue(events.getFirst().getStackTrace() == null, "no stack trace for MemoryRelease");
        } finally {
            Files.deleteIfExists(file);
        }
    }
}
