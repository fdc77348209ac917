package dev.stitch.cli;

import dev.stitch.board.BoardAddress;
import dev.stitch.board.store.StoreOptions;
import dev.stitch.fanout.WakeFanOut;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code stitch fanout}: the rollout datacenter's wake fan-out endpoint (docs/protocol/board.md §7.7, §7.8). */
@Command(name = "fanout", mixinStandardHelpOptions = true,
        description = {"Wake fan-out for one rollout datacenter: the publisher notifies this endpoint (stitch publish "
                + "--notify http://HOST:PORT) across the link; it reads the new version's delta files once through the "
                + "datacenter's cache (--board, the URL the sidecars use), then wakes every sidecar, so all of them fetch "
                + "from a warm cache at once.",
            "A failed warm-up still wakes the sidecars. Bind it where the publisher can reach it; with a token file, "
                + "notifications must carry that bearer token."})
public final class FanOutCommand implements StitchSubcommand, java.util.concurrent.Callable<Integer> {

    @Option(names = "--listen", defaultValue = "127.0.0.1:8095", paramLabel = "HOST:PORT",
            description = "Where notifications arrive (default ${DEFAULT-VALUE}).")
    String listen;

    @Option(names = "--board", required = true, paramLabel = "URL",
            description = "The board as the sidecars read it: the cache's http(s) URL (e.g. http://cache:8080/bucket/prefix).")
    String board;

    @Option(names = "--sidecars", required = true, split = ",", paramLabel = "URL",
            description = "The sidecars' base URLs, comma-separated.")
    List<URI> sidecars = new ArrayList<>();

    @Option(names = "--token-file", paramLabel = "FILE", description = "Bearer token notifications must carry.")
    Path tokenFile;

    @Option(names = "--sidecar-token-file", paramLabel = "FILE",
            description = "Bearer token sent to the sidecars (their --control-token-file).")
    Path sidecarTokenFile;

    @Option(names = "--part-size", paramLabel = "SIZE", converter = ByteSize.class, defaultValue = "16m",
            description = "Ranged read size while warming; match the cache's slice (default ${DEFAULT-VALUE}).")
    long partBytes;

    @Option(names = "--fetch-concurrency", paramLabel = "N", defaultValue = "8",
            description = "Ranged reads in flight while warming (default ${DEFAULT-VALUE}).")
    int concurrency;

    @Override
    public Integer call() throws Exception {
        BoardAddress address = RemoteBoardFlags.address(board);
        if (!address.isRemote()) {
            throw new CliFailure("--board must be the http(s) URL the sidecars read (the cache), not a directory", 2);
        }
        int colon = listen.lastIndexOf(':');
        if (colon < 0) {
            throw new CliFailure("--listen must be HOST:PORT, not '" + listen + "'", 2);
        }
        InetSocketAddress at;
        try {
            at = new InetSocketAddress(listen.substring(0, colon), Integer.parseInt(listen.substring(colon + 1)));
        } catch (IllegalArgumentException e) {
            throw new CliFailure("--listen must be HOST:PORT, not '" + listen + "'", 2);
        }
        if (partBytes < StoreOptions.MIN_PART_BYTES || partBytes > Integer.MAX_VALUE || concurrency < 1) {
            throw new CliFailure("--part-size must be 5m..2g and --fetch-concurrency positive", 2);
        }
        StoreOptions store = StoreOptions.defaults().withPartBytes((int) partBytes).withConcurrency(concurrency);
        try (WakeFanOut fanOut = new WakeFanOut(at, address.uri(), sidecars, read(tokenFile), read(sidecarTokenFile), store)) {
            System.out.println("fan-out listening on " + listen + " for " + sidecars.size() + " sidecar(s), warming " + board);
            CountDownLatch stopped = new CountDownLatch(1);
            Runtime.getRuntime().addShutdownHook(new Thread(stopped::countDown, "stitch-fanout-shutdown"));
            stopped.await();
        } catch (IllegalArgumentException e) {
            throw new CliFailure(e.getMessage(), 2);
        }
        return 0;
    }

    private static String read(Path file) {
        if (file == null) {
            return null;
        }
        try {
            String t = Files.readString(file, StandardCharsets.UTF_8).strip();
            if (t.isEmpty()) {
                throw new CliFailure(file + " is empty", 2);
            }
            return t;
        } catch (IOException e) {
            throw new CliFailure("cannot read " + file + ": " + e.getMessage(), 2);
        }
    }
}
