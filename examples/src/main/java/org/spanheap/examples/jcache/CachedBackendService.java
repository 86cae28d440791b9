package org.spanheap.examples.jcache;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.micrometer.core.instrument.binder.cache.JCacheMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Function;
import javax.cache.Cache;
import javax.cache.CacheManager;
import javax.cache.Caching;
import javax.cache.configuration.FactoryBuilder;
import javax.cache.expiry.CreatedExpiryPolicy;
import javax.cache.expiry.Duration;
import javax.cache.integration.CacheLoader;
import javax.cache.spi.CachingProvider;
import org.spanheap.cache.Serializers;
import org.spanheap.jcache.OffHeapConfiguration;

/**
 * A small HTTP service that caches a slow backend's answers through the JCache
 * API, on spanheap's provider, and shows Micrometer's JCache metrics at
 * {@code /metrics} in Prometheus text format.
 *
 * <ul>
 *   <li>{@code GET /item?id=ID}: the backend's answer for {@code ID}, read
 *       through the cache (a miss calls the backend and stores its answer for
 *       ten minutes);</li>
 *   <li>{@code GET /metrics}: the registry's scrape, with the cache's
 *       {@code cache_gets_total{result="hit"|"miss"}}, {@code cache_puts_total},
 *       {@code cache_removals_total} and {@code cache_evictions_total}.</li>
 * </ul>
 *
 * Run it with {@code java --enable-native-access=ALL-UNNAMED -cp ... CachedBackendService [port]}.
 */
public final class CachedBackendService implements AutoCloseable {

    /** The name of the cache, and its tag in the metrics. */
    public static final String CACHE_NAME = "items";

    private final HttpServer server;
    private final ExecutorService executor;
    private final CacheManager cacheManager;
    private final Cache<String, String> cache;
    private final PrometheusMeterRegistry registry;

    /**
     * Starts the service.
     *
     * @param address where to listen (port 0: an ephemeral port)
     * @param backend answers an id; it is called once per id the cache misses
     * @param capacityBytes the cache's capacity
     * @throws IOException if the server cannot bind
     */
    public CachedBackendService(InetSocketAddress address, Function<String, String> backend, long capacityBytes)
            throws IOException {
        CachingProvider provider = Caching.getCachingProvider();
        // a manager of its own, so that two services in one JVM do not share caches
        this.cacheManager = provider.getCacheManager(
                URI.create("urn:spanheap:example:" + Integer.toHexString(System.identityHashCode(this))),
                CachedBackendService.class.getClassLoader());
        OffHeapConfiguration<String, String> config = new OffHeapConfiguration<String, String>()
                .setCapacity(capacityBytes)
                .setSerializers(Serializers.utf8(), Serializers.utf8());
        config.setTypes(String.class, String.class)
                .setReadThrough(true)
                .setCacheLoaderFactory(FactoryBuilder.factoryOf(new BackendLoader(backend)))
                .setExpiryPolicyFactory(CreatedExpiryPolicy.factoryOf(Duration.TEN_MINUTES))
                .setStatisticsEnabled(true); // JCacheMetrics reads the statistics MXBean
        this.cache = cacheManager.createCache(CACHE_NAME, config);

        this.registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        JCacheMetrics.monitor(registry, cache);

        this.server = HttpServer.create(address, 0);
        this.executor = Executors.newFixedThreadPool(4);
        server.setExecutor(executor);
        server.createContext("/item", this::item);
        server.createContext("/metrics", this::metrics);
        server.start();
    }

    /** {@return the address the service listens on} */
    public InetSocketAddress address() {
        return server.getAddress();
    }

    /** {@return the cache, as the JCache API gives it} */
    public Cache<String, String> cache() {
        return cache;
    }

    private void item(HttpExchange exchange) throws IOException {
        try (exchange) {
            String id = queryParameter(exchange.getRequestURI(), "id");
            if (id == null || id.isEmpty()) {
                respond(exchange, 400, "text/plain", "missing query parameter: id\n");
                return;
            }
            String answer = cache.get(id); // read-through: a miss loads from the backend
            if (answer == null) {
                respond(exchange, 404, "text/plain", "no item " + id + "\n");
            } else {
                respond(exchange, 200, "text/plain; charset=utf-8", answer);
            }
        }
    }

    private void metrics(HttpExchange exchange) throws IOException {
        try (exchange) {
            respond(exchange, 200, "text/plain; version=0.0.4; charset=utf-8", registry.scrape());
        }
    }

    private static String queryParameter(URI uri, String name) {
        String query = uri.getRawQuery();
        if (query == null) {
            return null;
        }
        for (String pair : query.split("&")) {
            int eq = pair.indexOf('=');
            if (eq > 0 && pair.substring(0, eq).equals(name)) {
                return java.net.URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
            }
        }
        return null;
    }

    private static void respond(HttpExchange exchange, int status, String type, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().put("Content-Type", List.of(type));
        exchange.sendResponseHeaders(status, bytes.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(bytes);
        }
    }

    /** Stops the server, then closes the cache manager and its cache. */
    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
        registry.close();
        cacheManager.close();
    }

    /** The cache's loader: the backend, which the configuration's factory hands out as it is. */
    private record BackendLoader(Function<String, String> backend) implements CacheLoader<String, String>,
            java.io.Serializable {
        @Override
        public String load(String key) {
            return backend.apply(key);
        }

        @Override
        public Map<String, String> loadAll(Iterable<? extends String> keys) {
            Map<String, String> out = new java.util.LinkedHashMap<>();
            for (String key : keys) {
                String value = load(key);
                if (value != null) {
                    out.put(key, value);
                }
            }
            return out;
        }
    }

    /** A stand-in backend: each answer takes about a millisecond, and the calls are counted. */
    public static final class SlowBackend implements Function<String, String> {
        private final LongAdder calls = new LongAdder();

        @Override
        public String apply(String id) {
            calls.increment();
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return "item " + id + ": " + Integer.toHexString(id.hashCode()) + "\n";
        }

        /** {@return how often the backend was called} */
        public long calls() {
            return calls.sum();
        }
    }

    /**
     * Runs the service until the JVM stops.
     *
     * @param args the port (default 8080)
     * @throws IOException if the server cannot bind
     */
    public static void main(String[] args) throws IOException {
        int port = args.length > 0 ? Integer.parseInt(args[0]) : 8080;
        CachedBackendService service = new CachedBackendService(new InetSocketAddress("127.0.0.1", port),
                new SlowBackend(), 64L << 20);
        Runtime.getRuntime().addShutdownHook(new Thread(service::close));
        System.out.println("serving on http://" + service.address().getHostString() + ":" + service.address().getPort()
                + "/item?id=1 and /metrics");
    }
}
