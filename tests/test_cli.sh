#!/bin/sh
# The command-line tools as a user runs them: elecmap on its built-in input
# and on a real structure, elecenergy's JSON, and their refusals of bad
# input.  Prints one line per check and the harness's tally line.
# Usage: tests/test_cli.sh BUILD_DIR
build=${1:-build}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
passed=0; failed=0; skipped=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1"; failed=$((failed + 1)); }
skip() { echo "skip $1"; skipped=$((skipped + 1)); }

# elecmap --demo: a DX file with the right header and point count
if "$build/elecmap" --cpu --spacing 2 --demo "$dir/demo.dx" > "$dir/out" 2>&1 &&
   grep -q "^object 1 class gridpositions counts" "$dir/demo.dx" &&
   grep -q "potential  min" "$dir/out"; then
    counts=$(sed -n 's/^object 1 class gridpositions counts \([0-9]*\) \([0-9]*\) \([0-9]*\).*/\1 \2 \3/p' "$dir/demo.dx")
    set -- $counts
    items=$(sed -n 's/^object 3 class array type [a-z]* rank 0 items \([0-9]*\).*/\1/p' "$dir/demo.dx")
    if [ "$items" = "$(($1 * $2 * $3))" ]; then ok "elecmap_demo_writes_a_dx_map"
    else fail "elecmap_demo_writes_a_dx_map: items $items for counts $counts"; fi
else
    fail "elecmap_demo_writes_a_dx_map: $(cat "$dir/out")"
fi

# elecmap refuses what it cannot do, with status 2 for usage and 1 for input
"$build/elecmap" --spacing -1 --demo "$dir/x.dx" > "$dir/out" 2>&1
[ $? -eq 2 ] && ok "elecmap_refuses_a_negative_spacing" || fail "elecmap_refuses_a_negative_spacing"
"$build/elecmap" "$dir/missing.pqr" "$dir/x.dx" > "$dir/out" 2>&1
[ $? -eq 1 ] && grep -q "cannot open" "$dir/out" && ok "elecmap_names_a_missing_file" ||
    fail "elecmap_names_a_missing_file: $(cat "$dir/out")"

# a real structure when the shared data are there
fas2=../shared/data/structures/fas2.pqr
if [ -r "$fas2" ]; then
    if "$build/elecmap" --cpu --spacing 1.5 --method mdh "$fas2" "$dir/fas2.dx" > "$dir/out" 2>&1 &&
       grep -q "atoms      906" "$dir/out"; then ok "elecmap_maps_fasciculin_with_mdh"
    else fail "elecmap_maps_fasciculin_with_mdh: $(cat "$dir/out")"; fi
    if "$build/elecenergy" --cpu --method spme --box 60 60 60 --json "$fas2" > "$dir/json" 2>&1 &&
       grep -q '"total": -' "$dir/json" && grep -q '"method": "spme"' "$dir/json"; then
        ok "elecenergy_prints_json_with_the_total"
    else fail "elecenergy_prints_json_with_the_total: $(cat "$dir/json")"; fi
    "$build/elecenergy" --method ewald "$fas2" > "$dir/out" 2>&1
    [ $? -eq 1 ] && grep -q "no periodic box" "$dir/out" && ok "elecenergy_asks_for_a_box" ||
        fail "elecenergy_asks_for_a_box: $(cat "$dir/out")"
else
    skip "elecmap_maps_fasciculin_with_mdh: $fas2 absent"
    skip "elecenergy_prints_json_with_the_total: $fas2 absent"
    skip "elecenergy_asks_for_a_box: $fas2 absent"
fi
echo "tally: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
