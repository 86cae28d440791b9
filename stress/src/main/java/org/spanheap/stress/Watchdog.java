package org.spanheap.stress;

import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Turns a hang into a failure: a daemon thread that ends the process with exit code 1 (and the
 * platform threads' stacks) when the supervising thread has not called {@link #tick()} for a
 * while, or, until {@link #workersStopped()}, the workers' operation count has not moved. A
 * soak left alone for an hour must not sit in a deadlock or livelock until someone notices;
 * the stacks say where it stuck. Virtual threads are not in {@link Thread#getAllStackTraces()}:
 * a worker stuck unmounted shows as the threads waiting for what it holds.
 */
final class Watchdog {

    private final AtomicLong ticks = new AtomicLong();
    private volatile boolean workersStopped;

    /**
     * @param program named in the failure message
     * @param operations the workers' operation count
     * @param stallSeconds how long without progress counts as a hang
     */
    Watchdog(String program, LongSupplier operations, int stallSeconds) {
        Thread.ofPlatform().daemon().name("stress-watchdog").start(() -> watch(program, operations, stallSeconds));
    }

    /** The supervising thread shows it is not stuck (also while it checks and frees at the end). */
    void tick() {
        ticks.incrementAndGet();
    }

    /** From now on the operation count stands still on purpose. */
    void workersStopped() {
        workersStopped = true;
    }

    private void watch(String program, LongSupplier operations, int stallSeconds) {
        long lastOps = -1, lastTicks = -1;
        long opsSince = System.nanoTime(), ticksSince = opsSince;
        long stall = stallSeconds * 1_000_000_000L;
        for (;;) {
            try {
                Thread.sleep(1000);
            } catch (InterruptedException e) {
                return;
            }
            long now = System.nanoTime();
            long o = operations.getAsLong(), t = ticks.get();
            if (o != lastOps) {
                lastOps = o;
                opsSince = now;
            }
            if (t != lastTicks) {
                lastTicks = t;
                ticksSince = now;
            }
            boolean workersStuck = !workersStopped && now - opsSince >= stall;
            if (workersStuck || now - ticksSince >= stall) {
                System.out.println("FAILURE: " + program + ": " + (workersStuck ? "the workers" : "the supervising thread")
                        + " made no progress for " + stallSeconds + " s (deadlock or livelock?); platform threads:");
                for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
                    System.out.println("\"" + e.getKey().getName() + "\" " + e.getKey().getState());
                    for (StackTraceElement f : e.getValue()) {
                        System.out.println("\tat " + f);
                    }
                }
                System.out.println("FAILED: no progress for " + stallSeconds + " s");
                System.out.flush();
                Runtime.getRuntime().halt(1);   // not exit(): a shutdown hook could wait on the stuck threads
            }
        }
    }
}
