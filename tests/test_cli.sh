#!/bin/sh
# The command-line tools as a user runs them: elecmap on its built-in input
# (DCS, MSM and cutoff maps, the automatic choice of MSM, the map formats,
# units and the map's comment) and on a real structure, elecenergy's JSON,
# elecsurf's outputs, --version, and their refusals of bad input.  Prints one line per check and the harness's tally line.
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
# the kinds as asked for and unlike DCS (or each other); their values are
# tests/test_cutoff.c's
ec=$(dx_rel_rms "$dir/cut.dx" "$dir/dcs.dx")
es=$(dx_rel_rms "$dir/shift.dx" "$dir/cut.dx")
if [ $cut_ok -eq 0 ] && awk -v a="$ec" -v b="$es" 'BEGIN { exit !(a > 1e-2 && b > 1e-3) }'; then
    ok "elecmap_makes_cutoff_maps_of_either_kind_unlike_dcs"
else fail "elecmap_makes_cutoff_maps_of_either_kind_unlike_dcs: $ec $es $(cat "$dir/out" "$dir/out2")"; fi
# A map to /dev/stdout redirected to a file: the map alone in the file (the
# summary on stderr, not among its data), as a map written to a file is
"$build/elecmap" --cpu --dims 5 5 5 --demo "$dir/named.dx" > /dev/null 2>&1
link_before=$(ls -ld /dev/stdout 2>&1)
"$build/elecmap" --cpu --dims 5 5 5 --demo /dev/stdout > "$dir/stdout.dx" 2> "$dir/err"
rc=$?
grep -v '^#' "$dir/named.dx" > "$dir/named.body"
grep -v '^#' "$dir/stdout.dx" > "$dir/stdout.body"
if [ $rc -eq 0 ] && cmp -s "$dir/named.body" "$dir/stdout.body" &&
   grep -q "elecmap: (built-in demo) -> /dev/stdout" "$dir/err" &&
   [ "$(ls -ld /dev/stdout 2>&1)" = "$link_before" ]; then
    ok "elecmap_writes_a_map_to_stdout_and_its_summary_to_stderr"
else fail "elecmap_writes_a_map_to_stdout_and_its_summary_to_stderr: $rc $(cat "$dir/err")"; fi
# "-" is the standard stream, in and out (it made a file named "-")
tools=$(cd "$build" && pwd) # the run below is in $dir, where no "-" may appear
printf 'ATOM 1 N ALA 1 0 0 0 1 1.5\nATOM 2 O ALA 1 3 0 0 -1 1.5\n' |
    (cd "$dir" && "$tools/elecmap" --cpu --dims 5 5 5 - - > "$dir/dash.dx" 2> "$dir/err")
rc=$?
if [ $rc -eq 0 ] && [ ! -e "$dir/-" ] && grep -q "^object 1 class gridpositions counts 5 5 5" "$dir/dash.dx" &&
   grep -q "/dev/stdin -> /dev/stdout" "$dir/err"; then
    ok "elecmap_reads_and_writes_the_standard_streams_as_dash"
else fail "elecmap_reads_and_writes_the_standard_streams_as_dash: $rc $(ls "$dir") $(cat "$dir/err")"; fi
"$build/elecmap" --msm-order 5 --demo "$dir/x.dx" > "$dir/out" 2>&1
[ $? -eq 2 ] && grep -q "use 4, 6, 8 or 10" "$dir/out" && ok "elecmap_refuses_an_msm_order_it_lacks" ||
    fail "elecmap_refuses_an_msm_order_it_lacks: $(cat "$dir/out")"
# points 1e300 A apart: the CPU's float map sums each about its own box's
# centre (a lattice longer than 1024 A), so the first point's potential is
# a one-point map's and the far points' underflow to 0, as their exact
# 1e-300 does in float (a single centre once put every point past float's
# range, and the map was refused)
"$build/elecmap" --cpu --quiet --dims 3 3 3 --origin 0 0 0 --spacing 1e300 --demo "$dir/far.dx" \
    > "$dir/out" 2>&1
st1=$?
"$build/elecmap" --cpu --quiet --dims 1 1 1 --origin 0 0 0 --spacing 1 --demo "$dir/one.dx" \
    > "$dir/out2" 2>&1
st2=$?
if [ $st1 -eq 0 ] && [ $st2 -eq 0 ] &&
   [ "$(dx_values "$dir/far.dx" | head -n 1)" = "$(dx_values "$dir/one.dx")" ] &&
   [ "$(dx_values "$dir/far.dx" | tail -n 26 | sort -u)" = "0.00000000e+00" ]; then
    ok "elecmap_maps_points_past_floats_range_from_each_other"
else fail "elecmap_maps_points_past_floats_range_from_each_other: $st1 $st2 $(cat "$dir/out" "$dir/out2")"; fi
# an option the method will not read is refused, not ignored (an audit's:
# --method dcs --kappa 1 wrote an unscreened map)
"$build/elecmap" --method dcs --kappa 1 --demo "$dir/x.dx" > "$dir/out" 2>&1; rc1=$?
"$build/elecmap" --tolerance 1e-3 --shifted --demo "$dir/x.dx" > "$dir/out2" 2>&1; rc2=$?
if [ $rc1 -eq 2 ] && grep -q -- "--kappa is for mdh: --method dcs would ignore it" "$dir/out" &&
   [ $rc2 -eq 2 ] && grep -q -- "--shifted is for the cutoff map: without --method" "$dir/out2" &&
   [ ! -e "$dir/x.dx" ]; then
    ok "elecmap_refuses_an_option_its_method_ignores"
else fail "elecmap_refuses_an_option_its_method_ignores: $rc1 $rc2 $(cat "$dir/out" "$dir/out2")"
fi

# the same for options no method flag covers (a README audit's: each ran
# with status 0 and changed nothing): a DCS kernel with msm, a kernel with
# --cpu, units for the charges map, a temperature in kcal, padding with
# fixed dims; a tolerance that fixed --cutoff and --msm-spacing miss (it
# ran, saying 'relative error <= 1e-05', and erred 1.9e-2); a bad value
# named by its option; and (a later README audit's) --max-work where no
# direct sum runs, --gpus where the map takes one GPU, a cutoff or MSM
# spacing of 0 (the library's default, which the summary then printed)
ignored_ok=1
for case in "--method msm --variant simple|--variant (a DCS kernel) is for dcs" \
            "--cpu --variant hybrid-rsqrt|--variant picks a GPU kernel" \
            "--method charges --units kcal|--units is for potentials" \
            "--units kcal --temperature 300|--temperature is for kT units" \
            "--dims 30 30 30 --padding 5|--padding sizes the lattice" \
            "--temperature 0|--temperature 0: give a positive value" \
            "--method mdh --kappa 0 --ionic-strength 0.1|--kappa sets the screening" \
            "--method msm --tolerance 1e-7|MSM reaches 2e-07" \
            "--tolerance 1e-5 --cutoff 8 --msm-spacing 2.5|7.2e-03 (C1 cubic, C2 splitting; no --msm-order meets it there), over a third of --tolerance" \
            "--tolerance 1e-3 --cutoff 12 --msm-spacing 2 --msm-order 4|8.1e-04 (C1 cubic, C2 splitting), over a third" \
            "--method charges --order 12|Skeel basis order 12: use 4" \
            "--method charges --basis bspline --order 9|B-spline order 9: use 4 to 8" \
            "--method msm --max-work 10|--max-work is for the direct sums" \
            "--method cutoff --max-work 10|--max-work is for the direct sums" \
            "--method charges --max-work 10|--max-work is for the direct sums" \
            "--method charges --gpus 2|--gpus is for dcs, mdh, cutoff and msm" \
            "--method msm --cutoff 0|--cutoff 0: give a cutoff above 0 A" \
            "--method cutoff --cutoff -3|--cutoff -3: give a cutoff above 0 A" \
            "--method msm --msm-spacing 0|--msm-spacing 0: give a spacing above 0 A"; do
    args=${case%%|*}
    # shellcheck disable=SC2086 # the options, split on purpose
    "$build/elecmap" --quiet $args --demo "$dir/x.dx" > "$dir/out" 2>&1
    rc=$?
    if [ $rc -ne 2 ] || ! grep -q -- "${case#*|}" "$dir/out" || [ -e "$dir/x.dx" ]; then
        ignored_ok=0
        echo "     $args: status $rc, $(cat "$dir/out")"
    fi
