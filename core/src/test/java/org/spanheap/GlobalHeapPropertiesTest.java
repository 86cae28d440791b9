package org.spanheap;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.Properties;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The {@code spanheap.global.*} system properties: parsed through
 * {@link SpanHeap#fromProperties(Properties)} (the global heap itself is built once per
 * JVM), and end to end in a forked JVM.
 */
class GlobalHeapPropertiesTest {

    private static Properties props(String... keyValues) {
        Properties p = new Properties();
        for (int i = 0; i < keyValues.length; i += 2) {
            p.setProperty("spanheap.global." + keyValues[i], keyValues[i + 1]);
        }
        return p;
    }

    @Test
    void absentPropertiesGiveTheDefaults() {
        Properties p = new Properties();
        p.setProperty("spanheap.other", "x");          // not ours: ignored
        SpanHeap.Builder b = SpanHeap.fromProperties(p);
        assertEquals(0, b.reserveBytes());
        assertEquals(0, b.byteLimit());
        assertEquals(SpanHeap.DEFAULT_CACHE_BLOCKS, b.threadCacheBlocks());
        assertEquals(SpanHeap.DEFAULT_CACHE_BYTES_PER_CLASS, b.threadCacheBytesPerClass());
    }

    @Test
    void plainValuesAreBytes() {
        SpanHeap.Builder b = SpanHeap.fromProperties(props("reserveBytes", "1073741824", "byteLimit", "123456",
                "threadCacheBlocks", "16", "threadCacheBytesPerClass", "8192"));
        assertEquals(1L << 30, b.reserveBytes());
        assertEquals(123456, b.byteLimit());
        assertEquals(16, b.threadCacheBlocks());
        assertEquals(8192, b.threadCacheBytesPerClass());
    }

    @Test
    void suffixesAreBinaryUnitsInEitherCase() {
        assertEquals(4L << 10, SpanHeap.fromProperties(props("byteLimit", "4k")).byteLimit());
        assertEquals(4L << 10, SpanHeap.fromProperties(props("byteLimit", "4K")).byteLimit());
        assertEquals(256L << 20, SpanHeap.fromProperties(props("byteLimit", "256m")).byteLimit());
        assertEquals(3L << 30, SpanHeap.fromProperties(props("reserveBytes", " 3G ")).reserveBytes());
        assertEquals(32L << 10, SpanHeap.fromProperties(props("threadCacheBytesPerClass", "32k"))
                .threadCacheBytesPerClass());
        assertEquals(0, SpanHeap.fromProperties(props("byteLimit", "0")).byteLimit());
    }

    @Test
    void theSettingsReachTheHeap() {
        try (SpanHeap h = SpanHeap.fromProperties(props("reserveBytes", "1g", "byteLimit", "64m")).build()) {
            HeapStats s = h.stats();
            // The malloc engine reserves nothing: the reservation is the native engine's setting.
            assertEquals(h.engine() == Engine.NATIVE ? 1L << 30 : 0, s.reservedBytes());
            assertEquals(64L << 20, s.limitBytes());
        }
    }

    @Test
    void malformedValuesNameThePropertyAndTheValue() {
        assertBad("byteLimit", "12x", "system property spanheap.global.byteLimit is not a number of bytes"
                + " (digits, optionally followed by k, m or g): \"12x\"");
        assertBad("byteLimit", "1.5g", "system property spanheap.global.byteLimit is not a number of bytes"
                + " (digits, optionally followed by k, m or g): \"1.5g\"");
        assertBad("reserveBytes", "", "system property spanheap.global.reserveBytes is not a number of bytes"
                + " (digits, optionally followed by k, m or g): \"\"");
        assertBad("reserveBytes", "-1", "system property spanheap.global.reserveBytes must be >= 0: \"-1\"");
        assertBad("byteLimit", "9999999999g", "system property spanheap.global.byteLimit is too large: \"9999999999g\"");
        assertBad("threadCacheBlocks", "16k",
                "system property spanheap.global.threadCacheBlocks is not a number of blocks (digits): \"16k\"");
        assertBad("threadCacheBlocks", "5000",
                "system property spanheap.global.threadCacheBlocks must be in [0, 4096]: \"5000\"");
        assertBad("threadCacheBytesPerClass", "lots", "system property spanheap.global.threadCacheBytesPerClass"
                + " is not a number of bytes (digits, optionally followed by k, m or g): \"lots\"");
    }

    private static void assertBad(String knob, String value, String message) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> SpanHeap.fromProperties(props(knob, value)));
        assertEquals(message, e.getMessage());
    }

    // ---- end to end: a JVM of its own, since global() is built once per JVM ----

    /** Prints the global heap's reservation and limit, or the message of the exception global() throws. */
    public static final class PrintGlobal {
        public static void main(String[] args) {
            try {
                HeapStats s = SpanHeap.global().stats();
                System.out.println("reserved=" + s.reservedBytes() + " limit=" + s.limitBytes());
            } catch (IllegalArgumentException e) {
                System.out.println(e.getClass().getSimpleName() + ": " + e.getMessage());
                try {
                    SpanHeap.global();
                } catch (IllegalArgumentException again) {
                    System.out.println("again: " + again.getMessage());
                }
            }
        }
    }

    private static String runGlobal(String... properties) throws IOException, InterruptedException {
        return ForkedJvm.withProperties(PrintGlobal.class, properties).strip();
    }

    @Test
    void theGlobalHeapReadsTheSystemProperties() throws Exception {
        assertEquals("reserved=" + (2L << 30) + " limit=" + (96L << 20),
                runGlobal("spanheap.global.reserveBytes=2g", "spanheap.global.byteLimit=96m"));
    }

    @Test
    void aMalformedPropertyFailsEveryCallOfGlobal() throws Exception {
        String message = "system property spanheap.global.byteLimit is not a number of bytes"
                + " (digits, optionally followed by k, m or g): \"2GB\"";
        assertEquals("IllegalArgumentException: " + message + "\nagain: " + message,
                runGlobal("spanheap.global.byteLimit=2GB"));
    }
}
