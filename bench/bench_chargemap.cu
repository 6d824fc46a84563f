/* bench/bench_chargemap.cu - the charge-mapping benchmark (make bench).

   Part 0, what the goal rests on (research notes 7.5), on the GPU it runs on:
     a. global float atomics, 64 a stencil with the indices computed in the
        kernel, for 92,224 atoms in random and in cell-sorted order, into
        112 x 112 x 80 and 128^3 grids, a thread per atom and 4 lanes per
        atom: the ceiling of every rung that adds with global atomics;
     b. a bare tile kernel: 8^3 and 16^3 tiles summed in shared memory
        from their halo copies (built on the host), float atomicAdd (on
        sm_90 a compare-and-swap loop: LDS, FADD, ATOMS.CAST.SPIN, as the
        SASS of nvcc 13.0 shows) against a 32-bit integer add (native
        ATOMS.ADD): the ceiling of TILE_OWNER's map;
     c. the launch floor: an empty kernel back to back, three empty
        kernels in a CUDA graph, three chained with programmatic
        dependent launch (CUDA's cudaGridDependencySynchronize), and a
        cooperative kernel of 528 blocks with 0, 1 and 2 grid barriers
        (cooperative groups' grid.sync(), the primitive TILE_FUSED's own
        barrier stands for).
   Part 1, the ladder: every rung on the issue's systems (synthetic, 0.1
   atoms/A^3, charges uniform in [-1, 1] less their mean, random order):
     ApoA1-size  92,224 atoms, 108.86 x 108.86 x 77.76 A, 112x112x80 and 56x56x40;
     DMPC-size   68,484 atoms, 93.6 x 93.6 x 76.0 A, 64^3;
     1M atoms    1,000,000 atoms, 215.44 A cube, 216^3;
   Skeel's cubic, and B-spline order 4 on ApoA1 at 112x112x80.  Per rung:
     map    the rung's mapping on data already in its layout (grid zeroing
            for the atomic rungs, the kernel, the overflow pass), as the
            seed measures;
     e2e    elec_cuda_chargemap_compute from device float4 atoms in random
            order: placement or sort, zeroing, map, overflow; no host
            transfer;
     graph  the same compute captured once in a CUDA graph and replayed;
   in us, medians of batches of back-to-back calls between CUDA events
   (fewer calls for the slow rungs), and PPUS = atoms / us; e2e/graph PPUS
   against the seed's best K40m figure, 201.8.  For the tile-binned rungs
   map is stage 2 alone (TILE_BINNED) or the one kernel (TILE_FUSED).
   Part 2, the tile-binned rungs' knobs on ApoA1 and 1M atoms: tile edges
   and binning groups, TILE_BINNED's stages apart (--knobs: part 2 alone;
   --quick: part 0 and ApoA1 at 112x112x80 alone; --beyond: no part 2 and
   no seed rungs).  Part 3 (printed
   first): SPME's spread on bench_spme's systems by the rungs it could
   take, with its sums of q and q^2.  Goals on an H100: ApoA1
   112x112x80 e2e >= 10,000 PPUS (<= 9.2 us), map >= 20,000 PPUS; 1M on
   216^3 e2e >= 20,000 PPUS.  Record the output in bench/RESULTS.md.
   The map alone is timed through elec_cuda_chargemap_prepare / _map, the
   notes come from elec_cuda_chargemap_describe. */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "elec_cuda.cuh"
#include "tests/systems.h"
#include "tests/gpu.h"

#include <cooperative_groups.h>

#include <algorithm>
#include <vector>


#define SEED_K40M_BEST 201.8

static double median(std::vector<double> v) { return gpu_median(v.data(), (int)v.size()); }

/* Median us of one call of `step`: a timing call first sets the batch so
   that a batch takes about 2 ms (1 to 50 calls), then 15 batches. */
template <typename F>
static double time_us(cudaStream_t stream, F step) {
    cudaEvent_t start, stop;
    float ms;
    int batch;
    std::vector<double> times;
    CUDA_CHECK(cudaEventCreate(&start));
    CUDA_CHECK(cudaEventCreate(&stop));
    for (int i = 0; i < 3; i++) step();
    CUDA_CHECK(cudaEventRecord(start, stream));
    step();
    CUDA_CHECK(cudaEventRecord(stop, stream));
    CUDA_CHECK(cudaEventSynchronize(stop));
    CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
    batch = ms > 2.0f ? 1 : std::min(50, (int)(2.0f / std::max(ms, 1e-3f)));
    const int batches = ms > 50.0f ? 3 : 15;
    for (int r = 0; r < batches; r++) {
        CUDA_CHECK(cudaEventRecord(start, stream));
        for (int i = 0; i < batch; i++) step();
        CUDA_CHECK(cudaEventRecord(stop, stream));
        CUDA_CHECK(cudaEventSynchronize(stop));
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        times.push_back(1e3 * ms / batch);
    }
    CUDA_CHECK(cudaEventDestroy(start));
    CUDA_CHECK(cudaEventDestroy(stop));
    return median(times);
}

