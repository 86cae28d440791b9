package org.spanheap;

import org.spanheap.internal.EngineChoice;
import org.spanheap.internal.HeapArena;
import org.spanheap.internal.HeapEngine;
import org.spanheap.internal.MallocEngine;
import org.spanheap.internal.SpanHeapImpl;
import org.spanheap.internal.Zeroing;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Locale;
import java.util.Properties;
import javax.management.ObjectName;

/**
 * An off-heap allocator: native memory segments from a lock-free span allocator, freed
 * one by one with {@link #free(MemorySegment)} or in bulk by closing an
 * {@linkplain #newArena() arena}.
 *
 * <p>A heap owns one large reservation of virtual memory (its arena, committed on demand)
 * and large objects mapped beside it. It is thread-safe: any thread may allocate, and any
 * thread may free any block. Segments it returns are native segments of the heap's
 * scope: once the heap is {@linkplain #close() closed}, accessing them throws
 * {@link IllegalStateException} instead of touching unmapped memory.
 *
 * {@snippet :
 * try (SpanHeap heap = SpanHeap.create()) {
 *     MemorySegment a = heap.allocate(100);              // zeroed, aligned to at least 16
 *     MemorySegment b = heap.allocate(4096, 4096);
 *     heap.free(a);
 *     try (Arena arena = heap.newArena()) {              // a java.lang.foreign.Arena
 *         MemorySegment s = arena.allocateFrom("hello");
 *     }                                                  // freed in bulk here
 *     System.out.println(heap.stats());
 * }
 * }
 *
 * @implNote Platform threads keep a small cache of free blocks per size class for each
 * heap they use: a magazine (by default at most 64 blocks) that the allocate and free fast
 * paths use, and behind it an overflow store, together at most 64 KiB per class by
 * default. Allocating and freeing a block up to the largest size class is then O(1) Java
 * code without a native call; a full magazine moves its older half to the overflow, then
 * to a depot the heap's threads share (at most 4 x 64 KiB per class), and only then to the
 * native core in one batched call; an empty one refills from them in the same order. Virtual threads
 * do not get a cache each: they share a few striped caches (4 per core) taken with a
 * try-lock; when their stripe is busy they make one short native call instead (the native
 * core's per-carrier cache), which never unmounts the virtual thread. Larger blocks are
 * mapped directly: allocating and freeing them calls into the kernel. Blocks cached by
 * threads that terminate return to the heap when another thread creates its cache, on
 * {@link #stats()}, {@link #flushThreadCache()}, or when an allocation hits the byte limit.
 *
 * <h2>Engines</h2>
 * What is said above is the {@linkplain Engine#NATIVE native engine}, the native core
 * bundled for Linux on x86-64 and aarch64. Where it cannot be loaded (another OS or
 * architecture, a C runtime it does not link with, a temporary directory mounted
 * {@code noexec}), heaps use
 * the {@linkplain Engine#MALLOC malloc engine}: the same API, exceptions and byte limit, over
 * the C runtime's {@code malloc} through FFM, without thread caches or span pool. The
 * system property {@code spanheap.engine} ({@code native}, {@code malloc} or {@code auto},
 * the default) chooses, read when the first heap is built; {@link #engine()} tells which
 * engine a heap uses. The automatic fallback logs one {@code WARNING} on the
 * {@link System.Logger} {@code org.spanheap} that says why.
 *
 * {@snippet lang=shell :
 * java -Dspanheap.engine=malloc ...     # the fallback on purpose (tests, comparison), no warning
 * }
 *
 * @see Builder
 */
public final class SpanHeap implements AutoCloseable {

    /** Default of {@link Builder#threadCacheBlocks(int)}. */
    public static final int DEFAULT_CACHE_BLOCKS = 64;
    /** Default of {@link Builder#threadCacheBytesPerClass(long)}. */
    public static final long DEFAULT_CACHE_BYTES_PER_CLASS = 64 * 1024;

