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
# Environment: COMPUTE_SANITIZER (the binary), SANITIZE_GPU_TOOLS (a
# subset of "memcheck racecheck synccheck initcheck"), ELEC_TEST_ONLY (only
# the tests whose name holds this string: racecheck and initcheck slow big
# kernels down by 10-100x).
# Usage: tests/sanitize_gpu.sh test_program...
sanitizer=${COMPUTE_SANITIZER:-compute-sanitizer}
tools=${SANITIZE_GPU_TOOLS:-memcheck racecheck synccheck initcheck}
logs=${SANITIZE_GPU_LOGS:-build/sanitize-gpu}
if ! "$sanitizer" --version > /dev/null 2>&1; then
    echo "sanitize-gpu: '$sanitizer' does not run (set COMPUTE_SANITIZER to CUDA's compute-sanitizer)"
    echo "sanitize-gpu: 0 runs clean, 1 failed"
    exit 1
fi
mkdir -p "$logs"
export ELEC_REQUIRE_GPU=1
now() { date +%s.%N; }
runs=0 failed=0 summary=""
for tool in $tools; do
    case $tool in
    memcheck) flags="--tool memcheck --leak-check full" ;;
    racecheck | synccheck | initcheck) flags="--tool $tool" ;;
    *) echo "sanitize-gpu: unknown tool '$tool'"; exit 1 ;;
    esac
    tool_start=$(now)
    for t in "$@"; do
        log="$logs/$tool-$(basename "$t").log"
        start=$(now)
        # shellcheck disable=SC2086
        "$sanitizer" $flags --error-exitcode 86 --print-limit 100 "$t" > "$log" 2>&1
        rc=$?
        seconds=$(echo "$(now) $start" | awk '{ printf "%.1f", $1 - $2 }')
        runs=$((runs + 1))
        why=""
        if [ "$tool" = racecheck ]; then
            line=$(grep "RACECHECK SUMMARY:" "$log" | tail -n 1)
            echo "$line" | grep -q "SUMMARY: 0 hazards" || why="hazards: ${line:-no summary line}"
        else
            line=$(grep "ERROR SUMMARY:" "$log" | tail -n 1)
            echo "$line" | grep -q "SUMMARY: 0 errors" || why="errors: ${line:-no summary line}"
        fi
        if grep -q "LEAK SUMMARY" "$log" && ! grep -q "LEAK SUMMARY: 0 bytes" "$log"; then
            why="$why leaks: $(grep "LEAK SUMMARY" "$log" | tail -n 1)"
        fi
        tally=$(grep "^tally:" "$log" | tail -n 1)
        echo "$tally" | grep -q " 0 failed" || why="$why tests: ${tally:-no tally line}"
        [ "$rc" -eq 0 ] || why="$why exit status $rc"
        if [ -z "$why" ]; then
            echo "ok   $tool $(basename "$t") ($seconds s): $tally"
        else
            failed=$((failed + 1))
            echo "FAIL $tool $(basename "$t") ($seconds s):$why (log $log)"
            grep "^=========" "$log" | head -n 40
        fi
    done
    tool_seconds=$(echo "$(now) $tool_start" | awk '{ printf "%.1f", $1 - $2 }')
    echo "== $tool: $tool_seconds s"
    summary="$summary $tool ${tool_seconds}s"
done
echo "sanitize-gpu: $((runs - failed)) runs clean, $failed failed ($summary )"
[ "$failed" -eq 0 ]
