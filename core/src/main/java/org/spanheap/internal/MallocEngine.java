package org.spanheap.internal;

import org.spanheap.Engine;
import org.spanheap.HeapStats;
import org.spanheap.SpanHeapOutOfMemoryError;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The fallback engine: every block is a {@code malloc} of the C runtime through FFM
 * ({@link SystemMalloc}), for platforms where the native library does not load (macOS,
 * Windows, other architectures, musl, a {@code noexec} temporary directory) or when
 * {@code -Dspanheap.engine=malloc} asks for it. No thread caches, no span pool: each
 * allocate and free is one critical downcall, at malloc's speed.
 *
 * <h2>Checks: the registry of live blocks</h2>
 * A {@link ConcurrentHashMap} from block address to its charge (the size rounded up to 16)
 * holds every live block. {@code free} removes the address before calling {@code free(3)},
 * so a block is freed exactly once even when two threads race, and anything not in the
 * registry is never passed to the C runtime. A miss is then named as the native engine
 * names it: a segment of another scope is foreign; a segment of the heap's scope that is
 * not a live block start is a slice inside a live block ("it points inside a block", found
 * by a scan of the registry: O(live blocks), on this error path only) or, otherwise, a block
 * freed before ("double free"). An interior slice of a block already freed is reported as
 * a double free too.
 *
 * <h2>Lifetime</h2>
 * As in {@link SpanHeapImpl}: segments carry the scope of one shared lifetime arena (large
 * blocks over {@link #LARGE_ABOVE} one of their own), {@link #close()} closes it with
 * the JDK's handshake, and the memory goes when the last {@linkplain #releaseRef()
 * reference} goes (the heap's, open arenas', page sources'): every block still in the
 * registry is freed then. An allocation that raced with close finds {@link #closing} set
 * after registering its block and frees it itself; whoever removes an address from the
 * registry frees it, so nothing is freed twice or lost.
 *
 * <h2>Byte limit and stats</h2>
 * The charges of live blocks are counted in {@link #charged} and checked against the limit
 * with a CAS before {@code malloc} is called. malloc's own overhead and the free memory it
 * keeps are unknown to Java: {@link #stats()} reports the charged bytes as live and
 * committed, 0 for what only the native engine knows (reserved, resident, cached, spans,
 * madvise calls, size classes).
 */
public final class MallocEngine implements HeapEngine {

    /** Charge granularity: blocks are charged (and their usable size is) their size rounded up to this. */
    static final long GRANULE = SystemMalloc.MALLOC_ALIGNMENT;
    /**
     * Blocks over this are counted as large objects in the stats and get a scope of their own
     * ({@link OwnScopes}): glibc's initial mmap threshold, above which malloc may map a block
     * for itself and unmap it on free (the threshold moves up to 32 MiB as mapped blocks are
     * freed; other C runtimes have thresholds of their own, so the lowest is used).
     */
    static final long LARGE_ABOVE = 128 << 10;

    private static final AtomicLong HEAPS = new AtomicLong();

    static { // slow-path classes, initialized before a deep caller can poison them (see EagerClassInit)
        EagerClassInit.initialize(SystemMalloc.class, ByteLimitRefusalEvent.class, MemoryReleaseEvent.class,
                SpanHeapOutOfMemoryError.class, HeapErrors.class, OwnScopes.class, Zeroing.class);
    }

    private final long byteLimit;
    private final boolean global;
    private final Arena lifetime;
    private final MemorySegment.Scope scope;
    /** The whole address space with the lifetime scope: blocks are slices of it (no restricted call per block). */
    private final MemorySegment all;
    /** Live blocks: address to charge. */
    private final ConcurrentHashMap<Long, Long> live = new ConcurrentHashMap<>();
    /** Scopes of the live blocks over {@link #LARGE_ABOVE}. */
    private final OwnScopes ownScopes;
    /** Sum of the charges of live blocks: what the byte limit bounds. CAS (volatile). */
    private final AtomicLong charged = new AtomicLong();
    private final AtomicLong largeBytes = new AtomicLong();
    private final AtomicLong largeCount = new AtomicLong();
    /** 1 for the heap + 1 per open arena or page source; 0 = memory released. */
    private final HeapRefCount refs = new HeapRefCount();
    /**
     * Set once by {@link #close()} before it closes the lifetime arena. Volatile: an
     * allocation writes the registry and then reads this, close writes this and later reads
     * the registry, so (both sequentially consistent) one of them sees the other.
     */
    private volatile boolean closing;
    /** The heap's name in JFR events; volatile: written on MXBean registration. */
    private volatile String name;

    /**
     * A heap with the given byte limit (0: none).
     *
     * @param byteLimit the most bytes of live blocks, or 0
     * @param global whether this is the global heap (which cannot be closed)
     */
    public MallocEngine(long byteLimit, boolean global) {
        this.byteLimit = byteLimit;
        this.global = global;
        this.name = global ? "global" : "SpanHeap-malloc-" + HEAPS.incrementAndGet();
        this.lifetime = Arena.ofShared();
        this.scope = lifetime.scope();
        this.ownScopes = new OwnScopes(scope, (address, size) -> size > LARGE_ABOVE);
        this.all = MemorySegment.NULL.reinterpret(Long.MAX_VALUE, lifetime, null);
    }

    @Override
    public Engine kind() {
        return Engine.MALLOC;
    }

    // ---- allocation ----

    private static long chargeOf(long size) {
        return (Math.max(size, 1) + GRANULE - 1) & -GRANULE;
    }

    @Override
    public long allocateAddress(long size, long alignment) {
        HeapErrors.checkRequest(size, alignment);
        if (closing) {
            throw HeapErrors.closed();
        }
        long charge = chargeOf(size);
        charge(size, charge);
        long address = SystemMalloc.allocate(size, alignment);
        if (address == 0) {
            charged.addAndGet(-charge);
            throw new SpanHeapOutOfMemoryError("cannot allocate " + size + " bytes aligned to " + alignment
                    + ": the C runtime's malloc refused", false);
        }
        if ((address & (alignment - 1)) != 0) {
            SystemMalloc.free(address);
            charged.addAndGet(-charge);
            throw new IllegalStateException("malloc returned 0x" + Long.toHexString(address)
                    + ", not aligned to " + alignment);
        }
        try {
            live.put(address, charge);
        } catch (Throwable t) {                    // e.g. StackOverflowError in the map: give the block back
            SystemMalloc.free(address);
            charged.addAndGet(-charge);
            throw t;
        }
        if (charge > LARGE_ABOVE) {
            largeBytes.addAndGet(charge);
            largeCount.incrementAndGet();
        }
        if (closing) {                             // raced with close: see the class comment
            release(address);
            throw HeapErrors.closed();
        }
        return address;
    }

    /** Counts {@code charge} against the byte limit, or throws if it would be exceeded. */
    private void charge(long size, long charge) {
        for (;;) {
            long c = charged.get();
            if (byteLimit > 0 && c + charge > byteLimit) {
                limitRefused(size, c);
                throw HeapErrors.byteLimitExceeded(size);
            }
            if (charged.compareAndSet(c, c + charge)) {
                return;
            }
        }
    }

    /** Emits {@link ByteLimitRefusalEvent} if a recording wants it. */
    private void limitRefused(long size, long chargedNow) {
        ByteLimitRefusalEvent event = new ByteLimitRefusalEvent();
        if (event.isEnabled()) {
            event.heap = name;
            event.requestedBytes = size;
            event.limitBytes = byteLimit;
            event.chargedBytes = chargedNow;
            event.commit();
        }
    }

    @Override
    public MemorySegment segment(long address, long size) {
        if (size <= LARGE_ABOVE) {
            return all.asSlice(address, size);
        }
        return ownScopes.segment(address, size);   // malloc unmaps such a block on free: see OwnScopes
    }

    // ---- free ----

    @Override
    public void free(MemorySegment segment) {
        if (segment.scope() != scope) {
            freeOwnScope(segment);
            return;
        }
        if (closing) {
            throw HeapErrors.closed();
        }
        long address = segment.address();
        if (!release(address)) {
            throw misuse(address);
        }
    }

    /** Frees a block with a scope of its own: closes the scope, then frees the block. */
    private void freeOwnScope(MemorySegment segment) {
        ownScopes.closeForFree(segment);
        if (closing) {
            throw HeapErrors.closed();             // the release of the heap's memory frees it
        }
        if (!release(segment.address())) {
            throw HeapErrors.doubleFree(segment.address());
        }
    }

    @Override
    public void freeAddress(long address) {
        if (closing) {
            throw HeapErrors.closed();
        }
        if (!release(address)) {
            throw misuse(address);
        }
    }

    /** Frees the live block at {@code address}; {@return false if there is none} */
    private boolean release(long address) {
        Long charge = live.remove(address);        // the one remover frees it
        if (charge == null) {
            return false;
        }
        SystemMalloc.free(address);
        charged.addAndGet(-charge);
        if (charge > LARGE_ABOVE) {
            largeBytes.addAndGet(-charge);
            largeCount.decrementAndGet();
        }
        return true;
    }

    /** {@return the exception for a free of an address of this heap's scope that starts no live block} */
    private RuntimeException misuse(long address) {
        for (Map.Entry<Long, Long> e : live.entrySet()) {
            long start = e.getKey();
            if (Long.compareUnsigned(address - start, e.getValue()) < 0) {
                return HeapErrors.notOwned(address, HeapErrors.INTERIOR);
            }
        }
        return HeapErrors.doubleFree(address);
    }

    @Override
    public void freeArenaBlocks(long[] blocks, int n) {
        if (closing) {
            return;                                // the release of the heap's memory frees them
        }
        for (int i = 0; i < n; i++) {
            release(blocks[i]);
        }
    }

    // ---- stats, usable size, trim ----

    @Override
    public HeapStats stats() {
        if (!scope.isAlive()) {
            throw HeapErrors.closed();
        }
        long bytes = charged.get();
        return new HeapStats(0, bytes, 0, bytes, 0, largeBytes.get(), largeCount.get(), byteLimit, bytes,
                0, 0, 0, 0, 0, 0, List.of());
    }

    @Override
    public long usableSize(MemorySegment segment) {
        if (!scope.isAlive()) {
            throw HeapErrors.closed();
        }
        if (segment.scope() != scope && !ownScopes.owns(segment)) {
            throw HeapErrors.notOwned(segment.address(), "");
        }
        Long charge = live.get(segment.address());
        if (charge == null) {
            throw HeapErrors.notOwned(segment.address(), " (or it is not a live block)");
        }
        return charge;
    }

    @Override
    public void flushThreadCache() {
        if (!scope.isAlive()) {
            throw HeapErrors.closed();             // nothing is cached: only the state to check
        }
    }

    /**
     * Calls glibc's {@code malloc_trim(0)} where the C runtime has it and returns 0: malloc
     * does not say how much it released, and the charged bytes (this engine's committed
     * bytes) do not change.
     */
    @Override
    public long trim() {
        if (!scope.isAlive()) {
            throw HeapErrors.closed();
        }
        MemoryReleaseEvent event = new MemoryReleaseEvent();
        event.begin();
        SystemMalloc.trim();
        event.end();
        if (event.shouldCommit()) {
            event.set(name, MemoryReleaseEvent.TRIM, 0, charged.get());
            event.commit();
        }
        return 0;
    }

    // ---- lifetime ----

    @Override
    public boolean isOpen() {
        return scope.isAlive();
    }

    @Override
    public boolean isGlobal() {
        return global;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public void name(String name) {
        this.name = name;
    }

    @Override
    public MemorySegment.Scope scope() {
        return scope;
    }

    @Override
    public void acquireRef() {
        if (closing || !refs.tryAcquire()) {
            throw HeapErrors.closed();
        }
    }

    @Override
    public void releaseRef() {
        if (refs.release()) {
            for (Long address : live.keySet()) {
                release(address);
            }
        }
    }

    @Override
    public void close() {
        if (global) {
            throw new UnsupportedOperationException("the global heap cannot be closed");
        }
        if (closing) {
            return;
        }
        synchronized (this) {
            if (closing) {
                return;                            // closed by another thread meanwhile
            }
            closing = true;
        }
        SharedArenas.closeWithin(lifetime, CLOSE_PATIENCE_NANOS); // handshake: no thread is inside an access now
        ownScopes.closeAll();
        releaseRef();
    }

    /** {@return the number of blocks in the registry} For tests. */
    int liveBlockCount() {
        return live.size();
    }

    @Override
    public String toString() {
        return "MallocEngine[" + name + ", live=" + live.size() + "]";
    }
}
