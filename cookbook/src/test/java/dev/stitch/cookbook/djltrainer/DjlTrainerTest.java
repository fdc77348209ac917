package dev.stitch.cookbook.djltrainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.publish.PublishResult;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DjlTrainerTest {

    @TempDir
    Path work;

    @Test
    void ndArraysPublishAndApplyToTheSameWeights() throws Exception {
        DjlTrainer.Outcome o = DjlTrainer.run(work, 2);
        assertTrue(o.digestsMatch(), "replica " + o.replicaDigest() + " vs trainer " + o.trainerDigest());
        assertEquals(2, o.published().size());
        for (PublishResult r : o.published()) {
            assertEquals("stitch_delta", r.backend());
            assertTrue(r.changedElements() > 0 && r.changedElements() < r.totalElements() / 10, r.toString());
        }
    }
}
