package dev.stitch.publish;

import static dev.stitch.publish.PublisherFixtures.applyChain;
import static dev.stitch.publish.PublisherFixtures.bytes;
import static dev.stitch.publish.PublisherFixtures.copyDir;
import static dev.stitch.publish.PublisherFixtures.model;
import static dev.stitch.publish.PublisherFixtures.readCheckpoint;
import static dev.stitch.publish.PublisherFixtures.step;
import static dev.stitch.publish.PublisherFixtures.withBits16;
import static dev.stitch.publish.PublisherFixtures.writeCheckpoint;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.encode.TensorData;
import dev.stitch.format.DeltaFormat;
import dev.stitch.format.disk.DiskDeltaIndex;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.protocol.Manifest;
import dev.stitch.safetensors.Checkpoint;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Versions that must be full on the interop formats (docs/formats/sparse-delta.md §2.8, docs/formats/disk-delta.md §3.5, docs/formats/anchors-and-fallback.md §6): disk_delta writes
 * them as the version directory slime v2 receivers take as a reset; sparse_delta refuses them unless
 * the publisher allows it, since upstream v1 consumers would mark them applied without loading them.
 */
class FullFallbackInteropTest {

    private static final String EMBED = "model.embed_tokens.weight";
    /** A quiet NaN in bf16. */
    private static final short BF16_NAN = (short) 0x7FC0;

    @TempDir
    Path tmp;

    /** The three layout changes of docs/formats/common.md §1.6, each applied to a model. */
    private static Map<String, UnaryOperator<List<TensorData>>> layoutChanges() {
        return Map.of(
                "reshaped", w -> {
                    List<TensorData> out = new ArrayList<>(w);
                    TensorData t = out.getFirst();
                    long[] s = t.spec().shape();
                    out.set(0, new TensorData(new TensorSpec(t.name(), t.spec().dtype(), new long[] {s[1], s[0]}), t.bytes()));
                    return out;
                },
                "added", w -> {
                    List<TensorData> out = new ArrayList<>(w);
                    out.add(new TensorData(new TensorSpec("model.layers.1.input_layernorm.weight", Dtype.F32, new long[] {48}),
                            PublisherFixtures.segment(new byte[4 * 48])));
                    return out;
                },
                "removed", w -> new ArrayList<>(w.subList(0, w.size() - 1)));
    }

