package org.spanheap.internal.compact;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.Arrays;
import org.spanheap.StaleHandleException;

/**
 * The A2C map of Compact-fit: handle index to concrete address, with a
 * generation per entry. It owns the handle format and its validation; nothing
 * else decodes a handle.
 *
 * <h2>Handle</h2>
 * <pre>
 *   63 62        52 51               32 31                          0
 *  +--+------------+-------------------+------------------------------+
 *  | 0| heap tag   | generation        | table index                  |
 *  +--+------------+-------------------+------------------------------+
 *       11 bits      20 bits             32 bits (at most 2^31 - 1)
 * </pre>
 * The tag is unique among the open heaps of the process ({@link #takeTag()}),
 * so a handle of another open heap never names an entry of this one.
 * Generations start at 1, so every valid handle is positive and non-zero. An
 * index whose generation reaches {@link #MAX_GENERATION} is retired, never
 * reused: a stale handle never matches a later incarnation of its entry.
 *
 * <h2>Entry</h2>
 * Entries live in chunks of {@value #CHUNK} that never move once made, so
 * a writer holding an index writes into the one copy every reader reads.
 * Two longs per entry in the chunk's {@code words} (four entries per cache line):
 * <pre>
 *  word 2i    state    63        44 43   42     41                   0
 *                     +------------+----+------+----------------------+
 *                     | generation |LIVE|MOVING| size in bytes        |
 *                     +------------+----+------+----------------------+
 *  word 2i+1  address  concrete address of the block (meaningful while LIVE)
 * </pre>
 * and beside them, touched under the lock of the block's size class (or by
 * the compaction round, which holds that lock), the id of the block's {@link Page}
 * ({@link PageIds}; its slot follows from the address: {@link Page#slotOf}) and the
 * link of the free and limbo lists. Both are kept for a dead entry until its release.
 *
 * <h2>Memory orders</h2>
 * The state is the publication point: the address (and page, slot) are
 * written plainly before a release store or CAS of the state; resolves read
 * the state with acquire before the address. Kills and the clearing of MOVING
 * are CASes (volatile), because a free (any thread, no lock) and the mover
 * (compaction round) race on the same state word; whoever loses sees the
 * other's value and acts on it.
 *
 * <p>Public, with the members that the stress module's jcstress tests of the
 * {@link Limbo}, of {@link RemoteFrees} and of index reuse need; the module
 * does not export this package.
 */
public final class HandleTable {

    static final int GEN_BITS = 20;
    static final long MAX_GENERATION = (1L << GEN_BITS) - 1;
    static final int STATE_GEN_SHIFT = 44;
    static final long LIVE = 1L << 43;
    static final long MOVING = 1L << 42;
    static final long SIZE_MASK = (1L << 42) - 1;
    /** Largest object size the state word can hold (4 TiB - 1). */
    static final long MAX_SIZE = SIZE_MASK;
    private static final int TAG_SHIFT = 52;
    private static final int TAG_COUNT = 1 << 11;
    /** Cannot equal {@code state & ~SIZE_MASK} (its low bits are cleared): the expectation of a foreign handle. */
    private static final long NEVER = 1;

    static final int CHUNK_SHIFT = 12;
    static final int CHUNK = 1 << CHUNK_SHIFT;
    static final int CHUNK_MASK = CHUNK - 1;
    /** Index 0 is never handed out; indices stay below 2^31. */
    static final int MAX_CHUNKS = 1 << (31 - CHUNK_SHIFT);
    public static final int NO_INDEX = 0;

    private static final VarHandle LONGS = MethodHandles.arrayElementVarHandle(long[].class);

    /**
     * The cold half of a chunk: each block's page id (0 for a large object:
     * {@link PageIds}, an {@code int} so that a publication stores no reference),
     * and the list links. No slot: it follows from the address and the page,
     * which saves 4 bytes per handle (an entry of a cache of 100-byte values
     * costs about 180 bytes in all).
     */
    static final class Chunk {
        final int[] page = new int[CHUNK];
        final int[] link = new int[CHUNK];
    }

    private final long tag;
    /** The ids of the pages that {@link Chunk#page} holds. */
    final PageIds pageIds = new PageIds();
    /** Hot halves, {@code words[c]} for chunk c; replaced by a longer copy when a chunk is added (volatile). */
    private volatile long[][] words = new long[0][];
    /** Cold halves, indexed like {@link #words}; replaced with it. */
    private volatile Chunk[] chunks = new Chunk[0];

    // ---- under this table's monitor ----
    private int freeHead = NO_INDEX;
    private int freeCount;
    private long retired;

