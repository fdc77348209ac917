#!/bin/sh
# Checks the C kernels of one architecture against the Java kernels, byte for byte: builds the
# library for ARCH (src/main/c/build.sh, the same build Maven runs), builds the vector harness
# (kernel_vectors.c) against it, and runs it on the vector file the Java test KernelVectorsTest
# exports (or that this script exports itself from the compiled test classes). Each architecture runs
# natively on a host of its own, else under qemu-user: aarch64 once per CPU model, without SVE, with
# 128-bit SVE (where dispatch stays on NEON) and with 256-, 512- and 2048-bit SVE. The harness tries
# every ISA level each CPU offers (docs/platforms.md).
#
# usage: run-vectors.sh x86_64|aarch64 [VECTORS_FILE]
# exit: 0 every case matches; 1 a mismatch; 2 usage, or a tool missing (the message names it).
set -eu

arch="${1:-}"
case "$arch" in
    x86_64 | aarch64) ;;
    *) echo "usage: run-vectors.sh x86_64|aarch64 [VECTORS_FILE]" >&2; exit 2 ;;
esac
module="$(cd "$(dirname "$0")/../../.." && pwd)"
target="$module/target"
vectors="${2:-$target/kernel-vectors/vectors.bin}"
host="$(uname -m)"

missing() {
    echo "run-vectors.sh: cannot check $arch: $1" >&2
    exit 2
}

# Finds a JDK >= 25 as the ./stitch launcher does: JAVA_HOME, then /usr/lib/jvm/*, then PATH.
find_java() {
    for j in ${JAVA_HOME:+"$JAVA_HOME/bin/java"} /usr/lib/jvm/*/bin/java "$(command -v java 2>/dev/null || true)"; do
        [ -x "$j" ] || continue
        v="$("$j" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = \([0-9][0-9]*\).*/\1/p' | head -n 1)"
        if [ -n "$v" ] && [ "$v" -ge 25 ]; then
            echo "$j"
            return 0
        fi
    done
    return 1
}

if [ ! -f "$vectors" ]; then
    [ -d "$target/test-classes" ] && [ -d "$module/../stitch-core/target/classes" ] \
        || missing "no vectors at $vectors and no compiled test classes to export them; run 'mvn -B -pl stitch-native -am test-compile' first"
    java="$(find_java)" || missing "no vectors at $vectors and no JDK 25 to export them"
    "$java" --add-modules=jdk.incubator.vector --enable-native-access=ALL-UNNAMED \
        -cp "$target/test-classes:$target/classes:$module/../stitch-core/target/classes" dev.stitch.kernels.KernelVectors "$vectors"
fi

if [ "$host" = "$arch" ]; then
    cc=gcc
elif command -v "$arch-linux-gnu-gcc" >/dev/null 2>&1; then
    cc="$arch-linux-gnu-gcc"
else
    missing "no $arch-linux-gnu-gcc (Debian package gcc-$arch-linux-gnu)"
fi
command -v "$cc" >/dev/null 2>&1 || missing "no $cc"
if [ "$host" != "$arch" ]; then
    command -v "qemu-$arch" >/dev/null 2>&1 || missing "no qemu-$arch (Debian package qemu-user)"
    [ -d "/usr/$arch-linux-gnu" ] || missing "no $arch C library at /usr/$arch-linux-gnu (comes with gcc-$arch-linux-gnu)"
fi

sh "$module/src/main/c/build.sh" "$target/classes/native" "$arch"
libdir="$target/classes/native/linux-$arch"
[ -f "$libdir/libstitchkernels.so" ] || missing "the library was not built"
harness="$target/kernel-vectors/kernel_vectors-$arch"
mkdir -p "$target/kernel-vectors"
"$cc" -O1 -std=gnu11 -Wall -Wextra -Werror -I"$module/src/main/c" -o "$harness" "$module/src/test/c/kernel_vectors.c" \
    -L"$libdir" -lstitchkernels -Wl,-rpath,"$libdir"

status=0
if [ "$host" = "$arch" ]; then
    echo "== $arch natively ($(uname -m))"
    "$harness" "$vectors" || status=$?
else
    case "$arch" in
        # cortex-a72: NEON only; sve-default-vector-length is in bytes.
        aarch64) cpus="cortex-a72 max,sve-default-vector-length=16 max,sve-default-vector-length=32 max,sve-default-vector-length=64
                       max,sve-default-vector-length=256" ;;
        *) cpus="max" ;;
    esac
    for cpu in $cpus; do
        echo "== $arch under qemu-$arch -cpu $cpu"
        "qemu-$arch" -L "/usr/$arch-linux-gnu" -cpu "$cpu" "$harness" "$vectors" || status=$?
    done
fi
[ "$status" -eq 0 ] && echo "run-vectors.sh: $arch kernels match the Java kernels on every case" \
    || echo "run-vectors.sh: $arch kernels differ from the Java kernels (see MISMATCH lines)"
exit "$status"
