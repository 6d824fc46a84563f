#!/bin/sh
# Runs each libFuzzer harness for SECONDS, seeded from tests/fuzz/seeds, the
# shared structures (../shared/data/structures, skipped with a message
# where absent) and maps elecmap writes; prints each one's executions and
# ends with one line; exit status 1 if any found a crash, a leak or a
# sanitizer report (the input that did it is kept in FUZZ_BUILD/artifacts).
# Usage: tests/fuzz/run.sh SECONDS FUZZ_BUILD ELECMAP fuzzer...
seconds=$1 build=$2 elecmap=$3
shift 3
seeds=tests/fuzz/seeds
structures=../shared/data/structures
mkdir -p "$build/artifacts" "$build/maps" "$build/mrc_maps"

# maps as elecmap writes them: a small demo map and one with explicit
# counts, as OpenDX and as MRC
if "$elecmap" --cpu --quiet --spacing 4 --demo "$build/maps/demo.dx" &&
   "$elecmap" --cpu --quiet --dims 3 4 5 --spacing 1.5 --method mdh --demo "$build/maps/mdh.dx" &&
   "$elecmap" --cpu --quiet --spacing 4 --demo "$build/mrc_maps/demo.mrc" &&
   "$elecmap" --cpu --quiet --dims 3 4 5 --spacing 1.5 --method mdh --demo "$build/mrc_maps/mdh.mrc"; then
    :
else
    echo "fuzz: $elecmap could not write the seed maps"
    exit 1
fi

failed=0 total=0
for fuzzer in "$@"; do
    name=$(basename "$fuzzer")
    corpus="$build/corpus/$name"
    mkdir -p "$corpus"
    case $name in
    fuzz_pqr)
        extra="$seeds/pqr"
        if [ -d "$structures" ]; then extra="$extra $structures"
        else echo "fuzz: $structures absent: $name seeded from $seeds/pqr alone"; fi
        max_len=65536 ;;
    fuzz_dx) extra="$seeds/dx $build/maps"; max_len=65536 ;;
    fuzz_mrc) extra="$build/mrc_maps"; max_len=65536 ;;
    fuzz_elecmap_options) extra="$seeds/elecmap_options"; max_len=4096 ;;
    fuzz_elecenergy_options) extra="$seeds/elecenergy_options"; max_len=4096 ;;
    fuzz_elecsurf_options) extra="$seeds/elecsurf_options"; max_len=4096 ;;
    fuzz_points) extra="$seeds/points"; max_len=65536 ;;
    fuzz_msms) extra="$seeds/msms"; max_len=65536 ;;
    *) extra=""; max_len=4096 ;;
    esac
    log="$build/$name.log"
    # new inputs go to the first directory; the others are read-only seeds
    # shellcheck disable=SC2086
    "$fuzzer" "$corpus" $extra -max_total_time="$seconds" -max_len="$max_len" \
        -print_final_stats=1 -artifact_prefix="$build/artifacts/$name-" > "$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -n 1)
    total=$((total + 1))
    if [ "$rc" -eq 0 ] && [ -n "$runs" ]; then
        echo "ok   $name: $runs executions in $seconds s, corpus $(ls "$corpus" | wc -l) inputs"
    else
        failed=$((failed + 1))
        echo "FAIL $name: exit status $rc (log $log); its last lines:"
        tail -n 30 "$log"
    fi
done
echo "fuzz: $((total - failed)) of $total harnesses ran $seconds s each without a finding"
[ "$failed" -eq 0 ]
