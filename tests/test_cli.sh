#!/bin/sh
# The command-line tools as a user runs them: elecmap on its built-in input
# (DCS, MSM and cutoff maps, the automatic choice of MSM)
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

# The data values of a DX file, one per line.
dx_values() {
    awk '/data follows/ { on = 1; next } /^attribute|^object/ { on = 0 } on { for (i = 1; i <= NF; i++) print $i }' "$1"
}
# Relative RMS difference of two DX maps' values (the second the truth).
dx_rel_rms() {
    dx_values "$1" > "$dir/a.values"
    dx_values "$2" > "$dir/b.values"
    paste "$dir/a.values" "$dir/b.values" |
        awk '{ d += ($1 - $2) ^ 2; m += $2 ^ 2; n++ } END { if (n == 0 || m == 0) print "nan"; else printf "%.3e\n", sqrt(d / m) }'
}

# MSM and cutoff maps of the demo: MSM within msmpot's 5e-3 of the direct
# sum (its defaults measure ~1e-3); the cutoff map (short range alone) far
# from it, and the shifted kind different again.
"$build/elecmap" --cpu --spacing 1.5 --method dcs --demo "$dir/dcs.dx" > "$dir/out" 2>&1
"$build/elecmap" --cpu --spacing 1.5 --method msm --demo "$dir/msm.dx" > "$dir/out" 2>&1 &&
    grep -q "method     MSM (multilevel summation), cutoff 12 A, spacing 2 A, C1 cubic" "$dir/out"
msm_ok=$?
e=$(dx_rel_rms "$dir/msm.dx" "$dir/dcs.dx")
if [ $msm_ok -eq 0 ] && awk -v e="$e" 'BEGIN { exit !(e <= 5e-3) }'; then
    ok "elecmap_msm_map_is_within_msmpot_target_of_dcs ($e)"
else fail "elecmap_msm_map_is_within_msmpot_target_of_dcs: $e $(cat "$dir/out")"; fi
"$build/elecmap" --cpu --spacing 1.5 --method msm --msm-order 6 --cutoff 10 --msm-spacing 1.5 \
    --demo "$dir/msm6.dx" > "$dir/out" 2>&1 &&
    grep -q "cutoff 10 A, spacing 1.5 A, C1 quintic, C3 splitting" "$dir/out"
msm_ok=$?
e6=$(dx_rel_rms "$dir/msm6.dx" "$dir/dcs.dx")
if [ $msm_ok -eq 0 ] && awk -v e="$e6" -v e4="$e" 'BEGIN { exit !(e < e4) }'; then
    ok "elecmap_msm_options_are_used_and_quintic_improves_it ($e6)"
else fail "elecmap_msm_options_are_used_and_quintic_improves_it: $e6 vs $e $(cat "$dir/out")"; fi
"$build/elecmap" --cpu --spacing 1.5 --method cutoff --cutoff 8 --demo "$dir/cut.dx" > "$dir/out" 2>&1 &&
    grep -q "method     cutoff map, MSM short range within 8 A" "$dir/out" &&
    "$build/elecmap" --cpu --spacing 1.5 --method cutoff --cutoff 8 --shifted --demo "$dir/shift.dx" \
        > "$dir/out2" 2>&1 && grep -q "shifted" "$dir/out2"
cut_ok=$?
ec=$(dx_rel_rms "$dir/cut.dx" "$dir/dcs.dx")
es=$(dx_rel_rms "$dir/shift.dx" "$dir/cut.dx")
if [ $cut_ok -eq 0 ] && awk -v a="$ec" -v b="$es" 'BEGIN { exit !(a > 1e-2 && b > 1e-3) }'; then
    ok "elecmap_cutoff_maps_are_short_range_of_either_kind"
else fail "elecmap_cutoff_maps_are_short_range_of_either_kind: $ec $es $(cat "$dir/out" "$dir/out2")"; fi
"$build/elecmap" --msm-order 5 --demo "$dir/x.dx" > "$dir/out" 2>&1
[ $? -eq 2 ] && grep -q "use 4, 6, 8 or 10" "$dir/out" && ok "elecmap_refuses_an_msm_order_it_lacks" ||
    fail "elecmap_refuses_an_msm_order_it_lacks: $(cat "$dir/out")"

