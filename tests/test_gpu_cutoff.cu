/* GPU cutoff maps (elec_cuda_cutoff_map) against the CPU double-precision
   direct sum with the same smoothed S(r) (elec_cpu_cutoff_map_double):
   both kinds, awkward lattice sizes, an overfull bin (the CPU overflow
   path), atoms outside the lattice, a staged map past float's range, an
   empty system and bad input.
   Without a GPU each GPU test skips and says so; `make test-gpu` sets
   ELEC_REQUIRE_GPU=1, and then a missing GPU is a failure. */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "elec_cuda.cuh"
#include "tests/test.h"
#include "tests/systems.h"
#include "tests/gpu.h"

/* Float rounding: positions are rounded to float relative to the bins'
   corner (at most ~60 A here: 1.9e-6 A, 4e-7 of r at 5 A), rsqrt carries
   2^-22.9, and each point sums ~500-700 terms within 12 A in float
   (~sqrt(700) ulp = 1.6e-6 of the terms' size).  The map is dominated by
   points near atoms, where those relative errors carry over: the target
   of 1e-5 relative RMS holds with margin. */
#define CUTOFF_REL_RMS_TOLERANCE 1e-5


/* 37 x 29 x 23 points (no count a multiple of the 8-point blocks) over
   the box +-3 A, spacings differing per axis; shifted by a quarter spacing
   so that no crystal ion sits on a lattice point. */
static elec_lattice awkward_lattice(const double box[3]) {
    const int dims[3] = {37, 29, 23};
    return test_lattice_around(box, dims, 3.0);
}

static const char *kind_name(elec_cutoff_kind kind) {
    return kind == ELEC_CUTOFF_SHIFTED ? "shifted" : "msm";
}

/* The GPU map against the double reference; returns the GPU map (caller
   frees) so tests can compare maps with each other. */
static float *check_cutoff(const elec_atoms *atoms, const elec_lattice *l,
                           const elec_cutoff_params *p, const char *what) {
    size_t n = elec_lattice_size(l);
    float *map = (float *)malloc(n * sizeof *map);
    double *ref = (double *)malloc(n * sizeof *ref);
    elec_error err;
    elec_status s;
    for (size_t i = 0; i < n; i++) map[i] = NAN; /* every point must be written */
    s = elec_cpu_cutoff_map_double(atoms, l, p, ref, &err);
    EXPECT(s == ELEC_OK, "%s reference: %s", what, err.message);
    s = elec_cuda_cutoff_map(atoms, l, p, map, &err);
    EXPECT(s == ELEC_OK, "%s %s: %s", what, kind_name(p->kind), err.message);
    if (s == ELEC_OK) {
        double e = test_rel_rms_float(map, ref, n);
        printf("     %-10s %-7s relative RMS error %.2e (max |diff| %.2e)\n", what,
               kind_name(p->kind), e, test_max_abs_diff_float(map, ref, n));
        EXPECT(test_all_finite_float(map, n), "%s: map not finite", what);
        EXPECT(e <= CUTOFF_REL_RMS_TOLERANCE, "%s %s: relative RMS %.3e", what,
               kind_name(p->kind), e);
    }
    free(ref);
    return map;
}

/* How many atoms overflow the bins the GPU path builds for lattice l at
   the default parameters (the first layer's overflow). */
static size_t overflow_of_default_bins(const elec_atoms *atoms, const elec_lattice *l) {
    elec_cutoff_params r;
    elec_cutoff_params_resolve(NULL, &r, NULL);
    double origin[3], extent[3];
    elec_bins b;
    elec_error err;
    size_t overflow;
    for (int axis = 0; axis < 3; axis++) {
        origin[axis] = l->origin[axis] - r.cutoff;
        extent[axis] = (l->dims[axis] - 1) * l->spacing[axis] + 2.0 * r.cutoff;
    }
    EXPECT(elec_bins_build(atoms, origin, extent, r.bin_length, &b, &err) == ELEC_OK,
           "%s", err.message);
    overflow = b.overflow_count;
    elec_bins_free(&b);
    return overflow;
}

TEST(gpu_cutoff_map_matches_double_reference) {
    REQUIRE_GPU();
    test_system random = test_system_random(3000, 30.0, 61);
    test_system water = test_system_water(800, 62);
    test_system salt = test_system_nacl(3, 5.64);
    test_system *systems[3] = {&random, &water, &salt};
    const char *names[3] = {"random", "water", "NaCl"};
    for (int s = 0; s < 3; s++) {
        elec_atoms atoms = test_system_atoms(systems[s]);
        elec_lattice l = awkward_lattice(systems[s]->box);
        for (int kind = 0; kind <= 1; kind++) {
            elec_cutoff_params p = {0}; /* cutoff 12 A, C2 splitting, 3.91 A bins */
            p.kind = (elec_cutoff_kind)kind;
            free(check_cutoff(&atoms, &l, &p, names[s]));
        }
    }
    test_system_free(&random);
    test_system_free(&water);
    test_system_free(&salt);
}

