package org.spanheap;

import java.io.Serial;

/**
 * Thrown when a {@link SpanHeap} cannot satisfy an allocation: its configured byte limit
 * would be exceeded, its arena reservation is exhausted, the operating system refused
 * memory, or the size cannot exist on this platform.
 *
 * <p>The heap stays usable: memory freed afterwards can be allocated again.
 */
public class SpanHeapOutOfMemoryError extends OutOfMemoryError {
    @Serial
    private static final long serialVersionUID = 1L;

    /** Whether the configured byte limit (not the arena or the OS) refused the request. */
    private final boolean byteLimit;

    /**
     * Creates an error with the given detail message.
     *
     * @param message the detail message
     * @param byteLimit whether the heap's configured byte limit refused the request
     */
    public SpanHeapOutOfMemoryError(String message, boolean byteLimit) {
        super(message);
        this.byteLimit = byteLimit;
    }

    /** {@return whether the heap's configured byte limit refused the request} */
    public boolean isByteLimit() {
        return byteLimit;
    }
}
