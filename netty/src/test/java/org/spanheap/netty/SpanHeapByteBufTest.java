package org.spanheap.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.buffer.Unpooled;
import io.netty.util.IllegalReferenceCountException;
import io.netty.util.ResourceLeakDetector;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.spanheap.SpanHeap;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ReadOnlyBufferException;
import java.nio.channels.FileChannel;
import java.nio.channels.Pipe;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The buffer's side of the contract Netty's own buffers are held to: byte order, growth,
 * reference counting, derived buffers and bulk transfers to and from every kind of
 * destination. Netty's {@code Unpooled} heap buffer is the reference for expected bytes.
 */
class SpanHeapByteBufTest {

    private SpanHeap heap;
    private SpanHeapByteBufAllocator alloc;
    private ResourceLeakDetector.Level leakLevel;

    /**
     * The buffers themselves, never the leak detector's wrappers: at Netty's default level it
     * wraps one allocation in 128 at random, and a wrapper is not its own duplicate's parent
     * (the allocator's tests cover the wrapping).
     */
    @BeforeEach
    void createHeap() {
        leakLevel = ResourceLeakDetector.getLevel();
        ResourceLeakDetector.setLevel(ResourceLeakDetector.Level.DISABLED);
        heap = SpanHeap.create();
        alloc = new SpanHeapByteBufAllocator(heap);
    }

    @AfterEach
    void everyBlockWasFreed() {
        try {
            assertEquals(0, alloc.metric().usedDirectMemory(), () -> "direct memory left: " + alloc);
            assertEquals(0, heap.stats().liveBytes(), () -> "blocks left: " + heap.stats());
        } finally {
            heap.close();
            ResourceLeakDetector.setLevel(leakLevel);
        }
    }

    private static byte pattern(int i) {
        return (byte) (i * 31 + (i >>> 9));
    }

    private ByteBuf filled(int length) {
        ByteBuf buf = alloc.directBuffer(length);
        for (int i = 0; i < length; i++) {
            buf.writeByte(pattern(i));
        }
        return buf;
    }

    @Test
    void primitivesHaveTheBytesOfNettysOwnBufferInBothByteOrders() {
        Consumer<ByteBuf> writer = b -> b.writeBoolean(true).writeByte(-2).writeShort(0x1234).writeShortLE(0x1234)
                .writeMedium(0xabcdef).writeMediumLE(0xabcdef).writeInt(0x89abcdef).writeIntLE(0x89abcdef)
                .writeLong(0x0102030405060708L).writeLongLE(0x0102030405060708L).writeChar('\u20ac')
                .writeFloat(1.5f).writeDouble(-2.25);
        ByteBuf ours = alloc.directBuffer(16);
        ByteBuf reference = Unpooled.buffer(16);
        try {
            writer.accept(ours);
            writer.accept(reference);
            assertEquals(reference.readableBytes(), ours.readableBytes());
            assertArrayEquals(ByteBufUtil.getBytes(reference), ByteBufUtil.getBytes(ours));
            assertEquals(reference, ours); // ByteBuf.equals compares readable bytes
            assertEquals(reference.hashCode(), ours.hashCode());

            assertTrue(ours.readBoolean());
            assertEquals(-2, ours.readByte());
            assertEquals(0x1234, ours.readShort());
            assertEquals(0x1234, ours.readShortLE());
            assertEquals(0xabcdef, ours.readUnsignedMedium());
            assertEquals(0xabcdef, ours.readUnsignedMediumLE());
            assertEquals(0x89abcdef, ours.readInt());
            assertEquals(0x89abcdef, ours.readIntLE());
            assertEquals(0x0102030405060708L, ours.readLong());
            assertEquals(0x0102030405060708L, ours.readLongLE());
            assertEquals('\u20ac', ours.readChar());
            assertEquals(1.5f, ours.readFloat());
            assertEquals(-2.25, ours.readDouble());
            assertFalse(ours.isReadable());
            assertEquals(0xffabcdef, ours.getMedium(6), "getMedium sign-extends");
            assertEquals((short) 0x3412, ours.getShortLE(2), "the big-endian short's bytes read little-endian");
        } finally {
            ours.release();
            reference.release();
        }
    }

