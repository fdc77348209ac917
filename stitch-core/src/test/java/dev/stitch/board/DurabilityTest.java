package dev.stitch.board;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.protocol.ArtifactKind;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** docs/conformance.md case 14: unique temp names, files and parent directories synced, observed through a spy. */
class DurabilityTest {
    private static final Pattern TEMP = Pattern.compile("\\.(.+)\\.([0-9a-f]{16})\\.tmp");

    @TempDir
    Path tmp;

    record Event(String kind, Path a, Path b) {
    }

    static final class Spy implements AtomicFiles.Observer {
        final List<Event> events = new ArrayList<>();

        @Override
        public synchronized void tempCreated(Path temp) {
            events.add(new Event("temp", temp, null));
        }

        @Override
        public synchronized void fileSynced(Path file) {
            events.add(new Event("fsync", file, null));
        }

        @Override
        public synchronized void renamed(Path from, Path to) {
            events.add(new Event("rename", from, to));
        }

        @Override
        public synchronized void directorySynced(Path dir) {
            events.add(new Event("dirsync", dir, null));
        }

        int indexOf(String kind, Path a, int from) {
            for (int i = from; i < events.size(); i++) {
                Event e = events.get(i);
                if (e.kind.equals(kind) && e.a.toAbsolutePath().normalize().equals(a.toAbsolutePath().normalize())) {
                    return i;
                }
            }
            return -1;
        }
    }

    @Test
    void everyWriteIsTempSyncRenameDirSync() throws IOException {
        Spy spy = new Spy();
        FilesystemBulletinBoard board = FilesystemBulletinBoard.create(tmp, "r", BoardOptions.defaults().withFiles(new AtomicFiles(spy)));
        Path root = board.root();
        try (VersionPublication pub = board.beginPublish("r", 1)) {
            pub.writeArtifact("model-00000-of-00001.safetensors", ArtifactKind.TRANSITION, out -> out.write(new byte[100]));
            pub.writeArtifact("full/model.safetensors", ArtifactKind.FULL, out -> out.write(new byte[10]));
            pub.commit(ManifestFields.of("stitch_delta", "auto"));
        }
        Set<String> names = new HashSet<>();
        int temps = 0;
        for (int i = 0; i < spy.events.size(); i++) {
            Event e = spy.events.get(i);
            if (!e.kind.equals("temp")) {
                continue;
            }
            temps++;
            String name = e.a.getFileName().toString();
            Matcher m = TEMP.matcher(name);
            assertTrue(m.matches(), name);
            assertFalse(name.endsWith(".safetensors"), name);
            assertTrue(names.add(name), "unique temp name " + name);
            int synced = spy.indexOf("fsync", e.a, i);
            int renamed = spy.indexOf("rename", e.a, i);
            assertTrue(synced > i && renamed > synced, "synced before rename: " + name);
            Event r = spy.events.get(renamed);
            assertEquals(m.group(1), r.b.getFileName().toString());
            assertTrue(spy.indexOf("dirsync", r.b.getParent(), renamed) > renamed, "parent synced after rename: " + r.b);
        }
        assertEquals(5, temps, "initial pointer, two artifacts, manifest, pointer: " + spy.events);
        Path versionDir = root.resolve("versions/weight_v000001");
        int moved = -1;
        for (int i = 0; i < spy.events.size(); i++) {
            Event e = spy.events.get(i);
            if (e.kind.equals("rename") && e.b.equals(versionDir)) {
                moved = i;
                String staging = e.a.getFileName().toString();
                assertTrue(staging.matches("\\.weight_v000001\\.[0-9a-f]{16}\\.staging"), staging);
                assertTrue(spy.indexOf("dirsync", e.a, 0) >= 0 && spy.indexOf("dirsync", e.a, 0) < i, "staging synced before the move");
            }
        }
        assertTrue(moved > 0);
        int versionsSynced = spy.indexOf("dirsync", root.resolve("versions"), moved);
        assertTrue(versionsSynced > moved, "versions/ synced after the move");
        int pointerTemp = -1;
        for (int i = moved; i < spy.events.size(); i++) {
            if (spy.events.get(i).kind.equals("temp")) {
                pointerTemp = i;
            }
        }
        assertTrue(pointerTemp > versionsSynced, "the pointer moves only after the version directory is durable");
        assertTrue(spy.indexOf("dirsync", root, pointerTemp) > pointerTemp, "root synced after the pointer");
    }
}
