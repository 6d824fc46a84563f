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
# estimated time, here moved down by --msm-above, where MSM is estimated
# faster (at 0.75 A: about 0.8 s direct, 0.5 s MSM; at 2 A the direct sum
# is faster and stays).
"$build/elecmap" --cpu --spacing 2 --demo "$dir/x.dx" > "$dir/out" 2>"$dir/err" &&
    grep -q "method     DCS" "$dir/out" && ! grep -q "using MSM" "$dir/err"
small_ok=$?
"$build/elecmap" --cpu --spacing 0.75 --msm-above 0.1 --demo "$dir/x.dx" > "$dir/out" 2>"$dir/err" &&
    grep -q "method     MSM" "$dir/out" && grep -q "by the direct sum on the CPU: using MSM" "$dir/err"
large_ok=$?
if [ $small_ok -eq 0 ] && [ $large_ok -eq 0 ]; then ok "elecmap_chooses_msm_for_large_maps_and_says_so"
else fail "elecmap_chooses_msm_for_large_maps_and_says_so: $(cat "$dir/out" "$dir/err")"; fi

# a real structure when the shared data are there
fas2=../shared/data/structures/fas2.pqr
if [ -r "$fas2" ]; then
    if "$build/elecmap" --cpu --spacing 1.5 --method mdh "$fas2" "$dir/fas2.dx" > "$dir/out" 2>&1 &&
       grep -q "atoms      906" "$dir/out"; then ok "elecmap_maps_fasciculin_with_mdh"
    else fail "elecmap_maps_fasciculin_with_mdh: $(cat "$dir/out")"; fi
    "$build/elecenergy" --cpu --method spme --box 60 60 60 --json "$fas2" > "$dir/json" 2>&1
    if grep -q "needs FFTW3" "$dir/json"; then
        skip "elecenergy_prints_json_with_the_total: built without FFTW3 (the CPU SPME)"
    elif grep -q '"total": -' "$dir/json" && grep -q '"method": "spme"' "$dir/json"; then
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
# ------------------------------------------------ hostile input, failed disks
# A small structure of our own, and the demo map at 4 A (a few hundred points).
printf 'ATOM 1 N ALA 1 0 0 0 1 1.5\nATOM 2 O ALA 1 3 0 0 -1 1.5\n' > "$dir/pair.pqr"
demo() { "$build/elecmap" --cpu --quiet --spacing 4 --demo "$@"; }

# The output is the input (another name for it): refused before anything,
# the input untouched.
cp "$dir/pair.pqr" "$dir/pair.keep"
"$build/elecmap" --cpu "$dir/pair.pqr" "$dir/./pair.pqr" > "$dir/out" 2>&1
st=$?
if [ $st -eq 2 ] && grep -q "is the input file" "$dir/out" && cmp -s "$dir/pair.pqr" "$dir/pair.keep"; then
    ok "elecmap_refuses_to_write_over_its_input"
else fail "elecmap_refuses_to_write_over_its_input: status $st $(cat "$dir/out")"; fi

# An output that cannot be written is named before the input is even read.
"$build/elecmap" --cpu "$dir/missing.pqr" "$dir/no_such_dir/x.dx" > "$dir/out" 2>&1
st=$?
if [ $st -eq 1 ] && grep -q "no_such_dir/x.dx" "$dir/out" && ! grep -q "missing.pqr" "$dir/out"; then
    ok "elecmap_checks_its_output_before_computing"
else fail "elecmap_checks_its_output_before_computing: status $st $(cat "$dir/out")"; fi

# A write stopped part way by a file-size limit (as a full disk would):
# with SIGXFSZ ignored the write fails and elecmap says so; left to the
# signal, elecmap is killed.  Either way the old map is still there, whole.
printf 'the old map\n' > "$dir/keep.dx"
(trap '' XFSZ; ulimit -f 16; exec "$build/elecmap" --cpu --quiet --spacing 1 --demo "$dir/keep.dx") \
    > "$dir/out" 2>&1
st=$?
hidden=$(ls -A "$dir" | grep -c '^\.keep\.dx\.')
if [ $st -eq 1 ] && grep -q "unchanged" "$dir/out" && [ "$(cat "$dir/keep.dx")" = "the old map" ] &&
   [ "$hidden" -eq 0 ]; then
    ok "elecmap_keeps_the_old_map_when_a_write_fails"
else fail "elecmap_keeps_the_old_map_when_a_write_fails: status $st, $hidden temporary files, $(cat "$dir/out")"; fi
exec 3>&2 2> /dev/null # the shell's own word on the signal
(ulimit -f 16; exec "$build/elecmap" --cpu --quiet --spacing 1 --demo "$dir/keep.dx") > "$dir/out" 2>&1
st=$?
exec 2>&3 3>&-
if [ $st -gt 128 ] && [ "$(cat "$dir/keep.dx")" = "the old map" ]; then
    ok "elecmap_killed_while_writing_leaves_the_old_map"
