/* bench/bench.cu - elec's GPU benchmark (make bench).

   Prints, for the GPU it runs on:
     1. the ceiling: reciprocal square roots per second the SFU delivers,
        measured here by a kernel that does nothing else;
     2. the volume DCS kernel alone (kernel time, no transfers) for points
        per thread and the split of rsqrts between SFU and FMA pipe: the
        basis of the default (8 points, SFU only);
     3. DCS maps (default variant) on one GPU and on every GPU: atom
        evaluations per second, and the ratio to the ceiling times the
        number of GPUs;
     4. MDH at points: evaluations per second and ratio to the ceiling
        (MDH needs two SFU operations per pair, rsqrt and exp2, so its own
        ceiling is half the rsqrt rate).
   Times are medians of repeated runs, taken with CUDA events for kernels
   and with the wall clock for whole API calls (which include uploading the
   atoms and copying the map back).  Record the output in bench/RESULTS.md. */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "elec_cuda.cuh"
#include "tests/systems.h"
#include "tests/gpu.h"

#include <algorithm>
#include <time.h>


/* ------------------------------------------------------- rsqrt ceiling */

/* Eight independent chains per thread, each x <- rsqrt(x) * c + d: one
   MUFU.RSQ and one FFMA per step, so the SFU is the only limit. */
__global__ void rsqrt_ceiling_kernel(float *out, int steps, float c) {
    float x[8];
    for (int m = 0; m < 8; m++) x[m] = 1.0f + threadIdx.x * 1e-3f + m;
    for (int s = 0; s < steps; s++)
#pragma unroll
        for (int m = 0; m < 8; m++) x[m] = fmaf(elec_rsqrt_sfu(x[m]), c, 1.5f);
    float sum = 0.0f;
    for (int m = 0; m < 8; m++) sum += x[m];
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}

static double measure_rsqrt_ceiling(int sms) {
    const int block = 256, blocks = sms * 8, steps = 4096;
    float *out;
    cudaEvent_t start, stop;
    double times[7];
    CUDA_CHECK(cudaMalloc(&out, (size_t)blocks * block * sizeof(float)));
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    rsqrt_ceiling_kernel<<<blocks, block>>>(out, steps, 0.5f);
    CUDA_CHECK(cudaGetLastError());
    for (int r = 0; r < 7; r++) {
        float ms;
        CUDA_CHECK(cudaEventRecord(start));
        rsqrt_ceiling_kernel<<<blocks, block>>>(out, steps, 0.5f);
        CUDA_CHECK(cudaGetLastError());
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK(cudaEventSynchronize(stop));
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        times[r] = ms * 1e-3;
    }
    CUDA_CHECK(cudaFree(out));
    return (double)blocks * block * steps * 8 / gpu_median(times, 7);
}

/* ------------------------------------------------ hybrid split sweep */

template <int POINTS, int SOFT>
static double time_hybrid(float *slices, int pitch, int rows, int slices_n,
                          const float4 *d_atoms, int atoms) {
    const float3 corner = make_float3(-256.0f, -64.0f, -16.0f);
    const float3 spacing = make_float3(0.5f, 0.5f, 0.5f);
    cudaEvent_t start, stop;
    double times[5];
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    CUDA_CHECK((elec_cuda_dcs_volume_launch<POINTS, SOFT>(slices, pitch, rows, slices_n, corner,
                                                          spacing, d_atoms, atoms, 0)));
    for (int r = 0; r < 5; r++) {
        float ms;
        CUDA_CHECK(cudaEventRecord(start));
        CUDA_CHECK((elec_cuda_dcs_volume_launch<POINTS, SOFT>(slices, pitch, rows, slices_n,
                                                              corner, spacing, d_atoms, atoms,
                                                              0)));
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK(cudaEventSynchronize(stop));
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        times[r] = ms * 1e-3;
    }
    return (double)pitch * rows * slices_n * atoms / gpu_median(times, 5);
}

