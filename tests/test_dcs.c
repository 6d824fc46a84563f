/* tests/test_dcs.c - DCS on the CPU against independent truths: plain
   loops and hand-computed sums for the double references, the double
   references for the float paths; and what MDH shares with DCS there (the
   points path: atoms on a point, no atoms, bad input, progress, scale),
   tested for both; sums past their type's range refused.  MDH's own
   sums: tests/test_mdh.c. */
#include "tests/counted_malloc.h" /* the library's allocations counted */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "tests/test.h"
#include "tests/systems.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* An independent reference: the plainest triple loop over points and atoms,
   straight from the caller's arrays. */
static void plain_dcs(const test_system *s, const elec_lattice *l,
                      double *map) {
    int i, j, k;
    size_t a;
    for (k = 0; k < l->dims[2]; k++)
        for (j = 0; j < l->dims[1]; j++)
            for (i = 0; i < l->dims[0]; i++) {
                double p[3], sum = 0.0;
                elec_lattice_point(l, i, j, k, p);
                for (a = 0; a < s->count; a++) {
                    double r = sqrt(elec_distance2(p, s->xyz + 3 * a));
                    if (r >= ELEC_COINCIDENT_DISTANCE) sum += s->charge[a] / r;
                }
                map[i + l->dims[0] * (j + l->dims[1] * k)] = sum;
            }
}

TEST(dcs_double_matches_two_charges) {
    double xyz[6] = {0.3, -0.2, 0.1, 2.7, 1.1, -0.4}, q[2] = {1.0, -0.5};
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL);
    elec_lattice l = {{5, 4, 3}, {-1.0, -0.5, 0.25}, {0.75, 0.5, 1.0}};
    double map[60], plain[60], pts[9] = {1, 1, 1, -3, 0.5, 2, 0.3, -0.2, 5.1};
    double phi[3];
    test_system s;
    elec_error err;
    size_t n;
    int p;
    EXPECT(elec_cpu_dcs_map_double(&atoms, &l, NULL, map, &err) == ELEC_OK,
           "%s", err.message);
    /* The analytic q1/r1 + q2/r2 at each point: the same arithmetic in a
       different order, so agreement to 1e-12 relative (a few double
       roundings ~1e-16 each, far inside). */
    s.count = 2;
    s.xyz = xyz;
    s.charge = q;
    plain_dcs(&s, &l, plain);
    for (n = 0; n < 60; n++)
        EXPECT(fabs(map[n] - plain[n]) <= 1e-12 * fabs(plain[n]),
               "point %zu: %.17g vs %.17g", n, map[n], plain[n]);
    EXPECT(elec_cpu_dcs_points_double(&atoms, pts, 3, NULL, phi, &err) ==
               ELEC_OK,
           "%s", err.message);
    for (p = 0; p < 3; p++) {
        double r1 = sqrt(elec_distance2(pts + 3 * p, xyz));
        double r2 = sqrt(elec_distance2(pts + 3 * p, xyz + 3));
        double want = 1.0 / r1 - 0.5 / r2;
        EXPECT(fabs(phi[p] - want) <= 1e-12 * fabs(want),
               "point %d: %.17g vs %.17g", p, phi[p], want);
    }
}

/* The float map against the double reference on one system; prints the
   measured error. */
static void compare_map(const char *name, const test_system *s,
                        const elec_lattice *l) {
    elec_atoms atoms = test_system_atoms(s);
    size_t n = elec_lattice_size(l);
    float *map = (float *)malloc(n * sizeof *map);
    double *ref = (double *)malloc(n * sizeof *ref);
    elec_error err;
    double rel;
    EXPECT(map && ref, "no memory");
    if (!map || !ref) {
        free(map);
        free(ref);
        return;
    }
    EXPECT(elec_cpu_dcs_map(&atoms, l, NULL, map, &err) == ELEC_OK, "%s: %s",
           name, err.message);
    EXPECT(elec_cpu_dcs_map_double(&atoms, l, NULL, ref, &err) == ELEC_OK,
           "%s: %s", name, err.message);
    rel = test_rel_rms_float(map, ref, n);
    printf("     %s: %zu atoms, %dx%dx%d map, float vs double rel RMS %.2e, "
           "max abs %.2e e/A\n",
           name, s->count, l->dims[0], l->dims[1], l->dims[2], rel,
           test_max_abs_diff_float(map, ref, n));
    EXPECT(test_all_finite_float(map, n), "%s: map not finite", name);
    EXPECT(rel <= TEST_FLOAT_REL_RMS, "%s: rel RMS %.3e > %.0e", name, rel,
           TEST_FLOAT_REL_RMS);
    free(map);
    free(ref);
}

