package org.spanheap.internal.compact;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.spanheap.internal.SharedArenas;

/**
 * One access epoch: a shared arena and a segment over the whole address
 * space bound to it. Every segment that a resolve hands out is a slice of
 * {@link #universe}, so it carries this epoch's scope; closing the arena
 * invalidates all of them at once.
 *
 * <p>Why this is safe: {@link Arena#close()} of a shared arena returns only
 * after a handshake with every thread has established that none is inside an
 * access to memory of that arena; from then on every access through one of its
 * segments throws {@link IllegalStateException}. So after {@link #close()}
 * the blocks that a segment of the old epoch could reach are no longer read
 * or written by anyone, and the heap may copy, reuse or unmap them.
 */
final class Epoch {

    final long number;
    private final Arena arena;
    final MemorySegment universe;

    Epoch(long number) {
        this.number = number;
        this.arena = Arena.ofShared();
        // restricted method (needs --enable-native-access): one per epoch, not one per resolve
        this.universe = MemorySegment.NULL.reinterpret(Long.MAX_VALUE, arena, null);
    }

    /** Closes the epoch; returns when no access through its segments is in progress. Idempotent. */
    void close() {
        SharedArenas.close(arena); // handshake with every thread; retried while a memset of a fill holds it
    }
}
