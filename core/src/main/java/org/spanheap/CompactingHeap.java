package org.spanheap;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.function.Consumer;
import java.util.function.Function;
import org.spanheap.internal.compact.CompactFitHeap;
import org.spanheap.internal.compact.MappedPageSource;
import org.spanheap.internal.compact.PageSource;
import org.spanheap.internal.compact.SpanHeapPageSource;

/**
 * An off-heap heap whose objects are named by handles, so that it can move
 * them to compact its memory (Compact-fit: abstract addresses, a partial
 * compaction bound kappa per size class, incremental compaction in steps of
 * iota bytes).
 *
 * <p>A handle is a {@code long} (generation in the high 32 bits, table index
 * in the low 32 bits). It stays valid while the object is live, wherever the
 * object moves, and may be stored in off-heap memory, so off-heap structures
 * can refer to each other by handle. A freed, stale or forged handle throws
 * {@link StaleHandleException}; it never reaches memory of another object.
 *
 * {@snippet :
 * try (CompactingHeap heap = CompactingHeap.builder().kappa(2).build()) {
 *     long h = heap.allocate(64);
 *     heap.write(h, seg -> seg.set(ValueLayout.JAVA_LONG, 0, 42L));
 *     long v = heap.read(h, seg -> seg.get(ValueLayout.JAVA_LONG, 0));
 *     heap.free(h);
 * }
 * }
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
 * <p>This class is thread-safe.
 *
 * @implNote {@link #segment}, {@link #read}, {@link #write}, {@link #size}:
 * lock-free, O(1) (a volatile load, two table loads, one slice); they spin
 * only while the object itself is being moved (at most one increment).
 * {@link #allocate}, {@link #free}: take the heap lock, O(1) except when a
 * free completes a reclaim batch: then one epoch change (a handshake with all
 * threads, tens of microseconds) and the compaction needed to restore kappa.
 * Every compaction increment holds the lock for one epoch change plus the
 * copy of at most iota bytes (at least one object).
 */
public final class CompactingHeap implements AutoCloseable {

    /** Value of {@link Builder#kappa(int)} that turns automatic compaction off ({@link #compact()} still works). */
    public static final int KAPPA_INFINITE = Integer.MAX_VALUE;

    private final CompactFitHeap core;

    private CompactingHeap(CompactFitHeap core) {
        this.core = core;
    }

    /** Returns a builder with the defaults: kappa 2, iota 64 KiB, 64 KiB pages, reclaim batch 1 MiB. */
    public static Builder builder() {
        return new Builder();
    }

    /** Returns a heap with the defaults of {@link #builder()}. */
    public static CompactingHeap create() {
        return builder().build();
    }

    /**
     * Allocates a zeroed object of {@code size} bytes and returns its handle.
     *
     * @throws IllegalArgumentException if {@code size} is negative or larger than {@link #maxObjectSize()}
     * @throws IllegalStateException if the heap is closed
     * @throws OutOfMemoryError if no page can be had
     */
    public long allocate(long size) {
        if (size < 0 || size > core.maxObjectSize()) {
            throw new IllegalArgumentException("size must be in [0, " + core.maxObjectSize() + "]: " + size);
        }
        return core.allocate(size);
    }

    /**
     * Frees the object named by {@code handle}. Its memory becomes reusable
     * after the next epoch change; accesses already running may finish on it.
     *
     * @throws StaleHandleException if the handle names no live object (double free included)
     * @throws IllegalStateException if the heap is closed
     */
    public void free(long handle) {
        try {
            core.free(handle);
        } catch (CompactFitHeap.StaleHandle e) {
            throw new StaleHandleException(handle);
        }
    }

    /**
     * Returns the size in bytes of the object named by {@code handle}.
     *
     * @throws StaleHandleException if the handle names no live object
     */
    public long size(long handle) {
        try {
            return core.size(handle);
        } catch (CompactFitHeap.StaleHandle e) {
            throw new StaleHandleException(handle);
        }
    }

    /**
     * Returns a segment of the object named by {@code handle}, valid until the
     * current epoch closes; after that every access through it throws
     * {@link IllegalStateException} and the caller must resolve again.
     *
     * @throws StaleHandleException if the handle names no live object
     */
    public MemorySegment segment(long handle) {
        try {
            return core.resolve(handle);
        } catch (CompactFitHeap.StaleHandle e) {
            throw new StaleHandleException(handle);
        }
    }

