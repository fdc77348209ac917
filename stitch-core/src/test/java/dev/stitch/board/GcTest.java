package dev.stitch.board;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.protocol.ArtifactKind;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.LongStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** docs/conformance.md case 17 and the orphan handling of 2.3. */
class GcTest {
    @TempDir
    Path tmp;

    /** A clock the test moves by hand. */
    static final class ManualClock implements InstantSource {
        final AtomicLong millis = new AtomicLong(System.currentTimeMillis());

        @Override
        public Instant instant() {
            return Instant.ofEpochMilli(millis.get());
        }

        void advanceSeconds(long s) {
            millis.addAndGet(s * 1000);
        }
    }

    private final ManualClock clock = new ManualClock();

    private FilesystemBulletinBoard board(String run, long... anchors) throws IOException {
        FilesystemBulletinBoard b = FilesystemBulletinBoard.create(tmp, run, BoardOptions.defaults().withClock(clock));
        for (long v = 1; v <= 10; v++) {
            final long version = v;
            if (LongStream.of(anchors).anyMatch(a -> a == version)) {
                FilesystemBulletinBoardTest.publishAnchor(b, run, v);
            } else {
                FilesystemBulletinBoardTest.publish(b, run, v, "v" + v);
            }
        }
        return b;
    }

    private List<Long> present() throws IOException {
        return LongStream.rangeClosed(1, 10).filter(v -> Files.exists(tmp.resolve("versions/" + dev.stitch.protocol.WeightIdentity.format(v))))
                .boxed().toList();
    }

    @Test
    void keepsTheNewestAnchorAndEverythingAfterIt() throws IOException {
        FilesystemBulletinBoard b = board("r", 4, 8);
        assertEquals(List.of(), b.gc(2, 600).deletedVersions(), "min_age_s protects young versions");
        clock.advanceSeconds(1000);
        GcReport report = b.gc(5, 600);
        assertEquals(8, report.anchor());
        assertEquals(List.of(1L, 2L, 3L, 4L, 5L), report.deletedVersions());
        assertEquals(List.of(6L, 7L, 8L, 9L, 10L), present());
        report = b.gc(0, 600);
        assertEquals(List.of(6L, 7L), report.deletedVersions());
        assertEquals(List.of(8L, 9L, 10L), present());
        assertEquals(List.of(), b.gc(0, 0).deletedVersions(), "the newest anchor and what follows stay");
        assertEquals(10, b.readLatest().version());
        for (long v = 8; v <= 10; v++) {
            b.verifyArtifacts(b.readManifest(v), true);
        }
        assertEquals(java.util.OptionalLong.of(8), b.newestAnchorAtOrBelow(10));
        assertThrows(java.nio.file.NoSuchFileException.class, () -> b.readManifest(3));
    }

    @Test
    void withoutAnAnchorNothingIsDeleted() throws IOException {
        FilesystemBulletinBoard b = board(null);
        clock.advanceSeconds(100_000);
        GcReport report = b.gc(1, 0);
        assertEquals(0, report.anchor());
        assertEquals(List.of(), report.deletedVersions());
        assertEquals(10, present().size());
    }

