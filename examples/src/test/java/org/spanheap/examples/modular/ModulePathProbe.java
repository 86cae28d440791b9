package org.spanheap.examples.modular;

import io.netty.buffer.ByteBuf;
import org.spanheap.CompactingHeap;
import org.spanheap.SpanHeap;
import org.spanheap.cache.OffHeapCache;
import org.spanheap.cache.Serializers;
import org.spanheap.netty.SpanHeapByteBufAllocator;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandles;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import javax.management.ObjectName;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

/**
 * The program {@link ModulePathTest} starts in a JVM of its own, with spanheap's jars on the
 * module path and this class on the class path: it uses each module through its API and checks
 * that the modules are named and export only their API packages. Prints one line per check;
 * any failure throws (exit code 1).
 */
public final class ModulePathProbe {

    private ModulePathProbe() {
    }

    /**
     * Runs the checks.
     *
     * @param args none
     * @throws Exception on any failed check
     */
    public static void main(String[] args) throws Exception {
        Module core = SpanHeap.class.getModule();
        check(core.isNamed() && core.getName().equals("org.spanheap"), "SpanHeap is in " + core);
        check(!core.getDescriptor().isAutomatic(), "org.spanheap has a module descriptor");
        check(core.isExported("org.spanheap"), "org.spanheap is exported");
        for (String internal : List.of("org.spanheap.internal", "org.spanheap.internal.compact")) {
            check(core.getPackages().contains(internal) && !core.isExported(internal) && !core.isOpen(internal),
                    internal + " is in the module, neither exported nor open");
        }
        // docs/observability.md says so: a resource of a package that is not open is hidden.
        try (var jfc = SpanHeap.class.getResourceAsStream("/org/spanheap/spanheap.jfc")) {
            check(jfc == null, "org/spanheap/spanheap.jfc is hidden from other modules");
        }
        Class<?> impl = Class.forName("org.spanheap.internal.SpanHeapImpl");
        check(refused(() -> MethodHandles.publicLookup().accessClass(impl)),
                "public lookup of " + impl.getName() + " is refused");
        check(refused(() -> impl.getDeclaredConstructors()[0].setAccessible(true)),
                "setAccessible on " + impl.getName() + " is refused");

        try (SpanHeap heap = SpanHeap.create()) {
            // The native library is unpacked from the module's jar and loaded by its code.
            MemorySegment block = heap.allocate(64);
            block.set(ValueLayout.JAVA_LONG, 0, 42);
            check(block.get(ValueLayout.JAVA_LONG, 0) == 42, "a SpanHeap block holds what was written");
            heap.free(block);
            check(heap.stats().liveBytes() == 0, "freed: no live bytes");

            ObjectName name = heap.registerMXBean("module-path-probe");
            Object live = ManagementFactory.getPlatformMBeanServer().getAttribute(name, "LiveBytes");
            check(Long.valueOf(0).equals(live), "the MXBean serves LiveBytes = " + live);

            // A JFR event class of a package the module does not export.
            check(trimIsRecorded(heap), "trim() is recorded as org.spanheap.MemoryRelease");

            SpanHeapByteBufAllocator alloc = new SpanHeapByteBufAllocator(heap);
            ByteBuf buf = alloc.directBuffer(100);
            buf.writeCharSequence("through org.spanheap.netty", StandardCharsets.US_ASCII);
            check(buf.readCharSequence(buf.readableBytes(), StandardCharsets.US_ASCII)
                    .toString().equals("through org.spanheap.netty"), "a Netty buffer of the allocator");
            buf.release();
            check(alloc.metric().usedDirectMemory() == 0, "released: no direct memory in use");
        }

        try (CompactingHeap values = CompactingHeap.create()) {
            long h = values.allocateFrom(MemorySegment.ofArray(new byte[] {1, 2, 3}));
            check(values.read(h, s -> s.get(ValueLayout.JAVA_BYTE, 2)) == 3, "a CompactingHeap object");
            values.free(h);
        }

        try (OffHeapCache<String, byte[]> cache = OffHeapCache.builder(Serializers.utf8(), Serializers.bytes())
                .capacity(1L << 20).build()) {
            cache.put("k", new byte[] {7});
            byte[] v = cache.get("k");
            check(v != null && v.length == 1 && v[0] == 7, "an OffHeapCache entry");
        }
        check(OffHeapCache.class.getModule().getName().equals("org.spanheap.cache")
                && SpanHeapByteBufAllocator.class.getModule().getName().equals("org.spanheap.netty"),
                "the cache and Netty jars are the modules org.spanheap.cache and org.spanheap.netty");
        System.out.println("module path: all checks passed");
    }

    private static boolean trimIsRecorded(SpanHeap heap) throws Exception {
        Path file = Files.createTempFile("spanheap-module-path", ".jfr");
        try {
            try (Recording r = new Recording()) {
                r.enable("org.spanheap.MemoryRelease").withThreshold(java.time.Duration.ZERO);
                r.start();
                MemorySegment[] blocks = new MemorySegment[16]; // a few spans, kept once free
                for (int i = 0; i < blocks.length; i++) {
                    blocks[i] = heap.allocate(200_000);
                }
                for (MemorySegment b : blocks) {
                    heap.free(b);
                }
                heap.trim();
                r.stop();
                r.dump(file);
            }
            for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
                if (e.getEventType().getName().equals("org.spanheap.MemoryRelease")) {
                    return true;
                }
            }
            return false;
        } finally {
            Files.deleteIfExists(file);
        }
    }

    private interface Action {
        void run() throws Exception;
    }

    /** {@return whether {@code action} throws IllegalAccessException or InaccessibleObjectException} */
    private static boolean refused(Action action) throws Exception {
        try {
            action.run();
            return false;
        } catch (IllegalAccessException | java.lang.reflect.InaccessibleObjectException e) {
            return true;
        }
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError("failed: " + what);
        }
        System.out.println("ok: " + what);
    }
}
