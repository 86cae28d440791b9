package org.spanheap.stress;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;

import org.spanheap.HeapStats;
import org.spanheap.SpanHeap;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/**
 * A randomized long-running stress of one {@link SpanHeap} with many platform and virtual
 * threads, checking contents throughout and the heap's accounting at the end.
 *
 * <p>Workers (platform and virtual threads, each living a random short time; a spawner
 * replaces every worker that ends, so threads are created and end all through the run)
 * repeatedly: allocate blocks of random sizes (mostly small, some up to the largest size
 * class, a few directly mapped large ones; some with alignments up to 4096), fill them with a
 * pattern derived from a unique block id, verify and free them in random order, hand blocks
 * to other threads through shared mailboxes (the receiver verifies, then frees or adopts and
 * re-fills them), open arenas of the heap and fill, verify and close them, and call
 * {@code stats()} and {@code flushThreadCache()}. A worker that ends hands some of its
 * blocks to the mailboxes, so other threads free blocks of dead threads. Live bytes are
 * bounded by a budget.
 *
 * <p>At the end every block is verified and freed, and the run fails (exit code 1, with a
 * message) unless: no pattern was ever corrupted, no worker threw, the heap reports zero
 * live bytes and no large object, and committed and resident memory after freeing everything
 * are below their peaks during the run (freed spans go back to the OS).
 *
 * <pre>
 * java --enable-native-access=ALL-UNNAMED -cp stress/target/jcstress.jar \
 *     org.spanheap.stress.RandomizedStress [--seconds 60] [--platform 8] [--virtual 32] \
 *     [--budget-mib 256] [--seed n] [--rss-every-seconds 0]
 * </pre>
 */
public final class RandomizedStress {

    /** No progress for this long is a hang (the watchdog fails the run); far above any pause seen. */
    private static final int STALL_SECONDS = 30;

    private final StressOptions options;
    private final Failures failures = new Failures();
    private final WorkerPool workers;
    private final SpanHeap heap = SpanHeap.create();
    @SuppressWarnings("unchecked")
    private final ConcurrentLinkedQueue<Block>[] mailboxes =
            (ConcurrentLinkedQueue<Block>[]) new ConcurrentLinkedQueue<?>[16];
    private final AtomicLong liveBudget = new AtomicLong();
    private final AtomicLong ids = new AtomicLong();
    private final AtomicLong ops = new AtomicLong();
    private final AtomicLong allocations = new AtomicLong();
    private final AtomicLong handoffs = new AtomicLong();
    private final AtomicLong arenas = new AtomicLong();

    /** A block some thread owns (its list) or that sits in a mailbox; {@code id} names its pattern. */
    private record Block(MemorySegment segment, long id, long reserved) {
    }

    private RandomizedStress(StressOptions options) {
        this.options = options;
        this.workers = new WorkerPool(options.platform(), options.virtual(), options.seed(), failures, this::work);
        for (int i = 0; i < mailboxes.length; i++) {
            mailboxes[i] = new ConcurrentLinkedQueue<>();
        }
    }

    public static void main(String[] args) throws InterruptedException {
        StressOptions options = StressOptions.parse("RandomizedStress",
                "A randomized stress of one SpanHeap: platform and virtual threads allocate,"
                + " check and free blocks; contents and accounting are checked.", args);
        System.exit(new RandomizedStress(options).run());
    }

    // ---------------------------------------------------------------- run

