package dev.stitch.cli;

import dev.stitch.apply.ApplyProgress;
import dev.stitch.apply.ApplyResult;
import dev.stitch.apply.BoardTail;
import dev.stitch.apply.ChainPlan;
import dev.stitch.apply.ChainPlanner;
import dev.stitch.apply.HostApplier;
import dev.stitch.apply.HostState;
import dev.stitch.apply.RefusedVersionException;
import dev.stitch.apply.VersionStep;
import dev.stitch.board.ArtifactVerificationException;
import dev.stitch.board.BoardAddress;
import dev.stitch.board.BoardLayout;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.BulletinBoard;
import dev.stitch.format.DeltaFormat;
import dev.stitch.protocol.ArtifactKind;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.protocol.ProtocolException;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code stitch apply}: brings a local HF checkpoint to a board version host-side
 * (docs/protocol/cli-and-config.md §10.1): plans from the local state file (delta path, or the anchor path when
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

    /** Replay at most this many versions before preferring an anchor (docs/protocol/sync-and-engines.md §6.3). */
    static final int MAX_REPLAY_VERSIONS = 8;

    @Option(names = "--board", required = true, paramLabel = "BOARD",
            description = "The board: a directory, s3://bucket/prefix, or an http(s):// prefix (versions are fetched into "
                    + "--cache-dir and verified before a byte is applied).")
    String boardLocation;

    @picocli.CommandLine.Mixin
    RemoteBoardFlags remote;

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
        BoardAddress address = RemoteBoardFlags.address(boardLocation);
        try (BulletinBoard board = BulletinBoard.open(address, BoardLayout.STITCH, BoardOptions.defaults(),
                remote.options(address));
             HostApplier applier = HostApplier.open(checkpoint)) {
            LatestPointer pointer = board.readLatest();
            if (target < 0 || target > pointer.version()) {
                throw new CliFailure("target version " + target + " is not published (the board's latest is " + pointer.version() + ")");
            }
            ChainPlanner planner = new ChainPlanner(maxReplay);
            HostState state = applier.state();
            ChainPlanner.Copy copy = new ChainPlanner.Copy(state.runId(), applier.version(), state.dirtyReason());
            Map<Long, Manifest> manifests = new HashMap<>();
            BoardTail tail = BoardTail.read(planner, copy, pointer.runId(), target, v -> {
                Manifest m = board.readManifest(v);
                manifests.put(v, m);
                return VersionStep.of(m, board.versionDirectory(v));
            });
            ChainPlan plan = planner.plan(copy, pointer.runId(), tail);
            if (plan instanceof ChainPlan.UpToDate) {
                System.out.println(checkpoint + " is already at version " + target);
                return;
            }
            if (plan instanceof ChainPlan.Refusal refusal && refusal.kind() == ChainPlan.Refusal.Kind.NO_ANCHOR) {
                plan = rebuildFromBase(applier, planner, pointer, tail);
            }
            boolean replayable = planner.replayBlocker(copy, pointer.runId(), target) == null;
            List<VersionStep> steps = switch (plan) {
                case ChainPlan.Chain c -> verified(board, manifests, c, replayable);
                case ChainPlan.Refusal refusal -> throw new IllegalStateException(refusal.message());
                // only after a rebuild for target 0: the base itself is the target
                case ChainPlan.UpToDate u -> List.of();
            };
            ApplyProgress progress = System.console() != null ? new TerminalProgress(err) : ApplyProgress.NONE;
            ApplyResult r = applier.apply(steps, progress);
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
     * The local files cannot be replayed onto and the board has no anchor at or below the target: with
     * {@code --base}, rebuild them from the base checkpoint and replay every version from 1.
     */
    private ChainPlan rebuildFromBase(HostApplier applier, ChainPlanner planner, LatestPointer pointer, BoardTail tail)
            throws IOException {
        if (base == null) {
            throw new CliFailure(checkpoint + " cannot be replayed onto and the board has no anchor at or below " + target
                + "; pass --base BASE_DIR to rebuild it from the base checkpoint");
        }
        System.err.println("rebuilding " + checkpoint + " from the base checkpoint " + base);
        applier.rebuildFrom(base);
        // without an anchor the walk went all the way down, so the tail read already holds 1..target
        return planner.plan(ChainPlanner.Copy.clean(null, 0), pointer.runId(), tail);
    }

    /**
     * Checks every step of {@code chain} before the checkpoint is touched: a backend the host applier
     * knows, full artifacts where a checkpoint is loaded, and every used artifact's size and digest. A
     * delta tail that fails is replaced by its anchor alternative when the board has one.
     */
    private List<VersionStep> verified(BulletinBoard board, Map<Long, Manifest> manifests, ChainPlan.Chain chain,
                                       boolean replayable) throws IOException {
        if (replayable && chain.reason() != null) {
            System.err.println("using the anchor at version " + chain.anchor().orElseThrow().version() + ": " + chain.reason());
        }
        try {
            return verify(board, manifests, chain);
        } catch (IOException | IllegalStateException e) {
            if (chain.fallback().isEmpty()) {
                throw e;
            }
            ChainPlan.Chain viaAnchor = chain.fallback().get();
            System.err.println("using the anchor at version " + viaAnchor.anchor().orElseThrow().version() + ": " + e.getMessage());
            return verify(board, manifests, viaAnchor);
        }
    }

    private List<VersionStep> verify(BulletinBoard board, Map<Long, Manifest> manifests, ChainPlan.Chain chain) throws IOException {
        List<VersionStep> steps = chain.steps();
        for (VersionStep s : steps) {
            if (DeltaFormat.byId(s.backend()).isEmpty()) {
                throw new IllegalStateException("version " + s.version() + " has backend '" + s.backend() + "', which cannot be applied host-side");
            }
            if (s.loadAnchor() && !s.hasFull()) {
                throw new IllegalStateException("version " + s.version() + " is full-only but carries no full artifacts");
            }
            boolean loadFull = s.loadAnchor();
            board.verifyArtifacts(manifests.get(s.version()), a -> loadFull ? a.is(ArtifactKind.FULL) : !a.is(ArtifactKind.FULL),
                requireChecksums);
        }
        return steps;
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
