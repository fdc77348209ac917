package dev.stitch.sidecar.proxy;

/**
 * The sidecar-owned routes (docs/protocol/sidecar-http.md §5), answered by the control plane; the data plane
 * routes to them without touching the admission gate. Implementations must not block on board I/O.
 */
public interface SidecarEndpoints {

    /** {@code GET /health}: readiness. */
    EndpointResponse health();

    /** {@code GET /server_info}. */
    EndpointResponse serverInfo();

    /** {@code GET /get_weight_version}. */
    EndpointResponse weightVersion();

    /** {@code POST /rpc_sync_from_bulletin_board}; {@code body} may be empty. */
    EndpointResponse rpcSync(byte[] body);

    /** {@code POST /wake}. */
    EndpointResponse wake();

    /** {@code GET /metrics}: Prometheus text, including the data plane's counters from {@code proxyStats}. */
    EndpointResponse metrics();

    /**
     * {@code GET /stitch/state?after=&timeout_ms=}: the state stream for routers (sidecar-http.md §5.1). The
     * future may complete much later (a long poll) and on any thread; the caller must not wait for it.
     *
     * @param query the raw query string, or null
     */
    default java.util.concurrent.CompletableFuture<EndpointResponse> stateStream(String query) {
        return java.util.concurrent.CompletableFuture.completedFuture(EndpointResponse.json(404,
                "{\"error\":{\"type\":\"NotFound\",\"message\":\"no state stream\"}}"
                        .getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    }

    /** Called by the data plane for every 409 NotReady, with the target version as the wake hint. */
    void notReady(long targetVersion);

    /**
     * Called by the data plane when the engine labels a response with weights the sidecar did not commit
     * for the admitted version (sidecar-http.md 4.5): the engine is probed at once. Must not block.
     */
    void engineSuspect(String detail);

    /** A complete response of a sidecar-owned route. */
    record EndpointResponse(int status, String contentType, byte[] body) {
        public static EndpointResponse json(int status, byte[] body) {
            return new EndpointResponse(status, "application/json", body);
        }
    }
}
