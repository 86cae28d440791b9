package org.spanheap.internal.compact;

/** The tests' count of a size class's not-full pages, as {@code stats()} reports it. */
final class NotFullPages {

    private NotFullPages() {
    }

    /** {@return the not-full pages of the class whose blocks are {@code blockSize} bytes} */
    static int ofBlock(CompactFitHeap heap, int blockSize) {
        for (int c = 0; c < heap.sizeClassCount(); c++) {
            if (heap.blockSize(c) == blockSize) {
                return heap.stats().notFullPages()[c];
            }
        }
        throw new AssertionError("no class of " + blockSize + " bytes");
    }
}
