package dev.stitch.cli;
import dev.stitch.testing.Fixtures;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.encode.TensorChange;
import dev.stitch.encode.TensorData;
import dev.stitch.encode.ValueMode;
import dev.stitch.format.WriteResult;
import dev.stitch.format.WrittenFile;
import dev.stitch.format.full.FullCheckpointWriter;
import dev.stitch.format.stitchdelta.StitchDeltaWriter;
import dev.stitch.protocol.Artifact;
import dev.stitch.protocol.LatestPointer;
import dev.stitch.protocol.Manifest;
import dev.stitch.safetensors.SafetensorsFile;
import dev.stitch.safetensors.TensorEntry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class ApplyCommandTest {

    @TempDir
    Path tmp;

    static Path fixtures() {
        return Fixtures.root();
    }

    static Path copyDir(Path src, Path dst) throws IOException {
        try (Stream<Path> s = Files.walk(src)) {
            for (Path p : s.toList()) {
                Path t = dst.resolve(src.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(t);
                } else {
                    Files.copy(p, t, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
        return dst;
    }

    record Run(int code, String out, String err) {
    }

    static Run stitch(String... args) {
        PrintStream oldOut = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        StringWriter err = new StringWriter();
        CommandLine cl = StitchCli.commandLine();
        cl.setErr(new PrintWriter(err));
        int code;
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            code = cl.execute(args);
        } finally {
            System.setOut(oldOut);
        }
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString());
    }

    private static byte[] model(Path dir) throws IOException {
        return Files.readAllBytes(dir.resolve("model.safetensors"));
    }

    @Test
    void appliesTheBoardV1ChainAndIsIdempotent() throws IOException {
        Path board = copyDir(fixtures().resolve("board-v1"), tmp.resolve("board"));
        Path local = copyDir(fixtures().resolve("disk-v2/base"), tmp.resolve("local"));
        Run r = stitch("apply", "--board", board.toString(), "--target", "3", "--checkpoint", local.toString());
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("version 0 -> 3"), r.out());
        assertArrayEquals(model(fixtures().resolve("disk-v2/expected/weight_v000002")), model(local));
        Run again = stitch("apply", "--board", board.toString(), "--target", "3", "--checkpoint", local.toString());
        assertEquals(0, again.code(), again.err());
        assertTrue(again.out().contains("already at version 3"));
        Run future = stitch("apply", "--board", board.toString(), "--target", "4", "--checkpoint", local.toString());
        assertNotEquals(0, future.code());
        assertTrue(future.err().contains("not published"), future.err());
    }

    @Test
    void refusedVersionExitsNonZeroAndChangesNothing() throws IOException {
        Path board = copyDir(fixtures().resolve("board-v1"), tmp.resolve("board"));
        Path local = copyDir(fixtures().resolve("disk-v2/base"), tmp.resolve("local"));
        Path f = board.resolve("versions/weight_v000001/model-00000-of-00001.safetensors");
        byte[] b = Files.readAllBytes(f);
        b[b.length - 3] ^= 0x01;
        Files.write(f, b);
        byte[] before = model(local);
        Run r = stitch("apply", "--board", board.toString(), "--target", "2", "--checkpoint", local.toString());
        assertNotEquals(0, r.code());
        assertTrue(r.err().contains("weight_v000001"), r.err());
        assertEquals(1, r.err().strip().lines().count(), "one line on stderr");
        assertArrayEquals(before, model(local));
    }

    @Test
    void prefersTheAnchorWhenReplayIsTooLong() throws IOException {
        Path board = tmp.resolve("board");
        Path local = copyDir(fixtures().resolve("disk-v2/base"), tmp.resolve("local"));
        String[] states = {"disk-v2/base/model.safetensors", "disk-v2/expected/weight_v000001/model.safetensors",
            "disk-v2/expected/weight_v000002/model.safetensors"};
        for (int v = 1; v <= 2; v++) {
            Path dir = board.resolve(String.format("versions/weight_v%06d", v));
            List<Artifact> arts = new ArrayList<>();
            List<String> files;
            try (SafetensorsFile old = SafetensorsFile.open(fixtures().resolve(states[v - 1]));
                 SafetensorsFile neu = SafetensorsFile.open(fixtures().resolve(states[v]))) {
                List<TensorChange> changes = new ArrayList<>();
                List<TensorData> full = new ArrayList<>();
                for (TensorEntry e : neu.header().tensors()) {
                    full.add(new TensorData(e.spec(), neu.tensor(e)));
                    TensorChange c = diff(e, old.tensor(e.name()), neu.tensor(e));
                    if (c != null) {
                        changes.add(c);
                    }
                }
                WriteResult w = StitchDeltaWriter.defaults().write(v, changes, dir);
                files = w.transitionFiles();
                w.files().forEach(x -> arts.add(x.toArtifact()));
                if (v == 2) {
                    for (WrittenFile x : FullCheckpointWriter.defaults().write(full, dir, "full").files()) {
                        arts.add(x.toArtifact());
                    }
                }
            }
            Manifest m = new Manifest(v, v - 1, "stitch_delta", "auto", files, arts, 1700000000.0 + v, "stitch-delta-1", "zstd",
                "xxh3-128", List.of(), "run-a", null, null, null);
            Files.write(dir.resolve("manifest.json"), m.toBytes());
        }
        Files.write(board.resolve("latest.json"), new LatestPointer("run-a", 2, 1700000002.0, null).toBytes());
        Run r = stitch("apply", "--board", board.toString(), "--target", "2", "--checkpoint", local.toString(), "--max-replay", "1");
        assertEquals(0, r.code(), r.err());
        assertTrue(r.out().contains("applied [2]"), r.out());
        assertArrayEquals(model(fixtures().resolve("disk-v2/expected/weight_v000002")), model(local));

        Path local2 = copyDir(fixtures().resolve("disk-v2/base"), tmp.resolve("local2"));
        Run deltas = stitch("apply", "--board", board.toString(), "--target", "2", "--checkpoint", local2.toString());
        assertEquals(0, deltas.code(), deltas.err());
        assertTrue(deltas.out().contains("applied [1, 2]"), deltas.out());
        assertArrayEquals(model(fixtures().resolve("disk-v2/expected/weight_v000002")), model(local2));
    }

    @Test
    void inspectPrintsEveryFormatAndRejectsCorruptFiles() throws IOException {
        Path fx = fixtures();
        Run sparse = stitch("inspect", fx.resolve("sparse-v1/deltas_zstd/weight_v000001/rank0000_flush000000.safetensors").toString());
        assertEquals(0, sparse.code(), sparse.err());
        assertTrue(sparse.out().contains("27383222740551991510 (verified)"), sparse.out());
        Run disk = stitch("inspect", fx.resolve("disk-v2/overwrite/weight_v000001/model.safetensors.index.json").toString());
        assertTrue(disk.out().contains("overwrite, zstd, xxh3-128, 5 changed tensors"), disk.out());
        Run plain = stitch("inspect", fx.resolve("disk-v2/base/model.safetensors").toString());
        assertTrue(plain.out().contains("format: pt"), plain.out());
        try (SafetensorsFile old = SafetensorsFile.open(fx.resolve("disk-v2/base/model.safetensors"));
             SafetensorsFile neu = SafetensorsFile.open(fx.resolve("disk-v2/expected/weight_v000001/model.safetensors"))) {
            List<TensorChange> changes = new ArrayList<>();
            for (TensorEntry e : neu.header().tensors()) {
                TensorChange c = diff(e, old.tensor(e.name()), neu.tensor(e));
                if (c != null) {
                    changes.add(c);
                }
            }
            StitchDeltaWriter.defaults().write(1, changes, tmp.resolve("sd"));
        }
        Run sd = stitch("inspect", tmp.resolve("sd/delta-00000.stdelta").toString());
        assertEquals(0, sd.code(), sd.err());
        assertTrue(sd.out().contains("stitch_delta (stitch-delta-1)") && sd.out().contains("version 1, base 0, 5 records"), sd.out());
        Path bad = tmp.resolve("bad.safetensors");
        byte[] b = Files.readAllBytes(fx.resolve("sparse-v1/deltas/weight_v000001/rank0000_flush000001.safetensors"));
        b[b.length - 1] ^= 1;
        Files.write(bad, b);
        Run r = stitch("inspect", bad.toString());
        assertNotEquals(0, r.code());
        assertTrue(r.err().contains("checksum mismatch"), r.err());
    }

    private static TensorChange diff(TensorEntry e, MemorySegment old, MemorySegment neu) {
        int w = e.spec().dtype().width();
        List<Long> idx = new ArrayList<>();
        for (long i = 0; i < e.spec().numel(); i++) {
            if (old.asSlice(i * w, w).mismatch(neu.asSlice(i * w, w)) != -1) {
                idx.add(i);
            }
        }
        if (idx.isEmpty()) {
            return null;
        }
        MemorySegment pos = MemorySegment.ofArray(idx.stream().mapToLong(Long::longValue).toArray());
        MemorySegment vals = MemorySegment.ofArray(new byte[idx.size() * w]);
        for (int k = 0; k < idx.size(); k++) {
            MemorySegment.copy(neu, idx.get(k) * w, vals, (long) k * w, w);
        }
        return new TensorChange(e.spec(), idx.size(), pos, 8, vals, false, old, neu);
    }

    static byte[] bytes(MemorySegment s) {
        return s.toArray(ValueLayout.JAVA_BYTE);
    }
}
