package org.spanheap.internal.compact;

/**
 * When the background thread compacts and from which pages: passes under load
 * paced by the compaction interval (from pages not-full for a whole interval
 * and at most two thirds used), a pass at once when a tenth of the page bytes
 * hold no object, and a pass at rest (nothing allocated or freed for an
 * interval) from any page, so that a quiet heap meets the bound for every
 * page. Used by the background thread only (its decisions, under the heap's
 * round lock or in its own loop); reads the classes' counters racily, as hints
 * that the rounds re-check under the class locks.
 */
final class BackgroundPacing {

    private final SizeClassPages[] classes;
    private final Limbo limbo;
    /** κ: the not-full pages per class a pass brings the classes back to. */
    private final int bound;
    private final long pageSize;
    /** Pace of the passes under load (see {@link #compactionDue()}). */
    private final long passIntervalNanos;
    /**
     * A page is emptied by a background pass only after it has been not-full this long (the
     * compaction interval): under churn the objects left in a page with fresh holes tend to die
     * soon as well, and moving them is wasted work. {@code compact()} and {@code relocate()}
     * do not wait.
     */
    final long minSourceAgeNanos;
    /** Whether a pass under load is running: its rounds follow each other until the bound holds. */
    private boolean passRunning;
    /** When the last pass ended. */
    private long passEnded = System.nanoTime();
    /**
     * Rest detection (background thread only): the count of allocations and releases seen at the
     * last idle tick, and when it last changed. A heap with nothing allocated or freed for a
     * pass interval is at rest; then a pass takes any not-full page, so that the bound holds for
     * every page, not only for the old and sparse ones a pass under load takes.
     */
    private long restOperations = -1;
    private long restSince = System.nanoTime();
    /** Set by an idle tick that found the heap at rest and over the bound; the next rounds compact from any page. */
    private boolean restPass;
    /** When the last rest round moved nothing (its blocks were not movable yet): the next waits a backoff. */
    private long fruitlessRestRound = System.nanoTime() - FRUITLESS_BACKOFF_NANOS;

    /**
     * @param background whether a background thread runs the passes (else sources need no age:
     *     the bound is restored after every free)
     */
    BackgroundPacing(SizeClassPages[] classes, Limbo limbo, int bound, long pageSize, long passIntervalNanos,
            boolean background) {
        this.classes = classes;
        this.limbo = limbo;
        this.bound = bound;
        this.pageSize = pageSize;
        this.passIntervalNanos = passIntervalNanos;
        this.minSourceAgeNanos = background ? passIntervalNanos : 0;
    }

    /** {@return whether the next round is a rest pass's: moves from any page} */
    boolean restPass() {
        return restPass;
    }

    /** Records a background round: whether it was a rest pass's, whether it compacted, the bytes it moved. */
    void afterRound(boolean rest, boolean compacting, long moved) {
        if (rest) {
            restPass = moved > 0 && SizeClassPages.anyOver(classes, bound); // go on while it moves and the bound does not hold
            if (moved == 0) {
                fruitlessRestRound = System.nanoTime();
            }
        }
        if (compacting) {
            passRunning = moved > 0 && SizeClassPages.anyOver(classes, bound);
            if (!passRunning) {
                passEnded = System.nanoTime();
            }
            if (moved == 0) {
                fruitlessRound = passEnded;
            }
        }
    }

    /**
     * Samples the activity at an idle tick ({@code ops}: the count of allocations and releases
     * now); {@return whether the heap is at rest (nothing allocated
     * or released for a pass interval, nothing freed waiting) and over the bound} Sets
     * {@link #restPass} then.
     */
    boolean restDueOnIdleTick(long ops) {
        long now = System.nanoTime();
        if (ops != restOperations) {
            restOperations = ops;
            restSince = now;
            restPass = false;
            return false;
        }
        restPass = bound != Integer.MAX_VALUE && limbo.isEmpty() && now - restSince >= passIntervalNanos
                && now - fruitlessRestRound >= FRUITLESS_BACKOFF_NANOS && SizeClassPages.anyOver(classes, bound);
        return restPass;
    }

