package org.spanheap.internal.compact;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.ReentrantLock;

import org.spanheap.internal.NativeHeap;

/**
 * The engine behind {@link org.spanheap.CompactingHeap}: Compact-fit size
 * classes over pages from a {@link PageSource}, the A2C handle table, and
 * the epoch protocol that lets other threads access objects while blocks
 * move.
 *
 * <h2>Locking</h2>
 * Allocation, free and every compaction increment run under one heap lock
 * (Compact-fit's "size-class lock" level, with one lock for all classes).
 * Resolving a handle and accessing an object take no lock.
 *
 * <h2>Access protocol (epochs)</h2>
 * A resolve reads the current {@link Epoch} (volatile), then the entry's
 * state word (acquire), and returns a slice of the epoch's universe segment.
 * To move blocks, an increment, under the lock: marks the entries MOVING,
 * publishes the next epoch, closes the previous one (handshake: no thread is
 * inside an access through an old segment any more, and none can start one),
 * copies, publishes the new addresses clearing MOVING, and releases the old
 * blocks. A resolve that sees MOVING spins until the increment publishes (at
 * most one increment, bounded by iota). A resolve that read the old epoch
 * gets a segment that throws {@code IllegalStateException} on access; the
 * caller resolves again. The same close makes freeing safe: a freed block
 * waits in limbo, still owned by nobody else, until the epoch in which it was
 * freed has been closed; only then may its slot, its page and its handle
 * index be reused. So no segment ever reaches memory of another object.
 */
public final class CompactFitHeap {

    private static final MemorySegment RAW = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    private final PageSource source;
    private final SizeClasses classes;
    private final SizeClass[] sizeClasses;
    private final HandleTable table = new HandleTable();
    private final ReentrantLock lock = new ReentrantLock();
    private final int kappa;
    private final long iota;
    private final long reclaimBatchBytes;

    /** Current epoch; written only under the lock, always before {@link #universe}. */
    private volatile Epoch epoch = new Epoch(0);
    /** {@code epoch.universe}, in its own field so that a resolve reads one volatile. */
    private volatile MemorySegment universe = epoch.universe;
    private volatile boolean closed;

    // ---- under the lock ----
    private Page[] pages = new Page[64];
    private int[] freePageIds = new int[64];
    private int freePageIdCount;
    private int pageIdHigh;
    /** Pages per group of {@link PageSource#groupSize()} bytes, keyed by base / groupSize. */
    private final java.util.HashMap<Long, int[]> groupPages = new java.util.HashMap<>();
    private final long groupSize;
    private int[] limbo = new int[256];
    private int limboCount;
    private long limboBytes;
    private final boolean[] dirty;
    private int dirtyCount;
    private long liveBytes, liveObjects;
    private long movedBytes, movedBlocks, increments, epochsClosed;
    private long maxIncrementNanos, totalIncrementNanos, maxCloseNanos;
    // planned moves of one increment
    private int[] mvIndex = new int[16], mvSrcSlot = new int[16], mvDstSlot = new int[16];
    private Page[] mvDst = new Page[16];

    /**
     * @param kappa partial compaction bound, at least 1; {@link Integer#MAX_VALUE} turns compaction off
     * @param iota compaction increment in bytes (at least one block moves per increment)
     * @param reclaimBatchBytes freed bytes collected before an epoch change makes them reusable
     */
    public CompactFitHeap(PageSource source, int kappa, long iota, long reclaimBatchBytes) {
        this.source = source;
        this.classes = new SizeClasses(source.pageSize());
        this.sizeClasses = new SizeClass[classes.count()];
        for (int i = 0; i < sizeClasses.length; i++) {
            sizeClasses[i] = new SizeClass(i, classes.blockSize(i), source.pageSize());
        }
        this.dirty = new boolean[sizeClasses.length];
        this.groupSize = source.groupSize();
        this.kappa = kappa;
        this.iota = iota;
        this.reclaimBatchBytes = reclaimBatchBytes;
    }

