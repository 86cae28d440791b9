package org.spanheap.internal.compact;

import java.util.Arrays;

/**
 * Pages a round emptied, collected under the size classes' locks and given back
 * to the page source in one batch at the end of the round, so that an
 * allocation never waits for the page source and adjacent pages go back to the
 * OS in one call ({@link PageSource#freePages}). Used by the round's thread
 * only (under the heap's round lock): no synchronization of its own.
 */
final class EmptiedPages {

    private final PageReserve source;
    private Page[] pages = new Page[16];
    /** Scratch for {@link #giveBack}: the pages' addresses. */
    private long[] bases = new long[16];
    private int count;

    EmptiedPages(PageReserve source) {
        this.source = source;
    }

    /** Takes {@code p}, already removed from its class, for {@link #giveBack()}. */
    void add(Page p) {
        if (count == pages.length) {
            pages = Arrays.copyOf(pages, count * 2);
        }
        pages[count++] = p;
    }

    /** Gives every page taken back to the page source in one batch (caller holds no class lock). */
    void giveBack() {
        if (count == 0) {
            return;
        }
        if (bases.length < count) {
            bases = new long[pages.length];
        }
        for (int k = 0; k < count; k++) {
            bases[k] = pages[k].base;
            pages[k] = null;
        }
        source.freePages(bases, count);
        count = 0;
    }
}
