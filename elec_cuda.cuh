/* elec_cuda.cuh - molecular electrostatics on NVIDIA GPUs.  CUDA C++.

   The kernels of elec's methods as inline device code, and host launchers
   that take the same atoms, lattices and parameters as elec_cpu.h.  Include
   it from a .cu file compiled by nvcc; in exactly one of them
       #define ELEC_CUDA_IMPLEMENTATION     (or ELEC_ALL_IMPLEMENTATION)
       #include "elec_cuda.cuh"
   Build for the GPU you run on (nvcc -arch=sm_90 for H100/H200).

   Example: a DCS map spread over every GPU of the machine.
       elec_dcs_params p = {0};
       p.gpus.count = ELEC_ALL_GPUS;        slices go round-robin over them
       elec_status s = elec_cuda_dcs_map(&atoms, &lattice, &p, map, &err);
       if (s == ELEC_ERR_NO_DEVICE) ...      no GPU: use elec_cpu_dcs_map

   Host arrays in, host arrays out: each call uploads the atoms, computes and
   copies the result back.  Kernels compute in float, with coordinates taken
   relative to the centre of the lattice or of the points, so that float
   keeps its precision far from the coordinate origin; tests hold every path
   to the double-precision CPU reference.

   Calls are independent (each has its own streams and buffers), with one
   exception: the constant-memory rungs (const, unroll4, unroll8-coalesced)
   share one constant buffer per device, so two of them must not run at once
   on the same device from different host threads.

   The DCS optimisation ladder (params.variant), after seeds 000 and 003:
     simple            one lattice point per thread, atoms read from global
                       memory: every thread re-reads every atom.
     const             atoms in constant memory (broadcast to a warp in one
                       read), 4000 at a time, with (z_slice - z_atom)^2
                       precomputed per slice: 3 fewer operations per pair.
     unroll4           each thread computes 4 neighbouring points of a row
                       (unroll-and-jam): dy^2 + dz^2 is computed once per
                       atom and reused 4 times.
     unroll8-coalesced 8 points per thread, a warp's threads on consecutive
                       points so every store is one coalesced transaction;
                       the map is read and written once per chunk of atoms.
     volume            the unroll-8 kernel over the whole volume in one
                       launch per chunk, so that small slices still fill the
                       GPU, with 8, 16 or 32 threads per block row to pad
                       rows least, and atoms read through shared-memory
                       tiles: on an H100 constant memory stalls once many
                       warps, each at its own atom, miss in its small cache.
     hybrid-rsqrt      (default) 32 points per thread, 4 of whose 32
                       reciprocal square roots are computed on the FMA pipe
                       instead of the special-function unit (SFU), whose 16
                       results per SM per clock bound every rung above: the
                       schedulers have issue slots to spare for the FMA pipe.
                       On an H100 it passes the SFU's own rsqrt rate
                       (bench/RESULTS.md).
   Atoms on a lattice point: the lattice kernels carry no test for r = 0;
   points within ELEC_COINCIDENT_DISTANCE of an atom are found on the host
   and recomputed by the points kernel, which applies the rule (elec.h). */
#ifndef ELEC_CUDA_CUH
#define ELEC_CUDA_CUH

#include "elec.h"
/* float4 and cudaStream_t in the SPME device-pointer API below. */
#include <cuda_runtime.h>

#ifdef ELEC_ALL_IMPLEMENTATION
#ifndef ELEC_CUDA_IMPLEMENTATION
#define ELEC_CUDA_IMPLEMENTATION
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices; 0 when there is no GPU or no driver. */
ELEC_API int elec_cuda_device_count(void);
/* The name of a device ("NVIDIA H100 80GB HBM3"), for summaries. */
ELEC_API elec_status elec_cuda_device_name(int device, char *name,
                                           size_t size, elec_error *err);

/* DCS map: as elec_cpu_dcs_map, on the GPUs of params->gpus. */
ELEC_API elec_status elec_cuda_dcs_map(const elec_atoms *atoms,
                                       const elec_lattice *lattice,
                                       const elec_dcs_params *params,
                                       float *map, elec_error *err);
/* DCS at arbitrary points (xyz interleaved), on the first GPU of the set. */
ELEC_API elec_status elec_cuda_dcs_points(const elec_atoms *atoms,
                                          const double *points,
                                          size_t point_count,
                                          const elec_dcs_params *params,
                                          float *potential, elec_error *err);
/* MDH at arbitrary points (atoms need radii), after seed 000 figure 2: tiles
   of atoms staged through shared memory. */
ELEC_API elec_status elec_cuda_mdh_points(const elec_atoms *atoms,
                                          const double *points,
                                          size_t point_count,
                                          const elec_mdh_params *params,
                                          float *potential, elec_error *err);
/* Cutoff map on the GPU (seed 000 figures 7-9): as elec_cpu_cutoff_map, on
   the first GPU of params->gpus.  Atoms go into fixed-depth bins of
   params->bin_length (elec_bins_build); each block of 8x8x8 lattice points
   streams the bins of its neighbourhood through shared memory.  Atoms that
   overflow their bin are binned again into further layers (4 in all at
   most, fewer once 256 or fewer atoms are left over), each a kernel pass
   adding to the map; those left over are summed on the CPU (in double)
   while the GPU works, as in seed 000.  ELEC_ERR_UNSUPPORTED when bins are
   so small against the cutoff that a block's neighbourhood is too large
   (use longer bins). */
ELEC_API elec_status elec_cuda_cutoff_map(const elec_atoms *atoms,
                                          const elec_lattice *lattice,
                                          const elec_cutoff_params *params,
                                          float *map, elec_error *err);

/* Multilevel summation map on the GPU (elec.h, elec_msm_params; seed 002):
   as elec_cpu_msm_map, every stage on the first GPU of params->gpus, in
   float (the CPU path is double): the short range by the cutoff kernel,
   the lattice hierarchy by a kernel per stage and level.  Where
   params->times is given, each stage's seconds come back in it. */
ELEC_API elec_status elec_cuda_msm_map(const elec_atoms *atoms,
                                       const elec_lattice *lattice,
                                       const elec_msm_params *params,
                                       float *map, elec_error *err);
/* MSM energy and forces on the GPU: elec_cpu_msm_energy's method and
   output (non-periodic; scale * sum_{i<j} q_i q_j / r_ij and -dE/dr, 3 per
   atom, forces may be NULL), every stage on the first GPU of
   params->gpus in float, potentials summed on the host in double.  Atoms
   within ELEC_COINCIDENT_DISTANCE of each other are an error. */
ELEC_API elec_status elec_cuda_msm_energy(const elec_atoms *atoms,
                                          const elec_msm_params *params,
                                          double *energy, double *forces,
                                          elec_error *err);

/* Smooth particle mesh Ewald on one GPU (elec.h, elec_spme_params; Essmann
   et al. 1995, on GPUs after Harvey and De Fabritiis 2009): the terms,
   forces and potentials of elec_cpu_spme, in float with energies summed in
   double.  Charges are spread on the grid by B-splines (params.spread:
   atomics, or the seed's gather with per-cell slots), transformed by
   cuFFT, multiplied by the influence function and transformed back; the
   real-space sum runs over a cell list built on the device, concurrently
   with the reciprocal part.

   An MD code keeps a handle and its coordinates on the GPU:
       elec_cuda_spme_handle *h;
       elec_cuda_spme_create(&box, &atoms, &p, -1, &h, &err); plans, buffers
       each step:
           elec_cuda_spme_compute(h, d_xyzq, n, d_forces, stream, &err);
       elec_cuda_spme_energy(h, &terms, stream, &err);      when wanted
       elec_cuda_spme_destroy(h);
   compute only enqueues work on `stream` (no allocation, no host transfer,
   no synchronisation), so it can be captured in a CUDA graph.  One compute
   at a time per handle: the handle's buffers are its scratch.  Two atoms
   closer than ELEC_COINCIDENT_DISTANCE that are not an excluded pair have
   infinite energy: compute leaves the pair out, and the next
   elec_cuda_spme_energy (and the one-shot elec_cuda_spme) returns
   ELEC_ERR_INVALID_ARG, as the CPU paths do. */
typedef struct elec_cuda_spme_handle elec_cuda_spme_handle;

/* Plans, grids, the influence function and buffers for the atoms of a
   host view in this box on `device` (-1 = the current device): its count is
   the most a compute may take, and its charges and positions (a starting
   configuration) are what params are resolved with, by the very
   elec_spme_params_resolve of the CPU (the tolerance chooses alpha, cutoff,
   order and grid here, once).  The excluded pairs are copied (the caller's
   array may go).  Positions arrive in float at compute, so the floor is
   float arithmetic's: a tolerance under 1.5 ELEC_SPME_GPU_FLOAT_FLOOR is
   refused (ELEC_ERR_INVALID_ARG).  ELEC_ERR_NO_DEVICE without a GPU. */
ELEC_API elec_status elec_cuda_spme_create(const elec_box *box,
                                           const elec_atoms *atoms,
                                           const elec_spme_params *params,
                                           int device, elec_cuda_spme_handle **out,
                                           elec_error *err);
/* The parameters a handle computes with (resolved, estimate included). */
ELEC_API elec_status elec_cuda_spme_params(const elec_cuda_spme_handle *h,
                                           elec_spme_params *resolved,
                                           elec_error *err);
/* One evaluation, asynchronous in `stream`: d_xyzq are n float4 records
   (x, y, z, q) in A and e, anywhere (wrapped on the device, in float: keep
   them within a few box lengths, as MD codes do, or wrap them yourself;
   each box length of offset costs ~1e-7 of the box in precision), indexed as the
   excluded pairs are (pairs naming an atom at or past n are left out); d_forces receives 3n floats, interleaved, -dE/dr
   times scale (NULL = energy only).  The energy terms are summed in the
   handle (zeroed at the start of each compute): elec_cuda_spme_energy. */
ELEC_API elec_status elec_cuda_spme_compute(elec_cuda_spme_handle *h,
                                            const float4 *d_xyzq, size_t n,
                                            float *d_forces,
                                            cudaStream_t stream,
                                            elec_error *err);
/* The energy terms of the last compute (times scale); synchronises
   `stream`. */
ELEC_API elec_status elec_cuda_spme_energy(elec_cuda_spme_handle *h,
                                           elec_ewald_terms *terms,
                                           cudaStream_t stream,
                                           elec_error *err);
ELEC_API void elec_cuda_spme_destroy(elec_cuda_spme_handle *h);
/* Host arrays in and out, with the signature of elec_cpu_ewald: create,
   upload (positions wrapped into the box in double, then rounded to
   float), compute, download, destroy.  forces (3n, -dE/dr) and potential
   (n, dE/dq_i) may be NULL.  Rounding the positions is part of this path's
   error: a tolerance under 1.5 times the estimate's float_floor (which
   counts it, for these atoms) is refused. */
ELEC_API elec_status elec_cuda_spme(const elec_atoms *atoms,
                                    const elec_box *box,
                                    const elec_spme_params *params,
                                    elec_ewald_terms *energy, double *forces,
                                    double *potential, elec_error *err);

#ifdef __cplusplus
}
#endif
#endif /* ELEC_CUDA_CUH */

/* ====================================================== implementation */
#ifdef ELEC_CUDA_IMPLEMENTATION
#ifndef ELEC_CUDA_IMPLEMENTATION_DONE
#define ELEC_CUDA_IMPLEMENTATION_DONE

#include <cuda_runtime.h>

/* --------------------------------------------------------- device math */

/* Reciprocal square root on the special-function unit: rsqrt.approx with
   flush-to-zero is the bare MUFU.RSQ (relative error < 2^-22.9).  rsqrtf()
   compiled without -ftz adds denormal handling around it. */
