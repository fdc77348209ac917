package dev.stitch.format.disk;

import dev.stitch.encode.TensorChange;
import dev.stitch.encode.ValueMode;
import dev.stitch.format.Digests;
import dev.stitch.format.FormatFiles;
import dev.stitch.format.PreconditionFailedException;
import dev.stitch.format.WriteResult;
import dev.stitch.format.WrittenFile;
import dev.stitch.format.ZstdFrames;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.safetensors.SafetensorsWriter;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes a version as slime v2 disk_delta (delta-formats.md 3): per changed tensor one 1-D U8 entry
 * keyed by its HF name holding a zstd frame of the xor or overwrite payload, files
 * {@code model-%05d-of-%05d.safetensors} (0-based) split at {@code maxFileBytes}, each file's
 * {@code __metadata__} mapping its tensors to the xxh3-128 of their new bytes, and the index last.
 */
public final class DiskDeltaWriter {

    /** Backend name in manifests. */
    public static final String BACKEND = "disk_delta";
    /** Default split point: receivers read each file fully into memory. */
    public static final long DEFAULT_MAX_FILE_BYTES = 2L << 30;

    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong U64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final ValueMode mode;
    private final long maxFileBytes;

    public DiskDeltaWriter(ValueMode mode, long maxFileBytes) {
        if (maxFileBytes <= 0) {
            throw new IllegalArgumentException("maxFileBytes must be positive");
        }
        this.mode = mode;
        this.maxFileBytes = maxFileBytes;
    }

    /** Checks every change can be expressed: overwrite offsets are u32 (tensors ≤ 4 GiB); payloads fit one frame. */
    public void check(List<TensorChange> changes) {
        for (TensorChange c : changes) {
            long len = c.spec().byteLength();
            if (mode == ValueMode.OVERWRITE && len > (1L << 32)) {
                throw new PreconditionFailedException(BACKEND, "tensor " + c.spec().name() + " is larger than 4 GiB (overwrite offsets are u32)");
            }
            long payload = mode == ValueMode.XOR ? len : 4 + 5 * c.count() * c.spec().dtype().width();
            if (payload > ZstdFrames.MAX_ONE_SHOT) {
                throw new PreconditionFailedException(BACKEND, "tensor " + c.spec().name() + " needs a payload of up to " + payload
                    + " bytes, more than one frame is written in one piece");
            }
        }
    }

    private record Payload(String name, byte[] frame, long rawLength, String digest) {
    }

    /** Writes the version's delta files and then its index into {@code dir}. */
    public WriteResult write(long version, List<TensorChange> changes, Path dir) throws IOException {
        long t0 = System.nanoTime();
        check(changes);
        List<TensorChange> sorted = new ArrayList<>(changes);
        sorted.sort(Comparator.comparing((TensorChange c) -> c.spec().name(), SafetensorsWriter.NAME_ORDER));
        List<Payload> payloads = new ArrayList<>(sorted.size());
        long raw = 0;
        for (TensorChange c : sorted) {
            byte[] payload = mode == ValueMode.XOR ? xorPayload(c.oldTensor(), c.newTensor()) : overwritePayload(c.oldTensor(), c.newTensor());
            raw += payload.length;
            payloads.add(new Payload(c.spec().name(), ZstdFrames.compress(payload), payload.length,
                Digests.of(Digests.XXH3_128, c.newTensor())));
        }
        List<List<Payload>> groups = new ArrayList<>();
        List<Payload> cur = new ArrayList<>();
        long curBytes = 0;
        for (Payload p : payloads) {
            if (!cur.isEmpty() && curBytes + p.frame().length > maxFileBytes) {
                groups.add(cur);
                cur = new ArrayList<>();
                curBytes = 0;
            }
            cur.add(p);
            curBytes += p.frame().length;
        }
        if (!cur.isEmpty()) {
            groups.add(cur);
        }
        List<WrittenFile> files = new ArrayList<>();
        Map<String, String> weightMap = new LinkedHashMap<>();
        long written = 0;
        for (int i = 0; i < groups.size(); i++) {
            String name = String.format("model-%05d-of-%05d.safetensors", i, groups.size());
            Map<String, String> meta = new LinkedHashMap<>();
            Map<String, MemorySegment> data = new LinkedHashMap<>();
            List<TensorSpec> specs = new ArrayList<>();
            for (Payload p : groups.get(i)) {
                meta.put(p.name(), p.digest());
                data.put(p.name(), MemorySegment.ofArray(p.frame()));
                specs.add(new TensorSpec(p.name(), Dtype.U8, new long[] {p.frame().length}));
                weightMap.put(p.name(), name);
            }
            SafetensorsWriter.Layout layout = SafetensorsWriter.layout(meta, specs);
            WrittenFile wf = FormatFiles.write(dir, name, ArtifactKind.TRANSITION, out -> SafetensorsWriter.write(out, layout, data::get));
            written += wf.size();
            files.add(wf);
        }
        DiskDeltaIndex index = new DiskDeltaIndex(version, version - 1, mode, "zstd", Digests.XXH3_128, weightMap);
        byte[] indexBytes = index.toJson().getBytes(StandardCharsets.UTF_8);
        WrittenFile idx = FormatFiles.write(dir, DiskDeltaIndex.FILE, ArtifactKind.TRANSITION_META, out -> out.write(indexBytes));
        files.add(idx);
        written += idx.size();
        return new WriteResult(files, mode.id(), raw, written, System.nanoTime() - t0);
    }

    /** {@code new XOR old}, byte by byte. */
    static byte[] xorPayload(MemorySegment old, MemorySegment neu) {
        long n = neu.byteSize();
        byte[] out = new byte[Math.toIntExact(n)];
        MemorySegment o = MemorySegment.ofArray(out);
        long i = 0;
        for (; i + 8 <= n; i += 8) {
            o.set(U64, i, old.get(U64, i) ^ neu.get(U64, i));
        }
        for (; i < n; i++) {
            out[(int) i] = (byte) (old.get(ValueLayout.JAVA_BYTE, i) ^ neu.get(ValueLayout.JAVA_BYTE, i));
        }
        return out;
    }

    /** {@code [count u32][count u32 byte offsets][count new bytes]} over the bytes that differ. */
    static byte[] overwritePayload(MemorySegment old, MemorySegment neu) {
        long n = neu.byteSize();
        int count = 0;
        long i = 0;
        for (; i + 8 <= n; i += 8) {
            long x = old.get(U64, i) ^ neu.get(U64, i);
            if (x != 0) {
                // fold each byte onto its low bit, then count the bytes that had any bit set
                x |= x >>> 4;
                x |= x >>> 2;
                x |= x >>> 1;
                count += Long.bitCount(x & 0x0101010101010101L);
            }
        }
        for (; i < n; i++) {
            if (old.get(ValueLayout.JAVA_BYTE, i) != neu.get(ValueLayout.JAVA_BYTE, i)) {
                count++;
            }
        }
        byte[] out = new byte[Math.toIntExact(4 + 5L * count)];
        MemorySegment o = MemorySegment.ofArray(out);
        o.set(U32, 0, count);
        int k = 0;
        for (long b = 0; b < n; b++) {
            byte nb = neu.get(ValueLayout.JAVA_BYTE, b);
            if (old.get(ValueLayout.JAVA_BYTE, b) != nb) {
                o.set(U32, 4 + 4L * k, (int) b);
                out[4 + 4 * count + k] = nb;
                k++;
            }
        }
        return out;
    }
}
