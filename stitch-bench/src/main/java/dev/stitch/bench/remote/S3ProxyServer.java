package dev.stitch.bench.remote;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * s3proxy (a real S3 API server over a directory) as a child process, in datacenter A of a
 * {@link LimitedLink}. It runs from its own jar, never on this class path: its Jackson is not ours.
 */
public final class S3ProxyServer implements Closeable {
    public static final String IDENTITY = "stitch-bench";
    public static final String CREDENTIAL = "stitch-bench-secret";

    private final Process process;
    private final int port;
    private final String host;

    private S3ProxyServer(Process process, String host, int port) {
        this.process = process;
        this.host = host;
        this.port = port;
    }

    /**
     * Where the s3proxy jar-with-dependencies is: {@code --s3proxy-jar}, {@code STITCH_S3PROXY_JAR}, the
     * copy the build puts beside the bench jar, or the local Maven repository.
     */
    public static Path locateJar(Path given) throws IOException {
        List<Path> tried = new ArrayList<>();
        if (given != null) {
            tried.add(given);
        }
        String env = System.getenv("STITCH_S3PROXY_JAR");
        if (env != null && !env.isBlank()) {
            tried.add(Path.of(env));
        }
        try {
            Path self = Path.of(S3ProxyServer.class.getProtectionDomain().getCodeSource().getLocation().toURI());
            tried.add(self.resolveSibling("s3proxy").resolve("s3proxy.jar"));
        } catch (java.net.URISyntaxException | SecurityException e) {
            // not from a jar: the other candidates remain
        }
        tried.add(Path.of(System.getProperty("user.home"), ".m2", "repository", "org", "gaul", "s3proxy", "4.1.0",
                "s3proxy-4.1.0-jar-with-dependencies.jar"));
        for (Path p : tried) {
            if (Files.isRegularFile(p)) {
                return p;
            }
        }
        throw new IOException("no s3proxy jar found (tried " + tried + "); build the project (it copies "
                + "org.gaul:s3proxy:4.1.0:jar-with-dependencies next to the bench jar) or pass --s3proxy-jar");
    }

    /** Starts s3proxy over {@code dataDir}, in {@code link}'s datacenter A, and waits until it answers. */
    static S3ProxyServer start(Path jar, Path dataDir, LimitedLink link, Path log) throws IOException {
        return start(jar, dataDir, link.storeHost(), link.storeCommandPrefix(), log, false);
    }

    /**
     * Starts s3proxy on {@code host} (run behind {@code commandPrefix}) and waits until it answers.
     *
     * @param unsignedReads accept unsigned requests, as a bucket readable from the datacenter's
     *                      network does: what a cache tier in front of it needs (board.md §7.4)
     */
    public static S3ProxyServer start(Path jar, Path dataDir, String host, List<String> commandPrefix, Path log,
                                      boolean unsignedReads) throws IOException {
        int port = freePort();
        Path config = dataDir.resolveSibling("s3proxy.properties");
        Files.writeString(config, String.join("\n",
                "s3proxy.endpoint=http://" + host + ":" + port,
                // s3proxy has no read-only anonymous mode: "none" also accepts our signed writes
                "s3proxy.authorization=" + (unsignedReads ? "none" : "aws-v2-or-v4"),
                "s3proxy.identity=" + IDENTITY,
                "s3proxy.credential=" + CREDENTIAL,
                "s3proxy.ignore-unknown-headers=true",
                "jclouds.provider=filesystem",
                "jclouds.filesystem.basedir=" + dataDir,
                ""), StandardCharsets.UTF_8);
        List<String> cmd = new ArrayList<>(commandPrefix);
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.addAll(List.of("-Xmx1g", "-jar", jar.toString(), "--properties", config.toString()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        S3ProxyServer server = new S3ProxyServer(p, host, port);
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (System.nanoTime() < deadline) {
            if (!p.isAlive()) {
                throw new IOException("s3proxy exited with " + p.exitValue() + "; its log: " + tail(log));
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(host, port), 200);
                return server;
            } catch (IOException notYet) {
                sleep(100);
            }
        }
        server.close();
        throw new IOException("s3proxy did not answer on " + host + ":" + port + " within 60 s; its log: " + tail(log));
    }

    public int port() {
        return port;
    }

    /** {@code http://host:port}. */
    public URI endpoint() {
        return URI.create("http://" + host + ":" + port);
    }

    /** Creates {@code bucket} through {@code endpoint}. */
    public static void createBucket(URI endpoint, String bucket) {
        try (S3Client c = S3Client.builder().endpointOverride(endpoint).forcePathStyle(true).region(Region.US_EAST_1)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(IDENTITY, CREDENTIAL)))
                .build()) {
            c.createBucket(b -> b.bucket(bucket));
        }
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(10, java.util.concurrent.TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    private static String tail(Path log) {
        try {
            String text = Files.readString(log, StandardCharsets.UTF_8);
            return text.length() > 2000 ? text.substring(text.length() - 2000) : text;
        } catch (IOException e) {
            return "(unreadable: " + e.getMessage() + ")";
        }
    }

    private static void sleep(long millis) throws IOException {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted waiting for s3proxy");
        }
    }

    @Override
    public String toString() {
        return "s3proxy at " + host + ":" + port;
    }
}
