package dev.stitch.sidecar;

import static dev.stitch.sidecar.Http.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stitch.cli.SidecarCommand;
import dev.stitch.cli.StitchCli;
import dev.stitch.refengine.ReferenceEngine;
import dev.stitch.sync.AwaitedVersion;
import dev.stitch.sync.SyncMetrics;
import dev.stitch.sync.SyncState;
import dev.stitch.testing.DirectoryHttpServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * A remote board whose pointer arrives before the version it names (docs/protocol/sync-and-engines.md §6.7), as
 * when a bucket replicates to the rollout region object by object: the trainer publishes to its own board
 * directory, and the directory an HTTP server shows the sidecar receives the trainer's files one step at a time,
 * {@code latest.json} first. The sidecar waits ({@code WAITING_FOR_ARRIVAL}, still ready on the version it
 * serves) and catches up once the files are there; past {@code --arrival-timeout-s} the wait is a sync error.
 */
class EventualArrivalTest {

    @TempDir
    Path tmp;
    private Path trainer;
    private Path served;
    private Path base;
    private DirectoryHttpServer http;
    private ReferenceEngine engine;
    private Sidecar sidecar;

    @BeforeEach
    void publishTwoVersionsAndReplicateThem() throws IOException {
        base = TinyModel.writeCheckpoint(tmp.resolve("base"), 0);
        trainer = tmp.resolve("trainer-board");
        assertEquals(0, cli("board", "init", "--board", trainer.toString(), "--run-id", "run-r"));
        for (int step = 1; step <= 2; step++) {
            publish(step);
        }
        served = tmp.resolve("replica-board");
        try (Stream<Path> all = Files.walk(trainer)) {
            for (Path p : all.filter(Files::isRegularFile).toList()) {
                replicate(trainer.relativize(p).toString());
            }
        }
        http = DirectoryHttpServer.serve(served);
    }

    @AfterEach
    void tearDown() {
        if (sidecar != null) {
            sidecar.close();
        }
        if (engine != null) {
            engine.close();
        }
        if (http != null) {
            http.close();
        }
    }

    @Test
    void aPointerAheadOfItsFilesIsWaitedForAndFollowedOnceTheyArriveWithoutAnError() throws Exception {
        startSidecar("600");
        publish(3);
        replicate("latest.json");
        assertTrue(eventually(30_000, () -> awaited() != null && awaited().version() == 3
                && sidecar.worker().status().state() == SyncState.WAITING_FOR_ARRIVAL), status());
        assertEquals("versions/weight_v000003/manifest.json", awaited().missingFile());

        Http.Reply health = Http.get(sidecar.port(), "/health");
        assertEquals(200, health.status(), "the served version stays ready: " + health.body());
        assertEquals(2, health.json().path("current_version").asLong());
        // between retries the state is WAITING_FOR_ARRIVAL; during one it is PREFETCHING
        assertTrue(eventually(30_000, () -> serverInfo().path("sync_state").asText().equals("WAITING_FOR_ARRIVAL")));
        JsonNode info = serverInfo();
        assertEquals(3, info.path("waiting_for_arrival").path("version").asLong(), info.toString());
        assertEquals("versions/weight_v000003/manifest.json", info.path("waiting_for_arrival").path("missing").asText());
        assertEquals(600.0, info.path("waiting_for_arrival").path("timeout_s").asDouble(), info.toString());
        assertTrue(info.path("last_sync_error").isNull(), info.toString());
        String metrics = Http.get(sidecar.port(), "/metrics").body();
        assertTrue(metricValue(metrics, "stitch_sync_arrival_waits_total") >= 1, metrics);
        assertTrue(metrics.contains("stitch_sync_arrival_wait_seconds "), metrics);

        // The manifest lands before the payload: the wait moves on to the artifact.
        replicate("versions/weight_v000003/manifest.json");
        assertTrue(eventually(30_000, () -> awaited() != null && !awaited().missingFile().endsWith("manifest.json")
                && sidecar.worker().status().state() == SyncState.WAITING_FOR_ARRIVAL), status());
        assertTrue(awaited().missingFile().startsWith("versions/weight_v000003/"), awaited().toString());
        assertEquals(2, sidecar.worker().status().currentVersion(), "nothing of version 3 was applied yet");

        replicateVersion(3);
        assertTrue(eventually(30_000, () -> sidecar.worker().status().currentVersion() == 3
                && sidecar.worker().status().state() == SyncState.IDLE), status());
        assertEquals(null, awaited());
        Http.Reply r = Http.post(sidecar.port(), "/generate", "{\"text\": \"hi\", \"sampling_params\": "
                + "{\"max_new_tokens\": 2}, \"weight_version\": {\"exact_version\": 3}}");
        assertEquals(TinyModel.digest(3), r.json().path("meta_info").path("weights_digest").asText());
        assertEquals(0, sidecar.worker().metrics().passes(SyncMetrics.PassOutcome.ERROR), "the wait never was an error");
        assertEquals(0, sidecar.worker().metrics().arrivalTimeouts());
        assertEquals(0, sidecar.worker().status().consecutiveErrors());
    }

