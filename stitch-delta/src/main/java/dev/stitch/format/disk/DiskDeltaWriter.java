package dev.stitch.format.disk;

import dev.stitch.encode.TensorChange;
import dev.stitch.encode.ValueMode;
import dev.stitch.digest.Digests;
import dev.stitch.format.DeltaFormat;
import dev.stitch.format.FormatFiles;
import dev.stitch.format.PreconditionFailedException;
import dev.stitch.format.VersionWriter;
import dev.stitch.format.WriteResult;
import dev.stitch.format.WrittenFile;
import dev.stitch.format.ZstdFrames;
import dev.stitch.kernels.DeltaKernels;
import dev.stitch.kernels.Kernels;
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
 * Writes a version as slime v2 disk_delta (docs/formats/disk-delta.md §3): per changed tensor one 1-D U8 entry
 * keyed by its HF name holding a zstd frame of the xor or overwrite payload, files
 * {@code model-%05d-of-%05d.safetensors} (0-based) split at {@code maxFileBytes}, each file's
 * {@code __metadata__} mapping its tensors to the xxh3-128 of their new bytes, and the index last.
 */
public final class DiskDeltaWriter implements VersionWriter {

    /** The format this writer writes, as refusals name it. */
    private static final String BACKEND = DeltaFormat.DISK_DELTA.id();
    /** Default split point: receivers read each file fully into memory. */
    public static final long DEFAULT_MAX_FILE_BYTES = 2L << 30;

    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** Bytes of a tensor scanned per kernel call when building an overwrite payload. */
    private static final long OVERWRITE_CHUNK = 1L << 20;

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
    @Override
    public WriteResult write(long version, List<TensorChange> changes, Path dir) throws IOException {
        long t0 = System.nanoTime();
        check(changes);
        List<TensorChange> sorted = new ArrayList<>(changes);
        sorted.sort(Comparator.comparing((TensorChange c) -> c.spec().name(), SafetensorsWriter.NAME_ORDER));
        // tensors are independent, so their payloads are built and compressed in parallel (order is kept)
        List<Payload> payloads = sorted.parallelStream().map(c -> {
            byte[] payload = mode == ValueMode.XOR ? xorPayload(c.oldTensor(), c.newTensor()) : overwritePayload(c.oldTensor(), c.newTensor());
            return new Payload(c.spec().name(), ZstdFrames.compress(payload), payload.length,
                    c.newDigest(Kernels.get()).hex());
        }).toList();
        long raw = payloads.stream().mapToLong(Payload::rawLength).sum();
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

    /** {@code new XOR old}, byte by byte (slime v2 xor payload). */
    static byte[] xorPayload(MemorySegment old, MemorySegment neu) {
        byte[] out = neu.toArray(ValueLayout.JAVA_BYTE);
        Kernels.get().xorInto(MemorySegment.ofArray(out), old);
        return out;
    }

    /** The slime v2 overwrite payload: u32 LE count, then the changed byte offsets (u32 LE), then their new bytes. */
    static byte[] overwritePayload(MemorySegment old, MemorySegment neu) {
        DeltaKernels kernels = Kernels.get();
        long n = neu.byteSize();
        int count = Math.toIntExact(kernels.countChanged(old, neu, 1));
        byte[] out = new byte[Math.toIntExact(4 + 5L * count)];
        MemorySegment o = MemorySegment.ofArray(out);
        o.set(U32, 0, count);
        // the kernel wants output room for a whole input, so it scans bounded chunks into small scratch buffers
        long chunk = Math.min(n, OVERWRITE_CHUNK);
        MemorySegment pos = MemorySegment.ofArray(new byte[Math.toIntExact(4 * chunk)]);
        MemorySegment val = MemorySegment.ofArray(new byte[Math.toIntExact(chunk)]);
        long k = 0;
        for (long at = 0; at < n; at += chunk) {
            long len = Math.min(chunk, n - at);
            long got = kernels.diffGather(old.asSlice(at, len), neu.asSlice(at, len), 1, at, pos, 4, val, false, false);
            if (k + got > count) {
                throw new IllegalStateException("tensor changed while its overwrite payload was built");
            }
            MemorySegment.copy(pos, 0, o, 4 + 4 * k, 4 * got);
            MemorySegment.copy(val, 0, o, 4 + 4L * count + k, got);
            k += got;
        }
        if (k != count) {
            throw new IllegalStateException("tensor changed while its overwrite payload was built");
        }
        return out;
    }
}
