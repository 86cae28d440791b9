package org.spanheap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import javax.management.JMX;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.junit.jupiter.api.Test;

/** The heaps' MXBeans, read through the platform MBean server. */
class MXBeanTest {

    private static final MBeanServer SERVER = ManagementFactory.getPlatformMBeanServer();

    @Test
    void spanHeapMXBeanShowsTheStatsUntilClose() throws Exception {
        ObjectName expected = new ObjectName("org.spanheap:type=SpanHeap,name=\"mx-span\"");
        List<MemorySegment> blocks = new ArrayList<>();
        try (SpanHeap heap = SpanHeap.builder().byteLimit(64L << 20).build()) {
            assertEquals(expected, heap.registerMXBean("mx-span"));
            assertTrue(SERVER.isRegistered(expected));
            assertEquals("true", SERVER.getMBeanInfo(expected).getDescriptor().getFieldValue("mxbean"));
            for (int i = 0; i < 100; i++) {
                blocks.add(heap.allocate(1000));
            }
            blocks.add(heap.allocate(4 << 20));                   // a large object
            HeapStats s = heap.stats();
            assertEquals("mx-span", SERVER.getAttribute(expected, "Name"));
            assertEquals(s.liveBytes(), SERVER.getAttribute(expected, "LiveBytes"));
            assertEquals(s.committedBytes(), SERVER.getAttribute(expected, "CommittedBytes"));
            assertEquals(s.reservedBytes(), SERVER.getAttribute(expected, "ReservedBytes"));
            assertEquals(s.cachedBytes(), SERVER.getAttribute(expected, "CachedBytes"));
            assertEquals(s.largeBytes(), SERVER.getAttribute(expected, "LargeBytes"));
            assertEquals(1L, SERVER.getAttribute(expected, "LargeCount"));
            assertEquals(64L << 20, SERVER.getAttribute(expected, "LimitBytes"));
            assertEquals(s.limitedBytes(), SERVER.getAttribute(expected, "LimitedBytes"));
            assertEquals(s.spansCarved(), SERVER.getAttribute(expected, "SpansCarved"));
            assertEquals(s.madviseCalls(), SERVER.getAttribute(expected, "MadviseCalls"));
            assertTrue(s.liveBytes() >= 100 * 1000 + (4 << 20), "live " + s.liveBytes());

            SpanHeapMXBean proxy = JMX.newMXBeanProxy(SERVER, expected, SpanHeapMXBean.class);
            blocks.forEach(heap::free);
            heap.flushThreadCache();
            assertEquals(0, proxy.getLiveBytes());
            assertEquals(heap.stats().spansFree(), proxy.getSpansFree());
        }
        assertFalse(SERVER.isRegistered(expected), "close unregisters the MXBean");
    }

