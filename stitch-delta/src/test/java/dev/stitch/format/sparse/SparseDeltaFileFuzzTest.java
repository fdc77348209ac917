package dev.stitch.format.sparse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.stitch.format.DeltaFormatException;
import dev.stitch.format.TinyModel;
import dev.stitch.format.ZstdFrames;
import dev.stitch.safetensors.SafetensorsFile;
import dev.stitch.safetensors.SafetensorsFormatException;
import dev.stitch.safetensors.SafetensorsWriter;
import dev.stitch.safetensors.TensorEntry;
import dev.stitch.tensor.Dtype;
import dev.stitch.tensor.TensorSpec;
import dev.stitch.testing.HeapAllocation;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Fuzzes the slime v1 sparse_delta reader (docs/formats/sparse-delta.md §2): only {@link DeltaFormatException}
 * escapes, a compressed file never decodes past its bound, decoded indices stay inside their params,
 * and a file that reads applies to the tiny-6t checkpoint. The checksum guards everything behind it,
 * so each input is also tried once more with the checksum the content really has.
 */
class SparseDeltaFileFuzzTest {

    /** The content bound a receiver passes for compressed files ({@link SparseDeltaFile#read(java.nio.file.Path)}). */
    private static final long MAX_BYTES = SparseDeltaFile.DEFAULT_MAX_BYTES;
    /** Heap per input byte: what a zstd frame of that length can decode to, and a few copies of it. */
    private static final long PER_INPUT_BYTE = 4 * ZstdFrames.maxContentSize(4);

    static {
        HeapAllocation.warmUp(SparseDeltaFileFuzzTest.class, "sparseDeltaFile", input -> new SparseDeltaFileFuzzTest().sparseDeltaFile(input));
    }

    @FuzzTest
    void sparseDeltaFile(byte[] input) {
        check(input);
        byte[] repaired = withTrueChecksum(input);
        if (repaired != null) {
            check(repaired);
        }
    }

    private static void check(byte[] input) {
        HeapAllocation heap = HeapAllocation.start();
        SparseDeltaFile file;
        try {
            file = SparseDeltaFile.parse(input, "fuzzed sparse_delta", MAX_BYTES);
        } catch (DeltaFormatException refused) {
            heap.assertAtMost(PER_INPUT_BYTE, input.length, 4 << 20, "a refused sparse_delta file");
            return;
        }
        heap.assertAtMost(PER_INPUT_BYTE, input.length, 4 << 20, "an accepted sparse_delta file");
        for (int i = 0; i < file.params().size(); i++) {
            SparseParam p = file.params().get(i);
            long[] indices = file.indices(i);
            assertEquals(p.count(), indices.length, "one index per value");
            long numel = p.spec().numel();
            for (int k = 0; k < indices.length; k++) {
                assertTrue(indices[k] >= 0 && indices[k] < numel, "index " + indices[k] + " outside " + numel + " elements");
                file.valueBits(i, k);
            }
        }
        try {
            List<String> unknown = file.check(TinyModel::spec);
            SparseDeltaFile.ApplyStats stats = file.applyTo(name -> {
                TensorSpec local = TinyModel.spec(name);
                return local == null ? null : TinyModel.zeroed(local);
            });
            assertEquals(unknown, stats.unknownTensorNames(), "check and apply disagree on unknown tensors");
        } catch (DeltaFormatException mismatch) {
            // a param whose dtype or shape differs from the local tensor is refused before writing
        }
    }

    /**
     * The input rewritten with the checksum its positions and values really have (decompressed
     * first when it is a zstd frame), or null when it is not a container with both tensors.
     */
    private static byte[] withTrueChecksum(byte[] input) {
        byte[] plain = input;
        try {
            if (ZstdFrames.isFrame(MemorySegment.ofArray(input))) {
                plain = ZstdFrames.decompress(input, MAX_BYTES, "fuzzed frame");
            }
            SafetensorsFile sf = SafetensorsFile.of(MemorySegment.ofArray(plain), "fuzzed container");
            TensorEntry pos = sf.header().entry("__positions__");
            TensorEntry val = sf.header().entry("__values__");
            Dtype vd = val == null ? null : val.spec().dtype();
            if (pos == null || (vd != Dtype.BF16 && vd != Dtype.F16 && vd != Dtype.F32)) {
                return null;
            }
            Map<String, String> metadata = new LinkedHashMap<>(sf.metadata());
            metadata.put("checksum", SparseChecksum.of(sf.tensor(pos), sf.tensor(val), vd).toString());
            List<TensorSpec> specs = new ArrayList<>();
            sf.header().tensors().forEach(e -> specs.add(e.spec()));
            SafetensorsWriter.Layout layout = SafetensorsWriter.layout(metadata, specs);
            MemorySegment out = MemorySegment.ofArray(new byte[Math.toIntExact(layout.fileLength())]);
            MemorySegment.copy(MemorySegment.ofArray(layout.header()), 0, out, 0, layout.header().length);
            for (TensorEntry e : layout.tensors()) {
                MemorySegment.copy(sf.tensor(e.name()), 0, out, layout.header().length + e.begin(), e.byteLength());
            }
            return out.toArray(ValueLayout.JAVA_BYTE);
        } catch (SafetensorsFormatException | DeltaFormatException notAContainer) {
            return null;
        }
    }
}