    public long maxObjectSize() {
        return classes.maxSize();
    }

    public int kappa() {
        return kappa;
    }

    public long iota() {
        return iota;
    }

    public SizeClasses sizeClasses() {
        return classes;
    }

    // ---- lock-free access path -------------------------------------------

    /**
     * Returns a segment of the object named by {@code handle}, bound to the
     * current epoch. Throws {@link StaleHandle} for a handle that is not live.
     */
    public MemorySegment resolve(long handle) {
        // fast path: one volatile load of the universe, one of the table, the state (acquire) and the address
        MemorySegment universe = this.universe; // volatile read, ordered before the table reads
        long[] entries = table.entries();
        int index = (int) handle;
        if (index > 0 && index < (entries.length >> 1)) {
            long st = HandleTable.stateAcquire(entries, index);
            if ((st & ~HandleTable.SIZE_MASK) == ((handle & HandleTable.GEN_MASK) | HandleTable.LIVE)) {
                return universe.asSlice(HandleTable.address(entries, index), st & HandleTable.SIZE_MASK);
            }
        }
        return resolveSlow(handle);
    }

    /** Forged, stale or moving: spin while the block moves (at most one increment), else throw. */
    private MemorySegment resolveSlow(long handle) {
        int index = (int) handle;
        long expect = (handle & HandleTable.GEN_MASK) | HandleTable.LIVE;
        for (;;) {
            MemorySegment universe = this.universe;
            long[] entries = table.entries();
            if (index <= 0 || index >= (entries.length >> 1)) {
                throw new StaleHandle(handle); // forged: outside the table
            }
            long st = HandleTable.stateAcquire(entries, index);
            if ((st & (HandleTable.GEN_MASK | HandleTable.LIVE)) != expect) {
                throw new StaleHandle(handle);
            }
            if ((st & HandleTable.MOVING) == 0) {
                return universe.asSlice(HandleTable.address(entries, index), st & HandleTable.SIZE_MASK);
            }
            Thread.onSpinWait(); // an increment is copying this block
        }
    }

    /** Size in bytes of the live object named by {@code handle}. */
    public long size(long handle) {
        int index = (int) handle;
        long[] entries = table.entries();
        if (index <= 0 || index >= (entries.length >> 1)) {
            throw new StaleHandle(handle);
        }
        long st = HandleTable.stateAcquire(entries, index);
        if ((st & (HandleTable.GEN_MASK | HandleTable.LIVE)) != ((handle & HandleTable.GEN_MASK) | HandleTable.LIVE)) {
            throw new StaleHandle(handle);
        }
        return st & HandleTable.SIZE_MASK;
    }

    public boolean isClosed() {
        return closed;
    }

    /** Thrown by the engine for a handle that names no live object; the API maps it to its public type. */
    public static final class StaleHandle extends RuntimeException {
        private static final long serialVersionUID = 1L;
        public final long handle;

        StaleHandle(long handle) {
            super(null, null, false, false);
            this.handle = handle;
        }
    }

    // ---- allocation and free ---------------------------------------------

    public long allocate(long size) {
        int ci = classes.classOf(size);
        SizeClass c = sizeClasses[ci];
        lock.lock();
        try {
            checkOpen();
            Page p = c.allocationPage();
            if (p == null) {
                p = newPage(c);
            }
            int index = table.takeIndex();
            int slot = p.take(index);
            long addr = p.addressOf(slot);
            NativeHeap.zero(RAW.asSlice(addr, size));
            table.publishLive(index, addr, size, p.id, slot);
            c.refile(p);
            c.liveBlocks++;
            liveBytes += size;
            liveObjects++;
            return table.handleOf(index);
        } finally {
            lock.unlock();
        }
    }

