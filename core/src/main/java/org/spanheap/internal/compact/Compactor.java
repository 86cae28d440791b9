package org.spanheap.internal.compact;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The background thread of one compacting heap: it runs the rounds (epoch
 * change, reclaim of freed blocks, compaction back to kappa) so that the
 * handshake of an epoch change is never on an allocating or freeing thread's
 * path. Freeing threads wake it when a reclaim batch is full; every
 * {@value #IDLE_MILLIS} ms it also reclaims what smaller frees left, so freed
 * memory does not wait for the next batch.
 */
final class Compactor implements Runnable {

    static final long IDLE_MILLIS = 10;
    private static final AtomicInteger COUNT = new AtomicInteger();

    private final CompactFitHeap heap;
    private final Thread thread;
    /** Set while the thread is known to be awake, so that frees unpark it once, not on every call. */
    private volatile boolean awake;
    private volatile boolean stopped;

    Compactor(CompactFitHeap heap) {
        this.heap = heap;
        this.thread = new Thread(this, "spanheap-compactor-" + COUNT.incrementAndGet());
        thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    /** Asks for a round soon (cheap when the thread is already awake: one volatile read). */
    void wake() {
        if (!awake) {
            awake = true;
            LockSupport.unpark(thread);
        }
    }

    /** Stops the thread and waits for it (its round in progress completes). */
    void stop() {
        stopped = true;
        LockSupport.unpark(thread);
        if (Thread.currentThread() != thread) {
            boolean interrupted = false;
            while (thread.isAlive()) {
                try {
                    thread.join();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public void run() {
        while (!stopped) {
            try {
                if (heap.backgroundTick(false)) {
                    continue;
                }
                awake = false;
                if (heap.hasWork(false)) {
                    continue; // a free raised the pressure after our check and saw us awake
                }
                LockSupport.parkNanos(this, IDLE_MILLIS * 1_000_000L);
                awake = true;
                if (!stopped) {
                    heap.backgroundTick(true);
                }
            } catch (RuntimeException | OutOfMemoryError e) {
                if (heap.isClosed()) {
                    return;
                }
                // a round failed (the OS refused memory, say): frees still reclaim by themselves
                // once the limbo grows (Rounds.reclaimPressure); try again after a pause
                System.getLogger(Compactor.class.getName()).log(System.Logger.Level.WARNING,
                        "compaction round failed; retrying", e);
                LockSupport.parkNanos(this, IDLE_MILLIS * 1_000_000L);
            }
        }
    }
}
