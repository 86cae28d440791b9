package org.spanheap.internal.compact;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Address ranges to give back to the OS, collected and then given back together
 * ({@link OsMemory#releaseAll}): one system call for up to {@value #CAPACITY}
 * ranges where the kernel takes them at once. Every {@code madvise} that drops
 * pages flushes their translations on each core that runs one of the process's
 * threads (a TLB shootdown: an interrupt per core); a round that gives back a few
 * hundred granules or pages paid that a few hundred times. One advice per batch:
 * lazy ({@code MADV_FREE}) or at once ({@code MADV_DONTNEED}).
 *
 * <p>Not thread-safe: its owner uses it under its own lock and {@link #flush}es
 * before the lock is released, so no range waits beyond the call that added it.
 */
final class ReleaseBatch {

    static final int CAPACITY = 64;

    private final boolean lazily;
    private final long[] address = new long[CAPACITY];
    private final long[] bytes = new long[CAPACITY];
    /** The {@code struct iovec} array of the call: native, reused, freed with the batch. */
    private final MemorySegment iov = Arena.ofAuto().allocate(CAPACITY * OsMemory.IOVEC_BYTES, 8);
    private int count;

    /** @param lazily whether the ranges go back lazily ({@code MADV_FREE}, where the OS offers it) */
    ReleaseBatch(boolean lazily) {
        this.lazily = lazily;
    }

    /** Adds {@code [address, address + bytes)}; gives back the ranges collected so far when full. */
    void add(long address, long bytes) {
        if (count == CAPACITY) {
            flush();
        }
        this.address[count] = address;
        this.bytes[count] = bytes;
        count++;
    }

    /** Gives back every range added since the last flush. */
    void flush() {
        OsMemory.releaseAll(address, bytes, count, lazily, iov);
        count = 0;
    }
}
