package org.spanheap;

/**
 * The engine behind a heap: what {@link SpanHeap#engine()} returns, and what the system
 * property {@code spanheap.engine} chooses ({@code native} or {@code malloc}).
 */
public enum Engine {
    /**
     * The native core: virtual spans, a lock-free span pool and Java thread caches
     * (Linux on x86-64 or aarch64, the libraries bundled in the jar).
     */
    NATIVE,
    /**
     * The fallback: every block is a {@code malloc} of the C runtime through FFM
     * ({@code posix_memalign} for alignments over 16, {@code _aligned_malloc} on Windows).
     * The same checks, exceptions, byte limit, arenas and close semantics; no thread
     * caches and no span pool, so each allocate and free is a downcall at malloc's speed.
     * {@link SpanHeap#stats()} reports the bytes of live blocks (their sizes rounded up
     * to 16) as live and committed bytes; reserved, resident and cached bytes, the span
     * counts, madvise calls and the size classes are 0 or empty, and blocks over 128 KiB
     * count as large objects. {@link SpanHeap#trim()} calls glibc's {@code malloc_trim}
     * where the C runtime has it and returns 0 (malloc does not say how much it released).
     * The builder's reservation, reuse threshold, huge-page and thread-cache settings do
     * not apply.
     */
    MALLOC
}
