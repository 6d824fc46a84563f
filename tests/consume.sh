#!/bin/sh
# tests/consume.sh - elec installed and used as a user's build uses it.
# `make install-headers` into a temporary prefix (and once more with
# DESTDIR, to see the staged files name the final prefix), then the
# README's embedding example (the C block under "Embedding elec in your
# code", taken from README.md itself) built and run three ways: with the
# headers copied into the project, with pkg-config (elec.pc), and with
# CMake (find_package(elec) and elec::elec, and a version the package must
# refuse).  Where nvcc works (and CUDA is not 0), a .cu file is built (not
# run) on elec::cuda and on elec-cuda.pc.  Prints one line per check and
# the tally line tests/run.sh reads; exit status 1 if any check failed.
# Environment: CC (cc), NVCC (nvcc), CUDA (1), CUDA_ARCH (sm_90), and
# HAVE_FFTW / HAVE_ZLIB passed on to make when set (make consume sets them).
cd "$(dirname "$0")/.." || exit 1
cc=${CC:-cc}
nvcc=${NVCC:-nvcc}
arch=${CUDA_ARCH:-sm_90}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/elec-consume.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
passed=0 failed=0 skipped=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
fail() {
    echo "FAIL $1"
    [ -n "${2-}" ] && [ -f "$2" ] && sed -n '1,40p' "$2"
    failed=$((failed + 1))
}
skip() { echo "skip $1"; skipped=$((skipped + 1)); }
finish() {
    echo "tally: $passed passed, $failed failed, $skipped skipped"
    [ "$failed" -eq 0 ]
    exit
}

part() { sed -n "s/^#define ELEC_VERSION_$1 \([0-9][0-9]*\).*/\1/p" elec.h; }
major=$(part MAJOR) minor=$(part MINOR) patch=$(part PATCH)
version=$major.$minor.$patch

# make's settings, passed on where they are set
set -- CC="$cc" NVCC="$nvcc" CUDA="${CUDA:-1}"
[ -n "${HAVE_FFTW+set}" ] && set -- "$@" HAVE_FFTW="$HAVE_FFTW"
[ -n "${HAVE_ZLIB+set}" ] && set -- "$@" HAVE_ZLIB="$HAVE_ZLIB"

# --------------------------------------------------------------- install
prefix=$tmp/prefix
if make -s install-headers PREFIX="$prefix" BUILD="$tmp/build" "$@" > "$tmp/install.log" 2>&1 &&
   [ -f "$prefix/include/elec.h" ] && [ -f "$prefix/include/elec_cpu.h" ] &&
   [ -f "$prefix/include/elec_cuda.cuh" ] && [ -f "$prefix/lib/pkgconfig/elec.pc" ] &&
   [ -f "$prefix/lib/pkgconfig/elec-cuda.pc" ] &&
   [ -f "$prefix/lib/cmake/elec/elecConfig.cmake" ] &&
   [ -f "$prefix/lib/cmake/elec/elecConfigVersion.cmake" ]; then
    ok "install_headers_into_a_prefix ($prefix)"
else
    fail "install_headers_into_a_prefix" "$tmp/install.log"
    finish
fi
stage=$tmp/stage
if make -s install-headers DESTDIR="$stage" PREFIX=/opt/elec BUILD="$tmp/build-staged" "$@" \
        > "$tmp/stage.log" 2>&1 &&
   [ -f "$stage/opt/elec/include/elec.h" ] &&
   grep -q '^prefix=/opt/elec$' "$stage/opt/elec/lib/pkgconfig/elec.pc" &&
   [ -f "$stage/opt/elec/lib/cmake/elec/elecConfig.cmake" ]; then
    ok "install_honours_destdir_and_prefix"
else
    fail "install_honours_destdir_and_prefix" "$tmp/stage.log"
fi

# a prefix with a space (or a character the shell or sed reads) is refused
# before anything is written: unquoted in the recipes it once made an
# empty directory, wrote ./prefix/include into the source tree and failed
# halfway (an audit)
odd="$tmp/odd prefix"
before=$(git status --porcelain 2> /dev/null | wc -l)
if make -s install-headers PREFIX="$odd" BUILD="$tmp/build-odd" "$@" > "$tmp/odd.log" 2>&1; then
    fail "install_refuses_a_prefix_with_a_space: it ran" "$tmp/odd.log"