static void hybrid_split_sweep(double ceiling) {
    const int pitch = 1024, rows = 256, slices_n = 64;
    float *slices;
    float4 chunk[ELEC_DCS_CHUNK];
    test_rng rng = test_rng_seeded(12345);
    for (int n = 0; n < ELEC_DCS_CHUNK; n++)
        chunk[n] = make_float4(512.0f * (float)test_uniform(&rng) - 256.0f,
                               128.0f * (float)test_uniform(&rng) - 64.0f,
                               64.0f * (float)test_uniform(&rng) - 32.0f,
                               (float)test_uniform(&rng) - 0.5f);
    float4 *d_atoms;
    CUDA_CHECK(cudaMalloc(&d_atoms, sizeof chunk));
    CUDA_CHECK(cudaMemcpy(d_atoms, chunk, sizeof chunk, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMalloc(&slices, (size_t)pitch * rows * slices_n * sizeof(float)));
    CUDA_CHECK(cudaMemset(slices, 0, (size_t)pitch * rows * slices_n * sizeof(float)));
    printf("\nVolume kernel alone: %d x %d x %d points, %d atoms (shared-memory tiles)\n",
           pitch, rows, slices_n, ELEC_DCS_CHUNK);
    printf("  points/thread  rsqrt on FMA pipe  atom evals/s  / ceiling\n");
#define SPLIT(P, S)                                                          \
    do {                                                                     \
        double r = time_hybrid<P, S>(slices, pitch, rows, slices_n,          \
                                     d_atoms, ELEC_DCS_CHUNK);              \
        printf("  %13d  %17s  %12.3e  %8.2f\n", P, #S "/" #P, r, r / ceiling); \
    } while (0)
    SPLIT(8, 0);
    SPLIT(8, 1);
    SPLIT(8, 2);
    SPLIT(16, 0);
    SPLIT(16, 1);
    SPLIT(16, 2);
    SPLIT(16, 3);
    SPLIT(16, 4);
    SPLIT(32, 0);
    SPLIT(32, 4);
    SPLIT(32, 6);
#undef SPLIT
    CUDA_CHECK(cudaFree(slices));
    CUDA_CHECK(cudaFree(d_atoms));
}

/* -------------------------------------------------- MDH kernel alone */

template <int POINTS>
static double time_mdh_kernel(int points, int atoms) {
    float4 *d_points, *d_atoms;
    float *d_b, *d_out;
    cudaEvent_t start, stop;
    double times[5];
    test_rng rng = test_rng_seeded(99);
    float4 *h = (float4 *)malloc((size_t)(points > atoms ? points : atoms) * sizeof(float4));
    float *hb = (float *)malloc((size_t)atoms * sizeof(float));
    CUDA_CHECK(cudaMalloc(&d_points, (size_t)points * sizeof(float4)));
    CUDA_CHECK(cudaMalloc(&d_atoms, (size_t)atoms * sizeof(float4)));
    CUDA_CHECK(cudaMalloc(&d_b, (size_t)atoms * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&d_out, (size_t)points * sizeof(float)));
    for (int i = 0; i < points; i++)
        h[i] = make_float4(140.0f * (float)test_uniform(&rng) - 70.0f,
                           140.0f * (float)test_uniform(&rng) - 70.0f,
                           140.0f * (float)test_uniform(&rng) - 70.0f, 0.0f);
    CUDA_CHECK(cudaMemcpy(d_points, h, (size_t)points * sizeof(float4), cudaMemcpyHostToDevice));
    for (int i = 0; i < atoms; i++) {
        h[i] = make_float4(100.0f * (float)test_uniform(&rng) - 50.0f,
                           100.0f * (float)test_uniform(&rng) - 50.0f,
                           100.0f * (float)test_uniform(&rng) - 50.0f,
                           (float)test_uniform(&rng) - 0.5f);
        hb[i] = 0.2f * (float)test_uniform(&rng);
    }
    CUDA_CHECK(cudaMemcpy(d_atoms, h, (size_t)atoms * sizeof(float4), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(d_b, hb, (size_t)atoms * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    for (int r = -1; r < 5; r++) {
        float ms;
        CUDA_CHECK(cudaEventRecord(start));
        CUDA_CHECK(elec_cuda_mdh_points_launch<POINTS>(d_out, d_points, points, d_atoms, d_b,
                                                       atoms, 0.15f, 1e-8f, 0));
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK(cudaEventSynchronize(stop));
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        if (r >= 0) times[r] = ms * 1e-3;
    }
    CUDA_CHECK(cudaFree(d_points));
    CUDA_CHECK(cudaFree(d_atoms));
    CUDA_CHECK(cudaFree(d_b));
    CUDA_CHECK(cudaFree(d_out));
    free(h);
    free(hb);
    return (double)points * atoms / gpu_median(times, 5);
}

/* --------------------------------------------------------- DCS and MDH */

static double time_dcs_map(const elec_atoms *atoms, const elec_lattice *l,
                           int gpus, float *map) {
    elec_dcs_params p = {0};
    elec_error err;
    double times[3];
    p.gpus.count = gpus;
    for (int r = 0; r < 4; r++) {
        double t0 = gpu_wall_seconds();
        if (elec_cuda_dcs_map(atoms, l, &p, map, &err) != ELEC_OK) {
            fprintf(stderr, "DCS map failed: %s\n", err.message);
            exit(1);
        }
        if (r > 0) times[r - 1] = gpu_wall_seconds() - t0; /* first run warms up */
    }
    return gpu_median(times, 3);
}

/* Sections to run: all, or those named on the command line. */
static int wanted(int argc, char **argv, const char *section) {
    if (argc < 2) return 1;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], section)) return 1;
    return 0;
}

int main(int argc, char **argv) {
    int devices = elec_cuda_device_count();
    cudaDeviceProp prop;
    if (devices == 0) {
        fprintf(stderr, "bench: no CUDA device\n");
        return 1;
    }
    CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("elec bench on %s (%d SMs, %d device(s)), CUDA runtime %d\n",
           prop.name, prop.multiProcessorCount, devices, CUDART_VERSION);

    double ceiling = measure_rsqrt_ceiling(prop.multiProcessorCount);
    printf("\nCeiling: rsqrt.approx (SFU) throughput %.3e /s per GPU\n", ceiling);

    if (wanted(argc, argv, "dcs")) hybrid_split_sweep(ceiling);

    /* DCS: 100,000 atoms in a 100 A cube, a 256 x 256 x 192 map at 0.4 A:
       1.26e12 evaluations, long enough that the upload and the 50 MB copy
       back are a few percent. */
    if (wanted(argc, argv, "dcs")) {
        test_system sys = test_system_random(100000, 100.0, 42);
        elec_atoms atoms = test_system_atoms(&sys);
        elec_lattice l = {{256, 256, 192}, {0.0, 0.0, 0.0}, {0.4, 0.4, 0.4}};
        size_t n = elec_lattice_size(&l);
        float *map = (float *)malloc(n * sizeof *map);
        double evals = (double)n * atoms.count;
        printf("\nDCS map, default variant (%s): %zu atoms, %d x %d x %d lattice\n",
               elec_dcs_variant_name(ELEC_DCS_HYBRID_RSQRT), /* the default's */
               atoms.count, l.dims[0], l.dims[1], l.dims[2]);
        printf("  GPUs  time (s)  atom evals/s  / (ceiling x GPUs)\n");
        double t1 = time_dcs_map(&atoms, &l, 0, map);
        printf("  %4d  %8.4f  %12.3e  %8.2f\n", 1, t1, evals / t1, evals / t1 / ceiling);
        if (devices > 1) {
            double ta = time_dcs_map(&atoms, &l, ELEC_ALL_GPUS, map);
            printf("  %4d  %8.4f  %12.3e  %8.2f   (scaling %.2fx)\n", devices, ta,
                   evals / ta, evals / ta / (ceiling * devices), t1 / ta);
        }
        free(map);
        test_system_free(&sys);
    }

    /* Cutoff map, seed 000's case: a water box of 1.5e7 A^3, 1,534,539
       atoms, lattice spacing 0.5 A, MSM short range within 12 A.  The whole
       call: binning on the host, upload, kernel with the overflow summed on
       the host meanwhile, and the copy back of a 490 MB map. */
    if (wanted(argc, argv, "cutoff")) {
        test_system water = test_system_water(511513, 44);
        elec_atoms atoms = test_system_atoms(&water);
        elec_lattice l;
        elec_cutoff_params p = {0};
        elec_error err;
        double times[2];
        float *map;
        for (int axis = 0; axis < 3; axis++) {
            l.spacing[axis] = 0.5;
            l.origin[axis] = 0.0;
            l.dims[axis] = (int)(water.box[axis] / 0.5) + 1;
        }
        map = (float *)malloc(elec_lattice_size(&l) * sizeof *map);
        for (int r = 0; r < 3; r++) {
            double t0 = gpu_wall_seconds();
            if (!map || elec_cuda_cutoff_map(&atoms, &l, &p, map, &err) != ELEC_OK) {
                fprintf(stderr, "cutoff map failed: %s\n", map ? err.message : "no memory");
                return 1;
            }
            if (r > 0) times[r - 1] = gpu_wall_seconds() - t0;
        }
        printf("\nCutoff map (seed 000's case): %zu atoms in a %.1f A cube, %d^3 lattice "
               "at 0.5 A, cutoff 12 A\n", atoms.count, water.box[0], l.dims[0]);
        printf("  whole call %.3f s (best of 2 after a warm-up; seed: 10.06 s on a Tesla "
               "C2050; goal <= 0.3 s)\n", times[0] < times[1] ? times[0] : times[1]);

        /* Bin length against the kernel's waste: shorter bins hug the
           cutoff sphere closer but hold more empty slots. */
        if (wanted(argc, argv, "bins")) {
            const double lengths[5] = {3.0, 3.5, 3.91, 4.5, 5.0};
            printf("  bin length sweep (whole call, best of 2):");
            for (int b = 0; b < 5; b++) {
                double best_t = 1e30;
                p.bin_length = lengths[b];
                for (int r = 0; r < 2; r++) {
                    double t0 = gpu_wall_seconds();
                    if (elec_cuda_cutoff_map(&atoms, &l, &p, map, &err) != ELEC_OK) {
                        fprintf(stderr, "cutoff map failed: %s\n", err.message);
                        return 1;
                    }
                    t0 = gpu_wall_seconds() - t0;
                    best_t = t0 < best_t ? t0 : best_t;
                }
                printf(" %.2f A %.3f s;", lengths[b], best_t);
            }
            printf("\n");
            p.bin_length = 0.0;
        }

        /* The whole MSM map of the same case, every stage on the GPU: the
           seed's 20.2 s (GTX 280, CPU lattice stages); goal <= 0.6 s. */
        elec_stage_times best, t;
        memset(&best, 0, sizeof best);
        for (int r = 0; r < 3; r++) {
            elec_msm_params mp = {0};
            if (elec_cuda_msm_map_timed(&atoms, &l, &mp, map, &t, &err) != ELEC_OK) {
                fprintf(stderr, "MSM map failed: %s\n", err.message);
                return 1;
            }
            if (r > 0 && (best.total == 0.0 || t.total < best.total)) best = t;
        }
        printf("\nMSM map, same case (C1 cubic, h = 2 A, a = 12 A), every stage on the GPU\n");
        printf("  whole call %.3f s (best of 2 after a warm-up; seed: 20.2 s on a GTX 280 "
               "with CPU lattice stages; goal <= 0.6 s)\n", best.total);
        printf("  stages (ms): setup (host: bins, lattices, uploads) %.1f, short range %.1f,\n"
               "    anterpolation %.2f, restriction %.2f, lattice cutoff %.2f, top %.2f,\n"
               "    prolongation %.2f, interpolation %.2f, copy back + overflow %.1f\n",
               1e3 * elec_stage_seconds(&best, "setup"),
               1e3 * elec_stage_seconds(&best, "short range"),
               1e3 * elec_stage_seconds(&best, "anterpolation"),
               1e3 * elec_stage_seconds(&best, "restriction"),
               1e3 * elec_stage_seconds(&best, "lattice cutoff"),
               1e3 * elec_stage_seconds(&best, "top"),
               1e3 * elec_stage_seconds(&best, "prolongation"),
               1e3 * elec_stage_seconds(&best, "interpolation"),
               1e3 * elec_stage_seconds(&best, "copy back"));

        /* Spread over GPUs (slabs of z planes; README, "Several GPUs"): on
           every GPU where there are several, and always on this GPU listed
           twice, whose two slabs then run in turn: the split's own cost
           (each MSM slab builds the whole hierarchy), and the speed-up two
           GPUs would give if each ran its slab as fast as this one does in
           turn (an estimate: it leaves out the host's threads and copies
           running side by side). */
        {
            const double one_cutoff = times[0] < times[1] ? times[0] : times[1];
            const double one_msm = best.total;
            const int twice[2] = {0, 0};
            for (int all = 0; all < (devices > 1 ? 2 : 1); all++) {
                elec_cutoff_params cp = {0};
                elec_msm_params mp = {0};
                double best_cutoff = 1e30, best_msm = 1e30;
                if (all) {
                    cp.gpus.count = mp.gpus.count = ELEC_ALL_GPUS;
                } else {
                    cp.gpus.count = mp.gpus.count = 2;
                    cp.gpus.devices = mp.gpus.devices = twice;
                }
                for (int r = 0; r < 3; r++) {
                    double t0 = gpu_wall_seconds();
                    if (elec_cuda_cutoff_map(&atoms, &l, &cp, map, &err) != ELEC_OK) {
                        fprintf(stderr, "spread cutoff map failed: %s\n", err.message);
                        return 1;
                    }
                    t0 = gpu_wall_seconds() - t0;
                    if (r > 0 && t0 < best_cutoff) best_cutoff = t0;
                    t0 = gpu_wall_seconds();
                    if (elec_cuda_msm_map(&atoms, &l, &mp, map, &err) != ELEC_OK) {
                        fprintf(stderr, "spread MSM map failed: %s\n", err.message);
                        return 1;
                    }
                    t0 = gpu_wall_seconds() - t0;
                    if (r > 0 && t0 < best_msm) best_msm = t0;
                }
                if (all) {
                    printf("\nSpread over %d GPUs (slabs, best of 2 after a warm-up): cutoff "
                           "%.3f s (%.2fx one GPU), MSM %.3f s (%.2fx)\n", devices,
                           best_cutoff, one_cutoff / best_cutoff, best_msm,
                           one_msm / best_msm);
                } else {
                    printf("\nSpread in two slabs on GPU 0 listed twice (in turn; best of 2 "
                           "after a warm-up):\n"
                           "  cutoff %.3f s against %.3f whole (split's cost %+.3f s); two GPUs "
                           "at this pace: %.2fx (estimate)\n"
                           "  MSM    %.3f s against %.3f whole (split's cost %+.3f s); two GPUs "
                           "at this pace: %.2fx (estimate)\n",
                           best_cutoff, one_cutoff, best_cutoff - one_cutoff,
                           one_cutoff / (0.5 * best_cutoff), best_msm, one_msm,
                           best_msm - one_msm, one_msm / (0.5 * best_msm));
                }
            }
        }
        free(map);
        test_system_free(&water);
    }

    /* MSM energy and forces, ApoA1-size: 92,224 atoms at 0.1 /A^3 in a
       108.86 x 108.86 x 77.76 A box, charges uniform in [-1, 1] less their
       mean (bench_spme's system), MSM defaults (non-periodic); beside it
       SPME's one-shot call on the same atoms in that box (periodic, cutoff
       9 A, tolerance 1e-5): both whole host-API calls, uploads and
       downloads included.  Medians of 5 after a warm-up. */
    if (wanted(argc, argv, "msm-energy")) {
        const double box[3] = {108.86, 108.86, 77.76};
        const size_t n = 92224;
        test_system sys = test_system_random(n, 1.0, 45);
        test_rng rng = test_rng_seeded(46);
        double total = 0.0, e_msm = 0.0, t_msm[5], t_spme[5], t_cpu;
        double *forces = (double *)malloc(3 * n * sizeof *forces);
        elec_ewald_terms terms;
        elec_box b = {{box[0], box[1], box[2]}};
        elec_spme_params sp = {0};
        elec_error err;
        for (size_t i = 0; i < n; i++)
            for (int axis = 0; axis < 3; axis++)
                sys.xyz[3 * i + axis] = box[axis] * test_uniform(&rng);
        for (size_t i = 0; i < n; i++) total += sys.charge[i];
        for (size_t i = 0; i < n; i++) sys.charge[i] -= total / (double)n;
        elec_atoms atoms = test_system_atoms(&sys);
        /* the former SPME defaults (cutoff 9 A, alpha 0.3077 /A, order 4,
           1 A grid), as this comparison was first made */
        sp.cutoff = 9.0;
        sp.alpha = 0.3077;
        sp.order = 4;
        sp.grid_spacing = 1.0;
        for (int r = 0; r < 6; r++) {
            double t0 = gpu_wall_seconds();
            if (elec_cuda_msm_energy(&atoms, NULL, &e_msm, forces, &err) != ELEC_OK) {
                fprintf(stderr, "MSM energy failed: %s\n", err.message);
                return 1;
            }
            if (r > 0) t_msm[r - 1] = gpu_wall_seconds() - t0;
            t0 = gpu_wall_seconds();
            if (elec_cuda_spme(&atoms, &b, &sp, &terms, forces, NULL, &err) != ELEC_OK) {
                fprintf(stderr, "SPME failed: %s\n", err.message);
                return 1;
            }
            if (r > 0) t_spme[r - 1] = gpu_wall_seconds() - t0;
        }
        {
            double t0 = gpu_wall_seconds(), e_cpu;
            if (elec_cpu_msm_energy(&atoms, NULL, &e_cpu, forces, &err) != ELEC_OK) {
                fprintf(stderr, "CPU MSM energy failed: %s\n", err.message);
                return 1;
            }
            t_cpu = gpu_wall_seconds() - t0;
        }
        printf("\nMSM energy and forces, %zu atoms (ApoA1-size, 0.1 /A^3), defaults "
               "(C1 cubic, h = 2 A, a = 12 A), whole call\n", n);
        printf("  GPU MSM %.2f ms (E = %.4f e^2/A, non-periodic); CPU MSM %.0f ms "
               "(%.0fx)\n", 1e3 * gpu_median(t_msm, 5), e_msm, 1e3 * t_cpu,
               t_cpu / gpu_median(t_msm, 5));
        printf("  beside it, GPU SPME one-shot call, same atoms, periodic box, cutoff 9 A, "
               "alpha 0.3077, order 4, 1 A grid: %.2f ms (the kept-handle evaluation is "
               "in bench_spme)\n",
               1e3 * gpu_median(t_spme, 5));
        free(forces);
        test_system_free(&sys);
    }

    /* MDH: 200,000 atoms, 1,000,000 points at random positions around them
       (the faces of a large APBS lattice are of this order): the whole call,
       then the kernel alone for 2, 4 and 8 points per thread (the library
       uses 2). */
    if (wanted(argc, argv, "mdh")) {
        test_system sys = test_system_random(200000, 100.0, 43);
        elec_atoms atoms = test_system_atoms(&sys);
        size_t points = 1000000;
        double *xyz = (double *)malloc(3 * points * sizeof *xyz);
        float *pot = (float *)malloc(points * sizeof *pot);
        test_rng rng = test_rng_seeded(777);
        elec_mdh_params p = {0};
        elec_error err;
        double times[3], evals = (double)points * atoms.count;
        for (size_t i = 0; i < 3 * points; i++)
            xyz[i] = -20.0 + 140.0 * test_uniform(&rng);
        p.ionic_strength = 0.15;
        for (int r = 0; r < 4; r++) {
            double t0 = gpu_wall_seconds();
            if (elec_cuda_mdh_points(&atoms, xyz, points, &p, pot, &err) != ELEC_OK) {
                fprintf(stderr, "MDH failed: %s\n", err.message);
                return 1;
            }
            if (r > 0) times[r - 1] = gpu_wall_seconds() - t0;
        }
        double t = gpu_median(times, 3);
        printf("\nMDH at points: %zu atoms, %zu points\n", atoms.count, points);
        printf("  time (s)  evals/s  / rsqrt ceiling  / MDH ceiling (2 SFU ops)\n");
        printf("  %8.4f  %.3e  %8.2f  %8.2f\n", t, evals / t, evals / t / ceiling,
               2.0 * evals / t / ceiling);
        printf("  kernel alone, 1e6 points x 2e5 atoms, points per thread:\n");
        double k2 = time_mdh_kernel<2>(1000000, 200000);
        double k4 = time_mdh_kernel<4>(1000000, 200000);
        double k8 = time_mdh_kernel<8>(1000000, 200000);
        printf("    2: %.3e evals/s (%.2f of MDH ceiling)\n", k2, 2.0 * k2 / ceiling);
        printf("    4: %.3e evals/s (%.2f of MDH ceiling)\n", k4, 2.0 * k4 / ceiling);
        printf("    8: %.3e evals/s (%.2f of MDH ceiling)\n", k8, 2.0 * k8 / ceiling);
        free(xyz);
        free(pot);
        test_system_free(&sys);
    }
    return 0;
}
