package org.spanheap.internal;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads {@code libspanheap.so} once per class loader and exposes its symbols.
 *
 * <p>The library comes from the core jar at {@value #RESOURCE}: it is copied to a
 * temporary file, loaded with {@link SymbolLookup#libraryLookup(Path, Arena)} into the
 * global arena (it is never unloaded) and the file is deleted right away (the mapping
 * stays valid after the unlink). The system property {@value #PATH_PROPERTY} names an
 * external build instead, for native development; that file is not deleted.
 */
public final class NativeLibrary {
    /** System property naming an external {@code libspanheap.so}. */
    public static final String PATH_PROPERTY = "spanheap.library.path";
    /** Where the core jar carries the library. */
    public static final String RESOURCE = "/META-INF/native/linux-x86_64/libspanheap.so";

    private NativeLibrary() {}

    private static final class Holder {
        static final SymbolLookup LOOKUP = load();
    }

    /**
     * {@return the symbols of libspanheap} The first call loads the library.
     *
     * @throws UnsatisfiedLinkError if the platform is not x86-64 Linux, the jar carries
     *         no library, or loading fails
     */
    public static SymbolLookup lookup() {
        return Holder.LOOKUP;
    }

    private static SymbolLookup load() {
        String os = System.getProperty("os.name", "?");
        String arch = System.getProperty("os.arch", "?");
        if (!os.toLowerCase(Locale.ROOT).startsWith("linux")
                || !(arch.equals("amd64") || arch.equals("x86_64"))) {
            throw new UnsatisfiedLinkError("spanheap supports x86-64 Linux only; this JVM runs on "
                    + os + "/" + arch);
        }
        String external = System.getProperty(PATH_PROPERTY);
        if (external != null && !external.isEmpty()) {
            Path path = Path.of(external).toAbsolutePath();
            if (!Files.isRegularFile(path)) {
                throw new UnsatisfiedLinkError(PATH_PROPERTY + " names no file: " + path);
            }
            return open(path);
        }
        Path tmp = null;
        try (InputStream in = NativeLibrary.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("libspanheap.so not found at " + RESOURCE
                        + " on the class path; build the core jar with the native module, or set -D"
                        + PATH_PROPERTY + "=/path/to/libspanheap.so");
            }
            tmp = Files.createTempFile("libspanheap-", ".so");
            Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
            return open(tmp);
        } catch (IOException e) {
            UnsatisfiedLinkError error = new UnsatisfiedLinkError("cannot extract " + RESOURCE + ": " + e);
            error.initCause(e);
            throw error;
        } finally {
            if (tmp != null) {
                try {
                    Files.deleteIfExists(tmp);
                } catch (IOException ignored) {
                    // the file stays in the temporary directory; the loaded mapping is unaffected
                }
            }
        }
    }

    private static SymbolLookup open(Path path) {
        try {
            return SymbolLookup.libraryLookup(path, Arena.global());
        } catch (IllegalArgumentException e) {
            UnsatisfiedLinkError error = new UnsatisfiedLinkError("cannot load " + path + ": " + e.getMessage());
            error.initCause(e);
            throw error;
        }
    }
}
