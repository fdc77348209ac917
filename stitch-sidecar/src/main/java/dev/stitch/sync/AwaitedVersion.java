package dev.stitch.sync;

/**
 * A version the board's pointer names whose files the sidecar is still waiting for (docs/protocol/sync-and-engines.md
 * §6.7), as {@code /server_info} shows it under {@code waiting_for_arrival}.
 *
 * @param version        the version with a missing file
 * @param pointerVersion the version the pointer named when the file was last found missing
 * @param missingFile    that file, relative to the board
 * @param since          epoch seconds of the first pass that found it missing
 * @param waitedSeconds  how long the wait has lasted
 * @param retries        passes that ended waiting for it
 * @param timeoutSeconds how long the wait may last before it becomes a sync error
 */
public record AwaitedVersion(long version, long pointerVersion, String missingFile, double since, double waitedSeconds,
                             int retries, double timeoutSeconds) {
}
