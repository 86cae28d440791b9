package org.spanheap.internal;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/**
 * JFR event: a heap gave memory back to the OS, as far as Java sees it. A span
 * heap's {@code trim()}; a compacting heap's {@code trim()} and the rounds that
 * unmap or {@code madvise} emptied pages and reclaimed large objects' mappings.
 * The native span pool also returns free spans with {@code madvise} inside
 * {@code sh_free} without telling Java; those show only as
 * {@code HeapStats.madviseCalls} and in the next trim's figure. Public so that
 * both heaps' packages can emit it; not API.
 */
@Name("org.spanheap.MemoryRelease")
@Label("Memory Release")
@Category({"spanheap", "Memory"})
@Description("Memory a heap gave back to the OS (trim, or pages emptied by a compacting heap's round)")
@StackTrace(false)
public final class MemoryReleaseEvent extends Event {

    /** {@link #set cause}: a {@code trim()} call. */
    public static final String TRIM = "trim";
    /** {@link #set cause}: a compacting heap's round emptied pages or reclaimed large objects. */
    public static final String ROUND = "round";

    @Label("Heap")
    @Description("The heap's name: the MXBean name it was registered with, or a generated one")
    String heap;

    @Label("Cause")
    @Description("trim or round")
    String cause;

    @Label("Released")
    @DataAmount
    long releasedBytes;

    @Label("Committed After")
    @DataAmount
    @Description("The heap's committed bytes after the release")
    long committedBytes;

    /** Creates an event; {@code begin()} it before the release. */
    public MemoryReleaseEvent() {
    }

    /**
     * Fills the fields; called only when {@code shouldCommit()} is true.
     *
     * @param heap the heap's name
     * @param cause {@link #TRIM} or {@link #ROUND}
     * @param releasedBytes the bytes given back
     * @param committedBytes the heap's committed bytes afterwards
     */
    public void set(String heap, String cause, long releasedBytes, long committedBytes) {
        this.heap = heap;
        this.cause = cause;
        this.releasedBytes = releasedBytes;
        this.committedBytes = committedBytes;
    }
}
