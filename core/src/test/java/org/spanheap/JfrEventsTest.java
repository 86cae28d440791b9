package org.spanheap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** The JFR events of both heaps: each is triggered under a recording, dumped and read back. */
class JfrEventsTest {

    private static final long MIB = 1L << 20;

    /** Runs {@code body} under a recording of {@code events} (threshold 0) and returns them, read back from a file. */
    static List<RecordedEvent> record(ThrowingRunnable body, String... events) throws Exception {
        Path file = Files.createTempFile("spanheap-events", ".jfr");
        try {
            try (Recording r = new Recording()) {
                for (String e : events) {
                    r.enable(e).withThreshold(java.time.Duration.ZERO);
                }
                r.start();
                body.run();
                r.stop();
                r.dump(file);
            }
            return RecordingFile.readAllEvents(file);
        } finally {
            Files.deleteIfExists(file);
        }
    }

    interface ThrowingRunnable {
        void run() throws Exception;
    }

    private static List<RecordedEvent> named(List<RecordedEvent> all, String event, String heap) {
        String field = event.equals("org.spanheap.CompactionRound") ? "heapName" : "heap";
        return all.stream()
                .filter(e -> e.getEventType().getName().equals(event))
                .filter(e -> heap.equals(e.getString(field)))
                .toList();
    }

    @Test
    void epochChangesOfCompactionRelocationAndClose() throws Exception {
        long[] epochs = new long[1];
        List<RecordedEvent> all = record(() -> {
            CompactingHeap heap = CompactingHeap.builder().backgroundCompaction(false)
                    .reclaimBatchBytes(1L << 40).notFullPagesPerClass(1).build();
            try {
                heap.registerMXBean("jfr-epochs");
                long[] h = new long[4096];                 // 1 KiB objects: 4 MiB, 64 pages
                for (int i = 0; i < h.length; i++) {
                    h[i] = heap.allocate(1000);
                }
                for (int i = 0; i < h.length; i += 2) {      // every page half empty
                    heap.free(h[i]);
                }
                assertTrue(heap.compact() > 0, "compact() moved nothing");
                assertTrue(heap.relocate(h[1]));
                epochs[0] = heap.stats().epochs();
            } finally {
                heap.close();
            }
        }, "org.spanheap.EpochChange", "org.spanheap.CompactionRound");

        List<RecordedEvent> changes = named(all, "org.spanheap.EpochChange", "jfr-epochs");
        List<String> reasons = changes.stream().map(e -> e.getString("reason")).toList();
        assertEquals(epochs[0] + 1, changes.size(), "one event per epoch closed, close included: " + reasons);
        assertTrue(reasons.contains("compaction"), reasons.toString());
        assertEquals(1, reasons.stream().filter("relocate"::equals).count(), reasons.toString());
        assertEquals("close", reasons.getLast());
        for (int i = 0; i < changes.size(); i++) {
            assertEquals(i, changes.get(i).getLong("epoch"), "epochs closed in order");
            assertFalse(changes.get(i).getDuration().isNegative());
        }
        List<RecordedEvent> rounds = named(all, "org.spanheap.CompactionRound", "jfr-epochs");
        assertEquals(changes.size() - 1, rounds.size(), "one round per epoch change but the close's");
        assertTrue(rounds.stream().mapToLong(e -> e.getLong("movedBytes")).sum() > 0, rounds.toString());
        for (int i = 0; i < rounds.size(); i++) {
            // The round times its epoch close inside the span the EpochChange event covers; the event's
            // own duration also holds its commit, which a loaded machine can stretch, so only the bound
            // that load cannot break is asserted.
            long closeNanos = rounds.get(i).getLong("epochCloseNanos");
            assertTrue(closeNanos > 0 && closeNanos <= changes.get(i).getDuration().toNanos() + 100_000,
                    "the round's close lies within the epoch change: " + closeNanos + " ns against "
                            + changes.get(i).getDuration().toNanos());
        }
    }

