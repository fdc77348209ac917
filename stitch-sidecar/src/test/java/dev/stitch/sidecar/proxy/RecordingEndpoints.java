package dev.stitch.sidecar.proxy;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/** Test double of the control plane: fixed answers, and a record of wake hints. */
final class RecordingEndpoints implements SidecarEndpoints {
    final List<Long> hints = new CopyOnWriteArrayList<>();
    final List<String> called = new CopyOnWriteArrayList<>();
    final List<String> suspicions = new CopyOnWriteArrayList<>();

    private static EndpointResponse ok(String body) {
        return EndpointResponse.json(200, body.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public EndpointResponse health() {
        called.add("health");
        return ok("{\"ok\":true}");
    }

    @Override
    public EndpointResponse serverInfo() {
        called.add("server_info");
        return ok("{\"current_version\":3}");
    }

    @Override
    public EndpointResponse weightVersion() {
        called.add("get_weight_version");
        return ok("{\"weight_version\":\"3\"}");
    }

    @Override
    public EndpointResponse rpcSync(byte[] body) {
        called.add("rpc_sync_from_bulletin_board:" + new String(body, StandardCharsets.UTF_8));
        return ok("{\"accepted\":true}");
    }

    @Override
    public EndpointResponse wake() {
        called.add("wake");
        return ok("{\"current_version\":3}");
    }

    @Override
    public EndpointResponse metrics() {
        called.add("metrics");
        return new EndpointResponse(200, "text/plain; version=0.0.4; charset=utf-8",
                "stitch_ready 1\n".getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public void notReady(long targetVersion) {
        hints.add(targetVersion);
    }

    @Override
    public void engineSuspect(String detail) {
        suspicions.add(detail);
    }
}
