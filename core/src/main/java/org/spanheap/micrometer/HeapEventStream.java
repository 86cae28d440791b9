package org.spanheap.micrometer;

import java.time.Duration;
import java.util.Objects;
import java.util.function.Consumer;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingStream;

/**
 * One JFR event type of one named heap, read from a {@link RecordingStream} of its own: what
 * the binders fed by events ({@link CompactionPauseMetrics}, {@link ThreadCacheDrainMetrics})
 * share. Events of other heaps are skipped by the name in {@code nameField}.
 */
final class HeapEventStream implements AutoCloseable {

    private final String event;
    private final String nameField;
    private final String heapName;
    private RecordingStream stream;

    HeapEventStream(String event, String nameField, String heapName) {
        this.event = event;
        this.nameField = nameField;
        this.heapName = Objects.requireNonNull(heapName, "heapName");
    }

    /**
     * Starts the stream, handing each event of the heap to {@code onEvent} on the stream's thread.
     *
     * @throws IllegalStateException if it was started before (also when closed since)
     */
    synchronized void start(Consumer<RecordedEvent> onEvent) {
        if (stream != null) {
            throw new IllegalStateException("the binder of heap " + heapName + " is bound already");
        }
        RecordingStream s = new RecordingStream();
        s.enable(event).withThreshold(Duration.ZERO);
        s.onEvent(event, e -> {
            if (heapName.equals(e.getString(nameField))) {
                onEvent.accept(e);
            }
        });
        s.startAsync();
        stream = s;
    }

    /** Ends the stream. Idempotent. */
    @Override
    public synchronized void close() {
        if (stream != null) {
            stream.close();
        }
    }
}
