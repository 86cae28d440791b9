package org.spanheap.stress.netty;

import io.netty.buffer.ByteBuf;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.GatheringByteChannel;
import java.util.Arrays;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;
import org.spanheap.SpanHeap;
import org.spanheap.netty.SpanHeapByteBufAllocator;

/**
 * Two threads read one {@code SpanHeapByteBufAllocator} direct buffer at the same time, each
 * through a {@code duplicate()} of its own, into a {@link GatheringByteChannel} of its own, in
 * {@code PIECES} calls of {@code readBytes(channel, length)} (the duplicate's {@code readBytes}
 * calls the shared buffer's {@code getBytes(index, channel, length)}). Netty allows this for
 * direct buffers: a derived buffer has indices of its own and shares only the bytes. The
 * protocol under test: every such call hands the channel a {@code ByteBuffer} of its own, so
 * neither thread's position or limit reaches the other's channel.
 *
 * <p>The channel uses a buffer as the JDK's channels do: it takes the position and the limit,
 * copies, then moves the position. A buffer shared by both calls shows as wrong bytes or as an
 * exception ({@code IllegalArgumentException} from a position beyond the other's limit,
 * {@code IndexOutOfBoundsException}, {@code BufferUnderflowException}).
 *
 * <p>r1, r2 (each reader): 1 every byte as written, 2 a wrong byte or a wrong count,
 * 3 an exception. r3 (the arbiter, after both): 1 the buffer's last release freed its block,
 * 2 it did not.
 */
@JCStressTest
@Description("Two threads read one spanheap-netty buffer through their own duplicates into channels: both see the exact bytes.")
@Outcome(id = "1, 1, 1", expect = Expect.ACCEPTABLE, desc = "Both readers got every byte; the block was freed after them.")
@Outcome(expect = Expect.FORBIDDEN,
        desc = "A reader got a wrong byte, a wrong count or an exception, or the block was not freed: the readers shared a ByteBuffer.")
@State
public class DuplicateChannelReadTest {

    static final SpanHeap HEAP = SpanHeap.create();
    static final SpanHeapByteBufAllocator ALLOC = new SpanHeapByteBufAllocator(HEAP);
    static final int SIZE = 512;
    static final int PIECES = 4;
    private static final byte[] BYTES = new byte[SIZE];
    static {
        for (int i = 0; i < SIZE; i++) {
            BYTES[i] = (byte) (i * 37 + (i >>> 8));
        }
    }

    private final ByteBuf shared = ALLOC.directBuffer(SIZE).writeBytes(BYTES);
    private int first;
    private int second;

    @Actor
    public void firstReader() {
        first = readThroughDuplicate(shared);
    }

    @Actor
    public void secondReader() {
        second = readThroughDuplicate(shared);
    }

    @Arbiter
    public void arbiter(III_Result r) {
        boolean freed = shared.release();
        if (first == 0 && second == 0) {
            return; // jcstress runs the arbiter alone once, to estimate the test's footprint
        }
        r.r1 = first;
        r.r2 = second;
        r.r3 = freed ? 1 : 2;
    }

    /** Reads all of {@code shared} through a new duplicate; 1 exact, 2 wrong, 3 an exception. */
    static int readThroughDuplicate(ByteBuf shared) {
        try {
            ByteBuf view = shared.duplicate();
            CopyingChannel out = new CopyingChannel();
            for (int p = 0; p < PIECES; p++) {
                if (view.readBytes(out, SIZE / PIECES) != SIZE / PIECES) {
                    return 2;
                }
            }
            return out.size == SIZE && Arrays.equals(out.bytes, BYTES) ? 1 : 2;
        } catch (RuntimeException | IOException e) {
            return 3;
        }
    }

    /** Keeps what is written to it; uses a buffer the way the JDK's channels do. */
    static final class CopyingChannel implements GatheringByteChannel {
        final byte[] bytes = new byte[SIZE];
        int size;

        @Override
        public int write(ByteBuffer src) {
            int position = src.position();
            int n = Math.min(src.limit() - position, SIZE - size);
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
}