__device__ __forceinline__ float elec__rsqrt_sfu(float x) {
    float y;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* 2^x on the special-function unit (MUFU.EX2). */
__device__ __forceinline__ float elec__exp2_sfu(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* Reciprocal square root on the FMA pipe, for x > 0.  A bit-level first
   guess (halving the exponent: 0x5f3759df - bits/2, relative error up to
   3.4e-2), one Newton step y (3 - x y^2)/2 (error 1.8e-3), one Halley step
   y (1 + e/2 + 3e^2/8) with e = 1 - x y^2 (error ~1e-8, under float
   rounding): 11 integer and FP32 instructions in place of one MUFU.RSQ.
   Written for host and device so that tests can check its error on the
   CPU. */
ELEC_HD static inline float elec__rsqrt_fma_pipe(float x) {
    float y, half_x = 0.5f * x, e;
#ifdef __CUDA_ARCH__
    y = __int_as_float(0x5f3759df - (__float_as_int(x) >> 1));
#else
    unsigned int bits;
    memcpy(&bits, &x, sizeof bits);
    bits = 0x5f3759dfu - (bits >> 1);
    memcpy(&y, &bits, sizeof y);
#endif
    y = y * fmaf(-half_x, y * y, 1.5f);
    e = fmaf(-x * y, y, 1.0f);
    return fmaf(y * e, fmaf(e, 0.375f, 0.5f), y);
}

/* ----------------------------------------------------------- error checks */

/* Every CUDA call goes through ELEC__CUDA_TRY: a failure fills err with the
   call and CUDA's message, sets status and jumps to the function's cleanup
   label.  After each launch, ELEC__CUDA_TRY(cudaGetLastError()). */
#define ELEC__CUDA_TRY(call)                                                 \
    do {                                                                     \
        cudaError_t elec__e = (call);                                        \
        if (elec__e != cudaSuccess) {                                        \
            status = elec__cuda_fail(err, elec__e, #call, __LINE__);         \
            goto cleanup;                                                    \
        }                                                                    \
    } while (0)

static elec_status elec__cuda_fail(elec_error *err, cudaError_t e,
                                   const char *call, int line) {
    elec_status s = e == cudaErrorMemoryAllocation ? ELEC_ERR_NO_MEMORY
                                                   : ELEC_ERR_CUDA;
    (void)cudaGetLastError(); /* clear a sticky launch error */
    return elec__fail(err, s, 0, "%s failed (elec_cuda.cuh:%d): %s", call,
                      line, cudaGetErrorString(e));
}

/* ------------------------------------------------------------ DCS kernels */

/* Lattice tiling shared by the DCS lattice kernels: blocks of 32 x 8
   threads (the hybrid kernel: 8, 16 or 32 x 8); each slice is padded to
   whole blocks (rows to the x extent of a block row, slices to a multiple
   of 8 rows), so no kernel needs a bounds test.  Padded points are computed
   and dropped. */
#define ELEC__DCS_BLOCK_X 32
#define ELEC__DCS_BLOCK_Y 8
/* Atoms per chunk: 4000 float4 = 64,000 bytes of constant memory's 64 KB.
   The volume rungs use the same chunks: each chunk's float sum is added to
   the map, so no point's float sum runs over more than 4000 terms. */
#define ELEC__DCS_CHUNK 4000
#define ELEC__DCS_VOLUME_POINTS 8
/* Measured on an H100 (bench): 32 points with 4 on the FMA pipe is the
   fastest split, 1.03 of the SFU's rsqrt rate; 16 with 2 gives 0.98. */
#define ELEC__DCS_HYBRID_POINTS 32
#define ELEC__DCS_HYBRID_SOFT 4

/* One chunk of atoms for the constant-memory rungs, as records
   (x, y, (z_slice - z)^2, q).  Each device has its own copy. */
static __constant__ float4 elec__dcs_chunk[ELEC__DCS_CHUNK];

/* Rung 1: one point per thread, every atom from global memory. */
__global__ void elec__k_dcs_simple(float *slice, int pitch, float x0, float y0,
                                   float hx, float hy, float z,
                                   const float4 *atoms, int count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    float x = fmaf(i, hx, x0), y = fmaf(j, hy, y0), v = 0.0f;
    for (int n = 0; n < count; n++) {
        float4 a = atoms[n];
        float dx = x - a.x, dy = y - a.y, dz = z - a.z;
        v = fmaf(a.w, elec__rsqrt_sfu(dx * dx + dy * dy + dz * dz), v);
    }
    slice[(size_t)j * pitch + i] += v;
}

/* Rung 2: atoms from constant memory with dz^2 already in .z. */
__global__ void elec__k_dcs_const(float *slice, int pitch, float x0, float y0,
                                  float hx, float hy, int count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    float x = fmaf(i, hx, x0), y = fmaf(j, hy, y0), v = 0.0f;
    for (int n = 0; n < count; n++) {
        float4 a = elec__dcs_chunk[n];
        float dx = x - a.x, dy = y - a.y;
        v = fmaf(a.w, elec__rsqrt_sfu(dx * dx + dy * dy + a.z), v);
    }
    slice[(size_t)j * pitch + i] += v;
}

/* Rung 3: four neighbouring points per thread share dy^2 + dz^2. */
__global__ void elec__k_dcs_unroll4(float *slice, int pitch, float x0,
                                    float y0, float hx, float hy, int count) {
    int i = 4 * (blockIdx.x * blockDim.x + threadIdx.x);
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    float x = fmaf(i, hx, x0), y = fmaf(j, hy, y0);
    float v0 = 0.0f, v1 = 0.0f, v2 = 0.0f, v3 = 0.0f;
    for (int n = 0; n < count; n++) {
        float4 a = elec__dcs_chunk[n];
        float dy = y - a.y, dyz2 = fmaf(dy, dy, a.z);
        float dx0 = x - a.x, dx1 = dx0 + hx, dx2 = dx1 + hx, dx3 = dx2 + hx;
        v0 = fmaf(a.w, elec__rsqrt_sfu(fmaf(dx0, dx0, dyz2)), v0);
        v1 = fmaf(a.w, elec__rsqrt_sfu(fmaf(dx1, dx1, dyz2)), v1);
        v2 = fmaf(a.w, elec__rsqrt_sfu(fmaf(dx2, dx2, dyz2)), v2);
        v3 = fmaf(a.w, elec__rsqrt_sfu(fmaf(dx3, dx3, dyz2)), v3);
    }
    float *p = slice + (size_t)j * pitch + i;
    p[0] += v0;
    p[1] += v1;
    p[2] += v2;
    p[3] += v3;
}

/* Rung 4: eight points per thread, 32 points apart, so that the threads of
   a warp read and write 32 consecutive floats: every access coalesced. */
__global__ void elec__k_dcs_unroll8(float *slice, int pitch, float x0,
                                    float y0, float hx, float hy, int count) {
    const int gap = ELEC__DCS_BLOCK_X;
    int i = blockIdx.x * gap * 8 + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    float x = fmaf(i, hx, x0), y = fmaf(j, hy, y0), step = gap * hx;
    float v[8];
#pragma unroll
    for (int m = 0; m < 8; m++) v[m] = 0.0f;
    for (int n = 0; n < count; n++) {
        float4 a = elec__dcs_chunk[n];
        float dy = y - a.y, dyz2 = fmaf(dy, dy, a.z), dx = x - a.x;
#pragma unroll
        for (int m = 0; m < 8; m++) {
            float dxm = fmaf((float)m, step, dx);
            v[m] = fmaf(a.w, elec__rsqrt_sfu(fmaf(dxm, dxm, dyz2)), v[m]);
        }
    }
    float *p = slice + (size_t)j * pitch + i;
#pragma unroll
    for (int m = 0; m < 8; m++) p[m * gap] += v[m];
}

/* Rungs 5 and 6: POINTS points per thread, blockDim.x apart (8, 16 or 32,
   whichever pads the rows least: every thread computes its own
   dy^2 + dz^2, so the lanes of a warp need not share a row), over the whole
   volume in one launch per chunk (blockIdx.z walks this device's slices),
   and SOFT of every POINTS reciprocal square roots on the FMA pipe.
   Atoms come from global memory through shared-memory tiles that every
   warp of the block reads together: on an H100 the constant-memory rungs
   slow down sharply once many warps, each at its own atom, miss in the
   small constant cache (bench/RESULTS.md), while a tile costs one
   broadcast LDS.128 per atom and thread.
   Per atom and thread: 4 FP32 instructions for dy^2 + dz^2, then per point
   3 (dx, r^2, accumulate) and one rsqrt.  The SFU retires 16 rsqrt per SM
   per clock and the schedulers issue 128 instructions: that leaves issue
   slots for the FMA pipe to compute some rsqrts (11 instructions each).
   Slice k of the lattice is local slice (k - first_slice) / slice_step. */
#define ELEC__DCS_TILE 256
template <int POINTS, int SOFT>
__global__ void __launch_bounds__(ELEC__DCS_BLOCK_X *ELEC__DCS_BLOCK_Y)
elec__k_dcs_volume(float *slices, int pitch, int rows, float3 corner,
                   float hx, float hy, float hz, int first_slice,
                   int slice_step, const float4 *atoms, int count) {
    __shared__ float4 tile[ELEC__DCS_TILE];
    const int gap = blockDim.x;
    const int thread = threadIdx.y * blockDim.x + threadIdx.x;
    const int threads = blockDim.x * blockDim.y;
    int i = blockIdx.x * gap * POINTS + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = first_slice + blockIdx.z * slice_step;
    float y = fmaf(j, hy, corner.y), z = fmaf(k, hz, corner.z);
    float x[POINTS], v[POINTS];
#pragma unroll
    for (int m = 0; m < POINTS; m++) {
        x[m] = fmaf(i + m * gap, hx, corner.x);
        v[m] = 0.0f;
    }
    for (int base = 0; base < count; base += ELEC__DCS_TILE) {
        int in_tile = min(ELEC__DCS_TILE, count - base);
        __syncthreads();
        for (int n = thread; n < in_tile; n += threads) tile[n] = atoms[base + n];
        __syncthreads();
        for (int n = 0; n < in_tile; n++) {
            float4 a = tile[n];
            float dy = y - a.y, dz = z - a.z;
            float dyz2 = fmaf(dy, dy, dz * dz);
#pragma unroll
            for (int m = 0; m < POINTS; m++) {
                float dx = x[m] - a.x;
                float r2 = fmaf(dx, dx, dyz2);
                float rinv = m < POINTS - SOFT ? elec__rsqrt_sfu(r2)
                                               : elec__rsqrt_fma_pipe(r2);
                v[m] = fmaf(a.w, rinv, v[m]);
            }
        }
    }
    float *p = slices + ((size_t)blockIdx.z * rows + j) * pitch + i;
#pragma unroll
    for (int m = 0; m < POINTS; m++) p[m * gap] += v[m];
}

/* Writes (x, y, (z - z_atom)^2, q) for one slice and chunk, the
   constant-memory record of the slice rungs. */
__global__ void elec__k_dcs_slice_records(float4 *records, const float4 *atoms,
                                          int count, float z) {
    int n = blockIdx.x * blockDim.x + threadIdx.x;
    if (n < count) {
        float4 a = atoms[n];
        float dz = z - a.z;
        records[n] = make_float4(a.x, a.y, dz * dz, a.w);
    }
}

/* Potential at arbitrary points (x, y, z, unused), the coincident rule
   applied.  Tiles of blockDim.x atoms pass through shared memory (seed 000
   figure 2); each thread holds one point. */
__global__ void elec__k_dcs_points(float *potential, const float4 *points,
                                   int point_count, const float4 *atoms,
                                   int atom_count, float coincident2) {
    extern __shared__ float4 elec__tile[];
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    float4 pt = p < point_count ? points[p] : make_float4(0, 0, 0, 0);
    float v = 0.0f;
    for (int base = 0; base < atom_count; base += blockDim.x) {
        int n = base + threadIdx.x;
        __syncthreads();
        elec__tile[threadIdx.x] = n < atom_count ? atoms[n]
                                                 : make_float4(0, 0, 0, 0);
        __syncthreads();
        int tile = min((int)blockDim.x, atom_count - base);
        for (int t = 0; t < tile; t++) {
            float4 a = elec__tile[t];
            float dx = pt.x - a.x, dy = pt.y - a.y, dz = pt.z - a.z;
            float r2 = fmaf(dx, dx, fmaf(dy, dy, dz * dz));
            float rinv = r2 >= coincident2 ? elec__rsqrt_sfu(r2) : 0.0f;
            v = fmaf(a.w, rinv, v);
        }
    }
    if (p < point_count) potential[p] = v;
}

/* ------------------------------------------------------------ MDH kernel */

/* MDH record of an atom: position, a = q / (1 + kappa sigma) and
   b = kappa sigma log2(e), so that the term of seed 000 eq. 2 is
   a * 2^(b - kappa log2(e) r) / r: one FMA and one MUFU.EX2. */
struct elec__mdh_atom {
    float4 xyza;
    float b;
};

/* Seed 000 figure 2: each block stages a tile of atoms in shared memory;
   each thread accumulates POINTS points blockDim.x apart (coalesced) so a
   tile read serves several points. */
template <int POINTS>
__global__ void elec__k_mdh_points(float *potential, const float4 *points,
                                   int point_count, const float4 *atoms_xyza,
                                   const float *atoms_b, int atom_count,
                                   float kappa_log2e, float coincident2) {
    extern __shared__ float4 elec__tile[];
    float *tile_b = (float *)(elec__tile + blockDim.x);
    int first = blockIdx.x * blockDim.x * POINTS + threadIdx.x;
    float4 pt[POINTS];
    float v[POINTS];
#pragma unroll
    for (int m = 0; m < POINTS; m++) {
        int p = first + m * blockDim.x;
        pt[m] = p < point_count ? points[p] : make_float4(0, 0, 0, 0);
        v[m] = 0.0f;
    }
    for (int base = 0; base < atom_count; base += blockDim.x) {
        int n = base + threadIdx.x;
        __syncthreads();
        elec__tile[threadIdx.x] = n < atom_count ? atoms_xyza[n]
                                                 : make_float4(0, 0, 0, 0);
        tile_b[threadIdx.x] = n < atom_count ? atoms_b[n] : 0.0f;
        __syncthreads();
        int tile = min((int)blockDim.x, atom_count - base);
        for (int t = 0; t < tile; t++) {
            float4 a = elec__tile[t];
            float b = tile_b[t];
#pragma unroll
            for (int m = 0; m < POINTS; m++) {
                float dx = pt[m].x - a.x, dy = pt[m].y - a.y,
                      dz = pt[m].z - a.z;
                float r2 = fmaf(dx, dx, fmaf(dy, dy, dz * dz));
                float rinv = elec__rsqrt_sfu(r2);
                float r = r2 * rinv;
                float screen = elec__exp2_sfu(fmaf(-kappa_log2e, r, b));
                float weight = r2 >= coincident2 ? a.w : 0.0f;
                v[m] = fmaf(weight * rinv, screen, v[m]);
            }
        }
    }
#pragma unroll
    for (int m = 0; m < POINTS; m++) {
        int p = first + m * blockDim.x;
        if (p < point_count) potential[p] = v[m];
    }
}

/* --------------------------------------------------------- cutoff kernel */

/* Cutoff maps after seed 000 (Rodrigues et al., figures 7-9; Hardy et al.):
   atoms sit in fixed-depth bins (elec_bins, ELEC_BIN_DEPTH float4 records
   each, positions relative to the bin grid's centre); each block of
   ELEC__CUTOFF_THREADS threads computes a cube of 8x8x8 lattice points,
   each thread 4 points of a column in y (dx^2 + dz^2 reused 4 times), and
   streams the bins of its neighbourhood (elec_bin_neighbourhood) through
   shared memory, ELEC__CUTOFF_TILE_BINS bins at a time: one record per
   thread, 128 bytes per bin read by 8 neighbouring threads.

   The neighbourhood offsets live in global memory, not constant memory: the
   DCS chunk already takes 64,000 of constant memory's 65,536 bytes, and
   only the loading threads read an offset (once per tile), so the
   read-only cache serves them as well.  Bin indices are found from
   positions relative to the bins' corner (the lattice's point (0,0,0)
   minus the cutoff on every axis); distances from positions relative to
   the bins' centre, so float coordinates stay within half the lattice's
   extent plus the cutoff. */
#define ELEC__CUTOFF_EDGE 8          /* lattice points per block edge     */
#define ELEC__CUTOFF_THREADS_Y 2     /* threads 8 x 2 x 8 = 128           */
#define ELEC__CUTOFF_POINTS_Y 4      /* points per thread, 2 apart in y   */
#define ELEC__CUTOFF_THREADS 128
#define ELEC__CUTOFF_TILE_BINS (ELEC__CUTOFF_THREADS / ELEC_BIN_DEPTH)
#define ELEC__CUTOFF_MAX_NEIGHBOURS 16384
#define ELEC__CUTOFF_MAX_ORDER 6     /* elec_cutoff_params_check's limit  */
#define ELEC__CUTOFF_LAYERS 4        /* bin layers on the GPU at most, in all */
#define ELEC__CUTOFF_HOST_OVERFLOW 256 /* overflow left to the host without
                                          another layer                    */

/* Everything a cutoff launch needs besides its arrays. */
typedef struct elec__cutoff_args {
    /* MSM: gamma(rho)/a = sum_k coeff[k] (rho^2 - 1)^k, the Taylor
       coefficients C(-1/2, k) of elec_msm_gamma over a, zero past the
       splitting order; shifted Coulomb leaves them unused. */
    float coeff[ELEC__CUTOFF_MAX_ORDER + 1];
    float cutoff2, inv_cutoff2, coincident2;
    double first[3];   /* lattice point (0,0,0) relative to the bins' corner */
    double centre[3];  /* the bins' centre relative to their corner: records
                          and points are taken relative to it in float */
    double spacing[3];
    double bin_length;
    int bins[3];       /* bin grid dimensions */
    int pitch, rows;   /* padded points per row, rows per slice */
    int neighbour_count;
    int accumulate;    /* add to the map (a later layer of bins) */
    float scale;       /* params.scale, applied as the map is written */
} elec__cutoff_args;

/* q S(r) of one pair, or 0 beyond the cutoff and for coincident atoms
   (elec_cutoff_term; same rule as the CPU).  Empty slots and bins outside
   the grid sit at -1e30: r2 overflows to inf, and the select (not a
   multiplication by q = 0) keeps inf and NaN out of the sum. */
template <int KIND, int ORDER>
__device__ __forceinline__ float elec__cutoff_pair(float r2, float q,
                                                   const elec__cutoff_args &a) {
    float rinv = elec__rsqrt_sfu(r2);
    float s;
    if (KIND == ELEC_CUTOFF_SHIFTED) {
        float w = fmaf(-r2, a.inv_cutoff2, 1.0f); /* 1 - r^2/a^2 */
        s = w * w * rinv;
    } else {
        /* 1/r - gamma(r/a)/a, gamma by Horner in rho^2 - 1 (elec.h), to
           the splitting order only: a compile-time ORDER saves the FMAs of
           the zero coefficients above it */
        float t = fmaf(r2, a.inv_cutoff2, -1.0f), g = a.coeff[ORDER];
#pragma unroll
        for (int k = ORDER - 1; k >= 0; k--) g = fmaf(g, t, a.coeff[k]);
        s = rinv - g;
    }
    return r2 < a.cutoff2 && r2 >= a.coincident2 ? q * s : 0.0f;
}

/* One block: 8x8x8 points of the padded lattice.  Thread (x, y, z) owns
   points (x, y + 2m, z), m = 0..3. */
template <int KIND, int ORDER>
__global__ void __launch_bounds__(ELEC__CUTOFF_THREADS)
elec__k_cutoff_lattice(float *map, const float4 *bins, const int4 *neighbours,
                       elec__cutoff_args args) {
    __shared__ float4 tile[ELEC__CUTOFF_THREADS];
    __shared__ unsigned char near_warps[ELEC__CUTOFF_THREADS];
    const int t = threadIdx.x + ELEC__CUTOFF_EDGE *
                                    (threadIdx.y + ELEC__CUTOFF_THREADS_Y * threadIdx.z);
    const int warp = t / 32; /* its points: all x and y, z planes 2w, 2w+1 */
    const int i = blockIdx.x * ELEC__CUTOFF_EDGE + threadIdx.x;
    const int j = blockIdx.y * ELEC__CUTOFF_EDGE + threadIdx.y;
    const int k = blockIdx.z * ELEC__CUTOFF_EDGE + threadIdx.z;
    const int block[3] = {(int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z};
    int home[3];
    float px, py[ELEC__CUTOFF_POINTS_Y], pz, v[ELEC__CUTOFF_POINTS_Y];
    /* Positions in double, rounded once: as the bins' records are. */
    px = (float)(args.first[0] + i * args.spacing[0] - args.centre[0]);
    pz = (float)(args.first[2] + k * args.spacing[2] - args.centre[2]);
#pragma unroll
    for (int m = 0; m < ELEC__CUTOFF_POINTS_Y; m++) {
        py[m] = (float)(args.first[1] - args.centre[1] +
                        (j + m * ELEC__CUTOFF_THREADS_Y) * args.spacing[1]);
        v[m] = 0.0f;
    }
    /* Each warp's points span a box: x and y the block's 8 points, z its
       two planes.  Atoms of a tile farther than the cutoff from a warp's
       box are skipped by that warp (a warp-uniform branch): the block's
       neighbourhood holds them for the other warps, and for the corners
       of bins that only graze the sphere.  The margin keeps float rounding
       of the box from dropping a pair the pair test would keep. */
    float box_lo[3], box_hi[3];
    for (int axis = 0; axis < 3; axis++) {
        const int first_point = block[axis] * ELEC__CUTOFF_EDGE;
        box_lo[axis] = (float)(args.first[axis] + first_point * args.spacing[axis] -
                               args.centre[axis]);
        box_hi[axis] = (float)(args.first[axis] +
                               (first_point + ELEC__CUTOFF_EDGE - 1) * args.spacing[axis] -
                               args.centre[axis]);
    }
    const float reach2 = args.cutoff2 * 1.0001f + 1e-4f;
    /* The bin holding the block's first point: the neighbourhood's origin. */
    for (int axis = 0; axis < 3; axis++)
        home[axis] = (int)floor((args.first[axis] + block[axis] * ELEC__CUTOFF_EDGE *
                                                        args.spacing[axis]) /
                                args.bin_length);
    for (int base = 0; base < args.neighbour_count; base += ELEC__CUTOFF_TILE_BINS) {
        const int n = base + t / ELEC_BIN_DEPTH;
        float4 record = make_float4(-1e30f, -1e30f, -1e30f, 0.0f);
        if (n < args.neighbour_count) {
            const int4 d = __ldg(neighbours + n);
            const int bx = home[0] + d.x, by = home[1] + d.y, bz = home[2] + d.z;
            if (bx >= 0 && bx < args.bins[0] && by >= 0 && by < args.bins[1] &&
                bz >= 0 && bz < args.bins[2]) /* else skipped: no such bin */
                record = __ldg(bins + ((size_t)bx + (size_t)args.bins[0] *
                                                        ((size_t)by + (size_t)args.bins[1] * bz)) *
                                          ELEC_BIN_DEPTH +
                               t % ELEC_BIN_DEPTH);
        }
        /* which warps' boxes this record is within the cutoff of */
        unsigned near = 0;
        if (record.w != 0.0f) {
            const float ex = fmaxf(fmaxf(box_lo[0] - record.x, record.x - box_hi[0]), 0.0f);
            const float ey = fmaxf(fmaxf(box_lo[1] - record.y, record.y - box_hi[1]), 0.0f);
            const float exy2 = fmaf(ex, ex, ey * ey);
            for (int w = 0; w < ELEC__CUTOFF_THREADS / 32; w++) {
                const float lo = box_lo[2] + 2 * w * (float)args.spacing[2];
                const float hi = lo + (float)args.spacing[2];
                const float ez = fmaxf(fmaxf(lo - record.z, record.z - hi), 0.0f);
                near |= (fmaf(ez, ez, exy2) < reach2) << w;
            }
        }
        __syncthreads();
        tile[t] = record;
        near_warps[t] = (unsigned char)near;
        /* a tile of empty slots costs one barrier, nothing more */
        if (!__syncthreads_or(near != 0)) continue;
        for (int a = 0; a < ELEC__CUTOFF_THREADS; a++) {
            if (!((near_warps[a] >> warp) & 1)) continue; /* warp-uniform */
            const float4 atom = tile[a];
            const float dx = atom.x - px, dz = atom.z - pz;
            const float dxz = fmaf(dx, dx, dz * dz);
#pragma unroll
            for (int m = 0; m < ELEC__CUTOFF_POINTS_Y; m++) {
                const float dy = atom.y - py[m];
                v[m] += elec__cutoff_pair<KIND, ORDER>(fmaf(dy, dy, dxz), atom.w, args);
            }
        }
    }
#pragma unroll
    for (int m = 0; m < ELEC__CUTOFF_POINTS_Y; m++)
    {
        float *out = map + (size_t)i + (size_t)args.pitch *
                                           ((size_t)(j + m * ELEC__CUTOFF_THREADS_Y) +
                                            (size_t)args.rows * k);
        *out = args.accumulate ? *out + args.scale * v[m] : args.scale * v[m];
    }
}

/* ------------------------------------------------------------ host side */

#ifdef __cplusplus
extern "C" {
#endif

#define ELEC__MAX_GPUS 64

ELEC_DEF int elec_cuda_device_count(void) {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return count;
}

ELEC_DEF elec_status elec_cuda_device_name(int device, char *name, size_t size,
                                           elec_error *err) {
    elec_status status = ELEC_OK;
    cudaDeviceProp prop;
    if (!name || size == 0)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "name buffer is empty");
    name[0] = '\0';
    ELEC__CUDA_TRY(cudaGetDeviceProperties(&prop, device));
    snprintf(name, size, "%s", prop.name);
    elec__ok(err);
cleanup:
    return status;
}

/* The device ordinals of a GPU set: count 0 = the current device,
   ELEC_ALL_GPUS = every device, else the listed (or first count) ones. */
static elec_status elec__cuda_gpu_list(const elec_gpu_set *set, int *devices,
                                       int *count, elec_error *err) {
    elec_status status = ELEC_OK;
    int available = elec_cuda_device_count(), n, i;
    if (available == 0)
        return elec__fail(err, ELEC_ERR_NO_DEVICE, 0,
                          "no CUDA device is present (or no driver)");
    if (set->count == 0) {
        ELEC__CUDA_TRY(cudaGetDevice(&devices[0]));
        *count = 1;
        return ELEC_OK;
    }
    n = set->count == ELEC_ALL_GPUS ? available : set->count;
    if (n > ELEC__MAX_GPUS)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "%d GPUs asked for; at most %d are supported", n,
                          ELEC__MAX_GPUS);
    for (i = 0; i < n; i++) {
        devices[i] = set->devices && set->count != ELEC_ALL_GPUS
                         ? set->devices[i] : i;
        if (devices[i] >= available)
            return elec__fail(err, ELEC_ERR_NO_DEVICE, 0,
                              "GPU %d asked for; %d present", devices[i],
                              available);
        /* Constant memory is one per device: a device listed twice would
           have two streams overwrite each other's chunk. */
        for (int before = 0; before < i; before++)
            if (devices[before] == devices[i])
                return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                  "GPU %d is listed twice", devices[i]);
    }
    *count = n;
cleanup:
    return status;
}

/* Atoms as float4 (x, y, z, q), positions relative to reference (computed
   in double, then rounded). */
static float4 *elec__cuda_gather_xyzq(const elec_atoms *atoms,
                                      const double reference[3]) {
    size_t i;
    float4 *out = (float4 *)ELEC_MALLOC((atoms->count ? atoms->count : 1) *
                                        sizeof(float4));
    if (!out) return NULL;
    for (i = 0; i < atoms->count; i++) {
        double p[3], q;
        elec_atoms_get(atoms, i, p, &q, NULL);
        out[i] = make_float4((float)(p[0] - reference[0]),
                             (float)(p[1] - reference[1]),
                             (float)(p[2] - reference[2]), (float)q);
    }
    return out;
}

/* Points x y z (double) as float4 relative to reference, into out. */
static void elec__cuda_convert_points(const double *points, size_t count,
                                      const double reference[3], float4 *out) {
#ifdef _OPENMP
#pragma omp parallel for
#endif
    for (long i = 0; i < (long)count; i++)
        out[i] = make_float4((float)(points[3 * i] - reference[0]),
                             (float)(points[3 * i + 1] - reference[1]),
                             (float)(points[3 * i + 2] - reference[2]), 0.0f);
}

static float4 *elec__cuda_gather_points(const double *points, size_t count,
                                        const double reference[3]) {
    float4 *out = (float4 *)ELEC_MALLOC((count ? count : 1) * sizeof(float4));
    if (out) elec__cuda_convert_points(points, count, reference, out);
    return out;
}

static int elec__round_up(int n, int multiple) {
    return (n + multiple - 1) / multiple * multiple;
}

/* Points of a row that one block row covers, per variant. */
static int elec__dcs_points_per_thread(elec_dcs_variant v) {
    switch (v) {
    case ELEC_DCS_UNROLL4: return 4;
    case ELEC_DCS_UNROLL8_COALESCED: return 8;
    case ELEC_DCS_VOLUME: return ELEC__DCS_VOLUME_POINTS;
    case ELEC_DCS_HYBRID_RSQRT: return ELEC__DCS_HYBRID_POINTS;
    default: return 1;
    }
}

/* The volume kernel's threads per block row: the widest of 32, 16, 8 that
   pads a row of nx points no more than a narrower one would. */
static int elec__dcs_volume_gap(int nx, int points) {
    int best = 32, gap;
    for (gap = 16; gap >= 8; gap /= 2)
        if (elec__round_up(nx, gap * points) < elec__round_up(nx, best * points))
            best = gap;
    return best;
}

/* Per-device state of one DCS map computation. */
typedef struct elec__dcs_device {
    int ordinal;
    cudaStream_t stream;
    float4 *atoms;   /* all atoms, (x, y, z, q) relative to the centre  */
    float4 *records; /* one chunk of slice records                      */
    float *slices;   /* this device's slices, padded: pitch x rows each */
    int slice_count; /* slices k = index, index + devices, ...          */
} elec__dcs_device;

typedef struct elec__dcs_job {
    const elec_lattice *lattice;
    elec_dcs_params params;
    int pitch, rows;        /* padded row length and rows per slice */
    double centre[3];       /* atoms and points are relative to it  */
    float3 corner;          /* point (0, 0, 0) relative to centre   */
    int gap;                /* volume kernels: threads per block row */
    int atom_count;
    int device_count;
    elec__dcs_device dev[ELEC__MAX_GPUS];
} elec__dcs_job;

static elec_status elec__dcs_sync_all(elec__dcs_job *job, elec_error *err) {
    elec_status status = ELEC_OK;
    for (int d = 0; d < job->device_count; d++) {
        ELEC__CUDA_TRY(cudaSetDevice(job->dev[d].ordinal));
        ELEC__CUDA_TRY(cudaStreamSynchronize(job->dev[d].stream));
    }
cleanup:
    return status;
}

/* Tells the caller how far the map is, after waiting for the GPUs. */
static elec_status elec__dcs_report(elec__dcs_job *job, double fraction,
                                    elec_error *err) {
    elec_status status;
    if (!job->params.progress) return ELEC_OK;
    status = elec__dcs_sync_all(job, err);
    if (status != ELEC_OK) return status;
    if (job->params.progress(fraction, job->params.progress_user))
        return elec__fail(err, ELEC_ERR_CANCELLED, 0,
                          "cancelled by the progress callback");
    return ELEC_OK;
}

/* Rungs 1-4: one launch per slice (and per chunk for the constant-memory
   rungs), slices round-robin over the devices. */
static elec_status elec__dcs_run_slices(elec__dcs_job *job, elec_error *err) {
    elec_status status = ELEC_OK;
    const elec_lattice *l = job->lattice;
    const dim3 block(ELEC__DCS_BLOCK_X, ELEC__DCS_BLOCK_Y);
    const float hx = (float)l->spacing[0], hy = (float)l->spacing[1];
    const int nz = l->dims[2];
    const elec_dcs_variant v = job->params.variant;
    const int points_per_thread = elec__dcs_points_per_thread(v);
    const dim3 grid(job->pitch / (ELEC__DCS_BLOCK_X * points_per_thread),
                    job->rows / ELEC__DCS_BLOCK_Y);
    for (int k = 0; k < nz; k++) {
        elec__dcs_device *dev = &job->dev[k % job->device_count];
        float *slice = dev->slices +
                       (size_t)(k / job->device_count) * job->pitch * job->rows;
        float z = (float)(k * l->spacing[2]) + job->corner.z;
        float x0 = job->corner.x, y0 = job->corner.y;
        ELEC__CUDA_TRY(cudaSetDevice(dev->ordinal));
        if (v == ELEC_DCS_SIMPLE) {
            elec__k_dcs_simple<<<grid, block, 0, dev->stream>>>(
                slice, job->pitch, x0, y0, hx, hy, z, dev->atoms,
                job->atom_count);
            ELEC__CUDA_TRY(cudaGetLastError());
        } else {
            for (int first = 0; first < job->atom_count;
                 first += ELEC__DCS_CHUNK) {
                int count = job->atom_count - first < ELEC__DCS_CHUNK
                                ? job->atom_count - first : ELEC__DCS_CHUNK;
                elec__k_dcs_slice_records<<<(count + 255) / 256, 256, 0,
                                            dev->stream>>>(
                    dev->records, dev->atoms + first, count, z);
                ELEC__CUDA_TRY(cudaGetLastError());
                ELEC__CUDA_TRY(cudaMemcpyToSymbolAsync(
                    elec__dcs_chunk, dev->records, count * sizeof(float4), 0,
                    cudaMemcpyDeviceToDevice, dev->stream));
                if (v == ELEC_DCS_CONST)
                    elec__k_dcs_const<<<grid, block, 0, dev->stream>>>(
                        slice, job->pitch, x0, y0, hx, hy, count);
                else if (v == ELEC_DCS_UNROLL4)
                    elec__k_dcs_unroll4<<<grid, block, 0, dev->stream>>>(
                        slice, job->pitch, x0, y0, hx, hy, count);
                else
                    elec__k_dcs_unroll8<<<grid, block, 0, dev->stream>>>(
                        slice, job->pitch, x0, y0, hx, hy, count);
                ELEC__CUDA_TRY(cudaGetLastError());
            }
        }
        if ((k + 1) % job->device_count == 0 || k + 1 == nz) {
            status = elec__dcs_report(job, (double)(k + 1) / nz, err);
            if (status != ELEC_OK) goto cleanup;
        }
    }
cleanup:
    return status;
}

/* Rungs 5 and 6: chunks of atoms outermost, each device computing all its
   slices per chunk: the float sum of a chunk is added to the map, which
   bounds the rounding of a point's sum (and lets progress be reported). */
static elec_status elec__dcs_run_volume(elec__dcs_job *job, elec_error *err) {
    elec_status status = ELEC_OK;
    const elec_lattice *l = job->lattice;
    const int points = elec__dcs_points_per_thread(job->params.variant);
    const dim3 block(job->gap, ELEC__DCS_BLOCK_Y);
    void (*kernel)(float *, int, int, float3, float, float, float, int, int,
                   const float4 *, int) =
        job->params.variant == ELEC_DCS_HYBRID_RSQRT
            ? elec__k_dcs_volume<ELEC__DCS_HYBRID_POINTS, ELEC__DCS_HYBRID_SOFT>
            : elec__k_dcs_volume<ELEC__DCS_VOLUME_POINTS, 0>;
    for (int first = 0; first < job->atom_count; first += ELEC__DCS_CHUNK) {
        int count = job->atom_count - first < ELEC__DCS_CHUNK
                        ? job->atom_count - first : ELEC__DCS_CHUNK;
        for (int d = 0; d < job->device_count; d++) {
            elec__dcs_device *dev = &job->dev[d];
            dim3 grid(job->pitch / (job->gap * points),
                      job->rows / ELEC__DCS_BLOCK_Y, dev->slice_count);
            if (dev->slice_count == 0) continue;
            ELEC__CUDA_TRY(cudaSetDevice(dev->ordinal));
            kernel<<<grid, block, 0, dev->stream>>>(
                dev->slices, job->pitch, job->rows, job->corner,
                (float)l->spacing[0], (float)l->spacing[1],
                (float)l->spacing[2], d, job->device_count, dev->atoms + first,
                count);
            ELEC__CUDA_TRY(cudaGetLastError());
        }
        status = elec__dcs_report(
            job, (double)(first + count) / job->atom_count, err);
        if (status != ELEC_OK) goto cleanup;
    }
cleanup:
    return status;
}

/* Lattice points within ELEC_COINCIDENT_DISTANCE of an atom, found by
   rounding each atom to its nearest lattice point: up to capacity of them
   into index (and the atom of each into atom, unless NULL); returns how
   many there are.  DCS recomputes their values with the points kernel,
   which applies the rule (the lattice kernels give r = 0 there); MSM maps
   take the atom's smooth part back out (elec__msm_take_back). */
static size_t elec__coincident_points(const elec_atoms *atoms, const elec_lattice *l,
                                      size_t *index, size_t *atom, size_t capacity) {
    size_t found = 0;
    const double limit2 = ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE;
    for (size_t n = 0; n < atoms->count; n++) {
        double p[3], lattice_point[3];
        int ijk[3], axis, inside = 1;
        elec_atoms_get(atoms, n, p, NULL, NULL);
        for (axis = 0; axis < 3; axis++) {
            double t = floor((p[axis] - l->origin[axis]) / l->spacing[axis] + 0.5);
            if (t < 0 || t >= l->dims[axis]) inside = 0;
            ijk[axis] = inside ? (int)t : 0;
        }
        if (!inside) continue;
        elec_lattice_point(l, ijk[0], ijk[1], ijk[2], lattice_point);
        if (elec_distance2(p, lattice_point) >= limit2) continue;
        if (found < capacity) {
            index[found] = (size_t)ijk[0] +
                           (size_t)l->dims[0] *
                               ((size_t)ijk[1] + (size_t)l->dims[1] * ijk[2]);
            if (atom) atom[found] = n;
        }
        found++;
    }
    return found;
}

static elec_status elec__cuda_points_on(int device, const elec_atoms *atoms,
                                        const double *points, size_t count,
                                        const double reference[3],
                                        float *potential, elec_error *err);

static elec_status elec__dcs_fix_coincident(const elec_atoms *atoms,
                                            const elec_lattice *l,
                                            int device, double scale,
                                            const double centre[3],
                                            float *map, elec_error *err) {
    elec_status status = ELEC_OK;
    size_t count = elec__coincident_points(atoms, l, NULL, NULL, 0);
    size_t *index = NULL;
    double *xyz = NULL;
    float *value = NULL;
    if (count == 0) return ELEC_OK;
    index = (size_t *)ELEC_MALLOC(count * sizeof *index);
    xyz = (double *)ELEC_MALLOC(3 * count * sizeof *xyz);
    value = (float *)ELEC_MALLOC(count * sizeof *value);
    if (!index || !xyz || !value) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                            "no memory for %zu coincident points", count);
        goto cleanup;
    }
    elec__coincident_points(atoms, l, index, NULL, count);
    for (size_t c = 0; c < count; c++) {
        size_t i = index[c] % l->dims[0];
        size_t j = index[c] / l->dims[0] % l->dims[1];
        size_t k = index[c] / l->dims[0] / l->dims[1];
        elec_lattice_point(l, (int)i, (int)j, (int)k, xyz + 3 * c);
    }
    status = elec__cuda_points_on(device, atoms, xyz, count, centre, value,
                                  err);
    if (status == ELEC_OK)
        for (size_t c = 0; c < count; c++)
            map[index[c]] = (float)(scale * value[c]);
cleanup:
    ELEC_FREE(index);
    ELEC_FREE(xyz);
    ELEC_FREE(value);
    return status;
}

static void elec__dcs_release(elec__dcs_job *job) {
    for (int d = 0; d < job->device_count; d++) {
        elec__dcs_device *dev = &job->dev[d];
        if (cudaSetDevice(dev->ordinal) != cudaSuccess) continue;
        if (dev->stream) cudaStreamSynchronize(dev->stream);
        cudaFree(dev->atoms);
        cudaFree(dev->records);
        cudaFree(dev->slices);
        if (dev->stream) cudaStreamDestroy(dev->stream);
    }
    (void)cudaGetLastError();
}

