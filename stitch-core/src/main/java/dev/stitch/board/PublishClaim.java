package dev.stitch.board;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.board.store.ObjectInfo;
import dev.stitch.board.store.ObjectStore;
import dev.stitch.board.store.PreconditionFailedException;
import dev.stitch.protocol.CanonicalJson;
import dev.stitch.protocol.WeightIdentity;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The right to publish one version on object storage (docs/protocol/board.md §7.3): the object
 * {@code versions/.weight_vNNNNNN.claim}, created with {@code If-None-Match: *} so exactly one
 * publisher holds it, and renewed while the publish runs. A claim nobody renewed for
 * {@code claimStale} belongs to a dead publisher and is taken over, which is why a crash never blocks
 * the next publish for long; a publisher whose claim was taken over notices at its next renewal and
 * before its manifest is written, and gives up.
 */
final class PublishClaim {
    static final String OWNER_KEY = "stitch-owner";
    private static final Logger LOG = LoggerFactory.getLogger(PublishClaim.class);

    private final ObjectStore store;
    private final String key;
    private final String owner;
    private final long version;
    private volatile String etag;
    private volatile boolean lost;
    private ScheduledFuture<?> renewal;

    private PublishClaim(ObjectStore store, String key, String owner, long version, String etag) {
        this.store = store;
        this.key = key;
        this.owner = owner;
        this.version = version;
        this.etag = etag;
    }

    static String key(long version) {
        return FilesystemBulletinBoard.VERSIONS_DIR + "/." + WeightIdentity.format(version) + RemotePublisher.CLAIM_SUFFIX;
    }

    /**
     * Takes the claim on {@code version}, waiting up to {@code wait} for a live holder to finish.
     *
     * @throws BoardLockedException when another live publisher still holds it after {@code wait}
     */
    static PublishClaim take(ObjectStore store, String owner, String runId, long version, Duration stale, Duration wait,
                             ScheduledExecutorService scheduler) throws IOException {
        String key = key(version);
        long deadline = System.nanoTime() + wait.toNanos();
        for (int attempt = 1; ; attempt++) {
            try {
                ObjectInfo created = store.create(key, body(owner, runId, version), Map.of(OWNER_KEY, owner));
                return started(store, key, owner, version, created.etag(), stale, scheduler);
            } catch (PreconditionFailedException held) {
                Optional<ObjectInfo> info = store.stat(key);
                if (info.isEmpty()) {
                    continue;
                }
                ObjectInfo o = info.get();
                String holder = o.metadata().getOrDefault(OWNER_KEY, "an unknown publisher");
                Duration age = o.lastModified() == null ? Duration.ZERO : Duration.between(o.lastModified(), Instant.now());
                if (holder.equals(owner) || age.compareTo(stale) > 0) {
                    try {
                        ObjectInfo taken = store.replace(key, body(owner, runId, version), o.etag());
                        if (!holder.equals(owner)) {
                            LOG.warn("took over the claim on version {} from {}, which had not renewed it for {} s",
                                    version, holder, age.toSeconds());
                        }
                        return started(store, key, owner, version, taken.etag(), stale, scheduler);
                    } catch (PreconditionFailedException raced) {
                        continue;
                    }
                }
                if (System.nanoTime() > deadline) {
                    throw new BoardLockedException("version " + version + " is being published by " + holder
                            + " (its claim " + key + " was renewed " + age.toSeconds() + " s ago; a claim not renewed for "
                            + stale.toSeconds() + " s is taken over)");
                }
                sleep(Math.min(1000, 50L << Math.min(attempt, 5)));
            }
        }
    }

    private static PublishClaim started(ObjectStore store, String key, String owner, long version, String etag,
                                        Duration stale, ScheduledExecutorService scheduler) {
        PublishClaim c = new PublishClaim(store, key, owner, version, etag);
        long period = Math.max(1, stale.toMillis() / 3);
        c.renewal = scheduler.scheduleWithFixedDelay(c::renew, period, period, TimeUnit.MILLISECONDS);
        return c;
    }

    private void renew() {
        if (lost) {
            return;
        }
        try {
            etag = store.replace(key, body(owner, null, version), etag).etag();
        } catch (PreconditionFailedException e) {
            lost = true;
            LOG.warn("the claim on version {} was taken over by another publisher; this publish will give up", version);
        } catch (IOException e) {
            LOG.warn("could not renew the claim on version {} (will try again): {}", version, e.getMessage());
        }
    }

    /** Whether this publisher still holds the claim (as far as its last renewal knows). */
    boolean held() {
        return !lost;
    }

    /** Fails when another publisher took the claim over (this one stalled past the stale age). */
    void ensureHeld() throws PointerConflictException {
        if (lost) {
            throw new PointerConflictException("the claim on version " + version + " was taken over by another publisher "
                    + "while this one stalled; this publish is fenced out");
        }
    }

    /** Stops renewing and deletes the claim; a failure to delete only leaves a claim that goes stale. */
    void release() {
        if (renewal != null) {
            renewal.cancel(false);
        }
        if (lost) {
            return;
        }
        try {
            store.delete(key);
        } catch (IOException e) {
            LOG.warn("could not delete the claim {} (it goes stale and is taken over or collected): {}", key, e.getMessage());
        }
    }

    private static byte[] body(String owner, String runId, long version) {
        ObjectNode o = JsonNodeFactory.instance.objectNode();
        o.put("owner", owner);
        o.put("version", version);
        if (runId != null) {
            o.put("run_id", runId);
        }
        o.put("renewed_at", Instant.now().toEpochMilli() / 1000.0);
        return CanonicalJson.toBytes(o);
    }

    private static void sleep(long millis) throws InterruptedIOException {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted waiting for a publish claim");
        }
    }
}
