package org.spanheap.cache;

/**
 * An entry's charge as the index keeps it: in {@value #BITS} bits beside the
 * entry's queue links, so an entry with a {@code long} key needs no word for
 * its charge (three words instead of four: 8 bytes less per entry on the Java
 * heap).
 *
 * <p>Charges below {@value #EXACT} are kept exactly; larger ones as nine
 * significant bits and a shift, rounded up, so a charge is at most 1/256
 * (0.4%) more than the bytes it stands for and never less. The cache charges
 * the rounded value everywhere ({@link OffHeapCache#charge}), so what the
 * index adds for an entry is what it takes away when the entry leaves.
 *
 * <pre>
 *  code &lt; 512:   charge = code
 *  code &gt;= 512:  charge = (256 + (code &amp; 255)) &lt;&lt; ((code &gt;&gt;&gt; 8) - 1)
 * </pre>
 * The largest code, 2^13 - 1, stands for 511 &lt;&lt; 30, beyond any {@code int}
 * charge.
 */
final class EntryCharge {

    /** Bits of a code. */
    static final int BITS = 13;
    /** Charges below this are kept exactly. */
    static final int EXACT = 512;

    private EntryCharge() {
    }

    /** {@return the code of the smallest representable charge at or above {@code charge}} */
    static int encode(int charge) {
        if (charge < 0) {
            throw new IllegalArgumentException("negative charge: " + charge);
        }
        if (charge < EXACT) {
            return charge;
        }
        int shift = 31 - Integer.numberOfLeadingZeros(charge) - 8; // charge >>> shift is in [256, 511]
        long mantissa = ((long) charge + (1L << shift) - 1) >>> shift;
        if (mantissa == 512) {
            shift++;
            mantissa = 256;
        }
        return (shift + 1) << 8 | (int) (mantissa - 256);
    }

    /** {@return the charge a code stands for} */
    static long decode(int code) {
        return code < EXACT ? code : (long) (256 + (code & 255)) << ((code >>> 8) - 1);
    }

    /**
     * {@return {@code charge} rounded up to what a code can hold} Charges over
     * an {@code int} come back as they are: no entry may have one.
     */
    static long round(long charge) {
        return charge < EXACT || charge > Integer.MAX_VALUE ? charge : decode(encode((int) charge));
    }
}
