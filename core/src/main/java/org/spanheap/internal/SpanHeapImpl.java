package org.spanheap.internal;

import org.spanheap.Engine;
import org.spanheap.HeapStats;
import org.spanheap.SpanHeapOutOfMemoryError;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.List;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static org.spanheap.internal.HeapErrors.checkRequest;
import static org.spanheap.internal.HeapErrors.closed;
import static org.spanheap.internal.HeapErrors.doubleFree;
import static org.spanheap.internal.HeapErrors.notOwned;
import static org.spanheap.internal.HeapErrors.raise;
import static org.spanheap.internal.SpanLayout.BLOCK_FREE_MARK_OFFSET;
import static org.spanheap.internal.SpanLayout.MIN_ALIGNMENT;

/**
 * The engine behind {@link org.spanheap.SpanHeap}: argument checks, the Java fast path
 * (thread caches), the calls into the native heap, error mapping and the heap's lifetime.
 *
 * <h2>Lifetime and close safety</h2>
 * Every native memory access of the heap (span headers, free marks, the frontier) and the
 * {@code sh_heap *} argument of every downcall go through segments of one shared
 * {@linkplain #lifetime lifetime arena}. Segments handed to callers by {@code allocate}
 * carry the same scope. {@link #close()} closes that arena:
 * <ul>
 * <li>a downcall acquires the scope for its duration, so {@code Arena.close} fails while
 *     any thread is inside the native heap (close retries until it succeeds, and new
 *     downcalls stop once {@link #closing} is set);</li>
 * <li>the JDK's close handshake waits for every thread inside a memory access of the scope;
 *     accesses after it throw {@link IllegalStateException}.</li>
 * </ul>
 * So after the arena is closed nobody can be inside the native heap and
 * {@code sh_heap_destroy} is safe. It runs when the last {@linkplain #refs reference}
 * goes: the heap holds one, each open {@link HeapArena} one (its segments have their own
 * confined scope and point into the heap's memory, which must stay mapped until the arena
 * closes).
 *
 * <h2>Threads</h2>
 * Platform threads get a {@link ThreadCache} per heap (bounded magazines per size class, laid
 * out by {@link MagazineLayout}); allocate and free from a magazine never cross into C.
 * Virtual threads share stripes under a try-lock, and when their stripe is taken they call
 * {@code sh_alloc}/{@code sh_free_checked} through critical downcalls, which cannot unmount
 * them, so they use the native core's per-OS-thread (per-carrier) cache; a virtual thread
 * that keeps using its stripe is promoted to a private cache. {@link ThreadCaches} finds
 * and registers the caches; this class fills and empties them.
 */
public final class SpanHeapImpl implements HeapEngine {

    private static final int CACHE_TABLE_SIZE = ThreadCaches.TABLE_SIZE;
    /** The depot holds per class up to this many times a thread cache's per-class byte budget. */
    static final int DEPOT_BUDGETS = 4;
    private static final VarHandle CLOSING;
    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            CLOSING = l.findVarHandle(SpanHeapImpl.class, "closing", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
        EagerClassInit.initialize(DeadThreadCacheDrainEvent.class, ByteLimitRefusalEvent.class, MemoryReleaseEvent.class,
                org.spanheap.SpanHeapOutOfMemoryError.class, HeapErrors.class, OwnScopes.class, Zeroing.class);
    }

    // ---- read-only after construction (read by every thread on the fast path) ----
    private final SizeClassTable classes;
    private final byte[] classOf;
    /** Classes {@code [0, cachedClassCount)} have magazines; the largest block size among them. */
    private final int cachedClassCount;
    private final long maxCachedSize;
    private final Arena lifetime;
    private final MemorySegment.Scope scope;
    /** {@code sh_heap *} as a zero-length segment of {@link #lifetime}: passing it acquires the scope. */
    private final MemorySegment handle;
    private final long heapAddress;
    /**
     * The whole arena reservation, scope {@link #lifetime}; only [base, *frontier) is touched.
     * Accessed with {@code JAVA_LONG_UNALIGNED} although every offset used is 8-aligned by
     * construction: the unaligned layout skips a redundant alignment check, which keeps the
     * compiled free path under C2's {@code InlineSmallCode} (2500 bytes), so callers inline
     * {@code free} and the segment argument is scalar-replaced (measured: 6 ns instead of 30).
     */
    private final MemorySegment arena;
    /** The native {@code uint64_t} frontier, scope {@link #lifetime}. */
    private final MemorySegment frontier;
    private final long base;
    private final long arenaSize;
    private final long freeKey;
    /** Per class: index in a cache's {@code m} of the first magazine slot, and one past the last; see {@link MagazineLayout}. */
    private final int[] cacheBase;
    private final int[] cacheLimit;
    /** The thread caches of this heap: which one a thread uses, the stripes, the registry. */
    private final ThreadCaches threadCaches;
    /** Overflowed magazine halves shared by the threads, before the native core: see {@link MagazineDepot}. */
    private final MagazineDepot depot;
    /** {@link ThreadCaches#byThread}, read by the fast paths (plain loads, see there). */
    private final long[][] byThread;
    private final boolean global;
    /** The configured byte limit, 0 for none; for the byte-limit refusal event. */
    private final long byteLimit;
    /**
     * The heap's name in JFR events: generated, or the MXBean name once one is registered.
     * Volatile: written on registration, read only when an event is committed.
     */
    private volatile String name;
    private static final java.util.concurrent.atomic.AtomicLong HEAPS = new java.util.concurrent.atomic.AtomicLong();

