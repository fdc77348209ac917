package dev.stitch.format.disk;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.stitch.format.DeltaFormatException;
import java.nio.charset.StandardCharsets;

/**
 * Fuzzes the disk_delta {@code model.safetensors.index.json} reader (docs/formats/disk-delta.md §3.3): only
 * {@link DeltaFormatException} escapes, and an index that reads is written back by
 * {@link DiskDeltaIndex#toJson} into text that reads as the same index.
 */
class DiskDeltaIndexFuzzTest {

    @FuzzTest
    void diskDeltaIndex(byte[] input) {
        DiskDeltaIndex parsed;
        try {
            parsed = DiskDeltaIndex.parse(input, "fuzzed index");
        } catch (DeltaFormatException expected) {
            return;
        }
        String written = parsed.toJson();
        DiskDeltaIndex again;
        try {
            again = DiskDeltaIndex.parse(written.getBytes(StandardCharsets.UTF_8), "rewritten index");
        } catch (DeltaFormatException e) {
            throw new AssertionError("the index this reader accepted does not read back after toJson: " + e.getMessage(), e);
        }
        assertEquals(parsed, again, "parse(toJson(parse(x))) differs from parse(x)");
    }
}
