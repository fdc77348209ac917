package dev.stitch.encode;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.hash.Xxh3;
import dev.stitch.kernels.DeltaKernels;
import dev.stitch.kernels.Kernels;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class DeltaEncoderTest {

    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @Test
    void signedZeroAndNaNPayloadsAreComparedByBits() {
        float[] old = {0.0f, Float.intBitsToFloat(0x7fc00001), Float.intBitsToFloat(0x7fc00002), 1.5f, -0.0f};
        float[] neu = {-0.0f, Float.intBitsToFloat(0x7fc00001), Float.intBitsToFloat(0x7fc00003), 1.5f, -0.0f};
        try (Arena arena = Arena.ofShared();
             Snapshot base = Snapshot.copyOf(List.of(f32("w", old)));
             DeltaEncoder enc = new DeltaEncoder(Kernels.get(), 1)) {
            EncodedVersion v = enc.diff(base, List.of(f32("w", neu)), ValueMode.OVERWRITE, arena);
            assertEquals(1, v.changes().size());
            TensorChange c = v.changes().getFirst();
            assertEquals(2, c.count());
            assertEquals(0, c.positions().get(I32, 0));
            assertEquals(2, c.positions().get(I32, 4));
            assertEquals(0x80000000, c.values().get(I32, 0));
            assertEquals(0x7fc00003, c.values().get(I32, 4));
            assertEquals(2, v.changedElements());
            assertEquals(8, v.changedBytes());
        }
    }

    @Test
    void resultsDoNotDependOnThreadsOrChunks() {
        List<TensorData> base = randomModel(11);
        List<TensorData> next = perturb(base, 0.05, 12);
        byte[][] reference = null;
        for (int threads : new int[] {1, 2, 3}) {
            for (long chunk : new long[] {7, 64, 1000, DeltaEncoder.DEFAULT_CHUNK_ELEMENTS}) {
                for (ValueMode mode : ValueMode.values()) {
                    try (Arena arena = Arena.ofShared();
                         Snapshot snap = Snapshot.copyOf(base);
                         DeltaEncoder enc = new DeltaEncoder(Kernels.get(), threads, chunk)) {
                        EncodedVersion v = enc.diff(snap, next, mode, arena);
                        byte[][] flat = flatten(v);
                        if (mode == ValueMode.OVERWRITE) {
                            if (reference == null) {
                                reference = flat;
                            } else {
                                assertEquals(reference.length, flat.length);
                                for (int i = 0; i < flat.length; i++) {
                                    assertArrayEquals(reference[i], flat[i], "threads " + threads + " chunk " + chunk);
                                }
                            }
                        }
                        checkAgainstScalar(base, next, v);
                    }
                }
            }
        }
    }

    @Test
    void carriedDigestIsTheXxh3OfTheNewTensor() {
        List<TensorData> base = new ArrayList<>(randomModel(31));
        // larger than a hash slice, so slices inside one chunk are hashed one by one
        TensorSpec big = new TensorSpec("model.big", Dtype.BF16, new long[] {300_001});
        byte[] bytes = new byte[(int) big.byteLength()];
        new Random(33).nextBytes(bytes);
        base.add(new TensorData(big, MemorySegment.ofArray(bytes)));
        List<TensorData> next = perturb(base, 0.04, 32);
        for (int threads : new int[] {1, 2, 3}) {
            // odd chunk sizes put chunk and hash-slice boundaries inside elements' runs and tensors
            for (long chunk : new long[] {7, 333, 100_003, DeltaEncoder.DEFAULT_CHUNK_ELEMENTS}) {
                try (Arena arena = Arena.ofShared();
                     Snapshot snap = Snapshot.copyOf(base);
                     DeltaEncoder enc = new DeltaEncoder(Kernels.get(), threads, chunk)) {
                    EncodedVersion v = enc.diff(snap, next, ValueMode.XOR, arena);
                    assertFalse(v.changes().isEmpty());
                    for (TensorChange c : v.changes()) {
                        assertEquals(Xxh3.hash128(c.newTensor().toArray(ValueLayout.JAVA_BYTE)), c.newDigest(),
                                c.spec().name() + ", threads " + threads + ", chunk " + chunk);
                    }
                    EncodedVersion plain = enc.diff(snap, next, ValueMode.XOR, arena, done -> { }, false);
                    assertTrue(plain.changes().stream().allMatch(c -> c.newDigest() == null));
                    assertEquals(v.changedElements(), plain.changedElements());
                }
            }
        }
    }

    @Test
    void diffMemoryIsReusedAcrossVersionsAndGivesTheSameChanges() {
        List<TensorData> base = randomModel(51);
        List<TensorData> next = perturb(base, 0.05, 52);
        try (Arena arena = Arena.ofShared();
             VersionMemory memory = new VersionMemory(64L << 20);
             Snapshot snap = Snapshot.copyOf(base);
             DeltaEncoder enc = new DeltaEncoder(Kernels.get(), 2, 333)) {
            byte[][] reference = flatten(enc.diff(snap, next, ValueMode.XOR, arena));
            for (int round = 0; round < 3; round++) {
                memory.reset();
                byte[][] flat = flatten(enc.diff(snap, next, ValueMode.XOR, memory));
                assertEquals(reference.length, flat.length);
                for (int i = 0; i < flat.length; i++) {
                    assertArrayEquals(reference[i], flat[i], "round " + round);
                }
            }
            long mapped = memory.mappedBytes();
            memory.reset();
            assertEquals(mapped, memory.mappedBytes(), "memory within the retained size stays mapped");
            MemorySegment a = memory.allocate(3, 1);
            MemorySegment b = memory.allocate(16, 8);
            assertEquals(0, b.address() % 8);
            assertTrue(b.address() >= a.address() + 3, "allocations do not overlap");
        }
        try (VersionMemory small = new VersionMemory(0)) {
            small.allocate(100, 8);
            assertTrue(small.mappedBytes() > 0);
            small.reset();
            assertEquals(0, small.mappedBytes(), "memory beyond the retained size is freed on reset");
        }
    }

    @Test
    void aFailingChunkDoesNotLeaveWorkersWaitingForTheirTurnToHash() {
        List<TensorData> base = randomModel(41);
        List<TensorData> next = perturb(base, 0.04, 42);
        DeltaKernels real = Kernels.get();
        // fails the diff of one early chunk of the 3000-element tensor, so later chunks wait on it
        DeltaKernels failing = (DeltaKernels) Proxy.newProxyInstance(DeltaKernels.class.getClassLoader(),
                new Class<?>[] {DeltaKernels.class}, (proxy, method, args) -> {
                    if (method.getName().startsWith("diffGather") && (long) args[3] == 10
                            && ((MemorySegment) args[1]).byteSize() == 10) {
                        throw new IllegalStateException("injected failure");
                    }
                    try {
                        return method.invoke(real, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
            try (Arena arena = Arena.ofShared();
                 Snapshot snap = Snapshot.copyOf(base);
                 DeltaEncoder enc = new DeltaEncoder(failing, 3, 5)) {
                IllegalStateException e = assertThrows(IllegalStateException.class,
                        () -> enc.diff(snap, next, ValueMode.XOR, arena));
                assertTrue(e.getMessage().contains("injected failure") || e.getMessage().contains("abandoned"),
                        e.getMessage());
            }
        });
    }

    @Test
    void escapedPlanesAreTheStitchStreamsOfThePositions() {
        List<TensorData> base = new ArrayList<>(randomModel(61));
        // a sparse tensor: a change at 0, gaps of exactly 65534/65535/65536 and far beyond, long changeless runs
        TensorSpec sparse = new TensorSpec("model.sparse", Dtype.BF16, new long[] {400_000});
        base.add(new TensorData(sparse, MemorySegment.ofArray(new byte[(int) sparse.byteLength()])));
        List<TensorData> next = new ArrayList<>(perturb(base, 0.03, 62));
        byte[] moved = new byte[(int) sparse.byteLength()];
        for (long i : new long[] {0, 65535, 131071, 196608, 196609, 333_333, 399_999}) {
            moved[(int) (2 * i)] = 1;
        }
        next.set(next.size() - 1, new TensorData(sparse, MemorySegment.ofArray(moved)));
        DeltaKernels k = Kernels.get();
        for (int threads : new int[] {1, 2, 3}) {
            for (long chunk : new long[] {7, 333, 65_535, 100_003, DeltaEncoder.DEFAULT_CHUNK_ELEMENTS}) {
                for (ValueMode mode : ValueMode.values()) {
                    try (Arena arena = Arena.ofShared();
                         Snapshot snap = Snapshot.copyOf(base);
                         DeltaEncoder enc = new DeltaEncoder(k, threads, chunk)) {
                        EncodedVersion plain = enc.diff(snap, next, mode, arena);
                        EncodedVersion escaped = enc.diff(snap, next, mode, arena, done -> { }, true, true);
                        String where = "threads " + threads + ", chunk " + chunk + ", " + mode;
                        assertEquals(plain.changes().size(), escaped.changes().size(), where);
                        for (int i = 0; i < plain.changes().size(); i++) {
                            TensorChange p = plain.changes().get(i);
                            TensorChange e = escaped.changes().get(i);
                            assertEquals(p.count(), e.count(), where);
                            assertEquals(Xxh3.hash128(p.newTensor().toArray(ValueLayout.JAVA_BYTE)), e.newDigest(), where);
                            int w = p.spec().dtype().width();
                            MemorySegment units = arena.allocate(2 * (p.count() + p.spec().numel() / 65535 + 1));
                            long u = k.encodeEscapedGaps(p.positions(), p.positionWidth(), p.count(), units);
                            MemorySegment expected = arena.allocate(2 * u + p.count() * w);
                            k.splitPlanes(units, 2, u, expected);
                            k.splitPlanes(p.values(), w, p.count(), expected.asSlice(2 * u));
                            assertEquals(u, e.escaped().units(), p.spec().name() + ", " + where);
                            assertEquals(-1, expected.mismatch(e.escaped().planes()), p.spec().name() + ", " + where);
                            TensorChange back = e.withPositions(k, arena);
                            assertEquals(-1, p.positions().mismatch(back.positions()), where);
                            assertEquals(-1, p.values().mismatch(back.values()), where);
                        }
                        enc.advance(snap, escaped, next);
                        for (TensorData t : next) {
                            assertEquals(-1, snap.tensor(t.name()).bytes().mismatch(t.bytes()), t.name() + ", " + where);
                        }
                    }
                }
            }
        }
    }

    @Test
    void advanceBringsTheSnapshotToTheNewWeights() {
        List<TensorData> base = randomModel(21);
        List<TensorData> next = perturb(base, 0.03, 22);
        for (ValueMode mode : ValueMode.values()) {
            try (Arena arena = Arena.ofShared();
                 Snapshot snap = Snapshot.copyOf(base);
                 DeltaEncoder enc = new DeltaEncoder(Kernels.get(), 2, 100)) {
                EncodedVersion v = enc.diff(snap, next, mode, arena);
                assertFalse(v.changes().isEmpty());
                for (TensorData t : base) {
                    assertTrue(snap.tensor(t.name()).bytes().mismatch(t.bytes()) < 0, "diff must not touch the snapshot");
                }
                enc.advance(snap, v, next);
                for (TensorData t : next) {
                    assertEquals(-1, snap.tensor(t.name()).bytes().mismatch(t.bytes()), t.name());
                }
                EncodedVersion again = enc.diff(snap, next, mode, arena);
                assertTrue(again.isEmpty());
                assertEquals(0, again.changedElements());
            }
        }
    }

    @Test
    void unchangedTensorsAreOmitted() {
        List<TensorData> base = randomModel(31);
        List<TensorData> next = new ArrayList<>(base);
        TensorData first = base.getFirst();
        MemorySegment copy = Arena.ofAuto().allocate(first.bytes().byteSize());
        copy.copyFrom(first.bytes());
        copy.set(I16, 6, (short) (copy.get(I16, 6) ^ 1));
        next.set(0, new TensorData(first.spec(), copy));
        try (Arena arena = Arena.ofShared();
             Snapshot snap = Snapshot.copyOf(base);
             DeltaEncoder enc = new DeltaEncoder(Kernels.get(), 2)) {
            EncodedVersion v = enc.diff(snap, next, ValueMode.XOR, arena);
            assertEquals(1, v.changes().size());
            TensorChange c = v.changes().getFirst();
            assertEquals(first.name(), c.spec().name());
            assertEquals(3, c.positions().get(I32, 0));
            assertEquals(1, c.values().get(I16, 0));
            assertTrue(c.xorValues());
        }
    }

    @Test
    void layoutChangesAreDetected() {
        List<TensorData> base = randomModel(41);
        try (Arena arena = Arena.ofShared();
             Snapshot snap = Snapshot.copyOf(base);
             DeltaEncoder enc = new DeltaEncoder(Kernels.get(), 1)) {
            TensorData t = base.getFirst();
            long[] shape = t.spec().shape();
            List<List<TensorData>> variants = List.of(
                    replace(base, 0, new TensorData(new TensorSpec(t.name() + ".x", t.spec().dtype(), shape), t.bytes())),
                    replace(base, 0, new TensorData(new TensorSpec(t.name(), Dtype.F16, shape), t.bytes())),
                    replace(base, 0, new TensorData(new TensorSpec(t.name(), t.spec().dtype(), new long[] {t.spec().numel()}), t.bytes())),
                    base.subList(1, base.size()));
            for (List<TensorData> v : variants) {
                EncodedVersion e = enc.diff(snap, v, ValueMode.XOR, arena);
                assertTrue(e.layoutChanged());
                assertTrue(e.changes().isEmpty());
                assertEquals(1.0, e.density());
            }
            EncodedVersion fromEmpty;
            try (Snapshot empty = Snapshot.empty()) {
                fromEmpty = enc.diff(empty, base, ValueMode.XOR, arena);
                assertTrue(fromEmpty.layoutChanged());
                enc.advance(empty, fromEmpty, base);
                assertTrue(empty.sameLayout(base.stream().map(TensorData::spec).toList()));
            }
        }
    }

    @Test
    void duplicateNamesAreRefused() {
        List<TensorData> base = randomModel(51);
        List<TensorData> dup = new ArrayList<>(base);
        dup.add(base.getFirst());
        try (Arena arena = Arena.ofShared();
             Snapshot snap = Snapshot.copyOf(base);
             DeltaEncoder enc = new DeltaEncoder(Kernels.get(), 1)) {
            assertThrows(IllegalArgumentException.class, () -> enc.diff(snap, dup, ValueMode.XOR, arena));
            assertThrows(IllegalArgumentException.class, () -> Snapshot.copyOf(dup));
        }
    }

    // ---- helpers ---------------------------------------------------------------------------

    private static void checkAgainstScalar(List<TensorData> base, List<TensorData> next, EncodedVersion v) {
        int ci = 0;
        long total = 0;
        for (TensorData n : next.stream().sorted((a, b) -> a.name().compareTo(b.name())).toList()) {
            TensorData o = base.stream().filter(t -> t.name().equals(n.name())).findFirst().orElseThrow();
            int w = n.spec().dtype().width();
            List<Long> changed = new ArrayList<>();
            for (long i = 0; i < n.spec().numel(); i++) {
                if (n.bytes().asSlice(i * w, w).mismatch(o.bytes().asSlice(i * w, w)) >= 0) {
                    changed.add(i);
                }
            }
            if (changed.isEmpty()) {
                continue;
            }
            TensorChange c = v.changes().get(ci++);
            assertEquals(n.name(), c.spec().name());
            assertEquals(changed.size(), c.count());
            for (int k = 0; k < changed.size(); k++) {
                long i = changed.get(k);
                assertEquals(i, Integer.toUnsignedLong(c.positions().get(I32, 4L * k)));
                for (int b = 0; b < w; b++) {
                    byte nb = n.bytes().get(ValueLayout.JAVA_BYTE, i * w + b);
                    byte ob = o.bytes().get(ValueLayout.JAVA_BYTE, i * w + b);
                    byte expect = c.xorValues() ? (byte) (nb ^ ob) : nb;
                    assertEquals(expect, c.values().get(ValueLayout.JAVA_BYTE, (long) k * w + b));
                }
            }
            total += changed.size();
        }
        assertEquals(ci, v.changes().size());
        assertEquals(total, v.changedElements());
    }

    private static byte[][] flatten(EncodedVersion v) {
        byte[][] out = new byte[v.changes().size() * 2][];
        for (int i = 0; i < v.changes().size(); i++) {
            out[2 * i] = v.changes().get(i).positions().toArray(ValueLayout.JAVA_BYTE);
            out[2 * i + 1] = v.changes().get(i).values().toArray(ValueLayout.JAVA_BYTE);
        }
        return out;
    }

    private static List<TensorData> replace(List<TensorData> list, int i, TensorData t) {
        List<TensorData> out = new ArrayList<>(list);
        out.set(i, t);
        return out;
    }

    static TensorData f32(String name, float[] values) {
        return new TensorData(new TensorSpec(name, Dtype.F32, new long[] {values.length}), MemorySegment.ofArray(values.clone()));
    }

    /** A few tensors of every element width, some empty or scalar. */
    static List<TensorData> randomModel(long seed) {
        Random r = new Random(seed);
        List<TensorData> out = new ArrayList<>();
        Object[][] specs = {
            {"model.embed_tokens.weight", Dtype.BF16, new long[] {37, 41}},
            {"model.layers.0.mlp.down_proj.weight", Dtype.BF16, new long[] {3000}},
            {"model.layers.0.input_layernorm.weight", Dtype.F32, new long[] {513}},
            {"model.layers.0.self_attn.q_proj.weight", Dtype.F16, new long[] {7, 9, 5}},
            {"model.norm.weight", Dtype.F64, new long[] {33}},
            {"model.scale", Dtype.U8, new long[] {}},
            {"model.codes", Dtype.I8, new long[] {999}},
            {"model.empty", Dtype.F32, new long[] {0, 4}},
        };
        for (Object[] s : specs) {
            TensorSpec spec = new TensorSpec((String) s[0], (Dtype) s[1], (long[]) s[2]);
            MemorySegment seg = Arena.ofAuto().allocate(Math.max(1, spec.byteLength())).asSlice(0, spec.byteLength());
            byte[] bytes = new byte[(int) spec.byteLength()];
            r.nextBytes(bytes);
            MemorySegment.copy(bytes, 0, seg, ValueLayout.JAVA_BYTE, 0, bytes.length);
            out.add(new TensorData(spec, seg));
        }
        return out;
    }

    /** Copies of {@code base} with each element's lowest byte bumped with probability {@code p}. */
    static List<TensorData> perturb(List<TensorData> base, double p, long seed) {
        Random r = new Random(seed);
        List<TensorData> out = new ArrayList<>();
        for (TensorData t : base) {
            long n = t.spec().byteLength();
            MemorySegment seg = Arena.ofAuto().allocate(Math.max(1, n)).asSlice(0, n);
            seg.copyFrom(t.bytes());
            int w = t.spec().dtype().width();
            for (long i = 0; i < t.spec().numel(); i++) {
                if (r.nextDouble() < p) {
                    long at = i * w + r.nextInt(w);
                    seg.set(ValueLayout.JAVA_BYTE, at, (byte) (seg.get(ValueLayout.JAVA_BYTE, at) + 1 + r.nextInt(3)));
                }
            }
            out.add(new TensorData(t.spec(), seg));
        }
        return out;
    }
}
