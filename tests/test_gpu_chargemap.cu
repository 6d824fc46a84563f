/* Charge mapping on the GPU (elec_cuda_chargemap, seed 004): every rung
   of the ladder, both bases, on maps and periodic grids, against the
   double CPU reference point by point; the total charge; overfull bins
   and the overflow count; refusal of atoms outside a map (host API by
   name, device API by count, again for a second map of one prepare);
   periodic images; the fixed-point rungs bit-identical under shuffling
   and repetition; the device-pointer API repeated and replayed from a
   CUDA graph, and mapping the atoms that a kernel which releases its
   dependents early writes just before; the tile-binned rungs on dense
   tiles, odd tile edges and few atoms, and their binning groups raised
   only where that sorts the copies in shared memory; the default rung by
   size, and pc-lanes where no tiling fits or tile-binned's copies do not
   fit the device's memory (allocations failed on purpose); the division
   by a multiply that places a tile (on the host as well).  Without a GPU
   every GPU case skips and says so; make test-gpu sets ELEC_REQUIRE_GPU=1,
   and then a missing GPU is a failure.

   Geometry: spacings of 0.5 A and positions rounded so that x / h is a
   float, periods of 2^k A over 2^m points: the grid coordinates the GPU
   computes are then exactly the reference's, and what is left is float
   arithmetic: per point, (m_g + c) 2^-24 A_g for the sums (recursive
   summation in any order, atomics included; A_g = sum |q w w w|, m_g the
   terms, c = max(8, 2 order) ulps for the three products) plus 3 e_w
   max|q| per term for the weights, e_w the largest absolute error of the
   float weight functions, measured on the host over 2^16 t in [0, 1)
   against double and doubled (the device evaluates the same operations,
   but may contract the B-spline recursion's products into other fused
   multiply-adds than the host compiler), and 2^-33 per term for the
   fixed-point rungs' rounding to 2^-32 e, and for tile-binned's sum on the
   tensor cores its TF32 halves and truncated sums (tests/gpu.h's
   gpu_chargemap_weight_error and gpu_chargemap_bound). */
#include <cuda_runtime.h>
#include <stddef.h>

/* Device memory through a gate a test can narrow: with allocation_limit
   set, every allocation larger fails as out of memory (a GPU too small
   for a handle's buffers); 0 lets all through. */
static size_t allocation_limit = 0;
static cudaError_t gated_malloc(void **ptr, size_t size, cudaStream_t stream) {
    if (allocation_limit > 0 && size > allocation_limit) return cudaErrorMemoryAllocation;
    return cudaMallocAsync(ptr, size, stream);
}
#define ELEC_CUDA_MALLOC(ptr, size, stream) gated_malloc((ptr), (size), (stream))
#define ELEC_CUDA_FREE(ptr, stream) cudaFreeAsync((ptr), (stream))

#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "elec_cuda.cuh"
#include "tests/test.h"
#include "tests/systems.h"
#include "tests/gpu.h"

#include <algorithm>
#include <vector>

#define CUDA_OK(call) EXPECT((call) == cudaSuccess, "%s failed", #call)

static elec_lattice lattice_of(const int dims[3], double spacing, double origin) {
    elec_lattice l;
    for (int axis = 0; axis < 3; axis++) {
        l.dims[axis] = dims[axis];
        l.spacing[axis] = spacing;
        l.origin[axis] = origin;
    }
    return l;
}

/* Positions moved to the nearest x with x / h a float (h a power of two:
   x itself is then a float too). */
static void snap(test_system *s, double h) {
    for (size_t i = 0; i < 3 * s->count; i++) s->xyz[i] = (double)(float)(s->xyz[i] / h) * h;
}

/* A GPU map against the reference; returns the worst |f - d| / bound. */
static double check(const char *what, const float *got, const double *want, const double *abs_sum,
                    const int *terms, size_t points, int order, double weight_err,
                    double max_q, int sums) {
    double worst = 0.0;
    size_t at = 0;
    for (size_t g = 0; g < points; g++) {
        const double bound = gpu_chargemap_bound(terms[g], abs_sum[g], order, weight_err, max_q,
                                                 sums);
        const double r = fabs((double)got[g] - want[g]) / bound;
        if (!(r <= worst)) {
            worst = r;
            at = g;
        }
    }
    EXPECT(worst <= 1.0, "%s: point %zu: %.9g vs %.17g (%.2f of the bound, %d terms)", what, at,
           (double)got[at], want[at], worst, terms[at]);
    return worst;
}

typedef struct reference {
    elec_lattice lattice;
    size_t points;
    double *want, *abs_sum;
    int *terms;
} reference;

static int reference_of(const elec_atoms *atoms, const elec_lattice *l,
                        const elec_chargemap_params *p, reference *r) {
    elec_error err;
    r->lattice = *l;
    r->points = elec_lattice_size(l);
    r->want = (double *)malloc(r->points * sizeof(double));
    r->abs_sum = (double *)malloc(r->points * sizeof(double));
    r->terms = (int *)malloc(r->points * sizeof(int));
    elec_status s = elec_cpu_chargemap_double(atoms, l, p, r->want, r->abs_sum, r->terms, &err);
    EXPECT(s == ELEC_OK, "reference: %s", err.message);
    return s == ELEC_OK;
}

static void reference_free(reference *r) {
    free(r->want);
    free(r->abs_sum);
    free(r->terms);
}

/* The rungs that add integers in units of 2^-32 e. */
static bool is_fixed_point(int v) {
    return v == ELEC_CHARGEMAP_PC_FIXED_POINT || v == ELEC_CHARGEMAP_TILE_FUSED_FIXED;
}

/* How a handle's rung adds its terms (gpu.h's GPU_SUMS_*, for the
   bound): in fixed point, on the tensor cores (as describe says), or in
   float. */
static int sums_of_handle(const elec_cuda_chargemap_handle *h) {
    elec_cuda_chargemap_info info;
    elec_error err;
    if (!h || elec_cuda_chargemap_describe(h, &info, &err) != ELEC_OK) return GPU_SUMS_FLOAT;
    if (is_fixed_point(info.variant)) return GPU_SUMS_FIXED_POINT;
    return info.band_tensor ? GPU_SUMS_TENSOR : GPU_SUMS_FLOAT;
}

/* The same for the handle that elec_cuda_chargemap makes for (l, n, p). */
static int sums_of(const elec_lattice *l, size_t n, const elec_chargemap_params *p) {
    elec_cuda_chargemap_handle *h = NULL;
    elec_error err;
    if (elec_cuda_chargemap_create(l, n, p, -1, &h, &err) != ELEC_OK) return GPU_SUMS_FLOAT;
    const int sums = sums_of_handle(h);
    elec_cuda_chargemap_destroy(h);
    return sums;
}

/* The system as float4 (x, y, z, q), as the device API takes it (malloc'd). */
static float4 *xyzq_on_host(const test_system *s) {
    float4 *host = (float4 *)malloc(s->count * sizeof(float4));
    for (size_t i = 0; i < s->count; i++)
        host[i] = make_float4((float)s->xyz[3 * i], (float)s->xyz[3 * i + 1],
                              (float)s->xyz[3 * i + 2], (float)s->charge[i]);
    return host;
}

static double max_charge(const test_system *s) {
    double m = 0.0;
    for (size_t i = 0; i < s->count; i++) m = std::max(m, fabs(s->charge[i]));
    return m;
}

/* Every rung, Skeel and B-spline order 4, a map and a periodic grid whose
   point counts are no multiple of any tile; then every order the rungs
   beyond the seed take. */
TEST(every_rung_matches_the_double_reference) {
    REQUIRE_GPU();
    test_system sys = test_system_random(3000, 15.0, 31);
    /* atoms at 5 to 20 A: grid coordinates 10 to 40, inside the map for
       every order; the period (30 points, 15 A) wraps them */
    const int map_dims[3] = {51, 47, 49}, grid_dims[3] = {30, 30, 30};
    elec_atoms atoms;
    double worst_all = 0.0;
    for (size_t i = 0; i < 3 * sys.count; i++) sys.xyz[i] += 5.0;
    snap(&sys, 0.5);
    atoms = test_system_atoms(&sys);
    for (int periodic = 0; periodic < 2; periodic++)
        for (int basis = 0; basis < 2; basis++) {
            static const int skeel_orders[4] = {4, 6, 8, 10}, bspline_orders[5] = {4, 5, 6, 7, 8};
            const int *orders = basis ? bspline_orders : skeel_orders;
            const int order_count = basis ? 5 : 4;
            for (int k = 0; k < order_count; k++) {
                elec_chargemap_params p = {0};
                elec_lattice l = lattice_of(periodic ? grid_dims : map_dims, 0.5, 0.0);
                reference r;
                p.basis = (elec_chargemap_basis)basis;
                p.order = orders[k];
                p.periodic = periodic;
                if (!reference_of(&atoms, &l, &p, &r)) continue;
                const double e_w = gpu_chargemap_weight_error(p.basis, p.order);
                float *got = (float *)malloc(r.points * sizeof(float));
                for (int v = 1; v < ELEC_CHARGEMAP_VARIANT_COUNT; v++) {
                    elec_error err;
                    char what[128];
                    p.variant = (elec_chargemap_variant)v;
                    snprintf(what, sizeof what, "%s, %s order %d, %s",
                             elec_chargemap_variant_name(p.variant), basis ? "B-spline" : "Skeel",
                             p.order, periodic ? "periodic" : "map");
                    const bool seed_rung = v >= ELEC_CHARGEMAP_PC_BINNED &&
                                           v <= ELEC_CHARGEMAP_GC_REDUCED_READS;
                    elec_status s = elec_cuda_chargemap(&atoms, &l, &p, got, &err);
                    if (seed_rung && p.order != 4) {
                        EXPECT(s == ELEC_ERR_UNSUPPORTED, "%s: accepted (%s)", what,
                               elec_status_string(s));
                        continue;
                    }
                    EXPECT(s == ELEC_OK, "%s: %s", what, err.message);
                    if (s != ELEC_OK) continue;
                    worst_all = std::max(
                        worst_all, check(what, got, r.want, r.abs_sum, r.terms, r.points, p.order,
                                         e_w, max_charge(&sys),
                                         sums_of(&l, atoms.count, &p)));
                }
                free(got);
                reference_free(&r);
            }
        }
    printf("     worst of every rung: %.3f of its bound\n", worst_all);
    test_system_free(&sys);
}

/* Atoms exactly on points, Skeel's cubic: t = 0 gives the weights 0, 1, 0,
   0 exactly (the pieces' constant terms), so every rung puts each whole
   charge on its point and exactly nothing elsewhere. */
TEST(atoms_on_points_put_their_whole_charge_there) {
    REQUIRE_GPU();
    const int dims[3] = {24, 20, 22};
    elec_lattice l = lattice_of(dims, 0.5, 0.0);
    const size_t points = elec_lattice_size(&l);
    /* points (4, 6, 8), (15, 2, 18), (20, 17, 1): stencils inside the map */
    double xyz[9] = {2.0, 3.0, 4.0, 7.5, 1.0, 9.0, 10.0, 8.5, 0.5}, q[3] = {0.75, -0.5, 1.25};
    elec_atoms atoms = elec_atoms_from_xyz(3, xyz, q, NULL);
    float *got = (float *)malloc(points * sizeof(float));
    for (int periodic = 0; periodic < 2; periodic++)
        for (int v = 1; v < ELEC_CHARGEMAP_VARIANT_COUNT; v++) {
            elec_chargemap_params p = {0};
            elec_error err;
            size_t wrong = 0;
            p.periodic = periodic;
            p.variant = (elec_chargemap_variant)v;
            EXPECT(elec_cuda_chargemap(&atoms, &l, &p, got, &err) == ELEC_OK, "%s: %s",
                   elec_chargemap_variant_name(p.variant), err.message);
            for (size_t g = 0; g < points; g++) {
                double want = 0.0;
                for (int a = 0; a < 3; a++) {
                    const size_t at = (size_t)(xyz[3 * a] / 0.5) +
                                      24 * ((size_t)(xyz[3 * a + 1] / 0.5) +
                                            20 * (size_t)(xyz[3 * a + 2] / 0.5));
                    if (g == at) want = q[a];
                }
                wrong += got[g] != (float)want;
            }
            EXPECT(wrong == 0, "%s, %s: %zu points differ from the charges on them",
                   elec_chargemap_variant_name(p.variant), periodic ? "periodic" : "map", wrong);
        }
    free(got);
}

