/* GPU ALPB (elec_cuda_alpb) against the CPU's double-precision ALPB
   (elec_cpu_alpb_double): every rung of the ladder, exact and HCP (1 and 2
   charges, the defaults and the seed's 10/70), without and with salt, GEM's
   region 1, a hierarchy whose top levels do not fit in shared memory, and
   a real structure when ../shared/data is there.  Bad input is refused by
   name before any CUDA call, so those tests run without a GPU too.
   Without a GPU each GPU test skips and says so; `make test-gpu` sets
   ELEC_REQUIRE_GPU=1, and then a missing GPU is a failure. */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "elec_cuda.cuh"
#include "tests/test.h"
#include "tests/systems.h"
#include "tests/gpu.h"

/* Float against double: positions rounded to float relative to the
   vertices' centre (~40 A here: 2.4e-6 A), rsqrt's 2^-22.9, and float
   sums of up to ~3,000 terms (a residue's atoms summed apart first):
   ~1e-6 relative, so 1e-5 relative RMS (the DCS target) holds with margin
   (the research notes measured 4.7e-7 for a sequential float32 sum). */
#define ALPB_REL_RMS_TOLERANCE 1e-5
/* Vertices closer than this to a threshold of some component may take the
   other decision in float (research notes 6.7): left out of the HCP
   comparisons.  Float distances here are good to ~1e-5 A. */
#define ALPB_THRESHOLD_MARGIN 1e-3

/* A protein-like test system: atoms in residues of 12, chains of 25
   residues, complexes of 2 chains, spread over 3 clumps so that every
   level has near and far components; its contact surface. */
typedef struct alpb_case {
    test_system s;
    elec_hcp h;
    elec_surface surf;
} alpb_case;

static int case_make(alpb_case *c, size_t atoms, size_t per_chain_residues,
                     unsigned long long seed) {
    int *residue = (int *)malloc(atoms * sizeof(int)), *chain = (int *)malloc(atoms * sizeof(int));
    int *complex_index = (int *)malloc(atoms * sizeof(int));
    elec_atoms view;
    elec_error err;
    size_t i;
    int ok = 0;
    memset(c, 0, sizeof *c);
    c->s = test_system_random(atoms, 30.0, seed);
    if (!residue || !chain || !complex_index || c->s.count == 0) goto done;
    for (i = 0; i < atoms; i++) {
        residue[i] = (int)(i / 12);
        chain[i] = (int)(i / (12 * per_chain_residues));
        complex_index[i] = chain[i] / 2;
        /* clumps 45 A apart along x by complex */
        c->s.xyz[3 * i] += 45.0 * (complex_index[i] % 3);
    }
    view = test_system_atoms(&c->s);
    if (elec_hcp_build(&view, residue, chain, complex_index, &c->h, &err) != ELEC_OK ||
        elec_surface_contact(&view, 1.0, 0.0, &c->surf, &err) != ELEC_OK) {
        printf("     case: %s\n", err.message);
        goto done;
    }
    ok = 1;
done:
    free(residue);
    free(chain);
    free(complex_index);
    return ok;
}

static void case_free(alpb_case *c) {
    elec_surface_free(&c->surf);
    elec_hcp_free(&c->h);
    test_system_free(&c->s);
}

/* Vertices farther than ALPB_THRESHOLD_MARGIN from the reach (its
   level's threshold, or 1.5 times its extent, or its error test's
   distance: elec_hcp_reach) of every component (1), the others (0). */
