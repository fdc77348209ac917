package dev.stitch.sidecar.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.sync.SyncState;
import dev.stitch.sync.SyncStatus;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.OptionalLong;
import java.util.Set;

/**
 * The body of {@code GET /stitch/state} and what counts as a change of it (docs/protocol/sidecar-http.md §5.1).
 */
final class ReplicaStateBody {

    /** The longest a state-stream request waits for a change. */
    static final long MAX_TIMEOUT_MS = 30_000;
    /** The wait when {@code timeout_ms} is absent. */
    static final long DEFAULT_TIMEOUT_MS = 30_000;

    private ReplicaStateBody() {
    }

    /** The query of one state-stream request: {@code after} (absent: answer at once) and the capped wait. */
    record Query(OptionalLong after, long timeoutMillis) {

        static Query parse(String query) {
            OptionalLong after = OptionalLong.empty();
            long timeout = DEFAULT_TIMEOUT_MS;
            if (query != null && !query.isEmpty()) {
                for (String pair : query.split("&")) {
                    if (pair.isEmpty()) {
                        continue;
                    }
                    int eq = pair.indexOf('=');
                    String name = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
                    String value = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
                    switch (name) {
                        case "after" -> after = OptionalLong.of(number(name, value));
                        case "timeout_ms" -> timeout = Math.min(Math.max(number(name, value), 0), MAX_TIMEOUT_MS);
                        default -> {
                            // unknown parameters are ignored, as a router newer than this sidecar may send more
                        }
                    }
                }
            }
            return new Query(after, timeout);
        }

        private static long number(String name, String value) {
            try {
                return Long.parseLong(value.strip());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(name + " must be an integer, not '" + value + "'");
            }
        }
    }

    /** The shortest time between two state answers caused by load alone (sidecar-http.md §5.1). */
    static final long LOAD_INTERVAL_MS = 100;

    /** What of a status is a change the stream answers at once: everything the body shows except load. */
    static Object changeKey(SyncStatus s) {
        return List.of(String.valueOf(s.currentRunId()), s.currentVersion(), s.latestSeenVersion(),
                s.state().name(), s.ready(), s.admission(), committing(s));
    }

    /**
     * What of a status is load: of the in-flight counts only the crossings of zero (the first request in
     * flight, the last one done, per exact version), answered at most every {@link #LOAD_INTERVAL_MS}, so that
     * a busy replica does not wake every router on every request.
     */
    static Object loadKey(SyncStatus s) {
        return List.of(s.activeRequests() > 0, Set.copyOf(s.inflightExactVersions().keySet()));
    }

    /** True from the moment the gate closes for a commit until it reopens. */
    static boolean committing(SyncStatus s) {
        return !"open".equals(s.admission()) || s.state() == SyncState.COMMITTING;
    }

    static ObjectNode of(long seq, SyncStatus s, ObjectMapper json) {
        ObjectNode n = json.createObjectNode();
        n.put("seq", seq);
        n.put("run_id", s.currentRunId());
        n.put("served_version", s.currentVersion());
        n.put("latest_seen_version", s.latestSeenVersion());
        n.put("state", s.state().name());
        n.put("ready", s.ready());
        n.put("admission", s.admission());
        n.put("active_requests", s.activeRequests());
        ObjectNode exact = n.putObject("inflight_exact_versions");
        s.inflightExactVersions().forEach((v, c) -> exact.put(Long.toString(v), c));
        n.put("committing", committing(s));
        return n;
    }
}
