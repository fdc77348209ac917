package dev.stitch.bench.fleet;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;

/**
 * Rollout traffic during the fleet run: each host gets a request pinned ({@code exact_version}) to the
 * version it serves, every {@code periodMillis}. It records latency, counts 409s, and counts as
 * mislabeled every answer whose weights digest is not the digest of the version it was stamped with.
 */
final class PinnedLoad implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final Map<Long, String> digests;
    private final List<Long> latenciesNanos = Collections.synchronizedList(new ArrayList<>());
    private final AtomicLong ok = new AtomicLong();
    private final AtomicLong conflicts = new AtomicLong();
    private final AtomicLong mislabeled = new AtomicLong();
    private final AtomicLong errors = new AtomicLong();
    private final List<Thread> threads = new ArrayList<>();
    private volatile boolean stopped;

    /** @param digests the weights digest of each version (filled as versions are published) */
    PinnedLoad(Map<Long, String> digests) {
        this.digests = digests;
    }

    /** Starts pinned requests to the host on {@code port} that serves {@code served()}. */
    void add(IntSupplier port, LongSupplier served, long periodMillis) {
        threads.add(Thread.ofVirtual().start(() -> {
            while (!stopped) {
                long v = served.getAsLong();
                send(port.getAsInt(), v);
                try {
                    Thread.sleep(periodMillis);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }));
    }

    private void send(int port, long version) {
        HttpRequest req = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/generate"))
                .timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.ofString("{\"text\": \"fleet\", \"sampling_params\": {\"max_new_tokens\": 1},"
                        + " \"weight_version\": {\"exact_version\": " + version + "}}")).build();
        long t0 = System.nanoTime();
        try {
            HttpResponse<String> r = client.send(req, HttpResponse.BodyHandlers.ofString());
            long nanos = System.nanoTime() - t0;
            if (r.statusCode() == 409) {
                conflicts.incrementAndGet();
                return;
            }
            if (r.statusCode() != 200) {
                errors.incrementAndGet();
                return;
            }
            latenciesNanos.add(nanos);
            ok.incrementAndGet();
            long stamped = Long.parseLong(r.headers().firstValue("x-stitch-weight-version-start").orElse("-1"));
            JsonNode meta = JSON.readTree(r.body()).path("meta_info");
            String expected = digests.get(stamped);
            if (expected != null && !expected.equals(meta.path("weights_digest").asText())) {
                mislabeled.incrementAndGet();
            }
        } catch (Exception e) {
            if (!stopped) {
                errors.incrementAndGet();
            }
        }
    }

    long ok() {
        return ok.get();
    }

    long conflicts() {
        return conflicts.get();
    }

    long mislabeled() {
        return mislabeled.get();
    }

    long errors() {
        return errors.get();
    }

    /** The {@code p} quantile of answered requests' latency, in milliseconds (NaN when none). */
    double percentileMillis(double p) {
        List<Long> sorted;
        synchronized (latenciesNanos) {
            sorted = new ArrayList<>(latenciesNanos);
        }
        if (sorted.isEmpty()) {
            return Double.NaN;
        }
        Collections.sort(sorted);
        int idx = (int) Math.ceil(p * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, idx))) / 1e6;
    }

    @Override
    public void close() {
        stopped = true;
        for (Thread t : threads) {
            t.interrupt();
        }
        client.close();
    }
}