else fail "elecmap_killed_while_writing_leaves_the_old_map: status $st, $(head -c 100 "$dir/keep.dx")"; fi
rm -f "$dir"/.keep.dx.*

# A device as the output: written in place, and after a failure (a full
# device) still there.  As root on a node made by mknod here, so that the
# real /dev/full is never at risk; otherwise /dev/full itself.
full=""
if [ "$(id -u)" -eq 0 ]; then
    if mknod "$dir/full" c 1 7 2> "$dir/out"; then full="$dir/full"
    else skip "elecmap_leaves_a_full_device_in_place: root, but mknod failed: $(cat "$dir/out")"; fi
else
    echo "     not root: no mknod here; /dev/full itself"
    full=/dev/full
fi
if [ -n "$full" ]; then
    demo "$full" > "$dir/out" 2>&1
    st=$?
    if [ $st -eq 1 ] && grep -q "No space" "$dir/out" && [ -c "$full" ]; then
        ok "elecmap_leaves_a_full_device_in_place"
    else fail "elecmap_leaves_a_full_device_in_place: status $st, $(ls -l "$full" 2>&1) $(cat "$dir/out")"; fi
fi

# Input that is no text, or too large a lattice, or too much work: refused
# at once with the reason and what to change.
"$build/elecmap" --cpu /dev/zero "$dir/x.dx" > "$dir/out" 2>&1
st=$?
[ $st -eq 1 ] && grep -q "binary data" "$dir/out" && ok "elecmap_refuses_binary_input_at_once" ||
    fail "elecmap_refuses_binary_input_at_once: status $st $(cat "$dir/out")"
printf 'ATOM 1 N ALA 1 0 0 0 1 1.5\nATOM 2 O ALA 1 1000000 0 0 -1 1.5\n' > "$dir/far.pqr"
"$build/elecmap" --cpu "$dir/far.pqr" "$dir/x.dx" > "$dir/out" 2>&1
st=$?
if [ $st -eq 1 ] && grep -q "over the limit of 268435456" "$dir/out" && grep -q -- "--max-points" "$dir/out" &&
   ! grep -q "lattice: lattice" "$dir/out"; then
    ok "elecmap_refuses_a_lattice_past_max_points"
else fail "elecmap_refuses_a_lattice_past_max_points: status $st $(cat "$dir/out")"; fi
demo --max-points 100 "$dir/x.dx" > "$dir/out" 2>&1
st1=$?
demo --max-points 10000 "$dir/x.dx" > "$dir/out2" 2>&1
st2=$?
[ $st1 -eq 1 ] && [ $st2 -eq 0 ] && ok "elecmap_max_points_moves_the_limit" ||
    fail "elecmap_max_points_moves_the_limit: $st1 $st2 $(cat "$dir/out" "$dir/out2")"
demo --method dcs --max-work 1000 "$dir/x.dx" > "$dir/out" 2>&1
st=$?
[ $st -eq 1 ] && grep -q "over --max-work" "$dir/out" && grep -q "about .* s on the CPU" "$dir/out" &&
    ok "elecmap_refuses_a_direct_sum_past_max_work" ||
    fail "elecmap_refuses_a_direct_sum_past_max_work: status $st $(cat "$dir/out")"
# 2000 atoms at one point: MSM would sum every atom at most points, no
# faster than the direct sum; past --msm-above, refused with both estimates.
awk 'BEGIN { for (i = 1; i <= 2000; i++) printf "ATOM %d N ALA 1 1.0 2.0 3.0 %d 1.5\n", i, i % 2 ? 1 : -1 }' \
    > "$dir/one_point.pqr"
"$build/elecmap" --cpu --msm-above 0.01 "$dir/one_point.pqr" "$dir/x.dx" > "$dir/out" 2>&1
st=$?
if [ $st -eq 1 ] && grep -q "gains nothing" "$dir/out" && grep -q "span only 0 x 0 x 0 A" "$dir/out" &&
   grep -q -- "--method dcs or --method msm" "$dir/out"; then
    ok "elecmap_refuses_atoms_at_one_point_instead_of_a_slow_msm"
