package dev.stitch.format.sparse;

import dev.stitch.protocol.CanonicalJson;
import dev.stitch.encode.TensorChange;
import dev.stitch.kernels.Kernels;
import dev.stitch.format.DeltaFormat;
import dev.stitch.format.FormatFiles;
import dev.stitch.format.PreconditionFailedException;
import dev.stitch.format.VersionWriter;
import dev.stitch.format.WriteResult;
import dev.stitch.format.WrittenFile;
import dev.stitch.format.ZstdFrames;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.safetensors.SafetensorsWriter;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.math.BigInteger;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes a version as slime v1 sparse_delta files (docs/formats/sparse-delta.md §2): tensors in name order,
 * bucketed by encoded bytes, one {@code rank%04d_flush%06d.safetensors} per bucket with exactly
 * {@code __positions__} and {@code __values__}, the 8-key params and the 65-bit checksum. A version
 * the format cannot express (2.8) is refused with {@link PreconditionFailedException} before any file
 * is written.
 */
public final class SparseDeltaWriter implements VersionWriter {

    /** The format this writer writes, as refusals name it. */
    private static final String BACKEND = DeltaFormat.SPARSE_DELTA.id();
    /** Default bucket cap in encoded bytes. */
    public static final long DEFAULT_BUFFER_SIZE = 536_870_912L;

    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final SparseEncoding encoding;
    private final long bufferSize;
    private final int rank;

    /** A writer for one encoding, bucket cap and writer rank. */
    public SparseDeltaWriter(SparseEncoding encoding, long bufferSize, int rank) {
        if (bufferSize <= 0 || rank < 0) {
            throw new IllegalArgumentException("bucket cap must be positive and rank non-negative");
        }
        this.encoding = encoding;
        this.bufferSize = bufferSize;
        this.rank = rank;
    }

    /** The default writer: {@code deltas_zstd}, 512 MiB buckets, rank 0. */
    public static SparseDeltaWriter defaults() {
        return new SparseDeltaWriter(SparseEncoding.DELTAS_ZSTD, DEFAULT_BUFFER_SIZE, 0);
    }

    /** One param encoded for a bucket: positions bytes and new value bits in the param dtype. */
    private record Encoded(TensorSpec spec, byte[] positions, int posWidth, MemorySegment newValues, long count) {
        long encodedBytes() {
            return positions.length + count * spec.dtype().width();
        }
    }

    /**
     * Checks the preconditions of docs/formats/sparse-delta.md §2.8 (NaN values, dtype, index and gap range)
     * for every change, throwing {@link PreconditionFailedException} on the first failure.
     */
    public void check(List<TensorChange> changes) {
        for (TensorChange c : changes) {
            encode(c);
        }
    }

    /**
     * Writes the version's files into {@code dir}. Every change is encoded and checked before the
     * first file is written.
     *
     * @param version the version (written as {@code current_version})
     */
    @Override
    public WriteResult write(long version, List<TensorChange> changes, Path dir) throws IOException {
        long t0 = System.nanoTime();
        List<TensorChange> sorted = new ArrayList<>(changes);
        sorted.sort(Comparator.comparing((TensorChange c) -> c.spec().name(), SafetensorsWriter.NAME_ORDER));
        List<Encoded> encoded = new ArrayList<>(sorted.size());
        for (TensorChange c : sorted) {
            encoded.add(encode(c));
        }
        List<List<Encoded>> buckets = new ArrayList<>();
        List<Encoded> current = new ArrayList<>();
        long currentBytes = 0;
        for (Encoded e : encoded) {
            if (!current.isEmpty() && currentBytes + e.encodedBytes() > bufferSize) {
                buckets.add(current);
                current = new ArrayList<>();
                currentBytes = 0;
            }
            current.add(e);
            currentBytes += e.encodedBytes();
        }
        if (!current.isEmpty()) {
            buckets.add(current);
        }
        List<WrittenFile> files = new ArrayList<>();
        long raw = 0;
        long written = 0;
        for (int flush = 0; flush < buckets.size(); flush++) {
            String name = String.format("rank%04d_flush%06d.safetensors", rank, flush);
            BucketFile bf = buildBucket(buckets.get(flush), version);
            raw += bf.layout().fileLength();
            WrittenFile wf;
            if (encoding == SparseEncoding.DELTAS_ZSTD) {
                ByteArrayOutputStream bos = new ByteArrayOutputStream((int) Math.min(Integer.MAX_VALUE - 8, bf.layout().fileLength()));
                SafetensorsWriter.write(Channels.newChannel(bos), bf.layout(), bf.tensors()::get);
                byte[] frame = ZstdFrames.compress(bos.toByteArray());
                wf = FormatFiles.write(dir, name, ArtifactKind.TRANSITION, out -> out.write(frame));
            } else {
                wf = FormatFiles.write(dir, name, ArtifactKind.TRANSITION, out -> SafetensorsWriter.write(out, bf.layout(), bf.tensors()::get));
            }
            written += wf.size();
            files.add(wf);
        }
        return new WriteResult(files, encoding.id(), raw, written, System.nanoTime() - t0);
    }

