package org.spanheap.internal;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.ValueLayout;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * Descriptor of every off-heap record the Java side shares with the native core:
 * the span header prefix and free mark, and the C structs {@code sh_layout},
 * {@code sh_heap_stats}, {@code sh_class_info} and {@code sh_config} of
 * {@code native/include/spanheap.h} ({@code SH_ABI_VERSION} {@value #ABI_VERSION}).
 * Keep this class and the header in step.
 *
 * <pre>{@code
 * arena: periods of 2^(band_shift + 1) bytes; bit band_shift of an address names its band
 * | large band: span_size spans | small band: small_span_size spans | large band | ...
 *
 * virtual span (span_size or small_span_size bytes, aligned to it, inside [arena_base, *frontier))
 * +--------+--------+--------+-----------------+---------+---------+-----
 * | magic  | class  | rsvd   | (native header) | block 0 | block 1 | ...
 * | u32 @0 | u16 @4 | u16 @6 |                 |         |         |
 * +--------+--------+--------+-----------------+---------+---------+-----
 * ^ span start = addr & ~(band's span size - 1) ^ payload_offset + k * block_size
 *
 * block (block_size bytes, 16-aligned)
 * +----------------+--------------------------------+------
 * | word 0 (8 B)   | word 1 (8 B): free mark        | ...
 * |                | == free_key ^ block_address    |
 * |                |    exactly when the block is free (span free list,
 * |                |    span pool, or a Java thread cache)
 * +----------------+--------------------------------+------
 *
 * sh_layout (64 B)                      sh_class_info (16 B)
 *  @0  u64 arena_base                    @0  u32 block_size
 *  @8  u64 arena_size                    @4  u32 payload_offset
 *  @16 u64 span_size (large band)        @8  u32 block_count
 *  @24 u64 frontier_addr (-> u64)        @12 u32 real_span_size
 *  @32 u64 free_key
 *  @40 u64 max_small_size
 *  @48 u64 small_span_size (small band)
 *  @56 u64 band_shift
 *
 * sh_config (40 B)                      sh_heap_stats (1136 B)
 *  @0  size_t   reserve_bytes            @0 .. @104  14 x u64 counters (see STATS)
 *  @8  size_t   byte_limit               @112        u64 class_live_blocks[64]
 *  @16 unsigned reuse_threshold_pct      @624        u64 class_spans[64]
 *  @20 int      allow_huge_pages
 *  @24 void*    on_error
 *  @32 void*    on_error_ctx
 * }</pre>
 */
public final class SpanLayout {
    private SpanLayout() {}

    /** {@code SH_ABI_VERSION} this descriptor mirrors. */
    public static final int ABI_VERSION = 4;
    /** {@code SH_MAX_CLASSES}. */
    public static final int MAX_CLASSES = 64;
    /** {@code SH_SPAN_MAGIC}: "SPAN". */
    public static final int SPAN_MAGIC = 0x5350414e;

    // ---- sh_error ------------------------------------------------------
    // One sign rule (spanheap.h): an int-returning function gives SH_OK or a count on success
    // and the negated code, -SH_E_*, on failure; sh_last_error() gives the code itself. The
    // names come from the library (sh_error_name, NativeHeap.errorName), not from here.
    /** {@code sh_error} {@code SH_OK}: success. */
    public static final int SH_OK = 0;
    /** {@code sh_error} {@code SH_E_INVALID}: a bad argument: size, alignment or class index. */
    public static final int SH_E_INVALID = 1;
    /** {@code sh_error} {@code SH_E_NOMEM}: the arena is exhausted or the OS refused memory. */
    public static final int SH_E_NOMEM = 2;
    /** {@code sh_error} {@code SH_E_LIMIT}: the configured byte limit would be exceeded. */
    public static final int SH_E_LIMIT = 3;
    /** {@code sh_error} {@code SH_E_NOT_OWNED}: the pointer is not a block of this heap. */
    public static final int SH_E_NOT_OWNED = 4;
    /** {@code sh_error} {@code SH_E_DOUBLE_FREE}: the block is already free. */
    public static final int SH_E_DOUBLE_FREE = 5;
    /** {@code sh_error} {@code SH_E_INTERIOR}: the pointer is inside a block, not at its start. */
    public static final int SH_E_INTERIOR = 6;

    // ---- sh_abi_sizeof: the structs NativeLibrary checks at load --------
    /** {@code SH_STRUCT_CONFIG}: {@code sh_abi_sizeof} of {@code sh_config}. */
    public static final int SH_STRUCT_CONFIG = 1;
    /** {@code SH_STRUCT_CLASS_INFO}: {@code sh_abi_sizeof} of {@code sh_class_info}. */
    public static final int SH_STRUCT_CLASS_INFO = 2;
    /** {@code SH_STRUCT_LAYOUT}: {@code sh_abi_sizeof} of {@code sh_layout}. */
    public static final int SH_STRUCT_LAYOUT = 3;
    /** {@code SH_STRUCT_HEAP_STATS}: {@code sh_abi_sizeof} of {@code sh_heap_stats}. */
    public static final int SH_STRUCT_HEAP_STATS = 4;

    // ---- span header prefix (stable first 8 bytes of a virtual span) ----
    /** The stable first 8 bytes of every virtual span: magic, size class, reserved. */
    public static final GroupLayout SPAN_HEADER = MemoryLayout.structLayout(
            JAVA_INT.withName("magic"),
            JAVA_SHORT.withName("size_class"),
            JAVA_SHORT.withName("reserved")).withName("span_header");
    /** Byte offset of {@code magic} in the span header. */
    public static final long SPAN_MAGIC_OFFSET = offset(SPAN_HEADER, "magic");
    /** Byte offset of {@code size_class} in the span header. */
    public static final long SPAN_CLASS_OFFSET = offset(SPAN_HEADER, "size_class");
    // The Java fast path reads magic and size_class together as one little-endian u64 at
    // offset 0: magic = bits 0..31, size_class = bits 32..47.

    // ---- the two bands of virtual spans (sh_layout, checked against it per heap) ----
    // Constants here, not fields, so the free fast path tests and masks with immediates;
    // SpanHeapImpl refuses a library whose sh_layout says otherwise.
    /** {@code 1 << band_shift}: the bit of an arena offset that is set in the small band. */
    public static final int SMALL_BAND_BIT = 1 << 24;
    /** {@code span_size}: virtual span size of the large band. */
    public static final long SPAN_SIZE = 2L << 20;
    /** {@code small_span_size}: virtual span size of the small band. */
    public static final long SMALL_SPAN_SIZE = 128L << 10;
    /** The large band's span mask: span start = offset & mask (the arena base is aligned). */
    public static final long SPAN_MASK = ~(SPAN_SIZE - 1);
    /** The small band's span mask. */
    public static final long SMALL_SPAN_MASK = ~(SMALL_SPAN_SIZE - 1);

    /** Offset inside a block of the free-mark word {@code free_key ^ block_address}. */
    public static final long BLOCK_FREE_MARK_OFFSET = 8;
    /** Smallest alignment of every block ({@code sh_alloc}: "aligned to at least 16"). */
    public static final long MIN_ALIGNMENT = 16;

    // ---- sh_layout ------------------------------------------------------
    /** {@code sh_layout}: where a heap's arena lies and its free-mark key. */
    public static final GroupLayout SH_LAYOUT = MemoryLayout.structLayout(
            JAVA_LONG.withName("arena_base"),
            JAVA_LONG.withName("arena_size"),
            JAVA_LONG.withName("span_size"),
            JAVA_LONG.withName("frontier_addr"),
            JAVA_LONG.withName("free_key"),
            JAVA_LONG.withName("max_small_size"),
            JAVA_LONG.withName("small_span_size"),
            JAVA_LONG.withName("band_shift")).withName("sh_layout");
    /** Byte offset of {@code arena_base} in {@code sh_layout}. */
    public static final long LAYOUT_ARENA_BASE = offset(SH_LAYOUT, "arena_base");
    /** Byte offset of {@code arena_size} in {@code sh_layout}. */
    public static final long LAYOUT_ARENA_SIZE = offset(SH_LAYOUT, "arena_size");
    /** Byte offset of {@code span_size} in {@code sh_layout}. */
    public static final long LAYOUT_SPAN_SIZE = offset(SH_LAYOUT, "span_size");
    /** Byte offset of {@code frontier_addr} in {@code sh_layout}. */
    public static final long LAYOUT_FRONTIER_ADDR = offset(SH_LAYOUT, "frontier_addr");
    /** Byte offset of {@code free_key} in {@code sh_layout}. */
    public static final long LAYOUT_FREE_KEY = offset(SH_LAYOUT, "free_key");
    /** Byte offset of {@code max_small_size} in {@code sh_layout}. */
    public static final long LAYOUT_MAX_SMALL_SIZE = offset(SH_LAYOUT, "max_small_size");
    /** Byte offset of {@code small_span_size} in {@code sh_layout}. */
    public static final long LAYOUT_SMALL_SPAN_SIZE = offset(SH_LAYOUT, "small_span_size");
    /** Byte offset of {@code band_shift} in {@code sh_layout}. */
    public static final long LAYOUT_BAND_SHIFT = offset(SH_LAYOUT, "band_shift");

    // ---- sh_class_info --------------------------------------------------
    /** {@code sh_class_info}: the geometry of one size class. */
    public static final GroupLayout SH_CLASS_INFO = MemoryLayout.structLayout(
            JAVA_INT.withName("block_size"),
            JAVA_INT.withName("payload_offset"),
            JAVA_INT.withName("block_count"),
            JAVA_INT.withName("real_span_size")).withName("sh_class_info");
    /** Byte offset of {@code block_size} in {@code sh_class_info}. */
    public static final long CLASS_BLOCK_SIZE = offset(SH_CLASS_INFO, "block_size");
    /** Byte offset of {@code payload_offset} in {@code sh_class_info}. */
    public static final long CLASS_PAYLOAD_OFFSET = offset(SH_CLASS_INFO, "payload_offset");
    /** Byte offset of {@code block_count} in {@code sh_class_info}. */
    public static final long CLASS_BLOCK_COUNT = offset(SH_CLASS_INFO, "block_count");
    /** Byte offset of {@code real_span_size} in {@code sh_class_info}. */
    public static final long CLASS_REAL_SPAN_SIZE = offset(SH_CLASS_INFO, "real_span_size");

    // ---- sh_config ------------------------------------------------------
    /** {@code sh_config}: the settings {@code sh_heap_create} takes. */
    public static final GroupLayout SH_CONFIG = MemoryLayout.structLayout(
            JAVA_LONG.withName("reserve_bytes"),
            JAVA_LONG.withName("byte_limit"),
            JAVA_INT.withName("reuse_threshold_pct"),
            JAVA_INT.withName("allow_huge_pages"),
            ADDRESS.withName("on_error"),
            ADDRESS.withName("on_error_ctx")).withName("sh_config");
    /** Byte offset of {@code reserve_bytes} in {@code sh_config}. */
    public static final long CONFIG_RESERVE_BYTES = offset(SH_CONFIG, "reserve_bytes");
    /** Byte offset of {@code byte_limit} in {@code sh_config}. */
    public static final long CONFIG_BYTE_LIMIT = offset(SH_CONFIG, "byte_limit");
    /** Byte offset of {@code reuse_threshold_pct} in {@code sh_config}. */
    public static final long CONFIG_REUSE_THRESHOLD_PCT = offset(SH_CONFIG, "reuse_threshold_pct");
    /** Byte offset of {@code allow_huge_pages} in {@code sh_config}. */
    public static final long CONFIG_ALLOW_HUGE_PAGES = offset(SH_CONFIG, "allow_huge_pages");

    // ---- sh_heap_stats --------------------------------------------------
    /** {@code sh_heap_stats}: the counters {@code sh_stats} fills. */
    public static final GroupLayout SH_HEAP_STATS = MemoryLayout.structLayout(
            JAVA_LONG.withName("reserved_bytes"),
            JAVA_LONG.withName("committed_bytes"),
            JAVA_LONG.withName("resident_bytes"),
            JAVA_LONG.withName("live_bytes"),
            JAVA_LONG.withName("large_bytes"),
            JAVA_LONG.withName("large_count"),
            JAVA_LONG.withName("limit_bytes"),
            JAVA_LONG.withName("limited_bytes"),
            JAVA_LONG.withName("spans_carved"),
            JAVA_LONG.withName("spans_hot"),
            JAVA_LONG.withName("spans_floating"),
            JAVA_LONG.withName("spans_reusable"),
            JAVA_LONG.withName("spans_free"),
            JAVA_LONG.withName("madvise_calls"),
            MemoryLayout.sequenceLayout(MAX_CLASSES, JAVA_LONG).withName("class_live_blocks"),
            MemoryLayout.sequenceLayout(MAX_CLASSES, JAVA_LONG).withName("class_spans"))
            .withName("sh_heap_stats");
    /** Byte offset of {@code reserved_bytes} in {@code sh_heap_stats}. */
    public static final long STATS_RESERVED = offset(SH_HEAP_STATS, "reserved_bytes");
    /** Byte offset of {@code committed_bytes} in {@code sh_heap_stats}. */
    public static final long STATS_COMMITTED = offset(SH_HEAP_STATS, "committed_bytes");
    /** Byte offset of {@code resident_bytes} in {@code sh_heap_stats}. */
    public static final long STATS_RESIDENT = offset(SH_HEAP_STATS, "resident_bytes");
    /** Byte offset of {@code live_bytes} in {@code sh_heap_stats}. */
    public static final long STATS_LIVE = offset(SH_HEAP_STATS, "live_bytes");
    /** Byte offset of {@code large_bytes} in {@code sh_heap_stats}. */
    public static final long STATS_LARGE_BYTES = offset(SH_HEAP_STATS, "large_bytes");
    /** Byte offset of {@code large_count} in {@code sh_heap_stats}. */
    public static final long STATS_LARGE_COUNT = offset(SH_HEAP_STATS, "large_count");
    /** Byte offset of {@code limit_bytes} in {@code sh_heap_stats}. */
    public static final long STATS_LIMIT = offset(SH_HEAP_STATS, "limit_bytes");
    /** Byte offset of {@code limited_bytes} in {@code sh_heap_stats}. */
    public static final long STATS_LIMITED = offset(SH_HEAP_STATS, "limited_bytes");
    /** Byte offset of {@code spans_carved} in {@code sh_heap_stats}. */
    public static final long STATS_SPANS_CARVED = offset(SH_HEAP_STATS, "spans_carved");
    /** Byte offset of {@code spans_hot} in {@code sh_heap_stats}. */
    public static final long STATS_SPANS_HOT = offset(SH_HEAP_STATS, "spans_hot");
    /** Byte offset of {@code spans_floating} in {@code sh_heap_stats}. */
    public static final long STATS_SPANS_FLOATING = offset(SH_HEAP_STATS, "spans_floating");
    /** Byte offset of {@code spans_reusable} in {@code sh_heap_stats}. */
    public static final long STATS_SPANS_REUSABLE = offset(SH_HEAP_STATS, "spans_reusable");
    /** Byte offset of {@code spans_free} in {@code sh_heap_stats}. */
    public static final long STATS_SPANS_FREE = offset(SH_HEAP_STATS, "spans_free");
    /** Byte offset of {@code madvise_calls} in {@code sh_heap_stats}. */
    public static final long STATS_MADVISE_CALLS = offset(SH_HEAP_STATS, "madvise_calls");
    /** Byte offset of {@code class_live_blocks} in {@code sh_heap_stats}. */
    public static final long STATS_CLASS_LIVE_BLOCKS = offset(SH_HEAP_STATS, "class_live_blocks");
    /** Byte offset of {@code class_spans} in {@code sh_heap_stats}. */
    public static final long STATS_CLASS_SPANS = offset(SH_HEAP_STATS, "class_spans");

    private static long offset(GroupLayout layout, String field) {
        return layout.byteOffset(PathElement.groupElement(field));
    }

    /** Layout of one {@code uint64_t}, read with acquire ordering for {@code *frontier_addr}. */
    public static final ValueLayout.OfLong FRONTIER = JAVA_LONG;
}