/* Spread over GPUs (three parts; gpu_three_parts): each GPU maps a slab
   of z planes with the atoms in the cutoff's reach of it, relative to
   the slab's centre; the map agrees with the double reference as one
   GPU's does and with one GPU's to float rounding, every point written;
   a map of two planes leaves the first part without a slab
   (elec_slab_partition: planes 0 .. 0, 0 .. 1, 1 .. 2). */
TEST(gpu_cutoff_map_spread_over_gpus_matches_one_gpu) {
    REQUIRE_GPU();
    test_system random = test_system_random(3000, 30.0, 69);
    test_system water = test_system_water(800, 70);
    test_system *systems[2] = {&random, &water};
    const char *names[2] = {"random/3", "water/3"};
    int devices[3];
    for (int s = 0; s < 2; s++) {
        elec_atoms atoms = test_system_atoms(systems[s]);
        for (int thin = 0; thin < 2; thin++) {
            elec_lattice l = awkward_lattice(systems[s]->box);
            if (thin) l.dims[2] = 2;
            for (int kind = 0; kind <= 1; kind++) {
                elec_cutoff_params p = {0};
                elec_error err;
                size_t n = elec_lattice_size(&l);
                float *one = (float *)malloc(n * sizeof *one), *spread;
                p.kind = (elec_cutoff_kind)kind;
                EXPECT(elec_cuda_cutoff_map(&atoms, &l, &p, one, &err) == ELEC_OK, "%s",
                       err.message);
                p.gpus = gpu_three_parts(devices);
                spread = check_cutoff(&atoms, &l, &p, names[s]);
                printf("     %d planes on GPUs %d, %d, %d: relative RMS %.2e against one GPU\n",
                       l.dims[2], devices[0], devices[1], devices[2],
                       gpu_rel_rms_float(spread, one, n));
                EXPECT(gpu_rel_rms_float(spread, one, n) <= CUTOFF_REL_RMS_TOLERANCE,
                       "%s: against one GPU %.3e", names[s], gpu_rel_rms_float(spread, one, n));
                free(one);
                free(spread);
            }
        }
    }
    test_system_free(&random);
    test_system_free(&water);
}

TEST(gpu_cutoff_map_follows_its_parameters) {
    /* Other splitting orders, a shorter cutoff, short and long bins, and
       a scale: each changes the kernel's arguments or neighbourhood. */
    REQUIRE_GPU();
    test_system sys = test_system_random(3000, 30.0, 63);
    elec_atoms atoms = test_system_atoms(&sys);
    elec_lattice l = awkward_lattice(sys.box);
    const int splitting[4] = {1, 3, 6, 2};
    const double cutoff[4] = {12.0, 8.0, 10.0, 12.0};
    const double bin_length[4] = {0.0, 2.5, 6.0, 4.0};
    for (int c = 0; c < 4; c++) {
        elec_cutoff_params p = {0};
        char what[32];
        p.splitting = splitting[c];
        p.cutoff = cutoff[c];
        p.bin_length = bin_length[c];
        p.scale = c == 3 ? ELEC_COULOMB : 0.0;
        snprintf(what, sizeof what, "C%d a=%g", splitting[c], cutoff[c]);
        free(check_cutoff(&atoms, &l, &p, what));
    }
    test_system_free(&sys);
}

TEST(an_overfull_bin_is_summed_through_the_overflow) {
    /* 300 atoms within 0.5 A of one point (at a lattice cell's centre, so
       no atom comes closer than ~0.4 A to a lattice point) fill their bin
       8 times over: the rest go to the overflow, summed on the CPU. */
    REQUIRE_GPU();
    test_system sys = test_system_random(2300, 30.0, 64);
    elec_lattice l;
    test_rng rng = test_rng_seeded(65);
    double centre[3];
    for (int axis = 0; axis < 3; axis++) {
        l.dims[axis] = 31;
        l.origin[axis] = -3.0;
        l.spacing[axis] = 1.2;
        centre[axis] = l.origin[axis] + 15.5 * l.spacing[axis];
    }
    for (size_t i = 2000; i < 2300; i++) {
        double d[3], len2;
        do {
            len2 = 0.0;
            for (int axis = 0; axis < 3; axis++) {
                d[axis] = 2.0 * test_uniform(&rng) - 1.0;
                len2 += d[axis] * d[axis];
            }
        } while (len2 > 1.0);
        for (int axis = 0; axis < 3; axis++)
            sys.xyz[3 * i + axis] = centre[axis] + 0.5 * d[axis];
    }
    elec_atoms atoms = test_system_atoms(&sys);
    {
        size_t overflow = overflow_of_default_bins(&atoms, &l);
        printf("     %zu atoms overflow their bins\n", overflow);
        EXPECT(overflow >= 300 - 8 * ELEC_BIN_DEPTH, "overflow %zu", overflow);
    }
    for (int kind = 0; kind <= 1; kind++) {
        elec_cutoff_params p = {0};
        p.kind = (elec_cutoff_kind)kind;
        free(check_cutoff(&atoms, &l, &p, "overfull"));
    }
    test_system_free(&sys);
}

