package org.spanheap.jmh;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/**
 * C allocators reached the way a Java user would reach them: {@code malloc}/{@code free} downcalls
 * with {@code Linker.Option.critical(false)} (the cheapest downcall the JDK offers, about 4 ns),
 * the returned address widened with {@code reinterpret(size)}.
 *
 * <p>One nested class per library, because the JIT inlines a downcall only through a
 * {@code static final} method handle; a handle in an instance field would make these peers look
 * slower than they are.
 *
 * <p>mimalloc and jemalloc are optional: found through the system property
 * {@code spanheap.jmh.mimalloc} / {@code spanheap.jmh.jemalloc} (a path or a library name), else
 * by Debian's library names ({@code libmimalloc.so.2}, {@code libjemalloc.so.2}). Where they do not
 * load, {@link Allocator#open()} throws {@code UnsupportedOperationException} and the runner
 * leaves them out. Loaded with {@code dlopen}, they do not replace the JVM's own {@code malloc}.
 * Debian's jemalloc uses initial-exec TLS and loads with {@code dlopen} only when glibc keeps
 * static TLS room for it: {@code GLIBC_TUNABLES=glibc.rtld.optional_static_tls=4096} in the
 * environment (the runner sets it; without it jemalloc is reported unavailable).
 */
@SuppressWarnings("restricted") // downcalls and reinterpret are the point of this peer
final class NativeMallocPeer {

    private NativeMallocPeer() {
    }

