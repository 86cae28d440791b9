/**
 * spanheap: off-heap memory for the JVM, handed out as {@link java.lang.foreign.MemorySegment}s
 * by a native span allocator ({@link org.spanheap.SpanHeap}, {@link org.spanheap.CompactingHeap}).
 *
 * <p>Only {@code org.spanheap} and its Micrometer binders ({@code org.spanheap.micrometer},
 * which need {@code micrometer-core}) are exported; the {@code org.spanheap.internal} packages are
 * implementation. The module calls restricted FFM methods: start the JVM with
 * {@code --enable-native-access=org.spanheap} when the jar is on the module path
 * ({@code ALL-UNNAMED} when it is on the class path).
 */
// micrometer.core is an automatic module (micrometer-core ships no module-info), read only by the binders.
@SuppressWarnings("requires-automatic")
module org.spanheap {
    // MXBeans (registerMXBean) and the JFR events of compaction, trims and refusals.
    requires java.management;
    requires jdk.jfr;
    // Only for org.spanheap.micrometer: an optional dependency.
    requires static micrometer.core;

    exports org.spanheap;
    exports org.spanheap.micrometer;
}
