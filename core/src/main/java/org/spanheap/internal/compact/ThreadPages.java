package org.spanheap.internal.compact;

/**
 * One platform thread's share of a heap's small size classes: per class, the
 * page it owns and allocates from without a lock, and a magazine of free
 * handle indices (linked through the {@link HandleTable}); counters of its
 * allocations and of the frees it reclaimed in its pages. Written by the
 * thread only (plain fields), or, once the thread has terminated, by the one
 * thread that adopts its pages (thread termination orders the writes before).
 * Statistics read the counters racily: a hint while the thread runs.
 */
final class ThreadPages {

    final Thread thread;
    /** Per class: the owned page allocations come from, or null. */
    final Page[] pages;
    /**
     * Per class: the owned page filled before the current one, whose deferred slots wait for
     * their epoch, or null. One such page, not more: with the owners asking for epoch changes
     * and slots freed without the handle table, four made the replace no faster and raised the
     * cache churn's peak committed/live at 2 threads (docs/decisions.md).
     */
    final Page[] waiting;
    /** Per class: the magazine's top index, and its count. */
    final int[] indexHead;
    final int[] indexCount;
    /** Objects (and requested bytes) allocated in owned pages, and reclaimed there after their free. */
    long allocated, allocatedBytes, released, releasedBytes;

    ThreadPages(Thread thread, int classes) {
        this.thread = thread;
        this.pages = new Page[classes];
        this.waiting = new Page[classes];
        this.indexHead = new int[classes];
        this.indexCount = new int[classes];
    }

    /** {@return a free index of class {@code cls} from the magazine, refilled from {@code table} when empty} */
    int takeIndex(HandleTable table, int cls) {
        int i = indexHead[cls];
        if (i == HandleTable.NO_INDEX) {
            i = table.takeIndices(SizeClassPages.INDEX_BATCH);
            indexCount[cls] = SizeClassPages.INDEX_BATCH;
        }
        indexHead[cls] = table.link(i);
        indexCount[cls]--;
        return i;
    }

    /** Puts a reusable index back in class {@code cls}'s magazine. */
    void putIndex(HandleTable table, int cls, int index) {
        table.setLink(index, indexHead[cls]);
        indexHead[cls] = index;
        indexCount[cls]++;
    }

    /** Most indices a magazine keeps; above it, all but half go back to the table. */
    static final int MAGAZINE_CAP = 1024;

    /** Returns the excess of class {@code cls}'s magazine to the table (all of it when {@code keep} is 0). */
    void trimMagazine(HandleTable table, int cls, int keep) {
        if (indexCount[cls] <= keep) {
            return;
        }
        if (keep == 0) {
            table.giveIndices(indexHead[cls]);
            indexHead[cls] = HandleTable.NO_INDEX;
            indexCount[cls] = 0;
            return;
        }
        int last = indexHead[cls];
        for (int k = 1; k < keep; k++) {
            last = table.link(last);
        }
        int rest = table.link(last);
        table.setLink(last, HandleTable.NO_INDEX);
        table.giveIndices(rest);
        indexCount[cls] = keep;
    }
}
