/* GPU MSM maps (elec_cuda_msm_map) against the CPU's double-precision MSM
   (elec_cpu_msm_map_double's stages, through elec_cpu_msm_points at the
   map's points) and against the exact direct sum: every interpolation
   order, other cutoffs and spacings, an overfull bin, far-away atoms, an
   empty system, stage times, bad input and charges past float's range.
   Without a GPU each GPU test skips and says so; `make test-gpu` sets
   ELEC_REQUIRE_GPU=1, and then a missing GPU is a failure. */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "elec_cuda.cuh"
#include "tests/test.h"
#include "tests/systems.h"
#include "tests/gpu.h"

#include <algorithm>
#include <chrono>

/* The GPU computes every stage in float, the CPU in double, with the same
   method, so the two differ by rounding alone: the short range as the
   cutoff map's 1e-5 (tests/test_gpu_cutoff.cu), the lattice sums of up to
   (2 * 12/2 + 1)^3 = 15,625 terms each at sqrt(15625) ulp = 7.5e-6 of the
   lattice potential, the rest far below.  2e-5 relative RMS holds that with
   margin and still catches any wrong weight, index or level (each worth
   1e-3 or more). */
#define GPU_VS_CPU_TOLERANCE 2e-5
/* msmpot's target for its defaults (issue: 0.5 % relative error). */
#define MSMPOT_TARGET 5e-3

/* 41 x 37 x 29 points over the box +-4 A, a quarter spacing off the atoms'
   grid (no count a multiple of any block). */
static elec_lattice awkward_lattice(const double box[3]) {
    const int dims[3] = {41, 37, 29};
    return test_lattice_around(box, dims, 4.0);
}

/* The CPU MSM at the map's points, in double. */
static double *cpu_msm(const elec_atoms *atoms, const elec_lattice *l,
                       const elec_msm_params *p) {
    size_t n = elec_lattice_size(l);
    double *points = (double *)malloc(3 * n * sizeof *points);
    double *phi = (double *)malloc(n * sizeof *phi);
    elec_error err;
    for (size_t i = 0; i < n; i++)
        elec_lattice_point(l, (int)(i % l->dims[0]), (int)(i / l->dims[0] % l->dims[1]),
                           (int)(i / l->dims[0] / l->dims[1]), points + 3 * i);
    EXPECT(elec_cpu_msm_points(atoms, points, n, p, phi, &err) == ELEC_OK, "CPU MSM: %s",
           err.message);
    free(points);
    return phi;
}

/* On a mismatch, which part differs: the short range alone (GPU cutoff
   map against the CPU's double one) or the rest. */
static void explain(const elec_atoms *atoms, const elec_lattice *l, const elec_msm_params *p,
                    const float *map, const double *ref) {
    elec_msm_params r;
    EXPECT(elec_msm_params_resolve(p, 0.0, &r, NULL) == ELEC_OK, "explain: params refused");
    elec_cutoff_params cp = {0};
    size_t n = elec_lattice_size(l);
    float *gpu_short = (float *)malloc(n * sizeof *gpu_short);
    double *cpu_short = (double *)malloc(n * sizeof *cpu_short);
    double d2 = 0.0, m2 = 0.0;
    elec_error err;
    cp.scale = r.scale;
    cp.cutoff = r.cutoff;
    cp.splitting = r.splitting;
    if (elec_cuda_cutoff_map(atoms, l, &cp, gpu_short, &err) == ELEC_OK &&
        elec_cpu_cutoff_map_double(atoms, l, &cp, cpu_short, &err) == ELEC_OK) {
        printf("     short range alone: GPU vs CPU %.2e\n",
               test_rel_rms_float(gpu_short, cpu_short, n));
        for (size_t i = 0; i < n; i++) {
            double long_gpu = (double)map[i] - gpu_short[i], long_cpu = ref[i] - cpu_short[i];
            d2 += (long_gpu - long_cpu) * (long_gpu - long_cpu);
            m2 += long_cpu * long_cpu;
        }
        printf("     long range alone: GPU vs CPU %.2e\n", sqrt(d2 / m2));
    }
    free(gpu_short);
    free(cpu_short);
}

/* GPU map vs the CPU's MSM; returns the relative RMS difference (and the
   GPU map in *out when wanted). */
static double gpu_vs_cpu(const elec_atoms *atoms, const elec_lattice *l,
                         const elec_msm_params *p, const char *what, float **out) {
    size_t n = elec_lattice_size(l);
    float *map = (float *)malloc(n * sizeof *map);
    double *ref = cpu_msm(atoms, l, p), e = INFINITY;
    elec_error err;
    for (size_t i = 0; i < n; i++) map[i] = NAN; /* every point must be written */
    elec_status s = elec_cuda_msm_map(atoms, l, p, map, &err);
    EXPECT(s == ELEC_OK, "%s: %s", what, err.message);
    if (s == ELEC_OK) {
        e = test_rel_rms_float(map, ref, n);
        printf("     %-22s GPU vs CPU MSM %.2e (max |diff| %.2e)\n", what, e,
               test_max_abs_diff_float(map, ref, n));
        EXPECT(test_all_finite_float(map, n), "%s: map not finite", what);
        EXPECT(e <= GPU_VS_CPU_TOLERANCE, "%s: relative RMS %.3e", what, e);
        if (e > GPU_VS_CPU_TOLERANCE) explain(atoms, l, p, map, ref);
    }
    free(ref);
    if (out) *out = map;
    else free(map);
    return e;
}

TEST(gpu_msm_forces_meet_the_tolerance_for_few_dilute_or_cancelling_ions) {
    /* tests/test_tolerance.c's check on the device: two ions 80 A apart,
       a line of 20 alternating ions 10 A apart and eight ions in a 60 A
       cube, whose non-periodic forces erred 2 to 28 times the tolerance
       before the energy calls checked them on a sample against the direct
       sum (elec__msm_energy_checked).  At 1e-3 each must come within it;
       at 1e-4, within it or refused by name (ELEC_ERR_UNSUPPORTED, the
       sample's error named), where meeting it would take the GPU past its
       float floor (1e-5). */
    REQUIRE_GPU();
    static const double tolerances[2] = {1e-3, 1e-4};
    test_sparse_ions cases[3];
    test_sparse_ion_cases(cases);
    for (int c = 0; c < 3; c++) {
        const char *name = cases[c].name;
        const size_t n = cases[c].n;
        const double *xyz = cases[c].xyz, *q = cases[c].q;
        elec_atoms atoms = elec_atoms_from_xyz(n, xyz, q, NULL);
        double f[60], exact[60], energy;
        elec_error err;
        EXPECT(elec_cpu_coulomb_energy(&atoms, 1.0, &energy, exact, &err) == ELEC_OK, "%s",
               err.message);
        for (int k = 0; k < 2; k++) {
            elec_msm_params p = {0};
            p.tolerance = tolerances[k];
            const elec_status status = elec_cuda_msm_energy(&atoms, &p, &energy, f, &err);
            if (status == ELEC_OK) {
                const double e = test_rel_rms(f, exact, 3 * n);
                printf("     %s, T %.0e: forces %.2f of it\n", name, tolerances[k],
                       e / tolerances[k]);
                EXPECT(e <= tolerances[k], "%s: forces %.3e > %g", name, e, tolerances[k]);
            } else {
                printf("     %s, T %.0e: refused (%s)\n", name, tolerances[k], err.message);
                EXPECT(k == 1 && status == ELEC_ERR_UNSUPPORTED &&
                           strstr(err.message, "direct sums") != NULL,
                       "%s, T %g: %s", name, tolerances[k], err.message);
            }
        }
    }
}

/* Deliberate pair (a scan for repeated blocks lists it): the same three seeded
   systems as test_gpu_cutoff.cu's first test; tests read like specifications. */
TEST(gpu_msm_matches_cpu_msm_and_the_exact_sum) {
    REQUIRE_GPU();
    test_system random = test_system_random(3000, 30.0, 71);
    test_system water = test_system_water(800, 72);
    test_system salt = test_system_nacl(3, 5.64);
    test_system *systems[3] = {&random, &water, &salt};
    const char *names[3] = {"random", "water", "NaCl"};
    test_system_make_neutral(&random);
    for (int s = 0; s < 3; s++) {
        elec_atoms atoms = test_system_atoms(systems[s]);
        elec_lattice l = awkward_lattice(systems[s]->box);
        size_t n = elec_lattice_size(&l);
        double *exact = (double *)malloc(n * sizeof *exact);
        float *map = NULL;
        elec_error err;
        gpu_vs_cpu(&atoms, &l, NULL, names[s], &map); /* the defaults */
        EXPECT(elec_cpu_dcs_map_double(&atoms, &l, NULL, exact, &err) == ELEC_OK, "%s",
               err.message);
        if (map) {
            double e = test_rel_rms_float(map, exact, n);
            printf("     %-22s GPU MSM vs exact sum %.2e\n", names[s], e);
            EXPECT(e <= MSMPOT_TARGET, "%s: %.3e against the exact sum", names[s], e);
        }
        free(map);
        free(exact);
    }
    test_system_free(&random);
    test_system_free(&water);
    test_system_free(&salt);
}

/* Spread over GPUs (three parts; gpu_three_parts): each GPU builds the
   whole map's hierarchy from every atom (replicated) and maps a slab of z
   planes, its short range and its interpolation; the CPU's MSM as one
   GPU's map meets it, one GPU's map to float rounding (its z weights and
   short range taken from the slab's planes and centre), ions on points
   in every slab taken back; the timed call gives the first GPU's stages
   inside the whole call's total. */
TEST(gpu_msm_map_spread_over_gpus_matches_one_gpu) {
    REQUIRE_GPU();
    test_system water = test_system_water(800, 77);
    const double a = 5.64, h = a / 4.0;
    test_system salt = test_system_nacl(3, a);
    test_system *systems[2] = {&water, &salt};
    const char *names[2] = {"water in 3 parts", "ions on points, 3 parts"};
    int devices[3];
    for (int s = 0; s < 2; s++) {
        elec_atoms atoms = test_system_atoms(systems[s]);
        elec_lattice l = awkward_lattice(systems[s]->box);
        if (s == 1) {
            const elec_lattice on_ions = {{21, 21, 21}, {-4.0 * h, -4.0 * h, -4.0 * h},
                                          {h, h, h}};
            l = on_ions;
        }
        size_t n = elec_lattice_size(&l);
        float *one = (float *)malloc(n * sizeof *one), *spread = NULL;
        elec_msm_params p = {0};
        elec_stage_times t;
        elec_error err;
        EXPECT(elec_cuda_msm_map(&atoms, &l, &p, one, &err) == ELEC_OK, "%s", err.message);
        p.gpus = gpu_three_parts(devices);
        gpu_vs_cpu(&atoms, &l, &p, names[s], &spread);
        if (spread) {
            const double e = gpu_rel_rms_float(spread, one, n);
            printf("     %-22s on GPUs %d, %d, %d against one GPU %.2e\n", names[s], devices[0],
                   devices[1], devices[2], e);
            EXPECT(e <= GPU_REL_RMS_TOLERANCE, "%s: against one GPU %.3e", names[s], e);
        }
        /* timed, on this map and on one of two planes, whose first part has
           none (elec_slab_partition): the stages of the first part with
           planes, each measured (the times start as NaN) */
        for (int thin = 0; thin < 2; thin++) {
            elec_lattice timed = l;
            int measured = 1;
            if (thin) timed.dims[2] = 2;
            memset(&t, 0xff, sizeof t); /* NaN in every second */
            EXPECT(elec_cuda_msm_map_timed(&atoms, &timed, &p, spread, &t, &err) == ELEC_OK,
                   "%s", err.message);
            for (int m = 0; m < 9; m++) measured &= t.seconds[m] >= 0.0;
            EXPECT(t.count == 9 && measured && elec_stage_seconds(&t, "short range") > 0.0 &&
                       elec_stage_seconds(&t, "lattice cutoff") > 0.0,
                   "%s timed on %d planes: %d stages, short range %g s, lattice cutoff %g s",
                   names[s], timed.dims[2], t.count, elec_stage_seconds(&t, "short range"),
                   elec_stage_seconds(&t, "lattice cutoff"));
        }
        free(one);
        free(spread);
    }
    test_system_free(&water);
    test_system_free(&salt);
}