    /**
     * Cached {@code *frontier - base}; only grows. Plain loads and stores (racy by design): any
     * value some thread stored is a lower bound of the real frontier, which is monotonic, and a
     * stale one only sends the caller to {@link #refreshFrontier()}. Aligned 64-bit plain
     * accesses do not tear on the 64-bit JVMs spanheap supports. Not opaque: an opaque access
     * is a compiler barrier that would force the fast path to reload every field after it.
     * Written only when a span beyond the cached value is first freed into, so it does not
     * need a cache line of its own.
     */
    private long frontierOffset;

    /**
     * Set once by {@link #close()} before it closes the lifetime arena. Opaque: it only steers
     * threads away from new downcalls so close converges; safety comes from the arena.
     */
    @SuppressWarnings("unused")
    private boolean closing;

    /** References to the native heap: the heap's own, one per open arena or page source. */
    private final HeapRefCount refs = new HeapRefCount();

    public SpanHeapImpl(long reserveBytes, long byteLimit, int reuseThresholdPercent,
                        boolean allowHugePages, int cacheBlocks, long cacheBytesPerClass, boolean global) {
        this.classes = SizeClassTable.get();
        this.classOf = classes.classOfTable();
        this.global = global;
        this.byteLimit = byteLimit;
        this.name = global ? "global" : "SpanHeap-" + HEAPS.incrementAndGet();
        long heap;
        try (Arena tmp = Arena.ofConfined()) {
            MemorySegment config = tmp.allocate(SpanLayout.SH_CONFIG);
            NativeHeap.configInit(config);
            config.set(JAVA_LONG, SpanLayout.CONFIG_RESERVE_BYTES, reserveBytes);
            config.set(JAVA_LONG, SpanLayout.CONFIG_BYTE_LIMIT, byteLimit);
            config.set(JAVA_INT, SpanLayout.CONFIG_REUSE_THRESHOLD_PCT, reuseThresholdPercent);
            config.set(JAVA_INT, SpanLayout.CONFIG_ALLOW_HUGE_PAGES, allowHugePages ? 1 : 0);
            heap = NativeHeap.heapCreate(config);
        }
        if (heap == 0) {
            int code = NativeHeap.lastError();
            throw new SpanHeapOutOfMemoryError("sh_heap_create failed (" + NativeHeap.errorName(code)
                    + ") for a reservation of " + reserveBytes + " bytes", code == SpanLayout.SH_E_LIMIT);
        }
        this.heapAddress = heap;
        Zeroing.bindLibrary(); // the library is loaded now: bind sh_zero here, not in a deep caller (EagerClassInit)
        this.lifetime = Arena.ofShared();
        this.scope = lifetime.scope();
        this.ownScopes = new OwnScopes(scope, (address, size) -> !inArena(address));
        this.handle = MemorySegment.ofAddress(heap).reinterpret(lifetime, null);

        long[] layout = new long[(int) (SpanLayout.SH_LAYOUT.byteSize() / 8)];
        MemorySegment out = MemorySegment.ofArray(layout);
        NativeHeap.heapLayout(handle, out);
        this.base = out.get(JAVA_LONG, SpanLayout.LAYOUT_ARENA_BASE);
        this.arenaSize = out.get(JAVA_LONG, SpanLayout.LAYOUT_ARENA_SIZE);
        long spanSize = out.get(JAVA_LONG, SpanLayout.LAYOUT_SPAN_SIZE);
        long smallSpanSize = out.get(JAVA_LONG, SpanLayout.LAYOUT_SMALL_SPAN_SIZE);
        long bandShift = out.get(JAVA_LONG, SpanLayout.LAYOUT_BAND_SHIFT);
        long frontierAddress = out.get(JAVA_LONG, SpanLayout.LAYOUT_FRONTIER_ADDR);
        this.freeKey = out.get(JAVA_LONG, SpanLayout.LAYOUT_FREE_KEY);
        // The fast paths' band rule has the geometry as constants: the library must agree.
        if (spanSize != SpanLayout.SPAN_SIZE || smallSpanSize != SpanLayout.SMALL_SPAN_SIZE
                || bandShift != Integer.numberOfTrailingZeros(SpanLayout.SMALL_BAND_BIT)
                || (base & ((2L * SpanLayout.SMALL_BAND_BIT) - 1)) != 0 || frontierAddress == 0) {
            NativeHeap.heapDestroy(heap);
            throw new IllegalStateException("sh_heap_layout: bad layout: base 0x" + Long.toHexString(base)
                    + ", span_size " + spanSize + ", small_span_size " + smallSpanSize + ", band_shift "
                    + bandShift + ", frontier_addr 0x" + Long.toHexString(frontierAddress));
        }
        this.arena = MemorySegment.ofAddress(base).reinterpret(arenaSize, lifetime, null);
        this.frontier = MemorySegment.ofAddress(frontierAddress).reinterpret(8, lifetime, null);

        MagazineLayout magazines = new MagazineLayout(classes, cacheBlocks, cacheBytesPerClass);
        this.cachedClassCount = magazines.cachedClassCount;
        this.maxCachedSize = magazines.maxCachedSize;
        this.cacheBase = magazines.base;
        this.cacheLimit = magazines.limit;
        this.threadCaches = new ThreadCaches(magazines, this::drainDead);
        this.depot = new MagazineDepot(MagazineDepot.capacities(cachedClassCount, classes.blockSize,
                DEPOT_BUDGETS * cacheBytesPerClass, new int[cachedClassCount]));
        this.byThread = threadCaches.byThread;
        refreshFrontier();
    }

