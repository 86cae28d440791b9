package org.spanheap.internal.compact;

import java.lang.foreign.MemorySegment;
import java.util.function.Consumer;
import org.spanheap.CompactingHeapStats;
import org.spanheap.StaleHandleException;
import org.spanheap.internal.EagerClassInit;
import org.spanheap.internal.HeapEngine;
import org.spanheap.internal.MemoryReleaseEvent;
import org.spanheap.internal.Zeroing;

/**
 * The engine behind {@link org.spanheap.CompactingHeap}: Compact-fit size
 * classes over pages from a {@link PageSource}, large objects mapped one by
 * one, the A2C {@link HandleTable}, and the epoch protocol that lets threads
 * access objects while blocks move.
 *
 * <h2>Who does what</h2>
 * <ul>
 * <li><b>Allocate</b> (any thread): a small object from a platform thread,
 *     with the background thread on, takes a slot of the page the thread owns
 *     and an index of its magazine without a lock ({@link PageOwnership});
 *     otherwise under the lock of one allocation lane of the object's size
 *     class only. Fills the block outside any lock; publishes the entry.
 *     Classes never wait for each other, nor do lanes.</li>
 * <li><b>Free</b> (any thread, no lock): kills the entry (one CAS); then a
 *     plain push on the page's deferred frees if the caller owns the page, a
 *     CAS push on its thread-free list if another thread does, else a push of
 *     the index on its thread's stripe of the lock-free <em>limbo</em>. The
 *     block stays untouched until an epoch change makes it unreachable.</li>
 * <li><b>Rounds</b> ({@link Rounds}: one at a time; run by the
 *     {@link Compactor} thread, by {@code compact()}, or by a freeing thread
 *     when frees reclaim at once or the compactor has fallen far behind): one
 *     round drains the limbo, plans moves of at most ι bytes for the
 *     classes over their bound and marks those entries MOVING, then closes
 *     the epoch once (one handshake), copies and publishes the moves, and
 *     releases the moved-from and the freed blocks. So one handshake pays for
 *     a whole batch of frees and an increment of compaction, and it runs off
 *     the allocating threads.</li>
 * </ul>
 * The mechanisms live beside this class: {@link Rounds} (the round and who
 * runs it), {@link Epochs} (the access epochs), {@link BackgroundPacing} (when the
 * background thread compacts, and from which pages), {@link Evacuation} (a
 * round's moves), {@link LargeObjects} (objects above the size classes),
 * {@link Limbo} and {@link LimboRelease} (frees waiting for an epoch change,
 * and their release), {@link EmptiedPages} (pages given back after a round),
 * {@link PageOwnership} with {@link ThreadPages}, {@link RemoteFrees} and
 * {@link DeferredSlots} (thread-owned pages), {@link HeapCensus} (statistics).
 * This class holds the access path, allocation and free, and the heap's life.
 *
 * <h2>Access protocol (epochs)</h2>
 * A resolve reads the current universe (volatile), then the entry's state
 * (acquire), and returns a slice of the universe, a segment over the whole
 * address space bound to the current {@link Epoch}'s shared arena. A round
 * marks the entries it moves MOVING before it publishes the next epoch and
 * closes the previous one: the JDK's close of a shared arena returns only when
 * no thread is inside an access through one of its segments, and every later
 * access through them throws {@code IllegalStateException}. After the close,
 * nobody reads or writes the blocks to move or the blocks freed before the
 * round began, so the round may copy, reuse and unmap them. A resolve that sees
 * MOVING waits for the publication (at most one round); a resolve that read
 * the old epoch gets a segment that throws, and the caller resolves again. A
 * freed block, its page and its handle index are reused only after the epoch
 * in which it was freed has been closed, so no segment ever reaches memory of
 * another object.
 */
public final class CompactFitHeap {

    static { // slow-path classes, initialized before a deep caller can poison them (see EagerClassInit)
        EagerClassInit.initialize(CompactionRoundEvent.class, EpochChangeEvent.class, MemoryReleaseEvent.class,
                StaleHandleException.class);
    }

