/* bench/bench_alpb.cu - ALPB surface potentials on a capsid-sized system
   (make bench).

   Seed 003's largest case is a 476,040-atom virus capsid with ~594,000
   MSMS vertices.  Its PQR is not public; the stand-in (research notes 6.11)
   is 60 copies of mache.pqr (8,279 atoms) under the icosahedral rotation
   group on a shell of radius 160 A: 496,740 atoms, chain = copy, complex =
   pentamer (the 5 copies around a 5-fold axis), and its contact surface
   (density 3 per A^2, probe 1.5 A).  Prints, whole API calls timed by the
   wall clock (uploads and copies back included; medians of 3 runs):
     - the exact sum on the CPU, all cores, on every 64th vertex (the whole
       surface would take minutes), its time multiplied by 64;
     - the exact sum on the GPU (the default: the DCS points kernel), and
       the DCS points call itself on the same atoms and points: their
       evaluations per second and the ratio (issue 12's goal: >= 0.8);
     - every rung of the GPU ladder, exact and with HCP (the seed's 10/70
       with 1 and 2 charges and 20/70/150, with the distance test alone,
       and the defaults: 2 charges, 20/70/150 and the error test): time,
       relative RMS error against the exact GPU potential, and the exact
       GPU call's time over this one (goal for the defaults: >= 20x at
       <= 1 % relative RMS);
     - where a call's time goes: the stages (elec_cuda_alpb_timed) of every rung
       at the defaults, beside the pipelined call's time;
     - the error test's tolerance against time and error;
     - HCP at the defaults on the CPU.
   `bench_alpb --quick` prints the stages and the defaults alone; `--gpu`
   leaves out the CPU's sums.
   The float exact sum on the GPU is checked against the CPU's double sum
   on every 256th vertex.  Needs ../shared/data/structures/mache.pqr.
   Record the output in bench/RESULTS.md. */
#define _POSIX_C_SOURCE 200809L
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "elec_cuda.cuh"
#include "tests/gpu.h"

#include <algorithm>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define BENCH_PI 3.14159265358979323846

static void die(const char *what, const elec_error &err) {
    fprintf(stderr, "bench_alpb: %s: %s\n", what, err.message);
    exit(1);
}

/* ------------------------------------------------- the icosahedral group */

typedef struct rotation {
    double m[3][3];
} rotation;

static rotation axis_rotation(const double axis[3], double angle) {
    double n = sqrt(axis[0] * axis[0] + axis[1] * axis[1] + axis[2] * axis[2]);
    double x = axis[0] / n, y = axis[1] / n, z = axis[2] / n, c = cos(angle), s = sin(angle);
    rotation r = {{{c + x * x * (1 - c), x * y * (1 - c) - z * s, x * z * (1 - c) + y * s},
                   {y * x * (1 - c) + z * s, c + y * y * (1 - c), y * z * (1 - c) - x * s},
                   {z * x * (1 - c) - y * s, z * y * (1 - c) + x * s, c + z * z * (1 - c)}}};
    return r;
}

static rotation product(const rotation &a, const rotation &b) {
    rotation r;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            r.m[i][j] = 0.0;
            for (int k = 0; k < 3; k++) r.m[i][j] += a.m[i][k] * b.m[k][j];
        }
    return r;
}

static int same(const rotation &a, const rotation &b) {
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            if (fabs(a.m[i][j] - b.m[i][j]) > 1e-9) return 0;
    return 1;
}

/* The 60 rotations of the icosahedron with vertices (0, +-1, +-phi) and
   cyclic permutations: the closure of a 5-fold turn about (0, 1, phi) and
   a half turn about z (an edge's midpoint). */
static int icosahedral_group(rotation *g) {
    const double phi = 0.5 * (1.0 + sqrt(5.0)), five[3] = {0.0, 1.0, phi}, two[3] = {0, 0, 1};
    rotation generator[2] = {axis_rotation(five, 2.0 * BENCH_PI / 5.0), axis_rotation(two, BENCH_PI)};
    int n = 1;
    g[0] = axis_rotation(two, 0.0);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < 2; k++) {
            rotation r = product(generator[k], g[i]);
            int found = 0;
            for (int j = 0; j < n && !found; j++) found = same(r, g[j]);
            if (!found) {
                if (n == 60) return 61;
                g[n++] = r;
            }
        }
    return n;
}

/* ----------------------------------------------------------- the capsid */