done
# and what a map does read stays accepted (a review's: MDH's Debye length
# reads the temperature in kcal too, and "fastest" names a rung of both
# ladders)
for args in "--method mdh --units kcal --temperature 310" "--method charges --variant fastest" \
            "--method dcs --variant fastest" "--method mdh --max-work 1e9" \
            "--max-work 1e9"; do
    # shellcheck disable=SC2086 # the options, split on purpose
    if ! "$build/elecmap" --cpu --quiet --spacing 3 $args --demo "$dir/x.dx" > "$dir/out" 2>&1 ||
       [ ! -s "$dir/x.dx" ]; then
        ignored_ok=0
        echo "     $args: refused: $(cat "$dir/out")"
    fi
    rm -f "$dir/x.dx"
done
[ $ignored_ok -eq 1 ] && ok "elecmap_refuses_options_its_map_would_not_read" ||
    fail "elecmap_refuses_options_its_map_would_not_read"

# A charge map whose stencils leave the lattice: refused with elecmap's own
# remedy beside the library's (it offered a periodic map elecmap lacks)
"$build/elecmap" --cpu --quiet --method charges --padding 0 --demo "$dir/x.dx" > "$dir/out" 2>&1
[ $? -eq 1 ] && grep -q "a larger --padding" "$dir/out" && [ ! -e "$dir/x.dx" ] &&
    ok "elecmap_charges_off_the_lattice_name_elecmaps_remedy" ||
    fail "elecmap_charges_off_the_lattice_name_elecmaps_remedy: $(cat "$dir/out")"

# Without --method: DCS for a small map, MSM (said on stderr) past the
# estimated time, here moved down by --msm-above, where MSM is estimated
# faster: 20,000 charges in a 70 A cube on a 1 A map, about 3.8 s direct
# and 2.9 s by MSM estimated (4.0 and 1.7 s measured on two cores); the
# demo at 2 A, where the direct sum is faster, stays DCS.
"$build/elecmap" --cpu --spacing 2 --demo "$dir/x.dx" > "$dir/out" 2>"$dir/err" &&
    grep -q "method     DCS" "$dir/out" && ! grep -q "using MSM" "$dir/err"
small_ok=$?
awk 'BEGIN { srand(7); for (i = 1; i <= 20000; i++) printf "ATOM %d N ALA 1 %.3f %.3f %.3f %.1f 1.5\n", i, 70 * rand(), 70 * rand(), 70 * rand(), i % 2 ? 0.5 : -0.5 }' \
    > "$dir/cube.pqr"
"$build/elecmap" --cpu --spacing 1 --msm-above 1 "$dir/cube.pqr" "$dir/x.dx" > "$dir/out" 2>"$dir/err" &&
    grep -q "method     MSM" "$dir/out" && grep -q "by the direct sum on the CPU: using MSM" "$dir/err"
large_ok=$?
if [ $small_ok -eq 0 ] && [ $large_ok -eq 0 ]; then ok "elecmap_chooses_msm_for_large_maps_and_says_so"
else fail "elecmap_chooses_msm_for_large_maps_and_says_so: $(cat "$dir/out" "$dir/err")"; fi
# that run's progress (shown past a second) went to a file: a line a tenth,
# no carriage returns
if ! grep -q "% done" "$dir/err"; then
    skip "elecmap_progress_into_a_file_is_a_line_a_tenth: the map took under a second"
elif ! tr -d '\n' < "$dir/err" | grep -q "$(printf '\r')" &&
     ! grep "% done" "$dir/err" | grep -qv "^elecmap: *[0-9]*0% done$"; then
    ok "elecmap_progress_into_a_file_is_a_line_a_tenth"
else fail "elecmap_progress_into_a_file_is_a_line_a_tenth: $(od -c "$dir/err" | head -20)"; fi

# elecmap --method charges: the charge per point sums to the net charge
# (float sums over the map: 1e-3 e), both bases; a bad basis is a usage error
charges_ok=1
for basis in skeel bspline; do
    "$build/elecmap" --cpu --spacing 1 --method charges --basis $basis --demo "$dir/q.dx" \
        > "$dir/out" 2>&1 || charges_ok=0
    net=$(sed -n 's/^  atoms .*net charge \([-+0-9.]*\) e.*/\1/p' "$dir/out")
    got=$(sed -n 's/^  charge .*total \([-+0-9.]*\) e.*/\1/p' "$dir/out")
    sum=$(dx_values "$dir/q.dx" | awk '{ s += $1 } END { printf "%.6f", s }')
    awk -v a="$net" -v b="$got" -v c="$sum" 'BEGIN { d = a - b; e = a - c;
        exit !(a != "" && b != "" && d < 1e-3 && d > -1e-3 && e < 1e-3 && e > -1e-3) }' ||
        charges_ok=0
done
"$build/elecmap" --cpu --method charges --basis cubic --demo "$dir/q.dx" > "$dir/out" 2>&1
[ $? -eq 2 ] || charges_ok=0
if [ $charges_ok -eq 1 ]; then ok "elecmap_maps_charges_that_sum_to_the_net_charge"
else fail "elecmap_maps_charges_that_sum_to_the_net_charge: $(cat "$dir/out")"; fi
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
"$build/elecenergy" --cpu --method spme --tolerance 1e-5 --json "$dir/ions.pqr" > "$dir/json" 2>&1
spme_status=$?
if grep -q "needs FFTW3" "$dir/json"; then
    skip "elecenergy_json_has_the_choice_and_its_estimate: built without FFTW3 (the CPU SPME)"
elif [ $spme_status -eq 0 ] &&
   grep -q '"tolerance": 1.000e-05' "$dir/json" && grep -q '"estimate": {"force_error"' "$dir/json"; then
    fe=$(sed -n 's/.*"force_error": \([0-9.e+-]*\).*/\1/p' "$dir/json")
    if awk -v e="$fe" 'BEGIN { exit !(e > 0 && e <= 1e-5) }'; then
        ok "elecenergy_json_has_the_choice_and_its_estimate ($fe)"
    else fail "elecenergy_json_has_the_choice_and_its_estimate: $(cat "$dir/json")"; fi
else fail "elecenergy_json_has_the_choice_and_its_estimate: $(cat "$dir/json")"; fi
# A PDB file without element columns has PQR's shape (occupancy and
# B-factor where the charge and radius go): each tool warns, naming
# pdb2pqr, and goes on; a PQR file draws no warning.
cat > "$dir/old.pdb" <<'PDB'
ATOM      1  N   ALA A   1      11.104   6.134  -6.504  1.00  0.00
ATOM      2  CA  ALA A   1      11.639   6.071  -5.147  1.00 20.00
ATOM      3  C   ALA A   1      13.000   6.500  -5.000  1.00 15.00
PDB
cp "$dir/old.pdb" "$dir/old_pdb.pqr"
"$build/elecmap" --cpu --quiet --spacing 1 "$dir/old.pdb" "$dir/x.dx" > "$dir/out" 2>&1; rc1=$?
"$build/elecenergy" --cpu --method direct "$dir/old_pdb.pqr" > "$dir/out2" 2>&1; rc2=$?
"$build/elecsurf" --cpu --quiet "$dir/old_pdb.pqr" "$dir/s.txt" > "$dir/out3" 2>&1; rc3=$?
"$build/elecenergy" --cpu --method direct "$dir/ions.pqr" > "$dir/out4" 2>&1; rc4=$?
if [ $rc1 -eq 0 ] && grep -q "warning: .*old.pdb has every charge between 0 and 1" "$dir/out" &&
   [ $rc2 -eq 0 ] && grep -q "as a PDB file's occupancies are" "$dir/out2" &&
   [ $rc3 -eq 0 ] && grep -q "pdb2pqr" "$dir/out3" &&
   [ $rc4 -eq 0 ] && ! grep -q "warning" "$dir/out4"; then
    ok "tools_warn_of_a_pdb_file_read_as_pqr"
else fail "tools_warn_of_a_pdb_file_read_as_pqr: $rc1 $rc2 $rc3 $rc4 $(cat "$dir/out" "$dir/out2" "$dir/out3" "$dir/out4")"
fi
# the box's source in the summary; a crystal's cell (not P 1) is no box of
# its asymmetric unit: refused, naming the way out
"$build/elecenergy" --cpu --method ewald "$dir/ions.pqr" > "$dir/out" 2>&1; rc1=$?
sed 's/P 1           1/P 43 21 2     8/' "$dir/ions.pqr" > "$dir/crystal.pqr"
"$build/elecenergy" --cpu --method ewald "$dir/crystal.pqr" > "$dir/out2" 2>&1; rc2=$?
"$build/elecenergy" --cpu --method ewald --box 20 20 20 "$dir/crystal.pqr" > "$dir/out3" 2>&1; rc3=$?
if [ $rc1 -eq 0 ] && grep -q "box 20.0000 x 20.0000 x 20.0000 A (the CRYST1 cell)" "$dir/out" &&
   [ $rc2 -eq 1 ] && grep -q "space group is P 43 21 2, not P 1" "$dir/out2" &&
   grep -q -- "--method direct" "$dir/out2" &&
   [ $rc3 -eq 0 ] && grep -q "A (--box)" "$dir/out3"; then
    ok "elecenergy_takes_a_p1_cell_or_box_and_refuses_a_crystals_cell"
