package org.spanheap.internal;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * Loads {@code libspanheap.so} once per class loader and exposes its symbols.
 *
 * <p>The library comes from the core jar at {@link #RESOURCE}, the copy for this JVM's
 * platform ({@code META-INF/native/linux-x86_64/} or {@code linux-aarch64/}, chosen by
 * {@code os.arch}). It is unpacked into a
 * fresh directory that only the current user can enter ({@code rwx------}, under a random
 * name) as a file only the current user can read ({@code rw-------}, random name), loaded
 * with {@link SymbolLookup#libraryLookup(Path, Arena)} into the global arena (it is never
 * unloaded), and the file and the directory are deleted right away (the mapping stays
 * valid after the unlink). No other user can replace the file between the copy and the
 * load, with a symbolic link or otherwise. The directory is created in
 * {@code java.io.tmpdir}, or where the system property {@value #WORKDIR_PROPERTY} says:
 * the file system there must allow executable mappings (not mounted {@code noexec}).
 *
 * <p>The system property {@value #PATH_PROPERTY} names an external build instead, for
 * native development; that file is loaded in place and not deleted.
 *
 * <p>Either way the library must report, through {@code sh_abi_version()}, the ABI
 * version that {@link SpanLayout} mirrors ({@link SpanLayout#ABI_VERSION}), and through
 * {@code sh_abi_sizeof()} the size of every struct that crosses the boundary as
 * {@link SpanLayout} lays it out; a library that differs in either is refused, with both
 * values in the message, before any other call.
 */
public final class NativeLibrary {
    /** System property naming an external {@code libspanheap.so}. */
    public static final String PATH_PROPERTY = "spanheap.library.path";
    /** System property naming the directory the jar's library is unpacked into. */
    public static final String WORKDIR_PROPERTY = "spanheap.native.workdir";
    /** Where the core jar carries the library for this JVM's platform; null on any other. */
    public static final String RESOURCE = resource(System.getProperty("os.name", "?"),
            System.getProperty("os.arch", "?"));
    /** The function that reports the library's ABI version. */
    static final String ABI_SYMBOL = "sh_abi_version";
    /** The function that reports the size of each struct shared with Java. */
    static final String SIZEOF_SYMBOL = "sh_abi_sizeof";

    /** A struct shared with C: its {@code SH_STRUCT_*} id and the layout that mirrors it. */
    private record SharedStruct(int id, MemoryLayout layout) {}

    private static final List<SharedStruct> SHARED_STRUCTS = List.of(
            new SharedStruct(SpanLayout.SH_STRUCT_CONFIG, SpanLayout.SH_CONFIG),
            new SharedStruct(SpanLayout.SH_STRUCT_CLASS_INFO, SpanLayout.SH_CLASS_INFO),
            new SharedStruct(SpanLayout.SH_STRUCT_LAYOUT, SpanLayout.SH_LAYOUT),
            new SharedStruct(SpanLayout.SH_STRUCT_HEAP_STATS, SpanLayout.SH_HEAP_STATS));

    private static final FileAttribute<Set<PosixFilePermission>> OWNER_ONLY_DIRECTORY =
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------"));
    private static final FileAttribute<Set<PosixFilePermission>> OWNER_ONLY_FILE =
            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------"));

    private NativeLibrary() {}

    /**
     * {@return the jar resource of the library for the platform that the system properties
     * {@code os.name} and {@code os.arch} name, or null if the jar carries none for it}
     * HotSpot reports x86-64 as {@code amd64} and aarch64 as {@code aarch64}; the other
     * names are those of other JVMs.
     */
    static String resource(String osName, String osArch) {
        if (!osName.toLowerCase(Locale.ROOT).startsWith("linux")) {
            return null;
        }
        return switch (osArch) {
            case "amd64", "x86_64" -> "/META-INF/native/linux-x86_64/libspanheap.so";
            case "aarch64", "arm64" -> "/META-INF/native/linux-aarch64/libspanheap.so";
            default -> null;
        };
    }

    private static final class Holder {
        static final SymbolLookup LOOKUP = load(System.getProperty(PATH_PROPERTY),
                System.getProperty(WORKDIR_PROPERTY), Arena.global(), NativeLibrary::open);
        static {
            loaded = LOOKUP;
        }
    }

    /** The library's symbols once {@link #lookup()} has loaded it; null before. */
    private static volatile SymbolLookup loaded;

    /**
     * {@return the symbols of libspanheap if it is loaded already, else null} Never loads
     * it: for code that both engines use and that only prefers the library (see
     * {@link Zeroing}).
     */
    static SymbolLookup ifLoaded() {
        return loaded;
    }

    /**
     * {@return the symbols of libspanheap} The first call loads the library.
     *
     * @throws UnsatisfiedLinkError if the platform is not Linux on x86-64 or aarch64, the
     *         jar carries no library for it, the library cannot be unpacked or loaded, its
     *         ABI version differs from {@link SpanLayout#ABI_VERSION}, or a shared struct's
     *         size differs from {@link SpanLayout}'s
     */
    public static SymbolLookup lookup() {
        return Holder.LOOKUP;
    }

    /**
     * The step that maps a library file into the process: {@link #open(Path, Arena)}, or a
     * substitute in tests (package-private, so that a test can feed a failure that this
     * machine cannot produce, such as a {@code noexec} mount).
     */
    @FunctionalInterface
    interface Opener {
        /**
         * {@return the symbols of the library at {@code file}, loaded into {@code arena}}
         *
         * @throws UnsatisfiedLinkError if it cannot be loaded; the message is the dynamic
         *         linker's reason as far as it is known
         */
        SymbolLookup open(Path file, Arena arena);
    }

    /**
     * Loads the library: the external file {@code libraryPath} if it is set, else the jar's
     * copy unpacked into {@code workdir} (or {@code java.io.tmpdir}); then checks its ABI
     * version and struct sizes. {@link #lookup()} calls it once with the system properties and the global
     * arena; tests call it with an arena of their own, so that what they load is unloaded.
     *
     * @param libraryPath the value of {@value #PATH_PROPERTY}, or null
     * @param workdir the value of {@value #WORKDIR_PROPERTY}, or null
     * @param arena the arena that keeps the library loaded
     * @param opener maps the file
     * @return the library's symbols
     * @throws UnsatisfiedLinkError if any step fails; the message says which and why
     */
    static SymbolLookup load(String libraryPath, String workdir, Arena arena, Opener opener) {
        String os = System.getProperty("os.name", "?");
        String arch = System.getProperty("os.arch", "?");
        if (resource(os, arch) == null) {
            throw new UnsatisfiedLinkError("spanheap supports Linux on x86-64 and aarch64 only; this JVM runs on "
                    + os + "/" + arch);
        }
        if (libraryPath != null && !libraryPath.isEmpty()) {
            Path path = Path.of(libraryPath).toAbsolutePath();
            if (!Files.isRegularFile(path)) {
                throw new UnsatisfiedLinkError(PATH_PROPERTY + " names no file: " + path);
            }
            SymbolLookup lookup;
            try {
                lookup = opener.open(path, arena);
            } catch (UnsatisfiedLinkError e) {
                UnsatisfiedLinkError error = new UnsatisfiedLinkError("cannot load " + path + " (" + PATH_PROPERTY
                        + "): " + e.getMessage());
                error.initCause(e);
                throw error;
            }
            return checkAbi(lookup, path);
        }
        boolean chosen = workdir != null && !workdir.isEmpty();
        Path dir = Path.of(chosen ? workdir : System.getProperty("java.io.tmpdir")).toAbsolutePath();
        return unpackAndLoad(dir, chosen, arena, opener);
    }

    private static SymbolLookup unpackAndLoad(Path dir, boolean chosen, Arena arena, Opener opener) {
        String where = dir + (chosen ? " (" + WORKDIR_PROPERTY + ")" : " (java.io.tmpdir)");
        Path privateDir = null;
        Path file = null;
        try (InputStream in = NativeLibrary.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("libspanheap.so not found at " + RESOURCE
                        + " on the class path; build the core jar with the native module, or set -D"
                        + PATH_PROPERTY + "=/path/to/libspanheap.so");
            }
            // Owner-only directory with a random name: nobody else can create, rename or
            // replace anything in it, so the file loaded below is the file written here.
            privateDir = Files.createTempDirectory(dir, "spanheap-", OWNER_ONLY_DIRECTORY);
            file = Files.createTempFile(privateDir, "libspanheap-", ".so", OWNER_ONLY_FILE);
            try (OutputStream out = Files.newOutputStream(file, StandardOpenOption.WRITE,
                    StandardOpenOption.TRUNCATE_EXISTING, LinkOption.NOFOLLOW_LINKS)) {
                in.transferTo(out);
            }
        } catch (IOException | UnsupportedOperationException e) {
            deleteQuietly(file);
            deleteQuietly(privateDir);
            UnsatisfiedLinkError error = new UnsatisfiedLinkError("cannot unpack libspanheap.so into " + where
                    + ": " + e + "; set -D" + WORKDIR_PROPERTY + "=<a writable directory of this user>");
            error.initCause(e);
            throw error;
        }
        try {
            SymbolLookup lookup;
            try {
                lookup = opener.open(file, arena);
            } catch (UnsatisfiedLinkError e) {
                throw loadFailure(e, where);
            }
            return checkAbi(lookup, file);
        } finally {
            deleteQuietly(file);
            deleteQuietly(privateDir);
        }
    }

    /**
     * {@return the error for a library that was unpacked into {@code where} but did not load}
     * The dynamic linker reports a {@code noexec} mount as "failed to map segment from shared
     * object" (the executable mapping is refused with {@code EPERM}, "Operation not permitted"
     * in older versions): then the message says so and names the property to set.
     */
    private static UnsatisfiedLinkError loadFailure(UnsatisfiedLinkError e, String where) {
        String reason = String.valueOf(e.getMessage());
        String lower = reason.toLowerCase(Locale.ROOT);
        String message = "cannot load libspanheap.so unpacked into " + where + ": " + reason;
        if (lower.contains("failed to map segment") || lower.contains("operation not permitted")) {
            message += "; the directory may be on a file system mounted noexec, which forbids loading"
                    + " native code from it: set -D" + WORKDIR_PROPERTY
                    + "=<a directory on a file system that allows executable mappings>";
        }
        UnsatisfiedLinkError error = new UnsatisfiedLinkError(message);
        error.initCause(e);
        return error;
    }

    private static void deleteQuietly(Path path) {
        if (path != null) {
            try {
                Files.deleteIfExists(path);
            } catch (IOException ignored) {
                // left behind in the work directory; the loaded mapping is unaffected
            }
        }
    }

    /**
     * {@return {@code lookup}, after checking that its {@code sh_abi_version()} is
     * {@link SpanLayout#ABI_VERSION} and that {@code sh_abi_sizeof()} reports, for every
     * struct shared with Java, the size of {@link SpanLayout}'s mirror} Runs before any
     * other function of the library.
     *
     * @throws UnsatisfiedLinkError naming both values if a version or a size differs, or if
     *         the library lacks {@code sh_abi_version} or {@code sh_abi_sizeof}
     */
    static SymbolLookup checkAbi(SymbolLookup lookup, Path file) {
        Optional<MemorySegment> symbol = lookup.find(ABI_SYMBOL);
        if (symbol.isEmpty()) {
            throw new UnsatisfiedLinkError(file + " has no " + ABI_SYMBOL + "(): it is an older native"
                    + " library than this spanheap-core, which needs ABI version " + SpanLayout.ABI_VERSION);
        }
        MethodHandle abiVersion = Linker.nativeLinker().downcallHandle(symbol.get(), FunctionDescriptor.of(JAVA_INT));
        int version;
        try {
            version = (int) abiVersion.invokeExact();
        } catch (Throwable t) {
            throw new AssertionError(t);  // a downcall of int(void) throws nothing checked
        }
        if (version != SpanLayout.ABI_VERSION) {
            throw new UnsatisfiedLinkError(file + " has native ABI version " + version + ", but this spanheap-core"
                    + " needs ABI version " + SpanLayout.ABI_VERSION
                    + ": use the libspanheap.so built from the same sources as the jar");
        }
        checkStructSizes(lookup, file);
        return lookup;
    }

    /**
     * Compares {@code sh_abi_sizeof(id)} with the byte size of each mirror in
     * {@link SpanLayout}: a library built from other headers (a changed struct without an
     * ABI version bump, another {@code SH_MAX_CLASSES}) would otherwise read and write past
     * the segments Java allocates for these structs.
     */
    private static void checkStructSizes(SymbolLookup lookup, Path file) {
        Optional<MemorySegment> symbol = lookup.find(SIZEOF_SYMBOL);
        if (symbol.isEmpty()) {
            throw new UnsatisfiedLinkError(file + " has no " + SIZEOF_SYMBOL + "(), which ABI version "
                    + SpanLayout.ABI_VERSION + " includes: it is not a libspanheap.so built from the sources of"
                    + " this spanheap-core");
        }
        MethodHandle sizeOf = Linker.nativeLinker().downcallHandle(symbol.get(),
                FunctionDescriptor.of(JAVA_LONG, JAVA_INT));
        for (SharedStruct s : SHARED_STRUCTS) {
            long inLibrary;
            try {
                inLibrary = (long) sizeOf.invokeExact(s.id());
            } catch (Throwable t) {
                throw new AssertionError(t);  // a downcall of uint64_t(int) throws nothing checked
            }
            long mirror = s.layout().byteSize();
            if (inLibrary != mirror) {
                String name = s.layout().name().orElseThrow();
                throw new UnsatisfiedLinkError(file + " has sizeof(" + name + ") = " + inLibrary
                        + " bytes, but this spanheap-core lays " + name + " out in " + mirror
                        + " bytes (ABI version " + SpanLayout.ABI_VERSION + " on both sides)"
                        + ": use the libspanheap.so built from the same sources as the jar");
            }
        }
    }

    /**
     * Maps {@code file} with {@link SymbolLookup#libraryLookup(Path, Arena)}. That method
     * drops the dynamic linker's reason on failure; it is recovered with a second
     * {@code dlopen} through libc and {@code dlerror}.
     */
    static SymbolLookup open(Path file, Arena arena) {
        try {
            return SymbolLookup.libraryLookup(file, arena);
        } catch (IllegalArgumentException e) {
            String reason = dynamicLinkerError(file);
            UnsatisfiedLinkError error = new UnsatisfiedLinkError(reason != null ? reason
                    : "cannot load " + file + ": " + e.getMessage());
            error.initCause(e);
            throw error;
        }
    }

    /** {@return what {@code dlerror} says after a failed {@code dlopen} of {@code file}, or null} */
    private static String dynamicLinkerError(Path file) {
        Linker linker = Linker.nativeLinker();
        SymbolLookup libc = linker.defaultLookup();
        Optional<MemorySegment> dlopen = libc.find("dlopen");
        Optional<MemorySegment> dlerror = libc.find("dlerror");
        Optional<MemorySegment> dlclose = libc.find("dlclose");
        if (dlopen.isEmpty() || dlerror.isEmpty() || dlclose.isEmpty()) {
            return null;
        }
        MethodHandle open = linker.downcallHandle(dlopen.get(), FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT));
        MethodHandle error = linker.downcallHandle(dlerror.get(), FunctionDescriptor.of(ADDRESS));
        MethodHandle close = linker.downcallHandle(dlclose.get(), FunctionDescriptor.of(JAVA_INT, ADDRESS));
        int rtldNow = 2;
        try (Arena tmp = Arena.ofConfined()) {
            MemorySegment handle = (MemorySegment) open.invokeExact(tmp.allocateFrom(file.toString()), rtldNow);
            if (!handle.equals(MemorySegment.NULL)) {
                int unused = (int) close.invokeExact(handle);  // it loads now: no reason to report
                return null;
            }
            // Same thread as the dlopen (dlerror's state is per thread).
            MemorySegment text = (MemorySegment) error.invokeExact();
            return text.equals(MemorySegment.NULL) ? null : text.reinterpret(4096).getString(0);
        } catch (Throwable t) {
            return null;  // the reason is a courtesy; the caller reports the failure anyway
        }
    }
}
