/* tests/gpu.h - what the GPU tests and benchmarks share.

   REQUIRE_GPU() at the top of a TEST: skips it, saying why, where no CUDA
   device is present, and fails it instead when ELEC_REQUIRE_GPU is set
   (make test-gpu sets it).  CUDA_CHECK(call): a CUDA runtime call in a
   benchmark or example, which prints the call and exits on failure;
   CHECK_ELEC(call) the same for an elec call.
   gpu_test_start() and gpu_test_summary(): the GPU tests' first and last
   calls; GPU_TEST_STREAM_FLAGS: their streams.  gpu_wall_seconds,
   gpu_median, gpu_rel_rms_float: the benchmarks' clock and statistics.
   gpu_chargemap_weight_error and gpu_chargemap_bound: a GPU charge map's
   float bound per point. */
#ifndef ELEC_TESTS_GPU_H
#define ELEC_TESTS_GPU_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REQUIRE_GPU()                                                         \
    do {                                                                      \
        if (elec_cuda_device_count() == 0) {                                  \
            if (getenv("ELEC_REQUIRE_GPU")) {                                 \
                EXPECT(0, "no CUDA device, and ELEC_REQUIRE_GPU is set");     \
                return;                                                       \
            }                                                                 \
            SKIP("no CUDA device here (run make test-gpu on a GPU machine)"); \
        }                                                                     \
    } while (0)

/* The GPU tests' first call: the device's context made before any test
   runs (where there is a device), so that compute-sanitizer attaches at
   once even to a test that then computes on the host for minutes (it
   gives up on a process without a CUDA context after its launch timeout,
   about a minute on the H100).  Only with tests/test.h. */
#ifdef ELEC_TEST_H
static inline void gpu_test_start(void) {
    if (cudaFree(0) != cudaSuccess) (void)cudaGetLastError(); /* no GPU: tests skip */
}
#endif

/* The tally, after every device's context is destroyed: compute-sanitizer
   reports as leaks the device memory still allocated when a context ends,
   so the GPU tests end with this (make sanitize-gpu runs memcheck with
   --leak-check full).  Only with tests/test.h (the benchmarks have none). */
#ifdef ELEC_TEST_H
static inline int gpu_test_summary(void) {
    int count = 0;
    if (cudaGetDeviceCount(&count) == cudaSuccess)
        for (int d = 0; d < count; d++)
            if (cudaSetDevice(d) == cudaSuccess) cudaDeviceReset();
    return test_summary();
}
#endif

/* The tests' own streams are blocking: the tests upload with cudaMemcpy
   and poison with cudaMemset on the legacy default stream, and a
   non-blocking stream would not wait for them (a pageable cudaMemcpy may
   return before its copy reaches the device: under compute-sanitizer's
   synccheck a charge-map test read half-copied atoms). */
#define GPU_TEST_STREAM_FLAGS cudaStreamDefault

/* The benchmarks' clock: monotonic wall seconds. */
static inline double gpu_wall_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

