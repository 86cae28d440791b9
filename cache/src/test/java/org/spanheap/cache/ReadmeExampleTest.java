package org.spanheap.cache;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.ValueLayout;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The README's cache example, as it is written there, so that it keeps compiling and doing what it says. */
class ReadmeExampleTest {

    @Test
    void theReadmeExampleWorks() {
        try (OffHeapCache<String, byte[]> cache = OffHeapCache.builder(Serializers.utf8(), Serializers.bytes())
                .capacity(256L << 20)                                // bytes, the on-heap index included
                .expireAfterWrite(Duration.ofMinutes(10))
                .build()) {
            cache.put("user:42", new byte[] {1, 2, 3});
            byte[] copy = cache.get("user:42");                      // null when absent
            Byte first = cache.get("user:42", s -> s.get(ValueLayout.JAVA_BYTE, 0)); // in place, no copy
            byte[] loaded = cache.computeIfAbsent("user:43", key -> key.getBytes()); // one load per key

            assertArrayEquals(new byte[] {1, 2, 3}, copy);
            assertEquals((byte) 1, first);
            assertArrayEquals("user:43".getBytes(), loaded);
        }
    }
}
