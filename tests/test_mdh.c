/* tests/test_mdh.c - MDH (multiple Debye-Hueckel) on the CPU: the double
   reference against a hand-computed sum and against DCS without screening,
   the float path against the double one, and the float range refused.
   What MDH shares with DCS (the points path): tests/test_dcs.c. */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "tests/test.h"
#include "tests/systems.h"

TEST(mdh_double_matches_hand_sum) {
    double xyz[6] = {0.0, 0.0, 0.0, 3.0, 0.0, 0.0}, q[2] = {1.0, -1.0},
           r[2] = {1.5, 2.0};
    double pt[3] = {1.0, 2.0, 2.0}, phi;
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, r);
    elec_mdh_params p;
    elec_error err;
    /* by hand: r1 = 3, r2 = sqrt(4 + 4 + 4) = sqrt(12); kappa = 0.2:
       phi = 1 e^{-0.2 (3 - 1.5)} / (1.3 * 3)
             - e^{-0.2 (sqrt 12 - 2)} / (1.4 sqrt 12) */
    double want = exp(-0.2 * 1.5) / (1.3 * 3.0) -
                  exp(-0.2 * (sqrt(12.0) - 2.0)) / (1.4 * sqrt(12.0));
    memset(&p, 0, sizeof p);
    p.kappa = 0.2;
    EXPECT(elec_cpu_mdh_points_double(&atoms, pt, 1, &p, &phi, &err) ==
               ELEC_OK,
           "%s", err.message);
    /* same formula, different rounding order: 1e-12 relative */
    EXPECT(fabs(phi - want) <= 1e-12 * fabs(want), "%.17g vs %.17g", phi,
           want);
}

TEST(mdh_without_screening_is_dcs) {
    test_system s = test_system_random(300, 10.0, 4);
    elec_atoms atoms = test_system_atoms(&s);
    elec_lattice l = test_lattice_cube(6, -2.0, 2.8);
    size_t n = elec_lattice_face_count(&l), p;
    double *xyz = (double *)malloc(3 * n * sizeof *xyz);
    double *mdh = (double *)malloc(n * sizeof *mdh),
           *dcs = (double *)malloc(n * sizeof *dcs);
    elec_mdh_params mp;
    elec_error err;
    memset(&mp, 0, sizeof mp);
    elec_lattice_face_points(&l, xyz, NULL);
    EXPECT(elec_cpu_mdh_points_double(&atoms, xyz, n, &mp, mdh, &err) ==
               ELEC_OK,
           "%s", err.message);
    EXPECT(elec_cpu_dcs_points_double(&atoms, xyz, n, NULL, dcs, &err) ==
               ELEC_OK,
           "%s", err.message);
    /* kappa 0: exp(0) = 1 and 1 + 0 sigma = 1 exactly, so q/r in another
       order of operations: 1e-12 relative to the scale of the sum */
    for (p = 0; p < n; p++)
        EXPECT(fabs(mdh[p] - dcs[p]) <= 1e-12 * (fabs(dcs[p]) + 1.0),
               "point %zu: %.17g vs %.17g", p, mdh[p], dcs[p]);
    free(xyz);
    free(mdh);
    free(dcs);
    test_system_free(&s);
}

