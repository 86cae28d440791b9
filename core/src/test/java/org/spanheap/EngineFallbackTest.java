package org.spanheap;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The choice of engine end to end, in forked JVMs (it is made once per JVM): with a library
 * that cannot load, heaps fall back to the malloc engine and say so once; with
 * {@code spanheap.engine=native} they fail instead. Also checks that this JVM's heaps use
 * the engine its {@code spanheap.engine} asks for (the core tests run once per engine).
 */
class EngineFallbackTest {

    /** Builds heaps the ways a user does and prints their engines and a check of each, or the error. */
    public static final class PrintEngines {
        public static void main(String[] args) {
            try {
                List<String> out = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    try (SpanHeap h = SpanHeap.create()) {
                        MemorySegment s = h.allocate(100);
                        s.set(ValueLayout.JAVA_LONG, 8, 42);
                        h.free(s);
                        out.add(h.engine().toString());
                    }
                }
                out.add("global=" + SpanHeap.global().engine());
                try (CompactingHeap c = CompactingHeap.create()) {
                    long handle = c.allocate(1 << 20);        // a large object too
                    long small = c.allocate(64);
                    c.setLong(small, 0, 7);
                    out.add("compacting=" + c.getLong(small, 0));
                    c.free(handle);
                    c.free(small);
                }
                System.out.println(String.join(" ", out));
            } catch (UnsatisfiedLinkError e) {
                System.out.println("UnsatisfiedLinkError: " + e.getMessage());
            }
        }
    }

    private static String run(String... properties) throws IOException, InterruptedException {
        return ForkedJvm.withProperties(PrintEngines.class, properties);
    }

    private static int count(String text, String part) {
        int n = 0;
        for (int i = text.indexOf(part); i >= 0; i = text.indexOf(part, i + 1)) {
            n++;
        }
        return n;
    }

    @Test
    void aLibraryThatCannotLoadFallsBackToMallocAndWarnsOnce(@TempDir Path dir) throws Exception {
        Path notALibrary = Files.writeString(dir.resolve("libspanheap.so"), "not an ELF file\n");
        String out = run("spanheap.library.path=" + notALibrary);
        assertTrue(out.contains("MALLOC MALLOC MALLOC global=MALLOC compacting=7"), out);
        assertEquals(1, count(out, "the native library is not available"), out);
        assertEquals(1, count(out, "WARNING"), out);
        assertTrue(out.contains(notALibrary.toString()), "the warning says why: " + out);
        assertTrue(out.contains("-Dspanheap.engine=malloc"), "the warning says how to choose: " + out);
    }

    @Test
    void choosingMallocNeedsNoLibraryAndLogsNothing(@TempDir Path dir) throws Exception {
        Path notALibrary = Files.writeString(dir.resolve("libspanheap.so"), "not an ELF file\n");
        String out = run("spanheap.engine=malloc", "spanheap.library.path=" + notALibrary);
        assertEquals("MALLOC MALLOC MALLOC global=MALLOC compacting=7", out.strip());
    }

    @Test
    void choosingNativeFailsWhenTheLibraryCannotLoad(@TempDir Path dir) throws Exception {
        Path notALibrary = Files.writeString(dir.resolve("libspanheap.so"), "not an ELF file\n");
        String out = run("spanheap.engine=native", "spanheap.library.path=" + notALibrary);
        // (the JVM may print a warning of its own about the file it was asked to load)
        assertTrue(out.contains("UnsatisfiedLinkError: cannot load " + notALibrary), out);
        assertEquals(0, count(out, "the native library is not available"), out);
    }

    @Test
    void heapsOfThisJvmUseTheEngineItsPropertyAsksFor() {
        Engine expected = "malloc".equals(System.getProperty("spanheap.engine"))
                ? Engine.MALLOC : Engine.NATIVE;
        try (SpanHeap h = SpanHeap.create()) {
            assertEquals(expected, h.engine());
        }
        assertEquals(expected, SpanHeap.global().engine());
    }
}
