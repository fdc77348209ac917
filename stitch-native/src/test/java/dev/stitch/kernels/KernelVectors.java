package dev.stitch.kernels;

import static dev.stitch.kernels.KernelVectorFile.le64;

import dev.stitch.hash.Hash128;
import dev.stitch.hash.Xxh3Stream;
import dev.stitch.kernels.KernelVectorFile.Case;
import dev.stitch.tensor.Dtype;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The contract's vectors for the C harness, with the Java kernels' outputs as the expected ones:
 * every element width (so every dtype), densities 0, sparse and dense, sizes one element either side
 * of the 16/32/64/256-byte vector and block boundaries and of the 4 KiB fusion and 16 KiB patch
 * blocks, +-0.0, infinities, quiet and signalling NaNs, gap edge cases and the kernels' error
 * results. Deterministic (fixed seeds). {@code main} writes the file for src/test/c/run-vectors.sh.
 */
final class KernelVectors {

    private static final int[] WIDTHS = {1, 2, 4, 8};
    /** Byte sizes around the SIMD vector and block boundaries of every variant (16 NEON, 32 AVX2, 64 AVX-512 lines, 256 skip blocks). */
    private static final int[] SMALL_BYTES = {0, 8, 16, 24, 32, 48, 56, 64, 72, 120, 128, 136, 192, 248, 256, 264, 320};
    /** Byte sizes around the 1 KiB hash block, the 4 KiB fusion block and the 16 KiB patch block. */
    private static final int[] LARGE_BYTES = {1024, 4096, 16384};

    private final DeltaKernels java = Kernels.java();
    private final List<Case> cases = new ArrayList<>();
    private final SplittableRandom rnd = new SplittableRandom(20_250_917);

    private KernelVectors() {
    }

    /** Every case, in a fixed order. */
    static List<Case> build() {
        KernelVectors v = new KernelVectors();
        v.diffs();
        v.specialValueDiffs();
        v.hashingDiffs();
        v.scatters();
        v.fusedApplies();
        v.gaps();
        v.planes();
        v.valueChecks();
        v.hashes();
        v.byteKernels();
        return List.copyOf(v.cases);
    }