TEST(mdh_float_matches_double_on_water_faces) {
    test_system s = test_system_water(TEST_WATER_MOLECULES, 5);
    elec_atoms atoms = test_system_atoms(&s);
    elec_lattice l;
    size_t n, p;
    double *xyz, *ref;
    float *got;
    elec_mdh_params mp, mp_resolved;
    elec_error err;
    double rel;
    EXPECT(elec_lattice_around(&atoms, 1.0, 10.0, &l, &err) == ELEC_OK, "%s",
           err.message);
    n = elec_lattice_face_count(&l);
    xyz = (double *)malloc(3 * n * sizeof *xyz);
    ref = (double *)malloc(n * sizeof *ref);
    got = (float *)malloc(n * sizeof *got);
    elec_lattice_face_points(&l, xyz, NULL);
    memset(&mp, 0, sizeof mp);
    mp.ionic_strength = 0.15; /* kappa resolved from I, about 0.126 /A */
    mp.scale = elec_kT_scale(298.15);
    EXPECT(elec_cpu_mdh_points_double(&atoms, xyz, n, &mp, ref, &err) ==
               ELEC_OK,
           "%s", err.message);
    EXPECT(elec_cpu_mdh_points(&atoms, xyz, n, &mp, got, &err) == ELEC_OK,
           "%s", err.message);
    rel = test_rel_rms_float(got, ref, n);
    EXPECT(elec_mdh_params_resolve(&mp, &mp_resolved, &err) == ELEC_OK, "%s", err.message);
    printf("     MDH water: %zu atoms, %zu face points, kappa %.4f /A, "
           "float vs double rel RMS %.2e\n",
           s.count, n, mp_resolved.kappa, rel);
    /* as TEST_FLOAT_REL_RMS, with expf adding one more float rounding per term */
    EXPECT(rel <= TEST_FLOAT_REL_RMS, "rel RMS %.3e", rel);
    /* the ionic strength is used: the screened potential must differ from
       the unscreened one */
    mp.ionic_strength = 0.0;
    EXPECT(elec_cpu_mdh_points(&atoms, xyz, n, &mp, got, &err) == ELEC_OK,
           "%s", err.message);
    for (p = 0; p < n; p++)
        if (fabs(got[p] - ref[p]) > 1e-3 * fabs(ref[p])) break;
    EXPECT(p < n, "ionic strength 0.15 M had no effect");
    free(xyz);
    free(ref);
    free(got);
    test_system_free(&s);
}

TEST(mdh_refuses_screening_whose_sum_leaves_the_float_range) {
    /* kappa 50 /A (a Debye length of 0.02 A) with a 2 A radius: at 0.1 A
       from the atom the term is e^(50 x 1.9) = e^95 / 101, past FLT_MAX
       (e^88.7).  The float path used to return ELEC_OK with inf in the
       result; it now refuses before computing.  The double path holds it
       (e^95 is far inside double's range) and gives the exact term. */
    double xyz[3] = {0.0, 0.0, 0.0}, q = 1.0, radius = 2.0;
    double pts[6] = {0.1, 0.0, 0.0, 5.0, 0.0, 0.0}, phi[2];
    float phif[2] = {0.0f, 0.0f};
    elec_atoms atom = elec_atoms_from_xyz(1, xyz, &q, &radius);
    elec_mdh_params mp;
    elec_error err;
    elec_status s;
    memset(&mp, 0, sizeof mp);
    mp.kappa = 50.0;
    s = elec_cpu_mdh_points(&atom, pts, 2, &mp, phif, &err);
    EXPECT(s == ELEC_ERR_INVALID_ARG && strstr(err.message, "kappa"),
           "float MDH at kappa 50: status %d (%s), values %g %g", (int)s,
           err.message, phif[0], phif[1]);
    s = elec_cpu_mdh_points_double(&atom, pts, 2, &mp, phi, &err);
    EXPECT(s == ELEC_OK, "double MDH at kappa 50: %s", err.message);
    /* the points are re-centred before the sum: r to a few 1e-16, times
       kappa = 50 in the exponent, is 1e-14 relative; 1e-12 holds it */
    if (s == ELEC_OK)
        EXPECT(isfinite(phi[0]) &&
                   fabs(phi[0] - elec_mdh_term(1.0, 2.0, 50.0, 0.1)) <=
                       1e-12 * elec_mdh_term(1.0, 2.0, 50.0, 0.1),
               "double MDH at 0.1 A: %.17g, want %.17g", phi[0],
               elec_mdh_term(1.0, 2.0, 50.0, 0.1));
    /* kappa sigma past double's exponent range: refused by both */
    mp.kappa = 400.0;
    s = elec_cpu_mdh_points_double(&atom, pts, 2, &mp, phi, &err);
    EXPECT(s == ELEC_ERR_INVALID_ARG, "double MDH at kappa 400: status %d", (int)s);
    /* strong but physical screening (10 M salt, kappa ~1 /A) computes */
    memset(&mp, 0, sizeof mp);
    mp.ionic_strength = 10.0;
    s = elec_cpu_mdh_points(&atom, pts, 2, &mp, phif, &err);
    EXPECT(s == ELEC_OK && test_all_finite_float(phif, 2),
           "float MDH at 10 M: status %d (%s)", (int)s, err.message);
}