/* The total: sum_g rho_g (in double) is sum q, to the points' bounds
   summed; atoms of charges in [0.1, 1] so that the total is large. */
TEST(total_charge_is_kept) {
    REQUIRE_GPU();
    test_system sys = test_system_random(20000, 32.0, 37);
    const int dims[3] = {64, 64, 64};
    elec_lattice l = lattice_of(dims, 0.5, 0.0);
    double want = 0.0;
    snap(&sys, 0.5);
    for (size_t i = 0; i < sys.count; i++) {
        sys.charge[i] = 0.1 + 0.9 * fabs(sys.charge[i]);
        want += sys.charge[i];
    }
    elec_atoms atoms = test_system_atoms(&sys);
    for (int basis = 0; basis < 2; basis++) {
        elec_chargemap_params p = {0};
        reference r;
        p.basis = (elec_chargemap_basis)basis;
        p.periodic = 1;
        if (!reference_of(&atoms, &l, &p, &r)) continue;
        const double e_w = gpu_chargemap_weight_error(p.basis, 4);
        float *got = (float *)malloc(r.points * sizeof(float));
        for (int v = 1; v < ELEC_CHARGEMAP_VARIANT_COUNT; v++) {
            elec_error err;
            double total = 0.0, bound = 0.0;
            p.variant = (elec_chargemap_variant)v;
            EXPECT(elec_cuda_chargemap(&atoms, &l, &p, got, &err) == ELEC_OK, "%s: %s",
                   elec_chargemap_variant_name(p.variant), err.message);
            for (size_t g = 0; g < r.points; g++) {
                total += got[g];
                bound += (r.terms[g] + 8.0) * ldexp(1.0, -24) * r.abs_sum[g] +
                         r.terms[g] * (3.0 * e_w + ldexp(1.0, -33));
            }
            EXPECT(fabs(total - want) <= bound, "%s, basis %d: total %.9g, want %.9g (bound %.2e)",
                   elec_chargemap_variant_name(p.variant), basis, total, want, bound);
        }
        free(got);
        reference_free(&r);
    }
    test_system_free(&sys);
}

/* One slot a bin and 40 atoms in one cell (and a random rest): the seed's
   rungs put what does not fit on the overflow list, map it by atomics,
   and count it as the host predicts from the same grid coordinates. */
TEST(overfull_bins_overflow_and_are_counted) {
    REQUIRE_GPU();
    test_system sys = test_system_random(600, 12.0, 41);
    const int dims[3] = {24, 24, 24};
    elec_lattice l = lattice_of(dims, 0.5, 0.0);
    for (size_t i = 0; i < 40; i++) /* 40 atoms in the cell [5.0, 5.5)^3 */
        for (int axis = 0; axis < 3; axis++) sys.xyz[3 * i + axis] = 5.0 + 0.0123 * (double)i;
    snap(&sys, 0.5);
    elec_atoms atoms = test_system_atoms(&sys);
    elec_chargemap_params p = {0};
    reference r;
    p.periodic = 1;
    p.bin_capacity = 1;
    if (!reference_of(&atoms, &l, &p, &r)) return;
    /* the host's count: atoms past the first of each cell */
    size_t predicted = 0;
    {
        int *count = (int *)calloc(r.points, sizeof(int));
        for (size_t i = 0; i < sys.count; i++) {
            int cell[3];
            for (int axis = 0; axis < 3; axis++) cell[axis] = (int)(float)(sys.xyz[3 * i + axis] / 0.5);
            if (count[cell[0] + 24 * (cell[1] + 24 * cell[2])]++ >= 1) predicted++;
        }
        free(count);
    }
    float *got = (float *)malloc(r.points * sizeof(float));
    const double e_w = gpu_chargemap_weight_error(ELEC_CHARGEMAP_SKEEL, 4);
    for (int v = ELEC_CHARGEMAP_PC_BINNED; v <= ELEC_CHARGEMAP_GC_REDUCED_READS; v++) {
        elec_stage_times times;
        size_t overflow = 0;
        elec_error err;
        memset(&times, 0, sizeof times);
        p.variant = (elec_chargemap_variant)v;
        EXPECT(elec_cuda_chargemap_timed(&atoms, &l, &p, got, &times, &overflow, &err) == ELEC_OK,
               "%s: %s", elec_chargemap_variant_name(p.variant), err.message);
        check(elec_chargemap_variant_name(p.variant), got, r.want, r.abs_sum, r.terms, r.points, 4,
              e_w, max_charge(&sys), 0);
        EXPECT(overflow == predicted, "%s: %zu atoms overflowed, the host counts %zu",
               elec_chargemap_variant_name(p.variant), overflow, predicted);
        EXPECT(times.count == 4 && times.total > 0.0 && elec_stage_seconds(&times, "map") > 0.0 &&
                   elec_stage_seconds(&times, "bin") > 0.0,
               "%s: stage times %g %g %g", elec_chargemap_variant_name(p.variant), times.total,
               elec_stage_seconds(&times, "map"), elec_stage_seconds(&times, "bin"));
    }
    free(got);
    reference_free(&r);
    test_system_free(&sys);
}

/* A map refuses an atom whose stencil leaves it: the host API by name,
   before any work; the device API leaves it out and finish says so. */
TEST(atoms_outside_a_map_are_refused) {
    REQUIRE_GPU();
    const int dims[3] = {16, 16, 16};
    elec_lattice l = lattice_of(dims, 0.5, 0.0);
    float host[8] = {4.0f, 4.0f, 4.0f, 1.0f, 4.0f, 0.25f, 4.0f, -1.0f}; /* y = 0.25: cell 0 */
    double xyz[6] = {4.0, 4.0, 4.0, 4.0, 0.25, 4.0}, q[2] = {1.0, -1.0};
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL);
    float grid[16 * 16 * 16];
    for (int v = 1; v < ELEC_CHARGEMAP_VARIANT_COUNT; v++) {
        elec_chargemap_params p = {0};
        elec_cuda_chargemap_handle *h = NULL;
        elec_error err;
        float4 *d_xyzq = NULL;
        float *d_grid = NULL;
        p.variant = (elec_chargemap_variant)v;
        EXPECT(elec_cuda_chargemap(&atoms, &l, &p, grid, &err) == ELEC_ERR_INVALID_ARG &&
                   strstr(err.message, "atom 1"), "%s host API: %s",
               elec_chargemap_variant_name(p.variant), err.message);
        EXPECT(elec_cuda_chargemap_create(&l, 2, &p, -1, &h, &err) == ELEC_OK, "%s: %s",
               elec_chargemap_variant_name(p.variant), err.message);
        if (!h) continue;
        CUDA_OK(cudaMalloc((void **)&d_xyzq, sizeof host));
        CUDA_OK(cudaMalloc((void **)&d_grid, sizeof grid));
        CUDA_OK(cudaMemcpy(d_xyzq, host, sizeof host, cudaMemcpyHostToDevice));
        EXPECT(elec_cuda_chargemap_compute(h, d_xyzq, 2, d_grid, 0, &err) == ELEC_OK, "%s",
               err.message);
        EXPECT(elec_cuda_chargemap_finish(h, NULL, 0, &err) == ELEC_ERR_INVALID_ARG &&
                   strstr(err.message, "1 atom"), "%s device API: %s",
               elec_chargemap_variant_name(p.variant), err.message);
        /* prepared once and mapped twice: each map's finish refuses, and
           counts the one atom once (not once more a map) */
        for (int map = 0; map < 2; map++) {
            EXPECT((map > 0 || elec_cuda_chargemap_prepare(h, d_xyzq, 2, 0, &err) == ELEC_OK) &&
                       elec_cuda_chargemap_map(h, d_grid, 0, &err) == ELEC_OK,
                   "%s: %s", elec_chargemap_variant_name(p.variant), err.message);
            EXPECT(elec_cuda_chargemap_finish(h, NULL, 0, &err) == ELEC_ERR_INVALID_ARG &&
                       strncmp(err.message, "1 atom", 6) == 0,
                   "%s, map %d of one prepare: %s", elec_chargemap_variant_name(p.variant),
                   map + 1, err.message);
        }
        /* the next call, with the inside atom alone, is clean */
        EXPECT(elec_cuda_chargemap_compute(h, d_xyzq, 1, d_grid, 0, &err) == ELEC_OK, "%s",
               err.message);
        EXPECT(elec_cuda_chargemap_finish(h, NULL, 0, &err) == ELEC_OK, "%s: %s",
               elec_chargemap_variant_name(p.variant), err.message);
        cudaFree(d_xyzq);
        cudaFree(d_grid);
        elec_cuda_chargemap_destroy(h);
    }
}

/* gc-shared's blocks take 2 to 8 points along y and z, and CUDA allows
   65535 blocks there: a lattice of 4 x 300,000 x 4 points is refused by
   name when the handle is made (it went on to a launch's "invalid
   configuration"); pc-lanes takes it. */
TEST(gc_shared_refuses_lattices_past_cudas_grid) {
    REQUIRE_GPU();
    const int dims[3] = {4, 300000, 4};
    elec_lattice l = lattice_of(dims, 0.5, 0.0);
    elec_chargemap_params p = {0};
    elec_cuda_chargemap_handle *h = NULL;
    elec_error err;
    p.variant = ELEC_CHARGEMAP_GC_SHARED;
    EXPECT(elec_cuda_chargemap_create(&l, 16, &p, -1, &h, &err) == ELEC_ERR_UNSUPPORTED &&
               h == NULL && strstr(err.message, "65535"),
           "gc-shared: %s", err.message);
    elec_cuda_chargemap_destroy(h);
    h = NULL;
    p.variant = ELEC_CHARGEMAP_PC_LANES;
    EXPECT(elec_cuda_chargemap_create(&l, 16, &p, -1, &h, &err) == ELEC_OK, "pc-lanes: %s",
           err.message);
    elec_cuda_chargemap_destroy(h);
}

TEST(charges_past_floats_range_are_refused) {
    REQUIRE_GPU();
    /* Charges of 1e308 e (test_huge_charges) are inf in float: the host
       API of every float rung fails, naming the charge map, where it once
       came back ELEC_OK with a grid of inf; the fixed-point rungs refuse
       such charges before any work, as they always did. */
    elec_atoms atoms = test_huge_charges();
    elec_lattice l = test_lattice_cube(6, 0.0, 1.0);
    float grid[216];
    for (int v = 0; v < ELEC_CHARGEMAP_VARIANT_COUNT; v++) {
        elec_chargemap_params p = {0};
        elec_error err;
        p.variant = (elec_chargemap_variant)v;
        const int fixed = p.variant == ELEC_CHARGEMAP_PC_FIXED_POINT ||
                          p.variant == ELEC_CHARGEMAP_TILE_FUSED_FIXED;
        elec_status s = elec_cuda_chargemap(&atoms, &l, &p, grid, &err);
        EXPECT(fixed ? s == ELEC_ERR_INVALID_ARG
                     : test_refused_past_range(s, &err, "GPU charge map", "float"),
               "%s: status %d, %s", elec_chargemap_variant_name(p.variant), (int)s,
               err.message);
    }
}

/* A periodic grid maps atoms and their images alike (the host wraps in
   double; periods of 16 A keep the wrapped positions exact). */
