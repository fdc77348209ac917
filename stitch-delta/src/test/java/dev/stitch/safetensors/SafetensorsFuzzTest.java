package dev.stitch.safetensors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.stitch.testing.HeapAllocation;
import dev.stitch.tensor.TensorSpec;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Fuzzes the safetensors header reader (docs/formats/common.md §0.2) over bytes in memory and over a file:
 * only {@link SafetensorsFormatException} escapes, both paths agree, heap use follows the input's
 * length, the tensors tile the data section, and the header written back by
 * {@link SafetensorsWriter#layout} reads as the same tensors and metadata.
 */
class SafetensorsFuzzTest {

    private static final Path FILE = scratchFile();

    private static Path scratchFile() {
        try {
            Path p = Files.createTempFile("stitch-fuzz-", ".safetensors");
            p.toFile().deleteOnExit();
            return p;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static {
        HeapAllocation.warmUp(SafetensorsFuzzTest.class, "safetensors", SafetensorsFuzzTest::runSafetensors);
    }

    /** {@link #safetensors} for the warm-up, which takes no checked exceptions. */
    private static void runSafetensors(byte[] input) {
        try {
            new SafetensorsFuzzTest().safetensors(input);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @FuzzTest
    void safetensors(byte[] input) throws IOException {
        HeapAllocation heap = HeapAllocation.start();
        SafetensorsFile parsed;
        try {
            parsed = SafetensorsFile.of(MemorySegment.ofArray(input), "fuzzed.safetensors");
        } catch (SafetensorsFormatException refused) {
            heap.assertAtMost(64, input.length, 4 << 20, "a refused header");
            Files.write(FILE, input);
            assertThrows(SafetensorsFormatException.class, () -> SafetensorsFile.readHeader(FILE),
                    "the file reader accepts what the in-memory reader refused: " + refused.getMessage());
            return;
        }
        heap.assertAtMost(64, input.length, 4 << 20, "an accepted header");
        SafetensorsHeader header = parsed.header();
        assertEquals(input.length, header.fileLength(), "the header must describe exactly the input");
        long cursor = 0;
        for (TensorEntry e : header.tensors()) {
            assertEquals(cursor, e.begin(), "tensors must tile the data section");
            assertEquals(e.spec().byteLength(), e.byteLength());
            assertEquals(e.byteLength(), parsed.tensor(e).byteSize());
            cursor = e.end();
        }
        Files.write(FILE, input);
        assertEquals(header, SafetensorsFile.readHeader(FILE), "the file reader sees another header");

        List<TensorSpec> specs = new ArrayList<>();
        header.tensors().forEach(e -> specs.add(e.spec()));
        SafetensorsWriter.Layout layout = SafetensorsWriter.layout(header.metadata(), specs);
        byte[] written = layout.header();
        byte[] json = MemorySegment.ofArray(written).asSlice(8).toArray(ValueLayout.JAVA_BYTE);
        SafetensorsHeader again = SafetensorsHeader.parse(json, header.dataLength(), "rewritten header");
        assertEquals(header.metadata(), again.metadata(), "metadata changed through the writer");
        assertEquals(header.byName().keySet(), again.byName().keySet(), "tensor names changed through the writer");
        for (TensorEntry e : header.tensors()) {
            assertEquals(e.spec(), again.entry(e.name()).spec(), "tensor " + e.name() + " changed through the writer");
        }
    }
}
