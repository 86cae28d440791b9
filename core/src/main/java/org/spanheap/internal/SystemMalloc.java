package org.spanheap.internal;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.Locale;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * The C runtime's allocator through FFM, found with the linker's default lookup: what
 * {@link MallocEngine} allocates with, and what the compacting heap maps large objects with
 * where {@code mmap}/{@code mremap} are not to be had.
 *
 * <ul>
 * <li>POSIX (Linux with glibc or musl, macOS, the BSDs): {@code malloc} for alignments up to
 *     {@link #MALLOC_ALIGNMENT}, {@code posix_memalign} above, {@code free}; and glibc's
 *     {@code malloc_trim} where the C runtime has it.</li>
 * <li>Windows (the UCRT): {@code _aligned_malloc} for every block and {@code _aligned_free},
 *     since the CRT's {@code free} must not see an {@code _aligned_malloc} block and the two
 *     cannot be told apart later. Not tested: no Windows machine builds this project.</li>
 * </ul>
 *
 * <p>Addresses are passed and returned as {@code long} (no segment objects). The calls are
 * {@linkplain Linker.Option#critical(boolean) critical} (no thread-state transition), as the
 * native engine's {@code sh_alloc}/{@code sh_free} are: they are short, do not wait for
 * other Java threads, and never unmount a virtual thread. A {@code malloc} of a large block
 * makes one {@code mmap}, a {@code free} of one a {@code munmap} (for a block of gigabytes,
 * milliseconds during which a safepoint waits), the same as the native engine's large objects.
 */
public final class SystemMalloc {
    private SystemMalloc() {}

    /** The alignment every {@code malloc} block has on the 64-bit platforms the JDK's linker supports. */
    public static final long MALLOC_ALIGNMENT = 16;

    private static final boolean WINDOWS =
            System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("windows");
    private static final Linker.Option CRITICAL = Linker.Option.critical(false);

    /** {@code void *malloc(size_t)} or, on Windows, {@code void *_aligned_malloc(size_t, size_t)}. */
    private static final MethodHandle MALLOC;
    /** {@code int posix_memalign(void **, size_t, size_t)}; the out-pointer is a heap segment (critical(true)). */
    private static final MethodHandle POSIX_MEMALIGN;
    /** {@code void free(void *)} or {@code void _aligned_free(void *)}. */
    private static final MethodHandle FREE;
    /** {@code int malloc_trim(size_t)}: glibc only, else null. */
    private static final MethodHandle MALLOC_TRIM;

    static {
        Linker linker = Linker.nativeLinker();
        SymbolLookup libc = linker.defaultLookup();
        if (WINDOWS) {
            MALLOC = linker.downcallHandle(find(libc, "_aligned_malloc"),
                    FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG), CRITICAL);
            POSIX_MEMALIGN = null;
            FREE = linker.downcallHandle(find(libc, "_aligned_free"), FunctionDescriptor.ofVoid(JAVA_LONG), CRITICAL);
            MALLOC_TRIM = null;
        } else {
            MALLOC = linker.downcallHandle(find(libc, "malloc"), FunctionDescriptor.of(JAVA_LONG, JAVA_LONG), CRITICAL);
            POSIX_MEMALIGN = linker.downcallHandle(find(libc, "posix_memalign"),
                    FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG), Linker.Option.critical(true));
            FREE = linker.downcallHandle(find(libc, "free"), FunctionDescriptor.ofVoid(JAVA_LONG), CRITICAL);
            MALLOC_TRIM = libc.find("malloc_trim")
                    .map(s -> linker.downcallHandle(s, FunctionDescriptor.of(JAVA_INT, JAVA_LONG)))
                    .orElse(null);
        }
    }

    private static MemorySegment find(SymbolLookup libc, String name) {
        return libc.find(name).orElseThrow(() -> new UnsatisfiedLinkError(
                "the C runtime has no " + name + " (Linker.nativeLinker().defaultLookup())"));
    }

    /**
     * {@return the address of a new block of {@code size} bytes (at least 1) aligned to
     * {@code alignment}, or 0 if the C runtime refuses} Contents are unspecified.
     *
     * @param size the size in bytes, at least 0 (0 is served as 1)
     * @param alignment a power of two
     */
    public static long allocate(long size, long alignment) {
        long n = Math.max(size, 1);
        try {
            if (WINDOWS) {
                return (long) MALLOC.invokeExact(n, Math.max(alignment, MALLOC_ALIGNMENT));
            }
            if (alignment <= MALLOC_ALIGNMENT) {
                return (long) MALLOC.invokeExact(n);
            }
            long[] out = new long[1];
            int rc = (int) POSIX_MEMALIGN.invokeExact(MemorySegment.ofArray(out), alignment, n);
            return rc == 0 ? out[0] : 0;
        } catch (Throwable t) {
            throw new AssertionError(t);   // these downcalls throw nothing checked
        }
    }

    /** Frees a block from {@link #allocate}. */
    public static void free(long address) {
        try {
            FREE.invokeExact(address);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /** {@return whether the C runtime can give its free memory back on request (glibc's {@code malloc_trim})} */
    public static boolean canTrim() {
        return MALLOC_TRIM != null;
    }

    /**
     * Calls glibc's {@code malloc_trim(0)} where it exists (an ordinary downcall: it walks
     * malloc's arenas and makes system calls). {@return whether it released memory} glibc does
     * not say how much.
     */
    public static boolean trim() {
        if (MALLOC_TRIM == null) {
            return false;
        }
        try {
            return (int) MALLOC_TRIM.invokeExact(0L) != 0;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }
}