TEST(periodic_images_map_alike) {
    REQUIRE_GPU();
    test_system sys = test_system_random(2000, 16.0, 43);
    const int dims[3] = {32, 32, 32};
    elec_lattice l = lattice_of(dims, 0.5, 0.0);
    snap(&sys, 0.5);
    elec_atoms atoms = test_system_atoms(&sys);
    test_system moved = test_system_random(2000, 16.0, 43);
    for (size_t i = 0; i < 3 * sys.count; i++)
        moved.xyz[i] = sys.xyz[i] + 16.0 * (double)((int)(i % 5) - 2);
    elec_atoms images = test_system_atoms(&moved);
    elec_chargemap_params p = {0};
    reference r;
    p.periodic = 1;
    if (!reference_of(&atoms, &l, &p, &r)) return;
    float *got = (float *)malloc(r.points * sizeof(float));
    const double e_w = gpu_chargemap_weight_error(ELEC_CHARGEMAP_SKEEL, 4);
    for (int v = 1; v < ELEC_CHARGEMAP_VARIANT_COUNT; v++) {
        elec_error err;
        p.variant = (elec_chargemap_variant)v;
        EXPECT(elec_cuda_chargemap(&images, &l, &p, got, &err) == ELEC_OK, "%s: %s",
               elec_chargemap_variant_name(p.variant), err.message);
        check(elec_chargemap_variant_name(p.variant), got, r.want, r.abs_sum, r.terms, r.points,
              4, e_w, max_charge(&sys), sums_of(&l, images.count, &p));
    }
    free(got);
    reference_free(&r);
    test_system_free(&sys);
    test_system_free(&moved);
}

/* The fixed-point rungs add integers: the same grid, bit for bit, for the
   atoms in another order and for every repetition; and no atoms give a
   zero grid on every rung. */
TEST(fixed_point_is_bit_identical_whatever_the_order) {
    REQUIRE_GPU();
    test_system sys = test_system_random(5000, 20.0, 47);
    const int dims[3] = {40, 40, 40};
    elec_lattice l = lattice_of(dims, 0.5, 0.0);
    const size_t points = elec_lattice_size(&l);
    float *first = (float *)malloc(points * sizeof(float));
    float *again = (float *)malloc(points * sizeof(float));
    elec_chargemap_params p = {0};
    elec_error err;
    test_rng rng = test_rng_seeded(5);
    snap(&sys, 0.5);
    elec_atoms atoms = test_system_atoms(&sys);
    p.periodic = 1;
    for (int k = 0; k < 4; k++) { /* both fixed-point rungs, both bases */
        const int basis = k % 2;
        p.variant = k / 2 ? ELEC_CHARGEMAP_TILE_FUSED_FIXED : ELEC_CHARGEMAP_PC_FIXED_POINT;
        p.basis = (elec_chargemap_basis)basis;
        EXPECT(elec_cuda_chargemap(&atoms, &l, &p, first, &err) == ELEC_OK, "%s", err.message);
        for (int run = 0; run < 3; run++) {
            for (size_t i = sys.count - 1; i > 0; i--) { /* Fisher-Yates */
                size_t j = (size_t)(test_uniform(&rng) * (double)(i + 1));
                for (int axis = 0; axis < 3; axis++)
                    std::swap(sys.xyz[3 * i + axis], sys.xyz[3 * j + axis]);
                std::swap(sys.charge[i], sys.charge[j]);
            }
            EXPECT(elec_cuda_chargemap(&atoms, &l, &p, again, &err) == ELEC_OK, "%s",
                   err.message);
            EXPECT(memcmp(first, again, points * sizeof(float)) == 0,
                   "%s, basis %d, shuffle %d: the fixed-point grid changed",
                   elec_chargemap_variant_name(p.variant), basis, run);
        }
    }
    {
        elec_atoms none = elec_atoms_from_xyz(0, NULL, NULL, NULL);
        for (int v = 1; v < ELEC_CHARGEMAP_VARIANT_COUNT; v++) {
            size_t nonzero = 0;
            p.variant = (elec_chargemap_variant)v;
            p.basis = ELEC_CHARGEMAP_SKEEL;
            for (size_t g = 0; g < points; g++) again[g] = 1.0f;
            EXPECT(elec_cuda_chargemap(&none, &l, &p, again, &err) == ELEC_OK, "%s: %s",
                   elec_chargemap_variant_name(p.variant), err.message);
            for (size_t g = 0; g < points; g++) nonzero += again[g] != 0.0f;
            EXPECT(nonzero == 0, "%s: %zu nonzero points without atoms",
                   elec_chargemap_variant_name(p.variant), nonzero);
        }
    }
    free(first);
    free(again);
    test_system_free(&sys);
}

/* TILE_FUSED_FIXED sums a tile as two 32-bit halves where the tile's
   range allows, else as 64-bit integers: the same integers either way.
   Pairs of +20000 and -20000 e at one place (on a 2 A lattice: every tile
   holds some, so every tile takes the 64-bit sums) add exact zeros and
   must leave the grid's bits as the halves made them, both bases.  And a
   tile of more copies than a window has its range read from every window
   before its first term: 1500 uncharged atoms crowd a 1 A cube and,
   last (in the last window), 10^5 e sits on a point (Skeel: its whole
   charge there), which 32-bit halves would overflow. */
TEST(fixed_point_tiles_give_the_same_bits_in_halves_and_whole) {
    REQUIRE_GPU();
    test_system sys = test_system_random(3000, 20.0, 71);
    const int dims[3] = {40, 40, 40};
    const elec_lattice l = lattice_of(dims, 0.5, 0.0);
    const size_t points = elec_lattice_size(&l), pairs = 1000, crowd = 1500;
    float *plain = (float *)calloc(points, sizeof(float));
    float *padded = (float *)calloc(points, sizeof(float));
    test_system more = sys__alloc(sys.count + 2 * pairs);
    test_system crowded = sys__alloc(crowd + 1);
    test_rng rng = test_rng_seeded(9);
    elec_chargemap_params p = {0};
    elec_error err;
    snap(&sys, 0.5);
    memcpy(more.xyz, sys.xyz, 3 * sys.count * sizeof(double));
    memcpy(more.charge, sys.charge, sys.count * sizeof(double));
    for (size_t k = 0; k < pairs; k++) { /* at (1 + 2i, 1 + 2j, 1 + 2k) A */
        const size_t at = sys.count + 2 * k;
        const size_t where[3] = {k % 10, k / 10 % 10, k / 100};
        for (int axis = 0; axis < 3; axis++)
            more.xyz[3 * at + axis] = more.xyz[3 * (at + 1) + axis] = 1.0 + 2.0 * where[axis];
        more.charge[at] = 20000.0;
        more.charge[at + 1] = -20000.0;
    }
    p.periodic = 1;
    p.variant = ELEC_CHARGEMAP_TILE_FUSED_FIXED;
    for (int basis = 0; basis < 2; basis++) {
        const elec_atoms atoms = test_system_atoms(&sys), all = test_system_atoms(&more);
        p.basis = (elec_chargemap_basis)basis;
        EXPECT(elec_cuda_chargemap(&atoms, &l, &p, plain, &err) == ELEC_OK, "%s", err.message);
        EXPECT(elec_cuda_chargemap(&all, &l, &p, padded, &err) == ELEC_OK, "%s", err.message);
        EXPECT(memcmp(plain, padded, points * sizeof(float)) == 0,
               "basis %d: +-20000 e pairs in every tile changed the grid's bits", basis);
    }
    {
        const size_t at = 15 + 40 * (15 + 40 * 15); /* the point at 7.5 A */
        size_t wrong = 0;
        for (size_t i = 0; i < crowd; i++)
            for (int axis = 0; axis < 3; axis++)
                crowded.xyz[3 * i + axis] = 7.25 + test_uniform(&rng);
        for (int axis = 0; axis < 3; axis++) crowded.xyz[3 * crowd + axis] = 7.5;
        crowded.charge[crowd] = 1e5;
        const elec_atoms atoms = test_system_atoms(&crowded);
        p.basis = ELEC_CHARGEMAP_SKEEL;
        EXPECT(elec_cuda_chargemap(&atoms, &l, &p, plain, &err) == ELEC_OK, "%s", err.message);
        for (size_t g = 0; g < points; g++) wrong += plain[g] != (g == at ? 100000.0f : 0.0f);
        EXPECT(wrong == 0, "10^5 e on a point in a crowded tile: %zu points wrong (at it: %.9g)",
               wrong, (double)plain[at]);
    }
    free(plain);
    free(padded);
    test_system_free(&sys);
    test_system_free(&more);
    test_system_free(&crowded);
}

/* The device-pointer API (positions in A on the device; the kernels make
   the grid coordinates: exact at h = 0.5, origin 0 and a 16 A period of
   32 points), repeated, and replayed from a CUDA graph over a poisoned grid:
   within the float bound of the reference every time. */
TEST(device_api_repeats_and_replays_from_a_graph) {
    REQUIRE_GPU();
    test_system sys = test_system_random(4000, 16.0, 53);
    const int dims[3] = {32, 32, 32};
    elec_lattice l = lattice_of(dims, 0.5, 0.0);
    for (size_t i = 0; i < 3 * sys.count; i++) sys.xyz[i] += 2.0; /* 2 to 18 A */
    snap(&sys, 0.5);
    elec_atoms atoms = test_system_atoms(&sys);
    const size_t n = sys.count;
    float4 *host = (float4 *)malloc(n * sizeof(float4));
    for (size_t i = 0; i < n; i++)
        host[i] = make_float4((float)sys.xyz[3 * i], (float)sys.xyz[3 * i + 1],
                              (float)sys.xyz[3 * i + 2], (float)sys.charge[i]);
    for (int periodic = 0; periodic < 2; periodic++) {
        elec_chargemap_params p = {0};
        reference r;
        elec_lattice ll = l;
        if (!periodic) /* a map around the atoms: 0 to 19.5 A */
            for (int axis = 0; axis < 3; axis++) ll.dims[axis] = 40;
        p.periodic = periodic;
        if (!reference_of(&atoms, &ll, &p, &r)) continue;
        const double e_w = gpu_chargemap_weight_error(ELEC_CHARGEMAP_SKEEL, 4);
        float *got = (float *)malloc(r.points * sizeof(float));
        for (int v = 1; v < ELEC_CHARGEMAP_VARIANT_COUNT; v++) {
            elec_cuda_chargemap_handle *h = NULL;
            elec_error err;
            float4 *d_xyzq = NULL;
            float *d_grid = NULL;
            cudaStream_t stream = NULL;
            cudaGraph_t graph = NULL;
            cudaGraphExec_t exec = NULL;
            char what[96];
            p.variant = (elec_chargemap_variant)v;
            snprintf(what, sizeof what, "%s, %s", elec_chargemap_variant_name(p.variant),
                     periodic ? "periodic" : "map");
            EXPECT(elec_cuda_chargemap_create(&ll, n + 100, &p, -1, &h, &err) == ELEC_OK,
                   "%s: %s", what, err.message);
            if (!h) continue;
            CUDA_OK(cudaStreamCreateWithFlags(&stream, GPU_TEST_STREAM_FLAGS));
            CUDA_OK(cudaMalloc((void **)&d_xyzq, n * sizeof(float4)));
            CUDA_OK(cudaMalloc((void **)&d_grid, r.points * sizeof(float)));
            CUDA_OK(cudaMemcpy(d_xyzq, host, n * sizeof(float4), cudaMemcpyHostToDevice));
            for (int run = 0; run < 3; run++) {
                EXPECT(elec_cuda_chargemap_compute(h, d_xyzq, n, d_grid, stream, &err) ==
                           ELEC_OK, "%s run %d: %s", what, run, err.message);
                EXPECT(elec_cuda_chargemap_finish(h, NULL, stream, &err) == ELEC_OK, "%s: %s",
                       what, err.message);
                CUDA_OK(cudaMemcpy(got, d_grid, r.points * sizeof(float),
                                   cudaMemcpyDeviceToHost));
                check(what, got, r.want, r.abs_sum, r.terms, r.points, 4, e_w, max_charge(&sys),
                      sums_of_handle(h));
            }
            CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
            EXPECT(elec_cuda_chargemap_compute(h, d_xyzq, n, d_grid, stream, &err) == ELEC_OK,
                   "%s captured: %s", what, err.message);
            CUDA_OK(cudaStreamEndCapture(stream, &graph));
            if (graph) CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
            EXPECT(exec != NULL, "%s: the graph was not instantiated", what);
            CUDA_OK(cudaMemset(d_grid, 0xff, r.points * sizeof(float))); /* NaN */
            for (int launch = 0; launch < 2 && exec; launch++)
                CUDA_OK(cudaGraphLaunch(exec, stream));
            CUDA_OK(cudaStreamSynchronize(stream));
            CUDA_OK(cudaMemcpy(got, d_grid, r.points * sizeof(float), cudaMemcpyDeviceToHost));
            if (exec)
                check(what, got, r.want, r.abs_sum, r.terms, r.points, 4, e_w, max_charge(&sys),
                      sums_of_handle(h));
            EXPECT(elec_cuda_chargemap_compute(h, d_xyzq, n + 101, d_grid, stream, &err) ==
                       ELEC_ERR_INVALID_ARG, "%s: more atoms than the handle accepted", what);
            if (exec) cudaGraphExecDestroy(exec);
            if (graph) cudaGraphDestroy(graph);
            cudaStreamDestroy(stream);
            cudaFree(d_xyzq);
            cudaFree(d_grid);
            elec_cuda_chargemap_destroy(h);
        }
        free(got);
        reference_free(&r);
    }
    free(host);
    test_system_free(&sys);
}