/* Synthetic atoms at 0.1 /A^3: positions uniform in the box, charges
   uniform in [-1, 1] less their mean. */
static std::vector<float4> atoms_in_box(size_t n, const double box[3], unsigned long long seed) {
    std::vector<float4> a(n);
    test_rng rng = test_rng_seeded(seed);
    double mean = 0.0;
    for (size_t i = 0; i < n; i++) {
        a[i].x = (float)(box[0] * test_uniform(&rng));
        a[i].y = (float)(box[1] * test_uniform(&rng));
        a[i].z = (float)(box[2] * test_uniform(&rng));
        a[i].w = (float)(2.0 * test_uniform(&rng) - 1.0);
        mean += a[i].w;
    }
    mean /= (double)n;
    for (size_t i = 0; i < n; i++) a[i].w = (float)(a[i].w - mean);
    return a;
}

/* The same atoms ordered by their grid cell (z, y, x) for a K-point grid. */
static std::vector<float4> cell_sorted(std::vector<float4> a, const double box[3], const int K[3]) {
    auto cell = [&](const float4 &p) {
        long c[3] = {(long)(p.x / box[0] * K[0]), (long)(p.y / box[1] * K[1]),
                     (long)(p.z / box[2] * K[2])};
        return c[0] + K[0] * (c[1] + (long)K[1] * c[2]);
    };
    std::stable_sort(a.begin(), a.end(),
                     [&](const float4 &p, const float4 &q) { return cell(p) < cell(q); });
    return a;
}

/* ------------------------------------------------ part 0: the ceilings */

/* a. 64 atomics an atom, indices from the atom's cell (a 4^3 stencil
   around it, wrapped), value q: a thread per atom, or 4 lanes per atom
   (lane = x offset, 16 atomics each). */
__global__ void ceiling_atomics(float *grid, const float4 *atoms, int n, int3 K, float3 scale,
                                int lanes) {
    const int thread = blockIdx.x * blockDim.x + threadIdx.x;
    const int atom = thread / lanes, lane = thread % lanes;
    if (atom >= n) return;
    const float4 a = atoms[atom];
    const int cx = min((int)(a.x * scale.x), K.x - 1), cy = min((int)(a.y * scale.y), K.y - 1),
              cz = min((int)(a.z * scale.z), K.z - 1);
    for (int dz = -1; dz <= 2; dz++)
        for (int dy = -1; dy <= 2; dy++)
            for (int dx = -1; dx <= 2; dx++) {
                if (lanes > 1 && dx + 1 != lane) continue;
                const int x = (cx + dx + K.x) % K.x, y = (cy + dy + K.y) % K.y,
                          z = (cz + dz + K.z) % K.z;
                atomicAdd(grid + x + K.x * (y + K.y * z), a.w);
            }
}

/* b. A bare tile kernel: block = tile of T^3 points; its copies (the atoms
   whose 4^3 stencil reaches it, as cells relative to the tile's corner)
   add q to the in-tile points of their stencil in shared memory, then the
   tile is stored once.  INT 1: 32-bit integer adds (native) of q * 2^20
   (stored scaled back);
   INT 2: q * 2^32 as a 64-bit integer added in two 32-bit halves (the
   exact form TILE_FUSED_FIXED uses where a tile's range allows). */
template <int INT>
__global__ void ceiling_tile(float *grid, const int4 *copies, const int *start, int3 K, int T,
                             int3 tiles) {
    extern __shared__ float tile_f[];
    int *tile_i = (int *)tile_f;
    const int id = blockIdx.x;
    const int t0[3] = {id % tiles.x * T, id / tiles.x % tiles.y * T, id / tiles.x / tiles.y * T};
    const int points = T * T * T;
    unsigned *high = (unsigned *)tile_f + points; /* INT 2 only: its shared memory is twice */
    for (int k = threadIdx.x; k < (INT == 2 ? 2 : 1) * points; k += blockDim.x) tile_f[k] = 0.0f;
    __syncthreads();
    for (int c = start[id] + threadIdx.x / 4; c < start[id + 1]; c += blockDim.x / 4) {
        const int4 r = copies[c];      /* cell relative to the tile, q bits */
        const int x = r.x - 1 + (int)(threadIdx.x % 4);
        if (x < 0 || x >= T) continue;
        const float q = __int_as_float(r.w);
        for (int dz = -1; dz <= 2; dz++) {
            const int z = r.z + dz;
            if (z < 0 || z >= T) continue;
            for (int dy = -1; dy <= 2; dy++) {
                const int y = r.y + dy;
                if (y < 0 || y >= T) continue;
                const int at = x + T * (y + T * z);
                if (INT == 2) {
                    elec__chargemap_split_add((unsigned *)tile_i + at, high + at,
                                              __double2ll_rn((double)q * 4294967296.0));
                } else if (INT == 1) {
                    atomicAdd(tile_i + at, (int)(q * 1048576.0f));
                } else {
                    atomicAdd(tile_f + at, q);
                }
            }
        }
    }
    __syncthreads();
    for (int k = threadIdx.x; k < points; k += blockDim.x) {
        const int x = k % T, y = k / T % T, z = k / T / T;
        float *out = grid + t0[0] + x + K.x * ((t0[1] + y) + K.y * (t0[2] + z));
        if constexpr (INT == 2) { /* the halves joined: exact in double */
            const long long sum = elec__chargemap_split_join((unsigned)tile_i[k], high[k]);
            *out = (float)((double)sum * (1.0 / 4294967296.0));
        } else if constexpr (INT == 1) {
            *out = (float)tile_i[k] * (1.0f / 1048576.0f);
        } else {
            *out = tile_f[k];
        }
    }
}