TEST(dcs_float_map_matches_double) {
    /* 10,000 random atoms in a 20 A cube (seed 1); a 32^3 lattice at 0.5 A
       (15.5 A across) from 2 A inside the cube, so atoms sit among the
       points and some very close to them. */
    test_system random = test_system_random(TEST_RANDOM_ATOMS, 20.0, 1);
    test_system water = test_system_water(TEST_WATER_MOLECULES, 2);
    test_system salt = test_system_nacl(4, 5.64);
    elec_lattice l = test_lattice_cube(32, 2.0, 0.5), lw, ls;
    elec_atoms wa = test_system_atoms(&water), sa = test_system_atoms(&salt);
    compare_map("random", &random, &l);
    /* the water box (~45 A), 1 A spacing and 6 A padding */
    EXPECT(elec_lattice_around(&wa, 1.0, 6.0, &lw, NULL) == ELEC_OK,
           "water lattice");
    compare_map("water", &water, &lw);
    /* NaCl 4^3 cells (512 ions) on a lattice of spacing a/8 from one cell
       before to one cell after the crystal: every ion sits exactly on a
       lattice point (the coincident rule at 512 points), the other points
       at least a/8 from any ion.  (A lattice with points a few hundredths
       of an A from ions measures the float rounding of those distances,
       ~1e-6 A / r, instead of the method.) */
    (void)sa;
    ls = test_lattice_cube(4 * 8 + 16 + 1, -5.64, 5.64 / 8.0);
    compare_map("NaCl", &salt, &ls);
    test_system_free(&random);
    test_system_free(&water);
    test_system_free(&salt);
}

TEST(points_equal_map_at_lattice_points) {
    test_system s = test_system_random(500, 12.0, 3);
    elec_atoms atoms = test_system_atoms(&s);
    elec_lattice l = {{9, 7, 5}, {1.0, 2.0, 3.0}, {0.8, 0.9, 1.1}};
    size_t n = elec_lattice_size(&l), p;
    double *xyz = (double *)malloc(3 * n * sizeof *xyz);
    double *ref = (double *)malloc(n * sizeof *ref),
           *at = (double *)malloc(n * sizeof *at);
    float *map = (float *)malloc(n * sizeof *map),
          *atf = (float *)malloc(n * sizeof *atf);
    int i, j, k;
    elec_error err;
    for (k = 0; k < 5; k++)
        for (j = 0; j < 7; j++)
            for (i = 0; i < 9; i++)
                elec_lattice_point(&l, i, j, k, xyz + 3 * (i + 9 * (j + 7 * k)));
    EXPECT(elec_cpu_dcs_map_double(&atoms, &l, NULL, ref, &err) == ELEC_OK,
           "%s", err.message);
    EXPECT(elec_cpu_dcs_points_double(&atoms, xyz, n, NULL, at, &err) ==
               ELEC_OK,
           "%s", err.message);
    EXPECT(elec_cpu_dcs_map(&atoms, &l, NULL, map, &err) == ELEC_OK, "%s",
           err.message);
    EXPECT(elec_cpu_dcs_points(&atoms, xyz, n, NULL, atf, &err) == ELEC_OK,
           "%s", err.message);
    for (p = 0; p < n; p++) {
        /* double: the same terms summed in another order and translated by
           another reference: a few roundings of 1e-16 on sums of |t| ~ 1e2
           times |phi|; 1e-12 relative is generous. */
        EXPECT(fabs(at[p] - ref[p]) <= 1e-12 * (fabs(ref[p]) + 1.0),
               "double point %zu: %.17g vs %.17g", p, at[p], ref[p]);
    }
    {
        /* float: both paths translate the atoms to the lattice centre (the
           points path to the centre of the points' bounding box, the same
           up to a double rounding), so the float terms are nearly always
           the same; any difference is float rounding, bounded as each
           path's difference from the double reference. */
        double rel = test_rel_rms_float(atf, ref, n);
        double rel_map = test_rel_rms_float(map, ref, n);
        double *mapd = (double *)malloc(n * sizeof *mapd);
        for (p = 0; p < n; p++) mapd[p] = map[p];
        printf("     points vs double rel RMS %.2e, map vs double %.2e, "
               "points vs map %.2e\n",
               rel, rel_map, test_rel_rms_float(atf, mapd, n));
        EXPECT(rel <= TEST_FLOAT_REL_RMS && rel_map <= TEST_FLOAT_REL_RMS,
               "rel RMS points %.3e, map %.3e", rel, rel_map);
        EXPECT(test_rel_rms_float(atf, mapd, n) <= TEST_FLOAT_REL_RMS,
               "points vs map rel RMS %.3e",
               test_rel_rms_float(atf, mapd, n));
        free(mapd);
    }
    free(xyz);
    free(ref);
    free(at);
    free(map);
    free(atf);
    test_system_free(&s);
}

/* Progress as a call reports it: the fractions, in order. */
typedef struct spread_progress {
    int calls, backwards;
    double last;
} spread_progress;

static int spread_progress_note(double fraction, void *user) {
    spread_progress *p = (spread_progress *)user;
    p->backwards += fraction < p->last;
    p->last = fraction;
    p->calls++;
    return 0;
}

/* Points far apart (tests/systems.h, test_spread_points): each float
   potential within 1e-5 of its terms' sizes of the double one (float
   rounding over 40 terms is under 1e-6), DCS and MDH; before the points
   were taken a region at a time, the points near the ions erred by whole
   terms (one point 1e10 A away moved the reference 5e9 A).  Progress
   still rises to 1 over the regions. */
