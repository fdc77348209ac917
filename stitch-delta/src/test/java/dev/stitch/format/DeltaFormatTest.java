package dev.stitch.format;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.stitch.encode.ValueMode;
import dev.stitch.format.sparse.SparseEncoding;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class DeltaFormatTest {

    @Test
    void theRegistryHoldsFourFormatsByTheirManifestIds() {
        assertEquals(List.of("stitch_delta", "sparse_delta", "disk_delta", "full"),
                DeltaFormat.all().stream().map(DeltaFormat::id).toList());
        for (DeltaFormat f : DeltaFormat.all()) {
            assertSame(f, DeltaFormat.byId(f.id()).orElseThrow());
            assertSame(f, DeltaFormat.parse(f.id()));
            assertEquals(f.id(), f.toString());
        }
        assertEquals(Optional.empty(), DeltaFormat.byId("Stitch-Delta"), "manifest ids are matched exactly");
        assertEquals(Optional.empty(), DeltaFormat.byId("zip"));
    }

    @Test
    void parsingAcceptsDashesAndAnyCaseAndListsTheIdsOnError() {
        assertSame(DeltaFormat.STITCH_DELTA, DeltaFormat.parse("stitch-delta"));
        assertSame(DeltaFormat.SPARSE_DELTA, DeltaFormat.parse(" Sparse_Delta "));
        assertSame(DeltaFormat.DISK_DELTA, DeltaFormat.parse("DISK-DELTA"));
        assertSame(DeltaFormat.FULL, DeltaFormat.parse("Full"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DeltaFormat.parse("zip"));
        assertEquals("unknown backend 'zip' (expected stitch_delta, sparse_delta, disk_delta or full)", e.getMessage());
    }

    @Test
    void onlyFullVersionsAreLoadedWhole() {
        assertTrue(DeltaFormat.isFullOnly("full"));
        assertFalse(DeltaFormat.isFullOnly("disk_delta"));
        assertFalse(DeltaFormat.isFullOnly("something_else"));
        assertFalse(DeltaFormat.FULL.hasTransition());
        assertThrows(IllegalStateException.class, () -> DeltaFormat.FULL.newWriter(FormatOptions.defaults(), null));
        List<Class<?>> writers = List.of(dev.stitch.format.stitchdelta.StitchDeltaWriter.class,
                dev.stitch.format.sparse.SparseDeltaWriter.class, dev.stitch.format.disk.DiskDeltaWriter.class);
        for (int i = 0; i < writers.size(); i++) {
            DeltaFormat f = DeltaFormat.all().get(i);
            assertTrue(f.hasTransition(), f.id());
            try (VersionWriter w = f.newWriter(FormatOptions.defaults(), null)) {
                assertSame(writers.get(i), w.getClass(), f.id());
            }
        }
    }

    @Test
    void eachFormatStatesHowAVersionItCannotExpressIsPublished() {
        assertEquals(FullFallback.ANCHOR_DIRECTORY, DeltaFormat.STITCH_DELTA.fullFallback());
        assertEquals(FullFallback.REFUSED, DeltaFormat.SPARSE_DELTA.fullFallback());
        assertEquals(FullFallback.VERSION_DIRECTORY, DeltaFormat.DISK_DELTA.fullFallback());
        assertEquals(FullFallback.ANCHOR_DIRECTORY, DeltaFormat.FULL.fullFallback());
    }

    @Test
    void codecsAndValueModesReachOnlyTheirOwnFormat() {
        FormatOptions d = FormatOptions.defaults();
        FormatOptions stitch = DeltaFormat.STITCH_DELTA.withCodec(d, "overwrite");
        assertEquals(ValueMode.OVERWRITE, stitch.stitchValues());
        assertEquals(ValueMode.OVERWRITE, DeltaFormat.STITCH_DELTA.diffValues(stitch));
        assertEquals("overwrite", DeltaFormat.STITCH_DELTA.valueMode(stitch));
        assertEquals(d.diskEncoding(), stitch.diskEncoding());

        FormatOptions disk = DeltaFormat.DISK_DELTA.withCodec(d, "xor");
        assertEquals(ValueMode.XOR, disk.diskEncoding());
        assertEquals(ValueMode.OVERWRITE, DeltaFormat.DISK_DELTA.diffValues(disk), "disk_delta payloads are built from new bytes");
        assertEquals("xor", DeltaFormat.DISK_DELTA.valueMode(disk));

        FormatOptions sparse = DeltaFormat.SPARSE_DELTA.withCodec(d, "indices");
        assertEquals(SparseEncoding.INDICES, sparse.sparseEncoding());
        assertEquals(null, DeltaFormat.SPARSE_DELTA.valueMode(sparse));

        assertThrows(IllegalArgumentException.class, () -> DeltaFormat.FULL.withCodec(d, "xor"));
        assertThrows(IllegalArgumentException.class, () -> DeltaFormat.DISK_DELTA.withCodec(d, "indices"));
        assertEquals(List.of(dev.stitch.format.disk.DiskDeltaIndex.FILE), DeltaFormat.DISK_DELTA.metaFiles());
        assertTrue(DeltaFormat.STITCH_DELTA.takesEscapedPlanes() && !DeltaFormat.DISK_DELTA.takesEscapedPlanes());
    }

    @Test
    void formatOptionsRejectNonPositiveSizes() {
        assertThrows(IllegalArgumentException.class, () -> FormatOptions.defaults().withBucketBytes(0));
        assertThrows(IllegalArgumentException.class, () -> FormatOptions.defaults().withMaxFileBytes(-1));
    }
}