    // =====================================================================
    // Errors. The request check and the exceptions are HeapErrors' (checkRequest,
    // notOwned, doubleFree, closed, raise: imported), shared with MallocEngine.
    // =====================================================================

    /** Maps an exception from a closed lifetime arena to "heap is closed"; keeps others. */
    private RuntimeException closedOr(IllegalStateException e) {
        return scope.isAlive() ? e : closed();
    }

    /** {@return the exception for a failed allocation; callers throw it} */
    private Throwable allocationFailure(int code, long size, long alignment) {
        if (code == SpanLayout.SH_E_LIMIT) {
            limitRefused(size);
        }
        return switch (code) {
            case SpanLayout.SH_E_LIMIT -> HeapErrors.byteLimitExceeded(size);
            case SpanLayout.SH_E_NOMEM -> new SpanHeapOutOfMemoryError("cannot allocate " + size
                    + " bytes: arena exhausted or the OS refused memory", false);
            case SpanLayout.SH_E_INVALID -> new IllegalArgumentException("size " + size
                    + " with alignment " + alignment + " rejected by the native heap");
            default -> new IllegalStateException("native allocation of " + size + " bytes failed: "
                    + NativeHeap.errorName(code));
        };
    }

    /** Emits {@link ByteLimitRefusalEvent} if a recording wants it (a cold path: the allocation throws). */
    private void limitRefused(long size) {
        ByteLimitRefusalEvent event = new ByteLimitRefusalEvent();
        if (event.isEnabled()) {
            event.heap = name;
            event.requestedBytes = size;
            event.limitBytes = byteLimit;
            event.chargedBytes = nativeStat(SpanLayout.STATS_LIMITED);
            event.commit();
        }
    }

    // =====================================================================
    // Allocation
    //
    // Inlining, measured with C2 on JDK 25 (2 cores): allocate+free of 64 B costs ~6 ns when
    // SpanHeap.allocate*/free are inlined into the caller, and 30-40 ns when they are not: a
    // standalone FFM access costs ~1.5 ns because nothing (scope state, field loads, type
    // guards) is hoisted, and the MemorySegment must be materialised. C2 inlines a callee
    // only while its compiled code is under InlineSmallCode (2500 bytes), and three checked FFM
    // accesses are most of that. So the fast paths below hold only the magazine pop/push and
    // their checks; argument errors, refill, drain, frontier refresh, virtual threads, large
    // objects and alignments > 16 go to allocateSlow/freeSlow, called at 1/32 frequency or
    // less, which C2 keeps out of line (cold call sites inline only up to MaxInlineSize, 35).
    // =====================================================================

    /**
     * {@return the address of a new block of at least {@code size} bytes aligned to
     * {@code alignment}} Contents are unspecified.
     */
    public long allocateAddress(long size, long alignment) {
        // Unsigned: a negative size fails too and reaches the checks in the slow path.
        if (Long.compareUnsigned(size, maxCachedSize) <= 0 && alignment <= MIN_ALIGNMENT) {
            int sizeClass = classOf[(int) ((size + 15) >>> 4)];
            long threadId = Thread.currentThread().threadId();
            long[] cacheWords = byThread[(int) threadId & (CACHE_TABLE_SIZE - 1)]; // plain, see byThread
            if (cacheWords != null && cacheWords[ThreadCache.OWNER] == threadId) {
                int topIndex = ThreadCache.top(sizeClass);
                int slot = (int) cacheWords[topIndex] - 1;
                long address = cacheWords[slot];   // EMPTY (0) below the stack: empty
                if (address != ThreadCache.EMPTY) {
                    cacheWords[topIndex] = slot;   // plain store: owner-only, see ThreadCache
                    // Clear the free mark: the block is the caller's now (plain; a later
                    // downcall or handoff to another thread orders it). Throws once closed.
                    arena.set(JAVA_LONG_UNALIGNED, address - base + BLOCK_FREE_MARK_OFFSET, 0L);
                    return address;
                }
            }
        }
        return allocateSlow(size, alignment);
    }

