package dev.stitch.cli;

import dev.stitch.apply.ApplyProgress;
import dev.stitch.apply.ApplyResult;
import dev.stitch.apply.HostApplier;
import dev.stitch.apply.RefusedVersionException;
import dev.stitch.apply.VersionStep;
import dev.stitch.board.ArtifactVerificationException;
import dev.stitch.board.BulletinBoard;
import dev.stitch.format.DeltaFormat;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.protocol.ProtocolException;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code stitch apply}: brings a local HF checkpoint to a board version host-side
 * (board-and-sidecar.md 10.1): plans from the local state file (delta path, or the anchor path when
 * the local copy is older than the newest anchor or replay costs more), verifies every manifest and
 * used artifact before touching the checkpoint, then applies version by version with the host applier.
 */
@Command(name = "apply",
        mixinStandardHelpOptions = true,
        description = "Bring the local HF checkpoint LOCAL_DIR to board version V host-side, starting from the version "
                + "recorded in LOCAL_DIR/.weight_sync/state.json (none = the base, version 0). Every backend is supported "
                + "(stitch_delta, disk_delta, sparse_delta NaN-masked like the engine, full anchors). A refused version "
                + "leaves the weight files byte-for-byte unchanged and exits non-zero.")
public final class ApplyCommand implements StitchSubcommand, Runnable {

    /** Replay at most this many versions before preferring an anchor (board-and-sidecar.md 6.3). */
    static final int MAX_REPLAY_VERSIONS = 8;

    @Option(names = "--board", required = true, paramLabel = "DIR", description = "Board root directory.")
    Path boardRoot;

    @Option(names = "--target", required = true, paramLabel = "V", description = "Version to reach (at most the board's latest).")
    long target;

    @Option(names = "--checkpoint", required = true, paramLabel = "LOCAL_DIR",
            description = "The local HF checkpoint directory to update in place.")
    Path checkpoint;

    @Option(names = "--base", paramLabel = "BASE_DIR",
            description = "The base checkpoint (version 0), used to rebuild LOCAL_DIR when it is dirty or of another run "
                    + "and no anchor can be used.")
    Path base;

    @Option(names = "--require-checksums",
            description = "Fail on artifacts without size_bytes/checksum (boards written by upstream) instead of accepting them.")
    boolean requireChecksums;

    @Option(names = "--max-replay", defaultValue = "" + MAX_REPLAY_VERSIONS, paramLabel = "N",
            description = "Replay at most N versions up to an anchor before loading the anchor instead (default: ${DEFAULT-VALUE}).")
    int maxReplay;

