package org.spanheap.netty;

import io.netty.buffer.AbstractByteBufAllocator;
import io.netty.util.Version;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The tests of this module run twice, on Netty 4.2 (this module) and on Netty 4.1
 * (netty-compat-41); each build passes the version it means in
 * {@code spanheap.test.nettyVersion}. This test fails if the class path holds another one.
 */
class NettyVersionTest {

    @Test
    void theNettyOnTheClassPathIsTheOneTheBuildAskedFor() {
        String expected = System.getProperty("spanheap.test.nettyVersion");
        assertNotNull(expected, "the build must set spanheap.test.nettyVersion");
        Map<String, Version> versions = Version.identify();
        for (String artifact : new String[] {"netty-buffer", "netty-common", "netty-transport", "netty-codec-http"}) {
            Version v = versions.get(artifact);
            assertNotNull(v, () -> artifact + " is not on the class path: " + versions.keySet());
            assertEquals(expected, v.artifactVersion(), artifact);
        }
        // Version.identify() reads properties files; the class itself must come from that jar too.
        String jar = AbstractByteBufAllocator.class.getProtectionDomain().getCodeSource().getLocation().toString();
        assertTrue(jar.endsWith("netty-buffer-" + expected + ".jar"), jar);
    }
}
