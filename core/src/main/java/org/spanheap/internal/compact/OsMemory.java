package org.spanheap.internal.compact;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import org.spanheap.SpanHeapOutOfMemoryError;
import org.spanheap.internal.SystemMalloc;
import org.spanheap.internal.Zeroing;

/**
 * The memory calls of the OS the compacting heap makes itself, through
 * libc: {@code mmap} and {@code munmap} for pages mapped one by one, large
 * segments and the largest objects, and {@code madvise(MADV_DONTNEED)} to give
 * the memory of an emptied page or of free granules of a large segment back
 * while its address range stays mapped ({@code MADV_FREE} to give it back
 * lazily: {@link #releaseLazily}), many ranges in one {@code process_madvise}
 * where the kernel takes it ({@link #releaseAll}).
 *
 * <p>These are Linux's calls (the flag values are Linux's): on Linux with any C
 * runtime, {@link #MAPS} is true. Elsewhere (macOS, Windows, or a C runtime
 * without one of them) a "mapping" is a block of the C runtime's allocator
 * ({@link SystemMalloc}, aligned to {@link #OS_PAGE} and zeroed here),
 * {@link #unmap} frees it, {@link #release} does nothing (an emptied page's
 * memory returns when the page is freed, as malloc decides). The compacting heap
 * works the same on both; only when memory leaves the process differs.
 *
 * @implNote Each is a system call of a few microseconds (plus page faults
 * on first touch of the memory it maps or releases); callers use them per page,
 * per large segment or per object above a segment's share, never per small object.
 */
final class OsMemory {

    static final long OS_PAGE = 4096;
    private static final int PROT_READ_WRITE = 0x1 | 0x2;
    private static final int MAP_PRIVATE_ANONYMOUS = 0x02 | 0x20;
    private static final int MADV_DONTNEED = 4;
    private static final int MADV_FREE = 8;
    /** Cleared when the OS refuses {@code MADV_FREE} (Linux before 4.5): {@link #releaseLazily} then releases at once. */
    private static volatile boolean lazyFree = true;

    /** {@return whether a lazy release ({@link #releaseLazily}) is lazy} false once the OS refused one, or without {@link #MAPS} */
    static boolean releasesLazily() {
        return MAPS && lazyFree;
    }

    private static final MethodHandle MMAP;
    private static final MethodHandle MUNMAP;
    private static final MethodHandle MADVISE;
    private static final MethodHandle MINCORE;

    /** Whether the Linux calls are used; otherwise the C runtime's allocator stands in (see the class comment). */
    static final boolean MAPS;

