package dev.stitch.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.board.BoardAddress;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.PublishingBoard;
import dev.stitch.board.PointerMoveException;
import dev.stitch.encode.ValueMode;
import dev.stitch.format.DeltaFormat;
import dev.stitch.format.sparse.SparseEncoding;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.publish.CheckpointWeights;
import dev.stitch.publish.PublishProgress;
import dev.stitch.publish.PublishResult;
import dev.stitch.publish.WeightPublisher;
import dev.stitch.publish.Weights;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code stitch publish}: publishes a full HF checkpoint as the next version of a board, as a delta
 * against the checkpoint the board's latest version holds (docs/protocol/cli-and-config.md §10.1). The zero-code
 * path for trainers that only write full checkpoints.
 */
@Command(name = "publish",
        mixinStandardHelpOptions = true,
        description = {
            "Publish the HF checkpoint NEW_DIR as version latest+1 of the board's run, as a sparse",
            "delta against BASE_DIR (the checkpoint the latest version holds). Without --base, the",
            "checkpoint recorded by the previous 'stitch publish' on this board is used.",
            "An unchanged checkpoint publishes an empty version; a changed tensor set publishes a",
            "full-only version; every --anchor-interval-th version also carries a full checkpoint, and",
            "with --anchor-bytes-fraction F so does a version once the deltas since the last anchor pass F",
            "times its size. --notify wakes the rollout hosts as soon as the pointer moved.",
            "With --backend sparse_delta a version that must be full is refused (upstream v1 consumers",
            "would mark it applied without loading it) unless --allow-full-fallback is given."
        })
public final class PublishCommand implements StitchSubcommand, Runnable {

    /** Manifest metadata key holding the absolute path of the published checkpoint. */
    public static final String SOURCE_CHECKPOINT = "source_checkpoint";

    @Option(names = "--board", required = true, paramLabel = "BOARD",
            description = "The board: a directory (created when missing) or s3://bucket/prefix (the bucket must exist).")
    String boardLocation;

    @picocli.CommandLine.Mixin
    RemoteBoardFlags remote;

    @Option(names = "--checkpoint", required = true, paramLabel = "NEW_DIR",
            description = "The checkpoint to publish: model.safetensors, or shards with model.safetensors.index.json.")
    Path checkpoint;

    @Option(names = "--base", paramLabel = "BASE_DIR",
            description = "The checkpoint the board's latest version holds (for version 1: the served base); "
                    + "refused unless its weights digest equals the latest version's metadata.weights_digest. "
                    + "Default: the source_checkpoint recorded by the previous 'stitch publish' on this board.")
    Path base;

    @Option(names = "--backend", defaultValue = "stitch_delta", paramLabel = "B",
            description = "stitch_delta, sparse_delta, disk_delta or full; falls back to full when B cannot "
                    + "express the version (sparse_delta: only with --allow-full-fallback) (default: ${DEFAULT-VALUE}).")
    String backend;

    @Option(names = "--allow-full-fallback",
            description = "With --backend sparse_delta: publish a version that must be full (a changed tensor set, "
                    + "or a change to NaN) as a full version instead of refusing it. Upstream slime v1 consumers "
                    + "cannot load full versions and would mark it applied without loading anything.")
    boolean allowFullFallback;

    @Option(names = "--values", paramLabel = "MODE",
            description = "Value mode of stitch_delta (and of disk_delta when --encoding is not given): "
                    + "xor or overwrite (default: xor for stitch_delta, overwrite for disk_delta).")
    String values;

    @Option(names = "--encoding", paramLabel = "E",
            description = "sparse_delta: indices, deltas or deltas_zstd (default deltas_zstd); "
                    + "disk_delta: xor or overwrite.")
    String encoding;

    @Option(names = "--run-id", paramLabel = "RUN",
            description = "Run to publish under. Default: the pointer's run. Another run starts at version 1.")
    String runId;

    @Option(names = "--threads", paramLabel = "N",
            description = "Threads for the diff (default: all cores).")
    Integer threads;

    @Option(names = "--anchor-interval", defaultValue = "25", paramLabel = "N",
            description = "Every N-th version also carries a full checkpoint; 0 = never (default: ${DEFAULT-VALUE}).")
    int anchorInterval;

    @Option(names = "--anchor-bytes-fraction", defaultValue = "0", paramLabel = "F",
            description = "Also make a version an anchor once the transition bytes published since the newest anchor "
                    + "would exceed F times that anchor's size, so a late joiner fetches at most (1 + F) anchors' worth; "
                    + "combined with --anchor-interval, whichever comes first; 0 = off (default: ${DEFAULT-VALUE}).")
    double anchorBytesFraction;

