package org.spanheap.netty;

import io.netty.buffer.ByteBuf;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import org.spanheap.SpanHeap;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.GatheringByteChannel;
import java.nio.channels.ScatteringByteChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Many threads use one buffer at once, each through a derived buffer of its own (a
 * {@code duplicate()}, a {@code slice()} or a retained one), as Netty allows for direct buffers:
 * the derived buffers have indices of their own and share the bytes. Each thread reads the whole
 * buffer into a {@link GatheringByteChannel}, a {@link FileChannel}, an {@code OutputStream} or
 * through {@code nioBuffer}, in pieces, and checks every byte; or fills its own part of the buffer
 * from a {@link ScatteringByteChannel} or a file through a slice, and the test checks every byte
 * afterwards. A {@code ByteBuffer} shared by the derived buffers shows as a wrong byte, a
 * {@code BufferUnderflowException} or an {@code IndexOutOfBoundsException} in some thread.
 */
class DerivedBufferConcurrencyTest {

    private static final int THREADS = 8;
    private static final int SIZE = 64 << 10;
    /** Bytes per call: many calls per pass, so that the threads' calls overlap. */
    private static final int PIECE = 256;
    private static final int PASSES = 100;

    private SpanHeap heap;
    private SpanHeapByteBufAllocator alloc;

    @BeforeEach
    void createHeap() {
        heap = SpanHeap.create();
        alloc = new SpanHeapByteBufAllocator(heap);
    }

    @AfterEach
    void everyBlockWasFreed() {
        try {
            assertEquals(0, heap.stats().liveBytes(), () -> "blocks left: " + heap.stats());
        } finally {
            heap.close();
        }
    }

    private static byte pattern(int i) {
        return (byte) (i * 131 + (i >>> 8) * 7 + (i >>> 16));
    }

    private static byte[] expected(int from, int length) {
        byte[] b = new byte[length];
        for (int i = 0; i < length; i++) {
            b[i] = pattern(from + i);
        }
        return b;
    }

    /** How a thread gets its view of the shared buffer. */
    enum Derived {
        DUPLICATE {
            @Override
            ByteBuf of(ByteBuf shared) {
                return shared.duplicate();
            }
        },
        SLICE {
            @Override
            ByteBuf of(ByteBuf shared) {
                return shared.slice();
            }
        },
        RETAINED_DUPLICATE {
            @Override
            ByteBuf of(ByteBuf shared) {
                return shared.retainedDuplicate();
            }
        },
        RETAINED_SLICE {
            @Override
            ByteBuf of(ByteBuf shared) {
                return shared.retainedSlice();
            }
        };

        abstract ByteBuf of(ByteBuf shared);

        boolean retained() {
            return this == RETAINED_DUPLICATE || this == RETAINED_SLICE;
        }
    }

    /** Where a thread reads the buffer to. */
    enum Sink {
        GATHERING_CHANNEL, FILE_CHANNEL, OUTPUT_STREAM, NIO_BUFFER
    }

    /** A channel that keeps what is written to it, at most {@code PIECE / 2} bytes a call. */
    private static final class ByteSink implements GatheringByteChannel {
        private final byte[] bytes = new byte[SIZE];
        private int size;

        /**
         * As the JDK's channels use a buffer: take its position and limit, transfer, then move
         * the position; the yield stands in for the system call between them.
         */
        @Override
        public int write(ByteBuffer src) {
            int position = src.position();
            int n = Math.min(src.limit() - position, Math.min(PIECE / 2, bytes.length - size));
            Thread.yield();
            src.get(position, bytes, size, n);
            src.position(position + n);
            size += n;
            return n;
        }

        @Override
        public long write(ByteBuffer[] srcs, int offset, int length) {
            long n = 0;
            for (int i = offset; i < offset + length; i++) {
                n += write(srcs[i]);
            }
            return n;
        }

        @Override
        public long write(ByteBuffer[] srcs) {
            return write(srcs, 0, srcs.length);
        }

        @Override
        public boolean isOpen() {
            return true;
        }

        @Override
        public void close() {}
    }

    /** A channel that yields {@code pattern(from + i)}, at most {@code PIECE / 2} bytes a call. */
    private static final class PatternSource implements ScatteringByteChannel {
        private int next;

        PatternSource(int from) {
            next = from;
        }

        @Override
        public int read(ByteBuffer dst) {
            int n = Math.min(dst.remaining(), PIECE / 2);
            for (int i = 0; i < n; i++) {
                dst.put(pattern(next++));
            }
            return n;
        }

        @Override
        public long read(ByteBuffer[] dsts, int offset, int length) {
            long n = 0;
            for (int i = offset; i < offset + length; i++) {
                n += read(dsts[i]);
            }
            return n;
        }

        @Override
        public long read(ByteBuffer[] dsts) {
            return read(dsts, 0, dsts.length);
        }

        @Override
        public boolean isOpen() {
            return true;
        }

        @Override
        public void close() {}
    }

    /** Runs {@code task(thread)} on {@code THREADS} threads started together; collects what went wrong. */
    private interface PerThread {
        void run(int thread) throws Exception;
    }

