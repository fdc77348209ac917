package dev.stitch.sidecar;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.board.BoardLayout;
import dev.stitch.cli.CliFailure;
import dev.stitch.cli.SidecarCommand;
import dev.stitch.cli.StitchCli;
import dev.stitch.sync.CommitMode;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code stitch sidecar} option parsing and validation (docs/protocol/cli-and-config.md §8, 10.2). */
class SidecarCommandTest {

    private static SidecarConfig parse(String... args) {
        CommandLine root = StitchCli.commandLine();
        String[] all = new String[args.length + 1];
        all[0] = "sidecar";
        System.arraycopy(args, 0, all, 1, args.length);
        root.parseArgs(all);
        SidecarCommand cmd = root.getSubcommands().get("sidecar").getCommand();
        return cmd.config();
    }

    @Test
    void everyOptionReachesItsPart() {
        SidecarConfig c = parse("--board", "/b", "--upstream", "http://127.0.0.1:30000", "--mode", "engine",
                "--commit-mode", "in_place", "--port", "9001", "--host", "127.0.0.1", "--layout", "slime",
                "--run-id", "replica-3", "--engine-board-root", "/mnt/b", "--engine-base-checkpoint", "/models/base",
                "--state-dir", "/var/stitch", "--boot-version", "4", "--boot-run-id", "run-a",
                "--versioned-routes", "/generate/,v1/completions", "--poll-interval-s", "0",
                "--min-refresh-interval-s", "0.5", "--drain-timeout-s", "3", "--abort-grace-s", "2",
                "--backoff-initial-s", "0.5", "--backoff-max-s", "8", "--arrival-timeout-s", "45", "--commit-retries", "1",
                "--flush-retries", "4",
                "--max-replay-versions", "3", "--require-checksums", "--upstream-timeout-s", "30",
                "--upstream-connect-timeout-s", "2", "--engine-start-timeout-s", "90", "--max-request-body-bytes",
                "512k", "--stream-end-comment=false", "--partial-reload", "--probe-delta-receiver=false",
                "--debug-requests");
        assertEquals(Path.of("/b"), c.boardRoot());
        assertEquals(BoardLayout.SLIME, c.layout());
        assertEquals("engine", c.engineMode());
        assertEquals("replica-3", c.replicaRunId());
        assertEquals(9001, c.proxy().port());
        assertEquals("127.0.0.1", c.proxy().host());
        assertEquals(Set.of("generate", "v1/completions"), c.proxy().versionedRoutes());
        assertEquals(512 * 1024, c.proxy().maxRequestBodyBytes());
        assertEquals(Duration.ofSeconds(2), c.proxy().upstreamConnectTimeout());
        assertEquals(Duration.ofSeconds(30), c.proxy().upstreamTimeout());
        assertFalse(c.proxy().streamEndComment());
        assertTrue(c.proxy().debugRequests());
        assertEquals(CommitMode.IN_PLACE, c.sync().commitMode());
        assertEquals(0, c.sync().pollIntervalS());
        assertEquals(0.5, c.sync().minRefreshIntervalS());
        assertEquals(3, c.sync().drainTimeoutS());
        assertEquals(2, c.sync().abortGraceS());
        assertEquals(0.5, c.sync().backoffInitialS());
        assertEquals(8, c.sync().backoffMaxS());
        assertEquals(45, c.sync().arrivalTimeoutS());
        assertEquals(1, c.sync().commitRetries());
        assertEquals(3, c.sync().maxReplayVersions());
        assertTrue(c.sync().requireChecksums());
        assertEquals(90, c.sync().engineStartTimeoutS());
        assertEquals("run-a", c.sync().bootRunId());
        assertEquals(4, c.sync().bootVersion());
        assertEquals(Path.of("/var/stitch"), c.sync().stateDir());
        assertEquals(Path.of("/mnt/b"), c.engine().engineBoardRoot());
        assertEquals(Path.of("/models/base"), c.engine().engineBaseCheckpointDir());
        assertEquals(4, c.engine().flushRetries());
        assertTrue(c.engine().partialReload());
        assertFalse(c.engine().probeDeltaReceiver());
    }

