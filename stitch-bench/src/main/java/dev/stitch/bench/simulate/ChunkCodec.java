package dev.stitch.bench.simulate;

import java.nio.file.Path;
import java.util.List;

/**
 * One backend and encoding of a version, cut into chunks (groups of tensors) so the pipeline can
 * encode chunk i+1 while chunk i is on the wire and chunk i-1 is being applied. Implementations run
 * the project's real encoder, format writers and host applier.
 */
interface ChunkCodec extends AutoCloseable {

    String backend();

    String encoding();

    int chunks();

    /** Encodes chunk {@code chunk} into files under {@code trainerDir}; returns their paths relative to it. */
    List<String> encode(int chunk, Path trainerDir) throws Exception;

    /** Applies chunk {@code chunk} from {@code files} under {@code rolloutDir} onto the rollout checkpoint, verifying every digest. */
    void apply(int chunk, Path rolloutDir, List<String> files) throws Exception;

    /** CPU time the encode stage's thread has used so far, nanoseconds (waiting for a core or a disk excluded). */
    long encodeCpuNanos();

    /** CPU time the apply stage's thread has used so far, nanoseconds. */
    long applyCpuNanos();

    @Override
    void close();
}
