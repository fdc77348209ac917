package dev.stitch.sidecar;

import static dev.stitch.sidecar.Http.eventually;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.stitch.cli.SidecarCommand;
import dev.stitch.cli.StitchCli;
import dev.stitch.refengine.ReferenceEngine;
import dev.stitch.sync.SyncMetrics;
import dev.stitch.sync.SyncState;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code stitch publish --notify} (docs/protocol/board.md §7.7): three host-mode sidecars that never poll
 * learn of a new version only from the publisher's wake, all three from one publish; a wrong token is refused
 * by every sidecar with 401, which the publish reports as failed notifications while the version is
 * published all the same.
 */
class PublishNotifyTest {
    private static final int HOSTS = 3;

    @TempDir
    Path tmp;
    private final List<ReferenceEngine> engines = new ArrayList<>();
    private final List<Sidecar> sidecars = new ArrayList<>();

    @AfterEach
    void tearDown() {
        sidecars.forEach(Sidecar::close);
        engines.forEach(ReferenceEngine::close);
    }

    private record Run(int code, String out, String err) {
    }

    @Test
    void onePublishWakesEverySidecarAndAWrongTokenIsCountedNotFatal() throws Exception {
        Path base = TinyModel.writeCheckpoint(tmp.resolve("base"), 0);
        Path board = tmp.resolve("board");
        assertEquals(0, cli("board", "init", "--board", board.toString(), "--run-id", "run-n").code());
        assertEquals(0, publish(board, 1, List.of("--base", base.toString())).code());
        Path token = Files.writeString(tmp.resolve("token"), "fleet-token\n");
        Path wrong = Files.writeString(tmp.resolve("wrong-token"), "stale-token\n");
        for (int i = 0; i < HOSTS; i++) {
            ReferenceEngine engine = new ReferenceEngine(ReferenceEngine.Config.local(base)).start();
            engines.add(engine);
            CommandLine root = StitchCli.commandLine();
            root.parseArgs("sidecar", "--board", board.toString(), "--upstream", engine.url(), "--mode", "host",
                    "--local-checkpoint", tmp.resolve("local-" + i).toString(), "--base-checkpoint", base.toString(),
                    "--port", "0", "--poll-interval-s", "0", "--control-token-file", token.toString());
            SidecarCommand cmd = root.getSubcommands().get("sidecar").getCommand();
            sidecars.add(Sidecar.start(cmd.config(), "test"));
        }
        for (Sidecar s : sidecars) {
            assertTrue(eventually(30_000, () -> s.worker().status().currentVersion() == 1
                    && s.worker().status().state() == SyncState.IDLE), s.worker().status().toString());
        }
        String urls = sidecars.stream().map(s -> "http://127.0.0.1:" + s.port()).collect(Collectors.joining(","));

        // Polling is off: only the publisher's wake can start the pass that applies version 2.
        Run woke = publish(board, 2, List.of("--notify", urls, "--notify-token-file", token.toString(), "--json"));
        assertEquals(0, woke.code(), woke.err());
        JsonNode result = Http.JSON.readTree(woke.out());
        assertEquals(HOSTS, result.path("notified").asInt(), woke.out());
        assertEquals(0, result.path("notify_failed").asInt(), woke.out());
        for (Sidecar s : sidecars) {
            assertTrue(eventually(30_000, () -> s.worker().status().currentVersion() == 2
                    && s.worker().status().state() == SyncState.IDLE), s.worker().status().toString());
            assertEquals(2, s.worker().status().wantedVersion(), "the wake carried the published version as its hint");
            Http.Reply r = Http.post(s.port(), "/generate", "{\"text\": \"hi\", \"sampling_params\": "
                    + "{\"max_new_tokens\": 2}, \"weight_version\": {\"exact_version\": 2}}");
            assertEquals(TinyModel.digest(2), r.json().path("meta_info").path("weights_digest").asText());
        }

        List<Long> passesBefore = sidecars.stream().map(PublishNotifyTest::passes).toList();
        Run refused = publish(board, 3, List.of("--notify", urls, "--notify-token-file", wrong.toString()));
        assertEquals(0, refused.code(), "a failed notification never fails the publish: " + refused.err());
        assertTrue(refused.out().contains("published version 3"), refused.out());
        assertTrue(refused.out().contains("notified 0 of 3 rollout hosts; failed: "), refused.out());
        assertEquals(HOSTS, refused.out().split("HTTP 401", -1).length - 1, refused.out());
        for (int i = 0; i < HOSTS; i++) {
            Sidecar s = sidecars.get(i);
            assertEquals(passesBefore.get(i), passes(s), "a refused wake starts no pass");
            assertEquals(2, s.worker().status().currentVersion());
        }
    }

    private static long passes(Sidecar s) {
        SyncMetrics m = s.worker().metrics();
        return m.passes(SyncMetrics.PassOutcome.OK) + m.passes(SyncMetrics.PassOutcome.NOOP)
                + m.passes(SyncMetrics.PassOutcome.ERROR);
    }

    private Run publish(Path board, int step, List<String> extra) throws IOException {
        Path ckpt = TinyModel.writeCheckpoint(tmp.resolve("step" + step), step);
        List<String> args = new ArrayList<>(List.of("publish", "--board", board.toString(), "--checkpoint",
                ckpt.toString()));
        args.addAll(extra);
        return cli(args.toArray(String[]::new));
    }

    private static Run cli(String... args) {
        dev.stitch.cli.CliRun.Result r = dev.stitch.cli.CliRun.run(args);
        return new Run(r.code(), r.out(), r.err());
    }
}
