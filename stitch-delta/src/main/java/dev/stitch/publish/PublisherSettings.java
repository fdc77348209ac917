package dev.stitch.publish;

import dev.stitch.board.PublishingBoard;
import dev.stitch.format.DeltaFormat;
import dev.stitch.format.FormatOptions;
import java.util.List;
import java.util.Map;

/**
 * A publisher's validated configuration, as {@link WeightPublisher.Builder} assembled it.
 *
 * @param board               the board versions are published to
 * @param runId               the run, or null for a run-less board
 * @param formats             the backend list, in fallback order (docs/formats/anchors-and-fallback.md §6)
 * @param formatOptions       the format writers' settings
 * @param anchorInterval      every n-th version also carries a full checkpoint; 0 = never
 * @param anchorBytesFraction a version also carries one once the transition bytes since the newest anchor
 *                            would exceed this fraction of that anchor's size; 0 = never
 * @param keepLast            board gc after each publish keeps this many versions; 0 = no gc
 * @param gcMinAgeSeconds     gc's minimum version age
 * @param recordWeightsDigest whether each manifest gets {@code metadata.weights_digest}
 * @param allowFullFallback   whether a version may be published in full even when a configured
 *                            format's readers cannot take full versions
 * @param baseModel           informational {@code base_model}, or null
 * @param metadata            entries of every manifest's {@code metadata}
 * @param progress            progress listener
 */
record PublisherSettings(PublishingBoard board, String runId, List<DeltaFormat> formats,
                         FormatOptions formatOptions, int anchorInterval, double anchorBytesFraction, int keepLast,
                         long gcMinAgeSeconds, boolean recordWeightsDigest, boolean allowFullFallback,
                         String baseModel, Map<String, String> metadata, PublishProgress progress) {

    PublisherSettings {
        formats = List.copyOf(formats);
        metadata = Map.copyOf(metadata);
    }
}