/* A kernel that lets the kernels after it start at once (PDL's early
   release, sm_90 on) and writes the atoms only after spinning for `spin`
   cycles: a stage launched with PDL that read the atoms before waiting
   for it would read the ones there before. */
__global__ void write_atoms_late(float4 *to, const float4 *from, int n, long long spin) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    const long long start = clock64();
    while (clock64() - start < spin) {
    }
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
        to[i] = from[i];
}

/* Every rung maps the atoms that the kernel just before it in the stream
   wrote, though that kernel releases its dependents early and writes
   late: the buffer first holds the atoms with their charges negated, so
   that a read before the write gives the negated map. */
TEST(the_atoms_a_kernel_writes_just_before_are_the_ones_mapped) {
    REQUIRE_GPU();
    test_system sys = test_system_random(4000, 16.0, 59);
    const int dims[3] = {32, 32, 32};
    const elec_lattice l = lattice_of(dims, 0.5, 0.0);
    snap(&sys, 0.5);
    const elec_atoms atoms = test_system_atoms(&sys);
    const int n = (int)sys.count;
    std::vector<float4> host(n), stale(n);
    for (int i = 0; i < n; i++) {
        host[i] = make_float4((float)sys.xyz[3 * i], (float)sys.xyz[3 * i + 1],
                              (float)sys.xyz[3 * i + 2], (float)sys.charge[i]);
        stale[i] = host[i];
        stale[i].w = -host[i].w;
    }
    elec_chargemap_params p = {0};
    p.periodic = 1;
    reference r;
    if (reference_of(&atoms, &l, &p, &r)) {
        const double e_w = gpu_chargemap_weight_error(ELEC_CHARGEMAP_SKEEL, 4);
        std::vector<float> got(r.points);
        float4 *d_xyzq = NULL, *d_fresh = NULL;
        float *d_grid = NULL;
        cudaStream_t stream = NULL;
        CUDA_OK(cudaStreamCreateWithFlags(&stream, GPU_TEST_STREAM_FLAGS));
        CUDA_OK(cudaMalloc((void **)&d_xyzq, n * sizeof(float4)));
        CUDA_OK(cudaMalloc((void **)&d_fresh, n * sizeof(float4)));
        CUDA_OK(cudaMalloc((void **)&d_grid, r.points * sizeof(float)));
        CUDA_OK(cudaMemcpy(d_fresh, host.data(), n * sizeof(float4), cudaMemcpyHostToDevice));
        for (int v = 1; v < ELEC_CHARGEMAP_VARIANT_COUNT; v++) {
            elec_cuda_chargemap_handle *h = NULL;
            elec_error err;
            p.variant = (elec_chargemap_variant)v;
            const char *what = elec_chargemap_variant_name(p.variant);
            EXPECT(elec_cuda_chargemap_create(&l, n, &p, -1, &h, &err) == ELEC_OK, "%s: %s",
                   what, err.message);
            if (!h) continue;
            /* about a millisecond at 2 GHz: far past the host's time to
               enqueue the map, so that the map's kernels are waiting */
            const long long spin = 2000000;
            for (int run = 0; run < 2; run++) {
                CUDA_OK(cudaMemcpy(d_xyzq, stale.data(), n * sizeof(float4),
                                   cudaMemcpyHostToDevice));
                write_atoms_late<<<4, 256, 0, stream>>>(d_xyzq, d_fresh, n, spin);
                CUDA_OK(cudaGetLastError());
                EXPECT(elec_cuda_chargemap_compute(h, d_xyzq, n, d_grid, stream, &err) ==
                           ELEC_OK, "%s run %d: %s", what, run, err.message);
                EXPECT(elec_cuda_chargemap_finish(h, NULL, stream, &err) == ELEC_OK, "%s: %s",
                       what, err.message);
                CUDA_OK(cudaMemcpy(got.data(), d_grid, r.points * sizeof(float),
                                   cudaMemcpyDeviceToHost));
                check(what, got.data(), r.want, r.abs_sum, r.terms, r.points, 4, e_w,
                      max_charge(&sys), sums_of_handle(h));
            }
            elec_cuda_chargemap_destroy(h);
        }
        cudaStreamDestroy(stream);
        cudaFree(d_xyzq);
        cudaFree(d_fresh);
        cudaFree(d_grid);
        reference_free(&r);
    }
    test_system_free(&sys);
}

/* The compute in its two public stages: prepare then map gives the grid
   compute gives, bit for bit for the rungs whose sums have one order (the
   fixed-point ones, whatever the atom order) and within the float bound
   for the others; the sums of q and q^2 come out; describe reports the
   rung's layout, and the default's for 3,000 atoms (pc-lanes), where no
   tiling fits (pc-lanes), and for 65,536 atoms on 128^3 with and without
   memory for tile-binned's copies (tile-binned, pc-lanes); map before any
   prepare and prepare without atoms are refused. */
TEST(prepare_then_map_is_compute_and_describe_says_what_was_chosen) {
    REQUIRE_GPU();
    /* the periodic-images test's system and grid (a deliberate pair: each
       test states its own case) */
    test_system sys = test_system_random(3000, 16.0, 61);
    const int dims[3] = {32, 32, 32};
    elec_lattice l = lattice_of(dims, 0.5, 0.0);
    snap(&sys, 0.5);
    elec_atoms atoms = test_system_atoms(&sys);
    const size_t n = sys.count;
    float4 *host = (float4 *)malloc(n * sizeof(float4));
    double q_sum = 0.0, q2_sum = 0.0;
    for (size_t i = 0; i < n; i++) {
        host[i] = make_float4((float)sys.xyz[3 * i], (float)sys.xyz[3 * i + 1],
                              (float)sys.xyz[3 * i + 2], (float)sys.charge[i]);
        q_sum += host[i].w;
        q2_sum += (double)host[i].w * host[i].w;
    }
    elec_chargemap_params p = {0};
    reference r;
    p.periodic = 1;
    if (!reference_of(&atoms, &l, &p, &r)) {
        EXPECT(0, "reference");
        free(host);
        test_system_free(&sys);
        return;
    }
    const double e_w = gpu_chargemap_weight_error(ELEC_CHARGEMAP_SKEEL, 4);
    float *staged = (float *)malloc(r.points * sizeof(float));
    float *whole = (float *)malloc(r.points * sizeof(float));
    float4 *d_xyzq = NULL;
    float *d_grid = NULL;
    double *d_sums = NULL, sums[2];
    CUDA_OK(cudaMalloc((void **)&d_xyzq, n * sizeof(float4)));
    CUDA_OK(cudaMalloc((void **)&d_grid, r.points * sizeof(float)));
    CUDA_OK(cudaMalloc((void **)&d_sums, 2 * sizeof(double)));
    CUDA_OK(cudaMemcpy(d_xyzq, host, n * sizeof(float4), cudaMemcpyHostToDevice));
    for (int v = 1; v < ELEC_CHARGEMAP_VARIANT_COUNT; v++) {
        elec_cuda_chargemap_handle *h = NULL;
        elec_cuda_chargemap_info info;
        elec_error err;
        const char *name = elec_chargemap_variant_name((elec_chargemap_variant)v);
        p.variant = (elec_chargemap_variant)v;
        EXPECT(elec_cuda_chargemap_create(&l, n, &p, -1, &h, &err) == ELEC_OK, "%s: %s", name,
               err.message);
        if (!h) continue;
        EXPECT(elec_cuda_chargemap_map(h, d_grid, 0, &err) == ELEC_ERR_INVALID_ARG,
               "%s: map before any prepare accepted", name);
        EXPECT(elec_cuda_chargemap_prepare(h, d_xyzq, 0, 0, &err) == ELEC_ERR_INVALID_ARG,
               "%s: prepare of no atoms accepted", name);
        CUDA_OK(cudaMemset(d_sums, 0, 2 * sizeof(double)));
        EXPECT(elec_cuda_chargemap_sums(h, d_sums, &err) == ELEC_OK &&
                   elec_cuda_chargemap_prepare(h, d_xyzq, n, 0, &err) == ELEC_OK &&
                   elec_cuda_chargemap_map(h, d_grid, 0, &err) == ELEC_OK &&
                   elec_cuda_chargemap_finish(h, NULL, 0, &err) == ELEC_OK,
               "%s staged: %s", name, err.message);
        CUDA_OK(cudaMemcpy(staged, d_grid, r.points * sizeof(float), cudaMemcpyDeviceToHost));
        CUDA_OK(cudaMemcpy(sums, d_sums, sizeof sums, cudaMemcpyDeviceToHost));
        /* the float charges' sums, added in a different order: 1e-12 */
        EXPECT(fabs(sums[0] - q_sum) <= 1e-12 * q2_sum && fabs(sums[1] - q2_sum) <= 1e-12 * q2_sum,
               "%s: sums %.15g %.15g, want %.15g %.15g", name, sums[0], sums[1], q_sum, q2_sum);
        EXPECT(elec_cuda_chargemap_sums(h, NULL, &err) == ELEC_OK &&
                   elec_cuda_chargemap_compute(h, d_xyzq, n, d_grid, 0, &err) == ELEC_OK &&
                   elec_cuda_chargemap_finish(h, NULL, 0, &err) == ELEC_OK,
               "%s compute: %s", name, err.message);
        CUDA_OK(cudaMemcpy(whole, d_grid, r.points * sizeof(float), cudaMemcpyDeviceToHost));
        check(name, staged, r.want, r.abs_sum, r.terms, r.points, 4, e_w, max_charge(&sys),
              sums_of_handle(h));
        if (is_fixed_point(v))
            EXPECT(memcmp(staged, whole, r.points * sizeof(float)) == 0,
                   "%s: staged and whole grids differ", name);
        EXPECT(elec_cuda_chargemap_describe(h, &info, &err) == ELEC_OK, "%s: %s", name,
               err.message);
        EXPECT(info.variant == p.variant, "%s: describe names variant %d", name,
               (int)info.variant);
        if (v >= ELEC_CHARGEMAP_PC_BINNED && v <= ELEC_CHARGEMAP_GC_REDUCED_READS)
            EXPECT(info.bin_slots >= 1 && info.bin_slots <= 16, "%s: %d slots", name,
                   info.bin_slots);
        if (info.band_tiles > 0) {
            int product = 1;
            for (int axis = 0; axis < 3; axis++) {
                product *= info.band_tiles_along[axis];
                EXPECT((info.band_tile[axis] & (info.band_tile[axis] - 1)) == 0 &&
                           info.band_tile[axis] >= 3,
                       "%s: tile edge %d", name, info.band_tile[axis]);
            }
            EXPECT(product == info.band_tiles && info.band_groups > 0,
                   "%s: %d tiles (%d along the axes), %d groups", name, info.band_tiles, product,
                   info.band_groups);
        }
        elec_cuda_chargemap_destroy(h);
    }
    { /* the default rung for 3,000 atoms: pc-lanes */
        elec_cuda_chargemap_handle *h = NULL;
        elec_cuda_chargemap_info info;
        elec_error err;
        memset(&info, 0, sizeof info);
        p.variant = ELEC_CHARGEMAP_FASTEST;
        EXPECT(elec_cuda_chargemap_create(&l, n, &p, -1, &h, &err) == ELEC_OK &&
                   elec_cuda_chargemap_describe(h, &info, &err) == ELEC_OK,
               "create by default: %s", err.message);
        elec_cuda_chargemap_destroy(h);
        EXPECT(info.variant == ELEC_CHARGEMAP_PC_LANES, "the default chose %s",
               elec_chargemap_variant_name(info.variant));
        /* 65,536 atoms on 512^3 (the rule's tile-binned): no tiling's
           counters fit in shared memory (65,536 tiles of 16^2 x 8 take
           256 KB), so the handle falls back to pc-lanes; asked for by
           name, tile-binned is refused */
        const int big[3] = {512, 512, 512};
        const elec_lattice wide = lattice_of(big, 0.5, 0.0);
        h = NULL;
        memset(&info, 0, sizeof info);
        EXPECT(elec_cuda_chargemap_create(&wide, 65536, &p, -1, &h, &err) == ELEC_OK &&
                   elec_cuda_chargemap_describe(h, &info, &err) == ELEC_OK,
               "create by default on 512^3: %s", err.message);
        elec_cuda_chargemap_destroy(h);
        EXPECT(info.variant == ELEC_CHARGEMAP_PC_LANES, "the default on 512^3 chose %s",
               elec_chargemap_variant_name(info.variant));
        p.variant = ELEC_CHARGEMAP_TILE_BINNED;
        h = NULL;
        EXPECT(elec_cuda_chargemap_create(&wide, 65536, &p, -1, &h, &err) ==
                   ELEC_ERR_UNSUPPORTED,
               "tile-binned on 512^3 accepted");
        elec_cuda_chargemap_destroy(h);
        /* 65,536 atoms on 128^3: the rule's tile-binned, whose tiling fits
           there, takes pc-lanes where its copies (8.4 MB) do not fit the
           device's memory, here every allocation over 4 MB failing;
           asked for by name, tile-binned says so */
        const int mid[3] = {128, 128, 128};
        const elec_lattice middle = lattice_of(mid, 0.5, 0.0);
        const elec_chargemap_variant want[2] = {ELEC_CHARGEMAP_TILE_BINNED,
                                                ELEC_CHARGEMAP_PC_LANES};
        for (int small = 0; small < 2; small++) {
            p.variant = ELEC_CHARGEMAP_FASTEST;
            h = NULL;
            memset(&info, 0, sizeof info);
            allocation_limit = small ? (size_t)4 << 20 : 0;
            EXPECT(elec_cuda_chargemap_create(&middle, 65536, &p, -1, &h, &err) == ELEC_OK &&
                       elec_cuda_chargemap_describe(h, &info, &err) == ELEC_OK,
                   "create by default on 128^3%s: %s", small ? " in little memory" : "",
                   err.message);
            elec_cuda_chargemap_destroy(h);
            EXPECT(info.variant == want[small], "the default on 128^3%s chose %s",
                   small ? " in little memory" : "", elec_chargemap_variant_name(info.variant));
            p.variant = ELEC_CHARGEMAP_TILE_BINNED;
            h = NULL;
            EXPECT(elec_cuda_chargemap_create(&middle, 65536, &p, -1, &h, &err) ==
                       (small ? ELEC_ERR_NO_MEMORY : ELEC_OK),
                   "tile-binned on 128^3%s: %s", small ? " in little memory" : "", err.message);
            elec_cuda_chargemap_destroy(h);
        }
        allocation_limit = 0;
    }
    cudaFree(d_xyzq);
    cudaFree(d_grid);
    cudaFree(d_sums);
    free(staged);
    free(whole);
    free(host);
    reference_free(&r);
    test_system_free(&sys);
}

