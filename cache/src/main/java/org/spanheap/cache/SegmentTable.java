package org.spanheap.cache;

import java.util.Arrays;

/**
 * The entries of one {@link IndexSegment} and the hash table over them. No object per entry:
 * an entry is a slot {@code e}, its fields packed one after the other in one {@code long[]},
 * so that a lookup's reads of an entry fall in one or two cache lines (with parallel arrays,
 * each field would be a miss of its own). The hash table is open addressing with linear
 * probing over slot numbers, each cell with eight bits of the hash beside the slot, so a
 * probe past other keys rarely touches their entries; deletion shifts the run back, so there
 * are no tombstones. That is what lets the cache charge an entry about a third of what a
 * node-based map costs.
 *
 * <pre>
 * an entry, at words[e * stride]:
 *   +0  HANDLE       the value's handle
 *   +1  LINKS        charge code (bits 51-63) | referenced (50) | queue (48-49) | prev + 1 (24-47) | next + 1 (0-23)
 *   +2  KEY_OR_HASH  the key when keys are longs, else the key's hash (low 32 bits)
 *   +3.. the write time, the access time, the entry's deadline: those of the expiries that are on
 *
 * a cell of table[]:  tag of the hash (bits 24-31) | slot + 1 (bits 0-23); 0 is empty
 * </pre>
 *
 * <p>The links word belongs to the {@link EvictionPolicy}'s queues; the table keeps it with the
 * entry and names its bits here, so that the layout is written once. A free slot has queue
 * {@link #FREE} and is linked, through its next field, in the table's list of free slots.
 *
 * <p>Every method expects the segment's lock held, except {@link #probe}, which is also
 * given racy copies of the arrays by a lookup without the lock (see {@link IndexSegment}).
 */
final class SegmentTable {

    static final int NONE = -1;
    /** The queue of a slot that holds no entry. */
    static final int FREE = 3;
    private static final int INITIAL_SLOTS = 16;

    // ---- an entry's words, at slot * stride ----
    /** The value's handle. */
    static final int HANDLE = 0;
    /** The policy's word: charge code, referenced mark, queue, links (see the class comment). */
    static final int LINKS = 1;
    /**
     * The key when keys are longs (its hash is recomputed from it), else the
     * key's hash (low 32 bits), which the probe compares before {@code equals}.
     */
    static final int KEY_OR_HASH = 2;

    // ---- the links word ----
    static final int LINK_BITS = 24;
    static final long LINK_MASK = (1L << LINK_BITS) - 1;
    static final int QUEUE_SHIFT = 2 * LINK_BITS;
    /** Hit since the entry last moved between or within queues (a move clears it). */
    static final long REFERENCED = 1L << 50;
    static final int CHARGE_SHIFT = 64 - EntryCharge.BITS;
    /** The charge code's bits: set when an entry is made or replaced, kept by every move. */
    static final long CHARGE_BITS = -1L << CHARGE_SHIFT;

    // ---- a cell of the hash table ----
    private static final int CELL_SLOT_BITS = 24;
    private static final int CELL_SLOT_MASK = (1 << CELL_SLOT_BITS) - 1;
    /** Slots per segment, at most: what a cell (and a link) can name (a full segment evicts before it adds). */
    static final int MAX_SLOTS = CELL_SLOT_MASK;
    /** The tag takes hash bits that neither the segment number (the top bits) nor a table of up to 2^18 cells uses. */
    private static final int TAG_SHIFT = 18;
    /** What {@link #probe} returns when a cell names a slot beyond the arrays it was given. */
    static final int TORN = -2;

    /** Words per entry: handle, links, the key or its hash, then the times of the expiries that are on. */
    final int stride;
    /** Offsets of the write and access times and of the entry's own deadline, or -1 when it has none. */
    final int writtenWord;
    final int accessedWord;
    final int deadlineWord;
    /** The entries, one after the other (see the class comment). */
    long[] words;
    /** The keys by slot when they are objects; null when they are longs (then in {@link #words}). */
    Object[] keys;
    /** Open addressing over slots, cells as above; at most three quarters full. */
    int[] table = new int[INITIAL_SLOTS * 2];
    /** Slots ever used; those below it are entries or free. */
    private int slotsUsed;
    private int freeSlot = NONE;
    private int count;

