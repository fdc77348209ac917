package dev.stitch.format.disk;

import dev.stitch.encode.ValueMode;
import dev.stitch.format.DeltaFormatException;
import dev.stitch.digest.Digests;
import dev.stitch.format.TensorPatch;
import dev.stitch.format.ZstdFrames;
import dev.stitch.safetensors.SafetensorsFile;
import dev.stitch.safetensors.SafetensorsFormatException;
import dev.stitch.safetensors.TensorEntry;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.stream.Stream;

/**
 * Reads a disk_delta version directory into validated {@link TensorPatch}es (docs/formats/disk-delta.md §3.4
 * steps 2–5 up to the digest check): index codec, every {@code *.safetensors} delta file, every entry
 * (U8, 1-D, listed under its file, present locally, digest in metadata), exact payload sizes,
 * strictly ascending in-range overwrite offsets.
 */
public final class DiskDeltaVersion {

    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final DiskDeltaIndex index;
    private final List<TensorPatch> patches;

    private DiskDeltaVersion(DiskDeltaIndex index, List<TensorPatch> patches) {
        this.index = index;
        this.patches = patches;
    }

    public DiskDeltaIndex index() {
        return index;
    }

    /** One patch per changed tensor, carrying the expected digest of its new bytes. */
    public List<TensorPatch> patches() {
        return patches;
    }

    /**
     * Reads and validates the version in {@code dir} against the local tensors ({@code local} returns
     * null for a name the local checkpoint lacks, which is an error here).
     */
    public static DiskDeltaVersion read(Path dir, Function<String, TensorSpec> local) throws IOException {
        DiskDeltaIndex index = DiskDeltaIndex.read(dir);
        if (!Digests.supported(index.checksumFormat())) {
            throw new DeltaFormatException(dir + ": checksum_format " + index.checksumFormat() + " is not supported by this reader");
        }
        TreeSet<String> files = new TreeSet<>(index.weightMap().values());
        try (Stream<Path> s = Files.list(dir)) {
            s.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".safetensors") && !n.startsWith(".")).forEach(files::add);
        }
        List<TensorPatch> patches = new ArrayList<>();
        int seen = 0;
        for (String f : files) {
            Path p = dir.resolve(f);
            if (!Files.isRegularFile(p)) {
                throw new DeltaFormatException(dir + ": weight_map names " + f + " but the file is missing");
            }
            try (SafetensorsFile sf = SafetensorsFile.open(p)) {
                Map<String, String> meta = sf.metadata();
                for (TensorEntry e : sf.header().tensors()) {
                    String what = p + ": tensor '" + e.name() + "'";
                    if (e.spec().dtype() != Dtype.U8 || e.spec().shape().length != 1) {
                        throw new DeltaFormatException(what + " must be a 1-D U8 tensor, is " + e.spec());
                    }
                    if (!f.equals(index.weightMap().get(e.name()))) {
                        throw new DeltaFormatException(what + " is not listed under " + f + " in the index");
                    }
                    TensorSpec target = local.apply(e.name());
                    if (target == null) {
                        throw new DeltaFormatException(what + " does not exist in the local checkpoint");
                    }
                    String digest = meta.get(e.name());
                    if (digest == null) {
                        throw new DeltaFormatException(what + " has no digest in __metadata__");
                    }
                    patches.add(decode(sf.tensor(e), target, index.encoding(), digest, index.checksumFormat(), what));
                    seen++;
                }
            } catch (SafetensorsFormatException e) {
                throw new DeltaFormatException(e.getMessage(), e);
            }
        }
        if (seen != index.weightMap().size()) {
            throw new DeltaFormatException(dir + ": the index maps " + index.weightMap().size() + " tensors but the files hold " + seen);
        }
        return new DiskDeltaVersion(index, List.copyOf(patches));
    }

    private static TensorPatch decode(MemorySegment frame, TensorSpec target, ValueMode mode, String digest, String format, String what) {
        long len = target.byteLength();
        if (mode == ValueMode.XOR) {
            byte[] compressed = frame.toArray(ValueLayout.JAVA_BYTE);
            long declared = ZstdFrames.declaredSize(compressed, len, what);
            if (declared != len) {
                throw new DeltaFormatException(what + ": xor payload declares " + declared + " bytes, the tensor has " + len);
            }
            return TensorPatch.denseXorFrame(target.name(), len, compressed, digest, format);
        }
        byte[] payload = ZstdFrames.decompress(frame, 4 + 5 * len, what);
        if (payload.length < 4) {
            throw new DeltaFormatException(what + ": overwrite payload of " + payload.length + " bytes has no count");
        }
        MemorySegment ps = MemorySegment.ofArray(payload);
        long count = ps.get(U32, 0) & 0xFFFFFFFFL;
        if (payload.length != 4 + 5 * count) {
            throw new DeltaFormatException(what + ": overwrite payload is " + payload.length + " bytes, count " + count + " needs " + (4 + 5 * count));
        }
        long[] offsets = new long[(int) count];
        long prev = -1;
        for (int k = 0; k < count; k++) {
            long off = ps.get(U32, 4 + 4L * k) & 0xFFFFFFFFL;
            if (off <= prev || off >= len) {
                throw new DeltaFormatException(what + ": overwrite offset " + off + " is not ascending or not below " + len);
            }
            offsets[k] = off;
            prev = off;
        }
        MemorySegment bytes = ps.asSlice(4 + 4 * count, count);
        return TensorPatch.scatter(target.name(), len, 1, false, offsets, bytes, digest, format);
    }
}
