package dev.stitch.format;

import java.util.List;
import java.util.Map;

/**
 * A version's transition decoded into patches of the local tensors.
 *
 * @param byName         the patches of each tensor, by name in ascending order, in file order
 * @param unknownTensors names the files patch that the local checkpoint does not hold (sparse_delta
 *                       skips them, docs/formats/sparse-delta.md §2.10)
 */
public record VersionPatches(Map<String, List<TensorPatch>> byName, List<String> unknownTensors) {

    public VersionPatches {
        unknownTensors = List.copyOf(unknownTensors);
    }
}
