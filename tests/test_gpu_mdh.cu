/* tests/test_gpu_mdh.cu - MDH on the GPU against the CPU's double-precision
   MDH: lattice faces of a water box, an atom on a point, and screening
   past float's range refused.  Without a GPU each test skips and says so;
   `make test-gpu` sets ELEC_REQUIRE_GPU=1, and then a missing GPU is a
   failure. */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "elec_cuda.cuh"
#include "tests/test.h"
#include "tests/systems.h"
#include "tests/gpu.h"

/* Deliberate pair (a scan for repeated blocks lists it): DCS's points test in
   test_gpu_dcs.cu with MDH's screening: the ladder's rungs tested alike.
   On one GPU, then spread over GPUs (three parts; gpu_three_parts): each
   part's run of the points, by its own regions, relative to its own
   centre; the same values as one GPU to float rounding (both within the
   float budget of the double sum), every point written; a point that is
   not finite named by the caller's index, checked before the parts. */
TEST(mdh_at_lattice_faces_matches_double_reference) {
    REQUIRE_GPU();
    test_system water = test_system_water(3000, 3);
    elec_atoms atoms = test_system_atoms(&water);
    elec_lattice l = test_lattice_awkward(water.box[0]);
    size_t n = elec_lattice_face_count(&l);
    double *xyz = (double *)malloc(3 * n * sizeof *xyz), *ref = (double *)malloc(n * sizeof *ref);
    float *one = (float *)malloc(n * sizeof *one), *spread = (float *)malloc(n * sizeof *spread);
    int devices[3];
    elec_mdh_params p = {0};
    elec_error err;
    elec_lattice_face_points(&l, xyz, NULL);
    p.ionic_strength = 0.15;
    EXPECT(elec_cpu_mdh_points_double(&atoms, xyz, n, &p, ref, &err) == ELEC_OK, "%s", err.message);
    EXPECT(elec_cuda_mdh_points(&atoms, xyz, n, &p, one, &err) == ELEC_OK, "%s", err.message);
    /* The same float budget as DCS, plus ex2.approx's 2^-22 per term. */
    double e = test_rel_rms_float(one, ref, n);
    printf("     relative RMS error %.2e over %zu face points\n", e, n);
    EXPECT(e <= GPU_REL_RMS_TOLERANCE, "relative RMS %.3e", e);
    for (size_t i = 0; i < n; i++) spread[i] = NAN;
    p.gpus = gpu_three_parts(devices);
    EXPECT(elec_cuda_mdh_points(&atoms, xyz, n, &p, spread, &err) == ELEC_OK, "%s",
           err.message);
    EXPECT(test_all_finite_float(spread, n), "a point not written");
    printf("     %zu points in 3 parts on GPUs %d, %d, %d: relative RMS %.2e against one GPU, "
           "%.2e against double\n", n, devices[0], devices[1], devices[2],
           gpu_rel_rms_float(spread, one, n), test_rel_rms_float(spread, ref, n));
    EXPECT(gpu_rel_rms_float(spread, one, n) <= GPU_REL_RMS_TOLERANCE, "against one GPU %.3e",
           gpu_rel_rms_float(spread, one, n));
    EXPECT(test_rel_rms_float(spread, ref, n) <= GPU_REL_RMS_TOLERANCE, "against double %.3e",
           test_rel_rms_float(spread, ref, n));
    xyz[3 * (n - 1) + 1] = NAN; /* the last point: the last part's */
    EXPECT(elec_cuda_mdh_points(&atoms, xyz, n, &p, spread, &err) == ELEC_ERR_INVALID_ARG,
           "a NaN point accepted");
    {
        char want[64];
        snprintf(want, sizeof want, "point %zu ", n - 1);
        EXPECT(strstr(err.message, want) != NULL, "'%s' does not name %s", err.message, want);
    }
    free(xyz);
    free(ref);
    free(one);
    free(spread);
    test_system_free(&water);
}

