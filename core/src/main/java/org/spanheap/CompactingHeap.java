package org.spanheap;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Function;
import javax.management.ObjectName;
import org.spanheap.internal.compact.CompactFitHeap;

/**
 * An off-heap heap whose objects are named by handles, so that it can move
 * them to compact its memory (Compact-fit: abstract addresses, a partial
 * compaction bound κ per size class, {@link Builder#notFullPagesPerClass(int)},
 * incremental compaction in steps of at most ι bytes, {@link Builder#movedBytesPerRound(long)}).
 *
 * <p>A handle is a positive {@code long}. It stays valid while the object is
 * live, wherever the object moves, and may be stored in off-heap memory, so
 * off-heap structures can refer to each other by handle. A freed, stale or
 * forged handle, or a handle of another open heap, throws
 * {@link StaleHandleException}; it never reaches memory of another object.
 *
 * {@snippet :
 * try (CompactingHeap heap = CompactingHeap.builder().notFullPagesPerClass(2).build()) {
 *     long h = heap.allocate(64);
 *     heap.write(h, seg -> seg.set(ValueLayout.JAVA_LONG, 0, 42L));
 *     long v = heap.read(h, seg -> seg.get(ValueLayout.JAVA_LONG, 0));
 *     heap.free(h);
 * }
 * }
 *
 * <h2>Objects of every size</h2>
 * Objects up to a quarter of the page size (16 KiB with the default 64 KiB
 * pages) live in size classes and can move. Larger objects, up to 4 TiB, get
 * a mapping of their own: they never move, have handles with the same
 * guarantees, and their memory is unmapped when they are reclaimed.
 *
 * <p>Where span heaps use the {@linkplain Engine#MALLOC malloc engine}
 * (no native library), the pages come from such a heap and everything above
 * holds. Outside Linux a large object's "mapping" is a block of the C
 * runtime's {@code malloc}, freed when it is reclaimed.
 *
 * <h2>Access while other threads compact</h2>
 * {@link #segment(long)} returns a segment bound to the current <em>epoch</em>.
 * Moving objects closes the epoch: any later access through a segment of it
 * throws {@link IllegalStateException}, and the JDK's handshake on closing a
 * shared arena guarantees that no access was still in progress when the move
 * began. {@link #read} and {@link #write} resolve, run the function, and if it
 * failed because its epoch closed, resolve again and rerun it; the function
 * must therefore be safe to rerun (a rerun sees what an interrupted attempt
 * already wrote). Use a segment only inside the function that got it, or
 * re-resolve after {@code IllegalStateException}.
 *
 * <h2>Reclaim and compaction</h2>
 * A freed object's memory is reused only after the next epoch change. Epoch
 * changes run in <em>rounds</em>, on a background thread of the heap (one per
 * heap, stopped by {@link #close()}): a round reclaims every object freed
 * before it and moves at most {@linkplain Builder#movedBytesPerRound(long) a
 * round's bytes} of live objects to bring each size class back to at most
 * {@linkplain Builder#notFullPagesPerClass(int) its bound of} not-full pages (per {@linkplain
 * Builder#allocationLanes(int) allocation lane}), all behind one handshake. The
 * thread runs a round when {@linkplain Builder#reclaimBatchBytes(long) a batch}
 * of freed bytes is waiting, and every few milliseconds while any is. With
 * {@code reclaimBatchBytes(0)} there is no thread: every free reclaims and
 * restores the bound at once, as in the paper.
 *
 * <p>This class is thread-safe.
 *
 * @implNote {@link #segment}, {@link #read}, {@link #write}, {@link #size}:
 * lock-free, O(1) (three volatile loads, two acquire loads, one slice); they wait
 * only while the object itself is being moved (at most one round).
 * {@link #allocate(long)}: with the background thread, a small object (its
 * class's page holds at least 64 blocks) from a platform thread comes from a
 * page that thread owns, without a lock; otherwise the lock of a lane of the
 * object's size class (the thread's own, or another that is free) for a few
 * field updates; then the zeroing or copy without it; large objects add a
 * {@code mmap}. Each platform thread that allocates small objects keeps one
 * page per size class it uses outside the not-full page bound, until it ends
 * or calls {@link #compact()}, {@link #trim()} or {@link #stats()}.
 * {@link #free}: lock-free: one CAS, then a plain push for an object in a page
 * the caller owns, else a CAS; no handshake unless
 * the background thread has fallen behind (two batches of freed bytes wait):
 * then the freeing thread waits for the round in progress and runs one itself
 * if that was not enough. This bounds the memory waiting for reuse when
 * threads outnumber cores and epoch changes come slowly.
 */
