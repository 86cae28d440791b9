package org.spanheap.jmh;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * {@code ByteBuffer.allocateDirect}: zeroed native memory, freed only when the GC finds the buffer
 * unreachable and its cleaner runs. "Free" is dropping the reference, so this peer's cost shows up
 * as allocation, GC work and {@code Bits.reserveMemory} throttling (which calls {@code System.gc()}
 * when {@code -XX:MaxDirectMemorySize} is reached).
 */
final class DirectByteBufferPeer implements Peer {

    @Override
    public Object allocate(long size) {
        return ByteBuffer.allocateDirect(Math.toIntExact(size));
    }

    @Override
    public byte touch(Object block, byte value) {
        ByteBuffer b = (ByteBuffer) block;
        b.put(0, value);
        return b.get(0);
    }

    @Override
    public void free(Object block) {
        // Nothing to call: the cleaner frees the memory after the buffer becomes unreachable.
    }

    @Override
    public MemorySegment segment(Object block) {
        return MemorySegment.ofBuffer((ByteBuffer) block);
    }
}