    @Override
    public void run() {
        PrintStream err = System.err;
        BulletinBoard board = BulletinBoard.open(boardRoot);
        try (HostApplier applier = HostApplier.open(checkpoint)) {
            LatestPointer pointer = board.readLatest();
            if (target < 0 || target > pointer.version()) {
                throw new CliFailure("target version " + target + " is not published (the board's latest is " + pointer.version() + ")");
            }
            long local = applier.version();
            String dirty = applier.state().dirtyReason();
            if (dirty == null && applier.state().runId() != null && pointer.runId() != null && !applier.state().runId().equals(pointer.runId())
                    && local > 0) {
                dirty = "it holds run " + applier.state().runId() + ", the board is at run " + pointer.runId();
            }
            if (dirty == null && local == target) {
                System.out.println(checkpoint + " is already at version " + target);
                return;
            }
            if (dirty == null && local > target) {
                dirty = "it is at version " + local + ", newer than the target " + target;
            }
            List<VersionStep> chain = plan(board, pointer, dirty == null ? local : -1, applier);
            ApplyProgress progress = System.console() != null ? new TerminalProgress(err) : ApplyProgress.NONE;
            ApplyResult r = applier.apply(chain, progress);
            if (System.console() != null) {
                err.println();
            }
            System.out.println(checkpoint + ": version " + r.fromVersion() + " -> " + r.toVersion() + " (applied " + r.applied()
                + (r.skipped().isEmpty() ? "" : ", already applied " + r.skipped())
                + (r.unknownTensorNames().isEmpty() ? "" : ", " + r.unknownTensorNames().size() + " unknown tensor names skipped") + ")");
        } catch (RefusedVersionException e) {
            throw new CliFailure(e.getMessage());
        } catch (IllegalStateException e) {
            throw new CliFailure("cannot plan a path to version " + target + ": " + e.getMessage());
        } catch (ArtifactVerificationException e) {
            throw new CliFailure("verification failed: " + e.getMessage());
        } catch (ProtocolException e) {
            throw new CliFailure("board read error: " + e.getMessage());
        } catch (IOException e) {
            throw new CliFailure(e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    /**
     * The chain from {@code local} ({@code -1} = the local files cannot be replayed onto) to the target:
     * deltas when possible and cheaper, else the newest anchor at or below the target (or a rebuild
     * from {@code --base}) and the deltas after it. Every used artifact is verified here.
     */
    private List<VersionStep> plan(BulletinBoard board, LatestPointer pointer, long local, HostApplier applier) throws IOException {
        OptionalLong anchor = board.newestAnchorAtOrBelow(target);
        if (local >= 0) {
            boolean anchorCloser = anchor.isPresent() && anchor.getAsLong() > local;
            List<VersionStep> deltas = null;
            String why = null;
            try {
                deltas = deltaPath(board, pointer, local, target);
                if (anchorCloser) {
                    long a = anchor.getAsLong();
                    Manifest am = board.readManifest(a, pointer);
                    long replayBytes = 0;
                    for (VersionStep s : deltas) {
                        if (s.version() <= a) {
                            replayBytes += transitionBytes(s);
                        }
                    }
                    if (a - local > maxReplay) {
                        why = "more than " + maxReplay + " versions to replay";
                    } else if (replayBytes > fullBytes(am)) {
                        why = "replay is larger than the anchor";
                    }
                }
            } catch (IOException | IllegalStateException e) {
                if (!anchorCloser) {
                    throw e;
                }
                why = e.getMessage();
            }
            if (why == null) {
                return deltas;
            }
            System.err.println("using the anchor at version " + anchor.getAsLong() + ": " + why);
        }
        if (anchor.isPresent() && anchor.getAsLong() >= 1) {
            long a = anchor.getAsLong();
            List<VersionStep> chain = new ArrayList<>();
            chain.add(step(board, pointer, a, true));
            chain.addAll(deltaPath(board, pointer, a, target));
            return chain;
        }
        if (base == null) {
            throw new CliFailure(checkpoint + " cannot be replayed onto and the board has no anchor at or below " + target
                + "; pass --base BASE_DIR to rebuild it from the base checkpoint");
        }
        System.err.println("rebuilding " + checkpoint + " from the base checkpoint " + base);
        applier.rebuildFrom(base);
        return deltaPath(board, pointer, 0, target);
    }

    /** Versions {@code from+1 .. to}, each verified and chained on the previous. */
    private List<VersionStep> deltaPath(BulletinBoard board, LatestPointer pointer, long from, long to) throws IOException {
        List<VersionStep> chain = new ArrayList<>();
        long prev = from;
        for (long v = from + 1; v <= to; v++) {
            VersionStep s = step(board, pointer, v, false);
            if (s.baseVersion() != prev) {
                throw new IllegalStateException("version " + v + " builds on " + s.baseVersion() + ", not on " + prev);
            }
            if (DeltaFormat.isFullOnly(s.backend()) && !s.loadAnchor()) {
                s = step(board, pointer, v, true);
            }
            chain.add(s);
            prev = v;
        }
        return chain;
    }

    private VersionStep step(BulletinBoard board, LatestPointer pointer, long v, boolean anchor) throws IOException {
        Manifest m;
        try {
            m = board.readManifest(v, pointer);
        } catch (NoSuchFileException e) {
            throw new IllegalStateException("version " + v + " has no manifest on the board");
        }
        if (DeltaFormat.byId(m.backend()).isEmpty()) {
            throw new IllegalStateException("version " + v + " has backend '" + m.backend() + "', which cannot be applied host-side");
        }
        boolean loadFull = anchor || DeltaFormat.isFullOnly(m.backend());
        if (loadFull && !m.isAnchor()) {
            throw new IllegalStateException("version " + v + " is full-only but carries no full artifacts");
        }
        board.verifyArtifacts(m, a -> loadFull ? a.is(ArtifactKind.FULL) : !a.is(ArtifactKind.FULL), requireChecksums);
        Map<String, Artifact> arts = new HashMap<>();
        for (Artifact a : m.artifacts()) {
            arts.put(a.path(), a);
        }
        String run = m.runId() != null ? m.runId() : pointer.runId();
        return new VersionStep(v, m.baseVersion(), m.backend(), board.versionDirectory(v), m.transitionFiles(), arts, loadFull, run);
    }

    private static long transitionBytes(VersionStep s) {
        long n = 0;
        for (Artifact a : s.artifacts().values()) {
            if (!a.is(ArtifactKind.FULL) && a.sizeBytes() != null) {
                n += a.sizeBytes();
            }
        }
        return n;
    }

    private static long fullBytes(Manifest m) {
        long n = 0;
        for (Artifact a : m.artifactsOf(ArtifactKind.FULL)) {
            n += a.sizeBytes() == null ? 0 : a.sizeBytes();
        }
        return n;
    }

    /** One status line on a terminal: version, phase, bytes, rate and ETA. */
    private static final class TerminalProgress implements ApplyProgress {
        private final PrintStream out;
        private final long start = System.nanoTime();
        private long lastPrint;

        TerminalProgress(PrintStream out) {
            this.out = out;
        }

        @Override
        public synchronized void report(long version, String phase, long done, long total) {
            long now = System.nanoTime();
            if (now - lastPrint < 200_000_000L && done < total) {
                return;
            }
            lastPrint = now;
            double secs = Math.max(1e-9, (now - start) / 1e9);
            double rate = done / secs;
            String eta = rate > 0 && total > done ? String.format("%.1fs", (total - done) / rate) : "-";
            out.printf("\rversion %d %-6s %8.1f / %8.1f MB  %7.1f MB/s  ETA %s   ", version, phase, done / 1e6, total / 1e6, rate / 1e6, eta);
            out.flush();
        }
    }
}
