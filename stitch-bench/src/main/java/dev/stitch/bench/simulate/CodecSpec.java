package dev.stitch.bench.simulate;

import dev.stitch.format.DeltaFormat;
import java.util.List;
import java.util.Locale;

/**
 * A backend and its encoding as the simulation names them: {@code full}, {@code sparse_delta:indices|deltas|deltas_zstd},
 * {@code disk_delta:xor|overwrite}, {@code stitch_delta:xor|overwrite}.
 */
record CodecSpec(String backend, String encoding) {

    private static final List<String> SPARSE = List.of("indices", "deltas", "deltas_zstd");
    private static final List<String> VALUE_MODES = List.of("xor", "overwrite");

    static CodecSpec parse(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT).replace('-', '_');
        int colon = t.indexOf(':');
        DeltaFormat format = DeltaFormat.parse(colon < 0 ? t : t.substring(0, colon));
        String backend = format.id();
        String encoding = colon < 0 ? null : t.substring(colon + 1);
        if (format == DeltaFormat.FULL) {
            if (encoding != null && !encoding.equals("full")) {
                throw new IllegalArgumentException("full has no encodings, got '" + text + "'");
            }
            return new CodecSpec(backend, "full");
        }
        if (format == DeltaFormat.SPARSE_DELTA) {
            String e = encoding == null ? "deltas_zstd" : encoding;
            if (!SPARSE.contains(e)) {
                throw new IllegalArgumentException("sparse_delta encodings are " + SPARSE + ", got '" + text + "'");
            }
            return new CodecSpec(backend, e);
        }
        String e = encoding == null ? "xor" : encoding;
        if (!VALUE_MODES.contains(e)) {
            throw new IllegalArgumentException(backend + " encodings are " + VALUE_MODES + ", got '" + text + "'");
        }
        return new CodecSpec(backend, e);
    }

    /** The format this spec names. */
    DeltaFormat format() {
        return DeltaFormat.parse(backend);
    }

    @Override
    public String toString() {
        return backend.equals(encoding) ? backend : backend + ":" + encoding;
    }
}