TEST(points_far_apart_keep_float_precision) {
    double points[3 * TEST_SPREAD_POINTS], normals[3 * TEST_SPREAD_POINTS];
    double want[TEST_SPREAD_POINTS];
    float got[TEST_SPREAD_POINTS];
    test_system s = test_spread_points(points, normals);
    elec_atoms atoms = test_system_atoms(&s);
    elec_dcs_params dcs = {0};
    elec_mdh_params mdh = {0};
    spread_progress seen = {0, 0, 0.0};
    elec_error err;
    double e;
    dcs.progress = spread_progress_note;
    dcs.progress_user = &seen;
    EXPECT(elec_cpu_dcs_points_double(&atoms, points, TEST_SPREAD_POINTS, NULL, want, &err) ==
               ELEC_OK, "%s", err.message);
    EXPECT(elec_cpu_dcs_points(&atoms, points, TEST_SPREAD_POINTS, &dcs, got, &err) == ELEC_OK,
           "%s", err.message);
    e = test_spread_error(&s, points, TEST_SPREAD_POINTS, got, want, 1.0);
    printf("     DCS: worst error %.2e of the terms' sizes; progress %d calls, last %g\n", e,
           seen.calls, seen.last);
    EXPECT(e <= 1e-5, "DCS float at points far apart: %.3e", e);
    EXPECT(seen.calls >= 2 && seen.backwards == 0 && seen.last == 1.0,
           "progress: %d calls, %d backwards, last %g", seen.calls, seen.backwards, seen.last);
    mdh.kappa = 0.1;
    EXPECT(elec_cpu_mdh_points_double(&atoms, points, TEST_SPREAD_POINTS, &mdh, want, &err) ==
               ELEC_OK, "%s", err.message);
    EXPECT(elec_cpu_mdh_points(&atoms, points, TEST_SPREAD_POINTS, &mdh, got, &err) == ELEC_OK,
           "%s", err.message);
    e = test_spread_error(&s, points, TEST_SPREAD_POINTS, got, want, 1.0);
    printf("     MDH: worst error %.2e of the terms' sizes\n", e);
    EXPECT(e <= 1e-5, "MDH float at points far apart: %.3e", e);
    test_system_free(&s);
}

/* A map whose lattice spans more than ELEC__FLOAT_REGION (1024 A) along
   an axis is summed a box at a time, each about its own centre (an audit:
   three points 1e9 A apart put the one reference 1e9 A from the first,
   an atom 3 A from it rounded onto it and was left out, 0.25 for 0.5833;
   this 16,000 A line of points with the atoms at one end erred 1.9e-5
   relative RMS, the audit's 1.1e-3).  Progress still rises to 1 over the boxes. */
TEST(long_lattices_keep_float_precision) {
    const double xyz[6] = {3.0, 0.0, 0.0, 0.0, 4.0, 0.0}, q[2] = {1.0, 1.0};
    const elec_atoms ions = elec_atoms_from_xyz(2, xyz, q, NULL);
    const elec_lattice far = {{3, 1, 1}, {0.0, 0.0, 0.0}, {1e9, 1.0, 1.0}};
    const elec_lattice line = {{16001, 2, 2}, {-5.0, -1.0, -1.0}, {1.0, 1.5, 1.5}};
    test_system s = test_system_random(50, 10.0, 71);
    const elec_atoms atoms = test_system_atoms(&s);
    const size_t points = elec_lattice_size(&line);
    float three[3], *got = (float *)malloc(points * sizeof *got);
    double *want = (double *)malloc(points * sizeof *want), e;
    test_progress_log log;
    elec_dcs_params dp;
    elec_error err;
    EXPECT(elec_cpu_dcs_map(&ions, &far, NULL, three, &err) == ELEC_OK &&
               fabs(three[0] - (1.0 / 3.0 + 0.25)) <= 1e-6 && three[1] > 0.0f,
           "%s (point 0: %.7g, want %.7g)", err.message, three[0], 1.0 / 3.0 + 0.25);
    memset(&dp, 0, sizeof dp);
    memset(&log, 0, sizeof log);
    log.increasing = 1;
    dp.progress = test_log_progress;
    dp.progress_user = &log;
    EXPECT(elec_cpu_dcs_map_double(&atoms, &line, NULL, want, &err) == ELEC_OK, "%s",
           err.message);
    EXPECT(elec_cpu_dcs_map(&atoms, &line, &dp, got, &err) == ELEC_OK, "%s", err.message);
    e = test_rel_rms_float(got, want, points);
    printf("     a 16,000 A line of points: relative RMS %.2e; progress %d calls, last %g\n", e,
           log.calls, log.last);
    EXPECT(e <= 1e-5, "16,000 A line: relative RMS %.3e", e);
    EXPECT(log.increasing && log.last == 1.0, "progress: increasing %d, last %g",
           log.increasing, log.last);
    free(got);
    free(want);
    test_system_free(&s);
}

/* Rows longer than ELEC__DCS_ROW_POINTS (65,536) are summed in boxes of
   that many points: each thread sums a row of doubles, and an audit's
   2^28 points along x asked 16 threads for 32 GiB of scratch and was
   refused.  With 64 threads a 200,001-point row at 1 mA asks at most 35
   MB in one allocation (103 MB before the cap: test_largest_allocation,
   tests/counted_malloc.h), keeps the float map's precision, and every
   point is written. */
