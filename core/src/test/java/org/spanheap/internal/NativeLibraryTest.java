package org.spanheap.internal;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link NativeLibrary}: where and how the jar's library is unpacked, the message for a
 * {@code noexec} work directory, the ABI version and struct size checks. Every library these tests load goes
 * into a confined arena of the test and is unloaded when it closes, so the library the rest
 * of the test JVM uses is never touched. A {@code noexec} mount cannot be made in a test
 * run, so that failure is fed in through {@link NativeLibrary.Opener}, with the text the
 * dynamic linker gives for it.
 */
@Tag("native-engine") // loading the native library
class NativeLibraryTest {

    /** The file the opener was given, with what it saw there at that moment. */
    private record Observed(Path file, String dirPermissions, String filePermissions, boolean symbolicLink,
                            byte[] contents) {}

    /** An opener that records what it was given, then loads it for real. */
    private static NativeLibrary.Opener observingThenLoading(List<Observed> seen) {
        return (file, arena) -> {
            try {
                seen.add(new Observed(file,
                        PosixFilePermissions.toString(Files.getPosixFilePermissions(file.getParent(),
                                LinkOption.NOFOLLOW_LINKS)),
                        PosixFilePermissions.toString(Files.getPosixFilePermissions(file, LinkOption.NOFOLLOW_LINKS)),
                        Files.isSymbolicLink(file), Files.readAllBytes(file)));
            } catch (IOException e) {
                throw new AssertionError(e);
            }
            return NativeLibrary.open(file, arena);
        };
    }

    private static byte[] resourceBytes() throws IOException {
        try (InputStream in = NativeLibrary.class.getResourceAsStream(NativeLibrary.RESOURCE)) {
            assertNotNull(in, "the test class path carries the library");
            return in.readAllBytes();
        }
    }

