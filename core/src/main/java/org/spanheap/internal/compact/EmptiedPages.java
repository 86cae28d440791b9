package org.spanheap.internal.compact;

import java.util.Arrays;

/**
 * Pages a round emptied, collected under a size class's lock and given back to
 * the page source after it is released, so that an allocation in that class
 * never waits for the page source. Used by the round's thread only (under the
 * heap's round lock): no synchronization of its own.
 */
final class EmptiedPages {

    private final PageReserve source;
    private Page[] pages = new Page[16];
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

    /** Gives every page taken back to the page source (caller holds no class lock). */
    void giveBack() {
        for (int k = 0; k < count; k++) {
            source.freePage(pages[k].base);
            pages[k] = null;
        }
        count = 0;
    }
}