public final class CompactingHeap implements AutoCloseable {

    /** Value of {@link Builder#notFullPagesPerClass(int)} that turns automatic compaction off ({@link #compact()} still works). */
    public static final int NOT_FULL_PAGES_UNBOUNDED = Integer.MAX_VALUE;

    /** Largest object size: 4 TiB - 1. */
    public static final long MAX_OBJECT_SIZE = (1L << 42) - 1;

    /** The heap whose {@link #read}/{@link #write} function the current thread is re-running, if any. */
    private static final ThreadLocal<CompactingHeap> RERUNNING = new ThreadLocal<>();

    private final CompactFitHeap core;
    private final MXBeanRegistration mxBean = new MXBeanRegistration();

    private CompactingHeap(CompactFitHeap core) {
        this.core = core;
    }

    /**
     * {@return a builder with the defaults} The defaults: 2 not-full pages
     * per class, one allocation lane per processor (at most 4), 256 KiB moved per round,
     * 64 KiB pages, reclaim batch 1 MiB, pages from a span heap of its own,
     * background compaction on.
     */
    public static Builder builder() {
        return new Builder();
    }

    /** {@return a heap with the defaults of {@link #builder()}} */
    public static CompactingHeap create() {
        return builder().build();
    }

    /**
     * Allocates a zeroed object of {@code size} bytes and returns its handle.
     *
     * @param size the object's size in bytes, may be 0
     * @return the handle of the new object
     * @throws IllegalArgumentException if {@code size} is negative or larger than {@link #MAX_OBJECT_SIZE}
     * @throws IllegalStateException if the heap is closed
     * @throws SpanHeapOutOfMemoryError if the OS or the span heap refuses the memory of a page or mapping
     */
    public long allocate(long size) {
        checkSize(size);
        return core.allocate(size, null, null);
    }

    /**
     * Allocates an object of {@code size} bytes, runs {@code initializer} on
     * its segment before anyone else can reach it, and returns its handle.
     * The object is not zeroed first: bytes the initializer does not write
     * are unspecified (they may hold bytes of objects freed earlier), as with
     * {@link SpanHeap#allocateUninitialized(long)}. The cheapest way to store
     * a value built from several parts (a cache entry's header, key and value).
     *
     * @param size the object's size in bytes, may be 0
     * @param initializer writes the new object; it may run more than once (if
     *        an epoch change closes its segment), so it must be safe to rerun
     * @return the handle of the new object
     * @throws IllegalArgumentException if {@code size} is negative or larger than {@link #MAX_OBJECT_SIZE}
     * @throws IllegalStateException if the heap is closed
     * @throws SpanHeapOutOfMemoryError if the OS or the span heap refuses the memory of a page or mapping
     * @throws RuntimeException whatever {@code initializer} throws; then no object is allocated
     */
    public long allocate(long size, Consumer<? super MemorySegment> initializer) {
        checkSize(size);
        return core.allocate(size, null, Objects.requireNonNull(initializer, "initializer"));
    }

    /**
     * Allocates an object holding a copy of {@code contents} and returns its
     * handle. Cheaper than {@link #allocate(long)} and a write: the new object
     * is not zeroed first.
     *
     * @param contents the bytes of the new object; any segment (another
     *        object of this heap included) that the calling thread may read
     * @return the handle of the new object
     * @throws IllegalArgumentException if {@code contents} is larger than {@link #MAX_OBJECT_SIZE}
     * @throws IllegalStateException if the heap is closed, or {@code contents}'s scope is not alive
     * @throws WrongThreadException if {@code contents} is confined to another thread
     * @throws SpanHeapOutOfMemoryError if the OS or the span heap refuses the memory of a page or mapping
     */
    public long allocateFrom(MemorySegment contents) {
        long size = contents.byteSize();
        checkSize(size);
        return core.allocate(size, contents, null);
    }

    private static void checkSize(long size) {
        if (size < 0 || size > MAX_OBJECT_SIZE) {
            throw new IllegalArgumentException("size must be in [0, " + MAX_OBJECT_SIZE + "]: " + size);
        }
    }

