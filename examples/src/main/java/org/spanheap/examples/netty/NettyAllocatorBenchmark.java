package org.spanheap.examples.netty;

import io.netty.buffer.AdaptiveByteBufAllocator;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.UnpooledByteBufAllocator;
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

import java.util.concurrent.TimeUnit;

/**
 * Direct-buffer allocation through {@link SpanHeapByteBufAllocator} against Netty's own
 * {@link PooledByteBufAllocator}, {@link AdaptiveByteBufAllocator} and (as the floor)
 * {@link UnpooledByteBufAllocator}.
 *
 * <ul>
 *   <li>{@code allocWriteRelease}: allocate a direct buffer of {@code size} bytes, write 8
 *       bytes, release it: the cost of a short-lived I/O buffer;</li>
 *   <li>{@code growAndRelease}: start at 64 bytes and write {@code size} bytes in 256-byte
 *       pieces, so the buffer grows by reallocation (as a decoder's cumulation does).</li>
 * </ul>
 *
 * Run (from the repository root; add JMH flags in {@code demo.args}, e.g. {@code -t 2}):
 * <pre>
 * ./mvnw -q -pl examples -am -DskipTests -Pdemo package -Ddemo.jvmArgs= \
 *     -Ddemo.mainClass=org.spanheap.examples.netty.NettyAllocatorBenchmark
 * </pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsPrepend = "--enable-native-access=ALL-UNNAMED")
public class NettyAllocatorBenchmark {

    /** The allocator under test. */
    @Param({"spanheap", "pooled", "adaptive", "unpooled"})
    public String allocator;

    /** Buffer size in bytes. */
    @Param({"64", "1024", "16384", "65536"})
    public int size;

    /**
     * The span heap's per-thread cache budget per size class, in KiB ({@code spanheap}
     * only; its {@code threadCacheBytesPerClass}). With the default, 64, a thread keeps up to
     * 64 KiB of each class: one block of the classes from 40 to 64 KiB.
     */
    @Param({"64"})
    public int heapCacheKiB;

    private ByteBufAllocator alloc;
    private SpanHeap heap;
    private final byte[] piece = new byte[256];

    /** Creates the allocator (a span heap of its own for {@code spanheap}). */
    @Setup(Level.Trial)
    public void setup() {
        alloc = switch (allocator) {
            case "spanheap" -> new SpanHeapByteBufAllocator(
                    heap = SpanHeap.builder().threadCacheBytesPerClass(heapCacheKiB * 1024L).build());
            case "pooled" -> new PooledByteBufAllocator(true);
            case "adaptive" -> new AdaptiveByteBufAllocator(true, true);
            case "unpooled" -> new UnpooledByteBufAllocator(true);
            default -> throw new IllegalArgumentException(allocator);
        };
    }

    /** Closes the span heap, after checking that every buffer was released. */
    @TearDown(Level.Trial)
    public void tearDown() {
        if (heap != null) {
            if (heap.stats().liveBytes() != 0) {
                throw new IllegalStateException("buffers leaked: " + heap.stats());
            }
            heap.close();
        }
    }

    /** {@return a byte read back (consumed by JMH)} */
    @Benchmark
    public long allocWriteRelease() {
        ByteBuf b = alloc.directBuffer(size);
        b.writeLong(size);
        long v = b.getLong(0);
        b.release();
        return v;
    }

    /** {@return the grown buffer's capacity} */
    @Benchmark
    public int growAndRelease() {
        ByteBuf b = alloc.directBuffer(64);
        for (int n = 0; n < size; n += piece.length) {
            b.writeBytes(piece);
        }
        int c = b.capacity();
        b.release();
        return c;
    }

    /**
     * Runs this benchmark with JMH; arguments are JMH's (default: this class).
     *
     * @param args JMH command-line arguments
     * @throws Exception if JMH fails
     */
    public static void main(String[] args) throws Exception {
        String[] a = args.length == 0 ? new String[] {NettyAllocatorBenchmark.class.getSimpleName()} : args;
        org.openjdk.jmh.Main.main(a);
    }
}
