package org.spanheap.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The scopes of a heap's blocks over {@link HeapEngine#OWN_SCOPE_ABOVE} bytes: such a block
 * is mapped for itself and unmapped by its free (by the native core, or by malloc), so its
 * segment gets a shared arena of its own, closed before the unmap; a use after free then
 * throws {@link IllegalStateException} instead of faulting the JVM. Both engines keep one
 * of these.
 *
 * @implNote One shared arena per block: creating it costs about a microsecond and closing
 * it a handshake (tens of microseconds), small beside mapping, touching and unmapping
 * 32 MiB. Thread-safe: a {@link ConcurrentHashMap} by address, and whoever removes a
 * block's entry closes its scope.
 */
final class OwnScopes {

    private final MemorySegment.Scope heapScope;
    private final ConcurrentHashMap<Long, Arena> byAddress = new ConcurrentHashMap<>();

    /**
     * Scopes for the large blocks of one heap.
     *
     * @param heapScope the heap's lifetime scope: once it is dead, no new scope is handed out
     */
    OwnScopes(MemorySegment.Scope heapScope) {
        this.heapScope = heapScope;
    }

    /**
     * {@return a segment of {@code size} bytes at {@code address} with a scope of its own}
     *
     * @throws IllegalStateException "heap is closed" if the heap closed meanwhile
     */
    MemorySegment segment(long address, long size) {
        Arena own = Arena.ofShared();
        MemorySegment s = MemorySegment.ofAddress(address).reinterpret(size, own, null);
        byAddress.put(address, own);
        if (!heapScope.isAlive() && byAddress.remove(address, own)) {
            SharedArenas.close(own);               // raced with close(): the heap is gone, and so is the block
            throw HeapErrors.closed();
        }
        return s;
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
        Arena own = scopeOf(segment);
        if (own == null) {
            if (!heapScope.isAlive()) {
                throw HeapErrors.closed();
            }
            if (!segment.scope().isAlive() && segment.isNative() && segment.byteSize() > HeapEngine.OWN_SCOPE_ABOVE) {
                throw HeapErrors.doubleFree(segment.address()); // its own scope was closed by the first free
            }
            throw HeapErrors.notOwned(segment.address(), segment.isNative() ? "" : " (a heap segment)");
        }
        if (!byAddress.remove(segment.address(), own)) {
            throw HeapErrors.doubleFree(segment.address());     // another thread freed it just now
        }
        SharedArenas.close(own);
    }

    /** Closes every scope: the heap is closing. */
    void closeAll() {
        for (Arena own : byAddress.values()) {
            SharedArenas.close(own);
        }
        byAddress.clear();
    }
}
