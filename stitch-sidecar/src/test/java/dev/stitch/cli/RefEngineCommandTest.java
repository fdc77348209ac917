package dev.stitch.cli;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.refengine.ReferenceEngine;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code stitch ref-engine}'s options, as {@code --help} states them and as they are checked. */
class RefEngineCommandTest {
    @TempDir
    Path tmp;

    @Test
    void helpStatesTheGenerationCapAndItsDefault() {
        CommandLine refEngine = StitchCli.commandLine().getSubcommands().get("ref-engine");
        String usage = refEngine.getUsageMessage(CommandLine.Help.Ansi.OFF).replaceAll("\\s+", " ");
        assertTrue(usage.contains("--max-generation-tokens=N"), usage);
        assertTrue(usage.contains("(default: " + ReferenceEngine.DEFAULT_MAX_GENERATION_TOKENS + ")"), usage);
    }

    @Test
    void aCapBelowOneIsRefusedBeforeTheEngineStarts() {
        CommandLine cl = StitchCli.commandLine();
        StringWriter err = new StringWriter();
        cl.setErr(new PrintWriter(err));
        int code = cl.execute("ref-engine", "--model-path", tmp.toString(), "--port", "0", "--max-generation-tokens", "0");
        assertNotEquals(0, code);
        assertTrue(err.toString().contains("--max-generation-tokens must be >= 1, got 0"), err.toString());
    }
}