static unsigned char *clear_of_thresholds(const elec_hcp *h, const elec_surface *s,
                                          const elec_alpb_params *p) {
    unsigned char *clear = (unsigned char *)malloc(s->count);
    double *reach[ELEC_HCP_LEVELS] = {NULL};
    elec_alpb_params r;
    elec_alpb_kernel k;
    int ok = clear && elec_alpb_params_resolve(p, h, &r, NULL) == ELEC_OK;
    if (ok) elec_alpb_kernel_setup(&r, &k);
    /* a component's reach is the same at every vertex: taken once here.
       Taken per vertex, with the vertices in one thread, this program's
       host work took 187 s on the build machine's two cores (32 s now),
       chunked_call's 393,221 vertices 103 s of it (6.5 now); the whole
       program, on the device machine, 4 min 40 s (9.2 s now; H100,
       2026-12-07). */
    for (int level = 0; ok && level < ELEC_HCP_LEVELS; level++) {
        const size_t components = h->count[level + 1];
        reach[level] = (double *)malloc((components + 1) * sizeof(double));
        ok = reach[level] != NULL;
        for (size_t c = 0; ok && c < components; c++)
            reach[level][c] = elec_hcp_reach(h, level, c, &r, &k);
    }
    if (ok) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
        for (long v = 0; v < (long)s->count; v++) {
            double P[3];
            clear[v] = 1;
            for (int a = 0; a < 3; a++) P[a] = s->xyz[3 * v + a] + r.proj * s->normal[3 * v + a];
            for (int level = 0; level < ELEC_HCP_LEVELS && clear[v]; level++)
                for (size_t c = 0; c < h->count[level + 1]; c++)
                    if (fabs(sqrt(elec_distance2(P, h->centre[level] + 3 * c)) -
                             reach[level][c]) < ALPB_THRESHOLD_MARGIN) {
                        clear[v] = 0;
                        break;
                    }
        }
    }
    for (int level = 0; level < ELEC_HCP_LEVELS; level++) free(reach[level]);
    if (!ok) {
        free(clear);
        clear = NULL;
    }
    return clear;
}

/* The GPU potential (or, on_host, the kernels' walk run on the CPU)
   against the CPU double one on the vertices clear of the thresholds (all
   of them for the exact sum). */
static void check_on(const alpb_case *c, const elec_alpb_params *p, const char *what,
                     int on_host, elec_stage_times *times) {
    const size_t n = c->surf.count;
    double *want = (double *)malloc(n * sizeof(double)), *want_kept = NULL;
    float *got = (float *)malloc(n * sizeof(float)), *got_kept = NULL;
    unsigned char *clear = p->exact ? NULL : clear_of_thresholds(&c->h, &c->surf, p);
    elec_error err;
    size_t kept = 0;
    for (size_t i = 0; got && i < n; i++) got[i] = NAN; /* every vertex must be written */
    if (!want || !got || (!p->exact && !clear)) {
        EXPECT(0, "%s: no memory", what);
        goto done;
    }
    EXPECT(elec_cpu_alpb_double(&c->h, c->surf.xyz, c->surf.normal, n, p, want, &err) ==
               ELEC_OK,
           "%s CPU: %s", what, err.message);
    if ((on_host ? elec_cuda_alpb_host(&c->h, c->surf.xyz, c->surf.normal, n, p, got, &err)
                 : elec_cuda_alpb_timed(&c->h, c->surf.xyz, c->surf.normal, n, p, got, times,
                                        &err)) != ELEC_OK) {
        EXPECT(0, "%s %s: %s", what, on_host ? "host walk" : "GPU", err.message);
        goto done;
    }
    want_kept = (double *)malloc(n * sizeof(double));
    got_kept = (float *)malloc(n * sizeof(float));
    if (!want_kept || !got_kept) goto done;
    for (size_t i = 0; i < n; i++)
        if (!clear || clear[i]) {
            want_kept[kept] = want[i];
            got_kept[kept++] = got[i];
        }
    {
        double e = test_rel_rms_float(got_kept, want_kept, kept);
        printf("     %-34s %6zu of %6zu vertices: relative RMS %.2e, max |diff| %.2e\n", what,
               kept, n, e, test_max_abs_diff_float(got_kept, want_kept, kept));
        EXPECT(test_all_finite_float(got, n), "%s: not every vertex written", what);
        EXPECT(kept >= n * 9 / 10, "%s: only %zu of %zu vertices clear of thresholds", what, kept,
               n);
        EXPECT(e <= ALPB_REL_RMS_TOLERANCE, "%s: relative RMS %.3e", what, e);
    }
done:
    free(want);
    free(got);
    free(want_kept);
    free(got_kept);
    free(clear);
}

static void check(const alpb_case *c, const elec_alpb_params *p, const char *what) {
    check_on(c, p, what, 0, NULL);
}

static const elec_alpb_variant rungs[] = {ELEC_ALPB_FASTEST, ELEC_ALPB_SIMPLE,
                                          ELEC_ALPB_REGISTERS, ELEC_ALPB_SORTED,
                                          ELEC_ALPB_PACKED, ELEC_ALPB_PAIRS};
#define RUNGS (int)(sizeof rungs / sizeof rungs[0])

