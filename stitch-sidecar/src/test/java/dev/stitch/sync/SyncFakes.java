package dev.stitch.sync;

import dev.stitch.apply.VersionStep;
import dev.stitch.protocol.Artifact;
import java.io.IOException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

/** In-memory board and recording engine for state-machine tests. */
final class SyncFakes {

    private SyncFakes() {
    }

    /**
     * A {@code sparse_delta} version whose transition files share {@code transitionBytes}; a positive
     * {@code fullBytes} also ships a full checkpoint (an anchor).
     */
    static VersionStep step(String run, long v, long base, Path dir, List<String> files, List<String> names,
                            long transitionBytes, long fullBytes) {
        Map<String, Artifact> arts = new LinkedHashMap<>();
        for (String f : files) {
            arts.put(f, new Artifact("transition", f, transitionBytes / files.size(), null, null));
        }
        if (fullBytes > 0) {
            arts.put("full/model.safetensors", new Artifact("full", "full/model.safetensors", fullBytes, null, null));
        }
        return new VersionStep(v, base, run, "sparse_delta", "delta", dir, files, names, arts, false);
    }

    /** A board held in memory; every read is counted and can be made to block. */
    static final class MemoryBoard implements SyncBoard {
        final Map<Long, VersionStep> versions = new ConcurrentHashMap<>();
        final Set<Long> corrupt = ConcurrentHashMap.newKeySet();
        final AtomicInteger pointerReads = new AtomicInteger();
        final AtomicInteger refreshes = new AtomicInteger();
        volatile Pointer pointer = new Pointer(null, 0);
        volatile CountDownLatch block;

        /** Publishes a delta version with {@code files} transition files touching {@code names}. */
        synchronized void publish(String run, long v, int files, List<String> names) {
            List<String> f = new ArrayList<>();
            for (int i = 0; i < files; i++) {
                f.add("rank0000_flush" + String.format("%06d", i) + ".safetensors");
            }
            versions.put(v, step(run, v, v - 1, Path.of("/board/v" + v), f, names, 100L * files, 0));
            pointer = new Pointer(run, v);
        }

        /** Publishes an anchor version (full checkpoint of {@code fullBytes}, plus a delta). */
        synchronized void publishAnchor(String run, long v, long fullBytes) {
            versions.put(v, step(run, v, v - 1, Path.of("/board/v" + v), List.of("rank0000_flush000000.safetensors"),
                    List.of("a"), 100, fullBytes));
            pointer = new Pointer(run, v);
        }

        @Override
        public String layout() {
            return "stitch";
        }

        @Override
        public void refresh() throws IOException {
            refreshes.incrementAndGet();
            awaitUnblocked();
        }

        @Override
        public Pointer readPointer() throws IOException {
            pointerReads.incrementAndGet();
            awaitUnblocked();
            return pointer;
        }

        @Override
        public VersionStep readVersion(long version) throws IOException {
            VersionStep pv = versions.get(version);
            if (pv == null) {
                throw new NoSuchFileException("/board/v" + version + "/manifest.json");
            }
            return pv;
        }

        @Override
        public Verification verify(VersionStep version, boolean includeFull, boolean requireChecksums)
                throws IOException {
            if (corrupt.contains(version.version()) && !includeFull) {
                throw new IOException("v" + version.version() + "/rank0000_flush000000.safetensors: digest mismatch");
            }
            return new Verification(includeFull ? version.fullBytes() : version.transitionBytes(), 0);
        }

        private void awaitUnblocked() {
            CountDownLatch b = block;
            if (b != null) {
                try {
                    b.await(30, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    /** An engine that records every call as a string event. */
    static final class RecordingEngine implements EngineAdapter {
        final List<String> events = new ArrayList<>();
        final List<SyncPlan> commits = new ArrayList<>();
        volatile AdmissionGate gate;
        volatile int failCommits;
        volatile CountDownLatch commitEntered;
        volatile CountDownLatch commitRelease;
        volatile Optional<String> label = Optional.empty();
        volatile BooleanSupplier healthy = () -> true;

        synchronized List<String> events() {
            return List.copyOf(events);
        }

        synchronized void clear() {
            events.clear();
            commits.clear();
        }

        private synchronized void record(String e) {
            events.add(e);
        }

        /** Events other than startup and idle probes. */
        synchronized List<String> engineCalls() {
            List<String> out = new ArrayList<>();
            for (String e : events) {
                if (!e.equals("prepare") && !e.equals("probe")) {
                    out.add(e);
                }
            }
            return out;
        }

        @Override
        public String name() {
            return "recording";
        }

        @Override
        public String mode() {
            return "engine";
        }

        @Override
        public void prepare() {
            record("prepare");
        }

        @Override
        public Set<String> supportedBackends() {
            return new HashSet<>(List.of("sparse_delta", "full", "fake"));
        }

        @Override
        public Map<String, Object> stage(SyncPlan plan) {
            record("stage:" + plan.from() + "->" + plan.target());
            return Map.of("staged", plan.versions().size());
        }

        @Override
        public Map<String, Object> commit(SyncPlan plan) throws Exception {
            CountDownLatch entered = commitEntered;
            if (entered != null) {
                entered.countDown();
            }
            CountDownLatch release = commitRelease;
            if (release != null) {
                release.await(30, TimeUnit.SECONDS);
            }
            synchronized (this) {
                events.add("commit:" + plan.kind().label() + ":" + plan.from() + "->" + plan.target());
                commits.add(plan);
            }
            if (failCommits > 0) {
                failCommits--;
                throw new IOException("engine returned 500");
            }
            return Map.of("reloads", 1);
        }

        @Override
        public void label(long version) {
            record("label:" + version);
        }

        @Override
        public void flush() {
            record("flush");
        }

        @Override
        public void pause(String mode) {
            record("pause:" + mode);
        }

        @Override
        public void resume() {
            AdmissionGate g = gate;
            record("resume@" + (g == null ? -1 : g.currentVersion()));
        }

        @Override
        public Map<String, Object> stageReset() {
            record("stageReset");
            return Map.of();
        }

        @Override
        public void reset() {
            record("reset");
        }

        @Override
        public void abort(String rid) {
            record("abort:" + rid);
        }

        @Override
        public boolean probe() {
            record("probe");
            return healthy.getAsBoolean();
        }

        @Override
        public Optional<EngineReport> report() {
            return healthy.getAsBoolean() ? Optional.of(new EngineReport(label.orElse(null), null, null))
                    : Optional.empty();
        }

        @Override
        public Optional<String> weightVersionLabel() {
            return label;
        }
    }

    /** Polls {@code condition} for up to {@code millis}. */
    static boolean eventually(long millis, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.currentTimeMillis() + millis;
        while (System.currentTimeMillis() < deadline) {
            if (condition.getAsBoolean()) {
                return true;
            }
            Thread.sleep(5);
        }
        return condition.getAsBoolean();
    }
}
