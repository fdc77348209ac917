package dev.stitch.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import picocli.CommandLine;

/** Runs a {@code stitch} command in this JVM and captures its exit code, stdout and stderr, for tests. */
public final class CliRun {
    private CliRun() {
    }

    /** What one command printed and returned. */
    public record Result(int code, String out, String err) {
    }

    /** Runs {@code args} through the CLI's root command (stdout is swapped for the call; tests run one at a time). */
    public static Result run(String... args) {
        CommandLine cl = StitchCli.commandLine();
        StringWriter err = new StringWriter();
        cl.setErr(new PrintWriter(err));
        PrintStream saved = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            return new Result(cl.execute(args), out.toString(StandardCharsets.UTF_8), err.toString());
        } finally {
            System.setOut(saved);
        }
    }
}