    /**
     * Runs {@code reader} on the object's segment and returns its result,
     * rerunning it on a fresh segment if a compaction closed the epoch meanwhile.
     *
     * @throws StaleHandleException if the handle names no live object
     * @throws IllegalStateException if the heap is closed
     */
    public <R> R read(long handle, Function<? super MemorySegment, ? extends R> reader) {
        MemorySegment s = segment(handle);
        try {
            return reader.apply(s);
        } catch (IllegalStateException e) {
            return readAgain(handle, reader, s, e); // out of line: keeps the fast path small enough to inline
        }
    }

    private <R> R readAgain(long handle, Function<? super MemorySegment, ? extends R> reader, MemorySegment s,
            IllegalStateException e) {
        for (;;) {
            retryOrThrow(s, e);
            s = segment(handle);
            try {
                return reader.apply(s);
            } catch (IllegalStateException again) {
                e = again;
            }
        }
    }

    /**
     * Runs {@code writer} on the object's segment, rerunning it on a fresh
     * segment if a compaction closed the epoch meanwhile (what an interrupted
     * attempt wrote has been moved with the object; the rerun overwrites it).
     *
     * @throws StaleHandleException if the handle names no live object
     * @throws IllegalStateException if the heap is closed
     */
    public void write(long handle, Consumer<? super MemorySegment> writer) {
        MemorySegment s = segment(handle);
        try {
            writer.accept(s);
        } catch (IllegalStateException e) {
            writeAgain(handle, writer, s, e);
        }
    }

    private void writeAgain(long handle, Consumer<? super MemorySegment> writer, MemorySegment s,
            IllegalStateException e) {
        for (;;) {
            retryOrThrow(s, e);
            s = segment(handle);
            try {
                writer.accept(s);
                return;
            } catch (IllegalStateException again) {
                e = again;
            }
        }
    }

    /** Reads the {@code long} at {@code offset} of the object (retrying across epoch changes). */
    public long getLong(long handle, long offset) {
        MemorySegment s = segment(handle);
        try {
            return s.get(ValueLayout.JAVA_LONG_UNALIGNED, offset);
        } catch (IllegalStateException e) {
            return readAgain(handle, seg -> seg.get(ValueLayout.JAVA_LONG_UNALIGNED, offset), s, e);
        }
    }

    /** Writes the {@code long} at {@code offset} of the object (retrying across epoch changes). */
    public void setLong(long handle, long offset, long value) {
        MemorySegment s = segment(handle);
        try {
            s.set(ValueLayout.JAVA_LONG_UNALIGNED, offset, value);
        } catch (IllegalStateException e) {
            writeAgain(handle, seg -> seg.set(ValueLayout.JAVA_LONG_UNALIGNED, offset, value), s, e);
        }
    }

    private void retryOrThrow(MemorySegment s, IllegalStateException e) {
        if (s.scope().isAlive()) {
            throw e; // not ours: the user's function failed on its own
        }
        if (core.isClosed()) {
            throw new IllegalStateException("compacting heap is closed", e);
        }
        Thread.onSpinWait(); // the epoch closed under us: resolve again
    }

    /**
     * Compacts now: makes freed memory reusable and moves objects so that
     * every size class has at most one not-full page, in increments of at
     * most iota bytes; emptied pages go back to the page source (and the OS).
     * Works also when kappa is infinite, which turns off only the automatic
     * compaction that keeps the bound. Returns the bytes moved.
     *
     * @throws IllegalStateException if the heap is closed
     */
    public long compact() {
        return core.compact();
    }

    /**
     * Moves the object named by {@code handle} to another block of its size
     * class now, as one compaction increment (then restores kappa). Its handle
     * stays valid; segments of the current epoch die. Meant for tests of the
     * access protocol and for moving a single object out of a page.
     *
     * @throws StaleHandleException if the handle names no live object
     * @throws IllegalStateException if the heap is closed
     */
    public void relocate(long handle) {
        try {
            core.relocate(handle);
        } catch (CompactFitHeap.StaleHandle e) {
            throw new StaleHandleException(handle);
        }
    }

