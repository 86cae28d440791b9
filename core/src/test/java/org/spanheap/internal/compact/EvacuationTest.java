package org.spanheap.internal.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import org.junit.jupiter.api.Test;

/**
 * The evacuation's page states across rounds, driven step by step as a round drives them: plan
 * (before the epoch change), release of the last round's moved-out slots (after it), execute.
 */
class EvacuationTest {

    private static final int BLOCK = 16;
    private static final long PAGE = 4096;

    @Test
    void aSourcePageStaysEvacuatingWhileItsPlannedMovesWaitThoughItsMovedOutSlotsAreReleased() {
        try (Arena arena = Arena.ofConfined()) {
            HandleTable table = new HandleTable();
            SizeClassPages c = new SizeClassPages(0, 0, BLOCK, PAGE, table.pageIds);
            // no page goes back to a source here: the emptied pages are never given back
            Evacuation evacuation = new Evacuation(table, new SizeClassPages[] {c}, BLOCK, new EmptiedPages(null));
            Page src = page(arena, c);
            Page dst = page(arena, c);
            int[] srcIndex = new int[2];
            for (int k = 0; k < 2; k++) {
                srcIndex[k] = place(table, src, 100 + k);
            }
            for (int k = 0; k < 10; k++) {
                place(table, dst, 200 + k); // the fuller page: the target
            }
            c.refile(src);
            c.refile(dst);

            // round 1: one block (iota = one block) moves out of the emptier page
            assertEquals(BLOCK, evacuation.plan(0, 0, BackgroundPacing.ANY_SOURCE));
            evacuation.execute();
            assertEquals(1, src.movedOut);

            // round 2 plans the other block out of the same page, then releases round 1's slot
            assertEquals(BLOCK, evacuation.plan(0, 0, BackgroundPacing.ANY_SOURCE));
            assertEquals(1, evacuation.releaseMovedOut());
            assertTrue(src.evacuating, "a page with a planned move out must stay evacuating");
            assertNotSame(src, c.adoptable(), "no thread may adopt a page a round is still emptying");
            assertNotSame(src, c.allocationPage(), "no lane may allocate from a page a round is still emptying");

            evacuation.execute();
            for (int k = 0; k < 2; k++) {
                long address = table.address(srcIndex[k]);
                assertEquals(100 + k, MemorySegment.ofAddress(address).reinterpret(BLOCK).get(ValueLayout.JAVA_LONG, 0),
                        "the block moved with its bytes");
                assertTrue(address >= dst.base && address < dst.base + PAGE, "the block is in the target page");
            }
            assertEquals(1, evacuation.releaseMovedOut());
            assertEquals(0, src.used);
            assertEquals(0, src.movedOut);
        }
    }

    private static Page page(Arena arena, SizeClassPages c) {
        Page p = new Page(arena.allocate(PAGE, PAGE).address(), c);
        c.addPage(p);
        return p;
    }

    /** Publishes a live object of {@link #BLOCK} bytes holding {@code value} in a slot of {@code p}; {@return its index} */
    private static int place(HandleTable table, Page p, long value) {
        int index = table.takeIndices(1);
        int slot = p.take(index);
        long address = p.addressOf(slot);
        MemorySegment.ofAddress(address).reinterpret(BLOCK).set(ValueLayout.JAVA_LONG, 0, value);
        table.publishLive(index, address, BLOCK, p);
        return index;
    }
}
