package org.spanheap;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The catalogue of documented misuses (docs/misuse.md): every case makes one wrong call and
 * checks the exception type and its message, then checks that canaries allocated in the same
 * heap before the misuse still hold their pattern and that the heap still allocates and
 * frees. Cases that need a closed heap close a second heap made for them: a closed heap has
 * nothing left to check, and the canaries then show that the misuse did not reach the heap
 * under test.
 */
class MisuseCatalogueTest {

    /** Which heap a case misuses; its canaries live there. */
    enum Target { SPAN_HEAP, GLOBAL_HEAP, ARENA, COMPACTING_HEAP }

    /**
     * One misuse: {@code prepare} sets the scene (allocations, frees, closes) and returns the
     * one wrong call, which must throw {@code type} with {@code message} in its message.
     */
    record Misuse(String name, Target target, Class<? extends Throwable> type, String message,
                  Function<Fixture, Executable> prepare) {
        @Override
        public String toString() {
            return name;
        }
    }

    /** The heap under test with its canaries, plus whatever else a case asks for. */
    static final class Fixture implements AutoCloseable {
        final SpanHeap heap;
        final CompactingHeap compacting;
        private final List<AutoCloseable> owned = new ArrayList<>();
        private MemorySegment smallCanary;
        private MemorySegment largeCanary;
        private long handleCanary;

        Fixture(Target target) {
            if (target == Target.COMPACTING_HEAP) {
                heap = null;
                compacting = CompactingHeap.create();
                handleCanary = compacting.allocate(200);
                compacting.write(handleCanary, s -> fill(s, 7));
            } else {
                heap = target == Target.GLOBAL_HEAP ? SpanHeap.global()
                        : SpanHeap.builder().reserveBytes(1L << 32).byteLimit(256L << 20).build();
                compacting = null;
                smallCanary = heap.allocate(200);
                fill(smallCanary, 7);
                largeCanary = heap.allocate(2 << 20);
                fill(largeCanary, 11);
            }
        }

        /** A second span heap, closed after the case. */
        SpanHeap otherHeap() {
            SpanHeap h = SpanHeap.create();
            owned.add(h);
            return h;
        }

        /** A second compacting heap, closed after the case. */
        CompactingHeap otherCompacting() {
            CompactingHeap h = CompactingHeap.create();
            owned.add(h);
            return h;
        }

        /** A confined JDK arena, closed after the case. */
        Arena jdkArena() {
            Arena a = Arena.ofConfined();
            owned.add(a);
            return a;
        }

        /** The canaries hold their patterns, and the heap allocates and frees. */
        void checkIntact() {
            if (compacting != null) {
                compacting.read(handleCanary, s -> {
                    check(s, 7);
                    return null;
                });
                long h = compacting.allocate(64);
                compacting.setLong(h, 56, 99);
                assertEquals(99, compacting.getLong(h, 56));
                compacting.free(h);
            } else {
                check(smallCanary, 7);
                check(largeCanary, 11);
                MemorySegment s = heap.allocate(64);
                s.set(JAVA_LONG, 56, 99);
                assertEquals(99, s.get(JAVA_LONG, 56));
                heap.free(s);
            }
        }

        @Override
        public void close() throws Exception {
            for (AutoCloseable c : owned.reversed()) {
                c.close();
            }
            if (compacting != null) {
                compacting.free(handleCanary);
                compacting.close();
            } else {
                heap.free(smallCanary);
                heap.free(largeCanary);
                if (heap != SpanHeap.global()) {
                    heap.close();
                }
            }
        }
    }