    static {
        Linker linker = Linker.nativeLinker();
        SymbolLookup libc = linker.defaultLookup();
        boolean linux = System.getProperty("os.name", "").toLowerCase(Locale.ROOT).startsWith("linux");
        MAPS = linux && libc.find("mmap").isPresent() && libc.find("munmap").isPresent()
                && libc.find("madvise").isPresent();
        if (MAPS) {
            MMAP = linker.downcallHandle(libc.find("mmap").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
            MUNMAP = linker.downcallHandle(libc.find("munmap").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG));
            MINCORE = libc.find("mincore").isEmpty() ? null : linker.downcallHandle(libc.find("mincore").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                            ValueLayout.ADDRESS));
            MADVISE = linker.downcallHandle(libc.find("madvise").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_INT));
        } else {
            MMAP = MUNMAP = MINCORE = MADVISE = null;
        }
    }

    /** The calls a test can make fail ({@link #failCalls}). */
    enum Call { MAP }

    /**
     * Test hook, as the native core's {@code sh_debug_fail_os_call}: per call kind, how many
     * calls still succeed before the refused ones, and how many are refused. Read once per
     * system call (volatile), so it costs nothing beside the call itself.
     */
    private static final AtomicIntegerArray SKIP = new AtomicIntegerArray(Call.values().length);
    private static final AtomicIntegerArray REFUSE = new AtomicIntegerArray(Call.values().length);

    /**
     * Makes the {@code nth} next call of kind {@code call} (1 is the next one) and the
     * {@code count - 1} after it fail as if the OS refused them; {@code count} 0 disarms.
     * For tests (the compacting heap's fault-injection tests): not API.
     */
    static void failCalls(Call call, int nth, int count) {
        REFUSE.set(call.ordinal(), 0);
        SKIP.set(call.ordinal(), Math.max(nth - 1, 0));
        REFUSE.set(call.ordinal(), Math.max(count, 0));
    }

    /** {@return how many calls of kind {@code call} the armed hook will still refuse} */
    static int refusalsLeft(Call call) {
        return REFUSE.get(call.ordinal());
    }

    /** Whether a test wants this call refused (see {@link #failCalls}). */
    private static boolean refused(Call call) {
        int k = call.ordinal();
        if (REFUSE.get(k) == 0) {
            return false;
        }
        if (SKIP.getAndUpdate(k, n -> Math.max(n - 1, 0)) > 0) {
            return false;
        }
        return REFUSE.getAndUpdate(k, n -> Math.max(n - 1, 0)) > 0;
    }

    /** Bytes mapped by {@link #map} and not yet unmapped, over all heaps: what leak tests compare. */
    static final AtomicLong MAPPED = new AtomicLong();

    private OsMemory() {
    }

    /** Bytes a mapping of {@code size} bytes takes: whole OS pages. */
    static long mappedSize(long size) {
        return (Math.max(size, 1) + OS_PAGE - 1) & -OS_PAGE;
    }

    /**
     * Maps {@code mappedSize(size)} zeroed bytes and returns their address.
     *
     * @throws SpanHeapOutOfMemoryError if the OS refuses
     */
    static long map(long size) {
        long bytes = mappedSize(size);
        long p;
        if (!MAPS) {
            p = refused(Call.MAP) ? 0 : SystemMalloc.allocate(bytes, OS_PAGE);
            if (p == 0) {
                throw new SpanHeapOutOfMemoryError("the C runtime refused a block of " + bytes + " bytes (malloc)", false);
            }
            Zeroing.zero(RAW.asSlice(p, bytes));
            MAPPED.addAndGet(bytes);
            return p;
        }
        try {
            p = refused(Call.MAP) ? -1L : (long) MMAP.invokeExact(0L, bytes, PROT_READ_WRITE, MAP_PRIVATE_ANONYMOUS, -1, 0L);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
        if (p == -1L || p == 0L) {
            throw new SpanHeapOutOfMemoryError("the OS refused a mapping of " + bytes + " bytes (mmap)", false);
        }
        MAPPED.addAndGet(bytes);
        return p;
    }

    /** Unmaps what {@link #map} returned for {@code size}. */
    static void unmap(long address, long size) {
        if (!MAPS) {
            SystemMalloc.free(address);            // the whole block: callers cut no tails without MAPS
            MAPPED.addAndGet(-mappedSize(size));
            return;
        }
        int rc;
        try {
            rc = (int) MUNMAP.invokeExact(address, mappedSize(size));
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
        if (rc != 0) {
            throw new IllegalStateException("munmap failed at 0x" + Long.toHexString(address));
        }
        MAPPED.addAndGet(-mappedSize(size));
    }

    /** Whether {@link #residentBytes} can ask the OS (Linux's {@code mincore}). */
    static boolean residencyKnown() {
        return MINCORE != null;
    }

    /** Bytes of residency vector {@link #residentBytes} wants: one byte per OS page of the longest range asked at once. */
    static final int RESIDENCY_VECTOR_BYTES = 16 << 10;

    /**
     * {@return the bytes of {@code [address, address + bytes)} now in RAM, or -1 if a part of
     * it is not mapped} by {@code mincore}, {@link #RESIDENCY_VECTOR_BYTES} pages per call, into
     * {@code vector} (at least that long). Callers check {@link #residencyKnown()} first.
     */
    static long residentBytes(long address, long bytes, MemorySegment vector) {
        long resident = 0;
        long most = (long) RESIDENCY_VECTOR_BYTES * OS_PAGE;
        for (long at = 0; at < bytes; at += most) {
            long len = Math.min(most, bytes - at);
            int rc;
            try {
                rc = (int) MINCORE.invokeExact(address + at, len, vector);
            } catch (Throwable t) {
                throw new AssertionError(t);
            }
            if (rc != 0) {
                return -1;                         // ENOMEM: a page of it is not mapped (any more)
            }
            long pages = (len + OS_PAGE - 1) / OS_PAGE;
            for (long p = 0; p < pages; p++) {
                resident += (vector.get(ValueLayout.JAVA_BYTE, p) & 1) * OS_PAGE;
            }
        }
        return resident;
    }

    /** Lets the OS take back the memory of {@code [address, address + bytes)}; it reads as zero afterwards. */
    static void release(long address, long bytes) {
        if (!MAPS) {
            return;                                // the memory goes back when the page is freed
        }
        try {
            int rc = (int) MADVISE.invokeExact(address, bytes, MADV_DONTNEED);
            assert rc == 0 : "madvise failed at 0x" + Long.toHexString(address);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    /**
     * Lets the OS take back the memory of {@code [address, address + bytes)} when it needs it
     * ({@code MADV_FREE}): until then the pages stay mapped, and a write to one reuses it without
     * a page fault. Its bytes are undefined afterwards (their old values, or zero). {@return
     * whether the release is lazy} false where the OS refuses it, and the memory was released at
     * once ({@link #release}) instead.
     */
    static boolean releaseLazily(long address, long bytes) {
        if (!MAPS) {
            return false;
        }
        if (lazyFree) {
            try {
                if ((int) MADVISE.invokeExact(address, bytes, MADV_FREE) == 0) {
                    return true;
                }
            } catch (Throwable t) {
                throw new AssertionError(t);
            }
            lazyFree = false; // EINVAL: a kernel without it; every later release is immediate
        }
        release(address, bytes);
        return false;
    }

    // ---- many ranges in one call --------------------------------------------------------

    private static final long SYS_PIDFD_OPEN = 434, SYS_PROCESS_MADVISE = 440; // x86-64 and the generic table (aarch64)
    /** {@code long syscall(long number, ...)}, every argument passed as a long (glibc and musl read longs). */
    private static final MethodHandle SYSCALL;
    /** This process's pidfd for {@code process_madvise}: 0 until opened, -1 if the OS gave none. */
    private static volatile long pidfd;
    /** Cleared when the OS refuses {@code process_madvise} with this advice on this process (Linux before 6.13). */
    private static volatile boolean manyAtOnce;

    static {
        Linker linker = Linker.nativeLinker();
        String arch = System.getProperty("os.arch", "");
        boolean table = arch.equals("amd64") || arch.equals("x86_64") || arch.equals("aarch64");
        MemorySegment syscall = linker.defaultLookup().find("syscall").orElse(null);
        MethodHandle h = null;
        if (MAPS && table && syscall != null) {
            h = linker.downcallHandle(syscall,
                    FunctionDescriptor.of(ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG,
                            ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG, ValueLayout.JAVA_LONG),
                    Linker.Option.firstVariadicArg(1));
        }
        SYSCALL = h;
        manyAtOnce = h != null;
    }

    /** {@return whether ranges still go to the OS many at once} (false once it refused) For tests. */
    static boolean releasesManyAtOnce() {
        return manyAtOnce;
    }

    /** Makes {@link #releaseAll} advise each range on its own ({@code false}), or try many at once again. For tests. */
    static void releaseManyAtOnce(boolean on) {
        manyAtOnce = on && SYSCALL != null;
    }

    /** Bytes of one {@code struct iovec}: base and length. */
    static final long IOVEC_BYTES = 16;

    /**
     * Gives back the {@code count} ranges {@code address[i]}, {@code bytes[i]} at once: lazily
     * ({@code MADV_FREE}, see {@link #releaseLazily}) if {@code lazily} and the OS has not refused
     * that, else for good ({@code MADV_DONTNEED}). Where Linux's {@code process_madvise} takes the
     * advice for the process itself (Linux 6.13 and later), the ranges go in one system call,
     * whose TLB flush (6.16 and later) interrupts the other cores once instead of once per range;
     * elsewhere each range gets its own {@code madvise}. {@code iov} holds at least
     * {@code count} {@link #IOVEC_BYTES}-byte entries; the caller owns it.
     */
    static void releaseAll(long[] address, long[] bytes, int count, boolean lazily, MemorySegment iov) {
        if (!MAPS || count == 0) {
            return;
        }
        boolean lazy = lazily && lazyFree;
        if (count > 1 && manyAtOnce && adviseAll(address, bytes, count, lazy ? MADV_FREE : MADV_DONTNEED, iov)) {
            return;
        }
        for (int i = 0; i < count; i++) {
            if (lazy) {
                releaseLazily(address[i], bytes[i]);
            } else {
                release(address[i], bytes[i]);
            }
        }
    }

    /** {@return whether one {@code process_madvise} advised every range} Clears {@link #manyAtOnce} if the OS refuses it. */
    private static boolean adviseAll(long[] address, long[] bytes, int count, int advice, MemorySegment iov) {
        long fd = pidfd;
        if (fd == 0) {
            fd = openPidfd();
        }
        if (fd < 0) {
            return false;
        }
        long total = 0;
        for (int i = 0; i < count; i++) {
            iov.set(ValueLayout.JAVA_LONG, i * IOVEC_BYTES, address[i]);
            iov.set(ValueLayout.JAVA_LONG, i * IOVEC_BYTES + 8, bytes[i]);
            total += bytes[i];
        }
        long done;
        try {
            done = (long) SYSCALL.invokeExact(SYS_PROCESS_MADVISE, fd, iov.address(), (long) count, (long) advice, 0L);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
        if (done == total) {
            return true;
        }
        if (done < 0) {
            manyAtOnce = false; // ENOSYS or EINVAL: a kernel without it, or without this advice for it
        }
        return false; // a part may be advised: the caller advises each range again (both advices repeat safely)
    }

    /** Opens this process's pidfd once; {@return it, or -1 if the OS has none} */
    private static synchronized long openPidfd() {
        if (pidfd == 0) {
            long fd;
            try {
                fd = (long) SYSCALL.invokeExact(SYS_PIDFD_OPEN, ProcessHandle.current().pid(), 0L, 0L, 0L, 0L);
            } catch (Throwable t) {
                throw new AssertionError(t);
            }
            pidfd = fd > 0 ? fd : -1; // kept open for the process's life: one descriptor
        }
        return pidfd;
    }

    /** A segment over the whole address space with no scope of its own, for copies between known blocks. */
    static final MemorySegment RAW = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);
}