    @Test
    void aVersionThatDoesNotArriveWithinTheTimeoutIsASyncErrorThatNamesTheMissingFile() throws Exception {
        startSidecar("1");
        publish(3);
        replicate("latest.json");
        assertTrue(eventually(30_000, () -> sidecar.worker().status().state() == SyncState.ERROR), status());
        String error = sidecar.worker().status().lastSyncError();
        assertTrue(error.startsWith("arrival_timeout: version 3 is named by the board pointer but "
                + "versions/weight_v000003/manifest.json has not arrived on " + http.uri() + " after "), error);
        assertTrue(sidecar.worker().metrics().arrivalWaits() >= 1, "it waited before giving up");
        assertEquals(1, sidecar.worker().metrics().arrivalTimeouts());
        // during a backoff retry the state is PREFETCHING, between retries ERROR
        assertTrue(eventually(30_000, () -> health().status() == 503
                && health().json().path("reason").asText().equals("sync_error")));
        assertEquals(2, sidecar.worker().status().currentVersion());

        // The files turn up after all: the error's backoff retry catches up.
        replicateVersion(3);
        assertTrue(eventually(30_000, () -> sidecar.worker().status().currentVersion() == 3
                && sidecar.worker().status().state() == SyncState.IDLE), status());
        assertEquals(200, Http.get(sidecar.port(), "/health").status());
    }

    private void startSidecar(String arrivalTimeoutS) throws Exception {
        engine = new ReferenceEngine(ReferenceEngine.Config.local(base)).start();
        CommandLine root = StitchCli.commandLine();
        root.parseArgs("sidecar", "--board", http.uri().toString(), "--upstream", engine.url(), "--mode", "host",
                "--local-checkpoint", tmp.resolve("local").toString(), "--base-checkpoint", base.toString(),
                "--port", "0", "--poll-interval-s", "0.2", "--backoff-initial-s", "0.05", "--backoff-max-s", "0.2",
                "--arrival-timeout-s", arrivalTimeoutS, "--cache-dir", tmp.resolve("cache").toString());
        SidecarCommand cmd = root.getSubcommands().get("sidecar").getCommand();
        sidecar = Sidecar.start(cmd.config(), "test");
        assertTrue(eventually(30_000, () -> sidecar.worker().status().currentVersion() == 2
                && sidecar.worker().status().state() == SyncState.IDLE), status());
    }

    private void publish(int step) throws IOException {
        Path ckpt = TinyModel.writeCheckpoint(tmp.resolve("step" + step), step);
        List<String> args = new ArrayList<>(List.of("publish", "--board", trainer.toString(), "--checkpoint",
                ckpt.toString()));
        if (step == 1) {
            args.addAll(List.of("--base", base.toString()));
        }
        assertEquals(0, cli(args.toArray(String[]::new)), "publish " + step);
    }

    /** Copies one file of the trainer's board to the served one, appearing at once as replication does. */
    private void replicate(String rel) throws IOException {
        Path to = served.resolve(rel);
        Files.createDirectories(to.getParent());
        Path temp = to.resolveSibling("." + to.getFileName() + ".replicating");
        Files.copy(trainer.resolve(rel), temp, StandardCopyOption.REPLACE_EXISTING);
        Files.move(temp, to, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private void replicateVersion(long version) throws IOException {
        Path dir = trainer.resolve(String.format("versions/weight_v%06d", version));
        try (Stream<Path> all = Files.walk(dir)) {
            for (Path p : all.filter(Files::isRegularFile).toList()) {
                replicate(trainer.relativize(p).toString());
            }
        }
    }

    private JsonNode serverInfo() {
        try {
            return Http.get(sidecar.port(), "/server_info").json();
        } catch (IOException | InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    private Http.Reply health() {
        try {
            return Http.get(sidecar.port(), "/health");
        } catch (IOException | InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    private AwaitedVersion awaited() {
        return sidecar.worker().status().awaiting();
    }

    private String status() {
        return sidecar == null ? "no sidecar" : sidecar.worker().status().toString();
    }

    private static int cli(String... args) {
        return StitchCli.commandLine().execute(args);
    }

    private static double metricValue(String metrics, String name) {
        for (String line : metrics.split("\n")) {
            if (line.startsWith(name + " ")) {
                return Double.parseDouble(line.substring(name.length() + 1).trim());
            }
        }
        throw new AssertionError(name + " is not in the metrics");
    }
}