else fail "elecenergy_takes_a_p1_cell_or_box_and_refuses_a_crystals_cell: $rc1 $rc2 $rc3 $(cat "$dir/out" "$dir/out2" "$dir/out3")"
fi
"$build/elecenergy" --gpu --method direct "$dir/ions.pqr" > "$dir/out" 2>&1
[ $? -eq 2 ] && grep -q "only SPME runs on the GPU" "$dir/out" &&
    ok "elecenergy_refuses_the_gpu_for_a_cpu_method" ||
    fail "elecenergy_refuses_the_gpu_for_a_cpu_method: $(cat "$dir/out")"
"$build/elecenergy" --cpu --method ewald --tolerance 1e-300 "$dir/ions.pqr" > "$dir/out" 2>&1
[ $? -eq 1 ] && grep -q "below what it can meet" "$dir/out" && ok "elecenergy_refuses_a_tolerance_out_of_reach" ||
    fail "elecenergy_refuses_a_tolerance_out_of_reach: $(cat "$dir/out")"
"$build/elecenergy" --method direct --box 10 10 10 "$dir/ions.pqr" > "$dir/out" 2>&1; rc1=$?
"$build/elecenergy" --method ewald --grid 32 32 32 "$dir/ions.pqr" > "$dir/out2" 2>&1; rc2=$?
if [ $rc1 -eq 2 ] && grep -q -- "--box is for ewald and spme" "$dir/out" &&
   [ $rc2 -eq 2 ] && grep -q -- "--grid is SPME's mesh" "$dir/out2"; then
    ok "elecenergy_refuses_an_option_its_method_ignores"
else fail "elecenergy_refuses_an_option_its_method_ignores: $rc1 $rc2 $(cat "$dir/out" "$dir/out2")"
fi

# a refusal that names atoms by index (from 0) says which of the file's
# records they are: serials 5 and 7 here are atoms 0 and 2
cat > "$dir/coincide.pqr" <<'EOF'
ATOM      5  NA  NA      1       1.000   1.000   1.000  1.0000 1.8680
ATOM      6  CL  CL      2       5.000   1.000   1.000 -1.0000 2.4700
ATOM      7  NA  NA  B   3A      1.000   1.000   1.000  1.0000 1.8680
EOF
"$build/elecenergy" --method direct "$dir/coincide.pqr" > "$dir/out" 2>&1
[ $? -eq 1 ] && grep -q "atoms 0 and 2 coincide" "$dir/out" &&
    grep -q "atom 0 (counted from 0) is ATOM 5 NA NA 1, the file's atom record 1$" "$dir/out" &&
    grep -q "atom 2 (counted from 0) is ATOM 7 NA NA B 3A, the file's atom record 3$" "$dir/out" &&
    ok "elecenergy_names_the_records_of_the_atoms_it_refuses" ||
    fail "elecenergy_names_the_records_of_the_atoms_it_refuses: $(cat "$dir/out")"
sed 's/2.4700/9000.0/' "$dir/coincide.pqr" > "$dir/huge.pqr"
"$build/elecmap" --cpu --method mdh --kappa 1 --spacing 4 "$dir/huge.pqr" "$dir/x.dx" > "$dir/out" 2>&1
[ $? -eq 1 ] && grep -q "atom 1's radius 9000" "$dir/out" &&
    grep -q "atom 1 (counted from 0) is ATOM 6 CL CL 2, the file's atom record 2$" "$dir/out" &&
    ok "elecmap_names_the_record_of_the_atom_it_refuses" ||
    fail "elecmap_names_the_record_of_the_atom_it_refuses: $(cat "$dir/out")"

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
    if "$build/elecmap" --cpu --spacing 1 --method charges "$fas2" "$dir/q.dx" > "$dir/out" 2>&1; then
        net=$(sed -n 's/^  atoms .*net charge \([-+0-9.]*\) e.*/\1/p' "$dir/out")
        got=$(sed -n 's/^  charge .*total \([-+0-9.]*\) e.*/\1/p' "$dir/out")
        if awk -v a="$net" -v b="$got" 'BEGIN { d = a - b; exit !(a != "" && d < 1e-3 && d > -1e-3) }'
        then ok "elecmap_maps_fasciculins_charges"
        else fail "elecmap_maps_fasciculins_charges: net $net, mapped $got"; fi
    else fail "elecmap_maps_fasciculins_charges: $(cat "$dir/out")"; fi
    "$build/elecenergy" --method ewald "$fas2" > "$dir/out" 2>&1
    [ $? -eq 1 ] && grep -q "no periodic box" "$dir/out" && ok "elecenergy_asks_for_a_box" ||
        fail "elecenergy_asks_for_a_box: $(cat "$dir/out")"
else
    skip "elecmap_maps_fasciculin_with_mdh: $fas2 absent"
    skip "elecenergy_prints_json_with_the_total: $fas2 absent"
    skip "elecenergy_asks_for_a_box: $fas2 absent"
    skip "elecmap_maps_fasciculins_charges: $fas2 absent"
fi

# ------------------------------------------------ map formats, units, version
# --version: the version elec.h gives, on every tool
part() { sed -n "s/^#define ELEC_VERSION_$1 \([0-9][0-9]*\).*/\1/p" elec.h; }
version="$(part MAJOR).$(part MINOR).$(part PATCH)"
version_ok=1
for tool in elecmap elecenergy elecsurf; do
    "$build/$tool" --version > "$dir/out" 2>&1 &&
        grep -q "^$tool (elec) $version\$" "$dir/out" && grep -q "^built with" "$dir/out" ||
        version_ok=0
done
if [ $version_ok -eq 1 ]; then ok "every_tool_prints_the_version_of_elec_h ($version)"
else fail "every_tool_prints_the_version_of_elec_h: $(cat "$dir/out")"; fi

# The same map as OpenDX and as MRC2014 (.mrc, .map, .ccp4): the MRC file is
# the 1024-byte header and four bytes a point, stamped "MAP ", its first
# label the DX file's first comment line.
"$build/elecmap" --cpu --spacing 2 --demo "$dir/fmt.dx" > "$dir/out" 2>&1
counts=$(sed -n 's/^object 1 class gridpositions counts \([0-9]*\) \([0-9]*\) \([0-9]*\).*/\1 \2 \3/p' "$dir/fmt.dx")
set -- $counts
points=$(($1 * $2 * $3))
mrc_ok=1
for ext in mrc map ccp4; do
    "$build/elecmap" --cpu --spacing 2 --demo "$dir/fmt.$ext" > "$dir/out" 2>&1 &&
        grep -q "output     MRC2014" "$dir/out" || mrc_ok=0
    [ "$(wc -c < "$dir/fmt.$ext")" -eq $((1024 + 4 * points)) ] || mrc_ok=0
    [ "$(dd if="$dir/fmt.$ext" bs=1 skip=208 count=4 2> /dev/null)" = "MAP " ] || mrc_ok=0
    label=$(dd if="$dir/fmt.$ext" bs=1 skip=224 count=80 2> /dev/null | sed 's/ *$//')
    [ "# $label" = "$(head -n 1 "$dir/fmt.dx")" ] || mrc_ok=0
done
if [ $mrc_ok -eq 1 ]; then ok "elecmap_writes_mrc_by_extension ($points points)"
else fail "elecmap_writes_mrc_by_extension: label '$label', $(cat "$dir/out")"; fi

# .dx.gz: gzip(1) inflates it to the very .dx file (where the build has
# zlib); without zlib it is refused before any computing, leaving nothing
if "$build/elecmap" --version | grep -q "^built with:.*zlib"; then
    if "$build/elecmap" --cpu --quiet --spacing 2 --demo "$dir/fmt.dx.gz" > "$dir/out" 2>&1 &&
       gzip -dc "$dir/fmt.dx.gz" | cmp -s - "$dir/fmt.dx"; then
        ok "elecmap_dx_gz_inflates_to_the_dx_map"
    else fail "elecmap_dx_gz_inflates_to_the_dx_map: $(cat "$dir/out")"; fi
