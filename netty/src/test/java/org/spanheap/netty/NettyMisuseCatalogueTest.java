package org.spanheap.netty;

import io.netty.buffer.ByteBuf;
import io.netty.util.IllegalReferenceCountException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.spanheap.SpanHeap;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Netty part of the misuse catalogue (docs/misuse.md, "SpanHeapByteBufAllocator"): each case
 * makes one wrong call on a buffer or the allocator and checks the exception's type and a part
 * of its message. Around it, as in the core catalogue, two canary buffers (200 B and 64 KiB,
 * filled with a pattern) must keep their bytes, the allocator must still allocate and release,
 * and once every buffer is released the allocator's used direct memory and the heap's live bytes
 * must both be 0: a misuse neither loses a block nor frees one twice. Runs on Netty 4.2 here and
 * on 4.1 through netty-compat-41, so messages are matched only where both versions agree.
 */
class NettyMisuseCatalogueTest {

    /** What the misuse needs: the allocator under test, and buffers it may leave for the fixture to release. */
    static final class Fixture implements AutoCloseable {
        final SpanHeap heap = SpanHeap.create();
        final SpanHeapByteBufAllocator alloc = new SpanHeapByteBufAllocator(heap);
        private final List<ByteBuf> canaries = new ArrayList<>();
        /** Buffers a case made and did not release itself. */
        final List<ByteBuf> owned = new ArrayList<>();

        Fixture() {
            canaries.add(filled(200));
            canaries.add(filled(64 * 1024));
        }

        ByteBuf filled(int length) {
            ByteBuf buf = alloc.directBuffer(length);
            for (int i = 0; i < length; i++) {
                buf.writeByte(pattern(i));
            }
            return buf;
        }

        /** A buffer the fixture releases at the end. */
        ByteBuf keep(ByteBuf buf) {
            owned.add(buf);
            return buf;
        }

        /** A buffer already released to refCnt 0. */
        ByteBuf released() {
            ByteBuf buf = filled(64);
            assertTrue(buf.release());
            return buf;
        }

        void checkAfterwards() {
            for (ByteBuf c : canaries) {
                for (int i = 0; i < c.capacity(); i++) {
                    assertEquals(pattern(i), c.getByte(i), "canary of " + c.capacity() + " B, byte " + i);
                }
            }
            ByteBuf again = filled(300);
            assertEquals(pattern(299), again.getByte(299));
            assertTrue(again.release(), "the allocator still allocates and releases");
            for (ByteBuf b : owned) {
                b.release(b.refCnt());
            }
            for (ByteBuf c : canaries) {
                assertTrue(c.release());
            }
            assertEquals(0, alloc.metric().usedDirectMemory(), () -> "direct memory left: " + alloc);
            assertEquals(0, heap.stats().liveBytes(), () -> "blocks left: " + heap.stats());
        }

        @Override
        public void close() {
            heap.close();
        }
    }

    interface Action {
        void run(Fixture f) throws Exception;
    }

    record Misuse(String name, Class<? extends Throwable> type, String message, Action action) {
        @Override
        public String toString() {
            return name;
        }
    }

    private static byte pattern(int i) {
        return (byte) (i * 31 + (i >>> 9));
    }

