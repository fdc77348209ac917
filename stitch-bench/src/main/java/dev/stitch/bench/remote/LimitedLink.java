package dev.stitch.bench.remote;

import java.io.Closeable;
import java.util.List;

/**
 * The link between "datacenter A" (the object store) and "datacenter B" (the publisher's and
 * reader's side of this bench), limited to a rate (docs/benchmarks.md, bench remote).
 */
public interface LimitedLink extends Closeable {

    /** The address the store listens on inside datacenter A. */
    String storeHost();

    /** What to put before the store's command line so that it runs in datacenter A. */
    List<String> storeCommandPrefix();

    /** The host and port clients in datacenter B use to reach the store listening on {@code storePort}. */
    String clientAuthority(int storePort) throws java.io.IOException;

    /** The limited rate, bytes per second (each direction). */
    double bytesPerSecond();

    /** Bytes that crossed from datacenter A to datacenter B so far (what the cache tier saves). */
    long bytesToB() throws java.io.IOException;

    /** One line for the output: what limits the link and how. */
    String describe();
}