__global__ void empty_kernel(int *flag) {
    if (flag && threadIdx.x == 1024) *flag = 1;
}

/* An empty cooperative kernel with `barriers` grid barriers. */
__global__ void barrier_kernel(int barriers) {
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    for (int k = 0; k < barriers; k++) grid.sync();
}

/* An empty kernel in a chain of programmatic dependent launches: it waits
   for the one before, then lets the next one start. */
__global__ void empty_kernel_pdl(int *flag) {
    cudaGridDependencySynchronize();
    cudaTriggerProgrammaticLaunchCompletion();
    if (flag && threadIdx.x == 1024) *flag = 1;
}

/* empty_kernel_pdl launched to overlap the kernel before it. */
static cudaError_t launch_pdl(dim3 grid, dim3 block, cudaStream_t stream) {
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[0].val.programmaticStreamSerializationAllowed = 1;
    config.gridDim = grid;
    config.blockDim = block;
    config.stream = stream;
    config.attrs = attribute;
    config.numAttrs = 1;
    return cudaLaunchKernelEx(&config, empty_kernel_pdl, (int *)NULL);
}

static void part0(cudaStream_t stream) {
    const size_t n = 92224;
    const double box[3] = {108.86, 108.86, 77.76};
    std::vector<float4> random = atoms_in_box(n, box, 7);
    float4 *d_atoms;
    float *d_grid;
    CUDA_CHECK(cudaMalloc((void **)&d_atoms, n * sizeof(float4)));
    CUDA_CHECK(cudaMalloc((void **)&d_grid, (size_t)128 * 128 * 128 * sizeof(float)));
    printf("Part 0: the ceilings\n");
    printf("a. global float atomics, 64 a stencil, indices in the kernel, %zu atoms:\n", n);
    printf("   %-12s %-12s %-6s %9s %12s %9s\n", "grid", "atom order", "lanes", "time us",
           "atomics/s", "PPUS");
    static const int grids[2][3] = {{112, 112, 80}, {128, 128, 128}};
    for (int g = 0; g < 2; g++) {
        const int *K = grids[g];
        std::vector<float4> sorted = cell_sorted(random, box, K);
        for (int order = 0; order < 2; order++)
            for (int lanes = 1; lanes <= 4; lanes *= 4) {
                char name[32];
                CUDA_CHECK(cudaMemcpy(d_atoms, (order ? sorted : random).data(),
                                      n * sizeof(float4), cudaMemcpyHostToDevice));
                const int3 k3 = make_int3(K[0], K[1], K[2]);
                const float3 s3 = make_float3((float)(K[0] / box[0]), (float)(K[1] / box[1]),
                                              (float)(K[2] / box[2]));
                const double us = time_us(stream, [&] {
                    ceiling_atomics<<<(unsigned)((n * lanes + 255) / 256), 256, 0, stream>>>(
                        d_grid, d_atoms, (int)n, k3, s3, lanes);
                    CUDA_CHECK(cudaGetLastError());
                });
                snprintf(name, sizeof name, "%dx%dx%d", K[0], K[1], K[2]);
                printf("   %-12s %-12s %-6d %9.2f %12.3e %9.0f\n", name,
                       order ? "cell-sorted" : "random", lanes, us, 64.0 * n / (us * 1e-6),
                       n / us);
            }
    }

    printf("b. a bare tile kernel, 112x112x80, halo copies sorted by tile (4 lanes a copy):\n");
    printf("   %-6s %-10s %9s %9s %9s\n", "tile", "adds", "copies", "time us", "PPUS");
    {
        const int K[3] = {112, 112, 80};
        for (int T = 8; T <= 16; T *= 2) {
            const int tiles[3] = {K[0] / T, K[1] / T, K[2] / T};
            const int count = tiles[0] * tiles[1] * tiles[2];
            std::vector<std::vector<int4>> per(count);
            for (size_t i = 0; i < n; i++) {
                const int c[3] = {std::min((int)(random[i].x / box[0] * K[0]), K[0] - 1),
                                  std::min((int)(random[i].y / box[1] * K[1]), K[1] - 1),
                                  std::min((int)(random[i].z / box[2] * K[2]), K[2] - 1)};
                int lo[3], hi[3];
                for (int a = 0; a < 3; a++) { /* the tiles of points c-1 and c+2, wrapped */
                    lo[a] = ((c[a] - 1 + K[a]) % K[a]) / T;
                    hi[a] = ((c[a] + 2) % K[a]) / T;
                }
                for (int tz = 0; tz < 2; tz++)
                    for (int ty = 0; ty < 2; ty++)
                        for (int tx = 0; tx < 2; tx++) {
                            const int t[3] = {tx ? hi[0] : lo[0], ty ? hi[1] : lo[1],
                                              tz ? hi[2] : lo[2]};
                            if ((tx && hi[0] == lo[0]) || (ty && hi[1] == lo[1]) ||
                                (tz && hi[2] == lo[2]))
                                continue;
                            int rel[3];
                            for (int a = 0; a < 3; a++) {
                                rel[a] = c[a] - t[a] * T;
                                if (rel[a] < -2) rel[a] += K[a]; /* wrapped neighbours */
                                if (rel[a] > T + 1) rel[a] -= K[a];
                            }
                            int bits;
                            memcpy(&bits, &random[i].w, sizeof bits);
                            per[t[0] + tiles[0] * (t[1] + tiles[1] * t[2])].push_back(
                                make_int4(rel[0], rel[1], rel[2], bits));
                        }
            }
            std::vector<int4> copies;
            std::vector<int> start(count + 1, 0);
            for (int t = 0; t < count; t++) {
                start[t] = (int)copies.size();
                copies.insert(copies.end(), per[t].begin(), per[t].end());
            }
            start[count] = (int)copies.size();
            int4 *d_copies;
            int *d_start;
            CUDA_CHECK(cudaMalloc((void **)&d_copies, copies.size() * sizeof(int4)));
            CUDA_CHECK(cudaMalloc((void **)&d_start, start.size() * sizeof(int)));
            CUDA_CHECK(cudaMemcpy(d_copies, copies.data(), copies.size() * sizeof(int4),
                                  cudaMemcpyHostToDevice));
            CUDA_CHECK(cudaMemcpy(d_start, start.data(), start.size() * sizeof(int),
                                  cudaMemcpyHostToDevice));
            const size_t shared = (size_t)T * T * T * sizeof(float);
            for (int integer = 0; integer < 3; integer++) {
                const int3 k3 = make_int3(K[0], K[1], K[2]), t3 = make_int3(tiles[0], tiles[1],
                                                                            tiles[2]);
                const double us = time_us(stream, [&] {
                    if (integer == 2)
                        ceiling_tile<2><<<count, 256, 2 * shared, stream>>>(d_grid, d_copies,
                                                                            d_start, k3, T, t3);
                    else if (integer)
                        ceiling_tile<1><<<count, 256, shared, stream>>>(d_grid, d_copies, d_start,
                                                                        k3, T, t3);
                    else
                        ceiling_tile<0><<<count, 256, shared, stream>>>(d_grid, d_copies, d_start,
                                                                        k3, T, t3);
                    CUDA_CHECK(cudaGetLastError());
                });
                static const char *adds[3] = {"float CAS", "int32", "int32 x 2"};
                printf("   %-6d %-10s %9zu %9.2f %9.0f\n", T, adds[integer],
                       copies.size(), us, n / us);
            }
            CUDA_CHECK(cudaFree(d_copies));
            CUDA_CHECK(cudaFree(d_start));
        }
    }

    printf("c. the launch floor:\n");
    {
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        const double one = time_us(stream, [&] {
            empty_kernel<<<1, 32, 0, stream>>>(NULL);
            CUDA_CHECK(cudaGetLastError());
        });
        const double wide = time_us(stream, [&] {
            empty_kernel<<<132 * 4, 256, 0, stream>>>(NULL);
            CUDA_CHECK(cudaGetLastError());
        });
        CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
        for (int k = 0; k < 3; k++) empty_kernel<<<132 * 4, 256, 0, stream>>>(NULL);
        CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
        CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
        const double graphed = time_us(stream, [&] { CUDA_CHECK(cudaGraphLaunch(exec, stream)); });
        const double pdl = time_us(stream, [&] {
            empty_kernel<<<132 * 4, 256, 0, stream>>>(NULL);
            CUDA_CHECK(cudaGetLastError());
            for (int k = 0; k < 2; k++)
                CUDA_CHECK(launch_pdl(dim3(132 * 4), dim3(256), stream));
        });
        double coop[3];
        for (int barriers = 0; barriers < 3; barriers++)
            coop[barriers] = time_us(stream, [&] {
                void *args[1] = {&barriers};
                CUDA_CHECK(cudaLaunchCooperativeKernel((const void *)barrier_kernel,
                                                       dim3(132 * 4), dim3(256), args, 0,
                                                       stream));
            });
        printf("   empty kernel, 1 block, back to back      %7.2f us\n", one);
        printf("   empty kernel, 528 blocks, back to back   %7.2f us\n", wide);
        printf("   3 empty kernels (528 blocks) in a graph  %7.2f us\n", graphed);
        printf("   3 empty kernels chained by PDL           %7.2f us\n", pdl);
        printf("   cooperative kernel (528 blocks), 0/1/2 grid barriers  %.2f / %.2f / %.2f us\n",
               coop[0], coop[1], coop[2]);
        CUDA_CHECK(cudaGraphExecDestroy(exec));
        CUDA_CHECK(cudaGraphDestroy(graph));
    }
    printf("d. shared-memory float atomicAdd on sm_90: LDS + FADD + ATOMS.CAST.SPIN (a CAS\n"
           "   loop; nvdisasm of nvcc 13.0 output); 32-bit integer: ATOMS.ADD; global float:\n"
           "   REDG.E.ADD.F32\n\n");
    CUDA_CHECK(cudaFree(d_atoms));
    CUDA_CHECK(cudaFree(d_grid));
}