    private static void onThreads(PerThread task) throws Exception {
        Queue<Throwable> failures = new ConcurrentLinkedQueue<>();
        CyclicBarrier start = new CyclicBarrier(THREADS);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            int thread = t;
            threads.add(Thread.ofPlatform().name("reader-" + t).start(() -> {
                try {
                    start.await(30, TimeUnit.SECONDS);
                    task.run(thread);
                } catch (Throwable e) {
                    failures.add(e);
                }
            }));
        }
        for (Thread t : threads) {
            assertTrue(t.join(Duration.ofSeconds(120)), () -> t.getName() + " did not finish");
        }
        if (!failures.isEmpty()) {
            AssertionError e = new AssertionError(failures.size() + " of " + THREADS + " threads failed; the first: "
                    + failures.peek());
            failures.forEach(e::addSuppressed);
            throw e;
        }
    }

    private ByteBuf filled() {
        ByteBuf buf = alloc.directBuffer(SIZE);
        buf.writeBytes(expected(0, SIZE));
        return buf;
    }

    /** Reads all of {@code view} (its reader index at 0) into the sink, in pieces; returns the bytes. */
    private static byte[] readAll(ByteBuf view, Sink sink, FileChannel file) throws IOException {
        switch (sink) {
            case GATHERING_CHANNEL -> {
                ByteSink out = new ByteSink();
                while (view.isReadable()) {
                    // readBytes on a derived buffer: getBytes(index, channel, length) on the shared one
                    view.readBytes(out, Math.min(PIECE, view.readableBytes()));
                }
                assertEquals(SIZE, out.size, "bytes written to the channel");
                return out.bytes;
            }
            case FILE_CHANNEL -> {
                long position = 0;
                while (view.isReadable()) {
                    position += view.readBytes(file, position, Math.min(PIECE, view.readableBytes()));
                }
                assertEquals(SIZE, position, "bytes written to the file");
                byte[] back = new byte[SIZE];
                ByteBuffer dst = ByteBuffer.wrap(back);
                while (dst.hasRemaining()) {
                    if (file.read(dst, dst.position()) < 0) {
                        break;
                    }
                }
                return back;
            }
            case OUTPUT_STREAM -> {
                ByteArrayOutputStream out = new ByteArrayOutputStream(SIZE);
                while (view.isReadable()) {
                    view.readBytes(out, Math.min(PIECE, view.readableBytes()));
                }
                return out.toByteArray();
            }
            case NIO_BUFFER -> {
                byte[] back = new byte[SIZE];
                for (int i = 0; i < SIZE; i += PIECE) {
                    ByteBuffer[] parts = i % (2 * PIECE) == 0
                            ? new ByteBuffer[] {view.nioBuffer(i, PIECE)} : view.nioBuffers(i, PIECE);
                    int at = i;
                    for (ByteBuffer part : parts) {
                        int n = part.remaining();
                        part.get(back, at, n);
                        at += n;
                    }
                }
                return back;
            }
            default -> throw new AssertionError(sink);
        }
    }

    @ParameterizedTest(name = "{0} into {1}")
    @MethodSource("readCases")
    void threadsReadingThroughDerivedBuffersEachSeeEveryByte(Derived derived, Sink sink, @TempDir Path dir)
            throws Exception {
        ByteBuf shared = filled();
        byte[] want = expected(0, SIZE);
        try {
            onThreads(thread -> {
                try (FileChannel file = sink == Sink.FILE_CHANNEL ? FileChannel.open(dir.resolve("t" + thread),
                        StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE) : null) {
                    for (int pass = 0; pass < PASSES; pass++) {
                        ByteBuf view = derived.of(shared);
                        try {
                            assertArrayEquals(want, readAll(view, sink, file),
                                    "bytes read through a " + derived + " into " + sink + ", pass " + pass);
                        } finally {
                            if (derived.retained()) {
                                view.release();
                            }
                        }
                    }
                }
            });
            assertEquals(1, shared.refCnt(), "every retained view was released");
        } finally {
            shared.release();
        }
    }

    static List<Arguments> readCases() {
        List<Arguments> cases = new ArrayList<>();
        for (Derived d : Derived.values()) {
            for (Sink s : Sink.values()) {
                cases.add(Arguments.of(d, s));
            }
        }
        return cases;
    }

    /** Where a thread fills its part of the buffer from. */
    enum Source {
        SCATTERING_CHANNEL, FILE_CHANNEL
    }

    @ParameterizedTest(name = "from {0}")
    @EnumSource(Source.class)
    void threadsFillingTheirOwnSlicesFromChannelsWriteEveryByte(Source source, @TempDir Path dir) throws Exception {
        Path file = dir.resolve("pattern");
        Files.write(file, expected(0, SIZE));
        ByteBuf shared = alloc.directBuffer(SIZE).writeZero(SIZE);
        int part = SIZE / THREADS;
        try {
            for (int pass = 0; pass < PASSES / 5; pass++) {
                shared.setZero(0, SIZE);
                onThreads(thread -> {
                    int from = thread * part;
                    ByteBuf slice = shared.slice(from, part).clear();
                    try (FileChannel in = source == Source.FILE_CHANNEL
                            ? FileChannel.open(file, StandardOpenOption.READ) : null) {
                        PatternSource channel = new PatternSource(from);
                        while (slice.isWritable()) {
                            int n = Math.min(PIECE, slice.writableBytes());
                            int read = in != null
                                    ? slice.writeBytes(in, from + slice.writerIndex(), n)
                                    : slice.writeBytes(channel, n);
                            assertTrue(read > 0, () -> "read " + read + " bytes");
                        }
                    }
                });
                byte[] got = new byte[SIZE];
                shared.getBytes(0, got);
                assertArrayEquals(expected(0, SIZE), got, "bytes after pass " + pass);
            }
        } finally {
            shared.release();
        }
    }
}