ELEC_DEF elec_status elec_cuda_dcs_map(const elec_atoms *atoms,
                                       const elec_lattice *lattice,
                                       const elec_dcs_params *params,
                                       float *map, elec_error *err) {
    elec_status status;
    elec__dcs_job *job = NULL;
    float4 *host_atoms = NULL;
    int devices[ELEC__MAX_GPUS], device_count = 0, caller_device = 0;
    size_t nx, ny, nz;

    if ((status = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return status;
    if ((status = elec_lattice_check(lattice, err)) != ELEC_OK) return status;
    if ((status = elec_dcs_params_check(params, err)) != ELEC_OK) return status;
    if (!map) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "map is NULL");
    if (atoms->count > (size_t)INT_MAX)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "%zu atoms: the GPU path takes at most %d",
                          atoms->count, INT_MAX);
    if (params && (status = elec__cuda_gpu_list(&params->gpus, devices,
                                                &device_count, err)) != ELEC_OK)
        return status;
    if (!params) {
        elec_gpu_set current = {0, NULL};
        if ((status = elec__cuda_gpu_list(&current, devices, &device_count,
                                          err)) != ELEC_OK)
            return status;
    }
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;

    nx = lattice->dims[0], ny = lattice->dims[1], nz = lattice->dims[2];
    job = (elec__dcs_job *)ELEC_MALLOC(sizeof *job);
    if (!job) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory");
        goto cleanup;
    }
    memset(job, 0, sizeof *job);
    /* Coordinates relative to the lattice centre: float then keeps the
       most precision over the map (as the CPU float path does). */
    for (int axis = 0; axis < 3; axis++) {
        double half = 0.5 * (lattice->dims[axis] - 1) * lattice->spacing[axis];
        job->centre[axis] = lattice->origin[axis] + half;
    }
    job->corner = make_float3(
        (float)(-0.5 * (nx - 1) * lattice->spacing[0]),
        (float)(-0.5 * (ny - 1) * lattice->spacing[1]),
        (float)(-0.5 * (nz - 1) * lattice->spacing[2]));
    host_atoms = elec__cuda_gather_xyzq(atoms, job->centre);
    if (!host_atoms) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory");
        goto cleanup;
    }
    job->lattice = lattice;
    job->params = elec_dcs_params_resolved(params);
    job->gap = job->params.variant >= ELEC_DCS_VOLUME
                   ? elec__dcs_volume_gap((int)nx, elec__dcs_points_per_thread(
                                                       job->params.variant))
                   : ELEC__DCS_BLOCK_X;
    job->pitch = elec__round_up((int)nx, job->gap * elec__dcs_points_per_thread(
                                                        job->params.variant));
    job->rows = elec__round_up((int)ny, ELEC__DCS_BLOCK_Y);
    job->atom_count = (int)atoms->count;
    job->device_count = device_count < (int)nz ? device_count : (int)nz;

    for (int d = 0; d < job->device_count; d++) {
        elec__dcs_device *dev = &job->dev[d];
        size_t slice_floats = (size_t)job->pitch * job->rows;
        dev->ordinal = devices[d];
        dev->slice_count = (int)((nz - d + job->device_count - 1) /
                                 job->device_count);
        ELEC__CUDA_TRY(cudaSetDevice(dev->ordinal));
        ELEC__CUDA_TRY(cudaStreamCreateWithFlags(&dev->stream,
                                                 cudaStreamNonBlocking));
        ELEC__CUDA_TRY(cudaMalloc((void **)&dev->atoms,
                                  (atoms->count + 1) * sizeof(float4)));
        ELEC__CUDA_TRY(cudaMalloc((void **)&dev->records,
                                  ELEC__DCS_CHUNK * sizeof(float4)));
        ELEC__CUDA_TRY(cudaMalloc((void **)&dev->slices,
                                  slice_floats * dev->slice_count * sizeof(float)));
        ELEC__CUDA_TRY(cudaMemcpyAsync(dev->atoms, host_atoms,
                                       atoms->count * sizeof(float4),
                                       cudaMemcpyHostToDevice, dev->stream));
        ELEC__CUDA_TRY(cudaMemsetAsync(dev->slices, 0,
                                       slice_floats * dev->slice_count *
                                           sizeof(float),
                                       dev->stream));
    }

    if (job->atom_count > 0) {
        status = job->params.variant >= ELEC_DCS_VOLUME
                     ? elec__dcs_run_volume(job, err)
                     : elec__dcs_run_slices(job, err);
        if (status != ELEC_OK) goto cleanup;
    }

    /* Copy each slice back without its padding, then scale. */
    for (size_t k = 0; k < nz; k++) {
        elec__dcs_device *dev = &job->dev[k % job->device_count];
        const float *slice = dev->slices + (k / job->device_count) *
                                               (size_t)job->pitch * job->rows;
        ELEC__CUDA_TRY(cudaSetDevice(dev->ordinal));
        ELEC__CUDA_TRY(cudaMemcpy2DAsync(map + k * nx * ny, nx * sizeof(float),
                                         slice, job->pitch * sizeof(float),
                                         nx * sizeof(float), ny,
                                         cudaMemcpyDeviceToHost, dev->stream));
    }
    if ((status = elec__dcs_sync_all(job, err)) != ELEC_OK) goto cleanup;
    if (job->params.scale != 1.0) {
        size_t total = nx * ny * nz;
        for (size_t p = 0; p < total; p++)
            map[p] = (float)(job->params.scale * map[p]);
    }
    status = elec__dcs_fix_coincident(atoms, lattice, job->dev[0].ordinal,
                                      job->params.scale, job->centre, map, err);
    if (status == ELEC_OK) elec__ok(err);

cleanup:
    if (job) {
        elec__dcs_release(job);
        ELEC_FREE(job);
    }
    ELEC_FREE(host_atoms);
    cudaSetDevice(caller_device);
    return status;
}

/* Unscaled DCS potential at points (relative to reference) on one device,
   with the coincident rule: the points API and the lattice fix-up. */
static elec_status elec__cuda_points_on(int device, const elec_atoms *atoms,
                                        const double *points, size_t count,
                                        const double reference[3],
                                        float *potential, elec_error *err) {
    elec_status status = ELEC_OK;
    const int block = 256;
    const float coincident2 =
        (float)(ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE);
    float4 *host_atoms = elec__cuda_gather_xyzq(atoms, reference);
    float4 *host_points = elec__cuda_gather_points(points, count, reference);
    float4 *d_atoms = NULL, *d_points = NULL;
    float *d_potential = NULL;
    if (!host_atoms || !host_points) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory");
        goto cleanup;
    }
    ELEC__CUDA_TRY(cudaSetDevice(device));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_atoms, (atoms->count + 1) * sizeof(float4)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_points, (count + 1) * sizeof(float4)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_potential, (count + 1) * sizeof(float)));
    ELEC__CUDA_TRY(cudaMemcpy(d_atoms, host_atoms, atoms->count * sizeof(float4),
                              cudaMemcpyHostToDevice));
    ELEC__CUDA_TRY(cudaMemcpy(d_points, host_points, count * sizeof(float4),
                              cudaMemcpyHostToDevice));
    elec__k_dcs_points<<<(unsigned)((count + block - 1) / block), block,
                         block * sizeof(float4)>>>(
        d_potential, d_points, (int)count, d_atoms, (int)atoms->count,
        coincident2);
    ELEC__CUDA_TRY(cudaGetLastError());
    ELEC__CUDA_TRY(cudaMemcpy(potential, d_potential, count * sizeof(float),
                              cudaMemcpyDeviceToHost));
cleanup:
    cudaFree(d_atoms);
    cudaFree(d_points);
    cudaFree(d_potential);
    ELEC_FREE(host_atoms);
    ELEC_FREE(host_points);
    return status;
}

/* Centre of the points' bounding box: the reference the points APIs take
   coordinates relative to, so that floats keep their precision. */
static void elec__points_centre(const double *points, size_t count,
                                double centre[3]) {
    for (int axis = 0; axis < 3; axis++) {
        double lo = points[axis], hi = points[axis];
#ifdef _OPENMP
#pragma omp parallel for reduction(min : lo) reduction(max : hi)
#endif
        for (long i = 1; i < (long)count; i++) {
            double v = points[3 * i + axis];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
        centre[axis] = 0.5 * (lo + hi);
    }
}

/* Checks shared by the points APIs; picks the first device of the set. */
static elec_status elec__cuda_points_check(const elec_atoms *atoms,
                                           int need_radius,
                                           const double *points, size_t count,
                                           const elec_gpu_set *gpus,
                                           const float *potential, int *device,
                                           elec_error *err) {
    int devices[ELEC__MAX_GPUS], device_count = 0;
    elec_gpu_set current = {0, NULL};
    elec_status status = elec_atoms_check(atoms, need_radius, err);
    if (status != ELEC_OK) return status;
    if (count > 0 && (!points || !potential))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "points or potential is NULL");
    if (count > (size_t)INT_MAX / 2 || atoms->count > (size_t)INT_MAX / 2)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "the GPU points path takes at most %d points and atoms",
                          INT_MAX / 2);
    {
        long first_bad = LONG_MAX; /* the first coordinate that is not finite */
#ifdef _OPENMP
#pragma omp parallel for reduction(min : first_bad)
#endif
        for (long i = 0; i < (long)(3 * count); i++)
            if (!elec__finite(points[i]) && i < first_bad) first_bad = i;
        if (first_bad != LONG_MAX)
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "point %ld is not finite",
                              first_bad / 3);
    }
    status = elec__cuda_gpu_list(gpus ? gpus : &current, devices, &device_count,
                                 err);
    *device = devices[0];
    return status;
}

ELEC_DEF elec_status elec_cuda_dcs_points(const elec_atoms *atoms,
                                          const double *points,
                                          size_t point_count,
                                          const elec_dcs_params *params,
                                          float *potential, elec_error *err) {
    elec_status status;
    elec_dcs_params p;
    double centre[3];
    int device = 0, caller_device = 0;
    if ((status = elec_dcs_params_check(params, err)) != ELEC_OK) return status;
    p = elec_dcs_params_resolved(params);
    status = elec__cuda_points_check(atoms, 0, points, point_count, &p.gpus,
                                     potential, &device, err);
    if (status != ELEC_OK || point_count == 0) return status;
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    elec__points_centre(points, point_count, centre);
    status = elec__cuda_points_on(device, atoms, points, point_count, centre,
                                  potential, err);
    cudaSetDevice(caller_device);
    if (status != ELEC_OK) return status;
    for (size_t i = 0; i < point_count; i++)
        potential[i] = (float)(p.scale * potential[i]);
    elec__ok(err);
    return ELEC_OK;
}

/* Chunks of points for the MDH pipeline: enough that the host's work on
   one (conversion, upload, copy back, scale) hides behind the kernel of
   another, few enough that each kernel still fills the GPU several times
   over (and the two streams let one kernel's tail overlap the next).  On
   an H100, 1e6 points x 2e5 atoms: 0.151 s unchunked, 0.134 s in 4
   chunks, 0.138 s in 8, 0.145-0.167 s in 16. */
#define ELEC__MDH_CHUNKS 4
#define ELEC__MDH_MIN_CHUNK ((size_t)1 << 17)

ELEC_DEF elec_status elec_cuda_mdh_points(const elec_atoms *atoms,
                                          const double *points,
                                          size_t point_count,
                                          const elec_mdh_params *params,
                                          float *potential, elec_error *err) {
    enum { block = 256, points_per_thread = 2 }; /* fastest on H100 (bench) */
    const double log2e = 1.4426950408889634;
    elec_status status;
    elec_mdh_params p;
    int device = 0, caller_device = 0;
    float4 *host_xyza = NULL, *host_points = NULL, *d_xyza = NULL, *d_points = NULL;
    float *host_b = NULL, *d_b = NULL, *d_potential = NULL;
    cudaStream_t streams[2] = {NULL, NULL};
    double centre[3];
    size_t n = 0, chunk, chunks;

    if ((status = elec_mdh_params_check(params, err)) != ELEC_OK) return status;
    p = elec_mdh_params_resolved(params);
    status = elec__cuda_points_check(atoms, 1, points, point_count, &p.gpus,
                                     potential, &device, err);
    if (status != ELEC_OK || point_count == 0) return status;
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;

    elec__points_centre(points, point_count, centre);
    host_xyza = elec__cuda_gather_xyzq(atoms, centre);
    host_points = (float4 *)ELEC_MALLOC(point_count * sizeof(float4));
    host_b = (float *)ELEC_MALLOC((atoms->count + 1) * sizeof(float));
    if (!host_xyza || !host_points || !host_b) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory");
        goto cleanup;
    }
    for (n = 0; n < atoms->count; n++) {
        double q, sigma;
        elec_atoms_get(atoms, n, NULL, &q, &sigma);
        host_xyza[n].w = (float)(q / (1.0 + p.kappa * sigma));
        host_b[n] = (float)(p.kappa * sigma * log2e);
    }
    ELEC__CUDA_TRY(cudaSetDevice(device));
    ELEC__CUDA_TRY(cudaStreamCreateWithFlags(&streams[0], cudaStreamNonBlocking));
    ELEC__CUDA_TRY(cudaStreamCreateWithFlags(&streams[1], cudaStreamNonBlocking));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_xyza, (atoms->count + 1) * sizeof(float4)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_b, (atoms->count + 1) * sizeof(float)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_points, point_count * sizeof(float4)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_potential, point_count * sizeof(float)));
    ELEC__CUDA_TRY(cudaMemcpyAsync(d_xyza, host_xyza, atoms->count * sizeof(float4),
                                   cudaMemcpyHostToDevice, streams[0]));
    ELEC__CUDA_TRY(cudaMemcpyAsync(d_b, host_b, atoms->count * sizeof(float),
                                   cudaMemcpyHostToDevice, streams[0]));
    ELEC__CUDA_TRY(cudaStreamSynchronize(streams[0])); /* both streams read them */

    /* The pipeline: chunk c is converted, uploaded and launched on stream
       c % 2, then chunk c - 1 is brought back (the copy to pageable memory
       returns once it is done) and scaled while chunk c computes. */
    chunk = (point_count + ELEC__MDH_CHUNKS - 1) / ELEC__MDH_CHUNKS;
    if (chunk < ELEC__MDH_MIN_CHUNK) chunk = ELEC__MDH_MIN_CHUNK;
    chunks = (point_count + chunk - 1) / chunk;
    for (size_t c = 0; c <= chunks; c++) {
        if (c < chunks) {
            const size_t first = c * chunk;
            const size_t count = first + chunk <= point_count ? chunk : point_count - first;
            const unsigned blocks = (unsigned)((count + block * points_per_thread - 1) /
                                               (block * points_per_thread));
            cudaStream_t stream = streams[c % 2];
            elec__cuda_convert_points(points + 3 * first, count, centre, host_points + first);
            ELEC__CUDA_TRY(cudaMemcpyAsync(d_points + first, host_points + first,
                                           count * sizeof(float4), cudaMemcpyHostToDevice,
                                           stream));
            elec__k_mdh_points<points_per_thread>
                <<<blocks, block, block * (sizeof(float4) + sizeof(float)), stream>>>(
                    d_potential + first, d_points + first, (int)count, d_xyza, d_b,
                    (int)atoms->count, (float)(p.kappa * log2e),
                    (float)(ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE));
            ELEC__CUDA_TRY(cudaGetLastError());
        }
        if (c > 0) {
            const size_t first = (c - 1) * chunk;
            const size_t count = first + chunk <= point_count ? chunk : point_count - first;
            ELEC__CUDA_TRY(cudaMemcpyAsync(potential + first, d_potential + first,
                                           count * sizeof(float), cudaMemcpyDeviceToHost,
                                           streams[(c - 1) % 2]));
            ELEC__CUDA_TRY(cudaStreamSynchronize(streams[(c - 1) % 2]));
#ifdef _OPENMP
#pragma omp parallel for
#endif
            for (long i = 0; i < (long)count; i++)
                potential[first + (size_t)i] = (float)(p.scale * potential[first + (size_t)i]);
        }
    }
    elec__ok(err);
cleanup:
    for (int k = 0; k < 2; k++)
        if (streams[k]) {
            cudaStreamSynchronize(streams[k]);
            cudaStreamDestroy(streams[k]);
        }
    cudaFree(d_xyza);
    cudaFree(d_b);
    cudaFree(d_points);
    cudaFree(d_potential);
    ELEC_FREE(host_xyza);
    ELEC_FREE(host_points);
    ELEC_FREE(host_b);
    cudaSetDevice(caller_device);
    return status;
}

/* A cutoff map under way on one device: the padded map in device memory,
   and what the host still owes it (the last layer's overflow atoms). */
typedef struct elec__cutoff_job {
    elec_cutoff_params p;
    elec__cutoff_args args;
    elec_bins bins;      /* the last layer's bins: its overflow is the host's */
    elec_atoms spilled;  /* view of the atoms those bins hold                 */
    double *spill_xyz, *spill_q;
    double origin[3], extent[3]; /* the bins' region                          */
    unsigned grid[3];    /* blocks of the kernel                            */
    int4 *host_neighbours, *d_neighbours;
    float4 *d_bins;
    float *d_map;        /* args.pitch x args.rows x padded z, scaled       */
    size_t padded;
    unsigned char *touched; /* z-slices of the caller's map that hold the
                               host's share (the copy back adds to them);
                               NULL = no share                             */
} elec__cutoff_job;

static void elec__cutoff_job_free(elec__cutoff_job *job) {
    /* only what was allocated: cudaFree(NULL) would start CUDA on a call
       refused before any GPU was looked for */
    if (job->d_bins) cudaFree(job->d_bins);
    if (job->d_neighbours) cudaFree(job->d_neighbours);
    if (job->d_map) cudaFree(job->d_map);
    if (job->d_bins || job->d_neighbours || job->d_map) (void)cudaGetLastError();
    elec_bins_free(&job->bins);
    ELEC_FREE(job->host_neighbours);
    ELEC_FREE(job->spill_xyz);
    ELEC_FREE(job->spill_q);
    ELEC_FREE(job->touched);
    memset(job, 0, sizeof *job);
}

/* One overflow atom of the host's share: where it is and the lattice
   points within its cutoff (inclusive index ranges, empty if lo > hi). */
typedef struct elec__cutoff_spill {
    double at[3], q;
    int lo[3], hi[3];
} elec__cutoff_spill;

/* The host's share of a cutoff map: the last layer's overflow atoms (at
   most ELEC__CUTOFF_HOST_OVERFLOW, unless clusters overfill a bin more
   than ELEC__CUTOFF_LAYERS times over), summed in double on the CPU while the
   GPU runs the kernel, as in seed 000.  Each adds q S(r)
   (elec_cutoff_term, the coincident rule applied) to the lattice points
   within its cutoff.  The sums go straight into the caller's map: the
   z-slices they reach are zeroed and marked in job->touched, and the copy
   back adds the device's map to those slices instead of overwriting them.
   Threads own whole z-slices, so no two write one point. */
static elec_status elec__cutoff_host_share(elec__cutoff_job *job, const elec_lattice *l,
                                           float *map, elec_error *err) {
    const elec_cutoff_params *p = &job->p;
    const double a = p->cutoff;
    const double c2 = ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE;
    const size_t m = job->bins.overflow_count, nx = l->dims[0], ny = l->dims[1];
    const long nz = (long)l->dims[2];
    elec__cutoff_spill *spill;
    if (m == 0) return ELEC_OK;
    spill = (elec__cutoff_spill *)ELEC_MALLOC(m * sizeof *spill);
    job->touched = (unsigned char *)ELEC_MALLOC((size_t)nz);
    if (!spill || !job->touched) {
        ELEC_FREE(spill);
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                          "no memory for %zu overflow atoms summed on the host", m);
    }
    memset(job->touched, 0, (size_t)nz);
    for (size_t o = 0; o < m; o++) {
        elec__cutoff_spill *sp = &spill[o];
        elec_atoms_get(&job->spilled, job->bins.overflow[o], sp->at, &sp->q, NULL);
        for (int axis = 0; axis < 3; axis++) {
            double u = (sp->at[axis] - l->origin[axis]) / l->spacing[axis];
            double reach = a / l->spacing[axis];
            double first = ceil(u - reach), last = floor(u + reach);
            sp->lo[axis] = first < 0.0 ? 0 : (int)first;
            sp->hi[axis] = last > l->dims[axis] - 1.0 ? (int)l->dims[axis] - 1 : (int)last;
        }
        for (int k = sp->lo[2]; k <= sp->hi[2]; k++) job->touched[k] = 1;
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 4)
#endif
    for (long k = 0; k < nz; k++) {
        float *slice = map + (size_t)k * nx * ny;
        if (!job->touched[k]) continue;
        memset(slice, 0, nx * ny * sizeof(float));
        for (size_t o = 0; o < m; o++) {
            const elec__cutoff_spill *sp = &spill[o];
            if (k < sp->lo[2] || k > sp->hi[2]) continue;
            for (int j = sp->lo[1]; j <= sp->hi[1]; j++)
                for (int i = sp->lo[0]; i <= sp->hi[0]; i++) {
                    double point[3], r2;
                    elec_lattice_point(l, i, j, (int)k, point);
                    r2 = elec_distance2(point, sp->at);
                    if (r2 >= c2 && r2 < a * a)
                        slice[(size_t)i + nx * (size_t)j] +=
                            (float)(p->scale * sp->q *
                                    elec_cutoff_term(sqrt(r2), a, p->kind, p->splitting));
                }
        }
    }
    ELEC_FREE(spill);
    return ELEC_OK;
}

/* The bins of the overflow of job->bins: the next layer. */
static elec_status elec__cutoff_next_layer(elec__cutoff_job *job, const double origin[3],
                                           const double extent[3], elec_error *err) {
    size_t m = job->bins.overflow_count;
    double *xyz = (double *)ELEC_MALLOC(3 * m * sizeof *xyz);
    double *q = (double *)ELEC_MALLOC(m * sizeof *q);
    elec_bins next;
    elec_status status;
    if (!xyz || !q) {
        ELEC_FREE(xyz);
        ELEC_FREE(q);
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for overflow");
    }
    for (size_t a = 0; a < m; a++)
        elec_atoms_get(&job->spilled, job->bins.overflow[a], xyz + 3 * a, q + a, NULL);
    ELEC_FREE(job->spill_xyz);
    ELEC_FREE(job->spill_q);
    job->spill_xyz = xyz;
    job->spill_q = q;
    job->spilled = elec_atoms_from_xyz(m, xyz, q, NULL);
    status = elec_bins_build(&job->spilled, origin, extent, job->p.bin_length, &next, err);
    elec_bins_free(&job->bins);
    job->bins = next;
    if (status != ELEC_OK) memset(&job->bins, 0, sizeof job->bins);
    return status;
}

/* Host side: checks the lattice against the kernel's limits, bins the
   atoms, and fills the launch arguments.  Parameters already checked and
   resolved. */
static elec_status elec__cutoff_prepare(elec__cutoff_job *job, const elec_atoms *atoms,
                                        const elec_lattice *lattice,
                                        const elec_cutoff_params *p, elec_error *err) {
    elec_status status = ELEC_OK;
    elec__cutoff_args *args = &job->args;
    int *offsets = NULL;
    int4 *host_neighbours = NULL;
    double origin[3], extent[3];
    double region, reach, spacing_max = 0.0, c = 1.0;
    size_t count, nx, ny, nz;

    memset(job, 0, sizeof *job);
    job->p = *p;
    nx = lattice->dims[0], ny = lattice->dims[1], nz = lattice->dims[2];
    if (nx > (size_t)INT_MAX - ELEC__CUTOFF_EDGE ||
        ny > 65535 * ELEC__CUTOFF_EDGE || nz > 65535 * ELEC__CUTOFF_EDGE)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "lattice %zu x %zu x %zu: at most %d points along y and z",
                          nx, ny, nz, 65535 * ELEC__CUTOFF_EDGE);

    /* A block's points span 7 spacings per axis (the widest sets a cube),
       starting anywhere inside their first bin: the region from that bin's
       corner is one bin longer.  The cutoff gets a margin for the rounding
       of the block's first bin. */
    for (int axis = 0; axis < 3; axis++)
        if (lattice->spacing[axis] > spacing_max) spacing_max = lattice->spacing[axis];
    region = (ELEC__CUTOFF_EDGE - 1) * spacing_max + p->bin_length;
    /* elec_bin_neighbourhood tries (2 reach + 1)^3 offsets: bound it first */
    reach = ceil((p->cutoff + region) / p->bin_length) + 1.0;
    count = !(2.0 * reach + 1.0 <= 64.0)
                ? (size_t)-1
                : elec_bin_neighbourhood(p->bin_length, region, p->cutoff + 1e-6, NULL, 0);
    if (count > ELEC__CUTOFF_MAX_NEIGHBOURS)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "bins of %g A against a cutoff of %g A and lattice "
                          "spacing %g A: a block needs more than %d neighbour "
                          "bins; use a longer params.bin_length",
                          p->bin_length, p->cutoff, spacing_max,
                          ELEC__CUTOFF_MAX_NEIGHBOURS);

    /* Host side: the neighbourhood and the bins over the lattice padded by
       the cutoff (atoms beyond add nothing anywhere). */
    offsets = (int *)ELEC_MALLOC(3 * (count + 1) * sizeof *offsets);
    host_neighbours = (int4 *)ELEC_MALLOC((count + 1) * sizeof *host_neighbours);
    if (!offsets || !host_neighbours) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory");
        goto cleanup;
    }
    elec_bin_neighbourhood(p->bin_length, region, p->cutoff + 1e-6, offsets, count);
    for (size_t n = 0; n < count; n++)
        host_neighbours[n] = make_int4(offsets[3 * n], offsets[3 * n + 1],
                                       offsets[3 * n + 2], 0);
    for (int axis = 0; axis < 3; axis++) {
        origin[axis] = lattice->origin[axis] - p->cutoff;
        extent[axis] = (lattice->dims[axis] - 1) * lattice->spacing[axis] + 2.0 * p->cutoff;
    }
    if ((status = elec_bins_build(atoms, origin, extent, p->bin_length, &job->bins, err)) !=
        ELEC_OK)
        goto cleanup;
    job->spilled = *atoms;
    /* the records are relative to the bins' centre (elec_bins) */
    for (int axis = 0; axis < 3; axis++)
        args->centre[axis] = job->bins.centre[axis] - job->bins.origin[axis];
    for (int k = 0; k <= ELEC__CUTOFF_MAX_ORDER; k++) {
        if (k > 0) c *= -(2.0 * k - 1.0) / (2.0 * k); /* C(-1/2, k) */
        args->coeff[k] = k <= p->splitting ? (float)(c / p->cutoff) : 0.0f;
    }
    args->cutoff2 = (float)(p->cutoff * p->cutoff);
    args->inv_cutoff2 = (float)(1.0 / (p->cutoff * p->cutoff));
    args->coincident2 = (float)(ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE);
    for (int axis = 0; axis < 3; axis++) {
        args->first[axis] = p->cutoff; /* lattice origin - bins' corner */
        args->spacing[axis] = lattice->spacing[axis];
        args->bins[axis] = job->bins.dims[axis];
    }
    args->bin_length = p->bin_length;
    args->scale = (float)p->scale;
    args->pitch = elec__round_up((int)nx, ELEC__CUTOFF_EDGE);
    args->rows = elec__round_up((int)ny, ELEC__CUTOFF_EDGE);
    args->neighbour_count = (int)count;
    job->padded = (size_t)args->pitch * args->rows * elec__round_up((int)nz, ELEC__CUTOFF_EDGE);
    job->grid[0] = (unsigned)(args->pitch / ELEC__CUTOFF_EDGE);
    job->grid[1] = (unsigned)(args->rows / ELEC__CUTOFF_EDGE);
    job->grid[2] = (unsigned)(elec__round_up((int)nz, ELEC__CUTOFF_EDGE) / ELEC__CUTOFF_EDGE);
    for (int axis = 0; axis < 3; axis++) {
        job->origin[axis] = origin[axis];
        job->extent[axis] = extent[axis];
    }
    job->host_neighbours = host_neighbours;
    host_neighbours = NULL;
    status = ELEC_OK;
cleanup:
    ELEC_FREE(offsets);
    ELEC_FREE(host_neighbours);
    return status;
}

/* Uploads the bins and launches the kernel on stream (the current device)
   once per layer of bins. */
