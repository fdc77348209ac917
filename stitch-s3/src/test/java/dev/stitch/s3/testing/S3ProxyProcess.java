package dev.stitch.s3.testing;

import dev.stitch.board.store.StoreOptions;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.apache5.Apache5HttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * An s3proxy server (https://github.com/gaul/s3proxy) in a child JVM, storing in a temporary
 * directory: the S3 of the remote-board tests. It runs as a process of its own, never on the test
 * class path, because its Jackson and Jetty clash with ours.
 *
 * <p>The jar comes from the build: the root pom's {@code copy-s3proxy} execution of
 * maven-dependency-plugin copies it to {@code target/s3proxy/s3proxy.jar} in every module that
 * declares that plugin, and surefire passes the path as system property {@value #JAR_PROPERTY}.
 *
 * <p>The backend is jclouds' {@code filesystem} provider: s3proxy 4.1.0 lists it (with the in-memory
 * {@code transient}, which a restart would empty) in {@code Quirks.NATIVE_IF_NONE_MATCH} and
 * {@code NATIVE_CONDITIONAL_COMPLETE}, so {@code If-None-Match: *} is decided in the write itself, for
 * PutObject and CompleteMultipartUpload alike; for other providers s3proxy checks first and writes
 * after, which two racing creates could both pass, or refuses conditional writes (501). {@code If-Match}
 * stays a check followed by a write on the filesystem, atomic only within the one s3proxy process.
 *
 * <p>{@link #start()} also points the SDK's default credentials chain at this server's fixed
 * identity, through the {@code aws.accessKeyId} and {@code aws.secretAccessKey} system properties
 * that the chain consults first: stores opened the production way then sign as s3proxy expects. It
 * sets {@code aws.disableEc2Metadata} too: with no region configured the region chain would ask EC2
 * instance metadata, which off EC2 costs about 0.8 s per store opened before the store falls back to
 * us-east-1 for its endpoint override.
 */
public final class S3ProxyProcess implements Closeable {
    /** The system property naming the s3proxy jar. */
    public static final String JAR_PROPERTY = "stitch.s3proxy.jar";
    public static final String IDENTITY = "stitch-test";
    public static final String CREDENTIAL = "stitch-test-secret";

    private static final long START_TIMEOUT_SECONDS = 60;

    private final Path jar;
    private final Path dataDir;
    private final Path config;
    private final Path log;
    private final int port;
    private Process process;

    private S3ProxyProcess(Path jar, Path dataDir, int port) throws IOException {
        this.jar = jar;
        this.dataDir = dataDir;
        this.port = port;
        this.log = jar.resolveSibling("s3proxy-" + port + ".log");
        this.config = dataDir.resolveSibling(dataDir.getFileName() + ".properties");
        Files.writeString(config, String.join("\n",
                "s3proxy.endpoint=http://127.0.0.1:" + port,
                "s3proxy.authorization=aws-v2-or-v4",
                "s3proxy.identity=" + IDENTITY,
                "s3proxy.credential=" + CREDENTIAL,
                // the SDK sends headers (amz-sdk-invocation-id, amz-sdk-request) that s3proxy would otherwise refuse
                "s3proxy.ignore-unknown-headers=true",
                "jclouds.provider=filesystem",
                "jclouds.filesystem.basedir=" + dataDir,
                ""));
    }

    /** Starts s3proxy on a free port of 127.0.0.1 with an empty data directory and waits until it answers. */
    public static S3ProxyProcess start() throws IOException {
        System.setProperty("aws.accessKeyId", IDENTITY);
        System.setProperty("aws.secretAccessKey", CREDENTIAL);
        System.setProperty("aws.disableEc2Metadata", "true");
        Path jar = jar();
        IOException failure = null;
        // the free port is only reserved until s3proxy binds it; another process can take it in between
        for (int tries = 0; tries < 3; tries++) {
            Path dataDir = Files.createTempDirectory("s3proxy-data");
            S3ProxyProcess p = new S3ProxyProcess(jar, dataDir, freePort());
            try {
                p.launch();
                return p;
            } catch (IOException e) {
                p.close();
                if (failure != null) {
                    e.addSuppressed(failure);
                }
                failure = e;
            }
        }
        throw failure;
    }

    private static Path jar() {
        String configured = System.getProperty(JAR_PROPERTY);
        if (configured == null || configured.isBlank()) {
            throw new IllegalStateException("system property " + JAR_PROPERTY + " is not set: run the tests through Maven (the root"
                    + " pom's surefire configuration sets it), or pass -D" + JAR_PROPERTY + "=/path/to/s3proxy-jar-with-dependencies.jar");
        }
        Path jar = Path.of(configured);
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException("the s3proxy jar is missing at " + jar + " (" + JAR_PROPERTY + "): declare"
                    + " org.apache.maven.plugins:maven-dependency-plugin in this module's <build><plugins> so that the root pom's"
                    + " copy-s3proxy execution copies org.gaul:s3proxy:jar-with-dependencies there before the tests run");
        }
        return jar;
    }

    /** {@code http://127.0.0.1:port}. */
    public URI endpoint() {
        return URI.create("http://127.0.0.1:" + port);
    }

    /** Where s3proxy's output goes (appended across restarts). */
    public Path log() {
        return log;
    }

    /** {@code base} talking to this server: its endpoint, path-style addressing. */
    public StoreOptions options(StoreOptions base) {
        return base.withS3Endpoint(endpoint(), true);
    }

    /** Creates a bucket. */
    public void createBucket(String bucket) {
        try (S3Client s3 = client()) {
            s3.createBucket(b -> b.bucket(bucket));
        }
    }

    /** A plain SDK client of this server, for what a board store does not do (buckets). */
    public S3Client client() {
        return S3Client.builder()
                .endpointOverride(endpoint())
                .region(Region.US_EAST_1)
                .forcePathStyle(true)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(IDENTITY, CREDENTIAL)))
                .httpClientBuilder(Apache5HttpClient.builder())
                .build();
    }

    /** Kills the server at once (SIGKILL), as a crash would; its data directory stays. */
    public void kill() {
        if (process == null) {
            return;
        }
        process.destroyForcibly();
        try {
            process.waitFor();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for s3proxy to die", e);
        }
        process = null;
    }

    /** Starts the server again on the same port and data directory. */
    public void restart() throws IOException {
        kill();
        launch();
    }

    @Override
    public void close() {
        kill();
        try {
            deleteTree(dataDir);
            Files.deleteIfExists(config);
        } catch (IOException e) {
            throw new UncheckedIOException("could not delete s3proxy's data directory " + dataDir, e);
        }
    }

    private void launch() throws IOException {
        List<String> cmd = new ArrayList<>();
        // the JVM running the tests (JDK 25 from the toolchain), not whatever java is on the PATH
        cmd.add(ProcessHandle.current().info().command().orElseThrow(
                () -> new IOException("cannot tell which java runs this JVM, to start s3proxy with it")));
        cmd.addAll(List.of("-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-jar", jar.toString(),
                "--properties", config.toString()));
        Files.writeString(log, "---- " + String.join(" ", cmd) + "\n", StandardCharsets.UTF_8,
                java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
        process = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .start();
        awaitAnswer();
    }

    /** Polls until s3proxy answers an HTTP request; a process that exits, or never answers, fails with its log. */
    private void awaitAnswer() throws IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(START_TIMEOUT_SECONDS);
        while (true) {
            if (!process.isAlive()) {
                throw new IOException("s3proxy exited with status " + process.exitValue() + " while starting on port " + port
                        + "; the end of its log " + log + ":\n" + logTail());
            }
            if (answers()) {
                return;
            }
            if (System.nanoTime() > deadline) {
                kill();
                throw new IOException("s3proxy did not answer on port " + port + " within " + START_TIMEOUT_SECONDS
                        + " s; the end of its log " + log + ":\n" + logTail());
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                kill();
                throw new IOException("interrupted waiting for s3proxy to start", e);
            }
        }
    }

    private boolean answers() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1000);
            s.setSoTimeout(5000);
            OutputStream out = s.getOutputStream();
            out.write("HEAD / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            byte[] status = in.readNBytes(9);
            return new String(status, StandardCharsets.US_ASCII).startsWith("HTTP/1.");
        } catch (IOException e) {
            return false;
        }
    }

    private String logTail() {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException e) {
            return "(log unreadable: " + e + ")";
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
