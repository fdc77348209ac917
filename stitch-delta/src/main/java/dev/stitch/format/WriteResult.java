package dev.stitch.format;

import java.util.List;

/**
 * What a format writer produced for one version.
 *
 * @param files         every file written, transition payloads sorted by path first, then meta files
 * @param deltaEncoding the manifest's {@code delta_encoding} (null for full checkpoints)
 * @param rawBytes      encoded bytes before compression
 * @param encodedBytes  bytes written, over all files
 * @param encodeNanos   wall time spent encoding and writing
 */
public record WriteResult(List<WrittenFile> files, String deltaEncoding, long rawBytes, long encodedBytes, long encodeNanos) {

    public WriteResult {
        files = List.copyOf(files);
    }

    /** Transition payload paths in order (the manifest's {@code transition_files}). */
    public List<String> transitionFiles() {
        return files.stream().filter(f -> f.kind() == dev.stitch.protocol.ArtifactKind.TRANSITION).map(WrittenFile::path).sorted().toList();
    }
}