    private final HeapEngine impl;
    /**
     * {@link #impl} when it is the native engine, else null. The fast paths call it directly:
     * through the interface alone, 64-byte allocate+touch+free took 17.8-18.2 ns against
     * 15.9-16.1 before the interface existed; with the direct calls 16.7 (AllocFreeBenchmark
     * {@code -p allocator=SPANHEAP,MALLOC_FFM -p size=64}, the jars side by side; glibc 16.4-16.9).
     */
    private final SpanHeapImpl nativeImpl;
    private final MXBeanRegistration mxBean = new MXBeanRegistration();

    private SpanHeap(HeapEngine impl) {
        this.impl = impl;
        this.nativeImpl = impl instanceof SpanHeapImpl n ? n : null;
    }

    /**
     * {@return the engine that serves this heap} The same for every heap of the process: see
     * "Engines" above.
     */
    public Engine engine() {
        return impl.kind();
    }

    /**
     * {@return a new heap with default settings} The arena reservation is the native
     * default (1 TiB of address space, committed on demand), with no byte limit.
     *
     * @throws SpanHeapOutOfMemoryError if the address space cannot be reserved
     * @throws UnsatisfiedLinkError if {@code -Dspanheap.engine=native} asks for the native
     *         engine and its library cannot be loaded (not Linux on x86-64 or aarch64, or the
     *         library is missing)
     * @throws IllegalArgumentException if the system property {@code spanheap.engine} is not
     *         {@code native}, {@code malloc} or {@code auto}
     */
    public static SpanHeap create() {
        return builder().build();
    }

    /** {@return a builder for a heap with non-default settings} */
    public static Builder builder() {
        return new Builder();
    }

    /** Prefix of the system properties that configure {@link #global()}. */
    static final String GLOBAL_PROPERTY_PREFIX = "spanheap.global.";

    /** The global heap once built; written under the class lock, read without it. */
    private static volatile SpanHeap global;

    /**
     * {@return the process-wide default heap} It is created on first use and is never
     * closed: {@link #close()} on it throws {@link UnsupportedOperationException}.
     *
     * <p>Its settings are the defaults of {@link Builder}, except where these system
     * properties, read once when the heap is created, say otherwise (sizes in bytes, or
     * with a suffix {@code k}, {@code m} or {@code g} for KiB, MiB or GiB):
     * <table class="striped">
     * <caption>System properties of the global heap</caption>
     * <thead><tr><th scope="col">Property</th><th scope="col">Builder method</th></tr></thead>
     * <tbody>
     * <tr><th scope="row">{@code spanheap.global.reserveBytes}</th><td>{@link Builder#reserveBytes(long)}</td></tr>
     * <tr><th scope="row">{@code spanheap.global.byteLimit}</th><td>{@link Builder#byteLimit(long)}</td></tr>
     * <tr><th scope="row">{@code spanheap.global.threadCacheBlocks}</th>
     *     <td>{@link Builder#threadCacheBlocks(int)} (a count: no suffix)</td></tr>
     * <tr><th scope="row">{@code spanheap.global.threadCacheBytesPerClass}</th>
     *     <td>{@link Builder#threadCacheBytesPerClass(long)}</td></tr>
     * </tbody>
     * </table>
     *
     * {@snippet lang=shell :
     * java -Dspanheap.global.byteLimit=2g -Dspanheap.global.threadCacheBlocks=16 ...
     * }
     *
     * <p>A call that fails creates nothing: the next call reads the properties again. The
     * global heap's engine is chosen like every heap's (see "Engines" above).
     *
     * @throws IllegalArgumentException if a property's value is not a number (with an
     *         allowed suffix) or is out of the setting's range, or {@code spanheap.engine}
     *         is not {@code native}, {@code malloc} or {@code auto}; the message names the
     *         property and its value
     * @throws SpanHeapOutOfMemoryError if the address space cannot be reserved
     * @throws UnsatisfiedLinkError if {@code -Dspanheap.engine=native} asks for the native
     *         engine and its library cannot be loaded
     * @implNote After the first successful call, one volatile read.
     */
    public static SpanHeap global() {
        SpanHeap g = global; // volatile: a non-null value is a fully built heap
        return g != null ? g : createGlobal();
    }

