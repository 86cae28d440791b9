package org.spanheap.internal.compact;

/**
 * One Compact-fit size class: its pages, the list of its not-full pages (the
 * quantity that the partial compaction bound kappa limits) and counters.
 * Touched only under the heap lock.
 */
final class SizeClass {

    final int index;
    final int blockSize;
    final int blocksPerPage;
    private Page[] notFull = new Page[8];
    private int notFullCount;
    int pages;
    long liveBlocks;

    SizeClass(int index, int blockSize, long pageSize) {
        this.index = index;
        this.blockSize = blockSize;
        this.blocksPerPage = (int) (pageSize / blockSize);
    }

    int notFullCount() {
        return notFullCount;
    }

    Page notFullAt(int i) {
        return notFull[i];
    }

    /** The page to allocate in: the most recently added not-full page, or null. */
    Page allocationPage() {
        return notFullCount == 0 ? null : notFull[notFullCount - 1];
    }

    void addNotFull(Page p) {
        if (notFullCount == notFull.length) {
            notFull = java.util.Arrays.copyOf(notFull, notFullCount * 2);
        }
        p.notFullPos = notFullCount;
        notFull[notFullCount++] = p;
    }

    void removeNotFull(Page p) {
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
}