TEST(rows_past_the_scratch_row_are_boxed) {
    const elec_lattice row = {{200001, 1, 2}, {-100.0, 0.5, -0.5}, {1e-3, 1.0, 1.0}};
    test_system s = test_system_random(40, 10.0, 29);
    const elec_atoms atoms = test_system_atoms(&s);
    const size_t points = elec_lattice_size(&row);
    float *got = (float *)malloc(points * sizeof *got);
    double *want = (double *)malloc(points * sizeof *want), e;
    elec_error err;
    size_t i;
#ifdef _OPENMP
    const int threads = omp_get_max_threads();
#endif
    for (i = 0; i < points; i++) got[i] = NAN;
    EXPECT(elec_cpu_dcs_map_double(&atoms, &row, NULL, want, &err) == ELEC_OK, "%s",
           err.message);
#ifdef _OPENMP
    omp_set_num_threads(64);
#endif
    test_largest_allocation = 0;
    EXPECT(elec_cpu_dcs_map(&atoms, &row, NULL, got, &err) == ELEC_OK, "%s", err.message);
#ifdef _OPENMP
    omp_set_num_threads(threads);
    EXPECT(test_largest_allocation <= (size_t)35 << 20,
           "largest allocation %zu bytes with 64 threads", test_largest_allocation);
#endif
    e = test_rel_rms_float(got, want, points);
    printf("     a 200,001-point row: relative RMS %.2e; largest allocation %.1f MB\n", e,
           test_largest_allocation / 1048576.0);
    EXPECT(test_all_finite_float(got, points) && e <= 1e-6, "relative RMS %.3e", e);
    free(got);
    free(want);
    test_system_free(&s);
}


TEST(coincident_atom_is_left_out) {
    /* atom 0 exactly on lattice point (2,1,3); the others elsewhere */
    elec_lattice l = {{5, 4, 6}, {-1.0, 0.5, -2.0}, {0.5, 0.5, 0.5}};
    double xyz[9], q[3] = {0.8, -0.3, 0.6}, ref[120], single[120], pt[3];
    double near_xyz[3];
    float map[120];
    size_t on = 2 + 5 * (1 + 4 * 3), n;
    elec_atoms atoms, others;
    elec_error err;
    elec_mdh_params mp;
    double mdh_on;
    float mdh_on_f;
    double r_in[3] = {1.2, 1.5, 1.7};
    elec_lattice_point(&l, 2, 1, 3, xyz);
    xyz[3] = 3.3;
    xyz[4] = -0.7;
    xyz[5] = 0.9;
    xyz[6] = -2.2;
    xyz[7] = 1.4;
    xyz[8] = 2.6;
    atoms = elec_atoms_from_xyz(3, xyz, q, r_in);
    others = elec_atoms_from_xyz(2, xyz + 3, q + 1, r_in + 1);
    EXPECT(elec_cpu_dcs_map_double(&atoms, &l, NULL, ref, &err) == ELEC_OK,
           "%s", err.message);
    EXPECT(elec_cpu_dcs_map(&atoms, &l, NULL, map, &err) == ELEC_OK, "%s",
           err.message);
    EXPECT(elec_cpu_dcs_map_double(&others, &l, NULL, single, &err) == ELEC_OK,
           "%s", err.message);
    EXPECT(test_all_finite_float(map, 120), "float map not finite");
    for (n = 0; n < 120; n++)
        EXPECT(ref[n] == ref[n] && fabs(ref[n]) < 1e300,
               "double map not finite at %zu", n);
    /* at the coincident point, exactly the sum over the other atoms in
       double (same terms, same order); float to 2 float ulps */
    EXPECT(ref[on] == single[on], "double: %.17g vs others %.17g", ref[on],
           single[on]);
    EXPECT(fabs(map[on] - single[on]) <= 2.4e-7 * fabs(single[on]),
           "float: %.9g vs others %.9g", map[on], single[on]);
    /* MDH at the same point, both precisions */
    memcpy(pt, xyz, sizeof pt);
    memset(&mp, 0, sizeof mp);
    mp.kappa = 0.1;
    EXPECT(elec_cpu_mdh_points_double(&atoms, pt, 1, &mp, &mdh_on, &err) ==
               ELEC_OK,
           "%s", err.message);
    EXPECT(elec_cpu_mdh_points(&atoms, pt, 1, &mp, &mdh_on_f, &err) ==
               ELEC_OK,
           "%s", err.message);
    {
        double want = elec_mdh_term(q[1], r_in[1], 0.1,
                                    sqrt(elec_distance2(pt, xyz + 3))) +
                      elec_mdh_term(q[2], r_in[2], 0.1,
                                    sqrt(elec_distance2(pt, xyz + 6)));
        EXPECT(fabs(mdh_on - want) <= 1e-12 * fabs(want),
               "MDH double at coincident point %.17g vs %.17g", mdh_on, want);
        /* float terms with expf: a few float roundings per term */
        EXPECT(fabs(mdh_on_f - want) <= 1e-6 * fabs(want),
               "MDH float at coincident point %.9g vs %.9g", mdh_on_f, want);
    }
    /* 0.01 A away is outside the rule: the atom's 1/0.01 term is there */
    near_xyz[0] = xyz[0] + 0.01;
    near_xyz[1] = xyz[1];
    near_xyz[2] = xyz[2];
    {
        double one_q = 1.0, phi;
        float phif;
        elec_atoms near_atom = elec_atoms_from_xyz(1, near_xyz, &one_q, NULL);
        EXPECT(elec_cpu_dcs_points_double(&near_atom, pt, 1, NULL, &phi,
                                          &err) == ELEC_OK,
               "%s", err.message);
        EXPECT(elec_cpu_dcs_points(&near_atom, pt, 1, NULL, &phif, &err) ==
                   ELEC_OK,
               "%s", err.message);
        /* 1/0.01 = 100; the 0.01 A offset carries double rounding of the
           coordinates (~1e-15 A, 1e-13 relative) ... */
        EXPECT(fabs(phi - 100.0) <= 1e-9, "0.01 A away: %.17g", phi);
        /* ... and, in float, of translated coordinates (~1e-7 A on a 0.01 A
           distance: 1e-5 relative) */
        EXPECT(fabs(phif - 100.0) <= 1e-3, "0.01 A away, float: %.9g", phif);
        EXPECT(elec_cpu_dcs_map(&near_atom, &l, NULL, map, &err) == ELEC_OK,
               "%s", err.message);
        EXPECT(fabs(map[on] - 100.0) <= 1e-3, "0.01 A away, map: %.9g",
               map[on]);
    }
}

