package dev.stitch.bench;

import dev.stitch.cli.StitchSubcommand;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.ServiceLoader;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code stitch bench}: the benchmark suite. Each benchmark is a {@link BenchSubcommand} listed in
 * {@code META-INF/services/dev.stitch.bench.BenchSubcommand}.
 */
@Command(name = "bench",
        description = {
            "Benchmarks: kernels (encode/apply vs the memory floor), publish, proxy overhead,",
            "cross-datacenter simulation, and the HTML report. Each writes a table to stdout and,",
            "with --json FILE, {\"benchmark\": <name>, \"results\": [...]}."
        },
        mixinStandardHelpOptions = true)
public final class BenchCommand implements StitchSubcommand, Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    public BenchCommand() {
    }

    @Override
    public void run() {
        spec.commandLine().usage(System.out);
    }

    @Override
    public void attach(CommandLine self) {
        List<BenchSubcommand> subs = new ArrayList<>();
        ServiceLoader.load(BenchSubcommand.class).forEach(subs::add);
        subs.sort(Comparator.comparing(c -> c.getClass().getAnnotation(Command.class).name()));
        for (BenchSubcommand s : subs) {
            self.addSubcommand(s);
        }
    }
}
