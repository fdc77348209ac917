package dev.stitch.bench.report;

import dev.stitch.bench.BenchSubcommand;
import dev.stitch.cli.CliFailure;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code stitch bench all}: every benchmark with CI-friendly defaults, then the report. Each
 * benchmark runs through its own picocli command, so its flags and defaults live in one place.
 */
@Command(name = "all",
        description = {
            "Runs every benchmark with CI-friendly defaults, then renders the report.",
            "",
            "Runs kernels, publish, proxy and simulate, writing DIR/<name>.json for each, then DIR/index.html "
                + "('stitch bench report'). A benchmark that fails is reported and skipped; the command then exits non-zero."
        },
        mixinStandardHelpOptions = true)
public final class BenchAllCommand implements BenchSubcommand, Callable<Integer> {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(names = "--size", defaultValue = "64m", paramLabel = "SIZE",
            description = "Model size for kernels, publish and the measured part of simulate (k/m/g suffixes; default ${DEFAULT-VALUE}).")
    String size;

    @Option(names = "--out", required = true, paramLabel = "DIR",
            description = "Directory for the JSON results, index.html and the charts.")
    Path out;

    @Option(names = "--model-params", defaultValue = "70e9", paramLabel = "N",
            description = "Model size the simulation extrapolates to, in parameters (default ${DEFAULT-VALUE}).")
    String modelParams;

    public BenchAllCommand() {
    }

    /** The benchmark invocations, in the order they run. */
    List<List<String>> plan() {
        String dir = out.toString();
        return List.of(
                List.of("kernels", "--size", size, "--density", "0.01,0.03,0.1", "--json", dir + "/kernels.json"),
                List.of("publish", "--size", size, "--density", "0.01,0.03", "--json", dir + "/publish.json"),
                List.of("proxy", "--duration-s", "3", "--warmup-s", "1", "--json", dir + "/proxy.json"),
                List.of("simulate", "--model-params", modelParams, "--density", "0.03", "--link-mbps", "100,300,1000,3000",
                        "--measure-size", size, "--json", dir + "/simulate.json"));
    }

    @Override
    public Integer call() {
        try {
            Files.createDirectories(out);
        } catch (IOException e) {
            throw new CliFailure("cannot create " + out + ": " + e.getMessage());
        }
        CommandLine bench = spec.commandLine().getParent();
        List<String> failed = new ArrayList<>();
        for (List<String> args : plan()) {
            String name = args.getFirst();
            CommandLine sub = bench == null ? null : bench.getSubcommands().get(name);
            if (sub == null) {
                System.err.println("bench all: no '" + name + "' benchmark in this build; skipped");
                failed.add(name);
                continue;
            }
            System.err.println("bench all: stitch bench " + String.join(" ", args));
            int code = sub.execute(args.subList(1, args.size()).toArray(String[]::new));
            if (code != 0) {
                System.err.println("bench all: " + name + " exited with " + code);
                failed.add(name);
            }
        }
        BenchReport.Summary s;
        try {
            s = BenchReport.render(out, out);
        } catch (IOException e) {
            throw new CliFailure("report: " + e.getMessage());
        }
        System.out.println("wrote " + s.index() + " with " + s.charts().size() + " charts");
        if (!failed.isEmpty()) {
            throw new CliFailure("benchmarks that did not complete: " + String.join(", ", failed));
        }
        return 0;
    }
}