    private int run() throws InterruptedException {
        System.out.printf(Locale.ROOT, "RandomizedStress: %d s, %d platform + %d virtual workers, budget %d MiB, seed %d%n",
                options.seconds(), options.platform(), options.virtual(), options.budgetBytes() >> 20, options.seed());
        HeapStats before = heap.stats();
        long peakCommitted = before.committedBytes();
        long peakResident = before.residentBytes();
        long start = System.nanoTime();
        RssLog rss = new RssLog(options.rssEverySeconds(), start);
        Watchdog watchdog = new Watchdog("RandomizedStress", ops::get, STALL_SECONDS);
        workers.start();
        long end = start + options.seconds() * 1_000_000_000L;
        long nextReport = start + 5_000_000_000L;
        while (System.nanoTime() < end && !failures.any()) {
            Thread.sleep(20);
            watchdog.tick();
            workers.replaceEnded();
            long now = System.nanoTime();
            HeapStats s = heap.stats();
            peakCommitted = Math.max(peakCommitted, s.committedBytes());
            peakResident = Math.max(peakResident, s.residentBytes());
            rss.maybeLog(now, s::committedBytes, s::liveBytes);
            if (now >= nextReport) {
                nextReport += 5_000_000_000L;
                report((now - start) / 1_000_000_000L, s);
            }
        }
        watchdog.workersStopped();
        workers.stopAndJoin(Duration.ofSeconds(STALL_SECONDS));
        watchdog.tick();
        // Free what the mailboxes still hold, after checking it.
        for (ConcurrentLinkedQueue<Block> q : mailboxes) {
            for (Block b; (b = q.poll()) != null; ) {
                verify(b, "mailbox at the end");
                release(b);
            }
        }
        HeapStats peakView = heap.stats();
        peakCommitted = Math.max(peakCommitted, peakView.committedBytes());
        peakResident = Math.max(peakResident, peakView.residentBytes());
        heap.flushThreadCache();
        HeapStats after = heap.stats();
        report((System.nanoTime() - start) / 1_000_000_000L, after);
        rss.log(System.nanoTime(), after.committedBytes(), after.liveBytes());
        if (after.liveBytes() != 0 || after.largeCount() != 0 || after.largeBytes() != 0) {
            fail("after freeing every block the heap reports " + after.liveBytes() + " live bytes, "
                    + after.largeCount() + " large objects (" + after.largeBytes() + " bytes); per class: "
                    + after.sizeClasses().stream().filter(c -> c.liveBlocks() != 0)
                            .map(c -> c.blockSize() + " B: " + c.liveBlocks()).toList());
        }
        if (liveBudget.get() != 0) {
            fail("internal bookkeeping: " + liveBudget.get() + " budget bytes not returned");
        }
        if (after.committedBytes() >= peakCommitted) {
            fail("committed memory did not shrink after everything was freed: peak " + peakCommitted
                    + " bytes, now " + after.committedBytes());
        }
        if (after.residentBytes() >= peakResident) {
            fail("resident memory (estimate) did not shrink after everything was freed: peak " + peakResident
                    + " bytes, now " + after.residentBytes());
        }
        System.out.printf(Locale.ROOT, "committed: before %d MiB, peak %d MiB, after freeing everything %d MiB;"
                        + " resident estimate: peak %d MiB, after %d MiB; %d spans carved, %d madvise calls%n",
                before.committedBytes() >> 20, peakCommitted >> 20, after.committedBytes() >> 20,
                peakResident >> 20, after.residentBytes() >> 20, after.spansCarved(), after.madviseCalls());
        System.out.printf(Locale.ROOT, "totals: %d ops, %d allocations, %d hand-offs, %d arenas, threads %d started / %d ended%n",
                ops.get(), allocations.get(), handoffs.get(), arenas.get(), workers.started(), workers.ended());
        System.out.printf(Locale.ROOT, "peak RSS %d KiB%n", ResidentMemory.peakKib());
        heap.close();
        return failures.verdict();
    }

    private void report(long second, HeapStats s) {
        System.out.printf(Locale.ROOT, "[%3d s] ops %d, threads %d started / %d ended, live %d MiB, cached %d KiB,"
                        + " committed %d MiB, large %d, spans hot/floating/reusable/free %d/%d/%d/%d%n",
                second, ops.get(), workers.started(), workers.ended(), s.liveBytes() >> 20,
                s.cachedBytes() >> 10, s.committedBytes() >> 20, s.largeCount(),
                s.spansHot(), s.spansFloating(), s.spansReusable(), s.spansFree());
    }

    private void fail(String message) {
        failures.fail(message);
    }

    // ---------------------------------------------------------------- one worker

