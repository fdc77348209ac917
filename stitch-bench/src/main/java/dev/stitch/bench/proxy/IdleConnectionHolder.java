package dev.stitch.bench.proxy;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;

/**
 * A child process of {@code stitch bench proxy --idle-connections}: opens idle connections to the
 * sidecar and holds them until its standard input closes. The connections are spread over such
 * children so that no process needs more file descriptors than one process may have.
 *
 * <p>Arguments: host, port, number of connections. Prints {@code opened <n> failed <m>} once done.
 */
public final class IdleConnectionHolder {

    private IdleConnectionHolder() {
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 3) {
            System.err.println("usage: IdleConnectionHolder HOST PORT COUNT");
            System.exit(2);
        }
        String host = args[0];
        int port = Integer.parseInt(args[1]);
        int count = Integer.parseInt(args[2]);
        List<Socket> held = new ArrayList<>(count);
        int failed = 0;
        String firstFailure = null;
        for (int i = 0; i < count; i++) {
            Socket s = new Socket();
            try {
                s.connect(new InetSocketAddress(host, port), 5_000);
                held.add(s);
            } catch (IOException e) {
                s.close();
                failed++;
                if (firstFailure == null) {
                    firstFailure = e.toString();
                }
            }
        }
        System.out.println("opened " + held.size() + " failed " + failed
                + (firstFailure == null ? "" : " first_failure " + firstFailure));
        System.out.flush();
        // Hold until the parent closes our stdin (or exits).
        while (System.in.read() >= 0) {
            // discard
        }
        for (Socket s : held) {
            s.close();
        }
    }
}
