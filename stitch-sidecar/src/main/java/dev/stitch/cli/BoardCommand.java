package dev.stitch.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.board.ArtifactVerificationException;
import dev.stitch.board.BoardAddress;
import dev.stitch.board.PublishingBoard;
import dev.stitch.board.RemoteBulletinBoard;
import dev.stitch.board.BoardLayout;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.BulletinBoard;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.board.GcReport;
import dev.stitch.board.VerificationReport;
import dev.stitch.protocol.CanonicalJson;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.board.VersionNotArrivedException;
import dev.stitch.protocol.ProtocolException;
import dev.stitch.protocol.SlimeIndex;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code stitch board}: create, inspect, verify, repair and garbage-collect a bulletin board (docs/protocol/cli-and-config.md §10.1). */
@Command(name = "board",
        mixinStandardHelpOptions = true,
        description = "Create, inspect, verify, repair and garbage-collect a bulletin board (the shared directory of "
                + "published weight versions).",
        subcommands = {BoardCommand.Init.class, BoardCommand.Show.class, BoardCommand.Verify.class, BoardRepairCommand.class,
            BoardCommand.Gc.class})
public final class BoardCommand implements StitchSubcommand, Runnable {

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "missing subcommand: init, show, verify, repair or gc");
    }

    /** Options shared by the reading subcommands (a picocli mixin). */
    static final class ReadOptions {
        @Option(names = {"--board", "--root"}, required = true, paramLabel = "BOARD",
                description = "The board: a directory (or file: URI), s3://bucket/prefix, or an http(s):// prefix.")
        String board;

        @picocli.CommandLine.Mixin
        RemoteBoardFlags remote;

        @Option(names = "--layout", defaultValue = "stitch", paramLabel = "LAYOUT",
                description = "Board layout: stitch (latest.json + versions/), slime or head (upstream text pointer "
                        + "'latest', read-only). Default: ${DEFAULT-VALUE}.")
        String layout;

        BulletinBoard open() {
            BoardLayout l;
            try {
                l = BoardLayout.parse(layout);
            } catch (IllegalArgumentException e) {
                throw new CliFailure(e.getMessage(), 2);
            }
            BoardAddress address = RemoteBoardFlags.address(board);
            if (!address.isRemote() && !Files.isDirectory(address.path())) {
                throw new CliFailure(address + ": no such board directory");
            }
            try {
                return BulletinBoard.open(address, l, BoardOptions.defaults(), remote.options(address));
            } catch (IllegalArgumentException e) {
                throw new CliFailure(e.getMessage(), 2);
            } catch (IOException e) {
                throw new CliFailure(address + ": " + e.getMessage());
            }
        }
    }

    @Command(name = "init", mixinStandardHelpOptions = true,
            description = "Create DIR/versions/ and latest.json at version 0 (with the run id, as a claim, when given). "
                    + "An existing board is left unchanged.")
    static final class Init implements Runnable {
        @Option(names = {"--board", "--root"}, required = true, paramLabel = "BOARD",
                description = "The board: a directory (created if missing) or s3://bucket/prefix (the bucket must exist).")
        String board;

        @picocli.CommandLine.Mixin
        RemoteBoardFlags remote;

        @Option(names = "--run-id", paramLabel = "RUN",
                description = "The run that owns the board ([A-Za-z0-9][A-Za-z0-9._-]{0,127}); omit for a run-less board.")
        String runId;

        @Override
        public void run() {
            BoardAddress address = RemoteBoardFlags.address(board);
            try (PublishingBoard opened = PublishingBoard.open(address, BoardOptions.defaults(), remote.options(address))) {
                boolean existed = !opened.readLatest().equals(LatestPointer.EMPTY)
                        || (!address.isRemote() && Files.exists(address.path().resolve(LatestPointer.FILE_NAME)));
                PublishingBoard created = PublishingBoard.create(address, runId, BoardOptions.defaults(), remote.options(address));
                LatestPointer p = created.readLatest();
                created.close();
                PrintStream out = System.out;
                if (existed) {
                    out.println("board " + address + " already exists (left unchanged): " + describe(p));
                } else {
                    out.println("created board " + address + ": " + describe(p));
                }
            } catch (IllegalArgumentException e) {
                throw new CliFailure(e.getMessage(), 2);
            } catch (IOException e) {
                throw new CliFailure(address + ": " + e.getMessage());
            }
        }
    }

    @Command(name = "show", mixinStandardHelpOptions = true,
            description = "Print the pointer and a summary of every version 1..latest whose directory exists; versions "
                    + "without one are summarised as ranges. With --json, one JSON object: "
                    + "{\"latest\": {\"run_id\", \"version\", and \"error\" when its manifest_checksum fails}, \"versions\": [{\"version\", \"base_version\", \"backend\", "
                    + "\"run_id\", \"anchor\", \"files\", \"created_at\"} or {\"version\", \"error\"}, ...], and, when "
                    + "some are missing, \"missing\": [{\"from\", \"to\"}, ...]}.")
    static final class Show implements Runnable {
        @picocli.CommandLine.Mixin
        ReadOptions read;

        @Option(names = "--json", description = "Print one JSON object on stdout instead of the table.")
        boolean json;

        @Override
        public void run() {
            BulletinBoard board = read.open();
            LatestPointer p;
            String pointerProblem = null;
            try {
                try {
                    p = board.readLatest();
                } catch (ProtocolException e) {
                    if (!(board instanceof FilesystemBulletinBoard fs)) {
                        throw e;
                    }
                    // A bad latest manifest fails the pointer's manifest_checksum check; show the board anyway.
                    pointerProblem = e.getMessage();
                    p = fs.readLatestUnchecked();
                }
            } catch (IOException e) {
                throw new CliFailure("cannot read the pointer of " + name(board) + ": " + e.getMessage());
            }
            JsonNodeFactory f = JsonNodeFactory.instance;
            ObjectNode doc = f.objectNode();
            ObjectNode latest = doc.putObject("latest");
            latest.put("run_id", p.runId());
            latest.put("version", p.version());
            if (pointerProblem != null) {
                latest.put("error", pointerProblem);
            }
            ArrayNode versions = doc.putArray("versions");
            PrintStream out = System.out;
            if (!json) {
                out.println("board " + name(board) + " (" + board.layout().label() + " layout): latest " + describe(p));
                if (pointerProblem != null) {
                    out.println("pointer error: " + pointerProblem + " (see 'stitch board repair')");
                }
                if (p.version() > 0) {
                    out.printf(Locale.ROOT, "%9s %9s %-13s %-16s %6s %5s  %s%n", "version", "base", "backend", "run", "anchor",
                            "files", "created_at");
                }
            }
            VersionDirectoryListing listing;
            try {
                listing = VersionDirectoryListing.of(board);
            } catch (IOException e) {
                throw new CliFailure("cannot list the versions of " + name(board) + ": " + e.getMessage());
            }
            List<VersionDirectoryListing.Gap> gaps = listing.gapsIn(1, p.version());
            if (!gaps.isEmpty()) {
                ArrayNode missing = doc.putArray("missing");
                gaps.forEach(g -> missing.addObject().put("from", g.from()).put("to", g.to()));
            }
            int nextGap = 0;
            for (long v : listing.presentIn(1, p.version())) {
                while (!json && nextGap < gaps.size() && gaps.get(nextGap).from() < v) {
                    out.printf(Locale.ROOT, "%9s  %s missing (never published, or deleted by gc)%n", "", gaps.get(nextGap++).describe());
                }
                ObjectNode row = versions.addObject();
                row.put("version", v);
                try {
                    Manifest m = board.readManifest(v);
                    row.put("base_version", m.baseVersion());
                    row.put("backend", m.backend());
                    row.put("run_id", m.runId());
                    row.put("anchor", m.isAnchor());
                    row.put("files", m.artifacts().size());
                    row.put("created_at", m.createdAt());
                    if (!json) {
                        out.printf(Locale.ROOT, "%9d %9d %-13s %-16s %6s %5d  %s%n", v, m.baseVersion(), m.backend(),
                                m.runId() == null ? "-" : m.runId(), m.isAnchor() ? "yes" : "no", m.artifacts().size(),
                                CanonicalJson.formatDouble(m.createdAt()));
                    }
                } catch (IOException e) {
                    String reason = versionError(board, v, e);
                    row.put("error", reason);
                    if (!json) {
                        out.printf(Locale.ROOT, "%9d  error: %s%n", v, reason);
                    }
                }
            }
            if (json) {
                out.println(CanonicalJson.toText(doc));
                return;
            }
            while (nextGap < gaps.size()) {
                out.printf(Locale.ROOT, "%9s  %s missing (never published, or deleted by gc)%n", "", gaps.get(nextGap++).describe());
            }
            if (board instanceof PublishingBoard fs && (!(board instanceof RemoteBulletinBoard r) || r.store().writable())) {
                try {
                    List<String> leftovers = fs.leftovers();
                    if (!leftovers.isEmpty()) {
                        out.println("leftovers of interrupted publishes (removed by 'stitch board gc' after the grace period):");
                        leftovers.forEach(l -> out.println("  " + l));
                    }
                } catch (IOException e) {
                    out.println("cannot list leftovers: " + e.getMessage());
                }
            }
        }
    }

    @Command(name = "verify", mixinStandardHelpOptions = true,
            description = "Check every version from N (default: the newest anchor at or below latest, else 1) to latest: "
                    + "manifest validity, chain contiguity (base_version), and presence, size and digest of every listed "
                    + "artifact. Exits non-zero naming the first bad file (relative to the root) and what is wrong.")
    static final class Verify implements Runnable {
        @picocli.CommandLine.Mixin
        ReadOptions read;

        @Option(names = "--from", paramLabel = "N", description = "First version to check (default: newest anchor <= latest, else 1).")
        Long from;

        @Option(names = "--require-checksums",
                description = "Fail on artifacts without size_bytes/checksum (upstream boards) instead of reporting them as unverified.")
        boolean requireChecksums;

        @Override
        public void run() {
            BulletinBoard board = read.open();
            LatestPointer p;
            ProtocolException pointerProblem = null;
            try {
                try {
                    p = board.readLatest();
                } catch (ProtocolException e) {
                    if (!(board instanceof FilesystemBulletinBoard fs)) {
                        throw e;
                    }
                    // Find the bad manifest first, so the message names it rather than the pointer.
                    pointerProblem = e;
                    p = fs.readLatestUnchecked();
                }
            } catch (IOException e) {
                throw new CliFailure(pointerFile(board) + ": " + e.getMessage());
            }
            if (from != null && (from < 1 || from > Math.max(1, p.version()))) {
                throw new CliFailure("--from " + from + " is outside 1.." + p.version(), 2);
            }
            long start;
            try {
                OptionalLong anchor = board.newestAnchorAtOrBelow(p.version());
                start = from != null ? from : anchor.orElse(1);
            } catch (IOException e) {
                throw new CliFailure(pointerFile(board) + ": " + e.getMessage());
            }
            VerificationReport total = VerificationReport.EMPTY;
            boolean tty = System.console() != null;
            for (long v = start; v <= p.version(); v++) {
                Manifest m;
                try {
                    m = board.readManifest(v, p);
                } catch (NoSuchFileException e) {
                    throw new CliFailure(versionError(board, v, e) + missingRange(board, v, p.version()));
                } catch (IOException e) {
                    throw new CliFailure(versionError(board, v, e));
                }
                if (m.baseVersion() != v - 1) {
                    throw new CliFailure(manifestFile(board, v) + ": base_version " + m.baseVersion()
                            + " breaks the chain (expected " + (v - 1) + ")");
                }
                try {
                    total = total.plus(board.verifyArtifacts(m, requireChecksums));
                } catch (ArtifactVerificationException e) {
                    throw new CliFailure(e.file() + ": " + e.problem());
                } catch (IOException e) {
                    throw new CliFailure(manifestFile(board, v) + ": cannot verify artifacts: " + e.getMessage());
                }
                if (tty) {
                    System.err.printf(Locale.ROOT, "\rverified version %d of %d", v, p.version());
                }
            }
            if (tty && p.version() >= start) {
                System.err.println();
            }
            if (pointerProblem != null) {
                throw new CliFailure(pointerProblem.getMessage());
            }
            PrintStream out = System.out;
            if (p.version() == 0) {
                out.println("board " + name(board) + " is at version 0 (" + describe(p) + "): nothing to verify");
                return;
            }
            out.printf(Locale.ROOT, "ok: versions %d..%d of %s: %d artifacts verified (%d bytes), %d unverified (no size/checksum)%n",
                    start, p.version(), describe(p), total.artifactsVerified(), total.bytesVerified(), total.unverified());
        }
    }

    @Command(name = "gc", mixinStandardHelpOptions = true,
            description = "Retention: delete versions older than the newest anchor at or below latest, keeping the last N "
                    + "versions and anything younger than --min-age-s; also removes archives and the leftovers of crashed "
                    + "writers (see --leftover-age), and breaks and removes a stale lock. Without an anchor no version is deleted.")
    static final class Gc implements Runnable {
        @Option(names = {"--board", "--root"}, required = true, paramLabel = "BOARD",
                description = "The board: a directory or s3://bucket/prefix (an HTTP board is collected where it is stored).")
        String board;

        @picocli.CommandLine.Mixin
        RemoteBoardFlags remote;

        @Option(names = "--keep", required = true, paramLabel = "N", description = "Always keep the newest N versions.")
        int keep;

        @Option(names = "--min-age-s", defaultValue = "600", paramLabel = "S",
                description = "Only delete versions created more than S seconds ago (default: ${DEFAULT-VALUE}).")
        long minAgeSeconds;

        @Option(names = "--leftover-age", defaultValue = "1h", paramLabel = "DURATION", converter = DurationConverter.class,
                description = "Remove crash leftovers older than DURATION: staging and orphan directories, versions above "
                        + "latest, temporary files (also inside published versions), broken lock files, versions moved aside "
                        + "by 'board repair'. A number with a unit: ms, s, m, h or d (e.g. 90s, 10m). Keep it longer than the "
                        + "longest publish. Default: ${DEFAULT-VALUE} (orphan_grace_s).")
        Duration leftoverAge;

        @Override
        public void run() {
            if (keep < 0 || minAgeSeconds < 0) {
                throw new CliFailure("--keep and --min-age-s must be non-negative", 2);
            }
            BoardAddress address = RemoteBoardFlags.address(board);
            if (!address.isRemote() && !Files.isDirectory(address.path())) {
                throw new CliFailure(address + ": no such board directory");
            }
            try (PublishingBoard opened = PublishingBoard.open(address, BoardOptions.defaults().withOrphanGrace(leftoverAge),
                    remote.options(address))) {
                GcReport r = opened.gc(keep, minAgeSeconds);
                PrintStream out = System.out;
                out.println("newest anchor: " + (r.anchor() == 0 ? "none (the base)" : "version " + r.anchor()));
                out.println("deleted versions: " + (r.deletedVersions().isEmpty() ? "none" : compact(r.deletedVersions())));
                for (String p : r.removedPaths()) {
                    out.println("removed " + p);
                }
            } catch (IOException e) {
                throw new CliFailure(address + ": " + e.getMessage());
            }
        }
    }

    /** The board as the user named it: its URI for a remote board, else its root. */
    static String name(BulletinBoard board) {
        return board instanceof RemoteBulletinBoard r ? r.address().toString() : board.root().toString();
    }

    static String describe(LatestPointer p) {
        return (p.runId() == null ? "no run" : "run '" + p.runId() + "'") + ", version " + p.version();
    }

    private static String pointerFile(BulletinBoard board) {
        return board.layout() == BoardLayout.STITCH ? LatestPointer.FILE_NAME : "latest";
    }

    private static String manifestFile(BulletinBoard board, long v) {
        String name = board.layout() == BoardLayout.STITCH ? Manifest.FILE_NAME : SlimeIndex.FILE_NAME;
        return relative(board.root(), board.versionDirectory(v).resolve(name));
    }

    /** One line: which manifest is bad and why. */
    static String versionError(BulletinBoard board, long v, IOException e) {
        if (e instanceof VersionNotArrivedException) {
            return e.getMessage();
        }
        if (e instanceof NoSuchFileException) {
            return manifestFile(board, v) + ": is missing (never published, or deleted by gc)";
        }
        String msg = e.getMessage() == null ? e.toString() : e.getMessage();
        String file = manifestFile(board, v);
        return msg.startsWith(file) || msg.contains(file + ":") ? msg : file + ": " + msg;
    }

    /** {@code "; versions 3..N are missing"} when {@code v} starts a run of versions without a directory. */
    private static String missingRange(BulletinBoard board, long v, long latest) {
        try {
            VersionDirectoryListing.Gap gap = VersionDirectoryListing.of(board).gapAt(v, latest);
            return gap == null || gap.from() == gap.to() ? "" : "; " + gap.describe() + " are missing";
        } catch (IOException e) {
            return "";
        }
    }

    private static String relative(Path root, Path file) {
        Path r = root.toAbsolutePath().normalize();
        Path f = file.toAbsolutePath().normalize();
        return f.startsWith(r) ? r.relativize(f).toString() : f.toString();
    }

    private static String compact(List<Long> versions) {
        StringBuilder sb = new StringBuilder();
        int i = 0;
        while (i < versions.size()) {
            int j = i;
            while (j + 1 < versions.size() && versions.get(j + 1) == versions.get(j) + 1) {
                j++;
            }
            if (sb.length() > 0) {
                sb.append(", ");
            }
            sb.append(versions.get(i));
            if (j > i) {
                sb.append("..").append(versions.get(j));
            }
            i = j + 1;
        }
        return sb.toString();
    }
}