    /**
     * @param longKeys whether every key is a {@code Long}: then the keys are kept
     *        as {@code long}s in the entries (8 bytes, compared without a pointer to follow)
     */
    SegmentTable(boolean longKeys, Expiry expiry) {
        int w = KEY_OR_HASH + 1;
        writtenWord = expiry.afterWriteNanos() > 0 ? w++ : -1;
        accessedWord = expiry.afterAccessNanos() > 0 ? w++ : -1;
        deadlineWord = expiry.deadlines() ? w++ : -1;
        stride = w;
        words = new long[INITIAL_SLOTS * stride];
        if (!longKeys) {
            keys = new Object[INITIAL_SLOTS];
        }
    }

    /** {@return the entries} */
    int count() {
        return count;
    }

    /** {@return the slots ever used: every entry's slot is below it} */
    int slotsUsed() {
        return slotsUsed;
    }

    /** {@return whether slot {@code e} (below {@link #slotsUsed()}) holds an entry} */
    boolean holdsEntry(int e) {
        return queueOf(e) != FREE;
    }

    // ---- an entry's fields ---------------------------------------------

    long handle(int e) {
        return words[e * stride + HANDLE];
    }

    void setHandle(int e, long handle) {
        words[e * stride + HANDLE] = handle;
    }

    int hashOf(int e) {
        long w = words[e * stride + KEY_OR_HASH];
        return keys == null ? CacheIndex.hash(w) : (int) w;
    }

    Object keyAt(int e) {
        return keys != null ? keys[e] : Long.valueOf(words[e * stride + KEY_OR_HASH]);
    }

    long links(int e) {
        return words[e * stride + LINKS];
    }

    void setLinks(int e, long links) {
        words[e * stride + LINKS] = links;
    }

    long chargeOf(int e) {
        return EntryCharge.decode((int) (links(e) >>> CHARGE_SHIFT));
    }

    /** Gives entry {@code e} the charge of {@code code}; {@return the change of its charge} */
    long setChargeCode(int e, int code) {
        long delta = EntryCharge.decode(code) - chargeOf(e);
        setLinks(e, links(e) & ~CHARGE_BITS | (long) code << CHARGE_SHIFT);
        return delta;
    }

    int queueOf(int e) {
        return (int) (links(e) >>> QUEUE_SHIFT) & 3;
    }

    /** Stores {@code now} as the entry's write time, if expiry after write is on. */
    void written(int e, long now) {
        if (writtenWord >= 0) {
            words[e * stride + writtenWord] = now;
        }
    }

    /** Stores {@code now} as the entry's access time, if expiry after access is on. */
    void accessed(int e, long now) {
        if (accessedWord >= 0) {
            words[e * stride + accessedWord] = now;
        }
    }

    /** Stores the entry's deadline, if entries have deadlines. */
    void setDeadline(int e, long deadline) {
        if (deadlineWord >= 0) {
            words[e * stride + deadlineWord] = deadline;
        }
    }

    // ---- the hash table -------------------------------------------------

    private static int tagOf(int hash) {
        return (hash >>> TAG_SHIFT & 0xFF) << CELL_SLOT_BITS;
    }

    /** {@return the slot of {@code key}'s entry, or NONE} */
    int find(Object key, int hash) {
        return probe(table, words, keys, stride, key, hash); // under the lock the arrays agree: never TORN
    }

    /**
     * Linear probing for {@code key} in the arrays given (the table's own, or a lookup
     * without the lock's racy copies of them); {@return its slot, NONE, or TORN} Every slot
     * is checked against the arrays and the probe ends after one pass, so a racy view never
     * throws or loops.
     */
    static int probe(int[] t, long[] w, Object[] ks, int stride, Object key, int hash) {
        int mask = t.length - 1;
        int tag = tagOf(hash);
        for (int i = hash & mask, probes = 0; probes <= mask; i = (i + 1) & mask, probes++) {
            int cell = t[i];
            if (cell == 0) {
                return NONE;
            }
            if ((cell & ~CELL_SLOT_MASK) == tag) {
                int e = (cell & CELL_SLOT_MASK) - 1;
                int a = e * stride;
                if (a + stride > w.length || (ks != null && e >= ks.length)) {
                    return TORN;
                }
                if (ks != null
                        ? (int) w[a + KEY_OR_HASH] == hash && key.equals(ks[e])
                        : (Long) key == w[a + KEY_OR_HASH]) {
                    return e;
                }
            }
        }
        return NONE;
    }

