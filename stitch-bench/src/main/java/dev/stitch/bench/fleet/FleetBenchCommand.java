package dev.stitch.bench.fleet;

import dev.stitch.bench.BenchResults;
import dev.stitch.bench.BenchSubcommand;
import dev.stitch.bench.ScratchDirectories;
import dev.stitch.cli.ByteSize;
import dev.stitch.cli.CliFailure;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code stitch bench fleet}: the two-datacenter rehearsal (docs/benchmarks.md). A trainer and an S3
 * board (s3proxy) in datacenter A, N sidecars with reference engines in datacenter B, behind the
 * nginx cache tier or not, joined by a limited link; reports link bytes per version against one copy,
 * propagation to the first and last host, late joiners, and pinned-request latency, 409s and
 * mislabeled answers.
 */
@Command(name = "fleet", mixinStandardHelpOptions = true,
        description = {"Two-datacenter rehearsal: trainer + S3 board (s3proxy) in datacenter A; an nginx cache (or none) "
                + "and N sidecars with reference engines in datacenter B; a limited link between them.",
            "The link is a Linux network namespace + veth + tc tbf each way when run as root (no added latency: netem is not "
                + "available), else a throttled loopback relay; the output says which. Reports, per cache mode, link bytes "
                + "per version / one copy (link_bytes_ratio), time from the pointer move to the first and last host serving it, "
                + "late joiners' time and link bytes / their own fetched bytes, pinned-request p50/p99, 409s and mislabeled "
                + "answers (must be 0)."})
public final class FleetBenchCommand implements BenchSubcommand, Runnable {

    @Option(names = "--hosts", defaultValue = "8", paramLabel = "N", description = "Rollout hosts (default ${DEFAULT-VALUE}).")
    int hosts;

    @Option(names = "--versions", defaultValue = "5", paramLabel = "K", description = "Versions to publish (default ${DEFAULT-VALUE}).")
    int versions;

    @Option(names = "--link-mbps", defaultValue = "200", paramLabel = "MBPS", description = "Link rate each way (default ${DEFAULT-VALUE}).")
    double linkMbps;

    @Option(names = "--cache", defaultValue = "both", paramLabel = "MODE",
            description = "nginx, none, or both (one run each, default ${DEFAULT-VALUE}).")
    String cache;

    @Option(names = "--late-joiners", defaultValue = "1", paramLabel = "J",
            description = "Hosts started after the last version, from nothing (default ${DEFAULT-VALUE}).")
    int lateJoiners;

    @Option(names = "--model-size", defaultValue = "256m", paramLabel = "SIZE", converter = ByteSize.class,
            description = "Synthetic bf16 model size (default ${DEFAULT-VALUE}).")
    long modelSize;

    @Option(names = "--density", defaultValue = "0.03", paramLabel = "D", description = "Changed fraction per version (default ${DEFAULT-VALUE}).")
    double density;

    @Option(names = "--anchor-interval", defaultValue = "4", paramLabel = "A",
            description = "Every A-th version carries a full anchor, so late joiners start from it (default ${DEFAULT-VALUE}).")
    int anchorInterval;

    @Option(names = "--poll-interval-s", defaultValue = "5", paramLabel = "S",
            description = "Sidecars' board poll period; with the wake it is only the fallback (default ${DEFAULT-VALUE}).")
    double pollIntervalS;

    @Option(names = "--mode", defaultValue = "engine", paramLabel = "MODE",
            description = "engine: the engines apply sparse_delta files from the sidecars' caches (SGLang with slime's "
                    + "receiver); host: the sidecars apply stitch_delta to local checkpoint copies and the engines reload "
                    + "(default ${DEFAULT-VALUE}).")
    String mode;

    @Option(names = "--wake", defaultValue = "true", negatable = true, fallbackValue = "true",
            description = "The trainer wakes every sidecar after each publish instead of waiting for its next poll "
                    + "(--no-wake to measure polling alone; default ${DEFAULT-VALUE}).")
    boolean wake;

    @Option(names = "--link", defaultValue = "auto", paramLabel = "KIND", description = "netns, relay or auto (default ${DEFAULT-VALUE}).")
    String link;

    @Option(names = "--s3proxy-jar", paramLabel = "JAR", description = "s3proxy 4.1.0 jar-with-dependencies (default: the build's copy, ~/.m2).")
    Path s3proxyJar;

    @Option(names = "--json", paramLabel = "FILE", description = "Also write {\"benchmark\": \"fleet\", \"results\": [...]} to FILE.")
    Path json;

    @Override
    public void run() {
        if (hosts < 1 || versions < 1 || linkMbps <= 0 || lateJoiners < 0 || !(density > 0 && density <= 1)) {
            throw new CliFailure("--hosts, --versions and --link-mbps must be positive, --late-joiners non-negative, "
                    + "--density in (0, 1]", 2);
        }
        List<String> modes = switch (cache) {
            case "both" -> List.of("nginx", "none");
            case "nginx", "none" -> List.of(cache);
            default -> throw new CliFailure("--cache must be nginx, none or both, not '" + cache + "'", 2);
        };
        if (!List.of("engine", "host").contains(mode)) {
            throw new CliFailure("--mode must be engine or host, not '" + mode + "'", 2);
        }
        if (!List.of("auto", "netns", "relay").contains(link)) {
            throw new CliFailure("--link must be netns, relay or auto, not '" + link + "'", 2);
        }
        if (modes.contains("nginx") && NginxCache.unavailableReason() != null) {
            throw new CliFailure("--cache nginx: " + NginxCache.unavailableReason(), 2);
        }
        FleetRun.Options options = new FleetRun.Options(hosts, versions, linkMbps, lateJoiners, modelSize, density,
                anchorInterval, pollIntervalS, s3proxyJar, link, mode.equals("engine"), wake);
        BenchResults results = new BenchResults("fleet");
        List<Map<String, Object>> summaries = new ArrayList<>();
        for (String mode : modes) {
            Path work;
            try {
                work = Files.createTempDirectory("stitch-bench-fleet-" + mode);
            } catch (java.io.IOException e) {
                throw new CliFailure("cannot create a scratch directory: " + e.getMessage());
            }
            List<Map<String, Object>> versionRows = new ArrayList<>();
            try {
                summaries.add(new FleetRun(mode, options, work, System.out).run(versionRows));
            } catch (Exception e) {
                throw new CliFailure("bench fleet (" + mode + "): " + e.getMessage());
            } finally {
                ScratchDirectories.deleteQuietly(work, "bench fleet");
            }
            for (Map<String, Object> r : versionRows) {
                results.row().putAll(r);
            }
        }
        for (Map<String, Object> s : summaries) {
            results.row().putAll(s);
        }
        results.printTable(System.out, "cache", "version", "link_bytes_ratio", "first_host_s", "last_host_s", "late_joiner_s",
                "late_joiner_link_ratio", "pinned_p50_ms", "pinned_p99_ms", "conflicts_409", "mislabeled");
        if (json != null) {
            results.writeJson(json);
        }
        for (Map<String, Object> s : summaries) {
            if (((Number) s.get("mislabeled")).longValue() != 0) {
                throw new CliFailure("mislabeled answers in the " + s.get("cache") + " run: " + s.get("mislabeled"));
            }
        }
    }
}
