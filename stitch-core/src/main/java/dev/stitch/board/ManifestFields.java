package dev.stitch.board;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.List;
import java.util.Objects;

/**
 * What the publisher says about a version; the board adds version, base, run, artifacts,
 * {@code transition_files} (the transition artifacts in the order they were added) and {@code created_at}.
 *
 * @param backend           artifact family (docs/protocol/board.md §1.4), e.g. {@code stitch_delta}
 * @param loadFormat        {@code delta}, {@code auto} or {@code noop}
 * @param deltaEncoding     encoding name, or null
 * @param compressionFormat {@code zstd}, or null
 * @param checksumFormat    per-tensor digest algorithm, or null
 * @param transitionWeights canonical HF tensor names touched; empty = unknown
 * @param baseModel         informational model name, or null
 * @param metadata          free-form JSON object, or null
 */
public record ManifestFields(String backend, String loadFormat, String deltaEncoding, String compressionFormat,
                             String checksumFormat, List<String> transitionWeights, String baseModel,
                             JsonNode metadata) {

    public ManifestFields {
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(loadFormat, "loadFormat");
        transitionWeights = transitionWeights == null ? List.of() : List.copyOf(transitionWeights);
        if (metadata != null && !metadata.isNull() && !metadata.isObject()) {
            throw new IllegalArgumentException("manifest metadata must be a JSON object");
        }
    }

    /** Backend and load format only. */
    public static ManifestFields of(String backend, String loadFormat) {
        return new ManifestFields(backend, loadFormat, null, null, null, List.of(), null, null);
    }

    public ManifestFields withCodec(String deltaEncodingName, String compression, String checksum) {
        return new ManifestFields(backend, loadFormat, deltaEncodingName, compression, checksum, transitionWeights,
                baseModel, metadata);
    }

    public ManifestFields withTransitionWeights(List<String> names) {
        return new ManifestFields(backend, loadFormat, deltaEncoding, compressionFormat, checksumFormat, names,
                baseModel, metadata);
    }

    public ManifestFields withBaseModel(String name) {
        return new ManifestFields(backend, loadFormat, deltaEncoding, compressionFormat, checksumFormat,
                transitionWeights, name, metadata);
    }

    public ManifestFields withMetadata(JsonNode object) {
        return new ManifestFields(backend, loadFormat, deltaEncoding, compressionFormat, checksumFormat,
                transitionWeights, baseModel, object);
    }
}
