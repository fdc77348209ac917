package dev.stitch.sidecar.proxy;

import dev.stitch.relay.UpstreamPool;
import dev.stitch.sync.AdmissionControl;
import java.util.concurrent.ExecutorService;

/** What every connection of one {@link ProxyServer} shares: settings, collaborators, counters. */
final class ProxyContext {
    final ProxyServer.Config config;
    final RouteTable routes;
    final AdmissionControl admission;
    final SidecarEndpoints endpoints;
    final ProxyStats stats;
    final UpstreamPool pool;
    final ExecutorService endpointExecutor;
    final ControlAccess controlAccess;

    ProxyContext(ProxyServer.Config config, AdmissionControl admission, SidecarEndpoints endpoints, ProxyStats stats,
                 UpstreamPool pool, ExecutorService endpointExecutor) {
        this.config = config;
        this.routes = new RouteTable(config.versionedRoutes());
        this.admission = admission;
        this.endpoints = endpoints;
        this.stats = stats;
        this.pool = pool;
        this.endpointExecutor = endpointExecutor;
        this.controlAccess = new ControlAccess(config.control(), System::nanoTime);
    }
}