    @Test
    @Tag("native-engine") // the native engine's trim (the malloc engine releases an unknown amount)
    void spanHeapTrimIsAMemoryRelease() throws Exception {
        long[] released = new long[1];
        long[] after = new long[1];
        List<RecordedEvent> all = record(() -> {
            try (SpanHeap heap = SpanHeap.create()) {
                heap.registerMXBean("jfr-span-trim");
                MemorySegment[] blocks = new MemorySegment[64]; // about 7 spans of 2 MiB, kept once free
                for (int i = 0; i < blocks.length; i++) {
                    blocks[i] = heap.allocate(200_000);
                }
                for (MemorySegment b : blocks) {
                    heap.free(b);
                }
                released[0] = heap.trim();
                after[0] = heap.stats().committedBytes();
            }
        }, "org.spanheap.MemoryRelease");

        List<RecordedEvent> events = named(all, "org.spanheap.MemoryRelease", "jfr-span-trim");
        assertEquals(1, events.size(), events.toString());
        RecordedEvent e = events.getFirst();
        assertEquals("trim", e.getString("cause"));
        assertTrue(released[0] >= 8 * MIB, "released " + released[0]);
        assertEquals(released[0], e.getLong("releasedBytes"));
        assertEquals(after[0], e.getLong("committedBytes"));
    }

    @Test
    void compactingHeapRoundsAndTrimAreMemoryReleases() throws Exception {
        long[] trimmed = new long[1];
        long[] committedBefore = new long[1];
        long[] committedAfter = new long[1];
        List<RecordedEvent> all = record(() -> {
            try (CompactingHeap heap = CompactingHeap.builder().backgroundCompaction(false)
                    .reclaimBatchBytes(1L << 40).build()) {
                heap.registerMXBean("jfr-compacting-release");
                long[] h = new long[4096];                  // 64 pages of 64 KiB
                for (int i = 0; i < h.length; i++) {
                    h[i] = heap.allocate(1000);
                }
                committedBefore[0] = heap.stats().committedBytes();
                for (long x : h) {
                    heap.free(x);
                }
                heap.compact();                              // the round empties every page; the reserve keeps 16
                trimmed[0] = heap.trim();                    // and trim gives those back
                committedAfter[0] = heap.stats().committedBytes();
            }
        }, "org.spanheap.MemoryRelease");

        List<RecordedEvent> events = named(all, "org.spanheap.MemoryRelease", "jfr-compacting-release");
        List<RecordedEvent> rounds = events.stream().filter(e -> e.getString("cause").equals("round")).toList();
        List<RecordedEvent> trims = events.stream().filter(e -> e.getString("cause").equals("trim")).toList();
        assertEquals(1, rounds.size(), events.toString());
        assertEquals(1, trims.size(), events.toString());
        long byRound = rounds.getFirst().getLong("releasedBytes");
        assertTrue(byRound >= 32 * 64 * 1024, "round released " + byRound);
        assertEquals(trimmed[0], trims.getFirst().getLong("releasedBytes"));
        assertTrue(trimmed[0] > 0, "trim released nothing");
        assertEquals(committedAfter[0], trims.getFirst().getLong("committedBytes"));
        assertEquals(committedBefore[0] - committedAfter[0], byRound + trimmed[0], "the two events add up");
    }

