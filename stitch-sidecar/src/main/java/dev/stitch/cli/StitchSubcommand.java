package dev.stitch.cli;

import picocli.CommandLine;

/**
 * A top-level {@code stitch} command. Implementations are picocli {@code @Command} classes with a
 * public no-argument constructor, listed in {@code META-INF/services/dev.stitch.cli.StitchSubcommand};
 * modules above the sidecar (bench, demo) add their commands the same way, so the CLI grows without
 * this module knowing them.
 */
public interface StitchSubcommand {

    /** Called once the command is part of the tree, so it can attach subcommands discovered at run time. */
    default void attach(CommandLine self) {
    }
}
