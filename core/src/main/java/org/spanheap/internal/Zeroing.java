package org.spanheap.internal;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Zeroing of native segments for {@code allocate} and arenas: libspanheap's {@code sh_zero}
 * once the library is loaded, else libc's {@code memset}. {@code sh_zero} is memset except
 * from 512 B up on x86-64 with AVX2, where it is a vector store loop, as the JDK's
 * {@code Unsafe.setMemory} is (docs/java-core.md, Zeroing). Either is about twice the speed of
 * {@link MemorySegment#fill} from 512 bytes up. Critical only while short: a critical call
 * holds off safepoints, so blocks above {@link #CRITICAL_MAX} go through the ordinary
 * transition. Where neither is found, {@code fill} does it all.
 */
public final class Zeroing {
    private Zeroing() {}

    private static final FunctionDescriptor MEMSET_FD = FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, JAVA_LONG);
    private static final MethodHandle MEMSET_CRITICAL;
    private static final MethodHandle MEMSET_BLOCKING;
    static {
        Linker linker = Linker.nativeLinker();
        MemorySegment memset = linker.defaultLookup().find("memset").orElse(null);
        MEMSET_CRITICAL = memset == null ? null : linker.downcallHandle(memset, MEMSET_FD, Linker.Option.critical(false));
        MEMSET_BLOCKING = memset == null ? null : linker.downcallHandle(memset, MEMSET_FD);
    }

    /**
     * {@code sh_zero(p, n)}, bound when first needed, which is after the library is loaded
     * (a library without it leaves these null).
     */
    private static final class SpanheapZero {
        static final MethodHandle CRITICAL;
        static final MethodHandle BLOCKING;
        static {
            FunctionDescriptor fd = FunctionDescriptor.ofVoid(ADDRESS, JAVA_LONG);
            Linker linker = Linker.nativeLinker();
            MemorySegment f = NativeLibrary.ifLoaded().find("sh_zero").orElse(null);
            CRITICAL = f == null ? null : linker.downcallHandle(f, fd, Linker.Option.critical(false));
            BLOCKING = f == null ? null : linker.downcallHandle(f, fd);
        }
    }

    /** Below this many bytes {@link #zero} uses {@code fill}, which is as fast there. */
    static final long BY_MEMSET = 512;
    /** Up to this many bytes (about 20 us of memset) {@link #zero} uses a critical call. */
    static final long CRITICAL_MAX = 1L << 20;

    /**
     * Zeroes a native segment. Passing the segment (not its address) to memset makes the
     * linker hold the segment's scope for the call: a concurrent close waits, and a closed
     * or wrong-thread segment throws as {@code fill} would.
     *
     * @param s the segment to clear, of any size
     */
    public static void zero(MemorySegment s) {
        long n = s.byteSize();
        boolean spanheap = n >= BY_MEMSET && usesSpanheapZero();
        if (n < BY_MEMSET || (!spanheap && MEMSET_CRITICAL == null)) {
            s.fill((byte) 0);
            return;
        }
        try {
            // each call on a constant handle, so that C2 inlines the downcall
            if (spanheap && n <= CRITICAL_MAX) {
                SpanheapZero.CRITICAL.invokeExact(s, n);
            } else if (spanheap) {
                SpanheapZero.BLOCKING.invokeExact(s, n);
            } else if (n <= CRITICAL_MAX) {
                MemorySegment unused = (MemorySegment) MEMSET_CRITICAL.invokeExact(s, 0, n);
            } else {
                MemorySegment unused = (MemorySegment) MEMSET_BLOCKING.invokeExact(s, 0, n);
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    /**
     * {@return whether zeroing goes to libspanheap's {@code sh_zero}}: once the library is
     * loaded (the native engine's heaps load it) and has it. Before that, or with the malloc
     * engine alone, libc's memset: this class never loads the library itself.
     */
    static boolean usesSpanheapZero() {
        return NativeLibrary.ifLoaded() != null && SpanheapZero.CRITICAL != null;
    }

    /**
     * Binds {@code sh_zero} now; the native engine calls it once the library is loaded, so
     * that the binding (a class initializer) never runs in a caller's deep stack, where a
     * {@link StackOverflowError} would leave it unusable (see {@link EagerClassInit}).
     */
    static void bindLibrary() {
        EagerClassInit.initialize(SpanheapZero.class);
    }
}
