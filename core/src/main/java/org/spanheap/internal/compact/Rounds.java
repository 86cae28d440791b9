package org.spanheap.internal.compact;

import java.util.concurrent.locks.ReentrantLock;
import org.spanheap.StaleHandleException;
import org.spanheap.internal.MemoryReleaseEvent;

/**
 * A heap's rounds and who runs them. One round at a time, under {@link #lock}: it drains the
 * limbo, plans an increment of moves ({@link Evacuation}), changes the epoch once (one
 * handshake, {@link Epochs}), copies and publishes the moves, and releases the freed and
 * moved-from blocks ({@link LimboRelease}, {@link PendingSlots}, {@link EmptiedPages}). So one
 * handshake pays for a whole batch of frees and an increment of compaction.
 *
 * <p>Who runs them: the {@link Compactor} thread, woken when a reclaim batch of frees waits or
 * an owner of pages asks for an epoch change, and on its idle tick
 * ({@link BackgroundPacing} decides when it compacts); {@code compact()}, {@code trim()} and
 * {@code relocate()}; and a freeing thread when frees reclaim at once (no background thread)
 * or when the compactor has fallen {@link #HELP_FACTOR} batches behind.
 */
final class Rounds {

    /**
     * The limbo holds this many batches: the compactor fell behind, and a freeing
     * thread waits for the round in progress, then runs one itself if the limbo
     * still holds as much. Behind it are threads that outnumber the cores: an
     * epoch change is a handshake with every thread, and a thread the OS has
     * descheduled answers only when it runs again, so with 16 threads on 2 cores
     * the compactor managed 60-140 epoch changes a second against 250-1100 with
     * 2 threads, the limbo grew to 27-65 MiB, and allocation opened new pages
     * meanwhile (the cache's memory mode: peak 2.1-3.0 times its bound). Waiting
     * parks the freeing thread, so the handshake need not wait for it to run: with
     * 2 batches and the wait, the peak was 1.24-1.28 times the bound at the same
     * throughput; with 8 batches and {@code tryLock} (no wait), 2.1-3.0
     * (measured on the cache churn, 16 threads on 2 cores).
     */
    private static final int HELP_FACTOR = 2;

    /** Held by the round in progress, and by whatever must not see memory given back meanwhile. */
    final ReentrantLock lock = new ReentrantLock();

    private final HandleTable table;
    private final SizeClassPages[] classes;
    private final PageReserve source;
    private final Limbo limbo;
    private final LimboRelease limboRelease;
    private final PendingSlots pendingSlots;
    private final Evacuation evacuation;
    private final EmptiedPages emptied;
    private final LargeObjects large;
    private final BackgroundPacing pacing;
    private final Epochs epochs;
    private final int kappa;
    private final long reclaimBatchBytes;
    /**
     * The reclaim batch in force: the configured one, or 1/32 of the committed
     * bytes if that is more, so that the number of rounds (handshakes) per
     * freed byte falls as the heap grows while the limbo stays a small share
     * of it. Written after each round, read by frees (plain: a stale value only
     * delays or advances one wake-up).
     */
    private long batchBytes;
    /** Set by an owner whose full pages' deferred frees all wait for an epoch change; cleared by the next round (volatile). */
    private volatile boolean epochWanted;
    private Compactor compactor;
    /** Set by {@code trim()} around its round, whose release the trim's own event reports. */
    private boolean trimming;
    /**
     * The heap's name in JFR events: generated from its tag, or the MXBean name once one is
     * registered. Volatile: written on registration, read only when an event is committed.
     */
    volatile String heapName;

    // ---- statistics: written under the lock, read without it ----
    volatile long movedBytes, increments, maxIncrementNanos, totalIncrementNanos;

    Rounds(HandleTable table, SizeClassPages[] classes, PageReserve source, Limbo limbo, LimboRelease limboRelease,
            PendingSlots pendingSlots, Evacuation evacuation, EmptiedPages emptied, LargeObjects large,
            BackgroundPacing pacing, Epochs epochs, int kappa, long reclaimBatchBytes) {
        this.table = table;
        this.classes = classes;
        this.source = source;
        this.limbo = limbo;
        this.limboRelease = limboRelease;
        this.pendingSlots = pendingSlots;
        this.evacuation = evacuation;
        this.emptied = emptied;
        this.large = large;
        this.pacing = pacing;
        this.epochs = epochs;
        this.kappa = kappa;
        this.reclaimBatchBytes = reclaimBatchBytes;
        this.batchBytes = reclaimBatchBytes;
        this.heapName = "CompactingHeap-" + table.tag();
    }

