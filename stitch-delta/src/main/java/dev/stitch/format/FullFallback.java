package dev.stitch.format;

/**
 * How a version must be published when a delta format cannot express it (a changed tensor set, a
 * change the encoding cannot carry; docs/formats/anchors-and-fallback.md §6), so that the format's readers still reach
 * the new weights.
 */
public enum FullFallback {

    /** A full-only version whose checkpoint lies under {@code full/}, as anchors do (docs/formats/anchors-and-fallback.md §5). */
    ANCHOR_DIRECTORY,

    /**
     * A full-only version whose checkpoint (index and shards) is the version directory itself: slime v2
     * receivers take such a directory as a reset to its contents (docs/formats/disk-delta.md §3.5), while a
     * directory without weight files would reset them to nothing.
     */
    VERSION_DIRECTORY,

    /**
     * No full version at all unless the publisher is told otherwise: upstream v1 consumers cannot load
     * one and would mark it applied without loading anything (docs/formats/sparse-delta.md §2.8).
     */
    REFUSED
}