/* How a handle for these parameters sums its tiles: 0 in registers, 1 by
   columns, 2 on the tensor cores. */
static int tile_sum_of(const elec_lattice *l, size_t atoms, const elec_chargemap_params *p) {
    elec_cuda_chargemap_handle *h = NULL;
    elec_cuda_chargemap_info info;
    elec_error err;
    int sum = 0;
    EXPECT(elec_cuda_chargemap_create(l, atoms, p, -1, &h, &err) == ELEC_OK, "create: %s",
           err.message);
    if (h && elec_cuda_chargemap_describe(h, &info, &err) == ELEC_OK)
        sum = info.band_tensor ? 2 : info.band_columns ? 1 : 0;
    elec_cuda_chargemap_destroy(h);
    return sum;
}

/* Whether this build's kernels and the device sum tiles on the tensor
   cores (the handle's own gate: the kernels' ptxVersion, elec_cuda.cuh). */
static int has_tensor_cores(void) {
    const int dims[3] = {16, 16, 16};
    elec_lattice l = lattice_of(dims, 0.5, 0.0);
    elec_chargemap_params p = {0};
    elec_cuda_chargemap_handle *h = NULL;
    elec_error err;
    int tensor = 0;
    p.variant = ELEC_CHARGEMAP_TILE_BINNED;
    if (elec_cuda_chargemap_create(&l, 1, &p, -1, &h, &err) == ELEC_OK) tensor = h->tensor_cores;
    elec_cuda_chargemap_destroy(h);
    return tensor;
}

/* The tile-binned rungs on what the ladder's systems do not reach: a tile
   holding over 1,024 copies (5,000 atoms in a 2 A cube: its copies pass
   through several windows of shared memory), tile edges that are not
   powers of two (rounded up) or longer than the lattice, a rest of fewer
   than order - 1 points (joining the tile before it), and fewer atoms
   than binning blocks; maps and periodic grids.  The float rungs' tiles
   are summed every way: by columns (32 x 16 tiles: more columns than a
   block has threads; and TILE_FUSED's), in registers where one tile spans
   an axis (40 points asked, 64 after rounding, on 44) and so a stencil may
   reach it through two images, and on the tensor cores (TILE_BINNED's
   tiles of at most 16 x 16 x 8 on sm_80 and later, the dense tile's
   copies through several windows of 416; of 288 in a handle sharing the
   SMs, below). */
TEST(tile_rungs_take_dense_tiles_and_any_edges) {
    REQUIRE_GPU();
    test_system sys = test_system_random(6000, 16.0, 59);
    static const int tiles[5][3] = {{0, 0, 0}, {3, 5, 7}, {16, 16, 16}, {40, 9, 12}, {32, 16, 8}};
    const int dims[3] = {44, 41, 37};
    /* the first 5,000 atoms in [9, 11) A, the rest in [4, 16) A: grid
       coordinates 8 to 32, inside the map (points 0 to 36 along z) for
       order 8 either basis */
    for (size_t i = 0; i < 3 * sys.count; i++)
        sys.xyz[i] = i < 15000 ? 9.0 + sys.xyz[i] / 8.0 : 4.0 + 0.75 * sys.xyz[i];
    snap(&sys, 0.5);
    elec_atoms atoms = test_system_atoms(&sys);
    test_system few = test_system_random(7, 16.0, 61);
    for (size_t i = 0; i < 3 * few.count; i++) few.xyz[i] = 4.0 + 0.75 * few.xyz[i];
    snap(&few, 0.5);
    elec_atoms few_atoms = test_system_atoms(&few);
    int by_sum[3] = {0, 0, 0}; /* the float rungs' tile sums: registers, columns, tensor */
    for (int periodic = 0; periodic < 2; periodic++)
        for (int basis = 0; basis < 2; basis++)
            for (int order = 4; order <= 8; order += 4) {
                elec_chargemap_params p = {0};
                elec_lattice l = lattice_of(dims, 0.5, 0.0);
                reference r, rf;
                p.basis = (elec_chargemap_basis)basis;
                p.order = order;
                p.periodic = periodic;
                if (!reference_of(&atoms, &l, &p, &r)) continue;
                if (!reference_of(&few_atoms, &l, &p, &rf)) {
                    reference_free(&r);
                    continue;
                }
                const double e_w = gpu_chargemap_weight_error(p.basis, p.order);
                float *got = (float *)malloc(r.points * sizeof(float));
                for (int v = ELEC_CHARGEMAP_TILE_BINNED; v <= ELEC_CHARGEMAP_TILE_FUSED_FIXED; v++)
                    for (int k = 0; k < 5; k++) {
                        elec_error err;
                        char what[160];
                        p.variant = (elec_chargemap_variant)v;
                        for (int axis = 0; axis < 3; axis++)
                            p.tile[axis] = tiles[k][axis] < dims[axis] ? tiles[k][axis] : dims[axis];
                        if (order == 8 && k == 1) continue; /* edges under order - 1 */
                        snprintf(what, sizeof what, "%s, %s order %d, %s, tile %d x %d x %d",
                                 elec_chargemap_variant_name(p.variant),
                                 basis ? "B-spline" : "Skeel", order,
                                 periodic ? "periodic" : "map", p.tile[0], p.tile[1], p.tile[2]);
                        EXPECT(elec_cuda_chargemap(&atoms, &l, &p, got, &err) == ELEC_OK, "%s: %s",
                               what, err.message);
                        check(what, got, r.want, r.abs_sum, r.terms, r.points, order, e_w,
                              max_charge(&sys), sums_of(&l, atoms.count, &p));
                        EXPECT(elec_cuda_chargemap(&few_atoms, &l, &p, got, &err) == ELEC_OK,
                               "%s, 7 atoms: %s", what, err.message);
                        check(what, got, rf.want, rf.abs_sum, rf.terms, rf.points, order, e_w,
                              max_charge(&few), sums_of(&l, few_atoms.count, &p));
                        if (!is_fixed_point(v)) by_sum[tile_sum_of(&l, atoms.count, &p)]++;
                    }
                free(got);
                reference_free(&r);
                reference_free(&rf);
            }
    /* the tensor cores where the build and the device have them (sm_80 on) */
    const int tensor = has_tensor_cores();
    EXPECT(by_sum[0] > 0 && by_sum[1] > 0 && (by_sum[2] > 0) == (tensor != 0),
           "tile sums by registers %d times, by columns %d and on the tensor cores %d (tensor "
           "cores %s): each should be tried", by_sum[0], by_sum[1], by_sum[2],
           tensor ? "present" : "absent");
    test_system_free(&sys);
    test_system_free(&few);
}

/* A handle whose kernels share the SMs (SPME's spread beside its real
   space) sums on the tensor cores in windows of 288 copies, not 416, whose
   shared memory would come out of the others' L1: on the tile test's
   dense tile (its 5,000 atoms' copies through many windows) and its spread
   atoms, through the device API, tile-binned sums in the narrower windows
   where the build and the device have tensor cores and the tile fits them
   (by columns or in registers elsewhere), within the bound of the
   reference, both bases, orders 4 and 8, maps and periodic grids.  At
   order 4 the same handle not sharing sums in the wider windows, or by
   columns without tensor cores (the control).  The periodic grid is 32^3
   (a period of 16 A), not the map's 44 x 41 x 37: the device API wraps
   float positions by x (1/L) in float, exact where L is a power of two
   (the geometry above); on 22 x 20.5 x 18.5 A a point with one term came
   out 3.09 times the bound off (H200, 2026-12-02), as grid coordinates a
   few ulps of u off would make it: the bound allows for the weights'
   float error, not the coordinates'.  The device API's periodic wrap on
   other periods is left to the tours' comparison of float and double
   positions (README). */