    /**
     * Frees the object named by {@code handle}. Its memory becomes reusable
     * after the next epoch change; accesses already running may finish on it.
     * If two {@linkplain Builder#reclaimBatchBytes(long) batches} of freed bytes
     * are already waiting, the call waits for the round in progress (and runs
     * one if needed) before it returns.
     *
     * @param handle the object's handle
     * @throws StaleHandleException if the handle names no live object (double free included)
     * @throws IllegalStateException if the heap is closed
     */
    public void free(long handle) {
        core.free(handle);
    }

    /**
     * {@return the size in bytes of the object named by {@code handle}}
     *
     * @param handle the object's handle
     * @throws StaleHandleException if the handle names no live object
     * @throws IllegalStateException if the heap is closed
     */
    public long size(long handle) {
        return core.size(handle);
    }

    /**
     * {@return a segment of the object named by {@code handle}} It is valid
     * until the current epoch closes; after that every access through it throws
     * {@link IllegalStateException} and the caller must resolve again.
     *
     * <p>On JDK 25 an access that the epoch's close stops midway also leaves the
     * thread's interrupt status set (JDK-8306324; fixed in the JDK's main line in
     * July 2025). {@link #read}, {@link #write}, {@link #getLong}, {@link #setLong}
     * and the allocation methods clear it again when it was clear before the
     * access; code that accesses this segment itself and retries on
     * {@code IllegalStateException} should do the same.
     *
     * @param handle the object's handle
     * @throws StaleHandleException if the handle names no live object
     * @throws IllegalStateException if the heap is closed
     */
    public MemorySegment segment(long handle) {
        return core.resolve(handle);
    }

    /**
     * {@return a read-only segment of the object named by {@code handle}} Valid, like
     * {@link #segment}, until the current epoch closes. Unlike {@link #segment} it never waits
     * for a compaction round that is moving the object: it may name the object's old place,
     * which keeps the object's bytes until the epoch after the move has closed. A cache's reads
     * use it (and {@link #read} does).
     *
     * @param handle the object's handle
     * @throws StaleHandleException if the handle names no live object
     * @throws IllegalStateException if the heap is closed
     */
    public MemorySegment readOnlySegment(long handle) {
        return core.resolveForReading(handle);
    }

    /**
     * Runs {@code reader} on a read-only segment of the object ({@link #readOnlySegment}) and
     * returns its result, rerunning it on a fresh segment if an epoch change closed the
     * segment meanwhile. It does not wait for a compaction round that moves the object.
     *
     * @param <R> the result type
     * @param handle the object's handle
     * @param reader the function to run; it may run more than once
     * @return what {@code reader} returned
     * @throws StaleHandleException if the handle names no live object
     * @throws IllegalStateException if the heap is closed, or {@code reader} threw it on its own
     */
    public <R> R read(long handle, Function<? super MemorySegment, ? extends R> reader) {
        boolean interrupted = Thread.currentThread().isInterrupted(); // see retryOrThrow
        MemorySegment s = readOnlySegment(handle);
        try {
            return reader.apply(s);
        } catch (IllegalStateException e) {
            // out of line: keeps the fast path small enough to inline; it gets the segment's
            // scope, not the segment, so that C2 can keep the segment out of the Java heap
            return readAgain(handle, true, reader, s.scope(), e, interrupted);
        }
    }

    /** Reruns {@code reader} on fresh segments ({@code readOnly}: {@link #readOnlySegment}) until it completes. */
    private <R> R readAgain(long handle, boolean readOnly, Function<? super MemorySegment, ? extends R> reader,
            MemorySegment.Scope scope, IllegalStateException e, boolean interrupted) {
        CompactingHeap outer = RERUNNING.get();
        RERUNNING.set(this);
        try {
            for (;;) {
                retryOrThrow(scope, e, interrupted);
                MemorySegment s = readOnly ? readOnlySegment(handle) : segment(handle);
                scope = s.scope();
                try {
                    return reader.apply(s);
                } catch (IllegalStateException again) {
                    e = again;
                }
            }
        } finally {
            RERUNNING.set(outer);
        }
    }

    /**
     * Runs {@code writer} on the object's segment, rerunning it on a fresh
     * segment if an epoch change closed the segment meanwhile (what an
     * interrupted attempt wrote has been moved with the object; the rerun
     * overwrites it).
     *
     * @param handle the object's handle
     * @param writer the function to run; it may run more than once
     * @throws StaleHandleException if the handle names no live object
     * @throws IllegalStateException if the heap is closed, or {@code writer} threw it on its own
     */
    public void write(long handle, Consumer<? super MemorySegment> writer) {
        boolean interrupted = Thread.currentThread().isInterrupted();
        MemorySegment s = segment(handle);
        try {
            writer.accept(s);
        } catch (IllegalStateException e) {
            readAgain(handle, false, seg -> {
                writer.accept(seg);
                return null;
            }, s.scope(), e, interrupted);
        }
    }

