package org.spanheap.internal;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link NativeHeap}'s error names and sign rule: the names come from the library's one
 * table ({@code sh_error_name}), and every {@code sh_error} code {@link SpanLayout} mirrors
 * must carry there the name of its Java constant.
 */
@Tag("native-engine") // the native library's bindings
class NativeHeapTest {

    /** {@return SpanLayout's {@code SH_OK} and {@code SH_E_*} constants, by name} */
    private static List<Field> errorConstants() {
        List<Field> fields = new ArrayList<>();
        for (Field f : SpanLayout.class.getFields()) {
            if (Modifier.isStatic(f.getModifiers()) && f.getType() == int.class
                    && (f.getName().equals("SH_OK") || f.getName().startsWith("SH_E_"))) {
                fields.add(f);
            }
        }
        return fields;
    }

    @Test
    void everyMirroredCodeHasItsNameInTheLibrary() throws IllegalAccessException {
        List<Field> codes = errorConstants();
        assertEquals(7, codes.size(), "SH_OK and six SH_E_* codes: " + codes);
        for (Field f : codes) {
            int code = f.getInt(null);
            assertEquals(f.getName(), NativeHeap.errorName(code), "code " + code);
            // the negated form, as an int-returning call gives it, has the same name
            assertEquals(f.getName(), NativeHeap.errorName(-code), "code " + -code);
        }
    }

    @Test
    void unknownCodesAreNamedSo() {
        assertEquals("SH_E_UNKNOWN", NativeHeap.errorName(1000));
        assertEquals("SH_E_UNKNOWN", NativeHeap.errorName(Integer.MIN_VALUE));
    }

    @Test
    void intReturningCallsGiveNegatedCodes() {
        MemorySegment out = MemorySegment.ofArray(new long[2]);  // one sh_class_info (16 B)
        assertEquals(-SpanLayout.SH_E_INVALID, NativeHeap.classGet(-1, out));
        assertEquals(SpanLayout.SH_OK, NativeHeap.classGet(0, out));
        assertTrue(out.get(JAVA_INT, SpanLayout.CLASS_BLOCK_SIZE) > 0);
    }
}