    /** A bucket ready to serialize. */
    private record BucketFile(SafetensorsWriter.Layout layout, Map<String, MemorySegment> tensors, List<SparseParam> params, BigInteger checksum) {
    }

    private BucketFile buildBucket(List<Encoded> bucket, long version) {
        Dtype valueDtype = bucket.get(0).spec().dtype();
        for (Encoded e : bucket) {
            if (e.spec().dtype() != valueDtype) {
                valueDtype = Dtype.F32;
                break;
            }
        }
        long posBytes = 0;
        long valCount = 0;
        for (Encoded e : bucket) {
            posBytes += e.positions().length;
            valCount += e.count();
        }
        MemorySegment positions = MemorySegment.ofArray(new byte[Math.toIntExact(posBytes)]);
        MemorySegment values = MemorySegment.ofArray(new byte[Math.toIntExact(valCount * valueDtype.width())]);
        List<SparseParam> params = new ArrayList<>(bucket.size());
        long pos = 0;
        long val = 0;
        for (Encoded e : bucket) {
            MemorySegment.copy(MemorySegment.ofArray(e.positions()), 0, positions, pos, e.positions().length);
            Dtype pd = e.spec().dtype();
            for (long k = 0; k < e.count(); k++) {
                int bits = pd == Dtype.F32 ? e.newValues().get(U32, 4 * k) : e.newValues().get(U16, 2 * k) & 0xFFFF;
                if (valueDtype == Dtype.F32) {
                    values.set(U32, 4 * (val + k), SparseValues.toF32Bits(bits, pd));
                } else {
                    values.set(U16, 2 * (val + k), (short) bits);
                }
            }
            params.add(new SparseParam(e.spec().name(), pd, e.spec().shape(), pos, pos + e.positions().length, e.posWidth(), val, val + e.count()));
            pos += e.positions().length;
            val += e.count();
        }
        BigInteger checksum = SparseChecksum.of(positions, values, valueDtype);
        Map<String, String> meta = new LinkedHashMap<>();
        meta.put("encoding", encoding.id());
        meta.put("params", paramsJson(params));
        meta.put("current_version", Long.toString(version));
        meta.put("checksum", checksum.toString());
        Map<String, MemorySegment> tensors = new LinkedHashMap<>();
        tensors.put("__positions__", positions);
        tensors.put("__values__", values);
        SafetensorsWriter.Layout layout = SafetensorsWriter.layout(meta, List.of(
            new TensorSpec("__positions__", Dtype.U8, new long[] {posBytes}),
            new TensorSpec("__values__", valueDtype, new long[] {valCount})));
        return new BucketFile(layout, tensors, params, checksum);
    }