elif grep -q "holds a space" "$tmp/odd.log" && [ ! -e "$tmp/odd" ] && [ ! -e "$odd" ] &&
     [ "$(git status --porcelain 2> /dev/null | wc -l)" = "$before" ]; then
    ok "install_refuses_a_prefix_with_a_space"
else
    fail "install_refuses_a_prefix_with_a_space: no message, or it wrote" "$tmp/odd.log"
fi

# ------------------------------------------------------- the README's example
awk '/^## Embedding elec in your code/ { on = 1 }
     on && /^```c$/ { code = 1; next }
     code && /^```$/ { exit }
     code { print }' README.md > "$tmp/example.c"
if grep -q 'potential_map' "$tmp/example.c" && grep -q 'int main' "$tmp/example.c"; then
    ok "readme_has_the_embedding_example ($(wc -l < "$tmp/example.c") lines)"
else
    fail "readme_has_the_embedding_example: no C block with potential_map and main under 'Embedding elec in your code'"
    finish
fi
# run NAME DIR PROGRAM: runs it in DIR, where it must write its map
run() {
    if (cd "$2" && "$3") > "$tmp/$1.run" 2>&1 && [ -s "$2/phi.dx" ] &&
       grep -q '^object 1 class gridpositions counts' "$2/phi.dx"; then
        ok "$1"
    else
        fail "$1: it ran, but wrote no map" "$tmp/$1.run"
    fi
}
strict="-std=c99 -O2 -Wall -Wextra -pedantic -Werror"

# 1. the headers copied into the project, as the README's compile line
mkdir -p "$tmp/copied"
cp "$prefix/include/elec.h" "$prefix/include/elec_cpu.h" "$tmp/copied/"
# shellcheck disable=SC2086
if "$cc" $strict -fno-math-errno -I"$tmp/copied" -o "$tmp/copied/example" \
        "$tmp/example.c" -lm > "$tmp/copied.log" 2>&1; then
    run "example_with_copied_headers" "$tmp/copied" "$tmp/copied/example"
else
    fail "example_with_copied_headers: it does not compile" "$tmp/copied.log"
fi

# 2. pkg-config
if command -v pkg-config > /dev/null 2>&1; then
    export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
    got=$(pkg-config --modversion elec 2>&1)
    if [ "$got" = "$version" ]; then ok "pkg_config_gives_the_version_of_elec_h ($got)"
    else fail "pkg_config_gives_the_version_of_elec_h: '$got', elec.h says $version"; fi
    mkdir -p "$tmp/pkgconfig"
    # shellcheck disable=SC2046,SC2086
    if "$cc" $strict $(pkg-config --cflags elec) -o "$tmp/pkgconfig/example" \
            "$tmp/example.c" $(pkg-config --libs elec) > "$tmp/pkg.log" 2>&1; then
        run "example_with_pkg_config" "$tmp/pkgconfig" "$tmp/pkgconfig/example"
    else
        fail "example_with_pkg_config: it does not build ($(pkg-config --cflags --libs elec))" \
            "$tmp/pkg.log"
    fi
    unset PKG_CONFIG_PATH
else
    fail "example_with_pkg_config: pkg-config is not installed (apt-get install pkg-config)"
fi

# 3. CMake: find_package(elec MAJOR.MINOR) and elec::elec
if command -v cmake > /dev/null 2>&1; then
    mkdir -p "$tmp/cmake"
    cp "$tmp/example.c" "$tmp/cmake/"
    cat > "$tmp/cmake/CMakeLists.txt" << EOF