    /** Every allocation the fast path does not serve; checks the arguments. */
    private long allocateSlow(long size, long alignment) {
        checkRequest(size, alignment);
        try {
            if (size <= classes.maxSmallSize) {
                int c = classes.classOf(size);
                if (alignment <= MIN_ALIGNMENT || classes.blockAlignment[c] >= alignment) {
                    if (cacheLimit[c] != cacheBase[c]) {
                        ThreadCache cache = threadCaches.own();
                        if (cache != null) {
                            return pop(cache, c);
                        }
                        ThreadCache stripe = threadCaches.lockedStripe();
                        if (stripe != null) {
                            try {
                                return pop(stripe, c);
                            } finally {
                                stripe.unlock();
                            }
                        }
                    }
                    if (alignment <= MIN_ALIGNMENT) {
                        return allocateDirect(size, MIN_ALIGNMENT);
                    }
                }
            } else if (alignment <= PAGE) {
                KeptLargeBlocks.Kept k = kept.take(size);
                if (k != null) {
                    ownScopes.adopt(k.address(), k.scope()); // segment() gives it this scope again
                    return k.address();
                }
            }
            return allocateDirect(size, alignment);
        } catch (IllegalStateException e) {
            throw closedOr(e);
        }
    }

    /** Pops a block of cached class c from a cache its caller owns or has locked, refilling it if empty. */
    private long pop(ThreadCache cache, int sizeClass) {
        long[] cacheWords = cache.m;
        int topIndex = ThreadCache.top(sizeClass);
        int slot = (int) cacheWords[topIndex];
        if (slot == cacheBase[sizeClass]) {
            slot = refill(cache, sizeClass);
        }
        long address = cacheWords[--slot];
        cacheWords[topIndex] = slot;               // plain store: owner or lock holder only
        arena.set(JAVA_LONG_UNALIGNED, address - base + BLOCK_FREE_MARK_OFFSET, 0L);
        return address;
    }

    /** {@return a segment of {@code size} bytes at {@code address}, with the heap's scope} */
    public MemorySegment segment(long address, long size) {
        long off = address - base;
        if (Long.compareUnsigned(off, arenaSize) < 0) {
            return arena.asSlice(off, size);        // no restricted call; bounds-checked
        }
        return largeSegment(address, size);
    }

    /**
     * A block outside the arena: a large object (over 1 MiB, or aligned above 4 KiB), mapped
     * for itself. Its free may unmap it (a kept mapping's tail too, when a smaller block
     * reuses it), so it gets a scope of its own: see {@link OwnScopes}.
     */
    private MemorySegment largeSegment(long address, long size) {
        return ownScopes.segment(address, size);
    }

    private boolean inArena(long address) {
        return Long.compareUnsigned(address - base, arenaSize) < 0;
    }

    /** Scopes of the live large objects. */
    private final OwnScopes ownScopes;

    /** Freed large blocks kept with their scopes open, to hand out again without a handshake. */
    private final KeptLargeBlocks kept = new KeptLargeBlocks();

    /** Alignment of every large block (the native core maps them page-aligned at least). */
    private static final long PAGE = 4096;

    private long allocateDirect(long size, long alignment) {
        if ((boolean) CLOSING.getOpaque(this)) {
            throw closed();
        }
        long address = alignment <= MIN_ALIGNMENT
                ? NativeHeap.alloc(handle, size)
                : NativeHeap.allocAligned(handle, size, alignment);
        if (address == 0) {
            // Same OS thread: critical downcalls never unmount a virtual thread.
            int code = NativeHeap.lastError();
            if (code == SpanLayout.SH_E_LIMIT || code == SpanLayout.SH_E_NOMEM) {
                reclaimCaches();
                address = alignment <= MIN_ALIGNMENT
                        ? NativeHeap.alloc(handle, size)
                        : NativeHeap.allocAligned(handle, size, alignment);
                if (address == 0) {
                    code = NativeHeap.lastError();
                }
            }
            if (address == 0) {
                throw raise(allocationFailure(code, size, alignment));
            }
        }
        if ((address & (alignment - 1)) != 0) {
            throw new IllegalStateException("native heap returned 0x" + Long.toHexString(address)
                    + ", not aligned to " + alignment);
        }
        return address;
    }

