#!/bin/sh
# Runs each GPU test program under each compute-sanitizer tool and closes
# with one line.  memcheck runs with --leak-check full; racecheck,
# synccheck and initcheck with their defaults.  A run passes only if the
# tool's summary line says 0 errors (racecheck: 0 hazards), nothing leaked,
# the program's own tally has no failure, and everything exits 0
# (--error-exitcode makes any report a non-zero exit as well).  The GPU is
# required (ELEC_REQUIRE_GPU=1): a missing one fails.  Full logs in
# $SANITIZE_GPU_LOGS (default build/sanitize-gpu).
#
# One exception, measured rather than assumed: cuFFT keeps device memory
# for the process after its last plan is destroyed, which memcheck reports
# as a leak at the final context reset.  With SANITIZE_GPU_CUFFT_BASELINE
# (tests/cufft_baseline.cu, built by make sanitize-gpu) that program runs
# under memcheck first; a test's leaks allocated inside libcufft are
# charged to cuFFT up to the baseline's bytes and allocations, printed, and
# not counted.  Any other leak, or more than the baseline, fails.
#
# Environment: COMPUTE_SANITIZER (the binary), SANITIZE_GPU_TOOLS (a
# subset of "memcheck racecheck synccheck initcheck"), SANITIZE_GPU_JOBS
# (runs at once, default 1: racecheck and initcheck slow big kernels down
# by 10-100x, and the four tools over every test take about 45 minutes on
# an H100; with more than one, each test of a program is a run of its own,
# so the longest test, not the longest program, bounds the time),
# ELEC_TEST_ONLY (only the tests whose name holds this string).
# Usage: tests/sanitize_gpu.sh test_program...
#        tests/sanitize_gpu.sh --one TOOL PROGRAM [TEST]   (one run, one line)
sanitizer=${COMPUTE_SANITIZER:-compute-sanitizer}
tools=${SANITIZE_GPU_TOOLS:-memcheck racecheck synccheck initcheck}
logs=${SANITIZE_GPU_LOGS:-build/sanitize-gpu}
jobs=${SANITIZE_GPU_JOBS:-1}
export ELEC_REQUIRE_GPU=1
now() { date +%s.%N; }

# The leaks of a memcheck log, one line: "cufft BYTES COUNT other COUNT".
leaks_of() {
    awk '
        /^========= Leaked / {
            if (open) close_block()
            open = 1; cufft = 0; bytes = $3; gsub(",", "", bytes)
            next
        }
        open && /in libcufft/ { cufft = 1 }
        open && /^========= *$/ { close_block() }
        function close_block() {
            if (cufft) { cb += bytes; cn++ } else on++
            open = 0
        }
        END { if (open) close_block(); printf "cufft %d %d other %d\n", cb, cn, on }
    ' "$1"
}

