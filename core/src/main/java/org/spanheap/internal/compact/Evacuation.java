package org.spanheap.internal.compact;

import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * Evacuation of sparse pages, one round's worth: plans moves of live blocks
 * from the least used not-full pages of the classes over their bound into the
 * fullest not-full pages of the same class ({@link #plan}), marking each entry
 * MOVING and reserving its target slot; after the round has closed the epoch
 * that could reach the blocks, copies them and publishes the new addresses
 * ({@link #execute}). Used by the round's thread only (under the heap's round
 * lock); each class's pages are touched under that class's lock.
 *
 * <h2>Slots released one epoch late</h2>
 * A read-only resolve does not wait for a move: while the entry is MOVING it
 * returns the block's old place, which holds the object's bytes (nobody writes
 * a MOVING object: writable resolves wait, and the old epoch's segments died
 * with its close). Its segment belongs to the epoch current after the round's
 * change, so the old slot may be reused only once that epoch has closed too:
 * {@link #execute} marks it {@link #MOVED_OUT} instead of releasing it, and
 * the next round releases it after its own epoch change
 * ({@link #releaseMovedOut}). A target slot whose move failed (the object was
 * freed while it moved) waits the same way, since a read-only resolve may have
 * read its address between the publication's two steps. A page with such
 * slots, or with moves planned out of it and not yet published
 * ({@code Page#movesOut}), stays {@code evacuating}: no allocation or adoption
 * takes it meanwhile. A round plans before its epoch change and releases the
 * last round's slots after it, so one page can be both at once.
 */
final class Evacuation {

    private final HandleTable table;
    private final SizeClassPages[] classes;
    /** ι: the most bytes one round moves (at least one block). */
    private final long maxBytes;
    private final EmptiedPages emptied;

    /** The planned moves: entry, source page and slot, target page and slot. */
    private int count;
    private int[] mvIndex = new int[64], mvSrcSlot = new int[64], mvDstSlot = new int[64];
    private Page[] mvSrc = new Page[64], mvDst = new Page[64];
    /** Blocks moved so far (read by statistics: a plain long read racily is a hint). */
    long movedBlocks;

    /** The owner word of a slot whose block moved out (or never moved in): index 0 is never handed out. */
    static final int MOVED_OUT = HandleTable.NO_INDEX;
    /** Slots to release after the next epoch change: their pages and slots. */
    private int movedOutCount;
    private Page[] movedOutPage = new Page[64];
    private int[] movedOutSlot = new int[64];

    Evacuation(HandleTable table, SizeClassPages[] classes, long maxBytes, EmptiedPages emptied) {
        this.table = table;
        this.classes = classes;
        this.maxBytes = maxBytes;
        this.emptied = emptied;
    }

    /** {@return the moves planned and not yet executed} */
    int count() {
        return count;
    }

    /** {@return whether slots wait for the next epoch change ({@link #releaseMovedOut})} */
    boolean hasMovedOut() {
        return movedOutCount > 0;
    }

    /**
     * Plans moves: per class over {@code goal}, live blocks of its least used
     * not-full pages go to its fullest not-full pages; at most {@link #maxBytes} (ι) in
     * all (at least one block). Marks the entries MOVING and reserves the
     * target slots. Returns the planned bytes.
     *
     * <p>Per class the not-full pages are sorted once by use (fullest first):
     * targets are taken from the front, sources from the back, so a round over
     * a class with n not-full pages costs O(n log n), not a scan per move (a
     * size-mix shift leaves hundreds of not-full pages in a class).
     */
    long plan(int goal, long minAge, int maxSourceUse) {
        long bytes = 0;
        count = 0;
        for (SizeClassPages c : classes) {
            if (bytes >= maxBytes) {
                break;
            }
            if (c.notFullCount() <= goal || c.notFullCount() < 2) {
                continue;
            }
            c.lock.lock();
            try {
                int n = c.notFullCount();
                if (n <= goal) {
                    continue;
                }
                sortFullestFirst(c, n);
                int front = 0, back = n - 1, sources = 0;
                Page dst = candidates[front];
                long now = System.nanoTime();
                while (front < back && n - sources > goal && bytes < maxBytes) {
                    Page src = candidates[back];
                    if (src.used * 100L > (long) src.owner.length * maxSourceUse) {
                        break; // the pages left are fuller still: too many bytes moved per page freed
                    }
                    if (now - src.notFullSince < minAge) {
                        back--; // its holes are recent: its other objects may die soon too, moving them is waste
                        continue;
                    }
                    src.evacuating = true; // allocation avoids it until the round re-files it
                    int movesBefore = count;
                    for (int slot = 0; slot < src.owner.length; slot++) {
                        int index = src.owner[slot];
                        if (index <= MOVED_OUT) {
                            continue; // free, or moved out and waiting for its release
                        }
                        while (dst.isFull() && front < back) {
                            dst = candidates[++front];
                        }
                        if (front >= back || (count > 0 && bytes + c.blockSize > maxBytes)) {
                            break;
                        }
                        // not LIVE: freed (in limbo) or not yet published by its allocator; both stay
                        if (!table.markMoving(index)) {
                            continue;
                        }
                        add(index, src, slot, dst, dst.take(index));
                        bytes += c.blockSize;
                    }
                    if (count == movesBefore && src.movedOut == 0 && src.movesOut == 0) {
                        src.evacuating = false; // nothing movable in it (freed or unpublished blocks only)
                    }
                    sources++;
                    back--;
                }
                Arrays.fill(candidates, 0, n, null);
            } finally {
                c.lock.unlock();
            }
        }
        return bytes;
    }

    private Page[] candidates = new Page[64];
    /** Scratch for {@link #sortFullestFirst}: the class's not-full pages in their list order. */
    private Page[] unsorted = new Page[64];
    private int[] usedCount = new int[64];

    /**
     * Puts the class's {@code n} not-full pages into {@code candidates[0..n)}, fullest first
     * (ties in list order), by counting sort on their use: a page holds few slots, so this is
     * O(n + slots) with no comparator. {@code Arrays.sort} with one was TimSort, which C2
     * recompiled again and again as the rounds' inputs changed (uncommon traps in
     * {@code mergeLo}/{@code mergeHi}: about 20 recompilations in a 10-second churn), compile
     * time taken from the mutators on a small machine. Caller holds the class's lock.
     */
    private void sortFullestFirst(SizeClassPages c, int n) {
        if (candidates.length < n) {
            int len = Math.max(n, candidates.length * 2);
            candidates = new Page[len];
            unsorted = new Page[len];
        }
        int max = 0;
        for (int i = 0; i < n; i++) {
            Page p = c.notFullAt(i);
            unsorted[i] = p;
            max = Math.max(max, p.used);
        }
        if (usedCount.length < max + 2) {
            usedCount = new int[Math.max(max + 2, usedCount.length * 2)];
        }
        int[] count = usedCount;
        Arrays.fill(count, 0, max + 2, 0);
        for (int i = 0; i < n; i++) {
            count[max - unsorted[i].used + 1]++;   // key 0 = fullest
        }
        for (int k = 1; k <= max + 1; k++) {
            count[k] += count[k - 1];              // count[key] = first position of key
        }
        for (int i = 0; i < n; i++) {
            Page p = unsorted[i];
            candidates[count[max - p.used]++] = p;
        }
        Arrays.fill(unsorted, 0, n, null);
    }

    void add(int index, Page src, int srcSlot, Page dst, int dstSlot) {
        if (count == mvIndex.length) {
            int m = count * 2;
            mvIndex = Arrays.copyOf(mvIndex, m);
            mvSrcSlot = Arrays.copyOf(mvSrcSlot, m);
            mvDstSlot = Arrays.copyOf(mvDstSlot, m);
            mvSrc = Arrays.copyOf(mvSrc, m);
            mvDst = Arrays.copyOf(mvDst, m);
        }
        mvIndex[count] = index;
        mvSrc[count] = src;
        mvSrcSlot[count] = srcSlot;
        mvDst[count] = dst;
        mvDstSlot[count] = dstSlot;
        dst.movesIn++; // not adoptable until published (caller holds the class lock)
        src.movesOut++; // stays evacuating until published, whatever releaseMovedOut finds
        count++;
    }

    /**
     * Copies the planned blocks (the epoch that could reach them is closed, and
     * their entries are MOVING) and publishes them; their old slots wait for the
     * next epoch change ({@link #releaseMovedOut}). A block freed while it moved
     * keeps its old place for the free's limbo entry; its reserved target slot
     * waits for the next epoch change instead.
     */
    long execute() {
        long moved = 0;
        int n = count;
        for (int k = 0; k < n; k++) {
            long size = HandleTable.size(table.stateAcquire(mvIndex[k]));
            MemorySegment.copy(OsMemory.RAW, mvSrc[k].addressOf(mvSrcSlot[k]), OsMemory.RAW,
                    mvDst[k].addressOf(mvDstSlot[k]), size);
        }
        for (int k = 0; k < n;) {
            SizeClassPages c = mvSrc[k].sizeClass;
            c.lock.lock();
            try {
                for (; k < n && mvSrc[k].sizeClass == c; k++) {
                    Page src = mvSrc[k], dst = mvDst[k];
                    dst.movesIn--;
                    src.movesOut--;
                    if (table.publishMoved(mvIndex[k], dst.addressOf(mvDstSlot[k]), dst)) {
                        moveOut(src, mvSrcSlot[k]);
                        moved += c.blockSize;
                        movedBlocks++;
                    } else {
                        moveOut(dst, mvDstSlot[k]); // freed while moving: the target slot goes back later
                        if (src.movedOut == 0 && src.movesOut == 0) {
                            src.evacuating = false;
                            c.refile(src);
                        }
                    }
                    if (dst.pagePos >= 0 && dst.movedOut == 0) {
                        c.refile(dst);
                    }
                    mvSrc[k] = null;
                    mvDst[k] = null;
                }
            } finally {
                c.lock.unlock();
            }
        }
        count = 0;
        return moved;
    }

    /** Marks slot {@code slot} of {@code p} moved out, to be released after the next epoch change (class lock held). */
    private void moveOut(Page p, int slot) {
        p.owner[slot] = MOVED_OUT;
        p.movedOut++;
        p.evacuating = true;
        if (movedOutCount == movedOutPage.length) {
            movedOutPage = Arrays.copyOf(movedOutPage, movedOutCount * 2);
            movedOutSlot = Arrays.copyOf(movedOutSlot, movedOutCount * 2);
        }
        movedOutPage[movedOutCount] = p;
        movedOutSlot[movedOutCount] = slot;
        movedOutCount++;
    }

    /**
     * Releases the slots that {@link #execute} left moved out: called after an epoch change
     * that followed theirs, so no segment reaches them any more. A page left without moved-out
     * slots is allocatable again, or given back when empty. {@return the slots released}
     */
    int releaseMovedOut() {
        int n = movedOutCount;
        for (int k = 0; k < n;) {
            SizeClassPages c = movedOutPage[k].sizeClass;
            c.lock.lock();
            try {
                for (; k < n && movedOutPage[k].sizeClass == c; k++) {
                    Page p = movedOutPage[k];
                    p.release(movedOutSlot[k]);
                    movedOutPage[k] = null;
                    // a page this round also plans moves out of stays evacuating until they are
                    // published: else a thread could adopt it between this release and execute,
                    // and the moves would then mark slots of a page its owner uses without a lock
                    if (--p.movedOut == 0 && p.movesOut == 0) {
                        p.evacuating = false;
                        if (p.used == 0) {
                            if (p.pagePos >= 0) {
                                c.removePage(p);
                                emptied.add(p);
                            }
                        } else if (p.pagePos >= 0) {
                            c.refile(p);
                        }
                    }
                }
            } finally {
                c.lock.unlock();
            }
        }
        movedOutCount = 0; // the emptied pages go back at the end of the round
        return n;
    }
}
