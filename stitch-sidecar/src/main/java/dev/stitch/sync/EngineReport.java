package dev.stitch.sync;

/**
 * What the engine says it is serving (sync-and-engines.md 6.5), read from {@code GET /model_info}: the
 * sidecar compares it with what it committed to notice an engine that restarted or was changed behind
 * its back.
 *
 * @param weightVersion the engine's {@code weight_version} label ({@code "default"} after a fresh start)
 * @param weightsDigest the digest of the served weights when the engine reports one (the reference engine
 *                      does, stock SGLang does not), else null
 * @param modelPath     the checkpoint the engine last loaded from as it reports it, or null
 */
public record EngineReport(String weightVersion, String weightsDigest, String modelPath) {
}
