package dev.stitch.apply;
import dev.stitch.testing.Fixtures;

import static dev.stitch.apply.DiskDeltaApplyTest.copyDir;
import static dev.stitch.apply.DiskDeltaApplyTest.model;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.stitch.encode.TensorChange;
import dev.stitch.encode.TensorData;
import dev.stitch.encode.ValueMode;
import dev.stitch.format.TestChanges;
import dev.stitch.format.WriteResult;
import dev.stitch.format.WrittenFile;
import dev.stitch.format.full.FullCheckpointWriter;
import dev.stitch.format.sparse.SparsePatches;
import dev.stitch.format.stitchdelta.StitchDeltaWriter;
import dev.stitch.protocol.Artifact;
import dev.stitch.safetensors.Checkpoint;
import dev.stitch.safetensors.SafetensorsFile;
import dev.stitch.safetensors.TensorEntry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class HostApplierTest {

    private static final String[] STATES = {"disk-v2/base/model.safetensors", "disk-v2/expected/weight_v000001/model.safetensors",
        "disk-v2/expected/weight_v000002/model.safetensors"};

    @TempDir
    Path tmp;

    /** Publishes versions 1 and 2 of the fixture model with our stitch_delta writer into {@code board/weight_vN}. */
    private List<VersionStep> publishStitchChain(ValueMode mode, Path board) throws IOException {
        List<VersionStep> steps = new ArrayList<>();
        for (int v = 1; v <= 2; v++) {
            try (SafetensorsFile old = SafetensorsFile.open(Fixtures.path(STATES[v - 1]));
                 SafetensorsFile neu = SafetensorsFile.open(Fixtures.path(STATES[v]))) {
                List<TensorChange> changes = new ArrayList<>(TestChanges.diff(old, neu, mode == ValueMode.XOR).values());
                Path dir = board.resolve(String.format("weight_v%06d", v));
                WriteResult r = new StitchDeltaWriter(mode, StitchDeltaWriter.DEFAULT_MAX_FILE_BYTES).write(v, changes, dir);
                steps.add(new VersionStep(v, v - 1, "run-a", "stitch_delta", null, dir, r.transitionFiles(), List.of(), artifacts(r), false));
            }
        }
        return steps;
    }

    private static Map<String, Artifact> artifacts(WriteResult r) {
        Map<String, Artifact> m = new HashMap<>();
        for (WrittenFile f : r.files()) {
            m.put(f.path(), f.toArtifact());
        }
        return m;
    }

    @ParameterizedTest
    @ValueSource(strings = {"xor", "overwrite"})
    void stitchDeltaChainReachesTheExpectedBytes(String mode) throws Exception {
        List<VersionStep> steps = publishStitchChain(ValueMode.parse(mode), tmp.resolve("board"));
        Path local = copyDir(Fixtures.path("disk-v2/base"), tmp.resolve("local"));
        try (HostApplier a = HostApplier.open(local)) {
            ApplyResult r = a.apply(steps, ApplyProgress.NONE);
            assertEquals(List.of(1L, 2L), r.applied());
            assertEquals("run-a", a.state().runId());
            assertEquals(List.of(1L, 2L), a.apply(steps, ApplyProgress.NONE).skipped());
        }
        assertArrayEquals(model(Fixtures.path("disk-v2/expected/weight_v000002")), model(local));
    }

    @Test
    void corruptStitchDeltaFileLeavesTheCheckpointUnchanged() throws Exception {
        List<VersionStep> steps = publishStitchChain(ValueMode.XOR, tmp.resolve("board"));
        Path local = copyDir(Fixtures.path("disk-v2/base"), tmp.resolve("local"));
        Path f = steps.get(0).directory().resolve("delta-00000.stdelta");
        byte[] bytes = Files.readAllBytes(f);
        byte[] before = model(local);
        bytes[bytes.length - 7] ^= 0x01;
        Files.write(f, bytes);
        try (HostApplier a = HostApplier.open(local)) {
            RefusedVersionException e = assertThrows(RefusedVersionException.class, () -> a.apply(steps, ApplyProgress.NONE));
            assertEquals(RefusedVersionException.Reason.CHECKSUM, e.reason(), e.getMessage());
            assertTrue(e.getMessage().contains("delta-00000.stdelta"), e.getMessage());
        }
        assertArrayEquals(before, model(local));
        // the same corruption without a manifest digest is caught by the stream or the tensor digest
        VersionStep unverified = new VersionStep(1, 0, null, "stitch_delta", null, steps.get(0).directory(),
            steps.get(0).transitionFiles(), List.of(), Map.of(), false);
        try (HostApplier a = HostApplier.open(local)) {
            RefusedVersionException e = assertThrows(RefusedVersionException.class, () -> a.apply(List.of(unverified), ApplyProgress.NONE));
            assertTrue(e.reason() == RefusedVersionException.Reason.CHECKSUM || e.reason() == RefusedVersionException.Reason.MALFORMED);
        }
        assertArrayEquals(before, model(local));
    }

    /**
     * A record whose digest lies (file intact, no manifest digest to catch it): the tensors are written
     * and hashed in one pass, so the others are already patched when the lie shows; all are put back.
     */
    @ParameterizedTest
    @ValueSource(strings = {"xor:1", "xor:2", "overwrite:1", "overwrite:2"})
    void lyingRecordDigestPutsEveryTensorBack(String modeThreads) throws Exception {
        String[] mt = modeThreads.split(":");
        List<VersionStep> steps = publishStitchChain(ValueMode.parse(mt[0]), tmp.resolve("board"));
        Path dir = steps.get(0).directory();
        Path f = dir.resolve("delta-00000.stdelta");
        byte[] bytes = Files.readAllBytes(f);
        dev.stitch.format.stitchdelta.StitchDeltaFile parsed = dev.stitch.format.stitchdelta.StitchDeltaFile.parse(bytes.clone(), "test");
        assertTrue(parsed.records().size() > 1, "the fixture model has several changed tensors");
        dev.stitch.format.stitchdelta.StitchRecord last = parsed.records().get(parsed.records().size() - 1);
        long digestAt = last.offset() + 2 + last.name().getBytes(java.nio.charset.StandardCharsets.UTF_8).length + 3
            + 8L * last.spec().shape().length + 8 + 2 + 16;
        bytes[(int) digestAt] ^= 0x01;
        Files.write(f, bytes);
        VersionStep unverified = new VersionStep(1, 0, "run-a", "stitch_delta", null, dir, steps.get(0).transitionFiles(), List.of(), Map.of(), false);
        Path local = copyDir(Fixtures.path("disk-v2/base"), tmp.resolve("local"));
        byte[] before = model(local);
        try (HostApplier a = HostApplier.open(local, Integer.parseInt(mt[1]))) {
            RefusedVersionException e = assertThrows(RefusedVersionException.class, () -> a.apply(List.of(unverified), ApplyProgress.NONE));
            assertEquals(RefusedVersionException.Reason.CHECKSUM, e.reason(), e.getMessage());
            assertTrue(e.getMessage().contains(last.name()), e.getMessage());
            assertEquals(0, a.version());
            assertEquals(null, a.state().dirtyReason(), "a refused version leaves the checkpoint clean");
        }
        assertArrayEquals(before, model(local));
        try (HostApplier a = HostApplier.open(local)) {
            assertEquals(null, a.state().dirtyReason(), "the state file on disk is clean too");
        }
    }

    /** Out-of-order and repeated indices (legal in a v1 file) end as sequential writes would leave them. */
    @Test
    void sparsePatchMatchesSequentialWritesForUnsortedAndRepeatedIndices() throws Exception {
        dev.stitch.tensor.TensorSpec spec = new dev.stitch.tensor.TensorSpec("w", dev.stitch.tensor.Dtype.BF16, new long[] {8});
        java.lang.foreign.MemorySegment old = java.lang.foreign.MemorySegment.ofArray(new byte[16]);
        java.lang.foreign.MemorySegment neu = TestChanges.copy(old);
        java.lang.invoke.VarHandle u16 = java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN).varHandle();
        neu.set(java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN), 2, (short) 0x3F80);
        neu.set(java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN), 4, (short) 0x4000);
        neu.set(java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN), 14, (short) 0x4040);
        Path dir = tmp.resolve("v1");
        new dev.stitch.format.sparse.SparseDeltaWriter(dev.stitch.format.sparse.SparseEncoding.INDICES, 1 << 20, 0)
            .write(1, List.of(TestChanges.diff(spec, old, neu, false)), dir);
        Path f = dir.resolve("rank0000_flush000000.safetensors");
        byte[] bytes = Files.readAllBytes(f);
        // indices 1, 2, 7 become 4, 2, 2 (out of order, 2 repeated); the byte XOR (the file checksum's p) is unchanged
        int at = indexOf(bytes, new byte[] {1, 0, 0, 0, 2, 0, 0, 0, 7, 0, 0, 0});
        assertTrue(at > 0, "positions found in the file");
        System.arraycopy(new byte[] {4, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0}, 0, bytes, at, 12);
        dev.stitch.format.sparse.SparseDeltaFile parsed = dev.stitch.format.sparse.SparseDeltaFile.parse(bytes, "edited", Long.MAX_VALUE);
        java.lang.foreign.MemorySegment sequential = TestChanges.copy(old);
        parsed.applyTo(name -> sequential);
        java.lang.foreign.MemorySegment viaPatch = TestChanges.copy(old);
        SparsePatches.of(parsed, 0).applyInPlace(viaPatch);
        assertEquals(-1, viaPatch.mismatch(sequential));
        assertEquals((short) 0x4040, (short) u16.get(sequential, 4L), "the later of the repeated entries wins");
        assertEquals((short) 0x3F80, (short) u16.get(sequential, 8L));
    }

    private static int indexOf(byte[] hay, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= hay.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (hay[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    @Test
    void sparseDeltaAppliesHostSideNanMasked() throws Exception {
        Path local = copyDir(Fixtures.path("disk-v2/base"), tmp.resolve("local"));
        for (String enc : List.of("indices", "deltas_zstd")) {
            Path l = copyDir(local, tmp.resolve("l-" + enc));
            Path dir = Fixtures.path("sparse-v1/" + enc + "/weight_v000001");
            VersionStep step = VersionStep.delta(1, "sparse_delta", dir, List.of("rank0000_flush000000.safetensors",
                "rank0000_flush000001.safetensors", "rank0000_flush000002.safetensors"));
            try (HostApplier a = HostApplier.open(l)) {
                ApplyResult r = a.apply(List.of(step), ApplyProgress.NONE);
                assertEquals(List.of(), r.unknownTensorNames());
            }
            assertSameTensors(Fixtures.path("sparse-v1/new.safetensors"), l);
        }
        // the NaN case: a single-tensor checkpoint
        Path nan = tmp.resolve("nan");
        Files.createDirectories(nan);
        Files.copy(Fixtures.path("sparse-v1/nan/base.safetensors"), nan.resolve("model.safetensors"));
        try (HostApplier a = HostApplier.open(nan)) {
            a.apply(List.of(VersionStep.delta(1, "sparse_delta", Fixtures.path("sparse-v1/nan/deltas/weight_v000001"),
                List.of("rank0000_flush000000.safetensors"))), ApplyProgress.NONE);
        }
        assertSameTensors(Fixtures.path("sparse-v1/nan/applied.safetensors"), nan);
    }

    @Test
    void anchorReplacesWeightsKeepsOtherFilesAndAllowsReplayAfterIt() throws Exception {
        Path board = tmp.resolve("board");
        List<VersionStep> deltas = publishStitchChain(ValueMode.XOR, board);
        // version 1 also carries an anchor: the complete checkpoint at version 1, sharded
        List<TensorData> tensors = new ArrayList<>();
        try (SafetensorsFile f = SafetensorsFile.open(Fixtures.path(STATES[1]))) {
            for (TensorEntry e : f.header().tensors()) {
                tensors.add(new TensorData(e.spec(), TestChanges.copy(f.tensor(e))));
            }
        }
        WriteResult anchor = new FullCheckpointWriter(60_000, Map.of("format", "pt")).write(tensors, deltas.get(0).directory(), "full");
        Map<String, Artifact> arts = new HashMap<>(deltas.get(0).artifacts());
        arts.putAll(artifacts(anchor));
        VersionStep anchorStep = new VersionStep(1, 0, "run-a", "stitch_delta", null, deltas.get(0).directory(), deltas.get(0).transitionFiles(), List.of(), arts, true);
        Path local = copyDir(Fixtures.path("disk-v2/base"), tmp.resolve("local"));
        Files.writeString(local.resolve("config.json"), "{}");
        Files.createDirectories(local.resolve(".weight_sync"));
        Files.writeString(local.resolve(".weight_sync/state.json"), "{\"version\": \"000007\", \"applying\": \"000008\"}");
        try (HostApplier a = HostApplier.open(local)) {
            ApplyResult r = a.apply(List.of(anchorStep, deltas.get(1)), ApplyProgress.NONE);
            assertEquals(List.of(1L, 2L), r.applied());
            assertEquals(2, a.version());
        }
        assertTrue(Files.exists(local.resolve("config.json")), "non-weight files kept");
        assertTrue(Files.notExists(local.resolve("model.safetensors")), "stale shard pruned");
        assertTrue(Files.exists(local.resolve(Checkpoint.INDEX)));
        assertSameTensors(Fixtures.path(STATES[2]), local);
        // a tampered anchor shard is refused before anything changes
        Path shard = deltas.get(0).directory().resolve(anchor.files().get(0).path());
        byte[] b = Files.readAllBytes(shard);
        b[b.length - 1] ^= 1;
        Files.write(shard, b);
        Path local2 = copyDir(Fixtures.path("disk-v2/base"), tmp.resolve("local2"));
        try (HostApplier a = HostApplier.open(local2)) {
            RefusedVersionException e = assertThrows(RefusedVersionException.class, () -> a.apply(List.of(anchorStep), ApplyProgress.NONE));
            assertEquals(RefusedVersionException.Reason.CHECKSUM, e.reason());
        }
        assertArrayEquals(model(Fixtures.path("disk-v2/base")), model(local2));
    }

    @Test
    void boardV1ChainAppliesHostSide() throws Exception {
        Path versions = Fixtures.path("board-v1/versions");
        ObjectMapper json = new ObjectMapper();
        List<VersionStep> steps = new ArrayList<>();
        for (int v = 1; v <= 3; v++) {
            Path dir = versions.resolve(String.format("weight_v%06d", v));
            JsonNode m = json.readTree(dir.resolve("manifest.json").toFile());
            List<String> files = new ArrayList<>();
            m.get("transition_files").forEach(n -> files.add(n.asText()));
            Map<String, Artifact> arts = new HashMap<>();
            for (JsonNode a : m.get("artifacts")) {
                arts.put(a.get("path").asText(), new Artifact(a.get("kind").asText(), a.get("path").asText(),
                    a.has("size_bytes") ? a.get("size_bytes").asLong() : null, a.has("checksum") ? a.get("checksum").asText() : null, null));
            }
            steps.add(new VersionStep(v, m.get("base_version").asLong(), m.has("run_id") ? m.get("run_id").asText() : null,
                m.get("backend").asText(), null, dir, files, List.of(), arts, false));
        }
        Path local = copyDir(Fixtures.path("disk-v2/base"), tmp.resolve("local"));
        try (HostApplier a = HostApplier.open(local)) {
            assertEquals(List.of(1L, 2L, 3L), a.apply(steps, ApplyProgress.NONE).applied());
            assertEquals(3, a.version());
        }
        assertArrayEquals(model(Fixtures.path("disk-v2/expected/weight_v000002")), model(local));
    }

    static void assertSameTensors(Path expectedFile, Path checkpointDir) throws IOException {
        try (SafetensorsFile f = SafetensorsFile.open(expectedFile); Checkpoint c = Checkpoint.open(checkpointDir)) {
            assertEquals(f.header().tensors().size(), c.names().size());
            for (TensorEntry e : f.header().tensors()) {
                assertEquals(-1L, f.tensor(e).mismatch(c.tensor(e.name())), e.name());
            }
        }
    }
}
