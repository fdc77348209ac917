package dev.stitch.sync;

import dev.stitch.board.BulletinBoard;
import dev.stitch.board.VerificationReport;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import java.io.IOException;
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
    public PlannedVersion readVersion(long version) throws IOException {
        Manifest m = board.readManifest(version);
        long transitionBytes = 0;
        long fullBytes = 0;
        for (Artifact a : m.artifacts()) {
            long size = a.sizeBytes() == null ? 0 : a.sizeBytes();
            if (a.is(ArtifactKind.FULL)) {
                fullBytes += size;
            } else if (a.is(ArtifactKind.TRANSITION) || a.is(ArtifactKind.TRANSITION_META)) {
                transitionBytes += size;
            }
        }
        return new PlannedVersion(m.version(), m.baseVersion(), m.runId(), m.backend(), m.loadFormat(),
                board.versionDirectory(version), m.transitionFiles(), m.transitionWeights(), transitionBytes,
                m.isAnchor(), fullBytes, m);
    }

    @Override
    public Verification verify(PlannedVersion version, boolean includeFull, boolean requireChecksums)
            throws IOException {
        Manifest m = version.manifest() != null ? version.manifest() : board.readManifest(version.version());
        // An anchor load uses only the full checkpoint; a replay uses everything but it.
        Predicate<Artifact> used = includeFull ? a -> a.is(ArtifactKind.FULL) : a -> !a.is(ArtifactKind.FULL);
        VerificationReport r = board.verifyArtifacts(m, used, requireChecksums);
        return new Verification(r.bytesVerified(), r.unverified());
    }
}
