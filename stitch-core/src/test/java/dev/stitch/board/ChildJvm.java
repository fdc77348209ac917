package dev.stitch.board;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/** Runs a test main class in a separate JVM with this JVM's class path (fast-start flags). */
final class ChildJvm {
    private ChildJvm() {
    }

    static Process start(Class<?> main, String... args) throws IOException {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElseThrow());
        cmd.add("-XX:TieredStopAtLevel=1");
        cmd.add("-XX:+UseSerialGC");
        cmd.add("-Xshare:auto");
        cmd.add("-Xmx128m");
        cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=error");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(main.getName());
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd).redirectErrorStream(true).start();
    }

    /** Waits for the child to exit and returns its output; a non-zero exit is an error. */
    static String finish(Process p) throws IOException, InterruptedException {
        String out;
        try (InputStream in = p.getInputStream()) {
            out = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException("child did not exit: " + out);
        }
        if (p.exitValue() != 0) {
            throw new IOException("child exited with " + p.exitValue() + ": " + out);
        }
        return out;
    }

    /** Blocks until {@code parties} processes have arrived at the rendezvous directory {@code dir}. */
    static void rendezvous(Path dir, int parties) throws IOException {
        Files.createDirectories(dir);
        Files.createFile(dir.resolve(Long.toString(ProcessHandle.current().pid())));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            try (Stream<Path> s = Files.list(dir)) {
                if (s.count() >= parties) {
                    return;
                }
            }
            try {
                Thread.sleep(2);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted", e);
            }
        }
        throw new IOException("rendezvous timed out in " + dir);
    }
}