static elec_status elec__cutoff_launch(elec__cutoff_job *job, cudaStream_t stream,
                                       elec_error *err) {
    elec_status status = ELEC_OK;
    const elec_cutoff_params *p = &job->p;
    elec__cutoff_args *args = &job->args;
    const size_t count = (size_t)args->neighbour_count;
    const size_t bin_count = (size_t)job->bins.dims[0] * job->bins.dims[1] * job->bins.dims[2];
    void (*kernel)(float *, const float4 *, const int4 *, elec__cutoff_args);
    dim3 block(ELEC__CUTOFF_EDGE, ELEC__CUTOFF_THREADS_Y, ELEC__CUTOFF_EDGE);
    dim3 grid(job->grid[0], job->grid[1], job->grid[2]);
    ELEC__CUDA_TRY(cudaMalloc((void **)&job->d_bins,
                              bin_count * ELEC_BIN_DEPTH * sizeof(float4)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&job->d_neighbours, (count + 1) * sizeof(int4)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&job->d_map, job->padded * sizeof(float)));
    ELEC__CUDA_TRY(cudaMemcpyAsync(job->d_bins, job->bins.slots,
                                   bin_count * ELEC_BIN_DEPTH * sizeof(float4),
                                   cudaMemcpyHostToDevice, stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(job->d_neighbours, job->host_neighbours, count * sizeof(int4),
                                   cudaMemcpyHostToDevice, stream));
    /* Layers: while many atoms overflow their bins (liquid water at the
       default fill overflows ~4 %: far too many for the host), bin the
       overflow again and run the kernel once more, adding to the map, until
       ELEC__CUTOFF_HOST_OVERFLOW atoms or fewer are left over or
       ELEC__CUTOFF_LAYERS layers have run; those left over are the host's
       share, summed while the kernel runs (elec__cutoff_host_share). */
    switch (p->kind == ELEC_CUTOFF_SHIFTED ? 0 : p->splitting) {
    case 0: kernel = elec__k_cutoff_lattice<ELEC_CUTOFF_SHIFTED, 0>; break;
    case 1: kernel = elec__k_cutoff_lattice<ELEC_CUTOFF_MSM, 1>; break;
    case 2: kernel = elec__k_cutoff_lattice<ELEC_CUTOFF_MSM, 2>; break;
    case 3: kernel = elec__k_cutoff_lattice<ELEC_CUTOFF_MSM, 3>; break;
    case 4: kernel = elec__k_cutoff_lattice<ELEC_CUTOFF_MSM, 4>; break;
    case 5: kernel = elec__k_cutoff_lattice<ELEC_CUTOFF_MSM, 5>; break;
    default: kernel = elec__k_cutoff_lattice<ELEC_CUTOFF_MSM, 6>; break;
    }
    for (int layer = 0;; layer++) {
        kernel<<<grid, block, 0, stream>>>(job->d_map, job->d_bins, job->d_neighbours, *args);
        ELEC__CUDA_TRY(cudaGetLastError());
        if (job->bins.overflow_count <= ELEC__CUTOFF_HOST_OVERFLOW ||
            layer + 1 == ELEC__CUTOFF_LAYERS)
            break;
        ELEC__CUDA_TRY(cudaStreamSynchronize(stream)); /* d_bins is free again */
        if ((status = elec__cutoff_next_layer(job, job->origin, job->extent, err)) != ELEC_OK)
            goto cleanup;
        ELEC__CUDA_TRY(cudaMemcpyAsync(job->d_bins, job->bins.slots,
                                       bin_count * ELEC_BIN_DEPTH * sizeof(float4),
                                       cudaMemcpyHostToDevice, stream));
        args->accumulate = 1;
    }
cleanup:
    return status;
}

/* Slices [first, first + count) of the padded device map, unpadded, to
   host memory at `to` (asynchronous on stream). */
static elec_status elec__cutoff_copy_slices(const elec__cutoff_job *job, size_t nx, size_t ny,
                                            size_t first, size_t count, float *to,
                                            cudaStream_t stream, elec_error *err) {
    elec_status status = ELEC_OK;
    for (size_t k = 0; k < count; k++)
        ELEC__CUDA_TRY(cudaMemcpy2DAsync(to + k * nx * ny, nx * sizeof(float),
                                         job->d_map + (first + k) * (size_t)job->args.pitch *
                                                          job->args.rows,
                                         job->args.pitch * sizeof(float), nx * sizeof(float),
                                         ny, cudaMemcpyDeviceToHost, stream));
cleanup:
    return status;
}

/* Slices [first, first + count) of the map from `from` (staging, unpadded)
   into the caller's map: a copy, or an add where the slice holds the
   host's share (job->touched). */
static void elec__cutoff_unstage(const elec__cutoff_job *job, size_t slice, size_t first,
                                 size_t count, const float *from, float *map) {
#ifdef _OPENMP
#pragma omp parallel for
#endif
    for (long k = 0; k < (long)count; k++) {
        const float *src = from + (size_t)k * slice;
        float *dst = map + (first + (size_t)k) * slice;
        if (job->touched && job->touched[first + (size_t)k]) {
            for (size_t e = 0; e < slice; e++) dst[e] += src[e];
        } else {
            memcpy(dst, src, slice * sizeof(float));
        }
    }
}

/* Copies the map back without the padding (the kernel applied the scale),
   adding it to the slices that hold the host's share.  Large maps go
   through two pinned buffers of ~16 MB: the DMA of one chunk of slices
   overlaps the host's copy of the other into the caller's (pageable) map,
   which a direct copy would stage through the driver at a few GB/s.  A
   small map without a host share is copied directly; with one, through one
   pageable buffer. */
#define ELEC__STAGING_BYTES ((size_t)16 << 20)
static elec_status elec__cutoff_finish(elec__cutoff_job *job, const elec_lattice *lattice,
                                       float *map, cudaStream_t stream, elec_error *err) {
    elec_status status = ELEC_OK;
    const size_t nx = lattice->dims[0], ny = lattice->dims[1], nz = lattice->dims[2];
    const size_t slice = nx * ny;
    size_t per_chunk = slice * sizeof(float) >= ELEC__STAGING_BYTES
                           ? 1 : ELEC__STAGING_BYTES / (slice * sizeof(float));
    size_t chunks = (nz + per_chunk - 1) / per_chunk;
    float *pinned = NULL, *pageable = NULL, *staging[2] = {NULL, NULL};
    cudaEvent_t copied[2] = {NULL, NULL};
    if (chunks >= 3 && cudaMallocHost((void **)&pinned, 2 * per_chunk * slice * sizeof(float)) ==
                           cudaSuccess) {
        staging[0] = pinned;
    } else {
        (void)cudaGetLastError();
        if (!job->touched) {
            if ((status = elec__cutoff_copy_slices(job, nx, ny, 0, nz, map, stream, err)) !=
                ELEC_OK)
                goto cleanup;
            ELEC__CUDA_TRY(cudaStreamSynchronize(stream));
            goto cleanup;
        }
        if (chunks < 3) { /* small: the whole map in one chunk */
            per_chunk = nz;
            chunks = 1;
        }
        pageable = (float *)ELEC_MALLOC((chunks == 1 ? 1 : 2) * per_chunk * slice *
                                        sizeof(float));
        if (!pageable) {
            status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                                "no memory to stage the map's copy back");
            goto cleanup;
        }
        staging[0] = pageable;
    }
    staging[1] = chunks == 1 ? staging[0] : staging[0] + per_chunk * slice;
    ELEC__CUDA_TRY(cudaEventCreateWithFlags(&copied[0], cudaEventDisableTiming));
    ELEC__CUDA_TRY(cudaEventCreateWithFlags(&copied[1], cudaEventDisableTiming));
    for (size_t c = 0; c <= chunks; c++) {
        /* issue chunk c while the host empties chunk c - 1 */
        if (c < chunks) {
            const size_t first = c * per_chunk;
            const size_t count = first + per_chunk <= nz ? per_chunk : nz - first;
            if ((status = elec__cutoff_copy_slices(job, nx, ny, first, count, staging[c % 2],
                                                   stream, err)) != ELEC_OK)
                goto cleanup;
            ELEC__CUDA_TRY(cudaEventRecord(copied[c % 2], stream));
        }
        if (c > 0) {
            const size_t done = c - 1, first = done * per_chunk;
            const size_t count = first + per_chunk <= nz ? per_chunk : nz - first;
            ELEC__CUDA_TRY(cudaEventSynchronize(copied[done % 2]));
            elec__cutoff_unstage(job, slice, first, count, staging[done % 2], map);
        }
    }
cleanup:
    if (staging[0]) cudaStreamSynchronize(stream);
    if (pinned) cudaFreeHost(pinned);
    ELEC_FREE(pageable);
    if (copied[0]) cudaEventDestroy(copied[0]);
    if (copied[1]) cudaEventDestroy(copied[1]);
    return status;
}

ELEC_DEF elec_status elec_cuda_cutoff_map(const elec_atoms *atoms,
                                          const elec_lattice *lattice,
                                          const elec_cutoff_params *params,
                                          float *map, elec_error *err) {
    elec_status status;
    elec_cutoff_params p;
    elec__cutoff_job job;
    int devices[ELEC__MAX_GPUS], device_count = 0, caller_device = 0;
    cudaStream_t stream = NULL;

    memset(&job, 0, sizeof job);
    if ((status = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return status;
    if ((status = elec_lattice_check(lattice, err)) != ELEC_OK) return status;
    if ((status = elec_cutoff_params_check(params, err)) != ELEC_OK) return status;
    if (!map) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "map is NULL");
    p = elec_cutoff_params_resolved(params);
    /* the kernel's limits first: refused without looking for a GPU */
    if ((status = elec__cutoff_prepare(&job, atoms, lattice, &p, err)) != ELEC_OK) {
        elec__cutoff_job_free(&job);
        return status;
    }
    status = elec__cuda_gpu_list(&p.gpus, devices, &device_count, err);
    if (status != ELEC_OK) {
        elec__cutoff_job_free(&job);
        return status;
    }
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;

    ELEC__CUDA_TRY(cudaSetDevice(devices[0]));
    ELEC__CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if ((status = elec__cutoff_launch(&job, stream, err)) != ELEC_OK) goto cleanup;
    if ((status = elec__cutoff_host_share(&job, lattice, map, err)) != ELEC_OK) goto cleanup;
    if ((status = elec__cutoff_finish(&job, lattice, map, stream, err)) != ELEC_OK)
        goto cleanup;
    if (p.progress && p.progress(1.0, p.progress_user)) {
        status = elec__fail(err, ELEC_ERR_CANCELLED, 0,
                            "cutoff map cancelled by the progress callback");
        goto cleanup;
    }
    elec__ok(err);
    status = ELEC_OK;

cleanup:
    if (stream) {
        cudaStreamSynchronize(stream);
        cudaStreamDestroy(stream);
    }
    elec__cutoff_job_free(&job);
    cudaSetDevice(caller_device);
    return status;
}

/* ------------------------------------------------------------- MSM map */

/* Multilevel summation on the GPU (elec.h; Hardy, Stone and Schulten 2009,
   seed 002): every stage on the device, in float, so that a large map
   never waits on the host.
     short range     the cutoff kernel above, MSM kind, into the padded map
     anterpolation   one thread per atom, 2s x 2s x 2s atomic adds
     restriction     one thread per coarse point, gathering the fine points
                     of its stencil: q_{l+1}(M) = sum_m Phi(m/2 - M) q_l(m)
     lattice cutoff  one thread per point, the stencil g_0(|k| h) / 2^l
                     (one octant, by symmetry) read through the read-only
                     cache by a whole warp at once, rows cut to the sphere
                     of radius 2a beyond which g_0 is zero
     top             one thread per point, direct sum in double
     prolongation    one thread per fine point, gathering its coarse points
     interpolation   one thread per map point, adding to the short range;
                     the per-axis weights come from host tables (a map is
                     a lattice: weights repeat along every axis)
   The basis (elec__msm_pieces) and the half-point weights Phi(d/2) the
   transfers use travel in the launch arguments. */
/* kernels and their templated launchers: C++ linkage inside the
   extern "C" block of the host side */
extern "C++" {
#define ELEC__MSM_MAX_S 5
#define ELEC__MSM_BLOCK 128

typedef struct elec__msm_basis_args {
    /* w_j(t) = sum_p coeff[j][p] t^p over [0, 1], j = 0 .. 2s-1 */
    float coeff[2 * ELEC__MSM_MAX_S][2 * ELEC__MSM_MAX_S];
    /* Phi(d / 2) for d = -(2s-1) .. 2s-1, at d + 2s - 1 */
    float half[4 * ELEC__MSM_MAX_S - 1];
} elec__msm_basis_args;

/* One lattice of the hierarchy on the device. */
typedef struct elec__msm_level_args {
    int lo[3], n[3];
} elec__msm_level_args;

static elec__msm_basis_args elec__msm_basis_of(int interpolation) {
    elec__msm_basis_args b;
    double denominator;
    const double *rows = elec__msm_pieces(interpolation, &denominator);
    const int s = elec_msm_support(interpolation);
    memset(&b, 0, sizeof b);
    for (int j = 0; j < 2 * s; j++)
        for (int p = 0; p < 2 * s; p++)
            b.coeff[j][p] = (float)(rows[j * 2 * s + p] / denominator);
    for (int d = -(2 * s - 1); d <= 2 * s - 1; d++)
        b.half[d + 2 * s - 1] = (float)elec_msm_basis(0.5 * d, interpolation);
    return b;
}

/* The 2S weights of a position t (lattice units); returns the first point. */
template <int S>
__device__ __forceinline__ int elec__msm_weights_device(float t, const elec__msm_basis_args &b,
                                                        float w[2 * S]) {
    const float cell = floorf(t), u = t - cell;
#pragma unroll
    for (int j = 0; j < 2 * S; j++) {
        float v = b.coeff[j][2 * S - 1];
#pragma unroll
        for (int p = 2 * S - 2; p >= 0; p--) v = fmaf(v, u, b.coeff[j][p]);
        w[j] = v;
    }
    return (int)cell - (S - 1);
}

__device__ __forceinline__ size_t elec__msm_index(const elec__msm_level_args &g, int i, int j,
                                                  int k) {
    return (size_t)(i - g.lo[0]) +
           (size_t)g.n[0] * ((size_t)(j - g.lo[1]) + (size_t)g.n[1] * (size_t)(k - g.lo[2]));
}

/* Stage 1: q_0(m) += q_j Phi(x_j/h - m), atoms relative to the reference. */
template <int S>
__global__ void __launch_bounds__(ELEC__MSM_BLOCK)
elec__k_msm_anterpolate(float *q0, elec__msm_level_args g, const float4 *atoms, int n,
                        float inv_h, elec__msm_basis_args b) {
    const int a = blockIdx.x * blockDim.x + threadIdx.x;
    float wx[2 * S], wy[2 * S], wz[2 * S];
    if (a >= n) return;
    const float4 atom = atoms[a];
    const int fx = elec__msm_weights_device<S>(atom.x * inv_h, b, wx);
    const int fy = elec__msm_weights_device<S>(atom.y * inv_h, b, wy);
    const int fz = elec__msm_weights_device<S>(atom.z * inv_h, b, wz);
    for (int c = 0; c < 2 * S; c++)
        for (int bb = 0; bb < 2 * S; bb++) {
            const float qyz = atom.w * wy[bb] * wz[c];
            float *row = q0 + elec__msm_index(g, fx, fy + bb, fz + c);
#pragma unroll
            for (int i = 0; i < 2 * S; i++) atomicAdd(row + i, qyz * wx[i]);
        }
}

/* The fine points m = 2M + d of a coarse point M, d = -(2S-1) .. 2S-1,
   clipped to the fine lattice. */
__device__ __forceinline__ void elec__msm_fine_range(int coarse, int lo, int n, int S,
                                                     int *first, int *last) {
    *first = max(2 * coarse - (2 * S - 1), lo);
    *last = min(2 * coarse + (2 * S - 1), lo + n - 1);
}

/* Stage 2: one thread per coarse point gathers its fine points. */
template <int S>
__global__ void __launch_bounds__(ELEC__MSM_BLOCK)
elec__k_msm_restrict(float *coarse, elec__msm_level_args cg, const float *fine,
                     elec__msm_level_args fg, elec__msm_basis_args b) {
    const size_t at = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (at >= (size_t)cg.n[0] * cg.n[1] * cg.n[2]) return;
    const int M[3] = {cg.lo[0] + (int)(at % cg.n[0]), cg.lo[1] + (int)(at / cg.n[0] % cg.n[1]),
                      cg.lo[2] + (int)(at / cg.n[0] / cg.n[1])};
    int first[3], last[3];
    float sum = 0.0f;
    for (int axis = 0; axis < 3; axis++)
        elec__msm_fine_range(M[axis], fg.lo[axis], fg.n[axis], S, first + axis, last + axis);
    for (int k = first[2]; k <= last[2]; k++) {
        const float wz = b.half[k - 2 * M[2] + 2 * S - 1];
        if (wz == 0.0f) continue;
        for (int j = first[1]; j <= last[1]; j++) {
            const float wyz = wz * b.half[j - 2 * M[1] + 2 * S - 1];
            const float *row = fine + elec__msm_index(fg, first[0], j, k);
            if (wyz == 0.0f) continue;
            for (int i = first[0]; i <= last[0]; i++)
                sum += wyz * b.half[i - 2 * M[0] + 2 * S - 1] * row[i - first[0]];
        }
    }
    coarse[at] = sum;
}

/* Stage 4: e_l(m) += sum_M Phi(m/2 - M) e_{l+1}(M), one thread per fine
   point; an even m sees one coarse point, an odd one 2S. */
template <int S>
__global__ void __launch_bounds__(ELEC__MSM_BLOCK)
elec__k_msm_prolong(float *fine, elec__msm_level_args fg, const float *coarse,
                    elec__msm_level_args cg, elec__msm_basis_args b) {
    const size_t at = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (at >= (size_t)fg.n[0] * fg.n[1] * fg.n[2]) return;
    const int m[3] = {fg.lo[0] + (int)(at % fg.n[0]), fg.lo[1] + (int)(at / fg.n[0] % fg.n[1]),
                      fg.lo[2] + (int)(at / fg.n[0] / fg.n[1])};
    int first[3], last[3];
    float sum = 0.0f;
    for (int axis = 0; axis < 3; axis++) {
        /* 2M within m -+ (2S - 1) */
        first[axis] = -((2 * S - 1 - m[axis]) >> 1); /* ceil((m - 2S + 1) / 2) */
        last[axis] = (m[axis] + 2 * S - 1) >> 1;     /* floor((m + 2S - 1) / 2) */
    }
    for (int K = first[2]; K <= last[2]; K++) {
        const float wz = b.half[m[2] - 2 * K + 2 * S - 1];
        if (wz == 0.0f) continue;
        for (int J = first[1]; J <= last[1]; J++) {
            const float wyz = wz * b.half[m[1] - 2 * J + 2 * S - 1];
            if (wyz == 0.0f) continue;
            for (int I = first[0]; I <= last[0]; I++)
                sum += wyz * b.half[m[0] - 2 * I + 2 * S - 1] *
                       coarse[elec__msm_index(cg, I, J, K)];
        }
    }
    fine[at] += sum;
}

/* Stage 3 below the top: e(m) = factor sum_k g_0(|k| h) q(m + k), the
   stencil's octant at |k_x| + (r+1)(|k_y| + (r+1)|k_z|); each row cut to
   the sphere |k| < 2a/h beyond which g_0 is zero: spans[|k_y| + (r+1)|k_z|]
   is the row's last |k_x| inside it, -1 for a row wholly outside.  A
   table, not a square root per row: a kernel that cut its rows with
   min(r, (int)sqrtf(rest) + 1) summed wrongly on an H100 (nvcc 13.0, -O3;
   2.9e-1 relative error at a = 8 A, h = 2 A) while a copy computing the
   same span behind a runtime flag summed right; the table sidesteps it
   and saves the square root. */
__global__ void __launch_bounds__(ELEC__MSM_BLOCK)
elec__k_msm_lattice_cutoff(float *e, const float *q, elec__msm_level_args g,
                           const float *stencil, const int *spans, int r, float factor) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = blockIdx.y, k = blockIdx.z;
    const int side = r + 1;
    float sum = 0.0f;
    if (i >= g.n[0]) return;
    for (int dk = max(-r, -k); dk <= min(r, g.n[2] - 1 - k); dk++)
        for (int dj = max(-r, -j); dj <= min(r, g.n[1] - 1 - j); dj++) {
            const int span = __ldg(spans + abs(dj) + side * abs(dk));
            if (span < 0) continue;
            const float *row = stencil + (size_t)side * (abs(dj) + side * abs(dk));
            const float *qrow = q + (size_t)g.n[0] * ((size_t)(j + dj) + (size_t)g.n[1] * (k + dk));
            const int lo = max(-span, -i), hi = min(span, g.n[0] - 1 - i);
            for (int di = lo; di <= hi; di++) sum += __ldg(row + abs(di)) * __ldg(qrow + i + di);
        }
    e[i + (size_t)g.n[0] * (j + (size_t)g.n[1] * k)] = factor * sum;
}

/* Stage 3 at the top: gamma(r/a_L)/a_L between all points, in double. */
__global__ void __launch_bounds__(ELEC__MSM_BLOCK)
elec__k_msm_top(float *e, const float *q, elec__msm_level_args g, double h, double a,
                int splitting) {
    const int count = g.n[0] * g.n[1] * g.n[2];
    const int at = blockIdx.x * blockDim.x + threadIdx.x;
    if (at >= count) return;
    const int i = at % g.n[0], j = at / g.n[0] % g.n[1], k = at / g.n[0] / g.n[1];
    double sum = 0.0;
    for (int other = 0; other < count; other++) {
        const double charge = q[other];
        if (charge == 0.0) continue;
        const double dx = other % g.n[0] - i, dy = other / g.n[0] % g.n[1] - j,
                     dz = other / g.n[0] / g.n[1] - k;
        sum += charge * elec_msm_gamma(h * sqrt(dx * dx + dy * dy + dz * dz) / a, splitting) / a;
    }
    e[at] = (float)sum;
}

/* Stage 5: map(p) += scale sum Phi e_0, one thread per map point; axis
   tables: first point and 2S weights per map index. */
template <int S>
__global__ void __launch_bounds__(ELEC__MSM_BLOCK)
elec__k_msm_interpolate(float *map, int pitch, int rows, int nx, int ny, int nz,
                        const float *e0, elec__msm_level_args g, const int *first_x,
                        const int *first_y, const int *first_z, const float *wx,
                        const float *wy, const float *wz, float scale) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = blockIdx.y, k = blockIdx.z;
    float w[2 * S], sum = 0.0f;
    if (i >= nx || j >= ny || k >= nz) return;
#pragma unroll
    for (int a = 0; a < 2 * S; a++) w[a] = __ldg(wx + (size_t)i * 2 * S + a);
    const int fx = first_x[i], fy = first_y[j], fz = first_z[k];
    for (int c = 0; c < 2 * S; c++)
        for (int bb = 0; bb < 2 * S; bb++) {
            const float wyz = __ldg(wy + (size_t)j * 2 * S + bb) * __ldg(wz + (size_t)k * 2 * S + c);
            const float *row = e0 + elec__msm_index(g, fx, fy + bb, fz + c);
            float part = 0.0f;
#pragma unroll
            for (int a = 0; a < 2 * S; a++) part = fmaf(w[a], __ldg(row + a), part);
            sum = fmaf(wyz, part, sum);
        }
    map[i + (size_t)pitch * (j + (size_t)rows * k)] += scale * sum;
}

/* The interpolation table of one map axis: for each map index, the first
   finest-lattice point and its 2s weights. */
static void elec__msm_axis_table(const elec_lattice *l, int axis, double reference,
                                 const elec_msm_params *p, int *first, float *w) {
    const int s = elec_msm_support((int)p->interpolation);
    double weights[2 * ELEC__MSM_MAX_S];
    for (int i = 0; i < l->dims[axis]; i++) {
        double x = l->origin[axis] + i * l->spacing[axis] - reference;
        first[i] = (int)elec_msm_axis_weights(x / p->spacing, (int)p->interpolation, weights,
                                              NULL);
        for (int a = 0; a < 2 * s; a++) w[(size_t)i * 2 * s + a] = (float)weights[a];
    }
}

/* Records an event of the stage timings (when they are wanted). */
#define ELEC__MSM_MARK(index)                                                \
    do {                                                                     \
        if (p.times) ELEC__CUDA_TRY(cudaEventRecord(marks[index], stream));  \
    } while (0)