TEST(atoms_outside_the_lattice_count_only_within_the_cutoff) {
    /* In order: 1000 atoms inside the lattice (the first exactly on a
       lattice point: the coincident rule leaves it out there); 200 outside
       it but within the cutoff (1 to 11 A beyond a face: they must count);
       200 far away (1e3 to 1e5 A: they must change nothing, bit for bit,
       as the bins then hold the very same records). */
    REQUIRE_GPU();
    const size_t inside = 1000, near = 200, far = 200;
    test_system sys = test_system_random(inside + near + far, 20.0, 66);
    test_rng rng = test_rng_seeded(67);
    elec_lattice l;
    for (int axis = 0; axis < 3; axis++) {
        l.dims[axis] = 21 + 2 * axis;
        l.origin[axis] = 0.0;
        l.spacing[axis] = 20.0 / (l.dims[axis] - 1);
    }
    elec_lattice_point(&l, 7, 9, 11, sys.xyz);
    for (size_t i = inside; i < inside + near; i++) {
        int axis = (int)(i % 3);
        double beyond = 1.0 + 10.0 * test_uniform(&rng);
        sys.xyz[3 * i + axis] = i % 2 ? -beyond : 20.0 + beyond;
    }
    for (size_t i = inside + near; i < inside + near + far; i++)
        for (int axis = 0; axis < 3; axis++)
            sys.xyz[3 * i + axis] = (i % 2 ? -1.0 : 1.0) *
                                    pow(10.0, 3.0 + 2.0 * test_uniform(&rng));
    for (int kind = 0; kind <= 1; kind++) {
        elec_cutoff_params p = {0};
        elec_atoms all = test_system_atoms(&sys), without_far = all, only_inside = all;
        size_t n = elec_lattice_size(&l), differ = 0;
        double d2 = 0.0, m2 = 0.0;
        p.kind = (elec_cutoff_kind)kind;
        without_far.count = inside + near;
        only_inside.count = inside;
        float *map = check_cutoff(&all, &l, &p, "all");
        float *nearby = check_cutoff(&without_far, &l, &p, "no far");
        float *inner = check_cutoff(&only_inside, &l, &p, "inside");
        for (size_t i = 0; i < n; i++) {
            differ += map[i] != nearby[i];
            d2 += ((double)inner[i] - nearby[i]) * ((double)inner[i] - nearby[i]);
            m2 += (double)nearby[i] * nearby[i];
        }
        EXPECT(differ == 0, "far atoms changed %zu points", differ);
        printf("     atoms just outside the lattice change it by %.2e (relative RMS)\n",
               sqrt(d2 / m2));
        EXPECT(sqrt(d2 / m2) > 1e-3, "atoms outside the lattice within the cutoff ignored");
        free(map);
        free(nearby);
        free(inner);
    }
    test_system_free(&sys);
}

TEST(a_large_map_comes_back_through_the_staging_buffers) {
    /* 232 x 236 x 240 points (50 MB, more than three 16 MB chunks): the
       copy back goes through the pinned double buffer, every slice to its
       place; 60 atoms keep the reference cheap.  Then 40 more within
       0.35 A of one lattice cell's centre overfill their bin: those left
       over are the host's share, summed into the slices they reach while
       the GPU works, and the copy back adds to those slices alone. */
    REQUIRE_GPU();
    test_system sys = test_system_random(100, 100.0, 69);
    test_rng rng = test_rng_seeded(70);
    elec_atoms atoms = test_system_atoms(&sys);
    elec_lattice l = {{232, 236, 240}, {-8.0, -9.0, -10.0}, {0.5, 0.5, 0.5}};
    elec_cutoff_params p = {0};
    atoms.count = 60;
    free(check_cutoff(&atoms, &l, &p, "50 MB map"));
    for (size_t i = 60; i < 100; i++)
        for (int axis = 0; axis < 3; axis++)
            sys.xyz[3 * i + axis] = l.origin[axis] + 100.5 * l.spacing[axis] +
                                    0.2 * (2.0 * test_uniform(&rng) - 1.0);
    atoms.count = 100;
    {
        size_t overflow = overflow_of_default_bins(&atoms, &l);
        printf("     %zu atoms overflow their bins\n", overflow);
        EXPECT(overflow > 0 && overflow <= 40, "overflow %zu", overflow);
    }
    free(check_cutoff(&atoms, &l, &p, "+ cluster"));
    test_system_free(&sys);
}

