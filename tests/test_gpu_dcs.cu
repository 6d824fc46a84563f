/* tests/test_gpu_dcs.cu - DCS on the GPU (every rung of the ladder, one
   and every GPU, maps and points) against the CPU double-precision
   reference, and what the GPU's lattice and points paths share (the cap on
   map points, bad input, sums past float's range, the cutoff map's too;
   points far apart, DCS's and MDH's).
   MDH: tests/test_gpu_mdh.cu.  Without a GPU each test skips and says so;
   `make test-gpu` sets ELEC_REQUIRE_GPU=1, and then a missing GPU is a
   failure. */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "elec_cuda.cuh"
#include "tests/test.h"
#include "tests/systems.h"
#include "tests/gpu.h"
#include <atomic>
#include <chrono>
#include <thread>

/* What elec__cuda_parts (a call's parts on several GPUs) did with each
   part: its host thread, when it began (1, 2, ...), and whether it saw
   its partner begin while it waited. */
typedef struct parts_probe {
    std::thread::id thread_of[4];
    std::atomic<int> begun;
    int began[4];
    int failing[4];        /* parts that fail */
    int wait_for[4];       /* a part that waits for another to begin: its index + 1 */
    std::atomic<int> started[4];
    int saw_partner[4];
} parts_probe;

static elec_status probe_part(void *job, int part, int parts, int device, elec_error *err) {
    parts_probe *p = (parts_probe *)job;
    (void)parts;
    (void)device;
    p->thread_of[part] = std::this_thread::get_id();
    p->began[part] = ++p->begun;
    p->started[part].store(1);
    if (p->wait_for[part]) { /* up to 10 s for the partner, which runs side by side */
        const int partner = p->wait_for[part] - 1;
        for (int k = 0; k < 10000 && !p->started[partner].load(); k++)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        p->saw_partner[part] = p->started[partner].load();
    }
    return p->failing[part] ? elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "part %d failed", part)
                            : ELEC_OK;
}

static void probe_reset(parts_probe *p) {
    p->begun.store(0);
    for (int i = 0; i < 4; i++) {
        p->thread_of[i] = std::thread::id();
        p->began[i] = p->failing[i] = p->wait_for[i] = p->saw_partner[i] = 0;
        p->started[i].store(0);
    }
}

/* The runner of a call spread over GPUs, on the host (no GPU needed: its
   parts here only record what ran where): parts on devices 0, 1, 0, 2
   run on three host threads, the device 0's two on the calling thread in
   order, devices 1 and 2 side by side (part 1 sees part 3 begin while it
   waits); a failing part's message is the call's, the lowest part's
   where two fail; after a failure a device's later parts do not begin. */
TEST(parts_on_gpus_run_side_by_side_and_report_the_first_failure) {
    static const int devices[4] = {0, 1, 0, 2}, one_device[3] = {0, 0, 0};
    parts_probe *p = new parts_probe;
    elec_error err;
    probe_reset(p);
    p->wait_for[1] = 4; /* part 1 waits for part 3 */
    EXPECT(elec__cuda_parts(devices, 4, probe_part, p, &err) == ELEC_OK, "%s", err.message);
    EXPECT(p->thread_of[0] == std::this_thread::get_id() &&
               p->thread_of[2] == std::this_thread::get_id() && p->began[0] < p->began[2],
           "device 0's parts: not on the calling thread in turn");
    EXPECT(p->thread_of[1] != p->thread_of[0] && p->thread_of[3] != p->thread_of[0] &&
               p->thread_of[1] != p->thread_of[3],
           "devices 1 and 2 did not run on threads of their own");
    EXPECT(p->saw_partner[1], "part 1 waited 10 s and part 3 had not begun: not side by side");
    probe_reset(p);
    p->failing[1] = p->failing[3] = 1;
    EXPECT(elec__cuda_parts(devices, 4, probe_part, p, &err) == ELEC_ERR_INVALID_ARG &&
               strcmp(err.message, "part 1 failed") == 0,
           "two failing parts: '%s', not the lowest's", err.message);
    probe_reset(p);
    p->failing[0] = 1;
    EXPECT(elec__cuda_parts(one_device, 3, probe_part, p, &err) == ELEC_ERR_INVALID_ARG &&
               p->began[1] == 0 && p->began[2] == 0,
           "after part 0 failed, parts 1 and 2 of its device began (%d, %d)", p->began[1],
           p->began[2]);
    delete p;
}

