package org.spanheap.internal;

import org.spanheap.Engine;
import org.junit.jupiter.api.Test;
import org.spanheap.SpanHeap;

import java.util.ArrayList;
import java.util.List;
import java.util.ResourceBundle;
import java.util.function.Supplier;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * {@link EngineChoice#choose}: the property's values, and the automatic choice with a
 * library that loads or not (the end-to-end fallback, with the real loader in a forked JVM,
 * is {@code org.spanheap.EngineFallbackTest}).
 */
class EngineChoiceTest {

    /** A logger that keeps what it is told. */
    private static final class RecordingLogger implements System.Logger {
        final List<String> records = new ArrayList<>();

        @Override
        public String getName() {
            return "test";
        }

        @Override
        public boolean isLoggable(Level level) {
            return true;
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String msg, Throwable thrown) {
            records.add(level + " " + msg);
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String format, Object... params) {
            records.add(level + " " + format);
        }
    }

    private static final Supplier<Object> MUST_NOT_LOAD = () -> fail("the library must not be tried");

    @Test
    void explicitChoicesDoNotTryTheLibrary() {
        RecordingLogger log = new RecordingLogger();
        assertEquals(Engine.NATIVE, EngineChoice.choose("native", MUST_NOT_LOAD, log));
        assertEquals(Engine.MALLOC, EngineChoice.choose("malloc", MUST_NOT_LOAD, log));
        assertEquals(Engine.MALLOC, EngineChoice.choose(" Malloc ", MUST_NOT_LOAD, log));
        assertEquals(List.of(), log.records);
    }

    @Test
    void anUnknownValueNamesThePropertyAndTheValue() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> EngineChoice.choose("ffi", MUST_NOT_LOAD, new RecordingLogger()));
        assertEquals("system property spanheap.engine must be native, malloc or auto: \"ffi\"", e.getMessage());
    }

    @Test
    void automaticChoiceTakesTheNativeEngineWhenTheLibraryLoads() {
        RecordingLogger log = new RecordingLogger();
        assertEquals(Engine.NATIVE, EngineChoice.choose(null, () -> "loaded", log));
        assertEquals(Engine.NATIVE, EngineChoice.choose("auto", () -> "loaded", log));
        assertEquals(Engine.NATIVE, EngineChoice.choose("", () -> "loaded", log));
        assertEquals(List.of(), log.records);
    }

    @Test
    void automaticChoiceFallsBackWithOneWarningThatSaysWhyAndHow() {
        RecordingLogger log = new RecordingLogger();
        Supplier<Object> failing = () -> {
            throw new UnsatisfiedLinkError("spanheap supports x86-64 Linux only; this JVM runs on Mac OS X/aarch64");
        };
        assertEquals(Engine.MALLOC, EngineChoice.choose(null, failing, log));
        assertEquals(1, log.records.size(), log.records.toString());
        String record = log.records.get(0);
        assertTrue(record.startsWith("WARNING "), record);
        assertTrue(record.contains("this JVM runs on Mac OS X/aarch64"), record);
        assertTrue(record.contains("-Dspanheap.engine=malloc"), record);
        assertTrue(record.contains("-Dspanheap.engine=native"), record);
    }

    @Test
    void aLibraryThatFailedBeforeFallsBackToo() {
        RecordingLogger log = new RecordingLogger();
        Supplier<Object> failedBefore = () -> {
            throw new NoClassDefFoundError("Could not initialize class org.spanheap.internal.NativeLibrary$Holder");
        };
        assertEquals(Engine.MALLOC, EngineChoice.choose("auto", failedBefore, log));
        assertEquals(1, log.records.size());
    }
}
