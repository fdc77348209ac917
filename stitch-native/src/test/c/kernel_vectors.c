/*
 * The kernel vector harness: runs every case of a vector file (written by the Java test class
 * dev.stitch.kernels.KernelVectors from the Java kernels' outputs) through the C kernels, at every
 * ISA level this CPU offers (stitch_cap_isa 0, 1, 2), and compares each output with the Java one
 * byte for byte. Inputs sit at varying misalignments between guard bytes; a kernel that writes
 * outside an output's capacity, or into an input it must only read, fails the case as well.
 * run-vectors.sh builds and runs it for x86_64 natively and for aarch64 under qemu-aarch64.
 *
 * usage: kernel_vectors VECTORS_FILE        exit 0: all match; 1: a mismatch; 2: unusable input.
 * The file layout is documented in KernelVectorFile.java (src/test/java/dev/stitch/kernels).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stitch_kernels.h"

#define GUARD 64
#define GUARD_BYTE 0xA5
#define MAX_BUFFERS 8
#define MAX_PRINTED 25

typedef struct {
    const uint8_t *data;
    uint64_t len;
} span;

typedef struct {
    char name[512];
    char kernel[64];
    uint32_t nscalars;
    const uint8_t *scalars;
    uint32_t nin;
    span in[MAX_BUFFERS];
    uint32_t nout;
    span out[MAX_BUFFERS];
} vcase;

/* A buffer between guard bytes, at a chosen misalignment. */
typedef struct {
    uint8_t *base;
    uint8_t *p;
    uint64_t len;
    uint64_t misalign;
} guarded;

/* What one kernel call produced, in the order the vector file lists the expected outputs. */
typedef struct {
    uint32_t n;
    const uint8_t *data[MAX_BUFFERS];
    uint64_t len[MAX_BUFFERS];
    uint8_t words[MAX_BUFFERS][16];
} outputs;

/* The buffers of one call: its inputs (copied) and the outputs it allocated. */
typedef struct {
    guarded in[MAX_BUFFERS];
    guarded extra[MAX_BUFFERS];
    uint32_t nextra;
    uint64_t misalign;
} call;

static void die(const char *what) {
    fprintf(stderr, "kernel_vectors: %s\n", what);
    exit(2);
}

static uint64_t rd64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

static uint32_t rd32(const uint8_t *p) {
    return (uint32_t) p[0] | ((uint32_t) p[1] << 8) | ((uint32_t) p[2] << 16) | ((uint32_t) p[3] << 24);
}

static void wr64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t) (v >> (8 * i));
    }
}

/* ---- reading the file -------------------------------------------------------------------- */

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} cursor;

static const uint8_t *take(cursor *c, uint64_t n) {
    if ((uint64_t) (c->end - c->p) < n) {
        die("vector file is truncated");
    }
    const uint8_t *at = c->p;
    c->p += n;
    return at;
}

static void take_string(cursor *c, char *dst, size_t cap) {
    uint32_t n = rd32(take(c, 4));
    if (n >= cap) {
        die("name too long in vector file");
    }
    memcpy(dst, take(c, n), n);
    dst[n] = 0;
}

static uint32_t take_spans(cursor *c, span *spans) {
    uint32_t n = rd32(take(c, 4));
    if (n > MAX_BUFFERS) {
        die("too many buffers in one case");
    }
    for (uint32_t i = 0; i < n; i++) {
        spans[i].len = rd64(take(c, 8));
        spans[i].data = take(c, spans[i].len);
    }
    return n;
}

static uint8_t *read_file(const char *path, uint64_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *data = malloc((size_t) n + 1);
    if (!data || fread(data, 1, (size_t) n, f) != (size_t) n) {
        die("cannot read the vector file");
    }
    fclose(f);
    *size = (uint64_t) n;
    return data;
}

/* ---- guarded buffers --------------------------------------------------------------------- */

