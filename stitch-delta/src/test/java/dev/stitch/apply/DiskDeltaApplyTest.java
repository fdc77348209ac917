package dev.stitch.apply;
import dev.stitch.testing.Fixtures;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class DiskDeltaApplyTest {

    @TempDir
    Path tmp;

    static Path copyDir(Path src, Path dst) throws IOException {
        Files.createDirectories(dst);
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

    static byte[] model(Path dir) throws IOException {
        return Files.readAllBytes(dir.resolve("model.safetensors"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"xor", "overwrite"})
    void fixtureChainReachesExpectedBytes(String encoding) throws Exception {
        Path local = copyDir(Fixtures.path("disk-v2/base"), tmp.resolve("local"));
        Path chain = Fixtures.path("disk-v2/" + encoding);
        try (HostApplier a = HostApplier.open(local)) {
            assertEquals(0, a.version());
            ApplyResult r = a.apply(List.of(step(chain, 1)), ApplyProgress.NONE);
            assertEquals(List.of(1L), r.applied());
            assertArrayEquals(model(Fixtures.path("disk-v2/expected/weight_v000001")), model(local));
            a.apply(List.of(step(chain, 1), step(chain, 2)), ApplyProgress.NONE);
            assertArrayEquals(model(Fixtures.path("disk-v2/expected/weight_v000002")), model(local));
            assertEquals(2, a.version());
            // re-applying is a no-op, never a second xor
            ApplyResult again = a.apply(List.of(step(chain, 1), step(chain, 2)), ApplyProgress.NONE);
            assertEquals(List.of(1L, 2L), again.skipped());
            assertArrayEquals(model(Fixtures.path("disk-v2/expected/weight_v000002")), model(local));
        }
        HostState s = HostState.read(local.resolve(".weight_sync/state.json"));
        assertEquals(2, s.version());
        assertNull(s.applying());
        assertTrue(Files.readString(local.resolve(".weight_sync/state.json")).contains("\"version\":\"000002\""));
    }

    @Test
    void wrongBaseAndCorruptPayloadChangeNothing() throws Exception {
        Path local = copyDir(Fixtures.path("disk-v2/base"), tmp.resolve("local"));
        byte[] before = model(local);
        Path chain = Fixtures.path("disk-v2/xor");
        try (HostApplier a = HostApplier.open(local)) {
            RefusedVersionException e = assertThrows(RefusedVersionException.class, () -> a.apply(List.of(step(chain, 2)), ApplyProgress.NONE));
            assertEquals(RefusedVersionException.Reason.WRONG_BASE, e.reason());
            assertTrue(e.getMessage().contains("local at 0, delta builds on 1"), e.getMessage());
        }
        assertArrayEquals(before, model(local));
        // flip a byte inside the first payload frame: zstd or the digest catches it, nothing is written
        Path bad = copyDir(chain.resolve("weight_v000001"), tmp.resolve("bad/weight_v000001"));
        Path f = bad.resolve("model-00000-of-00001.safetensors");
        byte[] bytes = Files.readAllBytes(f);
        bytes[bytes.length - 20] ^= 0x40;
        Files.write(f, bytes);
        try (HostApplier a = HostApplier.open(local)) {
            RefusedVersionException e = assertThrows(RefusedVersionException.class,
                () -> a.apply(List.of(step(tmp.resolve("bad"), 1)), ApplyProgress.NONE));
            assertTrue(e.reason() == RefusedVersionException.Reason.CHECKSUM || e.reason() == RefusedVersionException.Reason.MALFORMED);
            assertEquals(0, a.version());
        }
        assertArrayEquals(before, model(local));
        // a wrong digest in the metadata, with an intact payload
        Path lying = copyDir(chain.resolve("weight_v000001"), tmp.resolve("lying/weight_v000001"));
        Path lf = lying.resolve("model-00000-of-00001.safetensors");
        String text = new String(Files.readAllBytes(lf), java.nio.charset.StandardCharsets.ISO_8859_1);
        String digest = "5c148e239411a41c089f7e19a9d269a3";
        assertTrue(text.contains(digest));
        Files.write(lf, text.replace(digest, "5c148e239411a41c089f7e19a9d269a4").getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
        try (HostApplier a = HostApplier.open(local)) {
            RefusedVersionException e = assertThrows(RefusedVersionException.class,
                () -> a.apply(List.of(step(tmp.resolve("lying"), 1)), ApplyProgress.NONE));
            assertEquals(RefusedVersionException.Reason.CHECKSUM, e.reason());
            assertTrue(e.getMessage().contains("model.embed_tokens.weight"), e.getMessage());
        }
        assertArrayEquals(before, model(local));
        assertTrue(Files.notExists(local.resolve(".weight_sync/state.json")) || HostState.read(local.resolve(".weight_sync/state.json")).version() == 0);
    }

    @Test
    void lockIsExclusiveAndInterruptedApplyMarksDirty() throws Exception {
        Path local = copyDir(Fixtures.path("disk-v2/base"), tmp.resolve("local"));
        try (HostApplier a = HostApplier.open(local)) {
            assertThrows(IOException.class, () -> HostApplier.open(local));
        }
        Files.writeString(local.resolve(".weight_sync/state.json"), "{\"version\": \"000001\", \"applying\": \"000002\", \"custom\": [1]}");
        try (HostApplier a = HostApplier.open(local)) {
            assertTrue(a.state().dirtyReason().contains("interrupted"));
            RefusedVersionException e = assertThrows(RefusedVersionException.class,
                () -> a.apply(List.of(step(Fixtures.path("disk-v2/xor"), 2)), ApplyProgress.NONE));
            assertEquals(RefusedVersionException.Reason.DIRTY, e.reason());
            a.rebuildFrom(Fixtures.path("disk-v2/base"));
            assertEquals(0, a.version());
            assertTrue(a.state().baseFingerprint().startsWith("sha256:"));
            a.apply(List.of(step(Fixtures.path("disk-v2/xor"), 1)), ApplyProgress.NONE);
        }
        assertArrayEquals(model(Fixtures.path("disk-v2/expected/weight_v000001")), model(local));
        assertTrue(Files.readString(local.resolve(".weight_sync/state.json")).contains("\"custom\":[1]"), "unknown keys kept");
    }

    static VersionStep step(Path chain, long v) {
        Path dir = chain.resolve(String.format("weight_v%06d", v));
        return VersionStep.delta(v, "disk_delta", dir, List.of("model-00000-of-00001.safetensors"));
    }
}
