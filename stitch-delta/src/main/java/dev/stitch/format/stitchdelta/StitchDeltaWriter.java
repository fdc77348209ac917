package dev.stitch.format.stitchdelta;

import static dev.stitch.format.stitchdelta.StitchDeltaFormat.CODEC_RAW;
import static dev.stitch.format.stitchdelta.StitchDeltaFormat.CODEC_ZSTD;
import static dev.stitch.format.stitchdelta.StitchDeltaFormat.FORMAT_ID;
import static dev.stitch.format.stitchdelta.StitchDeltaFormat.MAGIC;

import dev.stitch.encode.TensorChange;
import dev.stitch.encode.ValueMode;
import dev.stitch.format.FormatFiles;
import dev.stitch.format.PreconditionFailedException;
import dev.stitch.format.WriteResult;
import dev.stitch.format.WrittenFile;
import dev.stitch.format.ZstdFrames;
import dev.stitch.hash.Hash128;
import dev.stitch.kernels.DeltaKernels;
import dev.stitch.kernels.Kernels;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.safetensors.SafetensorsWriter;
import dev.stitch.tensor.TensorSpec;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Writes a version in this project's compact format {@code stitch-delta-1} (delta-formats.md 4,
 * layout in docs/formats/stitch-delta.md): per changed tensor a record with the escaped u16 gap
 * stream and the value stream, each byte-plane split and zstd level 1 (raw when that is not
 * smaller), or a dense record holding the whole new tensor when that is smaller; every record carries
 * the xxh3-128 of the tensor's new bytes. Records are sorted by name and indexed; output is
 * deterministic.
 */
public final class StitchDeltaWriter {

    /** Backend name in manifests. */
    public static final String BACKEND = "stitch_delta";
    /** The manifest's {@code delta_encoding}. */
    public static final String FORMAT = FORMAT_ID;
    /** Default split point between files. */
    public static final long DEFAULT_MAX_FILE_BYTES = 2L << 30;

    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final ValueMode mode;
    private final long maxFileBytes;

    public StitchDeltaWriter(ValueMode mode, long maxFileBytes) {
        if (maxFileBytes <= 0) {
            throw new IllegalArgumentException("maxFileBytes must be positive");
        }
        this.mode = mode;
        this.maxFileBytes = maxFileBytes;
    }

    /** The default writer: xor values, 2 GiB files. */
    public static StitchDeltaWriter defaults() {
        return new StitchDeltaWriter(ValueMode.XOR, DEFAULT_MAX_FILE_BYTES);
    }

    /** File name of the {@code i}-th file of a version. */
    public static String fileName(int i) {
        return String.format("delta-%05d.stdelta", i);
    }

    /** Checks every change fits one record (streams are compressed in one piece). */
    public void check(List<TensorChange> changes) {
        for (TensorChange c : changes) {
            if (c.spec().byteLength() > ZstdFrames.MAX_ONE_SHOT) {
                throw new PreconditionFailedException(BACKEND, "tensor " + c.spec().name() + " is larger than one record can hold");
            }
        }
    }

    /** An encoded record. */
    record Encoded(String name, byte[] bytes, long raw) {
    }

    /** Writes the version's files into {@code dir} (none when {@code changes} is empty). */
    public WriteResult write(long version, List<TensorChange> changes, Path dir) throws IOException {
        long t0 = System.nanoTime();
        check(changes);
        List<TensorChange> sorted = new ArrayList<>(changes);
        sorted.sort(Comparator.comparing((TensorChange c) -> c.spec().name(), SafetensorsWriter.NAME_ORDER));
        for (int i = 1; i < sorted.size(); i++) {
            if (sorted.get(i).spec().name().equals(sorted.get(i - 1).spec().name())) {
                throw new IllegalArgumentException("tensor " + sorted.get(i).spec().name() + " changes twice");
            }
        }
        List<Encoded> records = sorted.parallelStream().map(this::encode).toList();
        List<List<Encoded>> groups = new ArrayList<>();
        List<Encoded> cur = new ArrayList<>();
        long curBytes = 0;
        for (Encoded e : records) {
            if (!cur.isEmpty() && curBytes + e.bytes().length > maxFileBytes) {
                groups.add(cur);
                cur = new ArrayList<>();
                curBytes = 0;
            }
            cur.add(e);
            curBytes += e.bytes().length;
        }
        if (!cur.isEmpty()) {
            groups.add(cur);
        }
        List<WrittenFile> files = new ArrayList<>();
        long raw = 0;
        long written = 0;
        for (int i = 0; i < groups.size(); i++) {
            List<Encoded> g = groups.get(i);
            byte[] header = fileHeader(version, version - 1, g);
            WrittenFile wf = FormatFiles.write(dir, fileName(i), ArtifactKind.TRANSITION, out -> {
                out.write(header);
                for (Encoded e : g) {
                    out.write(e.bytes());
                }
            });
            for (Encoded e : g) {
                raw += e.raw();
            }
            files.add(wf);
            written += wf.size();
        }
        return new WriteResult(files, FORMAT, raw, written, System.nanoTime() - t0);
    }

    /** The file header and record index for {@code records}, laid out back to back after it. */
    static byte[] fileHeader(long version, long base, List<Encoded> records) {
        int size = StitchDeltaFormat.FILE_HEADER + 16 * records.size();
        ByteBuffer b = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        b.put(MAGIC);
        byte[] id = FORMAT_ID.getBytes(StandardCharsets.US_ASCII);
        b.putShort((short) id.length).put(id);
        b.putShort((short) 0);
        b.putLong(version).putLong(base);
        b.putInt(records.size());
        long offset = size;
        for (Encoded e : records) {
            b.putLong(offset).putLong(e.bytes().length);
            offset += e.bytes().length;
        }
        return b.array();
    }