    private void work(SplittableRandom r, boolean platform) {
        List<Block> mine = new ArrayList<>();
        long lifeOps = 100 + r.nextLong(platform ? 4_000 : 1_000);   // short lives: thread churn
        for (long n = 0; n < lifeOps && !workers.stopping() && !failures.any(); n++) {
            ops.incrementAndGet();
            int op = r.nextInt(100);
            if (op < 40) {
                Block b = allocate(r);
                if (b != null) {
                    mine.add(b);
                }
            } else if (op < 70) {
                if (!mine.isEmpty()) {
                    Block b = mine.remove(r.nextInt(mine.size()) );
                    verify(b, "own block");
                    release(b);
                }
            } else if (op < 78) {
                if (!mine.isEmpty()) {                       // hand a block to another thread
                    Block b = mine.remove(r.nextInt(mine.size()));
                    mailboxes[r.nextInt(mailboxes.length)].offer(b);
                    handoffs.incrementAndGet();
                }
            } else if (op < 90) {
                // polled more often than offered to, so blocks do not sit in mailboxes for long
                Block b = mailboxes[r.nextInt(mailboxes.length)].poll();
                if (b != null) {                             // take one: check, then free or adopt
                    verify(b, "handed-over block");
                    if (r.nextBoolean()) {
                        release(b);
                    } else {
                        long id = ids.incrementAndGet();
                        StressPattern.fill(b.segment(), id);
                        mine.add(new Block(b.segment(), id, b.reserved()));
                    }
                }
            } else if (op < 95) {
                arena(r);
            } else if (op < 97) {
                for (Block b : mine) {
                    verify(b, "own block (sweep)");
                }
            } else if (op < 99) {
                HeapStats s = heap.stats();
                if (s.liveBytes() < 0 || s.cachedBytes() < 0 || s.committedBytes() < 0) {
                    fail("negative figure in concurrent stats: " + s);
                }
            } else {
                heap.flushThreadCache();
            }
        }
        // End of life: free most blocks, leave some to other threads (or to the final sweep).
        for (Block b : mine) {
            if (r.nextInt(4) == 0) {
                mailboxes[r.nextInt(mailboxes.length)].offer(b);
            } else {
                verify(b, "own block at thread end");
                release(b);
            }
        }
    }

    /** {@return a random size: mostly small, some medium, a few beyond the largest class} */
    private static long size(SplittableRandom r) {
        int k = r.nextInt(1000);
        if (k < 700) {
            return r.nextLong(0, 257);
        } else if (k < 900) {
            return r.nextLong(257, 8193);
        } else if (k < 985) {
            return r.nextLong(8193, (1 << 20) + 1);
        } else {
            return r.nextLong((1 << 20) + 1, 4L << 20);
        }
    }

    private Block allocate(SplittableRandom r) {
        long size = size(r);
        long reserved = Math.max(size, 16);
        if (liveBudget.addAndGet(reserved) > options.budgetBytes()) {
            liveBudget.addAndGet(-reserved);
            return null;
        }
        MemorySegment s;
        int a = r.nextInt(10);
        if (a == 0) {
            s = heap.allocate(size, 1L << (4 + r.nextInt(9)));      // 16 .. 4096, zeroed
            if (s.address() % 16 != 0 || !StressPattern.zeroed(s)) {
                fail("aligned allocate of " + size + " at 0x" + Long.toHexString(s.address()) + " is not zeroed/aligned");
            }
        } else {
            s = heap.allocateUninitialized(size);
        }
        long id = ids.incrementAndGet();
        StressPattern.fill(s, id);
        allocations.incrementAndGet();
        return new Block(s, id, reserved);
    }

    private void release(Block b) {
        heap.free(b.segment());
        liveBudget.addAndGet(-b.reserved());
    }

    private void arena(SplittableRandom r) {
        arenas.incrementAndGet();
        int n = 1 + r.nextInt(12);
        long[] ids = new long[n];
        MemorySegment[] segs = new MemorySegment[n];
        try (Arena arena = heap.newArena()) {
            for (int i = 0; i < n; i++) {
                long size = r.nextInt(20) == 0 ? size(r) : r.nextLong(1, 2049);
                segs[i] = arena.allocate(size, 1L << r.nextInt(7));
                if (!StressPattern.zeroed(segs[i])) {
                    fail("arena segment of " + size + " bytes is not zeroed");
                }
                ids[i] = this.ids.incrementAndGet();
                StressPattern.fill(segs[i], ids[i]);
            }
            for (int i = 0; i < n; i++) {
                verify(new Block(segs[i], ids[i], 0), "arena segment");
            }
        }
        for (MemorySegment s : segs) {
            try {
                s.get(JAVA_BYTE, 0);
                if (s.byteSize() > 0) {
                    fail("arena segment accessible after the arena closed");
                }
            } catch (IllegalStateException | IndexOutOfBoundsException expected) {
                // closed (or empty)
            }
        }
    }

    // ---------------------------------------------------------------- patterns

    private void verify(Block b, String what) {
        long offset = StressPattern.mismatch(b.segment(), b.id());
        if (offset >= 0) {
            fail(String.format(Locale.ROOT, "pattern corrupted: %s 0x%x (%d bytes, block id %d, first long %d) at offset %d, thread %s",
                    what, b.segment().address(), b.segment().byteSize(), b.id(), StressPattern.foundId(b.segment()),
                    offset, Thread.currentThread()));
        }
    }
}