typedef struct capsid {
    size_t count;
    double *xyz, *charge, *radius;
    int *residue, *chain, *complex_index;
} capsid;

/* 60 copies of mol: the copy's centroid at 160 A along a direction 19
   degrees off the 5-fold axis (0, 1, phi), so that the 5 copies around
   each 5-fold axis make a pentamer (52 A from the axis, 61 A apart), each
   copy turned by its group element. */
static capsid make_capsid(const elec_structure *mol) {
    const double phi = 0.5 * (1.0 + sqrt(5.0)), radius = 160.0, off_axis = 19.0 * BENCH_PI / 180.0;
    double axis[3] = {0.0, 1.0, phi}, across[3] = {1.0, 0.0, 0.0}, centre[3] = {0, 0, 0},
           place[3], fives[12][3];
    int five_count = 0;
    rotation g[61];
    size_t n = mol->count, i;
    int *residue_of = (int *)malloc(n * sizeof(int));
    capsid c;
    elec_error err;
    if (icosahedral_group(g) != 60) {
        fprintf(stderr, "bench_alpb: the icosahedral group did not close at 60\n");
        exit(1);
    }
    if (!residue_of || elec_structure_components(mol, residue_of, NULL, NULL, NULL, &err) != ELEC_OK)
        die("components", err);
    for (int a = 0; a < 3; a++) axis[a] /= sqrt(1.0 + phi * phi);
    for (i = 0; i < n; i++)
        for (int a = 0; a < 3; a++) centre[a] += mol->xyz[3 * i + a] / (double)n;
    for (int a = 0; a < 3; a++)
        place[a] = radius * (cos(off_axis) * axis[a] + sin(off_axis) * across[a]);
    c.count = 60 * n;
    c.xyz = (double *)malloc(3 * c.count * sizeof(double));
    c.charge = (double *)malloc(c.count * sizeof(double));
    c.radius = (double *)malloc(c.count * sizeof(double));
    c.residue = (int *)malloc(c.count * sizeof(int));
    c.chain = (int *)malloc(c.count * sizeof(int));
    c.complex_index = (int *)malloc(c.count * sizeof(int));
    if (!c.xyz || !c.charge || !c.radius || !c.residue || !c.chain || !c.complex_index) {
        fprintf(stderr, "bench_alpb: no memory for the capsid\n");
        exit(1);
    }
    for (int copy = 0; copy < 60; copy++) {
        /* the pentamer: the 5-fold axis this copy's placement turns to */
        double turned[3], best = -2.0;
        int pentamer = -1;
        for (int a = 0; a < 3; a++)
            turned[a] = g[copy].m[a][0] * axis[0] + g[copy].m[a][1] * axis[1] +
                        g[copy].m[a][2] * axis[2];
        for (int f = 0; f < five_count; f++) {
            double dot = turned[0] * fives[f][0] + turned[1] * fives[f][1] + turned[2] * fives[f][2];
            if (dot > best) {
                best = dot;
                pentamer = f;
            }
        }
        if (best < 0.999) {
            memcpy(fives[five_count], turned, sizeof turned);
            pentamer = five_count++;
        }
        for (i = 0; i < n; i++) {
            size_t at = (size_t)copy * n + i;
            double local[3];
            for (int a = 0; a < 3; a++) local[a] = mol->xyz[3 * i + a] - centre[a] + place[a];
            for (int a = 0; a < 3; a++)
                c.xyz[3 * at + a] = g[copy].m[a][0] * local[0] + g[copy].m[a][1] * local[1] +
                                    g[copy].m[a][2] * local[2];
            c.charge[at] = mol->charge[i];
            c.radius[at] = mol->radius[i];
            c.residue[at] = copy * 100000 + residue_of[i];
            c.chain[at] = copy;
            c.complex_index[at] = pentamer;
        }
    }
    free(residue_of);
    return c;
}

/* ------------------------------------------------------------- timing */

/* Median wall time of `runs` whole GPU calls (one when a call is slow). */
static double time_gpu(const elec_hcp *h, const elec_surface *s, const elec_alpb_params *p,
                       float *out, int runs) {
    double t[3];
    elec_error err;
    for (int r = 0; r < runs; r++) {
        double start = gpu_wall_seconds();
        if (elec_cuda_alpb(h, s->xyz, s->normal, s->count, p, out, &err) != ELEC_OK)
            die("elec_cuda_alpb", err);
        t[r] = gpu_wall_seconds() - start;
        if (t[r] > 2.0) return t[r];
    }
    return gpu_median(t, runs);
}