static guarded make_guarded(uint64_t len, uint64_t misalign, const uint8_t *init) {
    guarded g;
    g.base = malloc(GUARD + misalign + len + GUARD);
    if (!g.base) {
        die("out of memory");
    }
    memset(g.base, GUARD_BYTE, GUARD + misalign + len + GUARD);
    g.p = g.base + GUARD + misalign;
    g.len = len;
    g.misalign = misalign;
    if (init && len) {
        memcpy(g.p, init, len);
    }
    return g;
}

static int guards_intact(const guarded *g) {
    for (uint8_t *q = g->base; q < g->p; q++) {
        if (*q != GUARD_BYTE) {
            return 0;
        }
    }
    for (uint8_t *q = g->p + g->len; q < g->p + g->len + GUARD; q++) {
        if (*q != GUARD_BYTE) {
            return 0;
        }
    }
    return 1;
}

/* A zero-filled output buffer of the call, guarded like its inputs. */
static uint8_t *scratch(call *cl, uint64_t len) {
    if (cl->nextra == MAX_BUFFERS) {
        die("too many scratch buffers");
    }
    cl->extra[cl->nextra] = make_guarded(len, (cl->misalign * 5 + cl->nextra) % 16, NULL);
    memset(cl->extra[cl->nextra].p, 0, len);
    return cl->extra[cl->nextra++].p;
}

static void out_i64(outputs *o, int64_t v) {
    wr64(o->words[o->n], (uint64_t) v);
    o->data[o->n] = o->words[o->n];
    o->len[o->n++] = 8;
}

static void out_bytes(outputs *o, const uint8_t *p, uint64_t len) {
    o->data[o->n] = p;
    o->len[o->n++] = len;
}

/* A result slice of count items of size unit, clamped to the capacity so a wrong count cannot read past it. */
static void out_slice(outputs *o, const uint8_t *p, int64_t count, int64_t unit, uint64_t capacity) {
    uint64_t len = count <= 0 ? 0 : (uint64_t) count * (uint64_t) unit;
    out_bytes(o, p, len < capacity ? len : capacity);
}

static void out_digest(outputs *o, const uint64_t *d) {
    wr64(o->words[o->n], d[0]);
    wr64(o->words[o->n] + 8, d[1]);
    o->data[o->n] = o->words[o->n];
    o->len[o->n++] = 16;
}

/* ---- the kernels ------------------------------------------------------------------------- */

#define S(i) ((int64_t) rd64(c->scalars + 8 * (i)))
#define IN(i) (cl->in[i].p)
#define LEN(i) ((int64_t) cl->in[i].len)

static int32_t kind_width(int64_t kind) {
    return kind == 1 || kind == 2 ? 2 : kind == 3 ? 4 : kind == 4 ? 8 : 1;
}

static void run_count_changed(const vcase *c, call *cl, outputs *o) {
    out_i64(o, stitch_count_changed(IN(0), IN(1), LEN(0), (int32_t) S(0)));
}

static void run_diff_gather(const vcase *c, call *cl, outputs *o) {
    int32_t w = (int32_t) S(0), pw = (int32_t) S(2);
    int64_t n = LEN(0) / w;
    uint8_t *pos = scratch(cl, (uint64_t) (n * pw));
    uint8_t *val = scratch(cl, (uint64_t) (n * w));
    int64_t r = stitch_diff_gather(IN(0), IN(1), LEN(0), w, S(1), pos, pw, val, (int32_t) S(3), (int32_t) S(4));
    out_i64(o, r);
    out_slice(o, pos, r, pw, (uint64_t) (n * pw));
    out_slice(o, val, r, w, (uint64_t) (n * w));
    out_bytes(o, IN(0), (uint64_t) LEN(0));
}

