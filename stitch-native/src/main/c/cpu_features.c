/*
 * Run-time ISA dispatch: picks the AVX-512 / AVX2 / scalar variant of each hot kernel from CPUID
 * when the library loads, and lets tests and -Dstitch.native.isa cap the choice.
 */
#include "stitch_internal.h"

diff_fn diff_impl = diff_scalar;
count_fn count_impl = count_scalar;
read_fn read_impl = read_scalar;
xxh_acc_fn xxh_accumulate = xxh_accumulate_scalar;
xxh_scr_fn xxh_scramble = xxh_scramble_scalar;
int fused_diff_hash = 0;
static const char *isa_name = "scalar";

/* Picks the best variants the CPU supports, up to max_level (0 scalar, 1 AVX2, 2 AVX-512). */
static void select_isa(int32_t max_level) {
    __builtin_cpu_init();
    diff_impl = diff_scalar;
    count_impl = count_scalar;
    read_impl = read_scalar;
    xxh_accumulate = xxh_accumulate_scalar;
    xxh_scramble = xxh_scramble_scalar;
    isa_name = "scalar";
    fused_diff_hash = 0;
    if (max_level >= 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2")) {
        diff_impl = diff_avx2;
        count_impl = count_avx2;
        read_impl = read_avx2;
        xxh_accumulate = xxh_accumulate_avx2;
        xxh_scramble = xxh_scramble_avx2;
        isa_name = "avx2";
    }
    if (max_level >= 2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
        && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("bmi2")) {
        diff_impl = diff_avx512;
        count_impl = count_avx512;
        xxh_accumulate = xxh_accumulate_avx512;
        xxh_scramble = xxh_scramble_avx512;
        fused_diff_hash = 1;
        isa_name = "avx512";
    }
}

__attribute__((constructor))
static void stitch_select_isa(void) {
    select_isa(2);
}

/* Restricts dispatch to at most max_level (for tests and -Dstitch.native.isa); returns the ISA now in use. */
STITCH_EXPORT const char *stitch_cap_isa(int32_t max_level) {
    select_isa(max_level);
    return isa_name;
}

STITCH_EXPORT const char *stitch_isa(void) {
    return isa_name;
}