    /** The params text exactly as the reference writer formats it: 8 keys in order, {@code ", "} and {@code ": "}. */
    static String paramsJson(List<SparseParam> params) {
        StringBuilder sb = new StringBuilder(params.size() * 200);
        sb.append('[');
        for (int i = 0; i < params.size(); i++) {
            SparseParam p = params.get(i);
            if (i > 0) {
                sb.append(", ");
            }
            sb.append("{\"name\": ");
            CanonicalJson.appendString(sb, p.name());
            sb.append(", \"dtype\": \"").append(p.dtype().torchName()).append("\", \"shape\": [");
            long[] shape = p.shape();
            for (int d = 0; d < shape.length; d++) {
                if (d > 0) {
                    sb.append(", ");
                }
                sb.append(shape[d]);
            }
            sb.append("], \"pos_start\": ").append(p.posStart())
                .append(", \"pos_end\": ").append(p.posEnd())
                .append(", \"pos_width\": ").append(p.posWidth())
                .append(", \"val_start\": ").append(p.valStart())
                .append(", \"val_end\": ").append(p.valEnd())
                .append('}');
        }
        return sb.append(']').toString();
    }

    private Encoded encode(TensorChange change) {
        // a change diffed for stitch_delta is decoded here only when the publisher falls back to this format
        TensorChange c = change.withPositions(Kernels.get(), Arena.ofAuto());
        TensorSpec spec = c.spec();
        Dtype dt = spec.dtype();
        if (dt != Dtype.BF16 && dt != Dtype.F16 && dt != Dtype.F32) {
            throw new PreconditionFailedException(BACKEND, "tensor " + spec.name() + " has dtype " + dt + " (only BF16, F16, F32)");
        }
        long count = c.count();
        if (count > Integer.MAX_VALUE / 4) {
            throw new PreconditionFailedException(BACKEND, "tensor " + spec.name() + " has " + count + " changes, too many for one param");
        }
        int w = dt.width();
        MemorySegment newValues = MemorySegment.ofArray(new byte[(int) (count * w)]);
        long[] idx = new long[(int) count];
        long maxGap = 0;
        long prev = -1;
        for (int k = 0; k < count; k++) {
            long i = c.position(k);
            idx[k] = i;
            long gap = i - prev - 1;
            maxGap = Math.max(maxGap, gap);
            prev = i;
            MemorySegment.copy(c.newTensor(), i * w, newValues, (long) k * w, w);
            int bits = w == 4 ? newValues.get(U32, 4L * k) : newValues.get(U16, 2L * k) & 0xFFFF;
            if (SparseValues.isNaN(bits, dt)) {
                throw new PreconditionFailedException(BACKEND, "tensor " + spec.name() + " changes element " + i
                    + " to a NaN, which the NaN-masked receiver would drop");
            }
        }
        int posWidth;
        byte[] pos;
        if (encoding == SparseEncoding.INDICES) {
            if (prev >= (1L << 32)) {
                throw new PreconditionFailedException(BACKEND, "tensor " + spec.name() + " has an index >= 2^32");
            }
            posWidth = 4;
            pos = new byte[(int) (count * 4)];
            MemorySegment ps = MemorySegment.ofArray(pos);
            for (int k = 0; k < count; k++) {
                ps.set(U32, 4L * k, (int) idx[k]);
            }
        } else {
            if (maxGap >= (1L << 32)) {
                throw new PreconditionFailedException(BACKEND, "tensor " + spec.name() + " has a gap >= 2^32");
            }
            posWidth = maxGap <= 0xFFFF ? 2 : 4;
            pos = new byte[(int) (count * posWidth)];
            MemorySegment ps = MemorySegment.ofArray(pos);
            long p = -1;
            for (int k = 0; k < count; k++) {
                long gap = idx[k] - p - 1;
                p = idx[k];
                if (posWidth == 2) {
                    ps.set(U16, 2L * k, (short) gap);
                } else {
                    ps.set(U32, 4L * k, (int) gap);
                }
            }
        }
        return new Encoded(spec, pos, posWidth, newValues, count);
    }
}
