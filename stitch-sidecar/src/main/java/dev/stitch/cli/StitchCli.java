package dev.stitch.cli;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.ServiceLoader;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code stitch}: the single command-line entry point (the {@code ./stitch} launcher runs this). */
@Command(name = "stitch",
        mixinStandardHelpOptions = true,
        versionProvider = VersionInfo.class,
        description = {
            "Sparse weight sync for disaggregated RL: publish weight deltas to a bulletin board,",
            "and serve rollouts behind a version-aware sidecar.",
            "",
            "Sizes take k/m/g suffixes (KiB, MiB, GiB); densities are fractions (0.03 = 3%%).",
            "Run 'stitch <command> --help' for a command's options."
        },
        subcommandsRepeatable = false)
public final class StitchCli implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    /** Builds the command tree: this root plus every registered {@link StitchSubcommand}. */
    public static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new StitchCli());
        List<StitchSubcommand> commands = new ArrayList<>();
        ServiceLoader.load(StitchSubcommand.class).forEach(commands::add);
        commands.sort(Comparator.comparing(c -> c.getClass().getAnnotation(Command.class).name()));
        for (StitchSubcommand c : commands) {
            cl.addSubcommand(c);
            String name = c.getClass().getAnnotation(Command.class).name();
            c.attach(cl.getSubcommands().get(name));
        }
        cl.setExecutionExceptionHandler((ex, line, parseResult) -> {
            if (System.getenv("STITCH_DEBUG") != null) {
                ex.printStackTrace();
            }
            String msg = ex.getMessage() == null ? ex.toString() : ex.getMessage();
            line.getErr().println("stitch: " + msg.lines().findFirst().orElse(msg));
            return ex instanceof CliFailure f ? f.exitCode() : 1;
        });
        return cl;
    }

    public static void main(String[] args) {
        int code = commandLine().execute(args);
        System.exit(code);
    }
}
