package org.spanheap.jmh;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * A {@link Peer} shared by a benchmark's threads whose per-thread (or per-group) states still
 * hold blocks at the end of the trial. JMH may run the {@code Scope.Benchmark} tear-down before
 * another thread's {@code Scope.Thread} tear-down, so the benchmark state cannot simply close the
 * allocator: every holder of blocks {@link #acquire()}s it, frees its blocks, and
 * {@link #release()}s it; the last release closes the allocator.
 */
final class SharedPeer {

    private final Peer peer;
    /** The benchmark state itself counts as one user until its tear-down. */
    private final AtomicInteger users = new AtomicInteger(1);

    SharedPeer(Peer peer) {
        this.peer = peer;
    }

    /** Registers one more holder of blocks and returns the allocator. */
    Peer acquire() {
        users.incrementAndGet();
        return peer;
    }

    /** Lets go of the allocator; the last user closes it. */
    void release() {
        if (users.decrementAndGet() == 0) {
            peer.close();
        }
    }
}
