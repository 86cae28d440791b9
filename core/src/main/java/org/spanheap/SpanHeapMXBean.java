package org.spanheap;

/**
 * A {@link SpanHeap}'s figures for JMX tools, registered with
 * {@link SpanHeap#registerMXBean(String)} under
 * {@code org.spanheap:type=SpanHeap,name="<name>"} and unregistered by
 * {@link SpanHeap#close()}. Each attribute is read from a fresh
 * {@link SpanHeap#stats()} snapshot; see {@link HeapStats} for what the
 * figures mean.
 */
public interface SpanHeapMXBean {
    /** {@return the name the MXBean was registered with} */
    String getName();

    /** {@return {@link HeapStats#reservedBytes()}} */
    long getReservedBytes();

    /** {@return {@link HeapStats#committedBytes()}} */
    long getCommittedBytes();

    /** {@return {@link HeapStats#residentBytes()}} */
    long getResidentBytes();

    /** {@return {@link HeapStats#liveBytes()}} */
    long getLiveBytes();

    /** {@return {@link HeapStats#cachedBytes()}} */
    long getCachedBytes();

    /** {@return {@link HeapStats#largeBytes()}} */
    long getLargeBytes();

    /** {@return {@link HeapStats#largeCount()}} */
    long getLargeCount();

    /** {@return {@link HeapStats#limitBytes()}} */
    long getLimitBytes();

    /** {@return {@link HeapStats#limitedBytes()}} */
    long getLimitedBytes();

    /** {@return {@link HeapStats#spansCarved()}} */
    long getSpansCarved();

    /** {@return {@link HeapStats#spansHot()}} */
    long getSpansHot();

    /** {@return {@link HeapStats#spansFloating()}} */
    long getSpansFloating();

    /** {@return {@link HeapStats#spansReusable()}} */
    long getSpansReusable();

    /** {@return {@link HeapStats#spansFree()}} */
    long getSpansFree();

    /** {@return {@link HeapStats#madviseCalls()}} */
    long getMadviseCalls();
}
