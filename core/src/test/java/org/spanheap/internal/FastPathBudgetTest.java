package org.spanheap.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.spanheap.SpanHeap;

/**
 * Keeps the allocate/free fast paths inside C2's inlining budget, by construction.
 *
 * <p>C2 inlines a hot callee only if its bytecode is at most {@code FreqInlineSize} (325
 * bytes on x86-64) and, once the callee is compiled on its own, its machine code is under
 * {@code InlineSmallCode} (2500 bytes). The second limit is what {@code freeAddress} once
 * crossed, and a free not inlined into its caller costs about twice as much (the segment
 * escapes; docs/java-core.md, "Inlining"). Machine code size is not in the class file, but
 * it grows with the bytecode. The compiled sizes measured there ({@code freeAddress} 2112
 * bytes for its 267 bytes of bytecode, {@code SpanHeap.free} with everything inlined 2192,
 * {@code allocateAddress} 1216 for 144, {@code SpanHeap.allocate} 2056) are 12-18% below
 * {@code InlineSmallCode}; the budgets below are today's bytecode sizes plus about 6%, so a
 * change that grows a fast path by a branch or an extra FFM access fails here and must
 * move the work to {@code allocateSlow}/{@code freeSlow} (or measure the compiled sizes
 * again and restate the budgets, with the figures, in docs/java-core.md).
 *
 * <p>The fast paths also hold no {@code try}: an exception table keeps C2 from some of its
 * shortcuts and costs code size, so the catch of a closed heap's exception lives in the
 * slow paths.
 *
 * <p>The class files are parsed here directly (the build compiles for release 22, where
 * {@code java.lang.classfile} is not final).
 */
class FastPathBudgetTest {

    /** FreqInlineSize on x86-64: a hot callee with more bytecode is never inlined. */
    static final int FREQ_INLINE_SIZE = 325;

    /** Bytecode budget per fast-path method (class, name, descriptor): see the class comment. */
    static final Object[][] BUDGETS = {
        {SpanHeapImpl.class, "allocateAddress", "(JJ)J", 152},                         // 144 today
        {SpanHeapImpl.class, "freeAddress", "(J)V", 283},                              // 280
        {SpanHeapImpl.class, "free", "(Ljava/lang/foreign/MemorySegment;)V", 32},      // 30
        {SpanHeapImpl.class, "segment", "(JJ)Ljava/lang/foreign/MemorySegment;", 42},  // 40
        {SpanHeap.class, "allocateUninitialized", "(J)Ljava/lang/foreign/MemorySegment;", 48},  // 45
        {SpanHeap.class, "allocateUninitialized", "(JJ)Ljava/lang/foreign/MemorySegment;", 52}, // 49
        {SpanHeap.class, "allocate", "(JJ)Ljava/lang/foreign/MemorySegment;", 62},     // 58
        {SpanHeap.class, "free", "(Ljava/lang/foreign/MemorySegment;)V", 30},          // 28
    };

    @Test
    void fastPathsStayWithinTheirBytecodeBudgets() throws IOException {
        StringBuilder over = new StringBuilder();
        for (Object[] b : BUDGETS) {
            Class<?> owner = (Class<?>) b[0];
            String key = b[1] + (String) b[2];
            int budget = (Integer) b[3];
            assertTrue(budget <= FREQ_INLINE_SIZE, key + ": a budget above FreqInlineSize means nothing");
            MethodCode code = methods(owner).get(key);
            assertNotNull(code, () -> owner.getSimpleName() + "." + key + " not found: rename it here too");
            if (code.length() > budget) {
                over.append(String.format("%n  %s.%s: %d bytes of bytecode, budget %d",
                        owner.getSimpleName(), key, code.length(), budget));
            }
            if (code.handlers() != 0) {
                over.append(String.format("%n  %s.%s: %d exception handlers (a try on the fast path)",
                        owner.getSimpleName(), key, code.handlers()));
            }
        }
        assertEquals("", over.toString(), "fast paths over their inlining budget; move the work to the"
                + " slow path (allocateSlow/freeSlow):");
    }

    /** The parser itself: finds a method it must find, with a size it must get right. */
    @Test
    void parserReadsAKnownMethod() throws IOException {
        MethodCode code = methods(Probe.class).get("twice(I)I");
        assertNotNull(code);
        // iload_0, iconst_2, imul, ireturn
        assertEquals(4, code.length());
        assertEquals(0, code.handlers());
        MethodCode guarded = methods(Probe.class).get("guarded()V");
        assertEquals(1, guarded.handlers());
    }

    static final class Probe {
        static int twice(int x) {
            return x * 2;
        }

        static void guarded() {
            try {
                Thread.onSpinWait();
            } catch (RuntimeException e) {
                throw e;
            }
        }
    }

    record MethodCode(int length, int handlers) { }

    /** name + descriptor -> the method's Code attribute (JVMS 4.1, 4.4, 4.6, 4.7.3). */
    static Map<String, MethodCode> methods(Class<?> type) throws IOException {
        String resource = type.getName().substring(type.getPackageName().length() + 1) + ".class";
        try (InputStream raw = type.getResourceAsStream(resource)) {
            assertNotNull(raw, resource);
            DataInputStream in = new DataInputStream(raw);
            assertEquals(0xCAFEBABE, in.readInt(), "magic");
            in.readUnsignedShort();                  // minor
            in.readUnsignedShort();                  // major
            int count = in.readUnsignedShort();
            String[] utf8 = new String[count];
            for (int i = 1; i < count; i++) {
                int tag = in.readUnsignedByte();
                switch (tag) {
                    case 1 -> utf8[i] = in.readUTF();
                    case 3, 4, 9, 10, 11, 12, 17, 18 -> in.skipNBytes(4);
                    case 5, 6 -> {
                        in.skipNBytes(8);
                        i++;                         // takes two entries
                    }
                    case 7, 8, 16, 19, 20 -> in.skipNBytes(2);
                    case 15 -> in.skipNBytes(3);
                    default -> throw new IOException("constant pool tag " + tag + " at " + i);
                }
            }
            in.skipNBytes(6);                        // access, this, super
            in.skipNBytes(2L * in.readUnsignedShort()); // interfaces
            int fields = in.readUnsignedShort();
            for (int f = 0; f < fields; f++) {
                in.skipNBytes(6);
                skipAttributes(in);
            }
            Map<String, MethodCode> result = new HashMap<>();
            int methods = in.readUnsignedShort();
            for (int m = 0; m < methods; m++) {
                in.readUnsignedShort();              // access
                String name = utf8[in.readUnsignedShort()];
                String descriptor = utf8[in.readUnsignedShort()];
                int attributes = in.readUnsignedShort();
                for (int a = 0; a < attributes; a++) {
                    String attribute = utf8[in.readUnsignedShort()];
                    int length = in.readInt();
                    if (!attribute.equals("Code")) {
                        in.skipNBytes(length);
                        continue;
                    }
                    in.skipNBytes(4);                // max_stack, max_locals
                    int codeLength = in.readInt();
                    in.skipNBytes(codeLength);
                    int handlers = in.readUnsignedShort();
                    in.skipNBytes(8L * handlers);
                    skipAttributes(in);
                    result.put(name + descriptor, new MethodCode(codeLength, handlers));
                }
            }
            return result;
        }
    }

    private static void skipAttributes(DataInputStream in) throws IOException {
        int n = in.readUnsignedShort();
        for (int i = 0; i < n; i++) {
            in.skipNBytes(2);
            in.skipNBytes(in.readInt() & 0xFFFFFFFFL);
        }
    }
}