    private final PageReserve source;
    private final long pageSize;
    private final BlockSizes sizes;
    /**
     * The size classes' lanes, class by class: class {@code c}'s from
     * {@code firstLane[c]} to before {@code firstLane[c + 1]}. A lane has its
     * own pages and lock, so threads that allocate in one class at once need
     * not wait for each other (a single lock per class was the most contended
     * point of a 2-thread cache that writes 100 B values: 35,000 involuntary
     * context switches per thread in 5 s, against 1,300 with two lanes).
     */
    private final SizeClassPages[] classes;
    private final int[] firstLane;
    private final int lanes;
    private final HandleTable table = new HandleTable();
    private final int kappa;
    private final long iota;
    /** The access epochs: the universe a resolve slices, the number a free tags, the heap's end. */
    private final Epochs epochs = new Epochs();
    /** Thread-owned pages of the small classes; every class is lane-allocated without the background thread. */
    private final PageOwnership ownership;
    /** Killed indices waiting for an epoch change: striped lock-free stacks ({@link Limbo}). */
    private final Limbo limbo = new Limbo(table);
    /** Killed indices of the lanes that keep ready entries, four stacks per lane ({@link LaneLimbo}). */
    private final LaneLimbo laneLimbo;
    /** Objects above the largest size class, each in a mapping. */
    private final LargeObjects large;
    /** The rounds: reclaim, compaction, epoch changes. */
    private final Rounds rounds;
    private final HeapCensus census;

    private CompactFitHeap(PageReserve source, int lanes, int kappa, long iota, long reclaimBatchBytes,
            long passIntervalNanos, boolean background, boolean threadOwnedPages) {
        this(source, lanes, kappa, iota, reclaimBatchBytes, passIntervalNanos, background, background, threadOwnedPages);
    }

    /**
     * @param background whether rounds are paced as the background thread paces them
     * @param startThread whether to start that thread (false: the caller drives {@link #backgroundTick})
     * @param threadOwnedPages whether the small classes are allocated from thread-owned pages
     *        (only with the thread started and a reclaim batch above 0)
     */
    private CompactFitHeap(PageReserve source, int lanes, int kappa, long iota, long reclaimBatchBytes,
            long passIntervalNanos, boolean background, boolean startThread, boolean threadOwnedPages) {
        this.source = source;
        this.pageSize = source.pageSize();
        this.sizes = new BlockSizes(pageSize);
        this.lanes = lanes;
        this.firstLane = new int[sizes.count() + 1];
        for (int c = 0; c < sizes.count(); c++) {
            firstLane[c + 1] = firstLane[c] + lanesOf(sizes.blockSize(c));
        }
        this.classes = new SizeClassPages[firstLane[sizes.count()]];
        for (int c = 0; c < sizes.count(); c++) {
            for (int i = firstLane[c]; i < firstLane[c + 1]; i++) {
                classes[i] = new SizeClassPages(i, c, sizes.blockSize(c), pageSize, table.pageIds);
            }
        }
        this.laneLimbo = new LaneLimbo(table, classes.length);
        EmptiedPages emptied = new EmptiedPages(source);
        this.large = new LargeObjects(table, source);
        this.kappa = kappa;
        this.iota = iota;
        PendingSlots pendingSlots = new PendingSlots(emptied);
        this.rounds = new Rounds(table, classes, source, limbo, new LimboRelease(table, classes, laneLimbo, large, emptied),
                pendingSlots, new Evacuation(table, classes, iota, emptied), emptied, large,
                new BackgroundPacing(classes, limbo, kappa, pageSize, passIntervalNanos, background), epochs, kappa,
                reclaimBatchBytes);
        boolean[] owned = new boolean[sizes.count()];
        for (int c = 0; c < sizes.count(); c++) {
            owned[c] = threadOwnedPages && startThread && reclaimBatchBytes > 0 && pageSize / sizes.blockSize(c) >= OWNED_MIN_BLOCKS;
            for (int i = firstLane[c]; i < firstLane[c + 1]; i++) {
                classes[i].reuseReady = startThread && reclaimBatchBytes > 0 && !owned[c];
            }
        }
        this.ownership = new PageOwnership(rounds, epochs, table, source, limbo, pendingSlots, classes, firstLane, owned);
        this.census = new HeapCensus(table, classes, sizes.count(), pageSize, source, limbo, laneLimbo, pendingSlots,
                ownership, large);
        if (startThread && reclaimBatchBytes > 0) {
            rounds.start(new Compactor(this));
        }
    }

