package org.spanheap.examples.modular;

import io.netty.buffer.ByteBuf;
import io.netty.util.ReferenceCounted;
import org.junit.jupiter.api.Test;
import org.spanheap.SpanHeap;
import org.spanheap.cache.OffHeapCache;
import org.spanheap.netty.SpanHeapByteBufAllocator;

import java.io.File;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * spanheap as a module-path user gets it: a JVM of its own with the core, cache and Netty jars
 * (and Netty's) on the module path and {@code --enable-native-access=org.spanheap},
 * running {@link ModulePathProbe}. The tests of the modules themselves run on the class path.
 */
class ModulePathTest {

    @Test
    void theLibraryWorksAsNamedModulesThatHideTheirInternals() throws Exception {
        // The jars this test runs with (in a reactor build before packaging: the classes
        // directories, which are exploded modules as good as the jars).
        List<Path> modules = Stream.of(SpanHeap.class, OffHeapCache.class, SpanHeapByteBufAllocator.class,
                ByteBuf.class, ReferenceCounted.class).map(ModulePathTest::location).distinct()
                .toList();
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        List<String> command = new ArrayList<>(List.of(java.toString(),
                "--module-path", modules.stream().map(Path::toString).collect(Collectors.joining(File.pathSeparator)),
                "--add-modules", "org.spanheap.cache,org.spanheap.netty",
                "--enable-native-access=org.spanheap",
                "-cp", location(ModulePathProbe.class).toString(),
                ModulePathProbe.class.getName()));
        Path out = Files.createTempFile("spanheap-module-path", ".log");
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile()).start();
            boolean exited = p.waitFor(120, TimeUnit.SECONDS);
            if (!exited) {
                p.destroyForcibly().waitFor();
            }
            String log = Files.readString(out, StandardCharsets.UTF_8);
            System.out.print(log); // into the surefire report
            String context = String.join(" ", command) + "\n" + log;
            assertTrue(exited, () -> "no exit within 120 s: " + context);
            assertEquals(0, p.exitValue(), () -> "exit code: " + context);
            assertTrue(log.contains("module path: all checks passed"), context);
            // The flag names the module that calls the restricted methods: no native-access warning.
            assertFalse(log.contains("restricted method") || log.contains("enable-native-access"), context);
        } finally {
            Files.deleteIfExists(out);
        }
    }

    private static Path location(Class<?> c) {
        try {
            return Path.of(c.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }
}
