#!/bin/sh
# Builds the stitch kernels library from every *.c beside this script, once per target whose C
# compiler this machine has, into OUT/linux-<arch>/libstitchkernels.so: the layout NativeLibrary
# looks for in the jar. The host's own architecture uses gcc, the other one the Debian cross
# compiler <arch>-linux-gnu-gcc (package gcc-<arch>-linux-gnu). A target without a compiler is
# skipped with the reason, so the Maven build passes anywhere; the jar then lacks that library and
# such hosts run the Java kernels (docs/platforms.md).
#
# usage: build.sh OUT [x86_64|aarch64]...      (no architecture: both)
set -eu

src="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: build.sh OUT [x86_64|aarch64]...}"
shift
[ "$#" -gt 0 ] || set -- x86_64 aarch64

compiler_for() {
    if [ "$(uname -m)" = "$1" ] && command -v gcc >/dev/null 2>&1; then
        echo gcc
    elif command -v "$1-linux-gnu-gcc" >/dev/null 2>&1; then
        echo "$1-linux-gnu-gcc"
    else
        return 1
    fi
}

for arch in "$@"; do
    case "$arch" in
        # x86-64's baseline includes SSE2; AVX2 and AVX-512 code is compiled per function with target().
        x86_64) march="" ;;
        # armv8-a includes NEON; SVE code is compiled per function with target("+sve").
        aarch64) march="-march=armv8-a" ;;
        *) echo "stitch kernels: unknown architecture '$arch' (expected x86_64 or aarch64)" >&2; exit 2 ;;
    esac
    lib="$out/linux-$arch/libstitchkernels.so"
    if ! cc="$(compiler_for "$arch")"; then
        echo "stitch kernels: skipping linux-$arch: no compiler (gcc on an $arch host, or $arch-linux-gnu-gcc from package gcc-$arch-linux-gnu)"
        continue
    fi
    if [ -f "$lib" ] && [ -z "$(find "$src" -newer "$lib" \( -name '*.c' -o -name '*.h' -o -name build.sh \) -print)" ]; then
        echo "stitch kernels: linux-$arch is up to date ($lib)"
        continue
    fi
    mkdir -p "$out/linux-$arch"
    # shellcheck disable=SC2086 # $march is one flag or none
    "$cc" $march -O3 -fPIC -shared -std=gnu11 -fvisibility=hidden -Wall -Wextra -Werror -I"$src" -o "$lib" "$src"/*.c
    echo "stitch kernels: built linux-$arch with $cc ($lib)"
done