    @Test
    void defaultsFollowTheSpec() {
        SidecarConfig c = parse("--board", "/b", "--upstream", "http://e:1", "--local-checkpoint", "/l",
                "--base-checkpoint", "/base");
        assertEquals("host", c.engineMode());
        assertEquals(CommitMode.QUIESCE, c.sync().commitMode());
        assertEquals(8000, c.proxy().port());
        assertEquals("127.0.0.1", c.proxy().host(), "loopback unless --host opens the port on purpose");
        assertEquals(Duration.ofSeconds(10), c.proxy().limits().headerTimeout());
        assertEquals(Duration.ofSeconds(75), c.proxy().limits().idleTimeout());
        assertEquals(8192, c.proxy().limits().maxConnections());
        assertNull(c.proxy().control().token());
        assertEquals(5.0, c.proxy().control().refreshPerSecond());
        assertEquals(10, c.proxy().control().refreshBurst());
        assertEquals(64L << 20, c.proxy().maxRequestBodyBytes());
        assertEquals(5.0, c.sync().pollIntervalS());
        assertEquals(60, c.sync().drainTimeoutS());
        assertEquals(600, c.sync().arrivalTimeoutS());
        assertEquals(2, c.sync().commitRetries());
        assertEquals(8, c.sync().maxReplayVersions());
        assertFalse(c.sync().requireChecksums());
        assertTrue(c.proxy().streamEndComment());
        assertTrue(c.engine().probeDeltaReceiver());
        assertEquals(10, c.engine().flushRetries());
        assertEquals(Path.of("/l/.stitch"), c.sync().stateDir(), "host mode keeps its state beside the local copy");
        assertNull(c.sync().bootRunId());
        assertEquals(Set.of("generate", "v1/chat/completions", "v1/completions"), c.proxy().versionedRoutes());
    }

    @Test
    void connectionLimitsAndControlTokenReachTheProxy(@TempDir Path tmp) throws Exception {
        SidecarConfig c = parse("--board", "/b", "--upstream", "http://e:1", "--mode", "engine",
                "--header-timeout-s", "2.5", "--idle-timeout-s", "30", "--max-connections", "300",
                "--control-token", "s3cret", "--control-refresh-rate", "2", "--control-refresh-burst", "4");
        assertEquals(Duration.ofMillis(2500), c.proxy().limits().headerTimeout());
        assertEquals(Duration.ofSeconds(30), c.proxy().limits().idleTimeout());
        assertEquals(300, c.proxy().limits().maxConnections());
        assertEquals("s3cret", c.proxy().control().token());
        assertEquals(2.0, c.proxy().control().refreshPerSecond());
        assertEquals(4, c.proxy().control().refreshBurst());

        Path tokenFile = tmp.resolve("token");
        Files.writeString(tokenFile, "  from-file\n");
        assertEquals("from-file", parse("--board", "/b", "--upstream", "http://e:1", "--mode", "engine",
                "--control-token-file", tokenFile.toString()).proxy().control().token());
        CliFailure both = assertThrows(CliFailure.class, () -> parse("--board", "/b", "--upstream", "http://e:1",
                "--mode", "engine", "--control-token", "x", "--control-token-file", tokenFile.toString()));
        assertTrue(both.getMessage().contains("not both"), both.getMessage());
        Files.writeString(tokenFile, "\n");
        assertThrows(CliFailure.class, () -> parse("--board", "/b", "--upstream", "http://e:1", "--mode", "engine",
                "--control-token-file", tokenFile.toString()));
        assertThrows(CliFailure.class, () -> parse("--board", "/b", "--upstream", "http://e:1", "--mode", "engine",
                "--control-token-file", tmp.resolve("missing").toString()));
        assertThrows(CliFailure.class, () -> parse("--board", "/b", "--upstream", "http://e:1", "--mode", "engine",
                "--max-connections", "0"));
        assertThrows(CliFailure.class, () -> parse("--board", "/b", "--upstream", "http://e:1", "--mode", "engine",
                "--header-timeout-s", "0"));
        assertThrows(CliFailure.class, () -> parse("--board", "/b", "--upstream", "http://e:1", "--mode", "engine",
                "--control-refresh-burst", "0"));
        String usage = StitchCli.commandLine().getSubcommands().get("sidecar").getUsageMessage();
        assertTrue(usage.contains("default 127.0.0.1") && usage.contains("default 8192"), usage);
    }

