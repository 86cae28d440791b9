package org.spanheap.internal;

import java.lang.foreign.Arena;

/**
 * Closing a shared arena whose segments downcalls may hold. {@link Arena#close()} of a
 * shared arena performs a handshake with every thread and returns when no access through
 * its segments is in progress; it fails instead while a downcall has acquired the arena's
 * scope (passing one of its segments). Those downcalls are short and none may start on a
 * closing heap, so the close is retried.
 */
public final class SharedArenas {

    private SharedArenas() {
    }

    /** Closes {@code arena}, retrying while a downcall holds it; returns at once if it is closed. */
    public static void close(Arena arena) {
        for (;;) {
            try {
                arena.close();
                return;
            } catch (IllegalStateException busy) {
                if (!arena.scope().isAlive()) {
                    return;
                }
                Thread.onSpinWait();
            }
        }
    }
}