TEST(every_order_and_other_parameters_match_the_cpu) {
    /* Each order has its own kernels (2s weights per axis); other cutoffs,
       spacings, splittings, a small top lattice (more levels) and a scale
       change the stencil, the level count and the arguments. */
    REQUIRE_GPU();
    test_system sys = test_system_random(2000, 30.0, 73);
    elec_atoms atoms = test_system_atoms(&sys);
    elec_lattice l = awkward_lattice(sys.box);
    test_system_make_neutral(&sys);
    for (int order = ELEC_MSM_CUBIC; order <= ELEC_MSM_NONIC; order++) {
        elec_msm_params p = {0};
        char what[40];
        p.interpolation = (elec_msm_interpolation)order;
        p.splitting = order + 2;
        snprintf(what, sizeof what, "order %d, C%d", 2 * elec_msm_support(order), order + 2);
        gpu_vs_cpu(&atoms, &l, &p, what, NULL);
    }
    {
        const double cutoff[3] = {8.0, 10.0, 12.0}, spacing[3] = {1.5, 2.5, 2.0};
        const int top[3] = {0, 0, 8};
        for (int c = 0; c < 3; c++) {
            elec_msm_params p = {0};
            char what[40];
            p.cutoff = cutoff[c];
            p.spacing = spacing[c];
            p.max_top_points = top[c];
            p.splitting = c + 1;
            p.scale = c == 2 ? ELEC_COULOMB : 0.0;
            snprintf(what, sizeof what, "a=%g h=%g C%d top %d", cutoff[c], spacing[c], c + 1,
                     top[c]);
            gpu_vs_cpu(&atoms, &l, &p, what, NULL);
        }
    }
    test_system_free(&sys);
}

TEST(overfull_bins_and_far_atoms_are_summed) {
    /* 300 atoms within 0.15 A of one point overfill their bin (the
       overflow layers and the host), and a few atoms 20-40 A beyond the
       map stretch the hierarchy, which must reach them; atoms 1e4 A away
       would need a lattice of 10^11 points: refused, with the reason. */
    REQUIRE_GPU();
    test_system sys = test_system_random(2300, 30.0, 74);
    test_rng rng = test_rng_seeded(75);
    elec_lattice l = awkward_lattice(sys.box);
    double centre[3];
    float *map = (float *)malloc(elec_lattice_size(&l) * sizeof *map);
    elec_error err;
    elec_lattice_point(&l, 7, 9, 11, centre);
    for (size_t i = 0; i < 300; i++)
        for (int axis = 0; axis < 3; axis++)
            sys.xyz[3 * i + axis] = centre[axis] + 0.25 * l.spacing[axis] +
                                    0.3 * (test_uniform(&rng) - 0.5);
    for (size_t i = 300; i < 304; i++)
        for (int axis = 0; axis < 3; axis++)
            sys.xyz[3 * i + axis] = i % 2 ? -20.0 - 20.0 * test_uniform(&rng)
                                          : 50.0 + 20.0 * test_uniform(&rng);
    test_system_make_neutral(&sys);
    elec_atoms atoms = test_system_atoms(&sys);
    elec_msm_params p = {0};
    p.max_top_points = 512;
    gpu_vs_cpu(&atoms, &l, &p, "overfull + far", NULL);
    sys.xyz[0] = sys.xyz[1] = sys.xyz[2] = 1e4;
    EXPECT(elec_cuda_msm_map(&atoms, &l, &p, map, &err) == ELEC_ERR_UNSUPPORTED,
           "an atom 1e4 A away: %s", err.message);
    printf("     an atom 1e4 A away: %s\n", err.message);
    free(map);
    test_system_free(&sys);
}

TEST(atoms_on_map_points_follow_the_coincident_rule) {
    /* A rock-salt crystal on a lattice of a quarter cell: every ion sits on
       a map point.  There the ion's own term is left out, as in the exact
       sum; the lattices carry its smooth part gamma(r/a)/a (0.156 e/A at
       the defaults, a quarter of the potential there), so the map must
       take it back out, as the CPU does. */
    REQUIRE_GPU();
    const double a = 5.64, h = a / 4.0;
    test_system salt = test_system_nacl(3, a);
    elec_atoms atoms = test_system_atoms(&salt);
    elec_lattice l = {{21, 21, 21}, {-4.0 * h, -4.0 * h, -4.0 * h}, {h, h, h}};
    size_t n = elec_lattice_size(&l), on = 0;
    double *exact = (double *)malloc(n * sizeof *exact);
    float *map = NULL;
    double d2 = 0.0, m2 = 0.0;
    elec_error err;
    gpu_vs_cpu(&atoms, &l, NULL, "ions on points", &map);
    EXPECT(elec_cpu_dcs_map_double(&atoms, &l, NULL, exact, &err) == ELEC_OK, "%s",
           err.message);
    for (size_t c = 0; map && c < atoms.count; c++) {
        double x[3];
        size_t index = 0, stride = 1;
        for (int axis = 0; axis < 3; axis++) {
            x[axis] = salt.xyz[3 * c + axis];
            index += stride * (size_t)lround((x[axis] - l.origin[axis]) / h);
            stride *= (size_t)l.dims[axis];
        }
        d2 += ((double)map[index] - exact[index]) * ((double)map[index] - exact[index]);
        m2 += exact[index] * exact[index];
        on++;
    }
    if (map) {
        printf("     at the %zu ions: GPU MSM vs exact sum %.2e (relative RMS)\n", on,
               sqrt(d2 / m2));
        EXPECT(on == atoms.count && sqrt(d2 / m2) <= MSMPOT_TARGET,
               "at the ions: %.3e against the exact sum", sqrt(d2 / m2));
    }
    free(map);
    free(exact);
    test_system_free(&salt);
}

TEST(an_empty_system_gives_a_zero_map) {
    REQUIRE_GPU();
    elec_atoms atoms = elec_atoms_from_xyz(0, NULL, NULL, NULL);
    elec_lattice l = {{13, 9, 17}, {0, 0, 0}, {0.5, 0.7, 0.3}};
    size_t n = elec_lattice_size(&l), nonzero = 0;
    float *map = (float *)malloc(n * sizeof *map);
    elec_error err;
    for (size_t i = 0; i < n; i++) map[i] = NAN;
    EXPECT(elec_cuda_msm_map(&atoms, &l, NULL, map, &err) == ELEC_OK, "%s", err.message);
    for (size_t i = 0; i < n; i++) nonzero += map[i] != 0.0f;
    EXPECT(nonzero == 0, "%zu nonzero points without atoms", nonzero);
    free(map);
}

TEST(a_map_past_floats_range_is_refused) {
    REQUIRE_GPU();
    /* Charges of 1e308 e (test_huge_charges) are inf in float: the map,
       timed or not, fails naming the method, where it once came back
       ELEC_OK full of inf or NaN. */
    elec_atoms atoms = test_huge_charges();
    elec_lattice l = test_lattice_cube(6, 0.0, 1.0);
    float map[216];
    elec_stage_times times;
    elec_error err;
    elec_status s = elec_cuda_msm_map(&atoms, &l, NULL, map, &err);
    EXPECT(test_refused_past_range(s, &err, "GPU MSM map", "float"), "status %d, %s", (int)s,
           err.message);
    s = elec_cuda_msm_map_timed(&atoms, &l, NULL, map, &times, &err);
    EXPECT(test_refused_past_range(s, &err, "GPU MSM map", "float"), "timed: status %d, %s",
           (int)s, err.message);
    /* a map large enough to come back in chunks, scanned as they arrive:
       the first value that is not finite is named (point 0 here, the long
       range reaching every point; test_gpu_cutoff.cu places the first
       in later chunks, and the test below merges the take-back's) */
    {
        elec_lattice big = {{232, 236, 240}, {0.0, 0.0, 0.0}, {0.5, 0.5, 0.5}};
        const size_t n = elec_lattice_size(&big);
        float *large = (float *)malloc(n * sizeof *large);
        size_t first = 0, named = SIZE_MAX;
        s = elec_cuda_msm_map(&atoms, &big, NULL, large, &err);
        EXPECT(test_refused_past_range(s, &err, "GPU MSM map", "float"),
               "staged: status %d, %s", (int)s, err.message);
        while (first < n && large[first] - large[first] == 0.0f) first++;
        EXPECT(sscanf(err.message, "GPU MSM map: point %zu", &named) == 1 && named == first,
               "staged: named %zu, first %zu: %s", named, first, err.message);
        free(large);
    }
}

