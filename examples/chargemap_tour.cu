/* chargemap_tour - the charge-mapping ladder, one rung at a time
   (make chargemap-tour).

   Maps an ApoA1-size system (92,224 atoms at 0.1 /A^3 in 108.86 x 108.86 x
   77.76 A, charges uniform in [-1, 1]) onto its 112 x 112 x 80 periodic
   grid with Skeel's C1 cubic (seed 004's basis) by every rung of the CPU
   and GPU ladders, and prints a table: time, particles per microsecond
   (PPUS, the seed's unit), speedup over one CPU core and over the GPU
   baseline, the ratio to the seed's best figure (201.8 PPUS, PC reduced
   reads on a K40m), and what each rung changed.  GPU times are whole
   mappings from unsorted float4 atoms already on the device (sort or
   placement, zeroing, map, overflow), replayed from a CUDA graph, median
   of 20.  Each rung is checked against the CPU's double reference at the
   same float grid coordinates (the host API's, u = x / h in double
   rounded once), point by point to the float bound the GPU tests use
   (tests/gpu.h); a rung past it is an error.  The timed maps start from
   float4 positions, whose grid coordinates (u = K x / L in float) carry
   errors of up to ~K 2^-23 points: the last line says how far that puts
   them from the double positions' map. */
#define _POSIX_C_SOURCE 200809L
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "elec_cuda.cuh"
#include "tests/systems.h"
#include "tests/gpu.h"

#include <algorithm>
#include <vector>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#define SEED_K40M_BEST 201.8

static const char *note_of(elec_chargemap_variant v) {
    switch (v) {
    case ELEC_CHARGEMAP_PC_BASELINE: return "a thread per atom, 64 global atomics (Alg. 3)";
    case ELEC_CHARGEMAP_PC_BINNED: return "bin structs with ghosts, a thread per bin (Alg. 4)";
    case ELEC_CHARGEMAP_PC_REDUCED_READS: return "counts apart, slot-major records (Fig. 4a)";
    case ELEC_CHARGEMAP_PC_COALESCED: return "slot-major x, y, z, q arrays (Fig. 4b)";
    case ELEC_CHARGEMAP_GC_BASELINE: return "a thread per point reads 64 bin structs (Alg. 5)";
    case ELEC_CHARGEMAP_GC_COMPUTE_EFFICIENT: return "every basis piece, then selects";
    case ELEC_CHARGEMAP_GC_SHARED: return "a block's bins through shared memory";
    case ELEC_CHARGEMAP_GC_REDUCED_READS: return "slot-major bins, valid slots only (Alg. 6)";
    case ELEC_CHARGEMAP_PC_LANES: return "4 lanes an atom in the caller's order (SPME's spread)";
    case ELEC_CHARGEMAP_PC_SORTED_LANES: return "tile-sorted atoms, 4 lanes an atom (GROMACS)";
    case ELEC_CHARGEMAP_TILE_OWNER: return "tile in shared memory, each point stored once";
    case ELEC_CHARGEMAP_PC_FIXED_POINT: return "64-bit integer atomics: bit-identical (OpenMM)";
    case ELEC_CHARGEMAP_TILE_BINNED: return "binned per block; tiles on the tensor cores where they fit";
    case ELEC_CHARGEMAP_TILE_FUSED: return "both stages in one cooperative kernel";
    case ELEC_CHARGEMAP_TILE_FUSED_FIXED: return "tile-fused adding 64-bit integers: bit-identical";
    default: return "";
    }
}

