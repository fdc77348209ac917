package dev.stitch.engine;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.apply.RefusedVersionException;
import dev.stitch.apply.VersionStep;
import dev.stitch.sync.EngineReport;
import dev.stitch.format.DeltaFormat;
import dev.stitch.format.full.FullCheckpointWriter;
import dev.stitch.sync.SyncPlan;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * "engine" mode (docs/protocol/sync-and-engines.md §7.2): a patched SGLang with slime's delta receiver reads the
 * board itself; the sidecar sends one {@code update_weights_from_disk} per version, in order.
 */
final class SglangEngineAdapter extends SglangAdapter {

    private static final Logger LOG = LoggerFactory.getLogger(SglangEngineAdapter.class);
    static final String DELTA_RECEIVER_MESSAGE = "requires non-empty";

    private volatile Path baseCheckpoint;

    SglangEngineAdapter(SglangSettings settings) {
        super(settings);
        this.baseCheckpoint = settings.engineBaseCheckpointDir();
    }

    @Override
    public String mode() {
        return "engine";
    }

    @Override
    public Set<String> supportedBackends() {
        return Set.of(DeltaFormat.SPARSE_DELTA.id(), DeltaFormat.FULL.id());
    }

    /**
     * Reads the engine's base {@code model_path} (for resets) and checks the delta receiver with a
     * request it must refuse without touching weights: {@code load_format: "delta"} with no files.
     */
    @Override
    public void prepare() throws IOException {
        if (baseCheckpoint == null) {
            String modelPath = modelInfo().path("model_path").asText("");
            if (modelPath.isEmpty()) {
                throw new IOException("GET /model_info reports no model_path; set --engine-base-checkpoint");
            }
            baseCheckpoint = Path.of(modelPath);
            LOG.info("engine base checkpoint for resets: {} (from /model_info)", baseCheckpoint);
        }
        if (settings.probeDeltaReceiver()) {
            ObjectNode body = SglangClient.object();
            body.put("model_path", settings.engineBoardRoot().toString());
            body.set("files", body.arrayNode());
            body.put("load_format", "delta");
            body.put("flush_cache", false);
            SglangClient.Reply r = client.send("/update_weights_from_disk", body, Duration.ofSeconds(30));
            if (!r.body().contains(DELTA_RECEIVER_MESSAGE)) {
                throw new IOException("the engine at " + client.base() + " has no delta receiver (probe answered "
                        + r.status() + "); use --mode host or a patched SGLang");
            }
            LOG.info("engine accepts load_format=delta");
        }
    }

    /** A restarted engine that reports the base checkpoint and a base label serves version 0. */
    @Override
    public OptionalLong servedAfterRestart(EngineReport report, String runId) {
        if (samePath(report.modelPath(), baseCheckpoint) && baseLabel(report.weightVersion())) {
            return OptionalLong.of(0);
        }
        return OptionalLong.empty();
    }

    @Override
    public Map<String, Object> stage(SyncPlan plan) {
        return Map.of(); // the engine reads the board itself; nothing to prepare on the sidecar
    }

    /**
     * One reload per version, in order. A delta load the engine refuses (4xx or {@code success: false}),
     * or after which the engine reports other weights than the version's {@code metadata.weights_digest},
     * is a refused version (sync-and-engines.md 6.5): retrying the same delta cannot help, an anchor can.
     */
    @Override
    public Map<String, Object> commit(SyncPlan plan) throws IOException, RefusedVersionException {
        Map<String, Object> detail = new LinkedHashMap<>();
        int reloads = 0;
        int labels = 0;
        int digestChecks = 0;
        if (plan.anchor().isPresent()) {
            VersionStep a = plan.anchor().get();
            client.post("/update_weights_from_disk",
                    reloadBody(engineDirectory(a).resolve(FullCheckpointWriter.ANCHOR_DIR).toString(), "auto", a.version()));
            reloads++;
        }
        for (VersionStep v : plan.deltas()) {
            if (v.hasTransitionFiles()) {
                ObjectNode body = SglangClient.object();
                body.put("model_path", engineDirectory(v).toString());
                ArrayNode files = body.putArray("files");
                v.transitionFiles().forEach(files::add);
                body.put("load_format", "delta");
                body.put("weight_version", Long.toString(v.version()));
                body.put("flush_cache", false);
                try {
                    client.post("/update_weights_from_disk", body);
                } catch (SglangClient.Refused e) {
                    throw new RefusedVersionException(v.version(), RefusedVersionException.Reason.MALFORMED,
                            "the engine refused its load_format=delta load: " + e.getMessage(), e);
                }
                reloads++;
                String expected = plan.weightsDigests().get(v.version());
                if (expected != null && requireDigest(v.version(), expected)) {
                    digestChecks++;
                }
            } else {
                label(v.version());
                labels++;
            }
        }
        detail.put("reload_calls", reloads);
        detail.put("label_calls", labels);
        detail.put("digest_checks", digestChecks);
        return detail;
    }

    /**
     * The engine's {@code weights_digest} after a delta load must be the one the version records: a delta
     * built on other weights than the engine held applies without complaint and leaves weights nobody
     * published. Engines that report no digest (stock SGLang) are not checked.
     *
     * @return whether the engine reported a digest to compare
     */
    private boolean requireDigest(long version, String expected) throws IOException, RefusedVersionException {
        JsonNode reported = modelInfo().get("weights_digest");
        if (reported == null || reported.isNull()) {
            return false;
        }
        if (!expected.equals(reported.asText())) {
            throw new RefusedVersionException(version, RefusedVersionException.Reason.WRONG_BASE,
                    "after its delta load the engine reports weights " + reported.asText() + " where the manifest "
                            + "records " + expected + " (the delta was built on other weights than the engine held)");
        }
        return true;
    }

    @Override
    public void reset() throws IOException {
        client.post("/update_weights_from_disk", reloadBody(baseCheckpoint.toString(), "auto", 0));
    }

    /** The version directory as the engine sees it. */
    Path engineDirectory(VersionStep v) {
        Path dir = v.directory().toAbsolutePath().normalize();
        Path root = settings.boardRoot().toAbsolutePath().normalize();
        if (dir.startsWith(root)) {
            return settings.engineBoardRoot().resolve(root.relativize(dir).toString());
        }
        return dir;
    }
}