    @Test
    void diskDeltaPublishesALayoutChangeAsAResetVersionDirectory() throws Exception {
        for (Map.Entry<String, UnaryOperator<List<TensorData>>> change : layoutChanges().entrySet()) {
            String label = change.getKey();
            List<TensorData> v0 = model(31);
            Path baseDir = writeCheckpoint(tmp.resolve(label + "-base"), v0);
            FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp.resolve(label + "-board"));
            List<TensorData> v1 = step(v0, 0.02, 32);
            List<TensorData> v2 = change.getValue().apply(step(v1, 0.02, 33));
            List<TensorData> v3 = step(v2, 0.02, 34);
            try (WeightPublisher p = WeightPublisher.builder().board(board).runId("run-a").anchorInterval(0)
                    .backends(DeltaFormat.DISK_DELTA, DeltaFormat.FULL).seedFrom(baseDir).build()) {
                assertEquals("disk_delta", p.publish(1, Weights.of(v1)).backend(), label);
                PublishResult r2 = p.publish(2, Weights.of(v2));
                assertEquals("full", r2.backend(), label);
                assertTrue(r2.fallbackReason().contains("layout change"), r2.fallbackReason());
                assertEquals("disk_delta", p.publish(3, Weights.of(v3)).backend(), label + ": the snapshot took the new layout");
            }

            Path dir = board.versionDirectory(2);
            assertFalse(Files.exists(dir.resolve("full")), label + ": nothing under full/");
            assertTrue(Files.isRegularFile(dir.resolve(Checkpoint.INDEX)), label + ": a top-level index");
            assertFalse(DiskDeltaIndex.isDelta(dir), label + ": an index without delta_encoding is a full checkpoint");
            try (Stream<Path> s = Files.list(dir)) {
                List<String> shards = s.map(f -> f.getFileName().toString()).filter(n -> n.endsWith(".safetensors")).sorted().toList();
                assertEquals(List.of("model-00001-of-00001.safetensors"), shards, label);
            }
            Map<String, byte[]> asServed = readCheckpoint(dir);
            assertCheckpointEquals(v2, asServed, label + ": what a slime v2 receiver copies");

            Manifest m2 = board.readManifest(2);
            assertEquals("full", m2.backend());
            assertEquals("auto", m2.loadFormat());
            assertTrue(m2.transitionFiles().isEmpty());
            assertTrue(m2.isAnchor());
            assertEquals(List.of("model-00001-of-00001.safetensors", Checkpoint.INDEX),
                    m2.artifactsOf(ArtifactKind.FULL).stream().map(Artifact::path).sorted().toList());
            assertEquals(v2.size(), m2.transitionWeights().size());
            board.verifyArtifacts(m2, true);

            Path local = copyDir(baseDir, tmp.resolve(label + "-local"));
            applyChain(board, local, 3);
            assertCheckpointEquals(v3, readCheckpoint(local), label + ": host apply through the reset");
            assertFalse(Files.exists(local.resolve(Manifest.FILE_NAME)), label + ": the board's manifest is not a weight file");
        }
    }

    @Test
    void diskDeltaCarriesANaNChangeAsADelta() throws Exception {
        List<TensorData> v0 = model(41);
        Path baseDir = writeCheckpoint(tmp.resolve("base"), v0);
        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp.resolve("board"));
        List<TensorData> v1 = withBits16(step(v0, 0.02, 42), EMBED, 17, BF16_NAN);
        try (WeightPublisher p = WeightPublisher.builder().board(board).anchorInterval(0)
                .backends(DeltaFormat.DISK_DELTA, DeltaFormat.FULL).seedFrom(baseDir).build()) {
            PublishResult r = p.publish(1, Weights.of(v1));
            assertEquals("disk_delta", r.backend(), "disk_delta payloads are bytes: a NaN needs no fallback");
            assertNull(r.fallbackReason());
            assertFalse(r.anchor());
        }
        Path local = copyDir(baseDir, tmp.resolve("local"));
        applyChain(board, local, 1);
        assertCheckpointEquals(v1, readCheckpoint(local), "the NaN arrives");
    }

    @Test
    void sparseDeltaRefusesAFullVersionForALayoutChangeUnlessAllowed() throws Exception {
        for (Map.Entry<String, UnaryOperator<List<TensorData>>> change : layoutChanges().entrySet()) {
            String label = change.getKey();
            List<TensorData> v0 = model(51);
            List<TensorData> v1 = step(v0, 0.02, 52);
            List<TensorData> v2 = change.getValue().apply(step(v1, 0.02, 53));
            FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp.resolve(label + "-refused"));
            try (WeightPublisher p = WeightPublisher.builder().board(board).anchorInterval(0)
                    .backends(DeltaFormat.SPARSE_DELTA, DeltaFormat.FULL).seed(Weights.of(v0)).build()) {
                p.publish(1, Weights.of(v1));
                String durable = p.snapshotDigest();
                FullFallbackRefusedException e = assertThrows(FullFallbackRefusedException.class,
                        () -> p.publish(2, Weights.of(v2)), label);
                assertEquals(2, e.version());
                String layoutTensor = label.equals("added") ? "model.layers.1.input_layernorm.weight"
                        : label.equals("removed") ? v0.getLast().name() : v0.getFirst().name();
                assertTrue(e.getMessage().contains("layout change") && e.getMessage().contains(layoutTensor)
                        && e.getMessage().contains(label.equals("reshaped") ? "changed" : label), e.getMessage());
                assertRefusalNamesTheOption(e);
                assertEquals(1, board.readLatest().version(), label + ": nothing published");
                assertEquals(durable, p.snapshotDigest(), label + ": the snapshot stays at the last version");
                assertEquals("sparse_delta", p.publish(2, Weights.of(step(v1, 0.02, 54))).backend(),
                        label + ": the next publish diffs against version 1");
            }
            FilesystemBulletinBoard allowedBoard = FilesystemBulletinBoard.open(tmp.resolve(label + "-allowed"));
            try (WeightPublisher p = WeightPublisher.builder().board(allowedBoard).anchorInterval(0).allowFullFallback(true)
                    .backends(DeltaFormat.SPARSE_DELTA, DeltaFormat.FULL).seed(Weights.of(v0)).build()) {
                p.publish(1, Weights.of(v1));
                PublishResult r = p.publish(2, Weights.of(v2));
                assertEquals("full", r.backend(), label);
                assertFullVersionUnderAnchorDirectory(allowedBoard, 2, v2);
            }
        }
    }

    @Test
    void sparseDeltaRefusesAFullVersionForANaNChangeUnlessAllowed() throws Exception {
        List<TensorData> v0 = model(61);
        List<TensorData> v1 = withBits16(step(v0, 0.02, 62), EMBED, 17, BF16_NAN);
        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp.resolve("refused"));
        try (WeightPublisher p = WeightPublisher.builder().board(board).anchorInterval(0)
                .backends(DeltaFormat.SPARSE_DELTA, DeltaFormat.FULL).seed(Weights.of(v0)).build()) {
            FullFallbackRefusedException e = assertThrows(FullFallbackRefusedException.class, () -> p.publish(1, Weights.of(v1)));
            assertTrue(e.getMessage().contains(EMBED) && e.getMessage().contains("NaN"), e.getMessage());
            assertTrue(e.reason().contains("element 17"), e.reason());
            assertRefusalNamesTheOption(e);
            assertEquals(0, board.readLatest().version());
            try (Stream<Path> s = Files.list(board.root().resolve("versions"))) {
                assertEquals(0, s.count(), "no staging directory left behind");
            }
        }
        FilesystemBulletinBoard allowedBoard = FilesystemBulletinBoard.open(tmp.resolve("allowed"));
        try (WeightPublisher p = WeightPublisher.builder().board(allowedBoard).anchorInterval(0).allowFullFallback(true)
                .backends(DeltaFormat.SPARSE_DELTA, DeltaFormat.FULL).seed(Weights.of(v0)).build()) {
            PublishResult r = p.publish(1, Weights.of(v1));
            assertEquals("full", r.backend());
            assertTrue(r.fallbackReason().contains("NaN"), r.fallbackReason());
            assertFullVersionUnderAnchorDirectory(allowedBoard, 1, v1);
        }
    }

    private static void assertRefusalNamesTheOption(FullFallbackRefusedException e) {
        assertTrue(e.getMessage().contains("sparse_delta"), e.getMessage());
        assertTrue(e.getMessage().contains("allowFullFallback(true)") && e.getMessage().contains("--allow-full-fallback"),
                e.getMessage());
    }

    /** A full version written as today: the checkpoint under full/, as anchors are. */
    private static void assertFullVersionUnderAnchorDirectory(FilesystemBulletinBoard board, long v, List<TensorData> weights)
            throws Exception {
        Manifest m = board.readManifest(v);
        assertEquals("full", m.backend());
        assertTrue(m.artifactsOf(ArtifactKind.FULL).stream().allMatch(a -> a.path().startsWith("full/")));
        board.verifyArtifacts(m, true);
        assertCheckpointEquals(weights, readCheckpoint(board.versionDirectory(v).resolve("full")), "full/ of version " + v);
    }

    private static void assertCheckpointEquals(List<TensorData> expected, Map<String, byte[]> actual, String what) {
        Map<String, byte[]> want = bytes(expected);
        assertEquals(want.keySet().stream().sorted().toList(), actual.keySet().stream().sorted().toList(), what);
        for (String name : want.keySet()) {
            assertArrayEquals(want.get(name), actual.get(name), what + ": " + name);
        }
    }
}
