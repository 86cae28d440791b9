package org.spanheap.cache;

/**
 * TinyLFU's frequency estimate: a count-min sketch of 4-bit counters that
 * halves every counter once it has counted ten times as many events as it has
 * rows of counters, so old popularity fades. A key's four counters (one per
 * hash function) lie in one 64-byte block of the table: one cache miss per
 * increment or estimate.
 *
 * <p>The lock of the {@link IndexSegment} that owns it guards it, except for
 * {@link #incrementWithoutLock}, which lookups without the lock call.
 */
final class FrequencySketch {

    private static final long ODD_BITS_CLEARED = 0x7777_7777_7777_7777L;
    private static final long[] SEEDS = {0x9E37_79B9_7F4A_7C15L, 0xC2B2_AE3D_27D4_EB4FL,
            0x1656_67B1_9E37_79F9L, 0x85EB_CA77_C2B2_AE63L};

    /** 16 counters per long; a key's counters are in one block of 8 longs. */
    private long[] table = new long[8];
    private int additions;
    private int sampleSize = 10 * 8 * 16 / 4;

    /**
     * Grows the table (its counts start over, as when the policy is new) to one
     * long, 16 counters, per one or two of about {@code entries} keys.
     */
    void ensureCapacity(int entries) {
        int longs = Math.max(8, Integer.highestOneBit(Math.max(1, entries)));
        if (longs <= table.length || longs > (1 << 26)) {
            return;
        }
        table = new long[longs];
        additions = 0;
        sampleSize = 10 * Math.max(16, entries);
    }

    /** {@return the estimated recent count of {@code hash}, 0 to 15} */
    int frequency(int hash) {
        int block = blockOf(hash);
        int min = 15;
        for (int i = 0; i < 4; i++) {
            long h = hash * SEEDS[i];
            int word = block + (i << 1) + (int) ((h >>> 40) & 1);
            int shift = (int) ((h >>> 41) & 15) << 2;
            min = Math.min(min, (int) ((table[word] >>> shift) & 15));
        }
        return min;
    }

    /** Counts one event of {@code hash}; ages the whole sketch when the sample is full. */
    void increment(int hash) {
        int block = blockOf(hash);
        boolean added = false;
        for (int i = 0; i < 4; i++) {
            long h = hash * SEEDS[i];
            int word = block + (i << 1) + (int) ((h >>> 40) & 1);
            int shift = (int) ((h >>> 41) & 15) << 2;
            if (((table[word] >>> shift) & 15) != 15) {
                table[word] += 1L << shift;
                added = true;
            }
        }
        if (added && ++additions >= sampleSize) {
            reset();
        }
    }

    /**
     * Counts one event of {@code hash} without the owner's lock, lossily: it
     * reads the table once and writes each counter's word once from one read,
     * so a race with the owner loses one of the two updates (or undoes a
     * halving of one word) but never carries a full counter into its
     * neighbour. It leaves the aging to the owner: the next increment under the
     * lock sees the additions counted here (racily) and halves.
     */
    void incrementWithoutLock(int hash) {
        long[] t = table;
        int block = blockOf(hash, t.length);
        boolean added = false;
        for (int i = 0; i < 4; i++) {
            long h = hash * SEEDS[i];
            int word = block + (i << 1) + (int) ((h >>> 40) & 1);
            int shift = (int) ((h >>> 41) & 15) << 2;
            long x = t[word];
            if (((x >>> shift) & 15) != 15) {
                t[word] = x + (1L << shift);
                added = true;
            }
        }
        if (added && additions < Integer.MAX_VALUE) {
            additions++;
        }
    }

    private int blockOf(int hash) {
        return blockOf(hash, table.length);
    }

    private static int blockOf(int hash, int length) {
        long h = (hash ^ (hash >>> 17)) * 0xD6E8_FEB8_6659_FD93L;
        return (int) (h >>> 32) & (length - 8) & ~7;
    }

    /** Halves every counter (the aging step), so counts measure recent popularity. */
    private void reset() {
        for (int i = 0; i < table.length; i++) {
            table[i] = (table[i] >>> 1) & ODD_BITS_CLEARED;
        }
        additions = Math.min(additions, sampleSize) >>> 1; // lookups without the lock may have counted past the sample
    }
}
