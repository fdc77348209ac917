package dev.stitch.tensor;

import java.util.Locale;

/**
 * Element types of safetensors files, with the facts every layer needs: storage width, the torch
 * spelling slime's params use, and the data order the reference safetensors writer uses.
 */
public enum Dtype {
    BOOL("BOOL", "bool", 1, false),
    U8("U8", "uint8", 1, false),
    I8("I8", "int8", 1, false),
    F8_E4M3("F8_E4M3", "float8_e4m3fn", 1, true),
    F8_E5M2("F8_E5M2", "float8_e5m2", 1, true),
    F8_E8M0("F8_E8M0", "float8_e8m0fnu", 1, true),
    I16("I16", "int16", 2, false),
    U16("U16", "uint16", 2, false),
    F16("F16", "float16", 2, true),
    BF16("BF16", "bfloat16", 2, true),
    I32("I32", "int32", 4, false),
    U32("U32", "uint32", 4, false),
    F32("F32", "float32", 4, true),
    I64("I64", "int64", 8, false),
    U64("U64", "uint64", 8, false),
    F64("F64", "float64", 8, true);

    /** Writer data order (docs/formats/common.md §0.2): wide dtypes first, so every tensor stays aligned. */
    private static final Dtype[] WRITE_ORDER = {
        U64, I64, F64, F32, U32, I32, BF16, F16, U16, I16, F8_E8M0, F8_E4M3, F8_E5M2, I8, U8, BOOL
    };

    private final String safetensorsName;
    private final String torchName;
    private final int width;
    private final boolean floating;

    Dtype(String safetensorsName, String torchName, int width, boolean floating) {
        this.safetensorsName = safetensorsName;
        this.torchName = torchName;
        this.width = width;
        this.floating = floating;
    }

    /** The spelling in a safetensors header ({@code "BF16"}). */
    public String safetensorsName() {
        return safetensorsName;
    }

    /** torch's name without the {@code torch.} prefix ({@code "bfloat16"}), as slime v1 params carry it. */
    public String torchName() {
        return torchName;
    }

    /** Storage element width in bytes (1, 2, 4 or 8). */
    public int width() {
        return width;
    }

    public boolean isFloatingPoint() {
        return floating;
    }

    /** Rank in the reference writer's data order; lower sorts first. */
    public int writeRank() {
        for (int i = 0; i < WRITE_ORDER.length; i++) {
            if (WRITE_ORDER[i] == this) {
                return i;
            }
        }
        throw new AssertionError(this);
    }

    /** Parses a safetensors dtype name; unknown names are an error, never a guess. */
    public static Dtype fromSafetensors(String name) {
        for (Dtype d : values()) {
            if (d.safetensorsName.equals(name)) {
                return d;
            }
        }
        throw new IllegalArgumentException("unknown safetensors dtype '" + name + "'");
    }

    /** Parses a torch dtype name, with or without the {@code torch.} prefix. */
    public static Dtype fromTorch(String name) {
        String n = name.startsWith("torch.") ? name.substring(6) : name;
        for (Dtype d : values()) {
            if (d.torchName.equals(n)) {
                return d;
            }
        }
        throw new IllegalArgumentException("unknown torch dtype '" + name + "'");
    }

    @Override
    public String toString() {
        return safetensorsName.toUpperCase(Locale.ROOT);
    }
}
