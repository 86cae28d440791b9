package org.spanheap.internal;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Test-only bindings of the native core's fault injector ({@code sh_debug_fail_os_call},
 * {@code sh_debug_os_calls} in {@code spanheap.h}): makes the core's own calls to the OS
 * fail with {@code ENOMEM}. The injector is process-wide: a test that arms it disarms it in
 * a {@code finally} or an {@code @AfterEach} ({@link #disarmAll()}), so later tests in the
 * same JVM are unaffected.
 */
public final class OsFaults {
    private OsFaults() {}

    /** The kinds of OS call, as {@code SH_OS_*} in {@code spanheap.h}. */
    public enum Kind {
        /** Heap creation (the arena reservation) and large objects. */
        MMAP(1),
        /** Committing the next 16 MiB of an arena. */
        MPROTECT(2),
        /** Giving a free span's pages back; the arena's {@code MADV_NOHUGEPAGE}. */
        MADVISE(3);

        final int code;

        Kind(int code) {
            this.code = code;
        }
    }

    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle FAIL = handle("sh_debug_fail_os_call",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_LONG, JAVA_LONG));
    private static final MethodHandle CALLS = handle("sh_debug_os_calls",
            FunctionDescriptor.of(JAVA_LONG, JAVA_INT));

    private static MethodHandle handle(String name, FunctionDescriptor fd) {
        MemorySegment symbol = NativeLibrary.lookup().find(name)
                .orElseThrow(() -> new UnsatisfiedLinkError("libspanheap lacks symbol " + name));
        return LINKER.downcallHandle(symbol, fd);
    }

    /**
     * Makes the {@code nth} next call of {@code kind} (1 = the next one) and the
     * {@code count - 1} calls after it fail; {@code count} -1: every call from the
     * {@code nth} on, until {@link #disarm}.
     *
     * @param kind which OS call
     * @param nth which call fails first, at least 1
     * @param count how many calls fail, or -1 for all
     */
    public static void fail(Kind kind, long nth, long count) {
        if (nth < 1) {
            throw new IllegalArgumentException("nth must be >= 1: " + nth);
        }
        call(kind, nth, count);
    }

    /**
     * Stops injecting failures of {@code kind}.
     *
     * @param kind which OS call
     */
    public static void disarm(Kind kind) {
        call(kind, 0, 0);
    }

    /** Stops injecting failures of every kind. */
    public static void disarmAll() {
        for (Kind k : Kind.values()) {
            disarm(k);
        }
    }

    /**
     * {@return the calls of {@code kind} the core has made in this process, refused ones
     * included}
     *
     * @param kind which OS call
     */
    public static long calls(Kind kind) {
        try {
            return (long) CALLS.invokeExact(kind.code);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    private static void call(Kind kind, long nth, long count) {
        int rc;
        try {
            rc = (int) FAIL.invokeExact(kind.code, nth, count);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
        if (rc != 0) {
            throw new IllegalArgumentException("sh_debug_fail_os_call(" + kind + ", " + nth + ", "
                    + count + ") returned " + rc);
        }
    }
}
