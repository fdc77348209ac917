package dev.stitch.bench.simulate;

/**
 * Scales measured per-GiB stage costs to another model size and host, and computes time-to-serve of
 * a three-stage pipeline (encode, transfer, apply) over equal chunks followed by one engine reload.
 *
 * <p>Encode and apply scale with the core count given, capped by the host's memory bandwidth over
 * the memory traffic the stage needs per model byte (delta-formats.md 7.2) and by disk bandwidth for
 * the bytes the stage writes or reads; transfer is bytes over the link plus one RTT per file; reload
 * is model bytes over the reload bandwidth.
 */
final class TimeToServeModel {
    private TimeToServeModel() {
    }

    /** Stage times of one version and what the pipeline makes of them. */
    record Projection(double encodeS, double transferS, double applyS, double reloadS, double bytes, int files) {

        double slowestStageS() {
            return Math.max(encodeS, Math.max(transferS, applyS));
        }

        /** Stages one after the other, then reload. */
        double sequentialS() {
            return encodeS + transferS + applyS + reloadS;
        }

        /**
         * Pipelined over {@code chunks} equal chunks: the slowest stage runs the whole time, the other two
         * add only their first (fill) and last (drain) chunk, then the reload.
         */
        double pipelinedS(int chunks) {
            double slowest = slowestStageS();
            double others = encodeS + transferS + applyS - slowest;
            return slowest + others / chunks + reloadS;
        }
    }

    /**
     * Memory traffic per model byte of the sparse kernels (delta-formats.md 7.2) or, for full
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

    static Projection project(StageCosts measured, double modelBytes, double density, int elementWidth, HostProfile host) {
        double gib = modelBytes / StageCosts.GIB;
        double bytes = measured.bytesPerGib() * gib;
        boolean full = measured.isFull();

        double encodeCompute = measured.encodeCoreSecondsPerGib() * gib / host.trainerCores();
        double encodeMemory = modelBytes * trafficPerModelByte(full, true, density, elementWidth) / (host.memGbps() * 1e9);
        double encodeDisk = bytes / (host.diskGbps() * 1e9);
        double encodeS = Math.max(encodeCompute, Math.max(encodeMemory, encodeDisk));

        int files = Math.max(measured.files(), host.chunks());
        double transferS = bytes / host.linkBytesPerS() + files * host.rttS();

        double applyCompute = measured.applyCoreSecondsPerGib() * gib / host.rolloutCores();
        double applyMemory = modelBytes * trafficPerModelByte(full, false, density, elementWidth) / (host.memGbps() * 1e9);
        double applyDisk = bytes / (host.diskGbps() * 1e9);
        double applyS = Math.max(applyCompute, Math.max(applyMemory, applyDisk));

        double reloadS = modelBytes / (host.reloadGbps() * 1e9);
        return new Projection(encodeS, transferS, applyS, reloadS, bytes, files);
    }
}
