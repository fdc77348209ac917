package dev.stitch.bench.report;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.cli.CliFailure;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Command;

class BenchAllCommandTest {

    /** Stands in for a benchmark: records its arguments and writes that benchmark's sample JSON to --json. */
    @Command(name = "fake")
    static final class FakeBench implements Callable<Integer> {
        final String name;
        final List<List<String>> calls;
        final boolean fail;

        @CommandLine.Unmatched
        List<String> args = new ArrayList<>();

        FakeBench(String name, List<List<String>> calls, boolean fail) {
            this.name = name;
            this.calls = calls;
            this.fail = fail;
        }

        @Override
        public Integer call() {
            calls.add(List.copyOf(args));
            if (fail) {
                return 3;
            }
            Path json = Path.of(args.get(args.indexOf("--json") + 1));
            Path dir = json.getParent();
            switch (name) {
                case "kernels" -> BenchReportTest.writeKernels(dir);
                case "publish" -> BenchReportTest.writePublish(dir);
                case "proxy" -> BenchReportTest.writeProxy(dir);
                default -> BenchReportTest.writeSimulate(dir);
            }
            return 0;
        }
    }

    @Command(name = "bench")
    static final class Root implements Runnable {
        @Override
        public void run() {
        }
    }

    private static CommandLine tree(List<List<String>> calls, String failing) {
        CommandLine bench = new CommandLine(new Root());
        for (String n : List.of("kernels", "publish", "proxy", "simulate")) {
            bench.addSubcommand(n, new FakeBench(n, calls, n.equals(failing)));
        }
        bench.addSubcommand("all", new BenchAllCommand());
        bench.setExecutionExceptionHandler((ex, line, parse) -> {
            line.getErr().println(ex.getMessage());
            return ex instanceof CliFailure f ? f.exitCode() : 1;
        });
        return bench;
    }

    @Test
    void runsEveryBenchmarkThroughItsCommandThenRendersTheReport(@TempDir Path dir) throws Exception {
        List<List<String>> calls = new ArrayList<>();
        Path out = dir.resolve("out");
        int code = tree(calls, null).execute("all", "--size", "16m", "--out", out.toString());

        assertEquals(0, code);
        assertEquals(4, calls.size());
        assertTrue(calls.get(0).containsAll(List.of("--size", "16m")), calls.get(0).toString());
        assertTrue(calls.get(3).containsAll(List.of("--model-params", "70e9", "--measure-size", "16m")), calls.get(3).toString());
        String html = Files.readString(out.resolve("index.html"));
        for (String png : List.of("kernels-floor.png", "publish-bytes.png", "proxy-latency.png", "simulate-link.png")) {
            assertTrue(Files.size(out.resolve(png)) > 0, png);
            assertTrue(html.contains(png), png);
        }
    }

    @Test
    void aFailingBenchmarkIsSkippedTheReportStillRendersAndTheExitIsNonZero(@TempDir Path dir) throws Exception {
        List<List<String>> calls = new ArrayList<>();
        Path out = dir.resolve("out");
        CommandLine bench = tree(calls, "proxy");
        StringWriter err = new StringWriter();
        bench.setErr(new PrintWriter(err));
        int code = bench.execute("all", "--out", out.toString());

        assertNotEquals(0, code);
        assertEquals(4, calls.size(), "the benchmarks after the failing one still run");
        assertTrue(err.toString().contains("proxy"), err.toString());
        String html = Files.readString(out.resolve("index.html"));
        assertTrue(html.contains("proxy.json not found"));
        assertTrue(Files.exists(out.resolve("simulate-link.png")));
    }
}
