package dev.stitch.format.stitchdelta;

import dev.stitch.format.DeltaFormatException;
import dev.stitch.digest.Digests;
import dev.stitch.format.TensorPatch;
import dev.stitch.format.ZstdFrames;
import dev.stitch.hash.Hash128;
import dev.stitch.kernels.DeltaKernels;
import dev.stitch.kernels.Kernels;
import dev.stitch.safetensors.SafetensorsWriter;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;

/**
 * A parsed {@code stitch-delta-1} file: header, record index and record headers are validated on
 * read (magic, format id, bounds, records tiling the file in name order); {@link #patches} decodes
 * every record (in parallel) into validated {@link TensorPatch}es carrying the digest of the new bytes.
 */
public final class StitchDeltaFile {

    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final String where;
    private final byte[] bytes;
    private final MemorySegment data;
    private final long version;
    private final long baseVersion;
    private final List<StitchRecord> records;

    private StitchDeltaFile(String where, byte[] bytes, long version, long baseVersion, List<StitchRecord> records) {
        this.where = where;
        this.bytes = bytes;
        this.data = MemorySegment.ofArray(bytes);
        this.version = version;
        this.baseVersion = baseVersion;
        this.records = records;
    }

    /** Reads a file into memory and validates its structure. */
    public static StitchDeltaFile read(Path path) throws IOException {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ); Arena arena = Arena.ofConfined()) {
            long size = ch.size();
            if (size > ZstdFrames.MAX_ONE_SHOT) {
                throw new DeltaFormatException(path + ": " + size + " bytes is larger than a stitch_delta file may be");
            }
            MemorySegment mapped = ch.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            return parse(mapped.toArray(ValueLayout.JAVA_BYTE), path.toString());
        }
    }

    /** Whether {@code head} starts with the stitch_delta magic. */
    public static boolean hasMagic(MemorySegment head) {
        return head.byteSize() >= 8 && head.asSlice(0, 8).mismatch(MemorySegment.ofArray(StitchDeltaFormat.MAGIC)) == -1;
    }

    /** Parses and validates the bytes of a file (the array is kept, not copied). */
    public static StitchDeltaFile parse(byte[] bytes, String where) {
        MemorySegment data = MemorySegment.ofArray(bytes);
        long size = data.byteSize();
        if (size < StitchDeltaFormat.FILE_HEADER || !hasMagic(data)) {
            throw new DeltaFormatException(where + ": not a stitch_delta file (magic missing or file too short)");
        }
        int idLen = data.get(U16, 8) & 0xFFFF;
        if (idLen != StitchDeltaFormat.FORMAT_ID.length()) {
            throw new DeltaFormatException(where + ": unknown format id length " + idLen);
        }
        String id = new String(data.asSlice(10, idLen).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.US_ASCII);
        if (!id.equals(StitchDeltaFormat.FORMAT_ID)) {
            throw new DeltaFormatException(where + ": format id '" + id + "' is not " + StitchDeltaFormat.FORMAT_ID);
        }
        int flags = data.get(U16, 24) & 0xFFFF;
        if (flags != 0) {
            throw new DeltaFormatException(where + ": unknown header flags " + flags);
        }
        long version = data.get(U64, 26);
        long base = data.get(U64, 34);
        long n = data.get(U32, 42) & 0xFFFFFFFFL;
        if (version < 1 || base != version - 1) {
            throw new DeltaFormatException(where + ": version " + version + " / base " + base + " is not a valid transition");
        }
        long indexEnd = StitchDeltaFormat.FILE_HEADER + 16 * n;
        if (n > Integer.MAX_VALUE || indexEnd > size) {
            throw new DeltaFormatException(where + ": record index of " + n + " entries runs past the end of the file");
        }
        List<StitchRecord> records = new ArrayList<>((int) n);
        long cursor = indexEnd;
        String prevName = null;
        for (int i = 0; i < n; i++) {
            long off = data.get(U64, StitchDeltaFormat.FILE_HEADER + 16L * i);
            long len = data.get(U64, StitchDeltaFormat.FILE_HEADER + 16L * i + 8);
            if (off != cursor || len <= 0 || len > size - off) {
                throw new DeltaFormatException(where + ": record " + i + " at [" + off + ", +" + len + ") does not follow the previous record");
            }
            StitchRecord r = parseRecord(data.asSlice(off, len), off, where + " record " + i);
            if (prevName != null && SafetensorsWriter.NAME_ORDER.compare(prevName, r.name()) >= 0) {
                throw new DeltaFormatException(where + ": records are not sorted by name (" + prevName + ", " + r.name() + ")");
            }
            prevName = r.name();
            records.add(r);
            cursor = off + len;
        }
        if (cursor != size) {
            throw new DeltaFormatException(where + ": " + (size - cursor) + " trailing bytes after the last record");
        }
        return new StitchDeltaFile(where, bytes, version, base, List.copyOf(records));
    }

    private static StitchRecord parseRecord(MemorySegment r, long fileOffset, String where) {
        try {
            long p = 0;
            int nameLen = r.get(U16, p) & 0xFFFF;
            p += 2;
            String name;
            try {
                name = StandardCharsets.UTF_8.newDecoder().decode(r.asSlice(p, nameLen).asByteBuffer()).toString();
            } catch (CharacterCodingException e) {
                throw new DeltaFormatException(where + ": tensor name is not UTF-8");
            }
            p += nameLen;
            int code = r.get(ValueLayout.JAVA_BYTE, p++) & 0xFF;
            if (code >= StitchDeltaFormat.DTYPE_CODES.length) {
                throw new DeltaFormatException(where + " (" + name + "): unknown dtype code " + code);
            }
            Dtype dtype = StitchDeltaFormat.DTYPE_CODES[code];
            int width = r.get(ValueLayout.JAVA_BYTE, p++) & 0xFF;
            if (width != dtype.width()) {
                throw new DeltaFormatException(where + " (" + name + "): element width " + width + " does not match " + dtype);
            }
            int rank = r.get(ValueLayout.JAVA_BYTE, p++) & 0xFF;
            if (rank > StitchDeltaFormat.MAX_RANK) {
                throw new DeltaFormatException(where + " (" + name + "): rank " + rank + " too large");
            }
            long[] shape = new long[rank];
            for (int d = 0; d < rank; d++) {
                shape[d] = r.get(U64, p);
                p += 8;
                if (shape[d] < 0) {
                    throw new DeltaFormatException(where + " (" + name + "): negative dimension");
                }
            }
            TensorSpec spec = new TensorSpec(name, dtype, shape);
            long byteLength = r.get(U64, p);
            p += 8;
            if (byteLength != spec.byteLength()) {
                throw new DeltaFormatException(where + " (" + name + "): byte length " + byteLength + " does not match " + spec);
            }
            int mode = r.get(ValueLayout.JAVA_BYTE, p++) & 0xFF;
            int layout = r.get(ValueLayout.JAVA_BYTE, p++) & 0xFF;
            if (mode > 1 || layout > 1 || (layout == StitchDeltaFormat.LAYOUT_DENSE && mode != StitchDeltaFormat.MODE_OVERWRITE)) {
                throw new DeltaFormatException(where + " (" + name + "): invalid value mode " + mode + " / layout " + layout);
            }
            boolean dense = layout == StitchDeltaFormat.LAYOUT_DENSE;
            long count = r.get(U64, p);
            long units = r.get(U64, p + 8);
            p += 16;
            long numel = spec.numel();
            if (dense ? (count != numel || units != 0) : (count < 1 || count > numel || units < count || units > count + numel / 65535 + 1)) {
                throw new DeltaFormatException(where + " (" + name + "): " + count + " changes in " + units + " gap units do not fit " + numel + " elements");
            }
            Hash128 digest = new Hash128(Long.reverseBytes(r.get(U64, p)), Long.reverseBytes(r.get(U64, p + 8)));
            p += 16;
            int nStreams = r.get(ValueLayout.JAVA_BYTE, p++) & 0xFF;
            int wantStreams = dense ? width : 2 + width;
            if (nStreams != wantStreams) {
                throw new DeltaFormatException(where + " (" + name + "): " + nStreams + " streams, expected " + wantStreams);
            }
            long[] expectRaw = new long[nStreams];
            for (int s = 0; s < nStreams; s++) {
                expectRaw[s] = dense ? numel : (s < 2 ? units : count);
            }
            long[] codec = new long[nStreams];
            long[] stored = new long[nStreams];
            long[] raw = new long[nStreams];
            for (int s = 0; s < nStreams; s++) {
                codec[s] = r.get(ValueLayout.JAVA_BYTE, p++) & 0xFF;
                stored[s] = r.get(U64, p);
                raw[s] = r.get(U64, p + 8);
                p += 16;
                if (codec[s] > 1 || raw[s] != expectRaw[s] || (codec[s] == StitchDeltaFormat.CODEC_RAW && stored[s] != raw[s]) || stored[s] < 0) {
                    throw new DeltaFormatException(where + " (" + name + "): stream " + s + " declares codec " + codec[s] + ", " + stored[s]
                        + " stored / " + raw[s] + " raw bytes, expected " + expectRaw[s] + " raw");
                }
                // decoding allocates the raw size, so it must be one the stored bytes can actually hold
                if (codec[s] == StitchDeltaFormat.CODEC_ZSTD && raw[s] > ZstdFrames.maxContentSize(stored[s])) {
                    throw new DeltaFormatException(where + " (" + name + "): stream " + s + " of " + stored[s]
                        + " zstd bytes cannot hold the " + raw[s] + " raw bytes it declares");
                }
            }
            List<StitchRecord.Stream> streams = new ArrayList<>(nStreams);
            for (int s = 0; s < nStreams; s++) {
                if (stored[s] > r.byteSize() - p) {
                    throw new DeltaFormatException(where + " (" + name + "): stream " + s + " runs past the record (truncated)");
                }
                streams.add(new StitchRecord.Stream(codec[s] == StitchDeltaFormat.CODEC_ZSTD, stored[s], raw[s], fileOffset + p));
                p += stored[s];
            }
            if (p != r.byteSize()) {
                throw new DeltaFormatException(where + " (" + name + "): " + (r.byteSize() - p) + " trailing bytes in the record");
            }
            return new StitchRecord(spec, mode == StitchDeltaFormat.MODE_XOR, dense, count, units, digest, List.copyOf(streams), fileOffset, r.byteSize());
        } catch (IndexOutOfBoundsException e) {
            throw new DeltaFormatException(where + ": record header is truncated", e);
        } catch (ArithmeticException e) {
            throw new DeltaFormatException(where + ": record sizes overflow", e);
        }
    }

    public String where() {
        return where;
    }

    public long version() {
        return version;
    }

    public long baseVersion() {
        return baseVersion;
    }

    public List<StitchRecord> records() {
        return records;
    }

    /**
     * Decodes every record against the local tensors: each name must exist locally with the record's
     * dtype and shape. Decoding runs in parallel; any malformed stream fails the whole file.
     */
    public List<TensorPatch> patches(Function<String, TensorSpec> local) {
        for (StitchRecord r : records) {
            TensorSpec have = local.apply(r.name());
            if (have == null) {
                throw new DeltaFormatException(where + ": tensor " + r.name() + " does not exist in the local checkpoint");
            }
            if (!have.equals(r.spec())) {
                throw new DeltaFormatException(where + ": record " + r.spec() + " does not match the local " + have);
            }
        }
        return records.parallelStream().map(this::decode).toList();
    }

    /** Decodes one record into a patch. */
    public TensorPatch decode(StitchRecord r) {
        int w = r.spec().dtype().width();
        if (r.dense()) {
            MemorySegment bytes = MemorySegment.ofArray(new byte[Math.toIntExact(r.spec().byteLength())]);
            decodeInto(r, MemorySegment.NULL, bytes);
            return TensorPatch.dense(r.name(), w, false, bytes, r.digest().hex(), Digests.XXH3_128);
        }
        MemorySegment gaps = MemorySegment.ofArray(new byte[Math.toIntExact(r.units() * 2)]);
        MemorySegment values = MemorySegment.ofArray(new byte[Math.toIntExact(r.count() * w)]);
        decodeInto(r, gaps, values);
        // the gap stream stays as it is (2 bytes a change); the kernel that applies it checks it before writing
        return TensorPatch.scatterEscaped(r.name(), r.spec().byteLength(), w, r.xor(), gaps, r.units(), values, r.count(),
            r.digest().hex(), Digests.XXH3_128);
    }

    /**
     * Decodes one record's streams into caller memory: the escaped u16 gap stream ({@code units * 2}
     * bytes; unused for dense records) and the values ({@code count * width} bytes, the whole tensor
     * for dense records). Lets a caller reuse buffers across records.
     */
    public void decodeInto(StitchRecord r, MemorySegment gaps, MemorySegment values) {
        String what = where + " (" + r.name() + ")";
        int w = r.spec().dtype().width();
        DeltaKernels kernels = Kernels.get();
        List<StitchRecord.Stream> streams = r.streams();
        if (r.dense()) {
            kernels.mergePlanes(planes(streams, 0, w, r.spec().numel(), what + " values"), w, r.spec().numel(), values);
            return;
        }
        kernels.mergePlanes(planes(streams, 0, 2, r.units(), what + " gaps"), 2, r.units(), gaps);
        kernels.mergePlanes(planes(streams, 2, w, r.count(), what + " values"), w, r.count(), values);
    }

    /** Plane buffers up to this size are reused per thread; planes are merged right away, so reuse saves zeroing fresh arrays. */
    private static final int REUSED_PLANES_BYTES = 64 << 20;
    private static final ThreadLocal<byte[]> PLANES = new ThreadLocal<>();

    /**
     * Decodes {@code width} plane streams starting at {@code first}, each {@code n} bytes, into one plane
     * buffer, valid until this thread's next call.
     */
    private MemorySegment planes(List<StitchRecord.Stream> streams, int first, int width, long n, String what) {
        int len = Math.toIntExact(n * width);
        byte[] out = PLANES.get();
        if (out == null || out.length < len) {
            out = new byte[len];
            if (len <= REUSED_PLANES_BYTES) {
                PLANES.set(out);
            }
        }
        for (int b = 0; b < width; b++) {
            StitchRecord.Stream s = streams.get(first + b);
            if (s.compressed()) {
                ZstdFrames.decompressInto(bytes, (int) s.offset(), (int) s.stored(), out, (int) (b * n), n, what + " plane " + b);
            } else {
                System.arraycopy(bytes, (int) s.offset(), out, (int) (b * n), (int) n);
            }
        }
        return MemorySegment.ofArray(out).asSlice(0, len);
    }

    @Override
    public String toString() {
        return where + ": " + StitchDeltaFormat.FORMAT_ID + " version " + version + " on " + baseVersion + ", " + records.size() + " records "
            + Arrays.toString(records.stream().map(StitchRecord::name).toArray());
    }
}