/* Every rung, exact: float against double (every vertex). */
TEST(every_rung_exact_matches_the_cpu) {
    alpb_case c;
    REQUIRE_GPU();
    if (!case_make(&c, 3000, 25, 11)) {
        EXPECT(0, "case");
        return;
    }
    for (int v = 0; v < RUNGS; v++) {
        elec_alpb_params p = {0};
        char what[64];
        p.scale = ELEC_COULOMB;
        p.exact = 1;
        p.variant = rungs[v];
        snprintf(what, sizeof what, "exact, %s", elec_alpb_variant_name(rungs[v]));
        check(&c, &p, what);
        p.proj = 1.4;
        snprintf(what, sizeof what, "exact p=1.4, %s", elec_alpb_variant_name(rungs[v]));
        check(&c, &p, what);
    }
    case_free(&c);
}

/* Every rung with HCP: 1 and 2 charges at the seed's 10/70, the defaults,
   and a tolerance that takes many reaches past their thresholds; the same
   decisions as the CPU away from the reaches. */
TEST(every_rung_hcp_matches_the_cpu) {
    alpb_case c;
    REQUIRE_GPU();
    if (!case_make(&c, 3000, 25, 12)) {
        EXPECT(0, "case");
        return;
    }
    for (int v = 0; v < RUNGS; v++)
        for (int setting = 0; setting < 4; setting++) {
            elec_alpb_params p = {0};
            char what[64];
            static const char *const name[4] = {"10/70", "10/70", "defaults", "tolerance 1e-4"};
            p.scale = ELEC_COULOMB;
            p.variant = rungs[v];
            p.hcp_charges = setting == 0 ? 1 : 2;
            if (setting < 2) {
                p.hcp_h[0] = 10.0;
                p.hcp_h[1] = 70.0;
            }
            if (setting == 3) p.hcp_tolerance = 1e-4; /* reaches past the thresholds */
            snprintf(what, sizeof what, "HCP-%d %s, %s", p.hcp_charges, name[setting],
                     elec_alpb_variant_name(rungs[v]));
            check(&c, &p, what);
        }
    case_free(&c);
}

/* Spread over GPUs (three parts; gpu_three_parts): each GPU a run of the
   vertices as a call of its own (regions, sort, walks); the exact sum
   (ALPB on DCS), HCP at its defaults, salt, and the pairs rung (whose
   walks take two vertices) against the CPU, every vertex written; the
   timed call's stages those of the first part. */
TEST(spread_over_gpus_matches_the_cpu) {
    alpb_case c;
    int devices[3];
    REQUIRE_GPU();
    if (!case_make(&c, 3000, 25, 14)) {
        EXPECT(0, "case");
        return;
    }
    for (int setting = 0; setting < 4; setting++) {
        elec_alpb_params p = {0};
        elec_stage_times t;
        static const char *const name[4] = {"3 parts, exact", "3 parts, HCP defaults",
                                            "3 parts, salt", "3 parts, pairs"};
        p.scale = ELEC_COULOMB;
        p.exact = setting == 0;
        p.salt = setting == 2 ? 0.15 : 0.0;
        p.variant = setting == 3 ? ELEC_ALPB_PAIRS : ELEC_ALPB_FASTEST;
        p.gpus = gpu_three_parts(devices);
        memset(&t, 0, sizeof t);
        check_on(&c, &p, name[setting], 0, &t);
        {
            double stages = 0.0;
            for (int m = 0; m < t.count; m++) stages += t.seconds[m];
            EXPECT(t.count == 7 && stages > 0.0 && stages <= t.total,
                   "%s: %d stages, their sum %.3g s (the first part's), total %.3g s",
                   name[setting], t.count, stages, t.total);
        }
    }
    case_free(&c);
}

/* Salt (regions 2 and 3 with kappa), GEM's region 1 (p < 0), and GEM's
   region 1 with salt: the general kernel of every rung. */
TEST(every_rung_with_salt_and_gem_matches_the_cpu) {
    alpb_case c;
    REQUIRE_GPU();
    if (!case_make(&c, 2000, 20, 13)) {
        EXPECT(0, "case");
        return;
    }
    for (int v = 0; v < RUNGS; v++)
        for (int mode = 0; mode < 4; mode++) {
            elec_alpb_params p = {0};
            char what[64];
            static const char *const name[4] = {"salt p=1", "salt p=3", "GEM p=-0.5",
                                                "GEM salt p=0"};
            p.scale = ELEC_COULOMB;
            p.variant = rungs[v];
            p.exact = mode % 2;
            p.salt = mode == 2 ? 0.0 : 0.15;
            p.proj = mode == 0 ? 1.0 : mode == 1 ? 3.0 : mode == 2 ? -0.5 : 0.0;
            p.gem_compat = mode >= 2;
            snprintf(what, sizeof what, "%s%s, %s", name[mode], p.exact ? " exact" : " HCP",
                     elec_alpb_variant_name(rungs[v]));
            check(&c, &p, what);
        }
    case_free(&c);
}

