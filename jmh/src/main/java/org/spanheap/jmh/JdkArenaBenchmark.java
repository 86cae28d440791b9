package org.spanheap.jmh;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Peer baseline: the JDK's own arenas, allocate one block and close the arena. The figure
 * spanheap's allocate+free is compared with (the target: at most 0.1x {@code Arena.ofConfined()}).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsPrepend = "--enable-native-access=ALL-UNNAMED")
@State(Scope.Thread)
public class JdkArenaBenchmark {

    @Param({"64"})
    public long size;

    /** {@code Arena.ofConfined()}: allocate {@link #size} bytes, then close (frees). */
    @Benchmark
    public MemorySegment confinedAllocateClose() {
        try (Arena arena = Arena.ofConfined()) {
            return arena.allocate(size);
        }
    }

    /** {@code Arena.ofShared()}: allocate {@link #size} bytes, then close (a handshake). */
    @Benchmark
    public MemorySegment sharedAllocateClose() {
        try (Arena arena = Arena.ofShared()) {
            return arena.allocate(size);
        }
    }
}