    /**
     * Fills the empty magazine of class c: a whole magazine's worth from the cache's own
     * overflow, else from the heap's depot, else half its capacity from the native heap.
     * Returns the new top, which each of them has stored already (a caller that dies after
     * the call loses nothing).
     */
    private int refill(ThreadCache cache, int c) {
        if ((boolean) CLOSING.getOpaque(this)) {
            throw closed();
        }
        long[] m = cache.m;
        int b = cacheBase[c];
        int t = ThreadCache.top(c);
        int top = cache.overflow.withdraw(c, m, b, cacheLimit[c] - b, t);
        if (top != b) {
            return top;
        }
        top = depot.withdraw(c, m, b, cacheLimit[c] - b, t);
        if (top != b) {
            return top;
        }
        int want = (cacheLimit[c] - b + 1) >>> 1;
        MemorySegment whole = MemorySegment.ofArray(m);
        int got = NativeHeap.cacheRefill(handle, c, whole, b, want, ThreadCache.top(c));
        if (got == -SpanLayout.SH_E_LIMIT || got == -SpanLayout.SH_E_NOMEM) {
            reclaimCaches();
            got = NativeHeap.cacheRefill(handle, c, whole, b, want, ThreadCache.top(c));
        }
        if (got <= 0) {
            throw raise(allocationFailure(-got, classes.blockSize[c], MIN_ALIGNMENT));
        }
        if (got > want) {
            throw new IllegalStateException("sh_alloc_batch returned " + got + " > " + want);
        }
        return b + got;
    }

    // =====================================================================
    // Free
    // =====================================================================

    /** Frees a segment from {@link #segment}; checks it is a live block of this heap. */
    public void free(MemorySegment segment) {
        if (segment.scope() != scope) {
            freeOwnScope(segment);
            return;
        }
        freeAddress(segment.address());
    }

    /**
     * Frees an individually mapped block: keeps it with its scope open to hand out again
     * ({@link KeptLargeBlocks}) if there is room, else closes its scope (a handshake) and
     * frees (unmaps) it.
     */
    private void freeOwnScope(MemorySegment segment) {
        long address = segment.address();
        if (kept.holds(segment)) {
            throw doubleFree(address);             // kept by its first free: its scope is still open
        }
        Arena own = ownScopes.release(segment);
        long usable;
        try {
            usable = KeptLargeBlocks.eligible(segment.byteSize()) ? NativeHeap.usableSize(handle, address) : 0;
        } catch (IllegalStateException closing) {
            usable = 0;                            // the heap closes: free it as before, which names that
        }
        if (usable == 0 || !kept.keep(new KeptLargeBlocks.Kept(address, usable, own))) {
            SharedArenas.close(own);
            freeAddress(address);
        }
    }

    /** Closes the scopes of the kept large blocks and frees them; {@code closing}: keep none from now on. */
    private void dropKeptLargeBlocks(boolean closing) {
        List<KeptLargeBlocks.Kept> all = kept.takeAll(closing);
        for (KeptLargeBlocks.Kept k : all) {
            SharedArenas.close(k.scope());         // every scope first: a free below may throw (heap closing)
        }
        if (!closing) {
            for (KeptLargeBlocks.Kept k : all) {
                freeAddress(k.address());
            }
        }
    }

    /**
     * Frees the block at {@code address}, which a caller of this class got from
     * {@link #allocateAddress}. The fast path pushes it onto the calling thread's magazine
     * after checking, in Java, that it is a live block start of a cached class of this heap;
     * anything else goes to {@link #freeSlow}, which re-checks and names the error.
     *
     * <p>The span of the address: the arena has two bands of virtual spans, and bit
     * {@link SpanLayout#SMALL_BAND_BIT} of the offset (the base is aligned) is set in the small
     * band; then the band's mask. A test and two constants: C2 compiles it to a branch that
     * the profile predicts, so the header load waits for one {@code and} as with a single
     * mask (docs/java-core.md, "The free path without a downcall").
     *
     * <p>The checks: {@code base <= address < *frontier} (so the span header is readable);
     * the span header's first 8 bytes hold {@code SH_SPAN_MAGIC} and a cached class c (one
     * 8-byte load: magic in bits 0..31, size_class in bits 32..47, x86-64 is little-endian);
     * the offset from the class's first block is below the payload bytes and a multiple of
     * the block size (Lemire, see {@link SizeClassTable}); the free mark is not set.
     */
    public void freeAddress(long address) {
        long offset = address - base;
        if (Long.compareUnsigned(offset, frontierOffset) < 0) {
            // A closed heap makes this access throw IllegalStateException.
            long span = offset & (((int) offset & SpanLayout.SMALL_BAND_BIT) != 0
                    ? SpanLayout.SMALL_SPAN_MASK : SpanLayout.SPAN_MASK);
            long header = arena.get(JAVA_LONG_UNALIGNED, span);
            int sizeClass = (int) (header >>> 32) & 0xFFFF;
            long threadId = Thread.currentThread().threadId();
            long[] cacheWords = byThread[(int) threadId & (CACHE_TABLE_SIZE - 1)]; // plain, see byThread
            if ((int) header == SpanLayout.SPAN_MAGIC && sizeClass < cachedClassCount
                    && cacheWords != null && cacheWords[ThreadCache.OWNER] == threadId) {
                int classRecord = ThreadCache.CLASS_RECORDS + ThreadCache.CLASS_RECORD * sizeClass;
                long fromFirstBlock = offset - span - cacheWords[classRecord + ThreadCache.PAYLOAD_OFF];
                long divisor = cacheWords[classRecord + ThreadCache.DIVISOR];
                int slot = (int) cacheWords[classRecord + ThreadCache.TOP];
                long mark = freeKey ^ address;
                // The slot at the top is FULL (-1) exactly when the stack is full. Plain load
                // and store of the mark: a block is freed by one thread; two threads racing to
                // free the same block is a caller bug this check does not promise to catch (a
                // CAS would, at ~20 cycles per free).
                if (Long.compareUnsigned(fromFirstBlock, cacheWords[classRecord + ThreadCache.PAYLOAD_BYTES]) < 0
                        && Long.compareUnsigned(fromFirstBlock * divisor, divisor - 1) <= 0
                        && cacheWords[slot] != ThreadCache.FULL
                        && arena.get(JAVA_LONG_UNALIGNED, offset + BLOCK_FREE_MARK_OFFSET) != mark) {
                    arena.set(JAVA_LONG_UNALIGNED, offset + BLOCK_FREE_MARK_OFFSET, mark);
                    cacheWords[slot] = address;
                    cacheWords[classRecord + ThreadCache.TOP] = slot + 1; // plain store: owner-only
                    return;
                }
            }
        }
        freeSlow(address);
    }

