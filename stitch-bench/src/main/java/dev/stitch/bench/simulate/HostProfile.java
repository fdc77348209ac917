package dev.stitch.bench.simulate;

/**
 * The machines and link of the simulated deployment, the assumptions the extrapolation states.
 *
 * @param trainerCores   cores the trainer host gives the encoder
 * @param rolloutCores   cores the rollout host gives the applier
 * @param memGbps        streaming memory bandwidth of each host in GB/s (10^9 B): caps encode and apply
 *                       however many cores they get
 * @param diskGbps       sequential disk bandwidth in GB/s: caps writing the version on the trainer and
 *                       reading it on the rollout host
 * @param reloadGbps     engine reload bandwidth in GB/s of model (local checkpoint into the engine)
 * @param linkBytesPerS  link rate in bytes per second
 * @param rttS           round trip paid once per file request, seconds
 * @param chunks         pipeline chunks a version is cut into
 */
record HostProfile(int trainerCores, int rolloutCores, double memGbps, double diskGbps, double reloadGbps,
                   double linkBytesPerS, double rttS, int chunks) {

    HostProfile {
        if (trainerCores < 1 || rolloutCores < 1) {
            throw new IllegalArgumentException("core counts must be at least 1");
        }
        if (!(memGbps > 0) || !(diskGbps > 0) || !(reloadGbps > 0) || !(linkBytesPerS > 0)) {
            throw new IllegalArgumentException("bandwidths must be positive");
        }
        if (!(rttS >= 0)) {
            throw new IllegalArgumentException("RTT must be non-negative");
        }
        if (chunks < 1) {
            throw new IllegalArgumentException("at least one chunk");
        }
    }
}