/* The GPU map of one variant against the double reference. */
static void check_dcs_variant(const elec_atoms *atoms, const elec_lattice *l,
                              elec_dcs_variant variant, const double *ref,
                              const char *what) {
    size_t n = elec_lattice_size(l);
    float *map = (float *)malloc(n * sizeof *map);
    elec_dcs_params p = {0};
    elec_error err;
    p.variant = variant;
    for (size_t i = 0; i < n; i++) map[i] = NAN; /* every point must be written */
    elec_status s = elec_cuda_dcs_map(atoms, l, &p, map, &err);
    EXPECT(s == ELEC_OK, "%s %s: %s", what, elec_dcs_variant_name(variant),
           err.message);
    if (s == ELEC_OK) {
        double e = test_rel_rms_float(map, ref, n);
        printf("     %-8s %-18s relative RMS error %.2e\n", what,
               elec_dcs_variant_name(variant), e);
        EXPECT(test_all_finite_float(map, n), "%s: map not finite", what);
        EXPECT(e <= GPU_REL_RMS_TOLERANCE, "%s %s: relative RMS %.3e", what,
               elec_dcs_variant_name(variant), e);
    }
    free(map);
}

static double *dcs_reference(const elec_atoms *atoms, const elec_lattice *l) {
    double *ref = (double *)malloc(elec_lattice_size(l) * sizeof *ref);
    elec_error err;
    elec_status s = elec_cpu_dcs_map_double(atoms, l, NULL, ref, &err);
    EXPECT(s == ELEC_OK, "reference: %s", err.message);
    return ref;
}

TEST(rsqrt_on_fma_pipe_is_float_accurate) {
    /* The hybrid kernel's software rsqrt must be as good as the SFU's
       (2^-22.9 = 1.3e-7): checked on the CPU over 1e6 values spread
       log-uniformly over 1e-6 .. 1e8 (squared distances in A^2). */
    test_rng rng = test_rng_seeded(11);
    double worst = 0.0;
    for (int i = 0; i < 1000000; i++) {
        float x = (float)pow(10.0, -6.0 + 14.0 * test_uniform(&rng));
        double exact = 1.0 / sqrt((double)x);
        double e = fabs(elec_rsqrt_fma_pipe(x) - exact) / exact;
        if (e > worst) worst = e;
    }
    printf("     max relative error %.2e\n", worst);
    EXPECT(worst <= 2.5e-7, "max relative error %.3e", worst);
}

TEST(every_dcs_variant_matches_double_reference_on_random_atoms) {
    REQUIRE_GPU();
    test_system sys = test_system_random(10000, 30.0, 2026);
    elec_atoms atoms = test_system_atoms(&sys);
    elec_lattice l = test_lattice_awkward(30.0);
    double *ref = dcs_reference(&atoms, &l);
    for (int v = 0; v < ELEC_DCS_VARIANT_COUNT; v++)
        check_dcs_variant(&atoms, &l, (elec_dcs_variant)v, ref, "random");
    free(ref);
    test_system_free(&sys);
}

TEST(default_dcs_matches_reference_on_water_and_crystal) {
    REQUIRE_GPU();
    test_system water = test_system_water(3000, 7);
    test_system salt = test_system_nacl(4, 5.64);
    test_system *systems[2] = {&water, &salt};
    const char *names[2] = {"water", "NaCl"};
    for (int s = 0; s < 2; s++) {
        elec_atoms atoms = test_system_atoms(systems[s]);
        /* Shifted by a quarter spacing so no ion sits on a lattice point. */
        elec_lattice l = test_lattice_awkward(systems[s]->box[0]);
        for (int axis = 0; axis < 3; axis++) l.origin[axis] += 0.25 * l.spacing[axis];
        double *ref = dcs_reference(&atoms, &l);
        check_dcs_variant(&atoms, &l, ELEC_DCS_FASTEST, ref, names[s]);
        free(ref);
    }
    test_system_free(&water);
    test_system_free(&salt);
}

