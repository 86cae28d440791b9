package org.spanheap;

import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A JVM that ends while its heaps are in use does not crash: a forked JVM runs
 * platform and virtual threads that allocate, access and free in a {@code SpanHeap}, its arenas,
 * {@code SpanHeap.global()} and a {@code CompactingHeap} whose compactor thread is busy, plus a
 * thread calling {@code compact()}; then the JVM ends in one of four ways while all of that runs.
 * The test asserts the exit status, that the workers made progress, and that the JVM wrote no
 * fatal error log and printed no signal report.
 */
class ExitWithLiveHeapsTest {

    /** How the forked JVM ends. */
    enum Ending {
        /** {@code System.exit(0)} from main, heaps never closed, workers running. */
        EXIT,
        /** Shutdown hooks close every heap while the workers still use them (a service's close-on-shutdown). */
        CLOSE_IN_SHUTDOWN_HOOK,
        /** main returns; the workers are daemon threads, stopped by the JVM where they are. */
        MAIN_RETURNS,
        /** {@code Runtime.halt(0)}: no hooks, no clean-up at all. */
        HALT
    }

    /** The forked program: {@code BusyHeapsAtExit <ending> <millis>}. */
    public static final class BusyHeapsAtExit {
        static final LongAdder OPS = new LongAdder();

        public static void main(String[] args) throws Exception {
            Ending ending = Ending.valueOf(args[0]);
            long millis = Long.parseLong(args[1]);
            SpanHeap span = SpanHeap.create();
            CompactingHeap compacting = CompactingHeap.builder().compactionInterval(java.time.Duration.ofMillis(1)).build();
            SpanHeap global = SpanHeap.global();
            if (ending == Ending.CLOSE_IN_SHUTDOWN_HOOK) {
                Runtime.getRuntime().addShutdownHook(new Thread(compacting::close));
                Runtime.getRuntime().addShutdownHook(new Thread(span::close));
            }
            List<Thread> workers = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                long seed = i;
                workers.add(Thread.ofPlatform().daemon().start(() -> work(span, compacting, global, seed)));
                workers.add(Thread.ofVirtual().start(() -> work(span, compacting, global, seed + 100)));
            }
            workers.add(Thread.ofPlatform().daemon().start(() -> {
                while (true) {
                    try {
                        compacting.compact();
                    } catch (IllegalStateException closed) {
                        return;
                    }
                }
            }));
            Thread.sleep(millis);
            System.out.println("ops=" + OPS.sum());
            System.out.flush();
            switch (ending) {
                case EXIT, CLOSE_IN_SHUTDOWN_HOOK -> System.exit(0);
                case HALT -> Runtime.getRuntime().halt(0);
                case MAIN_RETURNS -> { } // virtual threads are daemons; the platform workers too
            }
        }

        /** Allocates, fills, checks and frees until the JVM ends it or a heap is closed under it. */
        private static void work(SpanHeap span, CompactingHeap compacting, SpanHeap global, long seed) {
            SplittableRandom random = new SplittableRandom(seed);
            long[] handles = new long[64];
            MemorySegment[] blocks = new MemorySegment[64];
            try {
                while (true) {
                    int k = random.nextInt(64);
                    if (handles[k] != 0) {
                        long h = handles[k];
                        compacting.read(h, s -> s.get(ValueLayout.JAVA_LONG_UNALIGNED, 0));
                        compacting.free(h);
                    }
                    long size = random.nextInt(8) == 0 ? 100_000 + random.nextInt(200_000) : 16 + random.nextInt(4000);
                    handles[k] = compacting.allocate(size);
                    if (blocks[k] != null) {
                        blocks[k].get(ValueLayout.JAVA_LONG_UNALIGNED, 0);
                        span.free(blocks[k]);
                    }
                    blocks[k] = span.allocate(16 + random.nextInt(random.nextInt(16) == 0 ? 5_000_000 : 2000));
                    blocks[k].fill((byte) k);
                    try (Arena arena = span.newArena()) {
                        arena.allocate(64).fill((byte) 1);
                    }
                    global.free(global.allocate(256).fill((byte) 2));
                    OPS.increment();
                }
            } catch (IllegalStateException closed) {
                // a shutdown hook closed a heap under us: the documented exception, then stop
            } catch (Throwable t) {
                System.out.println("UNEXPECTED " + t);
                t.printStackTrace(System.out);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Ending.class)
    void theJvmEndsCleanlyWhileItsHeapsAreBusy(Ending ending, @TempDir Path dir) throws IOException, InterruptedException {
        String out = ForkedJvm.run(BusyHeapsAtExit.class,
                List.of("-XX:ErrorFile=" + dir.resolve("hs_err_%p.log"), "-Xmx256m"), dir, ending.name(), "400");
        assertTrue(out.matches("(?s).*ops=[1-9][0-9]*.*"), "the workers made no progress: " + out);
        assertFalse(out.contains("UNEXPECTED"), out);
        assertFalse(out.contains("SIGSEGV") || out.contains("SIGBUS") || out.contains("fatal error"), out);
        try (Stream<Path> files = Files.list(dir)) {
            List<Path> errorLogs = files.filter(f -> f.getFileName().toString().startsWith("hs_err")).toList();
            assertTrue(errorLogs.isEmpty(), () -> "fatal error log written: " + errorLogs);
        }
    }
}