TEST(the_maps_check_merges_the_copy_backs_scan_and_the_take_back) {
    /* Host side, no GPU: elec__cutoff_first_bad names the smaller of the
       staged copy back's first bad point and the take-back's, scans the
       whole map where the copy was not staged, and the take-back names the
       first of its points it made past range. */
    float map[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    size_t index[2] = {6, 2};
    float value[2] = {INFINITY, 1.0f};
    elec__msm_take_back t;
    elec__cutoff_job job;
    memset(&t, 0, sizeof t);
    memset(&job, 0, sizeof job);
    t.count = 2;
    t.index = index;
    t.value = value;
    EXPECT(elec__msm_take_back_apply(&t, map) == 6 && map[2] == 3.0f,
           "the take-back's first bad point");
    job.scanned = 1;
    job.first_bad = SIZE_MAX;
    EXPECT(elec__cutoff_first_bad(&job, map, 8, 6) == 6, "the take-back's alone: %zu",
           elec__cutoff_first_bad(&job, map, 8, 6));
    map[4] = NAN; /* as the copy back's scan found it */
    job.first_bad = 4;
    EXPECT(elec__cutoff_first_bad(&job, map, 8, 6) == 4, "the smaller of the two: %zu",
           elec__cutoff_first_bad(&job, map, 8, 6));
    job.scanned = 0; /* not staged: the whole map, which finds 4 */
    EXPECT(elec__cutoff_first_bad(&job, map, 8, SIZE_MAX) == 4, "the whole map: %zu",
           elec__cutoff_first_bad(&job, map, 8, SIZE_MAX));
    map[4] = 4.0f;
    map[6] = 6.0f;
    EXPECT(elec__cutoff_first_bad(&job, map, 8, SIZE_MAX) == SIZE_MAX,
           "a finite map: point %zu named", elec__cutoff_first_bad(&job, map, 8, SIZE_MAX));
}

TEST(stage_times_fit_within_the_call) {
    /* The stages are timed by CUDA events, the call by the host clock;
       copy back is what is left.  Every stage must take time, none may be
       negative (events out of order), and the call's own total must match
       the test's clock around it. */
    REQUIRE_GPU();
    test_system sys = test_system_water(3000, 76);
    elec_atoms atoms = test_system_atoms(&sys);
    elec_lattice l = awkward_lattice(sys.box);
    float *map = (float *)malloc(elec_lattice_size(&l) * sizeof *map);
    elec_stage_times t;
    elec_msm_params p = {0};
    elec_error err;
    double gpu_stages, wall;
    auto started = std::chrono::steady_clock::now();
    EXPECT(elec_cuda_msm_map_timed(&atoms, &l, &p, map, &t, &err) == ELEC_OK, "%s",
           err.message);
    wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const double setup = elec_stage_seconds(&t, "setup"),
                 short_range = elec_stage_seconds(&t, "short range"),
                 anterpolation = elec_stage_seconds(&t, "anterpolation"),
                 restriction = elec_stage_seconds(&t, "restriction"),
                 lattice_cutoff = elec_stage_seconds(&t, "lattice cutoff"),
                 top = elec_stage_seconds(&t, "top"),
                 prolongation = elec_stage_seconds(&t, "prolongation"),
                 interpolation = elec_stage_seconds(&t, "interpolation"),
                 copy_back = elec_stage_seconds(&t, "copy back");
    EXPECT(t.count == 9, "%d stages, not the 9 the header lists", t.count);
    gpu_stages = short_range + anterpolation + restriction + lattice_cutoff + top +
                 prolongation + interpolation;
    printf("     stages: setup %.1f, short range %.2f, anterpolation %.2f, restriction %.2f,"
           " lattice cutoff %.2f, top %.2f, prolongation %.2f, interpolation %.2f,"
           " copy %.1f; total %.1f ms (test's clock %.1f ms)\n",
           1e3 * setup, 1e3 * short_range, 1e3 * anterpolation, 1e3 * restriction,
           1e3 * lattice_cutoff, 1e3 * top, 1e3 * prolongation, 1e3 * interpolation,
           1e3 * copy_back, 1e3 * t.total, 1e3 * wall);
    EXPECT(setup > 0.0 && short_range > 0.0 && anterpolation > 0.0 && restriction > 0.0 &&
               lattice_cutoff > 0.0 && top > 0.0 && prolongation > 0.0 &&
               interpolation > 0.0,
           "a stage took no time");
    EXPECT(setup + gpu_stages <= t.total && copy_back >= 0.0,
           "setup %.6f s + GPU stages %.6f s exceed the call's %.6f s", setup, gpu_stages,
           t.total);
    /* the call's clock stops before its cleanup (frees, stream teardown) */
    EXPECT(t.total <= wall && wall - t.total <= 0.1 * wall + 2e-3,
           "the call says %.6f s, the test saw %.6f s", t.total, wall);
    free(map);
    test_system_free(&sys);
}

/* GPU MSM energy and forces against the CPU's (same method, double):
   float rounding of ~700 short-range terms and of the lattice sums, as for
   maps: 2e-5 relative (energy; forces as RMS over the RMS force). */
#define ENERGY_TOLERANCE 2e-5

static void energy_vs_cpu(const elec_atoms *atoms, const elec_msm_params *p, const char *what) {
    size_t n = atoms->count;
    double *f_gpu = (double *)malloc(3 * n * sizeof *f_gpu);
    double *f_cpu = (double *)malloc(3 * n * sizeof *f_cpu);
    double e_gpu = 0.0, e_cpu = 0.0, d2 = 0.0, m2 = 0.0;
    elec_error err;
    EXPECT(elec_cpu_msm_energy(atoms, p, &e_cpu, f_cpu, &err) == ELEC_OK, "%s CPU: %s", what,
           err.message);
    EXPECT(elec_cuda_msm_energy(atoms, p, &e_gpu, f_gpu, &err) == ELEC_OK, "%s GPU: %s", what,
           err.message);
    for (size_t i = 0; i < 3 * n; i++) {
        d2 += (f_gpu[i] - f_cpu[i]) * (f_gpu[i] - f_cpu[i]);
        m2 += f_cpu[i] * f_cpu[i];
    }
    printf("     %-16s energy %.8f vs CPU %.8f (%.2e), forces %.2e\n", what, e_gpu, e_cpu,
           fabs(e_gpu - e_cpu) / fabs(e_cpu), sqrt(d2 / m2));
    EXPECT(fabs(e_gpu - e_cpu) <= ENERGY_TOLERANCE * fabs(e_cpu), "%s: energy %.10f vs %.10f",
           what, e_gpu, e_cpu);
    EXPECT(sqrt(d2 / m2) <= ENERGY_TOLERANCE, "%s: forces %.3e", what, sqrt(d2 / m2));
    free(f_gpu);
    free(f_cpu);
}

TEST(gpu_msm_energy_and_forces_match_the_cpu) {
    REQUIRE_GPU();
    test_system random = test_system_random(3000, 30.0, 81);
    test_system water = test_system_water(1000, 82);
    test_system salt = test_system_nacl(3, 5.64);
    elec_atoms atoms;
    test_system_make_neutral(&random);
    atoms = test_system_atoms(&random);
    energy_vs_cpu(&atoms, NULL, "random");
    atoms = test_system_atoms(&water);
    energy_vs_cpu(&atoms, NULL, "water");
    atoms = test_system_atoms(&salt);
    energy_vs_cpu(&atoms, NULL, "NaCl");
    atoms = test_system_atoms(&random);
    for (int order = ELEC_MSM_QUINTIC; order <= ELEC_MSM_NONIC; order++) {
        elec_msm_params p = {0};
        char what[32];
        p.interpolation = (elec_msm_interpolation)order;
        p.splitting = order + 2;
        p.spacing = 1.5;
        p.cutoff = 10.0;
        p.scale = ELEC_COULOMB;
        snprintf(what, sizeof what, "random, order %d", 2 * elec_msm_support(order));
        energy_vs_cpu(&atoms, &p, what);
    }
    {
        /* and the method's own error, against the exact pair sum */
        double exact = 0.0, e = 0.0;
        elec_error err;
        EXPECT(elec_cpu_coulomb_energy(&atoms, 1.0, &exact, NULL, &err) == ELEC_OK, "%s",
               err.message);
        EXPECT(elec_cuda_msm_energy(&atoms, NULL, &e, NULL, &err) == ELEC_OK, "%s",
               err.message);
        printf("     random: GPU MSM %.8f vs exact %.8f (%.2e)\n", e, exact,
               fabs(e - exact) / fabs(exact));
        EXPECT(fabs(e - exact) <= 5e-3 * fabs(exact), "GPU MSM energy %.8f vs exact %.8f", e,
               exact);
    }
    test_system_free(&random);
    test_system_free(&water);
    test_system_free(&salt);
}

TEST(gpu_msm_energy_keeps_its_precision_far_from_the_centre) {
    /* Two clusters 3000 A apart: float positions relative to the system's
       centre would carry 1.2e-4 A of rounding into every pair distance
       (forces off by ~1e-4); relative to each atom's cell they do not. */
    REQUIRE_GPU();
    test_system a = test_system_random(200, 15.0, 83), both = test_system_random(400, 15.0, 84);
    elec_msm_params p = {0};
    for (size_t i = 0; i < 200; i++)
        for (int axis = 0; axis < 3; axis++) {
            both.xyz[3 * i + axis] = a.xyz[3 * i + axis];
            both.xyz[3 * (i + 200) + axis] = a.xyz[3 * i + axis] + (axis == 0 ? 3000.0 : 0.0);
            both.charge[i] = a.charge[i];
            both.charge[i + 200] = -a.charge[i];
        }
    p.cutoff = 8.0;
    p.spacing = 2.5;
    elec_atoms atoms = test_system_atoms(&both);
    energy_vs_cpu(&atoms, &p, "3000 A apart");
    test_system_free(&a);
    test_system_free(&both);
}

TEST(a_long_cutoff_gets_longer_bins) {
    /* a = 60 A against 1 A map spacing: msmpot's 3.91 A bins would give a
       block more neighbour bins than the kernel takes; the map call makes
       them longer instead of refusing what the CPU accepts. */
    REQUIRE_GPU();
    test_system sys = test_system_random(1000, 30.0, 85);
    elec_lattice l = awkward_lattice(sys.box);
    elec_msm_params p = {0};
    test_system_make_neutral(&sys);
    p.cutoff = 60.0;
    p.spacing = 4.0;
    elec_atoms atoms = test_system_atoms(&sys);
    gpu_vs_cpu(&atoms, &l, &p, "a = 60 A, h = 4 A", NULL);
    test_system_free(&sys);
}

TEST(gpu_msm_energy_edge_cases) {
    REQUIRE_GPU();
    double xyz[9] = {0, 0, 0, 3, 0, 0, 3, 0, 0}, q[3] = {1, -1, 0.5}, e = 1.0, f[9];
    elec_atoms atoms = elec_atoms_from_xyz(0, xyz, q, NULL);
    elec_error err;
    EXPECT(elec_cuda_msm_energy(&atoms, NULL, &e, f, &err) == ELEC_OK && e == 0.0,
           "no atoms: %s, E = %g", err.message, e);
    atoms.count = 2; /* a pair 3 A apart: E = -1/3 up to MSM's error */
    EXPECT(elec_cuda_msm_energy(&atoms, NULL, &e, f, &err) == ELEC_OK, "%s", err.message);
    printf("     ion pair at 3 A: %.6f (exact %.6f)\n", e, -1.0 / 3.0);
    EXPECT(fabs(e + 1.0 / 3.0) < 1e-3, "ion pair: %.6f", e);
    EXPECT(fabs(f[0] - 1.0 / 9.0) < 1e-3 && fabs(f[3] + 1.0 / 9.0) < 1e-3,
           "ion pair forces %.6f %.6f", f[0], f[3]);
    atoms.count = 3; /* two atoms on one spot */
    EXPECT(elec_cuda_msm_energy(&atoms, NULL, &e, f, &err) == ELEC_ERR_INVALID_ARG,
           "coincident atoms: %s", err.message);
    printf("     coincident atoms: %s\n", err.message);
    EXPECT(elec_cuda_msm_energy(&atoms, NULL, NULL, f, &err) == ELEC_ERR_INVALID_ARG,
           "NULL energy: %s", err.message);
}

/* 2,000 atoms 75 A apart along y (150,000 A): the finest lattice has
   about 75,000 points along y, past the 65,535 blocks CUDA allows there,
   where the lattice cutoff kernel puts its rows.  The energy and the
   lattices are refused by name (they went on to a launch's "invalid
   configuration"); the CPU has no such limit. */
TEST(gpu_msm_refuses_lattices_past_cudas_grid) {
    REQUIRE_GPU();
    const size_t n = 2000;
    double *xyz = (double *)calloc(3 * n, sizeof *xyz), *q = (double *)calloc(n, sizeof *q);
    double e = 0.0;
    elec_atoms atoms = elec_atoms_from_xyz(n, xyz, q, NULL);
    elec_msm_lattices lattices;
    elec_error err;
    for (size_t i = 0; i < n; i++) {
        xyz[3 * i + 1] = 75.0 * (double)i;
        q[i] = i % 2 ? 1.0 : -1.0;
    }
    EXPECT(elec_cuda_msm_energy(&atoms, NULL, &e, NULL, &err) == ELEC_ERR_UNSUPPORTED &&
               strstr(err.message, "65535"),
           "energy: %s", err.message);
    EXPECT(elec_cuda_msm_lattices(&atoms, NULL, NULL, &lattices, &err) ==
                   ELEC_ERR_UNSUPPORTED &&
               strstr(err.message, "65535"),
           "lattices: %s", err.message);
    free(xyz);
    free(q);
}

/* Relative RMS difference of count values of two arrays. */
static double rel_diff(const double *got, const double *want, size_t count) {
    double d2 = 0.0, m2 = 0.0;
    for (size_t i = 0; i < count; i++) {
        d2 += (got[i] - want[i]) * (got[i] - want[i]);
        m2 += want[i] * want[i];
    }
    return m2 > 0.0 ? sqrt(d2 / m2) : sqrt(d2);
}

/* Level l of one of the lattices' arrays against the CPU's. */
static double level_diff(const elec_msm_lattices *gpu, const elec_msm_lattices *cpu,
                         const double *(*of)(const elec_msm_lattices *), int l) {
    return rel_diff(of(gpu) + gpu->first[l], of(cpu) + cpu->first[l],
                    cpu->first[l + 1] - cpu->first[l]);
}
static const double *charges_of(const elec_msm_lattices *m) { return m->q; }
static const double *cutoff_of(const elec_msm_lattices *m) { return m->cutoff; }
static const double *potentials_of(const elec_msm_lattices *m) { return m->e; }

static void stages_against_the_cpu(const elec_msm_params *p, const char *what) {
    /* The GPU's stages against elec_cpu.h's on the same hierarchy
       (elec_cuda_msm_lattices, elec_cpu_msm_lattices): charges after
       anterpolation and after each restriction, each level's lattice cutoff
       alone, the top, the potentials after prolongation, and the
       interpolation (with its gradient) at the atoms.  Float against
       double: 2e-5 as above. */
    test_system sys = test_system_random(2000, 30.0, 86);
    const double reference[3] = {15.0, 15.0, 15.0};
    elec_msm_lattices gpu, cpu;
    elec_error err;
    test_system_make_neutral(&sys);
    elec_atoms atoms = test_system_atoms(&sys);
    {   /* a NaN reference: refused as the CPU refuses it (it passed every
           range test and gave NaN at every atom with ELEC_OK) */
        const double nan_reference[3] = {15.0, NAN, 15.0};
        elec_msm_lattices none;
        EXPECT(elec_cuda_msm_lattices(&atoms, nan_reference, p, &none, &err) ==
                       ELEC_ERR_INVALID_ARG &&
                   strstr(err.message, "reference[1] nan is not finite"),
               "%s: a NaN reference: %s", what, err.message);
    }
    elec_status s_gpu = elec_cuda_msm_lattices(&atoms, reference, p, &gpu, &err);
    EXPECT(s_gpu == ELEC_OK, "GPU lattices: %s", err.message);
    elec_status s_cpu = elec_cpu_msm_lattices(&atoms, reference, p, &cpu, &err);
    EXPECT(s_cpu == ELEC_OK, "CPU lattices: %s", err.message);
    if (s_gpu != ELEC_OK || s_cpu != ELEC_OK) {
        elec_msm_lattices_free(&gpu);
        elec_msm_lattices_free(&cpu);
        test_system_free(&sys);
        return;
    }
    EXPECT(gpu.levels == cpu.levels && gpu.first[gpu.levels] == cpu.first[cpu.levels],
           "%s: the GPU's hierarchy (%d levels) is not the CPU's (%d)", what, gpu.levels,
           cpu.levels);
    const int top = cpu.levels - 1;
    double worst = level_diff(&gpu, &cpu, charges_of, 0);
    printf("     %-8s anterpolation %.2e", what, worst);
    EXPECT(worst <= GPU_VS_CPU_TOLERANCE, "%s anterpolation: %.3e", what, worst);
    for (int l = 0; l < top; l++) {
        double d = level_diff(&gpu, &cpu, charges_of, l + 1);
        EXPECT(d <= GPU_VS_CPU_TOLERANCE, "%s restriction to level %d: %.3e", what, l + 1, d);
        worst = l == 0 ? d : std::max(worst, d);
    }
    printf(", restriction %.2e", top > 0 ? worst : 0.0);
    for (int l = 0; l < top; l++) {
        double d = level_diff(&gpu, &cpu, cutoff_of, l);
        EXPECT(d <= GPU_VS_CPU_TOLERANCE, "%s lattice cutoff, level %d: %.3e", what, l, d);
        worst = l == 0 ? d : std::max(worst, d);
    }
    printf(", lattice cutoff %.2e", worst);
    worst = level_diff(&gpu, &cpu, cutoff_of, top);
    printf(", top %.2e", worst);
    EXPECT(worst <= GPU_VS_CPU_TOLERANCE, "%s top: %.3e", what, worst);
    worst = 0.0;
    for (int l = 0; l < top; l++) {
        double d = level_diff(&gpu, &cpu, potentials_of, l);
        EXPECT(d <= GPU_VS_CPU_TOLERANCE, "%s prolongation, level %d: %.3e", what, l, d);
        worst = std::max(worst, d);
    }
    printf(", prolongation %.2e", worst);
    {
        const double phi = rel_diff(gpu.phi, cpu.phi, sys.count);
        const double grad = rel_diff(gpu.grad, cpu.grad, 3 * sys.count);
        printf(", interpolation %.2e (gradient %.2e)\n", phi, grad);
        EXPECT(phi <= GPU_VS_CPU_TOLERANCE && grad <= GPU_VS_CPU_TOLERANCE,
               "%s interpolation at atoms: %.3e, gradient %.3e", what, phi, grad);
    }
    elec_msm_lattices_free(&gpu);
    elec_msm_lattices_free(&cpu);
    test_system_free(&sys);
}

TEST(every_gpu_stage_matches_the_cpu_stage) {
    REQUIRE_GPU();
    elec_msm_params p = {0};
    stages_against_the_cpu(&p, "cubic");
    p.interpolation = ELEC_MSM_NONIC;
    p.splitting = 5;
    p.cutoff = 8.0;
    p.spacing = 1.5;
    stages_against_the_cpu(&p, "nonic");
}

TEST(the_energys_lattices_are_laid_as_the_cpus) {
    /* With no reference, the GPU's lattices are the energy's, laid as the
       CPU lays them (elec__msm_anchor): the same levels, corners and
       points for a box of random charges and for a flat one (25 x 54 x
       0.03 A), where a region about the snapped reference that held it
       (the CPU's) or not (the GPU's) once gave 2 levels against 1. */
    REQUIRE_GPU();
    static const double squash[2] = {1.0, 0.001};
    for (int c = 0; c < 2; c++) {
        test_system sys = test_system_random(300, 30.0, 90 + (unsigned)c);
        for (size_t i = 0; i < sys.count; i++) {
            sys.xyz[3 * i] *= 25.5 / 30.0;
            sys.xyz[3 * i + 1] *= 54.3 / 30.0;
            sys.xyz[3 * i + 2] *= squash[c];
        }
        test_system_make_neutral(&sys);
        elec_atoms atoms = test_system_atoms(&sys);
        elec_msm_params p = {0};
        elec_msm_lattices gpu, cpu;
        elec_error err;
        const elec_status s_gpu = elec_cuda_msm_lattices(&atoms, NULL, &p, &gpu, &err);
        EXPECT(s_gpu == ELEC_OK, "GPU lattices: %s", err.message);
        const elec_status s_cpu = elec_cpu_msm_lattices(&atoms, NULL, &p, &cpu, &err);
        EXPECT(s_cpu == ELEC_OK, "CPU lattices: %s", err.message);
        if (s_gpu == ELEC_OK && s_cpu == ELEC_OK) {
            int same = gpu.levels == cpu.levels;
            for (int l = 0; same && l < cpu.levels; l++)
                for (int axis = 0; axis < 3; axis++)
                    same = same && gpu.lo[l][axis] == cpu.lo[l][axis] &&
                           gpu.n[l][axis] == cpu.n[l][axis];
            printf("     %s: %d levels on the GPU, %d on the CPU\n", c ? "flat" : "box",
                   gpu.levels, cpu.levels);
            EXPECT(same, "%s: the GPU's lattices are not the CPU's", c ? "flat" : "box");
            const double phi = rel_diff(gpu.phi, cpu.phi, sys.count);
            EXPECT(phi <= GPU_VS_CPU_TOLERANCE, "interpolation at atoms: %.3e", phi);
        }
        if (s_gpu == ELEC_OK) elec_msm_lattices_free(&gpu);
        if (s_cpu == ELEC_OK) elec_msm_lattices_free(&cpu);
        test_system_free(&sys);
    }
}

TEST(bad_input_is_refused_without_a_gpu) {
    /* Checked before any GPU is looked for: runs everywhere. */
    double xyz[3] = {0, 0, 0}, q[1] = {1};
    elec_atoms atoms = elec_atoms_from_xyz(1, xyz, q, NULL);
    elec_lattice l = {{4, 4, 4}, {0, 0, 0}, {1, 1, 1}};
    elec_msm_params p = {0};
    elec_error err;
    float map[64];
    EXPECT(elec_cuda_msm_map(&atoms, &l, &p, NULL, &err) == ELEC_ERR_INVALID_ARG,
           "NULL map: %s", err.message);
    EXPECT(elec_cuda_msm_map(NULL, &l, &p, map, &err) == ELEC_ERR_INVALID_ARG,
           "NULL atoms: %s", err.message);
    p.spacing = -1.0;
    EXPECT(elec_cuda_msm_map(&atoms, &l, &p, map, &err) == ELEC_ERR_INVALID_ARG,
           "negative spacing: %s", err.message);
    p.spacing = 0.0;
    p.interpolation = (elec_msm_interpolation)9;
    EXPECT(elec_cuda_msm_map(&atoms, &l, &p, map, &err) == ELEC_ERR_INVALID_ARG,
           "unknown interpolation: %s", err.message);
    p.interpolation = ELEC_MSM_CUBIC;
    l.dims[2] = 0;
    EXPECT(elec_cuda_msm_map(&atoms, &l, &p, map, &err) == ELEC_ERR_INVALID_ARG,
           "empty lattice: %s", err.message);
    /* under float's floor, refused by name on the GPU (the CPU takes it) */
    l.dims[2] = 4;
    p.tolerance = 0.5 * ELEC_MSM_GPU_TOLERANCE_FLOOR;
    EXPECT(elec_cuda_msm_map(&atoms, &l, &p, map, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "float") != NULL,
           "map at %g: %s", p.tolerance, err.message);
    {
        double e;
        EXPECT(elec_cuda_msm_energy(&atoms, &p, &e, NULL, &err) == ELEC_ERR_INVALID_ARG &&
                   strstr(err.message, "float") != NULL,
               "energy at %g: %s", p.tolerance, err.message);
    }
}

/* ---------------------------------------------- periodic MSM, the MD handle */

/* The GPU periodic handle on a test system: create, upload float4 atoms,
   compute with forces, energy, download.  Returns the status; forces
   (3n, -dE/dr) in double; the neighbour list's stats where stats is not
   NULL. */
static elec_status pmsm_gpu(const test_system *s, const elec_box *box, const elec_msm_params *p,
                            double *energy, double *forces, elec_spme_list_stats *stats,
                            elec_error *err) {
    const size_t n = s->count;
    elec_atoms atoms = test_system_atoms(s);
    elec_cuda_msm_periodic_handle *h = NULL;
    float4 *host = (float4 *)malloc(n * sizeof(float4)), *d_xyzq = NULL;
    float *f = (float *)malloc(3 * n * sizeof(float)), *d_forces = NULL;
    elec_status status = elec_cuda_msm_periodic_create(box, &atoms, p, &h, err);
    if (status == ELEC_OK) {
        for (size_t i = 0; i < n; i++)
            host[i] = make_float4((float)s->xyz[3 * i], (float)s->xyz[3 * i + 1],
                                  (float)s->xyz[3 * i + 2], (float)s->charge[i]);
        EXPECT(cudaMalloc((void **)&d_xyzq, n * sizeof(float4)) == cudaSuccess &&
                   cudaMalloc((void **)&d_forces, 3 * n * sizeof(float)) == cudaSuccess &&
                   cudaMemcpy(d_xyzq, host, n * sizeof(float4), cudaMemcpyHostToDevice) ==
                       cudaSuccess,
               "device buffers");
        status = elec_cuda_msm_periodic_compute(h, d_xyzq, n, d_forces, 0, err);
        /* the stats before the energy, which refuses an overflowed list:
           a caller then still sees the overflow in them */
        if (status == ELEC_OK && stats)
            status = elec_cuda_msm_periodic_list_stats(h, stats, 0, err);
        if (status == ELEC_OK) status = elec_cuda_msm_periodic_energy(h, energy, 0, err);
        EXPECT(cudaMemcpy(f, d_forces, 3 * n * sizeof(float), cudaMemcpyDeviceToHost) ==
                   cudaSuccess, "forces back");
        for (size_t i = 0; i < 3 * n; i++) forces[i] = f[i];
    }
    elec_cuda_msm_periodic_destroy(h);
    cudaFree(d_xyzq);
    cudaFree(d_forces);
    free(host);
    free(f);
    return status;
}

/* GPU against the CPU's double periodic MSM on the same atoms and params:
   the same method, so the GPU's float arithmetic alone
   (GPU_VS_CPU_TOLERANCE, the lattice sums' float rounding: see the top of
   this file).  The CPU takes the positions the GPU takes, rounded to
   float: the rounding of the input itself, ulp(x) / r of a close pair's
   distance, is not the GPU's error and was measured at 9.4e-6 (random
   2000) and 2.8e-5 (random 1500 in the 36 A box) of the forces on the
   CPU alone, which is what an H100 showed before this change.  The energy
   is held relative to sum |q_i phi_i| / 2, the size of what is summed: E
   itself is a small difference of large terms for random charges. */
static void pmsm_expect_cpu(const test_system *s, const elec_box *box,
                            const elec_msm_params *p, double e_gpu, const double *f_gpu,
                            const char *what) {
    const size_t n = s->count;
    test_system rounded = *s;
    double *xyz = (double *)malloc(3 * n * sizeof(double));
    for (size_t i = 0; i < 3 * n; i++) xyz[i] = (float)s->xyz[i];
    rounded.xyz = xyz;
    elec_atoms atoms = test_system_atoms(&rounded);
    double *f_cpu = (double *)malloc(3 * n * sizeof(double));
    double *phi = (double *)malloc(n * sizeof(double));
    double e_cpu = 0.0, size = 0.0;
    elec_error err;
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, box, p, &e_cpu, f_cpu, phi, &err) == ELEC_OK,
           "%s: CPU: %s", what, err.message);
    for (size_t i = 0; i < n; i++) size += 0.5 * fabs(s->charge[i] * phi[i]);
    const double de = fabs(e_gpu - e_cpu) / size, df = rel_diff(f_gpu, f_cpu, 3 * n);
    printf("     %s: GPU %.8f vs CPU %.8f (%.2e of sum |q phi|/2), forces %.2e\n", what, e_gpu,
           e_cpu, de, df);
    EXPECT(de <= GPU_VS_CPU_TOLERANCE, "%s: energy %.3e", what, de);
    EXPECT(df <= GPU_VS_CPU_TOLERANCE, "%s: forces %.3e", what, df);
    free(f_cpu);
    free(phi);
    free(xyz);
}

