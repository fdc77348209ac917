/*
 * Run-time ISA dispatch: picks the variant of each hot kernel when the library loads, from CPUID on
 * x86-64 (scalar / AVX2 / AVX-512) and from the kernel's hardware capabilities on aarch64 (scalar /
 * NEON / SVE), and lets tests and -Dstitch.native.isa cap the choice. The rules and their reasons
 * are in docs/platforms.md.
 */
#include "stitch_internal.h"

#if defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_ASIMD
#define HWCAP_ASIMD (1UL << 1)
#endif
#ifndef HWCAP_SVE
#define HWCAP_SVE (1UL << 22)
#endif
/* Below this SVE vector size NEON has the same width without predicates, so SVE does not pay (docs/platforms.md). */
#define SVE_MIN_BYTES 32
#endif

diff_fn diff_impl = diff_scalar;
count_fn count_impl = count_scalar;
read_fn read_impl = read_scalar;
xxh_acc_fn xxh_accumulate = xxh_accumulate_scalar;
xxh_scr_fn xxh_scramble = xxh_scramble_scalar;
int fused_diff_hash = 0;
static const char *isa_name = "scalar";

/* Picks the best variants the CPU supports, up to max_level (0 scalar, 1 AVX2 or NEON, 2 AVX-512 or SVE). */
static void select_isa(int32_t max_level) {
    diff_impl = diff_scalar;
    count_impl = count_scalar;
    read_impl = read_scalar;
    xxh_accumulate = xxh_accumulate_scalar;
    xxh_scramble = xxh_scramble_scalar;
    isa_name = "scalar";
    fused_diff_hash = 0;
#if defined(__x86_64__)
    __builtin_cpu_init();
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
#elif defined(__aarch64__)
    unsigned long hwcap = getauxval(AT_HWCAP);
    if (max_level >= 1 && (hwcap & HWCAP_ASIMD)) {
        diff_impl = diff_neon;
        count_impl = count_neon;
        read_impl = read_neon;
        xxh_accumulate = xxh_accumulate_neon;
        xxh_scramble = xxh_scramble_neon;
        isa_name = "neon";
    }
    /* The scramble runs once per KiB and stays on NEON; read_stream is bound by memory, not by width. */
    if (max_level >= 2 && (hwcap & HWCAP_ASIMD) && (hwcap & HWCAP_SVE) && sve_vector_bytes() >= SVE_MIN_BYTES) {
        diff_impl = diff_sve;
        count_impl = count_sve;
        xxh_accumulate = xxh_accumulate_sve;
        isa_name = "sve";
    }
#else
    (void) max_level;
#endif
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