    /** Every free the fast path does not finish; names the error of a bad address. */
    private void freeSlow(long address) {
        try {
            long offset = address - base;
            if (Long.compareUnsigned(offset, frontierOffset) >= 0
                    && Long.compareUnsigned(offset, refreshFrontier()) >= 0) {
                freeDirect(address);               // large object, or not ours
                return;
            }
            long span = offset & (((int) offset & SpanLayout.SMALL_BAND_BIT) != 0
                    ? SpanLayout.SMALL_SPAN_MASK : SpanLayout.SPAN_MASK);   // as in freeAddress
            long header = arena.get(JAVA_LONG_UNALIGNED, span);
            int sizeClass = (int) (header >>> 32) & 0xFFFF;
            if ((int) header != SpanLayout.SPAN_MAGIC || sizeClass >= cachedClassCount
                    || !isBlockStart(sizeClass, offset - span - classes.payloadOffset[sizeClass])) {
                // Not a block start of a cached class: the native core frees it or decides
                // and names the error.
                freeDirect(address);
                return;
            }
            ThreadCache cache = threadCaches.own();
            if (cache != null) {
                push(cache, sizeClass, address);
                return;
            }
            ThreadCache stripe = threadCaches.lockedStripe();
            if (stripe == null) {
                freeDirect(address);               // stripe taken: the native per-carrier cache
                return;
            }
            try {
                push(stripe, sizeClass, address);
            } finally {
                stripe.unlock();
            }
        } catch (IllegalStateException e) {
            throw closedOr(e);
        }
    }

    /**
     * Checks the free mark of a validated block start of cached class c, sets it and pushes
     * the block, moving the older half of a full magazine out first: to the cache's own
     * overflow, else the heap's depot, else the native heap (one downcall). The cache is
     * the caller's own or a stripe it holds locked.
     */
    private void push(ThreadCache cache, int sizeClass, long address) {
        long[] cacheWords = cache.m;
        long markOffset = address - base + BLOCK_FREE_MARK_OFFSET;
        long mark = freeKey ^ address;
        if (arena.get(JAVA_LONG_UNALIGNED, markOffset) == mark) {
            throw doubleFree(address);
        }
        int topIndex = ThreadCache.top(sizeClass);
        int slot = (int) cacheWords[topIndex];
        int stackBase = cacheBase[sizeClass];
        int limit = cacheLimit[sizeClass];
        if (slot == limit) {
            int n = Math.max(1, (limit - stackBase) >>> 1); // a one-block magazine drains its block
            if (!cache.overflow.deposit(sizeClass, cacheWords, stackBase, n, limit - stackBase, topIndex)
                    && !depot.deposit(sizeClass, cacheWords, stackBase, n, limit - stackBase, topIndex)) {
                drainOlder(cacheWords, sizeClass, n); // both full: frees, shifts and stores the top in one call
            }
            slot = limit - n;
        }
        arena.set(JAVA_LONG_UNALIGNED, markOffset, mark);
        cacheWords[slot] = address;
        cacheWords[topIndex] = slot + 1;           // plain store: owner or lock holder only
    }

    /**
     * {@return whether {@code fromFirstBlock}, an offset from the first block of class
     * {@code sizeClass}, is a block start inside the span} Lemire's divisibility test, see
     * {@link SizeClassTable}.
     */
    private boolean isBlockStart(int sizeClass, long fromFirstBlock) {
        long divisor = classes.divisor[sizeClass];
        return Long.compareUnsigned(fromFirstBlock, classes.payloadBytes[sizeClass]) < 0
                && Long.compareUnsigned(fromFirstBlock * divisor, divisor - 1) <= 0;
    }

