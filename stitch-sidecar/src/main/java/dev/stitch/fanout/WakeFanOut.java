package dev.stitch.fanout;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.stitch.board.store.ObjectInfo;
import dev.stitch.board.store.ObjectStore;
import dev.stitch.board.store.ObjectStores;
import dev.stitch.board.store.StoreOptions;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.protocol.Manifest;
import dev.stitch.protocol.WeightIdentity;
import dev.stitch.publish.WakeNotifier;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fan-out endpoint of a rollout datacenter (docs/protocol/board.md §7.7, §7.8): the publisher wakes
 * this one URL across the link; it first reads the new version's delta files once through the
 * datacenter's cache, so they are cached, then wakes every sidecar. The sidecars then fetch from a
 * warm cache all at once instead of queueing on the cache's lock for the first fetch (nginx re-checks
 * a waiting request only every 500 ms), so the last host serves soon after the first. A failed warm-up
 * still wakes the sidecars: the wake is a hint and they read the board themselves.
 */
public final class WakeFanOut implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WakeFanOut.class);
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long MAX_MANIFEST_BYTES = 64L << 20;

    private final HttpServer server;
    private final ObjectStore cache;
    private final WakeNotifier sidecars;
    private final byte[] token;
    private final StoreOptions store;
    private final ExecutorService work = Executors.newVirtualThreadPerTaskExecutor();
    private final AtomicLong warmedBytes = new AtomicLong();
    private final AtomicLong wakes = new AtomicLong();

    /**
     * @param listen      where the publisher's notification arrives
     * @param board       the board as the sidecars read it (the cache's URL)
     * @param sidecarUrls the sidecars' base URLs
     * @param token       the bearer token a notification must carry (null: none required)
     * @param sidecarToken the bearer token sent to the sidecars (null: none)
     */
    public WakeFanOut(InetSocketAddress listen, URI board, List<URI> sidecarUrls, String token, String sidecarToken,
                      StoreOptions store) throws IOException {
        this.store = store;
        this.cache = ObjectStores.open(board, store);
        this.sidecars = new WakeNotifier(sidecarUrls, sidecarToken, WakeNotifier.DEFAULT_TIMEOUT);
        this.token = token == null ? null : ("Bearer " + token).getBytes(StandardCharsets.UTF_8);
        this.server = HttpServer.create(listen, 256);
        server.createContext(WakeNotifier.SYNC_ROUTE, this::handle);
        server.setExecutor(work);
        server.start();
    }

    /** The bound port. */
    public int port() {
        return server.getAddress().getPort();
    }

    /** Bytes read through the cache to warm it. */
    public long warmedBytes() {
        return warmedBytes.get();
    }

    /** Notifications fanned out. */
    public long wakes() {
        return wakes.get();
    }

    private void handle(HttpExchange ex) throws IOException {
        try (ex) {
            if (!ex.getRequestMethod().equals("POST")) {
                ex.sendResponseHeaders(405, -1);
                return;
            }
            String auth = ex.getRequestHeaders().getFirst("Authorization");
            if (token != null && (auth == null || !MessageDigest.isEqual(token, auth.getBytes(StandardCharsets.UTF_8)))) {
                ex.sendResponseHeaders(401, -1);
                return;
            }
            byte[] body = ex.getRequestBody().readNBytes(4096);
            long version = -1;
            try {
                JsonNode n = body.length == 0 ? null : JSON.readTree(body);
                if (n != null && n.path("target_version").canConvertToLong()) {
                    version = n.path("target_version").asLong();
                }
            } catch (IOException malformed) {
                ex.sendResponseHeaders(400, -1);
                return;
            }
            long v = version;
            work.submit(() -> warmThenWake(v));
            ex.sendResponseHeaders(202, -1);
        }
    }

    private void warmThenWake(long version) {
        if (version > 0) {
            long t0 = System.nanoTime();
            try {
                long bytes = warm(version);
                LOG.info("warmed version {} in the cache: {} bytes in {} ms", version, bytes, (System.nanoTime() - t0) / 1_000_000);
            } catch (IOException | RuntimeException e) {
                LOG.warn("could not warm version {} in the cache (waking the sidecars anyway): {}", version, e.getMessage());
            }
        }
        wakes.incrementAndGet();
        sidecars.published(Math.max(version, 0));
    }

    /** Reads every delta file of {@code version} once through the cache, discarding the bytes. */
    private long warm(long version) throws IOException {
        String dir = "versions/" + WeightIdentity.format(version) + "/";
        Manifest m = Manifest.parse(cache.read(dir + Manifest.FILE_NAME, null, MAX_MANIFEST_BYTES).bytes(), dir + Manifest.FILE_NAME);
        List<Future<Long>> parts = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(store.concurrency(), Thread.ofVirtual().factory())) {
            for (Artifact a : m.artifacts()) {
                // replaying hosts fetch the transition files; anchors are warmed by whoever needs them
                if (a.is(ArtifactKind.FULL) || Artifact.pathProblem(a.path()) != null) {
                    continue;
                }
                String key = dir + a.path();
                ObjectInfo info = cache.stat(key).orElseThrow(() -> new IOException(key + " is not on the board"));
                for (long off = 0; off < info.size(); off += store.partBytes()) {
                    long offset = off;
                    long length = Math.min(store.partBytes(), info.size() - off);
                    parts.add(pool.submit(() -> {
                        AtomicLong n = new AtomicLong();
                        cache.readRange(key, offset, length, info.etag(), chunk -> n.addAndGet(chunk.remaining()));
                        return n.get();
                    }));
                }
            }
            long total = 0;
            for (Future<Long> f : parts) {
                try {
                    total += f.get();
                } catch (java.util.concurrent.ExecutionException e) {
                    throw e.getCause() instanceof IOException io ? io : new IOException(e.getCause());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new java.io.InterruptedIOException("interrupted warming version " + version);
                }
            }
            warmedBytes.addAndGet(total);
            return total;
        }
    }

    @Override
    public void close() throws IOException {
        server.stop(0);
        work.shutdownNow();
        sidecars.close();
        cache.close();
    }
}