TEST(zero_atoms_give_zero_map) {
    elec_atoms none = elec_atoms_from_xyz(0, NULL, NULL, NULL);
    elec_lattice l = test_lattice_cube(4, 0.0, 1.0);
    float map[64];
    double mapd[64], pts[6] = {0, 0, 0, 1, 2, 3}, phi[2] = {5, 5};
    elec_error err;
    int n, zero = 1;
    for (n = 0; n < 64; n++) map[n] = 7.0f, mapd[n] = 7.0;
    EXPECT(elec_cpu_dcs_map(&none, &l, NULL, map, &err) == ELEC_OK, "%s",
           err.message);
    EXPECT(elec_cpu_dcs_map_double(&none, &l, NULL, mapd, &err) == ELEC_OK,
           "%s", err.message);
    for (n = 0; n < 64; n++) zero &= map[n] == 0.0f && mapd[n] == 0.0;
    EXPECT(zero, "map of no atoms is not zero");
    EXPECT(elec_cpu_dcs_points_double(&none, pts, 2, NULL, phi, &err) ==
                   ELEC_OK &&
               phi[0] == 0.0 && phi[1] == 0.0,
           "points of no atoms: %g %g", phi[0], phi[1]);
}

TEST(invalid_arguments_are_reported) {
    double xyz[3] = {0, 0, 0}, q[1] = {1}, pts[3] = {1, 1, 1}, phi;
    elec_atoms atoms = elec_atoms_from_xyz(1, xyz, q, NULL);
    elec_lattice l = test_lattice_cube(4, 0.0, 1.0), bad = l;
    float map[64], phif;
    elec_mdh_params mp;
    elec_dcs_params dp;
    elec_error err;
    memset(&mp, 0, sizeof mp);
    memset(&dp, 0, sizeof dp);
    EXPECT(elec_cpu_dcs_map(&atoms, &l, NULL, NULL, &err) ==
                   ELEC_ERR_INVALID_ARG &&
               err.message[0],
           "NULL map accepted");
    EXPECT(elec_cpu_dcs_map_double(&atoms, &l, NULL, NULL, &err) ==
               ELEC_ERR_INVALID_ARG,
           "NULL double map accepted");
    xyz[1] = NAN;
    EXPECT(elec_cpu_dcs_map(&atoms, &l, NULL, map, &err) ==
                   ELEC_ERR_INVALID_ARG &&
               err.message[0],
           "NaN atom accepted");
    xyz[1] = 0.0;
    bad.dims[1] = 0;
    EXPECT(elec_cpu_dcs_map(&atoms, &bad, NULL, map, &err) ==
                   ELEC_ERR_INVALID_ARG &&
               err.message[0],
           "bad lattice accepted");
    EXPECT(elec_cpu_dcs_map(&atoms, NULL, NULL, map, &err) ==
               ELEC_ERR_INVALID_ARG,
           "NULL lattice accepted");
    EXPECT(elec_cpu_mdh_points(&atoms, pts, 1, &mp, &phif, &err) ==
                   ELEC_ERR_INVALID_ARG &&
               err.message[0],
           "MDH without radii accepted");
    EXPECT(elec_cpu_mdh_points_double(&atoms, pts, 1, &mp, &phi, &err) ==
               ELEC_ERR_INVALID_ARG,
           "MDH double without radii accepted");
    EXPECT(elec_cpu_dcs_points(&atoms, NULL, 1, NULL, &phif, &err) ==
               ELEC_ERR_INVALID_ARG,
           "NULL points accepted");
    EXPECT(elec_cpu_dcs_points(&atoms, pts, 1, NULL, NULL, &err) ==
               ELEC_ERR_INVALID_ARG,
           "NULL potential accepted");
    pts[2] = INFINITY;
    EXPECT(elec_cpu_dcs_points_double(&atoms, pts, 1, NULL, &phi, &err) ==
               ELEC_ERR_INVALID_ARG,
           "infinite point accepted");
    pts[2] = 1.0;
    /* a count whose 3 x count doubles wrap: the check read 2 of them, the
       sum then ran past the array (an audit's finding) */
    EXPECT(elec_cpu_dcs_points(&atoms, pts, SIZE_MAX / 3 + 1, NULL, &phif, &err) ==
                   ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "more than an array can hold"),
           "a wrapping count: %s", err.message);
    dp.variant = ELEC_DCS_VARIANT_COUNT;
    EXPECT(elec_cpu_dcs_map(&atoms, &l, &dp, map, &err) ==
               ELEC_ERR_INVALID_ARG,
           "bad DCS params accepted");
    EXPECT(elec_cpu_dcs_points(&atoms, pts, 0, NULL, NULL, &err) == ELEC_OK,
           "zero points: %s", err.message);
}