static void pmsm_vs_cpu(const test_system *s, const elec_box *box, const elec_msm_params *p,
                        const char *what) {
    double *f_gpu = (double *)malloc(3 * s->count * sizeof(double)), e_gpu = 0.0;
    elec_error err;
    EXPECT(pmsm_gpu(s, box, p, &e_gpu, f_gpu, NULL, &err) == ELEC_OK, "%s: GPU: %s", what,
           err.message);
    pmsm_expect_cpu(s, box, p, e_gpu, f_gpu, what);
    free(f_gpu);
}

TEST(periodic_gpu_msm_leaves_out_one_image_of_a_pair_half_a_box_apart) {
    REQUIRE_GPU();
    /* An excluded pair exactly half a box apart in a 10 A box, whose cutoff
       (12 A) the neighbour list does not take: the cell kernel left out
       every image with |d| <= L/2 on each axis, both of this pair's, while
       the pair's smooth part came back out once (the CPU's did the same:
       tests/test_msm.c).  Twenty-one random neutral charges beside it;
       the energy against the CPU's, and the forces on those other atoms
       (at the tie the pair's own forces depend on which image each side
       takes, float against double: not compared; nor their sum, which
       MSM's lattices do not keep at zero: 1.2e-3 of the largest here). */
    test_system s = test_system_random(23, 10.0, 131);
    elec_box box = test_box(10.0, 10.0, 10.0);
    const size_t pair[2] = {0, 1};
    elec_msm_params p = {0};
    elec_error err;
    double e_gpu = 0.0, e_cpu = 0.0, size = 0.0;
    double *f = (double *)malloc(3 * s.count * sizeof(double));
    double *f_cpu = (double *)malloc(3 * s.count * sizeof(double));
    double *phi = (double *)malloc(s.count * sizeof(double));
    test_system_make_neutral(&s);
    for (size_t i = 0; i < 3 * s.count; i++) s.xyz[i] = (float)s.xyz[i]; /* the GPU's */
    for (int axis = 0; axis < 3; axis++) {
        s.xyz[axis] = 1.0;
        s.xyz[3 + axis] = axis == 0 ? 6.0 : 1.0;
    }
    s.charge[0] = 1.0;
    s.charge[1] = -1.0;
    p.excluded_pairs = pair;
    p.excluded_pair_count = 1;
    EXPECT(pmsm_gpu(&s, &box, &p, &e_gpu, f, NULL, &err) == ELEC_OK, "GPU: %s", err.message);
    elec_atoms atoms = test_system_atoms(&s);
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &e_cpu, f_cpu, phi, &err) == ELEC_OK,
           "CPU: %s", err.message);
    for (size_t i = 0; i < s.count; i++) size += 0.5 * fabs(s.charge[i] * phi[i]);
    const double de = fabs(e_gpu - e_cpu) / size, df = rel_diff(f + 6, f_cpu + 6, 3 * s.count - 6);
    printf("     GPU %.8f vs CPU %.8f (%.2e of sum |q phi|/2); the other atoms' forces %.2e\n",
           e_gpu, e_cpu, de, df);
    EXPECT(de <= GPU_VS_CPU_TOLERANCE, "energy %.3e", de);
    EXPECT(df <= GPU_VS_CPU_TOLERANCE, "the other atoms' forces %.3e", df);
    free(f);
    free(f_cpu);
    free(phi);
    test_system_free(&s);
}

