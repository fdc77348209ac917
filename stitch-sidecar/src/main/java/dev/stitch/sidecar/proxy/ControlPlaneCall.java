package dev.stitch.sidecar.proxy;

import dev.stitch.sidecar.proxy.SidecarEndpoints.EndpointResponse;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * Calls the control plane for a sidecar-owned route (docs/protocol/sidecar-http.md §5). The call runs on an
 * executor of its own because the control plane may wait for its locks, which an event loop must not.
 */
final class ControlPlaneCall {

    /** The state stream's route name (sidecar-http.md §5.1). */
    static final String STATE_STREAM = "stitch/state";

    private ControlPlaneCall() {
    }

    /**
     * Starts the call for {@code route}, one of {@link ProxyServer#SIDECAR_ROUTES}.
     *
     * @param query the request target's query string, or null
     * @param body the request body, handed to {@code rpc_sync_from_bulletin_board} only
     */
    static CompletableFuture<EndpointResponse> call(SidecarEndpoints endpoints, String route, String query,
                                                    byte[] body, Executor executor) {
        if (route.equals(STATE_STREAM)) {
            // A long poll parks no thread: the control plane completes the future when the state changes.
            return endpoints.stateStream(query);
        }
        return CompletableFuture.supplyAsync(() -> switch (route) {
            case "health" -> endpoints.health();
            case "server_info" -> endpoints.serverInfo();
            case "get_weight_version" -> endpoints.weightVersion();
            case "rpc_sync_from_bulletin_board" -> endpoints.rpcSync(body);
            case "wake" -> endpoints.wake();
            default -> endpoints.metrics();
        }, executor);
    }

    /** The 500 {@code InternalError} answer when the control plane failed or answered nothing. */
    static EndpointResponse failure(String route) {
        byte[] body = ("{\"error\":{\"type\":\"InternalError\",\"message\":"
                + new String(JsonObjectEditor.quote("/" + route + " failed"), StandardCharsets.UTF_8)
                + "}}").getBytes(StandardCharsets.UTF_8);
        return EndpointResponse.json(500, body);
    }
}
