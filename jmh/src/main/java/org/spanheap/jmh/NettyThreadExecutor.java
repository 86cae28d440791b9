package org.spanheap.jmh;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import io.netty.util.concurrent.DefaultThreadFactory;

/**
 * The executor of JMH's benchmark threads in every fork ({@code -Djmh.executor=CUSTOM}, see
 * {@link Allocator#EXECUTOR_FLAGS}): a fixed pool of Netty {@code FastThreadLocalThread}s, the
 * kind of thread Netty's event loops run on.
 *
 * <p>Why: Netty 4.2's pooled allocator gives per-thread caches only to such threads
 * ({@code io.netty.allocator.useCacheForAllThreads} is {@code false} by default), so on JMH's
 * plain worker threads every Netty allocation would go to a locked arena, which is not how
 * Netty is used. The thread class changes nothing for the other peers. Short-lived threads of
 * a workload ({@link LarsonBenchmark}) come from {@link #newThread(Runnable)} for the same reason.
 */
public final class NettyThreadExecutor extends ThreadPoolExecutor {

    /** The constructor JMH calls for {@code -Djmh.executor=CUSTOM}. */
    public NettyThreadExecutor(int maxThreads, String prefix) {
        super(maxThreads, maxThreads, 0L, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(),
                new DefaultThreadFactory(prefix, true));
    }

    private static final DefaultThreadFactory WORKLOAD_THREADS =
            new DefaultThreadFactory("workload", true);

    /** Returns a new, unstarted {@code FastThreadLocalThread} running {@code task}. */
    static Thread newThread(Runnable task) {
        return WORKLOAD_THREADS.newThread(task);
    }
}