    /**
     * A heap over pages of {@code spanHeap} (a reference is held until close).
     *
     * @param owned closed with the heap (the span heap if it was made for this heap), or null
     */
    public static CompactFitHeap overSpanHeap(HeapEngine spanHeap, AutoCloseable owned, long pageSize, int lanes,
            int kappa, long iota, long reclaimBatchBytes, long passIntervalNanos, boolean background,
            boolean threadOwnedPages) {
        return new CompactFitHeap(new PageReserve(new SpanHeapPageSource(spanHeap, pageSize, owned)), lanes, kappa,
                iota, reclaimBatchBytes, passIntervalNanos, background, threadOwnedPages);
    }

    /**
     * A heap over mapped pages paced as with a background thread, but without one: its rounds run
     * only when the caller calls {@link #backgroundTick} (or a free finds a batch full), so a test
     * decides exactly when the background work happens.
     */
    static CompactFitHeap withoutBackgroundThread(long pageSize, int kappa, long iota, long reclaimBatchBytes,
            long passIntervalNanos) {
        return new CompactFitHeap(new PageReserve(new MappedPageSource(pageSize)), 1, kappa, iota,
                reclaimBatchBytes, passIntervalNanos, true, false, false);
    }

    /**
     * As {@link #withoutBackgroundThread(long, int, long, long, long)}, with the rounds handing
     * freed entries to their lanes for reuse ({@link ReadyEntries}) as with the thread.
     */
    static CompactFitHeap withoutBackgroundThreadReusingEntries(long pageSize, int kappa, long iota,
            long reclaimBatchBytes, long passIntervalNanos) {
        CompactFitHeap heap = withoutBackgroundThread(pageSize, kappa, iota, reclaimBatchBytes, passIntervalNanos);
        for (SizeClassPages c : heap.classes) {
            c.reuseReady = true;
        }
        return heap;
    }

    /** A heap over pages mapped one by one. */
    public static CompactFitHeap overMappedPages(long pageSize, int lanes, int kappa, long iota,
            long reclaimBatchBytes, long passIntervalNanos, boolean background, boolean threadOwnedPages) {
        return new CompactFitHeap(new PageReserve(new MappedPageSource(pageSize)), lanes, kappa, iota,
                reclaimBatchBytes, passIntervalNanos, background, threadOwnedPages);
    }

    public int notFullPagesPerClass() {
        return kappa;
    }

    public int allocationLanes() {
        return lanes;
    }

    public long movedBytesPerRound() {
        return iota;
    }

    public long pageSize() {
        return pageSize;
    }

    /** Largest object served from a size class; larger ones are mapped one by one. */
    public long maxSmallObjectSize() {
        return sizes.maxSmall();
    }

    public int sizeClassCount() {
        return sizes.count();
    }

    /** Off-heap bytes an object of {@code size} takes: its block, or its mapping for a large object. */
    public long footprint(long size) {
        return size <= sizes.maxSmall() ? sizes.blockSize(sizes.classOf(size)) : OsMemory.mappedSize(size);
    }

    public int blockSize(int cls) {
        return sizes.blockSize(cls);
    }

    public boolean isClosed() {
        return epochs.closed;
    }

    /** {@return the heap's name in JFR events} */
    public String name() {
        return rounds.heapName;
    }

    /** Names the heap in later JFR events (its MXBean's name). */
    public void name(String name) {
        rounds.heapName = name;
    }

    // ---- lock-free access path -------------------------------------------

