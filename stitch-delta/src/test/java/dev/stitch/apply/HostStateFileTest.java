package dev.stitch.apply;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HostStateFileTest {

    @TempDir
    Path local;

    @Test
    void writesCreateTheDirectoryAndReadBack() throws IOException {
        HostStateFile file = HostStateFile.of(local);
        assertEquals(local.resolve(".weight_sync/state.json"), file.path());
        assertEquals(HostState.base(), file.read(), "no file reads as the base");

        HostState s = new HostState(12, "run-a", null, "boot-1", "sha256:ab", Map.of());
        file.write(s);
        assertEquals(s.version(), file.read().version());
        assertEquals("run-a", file.read().runId());
        assertEquals("sha256:ab", file.read().baseFingerprint());
        assertTrue(Files.readString(file.path()).contains("\"version\":\"000012\""));

        file.write(s.withApplying(13L));
        assertEquals(13L, file.read().applying());
        try (Stream<Path> left = Files.list(file.path().getParent())) {
            assertEquals(List.of("state.json"), left.map(p -> p.getFileName().toString()).toList(),
                    "no temporary is left beside the state file");
        }
    }

    @Test
    void deleteForgetsTheStateAndToleratesAbsence() throws IOException {
        HostStateFile file = HostStateFile.of(local);
        file.delete();
        file.write(HostState.base().withVersion(4, "run-a"));
        file.delete();
        assertFalse(Files.exists(file.path()));
        assertEquals(0, file.read().version());
    }
}