else
    "$build/elecmap" --cpu --spacing 0.2 --demo "$dir/fmt.dx.gz" > "$dir/out" 2>&1
    if [ $? -eq 1 ] && grep -q "no zlib" "$dir/out" && [ ! -e "$dir/fmt.dx.gz" ]; then
        ok "elecmap_refuses_dx_gz_without_zlib_before_computing"
    else fail "elecmap_refuses_dx_gz_without_zlib_before_computing: $(cat "$dir/out")"; fi
fi

# --units V: the kcal/(mol e) map times 14.3996455 / 332.0636 (V per e/A
# over kcal/(mol e) per e/A); both floats printed to 9 digits: 1e-6
"$build/elecmap" --cpu --quiet --spacing 2 --units kcal --demo "$dir/kcal.dx" > "$dir/out" 2>&1
"$build/elecmap" --cpu --spacing 2 --units V --demo "$dir/volt.dx" > "$dir/out2" 2>&1
dx_values "$dir/volt.dx" | awk '{ printf "%.9e\n", $1 * 332.0636 / 14.3996455 }' > "$dir/v.values"
dx_values "$dir/kcal.dx" > "$dir/k.values"
ev=$(paste "$dir/v.values" "$dir/k.values" |
    awk '{ d += ($1 - $2) ^ 2; m += $2 ^ 2; n++ } END { if (n == 0) print "nan"; else printf "%.3e\n", sqrt(d / m) }')
if awk -v e="$ev" 'BEGIN { exit !(e <= 1e-6) }' && grep -q "potential  min .* V$" "$dir/out2" &&
   grep -q "^# elecmap potential in V$" "$dir/volt.dx"; then
    ok "elecmap_units_volt_is_kcal_scaled ($ev)"
else fail "elecmap_units_volt_is_kcal_scaled: $ev $(cat "$dir/out2")"; fi
"$build/elecmap" --units mV --demo "$dir/x.dx" > "$dir/out" 2>&1
[ $? -eq 2 ] && grep -q "kT, kcal or V" "$dir/out" && ok "elecmap_refuses_units_it_lacks" ||
    fail "elecmap_refuses_units_it_lacks: $(cat "$dir/out")"

# The map says how it was made: elec's version, the input, the method and
# its parameters, the lattice, the input's CRYST1 and REMARK lines
cat > "$dir/remarks.pqr" <<'PQR'
REMARK   1 PQR file generated by PDB2PQR
REMARK   1 Forcefield used: AMBER
CRYST1   30.000   30.000   30.000  90.00  90.00  90.00 P 1           1
ATOM      1  NA  ION     1       1.000   1.000   1.000  1.0000 1.0000
ATOM      2  CL  ION     2       4.000   1.500   1.000 -1.0000 1.8000
PQR
if "$build/elecmap" --cpu --quiet --spacing 1 --method msm "$dir/remarks.pqr" "$dir/prov.dx" > "$dir/out" 2>&1 &&
   grep -q "^# elecmap potential in kT/e at 298.15 K$" "$dir/prov.dx" &&
   grep -q "^# elec $version elecmap, input $dir/remarks.pqr: 2 atoms, net charge +0.0000 e$" "$dir/prov.dx" &&
   grep -q "^# method MSM (multilevel summation), cutoff 12 A, spacing 2 A, C1 cubic" "$dir/prov.dx" &&
   grep -q "^# lattice [0-9]* x [0-9]* x [0-9]*, spacing 1 1 1 A, origin" "$dir/prov.dx" &&
   grep -q "^# CRYST1   30.000   30.000   30.000  90.00  90.00  90.00 P 1           1$" "$dir/prov.dx" &&
   grep -q "^# REMARK   1 Forcefield used: AMBER$" "$dir/prov.dx"; then
    ok "elecmap_map_says_how_it_was_made"
else fail "elecmap_map_says_how_it_was_made: $(grep '^#' "$dir/prov.dx") $(cat "$dir/out")"; fi
# at most 32 REMARK lines, then how many more there were
awk 'BEGIN { for (i = 1; i <= 34; i++) printf "REMARK %d\n", i }' > "$dir/many.pqr"
sed -n '/^ATOM/p' "$dir/remarks.pqr" >> "$dir/many.pqr"
if "$build/elecmap" --cpu --quiet --spacing 2 "$dir/many.pqr" "$dir/many.dx" > "$dir/out" 2>&1 &&
   [ "$(grep -c '^# REMARK' "$dir/many.dx")" -eq 32 ] && grep -q '^# REMARK 32$' "$dir/many.dx" &&
   grep -q '^# (and 2 more REMARK lines)$' "$dir/many.dx"; then
    ok "elecmap_map_keeps_32_remark_lines_and_counts_the_rest"
else fail "elecmap_map_keeps_32_remark_lines_and_counts_the_rest: $(grep '^#' "$dir/many.dx")"; fi

# ---------------------------------------------------------------- elecsurf
# One +1 ion of radius 12 (A_det = 12) and points on its sphere: every
# potential is the research notes' central-ion value, 0.345900 kcal/(mol e)
# (E1), 0.539696 x 332.0/332.0636 in GEM mode (GEM's constant), in input
# order with the normals echoed.
printf 'ATOM      1  NA  ION     1       1.000   2.000   3.000  1.0000 12.0000\n' > "$dir/ion.pqr"
awk 'BEGIN { n = 40; for (k = 0; k < n; k++) { z = 1 - 2 * (k + 0.5) / n; s = sqrt(1 - z * z); t = 3.14159265358979 * (1 + sqrt(5)) * (k + 0.5);
      printf "%.9f %.9f %.9f %.9f %.9f %.9f\n", 1 + 12 * s * cos(t), 2 + 12 * s * sin(t), 3 + 12 * z, s * cos(t), s * sin(t), z } }' > "$dir/sphere.txt"
if "$build/elecsurf" --cpu --exact --units kcal --surface "$dir/sphere.txt" "$dir/ion.pqr" "$dir/ion.txt" > "$dir/out" 2>&1 &&
   [ "$(grep -vc '^#' "$dir/ion.txt")" -eq 40 ] &&
   awk '!/^#/ { if ($7 < 0.3458995 || $7 > 0.3459005) bad++ } END { exit bad > 0 }' "$dir/ion.txt" &&
   grep -v '^#' "$dir/ion.txt" | paste -d' ' "$dir/sphere.txt" - | awk '{ if ($1 - $7 > 1e-4 || $7 - $1 > 1e-4 || $6 - $12 > 1e-5 || $12 - $6 > 1e-5) bad++ } END { exit bad > 0 }' &&
   grep -q "A = 12.000 A (A_det)" "$dir/out" && grep -q "method     ALPB, eps 1/80, p 0 A, no salt, exact" "$dir/out"; then
    ok "elecsurf_central_ion_on_a_point_list_is_the_research_value"
else fail "elecsurf_central_ion_on_a_point_list_is_the_research_value: $(cat "$dir/out"; head -3 "$dir/ion.txt")"; fi
if "$build/elecsurf" --cpu --gem --units kcal --surface "$dir/sphere.txt" "$dir/ion.pqr" "$dir/gem.txt" > "$dir/out" 2>&1 &&
   awk '!/^#/ { want = 0.539696 * 332.0 / 332.0636; if ($7 - want > 1e-6 || want - $7 > 1e-6) bad++ } END { exit bad > 0 }' "$dir/gem.txt"; then
    ok "elecsurf_gem_mode_gives_gems_central_ion"
else fail "elecsurf_gem_mode_gives_gems_central_ion: $(cat "$dir/out"; head -3 "$dir/gem.txt")"; fi

# A PLY mesh: its header's counts match its body, and every vertex has a
# colour and a potential.
if "$build/elecsurf" --cpu --density 1 "$dir/ion.pqr" "$dir/ion.ply" > "$dir/out" 2>&1; then
    vertices=$(sed -n 's/^element vertex \([0-9]*\)$/\1/p' "$dir/ion.ply")
    faces=$(sed -n 's/^element face \([0-9]*\)$/\1/p' "$dir/ion.ply")
    body=$(sed '1,/^end_header$/d' "$dir/ion.ply" | wc -l)
    if [ -n "$vertices" ] && [ -n "$faces" ] && [ "$body" -eq $((vertices + faces)) ] &&
       grep -q "^property float potential$" "$dir/ion.ply" &&
       grep -q "surface    mesh, $vertices vertices, $faces triangles" "$dir/out"; then
        ok "elecsurf_writes_a_ply_mesh_with_potentials"
    else fail "elecsurf_writes_a_ply_mesh_with_potentials: $vertices $faces $body"; fi