template <int S>
static elec_status elec__msm_stages(const elec_msm_params &p,
                                           const elec__msm_shape &shape, float *const *d_q,
                                           float *const *d_e, const float4 *d_atoms,
                                           size_t n, const float *d_stencil,
                                           const int *d_spans, int radius,
                                           cudaStream_t stream, cudaEvent_t *marks,
                                           elec_error *err) {
    elec_status status = ELEC_OK;
    const elec__msm_basis_args b = elec__msm_basis_of((int)p.interpolation);
    const int top = shape.levels - 1;
    elec__msm_level_args g[ELEC__MSM_MAX_LEVELS];
    for (int l = 0; l < shape.levels; l++)
        for (int axis = 0; axis < 3; axis++) {
            g[l].lo[axis] = (int)shape.lo[l][axis];
            g[l].n[axis] = shape.n[l][axis];
        }
    if (n > 0) {
        elec__k_msm_anterpolate<S><<<(unsigned)((n + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK),
                                     ELEC__MSM_BLOCK, 0, stream>>>(
            d_q[0], g[0], d_atoms, (int)n, (float)(1.0 / p.spacing), b);
        ELEC__CUDA_TRY(cudaGetLastError());
    }
    ELEC__MSM_MARK(2);
    for (int l = 0; l < top; l++) {
        size_t count = elec__msm_shape_points(&shape, l + 1);
        elec__k_msm_restrict<S><<<(unsigned)((count + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK),
                                  ELEC__MSM_BLOCK, 0, stream>>>(d_q[l + 1], g[l + 1], d_q[l],
                                                                g[l], b);
        ELEC__CUDA_TRY(cudaGetLastError());
    }
    ELEC__MSM_MARK(3);
    for (int l = 0; l < top; l++) {
        dim3 grid((g[l].n[0] + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK, g[l].n[1], g[l].n[2]);
        elec__k_msm_lattice_cutoff<<<grid, ELEC__MSM_BLOCK, 0, stream>>>(
            d_e[l], d_q[l], g[l], d_stencil, d_spans, radius, 1.0f / (float)(1L << l));
        ELEC__CUDA_TRY(cudaGetLastError());
    }
    ELEC__MSM_MARK(4);
    {
        size_t count = elec__msm_shape_points(&shape, top);
        elec__k_msm_top<<<(unsigned)((count + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK),
                          ELEC__MSM_BLOCK, 0, stream>>>(
            d_e[top], d_q[top], g[top], p.spacing * (double)(1L << top),
            p.cutoff * (double)(1L << top), p.splitting);
        ELEC__CUDA_TRY(cudaGetLastError());
    }
    ELEC__MSM_MARK(5);
    for (int l = top - 1; l >= 0; l--) {
        size_t count = elec__msm_shape_points(&shape, l);
        elec__k_msm_prolong<S><<<(unsigned)((count + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK),
                                 ELEC__MSM_BLOCK, 0, stream>>>(d_e[l], g[l], d_e[l + 1],
                                                               g[l + 1], b);
        ELEC__CUDA_TRY(cudaGetLastError());
    }
    ELEC__MSM_MARK(6);
cleanup:
    return status;
}

/* Stages 1-4 for the support of p.interpolation (2 to 5 points each way:
   the template's compile-time basis width). */
static elec_status elec__msm_launch_stages(const elec_msm_params &p,
                                           const elec__msm_shape &shape, float *const *d_q,
                                           float *const *d_e, const float4 *d_atoms,
                                           size_t n, const float *d_stencil,
                                           const int *d_spans, int radius,
                                           cudaStream_t stream, cudaEvent_t *marks,
                                           elec_error *err) {
    switch (elec_msm_support((int)p.interpolation)) {
    case 2: return elec__msm_stages<2>(p, shape, d_q, d_e, d_atoms, n, d_stencil, d_spans,
                                       radius, stream, marks, err);
    case 3: return elec__msm_stages<3>(p, shape, d_q, d_e, d_atoms, n, d_stencil, d_spans,
                                       radius, stream, marks, err);
    case 4: return elec__msm_stages<4>(p, shape, d_q, d_e, d_atoms, n, d_stencil, d_spans,
                                       radius, stream, marks, err);
    default: return elec__msm_stages<5>(p, shape, d_q, d_e, d_atoms, n, d_stencil, d_spans,
                                        radius, stream, marks, err);
    }
}

template <int S>
static elec_status elec__msm_launch_interpolation(const elec__cutoff_job &job,
                                                  const elec_lattice *l, const float *d_e0,
                                                  const elec__msm_shape &shape,
                                                  const int *d_first, const float *d_w,
                                                  float scale, cudaStream_t stream,
                                                  elec_error *err) {
    elec_status status = ELEC_OK;
    elec__msm_level_args g;
    const int nx = l->dims[0], ny = l->dims[1], nz = l->dims[2];
    dim3 grid((nx + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK, ny, nz);
    for (int axis = 0; axis < 3; axis++) {
        g.lo[axis] = (int)shape.lo[0][axis];
        g.n[axis] = shape.n[0][axis];
    }
    elec__k_msm_interpolate<S><<<grid, ELEC__MSM_BLOCK, 0, stream>>>(
        job.d_map, job.args.pitch, job.args.rows, nx, ny, nz, d_e0, g, d_first,
        d_first + nx, d_first + nx + ny, d_w, d_w + (size_t)nx * 2 * S,
        d_w + (size_t)(nx + ny) * 2 * S, scale);
    ELEC__CUDA_TRY(cudaGetLastError());
cleanup:
    return status;
}

} /* extern "C++" */

/* The lattice-cutoff stencil's octant, g_0(|k| h) at k = (dx, dy, dz) >= 0
   (elec_cpu.h's stencil), and each row's last dx inside |k| h < 2a (-1
   for none): (radius + 1)^3 and (radius + 1)^2 entries. */
static void elec__msm_stencil(const elec_msm_params *p, int radius, float *stencil,
                              int *spans) {
    const size_t side = (size_t)radius + 1;
    const double reach = 2.0 * p->cutoff / p->spacing;
    for (size_t k = 0; k < side * side * side; k++) {
        double dx = (double)(k % side), dy = (double)(k / side % side),
               dz = (double)(k / side / side);
        double r = p->spacing * sqrt(dx * dx + dy * dy + dz * dz);
        stencil[k] = (float)(elec_msm_gamma(r / p->cutoff, p->splitting) / p->cutoff -
                             elec_msm_gamma(r / (2.0 * p->cutoff), p->splitting) /
                                 (2.0 * p->cutoff));
    }
    for (size_t row = 0; row < side * side; row++) {
        const double dy = (double)(row % side), dz = (double)(row / side);
        int last = -1;
        while (last + 1 <= radius &&
               (last + 1.0) * (last + 1.0) + dy * dy + dz * dz < reach * reach)
            last++;
        spans[row] = last;
    }
}

static double elec__msm_clock(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The coincident rule in an MSM map: at a map point within
   ELEC_COINCIDENT_DISTANCE of an atom the pair is left out, but the
   lattices carry every atom's smooth part gamma(r/a)/a, which must come
   back out (elec_cpu_msm_map does so in its short-range sum).  The GPU's
   short-range pass only leaves the pair out; these are the points and what
   each gains, -scale q gamma(r/a)/a, found on the host while the GPU works
   and added once the map is back. */
typedef struct elec__msm_take_back {
    size_t count;
    size_t *index; /* map points */
    float *value;  /* scaled, to add at each */
} elec__msm_take_back;

static void elec__msm_take_back_free(elec__msm_take_back *t) {
    ELEC_FREE(t->index);
    ELEC_FREE(t->value);
    memset(t, 0, sizeof *t);
}

static elec_status elec__msm_take_back_find(const elec_atoms *atoms, const elec_lattice *l,
                                            const elec_msm_params *p, elec__msm_take_back *t,
                                            elec_error *err) {
    size_t *atom = NULL;
    memset(t, 0, sizeof *t);
    t->count = elec__coincident_points(atoms, l, NULL, NULL, 0);
    if (t->count == 0) return ELEC_OK;
    t->index = (size_t *)ELEC_MALLOC(t->count * sizeof *t->index);
    t->value = (float *)ELEC_MALLOC(t->count * sizeof *t->value);
    atom = (size_t *)ELEC_MALLOC(t->count * sizeof *atom);
    if (!t->index || !t->value || !atom) {
        ELEC_FREE(atom);
        elec__msm_take_back_free(t);
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for coincident points");
    }
    elec__coincident_points(atoms, l, t->index, atom, t->count);
    for (size_t c = 0; c < t->count; c++) {
        const size_t i = t->index[c] % l->dims[0], j = t->index[c] / l->dims[0] % l->dims[1],
                     k = t->index[c] / l->dims[0] / l->dims[1];
        double x[3], point[3], q;
        elec_atoms_get(atoms, atom[c], x, &q, NULL);
        elec_lattice_point(l, (int)i, (int)j, (int)k, point);
        t->value[c] = (float)(-p->scale * q *
                              elec_msm_gamma(sqrt(elec_distance2(x, point)) / p->cutoff,
                                             p->splitting) /
                              p->cutoff);
    }
    ELEC_FREE(atom);
    return ELEC_OK;
}

static void elec__msm_take_back_apply(const elec__msm_take_back *t, float *map) {
    for (size_t c = 0; c < t->count; c++) map[t->index[c]] += t->value[c];
}

/* The GPU's float lattice sums agree with the CPU's double ones to ~1e-6:
   a tolerance under ELEC_MSM_GPU_TOLERANCE_FLOOR is refused here rather
   than answered with float rounding in place of the promised accuracy. */
static elec_status elec__cuda_msm_float_floor(const elec_msm_params *p, elec_error *err) {
    if (p && p->tolerance > 0.0 && p->tolerance < ELEC_MSM_GPU_TOLERANCE_FLOOR)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "MSM tolerance %g on the GPU: below what its float lattice "
                          "sums allow (ELEC_MSM_GPU_TOLERANCE_FLOOR, %g); use the CPU",
                          p->tolerance, ELEC_MSM_GPU_TOLERANCE_FLOOR);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_cuda_msm_map(const elec_atoms *atoms, const elec_lattice *lattice,
                                       const elec_msm_params *params, float *map,
                                       elec_error *err) {
    elec_status status;
    elec_msm_params p;
    elec_cutoff_params cp;
    elec__cutoff_job job;
    elec__msm_shape shape;
    int devices[ELEC__MAX_GPUS], device_count = 0, caller_device = 0, radius = 0;
    const int nx = lattice ? lattice->dims[0] : 0, ny = lattice ? lattice->dims[1] : 0,
              nz = lattice ? lattice->dims[2] : 0;
    cudaStream_t stream = NULL;
    cudaEvent_t marks[9];
    int marks_made = 0, s;
    double reference[3], lo[3], hi[3], started = elec__msm_clock();
    float4 *host_atoms = NULL, *d_atoms = NULL;
    float *host_stencil = NULL, *d_stencil = NULL, *d_lattices = NULL, *host_w = NULL;
    int *host_spans = NULL, *d_spans = NULL;
    float *d_q[ELEC__MSM_MAX_LEVELS], *d_e[ELEC__MSM_MAX_LEVELS], *d_w = NULL;
    int *host_first = NULL, *d_first = NULL;
    size_t total_points = 0, n = 0, side = 0;
    elec__msm_take_back take_back = {0, NULL, NULL};

    memset(&job, 0, sizeof job);
    if ((status = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return status;
    if ((status = elec_lattice_check(lattice, err)) != ELEC_OK) return status;
    /* the very choice elec_cpu_msm_map makes for this lattice */
    p = elec__msm_params_for_points(params, elec_lattice_size(lattice), atoms->count);
    if ((status = elec_msm_params_check(&p, err)) != ELEC_OK) return status;
    if ((status = elec__cuda_msm_float_floor(&p, err)) != ELEC_OK) return status;
    if (!map) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "map is NULL");
    p = elec_msm_params_resolved(&p);
    s = elec_msm_support((int)p.interpolation);
    n = atoms->count;
    if (n > (size_t)INT_MAX / 2 || (size_t)nx + ny + nz > (size_t)INT_MAX / 16)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "MSM on the GPU: %zu atoms and %d + %d + %d map points along "
                          "the axes: at most %d and %d", n, nx, ny, nz, INT_MAX / 2,
                          INT_MAX / 16);
    status = elec__cuda_gpu_list(&p.gpus, devices, &device_count, err);
    if (status != ELEC_OK) return status;
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;

    /* Host: atoms relative to the map's centre, the hierarchy's shape, the
       stencil of level 0 and the map's interpolation tables. */
    for (int axis = 0; axis < 3; axis++) {
        double half = 0.5 * (lattice->dims[axis] - 1) * lattice->spacing[axis];
        reference[axis] = lattice->origin[axis] + half;
        lo[axis] = -half;
        hi[axis] = half;
    }
    host_atoms = (float4 *)ELEC_MALLOC((n + 1) * sizeof *host_atoms);
    if (!host_atoms) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory for atoms");
        goto cleanup;
    }
    for (size_t a = 0; a < n; a++) {
        double x[3], q;
        elec_atoms_get(atoms, a, x, &q, NULL);
        for (int axis = 0; axis < 3; axis++) {
            x[axis] -= reference[axis];
            lo[axis] = x[axis] < lo[axis] ? x[axis] : lo[axis];
            hi[axis] = x[axis] > hi[axis] ? x[axis] : hi[axis];
        }
        host_atoms[a] = make_float4((float)x[0], (float)x[1], (float)x[2], (float)q);
    }
    if ((status = elec__msm_shape_of(&p, lo, hi, &shape, err)) != ELEC_OK) goto cleanup;
    if (shape.n[0][1] > 65535 || shape.n[0][2] > 65535 || ny > 65535 || nz > 65535) {
        status = elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                            "MSM on the GPU: at most 65535 map or lattice points "
                            "along y and z");
        goto cleanup;
    }
    for (int l = 0; l < shape.levels; l++) total_points += elec__msm_shape_points(&shape, l);
    radius = (int)ceil(2.0 * p.cutoff / p.spacing);
    side = (size_t)radius + 1;
    host_stencil = (float *)ELEC_MALLOC(side * side * side * sizeof *host_stencil);
    host_spans = (int *)ELEC_MALLOC(side * side * sizeof *host_spans);
    host_first = (int *)ELEC_MALLOC((size_t)(nx + ny + nz) * sizeof *host_first);
    host_w = (float *)ELEC_MALLOC((size_t)(nx + ny + nz) * 2 * s * sizeof *host_w);
    if (!host_stencil || !host_spans || !host_first || !host_w) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory for MSM tables");
        goto cleanup;
    }
    elec__msm_stencil(&p, radius, host_stencil, host_spans);
    elec__msm_axis_table(lattice, 0, reference[0], &p, host_first, host_w);
    elec__msm_axis_table(lattice, 1, reference[1], &p, host_first + nx,
                         host_w + (size_t)nx * 2 * s);
    elec__msm_axis_table(lattice, 2, reference[2], &p, host_first + nx + ny,
                         host_w + (size_t)(nx + ny) * 2 * s);

    /* The short range's bins (MSM kind of the cutoff map). */
    memset(&cp, 0, sizeof cp);
    cp.scale = p.scale;
    cp.cutoff = p.cutoff;
    cp.kind = ELEC_CUTOFF_MSM;
    cp.splitting = p.splitting;
    cp = elec_cutoff_params_resolved(&cp);
    /* msmpot's bins, made longer where a long cutoff would give a block
       more neighbour bins than the kernel takes (past a = 48 A or so) */
    while ((status = elec__cutoff_prepare(&job, atoms, lattice, &cp, err)) ==
               ELEC_ERR_UNSUPPORTED &&
           job.args.neighbour_count == 0 && cp.bin_length < cp.cutoff) {
        elec__cutoff_job_free(&job);
        cp.bin_length *= 1.25;
    }
    if (status != ELEC_OK) goto cleanup;

    /* Device: buffers and uploads, then the stages in order on one stream
       (events between them when times are wanted). */
    ELEC__CUDA_TRY(cudaSetDevice(devices[0]));
    ELEC__CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_atoms, (n + 1) * sizeof(float4)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_lattices, 2 * total_points * sizeof(float)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_stencil, side * side * side * sizeof(float)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_spans, side * side * sizeof(int)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_first, (size_t)(nx + ny + nz) * sizeof(int)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_w, (size_t)(nx + ny + nz) * 2 * s * sizeof(float)));
    {
        float *next = d_lattices;
        for (int l = 0; l < shape.levels; l++) {
            d_q[l] = next;
            d_e[l] = next + elec__msm_shape_points(&shape, l);
            next = d_e[l] + elec__msm_shape_points(&shape, l);
        }
    }
    ELEC__CUDA_TRY(cudaMemsetAsync(d_lattices, 0, 2 * total_points * sizeof(float), stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(d_atoms, host_atoms, n * sizeof(float4),
                                   cudaMemcpyHostToDevice, stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(d_stencil, host_stencil, side * side * side * sizeof(float),
                                   cudaMemcpyHostToDevice, stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(d_spans, host_spans, side * side * sizeof(int),
                                   cudaMemcpyHostToDevice, stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(d_first, host_first, (size_t)(nx + ny + nz) * sizeof(int),
                                   cudaMemcpyHostToDevice, stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(d_w, host_w, (size_t)(nx + ny + nz) * 2 * s * sizeof(float),
                                   cudaMemcpyHostToDevice, stream));
    if (p.times) {
        memset(p.times, 0, sizeof *p.times);
        for (; marks_made < 9; marks_made++)
            ELEC__CUDA_TRY(cudaEventCreate(&marks[marks_made]));
        ELEC__CUDA_TRY(cudaStreamSynchronize(stream));
        p.times->setup = elec__msm_clock() - started;
        ELEC__CUDA_TRY(cudaEventRecord(marks[0], stream));
    }
    /* Short range into the padded map (uploads the bins, one pass a layer). */
    if ((status = elec__cutoff_launch(&job, stream, err)) != ELEC_OK) goto cleanup;
    ELEC__MSM_MARK(1);
    status = elec__msm_launch_stages(p, shape, d_q, d_e, d_atoms, n, d_stencil, d_spans, radius,
                                     stream, marks, err);
    if (status != ELEC_OK) goto cleanup;
    switch (s) {
    case 2: status = elec__msm_launch_interpolation<2>(job, lattice, d_e[0], shape, d_first,
                                                       d_w, (float)p.scale, stream, err); break;
    case 3: status = elec__msm_launch_interpolation<3>(job, lattice, d_e[0], shape, d_first,
                                                       d_w, (float)p.scale, stream, err); break;
    case 4: status = elec__msm_launch_interpolation<4>(job, lattice, d_e[0], shape, d_first,
                                                       d_w, (float)p.scale, stream, err); break;
    default: status = elec__msm_launch_interpolation<5>(job, lattice, d_e[0], shape, d_first,
                                                        d_w, (float)p.scale, stream, err); break;
    }
    if (status != ELEC_OK) goto cleanup;
    ELEC__MSM_MARK(7);
    /* the host's share of the short range, and the points where atoms sit,
       while the GPU works */
    if ((status = elec__cutoff_host_share(&job, lattice, map, err)) != ELEC_OK) goto cleanup;
    if ((status = elec__msm_take_back_find(atoms, lattice, &p, &take_back, err)) != ELEC_OK)
        goto cleanup;
    if ((status = elec__cutoff_finish(&job, lattice, map, stream, err)) != ELEC_OK)
        goto cleanup;
    elec__msm_take_back_apply(&take_back, map);
    ELEC__MSM_MARK(8);
    if (p.times) {
        double *fields[7] = {&p.times->short_range, &p.times->anterpolation,
                             &p.times->restriction, &p.times->lattice_cutoff, &p.times->top,
                             &p.times->prolongation, &p.times->interpolation};
        float ms;
        ELEC__CUDA_TRY(cudaEventSynchronize(marks[8]));
        for (int m = 0; m < 7; m++) {
            ELEC__CUDA_TRY(cudaEventElapsedTime(&ms, marks[m], marks[m + 1]));
            *fields[m] = 1e-3 * ms;
        }
        p.times->copy_back = 0.0;
    }
    if (p.progress && p.progress(1.0, p.progress_user)) {
        status = elec__fail(err, ELEC_ERR_CANCELLED, 0,
                            "MSM map cancelled by the progress callback");
        goto cleanup;
    }
    if (p.times) {
        p.times->total = elec__msm_clock() - started;
        p.times->copy_back = p.times->total - p.times->setup - p.times->short_range -
                             p.times->anterpolation - p.times->restriction -
                             p.times->lattice_cutoff - p.times->top - p.times->prolongation -
                             p.times->interpolation;
    }
    elec__ok(err);
    status = ELEC_OK;

cleanup:
    if (stream) {
        cudaStreamSynchronize(stream);
        cudaStreamDestroy(stream);
    }
    for (int m = 0; m < marks_made; m++) cudaEventDestroy(marks[m]);
    elec__cutoff_job_free(&job);
    cudaFree(d_atoms);
    cudaFree(d_lattices);
    cudaFree(d_stencil);
    cudaFree(d_spans);
    cudaFree(d_first);
    cudaFree(d_w);
    (void)cudaGetLastError();
    ELEC_FREE(host_atoms);
    ELEC_FREE(host_stencil);
    ELEC_FREE(host_spans);
    ELEC_FREE(host_first);
    ELEC_FREE(host_w);
    elec__msm_take_back_free(&take_back);
    cudaSetDevice(caller_device);
    return status;
}

/* ------------------------------------------------------- MSM energies */

/* Energies and forces by MSM on the GPU (elec_cpu_msm_energy's method,
   non-periodic): the lattice hierarchy as for maps, then
     at atoms     one thread per atom: potential and gradient interpolated
                  from the finest lattice (weights and their slopes);
     short range  one thread per atom over the 27 cells around its own
                  (cells at least a long, atoms sorted by cell on the
                  host): potential q_j (1/r - gamma(r/a)/a) and force.
   Each pair is seen from both ends (no atomics on forces); the host sums
   the per-atom potentials in double. */
extern "C++" {

template <int S>
__device__ __forceinline__ int elec__msm_slopes_device(float t, const elec__msm_basis_args &b,
                                                       float w[2 * S], float dw[2 * S]) {
    const float cell = floorf(t), u = t - cell;
#pragma unroll
    for (int j = 0; j < 2 * S; j++) {
        float v = b.coeff[j][2 * S - 1], d = 0.0f;
#pragma unroll
        for (int p = 2 * S - 2; p >= 0; p--) {
            d = fmaf(d, u, v); /* Horner's derivative */
            v = fmaf(v, u, b.coeff[j][p]);
        }
        w[j] = v;
        dw[j] = d;
    }
    return (int)cell - (S - 1);
}

/* Stage 5 at the atoms: phi and grad phi from e_0. */
template <int S>
__global__ void __launch_bounds__(ELEC__MSM_BLOCK)
elec__k_msm_at_atoms(const float4 *atoms, int n, const float *e0, elec__msm_level_args g,
                     float inv_h, elec__msm_basis_args b, float *phi, float4 *grad) {
    const int a = blockIdx.x * blockDim.x + threadIdx.x;
    float wx[2 * S], wy[2 * S], wz[2 * S], dx[2 * S], dy[2 * S], dz[2 * S];
    float sum = 0.0f, gx = 0.0f, gy = 0.0f, gz = 0.0f;
    if (a >= n) return;
    const float4 atom = atoms[a];
    const int fx = elec__msm_slopes_device<S>(atom.x * inv_h, b, wx, dx);
    const int fy = elec__msm_slopes_device<S>(atom.y * inv_h, b, wy, dy);
    const int fz = elec__msm_slopes_device<S>(atom.z * inv_h, b, wz, dz);
    for (int c = 0; c < 2 * S; c++)
        for (int bb = 0; bb < 2 * S; bb++) {
            const float *row = e0 + elec__msm_index(g, fx, fy + bb, fz + c);
            float v = 0.0f, vx = 0.0f;
#pragma unroll
            for (int i = 0; i < 2 * S; i++) {
                const float e = __ldg(row + i);
                v = fmaf(wx[i], e, v);
                vx = fmaf(dx[i], e, vx);
            }
            sum += wy[bb] * wz[c] * v;
            gx += wy[bb] * wz[c] * vx;
            gy += dy[bb] * wz[c] * v;
            gz += wy[bb] * dz[c] * v;
        }
    phi[a] = sum;
    grad[a] = make_float4(gx * inv_h, gy * inv_h, gz * inv_h, 0.0f);
}

/* Everything the short-range pass needs besides its arrays. */
typedef struct elec__msm_short_args {
    float coeff[ELEC__CUTOFF_MAX_ORDER + 1]; /* gamma/a = sum coeff_k (rho^2-1)^k */
    int order;                               /* the splitting */
    float cutoff2, inv_cutoff2, coincident2;
    float length[3];                         /* cell edges */
    int cells[3];
} elec__msm_short_args;

/* One thread per atom (in cell order): q_j S(r) summed into phi, and the
   force q_i q_j (1/r^3 + 2 G'(t)/a^3) (x_i - x_j), with S = 1/r - G(t)/a,
   G(t) = gamma at t = rho^2 - 1 (elec_msm_gamma's Taylor series).
   Positions are float relative to each atom's own cell corner, and a pair's
   difference adds the cells' offset: the precision of a difference does not
   fall with the distance from the system's centre. */
__global__ void __launch_bounds__(ELEC__MSM_BLOCK)
elec__k_msm_short(const float4 *atoms, const int *start, const int *cell_of, int n,
                  elec__msm_short_args s, float *phi, float4 *force, int *coincident) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const float4 me = atoms[i];
    const int cell = cell_of[i]; /* the host's: no float rounding across a cell face */
    const int home[3] = {cell % s.cells[0], cell / s.cells[0] % s.cells[1],
                         cell / s.cells[0] / s.cells[1]};
    float sum = 0.0f, fx = 0.0f, fy = 0.0f, fz = 0.0f;
    for (int cz = max(home[2] - 1, 0); cz <= min(home[2] + 1, s.cells[2] - 1); cz++)
        for (int cy = max(home[1] - 1, 0); cy <= min(home[1] + 1, s.cells[1] - 1); cy++) {
            const int row = s.cells[0] * (cy + s.cells[1] * cz);
            const int first = start[row + max(home[0] - 1, 0)];
            const int last = start[row + min(home[0] + 1, s.cells[0] - 1) + 1];
            for (int j = first; j < last; j++) {
                const float4 other = __ldg(atoms + j);
                const int oc = __ldg(cell_of + j);
                const float rx = me.x - other.x +
                                 (float)(home[0] - oc % s.cells[0]) * s.length[0];
                const float ry = me.y - other.y +
                                 (float)(home[1] - oc / s.cells[0] % s.cells[1]) * s.length[1];
                const float rz = me.z - other.z +
                                 (float)(home[2] - oc / s.cells[0] / s.cells[1]) * s.length[2];
                const float r2 = fmaf(rx, rx, fmaf(ry, ry, rz * rz));
                if (j == i || r2 >= s.cutoff2) continue;
                if (r2 < s.coincident2) {
                    atomicMin(coincident, min(i, j));
                    continue;
                }
                const float rinv = rsqrtf(r2), t = fmaf(r2, s.inv_cutoff2, -1.0f);
                float g = s.coeff[s.order], slope = 0.0f;
                for (int k = s.order - 1; k >= 0; k--) {
                    slope = fmaf(slope, t, g);
                    g = fmaf(g, t, s.coeff[k]);
                }
                sum = fmaf(other.w, rinv - g, sum);
                const float f = other.w * (rinv * rinv * rinv + 2.0f * slope * s.inv_cutoff2);
                fx = fmaf(f, rx, fx);
                fy = fmaf(f, ry, fy);
                fz = fmaf(f, rz, fz);
            }
        }
    phi[i] = sum;
    force[i] = make_float4(me.w * fx, me.w * fy, me.w * fz, 0.0f);
}

template <int S>
static elec_status elec__msm_launch_at_atoms(const float4 *d_atoms, int n, const float *d_e0,
                                             const elec__msm_shape &shape,
                                             const elec_msm_params &p, float *d_phi,
                                             float4 *d_grad, cudaStream_t stream,
                                             elec_error *err) {
    elec_status status = ELEC_OK;
    elec__msm_level_args g;
    for (int axis = 0; axis < 3; axis++) {
        g.lo[axis] = (int)shape.lo[0][axis];
        g.n[axis] = shape.n[0][axis];
    }
    elec__k_msm_at_atoms<S><<<(n + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK, ELEC__MSM_BLOCK, 0,
                              stream>>>(d_atoms, n, d_e0, g, (float)(1.0 / p.spacing),
                                        elec__msm_basis_of((int)p.interpolation), d_phi,
                                        d_grad);
    ELEC__CUDA_TRY(cudaGetLastError());
cleanup:
    return status;
}

} /* extern "C++" */

/* Atoms sorted by cells at least `length` long over lo..hi (elec_cells):
   order[k] is the k-th atom, start[c] .. start[c+1] cell c's, in the int
   arrays the device takes, and sorted_cell[k] the cell of the k-th. */
static elec_status elec__msm_cells(const double *x, size_t n, const double lo[3],
                                   const double hi[3], double length, int cells[3],
                                   size_t **order, int **start, int **sorted_cell,
                                   elec_error *err) {
    elec_cells c;
    elec_status status;
    size_t total;
    const double extent[3] = {hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]};
    if ((status = elec_cells_build(x, n, lo, extent, length, &c, err)) != ELEC_OK) return status;
    total = (size_t)c.n[0] * c.n[1] * c.n[2];
    *start = (int *)ELEC_MALLOC((total + 1) * sizeof **start);
    *sorted_cell = (int *)ELEC_MALLOC((n + 1) * sizeof **sorted_cell);
    if (!*start || !*sorted_cell) {
        elec_cells_free(&c);
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for %zu cells", total);
    }
    for (size_t cell = 0; cell <= total; cell++) {
        (*start)[cell] = (int)c.start[cell];
        if (cell < total)
            for (size_t k = c.start[cell]; k < c.start[cell + 1]; k++)
                (*sorted_cell)[k] = (int)cell;
    }
    for (int axis = 0; axis < 3; axis++) cells[axis] = c.n[axis];
    *order = c.atom; /* the caller's now */
    c.atom = NULL;
    elec_cells_free(&c);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_cuda_msm_energy(const elec_atoms *atoms,
                                          const elec_msm_params *params, double *energy,
                                          double *forces, elec_error *err) {
    elec_status status;
    elec_msm_params p;
    elec__msm_shape shape;
    elec__msm_short_args sa = {};
    int devices[ELEC__MAX_GPUS], device_count = 0, caller_device = 0, radius, s, n_int;
    int found = INT_MAX;
    cudaStream_t stream = NULL;
    double reference[3], lo[3], hi[3], cell_lo[3], cell_hi[3], c = 1.0;
    double long_range = 0.0, short_range = 0.0, self = 0.0;
    double *x = NULL;
    size_t *order = NULL, n, total_points = 0, side;
    int *start = NULL, *d_start = NULL, *d_coincident = NULL, *host_spans = NULL,
        *d_spans = NULL, *sorted_cell = NULL, *d_cell = NULL;
    float4 *host_atoms = NULL, *d_atoms = NULL, *d_grad = NULL, *d_force = NULL,
           *host_grad = NULL, *host_force = NULL, *host_local = NULL, *d_local = NULL;
    float *d_lattices = NULL, *d_stencil = NULL, *host_stencil = NULL, *d_phi = NULL,
          *d_short = NULL, *host_phi = NULL, *host_short = NULL;
    float *d_q[ELEC__MSM_MAX_LEVELS], *d_e[ELEC__MSM_MAX_LEVELS];

    if ((status = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return status;
    if ((status = elec_msm_params_check(params, err)) != ELEC_OK) return status;
    if ((status = elec__cuda_msm_float_floor(params, err)) != ELEC_OK) return status;
    if (!energy) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "energy is NULL");
    p = elec_msm_params_resolved(params);
    p.times = NULL; /* stage times are the maps' */
    s = elec_msm_support((int)p.interpolation);
    n = atoms->count;
    if (n > (size_t)INT_MAX / 2)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0, "%zu atoms: at most %d", n,
                          INT_MAX / 2);
    n_int = (int)n;
    *energy = 0.0;
    if (forces) memset(forces, 0, 3 * n * sizeof *forces);
    if (n == 0) {
        elec__ok(err);
        return ELEC_OK;
    }
    status = elec__cuda_gpu_list(&p.gpus, devices, &device_count, err);
    if (status != ELEC_OK) return status;
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;

    /* Host: atoms relative to their bounding box's centre, sorted by cell;
       the hierarchy's shape and stencil. */
    elec_atoms_bounds(atoms, lo, hi);
    for (int axis = 0; axis < 3; axis++) {
        reference[axis] = 0.5 * (lo[axis] + hi[axis]);
        cell_lo[axis] = lo[axis] - reference[axis];
        cell_hi[axis] = hi[axis] - reference[axis] + 1e-6;
        lo[axis] = cell_lo[axis];
        hi[axis] = hi[axis] - reference[axis];
    }
    if ((status = elec__msm_shape_of(&p, lo, hi, &shape, err)) != ELEC_OK) return status;
    x = (double *)ELEC_MALLOC((3 * n + 1) * sizeof *x);
    host_atoms = (float4 *)ELEC_MALLOC((n + 1) * sizeof *host_atoms);
    host_phi = (float *)ELEC_MALLOC((n + 1) * sizeof *host_phi);
    host_short = (float *)ELEC_MALLOC((n + 1) * sizeof *host_short);
    host_grad = (float4 *)ELEC_MALLOC((n + 1) * sizeof *host_grad);
    host_force = (float4 *)ELEC_MALLOC((n + 1) * sizeof *host_force);
    host_local = (float4 *)ELEC_MALLOC((n + 1) * sizeof *host_local);
    radius = (int)ceil(2.0 * p.cutoff / p.spacing);
    side = (size_t)radius + 1;
    host_stencil = (float *)ELEC_MALLOC(side * side * side * sizeof *host_stencil);
    host_spans = (int *)ELEC_MALLOC(side * side * sizeof *host_spans);
    if (!x || !host_atoms || !host_phi || !host_short || !host_grad || !host_force ||
        !host_local || !host_stencil || !host_spans) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory for %zu atoms", n);
        goto cleanup;
    }
    for (size_t a = 0; a < n; a++) {
        elec_atoms_get(atoms, a, x + 3 * a, NULL, NULL);
        for (int axis = 0; axis < 3; axis++) x[3 * a + axis] -= reference[axis];
    }
    if ((status = elec__msm_cells(x, n, cell_lo, cell_hi, p.cutoff, sa.cells, &order, &start,
                                  &sorted_cell, err)) != ELEC_OK)
        goto cleanup;
    for (size_t k = 0; k < n; k++) {
        const size_t a = order[k];
        double q;
        elec_atoms_get(atoms, a, NULL, &q, NULL);
        host_atoms[k] = make_float4((float)x[3 * a], (float)x[3 * a + 1], (float)x[3 * a + 2],
                                    (float)q);
        {
            const int cell = sorted_cell[k];
            const int c[3] = {cell % sa.cells[0], cell / sa.cells[0] % sa.cells[1],
                              cell / sa.cells[0] / sa.cells[1]};
            double local[3];
            for (int axis = 0; axis < 3; axis++)
                local[axis] = x[3 * a + axis] -
                              (cell_lo[axis] + c[axis] * (cell_hi[axis] - cell_lo[axis]) /
                                                   sa.cells[axis]);
            host_local[k] = make_float4((float)local[0], (float)local[1], (float)local[2],
                                        (float)q);
        }
        self += (double)host_atoms[k].w * host_atoms[k].w; /* the charges summed below */
    }
    for (int k = 0; k <= ELEC__CUTOFF_MAX_ORDER; k++) {
        if (k > 0) c *= -(2.0 * k - 1.0) / (2.0 * k); /* C(-1/2, k) */
        sa.coeff[k] = k <= p.splitting ? (float)(c / p.cutoff) : 0.0f;
    }
    sa.order = p.splitting;
    for (int axis = 0; axis < 3; axis++)
        sa.length[axis] = (float)((cell_hi[axis] - cell_lo[axis]) / sa.cells[axis]);
    sa.cutoff2 = (float)(p.cutoff * p.cutoff);
    sa.inv_cutoff2 = (float)(1.0 / (p.cutoff * p.cutoff));
    sa.coincident2 = (float)(ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE);
    for (int l = 0; l < shape.levels; l++) total_points += elec__msm_shape_points(&shape, l);
    elec__msm_stencil(&p, radius, host_stencil, host_spans);

    /* Device. */
    ELEC__CUDA_TRY(cudaSetDevice(devices[0]));
    ELEC__CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_atoms, (n + 1) * sizeof(float4)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_start, ((size_t)sa.cells[0] * sa.cells[1] *
                                                      sa.cells[2] + 1) * sizeof(int)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_lattices, 2 * total_points * sizeof(float)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_stencil, side * side * side * sizeof(float)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_spans, side * side * sizeof(int)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_phi, (n + 1) * sizeof(float)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_short, (n + 1) * sizeof(float)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_grad, (n + 1) * sizeof(float4)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_force, (n + 1) * sizeof(float4)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_coincident, sizeof(int)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_cell, (n + 1) * sizeof(int)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_local, (n + 1) * sizeof(float4)));
    ELEC__CUDA_TRY(cudaMemcpyAsync(d_local, host_local, n * sizeof(float4),
                                   cudaMemcpyHostToDevice, stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(d_cell, sorted_cell, n * sizeof(int), cudaMemcpyHostToDevice,
                                   stream));
    {
        float *next = d_lattices;
        for (int l = 0; l < shape.levels; l++) {
            d_q[l] = next;
            d_e[l] = next + elec__msm_shape_points(&shape, l);
            next = d_e[l] + elec__msm_shape_points(&shape, l);
        }
    }
    ELEC__CUDA_TRY(cudaMemsetAsync(d_lattices, 0, 2 * total_points * sizeof(float), stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(d_coincident, &found, sizeof(int), cudaMemcpyHostToDevice,
                                   stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(d_atoms, host_atoms, n * sizeof(float4),
                                   cudaMemcpyHostToDevice, stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(d_start, start,
                                   ((size_t)sa.cells[0] * sa.cells[1] * sa.cells[2] + 1) *
                                       sizeof(int),
                                   cudaMemcpyHostToDevice, stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(d_stencil, host_stencil, side * side * side * sizeof(float),
                                   cudaMemcpyHostToDevice, stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(d_spans, host_spans, side * side * sizeof(int),
                                   cudaMemcpyHostToDevice, stream));
    status = elec__msm_launch_stages(p, shape, d_q, d_e, d_atoms, n, d_stencil, d_spans, radius,
                                     stream, NULL, err);
    if (status != ELEC_OK) goto cleanup;
    switch (s) {
    case 2: status = elec__msm_launch_at_atoms<2>(d_atoms, n_int, d_e[0], shape, p, d_phi,
                                                  d_grad, stream, err); break;
    case 3: status = elec__msm_launch_at_atoms<3>(d_atoms, n_int, d_e[0], shape, p, d_phi,
                                                  d_grad, stream, err); break;
    case 4: status = elec__msm_launch_at_atoms<4>(d_atoms, n_int, d_e[0], shape, p, d_phi,
                                                  d_grad, stream, err); break;
    default: status = elec__msm_launch_at_atoms<5>(d_atoms, n_int, d_e[0], shape, p, d_phi,
                                                   d_grad, stream, err); break;
    }
    if (status != ELEC_OK) goto cleanup;
    elec__k_msm_short<<<(n_int + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK, ELEC__MSM_BLOCK, 0,
                        stream>>>(d_local, d_start, d_cell, n_int, sa, d_short, d_force,
                                  d_coincident);
    ELEC__CUDA_TRY(cudaGetLastError());
    ELEC__CUDA_TRY(cudaMemcpyAsync(host_phi, d_phi, n * sizeof(float), cudaMemcpyDeviceToHost,
                                   stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(host_short, d_short, n * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(host_grad, d_grad, n * sizeof(float4),
                                   cudaMemcpyDeviceToHost, stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(host_force, d_force, n * sizeof(float4),
                                   cudaMemcpyDeviceToHost, stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(&found, d_coincident, sizeof(int), cudaMemcpyDeviceToHost,
                                   stream));
    ELEC__CUDA_TRY(cudaStreamSynchronize(stream));
    if (found != INT_MAX) {
        status = elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                            "atom %zu and another coincide: their energy is infinite",
                            order[found]);
        goto cleanup;
    }
    /* E = 1/2 sum q_i (phi_long + phi_short) less each atom's own smooth
       part gamma(0)/a (elec_cpu_msm_energy); forces -q grad phi_long plus
       the pairs'. */
    for (size_t k = 0; k < n; k++) {
        const size_t a = order[k];
        const double q = host_atoms[k].w;
        long_range += q * host_phi[k];
        short_range += q * host_short[k];
        if (forces) {
            forces[3 * a] = p.scale * ((double)host_force[k].x - q * host_grad[k].x);
            forces[3 * a + 1] = p.scale * ((double)host_force[k].y - q * host_grad[k].y);
            forces[3 * a + 2] = p.scale * ((double)host_force[k].z - q * host_grad[k].z);
        }
    }
    *energy = p.scale * (0.5 * long_range + 0.5 * short_range -
                         0.5 * self * elec_msm_gamma(0.0, p.splitting) / p.cutoff);
    elec__ok(err);
    status = ELEC_OK;

cleanup:
    if (stream) {
        cudaStreamSynchronize(stream);
        cudaStreamDestroy(stream);
    }
    cudaFree(d_atoms);
    cudaFree(d_start);
    cudaFree(d_lattices);
    cudaFree(d_stencil);
    cudaFree(d_spans);
    cudaFree(d_phi);
    cudaFree(d_short);
    cudaFree(d_grad);
    cudaFree(d_force);
    cudaFree(d_coincident);
    cudaFree(d_cell);
    cudaFree(d_local);
    (void)cudaGetLastError();
    ELEC_FREE(x);
    ELEC_FREE(sorted_cell);
    ELEC_FREE(order);
    ELEC_FREE(start);
    ELEC_FREE(host_atoms);
    ELEC_FREE(host_phi);
    ELEC_FREE(host_short);
    ELEC_FREE(host_grad);
    ELEC_FREE(host_force);
    ELEC_FREE(host_local);
    ELEC_FREE(host_stencil);
    ELEC_FREE(host_spans);
    cudaSetDevice(caller_device);
    return status;
}

#ifdef __cplusplus
}
#endif

/* ================================================================= SPME */
/* Smooth particle mesh Ewald (Essmann et al. 1995; GPU layout after seed
   001, Harvey and De Fabritiis 2009).  One evaluation is two chains of
   kernels that run concurrently:

     reciprocal (caller's stream)      real space (the handle's side stream)
       spread charges on the grid        bin atoms into cells (atomics)
       R2C FFT (cuFFT)                   prefix sum of the cell counts
       solve: times theta, energy        scatter atoms in cell order
       C2R FFT (cuFFT)                   pairs within the cutoff, excluded
                                         pairs' correction
                        \---- join ----/
       gather: mesh forces + real-space forces, written once per atom

   Grid: K points per axis, x fastest (index kx + Kx (ky + Ky kz)).  An atom
   at grid coordinate u = K x / L (x wrapped into [0, L)), k0 = floor(u),
   t = u - k0, puts q w[j] on point k0 - j (mod K), w[j] = M_n(t + j)
   (elec_bspline_weights_float, the very function of the CPU path):
   Q(k) = sum_i q_i Mx My Mz (Essmann eq. 4.6).  With F the discrete
   Fourier transform of Q and the influence function
       theta(m) = exp(-pi^2 mt^2 / alpha^2) / (pi V mt^2 Bx By Bz),
   mt = (mx/Lx, my/Ly, mz/Lz), m folded to [-K/2, K/2], theta(0) = 0,
   B the moduli |b|^-2 of elec_spme_bspline_moduli (eq. 4.7-4.8):
       E_rec = 1/2 sum_m theta(m) |F(m)|^2                     (eq. 4.7)
   and conv = C2R(theta F) = theta (*) Q, so that
       phi_i = sum_k Mx My Mz conv(k),
       F_i   = -q_i sum_k grad(Mx My Mz) conv(k),  d/dx = (K/L) d/du  (4.9).
   Energies are summed in double (block reductions, one atomic per block);
   the handle keeps raw sums and elec_cuda_spme_energy applies the
   constant factors (scale, 1/2, -alpha/sqrt(pi), background) on the
   host. */

#include <cufft.h>

/* Raw sums in the handle's device buffer. */
#define ELEC__SPME_SUM_REAL 0       /* sum over ordered pairs q q erfc/r / 2  */
#define ELEC__SPME_SUM_RECIPROCAL 1 /* sum over the spectrum theta |F|^2      */
#define ELEC__SPME_SUM_CHARGE 2     /* sum q                                  */
#define ELEC__SPME_SUM_CHARGE2 3    /* sum q^2                                */
#define ELEC__SPME_SUM_EXCLUDED 4   /* -sum over excluded pairs q q erf/r     */
#define ELEC__SPME_SUM_COINCIDENT 5 /* pairs (seen from both atoms) closer than
                                       ELEC_COINCIDENT_DISTANCE, not excluded  */
#define ELEC__SPME_SUMS 8

/* Atoms a spreading slot of the gather scheme holds per grid cell: at 0.1
   atoms/A^3 and 1 A spacing a cell holds 0.1 atoms on average, so 4 leaves
   overflow (spread by atomics) to rare crowded cells. */
#define ELEC__SPME_CELL_CAPACITY 4

#define ELEC__SPME_BLOCK 256

/* Box and grid as the kernels take them. */
typedef struct elec__spme_geometry {
    int3 K;                /* grid points per axis                         */
    float3 length;         /* box edges (A)                                */
    float3 inv_length;     /* 1 / length                                   */
    float3 grid_per_length; /* K / L: d/dx = (K/L) d/du                     */
} elec__spme_geometry;

/* The real-space cell list: n cells per axis, each at least the cutoff
   long, so that every pair within the cutoff (minimum image) lies in
   neighbouring cells. */
typedef struct elec__spme_cells {
    int3 n;
    float3 per_length;     /* n / L */
    int reach;             /* neighbour cells each way: cells are at least
                              cutoff / reach long */
} elec__spme_cells;

/* Adds the block's sum of v to *target: a warp shuffle tree, then the
   warps' sums, then one atomic per block (thousands of same-address
   atomics from every warp would serialise in L2).  Every thread of the
   block must call it; blockDim.x a multiple of 32. */
__device__ static void elec__spme_block_add(double *target, double v) {
    __shared__ double warp_sums[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads(); /* warp_sums may still be read by a previous call */
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : 0.0;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if (lane == 0 && v != 0.0) atomicAdd(target, v);
    }
}

/* Grid coordinate of x along one axis: u = K x / L with x wrapped into
   [0, L); returns k0 = floor(u) in [0, K) and sets t = u - k0.  A
   fraction that rounds up to 1 (x just below 0 or L) gives u = K: point 0,
   t = 0, which is where it belongs. */
__device__ __forceinline__ int elec__spme_grid_point(float x, float inv_length,
                                                     int K, float *t) {
    float f = x * inv_length;
    f -= floorf(f);
    float u = f * (float)K;
    int k0 = (int)u;
    *t = u - (float)k0;
    if (k0 >= K) k0 -= K;
    return k0;
}

/* Lanes per atom in the spreading and gathering kernels: one lane per x
   offset of the atom's order^3 stencil, rounded up to a power of two so
   that a group never straddles a warp (shuffle reductions). */
template <int ORDER> struct elec__spme_lanes {
    enum { value = ORDER <= 4 ? 4 : 8 };
};

/* w[j] of a register array at a lane-dependent j, by selects (an indexed
   load would put the array in local memory). */
template <int ORDER>
__device__ __forceinline__ float elec__spme_pick(const float *w, int j) {
    float v = 0.0f;
#pragma unroll
    for (int m = 0; m < ORDER; m++) v = m == j ? w[m] : v;
    return v;
}

/* ------------------------------------------------- spreading: atomics */

/* Particle-centric spreading: lane jx of an atom's group adds the order^2
   values of its x plane of the stencil with atomics (red.global.add.f32:
   the grid must be zeroed first).  The lanes of a group write
   neighbouring x points, so a warp's atomics fall in few sectors.  Also
   sums q and q^2 (self and background terms). */
template <int ORDER>
__global__ void __launch_bounds__(ELEC__SPME_BLOCK)
elec__k_spme_spread_atomic(float *grid, const float4 *xyzq, int n,
                           elec__spme_geometry g, double *sums) {
    const int lanes = elec__spme_lanes<ORDER>::value;
    int thread = blockIdx.x * blockDim.x + threadIdx.x;
    int atom = thread / lanes, jx = thread % lanes;
    float q = 0.0f;
    if (atom < n && jx < ORDER) {
        float4 a = xyzq[atom];
        float tx, ty, tz, wx[ORDER], wy[ORDER], wz[ORDER];
        int x0 = elec__spme_grid_point(a.x, g.inv_length.x, g.K.x, &tx);
        int y0 = elec__spme_grid_point(a.y, g.inv_length.y, g.K.y, &ty);
        int z0 = elec__spme_grid_point(a.z, g.inv_length.z, g.K.z, &tz);
        elec_bspline_weights_float(ORDER, tx, wx, NULL);
        elec_bspline_weights_float(ORDER, ty, wy, NULL);
        elec_bspline_weights_float(ORDER, tz, wz, NULL);
        int x = x0 - jx;
        if (x < 0) x += g.K.x;
        float qx = a.w * elec__spme_pick<ORDER>(wx, jx);
#pragma unroll
        for (int jz = 0; jz < ORDER; jz++) {
            int z = z0 - jz;
            if (z < 0) z += g.K.z;
            float qxz = qx * wz[jz];
#pragma unroll
            for (int jy = 0; jy < ORDER; jy++) {
                int y = y0 - jy;
                if (y < 0) y += g.K.y;
                atomicAdd(&grid[x + g.K.x * (y + g.K.y * z)], qxz * wy[jy]);
            }
        }
        if (jx == 0) q = a.w;
    }
    elec__spme_block_add(sums + ELEC__SPME_SUM_CHARGE, q);
    elec__spme_block_add(sums + ELEC__SPME_SUM_CHARGE2, (double)q * q);
}

/* --------------------------------------- spreading: gather (seed 001) */

/* Placement: each atom takes a slot of the grid cell [k0, k0 + 1) that
   holds it (a counter per cell); atoms past the cell's capacity go to the
   overflow list.  The atom's weights are stored, q folded into x:
   weights[atom][axis][j].  Also sums q and q^2. */
template <int ORDER>
__global__ void __launch_bounds__(ELEC__SPME_BLOCK)
elec__k_spme_place(const float4 *xyzq, int n, elec__spme_geometry g,
                   int *cell_count, int *cell_atoms, int *overflow_count,
                   int *overflow_atoms, float *weights, double *sums) {
    int atom = blockIdx.x * blockDim.x + threadIdx.x;
    float q = 0.0f;
    if (atom < n) {
        float4 a = xyzq[atom];
        float tx, ty, tz, wx[ORDER], wy[ORDER], wz[ORDER];
        int x0 = elec__spme_grid_point(a.x, g.inv_length.x, g.K.x, &tx);
        int y0 = elec__spme_grid_point(a.y, g.inv_length.y, g.K.y, &ty);
        int z0 = elec__spme_grid_point(a.z, g.inv_length.z, g.K.z, &tz);
        elec_bspline_weights_float(ORDER, tx, wx, NULL);
        elec_bspline_weights_float(ORDER, ty, wy, NULL);
        elec_bspline_weights_float(ORDER, tz, wz, NULL);
        float *w = weights + (size_t)atom * 3 * ORDER;
#pragma unroll
        for (int j = 0; j < ORDER; j++) {
            w[j] = a.w * wx[j];
            w[ORDER + j] = wy[j];
            w[2 * ORDER + j] = wz[j];
        }
        int cell = x0 + g.K.x * (y0 + g.K.y * z0);
        int slot = atomicAdd(&cell_count[cell], 1);
        if (slot < ELEC__SPME_CELL_CAPACITY)
            cell_atoms[(size_t)cell * ELEC__SPME_CELL_CAPACITY + slot] = atom;
        else
            overflow_atoms[atomicAdd(overflow_count, 1)] = atom;
        q = a.w;
    }
    elec__spme_block_add(sums + ELEC__SPME_SUM_CHARGE, q);
    elec__spme_block_add(sums + ELEC__SPME_SUM_CHARGE2, (double)q * q);
}

/* Accumulation, one thread per grid point and no atomics: point k gathers
   from the atoms placed in cells k + j (mod K), j = 0 .. order-1 per axis,
   each with weight wx[jx] wy[jy] wz[jz] (the atom in cell k0 reaches the
   points k0 - j).  Writes every point, so the grid needs no zeroing.
   Consecutive threads take consecutive x: the cell counts they read are
   coalesced. */
template <int ORDER>
__global__ void __launch_bounds__(ELEC__SPME_BLOCK)
elec__k_spme_spread_gather(float *grid, elec__spme_geometry g,
                           const int *cell_count, const int *cell_atoms,
                           const float *weights, int points) {
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= points) return;
    int kx = p % g.K.x, rest = p / g.K.x;
    int ky = rest % g.K.y, kz = rest / g.K.y;
    float sum = 0.0f;
    for (int jz = 0; jz < ORDER; jz++) {
        int cz = kz + jz;
        if (cz >= g.K.z) cz -= g.K.z;
        for (int jy = 0; jy < ORDER; jy++) {
            int cy = ky + jy;
            if (cy >= g.K.y) cy -= g.K.y;
            int row = g.K.x * (cy + g.K.y * cz);
#pragma unroll
            for (int jx = 0; jx < ORDER; jx++) {
                int cx = kx + jx;
                if (cx >= g.K.x) cx -= g.K.x;
                int cell = cx + row;
                int count = min(cell_count[cell], ELEC__SPME_CELL_CAPACITY);
                for (int s = 0; s < count; s++) {
                    int atom = cell_atoms[(size_t)cell * ELEC__SPME_CELL_CAPACITY + s];
                    const float *w = weights + (size_t)atom * 3 * ORDER;
                    sum = fmaf(w[jx] * w[ORDER + jy], w[2 * ORDER + jz], sum);
                }
            }
        }
    }
    grid[p] = sum;
}

/* Overflow: the atoms that found their cell full, spread with atomics from
   their stored weights, one thread per atom and x offset.  Their number is
   known only on the device: a fixed grid strides over it. */
template <int ORDER>
__global__ void __launch_bounds__(ELEC__SPME_BLOCK)
elec__k_spme_spread_overflow(float *grid, const float4 *xyzq,
                             elec__spme_geometry g, const int *overflow_count,
                             const int *overflow_atoms, const float *weights) {
    int total = *overflow_count * ORDER;
    for (int e = blockIdx.x * blockDim.x + threadIdx.x; e < total;
         e += gridDim.x * blockDim.x) {
        int atom = overflow_atoms[e / ORDER], jx = e % ORDER;
        float4 a = xyzq[atom];
        float t;
        int x = elec__spme_grid_point(a.x, g.inv_length.x, g.K.x, &t) - jx;
        int y0 = elec__spme_grid_point(a.y, g.inv_length.y, g.K.y, &t);
        int z0 = elec__spme_grid_point(a.z, g.inv_length.z, g.K.z, &t);
        if (x < 0) x += g.K.x;
        const float *w = weights + (size_t)atom * 3 * ORDER;
        float qx = w[jx];
        for (int jz = 0; jz < ORDER; jz++) {
            int z = z0 - jz;
            if (z < 0) z += g.K.z;
            for (int jy = 0; jy < ORDER; jy++) {
                int y = y0 - jy;
                if (y < 0) y += g.K.y;
                atomicAdd(&grid[x + g.K.x * (y + g.K.y * z)],
                          qx * w[ORDER + jy] * w[2 * ORDER + jz]);
            }
        }
    }
}

/* ------------------------------------------------------------- solve */

/* The half spectrum of the R2C transform, Kz x Ky x (Kx/2 + 1), times the
   influence function, in place, fused with the energy: E_rec = 1/2 sum
   over the full spectrum theta |F|^2, where each stored mx stands for mx
   and Kx - mx (weight 2) except mx = 0 and, for even Kx, mx = Kx/2.  A
   fixed grid strides over the spectrum so that one atomic per block
   suffices. */
__global__ void __launch_bounds__(ELEC__SPME_BLOCK)
elec__k_spme_solve(cufftComplex *spectrum, const float *theta, int kx,
                   int count, double *sums) {
    const int half_x = kx / 2 + 1;
    double energy = 0.0;
    for (int m = blockIdx.x * blockDim.x + threadIdx.x; m < count;
         m += gridDim.x * blockDim.x) {
        cufftComplex c = spectrum[m];
        float th = theta[m];
        int mx = m % half_x;
        float weight = mx == 0 || 2 * mx == kx ? 1.0f : 2.0f;
        energy += (double)(weight * th * fmaf(c.x, c.x, c.y * c.y));
        c.x *= th;
        c.y *= th;
        spectrum[m] = c;
    }
    elec__spme_block_add(sums + ELEC__SPME_SUM_RECIPROCAL, energy);
}

/* ------------------------------------------------------------ gather */

/* Forces (and potentials) from the convolved grid, Essmann eq. 4.9: lane
   jx of an atom's group sums its x plane of the stencil,
       A  = sum wy wz conv,  By = sum dwy wz conv,  Bz = sum wy dwz conv,
   so that its share is phi = wx A, dE/du = (dwx A, wx By, wx Bz); the
   group's shares are added by shuffles.  Lane 0 adds the real-space
   force of the atom (real: unscaled force and potential, NULL when the
   real part was not computed) and writes scale (F_mesh + F_real) once:
   no atomics, no zeroing.  potential (unscaled, mesh + real + excluded)
   only for the host API. */
template <int ORDER>
__global__ void __launch_bounds__(ELEC__SPME_BLOCK)
elec__k_spme_gather(const float *conv, const float4 *xyzq, int n,
                    elec__spme_geometry g, const float4 *real, float scale,
                    float *forces, float *potential) {
    const int lanes = elec__spme_lanes<ORDER>::value;
    int thread = blockIdx.x * blockDim.x + threadIdx.x;
    int atom = thread / lanes, jx = thread % lanes;
    float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    float du = 0.0f, dv = 0.0f, dw = 0.0f, phi = 0.0f;
    if (atom < n) a = xyzq[atom];
    if (atom < n && jx < ORDER) {
        float tx, ty, tz;
        float wx[ORDER], wy[ORDER], wz[ORDER], dwx[ORDER], dwy[ORDER], dwz[ORDER];
        int x0 = elec__spme_grid_point(a.x, g.inv_length.x, g.K.x, &tx);
        int y0 = elec__spme_grid_point(a.y, g.inv_length.y, g.K.y, &ty);
        int z0 = elec__spme_grid_point(a.z, g.inv_length.z, g.K.z, &tz);
        elec_bspline_weights_float(ORDER, tx, wx, dwx);
        elec_bspline_weights_float(ORDER, ty, wy, dwy);
        elec_bspline_weights_float(ORDER, tz, wz, dwz);
        int x = x0 - jx;
        if (x < 0) x += g.K.x;
        float sum_a = 0.0f, sum_y = 0.0f, sum_z = 0.0f;
#pragma unroll
        for (int jz = 0; jz < ORDER; jz++) {
            int z = z0 - jz;
            if (z < 0) z += g.K.z;
            float row_w = 0.0f, row_dw = 0.0f;
#pragma unroll
            for (int jy = 0; jy < ORDER; jy++) {
                int y = y0 - jy;
                if (y < 0) y += g.K.y;
                float v = conv[x + g.K.x * (y + g.K.y * z)];
                row_w = fmaf(wy[jy], v, row_w);
                row_dw = fmaf(dwy[jy], v, row_dw);
            }
            sum_a = fmaf(wz[jz], row_w, sum_a);
            sum_y = fmaf(wz[jz], row_dw, sum_y);
            sum_z = fmaf(dwz[jz], row_w, sum_z);
        }
        float my_w = elec__spme_pick<ORDER>(wx, jx);
        float my_dw = elec__spme_pick<ORDER>(dwx, jx);
        du = my_dw * sum_a;
        dv = my_w * sum_y;
        dw = my_w * sum_z;
        phi = my_w * sum_a;
    }
#pragma unroll
    for (int o = lanes / 2; o > 0; o >>= 1) {
        du += __shfl_xor_sync(0xffffffffu, du, o);
        dv += __shfl_xor_sync(0xffffffffu, dv, o);
        dw += __shfl_xor_sync(0xffffffffu, dw, o);
        phi += __shfl_xor_sync(0xffffffffu, phi, o);
    }
    if (atom < n && jx == 0) {
        float fx = -a.w * g.grid_per_length.x * du;
        float fy = -a.w * g.grid_per_length.y * dv;
        float fz = -a.w * g.grid_per_length.z * dw;
        if (real) {
            float4 r = real[atom];
            fx += r.x;
            fy += r.y;
            fz += r.z;
            phi += r.w;
        }
        if (forces) {
            forces[3 * (size_t)atom] = scale * fx;
            forces[3 * (size_t)atom + 1] = scale * fy;
            forces[3 * (size_t)atom + 2] = scale * fz;
        }
        if (potential) potential[atom] = phi;
    }
}

/* -------------------------------------------------------- real space */

/* x wrapped into [0, L) in float, exactly as the cell kernels store it:
   an atom's cell and its stored coordinate always agree. */
__device__ __forceinline__ float elec__spme_wrap(float x, float length,
                                                 float inv_length) {
    float w = x - length * floorf(x * inv_length);
    if (w >= length) w -= length;
    return w < 0.0f ? 0.0f : w;
}

__device__ __forceinline__ int elec__spme_cell_index(float4 w,
                                                     elec__spme_cells c) {
    int cx = min((int)(w.x * c.per_length.x), c.n.x - 1);
    int cy = min((int)(w.y * c.per_length.y), c.n.y - 1);
    int cz = min((int)(w.z * c.per_length.z), c.n.z - 1);
    return cx + c.n.x * (cy + c.n.y * cz);
}

__device__ __forceinline__ float4 elec__spme_wrapped(float4 a,
                                                     elec__spme_geometry g) {
    return make_float4(elec__spme_wrap(a.x, g.length.x, g.inv_length.x),
                       elec__spme_wrap(a.y, g.length.y, g.inv_length.y),
                       elec__spme_wrap(a.z, g.length.z, g.inv_length.z), a.w);
}

/* Cell list, step 1: each atom's cell and its slot in it (atomics on the
   per-cell counters, zeroed first). */
__global__ void __launch_bounds__(ELEC__SPME_BLOCK)
elec__k_spme_cells_count(const float4 *xyzq, int n, elec__spme_geometry g,
                         elec__spme_cells c, int *cell_count, int *atom_cell,
                         int *atom_slot) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int cell = elec__spme_cell_index(elec__spme_wrapped(xyzq[i], g), c);
    atom_cell[i] = cell;
    atom_slot[i] = atomicAdd(&cell_count[cell], 1);
}

/* Step 2: exclusive prefix sum of the counts into start[0 .. cells], in
   one block (cells number thousands): each thread sums a contiguous run,
   the block scans the run sums (Hillis-Steele in shared memory), and each
   thread writes its run's starts. */
#define ELEC__SPME_SCAN_THREADS 1024
__global__ void __launch_bounds__(ELEC__SPME_SCAN_THREADS)
elec__k_spme_cells_scan(const int *count, int *start, int cells) {
    __shared__ int run_sums[ELEC__SPME_SCAN_THREADS];
    const int t = threadIdx.x;
    int per = (cells + ELEC__SPME_SCAN_THREADS - 1) / ELEC__SPME_SCAN_THREADS;
    int first = min(t * per, cells), last = min(first + per, cells), s = 0;
    for (int i = first; i < last; i++) s += count[i];
    run_sums[t] = s;
    __syncthreads();
    for (int offset = 1; offset < ELEC__SPME_SCAN_THREADS; offset <<= 1) {
        int v = t >= offset ? run_sums[t - offset] : 0;
        __syncthreads();
        run_sums[t] += v;
        __syncthreads();
    }
    s = t > 0 ? run_sums[t - 1] : 0;
    for (int i = first; i < last; i++) {
        start[i] = s;
        s += count[i];
    }
    if (t == ELEC__SPME_SCAN_THREADS - 1) start[cells] = run_sums[t];
}

/* Step 3: atoms in cell order, wrapped, with their original index. */
__global__ void __launch_bounds__(ELEC__SPME_BLOCK)
elec__k_spme_cells_scatter(const float4 *xyzq, int n, elec__spme_geometry g,
                           const int *start, const int *atom_cell,
                           const int *atom_slot, float4 *sorted,
                           int *sorted_index) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int p = start[atom_cell[i]] + atom_slot[i];
    sorted[p] = elec__spme_wrapped(xyzq[i], g);
    sorted_index[p] = i;
}

/* Whether j is on atom i's exclusion list list[begin .. end) (a few
   entries: a linear scan). */
__device__ __forceinline__ bool elec__spme_excluded(const int *list, int begin,
                                                    int end, int j) {
    for (int k = begin; k < end; k++)
        if (list[k] == j) return true;
    return false;
}

/* Per-lane sums of one atom's real-space interactions. */
typedef struct elec__spme_pair_sums {
    float fx, fy, fz, phi;       /* force / q_i and potential, unscaled */
    double real, excluded;       /* energies, half of each pair         */
} elec__spme_pair_sums;

/* One pair at separation d = r_i - r_j (r2 < rc^2, not excluded):
   phi_i += q_j erfc(alpha r)/r, and -dE/dr_i / q_i =
   q_j (erfc(alpha r)/r + 2 alpha/sqrt(pi) exp(-alpha^2 r^2)) d / r^2.
   erfcf is CUDA's (a few ulp); __expf is MUFU.EX2, relative error about
   (2 + 1.16 |x|) ulp: under 1e-6 for alpha^2 r^2 < 10, ~2e-6 at the
   cutoff of the tightest choices (alpha rc ~ 4.5), where the term it
   scales has fallen to exp(-20). */
__device__ __forceinline__ void elec__spme_pair(elec__spme_pair_sums *s,
                                                float qj, float dx,
                                                float dy, float dz, float r2,
                                                float alpha, float gauss) {
    float inv_r = rsqrtf(r2), r = r2 * inv_r;
    float screened = erfcf(alpha * r) * inv_r;
    float f = qj * fmaf(gauss, __expf(-alpha * alpha * r2), screened) *
              inv_r * inv_r;
    s->fx = fmaf(f, dx, s->fx);
    s->fy = fmaf(f, dy, s->fy);
    s->fz = fmaf(f, dz, s->fz);
    s->phi = fmaf(qj, screened, s->phi);
}

/* The lane's share of atom i's real-space energy, half of q_i times its
   share of phi_i (each pair is seen from both atoms), once the pairs are
   done and before the excluded pairs touch phi: one double add per atom
   and lane instead of one per pair (each lane's phi holds ~40 terms in
   float, 1e-7 relative). */
__device__ __forceinline__ void elec__spme_real_energy(elec__spme_pair_sums *s, float qi) {
    s->real += 0.5 * (double)qi * (double)s->phi;
}

/* Atom i's excluded pairs, spread over the warp's lanes: the smooth part
   erf(alpha r)/r that the reciprocal sum contains, subtracted (minimum
   image; its r -> 0 limit 2 alpha/sqrt(pi) when the atoms coincide).
   -dE/dr_i / q_i = q_j (2 alpha/sqrt(pi) exp(-alpha^2 r^2) - erf(alpha r)/r)
   d / r^2.  Half the pair's energy: the partner's warp adds the other.
   The lists were checked against max_atoms: a compute with fewer atoms
   skips partners at or past n (their positions are not given). */
__device__ __forceinline__ void elec__spme_excluded_pairs(
    elec__spme_pair_sums *s, float4 a, const float4 *xyzq, int n,
    const int *list, int begin, int end, int lane, elec__spme_geometry g,
    float alpha, float gauss, double alpha_exact) {
    for (int k = begin + lane; k < end; k += 32) {
        int j = list[k];
        if (j >= n) continue; /* a partner past this compute's n atoms */
        float4 b = xyzq[j];
        float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
        dx -= g.length.x * rintf(dx * g.inv_length.x);
        dy -= g.length.y * rintf(dy * g.inv_length.y);
        dz -= g.length.z * rintf(dz * g.inv_length.z);
        float r2 = fmaf(dx, dx, fmaf(dy, dy, dz * dz)), smooth = gauss;
        if (r2 > 1e-16f) {
            float inv_r = rsqrtf(r2), r = r2 * inv_r;
            smooth = erff(alpha * r) * inv_r;
            float f = b.w * (gauss * expf(-alpha * alpha * r2) - smooth) *
                      inv_r * inv_r;
            s->fx = fmaf(f, dx, s->fx);
            s->fy = fmaf(f, dy, s->fy);
            s->fz = fmaf(f, dz, s->fz);
        }
        s->phi -= b.w * smooth;
        {
            /* The energy in double: excluded pairs are close (1 A in
               water) and their erf terms, summed over every molecule,
               nearly cancel the self energy; float erf (2 ulp) would leave
               ~1e-6 of that large sum in a small total. */
            double rd = sqrt((double)dx * dx + (double)dy * dy + (double)dz * dz);
            double smooth_exact = rd > 1e-8 ? erf(alpha_exact * rd) / rd
                                            : 1.1283791670955126 * alpha_exact;
            s->excluded -= 0.5 * (double)a.w * (double)b.w * smooth_exact;
        }
    }
}

/* The warp's sums of atom i added up; lane 0 writes (q_i F, phi). */
__device__ __forceinline__ void elec__spme_pair_finish(elec__spme_pair_sums *s,
                                                       float qi, int i,
                                                       float4 *out) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        s->fx += __shfl_xor_sync(0xffffffffu, s->fx, o);
        s->fy += __shfl_xor_sync(0xffffffffu, s->fy, o);
        s->fz += __shfl_xor_sync(0xffffffffu, s->fz, o);
        s->phi += __shfl_xor_sync(0xffffffffu, s->phi, o);
    }
    if ((threadIdx.x & 31) == 0 && out)
        out[i] = make_float4(qi * s->fx, qi * s->fy, qi * s->fz, s->phi);
    s->fx = s->fy = s->fz = s->phi = 0.0f;
}

/* Two atoms at one place (closer than ELEC_COINCIDENT_DISTANCE) and not an
   excluded pair: their energy is infinite.  The real-space kernels leave
   such a pair out rather than turn it into inf and NaN, and count it in a
   register; each thread adds its count once at the end (an atomic in the
   pair loop slows the loop by half), so that elec_cuda_spme_energy reports
   it as the CPU paths do. */
__device__ __forceinline__ bool elec__spme_coincident(float r2) {
    return r2 < (float)(ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE);
}

__device__ __forceinline__ void elec__spme_coincident_add(double *sums, int count) {
    if (count) atomicAdd(sums + ELEC__SPME_SUM_COINCIDENT, (double)count);
}

/* Real space over the cell list: one warp per atom (in cell order, so a
   warp's neighbours are its predecessor's), its lanes striding over the
   atoms of the 27 neighbouring cells, whose periodic image shift is fixed
   per cell; every pair is visited from both atoms, each warp owns its
   atom's sums (no atomics) and counts half the energy.  A fixed grid of
   warps strides over the atoms, so that the energies take one atomic per
   block.  out[i] = (force, potential) unscaled, NULL = energy only. */
__global__ void __launch_bounds__(ELEC__SPME_BLOCK, 4)
elec__k_spme_real_cells(const float4 *sorted, const int *sorted_index,
                        const int *start, const float4 *xyzq, int n,
                        elec__spme_geometry g, elec__spme_cells c,
                        const int *excl_start, const int *excl_list,
                        float cutoff2, float alpha, float gauss,
                        double alpha_exact, float4 *out,
                        double *sums) {
    const int lane = threadIdx.x & 31;
    const int warps = gridDim.x * (blockDim.x >> 5);
    elec__spme_pair_sums s = {0.0f, 0.0f, 0.0f, 0.0f, 0.0, 0.0};
    int coincident = 0;
    for (int p = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; p < n;
         p += warps) {
        float4 a = sorted[p];
        int i = sorted_index[p];
        int eb = excl_start[i], ee = excl_start[i + 1];
        int cx = min((int)(a.x * c.per_length.x), c.n.x - 1);
        int cy = min((int)(a.y * c.per_length.y), c.n.y - 1);
        int cz = min((int)(a.z * c.per_length.z), c.n.z - 1);
        for (int oz = -c.reach; oz <= c.reach; oz++) {
            int nz = cz + oz;
            float sz = 0.0f;
            if (nz < 0) { nz += c.n.z; sz = -g.length.z; }
            else if (nz >= c.n.z) { nz -= c.n.z; sz = g.length.z; }
            for (int oy = -c.reach; oy <= c.reach; oy++) {
                int ny = cy + oy;
                float sy = 0.0f;
                if (ny < 0) { ny += c.n.y; sy = -g.length.y; }
                else if (ny >= c.n.y) { ny -= c.n.y; sy = g.length.y; }
                /* The row's cells cx - reach .. cx + reach are consecutive
                   in the sorted atoms, so the warp's lanes sweep them as one
                   range; a row that crosses the box edge is two ranges, the
                   far one an image (shifted by a box length). */
                int row = c.n.x * (ny + c.n.y * nz);
                int lo = cx - c.reach, hi = cx + c.reach;
                for (int part = 0; part < 2; part++) {
                    int first, last;
                    float sx = 0.0f;
                    if (part == 0) {
                        first = max(lo, 0);
                        last = min(hi, c.n.x - 1);
                    } else if (lo < 0) {
                        first = lo + c.n.x;
                        last = c.n.x - 1;
                        sx = -g.length.x;
                    } else if (hi >= c.n.x) {
                        first = 0;
                        last = hi - c.n.x;
                        sx = g.length.x;
                    } else {
                        break;
                    }
                    /* the image of these cells next to atom i: b + s */
                    float ax = a.x - sx, ay = a.y - sy, az = a.z - sz;
                    int end = start[row + last + 1];
                    for (int k = start[row + first] + lane; k < end; k += 32) {
                        float4 b = sorted[k];
                        float dx = ax - b.x, dy = ay - b.y, dz = az - b.z;
                        float r2 = fmaf(dx, dx, fmaf(dy, dy, dz * dz));
                        if (r2 >= cutoff2 || k == p) continue;
                        if (ee > eb &&
                            elec__spme_excluded(excl_list, eb, ee, sorted_index[k]))
                            continue;
                        if (elec__spme_coincident(r2)) { coincident++; continue; }
                        elec__spme_pair(&s, b.w, dx, dy, dz, r2, alpha, gauss);
                    }
                }
            }
        }
        elec__spme_real_energy(&s, a.w);
        elec__spme_excluded_pairs(&s, a, xyzq, n, excl_list, eb, ee, lane, g,
                                  alpha, gauss, alpha_exact);
        elec__spme_pair_finish(&s, a.w, i, out);
    }
    elec__spme_block_add(sums + ELEC__SPME_SUM_REAL, s.real);
    elec__spme_block_add(sums + ELEC__SPME_SUM_EXCLUDED, s.excluded);
    elec__spme_coincident_add(sums, coincident);
}

/* Real space for boxes too small for 3 cells of the cutoff per axis: one
   warp per atom over every other atom, minimum image per pair. */
__global__ void __launch_bounds__(ELEC__SPME_BLOCK, 4)
elec__k_spme_real_all(const float4 *xyzq, int n, elec__spme_geometry g,
                      const int *excl_start, const int *excl_list,
                      float cutoff2, float alpha, float gauss,
                      double alpha_exact, float4 *out,
                      double *sums) {
    const int lane = threadIdx.x & 31;
    const int warps = gridDim.x * (blockDim.x >> 5);
    elec__spme_pair_sums s = {0.0f, 0.0f, 0.0f, 0.0f, 0.0, 0.0};
    int coincident = 0;
    for (int i = (blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < n;
         i += warps) {
        float4 a = elec__spme_wrapped(xyzq[i], g);
        int eb = excl_start[i], ee = excl_start[i + 1];
        for (int j = lane; j < n; j += 32) {
            float4 b = xyzq[j];
            float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
            dx -= g.length.x * rintf(dx * g.inv_length.x);
            dy -= g.length.y * rintf(dy * g.inv_length.y);
            dz -= g.length.z * rintf(dz * g.inv_length.z);
            float r2 = fmaf(dx, dx, fmaf(dy, dy, dz * dz));
            if (r2 >= cutoff2 || j == i) continue;
            if (ee > eb && elec__spme_excluded(excl_list, eb, ee, j)) continue;
            if (elec__spme_coincident(r2)) { coincident++; continue; }
            elec__spme_pair(&s, b.w, dx, dy, dz, r2, alpha, gauss);
        }
        elec__spme_real_energy(&s, a.w);
        elec__spme_excluded_pairs(&s, a, xyzq, n, excl_list, eb, ee, lane, g,
                                  alpha, gauss, alpha_exact);
        elec__spme_pair_finish(&s, a.w, i, out);
    }
    elec__spme_block_add(sums + ELEC__SPME_SUM_REAL, s.real);
    elec__spme_block_add(sums + ELEC__SPME_SUM_EXCLUDED, s.excluded);
    elec__spme_coincident_add(sums, coincident);
}

/* ------------------------------------------------------- SPME host side */

#define ELEC__CUFFT_TRY(call)                                                \
    do {                                                                     \
        cufftResult elec__r = (call);                                        \
        if (elec__r != CUFFT_SUCCESS) {                                      \
            status = elec__cufft_fail(err, elec__r, #call, __LINE__);        \
            goto cleanup;                                                    \
        }                                                                    \
    } while (0)

static elec_status elec__cufft_fail(elec_error *err, cufftResult r,
                                    const char *call, int line) {
    const char *name;
    switch (r) {
    case CUFFT_INVALID_PLAN: name = "CUFFT_INVALID_PLAN"; break;
    case CUFFT_ALLOC_FAILED: name = "CUFFT_ALLOC_FAILED"; break;
    case CUFFT_INVALID_TYPE: name = "CUFFT_INVALID_TYPE"; break;
    case CUFFT_INVALID_VALUE: name = "CUFFT_INVALID_VALUE"; break;
    case CUFFT_INTERNAL_ERROR: name = "CUFFT_INTERNAL_ERROR"; break;
    case CUFFT_EXEC_FAILED: name = "CUFFT_EXEC_FAILED"; break;
    case CUFFT_SETUP_FAILED: name = "CUFFT_SETUP_FAILED"; break;
    case CUFFT_INVALID_SIZE: name = "CUFFT_INVALID_SIZE"; break;
    case CUFFT_UNALIGNED_DATA: name = "CUFFT_UNALIGNED_DATA"; break;
    case CUFFT_INVALID_DEVICE: name = "CUFFT_INVALID_DEVICE"; break;
    case CUFFT_NOT_SUPPORTED: name = "CUFFT_NOT_SUPPORTED"; break;
    default: name = "cuFFT error"; break;
    }
    (void)cudaGetLastError();
    return elec__fail(err, r == CUFFT_ALLOC_FAILED ? ELEC_ERR_NO_MEMORY
                                                   : ELEC_ERR_CUDA,
                      0, "%s failed (elec_cuda.cuh:%d): %s (%d)", call, line,
                      name, (int)r);
}

/* What one evaluation computes (the bench times the parts alone). */
#define ELEC__SPME_DO_RECIPROCAL 1
#define ELEC__SPME_DO_REAL 2
/* Events a timed evaluation records, in this order on one stream: start,
   spread, forward FFT, solve, backward FFT, real space, gather. */
#define ELEC__SPME_MARKS 7

struct elec_cuda_spme_handle {
    int device;
    elec_spme_params p;      /* resolved; excluded_pairs not kept         */
    elec_box box;
    size_t max_atoms;
    int sm_count;
    elec__spme_geometry g;
    int grid_points;         /* Kx Ky Kz                                  */
    int spectrum_points;     /* Kz Ky (Kx/2 + 1)                          */
    cufftHandle forward, backward;
    int has_forward, has_backward;
    cudaStream_t side;       /* the real-space chain                      */
    cudaEvent_t fork, join;
    float *grid;             /* charges, then the convolution             */
    cufftComplex *spectrum;
    float *theta;            /* half spectrum                             */
    double *sums;            /* ELEC__SPME_SUMS raw energy sums           */
    /* gather spreading */
    int *grid_cell_count;    /* grid_points counters, then the overflow's */
    int *grid_cell_atoms;    /* grid_points x ELEC__SPME_CELL_CAPACITY    */
    int *overflow_atoms;
    float *weights;          /* max_atoms x 3 x order                     */
    /* real space */
    int use_cells;
    elec__spme_cells cells;
    int cell_count;
    int *cell_counts, *cell_start, *atom_cell, *atom_slot, *sorted_index;
    float4 *sorted;
    float4 *real;            /* per atom: force (unscaled), potential     */
    int *excl_start, *excl_list;
};

ELEC_DEF void elec_cuda_spme_destroy(elec_cuda_spme_handle *h) {
    int caller_device = 0;
    if (!h) return;
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    cudaSetDevice(h->device);
    if (h->has_forward) cufftDestroy(h->forward);
    if (h->has_backward) cufftDestroy(h->backward);
    if (h->side) cudaStreamDestroy(h->side);
    if (h->fork) cudaEventDestroy(h->fork);
    if (h->join) cudaEventDestroy(h->join);
    cudaFree(h->grid);
    cudaFree(h->spectrum);
    cudaFree(h->theta);
    cudaFree(h->sums);
    cudaFree(h->grid_cell_count);
    cudaFree(h->grid_cell_atoms);
    cudaFree(h->overflow_atoms);
    cudaFree(h->weights);
    cudaFree(h->cell_counts);
    cudaFree(h->cell_start);
    cudaFree(h->atom_cell);
    cudaFree(h->atom_slot);
    cudaFree(h->sorted_index);
    cudaFree(h->sorted);
    cudaFree(h->real);
    cudaFree(h->excl_start);
    cudaFree(h->excl_list);
    (void)cudaGetLastError();
    cudaSetDevice(caller_device);
    ELEC_FREE(h);
}

/* The influence function on the half spectrum, in double, rounded to
   float: theta(m) = exp(-pi^2 mt^2/alpha^2) / (pi V mt^2 Bx By Bz). */
static elec_status elec__spme_theta(const elec_cuda_spme_handle *h, float *theta,
                                    elec_error *err) {
    const double pi = 3.14159265358979323846;
    const int *K = h->p.grid;
    const int half_x = K[0] / 2 + 1;
    const double volume = h->box.length[0] * h->box.length[1] * h->box.length[2];
    double *moduli[3];
    int axis, mx, my, mz;
    moduli[0] = (double *)ELEC_MALLOC((size_t)(K[0] + K[1] + K[2]) * sizeof(double));
    if (!moduli[0])
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory");
    moduli[1] = moduli[0] + K[0];
    moduli[2] = moduli[1] + K[1];
    for (axis = 0; axis < 3; axis++)
        elec_spme_bspline_moduli(h->p.order, K[axis], moduli[axis]);
    for (mz = 0; mz < K[2]; mz++)
        for (my = 0; my < K[1]; my++)
            for (mx = 0; mx < half_x; mx++) {
                double fx = mx / h->box.length[0];
                double fy = (my <= K[1] / 2 ? my : my - K[1]) / h->box.length[1];
                double fz = (mz <= K[2] / 2 ? mz : mz - K[2]) / h->box.length[2];
                double m2 = fx * fx + fy * fy + fz * fz;
                size_t index = (size_t)mx + (size_t)half_x * ((size_t)my + (size_t)K[1] * mz);
                theta[index] =
                    m2 == 0.0 ? 0.0f
                              : (float)(exp(-pi * pi * m2 / (h->p.alpha * h->p.alpha)) /
                                        (pi * volume * m2 * moduli[0][mx] *
                                         moduli[1][my] * moduli[2][mz]));
            }
    ELEC_FREE(moduli[0]);
    return ELEC_OK;
}

/* The excluded pairs as a per-atom list (CSR: atom i's partners are
   list[start[i] .. start[i+1])), each pair on both atoms' lists, a pair
   given twice kept twice (as the CPU reference counts it). */
static elec_status elec__spme_exclusions(const elec_spme_params *p,
                                         size_t atoms, int **start_out,
                                         int **list_out, elec_error *err) {
    size_t e, i, pairs = p->excluded_pair_count;
    int *start = (int *)ELEC_MALLOC((atoms + 1) * sizeof(int));
    int *list = (int *)ELEC_MALLOC((2 * pairs + 1) * sizeof(int));
    int *fill = (int *)ELEC_MALLOC((atoms + 1) * sizeof(int));
    if (!start || !list || !fill) {
        ELEC_FREE(start);
        ELEC_FREE(list);
        ELEC_FREE(fill);
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory");
    }
    memset(start, 0, (atoms + 1) * sizeof(int));
    for (e = 0; e < pairs; e++) {
        start[p->excluded_pairs[2 * e] + 1]++;
        start[p->excluded_pairs[2 * e + 1] + 1]++;
    }
    for (i = 0; i < atoms; i++) start[i + 1] += start[i];
    memcpy(fill, start, (atoms + 1) * sizeof(int));
    for (e = 0; e < pairs; e++) {
        size_t a = p->excluded_pairs[2 * e], b = p->excluded_pairs[2 * e + 1];
        list[fill[a]++] = (int)b;
        list[fill[b]++] = (int)a;
    }
    ELEC_FREE(fill);
    *start_out = start;
    *list_out = list;
    return ELEC_OK;
}

/* Blocks for a fixed grid that strides over its work: enough to fill the
   device, few enough that each block's one energy atomic is cheap. */
static unsigned elec__spme_blocks(const elec_cuda_spme_handle *h, size_t threads) {
    size_t needed = (threads + ELEC__SPME_BLOCK - 1) / ELEC__SPME_BLOCK;
    size_t most = 8 * (size_t)h->sm_count;
    if (needed < 1) needed = 1;
    return (unsigned)(needed < most ? needed : most);
}

/* The handle of already resolved parameters (create and the one-shot call
   resolve once, then come here). */
static elec_status elec__cuda_spme_create(const elec_box *box, size_t max_atoms,
                                          const elec_spme_params *resolved_params,
                                          int device, elec_cuda_spme_handle **out,
                                          elec_error *err) {
    elec_status status = ELEC_OK;
    elec_cuda_spme_handle *h = NULL;
    float *host_theta = NULL;
    int *host_excl_start = NULL, *host_excl_list = NULL;
    elec_spme_params resolved = *resolved_params;
    int caller_device = 0, devices, axis;
    size_t grid_points, spectrum_points, pairs;
    *out = NULL;
    if (max_atoms == 0)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "no atoms: the handle needs room for an atom");
    if (max_atoms > ((size_t)1 << 27))
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "%zu atoms: the GPU SPME takes at most %zu atoms",
                          max_atoms, (size_t)1 << 27);
    pairs = resolved.excluded_pair_count;
    if (pairs > (size_t)INT_MAX / 2 - 1)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "%zu excluded pairs: at most %d", pairs, INT_MAX / 2 - 1);
    grid_points = (size_t)resolved.grid[0] * resolved.grid[1] * resolved.grid[2];
    spectrum_points =
        (size_t)(resolved.grid[0] / 2 + 1) * resolved.grid[1] * resolved.grid[2];
    if (grid_points > (size_t)INT_MAX)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "grid %d x %d x %d: the GPU SPME takes at most 2^31 "
                          "points", resolved.grid[0], resolved.grid[1],
                          resolved.grid[2]);
    devices = elec_cuda_device_count();
    if (devices == 0)
        return elec__fail(err, ELEC_ERR_NO_DEVICE, 0,
                          "no CUDA device is present (or no driver)");
    if (device < -1 || device >= devices)
        return elec__fail(err, ELEC_ERR_NO_DEVICE, 0,
                          "GPU %d asked for; %d present", device, devices);
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    h = (elec_cuda_spme_handle *)ELEC_MALLOC(sizeof *h);
    if (!h) return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory");
    memset(h, 0, sizeof *h);
    h->p = resolved;
    h->device = device == -1 ? caller_device : device;
    h->box = *box;
    h->max_atoms = max_atoms;
    h->grid_points = (int)grid_points;
    h->spectrum_points = (int)spectrum_points;
    h->g.K = make_int3(h->p.grid[0], h->p.grid[1], h->p.grid[2]);
    h->g.length = make_float3((float)box->length[0], (float)box->length[1],
                              (float)box->length[2]);
    h->g.inv_length = make_float3((float)(1.0 / box->length[0]),
                                  (float)(1.0 / box->length[1]),
                                  (float)(1.0 / box->length[2]));
    h->g.grid_per_length = make_float3((float)(h->p.grid[0] / box->length[0]),
                                       (float)(h->p.grid[1] / box->length[1]),
                                       (float)(h->p.grid[2] / box->length[2]));
    /* Cells at least the cutoff long, 3 or more per axis (so that the 27
       neighbours are distinct cells), at most 128 per axis. */
    h->use_cells = 1;
    {
        /* Half-cutoff cells with two neighbours each way (125 cells, 0.58 of
           the volume of 27 cutoff-long ones: fewer candidates per atom)
           where the box holds five along every axis; else cutoff-long cells
           with one neighbour each way; else all pairs. */
        int n[3], reach = 2;
        for (axis = 0; axis < 3; axis++)
            if (floor(2.0 * box->length[axis] / h->p.cutoff) < 5.0) reach = 1;
        for (axis = 0; axis < 3; axis++) {
            double cells = floor(reach * box->length[axis] / h->p.cutoff);
            n[axis] = cells > 128.0 ? 128 : (int)cells;
            if (n[axis] < 2 * reach + 1) h->use_cells = 0;
        }
        h->cells.reach = reach;
        h->cells.n = make_int3(n[0], n[1], n[2]);
        h->cells.per_length = make_float3((float)(n[0] / box->length[0]),
                                          (float)(n[1] / box->length[1]),
                                          (float)(n[2] / box->length[2]));
        h->cell_count = h->use_cells ? n[0] * n[1] * n[2] : 0;
    }
    status = elec__spme_exclusions(&h->p, max_atoms, &host_excl_start,
                                   &host_excl_list, err);
    if (status != ELEC_OK) goto cleanup;
    h->p.excluded_pairs = NULL; /* the caller's array: not kept */
    host_theta = (float *)ELEC_MALLOC(spectrum_points * sizeof(float));
    if (!host_theta) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory");
        goto cleanup;
    }
    if ((status = elec__spme_theta(h, host_theta, err)) != ELEC_OK) goto cleanup;

    ELEC__CUDA_TRY(cudaSetDevice(h->device));
    ELEC__CUDA_TRY(cudaDeviceGetAttribute(&h->sm_count,
                                          cudaDevAttrMultiProcessorCount,
                                          h->device));
    ELEC__CUDA_TRY(cudaStreamCreateWithFlags(&h->side, cudaStreamNonBlocking));
    ELEC__CUDA_TRY(cudaEventCreateWithFlags(&h->fork, cudaEventDisableTiming));
    ELEC__CUDA_TRY(cudaEventCreateWithFlags(&h->join, cudaEventDisableTiming));
    ELEC__CUDA_TRY(cudaMalloc((void **)&h->grid, grid_points * sizeof(float)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&h->spectrum,
                              spectrum_points * sizeof(cufftComplex)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&h->theta, spectrum_points * sizeof(float)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&h->sums, ELEC__SPME_SUMS * sizeof(double)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&h->real, max_atoms * sizeof(float4)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&h->excl_start,
                              (max_atoms + 1) * sizeof(int)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&h->excl_list,
                              (2 * pairs + 1) * sizeof(int)));
    if (h->p.spread == ELEC_SPME_SPREAD_GATHER) {
        /* one more counter after the cells': the overflow count */
        ELEC__CUDA_TRY(cudaMalloc((void **)&h->grid_cell_count,
                                  (grid_points + 1) * sizeof(int)));
        ELEC__CUDA_TRY(cudaMalloc((void **)&h->grid_cell_atoms,
                                  grid_points * ELEC__SPME_CELL_CAPACITY *
                                      sizeof(int)));
        ELEC__CUDA_TRY(cudaMalloc((void **)&h->overflow_atoms,
                                  max_atoms * sizeof(int)));
        ELEC__CUDA_TRY(cudaMalloc((void **)&h->weights,
                                  max_atoms * 3 * h->p.order * sizeof(float)));
    }
    if (h->use_cells) {
        ELEC__CUDA_TRY(cudaMalloc((void **)&h->cell_counts,
                                  h->cell_count * sizeof(int)));
        ELEC__CUDA_TRY(cudaMalloc((void **)&h->cell_start,
                                  (h->cell_count + 1) * sizeof(int)));
        ELEC__CUDA_TRY(cudaMalloc((void **)&h->atom_cell, max_atoms * sizeof(int)));
        ELEC__CUDA_TRY(cudaMalloc((void **)&h->atom_slot, max_atoms * sizeof(int)));
        ELEC__CUDA_TRY(cudaMalloc((void **)&h->sorted_index,
                                  max_atoms * sizeof(int)));
        ELEC__CUDA_TRY(cudaMalloc((void **)&h->sorted, max_atoms * sizeof(float4)));
    }
    ELEC__CUDA_TRY(cudaMemcpy(h->theta, host_theta, spectrum_points * sizeof(float),
                              cudaMemcpyHostToDevice));
    ELEC__CUDA_TRY(cudaMemcpy(h->excl_start, host_excl_start,
                              (max_atoms + 1) * sizeof(int),
                              cudaMemcpyHostToDevice));
    ELEC__CUDA_TRY(cudaMemcpy(h->excl_list, host_excl_list,
                              (2 * pairs + 1) * sizeof(int),
                              cudaMemcpyHostToDevice));
    ELEC__CUDA_TRY(cudaMemset(h->sums, 0, ELEC__SPME_SUMS * sizeof(double)));
    /* cuFFT takes the slowest dimension first: (Kz, Ky, Kx). */
    ELEC__CUFFT_TRY(cufftPlan3d(&h->forward, h->p.grid[2], h->p.grid[1],
                                h->p.grid[0], CUFFT_R2C));
    h->has_forward = 1;
    ELEC__CUFFT_TRY(cufftPlan3d(&h->backward, h->p.grid[2], h->p.grid[1],
                                h->p.grid[0], CUFFT_C2R));
    h->has_backward = 1;
    *out = h;
    h = NULL;
    elec__ok(err);
cleanup:
    ELEC_FREE(host_theta);
    ELEC_FREE(host_excl_start);
    ELEC_FREE(host_excl_list);
    if (h) {
        cudaSetDevice(caller_device); /* destroy switches to h->device itself */
        elec_cuda_spme_destroy(h);
    }
    cudaSetDevice(caller_device);
    return status;
}

ELEC_DEF elec_status elec_cuda_spme_create(const elec_box *box,
                                           const elec_atoms *atoms,
                                           const elec_spme_params *params,
                                           int device, elec_cuda_spme_handle **out,
                                           elec_error *err) {
    elec_spme_params resolved;
    elec_status status;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    *out = NULL;
    if ((status = elec_spme_params_resolve(params, box, atoms, &resolved, err)) != ELEC_OK)
        return status;
    if (resolved.tolerance < 1.5 * ELEC_SPME_GPU_FLOAT_FLOOR)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "SPME tolerance %g on the GPU: below what its float arithmetic "
                          "allows (1.5 x ELEC_SPME_GPU_FLOAT_FLOOR = %g); use the CPU",
                          resolved.tolerance, 1.5 * ELEC_SPME_GPU_FLOAT_FLOOR);
    return elec__cuda_spme_create(box, atoms->count, &resolved, device, out, err);
}

ELEC_DEF elec_status elec_cuda_spme_params(const elec_cuda_spme_handle *h,
                                           elec_spme_params *resolved,
                                           elec_error *err) {
    if (!h || !resolved)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "handle or resolved is NULL");
    *resolved = h->p;
    elec__ok(err);
    return ELEC_OK;
}

/* The reciprocal chain up to the convolved grid, on one stream. */
template <int ORDER>
static elec_status elec__spme_spread(elec_cuda_spme_handle *h, const float4 *xyzq,
                                     int n, cudaStream_t stream,
                                     elec_error *err) {
    elec_status status = ELEC_OK;
    const int block = ELEC__SPME_BLOCK;
    if (h->p.spread == ELEC_SPME_SPREAD_GATHER) {
        ELEC__CUDA_TRY(cudaMemsetAsync(h->grid_cell_count, 0,
                                       ((size_t)h->grid_points + 1) * sizeof(int),
                                       stream));
        elec__k_spme_place<ORDER><<<(n + block - 1) / block, block, 0, stream>>>(
            xyzq, n, h->g, h->grid_cell_count, h->grid_cell_atoms,
            h->grid_cell_count + h->grid_points, h->overflow_atoms, h->weights,
            h->sums);
        ELEC__CUDA_TRY(cudaGetLastError());
        elec__k_spme_spread_gather<ORDER>
            <<<(h->grid_points + block - 1) / block, block, 0, stream>>>(
                h->grid, h->g, h->grid_cell_count, h->grid_cell_atoms,
                h->weights, h->grid_points);
        ELEC__CUDA_TRY(cudaGetLastError());
        elec__k_spme_spread_overflow<ORDER>
            <<<2 * h->sm_count, block, 0, stream>>>(
                h->grid, xyzq, h->g, h->grid_cell_count + h->grid_points,
                h->overflow_atoms, h->weights);
        ELEC__CUDA_TRY(cudaGetLastError());
    } else {
        const int lanes = elec__spme_lanes<ORDER>::value;
        ELEC__CUDA_TRY(cudaMemsetAsync(h->grid, 0,
                                       (size_t)h->grid_points * sizeof(float),
                                       stream));
        elec__k_spme_spread_atomic<ORDER>
            <<<(unsigned)(((size_t)n * lanes + block - 1) / block), block, 0,
               stream>>>(h->grid, xyzq, n, h->g, h->sums);
        ELEC__CUDA_TRY(cudaGetLastError());
    }
cleanup:
    return status;
}

template <int ORDER>
static elec_status elec__spme_gather(elec_cuda_spme_handle *h, const float4 *xyzq,
                                     int n, const float4 *real, float *forces,
                                     float *potential, cudaStream_t stream,
                                     elec_error *err) {
    elec_status status = ELEC_OK;
    const int block = ELEC__SPME_BLOCK, lanes = elec__spme_lanes<ORDER>::value;
    elec__k_spme_gather<ORDER>
        <<<(unsigned)(((size_t)n * lanes + block - 1) / block), block, 0,
           stream>>>(h->grid, xyzq, n, h->g, real, (float)h->p.scale, forces,
                     potential);
    ELEC__CUDA_TRY(cudaGetLastError());
cleanup:
    return status;
}

/* The order is a template argument of the stencil kernels (their weight
   arrays stay in registers): one switch per launch site. */
#define ELEC__SPME_BY_ORDER(call_of_order)                                   \
    switch (h->p.order) {                                                    \
    case 4: status = call_of_order(4); break;                                \
    case 5: status = call_of_order(5); break;                                \
    case 6: status = call_of_order(6); break;                                \
    case 7: status = call_of_order(7); break;                                \
    default: status = call_of_order(8); break;                               \
    }

/* The real-space chain on one stream: cell list and pairs, or all pairs. */
static elec_status elec__spme_real(elec_cuda_spme_handle *h, const float4 *xyzq, int n,
                                   int want_atoms, cudaStream_t stream,
                                   elec_error *err) {
    elec_status status = ELEC_OK;
    const int block = ELEC__SPME_BLOCK;
    const unsigned atom_blocks = (unsigned)((n + block - 1) / block);
    const float cutoff2 = (float)(h->p.cutoff * h->p.cutoff);
    const float alpha = (float)h->p.alpha;
    const float gauss = (float)(2.0 * h->p.alpha / sqrt(3.14159265358979323846));
    float4 *out = want_atoms ? h->real : NULL;
    if (h->use_cells) {
        ELEC__CUDA_TRY(cudaMemsetAsync(h->cell_counts, 0,
                                       (size_t)h->cell_count * sizeof(int), stream));
        elec__k_spme_cells_count<<<atom_blocks, block, 0, stream>>>(
            xyzq, n, h->g, h->cells, h->cell_counts, h->atom_cell, h->atom_slot);
        ELEC__CUDA_TRY(cudaGetLastError());
        elec__k_spme_cells_scan<<<1, ELEC__SPME_SCAN_THREADS, 0, stream>>>(
            h->cell_counts, h->cell_start, h->cell_count);
        ELEC__CUDA_TRY(cudaGetLastError());
        elec__k_spme_cells_scatter<<<atom_blocks, block, 0, stream>>>(
            xyzq, n, h->g, h->cell_start, h->atom_cell, h->atom_slot, h->sorted,
            h->sorted_index);
        ELEC__CUDA_TRY(cudaGetLastError());
        elec__k_spme_real_cells<<<elec__spme_blocks(h, (size_t)n * 32), block, 0,
                                  stream>>>(
            h->sorted, h->sorted_index, h->cell_start, xyzq, n, h->g, h->cells,
            h->excl_start, h->excl_list, cutoff2, alpha, gauss, h->p.alpha, out,
            h->sums);
        ELEC__CUDA_TRY(cudaGetLastError());
    } else {
        elec__k_spme_real_all<<<elec__spme_blocks(h, (size_t)n * 32), block, 0,
                                stream>>>(
            xyzq, n, h->g, h->excl_start, h->excl_list, cutoff2, alpha, gauss, h->p.alpha,
            out, h->sums);
        ELEC__CUDA_TRY(cudaGetLastError());
    }
cleanup:
    return status;
}

/* One evaluation.  what: ELEC__SPME_DO_RECIPROCAL | ELEC__SPME_DO_REAL.
   marks NULL: the real-space chain runs on the side stream, forked from
   and joined back into `stream` by events (graph capture follows both).
   marks given: everything in order on `stream`, with an event recorded
   before and after each stage (ELEC__SPME_MARKS), for the bench.
   potential: unscaled mesh + real + excluded parts (host API). */
static elec_status elec__spme_enqueue(elec_cuda_spme_handle *h, const float4 *xyzq,
                                      size_t n, float *forces, float *potential,
                                      cudaStream_t stream, int what,
                                      cudaEvent_t *marks, elec_error *err) {
    elec_status status = ELEC_OK;
    const int count = (int)n;
    const int do_real = (what & ELEC__SPME_DO_REAL) != 0;
    const int do_reciprocal = (what & ELEC__SPME_DO_RECIPROCAL) != 0;
    const int want_atoms = forces != NULL || potential != NULL;
    ELEC__CUDA_TRY(cudaMemsetAsync(h->sums, 0, ELEC__SPME_SUMS * sizeof(double),
                                   stream));
    if (n == 0) goto cleanup;
    if (marks) ELEC__CUDA_TRY(cudaEventRecord(marks[0], stream));
    if (do_real && !marks) {
        ELEC__CUDA_TRY(cudaEventRecord(h->fork, stream));
        ELEC__CUDA_TRY(cudaStreamWaitEvent(h->side, h->fork, 0));
        status = elec__spme_real(h, xyzq, count, want_atoms, h->side, err);
        if (status != ELEC_OK) goto cleanup;
        ELEC__CUDA_TRY(cudaEventRecord(h->join, h->side));
    }
    if (do_reciprocal) {
#define ELEC__SPME_SPREAD_CALL(order) \
    elec__spme_spread<order>(h, xyzq, count, stream, err)
        ELEC__SPME_BY_ORDER(ELEC__SPME_SPREAD_CALL)
#undef ELEC__SPME_SPREAD_CALL
        if (status != ELEC_OK) goto cleanup;
        if (marks) ELEC__CUDA_TRY(cudaEventRecord(marks[1], stream));
        ELEC__CUFFT_TRY(cufftSetStream(h->forward, stream));
        ELEC__CUFFT_TRY(cufftSetStream(h->backward, stream));
        ELEC__CUFFT_TRY(cufftExecR2C(h->forward, h->grid, h->spectrum));
        if (marks) ELEC__CUDA_TRY(cudaEventRecord(marks[2], stream));
        elec__k_spme_solve<<<elec__spme_blocks(h, (size_t)h->spectrum_points),
                             ELEC__SPME_BLOCK, 0, stream>>>(
            h->spectrum, h->theta, h->g.K.x, h->spectrum_points, h->sums);
        ELEC__CUDA_TRY(cudaGetLastError());
        if (marks) ELEC__CUDA_TRY(cudaEventRecord(marks[3], stream));
        ELEC__CUFFT_TRY(cufftExecC2R(h->backward, h->spectrum, h->grid));
        if (marks) ELEC__CUDA_TRY(cudaEventRecord(marks[4], stream));
    }
    if (do_real) {
        if (marks) {
            status = elec__spme_real(h, xyzq, count, want_atoms, stream, err);
            if (status != ELEC_OK) goto cleanup;
            ELEC__CUDA_TRY(cudaEventRecord(marks[5], stream));
        } else {
            ELEC__CUDA_TRY(cudaStreamWaitEvent(stream, h->join, 0));
        }
    }
    if (do_reciprocal && want_atoms) {
        const float4 *real = do_real ? h->real : NULL;
#define ELEC__SPME_GATHER_CALL(order) \
    elec__spme_gather<order>(h, xyzq, count, real, forces, potential, stream, err)
        ELEC__SPME_BY_ORDER(ELEC__SPME_GATHER_CALL)
#undef ELEC__SPME_GATHER_CALL
        if (status != ELEC_OK) goto cleanup;
    }
    if (marks) ELEC__CUDA_TRY(cudaEventRecord(marks[6], stream));
cleanup:
    return status;
}

#ifdef __cplusplus
extern "C" {
#endif

ELEC_DEF elec_status elec_cuda_spme_compute(elec_cuda_spme_handle *h,
                                            const float4 *d_xyzq, size_t n,
                                            float *d_forces,
                                            cudaStream_t stream,
                                            elec_error *err) {
    elec_status status = ELEC_OK;
    int caller_device = 0;
    if (!h) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "handle is NULL");
    if (n > h->max_atoms)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "%zu atoms: the handle was created for at most %zu",
                          n, h->max_atoms);
    if (n > 0 && !d_xyzq)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "d_xyzq is NULL");
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    ELEC__CUDA_TRY(cudaSetDevice(h->device));
    status = elec__spme_enqueue(h, d_xyzq, n, d_forces, NULL, stream,
                                ELEC__SPME_DO_RECIPROCAL | ELEC__SPME_DO_REAL,
                                NULL, err);
    if (status == ELEC_OK) elec__ok(err);
cleanup:
    cudaSetDevice(caller_device);
    return status;
}

