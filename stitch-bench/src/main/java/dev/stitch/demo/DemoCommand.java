package dev.stitch.demo;

import dev.stitch.cli.ByteSize;

import dev.stitch.cli.CliFailure;
import dev.stitch.cli.StitchSubcommand;
import dev.stitch.format.DeltaFormat;
import dev.stitch.rehearsal.TrainerStep;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code stitch demo}: the whole loop on one machine. A trainer makes sparse updates to a synthetic
 * bf16 model and publishes each step through the {@code WeightPublisher} to a bulletin board in a
 * temporary directory; a sidecar in front of a reference engine follows the board; rollout clients
 * send pinned and bounded-staleness requests throughout and check every response's weights digest
 * against the trainer's. Exit status 1 when any response was mislabeled or the final digests differ.
 */
@Command(name = "demo",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Runs trainer -> bulletin board -> sidecar -> reference engine on this machine, with rollout "
                + "clients sending exact_version and min_required_version requests while versions advance, "
                + "and prints a summary. Fails (exit 1) if any response was served by weights other than "
                + "those of its stamped version, or if trainer and engine end on different weights."
        })
public final class DemoCommand implements StitchSubcommand, Callable<Integer> {
    private static final String LOG_LEVEL = "org.slf4j.simpleLogger.defaultLogLevel";

    @Option(names = "--size", defaultValue = "256m", converter = ByteSize.class,
            description = "Model size in bytes of bf16 weights (k/m/g suffixes; default ${DEFAULT-VALUE}).")
    long size;

    @Option(names = "--density", defaultValue = "0.03",
            description = "Fraction of elements each training step changes (default ${DEFAULT-VALUE}).")
    double density;

    @Option(names = "--pattern", defaultValue = "clustered",
            description = "Where a step's changes sit: clustered (contiguous runs) or uniform (default ${DEFAULT-VALUE}).")
    String pattern;

    @Option(names = "--versions", defaultValue = "8",
            description = "Number of versions to publish (default ${DEFAULT-VALUE}).")
    int versions;

    @Option(names = "--mode", defaultValue = "host",
            description = "Sidecar engine mode: host (the sidecar applies deltas to a local checkpoint copy, then one "
                    + "reload) or engine (the engine applies slime v1 sparse_delta files itself) (default ${DEFAULT-VALUE}).")
    String mode;

    @Option(names = "--backend",
            description = "Delta backend the trainer publishes: stitch_delta, disk_delta, sparse_delta or full "
                    + "(default: stitch_delta in host mode, sparse_delta in engine mode).")
    String backend;

    @Option(names = "--commit-mode", defaultValue = "quiesce",
            description = "How the sidecar commits a version: quiesce (drain, then reload) or in_place (default ${DEFAULT-VALUE}).")
    String commitMode;

    @Option(names = "--clients", defaultValue = "4",
            description = "Concurrent rollout clients; half pin exact_version, half use min_required_version (default ${DEFAULT-VALUE}).")
    int clients;

    @Option(names = "--staleness", defaultValue = "1",
            description = "Bound of the min_required_version clients: newest published minus this (default ${DEFAULT-VALUE}).")
    long staleness;

    @Option(names = "--interval-ms", defaultValue = "400",
            description = "Least time between two publishes, so every version serves traffic (default ${DEFAULT-VALUE}).")
    long intervalMs;

    @Option(names = "--token-latency-ms", defaultValue = "1",
            description = "Reference engine latency per generated token (default ${DEFAULT-VALUE}).")
    double tokenLatencyMs;

    @Option(names = "--max-new-tokens", defaultValue = "8",
            description = "Tokens each rollout request generates (default ${DEFAULT-VALUE}).")
    int maxNewTokens;

    @Option(names = "--engine", defaultValue = "in-process",
            description = "Where the reference engine runs: in-process, or child (a separate JVM running "
                    + "'stitch ref-engine', as SGLang would be) (default ${DEFAULT-VALUE}).")
    String engine;

    @Option(names = "--threads", defaultValue = "2",
            description = "Encoder threads of the publisher (default ${DEFAULT-VALUE}).")
    int threads;

