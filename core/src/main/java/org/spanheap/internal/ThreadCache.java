package org.spanheap.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.WeakReference;

/**
 * One thread's magazines of free blocks for one heap (every platform thread, a bounded
 * number of promoted virtual threads), or a stripe shared by virtual threads: everything
 * the allocate/free fast paths read lives in one flat {@code long[]}, {@link #m}, so a fast
 * path loads one array reference and one array length, and C2 checks every index against
 * that one length.
 *
 * <pre>
 * m[0]                      owner thread id ({@link Thread#threadId()}), -1 for a stripe
 * m[1 + 4c + TOP]           class c: index in m of the next empty slot (top of the stack)
 * m[1 + 4c + PAYLOAD_OFF]   class c: offset of block 0 from the span start   } copies of the
 * m[1 + 4c + PAYLOAD_BYTES] class c: block_count * block_size                } heap's per-class
 * m[1 + 4c + DIVISOR]       class c: ceil(2^64 / block_size) (Lemire)        } constants
 * then per cached class c:  | EMPTY (0) | slot base(c) .. slot limit(c)-1 | FULL (-1) |
 * then, for a stripe only:  lock word (0 free, 1 taken), 16 spare longs
 * </pre>
 *
 * The sentinels let the fast paths test "empty" and "full" with the word they touch anyway:
 * a pop reads {@code m[top - 1]}, which is {@link #EMPTY} exactly when the stack is empty
 * (block addresses are never 0); a push reads {@code m[top]}, which is {@link #FULL} exactly
 * when the stack is full (slots only ever hold block addresses or 0, never -1). So the heap's
 * base and limit arrays are needed only in the slow paths.
 *
 * <p>Only the owner thread (or a stripe's lock holder) reads or writes the slots and tops,
 * with plain accesses. Two other readers exist:
 * <ul>
 * <li>{@code stats()} of any thread reads the tops with {@link #topOpaque opaque} loads:
 *     an estimate while the owner runs, exact once the owner is quiescent.</li>
 * <li>After {@link #isOwnerDead()} is true, a drainer reads everything with plain loads:
 *     {@link Thread#isAlive()} returning false happens-after every action of the dead thread
 *     (JLS 17.4.4). A cleared weak reference implies termination too, since a live thread is a
 *     GC root.</li>
 * </ul>
 * A dead platform thread's cache may instead be {@linkplain #adopt adopted} by a new platform
 * thread, blocks and all: the same happens-before makes the dead owner's writes visible to the
 * adopter, which is then the only owner. The owner fields change only then, under the
 * registry lock of {@link ThreadCaches}, and are read only under it.
 * Each cache is allocated by its first owner thread, in that thread's TLAB, so different
 * threads' magazines do not share cache lines in practice; no padding is added.
 */
public final class ThreadCache {
    private static final VarHandle WORD = MethodHandles.arrayElementVarHandle(long[].class);

    /** Index of the owner id. */
    static final int OWNER = 0;
    /** Per-class record: {@code m[CLASS_RECORDS + CLASS_RECORD * c + field]}. */
    static final int CLASS_RECORDS = 1;
    static final int CLASS_RECORD = 4;
    static final int TOP = 0;
    static final int PAYLOAD_OFF = 1;
    static final int PAYLOAD_BYTES = 2;
    static final int DIVISOR = 3;
    /** Sentinel below each stack; a block address is never 0. */
    static final long EMPTY = 0;
    /** Sentinel above each stack; a block address is never -1. */
    static final long FULL = -1;

    /** Owner id, class records, magazines with sentinels, and a stripe's lock word; see the class comment. */
    final long[] m;
    /**
     * {@link Thread#threadId()} of the owner: unique for the life of the JVM, never reused; -1
     * for a stripe. Changed by {@link #adopt}; guarded by the registry lock after construction.
     */
    long ownerId;
    /** The owner thread; null for a stripe. Changed by {@link #adopt}, like {@link #ownerId}. */
    private WeakReference<Thread> owner;
    /** Whether the owner is a (promoted) virtual thread; their number of caches is bounded. */
    final boolean virtual;
    /**
     * A stripe's promotion bookkeeping, guarded by its lock: the id of the thread that used it
     * last and how many operations in a row that thread made (see {@code SpanHeapImpl.lockedStripe}).
     */
    long lastUser = -1;
    int streak;
    /** Index in {@link #m} of a stripe's lock word; -1 for a thread's cache. */
    private final int lockIndex;
    /**
     * Blocks beyond the magazines, per class, private to the owner (or the stripe's lock
     * holder): a full magazine's older half goes here first, an empty magazine is refilled
     * from here first. Kept out of {@link #m} so the fast paths' array stays small (with
     * 1024-slot magazines instead, mixed sizes took 10-18% longer per operation).
     */
    final MagazineDepot overflow;

