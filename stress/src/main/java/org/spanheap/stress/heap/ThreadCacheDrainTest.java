package org.spanheap.stress.heap;

import org.spanheap.HeapStats;
import org.spanheap.SpanHeap;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicLong;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.Description;
import org.openjdk.jcstress.annotations.Expect;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Thread caches of dying threads, drained or adopted ({@code ThreadCaches.newThreadCache},
 * {@code adoptDeadLocked}, {@code drainDeadLocked}, {@code stats}).
 *
 * <p>Each actor starts a short-lived platform thread that allocates a few blocks of a size
 * class no other thread of this test uses, stamps and checks them, frees them (into its Java
 * magazine, which the first allocation refilled with half its capacity) and dies with the
 * magazine full of cached blocks. The two threads run at the same time, so one thread's
 * cache registration (which adopts a cache of a thread already dead, blocks and all, and
 * drains the others) races with the other thread's allocations, its death, and with
 * {@code stats()} of the other actor, which also drains dead caches and reads live caches'
 * tops (opaque). A thread that adopted a cache allocates its blocks from the dead thread's
 * freed ones, so a block handed to two threads, or a cache owned by two, breaks a stamp.
 * Each actor joins its thread.
 *
 * <p>The arbiter runs when no actor runs: its {@code stats()} drains what is still
 * registered of dead threads; then the class has no live and no cached block: every block a
 * dead thread cached is back in the native heap, exactly once (a cache drained twice would
 * put blocks in the native free lists twice and hand them out twice, which the stamps catch).
 *
 * <p>r1, r2 (actors): 0 all stamps intact; 1 a stamp overwritten (a block held twice);
 * 2 the thread failed. r3 (arbiter): 0 nothing live or cached; 1 blocks of the class still
 * counted live (lost); 2 blocks still cached (a dead thread's cache not drained); 4 an
 * actor's stats() reported a cached count out of range.
 */
@JCStressTest
@Description("Java thread caches of dying platform threads are adopted by one new thread or drained exactly once, racing other threads' registration and stats().")
@Outcome(id = "0, 0, 0", expect = Expect.ACCEPTABLE,
        desc = "Both threads' blocks intact; after they died everything they cached (adopted or not) is back in the heap.")
@Outcome(expect = Expect.FORBIDDEN,
        desc = "A block held twice, a failed thread, or blocks of dead threads lost or still cached.")
@State
public class ThreadCacheDrainTest {
    static final SpanHeap HEAP = SpanHeap.create();
    /** 48-byte blocks (class 2): used only by the short-lived threads of this test. */
    static final long SIZE = 48;
    static final int CLASS = 2;
    static final int BLOCKS = 5;
    static final int CACHE_CAPACITY = SpanHeap.DEFAULT_CACHE_BLOCKS;
    private static final AtomicLong IDS = new AtomicLong();

    private final long id = IDS.incrementAndGet() << 8;
    private volatile int badStats;

    @Actor
    public void actor1(III_Result r) {
        r.r1 = runThread(id | 0x10);
    }

    @Actor
    public void actor2(III_Result r) {
        int[] code = new int[1];
        Thread t = Thread.ofPlatform().unstarted(() -> code[0] = use(id | 0x20));
        t.setUncaughtExceptionHandler((th, e) -> code[0] = 2);
        t.start();
        // racing the other thread's life and death, and our own thread's
        HeapStats.SizeClass c = HEAP.stats().sizeClasses().get(CLASS);
        if (c.cachedBlocks() < 0 || c.cachedBlocks() > 2L * CACHE_CAPACITY + BLOCKS) {
            badStats = 4;
        }
        r.r2 = join(t, code);
    }

    @Arbiter
    public void arbiter(III_Result r) {
        HeapStats.SizeClass c = HEAP.stats().sizeClasses().get(CLASS);
        r.r3 = (c.liveBlocks() == 0 ? 0 : 1) | (c.cachedBlocks() == 0 ? 0 : 2) | badStats;
    }

    private static int runThread(long stamp) {
        int[] code = new int[1];
        Thread t = Thread.ofPlatform().unstarted(() -> code[0] = use(stamp));
        t.setUncaughtExceptionHandler((th, e) -> code[0] = 2);
        t.start();
        return join(t, code);
    }

    private static int join(Thread t, int[] code) {
        try {
            t.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 2;
        }
        return code[0];                          // join: happens-after the thread's writes
    }

    /** Allocates, stamps, checks and frees {@link #BLOCKS} blocks; {@return 0 or 1 (stamp broken)} */
    private static int use(long stamp) {
        MemorySegment[] s = new MemorySegment[BLOCKS];
        for (int i = 0; i < BLOCKS; i++) {
            s[i] = HEAP.allocateUninitialized(SIZE);
            s[i].set(JAVA_LONG, 0, stamp | i);
            s[i].set(JAVA_LONG, SIZE - 8, stamp | i);
        }
        int code = 0;
        for (int i = 0; i < BLOCKS; i++) {
            if (s[i].get(JAVA_LONG, 0) != (stamp | i) || s[i].get(JAVA_LONG, SIZE - 8) != (stamp | i)) {
                code = 1;
            }
            HEAP.free(s[i]);
        }
        return code;
    }
}
