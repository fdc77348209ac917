package dev.stitch.sidecar;

import static dev.stitch.sidecar.Http.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stitch.cli.SidecarCommand;
import dev.stitch.cli.StitchCli;
import dev.stitch.refengine.ReferenceEngine;
import dev.stitch.s3.testing.S3ProxyProcess;
import dev.stitch.testing.DirectoryHttpServer;
import dev.stitch.sync.SyncState;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * The remote-board path end to end from the CLI (docs/protocol/board.md §7): a real S3 server
 * (s3proxy), {@code stitch board init}, three {@code stitch publish --board s3://...}, {@code stitch
 * board verify}, and a host-mode sidecar with {@code --board s3://...} in front of the reference
 * engine serving the third version with the trainer's weights; then a stored object with one flipped
 * byte is refused before anything is applied, the engine stays on its version and readiness says why.
 * A board directory served by a plain HTTP server is followed the same way, read only.
 */
class RemoteBoardSidecarTest {
    private static final String BUCKET = "boards";
    private static final String BOARD = "s3://" + BUCKET + "/run-a";

    @TempDir
    Path tmp;
    private S3ProxyProcess s3;
    private ReferenceEngine engine;
    private Sidecar sidecar;

    @AfterEach
    void tearDown() {
        if (sidecar != null) {
            sidecar.close();
        }
        if (engine != null) {
            engine.close();
        }
        if (s3 != null) {
            s3.close();
        }
    }

    private record Run(int code, String out, String err) {
    }

    private Run cli(String... args) {
        List<String> all = new ArrayList<>(List.of(args));
        all.addAll(List.of("--s3-endpoint", s3.endpoint().toString(), "--s3-path-style", "--part-size", "5m"));
        return cliLocal(all.toArray(String[]::new));
    }

    private static void ok(Run r) {
        okLocal(r);
    }

    @Test
    void cliPublishesToS3AndASidecarServesTheThirdVersionThenRefusesACorruptFourth() throws Exception {
        s3 = S3ProxyProcess.start();
        s3.createBucket(BUCKET);
        Path base = TinyModel.writeCheckpoint(tmp.resolve("base"), 0);
        Path publishCache = tmp.resolve("publish-cache");
        ok(cli("board", "init", "--board", BOARD, "--run-id", "run-a"));
        for (int step = 1; step <= 3; step++) {
            Path ckpt = TinyModel.writeCheckpoint(tmp.resolve("step" + step), step);
            List<String> args = new ArrayList<>(List.of("publish", "--board", BOARD, "--checkpoint", ckpt.toString(),
                    "--cache-dir", publishCache.toString()));
            if (step == 1) {
                args.addAll(List.of("--base", base.toString()));
            }
            ok(cli(args.toArray(String[]::new)));
        }
        Run verify = cli("board", "verify", "--board", BOARD, "--cache-dir", tmp.resolve("verify-cache").toString());
        ok(verify);
        assertTrue(verify.out().contains("ok: versions 1..3"), verify.out());
        Run show = cli("board", "show", "--board", BOARD, "--cache-dir", tmp.resolve("show-cache").toString());
        ok(show);
        assertTrue(show.out().contains("latest run 'run-a', version 3"), show.out());

        engine = new ReferenceEngine(ReferenceEngine.Config.local(base)).start();
        Path local = tmp.resolve("local");
        CommandLine root = StitchCli.commandLine();
        root.parseArgs("sidecar", "--board", BOARD, "--upstream", engine.url(), "--mode", "host",
                "--local-checkpoint", local.toString(), "--base-checkpoint", base.toString(), "--port", "0",
                "--poll-interval-s", "0", "--backoff-initial-s", "0.1", "--backoff-max-s", "0.3",
                "--cache-dir", tmp.resolve("sidecar-cache").toString(), "--part-size", "5m",
                "--s3-endpoint", s3.endpoint().toString(), "--s3-path-style");
        SidecarCommand cmd = root.getSubcommands().get("sidecar").getCommand();
        sidecar = Sidecar.start(cmd.config(), "test");
        assertTrue(eventually(30_000, () -> sidecar.worker().status().state() == SyncState.IDLE
                && sidecar.worker().status().currentVersion() == 3), sidecar.worker().status().toString());
        Http.Reply r = Http.post(sidecar.port(), "/generate", "{\"text\": \"hi\", \"sampling_params\": "
                + "{\"max_new_tokens\": 2}, \"weight_version\": {\"exact_version\": 3}}");
        assertEquals(200, r.status(), r.body());
        JsonNode body = r.json();
        assertEquals(TinyModel.digest(3), body.path("meta_info").path("weights_digest").asText(),
                "the engine serves exactly the trainer's third checkpoint");
        String metrics = Http.get(sidecar.port(), "/metrics").body();
        assertTrue(metrics.contains("stitch_board_polls_not_modified_total"), metrics);
        assertTrue(metricValue(metrics, "stitch_fetch_bytes_total") > 0, metrics);

        // Version 4 is published, then one byte of its delta is flipped on the store.
        Path ckpt4 = TinyModel.writeCheckpoint(tmp.resolve("step4"), 4);
        ok(cli("publish", "--board", BOARD, "--checkpoint", ckpt4.toString(), "--cache-dir", publishCache.toString()));
        flipOneByteOfADelta(4);
        // polling is off, so the sidecar first sees version 4 now, corrupt
        assertEquals(200, Http.post(sidecar.port(), "/rpc_sync_from_bulletin_board", "").status());
        assertTrue(eventually(30_000, () -> {
            String e = sidecar.worker().status().lastSyncError();
            return e != null && e.contains("digest mismatch");
        }), sidecar.worker().status().toString());
        assertEquals(3, sidecar.worker().status().currentVersion(), "nothing of the corrupt version was applied");
        Http.Reply pinned = Http.post(sidecar.port(), "/generate", "{\"text\": \"hi\", \"sampling_params\": "
                + "{\"max_new_tokens\": 2}, \"weight_version\": {\"exact_version\": 3}}");
        assertEquals(TinyModel.digest(3), pinned.json().path("meta_info").path("weights_digest").asText());
        Http.Reply info = Http.get(sidecar.port(), "/server_info");
        assertTrue(info.body().contains("digest mismatch"), info.body());
        assertTrue(metricValue(Http.get(sidecar.port(), "/metrics").body(), "stitch_fetch_verification_failures_total") >= 1);
    }

    @Test
    void aSidecarFollowsAnHttpBoardServedFromADirectory() throws Exception {
        Path base = TinyModel.writeCheckpoint(tmp.resolve("base"), 0);
        Path boardDir = tmp.resolve("board");
        okLocal(cliLocal("board", "init", "--board", boardDir.toString(), "--run-id", "run-h"));
        for (int step = 1; step <= 2; step++) {
            Path ckpt = TinyModel.writeCheckpoint(tmp.resolve("step" + step), step);
            List<String> args = new ArrayList<>(List.of("publish", "--board", boardDir.toString(), "--checkpoint", ckpt.toString()));
            if (step == 1) {
                args.addAll(List.of("--base", base.toString()));
            }
            okLocal(cliLocal(args.toArray(String[]::new)));
        }
        try (DirectoryHttpServer http = DirectoryHttpServer.serve(boardDir)) {
            engine = new ReferenceEngine(ReferenceEngine.Config.local(base)).start();
            CommandLine root = StitchCli.commandLine();
            root.parseArgs("sidecar", "--board", http.uri().toString(), "--upstream", engine.url(), "--mode", "host",
                    "--local-checkpoint", tmp.resolve("local").toString(), "--base-checkpoint", base.toString(),
                    "--port", "0", "--poll-interval-s", "0.2", "--cache-dir", tmp.resolve("http-cache").toString());
            SidecarCommand cmd = root.getSubcommands().get("sidecar").getCommand();
            sidecar = Sidecar.start(cmd.config(), "test");
            assertTrue(eventually(30_000, () -> sidecar.worker().status().currentVersion() == 2),
                    sidecar.worker().status().toString());
            Http.Reply r = Http.post(sidecar.port(), "/generate", "{\"text\": \"hi\", \"sampling_params\": "
                    + "{\"max_new_tokens\": 2}, \"weight_version\": {\"exact_version\": 2}}");
            assertEquals(TinyModel.digest(2), r.json().path("meta_info").path("weights_digest").asText());
            // polling an unchanged board costs the server 304s, not documents
            int before = http.requests();
            assertTrue(eventually(10_000, () -> http.requests() >= before + 3));
            String metrics = Http.get(sidecar.port(), "/metrics").body();
            assertTrue(metricValue(metrics, "stitch_board_polls_not_modified_total") >= 2, metrics);
        }
    }

    private static Run cliLocal(String... args) {
        dev.stitch.cli.CliRun.Result r = dev.stitch.cli.CliRun.run(args);
        return new Run(r.code(), r.out(), r.err());
    }

    private static void okLocal(Run r) {
        assertEquals(0, r.code(), r.out() + r.err());
    }

    private void flipOneByteOfADelta(long version) {
        S3Client client = s3.client();
        String prefix = "run-a/versions/weight_v" + String.format("%06d", version) + "/";
        String key = client.listObjectsV2(b -> b.bucket(BUCKET).prefix(prefix)).contents().stream()
                .map(o -> o.key()).filter(k -> !k.endsWith("manifest.json")).findFirst().orElseThrow();
        byte[] bytes = client.getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asByteArray();
        bytes[bytes.length / 2] ^= 0x01;
        client.putObject(b -> b.bucket(BUCKET).key(key).contentType("application/octet-stream"), RequestBody.fromBytes(bytes));
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
