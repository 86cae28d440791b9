package org.spanheap.examples.netty;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.spanheap.SpanHeap;
import org.spanheap.netty.SpanHeapByteBufAllocator;

import java.nio.ByteBuffer;
import java.nio.channels.GatheringByteChannel;
import java.util.concurrent.TimeUnit;

/**
 * A direct buffer of {@code size} bytes written whole into a {@link GatheringByteChannel} that
 * copies what it is given into an array (as a socket's {@code write} copies into the kernel):
 * what the {@code ByteBuffer} per call of {@code getBytes(index, channel, length)} costs against
 * the buffer's kept view, for {@link SpanHeapByteBufAllocator} and, beside it, Netty's
 * {@link PooledByteBufAllocator} (whose {@code getBytes} duplicates its kept buffer per call).
 *
 * <ul>
 *   <li>{@code getBytesToChannel}: {@code getBytes(0, channel, size)}, the call a derived
 *       buffer makes from any thread: a new {@code ByteBuffer} over the block per call;</li>
 *   <li>{@code readBytesToChannel}: {@code readBytes(channel, size)} on the buffer itself (its
 *       reader index set back to 0 first): the kept view, repositioned;</li>
 *   <li>{@code duplicateReadBytesToChannel}: {@code duplicate().readBytes(channel, size)}, one
 *       write of a broadcast: a new duplicate and a new {@code ByteBuffer}.</li>
 * </ul>
 *
 * Run (from the repository root):
 * <pre>
 * ./mvnw -q -pl examples -am -DskipTests -Pdemo package -Ddemo.jvmArgs= \
 *     -Ddemo.mainClass=org.spanheap.examples.netty.NettyChannelCopyBenchmark
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsPrepend = "--enable-native-access=ALL-UNNAMED")
public class NettyChannelCopyBenchmark {

    /** The allocator of the buffer: {@code spanheap} or Netty's {@code pooled}. */
    @Param({"spanheap", "pooled"})
    public String allocator;

    /** Buffer size in bytes. */
    @Param({"64", "1024", "16384"})
    public int size;

    private SpanHeap heap;
    private ByteBuf buf;
    private ArraySink sink;

    /** A channel that copies everything it is given into an array, overwriting it each call. */
    static final class ArraySink implements GatheringByteChannel {
        private final byte[] bytes;

        ArraySink(int capacity) {
            bytes = new byte[capacity];
        }

        @Override
        public int write(ByteBuffer src) {
            int n = src.remaining();
            src.get(bytes, 0, n);
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

    /** The allocator (a span heap of its own for {@code spanheap}), one filled direct buffer and the channel. */
    @Setup(Level.Trial)
    public void setup() {
        ByteBufAllocator alloc = switch (allocator) {
            case "spanheap" -> new SpanHeapByteBufAllocator(heap = SpanHeap.create());
            case "pooled" -> new PooledByteBufAllocator(true);
            default -> throw new IllegalArgumentException(allocator);
        };
        buf = alloc.directBuffer(size);
        for (int i = 0; i < size; i++) {
            buf.writeByte(i);
        }
        sink = new ArraySink(size);
    }

    /** Releases the buffer and closes the span heap. */
    @TearDown(Level.Trial)
    public void tearDown() {
        buf.release();
        if (heap != null) {
            heap.close();
        }
    }

    /** {@return the bytes written} */
    @Benchmark
    public int getBytesToChannel() throws Exception {
        return buf.getBytes(0, sink, size);
    }

    /** {@return the bytes written} */
    @Benchmark
    public int readBytesToChannel() throws Exception {
        buf.readerIndex(0);
        return buf.readBytes(sink, size);
    }

    /** {@return the bytes written} */
    @Benchmark
    public int duplicateReadBytesToChannel() throws Exception {
        return buf.duplicate().readBytes(sink, size);
    }

    /**
     * Runs this benchmark with JMH; arguments are JMH's (default: this class).
     *
     * @param args JMH command-line arguments
     * @throws Exception if JMH fails
     */
    public static void main(String[] args) throws Exception {
        String[] a = args.length == 0 ? new String[] {NettyChannelCopyBenchmark.class.getSimpleName()} : args;
        org.openjdk.jmh.Main.main(a);
    }
}