    @Test
    void badInputIsAOneLineFailure() {
        assertThrows(CliFailure.class, () -> parse("--board", "/b", "--upstream", "http://e:1"),
                "host mode without checkpoints");
        assertThrows(CliFailure.class, () -> parse("--board", "/b", "--upstream", "nota url", "--mode", "engine"));
        assertThrows(CliFailure.class, () -> parse("--board", "/b", "--upstream", "http://e:1", "--mode", "gpu"));
        assertThrows(CliFailure.class, () -> parse("--board", "/b", "--upstream", "http://e:1", "--mode", "engine",
                "--commit-mode", "eventually"));
        assertThrows(CliFailure.class, () -> parse("--board", "/b", "--upstream", "http://e:1", "--mode", "engine",
                "--layout", "flat"));
        assertThrows(CliFailure.class, () -> parse("--board", "/b", "--upstream", "http://e:1", "--mode", "engine",
                "--max-request-body-bytes", "-3"));
        assertThrows(CliFailure.class, () -> parse("--board", "/b", "--upstream", "http://e:1", "--mode", "engine",
                "--drain-timeout-s", "-1"));

        CommandLine root = StitchCli.commandLine();
        StringWriter err = new StringWriter();
        root.setErr(new PrintWriter(err));
        int code = root.execute("sidecar", "--board", "/b", "--upstream", "http://e:1", "--mode", "gpu");
        assertTrue(code != 0);
        assertEquals("stitch: --mode must be engine or host, not 'gpu'", err.toString().strip());
    }

    @Test
    void helpDescribesEveryOption() {
        CommandLine sidecar = StitchCli.commandLine().getSubcommands().get("sidecar");
        for (CommandLine.Model.OptionSpec o : sidecar.getCommandSpec().options()) {
            assertTrue(o.description().length > 0 && !o.description()[0].isBlank(), o.longestName());
        }
        String usage = sidecar.getUsageMessage();
        assertTrue(usage.contains("STITCH_<NAME>"), usage);
    }

    @Test
    void routerFlagsMakeTheRouterLink(@TempDir Path dir) throws Exception {
        String[] base = {"--board", "/b", "--upstream", "http://127.0.0.1:30000", "--mode", "engine", "--port", "9001"};
        assertNull(parse(base).router(), "no --router: commits are not asked about");
        Path token = Files.writeString(dir.resolve("router-token"), " t0k \n");
        SidecarConfig c = parse(concat(base, "--router", "http://router:7000", "--router-token-file", token.toString()));
        assertEquals(java.net.URI.create("http://router:7000"), c.router().url());
        assertEquals("t0k", c.router().token());
        assertEquals("http://127.0.0.1:9001", c.router().replicaId());
        assertEquals("r-7", parse(concat(base, "--router", "http://router:7000", "--replica-id", "r-7")).router().replicaId());
        assertThrows(CliFailure.class, () -> parse(concat(base, "--router", "router-without-scheme")));
        assertThrows(CliFailure.class, () -> parse(concat(base, "--router-token-file", token.toString())));
    }

    private static String[] concat(String[] a, String... b) {
        String[] all = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, all, a.length, b.length);
        return all;
    }
}
