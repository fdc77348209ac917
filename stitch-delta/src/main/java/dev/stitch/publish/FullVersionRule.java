package dev.stitch.publish;

import dev.stitch.encode.TensorData;
import dev.stitch.format.DeltaFormat;
import dev.stitch.format.FullFallback;
import dev.stitch.format.WriteResult;
import dev.stitch.format.full.FullCheckpointWriter;
import dev.stitch.tensor.TensorSpec;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * What a publisher does with a version none of its delta formats can express (docs/formats/anchors-and-fallback.md §6):
 * refuse it when a configured format's readers cannot take a full version (2.8) unless told to,
 * else write it where those readers look for one (3.5, 5).
 */
final class FullVersionRule {

    private final List<DeltaFormat> formats;
    private final boolean allowFullFallback;

    FullVersionRule(List<DeltaFormat> formats, boolean allowFullFallback) {
        this.formats = List.copyOf(formats);
        this.allowFullFallback = allowFullFallback;
    }

    /**
     * Checks that {@code version} may be published in full because of {@code cause}.
     *
     * @throws FullFallbackRefusedException when a configured format refuses full versions and no option allows them
     */
    void check(long version, String cause) throws FullFallbackRefusedException {
        if (allowFullFallback) {
            return;
        }
        for (DeltaFormat f : formats) {
            if (f.fullFallback() == FullFallback.REFUSED) {
                throw new FullFallbackRefusedException(version, f.id(), cause);
            }
        }
    }

    /** Where a full-only version's checkpoint goes: the version directory when a configured format's readers need it there. */
    FullFallback layout() {
        for (DeltaFormat f : formats) {
            if (f.fullFallback() == FullFallback.VERSION_DIRECTORY) {
                return FullFallback.VERSION_DIRECTORY;
            }
        }
        return FullFallback.ANCHOR_DIRECTORY;
    }

    /** Writes the full checkpoint of a full-only version ({@code fullOnly}) or of an anchor into {@code dir}. */
    WriteResult writeCheckpoint(Collection<TensorData> tensors, Path dir, boolean fullOnly) throws IOException {
        List<TensorData> all = List.copyOf(tensors);
        if (fullOnly && layout() == FullFallback.VERSION_DIRECTORY) {
            return FullCheckpointWriter.defaults().alwaysIndexed().write(all, dir, "");
        }
        // anchors of delta versions stay under full/: the disk_delta index name would collide (docs/protocol/board.md §1.4)
        return FullCheckpointWriter.defaults().write(all, dir, FullCheckpointWriter.ANCHOR_DIR);
    }

    /** The first difference between the snapshot's tensors and the new ones, in words; null when there is none. */
    static String layoutChange(List<TensorSpec> before, Collection<TensorData> after) {
        Map<String, TensorSpec> old = new HashMap<>();
        for (TensorSpec s : before) {
            old.put(s.name(), s);
        }
        TreeSet<String> added = new TreeSet<>();
        TreeSet<String> changed = new TreeSet<>();
        Map<String, TensorSpec> now = new HashMap<>();
        for (TensorData t : after) {
            now.put(t.name(), t.spec());
            TensorSpec was = old.get(t.name());
            if (was == null) {
                added.add(t.name());
            } else if (!was.equals(t.spec())) {
                changed.add(t.name());
            }
        }
        if (!changed.isEmpty()) {
            String n = changed.first();
            return "tensor " + n + " changed from " + old.get(n) + " to " + now.get(n);
        }
        if (!added.isEmpty()) {
            return "tensor " + now.get(added.first()) + " was added";
        }
        TreeSet<String> removed = new TreeSet<>(old.keySet());
        removed.removeAll(now.keySet());
        return removed.isEmpty() ? null : "tensor " + old.get(removed.first()) + " was removed";
    }
}
