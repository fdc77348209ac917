package dev.stitch.format.full;
import dev.stitch.testing.Fixtures;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.stitch.encode.TensorData;
import dev.stitch.format.WriteResult;
import dev.stitch.format.WrittenFile;
import dev.stitch.hash.Xxh3;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.safetensors.Checkpoint;
import dev.stitch.safetensors.SafetensorsFile;
import dev.stitch.safetensors.TensorEntry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FullCheckpointWriterTest {

    @TempDir
    Path tmp;

    @Test
    void singleFileEqualsTheReferenceWriterAndShardsOpenAsOneCheckpoint() throws IOException {
        Path src = Fixtures.path("disk-v2/expected/weight_v000002/model.safetensors");
        try (SafetensorsFile f = SafetensorsFile.open(src)) {
            List<TensorData> tensors = new ArrayList<>();
            for (TensorEntry e : f.header().tensors()) {
                tensors.add(new TensorData(e.spec(), f.tensor(e)));
            }
            WriteResult r = FullCheckpointWriter.defaults().write(tensors, tmp, FullCheckpointWriter.ANCHOR_DIR);
            assertEquals(1, r.files().size());
            WrittenFile wf = r.files().get(0);
            assertEquals("full/model.safetensors", wf.path());
            assertEquals(ArtifactKind.FULL, wf.kind());
            byte[] want = Files.readAllBytes(src);
            assertArrayEquals(want, Files.readAllBytes(tmp.resolve("full/model.safetensors")));
            assertEquals(Xxh3.hash128(want), wf.xxh3());
            assertEquals(want.length, wf.size());

            WriteResult sharded = new FullCheckpointWriter(100_000, Map.of("format", "pt")).write(tensors, tmp.resolve("s"), "");
            assertEquals(ArtifactKind.FULL, sharded.files().get(sharded.files().size() - 1).kind());
            assertEquals(Checkpoint.INDEX, sharded.files().get(sharded.files().size() - 1).path());
            assertEquals("model-00001-of-00003.safetensors", sharded.files().get(0).path());
            try (Checkpoint c = Checkpoint.open(tmp.resolve("s"))) {
                assertEquals(tensors.size(), c.names().size());
                for (TensorData t : tensors) {
                    assertEquals(-1, c.tensor(t.name()).mismatch(t.bytes()));
                }
            }
        }
    }
}