/* The point a refusal past float's range names ("...: point N came out"),
   or SIZE_MAX. */
static size_t named_point(const elec_error *err, const char *method) {
    char format[80];
    size_t named = SIZE_MAX;
    snprintf(format, sizeof format, "%s: point %%zu", method);
    return sscanf(err->message, format, &named) == 1 ? named : SIZE_MAX;
}

TEST(a_staged_map_past_range_names_its_first_bad_point) {
    /* The staged copy back (three or more 16 MB chunks: here four, of 76,
       76, 76 and 12 slices) scans each chunk's slices as they arrive, not
       the whole map after.  One atom of 1e308 e (inf in float), within the
       12 A cutoff of slices 197 to 239 only (z = 110.25 A: the third chunk
       and the last), or of slices 231 to 239 (z = 127.25 A, past the
       lattice: the last chunk alone), the nearest slice left out 12.25 A
       away; the refusal must name the map's first value that is not
       finite, and every value before it is 0. */
    /* Spread over GPUs in three parts (slabs of 80 planes, each staged in
       its own chunks), the refusal names the point in the whole map's
       numbering, not its slab's. */
    REQUIRE_GPU();
    static const double z[2] = {110.25, 127.25};
    static const size_t first_slice[2] = {197, 231};
    elec_lattice l = {{232, 236, 240}, {0.0, 0.0, 0.0}, {0.5, 0.5, 0.5}};
    const size_t n = elec_lattice_size(&l), slice = 232 * 236;
    float *map = (float *)malloc(n * sizeof *map);
    for (int c = 0; c < 4; c++) {
        const double xyz[3] = {58.0, 59.0, z[c % 2]}, q[1] = {1e308};
        elec_atoms atoms = elec_atoms_from_xyz(1, xyz, q, NULL);
        elec_cutoff_params p = {0};
        elec_error err;
        size_t first = 0, nonzero = 0;
        int devices[3];
        if (c >= 2) p.gpus = gpu_three_parts(devices);
        elec_status s = elec_cuda_cutoff_map(&atoms, &l, &p, map, &err);
        EXPECT(test_refused_past_range(s, &err, "GPU cutoff map", "float"),
               "z %.2f: status %d, %s", z[c % 2], (int)s, err.message);
        while (first < n && map[first] - map[first] == 0.0f) first++;
        for (size_t i = 0; i < first; i++) nonzero += map[i] != 0.0f;
        EXPECT(first / slice == first_slice[c % 2] && nonzero == 0,
               "z %.2f: first value not finite %zu (slice %zu, want %zu), %zu nonzero before",
               z[c % 2], first, first / slice, first_slice[c % 2], nonzero);
        EXPECT(named_point(&err, "GPU cutoff map") == first, "z %.2f: named %zu, first %zu: %s",
               z[c % 2], named_point(&err, "GPU cutoff map"), first, err.message);
    }
    free(map);
}

TEST(an_empty_system_gives_a_zero_map) {
    REQUIRE_GPU();
    elec_atoms atoms = elec_atoms_from_xyz(0, NULL, NULL, NULL);
    double xyz[6] = {1, 2, 3, 4, 5, 6}, q[2] = {0, 0};
    elec_atoms uncharged = elec_atoms_from_xyz(2, xyz, q, NULL);
    elec_lattice l = {{13, 9, 17}, {0, 0, 0}, {0.5, 0.7, 0.3}};
    size_t n = elec_lattice_size(&l), nonzero = 0;
    float *map = (float *)malloc(n * sizeof *map);
    elec_cutoff_params p = {0};
    elec_error err;
    for (size_t i = 0; i < n; i++) map[i] = NAN;
    EXPECT(elec_cuda_cutoff_map(&atoms, &l, &p, map, &err) == ELEC_OK, "%s", err.message);
    for (size_t i = 0; i < n; i++) nonzero += map[i] != 0.0f;
    EXPECT(nonzero == 0, "%zu nonzero points without atoms", nonzero);
    for (size_t i = 0; i < n; i++) map[i] = NAN;
    EXPECT(elec_cuda_cutoff_map(&uncharged, &l, &p, map, &err) == ELEC_OK, "%s", err.message);
    nonzero = 0;
    for (size_t i = 0; i < n; i++) nonzero += map[i] != 0.0f;
    EXPECT(nonzero == 0, "%zu nonzero points from uncharged atoms", nonzero);
    free(map);
}

