package dev.stitch.bench.remote;

import dev.stitch.bench.simulate.TokenBucket;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.Locale;

/**
 * The bench's own throttled link, for machines where namespaces are not allowed: a TCP relay on
 * loopback in front of the store, with one token bucket per direction at the link rate.
 */
public final class RelayLink implements LimitedLink {
    private static final int BLOCK = 64 * 1024;

    private final double bytesPerSecond;
    private final double mbps;
    private final TokenBucket towardsA;
    private final TokenBucket towardsB;
    private final java.util.concurrent.atomic.AtomicLong toB = new java.util.concurrent.atomic.AtomicLong();
    private ServerSocket server;
    private volatile boolean closed;

    public RelayLink(double mbps) {
        this.mbps = mbps;
        this.bytesPerSecond = mbps * 1e6 / 8;
        long burst = Math.max(BLOCK, (long) (bytesPerSecond / 100));
        this.towardsA = new TokenBucket(bytesPerSecond, burst);
        this.towardsB = new TokenBucket(bytesPerSecond, burst);
    }

    @Override
    public String storeHost() {
        return "127.0.0.1";
    }

    @Override
    public List<String> storeCommandPrefix() {
        return List.of();
    }

    @Override
    public synchronized String clientAuthority(int storePort) throws IOException {
        if (server != null) {
            throw new IllegalStateException("the relay already forwards to a store");
        }
        server = new ServerSocket(0, 64, InetAddress.getLoopbackAddress());
        Thread.ofVirtual().name("relay-accept").start(() -> accept(storePort));
        return "127.0.0.1:" + server.getLocalPort();
    }

    private void accept(int storePort) {
        while (!closed) {
            try {
                Socket client = server.accept();
                Socket store = new Socket();
                store.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), storePort));
                Thread.ofVirtual().start(() -> pump(client, store, towardsA, null));
                Thread.ofVirtual().start(() -> pump(store, client, towardsB, toB));
            } catch (IOException e) {
                if (!closed) {
                    System.err.println("relay: " + e.getMessage());
                }
            }
        }
    }

    private static void pump(Socket from, Socket to, TokenBucket bucket, java.util.concurrent.atomic.AtomicLong counter) {
        byte[] buf = new byte[BLOCK];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            int n;
            while ((n = in.read(buf)) > 0) {
                bucket.acquire(n);
                out.write(buf, 0, n);
                if (counter != null) {
                    counter.addAndGet(n);
                }
            }
        } catch (IOException | InterruptedException e) {
            // one side closed: the other direction notices on its next read
        } finally {
            closeQuietly(from);
            closeQuietly(to);
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // nothing left to do
        }
    }

    @Override
    public double bytesPerSecond() {
        return bytesPerSecond;
    }

    @Override
    public long bytesToB() {
        return toB.get();
    }

    @Override
    public String describe() {
        return String.format(Locale.ROOT, "loopback TCP relay throttled to %.0f Mbit/s each way (token buckets; no added latency)", mbps);
    }

    @Override
    public void close() throws IOException {
        closed = true;
        if (server != null) {
            server.close();
        }
    }
}
