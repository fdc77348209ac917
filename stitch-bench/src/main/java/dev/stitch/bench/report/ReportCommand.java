package dev.stitch.bench.report;

import dev.stitch.bench.BenchSubcommand;
import dev.stitch.cli.CliFailure;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code stitch bench report}: one HTML page with charts from the benchmarks' JSON files. */
@Command(name = "report",
        description = {
            "Renders benchmark JSON results into one HTML page with charts.",
            "",
            "Reads the files of 'stitch bench kernels|publish|proxy|simulate --json' and writes index.html with PNG "
                + "charts: kernel throughput as a fraction of the memory floor, encode/apply throughput vs density "
                + "per encoding, bytes per GiB per encoding, proxy latency, and time-to-serve vs link speed. "
                + "Missing inputs are skipped with a note on the page."
        },
        mixinStandardHelpOptions = true)
public final class ReportCommand implements BenchSubcommand, Callable<Integer> {

    @Option(names = "--in", required = true, paramLabel = "DIR",
            description = "Directory holding kernels.json, publish.json, proxy.json and/or simulate.json.")
    Path in;

    @Option(names = "--out", required = true, paramLabel = "DIR",
            description = "Directory to write index.html and the PNG charts into (created when missing; may equal --in).")
    Path out;

    public ReportCommand() {
    }

    @Override
    public Integer call() {
        BenchReport.Summary s;
        try {
            s = BenchReport.render(in, out);
        } catch (IOException e) {
            throw new CliFailure("report: " + e.getMessage());
        }
        for (String note : s.notes()) {
            System.err.println("report: " + note);
        }
        System.out.println("wrote " + s.index() + " with " + s.charts().size() + " charts");
        return 0;
    }
}
