package org.spanheap.internal;

import org.spanheap.SpanHeapOutOfMemoryError;

/**
 * The request check and the exceptions of a span heap, shared by both engines
 * ({@link SpanHeapImpl}, {@link MallocEngine}) so that a misuse gets the same type and
 * message whichever engine serves the heap (docs/misuse.md lists them; MisuseCatalogueTest
 * checks them).
 */
final class HeapErrors {

    /** Largest request size or size + alignment considered at all; x86-64 has 2^47 bytes of user space. */
    static final long MAX_REQUEST = 1L << 46;

    private HeapErrors() {
    }

    /** {@return whether {@code size} and {@code alignment} make a request that can exist} */
    static boolean validRequest(long size, long alignment) {
        return size >= 0 && size <= MAX_REQUEST && ((alignment - 1) & alignment) == 0 && alignment > 0
                && alignment <= MAX_REQUEST && size + alignment <= MAX_REQUEST;
    }

    /**
     * Checks a request.
     *
     * @throws IllegalArgumentException if {@code size < 0} or {@code alignment} is not a power of two
     * @throws SpanHeapOutOfMemoryError if size or size + alignment exceeds {@link #MAX_REQUEST}
     */
    static void checkRequest(long size, long alignment) {
        if (!validRequest(size, alignment)) {
            throw raise(badRequest(size, alignment));
        }
    }

    /** {@return the exception for a request that {@link #validRequest} refused} */
    static Throwable badRequest(long size, long alignment) {
        if (size < 0) {
            return new IllegalArgumentException("size must be >= 0: " + size);
        }
        if (alignment <= 0 || (alignment & (alignment - 1)) != 0) {
            return new IllegalArgumentException("alignment must be a power of two: " + alignment);
        }
        return new SpanHeapOutOfMemoryError("cannot allocate " + size + " bytes aligned to "
                + alignment + ": larger than any mapping on x86-64 (2^46 bytes)", false);
    }

    /**
     * Throws {@code t} if it is an {@link Error}; otherwise returns it for the caller to throw.
     * Lets one method build either an {@link IllegalArgumentException} or a
     * {@link SpanHeapOutOfMemoryError}.
     */
    static RuntimeException raise(Throwable t) {
        if (t instanceof Error e) {
            throw e;
        }
        return (RuntimeException) t;
    }

    static IllegalArgumentException notOwned(long address, String why) {
        return new IllegalArgumentException("segment was not allocated by this heap: 0x"
                + Long.toHexString(address) + why);
    }

    /** What {@link #notOwned} appends for an address inside a block. */
    static final String INTERIOR = " (it points inside a block)";

    static IllegalStateException doubleFree(long address) {
        return new IllegalStateException("double free: block 0x" + Long.toHexString(address)
                + " is already free");
    }

    static IllegalStateException closed() {
        return new IllegalStateException("heap is closed");
    }

    static SpanHeapOutOfMemoryError byteLimitExceeded(long size) {
        return new SpanHeapOutOfMemoryError("cannot allocate " + size
                + " bytes: the heap's byte limit would be exceeded", true);
    }
}
