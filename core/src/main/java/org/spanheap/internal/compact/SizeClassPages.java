package org.spanheap.internal.compact;

import java.util.Arrays;

/**
 * The pages of one lane of a Compact-fit size class (one lane per class unless
 * the heap has more: see {@code CompactFitHeap#classes}), with the lock that guards them:
 * the list of all pages, the list of not-full pages (the quantity that the
 * partial compaction bound kappa limits), the class's cache of free handle
 * indices, and counters. Everything here is touched only under {@link #lock}
 * (Compact-fit's size-class lock level): allocations in different classes
 * never wait for each other.
 */
final class SizeClassPages {

    /** Indices taken from the handle table at once, so the table's own lock is rare. */
    static final int INDEX_BATCH = 64;
    /** The least {@link #indexCacheCap()}. */
    static final int INDEX_CACHE_MIN = 1024;

    /** Position among the heap's lanes: class number times lanes per class, plus the lane. */
    final int index;
    /** The size class this lane belongs to. */
    final int sizeClass;
    final int blockSize;
    /** {@code ceil(2^64 / blockSize)}, see {@link #slotAt}. */
    private final long blockReciprocal;
    final int blocksPerPage;
    final ClassLock lock = new ClassLock();

    private Page[] notFull = new Page[8];
    private int notFullCount;
    private Page[] all = new Page[8];
    private int pageCount;
    long liveBlocks;
    /** Objects (and their requested bytes) allocated in this class, and released by rounds after their free. */
    long allocated, allocatedBytes, released, releasedBytes;
    /** Free handle indices of this lane. */
    final IndexCache indices = new IndexCache();
    /** Freed entries whose epoch closed, reused with their slots ({@link ReadyEntries}); counted in {@link #liveBlocks} until then. */
    final ReadyEntries ready = new ReadyEntries();
    /**
     * Whether this lane's frees go on its stack of the {@link LaneLimbo} and from there, after
     * their epoch, to {@link #ready}: with a background thread and where no thread owns pages of
     * the class (an owner's slots are its own). Set before the heap is published.
     */
    boolean reuseReady;

    /** Names this lane's pages in the handle table: a page holds an id from {@link #addPage} to {@link #removePage}. */
    private final PageIds pageIds;

    SizeClassPages(int index, int sizeClass, int blockSize, long pageSize, PageIds pageIds) {
        this.pageIds = pageIds;
        this.index = index;
        this.sizeClass = sizeClass;
        this.blockSize = blockSize;
        this.blockReciprocal = Long.divideUnsigned(-1L, blockSize) + 1; // blockSize >= 2: no overflow
        this.blocksPerPage = (int) (pageSize / blockSize);
    }

    /**
     * {@return the slot at byte {@code offset} of a page} The quotient of an offset below 2^32
     * (pages are at most 1 GiB) by the block size is the high word of its product with
     * {@code ceil(2^64 / blockSize)} (Lemire's fast division): a multiplication on every
     * release instead of a 64-bit division, which costs tens of cycles.
     */
    int slotAt(long offset) {
        return (int) Math.unsignedMultiplyHigh(offset, blockReciprocal);
    }

    /** Counts the release of a freed block of this lane whose killed entry is in {@code state} (caller holds the lock). */
    void countRelease(long state) {
        liveBlocks--;
        released++;
        releasedBytes += HandleTable.size(state); // a kill keeps the size
    }

    /**
     * Free indices this class keeps, at most: a quarter of its live blocks (at
     * least {@value #INDEX_CACHE_MIN}), in two chains of half of it
     * ({@link IndexCache}). Under churn a round releases up to 1/32 of the heap
     * at once: with a fixed cap of 1024 those indices went back to the table and
     * were taken out again 64 at a time, a cache miss per index each way.
     */
    long indexCacheCap() {
        return Math.max(INDEX_CACHE_MIN, liveBlocks >> 2);
    }

    /** Caches a released, not exhausted index (caller holds {@link #lock}). */
    void cacheIndex(HandleTable table, int index) {
        indices.push(table, index, indexCacheCap() >>> 1);
    }

    int pageCount() {
        return pageCount;
    }

    Page pageAt(int i) {
        return all[i];
    }

    int notFullCount() {
        return notFullCount;
    }

    Page notFullAt(int i) {
        return notFull[i];
    }