    /**
     * Returns a segment of the object named by {@code handle}, bound to the
     * current epoch.
     *
     * @throws StaleHandleException if the handle names no live object
     * @throws IllegalStateException if the heap is closed
     */
    public MemorySegment resolve(long handle) {
        // One allocation site, and nothing else returned: a caller that keeps the segment to
        // itself gets it scalar-replaced by C2 (no object per access). A return of the slow
        // path's own slice would merge two allocations and make every resolve allocate.
        for (int spins = 0;; spins++) {
            // the universe (volatile), the table (volatile), the state (volatile: ordered after the
            // universe and against a free's kill and epoch read, see Epochs), the address
            // (acquire), the state again (acquire): an entry killed and reused between the two
            // state loads changed its generation, so the address of a newer object is never used
            MemorySegment u = epochs.universe;
            long[][] words = table.words();
            int index = (int) handle;
            int chunk = index >>> HandleTable.CHUNK_SHIFT;
            if (chunk < words.length) {
                long[] w = words[chunk];
                int o = HandleTable.wordOf(index);
                long st = HandleTable.stateVolatile(w, o);
                if ((st & ~HandleTable.SIZE_MASK) == table.expectedState(handle)) {
                    long address = HandleTable.addressIfUnchanged(w, o, st);
                    if (address != -1) {
                        return u.asSlice(address, st & HandleTable.SIZE_MASK);
                    }
                }
            }
            awaitResolvable(handle, spins);
        }
    }

    /**
     * Returns a read-only segment of the object named by {@code handle}, bound to the current
     * epoch. Unlike {@link #resolve} it does not wait while a round moves the object: it
     * returns the object's old place, which holds its bytes until the move's slots are released
     * one epoch later (see {@link Evacuation}), or the new one once published.
     *
     * @throws StaleHandleException if the handle names no live object
     * @throws IllegalStateException if the heap is closed
     */
    public MemorySegment resolveForReading(long handle) {
        for (int spins = 0;; spins++) {
            // as resolve, with MOVING accepted: the address is the old place (plain before the
            // mark) or the new one (release store in publishMoved, after the copy), and the
            // state is loaded again after it, so a kill and a reuse between are seen. A loop of
            // its own, not a flag of resolve's: each keeps one allocation site (see resolve)
            MemorySegment u = epochs.universe;
            long[][] words = table.words();
            int index = (int) handle;
            int chunk = index >>> HandleTable.CHUNK_SHIFT;
            if (chunk < words.length) {
                long[] w = words[chunk];
                int o = HandleTable.wordOf(index);
                long st = HandleTable.stateVolatile(w, o);
                if ((st & ~(HandleTable.SIZE_MASK | HandleTable.MOVING)) == table.expectedState(handle)) {
                    long address = HandleTable.addressIfUnchanged(w, o, st);
                    if (address != -1) {
                        return u.asSlice(address, st & HandleTable.SIZE_MASK).asReadOnly();
                    }
                }
            }
            awaitResolvable(handle, spins);
        }
    }

    /**
     * Forged, stale, closed or moving: throws unless the handle names a live object; while a
     * round moves it, waits a moment (at most one round in all) and returns for another try.
     */
    private void awaitResolvable(long handle, int spins) {
        int index;
        try {
            index = table.liveIndex(handle); // live or moving, else throws
        } catch (StaleHandleException e) {
            throw epochs.closed ? Epochs.closedException() : e;
        }
        long st = table.stateAcquire(index);
        if ((st & HandleTable.MOVING) == 0) {
            if (!HandleTable.isLive(st)) {
                throw new StaleHandleException(handle); // freed between the two loads
            }
            return; // moved meanwhile: the next try takes it
        }
        // a round is copying this block: its handshake and copy take microseconds, but on an
        // overloaded machine the round's thread may need this core, so spin briefly, then
        // yield, then park a moment (the round's thread may be a virtual thread waiting for
        // a carrier: see ClassLock)
        if (spins < 64) {
            Thread.onSpinWait();
        } else if (spins < 128) {
            Thread.yield();
        } else {
            java.util.concurrent.locks.LockSupport.parkNanos(20_000);
        }
    }

