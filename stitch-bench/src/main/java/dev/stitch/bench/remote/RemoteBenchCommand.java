package dev.stitch.bench.remote;

import dev.stitch.bench.BenchResults;
import dev.stitch.bench.BenchSubcommand;
import dev.stitch.bench.ScratchDirectories;
import dev.stitch.bench.publish.PublishWorkload;
import dev.stitch.board.BoardAddress;
import dev.stitch.board.BoardOptions;
import dev.stitch.board.RemoteBoardOptions;
import dev.stitch.board.RemoteBulletinBoard;
import dev.stitch.board.store.StoreListener;
import dev.stitch.board.store.StoreOptions;
import dev.stitch.cli.ByteSize;
import dev.stitch.cli.CliFailure;
import dev.stitch.format.DeltaFormat;
import dev.stitch.protocol.Manifest;
import dev.stitch.publish.PublishResult;
import dev.stitch.publish.WeightPublisher;
import dev.stitch.publish.Weights;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code stitch bench remote}: publishes N versions of a synthetic model to an S3 board (s3proxy, a
 * real S3 API server) across a rate-limited link, then fetches each version into a second host's
 * verified cache, and reports upload and fetch throughput as a fraction of the link's rate
 * (docs/benchmarks.md; docs/protocol/board.md §7). The link is a network namespace with {@code tc tbf}
 * when running as root, else the bench's throttled relay; the output says which.
 */
@Command(name = "remote", mixinStandardHelpOptions = true,
        description = {"Remote board throughput: publish N versions to an s3:// board on s3proxy across a limited link, "
                + "fetch them into a verified cache, and report bytes/s as a fraction of the link rate.",
            "The link is a Linux network namespace + veth + tc tbf when run as root (no added latency: netem is not "
                + "available), else a loopback relay throttled by token buckets. Publish throughput counts the upload "
                + "window (first to last byte sent); fetch throughput the whole verified fetch, HEADs and digest included."})
public final class RemoteBenchCommand implements BenchSubcommand, Runnable {

    @Option(names = "--versions", defaultValue = "4", paramLabel = "N", description = "Versions to publish and fetch (default ${DEFAULT-VALUE}).")
    int versions;

    @Option(names = "--model-size", defaultValue = "256m", paramLabel = "SIZE", converter = ByteSize.class,
            description = "Synthetic bf16 model size (default ${DEFAULT-VALUE}).")
    long modelSize;

    @Option(names = "--density", defaultValue = "0.03", paramLabel = "D", description = "Changed fraction per version (default ${DEFAULT-VALUE}).")
    double density;

    @Option(names = "--anchor-interval", defaultValue = "4", paramLabel = "K",
            description = "Every K-th version also carries a full anchor, so both small and large files cross the link "
                    + "(default ${DEFAULT-VALUE}; 0 = none).")
    int anchorInterval;

    @Option(names = "--link-mbps", defaultValue = "200", paramLabel = "MBPS", description = "Link rate, each way (default ${DEFAULT-VALUE}).")
    double linkMbps;

    @Option(names = "--link", defaultValue = "auto", paramLabel = "KIND",
            description = "netns (root: namespace + tc tbf), relay (throttled loopback relay) or auto (netns when possible). "
                    + "Default: ${DEFAULT-VALUE}.")
    String link;

    @Option(names = "--fetch-concurrency", defaultValue = "8", paramLabel = "N", description = "Ranged reads / upload parts in flight per file (default ${DEFAULT-VALUE}).")
    int concurrency;

    @Option(names = "--part-size", defaultValue = "16m", paramLabel = "SIZE", converter = ByteSize.class,
            description = "Ranged read and multipart part size (default ${DEFAULT-VALUE}).")
    long partBytes;

    @Option(names = "--s3proxy-jar", paramLabel = "JAR",
            description = "s3proxy 4.1.0 jar-with-dependencies (default: STITCH_S3PROXY_JAR, the build's copy, ~/.m2).")
    Path s3proxyJar;