    @Test
    void removesLeftoversOtherRunsAndOldArchives() throws IOException {
        FilesystemBulletinBoard b = board("r", 6);
        Path versions = tmp.resolve("versions");
        Files.createDirectories(versions.resolve(".weight_v000011.0123456789abcdef.staging"));
        Files.createDirectories(versions.resolve(".weight_v000005.0123456789abcdef.orphan"));
        Files.createDirectories(versions.resolve("weight_v000012"));
        Files.writeString(tmp.resolve(".latest.json.0123456789abcdef.tmp"), "{");
        // a version directory of another run that was never archived
        Path foreign = versions.resolve("weight_v000002");
        Files.writeString(foreign.resolve("manifest.json"), "{\"version\": 2, \"base_version\": 1, \"run_id\": \"old\", \"created_at\": 1.0}");
        Files.createDirectories(tmp.resolve("archive/ancient/weight_v000001"));
        GcReport young = b.gc(100, 600);
        assertEquals(List.of(2L), young.deletedVersions(), "other-run directories go regardless of keep");
        assertTrue(young.removedPaths().isEmpty(), "leftovers younger than the grace periods stay: " + young.removedPaths());
        assertEquals(4, b.leftovers().size(), b.leftovers().toString());
        clock.advanceSeconds(2 * 86400);
        GcReport old = b.gc(100, 600);
        assertTrue(old.removedPaths().containsAll(List.of("versions/.weight_v000011.0123456789abcdef.staging",
                "versions/.weight_v000005.0123456789abcdef.orphan", "versions/weight_v000012",
                ".latest.json.0123456789abcdef.tmp", "archive/ancient/weight_v000001")), old.removedPaths().toString());
        assertFalse(Files.exists(tmp.resolve("archive/ancient")));
        assertTrue(b.leftovers().isEmpty());
        assertEquals(10, b.readLatest().version());
    }

    @Test
    void halfDeletedVersionReadsAsMissing() throws IOException {
        FilesystemBulletinBoard b = board("r", 5);
        clock.advanceSeconds(1000);
        Files.delete(tmp.resolve("versions/weight_v000002/manifest.json"));
        assertThrows(java.nio.file.NoSuchFileException.class, () -> b.readManifest(2));
        assertEquals(List.of(1L, 2L, 3L, 4L), b.gc(0, 0).deletedVersions());
    }

    @Test
    void discardOrphan() throws IOException {
        FilesystemBulletinBoard b = FilesystemBulletinBoard.create(tmp, "r", BoardOptions.defaults().withClock(clock));
        FilesystemBulletinBoardTest.publish(b, "r", 1, "one");
        Path versions = tmp.resolve("versions");
        Files.createDirectories(versions.resolve("weight_v000002/full"));
        Files.writeString(versions.resolve("weight_v000002/full/x.safetensors"), "partial");
        Files.createDirectories(versions.resolve(".weight_v000002.00000000000000aa.staging"));
        Files.createDirectories(versions.resolve(".weight_v000003.00000000000000aa.staging"));
        assertThrows(IOException.class, () -> b.discardOrphan(1));
        List<String> removed = b.discardOrphan(2);
        assertEquals(2, removed.size(), removed.toString());
        assertFalse(Files.exists(versions.resolve("weight_v000002")));
        assertTrue(Files.exists(versions.resolve(".weight_v000003.00000000000000aa.staging")));
        try (VersionPublication pub = b.beginPublish("r", 2)) {
            pub.writeArtifact("a", ArtifactKind.TRANSITION, out -> out.write(2));
            pub.commit(ManifestFields.of("stitch_delta", "auto"));
        }
        assertEquals(2, b.readLatest().version());
    }

    /** An orphan version directory (crash between rename and pointer write) is moved aside by the next publish. */
    @Test
    void nextPublishReplacesAnOrphan() throws IOException {
        FilesystemBulletinBoard b = FilesystemBulletinBoard.create(tmp, "r", BoardOptions.defaults().withClock(clock));
        Path orphan = Files.createDirectories(tmp.resolve("versions/weight_v000001"));
        Files.writeString(orphan.resolve("manifest.json"), "{\"version\": 1, \"base_version\": 0, \"run_id\": \"r\"}");
        FilesystemBulletinBoardTest.publish(b, "r", 1, "fresh");
        assertEquals(1, b.readLatest().version());
        assertEquals("fresh", Files.readString(tmp.resolve("versions/weight_v000001/delta-00000.stdelta")));
        List<String> left = b.leftovers();
        assertEquals(1, left.size());
        assertTrue(left.get(0).startsWith("versions/.weight_v000001.") && left.get(0).endsWith(".orphan"), left.toString());
    }
}
