package org.spanheap.internal.compact;

/**
 * The release of freed objects whose epoch has closed: the chains a round
 * drained from the {@link Limbo} go back, slot by slot, to their pages (pages
 * left empty to the page source, after the class lock), and their handle
 * indices to their class's cache (or to the table when a class holds too
 * many, or retired when their generation ran out); large objects go to
 * {@link LargeObjects#release}; the chains it drained from the {@link LaneLimbo}
 * go to their lanes' {@link ReadyEntries} whole. Used by the round's thread only
 * (under the heap's round lock); each class is touched under its lock.
 */
final class LimboRelease {

    private final HandleTable table;
    private final SizeClassPages[] classes;
    private final LargeObjects large;
    private final EmptiedPages emptied;
    /** The round's scratch: a piece of the chains, read and grouped by class. */
    private final ReleasePiece piece;
    /** The round's scratch: the stripes' chains it took from the limbo, each walked to its end. */
    final int[] heads = new int[Limbo.STRIPES];
    private final LaneLimbo lanes;
    /** The round's scratch: the lanes' stacks it took ({@link LaneLimbo} words), by lane and stripe. */
    private final long[] laneWords;

    LimboRelease(HandleTable table, SizeClassPages[] classes, LaneLimbo lanes, LargeObjects large,
            EmptiedPages emptied) {
        this.table = table;
        this.lanes = lanes;
        this.laneWords = new long[classes.length * LaneLimbo.STRIPES];
        this.classes = classes;
        this.large = large;
        this.emptied = emptied;
        this.piece = new ReleasePiece(classes.length);
    }

    /**
     * Releases the blocks and indices of a drained limbo list; returns their
     * bytes. It goes in pieces of {@value ReleasePiece#CAPACITY} entries, each
     * read into arrays and grouped by class first ({@link ReleasePiece}), then
     * released class by class while their lines are still in the cache (a batch
     * is up to 1/32 of the heap, tens of thousands of entries).
     */
    long release(int[] heads) {
        long bytes = 0;
        ReleasePiece piece = this.piece;
        while (!isEmpty(heads)) {
            piece.read(table, heads);
            for (int ci = 0; ci < classes.length; ci++) {
                if (piece.groupStart(ci) < piece.groupEnd(ci)) {
                    bytes += releaseClassPiece(classes[ci], piece, ci);
                }
            }
            bytes += large.release(piece, classes.length);
            piece.clear();
        }
        return bytes;
    }

    /** {@return whether every chain of {@code heads} is empty} */
    static boolean isEmpty(int[] heads) {
        for (int h : heads) {
            if (h != HandleTable.NO_INDEX) {
                return false;
            }
        }
        return true;
    }

    /**
     * Entries released per hold of a class lock, so that an allocation waits for the
     * background thread microseconds, not a whole piece's tens of microseconds of cache
     * misses. Counted with a temporary counter (CacheBenchmark, 100 B, 50% writes, 2 threads,
     * about 9 s): allocations parked 890,000 times behind the compactor with the whole piece
     * in one hold, 10,000 times with 32; throughput the same within the noise.
     */
    private static final int RELEASE_HOLD = 32;

    /** Releases the entries of {@code piece}'s group {@code ci}, all of class {@code c}. */
    private long releaseClassPiece(SizeClassPages c, ReleasePiece piece, int ci) {
        long bytes = 0;
        int end = piece.groupEnd(ci);
        for (int k = piece.groupStart(ci); k < end;) {
            c.lock.lock();
            try {
                for (int n = 0; n < RELEASE_HOLD && k < end; n++, k++) {
                    int pos = piece.at(k);
                    int i = piece.index(pos);
                    Page p = piece.page(pos);
                    long state = piece.state(pos);
                    if (p.ownerPages != null) {
                        // a thread adopted the page since the free: its slots are the owner's, so the
                        // entry goes on its thread-free list (open while owned; ownership is stable
                        // under this lock) and the owner reuses it after a later epoch closes
                        if (!p.remoteFree.push(table, i)) {
                            throw new AssertionError("thread-free list of an owned page closed");
                        }
                        continue;
                    }
                    c.countRelease(state);
                    bytes += c.blockSize;
                    releaseSlot(c, p, piece.address(pos));
                    if (HandleTable.exhausted(state)) {
                        table.retire(); // its generation ran out: never reused
                    } else {
                        c.cacheIndex(table, i);
                    }
                }
            } finally {
                c.lock.unlock();
            }
        }
        return bytes; // the emptied pages go back at the end of the round
    }