    @Option(names = "--json", paramLabel = "FILE", description = "Also write {\"benchmark\": \"remote\", \"results\": [...]} to FILE.")
    Path json;

    @Override
    public void run() {
        if (versions < 1 || linkMbps <= 0 || concurrency < 1 || partBytes < StoreOptions.MIN_PART_BYTES) {
            throw new CliFailure("--versions, --link-mbps and --fetch-concurrency must be positive and --part-size at least 5m", 2);
        }
        Path work;
        try {
            work = Files.createTempDirectory("stitch-bench-remote");
        } catch (IOException e) {
            throw new CliFailure("cannot create a scratch directory: " + e.getMessage());
        }
        BenchResults results = new BenchResults("remote");
        try (LimitedLink limited = openLink()) {
            System.out.println("link: " + limited.describe());
            Path jar = S3ProxyServer.locateJar(s3proxyJar);
            Files.createDirectories(work.resolve("s3-data"));
            try (S3ProxyServer server = S3ProxyServer.start(jar, work.resolve("s3-data"), limited, work.resolve("s3proxy.log"))) {
                URI endpoint = URI.create("http://" + limited.clientAuthority(server.port()));
                S3ProxyServer.createBucket(endpoint, "bench");
                System.setProperty("aws.accessKeyId", S3ProxyServer.IDENTITY);
                System.setProperty("aws.secretAccessKey", S3ProxyServer.CREDENTIAL);
                System.setProperty("aws.region", "us-east-1");
                System.setProperty("aws.disableEc2Metadata", "true");
                measure(endpoint, limited, work, results);
            }
        } catch (IOException e) {
            throw new CliFailure("bench remote: " + e.getMessage());
        } finally {
            ScratchDirectories.deleteQuietly(work, "bench remote");
        }
        results.printTable(System.out, "phase", "version", "kind", "bytes", "seconds", "mb_per_s", "link_fraction");
        if (json != null) {
            results.writeJson(json);
        }
    }

    private LimitedLink openLink() throws IOException {
        String kind = link.toLowerCase(Locale.ROOT);
        String why = NamespaceLink.unavailableReason();
        switch (kind) {
            case "netns" -> {
                if (why != null) {
                    throw new CliFailure("--link netns needs root with iproute2: " + why, 2);
                }
                return NamespaceLink.create(linkMbps);
            }
            case "relay" -> {
                return new RelayLink(linkMbps);
            }
            case "auto" -> {
                if (why == null) {
                    try {
                        return NamespaceLink.create(linkMbps);
                    } catch (IOException e) {
                        System.out.println("network namespace unavailable (" + e.getMessage() + "); using the throttled relay");
                        return new RelayLink(linkMbps);
                    }
                }
                System.out.println("network namespace unavailable (" + why + "); using the throttled relay");
                return new RelayLink(linkMbps);
            }
            default -> throw new CliFailure("--link must be netns, relay or auto, not '" + link + "'", 2);
        }
    }