/* -------------------------------------------------- part 1: the ladder */

typedef struct bench_system {
    const char *name;
    size_t atoms;
    double box[3];
    int grid[3];
} bench_system;

/* A system's atoms (atoms_in_box with `seed`) on the device, its periodic
   lattice and a grid for it. */
typedef struct bench_data {
    std::vector<float4> host;
    elec_lattice lattice;
    float4 *d_xyzq;
    float *d_grid;
} bench_data;

static void bench_data_make(const bench_system *sys, unsigned long long seed, bench_data *d) {
    elec_box box;
    d->host = atoms_in_box(sys->atoms, sys->box, seed);
    for (int a = 0; a < 3; a++) box.length[a] = sys->box[a];
    CHECK_ELEC(elec_chargemap_periodic_lattice(&box, sys->grid, 0.0, &d->lattice, err));
    CUDA_CHECK(cudaMalloc((void **)&d->d_xyzq, sys->atoms * sizeof(float4)));
    CUDA_CHECK(cudaMalloc((void **)&d->d_grid, elec_lattice_size(&d->lattice) * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(d->d_xyzq, d->host.data(), sys->atoms * sizeof(float4),
                          cudaMemcpyHostToDevice));
}

static void bench_data_free(bench_data *d) {
    CUDA_CHECK(cudaFree(d->d_xyzq));
    CUDA_CHECK(cudaFree(d->d_grid));
}

static void ladder(const bench_system *sys, elec_chargemap_basis basis, cudaStream_t stream,
                   int with_seed_rungs) {
    const size_t n = sys->atoms;
    bench_data data;
    bench_data_make(sys, 2024, &data);
    const std::vector<float4> &host = data.host;
    const elec_lattice &lattice = data.lattice;
    float4 *d_xyzq = data.d_xyzq;
    float *d_grid = data.d_grid;
    printf("%s: %zu atoms, %dx%dx%d, %s order 4\n", sys->name, n, sys->grid[0], sys->grid[1],
           sys->grid[2], basis == ELEC_CHARGEMAP_SKEEL ? "Skeel" : "B-spline");
    printf("  %-22s %9s %9s %9s | %9s %9s %9s | %8s  %s\n", "rung", "map us", "e2e us",
           "graph us", "PPUS map", "PPUS e2e", "PPUS grph", "vs K40m", "notes");
    for (int v = 1; v < ELEC_CHARGEMAP_VARIANT_COUNT; v++) {
        const elec_chargemap_variant variant = (elec_chargemap_variant)v;
        const int seed_rung = v >= ELEC_CHARGEMAP_PC_BINNED && v <= ELEC_CHARGEMAP_GC_REDUCED_READS;
        elec_chargemap_params p = {0};
        elec_cuda_chargemap_handle *h = NULL;
        elec_error e;
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        char notes[160] = "";
        if (seed_rung && !with_seed_rungs) continue;
        p.basis = basis;
        p.periodic = 1;
        p.variant = variant;
        if (elec_cuda_chargemap_create(&lattice, n, &p, -1, &h, &e) != ELEC_OK) {
            printf("  %-22s skipped: %s\n", elec_chargemap_variant_name(variant), e.message);
            continue;
        }
        CHECK_ELEC(elec_cuda_chargemap_prepare(h, d_xyzq, n, stream, err));
        const double map = time_us(stream, [&] {
            CHECK_ELEC(elec_cuda_chargemap_map(h, d_grid, stream, err));
        });
        const double e2e = time_us(stream, [&] {
            CHECK_ELEC(elec_cuda_chargemap_compute(h, d_xyzq, n, d_grid, stream, err));
        });
        CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
        CHECK_ELEC(elec_cuda_chargemap_compute(h, d_xyzq, n, d_grid, stream, err));
        CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
        CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
        const double graphed = time_us(stream, [&] { CUDA_CHECK(cudaGraphLaunch(exec, stream)); });
        elec_cuda_chargemap_info info;
        CHECK_ELEC(elec_cuda_chargemap_describe(h, &info, err));
        {
            size_t overflow = 0;
            CHECK_ELEC(elec_cuda_chargemap_finish(h, &overflow, stream, err));
            if (info.bin_slots)
                snprintf(notes, sizeof notes, "%d slots, %zu overflow", info.bin_slots, overflow);
            if (info.sorted_tiles)
                snprintf(notes, sizeof notes, "tiles %dx%dx%d (%d)", info.sorted_tile[0],
                         info.sorted_tile[1], info.sorted_tile[2], info.sorted_tiles);
            if (info.band_tiles)
                snprintf(notes, sizeof notes, "tiles %dx%dx%d (%d), %d groups%s%s%s%s",
                         info.band_tile[0], info.band_tile[1], info.band_tile[2],
                         info.band_tiles, info.band_groups, info.band_staged ? ", staged" : "",
                         info.band_columns  ? ", columns"
                         : info.band_tensor ? ", tensor cores"
                                            : "",
                         info.band_prefetch ? ", L1 prefetch" : "",
                         variant == ELEC_CHARGEMAP_TILE_BINNED ? ""
                         : info.one_kernel ? "; one kernel: map = e2e" : "; two kernels");
        }
        if (variant == ELEC_CHARGEMAP_TILE_OWNER && info.pdl) {
            /* the same graph from a handle without programmatic dependent
               launch */
            elec_cuda_chargemap_handle *plain_handle = NULL;
            cudaGraph_t plain;
            cudaGraphExec_t plain_exec;
            elec_chargemap_params q = p;
            q.no_pdl = 1;
            CHECK_ELEC(elec_cuda_chargemap_create(&lattice, n, &q, -1, &plain_handle, err));
            CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
            CHECK_ELEC(elec_cuda_chargemap_compute(plain_handle, d_xyzq, n, d_grid, stream, err));
            CUDA_CHECK(cudaStreamEndCapture(stream, &plain));
            CUDA_CHECK(cudaGraphInstantiate(&plain_exec, plain, 0));
            const double no_pdl = time_us(stream, [&] {
                CUDA_CHECK(cudaGraphLaunch(plain_exec, stream));
            });
            size_t used = strlen(notes);
            snprintf(notes + used, sizeof notes - used, "; graph without PDL %.2f us", no_pdl);
            CUDA_CHECK(cudaGraphExecDestroy(plain_exec));
            CUDA_CHECK(cudaGraphDestroy(plain));
            elec_cuda_chargemap_destroy(plain_handle);
        }
        printf("  %-22s %9.2f %9.2f %9.2f | %9.0f %9.0f %9.0f | %7.1fx  %s\n",
               elec_chargemap_variant_name(variant), map, e2e, graphed, n / map, n / e2e,
               n / graphed, n / std::min(e2e, graphed) / SEED_K40M_BEST, notes);
        CUDA_CHECK(cudaGraphExecDestroy(exec));
        CUDA_CHECK(cudaGraphDestroy(graph));
        elec_cuda_chargemap_destroy(h);
    }
    /* the seed's baseline on atoms in cell order (real files are partly
       ordered by residue) */
    {
        elec_chargemap_params p = {0};
        elec_cuda_chargemap_handle *h = NULL;
        std::vector<float4> sorted = cell_sorted(host, sys->box, sys->grid);
        CUDA_CHECK(cudaMemcpy(d_xyzq, sorted.data(), n * sizeof(float4), cudaMemcpyHostToDevice));
        p.basis = basis;
        p.periodic = 1;
        p.variant = ELEC_CHARGEMAP_PC_BASELINE;
        CHECK_ELEC(elec_cuda_chargemap_create(&lattice, n, &p, -1, &h, err));
        const double e2e = time_us(stream, [&] {
            CHECK_ELEC(elec_cuda_chargemap_compute(h, d_xyzq, n, d_grid, stream, err));
        });
        printf("  %-22s %9s %9.2f %9s | %9s %9.0f %9s |           atoms in cell order\n",
               "pc-baseline, sorted", "", e2e, "", "", n / e2e, "");
        elec_cuda_chargemap_destroy(h);
    }
    printf("\n");
    bench_data_free(&data);
}

/* ------------------------------- part 2: the tile-binned rungs' knobs */

/* The tile-binned rungs by tile edges (the caller's params.tile; 0 = the
   default choice) and binning groups (four, two and one blocks an SM:
   TILE_FUSED_FIXED's default, and TILE_BINNED's and TILE_FUSED's):
   TILE_BINNED's stages apart (bin: stage 1, sum: stage 2) and each rung
   end to end, in us. */
static void knobs(const bench_system *sys, cudaStream_t stream) {
    static const int shapes[6][3] = {{0, 0, 0}, {16, 16, 16}, {16, 16, 8},
                                     {16, 8, 8}, {8, 8, 8},   {32, 16, 8}};
    const size_t n = sys->atoms;
    bench_data data;
    bench_data_make(sys, 2024, &data);
    const elec_lattice &lattice = data.lattice;
    float4 *d_xyzq = data.d_xyzq;
    float *d_grid = data.d_grid;
    int sm_count = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount, 0));
    printf("%s: %zu atoms, %dx%dx%d, Skeel order 4: the tile-binned rungs' knobs (us)\n",
           sys->name, n, sys->grid[0], sys->grid[1], sys->grid[2]);
    printf("  %-12s %-14s %7s %7s | %8s %8s %8s | %9s %9s\n", "tile asked", "tiles", "count",
           "groups", "bin", "sum", "binned", "fused", "fixed");
    for (int s = 0; s < 6; s++) {
        char asked[32], got[32] = "?";
        snprintf(asked, sizeof asked, "%dx%dx%d", shapes[s][0], shapes[s][1], shapes[s][2]);
        for (int per_sm = 4; per_sm >= 1; per_sm /= 2) {
            elec_cuda_chargemap_handle *h[3] = {NULL, NULL, NULL};
            elec_cuda_chargemap_info info;
            const char *why = NULL;
            elec_error e;
            double us[5];
            for (int r = 0; r < 3 && !why; r++) {
                elec_chargemap_params p = {0};
                p.periodic = 1;
                p.variant = (elec_chargemap_variant)(ELEC_CHARGEMAP_TILE_BINNED + r);
                p.tile_groups = per_sm * sm_count;
                for (int a = 0; a < 3; a++) p.tile[a] = shapes[s][a];
                if (elec_cuda_chargemap_create(&lattice, n, &p, -1, &h[r], &e) != ELEC_OK)
                    why = e.message;
            }
            if (why) {
                printf("  %-12s skipped: %s\n", asked, why);
                for (int r = 0; r < 3; r++) elec_cuda_chargemap_destroy(h[r]);
                break;
            }
            CHECK_ELEC(elec_cuda_chargemap_describe(h[0], &info, err));
            snprintf(got, sizeof got, "%dx%dx%d", info.band_tiles_along[0],
                     info.band_tiles_along[1], info.band_tiles_along[2]);
            us[0] = time_us(stream, [&] {
                CHECK_ELEC(elec_cuda_chargemap_prepare(h[0], d_xyzq, n, stream, err));
            });
            us[1] = time_us(stream, [&] {
                CHECK_ELEC(elec_cuda_chargemap_map(h[0], d_grid, stream, err));
            });
            for (int r = 0; r < 3; r++)
                us[2 + r] = time_us(stream, [&] {
                    CHECK_ELEC(elec_cuda_chargemap_compute(h[r], d_xyzq, n, d_grid, stream, err));
                });
            printf("  %-12s %-14s %7d %7d | %8.2f %8.2f %8.2f | %9.2f %9.2f\n", asked, got,
                   info.band_tiles, info.band_groups, us[0], us[1], us[2], us[3], us[4]);
            for (int r = 0; r < 3; r++) elec_cuda_chargemap_destroy(h[r]);
        }
    }
    printf("\n");
    bench_data_free(&data);
}