else fail "elecsurf_writes_a_ply_mesh_with_potentials: $(cat "$dir/out")"; fi

# PNG where libpng was found at build time, else a refusal that says so.
if "$build/elecsurf" --cpu --density 1 --size 96 "$dir/ion.pqr" "$dir/ion.png" > "$dir/out" 2>&1; then
    if [ "$(head -c 8 "$dir/ion.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ]; then
        ok "elecsurf_renders_a_png"
    else fail "elecsurf_renders_a_png: not a PNG"; fi
elif grep -q "built without libpng" "$dir/out" && [ ! -e "$dir/ion.png" ]; then
    ok "elecsurf_renders_a_png (refused: built without libpng)"
else fail "elecsurf_renders_a_png: $(cat "$dir/out")"; fi

# A file named as the output's old temporary name ("<output>.tmp", which
# elecsurf once wrote and renamed, the input itself where so named) is the
# user's: left as it was.
printf 'mine\n' > "$dir/keep.txt.tmp"
cp "$dir/ion.pqr" "$dir/input.txt.tmp"
if "$build/elecsurf" --cpu --quiet --surface "$dir/sphere.txt" "$dir/ion.pqr" "$dir/keep.txt" \
       > "$dir/out" 2>&1 &&
   "$build/elecsurf" --cpu --quiet --surface "$dir/sphere.txt" "$dir/input.txt.tmp" \
       "$dir/input.txt" >> "$dir/out" 2>&1 &&
   [ "$(cat "$dir/keep.txt.tmp")" = mine ] && cmp -s "$dir/ion.pqr" "$dir/input.txt.tmp" &&
   grep -q "potential" "$dir/keep.txt" && grep -q "potential" "$dir/input.txt"; then
    ok "elecsurf_leaves_a_users_file_of_the_outputs_name_and_tmp"
else fail "elecsurf_leaves_a_users_file_of_the_outputs_name_and_tmp: $(cat "$dir/out")"; fi

# Refusals: named, nonzero status, and no output file (not even a partial
# or temporary one).
printf '1 2 3 0 0 1\n4 5 x 0 0 1\n' > "$dir/bad.txt"
printf '1 2 3\n4 5 6\n' > "$dir/bare.txt"
refused() { # name, expected status, expected message, output, args...
    name=$1; want=$2; message=$3; output=$4; shift 4
    "$build/elecsurf" --cpu "$@" "$output" > "$dir/out" 2>&1
    rc=$?
    if [ $rc -eq "$want" ] && grep -q "$message" "$dir/out" && [ ! -e "$output" ] &&
       [ -z "$(find "$dir" -name '.*.tmp')" ]; then
        ok "$name"
    else fail "$name: status $rc, $(cat "$dir/out")"; fi
}
refused elecsurf_refuses_a_malformed_point_list 1 "bad.txt: line 2: z 'x' is not a number" \
    "$dir/r1.txt" \
    --surface "$dir/bad.txt" "$dir/ion.pqr"
refused elecsurf_refuses_a_negative_projection_outside_gem_mode 1 "elecsurf's --gem" "$dir/r2.txt" \
    --proj -1 --surface "$dir/sphere.txt" "$dir/ion.pqr"
refused elecsurf_refuses_points_without_normals_off_the_surface 1 "no normals" "$dir/r3.txt" \
    --proj 1.4 --surface "$dir/bare.txt" "$dir/ion.pqr"
printf 'ATOM      1  NA  ION     1       1.000   2.000   3.000  1.0000 0.0000\n' > "$dir/flat.pqr"
refused elecsurf_refuses_zero_radii_without_a_size 1 "elecsurf's --A" "$dir/r4.txt" \
    --surface "$dir/sphere.txt" "$dir/flat.pqr"
refused elecsurf_refuses_an_unknown_output_kind 2 "must end in .ply, .txt, .png, or a map" \
    "$dir/r5.xyz" "$dir/ion.pqr"
refused elecsurf_refuses_three_hcp_charges 2 "use 1 or 2" "$dir/r6.txt" --hcp-charges 3 "$dir/ion.pqr"
# a GPU kernel's name on a CPU run was taken in silence (an audit)
refused elecsurf_refuses_a_gpu_kernel_with_cpu 2 "variant is a GPU kernel's name" "$dir/r6a.txt" \
    --variant simple "$dir/ion.pqr"
# an MSMS file's error names it once (the tool's prefix doubled the reader's)
printf '# MSMS\n#\n1000000 1 0 0\n' > "$dir/v.vert"
refused elecsurf_names_a_bad_msms_file_once 1 "elecsurf: [^ ]*v.vert: line 3: a count of 1000000" \
    "$dir/r6b.txt" --surface "$dir/v.vert" "$dir/ion.pqr"
refused elecsurf_refuses_salt_with_a_map 2 "salt with a map" "$dir/r7.dx" --salt 0.1 "$dir/ion.pqr"
refused elecsurf_refuses_a_projection_with_a_map 2 "proj with a map" "$dir/r8.mrc" --proj 1.4 \
    "$dir/ion.pqr"
# hostile input (an audit's findings): absurd values come back as errors,
# not as inf or NaN with status 0, a meaningless mesh or a hang
printf 'ATOM      1  NA  ION     1       1.000   2.000   3.000  1e150 2.0000\nATOM      2  CL  ION     2       4.000   2.000   3.000  -1e150 2.0000\n' > "$dir/huge.pqr"
refused elecsurf_refuses_potentials_past_floats_range 1 "past float's range" "$dir/r9.txt" \
    --surface "$dir/sphere.txt" "$dir/huge.pqr"
refused elecsurf_refuses_a_salt_whose_kappa_overflows 1 "kappa inf" "$dir/r10.txt" --salt 1e300 \
    --surface "$dir/sphere.txt" "$dir/ion.pqr"
refused elecsurf_refuses_a_mesh_coarser_than_its_atoms 1 "coarser than the atoms' whole extent" \
    "$dir/r11.ply" --density 1e-40 "$dir/ion.pqr"
refused elecsurf_refuses_an_empty_hcp_threshold 2 "an empty threshold" "$dir/r14.txt" \
    --hcp 20,,70 "$dir/ion.pqr"
refused elecsurf_refuses_a_zero_dielectric 2 "eps-out 0: give a positive" "$dir/r15.txt" \
    --eps-out 0 "$dir/ion.pqr"
# options the output or surface would not read: refused, not ignored
refused elecsurf_refuses_a_map_spacing_for_a_surface 2 "spacing is for a map" "$dir/r17.ply" \
    --spacing 5 "$dir/ion.pqr"
refused elecsurf_refuses_hcp_options_with_exact 2 "hcp-charges is for HCP" "$dir/r18.txt" \
    --exact --hcp-charges 1 "$dir/ion.pqr"
refused elecsurf_lists_every_gpu_kernel_for_an_unknown_one 2 "simple, registers, sorted, packed, pairs" \
    "$dir/r16.txt" --variant bogus "$dir/ion.pqr"
refused elecsurf_refuses_a_map_past_max_points 1 "over the limit of 100 (max_points)" \
    "$dir/r13.dx" --max-points 100 "$dir/ion.pqr"
# before the surface is made (a README audit: mache at --density 20 took 3 s
# and 290 MB to be refused): a mesh that would be refused itself is not
# reached
refused elecsurf_refuses_a_map_past_max_points_before_the_surface 1 \
    "over the limit of 100 (max_points)" "$dir/r19.dx" --max-points 100 --density 1e-40 \
    "$dir/ion.pqr"
# a temperature nothing reads (kcal, no salt) refused; with salt it is read
refused elecsurf_refuses_a_temperature_nothing_reads 2 "temperature is for kT/e" \
    "$dir/r20.txt" --units kcal --temperature 300 "$dir/ion.pqr"
refused elecsurf_refuses_a_temperature_gems_kappa_does_not_read 2 "temperature is for kT/e" \
    "$dir/r22.txt" --units kcal --gem --salt 0.1 --temperature 5 "$dir/ion.pqr"
if "$build/elecsurf" --cpu --quiet --units kcal --salt 0.1 --temperature 300 "$dir/ion.pqr" \
       "$dir/r21.txt" > "$dir/out" 2>&1 && [ -s "$dir/r21.txt" ]; then
    ok "elecsurf_reads_a_temperature_for_salt_in_kcal"
