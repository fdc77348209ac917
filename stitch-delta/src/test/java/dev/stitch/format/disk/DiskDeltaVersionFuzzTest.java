package dev.stitch.format.disk;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.stitch.encode.ValueMode;
import dev.stitch.format.DeltaFormatException;
import dev.stitch.format.TensorPatch;
import dev.stitch.format.TinyModel;
import dev.stitch.safetensors.SafetensorsFile;
import dev.stitch.safetensors.SafetensorsFormatException;
import dev.stitch.safetensors.SafetensorsHeader;
import dev.stitch.safetensors.TensorEntry;
import dev.stitch.testing.HeapAllocation;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;

/**
 * Fuzzes the disk_delta shard reader (docs/formats/disk-delta.md §3.4): the input is the version's one
 * {@code *.safetensors} file, read under an xor and under an overwrite index against the tiny-6t
 * checkpoint, and every patch is applied. Only {@link DeltaFormatException} escapes, and heap use
 * follows the input and the local tensors, never a size the shard declares.
 */
class DiskDeltaVersionFuzzTest {

    private static final String SHARD = "model-00000-of-00001.safetensors";
    private static final Path DIR = scratchDirectory();

    private static Path scratchDirectory() {
        try {
            // rewritten on every execution, so on tmpfs when the machine has one
            Path shm = Path.of("/dev/shm");
            Path dir = Files.isDirectory(shm) && Files.isWritable(shm)
                    ? Files.createTempDirectory(shm, "stitch-fuzz-disk-")
                    : Files.createTempDirectory("stitch-fuzz-disk-");
            dir.toFile().deleteOnExit();
            dir.resolve(SHARD).toFile().deleteOnExit();
            dir.resolve(DiskDeltaIndex.FILE).toFile().deleteOnExit();
            return dir;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static {
        HeapAllocation.warmUp(DiskDeltaVersionFuzzTest.class, "diskDeltaVersion", DiskDeltaVersionFuzzTest::runDiskDeltaVersion);
    }

    /** {@link #diskDeltaVersion} for the warm-up, which takes no checked exceptions. */
    private static void runDiskDeltaVersion(byte[] input) {
        try {
            new DiskDeltaVersionFuzzTest().diskDeltaVersion(input);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @FuzzTest
    void diskDeltaVersion(byte[] input) throws IOException {
        Files.write(DIR.resolve(SHARD), input);
        Map<String, String> weightMap = weightMap(input);
        for (ValueMode mode : ValueMode.values()) {
            Files.writeString(DIR.resolve(DiskDeltaIndex.FILE),
                    new DiskDeltaIndex(1, 0, mode, "zstd", "xxh3-128", weightMap).toJson(), StandardCharsets.UTF_8);
            HeapAllocation heap = HeapAllocation.start();
            try {
                DiskDeltaVersion version = DiskDeltaVersion.read(DIR, TinyModel::spec);
                for (TensorPatch patch : version.patches()) {
                    patch.applyInPlace(TinyModel.zeroed(TinyModel.spec(patch.name())));
                }
            } catch (DeltaFormatException refused) {
                // the documented outcome for a malformed shard
            }
            // Decoding may hold a few copies of the local tensors (all of tiny-6t is 173 KiB), never more.
            heap.assertAtMost(64, input.length, 8 << 20, "reading a " + mode + " shard");
        }
    }

    /** The index maps the tensors the shard names (when its header reads), so the fuzzer reaches the payloads. */
    private static Map<String, String> weightMap(byte[] input) {
        Map<String, String> map = new TreeMap<>();
        try {
            SafetensorsHeader header = SafetensorsFile.of(MemorySegment.ofArray(input), "shard").header();
            for (TensorEntry e : header.tensors()) {
                map.put(e.name(), SHARD);
            }
        } catch (SafetensorsFormatException unreadable) {
            TinyModel.SPECS.keySet().forEach(name -> map.put(name, SHARD));
        }
        return map;
    }
}