/* ------------------------------------------ part 3: SPME's spreading */

/* SPME's spread as bench_spme's spread column measures it (B-spline order
   4 on its periodic grid, atoms at random, sums of q and q^2 on), by the
   rungs it could take: end to end and from a CUDA graph, in us.  SPME
   spread before the charge map (pc-lanes' kernel): DHFR 20, ApoA1 44, 1M
   370 us on an H100 (bench/RESULTS.md). */
static void spme_spread(cudaStream_t stream) {
    static const bench_system systems[3] = {
        {"DHFR-size", 23558, {62.23, 62.23, 62.23}, {64, 64, 64}},
        {"ApoA1-size", 92224, {108.86, 108.86, 77.76}, {112, 112, 80}},
        {"1M atoms", 1000000, {215.44, 215.44, 215.44}, {216, 216, 216}},
    };
    static const elec_chargemap_variant rungs[4] = {
        ELEC_CHARGEMAP_PC_LANES, ELEC_CHARGEMAP_TILE_BINNED, ELEC_CHARGEMAP_TILE_FUSED,
        ELEC_CHARGEMAP_TILE_FUSED_FIXED};
    double *d_sums;
    CUDA_CHECK(cudaMalloc((void **)&d_sums, 2 * sizeof(double))); /* sum q, sum q^2 */
    printf("  %-12s %8s %-12s", "system", "atoms", "grid");
    for (int r = 0; r < 4; r++) printf(" %17s", elec_chargemap_variant_name(rungs[r]));
    printf("\n  %-12s %8s %-12s", "", "", "");
    for (int r = 0; r < 4; r++) printf(" %8s %8s", "e2e", "graph");
    printf("\n");
    for (int k = 0; k < 3; k++) {
        const bench_system *sys = &systems[k];
        const size_t n = sys->atoms;
        bench_data data;
        char grid[32];
        bench_data_make(sys, 2024 + k, &data);
        snprintf(grid, sizeof grid, "%dx%dx%d", sys->grid[0], sys->grid[1], sys->grid[2]);
        printf("  %-12s %8zu %-12s", sys->name, n, grid);
        for (int r = 0; r < 4; r++) {
            elec_chargemap_params p = {0};
            elec_cuda_chargemap_handle *h = NULL;
            cudaGraph_t graph;
            cudaGraphExec_t exec;
            p.basis = ELEC_CHARGEMAP_BSPLINE;
            p.periodic = 1;
            p.variant = rungs[r];
            CHECK_ELEC(elec_cuda_chargemap_create(&data.lattice, n, &p, -1, &h, err));
            CHECK_ELEC(elec_cuda_chargemap_sums(h, d_sums, err));
            const double e2e = time_us(stream, [&] {
                CHECK_ELEC(
                    elec_cuda_chargemap_compute(h, data.d_xyzq, n, data.d_grid, stream, err));
            });
            CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
            CHECK_ELEC(elec_cuda_chargemap_compute(h, data.d_xyzq, n, data.d_grid, stream, err));
            CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
            CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
            const double graphed =
                time_us(stream, [&] { CUDA_CHECK(cudaGraphLaunch(exec, stream)); });
            printf(" %8.2f %8.2f", e2e, graphed);
            CUDA_CHECK(cudaGraphExecDestroy(exec));
            CUDA_CHECK(cudaGraphDestroy(graph));
            elec_cuda_chargemap_destroy(h);
        }
        printf("\n");
        bench_data_free(&data);
    }
    printf("\n");
    CUDA_CHECK(cudaFree(d_sums));
}