else fail "elecsurf_reads_a_temperature_for_salt_in_kcal: $(cat "$dir/out")"; fi
rm -f "$dir/r21.txt"
refused elecsurf_refuses_hcp_thresholds_it_would_cut_short 2 "in under 256 characters" \
    "$dir/r12.txt" --hcp "$(awk 'BEGIN { for (i = 0; i < 130; i++) printf "1,"; print 1 }')" \
    "$dir/ion.pqr"
printf '# a\n# b\n2147483647 0 0 0\n' > "$dir/huge.vert"
refused elecsurf_refuses_an_msms_count_its_file_cannot_hold 1 "a count of 2147483647" \
    "$dir/r13.txt" --surface "$dir/huge.vert" "$dir/ion.pqr"
# atoms 1e8 A apart: a mesh that must span them is too coarse to hold either;
# the refusal points to the contact surface, which has no span to cover
printf 'ATOM 1 NA NA 1 0 0 0 1 1.8\nATOM 2 CL CL 2 100000000 0 0 -1 2.2\n' > "$dir/far2.pqr"
refused elecsurf_points_atoms_far_apart_to_the_contact_surface 1 "surface contact puts points" \
    "$dir/r14.txt" --surface mesh "$dir/far2.pqr"
# no output replaces an input, whatever its kind (the table, PLY and PNG
# once overwrote the structure or the point list)
cp "$dir/ion.pqr" "$dir/self.txt"
cp "$dir/sphere.txt" "$dir/points.txt"
"$build/elecsurf" --cpu "$dir/self.txt" "$dir/self.txt" > "$dir/out" 2>&1; rc1=$?
"$build/elecsurf" --cpu --surface "$dir/points.txt" "$dir/ion.pqr" "$dir/points.txt" > "$dir/out2" 2>&1; rc2=$?
if [ $rc1 -ne 0 ] && [ $rc2 -ne 0 ] && grep -q "destroy the input" "$dir/out" &&
   grep -q "destroy the input" "$dir/out2" && cmp -s "$dir/self.txt" "$dir/ion.pqr" &&
   cmp -s "$dir/points.txt" "$dir/sphere.txt"; then
    ok "elecsurf_writes_over_no_input"
else fail "elecsurf_writes_over_no_input: $rc1 $rc2 $(cat "$dir/out" "$dir/out2")"; fi
# two points 1e-5 A apart, drawn as discs: scaled to a 1 A view, not 1e9
# (which once looped for ever over the discs' squares)
printf '0 0 0\n0.00001 0.00001 0\n' > "$dir/close.txt"
if command -v timeout > /dev/null; then
    timeout 60 "$build/elecsurf" --cpu --size 96 --surface "$dir/close.txt" "$dir/ion.pqr" \
        "$dir/close.png" > "$dir/out" 2>&1
    rc=$?
    if [ $rc -eq 0 ] || grep -q "without libpng" "$dir/out"; then ok "elecsurf_draws_points_on_one_spot"
    else fail "elecsurf_draws_points_on_one_spot: status $rc $(cat "$dir/out")"; fi
else skip "elecsurf_draws_points_on_one_spot: no timeout(1) here"; fi
# a map from three vertices 1000 A apart (an audit's: each point's nearest
# vertex was sought ring by ring through millions of empty 2 A cells, and
# the map ran for hours; now in cells of about a vertex each, 0.04 s)
printf '# MSMS\n#\n3 1 2 1.5\n1e3 0 0 1 0 0 0 1 1\n0 1e3 0 0 1 0 0 1 1\n0 0 -1e3 0 0 1 0 1 1\n' \
    > "$dir/far.vert"
if command -v timeout > /dev/null; then
    timeout 60 "$build/elecsurf" --cpu --surface "$dir/far.vert" "$dir/ion.pqr" \
        "$dir/far.dx" > "$dir/out" 2>&1
    rc=$?
    if [ $rc -eq 0 ] && grep -q "3 vertices" "$dir/out"; then
        ok "elecsurf_maps_over_a_few_far_vertices"
    else fail "elecsurf_maps_over_a_few_far_vertices: status $rc $(cat "$dir/out")"; fi
else skip "elecsurf_maps_over_a_few_far_vertices: no timeout(1) here"; fi

# A point 1e10 A away beside one 3 A from an ion of radius 1.5: the near
# point's potential is the one it has alone (the exact sum took both
# relative to their box's centre, 5e9 A off, and gave the near point ALPB's
# constant alone), and the far point's coordinates print in e-form, not as
# eleven digits and four decimals.
printf 'ATOM      1  NA  ION     1       0.000   0.000   0.000  1.0000 1.5000\n' > "$dir/small.pqr"
printf '3 0 0 1 0 0\n' > "$dir/near.txt"
printf '1e10 0 0 1 0 0\n3 0 0 1 0 0\n' > "$dir/spread.txt"
if "$build/elecsurf" --cpu --quiet --exact --surface "$dir/near.txt" "$dir/small.pqr" \
       "$dir/near_out.txt" > "$dir/out" 2>&1 &&
   "$build/elecsurf" --cpu --quiet --exact --surface "$dir/spread.txt" "$dir/small.pqr" \
       "$dir/spread_out.txt" >> "$dir/out" 2>&1; then
    alone=$(awk '!/^#/ { print $7 }' "$dir/near_out.txt")
    beside=$(awk '!/^#/ && NR == 4 { print $7 }' "$dir/spread_out.txt")
    far=$(awk '!/^#/ && NR == 3 { print $1 }' "$dir/spread_out.txt")
    if [ -n "$alone" ] && [ "$alone" = "$beside" ] && [ "$far" = "1.000000e+10" ]; then
        ok "elecsurf_keeps_a_near_points_potential_beside_a_far_one ($alone)"
    else fail "elecsurf_keeps_a_near_points_potential_beside_a_far_one: $alone $beside $far"; fi
else fail "elecsurf_keeps_a_near_points_potential_beside_a_far_one: $(cat "$dir/out")"; fi

# The worst relative error of a DX map of one +1 ion of radius R at
# (1, 2, 3) over its contact surface (A = R): at a point d A from it
# outside the sphere E1 with r = A + p = d is Coulomb's law in the solvent,
# scale / (80 d); inside, E1 at p = 0,
# scale [(1 + a)/d - a (1 - b)/R] / (80 (1 + a b)), a = 0.571412, b = 1/80.
# Points within 0.5 A of the sphere (the side a point is on is its nearest
# vertex's) or of the centre are left out; "nan" under 1000 points.
ion_map_worst() { # map, R
    awk -v R="$2" '
        /^object 1 class gridpositions counts/ { nx = $6; ny = $7; nz = $8 }
        /^origin/ { ox = $2; oy = $3; oz = $4 }
        /^delta/ { nd++; if (nd == 1) hx = $2; if (nd == 2) hy = $3; if (nd == 3) hz = $4 }
        /data follows/ { on = 1; next }
        /^attribute/ { on = 0 }
        on { for (f = 1; f <= NF; f++) {
                 k = n % nz; j = int(n / nz) % ny; i = int(n / (nz * ny)); n++
                 x = ox + i * hx - 1; y = oy + j * hy - 2; z = oz + k * hz - 3
                 d = sqrt(x * x + y * y + z * z); a = 0.571412; b = 1 / 80
                 if (d > R + 0.5) want = 332.0636 / (80 * d)
                 else if (d < R - 0.5 && d > 0.5)
                     want = 332.0636 * ((1 + a) / d - a * (1 - b) / R) / (80 * (1 + a * b))
                 else continue
                 e = ($f - want) / want; if (e < 0) e = -e; if (e > worst) worst = e; m++ } }
        END { if (m < 1000) print "nan"; else printf "%.3e\n", worst }' "$1"
}

# An ion of radius 12: p, the height over the nearest contact point's
# atom's sphere, is exact but for float rounding (over its tangent plane
# it was off by about d l^2 / (2 R^2), l <= 0.4 A the points' lateral
# spacing at 3 per A^2: relative 3e-4 at d = 14), held to 1e-3.
if "$build/elecsurf" --cpu --exact --units kcal --surface contact --spacing 2 "$dir/ion.pqr" \
        "$dir/ionmap.dx" > "$dir/out" 2>&1 && grep -q "output     OpenDX" "$dir/out"; then
    worst=$(ion_map_worst "$dir/ionmap.dx" 12)
    if awk -v e="$worst" 'BEGIN { exit !(e <= 1e-3) }'; then
        ok "elecsurf_map_of_an_ion_is_coulomb_in_the_solvent_outside ($worst)"
    else fail "elecsurf_map_of_an_ion_is_coulomb_in_the_solvent_outside: $worst $(cat "$dir/out")"; fi