    /** Size in bytes of the live object named by {@code handle}. */
    public long size(long handle) {
        try {
            return HandleTable.size(table.stateAcquire(table.liveIndex(handle)));
        } catch (StaleHandleException e) {
            throw epochs.closed ? Epochs.closedException() : e;
        }
    }

    // ---- allocation -----------------------------------------------------------

    /**
     * Allocates an object of {@code size} bytes and returns its handle. Its
     * contents: a copy of {@code contents} if not null (then
     * {@code size == contents.byteSize()}); else what {@code init} writes if
     * not null (the rest unspecified); else zero.
     */
    public long allocate(long size, MemorySegment contents, Consumer<? super MemorySegment> init) {
        if (size > sizes.maxSmall()) {
            return allocateLarge(size, contents, init);
        }
        int cls = sizes.classOf(size);
        if (ownership.owns(cls)) {
            ThreadPages t = ownership.mine();
            if (t != null) {
                return allocateOwned(t, cls, size, contents, init);
            }
        }
        SizeClassPages c = lockLane(cls);
        Page p;
        int index, slot;
        try {
            checkOpen();
            index = c.ready.count() > 0 ? takeReady(c) : HandleTable.NO_INDEX;
            if (index != HandleTable.NO_INDEX) {
                p = table.pageOf(index); // the block's slot is still the entry's: nothing to take
                slot = p.slotOf(table.address(index));
            } else {
                p = c.allocationPage();
                if (p == null) {
                    p = c.newPage(source);
                    c.allocateIn(p);
                }
                index = c.indices.pop(table, SizeClassPages.INDEX_BATCH);
                slot = p.take(index);
                c.refile(p);
            }
            c.liveBlocks++;
            c.allocated++;
            c.allocatedBytes += size;
        } finally {
            c.lock.unlock();
        }
        // The slot is ours but unpublished: no round moves or reuses it (its entry is not LIVE).
        long address = p.addressOf(slot);
        try {
            fill(address, size, contents, init);
        } catch (RuntimeException | Error e) {
            abandon(c, p, slot, index, size);
            throw e;
        }
        return table.publishLive(index, address, size, p);
    }

    /**
     * {@return an entry of lane {@code c}'s {@link ReadyEntries} whose slot can take a new
     * object, or {@code NO_INDEX}} (caller holds the lane's lock). An entry in a page that a
     * round is emptying goes back to its page instead: a new object there would stay behind.
     */
    private int takeReady(SizeClassPages c) {
        for (int i; (i = c.ready.pop(table)) != HandleTable.NO_INDEX;) {
            c.countRelease(table.stateAcquire(i)); // the freed object's release, counted as it is reused
            Page p = table.pageOf(i);
            if (!p.evacuating) {
                return i;
            }
            p.release(p.slotOf(table.address(i))); // not the last block: an evacuating page holds moving or moved-out ones
            c.refile(p);
            c.cacheIndex(table, i);
        }
        return HandleTable.NO_INDEX;
    }

    /**
     * Blocks per page from which a class allocates from thread-owned pages (with a background
     * thread): a page kept by each thread is a small share of such a class's memory.
     */
    static final int OWNED_MIN_BLOCKS = 64;

    /**
     * Allocation from the calling thread's own page of class {@code cls}, without a lock: a
     * slot of the page and an index of the thread's magazine; the fill and the publication as
     * in {@link #allocate}.
     */
    private long allocateOwned(ThreadPages t, int cls, long size, MemorySegment contents,
            Consumer<? super MemorySegment> init) {
        checkOpen();
        Page p = ownership.pageWithRoom(t, cls);
        int index = t.takeIndex(table, cls);
        int slot = p.take(index);
        t.allocated++;
        t.allocatedBytes += size;
        // the slot is ours and unpublished: no round moves or reuses it (the page is owned)
        long address = p.addressOf(slot);
        try {
            fill(address, size, contents, init);
        } catch (RuntimeException | Error e) {
            if (p.ownerPages == t) { // still ours (a give-up by a heap closing meanwhile is the only other case)
                p.release(slot);
            }
            t.putIndex(table, cls, index);
            t.allocated--;
            t.allocatedBytes -= size;
            throw e;
        }
        return table.publishLive(index, address, size, p);
    }