    /** Starts the background thread that runs the rounds from now on. */
    void start(Compactor k) {
        compactor = k;
        k.start();
    }

    /** Stops the background thread, if any, and waits for it (caller holds no lock: it may be waiting for one). */
    void stopCompactor() {
        Compactor k = compactor;
        if (k != null) {
            k.stop();
        }
    }

    boolean hasCompactor() {
        return compactor != null;
    }

    // ---- what starts a round ----------------------------------------------------------

    /**
     * After a push on the limbo that left {@code pending} units there: reclaim if a batch is full.
     * {@code pending} is the pusher's stripe times the stripes ({@link Limbo#push}), so with
     * fewer freeing threads than stripes a round starts before a batch is full (at a quarter
     * of one with one thread) and a free waits at half of one. That early wait is also what
     * bounds the limbo when freeing threads outnumber the cores; estimates closer to the
     * truth were measured and not taken (docs/decisions.md).
     */
    void limboPushed(long pending) {
        if (pending << 4 >= batchBytes) {
            reclaimPressure(pending << 4);
        }
    }

    /** Enough freed bytes wait: reclaim now (no batching), wake the compactor, or help it. */
    private void reclaimPressure(long pending) {
        Compactor k = compactor;
        if (reclaimBatchBytes == 0 || k == null) {
            lock.lock();
            try {
                if (!epochs.closed) {
                    roundsUntil(kappa);
                }
            } finally {
                lock.unlock();
            }
        } else if (pending >= HELP_FACTOR * batchBytes) {
            lock.lock(); // the compactor fell behind: wait for its round (see HELP_FACTOR)
            try {
                if (!epochs.closed && limbo.pendingUnits() << 4 >= HELP_FACTOR * batchBytes) {
                    round(kappa, 0, BackgroundPacing.ANY_SOURCE); // still behind after it: bound the limbo ourselves
                }
            } finally {
                lock.unlock();
            }
        } else {
            k.wake();
        }
    }

    /**
     * An owner found none of its full pages reusable: asks the background thread for an epoch
     * change soon (one volatile read when already asked).
     */
    void requestEpochChange() {
        if (!epochWanted) {
            epochWanted = true;
            Compactor k = compactor;
            if (k != null) {
                k.wake();
            }
        }
    }

    /**
     * Work the compactor has: a batch of freed bytes waiting (or any, when idle), a compaction
     * pass due, or, on an idle tick, a heap at rest over the bound. Called by the compactor
     * thread only (it updates the rest detection); {@code operations} is the heap's count of
     * allocations and releases so far.
     */
    boolean hasWork(boolean idle, long operations) {
        boolean rest = idle ? pacing.restDueOnIdleTick(operations) : pacing.restPassGoesOn(operations);
        return limbo.pendingUnits() << 4 >= batchBytes || epochWanted
                || (idle && (!limbo.isEmpty() || evacuation.hasMovedOut() || !pendingSlots.isEmpty()
                        || limboRelease.anyReady()))
                || pacing.compactionDue() || rest;
    }

    /** Called by the compactor thread: one round, with moves if a compaction pass is due. */
    void backgroundRound() {
        lock.lock();
        try {
            if (!epochs.closed) {
                boolean rest = pacing.restPass();
                boolean compacting = rest || pacing.compactionDue();
                if (compacting) {
                    releaseReady(); // the plan sees the pages' true use
                }
                long moved = round(compacting ? kappa : Integer.MAX_VALUE, rest ? 0 : pacing.minSourceAgeNanos,
                        rest ? BackgroundPacing.ANY_SOURCE : BackgroundPacing.PASS_SOURCE_USE);
                pacing.afterRound(rest, compacting, moved);
            }
        } finally {
            lock.unlock();
        }
    }

    // ---- the round ---------------------------------------------------------------------

    /** Runs rounds until no class is over {@code goal} and the limbo is empty (caller holds the lock). */
    private long roundsUntil(int goal) {
        long moved = 0;
        for (int guard = 0; guard < 1_000_000; guard++) {
            boolean pendingLimbo = !limbo.isEmpty();
            long m = round(goal, 0, BackgroundPacing.ANY_SOURCE);
            moved += m;
            // Stop when the goal is met, or when a round neither moved nor reclaimed anything
            // and no free came meanwhile: the blocks left over the goal cannot move now (their
            // allocation is not yet published), and every further round would be another
            // handshake for nothing (a million of them took minutes: jcstress TIMEOUTs of
            // CompactHandleReuseTest in default mode, one actor interpreted).
            if (m == 0 && !pendingLimbo && (!SizeClassPages.anyOver(classes, goal) || limbo.isEmpty())) {
                break;
            }
            if (epochs.closed) {
                break;
            }
        }
        return moved;
    }