TEST(dcs_on_every_gpu_matches_one_gpu) {
    REQUIRE_GPU();
    test_system sys = test_system_random(5000, 25.0, 99);
    elec_atoms atoms = test_system_atoms(&sys);
    elec_lattice l = test_lattice_awkward(25.0);
    size_t n = elec_lattice_size(&l);
    float *one = (float *)malloc(n * sizeof *one), *all = (float *)malloc(n * sizeof *all);
    elec_dcs_params p = {0};
    elec_error err;
    const int gpus = elec_cuda_device_count();
    printf("     %d GPU(s)\n", gpus);
    EXPECT(elec_cuda_dcs_map(&atoms, &l, &p, one, &err) == ELEC_OK, "%s", err.message);
    p.gpus.count = ELEC_ALL_GPUS;
    EXPECT(elec_cuda_dcs_map(&atoms, &l, &p, all, &err) == ELEC_OK, "%s", err.message);
    /* The same kernel on the same slices: identical bits. */
    EXPECT(memcmp(one, all, n * sizeof *one) == 0, "multi-GPU map differs");
    p.variant = ELEC_DCS_UNROLL8_COALESCED;
    EXPECT(elec_cuda_dcs_map(&atoms, &l, &p, all, &err) == ELEC_OK, "%s", err.message);
    double *ref = dcs_reference(&atoms, &l);
    EXPECT(test_rel_rms_float(all, ref, n) <= GPU_REL_RMS_TOLERANCE,
           "multi-GPU unroll8 error %.3e", test_rel_rms_float(all, ref, n));
    free(ref);
    free(one);
    free(all);
    test_system_free(&sys);
    /* With one GPU, "every GPU" is that one (a device may not be listed
       twice: constant memory is one a device), so the comparisons above
       ran the one-GPU path twice: the split over GPUs was not tested (a
       skip, unless a check above failed: a skip would hide that). */
    if (gpus < 2 && !test__current_failed)
        SKIP("one GPU here: the slices' split over GPUs needs two or more");
}

TEST(atom_on_a_lattice_point_leaves_that_point_finite) {
    REQUIRE_GPU();
    /* Three atoms: one exactly on lattice point (2,3,1), two elsewhere.  The
       documented rule: that point's value is the sum over the other two. */
    elec_lattice l = {{6, 7, 5}, {1.0, 2.0, 3.0}, {0.5, 0.5, 0.5}};
    double xyz[9] = {2.0, 3.5, 3.5, 0.3, 0.7, 0.2, 4.1, 3.3, 2.9};
    double q[3] = {1.0, -0.5, 0.25};
    elec_atoms atoms = elec_atoms_from_xyz(3, xyz, q, NULL);
    size_t n = elec_lattice_size(&l), on = 2 + 6 * (3 + 7 * 1);
    double *ref = dcs_reference(&atoms, &l);
    double other = 0.0;
    for (int a = 1; a < 3; a++) {
        double p[3] = {2.0, 3.5, 3.5};
        other += q[a] / sqrt(elec_distance2(p, xyz + 3 * a));
    }
    EXPECT(fabs(ref[on] - other) < 1e-12, "reference at the atom: %g, want %g",
           ref[on], other);
    for (int v = 0; v < ELEC_DCS_VARIANT_COUNT; v++) {
        float *map = (float *)malloc(n * sizeof *map);
        elec_dcs_params p = {0};
        elec_error err;
        p.variant = (elec_dcs_variant)v;
        EXPECT(elec_cuda_dcs_map(&atoms, &l, &p, map, &err) == ELEC_OK, "%s",
               err.message);
        EXPECT(test_all_finite_float(map, n), "%s: map not finite",
               elec_dcs_variant_name(p.variant));
        EXPECT(fabs(map[on] - other) <= 1e-5 * fabs(other),
               "%s: %g at the atom, want %g", elec_dcs_variant_name(p.variant),
               map[on], other);
        free(map);
    }
    free(ref);
}