# Without --method: DCS for a small map, MSM (said on stderr) past the
# estimated time, here moved down by --msm-above.
"$build/elecmap" --cpu --spacing 2 --demo "$dir/x.dx" > "$dir/out" 2>"$dir/err" &&
    grep -q "method     DCS" "$dir/out" && ! grep -q "using MSM" "$dir/err"
small_ok=$?
"$build/elecmap" --cpu --spacing 2 --msm-above 1e-4 --demo "$dir/x.dx" > "$dir/out" 2>"$dir/err" &&
    grep -q "method     MSM" "$dir/out" && grep -q "by the direct sum on the CPU: using MSM" "$dir/err"
large_ok=$?
if [ $small_ok -eq 0 ] && [ $large_ok -eq 0 ]; then ok "elecmap_chooses_msm_for_large_maps_and_says_so"
else fail "elecmap_chooses_msm_for_large_maps_and_says_so: $(cat "$dir/out" "$dir/err")"; fi

# The accuracy knob from the command line: elecmap's MSM at --tolerance 1e-4
# within 1e-4 of the direct sum (and says what it expects); elecenergy's
# JSON carries the tolerance, the choice and the estimate, an estimate
# within the tolerance; an exact Ewald sum past reach is refused at once.
"$build/elecmap" --cpu --spacing 1.5 --method msm --tolerance 1e-4 --demo "$dir/msmt.dx" \
    > "$dir/out" 2>&1 && grep -q "expected relative error" "$dir/out"
msm_ok=$?
et=$(dx_rel_rms "$dir/msmt.dx" "$dir/dcs.dx")
if [ $msm_ok -eq 0 ] && awk -v e="$et" 'BEGIN { exit !(e <= 1e-4) }'; then
    ok "elecmap_msm_tolerance_is_kept ($et)"
else fail "elecmap_msm_tolerance_is_kept: $et $(cat "$dir/out")"; fi
cat > "$dir/ions.pqr" <<'PQR'
CRYST1   20.000   20.000   20.000  90.00  90.00  90.00 P 1           1
ATOM      1  NA  ION     1       1.000   1.000   1.000  1.0000 1.0000
ATOM      2  CL  ION     2       4.000   1.500   1.000 -1.0000 1.8000
ATOM      3  NA  ION     3      12.000   7.000   3.000  1.0000 1.0000
ATOM      4  CL  ION     4      12.500  10.000   4.000 -1.0000 1.8000
ATOM      5  NA  ION     5       6.000  15.000  17.000  1.0000 1.0000
ATOM      6  CL  ION     6       3.000  15.500  16.000 -1.0000 1.8000
PQR
if "$build/elecenergy" --cpu --method spme --tolerance 1e-5 --json "$dir/ions.pqr" > "$dir/json" 2>&1 &&
   grep -q '"tolerance": 1.000e-05' "$dir/json" && grep -q '"estimate": {"force_error"' "$dir/json"; then
    fe=$(sed -n 's/.*"force_error": \([0-9.e+-]*\).*/\1/p' "$dir/json")
    if awk -v e="$fe" 'BEGIN { exit !(e > 0 && e <= 1e-5) }'; then
        ok "elecenergy_json_has_the_choice_and_its_estimate ($fe)"
    else fail "elecenergy_json_has_the_choice_and_its_estimate: $(cat "$dir/json")"; fi
else fail "elecenergy_json_has_the_choice_and_its_estimate: $(cat "$dir/json")"; fi
"$build/elecenergy" --cpu --method ewald --tolerance 1e-300 "$dir/ions.pqr" > "$dir/out" 2>&1
[ $? -eq 1 ] && grep -q "below what it can meet" "$dir/out" && ok "elecenergy_refuses_a_tolerance_out_of_reach" ||
    fail "elecenergy_refuses_a_tolerance_out_of_reach: $(cat "$dir/out")"

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
