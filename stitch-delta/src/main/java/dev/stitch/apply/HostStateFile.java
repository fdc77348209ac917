package dev.stitch.apply;

import dev.stitch.board.AtomicFiles;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The one writer of a local checkpoint's {@code .weight_sync/state.json} (docs/protocol/sync-and-engines.md §7.3):
 * every replacement goes through {@link AtomicFiles} (temporary, fsync, rename, directory fsync), so
 * a crash leaves the old state or the new one, and the rename itself survives power loss.
 */
public final class HostStateFile {

    /** Directory of the state file and the applier's lock inside the local checkpoint. */
    public static final String DIRECTORY = ".weight_sync";

    /** Name of the state file inside {@link #DIRECTORY}. */
    public static final String FILE_NAME = "state.json";

    private final Path file;

    private HostStateFile(Path file) {
        this.file = file;
    }

    /** The state file of the local checkpoint directory {@code local}. */
    public static HostStateFile of(Path local) {
        return new HostStateFile(local.resolve(DIRECTORY).resolve(FILE_NAME));
    }

    public Path path() {
        return file;
    }

    /** The recorded state, or {@link HostState#base()} when there is no file. */
    public HostState read() throws IOException {
        return HostState.read(file);
    }

    /** Durably replaces the file with {@code state}, creating {@link #DIRECTORY} if needed. */
    public void write(HostState state) throws IOException {
        AtomicFiles.DURABLE.createDirectories(file.getParent());
        AtomicFiles.DURABLE.write(file, state.toBytes());
    }

    /** Durably removes the file, so the checkpoint reads as the base again; absent is fine. */
    public void delete() throws IOException {
        if (Files.deleteIfExists(file)) {
            AtomicFiles.DURABLE.fsyncDirectory(file.getParent());
        }
    }
}
