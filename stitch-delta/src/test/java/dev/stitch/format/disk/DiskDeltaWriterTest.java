package dev.stitch.format.disk;
import dev.stitch.testing.Fixtures;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.stitch.encode.TensorChange;
import dev.stitch.encode.ValueMode;
import dev.stitch.format.DeltaFormatException;
import dev.stitch.digest.Digests;
import dev.stitch.format.TestChanges;
import dev.stitch.format.WriteResult;
import dev.stitch.format.ZstdFrames;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.safetensors.SafetensorsFile;
import dev.stitch.safetensors.TensorEntry;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class DiskDeltaWriterTest {

    @TempDir
    Path tmp;

    @ParameterizedTest
    @ValueSource(strings = {"xor", "overwrite"})
    void reproducesFixturePayloadsDigestsAndIndex(String encoding) throws IOException {
        ValueMode mode = ValueMode.parse(encoding);
        String[] states = {"disk-v2/base/model.safetensors", "disk-v2/expected/weight_v000001/model.safetensors",
            "disk-v2/expected/weight_v000002/model.safetensors"};
        for (int v = 1; v <= 2; v++) {
            try (SafetensorsFile old = SafetensorsFile.open(Fixtures.path(states[v - 1]));
                 SafetensorsFile neu = SafetensorsFile.open(Fixtures.path(states[v]))) {
                List<TensorChange> changes = new ArrayList<>(TestChanges.diff(old, neu, mode == ValueMode.XOR).values());
                Path out = tmp.resolve(encoding + v);
                WriteResult r = new DiskDeltaWriter(mode, DiskDeltaWriter.DEFAULT_MAX_FILE_BYTES).write(v, changes, out);
                assertEquals(List.of("model-00000-of-00001.safetensors"), r.transitionFiles());
                assertEquals(ArtifactKind.TRANSITION_META, r.files().get(r.files().size() - 1).kind());
                Path golden = Fixtures.path("disk-v2/" + encoding + String.format("/weight_v%06d", v));
                DiskDeltaIndex gi = DiskDeltaIndex.read(golden);
                DiskDeltaIndex oi = DiskDeltaIndex.read(out);
                assertEquals(gi, oi);
                try (SafetensorsFile g = SafetensorsFile.open(golden.resolve("model-00000-of-00001.safetensors"));
                     SafetensorsFile o = SafetensorsFile.open(out.resolve("model-00000-of-00001.safetensors"))) {
                    assertEquals(g.metadata().keySet(), o.metadata().keySet());
                    for (TensorEntry e : g.header().tensors()) {
                        assertEquals(g.metadata().get(e.name()), o.metadata().get(e.name()), e.name());
                        byte[] gp = ZstdFrames.decompress(g.tensor(e), 1 << 24, "g");
                        byte[] op = ZstdFrames.decompress(o.tensor(e.name()), 1 << 24, "o");
                        assertArrayEquals(gp, op, e.name());
                    }
                }
            }
        }
    }

    @Test
    void workedExampleOfSection36() {
        MemorySegment old = MemorySegment.ofArray(HexFormat.of().parseHex("0001020304050607"));
        MemorySegment neu = MemorySegment.ofArray(HexFormat.of().parseHex("0001ff0304050608"));
        assertEquals("0000fd000000000f", HexFormat.of().formatHex(DiskDeltaWriter.xorPayload(old, neu)));
        assertEquals("02000000" + "02000000" + "07000000" + "ff08", HexFormat.of().formatHex(DiskDeltaWriter.overwritePayload(old, neu)));
        assertEquals("4e13f0eaa15d3fb11a7334870058f034", Digests.of("xxh3-128", neu));
        assertEquals("064b011b", Digests.of("adler32", neu));
        assertEquals("99aa06d3014798d86001c324468d497f", Digests.of("xxh3-128", MemorySegment.ofArray(new byte[0])));
    }

    @Test
    void emptyVersionWritesOnlyTheIndexAndSplitsLargeVersions() throws IOException {
        WriteResult empty = new DiskDeltaWriter(ValueMode.XOR, 1 << 20).write(3, List.of(), tmp.resolve("e"));
        assertEquals(List.of(), empty.transitionFiles());
        assertEquals("{\"metadata\": {\"version\": \"000003\", \"base_version\": \"000002\", \"delta_encoding\": \"xor\", "
            + "\"compression_format\": \"zstd\", \"checksum_format\": \"xxh3-128\"}, \"weight_map\": {}}",
            Files.readString(tmp.resolve("e/model.safetensors.index.json"), StandardCharsets.UTF_8));
        List<TensorChange> changes = new ArrayList<>();
        for (String n : List.of("a", "b", "c")) {
            TensorSpec s = new TensorSpec(n, Dtype.U8, new long[] {4096});
            byte[] o = new byte[4096];
            byte[] nw = new byte[4096];
            new java.util.Random(n.hashCode()).nextBytes(nw);
            changes.add(TestChanges.diff(s, MemorySegment.ofArray(o), MemorySegment.ofArray(nw), false));
        }
        WriteResult r = new DiskDeltaWriter(ValueMode.OVERWRITE, 5000).write(1, changes, tmp.resolve("s"));
        assertEquals(List.of("model-00000-of-00003.safetensors", "model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors"),
            r.transitionFiles());
        DiskDeltaIndex idx = DiskDeltaIndex.read(tmp.resolve("s"));
        assertEquals("model-00001-of-00003.safetensors", idx.weightMap().get("b"));
    }

    @Test
    void malformedIndexesAreRefused() {
        assertThrows(DeltaFormatException.class, () -> DiskDeltaIndex.parse(utf8("{\"metadata\": {\"version\": \"000002\", \"base_version\": \"000000\", "
            + "\"delta_encoding\": \"xor\", \"compression_format\": \"zstd\"}, \"weight_map\": {}}"), "i"));
        assertThrows(DeltaFormatException.class, () -> DiskDeltaIndex.parse(utf8("{\"metadata\": {\"version\": \"000001\", \"base_version\": \"000000\", "
            + "\"delta_encoding\": \"rle\", \"compression_format\": \"zstd\"}, \"weight_map\": {}}"), "i"));
        assertThrows(DeltaFormatException.class, () -> DiskDeltaIndex.parse(utf8("{\"metadata\": {\"version\": \"000001\", \"base_version\": \"000000\", "
            + "\"delta_encoding\": \"xor\", \"compression_format\": \"zstd\"}, \"weight_map\": {\"a\": \"../x.safetensors\"}}"
            ), "i"));
        assertThrows(DeltaFormatException.class, () -> DiskDeltaIndex.parse(utf8("{\"metadata\": {"), "i"));
    }

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