    static void fill(MemorySegment s, int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            s.set(JAVA_BYTE, i, (byte) (seed * 31 + i));
        }
    }

    static void check(MemorySegment s, int seed) {
        for (long i = 0; i < s.byteSize(); i++) {
            if (s.get(JAVA_BYTE, i) != (byte) (seed * 31 + i)) {
                throw new AssertionError("canary " + s + " changed at byte " + i);
            }
        }
    }

    /** {@return a call that runs {@code call} on a new platform thread and rethrows what it threw} */
    static Executable onAnotherThread(Executable call) {
        return () -> {
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            Thread t = Thread.ofPlatform().start(() -> {
                try {
                    call.execute();
                } catch (Throwable e) {
                    thrown.set(e);
                }
            });
            t.join();
            if (thrown.get() != null) {
                throw thrown.get();
            }
        };
    }

    private static Misuse span(String name, Class<? extends Throwable> type, String message,
                               Function<Fixture, Executable> prepare) {
        return new Misuse(name, Target.SPAN_HEAP, type, message, prepare);
    }

    private static Misuse arena(String name, Class<? extends Throwable> type, String message,
                                Function<Fixture, Executable> prepare) {
        return new Misuse(name, Target.ARENA, type, message, prepare);
    }

    private static Misuse global(String name, Class<? extends Throwable> type, String message,
                                 Function<Fixture, Executable> prepare) {
        return new Misuse(name, Target.GLOBAL_HEAP, type, message, prepare);
    }

    private static Misuse compacting(String name, Class<? extends Throwable> type, String message,
                                     Function<Fixture, Executable> prepare) {
        return new Misuse(name, Target.COMPACTING_HEAP, type, message, prepare);
    }

    static List<Misuse> misuses() {
        List<Misuse> m = new ArrayList<>();
        String notOwned = "segment was not allocated by this heap: 0x";

        // ---- SpanHeap: arguments -----------------------------------------------------------
        m.add(span("allocate: negative size", IllegalArgumentException.class, "size must be >= 0: -1",
                f -> () -> f.heap.allocate(-1)));
        m.add(span("allocateUninitialized: negative size", IllegalArgumentException.class, "size must be >= 0: -5",
                f -> () -> f.heap.allocateUninitialized(-5)));
        m.add(span("allocate: alignment not a power of two", IllegalArgumentException.class,
                "alignment must be a power of two: 24", f -> () -> f.heap.allocate(16, 24)));
        m.add(span("allocate: alignment 0", IllegalArgumentException.class,
                "alignment must be a power of two: 0", f -> () -> f.heap.allocate(16, 0)));
        m.add(span("allocateUninitialized: negative alignment", IllegalArgumentException.class,
                "alignment must be a power of two: -16", f -> () -> f.heap.allocateUninitialized(16, -16)));
        m.add(span("allocate: size beyond any mapping (2^50)", SpanHeapOutOfMemoryError.class,
                "larger than any mapping on x86-64", f -> () -> f.heap.allocate(1L << 50)));
        m.add(span("allocate: alignment beyond any mapping (2^52)", SpanHeapOutOfMemoryError.class,
                "aligned to 4503599627370496", f -> () -> f.heap.allocate(16, 1L << 52)));
        m.add(span("allocate: more than the byte limit", SpanHeapOutOfMemoryError.class,
                "the heap's byte limit would be exceeded", f -> () -> f.heap.allocate(512L << 20)));

        // ---- SpanHeap: free ----------------------------------------------------------------
        m.add(span("free: null", NullPointerException.class, "\"segment\" is null",
                f -> () -> f.heap.free(null)));
        m.add(span("free: twice (small block)", IllegalStateException.class, "double free: block 0x", f -> {
            MemorySegment s = f.heap.allocate(64);
            f.heap.free(s);
            return () -> f.heap.free(s);
        }));
        m.add(span("free: twice, the block already back in the native heap", IllegalStateException.class,
                "double free: block 0x", f -> {
                    MemorySegment s = f.heap.allocate(64);
                    f.heap.free(s);
                    f.heap.flushThreadCache();
                    return () -> f.heap.free(s);
                }));
        m.add(span("free: twice (4 MiB block, mapping kept for reuse)", IllegalStateException.class,
                "double free: block 0x", f -> {
                    MemorySegment s = f.heap.allocate(4 << 20);
                    f.heap.free(s);
                    return () -> f.heap.free(s);
                }));
        m.add(span("free: twice (40 MiB block, mapped for itself)", IllegalStateException.class,
                "double free: block 0x", f -> {
                    MemorySegment s = f.heap.allocateUninitialized(40L << 20);
                    f.heap.free(s);
                    return () -> f.heap.free(s);
                }));
        m.add(span("free: interior slice of a small block", IllegalArgumentException.class, notOwned, f -> {
            MemorySegment s = f.heap.allocate(256);
            return () -> f.heap.free(s.asSlice(16));
        }));
        m.add(span("free: unaligned slice of a small block", IllegalArgumentException.class, notOwned, f -> {
            MemorySegment s = f.heap.allocate(256);
            return () -> f.heap.free(s.asSlice(1));
        }));
        m.add(span("free: interior slice of a large object", IllegalArgumentException.class, notOwned, f -> {
            MemorySegment s = f.heap.allocate(2 << 20);
            return () -> f.heap.free(s.asSlice(4096));
        }));
        m.add(span("free: segment of another heap", IllegalArgumentException.class, notOwned, f -> {
            MemorySegment s = f.otherHeap().allocate(64);
            return () -> f.heap.free(s);
        }));
        m.add(span("free: segment of Arena.ofConfined()", IllegalArgumentException.class, notOwned, f -> {
            MemorySegment s = f.jdkArena().allocate(64);
            return () -> f.heap.free(s);
        }));
        m.add(span("free: heap segment (a Java array)", IllegalArgumentException.class, "(a heap segment)",
                f -> () -> f.heap.free(MemorySegment.ofArray(new long[8]))));
        m.add(span("free: MemorySegment.NULL", IllegalArgumentException.class, notOwned + "0",
                f -> () -> f.heap.free(MemorySegment.NULL)));
        m.add(span("free: a block's address rebuilt with MemorySegment.ofAddress", IllegalArgumentException.class,
                notOwned, f -> {
                    MemorySegment s = f.heap.allocate(64);
                    return () -> f.heap.free(MemorySegment.ofAddress(s.address()).reinterpret(64));
                }));
        m.add(span("free: segment of this heap's arena", IllegalArgumentException.class, notOwned, f -> {
            Arena a = f.heap.newArena();
            MemorySegment s = a.allocate(64);
            return () -> {
                try {
                    f.heap.free(s);
                } finally {
                    s.set(JAVA_LONG, 0, 1);        // still the arena's, still valid
                    a.close();
                }
            };
        }));
        m.add(span("usableSize: freed block", IllegalArgumentException.class, "(or it is not a live block)", f -> {
            MemorySegment s = f.heap.allocate(64);
            f.heap.free(s);
            return () -> f.heap.usableSize(s);
        }));
        m.add(span("usableSize: segment of another heap", IllegalArgumentException.class, notOwned, f -> {
            MemorySegment s = f.otherHeap().allocate(64);
            return () -> f.heap.usableSize(s);
        }));
        m.add(span("use of a 40 MiB block after free", IllegalStateException.class, "Already closed", f -> {
            MemorySegment s = f.heap.allocateUninitialized(40L << 20);
            f.heap.free(s);
            return () -> s.get(JAVA_LONG, 0);
        }));
        m.add(span("use of a 4 MiB block after free and trim()", IllegalStateException.class, "Already closed", f -> {
            MemorySegment s = f.heap.allocateUninitialized(4L << 20);
            f.heap.free(s);
            f.heap.trim();                         // the heap lets go of the block it kept: its scope closes
            return () -> s.set(JAVA_LONG, 8, 1);
        }));
        m.add(span("use of a freed 8 MiB block's tail after a 2 MiB block reused its mapping",
                IllegalStateException.class, "Already closed", f -> {
                    MemorySegment s = f.heap.allocateUninitialized(8L << 20);
                    f.heap.free(s);
                    f.heap.flushThreadCache();     // the Java side lets go of it; the native core keeps the mapping
                    MemorySegment t = f.heap.allocate(2L << 20); // the kept mapping, its tail unmapped
                    return () -> {
                        try {
                            s.get(JAVA_LONG, 6L << 20);
                        } finally {
                            f.heap.free(t);
                        }
                    };
                }));

        // ---- SpanHeap: after close ---------------------------------------------------------
        m.add(span("allocate after close (small)", IllegalStateException.class, "closed", f -> {
            SpanHeap h = f.otherHeap();
            h.free(h.allocate(64));                // this thread caches blocks of h
            h.close();
            return () -> h.allocate(64);
        }));
        m.add(span("allocate after close (large)", IllegalStateException.class, "heap is closed", f -> {
            SpanHeap h = f.otherHeap();
            h.close();
            return () -> h.allocate(4 << 20);
        }));
        m.add(span("free after close", IllegalStateException.class, "closed", f -> {
            SpanHeap h = f.otherHeap();
            MemorySegment s = h.allocate(64);
            h.close();
            return () -> h.free(s);
        }));
        m.add(span("segment access after close", IllegalStateException.class, "Already closed", f -> {
            SpanHeap h = f.otherHeap();
            MemorySegment s = h.allocate(64);
            h.close();
            return () -> s.get(JAVA_LONG, 0);
        }));
        m.add(span("stats after close", IllegalStateException.class, "heap is closed", f -> {
            SpanHeap h = f.otherHeap();
            h.close();
            return h::stats;
        }));
        m.add(span("newArena after close", IllegalStateException.class, "heap is closed", f -> {
            SpanHeap h = f.otherHeap();
            h.close();
            return h::newArena;
        }));
        m.add(span("flushThreadCache after close", IllegalStateException.class, "heap is closed", f -> {
            SpanHeap h = f.otherHeap();
            h.close();
            return h::flushThreadCache;
        }));
        m.add(span("trim after close", IllegalStateException.class, "heap is closed", f -> {
            SpanHeap h = f.otherHeap();
            h.close();
            return h::trim;
        }));
        m.add(span("usableSize after close", IllegalStateException.class, "heap is closed", f -> {
            SpanHeap h = f.otherHeap();
            MemorySegment s = h.allocate(64);
            h.close();
            return () -> h.usableSize(s);
        }));

        // ---- arenas of SpanHeap.newArena() -------------------------------------------------
        m.add(arena("arena: allocate after close", IllegalStateException.class, "arena is closed", f -> {
            Arena a = f.heap.newArena();
            a.close();
            return () -> a.allocate(8);
        }));
        m.add(arena("arena: close twice", IllegalStateException.class, "arena is closed", f -> {
            Arena a = f.heap.newArena();
            a.allocate(8);
            a.close();
            return a::close;
        }));
        m.add(arena("arena: segment access after close", IllegalStateException.class, "Already closed", f -> {
            Arena a = f.heap.newArena();
            MemorySegment s = a.allocate(64);
            a.close();
            return () -> s.get(JAVA_LONG, 0);
        }));
        m.add(arena("arena: allocate from another thread", WrongThreadException.class, "arena is confined to", f -> {
            Arena a = f.heap.newArena();
            return () -> {
                try {
                    onAnotherThread(() -> a.allocate(8)).execute();
                } finally {
                    a.close();
                }
            };
        }));
        m.add(arena("arena: close from another thread", WrongThreadException.class, "arena is confined to", f -> {
            Arena a = f.heap.newArena();
            MemorySegment s = a.allocate(64);
            return () -> {
                try {
                    onAnotherThread(a::close).execute();
                } finally {
                    s.set(JAVA_LONG, 0, 1);        // the arena is still open
                    a.close();
                }
            };
        }));
        m.add(arena("arena: segment access from another thread", WrongThreadException.class,
                "outside owning thread", f -> {
                    Arena a = f.heap.newArena();
                    MemorySegment s = a.allocate(64);
                    return () -> {
                        try {
                            onAnotherThread(() -> s.get(JAVA_LONG, 0)).execute();
                        } finally {
                            a.close();
                        }
                    };
                }));
        m.add(arena("arena: negative size", IllegalArgumentException.class, "size must be >= 0: -2", f -> {
            Arena a = f.heap.newArena();
            return () -> {
                try (a) {
                    a.allocate(-2);
                }
            };
        }));
        m.add(arena("arena: alignment not a power of two", IllegalArgumentException.class,
                "alignment must be a power of two: 3", f -> {
                    Arena a = f.heap.newArena();
                    return () -> {
                        try (a) {
                            a.allocate(8, 3);
                        }
                    };
                }));
        m.add(arena("arena: allocate after its heap closed", IllegalStateException.class, "closed", f -> {
            SpanHeap h = f.otherHeap();
            Arena a = h.newArena();
            MemorySegment s = a.allocate(64);
            h.close();
            return () -> {
                try {
                    a.allocate(8);
                } finally {
                    s.set(JAVA_LONG, 0, 1);        // the arena's segments stay valid until it closes
                    a.close();
                }
            };
        }));

        // ---- SpanHeap.global() -------------------------------------------------------------
        m.add(global("global: close", UnsupportedOperationException.class, "the global heap cannot be closed",
                f -> f.heap::close));
        m.add(global("global: free twice", IllegalStateException.class, "double free: block 0x", f -> {
            MemorySegment s = f.heap.allocate(64);
            f.heap.free(s);
            return () -> f.heap.free(s);
        }));
        m.add(global("global: free a segment of another heap", IllegalArgumentException.class, notOwned, f -> {
            MemorySegment s = f.otherHeap().allocate(64);
            return () -> f.heap.free(s);
        }));
        m.add(global("global: free a segment of its own arena", IllegalArgumentException.class, notOwned, f -> {
            Arena a = f.heap.newArena();
            MemorySegment s = a.allocate(64);
            return () -> {
                try {
                    f.heap.free(s);
                } finally {
                    a.close();
                }
            };
        }));

        // ---- CompactingHeap ----------------------------------------------------------------
        String stale = "handle names no live object (freed, stale or forged): 0x";
        m.add(compacting("compacting: negative size", IllegalArgumentException.class,
                "size must be in [0, 4398046511103]: -1", f -> () -> f.compacting.allocate(-1)));
        m.add(compacting("compacting: size over MAX_OBJECT_SIZE", IllegalArgumentException.class,
                "size must be in [0, 4398046511103]: 4398046511104",
                f -> () -> f.compacting.allocate(CompactingHeap.MAX_OBJECT_SIZE + 1)));
        m.add(compacting("compacting: null initializer", NullPointerException.class, "initializer",
                f -> () -> f.compacting.allocate(8, null)));
        m.add(compacting("compacting: free twice", StaleHandleException.class, stale, f -> {
            long h = f.compacting.allocate(64);
            f.compacting.free(h);
            return () -> f.compacting.free(h);
        }));
        m.add(compacting("compacting: free a large object twice", StaleHandleException.class, stale, f -> {
            long h = f.compacting.allocate(1 << 20);
            f.compacting.free(h);
            return () -> f.compacting.free(h);
        }));
        m.add(compacting("compacting: read with a freed handle", StaleHandleException.class, stale, f -> {
            long h = f.compacting.allocate(64);
            f.compacting.free(h);
            return () -> f.compacting.read(h, s -> s.get(JAVA_LONG, 0));
        }));
        m.add(compacting("compacting: stale handle whose entry was reused", StaleHandleException.class, stale, f -> {
            long old = f.compacting.allocate(64);
            f.compacting.free(old);
            f.compacting.compact();                // reclaims the entry now
            long fresh = f.compacting.allocate(64);
            assertEquals((int) old, (int) fresh, "same table index");
            return () -> f.compacting.setLong(old, 0, 3);
        }));
        m.add(compacting("compacting: handle of another heap", StaleHandleException.class, stale, f -> {
            long theirs = f.otherCompacting().allocate(64);
            return () -> f.compacting.segment(theirs);
        }));
        m.add(compacting("compacting: forged handle", StaleHandleException.class, stale,
                f -> () -> f.compacting.size(0x1234_5678_9abcL)));
        m.add(compacting("compacting: segment kept across an epoch change", IllegalStateException.class,
                "Already closed", f -> {
                    long h = f.compacting.allocate(64);
                    MemorySegment s = f.compacting.segment(h);
                    f.compacting.relocate(h);
                    return () -> s.get(JAVA_LONG, 0);
                }));
        m.add(compacting("compacting: segment used after free, after the next epoch change",
                IllegalStateException.class, "Already closed", f -> {
                    long h = f.compacting.allocate(64);
                    MemorySegment s = f.compacting.segment(h);
                    f.compacting.free(h);
                    f.compacting.compact();        // reclaims it: an epoch change
                    return () -> s.get(JAVA_LONG, 0);
                }));
        m.add(compacting("compacting: compact() inside read", IllegalStateException.class,
                "compact() must not be called inside a read or write function", f -> {
                    long h = f.compacting.allocate(64);
                    long other = f.compacting.allocate(64);
                    boolean[] first = {true};
                    return () -> f.compacting.read(h, s -> {
                        if (first[0]) {
                            first[0] = false;
                            f.compacting.free(other);   // a freed block: compact() changes the epoch
                        }
                        f.compacting.compact();
                        return s.get(JAVA_LONG, 0);
                    });
                }));
        m.add(compacting("compacting: relocate() inside write", IllegalStateException.class,
                "relocate() must not be called inside a read or write function", f -> {
                    long h = f.compacting.allocate(64);
                    return () -> f.compacting.write(h, s -> {
                        f.compacting.relocate(h);
                        s.set(JAVA_LONG, 0, 1);
                    });
                }));
        m.add(compacting("compacting: getLong beyond the object", IndexOutOfBoundsException.class,
                "new offset = 60; new length = 8", f -> {
                    long h = f.compacting.allocate(64);
                    return () -> f.compacting.getLong(h, 60);
                }));
        m.add(compacting("compacting: allocateFrom a segment of another thread", WrongThreadException.class,
                "outside owning thread", f -> {
                    MemorySegment theirs = f.jdkArena().allocate(64);
                    return onAnotherThread(() -> f.compacting.allocateFrom(theirs));
                }));
        m.add(compacting("compacting: allocateFrom a closed segment", IllegalStateException.class,
                "Already closed", f -> {
                    Arena a = Arena.ofConfined();
                    MemorySegment s = a.allocate(64);
                    a.close();
                    return () -> f.compacting.allocateFrom(s);
                }));
        m.add(compacting("compacting: blockSize of no size class", IndexOutOfBoundsException.class, "-1",
                f -> () -> f.compacting.blockSize(-1)));
        m.add(compacting("compacting: allocate after close", IllegalStateException.class,
                "compacting heap is closed", f -> {
                    CompactingHeap c = f.otherCompacting();
                    c.close();
                    return () -> c.allocate(64);
                }));
        m.add(compacting("compacting: read after close", IllegalStateException.class,
                "compacting heap is closed", f -> {
                    CompactingHeap c = f.otherCompacting();
                    long h = c.allocate(64);
                    c.close();
                    return () -> c.read(h, s -> s.get(JAVA_LONG, 0));
                }));
        m.add(compacting("compacting: free after close", IllegalStateException.class,
                "compacting heap is closed", f -> {
                    CompactingHeap c = f.otherCompacting();
                    long h = c.allocate(64);
                    c.close();
                    return () -> c.free(h);
                }));
        m.add(compacting("compacting: trim after close", IllegalStateException.class,
                "compacting heap is closed", f -> {
                    CompactingHeap c = f.otherCompacting();
                    c.close();
                    return c::trim;
                }));
        m.add(compacting("compacting: build over a closed span heap", IllegalStateException.class, "heap is closed", f -> {
            SpanHeap spans = f.otherHeap();
            spans.close();
            return () -> CompactingHeap.builder().spanHeap(spans).build();
        }));
        return m;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("misuses")
    void misuseThrowsAndLeavesTheHeapIntact(Misuse misuse) throws Exception {
        try (Fixture f = new Fixture(misuse.target())) {
            Executable call;
            try {
                call = misuse.prepare().apply(f);
            } catch (Throwable t) {
                throw new AssertionError("setting up the misuse failed", t);
            }
            Throwable e = assertThrows(Throwable.class, call);
            assertInstanceOf(misuse.type(), e, () -> "wrong exception: " + e);
            String message = String.valueOf(e.getMessage());
            assertTrue(message.contains(misuse.message()),
                    () -> "message \"" + message + "\" lacks \"" + misuse.message() + "\"");
            f.checkIntact();
        }
    }

    // ---- not detected (docs/misuse.md): these pin the documented limits -----------------

    /**
     * A small block's segment kept past {@code free} reaches the block's next owner. The thread
     * cache (native engine) or glibc's tcache (malloc engine) hands the block just freed out
     * again; with the malloc engine the JVM itself may take it in between (a compile request
     * made on this thread is malloc'd), so the scenario is tried up to ten times.
     */
    @Test
    void notDetected_smallBlockUsedAfterFreeWritesIntoItsNextOwner() {
        try (SpanHeap heap = SpanHeap.create()) {
            boolean reused = false;
            for (int attempt = 0; attempt < 10 && !reused; attempt++) {
                MemorySegment kept = heap.allocate(64);
                heap.free(kept);
                MemorySegment next = heap.allocate(64);  // the same block again
                if (next.address() == kept.address()) {
                    reused = true;
                    kept.set(JAVA_LONG, 0, 42);            // no exception
                    assertEquals(42, next.get(JAVA_LONG, 0));
                }
                heap.free(next);
            }
            assertTrue(reused, "the block just freed never came back");
        }
    }

    /**
     * A freed large block of at most 32 MiB is kept, its scope open, to be handed out again
     * without a handshake: a use after free then reaches the block (and its next owner, who
     * gets the same block and scope) instead of throwing. trim() closes it.
     */
    @Test
    @Tag("native-engine") // the malloc engine closes every large block's scope at its free
    void notDetected_largeBlockUsedAfterFreeWhileKept() {
        try (SpanHeap heap = SpanHeap.create()) {
            MemorySegment freed = heap.allocate(4L << 20);
            heap.free(freed);
            freed.set(JAVA_LONG, 8, 42);                 // no exception: the block is kept, not unmapped
            MemorySegment next = heap.allocate(4L << 20); // the kept block again, zeroed by allocate
            assertEquals(freed.address(), next.address());
            assertEquals(0, next.get(JAVA_LONG, 8));
            freed.set(JAVA_LONG, 8, 7);
            assertEquals(7, next.get(JAVA_LONG, 8));     // the stale segment writes into the new owner
            heap.free(next);
            heap.trim();
            assertThrows(IllegalStateException.class, () -> freed.get(JAVA_LONG, 0));
        }
    }

    /** Freeing a kept segment again after its block was handed out again frees the new owner's block. */
    @Test
    void notDetected_secondFreeAfterReuseFreesTheNewOwnersBlock() {
        try (SpanHeap heap = SpanHeap.create()) {
            MemorySegment kept = heap.allocate(64);
            heap.free(kept);
            MemorySegment next = heap.allocate(64);
            assertEquals(kept.address(), next.address());
            heap.free(kept);                          // no exception: it is the live block now
            var e = assertThrows(IllegalStateException.class, () -> heap.free(next));
            assertTrue(e.getMessage().startsWith("double free"), e.getMessage());  // its owner's free fails
        }
    }

    /**
     * A segment forged with the restricted {@code reinterpret} at a block that a live span has
     * not handed out yet (beyond its bump index) passes the free fast path's checks.
     */
    @Test
    @Tag("native-engine") // the native engine's span internals
    void notDetected_forgedFreeOfABlockNeverHandedOut() {
        try (SpanHeap heap = SpanHeap.create()) {
            MemorySegment s = heap.allocate(64);
            MemorySegment forged = s.reinterpret(64 * 201).asSlice(64 * 200, 64);
            heap.free(forged);                        // no exception
            assertEquals(forged.address(), heap.allocate(64).address(), "handed out from the thread cache");
        }
    }

    @Test
    void theCatalogueHasDistinctNamesAndEnoughCases() {
        List<Misuse> all = misuses();
        assertEquals(all.size(), all.stream().map(Misuse::name).distinct().count(), "distinct names");
        assertTrue(all.size() >= 25, all.size() + " cases");
    }
}
