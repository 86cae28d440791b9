package org.spanheap.stress;

import java.util.Locale;
import java.util.function.LongSupplier;

/**
 * Prints a CSV line {@code rss,elapsed_s,rss_kib,committed_bytes,live_bytes} every N seconds
 * (and a header once), so that {@code grep '^rss,'} of a long run's output charts memory
 * over time. Called from the programs' supervising loop, not a thread of its own.
 */
final class RssLog {

    static final String HEADER = "rss,elapsed_s,rss_kib,committed_bytes,live_bytes";

    private final long periodNanos;
    private final long start;
    private long next;

    /** @param everySeconds the period; 0 turns the log off */
    RssLog(int everySeconds, long startNanos) {
        this.periodNanos = everySeconds * 1_000_000_000L;
        this.start = startNanos;
        this.next = startNanos;
        if (everySeconds > 0) {
            System.out.println(HEADER);
        }
    }

    /** Prints a line if one is due; the figures are asked for only then. */
    void maybeLog(long nowNanos, LongSupplier committed, LongSupplier live) {
        if (periodNanos == 0 || nowNanos < next) {
            return;
        }
        while (next <= nowNanos) {
            next += periodNanos;
        }
        log(nowNanos, committed.getAsLong(), live.getAsLong());
    }

    /** Prints a line now (the programs add one at the end, after everything is freed). */
    void log(long nowNanos, long committedBytes, long liveBytes) {
        if (periodNanos == 0) {
            return;
        }
        System.out.printf(Locale.ROOT, "rss,%d,%d,%d,%d%n", (nowNanos - start) / 1_000_000_000L,
                ResidentMemory.currentKib(), committedBytes, liveBytes);
    }
}
