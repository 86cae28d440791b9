package org.spanheap;

/**
 * Thrown when a handle names no live object of a {@link CompactingHeap}: it
 * was freed, it belongs to an earlier incarnation of its table entry (stale),
 * or it was never handed out (forged). The access it guarded touched no
 * memory.
 */
public final class StaleHandleException extends IllegalArgumentException {

    private static final long serialVersionUID = 1L;

    private final long handle;

    public StaleHandleException(long handle) {
        super("handle names no live object (freed, stale or forged): 0x" + Long.toHexString(handle));
        this.handle = handle;
    }

    /** The handle that was rejected. */
    public long handle() {
        return handle;
    }
}