    @Test
    void ensureWritableGrowsUpToMaxCapacityKeepingTheBytes() {
        int max = 100_000;
        ByteBuf buf = alloc.directBuffer(16, max);
        try {
            for (int i = 0; i < max; i++) {
                buf.writeByte(pattern(i));
            }
            assertEquals(max, buf.capacity(), "the last growth is clipped to maxCapacity");
            assertEquals(HeldBytes.of(heap, max), alloc.metric().usedDirectMemory());
            for (int i = 0; i < max; i++) {
                assertEquals(pattern(i), buf.getByte(i), "byte " + i);
            }
            assertEquals(0, buf.maxWritableBytes());
            assertThrows(IndexOutOfBoundsException.class, () -> buf.writeByte(1));
            assertThrows(IndexOutOfBoundsException.class, () -> buf.ensureWritable(1));
            assertEquals(1, buf.ensureWritable(1, false), "1: not enough room and capacity unchanged");
            assertThrows(IllegalArgumentException.class, () -> buf.capacity(max + 1));
            assertThrows(IndexOutOfBoundsException.class, () -> buf.getByte(max));
        } finally {
            buf.release();
        }
    }

    @Test
    void capacityShrinksAndGrowsKeepingThePrefixAndTrimmingIndices() {
        ByteBuf buf = filled(1000);
        try {
            buf.readerIndex(700);
            buf.capacity(500);
            assertEquals(500, buf.capacity());
            assertEquals(500, buf.readerIndex());
            assertEquals(500, buf.writerIndex());
            assertEquals(HeldBytes.of(heap, 500), alloc.metric().usedDirectMemory());
            buf.capacity(3000);
            assertEquals(3000, buf.capacity());
            for (int i = 0; i < 500; i++) {
                assertEquals(pattern(i), buf.getByte(i), "byte " + i);
            }
            buf.setByte(2999, 9);
            assertEquals(9, buf.getByte(2999));
            assertSame(buf, buf.capacity(3000));
        } finally {
            buf.release();
        }
    }

    @Test
    void releaseToZeroFreesTheBlockAndEveryLaterUseThrows() {
        ByteBuf buf = filled(64);
        assertEquals(1, buf.refCnt());
        assertSame(buf, buf.retain());
        assertSame(buf, buf.retain(3));
        assertEquals(5, buf.refCnt());
        assertFalse(buf.release(3));
        assertFalse(buf.release());
        assertEquals(HeldBytes.of(heap, 64), alloc.metric().usedDirectMemory());
        assertTrue(buf.release());
        assertEquals(0, buf.refCnt());
        assertEquals(0, alloc.metric().usedDirectMemory());
        assertEquals(0, heap.stats().liveBytes());

        List<Runnable> uses = List.of(() -> buf.getByte(0), () -> buf.writeByte(1), buf::readByte,
                () -> buf.setLong(0, 1), buf::retain, buf::release, () -> buf.capacity(128),
                buf::memoryAddress, () -> buf.nioBuffer(0, 1), () -> buf.getBytes(0, new byte[1]),
                () -> buf.ensureWritable(1));
        for (Runnable use : uses) {
            assertThrows(IllegalReferenceCountException.class, use::run);
        }
        assertTrue(buf.toString().contains("freed"), buf.toString());
    }