    private void freeDirect(long address) {
        if ((boolean) CLOSING.getOpaque(this)) {
            throw closed();
        }
        int rc = NativeHeap.freeChecked(handle, address);
        switch (rc) {  // SH_OK or a negated code, as every int-returning call
            case SpanLayout.SH_OK -> { }
            case -SpanLayout.SH_E_DOUBLE_FREE -> throw doubleFree(address);
            case -SpanLayout.SH_E_INTERIOR -> throw notOwned(address, " (it points inside a block)");
            case -SpanLayout.SH_E_NOT_OWNED -> throw notOwned(address, "");
            default -> throw new IllegalStateException("sh_free_checked(0x" + Long.toHexString(address)
                    + ") returned " + rc + " (" + NativeHeap.errorName(rc) + ")");
        }
    }

    /** {@return the arena offset of the native frontier}, read with acquire, cached. */
    private long refreshFrontier() {
        // Acquire: pairs with the native core's release store when it carves a span, so the
        // span's header written before is visible to our reads of it.
        long f = (long) SpanLayout.FRONTIER.varHandle().getAcquire(frontier, 0L) - base;
        frontierOffset = f;                      // plain, see the field
        return f;
    }

    // =====================================================================
    // Draining thread caches: dead threads', on a failed allocation, on request
    // =====================================================================

    /**
     * Drains a terminated thread's cache; emits {@link DeadThreadCacheDrainEvent} if a recording
     * wants it. {@link ThreadCaches} calls it under its registry lock.
     */
    private void drainDead(ThreadCache cache) {
        DeadThreadCacheDrainEvent event = new DeadThreadCacheDrainEvent();
        if (!event.isEnabled()) {
            drainAll(cache);
            return;
        }
        long blocks = 0, bytes = 0;
        for (int c = 0; c < cachedClassCount; c++) {
            long n = cache.m[ThreadCache.top(c)] - cacheBase[c] + cache.overflow.blocks(c);
            blocks += n;
            bytes += n * classes.blockSize[c];
        }
        event.begin();
        drainAll(cache);
        event.end();
        if (blocks > 0 && event.shouldCommit()) {    // an empty cache is no news
            event.heap = name;
            event.threadId = cache.ownerId;
            event.virtual = cache.virtual;
            event.blocks = blocks;
            event.bytes = bytes;
            event.commit();
        }
    }

    /**
     * Returns every block of a cache, its overflow and its magazines, to the native heap, one
     * downcall per non-empty class of each. The caller owns the cache, holds the stripe's
     * lock, or the owner is dead.
     */
    private void drainAll(ThreadCache cache) {
        cache.overflow.drain(this::drainDepot);
        long[] m = cache.m;
        for (int c = 0; c < cachedClassCount; c++) {
            int n = (int) m[ThreadCache.top(c)] - cacheBase[c];
            if (n > 0) {
                drainOlder(m, c, n);               // one call per class: frees and empties it at once
            }
        }
    }

    /**
     * Frees the {@code n} oldest blocks of class c's magazine and moves the rest down, in one
     * native call that also stores the new top: a caller that dies right after it (a
     * {@link StackOverflowError} at its next method entry) neither loses blocks nor keeps freed
     * ones (StackOverflowInCacheTest; before, the free and the bookkeeping were separate steps).
     */
    private void drainOlder(long[] m, int c, int n) {
        int b = cacheBase[c];
        drainStack(m, b, n, (int) m[ThreadCache.top(c)] - b, ThreadCache.top(c));
    }

    /**
     * Frees the {@code n} oldest of the {@code count} blocks at {@code a[base ..)}, moves the
     * rest down and stores the new top into {@code a[top]}, in one native call: a magazine's
     * older half, or a whole depot or overflow store.
     */
    private void drainStack(long[] a, int base, int n, int count, int top) {
        if ((boolean) CLOSING.getOpaque(this)) {
            throw closed();
        }
        int rc = NativeHeap.cacheDrain(handle, MemorySegment.ofArray(a), base, n, count, top);
        if (rc != SpanLayout.SH_OK) {
            throw new IllegalStateException("sh_cache_drain rejected cached blocks: " + NativeHeap.errorName(rc));
        }
    }

    /** Frees the {@code count} blocks of a depot's or an overflow's store and empties it, in one native call. */
    private void drainDepot(int c, long[] store, int count) {
        drainStack(store, MagazineDepot.BASE, count, count, 0);
    }

    /** Slow path on a byte-limit or out-of-memory failure: return cached blocks, then retry. */
    private void reclaimCaches() {
        dropKeptLargeBlocks(false);
        depot.drain(this::drainDepot);
        threadCaches.drainDead();
        ThreadCache own = threadCaches.own();
        if (own != null) {
            drainAll(own);
        }
        threadCaches.forEachFreeStripe(this::drainAll);
    }

    /** Drains the calling thread's cache (if it has one) and those of terminated threads. */
    public void flushThreadCache() {
        if (!scope.isAlive()) {
            throw closed();                        // with nothing cached, no access would notice
        }
        try {
            reclaimCaches();
        } catch (IllegalStateException e) {
            throw closedOr(e);
        }
    }