    @Test
    void compactingHeapMXBeanShowsTheStatsUntilClose() throws Exception {
        ObjectName expected = new ObjectName("org.spanheap:type=CompactingHeap,name=\"mx-compacting\"");
        try (CompactingHeap heap = CompactingHeap.builder().backgroundCompaction(false)
                .reclaimBatchBytes(1L << 40).notFullPagesPerClass(1).build()) {
            assertEquals(expected, heap.registerMXBean("mx-compacting"));
            long[] h = new long[2048];
            for (int i = 0; i < h.length; i++) {
                h[i] = heap.allocate(1000);
            }
            for (int i = 0; i < h.length; i += 2) {
                heap.free(h[i]);
            }
            heap.compact();
            CompactingHeapStats s = heap.stats();
            assertEquals("mx-compacting", SERVER.getAttribute(expected, "Name"));
            assertEquals(1024L * 1000, SERVER.getAttribute(expected, "LiveBytes"));
            assertEquals(s.liveBytes(), SERVER.getAttribute(expected, "LiveBytes"));
            assertEquals(s.liveObjects(), SERVER.getAttribute(expected, "LiveObjects"));
            assertEquals(s.blockBytes(), SERVER.getAttribute(expected, "BlockBytes"));
            assertEquals(s.committedBytes(), SERVER.getAttribute(expected, "CommittedBytes"));
            long resident = (Long) SERVER.getAttribute(expected, "ResidentBytes");
            assertTrue(resident <= s.committedBytes(), resident + " resident > committed " + s.committedBytes());
            assertEquals(s.pages(), SERVER.getAttribute(expected, "Pages"));
            assertEquals(s.movedBytes(), SERVER.getAttribute(expected, "MovedBytes"));
            assertEquals(s.compactionIncrements(), SERVER.getAttribute(expected, "CompactionIncrements"));
            assertEquals(s.epochs(), SERVER.getAttribute(expected, "Epochs"));
            assertEquals(s.maxNotFullPages(), SERVER.getAttribute(expected, "MaxNotFullPages"));
            assertEquals(1, SERVER.getAttribute(expected, "NotFullPagesPerClass"));
            assertEquals(s.fragmentation(), (Double) SERVER.getAttribute(expected, "Fragmentation"), 1e-12);
            assertEquals(s.maxEpochCloseNanos(), SERVER.getAttribute(expected, "MaxEpochCloseNanos"));
            assertTrue(s.movedBytes() > 0, "compaction moved nothing");
            CompactingHeapMXBean proxy = JMX.newMXBeanProxy(SERVER, expected, CompactingHeapMXBean.class);
            assertEquals(0, proxy.getPendingReclaimBytes());
            assertEquals(s.largeObjects(), proxy.getLargeObjects());
        }
        assertFalse(SERVER.isRegistered(expected), "close unregisters the MXBean");
    }

    @Test
    void aTakenNameIsRefusedNamingIt() {
        try (SpanHeap a = SpanHeap.create(); SpanHeap b = SpanHeap.create()) {
            a.registerMXBean("mx-taken");
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> b.registerMXBean("mx-taken"));
            assertTrue(e.getMessage().contains("\"mx-taken\""), e.getMessage());
            b.registerMXBean("mx-other");                        // b is unharmed and can take another name
        }
        try (CompactingHeap a = CompactingHeap.create(); CompactingHeap b = CompactingHeap.create()) {
            a.registerMXBean("mx-taken");                        // another type: no clash with the span heap's
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> b.registerMXBean("mx-taken"));
            assertTrue(e.getMessage().contains("\"mx-taken\""), e.getMessage());
        }
    }

    @Test
    void badNamesAndBadStatesAreRefused() throws Exception {
        SpanHeap heap = SpanHeap.create();
        try {
            IllegalArgumentException blank = assertThrows(IllegalArgumentException.class, () -> heap.registerMXBean(" "));
            assertTrue(blank.getMessage().contains("\" \""), blank.getMessage());
            assertThrows(NullPointerException.class, () -> heap.registerMXBean(null));
            // characters that ObjectName reserves are quoted, not refused
            ObjectName odd = heap.registerMXBean("a,b=c:*?\"");
            assertTrue(SERVER.isRegistered(odd));
            assertEquals("a,b=c:*?\"", SERVER.getAttribute(odd, "Name"));
            assertEquals("a,b=c:*?\"", ObjectName.unquote(odd.getKeyProperty("name")));
            IllegalStateException twice = assertThrows(IllegalStateException.class, () -> heap.registerMXBean("mx-2"));
            assertTrue(twice.getMessage().contains("already registered"), twice.getMessage());
            heap.close();
            assertFalse(SERVER.isRegistered(odd));
            assertThrows(IllegalStateException.class, () -> heap.registerMXBean("mx-closed"));
        } finally {
            heap.close();
        }
        CompactingHeap closed = CompactingHeap.create();
        closed.close();
        assertThrows(IllegalStateException.class, () -> closed.registerMXBean("mx-closed"));
        assertFalse(SERVER.isRegistered(new ObjectName("org.spanheap:type=CompactingHeap,name=\"mx-closed\"")));
    }
}
