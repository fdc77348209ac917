package dev.stitch.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code stitch router} is registered, and its options are checked before anything listens. */
class RouterCommandTest {

    @Test
    void theRouterIsASubcommandWithItsRollingUpdateOptions() {
        CommandLine router = StitchCli.commandLine().getSubcommands().get("router");
        String usage = router.getUsageMessage(CommandLine.Help.Ansi.OFF).replaceAll("\\s+", " ");
        assertTrue(usage.contains("--max-committing=N|P%"), usage);
        assertTrue(usage.contains("--hold-previous=K"), usage);
        assertTrue(usage.contains("--replicas-file=FILE"), usage);
    }

    @Test
    void refusesAFleetWithoutMembersAndABadCommitLimit() {
        assertEquals(2, run("router", "--listen", "127.0.0.1:0").code);
        Result bad = run("router", "--listen", "127.0.0.1:0", "--replicas", "http://127.0.0.1:1", "--max-committing", "0%");
        assertEquals(2, bad.code);
        assertTrue(bad.err.contains("--max-committing"), bad.err);
    }

    private record Result(int code, String err) {
    }

    private static Result run(String... args) {
        CommandLine cl = StitchCli.commandLine();
        StringWriter err = new StringWriter();
        cl.setErr(new PrintWriter(err));
        int code = cl.execute(args);
        return new Result(code, err.toString());
    }
}