    private static synchronized SpanHeap createGlobal() {
        if (global == null) {
            global = fromProperties(System.getProperties()).buildGlobal();
        }
        return global;
    }

    /**
     * A builder with the settings that the {@code spanheap.global.*} entries of
     * {@code properties} give (see {@link #global()}), the defaults for absent ones.
     *
     * @throws IllegalArgumentException if a value is malformed or out of range, naming
     *         the property and the value
     */
    static Builder fromProperties(Properties properties) {
        Builder b = new Builder();
        String v;
        if ((v = property(properties, "reserveBytes")) != null) {
            b.reserveBytes(bytes("reserveBytes", v));
        }
        if ((v = property(properties, "byteLimit")) != null) {
            b.byteLimit(bytes("byteLimit", v));
        }
        if ((v = property(properties, "threadCacheBlocks")) != null) {
            long n = number("threadCacheBlocks", v, v.strip(), "is not a number of blocks (digits)");
            if (n < 0 || n > 4096) {
                throw badProperty("threadCacheBlocks", v, "must be in [0, 4096]");
            }
            b.threadCacheBlocks((int) n);
        }
        if ((v = property(properties, "threadCacheBytesPerClass")) != null) {
            b.threadCacheBytesPerClass(bytes("threadCacheBytesPerClass", v));
        }
        return b;
    }

    private static String property(Properties properties, String knob) {
        return properties.getProperty(GLOBAL_PROPERTY_PREFIX + knob);
    }

    /** A size: digits, optionally followed by k, m or g (either case), at least 0. */
    private static long bytes(String knob, String value) {
        String t = value.strip().toLowerCase(Locale.ROOT);
        int shift = 0;
        if (!t.isEmpty()) {
            switch (t.charAt(t.length() - 1)) {
                case 'k' -> shift = 10;
                case 'm' -> shift = 20;
                case 'g' -> shift = 30;
                default -> { }
            }
        }
        long n = number(knob, value, shift == 0 ? t : t.substring(0, t.length() - 1),
                "is not a number of bytes (digits, optionally followed by k, m or g)");
        if (n < 0) {
            throw badProperty(knob, value, "must be >= 0");
        }
        if (n > Long.MAX_VALUE >> shift) {
            throw badProperty(knob, value, "is too large");
        }
        return n << shift;
    }

    private static long number(String knob, String value, String digits, String notANumber) {
        try {
            return Long.parseLong(digits);
        } catch (NumberFormatException e) {
            throw badProperty(knob, value, notANumber);
        }
    }

    private static IllegalArgumentException badProperty(String knob, String value, String why) {
        return new IllegalArgumentException(
                "system property " + GLOBAL_PROPERTY_PREFIX + knob + " " + why + ": \"" + value + "\"");
    }

    /**
     * {@return a new zeroed segment of {@code byteSize} bytes, aligned to at least 16}
     * Like {@link Arena#allocate(long)}, the contents are zero.
     *
     * @param byteSize the size in bytes, may be 0
     * @throws IllegalArgumentException if {@code byteSize < 0}
     * @throws SpanHeapOutOfMemoryError if the byte limit would be exceeded, or the memory
     *         cannot be obtained
     * @throws IllegalStateException if the heap is closed
     * @implNote Zeroing costs about one store per 32 bytes; use
     * {@link #allocateUninitialized(long)} where the caller overwrites the segment anyway.
     */
    public MemorySegment allocate(long byteSize) {
        return allocate(byteSize, 1);
    }

    /**
     * {@return a new zeroed segment of {@code byteSize} bytes, aligned to
     * {@code byteAlignment}} Alignments up to 16 cost nothing extra; larger alignments are
     * served from a size class whose blocks are naturally aligned where one exists,
     * otherwise by the native core.
     *
     * @param byteSize the size in bytes, may be 0
     * @param byteAlignment the alignment in bytes, a power of two
     * @throws IllegalArgumentException if {@code byteSize < 0}, or {@code byteAlignment} is
     *         not a power of two
     * @throws SpanHeapOutOfMemoryError if the byte limit would be exceeded, or the memory
     *         cannot be obtained
     * @throws IllegalStateException if the heap is closed
     */
    public MemorySegment allocate(long byteSize, long byteAlignment) {
        SpanHeapImpl n = nativeImpl;
        MemorySegment s = n != null ? n.segment(n.allocateAddress(byteSize, byteAlignment), byteSize)
                : impl.segment(impl.allocateAddress(byteSize, byteAlignment), byteSize);
        Zeroing.zero(s);
        return s;
    }

