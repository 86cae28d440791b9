package org.spanheap.netty;

import io.netty.buffer.AbstractReferenceCountedByteBuf;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufAllocator;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ReadOnlyBufferException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.GatheringByteChannel;
import java.nio.channels.ScatteringByteChannel;

/**
 * A direct {@link ByteBuf} over one block of a span heap, read and written through its
 * {@link MemorySegment}.
 *
 * <p>Why a buffer class of its own instead of a subclass of Netty's
 * {@code UnpooledDirectByteBuf}: Netty 4.2's hook for the memory of that class,
 * {@code allocateDirectBuffer(int)}, returns {@code io.netty.util.internal.CleanableDirectBuffer},
 * an internal type, and 4.2's constructor no longer calls the 4.1 hooks
 * ({@code allocateDirect}, {@code freeDirect}). There is no public way to give Netty's own
 * direct buffer classes memory of ours that works on both lines; {@link AbstractReferenceCountedByteBuf}
 * is public in both, and supplies indices, bounds checks, reference counting, derived
 * buffers and the {@code read*}/{@code write*} methods on top of the primitives here.
 *
 * <p>Growth ({@link #capacity(int)}, called by {@code ensureWritable}) allocates a new block,
 * copies the bytes and frees the old block. Release to zero frees the block and leaves an
 * empty segment in its place: even with Netty's accessibility check turned off
 * ({@code io.netty.buffer.checkAccessible=false}), a use after release then throws
 * {@link IndexOutOfBoundsException} instead of touching memory the heap handed out again.
 *
 * <p>Not thread-safe, like every Netty buffer; the block may be freed by any thread.
 *
 * <p><b>NIO buffers.</b> Netty lets several threads use one buffer at once through derived
 * buffers ({@code duplicate()}, {@code slice()} and their retained forms): a broadcast writes a
 * {@code retainedDuplicate()} of one buffer to many channels on different event loops. A derived
 * buffer reaches the bytes through this buffer's {@code getBytes}, {@code setBytes} and
 * {@code nioBuffer(s)}, from whatever thread uses it. Each of those therefore makes a
 * {@link ByteBuffer} of its own ({@link #viewOf(int, int)}); a {@code ByteBuffer} has a mutable
 * position and limit, and one shared by two threads sends one thread's bytes, or none, to the
 * other's channel. The one view kept per buffer ({@link #internalNioBuffer(int, int)}) serves
 * only calls that Netty's contract confines to the buffer's own thread: {@code internalNioBuffer}
 * itself, and {@code readBytes}/{@code writeBytes} on this buffer, which move its indices (a
 * derived buffer runs its own {@code readBytes}, which calls {@code getBytes} here).
 */
final class SpanHeapByteBuf extends AbstractReferenceCountedByteBuf {

    // Netty's default byte order is big-endian; the *LE methods use the little-endian layouts.
    private static final ValueLayout.OfShort SHORT_BE =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfShort SHORT_LE =
            ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt INT_BE =
            ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt INT_LE =
            ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG_BE =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfLong LONG_LE =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** Stream copies go through a heap array of at most this many bytes. */
    private static final int STREAM_CHUNK = 8192;

    private final SpanHeapByteBufAllocator alloc;
    /** The block; {@link MemorySegment#NULL} (size 0) once released. */
    private MemorySegment block;
    /**
     * A view of the whole block for {@link #internalNioBuffer(int, int)} and for
     * {@code readBytes}/{@code writeBytes} with channels, made on first use: for this buffer's own
     * thread only (see the class comment); every other path makes a view of its own.
     */
    private ByteBuffer internalView;

    SpanHeapByteBuf(SpanHeapByteBufAllocator alloc, int initialCapacity, int maxCapacity) {
        super(maxCapacity);
        if (initialCapacity < 0 || initialCapacity > maxCapacity) {
            throw new IllegalArgumentException("initialCapacity must be in [0, maxCapacity = "
                    + maxCapacity + "]: " + initialCapacity);
        }
        this.alloc = alloc;
        this.block = alloc.allocateBlock(initialCapacity);
    }

    // ---- capacity and life cycle -------------------------------------------------------

    @Override
    public int capacity() {
        return (int) block.byteSize();
    }