    @Option(names = "--notify", split = ",", paramLabel = "URL",
            description = "After publishing, POST a wake to each URL (a sidecar's http://host:port, sent to its "
                    + "/rpc_sync_from_bulletin_board, or a fan-out endpoint's full URL) so rollout hosts look now; "
                    + "best effort: a failed notification is reported, never fails the publish.")
    List<URI> notify;

    @Option(names = "--notify-token-file", paramLabel = "FILE",
            description = "File holding the sidecars' control token, sent as Authorization: Bearer with --notify.")
    Path notifyTokenFile;

    @Option(names = "--notify-timeout-s", defaultValue = "2", paramLabel = "S",
            description = "How long each notification may take (default: ${DEFAULT-VALUE}).")
    double notifyTimeoutS;

    @Option(names = "--keep-last", defaultValue = "0", paramLabel = "N",
            description = "After publishing, run board gc keeping the last N versions; 0 = no gc (default: ${DEFAULT-VALUE}).")
    int keepLast;

    @Option(names = "--json", description = "Print the result as one JSON object on stdout.")
    boolean json;

    public PublishCommand() {
    }

    @Override
    public void run() {
        DeltaFormat first;
        try {
            first = DeltaFormat.parse(backend);
        } catch (IllegalArgumentException e) {
            throw new CliFailure(e.getMessage());
        }
        if (threads != null && threads < 1) {
            throw new CliFailure("--threads must be >= 1, got " + threads);
        }
        if (anchorInterval < 0 || keepLast < 0) {
            throw new CliFailure("--anchor-interval and --keep-last must be >= 0");
        }
        if (!(anchorBytesFraction >= 0) || Double.isInfinite(anchorBytesFraction)) {
            throw new CliFailure("--anchor-bytes-fraction must be a number >= 0, not " + anchorBytesFraction);
        }
        List<URI> notifyUrls = notify == null ? List.of() : notify;
        if (notifyUrls.isEmpty() && notifyTokenFile != null) {
            throw new CliFailure("--notify-token-file needs --notify", 2);
        }
        if (!(notifyTimeoutS > 0) || Double.isInfinite(notifyTimeoutS)) {
            throw new CliFailure("--notify-timeout-s must be positive, not " + notifyTimeoutS, 2);
        }
        Path newDir = checkpoint.toAbsolutePath().normalize();
        if (!Files.isDirectory(newDir)) {
            throw new CliFailure("--checkpoint " + checkpoint + " is not a directory");
        }
        PrintStream progress = System.console() != null ? System.err : null;
        BoardAddress address = RemoteBoardFlags.address(boardLocation);
        try (PublishingBoard board = PublishingBoard.open(address, BoardOptions.defaults(), remote.options(address))) {
            LatestPointer latest = board.readLatest();
            boolean newRun = runId != null && !latest.sameRun(runId);
            String run = runId != null ? runId : latest.runId();
            long version = newRun ? 1 : latest.version() + 1;
            Path baseDir = base != null ? base.toAbsolutePath().normalize() : recordedBase(board, latest, newRun);
            if (!Files.isDirectory(baseDir)) {
                throw new CliFailure("base checkpoint " + baseDir + " is not a directory");
            }

            WeightPublisher.Builder builder = WeightPublisher.builder()
                    .board(board).runId(run)
                    .backends(first == DeltaFormat.FULL ? List.of(DeltaFormat.FULL) : List.of(first, DeltaFormat.FULL))
                    .allowFullFallback(allowFullFallback)
                    .anchorInterval(anchorInterval)
                    .anchorBytesFraction(anchorBytesFraction)
                    .keepLast(keepLast)
                    .recordWeightsDigest(true);
            configureCodecs(builder, first);
            if (!notifyUrls.isEmpty()) {
                builder.notify(notifyUrls, notifyToken()).notifyTimeout(Duration.ofNanos((long) (notifyTimeoutS * 1e9)));
            }
            if (threads != null) {
                builder.threads(threads);
            }
            if (progress != null) {
                builder.progress(new TerminalProgress(progress));
            }
            builder.seedFrom(baseDir);
            try (WeightPublisher publisher = builder.build();
                 Weights next = CheckpointWeights.open(newDir)) {
                if (!newRun) {
                    requireBaseHoldsLatest(board, latest.version(), baseDir, publisher.snapshotDigest());
                }
                PublishResult r = publisher.publish(version, next, Map.of(SOURCE_CHECKPOINT, newDir.toString(),
                        "base_checkpoint", baseDir.toString()));
                print(r, newDir);
            }
        } catch (PointerMoveException e) {
            throw new CliFailure("the board refused the version: " + e.getMessage());
        } catch (NoSuchFileException e) {
            throw new CliFailure("missing file: " + e.getMessage());
        } catch (IOException | IllegalArgumentException e) {
            throw new CliFailure(e.getMessage() == null ? e.toString() : e.getMessage());
        }
    }

