package org.spanheap.examples.cache;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;

/**
 * Entries allocated one by one with the C library's {@code malloc} and released with
 * {@code free}, called through the FFM API: the baseline the compacting store is compared
 * with. The reference is the block's address.
 *
 * <p>Committed bytes come from glibc's {@code mallinfo2()} (all arenas, and the whole
 * process: the JVM's own {@code malloc} use is included); -1 where it is missing.
 */
public final class MallocEntryStore implements EntryStore {

    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle MALLOC = LINKER.downcallHandle(
            LINKER.defaultLookup().find("malloc").orElseThrow(),
            FunctionDescriptor.of(ValueLayout.ADDRESS, ValueLayout.JAVA_LONG));
    private static final MethodHandle FREE = LINKER.downcallHandle(
            LINKER.defaultLookup().find("free").orElseThrow(),
            FunctionDescriptor.ofVoid(ValueLayout.ADDRESS));
    /** struct mallinfo2: ten size_t fields. */
    private static final StructLayout MALLINFO2_LAYOUT = MemoryLayout.structLayout(
            ValueLayout.JAVA_LONG.withName("arena"), ValueLayout.JAVA_LONG.withName("ordblks"),
            ValueLayout.JAVA_LONG.withName("smblks"), ValueLayout.JAVA_LONG.withName("hblks"),
            ValueLayout.JAVA_LONG.withName("hblkhd"), ValueLayout.JAVA_LONG.withName("usmblks"),
            ValueLayout.JAVA_LONG.withName("fsmblks"), ValueLayout.JAVA_LONG.withName("uordblks"),
            ValueLayout.JAVA_LONG.withName("fordblks"), ValueLayout.JAVA_LONG.withName("keepcost"));
    private static final MethodHandle MALLINFO2 = LINKER.defaultLookup().find("mallinfo2")
            .map(f -> LINKER.downcallHandle(f, FunctionDescriptor.of(MALLINFO2_LAYOUT)))
            .orElse(null);

    /** All of memory, to slice entries out of by address. */
    private static final MemorySegment EVERYTHING = MemorySegment.NULL.reinterpret(Long.MAX_VALUE);

    /** Creates a store; it holds no memory of its own. */
    public MallocEntryStore() {
    }

    @Override
    public String name() {
        return "malloc per entry";
    }

    @Override
    public long maxEntryBytes() {
        return Integer.MAX_VALUE;
    }

    private static MemorySegment entry(long ref) {
        MemorySegment header = EVERYTHING.asSlice(ref, HEADER);
        long size = EntryStore.entryBytes(header.get(INT, 0), header.get(INT, 4));
        return EVERYTHING.asSlice(ref, size);
    }

    @Override
    public long store(byte[] key, MemorySegment value) {
        long size = EntryStore.entryBytes(key.length, value.byteSize());
        MemorySegment block;
        try {
            block = (MemorySegment) MALLOC.invokeExact(size);
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
        if (block.address() == 0) {
            throw new OutOfMemoryError("malloc(" + size + ") failed");
        }
        EntryStore.writeEntry(block.reinterpret(size), key, value);
        return block.address();
    }

    @Override
    public boolean keyEquals(long ref, byte[] key) {
        return EntryStore.keyEquals(entry(ref), key);
    }

    @Override
    public int copyValue(long ref, MemorySegment dst) {
        return EntryStore.copyValue(entry(ref), dst);
    }

    @Override
    public byte[] value(long ref) {
        return EntryStore.value(entry(ref));
    }

    @Override
    public void free(long ref) {
        try {
            FREE.invokeExact(MemorySegment.ofAddress(ref));
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    @Override
    public Memory memory() {
        if (MALLINFO2 == null) {
            return new Memory(-1, -1, 0);
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment mi = (MemorySegment) MALLINFO2.invokeExact((SegmentAllocator) arena);
            long arenaBytes = mi.get(ValueLayout.JAVA_LONG, 0);
            long mmapped = mi.get(ValueLayout.JAVA_LONG, 32);
            return new Memory(arenaBytes + mmapped, -1, 0);
        } catch (Throwable t) {
            return new Memory(-1, -1, 0);
        }
    }

    @Override
    public void close() {
        // nothing of its own: the cache freed every entry
    }
}
