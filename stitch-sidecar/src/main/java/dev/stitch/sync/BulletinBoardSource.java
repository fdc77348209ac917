package dev.stitch.sync;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stitch.apply.VersionStep;
import dev.stitch.board.BulletinBoard;
import dev.stitch.board.VerificationReport;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import java.io.IOException;
import java.util.Optional;
import java.util.function.Predicate;

/** {@link SyncBoard} over a {@link BulletinBoard} of any layout. */
public final class BulletinBoardSource implements SyncBoard {

    private final BulletinBoard board;

    public BulletinBoardSource(BulletinBoard board) {
        this.board = board;
    }

    public BulletinBoard board() {
        return board;
    }

    @Override
    public String layout() {
        return board.layout().label();
    }

    @Override
    public void refresh() throws IOException {
        board.refresh();
    }

    @Override
    public Pointer readPointer() throws IOException {
        LatestPointer p = board.readLatest();
        return new Pointer(p.runId(), p.version());
    }

    @Override
    public VersionStep readVersion(long version) throws IOException {
        return VersionStep.of(board.readManifest(version), board.versionDirectory(version));
    }

    @Override
    public Optional<String> weightsDigest(long version) throws IOException {
        JsonNode metadata = board.readManifest(version).metadata();
        JsonNode digest = metadata == null ? null : metadata.get("weights_digest");
        return digest != null && digest.isTextual() ? Optional.of(digest.asText()) : Optional.empty();
    }

    @Override
    public void applied(long version) {
        board.appliedUpTo(version);
    }

    @Override
    public Optional<dev.stitch.board.FetchStats> fetchStats() {
        return board instanceof dev.stitch.board.RemoteBulletinBoard r ? Optional.of(r.stats()) : Optional.empty();
    }

    @Override
    public Verification verify(VersionStep version, boolean includeFull, boolean requireChecksums)
            throws IOException {
        // manifests are immutable once published: the one read for planning is the one verified against
        Manifest m = board.readManifest(version.version());
        // An anchor load uses only the full checkpoint; a replay uses everything but it.
        Predicate<Artifact> used = includeFull ? a -> a.is(ArtifactKind.FULL) : a -> !a.is(ArtifactKind.FULL);
        VerificationReport r = board.verifyArtifacts(m, used, requireChecksums);
        return new Verification(r.bytesVerified(), r.unverified());
    }
}