/* 1,200 chains of one residue: the complexes' and chains' records do not
   fit in the packed rung's shared memory, which then reads them from
   global memory. */
TEST(packed_rung_without_room_in_shared_memory) {
    alpb_case c;
    REQUIRE_GPU();
    if (!case_make(&c, 14400, 1, 14)) {
        EXPECT(0, "case");
        return;
    }
    EXPECT(c.h.count[2] == 1200, "%zu chains", c.h.count[2]);
    for (int v = 0; v < 2; v++)
        for (int exact = 0; exact <= 1; exact++) {
            elec_alpb_params p = {0};
            char what[64];
            p.scale = ELEC_COULOMB;
            p.variant = v ? ELEC_ALPB_PAIRS : ELEC_ALPB_PACKED;
            p.exact = exact;
            snprintf(what, sizeof what, "1200 chains %s, %s", exact ? "exact" : "HCP",
                     elec_alpb_variant_name(p.variant));
            check(&c, &p, what);
        }
    case_free(&c);
}

/* More points than one chunk (ELEC_CUDA_ALPB_MIN_CHUNK): the case's vertices
   repeated, each copy moved 0.37 A outward along the normals, to 3 chunks
   and an odd tail; the pipelined call and the timed one (one chunk, every
   stage timed) against the CPU, and the stage times filled. */
TEST(chunked_call_matches_the_cpu) {
    alpb_case c;
    REQUIRE_GPU();
    if (!case_make(&c, 3000, 25, 17)) {
        EXPECT(0, "case");
        return;
    }
    {
        const size_t m = c.surf.count, n = 3 * ELEC_CUDA_ALPB_MIN_CHUNK + 5;
        double *xyz = (double *)malloc(3 * n * sizeof(double));
        double *normal = (double *)malloc(3 * n * sizeof(double));
        if (!xyz || !normal) {
            EXPECT(0, "no memory");
        } else {
            for (size_t i = 0; i < n; i++)
                for (int a = 0; a < 3; a++) {
                    const size_t v = i % m;
                    normal[3 * i + a] = c.surf.normal[3 * v + a];
                    xyz[3 * i + a] = c.surf.xyz[3 * v + a] +
                                     0.37 * (double)(i / m) * c.surf.normal[3 * v + a];
                }
            free(c.surf.xyz);
            free(c.surf.normal);
            c.surf.xyz = xyz;
            c.surf.normal = normal;
            c.surf.count = n;
            for (int timed = 0; timed <= 1; timed++) {
                elec_alpb_params p = {0};
                elec_stage_times t;
                memset(&t, 0, sizeof t);
                p.scale = ELEC_COULOMB;
                check_on(&c, &p, timed ? "chunks, timed" : "chunks, pipelined", 0,
                         timed ? &t : NULL);
                if (timed) {
                    double parts = 0.0;
                    int all_positive = t.count == 7;
                    printf("     stages:");
                    for (int m = 0; m < t.count; m++) {
                        printf(" %s %.4f", t.name[m], t.seconds[m]);
                        parts += t.seconds[m];
                        all_positive = all_positive && t.seconds[m] > 0.0;
                    }
                    printf(" total %.4f s\n", t.total);
                    EXPECT(all_positive && parts <= t.total * 1.001 &&
                               elec_stage_seconds(&t, "kernel") > 0.0,
                           "%d stage times %g ... of %g", t.count, parts, t.total);
                }
            }
        }
    }
    case_free(&c);
}

/* A real structure (achbp, 5 chains; research notes 4): the default call
   against the CPU's, and the HCP error against the exact sum as the CPU
   measures it (0.26 %). */
TEST(achbp_default_call_matches_the_cpu) {
    alpb_case c;
    elec_structure st;
    elec_atoms atoms;
    REQUIRE_GPU();
    if (elec_read_pqr("../shared/data/structures/achbp.pqr", &st, NULL) != ELEC_OK)
        SKIP("../shared/data/structures is absent");
    memset(&c, 0, sizeof c);
    atoms = elec_structure_atoms(&st);
    if (elec_hcp_from_structure(&st, &c.h, NULL) != ELEC_OK ||
        elec_surface_contact(&atoms, 0.0, 0.0, &c.surf, NULL) != ELEC_OK) {
        EXPECT(0, "achbp setup");
    } else {
        elec_alpb_params p = {0};
        p.scale = ELEC_COULOMB;
        check(&c, &p, "achbp defaults");
        p.exact = 1;
        check(&c, &p, "achbp exact");
    }
    elec_surface_free(&c.surf);
    elec_hcp_free(&c.h);
    elec_structure_free(&st);
}

