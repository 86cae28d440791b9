package org.spanheap.internal;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Zeroing of native segments for {@code allocate} and arenas, with libc's {@code memset}:
 * about twice the speed of {@link MemorySegment#fill} from 512 bytes up (docs/java-core.md,
 * Zeroing). Needs only the C runtime, so both engines use it. Critical only while short: a
 * critical call holds off safepoints, so blocks above {@link #CRITICAL_MAX} go through the
 * ordinary transition. Where the linker's default lookup has no {@code memset}, {@code fill}
 * does it all.
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
        if (n < BY_MEMSET || MEMSET_CRITICAL == null) {
            s.fill((byte) 0);
            return;
        }
        memsetZero(s, n);
    }

    private static void memsetZero(MemorySegment s, long n) {
        try {
            MemorySegment unused = n <= CRITICAL_MAX
                    ? (MemorySegment) MEMSET_CRITICAL.invokeExact(s, 0, n)
                    : (MemorySegment) MEMSET_BLOCKING.invokeExact(s, 0, n);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }
}
