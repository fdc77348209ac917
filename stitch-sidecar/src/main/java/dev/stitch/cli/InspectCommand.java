package dev.stitch.cli;

import dev.stitch.format.DeltaFormatException;
import dev.stitch.format.ZstdFrames;
import dev.stitch.format.disk.DiskDeltaIndex;
import dev.stitch.format.sparse.SparseDeltaFile;
import dev.stitch.format.sparse.SparseParam;
import dev.stitch.format.stitchdelta.StitchDeltaFile;
import dev.stitch.format.stitchdelta.StitchRecord;
import dev.stitch.safetensors.Checkpoint;
import dev.stitch.safetensors.SafetensorsFile;
import dev.stitch.safetensors.SafetensorsFormatException;
import dev.stitch.safetensors.TensorEntry;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.Set;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code stitch inspect}: dumps a delta file of any format (stitch_delta, slime v1 sparse_delta,
 * slime v2 disk_delta), a safetensors file or a {@code model.safetensors.index.json} readably, after
 * validating it with the same readers the appliers use.
 */
@Command(name = "inspect",
        mixinStandardHelpOptions = true,
        description = "Print the header, metadata, tensors and per-param/record summaries of FILE: a stitch_delta file, "
                + "a sparse_delta or disk_delta file, a plain safetensors file, a model.safetensors.index.json or a checkpoint "
                + "directory. The file is validated as the appliers validate it; a malformed file exits non-zero.")
public final class InspectCommand implements StitchSubcommand, Runnable {

    @Parameters(index = "0", paramLabel = "FILE", description = "The file (or a checkpoint directory) to inspect.")
    Path file;

    @Option(names = "--limit", defaultValue = "50", paramLabel = "N",
            description = "Print at most N tensors, params or records (default: ${DEFAULT-VALUE}; 0 = all).")
    int limit;

    @Override
    public void run() {
        PrintStream out = System.out;
        try {
            if (Files.isDirectory(file)) {
                inspectDirectory(out);
                return;
            }
            if (!Files.isRegularFile(file)) {
                throw new CliFailure(file + ": no such file");
            }
            byte[] head = new byte[8];
            int n;
            try (InputStream in = Files.newInputStream(file)) {
                n = in.readNBytes(head, 0, 8);
            }
            MemorySegment h = MemorySegment.ofArray(Arrays.copyOf(head, n));
            if (StitchDeltaFile.hasMagic(h)) {
                inspectStitch(out);
            } else if (ZstdFrames.isFrame(h)) {
                inspectSparse(out);
            } else if (file.getFileName().toString().endsWith(".json")) {
                inspectIndex(out);
            } else {
                inspectSafetensors(out);
            }
        } catch (DeltaFormatException | SafetensorsFormatException e) {
            throw new CliFailure("invalid: " + e.getMessage());
        } catch (IOException e) {
            throw new CliFailure(e.getClass().getSimpleName() + ": " + e.getMessage());
        }
    }

    private boolean more(int i) {
        return limit <= 0 || i < limit;
    }

    private void inspectStitch(PrintStream out) throws IOException {
        StitchDeltaFile f = StitchDeltaFile.read(file);
        out.printf("%s: stitch_delta (stitch-delta-1), %d bytes%n", file, Files.size(file));
        out.printf("version %d, base %d, %d records%n", f.version(), f.baseVersion(), f.records().size());
        out.printf("%-60s %-8s %-18s %-9s %-6s %12s %10s %12s %12s  %s%n", "name", "dtype", "shape", "mode", "layout", "changed",
            "density", "raw", "stored", "xxh3-128");
        int i = 0;
        long raw = 0;
        long stored = 0;
        for (StitchRecord r : f.records()) {
            raw += r.rawBytes();
            stored += r.storedBytes();
            if (more(i++)) {
                out.printf("%-60s %-8s %-18s %-9s %-6s %12d %9.4f%% %12d %12d  %s%n", r.name(), r.spec().dtype(), Arrays.toString(r.spec().shape()),
                    r.dense() ? "overwrite" : (r.xor() ? "xor" : "overwrite"), r.dense() ? "dense" : "sparse", r.count(),
                    100.0 * r.count() / Math.max(1, r.spec().numel()), r.rawBytes(), r.storedBytes(), r.digest().hex());
            }
        }
        elided(out, f.records().size());
        out.printf("streams: %d bytes raw, %d bytes stored (%.3f)%n", raw, stored, raw == 0 ? 0.0 : (double) stored / raw);
    }