TEST(a_sharing_handle_sums_in_narrower_windows) {
    REQUIRE_GPU();
    test_system sys = test_system_random(6000, 16.0, 59);
    const int map_dims[3] = {44, 41, 37}, periodic_dims[3] = {32, 32, 32};
    for (size_t i = 0; i < 3 * sys.count; i++) /* [9, 11) A, then [4, 16) A */
        sys.xyz[i] = i < 15000 ? 9.0 + sys.xyz[i] / 8.0 : 4.0 + 0.75 * sys.xyz[i];
    snap(&sys, 0.5);
    elec_atoms atoms = test_system_atoms(&sys);
    const size_t n = sys.count;
    float4 *host = (float4 *)malloc(n * sizeof(float4)), *d_xyzq = NULL;
    float *d_grid = NULL;
    for (size_t i = 0; i < n; i++)
        host[i] = make_float4((float)sys.xyz[3 * i], (float)sys.xyz[3 * i + 1],
                              (float)sys.xyz[3 * i + 2], (float)sys.charge[i]);
    const int tensor = has_tensor_cores();
    int narrow = 0; /* settings summed in the narrower windows */
    CUDA_OK(cudaMalloc((void **)&d_xyzq, n * sizeof(float4)));
    CUDA_OK(cudaMemcpy(d_xyzq, host, n * sizeof(float4), cudaMemcpyHostToDevice));
    for (int periodic = 0; periodic < 2; periodic++)
        for (int basis = 0; basis < 2; basis++)
            for (int order = 4; order <= 8; order += 4) {
                elec_chargemap_params p = {0};
                elec_lattice l = lattice_of(periodic ? periodic_dims : map_dims, 0.5, 0.0);
                elec_cuda_chargemap_handle *h = NULL;
                elec_error err;
                reference r;
                char what[96];
                p.basis = (elec_chargemap_basis)basis;
                p.order = order;
                p.periodic = periodic;
                p.variant = ELEC_CHARGEMAP_TILE_BINNED;
                snprintf(what, sizeof what, "sharing, %s order %d, %s",
                         basis ? "B-spline" : "Skeel", order, periodic ? "periodic" : "map");
                if (!reference_of(&atoms, &l, &p, &r)) continue;
                EXPECT(elec__chargemap_create(&l, n, &p, -1, 1, &h, &err) == ELEC_OK, "%s: %s",
                       what, err.message);
                if (h) {
                    float *got = (float *)malloc(r.points * sizeof(float));
                    CUDA_OK(cudaMalloc((void **)&d_grid, r.points * sizeof(float)));
                    EXPECT(h->sharing && h->sum != ELEC__CHARGEMAP_SUM_TENSOR &&
                               (h->sum == ELEC__CHARGEMAP_SUM_TENSOR_SHARING) ==
                                   (sums_of_handle(h) == GPU_SUMS_TENSOR),
                           "%s: sum %d", what, h->sum);
                    narrow += h->sum == ELEC__CHARGEMAP_SUM_TENSOR_SHARING;
                    if (order == 4) {
                        elec_cuda_chargemap_handle *alone = NULL;
                        EXPECT(elec_cuda_chargemap_create(&l, n, &p, -1, &alone, &err) ==
                                       ELEC_OK &&
                                   !alone->sharing &&
                                   alone->sum == (tensor ? ELEC__CHARGEMAP_SUM_TENSOR
                                                         : ELEC__CHARGEMAP_SUM_COLUMNS) &&
                                   h->sum == (tensor ? ELEC__CHARGEMAP_SUM_TENSOR_SHARING
                                                     : ELEC__CHARGEMAP_SUM_COLUMNS),
                               "%s: alone the sum is %d, sharing %d (tensor cores %d): %s",
                               what, alone ? alone->sum : -1, h->sum, tensor, err.message);
                        elec_cuda_chargemap_destroy(alone);
                    }
                    EXPECT(elec_cuda_chargemap_compute(h, d_xyzq, n, d_grid, 0, &err) ==
                                   ELEC_OK &&
                               elec_cuda_chargemap_finish(h, NULL, 0, &err) == ELEC_OK,
                           "%s: %s", what, err.message);
                    CUDA_OK(cudaMemcpy(got, d_grid, r.points * sizeof(float),
                                       cudaMemcpyDeviceToHost));
                    check(what, got, r.want, r.abs_sum, r.terms, r.points, order,
                          gpu_chargemap_weight_error(p.basis, order), max_charge(&sys),
                          sums_of_handle(h));
                    CUDA_OK(cudaFree(d_grid));
                    free(got);
                }
                elec_cuda_chargemap_destroy(h);
                reference_free(&r);
            }
    EXPECT((narrow > 0) == (tensor != 0), "%d settings in the narrower windows (tensor cores %s)",
           narrow, tensor ? "present" : "absent");
    CUDA_OK(cudaFree(d_xyzq));
    free(host);
    test_system_free(&sys);
}

/* TILE_BINNED's binning groups where the caller leaves them to the handle:
   one block an SM, raised to two or four an SM only where that lets
   stage 1 sort a group's copies in shared memory (an atom index a copy).
   Three million atoms on a 160^3 periodic grid at 1 A (0.73 atoms a
   point, under the default rule's limit of one) bring each of one group
   an SM's chunks about 44,000 copies (22,728 atoms on a device of 132
   SMs, times 16^2 x 8 tiles' halo of 1.94), whose room of one and a half
   times that (258 KiB) does not fit beside the counters (8 KB) in the
   227 KiB a block may take; at two an SM it does (129 KiB).  So a device
   of 100 to 150 SMs and 200 to 227 KiB a block must stage, with more
   groups than SMs (from about 158 SMs at 227 KiB one group an SM's room
   fits), and with fewer groups given it must not.  The maps stay within
   the float bound of the double reference, staged and not (tile-binned's
   copies stored where they fall, from groups of more than four atoms a
   thread), and the default rung for this size is tile-binned, with the
   same groups. */
TEST(tile_binned_raises_its_groups_only_to_stage_its_copies) {
    REQUIRE_GPU();
    test_system sys = test_system_random(3000000, 160.0, 67);
    const int dims[3] = {160, 160, 160};
    elec_lattice l = lattice_of(dims, 1.0, 0.0);
    elec_chargemap_params p = {0};
    elec_cuda_chargemap_handle *h = NULL;
    elec_cuda_chargemap_info info;
    elec_error err;
    reference r;
    int device = 0, sms = 0, optin = 0;
    memset(&info, 0, sizeof info);
    snap(&sys, 1.0);
    elec_atoms atoms = test_system_atoms(&sys);
    p.periodic = 1;
    p.variant = ELEC_CHARGEMAP_TILE_BINNED;
    CUDA_OK(cudaGetDevice(&device));
    CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    CUDA_OK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    EXPECT(elec_cuda_chargemap_create(&l, atoms.count, &p, -1, &h, &err) == ELEC_OK &&
               elec_cuda_chargemap_describe(h, &info, &err) == ELEC_OK,
           "create: %s", err.message);
    elec_cuda_chargemap_destroy(h);
    printf("     %d SMs, %d bytes a block: %d groups, %s\n", sms, optin, info.band_groups,
           info.band_staged ? "staged" : "scattered");
    EXPECT(info.band_groups == sms ||
               (info.band_staged && (info.band_groups == 2 * sms || info.band_groups == 4 * sms)),
           "%d groups on %d SMs, %s: raised without staging", info.band_groups, sms,
           info.band_staged ? "staged" : "scattered");
    /* the fewest that stage: with fewer given (the same tiles), none */
    for (int blocks = 1; sms > 0 && blocks * sms < info.band_groups; blocks *= 2) {
        elec_chargemap_params q = p;
        elec_cuda_chargemap_info fewer;
        memset(&fewer, 0, sizeof fewer);
        q.tile_groups = blocks * sms;
        h = NULL;
        EXPECT(elec_cuda_chargemap_create(&l, atoms.count, &q, -1, &h, &err) == ELEC_OK &&
                   elec_cuda_chargemap_describe(h, &fewer, &err) == ELEC_OK,
               "create at %d groups: %s", q.tile_groups, err.message);
        elec_cuda_chargemap_destroy(h);
        EXPECT(!fewer.band_staged && fewer.band_tiles == info.band_tiles,
               "%d groups given: %s, %d tiles (the default %d groups, %d tiles)",
               q.tile_groups, fewer.band_staged ? "staged" : "scattered", fewer.band_tiles,
               info.band_groups, info.band_tiles);
    }
    /* H100 and H200 (132 SMs, 227 KiB): two an SM */
    if (sms >= 100 && sms <= 150 && optin >= 200 * 1024 && optin <= 232448)
        EXPECT(info.band_staged && info.band_groups > sms,
               "%d groups on %d SMs, %s: should stage at more groups than SMs",
               info.band_groups, sms, info.band_staged ? "staged" : "scattered");
    /* the default rung for this size (three million atoms, 0.73 a point)
       is tile-binned, its groups as above */
    {
        elec_chargemap_params q = p;
        elec_cuda_chargemap_info chosen;
        memset(&chosen, 0, sizeof chosen);
        q.variant = ELEC_CHARGEMAP_FASTEST;
        h = NULL;
        EXPECT(elec_cuda_chargemap_create(&l, atoms.count, &q, -1, &h, &err) == ELEC_OK &&
                   elec_cuda_chargemap_describe(h, &chosen, &err) == ELEC_OK,
               "create by default: %s", err.message);
        elec_cuda_chargemap_destroy(h);
        EXPECT(chosen.variant == ELEC_CHARGEMAP_TILE_BINNED &&
                   chosen.band_groups == info.band_groups,
               "the default chose %s with %d groups", elec_chargemap_variant_name(chosen.variant),
               chosen.band_groups);
    }
    if (reference_of(&atoms, &l, &p, &r)) {
        static const char *const what[3] = {"tile-binned, three million atoms", "the default",
                                            "tile-binned at a group an SM (not staged)"};
        float *got = (float *)malloc(r.points * sizeof(float));
        for (int k = 0; k < 3; k++) {
            elec_chargemap_params q = p;
            q.variant = k == 1 ? ELEC_CHARGEMAP_FASTEST : ELEC_CHARGEMAP_TILE_BINNED;
            q.tile_groups = k == 2 ? sms : 0;
            if (k == 2 && info.band_groups == sms) continue; /* the first map's groups */
            EXPECT(elec_cuda_chargemap(&atoms, &l, &q, got, &err) == ELEC_OK, "%s: %s",
                   what[k], err.message);
            check(what[k], got, r.want, r.abs_sum, r.terms, r.points, 4,
                  gpu_chargemap_weight_error(ELEC_CHARGEMAP_SKEEL, 4), max_charge(&sys),
                  sums_of(&l, atoms.count, &q));
        }
        free(got);
        reference_free(&r);
    }
    test_system_free(&sys);
}

/* The tile-binned rungs find a tile's place by elec__divide, a multiply
   for a division: every divisor up to 4,096 and some far past any tile
   count, each against the dividends at, just under and half way past
   2,048 multiples from 0 and 2,048 down from the largest under 2^31 (for
   divisors past 2^20 that count wraps: other dividends, still checked),
   and 2^31 - 1; on the host (which every build runs) and on the device,
   against the integer division. */
static std::vector<unsigned> divisors_to_check(void) {
    std::vector<unsigned> divisors;
    for (unsigned d = 1; d <= 4096; d++) divisors.push_back(d);
    const unsigned far[] = {65535u, 65536u, 65537u, 1000003u, 1u << 20, (1u << 20) + 1u,
                            0x40000001u, 0x7ffffffeu, 0x7fffffffu};
    for (unsigned d : far) divisors.push_back(d);
    return divisors;
}

/* Dividends past 2^31 - 1 are out of elec__divide's range and skipped. */
__host__ __device__ static unsigned divide_misses(unsigned d, elec__divisor by, int s) {
    const unsigned top = 0x7fffffffu;
    const unsigned q = s < 2048 ? (unsigned)s : top / d - (unsigned)(s - 2048);
    const unsigned a[3] = {q * d, q * d + d - 1, q * d + (d >> 1)};
    unsigned misses = s == 0 && elec__divide(top, by) != top / d;
    for (int i = 0; i < 3; i++) misses += a[i] <= top && elec__divide(a[i], by) != a[i] / d;
    return misses;
}

__global__ void divide_on_the_device(const unsigned *divisors, const elec__divisor *by,
                                     int count, unsigned *misses) {
    const int k = blockIdx.x;
    if (k >= count) return;
    for (int s = threadIdx.x; s < 4096; s += blockDim.x) {
        const unsigned m = divide_misses(divisors[k], by[k], s);
        if (m) atomicAdd(misses, m);
    }
}

