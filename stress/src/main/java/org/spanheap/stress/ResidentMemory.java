package org.spanheap.stress;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The process's resident memory as the kernel counts it ({@code VmRSS} and its peak
 * {@code VmHWM} in /proc/self/status): what a long soak charts, independent of the heaps'
 * own accounting. -1 where /proc is not there.
 */
final class ResidentMemory {

    private static final Path STATUS = Path.of("/proc/self/status");

    private ResidentMemory() {
    }

    /** {@return the resident set size in KiB, or -1} */
    static long currentKib() {
        return field("VmRSS:");
    }

    /** {@return the peak resident set size since the start in KiB, or -1} */
    static long peakKib() {
        return field("VmHWM:");
    }

    private static long field(String name) {
        try {
            for (String line : Files.readAllLines(STATUS)) {
                if (line.startsWith(name)) {
                    // "VmRSS:      123456 kB"
                    String[] parts = line.substring(name.length()).trim().split("\\s+");
                    return Long.parseLong(parts[0]);
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or a format we do not know: report "unknown"
        }
        return -1;
    }
}