TEST(periodic_gpu_msm_matches_the_cpu_periodic_msm) {
    REQUIRE_GPU();
    /* Forces are the CPU's -dE/dr (tests/test_msm.c holds the CPU's to
       finite differences of its energy in double), so agreeing with them
       is agreeing with -dE/dr.  Random neutral charges in a cube; water
       with its excluded pairs; displaced rock salt; net charges (the
       top's constant): random, 600 of +1 and 450 of +1 with 150 of -1
       (before the GPU took the charges' mean out of its float lattices
       the +1s came 1.2e-4 from the CPU's forces); a box of three edges;
       the quintic at h 1.5 and a cutoff past half the box (images within
       it summed). */
    test_system random = test_system_random(2000, 30.0, 91);
    test_system water = test_system_water(512, 92);
    test_system salt = test_system_nacl(3, 5.64);
    test_system charged = test_system_random(600, 21.0, 93);
    test_system positive = test_system_random(600, 21.0, 96);
    test_system three_to_one = test_system_random(600, 21.0, 97);
    test_system long_box = test_system_random(1500, 30.0, 94);
    size_t *pairs = test_water_exclusions(512);
    elec_msm_params p = {0};
    elec_box box;
    test_system_make_neutral(&random);
    test_system_make_neutral(&long_box);
    for (size_t i = 0; i < long_box.count; i++) { /* into 31.7 x 27.3 x 35.9 */
        long_box.xyz[3 * i] *= 31.7 / 30.0;
        long_box.xyz[3 * i + 1] *= 27.3 / 30.0;
        long_box.xyz[3 * i + 2] *= 35.9 / 30.0;
    }
    test_system_displace(&salt, 0.1, 95);
    for (size_t i = 0; i < positive.count; i++) {
        positive.charge[i] = 1.0;
        three_to_one.charge[i] = i % 4 == 3 ? -1.0 : 1.0;
    }
    p.scale = ELEC_COULOMB;
    box = test_box(30.0, 30.0, 30.0);
    pmsm_vs_cpu(&random, &box, &p, "random 2000, 30 A");
    box = test_box(water.box[0], water.box[1], water.box[2]);
    p.excluded_pairs = pairs;
    p.excluded_pair_count = 3 * 512;
    pmsm_vs_cpu(&water, &box, &p, "water 512 with its excluded pairs");
    p.excluded_pairs = NULL;
    p.excluded_pair_count = 0;
    box = test_box(3 * 5.64, 3 * 5.64, 3 * 5.64);
    pmsm_vs_cpu(&salt, &box, &p, "rock salt 3^3, displaced");
    box = test_box(21.0, 21.0, 21.0);
    pmsm_vs_cpu(&charged, &box, &p, "random 600, net charge");
    pmsm_vs_cpu(&positive, &box, &p, "600 charges of +1");
    pmsm_vs_cpu(&three_to_one, &box, &p, "450 of +1, 150 of -1");
    box = test_box(31.7, 27.3, 35.9);
    pmsm_vs_cpu(&long_box, &box, &p, "random 1500, 31.7 x 27.3 x 35.9");
    p.interpolation = ELEC_MSM_QUINTIC;
    p.spacing = 1.5;
    p.cutoff = 10.0;
    box = test_box(30.0, 30.0, 30.0);
    pmsm_vs_cpu(&random, &box, &p, "random 2000, quintic, h 1.5, a 10");
    p.interpolation = ELEC_MSM_CUBIC;
    p.spacing = 0.0;
    p.cutoff = 12.0;
    box = test_box(3 * 5.64, 3 * 5.64, 3 * 5.64);
    pmsm_vs_cpu(&salt, &box, &p, "rock salt in a 16.9 A box, a 12 (images)");
    free(pairs);
    test_system_free(&random);
    test_system_free(&water);
    test_system_free(&salt);
    test_system_free(&charged);
    test_system_free(&positive);
    test_system_free(&three_to_one);
    test_system_free(&long_box);
}

/* The finest lattice's mean (elec__k_pmsm_charge_mean, the kernel the
   handle launches) for lattices of 1 point to 2^21: one block, a block's
   first pass cut short, exactly 1,024 blocks' single pass (524,288) and
   past it, where the blocks go round again (no handle above reaches that:
   the ApoA1-size bench lattice has 262,144 points).  Each lattice twice in
   a row, as two computes would: every point counted once, the count of
   blocks done zeroed again, the same double sum both times (the blocks'
   partials added in a fixed order). */
TEST(periodic_msm_charge_mean_counts_every_point_once) {
    REQUIRE_GPU();
    const size_t sizes[6] = {1, 100, 513, 524288, 524289, (size_t)1 << 21};
    const size_t most = sizes[5];
    float *host = (float *)malloc(most * sizeof *host), *q = NULL;
    double *sums = NULL;
    for (size_t m = 0; m < most; m++) host[m] = (float)((m * 7919u) % 1000u) * 1e-3f - 0.3f;
    EXPECT(cudaMalloc(&q, most * sizeof *q) == cudaSuccess &&
               cudaMalloc(&sums, (ELEC__PMSM_CENTER_BLOCKS + 2) * sizeof *sums) == cudaSuccess &&
               cudaMemcpy(q, host, most * sizeof *q, cudaMemcpyHostToDevice) == cudaSuccess &&
               cudaMemset(sums, 0, (ELEC__PMSM_CENTER_BLOCKS + 2) * sizeof *sums) ==
                   cudaSuccess,
           "device setup");
    for (int c = 0; c < 6 && q && sums; c++) {
        const size_t points = sizes[c];
        double want = 0.0, got[2] = {0.0, 0.0};
        for (size_t m = 0; m < points; m++) want += host[m];
        want /= (double)points;
        for (int run = 0; run < 2; run++) {
            elec__k_pmsm_charge_mean<<<elec__pmsm_center_blocks(points), ELEC__MSM_BLOCK>>>(
                q, points, sums);
            EXPECT(cudaGetLastError() == cudaSuccess &&
                       cudaMemcpy(got + run, sums + ELEC__PMSM_CENTER_BLOCKS, sizeof *got,
                                  cudaMemcpyDeviceToHost) == cudaSuccess,
                   "%zu points: the launch or the copy failed", points);
        }
        printf("     %zu points, %u blocks: mean %.15g, want %.15g\n", points,
               elec__pmsm_center_blocks(points), got[0], want);
        /* sums of up to 2^21 floats in double: 1e-12 of the mean's size
           is far above their rounding, far below a point counted twice */
        EXPECT(fabs(got[0] - want) <= 1e-12 * (fabs(want) + 1.0),
               "%zu points: mean %.17g, want %.17g", points, got[0], want);
        EXPECT(got[1] == got[0], "%zu points: the second run %.17g, the first %.17g", points,
               got[1], got[0]);
    }
    cudaFree(q);
    cudaFree(sums);
    free(host);
}

/* One handle, two systems of different net charge in turn (600 of +1,
   then 450 of +1 with 150 of -1), each computed on a stream and then
   from a graph captured once: every compute takes its own charges' mean
   out of the finest lattice (a mean left from the compute before would
   leave the second system's lattices passing on a mean, its energy off by
   Q dphi / 2: what a one-pass sum whose count of blocks done were not
   zeroed again would do), each held to the CPU as pmsm_vs_cpu holds a
   fresh handle. */
TEST(periodic_gpu_msm_takes_each_computes_own_mean) {
    REQUIRE_GPU();
    const size_t n = 600;
    test_system systems[2] = {test_system_random(n, 21.0, 96), test_system_random(n, 21.0, 97)};
    const char *names[2] = {"600 of +1", "450 of +1, 150 of -1"};
    const elec_box box = test_box(21.0, 21.0, 21.0);
    elec_msm_params p = {0};
    elec_cuda_msm_periodic_handle *h = NULL;
    float4 *host = (float4 *)malloc(n * sizeof(float4)), *d_xyzq = NULL;
    float *f = (float *)malloc(3 * n * sizeof(float)), *d_forces = NULL;
    double *forces = (double *)malloc(3 * n * sizeof(double));
    cudaStream_t stream = NULL;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    elec_error err;
    for (size_t i = 0; i < n; i++) {
        systems[0].charge[i] = 1.0;
        systems[1].charge[i] = i % 4 == 3 ? -1.0 : 1.0;
    }
    p.scale = ELEC_COULOMB;
    {
        elec_atoms first = test_system_atoms(&systems[0]);
        EXPECT(elec_cuda_msm_periodic_create(&box, &first, &p, &h, &err) == ELEC_OK, "%s",
               err.message);
    }
    EXPECT(cudaMalloc((void **)&d_xyzq, n * sizeof(float4)) == cudaSuccess &&
               cudaMalloc((void **)&d_forces, 3 * n * sizeof(float)) == cudaSuccess &&
               cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess,
           "device buffers and stream");
    for (int pass = 0; pass < 2 && h && !test__current_failed; pass++) { /* stream, graph */
        if (pass == 1) {
            EXPECT(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess,
                   "capture");
            EXPECT(elec_cuda_msm_periodic_compute(h, d_xyzq, n, d_forces, stream, &err) ==
                       ELEC_OK,
                   "captured compute: %s", err.message);
            EXPECT(cudaStreamEndCapture(stream, &graph) == cudaSuccess &&
                       cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess,
                   "graph");
        }
        for (int k = 0; k < 2; k++) {
            const test_system *s = &systems[k];
            double energy = 0.0;
            char what[96];
            for (size_t i = 0; i < n; i++)
                host[i] = make_float4((float)s->xyz[3 * i], (float)s->xyz[3 * i + 1],
                                      (float)s->xyz[3 * i + 2], (float)s->charge[i]);
            EXPECT(cudaMemcpyAsync(d_xyzq, host, n * sizeof(float4), cudaMemcpyHostToDevice,
                                   stream) == cudaSuccess,
                   "upload");
            if (pass == 0)
                EXPECT(elec_cuda_msm_periodic_compute(h, d_xyzq, n, d_forces, stream, &err) ==
                           ELEC_OK,
                       "compute: %s", err.message);
            else
                EXPECT(cudaGraphLaunch(exec, stream) == cudaSuccess, "replay");
            EXPECT(elec_cuda_msm_periodic_energy(h, &energy, stream, &err) == ELEC_OK, "%s",
                   err.message);
            EXPECT(cudaMemcpyAsync(f, d_forces, 3 * n * sizeof(float), cudaMemcpyDeviceToHost,
                                   stream) == cudaSuccess &&
                       cudaStreamSynchronize(stream) == cudaSuccess,
                   "forces back");
            for (size_t i = 0; i < 3 * n; i++) forces[i] = f[i];
            snprintf(what, sizeof what, "%s, %s on one handle", names[k],
                     pass ? "from a graph" : "in turn");
            pmsm_expect_cpu(s, &box, &p, energy, forces, what);
        }
    }
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    if (stream) cudaStreamDestroy(stream);
    elec_cuda_msm_periodic_destroy(h);
    cudaFree(d_xyzq);
    cudaFree(d_forces);
    free(host);
    free(f);
    free(forces);
    test_system_free(&systems[0]);
    test_system_free(&systems[1]);
}

