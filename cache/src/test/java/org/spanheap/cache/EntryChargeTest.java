package org.spanheap.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The 13-bit charge codes beside an entry's links: exact when small, never less, at most 1/256 more. */
class EntryChargeTest {

    @Test
    void smallChargesAreExact() {
        for (int c = 0; c < EntryCharge.EXACT; c++) {
            assertEquals(c, EntryCharge.decode(EntryCharge.encode(c)));
            assertEquals(c, EntryCharge.round(c));
        }
    }

    @Test
    void largerChargesRoundUpByAtMostAFraction() {
        SplittableRandom r = new SplittableRandom(7);
        long previous = -1;
        for (int i = 0; i < 200_000; i++) {
            // every bit length, and runs of neighbours (monotonic)
            int c = i < 100_000 ? EntryCharge.EXACT + i : 1 + r.nextInt(Integer.MAX_VALUE);
            int code = EntryCharge.encode(c);
            assertTrue(code >= 0 && code < 1 << EntryCharge.BITS, "code " + code + " of " + c);
            long back = EntryCharge.decode(code);
            assertTrue(back >= c, c + " -> " + back);
            assertTrue(back - c <= c / 256, c + " -> " + back);
            assertEquals(back, EntryCharge.round(c));
            if (back <= Integer.MAX_VALUE) {
                assertEquals(code, EntryCharge.encode((int) back), "a rounded charge is its own code");
            }
            if (i < 100_000) {
                assertTrue(back >= previous, "monotonic at " + c);
                previous = back;
            }
        }
    }

    @Test
    void theLargestIntHasACode() {
        int code = EntryCharge.encode(Integer.MAX_VALUE);
        assertTrue(code < 1 << EntryCharge.BITS);
        assertEquals(1L << 31, EntryCharge.decode(code));
        assertEquals(5_000_000_000L, EntryCharge.round(5_000_000_000L), "over an int: left as it is (refused later)");
        assertThrows(IllegalArgumentException.class, () -> EntryCharge.encode(-1));
    }
}