    @Test
    void slicesAndDuplicatesShareBytesButNotIndices() {
        ByteBuf buf = filled(100);
        try {
            ByteBuf slice = buf.slice(10, 20);
            assertEquals(20, slice.capacity());
            assertEquals(pattern(10), slice.getByte(0));
            slice.setByte(0, 77);
            assertEquals(77, buf.getByte(10), "writes through a slice reach the parent");
            assertEquals(1, slice.refCnt(), "a slice shares the parent's count");
            assertThrows(IndexOutOfBoundsException.class, () -> slice.getByte(20));

            ByteBuf dup = buf.duplicate();
            dup.readerIndex(50);
            assertEquals(0, buf.readerIndex());
            dup.setByte(99, 5);
            assertEquals(5, buf.getByte(99));
            assertSame(buf, dup.unwrap());
            assertNull(buf.unwrap());

            ByteBuf rdup = buf.retainedDuplicate();
            assertEquals(2, buf.refCnt());
            assertFalse(rdup.release(), "the duplicate shares the parent's count: 2 -> 1");
            assertEquals(1, buf.refCnt());
        } finally {
            assertTrue(buf.release());
        }
    }

    @Test
    void aRetainedSliceKeepsTheBlockAliveAfterTheParentIsReleased() {
        ByteBuf buf = filled(4096);
        ByteBuf slice = buf.retainedSlice(4000, 96);
        ByteBuf read = buf.readerIndex(100).readRetainedSlice(50);
        assertFalse(buf.release());
        assertEquals(HeldBytes.of(heap, 4096), alloc.metric().usedDirectMemory());
        assertEquals(pattern(4000), slice.getByte(0));
        assertEquals(pattern(100), read.readByte());
        assertFalse(read.release());
        assertTrue(slice.release());
        assertEquals(0, buf.refCnt());
        assertThrows(IllegalReferenceCountException.class, () -> slice.getByte(0));
    }

    @Test
    void nioViewsAreTheBlockItself() {
        ByteBuf buf = filled(256);
        try {
            assertEquals(1, buf.nioBufferCount());
            assertTrue(buf.isContiguous());
            ByteBuffer view = buf.nioBuffer(16, 32);
            assertTrue(view.isDirect());
            assertEquals(32, view.remaining());
            assertEquals(buf.memoryAddress() + 16, MemorySegment.ofBuffer(view).address());
            assertEquals(pattern(16), view.get(0));
            view.put(1, (byte) 55);
            assertEquals(55, buf.getByte(17));
            ByteBuffer[] views = buf.nioBuffers(0, 256);
            assertEquals(1, views.length);
            assertEquals(256, views[0].remaining());
            ByteBuffer internal = buf.internalNioBuffer(8, 8);
            assertEquals(8, internal.position());
            assertEquals(16, internal.limit());
            assertThrows(IndexOutOfBoundsException.class, () -> buf.nioBuffer(250, 7));
            assertThrows(UnsupportedOperationException.class, buf::array);
            assertThrows(UnsupportedOperationException.class, buf::arrayOffset);
        } finally {
            buf.release();
        }
    }

    /** Every kind of buffer a copy may go to or come from, each of at least {@code capacity} bytes. */
    private List<ByteBuf> otherBuffers(int capacity) {
        int half = capacity / 2;
        return List.of(Unpooled.buffer(capacity), Unpooled.directBuffer(capacity), alloc.directBuffer(capacity),
                alloc.heapBuffer(capacity), Unpooled.compositeBuffer().addComponents(true,
                        Unpooled.buffer(half).writeZero(half), Unpooled.directBuffer(capacity - half).writeZero(capacity - half)));
    }

    @Test
    void bulkCopiesToAndFromEveryKindOfBuffer() {
        int n = 3000;
        ByteBuf src = filled(n);
        try {
            for (ByteBuf other : otherBuffers(n)) {
                try {
                    assertTrue(other.capacity() >= n, other::toString);
                    src.getBytes(100, other, 10, 2000);
                    for (int i = 0; i < 2000; i++) {
                        assertEquals(pattern(100 + i), other.getByte(10 + i), other + " byte " + i);
                    }
                    ByteBuf back = alloc.directBuffer(n).writeZero(n);
                    back.setBytes(5, other, 10, 2000);
                    for (int i = 0; i < 2000; i++) {
                        assertEquals(pattern(100 + i), back.getByte(5 + i), other + " back, byte " + i);
                    }
                    assertEquals(0, back.getByte(4));
                    assertEquals(0, back.getByte(2005));
                    back.release();
                } finally {
                    other.release();
                }
            }
        } finally {
            src.release();
        }
    }