static inline int gpu__compare_doubles(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (sorts v): the benchmarks' statistic. */
static inline double gpu_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, gpu__compare_doubles);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Relative RMS of float results against float ones, in double (the float
   twin of tests/systems.h's test_rel_rms). */
static inline double gpu_rel_rms_float(const float *got, const float *want, size_t n) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)got[i] - want[i];
        num += d * d;
        den += (double)want[i] * want[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* Three parts of a call spread over GPUs (elec_gpu_set): devices 0, 1, 0
   where there are two GPUs, else device 0 three times.  A device listed
   more than once runs its parts one after the other, so with one GPU the
   split and the reassembly are tested, not the devices side by side; the
   three parts make the slabs or runs uneven.  devices: room for 3. */
static inline elec_gpu_set gpu_three_parts(int *devices) {
    elec_gpu_set set;
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
    devices[0] = 0;
    devices[1] = count >= 2 ? 1 : 0;
    devices[2] = 0;
    set.count = 3;
    set.devices = devices;
    return set;
}

/* The GPU float sums' tolerance (DCS, MDH) against the double reference.
   Float rounding over the sum: each term carries ~1 ulp of float (6e-8)
   from rsqrt and the coordinate differences, and the per-chunk float sums
   add ~sqrt(4000) ulp of their own; measured against the potential's RMS
   this stays well under the target of 1e-5 for 1e4 atoms. */
#define GPU_REL_RMS_TOLERANCE 1e-5

#define CUDA_CHECK(call)                                                     \
    do {                                                                     \
        cudaError_t e_ = (call);                                             \
        if (e_ != cudaSuccess) {                                             \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,    \
                    cudaGetErrorString(e_));                                 \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* CHECK_ELEC(call): an elec call in a benchmark or example, with `err`
   (an elec_error *) in scope for the call; prints its message and exits on
   failure. */
#define CHECK_ELEC(call)                                                     \
    do {                                                                     \
        elec_error err_;                                                     \
        elec_error *err = &err_;                                             \
        elec_status s_ = (call);                                             \
        if (s_ != ELEC_OK) {                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,    \
                    err_.message);                                           \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* Charge maps (elec_cuda_chargemap): the largest absolute error of the
   float weights against double, over 2^16 positions t in [0, 1), doubled
   (the device may contract the B-spline recursion's products into other
   fused multiply-adds than the host compiler): Skeel by Horner on the
   float coefficients (elec_msm_axis_weights_float, as the device),
   B-splines by elec_bspline_weights_float. */
static inline double gpu_chargemap_weight_error(elec_chargemap_basis basis, int order) {
    double worst = 0.0;
    for (int k = 0; k < 65536; k++) {
        const double t = (k + 0.5) / 65536.0;
        double wd[10]; /* the longest stencil: Skeel's order 10 */
        float wf[10];
        if (basis == ELEC_CHARGEMAP_SKEEL) {
            const int interpolation = (order - 4) / 2;
            elec_msm_axis_weights(t, interpolation, wd, NULL);
            elec_msm_axis_weights_float((float)t, interpolation, wf);
        } else {
            elec_bspline_weights(order, t, wd, NULL);
            elec_bspline_weights_float(order, (float)t, wf, NULL);
        }
        for (int j = 0; j < order; j++)
            if (fabs((double)wf[j] - wd[j]) > worst) worst = fabs((double)wf[j] - wd[j]);
    }
    return 2.0 * worst;
}

/* How a GPU charge map's rung adds its terms (gpu_chargemap_bound). */
enum { GPU_SUMS_FLOAT = 0, GPU_SUMS_FIXED_POINT = 1, GPU_SUMS_TENSOR = 2 };

/* A float charge map's bound against the double map of the same grid
   coordinates, point by point (tests/test_gpu_chargemap.cu says where it
   comes from): (terms + c) 2^-24 A for the sums and the three products
   (c = max(8, 2 order) ulps), terms 3 e_w max|q| for the weights, and
   terms 2^-33 for a fixed-point rung's rounding to 2^-32 e; A = sum |q w w
   w| and terms as elec_cpu_chargemap_double returns them.  On the tensor
   cores (TILE_BINNED's stage 2 on sm_80 and later, elec_cuda.cuh) each
   term is further off by less than 3 2^-20 of itself (48 ulps of A: the
   operands split into TF32 halves, three products of the four), and each
   of the three sums of products that holds a term by at most 10 2^-23 of
   A (the nine addends, eight exact products and the sum so far, each at
   most A, aligned to the largest and truncated, and the result's own
   truncation), as Fasi et al. (PeerJ Comput. Sci. 7:e330, 2021) measured
   the V100's, T4's and A100's tensor cores to round; the model is assumed
   for sm_90's: 20 ulps of A, three sums a term; and 1 ulp of A where the
   hi hi sums and the cross products' are added at the store. */
static inline double gpu_chargemap_bound(int terms, double abs_sum, int order, double weight_err,
                                         double max_q, int sums) {
    const double c = order * 2 > 8 ? order * 2 : 8;
    const double ulps =
        terms + c + (sums == GPU_SUMS_TENSOR ? 48.0 + 1.0 + 3.0 * 20.0 * terms : 0.0);
    return ulps * ldexp(1.0, -24) * abs_sum + terms * 3.0 * weight_err * max_q +
           (sums == GPU_SUMS_FIXED_POINT ? terms * ldexp(1.0, -33) : 0.0) + 1e-30;
}

/* A GPU handle's float floor where forces nearly cancel (SPME's and
   periodic MSM's tests).  run(s, box, T, gpu, cpu, &estimate, &refused,
   &err) makes the handle at tolerance T for s (positions already in
   float), fills gpu with its forces and cpu with the CPU's double ones at
   the handle's parameters (cpu[0] NaN where the CPU cannot), estimate with the
   CPU resolve's estimate, and *refused with whether that resolve refused
   T itself; it returns the handle's status.  The crystals: rock salt
   3^3 displaced 0.1, 0.01 and 0.001 A RMS and at its sites, CsCl 5^3
   displaced 0.01 A; T = 1e-3, 1e-4, 3e-5, 1e-5.  Each T under 1.5 times
   estimate.float_arithmetic is refused naming float; each the CPU's
   choice refuses is refused; every other is met against exact Ewald at
   the same float positions (test_floored_rel_rms, the tolerance's
   measure), and the GPU's difference from the CPU at the same parameters
   (float arithmetic's share) is within 1.5 times the estimate. */
#if defined(ELEC_TEST_H) && defined(ELEC_TEST_SYSTEMS_H)
typedef elec_status (*gpu_crystal_run_fn)(const test_system *s, const elec_box *box,
                                          double tolerance, double *gpu, double *cpu,
                                          elec_error_estimate *estimate, int *refused,
                                          elec_error *err);
static inline void gpu_float_floor_on_crystals(const char *method, gpu_crystal_run_fn run) {
    static const double tolerances[4] = {1e-3, 1e-4, 3e-5, 1e-5};
    static const double displaced[5] = {0.1, 0.01, 0.001, 0.0, 0.01};
    for (int c = 0; c < 5; c++) {
        test_system s = c < 4 ? test_system_nacl(3, 5.64) : test_system_cscl(5, 4.12);
        if (displaced[c] > 0.0) test_system_displace(&s, displaced[c], 130 + (unsigned)c);
        test_system_round_to_float(&s);
        const elec_box box = test_system_box(&s);
        const elec_atoms atoms = test_system_atoms(&s);
        const size_t n = s.count;
        double *exact = (double *)malloc(3 * n * sizeof(double));
        double *gpu = (double *)malloc(3 * n * sizeof(double));
        double *cpu = (double *)malloc(3 * n * sizeof(double));
        elec_ewald_params e = {0};
        elec_ewald_terms t;
        elec_error err;
        e.tolerance = 1e-12;
        EXPECT(elec_cpu_ewald(&atoms, &box, &e, &t, exact, NULL, &err) == ELEC_OK, "%s",
               err.message);
        for (int k = 0; k < 4; k++) {
            elec_error_estimate estimate;
            int refused = 0;
            memset(&estimate, 0, sizeof estimate);
            const elec_status status =
                run(&s, &box, tolerances[k], gpu, cpu, &estimate, &refused, &err);
            printf("     %s, %s %.3f A, T %.0e: ", method, c < 4 ? "rock salt" : "CsCl",
                   displaced[c], tolerances[k]);
            if (refused) printf("the CPU's choice refuses it");
            else printf("float_arithmetic %.2e", estimate.float_arithmetic);
            if (tolerances[k] < 1.5 * estimate.float_arithmetic) {
                printf(" | refused\n");
                EXPECT(status == ELEC_ERR_INVALID_ARG && strstr(err.message, "float") != NULL,
                       "T %g under 1.5 x %.3e: %s", tolerances[k], estimate.float_arithmetic,
                       status == ELEC_OK ? "accepted" : err.message);
                continue;
            }
            if (refused) {
                printf(" | the GPU's too\n");
                EXPECT(status != ELEC_OK, "T %g: the CPU's choice refuses it, the GPU took it",
                       tolerances[k]);
                continue;
            }
            EXPECT(status == ELEC_OK, "T %g: %s", tolerances[k], err.message);
            if (status != ELEC_OK) continue;
            const double measured = test_floored_rel_rms(gpu, exact, &s, &box);
            const double arithmetic =
                isnan(cpu[0]) ? 0.0 : test_floored_rel_rms(gpu, cpu, &s, &box);
            printf(" | force %.2e, GPU against the CPU %.2e\n", measured, arithmetic);
            EXPECT(measured <= tolerances[k], "T %g: measured %.3e", tolerances[k], measured);
            EXPECT(arithmetic <= 1.5 * estimate.float_arithmetic,
                   "float arithmetic %.3e past 1.5 times its estimate %.3e", arithmetic,
                   estimate.float_arithmetic);
        }
        free(exact);
        free(gpu);
        free(cpu);
        test_system_free(&s);
    }
}
#endif

#endif
