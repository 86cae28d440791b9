package org.spanheap;

/**
 * Thrown when a handle names no live object of a {@link CompactingHeap}: it
 * was freed, it belongs to an earlier incarnation of its table entry (stale),
 * or it was never handed out (forged). The access it guarded touched no
 * memory.
 */
public final class StaleHandleException extends IllegalArgumentException {

    private static final long serialVersionUID = 1L;

    /** The rejected handle, as the caller passed it. */
    private final long handle;

    /**
     * Creates an exception for a rejected handle; the message shows the handle in hex.
     *
     * @param handle the handle that named no live object
     */
    public StaleHandleException(long handle) {
        super("handle names no live object (freed, stale or forged): 0x" + Long.toHexString(handle));
        this.handle = handle;
    }

    /** {@return the handle that was rejected} */
    public long handle() {
        return handle;
    }
}
