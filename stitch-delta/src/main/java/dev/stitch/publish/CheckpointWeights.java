package dev.stitch.publish;

import dev.stitch.encode.TensorData;
import dev.stitch.safetensors.Checkpoint;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Weights read from a Hugging Face safetensors checkpoint directory ({@code model.safetensors}, or
 * shards listed by {@code model.safetensors.index.json}): every tensor exactly as stored, memory-mapped
 * read-only. The zero-code path for trainers that write full checkpoints.
 */
public final class CheckpointWeights {

    private CheckpointWeights() {
    }

    /** Maps the checkpoint; closing the result unmaps it. Headers and the index are validated. */
    public static Weights open(Path dir) throws IOException {
        Checkpoint cp = Checkpoint.open(dir);
        try {
            List<TensorData> tensors = new ArrayList<>();
            for (String name : cp.names()) {
                tensors.add(new TensorData(cp.spec(name), cp.tensor(name)));
            }
            return new Weights(tensors, cp);
        } catch (RuntimeException e) {
            cp.close();
            throw e;
        }
    }
}