    static List<Misuse> misuses() {
        List<Misuse> m = new ArrayList<>();
        Class<IllegalReferenceCountException> refCnt = IllegalReferenceCountException.class;
        // reference counting
        m.add(new Misuse("release twice", refCnt, "refCnt: 0", f -> f.released().release()));
        m.add(new Misuse("release(2) of a buffer with refCnt 1", refCnt, "refCnt: 1",
                f -> f.keep(f.filled(64)).release(2)));
        m.add(new Misuse("retain after release", refCnt, "refCnt: 0", f -> f.released().retain()));
        m.add(new Misuse("read after release", refCnt, "refCnt: 0", f -> f.released().getByte(0)));
        m.add(new Misuse("write after release", refCnt, "refCnt: 0", f -> f.released().setLong(0, 1)));
        m.add(new Misuse("memoryAddress after release", refCnt, "refCnt: 0", f -> f.released().memoryAddress()));
        m.add(new Misuse("nioBuffer after release", refCnt, "refCnt: 0", f -> f.released().nioBuffer(0, 8)));
        m.add(new Misuse("capacity change after release", refCnt, "refCnt: 0", f -> f.released().capacity(128)));
        m.add(new Misuse("slice used after its parent's release", refCnt, "refCnt: 0", f -> {
            ByteBuf parent = f.filled(64);
            ByteBuf slice = parent.slice(8, 16);
            parent.release();
            slice.getByte(0);
        }));
        m.add(new Misuse("release of a slice after its parent's release", refCnt, "refCnt: 0", f -> {
            ByteBuf parent = f.filled(64);
            ByteBuf slice = parent.slice(8, 16);
            parent.release();
            slice.release();
        }));
        // arguments
        m.add(new Misuse("directBuffer: negative capacity", IllegalArgumentException.class, "-1",
                f -> f.alloc.directBuffer(-1)));
        m.add(new Misuse("directBuffer: initial capacity over the maximum", IllegalArgumentException.class, "maxCapacity",
                f -> f.alloc.directBuffer(128, 64)));
        m.add(new Misuse("capacity: over maxCapacity", IllegalArgumentException.class, "newCapacity: 65",
                f -> f.keep(f.alloc.directBuffer(16, 64)).capacity(65)));
        m.add(new Misuse("capacity: negative", IllegalArgumentException.class, "newCapacity: -1",
                f -> f.keep(f.filled(16)).capacity(-1)));
        m.add(new Misuse("write beyond maxCapacity", IndexOutOfBoundsException.class, "exceeds maxCapacity(64)",
                f -> f.keep(f.alloc.directBuffer(16, 64)).writeBytes(new byte[65])));
        m.add(new Misuse("getByte beyond the capacity", IndexOutOfBoundsException.class, "index: 16",
                f -> f.keep(f.filled(16)).getByte(16)));
        m.add(new Misuse("getLong crossing the end", IndexOutOfBoundsException.class, "index: 9",
                f -> f.keep(f.filled(16)).getLong(9)));
        m.add(new Misuse("setBytes with a negative length", IndexOutOfBoundsException.class, "length: -1",
                f -> f.keep(f.filled(16)).setBytes(0, new byte[8], 0, -1)));
        m.add(new Misuse("getBytes into a too small array", IndexOutOfBoundsException.class, "length: 16",
                f -> f.keep(f.filled(16)).getBytes(0, new byte[8], 0, 16)));
        m.add(new Misuse("readBytes past the writer index", IndexOutOfBoundsException.class, "exceeds writerIndex(16)",
                f -> f.keep(f.filled(16)).readBytes(new byte[17])));
        m.add(new Misuse("write to a read-only view", java.nio.ReadOnlyBufferException.class, "",
                f -> f.keep(f.filled(16)).asReadOnly().setByte(0, 1)));
        // the heap underneath
        m.add(new Misuse("allocate after the heap was closed", IllegalStateException.class, "heap is closed", f -> {
            SpanHeap other = SpanHeap.create();
            SpanHeapByteBufAllocator closedAlloc = new SpanHeapByteBufAllocator(other);
            other.close();
            closedAlloc.directBuffer(64);
        }));
        m.add(new Misuse("release after the heap was closed", IllegalStateException.class, "heap is closed", f -> {
            SpanHeap other = SpanHeap.create();
            ByteBuf buf = new SpanHeapByteBufAllocator(other).directBuffer(64);
            other.close();
            buf.release();
        }));
        return m;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("misuses")
    void misuseGetsItsExceptionAndLosesNothing(Misuse misuse) {
        try (Fixture f = new Fixture()) {
            Throwable t = assertThrows(misuse.type(), () -> misuse.action().run(f), misuse.name());
            String message = String.valueOf(t.getMessage());
            assertTrue(message.contains(misuse.message()),
                    () -> misuse.name() + ": message \"" + message + "\" lacks \"" + misuse.message() + "\"");
            f.checkAfterwards();
        }
    }

    @org.junit.jupiter.api.Test
    void theCatalogueHasEveryCase() {
        assertTrue(misuses().size() >= 20, "cases: " + misuses().size());
        assertEquals(misuses().size(), misuses().stream().map(Misuse::name).distinct().count(), "duplicate names");
    }
}
