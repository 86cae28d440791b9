package org.spanheap.micrometer;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;

/** For the binders' tests: a garbage collection that has surely run. */
final class GarbageCollections {

    private GarbageCollections() {
    }

    /** Collects garbage until a fresh, unreferenced object is gone: a binder bound inline would be too, if nothing held it. */
    static void collect() {
        WeakReference<Object> canary = new WeakReference<>(new Object());
        for (int i = 0; i < 50 && canary.get() != null; i++) {
            System.gc();
            try {
                Thread.sleep(10);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        assertTrue(canary.get() == null, "no garbage collection happened");
    }
}