    @Override
    public ByteBuf capacity(int newCapacity) {
        checkNewCapacity(newCapacity); // also: accessible, and within maxCapacity()
        int oldCapacity = capacity();
        if (newCapacity == oldCapacity) {
            return this;
        }
        if (newCapacity < oldCapacity) {
            trimIndicesToCapacity(newCapacity);
        }
        MemorySegment resized = alloc.allocateBlock(newCapacity);
        MemorySegment.copy(block, 0, resized, 0, Math.min(oldCapacity, newCapacity));
        MemorySegment old = block;
        block = resized;
        internalView = null;
        alloc.freeBlock(old);
        return this;
    }

    @Override
    protected void deallocate() {
        MemorySegment old = block;
        block = MemorySegment.NULL;
        internalView = null;
        alloc.freeBlock(old);
    }

    @Override
    public ByteBufAllocator alloc() {
        return alloc;
    }

    /** {@return big-endian, Netty's byte order}  Abstract in {@code ByteBuf}, and deprecated there. */
    @Override
    @Deprecated
    public ByteOrder order() {
        return ByteOrder.BIG_ENDIAN;
    }

    @Override
    public ByteBuf unwrap() {
        return null;
    }

    @Override
    public boolean isDirect() {
        return true;
    }

    @Override
    public boolean isContiguous() {
        return true;
    }

    @Override
    public boolean hasArray() {
        return false;
    }

    @Override
    public byte[] array() {
        throw new UnsupportedOperationException("a direct buffer has no backing array");
    }

    @Override
    public int arrayOffset() {
        throw new UnsupportedOperationException("a direct buffer has no backing array");
    }

    @Override
    public boolean hasMemoryAddress() {
        return true;
    }

    @Override
    public long memoryAddress() {
        ensureAccessible();
        return block.address();
    }

    // ---- primitives (AbstractByteBuf has checked the index) ------------------------------

    @Override
    protected byte _getByte(int index) {
        return block.get(ValueLayout.JAVA_BYTE, index);
    }

    @Override
    protected short _getShort(int index) {
        return block.get(SHORT_BE, index);
    }

    @Override
    protected short _getShortLE(int index) {
        return block.get(SHORT_LE, index);
    }

    @Override
    protected int _getUnsignedMedium(int index) {
        return (_getByte(index) & 0xff) << 16 | (_getByte(index + 1) & 0xff) << 8 | _getByte(index + 2) & 0xff;
    }

    @Override
    protected int _getUnsignedMediumLE(int index) {
        return _getByte(index) & 0xff | (_getByte(index + 1) & 0xff) << 8 | (_getByte(index + 2) & 0xff) << 16;
    }

    @Override
    protected int _getInt(int index) {
        return block.get(INT_BE, index);
    }

    @Override
    protected int _getIntLE(int index) {
        return block.get(INT_LE, index);
    }

    @Override
    protected long _getLong(int index) {
        return block.get(LONG_BE, index);
    }

    @Override
    protected long _getLongLE(int index) {
        return block.get(LONG_LE, index);
    }

    @Override
    protected void _setByte(int index, int value) {
        block.set(ValueLayout.JAVA_BYTE, index, (byte) value);
    }

    @Override
    protected void _setShort(int index, int value) {
        block.set(SHORT_BE, index, (short) value);
    }

    @Override
    protected void _setShortLE(int index, int value) {
        block.set(SHORT_LE, index, (short) value);
    }

    @Override
    protected void _setMedium(int index, int value) {
        _setByte(index, value >>> 16);
        _setByte(index + 1, value >>> 8);
        _setByte(index + 2, value);
    }

    @Override
    protected void _setMediumLE(int index, int value) {
        _setByte(index, value);
        _setByte(index + 1, value >>> 8);
        _setByte(index + 2, value >>> 16);
    }

    @Override
    protected void _setInt(int index, int value) {
        block.set(INT_BE, index, value);
    }

    @Override
    protected void _setIntLE(int index, int value) {
        block.set(INT_LE, index, value);
    }

    @Override
    protected void _setLong(int index, long value) {
        block.set(LONG_BE, index, value);
    }

    @Override
    protected void _setLongLE(int index, long value) {
        block.set(LONG_LE, index, value);
    }

    // ---- bulk reads -----------------------------------------------------------------