    /**
     * Drains the calling thread's cache, the terminated threads' and the free striped
     * ones, then has the native core give free spans and kept large mappings back to the
     * OS. Returns the drop in committed bytes over the call (0 if other threads made it
     * grow meanwhile).
     */
    public long trim() {
        if (!scope.isAlive()) {
            throw closed();
        }
        try {
            MemoryReleaseEvent event = new MemoryReleaseEvent();
            event.begin();
            long before = nativeStat(SpanLayout.STATS_COMMITTED);
            reclaimCaches();
            NativeHeap.trim(handle);
            long after = nativeStat(SpanLayout.STATS_COMMITTED);
            long released = Math.max(0, before - after);
            event.end();
            if (event.shouldCommit()) {
                event.set(name, MemoryReleaseEvent.TRIM, released, after);
                event.commit();
            }
            return released;
        } catch (IllegalStateException e) {
            throw closedOr(e);
        }
    }

    /** {@return one {@code long} of the native heap's stats, at {@code offset} of {@code sh_heap_stats}} */
    private long nativeStat(long offset) {
        try (Arena tmp = Arena.ofConfined()) {
            MemorySegment s = tmp.allocate(SpanLayout.SH_HEAP_STATS);
            NativeHeap.stats(handle, s);
            return s.get(JAVA_LONG, offset);
        }
    }

    // =====================================================================
    // Stats, usable size
    // =====================================================================

    public HeapStats stats() {
        try {
            long[] cached = threadCaches.cachedBlocks(classes.count, cachedClassCount, cacheBase);
            for (int c = 0; c < cachedClassCount; c++) {
                cached[c] += depot.blocks(c);
            }
            try (Arena tmp = Arena.ofConfined()) {
                MemorySegment s = tmp.allocate(SpanLayout.SH_HEAP_STATS);
                NativeHeap.stats(handle, s);
                return HeapStatsReader.read(s, classes, cached, kept.totals());
            }
        } catch (IllegalStateException e) {
            throw closedOr(e);
        }
    }

    /** {@return the usable bytes of the live block at the segment's address} */
    public long usableSize(MemorySegment segment) {
        if (segment.scope() != scope && !ownScopes.owns(segment)) {
            if (!scope.isAlive()) {
                throw closed();
            }
            throw notOwned(segment.address(), "");
        }
        try {
            long n = NativeHeap.usableSize(handle, segment.address());
            if (n == 0) {
                throw notOwned(segment.address(), " (or it is not a live block)");
            }
            return n;
        } catch (IllegalStateException e) {
            throw closedOr(e);
        }
    }

    // =====================================================================
    // Lifetime
    // =====================================================================

    @Override
    public Engine kind() {
        return Engine.NATIVE;
    }

    public boolean isGlobal() {
        return global;
    }

    /** {@return the heap's name in JFR events} */
    public String name() {
        return name;
    }

    /** Names the heap in later JFR events (its MXBean's name). */
    public void name(String name) {
        this.name = name;
    }

    public boolean isOpen() {
        return scope.isAlive();
    }

    /** {@return the heap's lifetime scope: the scope of every segment from {@link #segment}} */
    public MemorySegment.Scope scope() {
        return scope;
    }

    /** Takes a reference for an arena or a compacting heap's page source; throws if the heap is closed. */
    public void acquireRef() {
        if ((boolean) CLOSING.getOpaque(this) || !refs.tryAcquire()) {
            throw closed();
        }
    }

    /** Drops a reference; the last one destroys the native heap. */
    public void releaseRef() {
        if (refs.release()) {
            NativeHeap.heapDestroy(heapAddress);
        }
    }

    /**
     * Closes the heap: no allocation, free or access through its segments succeeds afterwards.
     * Idempotent. The native heap is destroyed now, or when the last open arena closes.
     */
    public void close() {
        if (global) {
            throw new UnsupportedOperationException("the global heap cannot be closed");
        }
        if (!CLOSING.compareAndSet(this, false, true)) {
            return;                                // closed, or being closed by another thread
        }
        SharedArenas.closeWithin(lifetime, CLOSE_PATIENCE_NANOS); // handshake: no thread is inside an access now
        ownScopes.closeAll();                      // segments of individually mapped blocks die too
        dropKeptLargeBlocks(true);                 // and those of kept ones; the destroy unmaps them
        releaseRef();
    }

    /** Frees the blocks of a closing arena, through the calling thread's cache. */
    @Override
    public void freeArenaBlocks(long[] blocks, int n) {
        if ((boolean) CLOSING.getOpaque(this)) {
            return;                                // destroy reclaims them
        }
        try {
            for (int i = 0; i < n; i++) {
                freeAddress(blocks[i]);
            }
        } catch (IllegalStateException e) {
            if (scope.isAlive()) {
                throw e;
            }
            // closed concurrently: sh_heap_destroy reclaims the rest
        }
    }
}