    /**
     * {@return a new segment of {@code byteSize} bytes, aligned to at least 16, whose
     * contents are unspecified} The contents may be anything a previous owner of the
     * memory wrote to it (always memory of this heap, never of another process).
     *
     * @param byteSize the size in bytes, may be 0
     * @throws IllegalArgumentException if {@code byteSize < 0}
     * @throws SpanHeapOutOfMemoryError if the byte limit would be exceeded, or the memory
     *         cannot be obtained
     * @throws IllegalStateException if the heap is closed
     */
    public MemorySegment allocateUninitialized(long byteSize) {
        SpanHeapImpl n = nativeImpl;
        return n != null ? n.segment(n.allocateAddress(byteSize, 1), byteSize)
                : impl.segment(impl.allocateAddress(byteSize, 1), byteSize);
    }

    /**
     * {@return a new segment of {@code byteSize} bytes aligned to {@code byteAlignment},
     * whose contents are unspecified}
     *
     * @param byteSize the size in bytes, may be 0
     * @param byteAlignment the alignment in bytes, a power of two
     * @throws IllegalArgumentException if {@code byteSize < 0}, or {@code byteAlignment} is
     *         not a power of two
     * @throws SpanHeapOutOfMemoryError if the byte limit would be exceeded, or the memory
     *         cannot be obtained
     * @throws IllegalStateException if the heap is closed
     */
    public MemorySegment allocateUninitialized(long byteSize, long byteAlignment) {
        SpanHeapImpl n = nativeImpl;
        return n != null ? n.segment(n.allocateAddress(byteSize, byteAlignment), byteSize)
                : impl.segment(impl.allocateAddress(byteSize, byteAlignment), byteSize);
    }

    /**
     * Frees a segment that {@code allocate} or {@code allocateUninitialized} of this heap
     * returned. Any thread may free any block. The segment (and slices of it) must not be
     * accessed afterwards: the memory may be handed out again. A large block (over 1 MiB, or
     * aligned above 4 KiB; with the {@linkplain Engine#MALLOC malloc engine} over 128 KiB) is
     * mapped for itself and has a scope of its own, closed before its memory is unmapped, so
     * an access after that throws {@link IllegalStateException} instead of faulting. Closing
     * a scope is a handshake with every thread, so the native engine keeps up to eight freed
     * large blocks of at most 32 MiB (64 MiB in all) with their scopes open and hands them out
     * again; {@link #trim()}, {@link #flushThreadCache()}, a failed allocation and
     * {@link #close()} let them go. While a block is kept, and for smaller blocks always, a
     * use after free is not detected.
     *
     * {@snippet :
     * MemorySegment s = heap.allocate(64);
     * s.set(ValueLayout.JAVA_LONG, 0, 42);
     * heap.free(s);
     * }
     *
     * @param segment a segment from this heap, at the start of its block
     * @throws NullPointerException if {@code segment} is null
     * @throws IllegalArgumentException if the segment was not allocated by this heap:
     *         it comes from another heap, from an arena (also one of {@link #newArena()}:
     *         close the arena instead), from {@link Arena#ofConfined()}, or it is a slice
     *         that does not start at a block
     * @throws IllegalStateException if the block is already free (double free), or the
     *         heap is closed
     * @implNote The checks (address in the arena, span header, block boundary, free mark)
     * run in Java without a native call. A double free is always detected when the
     * frees happen one after the other; two threads freeing the same block at the same
     * instant is a caller bug that this check does not promise to catch. Freeing a large
     * block closes its scope, a handshake with all threads (tens of microseconds).
     */
    public void free(MemorySegment segment) {
        SpanHeapImpl n = nativeImpl;
        if (n != null) {
            n.free(segment);
        } else {
            impl.free(segment);
        }
    }

