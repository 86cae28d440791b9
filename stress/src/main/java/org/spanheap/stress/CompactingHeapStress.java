package org.spanheap.stress;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

import org.spanheap.CompactingHeap;
import org.spanheap.CompactingHeapStats;
import org.spanheap.StaleHandleException;

/**
 * A randomized long-running stress of one {@link CompactingHeap} with many platform and
 * virtual threads: contents must stay intact while compaction moves objects under the
 * readers, writers and freers, and the heap's accounting must come back to zero.
 *
 * <p>Workers (kept alive and replaced as they end by a {@link WorkerPool}) repeatedly:
 * allocate objects of random sizes (mostly small enough to live in size classes and move,
 * some up to a few MiB, rarely up to 64 MiB; live bytes bounded by the budget) and fill them
 * with the pattern of a unique id ({@link StressPattern}: the id is the first long), through
 * the allocation's initializer or a later {@code write}; verify them through {@code read};
 * re-fill them with a new id through {@code write}; check the id with {@code getLong}; hand
 * handles to other threads through mailboxes (the receiver verifies, then frees or adopts);
 * free them, then check that the freed handle throws {@link StaleHandleException} (read,
 * size and a second free); move single objects with {@code relocate}; and now and then call
 * {@code compact()}, {@code trim()} and {@code stats()}. The heap's background thread
 * compacts all along as well.
 *
 * <p>At the end every object is verified and freed, the heap compacted and trimmed, and the
 * run fails (exit code 1, with a message) on any corrupted pattern, any worker exception, a
 * freed handle that still works, or live bytes, live objects, large objects or pending
 * reclaims not back to 0.
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -cp stress/target/jcstress.jar \
 *     org.spanheap.stress.CompactingHeapStress [--seconds 60] [--platform 8] [--virtual 32] \
 *     [--budget-mib 256] [--seed n] [--rss-every-seconds 0]
 * </pre>
 */
public final class CompactingHeapStress {

    /** No progress for this long is a hang (the watchdog fails the run); far above any pause seen. */
    private static final int STALL_SECONDS = 30;

    private final StressOptions options;
    private final Failures failures = new Failures();
    private final WorkerPool workers;
    // Thread-owned pages on: the opt-in allocation path gets the stress's coverage; the default
    // lanes are stressed through CacheStress (OffHeapCache's heap) and the JUnit suite.
    private final CompactingHeap heap = CompactingHeap.builder().threadOwnedPages(true).build();
    @SuppressWarnings("unchecked")
    private final ConcurrentLinkedQueue<Obj>[] mailboxes =
            (ConcurrentLinkedQueue<Obj>[]) new ConcurrentLinkedQueue<?>[16];
    private final AtomicLong liveBudget = new AtomicLong();
    private final AtomicLong ids = new AtomicLong();
    private final AtomicLong ops = new AtomicLong();
    private final AtomicLong allocations = new AtomicLong();
    private final AtomicLong verifications = new AtomicLong();
    private final AtomicLong handoffs = new AtomicLong();
    private final AtomicLong staleChecks = new AtomicLong();
    private final AtomicLong relocations = new AtomicLong();
    private final AtomicLong compactCalls = new AtomicLong();
    private final AtomicLong trimCalls = new AtomicLong();

    /**
     * An object some thread owns or that sits in a mailbox. {@code id} names its pattern and
     * is changed only by its owner; {@code footprint} is what it counts against the budget.
     */
    private record Obj(long handle, long id, long size, long footprint) {
    }

    private CompactingHeapStress(StressOptions options) {
        this.options = options;
        this.workers = new WorkerPool(options.platform(), options.virtual(), options.seed(), failures, this::work);
        for (int i = 0; i < mailboxes.length; i++) {
            mailboxes[i] = new ConcurrentLinkedQueue<>();
        }
    }

    public static void main(String[] args) throws InterruptedException {
        StressOptions options = StressOptions.parse("CompactingHeapStress",
                "A randomized stress of one CompactingHeap: contents are checked while"
                + " compaction moves objects under the threads.", args);
        System.exit(new CompactingHeapStress(options).run());
    }

    // ---------------------------------------------------------------- run