else fail "elecmap_refuses_atoms_at_one_point_instead_of_a_slow_msm: status $st $(cat "$dir/out")"; fi
# kappa 100 /A with 1.5 A radii: e^150 overflows float before any sum
"$build/elecmap" --cpu --quiet --method mdh --kappa 100 "$dir/pair.pqr" "$dir/x.dx" > "$dir/out" 2>&1
st=$?
[ $st -eq 1 ] && grep -q "kappa 100" "$dir/out" && ok "elecmap_refuses_mdh_screening_past_float_range" ||
    fail "elecmap_refuses_mdh_screening_past_float_range: status $st $(cat "$dir/out")"
"$build/elecmap" --gpus all --spacing 4 --demo "$dir/x.dx" > "$dir/out" 2>&1
st=$?
if grep -q "no CUDA device\|built without CUDA" "$dir/out"; then
    [ $st -eq 1 ] && ok "elecmap_says_when_gpus_all_finds_no_gpu" ||
        fail "elecmap_says_when_gpus_all_finds_no_gpu: status $st $(cat "$dir/out")"
elif [ $st -eq 0 ] && grep -q "device     .*GPU\|device     .*H1\|device     [0-9] x" "$dir/out"; then
    skip "elecmap_says_when_gpus_all_finds_no_gpu: this machine has a GPU"
else fail "elecmap_says_when_gpus_all_finds_no_gpu: status $st $(cat "$dir/out")"; fi

# Integer options out of range: a usage error (status 2), never a cast of
# an out-of-range double.
bad=0
for args in "--dims 1e10 2 2" "--dims 2.5 2 2" "--gpus 1e10" "--msm-order 1e300" "--max-points 1e300"; do
    # shellcheck disable=SC2086
    "$build/elecmap" $args --demo "$dir/x.dx" > "$dir/out" 2>&1
    [ $? -eq 2 ] || { bad=1; echo "     elecmap $args: $(cat "$dir/out")"; }
done
for args in "--order 1e10" "--order 4.5" "--grid 1e10 2 2" "--grid 64 64 -3"; do
    # shellcheck disable=SC2086
    "$build/elecenergy" $args "$dir/pair.pqr" > "$dir/out" 2>&1
    [ $? -eq 2 ] || { bad=1; echo "     elecenergy $args: $(cat "$dir/out")"; }
done
[ $bad -eq 0 ] && ok "integer_options_out_of_range_are_usage_errors" ||
    fail "integer_options_out_of_range_are_usage_errors"

# elecenergy: JSON with a file name that needs escaping; forces never over
# the input, and written whole or not at all.
odd="$dir/$(printf 'a"b\\c\td.pqr')"
cp "$dir/pair.pqr" "$odd"
"$build/elecenergy" --method direct --json "$odd" > "$dir/json" 2>&1
if grep -q '"input": ".*a\\"b\\\\c\\u0009d.pqr", "atoms": 2' "$dir/json"; then
    ok "elecenergy_json_escapes_the_file_name"
else fail "elecenergy_json_escapes_the_file_name: $(cat "$dir/json")"; fi
"$build/elecenergy" --method direct --forces "$dir/pair.pqr" "$dir/pair.pqr" > "$dir/out" 2>&1
st=$?
[ $st -eq 2 ] && cmp -s "$dir/pair.pqr" "$dir/pair.keep" && ok "elecenergy_refuses_forces_over_its_input" ||
    fail "elecenergy_refuses_forces_over_its_input: status $st $(cat "$dir/out")"
awk 'BEGIN { for (i = 1; i <= 3000; i++) printf "ATOM %d N ALA 1 %d.5 %d.25 %d.125 %d 1.5\n", i, i % 17, i % 13, i, i % 2 ? 1 : -1 }' \
    > "$dir/chain.pqr"
printf 'the old forces\n' > "$dir/forces.txt"
(trap '' XFSZ; ulimit -f 16; exec "$build/elecenergy" --method direct --forces "$dir/forces.txt" "$dir/chain.pqr") \
    > "$dir/out" 2>&1
st=$?
if [ $st -eq 1 ] && grep -q "unchanged" "$dir/out" && [ "$(cat "$dir/forces.txt")" = "the old forces" ]; then
    ok "elecenergy_keeps_the_old_forces_when_a_write_fails"
else fail "elecenergy_keeps_the_old_forces_when_a_write_fails: status $st $(cat "$dir/out")"; fi
"$build/elecenergy" --method direct --forces "$dir/forces.txt" "$dir/pair.pqr" > "$dir/out" 2>&1 &&
    [ "$(sed -n 2p "$dir/forces.txt" | awk '{ print $1 }')" = 1 ] && [ "$(wc -l < "$dir/forces.txt")" -eq 3 ] &&
    ok "elecenergy_writes_the_forces" || fail "elecenergy_writes_the_forces: $(cat "$dir/out" "$dir/forces.txt")"

echo "tally: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
