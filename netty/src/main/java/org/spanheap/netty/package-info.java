/**
 * Netty integration: {@link org.spanheap.netty.SpanHeapByteBufAllocator}, a
 * {@link io.netty.buffer.ByteBufAllocator} whose direct buffers are blocks of a
 * {@link org.spanheap.SpanHeap}.
 *
 * <p>Built against Netty 4.2 and tested on Netty 4.1 and 4.2; it uses Netty's public
 * {@code io.netty.buffer} API only. Like the core library it needs JDK 22 or newer and
 * native access ({@code --enable-native-access=ALL-UNNAMED} on the class path).
 */
package org.spanheap.netty;