    private void configureCodecs(WeightPublisher.Builder builder, DeltaFormat first) {
        try {
            if (first == DeltaFormat.STITCH_DELTA) {
                if (encoding != null) {
                    throw new CliFailure("--encoding applies to sparse_delta and disk_delta; stitch_delta takes --values");
                }
                builder.values(values == null ? ValueMode.XOR : ValueMode.parse(values));
            } else if (first == DeltaFormat.SPARSE_DELTA) {
                if (values != null) {
                    throw new CliFailure("--values applies to stitch_delta and disk_delta; sparse_delta takes --encoding");
                }
                builder.sparseEncoding(encoding == null ? SparseEncoding.DELTAS_ZSTD : SparseEncoding.parse(encoding));
            } else if (first == DeltaFormat.DISK_DELTA) {
                if (encoding != null && values != null && !encoding.equalsIgnoreCase(values)) {
                    throw new CliFailure("--encoding " + encoding + " and --values " + values + " disagree");
                }
                String mode = encoding != null ? encoding : values;
                builder.diskEncoding(mode == null ? ValueMode.OVERWRITE : ValueMode.parse(mode));
            } else if (encoding != null || values != null) {
                throw new CliFailure("--encoding and --values do not apply to full versions");
            }
        } catch (IllegalArgumentException e) {
            throw new CliFailure(e.getMessage());
        }
    }

    private String notifyToken() {
        if (notifyTokenFile == null) {
            return null;
        }
        try {
            String token = Files.readString(notifyTokenFile, StandardCharsets.UTF_8).strip();
            if (token.isEmpty()) {
                throw new CliFailure("--notify-token-file " + notifyTokenFile + " is empty");
            }
            return token;
        } catch (IOException e) {
            throw new CliFailure("cannot read --notify-token-file " + notifyTokenFile + ": " + e.getMessage());
        }
    }

    /**
     * The delta of version N+1 is computed against BASE_DIR and declares {@code base_version} N, so
     * BASE_DIR must hold exactly version N's weights or every replica would apply a wrong-base delta
     * (sync-and-engines.md 6.5): when N's manifest records {@code metadata.weights_digest} the digests must
     * match; when it records none, BASE_DIR must be the checkpoint N was published from. Version 1 builds
     * on the served base, which the board does not describe, so it is not checked.
     */
    private static void requireBaseHoldsLatest(PublishingBoard board, long latestVersion, Path baseDir,
                                               String baseDigest) throws IOException {
        if (latestVersion == 0) {
            return;
        }
        JsonNode metadata = board.readManifest(latestVersion).metadata();
        JsonNode recorded = metadata == null ? null : metadata.get("weights_digest");
        if (recorded != null && recorded.isTextual()) {
            if (!recorded.textValue().equals(baseDigest)) {
                throw new CliFailure("--base " + baseDir + " holds weights " + baseDigest + " but version "
                        + latestVersion + ", the board's latest, holds " + recorded.textValue()
                        + "; a delta against it would not apply: pass the checkpoint version " + latestVersion
                        + " was published from");
            }
            return;
        }
        JsonNode source = metadata == null ? null : metadata.get(SOURCE_CHECKPOINT);
        if (source == null || !source.isTextual() || !Path.of(source.textValue()).equals(baseDir)) {
            throw new CliFailure("version " + latestVersion + ", the board's latest, records no metadata.weights_digest,"
                    + " so --base " + baseDir + " cannot be checked against it; pass the checkpoint it was published from"
                    + (source != null && source.isTextual() ? " (" + source.textValue() + ")" : ""));
        }
    }

    /** The checkpoint the previous {@code stitch publish} recorded in the latest manifest of this run. */
    private static Path recordedBase(PublishingBoard board, LatestPointer latest, boolean newRun) throws IOException {
        String ask = "pass --base BASE_DIR (the checkpoint the board's latest version holds; for version 1, the served base)";
        if (newRun || latest.version() == 0) {
            throw new CliFailure("no previous version to take the base from: " + ask);
        }
        Manifest m = board.readManifest(latest.version());
        JsonNode src = m.metadata() == null ? null : m.metadata().get(SOURCE_CHECKPOINT);
        if (src == null || !src.isTextual() || src.textValue().isEmpty()) {
            throw new CliFailure("version " + latest.version() + " was not published by 'stitch publish' (no metadata."
                    + SOURCE_CHECKPOINT + "): " + ask);
        }
        Path p = Path.of(src.textValue());
        if (!p.isAbsolute()) {
            throw new CliFailure("metadata." + SOURCE_CHECKPOINT + " of version " + latest.version() + " is not absolute: " + ask);
        }
        return p;
    }

