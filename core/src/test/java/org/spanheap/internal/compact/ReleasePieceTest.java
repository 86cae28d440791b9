package org.spanheap.internal.compact;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class ReleasePieceTest {

    private static final int CLASSES = 3;

    /** A limbo list of {@code n} killed entries in random classes (or large), linked as free() links them. */
    private static int limbo(HandleTable t, Page[] pages, int n, List<Integer> order, SplittableRandom r) {
        int head = HandleTable.NO_INDEX;
        for (int k = 0; k < n; k++) {
            int i = t.takeIndices(1);
            int g = r.nextInt(CLASSES + 1); // CLASSES: large, no page
            Page p = g < CLASSES ? pages[g] : null;
            t.publishLive(i, 0x10_0000L * (g + 1) + 16L * k, 8 + k, p);
            t.kill(t.handleOf(i));
            t.setLink(i, head);
            head = i;
            order.add(0, i); // the list runs from the last pushed
        }
        return head;
    }

    /** One page of each test class, named in {@code t}. */
    private static Page[] pages(HandleTable t) {
        Page[] pages = new Page[CLASSES];
        for (int c = 0; c < CLASSES; c++) {
            SizeClassPages cls = new SizeClassPages(c, c, 16 << c, 64 * 1024, t.pageIds);
            pages[c] = new Page(0x100_0000L * (c + 1), cls);
            cls.addPage(pages[c]);
        }
        return pages;
    }

    @Test
    void readsAPieceAndGroupsItByClassKeepingTheListOrder() {
        HandleTable t = new HandleTable();
        try {
            SplittableRandom r = new SplittableRandom(7);
            Page[] pages = pages(t);
            List<Integer> order = new ArrayList<>();
            int n = ReleasePiece.CAPACITY + 40;
            int head = limbo(t, pages, n, order, r);

            ReleasePiece piece = new ReleasePiece(CLASSES);
            int[] cursor = {head};
            piece.read(t, cursor);
            assertEquals(order.get(ReleasePiece.CAPACITY), cursor[0], "stops after a full piece, at the next entry");
            int seen = checkGroups(t, piece, pages, order.subList(0, ReleasePiece.CAPACITY));
            assertEquals(ReleasePiece.CAPACITY, seen);

            piece.clear();
            piece.read(t, cursor);
            assertEquals(HandleTable.NO_INDEX, cursor[0], "the rest fits one piece");
            assertEquals(40, checkGroups(t, piece, pages, order.subList(ReleasePiece.CAPACITY, n)));
        } finally {
            t.close();
        }
    }

    /** Checks every group against the list: its class, the entries' words, list order within a group. */
    private static int checkGroups(HandleTable t, ReleasePiece piece, Page[] pages, List<Integer> list) {
        int total = 0;
        for (int g = 0; g <= CLASSES; g++) {
            List<Integer> expected = new ArrayList<>();
            for (int i : list) {
                Page p = t.pageOf(i);
                if (g < CLASSES ? p == pages[g] : p == null) {
                    expected.add(i);
                }
            }
            List<Integer> got = new ArrayList<>();
            for (int k = piece.groupStart(g); k < piece.groupEnd(g); k++) {
                int pos = piece.at(k);
                int i = piece.index(pos);
                got.add(i);
                if (g < CLASSES) {
                    assertSame(pages[g], piece.page(pos));
                } else {
                    assertNull(piece.page(pos));
                }
                assertEquals(t.address(i), piece.address(pos));
                assertEquals(t.stateAcquire(i), piece.state(pos));
            }
            assertEquals(expected, got, "group " + g);
            total += got.size();
        }
        return total;
    }

    @Test
    void walksSeveralChainsOneStepEachInTurn() {
        HandleTable t = new HandleTable();
        try {
            SplittableRandom r = new SplittableRandom(11);
            Page[] pages = pages(t);
            int[] lengths = {300, 0, 5, 120};
            List<List<Integer>> chains = new ArrayList<>();
            int[] cursors = new int[lengths.length];
            for (int c = 0; c < lengths.length; c++) {
                List<Integer> order = new ArrayList<>();
                cursors[c] = limbo(t, pages, lengths[c], order, r);
                chains.add(order);
            }
            List<Integer> interleaved = new ArrayList<>(); // one step of each chain in turn
            for (int step = 0; interleaved.size() < 425; step++) {
                for (List<Integer> chain : chains) {
                    if (step < chain.size()) {
                        interleaved.add(chain.get(step));
                    }
                }
            }
            ReleasePiece piece = new ReleasePiece(CLASSES);
            piece.read(t, cursors);
            assertEquals(ReleasePiece.CAPACITY,
                    checkGroups(t, piece, pages, interleaved.subList(0, ReleasePiece.CAPACITY)));
            piece.clear();
            piece.read(t, cursors);
            assertEquals(425 - ReleasePiece.CAPACITY,
                    checkGroups(t, piece, pages, interleaved.subList(ReleasePiece.CAPACITY, 425)));
            for (int c : cursors) {
                assertEquals(HandleTable.NO_INDEX, c, "every chain walked to its end");
            }
        } finally {
            t.close();
        }
    }

    @Test
    void anEmptyListGivesEmptyGroups() {
        HandleTable t = new HandleTable();
        try {
            ReleasePiece piece = new ReleasePiece(CLASSES);
            int[] cursors = {HandleTable.NO_INDEX, HandleTable.NO_INDEX};
            piece.read(t, cursors);
            assertEquals(HandleTable.NO_INDEX, cursors[0]);
            for (int g = 0; g <= CLASSES; g++) {
                assertEquals(piece.groupStart(g), piece.groupEnd(g));
            }
        } finally {
            t.close();
        }
    }
}