    @Override
    public ByteBuf getBytes(int index, ByteBuf dst, int dstIndex, int length) {
        checkDstIndex(index, length, dstIndex, dst.capacity());
        if (dst.hasArray()) {
            getBytes(index, dst.array(), dst.arrayOffset() + dstIndex, length);
        } else if (dst.nioBufferCount() > 0) {
            for (ByteBuffer part : dst.nioBuffers(dstIndex, length)) {
                int n = part.remaining();
                getBytes(index, part);
                index += n;
            }
        } else {
            dst.setBytes(dstIndex, this, index, length);
        }
        return this;
    }

    @Override
    public ByteBuf getBytes(int index, byte[] dst, int dstIndex, int length) {
        checkDstIndex(index, length, dstIndex, dst.length);
        MemorySegment.copy(block, ValueLayout.JAVA_BYTE, index, dst, dstIndex, length);
        return this;
    }

    @Override
    public ByteBuf getBytes(int index, ByteBuffer dst) {
        int length = dst.remaining();
        checkIndex(index, length);
        if (dst.isReadOnly()) {
            throw new ReadOnlyBufferException();
        }
        MemorySegment.copy(block, index, MemorySegment.ofBuffer(dst), 0, length);
        dst.position(dst.position() + length);
        return this;
    }

    @Override
    public ByteBuf getBytes(int index, OutputStream out, int length) throws IOException {
        checkIndex(index, length);
        byte[] chunk = new byte[Math.min(length, STREAM_CHUNK)];
        for (int done = 0; done < length; ) {
            int n = Math.min(chunk.length, length - done);
            MemorySegment.copy(block, ValueLayout.JAVA_BYTE, index + done, chunk, 0, n);
            out.write(chunk, 0, n);
            done += n;
        }
        return this;
    }

    // getBytes and setBytes with a channel are what derived buffers call, from any thread:
    // each call gets a ByteBuffer of its own (viewOf). readBytes and writeBytes on this buffer
    // move its own indices, so only its own thread calls them; they use the kept view.

    @Override
    public int getBytes(int index, GatheringByteChannel out, int length) throws IOException {
        checkIndex(index, length);
        return length == 0 ? 0 : out.write(viewOf(index, length));
    }

    @Override
    public int getBytes(int index, FileChannel out, long position, int length) throws IOException {
        checkIndex(index, length);
        return length == 0 ? 0 : out.write(viewOf(index, length), position);
    }

    @Override
    public int readBytes(GatheringByteChannel out, int length) throws IOException {
        checkReadableBytes(length);
        // Safe with the kept view: readBytes moves this buffer's reader index, so by Netty's
        // contract only the buffer's own thread calls it (a derived buffer's readBytes calls
        // getBytes above instead).
        int n = length == 0 ? 0 : out.write(internalNioBuffer(readerIndex(), length));
        readerIndex(readerIndex() + n);
        return n;
    }

    @Override
    public int readBytes(FileChannel out, long position, int length) throws IOException {
        checkReadableBytes(length);
        // Safe with the kept view: as readBytes(GatheringByteChannel, int).
        int n = length == 0 ? 0 : out.write(internalNioBuffer(readerIndex(), length), position);
        readerIndex(readerIndex() + n);
        return n;
    }

    @Override
    public ByteBuf copy(int index, int length) {
        checkIndex(index, length);
        ByteBuf copy = alloc.directBuffer(length, maxCapacity());
        try {
            copy.writeBytes(this, index, length);
        } catch (RuntimeException | Error e) {
            copy.release();
            throw e;
        }
        return copy;
    }

    // ---- bulk writes ----------------------------------------------------------------

    @Override
    public ByteBuf setBytes(int index, ByteBuf src, int srcIndex, int length) {
        checkSrcIndex(index, length, srcIndex, src.capacity());
        if (src.hasArray()) {
            setBytes(index, src.array(), src.arrayOffset() + srcIndex, length);
        } else if (src.nioBufferCount() > 0) {
            for (ByteBuffer part : src.nioBuffers(srcIndex, length)) {
                int n = part.remaining();
                setBytes(index, part);
                index += n;
            }
        } else {
            src.getBytes(srcIndex, this, index, length);
        }
        return this;
    }

    @Override
    public ByteBuf setBytes(int index, byte[] src, int srcIndex, int length) {
        checkSrcIndex(index, length, srcIndex, src.length);
        MemorySegment.copy(src, srcIndex, block, ValueLayout.JAVA_BYTE, index, length);
        return this;
    }

