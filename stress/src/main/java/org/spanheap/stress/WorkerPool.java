package org.spanheap.stress;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Keeps a number of platform and virtual worker threads alive: each worker lives a short
 * time of its own choosing and {@link #replaceEnded()} starts a new one in its place, so
 * threads are created and end all through a run (thread caches, dead-thread hand-overs).
 * A worker that throws is a failure.
 */
final class WorkerPool {

    /** One worker's life; it should return soon after {@link #stopping()} turns true. */
    interface Worker {
        void run(SplittableRandom random, boolean platform) throws Exception;
    }

    private final int platform;
    private final int virtual;
    private final Worker worker;
    private final Failures failures;
    private final SplittableRandom spawnRandom;
    private final List<Thread> threads = new ArrayList<>();
    private final AtomicLong started = new AtomicLong();
    private final AtomicLong ended = new AtomicLong();
    private volatile boolean stopping;

    WorkerPool(int platform, int virtual, long seed, Failures failures, Worker worker) {
        this.platform = platform;
        this.virtual = virtual;
        this.worker = worker;
        this.failures = failures;
        this.spawnRandom = new SplittableRandom(seed);
    }

    void start() {
        for (int i = 0; i < platform + virtual; i++) {
            threads.add(spawn(i < platform));
        }
    }

    /** Called by the supervising thread only. */
    void replaceEnded() {
        for (int i = 0; i < threads.size(); i++) {
            if (!threads.get(i).isAlive() && !stopping) {
                threads.set(i, spawn(i < platform));
            }
        }
    }

    boolean stopping() {
        return stopping;
    }

    /** Stops the workers and waits for them; a worker still running after {@code timeout} is a failure (deadlock?). */
    void stopAndJoin(Duration timeout) throws InterruptedException {
        stopping = true;
        long deadline = System.nanoTime() + timeout.toNanos();
        for (Thread t : threads) {
            long left = deadline - System.nanoTime();
            if (left <= 0 || !t.join(Duration.ofNanos(left))) {
                failures.fail("worker " + t + " did not end within " + timeout.toSeconds() + " s of the stop (deadlock?)");
                return;
            }
        }
    }

    long started() {
        return started.get();
    }

    long ended() {
        return ended.get();
    }

    private Thread spawn(boolean isPlatform) {
        SplittableRandom random = spawnRandom.split();
        Runnable body = () -> {
            try {
                worker.run(random, isPlatform);
            } catch (Throwable t) {
                failures.fail(Thread.currentThread() + " threw " + t);
                t.printStackTrace(System.out);
            } finally {
                ended.incrementAndGet();
            }
        };
        started.incrementAndGet();
        return isPlatform ? Thread.ofPlatform().name("stress-p").start(body)
                : Thread.ofVirtual().name("stress-v").start(body);
    }
}