    /**
     * Takes the stacks of the lanes' {@link LaneLimbo}, before the epoch change; {@return
     * whether any held an entry}. After the stripes of the heap-wide limbo (see {@link Limbo}).
     */
    boolean drainLanes() {
        boolean any = false;
        for (SizeClassPages c : classes) {
            if (c.reuseReady) {
                for (int s = 0; s < LaneLimbo.STRIPES; s++) {
                    long w = lanes.drain(c.index, s);
                    laneWords[c.index * LaneLimbo.STRIPES + s] = w;
                    any |= w != 0;
                }
            }
        }
        return any;
    }

    /**
     * Hands the chains {@link #drainLanes} took, whose epoch has closed, to their lanes'
     * {@link ReadyEntries} whole, or, for a lane whose entries would exceed
     * {@link ReadyEntries#cap}, gives them back to their pages; {@return their blocks' bytes}.
     */
    long handOverLanes() {
        long bytes = 0;
        long now = System.nanoTime();
        for (SizeClassPages c : classes) {
            int at = c.index * LaneLimbo.STRIPES;
            long taken = 0;
            for (int s = 0; s < LaneLimbo.STRIPES; s++) {
                taken |= laneWords[at + s];
            }
            if (taken == 0) {
                continue; // nothing taken: no need for the lane's lock
            }
            c.lock.lock();
            try {
                for (int s = 0; s < LaneLimbo.STRIPES; s++) {
                    long w = laneWords[at + s];
                    if (w == 0) {
                        continue;
                    }
                    laneWords[at + s] = 0;
                    int n = LaneLimbo.count(w);
                    bytes += (long) n * c.blockSize;
                    if (c.ready.count() + n <= ReadyEntries.cap(c.liveBlocks)) {
                        c.ready.addChain(LaneLimbo.head(w), n, now); // unread: the pages are not touched
                    } else {
                        releaseChain(c, LaneLimbo.head(w));
                    }
                }
            } finally {
                c.lock.unlock();
            }
        }
        return bytes;
    }

    /**
     * Releases the freed entries of the chain from {@code first} of lane {@code c}: slots to
     * their pages, indices to the lane's cache (caller holds the lane's lock). None is
     * exhausted (those go on the heap-wide limbo) or in an owned page (lanes that keep ready
     * entries have none).
     */
    private void releaseChain(SizeClassPages c, int first) {
        for (int i = first; i != HandleTable.NO_INDEX;) {
            int next = table.link(i); // before the cache relinks it
            c.countRelease(table.stateAcquire(i));
            releaseSlot(c, table.pageOf(i), table.address(i));
            c.cacheIndex(table, i);
            i = next;
        }
    }

    /** Gives the slot of a released block at {@code address} back to its page {@code p} of lane {@code c} (caller holds its lock). */
    private void releaseSlot(SizeClassPages c, Page p, long address) {
        p.release(p.slotOf(address));
        if (p.used == 0) {
            c.removePage(p);
            emptied.add(p);
        } else {
            c.refile(p);
        }
    }

    /**
     * Gives the slots of lane {@code c}'s {@link ReadyEntries} back to their pages and their
     * indices to the lane's cache (caller holds the lane's lock).
     */
    private void releaseReady(SizeClassPages c) {
        for (int h; (h = c.ready.takeChain()) != HandleTable.NO_INDEX;) {
            releaseChain(c, h);
        }
    }

    /** {@return whether a lane keeps ready entries} Racy reads: a hint for the background thread's idle tick. */
    boolean anyReady() {
        for (SizeClassPages c : classes) {
            if (c.ready.count() > 0) {
                return true;
            }
        }
        return false;
    }

    /**
     * Releases the ready entries of every lane ({@code all}), or of the lanes whose chain is
     * older than {@link ReadyEntries#MAX_AGE_NANOS}. Round thread only.
     */
    void releaseReady(boolean all) {
        long now = System.nanoTime();
        for (SizeClassPages c : classes) {
            if (all ? c.ready.count() > 0 : c.ready.aged(now)) { // racy: a hint, taken under the lock
                c.lock.lock();
                try {
                    releaseReady(c);
                } finally {
                    c.lock.unlock();
                }
            }
        }
    }

}