TEST(dcs_points_match_double_reference) {
    REQUIRE_GPU();
    test_system sys = test_system_random(10000, 30.0, 5);
    elec_atoms atoms = test_system_atoms(&sys);
    elec_lattice l = test_lattice_awkward(30.0);
    size_t n = elec_lattice_face_count(&l);
    double *xyz = (double *)malloc(3 * n * sizeof *xyz), *ref = (double *)malloc(n * sizeof *ref);
    float *got = (float *)malloc(n * sizeof *got);
    elec_dcs_params p = {0};
    elec_error err;
    elec_lattice_face_points(&l, xyz, NULL);
    p.scale = ELEC_COULOMB;
    EXPECT(elec_cpu_dcs_points_double(&atoms, xyz, n, &p, ref, &err) == ELEC_OK, "%s", err.message);
    /* on one GPU, then in three parts (gpu_three_parts: runs of the points
       on GPUs 0, 1, 0, or on one GPU in turn), every point written */
    for (int spread = 0; spread < 2; spread++) {
        int devices[3];
        if (spread) p.gpus = gpu_three_parts(devices);
        for (size_t i = 0; i < n; i++) got[i] = NAN;
        EXPECT(elec_cuda_dcs_points(&atoms, xyz, n, &p, got, &err) == ELEC_OK, "%s",
               err.message);
        double e = test_rel_rms_float(got, ref, n);
        printf("     %s: relative RMS error %.2e over %zu points\n",
               spread ? "three parts" : "one GPU", e, n);
        EXPECT(test_all_finite_float(got, n), "a point not written");
        EXPECT(e <= GPU_REL_RMS_TOLERANCE, "relative RMS %.3e", e);
    }
    free(xyz);
    free(ref);
    free(got);
    test_system_free(&sys);
}

/* Points far apart (tests/systems.h, test_spread_points), DCS and MDH on
   the GPU against the CPU's double: each within 1e-5 of its terms' sizes
   (float rounding over 40 terms, rsqrt's 2^-22.9 among it, is under 1e-6).
   The GPU took every point relative to the centre of their box, 5e9 A
   from the ions where one point lay 1e10 A away; now a region at a time. */
TEST(points_far_apart_keep_float_precision) {
    REQUIRE_GPU();
    double points[3 * TEST_SPREAD_POINTS], normals[3 * TEST_SPREAD_POINTS];
    double want[TEST_SPREAD_POINTS];
    float got[TEST_SPREAD_POINTS];
    test_system s = test_spread_points(points, normals);
    elec_atoms atoms = test_system_atoms(&s);
    elec_mdh_params mdh = {0};
    elec_error err;
    EXPECT(elec_cpu_dcs_points_double(&atoms, points, TEST_SPREAD_POINTS, NULL, want, &err) ==
               ELEC_OK, "%s", err.message);
    EXPECT(elec_cuda_dcs_points(&atoms, points, TEST_SPREAD_POINTS, NULL, got, &err) ==
               ELEC_OK, "%s", err.message);
    double e = test_spread_error(&s, points, TEST_SPREAD_POINTS, got, want, 1.0);
    printf("     DCS: worst error %.2e of the terms' sizes\n", e);
    EXPECT(e <= 1e-5, "GPU DCS at points far apart: %.3e", e);
    mdh.kappa = 0.1;
    EXPECT(elec_cpu_mdh_points_double(&atoms, points, TEST_SPREAD_POINTS, &mdh, want, &err) ==
               ELEC_OK, "%s", err.message);
    EXPECT(elec_cuda_mdh_points(&atoms, points, TEST_SPREAD_POINTS, &mdh, got, &err) ==
               ELEC_OK, "%s", err.message);
    e = test_spread_error(&s, points, TEST_SPREAD_POINTS, got, want, 1.0);
    printf("     MDH: worst error %.2e of the terms' sizes\n", e);
    EXPECT(e <= 1e-5, "GPU MDH at points far apart: %.3e", e);
    {
        /* in three parts: each part's regions of its own */
        int devices[3];
        mdh.gpus = gpu_three_parts(devices);
        for (int i = 0; i < TEST_SPREAD_POINTS; i++) got[i] = NAN; /* each must be written */
        EXPECT(elec_cuda_mdh_points(&atoms, points, TEST_SPREAD_POINTS, &mdh, got, &err) ==
                   ELEC_OK, "%s", err.message);
        EXPECT(test_all_finite_float(got, TEST_SPREAD_POINTS), "a point not written");
        e = test_spread_error(&s, points, TEST_SPREAD_POINTS, got, want, 1.0);
        printf("     MDH in three parts: worst error %.2e of the terms' sizes\n", e);
        EXPECT(e <= 1e-5, "GPU MDH in three parts at points far apart: %.3e", e);
    }
    test_system_free(&s);
}