/* The kernels' walks, run on the CPU over the layouts a call uploads
   (flattened arrays, records with their reaches and ranges), against the CPU's
   double ALPB: the layout and the walk checked where there is no GPU.
   The host's 1/sqrtf stands for the GPU's rsqrt (2^-22.9 apart). */
TEST(kernel_walks_on_the_host_match_the_cpu) {
    alpb_case c;
    static const elec_alpb_variant walks[4] = {ELEC_ALPB_SIMPLE, ELEC_ALPB_REGISTERS,
                                               ELEC_ALPB_PACKED, ELEC_ALPB_PAIRS};
    if (!case_make(&c, 3000, 25, 16)) {
        EXPECT(0, "case");
        return;
    }
    for (int w = 0; w < 4; w++)
        for (int setting = 0; setting < 6; setting++) {
            elec_alpb_params p = {0};
            char what[64];
            static const char *const name[6] = {"exact", "HCP-1 10/70", "HCP-2 defaults",
                                                "salt HCP-2 p=3", "GEM p=-0.5 HCP-1",
                                                "HCP-2 tolerance 1e-4"};
            p.scale = ELEC_COULOMB;
            p.variant = walks[w];
            p.exact = setting == 0;
            p.hcp_charges = setting == 1 || setting == 4 ? 1 : 2;
            if (setting == 1) {
                p.hcp_h[0] = 10.0;
                p.hcp_h[1] = 70.0;
            }
            p.salt = setting == 3 ? 0.15 : 0.0;
            p.proj = setting == 3 ? 3.0 : setting == 4 ? -0.5 : 0.0;
            p.gem_compat = setting == 4;
            if (setting == 5) p.hcp_tolerance = 1e-4; /* reaches past the thresholds */
            snprintf(what, sizeof what, "host walk %s, %s", name[setting],
                     elec_alpb_variant_name(walks[w]));
            check_on(&c, &p, what, 1, NULL);
        }
    case_free(&c);
}

/* Vertices far apart (tests/systems.h, test_spread_points): every rung,
   exact and HCP, on the GPU (on_host 0) or its walks on the host
   (on_host 1), against the CPU's double, each potential within 1e-5 of
   its terms' sizes at scale 1 (which bound E1's).  The GPU took every
   vertex relative to the centre of their box, 5e9 A from the ions where one
   lay 1e10 A away; now a region at a time. */
static void check_spread(int on_host) {
    double points[3 * TEST_SPREAD_POINTS], normals[3 * TEST_SPREAD_POINTS];
    double want[TEST_SPREAD_POINTS];
    float got[TEST_SPREAD_POINTS];
    test_system s = test_spread_points(points, normals);
    elec_atoms atoms = test_system_atoms(&s);
    elec_hcp h;
    elec_error err;
    if (elec_hcp_build(&atoms, NULL, NULL, NULL, &h, &err) != ELEC_OK) {
        EXPECT(0, "hierarchy: %s", err.message);
        test_system_free(&s);
        return;
    }
    for (int r = on_host ? 1 : 0; r < RUNGS; r++)
        for (int exact = 0; exact <= 1; exact++) {
            elec_alpb_params p = {0};
            p.scale = 1.0;
            p.exact = exact;
            p.variant = rungs[r];
            EXPECT(elec_cpu_alpb_double(&h, points, normals, TEST_SPREAD_POINTS, &p, want,
                                        &err) == ELEC_OK,
                   "double: %s", err.message);
            elec_status status =
                on_host ? elec_cuda_alpb_host(&h, points, normals, TEST_SPREAD_POINTS, &p, got,
                                              &err)
                        : elec_cuda_alpb(&h, points, normals, TEST_SPREAD_POINTS, &p, got, &err);
            EXPECT(status == ELEC_OK, "%s exact %d: %s", elec_alpb_variant_name(rungs[r]), exact,
                   err.message);
            double e = test_spread_error(&s, points, TEST_SPREAD_POINTS, got, want, 1.0);
            printf("     %s%-9s exact %d: worst error %.2e of the terms' sizes\n",
                   on_host ? "host walk " : "", elec_alpb_variant_name(rungs[r]), exact, e);
            EXPECT(e <= 1e-5, "%s exact %d: %.3e", elec_alpb_variant_name(rungs[r]), exact, e);
        }
    elec_hcp_free(&h);
    test_system_free(&s);
}

