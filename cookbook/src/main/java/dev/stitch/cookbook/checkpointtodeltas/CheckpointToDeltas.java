package dev.stitch.cookbook.checkpointtodeltas;

import dev.stitch.cli.StitchCli;
import dev.stitch.rehearsal.SyntheticModel;
import dev.stitch.rehearsal.TrainerStep;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;

/**
 * The zero-code path for trainers that only write full Hugging Face checkpoints (a Python trainer
 * calling {@code save_pretrained} every step): {@code stitch publish} turns each checkpoint into a
 * delta version on the board, and {@code stitch apply} brings a replica's local checkpoint to any
 * version, byte for byte equal to the trainer's checkpoint of that step.
 *
 * <p>Run: {@code CheckpointToDeltas [WORK_DIR [SIZE_BYTES [STEPS]]]}.
 */
public final class CheckpointToDeltas {

    /** The outcome: the commands that ran, and whether the replica ended byte-identical to each checked step. */
    public record Outcome(List<String> commands, List<Long> checkedSteps, boolean identical, long checkpointBytes,
                          long boardBytes) {
    }

    private CheckpointToDeltas() {
    }

    public static void main(String[] args) throws Exception {
        Path work;
        long size;
        int steps;
        try {
            work = args.length > 0 ? Path.of(args[0]) : Files.createTempDirectory("stitch-ckpt-to-deltas-");
            size = args.length > 1 ? Long.parseLong(args[1]) : 32L << 20;
            steps = args.length > 2 ? Integer.parseInt(args[2]) : 4;
        } catch (NumberFormatException e) {
            System.err.println("usage: CheckpointToDeltas [WORK_DIR [SIZE_BYTES [STEPS]]] (sizes in bytes)");
            System.exit(2);
            return;
        }
        Outcome o = run(work, size, steps);
        System.out.printf("%d checkpoints of %d bytes became %d bytes of versions on the board%n",
                steps, o.checkpointBytes(), o.boardBytes());
        System.out.println(o.identical() ? "replica checkpoint is byte-identical to the trainer's at steps " + o.checkedSteps()
                : "replica checkpoint DIFFERS from the trainer's");
        System.out.println("board and checkpoints are in " + work);
        if (!o.identical()) {
            System.exit(1);
        }
    }

    public static Outcome run(Path work, long sizeBytes, int steps) throws IOException {
        Path base = work.resolve("checkpoints/step-000000");
        Path board = work.resolve("board");
        Path replica = work.resolve("replica");
        List<String> commands = new ArrayList<>();
        long checkpointBytes;

        // The "trainer": writes a full checkpoint after every optimizer step and knows nothing about stitch.
        try (SyntheticModel model = SyntheticModel.generate(sizeBytes, 3)) {
            checkpointBytes = model.writeCheckpoint(base);
            TrainerStep optimizer = new TrainerStep(0.02, TrainerStep.Pattern.CLUSTERED, 3);
            for (int step = 1; step <= steps; step++) {
                optimizer.apply(model.tensors(), step);
                model.writeCheckpoint(checkpoint(work, step));
            }
        }

        // The publishing side: one `stitch publish` per checkpoint (the first creates the board). Only
        // the first needs --base; later ones diff against the checkpoint the previous publish recorded.
        for (int step = 1; step <= steps; step++) {
            List<String> publish = new ArrayList<>(List.of("publish", "--board", board.toString(),
                    "--checkpoint", checkpoint(work, step).toString()));
            if (step == 1) {
                publish.addAll(List.of("--base", base.toString()));
            }
            stitch(commands, publish.toArray(String[]::new));
        }

        // A replica: a copy of the base checkpoint, brought forward by `stitch apply`.
        copyTree(base, replica);
        List<Long> checked = new ArrayList<>();
        boolean identical = true;
        for (long target : new long[] {Math.max(1, steps / 2), steps}) {
            stitch(commands, "apply", "--board", board.toString(), "--target", Long.toString(target),
                    "--checkpoint", replica.toString());
            identical &= Files.mismatch(replica.resolve("model.safetensors"),
                    checkpoint(work, target).resolve("model.safetensors")) == -1;
            checked.add(target);
        }
        return new Outcome(commands, checked, identical, checkpointBytes, treeBytes(board.resolve("versions")));
    }

    private static Path checkpoint(Path work, long step) {
        return work.resolve(String.format("checkpoints/step-%06d", step));
    }

    /** Runs one {@code stitch} command in this JVM, exactly as {@code ./stitch ARGS} would. */
    private static void stitch(List<String> log, String... args) {
        String line = "./stitch " + String.join(" ", args);
        log.add(line);
        System.out.println("$ " + line);
        StringWriter err = new StringWriter();
        int code = StitchCli.commandLine().setErr(new PrintWriter(err, true)).execute(args);
        if (code != 0) {
            throw new IllegalStateException(line + " failed (exit " + code + "): " + err.toString().strip());
        }
    }

    private static void copyTree(Path from, Path to) throws IOException {
        Files.walkFileTree(from, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) throws IOException {
                Files.createDirectories(to.resolve(from.relativize(dir).toString()));
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.copy(file, to.resolve(from.relativize(file).toString()));
                return FileVisitResult.CONTINUE;
            }
        });
    }

    private static long treeBytes(Path dir) throws IOException {
        try (var files = Files.walk(dir)) {
            return files.filter(Files::isRegularFile).mapToLong(p -> p.toFile().length()).sum();
        }
    }
}
