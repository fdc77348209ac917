package dev.stitch.engine;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.stitch.apply.ApplyProgress;
import dev.stitch.apply.ApplyResult;
import dev.stitch.apply.HostApplier;
import dev.stitch.apply.HostState;
import dev.stitch.apply.HostStateFile;
import dev.stitch.apply.RefusedVersionException;
import dev.stitch.apply.VersionStep;
import dev.stitch.sync.EngineReport;
import dev.stitch.format.DeltaFormat;
import dev.stitch.sync.SyncPlan;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * "host" mode (docs/protocol/sync-and-engines.md §7.3): stock SGLang reloads a local checkpoint that the sidecar
 * keeps current with the host applier. Staging applies the whole path to the local copy while the
 * engine keeps serving from memory; the commit is one reload of that directory.
 */
final class SglangHostAdapter extends SglangAdapter {

    private static final Logger LOG = LoggerFactory.getLogger(SglangHostAdapter.class);

    private final Path local;
    private final Path base;
    private volatile String baseFingerprint;

    SglangHostAdapter(SglangSettings settings) {
        super(settings);
        this.local = Objects.requireNonNull(settings.localCheckpointDir(), "host mode needs a local checkpoint");
        this.base = Objects.requireNonNull(settings.baseCheckpointDir(), "host mode needs a base checkpoint");
    }

    @Override
    public String mode() {
        return "host";
    }

    @Override
    public Set<String> supportedBackends() {
        return DeltaFormat.all().stream().map(DeltaFormat::id).collect(Collectors.toSet());
    }

    /**
     * Materializes the local checkpoint: a copy of the base, skipped when the state file is clean and
     * was made from this very base (same fingerprint).
     */
    @Override
    public void prepare() throws IOException {
        if (!Files.isDirectory(base)) {
            throw new IOException("base checkpoint " + base + " is not a directory");
        }
        Files.createDirectories(local);
        baseFingerprint = HostApplier.fingerprint(base);
        try (HostApplier applier = HostApplier.open(local)) {
            HostState s = applier.state();
            String why = rebuildReason(s, hasWeights());
            if (why == null) {
                LOG.info("local checkpoint {} is at version {} (run {}), made from base {}", local, s.version(),
                        s.runId(), base);
                return;
            }
            LOG.info("copying base checkpoint {} to {}: {}", base, local, why);
            long t0 = System.nanoTime();
            if (hasWeights()) {
                applier.rebuildFrom(base);
            } else {
                copyBaseInParallel(); // first materialization: shards copied concurrently
            }
            LOG.info("local checkpoint ready in {} s", String.format(Locale.ROOT, "%.3f",
                    (System.nanoTime() - t0) / 1e9));
        }
    }

    /**
     * Copies every file of the base into the empty local directory, several shards at a time, under the
     * applier's lock (held by the caller); the {@code applying} marker brackets the copy so that a crash
     * midway is rebuilt on the next start.
     */
    private void copyBaseInParallel() throws IOException {
        HostStateFile stateFile = HostStateFile.of(local);
        stateFile.write(HostState.base().withApplying(0L));
        List<Path> files;
        try (var list = Files.list(base)) {
            files = list.filter(Files::isRegularFile).filter(p -> !p.getFileName().toString().startsWith("."))
                    .sorted().toList();
        }
        int threads = Math.max(1, Math.min(files.size(), Math.min(4, Runtime.getRuntime().availableProcessors())));
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<Long>> copies = new ArrayList<>();
            for (Path src : files) {
                copies.add(pool.submit(() -> copyDurably(src, local.resolve(src.getFileName().toString()))));
            }
            long bytes = 0;
            for (Future<Long> f : copies) {
                bytes += f.get();
            }
            LOG.info("copied {} file(s), {} bytes, with {} thread(s)", files.size(), bytes, threads);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            throw cause instanceof IOException io ? io : new IOException("copying the base failed: " + cause, cause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while copying the base", e);
        } finally {
            pool.shutdownNow();
        }
        stateFile.write(new HostState(0, null, null, HostState.currentBootId(), baseFingerprint, Map.of()));
    }