    private void measure(URI endpoint, LimitedLink limited, Path work, BenchResults results) throws IOException {
        BoardAddress address = BoardAddress.parse("s3://bench/board");
        UploadWindow upload = new UploadWindow();
        StoreOptions store = StoreOptions.defaults().withConcurrency(concurrency).withPartBytes((int) partBytes)
                .withS3Endpoint(endpoint, true);
        RemoteBoardOptions publishSide = RemoteBoardOptions.defaults(address).withCacheDir(work.resolve("publisher-cache"))
                .withStore(store.withListener(upload));
        RemoteBoardOptions readSide = RemoteBoardOptions.defaults(address).withCacheDir(work.resolve("reader-cache"))
                .withStore(store);
        long upBytes = 0;
        double upSeconds = 0;
        long downBytes = 0;
        double downSeconds = 0;
        double rate = limited.bytesPerSecond();
        System.out.printf(Locale.ROOT, "generating a %d MiB model, publishing %d versions at density %.3f%n", modelSize >> 20,
                versions, density);
        try (PublishWorkload workload = PublishWorkload.generate(modelSize);
             RemoteBulletinBoard board = RemoteBulletinBoard.create(address, null, BoardOptions.defaults(), publishSide);
             RemoteBulletinBoard reader = RemoteBulletinBoard.open(address, BoardOptions.defaults(), readSide);
             WeightPublisher publisher = WeightPublisher.builder().board(board)
                     .backends(DeltaFormat.STITCH_DELTA, DeltaFormat.FULL).anchorInterval(anchorInterval)
                     .threads(1).pinSnapshot(false).seed(Weights.of(workload.base())).build()) {
            for (int v = 1; v <= versions; v++) {
                upload.reset();
                PublishResult r = publisher.publish(v, Weights.of(workload.step(density, PublishWorkload.SEED + v)));
                double window = upload.seconds();
                String kind = v % Math.max(1, anchorInterval) == 0 && anchorInterval > 0 ? "delta+anchor" : "delta";
                row(results, "publish", v, kind, upload.bytes(), window, rate);
                upBytes += upload.bytes();
                upSeconds += window;
                System.out.printf(Locale.ROOT, "published v%d (%s): %d bytes uploaded in %.2f s (publish %.2f s)%n", v, kind,
                        upload.bytes(), window, r.timings().publishSeconds());
            }
            for (int v = 1; v <= versions; v++) {
                Manifest m = reader.readManifest(v);
                long before = reader.stats().bytesReceived();
                long t0 = System.nanoTime();
                reader.verifyArtifacts(m, true);
                double s = (System.nanoTime() - t0) / 1e9;
                long bytes = reader.stats().bytesReceived() - before;
                row(results, "fetch", v, m.isAnchor() ? "delta+anchor" : "delta", bytes, s, rate);
                downBytes += bytes;
                downSeconds += s;
            }
        }
        row(results, "publish", 0, "all", upBytes, upSeconds, rate);
        row(results, "fetch", 0, "all", downBytes, downSeconds, rate);
        Map<String, Object> summary = results.row();
        summary.put("phase", "summary");
        summary.put("link", limited.describe());
        summary.put("link_mbps", linkMbps);
        summary.put("publish_link_fraction", round(upBytes / upSeconds / rate));
        summary.put("fetch_link_fraction", round(downBytes / downSeconds / rate));
        System.out.printf(Locale.ROOT, "publish: %.3f of the link rate; fetch: %.3f of the link rate (target >= 0.8)%n",
                upBytes / upSeconds / rate, downBytes / downSeconds / rate);
    }

    private static void row(BenchResults results, String phase, int version, String kind, long bytes, double seconds,
                            double rate) {
        Map<String, Object> row = results.row();
        row.put("phase", phase);
        row.put("version", version == 0 ? "all" : Integer.toString(version));
        row.put("kind", kind);
        row.put("bytes", bytes);
        row.put("seconds", round(seconds));
        row.put("mb_per_s", round(bytes / Math.max(seconds, 1e-9) / 1e6));
        row.put("link_fraction", round(bytes / Math.max(seconds, 1e-9) / rate));
    }

    private static double round(double v) {
        return Math.round(v * 1000) / 1000.0;
    }

    /** First to last byte handed to the link while uploading one version. */
    private static final class UploadWindow implements StoreListener {
        private final AtomicLong first = new AtomicLong();
        private final AtomicLong last = new AtomicLong();
        private final AtomicLong bytes = new AtomicLong();

        void reset() {
            first.set(0);
            last.set(0);
            bytes.set(0);
        }

        @Override
        public void sent(long n) {
            long now = System.nanoTime();
            first.compareAndSet(0, now);
            last.set(now);
            bytes.addAndGet(n);
        }

        long bytes() {
            return bytes.get();
        }

        double seconds() {
            return first.get() == 0 ? 0 : (last.get() - first.get()) / 1e9;
        }
    }
}