TEST(periodic_gpu_msm_meets_the_cpus_tolerance_against_ewald) {
    REQUIRE_GPU();
    /* The systems and bounds of tests/test_msm.c's
       periodic_msm_matches_ewald_for_random_charges_and_water (the method's
       own error at the defaults, measured on the CPU and held to about
       twice): the GPU's float rounding is 1e-5 of that. */
    test_system random = test_system_random(400, 25.0, 7);
    test_system water = test_system_water(216, 3);
    const test_system *systems[2] = {&random, &water};
    const char *names[2] = {"random 400, seed 7", "water 216, seed 3"};
    const double energy_bound[2] = {7e-3, 1.5e-4}, force_bound[2] = {2.5e-3, 7e-4};
    test_system_make_neutral(&random);
    for (int k = 0; k < 2; k++) {
        const test_system *s = systems[k];
        elec_box box = k == 0 ? test_box(25.0, 25.0, 25.0)
                              : test_box(s->box[0], s->box[1], s->box[2]);
        elec_atoms atoms = test_system_atoms(s);
        elec_ewald_params ewald = {0};
        elec_ewald_terms truth;
        elec_error err;
        double e = 0.0;
        double *f = (double *)malloc(3 * s->count * sizeof(double));
        double *fe = (double *)malloc(3 * s->count * sizeof(double));
        ewald.tolerance = 1e-10;
        EXPECT(elec_cpu_ewald(&atoms, &box, &ewald, &truth, fe, NULL, &err) == ELEC_OK, "%s",
               err.message);
        EXPECT(pmsm_gpu(s, &box, NULL, &e, f, NULL, &err) == ELEC_OK, "%s: %s", names[k],
               err.message);
        const double de = fabs(e - truth.total) / fabs(truth.total);
        const double df = rel_diff(f, fe, 3 * s->count);
        printf("     %s: GPU MSM %.8f vs Ewald %.8f: energy %.2e, forces %.2e\n", names[k], e,
               truth.total, de, df);
        EXPECT(de <= energy_bound[k], "%s: energy %.3e", names[k], de);
        EXPECT(df <= force_bound[k], "%s: forces %.3e", names[k], df);
        free(f);
        free(fe);
    }
    test_system_free(&random);
    test_system_free(&water);
}

TEST(periodic_gpu_msm_takes_the_cpus_periodic_choice_and_meets_it) {
    REQUIRE_GPU();
    /* At T = 1e-3 and 1e-4 (the GPU's float floor is 1e-5) the handle
       resolves its params as elec_msm_periodic_params_resolve does (on the
       power-of-two lattices and the box's density), and water's forces
       meet T against exact Ewald and its energy the estimate's bound:
       tests/test_tolerance.c's checks, on the device. */
    static const double tolerances[2] = {1e-3, 1e-4};
    test_system water = test_system_water(216, 3);
    elec_box box = test_box(water.box[0], water.box[1], water.box[2]);
    elec_atoms atoms = test_system_atoms(&water);
    elec_ewald_params ewald = {0};
    elec_ewald_terms truth;
    elec_error err;
    double *f = (double *)malloc(3 * water.count * sizeof(double));
    double *fe = (double *)malloc(3 * water.count * sizeof(double));
    ewald.tolerance = 1e-10;
    EXPECT(elec_cpu_ewald(&atoms, &box, &ewald, &truth, fe, NULL, &err) == ELEC_OK, "%s",
           err.message);
    for (int k = 0; k < 2; k++) {
        elec_msm_params p = {0}, cpu = {0}, gpu = {0};
        elec_cuda_msm_periodic_handle *h = NULL;
        double e = 0.0;
        p.tolerance = tolerances[k];
        EXPECT(elec_msm_periodic_params_resolve(&p, &box, &atoms, &cpu, &err) == ELEC_OK, "%s",
               err.message);
        EXPECT(elec_cuda_msm_periodic_create(&box, &atoms, &p, &h, &err) == ELEC_OK &&
                   elec_cuda_msm_periodic_params(h, &gpu, &err) == ELEC_OK,
               "%s", err.message);
        elec_cuda_msm_periodic_destroy(h);
        EXPECT(gpu.interpolation == cpu.interpolation && gpu.spacing == cpu.spacing &&
                   gpu.cutoff == cpu.cutoff,
               "T %g: the GPU took order %d h %g a %g, the CPU's choice order %d h %g a %g",
               tolerances[k], (int)gpu.interpolation, gpu.spacing, gpu.cutoff,
               (int)cpu.interpolation, cpu.spacing, cpu.cutoff);
        EXPECT(pmsm_gpu(&water, &box, &p, &e, f, NULL, &err) == ELEC_OK, "%s", err.message);
        const double df = rel_diff(f, fe, 3 * water.count);
        const double de = fabs(e - truth.total);
        printf("     T %.0e: order %d h %.3f a %.1f (fit %.1e): forces %.2e against Ewald; "
               "energy %.2e (estimate %.2e)\n",
               tolerances[k], (int)gpu.interpolation, gpu.spacing, gpu.cutoff,
               gpu.estimate.force, df, de, gpu.estimate.energy);
        EXPECT(df <= tolerances[k], "forces %.3e > %g", df, tolerances[k]);
        /* the energy within 3 times the CPU's estimate (tests/test_tolerance.c
           holds the CPU to it), with the GPU's float floor, 1e-5 of it */
        EXPECT(gpu.estimate.energy == cpu.estimate.energy && gpu.estimate.energy > 0.0 &&
                   de <= 3.0 * gpu.estimate.energy + 1e-5 * fabs(truth.total),
               "T %g: energy %.3e off, estimate %.3e (the CPU's %.3e)", tolerances[k], de,
               gpu.estimate.energy, cpu.estimate.energy);
    }
    free(f);
    free(fe);
    test_system_free(&water);
}

TEST(periodic_gpu_msm_meets_the_tolerance_for_crystals_near_their_sites) {
    REQUIRE_GPU();
    /* Ions near their crystal sites feel small forces for their charges,
       and the choice aims lower for them (elec__pmsm_arrangement); the
       handle's float arithmetic errs relative to the charges' forces as
       well.  Rock salt 3^3 displaced 0.1 and 0.01 A RMS and CsCl 5^3
       displaced 0.1 A, at T = 1e-3 and 1e-4: the GPU's forces against
       exact Ewald at most T (tests/test_tolerance.c's CPU check, on the
       device). */
    static const double tolerances[2] = {1e-3, 1e-4};
    static const double displaced[3] = {0.1, 0.01, 0.1};
    for (int c = 0; c < 3; c++) {
        test_system sys = c < 2 ? test_system_nacl(3, 5.64) : test_system_cscl(5, 4.12);
        const elec_box box = test_system_box(&sys);
        elec_ewald_params ewald = {0};
        elec_ewald_terms truth;
        elec_error err;
        double *f = (double *)malloc(3 * sys.count * sizeof(double));
        double *fe = (double *)malloc(3 * sys.count * sizeof(double));
        test_system_displace(&sys, displaced[c], 7 + (unsigned)c);
        elec_atoms atoms = test_system_atoms(&sys);
        ewald.tolerance = 1e-12;
        EXPECT(elec_cpu_ewald(&atoms, &box, &ewald, &truth, fe, NULL, &err) == ELEC_OK, "%s",
               err.message);
        for (int k = 0; k < 2; k++) {
            elec_msm_params p = {0}, r = {0};
            double e = 0.0;
            p.tolerance = tolerances[k];
            EXPECT(elec_msm_periodic_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_OK, "%s",
                   err.message);
            EXPECT(pmsm_gpu(&sys, &box, &p, &e, f, NULL, &err) == ELEC_OK, "%s", err.message);
            const double df = rel_diff(f, fe, 3 * sys.count);
            printf("     %s %.2f A from its sites, T %.0e: order %d h %.3f a %.1f (estimate "
                   "%.1e): forces %.2e against Ewald\n", c < 2 ? "NaCl 3^3" : "CsCl 5^3",
                   displaced[c], tolerances[k], (int)r.interpolation, r.spacing, r.cutoff,
                   r.estimate.force, df);
            EXPECT(df <= tolerances[k], "forces %.3e > %g", df, tolerances[k]);
        }
        free(f);
        free(fe);
        test_system_free(&sys);
    }
}

/* gpu_float_floor_on_crystals's run for the periodic MSM handle (pmsm_gpu
   uploads s's positions as float: already exact in float). */
static elec_status pmsm_crystal_run(const test_system *s, const elec_box *box,
                                    double tolerance, double *gpu, double *cpu,
                                    elec_error_estimate *estimate, int *refused,
                                    elec_error *err) {
    const elec_atoms atoms = test_system_atoms(s);
    elec_msm_params p = {0}, r = {0};
    double energy = 0.0;
    p.tolerance = tolerance;
    *refused = elec_msm_periodic_params_resolve(&p, box, &atoms, &r, err) != ELEC_OK;
    *estimate = r.estimate;
    cpu[0] = NAN;
    elec_status status = pmsm_gpu(s, box, &p, &energy, gpu, NULL, err);
    if (status == ELEC_OK) {
        /* the handle's choice (it aims beside float's share), fixed */
        elec_cuda_msm_periodic_handle *h = NULL;
        elec_error cpu_err;
        EXPECT(elec_cuda_msm_periodic_create(box, &atoms, &p, &h, &cpu_err) == ELEC_OK &&
                   elec_cuda_msm_periodic_params(h, &r, &cpu_err) == ELEC_OK,
               "%s", cpu_err.message);
        elec_cuda_msm_periodic_destroy(h);
        r.tolerance = 0.0;
        if (elec_cpu_msm_periodic_energy(&atoms, box, &r, &energy, cpu, NULL, &cpu_err) !=
            ELEC_OK)
            cpu[0] = NAN;
    }
    return status;
}

TEST(periodic_gpu_msm_refuses_or_meets_the_tolerance_where_forces_nearly_cancel) {
    REQUIRE_GPU();
    /* As the SPME handle's test (tests/test_gpu_spme.cu): float arithmetic
       erred 3.3e-5 of the floored force scale on rock salt 0.01 A from its
       sites, which the fixed floor (ELEC_MSM_GPU_TOLERANCE_FLOOR, 1e-5)
       let the handle take at 1e-5, and 1.0e-4 for CsCl there at 1e-4 with
       the method's own error (H200, 2026-12-04). */
    gpu_float_floor_on_crystals("periodic MSM handle", pmsm_crystal_run);
}