    /**
     * One round (caller holds the lock): drains the limbo, plans at most iota
     * bytes of moves for classes over {@code goal} (from pages not-full for
     * {@code minAge} and at most {@code maxSourceUse} percent used), changes
     * the epoch once, copies and publishes the moves, releases moved-from and
     * freed blocks. Returns the bytes moved.
     */
    private long round(int goal, long minAge, int maxSourceUse) {
        CompactionRoundEvent event = new CompactionRoundEvent();
        event.begin();
        long t0 = System.nanoTime();
        int[] freed = limboRelease.heads;
        boolean wanted = epochWanted;
        epochWanted = false; // before the change: an owner asking after it asks again
        limboRelease.releaseReady(false); // what allocations left unused for a while goes back to the pages
        limbo.drain(freed); // volatile: the pushers' links are visible
        boolean laneFrees = limboRelease.drainLanes(); // after the stripes (see Limbo)
        long planned = goal == Integer.MAX_VALUE ? 0 : evacuation.plan(goal, minAge, maxSourceUse);
        if (LimboRelease.isEmpty(freed) && !laneFrees && evacuation.count() == 0 && !evacuation.hasMovedOut() && !wanted
                && pendingSlots.isEmpty()) {
            emptied.giveBack(); // what the ready entries' release emptied
            return 0;
        }
        MemoryReleaseEvent release = new MemoryReleaseEvent();
        boolean reportRelease = !trimming && release.isEnabled();
        long releasedBefore = reportRelease ? releasedBytes() : 0;
        release.begin();
        // nobody reaches the limbo blocks or the blocks to move any more
        long closeNanos = epochs.advance(evacuation.count() > 0 ? EpochChangeEvent.COMPACTION : EpochChangeEvent.RECLAIM,
                heapName);
        evacuation.releaseMovedOut(); // the last round's moved-out slots: their epoch closed just now
        long moved = evacuation.execute();
        long reclaimed = limboRelease.release(freed) + limboRelease.handOverLanes();
        pendingSlots.release(epochs.closedThrough); // given-up pages' slots of the epoch just closed
        emptied.giveBack(); // the pages this round emptied, in one batch
        large.giveBackRuns(false);
        if (reportRelease) {
            release.end();
            long released = releasedBytes() - releasedBefore;
            if (released > 0 && release.shouldCommit()) {
                release.set(heapName, MemoryReleaseEvent.ROUND, released, committedBytes());
                release.commit();
            }
        }
        if (reclaimBatchBytes > 0) {
            batchBytes = Math.max(reclaimBatchBytes, (source.committedBytes() + large.heldBytes()) / 32);
        }
        if (planned > 0) {
            countIncrement(moved, t0);
        }
        event.end();
        if (event.shouldCommit()) {
            event.heap = table.tag();
            event.heapName = heapName;
            event.movedBytes = moved;
            event.reclaimedBytes = reclaimed;
            event.epochCloseNanos = closeNanos;
            event.commit();
        }
        return moved;
    }

    /** Counts a round that moved objects, begun at {@code t0} (caller holds the lock). */
    private void countIncrement(long moved, long t0) {
        long t = System.nanoTime() - t0;
        movedBytes += moved;
        increments++;
        totalIncrementNanos += t;
        maxIncrementNanos = Math.max(maxIncrementNanos, t);
    }

    /**
     * Changes the epoch only to release the slots that the last moves left behind (see
     * {@link Evacuation}), so that a call that compacts returns with its source pages empty
     * (caller holds the lock).
     */
    private void releaseMovedOut() {
        if (evacuation.hasMovedOut()) {
            round(Integer.MAX_VALUE, 0, BackgroundPacing.ANY_SOURCE); // goal MAX_VALUE: plans no moves
        }
    }