static void run_diff_gather_xxh3(const vcase *c, call *cl, outputs *o) {
    int32_t w = (int32_t) S(0), pw = (int32_t) S(2);
    int64_t n = LEN(0) / w;
    uint8_t *pos = scratch(cl, (uint64_t) (n * pw));
    uint8_t *val = scratch(cl, (uint64_t) (n * w));
    uint64_t st[STITCH_XXH3_STATE_WORDS];
    uint64_t d[2];
    stitch_xxh3_stream_reset(st);
    stitch_xxh3_stream_update(st, IN(2), LEN(2));
    int64_t r = stitch_diff_gather_xxh3(IN(0), IN(1), LEN(0), w, S(1), pos, pw, val, (int32_t) S(3), (int32_t) S(4), st);
    stitch_xxh3_stream_digest(st, d);
    out_i64(o, r);
    out_slice(o, pos, r, pw, (uint64_t) (n * pw));
    out_slice(o, val, r, w, (uint64_t) (n * w));
    out_bytes(o, IN(0), (uint64_t) LEN(0));
    out_digest(o, d);
}

static void run_scatter(const vcase *c, call *cl, outputs *o) {
    int32_t w = (int32_t) S(0), pw = (int32_t) S(1);
    out_i64(o, stitch_scatter(IN(0), S(3), w, IN(1), pw, IN(2), LEN(2) / w, (int32_t) S(2)));
    out_bytes(o, IN(0), (uint64_t) LEN(0));
}

static void run_scatter_escaped(const vcase *c, call *cl, outputs *o) {
    int32_t w = (int32_t) S(0);
    out_i64(o, stitch_scatter_escaped(IN(0), w, IN(1), LEN(1) / 2, IN(2), (int32_t) S(1)));
    out_bytes(o, IN(0), (uint64_t) LEN(0));
}

static void run_xor_into(const vcase *c, call *cl, outputs *o) {
    (void) c;
    stitch_xor_into(IN(0), IN(1), LEN(1));
    out_bytes(o, IN(0), (uint64_t) LEN(0));
}

static void run_overwrite_bytes(const vcase *c, call *cl, outputs *o) {
    (void) c;
    out_i64(o, stitch_overwrite_bytes(IN(0), LEN(0), IN(1), IN(2), LEN(2)));
    out_bytes(o, IN(0), (uint64_t) LEN(0));
}

static void run_patched_xxh3(const vcase *c, call *cl, outputs *o) {
    int32_t w = (int32_t) S(0);
    uint64_t d[2] = {0, 0};
    int64_t r = stitch_patched_xxh3(IN(0), LEN(0), w, IN(1), (int32_t) S(1), IN(2), LEN(2) / w, (int32_t) S(2), d);
    out_i64(o, r);
    out_bytes(o, IN(0), (uint64_t) LEN(0));
    if (r >= 0) {
        out_digest(o, d);
    }
}

static void run_scatter_xxh3(const vcase *c, call *cl, outputs *o) {
    int32_t w = (int32_t) S(0);
    int64_t count = LEN(2) / w;
    uint8_t *undo = scratch(cl, (uint64_t) (count * w));
    uint64_t d[2] = {0, 0};
    int64_t r = stitch_scatter_xxh3(IN(0), LEN(0), w, IN(1), (int32_t) S(1), IN(2), count, (int32_t) S(2), undo, d);
    out_i64(o, r);
    out_bytes(o, IN(0), (uint64_t) LEN(0));
    if (r >= 0) {
        out_bytes(o, undo, (uint64_t) (count * w));
        out_digest(o, d);
    }
}

static void run_restore_undo(const vcase *c, call *cl, outputs *o) {
    int32_t w = (int32_t) S(0);
    stitch_restore_undo(IN(0), w, IN(1), (int32_t) S(1), IN(2), LEN(2) / w);
    out_bytes(o, IN(0), (uint64_t) LEN(0));
}

static void run_scatter_escaped_xxh3(const vcase *c, call *cl, outputs *o) {
    int32_t w = (int32_t) S(0);
    int64_t count = LEN(2) / w;
    uint8_t *undo = scratch(cl, (uint64_t) (count * w));
    uint64_t d[2];
    stitch_scatter_escaped_xxh3(IN(0), LEN(0), w, IN(1), LEN(1) / 2, IN(2), (int32_t) S(1), undo, d);
    out_bytes(o, IN(0), (uint64_t) LEN(0));
    out_bytes(o, undo, (uint64_t) (count * w));
    out_digest(o, d);
}

