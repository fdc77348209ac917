package dev.stitch.cookbook.checkpointtodeltas;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CheckpointToDeltasTest {

    @TempDir
    Path work;

    @Test
    void publishedCheckpointsApplyByteForByte() throws Exception {
        CheckpointToDeltas.Outcome o = CheckpointToDeltas.run(work, 4L << 20, 3);
        assertTrue(o.identical(), "replica differs from the trainer's checkpoint");
        assertEquals(List.of(1L, 3L), o.checkedSteps());
        assertEquals(3, o.commands().stream().filter(c -> c.startsWith("./stitch publish")).count(), o.commands().toString());
        assertEquals(2, o.commands().stream().filter(c -> c.startsWith("./stitch apply")).count(), o.commands().toString());
        assertTrue(o.commands().get(0).contains("--base"), "the first publish names its base");
        assertTrue(!o.commands().get(1).contains("--base"), "later publishes find their base on the board");
        // Three 2% steps together stay far below one full checkpoint.
        assertTrue(o.boardBytes() < o.checkpointBytes() / 2, o.boardBytes() + " board bytes vs " + o.checkpointBytes());
    }
}
