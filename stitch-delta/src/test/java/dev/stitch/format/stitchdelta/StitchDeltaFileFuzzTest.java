package dev.stitch.format.stitchdelta;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.stitch.format.DeltaFormatException;
import dev.stitch.format.TensorPatch;
import dev.stitch.format.TinyModel;
import dev.stitch.testing.HeapAllocation;

/**
 * Fuzzes the {@code stitch-delta-1} reader (docs/formats/stitch-delta.md): only
 * {@link DeltaFormatException} escapes from parsing, decoding against the tiny-6t checkpoint and
 * applying; parsed records tile the file; heap use follows the input and the local tensors, never
 * a size a record declares.
 */
class StitchDeltaFileFuzzTest {

    static {
        HeapAllocation.warmUp(StitchDeltaFileFuzzTest.class, "stitchDeltaFile", input -> new StitchDeltaFileFuzzTest().stitchDeltaFile(input));
    }

    @FuzzTest
    void stitchDeltaFile(byte[] input) {
        HeapAllocation heap = HeapAllocation.start();
        try {
            StitchDeltaFile file = StitchDeltaFile.parse(input, "fuzzed stitch_delta");
            heap.assertAtMost(64, input.length, 1 << 20, "parsing a stitch_delta file");
            assertEquals(file.version() - 1, file.baseVersion());
            long end = file.records().isEmpty() ? input.length : 0;
            for (StitchRecord r : file.records()) {
                assertTrue(r.offset() >= 0 && r.offset() + r.length() <= input.length, "record " + r.name() + " outside the file");
                end = Math.max(end, r.offset() + r.length());
            }
            assertEquals(input.length, end, "records must end exactly at the end of the file");
            boolean local = file.records().stream().allMatch(r -> r.spec().equals(TinyModel.spec(r.name())));
            if (!local) {
                assertThrows(DeltaFormatException.class, () -> file.patches(TinyModel::spec), "a record the checkpoint cannot take");
                return;
            }
            // patches() decodes on the common pool, out of this thread's sight; decode() is the same work here.
            for (StitchRecord r : file.records()) {
                TensorPatch patch = file.decode(r);
                patch.applyInPlace(TinyModel.zeroed(r.spec()));
            }
        } catch (DeltaFormatException refused) {
            // the documented outcome for a malformed file
        } finally {
            // Decoding may hold a few copies of the local tensors (all of tiny-6t is 173 KiB), never more.
            heap.assertAtMost(64, input.length, 8 << 20, "decoding a stitch_delta file");
        }
    }
}
