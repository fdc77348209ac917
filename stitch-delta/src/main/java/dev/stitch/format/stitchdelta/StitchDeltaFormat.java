package dev.stitch.format.stitchdelta;

import dev.stitch.tensor.Dtype;

/** Constants of the stitch_delta byte layout, {@code stitch-delta-1} (docs/formats/stitch-delta.md). */
final class StitchDeltaFormat {

    /** {@code 89 'S' 'T' 'D' 0D 0A 1A 0A}: a non-ASCII first byte and CR LF / ^Z bytes catch text-mode mangling. */
    static final byte[] MAGIC = {(byte) 0x89, 'S', 'T', 'D', 0x0D, 0x0A, 0x1A, 0x0A};
    static final String FORMAT_ID = "stitch-delta-1";
    static final int MODE_OVERWRITE = 0;
    static final int MODE_XOR = 1;
    static final int LAYOUT_SPARSE = 0;
    static final int LAYOUT_DENSE = 1;
    static final int CODEC_RAW = 0;
    static final int CODEC_ZSTD = 1;
    /** Fixed dtype codes, independent of any enum order. */
    static final Dtype[] DTYPE_CODES = {
        Dtype.BOOL, Dtype.U8, Dtype.I8, Dtype.F8_E4M3, Dtype.F8_E5M2, Dtype.F8_E8M0, Dtype.I16, Dtype.U16,
        Dtype.F16, Dtype.BF16, Dtype.I32, Dtype.U32, Dtype.F32, Dtype.I64, Dtype.U64, Dtype.F64};
    static final int MAX_RANK = 32;
    static final int MAX_NAME_BYTES = 65535;
    /** Byte length of the fixed file header before the record index. */
    static final int FILE_HEADER = 8 + 2 + 14 + 2 + 8 + 8 + 4;

    private StitchDeltaFormat() {
    }

    static int code(Dtype d) {
        for (int i = 0; i < DTYPE_CODES.length; i++) {
            if (DTYPE_CODES[i] == d) {
                return i;
            }
        }
        throw new AssertionError(d);
    }
}