int main(int argc, char **argv) {
    static const bench_system systems[4] = {
        {"ApoA1-size", 92224, {108.86, 108.86, 77.76}, {112, 112, 80}},
        {"ApoA1-size", 92224, {108.86, 108.86, 77.76}, {56, 56, 40}},
        {"DMPC-size", 68484, {93.6, 93.6, 76.0}, {64, 64, 64}},
        {"1M atoms", 1000000, {215.44, 215.44, 215.44}, {216, 216, 216}},
    };
    const int quick = argc > 1 && strcmp(argv[1], "--quick") == 0; /* ApoA1 only */
    const int knobs_only = argc > 1 && strcmp(argv[1], "--knobs") == 0; /* part 2 alone */
    /* --beyond: parts 3, 0 and 1 without the seed's rungs, no part 2 */
    const int beyond = argc > 1 && strcmp(argv[1], "--beyond") == 0;
    char name[256];
    cudaStream_t stream;
    if (elec_cuda_device_count() == 0) {
        printf("bench_chargemap: no CUDA device here; nothing to measure\n");
        return 0;
    }
    CHECK_ELEC(elec_cuda_device_name(0, name, sizeof name, err));
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    printf("elec charge-mapping benchmark on %s\n\n", name);
    if (knobs_only) {
        knobs(&systems[0], stream);
        knobs(&systems[3], stream);
        CUDA_CHECK(cudaStreamDestroy(stream));
        return 0;
    }
    printf("Part 3 first: SPME's spreading (B-spline order 4, periodic, sums on), us\n");
    spme_spread(stream);
    part0(stream);
    printf("Part 1: the ladder (us per call, medians; PPUS = atoms per us; vs K40m = the\n"
           "best of e2e and graph over the seed's 201.8 PPUS)\n\n");
    ladder(&systems[0], ELEC_CHARGEMAP_SKEEL, stream, !beyond);
    ladder(&systems[0], ELEC_CHARGEMAP_BSPLINE, stream, !beyond);
    if (!quick) {
        ladder(&systems[1], ELEC_CHARGEMAP_SKEEL, stream, !beyond);
        ladder(&systems[2], ELEC_CHARGEMAP_SKEEL, stream, !beyond);
        ladder(&systems[3], ELEC_CHARGEMAP_SKEEL, stream, !beyond);
    }
    if (!quick && !beyond) {
        printf("Part 2: the tile-binned rungs' knobs\n\n");
        knobs(&systems[0], stream);
        knobs(&systems[3], stream);
    }
    printf("goals (H100): ApoA1 112x112x80 e2e >= 10,000 PPUS (<= 9.2 us) and map >= 20,000\n"
           "PPUS; 1M atoms on 216^3 e2e >= 20,000 PPUS (<= 50 us).\n");
    CUDA_CHECK(cudaStreamDestroy(stream));
    return 0;
}