    private void inspectSparse(PrintStream out) throws IOException {
        SparseDeltaFile f = SparseDeltaFile.read(file);
        out.printf("%s: sparse_delta (slime v1), %d bytes%s%n", file, Files.size(file), f.compressed() ? ", one zstd frame" : "");
        out.printf("encoding %s, current_version %s, checksum %s (verified), values %s%n", f.encoding(), f.currentVersion(), f.checksum(),
            f.valueDtype());
        out.printf("%-60s %-9s %-18s %9s %9s %5s %9s %9s%n", "param", "dtype", "shape", "pos_start", "pos_end", "width", "val_start", "val_end");
        int i = 0;
        for (SparseParam p : f.params()) {
            if (more(i++)) {
                out.printf("%-60s %-9s %-18s %9d %9d %5d %9d %9d%n", p.name(), p.dtype().torchName(), Arrays.toString(p.shape()), p.posStart(),
                    p.posEnd(), p.posWidth(), p.valStart(), p.valEnd());
            }
        }
        elided(out, f.params().size());
    }

    private void inspectSafetensors(PrintStream out) throws IOException {
        try (SafetensorsFile f = SafetensorsFile.open(file)) {
            Set<String> names = f.header().byName().keySet();
            if (names.equals(Set.of("__positions__", "__values__")) && f.metadata().containsKey("params")) {
                inspectSparse(out);
                return;
            }
            Path index = file.resolveSibling(DiskDeltaIndex.FILE);
            boolean disk = DiskDeltaIndex.isDelta(file.toAbsolutePath().getParent());
            out.printf("%s: safetensors%s, %d bytes, header %d bytes, data %d bytes%n", file, disk ? " (disk_delta payloads, index " + index + ")" : "",
                Files.size(file), f.header().headerLength(), f.header().dataLength());
            if (!f.metadata().isEmpty()) {
                out.println("__metadata__:");
                int i = 0;
                for (Map.Entry<String, String> e : f.metadata().entrySet()) {
                    if (more(i++)) {
                        String v = e.getValue();
                        out.printf("  %s: %s%n", e.getKey(), v.length() > 200 ? v.substring(0, 200) + "..." : v);
                    }
                }
                elided(out, f.metadata().size());
            }
            out.printf("%-60s %-8s %-20s %14s %14s%n", "tensor", "dtype", "shape", "begin", "bytes");
            int i = 0;
            for (TensorEntry e : f.header().tensors()) {
                if (more(i++)) {
                    out.printf("%-60s %-8s %-20s %14d %14d%n", e.name(), e.spec().dtype(), Arrays.toString(e.spec().shape()), e.begin(), e.byteLength());
                }
            }
            elided(out, f.header().tensors().size());
        }
    }

    private void inspectIndex(PrintStream out) throws IOException {
        Path dir = file.toAbsolutePath().getParent();
        if (DiskDeltaIndex.isDelta(dir)) {
            DiskDeltaIndex idx = DiskDeltaIndex.read(dir);
            out.printf("%s: disk_delta index: version %d, base %d, %s, %s, %s, %d changed tensors%n", file, idx.version(), idx.baseVersion(),
                idx.encoding().id(), idx.compression(), idx.checksumFormat(), idx.weightMap().size());
            int i = 0;
            for (Map.Entry<String, String> e : idx.weightMap().entrySet()) {
                if (more(i++)) {
                    out.printf("  %-60s %s%n", e.getKey(), e.getValue());
                }
            }
            elided(out, idx.weightMap().size());
        } else {
            Map<String, String> map = Checkpoint.readWeightMap(dir);
            out.printf("%s: checkpoint index, %d tensors in %d shards%n", file, map.size(), map.values().stream().distinct().count());
        }
    }

    private void inspectDirectory(PrintStream out) throws IOException {
        if (DiskDeltaIndex.isDelta(file)) {
            file = file.resolve(DiskDeltaIndex.FILE);
            inspectIndex(out);
            return;
        }
        try (Checkpoint c = Checkpoint.open(file)) {
            out.printf("%s: checkpoint, %d tensors, %d bytes in %d files%n", file, c.names().size(), c.totalBytes(), c.files().size());
            int i = 0;
            for (String n : c.names()) {
                if (more(i++)) {
                    out.printf("%-60s %-8s %-20s %s%n", n, c.spec(n).dtype(), Arrays.toString(c.spec(n).shape()), c.fileOf(n));
                }
            }
            elided(out, c.names().size());
        }
    }

    private void elided(PrintStream out, int total) {
        if (limit > 0 && total > limit) {
            out.printf("... %d more (use --limit 0 for all)%n", total - limit);
        }
    }
}