    /**
     * Adds an entry for {@code key}, in no queue yet, charged {@code code}: {@return its slot}
     * The caller links it into a queue.
     */
    int insert(Object key, int hash, long handle, int code, long now, long deadline) {
        assert keys != null || hash == CacheIndex.hash((long) (Long) key) : "an entry of a long key recomputes its hash";
        if ((count + 1) * 4L > table.length * 3L) {
            rehash(table.length * 2);
        }
        int e = freeSlot;
        if (e != NONE) {
            freeSlot = (int) (links(e) & LINK_MASK) - 1;
        } else {
            int slots = words.length / stride;
            if (slotsUsed == slots) {
                growSlots(Math.min(MAX_SLOTS, slots + Math.max(16, slots >> 3))); // by an eighth: the slack is charged to every entry
            }
            e = slotsUsed++;
        }
        int at = e * stride;
        if (keys != null) {
            keys[e] = key;
            words[at + KEY_OR_HASH] = Integer.toUnsignedLong(hash);
        } else {
            words[at + KEY_OR_HASH] = (Long) key;
        }
        words[at + HANDLE] = handle;
        words[at + LINKS] = (long) code << CHARGE_SHIFT; // the policy's link() keeps it
        written(e, now);
        accessed(e, now);
        setDeadline(e, deadline);
        int mask = table.length - 1;
        int i = hash & mask;
        while (table[i] != 0) {
            i = (i + 1) & mask;
        }
        table[i] = tagOf(hash) | (e + 1);
        count++;
        return e;
    }

    /** Frees slot {@code e}: its cell leaves the hash table and the slot joins the free list (the policy unlinked it). */
    void delete(int e) {
        count--;
        deleteFromTable(e);
        if (keys != null) {
            keys[e] = null; // not kept reachable
        }
        words[e * stride + LINKS] = (long) FREE << QUEUE_SHIFT | (freeSlot + 1);
        freeSlot = e;
    }

    /** Empties the table: every slot free, none used. */
    void clear() {
        if (keys != null) {
            Arrays.fill(keys, null);
        }
        Arrays.fill(table, 0);
        count = 0;
        slotsUsed = 0;
        freeSlot = NONE;
    }

    /** Linear probing's deletion: empties the entry's cell and shifts back what probed past it. */
    private void deleteFromTable(int e) {
        int mask = table.length - 1;
        int i = hashOf(e) & mask;
        while ((table[i] & CELL_SLOT_MASK) != e + 1) {
            i = (i + 1) & mask;
        }
        for (int j = (i + 1) & mask; table[j] != 0; j = (j + 1) & mask) {
            int home = hashOf((table[j] & CELL_SLOT_MASK) - 1) & mask;
            // the entry at j may move to i only if its home is not cyclically within (i, j]
            boolean homeBetween = i <= j ? (i < home && home <= j) : (i < home || home <= j);
            if (!homeBetween) {
                table[i] = table[j];
                i = j;
            }
        }
        table[i] = 0;
    }

    private void rehash(int length) {
        int[] t = new int[length];
        int mask = length - 1;
        for (int cell : table) {
            if (cell != 0) {
                int i = hashOf((cell & CELL_SLOT_MASK) - 1) & mask;
                while (t[i] != 0) {
                    i = (i + 1) & mask;
                }
                t[i] = cell;
            }
        }
        table = t;
    }

    private void growSlots(int n) {
        words = Arrays.copyOf(words, n * stride);
        if (keys != null) {
            keys = Arrays.copyOf(keys, n);
        }
    }
}