    public HandleTable() {
        this.tag = takeTag();
    }

    /** The heap tag in this table's handles. */
    long tag() {
        return tag;
    }

    // ---- handle decoding ---------------------------------------------------

    /** The state word (without size) that a live, not moving entry for {@code handle} holds. */
    long expectedState(long handle) {
        return (handle >>> TAG_SHIFT) == tag ? ((handle >>> 32) & MAX_GENERATION) << STATE_GEN_SHIFT | LIVE : NEVER;
    }

    /** The hot words of all chunks (volatile read); a resolve needs nothing else. */
    long[][] words() {
        return words;
    }

    static int wordOf(int index) {
        return (index & CHUNK_MASK) << 1;
    }

    static long stateAcquire(long[] w, int word) {
        return (long) LONGS.getAcquire(w, word);
    }

    /** The state word with a volatile load (a plain load on x86; see {@code CompactFitHeap#resolve}). */
    static long stateVolatile(long[] w, int word) {
        return (long) LONGS.getVolatile(w, word);
    }

    /**
     * The address of the entry whose state word {@code st} was just loaded (volatile) from
     * {@code word}, or -1 if the state changed meanwhile: the address is loaded with acquire,
     * then the state again, so an address that a kill and a reuse wrote after {@code st}
     * (before their release store of a state of another generation) is never returned.
     */
    static long addressIfUnchanged(long[] w, int word, long st) {
        long address = (long) LONGS.getAcquire(w, word + 1);
        return (long) LONGS.getAcquire(w, word) == st ? address : -1;
    }

    /**
     * The address of the live, not moving object named by {@code handle}, read as a resolve
     * reads it; -1 if the handle names none (stale, forged, moving). For the stress module's
     * jcstress test of index reuse ({@code CompactIndexReuseVsResolveTest}).
     */
    public long resolveAddress(long handle) {
        int index = (int) handle;
        long[][] ws = words;
        if (index <= 0 || (index >>> CHUNK_SHIFT) >= ws.length) {
            return -1;
        }
        long[] w = ws[index >>> CHUNK_SHIFT];
        int o = wordOf(index);
        long st = stateVolatile(w, o);
        if ((st & ~SIZE_MASK) != expectedState(handle)) {
            return -1;
        }
        return addressIfUnchanged(w, o, st);
    }

    /**
     * Returns the index of {@code handle} after checking that it names a live
     * entry of this table (moving or not).
     *
     * @throws StaleHandleException if it does not (freed, stale, forged, another heap's)
     */
    int liveIndex(long handle) {
        long expect = expectedState(handle);
        int index = (int) handle;
        long[][] w = words;
        if (index > 0 && (index >>> CHUNK_SHIFT) < w.length) {
            long st = stateAcquire(w[index >>> CHUNK_SHIFT], wordOf(index));
            if ((st & ~(SIZE_MASK | MOVING)) == expect) {
                return index;
            }
        }
        throw new StaleHandleException(handle);
    }

    /** The state word of a valid index (acquire). */
    long stateAcquire(int index) {
        return stateAcquire(words[index >>> CHUNK_SHIFT], wordOf(index));
    }

    long address(int index) {
        return words[index >>> CHUNK_SHIFT][wordOf(index) + 1];
    }

    static long size(long state) {
        return state & SIZE_MASK;
    }

    /** Whether an entry killed into {@code state} may not be reused: its generation is the last. */
    static boolean exhausted(long state) {
        return (state >>> STATE_GEN_SHIFT) >= MAX_GENERATION;
    }

    /** Whether the kill of an entry in {@code before} (its state before the kill) ran out its generation: see {@link #exhausted}. */
    static boolean killExhausts(long before) {
        return (before >>> STATE_GEN_SHIFT) + 1 >= MAX_GENERATION;
    }

    static boolean isLive(long state) {
        return (state & LIVE) != 0;
    }

    public long handleOf(int index) {
        return tag << TAG_SHIFT | ((stateAcquire(index) >>> STATE_GEN_SHIFT) << 32) | index;
    }

    Page pageOf(int index) {
        return pageIds.get(pageIdOf(index));
    }

    /** {@return the id of the page of entry {@code index} (0: none)} The entry's block must still hold its slot. */
    int pageIdOf(int index) {
        return chunks[index >>> CHUNK_SHIFT].page[index & CHUNK_MASK];
    }

    // ---- life cycle of an entry -----------------------------------------------