    /**
     * Zeroes, copies or initialises a block we reserved, through the current
     * epoch's universe: a heap closed meanwhile makes this throw instead of
     * touching returned memory; an epoch change meanwhile (a round) makes it
     * retry (so an initialiser may run twice).
     */
    private void fill(long address, long size, MemorySegment contents, Consumer<? super MemorySegment> init) {
        boolean interrupted = Thread.currentThread().isInterrupted();
        for (;;) {
            MemorySegment u = epochs.universe;
            try {
                if (contents != null) {
                    MemorySegment.copy(contents, 0, u, address, size); // no slice: no garbage per copy
                } else if (init != null) {
                    init.accept(u.asSlice(address, size));
                } else {
                    Zeroing.zero(u.asSlice(address, size));
                }
                return;
            } catch (IllegalStateException e) {
                if (u.scope().isAlive() || (contents != null && !contents.scope().isAlive())) {
                    throw e; // not the epoch: the caller's own segment is closed or confined elsewhere
                }
                if (!interrupted) {
                    Thread.interrupted(); // the epoch's close set it on JDK 25 (CompactingHeap.retryOrThrow)
                }
                checkOpen();
            }
        }
    }

    /** Gives back a reserved, unpublished slot and index after a failed fill. */
    private void abandon(SizeClassPages c, Page p, int slot, int index, long size) {
        c.lock.lock();
        try {
            if (epochs.closed) {
                return;
            }
            if (p.ownerPages == null) {
                p.release(slot);
                c.liveBlocks--;
                c.allocated--;
                c.allocatedBytes -= size;
                c.refile(p);
                c.cacheIndex(table, index);
                return;
            }
        } finally {
            c.lock.unlock();
        }
        // a thread adopted the page during the fill: its slots are the owner's now, so the block
        // leaves through a free (a kill, then the page's thread-free list), as any other
        long handle = table.publishLive(index, p.addressOf(slot), size, p);
        try {
            free(handle);
        } catch (IllegalStateException e) {
            // closed meanwhile: its memory went with the heap
        }
    }

    /**
     * A large object, never moved: a run of a large segment, or above
     * {@link LargeSegments#MAX_OBJECT} its own zeroed mapping (see {@link LargeObjects}).
     * Its entry has no page.
     */
    private long allocateLarge(long size, MemorySegment contents, Consumer<? super MemorySegment> init) {
        LargeObjects.checkSize(size);
        checkOpen();
        boolean run = LargeSegments.fits(size);
        long address;
        boolean dirty;
        if (run) {
            large.lock.lock();
            try {
                checkOpen(); // close unmaps the segments under this lock
                address = large.takeRun(size);
            } finally {
                large.lock.unlock();
            }
            dirty = (address & 1) != 0;
            address &= ~1L;
        } else {
            address = large.map(size); // zeroed by the OS
            dirty = false;
        }
        int index;
        try {
            if (contents != null || init != null || dirty) {
                fill(address, size, contents, init); // zeroes a reused mapping when there is nothing to copy
            }
            large.lock.lock();
            try {
                checkOpen(); // close() frees what is published; past this point close waits for us
                index = large.publish(address, size);
            } finally {
                large.lock.unlock();
            }
        } catch (RuntimeException | Error e) {
            if (run) {
                large.giveUnpublishedRun(address, size); // a heap closed meanwhile has let go of the segments
            } else {
                large.unmapUnpublished(address, size);
            }
            throw e;
        }
        return table.handleOf(index);
    }