TEST(progress_reports_and_cancels) {
    test_system s = test_system_random(200, 10.0, 6);
    elec_atoms atoms = test_system_atoms(&s);
    elec_lattice l = test_lattice_cube(20, 0.0, 0.5);
    float *map = (float *)malloc(elec_lattice_size(&l) * sizeof *map);
    double *pts = (double *)malloc(3 * 1000 * sizeof *pts), *phi;
    test_progress_log log;
    elec_dcs_params dp;
    elec_mdh_params mp;
    elec_error err;
    size_t n;
    phi = (double *)malloc(1000 * sizeof *phi);
    for (n = 0; n < 3000; n++) pts[n] = 0.01 * (double)n;
    memset(&dp, 0, sizeof dp);
    memset(&log, 0, sizeof log);
    log.increasing = 1;
    dp.progress = test_log_progress;
    dp.progress_user = &log;
    EXPECT(elec_cpu_dcs_map(&atoms, &l, &dp, map, &err) == ELEC_OK, "%s",
           err.message);
    /* 400 rows in blocks of ceil(400/64) = 7: 58 calls, then 1.0 again */
    EXPECT(log.calls >= 20, "only %d progress calls for the map", log.calls);
    EXPECT(log.increasing, "fractions went backwards or out of [0, 1]");
    EXPECT(log.last == 1.0, "last fraction %g, want 1", log.last);
    memset(&log, 0, sizeof log);
    log.increasing = 1;
    log.cancel_after = 3;
    EXPECT(elec_cpu_dcs_map(&atoms, &l, &dp, map, &err) ==
                   ELEC_ERR_CANCELLED &&
               err.message[0],
           "cancel did not stop the map");
    EXPECT(log.calls == 3, "%d calls after a cancel at the third",
           log.calls);
    EXPECT(elec_cpu_dcs_map_double(&atoms, &l, &dp, NULL, &err) ==
               ELEC_ERR_INVALID_ARG,
           "NULL map accepted with progress");
    memset(&log, 0, sizeof log);
    log.increasing = 1;
    log.cancel_after = 2;
    EXPECT(elec_cpu_dcs_points_double(&atoms, pts, 1000, &dp, phi, &err) ==
               ELEC_ERR_CANCELLED,
           "cancel did not stop the points");
    memset(&mp, 0, sizeof mp);
    memset(&log, 0, sizeof log);
    log.increasing = 1;
    mp.progress = test_log_progress;
    mp.progress_user = &log;
    EXPECT(elec_cpu_mdh_points_double(&atoms, pts, 1000, &mp, phi, &err) ==
               ELEC_OK,
           "%s", err.message);
    EXPECT(log.calls >= 20 && log.increasing && log.last == 1.0,
           "MDH points: %d calls, increasing %d, last %g", log.calls,
           log.increasing, log.last);
    free(map);
    free(pts);
    free(phi);
    test_system_free(&s);
}

#ifdef _OPENMP
/* A progress callback that raises the OpenMP thread count to 8 at its
   first call (as a callback reaching into another library may). */
static int raise_the_thread_count(double fraction, void *user) {
    int *raised = (int *)user;
    (void)fraction;
    if (!*raised) omp_set_num_threads(8);
    *raised = 1;
    return 0;
}
#endif

TEST(a_progress_callback_may_change_the_thread_count) {
    /* The map's row sums are sized for the threads at the start (one):
       later blocks of rows must keep to them whatever the callback does
       to the thread count (an audit: 8 threads wrote past a buffer sized
       for one, heap corruption), and the map is the one made without a
       callback, to the bit (each row is one thread's sum). */
#ifndef _OPENMP
    SKIP("built without OpenMP: one thread");
#else
    const int threads = omp_get_max_threads();
    test_system s = test_system_random(200, 10.0, 7);
    elec_atoms atoms = test_system_atoms(&s);
    elec_lattice l = test_lattice_cube(20, 0.0, 0.5);
    const size_t points = elec_lattice_size(&l);
    float *map = (float *)malloc(points * sizeof *map);
    float *plain = (float *)malloc(points * sizeof *plain);
    double *map_double = (double *)malloc(points * sizeof *map_double);
    double *plain_double = (double *)malloc(points * sizeof *plain_double);
    elec_dcs_params dp;
    elec_error err;
    int raised = 0;
    memset(&dp, 0, sizeof dp);
    omp_set_num_threads(1);
    EXPECT(elec_cpu_dcs_map(&atoms, &l, &dp, plain, &err) == ELEC_OK &&
               elec_cpu_dcs_map_double(&atoms, &l, &dp, plain_double, &err) == ELEC_OK,
           "%s", err.message);
    dp.progress = raise_the_thread_count;
    dp.progress_user = &raised;
    EXPECT(elec_cpu_dcs_map(&atoms, &l, &dp, map, &err) == ELEC_OK, "%s", err.message);
    omp_set_num_threads(1);
    raised = 0;
    EXPECT(elec_cpu_dcs_map_double(&atoms, &l, &dp, map_double, &err) == ELEC_OK, "%s",
           err.message);
    omp_set_num_threads(threads);
    EXPECT(raised && memcmp(map, plain, points * sizeof *map) == 0 &&
               memcmp(map_double, plain_double, points * sizeof *map_double) == 0,
           "the maps differ from those made without the callback (raised %d)", raised);
    free(map);
    free(plain);
    free(map_double);
    free(plain_double);
    test_system_free(&s);
#endif
}

