package org.spanheap.internal.compact;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * A page's thread-free list: the frees of objects in an owned page by threads
 * other than its owner. A lock-free stack of killed handle indices linked
 * through the {@link HandleTable}, one word per page (its {@code Page#remoteFree}):
 * <ul>
 * <li>{@link #CLOSED} while no thread owns the page: a free finds it closed and
 *     goes to the heap's limbo instead;</li>
 * <li>else the top index ({@link HandleTable#NO_INDEX} when empty).</li>
 * </ul>
 * A freeing thread pushes (CAS); the owner takes the chain whole
 * ({@link #takeAll}, getAndSet to empty) when its page has no free slot; the
 * owner giving the page up closes it ({@link #close}, getAndSet to CLOSED,
 * under the class lock) and takes what it held. No one pops a single entry,
 * so there is no ABA.
 *
 * <h2>Memory orders</h2>
 * A push writes its entry's link plainly, then CASes the word (volatile): the
 * link happens-before any getAndSet that reads the word at or after the push.
 * The getAndSet is volatile, so the taker sees every link of the chain it
 * took. A push that reads CLOSED (or loses its CAS to the close) never lands
 * on the page, and the caller frees through the limbo: whether a free went to
 * the page or to the limbo is decided by the one word, so the owner giving up
 * the page collects exactly the entries that landed on it. {@link #open} is a
 * volatile store made under the class lock by the adopting thread.
 *
 * <p>Public, with the members its jcstress test needs (the stress module's
 * {@code CompactRemoteFreeVsCollectTest}); the module does not export this package.
 */
public final class RemoteFrees {

    /** The word of a page no thread owns. */
    public static final int CLOSED = -1;

    private static final VarHandle WORD;

    static {
        try {
            WORD = MethodHandles.lookup().findVarHandle(RemoteFrees.class, "word", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** CLOSED, or the top index of the list (NO_INDEX: empty). Accessed through {@link #WORD}. */
    @SuppressWarnings("unused")
    private volatile int word = CLOSED;

    /**
     * Pushes the killed {@code index} on the list; {@return false if the page is not owned
     * (closed list): the caller frees through the limbo}.
     */
    public boolean push(HandleTable table, int index) {
        for (;;) {
            int head = (int) WORD.getVolatile(this);
            if (head == CLOSED) {
                return false;
            }
            table.setLink(index, head); // plain: published by the CAS below
            if (WORD.compareAndSet(this, head, index)) {
                return true;
            }
        }
    }

    /** The owner takes the whole list, leaving it empty and open; {@return its top, or NO_INDEX}. */
    public int takeAll() {
        if ((int) WORD.getOpaque(this) == HandleTable.NO_INDEX) {
            return HandleTable.NO_INDEX; // nothing to take: no write, so no cache-line transfer
        }
        int head = (int) WORD.getAndSet(this, HandleTable.NO_INDEX);
        return head == CLOSED ? HandleTable.NO_INDEX : head; // never closed while owned; defensive
    }

    /** Closes the list of a page given up (caller holds the class lock); {@return what it held}. */
    public int close() {
        int head = (int) WORD.getAndSet(this, CLOSED);
        return head == CLOSED ? HandleTable.NO_INDEX : head;
    }

    /** Opens the list of a page being adopted (caller holds the class lock). */
    public void open() {
        WORD.setVolatile(this, HandleTable.NO_INDEX);
    }
}
