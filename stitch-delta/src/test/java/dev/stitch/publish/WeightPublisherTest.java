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
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.board.AtomicFiles;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.board.PointerRewindException;
import dev.stitch.encode.TensorData;
import dev.stitch.encode.ValueMode;
import dev.stitch.format.DeltaFormat;
import dev.stitch.format.sparse.SparseEncoding;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.tensor.TensorSpec;
import dev.stitch.digest.WeightsDigest;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class WeightPublisherTest {

    @TempDir
    Path tmp;

    /** One backend configuration of the publisher. */
    private record Config(String label, DeltaFormat backend, Consumer<WeightPublisher.Builder> setup, String encoding) {
    }

    private static List<Config> configs() {
        return List.of(
                new Config("stitch_delta xor", DeltaFormat.STITCH_DELTA, b -> b.values(ValueMode.XOR), "stitch-delta-1"),
                new Config("stitch_delta overwrite", DeltaFormat.STITCH_DELTA, b -> b.values(ValueMode.OVERWRITE), "stitch-delta-1"),
                new Config("sparse_delta indices", DeltaFormat.SPARSE_DELTA, b -> b.sparseEncoding(SparseEncoding.INDICES), "indices"),
                new Config("sparse_delta deltas", DeltaFormat.SPARSE_DELTA, b -> b.sparseEncoding(SparseEncoding.DELTAS), "deltas"),
                new Config("sparse_delta deltas_zstd", DeltaFormat.SPARSE_DELTA,
                        b -> b.sparseEncoding(SparseEncoding.DELTAS_ZSTD).bucketBytes(4096), "deltas_zstd"),
                new Config("disk_delta xor", DeltaFormat.DISK_DELTA, b -> b.diskEncoding(ValueMode.XOR), "xor"),
                new Config("disk_delta overwrite", DeltaFormat.DISK_DELTA, b -> b.diskEncoding(ValueMode.OVERWRITE), "overwrite"),
                new Config("full", DeltaFormat.FULL, b -> { }, null));
    }

    @Test
    void everyBackendPublishesVersionsThatHostApplyToTheTrainerWeights() throws Exception {
        List<TensorData> v0 = model(1);
        Path baseDir = writeCheckpoint(tmp.resolve("base"), v0);
        List<List<TensorData>> versions = new ArrayList<>();
        List<TensorData> cur = v0;
        for (int v = 1; v <= 3; v++) {
            cur = step(cur, v == 2 ? 0.0 : 0.03, 100 + v);
            versions.add(cur);
        }
        for (Config c : configs()) {
            Path root = tmp.resolve("board-" + c.label().replace(' ', '-'));
            FilesystemBulletinBoard board = FilesystemBulletinBoard.open(root);
            WeightPublisher.Builder b = WeightPublisher.builder().board(board).runId("run-a")
                    .backends(c.backend() == DeltaFormat.FULL ? List.of(DeltaFormat.FULL) : List.of(c.backend(), DeltaFormat.FULL))
                    .anchorInterval(0).threads(2).recordWeightsDigest(true).seedFrom(baseDir);
            c.setup().accept(b);
            try (WeightPublisher p = b.build()) {
                for (int v = 1; v <= 3; v++) {
                    List<TensorData> w = versions.get(v - 1);
                    PublishResult r = p.publish(v, Weights.of(w));
                    assertEquals(c.backend().id(), r.backend(), c.label());
                    assertEquals(c.encoding(), r.encoding(), c.label());
                    assertNull(r.fallbackReason(), c.label());
                    assertEquals(WeightsDigest.of(Weights.of(w).segments()), r.weightsDigest());
                    assertEquals(r.weightsDigest(), p.snapshotDigest(), "snapshot advanced to the published weights");
                    Manifest m = board.readManifest(v);
                    assertEquals(c.backend().id(), m.backend());
                    assertEquals(v - 1, m.baseVersion());
                    assertEquals("run-a", m.runId());
                    assertEquals(WeightPublisher.PUBLISHER_ID, m.metadata().get("publisher").textValue());
                    assertEquals(r.weightsDigest(), m.metadata().get("weights_digest").textValue());
                    board.verifyArtifacts(m, true);
                    if (c.backend() == DeltaFormat.FULL) {
                        assertTrue(m.transitionFiles().isEmpty());
                        assertTrue(m.isAnchor());
                    } else {
                        assertEquals(c.encoding(), m.deltaEncoding());
                        assertFalse(m.isAnchor());
                        if (v == 2) {
                            assertEquals(0, r.changedElements(), "version 2 changes nothing");
                            assertTrue(m.transitionFiles().isEmpty() || c.backend() == DeltaFormat.DISK_DELTA);
                            assertTrue(m.transitionWeights().isEmpty());
                        } else {
                            assertTrue(r.changedElements() > 0);
                            assertFalse(m.transitionFiles().isEmpty());
                            assertEquals(r.changedTensors(), m.transitionWeights().size());
                        }
                    }
                    if (c.backend() == DeltaFormat.SPARSE_DELTA) {
                        assertEquals("delta", m.loadFormat());
                        assertEquals(c.encoding().equals("deltas_zstd") ? "zstd" : null, m.compressionFormat());
                    } else {
                        assertEquals("auto", m.loadFormat());
                    }
                }
                LatestPointer latest = board.readLatest();
                assertEquals(3, latest.version());
                assertEquals("run-a", latest.runId());
            }
            Path local = copyDir(baseDir, tmp.resolve("local-" + c.label().replace(' ', '-')));
            applyChain(board, local, 3);
            Map<String, byte[]> applied = readCheckpoint(local);
            Map<String, byte[]> expected = bytes(versions.get(2));
            assertEquals(expected.keySet(), applied.keySet(), c.label());
            for (String name : expected.keySet()) {
                assertArrayEquals(expected.get(name), applied.get(name), c.label() + ": " + name);
            }
            try (Weights w = CheckpointWeights.open(local)) {
                assertEquals(WeightsDigest.of(Weights.of(versions.get(2)).segments()), w.digest(), c.label());
            }
        }
    }

    @Test
    void oneAndSeveralThreadsPublishTheSameBytes() throws Exception {
        List<TensorData> v0 = model(7);
        List<TensorData> v1 = step(v0, 0.03, 71);
        List<TensorData> v2 = step(v1, 0.4, 72);
        for (DeltaFormat backend : List.of(DeltaFormat.STITCH_DELTA, DeltaFormat.DISK_DELTA)) {
            Map<String, byte[]> reference = null;
            for (int threads : new int[] {1, 2, 3}) {
                FilesystemBulletinBoard board = FilesystemBulletinBoard.open(
                        tmp.resolve("threads-" + backend.id() + "-" + threads));
                try (WeightPublisher p = WeightPublisher.builder().board(board).backends(backend).anchorInterval(0)
                        .threads(threads).seed(Weights.of(v0)).build()) {
                    p.publish(1, Weights.of(v1));
                    p.publish(2, Weights.of(v2));
                }
                Map<String, byte[]> files = new java.util.TreeMap<>();
                for (long v = 1; v <= 2; v++) {
                    Manifest m = board.readManifest(v);
                    board.verifyArtifacts(m, true);
                    for (String f : m.transitionFiles()) {
                        files.put(v + "/" + f, Files.readAllBytes(board.versionDirectory(v).resolve(f)));
                    }
                }
                assertFalse(files.isEmpty());
                if (reference == null) {
                    reference = files;
                } else {
                    assertEquals(reference.keySet(), files.keySet(), backend + " on " + threads + " threads");
                    for (String f : reference.keySet()) {
                        assertArrayEquals(reference.get(f), files.get(f), backend + " " + f + " on " + threads + " threads");
                    }
                }
            }
        }
    }

    @Test
    void anchorsFollowTheInterval() throws Exception {
        List<TensorData> v0 = model(2);
        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp.resolve("board"));
        try (WeightPublisher p = WeightPublisher.builder().board(board).anchorInterval(2).threads(1)
                .seed(Weights.of(v0)).build()) {
            List<TensorData> cur = v0;
            for (int v = 1; v <= 4; v++) {
                cur = step(cur, 0.02, v);
                PublishResult r = p.publish(v, Weights.of(cur));
                assertEquals(v % 2 == 0, r.anchor());
                assertEquals("stitch_delta", r.backend());
                Manifest m = board.readManifest(v);
                assertEquals(v % 2 == 0, m.isAnchor(), "version " + v);
                assertNull(m.runId(), "run-less board");
                if (m.isAnchor()) {
                    assertTrue(r.fullBytes() > 0);
                    assertTrue(m.artifactsOf(ArtifactKind.FULL).stream().allMatch(a -> a.path().startsWith("full/")));
                    board.verifyArtifacts(m, true);
                    Map<String, byte[]> anchor = readCheckpoint(board.versionDirectory(v).resolve("full"));
                    Map<String, byte[]> expected = bytes(cur);
                    assertEquals(expected.keySet(), anchor.keySet());
                    for (String name : expected.keySet()) {
                        assertArrayEquals(expected.get(name), anchor.get(name), name);
                    }
                }
            }
        }
    }

    @Test
    void aChangedTensorSetPublishesAFullOnlyVersionAndReseeds() throws Exception {
        List<TensorData> v0 = model(3);
        Path baseDir = writeCheckpoint(tmp.resolve("base"), v0);
        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp.resolve("board"));
        List<TensorData> v1 = step(v0, 0.02, 11);
        List<TensorData> v2 = new ArrayList<>(step(v1, 0.02, 12));
        TensorData reshaped = v2.getFirst();
        long[] shape = reshaped.spec().shape();
        v2.set(0, new TensorData(new TensorSpec(reshaped.name(), reshaped.spec().dtype(), new long[] {shape[1], shape[0]}),
                reshaped.bytes()));
        List<TensorData> v3 = step(v2, 0.02, 13);
        try (WeightPublisher p = WeightPublisher.builder().board(board).anchorInterval(0).seedFrom(baseDir).build()) {
            assertEquals("stitch_delta", p.publish(1, Weights.of(v1)).backend());
            PublishResult r2 = p.publish(2, Weights.of(v2));
            assertEquals("full", r2.backend());
            assertTrue(r2.anchor());
            assertTrue(r2.fallbackReason().contains("changed"), r2.fallbackReason());
            Manifest m2 = board.readManifest(2);
            assertEquals("full", m2.backend());
            assertTrue(m2.transitionFiles().isEmpty());
            assertTrue(m2.isAnchor());
            PublishResult r3 = p.publish(3, Weights.of(v3));
            assertEquals("stitch_delta", r3.backend(), "the snapshot was reseeded with the new layout");
            assertTrue(r3.changedElements() > 0 && r3.changedElements() < r3.totalElements() / 10);
        }
        Path local = copyDir(baseDir, tmp.resolve("local"));
        applyChain(board, local, 3);
        Map<String, byte[]> applied = readCheckpoint(local);
        for (Map.Entry<String, byte[]> e : bytes(v3).entrySet()) {
            assertArrayEquals(e.getValue(), applied.get(e.getKey()), e.getKey());
        }
    }

    @Test
    void anUnseededPublisherStartsWithAFullOnlyVersion() throws Exception {
        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp.resolve("board"));
        List<TensorData> v1 = model(4);
        try (WeightPublisher p = WeightPublisher.builder().board(board).build()) {
            PublishResult r1 = p.publish(1, Weights.of(v1));
            assertEquals("full", r1.backend());
            assertTrue(r1.fallbackReason().contains("seed"));
            PublishResult r2 = p.publish(2, Weights.of(step(v1, 0.01, 5)));
            assertEquals("stitch_delta", r2.backend());
        }
    }

    @Test
    void sparseDeltaFallsBackToFullForANaNChange() throws Exception {
        List<TensorData> v0 = model(5);
        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp.resolve("board"));
        List<TensorData> v1 = withBits16(step(v0, 0.02, 6), "model.embed_tokens.weight", 17, (short) 0x7FC0);
        try (WeightPublisher p = WeightPublisher.builder().board(board).anchorInterval(0)
                .backends(DeltaFormat.SPARSE_DELTA, DeltaFormat.DISK_DELTA, DeltaFormat.FULL).seed(Weights.of(v0)).build()) {
            PublishResult r = p.publish(1, Weights.of(v1));
            assertEquals("disk_delta", r.backend(), "NaN cannot be sent as sparse_delta; disk_delta can");
            assertTrue(r.fallbackReason().contains("NaN"), r.fallbackReason());
            assertTrue(board.readManifest(1).metadata().get("fallback_reason").textValue().contains("sparse_delta"));
        }
        try (WeightPublisher p = WeightPublisher.builder().board(FilesystemBulletinBoard.open(tmp.resolve("board2")))
                .anchorInterval(0).backends(DeltaFormat.SPARSE_DELTA, DeltaFormat.FULL).allowFullFallback(true)
                .seed(Weights.of(v0)).build()) {
            PublishResult r = p.publish(1, Weights.of(v1));
            assertEquals("full", r.backend());
            assertTrue(r.anchor());
        }
        try (WeightPublisher p = WeightPublisher.builder().board(FilesystemBulletinBoard.open(tmp.resolve("board3")))
                .anchorInterval(0).backends(DeltaFormat.SPARSE_DELTA).seed(Weights.of(v0)).build()) {
            IOException e = assertThrows(IOException.class, () -> p.publish(1, Weights.of(v1)));
            assertTrue(e.getMessage().contains("no backend"), e.getMessage());
            assertEquals(0, p.board().readLatest().version());
        }
    }

    @Test
    void aFailedPublishLeavesTheSnapshotAtTheLastDurableVersion() throws Exception {
        List<TensorData> v0 = model(6);
        Path baseDir = writeCheckpoint(tmp.resolve("base"), v0);
        for (String failAt : List.of("pointer", "rename")) {
            AtomicBoolean armed = new AtomicBoolean();
            AtomicFiles spy = new AtomicFiles(new AtomicFiles.Observer() {
                @Override
                public void tempCreated(Path temp) {
                    if (failAt.equals("pointer") && temp.getFileName().toString().startsWith(".latest.json")
                            && armed.getAndSet(false)) {
                        throw new UncheckedIOException(new IOException("injected failure before the pointer write"));
                    }
                }

                @Override
                public void renamed(Path from, Path to) {
                    if (failAt.equals("rename") && to.getFileName().toString().startsWith("weight_v")
                            && armed.getAndSet(false)) {
                        throw new UncheckedIOException(new IOException("injected failure after the directory rename"));
                    }
                }
            });
            FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp.resolve("board-" + failAt),
                    BoardOptions.defaults().withFiles(spy));
            List<TensorData> v1 = step(v0, 0.03, 21);
            List<TensorData> v2a = step(v1, 0.03, 22);
            List<TensorData> v2b = step(v1, 0.03, 23);
            try (WeightPublisher p = WeightPublisher.builder().board(board).anchorInterval(0).seedFrom(baseDir).build()) {
                p.publish(1, Weights.of(v1));
                String durable = p.snapshotDigest();
                armed.set(true);
                assertThrows(RuntimeException.class, () -> p.publish(2, Weights.of(v2a)), failAt);
                assertEquals(1, board.readLatest().version(), failAt);
                assertEquals(durable, p.snapshotDigest(), "a failed publish must not advance the snapshot");
                assertEquals(1, p.lastPublishedVersion());
                PublishResult r = p.publish(2, Weights.of(v2b));
                assertEquals(2, r.version());
                assertEquals(2, board.readLatest().version());
            }
            Path local = copyDir(baseDir, tmp.resolve("local-" + failAt));
            applyChain(board, local, 2);
            Map<String, byte[]> applied = readCheckpoint(local);
            for (Map.Entry<String, byte[]> e : bytes(v2b).entrySet()) {
                assertArrayEquals(e.getValue(), applied.get(e.getKey()), failAt + ": " + e.getKey());
            }
        }
    }

    @Test
    void aRefusedVersionNumberChangesNothing() throws Exception {
        List<TensorData> v0 = model(7);
        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp.resolve("board"));
        try (WeightPublisher p = WeightPublisher.builder().board(board).runId("r").seed(Weights.of(v0)).build()) {
            List<TensorData> v1 = step(v0, 0.02, 1);
            p.publish(1, Weights.of(v1));
            String durable = p.snapshotDigest();
            assertThrows(PointerRewindException.class, () -> p.publish(1, Weights.of(step(v1, 0.02, 2))));
            assertEquals(durable, p.snapshotDigest());
            assertEquals(1, board.readLatest().version());
            try (var s = Files.list(board.root().resolve("versions"))) {
                assertEquals(1, s.count(), "no staging directory left behind");
            }
        }
    }

    @Test
    void publishAsyncAllowsOneInFlightPublish() throws Exception {
        List<TensorData> v0 = model(8);
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicFiles blocking = new AtomicFiles(new AtomicFiles.Observer() {
            @Override
            public void tempCreated(Path temp) {
                if (temp.getFileName().toString().startsWith(".manifest.json") && entered.getCount() > 0) {
                    entered.countDown();
                    try {
                        release.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            }
        });
        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp.resolve("board"),
                BoardOptions.defaults().withFiles(blocking));
        try (WeightPublisher p = WeightPublisher.builder().board(board).anchorInterval(0).seed(Weights.of(v0)).build()) {
            List<TensorData> v1 = step(v0, 0.02, 1);
            CompletableFuture<PublishResult> first = p.publishAsync(1, Weights.of(v1));
            assertTrue(entered.await(30, TimeUnit.SECONDS));
            IllegalStateException busy = assertThrows(IllegalStateException.class,
                    () -> p.publishAsync(2, Weights.of(step(v1, 0.02, 2))));
            assertTrue(busy.getMessage().contains("in flight"), busy.getMessage());
            assertThrows(IllegalStateException.class, () -> p.publish(2, Weights.of(v1)));
            assertFalse(first.isDone());
            release.countDown();
            PublishResult r1 = first.get(30, TimeUnit.SECONDS);
            assertEquals(1, r1.version());
            PublishResult r2 = p.publishAsync(2, Weights.of(step(v1, 0.02, 2))).get(30, TimeUnit.SECONDS);
            assertEquals(2, r2.version());
            CompletableFuture<PublishResult> refused = p.publishAsync(2, Weights.of(v1));
            ExecutionException e = assertThrows(ExecutionException.class, () -> refused.get(30, TimeUnit.SECONDS));
            assertTrue(e.getCause() instanceof PointerRewindException, e.getCause().toString());
            assertEquals(3, p.publishAsync(3, Weights.of(v1)).get(30, TimeUnit.SECONDS).version());
        }
    }

    @Test
    void retentionRunsGcAfterPublishing() throws Exception {
        List<TensorData> v0 = model(9);
        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(tmp.resolve("board"));
        try (WeightPublisher p = WeightPublisher.builder().board(board).anchorInterval(3).keepLast(1).gcMinAgeSeconds(0)
                .seed(Weights.of(v0)).build()) {
            List<TensorData> cur = v0;
            for (int v = 1; v <= 5; v++) {
                cur = step(cur, 0.01, v);
                p.publish(v, Weights.of(cur));
            }
        }
        for (int v = 1; v <= 2; v++) {
            assertFalse(Files.exists(board.versionDirectory(v)), "version " + v + " is below the newest anchor");
        }
        for (int v = 3; v <= 5; v++) {
            assertNotNull(board.readManifest(v));
        }
    }

    @Test
    void progressCoversSeedDiffEncodeAnchorAndCommit() throws Exception {
        List<TensorData> v0 = model(11);
        long modelBytes = Weights.of(v0).byteSize();
        List<String> events = java.util.Collections.synchronizedList(new ArrayList<>());
        java.util.concurrent.atomic.AtomicLong lastDiff = new java.util.concurrent.atomic.AtomicLong();
        PublishProgress listener = (version, phase, done, total) -> {
            if (events.isEmpty() || !events.getLast().equals(phase)) {
                events.add(phase);
            }
            if (phase.equals("diff")) {
                assertEquals(modelBytes, total);
                lastDiff.accumulateAndGet(done, Math::max);
            }
            assertTrue(done <= total, phase + " " + done + " > " + total);
        };
        try (WeightPublisher p = WeightPublisher.builder().board(tmp.resolve("board")).anchorInterval(1).threads(2)
                .progress(listener).seed(Weights.of(v0)).build()) {
            p.publish(1, Weights.of(step(v0, 0.02, 1)));
        }
        assertEquals(List.of("seed", "diff", "encode", "anchor", "commit", "done"), events);
        assertEquals(modelBytes, lastDiff.get());
    }

    @Test
    void closedPublisherRefusesWork() throws Exception {
        WeightPublisher p = WeightPublisher.builder().board(tmp.resolve("board")).seed(Weights.of(model(10))).build();
        p.close();
        p.close();
        assertThrows(IllegalStateException.class, () -> p.publish(1, Weights.of(model(10))));
        assertThrows(IllegalStateException.class, () -> p.publishAsync(1, Weights.of(model(10))));
    }

    @Test
    void builderRejectsBadSettings() {
        assertThrows(IllegalStateException.class, () -> WeightPublisher.builder().build());
        assertThrows(IllegalArgumentException.class, () -> WeightPublisher.builder().backends(List.of()));
        assertThrows(IllegalArgumentException.class, () -> WeightPublisher.builder().backends(DeltaFormat.FULL, DeltaFormat.FULL));
        assertThrows(IllegalArgumentException.class, () -> WeightPublisher.builder().threads(0));
        assertThrows(IllegalArgumentException.class, () -> WeightPublisher.builder().anchorInterval(-1));
        assertThrows(IllegalArgumentException.class, () -> DeltaFormat.parse("zip"));
        assertEquals(DeltaFormat.STITCH_DELTA, DeltaFormat.parse("stitch-delta"));
    }
}
