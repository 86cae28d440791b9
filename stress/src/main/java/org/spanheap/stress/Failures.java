package org.spanheap.stress;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * What went wrong in a stress run: a count and the first message (the one a failed run
 * exits with; later ones are often consequences). Workers stop once any failure is seen.
 */
final class Failures {

    private final AtomicInteger count = new AtomicInteger();
    private final AtomicReference<String> first = new AtomicReference<>();

    void fail(String message) {
        count.incrementAndGet();
        first.compareAndSet(null, message);
        System.out.println("FAILURE: " + message);
    }

    boolean any() {
        return count.get() != 0;
    }

    /** Prints PASSED or FAILED with the first failure and returns the exit code. */
    int verdict() {
        if (any()) {
            System.out.println("FAILED: " + count.get() + " failure(s); first: " + first.get());
            return 1;
        }
        System.out.println("PASSED");
        return 0;
    }
}