    private int run() throws InterruptedException {
        System.out.printf(Locale.ROOT, "CompactingHeapStress: %d s, %d platform + %d virtual workers, budget %d MiB,"
                        + " seed %d, page %d KiB, largest moving object %d B%n",
                options.seconds(), options.platform(), options.virtual(), options.budgetBytes() >> 20,
                options.seed(), heap.pageSize() >> 10, heap.maxSizeClassObjectSize());
        long start = System.nanoTime();
        RssLog rss = new RssLog(options.rssEverySeconds(), start);
        long peakCommitted = 0;
        Watchdog watchdog = new Watchdog("CompactingHeapStress", ops::get, STALL_SECONDS);
        workers.start();
        long end = start + options.seconds() * 1_000_000_000L;
        long nextReport = start + 5_000_000_000L;
        while (System.nanoTime() < end && !failures.any()) {
            Thread.sleep(20);
            watchdog.tick();
            workers.replaceEnded();
            long now = System.nanoTime();
            CompactingHeapStats s = heap.stats();
            peakCommitted = Math.max(peakCommitted, s.committedBytes());
            rss.maybeLog(now, s::committedBytes, s::liveBytes);
            if (now >= nextReport) {
                nextReport += 5_000_000_000L;
                report((now - start) / 1_000_000_000L, s);
            }
        }
        watchdog.workersStopped();
        workers.stopAndJoin(Duration.ofSeconds(STALL_SECONDS));
        watchdog.tick();
        for (ConcurrentLinkedQueue<Obj> q : mailboxes) {
            for (Obj o; (o = q.poll()) != null; ) {
                verify(o, "mailbox at the end");
                release(o);
            }
        }
        long moved = heap.compact();
        long trimmed = heap.trim();
        CompactingHeapStats after = heap.stats();
        report((System.nanoTime() - start) / 1_000_000_000L, after);
        rss.log(System.nanoTime(), after.committedBytes(), after.liveBytes());
        if (after.liveBytes() != 0 || after.liveObjects() != 0 || after.largeObjects() != 0) {
            failures.fail("after freeing every object the heap reports " + after.liveBytes() + " live bytes in "
                    + after.liveObjects() + " objects, " + after.largeObjects() + " large");
        }
        if (after.pendingReclaimBytes() != 0) {
            failures.fail("after compact() and trim() " + after.pendingReclaimBytes() + " freed bytes await reclaim");
        }
        if (liveBudget.get() != 0) {
            failures.fail("internal bookkeeping: " + liveBudget.get() + " budget bytes not returned");
        }
        System.out.printf(Locale.ROOT, "end: compact() moved %d B, trim() released %d KiB; committed peak %d MiB,"
                        + " now %d KiB in %d pages; %d epochs, longest round %d us%n",
                moved, trimmed >> 10, peakCommitted >> 20, after.committedBytes() >> 10, after.pages(),
                after.epochs(), after.maxIncrementNanos() / 1000);
        System.out.printf(Locale.ROOT, "summary: %d ops, %d allocations, %d verifications, %d hand-offs, %d stale checks,"
                        + " %d relocations, %d compact() + %d trim() calls, moved %d MiB in %d rounds,"
                        + " threads %d started / %d ended, peak RSS %d KiB%n",
                ops.get(), allocations.get(), verifications.get(), handoffs.get(), staleChecks.get(),
                relocations.get(), compactCalls.get(), trimCalls.get(), after.movedBytes() >> 20,
                after.compactionIncrements(), workers.started(), workers.ended(), ResidentMemory.peakKib());
        heap.close();
        return failures.verdict();
    }

    private void report(long second, CompactingHeapStats s) {
        System.out.printf(Locale.ROOT, "[%3d s] ops %d, threads %d started / %d ended, live %d MiB in %d objects"
                        + " (%d large), committed %d MiB in %d pages, moved %d MiB in %d rounds, max not-full %d%n",
                second, ops.get(), workers.started(), workers.ended(), s.liveBytes() >> 20, s.liveObjects(),
                s.largeObjects(), s.committedBytes() >> 20, s.pages(), s.movedBytes() >> 20,
                s.compactionIncrements(), s.maxNotFullPages());
    }

    // ---------------------------------------------------------------- one worker

    private void work(SplittableRandom r, boolean platform) {
        List<Obj> mine = new ArrayList<>();
        long lifeOps = 100 + r.nextLong(platform ? 4_000 : 1_000);   // short lives: thread churn
        for (long n = 0; n < lifeOps && !workers.stopping() && !failures.any(); n++) {
            ops.incrementAndGet();
            int op = r.nextInt(1000);
            if (op < 360) {
                Obj o = allocate(r);
                if (o != null) {
                    mine.add(o);
                }
            } else if (op < 560) {
                if (!mine.isEmpty()) {
                    Obj o = mine.remove(r.nextInt(mine.size()));
                    verify(o, "own object");
                    release(o);
                    if (r.nextInt(8) == 0) {
                        checkStale(o);
                    }
                }
            } else if (op < 640) {
                if (!mine.isEmpty()) {                       // hand an object to another thread
                    mailboxes[r.nextInt(mailboxes.length)].offer(mine.remove(r.nextInt(mine.size())));
                    handoffs.incrementAndGet();
                }
            } else if (op < 760) {
                // polled more often than offered to, so objects do not sit in mailboxes for long
                Obj o = mailboxes[r.nextInt(mailboxes.length)].poll();
                if (o != null) {                             // take one: check, then free or adopt
                    if (r.nextBoolean()) {
                        verify(o, "handed-over object");
                        release(o);
                    } else {
                        mine.add(refill(o));                 // verifies first
                    }
                }
            } else if (op < 880) {
                if (!mine.isEmpty()) {
                    verify(mine.get(r.nextInt(mine.size())), "own object");
                }
            } else if (op < 920) {
                if (!mine.isEmpty()) {
                    int i = r.nextInt(mine.size());
                    mine.set(i, refill(mine.get(i)));
                }
            } else if (op < 950) {
                if (!mine.isEmpty()) {
                    Obj o = mine.get(r.nextInt(mine.size()));
                    if (o.size() >= 8 && heap.getLong(o.handle(), 0) != o.id()) {
                        failures.fail("getLong(0) of object id " + o.id() + " (" + o.size() + " B) read "
                                + heap.getLong(o.handle(), 0));
                    }
                }
            } else if (op < 965) {
                if (!mine.isEmpty()) {
                    Obj o = mine.get(r.nextInt(mine.size()));
                    if (heap.relocate(o.handle())) {
                        relocations.incrementAndGet();
                    }
                    verify(o, "relocated object");
                }
            } else if (op < 970) {
                for (Obj o : mine) {
                    verify(o, "own object (sweep)");
                }
            } else if (op < 975) {
                heap.compact();
                compactCalls.incrementAndGet();
            } else if (op < 977) {
                heap.trim();
                trimCalls.incrementAndGet();
            } else {
                CompactingHeapStats s = heap.stats();
                if (s.liveBytes() < 0 || s.liveObjects() < 0 || s.committedBytes() < 0 || s.pendingReclaimBytes() < 0) {
                    failures.fail("negative figure in concurrent stats: " + s);
                }
            }
        }
        // End of life: free most objects, leave some to other threads (or to the final sweep).
        for (Obj o : mine) {
            if (r.nextInt(4) == 0) {
                mailboxes[r.nextInt(mailboxes.length)].offer(o);
            } else {
                verify(o, "own object at thread end");
                release(o);
            }
        }
    }