TEST(gpu_maps_past_the_lattice_cap_are_refused_before_any_work) {
    REQUIRE_GPU();
    /* 2^28 + 16384 points, one z-plane: refused before a byte is allocated
       (the map passed has room for none of it) */
    double xyz[3] = {0.0, 0.0, 0.0}, q = 1.0;
    elec_atoms atom = elec_atoms_from_xyz(1, xyz, &q, NULL);
    elec_lattice big = {{16385, 16384, 1}, {0, 0, 0}, {1, 1, 1}};
    float map[1];
    elec_dcs_params dp = {0};
    elec_cutoff_params cp = {0};
    elec_msm_params mp = {0};
    elec_error err;
    EXPECT(elec_cuda_dcs_map(&atom, &big, &dp, map, &err) == ELEC_ERR_UNSUPPORTED,
           "DCS: %s", err.message);
    {   /* under the cap but past CUDA's grids (65535 blocks along y, and
           along z a GPU's planes on the volume rungs): refused by name
           before any work, where the launch failed after the allocations */
        /* spanning at most 1024 A, so one box: the map itself (a lattice
           longer is summed in boxes of 1024 A, which fit CUDA's grids at
           spacings above 2 mA; a box past them is refused as well) */
        elec_lattice tall = {{1, 600000, 1}, {0, 0, 0}, {1, 1e-3, 1}};
        elec_lattice deep = {{8, 8, 70000}, {0, 0, 0}, {1, 1, 1e-2}};
        elec_lattice boxed = {{1, 2000000, 1}, {0, 0, 0}, {1, 1e-3, 1}};
        EXPECT(elec_cuda_dcs_map(&atom, &tall, &dp, map, &err) == ELEC_ERR_UNSUPPORTED &&
                   strstr(err.message, "along y"),
               "DCS, 600000 rows: %s", err.message);
        EXPECT(elec_cuda_dcs_map(&atom, &deep, &dp, map, &err) == ELEC_ERR_UNSUPPORTED &&
                   strstr(err.message, "along z"),
               "DCS, 70000 planes: %s", err.message);
        EXPECT(elec_cuda_dcs_map(&atom, &boxed, &dp, map, &err) == ELEC_ERR_UNSUPPORTED &&
                   strstr(err.message, "boxes of 1 x 1024001 x 1"),
               "DCS, boxes of 1024001 rows: %s", err.message);
    }
    EXPECT(elec_cuda_cutoff_map(&atom, &big, &cp, map, &err) == ELEC_ERR_UNSUPPORTED,
           "cutoff: %s", err.message);
    EXPECT(elec_cuda_msm_map(&atom, &big, &mp, map, &err) == ELEC_ERR_UNSUPPORTED,
           "MSM: %s", err.message);
}

/* A map whose lattice spans more than 1024 A along an axis is summed a box
   at a time, each about its own centre, as the CPU's (tests/test_dcs.c,
   long_lattices_keep_float_precision).  With one reference at the
   lattice's centre three points 1e9 A apart dropped an atom 3 A from the
   first (rounded onto it) and a 16,000 A line of points with the atoms at
   one end erred 1.9e-5 (relative RMS) on the CPU; a lattice boxed along
   every axis checks where each box lands.  Progress still rises to 1 over
   the boxes; the 600,000-row lattice CUDA's grids refused as one box now
   runs in boxes of 1,025 rows.  Each box is copied into its window of the
   map: a map of boxes 2049 points wide checks the windows' strides, atoms
   on lattice points of three boxes (the first, the next along y, the
   last) the coincident rule written into them, and a scale (kcal/(mol e))
   the scaling through the windows. */
