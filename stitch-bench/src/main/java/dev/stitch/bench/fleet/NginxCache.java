package dev.stitch.bench.fleet;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The cache tier of a rollout datacenter: nginx running the repository's {@code deploy/nginx/stitch-cache.conf}
 * (docs/protocol/board.md §7.8), rendered with this run's origin, port and directories, as a child process.
 */
public final class NginxCache implements Closeable {
    private static final String TEMPLATE = "stitch-cache.conf";

    private final Process process;
    private final String host;
    private final int port;
    private final Path prefix;

    private NginxCache(Process process, String host, int port, Path prefix) {
        this.process = process;
        this.host = host;
        this.port = port;
        this.prefix = prefix;
    }

    /** Why nginx cannot run here (not installed), or null when it can. */
    public static String unavailableReason() {
        for (String dir : List.of("/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin")) {
            if (Files.isExecutable(Path.of(dir, "nginx"))) {
                return null;
            }
        }
        return "nginx is not installed (Debian: apt-get install nginx-light)";
    }

    /**
     * Starts a cache on {@code host:port} in front of {@code origin} (scheme://host:port) for the board
     * at {@code originPath} (e.g. {@code /bucket/prefix}).
     *
     * @param commandPrefix what runs nginx in the right place (e.g. {@code ip netns exec B}), or empty
     */
    public static NginxCache start(URI origin, String originPath, String host, int port, Path prefix, String slice,
                                   List<String> commandPrefix) throws IOException {
        Files.createDirectories(prefix.resolve("cache"));
        Map<String, String> values = new LinkedHashMap<>();
        values.put("@ORIGIN_HOSTPORT@", origin.getHost() + ":" + origin.getPort());
        values.put("@ORIGIN_PATH@", originPath.endsWith("/") ? originPath.substring(0, originPath.length() - 1) : originPath);
        values.put("@LISTEN_PORT@", Integer.toString(port));
        values.put("@LISTEN@", host + ":" + port);
        values.put("@PREFIX@", prefix.toString());
        values.put("@CACHE_DIR@", prefix.resolve("cache").toString());
        values.put("@CACHE_MAX@", "100g");
        values.put("@SLICE@", slice);
        values.put("@LOCK_TIMEOUT@", "10m");
        String conf = template();
        for (var e : values.entrySet()) {
            conf = conf.replace(e.getKey(), e.getValue());
        }
        java.util.regex.Matcher unfilled = java.util.regex.Pattern.compile("@[A-Z_]+@").matcher(conf);
        if (unfilled.find()) {
            throw new IOException("the nginx template has an unfilled value: " + unfilled.group());
        }
        Path file = prefix.resolve("nginx.conf");
        Files.writeString(file, conf, StandardCharsets.UTF_8);
        List<String> cmd = new ArrayList<>(commandPrefix);
        cmd.addAll(List.of("nginx", "-p", prefix.toString(), "-c", file.toString()));
        if ("root".equals(System.getProperty("user.name"))) {
            // A root master hands requests to unprivileged workers, which could not open a private scratch
            // directory; a deployment gives the cache directory to nginx's user instead.
            cmd.addAll(List.of("-g", "user root;"));
        }
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(prefix.resolve("nginx.out").toFile()).start();
        NginxCache cache = new NginxCache(p, host, port, prefix);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < deadline) {
            if (!p.isAlive()) {
                throw new IOException("nginx exited with " + p.exitValue() + ": " + cache.errors());
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(host, port), 200);
                return cache;
            } catch (IOException notYet) {
                sleep();
            }
        }
        cache.close();
        throw new IOException("nginx did not listen on " + host + ":" + port + " within 20 s: " + cache.errors());
    }

    private static String template() throws IOException {
        try (InputStream in = NginxCache.class.getResourceAsStream(TEMPLATE)) {
            if (in == null) {
                throw new IOException(TEMPLATE + " is not on the class path (the build copies deploy/nginx/ into stitch-bench)");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    /** The board address sidecars use: {@code http://host:port/originPath}. */
    public URI boardUri(String originPath) {
        return URI.create("http://" + host + ":" + port + (originPath.startsWith("/") ? "" : "/") + originPath);
    }

    /** nginx's error log and output, for failure messages. */
    public String errors() {
        StringBuilder sb = new StringBuilder();
        for (String name : List.of("nginx.out", "error.log")) {
            try {
                sb.append(Files.readString(prefix.resolve(name), StandardCharsets.UTF_8));
            } catch (IOException missing) {
                // not written yet
            }
        }
        return sb.length() > 3000 ? sb.substring(sb.length() - 3000) : sb.toString();
    }

    /** Lines of nginx's access log (one per request the cache answered). */
    public List<String> accessLog() throws IOException {
        Path log = prefix.resolve("access.log");
        return Files.exists(log) ? Files.readAllLines(log, StandardCharsets.UTF_8) : List.of();
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }

    private static void sleep() throws IOException {
        try {
            Thread.sleep(100);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new java.io.InterruptedIOException("interrupted waiting for nginx");
        }
    }
}
