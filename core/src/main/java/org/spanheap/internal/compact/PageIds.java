package org.spanheap.internal.compact;

import java.util.Arrays;

/**
 * Small numbers that name the pages a heap holds, so that the handle table keeps an entry's
 * page as an {@code int} and not as a reference. A reference stored into an array costs G1
 * a post-write barrier whose slow path (the stored object in another region than the array,
 * which is every page against the table's long-lived chunks) is a StoreLoad fence and a card
 * check: 10% of the CPU time of the cache's 50%-writes benchmark and 4% of a one-thread
 * replace, measured on the allocation's publication alone. An {@code int} store has no barrier.
 *
 * <p>Id 0 names no page (a large object). A page gets its id when it joins a lane
 * ({@link SizeClassPages#addPage}) and gives it up when it leaves the lane empty
 * ({@link SizeClassPages#removePage}); the id is then reused. An entry keeps a page's id only
 * while its block sits in that page (a dead entry until its release), so no entry reads an id
 * after its page gave it up.
 *
 * <p>Memory orders: {@link #get} reads the array through a volatile field and its element
 * plainly. A page is registered before any block of it is published (the creator holds its size
 * class's lock, and a publication is a release store of the entry's state), so a thread that
 * read the entry's state with acquire (or killed it with a CAS) sees the page's element, in the
 * array it reads or in a longer copy made after it. Writers hold this object's monitor.
 */
final class PageIds {

    /** Pages by id; replaced by a longer copy when full (volatile: readers take no lock). */
    private volatile Page[] pages = new Page[64];
    // ---- under this object's monitor ----
    private int[] free = new int[16];
    private int freeCount;
    private int next = 1;
    private int live;

    /** Gives {@code page} an id and records it as {@code page.id}. */
    synchronized void register(Page page) {
        int id = freeCount > 0 ? free[--freeCount] : next++;
        if (id == pages.length) {
            // volatile: the copy is complete before readers find it; this page's element below
            // reaches them with the page's first publication, as in an array that did not grow
            pages = Arrays.copyOf(pages, id * 2);
        }
        page.id = id;
        live++;
        pages[id] = page;
    }

    /** Takes {@code page}'s id back, for reuse: no entry names the page any more. */
    synchronized void unregister(Page page) {
        int id = page.id;
        if (id == 0 || pages[id] != page) {
            throw new IllegalStateException("page " + id + " is not registered");
        }
        pages[id] = null;
        page.id = 0;
        live--;
        if (freeCount == free.length) {
            free = Arrays.copyOf(free, freeCount * 2);
        }
        free[freeCount++] = id;
    }

    /** {@return the page with id {@code id}, or null for 0 (no page)} */
    Page get(int id) {
        return pages[id];
    }

    /** {@return the number of pages holding an id} */
    synchronized int count() {
        return live;
    }
}