    /** {@return a random size: mostly small (moving) objects, some up to a few MiB, rarely up to 64 MiB} */
    private static long size(SplittableRandom r) {
        int k = r.nextInt(10_000);
        if (k < 6_000) {
            return r.nextLong(0, 257);
        } else if (k < 8_500) {
            return r.nextLong(257, 4097);
        } else if (k < 9_500) {
            return r.nextLong(4097, 16_385);
        } else if (k < 9_990) {
            return r.nextLong(16_385, 4L << 20);
        } else {
            return r.nextLong(4L << 20, (64L << 20) + 1);
        }
    }

    private Obj allocate(SplittableRandom r) {
        long size = size(r);
        long footprint = heap.footprint(size);
        if (liveBudget.addAndGet(footprint) > options.budgetBytes()) {
            liveBudget.addAndGet(-footprint);
            return null;
        }
        long id = ids.incrementAndGet();
        long handle;
        if (r.nextBoolean()) {
            handle = heap.allocate(size, s -> StressPattern.fill(s, id));   // reruns are harmless
        } else {
            handle = heap.allocate(size);
            long zeroed = heap.read(handle, s -> StressPattern.zeroed(s) ? 1L : 0L);
            if (zeroed != 1) {
                failures.fail("allocate(" + size + ") returned an object that is not zeroed");
            }
            heap.write(handle, s -> StressPattern.fill(s, id));
        }
        allocations.incrementAndGet();
        if (heap.size(handle) != size) {
            failures.fail("size() of a new " + size + " B object is " + heap.size(handle));
        }
        return new Obj(handle, id, size, footprint);
    }

    /** Checks the object, then gives it a new id and pattern (the new owner's); the handle stays. */
    private Obj refill(Obj o) {
        verify(o, "object before re-filling");
        long id = ids.incrementAndGet();
        heap.write(o.handle(), s -> StressPattern.fill(s, id));
        return new Obj(o.handle(), id, o.size(), o.footprint());
    }

    private void release(Obj o) {
        heap.free(o.handle());
        liveBudget.addAndGet(-o.footprint());
    }

    private void verify(Obj o, String what) {
        verifications.incrementAndGet();
        // {offset of the first mismatch or -1, the first long found}, computed on one segment
        long[] found = heap.read(o.handle(), s -> new long[] {StressPattern.mismatch(s, o.id()), StressPattern.foundId(s)});
        if (found[0] >= 0) {
            failures.fail(String.format(Locale.ROOT,
                    "pattern corrupted: %s, handle 0x%x (%d B, id %d, first long %d) at offset %d, thread %s",
                    what, o.handle(), o.size(), o.id(), found[1], found[0], Thread.currentThread()));
        }
    }

    /** A freed handle must be refused by every access, and by a second free. */
    private void checkStale(Obj o) {
        staleChecks.incrementAndGet();
        expectStale(o, "read", () -> heap.read(o.handle(), s -> s.byteSize()));
        expectStale(o, "size", () -> heap.size(o.handle()));
        expectStale(o, "free", () -> {
            heap.free(o.handle());
            return null;
        });
    }

    private void expectStale(Obj o, String call, java.util.function.Supplier<?> access) {
        try {
            access.get();
            failures.fail(call + " of freed handle 0x" + Long.toHexString(o.handle()) + " (id " + o.id()
                    + ") did not throw StaleHandleException");
        } catch (StaleHandleException expected) {
            // the handle names no live object any more
        }
    }
}