TEST(long_gpu_lattices_keep_float_precision) {
    REQUIRE_GPU();
    const double xyz[6] = {3.0, 0.0, 0.0, 0.0, 4.0, 0.0}, q[2] = {1.0, 1.0};
    const elec_atoms ions = elec_atoms_from_xyz(2, xyz, q, NULL);
    const elec_lattice far = {{3, 1, 1}, {0.0, 0.0, 0.0}, {1e9, 1.0, 1.0}};
    const elec_lattice line = {{16001, 2, 2}, {-5.0, -1.0, -1.0}, {1.0, 1.5, 1.5}};
    const elec_lattice corners = {{5, 6, 7}, {-600.0, -700.0, -800.0}, {300.0, 280.0, 260.0}};
    const elec_lattice tall = {{1, 600000, 1}, {0.5, -3e5, 0.5}, {1.0, 1.0, 1.0}};
    /* boxes of 2049 x 100 x 100 points and of 1 x 100 x 100 */
    const elec_lattice thick = {{2050, 100, 100}, {-500.0, -20.0, -20.0}, {0.5, 0.4, 0.4}};
    /* on `corners`' points (0, 1, 1), (2, 4, 3) and (4, 5, 6): boxes of 4
       points an axis, so in the first box, the next along y and the last */
    const double on_xyz[9] = {-600.0, -420.0, -540.0, 0.0, 420.0, -20.0, 600.0, 700.0, 760.0};
    const double on_q[3] = {1.0, -0.5, 0.75};
    const elec_atoms on_points = elec_atoms_from_xyz(3, on_xyz, on_q, NULL);
    test_system s = test_system_random(50, 10.0, 71);
    test_system spread = test_system_random(60, 1600.0, 73);
    test_system few = test_system_random(8, 20.0, 75);
    const elec_atoms atoms = test_system_atoms(&s), wide = test_system_atoms(&spread);
    const elec_atoms eight = test_system_atoms(&few);
    const elec_lattice *lattices[5] = {&line, &corners, &tall, &thick, &corners};
    const elec_atoms *sets[5] = {&atoms, &wide, &ions, &eight, &on_points};
    const char *names[5] = {"a 16,000 A line", "boxes on every axis", "600,000 rows",
                            "2050 x 100 x 100", "atoms on points of three boxes"};
    float three[3];
    elec_error err;
    EXPECT(elec_cuda_dcs_map(&ions, &far, NULL, three, &err) == ELEC_OK &&
               fabs(three[0] - (1.0 / 3.0 + 0.25)) <= 1e-6 && three[1] > 0.0f,
           "%s (point 0: %.7g, want %.7g)", err.message, three[0], 1.0 / 3.0 + 0.25);
    for (int c = 0; c < 5; c++) {
        const size_t points = elec_lattice_size(lattices[c]);
        float *got = (float *)malloc(points * sizeof *got);
        double *want = (double *)malloc(points * sizeof *want), e;
        test_progress_log log;
        elec_dcs_params dp, cpu;
        memset(&dp, 0, sizeof dp);
        memset(&cpu, 0, sizeof cpu);
        memset(&log, 0, sizeof log);
        log.increasing = 1;
        dp.progress = test_log_progress;
        dp.progress_user = &log;
        dp.scale = cpu.scale = ELEC_COULOMB;
        for (size_t i = 0; i < points; i++) got[i] = NAN; /* every point must be written */
        EXPECT(elec_cpu_dcs_map_double(sets[c], lattices[c], &cpu, want, &err) == ELEC_OK,
               "%s", err.message);
        EXPECT(elec_cuda_dcs_map(sets[c], lattices[c], &dp, got, &err) == ELEC_OK, "%s: %s",
               names[c], err.message);
        e = test_rel_rms_float(got, want, points);
        printf("     %s: relative RMS %.2e; progress %d calls, last %g\n", names[c], e,
               log.calls, log.last);
        EXPECT(test_all_finite_float(got, points), "%s: map not finite", names[c]);
        EXPECT(e <= 1e-5, "%s: relative RMS %.3e", names[c], e);
        EXPECT(log.increasing && log.last == 1.0, "%s: progress increasing %d, last %g",
               names[c], log.increasing, log.last);
        free(got);
        free(want);
    }
    test_system_free(&s);
    test_system_free(&spread);
    test_system_free(&few);
}