# One run: TOOL PROGRAM [TEST], unit number $unit (in its log's name: a
# program named twice, or two of one name, run at once without sharing a
# log); prints "ok ..." or "FAIL ..." and its report lines.
run_one() {
    tool=$1 t=$2 name=$(basename "$2")${3:+ $3}
    [ -z "$3" ] || export ELEC_TEST_ONLY="=$3"
    case $tool in
    memcheck) flags="--tool memcheck --leak-check full" ;;
    racecheck | synccheck | initcheck) flags="--tool $tool" ;;
    *) echo "FAIL $tool: unknown tool"; return 1 ;;
    esac
    log="$logs/$unit-$tool-$(basename "$t")${3:+-$3}.log"
    start=$(now)
    # shellcheck disable=SC2086
    "$sanitizer" $flags --error-exitcode 86 --print-limit 100 "$t" > "$log" 2>&1
    rc=$?
    seconds=$(echo "$(now) $start" | awk '{ printf "%.1f", $1 - $2 }')
    why="" note=""
    if [ "$rc" -eq 255 ] &&
        grep -q "Target application terminated before first instrumented API call" "$log"; then
        # a test that makes no CUDA call (the host walk, a link check): the
        # tool has nothing to watch and says so with exit status 255
        note=" (no CUDA call: nothing for $tool to check)"
        rc=0
    elif [ "$tool" = racecheck ]; then
        line=$(grep "RACECHECK SUMMARY:" "$log" | tail -n 1)
        echo "$line" | grep -q "SUMMARY: 0 hazards" || why="hazards: ${line:-no summary line}"
    else
        errors=$(grep "ERROR SUMMARY:" "$log" | tail -n 1 | awk '{ print $4 }')
        [ -n "$errors" ] || why="errors: no summary line"
        if [ "$tool" = memcheck ] && [ -n "$errors" ]; then
            # shellcheck disable=SC2046 # the four words of the line
            set -- $(leaks_of "$log")
            cufft_bytes=$2 cufft_count=$3 other=$5
            cufft_ok=0
            if [ "$cufft_count" -gt 0 ] && [ -n "$baseline" ]; then
                # shellcheck disable=SC2086
                set -- $baseline
                [ "$cufft_bytes" -le "$2" ] && [ "$cufft_count" -le "$3" ] && cufft_ok=1
            fi
            if [ "$cufft_ok" -eq 1 ]; then
                note=" (cuFFT's own: $cufft_bytes bytes in $cufft_count allocation(s), within the baseline)"
                errors=$((errors - cufft_count))
                [ "$rc" -eq 86 ] && [ "$errors" -eq 0 ] && [ "$other" -eq 0 ] && rc=0
            fi
            if [ "$other" -gt 0 ] || { [ "$cufft_count" -gt 0 ] && [ "$cufft_ok" -eq 0 ]; }; then
                why="leaks: $(grep "LEAK SUMMARY" "$log" | tail -n 1)"
            fi
        fi
        [ -z "$errors" ] || [ "$errors" -eq 0 ] || why="$why errors: $errors"
    fi
    tally=$(grep "^tally:" "$log" | tail -n 1)
    echo "$tally" | grep -q " 0 failed" || why="$why tests: ${tally:-no tally line}"
    [ "$rc" -eq 0 ] || why="$why exit status $rc"
    if [ -z "$why" ]; then
        echo "ok   $tool $name ($seconds s): $tally$note"
    else
        echo "FAIL $tool $name ($seconds s):$why (log $log)"
        grep "^=========" "$log" | head -n 40
    fi
}

if [ "$1" = --one ]; then
    baseline=$SANITIZE_GPU_BASELINE_LEAKS
    unit=$2
    run_one "$3" "$4" "$5" > "$logs/$unit.result"
    exit 0
fi

if ! "$sanitizer" --version > /dev/null 2>&1; then
    echo "sanitize-gpu: '$sanitizer' does not run (set COMPUTE_SANITIZER to CUDA's compute-sanitizer)"
    echo "sanitize-gpu: 0 runs clean, 1 failed"
    exit 1
fi
mkdir -p "$logs"

baseline=""
case " $tools " in *" memcheck "*)
    if [ -n "$SANITIZE_GPU_CUFFT_BASELINE" ]; then
        "$sanitizer" --tool memcheck --leak-check full "$SANITIZE_GPU_CUFFT_BASELINE" \
            > "$logs/cufft-baseline.log" 2>&1
        baseline=$(leaks_of "$logs/cufft-baseline.log")
        echo "cuFFT baseline (a plan made and destroyed, under memcheck): $(echo "$baseline" |
            awk '{ printf "%d bytes in %d allocation(s)", $2, $3 }')"
    fi ;;
esac
export SANITIZE_GPU_BASELINE_LEAKS="$baseline"

# The runs, "UNIT TOOL PROGRAM [TEST]" a line (UNIT numbers them): one
# per program, or with more than one job one per test (ELEC_TEST_LIST names
# a program's tests).
units="$logs/units"
: > "$units"
for tool in $tools; do
    for t in "$@"; do
        if [ "$jobs" -gt 1 ]; then
            ELEC_TEST_LIST=1 "$t" | sed -n "s|^test |$tool $t |p" >> "$units"
        else
            echo "$tool $t" >> "$units"
        fi
    done
done
awk '{ print NR, $0 }' "$units" > "$units.numbered" && mv "$units.numbered" "$units"
rm -f "$logs"/*.result
start=$(now)
xargs -P "$jobs" -L 1 sh "$0" --one < "$units"
seconds=$(echo "$(now) $start" | awk '{ printf "%.1f", $1 - $2 }')
results="$logs/results"
while read -r unit _; do
    cat "$logs/$unit.result" 2> /dev/null
done < "$units" > "$results"
cat "$results"
runs=$(grep -c "^ok \|^FAIL " "$results")
failed=$(grep -c "^FAIL " "$results")
echo "sanitize-gpu: $((runs - failed)) runs clean, $failed failed ($tools; $jobs at once, $seconds s)"
[ "$failed" -eq 0 ] && [ "$runs" -eq "$(wc -l < "$units")" ] && [ "$runs" -gt 0 ]