    @Test
    void bulkCopiesToAndFromArraysAndByteBuffers() {
        ByteBuf buf = filled(500);
        try {
            byte[] array = new byte[300];
            buf.getBytes(50, array, 100, 200);
            for (int i = 0; i < 200; i++) {
                assertEquals(pattern(50 + i), array[100 + i]);
            }
            assertThrows(IndexOutOfBoundsException.class, () -> buf.getBytes(400, array, 0, 101));
            assertThrows(IndexOutOfBoundsException.class, () -> buf.getBytes(0, array, 250, 51));

            for (ByteBuffer nio : List.of(ByteBuffer.allocate(64), ByteBuffer.allocateDirect(64))) {
                nio.position(4).limit(36);
                buf.getBytes(200, nio);
                assertEquals(36, nio.position());
                for (int i = 0; i < 32; i++) {
                    assertEquals(pattern(200 + i), nio.get(4 + i));
                }
                nio.position(4).limit(36);
                buf.setBytes(0, nio);
                assertEquals(36, nio.position());
                for (int i = 0; i < 32; i++) {
                    assertEquals(pattern(200 + i), buf.getByte(i));
                }
            }
            assertThrows(ReadOnlyBufferException.class, () -> buf.getBytes(0, ByteBuffer.allocate(8).asReadOnlyBuffer()));

            byte[] src = "the quick brown fox".getBytes(StandardCharsets.US_ASCII);
            buf.setBytes(480, src, 0, src.length);
            assertEquals("quick", buf.toString(484, 5, StandardCharsets.US_ASCII));
            assertThrows(IndexOutOfBoundsException.class, () -> buf.setBytes(490, src));

            // An overlapping copy from a view of the same block.
            buf.setBytes(1, buf.nioBuffer(0, 100));
            assertEquals(pattern(200), buf.getByte(1));
        } finally {
            buf.release();
        }
    }

    @Test
    void streamsAndChannels(@TempDir Path dir) throws Exception {
        int n = 20_000; // more than one chunk of the stream copy
        ByteBuf buf = filled(n);
        try {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            buf.getBytes(0, out, n);
            assertArrayEquals(ByteBufUtil.getBytes(buf), out.toByteArray());

            ByteBuf in = alloc.directBuffer(n);
            assertEquals(n, in.writeBytes(new ByteArrayInputStream(out.toByteArray()), n));
            assertEquals(buf, in);
            assertEquals(-1, in.setBytes(0, new ByteArrayInputStream(new byte[0]), 10), "end of stream");
            in.release();

            Path file = dir.resolve("bytes");
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
                    StandardOpenOption.WRITE)) {
                assertEquals(n, buf.getBytes(0, ch, 0L, n));
                ByteBuf fromFile = alloc.directBuffer(n);
                assertEquals(n - 10, fromFile.writeBytes(ch, 10L, n - 10));
                assertEquals(buf.slice(10, n - 10), fromFile);
                fromFile.release();
            }

