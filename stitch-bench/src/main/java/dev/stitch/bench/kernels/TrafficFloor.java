package dev.stitch.bench.kernels;

/**
 * The memory-traffic floor of docs/performance-targets.md §7.2: the fastest an encode or apply pass can run
 * given the measured streaming read ({@code B_r}) and fill ({@code B_w}) bandwidths, from the bytes
 * each phase must read and write per model byte.
 *
 * @param readGbps  B_r in GB/s (1e9 bytes)
 * @param writeGbps B_w in GB/s
 */
public record TrafficFloor(double readGbps, double writeGbps) {

    /** Fraction of 64-byte lines holding at least one change. */
    static double dirtyLines(int width, double density) {
        return 1 - Math.pow(1 - density, 64.0 / width);
    }

    /** Bytes of gathered u32 index plus value per model byte. */
    static double gathered(int width, double density) {
        return density / width * (4 + width);
    }

    static double encodeReadPerByte(int width, double density) {
        return 2;
    }

    static double encodeWritePerByte(int width, double density) {
        return dirtyLines(width, density) + gathered(width, density);
    }

    static double applyReadPerByte(int width, double density) {
        return gathered(width, density) + dirtyLines(width, density);
    }

    static double applyWritePerByte(int width, double density) {
        return dirtyLines(width, density);
    }

    /** Floor throughput of the encode kernel, GB/s of model. */
    public double encodeGbps(int width, double density) {
        return 1 / (encodeReadPerByte(width, density) / readGbps + encodeWritePerByte(width, density) / writeGbps);
    }

    /** Floor throughput of the apply kernel, GB/s of model. */
    public double applyGbps(int width, double density) {
        return 1 / (applyReadPerByte(width, density) / readGbps + applyWritePerByte(width, density) / writeGbps);
    }
}