else fail "elecsurf_map_of_an_ion_is_coulomb_in_the_solvent_outside: $(cat "$dir/out")"; fi
# An ion of radius 1.5: the tangent plane put points 2.5e-2 too low
# (relatively) at any distance, as the angle to the nearest point is large
# on so small a sphere (an audit); each contact point names its atom, and
# the height over that atom's sphere is exact: left the float map's
# rounding, held to 1e-5.
printf 'ATOM      1  NA  ION     1       1.000   2.000   3.000  1.0000  1.5000\n' > "$dir/small.pqr"
if "$build/elecsurf" --cpu --quiet --exact --units kcal --surface contact --padding 25 \
        --spacing 1.5 "$dir/small.pqr" "$dir/smallmap.dx" > "$dir/out" 2>&1; then
    worst=$(ion_map_worst "$dir/smallmap.dx" 1.5)
    if awk -v e="$worst" 'BEGIN { exit !(e <= 1e-5) }'; then
        ok "elecsurf_map_of_a_small_ion_is_coulomb_over_its_contact_surface ($worst)"
    else fail "elecsurf_map_of_a_small_ion_is_coulomb_over_its_contact_surface: $worst"; fi
else fail "elecsurf_map_of_a_small_ion_is_coulomb_over_its_contact_surface: $(cat "$dir/out")"; fi
if "$build/elecsurf" --cpu --quiet --density 1 --spacing 3 "$dir/ion.pqr" "$dir/ionmap.mrc" \
        > "$dir/out" 2>&1 && [ "$(dd if="$dir/ionmap.mrc" bs=1 skip=208 count=4 2> /dev/null)" = "MAP " ]; then
    ok "elecsurf_writes_an_mrc_map"
else fail "elecsurf_writes_an_mrc_map: $(cat "$dir/out")"; fi

# A real structure: the contact surface's point count (research notes 4)
# and the hierarchy in the summary.
lzt=../shared/data/structures/2LZT-ASP66.pqr
if [ -r "$lzt" ]; then
    if "$build/elecsurf" --cpu "$lzt" "$dir/lzt.txt" > "$dir/out" 2>&1 &&
       grep -q "atoms      1960 (net charge +8.0000 e), 129 residues, 1 chains, 1 complexes" "$dir/out" &&
       grep -q "surface    contact, 5289 points" "$dir/out" && [ "$(grep -vc '^#' "$dir/lzt.txt")" -eq 5289 ]; then
        ok "elecsurf_maps_lysozymes_contact_surface"
    else fail "elecsurf_maps_lysozymes_contact_surface: $(cat "$dir/out")"; fi
else
    skip "elecsurf_maps_lysozymes_contact_surface: $lzt absent"
fi
# ------------------------------------------------ hostile input, failed disks
# A small structure of our own, and the demo map at 4 A (a few hundred points).
printf 'ATOM 1 N ALA 1 0 0 0 1 1.5\nATOM 2 O ALA 1 3 0 0 -1 1.5\n' > "$dir/pair.pqr"
demo() { "$build/elecmap" --cpu --quiet --spacing 4 --demo "$@"; }

# The output is the input (another name for it): refused before anything,
# the input untouched; so is an output named as a structure (`elecmap
# a.pqr b.pqr` wrote a map over b.pqr).
cp "$dir/pair.pqr" "$dir/pair.in"
cp "$dir/pair.pqr" "$dir/pair.keep"
"$build/elecmap" --cpu "$dir/pair.in" "$dir/./pair.in" > "$dir/out" 2>&1
st=$?
cp "$dir/pair.pqr" "$dir/other.pqr"
"$build/elecmap" --cpu "$dir/pair.in" "$dir/other.pqr" > "$dir/out2" 2>&1
st2=$?
if [ $st -eq 2 ] && grep -q "is the input file" "$dir/out" && cmp -s "$dir/pair.in" "$dir/pair.keep" &&
   [ $st2 -eq 2 ] && grep -q "is named as a structure (.pqr)" "$dir/out2" &&
   cmp -s "$dir/other.pqr" "$dir/pair.keep"; then
    ok "elecmap_refuses_to_write_over_its_input_or_a_structure"
else fail "elecmap_refuses_to_write_over_its_input_or_a_structure: status $st $st2 $(cat "$dir/out" "$dir/out2")"; fi

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
# (and, killed, it removes its temporary file: cli_remove_temps_on_signal)
hidden=$(ls -A "$dir" | grep -c '^\.keep\.dx\.')
if [ $st -gt 128 ] && [ "$(cat "$dir/keep.dx")" = "the old map" ] && [ "$hidden" -eq 0 ]; then
    ok "elecmap_killed_while_writing_leaves_the_old_map"
else fail "elecmap_killed_while_writing_leaves_the_old_map: status $st, $hidden temporary files, $(head -c 100 "$dir/keep.dx")"; fi
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

# What a tool prints must reach stdout: on a full device or a closed stdout
# each says so and exits 1 (elecenergy's energy was lost with status 0); a
# quiet map prints nothing and needs no stdout.
bad=0
for run in "elecenergy --method direct $dir/pair.pqr" "elecenergy --json --method direct $dir/pair.pqr" \
    "elecmap --cpu --dims 4 4 4 $dir/pair.pqr $dir/full.dx" "elecsurf --cpu $dir/ion.pqr $dir/full.txt" \
    "elecmap --version"; do
    # shellcheck disable=SC2086
    "$build"/$run > /dev/full 2> "$dir/out"
    st1=$?
    # shellcheck disable=SC2086
    "$build"/$run >&- 2> "$dir/out2"
    st2=$?
    [ $st1 -eq 1 ] && [ $st2 -eq 1 ] && grep -q "writing to standard output: No space" "$dir/out" &&
        grep -q "writing to standard output" "$dir/out2" ||
        { bad=1; echo "     $run: $st1 $st2 $(cat "$dir/out" "$dir/out2")"; }
done
"$build/elecmap" --cpu --quiet --dims 4 4 4 "$dir/pair.pqr" "$dir/quiet.dx" >&- 2> "$dir/out" ||
    { bad=1; echo "     elecmap --quiet: $(cat "$dir/out")"; }
[ $bad -eq 0 ] && ok "tools_fail_where_stdout_takes_nothing" ||
    fail "tools_fail_where_stdout_takes_nothing"

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
# a coarser --spacing is advised only where the count of points is the
# reason; with --dims the spacing leaves the count alone
"$build/elecmap" --cpu --dims 100000 100000 100000 "$dir/far.pqr" "$dir/x.dx" > "$dir/out" 2>&1
st=$?
if [ $st -eq 1 ] && grep -q "fewer --dims, or --max-points" "$dir/out" && ! grep -q "coarser" "$dir/out"
then ok "elecmap_advises_fewer_dims_where_they_were_given"
else fail "elecmap_advises_fewer_dims_where_they_were_given: status $st $(cat "$dir/out")"; fi
"$build/elecmap" --cpu --dims 3 3 3 --spacing 1e308 "$dir/far.pqr" "$dir/x.dx" > "$dir/out" 2>&1
st=$?
if [ $st -eq 1 ] && grep -q "past double's range" "$dir/out" && ! grep -q "coarser\|fewer" "$dir/out"
then ok "elecmap_gives_no_count_advice_for_a_point_past_range"
else fail "elecmap_gives_no_count_advice_for_a_point_past_range: status $st $(cat "$dir/out")"; fi
# a padding past the atoms' span is what to shrink (1e308 was answered
# with "a coarser --spacing", which cannot mend a point past range)
demo --padding 1e308 "$dir/x.dx" > "$dir/out" 2>&1
st1=$?
demo --padding 1e5 "$dir/x.dx" > "$dir/out2" 2>&1
st2=$?
if [ $st1 -eq 1 ] && grep -q "a smaller --padding$" "$dir/out" && [ $st2 -eq 1 ] &&
   grep -q "a smaller --padding, a coarser --spacing, or --max-points" "$dir/out2"
then ok "elecmap_advises_a_smaller_padding_where_it_is_the_cause"
else fail "elecmap_advises_a_smaller_padding_where_it_is_the_cause: $st1 $st2 $(cat "$dir/out" "$dir/out2")"; fi
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
# MDH's advice is not MSM (which sums the unscreened potential; an audit)
demo --method mdh --max-work 10 "$dir/x.dx" > "$dir/out" 2>&1
st=$?
[ $st -eq 1 ] && grep -q "over --max-work" "$dir/out" && ! grep -q "method msm" "$dir/out" &&
    ok "elecmap_mdh_past_max_work_is_not_sent_to_msm" ||
    fail "elecmap_mdh_past_max_work_is_not_sent_to_msm: status $st $(cat "$dir/out")"
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

