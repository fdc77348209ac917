package dev.stitch.s3;

import dev.stitch.board.BoardAddress;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.ManifestFields;
import dev.stitch.board.PublishingBoard;
import dev.stitch.board.RemoteBoardOptions;
import dev.stitch.board.RemoteBulletinBoard;
import dev.stitch.board.VersionPublication;
import dev.stitch.board.store.ObjectInfo;
import dev.stitch.board.store.ObjectStore;
import dev.stitch.board.store.StoreOptions;
import dev.stitch.hash.Xxh3;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.protocol.Manifest;
import dev.stitch.protocol.WeightIdentity;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * What the board-level S3 tests share: store options that talk to s3proxy with small parts and quick
 * retries, generated artifacts, and publishing a version by hand as a trainer would
 * ({@link VersionPublication#writeArtifact} then {@code commit}).
 */
final class S3Boards {
    /** S3's smallest part, so a file of a few parts is a real multipart upload and a parallel ranged fetch. */
    static final int PART = StoreOptions.MIN_PART_BYTES;
    /** More than two parts: uploaded as three parts, fetched as three ranges. */
    static final int MULTIPART_BYTES = 2 * PART + 12_345;
    static final String RUN = "run-a";
    static final String BIG = "delta-00000.bin";

    private S3Boards() {
    }

    /** Store options for {@code endpoint} (s3proxy or a proxy in front of it): 5 MiB parts, path style, quick backoff. */
    static StoreOptions store(URI endpoint) {
        return StoreOptions.defaults().withPartBytes(PART).withConcurrency(2).withAttempts(4)
                .withBackoff(Duration.ofMillis(1), Duration.ofMillis(10)).withTimeout(Duration.ofSeconds(20))
                .withS3Endpoint(endpoint, true);
    }

    /** A remote board's options: its own cache directory, claims stale after {@code claimStale}. */
    static RemoteBoardOptions remote(Path cache, StoreOptions store, Duration claimStale) {
        return new RemoteBoardOptions(cache, 1L << 30, claimStale, store);
    }

    static RemoteBoardOptions remote(Path cache, StoreOptions store) {
        return remote(cache, store, Duration.ofSeconds(60));
    }

    static BoardAddress address(String bucket, String prefix) {
        return BoardAddress.parse("s3://" + bucket + "/" + prefix);
    }

    /** Creates the board (pointer at version 0 of {@link #RUN}) and opens it. */
    static RemoteBulletinBoard create(BoardAddress address, BoardOptions options, RemoteBoardOptions remote) throws IOException {
        return RemoteBulletinBoard.create(address, RUN, options, remote);
    }

    /** {@code n} bytes that depend on {@code seed}. */
    static byte[] bytes(long seed, int n) {
        byte[] b = new byte[n];
        new SplittableRandom(seed).nextBytes(b);
        return b;
    }

    /** The artifacts of an ordinary delta version {@code v}: a multipart-sized payload and a small index. */
    static Map<String, byte[]> delta(long v, int payloadBytes) {
        Map<String, byte[]> files = new LinkedHashMap<>();
        files.put(BIG, bytes(v, payloadBytes));
        files.put("delta-00000.idx", bytes(1000 + v, 4096));
        return files;
    }

    /** Artifacts under {@code full/} are full (they make the version an anchor), {@code .idx} files transition meta. */
    static ArtifactKind kindOf(String path) {
        if (path.startsWith("full/")) {
            return ArtifactKind.FULL;
        }
        return path.endsWith(".idx") ? ArtifactKind.TRANSITION_META : ArtifactKind.TRANSITION;
    }

    /** Publishes {@code version} of {@link #RUN} with {@code files}, in order; returns the committed manifest. */
    static Manifest publish(PublishingBoard board, long version, Map<String, byte[]> files) throws IOException {
        try (VersionPublication pub = board.beginPublish(RUN, version)) {
            for (var f : files.entrySet()) {
                pub.writeArtifact(f.getKey(), kindOf(f.getKey()), out -> out.write(f.getValue()));
            }
            return pub.commit(ManifestFields.of("stitch_delta", "auto"));
        }
    }

    /** The {@code manifest_checksum} a pointer to {@code manifest} carries: the hash of its canonical bytes. */
    static String checksumOf(Manifest manifest) {
        return Artifact.XXH3_PREFIX + Xxh3.hash128(manifest.toBytes()).hex();
    }

    /** {@code versions/weight_vNNNNNN/<rel>}: the board-relative key of a version's file. */
    static String key(long version, String rel) {
        return "versions/" + WeightIdentity.format(version) + "/" + rel;
    }

    /** A whole object of any size, through ranged reads. */
    static byte[] readObject(ObjectStore store, String key) throws IOException {
        ObjectInfo info = store.stat(key).orElseThrow(() -> new IOException(key + " is not on " + store.location()));
        ByteArrayOutputStream out = new ByteArrayOutputStream((int) info.size());
        if (info.size() > 0) {
            store.readRange(key, 0, info.size(), info.etag(), chunk -> {
                byte[] b = new byte[chunk.remaining()];
                chunk.get(b);
                out.write(b, 0, b.length);
            });
        }
        return out.toByteArray();
    }

    /** Every file under {@code dir}, by its {@code /}-separated path relative to it. */
    static Map<String, Path> filesUnder(Path dir) throws IOException {
        Map<String, Path> out = new LinkedHashMap<>();
        try (var walk = Files.walk(dir)) {
            for (Path p : walk.filter(Files::isRegularFile).sorted().toList()) {
                out.put(dir.relativize(p).toString().replace('\\', '/'), p);
            }
        }
        return out;
    }
}