    private static List<Path> contents(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.toList();
        }
    }

    @Test
    void unpacksIntoTheWorkdirOwnerOnlyUnderRandomNamesAndDeletesAfterLoading(@TempDir Path workdir)
            throws IOException {
        List<Observed> seen = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            for (int i = 0; i < 2; i++) {
                SymbolLookup lookup = NativeLibrary.load(null, workdir.toString(), arena, observingThenLoading(seen));
                assertTrue(lookup.find("sh_alloc").isPresent(), "the real library was loaded");
            }
        }
        assertEquals(2, seen.size());
        for (Observed o : seen) {
            assertEquals(workdir.toAbsolutePath(), o.file().getParent().getParent(), "unpacked under the workdir");
            assertTrue(o.file().getParent().getFileName().toString().startsWith("spanheap-"), o.file().toString());
            assertTrue(o.file().getFileName().toString().matches("libspanheap-.+\\.so"), o.file().toString());
            assertEquals("rwx------", o.dirPermissions(), "private directory");
            assertEquals("rw-------", o.filePermissions(), "private file");
            assertFalse(o.symbolicLink());
            assertArrayEquals(resourceBytes(), o.contents(), "the jar's library, byte for byte");
        }
        assertNotEquals(seen.get(0).file().getParent(), seen.get(1).file().getParent(), "a fresh directory each time");
        assertNotEquals(seen.get(0).file().getFileName(), seen.get(1).file().getFileName(), "random file names");
        assertEquals(List.of(), contents(workdir), "file and directory deleted after loading");
    }

    @Test
    void withoutTheWorkdirPropertyUnpacksIntoJavaIoTmpdir() {
        List<Observed> seen = new ArrayList<>();
        try (Arena arena = Arena.ofConfined()) {
            NativeLibrary.load(null, null, arena, observingThenLoading(seen));
        }
        Path tmp = Path.of(System.getProperty("java.io.tmpdir")).toAbsolutePath();
        assertEquals(tmp, seen.get(0).file().getParent().getParent());
        assertFalse(Files.exists(seen.get(0).file().getParent()), "deleted after loading");
    }

    @Test
    void noexecWorkdirGetsAMessageNamingItAndTheProperty(@TempDir Path workdir) throws IOException {
        // What glibc's dlopen reports when the mount forbids executable mappings.
        NativeLibrary.Opener noexec = (file, arena) -> {
            throw new UnsatisfiedLinkError(file + ": failed to map segment from shared object");
        };
        try (Arena arena = Arena.ofConfined()) {
            UnsatisfiedLinkError e = assertThrows(UnsatisfiedLinkError.class,
                    () -> NativeLibrary.load(null, workdir.toString(), arena, noexec));
            String m = e.getMessage();
            assertTrue(m.contains("unpacked into " + workdir.toAbsolutePath() + " (spanheap.native.workdir)"), m);
            assertTrue(m.contains("failed to map segment from shared object"), m);
            assertTrue(m.contains("mounted noexec"), m);
            assertTrue(m.contains("set -Dspanheap.native.workdir=<a directory"), m);
        }
        assertEquals(List.of(), contents(workdir), "nothing left behind after a failed load");
        // Older glibc versions add the errno text instead.
        NativeLibrary.Opener eperm = (file, arena) -> {
            throw new UnsatisfiedLinkError(file + ": failed to map segment from shared object: Operation not permitted");
        };
        try (Arena arena = Arena.ofConfined()) {
            String m = assertThrows(UnsatisfiedLinkError.class,
                    () -> NativeLibrary.load(null, null, arena, eperm)).getMessage();
            assertTrue(m.contains("(java.io.tmpdir)"), m);
            assertTrue(m.contains("mounted noexec"), m);
        }
    }

    @Test
    void otherLoadFailuresGetTheLinkersReasonWithoutTheNoexecAdvice(@TempDir Path workdir) {
        NativeLibrary.Opener broken = (file, arena) -> {
            throw new UnsatisfiedLinkError(file + ": invalid ELF header");
        };
        try (Arena arena = Arena.ofConfined()) {
            String m = assertThrows(UnsatisfiedLinkError.class,
                    () -> NativeLibrary.load(null, workdir.toString(), arena, broken)).getMessage();
            assertTrue(m.contains("invalid ELF header"), m);
            assertFalse(m.contains("noexec"), m);
        }
    }

    @Test
    void theRealOpenerReportsTheDynamicLinkersReason(@TempDir Path dir) throws IOException {
        // The real library marked as a 32-bit ELF file: dlopen refuses it before mapping anything.
        byte[] elf = resourceBytes();
        elf[4] = 1;                                   // e_ident[EI_CLASS] = ELFCLASS32
        Path wrongClass = Files.write(dir.resolve("libwrongclass.so"), elf);
        try (Arena arena = Arena.ofConfined()) {
            String m = assertThrows(UnsatisfiedLinkError.class, () -> NativeLibrary.open(wrongClass, arena))
                    .getMessage();
            // dlerror's text, not the JDK's "Cannot open library <file>"
            assertEquals(wrongClass + ": wrong ELF class: ELFCLASS32", m);
            // the same file named by spanheap.library.path
            m = assertThrows(UnsatisfiedLinkError.class,
                    () -> NativeLibrary.load(wrongClass.toString(), null, arena, NativeLibrary::open)).getMessage();
            assertEquals("cannot load " + wrongClass + " (spanheap.library.path): " + wrongClass
                    + ": wrong ELF class: ELFCLASS32", m);
        }
    }

    @Test
    void missingWorkdirIsAClearError(@TempDir Path dir) {
        Path missing = dir.resolve("no-such-dir");
        try (Arena arena = Arena.ofConfined()) {
            String m = assertThrows(UnsatisfiedLinkError.class,
                    () -> NativeLibrary.load(null, missing.toString(), arena, NativeLibrary::open)).getMessage();
            assertTrue(m.startsWith("cannot unpack libspanheap.so into " + missing + " (spanheap.native.workdir)"), m);
        }
    }

    @Test
    void libraryOfAnotherAbiVersionIsRefused() {
        String property = System.getProperty("spanheap.test.abiMismatchLibrary");
        assertNotNull(property, "set by core/pom.xml (surefire): native/build/libspanheap-abi999.so");
        Path wrong = Path.of(property);
        assertTrue(Files.isRegularFile(wrong), wrong + " is built by `make test-lib-abi` (native module)");
        try (Arena arena = Arena.ofConfined()) {
            // through the spanheap.library.path branch, with the real opener
            String m = assertThrows(UnsatisfiedLinkError.class,
                    () -> NativeLibrary.load(wrong.toString(), null, arena, NativeLibrary::open)).getMessage();
            assertTrue(m.contains(wrong.toAbsolutePath().toString()), m);
            assertTrue(m.contains("has native ABI version 999"), m);
            assertTrue(m.contains("needs ABI version " + SpanLayout.ABI_VERSION), m);
        }
    }

    @Test
    void libraryWithAnotherStructSizeIsRefused() {
        String property = System.getProperty("spanheap.test.layoutMismatchLibrary");
        assertNotNull(property, "set by core/pom.xml (surefire): native/build/libspanheap-layout-skew.so");
        Path wrong = Path.of(property);
        assertTrue(Files.isRegularFile(wrong), wrong + " is built by `make test-lib-abi` (native module)");
        long mirror = SpanLayout.SH_HEAP_STATS.byteSize();
        try (Arena arena = Arena.ofConfined()) {
            // the right ABI version, but sh_abi_sizeof reports sh_heap_stats 8 bytes larger
            String m = assertThrows(UnsatisfiedLinkError.class,
                    () -> NativeLibrary.load(wrong.toString(), null, arena, NativeLibrary::open)).getMessage();
            assertTrue(m.contains(wrong.toAbsolutePath().toString()), m);
            assertTrue(m.contains("has sizeof(sh_heap_stats) = " + (mirror + 8) + " bytes"), m);
            assertTrue(m.contains("lays sh_heap_stats out in " + mirror + " bytes"), m);
        }
    }

    @Test
    void libraryWithoutTheSizeFunctionIsRefused() {
        // the version function of the real library, nothing else
        SymbolLookup real = NativeLibrary.lookup();
        SymbolLookup versionOnly = name -> name.equals("sh_abi_version") ? real.find(name) : Optional.empty();
        Path file = Path.of("libspanheap-partial.so");
        String m = assertThrows(UnsatisfiedLinkError.class, () -> NativeLibrary.checkAbi(versionOnly, file))
                .getMessage();
        assertTrue(m.startsWith(file + " has no sh_abi_sizeof()"), m);
    }

    @Test
    void theMatchingLibraryPassesTheCheck() {
        // The library every other test uses passed the same check when it was loaded.
        SymbolLookup real = NativeLibrary.lookup();
        assertEquals(real, NativeLibrary.checkAbi(real, Path.of("libspanheap.so")));
    }

    @Test
    void libraryWithoutTheVersionFunctionIsRefused() {
        SymbolLookup old = name -> Optional.empty();
        Path file = Path.of("libspanheap-old.so");
        String m = assertThrows(UnsatisfiedLinkError.class, () -> NativeLibrary.checkAbi(old, file))
                .getMessage();
        assertTrue(m.startsWith(file + " has no sh_abi_version()"), m);
        assertTrue(m.contains("needs ABI version " + SpanLayout.ABI_VERSION), m);
    }

    @Test
    void libraryPathThatNamesNoFileIsAClearError(@TempDir Path dir) {
        Path missing = dir.resolve("libspanheap.so");
        try (Arena arena = Arena.ofConfined()) {
            String m = assertThrows(UnsatisfiedLinkError.class,
                    () -> NativeLibrary.load(missing.toString(), null, arena, NativeLibrary::open)).getMessage();
            assertEquals("spanheap.library.path names no file: " + missing, m);
        }
    }
}
