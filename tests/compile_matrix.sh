#!/bin/sh
# tests/compile_matrix.sh [CC:CXX ...] - the headers under the settings users
# have: elec.h and elec_cpu.h, implementation included
# (tests/compile_matrix.c), compiled with -Wall -Wextra -pedantic -Werror
# by each compiler pair (default "gcc:g++ clang:clang++") as C99, C11,
# C++11 and C++17, at -O0 and -O3, with and without -fno-math-errno and
# -fopenmp: 32 combinations a pair, each a real compile to an object file,
# since the warnings of the optimiser (clang's -Wpass-failed, gcc's
# -Wmaybe-uninitialized, -Warray-bounds, -Wstringop-*) come only from code
# generation, never from -fsyntax-only.  Then, per pair: -Os as C99 and
# C++17, C++20, ELEC_STATIC, ELEC_NO_POSIX, and the optional dependencies
# left out.  FFTW3 and zlib
# (ELEC_WITH_FFTW, ELEC_WITH_ZLIB) are compiled in wherever the compiler
# finds their headers; -fopenmp where it has OpenMP (omp.h), the others
# skipped, saying why.  Prints one line per combination and the tally line
# tests/run.sh reads; exit status 1 if any combination warned.
# MATRIX_JOBS sets how many compile at once (default: the CPU count).
cd "$(dirname "$0")/.." || exit 1

if [ "${1-}" = "--one" ]; then
    # --one N DIR COMPILER FLAGS...: one combination, its result in DIR/N.*
    n=$2 dir=$3
    shift 3
    if "$@" -Wall -Wextra -pedantic -Werror -I. -c tests/compile_matrix.c \
        -o "$dir/$n.o" > "$dir/$n.log" 2>&1; then
        echo ok > "$dir/$n.status"
    else
        echo FAIL > "$dir/$n.status"
    fi
    rm -f "$dir/$n.o"
    exit 0
fi

pairs=${*:-gcc:g++ clang:clang++}
jobs=${MATRIX_JOBS:-$(nproc 2> /dev/null || echo 2)}
dir=$(mktemp -d "${TMPDIR:-/tmp}/elec-matrix.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT INT TERM

# probe CC SOURCE FLAGS...: whether CC compiles and links SOURCE
probe() {
    cc=$1 source=$2
    shift 2
    printf '%b' "$source" | "$cc" -x c - "$@" -o "$dir/probe" > /dev/null 2>&1
}

list=$dir/list
: > "$list"
skipped=0 skips=""
n=0
# add LABEL COMPILER FLAGS...: queue one combination
add() {
    n=$((n + 1))
    echo "$1" > "$dir/$n.label"
    shift
    echo "$n $dir $*" >> "$list"
}
for pair in $pairs; do
    cc=${pair%%:*} cxx=${pair#*:}
    if ! command -v "$cc" > /dev/null 2>&1 || ! command -v "$cxx" > /dev/null 2>&1; then
        echo "skip $pair: $cc or $cxx is not installed"
        skipped=$((skipped + 1))
        continue
    fi
    deps=""
    probe "$cc" '#include <fftw3.h>\nint main(void){return 0;}' && deps="$deps -DELEC_WITH_FFTW"
    probe "$cc" '#include <zlib.h>\nint main(void){return 0;}' && deps="$deps -DELEC_WITH_ZLIB"
    omp=1
    probe "$cc" '#include <omp.h>\nint main(void){return omp_get_max_threads() < 1;}' -fopenmp ||
        omp=0
    for std in c99 c11 c++11 c++17; do
        case $std in
        c++*) compiler="$cxx -x c++" ;;
        *) compiler=$cc ;;
        esac
        for opt in -O0 -O3; do
            for errno in "" -fno-math-errno; do
                for openmp in "" -fopenmp; do
                    # shellcheck disable=SC2086
                    label=$(echo $compiler -std="$std" $opt $errno $openmp)
                    if [ -n "$openmp" ] && [ "$omp" = 0 ]; then
                        skips="$skips
skip $label: $cc has no OpenMP (omp.h; Debian: libomp-dev for clang)"
                        skipped=$((skipped + 1))
                        continue
                    fi
                    add "$label$deps" $compiler -std="$std" $opt $errno $openmp $deps
                done
            done
        done
    done
    # -Os (gcc's -Wmaybe-uninitialized differs there) and C++20 (which
    # deprecates an enum's arithmetic with a double): both once warned
    add "$cc -std=c99 -Os$deps" "$cc" -std=c99 -Os $deps
    add "$cxx -x c++ -std=c++17 -Os$deps" $cxx -x c++ -std=c++17 -Os $deps
    add "$cxx -x c++ -std=c++20 -O2$deps" $cxx -x c++ -std=c++20 -O2 $deps
    add "$cc -std=c99 -O2 -DELEC_STATIC$deps" "$cc" -std=c99 -O2 -DELEC_STATIC $deps
    add "$cc -std=c99 -O2 -DELEC_NO_POSIX$deps" "$cc" -std=c99 -O2 -DELEC_NO_POSIX $deps
    if [ -n "$deps" ]; then
        add "$cc -std=c99 -O3 -fno-math-errno, without$deps" "$cc" -std=c99 -O3 -fno-math-errno
    fi
done

[ -n "$skips" ] && printf '%s\n' "$skips" | sed '/^$/d'
xargs -P "$jobs" -L 1 sh "$0" --one < "$list"

passed=0 failed=0 i=0
while [ "$i" -lt "$n" ]; do
    i=$((i + 1))
    label=$(cat "$dir/$i.label")
    if [ "$(cat "$dir/$i.status" 2> /dev/null)" = ok ]; then
        echo "ok   $label"
        passed=$((passed + 1))
    else
        echo "FAIL $label:"
        sed -n '1,30p' "$dir/$i.log"
        failed=$((failed + 1))
    fi
done
echo "tally: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
