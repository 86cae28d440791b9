/**
 * Off-heap memory for the JVM, handed out as {@link java.lang.foreign.MemorySegment}s by a
 * native span allocator that Java reaches through the FFM API.
 *
 * <ul>
 * <li>{@link org.spanheap.SpanHeap}: a thread-safe allocator with per-thread caches;
 *     {@link org.spanheap.SpanHeap#newArena()} gives {@link java.lang.foreign.Arena}s whose
 *     memory comes from the heap and is freed in bulk when the arena closes.</li>
 * <li>{@link org.spanheap.CompactingHeap}: objects named by handles instead of addresses,
 *     so the heap can move them and keep its memory compact.</li>
 * <li>{@link org.spanheap.HeapStats} and {@link org.spanheap.CompactingHeapStats}: snapshots
 *     of a heap's memory use.</li>
 * </ul>
 *
 * <p>The library needs Linux on x86-64 or aarch64 and JDK 22 or newer, and native access for the code
 * that loads it: {@code --enable-native-access=ALL-UNNAMED} on the class path, or
 * {@code --enable-native-access=org.spanheap} on the module path. Packages under
 * {@code org.spanheap.internal} are implementation details, not API: they may change in
 * any release.
 */
package org.spanheap;