TEST(vertices_far_apart_keep_float_precision) {
    REQUIRE_GPU();
    check_spread(0);
}

TEST(vertices_far_apart_keep_float_precision_in_the_host_walks) { check_spread(1); }

/* Refusals by name, before any CUDA call (so with or without a GPU), and
   the output left as it was. */
TEST(bad_input_is_refused_before_the_gpu) {
    alpb_case c;
    float out[8];
    elec_error err;
    int untouched = 1;
    if (!case_make(&c, 200, 5, 15)) {
        EXPECT(0, "case");
        return;
    }
    for (int i = 0; i < 8; i++) out[i] = -7.0f;
    {
        elec_alpb_params p = {0};
        p.proj = -1.0;
        EXPECT(elec_cuda_alpb(&c.h, c.surf.xyz, c.surf.normal, 8, &p, out, &err) ==
                       ELEC_ERR_INVALID_ARG &&
                   strstr(err.message, "proj -1 < 0"),
               "p < 0: %s", err.message);
        p.proj = 1.0;
        EXPECT(elec_cuda_alpb(&c.h, c.surf.xyz, NULL, 8, &p, out, &err) == ELEC_ERR_INVALID_ARG &&
                   strstr(err.message, "no normals"),
               "no normals: %s", err.message);
        p.proj = 0.0;
        p.variant = (elec_alpb_variant)99;
        EXPECT(elec_cuda_alpb(&c.h, c.surf.xyz, NULL, 8, &p, out, &err) == ELEC_ERR_INVALID_ARG &&
                   strstr(err.message, "unknown ALPB variant"),
               "variant: %s", err.message);
        p.variant = ELEC_ALPB_FASTEST;
        EXPECT(elec_cuda_alpb(NULL, c.surf.xyz, NULL, 8, &p, out, &err) == ELEC_ERR_INVALID_ARG &&
                   strstr(err.message, "no atoms"),
               "no hierarchy: %s", err.message);
        if (elec_cuda_device_count() == 0)
            EXPECT(elec_cuda_alpb(&c.h, c.surf.xyz, NULL, 8, &p, out, &err) ==
                       ELEC_ERR_NO_DEVICE,
                   "without a GPU: %s", err.message);
    }
    for (int i = 0; i < 8; i++) untouched &= out[i] == -7.0f;
    EXPECT(untouched, "a refused call wrote its output");
    case_free(&c);
}

TEST(potentials_past_floats_range_fail_the_call) {
    /* Charges of 1e150 e pass every check; their potentials pass float's
       range.  The call fails, naming the point, where it once returned
       inf with ELEC_OK (as the CPU's float call does now too). */
    REQUIRE_GPU();
    double points[6], normals[6];
    elec_alpb_params p = {0};
    elec_hcp h;
    elec_error err;
    float out[2];
    if (test_huge_ions(&h, points, normals, &err) != ELEC_OK) {
        EXPECT(0, "hierarchy: %s", err.message);
        return;
    }
    EXPECT(elec_cuda_alpb(&h, points, normals, 2, &p, out, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "float's range"),
           "%s", err.message);
    /* the kernels' walks run on the host: the same check (it returned inf) */
    EXPECT(elec_cuda_alpb_host(&h, points, normals, 2, &p, out, &err) ==
                   ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "float's range"),
           "on the host: %s", err.message);
    elec_hcp_free(&h);
}

int main(void) {
    gpu_test_start();
    RUN(every_rung_exact_matches_the_cpu);
    RUN(every_rung_hcp_matches_the_cpu);
    RUN(every_rung_with_salt_and_gem_matches_the_cpu);
    RUN(spread_over_gpus_matches_the_cpu);
    RUN(packed_rung_without_room_in_shared_memory);
    RUN(chunked_call_matches_the_cpu);
    RUN(achbp_default_call_matches_the_cpu);
    RUN(kernel_walks_on_the_host_match_the_cpu);
    RUN(vertices_far_apart_keep_float_precision);
    RUN(vertices_far_apart_keep_float_precision_in_the_host_walks);
    RUN(bad_input_is_refused_before_the_gpu);
    RUN(potentials_past_floats_range_fail_the_call);
    return test_summary();
}