/* One row of the stage table: the timed call (elec_cuda_alpb_timed, stages one
   after another) whose total is the median of 3, and the pipelined call's
   median time; milliseconds. */
static void print_stages(const char *rung, const char *setting, const elec_hcp *h,
                         const elec_surface *s, const elec_alpb_params *given, float *out) {
    elec_alpb_params p = *given;
    elec_stage_times t[3], *mid = &t[0];
    double totals[3], pipelined;
    elec_error err;
    for (int r = 0; r < 3; r++) {
        if (elec_cuda_alpb_timed(h, s->xyz, s->normal, s->count, &p, out, &t[r], &err) !=
            ELEC_OK)
            die("elec_cuda_alpb_timed", err);
        totals[r] = t[r].total;
    }
    for (int r = 0; r < 3; r++)
        if (t[r].total == gpu_median(totals, 3)) mid = &t[r];
    pipelined = time_gpu(h, s, &p, out, 3);
    printf("%-10s %-17s %7.2f %8.2f %7.2f %7.2f %6.2f %7.2f %9.2f %7.2f %9.2f\n", rung,
           setting, 1e3 * elec_stage_seconds(mid, "prepare"),
           1e3 * elec_stage_seconds(mid, "allocate"), 1e3 * elec_stage_seconds(mid, "upload"),
           1e3 * elec_stage_seconds(mid, "points"), 1e3 * elec_stage_seconds(mid, "sort"),
           1e3 * elec_stage_seconds(mid, "kernel"), 1e3 * elec_stage_seconds(mid, "copy_back"),
           1e3 * mid->total, 1e3 * pipelined);
}

/* The settings of the ladder: the seed's 10/70 with 1 and 2 charges (its
   distance test alone; its h3 unstated: the default 150), 20/70/150 with
   the distance test alone (the research notes' proposal) and the defaults
   (20/70/150 and the error test). */
#define SETTINGS 5
static const char *const setting_name[SETTINGS] = {"exact", "HCP-1 10/70 seed", "HCP-2 10/70 seed",
                                                   "HCP-2 20/70/150 d", "HCP-2 defaults"};
static elec_alpb_params setting_params(int setting, elec_alpb_variant variant) {
    elec_alpb_params p = {0};
    p.scale = ELEC_COULOMB;
    p.variant = variant;
    p.exact = setting == 0;
    p.hcp_charges = setting == 1 ? 1 : 2;
    if (setting == 1 || setting == 2) {
        p.hcp_h[0] = 10.0;
        p.hcp_h[1] = 70.0;
    }
    if (setting >= 1 && setting <= 3) p.hcp_tolerance = HUGE_VAL;
    return p;
}

