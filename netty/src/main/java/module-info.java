/**
 * spanheap-netty: {@link org.spanheap.netty.SpanHeapByteBufAllocator}, a Netty
 * {@code ByteBufAllocator} whose direct buffers are {@link org.spanheap.SpanHeap} blocks.
 *
 * <p>Works with Netty 4.2 (whose jars are named modules) and 4.1 (automatic modules of the
 * same names). Needs native access for the core module: {@code --enable-native-access=org.spanheap}
 * on the module path.
 */
module org.spanheap.netty {
    // The API: the allocator is built from a SpanHeap and is a ByteBufAllocator.
    requires transitive org.spanheap;
    requires transitive io.netty.buffer;
    // ReferenceCounted and friends, which io.netty.buffer does not re-export.
    requires io.netty.common;

    exports org.spanheap.netty;
}