    /**
     * {@return whether a rest pass goes on} It goes on round after round while nothing is
     * allocated or freed ({@code ops}: the count of allocations and releases now).
     */
    boolean restPassGoesOn(long ops) {
        if (restPass && (ops != restOperations || !limbo.isEmpty())) {
            restPass = false; // activity again: the pass under load takes over
        }
        return restPass;
    }

    /**
     * Whether the background thread should move objects now: a class is over
     * its bound, and a pass is running or the interval since the last pass has
     * passed. Pacing matters under steady churn: frees leave holes in many pages
     * and allocations fill them again within milliseconds; compacting at once
     * would move objects only to have the holes refilled (measured: twice the
     * rounds and half the throughput).
     */
    boolean compactionDue() {
        if (bound == Integer.MAX_VALUE || !SizeClassPages.anyOver(classes, bound)) {
            return false;
        }
        long now = System.nanoTime();
        if (now - fruitlessRound < FRUITLESS_BACKOFF_NANOS) {
            return false; // the last compaction round found nothing to move: let allocation and frees act first
        }
        return passRunning || now - passEnded >= passIntervalNanos || wasteful();
    }

    /** Sources of any use: {@code compact()}, the rounds that restore the bound after every free, a pass at rest. */
    static final int ANY_SOURCE = 100;
    /**
     * A background pass empties only pages at most two thirds used: emptying a
     * page moves its used blocks, so a fuller page costs more copying per page
     * freed, and under churn allocation refills its holes anyway. Measured on
     * the cache benchmark (mixed sizes, 50% writes, 2 threads, passes every
     * 10 ms with 1 MiB rounds): from any
     * page 76-100 MiB moved a second for 67-75 MiB committed (59 MiB live);
     * from pages at most two thirds used 42-86 MiB/s for 66-77 MiB, and the
     * mixed rows' throughput 0.86 and 0.78 ops/us against 0.77 and 0.72 (two
     * runs each); at most half used, 31-48 MiB/s but the cache's peak over
     * 1.3 times its bound.
     * {@code compact()}, the rounds that restore the bound after every free, and a pass at rest take any page.
     */
    static final int PASS_SOURCE_USE = 67;

    /** After a compaction round that could move nothing, wait this long before the next (no busy loop). */
    private static final long FRUITLESS_BACKOFF_NANOS = 10_000_000L;
    /** When the last compaction round moved nothing (compactor thread only). */
    private long fruitlessRound = System.nanoTime() - FRUITLESS_BACKOFF_NANOS;

    /**
     * A tenth of the page bytes without an object starts a pass at once. Measured against a
     * fifth (CacheChurnBenchmark memory mode, 2 threads, 10 s, one run each): a tenth 1.59
     * ops/us with committed/live at most 1.30; a fifth 2.11 ops/us and 1.53. Memory first:
     * it is what this heap is chosen for.
     */
    private static final long WASTE_DIVISOR = 10;

    /**
     * Whether more than a tenth of the page bytes hold no object (freed objects
     * waiting in the limbo still count as held): then a pass runs at once,
     * whatever the pace. This is the case a size-mix shift makes (a class's
     * objects die within milliseconds and leave its pages sparse), where
     * waiting for the interval would let committed memory run far ahead of
     * the live bytes. Racy reads of the classes' counters: a hint.
     */
    private boolean wasteful() {
        long pageBytes = 0, blockBytes = 0;
        for (SizeClassPages c : classes) {
            pageBytes += c.pageCount();
            blockBytes += c.liveBlocks * c.blockSize;
        }
        pageBytes *= pageSize;
        return pageBytes - blockBytes > pageBytes / WASTE_DIVISOR;
    }
}
