package dev.stitch.bench.simulate;

import java.util.List;

/**
 * Scales measured per-GiB stage costs to another model size and host, and computes time-to-serve of
 * a pipeline over equal chunks followed by the engine's pause.
 *
 * <p>Host mode (docs/protocol/sync-and-engines.md §7.3) pipelines encode, transfer and host apply, then pauses for
 * one full reload of the local checkpoint. Engine mode (docs/protocol/sync-and-engines.md §7.2) pipelines encode
 * and transfer only, then pauses while the patched engine applies the delta in place.
 *
 * <p>Encode and apply scale with the core count given, capped by the host's memory bandwidth over
 * the memory traffic the stage needs per model byte (docs/performance-targets.md §7.2) and by disk bandwidth for
 * the bytes the stage writes or reads; transfer is bytes over the link plus one RTT per file; reload
 * is model bytes over the reload bandwidth; the in-place apply is the reference engine's measured
 * CPU seconds per GiB of model at the same density (one thread), times the model's GiB.
 */
final class TimeToServeModel {
    /** The names a row's {@code dominant_stage} takes. */
    static final List<String> STAGES = List.of("encode", "transfer", "apply", "reload", "in_place_apply");

    private TimeToServeModel() {
    }

    /**
     * Stage times of one version and what the pipeline makes of them; a host-mode projection has no
     * in-place apply, an engine-mode one neither host apply nor reload.
     */
    record Projection(double encodeS, double transferS, double applyS, double reloadS, double inPlaceApplyS,
                      double bytes, int files) {

        double slowestStageS() {
            return Math.max(encodeS, Math.max(transferS, applyS));
        }

        /** The engine's pause after the last chunk: the reload in host mode, the in-place apply in engine mode. */
        double pauseS() {
            return reloadS + inPlaceApplyS;
        }

        /** Stages one after the other, then the pause. */
        double sequentialS() {
            return encodeS + transferS + applyS + pauseS();
        }

        /**
         * Pipelined over {@code chunks} equal chunks: the slowest stage runs the whole time, the other
         * pipelined stages add only their first (fill) and last (drain) chunk, then the pause.
         */
        double pipelinedS(int chunks) {
            double slowest = slowestStageS();
            double others = encodeS + transferS + applyS - slowest;
            return slowest + others / chunks + pauseS();
        }

        String dominantStage() {
            return TimeToServeModel.dominantStage(encodeS, transferS, applyS, reloadS, inPlaceApplyS);
        }
    }

    /**
     * The stage that costs time-to-serve the most seconds: the pipeline overlaps the others with the
     * slowest pipelined stage, so that is the longest stage time (ties go to the earlier stage).
     */
    static String dominantStage(double encodeS, double transferS, double applyS, double reloadS, double inPlaceApplyS) {
        double[] times = {encodeS, transferS, applyS, reloadS, inPlaceApplyS};
        int best = 0;
        for (int i = 1; i < times.length; i++) {
            if (times[i] > times[best]) {
                best = i;
            }
        }
        return STAGES.get(best);
    }

    /**
     * Memory traffic per model byte of the sparse kernels (docs/performance-targets.md §7.2) or, for full
     * checkpoints, one read plus one write of every byte.
     */
    static double trafficPerModelByte(boolean full, boolean encode, double density, int elementWidth) {
        if (full) {
            return 2.0;
        }
        double lineFraction = 1 - Math.pow(1 - density, 64.0 / elementWidth);
        double gathered = density / elementWidth * (4 + elementWidth);
        return encode ? 2 + lineFraction + gathered : gathered + 2 * lineFraction;
    }

    /** Host mode: encode, transfer and host apply pipelined, then a full reload of the local checkpoint. */
    static Projection project(StageCosts measured, double modelBytes, double density, int elementWidth, HostProfile host) {
        double gib = modelBytes / StageCosts.GIB;
        double bytes = measured.bytesPerGib() * gib;
        boolean full = measured.isFull();

        double applyCompute = measured.applyCoreSecondsPerGib() * gib / host.rolloutCores();
        double applyMemory = modelBytes * trafficPerModelByte(full, false, density, elementWidth) / (host.memGbps() * 1e9);
        double applyDisk = bytes / (host.diskGbps() * 1e9);
        double applyS = Math.max(applyCompute, Math.max(applyMemory, applyDisk));

        double reloadS = modelBytes / (host.reloadGbps() * 1e9);
        int files = files(measured, host);
        return new Projection(encodeS(measured, modelBytes, density, elementWidth, host), transferS(bytes, files, host),
                applyS, reloadS, 0, bytes, files);
    }

    /**
     * Engine mode: encode and transfer pipelined, then the patched engine applies the delta in place
     * at {@code inPlaceSecondsPerGib}, the reference engine's measured CPU seconds per GiB of model at
     * this density on one thread (the delta's bytes and the engine's pass over its parameters both grow
     * with the model).
     */
    static Projection projectEngine(StageCosts measured, double inPlaceSecondsPerGib, double modelBytes, double density,
                                    int elementWidth, HostProfile host) {
        if (measured.isFull()) {
            throw new IllegalArgumentException("a full checkpoint is reloaded, not applied in place");
        }
        if (!(inPlaceSecondsPerGib > 0) || Double.isInfinite(inPlaceSecondsPerGib)) {
            throw new IllegalArgumentException("in-place apply cost must be a positive number of seconds per GiB, got "
                    + inPlaceSecondsPerGib);
        }
        double gib = modelBytes / StageCosts.GIB;
        double bytes = measured.bytesPerGib() * gib;
        int files = files(measured, host);
        return new Projection(encodeS(measured, modelBytes, density, elementWidth, host), transferS(bytes, files, host),
                0, 0, inPlaceSecondsPerGib * gib, bytes, files);
    }

    private static double encodeS(StageCosts measured, double modelBytes, double density, int elementWidth, HostProfile host) {
        double gib = modelBytes / StageCosts.GIB;
        double encodeCompute = measured.encodeCoreSecondsPerGib() * gib / host.trainerCores();
        double encodeMemory = modelBytes * trafficPerModelByte(measured.isFull(), true, density, elementWidth) / (host.memGbps() * 1e9);
        double encodeDisk = measured.bytesPerGib() * gib / (host.diskGbps() * 1e9);
        return Math.max(encodeCompute, Math.max(encodeMemory, encodeDisk));
    }

    private static int files(StageCosts measured, HostProfile host) {
        return Math.max(measured.files(), host.chunks());
    }

    private static double transferS(double bytes, int files, HostProfile host) {
        return bytes / host.linkBytesPerS() + files * host.rttS();
    }
}