    /** Copies {@code src} to a temporary name beside {@code dst}, syncs it and renames it into place. */
    private static long copyDurably(Path src, Path dst) throws IOException {
        Path tmp = dst.resolveSibling("." + dst.getFileName() + "." + Long.toHexString(System.nanoTime()) + ".tmp");
        try (FileChannel in = FileChannel.open(src);
             FileChannel out = FileChannel.open(tmp,
                     StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            long size = in.size();
            long pos = 0;
            while (pos < size) {
                long n = in.transferTo(pos, size - pos, out);
                if (n <= 0) {
                    throw new IOException("short read copying " + src);
                }
                pos += n;
            }
            out.force(true);
            if (out.size() != size) {
                throw new IOException("copy of " + src + " has " + out.size() + " bytes, expected " + size);
            }
            Files.move(tmp, dst, StandardCopyOption.ATOMIC_MOVE,
                    StandardCopyOption.REPLACE_EXISTING);
            return size;
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /** Why the local copy cannot be used as is, or null. */
    private String rebuildReason(HostState s, boolean weightsPresent) {
        if (!weightsPresent) {
            return "it holds no weights yet";
        }
        if (s.dirtyReason() != null) {
            return s.dirtyReason();
        }
        if (s.baseFingerprint() != null && !s.baseFingerprint().equals(baseFingerprint)) {
            return "it was made from a different base (fingerprint " + s.baseFingerprint() + ")";
        }
        if (s.version() == 0 && s.baseFingerprint() == null) {
            return "its origin is unknown";
        }
        return null;
    }

    private boolean hasWeights() throws IOException {
        try (var files = Files.list(local)) {
            return files.anyMatch(p -> p.getFileName().toString().endsWith(".safetensors"));
        }
    }

    @Override
    public long planFrom(long served, String runId, long latest) throws IOException {
        HostState s = HostStateFile.of(local).read();
        if (s.dirtyReason() != null || s.version() > latest
                || (s.runId() != null && !s.runId().equals(runId) && s.version() > 0)) {
            return 0; // stage rebuilds from the base first
        }
        return s.version();
    }

    /**
     * A restarted engine loaded what it was started with: the base is version 0; the local checkpoint is
     * the version its clean {@code state.json} names (7.3), provided the engine's label agrees with it.
     */
    @Override
    public OptionalLong servedAfterRestart(EngineReport report, String runId) throws IOException {
        if (samePath(report.modelPath(), base) && baseLabel(report.weightVersion())) {
            return OptionalLong.of(0);
        }
        if (samePath(report.modelPath(), local)) {
            HostState s = HostStateFile.of(local).read();
            boolean sameRun = s.runId() == null || s.version() == 0 || s.runId().equals(runId);
            boolean labelAgrees = "default".equals(report.weightVersion())
                    || Long.toString(s.version()).equals(report.weightVersion());
            if (s.dirtyReason() == null && sameRun && labelAgrees) {
                return OptionalLong.of(s.version());
            }
        }
        return OptionalLong.empty();
    }

    @Override
    public Map<String, Object> stage(SyncPlan plan) throws IOException {
        long t0 = System.nanoTime();
        Map<String, Object> detail = new LinkedHashMap<>();
        try (HostApplier applier = HostApplier.open(local)) {
            HostState s = applier.state();
            boolean anchored = plan.anchor().isPresent();
            boolean offPath = s.version() != plan.from()
                    || (s.runId() != null && plan.runId() != null && !s.runId().equals(plan.runId()) && s.version() > 0);
            if (!anchored && (s.dirtyReason() != null || offPath)) {
                if (plan.from() != 0) {
                    throw new IOException("local checkpoint is at version " + s.version() + " but the plan starts at "
                            + plan.from() + "; it will be rebuilt on the next pass");
                }
                String why = s.dirtyReason() != null ? s.dirtyReason() : "it is at version " + s.version()
                        + (s.runId() == null ? "" : " of run " + s.runId());
                LOG.info("rebuilding local checkpoint from {} before applying: {}", base, why);
                applier.rebuildFrom(base);
                detail.put("rebuilt_from_base", true);
            }
            List<VersionStep> chain = new ArrayList<>();
            plan.anchor().ifPresent(a -> chain.add(a.asAnchorLoad().inRun(plan.runId())));
            for (VersionStep v : plan.deltas()) {
                chain.add(v.inRun(plan.runId()));
            }
            ApplyResult r;
            try {
                r = applier.apply(chain, ApplyProgress.NONE);
            } catch (RefusedVersionException e) {
                throw new IOException("host apply refused version " + e.version() + " (" + e.reason() + "): "
                        + e.getMessage(), e);
            }
            detail.put("local_from", r.fromVersion());
            detail.put("local_to", r.toVersion());
            detail.put("applied_versions", r.applied());
            detail.put("skipped_versions", r.skipped());
            detail.put("bytes_written", r.bytesWritten());
            if (!r.unknownTensorNames().isEmpty()) {
                detail.put("unknown_tensor_names", r.unknownTensorNames().size());
            }
            if (r.toVersion() != plan.target()) {
                throw new IOException("local checkpoint reached version " + r.toVersion() + ", not " + plan.target());
            }
        }
        detail.put("apply_s", (System.nanoTime() - t0) / 1e9);
        return detail;
    }

    /** One reload of the local directory for the whole path. */
    @Override
    public Map<String, Object> commit(SyncPlan plan) throws IOException {
        ObjectNode body = reloadBody(local.toString(), null, plan.target());
        if (settings.partialReload() && plan.weightsKnown() && plan.anchor().isEmpty()) {
            ArrayNode names = body.putArray("weight_names");
            new TreeSet<>(plan.touchedWeights()).forEach(names::add);
        }
        client.post("/update_weights_from_disk", body);
        return Map.of("reload_calls", 1);
    }

    /** Rebuilds the local copy from the base outside the gate; {@link #reset()} then reloads it. */
    @Override
    public Map<String, Object> stageReset() throws IOException {
        long t0 = System.nanoTime();
        try (HostApplier applier = HostApplier.open(local)) {
            applier.rebuildFrom(base);
        }
        return Map.of("rebuilt_from_base", true, "rebuild_s", (System.nanoTime() - t0) / 1e9);
    }

    @Override
    public void reset() throws IOException {
        client.post("/update_weights_from_disk", reloadBody(local.toString(), null, 0));
    }
}