static void run_max_gap(const vcase *c, call *cl, outputs *o) {
    int32_t pw = (int32_t) S(0);
    out_i64(o, stitch_max_gap(IN(0), pw, LEN(0) / pw));
}

static void run_encode_gaps(const vcase *c, call *cl, outputs *o) {
    int32_t pw = (int32_t) S(0), gw = (int32_t) S(1);
    int64_t count = LEN(0) / pw;
    uint8_t *gaps = scratch(cl, (uint64_t) (count * gw));
    stitch_encode_gaps(IN(0), pw, count, gaps, gw);
    out_bytes(o, gaps, (uint64_t) (count * gw));
}

static void run_decode_gaps(const vcase *c, call *cl, outputs *o) {
    int32_t gw = (int32_t) S(0), pw = (int32_t) S(1);
    int64_t count = LEN(0) / gw;
    uint8_t *pos = scratch(cl, (uint64_t) (count * pw));
    stitch_decode_gaps(IN(0), gw, count, pos, pw);
    out_bytes(o, pos, (uint64_t) (count * pw));
}

static void run_escaped_gap_units(const vcase *c, call *cl, outputs *o) {
    int32_t pw = (int32_t) S(0);
    out_i64(o, stitch_escaped_gap_units(IN(0), pw, LEN(0) / pw));
}

static void run_encode_escaped_gaps(const vcase *c, call *cl, outputs *o) {
    int32_t pw = (int32_t) S(0);
    int64_t capacity = S(1);
    uint8_t *units = scratch(cl, (uint64_t) (capacity * 2));
    int64_t r = stitch_encode_escaped_gaps(IN(0), pw, LEN(0) / pw, units, capacity, S(2));
    out_i64(o, r);
    if (r >= 0) {
        out_slice(o, units, r, 2, (uint64_t) (capacity * 2));
    }
}

static void run_decode_escaped_gaps(const vcase *c, call *cl, outputs *o) {
    int32_t pw = (int32_t) S(0);
    int64_t max = S(1);
    uint8_t *pos = scratch(cl, (uint64_t) (max * pw));
    int64_t detail = 0;
    int64_t r = stitch_decode_escaped_gaps(IN(0), LEN(0) / 2, pos, pw, max, S(2), &detail);
    out_i64(o, r);
    if (r >= 0) {
        out_slice(o, pos, r, pw, (uint64_t) (max * pw));
    } else if (r == -3) {
        out_i64(o, detail);
    }
}

static void run_escaped_summary(const vcase *c, call *cl, outputs *o) {
    (void) c;
    int64_t s[2];
    stitch_escaped_summary(IN(0), LEN(0) / 2, s);
    uint64_t d[2] = {(uint64_t) s[0], (uint64_t) s[1]};
    out_digest(o, d);
}

static void run_split_planes(const vcase *c, call *cl, outputs *o) {
    int32_t w = (int32_t) S(0);
    uint8_t *dst = scratch(cl, (uint64_t) LEN(0));
    stitch_split_planes(IN(0), w, LEN(0) / w, dst);
    out_bytes(o, dst, (uint64_t) LEN(0));
}

static void run_merge_planes(const vcase *c, call *cl, outputs *o) {
    int32_t w = (int32_t) S(0);
    uint8_t *dst = scratch(cl, (uint64_t) LEN(0));
    stitch_merge_planes(IN(0), w, LEN(0) / w, dst);
    out_bytes(o, dst, (uint64_t) LEN(0));
}

static void run_contains_nan(const vcase *c, call *cl, outputs *o) {
    out_i64(o, stitch_contains_nan(IN(0), LEN(0) / kind_width(S(0)), (int32_t) S(0)));
}

static void run_xor_bytes(const vcase *c, call *cl, outputs *o) {
    (void) c;
    out_i64(o, stitch_xor_bytes(IN(0), LEN(0)));
}

static void run_xor_widened(const vcase *c, call *cl, outputs *o) {
    out_i64(o, stitch_xor_widened(IN(0), LEN(0) / kind_width(S(0)), (int32_t) S(0)));
}

