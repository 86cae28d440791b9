package org.spanheap.internal.compact;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link PageSource} that maps every page with its own anonymous
 * {@code mmap} and unmaps it on {@link #freePage}, so the memory of a page
 * emptied by compaction goes back to the OS at once. It needs nothing but
 * libc; it is the source used until the span heap is wired in, and by tests.
 *
 * @implNote one {@code mmap}/{@code munmap} system call per page (a few
 * microseconds); pages are at least 64 KiB, so that is small against the
 * cost of filling a page.
 */
public final class MappedPageSource implements PageSource {

    private static final int PROT_READ_WRITE = 0x1 | 0x2;
    private static final int MAP_PRIVATE_ANONYMOUS = 0x02 | 0x20;

    private static final MethodHandle MMAP;
    private static final MethodHandle MUNMAP;

    static {
        Linker linker = Linker.nativeLinker();
        var libc = linker.defaultLookup();
        MMAP = linker.downcallHandle(libc.find("mmap").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG,
                        ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.JAVA_LONG));
        MUNMAP = linker.downcallHandle(libc.find("munmap").orElseThrow(),
                FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    }

    private final long pageSize;
    private final AtomicLong committed = new AtomicLong();

    /** @param pageSize bytes per page, a power of two of at least 4096 */
    public MappedPageSource(long pageSize) {
        if (pageSize < 4096 || Long.bitCount(pageSize) != 1) {
            throw new IllegalArgumentException("page size must be a power of two >= 4096: " + pageSize);
        }
        this.pageSize = pageSize;
    }

    @Override
    public long pageSize() {
        return pageSize;
    }

    @Override
    public MemorySegment allocatePage() {
        MemorySegment p;
        try {
            p = (MemorySegment) MMAP.invokeExact(MemorySegment.NULL, pageSize, PROT_READ_WRITE,
                    MAP_PRIVATE_ANONYMOUS, -1, 0L);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
        if (p.address() == -1L || p.address() == 0L) {
            throw new OutOfMemoryError("mmap of a " + pageSize + "-byte page failed");
        }
        committed.addAndGet(pageSize);
        return p.reinterpret(pageSize);
    }

    @Override
    public void freePage(MemorySegment page) {
        int rc;
        try {
            rc = (int) MUNMAP.invokeExact(page, pageSize);
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
        if (rc != 0) {
            throw new IllegalStateException("munmap failed for page 0x" + Long.toHexString(page.address()));
        }
        committed.addAndGet(-pageSize);
    }

    @Override
    public long committedBytes() {
        return committed.get();
    }

    @Override
    public void close() {
    }
}
