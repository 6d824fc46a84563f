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

static float4 *elec__cuda_gather_points(const double *points, size_t count,
                                        const double reference[3]) {
    size_t i;
    float4 *out = (float4 *)ELEC_MALLOC((count ? count : 1) * sizeof(float4));
    if (!out) return NULL;
    for (i = 0; i < count; i++)
        out[i] = make_float4((float)(points[3 * i] - reference[0]),
                             (float)(points[3 * i + 1] - reference[1]),
                             (float)(points[3 * i + 2] - reference[2]), 0.0f);
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

/* Lattice points within ELEC_COINCIDENT_DISTANCE of an atom: their values
   from the lattice kernels are not finite (r = 0) or carry the excluded
   term, so they are recomputed with the points kernel, which applies the
   rule.  Found by rounding each atom to its nearest lattice point. */
static size_t elec__dcs_coincident_points(const elec_atoms *atoms,
                                          const elec_lattice *l,
                                          size_t *index, size_t capacity) {
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
        if (found < capacity)
            index[found] = (size_t)ijk[0] +
                           (size_t)l->dims[0] *
                               ((size_t)ijk[1] + (size_t)l->dims[1] * ijk[2]);
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
    size_t count = elec__dcs_coincident_points(atoms, l, NULL, 0);
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
    elec__dcs_coincident_points(atoms, l, index, count);
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
        for (size_t i = 1; i < count; i++) {
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
    for (size_t i = 0; i < 3 * count; i++)
        if (!elec__finite(points[i]))
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "point %zu is not finite", i / 3);
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
    double centre[3];
    size_t n = 0;
    unsigned blocks;

    if ((status = elec_mdh_params_check(params, err)) != ELEC_OK) return status;
    p = elec_mdh_params_resolved(params);
    status = elec__cuda_points_check(atoms, 1, points, point_count, &p.gpus,
                                     potential, &device, err);
    if (status != ELEC_OK || point_count == 0) return status;
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;

    elec__points_centre(points, point_count, centre);
    host_xyza = elec__cuda_gather_xyzq(atoms, centre);
    host_points = elec__cuda_gather_points(points, point_count, centre);
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
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_xyza, (atoms->count + 1) * sizeof(float4)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_b, (atoms->count + 1) * sizeof(float)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_points, point_count * sizeof(float4)));
    ELEC__CUDA_TRY(cudaMalloc((void **)&d_potential, point_count * sizeof(float)));
    ELEC__CUDA_TRY(cudaMemcpy(d_xyza, host_xyza, atoms->count * sizeof(float4),
                              cudaMemcpyHostToDevice));
    ELEC__CUDA_TRY(cudaMemcpy(d_b, host_b, atoms->count * sizeof(float),
                              cudaMemcpyHostToDevice));
    ELEC__CUDA_TRY(cudaMemcpy(d_points, host_points,
                              point_count * sizeof(float4),
                              cudaMemcpyHostToDevice));
    blocks = (unsigned)((point_count + block * points_per_thread - 1) /
                        (block * points_per_thread));
    elec__k_mdh_points<points_per_thread>
        <<<blocks, block, block * (sizeof(float4) + sizeof(float))>>>(
            d_potential, d_points, (int)point_count, d_xyza, d_b,
            (int)atoms->count, (float)(p.kappa * log2e),
            (float)(ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE));
    ELEC__CUDA_TRY(cudaGetLastError());
    ELEC__CUDA_TRY(cudaMemcpy(potential, d_potential, point_count * sizeof(float),
                              cudaMemcpyDeviceToHost));
    for (n = 0; n < point_count; n++)
        potential[n] = (float)(p.scale * potential[n]);
    elec__ok(err);
cleanup:
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

#ifdef __cplusplus
}
#endif

#endif /* ELEC_CUDA_IMPLEMENTATION_DONE */
#endif /* ELEC_CUDA_IMPLEMENTATION */