    /** Writes the vectors to the file named by the first argument. */
    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            throw new IllegalArgumentException("usage: KernelVectors FILE");
        }
        List<Case> all = build();
        KernelVectorFile.write(Path.of(args[0]), all);
        System.out.println("wrote " + all.size() + " kernel vectors to " + args[0]);
    }

    private void add(String name, String kernel, long[] scalars, List<byte[]> inputs, List<byte[]> outputs) {
        cases.add(new Case(name, kernel, scalars, List.copyOf(inputs), List.copyOf(outputs)));
    }

    // ---- inputs -----------------------------------------------------------------------------

    /** An (old, new) pair of {@code n} elements where about {@code density} of them differ (the contract's generator). */
    private byte[][] pair(int width, int n, double density) {
        return DeltaKernelsContract.pair(rnd, width, n, density);
    }

    private static int[] sizesAround(int[] bytes, int width) {
        return Arrays.stream(bytes).flatMap(b -> b == 0 ? Arrays.stream(new int[] {0}) : Arrays.stream(new int[] {b - width, b, b + width}))
            .filter(b -> b >= 0).map(b -> b / width).distinct().toArray();
    }

    private static byte[] bytes(MemorySegment seg, long from, long length) {
        return seg.asSlice(from, length).toArray(ValueLayout.JAVA_BYTE);
    }

    private static byte[] digest(Hash128 h) {
        return ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(h.lo()).putLong(h.hi()).array();
    }

    private static MemorySegment seg(byte[] b) {
        return MemorySegment.ofArray(b);
    }

    private static int flag(boolean b) {
        return b ? 1 : 0;
    }

    // ---- diff -------------------------------------------------------------------------------

    private void diffs() {
        for (int w : WIDTHS) {
            for (int n : sizesAround(SMALL_BYTES, w)) {
                for (double density : new double[] {0, 0.03, 0.3, 1}) {
                    byte[][] p = pair(w, n, density);
                    countCase(w, "n=" + n + " density=" + density, p);
                    for (int pw : new int[] {4, 8}) {
                        for (int mode = 0; mode < 4; mode++) {
                            diffCase(w, pw, (mode & 1) != 0, (mode & 2) != 0, pw == 8 ? (1L << 33) + 5 : 1000, p,
                                "n=" + n + " density=" + density);
                        }
                    }
                }
            }
            for (int n : sizesAround(LARGE_BYTES, w)) {
                for (double density : new double[] {0.001, 0.03, 1}) {
                    byte[][] p = pair(w, n, density);
                    countCase(w, "n=" + n + " density=" + density, p);
                    diffCase(w, 4, false, true, 0, p, "n=" + n + " density=" + density);
                    diffCase(w, 8, true, false, 7, p, "n=" + n + " density=" + density);
                }
            }
        }
    }

    private void countCase(int w, String what, byte[][] p) {
        add("count_changed w=" + w + " " + what, "count_changed", new long[] {w},
            List.of(p[0], p[1]), List.of(le64(java.countChanged(seg(p[0]), seg(p[1]), w))));
    }

    private void diffCase(int w, int pw, boolean xor, boolean update, long base, byte[][] p, String what) {
        int n = p[0].length / w;
        MemorySegment snapshot = seg(p[0].clone());
        MemorySegment positions = seg(new byte[n * pw]);
        MemorySegment values = seg(new byte[n * w]);
        long c = java.diffGather(snapshot, seg(p[1]), w, base, positions, pw, values, xor, update);
        add("diff_gather w=" + w + " pw=" + pw + " xor=" + flag(xor) + " update=" + flag(update) + " base=" + base + " " + what,
            "diff_gather", new long[] {w, base, pw, flag(xor), flag(update)}, List.of(p[0], p[1]),
            List.of(le64(c), bytes(positions, 0, c * pw), bytes(values, 0, c * w), bytes(snapshot, 0, p[0].length)));
    }

    /** Bit patterns of every float width that compare specially: +-0, infinities, quiet and signalling NaNs, subnormals. */
    private static long[] specials(int w) {
        return switch (w) {
            case 1 -> new long[] {0x00, 0x80, 0x7F, 0xFF, 0x7C, 0x7D, 0xFC, 0x01};
            case 2 -> new long[] {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFC1, 0x7C00, 0x7E00, 0x7C01, 0x0001, 0x3F80};
            case 4 -> new long[] {0, 0x8000_0000L, 0x7F80_0000L, 0xFF80_0000L, 0x7FC0_0000L, 0x7F80_0001L, 0xFFC0_0001L, 1, 0x3F80_0000L};
            default -> new long[] {0, Long.MIN_VALUE, 0x7FF0_0000_0000_0000L, 0xFFF0_0000_0000_0000L, 0x7FF8_0000_0000_0000L,
                0x7FF0_0000_0000_0001L, 0xFFF8_0000_0000_0001L, 1, 0x3FF0_0000_0000_0000L};
        };
    }

    /**
     * Diffs of special values placed across vector boundaries: the kernels compare bits, so +0.0 vs
     * -0.0 and a NaN whose payload moved are changes, and a NaN next to its own bits is not.
     */
    private void specialValueDiffs() {
        for (int w : WIDTHS) {
            long[] specials = specials(w);
            for (int n : new int[] {64 / w + 1, 256 / w + 3, 1024 / w - 1}) {
                byte[] old = new byte[n * w];
                byte[] neu = new byte[n * w];
                for (int i = 0; i < n; i++) {
                    long o = specials[rnd.nextInt(specials.length)];
                    long v = switch (rnd.nextInt(4)) {
                        case 0 -> o;
                        case 1 -> o ^ (1L << (8 * w - 1));
                        case 2 -> o ^ 1;
                        default -> specials[rnd.nextInt(specials.length)];
                    };
                    DeltaKernelsContract.putElem(old, w, i, o);
                    DeltaKernelsContract.putElem(neu, w, i, v);
                }
                byte[][] p = {old, neu};
                countCase(w, "special values n=" + n, p);
                for (int mode = 0; mode < 4; mode++) {
                    diffCase(w, 4, (mode & 1) != 0, (mode & 2) != 0, 0, p, "special values n=" + n);
                }
                diffCase(w, 8, true, true, 1L << 32, p, "special values n=" + n);
            }
        }
    }

    /** The diff fused with the stream hash, behind stream prefixes that leave it empty, short, ragged or holding stripes back. */
    private void hashingDiffs() {
        for (int w : WIDTHS) {
            int[] sizes = w == 2 ? new int[] {0, 5, 32, 64, 2051, 4096, 70_000} : new int[] {0, 64 / w, 4096 / w + 3, 8192 / w};
            for (int n : sizes) {
                int[] prefixes = n >= 70_000 ? new int[] {0, 300} : new int[] {0, 17, 64, 192, 300, 320, 1088};
                for (int prefix : prefixes) {
                    for (int mode = 0; mode < 4; mode++) {
                        if (n >= 70_000 && mode != 2) {
                            continue;
                        }
                        boolean xor = (mode & 1) != 0;
                        boolean update = (mode & 2) != 0;
                        byte[][] p = pair(w, n, 0.05);
                        byte[] head = new byte[prefix];
                        rnd.nextBytes(head);
                        int pw = w == 2 || n % 2 == 0 ? 4 : 8;
                        MemorySegment snapshot = seg(p[0].clone());
                        MemorySegment positions = seg(new byte[n * pw]);
                        MemorySegment values = seg(new byte[n * w]);
                        Xxh3Stream stream = java.newXxh3Stream().update(seg(head));
                        long c = java.diffGatherHashing(snapshot, seg(p[1]), w, 1000, positions, pw, values, xor, update, stream);
                        add("diff_gather_xxh3 w=" + w + " pw=" + pw + " xor=" + flag(xor) + " update=" + flag(update) + " n=" + n
                                + " prefix=" + prefix, "diff_gather_xxh3", new long[] {w, 1000, pw, flag(xor), flag(update)},
                            List.of(p[0], p[1], head),
                            List.of(le64(c), bytes(positions, 0, c * pw), bytes(values, 0, c * w), bytes(snapshot, 0, p[0].length),
                                digest(stream.digest())));
                    }
                }
            }
        }
    }

    // ---- apply ------------------------------------------------------------------------------

    /** Positions and values (new, or XOR deltas) that turn {@code p[0]} into {@code p[1]}, from the Java diff. */
    private byte[][] changes(byte[][] p, int w, int pw, boolean xor) {
        int n = p[0].length / w;
        MemorySegment positions = seg(new byte[n * pw]);
        MemorySegment values = seg(new byte[n * w]);
        long c = java.diffGather(seg(p[0].clone()), seg(p[1]), w, 0, positions, pw, values, xor, false);
        return new byte[][] {bytes(positions, 0, c * pw), bytes(values, 0, c * w)};
    }

    private void scatters() {
        for (int w : WIDTHS) {
            for (int n : new int[] {1, 33, 2000}) {
                for (double density : new double[] {0, 0.01, 0.3, 1}) {
                    byte[][] p = pair(w, n, density);
                    for (int pw : new int[] {4, 8}) {
                        for (boolean xor : new boolean[] {false, true}) {
                            byte[][] ch = changes(p, w, pw, xor);
                            scatterCase(w, pw, xor, p[0], ch[0], ch[1], "n=" + n + " density=" + density);
                        }
                    }
                    for (boolean xor : new boolean[] {false, true}) {
                        byte[][] ch = changes(p, w, 8, xor);
                        int count = ch[1].length / w;
                        MemorySegment units = seg(new byte[(int) java.escapedGapUnits(seg(ch[0]), 8, count) * 2]);
                        long unitCount = java.encodeEscapedGaps(seg(ch[0]), 8, count, units);
                        MemorySegment dst = seg(p[0].clone());
                        long r = java.scatterEscapedGaps(dst, w, units, unitCount, seg(ch[1]), count, xor);
                        add("scatter_escaped w=" + w + " xor=" + flag(xor) + " n=" + n + " density=" + density, "scatter_escaped",
                            new long[] {w, flag(xor)}, List.of(p[0], bytes(units, 0, unitCount * 2), ch[1]),
                            List.of(le64(r), bytes(dst, 0, p[0].length)));
                    }
                }
            }
            // a position past the end: the elements before it are written, the result names it
            byte[][] p = pair(w, 100, 0.2);
            for (int pw : new int[] {4, 8}) {
                byte[][] ch = changes(p, w, pw, false);
                byte[] badPositions = Arrays.copyOf(ch[0], ch[0].length + pw);
                DeltaKernelsContract.putElem(badPositions, pw, ch[0].length / pw, 100);
                byte[] badValues = Arrays.copyOf(ch[1], ch[1].length + w);
                scatterCase(w, pw, false, p[0], badPositions, badValues, "position past the end");
            }
        }
    }

    private void scatterCase(int w, int pw, boolean xor, byte[] dst0, byte[] positions, byte[] values, String what) {
        int count = values.length / w;
        long limit = dst0.length / w;
        MemorySegment dst = seg(dst0.clone());
        long r;
        try {
            if (xor) {
                java.scatterXor(dst, w, seg(positions), pw, seg(values), count);
            } else {
                java.scatter(dst, w, seg(positions), pw, seg(values), count);
            }
            r = count;
        } catch (IllegalArgumentException e) {
            r = -(firstAtOrPast(positions, pw, count, limit) + 1);
        }
        add("scatter w=" + w + " pw=" + pw + " xor=" + flag(xor) + " " + what, "scatter", new long[] {w, pw, flag(xor), limit},
            List.of(dst0, positions, values), List.of(le64(r), bytes(dst, 0, dst0.length)));
    }

    /** Index of the first position at or past {@code limit}; the Java kernels throw there and the C ones return -(k+1). */
    private static long firstAtOrPast(byte[] positions, int pw, int count, long limit) {
        for (int k = 0; k < count; k++) {
            if (Long.compareUnsigned(DeltaKernelsContract.elem(positions, pw, k), limit) >= 0) {
                return k;
            }
        }
        throw new IllegalStateException("the Java kernels refused positions that are all in range");
    }

    /** Apply fused with the hash: patched (not written), scattered with undo, restored, and from escaped gaps. */
    private void fusedApplies() {
        for (int w : WIDTHS) {
            int[] sizes = {0, 1, 7, 16384 / w - 1, 16384 / w + 1, 40_000 / w};
            for (int n : sizes) {
                for (double density : new double[] {0, 0.02, 1}) {
                    byte[][] p = pair(w, n, density);
                    for (int pw : new int[] {4, 8}) {
                        boolean xor = (n + pw) % 3 == 0 || density == 1;
                        byte[][] ch = changes(p, w, pw, xor);
                        patchedCase(w, pw, xor, p[0], ch[0], ch[1], "n=" + n + " density=" + density);
                        scatterHashCase(w, pw, xor, p[0], ch[0], ch[1], "n=" + n + " density=" + density);
                    }
                    if (n > 0) {
                        escapedHashCase(w, p, density);
                    }
                }
            }
            // positions past the end: patched refuses, scatter restores what it wrote
            byte[][] p = pair(w, 20_000 / w, 0.01);
            byte[][] ch = changes(p, w, 4, false);
            byte[] bad = Arrays.copyOf(ch[0], ch[0].length + 4);
            DeltaKernelsContract.putElem(bad, 4, ch[0].length / 4, p[0].length / w);
            byte[] values = Arrays.copyOf(ch[1], ch[1].length + w);
            patchedCase(w, 4, false, p[0], bad, values, "position past the end");
            scatterHashCase(w, 4, true, p[0], bad, values, "position past the end");
        }
    }

    private void patchedCase(int w, int pw, boolean xor, byte[] cur0, byte[] positions, byte[] values, String what) {
        int count = values.length / w;
        MemorySegment cur = seg(cur0.clone());
        List<byte[]> out = new ArrayList<>();
        try {
            Hash128 h = java.patchedXxh3(cur, w, seg(positions), pw, seg(values), count, xor);
            out.add(le64(count));
            out.add(bytes(cur, 0, cur0.length));
            out.add(digest(h));
        } catch (IllegalArgumentException e) {
            out.add(le64(-(firstAtOrPast(positions, pw, count, cur0.length / w) + 1)));
            out.add(bytes(cur, 0, cur0.length));
        }
        add("patched_xxh3 w=" + w + " pw=" + pw + " xor=" + flag(xor) + " " + what, "patched_xxh3", new long[] {w, pw, flag(xor)},
            List.of(cur0, positions, values), out);
    }

    private void scatterHashCase(int w, int pw, boolean xor, byte[] dst0, byte[] positions, byte[] values, String what) {
        int count = values.length / w;
        MemorySegment dst = seg(dst0.clone());
        MemorySegment undo = seg(new byte[count * w]);
        List<byte[]> out = new ArrayList<>();
        try {
            Hash128 h = java.scatterXxh3(dst, w, seg(positions), pw, seg(values), count, xor, undo);
            out.add(le64(count));
            out.add(bytes(dst, 0, dst0.length));
            out.add(bytes(undo, 0, (long) count * w));
            out.add(digest(h));
            // the undo the fused scatter saved puts the tensor back
            MemorySegment restored = seg(bytes(dst, 0, dst0.length));
            java.restoreUndo(restored, w, seg(positions), pw, undo, count);
            add("restore_undo w=" + w + " pw=" + pw + " " + what, "restore_undo", new long[] {w, pw},
                List.of(bytes(dst, 0, dst0.length), positions, bytes(undo, 0, (long) count * w)),
                List.of(bytes(restored, 0, dst0.length)));
        } catch (IllegalArgumentException e) {
            out.add(le64(-(firstAtOrPast(positions, pw, count, dst0.length / w) + 1)));
            out.add(bytes(dst, 0, dst0.length));
        }
        add("scatter_xxh3 w=" + w + " pw=" + pw + " xor=" + flag(xor) + " " + what, "scatter_xxh3", new long[] {w, pw, flag(xor)},
            List.of(dst0, positions, values), out);
    }

    private void escapedHashCase(int w, byte[][] p, double density) {
        int n = p[0].length / w;
        boolean xor = density != 0.02;
        byte[][] ch = changes(p, w, 8, xor);
        int count = ch[1].length / w;
        MemorySegment units = seg(new byte[(int) Math.max(2, java.escapedGapUnits(seg(ch[0]), 8, count) * 2)]);
        long unitCount = java.encodeEscapedGaps(seg(ch[0]), 8, count, units);
        MemorySegment dst = seg(p[0].clone());
        MemorySegment undo = seg(new byte[count * w]);
        Hash128 h = java.scatterEscapedXxh3(dst, w, units, unitCount, seg(ch[1]), count, xor, undo);
        add("scatter_escaped_xxh3 w=" + w + " xor=" + flag(xor) + " n=" + n + " density=" + density, "scatter_escaped_xxh3",
            new long[] {w, flag(xor)}, List.of(p[0], bytes(units, 0, unitCount * 2), ch[1]),
            List.of(bytes(dst, 0, p[0].length), bytes(undo, 0, (long) count * w), digest(h)));
    }

    // ---- gap coding -------------------------------------------------------------------------

    private void gaps() {
        List<long[]> streams = new ArrayList<>();
        streams.add(new long[0]);
        streams.add(new long[] {0, 1, 2});
        // gaps of 65534, 65535, 65536 and 131070, the escape edges of docs/formats/stitch-delta.md §4.2
        streams.add(new long[] {65534, 65534 + 65535 + 1, 65534 + 65535 + 1 + 65536 + 1, 65534 + 65535 + 1 + 65536 + 1 + 131070 + 1});
        for (int maxStep : new int[] {2, 600, 70_000, 300_000}) {
            streams.add(DeltaKernelsContract.randomPositions(rnd, 1 + rnd.nextInt(3000), maxStep));
        }
        for (long[] pos : streams) {
            for (int pw : new int[] {4, 8}) {
                gapCases(pos, pw);
            }
        }
        long[] beyond32 = {(1L << 32) + 3, (1L << 32) + 70_000};
        gapCases(beyond32, 8);
        decodeErrors();
    }

    private void gapCases(long[] pos, int pw) {
        int count = pos.length;
        byte[] positions = DeltaKernelsContract.positionsBytes(pos, pw);
        String what = "pw=" + pw + " count=" + count + " last=" + (count == 0 ? -1 : pos[count - 1]);
        long max = java.maxGap(seg(positions), pw, count);
        add("max_gap " + what, "max_gap", new long[] {pw}, List.of(positions), List.of(le64(max)));
        for (int gw : new int[] {2, 4}) {
            if (max > (gw == 2 ? 0xFFFFL : 0xFFFF_FFFFL)) {
                continue;
            }
            MemorySegment g = seg(new byte[count * gw]);
            java.encodeGaps(seg(positions), pw, count, g, gw);
            byte[] gapBytes = bytes(g, 0, (long) count * gw);
            add("encode_gaps gw=" + gw + " " + what, "encode_gaps", new long[] {pw, gw}, List.of(positions), List.of(gapBytes));
            MemorySegment back = seg(new byte[count * pw]);
            java.decodeGaps(seg(gapBytes), gw, count, back, pw);
            add("decode_gaps gw=" + gw + " " + what, "decode_gaps", new long[] {gw, pw}, List.of(gapBytes),
                List.of(bytes(back, 0, (long) count * pw)));
        }
        long units = java.escapedGapUnits(seg(positions), pw, count);
        add("escaped_gap_units " + what, "escaped_gap_units", new long[] {pw}, List.of(positions), List.of(le64(units)));
        long first = count == 0 ? 0 : rnd.nextLong(pos[0] + 1);
        for (long firstIndex : new long[] {0, first}) {
            long need = java.escapedGapUnits(seg(DeltaKernelsContract.positionsBytes(Arrays.stream(pos).map(p -> p - firstIndex).toArray(), 8)), 8, count);
            for (long capacity : new long[] {need, need - 1}) {
                if (capacity < 0) {
                    continue;
                }
                MemorySegment u = seg(new byte[(int) capacity * 2]);
                List<byte[]> out = new ArrayList<>();
                try {
                    long written = java.encodeEscapedGaps(seg(positions), pw, count, u, firstIndex);
                    out.add(le64(written));
                    out.add(bytes(u, 0, written * 2));
                } catch (IllegalArgumentException e) {
                    out.add(le64(-1));
                }
                add("encode_escaped_gaps capacity=" + capacity + " first=" + firstIndex + " " + what, "encode_escaped_gaps",
                    new long[] {pw, capacity, firstIndex}, List.of(positions), out);
            }
        }
        MemorySegment u = seg(new byte[(int) units * 2]);
        java.encodeEscapedGaps(seg(positions), pw, count, u);
        byte[] unitBytes = bytes(u, 0, units * 2);
        long limit = count == 0 ? 0 : pos[count - 1] + 1;
        if (pw == 8 || limit <= 1L << 32) {
            decodeCase(unitBytes, pw, count, limit, "exact " + what);
            decodeCase(unitBytes, pw, count + 5, limit + 1000, "roomy " + what);
        }
        long[] summary = summary(unitBytes);
        add("escaped_summary " + what, "escaped_summary", new long[0], List.of(unitBytes),
            List.of(ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(summary[0]).putLong(summary[1]).array()));
    }

    /** The model of stitch_escaped_summary (the Java kernels fold it into their stream validation): unit sum and non-escape count. */
    private static long[] summary(byte[] units) {
        long sum = 0;
        long ends = 0;
        for (int u = 0; u < units.length / 2; u++) {
            long unit = DeltaKernelsContract.elem(units, 2, u);
            sum += unit;
            ends += unit != 0xFFFF ? 1 : 0;
        }
        return new long[] {sum, ends};
    }

    /** A stream that decodes: the positions. The Java kernels check limits as the C ones do (4-byte positions stop at 2^32). */
    private void decodeCase(byte[] units, int pw, long maxCount, long requestedLimit, String what) {
        long limit = cLimit(pw, requestedLimit);
        MemorySegment out = seg(new byte[(int) maxCount * pw]);
        long k = java.decodeEscapedGaps(seg(units), units.length / 2, out, pw, maxCount, limit);
        add("decode_escaped_gaps max=" + maxCount + " limit=" + limit + " " + what, "decode_escaped_gaps",
            new long[] {pw, maxCount, limit}, List.of(units), List.of(le64(k), bytes(out, 0, k * pw)));
    }

    /** Streams the decoder refuses, each with one fault: a trailing escape (-1), too many positions (-2), a position past the limit (-3). */
    private void decodeErrors() {
        short[] three = {0, 0, 0};
        for (int pw : new int[] {4, 8}) {
            decodeError(new short[] {1, (short) 0xFFFF}, pw, 8, 1000, -1, "trailing escape");
            decodeError(three, pw, 2, 1000, -2, "three positions, two allowed");
            decodeError(three, pw, 8, 2, -3, "position 2 at limit 2");
            decodeError(new short[] {5, (short) 0xFFFF, 7}, pw, 8, 65_000, -3, "escaped position past the limit");
        }
        // a 4-byte position stream stops at 2^32 whatever the tensor's size
        decodeError(DeltaKernelsContract.escapedOf(new long[] {1L << 32}), 4, 1, 1L << 32, -3, "position 2^32 in 4 bytes");
    }

    private void decodeError(short[] units, int pw, long maxCount, long requestedLimit, long code, String what) {
        long limit = cLimit(pw, requestedLimit);
        byte[] unitBytes = DeltaKernelsContract.unitsBytes(units);
        MemorySegment out = seg(new byte[(int) maxCount * pw]);
        try {
            java.decodeEscapedGaps(seg(unitBytes), units.length, out, pw, maxCount, limit);
            throw new IllegalStateException("the Java kernels decoded a malformed stream: " + what);
        } catch (IllegalArgumentException expected) {
            List<byte[]> outputs = new ArrayList<>();
            outputs.add(le64(code));
            if (code == -3) {
                outputs.add(le64(lastPosition(units)));
            }
            add("decode_escaped_gaps error " + code + " pw=" + pw + " " + what, "decode_escaped_gaps",
                new long[] {pw, maxCount, limit}, List.of(unitBytes), outputs);
        }
    }

    /** The limit NativeKernels hands stitch_decode_escaped_gaps: 4-byte positions stop at 2^32. */
    private static long cLimit(int pw, long limit) {
        return pw == 4 ? Math.min(limit, KernelArgs.U32_MAX + 1) : limit;
    }

    /** The position the last non-escape unit ends at (the error detail of these one-fault streams). */
    private static long lastPosition(short[] units) {
        long prev = -1;
        long gap = 0;
        for (short s : units) {
            int unit = s & 0xFFFF;
            gap += unit;
            if (unit != 0xFFFF) {
                prev += gap + 1;
                gap = 0;
            }
        }
        return prev;
    }

    // ---- byte planes, value checks ----------------------------------------------------------

    private void planes() {
        for (int w : WIDTHS) {
            for (int n : new int[] {0, 1, 15, 16, 17, 31, 32, 33, 64, 1001}) {
                byte[] src = new byte[n * w];
                rnd.nextBytes(src);
                MemorySegment planes = seg(new byte[src.length]);
                java.splitPlanes(seg(src), w, n, planes);
                byte[] planeBytes = bytes(planes, 0, src.length);
                add("split_planes w=" + w + " n=" + n, "split_planes", new long[] {w}, List.of(src), List.of(planeBytes));
                MemorySegment back = seg(new byte[src.length]);
                java.mergePlanes(seg(planeBytes), w, n, back);
                add("merge_planes w=" + w + " n=" + n, "merge_planes", new long[] {w}, List.of(planeBytes), List.of(bytes(back, 0, src.length)));
            }
        }
    }

    private void valueChecks() {
        Dtype[] kinds = {Dtype.BF16, Dtype.F16, Dtype.F32, Dtype.F64, Dtype.F8_E4M3, Dtype.F8_E5M2, Dtype.F8_E8M0};
        for (Dtype dtype : kinds) {
            int w = dtype.width();
            long[] specials = specials(w);
            long[] clean = Arrays.stream(specials).filter(b -> !JavaValueChecks.isNaN(dtype, b)).toArray();
            long[] nans = Arrays.stream(specials).filter(b -> JavaValueChecks.isNaN(dtype, b)).toArray();
            for (int n : new int[] {1, 31, 32, 33, 255, 256, 257, 1000}) {
                for (int nanAt : new int[] {-1, 0, n / 2, n - 1}) {
                    byte[] values = new byte[n * w];
                    for (int i = 0; i < n; i++) {
                        DeltaKernelsContract.putElem(values, w, i, clean[rnd.nextInt(clean.length)]);
                    }
                    if (nanAt >= 0 && nans.length > 0) {
                        DeltaKernelsContract.putElem(values, w, nanAt, nans[rnd.nextInt(nans.length)]);
                    }
                    boolean nan = java.containsNaN(seg(values), dtype, n);
                    add("contains_nan " + dtype + " n=" + n + " nan_at=" + nanAt, "contains_nan", new long[] {NativeKernels.nanKind(dtype)},
                        List.of(values), List.of(le64(nan ? 1 : 0)));
                }
            }
        }
        for (Dtype dtype : new Dtype[] {Dtype.BF16, Dtype.F16, Dtype.F32}) {
            int w = dtype.width();
            for (int n : new int[] {0, 1, 17, 500}) {
                byte[] values = new byte[n * w];
                rnd.nextBytes(values);
                long[] specials = specials(w);
                for (int i = 0; i < n; i += 3) {
                    DeltaKernelsContract.putElem(values, w, i, specials[rnd.nextInt(specials.length)]);
                }
                add("xor_widened " + dtype + " n=" + n, "xor_widened", new long[] {NativeKernels.nanKind(dtype)}, List.of(values),
                    List.of(le64(java.xorWidenedValues(seg(values), dtype, n))));
            }
        }
    }

    // ---- hashes and whole-buffer kernels ----------------------------------------------------

    private void hashes() {
        List<Integer> lengths = new ArrayList<>();
        for (int len = 0; len <= 260; len++) {
            lengths.add(len);
        }
        for (int len : new int[] {511, 512, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097, 16_384 + 333, 100_000}) {
            lengths.add(len);
        }
        for (int len : lengths) {
            byte[] data = new byte[len];
            rnd.nextBytes(data);
            add("xxh3_128 len=" + len, "xxh3_128", new long[0], List.of(data), List.of(digest(java.xxh3(seg(data)))));
        }
        for (int trial = 0; trial < 60; trial++) {
            int len = trial < 40 ? trial * 37 : rnd.nextInt(200_000);
            byte[] data = new byte[len];
            rnd.nextBytes(data);
            List<Long> pieces = new ArrayList<>();
            Xxh3Stream s = java.newXxh3Stream();
            long at = 0;
            while (at < len) {
                long step = Math.min(len - at, rnd.nextInt(4) == 0 ? rnd.nextInt(5000) : rnd.nextInt(300));
                pieces.add(step);
                s.update(seg(data).asSlice(at, step));
                at += step;
            }
            add("xxh3_stream len=" + len + " pieces=" + pieces.size(), "xxh3_stream", pieces.stream().mapToLong(Long::longValue).toArray(),
                List.of(data), List.of(digest(s.digest())));
        }
    }

    private void byteKernels() {
        for (int n : new int[] {0, 1, 7, 8, 63, 64, 65, 127, 128, 129, 4097, 65_537}) {
            byte[] a = new byte[n];
            byte[] b = new byte[n];
            rnd.nextBytes(a);
            rnd.nextBytes(b);
            MemorySegment dst = seg(a.clone());
            java.xorInto(dst, seg(b));
            add("xor_into n=" + n, "xor_into", new long[0], List.of(a, b), List.of(bytes(dst, 0, n)));
            add("xor_bytes n=" + n, "xor_bytes", new long[0], List.of(a), List.of(le64(java.xorBytes(seg(a)))));
            add("read_stream n=" + n, "read_stream", new long[0], List.of(a), List.of(le64(java.streamRead(seg(a)))));
            MemorySegment filled = seg(new byte[n]);
            java.streamFill(filled, (byte) 0x5A);
            add("fill_stream n=" + n, "fill_stream", new long[] {n, 0x5A}, List.of(), List.of(bytes(filled, 0, n)));
        }
        for (boolean valid : new boolean[] {true, false}) {
            byte[] dst0 = new byte[100];
            rnd.nextBytes(dst0);
            int[] offsets = {0, 5, 99, 50, valid ? 98 : 100, 7};
            ByteBuffer ob = ByteBuffer.allocate(offsets.length * 4).order(ByteOrder.LITTLE_ENDIAN);
            for (int o : offsets) {
                ob.putInt(o);
            }
            byte[] values = {1, 2, 3, 4, 5, 6};
            MemorySegment dst = seg(dst0.clone());
            long r;
            try {
                java.overwriteBytes(dst, seg(ob.array()), seg(values), offsets.length);
                r = offsets.length;
            } catch (IllegalArgumentException e) {
                r = -(4 + 1);
            }
            add("overwrite_bytes valid=" + valid, "overwrite_bytes", new long[0], List.of(dst0, ob.array(), values),
                List.of(le64(r), bytes(dst, 0, dst0.length)));
        }
    }
}
