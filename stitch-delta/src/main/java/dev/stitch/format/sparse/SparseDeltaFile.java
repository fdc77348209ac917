package dev.stitch.format.sparse;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.stitch.format.DeltaFormatException;
import dev.stitch.format.ZstdFrames;
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
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * A validated slime v1 sparse_delta file (docs/formats/sparse-delta.md §2): zstd detection by magic, strict
 * 8-key params, checksum, position decoding and index ranges are all checked by {@link #read}, so a
 * file that reads is safe to apply. {@link #applyTo} applies it like the patched SGLang receiver:
 * only non-NaN values are written (the NaN mask, 2.9 and 2.10).
 */
public final class SparseDeltaFile {

    /** Default content-size bound of a compressed file (2.4). */
    public static final long DEFAULT_MAX_BYTES = 1L << 31;

    private static final ObjectMapper JSON = JsonMapper.builder().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION).build();
    private static final Set<String> PARAM_KEYS = Set.of("name", "dtype", "shape", "pos_start", "pos_end", "pos_width", "val_start", "val_end");
    private static final ValueLayout.OfShort U16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt U32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final String where;
    private final boolean compressed;
    private final SparseEncoding encoding;
    private final List<SparseParam> params;
    private final BigInteger checksum;
    private final String currentVersion;
    private final MemorySegment values;
    private final Dtype valueDtype;
    private final long[][] indices;

    private SparseDeltaFile(String where, boolean compressed, SparseEncoding encoding, List<SparseParam> params, BigInteger checksum,
                            String currentVersion, MemorySegment values, Dtype valueDtype, long[][] indices) {
        this.where = where;
        this.compressed = compressed;
        this.encoding = encoding;
        this.params = params;
        this.checksum = checksum;
        this.currentVersion = currentVersion;
        this.values = values;
        this.valueDtype = valueDtype;
        this.indices = indices;
    }

    /** Result of applying a file. */
    public record ApplyStats(int params, long written, long nanSkipped, List<String> unknownTensorNames) {
    }

    /** Reads and fully validates a file with the default size bound. */
    public static SparseDeltaFile read(Path path) throws IOException {
        return read(path, DEFAULT_MAX_BYTES);
    }

    /** Reads and fully validates a file; a compressed file may declare at most {@code maxBytes}. */
    public static SparseDeltaFile read(Path path, long maxBytes) throws IOException {
        long size = Files.size(path);
        if (size > Math.min(maxBytes, ZstdFrames.MAX_ONE_SHOT)) {
            throw new DeltaFormatException(path + ": " + size + " bytes exceeds the sparse_delta file bound " + maxBytes);
        }
        return parse(Files.readAllBytes(path), path.toString(), maxBytes);
    }

    /** Parses and fully validates the bytes of a file. */
    public static SparseDeltaFile parse(byte[] bytes, String where, long maxBytes) {
        boolean compressed = ZstdFrames.isFrame(MemorySegment.ofArray(bytes));
        byte[] plain = compressed ? ZstdFrames.decompress(bytes, maxBytes, where) : bytes;
        SafetensorsFile sf;
        try {
            sf = SafetensorsFile.of(MemorySegment.ofArray(plain), where);
        } catch (IllegalArgumentException e) {
            throw new DeltaFormatException(e.getMessage(), e);
        }
        Map<String, String> meta = sf.metadata();
        String enc = require(meta, "encoding", where);
        SparseEncoding encoding;
        try {
            encoding = SparseEncoding.parse(enc);
        } catch (IllegalArgumentException e) {
            throw new DeltaFormatException(where + ": " + e.getMessage());
        }
        String paramsText = require(meta, "params", where);
        String checksumText = require(meta, "checksum", where).strip();
        BigInteger declared;
        if (checksumText.isEmpty() || !checksumText.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new DeltaFormatException(where + ": checksum '" + checksumText + "' is not a non-negative decimal integer");
        }
        declared = new BigInteger(checksumText);
        Set<String> names = new HashSet<>();
        sf.header().tensors().forEach(t -> names.add(t.name()));
        if (!names.equals(Set.of("__positions__", "__values__"))) {
            throw new DeltaFormatException(where + ": a sparse_delta file holds exactly __positions__ and __values__, found " + names);
        }
        TensorEntry posEntry = sf.header().entry("__positions__");
        TensorEntry valEntry = sf.header().entry("__values__");
        if (posEntry.spec().dtype() != Dtype.U8 || posEntry.spec().shape().length != 1) {
            throw new DeltaFormatException(where + ": __positions__ must be a 1-D U8 tensor, is " + posEntry.spec());
        }
        Dtype valueDtype = valEntry.spec().dtype();
        if ((valueDtype != Dtype.BF16 && valueDtype != Dtype.F16 && valueDtype != Dtype.F32) || valEntry.spec().shape().length != 1) {
            throw new DeltaFormatException(where + ": __values__ must be a 1-D BF16, F16 or F32 tensor, is " + valEntry.spec());
        }
        MemorySegment positions = sf.tensor(posEntry);
        MemorySegment vals = sf.tensor(valEntry);
        BigInteger actual = SparseChecksum.of(positions, vals, valueDtype);
        if (!actual.equals(declared)) {
            throw new DeltaFormatException(where + ": checksum mismatch: file says " + declared + ", content gives " + actual);
        }
        List<SparseParam> params = parseParams(paramsText, where);
        long valueCount = valEntry.spec().numel();
        long[][] indices = new long[params.size()][];
        for (int i = 0; i < params.size(); i++) {
            SparseParam p = params.get(i);
            indices[i] = decodePositions(p, encoding, positions, valueCount, where);
        }
        return new SparseDeltaFile(where, compressed, encoding, List.copyOf(params), declared, meta.get("current_version"), vals,
            valueDtype, indices);
    }

    private static String require(Map<String, String> meta, String key, String where) {
        String v = meta.get(key);
        if (v == null) {
            throw new DeltaFormatException(where + ": __metadata__ lacks '" + key + "'");
        }
        return v;
    }

    private static List<SparseParam> parseParams(String text, String where) {
        JsonNode root;
        try {
            root = JSON.readTree(text);
        } catch (JsonProcessingException e) {
            throw new DeltaFormatException(where + ": params is not valid JSON: " + e.getOriginalMessage(), e);
        }
        if (root == null || !root.isArray()) {
            throw new DeltaFormatException(where + ": params is not a JSON array");
        }
        List<SparseParam> out = new ArrayList<>(root.size());
        for (int i = 0; i < root.size(); i++) {
            JsonNode o = root.get(i);
            String what = where + ": params[" + i + "]";
            if (!o.isObject()) {
                throw new DeltaFormatException(what + " is not an object");
            }
            Set<String> keys = new HashSet<>();
            o.fieldNames().forEachRemaining(keys::add);
            if (!keys.equals(PARAM_KEYS)) {
                Set<String> missing = new HashSet<>(PARAM_KEYS);
                missing.removeAll(keys);
                Set<String> extra = new HashSet<>(keys);
                extra.removeAll(PARAM_KEYS);
                throw new DeltaFormatException(what + " must have exactly the 8 keys " + PARAM_KEYS + "; missing " + missing + ", extra " + extra);
            }
            if (!o.get("name").isTextual() || !o.get("dtype").isTextual() || !o.get("shape").isArray()) {
                throw new DeltaFormatException(what + ": name and dtype must be strings and shape a list");
            }
            String name = o.get("name").textValue();
            Dtype dtype;
            try {
                dtype = Dtype.fromTorch(o.get("dtype").textValue());
            } catch (IllegalArgumentException e) {
                throw new DeltaFormatException(what + ": " + e.getMessage());
            }
            if (dtype != Dtype.BF16 && dtype != Dtype.F16 && dtype != Dtype.F32) {
                throw new DeltaFormatException(what + ": param dtype " + dtype.torchName() + " is not bfloat16, float16 or float32");
            }
            long[] shape = new long[o.get("shape").size()];
            for (int d = 0; d < shape.length; d++) {
                shape[d] = nonNegative(o.get("shape").get(d), what + " shape");
            }
            long posStart = nonNegative(o.get("pos_start"), what + " pos_start");
            long posEnd = nonNegative(o.get("pos_end"), what + " pos_end");
            long posWidth = nonNegative(o.get("pos_width"), what + " pos_width");
            long valStart = nonNegative(o.get("val_start"), what + " val_start");
            long valEnd = nonNegative(o.get("val_end"), what + " val_end");
            if (posWidth != 2 && posWidth != 4) {
                throw new DeltaFormatException(what + ": pos_width " + posWidth + " is not 2 or 4");
            }
            if (posEnd < posStart || valEnd < valStart) {
                throw new DeltaFormatException(what + ": ranges end before they start");
            }
            try {
                new TensorSpec(name, dtype, shape).numel();
            } catch (ArithmeticException e) {
                throw new DeltaFormatException(what + ": shape overflows");
            }
            out.add(new SparseParam(name, dtype, shape, posStart, posEnd, (int) posWidth, valStart, valEnd));
        }
        return out;
    }

    private static long nonNegative(JsonNode n, String what) {
        if (n == null || !n.isIntegralNumber() || !n.canConvertToLong() || n.longValue() < 0) {
            throw new DeltaFormatException(what + " is not a non-negative integer: " + n);
        }
        return n.longValue();
    }

    private static long[] decodePositions(SparseParam p, SparseEncoding encoding, MemorySegment positions, long valueCount, String where) {
        String what = where + ": param '" + p.name() + "'";
        int width = encoding == SparseEncoding.INDICES ? 4 : p.posWidth();
        if (p.posEnd() > positions.byteSize()) {
            throw new DeltaFormatException(what + ": positions [" + p.posStart() + ", " + p.posEnd() + ") run past __positions__ ("
                + positions.byteSize() + " bytes)");
        }
        if (p.valEnd() > valueCount) {
            throw new DeltaFormatException(what + ": values [" + p.valStart() + ", " + p.valEnd() + ") run past __values__ (" + valueCount + ")");
        }
        long bytes = p.posEnd() - p.posStart();
        if (bytes % width != 0) {
            throw new DeltaFormatException(what + ": " + bytes + " position bytes is not a multiple of the width " + width);
        }
        long count = bytes / width;
        if (count != p.count()) {
            throw new DeltaFormatException(what + ": " + count + " positions but " + p.count() + " values");
        }
        if (count > Integer.MAX_VALUE - 8) {
            throw new DeltaFormatException(what + ": " + count + " changed elements is more than one param can carry here");
        }
        long numel = p.spec().numel();
        long[] idx = new long[(int) count];
        long acc = -1;
        for (int k = 0; k < count; k++) {
            long off = p.posStart() + (long) k * width;
            long raw = width == 2 ? positions.get(U16, off) & 0xFFFFL : positions.get(U32, off) & 0xFFFFFFFFL;
            long index = encoding == SparseEncoding.INDICES ? raw : acc + raw + 1;
            if (index >= numel) {
                throw new DeltaFormatException(what + ": index " + index + " out of range for " + numel + " elements");
            }
            idx[k] = index;
            acc = index;
        }
        return idx;
    }

    public String where() {
        return where;
    }

    /** Whether the file was one zstd frame. */
    public boolean compressed() {
        return compressed;
    }

    public SparseEncoding encoding() {
        return encoding;
    }

    public List<SparseParam> params() {
        return params;
    }

    public BigInteger checksum() {
        return checksum;
    }

    /** The informational {@code current_version}, or null. */
    public String currentVersion() {
        return currentVersion;
    }

    public Dtype valueDtype() {
        return valueDtype;
    }

    /** Decoded element indices of param {@code i} (ascending for our writer; as stored otherwise). */
    public long[] indices(int i) {
        return indices[i].clone();
    }

    /** The {@code k}-th value of param {@code i}, cast to the param dtype (RNE), as raw bits. */
    public int valueBits(int i, int k) {
        SparseParam p = params.get(i);
        long at = p.valStart() + k;
        int bits = switch (valueDtype) {
            case F32 -> values.get(U32, 4 * at);
            default -> values.get(U16, 2 * at) & 0xFFFF;
        };
        return SparseValues.cast(bits, valueDtype, p.dtype());
    }

    /**
     * Checks every param against the target tensors without writing: a present name must have the
     * param's dtype and shape. Returns the names absent from the target.
     */
    public List<String> check(Function<String, TensorSpec> target) {
        List<String> unknown = new ArrayList<>();
        for (SparseParam p : params) {
            TensorSpec have = target.apply(p.name());
            if (have == null) {
                unknown.add(p.name());
                continue;
            }
            if (have.dtype() != p.dtype() || !Arrays.equals(have.shape(), p.shape())) {
                throw new DeltaFormatException(where + ": param '" + p.name() + "' is " + p.dtype() + Arrays.toString(p.shape())
                    + " but the target holds " + have.dtype() + Arrays.toString(have.shape()));
            }
        }
        return unknown;
    }

    /**
     * Applies the file NaN-masked: for each param whose tensor {@code target} returns (null = not
     * held, counted in {@link ApplyStats#unknownTensorNames()}), every value that is not NaN after the
     * cast to the param dtype is written at its index. Sizes are checked for every param first.
     */
    public ApplyStats applyTo(Function<String, MemorySegment> target) {
        List<String> unknown = new ArrayList<>();
        MemorySegment[] dst = new MemorySegment[params.size()];
        for (int i = 0; i < params.size(); i++) {
            SparseParam p = params.get(i);
            MemorySegment t = target.apply(p.name());
            if (t == null) {
                unknown.add(p.name());
                continue;
            }
            long need = p.spec().byteLength();
            if (t.byteSize() != need) {
                throw new DeltaFormatException(where + ": param '" + p.name() + "' needs " + need + " bytes, the target has " + t.byteSize());
            }
            dst[i] = t;
        }
        long written = 0;
        long nan = 0;
        for (int i = 0; i < params.size(); i++) {
            if (dst[i] == null) {
                continue;
            }
            SparseParam p = params.get(i);
            long[] idx = indices[i];
            int w = p.dtype().width();
            for (int k = 0; k < idx.length; k++) {
                int bits = valueBits(i, k);
                if (SparseValues.isNaN(bits, p.dtype())) {
                    nan++;
                    continue;
                }
                if (w == 4) {
                    dst[i].set(U32, idx[k] * 4, bits);
                } else {
                    dst[i].set(U16, idx[k] * 2, (short) bits);
                }
                written++;
            }
        }
        return new ApplyStats(params.size(), written, nan, unknown);
    }
}
