package dev.stitch.hash;

/**
 * A faster source of {@link Xxh3Stream}s than the pure-Java {@link Xxh3.Hasher}, found through
 * {@link java.util.ServiceLoader} (stitch-native registers its SIMD kernels), so core code such as
 * the artifact writer hashes at native speed without depending on the native module.
 */
public interface Xxh3Provider {

    /** A new stream, equal in results to {@link Xxh3#newHasher()}. */
    Xxh3Stream newStream();
}
