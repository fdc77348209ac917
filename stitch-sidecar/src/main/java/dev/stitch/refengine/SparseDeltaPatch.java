package dev.stitch.refengine;

import dev.stitch.format.sparse.SparseDeltaFile;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code load_format: "delta"}: applies slime v1 {@code sparse_delta} files to the live weights the
 * way slime's patched loader does (docs/formats/sparse-delta.md §2.9): every value that is NaN after the cast is
 * left alone, names the model does not hold are skipped.
 */
final class SparseDeltaPatch {
    private SparseDeltaPatch() {
    }

    /**
     * Reads and validates every file (relative to {@code dir}) before touching a weight, then applies
     * them in order and relabels the engine.
     *
     * @return the number of files applied
     */
    static int apply(ReferenceEngine engine, Path dir, List<String> files, String label) throws IOException {
        List<SparseDeltaFile> parsed = new ArrayList<>(files.size());
        for (String f : files) {
            Path p = Path.of(f);
            if (p.isAbsolute() || p.normalize().startsWith("..") || f.contains("\\")) {
                throw new IOException("delta file path must stay inside model_path: " + f);
            }
            parsed.add(SparseDeltaFile.read(dir.resolve(p)));
        }
        engine.patch((specs, tensors) -> {
            for (SparseDeltaFile file : parsed) {
                file.check(specs::get);
            }
            for (SparseDeltaFile file : parsed) {
                file.applyTo(tensors::get);
            }
        }, label);
        return parsed.size();
    }
}