TEST(periodic_gpu_msm_neighbour_list_is_carried_and_rebuilt) {
    REQUIRE_GPU();
    /* Water 1000 in its 31.1 A box: the default cutoff 12 A and the list's
       1.5 A skin lie within half the box, so the short range runs on the
       neighbour list (elec__pmsm_list_fits), with the excluded pairs.  One
       handle, three sets of positions, each against the CPU's double
       periodic MSM at the same positions (pmsm_vs_cpu's bounds): as built;
       every atom moved up to 0.69 A from there (each axis within 0.4 A:
       inside half the skin, the list is carried); up to 2.1 A (each axis
       within 1.2 A: past it, the device rebuilds).  A carried list that
       missed a pair now within the cutoff, or a rebuild that did not
       happen, is off by far more than float rounding. */
    const size_t n = 3000;
    const double steps[3] = {0.0, 0.4, 1.2};
    const char *names[3] = {"as built", "moved within half the skin (carried)",
                            "moved past the skin (rebuilt)"};
    test_system sys = test_system_water(1000, 97), moved = sys;
    size_t *pairs = test_water_exclusions(1000);
    elec_box box = test_box(sys.box[0], sys.box[1], sys.box[2]);
    elec_atoms atoms = test_system_atoms(&sys);
    elec_msm_params p = {0};
    elec_cuda_msm_periodic_handle *h = NULL;
    elec_spme_list_stats stats;
    elec_error err;
    test_rng rng = test_rng_seeded(98);
    float4 *host = (float4 *)malloc(n * sizeof(float4)), *d_xyzq = NULL;
    float *f = (float *)malloc(3 * n * sizeof(float)), *d_forces = NULL;
    double *forces = (double *)malloc(3 * n * sizeof(double));
    moved.xyz = (double *)malloc(3 * n * sizeof(double));
    p.scale = ELEC_COULOMB;
    p.excluded_pairs = pairs;
    p.excluded_pair_count = 3000;
    EXPECT(elec_cuda_msm_periodic_create(&box, &atoms, &p, &h, &err) == ELEC_OK, "create: %s",
           err.message);
    if (h) {
        elec_msm_params resolved;
        EXPECT(elec_cuda_msm_periodic_params(h, &resolved, &err) == ELEC_OK, "%s", err.message);
        EXPECT(resolved.cutoff + 1.5 <= 0.5 * box.length[0] &&
                   resolved.cutoff + 1.5 <= 0.5 * box.length[1] &&
                   resolved.cutoff + 1.5 <= 0.5 * box.length[2],
               "cutoff %g A: the %.1f A box is too short for the list", resolved.cutoff,
               box.length[0]);
    }
    EXPECT(cudaMalloc((void **)&d_xyzq, n * sizeof(float4)) == cudaSuccess &&
               cudaMalloc((void **)&d_forces, 3 * n * sizeof(float)) == cudaSuccess,
           "device buffers");
    for (int k = 0; k < 3 && h; k++) {
        double energy = 0.0;
        for (size_t i = 0; i < 3 * n; i++)
            moved.xyz[i] = sys.xyz[i] + steps[k] * (2.0 * test_uniform(&rng) - 1.0);
        for (size_t i = 0; i < n; i++)
            host[i] = make_float4((float)moved.xyz[3 * i], (float)moved.xyz[3 * i + 1],
                                  (float)moved.xyz[3 * i + 2], (float)moved.charge[i]);
        EXPECT(cudaMemcpy(d_xyzq, host, n * sizeof(float4), cudaMemcpyHostToDevice) ==
                   cudaSuccess, "upload");
        EXPECT(elec_cuda_msm_periodic_compute(h, d_xyzq, n, d_forces, 0, &err) == ELEC_OK &&
                   elec_cuda_msm_periodic_energy(h, &energy, 0, &err) == ELEC_OK,
               "%s: %s", names[k], err.message);
        EXPECT(cudaMemcpy(f, d_forces, 3 * n * sizeof(float), cudaMemcpyDeviceToHost) ==
                   cudaSuccess, "forces back");
        for (size_t i = 0; i < 3 * n; i++) forces[i] = f[i];
        pmsm_expect_cpu(&moved, &box, &p, energy, forces, names[k]);
        /* builds: the first compute's, none for the carried list, one more
           past the skin */
        EXPECT(elec_cuda_msm_periodic_list_stats(h, &stats, 0, &err) == ELEC_OK, "stats: %s",
               err.message);
        EXPECT(stats.rebuilds == (k < 2 ? 1 : 2) && !stats.overflow && !stats.whole,
               "%s: %lld builds, overflow %d, whole %d", names[k], stats.rebuilds,
               stats.overflow, stats.whole);
    }
    elec_cuda_msm_periodic_destroy(h);
    cudaFree(d_xyzq);
    cudaFree(d_forces);
    free(host);
    free(f);
    free(forces);
    free(moved.xyz);
    free(pairs);
    test_system_free(&sys);
}

TEST(periodic_gpu_msm_crowded_atoms_outgrow_the_lists_and_are_evaluated_whole) {
    REQUIRE_GPU();
    /* The MSM counterpart of test_gpu_spme's crowded-atoms test, for the
       pair kernel's dealt loop (MSM's pairs are dealt from a counter,
       SPME's are not) in the lists' whole form.  700 of 1000 water
       molecules (moved whole, oxygens at random in a 6 A cube) crowd 2100
       atoms where 21 would be.  At the default cutoff 12 A and the 1.5 A
       skin the handle, sized at create from the mean density, has rows
       for 1.5 times the ~1,030 atoms within 13.5 A of the mean atom, a
       cluster's worth each; here the atoms average 1,890 partners within
       13.5 A (the crowd's up to 2,606), so the build evaluates the
       candidates whole (the stats must say so) without overflowing (no
       cluster can have more candidates than the system's 3,000 atoms,
       under the room's ~5,700 each).  Held to the CPU's double periodic
       MSM at the same float positions by pmsm_expect_cpu's bounds: the
       closest pair is 0.035 A apart, and the differences of float
       coordinates are taken exactly, as in test_gpu_spme's crowd. */
    const size_t molecules = 1000, crowded = 700, n = 3 * molecules;
    test_system sys = test_system_water(molecules, 43);
    size_t *pairs = test_water_exclusions(molecules);
    test_water_crowd(&sys, crowded, 6.0, 44);
    elec_box box = test_box(sys.box[0], sys.box[1], sys.box[2]);
    elec_msm_params p = {0};
    elec_spme_list_stats stats;
    elec_error err;
    double *forces = (double *)malloc(3 * n * sizeof(double)), energy = 0.0;
    p.scale = ELEC_COULOMB;
    p.excluded_pairs = pairs;
    p.excluded_pair_count = 3 * molecules;
    memset(&stats, 0, sizeof stats);
    EXPECT(pmsm_gpu(&sys, &box, &p, &energy, forces, &stats, &err) == ELEC_OK, "GPU: %s",
           err.message);
    printf("     whole %d, overflow %d, %lld pairs evaluated\n", stats.whole, stats.overflow,
           stats.evaluated);
    EXPECT(stats.whole == 1 && stats.overflow == 0, "whole %d, overflow %d", stats.whole,
           stats.overflow);
    pmsm_expect_cpu(&sys, &box, &p, energy, forces, "water 1000, 700 crowded");
    free(forces);
    free(pairs);
    test_system_free(&sys);
}

TEST(periodic_gpu_msm_repeats_and_replays_from_a_graph) {
    REQUIRE_GPU();
    /* The list's slots and its sums come from atomics, so a pair sum's
       order (and its float rounding) changes from run to run: not bit for
       bit.  Each
       atom's force sums ~700 pair terms (12 A) whose magnitudes add to ~10
       times the force they leave (neutral molecules all round), so a new
       order moves it by about sqrt(700) 6e-8 10 = 1.6e-5 relative at most
       (an H100 measured 1.5e-6): forces to 1e-5, energies (summed in
       double from per-atom float potentials) to 1e-6 of sum |q_i phi_i| / 2,
       the size of what is summed, as pmsm_vs_cpu holds them: water's E is
       under 1 % of that size, so held to E itself the same rounding reads
       100 times larger (an H100 measured 1.7e-6 of E, 1.3e-8 of the size).  A replay that skipped a
       stage or read stale buffers is off by 1e-3 or more, and the forces
       are poisoned with NaN before it.  Energy only (NULL forces) gives
       the same energy; fewer atoms than the handle's room compute.  Water
       of 1,000 molecules, then of 22,000 (66,000 atoms, 0.78 a point of
       the finest lattice), whose anterpolation the charge map's default
       maps by tile-binned: there the compute is also held to the CPU's
       periodic MSM (pmsm_expect_cpu). */
    static const size_t waters[2] = {1000, 22000};
    for (int w = 0; w < 2; w++) {
        const size_t molecules = waters[w], n = 3 * molecules;
        test_system sys = test_system_water(molecules, 96);
        size_t *pairs = test_water_exclusions(molecules);
        elec_box box = test_box(sys.box[0], sys.box[1], sys.box[2]);
        elec_atoms atoms = test_system_atoms(&sys);
        elec_msm_params p = {0};
        elec_cuda_msm_periodic_handle *h = NULL;
        elec_error err;
        float4 *host = (float4 *)malloc(n * sizeof(float4)), *d_xyzq = NULL;
        float *f_first = (float *)malloc(3 * n * sizeof(float));
        float *f_replay = (float *)malloc(3 * n * sizeof(float)), *d_forces = NULL;
        double first = 0.0, again = 0.0, replay = 0.0;
        cudaStream_t stream = NULL;
        cudaGraph_t graph = NULL;
        cudaGraphExec_t exec = NULL;
        p.scale = ELEC_COULOMB;
        p.excluded_pairs = pairs;
        p.excluded_pair_count = 3 * molecules;
        double size = 0.0, cpu_energy, *phi = (double *)malloc(n * sizeof(double));
        for (size_t i = 0; i < n; i++)
            host[i] = make_float4((float)sys.xyz[3 * i], (float)sys.xyz[3 * i + 1],
                                  (float)sys.xyz[3 * i + 2], (float)sys.charge[i]);
        EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &cpu_energy, NULL, phi, &err) ==
                   ELEC_OK,
               "CPU: %s", err.message);
        for (size_t i = 0; i < n; i++) size += 0.5 * fabs(sys.charge[i] * phi[i]);
        free(phi);
        EXPECT(elec_cuda_msm_periodic_create(&box, &atoms, &p, &h, &err) == ELEC_OK, "create: %s",
               err.message);
        if (h && w == 1 && ELEC__MSM_CHARGEMAP_VARIANT == ELEC_CHARGEMAP_FASTEST) {
            elec_cuda_chargemap_info info;
            memset(&info, 0, sizeof info);
            EXPECT(elec_cuda_chargemap_describe(h->plan.anterpolation, &info, &err) == ELEC_OK &&
                       info.variant == ELEC_CHARGEMAP_TILE_BINNED,
                   "water 22,000: anterpolation by %s", elec_chargemap_variant_name(info.variant));
        }
        if (h) {
            EXPECT(cudaStreamCreateWithFlags(&stream, GPU_TEST_STREAM_FLAGS) == cudaSuccess &&
                       cudaMalloc((void **)&d_xyzq, n * sizeof(float4)) == cudaSuccess &&
                       cudaMalloc((void **)&d_forces, 3 * n * sizeof(float)) == cudaSuccess &&
                       cudaMemcpy(d_xyzq, host, n * sizeof(float4), cudaMemcpyHostToDevice) ==
                           cudaSuccess,
                   "device buffers");
            EXPECT(elec_cuda_msm_periodic_compute(h, d_xyzq, n, d_forces, stream, &err) ==
                           ELEC_OK &&
                       elec_cuda_msm_periodic_energy(h, &first, stream, &err) == ELEC_OK,
                   "compute: %s", err.message);
            EXPECT(cudaMemcpy(f_first, d_forces, 3 * n * sizeof(float), cudaMemcpyDeviceToHost) ==
                       cudaSuccess, "forces back");
            if (w == 1) {
                double *forces = (double *)malloc(3 * n * sizeof(double));
                for (size_t i = 0; i < 3 * n; i++) forces[i] = f_first[i];
                pmsm_expect_cpu(&sys, &box, &p, first, forces,
                                "water 22,000 with its excluded pairs");
                free(forces);
            }
            EXPECT(elec_cuda_msm_periodic_compute(h, d_xyzq, n, NULL, stream, &err) == ELEC_OK &&
                       elec_cuda_msm_periodic_energy(h, &again, stream, &err) == ELEC_OK,
                   "energy only: %s", err.message);
            EXPECT(fabs(again - first) <= 1e-6 * size, "energy only: %.10f vs %.10f", again, first);
            /* one compute captured in a graph, replayed twice over NaN forces */
            EXPECT(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) == cudaSuccess,
                   "begin capture");
            EXPECT(elec_cuda_msm_periodic_compute(h, d_xyzq, n, d_forces, stream, &err) == ELEC_OK,
                   "captured compute: %s", err.message);
            EXPECT(cudaStreamEndCapture(stream, &graph) == cudaSuccess, "end capture");
            if (graph) EXPECT(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess, "instantiate");
            EXPECT(exec != NULL, "the graph was not instantiated");
            EXPECT(cudaMemset(d_forces, 0xff, 3 * n * sizeof(float)) == cudaSuccess, "poison");
            for (int launch = 0; launch < 2 && exec; launch++)
                EXPECT(cudaGraphLaunch(exec, stream) == cudaSuccess, "launch %d", launch);
            EXPECT(elec_cuda_msm_periodic_energy(h, &replay, stream, &err) == ELEC_OK, "%s",
                   err.message);
            EXPECT(cudaMemcpy(f_replay, d_forces, 3 * n * sizeof(float), cudaMemcpyDeviceToHost) ==
                       cudaSuccess, "forces back");
            double num = 0.0, den = 0.0;
            for (size_t i = 0; i < 3 * n; i++) {
                num += ((double)f_replay[i] - f_first[i]) * ((double)f_replay[i] - f_first[i]);
                den += (double)f_first[i] * f_first[i];
            }
            printf("     water %zu: E %.8f, graph replay %.8f (%.2e of sum |q phi|/2), forces "
                   "%.2e\n",
                   molecules, first, replay, fabs(replay - first) / size, sqrt(num / den));
            EXPECT(fabs(replay - first) <= 1e-6 * size, "graph: %.10f vs %.10f", replay, first);
            EXPECT(sqrt(num / den) <= 1e-5, "graph: forces differ by %.3e", sqrt(num / den));
            /* fewer atoms than the handle's room: the first 60 % of the molecules */
            EXPECT(elec_cuda_msm_periodic_compute(h, d_xyzq, 3 * (molecules * 3 / 5), NULL, stream,
                                                  &err) == ELEC_OK &&
                       elec_cuda_msm_periodic_energy(h, &again, stream, &err) == ELEC_OK,
                   "%zu atoms: %s", 3 * (molecules * 3 / 5), err.message);
            EXPECT(elec_cuda_msm_periodic_compute(h, d_xyzq, n + 1, NULL, stream, &err) ==
                       ELEC_ERR_INVALID_ARG, "more atoms than the handle's room were taken");
        }
        if (exec) cudaGraphExecDestroy(exec);
        if (graph) cudaGraphDestroy(graph);
        elec_cuda_msm_periodic_destroy(h);
        if (stream) cudaStreamDestroy(stream);
        cudaFree(d_xyzq);
        cudaFree(d_forces);
        free(host);
        free(f_first);
        free(f_replay);
        free(pairs);
        test_system_free(&sys);
    }
}

