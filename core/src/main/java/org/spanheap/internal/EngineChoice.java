package org.spanheap.internal;

import org.spanheap.Engine;

import java.util.Locale;
import java.util.function.Supplier;

/**
 * Which engine serves new span heaps: the system property {@value #PROPERTY}, or the
 * automatic choice. Read when the first heap is built; the choice then holds for the
 * class loader's lifetime.
 *
 * <ul>
 * <li>{@code native}: {@link SpanHeapImpl}; building a heap throws
 *     {@link UnsatisfiedLinkError} if the native library cannot be loaded.</li>
 * <li>{@code malloc}: {@link MallocEngine}, without trying the library.</li>
 * <li>absent, empty or {@code auto}: the native engine if {@link NativeLibrary#lookup()}
 *     loads the library, else the malloc engine, and one {@link System.Logger.Level#WARNING}
 *     on the logger {@value #LOGGER_NAME} that says why and how to choose.</li>
 * </ul>
 */
public final class EngineChoice {

    /** The system property that chooses the engine. */
    public static final String PROPERTY = "spanheap.engine";
    /** The {@link System.Logger} that reports an automatic fallback. */
    public static final String LOGGER_NAME = "org.spanheap";

    /** The choice once made; written under the class lock, read without it. */
    private static volatile Engine chosen;

    private EngineChoice() {
    }

    /**
     * {@return the engine for new heaps} The first successful call decides.
     *
     * @throws IllegalArgumentException if {@value #PROPERTY} has a value other than
     *         {@code native}, {@code malloc} or {@code auto}; nothing is decided then
     */
    public static Engine engine() {
        Engine e = chosen;                // volatile: a non-null value is final
        return e != null ? e : decide();
    }

    private static synchronized Engine decide() {
        if (chosen == null) {
            chosen = choose(System.getProperty(PROPERTY), NativeLibrary::lookup, System.getLogger(LOGGER_NAME));
        }
        return chosen;
    }

    /**
     * The choice for the property's value {@code value}: {@code loadLibrary} is called only
     * for the automatic choice, and {@code log} hears of a fallback (package-private for tests).
     *
     * @throws IllegalArgumentException if {@code value} is not a known choice
     */
    static Engine choose(String value, Supplier<?> loadLibrary, System.Logger log) {
        String v = value == null ? "" : value.strip().toLowerCase(Locale.ROOT);
        switch (v) {
            case "native":
                return Engine.NATIVE;
            case "malloc":
                return Engine.MALLOC;
            case "", "auto":
                break;
            default:
                throw new IllegalArgumentException("system property " + PROPERTY
                        + " must be native, malloc or auto: \"" + value + "\"");
        }
        try {
            loadLibrary.get();
            return Engine.NATIVE;
        } catch (LinkageError e) {
            // UnsatisfiedLinkError from the first load; NoClassDefFoundError if something
            // else tried (and failed) to load the library in this class loader before.
            log.log(System.Logger.Level.WARNING, "spanheap: the native library is not available ("
                    + e.getMessage() + "); span heaps use the malloc engine (the C runtime's malloc"
                    + " through FFM: same API and checks, no thread caches, malloc's speed)."
                    + " Set -D" + PROPERTY + "=malloc to choose it without this warning, or -D"
                    + PROPERTY + "=native to fail instead.");
            return Engine.MALLOC;
        }
    }
}