    private static final Linker LINKER = Linker.nativeLinker();
    private static final FunctionDescriptor MALLOC_DESC =
            FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG);
    private static final FunctionDescriptor FREE_DESC = FunctionDescriptor.ofVoid(ValueLayout.ADDRESS);

    /** The {@code malloc}-like and {@code free}-like handles of one library. */
    record Functions(MethodHandle malloc, MethodHandle free) {
        static Functions of(SymbolLookup lookup, String malloc, String free) {
            MemorySegment m = lookup.find(malloc).orElseThrow(
                    () -> new UnsupportedOperationException("symbol not found: " + malloc));
            MemorySegment f = lookup.find(free).orElseThrow(
                    () -> new UnsupportedOperationException("symbol not found: " + free));
            return new Functions(
                    LINKER.downcallHandle(m, MALLOC_DESC, Linker.Option.critical(false)),
                    LINKER.downcallHandle(f, FREE_DESC, Linker.Option.critical(false)));
        }

        /** Functions from an optional library, or {@code null} with the reason recorded. */
        static Functions optional(String property, String[] names, String malloc, String free,
                                  StringBuilder whyNot) {
            Optional<SymbolLookup> lookup = findLibrary(property, names, whyNot);
            if (lookup.isEmpty()) {
                return null;
            }
            try {
                return of(lookup.get(), malloc, free);
            } catch (UnsupportedOperationException e) {
                whyNot.append(e.getMessage());
                return null;
            }
        }
    }

    /** Looks a library up by the system property, else by each of {@code names}, in order. */
    static Optional<SymbolLookup> findLibrary(String property, String[] names, StringBuilder whyNot) {
        String configured = System.getProperty(property);
        String[] candidates = configured != null && !configured.isBlank()
                ? new String[] {configured} : names;
        for (String name : candidates) {
            try {
                return Optional.of(SymbolLookup.libraryLookup(name, Arena.global()));
            } catch (IllegalArgumentException | UnsatisfiedLinkError e) {
                whyNot.append(name).append(": ").append(e.getMessage()).append("; ");
            }
        }
        whyNot.append("set -D").append(property).append("=/path/to/lib.so to use another file");
        return Optional.empty();
    }

    static MemorySegment call(MethodHandle malloc, long size) {
        MemorySegment p;
        try {
            p = (MemorySegment) malloc.invokeExact(size);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
        if (p.address() == 0) {
            throw new OutOfMemoryError("malloc(" + size + ") returned NULL");
        }
        return p.reinterpret(size);
    }

    static byte touchSegment(Object block, byte value) {
        MemorySegment s = (MemorySegment) block;
        s.set(ValueLayout.JAVA_BYTE, 0, value);
        return s.get(ValueLayout.JAVA_BYTE, 0);
    }

    /** glibc, through the linker's default lookup. */
    static final class Glibc implements Peer {
        private static final Functions F = Functions.of(LINKER.defaultLookup(), "malloc", "free");
        private static final MethodHandle MALLOC = F.malloc();
        private static final MethodHandle FREE = F.free();

        @Override
        public Object allocate(long size) {
            return call(MALLOC, size);
        }

        @Override
        public byte touch(Object block, byte value) {
            return touchSegment(block, value);
        }

        @Override
        public void free(Object block) {
            try {
                FREE.invokeExact((MemorySegment) block);
            } catch (Throwable t) {
                throw new AssertionError(t);
            }
        }

        @Override
        public MemorySegment segment(Object block) {
            return (MemorySegment) block;
        }
    }

    /** mimalloc's own entry points ({@code mi_malloc}/{@code mi_free}). */
    static final class Mimalloc implements Peer {
        private static final StringBuilder WHY_NOT = new StringBuilder();
        private static final Functions F = Functions.optional("spanheap.jmh.mimalloc",
                new String[] {"libmimalloc.so.2", "libmimalloc.so"}, "mi_malloc", "mi_free", WHY_NOT);
        private static final MethodHandle MALLOC = F == null ? null : F.malloc();
        private static final MethodHandle FREE = F == null ? null : F.free();

        Mimalloc() {
            if (F == null) {
                throw new UnsupportedOperationException("mimalloc not found: " + WHY_NOT);
            }
        }

        /** mimalloc's own view of its committed bytes ({@code mi_process_info}), or -1. */
        static long committedBytes() {
            return F == null ? -1 : MimallocInfo.currentCommit();
        }

        @Override
        public Object allocate(long size) {
            return call(MALLOC, size);
        }

        @Override
        public byte touch(Object block, byte value) {
            return touchSegment(block, value);
        }

        @Override
        public void free(Object block) {
            try {
                FREE.invokeExact((MemorySegment) block);
            } catch (Throwable t) {
                throw new AssertionError(t);
            }
        }

        @Override
        public MemorySegment segment(Object block) {
            return (MemorySegment) block;
        }

        /** {@code void mi_process_info(size_t* elapsed, user, system, current_rss, peak_rss,
         *  current_commit, peak_commit, page_faults)}. */
        private static final class MimallocInfo {
            private static final MethodHandle PROCESS_INFO;

            static {
                StringBuilder ignored = new StringBuilder();
                SymbolLookup lookup = findLibrary("spanheap.jmh.mimalloc",
                        new String[] {"libmimalloc.so.2", "libmimalloc.so"}, ignored).orElseThrow();
                FunctionDescriptor desc = FunctionDescriptor.ofVoid(ValueLayout.ADDRESS,
                        ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS,
                        ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.ADDRESS,
                        ValueLayout.ADDRESS);
                PROCESS_INFO = lookup.find("mi_process_info")
                        .map(s -> LINKER.downcallHandle(s, desc)).orElse(null);
            }

            static long currentCommit() {
                if (PROCESS_INFO == null) {
                    return -1;
                }
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment out = arena.allocate(ValueLayout.JAVA_LONG, 8);
                    PROCESS_INFO.invokeExact(out, out.asSlice(8), out.asSlice(16), out.asSlice(24),
                            out.asSlice(32), out.asSlice(40), out.asSlice(48), out.asSlice(56));
                    return out.getAtIndex(ValueLayout.JAVA_LONG, 5);
                } catch (Throwable t) {
                    throw new AssertionError(t);
                }
            }
        }
    }

    /** jemalloc ({@code malloc}/{@code free} looked up in libjemalloc itself, not in libc). */
    static final class Jemalloc implements Peer {
        private static final StringBuilder WHY_NOT = new StringBuilder();
        private static final Functions F = Functions.optional("spanheap.jmh.jemalloc",
                new String[] {"libjemalloc.so.2", "libjemalloc.so"}, "malloc", "free", WHY_NOT);
        private static final MethodHandle MALLOC = F == null ? null : F.malloc();
        private static final MethodHandle FREE = F == null ? null : F.free();

        Jemalloc() {
            if (F == null) {
                throw new UnsupportedOperationException("jemalloc not found: " + WHY_NOT);
            }
        }

        @Override
        public Object allocate(long size) {
            return call(MALLOC, size);
        }

        @Override
        public byte touch(Object block, byte value) {
            return touchSegment(block, value);
        }

        @Override
        public void free(Object block) {
            try {
                FREE.invokeExact((MemorySegment) block);
            } catch (Throwable t) {
                throw new AssertionError(t);
            }
        }

        @Override
        public MemorySegment segment(Object block) {
            return (MemorySegment) block;
        }
    }
}