    /** {@return the index in {@code m} of class c's top} */
    static int top(int c) {
        return CLASS_RECORDS + CLASS_RECORD * c + TOP;
    }

    /** A platform thread's cache; {@code template} comes from {@link #template}. */
    ThreadCache(long[] template, int[] overflowCapacity, Thread owner) {
        this.m = template.clone();
        this.overflow = new MagazineDepot(overflowCapacity);
        this.ownerId = owner.threadId();
        this.m[OWNER] = ownerId;
        this.owner = new WeakReference<>(owner);
        this.virtual = owner.isVirtual();
        this.lockIndex = -1;
    }

    /**
     * A stripe: a cache shared by virtual threads, used only under its lock. The lock word
     * sits after the magazines (the lock holder touches that array anyway), followed by 16
     * spare longs so the word does not share a cache line with whatever the allocator
     * places next (the next stripe's objects, read by other threads).
     */
    ThreadCache(long[] template, int[] overflowCapacity) {
        this.overflow = new MagazineDepot(overflowCapacity);
        this.lockIndex = template.length;
        this.m = java.util.Arrays.copyOf(template, template.length + 1 + 16);
        this.ownerId = -1;
        this.m[OWNER] = -1;
        this.owner = null;
        this.virtual = false;
    }

    /**
     * {@return the initial array of a cache: class records and empty magazines} Owner word
     * 0 (set by the constructors). The first {@code records} classes have a record and a
     * stack of slots {@code [base[c], limit[c])} between the sentinels ({@code limit == base}:
     * a zero-slot stack); {@code length} covers them all.
     */
    static long[] template(int records, int[] base, int[] limit, long[] payloadOffset,
                           long[] payloadBytes, long[] divisor, int length) {
        long[] m = new long[length];
        for (int c = 0; c < records; c++) {
            int r = CLASS_RECORDS + CLASS_RECORD * c;
            m[r + TOP] = base[c];
            m[r + PAYLOAD_OFF] = payloadOffset[c];
            m[r + PAYLOAD_BYTES] = payloadBytes[c];
            m[r + DIVISOR] = divisor[c];
            m[base[c] - 1] = EMPTY;
            m[limit[c]] = FULL;
        }
        return m;
    }

    /**
     * Makes {@code thread}, a live platform thread, the owner of this cache of a dead platform
     * thread, keeping its blocks. Caller holds the registry lock and has seen
     * {@link #isOwnerDead()} true. The id goes into {@code m[OWNER]} last; until then no
     * thread's fast path takes this array for its own (the dead id matches no live thread).
     */
    void adopt(Thread thread) {
        long id = thread.threadId();
        WeakReference<Thread> ref = new WeakReference<>(thread);
        // No call from here on: a StackOverflowError strikes only at a method's entry, so the
        // three fields change together or not at all.
        owner = ref;
        ownerId = id;
        m[OWNER] = id;
    }

    /** {@return whether the owner thread has terminated; never for a stripe} */
    boolean isOwnerDead() {
        if (owner == null) {
            return false;
        }
        Thread t = owner.get();
        return t == null || !t.isAlive();
    }

    /**
     * {@return whether this stripe's lock was free and is now held} CAS (volatile): acquires,
     * so the previous holder's plain writes to {@link #m} are visible.
     */
    boolean tryLock() {
        return WORD.compareAndSet(m, lockIndex, 0L, 1L);
    }

    /** Releases this stripe's lock; release store: publishes this holder's plain writes. */
    void unlock() {
        WORD.setRelease(m, lockIndex, 0L);
    }

    /** {@return class c's top, read opaque: some value the owner wrote, never a torn or invented one} */
    int topOpaque(int c) {
        return (int) (long) WORD.getOpaque(m, top(c));
    }
}
