package dev.stitch.format.sparse;
import dev.stitch.testing.Fixtures;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.encode.TensorChange;
import dev.stitch.format.DeltaFormatException;
import dev.stitch.format.PreconditionFailedException;
import dev.stitch.format.TestChanges;
import dev.stitch.format.WriteResult;
import dev.stitch.safetensors.SafetensorsFile;
import dev.stitch.safetensors.TensorEntry;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigInteger;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SparseDeltaTest {

    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final String[] FILES = {
        "rank0000_flush000000.safetensors", "rank0000_flush000001.safetensors", "rank0000_flush000002.safetensors"};

    @TempDir
    Path tmp;

    @ParameterizedTest
    @ValueSource(strings = {"indices", "deltas", "deltas_zstd"})
    void fixtureFilesApplyToBaseGivingNew(String encoding) throws IOException {
        Path dir = Fixtures.path("sparse-v1/" + encoding + "/weight_v000001");
        Map<String, MemorySegment> weights = load(Fixtures.path("sparse-v1/base.safetensors"));
        for (String f : FILES) {
            SparseDeltaFile file = SparseDeltaFile.read(dir.resolve(f));
            assertEquals(SparseEncoding.parse(encoding), file.encoding());
            assertEquals(encoding.equals("deltas_zstd"), file.compressed());
            assertEquals("1", file.currentVersion());
            SparseDeltaFile.ApplyStats st = file.applyTo(weights::get);
            assertEquals(List.of(), st.unknownTensorNames());
            assertEquals(0, st.nanSkipped());
        }
        assertSameTensors(Fixtures.path("sparse-v1/new.safetensors"), weights);
    }

    @Test
    void fixtureChecksumsAndPositionLengthsAreAsDocumented() throws IOException {
        SparseDeltaFile idx0 = SparseDeltaFile.read(Fixtures.path("sparse-v1/indices/weight_v000001/" + FILES[0]));
        assertEquals(new BigInteger("27383222740551991346"), idx0.checksum());
        SparseDeltaFile d0 = SparseDeltaFile.read(Fixtures.path("sparse-v1/deltas/weight_v000001/" + FILES[0]));
        assertEquals(new BigInteger("27383222740551991510"), d0.checksum());
        assertEquals(List.of(2, 2, 4), d0.params().stream().map(SparseParam::posWidth).toList());
        assertEquals(9998, d0.params().get(2).posEnd());
        assertEquals(new BigInteger("43637417483174068"),
            SparseDeltaFile.read(Fixtures.path("sparse-v1/deltas/weight_v000001/" + FILES[1])).checksum());
        assertEquals(new BigInteger("52712421386616977"),
            SparseDeltaFile.read(Fixtures.path("sparse-v1/indices/weight_v000001/" + FILES[2])).checksum());
    }

    @Test
    void nanChangeIsMaskedLikeTheEngine() throws IOException {
        Map<String, MemorySegment> weights = load(Fixtures.path("sparse-v1/nan/base.safetensors"));
        SparseDeltaFile f = SparseDeltaFile.read(Fixtures.path("sparse-v1/nan/deltas/weight_v000001/rank0000_flush000000.safetensors"));
        assertEquals(new BigInteger("18439918305524318236"), f.checksum());
        SparseDeltaFile.ApplyStats st = f.applyTo(weights::get);
        assertEquals(1, st.nanSkipped());
        assertEquals(30, st.written());
        assertSameTensors(Fixtures.path("sparse-v1/nan/applied.safetensors"), weights);
    }

    @Test
    void writerRefusesNanChangesAndOtherDtypes() throws IOException {
        try (SafetensorsFile base = SafetensorsFile.open(Fixtures.path("sparse-v1/nan/base.safetensors"));
             SafetensorsFile neu = SafetensorsFile.open(Fixtures.path("sparse-v1/nan/new.safetensors"))) {
            List<TensorChange> changes = new ArrayList<>(TestChanges.diff(base, neu, false).values());
            SparseDeltaWriter w = SparseDeltaWriter.defaults();
            PreconditionFailedException e = assertThrows(PreconditionFailedException.class, () -> w.write(1, changes, tmp));
            assertTrue(e.getMessage().contains("NaN"), e.getMessage());
            assertEquals("sparse_delta", e.backend());
            try (var s = Files.list(tmp)) {
                assertEquals(0, s.count(), "nothing written");
            }
        }
        TensorSpec i8 = new TensorSpec("q", Dtype.I8, new long[] {4});
        MemorySegment o = MemorySegment.ofArray(new byte[4]);
        MemorySegment n = MemorySegment.ofArray(new byte[] {0, 1, 0, 0});
        TensorChange c = TestChanges.diff(i8, o, n, false);
        assertThrows(PreconditionFailedException.class, () -> SparseDeltaWriter.defaults().check(List.of(c)));
    }

    @Test
    void workedExampleOfSection211() throws IOException {
        TensorSpec embed = new TensorSpec("model.embed_tokens.weight", Dtype.BF16, new long[] {2, 40000});
        MemorySegment eOld = MemorySegment.ofArray(new byte[80000 * 2]);
        MemorySegment eNew = TestChanges.copy(eOld);
        eNew.set(U16, 2 * 3, (short) 0x3F80);
        eNew.set(U16, 2 * 70000, (short) 0x4000);
        TensorSpec norm = new TensorSpec("model.layers.0.input_layernorm.weight", Dtype.F32, new long[] {8});
        MemorySegment nOld = MemorySegment.ofArray(new byte[32]);
        MemorySegment nNew = TestChanges.copy(nOld);
        nNew.set(U32, 4, Float.floatToRawIntBits(1.5f));
        nNew.set(U32, 24, Float.floatToRawIntBits(-0.0f));
        List<TensorChange> changes = List.of(
            TestChanges.diff(norm, nOld, nNew, true), TestChanges.diff(embed, eOld, eNew, false));

        Path d = tmp.resolve("deltas");
        WriteResult r = new SparseDeltaWriter(SparseEncoding.DELTAS, 1 << 20, 0).write(7, changes, d);
        assertEquals(List.of("rank0000_flush000000.safetensors"), r.transitionFiles());
        try (SafetensorsFile f = SafetensorsFile.open(d.resolve("rank0000_flush000000.safetensors"))) {
            assertEquals("03000000" + "6c110100" + "0100" + "0400", hex(f.tensor("__positions__")));
            assertEquals("0000803f" + "00000040" + "0000c03f" + "00000080", hex(f.tensor("__values__")));
            assertEquals("[{\"name\": \"model.embed_tokens.weight\", \"dtype\": \"bfloat16\", \"shape\": [2, 40000], \"pos_start\": 0, "
                + "\"pos_end\": 8, \"pos_width\": 4, \"val_start\": 0, \"val_end\": 2}, {\"name\": \"model.layers.0.input_layernorm.weight\", "
                + "\"dtype\": \"float32\", \"shape\": [8], \"pos_start\": 8, \"pos_end\": 12, \"pos_width\": 2, \"val_start\": 2, \"val_end\": 4}]",
                f.metadata().get("params"));
            assertEquals(List.of("encoding", "params", "current_version", "checksum"), List.copyOf(f.metadata().keySet()));
            assertEquals("27674619710191698042", f.metadata().get("checksum"));
            assertEquals("7", f.metadata().get("current_version"));
        }
        Path i = tmp.resolve("indices");
        new SparseDeltaWriter(SparseEncoding.INDICES, 1 << 20, 0).write(7, changes, i);
        try (SafetensorsFile f = SafetensorsFile.open(i.resolve("rank0000_flush000000.safetensors"))) {
            assertEquals("03000000" + "70110100" + "01000000" + "06000000", hex(f.tensor("__positions__")));
            assertEquals("27674619710191698020", f.metadata().get("checksum"));
        }
        assertEquals(new BigInteger("27674619710191698042"), SparseChecksum.combine(122, 0xC008000000000000L));
        // round trip through the reader and the NaN-masked apply
        Map<String, MemorySegment> target = new LinkedHashMap<>();
        target.put(embed.name(), TestChanges.copy(eOld));
        target.put(norm.name(), TestChanges.copy(nOld));
        SparseDeltaFile.read(d.resolve("rank0000_flush000000.safetensors")).applyTo(target::get);
        assertEquals(-1, target.get(embed.name()).mismatch(eNew));
        assertEquals(-1, target.get(norm.name()).mismatch(nNew));
    }

    @ParameterizedTest
    @ValueSource(strings = {"indices", "deltas", "deltas_zstd"})
    void writerReproducesFixtureContent(String encoding) throws IOException {
        try (SafetensorsFile base = SafetensorsFile.open(Fixtures.path("sparse-v1/base.safetensors"));
             SafetensorsFile neu = SafetensorsFile.open(Fixtures.path("sparse-v1/new.safetensors"))) {
            Map<String, TensorChange> all = TestChanges.diff(base, neu, false);
            for (String f : FILES) {
                SparseDeltaFile golden = SparseDeltaFile.read(Fixtures.path("sparse-v1/" + encoding + "/weight_v000001/" + f));
                List<TensorChange> subset = golden.params().stream().map(p -> all.get(p.name())).toList();
                Path out = tmp.resolve(encoding + "-" + f);
                WriteResult r = new SparseDeltaWriter(SparseEncoding.parse(encoding), SparseDeltaWriter.DEFAULT_BUFFER_SIZE, 0)
                    .write(1, subset, out);
                assertEquals(1, r.files().size());
                SparseDeltaFile ours = SparseDeltaFile.read(out.resolve(r.files().get(0).path()));
                assertEquals(golden.checksum(), ours.checksum(), f);
                assertEquals(golden.valueDtype(), ours.valueDtype());
                assertEquals(golden.compressed(), ours.compressed());
                for (int gi = 0; gi < golden.params().size(); gi++) {
                    SparseParam gp = golden.params().get(gi);
                    int oi = indexOf(ours, gp.name());
                    SparseParam op = ours.params().get(oi);
                    assertEquals(gp.posWidth(), op.posWidth(), gp.name());
                    assertEquals(gp.posEnd() - gp.posStart(), op.posEnd() - op.posStart());
                    assertArrayEquals(golden.indices(gi), ours.indices(oi));
                    for (int k = 0; k < gp.count(); k++) {
                        assertEquals(golden.valueBits(gi, k), ours.valueBits(oi, k));
                    }
                }
            }
        }
    }

    @Test
    void corruptFilesAreRefused() throws IOException {
        byte[] good = Files.readAllBytes(Fixtures.path("sparse-v1/deltas/weight_v000001/" + FILES[1]));
        byte[] flipped = good.clone();
        flipped[flipped.length - 3] ^= 0x01;
        DeltaFormatException e = assertThrows(DeltaFormatException.class, () -> SparseDeltaFile.parse(flipped, "f", 1 << 20));
        assertTrue(e.getMessage().contains("checksum mismatch"), e.getMessage());
        byte[] truncated = java.util.Arrays.copyOf(good, good.length - 10);
        assertThrows(DeltaFormatException.class, () -> SparseDeltaFile.parse(truncated, "f", 1 << 20));
        String text = new String(good, java.nio.charset.StandardCharsets.ISO_8859_1);
        byte[] extraKey = text.replace("\\\"val_end\\\": 30}", "\\\"val_end\\\": 30, \\\"x\\\": 1}")
            .getBytes(java.nio.charset.StandardCharsets.ISO_8859_1);
        assertTrue(extraKey.length > good.length, "fixture params text located");
        e = assertThrows(DeltaFormatException.class, () -> SparseDeltaFile.parse(fixLength(extraKey, good), "f", 1 << 20));
        assertTrue(e.getMessage().contains("extra [x]"), e.getMessage());
        byte[] zstd = Files.readAllBytes(Fixtures.path("sparse-v1/deltas_zstd/weight_v000001/" + FILES[1]));
        e = assertThrows(DeltaFormatException.class, () -> SparseDeltaFile.parse(zstd, "f", 100));
        assertTrue(e.getMessage().contains("bound"), e.getMessage());
        byte[] trailing = java.util.Arrays.copyOf(zstd, zstd.length + 1);
        assertThrows(DeltaFormatException.class, () -> SparseDeltaFile.parse(trailing, "f", 1 << 20));
    }

    /** Rewrites the header length prefix after the header text grew (keeps the data section). */
    private static byte[] fixLength(byte[] edited, byte[] original) {
        long oldN = MemorySegment.ofArray(original).get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0);
        long newN = oldN + (edited.length - original.length);
        MemorySegment.ofArray(edited).set(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, newN);
        return edited;
    }

    private static int indexOf(SparseDeltaFile f, String name) {
        for (int i = 0; i < f.params().size(); i++) {
            if (f.params().get(i).name().equals(name)) {
                return i;
            }
        }
        throw new AssertionError("no param " + name);
    }

    static Map<String, MemorySegment> load(Path file) throws IOException {
        Map<String, MemorySegment> m = new LinkedHashMap<>();
        try (SafetensorsFile f = SafetensorsFile.open(file)) {
            for (TensorEntry e : f.header().tensors()) {
                m.put(e.name(), TestChanges.copy(f.tensor(e)));
            }
        }
        return m;
    }

    static void assertSameTensors(Path expected, Map<String, MemorySegment> actual) throws IOException {
        try (SafetensorsFile f = SafetensorsFile.open(expected)) {
            assertEquals(f.header().tensors().size(), actual.size());
            for (TensorEntry e : f.header().tensors()) {
                assertEquals(-1L, f.tensor(e).mismatch(actual.get(e.name())), e.name());
            }
        }
    }

    private static String hex(MemorySegment s) {
        return HexFormat.of().formatHex(s.toArray(ValueLayout.JAVA_BYTE));
    }
}