    /** Encodes one change as a record. */
    Encoded encode(TensorChange c) {
        TensorSpec spec = c.spec();
        int w = spec.dtype().width();
        long numel = spec.numel();
        long count = c.count();
        if (count > Integer.MAX_VALUE - 8 || count < 0 || count > numel) {
            throw new IllegalArgumentException("tensor " + spec.name() + ": bad change count " + count);
        }
        boolean xor = mode == ValueMode.XOR;
        MemorySegment values = c.values().asSlice(0, count * w);
        if (xor != c.xorValues()) {
            // xor and new bits convert into each other by XOR with the base element
            byte[] conv = values.toArray(ValueLayout.JAVA_BYTE);
            for (int k = 0; k < count; k++) {
                long p = c.positionWidth() == 4 ? c.positions().get(U32, 4L * k) & 0xFFFFFFFFL : c.positions().get(U64, 8L * k);
                for (int b = 0; b < w; b++) {
                    conv[k * w + b] ^= c.oldTensor().get(ValueLayout.JAVA_BYTE, p * w + b);
                }
            }
            values = MemorySegment.ofArray(conv);
        }
        DeltaKernels kernels = Kernels.get();
        long units = kernels.escapedGapUnits(c.positions(), c.positionWidth(), count);
        byte[] gapBytes = new byte[Math.toIntExact(units * 2)];
        kernels.encodeEscapedGaps(c.positions(), c.positionWidth(), count, MemorySegment.ofArray(gapBytes));
        List<byte[][]> sparse = new ArrayList<>(2 + w);
        sparse.addAll(storePlanes(splitPlanes(MemorySegment.ofArray(gapBytes), 2, units), 2));
        sparse.addAll(storePlanes(splitPlanes(values, w, count), w));
        long sparseStored = storedBytes(sparse);
        Hash128 digest = kernels.xxh3(c.newTensor());
        if (count * 4 >= numel) {
            List<byte[][]> dense = storePlanes(splitPlanes(c.newTensor(), w, numel), w);
            if (storedBytes(dense) < sparseStored) {
                return record(spec, false, true, numel, 0, digest, dense, numel * w);
            }
        }
        return record(spec, xor, false, count, units, digest, sparse, units * 2 + count * w);
    }

    private static long storedBytes(List<byte[][]> streams) {
        long n = 0;
        for (byte[][] s : streams) {
            n += s[1].length;
        }
        return n;
    }

    /** The byte planes of {@code count} units of {@code width} bytes (all byte 0s, then all byte 1s, ...). */
    private static byte[] splitPlanes(MemorySegment src, int width, long count) {
        byte[] out = new byte[Math.toIntExact(count * width)];
        Kernels.get().splitPlanes(src, width, count, MemorySegment.ofArray(out));
        return out;
    }

    /** Each of the {@code width} equal planes of {@code planes} as its own stream. */
    private static List<byte[][]> storePlanes(byte[] planes, int width) {
        int n = planes.length / width;
        List<byte[][]> out = new ArrayList<>(width);
        for (int b = 0; b < width; b++) {
            out.add(store(java.util.Arrays.copyOfRange(planes, b * n, (b + 1) * n)));
        }
        return out;
    }

    /** {codec, stored bytes, raw length}: zstd when it is smaller, else raw. */
    private static byte[][] store(byte[] planes) {
        if (planes.length == 0) {
            return new byte[][] {{CODEC_RAW}, planes, longBytes(0)};
        }
        byte[] z = ZstdFrames.compress(planes);
        if (z.length < planes.length) {
            return new byte[][] {{CODEC_ZSTD}, z, longBytes(planes.length)};
        }
        return new byte[][] {{CODEC_RAW}, planes, longBytes(planes.length)};
    }

    private static byte[] longBytes(long v) {
        return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array();
    }

    private static Encoded record(TensorSpec spec, boolean xor, boolean dense, long count, long units, Hash128 digest,
                                  List<byte[][]> streams, long raw) {
        byte[] name = spec.name().getBytes(StandardCharsets.UTF_8);
        if (name.length > StitchDeltaFormat.MAX_NAME_BYTES) {
            throw new IllegalArgumentException("tensor name longer than 65535 bytes");
        }
        long[] shape = spec.shape();
        int headerLen = 2 + name.length + 1 + 1 + 1 + 8 * shape.length + 8 + 1 + 1 + 8 + 8 + 16 + 1 + 17 * streams.size();
        long body = 0;
        for (byte[][] s : streams) {
            body += s[1].length;
        }
        ByteBuffer b = ByteBuffer.allocate(Math.toIntExact(headerLen + body)).order(ByteOrder.LITTLE_ENDIAN);
        b.putShort((short) name.length).put(name);
        b.put((byte) StitchDeltaFormat.code(spec.dtype()));
        b.put((byte) spec.dtype().width());
        b.put((byte) shape.length);
        for (long d : shape) {
            b.putLong(d);
        }
        b.putLong(spec.byteLength());
        b.put((byte) (xor ? StitchDeltaFormat.MODE_XOR : StitchDeltaFormat.MODE_OVERWRITE));
        b.put((byte) (dense ? StitchDeltaFormat.LAYOUT_DENSE : StitchDeltaFormat.LAYOUT_SPARSE));
        b.putLong(count).putLong(units);
        b.put(digest.bytes());
        b.put((byte) streams.size());
        for (byte[][] s : streams) {
            b.put(s[0][0]).putLong(s[1].length).put(s[2]);
        }
        for (byte[][] s : streams) {
            b.put(s[1]);
        }
        return new Encoded(spec.name(), b.array(), raw);
    }
}
