#!/bin/sh
# Runs each test program given, shows its output, and closes with the
# suite's line "N passed, N failed, N skipped".  Exit status 1 if any failed,
# or if a program crashed or ended without its tally line.  ELEC_TEST_WRAPPER,
# where set, runs each program under it (make valgrind: valgrind and its
# options; a wrapper's own failure, e.g. an error it found, fails the test).
# ELEC_TEST_ONLY that selects no test in any program given fails the run: a
# misspelt name would otherwise pass having tested nothing.  A test counts as
# selected where a program reports it (ok, FAIL or skip) under a name the
# filter takes: the shell programs run all their checks whatever it says.
passed=0; failed=0; skipped=0; selected=0
# Some tests write scratch files under build/ (the repository's default
# build folder), whatever folder BUILD names: with BUILD=/tmp/x and no
# build/ beside the sources, 22 of them failed to write.
mkdir -p build
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
    if [ -n "${ELEC_TEST_ONLY:-}" ]; then
        n=$(printf '%s\n' "$out" | awk -v only="$ELEC_TEST_ONLY" '
            BEGIN { exact = substr(only, 1, 1) == "="; want = exact ? substr(only, 2) : only }
            /^(ok  |FAIL|skip) / { name = $2; sub(/:$/, "", name)
                                   if (exact ? name == want : index(name, want) > 0) n++ }
            END { print n + 0 }')
        selected=$((selected + n))
    fi
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $t: exited with status $rc"
        failed=$((failed + 1))
    fi
done
if [ -n "${ELEC_TEST_ONLY:-}" ] && [ "$selected" -eq 0 ]; then
    echo "FAIL ELEC_TEST_ONLY=$ELEC_TEST_ONLY selects no test of: $*"
    failed=$((failed + 1))
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