    /**
     * The page to allocate in: the last one used while it has room and is not
     * being emptied by a round, else the most recently filed not-full page that
     * qualifies (a page that a round filled with planned moves stays listed as
     * not-full until the round re-files it), or null. O(1) but after a change
     * of page.
     */
    Page allocationPage() {
        Page p = current;
        if (p != null && !p.evacuating && !p.isFull() && p.pagePos >= 0 && p.ownerPages == null) {
            return p;
        }
        for (int i = notFullCount - 1; i >= 0; i--) {
            p = notFull[i];
            if (!p.evacuating && !p.isFull()) {
                current = p;
                return p;
            }
        }
        current = null;
        return null;
    }

    /**
     * A page a thread may adopt ({@link PageOwnership}): the most recently filed not-full page
     * that no round is emptying or filling, or null.
     */
    Page adoptable() {
        for (int i = notFullCount - 1; i >= 0; i--) {
            Page p = notFull[i];
            if (!p.evacuating && p.movesIn == 0 && !p.isFull()) {
                return p;
            }
        }
        return null;
    }

    /** Takes an adopted page out of the not-full list and out of the lanes' allocation. */
    void detach(Page p) {
        if (p.notFullPos >= 0) {
            removeNotFull(p);
        }
        if (current == p) {
            current = null;
        }
    }

    /** The page allocations go to while it has room (see {@link #allocationPage()}). */
    private Page current;

    /** Makes {@code p} the allocation page (a new page). */
    void allocateIn(Page p) {
        current = p;
    }

    /** A new page of this lane from {@code source}, listed here (caller holds the lock). */
    Page newPage(PageReserve source) {
        Page p = new Page(source.allocatePage(), this);
        addPage(p);
        return p;
    }

    void addPage(Page p) {
        pageIds.register(p);
        if (pageCount == all.length) {
            all = Arrays.copyOf(all, pageCount * 2);
        }
        p.pagePos = pageCount;
        all[pageCount++] = p;
    }

    void removePage(Page p) {
        if (p.notFullPos >= 0) {
            removeNotFull(p);
        }
        int i = p.pagePos;
        Page last = all[--pageCount];
        all[i] = last;
        last.pagePos = i;
        all[pageCount] = null;
        p.pagePos = -1;
        pageIds.unregister(p); // empty: no entry names it any more
    }

    private void addNotFull(Page p) {
        if (notFullCount == notFull.length) {
            notFull = Arrays.copyOf(notFull, notFullCount * 2);
        }
        p.notFullPos = notFullCount;
        p.notFullSince = System.nanoTime();
        notFull[notFullCount++] = p;
    }

    private void removeNotFull(Page p) {
        int i = p.notFullPos;
        Page last = notFull[--notFullCount];
        notFull[i] = last;
        last.notFullPos = i;
        notFull[notFullCount] = null;
        p.notFullPos = -1;
    }

    /** Re-files {@code p} after its use count changed (not for pages that became empty). */
    void refile(Page p) {
        boolean shouldBeNotFull = p.used > 0 && !p.isFull();
        if (shouldBeNotFull && p.notFullPos < 0) {
            addNotFull(p);
        } else if (!shouldBeNotFull && p.notFullPos >= 0) {
            removeNotFull(p);
        }
    }

    /** Free blocks in not-full pages, in bytes: Compact-fit's size-class fragmentation. */
    long fragmentationBytes() {
        long free = 0;
        for (int i = 0; i < notFullCount; i++) {
            free += notFull[i].freeCount();
        }
        return free * blockSize;
    }

    /** Where moved blocks go: the fullest not-full page that is not being emptied, or null. */
    Page fullestOther(Page src) {
        Page best = null;
        for (int i = 0; i < notFullCount; i++) {
            Page p = notFull[i];
            if (p != src && !p.evacuating && !p.isFull() && (best == null || p.used > best.used)) {
                best = p;
            }
        }
        return best;
    }

    /** {@return whether a class has more than {@code goal} not-full pages} Racy reads: a hint, rounds re-check under the locks. */
    static boolean anyOver(SizeClassPages[] classes, int goal) {
        if (goal == Integer.MAX_VALUE) {
            return false;
        }
        for (SizeClassPages c : classes) {
            if (c.notFullCount() > goal) {
                return true;
            }
        }
        return false;
    }
}
