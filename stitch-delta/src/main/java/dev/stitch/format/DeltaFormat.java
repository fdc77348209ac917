package dev.stitch.format;

import dev.stitch.board.ManifestFields;
import dev.stitch.digest.WeightsDigest;
import dev.stitch.encode.ChunkRunner;
import dev.stitch.encode.EncodedVersion;
import dev.stitch.encode.TensorChange;
import dev.stitch.encode.TensorData;
import dev.stitch.encode.ValueMode;
import dev.stitch.safetensors.Checkpoint;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * One artifact family of a version, the manifest's {@code backend} (docs/protocol/board.md §1.4): its
 * id, its writer, its reader into tensor patches, its manifest fields and what happens to a version
 * it cannot express. The four instances below are the only ones, and {@link #byId} and
 * {@link #parse} are the only places their names are matched.
 */
public abstract class DeltaFormat {

    /** This project's compact format, applied host-side (docs/formats/stitch-delta.md §4). */
    public static final DeltaFormat STITCH_DELTA = new StitchDeltaBackend();
    /** slime v1 files, applied by a patched SGLang (engine mode) or host-side (docs/formats/sparse-delta.md §2). */
    public static final DeltaFormat SPARSE_DELTA = new SparseDeltaBackend();
    /** slime v2 per-tensor xor/overwrite files, applied host-side (docs/formats/disk-delta.md §3). */
    public static final DeltaFormat DISK_DELTA = new DiskDeltaBackend();
    /** A full-only version: a complete checkpoint and no transition (docs/formats/anchors-and-fallback.md §5). */
    public static final DeltaFormat FULL = new FullBackend();

    private static final List<DeltaFormat> ALL = List.of(STITCH_DELTA, SPARSE_DELTA, DISK_DELTA, FULL);

    private final String id;

    DeltaFormat(String id) {
        this.id = id;
    }

    /** Every format, in the order of the error text of {@link #parse}. */
    public static List<DeltaFormat> all() {
        return ALL;
    }

    /** The format of a manifest's {@code backend} value, spelled exactly; empty for one this code does not know. */
    public static Optional<DeltaFormat> byId(String manifestId) {
        for (DeltaFormat f : ALL) {
            if (f.id.equals(manifestId)) {
                return Optional.of(f);
            }
        }
        return Optional.empty();
    }

    /** Parses a manifest or command-line spelling ({@code stitch_delta}; dashes and any case accepted). */
    public static DeltaFormat parse(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT).replace('-', '_');
        return byId(t).orElseThrow(() -> new IllegalArgumentException("unknown backend '" + text
                + "' (expected stitch_delta, sparse_delta, disk_delta or full)"));
    }

    /** Whether a manifest's {@code backend} value names a full-only version, loaded whole instead of patched. */
    public static boolean isFullOnly(String manifestId) {
        return byId(manifestId).map(f -> !f.hasTransition()).orElse(false);
    }

    /** The manifest spelling. */
    public final String id() {
        return id;
    }

    /** Whether versions of this format carry a transition; a {@link #FULL} version is loaded whole instead. */
    public boolean hasTransition() {
        return true;
    }

    /** How a version this format cannot express is published instead (docs/formats/anchors-and-fallback.md §6). */
    public abstract FullFallback fullFallback();

    /** What the diff hands this format's writer: stitch_delta follows its value mode, the others read new bits. */
    public ValueMode diffValues(FormatOptions options) {
        return ValueMode.OVERWRITE;
    }

    /** Whether the writer records digests of the changed tensors' new bytes, so the diff should hash them. */
    public boolean recordsNewDigests() {
        return false;
    }

    /** Whether the writer takes the diff's escaped gap and value planes instead of positions and values. */
    public boolean takesEscapedPlanes() {
        return false;
    }

    /**
     * {@code options} with this format's codec set from its name: sparse_delta's position encoding,
     * the value mode of disk_delta and stitch_delta; a format without codecs refuses any name.
     */
    public abstract FormatOptions withCodec(FormatOptions options, String codec);

    /** The {@code metadata.value_mode} of this format's versions, or null when it has none. */
    public String valueMode(FormatOptions options) {
        return null;
    }

    /**
     * A writer of this format's transitions. {@code runner} (may be null) lends worker threads to
     * writers that encode in parallel; the caller closes the writer.
     */
    public abstract VersionWriter newWriter(FormatOptions options, ChunkRunner runner);

    /**
     * The manifest fields of a version this format wrote ({@code written} is null for a full version).
     *
     * @param tensors the version's whole weights
     */
    public abstract ManifestFields manifestFields(WriteResult written, EncodedVersion encoded,
                                                  Collection<TensorData> tensors);

    /** Files the reader opens besides the transition files, verified when the manifest lists them. */
    public List<String> metaFiles() {
        return List.of();
    }

    /**
     * Reads a version's transition files into patches of the tensors of {@code local}, checking what
     * the files say about themselves against {@code files}.
     *
     * @throws DeltaFormatException when a file is malformed or contradicts the manifest
     */
    public abstract VersionPatches readPatches(VersionFiles files, Checkpoint local) throws IOException;

    @Override
    public String toString() {
        return id;
    }

    /** Names of the changed tensors in weights-digest order (the manifest's {@code transition_weights}). */
    static List<String> changedNames(EncodedVersion encoded) {
        List<String> names = new ArrayList<>(encoded.changes().size());
        for (TensorChange c : encoded.changes()) {
            names.add(c.spec().name());
        }
        names.sort(WeightsDigest.NAME_ORDER);
        return names;
    }

    /** Names of all tensors in weights-digest order. */
    static List<String> allNames(Collection<TensorData> tensors) {
        List<String> names = new ArrayList<>(tensors.size());
        for (TensorData t : tensors) {
            names.add(t.name());
        }
        names.sort(WeightsDigest.NAME_ORDER);
        return names;
    }
}
