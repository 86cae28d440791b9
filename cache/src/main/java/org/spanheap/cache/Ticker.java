package org.spanheap.cache;

/**
 * A source of nanosecond time for expiry. Tests pass a fake one to move time by hand.
 */
@FunctionalInterface
public interface Ticker {
    /** {@return the current time in nanoseconds, from an arbitrary origin} */
    long read();

    /** {@return the system's ticker, {@link System#nanoTime()}} */
    static Ticker system() {
        return System::nanoTime;
    }
}
