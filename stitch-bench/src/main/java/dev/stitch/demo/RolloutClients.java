package dev.stitch.demo;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * Rollout workers hammering the sidecar while versions advance. Pinned workers ask for
 * {@code exact_version} = the newest version the trainer published (an on-policy rollout); bounded
 * workers ask for {@code min_required_version} = newest minus the staleness bound (off-policy by at
 * most that many steps). A 409 NotReady is retried after a short pause, a 409 TooOld re-pins. Every
 * 200 is checked against the trainer: the {@code weights_digest} the engine reports must be the
 * trainer's digest of the version the sidecar stamped, and the stamp must satisfy the constraint. The
 * one allowed exception is an in_place commit, where a non-pinned request admitted before the flip
 * may finish on the new weights; it is stamped {@code start < end} and counted as crossing a commit.
 */
final class RolloutClients implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long NOT_READY_PAUSE_MS = 20;

    private final URI generate;
    private final HttpClient http;
    private final LongSupplier newestPublished;
    private final Map<Long, String> trainerDigests;
    private final int pinned;
    private final int bounded;
    private final long staleness;
    private final int maxNewTokens;
    private final List<Thread> threads = new ArrayList<>();
    private volatile boolean running;

    private final ConcurrentSkipListMap<Long, LongAdder> servedByVersion = new ConcurrentSkipListMap<>();
    private final LongAdder served = new LongAdder();
    private final LongAdder servedPinned = new LongAdder();
    private final LongAdder servedBounded = new LongAdder();
    private final LongAdder notReady = new LongAdder();
    private final LongAdder tooOld = new LongAdder();
    private final LongAdder errors = new LongAdder();
    private final LongAdder mislabeled = new LongAdder();
    private final LongAdder crossedCommit = new LongAdder();
    private final LongAdder constraintViolations = new LongAdder();
    private final AtomicReference<String> firstProblem = new AtomicReference<>();

    /**
     * @param sidecar         base URL of the sidecar
     * @param newestPublished the newest version the trainer has published (read before each request)
     * @param trainerDigests  version to the trainer's weights digest, filled before a version is published
     */
    RolloutClients(URI sidecar, LongSupplier newestPublished, Map<Long, String> trainerDigests,
                   int pinned, int bounded, long staleness, int maxNewTokens) {
        this.generate = sidecar.resolve("/generate");
        this.newestPublished = newestPublished;
        this.trainerDigests = trainerDigests;
        this.pinned = pinned;
        this.bounded = bounded;
        this.staleness = staleness;
        this.maxNewTokens = maxNewTokens;
        this.http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10))
                .build();
    }

    void start() {
        running = true;
        for (int i = 0; i < pinned + bounded; i++) {
            boolean exact = i < pinned;
            int id = i;
            Thread t = Thread.ofPlatform().name((exact ? "rollout-pinned-" : "rollout-bounded-") + id).daemon()
                    .start(() -> loop(id, exact));
            threads.add(t);
        }
    }

    /** Stops issuing requests and waits for the in-flight ones to finish. */
    void stop() throws InterruptedException {
        running = false;
        for (Thread t : threads) {
            t.join(Duration.ofSeconds(30));
        }
        threads.clear();
    }

    @Override
    public void close() {
        try {
            stop();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            http.close();
        }
    }

    private void loop(int id, boolean exact) {
        long n = 0;
        while (running) {
            long newest = newestPublished.getAsLong();
            long target = exact ? newest : Math.max(0, newest - staleness);
            String prompt = "rollout " + id + " sample " + n++;
            try {
                int status = request(prompt, exact, target);
                if (status == 409) {
                    Thread.sleep(NOT_READY_PAUSE_MS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (IOException | RuntimeException e) {
                errors.increment();
                problem("request failed: " + e);
                sleepQuietly();
            }
        }
    }

    private int request(String prompt, boolean exact, long target) throws IOException, InterruptedException {
        String constraint = exact ? "{\"exact_version\": " + target + "}" : "{\"min_required_version\": " + target + "}";
        String body = "{\"text\": " + JSON.writeValueAsString(prompt)
                + ", \"sampling_params\": {\"max_new_tokens\": " + maxNewTokens + ", \"temperature\": 0}"
                + ", \"weight_version\": " + constraint + "}";
        HttpRequest req = HttpRequest.newBuilder(generate)
                .timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8))
                .build();
        HttpResponse<byte[]> resp = http.send(req, HttpResponse.BodyHandlers.ofByteArray());
        int status = resp.statusCode();
        if (status == 200) {
            check(JSON.readTree(resp.body()), exact, target);
        } else if (status == 409) {
            String type = JSON.readTree(resp.body()).path("type").asText("");
            if ("WeightVersionTooOld".equals(type)) {
                tooOld.increment();
            } else {
                notReady.increment();
            }
        } else {
            errors.increment();
            problem("HTTP " + status + ": " + new String(resp.body(), StandardCharsets.UTF_8).strip());
        }
        return status;
    }

    private void check(JsonNode response, boolean exact, long target) {
        JsonNode meta = response.path("meta_info");
        String stamped = meta.path("weight_version").asText(null);
        long version;
        try {
            version = Long.parseLong(stamped);
        } catch (NumberFormatException | NullPointerException e) {
            errors.increment();
            problem("response without a numeric meta_info.weight_version: " + response);
            return;
        }
        served.increment();
        (exact ? servedPinned : servedBounded).increment();
        servedByVersion.computeIfAbsent(version, v -> new LongAdder()).increment();
        String expected = trainerDigests.get(version);
        String reported = meta.path("weights_digest").asText(null);
        long end = meta.path("weight_version_end").asLong(version);
        if (expected == null || !expected.equals(reported)) {
            if (!exact && end > version && servedByOneOf(reported, version + 1, end)) {
                // in_place commits let a non-pinned request finish on newer weights; the stamps say so (start < end).
                crossedCommit.increment();
            } else {
                mislabeled.increment();
                problem("version " + version + " served weights " + reported + ", trainer has " + expected);
            }
        }
        if (exact && end != version) {
            constraintViolations.increment();
            problem("a request pinned to " + target + " crossed a commit: start " + version + ", end " + end);
        }
        if (exact ? version != target : version < target) {
            constraintViolations.increment();
            problem((exact ? "exact_version " : "min_required_version ") + target + " served at version " + version);
        }
    }

    private boolean servedByOneOf(String digest, long from, long to) {
        for (long v = from; v <= to; v++) {
            if (digest != null && digest.equals(trainerDigests.get(v))) {
                return true;
            }
        }
        return false;
    }

    private void problem(String message) {
        firstProblem.compareAndSet(null, message);
    }

    private static void sleepQuietly() {
        try {
            Thread.sleep(200);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A consistent-enough view of the counters (each counter is exact once the clients stopped). */
    Tally tally() {
        Map<Long, Long> byVersion = new TreeMap<>();
        servedByVersion.forEach((v, c) -> byVersion.put(v, c.sum()));
        return new Tally(served.sum(), servedPinned.sum(), servedBounded.sum(), byVersion, notReady.sum(), tooOld.sum(),
                errors.sum(), mislabeled.sum(), crossedCommit.sum(), constraintViolations.sum(), firstProblem.get());
    }

    /** Outcome counts of the rollout traffic. */
    record Tally(long served, long servedPinned, long servedBounded, Map<Long, Long> servedByVersion,
                 long notReady, long tooOld, long errors, long mislabeled, long crossedCommit, long constraintViolations,
                 String firstProblem) {
        long conflicts() {
            return notReady + tooOld;
        }
    }

    static Map<Long, String> newDigestTable() {
        return new ConcurrentHashMap<>();
    }
}