    /**
     * {@return a new confined arena whose memory comes from this heap}
     * Every FFM API that takes an {@link Arena} or a
     * {@link java.lang.foreign.SegmentAllocator} works with it. Its segments are zeroed,
     * carry the arena's scope (access after {@link Arena#close()} throws), and can only be
     * accessed by the thread that created the arena. Closing the arena frees all its
     * blocks at once; {@link #free(MemorySegment)} rejects them.
     *
     * {@snippet :
     * try (Arena arena = heap.newArena()) {
     *     MemorySegment name = arena.allocateFrom("hello");
     *     MemorySegment ints = arena.allocate(ValueLayout.JAVA_INT, 100);
     * }
     * }
     *
     * <p>If this heap is closed while the arena is open, the arena can no longer allocate,
     * but its segments stay valid until it is closed: the heap's memory is released when
     * the last of its arenas closes.
     *
     * @throws IllegalStateException if the heap is closed
     * @implNote There is no shared (multi-thread) variant: a segment of a shared scope can
     * be accessed by any thread, so closing it needs {@code Arena.ofShared()}'s handshake
     * with every thread (tens of microseconds) for every arena. Share segments of the heap
     * itself ({@link #allocate(long)}) instead; they are freed individually.
     */
    public Arena newArena() {
        return new HeapArena(impl);
    }

    /**
     * {@return a snapshot of this heap's memory use}
     * Blocks held free in Java thread caches are reported as cached, not live.
     *
     * @throws IllegalStateException if the heap is closed
     * @implNote O(threads that used the heap + size classes); takes a lock shared with
     * thread-cache creation, and returns caches of terminated threads to the heap first.
     */
    public HeapStats stats() {
        return impl.stats();
    }

    /**
     * {@return the usable bytes of the block that {@code segment} starts} At least the
     * segment's size.
     *
     * @param segment a live segment from this heap
     * @throws IllegalArgumentException if the segment does not start a live block of this heap
     * @throws IllegalStateException if the heap is closed
     */
    public long usableSize(MemorySegment segment) {
        return impl.usableSize(segment);
    }

    /**
     * Returns the free blocks cached by the calling thread, and by terminated threads, to
     * the heap, and lets go of the freed large blocks it keeps (see {@link #free}). Useful
     * before a platform thread goes idle for a long time.
     *
     * @throws IllegalStateException if the heap is closed
     */
    public void flushThreadCache() {
        impl.flushThreadCache();
    }

    /**
     * Gives memory that this heap holds but does not use back to the OS, and returns how
     * many bytes that was. Free blocks cached by the calling thread and by terminated
     * threads return to the heap first (as {@link #flushThreadCache()}); then every free
     * span is released with {@code madvise(MADV_DONTNEED)} down to its header page, also
     * those the heap keeps resident for fast reuse, and the freed large blocks kept for
     * reuse are unmapped (their segments' scopes closed first). Blocks in use, and the free blocks and spare spans of other live
     * threads, stay where they are.
     *
     * {@snippet :
     * long released = heap.trim();   // e.g. after a burst, before a long idle phase
     * }
     *
     * @return the bytes released: the drop of {@link HeapStats#committedBytes()} over the
     *         call, exact when no other thread allocates or frees meanwhile, and 0 if
     *         their allocations made it grow
     * @throws IllegalStateException if the heap is closed
     * @implNote O(free spans + threads that used the heap): one {@code madvise} per free
     * span that holds more than its header page and one {@code munmap} per kept mapping,
     * so it costs system calls and, for the spans reused afterwards, page faults.
     * Allocations running meanwhile are not blocked; they may map a fresh span instead of
     * reusing a pooled one while it is being released.
     */
    public long trim() {
        return impl.trim();
    }

    /** {@return whether this heap is open} */
    public boolean isOpen() {
        return impl.isOpen();
    }

