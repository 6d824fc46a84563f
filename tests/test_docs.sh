#!/bin/sh
# What the headers show a reader stays true: each header's contents block
# is what tools/contents.sh makes of its banners and declarations, and the
# quick start at the top of each header compiled (the Makefile builds
# BUILD_DIR/quickstart_*.o from them before this runs; a quick start that
# no longer compiles fails the build with the compiler's message).
# Prints one line per check and the harness's tally line.
# Usage: tests/test_docs.sh BUILD_DIR [cuda]   (cuda: the CUDA quick start
# was built too)
build=${1:-build}
cuda=${2:-}
passed=0; failed=0; skipped=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
skip() { echo "skip $1"; skipped=$((skipped + 1)); }

for header in elec.h elec_cpu.h elec_cuda.cuh; do
    name=$(echo "$header" | tr '.' '_')
    if out=$(sh tools/contents.sh --check "$header" 2>&1); then
        ok "contents_of_${name}_match_its_sections"
    else
        fail "contents_of_${name}_match_its_sections: $out"
    fi
done

# newer than its header: built from the quick start as it stands
quick() {
    if [ -f "$build/$2" ] && [ ! "$1" -nt "$build/$2" ] &&
       [ -n "$(sh tools/contents.sh --quickstart "$1")" ]; then
        ok "quick_start_of_$(echo "$1" | tr '.' '_')_compiles"
    else
        fail "quick_start_of_$(echo "$1" | tr '.' '_')_compiles: $build/$2 is missing or older than $1"
    fi
}
quick elec.h quickstart_elec.o
quick elec_cpu.h quickstart_elec_cpu.o
if [ "$cuda" = cuda ]; then
    quick elec_cuda.cuh quickstart_elec_cuda.o
else
    skip "quick_start_of_elec_cuda_cuh_compiles: no nvcc in this build"
fi
echo "tally: $passed passed, $failed failed, $skipped skipped"
