package org.spanheap.internal;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assumptions.abort;

/**
 * The platforms the core jar serves: which resource {@link NativeLibrary} picks for an
 * {@code os.name}/{@code os.arch} pair, and that the class path (the build's
 * {@code target/classes}, which becomes the jar) carries a shared library for the right
 * machine at each of them. The machine is read from the ELF header, so a library built for
 * the wrong architecture, or put in the wrong directory, fails here rather than in
 * {@code dlopen} on a user's machine.
 *
 * <p>The aarch64 library is cross-compiled only where the cross compiler is installed
 * (native/Makefile); without it the build warns and its test is skipped, unless
 * {@code -Dspanheap.requireAllPlatforms=true}, which makes its absence a failure.
 */
@Tag("native-engine") // the native libraries packaged in the jar
class PackagedLibrariesTest {

    private static final String X86_64 = "/META-INF/native/linux-x86_64/libspanheap.so";
    private static final String AARCH64 = "/META-INF/native/linux-aarch64/libspanheap.so";

    /** ELF {@code e_machine} values (the System V ABI's list). */
    private static final int EM_X86_64 = 62;
    private static final int EM_AARCH64 = 183;
    /** ELF {@code e_type} of a shared object. */
    private static final int ET_DYN = 3;

    @Test
    void resourceFollowsOsArch() {
        assertEquals(X86_64, NativeLibrary.resource("Linux", "amd64"));     // HotSpot
        assertEquals(X86_64, NativeLibrary.resource("Linux", "x86_64"));
        assertEquals(AARCH64, NativeLibrary.resource("Linux", "aarch64"));  // HotSpot
        assertEquals(AARCH64, NativeLibrary.resource("Linux", "arm64"));
        assertEquals(AARCH64, NativeLibrary.resource("linux", "aarch64"));
    }

    @Test
    void noResourceForOtherPlatforms() {
        assertNull(NativeLibrary.resource("Linux", "arm"));        // 32-bit ARM
        assertNull(NativeLibrary.resource("Linux", "x86"));
        assertNull(NativeLibrary.resource("Linux", "riscv64"));
        assertNull(NativeLibrary.resource("Linux", "ppc64le"));
        assertNull(NativeLibrary.resource("Linux", "AARCH64"));    // os.arch is lower case
        assertNull(NativeLibrary.resource("Mac OS X", "aarch64"));
        assertNull(NativeLibrary.resource("Windows 11", "amd64"));
        assertNull(NativeLibrary.resource("FreeBSD", "amd64"));
    }

    @Test
    void resourceIsThisJvmsPlatform() {
        assertEquals(NativeLibrary.resource(System.getProperty("os.name"), System.getProperty("os.arch")),
                NativeLibrary.RESOURCE);
    }

    @Test
    void x86_64LibraryIsAnX86_64SharedObject() throws IOException {
        byte[] header = elfHeader(X86_64);
        assertNotNull(header, X86_64 + " is on the class path");
        assertSharedObjectFor(EM_X86_64, header, X86_64);
    }

    @Test
    void aarch64LibraryIsAnAarch64SharedObject() throws IOException {
        byte[] header = elfHeader(AARCH64);
        if (header == null) {
            if (Boolean.getBoolean("spanheap.requireAllPlatforms")) {
                throw new AssertionError(AARCH64 + " is not on the class path, but"
                        + " spanheap.requireAllPlatforms is set: the native build made no aarch64 library");
            }
            abort(AARCH64 + " is not on the class path (no cross compiler; the native build warned)");
        }
        assertSharedObjectFor(EM_AARCH64, header, AARCH64);
    }

    /** {@return the first 20 bytes of the resource (up to e_version), or null if it is absent} */
    private static byte[] elfHeader(String resource) throws IOException {
        try (InputStream in = PackagedLibrariesTest.class.getResourceAsStream(resource)) {
            return in == null ? null : in.readNBytes(20);
        }
    }

    /**
     * Checks the first 20 bytes of an ELF file:
     *
     * <pre>
     * offset  field      expected
     *  0..3   magic      7f 'E' 'L' 'F'
     *  4      class      2 (64-bit)
     *  5      data       1 (little-endian)
     *  6      version    1
     * 16..17  e_type     3 (ET_DYN: a shared object), u16 little-endian
     * 18..19  e_machine  machine: 62 (EM_X86_64) or 183 (EM_AARCH64), u16 little-endian
     * </pre>
     */
    private static void assertSharedObjectFor(int machine, byte[] header, String resource) {
        assertEquals(20, header.length, resource + " is shorter than an ELF header");
        assertArrayEquals(new byte[] {0x7f, 'E', 'L', 'F'}, Arrays.copyOf(header, 4),
                resource + " is not an ELF file");
        assertEquals(2, header[4], resource + ": ELF class (2: 64-bit)");
        assertEquals(1, header[5], resource + ": ELF data (1: little-endian)");
        assertEquals(1, header[6], resource + ": ELF version");
        ByteBuffer b = ByteBuffer.wrap(header).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(ET_DYN, Short.toUnsignedInt(b.getShort(16)), resource + ": e_type (3: shared object)");
        assertEquals(machine, Short.toUnsignedInt(b.getShort(18)), resource + ": e_machine");
    }
}
