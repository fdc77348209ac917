package dev.stitch.bench;

/**
 * One benchmark under {@code stitch bench}: a picocli {@code @Command} with a public no-argument
 * constructor, listed in {@code META-INF/services/dev.stitch.bench.BenchSubcommand}. It prints a
 * table and honours {@code --json FILE} through {@link BenchResults}.
 */
public interface BenchSubcommand {
}
