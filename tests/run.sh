#!/bin/sh
# Runs each test program given, shows its output, and closes with the
# suite's line "N passed, N failed, N skipped".  Exit status 1 if any failed,
# or if a program crashed or ended without its tally line.  ELEC_TEST_WRAPPER,
# where set, runs each program under it (make valgrind: valgrind and its
# options; a wrapper's own failure, e.g. an error it found, fails the test).
passed=0; failed=0; skipped=0
for t in "$@"; do
    echo "== $t"
    out=$(${ELEC_TEST_WRAPPER:-} "$t" 2>&1); rc=$?
    printf '%s\n' "$out"
    tally=$(printf '%s\n' "$out" | sed -n 's/^tally: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped$/\1 \2 \3/p' | tail -n 1)
    if [ -z "$tally" ]; then
        echo "FAIL $t: exited with status $rc before its tally"
        failed=$((failed + 1))
        continue
    fi
    read p f s <<EOT
$tally
EOT
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $t: exited with status $rc"
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