TEST(scale_multiplies_results) {
    test_system s = test_system_random(100, 8.0, 8);
    elec_atoms atoms = test_system_atoms(&s);
    elec_lattice l = test_lattice_cube(6, -1.0, 2.0);
    double plain[216], scaled[216], pts[6] = {0.5, 0.5, 0.5, 9, 9, 9};
    double mdh_plain[2], mdh_scaled[2];
    float fplain[216], fscaled[216];
    elec_dcs_params dp;
    elec_mdh_params mp;
    int n;
    memset(&dp, 0, sizeof dp);
    memset(&mp, 0, sizeof mp);
    EXPECT(elec_cpu_dcs_map_double(&atoms, &l, &dp, plain, NULL) == ELEC_OK, "DCS double");
    EXPECT(elec_cpu_dcs_map(&atoms, &l, &dp, fplain, NULL) == ELEC_OK, "DCS float");
    mp.kappa = 0.1;
    EXPECT(elec_cpu_mdh_points_double(&atoms, pts, 2, &mp, mdh_plain, NULL) == ELEC_OK, "MDH");
    dp.scale = mp.scale = ELEC_COULOMB;
    EXPECT(elec_cpu_dcs_map_double(&atoms, &l, &dp, scaled, NULL) == ELEC_OK,
           "DCS double, scaled");
    EXPECT(elec_cpu_dcs_map(&atoms, &l, &dp, fscaled, NULL) == ELEC_OK, "DCS float, scaled");
    EXPECT(elec_cpu_mdh_points_double(&atoms, pts, 2, &mp, mdh_scaled, NULL) == ELEC_OK,
           "MDH, scaled");
    for (n = 0; n < 216; n++) {
        /* the scale multiplies the double sum once: one rounding */
        EXPECT(fabs(scaled[n] - ELEC_COULOMB * plain[n]) <=
                   1e-15 * fabs(scaled[n]),
               "double point %d: %.17g vs %.17g", n, scaled[n],
               ELEC_COULOMB * plain[n]);
        /* float: both are one rounding of a double to float: 2 ulps */
        EXPECT(fabs(fscaled[n] - ELEC_COULOMB * fplain[n]) <=
                   2.4e-7 * fabs(fscaled[n]),
               "float point %d: %.9g vs %.9g", n, fscaled[n],
               ELEC_COULOMB * fplain[n]);
    }
    for (n = 0; n < 2; n++)
        EXPECT(fabs(mdh_scaled[n] - ELEC_COULOMB * mdh_plain[n]) <=
                   1e-15 * fabs(mdh_scaled[n]),
               "MDH point %d", n);
    test_system_free(&s);
}

TEST(dcs_map_of_a_real_protein_matches_double) {
    /* Fasciculin-2 as APBS ships it (906 atoms, net +4.05 e): the float map
       against the double reference, with the same float-rounding budget as
       the synthetic systems. */
    const char *path = "../shared/data/structures/fas2.pqr";
    elec_structure mol;
    elec_lattice l;
    elec_error err;
    elec_atoms atoms;
    float *map;
    double *ref, e;
    size_t n;
    if (elec_read_pqr(path, &mol, &err) != ELEC_OK)
        SKIP("%s not readable (%s): the shared reference data are absent",
             path, err.message);
    atoms = elec_structure_atoms(&mol);
    EXPECT(elec_lattice_around(&atoms, 1.0, 5.0, &l, &err) == ELEC_OK, "%s",
           err.message);
    n = elec_lattice_size(&l);
    map = (float *)malloc(n * sizeof *map);
    ref = (double *)malloc(n * sizeof *ref);
    EXPECT(map && ref, "out of memory");
    if (map && ref) {
        EXPECT(elec_cpu_dcs_map(&atoms, &l, NULL, map, &err) == ELEC_OK, "%s",
               err.message);
        EXPECT(elec_cpu_dcs_map_double(&atoms, &l, NULL, ref, &err) == ELEC_OK,
               "%s", err.message);
        e = test_rel_rms_float(map, ref, n);
        printf("     fas2: %zu atoms, %dx%dx%d map, float vs double rel RMS %.2e\n",
               atoms.count, l.dims[0], l.dims[1], l.dims[2], e);
        EXPECT(e <= TEST_FLOAT_REL_RMS, "relative RMS %.3e", e);
    }
    free(map);
    free(ref);
    elec_structure_free(&mol);
}