/* A kappa that overflows from finite inputs (ionic strength 1e300 M, or
   1e-300 K) is refused naming those inputs; it said "kappa inf must be
   zero or positive" of a kappa nobody gave (an audit's finding). */
/* An atom so far that its r^2 passes the type's range adds nothing, at
   any kappa: with kappa 0, exp(-0 inf) made the float and double sums NaN
   and the call refused them as "past float's range" (an audit: an atom
   1e20 A out in float, 1e160 A in double). */
TEST(mdh_far_atoms_add_nothing_at_any_kappa) {
    double xyz[6] = {3.0, 0.0, 0.0, 1e20, 0.0, 0.0}, q[2] = {1.0, 1.0}, r[2] = {1.5, 1.5};
    const double pt[3] = {0.0, 0.0, 0.0}, kappas[2] = {0.0, 0.1};
    int k;
    for (k = 0; k < 2; k++) {
        const double kappa = kappas[k];
        const double want = exp(-kappa * 1.5) / ((1.0 + 1.5 * kappa) * 3.0);
        elec_mdh_params p;
        elec_error err;
        elec_atoms atoms;
        double phi = 0.0;
        float phif = 0.0f;
        memset(&p, 0, sizeof p);
        p.kappa = kappa;
        xyz[3] = 1e20;
        atoms = elec_atoms_from_xyz(2, xyz, q, r);
        EXPECT(elec_cpu_mdh_points(&atoms, pt, 1, &p, &phif, &err) == ELEC_OK &&
                   fabs(phif - want) <= 1e-6 * want,
               "float, kappa %g: %.7g, want %.7g (%s)", kappa, phif, want, err.message);
        xyz[3] = 1e160;
        atoms = elec_atoms_from_xyz(2, xyz, q, r);
        EXPECT(elec_cpu_mdh_points_double(&atoms, pt, 1, &p, &phi, &err) == ELEC_OK &&
                   fabs(phi - want) <= 1e-14 * want,
               "double, kappa %g: %.17g, want %.17g (%s)", kappa, phi, want, err.message);
    }
}

TEST(mdh_names_the_inputs_of_an_overflowing_kappa) {
    elec_mdh_params in, out;
    elec_error err;
    memset(&in, 0, sizeof in);
    in.ionic_strength = 1e300;
    EXPECT(elec_mdh_params_resolve(&in, &out, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "ionic strength 1e+300 M") &&
               strstr(err.message, "past double's range"),
           "ionic strength 1e300: %s", err.message);
    in.ionic_strength = 0.1;
    in.temperature = 1e-300;
    EXPECT(elec_mdh_params_resolve(&in, &out, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "1e-300 K"),
           "1e-300 K: %s", err.message);
    in.temperature = 0.0;
    in.ionic_strength = HUGE_VAL; /* an input not finite: named as such */
    EXPECT(elec_mdh_params_resolve(&in, &out, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "ionic strength inf must be"),
           "ionic strength inf: %s", err.message);
    memset(&in, 0, sizeof in);
    in.kappa = HUGE_VAL;
    EXPECT(elec_mdh_params_resolve(&in, &out, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "kappa inf is not finite"),
           "kappa inf: %s", err.message);
}

int main(void) {
    RUN(mdh_double_matches_hand_sum);
    RUN(mdh_without_screening_is_dcs);
    RUN(mdh_float_matches_double_on_water_faces);
    RUN(mdh_refuses_screening_whose_sum_leaves_the_float_range);
    RUN(mdh_names_the_inputs_of_an_overflowing_kappa);
    RUN(mdh_far_atoms_add_nothing_at_any_kappa);
    return test_summary();
}
