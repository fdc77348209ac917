package dev.stitch.encode;

import java.util.List;

/**
 * The outcome of diffing new weights against the snapshot.
 *
 * @param changes         changed tensors in ascending byte order of names (empty when nothing
 *                        changed, or when the layout changed)
 * @param layoutChanged   the (name, dtype, shape) set differs from the snapshot's: no delta is
 *                        possible and the version must be full-only (docs/formats/common.md §1.6)
 * @param valueMode       what {@link TensorChange#values()} carries
 * @param tensors         number of tensors in the new weights
 * @param totalElements   elements of the new weights
 * @param totalBytes      bytes of the new weights
 * @param changedElements elements whose bits differ (every element when the layout changed)
 * @param changedBytes    {@code changedElements} times each element's width
 * @param diffNanos       wall time of the compare-and-gather
 */
public record EncodedVersion(List<TensorChange> changes, boolean layoutChanged, ValueMode valueMode, int tensors,
                             long totalElements, long totalBytes, long changedElements, long changedBytes,
                             long diffNanos) {

    public EncodedVersion {
        changes = List.copyOf(changes);
    }

    /** Changed elements over all elements; 0 for an empty model. */
    public double density() {
        return totalElements == 0 ? 0.0 : (double) changedElements / totalElements;
    }

    /** True when nothing changed and the layout is the same (an empty transition). */
    public boolean isEmpty() {
        return !layoutChanged && changes.isEmpty();
    }
}