static void run_xxh3_128(const vcase *c, call *cl, outputs *o) {
    (void) c;
    uint64_t d[2];
    stitch_xxh3_128(IN(0), LEN(0), d);
    out_digest(o, d);
}

static void run_xxh3_stream(const vcase *c, call *cl, outputs *o) {
    uint64_t st[STITCH_XXH3_STATE_WORDS];
    uint64_t d[2];
    stitch_xxh3_stream_reset(st);
    int64_t at = 0;
    for (uint32_t i = 0; i < c->nscalars; i++) {
        stitch_xxh3_stream_update(st, IN(0) + at, S(i));
        at += S(i);
    }
    stitch_xxh3_stream_digest(st, d);
    out_digest(o, d);
}

static void run_read_stream(const vcase *c, call *cl, outputs *o) {
    (void) c;
    out_i64(o, (int64_t) stitch_read_stream(IN(0), LEN(0)));
}

static void run_fill_stream(const vcase *c, call *cl, outputs *o) {
    uint8_t *dst = scratch(cl, (uint64_t) S(0));
    stitch_fill_stream(dst, S(0), (int32_t) S(1));
    out_bytes(o, dst, (uint64_t) S(0));
}

/* Each kernel with the inputs it may write (bit i: input i); every other input must come back unchanged. */
static const struct {
    const char *name;
    void (*run)(const vcase *, call *, outputs *);
    unsigned writes;
} KERNELS[] = {
    {"count_changed", run_count_changed, 0},
    {"diff_gather", run_diff_gather, 1},
    {"diff_gather_xxh3", run_diff_gather_xxh3, 1},
    {"scatter", run_scatter, 1},
    {"scatter_escaped", run_scatter_escaped, 1},
    {"xor_into", run_xor_into, 1},
    {"overwrite_bytes", run_overwrite_bytes, 1},
    {"patched_xxh3", run_patched_xxh3, 0},
    {"scatter_xxh3", run_scatter_xxh3, 1},
    {"restore_undo", run_restore_undo, 1},
    {"scatter_escaped_xxh3", run_scatter_escaped_xxh3, 1},
    {"max_gap", run_max_gap, 0},
    {"encode_gaps", run_encode_gaps, 0},
    {"decode_gaps", run_decode_gaps, 0},
    {"escaped_gap_units", run_escaped_gap_units, 0},
    {"encode_escaped_gaps", run_encode_escaped_gaps, 0},
    {"decode_escaped_gaps", run_decode_escaped_gaps, 0},
    {"escaped_summary", run_escaped_summary, 0},
    {"split_planes", run_split_planes, 0},
    {"merge_planes", run_merge_planes, 0},
    {"contains_nan", run_contains_nan, 0},
    {"xor_bytes", run_xor_bytes, 0},
    {"xor_widened", run_xor_widened, 0},
    {"xxh3_128", run_xxh3_128, 0},
    {"xxh3_stream", run_xxh3_stream, 0},
    {"read_stream", run_read_stream, 0},
    {"fill_stream", run_fill_stream, 0},
};

/* ---- checking ---------------------------------------------------------------------------- */

static int printed;

static void report(const char *isa, const vcase *c, const char *what) {
    if (printed++ < MAX_PRINTED) {
        printf("MISMATCH on %s in '%s': %s\n", isa, c->name, what);
    }
}

