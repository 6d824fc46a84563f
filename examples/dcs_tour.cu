/* dcs_tour - the DCS optimisation ladder, one rung at a time (make tour).

   Runs every GPU variant of the direct Coulomb sum on the same map and
   prints a table: time, atom evaluations per second, GFLOP/s, speedup over
   one CPU core and over the simplest kernel, and what each rung changed.

   GFLOP/s count the floating-point operations of each kernel's inner loop
   per atom evaluation as written in elec_cuda.cuh, an FMA as two and rsqrt
   as one (the convention of the seeds' benchmarks); loop-invariant work
   shared by several points is divided among them. */
#define _POSIX_C_SOURCE 200809L
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "elec_cuda.cuh"
#include "tests/systems.h"

#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

typedef struct rung {
    elec_dcs_variant variant;
    double flops_per_eval;
    const char *change;
} rung;

static const rung ladder[] = {
    {ELEC_DCS_SIMPLE, 11.0, "one point per thread, atoms from global memory"},
    {ELEC_DCS_CONST, 9.0, "atoms in constant memory, dz^2 precomputed per slice"},
    {ELEC_DCS_UNROLL4, 6.75, "4 points per thread reuse dy^2+dz^2"},
    {ELEC_DCS_UNROLL8_COALESCED, 7.5, "8 points a warp apart: coalesced loads and stores"},
    {ELEC_DCS_VOLUME, 6.625, "whole volume per launch, atoms via shared-memory tiles"},
    {ELEC_DCS_HYBRID_RSQRT, 6.15625, "32 points, 4 in 32 rsqrt on the FMA pipe"},
};

int main(int argc, char **argv) {
    const size_t atom_count = argc > 1 ? (size_t)atol(argv[1]) : 40000;
    test_system sys = test_system_random(atom_count, 60.0, 1);
    elec_atoms atoms = test_system_atoms(&sys);
    /* Slices of 1024 x 1024 points: large enough that the per-slice rungs
       fill the GPU too. */
    elec_lattice l = {{1024, 1024, 8}, {-2.0, -2.0, 28.0}, {0.0625, 0.0625, 0.5}};
    elec_lattice cpu_part = l;
    size_t n = elec_lattice_size(&l);
    float *map = (float *)malloc(n * sizeof *map), *first = (float *)malloc(n * sizeof *first);
    double evals = (double)n * atom_count, cpu_rate, simple_time = 0.0;
    elec_dcs_params p = {0};
    elec_error err;
    char name[128] = "?";

    if (elec_cuda_device_count() == 0) {
        fprintf(stderr, "dcs_tour: no CUDA device\n");
        return 1;
    }
    elec_cuda_device_name(0, name, sizeof name, NULL);

    /* One CPU core on a sliver of the same map: the float path, one thread. */
    cpu_part.dims[1] = 8;
    cpu_part.dims[2] = 1;
#ifdef _OPENMP
    omp_set_num_threads(1);
#endif
    {
        double t0 = now();
        if (elec_cpu_dcs_map(&atoms, &cpu_part, &p, map, &err) != ELEC_OK) {
            fprintf(stderr, "dcs_tour: CPU: %s\n", err.message);
            return 1;
        }
        cpu_rate = (double)elec_lattice_size(&cpu_part) * atom_count / (now() - t0);
    }

    printf("DCS ladder on %s: %zu atoms, %d x %d x %d map (%.2e atom evaluations)\n",
           name, atom_count, l.dims[0], l.dims[1], l.dims[2], evals);
    printf("one CPU core (float path): %.3e atom evals/s\n\n", cpu_rate);
    printf("%-18s %9s %13s %8s %9s %8s  %s\n", "variant", "time (s)", "atom evals/s",
           "GFLOP/s", "vs 1 core", "vs simple", "what changed");
    for (size_t r = 0; r < sizeof ladder / sizeof ladder[0]; r++) {
        double best = 1e30;
        p.variant = ladder[r].variant;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = now();
            if (elec_cuda_dcs_map(&atoms, &l, &p, map, &err) != ELEC_OK) {
                fprintf(stderr, "dcs_tour: %s: %s\n", elec_dcs_variant_name(p.variant), err.message);
                return 1;
            }
            double t = now() - t0;
            if (t < best) best = t;
        }
        if (r == 0) {
            simple_time = best;
            memcpy(first, map, n * sizeof *map);
        } else {
            double worst = 0.0, scale = 0.0;
            for (size_t i = 0; i < n; i++) {
                double d = fabs((double)map[i] - first[i]);
                if (d > worst) worst = d;
                if (fabs(first[i]) > scale) scale = fabs(first[i]);
            }
            if (worst > 1e-4 * scale)
                printf("  warning: %s differs from simple by %.2e (map scale %.2e)\n",
                       elec_dcs_variant_name(p.variant), worst, scale);
        }
        printf("%-18s %9.4f %13.3e %8.0f %9.0f %8.2fx  %s\n", elec_dcs_variant_name(p.variant),
               best, evals / best, evals / best * ladder[r].flops_per_eval * 1e-9,
               evals / best / cpu_rate, simple_time / best, ladder[r].change);
    }
    printf("\nTimes are whole calls (upload, kernels, copy back), best of 3.\n");
    free(map);
    free(first);
    test_system_free(&sys);
    return 0;
}
