#!/bin/sh
# tests/sanitize_gpu.sh's verdicts, with a stand-in for compute-sanitizer
# (no GPU needed): a clean run passes; a report, a hazard, a failed test
# or a missing tally fails; a leak made inside libcufft passes only within
# the measured cuFFT baseline; any other leak fails; runs in parallel give
# every run's line.  Prints one line per check and the harness's tally line.
# Usage: tests/test_sanitize_gpu.sh
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
passed=0; failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }

# The stand-in: runs the program, then prints what $REPORT asks for, in
# compute-sanitizer's words: nothing, a cuFFT leak (6,967,984 bytes in one
# allocation, as measured on an H100), two of them, an unrelated leak, an
# error, a hazard.
cat > "$dir/sanitizer" <<'STANDIN'
#!/bin/sh
[ "$1" = --version ] && { echo stand-in; exit 0; }
tool=memcheck
while [ $# -gt 1 ]; do
    case $1 in
    --tool) tool=$2; shift 2 ;;
    --leak-check | --error-exitcode | --print-limit) shift 2 ;;
    *) break ;;
    esac
done
case $1 in */baseline) REPORT=cufft ;; esac # what cuFFT alone keeps
"$@"
rc=$?
leak() { # bytes, library
    echo "========= Leaked $1 bytes at 0x7f0000000000"
    echo "=========     Saved host backtrace up to driver entry point at allocation time"
    echo "=========         Host Frame: cuMemAlloc_v2 [0x32b91f] in libcuda.so.1"
    echo "=========         Host Frame:  [0x35d799] in $2"
    echo "========= "
}
errors=0
if [ "$REPORT" = noapi ]; then # the program made no CUDA call
    echo "========= Error: Target application terminated before first instrumented API call"
    exit 255
fi
case "$REPORT:$tool" in
cufft:memcheck) leak 6,967,984 libcufft.so.12; errors=1 ;;
cufft2:memcheck) leak 6,967,984 libcufft.so.12; leak 6,967,984 libcufft.so.12; errors=2 ;;
other:memcheck) leak 6,967,984 libcufft.so.12; leak 4,096 test_gpu_x; errors=2 ;;
error:synccheck) echo "========= Barrier error detected"; errors=1 ;;
esac
if [ "$tool" = racecheck ]; then
    hazards=0; [ "$REPORT" = hazard ] && hazards=1
    echo "========= RACECHECK SUMMARY: $hazards hazards displayed ($hazards errors, 0 warnings)"
    [ "$hazards" -eq 0 ] || exit 86
else
    echo "========= ERROR SUMMARY: $errors errors"
    [ "$errors" -eq 0 ] || exit 86
fi
exit $rc
STANDIN
# test_good has two tests, first and second, and honours ELEC_TEST_LIST and
# ELEC_TEST_ONLY==name as tests/test.h does (it notes each test it runs)
cat > "$dir/test_good" <<GOOD
#!/bin/sh
if [ -n "\$ELEC_TEST_LIST" ]; then echo "test first"; echo "test second"; exit 0; fi
case "\$ELEC_TEST_ONLY" in
=first | =second) echo "\${ELEC_TEST_ONLY#=}" >> "$dir/ran"; echo "tally: 1 passed, 0 failed, 0 skipped" ;;
*) echo "tally: 2 passed, 0 failed, 0 skipped" ;;
esac
GOOD
printf '#!/bin/sh\necho "tally: 1 passed, 1 failed, 0 skipped"\nexit 1\n' > "$dir/test_bad"
printf '#!/bin/sh\nexit 0\n' > "$dir/test_silent"
printf '#!/bin/sh\nexit 0\n' > "$dir/baseline"
chmod +x "$dir/sanitizer" "$dir/test_good" "$dir/test_bad" "$dir/test_silent" "$dir/baseline"

