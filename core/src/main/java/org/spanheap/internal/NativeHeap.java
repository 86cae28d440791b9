package org.spanheap.internal;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Downcall handles for {@code native/include/spanheap.h}.
 *
 * <p>Conventions:
 * <ul>
 * <li>The {@code sh_heap *} argument of every call that touches a live heap is a
 *     zero-length {@link MemorySegment} bound to the heap's lifetime arena. The linker
 *     acquires that segment's scope for the duration of the call, so the arena cannot be
 *     closed (and {@code sh_heap_destroy} cannot run) while any thread is inside the
 *     native heap. This costs one CAS to acquire and one atomic add to release per call.</li>
 * <li>Returned pointers are declared {@code JAVA_LONG} (same register on x86-64 SysV):
 *     the Java side only needs the address, not a segment object.</li>
 * <li>{@link Linker.Option#critical(boolean) critical} calls skip the thread-state
 *     transition (about 4 ns instead of 11 ns). They are used only for short calls that
 *     never block: {@code sh_alloc*}, {@code sh_free*}, batches, {@code sh_usable_size}.
 *     The batch calls use {@code critical(true)} so the thread caches can pass their
 *     {@code long[]} magazines directly (no copy); GC waits for such a call, which is
 *     bounded by the batch size. A critical call never unmounts a virtual thread, so two
 *     consecutive critical calls run on the same OS thread ({@code sh_last_error}).</li>
 * <li>{@code sh_heap_create}, {@code sh_heap_destroy}, {@code sh_stats} (which may
 *     walk per-core state) and {@code sh_trim} (system calls) use ordinary downcalls.</li>
 * </ul>
 */
public final class NativeHeap {
    private NativeHeap() {}

    private static final Linker LINKER = Linker.nativeLinker();
    private static final Linker.Option CRITICAL = Linker.Option.critical(false);
    private static final Linker.Option CRITICAL_HEAP = Linker.Option.critical(true);

    private static MethodHandle handle(String name, FunctionDescriptor fd, Linker.Option... options) {
        MemorySegment symbol = NativeLibrary.lookup().find(name)
                .orElseThrow(() -> new UnsatisfiedLinkError("libspanheap lacks symbol " + name));
        return LINKER.downcallHandle(symbol, fd, options);
    }

    private static final MethodHandle SH_CONFIG_INIT = handle("sh_config_init",
            FunctionDescriptor.ofVoid(ADDRESS));
    private static final MethodHandle SH_HEAP_CREATE = handle("sh_heap_create",
            FunctionDescriptor.of(JAVA_LONG, ADDRESS));
    private static final MethodHandle SH_HEAP_DESTROY = handle("sh_heap_destroy",
            FunctionDescriptor.ofVoid(JAVA_LONG));
    private static final MethodHandle SH_ALLOC = handle("sh_alloc",
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG), CRITICAL);
    private static final MethodHandle SH_ALLOC_ALIGNED = handle("sh_alloc_aligned",
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG), CRITICAL);
    private static final MethodHandle SH_FREE_CHECKED = handle("sh_free_checked",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG), CRITICAL);
    private static final MethodHandle SH_USABLE_SIZE = handle("sh_usable_size",
            FunctionDescriptor.of(JAVA_LONG, ADDRESS, JAVA_LONG), CRITICAL);
    private static final MethodHandle SH_LAST_ERROR = handle("sh_last_error",
            FunctionDescriptor.of(JAVA_INT), CRITICAL);
    private static final MethodHandle SH_ERROR_NAME = handle("sh_error_name",
            FunctionDescriptor.of(ADDRESS, JAVA_INT), CRITICAL);
    private static final MethodHandle SH_CLASS_COUNT = handle("sh_class_count",
            FunctionDescriptor.of(JAVA_INT));
    private static final MethodHandle SH_CLASS_OF = handle("sh_class_of",
            FunctionDescriptor.of(JAVA_INT, JAVA_LONG), CRITICAL);
    private static final MethodHandle SH_CLASS_GET = handle("sh_class_get",
            FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS), CRITICAL_HEAP);
    private static final MethodHandle SH_ALLOC_BATCH = handle("sh_alloc_batch",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT), CRITICAL_HEAP);
    private static final MethodHandle SH_FREE_BATCH = handle("sh_free_batch",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT), CRITICAL_HEAP);
    private static final MethodHandle SH_CACHE_REFILL = handle("sh_cache_refill",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT), CRITICAL_HEAP);
    private static final MethodHandle SH_CACHE_DRAIN = handle("sh_cache_drain",
            FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT), CRITICAL_HEAP);
    private static final MethodHandle SH_HEAP_LAYOUT = handle("sh_heap_layout",
            FunctionDescriptor.ofVoid(ADDRESS, ADDRESS), CRITICAL_HEAP);
    private static final MethodHandle SH_STATS = handle("sh_stats",
            FunctionDescriptor.ofVoid(ADDRESS, ADDRESS));
    private static final MethodHandle SH_TRIM = handle("sh_trim",
            FunctionDescriptor.of(JAVA_LONG, ADDRESS));

    private static RuntimeException rethrow(Throwable t) {
        if (t instanceof RuntimeException r) {
            return r;
        }
        if (t instanceof Error e) {
            throw e;
        }
        return new IllegalStateException(t);
    }

    /**
     * Calls {@code sh_config_init}: writes the native defaults into a {@code sh_config}.
     *
     * @param config a segment of {@link SpanLayout#SH_CONFIG}'s size
     */
    public static void configInit(MemorySegment config) {
        try {
            SH_CONFIG_INIT.invokeExact(config);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls {@code sh_heap_create}; {@link #lastError()} tells why it failed.
     *
     * @param config a filled {@code sh_config}
     * @return the new heap's address, 0 on failure
     */
    public static long heapCreate(MemorySegment config) {
        try {
            return (long) SH_HEAP_CREATE.invokeExact(config);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls {@code sh_heap_destroy}: releases the arena and the large objects. No other
     * call on the heap may run or follow.
     *
     * @param heap the address {@link #heapCreate} returned
     */
    public static void heapDestroy(long heap) {
        try {
            SH_HEAP_DESTROY.invokeExact(heap);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls {@code sh_alloc}: a block aligned to at least 16, contents unspecified.
     *
     * @param heap the heap segment (see the class comment)
     * @param size the size in bytes, may be 0
     * @return the block's address, 0 on failure ({@link #lastError()} tells why)
     */
    public static long alloc(MemorySegment heap, long size) {
        try {
            return (long) SH_ALLOC.invokeExact(heap, size);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls {@code sh_alloc_aligned}.
     *
     * @param heap the heap segment (see the class comment)
     * @param size the size in bytes, may be 0
     * @param alignment the alignment, a power of two
     * @return the block's address, 0 on failure ({@link #lastError()} tells why)
     */
    public static long allocAligned(MemorySegment heap, long size, long alignment) {
        try {
            return (long) SH_ALLOC_ALIGNED.invokeExact(heap, size, alignment);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls {@code sh_free_checked}: frees a block, or rejects a bad pointer without
     * touching anything.
     *
     * @param heap the heap segment (see the class comment)
     * @param ptr the block's address; 0 is ignored
     * @return {@link SpanLayout#SH_OK}, or a negated {@code SH_E_*} code for a bad pointer
     */
    public static int freeChecked(MemorySegment heap, long ptr) {
        try {
            return (int) SH_FREE_CHECKED.invokeExact(heap, ptr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls {@code sh_usable_size}.
     *
     * @param heap the heap segment (see the class comment)
     * @param ptr an address
     * @return the usable bytes of the live block starting at {@code ptr}, 0 if none does
     */
    public static long usableSize(MemorySegment heap, long ptr) {
        try {
            return (long) SH_USABLE_SIZE.invokeExact(heap, ptr);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls {@code sh_last_error}; meaningful right after a failed call on the same OS
     * thread (see the class comment on critical calls).
     *
     * @return the {@code SH_E_*} code of this thread's last failing call
     */
    public static int lastError() {
        try {
            return (int) SH_LAST_ERROR.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls {@code sh_error_name}: the one table of error names is the library's.
     *
     * @param code an {@code SH_E_*} code, or its negation as an int-returning call gives it
     * @return its name, such as {@code "SH_E_DOUBLE_FREE"}; {@code "SH_E_UNKNOWN"} for a code
     *         the library does not know
     */
    public static String errorName(int code) {
        try {
            MemorySegment name = (MemorySegment) SH_ERROR_NAME.invokeExact(code);
            // a static NUL-terminated string: its length is found by reading it
            return name.reinterpret(Long.MAX_VALUE).getString(0);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /** {@return the number of size classes, at most {@link SpanLayout#MAX_CLASSES}} */
    public static int classCount() {
        try {
            return (int) SH_CLASS_COUNT.invokeExact();
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls {@code sh_class_of}.
     *
     * @param size a size in bytes
     * @return the smallest class that holds {@code size} bytes, -1 if none does
     */
    public static int classOf(long size) {
        try {
            return (int) SH_CLASS_OF.invokeExact(size);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls {@code sh_class_get}.
     *
     * @param index the class index
     * @param out receives the {@code sh_class_info}; may be a heap segment
     * @return {@link SpanLayout#SH_OK}, or {@code -}{@link SpanLayout#SH_E_INVALID} for a bad index
     */
    public static int classGet(int index, MemorySegment out) {
        try {
            return (int) SH_CLASS_GET.invokeExact(index, out);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls {@code sh_alloc_batch}: takes free blocks of one class for a thread cache.
     * The blocks keep their free mark.
     *
     * @param heap the heap segment (see the class comment)
     * @param sizeClass the class index
     * @param out receives the block addresses; may be a heap segment over a {@code long[]}
     * @param n the most blocks to take
     * @return the number of blocks taken (at least 1), or a negated {@code SH_E_*} code
     */
    public static int allocBatch(MemorySegment heap, int sizeClass, MemorySegment out, int n) {
        try {
            return (int) SH_ALLOC_BATCH.invokeExact(heap, sizeClass, out, n);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls {@code sh_free_batch}: returns free-marked cached blocks of any class.
     *
     * @param heap the heap segment (see the class comment)
     * @param blocks the block addresses; may be a heap segment over a {@code long[]}
     * @param n how many addresses {@code blocks} holds
     * @return {@link SpanLayout#SH_OK}, or a negated {@code SH_E_*} code if some address
     *         was not a block of this heap (those are skipped)
     */
    public static int freeBatch(MemorySegment heap, MemorySegment blocks, int n) {
        try {
            return (int) SH_FREE_BATCH.invokeExact(heap, blocks, n);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls {@code sh_cache_refill}: takes up to {@code n} blocks of a class into
     * {@code m[base..base+n)} and stores the new top into {@code m[top]}, in one call.
     *
     * @param heap the heap segment (see the class comment)
     * @param m a heap segment over the cache's {@code long[]}
     * @return the number of blocks taken (at least 1), or a negated {@code SH_E_*} code ({@code m} unchanged)
     */
    public static int cacheRefill(MemorySegment heap, int sizeClass, MemorySegment m, int base, int n, int top) {
        try {
            return (int) SH_CACHE_REFILL.invokeExact(heap, sizeClass, m, base, n, top);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls {@code sh_cache_drain}: frees {@code m[base..base+n)}, moves {@code m[base+n..base+count)}
     * down to {@code m[base..)} and stores {@code base + count - n} into {@code m[top]}, in one call.
     *
     * @param heap the heap segment (see the class comment)
     * @param m a heap segment over the cache's {@code long[]}
     * @return {@link SpanLayout#SH_OK}, or a negated {@code SH_E_*} code (see {@link #freeBatch})
     */
    public static int cacheDrain(MemorySegment heap, MemorySegment m, int base, int n, int count, int top) {
        try {
            return (int) SH_CACHE_DRAIN.invokeExact(heap, m, base, n, count, top);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls {@code sh_heap_layout}.
     *
     * @param heap the heap segment (see the class comment)
     * @param out receives the {@code sh_layout} ({@link SpanLayout#SH_LAYOUT})
     */
    public static void heapLayout(MemorySegment heap, MemorySegment out) {
        try {
            SH_HEAP_LAYOUT.invokeExact(heap, out);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls {@code sh_stats}: exact counters while the heap is quiescent, an estimate
     * while other threads use it.
     *
     * @param heap the heap segment (see the class comment)
     * @param out receives the {@code sh_heap_stats} ({@link SpanLayout#SH_HEAP_STATS})
     */
    public static void stats(MemorySegment heap, MemorySegment out) {
        try {
            SH_STATS.invokeExact(heap, out);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }

    /**
     * Calls {@code sh_trim}: gives the pooled free spans' pages and the kept large mappings
     * back to the OS.
     *
     * @param heap the heap segment (see the class comment)
     * @return the bytes given back
     */
    public static long trim(MemorySegment heap) {
        try {
            return (long) SH_TRIM.invokeExact(heap);
        } catch (Throwable t) {
            throw rethrow(t);
        }
    }
}
