package org.spanheap;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs a main class of the test class path in a fresh JVM: the same {@code java}, native
 * access enabled, the test class path. For the tests that need a process of their own (system
 * properties read once, the engine chosen at start, a JVM that exits).
 */
final class ForkedJvm {

    private ForkedJvm() {
    }

    /**
     * Runs {@code main} with {@code jvmOptions} and {@code args} in {@code workDir} (null: this
     * one's), waits up to 60 s, asserts exit status 0 and returns what it printed (both streams).
     */
    static String run(Class<?> main, List<String> jvmOptions, Path workDir, String... args)
            throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("--enable-native-access=ALL-UNNAMED");
        cmd.addAll(jvmOptions);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(main.getName());
        cmd.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(cmd).redirectErrorStream(true);
        if (workDir != null) {
            builder.directory(workDir.toFile());
        }
        Process p = builder.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), () -> "the forked JVM did not end: " + out);
        assertEquals(0, p.exitValue(), out);
        return out;
    }

    /** Runs {@code main} with each of {@code properties} ({@code name=value}) as a system property. */
    static String withProperties(Class<?> main, String... properties) throws IOException, InterruptedException {
        List<String> options = new ArrayList<>();
        for (String p : properties) {
            options.add("-D" + p);
        }
        return run(main, options, null);
    }
}
