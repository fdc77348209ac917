package dev.stitch.engine;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;

/**
 * How the sidecar talks to one SGLang server (docs/protocol/sync-and-engines.md §7, docs/protocol/cli-and-config.md §8).
 *
 * @param upstream                 the engine's base URL
 * @param boardRoot                the board root as the sidecar sees it
 * @param engineBoardRoot          the board root as the engine sees it (engine mode path mapping)
 * @param engineBaseCheckpointDir  what {@code reset()} loads in engine mode; null = {@code /model_info.model_path}
 * @param localCheckpointDir       host mode: the local copy the engine reloads
 * @param baseCheckpointDir        host mode: the base checkpoint the local copy starts from
 * @param flushRetries             retries of a flush answered 400
 * @param partialReload            host mode: send {@code weight_names} with the reload
 * @param probeDeltaReceiver       engine mode: check once that the engine accepts {@code load_format: delta}
 * @param connectTimeout           connect timeout of control calls
 * @param requestTimeout           total timeout of a control call (reloads can be slow)
 */
public record SglangSettings(URI upstream, Path boardRoot, Path engineBoardRoot, Path engineBaseCheckpointDir,
                             Path localCheckpointDir, Path baseCheckpointDir, int flushRetries, boolean partialReload,
                             boolean probeDeltaReceiver, Duration connectTimeout, Duration requestTimeout) {

    /** Defaults of section 8 for an engine URL and a board. */
    public static SglangSettings of(URI upstream, Path boardRoot) {
        return new SglangSettings(upstream, boardRoot, boardRoot, null, null, null, 10, false, true,
                Duration.ofSeconds(10), Duration.ofSeconds(3600));
    }

    public SglangSettings withHostCheckpoints(Path local, Path base) {
        return new SglangSettings(upstream, boardRoot, engineBoardRoot, engineBaseCheckpointDir, local, base,
                flushRetries, partialReload, probeDeltaReceiver, connectTimeout, requestTimeout);
    }

    public SglangSettings withEnginePaths(Path engineBoard, Path engineBase) {
        return new SglangSettings(upstream, boardRoot, engineBoard == null ? boardRoot : engineBoard, engineBase,
                localCheckpointDir, baseCheckpointDir, flushRetries, partialReload, probeDeltaReceiver,
                connectTimeout, requestTimeout);
    }

    public SglangSettings withOptions(int flushes, boolean partial, boolean probeDelta) {
        return new SglangSettings(upstream, boardRoot, engineBoardRoot, engineBaseCheckpointDir, localCheckpointDir,
                baseCheckpointDir, flushes, partial, probeDelta, connectTimeout, requestTimeout);
    }

    public SglangSettings withTimeouts(Duration connect, Duration request) {
        return new SglangSettings(upstream, boardRoot, engineBoardRoot, engineBaseCheckpointDir, localCheckpointDir,
                baseCheckpointDir, flushRetries, partialReload, probeDeltaReceiver, connect, request);
    }
}