    /**
     * {@return the {@code long} at {@code offset} of the object} Retries across epoch changes.
     *
     * @param handle the object's handle
     * @param offset the byte offset in the object
     * @throws StaleHandleException if the handle names no live object
     * @throws IndexOutOfBoundsException if {@code offset + 8} exceeds the object
     * @throws IllegalStateException if the heap is closed
     */
    public long getLong(long handle, long offset) {
        boolean interrupted = Thread.currentThread().isInterrupted();
        MemorySegment s = readOnlySegment(handle);
        try {
            return s.get(ValueLayout.JAVA_LONG_UNALIGNED, offset);
        } catch (IllegalStateException e) {
            return readAgain(handle, true, seg -> seg.get(ValueLayout.JAVA_LONG_UNALIGNED, offset), s.scope(), e,
                    interrupted);
        }
    }

    /**
     * Writes the {@code long} at {@code offset} of the object. Retries across epoch changes.
     *
     * @param handle the object's handle
     * @param offset the byte offset in the object
     * @param value the value to write
     * @throws StaleHandleException if the handle names no live object
     * @throws IndexOutOfBoundsException if {@code offset + 8} exceeds the object
     * @throws IllegalStateException if the heap is closed
     */
    public void setLong(long handle, long offset, long value) {
        boolean interrupted = Thread.currentThread().isInterrupted();
        MemorySegment s = segment(handle);
        try {
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, offset, value);
        } catch (IllegalStateException e) {
            readAgain(handle, false, seg -> {
                seg.set(ValueLayout.JAVA_LONG_UNALIGNED, offset, value);
                return null;
            }, s.scope(), e, interrupted);
        }
    }

    /**
     * After an access through a segment of {@code scope} threw {@code e}: rethrows it if it was
     * not the epoch's close, else returns so that the caller resolves again.
     *
     * <p>{@code interrupted}: the thread's interrupt status before the access. On JDK 25
     * the close of a shared arena stops a thread that is inside an access to it with an
     * asynchronous exception, and that leaves the thread's interrupt status set
     * (JDK-8306324; fixed in the JDK's main line in July 2025): a thread nobody
     * interrupted would find its next {@code sleep} or {@code take} throwing
     * {@code InterruptedException}. So an access that the epoch's close stopped clears
     * the status if it was clear before. The price: an interrupt from another thread
     * that arrives during that very access is cleared with it.
     */
    private void retryOrThrow(MemorySegment.Scope scope, IllegalStateException e, boolean interrupted) {
        if (scope.isAlive()) {
            throw e; // not ours: the user's function failed on its own
        }
        if (!interrupted) {
            Thread.interrupted(); // the close's asynchronous exception set it (see above)
        }
        if (core.isClosed()) {
            throw new IllegalStateException("compacting heap is closed", e);
        }
        Thread.onSpinWait(); // the epoch closed under us: resolve again
    }

    private void checkNotRerunning(String what) {
        if (RERUNNING.get() == this) {
            throw new IllegalStateException(what + " must not be called inside a read or write function of the same"
                    + " heap: it closes the epoch that the function's segment belongs to");
        }
    }

    /**
     * Compacts now: reclaims freed memory and moves objects until every
     * allocation lane of every size class has at most one not-full page, in
     * rounds of at most {@link #movedBytesPerRound()} bytes; emptied pages go back to the OS. Works also when the bound is unbounded, which
     * turns off only the automatic compaction. Pages that other threads' frees
     * make not-full while the call runs are left to the next call (or to the
     * background rounds), so the call ends under any churn: on a quiescent heap
     * the bound above holds when it returns.
     *
     * @return the bytes moved
     * @throws IllegalStateException if the heap is closed, or if called inside a
     *         {@link #read}/{@link #write} function of this heap (it would close
     *         that function's epoch on every rerun)
     */
    public long compact() {
        checkNotRerunning("compact()");
        return core.compact();
    }

    /**
     * Gives memory that this heap holds but does not use back to the OS, and
     * returns how many bytes that was. Reclaims every object freed so far (a
     * round that moves nothing), then releases the empty pages the heap keeps
     * in reserve for new objects and unmaps the mappings of reclaimed large
     * objects kept for reuse. Pages that still hold objects stay; call
     * {@link #compact()} first to empty as many as possible.
     *
     * {@snippet :
     * heap.compact();                // fewest pages
     * long released = heap.trim();   // and nothing held in reserve
     * }
     *
     * @return the bytes released: the drop of
     *         {@link CompactingHeapStats#committedBytes()} over the call, exact when no
     *         other thread allocates meanwhile, and 0 if their allocations made it grow
     * @throws IllegalStateException if the heap is closed, or if called inside a
     *         {@link #read}/{@link #write} function of this heap (the round closes the
     *         epoch of that function's segment)
     * @implNote Waits for a round in progress. One {@code madvise} (or {@code munmap})
     * per page given back and one {@code munmap} per kept mapping; new objects then
     * fault their pages in again.
     */
    public long trim() {
        checkNotRerunning("trim()");
        return core.trim();
    }

    /**
     * Moves the object named by {@code handle} to another block of its size
     * class now, in a round of its own (then restores the not-full page bound). Its handle stays
     * valid; segments of the current epoch die. Meant for tests of the access
     * protocol and for moving a single object out of a page.
     *
     * @param handle the object's handle
     * @return true if the object moved, false if it is a large object (they never move)
     * @throws StaleHandleException if the handle names no live object
     * @throws IllegalStateException if the heap is closed, or if called inside a
     *         {@link #read}/{@link #write} function of this heap
     */
    public boolean relocate(long handle) {
        checkNotRerunning("relocate()");
        return core.relocate(handle);
    }

    /**
     * {@return a snapshot of the heap's counters}
     *
     * @throws IllegalStateException if the heap is closed
     */
    public CompactingHeapStats stats() {
        return core.stats();
    }

    /**
     * {@return the bytes of the heap's memory that are in RAM now}: of its pages, its kept
     * pages and large mappings, and its large objects, asked of the OS page by page
     * ({@code mincore}). Usually less than {@link CompactingHeapStats#committedBytes()}: a
     * page's or a large object's memory that was never written takes none. It may be more by
     * the large runs given back lazily ({@code MADV_FREE}) whose memory the OS has not taken yet:
     * they are not committed, but their pages are still in RAM until the OS needs them or the
     * heap releases them for good 100 ms later. Where the OS cannot say (outside Linux) it is
     * the committed bytes.
     *
     * <p>Not part of {@link #stats()} because of its cost: it collects the address ranges
     * under the round lock (a walk of the handle table: no reclaim or compaction round runs
     * meanwhile, while allocations, frees and accesses go on), then asks the OS about them, a
     * system call per run of adjacent pages. Measured for 117 MiB in 25,000 objects: 1.5 ms
     * under the lock, 5 ms of system calls after it. A snapshot: what concurrent allocations
     * add meanwhile is missed, and memory given back meanwhile counts 0.
     *
     * @throws IllegalStateException if the heap is closed
     */
    public long residentBytes() {
        return core.residentBytes();
    }

    /** {@return the largest object size: {@link #MAX_OBJECT_SIZE}} */
    public long maxObjectSize() {
        return MAX_OBJECT_SIZE;
    }

    /** {@return the largest object kept in a size class (a quarter of the page size); larger ones are mapped alone} */
    public long maxSizeClassObjectSize() {
        return core.maxSmallObjectSize();
    }

    /**
     * {@return the off-heap bytes an object of {@code size} bytes takes} That is
     * the block of its size class, or for an object over
     * {@link #maxSizeClassObjectSize()} its own mapping rounded up to whole OS
     * pages. The object's handle-table entry lives on the Java heap and is not
     * counted. A cache bounding what its entries cost uses this figure.
     *
     * @param size an object size in bytes
     * @throws IllegalArgumentException if {@code size} is negative or larger than {@link #MAX_OBJECT_SIZE}
     */
    public long footprint(long size) {
        if (size < 0 || size > MAX_OBJECT_SIZE) {
            throw new IllegalArgumentException("size must be in [0, " + MAX_OBJECT_SIZE + "]: " + size);
        }
        return core.footprint(size);
    }

    /** {@return the page size} */
    public long pageSize() {
        return core.pageSize();
    }

    /**
     * {@return the partial compaction bound, Compact-fit's κ: the most not-full pages a size class
     * (a lane of it) keeps once compaction has caught up ({@link #NOT_FULL_PAGES_UNBOUNDED} if
     * automatic compaction is off)}
     */
    public int notFullPagesPerClass() {
        return core.notFullPagesPerClass();
    }

    /** {@return the allocation lanes of each size class (see {@link Builder#allocationLanes(int)})} */
    public int allocationLanes() {
        return core.allocationLanes();
    }

    /** {@return the compaction increment, Compact-fit's ι: the most bytes one round moves (at least one object)} */
    public long movedBytesPerRound() {
        return core.movedBytesPerRound();
    }

    /** {@return the number of size classes} {@link CompactingHeapStats#notFullPages()} has one entry per class. */
    public int sizeClassCount() {
        return core.sizeClassCount();
    }

    /**
     * {@return the block size of size class {@code cls}}
     *
     * @param cls a size class, {@code 0 <= cls < sizeClassCount()}
     * @throws IndexOutOfBoundsException if it is not
     */
    public int blockSize(int cls) {
        Objects.checkIndex(cls, core.sizeClassCount());
        return core.blockSize(cls);
    }

    /**
     * Registers a {@link CompactingHeapMXBean} for this heap on the platform MBean server
     * as {@code org.spanheap:type=CompactingHeap,name="<name>"} (the name
     * {@linkplain ObjectName#quote quoted}, so any string will do) and returns its object
     * name; {@link #close()} unregisters it. From now on the name also labels this heap's
     * JFR events (docs/observability.md).
     *
     * @param name the heap's name, unique among the registered compacting heaps
     * @return the MXBean's object name
     * @throws NullPointerException if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is blank, or an MXBean of that name
     *         is registered already; the message names it
     * @throws IllegalStateException if the heap is closed, or already has an MXBean
     */
    public ObjectName registerMXBean(String name) {
        ObjectName on = mxBean.register("CompactingHeap", name, new CompactingHeapMXBeanAdapter(this, name),
                () -> !core.isClosed());
        core.name(name);
        return on;
    }

    /**
     * Frees all memory of the heap and stops its background thread. Segments
     * handed out become inaccessible; every later call but {@code close}
     * throws {@link IllegalStateException}. Idempotent. Calls racing with
     * close complete or throw; a free racing with it may leave its object's
     * memory to the OS's reclaim at exit. Unregisters the heap's
     * {@linkplain #registerMXBean(String) MXBean}, if any, first.
     */
    @Override
    public void close() {
        mxBean.close(); // first: no JMX read meets a closed heap
        core.close();
    }

    /** Builder of {@link CompactingHeap}s. */
    public static final class Builder {
        private int notFullPages = 2;
        private int lanes = Math.min(4, Runtime.getRuntime().availableProcessors());
        private long movedBytesPerRound = 256 * 1024;
        private long pageSize = 64 * 1024;
        private long reclaimBatchBytes = 1024 * 1024;
        private SpanHeap spanHeap;
        private boolean mapped;
        private boolean threadOwnedPages;
        private boolean background = true;
        private long compactionIntervalNanos = 100_000_000L;

        private Builder() {
        }

        /**
         * Sets the partial compaction bound, Compact-fit's κ: at most
         * {@code pages} not-full pages per size class (per {@linkplain
         * #allocationLanes(int) lane}), restored by compaction after frees are
         * reclaimed; {@link #NOT_FULL_PAGES_UNBOUNDED} turns that automatic
         * compaction off.
         *
         * <p>How soon the bound holds again after it is exceeded:
         * <ul>
         * <li>with {@code reclaimBatchBytes(0)}: after every free, in the
         *     freeing thread (the paper's bound);</li>
         * <li>under load, with the background thread: after each pass, at most
         *     one {@linkplain #compactionInterval compaction interval} apart,
         *     for the pages that have been not-full for a whole interval and
         *     are at most two thirds used (fresh holes and nearly full pages
         *     are left for allocation to fill);</li>
         * <li>at rest: once no object has been allocated or freed for a
         *     compaction interval and the freed bytes are reclaimed, the
         *     background thread's next tick (every 10 ms) runs rounds from any
         *     not-full page until the bound holds for every page, so it holds
         *     about an interval plus two ticks (20 ms) after the last operation,
         *     plus the rounds' copying (each moves at most
         *     {@link #movedBytesPerRound(long)}), plus one more tick: a moved
         *     object's old slot is released by the round after its move, so
         *     that a {@linkplain CompactingHeap#readOnlySegment read-only
         *     segment} made during the move never reads another object.</li>
         * </ul>
         * {@link CompactingHeap#compact()} restores it at once, from any page
         * (it ends with the round that releases the old slots).
         *
         * @param pages the bound, at least 1
         * @return this builder
         * @throws IllegalArgumentException if {@code pages < 1}
         */
        public Builder notFullPagesPerClass(int pages) {
            if (pages < 1) {
                throw new IllegalArgumentException("not-full pages per class must be >= 1: " + pages);
            }
            this.notFullPages = pages;
            return this;
        }

        /**
         * Sets the allocation lanes of each size class whose page holds at
         * least 64 blocks (up to 1 KiB blocks with 64 KiB pages; larger
         * classes keep one lane): lanes have pages and a lock of their own,
         * so threads allocating in one class at once need not wait for each
         * other (a thread takes its own lane, or another that is free). Each
         * lane keeps the {@linkplain #notFullPagesPerClass(int) not-full page bound}
         * on its own, so such a class may have up to {@code lanes} times as many
         * not-full pages. The default is the number of
         * processors, at most 4; 1 gives one lock and the paper's bound per
         * class.
         *
         * @param lanes lanes per size class, 1 to 64
         * @return this builder
         * @throws IllegalArgumentException if {@code lanes} is not within 1 to 64
         */
        public Builder allocationLanes(int lanes) {
            if (lanes < 1 || lanes > 64) {
                throw new IllegalArgumentException("allocation lanes must be 1 to 64: " + lanes);
            }
            this.lanes = lanes;
            return this;
        }

        /**
         * Sets the compaction increment, Compact-fit's ι: the most bytes one
         * round moves, behind one epoch change (at least one object moves per
         * round). Accesses to the objects of a round wait until it has copied
         * them.
         *
         * @param bytes bytes, at least 1
         * @return this builder
         * @throws IllegalArgumentException if {@code bytes < 1}
         */
        public Builder movedBytesPerRound(long bytes) {
            if (bytes < 1) {
                throw new IllegalArgumentException("moved bytes per round must be >= 1: " + bytes);
            }
            this.movedBytesPerRound = bytes;
            return this;
        }

        /**
         * Sets the page size; a quarter of it is the largest object kept in a
         * size class.
         *
         * @param pageSize a power of two from 4 KiB to 1 GiB
         * @return this builder
         * @throws IllegalArgumentException if it is not
         */
        public Builder pageSize(long pageSize) {
            if (pageSize < 4096 || pageSize > (1L << 30) || Long.bitCount(pageSize) != 1) {
                throw new IllegalArgumentException("page size must be a power of two in [4096, 2^30]: " + pageSize);
            }
            this.pageSize = pageSize;
            return this;
        }

        /**
         * Sets how many freed bytes wait before the background thread runs a
         * round for them (it also runs one every few milliseconds while any
         * wait). 0 reclaims and restores the not-full page bound on every free in the freeing
         * thread, as Compact-fit does, at the cost of a handshake per free.
         *
         * @param bytes the batch, at least 0
         * @return this builder
         * @throws IllegalArgumentException if negative
         */
        public Builder reclaimBatchBytes(long bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException("reclaim batch must be >= 0: " + bytes);
            }
            this.reclaimBatchBytes = bytes;
            return this;
        }

        /**
         * Sets the pace of the background thread's compaction (default 100 ms).
         * A pass (rounds until no class is over its not-full page bound) starts at most this often,
         * or at once when more than a tenth of the page bytes hold no object; and
         * a pass empties only pages that have been not-full for at least this
         * long: under churn, the objects left in a page with fresh holes tend to
         * die soon as well, and moving them is wasted work. Nor does a pass empty
         * a page more than two thirds used: that moves the most bytes per page
         * freed, and allocation fills such a page's holes soon. So the bound holds under load,
         * after each pass, for the pages not-full longer than the interval and
         * at most two thirds used; at rest (nothing allocated or freed for an
         * interval), the background thread takes any not-full page until the
         * bound holds for all; {@link CompactingHeap#compact()} takes any. Zero
         * compacts every page at once: the least memory, the most copying
         * (measured in docs/compacting-heap.md: on a cache churn, committed/live
         * median 1.15 against 1.30, at 0.6 times the throughput).
         * {@link CompactingHeap#compact()} never waits.
         *
         * @param interval the time, at least 0
         * @return this builder
         * @throws IllegalArgumentException if negative
         */
        public Builder compactionInterval(java.time.Duration interval) {
            if (interval.isNegative()) {
                throw new IllegalArgumentException("compaction interval must be >= 0: " + interval);
            }
            this.compactionIntervalNanos = interval.toNanos();
            return this;
        }

        /**
         * Turns the background thread off (on by default): then a freeing
         * thread runs a round itself whenever a reclaim batch is full.
         *
         * @param on whether the heap has a background thread
         * @return this builder
         */
        public Builder backgroundCompaction(boolean on) {
            this.background = on;
            return this;
        }

        /**
         * Takes pages from {@code heap} (one block of the span heap per page)
         * instead of a span heap of its own. The compacting heap holds a
         * reference on {@code heap}: if {@code heap} is closed first, the
         * compacting heap's objects stay readable and new pages cannot be had
         * ({@link IllegalStateException}); the memory goes when both are closed.
         *
         * @param heap the span heap to take pages from
         * @return this builder
         */
        public Builder spanHeap(SpanHeap heap) {
            this.spanHeap = Objects.requireNonNull(heap, "heap");
            this.mapped = false;
            return this;
        }

        /**
         * Lets each platform thread allocate the small size classes (64 or more
         * blocks a page) from pages it owns, without a lock: its own frees go onto
         * the page's local list, other threads' frees onto the page's thread-free
         * list with one CAS, and a slot is reused once the epoch of its free has
         * closed. Off by default. Needs the background thread and a reclaim batch
         * above 0; other heaps ignore it.
         *
         * @implNote On one thread a small replace (allocate with a copy, free the old
         * handle) took 0.68x the time of the default lanes; a cache's storage churn
         * ran at 0.93x (1 thread) and 1.0x (2 threads) of the lanes' throughput, with
         * a higher peak of committed over live bytes at 2 threads (1.43 against 1.33).
         * On 16 cores the churn ran at 1.31x the lanes at 8 threads and 1.47x at 16,
         * with peaks of committed over live of 2.00 and 2.55 against 1.54 and 2.23
         * (docs/benchmarks/many-cores).
         * Pages owned by a live thread that has stopped allocating stay outside the
         * not-full page bound until it allocates or frees again, or calls
         * {@link CompactingHeap#compact()}; at most two pages per class per thread.
         * Figures: docs/benchmarks/compacting/write-path.md.
         *
         * @param enabled whether to allocate from thread-owned pages
         * @return this builder
         */
        public Builder threadOwnedPages(boolean enabled) {
            this.threadOwnedPages = enabled;
            return this;
        }

        /**
         * Takes every page with its own anonymous {@code mmap} and unmaps it
         * when it empties (one system call per page). For tests and comparison.
         * Outside Linux each page is a page-aligned block of the C runtime's
         * {@code malloc} instead, freed when it empties.
         *
         * @return this builder
         */
        public Builder mappedPages() {
            this.mapped = true;
            this.spanHeap = null;
            return this;
        }

        /**
         * {@return a new heap} Unless {@link #spanHeap} or {@link #mappedPages}
         * was called, it takes its pages from a span heap of its own.
         *
         * @throws IllegalStateException if the span heap given to {@link #spanHeap} is closed
         * @throws IllegalStateException if 2047 compacting heaps are open (handles name their heap in 11 bits)
         */
        public CompactingHeap build() {
            if (mapped) {
                return new CompactingHeap(CompactFitHeap.overMappedPages(pageSize, lanes, notFullPages, movedBytesPerRound,
                        reclaimBatchBytes, compactionIntervalNanos, background, threadOwnedPages));
            }
            if (spanHeap != null) {
                return new CompactingHeap(CompactFitHeap.overSpanHeap(spanHeap.impl(), null, pageSize, lanes, notFullPages,
                        movedBytesPerRound, reclaimBatchBytes, compactionIntervalNanos, background, threadOwnedPages));
            }
            SpanHeap own = SpanHeap.create();
            try {
                return new CompactingHeap(CompactFitHeap.overSpanHeap(own.impl(), own, pageSize, lanes, notFullPages, movedBytesPerRound,
                        reclaimBatchBytes, compactionIntervalNanos, background, threadOwnedPages));
            } catch (RuntimeException | Error e) {
                own.close();
                throw e;
            }
        }
    }
}