TEST(maps_past_the_lattice_cap_are_refused_before_any_work) {
    /* 2^28 + 1 points is one past the default: refused by every CPU map
       method without touching the (absent) map; max_points lets a smaller
       cap refuse a small lattice, and the same lattice pass under it. */
    double xyz[3] = {0.0, 0.0, 0.0}, q = 1.0;
    elec_atoms atom = elec_atoms_from_xyz(1, xyz, &q, NULL);
    elec_lattice big = {{16385, 16384, 1}, {0, 0, 0}, {1, 1, 1}};
    elec_lattice small = {{4, 4, 4}, {-2, -2, -2}, {1, 1, 1}};
    static float map[64];
    float *none = map; /* never written for the big lattice: 64 floats */
    elec_dcs_params dp;
    elec_cutoff_params cp;
    elec_msm_params mp;
    elec_error err;
    memset(&dp, 0, sizeof dp);
    memset(&cp, 0, sizeof cp);
    memset(&mp, 0, sizeof mp);
    EXPECT(elec_lattice_size(&big) == ELEC_DEFAULT_MAX_LATTICE_POINTS + 16384,
           "lattice size %zu", elec_lattice_size(&big));
    EXPECT(elec_cpu_dcs_map(&atom, &big, &dp, none, &err) == ELEC_ERR_UNSUPPORTED &&
               strstr(err.message, "over the limit"),
           "DCS: %s", err.message);
    EXPECT(elec_cpu_cutoff_map(&atom, &big, &cp, none, &err) == ELEC_ERR_UNSUPPORTED,
           "cutoff: %s", err.message);
    EXPECT(elec_cpu_msm_map(&atom, &big, &mp, none, &err) == ELEC_ERR_UNSUPPORTED,
           "MSM: %s", err.message);
    EXPECT(elec_cpu_dcs_map(&atom, &big, NULL, none, &err) == ELEC_ERR_UNSUPPORTED,
           "DCS, NULL params: %s", err.message);
    dp.max_points = 63;
    EXPECT(elec_cpu_dcs_map(&atom, &small, &dp, map, &err) == ELEC_ERR_UNSUPPORTED,
           "64 points under a cap of 63: %s", err.message);
    dp.max_points = 64;
    EXPECT(elec_cpu_dcs_map(&atom, &small, &dp, map, &err) == ELEC_OK,
           "64 points under a cap of 64: %s", err.message);
    EXPECT(elec_lattice_check_points(&big, (size_t)1 << 29, &err) == ELEC_OK,
           "a raised cap: %s", err.message);
}

TEST(maps_and_points_past_their_range_are_refused) {
    /* Charges of 1e308 e (test_huge_charges) pass every check; their sums
       pass float's range at every point and double's at point 43.  Each
       call fails, naming the method and the first such point, where the
       maps once returned ELEC_OK full of inf; a cancelled map keeps its
       own status. */
    elec_atoms atoms = test_huge_charges();
    elec_lattice l = test_lattice_cube(6, 0.0, 1.0);
    double pts[6] = {0.0, 0.0, 5.0, 1.0, 1.0, 1.0}; /* 0: finite in double */
    float mapf[216], phif[2];
    double mapd[216], phid[2];
    elec_dcs_params p;
    test_progress_log log;
    elec_error err;
    elec_status s;
    memset(&p, 0, sizeof p);
    s = elec_cpu_dcs_map(&atoms, &l, &p, mapf, &err);
    EXPECT(test_refused_past_range(s, &err, "DCS map", "float") &&
               strstr(err.message, "point 0 came out inf"),
           "float map: status %d, %s", (int)s, err.message);
    s = elec_cpu_dcs_map_double(&atoms, &l, &p, mapd, &err);
    EXPECT(test_refused_past_range(s, &err, "DCS map", "double") &&
               strstr(err.message, "point 43 came out inf"),
           "double map: status %d, %s", (int)s, err.message);
    s = elec_cpu_dcs_points(&atoms, pts, 2, &p, phif, &err);
    EXPECT(test_refused_past_range(s, &err, "DCS at points", "float") &&
               strstr(err.message, "point 0 came out inf"),
           "float points: status %d, %s", (int)s, err.message);
    s = elec_cpu_dcs_points_double(&atoms, pts, 2, &p, phid, &err);
    EXPECT(test_refused_past_range(s, &err, "DCS at points", "double") &&
               strstr(err.message, "point 1 came out inf") && isfinite(phid[0]),
           "double points: status %d, %s", (int)s, err.message);
    memset(&log, 0, sizeof log);
    log.increasing = 1;
    log.cancel_after = 1;
    p.progress = test_log_progress;
    p.progress_user = &log;
    s = elec_cpu_dcs_map(&atoms, &l, &p, mapf, &err);
    EXPECT(s == ELEC_ERR_CANCELLED, "cancelled: status %d, %s", (int)s, err.message);
}

int main(void) {
    RUN(dcs_double_matches_two_charges);
    RUN(dcs_float_map_matches_double);
    RUN(points_equal_map_at_lattice_points);
    RUN(points_far_apart_keep_float_precision);
    RUN(long_lattices_keep_float_precision);
    RUN(rows_past_the_scratch_row_are_boxed);
    RUN(coincident_atom_is_left_out);
    RUN(zero_atoms_give_zero_map);
    RUN(invalid_arguments_are_reported);
    RUN(progress_reports_and_cancels);
    RUN(a_progress_callback_may_change_the_thread_count);
    RUN(scale_multiplies_results);
    RUN(dcs_map_of_a_real_protein_matches_double);
    RUN(maps_past_the_lattice_cap_are_refused_before_any_work);
    RUN(maps_and_points_past_their_range_are_refused);
    (void)test_rng_seeded; /* test.h helpers this file does not need */
    (void)test_uniform;
    return test_summary();
}