/* The terms from the raw device sums: the factors that need no atoms. */
static void elec__spme_terms(const elec_cuda_spme_handle *h, const double *sums,
                             elec_ewald_terms *t) {
    const double pi = 3.14159265358979323846, s = h->p.scale, a = h->p.alpha;
    const double volume = h->box.length[0] * h->box.length[1] * h->box.length[2];
    double charge = sums[ELEC__SPME_SUM_CHARGE];
    t->real = s * sums[ELEC__SPME_SUM_REAL];
    t->reciprocal = s * 0.5 * sums[ELEC__SPME_SUM_RECIPROCAL];
    t->self = -s * a / sqrt(pi) * sums[ELEC__SPME_SUM_CHARGE2];
    t->excluded = s * sums[ELEC__SPME_SUM_EXCLUDED];
    t->background = -s * pi * charge * charge / (2.0 * a * a * volume);
    t->total = t->real + t->reciprocal + t->self + t->excluded + t->background;
    t->error = h->p.estimate.energy;
}

ELEC_DEF elec_status elec_cuda_spme_energy(elec_cuda_spme_handle *h,
                                           elec_ewald_terms *terms,
                                           cudaStream_t stream,
                                           elec_error *err) {
    elec_status status = ELEC_OK;
    double sums[ELEC__SPME_SUMS];
    int caller_device = 0;
    if (!h || !terms)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "handle or terms is NULL");
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    ELEC__CUDA_TRY(cudaSetDevice(h->device));
    ELEC__CUDA_TRY(cudaMemcpyAsync(sums, h->sums, sizeof sums,
                                   cudaMemcpyDeviceToHost, stream));
    ELEC__CUDA_TRY(cudaStreamSynchronize(stream));
    if (sums[ELEC__SPME_SUM_COINCIDENT] > 0.0) {
        status = elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                            "%.0f pair(s) of atoms closer than %g A and not excluded: "
                            "their energy is infinite (the last compute left them out)",
                            0.5 * sums[ELEC__SPME_SUM_COINCIDENT], ELEC_COINCIDENT_DISTANCE);
        goto cleanup;
    }
    elec__spme_terms(h, sums, terms);
    elec__ok(err);