    public void free(long handle) {
        lock.lock();
        try {
            checkOpen();
            int index = (int) handle;
            if (index <= 0 || index >= table.capacity()) {
                throw new StaleHandle(handle);
            }
            long st = table.rawState(index);
            if ((st & (HandleTable.GEN_MASK | HandleTable.LIVE)) != ((handle & HandleTable.GEN_MASK) | HandleTable.LIVE)) {
                throw new StaleHandle(handle);
            }
            table.kill(index);
            if (limboCount == limbo.length) {
                limbo = java.util.Arrays.copyOf(limbo, limboCount * 2);
            }
            limbo[limboCount++] = index;
            limboBytes += pages[table.pageIdOf(index)].sizeClass.blockSize;
            liveBytes -= st & HandleTable.SIZE_MASK;
            liveObjects--;
            if (limboBytes >= reclaimBatchBytes) {
                advanceEpoch();
                restoreBound();
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Makes freed blocks reusable and compacts every size class down to at
     * most one not-full page, also when kappa is infinite (which only turns
     * off the automatic compaction on free). Returns the bytes moved.
     */
    public long compact() {
        lock.lock();
        try {
            checkOpen();
            long before = movedBytes;
            advanceEpoch();
            for (SizeClass c : sizeClasses) { // on request even with kappa infinite (no automatic compaction)
                while (increment(c, 1)) {
                    yieldLock();
                    checkOpen();
                }
            }
            restoreBound();
            return movedBytes - before;
        } finally {
            lock.unlock();
        }
    }

    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            closeEpoch(epoch); // every segment handed out dies; the epoch field stays on the closed one
            for (int i = 0; i < pageIdHigh; i++) {
                if (pages[i] != null) {
                    source.freePage(pages[i].memory);
                    pages[i] = null;
                }
            }
            source.close();
        } finally {
            lock.unlock();
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("compacting heap is closed");
        }
    }

    private void yieldLock() {
        // between increments other threads may allocate, free or take the lock for their own increments
        lock.unlock();
        Thread.yield();
        lock.lock();
    }

    // ---- pages -----------------------------------------------------------

    private Page newPage(SizeClass c) {
        int id;
        if (freePageIdCount > 0) {
            id = freePageIds[--freePageIdCount];
        } else {
            id = pageIdHigh++;
            if (id == pages.length) {
                pages = java.util.Arrays.copyOf(pages, id * 2);
                freePageIds = java.util.Arrays.copyOf(freePageIds, id * 2);
            }
        }
        Page p = new Page(id, source.allocatePage(), c);
        pages[id] = p;
        p.group = groupPages.computeIfAbsent(p.base / groupSize, k -> new int[1]);
        p.group[0]++;
        c.pages++;
        return p;
    }

    private void freePage(Page p) {
        if (p.notFullPos >= 0) {
            p.sizeClass.removeNotFull(p);
        }
        pages[p.id] = null;
        freePageIds[freePageIdCount++] = p.id;
        if (--p.group[0] == 0) {
            groupPages.remove(p.base / groupSize);
        }
        p.sizeClass.pages--;
        source.freePage(p.memory);
    }

    private void releaseBlock(Page p, int slot) {
        p.release(slot);
        p.sizeClass.liveBlocks--;
        if (p.used == 0) {
            freePage(p); // safe: called only after the epoch that could reach the block was closed
        } else {
            p.sizeClass.refile(p);
        }
        markDirty(p.sizeClass);
    }

    private void markDirty(SizeClass c) {
        if (!dirty[c.index]) {
            dirty[c.index] = true;
            dirtyCount++;
        }
    }

    // ---- epochs ----------------------------------------------------------

    /** Publishes the next epoch, closes the current one, then releases the blocks freed before. */
    private void advanceEpoch() {
        Epoch old = epoch;
        Epoch next = new Epoch(old.number + 1);
        epoch = next;
        universe = next.universe; // volatile write: entries marked or killed before are visible with it
        closeEpoch(old);
        releaseLimbo();
    }

    private void closeEpoch(Epoch e) {
        long t0 = System.nanoTime();
        for (;;) {
            try {
                e.arena.close(); // handshake: returns when no thread is inside an access to e's segments
                break;
            } catch (IllegalStateException busy) {
                // a segment of this epoch is held by a native call in progress (acquired scope)
                if (!e.isAlive()) {
                    break;
                }
                Thread.onSpinWait();
            }
        }
        long t = System.nanoTime() - t0;
        maxCloseNanos = Math.max(maxCloseNanos, t);
        epochsClosed++;
    }

    private void releaseLimbo() {
        for (int k = 0; k < limboCount; k++) {
            int index = limbo[k];
            Page p = pages[table.pageIdOf(index)];
            releaseBlock(p, table.slotInPageOf(index));
            table.recycle(index);
        }
        limboCount = 0;
        limboBytes = 0;
    }

    // ---- compaction ------------------------------------------------------

    /** Compacts every class marked dirty back to kappa, one increment at a time. */
    private void restoreBound() {
        if (kappa == Integer.MAX_VALUE) {
            java.util.Arrays.fill(dirty, false);
            dirtyCount = 0;
            return;
        }
        while (dirtyCount > 0) {
            for (SizeClass c : sizeClasses) {
                if (dirty[c.index]) {
                    dirty[c.index] = false;
                    dirtyCount--;
                    while (increment(c, kappa)) {
                        yieldLock();
                        if (closed) {
                            return;
                        }
                    }
                }
            }
        }
    }

    /**
     * One logically atomic compaction increment in class {@code c} if it has
     * more than {@code goal} not-full pages: moves live blocks, at most iota
     * bytes (at least one block), from the least-used not-full page into the
     * fullest other not-full pages. Returns false if nothing was to do.
     */
    private boolean increment(SizeClass c, int goal) {
        if (c.notFullCount() <= goal || c.notFullCount() < 2) {
            return false;
        }
        long t0 = System.nanoTime();
        // source: the not-full page in the emptiest group (its memory can go back
        // to the OS soonest), then the least used; Compact-fit takes the least used
        Page src = c.notFullAt(0);
        for (int i = 1; i < c.notFullCount(); i++) {
            Page p = c.notFullAt(i);
            if (p.group[0] < src.group[0] || (p.group[0] == src.group[0] && p.used < src.used)) {
                src = p;
            }
        }
        int n = 0;
        long bytes = 0;
        Page dst = fullestOther(c, src);
        for (int slot = 0; slot < src.owner.length && dst != null; slot++) {
            int index = src.owner[slot];
            if (index < 0 || (table.rawState(index) & HandleTable.LIVE) == 0) {
                continue; // free, or freed and waiting in limbo (released by this increment's epoch change)
            }
            if (n > 0 && bytes + c.blockSize > iota) {
                break;
            }
            if (n == mvIndex.length) {
                growMoves();
            }
            mvIndex[n] = index;
            mvSrcSlot[n] = slot;
            mvDst[n] = dst;
            mvDstSlot[n] = dst.take(index);
            table.setMoving(index); // resolves from now on wait for publishMoved
            n++;
            bytes += c.blockSize;
            if (dst.isFull()) {
                dst = fullestOther(c, src);
            }
        }
        executeMoves(src, n, bytes, t0);
        return true;
    }

    /**
     * The logically atomic part of an increment: the {@code n} planned moves
     * out of {@code src} (entries already MOVING, target slots taken) are made
     * safe by an epoch change, copied, published, and their old blocks released.
     */
    private void executeMoves(Page src, int n, long bytes, long t0) {
        advanceEpoch(); // old segments dead; also releases limbo (possibly emptying src)
        for (int k = 0; k < n; k++) {
            int index = mvIndex[k];
            long from = src.addressOf(mvSrcSlot[k]);
            long to = mvDst[k].addressOf(mvDstSlot[k]);
            long size = table.rawState(index) & HandleTable.SIZE_MASK;
            MemorySegment.copy(RAW, from, RAW, to, size);
            table.publishMoved(index, to, mvDst[k].id, mvDstSlot[k]);
        }
        for (int k = 0; k < n; k++) {
            mvDst[k].sizeClass.refile(mvDst[k]);
            mvDst[k] = null;
        }
        for (int k = 0; k < n; k++) {
            releaseBlock(src, mvSrcSlot[k]); // the last one may free src
        }
        movedBytes += bytes;
        movedBlocks += n;
        increments++;
        long t = System.nanoTime() - t0;
        totalIncrementNanos += t;
        maxIncrementNanos = Math.max(maxIncrementNanos, t);
    }

    /**
     * Moves the object named by {@code handle} to another block of its class
     * (a one-object increment), then restores kappa.
     */
    public void relocate(long handle) {
        lock.lock();
        try {
            checkOpen();
            int index = (int) handle;
            if (index <= 0 || index >= table.capacity()) {
                throw new StaleHandle(handle);
            }
            long st = table.rawState(index);
            if ((st & (HandleTable.GEN_MASK | HandleTable.LIVE)) != ((handle & HandleTable.GEN_MASK) | HandleTable.LIVE)) {
                throw new StaleHandle(handle);
            }
            long t0 = System.nanoTime();
            Page src = pages[table.pageIdOf(index)];
            SizeClass c = src.sizeClass;
            Page dst = fullestOther(c, src);
            if (dst == null) {
                dst = newPage(c);
            }
            mvIndex[0] = index;
            mvSrcSlot[0] = table.slotInPageOf(index);
            mvDst[0] = dst;
            mvDstSlot[0] = dst.take(index);
            table.setMoving(index);
            executeMoves(src, 1, c.blockSize, t0);
            markDirty(c);
            restoreBound();
        } finally {
            lock.unlock();
        }
    }

    /** Target: a not-full page other than src in the fullest group, then the most used. */
    private Page fullestOther(SizeClass c, Page src) {
        Page best = null;
        for (int i = 0; i < c.notFullCount(); i++) {
            Page p = c.notFullAt(i);
            if (p != src && !p.isFull() && (best == null || p.group[0] > best.group[0]
                    || (p.group[0] == best.group[0] && p.used > best.used))) {
                best = p;
            }
        }
        return best;
    }

    private void growMoves() {
        int m = mvIndex.length * 2;
        mvIndex = java.util.Arrays.copyOf(mvIndex, m);
        mvSrcSlot = java.util.Arrays.copyOf(mvSrcSlot, m);
        mvDstSlot = java.util.Arrays.copyOf(mvDstSlot, m);
        mvDst = java.util.Arrays.copyOf(mvDst, m);
    }

    // ---- statistics --------------------------------------------------------

    /**
     * Fills a snapshot: {liveBytes, liveObjects, blockBytes, committedBytes,
     * pages, sizeClassFragmentationBytes, movedBytes, movedBlocks, increments,
     * epochsClosed, maxIncrementNanos, totalIncrementNanos, maxCloseNanos,
     * limboBytes}, and the not-full page count per class into {@code notFull}.
     */
    public long[] snapshot(int[] notFull) {
        lock.lock();
        try {
            long blockBytes = 0, pagesTotal = 0, frag = 0;
            for (SizeClass c : sizeClasses) {
                blockBytes += c.liveBlocks * c.blockSize;
                pagesTotal += c.pages;
                frag += c.fragmentationBytes();
                notFull[c.index] = c.notFullCount();
            }
            return new long[] {liveBytes, liveObjects, blockBytes, pagesTotal * source.pageSize(), pagesTotal, frag,
                    movedBytes, movedBlocks, increments, epochsClosed, maxIncrementNanos, totalIncrementNanos,
                    maxCloseNanos, limboBytes};
        } finally {
            lock.unlock();
        }
    }

    /** Block size of class {@code cls}. */
    public int blockSize(int cls) {
        return classes.blockSize(cls);
    }

    /** Blocks per page in class {@code cls}. */
    public int blocksPerPage(int cls) {
        return sizeClasses[cls].blocksPerPage;
    }

    /** Current epoch number (for tests and diagnostics). */
    public long epochNumber() {
        return epoch.number;
    }
}
