package dev.stitch.sync;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SidecarStateFileTest {

    @TempDir
    Path tmp;

    @Test
    void roundTripsTheLastFlipInItsOwnDirectory() throws IOException {
        Path dir = tmp.resolve("state/nested");
        SidecarStateFile file = new SidecarStateFile(dir);
        assertEquals(Optional.empty(), file.read());
        file.write("run-a", 7);
        file.write("run-a", 8);
        assertEquals(Optional.of(new SidecarStateFile.Saved("run-a", 8)), file.read());
        assertEquals("{\"run_id\":\"run-a\",\"version\":8}", Files.readString(dir.resolve(SidecarStateFile.FILE_NAME)));
        try (Stream<Path> left = Files.list(dir)) {
            assertEquals(List.of(SidecarStateFile.FILE_NAME), left.map(p -> p.getFileName().toString()).toList());
        }
        file.write(null, 0);
        assertEquals(Optional.of(new SidecarStateFile.Saved(null, 0)), file.read());
    }

    @Test
    void malformedOrAbsentStateIsIgnored() throws IOException {
        Files.writeString(tmp.resolve(SidecarStateFile.FILE_NAME), "{\"run_id\":\"run-a\"}");
        assertEquals(Optional.empty(), new SidecarStateFile(tmp).read());
        Files.writeString(tmp.resolve(SidecarStateFile.FILE_NAME), "not json");
        assertEquals(Optional.empty(), new SidecarStateFile(tmp).read());

        SidecarStateFile none = new SidecarStateFile(null);
        none.write("run-a", 3);
        assertEquals(Optional.empty(), none.read());
        try (Stream<Path> files = Files.list(tmp)) {
            assertTrue(files.allMatch(p -> p.getFileName().toString().equals(SidecarStateFile.FILE_NAME)),
                    "a worker without a state directory writes nothing");
        }
    }
}