# --kappa 0 is no screening, as --ionic-strength 0 (the library reads kappa
# 0 as "from the ionic strength", and --kappa 0 once mapped the default 0.15
# M's screening beside a summary of the same); a GPU kernel's name on a run
# the CPU computes is refused (it went by without a word; a README audit's)
printf 'ATOM      1  NA  NA      1       0.000   0.000   0.000  1.0000 2.0000\n' > "$dir/k0.pqr"
"$build/elecmap" --cpu --quiet --method mdh --kappa 0 --dims 3 1 1 --origin 10 0 0 \
    --spacing 5 "$dir/k0.pqr" "$dir/k0.dx" > "$dir/out" 2>&1; st1=$?
"$build/elecmap" --cpu --quiet --method mdh --ionic-strength 0 --dims 3 1 1 --origin 10 0 0 \
    --spacing 5 "$dir/k0.pqr" "$dir/i0.dx" > "$dir/out2" 2>&1; st2=$?
"$build/elecmap" --cpu --quiet --method mdh --dims 3 1 1 --origin 10 0 0 \
    --spacing 5 "$dir/k0.pqr" "$dir/default.dx" > "$dir/out3" 2>&1; st3=$?
if [ $st1 -eq 0 ] && [ $st2 -eq 0 ] && [ $st3 -eq 0 ] &&
   [ "$(dx_values "$dir/k0.dx")" = "$(dx_values "$dir/i0.dx")" ] &&
   [ "$(dx_values "$dir/k0.dx")" != "$(dx_values "$dir/default.dx")" ]; then
    ok "elecmap_kappa_0_is_no_screening"
else fail "elecmap_kappa_0_is_no_screening: $st1 $st2 $st3 $(cat "$dir/out" "$dir/out2")"; fi
"$build/elecmap" --quiet --variant simple --spacing 3 --demo "$dir/v.dx" > "$dir/out" 2>&1; st=$?
if grep -q "built without CUDA\|no CUDA device" "$dir/out" && [ $st -eq 1 ] &&
   [ ! -e "$dir/v.dx" ]; then
    ok "elecmap_refuses_a_gpu_kernel_on_a_cpu_run"
elif [ $st -eq 0 ] && [ -s "$dir/v.dx" ]; then
    skip "elecmap_refuses_a_gpu_kernel_on_a_cpu_run: this machine has a GPU"
else fail "elecmap_refuses_a_gpu_kernel_on_a_cpu_run: status $st $(cat "$dir/out")"; fi
"$build/elecsurf" --quiet --variant simple "$dir/ion.pqr" "$dir/vs.txt" > "$dir/out" 2>&1; st=$?
if grep -q "variant picks a GPU kernel, and .*\(built without CUDA\|no CUDA device\)" "$dir/out" &&
   [ $st -eq 1 ] && [ ! -e "$dir/vs.txt" ]; then
    ok "elecsurf_refuses_a_gpu_kernel_on_a_cpu_run"
elif [ $st -eq 0 ] && [ -s "$dir/vs.txt" ]; then
    skip "elecsurf_refuses_a_gpu_kernel_on_a_cpu_run: this machine has a GPU"
else fail "elecsurf_refuses_a_gpu_kernel_on_a_cpu_run: status $st $(cat "$dir/out")"; fi
# a charge map's default padding holds its stencil (order 8 B-splines at 2
# A once left an atom's stencil out of the 10 A padding)
if "$build/elecmap" --cpu --quiet --method charges --basis bspline --order 8 --spacing 2 \
    --demo "$dir/ch.dx" > "$dir/out" 2>&1 && [ -s "$dir/ch.dx" ]; then
    ok "elecmap_charge_maps_default_padding_holds_the_stencil"
else fail "elecmap_charge_maps_default_padding_holds_the_stencil: $(cat "$dir/out")"; fi

# An MDH map is the potential in water, as APBS's mdh boundary condition:
# q e^(-kappa (r - sigma)) / (78.54 r (1 + kappa sigma)) in kcal/(mol e)
# with ELEC_COULOMB = 332.0636, at 10, 15 and 20 A from one ion (it was
# 78.54 times this before an audit), to float rounding.
printf 'ATOM      1  NA  NA      1       0.000   0.000   0.000  1.0000 2.0000\n' > "$dir/mdh.pqr"
if "$build/elecmap" --cpu --quiet --method mdh --kappa 0.1 --units kcal --dims 3 1 1 \
    --origin 10 0 0 --spacing 5 "$dir/mdh.pqr" "$dir/mdh.dx" > "$dir/out" 2>&1 &&
   grep -v '^#' "$dir/mdh.dx" | awk 'NR > 7 && /^[-0-9]/ { for (i = 1; i <= NF; i++) v[n++] = $i }
       END { bad = n != 3
             for (k = 0; k < 3; k++) { r = 10 + 5 * k
                 want = 332.0636 * exp(-0.1 * (r - 2)) / (78.54 * r * 1.2)
                 if (v[k] - want > 1e-6 * want || want - v[k] > 1e-6 * want) bad = 1 }
             exit bad }'; then ok "elecmap_mdh_maps_the_potential_in_water"
else fail "elecmap_mdh_maps_the_potential_in_water: $(cat "$dir/out"; grep -v '^#' "$dir/mdh.dx")"; fi

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

# Values that no run can take, refused by the option's own check (status 2)
# rather than later by the library as a refused input (status 1).
bad=0
for args in "--salt -1" "--density 1e9" "--probe 1e5"; do
    # shellcheck disable=SC2086
    "$build/elecsurf" --cpu $args "$dir/ion.pqr" "$dir/bad.txt" > "$dir/out" 2>&1
    [ $? -eq 2 ] && grep -q -e "^elecsurf: ${args%% *} " "$dir/out" ||
        { bad=1; echo "     elecsurf $args: $(cat "$dir/out")"; }
done
for args in "--box 0 10 10" "--box 10 -10 10"; do
    # shellcheck disable=SC2086
    "$build/elecenergy" $args "$dir/pair.pqr" > "$dir/out" 2>&1
    [ $? -eq 2 ] && grep -q "^elecenergy: --box" "$dir/out" ||
        { bad=1; echo "     elecenergy $args: $(cat "$dir/out")"; }
done
[ $bad -eq 0 ] && ok "real_options_out_of_range_are_usage_errors" ||
    fail "real_options_out_of_range_are_usage_errors"

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

# Forces to stdout: the summary moves to stderr, so stdout holds the forces
# alone; with --json refused (status 2), as the two would be neither.
"$build/elecenergy" --method direct --forces /dev/stdout "$dir/pair.pqr" > "$dir/fo" 2> "$dir/out"
st1=$?
"$build/elecenergy" --json --method direct --forces /dev/stdout "$dir/pair.pqr" > "$dir/fo2" 2>&1
st2=$?
if [ $st1 -eq 0 ] && [ "$(head -c 8 "$dir/fo")" = "# record" ] && [ "$(wc -l < "$dir/fo")" -eq 3 ] &&
   grep -q "total" "$dir/out" && [ $st2 -eq 2 ] && grep -q "^elecenergy: --json prints to stdout" "$dir/fo2"
then ok "elecenergy_forces_to_stdout_keep_stdout_to_themselves"
else fail "elecenergy_forces_to_stdout_keep_stdout_to_themselves: $st1 $st2 $(cat "$dir/fo" "$dir/out" "$dir/fo2")"; fi

# elecenergy: sums past double's range are errors, not -inf, NaN or JSON
# that no parser reads
printf 'ATOM      1  NA  ION     1       0.000   0.000   0.000  1e200 1.0\nATOM      2  CL  ION     2       3.000   0.000   0.000 -1e200 1.0\n' > "$dir/huge2.pqr"
"$build/elecenergy" --cpu --method direct --json "$dir/huge2.pqr" > "$dir/out" 2>&1; rc1=$?
"$build/elecenergy" --cpu --method ewald --box 1e150 1e150 1e150 "$dir/huge2.pqr" > "$dir/out2" 2>&1; rc2=$?
if [ $rc1 -eq 1 ] && grep -q "double's range" "$dir/out" && ! grep -q '"total"' "$dir/out" &&
   [ $rc2 -ne 0 ] && grep -q "volume is past double's range" "$dir/out2"; then
    ok "elecenergy_refuses_sums_past_doubles_range"
else fail "elecenergy_refuses_sums_past_doubles_range: $rc1 $rc2 $(cat "$dir/out" "$dir/out2")"; fi

echo "tally: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
