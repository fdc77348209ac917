package dev.stitch.cli;

import dev.stitch.board.BoardOptions;
import dev.stitch.board.BoardRepair;
import dev.stitch.board.FilesystemBulletinBoard;
import dev.stitch.protocol.LatestPointer;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code stitch board repair}: unwedges a board whose latest version cannot be read or verified. */
@Command(name = "repair", mixinStandardHelpOptions = true,
        description = {"Check the latest version (manifest, the pointer's manifest_checksum, run, every artifact) and, "
                + "when it is broken, move its directory aside to versions/.weight_vNNNNNN.<hex>.broken and rewrite "
                + "latest.json at the same run and version without manifest_checksum, so that the next publish can "
                + "proceed.",
            "The pointer never moves back: replicas read the broken version as deleted and catch up through the next "
                + "anchor. A healthy board is left unchanged; so is a board whose latest.json itself is unreadable."})
final class BoardRepairCommand implements Runnable {
    @Option(names = {"--root", "--board"}, required = true, paramLabel = "DIR", description = "The board's root directory.")
    Path root;

    @Option(names = "--dry-run", description = "Print what would be done and change nothing.")
    boolean dryRun;

    @Override
    public void run() {
        if (!Files.isDirectory(root)) {
            throw new CliFailure(root + ": no such board directory");
        }
        FilesystemBulletinBoard board = FilesystemBulletinBoard.open(root, BoardOptions.defaults());
        BoardRepair.Report r;
        try {
            r = BoardRepair.repair(board, dryRun);
        } catch (IOException e) {
            throw new CliFailure(root + ": " + e.getMessage());
        }
        PrintStream out = System.out;
        LatestPointer p = r.pointer();
        if (r.problem() == null) {
            out.println("board " + board.root() + " is healthy at " + BoardCommand.describe(p) + ": nothing to repair");
            return;
        }
        out.println("latest is " + BoardCommand.describe(p) + "; version " + p.version() + " is broken: " + r.problem());
        if (r.movedAside() == null && !r.pointerRewritten()) {
            out.println("nothing to change: the version directory is absent and " + LatestPointer.FILE_NAME
                    + " carries no manifest_checksum, so publishers are not blocked");
        }
        if (r.movedAside() != null) {
            out.println(dryRun ? "would move " + r.movedAside() + " aside (to versions/.weight_vNNNNNN.<hex>.broken)"
                    : "moved " + r.movedAside() + " aside to " + r.movedTo());
        }
        if (r.pointerRewritten()) {
            out.println((dryRun ? "would rewrite " : "rewrote ") + LatestPointer.FILE_NAME + " at " + BoardCommand.describe(p)
                    + " without manifest_checksum (the pointer never moves back)");
        }
        out.println("next: publish an anchor (a version with full artifacts) as version " + (p.version() + 1)
                + "; replicas below version " + p.version() + " cannot replay past the broken version");
    }
}