    @Test
    void byteLimitRefusalHasSizeLimitAndStack() throws Exception {
        List<RecordedEvent> all = record(() -> {
            try (SpanHeap heap = SpanHeap.builder().byteLimit(16 * MIB).build()) {
                heap.registerMXBean("jfr-limit");
                List<MemorySegment> held = new ArrayList<>();
                assertThrows(SpanHeapOutOfMemoryError.class, () -> {
                    for (int i = 0; i < 100; i++) {
                        held.add(heap.allocate(MIB));
                    }
                });
                held.forEach(heap::free);
            }
        }, "org.spanheap.ByteLimitRefusal");

        List<RecordedEvent> events = named(all, "org.spanheap.ByteLimitRefusal", "jfr-limit");
        assertEquals(1, events.size(), events.toString());
        RecordedEvent e = events.getFirst();
        assertEquals(MIB, e.getLong("requestedBytes"));
        assertEquals(16 * MIB, e.getLong("limitBytes"));
        long charged = e.getLong("chargedBytes");
        assertTrue(charged > 8 * MIB && charged <= 16 * MIB, "charged " + charged);
        assertNotNull(e.getStackTrace(), "the refusal has a stack trace");
        assertTrue(e.getStackTrace().getFrames().stream()
                .anyMatch(f -> f.getMethod().getName().equals("allocate")), e.toString());
    }

    @Test
    @Tag("native-engine") // the native engine's thread caches
    void deadThreadsCacheIsDrainedWithAnEvent() throws Exception {
        long[] id = new long[1];
        List<RecordedEvent> all = record(() -> {
            try (SpanHeap heap = SpanHeap.create()) {
                heap.registerMXBean("jfr-dead-thread");
                Thread t = Thread.ofPlatform().start(() -> {
                    MemorySegment[] blocks = new MemorySegment[40];
                    for (int i = 0; i < blocks.length; i++) {
                        blocks[i] = heap.allocate(64);
                    }
                    for (MemorySegment b : blocks) {
                        heap.free(b);                        // into this thread's cache
                    }
                });
                id[0] = t.threadId();
                t.join();
                assertTrue(heap.stats().cachedBytes() == 0, "stats() drains the dead thread's cache");
            }
        }, "org.spanheap.DeadThreadCacheDrain");

        List<RecordedEvent> events = named(all, "org.spanheap.DeadThreadCacheDrain", "jfr-dead-thread");
        assertEquals(1, events.size(), events.toString());
        RecordedEvent e = events.getFirst();
        assertEquals(id[0], e.getLong("threadId"));
        assertFalse(e.getBoolean("virtual"));
        long blocks = e.getLong("blocks");
        assertTrue(blocks >= 40, "blocks " + blocks);
        assertEquals(blocks * 64, e.getLong("bytes"));
    }

    @Test
    void nothingIsRecordedWhenTheEventIsOff() throws Exception {
        Path file = Files.createTempFile("spanheap-events", ".jfr");
        try {
            try (Recording r = new Recording()) {
                r.disable("org.spanheap.MemoryRelease");
                r.start();
                try (SpanHeap heap = SpanHeap.create()) {
                    heap.registerMXBean("jfr-off");
                    heap.trim();
                }
                r.stop();
                r.dump(file);
            }
            assertTrue(named(RecordingFile.readAllEvents(file), "org.spanheap.MemoryRelease", "jfr-off").isEmpty());
        } finally {
            Files.deleteIfExists(file);
        }
    }

    @Test
    void epochChangesShorterThanAMillisecondAreLeftOutByDefault() throws Exception {
        Path file = Files.createTempFile("spanheap-events", ".jfr");
        try {
            try (Recording r = new Recording()) {                // the events' own defaults
                r.start();
                try (CompactingHeap heap = CompactingHeap.builder().backgroundCompaction(false).build()) {
                    heap.registerMXBean("jfr-default-threshold");
                    heap.free(heap.allocate(100));
                    heap.trim();                                 // one reclaim round
                }
                r.stop();
                r.dump(file);
            }
            List<RecordedEvent> all = RecordingFile.readAllEvents(file);
            for (RecordedEvent e : named(all, "org.spanheap.EpochChange", "jfr-default-threshold")) {
                assertTrue(e.getDuration().toNanos() >= 1_000_000, e.toString());
            }
            assertEquals(1, named(all, "org.spanheap.MemoryRelease", "jfr-default-threshold").size(),
                    "MemoryRelease is on by default");
        } finally {
            Files.deleteIfExists(file);
        }
    }
}