int main(int argc, char **argv) {
    /* --quick: the GPU's defaults and stages alone (no CPU sums, no
       ladder); --gpu: everything but the CPU's sums */
    const int quick = argc > 1 && !strcmp(argv[1], "--quick");
    const int gpu_only = quick || (argc > 1 && !strcmp(argv[1], "--gpu"));
    elec_structure mol;
    elec_error err;
    elec_hcp h;
    elec_surface surf;
    capsid c;
    elec_atoms atoms;
    double start, setup, exact_time, evals;
    float *exact, *phi;
    char name[128] = "GPU";
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    if (elec_cuda_device_count() == 0) {
        printf("bench_alpb: no CUDA device: nothing to measure\n");
        return 0;
    }
    if (elec_read_pqr("../shared/data/structures/mache.pqr", &mol, &err) != ELEC_OK) {
        printf("bench_alpb: ../shared/data/structures/mache.pqr: %s: skipped\n", err.message);
        return 0;
    }
    elec_cuda_device_name(0, name, sizeof name, NULL);
    start = gpu_wall_seconds();
    c = make_capsid(&mol);
    atoms = elec_atoms_from_xyz(c.count, c.xyz, c.charge, c.radius);
    if (elec_hcp_build(&atoms, c.residue, c.chain, c.complex_index, &h, &err) != ELEC_OK)
        die("hierarchy", err);
    if (elec_surface_contact(&atoms, 0.0, 0.0, &surf, &err) != ELEC_OK) die("surface", err);
    setup = gpu_wall_seconds() - start;
    evals = (double)surf.count * (double)h.count[0];
    printf("ALPB, capsid stand-in on %s (%d CPU threads)\n", name, threads);
    printf("  %zu atoms, %zu residues, %zu chains, %zu complexes; A_det %.1f A; net charge %+.1f e\n",
           h.count[0], h.count[1], h.count[2], h.count[3], h.size, h.net_charge);
    printf("  contact surface: %zu vertices (density 3, probe 1.5); %.3g pair terms exact\n",
           surf.count, evals);
    printf("  setup (copies, hierarchy, surface) %.2f s\n\n", setup);
    exact = (float *)malloc(surf.count * sizeof(float));
    phi = (float *)malloc(surf.count * sizeof(float));
    if (!exact || !phi) return 1;

    /* warm-up: the CUDA context, CUB's first sort */
    {
        elec_alpb_params p = {0};
        if (elec_cuda_alpb(&h, surf.xyz, surf.normal, 1024, &p, phi, &err) != ELEC_OK)
            die("warm-up", err);
    }
    elec_alpb_params base = {0};
    base.scale = ELEC_COULOMB;

    /* the exact sum on the GPU (the DCS points kernel) and DCS itself */
    {
        elec_alpb_params p = base;
        double dcs_time, t[3];
        double *points = (double *)malloc(3 * surf.count * sizeof(double));
        elec_atoms view = elec_atoms_from_xyz(h.count[0], h.xyz, h.charge, NULL);
        elec_dcs_params dp = {0};
        p.exact = 1;
        exact_time = time_gpu(&h, &surf, &p, exact, 3);
        memcpy(points, surf.xyz, 3 * surf.count * sizeof(double));
        for (int r = 0; r < 3; r++) {
            double s0 = gpu_wall_seconds();
            if (elec_cuda_dcs_points(&view, points, surf.count, &dp, phi, &err) != ELEC_OK)
                die("DCS points", err);
            t[r] = gpu_wall_seconds() - s0;
        }
        dcs_time = gpu_median(t, 3);
        free(points);
        printf("exact, GPU (DCS points kernel)   %8.4f s  %.3e evals/s\n", exact_time,
               evals / exact_time);
        printf("DCS points call, same atoms/points %6.4f s  %.3e evals/s; exact ALPB / DCS "
               "throughput %.3f (goal >= 0.8)\n", dcs_time, evals / dcs_time,
               dcs_time / exact_time);
    }

    /* the exact sum on the CPU: every 64th vertex, float terms (all
       cores), and the GPU's float against the CPU's double on every 256th */
    if (!gpu_only) {
        const size_t stride = 64, fine = 256;
        size_t m = (surf.count + stride - 1) / stride, k = (surf.count + fine - 1) / fine;
        double *xyz = (double *)malloc(3 * m * sizeof(double)), *nrm = (double *)malloc(3 * m * sizeof(double));
        double *want = (double *)malloc(k * sizeof(double));
        float *got = (float *)malloc(m * sizeof(float)), *gpu = (float *)malloc(k * sizeof(float));
        elec_alpb_params p = base;
        double cpu_time, num = 0.0, den = 0.0;
        p.exact = 1;
        for (size_t i = 0; i < m; i++) {
            memcpy(xyz + 3 * i, surf.xyz + 3 * i * stride, 3 * sizeof(double));
            memcpy(nrm + 3 * i, surf.normal + 3 * i * stride, 3 * sizeof(double));
        }
        start = gpu_wall_seconds();
        if (elec_cpu_alpb(&h, xyz, nrm, m, &p, got, &err) != ELEC_OK) die("CPU exact", err);
        cpu_time = (gpu_wall_seconds() - start) * (double)surf.count / (double)m;
        for (size_t i = 0; i < k; i++) {
            memcpy(xyz + 3 * i, surf.xyz + 3 * i * fine, 3 * sizeof(double));
            memcpy(nrm + 3 * i, surf.normal + 3 * i * fine, 3 * sizeof(double));
            gpu[i] = exact[i * fine];
        }
        if (elec_cpu_alpb_double(&h, xyz, nrm, k, &p, want, &err) != ELEC_OK)
            die("CPU exact double", err);
        for (size_t i = 0; i < k; i++) {
            num += ((double)gpu[i] - want[i]) * ((double)gpu[i] - want[i]);
            den += want[i] * want[i];
        }
        printf("exact, CPU (%d threads)          %8.2f s  (every %zuth vertex, time x %zu)  "
               "%.3e evals/s\n", threads, cpu_time, stride, stride, evals / cpu_time);
        printf("GPU exact against CPU double (every %zuth vertex): relative RMS %.2e\n\n", fine,
               sqrt(num / den));
        free(xyz);
        free(nrm);
        free(want);
        free(got);
        free(gpu);
    }

    /* the ladder: whole calls */
    if (!quick) {
        printf("the ladder: whole calls (uploads and copies included, median of 3); relative RMS\n"
               "against the exact GPU potential; 'seed' and 'd': the distance test alone\n");
        printf("%-10s %-20s %10s %12s %14s\n", "rung", "setting", "time (s)", "rel. RMS",
               "exact GPU/this");
        for (int v = ELEC_ALPB_SIMPLE; v < ELEC_ALPB_VARIANT_COUNT; v++)
            for (int setting = 0; setting < SETTINGS; setting++) {
                elec_alpb_params p = setting_params(setting, (elec_alpb_variant)v);
                double t = time_gpu(&h, &surf, &p, phi, setting == 0 ? 1 : 3);
                printf("%-10s %-20s %10.4f %12.3e %14.1f\n",
                       elec_alpb_variant_name((elec_alpb_variant)v), setting_name[setting], t,
                       gpu_rel_rms_float(phi, exact, surf.count), exact_time / t);
            }
        printf("\n");
    }

    /* where a call's time goes */
    printf("stages of one call, ms (timed: each stage alone, one chunk; 'pipelined':\n"
           "the call without times, chunks overlapping, median of 3)\n");
    printf("%-10s %-17s %7s %8s %7s %7s %6s %7s %9s %7s %9s\n", "rung", "setting", "prepare",
           "allocate", "upload", "points", "sort", "kernel", "copy back", "total", "pipelined");
    for (int v = quick ? ELEC_ALPB_PACKED : ELEC_ALPB_SIMPLE; v < ELEC_ALPB_VARIANT_COUNT; v++) {
        elec_alpb_params p = setting_params(SETTINGS - 1, (elec_alpb_variant)v);
        print_stages(elec_alpb_variant_name((elec_alpb_variant)v), "HCP-2 defaults", &h, &surf,
                     &p, phi);
    }
    {
        elec_alpb_params p = setting_params(3, ELEC_ALPB_FASTEST_WALK);
        print_stages(elec_alpb_variant_name(ELEC_ALPB_FASTEST_WALK), "HCP-2 20/70/150 d", &h,
                     &surf, &p, phi);
    }
    printf("\n");

    /* the error test's tolerance at 20/70/150 (the default rung) */
    printf("%-10s %-20s %10s %12s %14s\n", "tolerance", "(e/A, 20/70/150)", "time (s)", "rel. RMS",
           "exact GPU/this");
    {
        static const double tolerance[4] = {HUGE_VAL, 2e-4, 1.5e-4, 1e-4};
        for (int k = 0; k < 4; k++) {
            elec_alpb_params p = setting_params(SETTINGS - 1, ELEC_ALPB_FASTEST);
            double t;
            p.hcp_tolerance = tolerance[k];
            t = time_gpu(&h, &surf, &p, phi, 3);
            printf("%-10.3g %-20s %10.4f %12.3e %14.1f\n", tolerance[k],
                   tolerance[k] == ELEC_HCP_TOLERANCE ? "(the default)" : "", t,
                   gpu_rel_rms_float(phi, exact, surf.count), exact_time / t);
        }
    }
    {
        elec_alpb_params p = base;
        double t = time_gpu(&h, &surf, &p, phi, 3);
        printf("\n%-10s %-20s %10.4f %12.3e %14.1f  (goal >= 20 at <= 1e-2)\n", "default",
               "HCP-2 defaults", t, gpu_rel_rms_float(phi, exact, surf.count), exact_time / t);
        if (!gpu_only) {
            start = gpu_wall_seconds();
            if (elec_cpu_alpb(&h, surf.xyz, surf.normal, surf.count, &p, phi, &err) != ELEC_OK)
                die("CPU HCP", err);
            t = gpu_wall_seconds() - start;
            printf("%-10s %-20s %10.4f %12.3e %14.1f\n", "CPU", "HCP-2 defaults", t,
                   gpu_rel_rms_float(phi, exact, surf.count), exact_time / t);
        }
    }
    free(exact);
    free(phi);
    elec_surface_free(&surf);
    elec_hcp_free(&h);
    elec_structure_free(&mol);
    free(c.xyz);
    free(c.charge);
    free(c.radius);
    free(c.residue);
    free(c.chain);
    free(c.complex_index);
    return 0;
}
