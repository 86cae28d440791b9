package org.spanheap.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The scopes of a heap's blocks that may be mapped for themselves: the memory of such a block
 * can be unmapped by its free (the native core maps every large object alone and unmaps it
 * unless it keeps the mapping for reuse, or it reuses a kept one and unmaps its tail; malloc
 * maps blocks over its mmap threshold), so its segment gets a shared arena of its own, closed
 * before the free; a use after free then throws {@link IllegalStateException} instead of
 * faulting the JVM. Both engines keep one of these, each with its own {@link MappedAlone} rule.
 *
 * @implNote One shared arena per block: creating it costs about a microsecond and closing
 * it a handshake (tens of microseconds, more with many threads), beside mapping, touching and
 * unmapping the block (a 1 MiB block takes about 250 page faults when first written).
 * Thread-safe: a {@link ConcurrentHashMap} by address, and whoever removes a block's entry
 * closes its scope.
 */
final class OwnScopes {

    /** Which blocks of an engine may be mapped for themselves. */
    @FunctionalInterface
    interface MappedAlone {
        boolean test(long address, long size);
    }

    private final MemorySegment.Scope heapScope;
    private final MappedAlone mappedAlone;
    private final ConcurrentHashMap<Long, Arena> byAddress = new ConcurrentHashMap<>();

    /**
     * Scopes for the large blocks of one heap.
     *
     * @param heapScope the heap's lifetime scope: once it is dead, no new scope is handed out
     * @param mappedAlone the engine's rule for the blocks that get a scope of their own
     */
    OwnScopes(MemorySegment.Scope heapScope, MappedAlone mappedAlone) {
        this.heapScope = heapScope;
        this.mappedAlone = mappedAlone;
    }

    /**
     * {@return a segment of {@code size} bytes at {@code address} with a scope of its own}
     *
     * @throws IllegalStateException "heap is closed" if the heap closed meanwhile
     */
    MemorySegment segment(long address, long size) {
        Arena own = byAddress.get(address);     // a kept block handed out again: adopt() put its scope
        if (own == null) {
            own = Arena.ofShared();
            byAddress.put(address, own);
        }
        MemorySegment s = MemorySegment.ofAddress(address).reinterpret(size, own, null);
        if (!heapScope.isAlive()) {
            // Raced with close(): the heap is gone, and so is the block. Close the scope even if
            // closeAll() cleared the map between our put and this check (close is idempotent).
            byAddress.remove(address, own);
            SharedArenas.close(own);
            throw HeapErrors.closed();
        }
        return s;
    }

    /**
     * Makes a block that is handed out again (see {@link KeptLargeBlocks}) live with its
     * still open scope {@code own}; the next {@link #segment} of {@code address} uses it.
     */
    void adopt(long address, Arena own) {
        byAddress.put(address, own);
    }

    /** {@return whether {@code segment} starts a live block of this heap with a scope of its own} */
    boolean owns(MemorySegment segment) {
        return scopeOf(segment) != null;
    }

    private Arena scopeOf(MemorySegment segment) {
        Arena own = byAddress.get(segment.address());
        return own != null && own.scope() == segment.scope() ? own : null;
    }

    /**
     * Closes the scope of the block that {@code segment}, a segment not of the heap's
     * lifetime scope, starts; the caller frees the block next.
     *
     * @throws IllegalStateException if the block's scope was closed by an earlier free
     *         ("double free"), or the heap is closed
     * @throws IllegalArgumentException if {@code segment} is not such a block of this heap
     */
    void closeForFree(MemorySegment segment) {
        SharedArenas.close(release(segment));
    }

    /**
     * Takes the block that {@code segment}, a segment not of the heap's lifetime scope,
     * starts out of the live ones and returns its scope, still open: the caller closes it,
     * or keeps the block to hand out again with it.
     *
     * @throws IllegalStateException if the block's scope was closed by an earlier free
     *         ("double free"), or the heap is closed
     * @throws IllegalArgumentException if {@code segment} is not such a block of this heap
     */
    Arena release(MemorySegment segment) {
        Arena own = scopeOf(segment);
        if (own == null) {
            if (!heapScope.isAlive()) {
                throw HeapErrors.closed();
            }
            if (!segment.scope().isAlive() && segment.isNative()
                    && mappedAlone.test(segment.address(), segment.byteSize())) {
                throw HeapErrors.doubleFree(segment.address()); // its own scope was closed by the first free
            }
            throw HeapErrors.notOwned(segment.address(), segment.isNative() ? "" : " (a heap segment)");
        }
        if (!byAddress.remove(segment.address(), own)) {
            throw HeapErrors.doubleFree(segment.address());     // another thread freed it just now
        }
        return own;
    }

    /** Closes every scope: the heap is closing. */
    void closeAll() {
        for (Arena own : byAddress.values()) {
            SharedArenas.close(own);
        }
        byAddress.clear();
    }
}
