package org.spanheap.internal.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class PageIdsTest {

    private static final SizeClassPages CLASS = new SizeClassPages(0, 0, 64, 64 * 1024, new PageIds());

    private static Page page(int k) {
        return new Page(0x10_0000L * (k + 1), CLASS);
    }

    @Test
    void idsAreDistinctNonZeroAndResolveToTheirPagesAcrossGrowth() {
        PageIds ids = new PageIds();
        List<Page> pages = new ArrayList<>();
        Set<Integer> seen = new HashSet<>();
        for (int k = 0; k < 1000; k++) { // far past the first array's 64 ids
            Page p = page(k);
            ids.register(p);
            assertNotEquals(0, p.id);
            assertEquals(true, seen.add(p.id), "id " + p.id + " given twice");
            pages.add(p);
        }
        for (Page p : pages) {
            assertSame(p, ids.get(p.id));
        }
        assertNull(ids.get(0), "id 0 names no page (a large object)");
        assertEquals(1000, ids.count());
    }

    @Test
    void anUnregisteredIdGoesToTheNextPageAndTheOldPageLosesIt() {
        PageIds ids = new PageIds();
        Page a = page(0);
        Page b = page(1);
        ids.register(a);
        int id = a.id;
        ids.unregister(a);
        assertEquals(0, a.id);
        assertNull(ids.get(id));
        ids.register(b);
        assertEquals(id, b.id);
        assertSame(b, ids.get(id));
        assertEquals(1, ids.count());
    }

    @Test
    void unregisteringAPageTwiceOrOneNeverRegisteredThrows() {
        PageIds ids = new PageIds();
        Page a = page(0);
        assertThrows(IllegalStateException.class, () -> ids.unregister(a));
        ids.register(a);
        ids.unregister(a);
        assertThrows(IllegalStateException.class, () -> ids.unregister(a));
    }

    @Test
    void aLaneNamesItsPagesWhileItHoldsThem() {
        PageIds ids = new PageIds();
        SizeClassPages lane = new SizeClassPages(0, 0, 64, 64 * 1024, ids);
        Page p = new Page(0x10_0000L, lane);
        lane.addPage(p);
        assertSame(p, ids.get(p.id));
        int id = p.id;
        lane.removePage(p);
        assertNull(ids.get(id));
        assertEquals(0, ids.count());
    }
}