    private void print(PublishResult r, Path newDir) {
        if (json) {
            ObjectNode o = JsonNodeFactory.instance.objectNode();
            o.put("version", r.version());
            o.put("run_id", r.runId());
            o.put("backend", r.backend());
            o.put("encoding", r.encoding());
            o.put("value_mode", r.valueMode());
            o.put("anchor", r.anchor());
            o.put("density", r.density());
            o.put("changed_elements", r.changedElements());
            o.put("total_elements", r.totalElements());
            o.put("changed_tensors", r.changedTensors());
            o.put("bytes_written", r.bytesWritten());
            o.put("files", r.files());
            o.put("publish_s", r.timings().publishSeconds());
            o.put("fallback_reason", r.fallbackReason());
            o.put(SOURCE_CHECKPOINT, newDir.toString());
            o.put("notified", r.notifications().delivered());
            o.put("notify_failed", r.notifications().failed());
            com.fasterxml.jackson.databind.node.ArrayNode failures = o.putArray("notify_failures");
            r.notifications().failures().forEach(failures::add);
            System.out.println(o.toString());
            return;
        }
        List<String> parts = new ArrayList<>();
        parts.add(r.backend() + (r.valueMode() != null ? " " + r.valueMode()
                : r.encoding() != null ? " " + r.encoding() : ""));
        if (r.anchor() && !DeltaFormat.isFullOnly(r.backend())) {
            parts.add("anchor");
        }
        parts.add(String.format(Locale.ROOT, "%d of %d elements changed (%.4f%%) in %d tensors", r.changedElements(),
                r.totalElements(), 100 * r.density(), r.changedTensors()));
        parts.add(bytes(r.bytesWritten()) + " in " + r.files() + (r.files() == 1 ? " file" : " files"));
        parts.add(String.format(Locale.ROOT, "%.3f s", r.timings().publishSeconds()));
        System.out.println("published version " + r.version()
                + (r.runId() != null ? " (run '" + r.runId() + "')" : "") + ": " + String.join(", ", parts));
        if (r.fallbackReason() != null) {
            System.out.println("fell back: " + r.fallbackReason());
        }
        PublishResult.Notifications n = r.notifications();
        if (n.delivered() + n.failed() > 0) {
            System.out.println("notified " + n.delivered() + " of " + (n.delivered() + n.failed()) + " rollout hosts"
                    + (n.failed() == 0 ? "" : "; failed: " + String.join("; ", n.failures())));
        }
    }

    /** One status line on a terminal, rewritten at most every 200 ms: phase, bytes, bytes/s and ETA. */
    private static final class TerminalProgress implements PublishProgress {
        private final PrintStream out;
        private String phase = "";
        private long phaseStart;
        private long lastPrint;

        TerminalProgress(PrintStream out) {
            this.out = out;
        }

        @Override
        public synchronized void report(long version, String p, long done, long total) {
            long now = System.nanoTime();
            boolean newPhase = !p.equals(phase);
            if (newPhase) {
                if (!phase.isEmpty()) {
                    out.print("\n");
                }
                phase = p;
                phaseStart = now;
            } else if (now - lastPrint < 200_000_000L && done < total) {
                return;
            }
            lastPrint = now;
            if (p.equals("done")) {
                out.flush();
                return;
            }
            if (p.equals("commit")) {
                out.printf(Locale.ROOT, "\rstitch publish: manifest and pointer of version %d%s", version, done == total ? ", done" : "");
                out.flush();
                return;
            }
            double s = Math.max((now - phaseStart) / 1e9, 1e-9);
            double rate = done / s;
            String eta = rate > 0 && done < total ? String.format(Locale.ROOT, ", ETA %.0f s", (total - done) / rate) : "";
            String what = p.equals("seed") ? "reading the base checkpoint" : p + " of version " + version;
            out.printf(Locale.ROOT, "\rstitch publish: %s: %s of %s (%.0f%%), %s/s%s   ", what, bytes(done), bytes(total),
                    total == 0 ? 100.0 : 100.0 * done / total, bytes((long) rate), eta);
            out.flush();
        }
    }

    private static String bytes(long n) {
        if (n < 1024) {
            return n + " B";
        }
        String[] units = {"KiB", "MiB", "GiB", "TiB"};
        double v = n;
        int u = -1;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return String.format(Locale.ROOT, "%.2f %s", v, units[u]);
    }
}