cleanup:
    cudaSetDevice(caller_device);
    return status;
}

ELEC_DEF elec_status elec_cuda_spme(const elec_atoms *atoms,
                                    const elec_box *box,
                                    const elec_spme_params *params,
                                    elec_ewald_terms *energy, double *forces,
                                    double *potential, elec_error *err) {
    const double pi = 3.14159265358979323846;
    elec_status status;
    elec_spme_params p;
    elec_cuda_spme_handle *h = NULL;
    float4 *host_xyzq = NULL, *d_xyzq = NULL;
    float *host_out = NULL, *d_forces = NULL, *d_potential = NULL;
    double charge = 0.0, volume;
    size_t n, i;
    int caller_device = 0;
    cudaStream_t stream = NULL;
    if ((status = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return status;
    if (!energy) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "energy is NULL");
    n = atoms->count;
    if ((status = elec_spme_params_resolve(params, box, atoms, &p, err)) != ELEC_OK)
        return status;
    if (p.tolerance < 1.5 * p.estimate.float_floor)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "SPME tolerance %g on the GPU: below what float allows for these "
                          "atoms (their positions rounded to float, and float arithmetic: "
                          "relative force error about %.2g; 1.5 times that is the least); "
                          "use the CPU", p.tolerance, p.estimate.float_floor);
    volume = box->length[0] * box->length[1] * box->length[2];
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    host_xyzq = (float4 *)ELEC_MALLOC((n + 1) * sizeof(float4));
    host_out = (float *)ELEC_MALLOC((3 * n + 1) * sizeof(float));
    if (!host_xyzq || !host_out) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory");
        goto cleanup;
    }
    /* Wrapped into [0, L) in double (as the CPU reference does), then
       rounded: float keeps ~1e-7 of the box edge. */
    for (i = 0; i < n; i++) {
        double x[3], q;
        int axis;
        elec_atoms_get(atoms, i, x, &q, NULL);
        for (axis = 0; axis < 3; axis++) {
            double l = box->length[axis], f = floor(x[axis] / l);
            if (fabs(f) > 1000.0) {
                status = elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                    "atom %zu lies %.0f box lengths outside "
                                    "the box along axis %d", i, fabs(f), axis);
                goto cleanup;
            }
            x[axis] -= l * f;
            if (x[axis] >= l) x[axis] -= l;
        }
        host_xyzq[i] = make_float4((float)x[0], (float)x[1], (float)x[2], (float)q);
        charge += (double)(float)q;
    }
    status = elec__cuda_spme_create(box, n ? n : 1, &p, -1, &h, err);
    if (status != ELEC_OK) goto cleanup;
    ELEC__CUDA_TRY(cudaSetDevice(h->device));
    ELEC__CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_xyzq, (n + 1) * sizeof(float4)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_forces, (3 * n + 1) * sizeof(float)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_potential, (n + 1) * sizeof(float)));
    ELEC__CUDA_TRY(cudaMemcpyAsync(d_xyzq, host_xyzq, n * sizeof(float4),
                                   cudaMemcpyHostToDevice, stream));
    status = elec__spme_enqueue(h, d_xyzq, n, forces ? d_forces : NULL,
                                potential ? d_potential : NULL, stream,
                                ELEC__SPME_DO_RECIPROCAL | ELEC__SPME_DO_REAL,
                                NULL, err);
    if (status != ELEC_OK) goto cleanup;
    if ((status = elec_cuda_spme_energy(h, energy, stream, err)) != ELEC_OK)
        goto cleanup;
    ELEC__CUDA_TRY(cudaSetDevice(h->device));
    if (forces) {
        ELEC__CUDA_TRY(cudaMemcpy(host_out, d_forces, 3 * n * sizeof(float),
                                  cudaMemcpyDeviceToHost));
        for (i = 0; i < 3 * n; i++) forces[i] = host_out[i];
    }
    if (potential) {
        /* self and background parts in double: -2 alpha q_i/sqrt(pi) and
           -pi Q/(alpha^2 V), Q of the float charges the device summed */
        ELEC__CUDA_TRY(cudaMemcpy(host_out, d_potential, n * sizeof(float),
                                  cudaMemcpyDeviceToHost));
        for (i = 0; i < n; i++)
            potential[i] = p.scale * (host_out[i] -
                                      2.0 * p.alpha / sqrt(pi) * host_xyzq[i].w -
                                      pi * charge / (p.alpha * p.alpha * volume));
    }
    elec__ok(err);
cleanup:
    if (stream) cudaStreamDestroy(stream);
    cudaFree(d_xyzq);
    cudaFree(d_forces);
    cudaFree(d_potential);
    elec_cuda_spme_destroy(h);
    ELEC_FREE(host_xyzq);
    ELEC_FREE(host_out);
    cudaSetDevice(caller_device);
    return status;
}

#ifdef __cplusplus
}
#endif

#endif /* ELEC_CUDA_IMPLEMENTATION_DONE */
#endif /* ELEC_CUDA_IMPLEMENTATION */