    /** Releases for good the large segments' granules given back lazily a while ago (see {@link LargeSegments}). */
    void purgeLazyRuns() {
        lock.lock(); // only holders of this lock give memory back (see CompactFitHeap#residentBytes)
        try {
            if (!epochs.closed) {
                large.purgeLazyRuns();
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Gives every lane's {@link ReadyEntries} back to their pages, and the pages that left empty
     * to the page source (caller holds the lock).
     */
    private void releaseReady() {
        limboRelease.releaseReady(true);
        emptied.giveBack();
    }

    /** A round that reclaims the limbo and moves nothing (caller holds the lock). */
    void reclaim() {
        round(Integer.MAX_VALUE, 0, BackgroundPacing.ANY_SOURCE);
    }

    /** {@return the bytes given back to the OS so far by the page reserve and the large mappings' cache} */
    private long releasedBytes() {
        return source.releasedBytes() + large.releasedBytes();
    }

    /** Pages out and in the reserve, large objects' mappings and resident runs: what stats() reports as committed. */
    long committedBytes() {
        return source.committedBytes() + large.committedBytes();
    }

    // ---- rounds on request ---------------------------------------------------------------

    /**
     * Reclaims freed blocks and compacts every size class down to at most one
     * not-full page. Returns the bytes moved.
     *
     * <p>Only pages that were not full when the call began (after reclaiming what
     * was freed before it) are emptied. Under a churn that punches new holes
     * while the call runs, compacting those too never ends: with every free
     * making a round find work, the loop chased the mutators, and a call every
     * 250 ms moved 1.2-2x the live bytes each time (measured on the cache
     * churn). Holes made during the call are the next call's work, or the
     * background rounds'.
     */
    long compact() {
        lock.lock();
        try {
            epochs.checkOpen();
            reclaim(); // holes freed before the call count as old
            releaseReady(); // and the pages see them: ready entries go back to their pages
            long since = System.nanoTime();
            long moved = 0;
            for (int guard = 0; guard < 1_000_000 && !epochs.closed; guard++) {
                long m = round(1, System.nanoTime() - since, BackgroundPacing.ANY_SOURCE); // sources: not full since before `since`
                moved += m;
                if (m == 0 || !SizeClassPages.anyOver(classes, 1)) {
                    break;                         // done, or what is left over the goal is newer
                }
            }
            releaseMovedOut();
            return moved;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Runs a round that reclaims the limbo (moving nothing), then gives the
     * page reserve and the large segments' free granules back. Returns the drop of the
     * committed bytes over the call, 0 if concurrent allocations made them grow.
     */
    long trim() {
        lock.lock();
        try {
            epochs.checkOpen();
            MemoryReleaseEvent event = new MemoryReleaseEvent();
            event.begin();
            long before = committedBytes();
            trimming = true; // this event reports the round's release too
            try {
                reclaim();
                releaseReady();
            } finally {
                trimming = false;
            }
            source.drain();
            large.giveBackRuns(true);
            long after = committedBytes();
            long released = Math.max(0, before - after);
            event.end();
            if (event.shouldCommit()) {
                event.set(heapName, MemoryReleaseEvent.TRIM, released, after);
                event.commit();
            }
            return released;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Moves the object named by {@code handle} to another block of its class
     * now, in a round of its own. Returns false for a large object (they do not
     * move) and for one in a page another thread owns.
     */
    boolean relocate(long handle) {
        lock.lock();
        try {
            epochs.checkOpen();
            int index;
            try {
                index = table.liveIndex(handle);
            } catch (StaleHandleException e) {
                throw epochs.closed ? Epochs.closedException() : e;
            }
            Page src = table.pageOf(index);
            if (src == null) {
                return false;
            }
            SizeClassPages c = src.sizeClass;
            CompactionRoundEvent event = new CompactionRoundEvent();
            event.begin();
            long t0 = System.nanoTime();
            c.lock.lock();
            try {
                src = table.pageOf(index); // re-read under the lock
                if (src == null || src.sizeClass != c) {
                    throw new StaleHandleException(handle); // freed meanwhile, its page emptied or its index reused elsewhere
                }
                if (src.ownerPages != null) {
                    return false; // in a page another thread owns: it moves once that thread gives it up
                }
                if (!table.markMoving(index)) {
                    throw new StaleHandleException(handle);
                }
                Page dst = c.fullestOther(src);
                if (dst == null) {
                    dst = c.newPage(source);
                }
                src.evacuating = true; // no thread adopts it before the move is done (execute clears it)
                evacuation.add(index, src, src.slotOf(table.address(index)), dst, dst.take(index));
            } finally {
                c.lock.unlock();
            }
            long closeNanos = epochs.advance(EpochChangeEvent.RELOCATE, heapName);
            evacuation.releaseMovedOut();
            emptied.giveBack();
            long moved = evacuation.execute();
            countIncrement(moved, t0);
            event.end();
            if (event.shouldCommit()) { // a round of its own: it moves one object and reclaims nothing
                event.heap = table.tag();
                event.heapName = heapName;
                event.movedBytes = moved;
                event.epochCloseNanos = closeNanos;
                event.commit();
            }
            if (kappa != Integer.MAX_VALUE) {
                roundsUntil(kappa);
            }
            releaseMovedOut();
            return true;
        } finally {
            lock.unlock();
        }
    }
}