/* Runs one case; returns 1 when everything matches. */
static int check_case(const vcase *c, uint64_t index, const char *isa) {
    int k = -1;
    for (size_t i = 0; i < sizeof(KERNELS) / sizeof(KERNELS[0]); i++) {
        if (strcmp(KERNELS[i].name, c->kernel) == 0) {
            k = (int) i;
        }
    }
    if (k < 0) {
        fprintf(stderr, "kernel_vectors: unknown kernel '%s' in case '%s'\n", c->kernel, c->name);
        exit(2);
    }
    call cl;
    memset(&cl, 0, sizeof(cl));
    cl.misalign = index % 17;
    for (uint32_t i = 0; i < c->nin; i++) {
        cl.in[i] = make_guarded(c->in[i].len, (cl.misalign + 3 * i) % 17, c->in[i].data);
    }
    outputs o;
    memset(&o, 0, sizeof(o));
    KERNELS[k].run(c, &cl, &o);
    int ok = 1;
    char msg[256];
    if (o.n != c->nout) {
        snprintf(msg, sizeof(msg), "%u outputs, the Java kernels gave %u (an error result where none was due, or the reverse)",
                 o.n, c->nout);
        report(isa, c, msg);
        ok = 0;
    }
    for (uint32_t i = 0; ok && i < o.n; i++) {
        if (o.len[i] != c->out[i].len) {
            snprintf(msg, sizeof(msg), "output %u is %" PRIu64 " bytes, expected %" PRIu64, i, o.len[i], c->out[i].len);
            report(isa, c, msg);
            ok = 0;
            break;
        }
        for (uint64_t b = 0; b < o.len[i]; b++) {
            if (o.data[i][b] != c->out[i].data[b]) {
                snprintf(msg, sizeof(msg), "output %u differs first at byte %" PRIu64 " of %" PRIu64 ": expected 0x%02x, got 0x%02x",
                         i, b, o.len[i], c->out[i].data[b], o.data[i][b]);
                report(isa, c, msg);
                ok = 0;
                break;
            }
        }
    }
    for (uint32_t i = 0; i < c->nin; i++) {
        if (!guards_intact(&cl.in[i])) {
            snprintf(msg, sizeof(msg), "wrote outside input %u", i);
            report(isa, c, msg);
            ok = 0;
        } else if (!(KERNELS[k].writes & (1u << i)) && c->in[i].len && memcmp(cl.in[i].p, c->in[i].data, c->in[i].len) != 0) {
            snprintf(msg, sizeof(msg), "wrote into input %u, which it must only read", i);
            report(isa, c, msg);
            ok = 0;
        }
        free(cl.in[i].base);
    }
    for (uint32_t i = 0; i < cl.nextra; i++) {
        if (!guards_intact(&cl.extra[i])) {
            snprintf(msg, sizeof(msg), "wrote outside the capacity of output buffer %u", i);
            report(isa, c, msg);
            ok = 0;
        }
        free(cl.extra[i].base);
    }
    return ok;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: kernel_vectors VECTORS_FILE\n");
        return 2;
    }
    uint64_t size;
    uint8_t *file = read_file(argv[1], &size);
    cursor cur = {file, file + size};
    if (memcmp(take(&cur, 8), "STITCHKV", 8) != 0 || rd32(take(&cur, 4)) != 1) {
        die("not a version 1 kernel vector file");
    }
    uint32_t count = rd32(take(&cur, 4));
    vcase *cases = calloc(count ? count : 1, sizeof(vcase));
    if (!cases) {
        die("out of memory");
    }
    for (uint32_t i = 0; i < count; i++) {
        vcase *c = &cases[i];
        take_string(&cur, c->name, sizeof(c->name));
        take_string(&cur, c->kernel, sizeof(c->kernel));
        c->nscalars = rd32(take(&cur, 4));
        c->scalars = take(&cur, 8 * (uint64_t) c->nscalars);
        c->nin = take_spans(&cur, c->in);
        c->nout = take_spans(&cur, c->out);
    }
    if (cur.p != cur.end) {
        die("trailing bytes after the last case");
    }
    uint64_t failed = 0;
    const char *previous = NULL;
    for (int32_t level = 0; level <= 2; level++) {
        const char *isa = stitch_cap_isa(level);
        if (previous && strcmp(isa, previous) == 0) {
            continue; /* the CPU has no higher level */
        }
        previous = isa;
        uint64_t bad = 0;
        for (uint32_t i = 0; i < count; i++) {
            bad += !check_case(&cases[i], i, isa);
        }
        printf("kernel vectors: %u cases on %s: %s (%" PRIu64 " mismatched)\n", count, isa, bad ? "FAIL" : "ok", bad);
        failed += bad;
    }
    stitch_cap_isa(2);
    free(cases);
    free(file);
    return failed ? 1 : 0;
}