    @Override
    public ByteBuf setBytes(int index, ByteBuffer src) {
        int length = src.remaining();
        checkIndex(index, length);
        // copy() behaves as if through a temporary buffer: src may be a view of this block.
        MemorySegment.copy(MemorySegment.ofBuffer(src), 0, block, index, length);
        src.position(src.position() + length);
        return this;
    }

    @Override
    public int setBytes(int index, InputStream in, int length) throws IOException {
        checkIndex(index, length);
        byte[] chunk = new byte[length];
        int n = in.read(chunk, 0, length);
        if (n > 0) {
            MemorySegment.copy(chunk, 0, block, ValueLayout.JAVA_BYTE, index, n);
        }
        return n;
    }

    @Override
    public int setBytes(int index, ScatteringByteChannel in, int length) throws IOException {
        checkIndex(index, length);
        return readFrom(in, viewOf(index, length));
    }

    @Override
    public int setBytes(int index, FileChannel in, long position, int length) throws IOException {
        checkIndex(index, length);
        return readFrom(in, viewOf(index, length), position);
    }

    @Override
    public int writeBytes(ScatteringByteChannel in, int length) throws IOException {
        ensureWritable(length);
        // Safe with the kept view: writeBytes moves this buffer's writer index, so by Netty's
        // contract only the buffer's own thread calls it (a derived buffer's writeBytes calls
        // setBytes above instead). ensureWritable may have replaced the block, and with it the view.
        int n = readFrom(in, internalNioBuffer(writerIndex(), length));
        if (n > 0) {
            writerIndex(writerIndex() + n);
        }
        return n;
    }

    @Override
    public int writeBytes(FileChannel in, long position, int length) throws IOException {
        ensureWritable(length);
        // Safe with the kept view: as writeBytes(ScatteringByteChannel, int).
        int n = readFrom(in, internalNioBuffer(writerIndex(), length), position);
        if (n > 0) {
            writerIndex(writerIndex() + n);
        }
        return n;
    }

    /** {@code in.read(dst)}, or -1 if the channel is closed (ByteBuf's contract). */
    private static int readFrom(ScatteringByteChannel in, ByteBuffer dst) throws IOException {
        try {
            return in.read(dst);
        } catch (ClosedChannelException e) {
            return -1;
        }
    }

    /** {@code in.read(dst, position)}, or -1 if the channel is closed (ByteBuf's contract). */
    private static int readFrom(FileChannel in, ByteBuffer dst, long position) throws IOException {
        try {
            return in.read(dst, position);
        } catch (ClosedChannelException e) {
            return -1;
        }
    }

    // ---- NIO views --------------------------------------------------------------------

    @Override
    public int nioBufferCount() {
        return 1;
    }

    /** A new buffer of its own per call: derived buffers call this from any thread. */
    @Override
    public ByteBuffer nioBuffer(int index, int length) {
        checkIndex(index, length);
        return block.asSlice(index, length).asByteBuffer();
    }

    /** New buffers of their own per call, as {@link #nioBuffer(int, int)}. */
    @Override
    public ByteBuffer[] nioBuffers(int index, int length) {
        return new ByteBuffer[] {nioBuffer(index, length)};
    }

    /**
     * The kept view of the block, its position at {@code index} and its limit at
     * {@code index + length}. Netty's contract: "internal use only", by the buffer's own thread
     * (its transports call it on the message they write, and a derived buffer answers it with
     * a new {@code nioBuffer}, never with this view). Called from several threads on one buffer,
     * the callers would move each other's position and limit.
     */
    @Override
    public ByteBuffer internalNioBuffer(int index, int length) {
        checkIndex(index, length);
        ByteBuffer view = internalView;
        if (view == null) {
            internalView = view = block.asByteBuffer();
        }
        view.clear().position(index).limit(index + length);
        return view;
    }

    /**
     * A new {@link ByteBuffer} over the block, position {@code index}, limit
     * {@code index + length}: for the calls a derived buffer may make from any thread. Unlike
     * {@link #nioBuffer(int, int)} its position is {@code index}, as the channel calls that use
     * it expect; no segment slice is made.
     */
    private ByteBuffer viewOf(int index, int length) {
        return block.asByteBuffer().limit(index + length).position(index);
    }
}
