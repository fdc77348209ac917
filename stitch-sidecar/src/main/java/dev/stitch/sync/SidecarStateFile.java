package dev.stitch.sync;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.board.AtomicFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sidecar's persisted state {@code <state dir>/sidecar_state.json} (docs/protocol/sync-and-engines.md §6.5): the
 * run and version last flipped to, adopted at restart when the engine still reports that version.
 * Replaced through {@link AtomicFiles}, so a crash leaves the previous state or the new one. A worker
 * configured without a state directory persists nothing.
 */
final class SidecarStateFile {

    /** The file name inside the state directory. */
    static final String FILE_NAME = "sidecar_state.json";

    private static final Logger LOG = LoggerFactory.getLogger(SidecarStateFile.class);
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Path directory;

    /** @param directory where the file lives, or null to persist nothing */
    SidecarStateFile(Path directory) {
        this.directory = directory;
    }

    /** The state saved by the last flip. */
    record Saved(String runId, long version) {
    }

    /** The saved state; empty when none is kept, the file is absent, or it cannot be used (logged). */
    Optional<Saved> read() {
        if (directory == null) {
            return Optional.empty();
        }
        Path file = directory.resolve(FILE_NAME);
        if (!Files.exists(file)) {
            return Optional.empty();
        }
        try {
            JsonNode n = JSON.readTree(file.toFile());
            if (!n.isObject() || !n.path("version").canConvertToLong()) {
                LOG.warn("ignoring malformed {}", file);
                return Optional.empty();
            }
            JsonNode run = n.get("run_id");
            return Optional.of(new Saved(run == null || run.isNull() ? null : run.asText(), n.get("version").asLong()));
        } catch (IOException e) {
            LOG.warn("ignoring unreadable {}: {}", file, e.getMessage());
            return Optional.empty();
        }
    }

    /**
     * Records {@code (runId, version)}. A failure is logged, not thrown: the flip already happened, and a
     * missing state file only costs a resync at the next restart.
     */
    void write(String runId, long version) {
        if (directory == null) {
            return;
        }
        try {
            ObjectNode n = JSON.createObjectNode();
            n.put("run_id", runId);
            n.put("version", version);
            AtomicFiles.DURABLE.createDirectories(directory);
            AtomicFiles.DURABLE.write(directory.resolve(FILE_NAME), JSON.writeValueAsBytes(n));
        } catch (IOException e) {
            LOG.warn("could not persist sidecar state: {}", e.getMessage());
        }
    }
}