    /**
     * Registers a {@link SpanHeapMXBean} for this heap on the platform MBean server as
     * {@code org.spanheap:type=SpanHeap,name="<name>"} (the name {@linkplain ObjectName#quote
     * quoted}, so any string will do) and returns its object name; {@link #close()}
     * unregisters it. From now on the name also labels this heap's JFR events
     * (docs/observability.md).
     *
     * {@snippet :
     * SpanHeap heap = SpanHeap.create();
     * ObjectName on = heap.registerMXBean("buffers");   // org.spanheap:type=SpanHeap,name="buffers"
     * }
     *
     * @param name the heap's name, unique among the registered span heaps
     * @return the MXBean's object name
     * @throws NullPointerException if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is blank, or an MXBean of that name is
     *         registered already; the message names it
     * @throws IllegalStateException if the heap is closed, or already has an MXBean
     */
    public ObjectName registerMXBean(String name) {
        ObjectName on = mxBean.register("SpanHeap", name, new SpanHeapMXBeanAdapter(this, name), impl::isOpen);
        impl.name(name);
        return on;
    }

    /**
     * Closes this heap: afterwards every method but {@code isOpen} and {@code close} throws
     * {@link IllegalStateException}, and so does any access through a segment the heap
     * returned. Closing a closed heap has no effect. Safe while other threads still use
     * the heap: their calls complete or throw. Unregisters the heap's
     * {@linkplain #registerMXBean(String) MXBean}, if any, first.
     *
     * @throws UnsupportedOperationException if this is the {@linkplain #global() global} heap
     * @throws IllegalStateException if a native call of this heap still holds it after 10 s;
     *         the heap is closed to every later call but its memory stays until the process
     *         ends. Only a thread that died of {@link StackOverflowError} inside one of the
     *         heap's native calls leaves such a hold (the JDK releases it in a method call).
     * @implNote Closing performs a handshake with all threads (like closing
     * {@link Arena#ofShared()}). The memory is returned to the OS now, or when the last
     * open {@linkplain #newArena() arena} of this heap closes.
     */
    @Override
    public void close() {
        if (!impl.isGlobal()) {
            mxBean.close();                        // first: no JMX read meets a closed heap
        }
        impl.close();
    }

    /** The engine, for the compacting heap's page source (same package: not public API). */
    HeapEngine impl() {
        return impl;
    }

    @Override
    public String toString() {
        return "SpanHeap[" + (impl.isGlobal() ? "global" : isOpen() ? "open" : "closed")
                + (impl.kind() == Engine.MALLOC ? ", malloc]" : "]");
    }

    /**
     * Settings for a new {@link SpanHeap}.
     *
     * {@snippet :
     * SpanHeap heap = SpanHeap.builder()
     *         .reserveBytes(1L << 30)          // 1 GiB of address space
     *         .byteLimit(256L << 20)           // at most 256 MiB in use
     *         .build();
     * }
     */
    public static final class Builder {
        private long reserveBytes;
        private long byteLimit;
        private int reuseThresholdPercent;
        private boolean allowHugePages;
        private int cacheBlocks = DEFAULT_CACHE_BLOCKS;
        private long cacheBytesPerClass = DEFAULT_CACHE_BYTES_PER_CLASS;

        private Builder() {}

        /**
         * Sets the virtual address space to reserve for the arena; 0 (the default) means
         * the native default (1 TiB). Memory is committed only as it is used.
         *
         * @param bytes the reservation in bytes, or 0
         * @return this builder
         * @throws IllegalArgumentException if {@code bytes < 0}
         */
        public Builder reserveBytes(long bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException("reserve bytes must be >= 0: " + bytes);
            }
            this.reserveBytes = bytes;
            return this;
        }

