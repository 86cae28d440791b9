package org.spanheap.examples.jcache;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** Starts the example service on an ephemeral port, drives a bounded load, and checks answers, hit ratio and metrics. */
class CachedBackendServiceTest {

    private static final int IDS = 200;
    private static final int REQUESTS_PER_CLIENT = 500;
    private static final int CLIENTS = 4;

    @Test
    void servesFromTheCacheAndExposesItsMetrics() throws Exception {
        CachedBackendService.SlowBackend backend = new CachedBackendService.SlowBackend();
        CachedBackendService.SlowBackend reference = new CachedBackendService.SlowBackend();
        try (CachedBackendService service = new CachedBackendService(new InetSocketAddress("127.0.0.1", 0),
                backend, 16L << 20)) {
            String base = "http://127.0.0.1:" + service.address().getPort();
            HttpClient client = HttpClient.newHttpClient();
            ExecutorService clients = Executors.newFixedThreadPool(CLIENTS);
            List<Future<Integer>> done = new ArrayList<>();
            for (int c = 0; c < CLIENTS; c++) {
                int seed = c;
                done.add(clients.submit(() -> {
                    int ok = 0;
                    for (int i = 0; i < REQUESTS_PER_CLIENT; i++) {
                        String id = Integer.toString((i * 31 + seed * 7) % IDS);
                        HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create(base + "/item?id=" + id))
                                .build(), HttpResponse.BodyHandlers.ofString());
                        assertEquals(200, r.statusCode(), r.body());
                        assertEquals(reference.apply(id), r.body(), "the answer for id " + id);
                        ok++;
                    }
                    return ok;
                }));
            }
            int answered = 0;
            for (Future<Integer> f : done) {
                answered += f.get();
            }
            clients.shutdown();
            int requests = CLIENTS * REQUESTS_PER_CLIENT;
            assertEquals(requests, answered);

            // Each id is loaded once (concurrent misses of one id wait for its lock), every other request hits.
            assertEquals(IDS, backend.calls(), "backend calls");
            HttpResponse<String> bad = client.send(HttpRequest.newBuilder(URI.create(base + "/item")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(400, bad.statusCode());

            HttpResponse<String> scrape = client.send(HttpRequest.newBuilder(URI.create(base + "/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, scrape.statusCode());
            String text = scrape.body();
            double hits = sample(text, "cache_gets_total", "result=\"hit\"");
            double misses = sample(text, "cache_gets_total", "result=\"miss\"");
            assertEquals(requests - IDS, hits, text);
            assertEquals(IDS, misses, text);
            double hitRatio = hits / (hits + misses);
            assertTrue(hitRatio >= 0.9, "hit ratio " + hitRatio);
            assertTrue(text.contains("cache=\"" + CachedBackendService.CACHE_NAME + "\""), text);
        }
    }

    /** {@return the value of the sample of {@code metric} whose labels contain {@code label}} */
    private static double sample(String scrape, String metric, String label) {
        Matcher m = Pattern.compile("(?m)^" + metric + "\\{([^}]*)\\} (\\S+)$").matcher(scrape);
        while (m.find()) {
            if (m.group(1).contains(label)) {
                return Double.parseDouble(m.group(2));
            }
        }
        throw new AssertionError("no sample " + metric + " with " + label + " in:\n" + scrape);
    }
}