    /**
     * Publishes a new live object at {@code index} (taken from {@link #takeIndices}):
     * address and page first, then the state with release.
     */
    public void publishLive(int index, long address, long size) {
        publishLive(index, address, size, null);
    }

    /** {@link #publishLive(int, long, long)} of a block in {@code page}; {@return its handle} */
    long publishLive(int index, long address, long size, Page page) {
        long[] w = words[index >>> CHUNK_SHIFT];
        Chunk c = chunks[index >>> CHUNK_SHIFT];
        int o = wordOf(index);
        long gen = w[o] & ~(LIVE | MOVING | SIZE_MASK); // the index is ours: no one else writes it now
        w[o + 1] = address;
        c.page[index & CHUNK_MASK] = page == null ? 0 : page.id;
        LONGS.setRelease(w, o, gen | LIVE | size);     // address and page before the state
        return tag << TAG_SHIFT | (gen >>> STATE_GEN_SHIFT) << 32 | index;
    }

    /**
     * Kills the entry of {@code handle}: bumps the generation and clears LIVE
     * (and MOVING) in one CAS, so that every later resolve throws. Size,
     * address and page stay for the deferred release. Returns the state before
     * the kill (its size bits are the object's size).
     *
     * @throws StaleHandleException if the handle names no live entry (double free included)
     */
    public long kill(long handle) {
        int index = liveIndex(handle);
        long[] w = words[index >>> CHUNK_SHIFT];
        int o = wordOf(index);
        long expect = expectedState(handle);
        for (;;) {
            long st = stateAcquire(w, o);
            if ((st & ~(SIZE_MASK | MOVING)) != expect) {
                throw new StaleHandleException(handle); // another free won the race
            }
            // the size stays: the round that releases the block counts it
            long dead = ((st >>> STATE_GEN_SHIFT) + 1) << STATE_GEN_SHIFT | (st & SIZE_MASK);
            // volatile CAS: orders the kill before the limbo push that follows, and against the
            // mover's CAS that clears MOVING (one of the two fails and sees the other)
            if (LONGS.compareAndSet(w, o, st, dead)) {
                return st;
            }
        }
    }

    /** Marks a live entry MOVING (CAS: a concurrent free may have killed it; then returns false). */
    boolean markMoving(int index) {
        long[] w = words[index >>> CHUNK_SHIFT];
        int o = wordOf(index);
        long st = stateAcquire(w, o);
        return (st & (LIVE | MOVING)) == LIVE && LONGS.compareAndSet(w, o, st, st | MOVING);
    }

    /**
     * Publishes the new place of a moved block and clears MOVING: address and
     * page first, then a CAS of the state. Returns false (and leaves address
     * and page as they were: the free's release reads them) if the object was
     * freed while it moved. Called under the size class's lock, which the
     * release of a dead entry takes too.
     */
    boolean publishMoved(int index, long address, Page page) {
        long[] w = words[index >>> CHUNK_SHIFT];
        int o = wordOf(index);
        long st = stateAcquire(w, o);
        if ((st & (LIVE | MOVING)) != (LIVE | MOVING)) {
            return false; // killed while moving: the free's limbo entry releases the old block
        }
        long old = w[o + 1];
        int[] pages = chunks[index >>> CHUNK_SHIFT].page;
        int oldPage = pages[index & CHUNK_MASK];
        // address and page before the CAS: a free whose kill reads the CAS's state (no MOVING)
        // sees both, so it may act on the page (a thread-owned page's lists); a free that killed
        // the entry while MOVING reads neither (it goes to the limbo) and meets the restore below
        pages[index & CHUNK_MASK] = page == null ? 0 : page.id;
        // release: a read-only resolve that loads this address (before the CAS, the state still
        // MOVING) sees the copy made before it (CompactFitHeap#resolveForReading)
        LONGS.setRelease(w, o + 1, address);
        if (!LONGS.compareAndSet(w, o, st, st & ~MOVING)) {
            w[o + 1] = old; // killed between the load and the CAS: the release finds the old slot by it
            pages[index & CHUNK_MASK] = oldPage;
            return false;
        }
        return true;
    }

    // ---- index lists -------------------------------------------------------------

    /**
     * Adds the entries of the chain from {@code first} (linked through {@link #link}, ending at
     * {@code NO_INDEX}) and their killed objects' requested bytes to {@code out[0]} and
     * {@code out[1]}: a walk, for the statistics (a kill keeps the size).
     */
    void addChain(int first, long[] out) {
        for (int i = first; i != NO_INDEX; i = link(i)) {
            out[0]++;
            out[1] += size(stateAcquire(i));
        }
    }

