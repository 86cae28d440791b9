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
        closeWithin(arena, Long.MAX_VALUE);
    }

    /**
     * Closes {@code arena} as {@link #close(Arena)} does, but gives up after {@code nanos}:
     * a heap's final close must not spin for ever. A downcall's hold is released by the
     * JDK's binding code after the call; a thread that dies of {@link StackOverflowError}
     * right there (the release is a method call like any other) leaves the scope held for
     * good, and no close can succeed (found by StackOverflowInCacheTest).
     *
     * @throws IllegalStateException if the arena is still held after {@code nanos}
     */
    public static void closeWithin(Arena arena, long nanos) {
        long start = System.nanoTime();
        for (int tries = 0;; tries++) {
            try {
                arena.close();
                return;
            } catch (IllegalStateException busy) {
                if (!arena.scope().isAlive()) {
                    return;
                }
                if (System.nanoTime() - start > nanos) {
                    throw new IllegalStateException("cannot close: a native call still holds this heap after "
                            + java.util.concurrent.TimeUnit.NANOSECONDS.toSeconds(nanos) + " s (a thread that died of"
                            + " StackOverflowError inside one of the heap's native calls leaves it held for good);"
                            + " its memory stays until the process ends", busy);
                }
                if (tries < 1000) {
                    Thread.onSpinWait();
                } else {
                    java.util.concurrent.locks.LockSupport.parkNanos(100_000); // a long hold: stop burning the core
                }
            }
        }
    }
}