        /**
         * Sets a cap on the memory the heap takes from the OS for spans in use and large
         * objects; 0 (the default) means no limit. Allocations beyond it throw
         * {@link SpanHeapOutOfMemoryError}. Blocks in thread caches count against it.
         *
         * @param bytes the limit in bytes, or 0
         * @return this builder
         * @throws IllegalArgumentException if {@code bytes < 0}
         */
        public Builder byteLimit(long bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException("byte limit must be >= 0: " + bytes);
            }
            this.byteLimit = bytes;
            return this;
        }

        /**
         * Sets scalloc's reusability threshold: a span whose share of used blocks drops
         * below this percentage can be reused by other threads; 0 means the native default.
         *
         * @param percent the threshold in percent, or 0
         * @return this builder
         * @throws IllegalArgumentException if {@code percent} is not in [0, 100]
         */
        public Builder reuseThresholdPercent(int percent) {
            if (percent < 0 || percent > 100) {
                throw new IllegalArgumentException("reuse threshold must be in [0, 100]: " + percent);
            }
            this.reuseThresholdPercent = percent;
            return this;
        }

        /**
         * Sets whether the arena may use transparent huge pages (default false).
         *
         * @param allow whether to allow transparent huge pages
         * @return this builder
         */
        public Builder allowHugePages(boolean allow) {
            this.allowHugePages = allow;
            return this;
        }

        /**
         * Sets the size of a platform thread's magazine per size class: the stack of free
         * blocks its allocate and free fast paths use (default
         * {@value SpanHeap#DEFAULT_CACHE_BLOCKS}; fewer for a class whose blocks would
         * exceed {@link #threadCacheBytesPerClass(long)}); 0 disables the Java caches, so
         * every allocation is a native call. Beyond its magazine a thread keeps free blocks of
         * the class up to that byte budget in an overflow store.
         *
         * @param blocks the blocks of a magazine per size class and thread, or 0
         * @return this builder
         * @throws IllegalArgumentException if {@code blocks < 0} or {@code blocks > 4096}
         */
        public Builder threadCacheBlocks(int blocks) {
            if (blocks < 0 || blocks > 4096) {
                throw new IllegalArgumentException("thread cache blocks must be in [0, 4096]: " + blocks);
            }
            this.cacheBlocks = blocks;
            return this;
        }

        /**
         * Sets the most bytes a platform thread caches per size class, magazine and overflow
         * store together (default {@value SpanHeap#DEFAULT_CACHE_BYTES_PER_CLASS}); a class
         * whose block is larger is not cached. The heap's depot, shared by its threads, holds
         * at most four times this per class.
         *
         * @param bytes the most cached bytes per size class and thread
         * @return this builder
         * @throws IllegalArgumentException if {@code bytes < 0}
         */
        public Builder threadCacheBytesPerClass(long bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException("thread cache bytes must be >= 0: " + bytes);
            }
            this.cacheBytesPerClass = bytes;
            return this;
        }

        // the settings, for the tests of fromProperties (same package: not public API)
        long reserveBytes() {
            return reserveBytes;
        }

        long byteLimit() {
            return byteLimit;
        }

        int threadCacheBlocks() {
            return cacheBlocks;
        }

        long threadCacheBytesPerClass() {
            return cacheBytesPerClass;
        }

        /**
         * {@return a new heap with these settings} Its engine is the process's (see
         * "Engines" in {@link SpanHeap}); the malloc engine applies only the byte limit.
         *
         * @throws SpanHeapOutOfMemoryError if the address space cannot be reserved
         * @throws UnsatisfiedLinkError if {@code -Dspanheap.engine=native} asks for the native
         *         engine and its library cannot be loaded
         * @throws IllegalArgumentException if the system property {@code spanheap.engine} is
         *         not {@code native}, {@code malloc} or {@code auto}
         */
        public SpanHeap build() {
            return new SpanHeap(newEngine(false));
        }

        private SpanHeap buildGlobal() {
            return new SpanHeap(newEngine(true));
        }

        private HeapEngine newEngine(boolean global) {
            return switch (EngineChoice.engine()) {
                case NATIVE -> new SpanHeapImpl(reserveBytes, byteLimit, reuseThresholdPercent,
                        allowHugePages, cacheBlocks, cacheBytesPerClass, global);
                case MALLOC -> new MallocEngine(byteLimit, global);
            };
        }
    }
}