int main(void) {
    const size_t n = 92224;
    const double box_edges[3] = {108.86, 108.86, 77.76};
    const int dims[3] = {112, 112, 80};
    elec_box box;
    elec_lattice l;
    elec_error err;
    test_rng rng = test_rng_seeded(2024);
    std::vector<double> xyz(3 * n), q(n);
    std::vector<float4> host(n);
    char name[128] = "?";
    double mean = 0.0, cpu_ppus = 0.0, baseline_ppus = 0.0;
    int failures = 0;
    if (elec_cuda_device_count() == 0) {
        fprintf(stderr, "chargemap_tour: no CUDA device\n");
        return 1;
    }
    elec_cuda_device_name(0, name, sizeof name, NULL);
    for (int a = 0; a < 3; a++) box.length[a] = box_edges[a];
    if (elec_chargemap_periodic_lattice(&box, dims, 0.0, &l, &err) != ELEC_OK) {
        fprintf(stderr, "chargemap_tour: %s\n", err.message);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        for (int a = 0; a < 3; a++) xyz[3 * i + a] = box_edges[a] * test_uniform(&rng);
        q[i] = 2.0 * test_uniform(&rng) - 1.0;
        mean += q[i];
    }
    for (size_t i = 0; i < n; i++) {
        q[i] -= mean / (double)n;
        host[i] = make_float4((float)xyz[3 * i], (float)xyz[3 * i + 1], (float)xyz[3 * i + 2],
                              (float)q[i]);
    }
    elec_atoms atoms = elec_atoms_from_xyz(n, xyz.data(), q.data(), NULL);
    const size_t points = elec_lattice_size(&l);
    std::vector<double> want(points);
    std::vector<float> got(points);
    {
        elec_chargemap_params p = {0};
        p.periodic = 1;
        if (elec_cpu_chargemap_double(&atoms, &l, &p, want.data(), NULL, NULL, &err) != ELEC_OK) {
            fprintf(stderr, "chargemap_tour: reference: %s\n", err.message);
            return 1;
        }
    }
    double scale = 0.0, float_positions = 0.0;
    for (size_t g = 0; g < points; g++) scale = std::max(scale, fabs(want[g]));
    /* The check's system: the float grid coordinates and charges the host
       API maps, as positions on a lattice of unit spacing, and the double
       reference there with each point's sum of |terms| and term count. */
    std::vector<double> unit_xyz(3 * n), unit_q(n), unit_want(points), unit_abs(points);
    std::vector<int> unit_terms(points);
    elec_lattice unit = l;
    for (int a = 0; a < 3; a++) {
        unit.spacing[a] = 1.0;
        unit.origin[a] = 0.0;
    }
    for (size_t i = 0; i < n; i++) {
        for (int a = 0; a < 3; a++) {
            float u = (float)(xyz[3 * i + a] / l.spacing[a]); /* positions in [0, L) */
            if (u >= (float)dims[a]) u = 0.0f;
            unit_xyz[3 * i + a] = u;
        }
        unit_q[i] = (float)q[i];
    }
    elec_atoms unit_atoms = elec_atoms_from_xyz(n, unit_xyz.data(), unit_q.data(), NULL);
    double max_q = 0.0;
    for (size_t i = 0; i < n; i++) max_q = std::max(max_q, fabs(unit_q[i]));
    const double e_w = gpu_chargemap_weight_error(ELEC_CHARGEMAP_SKEEL, 4);
    {
        elec_chargemap_params p = {0};
        p.periodic = 1;
        if (elec_cpu_chargemap_double(&unit_atoms, &unit, &p, unit_want.data(), unit_abs.data(),
                                      unit_terms.data(), &err) != ELEC_OK) {
            fprintf(stderr, "chargemap_tour: reference: %s\n", err.message);
            return 1;
        }
    }

    printf("Charge-mapping ladder on %s: %zu atoms, %d x %d x %d periodic grid, Skeel's C1 "
           "cubic\n\n", name, n, dims[0], dims[1], dims[2]);
    printf("%-22s %10s %10s %10s %10s %8s  %s\n", "rung", "time (us)", "PPUS", "vs 1 core",
           "vs base", "vs K40m", "what changed");
    /* The CPU ladder: one core for the seed's Alg. 1 and 2, every core for
       the binned rung. */
    for (int v = 1; v < ELEC_CHARGEMAP_CPU_VARIANT_COUNT; v++) {
        elec_chargemap_params p = {0};
        int threads = 1;
        p.periodic = 1;
        p.cpu_variant = (elec_chargemap_cpu_variant)v;
#ifdef _OPENMP
        threads = v == ELEC_CHARGEMAP_CPU_BINNED ? omp_get_num_procs() : 1;
        omp_set_num_threads(threads);
#endif
        double best = 1e30;
        for (int rep = 0; rep < 3; rep++) {
            double t0 = gpu_wall_seconds();
            if (elec_cpu_chargemap(&atoms, &l, &p, got.data(), &err) != ELEC_OK) {
                fprintf(stderr, "chargemap_tour: CPU: %s\n", err.message);
                return 1;
            }
            best = std::min(best, gpu_wall_seconds() - t0);
        }
        const double ppus = n / (best * 1e6);
        if (v == ELEC_CHARGEMAP_CPU_PRECOMPUTED) cpu_ppus = ppus;
        char label[64];
        snprintf(label, sizeof label, "cpu-%s (%d thr)",
                 elec_chargemap_cpu_variant_name(p.cpu_variant), threads);
        printf("%-22s %10.1f %10.2f %10s %10s %7.3fx  %s\n", label, best * 1e6, ppus, "", "",
               ppus / SEED_K40M_BEST,
               v == ELEC_CHARGEMAP_CPU_BASELINE    ? "seed Alg. 1: wrap and basis at every point"
               : v == ELEC_CHARGEMAP_CPU_PRECOMPUTED ? "seed Alg. 2: weights per axis first"
                                                     : "cell-sorted atoms, threads own z-slabs");
    }

    float4 *d_xyzq;
    float *d_grid;
    cudaStream_t stream;
    if (cudaMalloc((void **)&d_xyzq, n * sizeof(float4)) != cudaSuccess ||
        cudaMalloc((void **)&d_grid, points * sizeof(float)) != cudaSuccess ||
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess ||
        cudaMemcpy(d_xyzq, host.data(), n * sizeof(float4), cudaMemcpyHostToDevice) !=
            cudaSuccess) {
        fprintf(stderr, "chargemap_tour: CUDA setup failed\n");
        return 1;
    }
    for (int v = 1; v < ELEC_CHARGEMAP_VARIANT_COUNT; v++) {
        elec_chargemap_params p = {0};
        elec_cuda_chargemap_handle *h = NULL;
        cudaGraph_t graph = NULL;
        cudaGraphExec_t exec = NULL;
        cudaEvent_t start, stop;
        std::vector<double> times;
        p.periodic = 1;
        p.variant = (elec_chargemap_variant)v;
        if (elec_cuda_chargemap_create(&l, n, &p, -1, &h, &err) != ELEC_OK) {
            printf("%-22s skipped: %s\n", elec_chargemap_variant_name(p.variant), err.message);
            continue;
        }
        if (cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal) != cudaSuccess ||
            elec_cuda_chargemap_compute(h, d_xyzq, n, d_grid, stream, &err) != ELEC_OK ||
            cudaStreamEndCapture(stream, &graph) != cudaSuccess ||
            cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess ||
            cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess) {
            fprintf(stderr, "chargemap_tour: %s: graph capture failed\n",
                    elec_chargemap_variant_name(p.variant));
            return 1;
        }
        for (int rep = -3; rep < 20; rep++) {
            float ms;
            cudaEventRecord(start, stream);
            cudaGraphLaunch(exec, stream);
            cudaEventRecord(stop, stream);
            cudaEventSynchronize(stop);
            cudaEventElapsedTime(&ms, start, stop);
            if (rep >= 0) times.push_back(1e3 * ms);
        }
        std::sort(times.begin(), times.end());
        const double us = 0.5 * (times[9] + times[10]);
        const double ppus = n / us;
        if (v == ELEC_CHARGEMAP_PC_BASELINE) baseline_ppus = ppus;
        if (elec_cuda_chargemap_finish(h, NULL, stream, &err) != ELEC_OK ||
            cudaMemcpy(got.data(), d_grid, points * sizeof(float), cudaMemcpyDeviceToHost) !=
                cudaSuccess) {
            fprintf(stderr, "chargemap_tour: %s: %s\n", elec_chargemap_variant_name(p.variant),
                    err.message);
            return 1;
        }
        for (size_t g = 0; g < points; g++)
            float_positions = std::max(float_positions, fabs(got[g] - want[g]));
        printf("%-22s %10.2f %10.0f %9.0fx %9.2fx %7.1fx  %s\n",
               elec_chargemap_variant_name(p.variant), us, ppus, ppus / cpu_ppus,
               ppus / baseline_ppus, ppus / SEED_K40M_BEST, note_of(p.variant));
        /* the check: the host API at the reference's float coordinates */
        double worst = 0.0;
        size_t at = 0;
        if (elec_cuda_chargemap(&unit_atoms, &unit, &p, got.data(), &err) != ELEC_OK) {
            fprintf(stderr, "chargemap_tour: %s: %s\n", elec_chargemap_variant_name(p.variant),
                    err.message);
            return 1;
        }
        for (size_t g = 0; g < points; g++) {
            const double r =
                fabs(got[g] - unit_want[g]) /
                gpu_chargemap_bound(unit_terms[g], unit_abs[g], 4, e_w, max_q,
                                    p.variant == ELEC_CHARGEMAP_PC_FIXED_POINT ||
                                        p.variant == ELEC_CHARGEMAP_TILE_FUSED_FIXED);
            if (!(r <= worst)) {
                worst = r;
                at = g;
            }
        }
        if (!(worst <= 1.0)) {
            printf("  error: %s at point %zu: %.9g against %.9g, %.2f of the float bound\n",
                   elec_chargemap_variant_name(p.variant), at, (double)got[at], unit_want[at],
                   worst);
            failures++;
        }
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
        elec_cuda_chargemap_destroy(h);
    }
    { /* the rung a default handle takes here (describe: the rule's, or
         pc-lanes where tile-binned does not fit) */
        elec_chargemap_params asked = {0};
        elec_cuda_chargemap_handle *h = NULL;
        elec_cuda_chargemap_info info;
        asked.periodic = 1;
        if (elec_cuda_chargemap_create(&l, n, &asked, -1, &h, &err) == ELEC_OK &&
            elec_cuda_chargemap_describe(h, &info, &err) == ELEC_OK)
            printf("\nThe default rung (ELEC_CHARGEMAP_FASTEST) for these atoms and this grid: "
                   "%s.\n", elec_chargemap_variant_name(info.variant));
        else
            printf("\nThe default rung: no handle (%s).\n", err.message);
        elec_cuda_chargemap_destroy(h);
    }
    printf("\nvs 1 core: over the seed's Alg. 2 on one CPU core; vs base: over pc-baseline; "
           "vs K40m: over the\nseed's best (201.8 PPUS).  Goal on an H100: >= 10,000 PPUS "
           "end to end (<= 9.2 us).\n");
    printf("Every rung within the float bound of the double map at the same grid coordinates%s;\n"
           "from float4 positions (float grid coordinates) the maps lie within %.2e (%.1e of "
           "the\nlargest value, %.2e) of the double positions' map.\n",
           failures ? " EXCEPT THOSE MARKED" : "", float_positions, float_positions / scale,
           scale);
    cudaFree(d_xyzq);
    cudaFree(d_grid);
    cudaStreamDestroy(stream);
    return failures ? 1 : 0;
}
