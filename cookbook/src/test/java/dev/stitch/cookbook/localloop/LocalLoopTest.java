package dev.stitch.cookbook.localloop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LocalLoopTest {

    @TempDir
    Path work;

    @Test
    void everyPinnedRolloutIsServedByTheTrainersWeights() throws Exception {
        List<LocalLoop.Step> steps = LocalLoop.run(work, 4L << 20, 3);
        assertEquals(3, steps.size());
        Set<String> digests = new HashSet<>();
        for (LocalLoop.Step s : steps) {
            assertTrue(s.matches(), "version " + s.version() + " served " + s.servedDigest() + ", trainer has " + s.trainerDigest());
            assertTrue(s.changedElements() > 0 && s.bytesWritten() > 0, s.toString());
            digests.add(s.trainerDigest());
        }
        assertEquals(3, digests.size(), "each step must change the weights");
    }
}
