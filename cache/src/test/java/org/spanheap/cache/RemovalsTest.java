package org.spanheap.cache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** The list of removed entries: two kept in fields, the rest in arrays that grow. */
class RemovalsTest {

    @Test
    void keepsEveryRemovalInOrder() {
        Removals out = new Removals();
        RemovalCause[] causes = RemovalCause.values();
        int n = 11; // the two fields, then arrays of 4 that grow twice
        for (int i = 0; i < n; i++) {
            out.add("k" + i, 1000L + i, causes[i % causes.length]);
        }
        assertEquals(n, out.size());
        for (int i = 0; i < n; i++) {
            assertEquals("k" + i, out.key(i));
            assertEquals(1000L + i, out.handle(i));
            assertEquals(causes[i % causes.length], out.cause(i));
        }
        assertThrows(IndexOutOfBoundsException.class, () -> out.key(n));
    }
}
