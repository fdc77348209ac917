package dev.stitch.bench.remote;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A real link: datacenter A is a Linux network namespace joined to this one by a veth pair, with a
 * {@code tc tbf} qdisc at the link rate on both ends (each direction's egress). Needs root, iproute2
 * and the tbf scheduler; adds no latency ({@code netem} is not available on these machines).
 */
public final class NamespaceLink implements LimitedLink {
    private static final String HOST_A = "10.77.0.2";
    private static final String HOST_B = "10.77.0.1";

    private final String namespace;
    private final String vethB;
    private final double bytesPerSecond;
    private final double mbps;

    private NamespaceLink(String namespace, String vethB, double mbps) {
        this.namespace = namespace;
        this.vethB = vethB;
        this.mbps = mbps;
        this.bytesPerSecond = mbps * 1e6 / 8;
    }

    /** Whether this process can build one: root, with {@code ip} and {@code tc} on the path. */
    public static String unavailableReason() {
        if (!"root".equals(System.getProperty("user.name"))) {
            return "not running as root";
        }
        for (String tool : List.of("ip", "tc")) {
            if (!onPath(tool)) {
                return "'" + tool + "' (iproute2) is not installed";
            }
        }
        return null;
    }

    private static boolean onPath(String tool) {
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/sbin:/usr/bin:/sbin:/bin").split(":")) {
            if (Files.isExecutable(Path.of(dir, tool))) {
                return true;
            }
        }
        return Files.isExecutable(Path.of("/usr/sbin", tool)) || Files.isExecutable(Path.of("/sbin", tool));
    }

    /** Creates namespace, veth pair, addresses and both tbf qdiscs; undoes what it did on failure. */
    public static NamespaceLink create(double mbps) throws IOException {
        String id = Long.toString(ProcessHandle.current().pid());
        NamespaceLink link = new NamespaceLink("stitch-a-" + id, "stb" + id, mbps);
        String vethA = "sta" + id;
        String rate = String.format(Locale.ROOT, "%.0fkbit", mbps * 1000);
        // a burst of ~10 ms at the rate (at least 64 KiB) keeps tbf close to a constant-rate wire
        String burst = Math.max(64 * 1024, (long) (link.bytesPerSecond / 100)) + "b";
        try {
            run("ip", "netns", "add", link.namespace);
            run("ip", "link", "add", link.vethB, "type", "veth", "peer", "name", vethA);
            run("ip", "link", "set", vethA, "netns", link.namespace);
            run("ip", "addr", "add", HOST_B + "/24", "dev", link.vethB);
            run("ip", "link", "set", link.vethB, "up");
            run("ip", "netns", "exec", link.namespace, "ip", "addr", "add", HOST_A + "/24", "dev", vethA);
            run("ip", "netns", "exec", link.namespace, "ip", "link", "set", vethA, "up");
            run("ip", "netns", "exec", link.namespace, "ip", "link", "set", "lo", "up");
            run("tc", "qdisc", "add", "dev", link.vethB, "root", "tbf", "rate", rate, "burst", burst, "latency", "100ms");
            run("ip", "netns", "exec", link.namespace, "tc", "qdisc", "add", "dev", vethA, "root", "tbf", "rate", rate,
                    "burst", burst, "latency", "100ms");
            return link;
        } catch (IOException e) {
            link.close();
            throw e;
        }
    }

    @Override
    public String storeHost() {
        return HOST_A;
    }

    @Override
    public List<String> storeCommandPrefix() {
        return List.of("ip", "netns", "exec", namespace);
    }

    @Override
    public String clientAuthority(int storePort) {
        return HOST_A + ":" + storePort;
    }

    @Override
    public double bytesPerSecond() {
        return bytesPerSecond;
    }

    @Override
    public long bytesToB() throws IOException {
        // what datacenter B's end of the veth pair received
        return Long.parseLong(Files.readString(Path.of("/sys/class/net", vethB, "statistics", "rx_bytes")).trim());
    }

    /** The address of datacenter B's end, where A reaches services running in B. */
    public String hostB() {
        return HOST_B;
    }

    @Override
    public String describe() {
        return String.format(Locale.ROOT, "network namespace %s over veth with tc tbf %.0f Mbit/s each way (no added latency)",
                namespace, mbps);
    }

    @Override
    public void close() {
        quietly("ip", "link", "del", vethB);
        quietly("ip", "netns", "del", namespace);
    }

    private static void quietly(String... command) {
        try {
            run(command);
        } catch (IOException e) {
            // already gone
        }
    }

    private static void run(String... command) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(command));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        try {
            if (p.waitFor() != 0) {
                throw new IOException(String.join(" ", cmd) + " failed: " + out);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted running " + String.join(" ", cmd));
        }
    }
}