/* The README's limit along x (2^31 - 65,537 points a box): rows of 2^29 +
   1 points (2 GiB of floats each, past cudaDevAttrMaxPitch's 2^31 - 1
   bytes, which a review took for the copies' limit: the copies into host
   memory take them, H100 and CUDA 13.0).  One atom 10 A off two lines 537
   A long (one box): q / r at every point sampled, every point written. */
TEST(rows_of_2_to_the_29_points_come_back_whole) {
    REQUIRE_GPU();
    const double xyz[3] = {100.0, 10.0, 0.0}, q = 1.0;
    const elec_atoms atom = elec_atoms_from_xyz(1, xyz, &q, NULL);
    const elec_lattice row = {{(1 << 29) + 1, 2, 1}, {0.0, 0.0, 0.0}, {1e-6, 1.0, 1.0}};
    const size_t points = elec_lattice_size(&row);
    size_t free_bytes = 0, total_bytes = 0, finite = 0;
    double worst = 0.0;
    int max_pitch = 0;
    elec_dcs_params dp;
    elec_error err;
    float *map;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess ||
        free_bytes < ((size_t)24 << 30))
        SKIP("rows of 2^29 + 1 points take 17 GB of slices on the GPU; %zu MB free",
             free_bytes >> 20);
    cudaDeviceGetAttribute(&max_pitch, cudaDevAttrMaxPitch, 0);
    printf("     cudaDevAttrMaxPitch %d bytes, a row %zu\n", max_pitch,
           (size_t)row.dims[0] * sizeof(float));
    map = (float *)malloc(points * sizeof *map);
    if (!map) SKIP("no 4 GB of host memory for the map");
    for (size_t i = 0; i < points; i++) map[i] = NAN;
    memset(&dp, 0, sizeof dp);
    dp.max_points = (size_t)1 << 31;
    EXPECT(elec_cuda_dcs_map(&atom, &row, &dp, map, &err) == ELEC_OK, "%s", err.message);
    for (size_t i = 0; i < points; i++) finite += isfinite(map[i]) ? 1u : 0u;
    for (size_t i = 0; i < points; i += points / 1000) {
        const size_t x = i % (size_t)row.dims[0], y = i / (size_t)row.dims[0];
        const double dx = (double)x * 1e-6 - 100.0, dy = (double)y - 10.0;
        const double want = 1.0 / sqrt(dx * dx + dy * dy);
        worst = fmax(worst, fabs(map[i] - want) / want);
    }
    printf("     %zu of %zu points finite; worst of 1001 samples %.2e from q / r\n", finite,
           points, worst);
    EXPECT(finite == points, "%zu points not written", points - finite);
    EXPECT(worst <= 1e-5, "relative error %.3e", worst);
    free(map);
}

TEST(dcs_map_of_a_real_protein_matches_reference) {
    REQUIRE_GPU();
    elec_structure mol;
    elec_error err;
    if (elec_read_pqr("../shared/data/structures/1d7h-min.pqr", &mol, &err) != ELEC_OK)
        SKIP("../shared/data/structures/1d7h-min.pqr not readable: %s", err.message);
    elec_atoms atoms = elec_structure_atoms(&mol);
    elec_lattice l;
    EXPECT(elec_lattice_around(&atoms, 1.5, 5.0, &l, &err) == ELEC_OK, "%s", err.message);
    double *ref = dcs_reference(&atoms, &l);
    check_dcs_variant(&atoms, &l, ELEC_DCS_FASTEST, ref, "1d7h");
    free(ref);
    elec_structure_free(&mol);
}