cmake_minimum_required(VERSION 3.10)
project(consume C)
find_package(elec $major.$minor REQUIRED)
add_executable(example example.c)
target_compile_options(example PRIVATE -Wall -Wextra -pedantic -Werror)
target_link_libraries(example PRIVATE elec::elec)
EOF
    if cmake -S "$tmp/cmake" -B "$tmp/cmake/build" -DCMAKE_C_COMPILER="$cc" \
            -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/cmake.log" 2>&1 &&
       cmake --build "$tmp/cmake/build" >> "$tmp/cmake.log" 2>&1; then
        run "example_with_cmake" "$tmp/cmake/build" "$tmp/cmake/build/example"
    else
        fail "example_with_cmake: it does not configure or build" "$tmp/cmake.log"
    fi
    # a version the package is not: refused at configure time
    mkdir -p "$tmp/cmake-newer"
    sed "s/find_package(elec $major.$minor REQUIRED)/find_package(elec $major.$((minor + 1)) REQUIRED)/" \
        "$tmp/cmake/CMakeLists.txt" > "$tmp/cmake-newer/CMakeLists.txt"
    cp "$tmp/example.c" "$tmp/cmake-newer/"
    if cmake -S "$tmp/cmake-newer" -B "$tmp/cmake-newer/build" -DCMAKE_C_COMPILER="$cc" \
            -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/newer.log" 2>&1; then
        fail "cmake_refuses_a_newer_version: find_package(elec $major.$((minor + 1))) succeeded"
    elif grep -q "$version" "$tmp/newer.log"; then
        ok "cmake_refuses_a_newer_version ($major.$((minor + 1)) asked, $version installed)"
    else
        fail "cmake_refuses_a_newer_version: refused, but not for its version" "$tmp/newer.log"
    fi
else
    fail "example_with_cmake: cmake is not installed (apt-get install cmake)"
fi

# 4. a .cu file on elec::cuda and on elec-cuda.pc: built, not run (no GPU
#    is needed to build it)
if [ "${CUDA:-1}" = 0 ] || ! "$nvcc" --version 2> /dev/null | grep -qi cuda; then
    skip "cuda_consumer: no nvcc here (or CUDA=0)"
else
    mkdir -p "$tmp/cuda"
    cat > "$tmp/cuda/gpu.cu" << 'EOF'
/* a CUDA user of elec: the potential of an ion pair at a point, on the
   GPU where there is one */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "elec_cuda.cuh"
#include <cstdio>
int main() {
    double xyz[6] = {0.0, 0.0, 0.0, 3.0, 0.0, 0.0}, charge[2] = {1.0, -1.0};
    double point[3] = {1.0, 2.0, 2.0};
    float phi = 0.0f;
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, charge, NULL);
    elec_dcs_params params = {};
    elec_error err;
    if (elec_cuda_device_count() < 1) {
        std::printf("no CUDA device\n");
        return 0;
    }
    if (elec_cuda_dcs_points(&atoms, point, 1, &params, &phi, &err) != ELEC_OK) {
        std::printf("%s\n", err.message);
        return 1;
    }
    std::printf("phi %g e/A\n", phi);
    return 0;
}
EOF
    cuda_arch=$(echo "$arch" | sed 's/^sm_//')
    cat > "$tmp/cuda/CMakeLists.txt" << EOF
cmake_minimum_required(VERSION 3.18)
project(consume_cuda LANGUAGES C CXX CUDA)
find_package(elec $major.$minor REQUIRED COMPONENTS cuda)
add_executable(gpu gpu.cu)
set_target_properties(gpu PROPERTIES CUDA_ARCHITECTURES $cuda_arch)
target_link_libraries(gpu PRIVATE elec::cuda)
EOF
    if ! command -v cmake > /dev/null 2>&1; then
        fail "cuda_consumer_with_cmake: cmake is not installed"
    elif cmake -S "$tmp/cuda" -B "$tmp/cuda/build" -DCMAKE_CUDA_COMPILER="$(command -v "$nvcc")" \
            -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/cuda.log" 2>&1 &&
         cmake --build "$tmp/cuda/build" >> "$tmp/cuda.log" 2>&1 &&
         [ -x "$tmp/cuda/build/gpu" ]; then
        ok "cuda_consumer_with_cmake (elec::cuda, built)"
    else
        fail "cuda_consumer_with_cmake: it does not configure or build" "$tmp/cuda.log"
    fi
    if command -v pkg-config > /dev/null 2>&1; then
        export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
        # shellcheck disable=SC2046
        if "$nvcc" -arch="$arch" $(pkg-config --cflags elec-cuda) -o "$tmp/cuda/gpu-pc" \
                "$tmp/cuda/gpu.cu" $(pkg-config --libs elec-cuda) > "$tmp/cuda-pc.log" 2>&1; then
            ok "cuda_consumer_with_pkg_config (elec-cuda.pc, built)"
        else
            fail "cuda_consumer_with_pkg_config: it does not build" "$tmp/cuda-pc.log"
        fi
        unset PKG_CONFIG_PATH
    fi
fi
finish