    /**
     * Locks a lane of class {@code cls}: the thread's own (by its id) if free,
     * else the first free one after it, else waits for its own. So two threads
     * whose ids share a lane, or a thread that meets the compactor in its lane,
     * take another lane rather than wait; a busy lane costs one read of its lock.
     */
    private SizeClassPages lockLane(int cls) {
        int base = firstLane[cls];
        int n = firstLane[cls + 1] - base;
        if (n == 1) {
            SizeClassPages c = classes[base];
            c.lock.lock();
            return c;
        }
        int home = (int) (Thread.currentThread().threadId() % n);
        for (int i = 0; i < n; i++) {
            SizeClassPages c = classes[base + (home + i) % n];
            if (c.lock.tryLock()) {
                return c;
            }
        }
        SizeClassPages c = classes[base + home];
        c.lock.lock();
        return c;
    }

    /**
     * Blocks per page from which a class gets {@link #lanes} lanes (blocks up to 1 KiB with 64 KiB
     * pages); larger classes keep one: their allocations are fewer and slower (the copy dominates
     * the lock), and every lane's partly used page is worth more of their memory.
     */
    private static final int LANE_MIN_BLOCKS = 64;

    /** Lanes of a class of {@code blockSize}: {@link #lanes} when a page holds many blocks, else one. */
    private int lanesOf(int blockSize) {
        return pageSize / blockSize >= LANE_MIN_BLOCKS ? lanes : 1;
    }

    // ---- free -------------------------------------------------------------------

    /**
     * Frees the object named by {@code handle}: kills the entry and leaves the
     * block in limbo until the next epoch change. When the limbo holds
     * {@link Rounds#HELP_FACTOR} reclaim batches, waits for the round in progress.
     *
     * @throws StaleHandleException if the handle names no live object (double free included)
     * @throws IllegalStateException if the heap is closed
     */
    public void free(long handle) {
        long state;
        try {
            state = table.kill(handle);
        } catch (StaleHandleException e) {
            throw epochs.closed ? Epochs.closedException() : e;
        }
        int index = (int) handle;
        if ((state & HandleTable.MOVING) == 0) { // not moving: its page and address are final (HandleTable#publishMoved)
            Page p = table.pageOf(index);
            if (p != null) {
                ThreadPages o = p.ownerPages; // plain: names this thread only if it owns the page (PageOwnership)
                if (o != null && o.thread == Thread.currentThread()) {
                    ownership.deferFree(o, p, index, state);
                    return;
                }
                if (p.remoteFree.push(table, index)) {
                    return; // the owner reclaims it
                }
                SizeClassPages c = p.sizeClass;
                if (c.reuseReady && !HandleTable.killExhausts(state)) {
                    laneLimbo.push(c.index, index); // to the lane's ready entries, unread, after the epoch
                    rounds.limboPushed(limbo.count(HandleTable.size(state)));
                    return;
                }
            }
        }
        rounds.limboPushed(limbo.push(index, HandleTable.size(state)));
    }

    /**
     * Gives up the calling thread's owned pages and those of terminated threads, so that a
     * call that compacts or reports the heap sees every free of theirs in the limbo; {@return
     * whether that pushed frees on the limbo}. Caller holds no lock.
     */
    private boolean settleOwnedPages() {
        if (epochs.closed) {
            return false; // the caller throws: the heap is closed
        }
        boolean pushed = ownership.giveUpMine() > 0;
        return ownership.adoptDeadThreads() | pushed;
    }

    // ---- the background thread's steps ----------------------------------------------

    /**
     * One step of the background thread: runs a round if there is work ({@link #hasWork}); returns
     * whether it ran one. {@code idle}: the thread woke from its idle wait, not from a free.
     */
    boolean backgroundTick(boolean idle) {
        if (idle) {
            ownership.adoptDeadThreads();
            if (large.lazyRunsDue()) {
                rounds.purgeLazyRuns(); // no round needed: lazy granules are free, nobody reaches them
            }
        }
        if (hasWork(idle)) {
            rounds.backgroundRound();
            return true;
        }
        return false;
    }

    /** Whether the background thread has a round to run (see {@link Rounds#hasWork}); its thread only. */
    boolean hasWork(boolean idle) {
        return rounds.hasWork(idle, operations());
    }

