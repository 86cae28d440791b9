package org.spanheap.jmh;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;

import io.netty.buffer.ByteBufAllocatorMetricProvider;

/**
 * An allocator as the memory churn ({@link MemoryChurn}) sees it: a {@link Peer} plus the bytes it
 * holds from the OS by its own account ("committed"), and a hook that runs after the big free
 * (where the compacting heap compacts).
 */
interface ChurnTarget extends AutoCloseable {

    Object allocate(long size);

    /** Writes the whole block, so every page of it is resident as it would be in use. */
    void fill(Object block, long size, byte value);

    void free(Object block);

    /** Bytes this allocator holds from the OS by its own statistics, or -1 if it has none. */
    long committedBytes();

    /** Runs after the workload's big free: compaction for the compacting heap, else nothing. */
    default void afterFree() {
    }

    @Override
    void close();

    /**
     * Opens an allocator by {@link Allocator} name, or {@code SPANHEAP_COMPACTING} /
     * {@code SPANHEAP_COMPACTING_OFF} for the compacting heap with and without compaction.
     *
     * @throws UnsupportedOperationException if it cannot be had on this machine
     */
    static ChurnTarget open(String name) {
        switch (name) {
            case "SPANHEAP_COMPACTING" -> {
                return new CompactingChurnTarget(true);
            }
            case "SPANHEAP_COMPACTING_OFF" -> {
                return new CompactingChurnTarget(false);
            }
            default -> {
            }
        }
        Allocator allocator = Allocator.valueOf(name);
        Peer peer = allocator.open();
        return switch (allocator) {
            case SPANHEAP, SPANHEAP_ZEROED -> new OfPeer(peer) {
                @Override
                public long committedBytes() {
                    return ((SpanHeapPeer) peer).committedBytes();
                }
            };
            case MALLOC_FFM -> new OfPeer(peer) {
                @Override
                public long committedBytes() {
                    return GlibcMallinfo.committedBytes();
                }
            };
            case MIMALLOC_FFM -> new OfPeer(peer) {
                @Override
                public long committedBytes() {
                    return NativeMallocPeer.Mimalloc.committedBytes();
                }
            };
            case NETTY_POOLED, NETTY_POOLED_NOLEAK, NETTY_ADAPTIVE, NETTY_ADAPTIVE_NOLEAK ->
                    new OfPeer(peer) {
                        @Override
                        public long committedBytes() {
                            return ((NettyPeer) peer).allocator()
                                    instanceof ByteBufAllocatorMetricProvider m
                                    ? m.metric().usedDirectMemory() : -1;
                        }
                    };
            case DIRECT_BYTEBUFFER -> new OfPeer(peer) {
                @Override
                public long committedBytes() {
                    for (BufferPoolMXBean pool
                            : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
                        if (pool.getName().equals("direct")) {
                            return pool.getMemoryUsed();
                        }
                    }
                    return -1;
                }
            };
            default -> new OfPeer(peer) {
                @Override
                public long committedBytes() {
                    return -1;
                }
            };
        };
    }

    /** A {@link Peer} as a churn target; subclasses say how to read committed bytes. */
    abstract class OfPeer implements ChurnTarget {
        final Peer peer;

        OfPeer(Peer peer) {
            this.peer = peer;
        }

        @Override
        public Object allocate(long size) {
            return peer.allocate(size);
        }

        @Override
        public void fill(Object block, long size, byte value) {
            peer.segment(block).asSlice(0, size).fill(value);
        }

        @Override
        public void free(Object block) {
            peer.free(block);
        }

        @Override
        public void close() {
            peer.close();
        }
    }

    /**
     * glibc's own account: {@code mallinfo2()}'s {@code arena} (bytes from sbrk/arena mmaps) plus
     * {@code hblkhd} (bytes in mmapped chunks), over all arenas. It includes the JVM's own
     * malloc use, which {@link MemoryChurn}'s baseline sample shows.
     */
    final class GlibcMallinfo {
        private GlibcMallinfo() {
        }

        private static final StructLayout MALLINFO2 = MemoryLayout.structLayout(
                ValueLayout.JAVA_LONG.withName("arena"), ValueLayout.JAVA_LONG.withName("ordblks"),
                ValueLayout.JAVA_LONG.withName("smblks"), ValueLayout.JAVA_LONG.withName("hblks"),
                ValueLayout.JAVA_LONG.withName("hblkhd"), ValueLayout.JAVA_LONG.withName("usmblks"),
                ValueLayout.JAVA_LONG.withName("fsmblks"), ValueLayout.JAVA_LONG.withName("uordblks"),
                ValueLayout.JAVA_LONG.withName("fordblks"), ValueLayout.JAVA_LONG.withName("keepcost"));
        @SuppressWarnings("restricted")
        private static final MethodHandle MALLINFO2_FN = Linker.nativeLinker().defaultLookup()
                .find("mallinfo2")
                .map(s -> Linker.nativeLinker().downcallHandle(s, FunctionDescriptor.of(MALLINFO2)))
                .orElse(null);

        static long committedBytes() {
            if (MALLINFO2_FN == null) {
                return -1;
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment info = (MemorySegment) MALLINFO2_FN.invokeExact((SegmentAllocator) arena);
                return info.get(ValueLayout.JAVA_LONG, 0) + info.get(ValueLayout.JAVA_LONG, 32);
            } catch (Throwable t) {
                throw new AssertionError(t);
            }
        }
    }
}