# run NAME REPORT BASELINE(0/1) JOBS PROGRAMS...: the script's exit status,
# its output in $dir/NAME.out
run() {
    name=$1 report=$2 with_baseline=$3 jobs=$4
    shift 4
    base=""
    [ "$with_baseline" -eq 1 ] && base="$dir/baseline"
    REPORT=$report COMPUTE_SANITIZER="$dir/sanitizer" SANITIZE_GPU_LOGS="$dir/logs-$name" \
        SANITIZE_GPU_JOBS=$jobs SANITIZE_GPU_CUFFT_BASELINE=$base \
        sh tests/sanitize_gpu.sh "$@" > "$dir/$name.out" 2>&1
}
expect() { # NAME STATUS(0 pass, 1 fail) PATTERN
    if [ "$2" -eq "$status" ] && grep -q "$3" "$dir/$1.out"; then ok "$1"
    else fail "$1: exit status $status, output: $(cat "$dir/$1.out")"; fi
}

# The cases below are a table: each a run and its expectation, alike by
# design.
run clean_runs_pass none 1 1 "$dir/test_good"; status=$?
expect clean_runs_pass 0 "sanitize-gpu: 4 runs clean, 0 failed"

# in parallel each test is a run: 4 tools x 2 programs x 2 tests, each
# test run once per tool and program
: > "$dir/ran"
run runs_in_parallel_are_one_per_test none 1 4 "$dir/test_good" "$dir/test_good"; status=$?
expect runs_in_parallel_are_one_per_test 0 "sanitize-gpu: 16 runs clean, 0 failed"
if [ "$(grep -c first "$dir/ran")" -eq 8 ] && [ "$(grep -c second "$dir/ran")" -eq 8 ]; then
    ok each_test_runs_alone_once_per_tool_and_program
else
    fail "each_test_runs_alone_once_per_tool_and_program: $(sort "$dir/ran" | uniq -c)"
fi

run a_failed_test_fails none 1 1 "$dir/test_bad"; status=$?
expect a_failed_test_fails 1 "sanitize-gpu: 0 runs clean, 4 failed"

run a_missing_tally_fails none 1 1 "$dir/test_silent"; status=$?
expect a_missing_tally_fails 1 "FAIL memcheck test_silent.*no tally line"

run a_hazard_fails hazard 1 1 "$dir/test_good"; status=$?
expect a_hazard_fails 1 "FAIL racecheck test_good.*hazards"

run an_error_fails error 1 1 "$dir/test_good"; status=$?
expect an_error_fails 1 "FAIL synccheck test_good.*errors: 1"

# a test making no CUDA call: the tool says so and exits 255; clean if its
# tally is, a failure if not
run a_test_without_cuda_calls_passes noapi 1 1 "$dir/test_good"; status=$?
expect a_test_without_cuda_calls_passes 0 "no CUDA call: nothing for memcheck to check"

run a_failed_test_without_cuda_calls_fails noapi 1 1 "$dir/test_bad"; status=$?
expect a_failed_test_without_cuda_calls_fails 1 "FAIL memcheck test_bad.*tests: tally: 1 passed, 1 failed"

# the baseline program's report is always one cuFFT leak, as on an H100
run cufft_leak_within_the_baseline_passes cufft 1 1 "$dir/test_good"; status=$?
expect cufft_leak_within_the_baseline_passes 0 "cuFFT's own: 6967984 bytes in 1 allocation"

run cufft_leak_without_a_baseline_fails cufft 0 1 "$dir/test_good"; status=$?
expect cufft_leak_without_a_baseline_fails 1 "FAIL memcheck test_good.*leaks"

# twice the baseline
run cufft_leaks_past_the_baseline_fail cufft2 1 1 "$dir/test_good"; status=$?
expect cufft_leaks_past_the_baseline_fail 1 "FAIL memcheck test_good.*leaks"

run another_leak_fails_beside_cuffts other 1 1 "$dir/test_good"; status=$?
expect another_leak_fails_beside_cuffts 1 "FAIL memcheck test_good.*leaks"

echo "tally: $passed passed, $failed failed, 0 skipped"
[ $failed -eq 0 ]
