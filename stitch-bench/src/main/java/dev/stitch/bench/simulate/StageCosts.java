package dev.stitch.bench.simulate;

import dev.stitch.format.DeltaFormat;

/**
 * What one measured pipeline run of one backend/encoding cost on this machine, normalised per GiB of
 * model so it can be scaled to other model sizes.
 *
 * @param backend        manifest backend ({@code full}, {@code sparse_delta}, ...)
 * @param encoding       delta encoding or value mode ({@code full} for full checkpoints)
 * @param modelBytes     bytes of the measured model
 * @param encodeS        CPU seconds of the encode stage (trainer side)
 * @param encodeThreads  threads the encode stage used
 * @param bytes          bytes that crossed the link
 * @param files          file requests that crossed the link
 * @param applyS         CPU seconds of the apply stage (rollout host), digest verification included
 * @param applyThreads   threads the apply stage used
 */
record StageCosts(String backend, String encoding, long modelBytes, double encodeS, int encodeThreads,
                  long bytes, int files, double applyS, int applyThreads) {

    static final double GIB = 1024.0 * 1024 * 1024;

    StageCosts {
        if (modelBytes <= 0) {
            throw new IllegalArgumentException("measured model must have bytes");
        }
        if (encodeThreads < 1 || applyThreads < 1) {
            throw new IllegalArgumentException("a stage uses at least one thread");
        }
    }

    /** Encode seconds per GiB of model on one core. */
    double encodeCoreSecondsPerGib() {
        return encodeS * encodeThreads / (modelBytes / GIB);
    }

    /** Apply seconds per GiB of model on one core. */
    double applyCoreSecondsPerGib() {
        return applyS * applyThreads / (modelBytes / GIB);
    }

    /** Bytes on the wire per GiB of model. */
    double bytesPerGib() {
        return bytes / (modelBytes / GIB);
    }

    boolean isFull() {
        return DeltaFormat.isFullOnly(backend);
    }
}