    @Option(names = "--seed", defaultValue = "42",
            description = "Seed of the synthetic weights and of the training steps (default ${DEFAULT-VALUE}).")
    long seed;

    @Option(names = "--work-dir",
            description = "Directory for the board and checkpoints (default: a new temporary directory).")
    Path workDir;

    @Option(names = "--keep",
            description = "Keep the board and checkpoints after the run (their location is printed).")
    boolean keep;

    @Option(names = "--verbose",
            description = "Also show the sidecar's and engine's log lines (plan, stage, commit of every sync pass).")
    boolean verbose;

    @Option(names = "--json", paramLabel = "FILE",
            description = "Also write the summary object to FILE (versions, requests, mislabeled, digest_match, "
                    + "bytes_per_version, full_bytes, and more).")
    Path json;

    public DemoCommand() {
    }

    @Override
    public Integer call() throws IOException, InterruptedException {
        DemoRun.Options options = options();
        if (!verbose && System.getProperty(LOG_LEVEL) == null) {
            // The components log every sync pass at INFO; the demo's own table already says what happened.
            System.setProperty(LOG_LEVEL, "warn");
        }
        PrintStream out = System.out;
        DemoSummary summary = new DemoRun(options, out).run();
        summary.print(out);
        if (json != null) {
            summary.writeJson(json);
            out.println("summary written to " + json);
        }
        return summary.passed() ? 0 : 1;
    }

    DemoRun.Options options() {
        if (versions < 1) {
            throw new CliFailure("--versions must be at least 1, got " + versions);
        }
        if (!(density > 0 && density <= 1)) {
            throw new CliFailure("--density must be a fraction in (0, 1], got " + density);
        }
        if (clients < 1) {
            throw new CliFailure("--clients must be at least 1, got " + clients);
        }
        if (size < (1L << 20)) {
            throw new CliFailure("--size must be at least 1m, got " + size + " bytes");
        }
        if (staleness < 0 || intervalMs < 0 || tokenLatencyMs < 0 || maxNewTokens < 1 || threads < 1) {
            throw new CliFailure("--staleness, --interval-ms and --token-latency-ms must be >= 0; --max-new-tokens and --threads >= 1");
        }
        TrainerStep.Pattern p;
        try {
            p = TrainerStep.Pattern.parse(pattern);
        } catch (IllegalArgumentException e) {
            throw new CliFailure("--pattern must be clustered or uniform, got '" + pattern + "'");
        }
        String m = mode.toLowerCase(Locale.ROOT);
        if (!m.equals("host") && !m.equals("engine")) {
            throw new CliFailure("--mode must be host or engine, got '" + mode + "'");
        }
        DeltaFormat format;
        try {
            format = backend == null ? (m.equals("host") ? DeltaFormat.STITCH_DELTA : DeltaFormat.SPARSE_DELTA)
                    : DeltaFormat.parse(backend);
        } catch (IllegalArgumentException ex) {
            throw new CliFailure("--backend must be stitch_delta, disk_delta, sparse_delta or full, got '" + backend + "'");
        }
        String b = format.id();
        if (m.equals("engine") && !(format == DeltaFormat.SPARSE_DELTA || format == DeltaFormat.FULL)) {
            throw new CliFailure("engine mode applies sparse_delta (or full) versions only; --backend " + b + " needs --mode host");
        }
        String c = commitMode.toLowerCase(Locale.ROOT);
        if (!c.equals("quiesce") && !c.equals("in_place")) {
            throw new CliFailure("--commit-mode must be quiesce or in_place, got '" + commitMode + "'");
        }
        String e = engine.toLowerCase(Locale.ROOT);
        if (!e.equals("in-process") && !e.equals("child")) {
            throw new CliFailure("--engine must be in-process or child, got '" + engine + "'");
        }
        int pinned = (clients + 1) / 2;
        return new DemoRun.Options(size, density, p, versions, m, b, c, pinned, clients - pinned, staleness,
                intervalMs, tokenLatencyMs, maxNewTokens, threads, seed, workDir, keep, e.equals("child"));
    }
}
