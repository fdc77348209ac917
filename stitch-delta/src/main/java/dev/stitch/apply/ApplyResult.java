package dev.stitch.apply;

import java.util.List;

/**
 * The outcome of {@link HostApplier#apply}.
 *
 * @param fromVersion        local version before
 * @param toVersion          local version after
 * @param applied            versions applied (deltas and anchors)
 * @param skipped            versions already applied
 * @param bytesWritten       tensor bytes written into the local checkpoint
 * @param unknownTensorNames sparse_delta params whose names the local checkpoint does not hold
 */
public record ApplyResult(long fromVersion, long toVersion, List<Long> applied, List<Long> skipped, long bytesWritten,
                          List<String> unknownTensorNames) {

    public ApplyResult {
        applied = List.copyOf(applied);
        skipped = List.copyOf(skipped);
        unknownTensorNames = List.copyOf(unknownTensorNames);
    }
}