    /** Link of an index in whatever list holds it (free list, limbo, a size class's cache). */
    public int link(int index) {
        return chunks[index >>> CHUNK_SHIFT].link[index & CHUNK_MASK];
    }

    public void setLink(int index, int next) {
        chunks[index >>> CHUNK_SHIFT].link[index & CHUNK_MASK] = next;
    }

    /**
     * Takes up to {@code n} free indices as a linked list (through {@link #link})
     * and returns its head. Grows the table if needed.
     *
     * @throws OutOfMemoryError if the table cannot grow
     */
    public int takeIndices(int n) {
        return (int) (takeChain(n) >>> 32);
    }

    /**
     * Takes {@code n} free indices as a linked list, as {@link #takeIndices}; {@return its head
     * in the high 32 bits and its last index in the low 32 bits}
     *
     * @throws OutOfMemoryError if the table cannot grow
     */
    synchronized long takeChain(int n) {
        if (freeCount < n) {
            addChunk();
        }
        int head = freeHead, last = head;
        for (int k = 1; k < n; k++) {
            last = link(last);
        }
        freeHead = link(last);
        setLink(last, NO_INDEX);
        freeCount -= n;
        return (long) head << 32 | (last & 0xFFFF_FFFFL);
    }

    /**
     * Returns a chain of {@code n} released indices, none exhausted (a lane's cache,
     * {@link IndexCache}), from {@code head} to {@code tail}: spliced onto the free list in
     * one step, without walking it.
     */
    synchronized void giveChain(int head, int tail, int n) {
        setLink(tail, freeHead);
        freeHead = head;
        freeCount += n;
    }

    /** Counts a killed index whose generation ran out ({@link #exhausted}) as retired; the caller drops it, so it is never handed out again. */
    synchronized void retire() {
        retired++;
    }

    /** Returns a list of killed indices whose blocks were released; retires those whose generation ran out. */
    public synchronized void giveIndices(int head) {
        for (int i = head; i != NO_INDEX;) {
            int next = link(i);
            if (exhausted(stateAcquire(i))) {
                retired++;
            } else {
                setLink(i, freeHead);
                freeHead = i;
                freeCount++;
            }
            i = next;
        }
    }

    private void addChunk() {
        int n = words.length;
        if (n == MAX_CHUNKS) {
            throw new OutOfMemoryError("handle table full: " + ((long) n << CHUNK_SHIFT) + " handles");
        }
        long[] w = new long[CHUNK * 2];
        Chunk c = new Chunk();
        for (int i = CHUNK - 1; i >= 0; i--) {
            w[i << 1] = 1L << STATE_GEN_SHIFT; // generation 1, not live
        }
        Chunk[] cs = Arrays.copyOf(chunks, n + 1);
        long[][] ws = Arrays.copyOf(words, n + 1);
        cs[n] = c;
        ws[n] = w;
        chunks = cs; // volatile: a chunk is complete before anyone can hold one of its indices
        words = ws;  // volatile: publishes the initialised words to resolves
        for (int i = CHUNK - 1; i >= (n == 0 ? 1 : 0); i--) {
            int index = (n << CHUNK_SHIFT) | i;
            c.link[i] = freeHead;
            freeHead = index;
            freeCount++;
        }
    }

    /** Free indices on the table's own list (for tests). */
    synchronized int freeCount() {
        return freeCount;
    }

    /** Number of entries (for iteration at close and for tests). */
    int capacity() {
        return words.length << CHUNK_SHIFT;
    }

    synchronized long retired() {
        return retired;
    }

    /** Makes every later lookup fail (the heap is closed); frees the tag for another heap. */
    void close() {
        words = new long[0][];
        releaseTag(tag);
    }

    // ---- heap tags ------------------------------------------------------------------

    private static final boolean[] TAGS_IN_USE = new boolean[TAG_COUNT];
    private static int nextTag = 1;

    /** A tag no open heap holds, round robin so that a closed heap's tag comes back as late as possible. */
    private static synchronized long takeTag() {
        for (int k = 0; k < TAG_COUNT; k++) {
            int t = nextTag;
            nextTag = nextTag == TAG_COUNT - 1 ? 1 : nextTag + 1;
            if (!TAGS_IN_USE[t]) {
                TAGS_IN_USE[t] = true;
                return t;
            }
        }
        throw new IllegalStateException("too many open compacting heaps: " + (TAG_COUNT - 1));
    }

    private static synchronized void releaseTag(long t) {
        TAGS_IN_USE[(int) t] = false;
    }
}