static int count_calls(double fraction, void *user) {
    (void)fraction;
    ++*(int *)user;
    return 0;
}

TEST(progress_is_reported) {
    REQUIRE_GPU();
    test_system sys = test_system_random(500, 10.0, 68);
    elec_atoms atoms = test_system_atoms(&sys);
    elec_lattice l = {{11, 11, 11}, {0, 0, 0}, {1, 1, 1}};
    float map[11 * 11 * 11];
    elec_cutoff_params p = {0};
    elec_error err;
    int calls = 0;
    p.progress = count_calls;
    p.progress_user = &calls;
    EXPECT(elec_cuda_cutoff_map(&atoms, &l, &p, map, &err) == ELEC_OK, "%s", err.message);
    EXPECT(calls >= 1, "progress called %d times", calls);
    test_system_free(&sys);
}

TEST(bad_input_is_refused_without_a_gpu) {
    /* Checked before any GPU is looked for: runs everywhere. */
    double xyz[3] = {0, 0, 0}, q[1] = {1};
    elec_atoms atoms = elec_atoms_from_xyz(1, xyz, q, NULL);
    elec_lattice l = {{4, 4, 4}, {0, 0, 0}, {1, 1, 1}};
    elec_cutoff_params p = {0};
    elec_error err;
    float map[64];
    p.cutoff = -2.0;
    EXPECT(elec_cuda_cutoff_map(&atoms, &l, &p, map, &err) == ELEC_ERR_INVALID_ARG,
           "negative cutoff: %s", err.message);
    p.cutoff = 0.0;
    EXPECT(elec_cuda_cutoff_map(&atoms, &l, &p, NULL, &err) == ELEC_ERR_INVALID_ARG,
           "NULL map: %s", err.message);
    p.kind = (elec_cutoff_kind)7;
    EXPECT(elec_cuda_cutoff_map(&atoms, &l, &p, map, &err) == ELEC_ERR_INVALID_ARG,
           "unknown kind: %s", err.message);
    p.kind = ELEC_CUTOFF_MSM;
    EXPECT(elec_cuda_cutoff_map(NULL, &l, &p, map, &err) == ELEC_ERR_INVALID_ARG,
           "NULL atoms: %s", err.message);
    l.spacing[1] = 0.0;
    EXPECT(elec_cuda_cutoff_map(&atoms, &l, &p, map, &err) == ELEC_ERR_INVALID_ARG,
           "zero spacing: %s", err.message);
    l.spacing[1] = 1.0;
    /* bins of 0.1 A against a 12 A cutoff: ~10^6 neighbour bins a block */
    p.bin_length = 0.1;
    EXPECT(elec_cuda_cutoff_map(&atoms, &l, &p, map, &err) == ELEC_ERR_UNSUPPORTED,
           "tiny bins: %s", err.message);
    printf("     tiny bins: %s\n", err.message);
    /* 300,000 points along x: 76,738 bins of 3.91 A along it, past the
       bins' 65,536 (a review: refused after the GPU was looked for) */
    {
        elec_lattice line = {{300000, 1, 1}, {0, 0, 0}, {1, 1, 1}};
        p.bin_length = 0.0;
        EXPECT(elec_cuda_cutoff_map(&atoms, &line, &p, map, &err) == ELEC_ERR_INVALID_ARG &&
                   strstr(err.message, "bin region along axis 0"),
               "a line past the bins: %s", err.message);
    }
}

int main(void) {
    gpu_test_start();
    RUN(bad_input_is_refused_without_a_gpu);
    RUN(gpu_cutoff_map_matches_double_reference);
    RUN(gpu_cutoff_map_spread_over_gpus_matches_one_gpu);
    RUN(gpu_cutoff_map_follows_its_parameters);
    RUN(an_overfull_bin_is_summed_through_the_overflow);
    RUN(atoms_outside_the_lattice_count_only_within_the_cutoff);
    RUN(a_large_map_comes_back_through_the_staging_buffers);
    RUN(a_staged_map_past_range_names_its_first_bad_point);
    RUN(an_empty_system_gives_a_zero_map);
    RUN(progress_is_reported);
    return gpu_test_summary();
}