TEST(tile_places_divide_exactly_by_a_multiply_on_the_host) {
    const std::vector<unsigned> divisors = divisors_to_check();
    unsigned misses = 0;
    for (unsigned d : divisors) {
        const elec__divisor by = elec__divisor_of(d);
        for (int s = 0; s < 4096; s++) misses += divide_misses(d, by, s);
    }
    EXPECT(misses == 0, "%u quotients differ from the division's over %zu divisors", misses,
           divisors.size());
}

TEST(tile_places_divide_exactly_by_a_multiply_on_the_device) {
    REQUIRE_GPU();
    const std::vector<unsigned> divisors = divisors_to_check();
    std::vector<elec__divisor> by;
    for (unsigned d : divisors) by.push_back(elec__divisor_of(d));
    const int count = (int)divisors.size();
    unsigned *d_divisors = NULL, *d_misses = NULL, misses = 1;
    elec__divisor *d_by = NULL;
    CUDA_OK(cudaMalloc((void **)&d_divisors, count * sizeof(unsigned)));
    CUDA_OK(cudaMalloc((void **)&d_by, count * sizeof(elec__divisor)));
    CUDA_OK(cudaMalloc((void **)&d_misses, sizeof(unsigned)));
    CUDA_OK(cudaMemcpy(d_divisors, divisors.data(), count * sizeof(unsigned),
                       cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(d_by, by.data(), count * sizeof(elec__divisor), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(d_misses, 0, sizeof(unsigned)));
    divide_on_the_device<<<count, 256>>>(d_divisors, d_by, count, d_misses);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaMemcpy(&misses, d_misses, sizeof(unsigned), cudaMemcpyDeviceToHost));
    EXPECT(misses == 0, "%u quotients differ from the division's over %d divisors", misses,
           count);
    CUDA_OK(cudaFree(d_divisors));
    CUDA_OK(cudaFree(d_by));
    CUDA_OK(cudaFree(d_misses));
}

/* TILE_BINNED's stage 2 prefetches a tile's copies into L1 only where
   a call's copies and the grid outgrow L2 (elec__chargemap_prefetch_atoms,
   the fewest atoms that do), here an L2 of 50 MiB as the H100's and
   H200's: ApoA1-size on 112 x 112 x 80 (about 2.7 + 3.8 MiB) not,
   DMPC-size on 64^3 not, 1M atoms on 216^3 (about 29.6 + 38.4 MiB) yes,
   a thousand atoms on 216^3 not (the grid alone under 50 MiB), and a
   single atom on 240^3 yes (the grid alone, 52.7 MiB, over it). */
TEST(tile_binned_prefetches_only_where_copies_and_grid_outgrow_l2) {
    const int l2 = 50 << 20, shift[3] = {4, 4, 3};
    const int apoa1[3] = {112, 112, 80}, million[3] = {216, 216, 216}, coarse[3] = {64, 64, 64};
    const int past_l2[3] = {240, 240, 240};
    const elec__chargemap_bands a = elec__chargemap_bands_of(apoa1, shift, 4);
    const elec__chargemap_bands m = elec__chargemap_bands_of(million, shift, 4);
    const elec__chargemap_bands c = elec__chargemap_bands_of(coarse, shift, 4);
    const elec__chargemap_bands big = elec__chargemap_bands_of(past_l2, shift, 4);
    const size_t at_apoa1 = elec__chargemap_prefetch_atoms(&a, apoa1, 4, l2);
    const size_t at_million = elec__chargemap_prefetch_atoms(&m, million, 4, l2);
    const size_t at_coarse = elec__chargemap_prefetch_atoms(&c, coarse, 4, l2);
    EXPECT(92224 < at_apoa1, "ApoA1-size prefetches (from %zu atoms)", at_apoa1);
    EXPECT(1000000 >= at_million, "1M atoms on 216^3 do not (from %zu)", at_million);
    EXPECT(68484 < at_coarse, "DMPC-size prefetches (from %zu)", at_coarse);
    EXPECT(1000 < at_million, "216^3 with a thousand atoms prefetches (from %zu)", at_million);
    EXPECT(elec__chargemap_prefetch_atoms(&big, past_l2, 4, l2) == 0,
           "one atom on 240^3 (a grid past L2) does not prefetch");
    /* at the count exactly: an atom fewer fits L2, the count does not */
    const double copy_bytes = 16.0 * (1.0 + 3.0 / 16) * (1.0 + 3.0 / 16) * (1.0 + 3.0 / 8);
    const double grid = 4.0 * 216 * 216 * 216;
    EXPECT(grid + copy_bytes * (double)(at_million - 1) <= (double)l2 &&
               grid + copy_bytes * (double)at_million > (double)l2,
           "216^3: %zu atoms is not where the copies and grid pass L2", at_million);
}

/* The gate is each call's: a handle on 216^3 made for 1M atoms prefetches
   when a prepare brings a million (about 29.6 MiB of copies beside the
   38.4 MiB grid) and not when the next brings 92,224 of them (2.7 MiB),
   on a device whose L2 lies between the two sums (the H100's and H200's
   50 MiB); describe reports it (band_prefetch), 0 before any prepare.  Only
   stage 1 runs: the map needs no checking here (the test after this one
   maps with the prefetch). */
TEST(tile_binned_prefetches_by_each_calls_atoms) {
    REQUIRE_GPU();
    const int dims[3] = {216, 216, 216};
    const size_t most = 1000000, fewer = 92224;
    elec_lattice l = lattice_of(dims, 1.0, 0.0);
    elec_chargemap_params p = {0};
    elec_cuda_chargemap_handle *h = NULL;
    elec_cuda_chargemap_info before, after_most, after_fewer;
    elec_error err;
    int device = 0, l2 = 0;
    memset(&before, 0, sizeof before);
    memset(&after_most, 0, sizeof after_most);
    memset(&after_fewer, 0, sizeof after_fewer);
    CUDA_OK(cudaGetDevice(&device));
    CUDA_OK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    if (l2 < (42 << 20) || l2 > (67 << 20)) /* 41.2 and 68.0 MiB: the two sums */
        SKIP("an L2 of %d MiB: the sizes here are for one between 42 and 67 MiB", l2 >> 20);
    p.periodic = 1;
    p.variant = ELEC_CHARGEMAP_TILE_BINNED;
    if (!has_tensor_cores()) SKIP("no tensor sum here: only it prefetches");
    float4 *host = (float4 *)malloc(most * sizeof(float4)), *d_xyzq = NULL;
    test_rng rng = test_rng_seeded(97);
    for (size_t i = 0; i < most; i++) { /* anywhere in the box, charges +-1 */
        const float x = (float)(216.0 * test_uniform(&rng));
        const float y = (float)(216.0 * test_uniform(&rng));
        const float z = (float)(216.0 * test_uniform(&rng));
        host[i] = make_float4(x, y, z, i % 2 ? 1.0f : -1.0f);
    }
    CUDA_OK(cudaMalloc((void **)&d_xyzq, most * sizeof(float4)));
    CUDA_OK(cudaMemcpy(d_xyzq, host, most * sizeof(float4), cudaMemcpyHostToDevice));
    EXPECT(elec_cuda_chargemap_create(&l, most, &p, -1, &h, &err) == ELEC_OK &&
               elec_cuda_chargemap_describe(h, &before, &err) == ELEC_OK &&
               elec_cuda_chargemap_prepare(h, d_xyzq, most, 0, &err) == ELEC_OK &&
               elec_cuda_chargemap_describe(h, &after_most, &err) == ELEC_OK &&
               elec_cuda_chargemap_prepare(h, d_xyzq, fewer, 0, &err) == ELEC_OK &&
               elec_cuda_chargemap_describe(h, &after_fewer, &err) == ELEC_OK,
           "%s", err.message);
    if (h) {
        CUDA_OK(cudaDeviceSynchronize());
        EXPECT(before.band_tensor, "the handle sums off the tensor cores");
        EXPECT(before.band_tile[0] == 16 && before.band_tile[1] == 16 && before.band_tile[2] == 8,
               "tiles of %d x %d x %d: the sums above are for 16 x 16 x 8", before.band_tile[0],
               before.band_tile[1], before.band_tile[2]);
        EXPECT(!before.band_prefetch, "prefetches before any prepare");
        EXPECT(after_most.band_prefetch, "1M atoms do not prefetch (an L2 of %d MiB)", l2 >> 20);
        EXPECT(!after_fewer.band_prefetch, "92,224 atoms prefetch (an L2 of %d MiB)", l2 >> 20);
    }
    elec_cuda_chargemap_destroy(h);
    CUDA_OK(cudaFree(d_xyzq));
    free(host);
}

/* The same maps with the prefetch forced on a small system (the sizes
   that turn it on take seconds of the CPU's reference): every point
   within the float bound of the double reference, Skeel and B-spline, a
   map and a periodic grid, and the handle planned without it.  A second
   call maps the atoms with their charges negated: copies left in L1 by
   the first would show. */
TEST(tile_binned_maps_alike_with_its_copies_prefetched) {
    REQUIRE_GPU();
    const int tensor = has_tensor_cores();
    test_system sys = test_system_random(6000, 16.0, 71);
    const int map_dims[3] = {44, 41, 37}, periodic_dims[3] = {32, 32, 32};
    for (size_t i = 0; i < 3 * sys.count; i++) /* [4, 16) A: inside the map */
        sys.xyz[i] = 4.0 + 0.75 * sys.xyz[i];
    snap(&sys, 0.5);
    elec_atoms atoms = test_system_atoms(&sys);
    const size_t n = sys.count;
    float4 *host = xyzq_on_host(&sys), *d_xyzq = NULL;
    CUDA_OK(cudaMalloc((void **)&d_xyzq, 2 * n * sizeof(float4)));
    CUDA_OK(cudaMemcpy(d_xyzq, host, n * sizeof(float4), cudaMemcpyHostToDevice));
    for (size_t i = 0; i < n; i++) host[i].w = -host[i].w;
    CUDA_OK(cudaMemcpy(d_xyzq + n, host, n * sizeof(float4), cudaMemcpyHostToDevice));
    for (int periodic = 0; periodic < 2; periodic++)
        for (int basis = 0; basis < 2; basis++) {
            elec_chargemap_params p = {0};
            elec_lattice l = lattice_of(periodic ? periodic_dims : map_dims, 0.5, 0.0);
            elec_cuda_chargemap_handle *h = NULL;
            elec_error err;
            reference r;
            char what[96];
            p.basis = (elec_chargemap_basis)basis;
            p.periodic = periodic;
            p.variant = ELEC_CHARGEMAP_TILE_BINNED;
            snprintf(what, sizeof what, "prefetched, %s order 4, %s",
                     basis ? "B-spline" : "Skeel", periodic ? "periodic" : "map");
            if (!reference_of(&atoms, &l, &p, &r)) continue;
            EXPECT(elec_cuda_chargemap_create(&l, n, &p, -1, &h, &err) == ELEC_OK, "%s: %s",
                   what, err.message);
            if (h) {
                float *got = (float *)malloc(r.points * sizeof(float)), *d_grid = NULL;
                double *minus = (double *)malloc(r.points * sizeof(double));
                for (size_t g = 0; g < r.points; g++) minus[g] = -r.want[g];
                EXPECT(h->prefetch_atoms > n, "%s: planned with the prefetch", what);
                EXPECT(h->sum == ELEC__CHARGEMAP_SUM_TENSOR || !tensor,
                       "%s: stage 2 sums off the tensor cores (sum %d)", what, h->sum);
                h->prefetch_atoms = 0; /* every call prefetches */
                CUDA_OK(cudaMalloc((void **)&d_grid, r.points * sizeof(float)));
                for (int call = 0; call < 2; call++) {
                    EXPECT(elec_cuda_chargemap_compute(h, d_xyzq + call * n, n, d_grid, 0,
                                                       &err) == ELEC_OK &&
                               elec_cuda_chargemap_finish(h, NULL, 0, &err) == ELEC_OK,
                           "%s: %s", what, err.message);
                    CUDA_OK(cudaMemcpy(got, d_grid, r.points * sizeof(float),
                                       cudaMemcpyDeviceToHost));
                    check(what, got, call ? minus : r.want, r.abs_sum, r.terms, r.points, 4,
                          gpu_chargemap_weight_error(p.basis, 4), max_charge(&sys),
                          sums_of_handle(h));
                }
                elec_cuda_chargemap_info info;
                EXPECT(elec_cuda_chargemap_describe(h, &info, &err) == ELEC_OK &&
                           info.band_prefetch == tensor,
                       "%s: describe says band_prefetch %d on a device %s tensor cores", what,
                       info.band_prefetch, tensor ? "with" : "without");
                free(minus);
                CUDA_OK(cudaFree(d_grid));
                free(got);
            }
            elec_cuda_chargemap_destroy(h);
            reference_free(&r);
        }
    CUDA_OK(cudaFree(d_xyzq));
    free(host);
    test_system_free(&sys);
}

/* The warps' gather is tried where a call's copies come to at most a
   window a tile on average (elec__chargemap_gather_atoms): ApoA1-size on
   112 x 112 x 80, DMPC-size on 64^3 and 1M atoms on 216^3 (their default
   tiles), not ApoA1-size on 56 x 56 x 40 (about 980 copies a tile of 8^3);
   at the count exactly the mean fits, an atom more does not. */
TEST(tile_binned_gathers_by_warps_where_tiles_fit_a_window) {
    const int shift16[3] = {4, 4, 3}, shift8[3] = {3, 3, 3};
    const int apoa1[3] = {112, 112, 80}, million[3] = {216, 216, 216}, dmpc[3] = {64, 64, 64};
    const int coarse[3] = {56, 56, 40};
    const int window = ELEC__CHARGEMAP_TENSOR_WINDOW;
    const elec__chargemap_bands a = elec__chargemap_bands_of(apoa1, shift16, 4);
    const elec__chargemap_bands m = elec__chargemap_bands_of(million, shift16, 4);
    const elec__chargemap_bands d = elec__chargemap_bands_of(dmpc, shift8, 4);
    const elec__chargemap_bands c = elec__chargemap_bands_of(coarse, shift8, 4);
    const size_t at_apoa1 = elec__chargemap_gather_atoms(&a, 4, window);
    const size_t at_million = elec__chargemap_gather_atoms(&m, 4, window);
    const size_t at_dmpc = elec__chargemap_gather_atoms(&d, 4, window);
    const size_t at_coarse = elec__chargemap_gather_atoms(&c, 4, window);
    EXPECT(92224 <= at_apoa1, "ApoA1-size on 112 x 112 x 80 gathers by warps (up to %zu)",
           at_apoa1);
    EXPECT(1000000 <= at_million, "1M atoms on 216^3 gather by warps (up to %zu)", at_million);
    EXPECT(68484 <= at_dmpc, "DMPC-size on 64^3 gathers by warps (up to %zu)", at_dmpc);
    EXPECT(92224 > at_coarse, "ApoA1-size on 56 x 56 x 40 does not (up to %zu)", at_coarse);
    const double halo = (1.0 + 3.0 / 16) * (1.0 + 3.0 / 16) * (1.0 + 3.0 / 8);
    EXPECT(a.count == 490 && (double)at_apoa1 * halo <= (double)window * a.count &&
               (double)(at_apoa1 + 1) * halo > (double)window * a.count,
           "112 x 112 x 80 (%d tiles): %zu atoms is not where the mean passes the window",
           a.count, at_apoa1);
}

/* Which of the tensor sum's two gathers each tile of a map takes, as
   stage 1 lays the copies out (elec__chargemap_sum_tile_tensor): by its
   warps where the call's copies fit a window a tile on average
   (bands.gather), the groups number at most 256, the tile's copies fit the
   window and no warp's groups hold more than 32 ELEC__CHARGEMAP_GATHERED
   of them; else by the block.  The atoms' grid coordinates are floats
   (snapped: x / h a float, h = 0.5), so that the host finds their
   stencils' points as the device does. */
static void tensor_gathers(const elec_cuda_chargemap_handle *h, const test_system *s,
                           double spacing, int *by_warps, int *by_block) {
    elec_cuda_chargemap_info info;
    elec_error err;
    if (elec_cuda_chargemap_describe(h, &info, &err) != ELEC_OK || !info.band_tensor) return;
    const int tiles = info.band_tiles, groups = info.band_groups;
    const int window = elec__chargemap_tensor_window(h->sum);
    std::vector<int> total(tiles, 0), share(8 * (size_t)tiles, 0);
    for (size_t i = 0; i < s->count; i++) {
        const int j = (int)(i / (size_t)h->bands.chunk);
        int warp = 0; /* the warp whose groups [w G / 8, (w + 1) G / 8) hold j */
        while (warp < 7 && j >= (warp + 1) * groups / 8) warp++;
        int lo[3], hi[3];
        for (int axis = 0; axis < 3; axis++) {
            const int k = (int)floor(s->xyz[3 * i + axis] / spacing) + h->g.offset;
            lo[axis] = std::min(k / info.band_tile[axis], info.band_tiles_along[axis] - 1);
            hi[axis] = std::min((k + h->g.width - 1) / info.band_tile[axis],
                                info.band_tiles_along[axis] - 1);
        }
        for (int c = lo[2]; c <= hi[2]; c++)
            for (int b = lo[1]; b <= hi[1]; b++)
                for (int a = lo[0]; a <= hi[0]; a++) {
                    const int tile = a + info.band_tiles_along[0] *
                                             (b + info.band_tiles_along[1] * c);
                    total[tile]++;
                    share[8 * (size_t)tile + warp]++;
                }
    }
    for (int tile = 0; tile < tiles; tile++) {
        bool warps = h->bands.gather && groups <= 256 && total[tile] <= window;
        for (int w = 0; w < 8; w++)
            warps = warps && share[8 * (size_t)tile + w] <= 32 * ELEC__CHARGEMAP_GATHERED;
        (warps ? *by_warps : *by_block) += 1;
    }
}

/* TILE_BINNED's tensor sum gathers a tile's copies by its warps, or by
   the block where they pass the window, the groups number over 256, or
   one warp's groups hold more than its lanes take: maps alike either way,
   on 6,000 atoms at 4-28 A on 64^3 points in tiles of 16 x 16 x 8 (about
   110 atoms and 210 copies a whole tile) binned in 1 group (a tile's copies all
   from one warp, the last: past 96, the block gathers), 8 (a group a
   warp, about 27 copies each: the warps gather), the default, and four an
   SM (over 256 groups on 65 SMs or more: the block gathers). */
TEST(tile_binned_gathers_by_warps_or_by_the_block_alike) {
    REQUIRE_GPU();
    const int tensor = has_tensor_cores();
    int sms = 0;
    CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    test_system sys = test_system_random(6000, 16.0, 73);
    const int dims[3] = {64, 64, 64};
    for (size_t i = 0; i < 3 * sys.count; i++) /* [4, 28) A: grid points 8 to 56 */
        sys.xyz[i] = 4.0 + 1.5 * sys.xyz[i];
    snap(&sys, 0.5);
    elec_atoms atoms = test_system_atoms(&sys);
    const size_t n = sys.count;
    float4 *host = xyzq_on_host(&sys), *d_xyzq = NULL;
    CUDA_OK(cudaMalloc((void **)&d_xyzq, n * sizeof(float4)));
    CUDA_OK(cudaMemcpy(d_xyzq, host, n * sizeof(float4), cudaMemcpyHostToDevice));
    const int asked[4] = {1, 8, 0, 4 * sms};
    int by_warps[4] = {0, 0, 0, 0}, by_block[4] = {0, 0, 0, 0};
    for (int periodic = 0; periodic < 2; periodic++)
        for (int basis = 0; basis < 2; basis++) {
            elec_chargemap_params p = {0};
            elec_lattice l = lattice_of(dims, 0.5, 0.0);
            reference r;
            p.basis = (elec_chargemap_basis)basis;
            p.periodic = periodic;
            p.variant = ELEC_CHARGEMAP_TILE_BINNED;
            p.tile[0] = p.tile[1] = 16;
            p.tile[2] = 8;
            if (!reference_of(&atoms, &l, &p, &r)) continue;
            float *got = (float *)malloc(r.points * sizeof(float)), *d_grid = NULL;
            CUDA_OK(cudaMalloc((void **)&d_grid, r.points * sizeof(float)));
            for (int k = 0; k < 4; k++) {
                elec_cuda_chargemap_handle *h = NULL;
                elec_error err;
                char what[96];
                p.tile_groups = asked[k];
                snprintf(what, sizeof what, "%s order 4, %s, %d groups asked",
                         basis ? "B-spline" : "Skeel", periodic ? "periodic" : "map", asked[k]);
                EXPECT(elec_cuda_chargemap_create(&l, n, &p, -1, &h, &err) == ELEC_OK &&
                           elec_cuda_chargemap_compute(h, d_xyzq, n, d_grid, 0, &err) ==
                               ELEC_OK &&
                           elec_cuda_chargemap_finish(h, NULL, 0, &err) == ELEC_OK,
                       "%s: %s", what, err.message);
                if (h) {
                    CUDA_OK(cudaMemcpy(got, d_grid, r.points * sizeof(float),
                                       cudaMemcpyDeviceToHost));
                    check(what, got, r.want, r.abs_sum, r.terms, r.points, 4,
                          gpu_chargemap_weight_error(p.basis, 4), max_charge(&sys),
                          sums_of_handle(h));
                    if (!periodic) tensor_gathers(h, &sys, 0.5, &by_warps[k], &by_block[k]);
                }
                elec_cuda_chargemap_destroy(h);
            }
            CUDA_OK(cudaFree(d_grid));
            free(got);
            reference_free(&r);
        }
    printf("     tiles gathered by warps / by the block, at 1, 8, default, %d groups asked: "
           "%d / %d, %d / %d, %d / %d, %d / %d\n",
           4 * sms, by_warps[0], by_block[0], by_warps[1], by_block[1], by_warps[2],
           by_block[2], by_warps[3], by_block[3]);
    /* each gather taken where the tensor cores sum: the block's at one
       group and at over 256, the warps' at eight */
    EXPECT(!tensor || (by_block[0] > 0 && by_warps[1] > 0 && (4 * sms <= 256 || by_block[3] > 0)),
           "the two gathers each taken (warps / block at 1, 8, %d groups: %d / %d, %d / %d, %d / "
           "%d)",
           4 * sms, by_warps[0], by_block[0], by_warps[1], by_block[1], by_warps[3], by_block[3]);
    CUDA_OK(cudaFree(d_xyzq));
    free(host);
    test_system_free(&sys);
}

int main(void) {
    gpu_test_start();
    RUN(every_rung_matches_the_double_reference);
    RUN(atoms_on_points_put_their_whole_charge_there);
    RUN(total_charge_is_kept);
    RUN(overfull_bins_overflow_and_are_counted);
    RUN(atoms_outside_a_map_are_refused);
    RUN(gc_shared_refuses_lattices_past_cudas_grid);
    RUN(charges_past_floats_range_are_refused);
    RUN(periodic_images_map_alike);
    RUN(fixed_point_is_bit_identical_whatever_the_order);
    RUN(fixed_point_tiles_give_the_same_bits_in_halves_and_whole);
    RUN(device_api_repeats_and_replays_from_a_graph);
    RUN(the_atoms_a_kernel_writes_just_before_are_the_ones_mapped);
    RUN(tile_rungs_take_dense_tiles_and_any_edges);
    RUN(a_sharing_handle_sums_in_narrower_windows);
    RUN(tile_binned_raises_its_groups_only_to_stage_its_copies);
    RUN(prepare_then_map_is_compute_and_describe_says_what_was_chosen);
    RUN(tile_places_divide_exactly_by_a_multiply_on_the_host);
    RUN(tile_places_divide_exactly_by_a_multiply_on_the_device);
    RUN(tile_binned_prefetches_only_where_copies_and_grid_outgrow_l2);
    RUN(tile_binned_prefetches_by_each_calls_atoms);
    RUN(tile_binned_maps_alike_with_its_copies_prefetched);
    RUN(tile_binned_gathers_by_warps_where_tiles_fit_a_window);
    RUN(tile_binned_gathers_by_warps_or_by_the_block_alike);
    return test_summary();
}
