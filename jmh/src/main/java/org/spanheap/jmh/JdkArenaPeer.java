package org.spanheap.jmh;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The JDK's own way to get and free one native block: a fresh {@code Arena.ofConfined()} or
 * {@code Arena.ofShared()} per block, {@code close()} to free it (the block is zeroed, as
 * {@code Arena.allocate} always does). A shared arena's close is a thread-local handshake with all
 * threads, which is what makes it expensive; a confined arena's block can only be freed by the
 * thread that allocated it.
 */
final class JdkArenaPeer implements Peer {

    /** A block and the arena that owns it; closing the arena frees the block. */
    record ArenaBlock(Arena arena, MemorySegment segment) {
    }

    private final boolean shared;

    JdkArenaPeer(boolean shared) {
        this.shared = shared;
    }

    @Override
    public Object allocate(long size) {
        Arena arena = shared ? Arena.ofShared() : Arena.ofConfined();
        return new ArenaBlock(arena, arena.allocate(size));
    }

    @Override
    public byte touch(Object block, byte value) {
        MemorySegment s = ((ArenaBlock) block).segment();
        s.set(ValueLayout.JAVA_BYTE, 0, value);
        return s.get(ValueLayout.JAVA_BYTE, 0);
    }

    @Override
    public void free(Object block) {
        ((ArenaBlock) block).arena().close();
    }

    @Override
    public MemorySegment segment(Object block) {
        return ((ArenaBlock) block).segment();
    }

    @Override
    public boolean freesFromAnyThread() {
        return shared;
    }
}