    /** Returns a snapshot of the heap's counters. */
    public CompactingHeapStats stats() {
        int[] notFull = new int[core.sizeClasses().count()];
        long[] v = core.snapshot(notFull);
        return new CompactingHeapStats(v[0], v[1], v[2], v[3], v[4], notFull, v[5], v[6], v[8], v[9], v[10], v[11],
                v[12]);
    }

    /** Largest object size this heap serves (its page size). */
    public long maxObjectSize() {
        return core.maxObjectSize();
    }

    /** The partial compaction bound ({@link #KAPPA_INFINITE} if compaction is off). */
    public int kappa() {
        return core.kappa();
    }

    /** The compaction increment in bytes. */
    public long iota() {
        return core.iota();
    }

    /** Number of size classes; {@link CompactingHeapStats#notFullPages()} has one entry per class. */
    public int sizeClassCount() {
        return core.sizeClasses().count();
    }

    /** Block size of size class {@code cls}. */
    public int blockSize(int cls) {
        return core.blockSize(cls);
    }

    /**
     * Frees all memory of the heap. Segments handed out become inaccessible;
     * later calls throw {@link IllegalStateException}. Must not race with
     * {@link #free} or {@link #allocate} that expect to succeed.
     */
    @Override
    public void close() {
        core.close();
    }

    /** Builder of {@link CompactingHeap}s. */
    public static final class Builder {
        private int kappa = 2;
        private long iota = 64 * 1024;
        private long pageSize = 64 * 1024;
        private long reclaimBatchBytes = 1024 * 1024;
        private SpanHeap spanHeap;
        private boolean mapped;

        private Builder() {
        }

        /**
         * Sets the partial compaction bound: at most {@code kappa} not-full
         * pages per size class, restored by compaction when frees are
         * reclaimed; {@link #KAPPA_INFINITE} turns that automatic compaction off.
         *
         * @throws IllegalArgumentException if {@code kappa < 1}
         */
        public Builder kappa(int kappa) {
            if (kappa < 1) {
                throw new IllegalArgumentException("kappa must be >= 1: " + kappa);
            }
            this.kappa = kappa;
            return this;
        }

        /**
         * Sets the compaction increment: bytes moved per logically atomic step
         * (at least one object moves per step).
         *
         * @throws IllegalArgumentException if {@code iota < 1}
         */
        public Builder iota(long iota) {
            if (iota < 1) {
                throw new IllegalArgumentException("iota must be >= 1: " + iota);
            }
            this.iota = iota;
            return this;
        }

        /**
         * Sets the page size (a power of two from 4 KiB to 1 GiB), which is also
         * the largest object size.
         *
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
         * Sets how many freed bytes collect before an epoch change makes them
         * reusable (and restores kappa). 0 reclaims on every free, as
         * Compact-fit does, at the cost of one handshake per free.
         *
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
         * Takes pages from {@code heap} (one block of the span heap per page)
         * instead of a span heap of its own. The compacting heap does not close
         * {@code heap}; close the compacting heap first.
         */
        public Builder spanHeap(SpanHeap heap) {
            this.spanHeap = java.util.Objects.requireNonNull(heap, "heap");
            this.mapped = false;
            return this;
        }

        /**
         * Takes every page with its own anonymous {@code mmap} and unmaps it
         * when compaction or frees empty it (no native library needed; one system
         * call per page). For tests and comparison.
         */
        public Builder mappedPages() {
            this.mapped = true;
            this.spanHeap = null;
            return this;
        }

        /**
         * Returns a new heap. Unless {@link #spanHeap} or {@link #mappedPages}
         * was called, it takes its pages from a span heap of its own.
         */
        public CompactingHeap build() {
            PageSource src;
            if (mapped) {
                src = new MappedPageSource(pageSize);
            } else if (spanHeap != null) {
                src = new SpanHeapPageSource(spanHeap, pageSize, false);
            } else {
                src = new SpanHeapPageSource(SpanHeap.create(), pageSize, true);
            }
            return new CompactingHeap(new CompactFitHeap(src, kappa, iota, reclaimBatchBytes));
        }
    }
}