TEST(mdh_atom_on_a_point_leaves_that_point_finite) {
    REQUIRE_GPU();
    /* An atom exactly on a point: r^2 = 0, rsqrt(0) = inf.  The coincident
       rule must give that point the sum over the other atoms, not
       0 * inf = NaN.  Float terms with rsqrt.approx and ex2.approx: a few
       float ulps each, 1e-5 relative covers two terms. */
    double xyz[9] = {2.0, 3.5, 3.5, 0.3, 0.7, 0.2, 4.1, 3.3, 2.9};
    double q[3] = {1.0, -0.5, 0.25}, radius[3] = {1.5, 1.8, 2.0};
    double pts[6] = {2.0, 3.5, 3.5, 1.0, 1.0, 1.0}, want = 0.0;
    elec_atoms atoms = elec_atoms_from_xyz(3, xyz, q, radius);
    elec_mdh_params p = {0};
    elec_error err;
    float got[2] = {NAN, NAN};
    p.kappa = 0.1;
    for (int a = 1; a < 3; a++)
        want += elec_mdh_term(q[a], radius[a], 0.1, sqrt(elec_distance2(pts, xyz + 3 * a)));
    elec_status s = elec_cuda_mdh_points(&atoms, pts, 2, &p, got, &err);
    EXPECT(s == ELEC_OK, "%s", err.message);
    EXPECT(test_all_finite_float(got, 2), "values %g %g", got[0], got[1]);
    EXPECT(fabs(got[0] - want) <= 1e-5 * fabs(want), "%.9g at the atom, want %.9g",
           got[0], want);
}

TEST(mdh_refuses_screening_whose_sum_leaves_the_float_range) {
    REQUIRE_GPU();
    /* As the CPU test: kappa 50 /A and a 2 A radius make e^95 at 0.1 A,
       past float; refused before any GPU work instead of inf in the map. */
    double xyz[3] = {0.0, 0.0, 0.0}, q = 1.0, radius = 2.0;
    double pts[6] = {0.1, 0.0, 0.0, 5.0, 0.0, 0.0};
    float got[2] = {0.0f, 0.0f};
    elec_atoms atom = elec_atoms_from_xyz(1, xyz, &q, &radius);
    elec_mdh_params p = {0};
    elec_error err;
    p.kappa = 50.0;
    elec_status s = elec_cuda_mdh_points(&atom, pts, 2, &p, got, &err);
    EXPECT(s == ELEC_ERR_INVALID_ARG && strstr(err.message, "kappa"),
           "status %d (%s), values %g %g", (int)s, err.message, got[0], got[1]);
}

/* An atom so far that its r^2 passes float's range adds nothing, at any
   kappa: rsqrt gave 0 and r2 rinv NaN, and the sum came out NaN (refused
   as past float's range; the CPU's float path erred so at kappa 0, an
   audit). */
TEST(mdh_far_atoms_add_nothing_at_any_kappa) {
    REQUIRE_GPU();
    const double xyz[6] = {3.0, 0.0, 0.0, 1e20, 0.0, 0.0}, q[2] = {1.0, 1.0},
                 r[2] = {1.5, 1.5};
    const double pt[3] = {0.0, 0.0, 0.0}, kappas[2] = {0.0, 0.1};
    const elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, r);
    for (int k = 0; k < 2; k++) {
        const double want = exp(-kappas[k] * 1.5) / ((1.0 + 1.5 * kappas[k]) * 3.0);
        elec_mdh_params p;
        elec_error err;
        float phi = 0.0f;
        memset(&p, 0, sizeof p);
        p.kappa = kappas[k];
        EXPECT(elec_cuda_mdh_points(&atoms, pt, 1, &p, &phi, &err) == ELEC_OK &&
                   fabs(phi - want) <= 1e-6 * want,
               "kappa %g: %.7g, want %.7g (%s)", kappas[k], phi, want, err.message);
    }
}

int main(void) {
    gpu_test_start();
    RUN(mdh_at_lattice_faces_matches_double_reference);
    RUN(mdh_atom_on_a_point_leaves_that_point_finite);
    RUN(mdh_refuses_screening_whose_sum_leaves_the_float_range);
    RUN(mdh_far_atoms_add_nothing_at_any_kappa);
    return gpu_test_summary();
}