    /** Objects allocated plus objects released so far: racy reads of the counters, a hint of activity. */
    private long operations() {
        long n = large.allocated + large.released + ownership.operations();
        for (SizeClassPages c : classes) {
            n += c.allocated + c.released;
        }
        return n;
    }

    // ---- rounds on request -------------------------------------------------------------

    /** See {@link Rounds#compact}. */
    public long compact() {
        settleOwnedPages();
        return rounds.compact();
    }

    /** See {@link Rounds#trim}. */
    public long trim() {
        settleOwnedPages();
        return rounds.trim();
    }

    /** See {@link Rounds#relocate}. */
    public boolean relocate(long handle) {
        settleOwnedPages();
        return rounds.relocate(handle);
    }

    /** Bytes the large segments map but do not count as committed: granules never touched or given back (tests). */
    long segmentBytesNotCommitted() {
        return large.segmentBytesNotCommitted();
    }

    // ---- statistics ---------------------------------------------------------------

    /**
     * The bytes of the heap's memory now in RAM, by asking the OS (see
     * {@link org.spanheap.CompactingHeap#residentBytes}). Collects the ranges under the round
     * lock, so that none of them is given back while it looks (only rounds, {@code trim} and
     * {@code close} give memory back, and they take that lock), then asks the OS after
     * releasing it: a round may give a range back meanwhile, which then counts 0.
     */
    public long residentBytes() {
        MemoryRanges ranges;
        rounds.lock.lock();
        try {
            checkOpen();
            if (!OsMemory.residencyKnown()) {
                return rounds.committedBytes();
            }
            ranges = census.ranges();
        } finally {
            rounds.lock.unlock();
        }
        return ranges.residentBytes();
    }

    /**
     * A snapshot of the counters. Takes the round lock (so it waits for a
     * round in progress) to walk the limbo, whose objects are no longer live.
     */
    public CompactingHeapStats stats() {
        boolean pushed = settleOwnedPages();
        rounds.lock.lock();
        try {
            checkOpen();
            if (pushed && rounds.hasCompactor()) {
                rounds.reclaim(); // reclaim what the owned pages held, as their frees would have been
            }
            synchronized (ownership) { // no terminated thread's pages half given up while we count (PageOwnership#adoptDeadThreads)
                return census.count(rounds, epochs);
            }
        } finally {
            rounds.lock.unlock();
        }
    }

    // ---- close ------------------------------------------------------------------------

    /**
     * Frees all memory. Every segment handed out dies; every later call throws
     * {@link IllegalStateException}. Idempotent.
     */
    public void close() {
        rounds.stopCompactor(); // outside the round lock: the compactor may be waiting for it
        rounds.lock.lock();
        large.lock.lock();
        for (SizeClassPages c : classes) {
            c.lock.lock();
        }
        try {
            if (!epochs.closeForGood(rounds.heapName)) { // every access in progress finishes; every later one throws
                return;
            }
            // large objects: live, or freed and not yet released (in limbo)
            int[] heads = new int[Limbo.STRIPES];
            limbo.drain(heads);
            for (int h : heads) {
                for (int i = h; i != HandleTable.NO_INDEX; i = table.link(i)) {
                    large.unmapIfLarge(i);
                }
            }
            for (int i = 1, n = table.capacity(); i < n; i++) {
                if (HandleTable.isLive(table.stateAcquire(i))) {
                    large.unmapIfLarge(i);
                }
            }
            table.close();
            large.segments.unmapAll();
            for (SizeClassPages c : classes) {
                while (c.pageCount() > 0) {
                    Page p = c.pageAt(c.pageCount() - 1);
                    c.removePage(p);
                    source.freePage(p.base);
                }
            }
            source.close();
        } finally {
            for (SizeClassPages c : classes) {
                c.lock.unlock();
            }
            large.lock.unlock();
            rounds.lock.unlock();
        }
    }

    void checkOpen() {
        epochs.checkOpen();
    }
}