TEST(periodic_gpu_msm_reports_coincident_atoms) {
    REQUIRE_GPU();
    /* Two atoms at one place, not excluded: infinite energy, reported by
       the energy call as the CPU reports it; in a 20 A box (the cell
       kernel) and a 30 A one (the neighbour list: 12 + 1.5 A within half
       of it). */
    const double edges[2] = {20.0, 30.0};
    for (int k = 0; k < 2; k++) {
        test_system s = test_system_random(200, edges[k], 97);
        elec_box box = test_box(edges[k], edges[k], edges[k]);
        elec_error err;
        double e, *f = (double *)malloc(3 * s.count * sizeof(double));
        for (int axis = 0; axis < 3; axis++) s.xyz[3 + axis] = s.xyz[axis];
        EXPECT(pmsm_gpu(&s, &box, NULL, &e, f, NULL, &err) == ELEC_ERR_INVALID_ARG,
               "%g A: coincident atoms were not reported", edges[k]);
        printf("     %g A: %s\n", edges[k], err.message);
        free(f);
        test_system_free(&s);
    }
}

TEST(periodic_handle_refuses_bad_input_without_a_gpu) {
    /* Checked before any GPU is looked for: runs everywhere. */
    double xyz[6] = {0, 0, 0, 1, 1, 1}, q[2] = {1, -1};
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL);
    elec_box box = test_box(20.0, 20.0, 20.0), bad = test_box(20.0, -1.0, 20.0);
    elec_msm_params p = {0};
    elec_cuda_msm_periodic_handle *h = NULL;
    elec_error err;
    size_t pairs[2] = {0, 2}, self[2] = {1, 1};
    EXPECT(elec_cuda_msm_periodic_create(&box, &atoms, &p, NULL, &err) == ELEC_ERR_INVALID_ARG,
           "NULL out: %s", err.message);
    EXPECT(elec_cuda_msm_periodic_create(&bad, &atoms, &p, &h, &err) == ELEC_ERR_INVALID_ARG,
           "negative edge: %s", err.message);
    p.excluded_pairs = pairs;
    p.excluded_pair_count = 1;
    EXPECT(elec_cuda_msm_periodic_create(&box, &atoms, &p, &h, &err) == ELEC_ERR_INVALID_ARG,
           "pair past the atoms: %s", err.message);
    printf("     %s\n", err.message);
    p.excluded_pairs = self;
    EXPECT(elec_cuda_msm_periodic_create(&box, &atoms, &p, &h, &err) == ELEC_ERR_INVALID_ARG,
           "an atom paired with itself: %s", err.message);
    p.excluded_pairs = NULL;
    EXPECT(elec_cuda_msm_periodic_create(&box, &atoms, &p, &h, &err) == ELEC_ERR_INVALID_ARG,
           "a count without pairs: %s", err.message);
    p.excluded_pair_count = 0;
    p.tolerance = 0.5 * ELEC_MSM_GPU_TOLERANCE_FLOOR;
    EXPECT(elec_cuda_msm_periodic_create(&box, &atoms, &p, &h, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "float") != NULL,
           "under float's floor: %s", err.message);
    EXPECT(h == NULL, "a handle came back from a refusal");
    EXPECT(elec_cuda_msm_periodic_compute(NULL, NULL, 0, NULL, 0, &err) == ELEC_ERR_INVALID_ARG,
           "NULL handle: %s", err.message);
    /* the non-periodic calls refuse excluded pairs */
    p.tolerance = 0.0;
    p.excluded_pairs = pairs;
    p.excluded_pair_count = 1;
    {
        double e;
        EXPECT(elec_cuda_msm_energy(&atoms, &p, &e, NULL, &err) == ELEC_ERR_UNSUPPORTED,
               "non-periodic energy with excluded pairs: %s", err.message);
    }
}

/* Deliberate pair (a scan for repeated blocks lists it): test_tolerance.c's CPU knob
   check, on the GPU: one header, two faces, each held to the same tolerance. */
TEST(gpu_msm_keeps_the_tolerance) {
    /* T = 1e-3, 1e-4, 1e-5 (the GPU's floor): the map of 600 random
       charges and of 300 water molecules against the exact sum, and the
       forces of the water against the exact pair forces, each within T:
       the choice aims at a third of T, and the GPU adds float rounding
       of ~1e-6 (GPU_VS_CPU_TOLERANCE's reasoning). */
    static const double tolerances[3] = {1e-3, 1e-4, 1e-5};
    REQUIRE_GPU();
    test_system random = test_system_random(600, 24.0, 51);
    test_system water = test_system_water(300, 52);
    test_system_make_neutral(&random);
    elec_atoms ra = test_system_atoms(&random), wa = test_system_atoms(&water);
    const int dims[3] = {21, 23, 22};
    elec_lattice rl = test_lattice_around(random.box, dims, 2.0);
    elec_lattice wl = test_lattice_around(water.box, dims, 2.0);
    size_t points = elec_lattice_size(&rl);
    double *ref_r = (double *)malloc(points * sizeof(double));
    double *ref_w = (double *)malloc(points * sizeof(double));
    double *wf = (double *)malloc(3 * water.count * sizeof(double));
    double *got = (double *)malloc(3 * water.count * sizeof(double));
    float *map = (float *)malloc(points * sizeof(float));
    double energy;
    elec_error err;
    EXPECT(elec_cpu_dcs_map_double(&ra, &rl, NULL, ref_r, &err) == ELEC_OK, "%s", err.message);
    EXPECT(elec_cpu_dcs_map_double(&wa, &wl, NULL, ref_w, &err) == ELEC_OK, "%s", err.message);
    EXPECT(elec_cpu_coulomb_energy(&wa, 1.0, &energy, wf, &err) == ELEC_OK, "%s", err.message);
    for (int k = 0; k < 3; k++) {
        elec_msm_params p = {0};
        double e_r = 1.0, e_w = 1.0, e_f = 1.0;
        p.tolerance = tolerances[k];
        if (elec_cuda_msm_map(&ra, &rl, &p, map, &err) == ELEC_OK)
            e_r = test_rel_rms_float(map, ref_r, points);
        else
            EXPECT(0, "random map at %g: %s", tolerances[k], err.message);
        if (elec_cuda_msm_map(&wa, &wl, &p, map, &err) == ELEC_OK)
            e_w = test_rel_rms_float(map, ref_w, points);
        else
            EXPECT(0, "water map at %g: %s", tolerances[k], err.message);
        if (elec_cuda_msm_energy(&wa, &p, &energy, got, &err) == ELEC_OK) {
            double num = 0.0, den = 0.0;
            for (size_t i = 0; i < 3 * water.count; i++) {
                num += (got[i] - wf[i]) * (got[i] - wf[i]);
                den += wf[i] * wf[i];
            }
            e_f = sqrt(num / den);
        } else {
            EXPECT(0, "water forces at %g: %s", tolerances[k], err.message);
        }
        printf("     GPU MSM T %.0e: random map %.2e, water map %.2e, water forces %.2e\n",
               tolerances[k], e_r, e_w, e_f);
        EXPECT(e_r <= tolerances[k], "random map %.3e > %g", e_r, tolerances[k]);
        EXPECT(e_w <= tolerances[k], "water map %.3e > %g", e_w, tolerances[k]);
        EXPECT(e_f <= tolerances[k], "water forces %.3e > %g", e_f, tolerances[k]);
    }
    free(ref_r);
    free(ref_w);
    free(wf);
    free(got);
    free(map);
    test_system_free(&random);
    test_system_free(&water);
}

int main(void) {
    gpu_test_start();
    RUN(the_energys_lattices_are_laid_as_the_cpus);
    RUN(bad_input_is_refused_without_a_gpu);
    RUN(every_gpu_stage_matches_the_cpu_stage);
    RUN(gpu_msm_matches_cpu_msm_and_the_exact_sum);
    RUN(gpu_msm_forces_meet_the_tolerance_for_few_dilute_or_cancelling_ions);
    RUN(gpu_msm_map_spread_over_gpus_matches_one_gpu);
    RUN(every_order_and_other_parameters_match_the_cpu);
    RUN(overfull_bins_and_far_atoms_are_summed);
    RUN(atoms_on_map_points_follow_the_coincident_rule);
    RUN(an_empty_system_gives_a_zero_map);
    RUN(a_map_past_floats_range_is_refused);
    RUN(the_maps_check_merges_the_copy_backs_scan_and_the_take_back);
    RUN(stage_times_fit_within_the_call);
    RUN(gpu_msm_energy_and_forces_match_the_cpu);
    RUN(gpu_msm_energy_keeps_its_precision_far_from_the_centre);
    RUN(a_long_cutoff_gets_longer_bins);
    RUN(gpu_msm_energy_edge_cases);
    RUN(gpu_msm_refuses_lattices_past_cudas_grid);
    RUN(gpu_msm_keeps_the_tolerance);
    RUN(periodic_handle_refuses_bad_input_without_a_gpu);
    RUN(periodic_gpu_msm_leaves_out_one_image_of_a_pair_half_a_box_apart);
    RUN(periodic_gpu_msm_matches_the_cpu_periodic_msm);
    RUN(periodic_msm_charge_mean_counts_every_point_once);
    RUN(periodic_gpu_msm_takes_each_computes_own_mean);
    RUN(periodic_gpu_msm_meets_the_cpus_tolerance_against_ewald);
    RUN(periodic_gpu_msm_takes_the_cpus_periodic_choice_and_meets_it);
    RUN(periodic_gpu_msm_meets_the_tolerance_for_crystals_near_their_sites);
    RUN(periodic_gpu_msm_refuses_or_meets_the_tolerance_where_forces_nearly_cancel);
    RUN(periodic_gpu_msm_neighbour_list_is_carried_and_rebuilt);
    RUN(periodic_gpu_msm_crowded_atoms_outgrow_the_lists_and_are_evaluated_whole);
    RUN(periodic_gpu_msm_repeats_and_replays_from_a_graph);
    RUN(periodic_gpu_msm_reports_coincident_atoms);
    return gpu_test_summary();
}
