package org.spanheap.internal;

/**
 * Free blocks that thread magazines overflowed, per size class: the depot of Bonwick and
 * Adams' magazine allocator (USENIX 2001). A thread whose magazine is full deposits the
 * magazine's older half here instead of freeing it in the native core, and a thread whose
 * magazine is empty withdraws from here before asking the native core; a batch crosses by an
 * array copy under the class's monitor, where the native core would walk and rebuild its span
 * free lists. Two kinds exist, the same code: each {@link ThreadCache} has one of its own
 * (its overflow, used only by its owner or a stripe's lock holder, so its monitors are never
 * contended), and each heap has one its threads share (blocks that one thread frees and
 * another allocates). Measured in docs/java-core.md, "Thread caches".
 *
 * <p>Per class {@code c}, {@code stores[c]} is laid out like a magazine so the native drain can
 * empty it in one call: {@code store[0]} is the top (the index one past the newest block),
 * {@code store[1 .. top)} the blocks, oldest first. Blocks here carry their free mark, as in a
 * magazine, so a double free of one is caught. Capacity: {@code capacity[c]} blocks
 * (a byte budget per class); the store grows on demand up to it.
 *
 * <p>Thread safety: every access to a class's store and top is under {@code locks[c]}'s
 * monitor, which orders a depositor's writes (the blocks, their free marks) before a later
 * withdrawer's reads. Stats read a top opaquely, without the monitor, through {@link #blocks}:
 * an estimate while others run, as for the thread caches (a plain {@code long} store does not
 * tear on the 64-bit JVMs FFM runs on).
 *
 * <p>A thread that dies of a {@link StackOverflowError} in the middle of a deposit or a
 * withdrawal must neither lose blocks nor leave one in two places (StackOverflowInCacheTest).
 * Such an error is thrown only at a method's entry, so {@link #deposit} and {@link #withdraw}
 * change state only in their own bodies, with plain loops and stores and no calls after
 * the first write (in the interpreter even {@code Math.min} and a VarHandle access are calls);
 * the monitor is released by the bytecode's own exit path. A deposit writes the blocks and
 * the depot's top before it takes them out of the magazine.
 *
 * <p>Public, with its operations, only for the stress module's jcstress test of this
 * protocol: the package is not exported by the module (module-info), so users on the module
 * path cannot reach it.
 */
public final class MagazineDepot {

    private static final java.lang.invoke.VarHandle WORD =
            java.lang.invoke.MethodHandles.arrayElementVarHandle(long[].class);

    /** First slot of a store; {@code store[0]} is its top. */
    public static final int BASE = 1;
    /** A store's slots at its first deposit; it doubles up to the class's capacity. */
    private static final int INITIAL_SLOTS = 64;

    private final Object[] locks;
    /** Per class: top and blocks (see the class comment); guarded by {@code locks[c]}. */
    private final long[][] stores;
    /** Per class: most blocks held. 0: the class has no depot. */
    private final int[] capacity;

    /**
     * A depot holding at most {@code capacity[c]} blocks of class {@code c} (0: none; a
     * deposit is then refused). A class's store is allocated at its first deposit.
     */
    public MagazineDepot(int[] capacity) {
        int n = capacity.length;
        this.locks = new Object[n];
        this.stores = new long[n][];
        this.capacity = capacity.clone();
        long[] none = {BASE};  // shared while empty: a deposit replaces it before writing
        for (int c = 0; c < n; c++) {
            locks[c] = new Object();
            stores[c] = none;
        }
    }

    /**
     * {@return per class {@code c < classCount}: {@code bytesPerClass / blockSize[c]} blocks
     * less {@code magazine[c]}, at least 0 and at most 2^20}
     */
    static int[] capacities(int classCount, int[] blockSize, long bytesPerClass, int[] magazine) {
        int[] cap = new int[classCount];
        for (int c = 0; c < classCount; c++) {
            cap[c] = (int) Math.max(0, Math.min(1 << 20, bytesPerClass / blockSize[c] - magazine[c]));
        }
        return cap;
    }

    /**
     * Moves the {@code n} oldest of the {@code count} blocks of a magazine ({@code m[b .. b+count)})
     * here, moves the rest down to {@code m[b]} and stores {@code b + count - n} into {@code m[top]};
     * or changes nothing and returns false when the class's store has no room for them.
     */
    public boolean deposit(int c, long[] m, int b, int n, int count, int top) {
        synchronized (locks[c]) {
            long[] store = stores[c];
            int t = (int) store[0];
            if (t - BASE + n > capacity[c]) {
                return false;
            }
            if (t + n > store.length) {
                // the copy is complete before the new store is published; nothing changed yet
                long[] grown = java.util.Arrays.copyOf(store, (int) Math.min(BASE + (long) capacity[c],
                        Math.max(t + n, Math.max(BASE + INITIAL_SLOTS, 2L * store.length))));
                stores[c] = grown;
                store = grown;
            }
            for (int k = 0; k < n; k++) {
                store[t + k] = m[b + k];
            }
            store[0] = t + n;  // plain: an opaque store is a call in the interpreter (see the class comment)
            for (int k = n; k < count; k++) {
                m[b + k - n] = m[b + k];
            }
            m[top] = b + count - n;
            return true;
        }
    }

    /**
     * Moves up to {@code want} of the class's newest blocks into the empty magazine at
     * {@code m[b ..)} and stores the new top into {@code m[top]}; returns that top, which is
     * {@code b} (nothing stored) when the depot holds none of the class.
     */
    public int withdraw(int c, long[] m, int b, int want, int top) {
        synchronized (locks[c]) {
            long[] store = stores[c];
            int t = (int) store[0];
            int k = t - BASE < want ? t - BASE : want;
            if (k <= 0) {
                return b;
            }
            int from = t - k;
            for (int j = 0; j < k; j++) {
                m[b + j] = store[from + j];
            }
            m[top] = b + k;
            store[0] = from;
            return b + k;
        }
    }

    /** {@return blocks held for class c: exact when no other thread deposits or withdraws} */
    public long blocks(int c) {
        return (long) WORD.getOpaque(stores[c], 0) - BASE;
    }

    /** Receives a class's store to empty, under its monitor: see {@link #drain}. */
    public interface Drain {
        void drain(int c, long[] store, int count);
    }

    /**
     * Hands every non-empty store to {@code drain}, one class at a time under its monitor; the
     * drain frees the {@code count} blocks and stores {@link #BASE} into {@code store[0]} in one step.
     */
    public void drain(Drain drain) {
        for (int c = 0; c < locks.length; c++) {
            synchronized (locks[c]) {
                long[] store = stores[c];
                int count = (int) store[0] - BASE;
                if (count > 0) {
                    drain.drain(c, store, count);
                }
            }
        }
    }
}
