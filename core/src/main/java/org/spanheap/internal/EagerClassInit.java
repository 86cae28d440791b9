package org.spanheap.internal;

/**
 * Initializes classes that only slow paths use, when an engine is loaded rather than at their
 * first use. A class whose initializer fails, for example with a {@link StackOverflowError} of
 * a caller deep in its stack, stays unusable for the life of the JVM: every later use throws
 * {@link NoClassDefFoundError}. A dead thread's cache drain, run by whichever thread allocates
 * next, failed so for good in {@code StackOverflowInCacheTest}.
 */
public final class EagerClassInit {
    private EagerClassInit() {
    }

    /** Initializes each class now (a no-op for one already initialized). */
    public static void initialize(Class<?>... classes) {
        for (Class<?> c : classes) {
            try {
                Class.forName(c.getName(), true, c.getClassLoader());
            } catch (ClassNotFoundException e) {
                throw new ExceptionInInitializerError(e);
            }
        }
    }
}
