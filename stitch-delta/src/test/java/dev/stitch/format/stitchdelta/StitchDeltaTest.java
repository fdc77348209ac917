package dev.stitch.format.stitchdelta;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.encode.ChunkRunner;
import dev.stitch.encode.TensorChange;
import dev.stitch.encode.ValueMode;
import dev.stitch.format.DeltaFormatException;
import dev.stitch.format.TensorPatch;
import dev.stitch.format.TestChanges;
import dev.stitch.format.WriteResult;
import dev.stitch.hash.Hash128;
import dev.stitch.hash.Xxh3;
import dev.stitch.kernels.Kernels;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class StitchDeltaTest {

    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @TempDir
    Path tmp;

    /** A random tensor pair differing at about {@code density} of the elements (at least one unless density is 0). */
    static TensorChange randomChange(String name, Dtype dtype, long numel, double density, long seed, boolean xor) {
        SplittableRandom r = new SplittableRandom(seed);
        int w = dtype.width();
        byte[] old = new byte[(int) (numel * w)];
        for (int i = 0; i < old.length; i++) {
            old[i] = (byte) r.nextInt(256);
        }
        byte[] neu = old.clone();
        TreeSet<Long> pos = new TreeSet<>();
        for (long i = 0; i < numel; i++) {
            if (r.nextDouble() < density) {
                pos.add(i);
            }
        }
        if (density > 0 && pos.isEmpty()) {
            pos.add(r.nextLong(numel));
        }
        for (long i : pos) {
            int b = r.nextInt(w);
            neu[(int) (i * w + b)] ^= (byte) (1 + r.nextInt(255));
        }
        TensorSpec spec = new TensorSpec(name, dtype, new long[] {numel});
        return TestChanges.of(spec, pos.stream().mapToLong(Long::longValue).toArray(), MemorySegment.ofArray(old), MemorySegment.ofArray(neu), xor);
    }

    static MemorySegment applyAll(StitchDeltaFile f, StitchRecord r, MemorySegment target) {
        TensorPatch p = f.decode(r);
        p.applyInPlace(target);
        return target;
    }

    @ParameterizedTest
    @CsvSource({
        "BF16, 0.0", "BF16, 0.000001", "BF16, 0.01", "BF16, 0.03", "BF16, 0.1", "BF16, 0.5", "BF16, 1.0",
        "U8, 0.03", "I8, 0.5", "F8_E4M3, 0.01", "F16, 0.03", "F32, 0.03", "I32, 1.0", "F64, 0.03", "U64, 0.1"})
    void roundTripsBitExactInBothModes(Dtype dtype, double density) throws IOException {
        for (ValueMode mode : ValueMode.values()) {
            TensorChange c = randomChange("t." + dtype, dtype, 100_003, density, 42, mode == ValueMode.OVERWRITE);
            Path dir = tmp.resolve(mode.id() + "-" + dtype + "-" + density);
            List<TensorChange> changes = c.count() == 0 ? List.of() : List.of(c);
            WriteResult res = new StitchDeltaWriter(mode, StitchDeltaWriter.DEFAULT_MAX_FILE_BYTES).write(5, changes, dir);
            if (changes.isEmpty()) {
                assertEquals(List.of(), res.files(), "a version without change has no files");
                continue;
            }
            assertEquals(List.of("delta-00000.stdelta"), res.transitionFiles());
            StitchDeltaFile f = StitchDeltaFile.read(dir.resolve("delta-00000.stdelta"));
            assertEquals(5, f.version());
            assertEquals(4, f.baseVersion());
            StitchRecord r = f.records().get(0);
            assertEquals(Xxh3.hash128(c.newTensor()), r.digest());
            MemorySegment target = TestChanges.copy(c.oldTensor());
            applyAll(f, r, target);
            assertEquals(-1, target.mismatch(c.newTensor()), mode + " " + dtype + " " + density);
            if (density == 1.0 && mode == ValueMode.OVERWRITE) {
                // every element present: the gap stream is pure overhead, so the dense record is smaller
                assertTrue(r.dense(), "dense mode chosen when denser than sparse");
            }
            if (density <= 0.1) {
                assertFalse(r.dense());
                assertEquals(mode == ValueMode.XOR, r.xor());
            }
        }
    }

    /** The escaped u16 gap stream of ascending positions, through the writer's kernels. */
    private static byte[] escapedGaps(long[] pos) {
        MemorySegment p = MemorySegment.ofArray(new byte[pos.length * 8]);
        for (int i = 0; i < pos.length; i++) {
            p.set(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 8L * i, pos[i]);
        }
        long units = Kernels.get().escapedGapUnits(p, 8, pos.length);
        byte[] out = new byte[(int) (2 * units)];
        assertEquals(units, Kernels.get().encodeEscapedGaps(p, 8, pos.length, MemorySegment.ofArray(out)));
        return out;
    }

    @Test
    void gapCodecEscapes() {
        long[] pos = {0, 65535, 65535 + 65536, 65535 + 65536 + 65537, 65535 + 65536 + 65537 + 131071};
        // gaps: 0, 65534, 65535, 65536, 131070
        byte[] units = escapedGaps(pos);
        long n = units.length / 2;
        assertEquals(1 + 1 + 2 + 2 + 3, n);
        assertEquals("0000" + "feff" + "ffff0000" + "ffff0100" + "ffffffff0000", HexFormat.of().formatHex(units));
        assertArrayEquals(pos, longs(dev.stitch.format.TensorPatch.decodeEscaped(MemorySegment.ofArray(units), n, pos.length, Long.MAX_VALUE, "t")));
        long[] far = {(1L << 32) + 7};
        byte[] fu = escapedGaps(far);
        long farUnits = fu.length / 2;
        assertEquals((1L << 32) / 65535 + 1, farUnits, "first index >= 2^32 needs ~65537 escapes");
        assertArrayEquals(far, longs(dev.stitch.format.TensorPatch.decodeEscaped(MemorySegment.ofArray(fu), farUnits, 1, 1L << 33, "t")));
        assertThrows(DeltaFormatException.class, () -> dev.stitch.format.TensorPatch.decodeEscaped(MemorySegment.ofArray(fu), farUnits, 1, 1L << 32, "t"));
        // wrong unit count: a stream that ends inside an escape, or holds more/fewer positions than declared
        assertThrows(DeltaFormatException.class, () -> dev.stitch.format.TensorPatch.decodeEscaped(MemorySegment.ofArray(units), 3, 2, Long.MAX_VALUE, "t"));
        assertThrows(DeltaFormatException.class, () -> dev.stitch.format.TensorPatch.decodeEscaped(MemorySegment.ofArray(units), n, pos.length - 1, Long.MAX_VALUE, "t"));
        assertThrows(DeltaFormatException.class, () -> dev.stitch.format.TensorPatch.decodeEscaped(MemorySegment.ofArray(units), n, pos.length + 1, Long.MAX_VALUE, "t"));
    }

    private static long[] longs(MemorySegment s) {
        long[] out = new long[(int) (s.byteSize() / 8)];
        for (int i = 0; i < out.length; i++) {
            out[i] = s.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 8L * i);
        }
        return out;
    }

    @Test
    void nanAndNegativeZeroChangesAreCarried() throws IOException {
        TensorSpec spec = new TensorSpec("n", Dtype.BF16, new long[] {64});
        MemorySegment old = MemorySegment.ofArray(new byte[128]);
        MemorySegment neu = TestChanges.copy(old);
        neu.set(U16, 2 * 3, (short) 0x7FC0);
        neu.set(U16, 2 * 9, (short) 0x8000);
        neu.set(U16, 2 * 10, (short) 0x7F81);
        for (ValueMode mode : ValueMode.values()) {
            TensorChange c = TestChanges.diff(spec, old, neu, false);
            assertEquals(3, c.count());
            Path dir = tmp.resolve("nan-" + mode.id());
            new StitchDeltaWriter(mode, 1 << 30).write(1, List.of(c), dir);
            StitchDeltaFile f = StitchDeltaFile.read(dir.resolve("delta-00000.stdelta"));
            MemorySegment t = applyAll(f, f.records().get(0), TestChanges.copy(old));
            assertEquals(-1, t.mismatch(neu));
        }
    }

    @Test
    void overwriteIsIdempotentAndCompletesHalfAppliedState() throws IOException {
        TensorChange c = randomChange("w", Dtype.BF16, 50_000, 0.03, 7, false);
        Path dir = tmp.resolve("ow");
        new StitchDeltaWriter(ValueMode.OVERWRITE, 1 << 30).write(1, List.of(c), dir);
        StitchDeltaFile f = StitchDeltaFile.read(dir.resolve("delta-00000.stdelta"));
        MemorySegment t = TestChanges.copy(c.oldTensor());
        applyAll(f, f.records().get(0), t);
        applyAll(f, f.records().get(0), t);
        assertEquals(-1, t.mismatch(c.newTensor()), "apply twice = apply once");
        MemorySegment half = TestChanges.copy(c.oldTensor());
        MemorySegment.copy(c.newTensor(), 0, half, 0, half.byteSize() / 2);
        applyAll(f, f.records().get(0), half);
        assertEquals(-1, half.mismatch(c.newTensor()), "half-applied state reaches the target");
    }

    @Test
    void outputIsDeterministicAndSortedByName() throws IOException {
        List<TensorChange> changes = new ArrayList<>();
        changes.add(randomChange("z.weight", Dtype.F32, 10_000, 0.05, 1, true));
        changes.add(randomChange("a.weight", Dtype.BF16, 10_000, 0.05, 2, true));
        new StitchDeltaWriter(ValueMode.XOR, 1 << 30).write(3, changes, tmp.resolve("one"));
        new StitchDeltaWriter(ValueMode.XOR, 1 << 30).write(3, List.of(changes.get(1), changes.get(0)), tmp.resolve("two"));
        byte[] a = Files.readAllBytes(tmp.resolve("one/delta-00000.stdelta"));
        assertArrayEquals(a, Files.readAllBytes(tmp.resolve("two/delta-00000.stdelta")));
        StitchDeltaFile f = StitchDeltaFile.read(tmp.resolve("one/delta-00000.stdelta"));
        assertEquals(List.of("a.weight", "z.weight"), f.records().stream().map(StitchRecord::name).toList());
        // a small split point puts each record into its own file
        WriteResult split = new StitchDeltaWriter(ValueMode.XOR, 100).write(3, changes, tmp.resolve("split"));
        assertEquals(List.of("delta-00000.stdelta", "delta-00001.stdelta"), split.transitionFiles());
    }

    @Test
    void carriedDigestsAndWorkerCountLeaveTheBytesAlone() throws IOException {
        List<TensorChange> recomputed = new ArrayList<>();
        List<TensorChange> carried = new ArrayList<>();
        double[] densities = {0.03, 0.001, 0.6, 0.2, 1.0};
        for (int i = 0; i < densities.length; i++) {
            TensorChange c = randomChange("t" + i, i % 2 == 0 ? Dtype.BF16 : Dtype.F32, 30_011 + i, densities[i], 70 + i, true);
            recomputed.add(c);
            carried.add(new TensorChange(c.spec(), c.count(), c.positions(), c.positionWidth(), c.values(), c.xorValues(),
                    c.oldTensor(), c.newTensor(), Xxh3.hash128(c.newTensor())));
        }
        for (ValueMode mode : ValueMode.values()) {
            byte[] reference = writeOne(new StitchDeltaWriter(mode, 1 << 30), recomputed, mode + "-recomputed");
            assertArrayEquals(reference, writeOne(new StitchDeltaWriter(mode, 1 << 30), carried, mode + "-carried"));
            for (int threads : new int[] {1, 2, 3}) {
                try (ChunkRunner runner = new ChunkRunner(threads, "test-writer");
                     StitchDeltaWriter retaining = new StitchDeltaWriter(mode, 1 << 30, runner, true)) {
                    // twice: the second write reuses the first one's scratch and output memory
                    for (int round = 0; round < 2; round++) {
                        assertArrayEquals(reference, writeOne(retaining, round == 0 ? carried : recomputed,
                                mode + "-threads-" + threads + "-" + round), mode + " on " + threads + " workers");
                    }
                    assertArrayEquals(reference, writeOne(new StitchDeltaWriter(mode, 1 << 30, runner, false), carried,
                            mode + "-threads-" + threads + "-fresh"), mode + " on " + threads + " workers, fresh scratch");
                }
            }
        }
        // the writer trusts a carried digest: it is what lands in the record
        TensorChange c = carried.getFirst();
        Hash128 other = Xxh3.hash128(new byte[] {1, 2, 3});
        TensorChange claimed = new TensorChange(c.spec(), c.count(), c.positions(), c.positionWidth(), c.values(),
                c.xorValues(), c.oldTensor(), c.newTensor(), other);
        new StitchDeltaWriter(ValueMode.XOR, 1 << 30).write(1, List.of(claimed), tmp.resolve("claimed"));
        assertEquals(other, StitchDeltaFile.read(tmp.resolve("claimed/delta-00000.stdelta")).records().getFirst().digest());
    }

    private byte[] writeOne(StitchDeltaWriter w, List<TensorChange> changes, String dir) throws IOException {
        WriteResult r = w.write(2, changes, tmp.resolve(dir));
        assertEquals(List.of("delta-00000.stdelta"), r.transitionFiles());
        return Files.readAllBytes(tmp.resolve(dir).resolve("delta-00000.stdelta"));
    }

    @Test
    void corruptionIsDetected() throws IOException {
        TensorChange c = randomChange("w", Dtype.BF16, 50_000, 0.03, 9, true);
        Path dir = tmp.resolve("c");
        new StitchDeltaWriter(ValueMode.XOR, 1 << 30).write(1, List.of(c), dir);
        byte[] good = Files.readAllBytes(dir.resolve("delta-00000.stdelta"));
        StitchDeltaFile ok = StitchDeltaFile.parse(good, "ok");
        StitchRecord r = ok.records().get(0);
        Map<String, TensorSpec> local = Map.of("w", c.spec());
        assertEquals(1, ok.patches(local::get).size());

        byte[] trailing = java.util.Arrays.copyOf(good, good.length + 1);
        assertThrows(DeltaFormatException.class, () -> StitchDeltaFile.parse(trailing, "t"));
        byte[] truncated = java.util.Arrays.copyOf(good, good.length - 5);
        assertThrows(DeltaFormatException.class, () -> StitchDeltaFile.parse(truncated, "t"));
        byte[] magic = good.clone();
        magic[1] = 'X';
        assertThrows(DeltaFormatException.class, () -> StitchDeltaFile.parse(magic, "t"));

        // a flipped byte inside the compressed value stream: zstd fails, or the digest does
        byte[] flipped = good.clone();
        flipped[(int) (r.streams().get(1).offset() + r.streams().get(1).stored() / 2)] ^= 0x10;
        StitchDeltaFile ff = StitchDeltaFile.parse(flipped, "f");
        boolean detected;
        try {
            TensorPatch p = ff.decode(ff.records().get(0));
            MemorySegment t = TestChanges.copy(c.oldTensor());
            p.applyInPlace(t);
            detected = !Xxh3.hash128(t).hex().equals(p.expected());
        } catch (DeltaFormatException e) {
            detected = true;
        }
        assertTrue(detected, "corrupt value stream detected");

        // wrong unit count in the record header (offset: after name, dtype, width, rank, dims, length, mode, layout, count)
        int unitsAt = (int) (r.offset() + 2 + 1 + 3 + 8 + 8 + 2 + 8);
        byte[] units = good.clone();
        MemorySegment.ofArray(units).set(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), unitsAt, r.units() + 1);
        assertThrows(DeltaFormatException.class, () -> StitchDeltaFile.parse(units, "u"));

        // a record that does not match the local tensor
        assertThrows(DeltaFormatException.class, () -> ok.patches(Map.of("w", new TensorSpec("w", Dtype.F16, new long[] {50_000}))::get));
        assertThrows(DeltaFormatException.class, () -> ok.patches(Map.<String, TensorSpec>of()::get));
    }
}
