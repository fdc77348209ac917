package dev.stitch.router;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code --replicas-file}: one replica URL a line, blank lines and {@code #} comments ignored. Re-read whenever its
 * modification time or size changes (checked every {@code checkMs}); the membership becomes exactly its list, so a
 * line removed is a replica removed (docs/protocol/router.md §3.1). A file that cannot be read or holds a bad URL
 * leaves the membership as it was.
 */
public final class ReplicasFile implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ReplicasFile.class);
    private final Path file;
    private final Fleet fleet;
    private final Thread watcher;
    private FileTime lastModified;
    private long lastSize = -1;

    public ReplicasFile(Path file, Fleet fleet, long checkMs) throws IOException {
        this.file = file;
        this.fleet = fleet;
        fleet.replaceWith(read(file));
        lastModified = Files.getLastModifiedTime(file);
        lastSize = Files.size(file);
        this.watcher = Thread.ofVirtual().name("stitch-router-replicas-file").start(() -> watch(checkMs));
    }

    /** The URLs a replicas file lists. */
    public static List<String> read(Path file) throws IOException {
        List<String> urls = new ArrayList<>();
        for (String line : Files.readAllLines(file)) {
            String t = line.strip();
            if (!t.isEmpty() && !t.startsWith("#")) {
                urls.add(t);
            }
        }
        return urls;
    }

    private void watch(long checkMs) {
        while (!Thread.currentThread().isInterrupted()) {
            try {
                Thread.sleep(checkMs);
                FileTime m = Files.getLastModifiedTime(file);
                long size = Files.size(file);
                if (!m.equals(lastModified) || size != lastSize) {
                    lastModified = m;
                    lastSize = size;
                    fleet.replaceWith(read(file));
                    LOG.info("replicas file {} re-read: {} replica(s)", file, fleet.urls().size());
                }
            } catch (InterruptedException e) {
                return;
            } catch (IOException | IllegalArgumentException e) {
                LOG.warn("replicas file {} not applied: {}", file, e.toString());
            }
        }
    }

    @Override
    public void close() {
        watcher.interrupt();
    }
}