            Pipe pipe = Pipe.open();
            Pipe.SourceChannel source = pipe.source();
            try (Pipe.SinkChannel sink = pipe.sink()) {
                assertEquals(1000, buf.getBytes(5, sink, 1000));
                ByteBuf fromPipe = alloc.directBuffer(1000);
                int read = 0;
                while (read < 1000) {
                    read += fromPipe.writeBytes(source, 1000 - read);
                }
                assertEquals(buf.slice(5, 1000), fromPipe);
                fromPipe.release();
                source.close();
                ByteBuf closed = alloc.directBuffer(8);
                assertEquals(-1, closed.setBytes(0, source, 8), "closed channel");
                closed.release();
            }
        } finally {
            buf.release();
        }
    }

    /** readBytes/writeBytes with channels on the buffer itself: the kept view, and the indices move. */
    @Test
    void channelReadsAndWritesOnTheBufferItselfMoveItsIndices(@TempDir Path dir) throws Exception {
        int n = 5000;
        ByteBuf buf = filled(n);
        try (FileChannel ch = FileChannel.open(dir.resolve("bytes"), StandardOpenOption.CREATE,
                StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            assertEquals(1000, buf.readBytes(ch, 0L, 1000));
            assertEquals(1000, buf.readerIndex());
            assertEquals(n - 1000, buf.readBytes(ch, 1000L, n - 1000));
            assertEquals(n, buf.readerIndex());
            assertThrows(IndexOutOfBoundsException.class, () -> buf.readBytes(ch, 0L, 1));
            ByteBuf fromFile = alloc.directBuffer(16); // grows to take the file
            assertEquals(n, fromFile.writeBytes(ch, 0L, n));
            assertEquals(n, fromFile.writerIndex());
            assertEquals(buf.readerIndex(0), fromFile);
            fromFile.release();

            Pipe pipe = Pipe.open();
            try (Pipe.SinkChannel sink = pipe.sink(); Pipe.SourceChannel source = pipe.source()) {
                assertEquals(1000, buf.readerIndex(3).readBytes(sink, 1000));
                assertEquals(1003, buf.readerIndex());
                ByteBuf fromPipe = alloc.directBuffer(8);
                while (fromPipe.writerIndex() < 1000) {
                    assertTrue(fromPipe.writeBytes(source, 1000 - fromPipe.writerIndex()) > 0);
                }
                assertEquals(buf.slice(3, 1000), fromPipe);
                source.close();
                assertEquals(-1, fromPipe.writeBytes(source, 8), "closed channel");
                assertEquals(1000, fromPipe.writerIndex(), "no bytes from a closed channel");
                fromPipe.release();
            }
        } finally {
            buf.release();
        }
    }

    @Test
    void copyIsIndependentAndFromTheSameAllocator() {
        ByteBuf buf = filled(300);
        ByteBuf copy = buf.copy(10, 100);
        try {
            assertSame(alloc, copy.alloc());
            assertTrue(copy.isDirect());
            assertEquals(100, copy.readableBytes());
            assertEquals(buf.slice(10, 100), copy);
            copy.setByte(0, ~pattern(10));
            assertEquals(pattern(10), buf.getByte(10));
            assertNotEquals(buf.memoryAddress() + 10, copy.memoryAddress());
            assertEquals(HeldBytes.of(heap, 300) + HeldBytes.of(heap, 100), alloc.metric().usedDirectMemory());
        } finally {
            copy.release();
            buf.release();
        }
    }

    @Test
    void searchesZeroingAndReadOnlyViews() {
        ByteBuf buf = alloc.directBuffer(64);
        try {
            buf.writeCharSequence("GET /index.html HTTP/1.1\r\n", StandardCharsets.US_ASCII);
            assertEquals(3, buf.indexOf(0, buf.writerIndex(), (byte) ' '));
            assertEquals(24, buf.bytesBefore((byte) '\r'));
            assertEquals(25, buf.forEachByte(b -> b != '\n'));
            buf.setZero(0, 3);
            assertEquals(0, buf.getInt(0) >>> 8);
            ByteBuf readOnly = buf.asReadOnly();
            assertTrue(readOnly.isReadOnly());
            assertThrows(ReadOnlyBufferException.class, () -> readOnly.setByte(0, 1));
        } finally {
            buf.release();
        }
    }
}