TEST(gpu_paths_refuse_bad_input) {
    REQUIRE_GPU();
    double xyz[3] = {0, 0, 0}, q[1] = {1};
    elec_atoms atoms = elec_atoms_from_xyz(1, xyz, q, NULL);
    elec_lattice l = {{4, 4, 4}, {0, 0, 0}, {1, 1, 1}};
    float map[64], pot[1];
    elec_dcs_params p = {0};
    elec_mdh_params m = {0};
    elec_error err;
    int twice[2] = {0, 0};
    EXPECT(elec_cuda_dcs_map(&atoms, &l, &p, NULL, &err) == ELEC_ERR_INVALID_ARG, "NULL map");
    p.gpus.count = 2;
    p.gpus.devices = twice;
    EXPECT(elec_cuda_dcs_map(&atoms, &l, &p, map, &err) != ELEC_OK, "device listed twice");
    p.gpus.count = 1;
    twice[0] = 1000;
    EXPECT(elec_cuda_dcs_map(&atoms, &l, &p, map, &err) == ELEC_ERR_NO_DEVICE,
           "device 1000: %s", err.message);
    EXPECT(elec_cuda_mdh_points(&atoms, xyz, 1, &m, pot, &err) == ELEC_ERR_INVALID_ARG,
           "MDH without radii: %s", err.message);
    l.spacing[1] = 0.0;
    p.gpus.count = 0;
    EXPECT(elec_cuda_dcs_map(&atoms, &l, &p, map, &err) == ELEC_ERR_INVALID_ARG, "zero spacing");
}

TEST(gpu_maps_and_points_past_floats_range_are_refused) {
    REQUIRE_GPU();
    /* Charges of 1e308 e (test_huge_charges) are inf in float: every rung's
       map and the points fail, naming the method, where the map once came
       back ELEC_OK full of inf; the cutoff map too (tests/test_cutoff.c). */
    elec_atoms atoms = test_huge_charges();
    elec_lattice l = test_lattice_cube(6, 0.0, 1.0);
    double pts[6] = {0.0, 0.0, 5.0, 1.0, 1.0, 1.0};
    float map[216], phi[2];
    elec_dcs_params p = {0};
    elec_cutoff_params cp = {0};
    elec_error err;
    for (int v = 0; v < ELEC_DCS_VARIANT_COUNT; v++) {
        p.variant = (elec_dcs_variant)v;
        elec_status s = elec_cuda_dcs_map(&atoms, &l, &p, map, &err);
        EXPECT(test_refused_past_range(s, &err, "GPU DCS map", "float"), "%s: status %d, %s",
               elec_dcs_variant_name(p.variant), (int)s, err.message);
    }
    p.variant = ELEC_DCS_FASTEST;
    elec_status s = elec_cuda_dcs_points(&atoms, pts, 2, &p, phi, &err);
    EXPECT(test_refused_past_range(s, &err, "GPU DCS at points", "float"),
           "points: status %d, %s", (int)s, err.message);
    s = elec_cuda_cutoff_map(&atoms, &l, &cp, map, &err);
    EXPECT(test_refused_past_range(s, &err, "GPU cutoff map", "float"),
           "cutoff: status %d, %s", (int)s, err.message);
}

int main(void) {
    gpu_test_start();
    RUN(parts_on_gpus_run_side_by_side_and_report_the_first_failure);
    RUN(rsqrt_on_fma_pipe_is_float_accurate);
    RUN(every_dcs_variant_matches_double_reference_on_random_atoms);
    RUN(default_dcs_matches_reference_on_water_and_crystal);
    RUN(dcs_on_every_gpu_matches_one_gpu);
    RUN(atom_on_a_lattice_point_leaves_that_point_finite);
    RUN(dcs_points_match_double_reference);
    RUN(points_far_apart_keep_float_precision);
    RUN(gpu_maps_past_the_lattice_cap_are_refused_before_any_work);
    RUN(long_gpu_lattices_keep_float_precision);
    RUN(rows_of_2_to_the_29_points_come_back_whole);
    RUN(dcs_map_of_a_real_protein_matches_reference);
    RUN(gpu_paths_refuse_bad_input);
    RUN(gpu_maps_and_points_past_floats_range_are_refused);
    return gpu_test_summary();
}
