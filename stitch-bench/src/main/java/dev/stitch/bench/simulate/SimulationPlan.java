package dev.stitch.bench.simulate;

import java.util.List;

/**
 * Everything one simulation run was asked for.
 *
 * @param modelParams   parameters of the extrapolated model (bf16)
 * @param density       fraction of elements the step changes
 * @param linkMbps      link rates in MB/s (10^6 B/s); the first one is measured
 * @param rttS          round trip per file request, seconds
 * @param trainerCores  encoder cores in the extrapolation
 * @param rolloutCores  applier cores in the extrapolation
 * @param measureBytes  model bytes of the measured run
 * @param chunks        pipeline chunks per version
 * @param codecs        backends/encodings to run
 * @param memGbps       memory bandwidth cap per host, GB/s
 * @param diskGbps      disk bandwidth cap, GB/s
 * @param reloadGbps    reload bandwidth for the extrapolation, or null to use the measured one
 * @param scaleLink     measure with the link scaled by measure size / model size
 * @param seed          synthetic model seed
 */
record SimulationPlan(long modelParams, double density, List<Double> linkMbps, double rttS, int trainerCores,
                      int rolloutCores, long measureBytes, int chunks, List<CodecSpec> codecs, double memGbps,
                      double diskGbps, Double reloadGbps, boolean scaleLink, long seed) {

    /** Bytes of the extrapolated model: two per bf16 parameter. */
    double modelBytes() {
        return modelParams * 2.0;
    }
}
