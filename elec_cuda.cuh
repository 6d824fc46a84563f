/* elec_cuda.cuh - molecular electrostatics on NVIDIA GPUs.  CUDA C++.

   The kernels of elec's methods as inline device code, and host launchers
   that take the same atoms, lattices and parameters as elec_cpu.h.  Include
   it from a .cu file compiled by nvcc; in exactly one of them
       #define ELEC_CUDA_IMPLEMENTATION     (or ELEC_ALL_IMPLEMENTATION)
       #include "elec_cuda.cuh"
   Build for the GPU you run on (nvcc -arch=sm_90 for H100/H200).

   Quick start: a DCS map spread over every GPU of the machine
   (tests/test_docs.sh compiles it).

       double xyz[6] = {0, 0, 0,  3, 0, 0}, q[2] = {1, -1};
       elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL);
       elec_lattice lattice = {{64, 64, 64}, {-16, -16, -16}, {0.5, 0.5, 0.5}};
       float *map = (float *)malloc(elec_lattice_size(&lattice) * sizeof *map);
       elec_dcs_params p = {0};
       elec_error err;
       p.gpus.count = ELEC_ALL_GPUS;         // slices go round-robin over them
       elec_status s = elec_cuda_dcs_map(&atoms, &lattice, &p, map, &err);
       if (s == ELEC_ERR_NO_DEVICE)          // no GPU: the CPU computes it
           s = elec_cpu_dcs_map(&atoms, &lattice, &p, map, &err);
       free(map);

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
   and recomputed by the points kernel, which applies the rule (elec.h).

   Contents (tools/contents.sh; ">>tag" finds a section in all three headers):
     >>common   devices
                elec_cuda_device_count elec_cuda_device_name
     >>dcs      DCS: direct Coulomb summation
                elec_cuda_dcs_map elec_cuda_dcs_points elec_rsqrt_sfu
                elec_rsqrt_fma_pipe elec_cuda_dcs_volume_launch
     >>mdh      MDH: multiple Debye-Hueckel
                elec_cuda_mdh_points elec_cuda_mdh_points_launch
     >>cutoff   cutoff maps
                elec_cuda_cutoff_map
     >>msm      MSM: multilevel summation
                elec_cuda_msm_map elec_cuda_msm_map_timed elec_cuda_msm_energy
                elec_cuda_msm_lattices elec_cuda_msm_periodic_create
                elec_cuda_msm_periodic_params elec_cuda_msm_periodic_compute
                elec_cuda_msm_periodic_energy elec_cuda_msm_periodic_destroy
     >>ewald    Ewald
     >>spme     SPME: smooth particle mesh Ewald
                elec_cuda_spme_create elec_cuda_spme_create_in
                elec_cuda_spme_params elec_cuda_spme_compute
                elec_cuda_spme_compute_timed elec_cuda_spme_list_stats
                elec_cuda_msm_periodic_list_stats elec_cuda_spme_rebuild
                elec_cuda_spme_energy elec_cuda_spme_destroy elec_cuda_spme
     >>charges  charge mapping
                elec_cuda_chargemap elec_cuda_chargemap_timed
                elec_cuda_chargemap_create elec_cuda_chargemap_compute
                elec_cuda_chargemap_finish elec_cuda_chargemap_destroy
                elec_cuda_chargemap_prepare elec_cuda_chargemap_map
                elec_cuda_chargemap_describe elec_cuda_chargemap_sums
     >>alpb     ALPB surface potentials, HCP
                elec_cuda_alpb elec_cuda_alpb_timed elec_cuda_alpb_host
   (end of contents) */
#ifndef ELEC_CUDA_CUH
#define ELEC_CUDA_CUH

#include "elec.h"
/* float4 and cudaStream_t in the SPME device-pointer API below. */
#include <cuda_runtime.h>
#include <string.h> /* memcpy: elec_rsqrt_fma_pipe on the host */

/* Device memory: every buffer the GPU calls allocate comes from
   ELEC_CUDA_MALLOC(ptr, size, stream) (a void **, bytes, the stream that
   will use it; returns a cudaError_t) and goes back through
   ELEC_CUDA_FREE(ptr, stream) once that stream's work with it is done.
   Stream-ordered by default, from the driver's memory pool: define both
   before including to use your own (cudaMalloc and cudaFree may ignore the
   stream; the library orders its work for either), thread-safe (a call
   spread over several GPUs allocates from a host thread a device, on that
   device's streams).  Handles and their buffers are made once and waited
   for (elec_cuda_spme_create_in also takes a workspace you allocate);
   ELEC_MALLOC (elec.h) is host memory. */
#ifndef ELEC_CUDA_MALLOC
#define ELEC_CUDA_MALLOC(ptr, size, stream) cudaMallocAsync((ptr), (size), (stream))
#define ELEC_CUDA_FREE(ptr, stream) cudaFreeAsync((ptr), (stream))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Each GPU entry point below has the signature of its CPU twin in
   elec_cpu.h (elec_cuda_X beside elec_cpu_X: one header, two faces), so a
   scan for repeated blocks pairs the two headers' declarations: deliberate. */

/* -------------------------------------------------------------------- >>common devices */

/* Number of usable CUDA devices; 0 when there is no GPU or no driver. */
ELEC_API int elec_cuda_device_count(void);
/* The name of a device ("NVIDIA H100 80GB HBM3"), for summaries. */
ELEC_API elec_status elec_cuda_device_name(int device, char *name,
                                           size_t size, elec_error *err);

/* ------------------------------------------------- >>dcs DCS: direct Coulomb summation */

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

/* The ladder's device math and its kernels alone, public for tours and
   benchmarks that time one rung without transfers (bench/bench.cu).  The
   two reciprocal square roots the rungs trade: */
#ifdef __CUDACC__
/* Reciprocal square root on the special-function unit: rsqrt.approx with
   flush-to-zero is the bare MUFU.RSQ (relative error < 2^-22.9).  rsqrtf()
   compiled without -ftz adds denormal handling around it. */
static __device__ __forceinline__ float elec_rsqrt_sfu(float x) {
    float y;
    asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
#endif
/* Reciprocal square root on the FMA pipe, for x > 0.  A bit-level first
   guess (halving the exponent: 0x5f3759df - bits/2, relative error up to
   3.4e-2), one Newton step y (3 - x y^2)/2 (error 1.8e-3), one Halley step
   y (1 + e/2 + 3e^2/8) with e = 1 - x y^2 (error ~1e-8, under float
   rounding): 11 integer and FP32 instructions in place of one MUFU.RSQ.
   Written for host and device so that tests can check its error on the
   CPU. */
ELEC_HD static inline float elec_rsqrt_fma_pipe(float x) {
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
/* Atoms per chunk of the constant-memory rungs: 4000 float4 = 64,000
   bytes of constant memory's 64 KB.  The volume rungs use the same chunks:
   each chunk's float sum is added to the map, so no point's float sum runs
   over more than 4000 terms. */
#define ELEC_DCS_CHUNK 4000
/* One launch of the volume rung's kernel over slice_count padded slices of
   pitch x rows points (pitch a multiple of 32 POINTS, rows of 8) from the
   corner (x, y and z of point 0, relative to the atoms' frame) at spacing,
   for count float4 atoms (x, y, z, q) on the device, added to d_slices:
   POINTS points per thread, SOFT of their reciprocal square roots on the
   FMA pipe (elec_cuda_dcs_map's volume rung: 8 and 0; hybrid-rsqrt: 32 and
   4).  Returns the launch's error.  Defined with the implementation (a
   C++ template: call it where ELEC_CUDA_IMPLEMENTATION is defined). */
extern "C++" {
template <int POINTS, int SOFT>
static inline cudaError_t elec_cuda_dcs_volume_launch(float *d_slices, int pitch, int rows,
                                                      int slice_count, float3 corner,
                                                      float3 spacing, const float4 *d_atoms,
                                                      int count, cudaStream_t stream);
}
/* --------------------------------------------------- >>mdh MDH: multiple Debye-Hueckel */

/* MDH at arbitrary points (atoms need radii), after seed 000 figure 2: tiles
   of atoms staged through shared memory. */
ELEC_API elec_status elec_cuda_mdh_points(const elec_atoms *atoms,
                                          const double *points,
                                          size_t point_count,
                                          const elec_mdh_params *params,
                                          float *potential, elec_error *err);
/* One launch of the MDH kernel alone (for benchmarks, as the DCS volume
   kernel above): potential at point_count float4 points from atom_count
   atoms, records (x, y, z, q / (1 + kappa sigma)) and b = kappa sigma
   log2(e) (elec_cuda_mdh_points prepares them), kappa_log2e = kappa
   log2(e), atoms closer than sqrt(coincident2) left out; POINTS points per
   thread (elec_cuda_mdh_points: 2), 256 threads a block.  Defined with the
   implementation. */
extern "C++" {
template <int POINTS>
static inline cudaError_t elec_cuda_mdh_points_launch(float *d_potential, const float4 *d_points,
                                                      int point_count, const float4 *d_xyza,
                                                      const float *d_b, int atom_count,
                                                      float kappa_log2e, float coincident2,
                                                      cudaStream_t stream);
}
/* ---------------------------------------------------------------- >>cutoff cutoff maps */

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

/* ----------------------------------------------------- >>msm MSM: multilevel summation */

/* Multilevel summation map on the GPU (elec.h, elec_msm_params; seed 002):
   as elec_cpu_msm_map, every stage on the first GPU of params->gpus, in
   float (the CPU path is double): the short range by the cutoff kernel,
   the lattice hierarchy by a kernel per stage and level. */
ELEC_API elec_status elec_cuda_msm_map(const elec_atoms *atoms,
                                       const elec_lattice *lattice,
                                       const elec_msm_params *params,
                                       float *map, elec_error *err);
/* The same, with the seconds of its stages in times (elec.h,
   elec_stage_times): "setup" (the host's checks, bins, lattices, buffers
   and uploads), "short range" (the bins' upload and the cutoff kernel over
   every layer of bins), "anterpolation", "restriction", "lattice cutoff"
   (below the top, every level), "top", "prolongation", "interpolation"
   (the five stages, by CUDA events) and "copy back" (the rest of the call:
   the map to the host, the host's share of the short range beyond the GPU
   stages, progress, the check that every value is finite). */
ELEC_API elec_status elec_cuda_msm_map_timed(const elec_atoms *atoms,
                                             const elec_lattice *lattice,
                                             const elec_msm_params *params, float *map,
                                             elec_stage_times *times, elec_error *err);
/* MSM energy and forces on the GPU: elec_cpu_msm_energy's method and
   output (non-periodic; scale * sum_{i<j} q_i q_j / r_ij and -dE/dr, 3 per
   atom, forces may be NULL), every stage on the first GPU of
   params->gpus in float, potentials summed on the host in double.  Atoms
   within ELEC_COINCIDENT_DISTANCE of each other are an error.  Its forces
   under a tolerance are checked on a sample as elec_cpu_msm_energy's
   (down to ELEC_MSM_GPU_TOLERANCE_FLOOR: where meeting the tolerance would
   take the GPU below it, ELEC_ERR_UNSUPPORTED says so). */
ELEC_API elec_status elec_cuda_msm_energy(const elec_atoms *atoms,
                                          const elec_msm_params *params,
                                          double *energy, double *forces,
                                          elec_error *err);
/* The lattices of the energy's hierarchy stage by stage (elec.h,
   elec_msm_lattices), computed on the GPU as maps and energies compute them
   (in float; returned in double): the atoms taken relative to reference
   (NULL: the energy's, as elec_cpu_msm_lattices). */
ELEC_API elec_status elec_cuda_msm_lattices(const elec_atoms *atoms, const double reference[3],
                                            const elec_msm_params *params,
                                            elec_msm_lattices *out, elec_error *err);

/* Periodic MSM for MD on one GPU: elec_cpu_msm_periodic_energy's method
   (the Ewald convention, a net charge's background included; excluded
   pairs in params as the CPU takes them), every stage on the device in
   float, energies summed in double, behind a handle with the SPME
   handle's shape:
       elec_cuda_msm_periodic_handle *h;
       elec_cuda_msm_periodic_create(&box, &atoms, &p, &h, &err);  lattices, buffers
       each step:
           elec_cuda_msm_periodic_compute(h, d_xyzq, n, d_forces, stream, &err);
       elec_cuda_msm_periodic_energy(h, &energy, stream, &err);   when wanted
       elec_cuda_msm_periodic_destroy(h);
   create resolves params once (elec_msm_periodic_params_resolve, as the CPU's
   periodic energy does; a tolerance under ELEC_MSM_GPU_TOLERANCE_FLOOR, or
   under 1.5 times its atoms' estimate.float_arithmetic, is refused: float
   arithmetic errs more where the forces nearly cancel, as a crystal's near
   its sites), on the first device of params.gpus; its atoms' count is the
   most a compute may take (their positions and charges inform the
   tolerance's choice and estimate, elec_msm_periodic_params_resolve); the
   excluded pairs are copied.  compute only enqueues work on `stream` (no
   allocation, no host transfer, no synchronisation: it can be captured in
   a CUDA graph); one compute at a time per handle.  d_xyzq: n float4
   (x, y, z, q) in A and e, anywhere (wrapped on the device, in float: keep
   them within a few box lengths), indexed as the excluded pairs are;
   d_forces: 3n floats, interleaved, -dE/dr times scale (NULL = energy
   only).  Two atoms (or an atom and an image) closer than
   ELEC_COINCIDENT_DISTANCE that are not an excluded pair: compute leaves
   the pair out and the next elec_cuda_msm_periodic_energy returns
   ELEC_ERR_INVALID_ARG.  ELEC_ERR_NO_DEVICE without a GPU; a box within
   one spacing (no lattice) is ELEC_ERR_UNSUPPORTED. */
typedef struct elec_cuda_msm_periodic_handle elec_cuda_msm_periodic_handle;
ELEC_API elec_status elec_cuda_msm_periodic_create(const elec_box *box, const elec_atoms *atoms,
                                                   const elec_msm_params *params,
                                                   elec_cuda_msm_periodic_handle **out,
                                                   elec_error *err);
/* The parameters the handle computes with (resolved; excluded_pairs NULL,
   their count kept). */
ELEC_API elec_status elec_cuda_msm_periodic_params(const elec_cuda_msm_periodic_handle *h,
                                                   elec_msm_params *resolved,
                                                   elec_error *err);
ELEC_API elec_status elec_cuda_msm_periodic_compute(elec_cuda_msm_periodic_handle *h,
                                                    const float4 *d_xyzq, size_t n,
                                                    float *d_forces, cudaStream_t stream,
                                                    elec_error *err);
/* The energy of the last compute (times scale, kcal/mol with the Coulomb
   constant as scale); synchronises `stream`. */
ELEC_API elec_status elec_cuda_msm_periodic_energy(elec_cuda_msm_periodic_handle *h,
                                                   double *energy, cudaStream_t stream,
                                                   elec_error *err);
/* Waits for the device's work, then releases the handle. */
ELEC_API void elec_cuda_msm_periodic_destroy(elec_cuda_msm_periodic_handle *h);

/* ----------------------------------------------------------------------- >>ewald Ewald */

/* No GPU path: the exact sum is the CPU's double-precision reference
   (elec_cpu.h); SPME below is the GPU's periodic method. */

/* --------------------------------------------- >>spme SPME: smooth particle mesh Ewald */

/* Smooth particle mesh Ewald on one GPU (elec.h, elec_spme_params; Essmann
   et al. 1995, on GPUs after Harvey and De Fabritiis 2009): the terms,
   forces and potentials of elec_cpu_spme, in float with energies summed in
   double.  Charges are spread on the grid by B-splines (params.spread:
   atomics, or the seed's gather with per-cell slots), transformed by
   cuFFT, multiplied by the influence function and transformed back; the
   real-space sum runs over a neighbour list of 32-atom clusters that the
   handle keeps across computes (Verlet buffer params.list_skin: rebuilt on
   the device, without a host synchronisation, once an atom has moved more
   than half of it, whole box lengths aside), concurrently with the
   reciprocal part (after it where the charge grid would take more than
   60 % of the GPU's L2 cache).

   An MD code keeps a handle and its coordinates on the GPU:
       elec_cuda_spme_handle *h;
       elec_cuda_spme_create(&box, &atoms, &p, &h, &err);     plans, buffers
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
   host view in this box on the first device of params->gpus (count 0: the
   calling thread's current device, as everywhere): its count is
   the most a compute may take, and its charges and positions (a starting
   configuration) are what params are resolved with, by the very
   elec_spme_params_resolve of the CPU (the tolerance chooses alpha, cutoff,
   order and grid here, once).  The excluded pairs are copied (the caller's
   array may go).  Positions arrive in float at compute, so the floor is
   float arithmetic's for these atoms: a tolerance under 1.5 times
   estimate.float_arithmetic (ELEC_SPME_GPU_FLOAT_FLOOR, more where the
   forces nearly cancel, as a crystal's near its sites) is refused
   (ELEC_ERR_INVALID_ARG).  ELEC_ERR_NO_DEVICE without a GPU. */
ELEC_API elec_status elec_cuda_spme_create(const elec_box *box,
                                           const elec_atoms *atoms,
                                           const elec_spme_params *params,
                                           elec_cuda_spme_handle **out,
                                           elec_error *err);
/* The same, CUB's way, in device memory the caller provides: with
   workspace NULL and out NULL, *bytes gets the size of the block the handle
   needs (its grids, buffers and cuFFT's work area; the default spreading's
   charge map allocates its own, through ELEC_CUDA_MALLOC: where it maps by
   tile-binned, 128 bytes an atom for its copies, 128 MB at 1M atoms) and
   nothing is made; with a workspace of *bytes bytes (at least that size, 256-byte
   aligned as cudaMalloc's are), the handle is made in it and never frees it
   (free it after elec_cuda_spme_destroy).  workspace NULL with out given:
   elec_cuda_spme_create. */
ELEC_API elec_status elec_cuda_spme_create_in(const elec_box *box, const elec_atoms *atoms,
                                              const elec_spme_params *params,
                                              void *workspace, size_t *bytes,
                                              elec_cuda_spme_handle **out, elec_error *err);
/* The parameters a handle computes with (resolved, estimate included;
   excluded_pairs is NULL beside its count: the array was the caller's, to
   pass again where the choice is reused). */
ELEC_API elec_status elec_cuda_spme_params(const elec_cuda_spme_handle *h,
                                           elec_spme_params *resolved,
                                           elec_error *err);
/* One evaluation, asynchronous in `stream`: d_xyzq are n float4 records
   (x, y, z, q) in A and e, anywhere (wrapped on the device, in float: keep
   them within a few box lengths, as MD codes do, or wrap them yourself;
   each box length of offset costs ~1e-7 of the box in precision), indexed as the
   excluded pairs are (pairs naming an atom at or past n are left out); d_forces receives 3n floats, interleaved, -dE/dr
   times scale (NULL = energy only).  The energy terms are summed in the
   handle (zeroed by each compute before it adds to them; after a compute
   that returned an error, undefined until one succeeds):
   elec_cuda_spme_energy. */
ELEC_API elec_status elec_cuda_spme_compute(elec_cuda_spme_handle *h,
                                            const float4 *d_xyzq, size_t n,
                                            float *d_forces,
                                            cudaStream_t stream,
                                            elec_error *err);
/* One evaluation, or parts of one, for benchmarks and profiles: parts
   ELEC_SPME_RECIPROCAL (spread, FFTs, solve, gather), ELEC_SPME_REAL (the
   real space), both (0: as elec_cuda_spme_compute), or ELEC_SPME_FFT_ONLY
   (the two transforms of the grid alone, whatever it holds: their cost);
   d_forces must be NULL where parts leave out the reciprocal part, whose
   gather writes the forces.
   times NULL: asynchronous in `stream`, as compute.  times given: every
   stage in order on `stream` (no overlap of the real space with the
   reciprocal chain), CUDA events between them; the call waits for them and
   fills times with "spread", "forward FFT", "solve", "backward FFT",
   "list build" (the displacement check, and the neighbour list's rebuild
   when one is due), "real space" (the pairs over the list, and the
   exclusions unless a gather follows) and "gather" (with both parts and
   d_forces, the real space's exclusions and per-atom sums too; a part
   not asked for takes 0 s; total: first event to last; nothing for
   FFT_ONLY or no atoms).  Waiting on the host, a timed call cannot be
   captured in a graph: in a stream being captured it is refused
   (ELEC_ERR_INVALID_ARG), the capture left as it was. */
#define ELEC_SPME_RECIPROCAL 1
#define ELEC_SPME_REAL 2
#define ELEC_SPME_FFT_ONLY 4
ELEC_API elec_status elec_cuda_spme_compute_timed(elec_cuda_spme_handle *h,
                                                  const float4 *d_xyzq, size_t n,
                                                  float *d_forces, int parts,
                                                  elec_stage_times *times,
                                                  cudaStream_t stream, elec_error *err);
/* The real-space neighbour list of a handle (elec_cuda_spme_list_stats). */
typedef struct elec_spme_list_stats {
    long long rebuilds;       /* builds since create (the first compute's
                                 included)                                 */
    long long tiles;          /* the build's candidates in tiles of 32:
                                 atoms within cutoff + skin of a cluster's
                                 bounding box, each search share's
                                 padded to 32 (up to 8 shares a cluster
                                 on small handles)                         */
    long long evaluated;      /* atom pairs a compute evaluates: 32 per
                                 row of the per-atom lists, padding
                                 included; each pair twice, once from each
                                 atom (0 where the list overflowed)        */
    int whole;                /* 1: the per-atom lists outgrew their room
                                 at the last build (atoms far denser
                                 somewhere than at create): each cluster's
                                 candidates are evaluated whole (as
                                 correct, slower), evaluated counting them */
    long long clusters;       /* clusters of 32 atom slots in use          */
    int overflow;             /* 1: the list outgrew its room (atoms far
                                 denser than at create), or lacked an image
                                 copy (a fault in elec; elec_cuda_spme_energy
                                 says which); computes are wrong until a
                                 handle is made for them                   */
    double skin;              /* the Verlet buffer (A)                     */
} elec_spme_list_stats;
/* The list's counters as of the computes enqueued so far on `stream`
   (synchronises it). */
ELEC_API elec_status elec_cuda_spme_list_stats(elec_cuda_spme_handle *h,
                                               elec_spme_list_stats *stats,
                                               cudaStream_t stream, elec_error *err);
/* Periodic MSM's short-range neighbour list (of the SPME handle's kind,
   skin 1.5 A), as of the computes enqueued so far on `stream`
   (synchronises it); ELEC_ERR_UNSUPPORTED, by name, where the handle runs
   the short range on its cell list instead (cutoff + 1.5 A past half the
   box, or the list could not be made: no cooperative launch, or past the
   list's limits). */
ELEC_API elec_status elec_cuda_msm_periodic_list_stats(elec_cuda_msm_periodic_handle *h,
                                                       elec_spme_list_stats *stats,
                                                       cudaStream_t stream, elec_error *err);
/* Makes the next compute on `stream` rebuild the neighbour list whatever
   the atoms' displacements (asynchronous; e.g. after reordering atoms).
   The displacement check needs no call: this is for benchmarks and for
   changes it cannot see. */
ELEC_API elec_status elec_cuda_spme_rebuild(elec_cuda_spme_handle *h, cudaStream_t stream,
                                            elec_error *err);
/* The energy terms of the last compute (times scale); synchronises
   `stream`.  ELEC_ERR_INVALID_ARG when the last compute met coincident
   atoms, ELEC_ERR_UNSUPPORTED when the neighbour list overflowed or
   lacked an image copy (a fault in elec, said so). */
ELEC_API elec_status elec_cuda_spme_energy(elec_cuda_spme_handle *h,
                                           elec_ewald_terms *terms,
                                           cudaStream_t stream,
                                           elec_error *err);
/* Waits for the device's work (computes in flight read its buffers), then
   releases the handle. */
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


/* ------------------------------------------------------------ >>charges charge mapping */

/* Charge mapping on one GPU (elec.h, elec_chargemap_params; seed 004):
   the charge per lattice point by the rung params.variant of the GPU
   ladder (elec.h lists it; the comment at the top of the implementation
   says what bounds each rung).  Host arrays in and out:
       elec_cuda_chargemap(&atoms, &lattice, &p, grid, &err);
   positions are converted to grid units in double on the host.  An MD code
   keeps a handle, whose buffers are allocated once, and its float4 atoms
   (x, y, z, q in A and e, any order) on the device:
       elec_cuda_chargemap_handle *h;
       elec_cuda_chargemap_create(&lattice, max_atoms, &p, -1, &h, &err);
       each step:  elec_cuda_chargemap_compute(h, d_xyzq, n, d_grid, stream, &err);
       when wanted: elec_cuda_chargemap_finish(h, NULL, stream, &err);  (syncs)
       elec_cuda_chargemap_destroy(h);
   compute only enqueues on `stream` (no allocation, no host transfer, no
   synchronisation: it can be captured in a CUDA graph); one compute at a
   time per handle.  Its atoms need finite positions; on a map, atoms whose
   stencil leaves the lattice are left out and counted, and finish returns
   ELEC_ERR_INVALID_ARG saying how many (the host API refuses them before
   any work, by name).  The grid a handle writes stays on the device and
   is not checked for values past float's range (charges of 1e300 e give
   inf): a scan would cost a copy or a kernel each step; elec_cuda_chargemap
   checks the grid it copies back, as the maps do (elec.h, elec_error).
   The seed's rungs (pc-binned to gc-reduced-reads) are written for order
   4, both bases; the other rungs take every order. */
typedef struct elec_cuda_chargemap_handle elec_cuda_chargemap_handle;

ELEC_API elec_status elec_cuda_chargemap(const elec_atoms *atoms,
                                         const elec_lattice *lattice,
                                         const elec_chargemap_params *params,
                                         float *grid, elec_error *err);
/* The same with the device part's stages in times (elec.h:
   elec_stage_times, by CUDA events): "bin" (placement into bins, or the
   sort by tile), "zero" (zeroing the grid: atomic rungs; pc-baseline's and
   pc-lanes' count of atoms left out too), "map" (the
   rung's mapping kernel), "overflow" (the atoms that did not fit a bin, by
   atomics); total, the device part.  overflow_atoms (may be NULL): the
   atoms that went to the seed rungs' overflow list, as
   elec_cuda_chargemap_finish gives them. */
ELEC_API elec_status elec_cuda_chargemap_timed(const elec_atoms *atoms,
                                               const elec_lattice *lattice,
                                               const elec_chargemap_params *params,
                                               float *grid, elec_stage_times *times,
                                               size_t *overflow_atoms, elec_error *err);
/* Buffers for up to max_atoms atoms on `device` (-1 = the current one). */
ELEC_API elec_status elec_cuda_chargemap_create(const elec_lattice *lattice,
                                                size_t max_atoms,
                                                const elec_chargemap_params *params,
                                                int device,
                                                elec_cuda_chargemap_handle **out,
                                                elec_error *err);
/* d_grid: the lattice's points, x fastest, every one written (and not
   checked for inf or NaN: see above). */
ELEC_API elec_status elec_cuda_chargemap_compute(elec_cuda_chargemap_handle *h,
                                                 const float4 *d_xyzq, size_t n,
                                                 float *d_grid, cudaStream_t stream,
                                                 elec_error *err);
/* Waits for the last compute; ELEC_ERR_INVALID_ARG when atoms were left
   out of a map.  overflow_atoms (may be NULL): atoms the last compute put
   on the seed rungs' overflow list. */
ELEC_API elec_status elec_cuda_chargemap_finish(elec_cuda_chargemap_handle *h,
                                                size_t *overflow_atoms,
                                                cudaStream_t stream, elec_error *err);
ELEC_API void elec_cuda_chargemap_destroy(elec_cuda_chargemap_handle *h);
/* compute in its two stages, for atoms mapped more than once or a map
   timed alone: prepare bins or sorts the atoms (all that depends on their
   positions; the atomic rungs only keep the pointer, so d_xyzq must stay
   valid until the map), map writes d_grid from what prepare left.
   compute is prepare then map; the same rules (stream order, graphs, one
   at a time per handle).  finish after a map reports the atoms that map
   left out (prepared once and mapped twice, each map's finish does);
   called after a prepare alone, what it reports depends on the rung. */
ELEC_API elec_status elec_cuda_chargemap_prepare(elec_cuda_chargemap_handle *h,
                                                 const float4 *d_xyzq, size_t n,
                                                 cudaStream_t stream, elec_error *err);
ELEC_API elec_status elec_cuda_chargemap_map(elec_cuda_chargemap_handle *h, float *d_grid,
                                             cudaStream_t stream, elec_error *err);
/* What a handle chose for its rung (zeros where the rung has no such
   part): the seed rungs' slots per bin; the sorted rungs' tile and tile
   count; the tile-binned rungs' tile (powers of two), tiles along each
   axis and in all, binning groups, whether the binning has room to sort
   a group's copies in shared memory before storing them (1: those of a
   group that fit the room) or scatters them all (0), whether the float
   rungs sum a tile by columns (band_columns 1), on the tensor cores
   (band_tensor 1: TILE_BINNED on sm_80 and later, where the tile fits) or
   by sub-tiles in registers (both 0), and
   whether the fused rungs run as one cooperative kernel; whether kernels
   are chained by programmatic dependent launch; whether the maps after
   the last prepare prefetch a tile's copies into L1 (band_prefetch 1:
   where that prepare's copies and the grid outgrow the device's L2, for
   the tiles whose copies the block gathers rather than its warps; 0
   before any prepare, and always on rungs other than TILE_BINNED on the
   tensor cores). */
typedef struct elec_cuda_chargemap_info {
    elec_chargemap_variant variant;
    int bin_slots;
    int sorted_tile[3], sorted_tiles;
    int band_tile[3], band_tiles_along[3], band_tiles, band_groups;
    int band_staged;
    int band_columns;
    int band_tensor;
    int one_kernel;
    int pdl;
    int band_prefetch;
} elec_cuda_chargemap_info;
ELEC_API elec_status elec_cuda_chargemap_describe(const elec_cuda_chargemap_handle *h,
                                                  elec_cuda_chargemap_info *out,
                                                  elec_error *err);
/* Also sum q and q^2 of the atoms mapped into d_sums[0] and d_sums[1]
   (device doubles, added to once a compute: SPME's self and neutralising
   terms read them; with prepare and map apart, the stage that reads the
   atoms adds them: prepare for the seed's binned rungs, the sorted rungs
   and tile-binned; every map for pc-baseline, pc-lanes and the tile-fused
   rungs where they run as one kernel (describe's one_kernel)); NULL stops
   it. */
ELEC_API elec_status elec_cuda_chargemap_sums(elec_cuda_chargemap_handle *h, double *d_sums,
                                              elec_error *err);

/* ------------------------------------------------- >>alpb ALPB surface potentials, HCP */

/* ALPB at surface vertices on the first GPU of params->gpus (elec.h:
   elec_alpb_params, elec_hcp): elec_cpu_alpb's potential in float, by the
   rung params->variant names (the ladder is described with the kernels).
   The exact sum without salt runs on the DCS points kernel by default.
   The hierarchy and the points are uploaded each call.  Refusals of bad
   input (named, as on the CPU) come before any CUDA call; without a GPU,
   ELEC_ERR_NO_DEVICE. */
ELEC_API elec_status elec_cuda_alpb(const elec_hcp *hcp, const double *vertices,
                                    const double *normals, size_t count,
                                    const elec_alpb_params *params, float *potential,
                                    elec_error *err);
/* The same with its stages' seconds in times (elec.h: elec_stage_times):
   "prepare" (host: params and input checks, the points' box), "allocate"
   (the device buffers, one allocation, and streams), "upload" (the
   hierarchy's levels laid out on the host with every component's reach,
   its atoms converted, both uploaded), "points" (the points converted to
   float and uploaded), "sort" (Morton codes, the radix sort, the gather;
   device), "kernel" (the walk; device), "copy_back" (the potential to the
   host, buffers freed).  Timed, the stages run one after another, each
   alone (host stages by the wall clock, device stages by CUDA events);
   untimed, the call overlaps the points' upload, the sort, the walk and
   the copy back chunk by chunk, so total is shorter than their sum.  The
   exact sum on the DCS points path fills "prepare" and total. */
ELEC_API elec_status elec_cuda_alpb_timed(const elec_hcp *hcp, const double *vertices,
                                          const double *normals, size_t count,
                                          const elec_alpb_params *params, float *potential,
                                          elec_stage_times *times, elec_error *err);
/* The rung's walk run on the CPU, one vertex after another: the kernels'
   own float arithmetic (the same functions, compiled for the host), over
   the layout a call uploads, with no GPU.  For checking the kernels where
   there is no GPU, or seeing what a rung computes.  The pairs rung walks
   vertex i beside vertex i + 1 (the last beside vertex 0), as a thread
   holding two vertices does.  With params->exact every walk opens every
   level (elec_cuda_alpb sends the exact sum without salt to the DCS points
   kernel instead).  Slow: a test tool. */
ELEC_API elec_status elec_cuda_alpb_host(const elec_hcp *hcp, const double *vertices,
                                         const double *normals, size_t count,
                                         const elec_alpb_params *params, float *potential,
                                         elec_error *err);
/* Points per chunk of the pipelined call, at least: calls with more points
   overlap their chunks' uploads, walks and copies back. */
#define ELEC_CUDA_ALPB_MIN_CHUNK ((size_t)1 << 17)

#ifdef __cplusplus
}
#endif
#endif /* ELEC_CUDA_CUH */

/* ELEC_ALL_IMPLEMENTATION read outside the include guard, so that it
   works where this header was included before it was defined (by a
   project's own header, say): inside, such a second include compiled no
   implementation (undefined references, an audit).  elec.h again: its
   implementation too, where its first include came before. */
#ifdef ELEC_ALL_IMPLEMENTATION
#ifndef ELEC_CUDA_IMPLEMENTATION
#define ELEC_CUDA_IMPLEMENTATION
#endif
#include "elec.h"
#endif

/* ====================================================== implementation */
#ifdef ELEC_CUDA_IMPLEMENTATION
#ifndef ELEC_CUDA_IMPLEMENTATION_DONE
#define ELEC_CUDA_IMPLEMENTATION_DONE

#include <cuda_runtime.h>
#include <atomic> /* elec__cuda_parts: a call's parts on several GPUs */
#include <new>
#include <thread>

/* ----------------------------------------------- >>common device math, errors, devices */

/* --------------------------------------------------------- device math */

/* 2^x on the special-function unit (MUFU.EX2). */
__device__ __forceinline__ float elec__exp2_sfu(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* A grid-wide barrier for a cooperative launch (every block resident),
   on two words of device memory that start at zero: arrivals counted on
   count[0], the last to arrive clears it and bumps the generation
   (count[1]) the others wait on; fences on either side.  Every thread of
   every block calls it. */
__device__ __forceinline__ void elec__grid_barrier(unsigned *count) {
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned *generation = count + 1;
        unsigned seen, now;
        asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(generation) : "memory");
        __threadfence();
        if (atomicAdd(count, 1u) == gridDim.x - 1) {
            atomicExch(count, 0u);
            __threadfence();
            atomicAdd(generation, 1u);
        } else {
            do {
                __nanosleep(32);
                asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(now) : "l"(generation) : "memory");
            } while (now == seen);
        }
        __threadfence();
    }
    __syncthreads();
}

/* 1/x on the special-function unit (MUFU.RCP, within 1 ulp). */
__device__ __forceinline__ float elec__rcp_sfu(float x) {
    float y;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* The sum of x over lanes 0 to this one (an inclusive scan by five
   shuffles); the whole warp, converged, calls it. */
__device__ __forceinline__ int elec__warp_inclusive_sum(int x) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, x, o);
        if (lane >= o) x += y;
    }
    return x;
}

/* elec_rsqrt_sfu and elec_rsqrt_fma_pipe are public (>>dcs above). */

/* ------------------------------------------------------------ launches */

/* Programmatic dependent launch (PDL, sm_90): a kernel launched with
   programmatic stream serialization may be scheduled while the kernel
   before it on the stream drains; it waits here, before it reads what
   that kernel wrote, until that kernel has finished and its writes are
   visible (a no-op for a kernel launched without it).  release_next lets
   the next kernel be scheduled early. */
__device__ __forceinline__ void elec__wait_prior_grid(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

__device__ __forceinline__ void elec__release_next_grid(void) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* Kernels in plain stream order (how ELEC__LAUNCH_PLAIN), with PDL
   (ELEC__LAUNCH_PDL: their first read of the kernel before them waits in
   elec__wait_prior_grid), or cooperative (ELEC__LAUNCH_COOPERATIVE: every
   block resident at once, as a grid barrier needs, which a kernel node
   of a CUDA graph keeps).  elec__launch_carved also asks for the SMs'
   split of L1 and shared memory (carveout: percent of the most shared
   memory, the driver rounding up to what the kernel needs;
   cudaSharedmemCarveoutMaxL1 = 0, the most L1) for this launch alone
   (with CUDA 12.6 or later; before, always the driver's choice);
   ELEC__CARVEOUT_DEFAULT leaves it to the driver.  Another `how` is
   refused (cudaErrorInvalidValue). */
#define ELEC__LAUNCH_PLAIN 0
#define ELEC__LAUNCH_PDL 1
#define ELEC__LAUNCH_COOPERATIVE 2
#define ELEC__CARVEOUT_DEFAULT (-1)
template <typename... Params, typename... Args>
static cudaError_t elec__launch_carved(void (*kernel)(Params...), dim3 grid, dim3 block,
                                       size_t shared, cudaStream_t stream, int how,
                                       int carveout, Args... args) {
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute attribute[2] = {};
    unsigned count = 0;
    config.gridDim = grid;
    config.blockDim = block;
    config.dynamicSmemBytes = shared;
    config.stream = stream;
    if (how == ELEC__LAUNCH_COOPERATIVE) {
        attribute[count].id = cudaLaunchAttributeCooperative;
        attribute[count++].val.cooperative = 1;
    } else if (how == ELEC__LAUNCH_PDL) {
        attribute[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attribute[count++].val.programmaticStreamSerializationAllowed = 1;
    } else if (how != ELEC__LAUNCH_PLAIN) {
        return cudaErrorInvalidValue;
    }
#if CUDART_VERSION >= 12060 /* the attribute is in CUDA 12.6's headers, not 12.0's */
    if (carveout != ELEC__CARVEOUT_DEFAULT) {
        attribute[count].id = cudaLaunchAttributePreferredSharedMemoryCarveout;
        attribute[count++].val.sharedMemCarveout = (unsigned)carveout;
    }
#else
    (void)carveout; /* the driver's choice */
#endif
    config.attrs = attribute;
    config.numAttrs = count;
    return cudaLaunchKernelEx(&config, kernel, args...);
}

template <typename... Params, typename... Args>
static cudaError_t elec__launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared,
                                cudaStream_t stream, int how, Args... args) {
    return elec__launch_carved(kernel, grid, block, shared, stream, how, ELEC__CARVEOUT_DEFAULT,
                               args...);
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

/* ---- device memory through ELEC_CUDA_MALLOC and ELEC_CUDA_FREE */

/* Within a call, stream-ordered: a buffer is allocated on the stream that
   uses it (ELEC__CUDA_ALLOC) and freed on it once its work is enqueued
   (elec__cuda_free, where NULL is no buffer); another stream uses it only
   after the host has waited for the allocating one. */
#define ELEC__CUDA_ALLOC(ptr, size, stream) \
    ELEC__CUDA_TRY(ELEC_CUDA_MALLOC((void **)&(ptr), (size), (stream)))
static inline cudaError_t elec__cuda_free(void *ptr, cudaStream_t stream) {
    return ptr ? ELEC_CUDA_FREE(ptr, stream) : cudaSuccess;
}
/* For what outlives a call (handles, made before any stream of theirs is
   known): allocated and waited for, so that any stream may use it, and
   freed once the device's work is done: the same promises as cudaMalloc
   and cudaFree. */
static inline cudaError_t elec__cuda_alloc(void **ptr, size_t size) {
    cudaError_t e = ELEC_CUDA_MALLOC(ptr, size, 0);
    return e == cudaSuccess ? cudaStreamSynchronize(0) : e;
}
/* A handle's setup copies and zeroes its buffers with cudaMemcpy and
   cudaMemset on the default stream; a caller's non-blocking stream would
   not wait for them (and a pageable cudaMemcpy may return before its bytes
   land), so each setup ends by waiting here, as elec__cuda_alloc does. */
static inline cudaError_t elec__cuda_setup_landed(void) {
    return cudaStreamSynchronize(0);
}
static inline cudaError_t elec__cuda_free_sync(void *ptr) {
    cudaError_t e, f;
    if (!ptr) return cudaSuccess;
    e = cudaDeviceSynchronize();
    f = ELEC_CUDA_FREE(ptr, 0);
    return e != cudaSuccess ? e : f;
}

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
        if (devices[i] < 0 || devices[i] >= available)
            return elec__fail(err, ELEC_ERR_NO_DEVICE, 0,
                              "GPU %d asked for; %d present", devices[i],
                              available);
    }
    *count = n;
cleanup:
    return status;
}

/* DCS maps stream their atoms through constant memory, one copy a
   device: a device listed twice would have two streams overwrite each
   other's chunk.  (The other methods run a device's parts in turn:
   elec__cuda_parts.) */
static elec_status elec__cuda_gpus_distinct(const int *devices, int count, elec_error *err) {
    for (int i = 1; i < count; i++)
        for (int before = 0; before < i; before++)
            if (devices[before] == devices[i])
                return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                  "GPU %d is listed twice (a DCS map takes each GPU once)",
                                  devices[i]);
    return ELEC_OK;
}

/* ---- a call spread over several GPUs */

/* One part of a call spread over GPUs: part `part` of `parts`, on `device`
   (the part selects it; the calling thread's device is restored by the
   caller).  Returns its status, its message in err. */
typedef elec_status (*elec__gpu_part_fn)(void *job, int part, int parts, int device,
                                         elec_error *err);

/* The parts of one device (every i with devices[i] == devices[first]),
   in turn; a part begins only while no lower part has failed (failed: the
   lowest failed part, parts while none has), so that a failure ends the
   call at the other devices' next higher part and the lowest failure is
   always run and reported, whichever thread fails first. */
typedef struct elec__gpu_parts {
    const int *devices;
    int parts;
    int host_threads; /* OpenMP threads a device's host work takes */
    elec__gpu_part_fn run;
    void *job;
    elec_status status[ELEC__MAX_GPUS];
    elec_error err[ELEC__MAX_GPUS];
    std::atomic<int> failed;
} elec__gpu_parts;

static void elec__cuda_device_parts(elec__gpu_parts *c, int first) {
    int caller_device = 0;
#ifdef _OPENMP
    const int caller_threads = omp_get_max_threads();
    omp_set_num_threads(c->host_threads);
#endif
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    for (int i = first; i < c->parts; i++) {
        if (c->devices[i] != c->devices[first]) continue;
        if (c->failed.load() < i) break; /* left as ELEC_OK: the failure is reported */
        c->status[i] = c->run(c->job, i, c->parts, c->devices[i], &c->err[i]);
        if (c->status[i] != ELEC_OK) {
            int lowest = c->failed.load();
            while (i < lowest && !c->failed.compare_exchange_weak(lowest, i)) {
            }
        }
    }
    cudaSetDevice(caller_device);
#ifdef _OPENMP
    omp_set_num_threads(caller_threads); /* the calling thread's own again */
#endif
}

/* Parts 0 .. parts - 1 of a call, part i on devices[i]: a host thread a
   distinct device (the first on the calling thread), each running its
   device's parts in turn, so that the devices work side by side and a
   device listed twice (one GPU standing in for two in a test) runs its
   parts one after the other: no device state (constant memory, streams)
   is shared by parts running at once.  The host's OpenMP threads are
   shared out among the devices' threads (binning, conversions, the
   overflow's share), which would otherwise each start a team of every
   core.  Where a thread cannot be started, its device's parts run on the
   calling thread after its own.  The first failed part's status and
   message (lowest part) are the call's. */
static elec_status elec__cuda_parts(const int *devices, int parts, elec__gpu_part_fn run,
                                    void *job, elec_error *err) {
    elec__gpu_parts *c = new (std::nothrow) elec__gpu_parts;
    std::thread *threads[ELEC__MAX_GPUS];
    int inline_first[ELEC__MAX_GPUS], inline_count = 0, distinct = 0;
    int device_first[ELEC__MAX_GPUS]; /* part i is its device's first */
    elec_status status = ELEC_OK;
    if (!c) return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory for %d parts", parts);
    c->devices = devices;
    c->parts = parts;
    c->run = run;
    c->job = job;
    c->failed.store(parts);
    c->host_threads = 1;
    for (int i = 0; i < parts; i++) {
        device_first[i] = 1;
        for (int before = 0; before < i; before++)
            if (devices[before] == devices[i]) device_first[i] = 0;
        c->status[i] = ELEC_OK;
        threads[i] = NULL;
        distinct += device_first[i];
    }
#ifdef _OPENMP
    c->host_threads = omp_get_max_threads() / distinct;
    if (c->host_threads < 1) c->host_threads = 1;
#endif
    for (int i = 1; i < parts; i++) {
        if (!device_first[i]) continue; /* that device's thread runs it */
        try {
            threads[i] = new std::thread(elec__cuda_device_parts, c, i);
        } catch (...) {
            threads[i] = NULL;
            inline_first[inline_count++] = i;
        }
    }
    elec__cuda_device_parts(c, 0);
    for (int k = 0; k < inline_count; k++) elec__cuda_device_parts(c, inline_first[k]);
    for (int i = 1; i < parts; i++)
        if (threads[i]) {
            threads[i]->join();
            delete threads[i];
        }
    for (int i = 0; i < parts; i++)
        if (c->status[i] != ELEC_OK) {
            status = c->status[i];
            if (err) *err = c->err[i];
            break;
        }
    delete c;
    return status;
}

/* Atoms as float4 (x, y, z, q), positions relative to reference (computed
   in double, then rounded). */
static float4 *elec__cuda_gather_xyzq(const elec_atoms *atoms,
                                      const double reference[3]) {
    elec__pack to;
    float4 *out = (float4 *)ELEC_MALLOC((atoms->count ? atoms->count : 1) *
                                        sizeof(float4));
    if (!out) return NULL;
    memset(&to, 0, sizeof to);
    to.reference = reference;
    elec__pack_float4(&to, &out[0].x);
    elec__atoms_pack(atoms, &to, NULL); /* relative: nothing to refuse */
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

/* Checks shared by the points APIs; picks the first device of the set. */
static elec_status elec__cuda_points_check(const elec_atoms *atoms,
                                           int need_radius,
                                           const double *points, size_t count,
                                           const elec_gpu_set *gpus,
                                           const float *potential, int *devices,
                                           int *device_count, elec_error *err) {
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
    return elec__cuda_gpu_list(gpus ? gpus : &current, devices, device_count, err);
}

/* Part `part` of `parts` of count items: items first .. first + n - 1,
   contiguous, every part within one of the others' size. */
static void elec__part_range(size_t count, int part, int parts, size_t *first, size_t *n) {
    *first = count / parts * part + (count % parts) * part / parts;
    *n = count / parts * (part + 1) + (count % parts) * (part + 1) / parts - *first;
}

/* ------------------------------------------- >>charges forward declarations */

/* SPME's spreading and MSM's anterpolation are charge maps: the
   charge-mapping section at the end of this file defines these. */
#ifdef __cplusplus
extern "C" {
#endif
static elec_status elec__chargemap_enqueue(elec_cuda_chargemap_handle *h, const float4 *xyzq,
                                           int n, float *grid, cudaStream_t stream,
                                           cudaEvent_t *marks, elec_error *err);
#ifdef __cplusplus
}
#endif

/* --------------------------------------------------------------------------- >>dcs DCS */

/* ------------------------------------------------------------ DCS kernels */

/* Lattice tiling shared by the DCS lattice kernels: blocks of 32 x 8
   threads (the hybrid kernel: 8, 16 or 32 x 8); each slice is padded to
   whole blocks (rows to the x extent of a block row, slices to a multiple
   of 8 rows), so no kernel needs a bounds test.  Padded points are computed
   and dropped. */
#define ELEC__DCS_BLOCK_X 32
#define ELEC__DCS_BLOCK_Y 8
#define ELEC__DCS_VOLUME_POINTS 8
/* Measured on an H100 (bench): 32 points with 4 on the FMA pipe is the
   fastest split, 1.03 of the SFU's rsqrt rate; 16 with 2 gives 0.98. */
#define ELEC__DCS_HYBRID_POINTS 32
#define ELEC__DCS_HYBRID_SOFT 4

/* One chunk of atoms for the constant-memory rungs, as records
   (x, y, (z_slice - z)^2, q).  Each device has its own copy. */
static __constant__ float4 elec__dcs_chunk[ELEC_DCS_CHUNK];

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
        v = fmaf(a.w, elec_rsqrt_sfu(dx * dx + dy * dy + dz * dz), v);
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
        v = fmaf(a.w, elec_rsqrt_sfu(dx * dx + dy * dy + a.z), v);
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
        v0 = fmaf(a.w, elec_rsqrt_sfu(fmaf(dx0, dx0, dyz2)), v0);
        v1 = fmaf(a.w, elec_rsqrt_sfu(fmaf(dx1, dx1, dyz2)), v1);
        v2 = fmaf(a.w, elec_rsqrt_sfu(fmaf(dx2, dx2, dyz2)), v2);
        v3 = fmaf(a.w, elec_rsqrt_sfu(fmaf(dx3, dx3, dyz2)), v3);
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
            v[m] = fmaf(a.w, elec_rsqrt_sfu(fmaf(dxm, dxm, dyz2)), v[m]);
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
                float rinv = m < POINTS - SOFT ? elec_rsqrt_sfu(r2)
                                               : elec_rsqrt_fma_pipe(r2);
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
            float rinv = r2 >= coincident2 ? elec_rsqrt_sfu(r2) : 0.0f;
            v = fmaf(a.w, rinv, v);
        }
    }
    if (p < point_count) potential[p] = v;
}

/* ---- DCS launchers */

template <int POINTS, int SOFT>
static inline cudaError_t elec_cuda_dcs_volume_launch(float *d_slices, int pitch, int rows,
                                                      int slice_count, float3 corner,
                                                      float3 spacing, const float4 *d_atoms,
                                                      int count, cudaStream_t stream) {
    const dim3 block(ELEC__DCS_BLOCK_X, ELEC__DCS_BLOCK_Y);
    const dim3 grid(pitch / (ELEC__DCS_BLOCK_X * POINTS), rows / ELEC__DCS_BLOCK_Y,
                    slice_count);
    elec__k_dcs_volume<POINTS, SOFT><<<grid, block, 0, stream>>>(
        d_slices, pitch, rows, corner, spacing.x, spacing.y, spacing.z, 0, 1, d_atoms, count);
    return cudaGetLastError();
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
                 first += ELEC_DCS_CHUNK) {
                int count = job->atom_count - first < ELEC_DCS_CHUNK
                                ? job->atom_count - first : ELEC_DCS_CHUNK;
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
    for (int first = 0; first < job->atom_count; first += ELEC_DCS_CHUNK) {
        int count = job->atom_count - first < ELEC_DCS_CHUNK
                        ? job->atom_count - first : ELEC_DCS_CHUNK;
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

static elec_status elec__cuda_points_on(int device, const elec_atoms *atoms,
                                        const double *points, size_t count,
                                        const double reference[3],
                                        float *potential, elec_error *err);

/* Where a box of a map lands in the caller's map: the box's first point
   and the floats from one of its rows, and one of its planes, to the next
   (the whole map's dims[0] and dims[0] x dims[1]). */
typedef struct elec__map_window {
    float *first;
    size_t row, plane;
} elec__map_window;

static float *elec__map_window_at(elec__map_window w, size_t i, size_t j, size_t k) {
    return w.first + k * w.plane + j * w.row + i;
}

static elec_status elec__dcs_fix_coincident(const elec_atoms *atoms,
                                            const elec_lattice *l,
                                            int device, double scale,
                                            const double centre[3],
                                            elec__map_window map, elec_error *err) {
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
    for (size_t c = 0; status == ELEC_OK && c < count; c++) {
        const size_t i = index[c] % l->dims[0], j = index[c] / l->dims[0] % l->dims[1];
        *elec__map_window_at(map, i, j, index[c] / l->dims[0] / l->dims[1]) =
            (float)(scale * value[c]);
    }
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
        elec__cuda_free(dev->atoms, dev->stream);
        elec__cuda_free(dev->records, dev->stream);
        elec__cuda_free(dev->slices, dev->stream);
        if (dev->stream) cudaStreamDestroy(dev->stream);
    }
    (void)cudaGetLastError();
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
    /* on the legacy stream, as the copies and the launch below */
    ELEC__CUDA_ALLOC(d_atoms, (atoms->count + 1) * sizeof(float4), 0);
    ELEC__CUDA_ALLOC(d_points, (count + 1) * sizeof(float4), 0);
    ELEC__CUDA_ALLOC(d_potential, (count + 1) * sizeof(float), 0);
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
    elec__cuda_free(d_atoms, 0);
    elec__cuda_free(d_points, 0);
    elec__cuda_free(d_potential, 0);
    ELEC_FREE(host_atoms);
    ELEC_FREE(host_points);
    return status;
}

/* ---- DCS entry points */

/* One box of a DCS map (a lattice of its own, spanning at most
   ELEC__FLOAT_REGION along each axis) on the devices, its coordinates
   relative to its centre, scaled, the coincident rule applied: the box's
   points copied straight into their window of the caller's map. */
static elec_status elec__cuda_dcs_map_box(const elec_atoms *atoms,
                                          const elec_lattice *lattice,
                                          const elec_dcs_params *resolved,
                                          const int *devices, int device_count,
                                          elec__map_window map, elec_error *err) {
    elec_status status = ELEC_OK;
    elec__dcs_job *job = NULL;
    float4 *host_atoms = NULL;
    const size_t nx = lattice->dims[0], ny = lattice->dims[1], nz = lattice->dims[2];
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
    job->params = *resolved;
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
        ELEC__CUDA_ALLOC(dev->atoms, (atoms->count + 1) * sizeof(float4), dev->stream);
        ELEC__CUDA_ALLOC(dev->records, ELEC_DCS_CHUNK * sizeof(float4), dev->stream);
        ELEC__CUDA_ALLOC(dev->slices, slice_floats * dev->slice_count * sizeof(float),
                         dev->stream);
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

    /* Copy each slice back without its padding, then scale.  The map's
       rows may be wider than cudaDevAttrMaxPitch (2^31 - 1 bytes): the
       copies into host memory take them (an H100, CUDA 13.0: rows of 2^29
       + 1 points, tests/test_gpu_dcs.cu). */
    for (size_t k = 0; k < nz; k++) {
        elec__dcs_device *dev = &job->dev[k % job->device_count];
        const float *slice = dev->slices + (k / job->device_count) *
                                               (size_t)job->pitch * job->rows;
        ELEC__CUDA_TRY(cudaSetDevice(dev->ordinal));
        ELEC__CUDA_TRY(cudaMemcpy2DAsync(elec__map_window_at(map, 0, 0, k),
                                         map.row * sizeof(float), slice,
                                         job->pitch * sizeof(float), nx * sizeof(float), ny,
                                         cudaMemcpyDeviceToHost, dev->stream));
    }
    if ((status = elec__dcs_sync_all(job, err)) != ELEC_OK) goto cleanup;
    if (job->params.scale != 1.0)
        for (size_t k = 0; k < nz; k++)
            for (size_t j = 0; j < ny; j++) {
                float *row = elec__map_window_at(map, 0, j, k);
                for (size_t i = 0; i < nx; i++) row[i] = (float)(job->params.scale * row[i]);
            }
    status = elec__dcs_fix_coincident(atoms, lattice, job->dev[0].ordinal,
                                      job->params.scale, job->centre, map, err);

cleanup:
    if (job) {
        elec__dcs_release(job);
        ELEC_FREE(job);
    }
    ELEC_FREE(host_atoms);
    return status;
}

/* Progress over a map's boxes: box b's fraction f is (done + f points) /
   all points of the map, so it rises to exactly 1 at the last box's end. */
typedef struct elec__box_progress {
    elec_progress_fn progress;
    void *user;
    double done, points, all;
} elec__box_progress;

static int elec__box_progress_note(double fraction, void *user) {
    const elec__box_progress *b = (const elec__box_progress *)user;
    return b->progress((b->done + fraction * b->points) / b->all, b->user);
}

/* Whether boxes of step[0] x step[1] x step[2] points fit CUDA's grids:
   at most 65535 blocks along y (rows of ELEC__DCS_BLOCK_Y points) and z (a
   device's slices, on the volume rungs), and a row's padded pitch an int.
   Refused by name before any work, where past them the launch failed
   after the allocations (or the pitch overflowed): the step is the
   largest box, checked before the first is summed. */
static elec_status elec__cuda_dcs_boxes_fit(const elec_lattice *lattice, const int step[3],
                                            elec_dcs_variant variant, int device_count,
                                            elec_error *err) {
    const size_t nx = (size_t)step[0], ny = (size_t)step[1], nz = (size_t)step[2];
    const size_t used = (size_t)device_count < nz ? (size_t)device_count : nz;
    const size_t slices = (nz + used - 1) / used;
    const int boxed = step[0] != lattice->dims[0] || step[1] != lattice->dims[1] ||
                      step[2] != lattice->dims[2];
    char boxes[96] = "";
    if ((ny + ELEC__DCS_BLOCK_Y - 1) / ELEC__DCS_BLOCK_Y <= 65535 &&
        (variant < ELEC_DCS_VOLUME || slices <= 65535) && nx <= (size_t)INT_MAX - 65536)
        return ELEC_OK;
    if (boxed)
        snprintf(boxes, sizeof boxes, " (summed in boxes of %zu x %zu x %zu, %g A an axis)",
                 nx, ny, nz, ELEC__FLOAT_REGION);
    return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                      "lattice %d x %d x %d%s: the GPU DCS map takes at most %d points "
                      "along y, %d planes a GPU along z (the volume rungs) and %d along x "
                      "in one box; the CPU has no such limit",
                      lattice->dims[0], lattice->dims[1], lattice->dims[2], boxes,
                      65535 * ELEC__DCS_BLOCK_Y, 65535, INT_MAX - 65536);
}

/* The map a box at a time (elec__map_box_points), as the CPU's
   elec__cpu_dcs_map: one box, the map itself, unless the lattice spans
   more than ELEC__FLOAT_REGION along an axis.  With one reference at the
   lattice's centre, a 16,000 A line of points with the atoms at one end
   erred 1.9e-5 (relative RMS) on the CPU, and three points 1e9 A apart
   dropped an atom 3 A from the first (rounded onto it); the GPU's float
   path took that one reference until 2026-12-05.  Each box copies the
   atoms to the devices again, relative to its own centre, and sets up
   its own streams and buffers: a lattice of spacings past 1024 A, a point
   a box, pays that at every point (the price of every point in float;
   such lattices are better summed on the CPU).  Each box is copied from
   the devices straight into its window of the map: no host copy of a
   box (where one was, a box of 2050 x 2000 x 64 points at 0.5 A took a
   1 GB copy beside the 1 GB map). */
static elec_status elec__cuda_dcs_map_boxes(const elec_atoms *atoms,
                                            const elec_lattice *lattice,
                                            const elec_dcs_params *resolved,
                                            const int *devices, int device_count,
                                            float *map, elec_error *err) {
    elec_status status = ELEC_OK;
    elec__box_progress note;
    elec_dcs_params p = *resolved;
    elec__map_window whole, window;
    int step[3];
    long x, y, z;
    for (int axis = 0; axis < 3; axis++) {
        step[axis] = elec__map_box_points(lattice->spacing[axis]);
        if (step[axis] > lattice->dims[axis]) step[axis] = lattice->dims[axis];
    }
    status = elec__cuda_dcs_boxes_fit(lattice, step, resolved->variant, device_count, err);
    if (status != ELEC_OK) return status;
    whole.first = map;
    whole.row = (size_t)lattice->dims[0];
    whole.plane = whole.row * (size_t)lattice->dims[1];
    if (step[0] == lattice->dims[0] && step[1] == lattice->dims[1] &&
        step[2] == lattice->dims[2])
        return elec__cuda_dcs_map_box(atoms, lattice, resolved, devices, device_count,
                                      whole, err);
    note.progress = resolved->progress;
    note.user = resolved->progress_user;
    note.done = 0.0;
    note.all = (double)elec_lattice_size(lattice);
    if (p.progress) {
        p.progress = elec__box_progress_note;
        p.progress_user = &note;
    }
    for (z = 0; status == ELEC_OK && z < lattice->dims[2]; z += step[2])
        for (y = 0; status == ELEC_OK && y < lattice->dims[1]; y += step[1])
            for (x = 0; status == ELEC_OK && x < lattice->dims[0]; x += step[0]) {
                const long first[3] = {x, y, z};
                elec_lattice box = *lattice;
                for (int axis = 0; axis < 3; axis++) {
                    const long left = lattice->dims[axis] - first[axis];
                    box.dims[axis] = left < step[axis] ? (int)left : step[axis];
                    box.origin[axis] =
                        lattice->origin[axis] + first[axis] * lattice->spacing[axis];
                }
                note.points = (double)elec_lattice_size(&box);
                window = whole;
                window.first = elec__map_window_at(whole, (size_t)x, (size_t)y, (size_t)z);
                status = elec__cuda_dcs_map_box(atoms, &box, &p, devices, device_count,
                                                window, err);
                note.done += note.points;
            }
    return status;
}

ELEC_DEF elec_status elec_cuda_dcs_map(const elec_atoms *atoms,
                                       const elec_lattice *lattice,
                                       const elec_dcs_params *params,
                                       float *map, elec_error *err) {
    elec_status status;
    elec_dcs_params resolved;
    int devices[ELEC__MAX_GPUS], device_count = 0, caller_device = 0;

    if ((status = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return status;
    status = elec_lattice_check_points(lattice, params ? params->max_points : 0, err);
    if (status != ELEC_OK) return status;
    if ((status = elec_dcs_params_resolve(params, &resolved, err)) != ELEC_OK) return status;
    if (!map) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "map is NULL");
    if (atoms->count > (size_t)INT_MAX)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "%zu atoms: the GPU path takes at most %d",
                          atoms->count, INT_MAX);
    if ((status = elec__cuda_gpu_list(&resolved.gpus, devices, &device_count, err)) !=
            ELEC_OK ||
        (status = elec__cuda_gpus_distinct(devices, device_count, err)) != ELEC_OK)
        return status;
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    status = elec__cuda_dcs_map_boxes(atoms, lattice, &resolved, devices, device_count, map,
                                      err);
    if (status == ELEC_OK)
        status = elec__results_finite("GPU DCS map", "point", map, NULL,
                                      elec_lattice_size(lattice), "float", err);
    if (status == ELEC_OK) elec__ok(err);
    cudaSetDevice(caller_device);
    return status;
}

/* One region's points (elec__points_by_region) on the device, relative to
   their own centre. */
typedef struct elec__cuda_points_call {
    int device;
    const elec_atoms *atoms;
} elec__cuda_points_call;

static elec_status elec__cuda_points_region(void *call, const double *points,
                                            const double *normals, size_t count, float *out,
                                            elec_error *err) {
    const elec__cuda_points_call *c = (const elec__cuda_points_call *)call;
    double centre[3];
    (void)normals;
    elec__points_reference(points, NULL, count, centre);
    return elec__cuda_points_on(c->device, c->atoms, points, count, centre, out, err);
}

/* A DCS or MDH points call on its GPUs: its points, their results, the
   method's region call (elec__points_by_region) and that call's
   arguments, whose device each part sets (one of dcs and mdh, the other
   NULL). */
typedef struct elec__points_parts {
    const double *points;
    size_t count;
    float *out;
    elec__region_call fn;
    elec__cuda_points_call *dcs;
    struct elec__cuda_mdh_call *mdh;
} elec__points_parts;

static elec_status elec__cuda_points_part(void *job, int part, int parts, int device,
                                          elec_error *err);

/* The points by regions on the one device of the call's arguments, or on
   every device of the set (elec__cuda_parts): one part a device, each a
   run of the points in the caller's order. */
static elec_status elec__cuda_points_run(elec__points_parts *job, const int *devices,
                                         int device_count, elec_error *err) {
    if (device_count > 1)
        return elec__cuda_parts(devices, device_count, elec__cuda_points_part, job, err);
    return elec__points_by_region(job->points, NULL, job->count, job->out, job->fn,
                                  job->dcs ? (void *)job->dcs : (void *)job->mdh, err);
}

ELEC_DEF elec_status elec_cuda_dcs_points(const elec_atoms *atoms,
                                          const double *points,
                                          size_t point_count,
                                          const elec_dcs_params *params,
                                          float *potential, elec_error *err) {
    elec_status status;
    elec_dcs_params p;
    elec__cuda_points_call call;
    int devices[ELEC__MAX_GPUS], device_count = 0, caller_device = 0;
    if ((status = elec_dcs_params_resolve(params, &p, err)) != ELEC_OK) return status;
    status = elec__cuda_points_check(atoms, 0, points, point_count, &p.gpus,
                                     potential, devices, &device_count, err);
    if (status != ELEC_OK || point_count == 0) return status;
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    call.device = devices[0];
    call.atoms = atoms;
    {
        elec__points_parts job = {points, point_count, potential, elec__cuda_points_region,
                                  &call, NULL};
        status = elec__cuda_points_run(&job, devices, device_count, err);
    }
    cudaSetDevice(caller_device);
    if (status != ELEC_OK) return status;
    for (size_t i = 0; i < point_count; i++)
        potential[i] = (float)(p.scale * potential[i]);
    if ((status = elec__results_finite("GPU DCS at points", "potential at point", potential,
                                       NULL, point_count, "float", err)) != ELEC_OK)
        return status;
    elec__ok(err);
    return ELEC_OK;
}

/* --------------------------------------------------------------------------- >>mdh MDH */

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
                /* the coincident rule on rinv, not on the charge: an atom
                   exactly on the point has r2 = 0 and rsqrt = inf, and
                   0 * inf would be NaN; with rinv = 0, r = 0 and the term
                   is 0 * 2^b */
                float rinv = r2 >= coincident2 ? elec_rsqrt_sfu(r2) : 0.0f;
                /* r2 past float's range (an atom 2e19 A away): rsqrt 0
                   and r2 rinv NaN, which made the sum NaN whatever kappa
                   (an audit); the clamp keeps r finite, the term 0 */
                float r = fminf(r2 * rinv, FLT_MAX);
                float screen = elec__exp2_sfu(fmaf(-kappa_log2e, r, b));
                v[m] = fmaf(a.w * rinv, screen, v[m]);
            }
        }
    }
#pragma unroll
    for (int m = 0; m < POINTS; m++) {
        int p = first + m * blockDim.x;
        if (p < point_count) potential[p] = v[m];
    }
}

/* Chunks of points for the MDH pipeline: enough that the host's work on
   one (conversion, upload, copy back, scale) hides behind the kernel of
   another, few enough that each kernel still fills the GPU several times
   over (and the two streams let one kernel's tail overlap the next).  On
   an H100, 1e6 points x 2e5 atoms: 0.151 s unchunked, 0.134 s in 4
   chunks, 0.138 s in 8, 0.145-0.167 s in 16. */
#define ELEC__MDH_CHUNKS 4
#define ELEC__MDH_MIN_CHUNK ((size_t)1 << 17)

/* 256 threads a block, each its POINTS points, a tile of atoms and their
   b in shared memory. */
#define ELEC__MDH_BLOCK 256
template <int POINTS>
static inline cudaError_t elec_cuda_mdh_points_launch(float *d_potential, const float4 *d_points,
                                                      int point_count, const float4 *d_xyza,
                                                      const float *d_b, int atom_count,
                                                      float kappa_log2e, float coincident2,
                                                      cudaStream_t stream) {
    const unsigned blocks = (unsigned)(((size_t)point_count + ELEC__MDH_BLOCK * POINTS - 1) /
                                       (ELEC__MDH_BLOCK * POINTS));
    elec__k_mdh_points<POINTS>
        <<<blocks, ELEC__MDH_BLOCK, ELEC__MDH_BLOCK * (sizeof(float4) + sizeof(float)),
           stream>>>(d_potential, d_points, point_count, d_xyza, d_b, atom_count, kappa_log2e,
                     coincident2);
    return cudaGetLastError();
}

/* One region's points (elec__points_by_region) on the device, relative to
   their own centre, scaled. */
typedef struct elec__cuda_mdh_call {
    int device;
    const elec_atoms *atoms;
    const elec_mdh_params *params; /* resolved */
} elec__cuda_mdh_call;

static elec_status elec__cuda_mdh_region(void *call, const double *points,
                                         const double *normals, size_t point_count,
                                         float *potential, elec_error *err) {
    enum { points_per_thread = 2 }; /* fastest on H100 (bench) */
    const double log2e = 1.4426950408889634;
    const elec__cuda_mdh_call *job = (const elec__cuda_mdh_call *)call;
    const elec_atoms *atoms = job->atoms;
    const elec_mdh_params p = *job->params;
    const int device = job->device;
    elec_status status = ELEC_OK;
    float4 *host_xyza = NULL, *host_points = NULL, *d_xyza = NULL, *d_points = NULL;
    float *host_b = NULL, *d_b = NULL, *d_potential = NULL;
    cudaStream_t streams[2] = {NULL, NULL};
    double centre[3];
    size_t n = 0, chunk, chunks;
    (void)normals;

    elec__points_reference(points, NULL, point_count, centre);
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
    /* allocated on streams[0] and waited for below with its uploads: both
       streams use them */
    ELEC__CUDA_ALLOC(d_xyza, (atoms->count + 1) * sizeof(float4), streams[0]);
    ELEC__CUDA_ALLOC(d_b, (atoms->count + 1) * sizeof(float), streams[0]);
    ELEC__CUDA_ALLOC(d_points, point_count * sizeof(float4), streams[0]);
    ELEC__CUDA_ALLOC(d_potential, point_count * sizeof(float), streams[0]);
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
            cudaStream_t stream = streams[c % 2];
            elec__cuda_convert_points(points + 3 * first, count, centre, host_points + first);
            ELEC__CUDA_TRY(cudaMemcpyAsync(d_points + first, host_points + first,
                                           count * sizeof(float4), cudaMemcpyHostToDevice,
                                           stream));
            ELEC__CUDA_TRY(elec_cuda_mdh_points_launch<points_per_thread>(
                d_potential + first, d_points + first, (int)count, d_xyza, d_b,
                (int)atoms->count, (float)(p.kappa * log2e),
                (float)(ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE), stream));
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
cleanup:
    for (int k = 0; k < 2; k++)
        if (streams[k]) cudaStreamSynchronize(streams[k]);
    /* both streams done: freed on the first */
    elec__cuda_free(d_xyza, streams[0]);
    elec__cuda_free(d_b, streams[0]);
    elec__cuda_free(d_points, streams[0]);
    elec__cuda_free(d_potential, streams[0]);
    for (int k = 0; k < 2; k++)
        if (streams[k]) cudaStreamDestroy(streams[k]);
    ELEC_FREE(host_xyza);
    ELEC_FREE(host_points);
    ELEC_FREE(host_b);
    return status;
}

/* Part `part` of a points call spread over GPUs: its run of the points,
   by regions, with the call's device set to `device`. */
static elec_status elec__cuda_points_part(void *job, int part, int parts, int device,
                                          elec_error *err) {
    const elec__points_parts *j = (const elec__points_parts *)job;
    elec__cuda_points_call dcs;
    elec__cuda_mdh_call mdh;
    void *call;
    size_t first, n;
    elec__part_range(j->count, part, parts, &first, &n);
    if (n == 0) return ELEC_OK;
    if (j->dcs) {
        dcs = *j->dcs;
        dcs.device = device;
        call = &dcs;
    } else {
        mdh = *j->mdh;
        mdh.device = device;
        call = &mdh;
    }
    return elec__points_by_region(j->points + 3 * first, NULL, n, j->out + first, j->fn,
                                  call, err);
}

ELEC_DEF elec_status elec_cuda_mdh_points(const elec_atoms *atoms,
                                          const double *points,
                                          size_t point_count,
                                          const elec_mdh_params *params,
                                          float *potential, elec_error *err) {
    elec_status status;
    elec_mdh_params p;
    elec__cuda_mdh_call call;
    int devices[ELEC__MAX_GPUS], device_count = 0, caller_device = 0;
    if ((status = elec_mdh_params_resolve(params, &p, err)) != ELEC_OK) return status;
    status = elec__cuda_points_check(atoms, 1, points, point_count, &p.gpus,
                                     potential, devices, &device_count, err);
    if (status != ELEC_OK || point_count == 0) return status;
    status = elec__mdh_range_check(atoms, &p, (double)FLT_MAX, err);
    if (status != ELEC_OK) return status;
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    call.device = devices[0];
    call.atoms = atoms;
    call.params = &p;
    {
        elec__points_parts job = {points, point_count, potential, elec__cuda_mdh_region, NULL,
                                  &call};
        status = elec__cuda_points_run(&job, devices, device_count, err);
    }
    cudaSetDevice(caller_device);
    if (status == ELEC_OK)
        status = elec__results_finite("GPU MDH at points", "potential at point", potential,
                                      NULL, point_count, "float", err);
    if (status == ELEC_OK) elec__ok(err);
    return status;
}

/* ---------------------------------------------------------------- >>cutoff cutoff maps */

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
#define ELEC__CUTOFF_MAX_ORDER 6     /* elec_cutoff_params_resolve's limit */
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
    float rinv = elec_rsqrt_sfu(r2);
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

/* ---- cutoff launchers and entry point */

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
    cudaStream_t stream; /* the device buffers': allocated and freed on it  */
    size_t padded;
    unsigned char *touched; /* z-slices of the caller's map that hold the
                               host's share (the copy back adds to them);
                               NULL = no share                             */
    int scanned;            /* elec__cutoff_finish scanned the map as it
                               copied it back: first_bad is its first point
                               past float's range (SIZE_MAX: none)        */
    size_t first_bad;
} elec__cutoff_job;

static void elec__cutoff_job_free(elec__cutoff_job *job) {
    /* only what was allocated: a call refused before any GPU was looked
       for makes no CUDA call here; freed on the stream that used them,
       before it is destroyed */
    if (job->d_bins) elec__cuda_free(job->d_bins, job->stream);
    if (job->d_neighbours) elec__cuda_free(job->d_neighbours, job->stream);
    if (job->d_map) elec__cuda_free(job->d_map, job->stream);
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

/* gamma(rho)/a as the kernels take it: sum_k coeff[k] (rho^2 - 1)^k with
   coeff[k] = C(-1/2, k) / a, the Taylor coefficients of elec_msm_gamma,
   zero past the splitting order. */
static void elec__cutoff_coefficients(double cutoff, int splitting,
                                      float coeff[ELEC__CUTOFF_MAX_ORDER + 1]) {
    double c = 1.0;
    for (int k = 0; k <= ELEC__CUTOFF_MAX_ORDER; k++) {
        if (k > 0) c *= -(2.0 * k - 1.0) / (2.0 * k); /* C(-1/2, k) */
        coeff[k] = k <= splitting ? (float)(c / cutoff) : 0.0f;
    }
}

/* Host side: checks the lattice against the kernel's limits, bins the
   atoms, and fills the launch arguments.  Parameters already checked and
   resolved. */
/* The kernel's limits for a lattice and cutoff, before any work, in the
   order elec__cutoff_prepare met them: the lattice's extent along each
   axis, the neighbour bins of a block (their count into *count, the
   block's region into *region), and the bins over the lattice and the
   cutoff around it (elec__bins_shape's, as elec_bins_build takes them). */
static elec_status elec__cutoff_limits(const elec_lattice *lattice, const elec_cutoff_params *p,
                                       size_t *count, double *region, elec_error *err) {
    double reach, spacing_max = 0.0, origin[3], extent[3];
    const size_t nx = lattice->dims[0], ny = lattice->dims[1], nz = lattice->dims[2];
    elec_bins shape;
    size_t bins = 0;
    *count = 0;
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
    *region = (ELEC__CUTOFF_EDGE - 1) * spacing_max + p->bin_length;
    /* elec_bin_neighbourhood tries (2 reach + 1)^3 offsets: bound it first */
    reach = ceil((p->cutoff + *region) / p->bin_length) + 1.0;
    *count = !(2.0 * reach + 1.0 <= 64.0)
                 ? (size_t)-1
                 : elec_bin_neighbourhood(p->bin_length, *region, p->cutoff + 1e-6, NULL, 0);
    if (*count > ELEC__CUTOFF_MAX_NEIGHBOURS)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "bins of %g A against a cutoff of %g A and lattice "
                          "spacing %g A: a block needs more than %d neighbour "
                          "bins; use a longer params.bin_length",
                          p->bin_length, p->cutoff, spacing_max,
                          ELEC__CUTOFF_MAX_NEIGHBOURS);
    for (int axis = 0; axis < 3; axis++) {
        origin[axis] = lattice->origin[axis] - p->cutoff;
        extent[axis] = (lattice->dims[axis] - 1) * lattice->spacing[axis] + 2.0 * p->cutoff;
    }
    memset(&shape, 0, sizeof shape);
    return elec__bins_shape(origin, extent, p->bin_length, &shape, &bins, err);
}

static elec_status elec__cutoff_prepare(elec__cutoff_job *job, const elec_atoms *atoms,
                                        const elec_lattice *lattice,
                                        const elec_cutoff_params *p, elec_error *err) {
    elec_status status = ELEC_OK;
    elec__cutoff_args *args = &job->args;
    int *offsets = NULL;
    int4 *host_neighbours = NULL;
    double origin[3], extent[3];
    double region;
    size_t count, nx, ny, nz;

    memset(job, 0, sizeof *job);
    job->p = *p;
    nx = lattice->dims[0], ny = lattice->dims[1], nz = lattice->dims[2];
    if ((status = elec__cutoff_limits(lattice, p, &count, &region, err)) != ELEC_OK)
        return status;

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
    elec__cutoff_coefficients(p->cutoff, p->splitting, args->coeff);
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
    job->stream = stream;
    ELEC__CUDA_ALLOC(job->d_bins, bin_count * ELEC_BIN_DEPTH * sizeof(float4), stream);
    ELEC__CUDA_ALLOC(job->d_neighbours, (count + 1) * sizeof(int4), stream);
    ELEC__CUDA_ALLOC(job->d_map, job->padded * sizeof(float), stream);
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
   host's share (job->touched).  Returns the first of their points past
   float's range (SIZE_MAX: none), each slice scanned just after its copy,
   while the next chunk's DMA runs: for seed 000's cutoff map (497^3
   points, 16 slices a chunk) a scan of the whole map after the copy cost
   about 9 ms a call, this one no more than the noise (0.196, 0.205, 0.228
   s against 0.188, 0.196, 0.219, and 0.189, 0.194, 0.234 with no check at
   all; three rounds alternating, H200, bench/RESULTS.md, 2026-12-02).  A
   chunk of one slice (16 MB or more) is copied by one thread as before,
   and scanned by all (the scan's own parallel loop). */
static size_t elec__cutoff_unstage(const elec__cutoff_job *job, size_t slice, size_t first,
                                   size_t count, const float *from, float *map) {
    size_t first_bad = SIZE_MAX;
#ifdef _OPENMP
#pragma omp parallel for reduction(min : first_bad) if (count > 1)
#endif
    for (long k = 0; k < (long)count; k++) {
        const float *src = from + (size_t)k * slice;
        float *dst = map + (first + (size_t)k) * slice;
        if (job->touched && job->touched[first + (size_t)k]) {
            for (size_t e = 0; e < slice; e++) dst[e] += src[e];
        } else {
            memcpy(dst, src, slice * sizeof(float));
        }
        const size_t bad = elec__first_bad_float(dst, slice); /* from cache */
        if (bad < slice && (first + (size_t)k) * slice + bad < first_bad)
            first_bad = (first + (size_t)k) * slice + bad;
    }
    return first_bad;
}

/* Copies the map back without the padding (the kernel applied the scale),
   adding it to the slices that hold the host's share.  Large maps go
   through two pinned buffers of ~16 MB: the DMA of one chunk of slices
   overlaps the host's copy of the other into the caller's (pageable) map,
   which a direct copy would stage through the driver at a few GB/s.  A
   small map without a host share is copied directly; with one, through one
   pageable buffer.  Staged, the map is scanned for values past float's
   range as it comes (job->scanned, job->first_bad). */
#define ELEC__STAGING_BYTES ((size_t)16 << 20)
static elec_status elec__cutoff_finish(elec__cutoff_job *job, const elec_lattice *lattice,
                                       float *map, cudaStream_t stream, elec_error *err) {
    elec_status status = ELEC_OK;
    job->scanned = 0;
    job->first_bad = SIZE_MAX;
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
            const size_t bad =
                elec__cutoff_unstage(job, slice, first, count, staging[done % 2], map);
            if (bad < job->first_bad) job->first_bad = bad;
        }
    }
    job->scanned = 1;
cleanup:
    if (staging[0]) cudaStreamSynchronize(stream);
    if (pinned) cudaFreeHost(pinned);
    ELEC_FREE(pageable);
    if (copied[0]) cudaEventDestroy(copied[0]);
    if (copied[1]) cudaEventDestroy(copied[1]);
    return status;
}

/* The first point past float's range of a map that elec__cutoff_finish
   copied back (count points): its scan where it made one, else the whole
   map's, or `also` (a point the caller found after the copy; SIZE_MAX:
   none) where that comes first; SIZE_MAX: none. */
static size_t elec__cutoff_first_bad(const elec__cutoff_job *job, const float *map,
                                     size_t count, size_t also) {
    size_t first = job->scanned ? job->first_bad : elec__first_bad_float(map, count);
    if (first >= count) first = SIZE_MAX;
    return also < first ? also : first;
}

/* A cutoff map on one device: its bins, the kernel, the host's share of
   the overflow and the copy back; *first_bad: the first point past
   float's range (SIZE_MAX: none). */
static elec_status elec__cuda_cutoff_map_on(const elec_atoms *atoms, const elec_lattice *lattice,
                                            const elec_cutoff_params *p, int device, float *map,
                                            size_t *first_bad, elec_error *err) {
    elec_status status;
    elec__cutoff_job job;
    cudaStream_t stream = NULL;
    /* the bins on the host before the device is touched */
    if ((status = elec__cutoff_prepare(&job, atoms, lattice, p, err)) != ELEC_OK) {
        elec__cutoff_job_free(&job);
        return status;
    }
    ELEC__CUDA_TRY(cudaSetDevice(device));
    ELEC__CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    if ((status = elec__cutoff_launch(&job, stream, err)) != ELEC_OK) goto cleanup;
    if ((status = elec__cutoff_host_share(&job, lattice, map, err)) != ELEC_OK) goto cleanup;
    if ((status = elec__cutoff_finish(&job, lattice, map, stream, err)) != ELEC_OK)
        goto cleanup;
    *first_bad = elec__cutoff_first_bad(&job, map, elec_lattice_size(lattice), SIZE_MAX);

cleanup:
    elec__cutoff_job_free(&job); /* on the stream, before it goes */
    if (stream) {
        cudaStreamSynchronize(stream);
        cudaStreamDestroy(stream);
    }
    return status;
}

/* A map spread over GPUs (elec__cuda_parts) by slabs of z planes
   (elec_slab_partition, ">>slab" in elec.h), each slab a contiguous run of
   the map, mapped by the method's map_slab on its device: the lattice,
   the method's resolved parameters, a timed call's times and start (MSM:
   the first slab's stages), and each slab's first point past float's
   range (SIZE_MAX: none), in the whole map's numbering. */
typedef struct elec__slab_parts elec__slab_parts;
typedef elec_status (*elec__slab_map_fn)(const elec__slab_parts *j, const elec_lattice *slab,
                                         int first_slab, int device, float *map,
                                         size_t *first_bad, elec_error *err);
struct elec__slab_parts {
    const elec_atoms *atoms;
    const elec_lattice *lattice;
    const void *params;
    float *map;
    elec__slab_map_fn map_slab;
    elec_stage_times *times;
    double started;
    size_t first_bad[ELEC__MAX_GPUS];
};

/* Slab `part` of `parts`: its planes k0 .. k1 - 1 (none where the map has
   fewer planes than parts, which leaves the first parts empty), mapped
   into its run of the map; first_slab: the slab of plane 0. */
static elec_status elec__cuda_slab_part(void *job, int part, int parts, int device,
                                        elec_error *err) {
    elec__slab_parts *j = (elec__slab_parts *)job;
    elec_lattice slab;
    size_t first, bad = SIZE_MAX;
    elec_status status;
    int k0 = 0, k1 = 0;
    (void)elec_slab_partition(j->lattice->dims[2], parts, part, &k0, &k1, NULL);
    if (k1 <= k0) return ELEC_OK;
    (void)elec_lattice_slab(j->lattice, k0, k1, &slab, NULL);
    first = (size_t)k0 * j->lattice->dims[0] * j->lattice->dims[1];
    status = j->map_slab(j, &slab, k0 == 0, device, j->map + first, &bad, err);
    if (bad != SIZE_MAX) j->first_bad[part] = first + bad;
    return status;
}

/* The slabs on the devices; *first_bad the map's first point past range
   (SIZE_MAX: none). */
static elec_status elec__cuda_slabs(elec__slab_parts *j, const int *devices, int device_count,
                                    size_t *first_bad, elec_error *err) {
    elec_status status;
    for (int part = 0; part < device_count; part++) j->first_bad[part] = SIZE_MAX;
    status = elec__cuda_parts(devices, device_count, elec__cuda_slab_part, j, err);
    *first_bad = SIZE_MAX;
    for (int part = 0; part < device_count; part++)
        if (j->first_bad[part] < *first_bad) *first_bad = j->first_bad[part];
    return status;
}

/* A cutoff map's slab: the map of its planes on their own lattice (the
   bins over the slab and the cutoff around it take the atoms in reach,
   elec_bins_build leaving out the rest), summed relative to the slab's
   centre: the whole map's values to float rounding. */
static elec_status elec__cuda_cutoff_slab(const elec__slab_parts *j, const elec_lattice *slab,
                                          int first_slab, int device, float *map,
                                          size_t *first_bad, elec_error *err) {
    (void)first_slab;
    return elec__cuda_cutoff_map_on(j->atoms, slab, (const elec_cutoff_params *)j->params,
                                    device, map, first_bad, err);
}

ELEC_DEF elec_status elec_cuda_cutoff_map(const elec_atoms *atoms,
                                          const elec_lattice *lattice,
                                          const elec_cutoff_params *params,
                                          float *map, elec_error *err) {
    elec_status status;
    elec_cutoff_params p;
    elec__slab_parts spread;
    int devices[ELEC__MAX_GPUS], device_count = 0, caller_device = 0;
    size_t first_bad = SIZE_MAX, neighbours;
    double region;

    if ((status = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return status;
    status = elec_lattice_check_points(lattice, params ? params->max_points : 0, err);
    if (status != ELEC_OK) return status;
    if ((status = elec_cutoff_params_resolve(params, &p, err)) != ELEC_OK) return status;
    if (!map) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "map is NULL");
    /* the kernel's limits first: refused without looking for a GPU */
    if ((status = elec__cutoff_limits(lattice, &p, &neighbours, &region, err)) != ELEC_OK)
        return status;
    status = elec__cuda_gpu_list(&p.gpus, devices, &device_count, err);
    if (status != ELEC_OK) return status;
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    if (device_count > 1) {
        memset(&spread, 0, sizeof spread);
        spread.atoms = atoms;
        spread.lattice = lattice;
        spread.params = &p;
        spread.map = map;
        spread.map_slab = elec__cuda_cutoff_slab;
        status = elec__cuda_slabs(&spread, devices, device_count, &first_bad, err);
    } else {
        status = elec__cuda_cutoff_map_on(atoms, lattice, &p, devices[0], map, &first_bad,
                                          err);
    }
    cudaSetDevice(caller_device);
    if (status != ELEC_OK) return status;
    if (p.progress && p.progress(1.0, p.progress_user))
        return elec__fail(err, ELEC_ERR_CANCELLED, 0,
                          "cutoff map cancelled by the progress callback");
    if (first_bad != SIZE_MAX)
        return elec__result_past_range("GPU cutoff map", "point", first_bad, map[first_bad],
                                       "float", err);
    elec__ok(err);
    return ELEC_OK;
}

/* --------------------------------------------------------------------------- >>msm MSM */

/* Multilevel summation on the GPU (elec.h; Hardy, Stone and Schulten 2009,
   seed 002): every stage on the device, in float, so that a large map
   never waits on the host.
     short range     the cutoff kernel above, MSM kind, into the padded map
     anterpolation   a charge map (ELEC__MSM_CHARGEMAP_VARIANT below)
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

/* Stage 1, anterpolation q_0(m) = sum_j q_j Phi(x_j/h - m), is a charge
   map (the charge-mapping section at the end of this file): Skeel's C1
   basis of the interpolation's order on the finest lattice, by the rung
   below (set it with -DELEC__MSM_CHARGEMAP_VARIANT=... to compare rungs;
   bench/RESULTS.md has the ladder).  The charge map's default for the
   size: every MSM stage runs on one stream, so the faster map is the
   faster step, if by little (ApoA1-size's periodic MSM from a graph,
   bench_spme --quick in turns: 645.1-647.0 us by pc-lanes, 634.9-637.4 by
   tile-binned; make bench after them 643.6, pc-lanes' 643.6-644.5 in
   earlier calls; the 1.5M-atom map's anterpolation 0.47 -> 0.32 ms; H200,
   2026-11-29, bench/RESULTS.md). */
#ifndef ELEC__MSM_CHARGEMAP_VARIANT
#define ELEC__MSM_CHARGEMAP_VARIANT ELEC_CHARGEMAP_FASTEST
#endif

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

/* Energies and forces by MSM on the GPU (elec_cpu_msm_energy's method,
   non-periodic): the lattice hierarchy as for maps, then
     at atoms     one thread per atom: potential and gradient interpolated
                  from the finest lattice (weights and their slopes);
     short range  one thread per atom over the 27 cells around its own
                  (cells at least a long, atoms sorted by cell on the
                  host): potential q_j (1/r - gamma(r/a)/a) and force.
   Each pair is seen from both ends (no atomics on forces); the host sums
   the per-atom potentials in double. */
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

/* ---- MSM launchers: the plan of a lattice hierarchy on the device */

/* The GPU's plan of an MSM lattice hierarchy, as elec_cpu.h's elec__msm is
   the CPU's and the SPME handle is SPME's: the resolved parameters, the
   hierarchy's shape, the charges q_l and potentials e_l of every level (one
   device buffer), the lattice-cutoff stencil, the anterpolation's charge
   map, a stream and, when timed, the events between the stages.
   elec__msm_device_setup makes it for a shape (elec__msm_shape_of, elec.h)
   and up to max_atoms atoms; elec__msm_device_run enqueues stages on its
   stream for float4 atoms already on the device, relative to the reference
   point the shape was made for; elec__msm_device_free releases it.  Maps,
   energies and elec_cuda_msm_lattices run on it.

   The plan is written for more than this hierarchy: each level has its own
   stencil pointer, radius and factor (here all levels share g_0's stencil,
   level l scaled by 2^-l), so that a periodic hierarchy (lattices of 2^k
   points per axis wrapped around the box, a folded stencil of K_l per
   level, no top sum but a constant) can set them per level; `periodic`
   says which kind a plan is: elec__msm_device_setup_periodic (with the
   periodic MSM handle, after SPME in this file) makes the periodic kind,
   the hierarchy of elec__pmsm_shape (pshape; shape holds its n, lo 0)
   with each level's folded stencil at stencil_of[l]. */
#define ELEC__MSM_MARKS 9 /* timed maps: start, short range, the five stages, interpolation,
                             copy back */
typedef struct elec__msm_device {
    elec_msm_params p;        /* resolved                                        */
    elec__msm_shape shape;
    int periodic;             /* 0: non-periodic; 1: elec__msm_device_setup_periodic */
    elec__pmsm_shape pshape;  /* periodic: the hierarchy (shape holds its n)    */
    int device;
    cudaStream_t stream;      /* every stage of the plan's calls runs on it      */
    void *block;              /* one device allocation: lattices, stencil, spans */
    float *lattices;          /* 2 x every level's points: q_l then e_l, level by level */
    float *q[ELEC_MSM_MAX_LEVELS], *e[ELEC_MSM_MAX_LEVELS];
    size_t points;            /* every level's points together                   */
    float *stencil;           /* g_0's octant, (radius + 1)^3 (elec__msm_stencil) */
    int *spans;               /* its rows' spans, (radius + 1)^2                 */
    const float *stencil_of[ELEC_MSM_MAX_LEVELS]; /* level l's stencil, spans,  */
    const int *spans_of[ELEC_MSM_MAX_LEVELS];     /* radius and factor          */
    int radius_of[ELEC_MSM_MAX_LEVELS];
    float factor_of[ELEC_MSM_MAX_LEVELS];
    double *charge_partials;  /* periodic: ELEC__PMSM_CENTER_BLOCKS sums of q_0,
                                 its mean and a count (elec__k_pmsm_charge_mean) */
    elec_cuda_chargemap_handle *anterpolation;
    size_t max_atoms;
    int timed;                /* marks made: ELEC__MSM_MARKS events              */
    cudaEvent_t marks[ELEC__MSM_MARKS];
} elec__msm_device;

/* Stage 1's charge map on `device`: Skeel's C1 basis of the
   interpolation's order over the finest lattice (points lo .. lo + n - 1
   at spacing h from the reference point, which the atoms are relative
   to), for up to n atoms. */
static elec_status elec__msm_anterpolation_plan(const elec_msm_params *p,
                                                const elec__msm_shape *shape, size_t n,
                                                int device, elec_cuda_chargemap_handle **out,
                                                elec_error *err) {
    elec_lattice l;
    elec_chargemap_params cp;
    memset(&cp, 0, sizeof cp);
    for (int axis = 0; axis < 3; axis++) {
        l.dims[axis] = shape->n[0][axis];
        l.spacing[axis] = p->spacing;
        l.origin[axis] = (double)shape->lo[0][axis] * p->spacing;
    }
    cp.basis = ELEC_CHARGEMAP_SKEEL;
    cp.order = 2 * elec_msm_support((int)p->interpolation);
    cp.variant = ELEC__MSM_CHARGEMAP_VARIANT;
    return elec_cuda_chargemap_create(&l, n ? n : 1, &cp, device, out, err);
}

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

/* The plan's device block for params p over a shape (the size a handle's
   workspace query gives): the lattices, the stencil's octant and its
   spans, each at an offset aligned to 256 bytes.  With base given, the
   pointers into it. */
#define ELEC__MSM_ALIGN(bytes) (((bytes) + 255) / 256 * 256)
static size_t elec__msm_device_layout(elec__msm_device *md, const elec_msm_params *p,
                                      const elec__msm_shape *shape, char *base) {
    const size_t side = (size_t)ceil(2.0 * p->cutoff / p->spacing) + 1;
    size_t points = 0, at;
    for (int l = 0; l < shape->levels; l++) points += elec__msm_shape_points(shape, l);
    at = ELEC__MSM_ALIGN(2 * points * sizeof(float));
    if (base) {
        md->lattices = (float *)base;
        md->stencil = (float *)(base + at);
    }
    at += ELEC__MSM_ALIGN(side * side * side * sizeof(float));
    if (base) md->spans = (int *)(base + at);
    return at + ELEC__MSM_ALIGN(side * side * sizeof(int));
}

static void elec__msm_device_free(elec__msm_device *md) {
    int caller_device = 0;
    if (!md->stream && !md->block && !md->anterpolation && !md->timed)
        return; /* nothing made: no CUDA call */
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    cudaSetDevice(md->device);
    if (md->stream) cudaStreamSynchronize(md->stream);
    elec_cuda_chargemap_destroy(md->anterpolation);
    cudaSetDevice(md->device);
    elec__cuda_free(md->block, md->stream);
    for (int m = 0; md->timed && m < ELEC__MSM_MARKS; m++) cudaEventDestroy(md->marks[m]);
    if (md->stream) cudaStreamDestroy(md->stream);
    (void)cudaGetLastError();
    cudaSetDevice(caller_device);
    memset(md, 0, sizeof *md);
}

/* The lattice cutoff kernels' blocks take a lattice's rows and planes
   along y and z, where CUDA allows 65535 (the finest lattice, n points a
   side, is the largest): energies and lattices of atoms spread along a
   line went on to a launch's "invalid configuration". */
static elec_status elec__msm_finest_fits_grid(const int n[3], elec_error *err) {
    if (n[1] > 65535 || n[2] > 65535)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "MSM on the GPU: its finest lattice has %d x %d x %d points, at "
                          "most 65535 along y and z (the CPU has no such limit)", n[0], n[1],
                          n[2]);
    return ELEC_OK;
}

/* The plan of resolved params p over a shape on `device` (made current):
   the hierarchy's buffers (zeroed), its stencil, the anterpolation's charge
   map for up to max_atoms atoms, a stream, and with timed its events.  On
   failure what was made is freed. */
static elec_status elec__msm_device_setup(elec__msm_device *md, const elec_msm_params *p,
                                          const elec__msm_shape *shape, size_t max_atoms,
                                          int device, int timed, elec_error *err) {
    elec_status status = ELEC_OK;
    float *host_stencil = NULL;
    int *host_spans = NULL;
    size_t side;
    int radius;
    memset(md, 0, sizeof *md);
    if ((status = elec__msm_finest_fits_grid(shape->n[0], err)) != ELEC_OK) return status;
    md->p = *p;
    md->shape = *shape;
    md->device = device;
    md->max_atoms = max_atoms;
    for (int l = 0; l < shape->levels; l++) md->points += elec__msm_shape_points(shape, l);
    radius = (int)ceil(2.0 * p->cutoff / p->spacing);
    side = (size_t)radius + 1;
    host_stencil = (float *)ELEC_MALLOC(side * side * side * sizeof *host_stencil);
    host_spans = (int *)ELEC_MALLOC(side * side * sizeof *host_spans);
    if (!host_stencil || !host_spans) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory for MSM tables");
        goto cleanup;
    }
    elec__msm_stencil(p, radius, host_stencil, host_spans);
    ELEC__CUDA_TRY(cudaSetDevice(device));
    status = elec__msm_anterpolation_plan(p, shape, max_atoms, device, &md->anterpolation, err);
    if (status != ELEC_OK) goto cleanup;
    ELEC__CUDA_TRY(cudaStreamCreateWithFlags(&md->stream, cudaStreamNonBlocking));
    ELEC__CUDA_ALLOC(md->block, elec__msm_device_layout(md, p, shape, NULL), md->stream);
    elec__msm_device_layout(md, p, shape, (char *)md->block);
    {
        float *next = md->lattices;
        for (int l = 0; l < shape->levels; l++) {
            md->q[l] = next;
            md->e[l] = next + elec__msm_shape_points(shape, l);
            next = md->e[l] + elec__msm_shape_points(shape, l);
            /* every level the same stencil, scaled: g_l(k 2^l h) = g_0(k h) / 2^l */
            md->stencil_of[l] = md->stencil;
            md->spans_of[l] = md->spans;
            md->radius_of[l] = radius;
            md->factor_of[l] = 1.0f / (float)(1L << l);
        }
    }
    ELEC__CUDA_TRY(cudaMemsetAsync(md->lattices, 0, 2 * md->points * sizeof(float), md->stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(md->stencil, host_stencil, side * side * side * sizeof(float),
                                   cudaMemcpyHostToDevice, md->stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(md->spans, host_spans, side * side * sizeof(int),
                                   cudaMemcpyHostToDevice, md->stream));
    /* (copies from pageable memory return once the host tables are
       staged: they may go at once) */
    for (; timed && md->timed < ELEC__MSM_MARKS; md->timed++)
        ELEC__CUDA_TRY(cudaEventCreate(&md->marks[md->timed]));
cleanup:
    if (md->timed < ELEC__MSM_MARKS) { /* partly made: not timed */
        for (int m = 0; m < md->timed; m++) cudaEventDestroy(md->marks[m]);
        md->timed = 0;
    }
    if (status != ELEC_OK) elec__msm_device_free(md);
    ELEC_FREE(host_stencil);
    ELEC_FREE(host_spans);
    return status;
}

/* Records mark `index` of a timed plan on its stream. */
#define ELEC__MSM_MARK(md, index)                                            \
    do {                                                                     \
        if ((md)->timed)                                                     \
            ELEC__CUDA_TRY(cudaEventRecord((md)->marks[index], (md)->stream)); \
    } while (0)

/* Which stages elec__msm_device_run enqueues. */
#define ELEC__MSM_UP 1     /* stage 1, anterpolation, and 2, restriction     */
#define ELEC__MSM_ACROSS 2 /* stage 3: every level's lattice cutoff, the top */
#define ELEC__MSM_DOWN 4   /* stage 4, prolongation                          */
#define ELEC__MSM_ALL 7

template <int S>
static elec_status elec__msm_device_stages(elec__msm_device *md, const float4 *d_atoms,
                                           size_t n, int which, elec_error *err) {
    elec_status status = ELEC_OK;
    const elec_msm_params &p = md->p;
    const elec__msm_shape &shape = md->shape;
    const elec__msm_basis_args b = elec__msm_basis_of((int)p.interpolation);
    const int top = shape.levels - 1;
    cudaStream_t stream = md->stream;
    elec__msm_level_args g[ELEC_MSM_MAX_LEVELS];
    for (int l = 0; l < shape.levels; l++)
        for (int axis = 0; axis < 3; axis++) {
            g[l].lo[axis] = (int)shape.lo[l][axis];
            g[l].n[axis] = shape.n[l][axis];
        }
    if (which & ELEC__MSM_UP) {
        if (n > 0) {
            status = elec__chargemap_enqueue(md->anterpolation, d_atoms, (int)n, md->q[0],
                                             stream, NULL, err);
            if (status != ELEC_OK) goto cleanup;
        }
        ELEC__MSM_MARK(md, 2);
        for (int l = 0; l < top; l++) {
            size_t count = elec__msm_shape_points(&shape, l + 1);
            elec__k_msm_restrict<S>
                <<<(unsigned)((count + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK), ELEC__MSM_BLOCK,
                   0, stream>>>(md->q[l + 1], g[l + 1], md->q[l], g[l], b);
            ELEC__CUDA_TRY(cudaGetLastError());
        }
        ELEC__MSM_MARK(md, 3);
    }
    if (which & ELEC__MSM_ACROSS) {
        for (int l = 0; l < top; l++) {
            dim3 grid((g[l].n[0] + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK, g[l].n[1], g[l].n[2]);
            elec__k_msm_lattice_cutoff<<<grid, ELEC__MSM_BLOCK, 0, stream>>>(
                md->e[l], md->q[l], g[l], md->stencil_of[l], md->spans_of[l], md->radius_of[l],
                md->factor_of[l]);
            ELEC__CUDA_TRY(cudaGetLastError());
        }
        ELEC__MSM_MARK(md, 4);
        {
            size_t count = elec__msm_shape_points(&shape, top);
            elec__k_msm_top<<<(unsigned)((count + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK),
                              ELEC__MSM_BLOCK, 0, stream>>>(
                md->e[top], md->q[top], g[top], p.spacing * (double)(1L << top),
                p.cutoff * (double)(1L << top), p.splitting);
            ELEC__CUDA_TRY(cudaGetLastError());
        }
        ELEC__MSM_MARK(md, 5);
    }
    if (which & ELEC__MSM_DOWN) {
        for (int l = top - 1; l >= 0; l--) {
            size_t count = elec__msm_shape_points(&shape, l);
            elec__k_msm_prolong<S>
                <<<(unsigned)((count + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK), ELEC__MSM_BLOCK,
                   0, stream>>>(md->e[l], g[l], md->e[l + 1], g[l + 1], b);
            ELEC__CUDA_TRY(cudaGetLastError());
        }
        ELEC__MSM_MARK(md, 6);
    }
cleanup:
    return status;
}

/* Stages (ELEC__MSM_UP | _ACROSS | _DOWN) for n atoms on the device, on
   the plan's stream, for the support of the interpolation (2 to 5 points
   each way: the template's compile-time basis width); marks 2 to 6 of a
   timed plan after anterpolation, restriction, lattice cutoff, top and
   prolongation. */
static elec_status elec__msm_device_run(elec__msm_device *md, const float4 *d_atoms,
                                        size_t n, int which, elec_error *err) {
    switch (elec_msm_support((int)md->p.interpolation)) {
    case 2: return elec__msm_device_stages<2>(md, d_atoms, n, which, err);
    case 3: return elec__msm_device_stages<3>(md, d_atoms, n, which, err);
    case 4: return elec__msm_device_stages<4>(md, d_atoms, n, which, err);
    default: return elec__msm_device_stages<5>(md, d_atoms, n, which, err);
    }
}

/* Stage 5 at the atoms: phi and grad phi from e_0, one thread per atom. */
static elec_status elec__msm_device_at_atoms(elec__msm_device *md, const float4 *d_atoms,
                                             int n, float *d_phi, float4 *d_grad,
                                             elec_error *err) {
    elec_status status = ELEC_OK;
    const elec__msm_basis_args b = elec__msm_basis_of((int)md->p.interpolation);
    const unsigned blocks = (unsigned)((n + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK);
    const float inv_h = (float)(1.0 / md->p.spacing);
    elec__msm_level_args g;
    for (int axis = 0; axis < 3; axis++) {
        g.lo[axis] = (int)md->shape.lo[0][axis];
        g.n[axis] = md->shape.n[0][axis];
    }
    switch (elec_msm_support((int)md->p.interpolation)) {
    case 2: elec__k_msm_at_atoms<2><<<blocks, ELEC__MSM_BLOCK, 0, md->stream>>>(
                d_atoms, n, md->e[0], g, inv_h, b, d_phi, d_grad); break;
    case 3: elec__k_msm_at_atoms<3><<<blocks, ELEC__MSM_BLOCK, 0, md->stream>>>(
                d_atoms, n, md->e[0], g, inv_h, b, d_phi, d_grad); break;
    case 4: elec__k_msm_at_atoms<4><<<blocks, ELEC__MSM_BLOCK, 0, md->stream>>>(
                d_atoms, n, md->e[0], g, inv_h, b, d_phi, d_grad); break;
    default: elec__k_msm_at_atoms<5><<<blocks, ELEC__MSM_BLOCK, 0, md->stream>>>(
                d_atoms, n, md->e[0], g, inv_h, b, d_phi, d_grad); break;
    }
    ELEC__CUDA_TRY(cudaGetLastError());
cleanup:
    return status;
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

/* Stage 5 over a map: map(p) += scale sum Phi e_0 at every map point, into
   the cutoff job's padded map, on the plan's stream (axis tables d_first,
   d_w: elec__msm_axis_table per axis, x then y then z). */
template <int S>
static elec_status elec__msm_interpolate_map(const elec__msm_device *md,
                                             const elec__cutoff_job &job,
                                             const elec_lattice *l, const int *d_first,
                                             const float *d_w, elec_error *err) {
    elec_status status = ELEC_OK;
    elec__msm_level_args g;
    const int nx = l->dims[0], ny = l->dims[1], nz = l->dims[2];
    dim3 grid((nx + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK, ny, nz);
    for (int axis = 0; axis < 3; axis++) {
        g.lo[axis] = (int)md->shape.lo[0][axis];
        g.n[axis] = md->shape.n[0][axis];
    }
    elec__k_msm_interpolate<S><<<grid, ELEC__MSM_BLOCK, 0, md->stream>>>(
        job.d_map, job.args.pitch, job.args.rows, nx, ny, nz, md->e[0], g, d_first,
        d_first + nx, d_first + nx + ny, d_w, d_w + (size_t)nx * 2 * S,
        d_w + (size_t)(nx + ny) * 2 * S, (float)md->p.scale);
    ELEC__CUDA_TRY(cudaGetLastError());
cleanup:
    return status;
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

/* Returns the first of the points it changed that came out past float's
   range (SIZE_MAX: none), for the map's check (elec__cutoff_first_bad). */
static size_t elec__msm_take_back_apply(const elec__msm_take_back *t, float *map) {
    size_t first_bad = SIZE_MAX;
    for (size_t c = 0; c < t->count; c++) {
        const size_t i = t->index[c];
        map[i] += t->value[c];
        if (!(map[i] - map[i] == 0.0f) && i < first_bad) first_bad = i;
    }
    return first_bad;
}

/* Float's share of the GPU's error for these atoms, `share`: the relative
   force error of float arithmetic (estimate.float_arithmetic: the
   handles, whose positions come in float) or of that and positions
   rounded here as well (estimate.float_floor, `rounded`).  A tolerance
   under 1.5 times it is refused, naming it.  Else *left is the tolerance
   a choice aims at beside it: what the share leaves of it, as independent
   errors add, sqrt(T^2 - share^2), where forces that nearly cancel raise
   the share (estimate.float_arithmetic over ELEC_SPME_GPU_FLOAT_FLOOR, as
   a crystal's near its sites: there a choice at the tolerance itself,
   with float's share added, reached 1.0e-4 at 1e-4); else the tolerance. */
static elec_status elec__cuda_float_share(const char *method, double tolerance, double share,
                                          int rounded, const elec_error_estimate *estimate,
                                          double *left, elec_error *err) {
    const int cancelling = estimate->float_arithmetic > ELEC_SPME_GPU_FLOAT_FLOOR;
    *left = tolerance;
    if (tolerance > 0.0 && tolerance < 1.5 * share)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "%s tolerance %g on the GPU: below what float allows for these atoms "
                          "(%s%s: relative force error about %.2g; 1.5 times that is the "
                          "least); use the CPU", method, tolerance,
                          rounded ? "their positions rounded to float, and float arithmetic"
                                  : "float arithmetic",
                          cancelling ? " on forces that nearly cancel" : "", share);
    if (cancelling && tolerance > share) *left = sqrt(tolerance * tolerance - share * share);
    return ELEC_OK;
}

/* A choice aimed beside float's share that failed: refused in words of
   the caller's tolerance (the resolve's own reason names the tolerance
   aimed at, and a prefix to it would pass the message's 255 characters). */
static elec_status elec__cuda_beside_float_failed(const char *method, double tolerance,
                                                  double share, double left,
                                                  elec_status status, elec_error *err) {
    return elec__fail(err, status, 0,
                      "%s tolerance %g on the GPU: float arithmetic on these atoms' forces, "
                      "which nearly cancel, errs about %.2g and leaves %.2g to the method, "
                      "which no choice meets; use the CPU", method, tolerance, share, left);
}

/* SPME's parameters on the GPU: elec_spme_params_resolve, float's share
   (elec__cuda_float_share; `rounded`: positions rounded to float by the
   call), and the choice made again where that share leaves less of the
   tolerance; the caller's tolerance is the one reported. */
static elec_status elec__cuda_spme_resolve(const elec_spme_params *params, const elec_box *box,
                                           const elec_atoms *atoms, int rounded,
                                           elec_spme_params *out, elec_error *err) {
    elec_spme_params aimed;
    elec_status status;
    double share, tolerance, left;
    if ((status = elec_spme_params_resolve(params, box, atoms, out, err)) != ELEC_OK)
        return status;
    share = rounded ? out->estimate.float_floor : out->estimate.float_arithmetic;
    tolerance = out->tolerance;
    if ((status = elec__cuda_float_share("SPME", tolerance, share, rounded, &out->estimate, &left,
                                         err)) != ELEC_OK ||
        left == tolerance)
        return status;
    if (params) aimed = *params;
    else memset(&aimed, 0, sizeof aimed);
    aimed.tolerance = left;
    if ((status = elec_spme_params_resolve(&aimed, box, atoms, out, err)) != ELEC_OK)
        return elec__cuda_beside_float_failed("SPME", tolerance, share, left, status, err);
    out->tolerance = tolerance;
    return ELEC_OK;
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

/* The bounds lo..hi widened to hold the atoms taken relative to
   reference: (min x) - reference is the least of x - reference, rounding
   being monotone, so this is the widening atom by atom would give. */
static void elec__msm_widen(const elec_atoms *atoms, const double reference[3], double lo[3],
                            double hi[3]) {
    double alo[3], ahi[3];
    if (atoms->count == 0) return;
    elec_atoms_bounds(atoms, alo, ahi);
    for (int axis = 0; axis < 3; axis++) {
        const double l = alo[axis] - reference[axis], h = ahi[axis] - reference[axis];
        lo[axis] = l < lo[axis] ? l : lo[axis];
        hi[axis] = h > hi[axis] ? h : hi[axis];
    }
}

/* What a map adds to the plan: the atoms (float4, relative to the map's
   centre, the reference), the hierarchy's shape over them and the map,
   the interpolation tables (per map axis, each index's first finest-lattice
   point and its 2s weights: x, then y, then z), the short range's cutoff
   job, and the map points atoms sit on (the coincident rule); host and
   device copies. */
typedef struct elec__msm_map_job {
    double reference[3];
    elec__msm_shape shape;
    elec__cutoff_job cutoff;
    elec__msm_take_back take_back;
    size_t n, axes;          /* atoms; nx + ny + nz                         */
    cudaStream_t stream;     /* the device copies': allocated and freed on it */
    float4 *host_atoms, *d_atoms;
    int *host_first, *d_first;
    float *host_w, *d_w;
} elec__msm_map_job;

static void elec__msm_map_free(elec__msm_map_job *job) {
    elec__cutoff_job_free(&job->cutoff);
    elec__msm_take_back_free(&job->take_back);
    if (job->d_atoms || job->d_first || job->d_w) {
        elec__cuda_free(job->d_atoms, job->stream);
        elec__cuda_free(job->d_first, job->stream);
        elec__cuda_free(job->d_w, job->stream);
        (void)cudaGetLastError();
    }
    ELEC_FREE(job->host_atoms);
    ELEC_FREE(job->host_first);
    ELEC_FREE(job->host_w);
    memset(job, 0, sizeof *job);
}

/* The host's part, before any device work: atoms, shape (refused past the
   kernels' 65535 blocks along y and z), tables, bins.  l is the whole
   map's lattice, slab the planes this call maps (l itself, or a slab of
   it: ">>slab" in elec.h): the reference and the hierarchy are the whole
   map's, so that slabs mapped apart interpolate from the same lattices;
   the tables, the short range and the map are the slab's. */
static elec_status elec__msm_map_prepare(elec__msm_map_job *job, const elec_atoms *atoms,
                                         const elec_lattice *l, const elec_lattice *slab,
                                         const elec_msm_params *p, elec_error *err) {
    const int s = elec_msm_support((int)p->interpolation);
    const int nx = l->dims[0], ny = l->dims[1], nz = slab->dims[2];
    elec_cutoff_params cp;
    elec_status status;
    double lo[3], hi[3];
    memset(job, 0, sizeof *job);
    job->n = atoms->count;
    job->axes = (size_t)nx + ny + nz;
    for (int axis = 0; axis < 3; axis++) {
        double half = 0.5 * (l->dims[axis] - 1) * l->spacing[axis];
        job->reference[axis] = l->origin[axis] + half;
        lo[axis] = -half;
        hi[axis] = half;
    }
    if (!(job->host_atoms = elec__cuda_gather_xyzq(atoms, job->reference)))
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory for atoms");
    elec__msm_widen(atoms, job->reference, lo, hi);
    status = elec__msm_shape_of(p, lo, hi, 0, ELEC__MSM_MAX_WORK_GPU, &job->shape, err);
    if (status != ELEC_OK) return status;
    if (job->shape.n[0][1] > 65535 || job->shape.n[0][2] > 65535 || ny > 65535 ||
        l->dims[2] > 65535)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "MSM on the GPU: at most 65535 map or lattice points "
                          "along y and z");
    job->host_first = (int *)ELEC_MALLOC(job->axes * sizeof *job->host_first);
    job->host_w = (float *)ELEC_MALLOC(job->axes * 2 * s * sizeof *job->host_w);
    if (!job->host_first || !job->host_w)
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory for MSM tables");
    elec__msm_axis_table(l, 0, job->reference[0], p, job->host_first, job->host_w);
    elec__msm_axis_table(l, 1, job->reference[1], p, job->host_first + nx,
                         job->host_w + (size_t)nx * 2 * s);
    elec__msm_axis_table(slab, 2, job->reference[2], p, job->host_first + nx + ny,
                         job->host_w + (size_t)(nx + ny) * 2 * s);
    memset(&cp, 0, sizeof cp);
    cp.scale = p->scale;
    cp.cutoff = p->cutoff;
    cp.kind = ELEC_CUTOFF_MSM;
    cp.splitting = p->splitting;
    if ((status = elec_cutoff_params_resolve(&cp, &cp, err)) != ELEC_OK) return status;
    /* msmpot's bins, made longer where a long cutoff would give a block
       more neighbour bins than the kernel takes (past a = 48 A or so) */
    while ((status = elec__cutoff_prepare(&job->cutoff, atoms, slab, &cp, err)) ==
               ELEC_ERR_UNSUPPORTED &&
           job->cutoff.args.neighbour_count == 0 && cp.bin_length < cp.cutoff) {
        elec__cutoff_job_free(&job->cutoff);
        cp.bin_length *= 1.25;
    }
    return status;
}

/* The atoms and tables to the device (the current one), on stream. */
static elec_status elec__msm_map_upload(elec__msm_map_job *job, int s, cudaStream_t stream,
                                        elec_error *err) {
    elec_status status = ELEC_OK;
    job->stream = stream;
    ELEC__CUDA_ALLOC(job->d_atoms, (job->n + 1) * sizeof(float4), stream);
    ELEC__CUDA_ALLOC(job->d_first, job->axes * sizeof(int), stream);
    ELEC__CUDA_ALLOC(job->d_w, job->axes * 2 * s * sizeof(float), stream);
    ELEC__CUDA_TRY(cudaMemcpyAsync(job->d_atoms, job->host_atoms, job->n * sizeof(float4),
                                   cudaMemcpyHostToDevice, stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(job->d_first, job->host_first, job->axes * sizeof(int),
                                   cudaMemcpyHostToDevice, stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(job->d_w, job->host_w, job->axes * 2 * s * sizeof(float),
                                   cudaMemcpyHostToDevice, stream));
cleanup:
    return status;
}

/* ---- MSM entry points */

/* The names of a timed map's stages, in order: the host's setup, the
   short range, the five stages, and the rest (copy back, the host's share). */
static const char *const elec__msm_stage_names[9] = {
    "setup",        "short range", "anterpolation", "restriction", "lattice cutoff",
    "top",          "prolongation", "interpolation", "copy back"};

ELEC_DEF elec_status elec_cuda_msm_map(const elec_atoms *atoms, const elec_lattice *lattice,
                                       const elec_msm_params *params, float *map,
                                       elec_error *err) {
    return elec_cuda_msm_map_timed(atoms, lattice, params, map, NULL, err);
}

/* An MSM map's planes on one device (elec__msm_map_prepare: lattice the
   whole map's, slab the planes mapped into map, lattice itself for a
   whole map): the plan, the stages, the host's share; *first_bad the
   first point of the slab past float's range (SIZE_MAX: none); times,
   where not NULL, the stages' (setup from `started`, the call's start;
   the caller sets the total). */
static elec_status elec__cuda_msm_map_on(const elec_atoms *atoms, const elec_lattice *lattice,
                                         const elec_lattice *slab, const elec_msm_params *p,
                                         int device, float *map, size_t *first_bad,
                                         elec_stage_times *times, double started,
                                         elec_error *err) {
    elec_status status;
    elec__msm_map_job job;
    elec__msm_device md;
    const int s = elec_msm_support((int)p->interpolation);
    size_t taken_back_bad; /* the first point past range the take-back made */

    memset(&job, 0, sizeof job);
    memset(&md, 0, sizeof md);
    *first_bad = SIZE_MAX;
    /* The host's part, the plan, the uploads; then the stages in order on
       the plan's stream (events between them when timed). */
    if ((status = elec__msm_map_prepare(&job, atoms, lattice, slab, p, err)) != ELEC_OK ||
        (status = elec__msm_device_setup(&md, p, &job.shape, job.n, device, times != NULL,
                                         err)) != ELEC_OK ||
        (status = elec__msm_map_upload(&job, s, md.stream, err)) != ELEC_OK)
        goto cleanup;
    if (times) {
        memset(times, 0, sizeof *times);
        ELEC__CUDA_TRY(cudaStreamSynchronize(md.stream));
        times->seconds[0] = elec__msm_clock() - started;
    }
    ELEC__MSM_MARK(&md, 0);
    /* Short range into the padded map (uploads the bins, one pass a layer). */
    if ((status = elec__cutoff_launch(&job.cutoff, md.stream, err)) != ELEC_OK) goto cleanup;
    ELEC__MSM_MARK(&md, 1);
    if ((status = elec__msm_device_run(&md, job.d_atoms, job.n, ELEC__MSM_ALL, err)) != ELEC_OK)
        goto cleanup;
    switch (s) {
    case 2: status = elec__msm_interpolate_map<2>(&md, job.cutoff, slab, job.d_first,
                                                  job.d_w, err); break;
    case 3: status = elec__msm_interpolate_map<3>(&md, job.cutoff, slab, job.d_first,
                                                  job.d_w, err); break;
    case 4: status = elec__msm_interpolate_map<4>(&md, job.cutoff, slab, job.d_first,
                                                  job.d_w, err); break;
    default: status = elec__msm_interpolate_map<5>(&md, job.cutoff, slab, job.d_first,
                                                   job.d_w, err); break;
    }
    if (status != ELEC_OK) goto cleanup;
    ELEC__MSM_MARK(&md, 7);
    /* the host's share of the short range, and the points where atoms sit,
       while the GPU works */
    if ((status = elec__cutoff_host_share(&job.cutoff, slab, map, err)) != ELEC_OK ||
        (status = elec__msm_take_back_find(atoms, slab, p, &job.take_back, err)) != ELEC_OK ||
        (status = elec__cutoff_finish(&job.cutoff, slab, map, md.stream, err)) != ELEC_OK)
        goto cleanup;
    taken_back_bad = elec__msm_take_back_apply(&job.take_back, map);
    ELEC__MSM_MARK(&md, 8);
    if (times) {
        float ms;
        ELEC__CUDA_TRY(cudaEventSynchronize(md.marks[8]));
        for (int m = 0; m < 7; m++) {
            ELEC__CUDA_TRY(cudaEventElapsedTime(&ms, md.marks[m], md.marks[m + 1]));
            times->seconds[m + 1] = 1e-3 * ms;
        }
    }
    *first_bad = elec__cutoff_first_bad(&job.cutoff, map, elec_lattice_size(slab),
                                        taken_back_bad);

cleanup:
    elec__msm_map_free(&job); /* on the plan's stream, before it goes */
    elec__msm_device_free(&md);
    return status;
}

/* An MSM map's slab (elec__slab_parts): every atom, the whole map's
   hierarchy built on each device (replicated, not divided, as
   elec_cpu_msm_map_slab does it), the short range and the interpolation
   of the slab's planes; the stage times of the slab of plane 0. */
static elec_status elec__cuda_msm_slab(const elec__slab_parts *j, const elec_lattice *slab,
                                       int first_slab, int device, float *map,
                                       size_t *first_bad, elec_error *err) {
    return elec__cuda_msm_map_on(j->atoms, j->lattice, slab, (const elec_msm_params *)j->params,
                                 device, map, first_bad, first_slab ? j->times : NULL,
                                 j->started, err);
}

ELEC_DEF elec_status elec_cuda_msm_map_timed(const elec_atoms *atoms,
                                             const elec_lattice *lattice,
                                             const elec_msm_params *params, float *map,
                                             elec_stage_times *times, elec_error *err) {
    elec_status status;
    elec_msm_params p;
    elec__slab_parts spread;
    int devices[ELEC__MAX_GPUS], device_count = 0, caller_device = 0;
    const int nx = lattice ? lattice->dims[0] : 0, ny = lattice ? lattice->dims[1] : 0,
              nz = lattice ? lattice->dims[2] : 0;
    const double started = elec__msm_clock();
    size_t first_bad = SIZE_MAX;

    if ((status = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return status;
    status = elec_lattice_check_points(lattice, params ? params->max_points : 0, err);
    if (status != ELEC_OK) return status;
    /* the very choice elec_cpu_msm_map makes for this lattice */
    status = elec_msm_params_resolve(params, (double)elec_lattice_size(lattice) /
                                                 (double)(atoms->count ? atoms->count : 1),
                                     &p, err);
    if (status != ELEC_OK) return status;
    if ((status = elec__msm_no_exclusions(&p, err)) != ELEC_OK) return status;
    if ((status = elec__cuda_msm_float_floor(&p, err)) != ELEC_OK) return status;
    if (!map) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "map is NULL");
    if (atoms->count > (size_t)INT_MAX / 2 || (size_t)nx + ny + nz > (size_t)INT_MAX / 16)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "MSM on the GPU: %zu atoms and %d + %d + %d map points along "
                          "the axes: at most %d and %d", atoms->count, nx, ny, nz,
                          INT_MAX / 2, INT_MAX / 16);
    status = elec__cuda_gpu_list(&p.gpus, devices, &device_count, err);
    if (status != ELEC_OK) return status;
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    if (device_count > 1) {
        memset(&spread, 0, sizeof spread);
        spread.atoms = atoms;
        spread.lattice = lattice;
        spread.params = &p;
        spread.map = map;
        spread.map_slab = elec__cuda_msm_slab;
        spread.times = times;
        spread.started = started;
        if (times) memset(times, 0, sizeof *times);
        status = elec__cuda_slabs(&spread, devices, device_count, &first_bad, err);
    } else {
        status = elec__cuda_msm_map_on(atoms, lattice, lattice, &p, devices[0], map,
                                       &first_bad, times, started, err);
    }
    cudaSetDevice(caller_device);
    if (status != ELEC_OK) return status;
    if (p.progress && p.progress(1.0, p.progress_user))
        return elec__fail(err, ELEC_ERR_CANCELLED, 0,
                          "MSM map cancelled by the progress callback");
    if (first_bad != SIZE_MAX)
        return elec__result_past_range("GPU MSM map", "point", first_bad, map[first_bad],
                                       "float", err);
    if (times) {
        /* the last stage is what the others leave of the call (spread over
           GPUs: the first GPU's stages, the whole call's total) */
        times->total = elec__msm_clock() - started;
        times->seconds[8] = times->total;
        for (int m = 0; m < 8; m++) times->seconds[8] -= times->seconds[m];
        for (int m = 0; m < 9; m++) times->name[m] = elec__msm_stage_names[m];
        times->count = 9;
    }
    elec__ok(err);
    return ELEC_OK;
}

/* The per-atom buffers of an energy call: one block on the device and its
   mirror on the host, in this order: float4 atoms (positions from the
   reference), local (from their cell's corner), grad, force (n + 1 each);
   float phi, short_range (n + 1 each); int cell (n + 1), start (cells + 1),
   coincident (1).  The uploads are atoms and local, then the ints; the
   download grad to short_range, then coincident. */
typedef struct elec__msm_energy_block {
    float4 *atoms, *local, *grad, *force;
    float *phi, *short_range;
    int *cell, *start, *coincident;
} elec__msm_energy_block;

static size_t elec__msm_energy_bytes(size_t n, size_t cells) {
    return 4 * (n + 1) * sizeof(float4) + 2 * (n + 1) * sizeof(float) +
           (n + 1 + cells + 1 + 1) * sizeof(int);
}

static void elec__msm_energy_layout(elec__msm_energy_block *b, void *base, size_t n,
                                    size_t cells) {
    b->atoms = (float4 *)base;
    b->local = b->atoms + n + 1;
    b->grad = b->local + n + 1;
    b->force = b->grad + n + 1;
    b->phi = (float *)(b->force + n + 1);
    b->short_range = b->phi + n + 1;
    b->cell = (int *)(b->short_range + n + 1);
    b->start = b->cell + n + 1;
    b->coincident = b->start + cells + 1;
}

/* What an energy adds to the plan: the atoms relative to the centre of
   their bounding box (the reference), sorted by cell (cells at least the
   cutoff long, order[k] the k-th atom's index), their buffers (host and
   device blocks), the short range's arguments, and sum q^2 of the float
   charges. */
typedef struct elec__msm_energy_job {
    elec__msm_shape shape;
    elec__msm_short_args sa;
    elec__msm_energy_block h, d;
    size_t n, cells, bytes, *order;
    void *host, *device;
    cudaStream_t stream;     /* the device block's: allocated and freed on it */
    double self;
} elec__msm_energy_job;

static void elec__msm_energy_free(elec__msm_energy_job *job) {
    if (job->device) {
        elec__cuda_free(job->device, job->stream);
        (void)cudaGetLastError();
    }
    ELEC_FREE(job->order);
    ELEC_FREE(job->host);
    memset(job, 0, sizeof *job);
}

/* The host's part: shape, positions (relative, then from each atom's cell
   corner), cells and the short range's arguments, in the host block. */
static elec_status elec__msm_energy_prepare(elec__msm_energy_job *job, const elec_atoms *atoms,
                                            const elec_msm_params *p, elec_error *err) {
    const size_t n = atoms->count;
    elec__msm_short_args *sa = &job->sa;
    double reference[3], lo[3], hi[3], cell_lo[3], cell_hi[3], *x = NULL, *q = NULL;
    int *start = NULL, *sorted_cell = NULL;
    elec_status status;
    memset(job, 0, sizeof *job);
    job->n = n;
    elec_atoms_bounds(atoms, lo, hi);
    const int levels = elec__msm_anchor(p, lo, hi, reference);
    for (int axis = 0; axis < 3; axis++) {
        cell_lo[axis] = lo[axis] - reference[axis];
        cell_hi[axis] = hi[axis] - reference[axis] + 1e-6;
        /* the atoms' box and the reference, as the CPU's energy lays it */
        lo[axis] = fmin(0.0, cell_lo[axis]);
        hi[axis] = fmax(0.0, hi[axis] - reference[axis]);
    }
    status = elec__msm_shape_of(p, lo, hi, levels, ELEC__MSM_MAX_WORK_GPU, &job->shape, err);
    if (status != ELEC_OK) return status;
    x = (double *)ELEC_MALLOC((3 * n + 1) * sizeof *x);
    q = (double *)ELEC_MALLOC((n + 1) * sizeof *q);
    if (!x || !q) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory for %zu atoms", n);
        goto cleanup;
    }
    {
        elec__pack to;
        memset(&to, 0, sizeof to);
        to.reference = reference;
        elec__pack_xyz(&to, x, q);
        elec__atoms_pack(atoms, &to, NULL); /* relative: nothing to refuse */
    }
    if ((status = elec__msm_cells(x, n, cell_lo, cell_hi, p->cutoff, sa->cells, &job->order,
                                  &start, &sorted_cell, err)) != ELEC_OK)
        goto cleanup;
    job->cells = (size_t)sa->cells[0] * sa->cells[1] * sa->cells[2];
    job->bytes = elec__msm_energy_bytes(n, job->cells);
    if (!(job->host = ELEC_MALLOC(job->bytes))) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory for %zu atoms", n);
        goto cleanup;
    }
    memset(job->host, 0, job->bytes);
    elec__msm_energy_layout(&job->h, job->host, n, job->cells);
    for (size_t k = 0; k < n; k++) {
        const size_t a = job->order[k];
        const int cell = sorted_cell[k];
        const int c[3] = {cell % sa->cells[0], cell / sa->cells[0] % sa->cells[1],
                          cell / sa->cells[0] / sa->cells[1]};
        double local[3];
        job->h.atoms[k] = make_float4((float)x[3 * a], (float)x[3 * a + 1],
                                      (float)x[3 * a + 2], (float)q[a]);
        for (int axis = 0; axis < 3; axis++)
            local[axis] = x[3 * a + axis] -
                          (cell_lo[axis] + c[axis] * (cell_hi[axis] - cell_lo[axis]) /
                                               sa->cells[axis]);
        job->h.local[k] = make_float4((float)local[0], (float)local[1], (float)local[2],
                                      (float)q[a]);
        job->self += (double)job->h.atoms[k].w * job->h.atoms[k].w; /* summed as the charges */
    }
    memcpy(job->h.cell, sorted_cell, n * sizeof(int));
    memcpy(job->h.start, start, (job->cells + 1) * sizeof(int));
    job->h.coincident[0] = INT_MAX; /* the least atom of a coincident pair, if any */
    elec__cutoff_coefficients(p->cutoff, p->splitting, sa->coeff);
    sa->order = p->splitting;
    for (int axis = 0; axis < 3; axis++)
        sa->length[axis] = (float)((cell_hi[axis] - cell_lo[axis]) / sa->cells[axis]);
    sa->cutoff2 = (float)(p->cutoff * p->cutoff);
    sa->inv_cutoff2 = (float)(1.0 / (p->cutoff * p->cutoff));
    sa->coincident2 = (float)(ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE);
    status = ELEC_OK;
cleanup:
    ELEC_FREE(x);
    ELEC_FREE(q);
    ELEC_FREE(start);
    ELEC_FREE(sorted_cell);
    return status;
}

/* One evaluation of elec_cuda_msm_energy (which checks its forces against
   the tolerance: elec__msm_energy_checked). */
static elec_status elec__cuda_msm_energy_once(const elec_atoms *atoms,
                                              const elec_msm_params *params, double *energy,
                                              double *forces, elec_error *err) {
    elec_status status;
    elec_msm_params p;
    elec__msm_device md;
    elec__msm_energy_job job;
    elec__msm_energy_block *h = &job.h, *d = &job.d;
    int devices[ELEC__MAX_GPUS], device_count = 0, caller_device = 0, n_int;
    double long_range = 0.0, short_range = 0.0;
    size_t n;

    memset(&md, 0, sizeof md);
    memset(&job, 0, sizeof job);
    if ((status = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return status;
    if ((status = elec_msm_params_resolve(params, 1.0, &p, err)) != ELEC_OK) return status;
    if ((status = elec__msm_no_exclusions(&p, err)) != ELEC_OK) return status;
    if ((status = elec__cuda_msm_float_floor(&p, err)) != ELEC_OK) return status;
    if (!energy) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "energy is NULL");
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

    /* The host's part, the plan, the uploads; then the stages, the
       interpolation at the atoms and the short range on the plan's
       stream, and the sums back. */
    if ((status = elec__msm_energy_prepare(&job, atoms, &p, err)) != ELEC_OK ||
        (status = elec__msm_device_setup(&md, &p, &job.shape, n, devices[0], 0, err)) !=
            ELEC_OK)
        goto cleanup;
    job.stream = md.stream;
    ELEC__CUDA_ALLOC(job.device, job.bytes, md.stream);
    elec__msm_energy_layout(d, job.device, n, job.cells);
    ELEC__CUDA_TRY(cudaMemcpyAsync(d->atoms, h->atoms, 2 * (n + 1) * sizeof(float4),
                                   cudaMemcpyHostToDevice, md.stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(d->cell, h->cell, (n + 1 + job.cells + 2) * sizeof(int),
                                   cudaMemcpyHostToDevice, md.stream));
    /* the kernels write n_int entries of grad to short_range, not their
       padding: zero the block so the one download reads no uninitialised
       byte (compute-sanitizer's initcheck) */
    ELEC__CUDA_TRY(cudaMemsetAsync(d->grad, 0, (size_t)((char *)d->cell - (char *)d->grad),
                                   md.stream));
    if ((status = elec__msm_device_run(&md, d->atoms, n, ELEC__MSM_ALL, err)) != ELEC_OK ||
        (status = elec__msm_device_at_atoms(&md, d->atoms, n_int, d->phi, d->grad, err)) !=
            ELEC_OK)
        goto cleanup;
    elec__k_msm_short<<<(n_int + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK, ELEC__MSM_BLOCK, 0,
                        md.stream>>>(d->local, d->start, d->cell, n_int, job.sa,
                                     d->short_range, d->force, d->coincident);
    ELEC__CUDA_TRY(cudaGetLastError());
    /* grad, force, phi and short_range back in one copy, then the flag */
    ELEC__CUDA_TRY(cudaMemcpyAsync(h->grad, d->grad, (size_t)((char *)d->cell - (char *)d->grad),
                                   cudaMemcpyDeviceToHost, md.stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(h->coincident, d->coincident, sizeof(int),
                                   cudaMemcpyDeviceToHost, md.stream));
    ELEC__CUDA_TRY(cudaStreamSynchronize(md.stream));
    if (h->coincident[0] != INT_MAX) {
        status = elec__name_atoms(elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                             "atom %zu and another coincide: their energy is "
                                             "infinite", job.order[h->coincident[0]]),
                                  err, job.order[h->coincident[0]], ELEC_NO_ATOM);
        goto cleanup;
    }
    /* E = 1/2 sum q_i (phi_long + phi_short) less each atom's own smooth
       part gamma(0)/a (elec_cpu_msm_energy); forces -q grad phi_long plus
       the pairs'. */
    for (size_t k = 0; k < n; k++) {
        const size_t a = job.order[k];
        const double q = h->atoms[k].w;
        long_range += q * h->phi[k];
        short_range += q * h->short_range[k];
        if (forces) {
            forces[3 * a] = p.scale * ((double)h->force[k].x - q * h->grad[k].x);
            forces[3 * a + 1] = p.scale * ((double)h->force[k].y - q * h->grad[k].y);
            forces[3 * a + 2] = p.scale * ((double)h->force[k].z - q * h->grad[k].z);
        }
    }
    *energy = p.scale * (0.5 * long_range + 0.5 * short_range -
                         0.5 * job.self * elec_msm_gamma(0.0, p.splitting) / p.cutoff);
    if ((status = elec__results_finite("GPU MSM", "energy", NULL, energy, 1, "float", err)) !=
            ELEC_OK ||
        (status = elec__results_finite("GPU MSM", "force component", NULL, forces, 3 * n,
                                       "float", err)) != ELEC_OK)
        goto cleanup;
    elec__ok(err);
    status = ELEC_OK;

cleanup:
    elec__msm_energy_free(&job); /* on the plan's stream, before it goes */
    elec__msm_device_free(&md);
    cudaSetDevice(caller_device);
    return status;
}

ELEC_DEF elec_status elec_cuda_msm_energy(const elec_atoms *atoms,
                                          const elec_msm_params *params, double *energy,
                                          double *forces, elec_error *err) {
    return elec__msm_energy_checked(elec__cuda_msm_energy_once, atoms, params, energy, forces,
                                    ELEC_MSM_GPU_TOLERANCE_FLOOR, err);
}

/* A level's values of the device lattices (float, q_l or e_l) into the
   lattices' array, in double. */
static void elec__msm_device_copy_level(const elec__msm_device *md, const float *host_lattices,
                                 int l, int potentials, elec_msm_lattices *out, double *to) {
    const size_t count = elec__msm_shape_points(&md->shape, l);
    const float *from = host_lattices + ((potentials ? md->e[l] : md->q[l]) - md->lattices);
    for (size_t i = 0; i < count; i++) to[out->first[l] + i] = from[i];
}

ELEC_DEF elec_status elec_cuda_msm_lattices(const elec_atoms *atoms, const double reference[3],
                                            const elec_msm_params *params,
                                            elec_msm_lattices *out, elec_error *err) {
    elec_status status;
    elec_msm_params p;
    elec__msm_shape shape;
    elec__msm_device md;
    int devices[ELEC__MAX_GPUS], device_count = 0, caller_device = 0;
    double ref[3], lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
    int levels = 0;
    float4 *host_atoms = NULL, *d_atoms = NULL, *host_grad = NULL, *d_grad = NULL;
    float *host_lattices = NULL, *host_phi = NULL, *d_phi = NULL;
    const int steps[3] = {ELEC__MSM_UP, ELEC__MSM_ACROSS, ELEC__MSM_DOWN};
    size_t n;

    memset(&md, 0, sizeof md);
    if ((status = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return status;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    memset(out, 0, sizeof *out);
    if ((status = elec_msm_params_resolve(params, 1.0, &p, err)) != ELEC_OK) return status;
    if ((status = elec__msm_no_exclusions(&p, err)) != ELEC_OK) return status;
    /* as elec_cpu_msm_lattices: a NaN reference passed every range test
       (NaN compares false) and gave NaN at every atom with ELEC_OK */
    for (int axis = 0; reference && axis < 3; axis++)
        if (!elec__finite(reference[axis]))
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "reference[%d] %g is not finite",
                              axis, reference[axis]);
    n = atoms->count;
    if (n > (size_t)INT_MAX / 2)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0, "%zu atoms: at most %d", n,
                          INT_MAX / 2);
    status = elec__cuda_gpu_list(&p.gpus, devices, &device_count, err);
    if (status != ELEC_OK) return status;
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    if (reference) {
        for (int axis = 0; axis < 3; axis++) ref[axis] = reference[axis];
    } else {
        elec_atoms_bounds(atoms, lo, hi);
        levels = elec__msm_anchor(&p, lo, hi, ref); /* the energy's */
        for (int axis = 0; axis < 3; axis++) lo[axis] = hi[axis] = 0.0;
    }
    if (!(host_atoms = elec__cuda_gather_xyzq(atoms, ref))) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory for atoms");
        goto cleanup;
    }
    elec__msm_widen(atoms, ref, lo, hi);
    if ((status = elec__msm_shape_of(&p, lo, hi, levels, ELEC__MSM_MAX_WORK_GPU, &shape, err)) !=
            ELEC_OK ||
        (status = elec__msm_lattices_alloc(&shape, n, out, err)) != ELEC_OK ||
        (status = elec__msm_device_setup(&md, &p, &shape, n, devices[0], 0, err)) != ELEC_OK)
        goto cleanup;
    host_lattices = (float *)ELEC_MALLOC(2 * md.points * sizeof(float));
    host_phi = (float *)ELEC_MALLOC((n + 1) * sizeof(float));
    host_grad = (float4 *)ELEC_MALLOC((n + 1) * sizeof(float4));
    if (!host_lattices || !host_phi || !host_grad) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory for the lattices");
        goto cleanup;
    }
    ELEC__CUDA_ALLOC(d_atoms, (n + 1) * sizeof(float4), md.stream);
    ELEC__CUDA_ALLOC(d_phi, (n + 1) * sizeof(float), md.stream);
    ELEC__CUDA_ALLOC(d_grad, (n + 1) * sizeof(float4), md.stream);
    ELEC__CUDA_TRY(cudaMemcpyAsync(d_atoms, host_atoms, n * sizeof(float4),
                                   cudaMemcpyHostToDevice, md.stream));
    /* up, across, down: the lattices after each (q, cutoff, e) */
    for (int step = 0; step < 3; step++) {
        double *to[3] = {out->q, out->cutoff, out->e};
        if ((status = elec__msm_device_run(&md, d_atoms, n, steps[step], err)) != ELEC_OK)
            goto cleanup;
        ELEC__CUDA_TRY(cudaMemcpyAsync(host_lattices, md.lattices,
                                       2 * md.points * sizeof(float), cudaMemcpyDeviceToHost,
                                       md.stream));
        ELEC__CUDA_TRY(cudaStreamSynchronize(md.stream));
        for (int l = 0; l < shape.levels; l++)
            elec__msm_device_copy_level(&md, host_lattices, l, step > 0, out, to[step]);
    }
    if (n > 0) {
        status = elec__msm_device_at_atoms(&md, d_atoms, (int)n, d_phi, d_grad, err);
        if (status != ELEC_OK) goto cleanup;
        ELEC__CUDA_TRY(cudaMemcpyAsync(host_phi, d_phi, n * sizeof(float),
                                       cudaMemcpyDeviceToHost, md.stream));
        ELEC__CUDA_TRY(cudaMemcpyAsync(host_grad, d_grad, n * sizeof(float4),
                                       cudaMemcpyDeviceToHost, md.stream));
        ELEC__CUDA_TRY(cudaStreamSynchronize(md.stream));
    }
    for (size_t i = 0; i < n; i++) {
        out->phi[i] = host_phi[i];
        out->grad[3 * i] = host_grad[i].x;
        out->grad[3 * i + 1] = host_grad[i].y;
        out->grad[3 * i + 2] = host_grad[i].z;
    }
    elec__ok(err);
    status = ELEC_OK;

cleanup:
    if (status != ELEC_OK) elec_msm_lattices_free(out);
    elec__cuda_free(d_atoms, md.stream); /* on the plan's stream, before it goes */
    elec__cuda_free(d_phi, md.stream);
    elec__cuda_free(d_grad, md.stream);
    elec__msm_device_free(&md);
    (void)cudaGetLastError();
    ELEC_FREE(host_atoms);
    ELEC_FREE(host_lattices);
    ELEC_FREE(host_phi);
    ELEC_FREE(host_grad);
    cudaSetDevice(caller_device);
    return status;
}

/* ------------------------------------------------------------------------- >>spme SPME */

/* Smooth particle mesh Ewald (Essmann et al. 1995; GPU layout after seed
   001, Harvey and De Fabritiis 2009).  One evaluation is two chains of
   kernels that run concurrently (one after the other where the grid
   would crowd L2: elec__spme_overlaps):

     reciprocal (caller's stream)      real space (the handle's side stream)
       spread charges on the grid        bin atoms into cells (atomics)
       R2C FFT (cuFFT)                   prefix sum of the cell counts
       solve: times theta, energy        scatter atoms in cell order
       C2R FFT (cuFFT)                   pairs within the cutoff, excluded
                                         pairs' correction
                        \---- join ----/
       gather: mesh forces + real-space forces, written once per atom
   (where the chains run one after the other on the caller's stream, the
   gather does the excluded pairs' correction itself:
   elec__k_spme_gather_finish).  The real space's steps are those of the
   neighbour list below.

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
#define ELEC__SPME_SUM_CHARGE2 3    /* sum q^2 (after sum q: the charge map
                                       writes the two)                        */
#define ELEC__SPME_SUM_EXCLUDED 4   /* -sum over excluded pairs q q erf/r     */
#define ELEC__SPME_SUM_COINCIDENT 5 /* pairs (seen from both atoms) closer than
                                       ELEC_COINCIDENT_DISTANCE, not excluded  */
#define ELEC__SPME_SUMS 8

/* Atoms a spreading slot of the gather scheme holds per grid cell: at 0.1
   atoms/A^3 and 1 A spacing a cell holds 0.1 atoms on average, so 4 leaves
   overflow (spread by atomics) to rare crowded cells. */
#define ELEC__SPME_CELL_CAPACITY 4

#define ELEC__SPME_BLOCK 256

/* The solve and the gather, which follow cuFFT's transforms, are launched
   by programmatic dependent launch (elec__launch) where the handle's pdl
   is set: their blocks are scheduled once the transform's blocks have
   exited, not after its completion has been processed.  H100, bench_spme
   --quick, three rounds alternating with the plain launches, steps from a
   graph, us:
   DHFR-size 61.0, 61.4, 61.0 -> 60.2, 60.2, 60.5; ApoA1-size 174.4,
   175.2, 173.8 -> 173.3, 173.7, 173.3; 1M atoms 1486.9, 1478.7, 1483.9 ->
   1480.3, 1478.6, 1483.5 (bench/RESULTS.md, 2026-12-06, 05:40 UTC on).
   The real space's pairs and finish are launched so too (elec__spme_real).
   -DELEC__SPME_PDL=0 launches them all in plain order. */
#ifndef ELEC__SPME_PDL
#define ELEC__SPME_PDL 1
#endif

/* Box and grid as the kernels take them. */
typedef struct elec__spme_geometry {
    int3 K;                /* grid points per axis                         */
    float3 length;         /* box edges (A)                                */
    float3 inv_length;     /* 1 / length                                   */
    float3 grid_per_length; /* K / L: d/dx = (K/L) d/du                     */
} elec__spme_geometry;

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
   [0, L), in [0, K): a fraction that rounds up to 1 (x just below 0 or L)
   gives u = K, point 0, which is where it belongs.  elec__spme_grid_point
   returns k0 = floor(u) and sets t = u - k0. */
__device__ __forceinline__ float elec__spme_grid_coordinate(float x, float inv_length,
                                                            int K) {
    /* explicit _rn operations: no contraction, so that every kernel that
       computes an atom's u gets the same bits (the charge map's stage 1
       computes a record once to choose its tiles and again to store it) */
    const float scaled = __fmul_rn(x, inv_length);
    const float f = __fsub_rn(scaled, floorf(scaled));
    const float u = __fmul_rn(f, (float)K);
    return u >= (float)K ? 0.0f : u;
}

__device__ __forceinline__ int elec__spme_grid_point(float x, float inv_length,
                                                     int K, float *t) {
    float u = elec__spme_grid_coordinate(x, inv_length, K);
    int k0 = (int)u;
    *t = u - (float)k0;
    return k0;
}

/* Lanes per atom in the spreading and gathering kernels (and the charge
   maps' lane kernels, up to order 10): one lane per x offset of the
   atom's order^3 stencil, rounded up to a power of two so that a group
   never straddles a warp (shuffle reductions). */
template <int ORDER> struct elec__spme_lanes {
    enum { value = ORDER <= 4 ? 4 : ORDER <= 8 ? 8 : 16 };
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

/* ------------------------------------------- spreading: the charge map */

/* The default spreading is a charge map (the charge-mapping section at the
   end of this file): B-splines of the SPME order on the periodic grid, q
   and q^2 summed by the kernel that reads the atoms, by the rung below
   (set it with -DELEC__SPME_CHARGEMAP_VARIANT=... to compare rungs:
   bench_spme's spread column shows the effect). */
#ifndef ELEC__SPME_CHARGEMAP_VARIANT
#define ELEC__SPME_CHARGEMAP_VARIANT ELEC_CHARGEMAP_FASTEST
#endif

/* The spread's rung for a handle of `order` whose real space runs beside
   the reciprocal chain (overlap) or after it: the charge map's default
   for the size (elec__chargemap_fastest), but pc-lanes at order 4 beside
   the real space.  There tile-binned's stage-2 blocks, about 40 KB of
   shared memory each (the column sum), take SMs from the pair kernel
   (the DHFR-size step from a graph, in an experiment copy, 64.7-64.8
   -> 77.0-77.4 us, H200, 2026-11-29, 21:37 UTC; with the tensor sum in
   its narrower windows, 60.0-60.4 -> 70.5-70.7 us, and ApoA1-size's
   165.8-166.0 -> 169.9-170.1, 2026-12-02; with its A and B zeroed
   whole, 60.2-60.3 -> 66.6-66.9 and 166.6-167.3 -> 170.1-170.5, though
   ApoA1-size's spread alone took 38.5-39.9 -> 26.1-26.2 us: bench_spme
   --quick, two rounds, H200, 2026-12-02, 13:36 UTC); ApoA1-size's step from
   a graph 188.7-189.0 -> 191.7-191.9 us, though its spread alone takes
   40.8-42.0 -> 29.5-29.9 us.  After the chain, and at order 6 beside it, the faster
   spread shortens the step: 1M atoms (216^3, order 4) 1816-1827 ->
   1726-1736 us from a graph; ApoA1-size water at order 6 on 112^3
   227.9-228.1 -> 205.4-206.8 us, DHFR-size's on 72^3 82.0-83.0 ->
   74.0-74.3 (bench_spme, H200, 2026-11-29, bench/RESULTS.md; the sparser
   grids of its table, where the charge map's default is pc-lanes, 0.8 %
   slower to 3 % faster by tile-binned).  At order 5 it depends on the
   size: beside the DHFR-size real space (few atoms an SM,
   elec__spme_few_atoms_an_sm) pc-lanes took the step from a graph from
   78.1-78.6 to 65.5 us, but at ApoA1 size from 183.0-183.4 to 188.3-188.4
   (bench_spme --peer, two rounds alternating, H200, bench/RESULTS.md,
   2026-12-01): pc-lanes at order 5 where the atoms are few.  Orders 7
   and 8 beside the real space follow order 6, not measured there.  The
   rung is the handle's, chosen at create: a compute of the reciprocal
   part alone, or a timed one (its stages in series), spreads by it too. */
static elec_chargemap_variant elec__spme_spread_rung(int order, int overlap, int few_atoms) {
    const elec_chargemap_variant asked = ELEC__SPME_CHARGEMAP_VARIANT;
    if (asked == ELEC_CHARGEMAP_FASTEST && overlap && (order == 4 || (order == 5 && few_atoms)))
        return ELEC_CHARGEMAP_PC_LANES;
    return asked;
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
   suffices.  Launched by PDL after the forward transform
   (ELEC__SPME_PDL): it waits for it before its first read. */
__global__ void __launch_bounds__(ELEC__SPME_BLOCK)
elec__k_spme_solve(cufftComplex *spectrum, const float *theta, int kx,
                   int count, double *sums) {
    const int half_x = kx / 2 + 1;
    double energy = 0.0;
    elec__wait_prior_grid();
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

/* The B-spline weights of the gather: elec_bspline_weights_float with a
   multiply by 1/m for each division by m.  A float division by 3 (or 5, 6,
   7) is correctly rounded, a sequence of about ten instructions with a
   slow path (div.rn.f32: twelve of them at order 4 for an atom's three
   axes, in each of its lanes); 1/m is a constant where the order is a
   template argument, so each becomes one multiply, and the weights move by
   float rounding (at most 6e-8 at order 4, 2.4e-7 at order 8), inside the
   float rounding the gather carries anyway.  The gather's registers went
   from 63 to 40 (order 4), and on an H200 (2026-11-29, bench_spme --quick,
   steps from a graph, four rounds) the step from 62.8-63.3 to 62.5-62.7 us
   at DHFR size, 181.5-182.2 to 179.4-180.5 at ApoA1 size, 1628-1636 to
   1614-1618 at 1M atoms.  The spreading kernels keep the divisions: with
   the multiplies in them too, the DHFR-size step took 64.1-64.8 us
   (pc-lanes then needs 32 registers instead of 40, so more of its blocks
   fit beside the pair kernel's: the likely cause, not profiled), though
   the 1M-atom step, whose tile-binned spread ran faster, took 1592-1602. */
#define ELEC__SPME_TIMES_RECIPROCAL(x, m) ((x) * (1.0f / (float)(m)))
__device__ __forceinline__ void elec__spme_gather_weights(int order, float t, float *w,
                                                          float *dw) {
    ELEC__BSPLINE_WEIGHTS(float, ELEC__SPME_TIMES_RECIPROCAL)
}

/* Forces (and potentials) from the convolved grid, Essmann eq. 4.9: lane
   jx of an atom's group (elec__spme_lanes) sums its x plane of the
   stencil,
       A  = sum wy wz conv,  By = sum dwy wz conv,  Bz = sum wy dwz conv,
   so that its share is phi = wx A, dE/du = (dwx A, wx By, wx Bz),
   returned as (dE/du, dE/dv, dE/dw, phi); zero for jx >= ORDER. */
template <int ORDER>
__device__ __forceinline__ float4 elec__spme_mesh_share(const float *conv, float4 a,
                                                        const elec__spme_geometry &g,
                                                        int jx) {
    float4 share = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (jx < ORDER) {
        float tx, ty, tz;
        float wx[ORDER], wy[ORDER], wz[ORDER], dwx[ORDER], dwy[ORDER], dwz[ORDER];
        int x0 = elec__spme_grid_point(a.x, g.inv_length.x, g.K.x, &tx);
        int y0 = elec__spme_grid_point(a.y, g.inv_length.y, g.K.y, &ty);
        int z0 = elec__spme_grid_point(a.z, g.inv_length.z, g.K.z, &tz);
        elec__spme_gather_weights(ORDER, tx, wx, dwx);
        elec__spme_gather_weights(ORDER, ty, wy, dwy);
        elec__spme_gather_weights(ORDER, tz, wz, dwz);
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
        share = make_float4(my_dw * sum_a, my_w * sum_y, my_w * sum_z, my_w * sum_a);
    }
    return share;
}

/* A group of `lanes` (a power of two up to 32, aligned in its warp):
   the sum of its lanes' v, on every lane.  Every lane of the warp calls
   it. */
__device__ __forceinline__ float4 elec__spme_group_sum(float4 v, int lanes) {
    for (int o = lanes / 2; o > 0; o >>= 1) {
        v.x += __shfl_xor_sync(0xffffffffu, v.x, o);
        v.y += __shfl_xor_sync(0xffffffffu, v.y, o);
        v.z += __shfl_xor_sync(0xffffffffu, v.z, o);
        v.w += __shfl_xor_sync(0xffffffffu, v.w, o);
    }
    return v;
}

/* The mesh force on atom a (unscaled) from its group's summed shares:
   -q dE/dr = -q (K/L) dE/du per axis. */
__device__ __forceinline__ float3 elec__spme_mesh_force(float4 a, const elec__spme_geometry &g,
                                                        float4 sum) {
    return make_float3(-a.w * g.grid_per_length.x * sum.x, -a.w * g.grid_per_length.y * sum.y,
                       -a.w * g.grid_per_length.z * sum.z);
}

/* Atom i's results written once: scale times its force, its potential
   unscaled (potential: only for the host API).  No atomics, no zeroing. */
__device__ __forceinline__ void elec__spme_write_atom(float *forces, float *potential, int i,
                                                      float scale, float3 force, float phi) {
    if (forces) {
        forces[3 * (size_t)i] = scale * force.x;
        forces[3 * (size_t)i + 1] = scale * force.y;
        forces[3 * (size_t)i + 2] = scale * force.z;
    }
    if (potential) potential[i] = phi;
}

/* The gather: a group of lanes an atom.  Lane 0 adds the real-space
   force of the atom where the real space's finish wrote it (real:
   unscaled force and potential, NULL without the real space) and writes
   scale (F_mesh + F_real) once: no atomics, no zeroing.  potential
   (unscaled, mesh + real + excluded) only for the host API.
   The atoms are taken in the order of the real-space list's slots where
   order is given (slot -> atom, -1 for padding; *used: the slots in use),
   else in the caller's: the slots are sorted by cell, so that an atom's
   neighbours in a warp read the same grid lines from L1, where atoms in
   a random order each read theirs from L2.  (Where the real space runs
   just before, elec__k_spme_gather_finish finishes it here instead.)
   Launched by PDL after the backward transform (ELEC__SPME_PDL), it
   reads the grid and the real space's results only past
   elec__wait_prior_grid; what it reads before is the caller's atoms and
   the list's order and slots in use (*used), which the update wrote
   before the real space's finish (joined before the gather) could
   begin. */
template <int ORDER>
__global__ void __launch_bounds__(ELEC__SPME_BLOCK)
elec__k_spme_gather(const float *conv, const float4 *xyzq, int n, const int *order,
                    const int *used, elec__spme_geometry g, const float4 *real, float scale,
                    float *forces, float *potential) {
    const int lanes = elec__spme_lanes<ORDER>::value;
    const int thread = blockIdx.x * blockDim.x + threadIdx.x;
    const int item = thread / lanes, jx = thread % lanes;
    int atom = -1;
    if (order)
        atom = item < *used ? order[item] : -1;
    else
        atom = item < n ? item : -1;
    float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f), mesh = a;
    if (atom >= 0) a = xyzq[atom];
    elec__wait_prior_grid();
    if (atom >= 0) mesh = elec__spme_mesh_share<ORDER>(conv, a, g, jx);
    mesh = elec__spme_group_sum(mesh, lanes);
    if (atom >= 0 && jx == 0) {
        float3 force = elec__spme_mesh_force(a, g, mesh);
        if (real) {
            const float4 r = real[atom];
            force = make_float3(force.x + r.x, force.y + r.y, force.z + r.z);
            mesh.w += r.w;
        }
        elec__spme_write_atom(forces, potential, atom, scale, force, mesh.w);
    }
}

/* -------------------------------------------------------- real space */

/* The real-space sum runs over a neighbour list that the handle keeps
   across computes (after the 32-atom tiles of OpenMM and the cluster
   pairs of GROMACS, Pall and Hess 2013; written for elec):

     clusters   the atoms sorted by cell, the box's cells (about 3 atoms
                each) grouped in tiles of 8 x 8 x 8 and ordered along a Z
                (Morton) curve within each tile; each tile's atoms start a
                new cluster of 32 (the last one padded), so that a
                cluster's bounding box lies within its tile.
     candidates for each i cluster, the atoms of the clusters j (with j's
                images that can be near, found axis by axis) whose boxes
                are closer than rlist = cutoff + skin to i's, j taken from
                the tiles around i's whose atoms' box is that close (the
                others skipped whole), and of those the atoms themselves
                within rlist of i's box (as OpenMM's interacting atoms), in
                tiles of 32.  Counted, then written (two passes of one
                kernel), so that only the list's total has a room.
     lists      for each i atom, its candidates within rlist of the atom
                itself, but itself and its excluded partners: a row per
                partner (the index of its position in pos, an image copy
                where the partner lies in another image of the box:
                elec__list_slot_images), the 32 atoms of a cluster side
                by side (stored a lane's 8 rows of a part together:
                elec__list_lane_at), as many rows as the cluster's
                longest list (itself and its exclusions counted) rounded
                up to 8.  Every pair is in both atoms' lists.  The pairs
                within rlist of an atom are 63 % within the cutoff (9 A,
                skin 1.5 A), where the 32 x 32 tiles of a cluster's
                candidates held 13 %.  Where the lists outgrow their room
                (atoms far denser somewhere than at create), the build
                says so and the candidates are evaluated whole, a lane
                testing its skips, correct and slower.
     buffer     the list holds while no atom has moved more than skin / 2
                since the build: a pair within the cutoff now was within
                cutoff + skin then.  Each compute first compares the atoms'
                positions with those of the build, on the device; a device
                flag asks for a rebuild.  The check and the build are one
                cooperative kernel whose build steps, parted by grid
                barriers, run only when the flag is up: no host
                synchronisation, and a captured graph replays right
                whichever way it goes.
     evaluation warps take even shares of the rows, in parts of 8 rows of
                one cluster; lane l follows atom l's list and sums its
                force and potential in registers, added to the atom once
                per run of parts.  Each pair is computed twice, once for
                each atom, with no atomics on j: against Newton's third
                law over 13 %-full tiles, the DHFR-size pair kernel went
                from 65.5 to 44.5 us (H200).
     exclusions not in the lists (where the candidates are evaluated whole,
                each lane skips them: elec__list_skips); the method's
                finish kernel corrects them (elec__k_spme_real_finish or
                elec__k_spme_gather_finish, elec__k_pmsm_short_finish).

   Positions are kept continuous between builds: each atom's given
   position plus the whole box lengths that bring it nearest its position
   at the build (ref, in the box), so an atom crossing the box edge
   neither breaks the list nor rebuilds it, and neither does an atom the
   caller wraps (elec__list_check_slot).

   The pair function is a template parameter: a functor with
       __device__ void operator()(float r2, float *g, float *f) const
   giving, for a pair at squared distance 0 < r2 < cutoff^2, the kernel
   g(r) of the potential between unit charges and f = -g'(r) / r (the pair
   adds q_j g to phi_i, q_i q_j g to the energy and q_i q_j f (r_i - r_j)
   to F_i), min_blocks, the pair kernel's blocks an SM (its launch
   bounds), and dealt, how its warps take their parts (0: even shares;
   elec__k_list_pairs).  The pair kernel calls it on every row of its lists, at r2
   clamped into [ELEC_COINCIDENT_DISTANCE^2, cutoff^2] (elec__list_part_rows),
   and keeps the result only for pairs within the cutoff: it must be
   finite over that whole range, the cutoff included, and have no side
   effects.  SPME's is elec__pair_erfc; periodic MSM's short range is
   elec__pair_msm. */

#define ELEC__LIST_CLUSTER 32
#define ELEC__LIST_TILE 8          /* cells per tile edge (3 bits of Z order) */
#define ELEC__LIST_TILE_CELLS 512
/* The list's device words (info). */
#define ELEC__LIST_BUILD 0         /* nonzero: the next compute rebuilds */
#define ELEC__LIST_REBUILDS 1      /* builds since create                */
#define ELEC__LIST_OVERFLOW 2      /* 1: the candidates outgrew
                                      entry_room; 2: a kept partner had no
                                      image copy (a guard that should
                                      never trip: elec__list_lane_entry).
                                      Either way the list is incomplete
                                      and is not evaluated              */
#define ELEC__LIST_SLOTS 3         /* atom slots in use (32 per cluster) */
#define ELEC__LIST_TILES 4         /* candidate tiles (32 entries each)   */
#define ELEC__LIST_BARRIER 5       /* 5 and 6: the update's grid barrier */
#define ELEC__LIST_ROWS 7          /* rows of the per-atom lists          */
#define ELEC__LIST_WHOLE 8         /* 1: the per-atom lists outgrew their
                                      room; the candidates are evaluated
                                      whole                             */
#define ELEC__LIST_BUILT_N 9       /* the atoms of the last build (-1:
                                      none yet); a compute of another n
                                      rebuilds (elec__k_list_update), so
                                      that a graph captured for one n
                                      stays right after computes of
                                      another                           */
#define ELEC__LIST_DEALT 10        /* 10 to 13: the items the heavy build
                                      steps have dealt (elec__list_deal) */
#define ELEC__LIST_DEALT_STEPS 4   /* steps 7, 9, 10 and 13              */
#define ELEC__LIST_PAIRS_DEALT 14  /* the parts a pair kernel has dealt
                                      (Pair::dealt > 0), zeroed by each
                                      compute's update                  */
#define ELEC__LIST_INFO 15
/* Rows of the per-atom lists in a part: the pair kernel deals the rows
   out in parts, each of one i cluster. */
#define ELEC__LIST_PART 8 /* two 16-byte loads a lane (elec__list_load_part) */
/* Warps that share the building of a cluster's lists (each a part of its
   candidates). */
#define ELEC__LIST_SHARES 8
/* Warps that share a cluster's candidate search (steps 7 and 9, each every
   ELEC__LIST_SEARCH_SHARES-th tile in reach) where the clusters times
   these are at most ELEC__LIST_SEARCH_ITEMS; one warp a cluster past it,
   where the clusters alone fill the grid (elec__list_plan).  One warp a
   cluster left most of a small handle's grid idle: at DHFR size 750
   warps of the update's 2,112 searched, each walking its 27 tiles in
   turn; shared by 8, the search's two steps went from 110 + 121 to
   49 + 52 us (H100).
   The limit can be set at compile time (the tests build one form with
   it at 1, so that both forms run). */
#define ELEC__LIST_SEARCH_SHARES 8
#ifndef ELEC__LIST_SEARCH_ITEMS
#define ELEC__LIST_SEARCH_ITEMS 32768
#endif

/* The list: its shape, fixed at create, and its device buffers (in the
   handle's workspace).  Passed to the kernels by value. */
typedef struct elec__list {
    float3 length, inv_length;   /* the box                               */
    int3 cells;                  /* cells per axis that hold atoms         */
    float3 cells_per_length;     /* cells / length                        */
    int3 tiles;                  /* tiles per axis (cells / 8, up)        */
    int3 reach;                  /* tiles each way that can be in reach   */
    int tile_count;
    int slots;                   /* room for atoms: max_atoms and each
                                    tile's padding, 32 per cluster        */
    int clusters;                /* slots / 32                            */
    int search_shares;           /* warps a cluster's search: 1 or
                                    ELEC__LIST_SEARCH_SHARES              */
    int entry_room;              /* j entries the list may hold            */
    int row_room;                /* rows of per-atom lists it may hold
                                    (a multiple of ELEC__LIST_PART)       */
    unsigned pad;                /* the padding entry: slot `slots`, kept
                                    far from every atom (pos, ref: -1e5 A
                                    each way), image 13 (no shift); a
                                    pair with it is never within rlist,
                                    so no step tests for it               */
    unsigned lane_pad;           /* the same in the per-atom lists, whose
                                    entries are positions in pos: `slots` */
    int image_base;              /* pos's first image copy: slots + 1     */
    int compact_room;            /* positions the per-atom lists name in
                                    16 bits (elec__list_compact): 65536   */
    int image_room;              /* image copies pos may hold: slots times
                                    the most an atom can need             */
    float image_reach;           /* an atom this near a face of the box
                                    (rlist and a margin) has a copy in the
                                    image beyond the opposite face
                                    (elec__list_slot_images)              */
    float cutoff2, rlist2, half_skin2;
    int *info;                   /* ELEC__LIST_INFO words                 */
    int *cell_count, *cell_start; /* per cell (tile x 512 + Z index)     */
    int *tile_total, *tile_start; /* per tile, padded to 32; + 1 start   */
    int *tile_atoms;             /* per tile: its atoms (before padding)   */
    int *atom_key, *atom_slot;   /* per atom: its cell, its slot in it    */
    int *order;                  /* slot -> atom (-1: padding)            */
    int *slot_of;                /* atom -> slot                          */
    float4 *ref;                 /* slot: position at the build, charge   */
    float4 *pos;                 /* slot: position now, charge; then the
                                    padding entry's, then the image copies
                                    (from image_base): an atom's position
                                    shifted by whole box lengths          */
    float4 *acc;                 /* slot: force (unscaled), potential     */
    int *cluster_tile;
    float4 *box_centre, *box_half; /* per cluster                         */
    float4 *tile_centre, *tile_half; /* per tile: its atoms' box          */
    int *entry_count, *entry_start; /* per i cluster (multiples of 32);
                                    starts + 1                            */
    int *search_count;           /* per cluster and search share: the
                                    share's candidates (a multiple of 32;
                                    with one share, entry_count alone)    */
    unsigned *entries;           /* the candidates: j slot << 5 | image
                                    (0 .. 26, 13: the box itself),
                                    pad: padding                          */
    unsigned *near_masks;        /* beside each 32 candidates (entries),
                                    for lane l of the i cluster: which of
                                    them lie within rlist of its atom
                                    (elec__list_near_mask), from step 10
                                    for step 13                          */
    int *share_count;            /* per cluster, share and lane: how many
                                    partners the share gives the atom     */
    int2 *image_of;              /* per slot: pos's index of its first
                                    image copy, and which images it has
                                    (elec__list_slot_images)              */
    int *image_count, *image_start; /* per cluster: its atoms' image copies;
                                    starts + 1                            */
    int2 *image_src;             /* per image copy (from image_base): its
                                    slot << 5 | image code (as unsigned),
                                    and its atom (elec__list_check_copy)  */
    int *row_count, *row_start;  /* per i cluster: rows of its atoms'
                                    lists (multiples of ELEC__LIST_PART);
                                    starts + 1                            */
    unsigned *lane_j;            /* row_room x 32: row r, lane l holds the
                                    next partner of i atom l of r's
                                    cluster (at elec__list_lane_at): its
                                    position's index in pos, the image
                                    applied (elec__list_lane_entry);
                                    lane_pad: padding.  In 16 bits an
                                    entry (unsigned short at the same
                                    index) where elec__list_compact     */
    int *part_cluster;           /* per part of ELEC__LIST_PART rows: its
                                    i cluster                             */
} elec__list;


/* The minimum image of a difference d in an orthorhombic box. */
__device__ __forceinline__ void elec__min_image(float *dx, float *dy, float *dz,
                                                const float3 &length, const float3 &inv_length) {
    *dx -= length.x * rintf(*dx * inv_length.x);
    *dy -= length.y * rintf(*dy * inv_length.y);
    *dz -= length.z * rintf(*dz * inv_length.z);
}

/* The image shift of j for an image code (ix + 1) + 3 (iy + 1) + 9 (iz + 1). */
__device__ __forceinline__ float3 elec__list_image(int code, const float3 &length) {
    return make_float3((float)(code % 3 - 1) * length.x, (float)((code / 3) % 3 - 1) * length.y,
                       (float)(code / 9 - 1) * length.z);
}

/* Position b in image `code`, its charge kept: b plus the image's shift,
   the one sum that makes a candidate's position at the build, an image
   copy (the build's and each check's) and, in the whole form, the pair
   kernel's partner, so that all of them agree to the bit. */
__device__ __forceinline__ float4 elec__list_in_image(const elec__list &L, float4 b, int code) {
    const float3 s = elec__list_image(code, L.length);
    return make_float4(b.x + s.x, b.y + s.y, b.z + s.z, b.w);
}

/* SPME's pair function: g = erfc(alpha r)/r, f = (g + 2 alpha/sqrt(pi)
   exp(-alpha^2 r^2)) / r^2.  erfc from elec_erfc_scaled_float (elec.h)
   times the exp(-alpha^2 r^2) the force needs anyway: a reciprocal, eight
   FMAs and one exp2 (MUFU.EX2, with the rsqrt and the reciprocal the
   three special-function operations of a pair).  The three are the bare
   SFU forms, flushing subnormals (arguments a pair never gives: r2 >=
   ELEC_COINCIDENT_DISTANCE^2, t's denominator in [1, 1 + alpha rc / 2],
   the exponent in [-alpha^2 rc^2 log2 e, 0]); rsqrtf, __fdividef and
   exp2f wrap each in a test, a select and a scale, which were 12 of the
   50 instructions of a pair (SASS of nvcc 13.0, sm_90). */
struct elec__pair_erfc {
    /* 4 blocks an SM of the pair kernel (registers at most 64), for the
       lanes' lists loaded a part ahead (elec__list_run_ahead): DHFR-size
       pairs 28.8-29.1 us; ahead at 5 blocks (48 registers) 29.9-30.3, as
       without it (30.0); 4 blocks without it 29.1-29.4, but ApoA1-size
       steps from a graph 177.9-178.4 against 172.5-172.6 ahead and
       173.2-174.1 at 5 (H100, bench/RESULTS.md, 2026-12-07, 09:06 UTC
       on).  Before it, 5 blocks an SM (registers at most 48).  With a
       branch around the pair function (before 2026-11-27): the part's
       loads all in flight took 85 registers, 2 blocks an SM, and the
       DHFR-size pairs ran in 55.3 us; at 4 and 6 blocks in 45.3 and 44.5,
       at 8 (32 registers) in 52.9 (H200).  Without it (elec__list_part_rows), a
       step from a graph on an H100 at 4 and 5 blocks an SM (one device
       call): DHFR-size 67.3 and 66.1 us, ApoA1-size 196.0 and 195.5, 1M
       atoms 1947 and 1969; at 6 (an earlier call, against 70.7 and 207.3
       as committed there) 68.3 and 201.5 (bench/RESULTS.md, 2026-11-27,
       20:13 UTC on).  Five then for DHFR-size.
       Not dealt (elec__k_list_pairs): dealt four at a time from a counter,
       SPME's pairs took 34.6-34.9 -> 38.0-38.1 us at DHFR size, its steps
       from a graph 62.8-63.1 -> 73.3-73.6 us, 180.5-180.9 -> 203.5-203.9
       at ApoA1 size and 1624-1630 -> 1841-1860 at 1M atoms (H200,
       bench_spme --quick, the ranges of three rounds alternating;
       bench/RESULTS.md, 2026-11-29, 11:48 UTC on) */
    enum { min_blocks = 4, dealt = 0 };
    float half_alpha;            /* alpha / 2: t = 1 / (1 + alpha r / 2)   */
    float alpha2_log2e;          /* alpha^2 log2(e)                        */
    float gauss;                 /* 2 alpha / sqrt(pi)                     */
    __device__ __forceinline__ void operator()(float r2, float *g, float *f) const {
        float inv_r = elec_rsqrt_sfu(r2), r = r2 * inv_r;
        float t = elec__rcp_sfu(fmaf(half_alpha, r, 1.0f));
        float e = elec__exp2_sfu(-alpha2_log2e * r2);
        float screened = e * elec_erfc_scaled_float(t) * inv_r;
        *g = screened;
        *f = fmaf(gauss, e, screened) * (inv_r * inv_r);
    }
};

/* A padding slot's position: far from the box and from every other slot
   (1e5 A apart), so that no pair with it is ever within a cutoff. */
__device__ __forceinline__ float4 elec__list_far(int p) {
    return make_float4(1e5f * (float)(1 + (p & 1023)), 1e5f * (float)(1 + ((p >> 10) & 1023)),
                       1e5f * (float)(1 + (p >> 20)), 0.0f);
}

/* Atom a wrapped into [0, L) by whole box lengths, in float: x - L
   floor(x / L) as one fused multiply-add, so that every later compute
   recovers the same position to the bit (elec__list_check_slot). */
__device__ __forceinline__ float4 elec__list_wrapped(float4 a, const elec__list &L) {
    return make_float4(fmaf(-L.length.x, floorf(a.x * L.inv_length.x), a.x),
                       fmaf(-L.length.y, floorf(a.y * L.inv_length.y), a.y),
                       fmaf(-L.length.z, floorf(a.z * L.inv_length.z), a.z), a.w);
}

/* A 3-bit value's bits spread three apart: one axis of a Z-order index. */
__device__ __forceinline__ int elec__list_spread3(int b) {
    return (b & 1) | ((b & 2) << 2) | ((b & 4) << 4);
}

/* Image copies.  A partner in another image of the box (its position
   shifted by s, whole box lengths an axis) is read from a copy of its
   position with s added, kept in pos past the slots: the per-atom lists
   hold positions' indices in pos, so that the pair kernel reads every
   partner as it is, with no shift to look up and add (a shared-memory
   load and three adds a row).  Which images an atom has: per axis, an
   offset of 0, +1 where it lies within image_reach of the lower face
   (only then can its copy one box length up come within rlist of an
   atom in the box), -1 where it lies that near the upper face; every
   combination of those but the box itself (at most 7 where each axis is
   at least 2 image_reach long; 11, 17 or 26 where one, two or three are
   shorter).  The build writes the copies from the positions at the
   build, each compute's check from the positions now.
   On an H200 (bench_spme --quick, two rounds alternating with the code
   before; bench/RESULTS.md, 2026-11-30, 00:04 UTC on), the pairs alone /
   a step from a graph: DHFR-size 34.6-34.8 -> 32.1-32.7 / 62.2 -> 60.3
   us, ApoA1-size 123.2-123.6 -> 109.4-109.5 / 179.2-179.3 -> 167.1-167.2
   us, 1M atoms 1078-1079 -> 954-955 / 1607-1608 -> 1468-1469 us;
   periodic MSM's steps 234.6-235.2 -> 233.2 and 590.3-590.5 -> 570.3-570.4
   us.  The cost: the check (a thread a copy, elec__list_check_copy)
   9.2-9.3 -> 10.2 us at ApoA1 size and 31.1-31.2 -> 35.9-36.0 at 1M
   atoms, the rebuild 4-5 % (305 -> 319 us, 701 -> 732 us, 6.19 -> 6.48
   ms), and the room: the most copies an atom can need, at every slot
   (elec__list_plan). */

/* One axis's offsets for an atom at x (at the build): bit k for an
   offset of k - 1 box lengths. */
__device__ __forceinline__ unsigned elec__list_axis_offsets(float x, float length, float reach) {
    return 2u | (x < reach ? 4u : 0u) | (x > length - reach ? 1u : 0u);
}

/* The images of a slot's atom at b (its position at the build) that a
   list may hold: 3 bits an axis (elec__list_axis_offsets), x in bits
   0-2, y in 3-5, z in 6-8; none for a padding slot. */
__device__ __forceinline__ unsigned elec__list_slot_images(const elec__list &L, float4 b,
                                                           bool atom) {
    if (!atom) return 0u;
    return elec__list_axis_offsets(b.x, L.length.x, L.image_reach) |
           elec__list_axis_offsets(b.y, L.length.y, L.image_reach) << 3 |
           elec__list_axis_offsets(b.z, L.length.z, L.image_reach) << 6;
}

/* How many copies a slot's images make: every combination of its
   offsets but the box itself. */
__device__ __forceinline__ int elec__list_image_copies(unsigned m) {
    return m ? __popc(m & 7u) * __popc((m >> 3) & 7u) * __popc(m >> 6) - 1 : 0;
}

/* Whether image `code` ((ix + 1) + 3 (iy + 1) + 9 (iz + 1), as
   elec__list_image) is among a slot's images m. */
__device__ __forceinline__ bool elec__list_has_image(unsigned m, int code) {
    return ((m >> (code % 3)) & (m >> (3 + (code / 3) % 3)) & (m >> (6 + code / 9)) & 1u) != 0u;
}

/* The place of image code's copy among the slot's copies, which lie in
   the order of their codes (the box itself, 13, has none): the images of
   m with a smaller code, z offset first, then y, then x. */
__device__ __forceinline__ int elec__list_image_rank(unsigned m, int code) {
    const int kx = code % 3, ky = (code / 3) % 3, kz = code / 9;
    const int nx = __popc(m & 7u), ny = __popc((m >> 3) & 7u);
    return nx * ny * __popc((m >> 6) & ((1u << kz) - 1u)) +
           nx * __popc((m >> 3) & ((1u << ky) - 1u)) + __popc(m & ((1u << kx) - 1u)) -
           (code > 13 ? 1 : 0);
}

/* An atom's position now (a, as given) shifted by the whole box lengths
   that bring it nearest its position at the build (r): see
   elec__list_check_slot. */
__device__ __forceinline__ float4 elec__list_now(const elec__list &L, float4 a, float4 r) {
    return make_float4(fmaf(L.length.x, rintf((r.x - a.x) * L.inv_length.x), a.x),
                       fmaf(L.length.y, rintf((r.y - a.y) * L.inv_length.y), a.y),
                       fmaf(L.length.z, rintf((r.z - a.z) * L.inv_length.z), a.z), a.w);
}

/* Step 0 for image copy k (not where a build is due): its atom's
   position now, as its slot's (elec__list_now), in the copy's image
   (elec__list_in_image, as the pair kernel formed it before the copies),
   so that the pairs' terms are the same to the bit.  A thread a copy, beside
   the slots' threads: with each slot's thread writing its own copies in
   turn, the DHFR-size check ended 7.7-11.7 us into a step from a graph,
   against 3.9-6.2 before the copies; a thread a copy, 4.4-6.5 (H200,
   bench/RESULTS.md, 2026-11-30, 00:04 UTC on). */
__device__ __forceinline__ void elec__list_check_copy(const elec__list &L, const float4 *xyzq,
                                                      int k) {
    const int2 src = L.image_src[k];
    const unsigned slot_code = (unsigned)src.x;
    const float4 now = elec__list_now(L, xyzq[src.y], L.ref[slot_code >> 5]);
    L.pos[L.image_base + k] = elec__list_in_image(L, now, (int)(slot_code & 31u));
}

/* Step 0, every compute, for slot p: its accumulator zeroed, and its
   atom's position now, shifted by the whole box lengths that bring it
   nearest its position at the build (ref), compared with that: past half
   the skin, the flag asks for a rebuild.  Unmoved, the shift is the
   build's (elec__list_wrapped: ref - a is m L to rounding, m = -floor(a
   / L) an integer, and fmaf(L, m, a) rounds as fmaf(-L, floor(a / L), a)
   did), so the positions are the build's to the bit; wrapped by the
   caller, the atom keeps its image.  A non-finite position (now or at
   the build) asks for a rebuild too: positions must be finite, and the
   compute that has one returns NaN, but a build that saw a NaN kept it
   as the atom's reference, every later displacement from it was NaN, no
   comparison was past half the skin, and the handle went on with a list
   built around nothing: good atoms afterwards got forces 5e-2 off
   (relative RMS) with ELEC_OK (an audit, bench/RESULTS.md, 2026-12-03).
   The shift is recovered rather than stored: 16 bytes a slot less to
   read every step.  With a build due already (first compute, new n,
   elec_cuda_spme_rebuild: `due`) the build writes the positions. */
__device__ __forceinline__ void elec__list_check_slot(const elec__list &L, const float4 *xyzq,
                                                      int p, bool due) {
    L.acc[p] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (due || p >= L.tile_start[L.tile_count]) return;
    int i = L.order[p];
    if (i < 0) return;
    float4 r = L.ref[p], now = elec__list_now(L, xyzq[i], r);
    L.pos[p] = now;
    float dx = now.x - r.x, dy = now.y - r.y, dz = now.z - r.z;
    if (!(fmaf(dx, dx, fmaf(dy, dy, dz * dz)) <= L.half_skin2)) L.info[ELEC__LIST_BUILD] = 1;
}

/* Build, step 1 (the cell counters were zeroed at create, then by step 2
   of the build before): atom i's cell (tile x 512 + Z index within the
   tile) and its slot in it. */
__device__ __forceinline__ void elec__list_count_atom(const elec__list &L, const float4 *xyzq,
                                                      int i) {
    float4 w = elec__list_wrapped(xyzq[i], L);
    int cx = min(max((int)(w.x * L.cells_per_length.x), 0), L.cells.x - 1);
    int cy = min(max((int)(w.y * L.cells_per_length.y), 0), L.cells.y - 1);
    int cz = min(max((int)(w.z * L.cells_per_length.z), 0), L.cells.z - 1);
    int tile = (cx >> 3) + L.tiles.x * ((cy >> 3) + L.tiles.y * (cz >> 3));
    int key = tile * ELEC__LIST_TILE_CELLS + (elec__list_spread3(cx & 7) |
                                              (elec__list_spread3(cy & 7) << 1) |
                                              (elec__list_spread3(cz & 7) << 2));
    L.atom_key[i] = key;
    L.atom_slot[i] = atomicAdd(&L.cell_count[key], 1);
    if (i == 0) L.info[ELEC__LIST_OVERFLOW] = 0; /* until this build overflows */
}

/* Inclusive prefix sum of v[0 .. n) in shared memory, in place
   (Hillis-Steele): thread t of a block of n has written v[t]; every
   thread calls it. */
__device__ __forceinline__ void elec__block_scan(int *v, int t, int n) {
    __syncthreads();
    for (int offset = 1; offset < n; offset <<= 1) {
        int add = t >= offset ? v[t - offset] : 0;
        __syncthreads();
        v[t] += add;
        __syncthreads();
    }
}

/* Step 2, a block of 512 (a thread per cell) for one tile: its cells'
   starts within the tile (a scan in v, shared memory of 512; the counts
   zeroed for the next build), its atoms, and their number rounded up to a
   cluster.  Every thread of the block calls it. */
__device__ __forceinline__ void elec__list_tile_cells(const elec__list &L, int tile, int *v) {
    const int t = threadIdx.x, cell = tile * ELEC__LIST_TILE_CELLS + t;
    const int count = L.cell_count[cell];
    v[t] = count;
    elec__block_scan(v, t, ELEC__LIST_TILE_CELLS);
    L.cell_start[cell] = v[t] - count;
    L.cell_count[cell] = 0;
    if (t == ELEC__LIST_TILE_CELLS - 1) {
        L.tile_atoms[tile] = v[t];
        L.tile_total[tile] = (v[t] + ELEC__LIST_CLUSTER - 1) & ~(ELEC__LIST_CLUSTER - 1);
    }
    __syncthreads(); /* v is the next tile's */
}

/* Step 4 (3 is the scan of the tiles' totals): atom i into its slot,
   shifted into the box; the first slot of each cluster notes its tile. */
__device__ __forceinline__ void elec__list_scatter_atom(const elec__list &L, const float4 *xyzq,
                                                        int i) {
    int key = L.atom_key[i], tile = key / ELEC__LIST_TILE_CELLS;
    int p = L.tile_start[tile] + L.cell_start[key] + L.atom_slot[i];
    float4 w = elec__list_wrapped(xyzq[i], L);
    L.order[p] = i;
    L.slot_of[i] = p;
    L.ref[p] = w;
    L.pos[p] = w;
    if ((p & (ELEC__LIST_CLUSTER - 1)) == 0) L.cluster_tile[p / ELEC__LIST_CLUSTER] = tile;
}

/* The box holding every lane's lo .. hi, for every lane of the warp: its
   centre and half extents. */
__device__ __forceinline__ void elec__list_warp_box(float lo[3], float hi[3], float4 *centre,
                                                    float4 *half) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
        for (int k = 0; k < 3; k++) {
            lo[k] = fminf(lo[k], __shfl_xor_sync(0xffffffffu, lo[k], o));
            hi[k] = fmaxf(hi[k], __shfl_xor_sync(0xffffffffu, hi[k], o));
        }
    *centre = make_float4(0.5f * (lo[0] + hi[0]), 0.5f * (lo[1] + hi[1]), 0.5f * (lo[2] + hi[2]),
                          0.0f);
    *half = make_float4(0.5f * (hi[0] - lo[0]), 0.5f * (hi[1] - lo[1]), 0.5f * (hi[2] - lo[2]),
                        0.0f);
}

/* Step 5, a warp for cluster c (of those in use): the padding slots of
   the cluster (past its tile's atoms) marked and put far away, the
   cluster's bounding box (padding left out; a cluster's first slot always
   holds an atom), and how many image copies its atoms have. */
__device__ __forceinline__ void elec__list_cluster_bounds(const elec__list &L, int c, int lane) {
    const int p = c * ELEC__LIST_CLUSTER + lane, tile = L.cluster_tile[c];
    const bool atom = p - L.tile_start[tile] < L.tile_atoms[tile];
    if (!atom) {
        float4 far = elec__list_far(p);
        L.order[p] = -1;
        L.pos[p] = far;
        L.ref[p] = far;
    }
    float4 a = L.ref[p], centre, half;
    float lo[3] = {atom ? a.x : 3e38f, atom ? a.y : 3e38f, atom ? a.z : 3e38f};
    float hi[3] = {atom ? a.x : -3e38f, atom ? a.y : -3e38f, atom ? a.z : -3e38f};
    int copies = elec__list_image_copies(elec__list_slot_images(L, a, atom));
    elec__list_warp_box(lo, hi, &centre, &half);
    for (int o = 16; o > 0; o >>= 1) copies += __shfl_xor_sync(0xffffffffu, copies, o);
    if (lane == 0) {
        L.box_centre[c] = centre;
        L.box_half[c] = half;
        L.image_count[c] = copies;
    }
}

/* The gap between two boxes along one axis (centre distance d, half
   extents summed h), never negative. */
__device__ __forceinline__ float elec__list_gap(float d, float h) {
    return fmaxf(fabsf(d) - h, 0.0f);
}

/* The images of a box along one axis (centre distance d, half extents
   summed h, box length length) whose gap on that axis alone is within
   rlist: bit k for an offset of k - 1 lengths. */
__device__ __forceinline__ unsigned elec__list_axis_images(float d, float h, float length,
                                                           float rlist2) {
    unsigned m = 0u;
    for (int k = 0; k < 3; k++) {
        const float g = elec__list_gap(d + (float)(k - 1) * length, h);
        if (g * g < rlist2) m |= 1u << k;
    }
    return m;
}

/* The a-th (from 0) offset set in a mask of elec__list_axis_images. */
__device__ __forceinline__ int elec__list_nth_image(unsigned m, int a) {
    for (int k = 0; k < 3; k++)
        if ((m >> k) & 1u) {
            if (a == 0) return k;
            a--;
        }
    return 1;
}

/* Step 6, a warp for tile t: the box of its atoms at the build, from its
   clusters' boxes (half extent -1: no atoms). */
__device__ __forceinline__ void elec__list_tile_bounds(const elec__list &L, int t, int lane) {
    const int first = L.tile_start[t] / ELEC__LIST_CLUSTER;
    const int end = L.tile_start[t + 1] / ELEC__LIST_CLUSTER;
    float lo[3] = {3e38f, 3e38f, 3e38f}, hi[3] = {-3e38f, -3e38f, -3e38f};
    float4 centre, half;
    for (int c = first + lane; c < end; c += 32) {
        const float4 m = L.box_centre[c], h = L.box_half[c];
        lo[0] = fminf(lo[0], m.x - h.x);
        lo[1] = fminf(lo[1], m.y - h.y);
        lo[2] = fminf(lo[2], m.z - h.z);
        hi[0] = fmaxf(hi[0], m.x + h.x);
        hi[1] = fmaxf(hi[1], m.y + h.y);
        hi[2] = fmaxf(hi[2], m.z + h.z);
    }
    elec__list_warp_box(lo, hi, &centre, &half);
    if (lane == 0) {
        L.tile_centre[t] = centre;
        L.tile_half[t] = first == end ? make_float4(-1.0f, -1.0f, -1.0f, 0.0f) : half;
    }
}

/* Whether tile u is empty or its atoms' box lies beyond rlist of a
   cluster's box (centre c, half extents h) in every image: by the
   minimum image of the centres, which gives the smallest gap.  The boxes
   are those of the atoms' positions at the build, so no rounding of the
   wrap can put an atom outside its tile's box. */
__device__ __forceinline__ bool elec__list_tile_far(const elec__list &L, int u, float4 c,
                                                    float4 h) {
    const float4 m = L.tile_centre[u], t = L.tile_half[u];
    if (t.x < 0.0f) return true;
    float dx = m.x - c.x, dy = m.y - c.y, dz = m.z - c.z;
    elec__min_image(&dx, &dy, &dz, L.length, L.inv_length);
    const float gx = elec__list_gap(dx, h.x + t.x), gy = elec__list_gap(dy, h.y + t.y),
                gz = elec__list_gap(dz, h.z + t.z);
    return fmaf(gx, gx, fmaf(gy, gy, gz * gz)) >= L.rlist2;
}

/* The tile coordinate of step k along an axis of n tiles from t: offsets
   -reach .. reach, wrapped; every tile once where they would repeat. */
__device__ __forceinline__ int elec__list_tile_at(int t, int k, int reach, int n) {
    if (2 * reach + 1 >= n) return k;
    int u = t - reach + k;
    return u < 0 ? u + n : u >= n ? u - n : u;
}

/* Whether i atom (slot, exclusions eb .. ee of excl_list) leaves out its
   candidate js with image code: itself in the box itself, and its
   excluded partners in any image (the finish kernel corrects the
   excluded pairs; the cutoff is within half the box, so only one image
   of a partner can be within the cutoff).  elec__list_excludes: the
   exclusions' part of that test, for the partners eb .. ee. */
__device__ __forceinline__ bool elec__list_excludes(int js, int eb, int ee,
                                                    const int *excl_list, const int *slot_of,
                                                    int n) {
    for (int x = eb; x < ee; x++) {
        const int partner = excl_list[x];
        if (partner < n && slot_of[partner] == js) return true;
    }
    return false;
}
__device__ __forceinline__ bool elec__list_skips(int js, unsigned code, int slot, int eb, int ee,
                                                 const int *excl_list, const int *slot_of,
                                                 int n) {
    return (js == slot && code == 13u) || elec__list_excludes(js, eb, ee, excl_list, slot_of, n);
}

/* The slots of an atom's first ELEC__LIST_HELD excluded partners (its
   exclusions eb .. ee), -1 past them: loaded once a share of step 13, so
   that elec__list_skips_held tests each kept candidate against registers
   rather than loading the partners and their slots again for each: for
   SPC/E water (two exclusions an atom) step 13 went from 294.5 to 153.0
   us at DHFR size, 717.7 to 345.3 us at ApoA1 size and 5.68 to 3.15 ms
   at 1M atoms, the whole build from 469 to 327 us, 1094 to 721 us and
   8.82 to 6.29 ms; random atoms without exclusions 317 -> 320 us and 713
   -> 706 us (H200, skin 1.5 A, medians of three rounds alternating with
   the code before; bench/RESULTS.md, 2026-11-29, 09:48 UTC on). */
#define ELEC__LIST_HELD 4
__device__ __forceinline__ void elec__list_hold_excluded(int *held, int eb, int ee,
                                                         const int *excl_list,
                                                         const int *slot_of, int n) {
#pragma unroll
    for (int k = 0; k < ELEC__LIST_HELD; k++) {
        const int partner = eb + k < ee ? excl_list[eb + k] : n;
        held[k] = partner < n ? slot_of[partner] : -1;
    }
}

/* elec__list_skips with the first ELEC__LIST_HELD exclusions' slots in
   held (elec__list_hold_excluded): the rest, if any, by the loop.  An
   atom without exclusions takes no compare of held. */
__device__ __forceinline__ bool elec__list_skips_held(int js, unsigned code, int slot,
                                                      const int *held, int eb, int ee,
                                                      const int *excl_list,
                                                      const int *slot_of, int n) {
    if (js == slot && code == 13u) return true;
    if (eb == ee) return false;
    bool held_hit = false;
#pragma unroll
    for (int k = 0; k < ELEC__LIST_HELD; k++) held_hit |= held[k] == js;
    return held_hit ||
           elec__list_excludes(js, eb + ELEC__LIST_HELD, ee, excl_list, slot_of, n);
}

/* Where a search share's candidates start in the list: its cluster's
   start and the earlier shares' counts. */
__device__ __forceinline__ int elec__list_search_base(const elec__list &L, int ci, int share) {
    int base = L.entry_start[ci];
    for (int q = 0; q < share; q++) base += L.search_count[ci * L.search_shares + q];
    return base;
}

/* The next tile step of a search share: k_x on by `by` (the shares),
   carried into k_y and k_z as a number written in digits of n_x, n_y (a
   few additions where a division and a modulo a tile would cost more than
   the step itself).  `by` is at most ELEC__LIST_SEARCH_SHARES; an n_x of
   1 carries `by` times. */
__device__ __forceinline__ void elec__list_step_on(int *kx, int *ky, int *kz, int by, int nx,
                                                   int ny) {
    *kx += by;
    while (*kx >= nx) {
        *kx -= nx;
        if (++*ky == ny) {
            *ky = 0;
            ++*kz;
        }
    }
}

/* Tile u's part of a search (steps 7 and 9): its clusters j, 32 at a
   time (a lane each), every image of j whose box is within rlist of i's
   box (centre c, half extents h); for each, its atoms within rlist of
   i's box, counted into count (WRITE 1: written from base + count). */
template <int WRITE>
__device__ __forceinline__ void elec__list_search_tile(const elec__list &L, int u, float4 c,
                                                       float4 h, int lane, int base,
                                                       int *count_io) {
    const unsigned below = (1u << lane) - 1u;
    int count = *count_io;
    const int first = L.tile_start[u] / ELEC__LIST_CLUSTER;
    const int end = L.tile_start[u + 1] / ELEC__LIST_CLUSTER;
    for (int c0 = first; c0 < end; c0 += 32) {
        const int cj = c0 + lane;
        const bool have = cj < end;
        float4 cc = make_float4(0.0f, 0.0f, 0.0f, 0.0f), hh = cc;
        if (have) {
            cc = L.box_centre[cj];
            hh = L.box_half[cj];
        }
        /* j's images that can be near, axis by axis (offsets 0, 1, 2 for
           -1, 0, +1 box lengths): one each in all but small boxes, where 27
           were tried for every j */
        const unsigned mx = elec__list_axis_images(cc.x - c.x, h.x + hh.x, L.length.x, L.rlist2);
        const unsigned my = elec__list_axis_images(cc.y - c.y, h.y + hh.y, L.length.y, L.rlist2);
        const unsigned mz = elec__list_axis_images(cc.z - c.z, h.z + hh.z, L.length.z, L.rlist2);
        const int nx = __popc(mx), ny = __popc(my), nz = __popc(mz);
        int options = have ? nx * ny * nz : 0, most = options;
        for (int o = 16; o > 0; o >>= 1)
            most = max(most, __shfl_xor_sync(0xffffffffu, most, o));
        for (int option = 0; option < most; option++) {
            int my_code = 13;
            if (option < options)
                my_code = elec__list_nth_image(mx, option % nx) +
                          3 * elec__list_nth_image(my, option / nx % ny) +
                          9 * elec__list_nth_image(mz, option / (nx * ny));
            const float3 sj = elec__list_image(my_code, L.length);
            float gx = elec__list_gap(cc.x + sj.x - c.x, h.x + hh.x);
            float gy = elec__list_gap(cc.y + sj.y - c.y, h.y + hh.y);
            float gz = elec__list_gap(cc.z + sj.z - c.z, h.z + hh.z);
            bool near = option < options && fmaf(gx, gx, fmaf(gy, gy, gz * gz)) < L.rlist2;
            unsigned hits = __ballot_sync(0xffffffffu, near);
            while (hits) {
                const int from = __ffs(hits) - 1;
                hits &= hits - 1u;
                const int hj = __shfl_sync(0xffffffffu, cj, from);
                const int code = __shfl_sync(0xffffffffu, my_code, from);
                const float3 s = elec__list_image(code, L.length);
                const int p = hj * ELEC__LIST_CLUSTER + lane;
                float4 a = L.ref[p];
                float ax = elec__list_gap(a.x + s.x - c.x, h.x);
                float ay = elec__list_gap(a.y + s.y - c.y, h.y);
                float az = elec__list_gap(a.z + s.z - c.z, h.z);
                bool in = L.order[p] >= 0 && fmaf(ax, ax, fmaf(ay, ay, az * az)) < L.rlist2;
                unsigned got = __ballot_sync(0xffffffffu, in);
                if (WRITE && in)
                    L.entries[base + count + __popc(got & below)] =
                        ((unsigned)p << 5) | (unsigned)code;
                count += __popc(got);
            }
        }
    }
    *count_io = count;
}

/* Steps 7 and 9, a warp for each search share of an i cluster (item =
   cluster x search_shares + share): of the tiles in reach (i's own among
   them), those whose atoms' box is within rlist of i's, searched by
   elec__list_search_tile: i's candidates.  SHARED 0 (one share a
   cluster): every tile, in three nested loops; SHARED 1: every
   search_shares-th from the share's, stepped by elec__list_step_on (one
   loop for both cost the one-share search of the 1M-atom build 15 % on
   an H100).  WRITE 0 counts the share's candidates (rounded up to 32:
   entry_count with one share, else search_count, which step 8 sums into
   entry_count); WRITE 1 writes them from the share's start
   (elec__list_search_base) and pads its last 32.  The order is the same
   in both passes.  A cluster's shares take the same overflow test (its
   whole count), so that none writes past the room. */
template <int WRITE, bool SHARED>
__device__ __forceinline__ void elec__list_search_share(const elec__list &L, int item,
                                                        int lane) {
    const int shares = SHARED ? L.search_shares : 1;
    const int ci = SHARED ? item / shares : item, share = item - ci * shares;
    int *const count_out = SHARED ? L.search_count + item : L.entry_count + ci;
    if (ci >= L.tile_start[L.tile_count] / ELEC__LIST_CLUSTER) {
        if (!WRITE && lane == 0) *count_out = 0;
        return;
    }
    if (WRITE && L.entry_start[ci] + L.entry_count[ci] > L.entry_room) {
        if (lane == 0) L.info[ELEC__LIST_OVERFLOW] = 1;
        return;
    }
    const int base = !WRITE   ? 0
                     : SHARED ? elec__list_search_base(L, ci, share)
                              : L.entry_start[ci];
    const float4 c = L.box_centre[ci], h = L.box_half[ci];
    const int tile = L.cluster_tile[ci];
    const int tx = tile % L.tiles.x, ty = (tile / L.tiles.x) % L.tiles.y,
              tz = tile / (L.tiles.x * L.tiles.y);
    const int kx_n = min(2 * L.reach.x + 1, L.tiles.x), ky_n = min(2 * L.reach.y + 1, L.tiles.y),
              kz_n = min(2 * L.reach.z + 1, L.tiles.z);
    int count = 0;
    if (SHARED) {
        int kx = share % kx_n, ky = share / kx_n % ky_n, kz = share / (kx_n * ky_n);
        for (; kz < kz_n; elec__list_step_on(&kx, &ky, &kz, shares, kx_n, ky_n)) {
            const int u = elec__list_tile_at(tx, kx, L.reach.x, L.tiles.x) +
                          L.tiles.x * (elec__list_tile_at(ty, ky, L.reach.y, L.tiles.y) +
                                       L.tiles.y * elec__list_tile_at(tz, kz, L.reach.z,
                                                                      L.tiles.z));
            if (!elec__list_tile_far(L, u, c, h))
                elec__list_search_tile<WRITE>(L, u, c, h, lane, base, &count);
        }
    } else {
        for (int kz = 0; kz < kz_n; kz++)
            for (int ky = 0; ky < ky_n; ky++)
                for (int kx = 0; kx < kx_n; kx++) {
                    const int ux = elec__list_tile_at(tx, kx, L.reach.x, L.tiles.x);
                    const int uy = elec__list_tile_at(ty, ky, L.reach.y, L.tiles.y);
                    const int uz = elec__list_tile_at(tz, kz, L.reach.z, L.tiles.z);
                    const int u = ux + L.tiles.x * (uy + L.tiles.y * uz);
                    if (!elec__list_tile_far(L, u, c, h))
                        elec__list_search_tile<WRITE>(L, u, c, h, lane, base, &count);
                }
    }
    const int padded = (count + ELEC__LIST_CLUSTER - 1) & ~(ELEC__LIST_CLUSTER - 1);
    if (!WRITE) {
        if (lane == 0) *count_out = padded;
    } else {
        for (int k = count + lane; k < padded; k += 32) L.entries[base + k] = L.pad;
    }
}

/* Where row r of lane l lies in lane_j: a part's 8 rows of a lane side by
   side (a sector), the part's 32 lanes after each other, so that the
   build's writes fill a lane's sector in turn and the pair kernel reads a
   lane's part with two 16-byte loads, the warp's 1 KB at once (row by
   row, [row][lane], the 1M-atom build's scattered 4-byte writes took
   18.5 ms). */
__device__ __forceinline__ size_t elec__list_lane_at(int r, int lane) {
    return ((size_t)(r / ELEC__LIST_PART) * ELEC__LIST_CLUSTER + (size_t)lane) *
               ELEC__LIST_PART + (size_t)(r % ELEC__LIST_PART);
}

/* A candidate's position at the build, its image applied. */
__device__ __forceinline__ float4 elec__list_candidate(const elec__list &L, unsigned e) {
    float4 c = elec__list_in_image(L, L.ref[e >> 5], (int)(e & 31u));
    c.w = 0.0f;
    return c;
}

/* Whether cluster ci is in use and its candidates were all written (not
   where the search overflowed). */
__device__ __forceinline__ bool elec__list_cluster_listed(const elec__list &L, int ci) {
    return ci < L.tile_start[L.tile_count] / ELEC__LIST_CLUSTER &&
           L.entry_start[ci] + L.entry_count[ci] <= L.entry_room;
}

/* Rows first .. stop - 1 of a lane's list, those of them in the chunk of
   ELEC__LIST_PART from row `base` (a part's 32 bytes for the lane:
   elec__list_lane_at), from the lane's staging (stage[r % 8]).  A whole
   chunk is two 16-byte stores, one sector; a row at a time, each 4-byte
   store of a warp touched 32 sectors.  Every index into stage is a
   constant once unrolled, so that the staging stays in registers. */
__device__ __forceinline__ void elec__list_flush(unsigned *lists, const unsigned *stage,
                                                 int lane, int base, int first, int stop,
                                                 bool compact) {
    if (compact) { /* 16 bits an entry (elec__list_compact) */
        unsigned short *chunk = (unsigned short *)lists + elec__list_lane_at(base, lane);
        if (first <= base && stop == base + ELEC__LIST_PART) {
            *(uint4 *)chunk = make_uint4(stage[0] | stage[1] << 16, stage[2] | stage[3] << 16,
                                         stage[4] | stage[5] << 16, stage[6] | stage[7] << 16);
        } else {
#pragma unroll
            for (int k = 0; k < ELEC__LIST_PART; k++)
                if (base + k >= first && base + k < stop) chunk[k] = (unsigned short)stage[k];
        }
        return;
    }
    unsigned *chunk = lists + elec__list_lane_at(base, lane);
    if (first <= base && stop == base + ELEC__LIST_PART) {
        ((uint4 *)chunk)[0] = make_uint4(stage[0], stage[1], stage[2], stage[3]);
        ((uint4 *)chunk)[1] = make_uint4(stage[4], stage[5], stage[6], stage[7]);
    } else {
#pragma unroll
        for (int k = 0; k < ELEC__LIST_PART; k++)
            if (base + k >= first && base + k < stop) chunk[k] = stage[k];
    }
}

/* Whether the per-atom lists hold their entries in 16 bits: every index
   in pos (the slots, the padding entry, the image copies of the last
   build) below compact_room (2^16; a test sets 0).  Known once step 8
   has scanned the copies; step 13 writes the lists so and the pair
   kernel reads them so, 8 entries in one 16-byte load a lane.  The lists
   are the step's largest read (48 MB at DHFR size, streamed from memory
   each step): in 16 bits the DHFR-size pairs took 29.9-30.1 us against
   32.7-32.8 and its step from a graph 60.9-61.1 against 62.6-62.9; but
   the systems past 2^16 positions, which keep 32 bits, lost a little
   (ApoA1-size's step 171.3-171.8 -> 174.5-174.7 us, 1M atoms' 1483-1484
   -> 1490-1497), and the DHFR-size rebuild rose 318 -> 329-332 us (H100,
   bench_spme --quick, three rounds alternating, bench/RESULTS.md,
   2026-12-05, 21:57 UTC on). */
__device__ __forceinline__ bool elec__list_compact(const elec__list &L) {
    return L.image_base + L.image_start[L.clusters] <= L.compact_room;
}

/* Which of 32 candidates (lane k holding candidate k's position b at
   the build) lie within rlist of this lane's atom (a, at the build): bit k
   for candidate k; none for a padding slot.  Every lane tests all 32
   without a branch, so that the warp stays converged: a branch and a
   convergence check for each candidate (its list entry passed round
   too) made 27 instructions a candidate of the lists' write (Nsight
   Compute, DHFR size), and the write ran 3 times the instructions of the
   count.  With the mask, on an H100: the lists' count 81 -> 44 us at DHFR
   size, 193 -> 131 at ApoA1 size, 1.74 -> 1.23 ms at 1M atoms; their
   write 272 -> 220 us, 662 -> 541 us, 6.7 -> 5.7 ms.  The candidates'
   padding entry lies far from every atom, so it is never near. */
__device__ __forceinline__ unsigned elec__list_near_mask(float4 a, float4 b, bool in_use,
                                                         float rlist2) {
    unsigned near = 0u;
#pragma unroll
    for (int k = 0; k < 32; k++) {
        const float dx = a.x - __shfl_sync(0xffffffffu, b.x, k);
        const float dy = a.y - __shfl_sync(0xffffffffu, b.y, k);
        const float dz = a.z - __shfl_sync(0xffffffffu, b.z, k);
        near |= (fmaf(dx, dx, fmaf(dy, dy, dz * dz)) < rlist2 ? 1u : 0u) << k;
    }
    return in_use ? near : 0u;
}

/* A lane's last ELEC__LIST_PART entries, oldest first: e shifted in at
   the end (moves between registers; an index known only at run time puts
   an array in local memory, and a select a word cost twice the
   instructions). */
__device__ __forceinline__ void elec__list_shift_in(unsigned *stage, unsigned e) {
#pragma unroll
    for (int k = 0; k < ELEC__LIST_PART - 1; k++) stage[k] = stage[k + 1];
    stage[ELEC__LIST_PART - 1] = e;
}

/* The shift register's last `held` entries moved to the front, the rest
   `pad`: the staging of a part's first rows (once a share, at its end),
   by shifting pad in 8 - held times (a shift by a count known only at run
   time put the register in local memory). */
__device__ __forceinline__ void elec__list_stage_front(unsigned *stage, int held, unsigned pad) {
#pragma unroll
    for (int step = 0; step < ELEC__LIST_PART; step++)
        if (step < ELEC__LIST_PART - held) elec__list_shift_in(stage, pad);
}

/* Step 11's second half, a warp for cluster c: its slots' image copies
   placed (image_of, from step 8's scan of the counts of step 5), their
   sources noted (image_src, for each compute's check) and the copies
   written from the positions at the build (pos is ref then, and each
   copy is its slot's position plus the shift, as elec__list_check_copy
   writes it); none for a cluster not in use (`used`: the clusters in
   use). */
__device__ __forceinline__ void elec__list_cluster_images(const elec__list &L, int c, int lane,
                                                          int used) {
    if (c >= used) return;
    const int p = c * ELEC__LIST_CLUSTER + lane;
    const float4 b = L.ref[p];
    const unsigned m = elec__list_slot_images(L, b, L.order[p] >= 0);
    const int copies = elec__list_image_copies(m);
    const int through = elec__warp_inclusive_sum(copies); /* this lane's and those before */
    int at = L.image_base + L.image_start[c] + through - copies;
    L.image_of[p] = make_int2(at, (int)m);
    if (copies == 0) return;
    /* the copies in the order of their codes: z offset, then y, then x,
       each loop over the offsets set alone (one or two copies for most
       atoms near a face) */
    for (unsigned z = m >> 6; z; z &= z - 1u)
        for (unsigned y = (m >> 3) & 7u; y; y &= y - 1u)
            for (unsigned x = m & 7u; x; x &= x - 1u) {
                const int code = (__ffs((int)x) - 1) + 3 * (__ffs((int)y) - 1) +
                                 9 * (__ffs((int)z) - 1);
                if (code == 13) continue; /* the box itself */
                L.image_src[at - L.image_base] =
                    make_int2((int)((unsigned)p << 5 | (unsigned)code), L.order[p]);
                L.pos[at++] = elec__list_in_image(L, b, code);
            }
}

/* A candidate (j's slot << 5 | image) as the per-atom lists hold it:
   the index in pos of j's position in that image, its slot for the box
   itself (13), else its copy; lane_pad where j has no such copy.  A
   candidate within rlist of an atom in the box always has it (the margin
   of image_reach, elec__list_plan); were one kept without it, step 13
   would mark the list overflowed (ELEC__LIST_OVERFLOW 2), evaluated by
   nothing and reported (elec_cuda_spme_energy), rather than evaluated
   wrong.  Candidates farther away (padding slots among them) may have
   none. */
__device__ __forceinline__ unsigned elec__list_lane_entry(const elec__list &L, unsigned e) {
    const int j = (int)(e >> 5), code = (int)(e & 31u);
    if (code == 13) return (unsigned)j;
    const int2 of = L.image_of[j];
    return elec__list_has_image((unsigned)of.y, code)
               ? (unsigned)(of.x + elec__list_image_rank((unsigned)of.y, code))
               : L.lane_pad;
}

/* Steps 10 and 13, a warp for each share (ELEC__LIST_SHARES of a cluster:
   its candidates' tiles dealt evenly), lane l for the cluster's atom l:
   of the share's candidates, those within rlist of the atom at the build
   (ref), less those it skips (elec__list_skips), in candidate order.
   Step 10 loads each 32 candidates' positions a lane each, the next 32's
   while these are tested, then passes them round (elec__list_near_mask);
   to write, the warp puts the 32 entries in shared memory (tile_entries,
   64 words of its own: the entries, then where each one's position lies
   in pos, elec__list_lane_entry, a lane each) and each lane steps
   through the candidates it keeps alone.  Stepping as a warp through
   every candidate some lane kept (with its entry passed round), 2/3 of
   them, 11 lanes of 32 busy on average, had taken 50 instructions a kept
   candidate (Nsight Compute, DHFR size); a lane alone, the lists' write
   went from 222 to 198 us at DHFR size, 546 to 498 us at ApoA1 size and
   5.7 to 5.1 ms at 1M atoms (H100).
   WRITE 0: how many, per lane (share_count; skips not taken off: a
   bound), each 32 candidates' mask kept for WRITE 1 (near_masks, 4 bytes
   an entry), which loads it rather than the candidates' positions and
   tests nothing again: the write went from 198 to 158 us at DHFR size,
   487 to 381 us at ApoA1 size and 5.14 to 3.90 ms at 1M atoms, and the
   whole build from 395 to 355 us, 1.03 to 0.93 ms and 9.61 to 8.36 ms
   (storing the masks cost step 10 6 % at ApoA1 size, nothing at the
   others; each step timed after its grid barrier, H200,
   bench/RESULTS.md, 2026-11-29, 07:54 UTC on).  WRITE 1: the atom's
   list, its shares one after the other from
   row_start, each padded to its bound, the last to the cluster's rows,
   the first noting the cluster's parts (part_cluster); or, where the
   lists outgrew their room (WHOLE, set by step 12), only the parts of the
   cluster's candidates.
   Each atom's list holds all its partners, so each pair is evaluated
   twice, once from each atom: no atomics on j, and lanes that each follow
   their own list stay busy where the cluster pairs' tiles kept 13 % of
   their lanes' pairs.  One warp a cluster left most of the GPU idle: the
   DHFR-size build spent 1.1 of its 1.4 ms here (H200).  The rows are
   written through the lane's staging, a part's 8 rows at once
   (elec__list_flush): WRITE 1 over 1M atoms went from 13.2 to 9.2 ms
   (H100).  The staging in 8 registers (elec__list_shift_in) rather than
   local memory: 1M atoms 8.8 -> 6.7 ms, ApoA1 size 0.85 -> 0.66 ms
   (H100; DHFR size 0.27 ms either way).  Staged in shared memory (18 KB
   a block) it took 11.0 ms for the whole build, but the 1M-atom step
   from a graph went from 2.53 to 2.68 ms (one run each; likely the
   update kernel's blocks, all resident at once, waiting longer for room
   beside the reciprocal chain's). */
template <int WRITE>
__device__ __forceinline__ void elec__list_share_rows(const elec__list &L, int item, int lane,
                                                      const int *excl_start,
                                                      const int *excl_list, int n,
                                                      unsigned *tile_entries) {
    unsigned stage[ELEC__LIST_PART]; /* the lane's last 8 entries (elec__list_shift_in) */
    const int ci = item / ELEC__LIST_SHARES, share = item % ELEC__LIST_SHARES;
    int *share_count = L.share_count + (size_t)ci * ELEC__LIST_SHARES * ELEC__LIST_CLUSTER + lane;
    if (!elec__list_cluster_listed(L, ci)) return; /* step 11 gives it no rows */
    const int base = L.entry_start[ci], tiles = L.entry_count[ci] / ELEC__LIST_CLUSTER;
    if (WRITE && L.info[ELEC__LIST_WHOLE]) {
        if (share == 0)
            for (int q = lane; q < tiles * ELEC__LIST_CLUSTER / ELEC__LIST_PART; q += 32)
                L.part_cluster[base / ELEC__LIST_PART + q] = ci;
        return;
    }
    const int t_first = tiles * share / ELEC__LIST_SHARES;
    const int t_end = tiles * (share + 1) / ELEC__LIST_SHARES;
    const int slot = ci * ELEC__LIST_CLUSTER + lane, atom = L.order[slot];
    const int eb = atom >= 0 ? excl_start[atom] : 0, ee = atom >= 0 ? excl_start[atom + 1] : 0;
    const float4 a = WRITE ? make_float4(0.0f, 0.0f, 0.0f, 0.0f) : L.ref[slot];
    const bool compact = WRITE && elec__list_compact(L);
    int row = 0, count = 0, held[ELEC__LIST_HELD];
#pragma unroll
    for (int k = 0; k < ELEC__LIST_PART; k++) stage[k] = L.lane_pad;
    if (WRITE) {
        elec__list_hold_excluded(held, eb, ee, excl_list, L.slot_of, n);
        row = L.row_start[ci];
        for (int q = 0; q < share; q++) row += share_count[q * ELEC__LIST_CLUSTER];
    }
    if (t_first < t_end) {
        size_t at = (size_t)base + (size_t)t_first * ELEC__LIST_CLUSTER + lane;
        unsigned next = L.entries[at];
        float4 next_b = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        unsigned next_near = 0u;
        if (WRITE)
            next_near = L.near_masks[at];
        else
            next_b = elec__list_candidate(L, next);
        for (int t = t_first; t < t_end; t++, at += ELEC__LIST_CLUSTER) {
            /* the next 32 candidates (WRITE: their masks) loaded while
               these are tested (WRITE: written) */
            const unsigned mine = next, kept_near = next_near;
            const float4 b = next_b;
            if (t + 1 < t_end) {
                next = L.entries[at + ELEC__LIST_CLUSTER];
                if (WRITE)
                    next_near = L.near_masks[at + ELEC__LIST_CLUSTER];
                else
                    next_b = elec__list_candidate(L, next);
            }
            if (!WRITE) {
                const unsigned near = elec__list_near_mask(a, b, atom >= 0, L.rlist2);
                L.near_masks[at] = near;
                count += __popc(near);
                continue;
            }
            const unsigned near = kept_near;
            tile_entries[lane] = mine;
            tile_entries[ELEC__LIST_CLUSTER + lane] = elec__list_lane_entry(L, mine);
            __syncwarp();
            for (unsigned kept = near; kept; kept &= kept - 1u) {
                const int k = __ffs(kept) - 1;
                const unsigned e = tile_entries[k], at_pos = tile_entries[ELEC__LIST_CLUSTER + k];
                if (elec__list_skips_held((int)(e >> 5), e & 31u, slot, held, eb, ee, excl_list,
                                          L.slot_of, n))
                    continue;
                /* a partner within rlist always has its copy (a guard:
                   elec__list_lane_entry) */
                if (at_pos == L.lane_pad) L.info[ELEC__LIST_OVERFLOW] = 2;
                const int r = row + count;
                elec__list_shift_in(stage, at_pos);
                if (r % ELEC__LIST_PART == ELEC__LIST_PART - 1)
                    elec__list_flush(L.lane_j, stage, lane, r - (ELEC__LIST_PART - 1), row, r + 1,
                                     compact);
                count++;
            }
            __syncwarp(); /* every lane done with the entries before the next 32 */
        }
    }
    if (!WRITE) {
        share_count[share * ELEC__LIST_CLUSTER] = count;
    } else {
        /* padded to the share's count (its skips were not taken off
           there), the last share to the cluster's rows */
        const int row0 = L.row_start[ci], rows = L.row_count[ci];
        const int bound = row + share_count[share * ELEC__LIST_CLUSTER];
        const int end = share == ELEC__LIST_SHARES - 1 ? row0 + rows : bound;
        const int done = row + count, chunk = done - done % ELEC__LIST_PART;
        /* the chunk holding `done`: its entries, then padding, in one flush
           (one 32-byte store where the chunk is this share's alone) */
        elec__list_stage_front(stage, done - chunk, L.lane_pad);
        if (chunk < end)
            elec__list_flush(L.lane_j, stage, lane, chunk, row, min(chunk + ELEC__LIST_PART, end),
                             compact);
        for (int r = 0; r < ELEC__LIST_PART; r++) stage[r] = L.lane_pad;
        for (int r = chunk + ELEC__LIST_PART; r < end; r += ELEC__LIST_PART)
            elec__list_flush(L.lane_j, stage, lane, r, r, min(r + ELEC__LIST_PART, end), compact);
        if (share == 0)
            for (int q = lane; q < rows / ELEC__LIST_PART; q += 32)
                L.part_cluster[row0 / ELEC__LIST_PART + q] = ci;
    }
}

/* Step 11, a warp for cluster ci: its rows, the longest of its atoms'
   lists (their shares summed) rounded up to a part; none for a cluster
   not in use. */
__device__ __forceinline__ void elec__list_cluster_rows(const elec__list &L, int ci, int lane) {
    int count = 0;
    if (elec__list_cluster_listed(L, ci))
        for (int q = 0; q < ELEC__LIST_SHARES; q++)
            count += L.share_count[((size_t)ci * ELEC__LIST_SHARES + q) * ELEC__LIST_CLUSTER +
                                   lane];
    for (int o = 16; o > 0; o >>= 1) count = max(count, __shfl_xor_sync(0xffffffffu, count, o));
    if (lane == 0)
        L.row_count[ci] = (count + ELEC__LIST_PART - 1) / ELEC__LIST_PART * ELEC__LIST_PART;
}

/* Step 8's first half, by one block where the search is shared: each
   cluster's candidates, its shares' counts summed (entry_count).  Every
   thread of the block calls it; the barrier makes the sums the scan's. */
__device__ __forceinline__ void elec__list_sum_search_shares(const elec__list &L) {
    for (int ci = threadIdx.x; ci < L.clusters; ci += blockDim.x) {
        int total = 0;
        for (int q = 0; q < L.search_shares; q++) total += L.search_count[ci * L.search_shares + q];
        L.entry_count[ci] = total;
    }
    __syncthreads();
}

/* Steps 3, 8 and 12: exclusive prefix sum of count[0 .. items) into
   start[0 .. items], by one block (items: thousands): each thread sums a
   contiguous run, the block scans the run sums (Hillis-Steele in
   run_sums, shared memory of blockDim.x), each thread writes its run's
   starts.  Every thread of the block calls it. */
__device__ __forceinline__ void elec__list_scan_block(const int *count, int *start, int items,
                                                      int *run_sums) {
    const int t = threadIdx.x, threads = blockDim.x;
    int per = (items + threads - 1) / threads;
    int first = min(t * per, items), last = min(first + per, items), s = 0;
    for (int i = first; i < last; i++) s += count[i];
    run_sums[t] = s;
    elec__block_scan(run_sums, t, threads);
    s = t > 0 ? run_sums[t - 1] : 0;
    for (int i = first; i < last; i++) {
        start[i] = s;
        s += count[i];
    }
    if (t == threads - 1) start[items] = run_sums[t];
    __syncthreads(); /* run_sums is the caller's again */
}

/* elec__list_take: the next item for the calling warp from a counter
   (lane 0's atomic, given to every lane).  elec__list_deal: the next of
   a build step's items, from the step's counter (zeroed as the build
   starts): warps that finish early take
   more, where a fixed round left a block's warps waiting at each grid
   barrier for its slowest (Nsight Compute, DHFR size: 30 % of the build's
   stall samples at block barriers; bench/RESULTS.md, 2026-11-29, 07:54
   UTC on).  Dealt so in steps 7, 9, 10 and 13, the whole build went from
   352 to 319 us at DHFR size, 930 to 717 us at ApoA1 size and 8.37 to
   6.21 ms at 1M atoms (H200, skin 1.5 A, medians of three rounds
   alternating with the code before, each step timed after its grid
   barrier; bench/RESULTS.md, 2026-11-29, 09:48 UTC on).  Every lane of
   the warp calls it. */
__device__ __forceinline__ int elec__list_take(int *counter, int lane) {
    int item = 0;
    if (lane == 0) item = atomicAdd(counter, 1);
    return __shfl_sync(0xffffffffu, item, 0);
}
__device__ __forceinline__ int elec__list_deal(const elec__list &L, int step, int lane) {
    return elec__list_take(L.info + ELEC__LIST_DEALT + step, lane);
}

/* sums[k] zeroed for each bit k of mask: the real space's sums zeroed by
   its chain's first kernel, the list's update, rather than by a memset
   before it (elec__spme_enqueue).  It runs before any PDL wait, so the
   update must never be launched by PDL: launched plain, it starts only
   once the previous compute's last adds are done. */
__device__ __forceinline__ void elec__zero_sums(double *sums, unsigned mask) {
    for (int k = 0; mask >> k; k++)
        if ((mask >> k) & 1u) sums[k] = 0.0;
}

/* The check and the build in one cooperative kernel (every block
   resident), its steps parted by grid barriers: the check over every
   slot, then, only where it (or the caller) raised the flag, steps 1 to
   13, each spread over the grid.  One launch where an earlier build was
   nine (a check and eight kernels that read the flag and returned, ~1.5
   us each on an H100 even in a graph).  SHARED_SEARCH: the search dealt
   to L.search_shares warps a cluster (elec__list_search_share).  The
   heavy steps' items go to warps from counters (elec__list_deal), the
   light steps' in a fixed round. */
#define ELEC__LIST_UPDATE_THREADS ELEC__LIST_TILE_CELLS /* step 2: a cell a thread */
template <bool SHARED_SEARCH>
__global__ void __launch_bounds__(ELEC__LIST_UPDATE_THREADS)
elec__k_list_update(elec__list L, const float4 *xyzq, int n, const int *excl_start,
                    const int *excl_list, double *sums, unsigned zero_sums) {
    __shared__ int v[2 * ELEC__LIST_UPDATE_THREADS]; /* scans (the first half); step 13 */
    const int lane = threadIdx.x & 31;
    const int thread = blockIdx.x * blockDim.x + threadIdx.x, threads = gridDim.x * blockDim.x;
    /* warps dealt round the blocks (warp w of block b is b + w x blocks),
       so that a few hundred clusters spread over every SM (the steps that
       deal their items in a fixed round: 5, 6 and 11) */
    const int warp = blockIdx.x + (threadIdx.x >> 5) * gridDim.x, warps = threads >> 5;
    unsigned *barrier = (unsigned *)(L.info + ELEC__LIST_BARRIER);
    /* a build is due where the flag is up or the list is another n's
       (BUILT_N is written only by elec__list_done, after this kernel) */
    const bool other_n = L.info[ELEC__LIST_BUILT_N] != n;
    const bool due = other_n || L.info[ELEC__LIST_BUILD];
    if (thread == 0) {
        L.info[ELEC__LIST_PAIRS_DEALT] = 0; /* for the pair kernel after it */
        elec__zero_sums(sums, zero_sums);
    }
    /* the slots, then the image copies of the last build (none where a
       build is due: it writes them) */
    const int checked = L.slots + (due ? 0 : L.image_start[L.clusters]);
    for (int p = thread; p < checked; p += threads)
        if (p < L.slots)
            elec__list_check_slot(L, xyzq, p, due);
        else
            elec__list_check_copy(L, xyzq, p - L.slots);
    elec__grid_barrier(barrier);
    if (!other_n && !*(volatile int *)(L.info + ELEC__LIST_BUILD)) return; /* the whole grid */
    /* the flag up for elec__list_done (no block reads it again here) */
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        L.info[ELEC__LIST_BUILD] = 1;
        for (int k = 0; k < ELEC__LIST_DEALT_STEPS; k++) /* read past a barrier */
            L.info[ELEC__LIST_DEALT + k] = 0;
    }
    for (int i = thread; i < n; i += threads) elec__list_count_atom(L, xyzq, i);
    elec__grid_barrier(barrier);
    for (int tile = blockIdx.x; tile < L.tile_count; tile += gridDim.x)
        elec__list_tile_cells(L, tile, v);
    elec__grid_barrier(barrier);
    if (blockIdx.x == 0) elec__list_scan_block(L.tile_total, L.tile_start, L.tile_count, v);
    elec__grid_barrier(barrier);
    for (int i = thread; i < n; i += threads) elec__list_scatter_atom(L, xyzq, i);
    elec__grid_barrier(barrier);
    const int used = L.tile_start[L.tile_count] / ELEC__LIST_CLUSTER;
    for (int c = warp; c < L.clusters; c += warps)
        if (c < used)
            elec__list_cluster_bounds(L, c, lane);
        else if (lane == 0)
            L.image_count[c] = 0; /* no atoms, no copies (step 8's scan) */
    elec__grid_barrier(barrier);
    for (int t = warp; t < L.tile_count; t += warps) elec__list_tile_bounds(L, t, lane);
    elec__grid_barrier(barrier);
    const int searches = L.clusters * L.search_shares;
    for (int s = elec__list_deal(L, 0, lane); s < searches; s = elec__list_deal(L, 0, lane))
        elec__list_search_share<0, SHARED_SEARCH>(L, s, lane);
    elec__grid_barrier(barrier);
    if (blockIdx.x == 0) {
        if (SHARED_SEARCH) elec__list_sum_search_shares(L);
        elec__list_scan_block(L.entry_count, L.entry_start, L.clusters, v);
        elec__list_scan_block(L.image_count, L.image_start, L.clusters, v);
    }
    elec__grid_barrier(barrier);
    for (int s = elec__list_deal(L, 1, lane); s < searches; s = elec__list_deal(L, 1, lane))
        elec__list_search_share<1, SHARED_SEARCH>(L, s, lane);
    elec__grid_barrier(barrier);
    const int shares = L.clusters * ELEC__LIST_SHARES;
    for (int s = elec__list_deal(L, 2, lane); s < shares; s = elec__list_deal(L, 2, lane))
        elec__list_share_rows<0>(L, s, lane, excl_start, excl_list, n, NULL);
    elec__grid_barrier(barrier);
    for (int c = warp; c < L.clusters; c += warps) {
        elec__list_cluster_rows(L, c, lane);
        elec__list_cluster_images(L, c, lane, used);
    }
    elec__grid_barrier(barrier);
    if (blockIdx.x == 0) {
        elec__list_scan_block(L.row_count, L.row_start, L.clusters, v);
        if (threadIdx.x == 0) L.info[ELEC__LIST_WHOLE] = L.row_start[L.clusters] > L.row_room;
    }
    elec__grid_barrier(barrier);
    for (int s = elec__list_deal(L, 3, lane); s < shares; s = elec__list_deal(L, 3, lane))
        elec__list_share_rows<1>(L, s, lane, excl_start, excl_list, n,
                                 (unsigned *)v + 2 * (threadIdx.x & ~31)); /* free after step 12 */
}

/* Two atoms at one place (closer than ELEC_COINCIDENT_DISTANCE) and not an
   excluded pair: their energy is infinite.  The real-space kernels leave
   such a pair out rather than turn it into inf and NaN, and count it in a
   register; each thread adds its count once at the end (an atomic in the
   pair loop slows the loop by half), so that elec_cuda_spme_energy reports
   it as the CPU paths do (seen from both atoms: 2 per pair). */
#define ELEC__COINCIDENT2_FLOAT ((float)(ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE))
__device__ __forceinline__ bool elec__spme_coincident(float r2) {
    return r2 < ELEC__COINCIDENT2_FLOAT;
}

/* The evaluation: a grid of warps (resident ones, elec__list_pair_grid,
   or as a method sets it, e.g. elec__spme_pair_blocks), each taking an even
   share of the rows of the per-atom lists (or its parts dealt from a
   counter: Pair::dealt, elec__k_list_pairs), in parts of ELEC__LIST_PART
   rows of one i cluster.  Lane l holds i atom l of the part's cluster;
   row r gives it its r-th partner j (slot, image s): d = r_i - (r_j + s),
   and within the cutoff F_i += q_i q_j f d, phi_i += q_j g (q_i taken
   out of the sum: elec__list_lane_flush).
   The partner's own sums come from its own list, so nothing is added to
   j: i's sums stay in registers over the warp's run of parts of one
   cluster and go to acc (zeroed by the check) where the cluster changes,
   by an atomic (a cluster's parts may be split between warps).  The
   lanes run their own lists side by side: the warp steps as long as its
   longest list, of which the rest are 90 % or so (uniform atoms).
   Excluded pairs are not in the lists; the method's finish kernel
   corrects them. */

/* Sums added to a slot's accumulator: one vector atomic on sm_90. */
__device__ __forceinline__ void elec__list_add(float4 *acc, float4 v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    atomicAdd(acc, v);
#else
    atomicAdd(&acc->x, v.x);
    atomicAdd(&acc->y, v.y);
    atomicAdd(&acc->z, v.z);
    atomicAdd(&acc->w, v.w);
#endif
}

/* A lane's i atom and its sums over a warp's run of parts of one
   cluster: fi holds sum q_j f d and phi, and q_i multiplies the force
   once, where the run's sums go to acc (elec__list_lane_flush), not at
   every pair. */
typedef struct elec__list_lane {
    int ci, slot, eb, ee, coincident;
    float4 a, fi;
} elec__list_lane;

/* A run's sums added to its slot's accumulator: fi holds (F_i / q_i,
   phi_i), and acc takes (F_i, phi_i). */
__device__ __forceinline__ void elec__list_lane_flush(const elec__list &L,
                                                      const elec__list_lane *w) {
    const float qi = w->a.w;
    elec__list_add(&L.acc[w->slot], make_float4(qi * w->fi.x, qi * w->fi.y, qi * w->fi.z,
                                                w->fi.w));
}

/* One part's rows for one lane, its 8 partners at j (32-byte aligned):
   the lane's own list (elec__list_lane_at), or, WHOLE, the cluster's
   candidates, the same for every lane, of which a pair within the cutoff
   is tested against the lane's skips (itself, its exclusions).  Padding
   is a far atom, not a branch, so the part's loads can all be issued
   ahead of its pairs.  The rows are read as streaming (__ldcs: evict
   first from L2): read once a step, and nearly the whole L2 at DHFR
   size already (48 of the H100's 50 MB), they would otherwise push out
   what the step reads again (positions, the charge grid, the FFT's
   data); a step from a graph on an H100: DHFR-size 77.5 -> 71.4 us,
   ApoA1-size 221.5 -> 217.9, 1M atoms 2388 -> 2291 (bench/RESULTS.md,
   2026-11-26).
   Every row runs the pair function, at r2 clamped into
   [ELEC_COINCIDENT_DISTANCE^2, cutoff^2], and only the pairs within the
   cutoff (and not coincident) add to the sums: a warp ran the function
   anyway wherever one of its 32 lanes had a pair within (58 % of the
   rows' pairs are), and a row without a branch lets the compiler issue
   the next row's partner load inside this one (SASS, nvcc 13.0).  With
   the branch around the function each row waited on its own partner;
   without it (and five blocks an SM, elec__pair_erfc) a step from a
   graph on an H100 went from 70.9 to 66.1 us at DHFR size, 207.8 to 195.5 at ApoA1
   size, 2086 to 1969 at 1M atoms (bench/RESULTS.md, 2026-11-27, 20:13
   UTC on).  SPME's and MSM's sums need no clamp (the selects drop every
   pair outside it, coincident pairs included), but without it SPME's
   steps were slower: 63.3-63.4 -> 64.1 us at DHFR size, 1.63-1.64 -> 1.67
   ms at 1M atoms (H200, bench/RESULTS.md, 2026-11-29, 05:47 UTC on). */
__device__ __forceinline__ float elec__list_clamped(float r2, float cutoff2) {
    return fminf(fmaxf(r2, ELEC__COINCIDENT2_FLOAT), cutoff2);
}
/* A part's 8 entries for one lane as loaded: one 16-byte load of 16-bit
   entries (COMPACT) or two of 32-bit ones (lo, hi), read streaming (the
   comment above).  The load is apart from the sums because the pairs
   wait on their loads (14 % of the DHFR-size stall samples on a part's
   first entry: bench/RESULTS.md, 2026-11-27, 06:29 UTC), so that a run
   can load the next part's words during this part's sums
   (elec__list_run_ahead). */
typedef struct elec__list_part_words {
    uint4 lo, hi;
} elec__list_part_words;

template <bool COMPACT>
__device__ __forceinline__ elec__list_part_words elec__list_load_part(const unsigned *j) {
    elec__list_part_words h;
    h.lo = __ldcs((const uint4 *)j);
    h.hi = COMPACT ? make_uint4(0u, 0u, 0u, 0u) : __ldcs((const uint4 *)j + 1);
    return h;
}

/* The part's loaded words as its 8 entries, row by row. */
template <bool COMPACT>
__device__ __forceinline__ void elec__list_part_entries(elec__list_part_words h,
                                                        unsigned e[ELEC__LIST_PART]) {
    if (COMPACT) {
        const unsigned two[4] = {h.lo.x, h.lo.y, h.lo.z, h.lo.w};
#pragma unroll
        for (int k = 0; k < 4; k++) {
            e[2 * k] = two[k] & 0xffffu;
            e[2 * k + 1] = two[k] >> 16;
        }
    } else {
        e[0] = h.lo.x; e[1] = h.lo.y; e[2] = h.lo.z; e[3] = h.lo.w;
        e[4] = h.hi.x; e[5] = h.hi.y; e[6] = h.hi.z; e[7] = h.hi.w;
    }
}

/* One part's rows for one lane, from its loaded words h. */
template <bool WHOLE, bool COMPACT, class Pair>
__device__ __forceinline__ void elec__list_part_rows(const elec__list &L,
                                                     elec__list_part_words h,
                                                     const float4 *image_shift, const Pair &pair,
                                                     float coincident2, const int *excl_list,
                                                     int n, elec__list_lane *w) {
    unsigned e[ELEC__LIST_PART];
    elec__list_part_entries<COMPACT>(h, e);
#pragma unroll
    for (int r = 0; r < ELEC__LIST_PART; r++) {
        /* the per-atom lists give the partner's position in its image
           (elec__list_lane_entry); the candidates, its slot and image */
        const float4 s = WHOLE ? image_shift[e[r] & 31u] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        const float4 b = L.pos[WHOLE ? e[r] >> 5 : e[r]];
        const float4 a = w->a;
        const float dx = WHOLE ? a.x - (b.x + s.x) : a.x - b.x;
        const float dy = WHOLE ? a.y - (b.y + s.y) : a.y - b.y;
        const float dz = WHOLE ? a.z - (b.z + s.z) : a.z - b.z;
        const float r2 = fmaf(dx, dx, fmaf(dy, dy, dz * dz));
        bool within = r2 < L.cutoff2;
        if (WHOLE && within)
            within = !elec__list_skips((int)(e[r] >> 5), e[r] & 31u, w->slot, w->eb, w->ee,
                                       excl_list, L.slot_of, n);
        /* coincident2 <= cutoff2: a coincident pair is within, and where no
           skip applies its count takes one test (the partner counts it
           too: 2 a pair).  Counted before as within && coincident in
           both forms, the SPME pair kernel took 20.75M instructions at
           DHFR size, then 20.35M (and no longer spilled 12 bytes); its steps
           from a graph went from 65.1 to 64.2-64.5 us at DHFR size, 188.4
           to 185.3-186.0 at ApoA1 size and 1676 to 1645 at 1M atoms (H200,
           bench/RESULTS.md, 2026-11-29, 03:24 UTC on).  The host refuses a cutoff that
           is not finite and positive, so coincident2 is a number. */
        const bool coincident = r2 < coincident2;
        w->coincident += WHOLE ? within && coincident : coincident;
        float g, f;
        pair(elec__list_clamped(r2, L.cutoff2), &g, &f);
        if (within && !coincident) { /* selects, not a branch */
            const float q = b.w * f;
            w->fi.x = fmaf(q, dx, w->fi.x);
            w->fi.y = fmaf(q, dy, w->fi.y);
            w->fi.z = fmaf(q, dz, w->fi.z);
            w->fi.w = fmaf(b.w, g, w->fi.w);
        }
    }
}

/* A lane's move to cluster c within a run: the sums so far added to the
   slot it leaves, its new i atom loaded and its sums zeroed. */
template <bool WHOLE>
__device__ __forceinline__ void elec__list_lane_enter(const elec__list &L, int c, int lane,
                                                      const int *excl_start,
                                                      elec__list_lane *w) {
    if (w->ci >= 0) elec__list_lane_flush(L, w);
    w->ci = c;
    w->slot = c * ELEC__LIST_CLUSTER + lane;
    w->a = L.pos[w->slot];
    w->fi = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (WHOLE) {
        const int atom = L.order[w->slot];
        w->eb = atom >= 0 ? excl_start[atom] : 0;
        w->ee = atom >= 0 ? excl_start[atom + 1] : 0;
    }
}

/* Where part q's rows for a lane begin: the cluster's candidates (WHOLE,
   every lane alike) or the lane's own list. */
template <bool WHOLE, bool COMPACT>
__device__ __forceinline__ const unsigned *elec__list_part_at(const elec__list &L, int q,
                                                              int lane) {
    const int row = q * ELEC__LIST_PART;
    return WHOLE     ? L.entries + row
           : COMPACT ? (const unsigned *)((const unsigned short *)L.lane_j +
                                          elec__list_lane_at(row, lane))
                     : L.lane_j + elec__list_lane_at(row, lane);
}

/* A warp's run of parts, first to last, in one form of the lists.  The
   kernel picks the form once for each run (once a warp with even shares,
   once a take where its parts are dealt), and each form is a loop of
   its own.  With the choice made at every part (until 3b23496) the
   compiler merged the two forms' code: the DHFR-size pair kernel issued
   20.36M instructions, 19.67M with the whole form compiled out (Nsight
   Compute, H200).  With a loop a form and q_i out of the sum
   (elec__list_lane_flush), SPME's DHFR-size pairs took 32.2-32.5 us
   against 33.5-33.8 in one call, and in another (the whole form then
   apart, below) its steps from a graph went from 64.5-65.1 to 62.9-63.2
   us at DHFR size, 184.9-185.4 to 181.3-181.8 at ApoA1 size.  MSM's pair
   kernel now spills 44 bytes (ptxas, nvcc 13.0; 28 before), yet its
   DHFR-size pairs took 88.9-91.3 us (92.7-95.5 before, in an earlier
   call), its whole form 280.9-281.8 (305.5-305.7).  With the whole form a
   function of its own (__noinline__, in the same call) the usual form
   spilled 12 bytes and took 87.8-88.9 us, but the whole form 334.5-337.0:
   not kept, as a system whose lists outgrow their room runs the whole
   form at every step (H200, bench/RESULTS.md, 2026-11-29, 05:47 UTC on).
   This loop is the candidates' form (WHOLE, 32-bit entries); the lanes'
   own lists run a part ahead (elec__list_run_ahead). */
template <class Pair>
__device__ __forceinline__ void elec__list_run(const elec__list &L, const Pair &pair,
                                               const float4 *image_shift, int first, int last,
                                               int lane, float coincident2,
                                               const int *excl_start, const int *excl_list,
                                               int n, elec__list_lane *w) {
    for (int q = first; q < last; q++) {
        const int c = L.part_cluster[q];
        if (c != w->ci) elec__list_lane_enter<true>(L, c, lane, excl_start, w);
        const elec__list_part_words words =
            elec__list_load_part<false>(elec__list_part_at<true, false>(L, q, lane));
        elec__list_part_rows<true, false>(L, words, image_shift, pair, coincident2, excl_list, n,
                                          w);
    }
}

/* elec__list_run for a lane's own lists (not WHOLE): part q+1's words
   and cluster are loaded before part q's rows, so that the rows' first
   entry no longer waits on a load from DRAM (14 % of the DHFR-size pair
   kernel's stall samples, bench/RESULTS.md, 2026-11-27, 06:29 UTC).  With
   four blocks an SM (elec__pair_erfc) the pair kernel keeps 64 registers
   and no spills (ptxas, nvcc 13.0), and SPME's DHFR-size pairs took
   28.8-29.1 us against 30.0, its real space alone from a graph 35.9-36.2
   against 36.9-37.4; ApoA1-size real space alone 115.5-117.1 against
   119.8-120.4, 1M-atom steps from a graph 1471 against 1480-1487; MSM's
   steps 240 against 245 us (DHFR size), 573-578 against 586-590 (ApoA1
   size) (H100, rounds alternating; bench/RESULTS.md, 2026-12-07, 09:06
   UTC on).  The candidates' form (WHOLE) tests its skips a row at a time
   and is left as it was. */
template <bool COMPACT, class Pair>
__device__ __forceinline__ void elec__list_run_ahead(const elec__list &L, const Pair &pair,
                                                     const float4 *image_shift, int first,
                                                     int last, int lane, float coincident2,
                                                     const int *excl_start,
                                                     const int *excl_list, int n,
                                                     elec__list_lane *w) {
    if (first >= last) return;
    elec__list_part_words next =
        elec__list_load_part<COMPACT>(elec__list_part_at<false, COMPACT>(L, first, lane));
    int next_cluster = L.part_cluster[first];
    for (int q = first; q < last; q++) {
        const elec__list_part_words words = next;
        const int c = next_cluster;
        if (q + 1 < last) {
            next = elec__list_load_part<COMPACT>(elec__list_part_at<false, COMPACT>(L, q + 1, lane));
            next_cluster = L.part_cluster[q + 1];
        }
        if (c != w->ci) elec__list_lane_enter<false>(L, c, lane, excl_start, w);
        elec__list_part_rows<false, COMPACT>(L, words, image_shift, pair, coincident2, excl_list,
                                             n, w);
    }
}

/* elec__list_run in the form of the lists the kernel found (whole: the
   candidates). */
template <class Pair>
__device__ __forceinline__ void elec__list_run_in(bool whole, bool compact, const elec__list &L,
                                                  const Pair &pair, const float4 *image_shift,
                                                  int first, int last, int lane,
                                                  float coincident2, const int *excl_start,
                                                  const int *excl_list, int n,
                                                  elec__list_lane *w) {
    if (whole)
        elec__list_run(L, pair, image_shift, first, last, lane, coincident2, excl_start,
                       excl_list, n, w);
    else if (compact)
        elec__list_run_ahead<true>(L, pair, image_shift, first, last, lane, coincident2,
                                   excl_start, excl_list, n, w);
    else
        elec__list_run_ahead<false>(L, pair, image_shift, first, last, lane, coincident2,
                                    excl_start, excl_list, n, w);
}

/* The pair function's min_blocks: the blocks an SM keeps (its launch
   bounds).  Its dealt: 0, each warp takes an even share of the parts,
   fixed at launch; n > 0, each warp takes n parts at a time from the
   list's counter (ELEC__LIST_PAIRS_DEALT, zeroed by the update kernel
   that comes before the pairs in every compute) until none are left, so
   that a warp that finishes early takes more.  MSM's pairs are dealt,
   SPME's are not (each measured both ways: elec__pair_msm,
   elec__pair_erfc). */
template <class Pair>
__global__ void __launch_bounds__(ELEC__SPME_BLOCK, Pair::min_blocks)
elec__k_list_pairs(elec__list L, Pair pair, const int *excl_start, const int *excl_list,
                   int n, double *coincident_sum) {
    __shared__ float4 image_shift[27];
    if (threadIdx.x < 27) {
        const float3 s = elec__list_image((int)threadIdx.x, L.length);
        image_shift[threadIdx.x] = make_float4(s.x, s.y, s.z, 0.0f);
    }
    __syncthreads();
    elec__wait_prior_grid(); /* the update's list, where launched by PDL */
    const int lane = threadIdx.x & 31;
    const long long warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const long long warps = gridDim.x * (blockDim.x >> 5);
    const bool whole = L.info[ELEC__LIST_WHOLE] != 0, compact = elec__list_compact(L);
    const int rows = whole ? L.entry_start[L.clusters] : L.row_start[L.clusters];
    /* an overflowed list is not evaluated (elec_cuda_spme_energy says so) */
    const bool fits = !L.info[ELEC__LIST_OVERFLOW] && rows <= (whole ? L.entry_room : L.row_room);
    const long long parts = fits ? rows / ELEC__LIST_PART : 0;
    const float coincident2 = fminf(ELEC__COINCIDENT2_FLOAT, L.cutoff2);
    const int first = (int)(parts * warp / warps), last = (int)(parts * (warp + 1) / warps);
    elec__list_lane w;
    w.ci = -1;
    w.slot = w.eb = w.ee = w.coincident = 0;
    w.a = w.fi = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (Pair::dealt > 0) {
        for (;;) {
            const long long from =
                (long long)elec__list_take(L.info + ELEC__LIST_PAIRS_DEALT, lane) * Pair::dealt;
            if (from >= parts) break;
            const int to = (int)(from + Pair::dealt < parts ? from + Pair::dealt : parts);
            elec__list_run_in(whole, compact, L, pair, image_shift, (int)from, to, lane, coincident2,
                              excl_start, excl_list, n, &w);
        }
    } else {
        elec__list_run_in(whole, compact, L, pair, image_shift, first, last, lane, coincident2,
                          excl_start, excl_list, n, &w);
    }
    if (w.ci >= 0) elec__list_lane_flush(L, &w);
    if (w.coincident) atomicAdd(coincident_sum, (double)w.coincident);
}

/* The pair kernel's grid for a pair function: as many blocks as the
   device keeps resident at once.  One wave: with a fixed 8 blocks an SM
   the kernel ran in 1.33 waves, its SMs idle a fifth of the time (Nsight
   Compute, H100, DHFR-size). */
template <class Pair>
static elec_status elec__list_pair_grid(int sm_count, int *blocks, elec_error *err) {
    elec_status status = ELEC_OK;
    int per_sm = 0;
    ELEC__CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, elec__k_list_pairs<Pair>, ELEC__SPME_BLOCK, 0));
    *blocks = (per_sm > 0 ? per_sm : 1) * sm_count;
cleanup:
    return status;
}

/* How many times over a pair grid of `blocks` resident blocks is
   launched where the real space runs alone (after the reciprocal chain):
   so that each warp takes about ELEC__LIST_PARTS_A_WARP parts of the
   lists as the plan expects them (a mean atom's partners within rlist,
   and a part of padding, a cluster), at least once.  In waves, the
   blocks running at one time work on nearby clusters, whose partners
   then stay in cache (1M atoms, Nsight Compute: L1 hit rate 67 -> 75 %);
   in one wave each warp's share spans the whole system at once.  (That
   the blocks start roughly in blockIdx order is observed, not promised
   by CUDA.)  H100, bench_spme --quick, 1M atoms (31,979
   planned clusters, 311 parts a warp in one wave of 792 blocks, six an
   SM, as the pair kernel kept before 2026-11-27; at five, 373 and 18
   waves, not swept again), pairs alone / step from a graph: 1 wave
   1431-1443 / 2210 us, 8 1346 / 2115, 16 1309-1319 / 2080-2088, 32
   1332 / 2101, 64 1373 / 2145.  Where the chains
   overlap (ApoA1-size: 29 parts a warp) these waves lose: 8 and 16 took
   the step from 209.4-210.9 to 216.7 and 231 us; those handles take
   elec__spme_pair_blocks's grid instead. */
#define ELEC__LIST_PARTS_A_WARP 20
static int elec__list_pair_waves(const elec__list *L, size_t max_atoms, int blocks) {
    const double pi = 3.14159265358979323846;
    const double volume = (double)L->length.x * L->length.y * L->length.z;
    const double rlist3 = pow((double)L->rlist2, 1.5);
    const double partners = 4.0 / 3.0 * pi * rlist3 * (double)max_atoms / volume;
    const double parts = L->clusters * (partners + ELEC__LIST_PART) / ELEC__LIST_PART;
    const double warps = (double)blocks * (ELEC__SPME_BLOCK / 32);
    const double waves = floor(parts / (warps * ELEC__LIST_PARTS_A_WARP));
    return waves < 1.0 ? 1 : waves > 64.0 ? 64 : (int)waves;
}

/* SPME's pair grid, from the `resident` blocks of elec__list_pair_grid
   on `sm_count` SMs.  Where the real space runs beside the reciprocal
   chain (overlap), one block an SM fewer (where an SM keeps more than
   one), at most ELEC__SPME_FEW_ATOMS_AN_SM atoms an SM in one wave, more
   in two.  What the fewer blocks buy, on a timeline of the DHFR-size
   step's blocks (H200, bench/RESULTS.md, 2026-11-29, 18:30 UTC on): not
   room beside the pairs, as first meant.  The forward transform (cuFFT,
   timed by the kernels around it) seems not to have shared an SM with a
   pair block: its 12 us of work took 32, ending after the SMs holding
   two pair blocks had emptied (presumably the pairs keep the SM's L1
   and cuFFT needs more shared memory: with a carveout that let it in,
   the pairs alone took 60 us instead of 35.5).  The pair blocks begin
   as the spread's leave, and the SMs emptied first take five, so 39 SMs
   keep two, whose pairs end by 29-33 us; the transforms end after that.
   Five or an even four an SM (blocks placed by %smid in an experiment)
   fill every SM, and the transforms wait for the last pair.  An SM of
   one resident block (not measured) keeps its grid in one wave.
   Where it runs alone, after the chain, every block, in waves
   (elec__list_pair_waves).  H100, bench_spme --quick, full / graph:
   - one block an SM fewer, one wave: DHFR-size (178 atoms an SM) 88.7 /
     85.1 -> 77.5 / 81.1 us, the pairs alone unchanged; ApoA1-size (699)
     230.8 / 223.3 -> 227.8 / 223.1; 1M atoms 2535 / 2527 -> 2852 / 2871
     (the pairs 8 % slower; now in waves); periodic MSM slower at both
     sizes it was tried;
   - ApoA1-size (2026-11-27, graph medians of six runs): every block in
     one wave 216.2 us (full 223.6), one fewer in two waves 211.0 (222.1),
     in three 212.0; every block in three 213.0; four an SM in 2-6 waves
     217.2, 214.4, 212.0, 213.5, 216.2 (one run each: one fewer in one
     wave 212.1 against 212.0); DHFR-size one fewer in two waves 77.2
     against 70.4 in one. */
#define ELEC__SPME_FEW_ATOMS_AN_SM 512
static int elec__spme_few_atoms_an_sm(size_t max_atoms, int sm_count) {
    return max_atoms <= ELEC__SPME_FEW_ATOMS_AN_SM * (size_t)sm_count;
}
static int elec__spme_pair_blocks(const elec__list *L, size_t max_atoms, int overlap,
                                  int resident, int sm_count) {
    if (!overlap) return resident * elec__list_pair_waves(L, max_atoms, resident);
    if (resident <= sm_count) return resident;
    const int fewer = resident - sm_count;
    return elec__spme_few_atoms_an_sm(max_atoms, sm_count) ? fewer : 2 * fewer;
}

/* The update kernel's cooperative grid: as many blocks as can be
   resident at once; ELEC_ERR_UNSUPPORTED, by name, where the device has
   no cooperative launch or cannot keep a block resident. */
static elec_status elec__list_update_grid(const elec__list *L, int device, int sm_count,
                                          int *blocks, elec_error *err) {
    elec_status status = ELEC_OK;
    int cooperative = 0, per_sm = 0;
    *blocks = 0;
    ELEC__CUDA_TRY(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, device));
    if (!cooperative)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "this GPU has no cooperative launch, which the real-space "
                          "neighbour list's update needs");
    /* the form the list launches (elec__list_update) */
    if (L->search_shares > 1)
        ELEC__CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, elec__k_list_update<true>, ELEC__LIST_UPDATE_THREADS, 0));
    else
        ELEC__CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, elec__k_list_update<false>, ELEC__LIST_UPDATE_THREADS, 0));
    if (per_sm < 1)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "the neighbour list's update kernel cannot be resident on this GPU");
    *blocks = per_sm * sm_count;
cleanup:
    return status;
}

/* The build's last step, by one thread of the kernel after the pairs: the
   flag lowered (every build kernel has read it), the build counted and
   the list's size noted. */
__device__ __forceinline__ void elec__list_done(const elec__list &L, int n) {
    if (!L.info[ELEC__LIST_BUILD]) return;
    L.info[ELEC__LIST_BUILD] = 0;
    L.info[ELEC__LIST_BUILT_N] = n;
    L.info[ELEC__LIST_REBUILDS] += 1;
    L.info[ELEC__LIST_SLOTS] = L.tile_start[L.tile_count];
    L.info[ELEC__LIST_TILES] = L.entry_start[L.clusters] / ELEC__LIST_CLUSTER;
    L.info[ELEC__LIST_ROWS] = L.row_start[L.clusters];
}

/* Per-atom sums of the excluded-pair correction. */
typedef struct elec__spme_pair_sums {
    float fx, fy, fz, phi;       /* force / q_i and potential, unscaled */
    double real, excluded;       /* energies, half of each pair         */
} elec__spme_pair_sums;

/* Atom i's excluded pairs, every stride-th from first: the smooth part
   erf(alpha r)/r that the reciprocal sum contains, subtracted (minimum
   image; its r -> 0 limit 2 alpha/sqrt(pi) when the atoms coincide).
   -dE/dr_i / q_i = q_j (2 alpha/sqrt(pi) exp(-alpha^2 r^2) - erf(alpha r)/r)
   d / r^2.  Half the pair's energy: the partner adds the other.
   The lists were checked against max_atoms: a compute with fewer atoms
   skips partners at or past n (their positions are not given). */
__device__ __forceinline__ void elec__spme_excluded_pairs(
    elec__spme_pair_sums *s, float4 a, const float4 *xyzq, int n,
    const int *list, int begin, int end, int first, int stride, elec__spme_geometry g,
    float alpha, float gauss, double alpha_exact) {
    for (int k = begin + first; k < end; k += stride) {
        int j = list[k];
        if (j >= n) continue; /* a partner past this compute's n atoms */
        float4 b = xyzq[j];
        float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
        elec__min_image(&dx, &dy, &dz, g.length, g.inv_length);
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

/* What SPME's real-space finish needs beside the list: the excluded
   pairs (elec__spme_exclusions) and alpha, in float and double. */
typedef struct elec__spme_finish_args {
    const int *excl_start, *excl_list;
    float alpha, gauss; /* gauss: 2 alpha / sqrt(pi) */
    double alpha_exact;
} elec__spme_finish_args;

/* SPME's last real-space step, one thread per slot: the atom's pair sums
   from acc, its energy 1/2 q_i phi_i in double (before the exclusions
   touch phi), its excluded pairs' correction, written once per atom in
   the caller's order: out[i] = (force, potential) unscaled, NULL = energy
   only. */
__global__ void __launch_bounds__(ELEC__SPME_BLOCK)
elec__k_spme_real_finish(elec__list L, const float4 *xyzq, int n, elec__spme_geometry g,
                         elec__spme_finish_args f, float4 *out, double *sums) {
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    elec__spme_pair_sums s = {0.0f, 0.0f, 0.0f, 0.0f, 0.0, 0.0};
    elec__wait_prior_grid(); /* the pairs' sums, where launched by PDL */
    const int used = L.tile_start[L.tile_count];
    int i = p < used ? L.order[p] : -1;
    if (p == 0) elec__list_done(L, n);
    if (i >= 0) {
        float4 acc = L.acc[p], a = xyzq[i];
        s.real = 0.5 * (double)a.w * (double)acc.w;
        elec__spme_excluded_pairs(&s, a, xyzq, n, f.excl_list, f.excl_start[i],
                                  f.excl_start[i + 1], 0, 1, g, f.alpha, f.gauss,
                                  f.alpha_exact);
        if (out)
            out[i] = make_float4(fmaf(a.w, s.fx, acc.x), fmaf(a.w, s.fy, acc.y),
                                 fmaf(a.w, s.fz, acc.z), acc.w + s.phi);
    }
    elec__spme_block_add(sums + ELEC__SPME_SUM_REAL, s.real);
    elec__spme_block_add(sums + ELEC__SPME_SUM_EXCLUDED, s.excluded);
}

/* The gather and the real space's finish in one kernel, where the real
   space runs just before the gather on one stream (elec__spme_enqueue):
   a group of lanes a slot of the list, in its order.  Lane jx takes its
   share of the mesh (elec__spme_mesh_share) and every lanes-th of the
   atom's excluded pairs; lane 0 adds the pair sums (acc) and writes
   scale (F_mesh + F_real) once.  One kernel fewer in that series: the
   1M-atom step from a graph on an H100 went from 1963.9 to 1903.0 us
   (the finish's 7 us of work at ApoA1 size cost the gather 3).  Where
   the real space runs beside the reciprocal chain, its own finish stays
   hidden behind that chain and this kernel only lengthened the step's
   tail (DHFR-size 66.4 -> 66.9 us, ApoA1-size 196.4 -> 197.0;
   bench/RESULTS.md, 2026-11-28). */
template <int ORDER>
__global__ void __launch_bounds__(ELEC__SPME_BLOCK)
elec__k_spme_gather_finish(const float *conv, const float4 *xyzq, int n, elec__list L,
                           elec__spme_geometry g, elec__spme_finish_args f, float scale,
                           float *forces, float *potential, double *sums) {
    const int lanes = elec__spme_lanes<ORDER>::value;
    const int thread = blockIdx.x * blockDim.x + threadIdx.x;
    const int slot = thread / lanes, jx = thread % lanes;
    const int used = L.tile_start[L.tile_count];
    const int i = slot < used ? L.order[slot] : -1;
    elec__spme_pair_sums s = {0.0f, 0.0f, 0.0f, 0.0f, 0.0, 0.0};
    float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f), mesh = a, acc = a;
    if (thread == 0) elec__list_done(L, n);
    if (i >= 0) {
        a = xyzq[i];
        mesh = elec__spme_mesh_share<ORDER>(conv, a, g, jx);
        elec__spme_excluded_pairs(&s, a, xyzq, n, f.excl_list, f.excl_start[i],
                                  f.excl_start[i + 1], jx, lanes, g, f.alpha, f.gauss,
                                  f.alpha_exact);
        if (jx == 0) {
            acc = L.acc[slot];
            s.real = 0.5 * (double)a.w * (double)acc.w;
        }
    }
    mesh = elec__spme_group_sum(mesh, lanes);
    const float4 excluded = elec__spme_group_sum(make_float4(s.fx, s.fy, s.fz, s.phi), lanes);
    if (i >= 0 && jx == 0) {
        const float3 m = elec__spme_mesh_force(a, g, mesh);
        const float3 force = make_float3(m.x + fmaf(a.w, excluded.x, acc.x),
                                         m.y + fmaf(a.w, excluded.y, acc.y),
                                         m.z + fmaf(a.w, excluded.z, acc.z));
        elec__spme_write_atom(forces, potential, i, scale, force,
                              mesh.w + (acc.w + excluded.w));
    }
    elec__spme_block_add(sums + ELEC__SPME_SUM_REAL, s.real);
    elec__spme_block_add(sums + ELEC__SPME_SUM_EXCLUDED, s.excluded);
}

/* ------------------------------------------------------- SPME host side */

/* ELEC__CUDA_TRY's twin for cuFFT, whose calls return a cufftResult, not a
   cudaError_t: the same shape on purpose, one macro per error type. */
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

/* Events a timed evaluation records, in this order on one stream: start,
   spread, forward FFT, solve, backward FFT, list build, real space,
   gather. */
#define ELEC__SPME_MARKS 8

struct elec_cuda_spme_handle {
    int device;
    elec_spme_params p;      /* resolved; excluded_pairs not kept         */
    elec_box box;
    size_t max_atoms;
    int sm_count;
    int pair_blocks;         /* the pair kernel's grid
                                (elec__spme_pair_blocks)                 */
    int update_blocks;       /* the list update's cooperative grid        */
    int update_carveout;     /* its launches' carveout (elec__launch_carved) */
    elec__spme_geometry g;
    int grid_points;         /* Kx Ky Kz                                  */
    int spectrum_points;     /* Kz Ky (Kx/2 + 1)                          */
    cufftHandle forward, backward;
    int has_forward, has_backward;
    int overlap;             /* 1: the real space beside the reciprocal
                                chain (elec__spme_overlaps)               */
    int pdl;                 /* the solve, the gather, the pairs and the
                                real space's finish by programmatic
                                dependent launch (ELEC__SPME_PDL)        */
    cudaStream_t side;       /* the real-space chain                      */
    cudaEvent_t fork, join;
    float *grid;             /* charges, then the convolution             */
    cufftComplex *spectrum;
    float *theta;            /* half spectrum                             */
    double *sums;            /* ELEC__SPME_SUMS raw energy sums           */
    elec_cuda_chargemap_handle *chargemap; /* the default spreading     */
    /* gather spreading */
    int *grid_cell_count;    /* grid_points counters, then the overflow's */
    int *grid_cell_atoms;    /* grid_points x ELEC__SPME_CELL_CAPACITY    */
    int *overflow_atoms;
    float *weights;          /* max_atoms x 3 x order                     */
    /* real space */
    elec__list list;         /* the neighbour list                         */
    float4 *real;            /* per atom: force (unscaled), potential;
                                written where the real space is forked
                                and a gather follows (elec__spme_enqueue) */
    int *excl_start, *excl_list;
    void *fft_work;          /* cuFFT's work area, the two plans' (they run
                                one after the other on one stream)        */
    size_t fft_work_bytes;
    void *workspace;         /* the block every buffer above lives in     */
    int owns_workspace;      /* 0: the caller's (elec_cuda_spme_create_in) */
};

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

/* The handle's device buffers as one block at base (its workspace), each
   at an offset aligned to 256 bytes, in this order; with base NULL their
   block's size is only counted.  Returns the size. */
#define ELEC__SPME_ALIGN 256

/* owner->field placed at offset `at` of base (when base is not NULL) for
   count values of type, and `at` moved past them, aligned. */
#define ELEC__PLACE(owner, field, type, count)                               \
    do {                                                                     \
        if (base) (owner)->field = (type *)(base + at);                      \
        at += ((count) * sizeof(type) + ELEC__SPME_ALIGN - 1) / ELEC__SPME_ALIGN * \
              ELEC__SPME_ALIGN;                                              \
    } while (0)

/* A neighbour list's device buffers (for up to atoms atoms) placed from
   offset at of base, the same way; returns the offset past them. */
static size_t elec__list_layout(elec__list *L, size_t atoms, char *base, size_t at) {
    const size_t tiles = (size_t)L->tile_count, cells = tiles * ELEC__LIST_TILE_CELLS;
    const size_t slots = (size_t)L->slots, clusters = (size_t)L->clusters;
    const size_t entries = (size_t)L->entry_room;
#define ELEC__LIST_PLACE(field, type, count) ELEC__PLACE(L, field, type, count)
    ELEC__LIST_PLACE(info, int, ELEC__LIST_INFO);
    ELEC__LIST_PLACE(cell_count, int, cells);
    ELEC__LIST_PLACE(cell_start, int, cells);
    ELEC__LIST_PLACE(tile_total, int, tiles);
    ELEC__LIST_PLACE(tile_start, int, tiles + 1);
    ELEC__LIST_PLACE(atom_key, int, atoms);
    ELEC__LIST_PLACE(atom_slot, int, atoms);
    ELEC__LIST_PLACE(order, int, slots);
    ELEC__LIST_PLACE(slot_of, int, atoms);
    ELEC__LIST_PLACE(ref, float4, slots + 1); /* + the padding entry's */
    /* + the padding entry's and the image copies (elec__list_slot_images) */
    ELEC__LIST_PLACE(pos, float4, slots + 1 + (size_t)L->image_room);
    ELEC__LIST_PLACE(acc, float4, slots);
    ELEC__LIST_PLACE(cluster_tile, int, clusters);
    ELEC__LIST_PLACE(box_centre, float4, clusters);
    ELEC__LIST_PLACE(box_half, float4, clusters);
    ELEC__LIST_PLACE(tile_centre, float4, tiles);
    ELEC__LIST_PLACE(tile_half, float4, tiles);
    ELEC__LIST_PLACE(tile_atoms, int, tiles);
    ELEC__LIST_PLACE(entry_count, int, clusters);
    ELEC__LIST_PLACE(entry_start, int, clusters + 1);
    ELEC__LIST_PLACE(search_count, int, clusters * (size_t)L->search_shares);
    ELEC__LIST_PLACE(entries, unsigned, entries);
    ELEC__LIST_PLACE(near_masks, unsigned, entries);
    ELEC__LIST_PLACE(share_count, int, clusters * ELEC__LIST_SHARES * ELEC__LIST_CLUSTER);
    ELEC__LIST_PLACE(image_of, int2, slots);
    ELEC__LIST_PLACE(image_src, int2, (size_t)L->image_room);
    ELEC__LIST_PLACE(image_count, int, clusters);
    ELEC__LIST_PLACE(image_start, int, clusters + 1);
    ELEC__LIST_PLACE(row_count, int, clusters);
    ELEC__LIST_PLACE(row_start, int, clusters + 1);
    ELEC__LIST_PLACE(lane_j, unsigned, (size_t)L->row_room * ELEC__LIST_CLUSTER);
    /* parts of the lists' rows, or of the candidates where they are
       evaluated whole */
    ELEC__LIST_PLACE(part_cluster, int,
                     (size_t)(L->row_room > L->entry_room ? L->row_room : L->entry_room) /
                         ELEC__LIST_PART);
#undef ELEC__LIST_PLACE
    return at;
}

/* A placed list made ready for its first compute, synchronously: the
   device words zeroed but the build flag (up: the first compute builds),
   the cell counters zeroed (the build zeroes them after), the padding
   entry's atom placed far away. */
static elec_status elec__list_reset(const elec__list *L, elec_error *err) {
    elec_status status = ELEC_OK;
    int info[ELEC__LIST_INFO] = {0};
    const float4 far = make_float4(-1e5f, -1e5f, -1e5f, 0.0f); /* the padding entry's atom */
    info[ELEC__LIST_BUILD] = 1;
    info[ELEC__LIST_BUILT_N] = -1;
    ELEC__CUDA_TRY(cudaMemcpy(L->info, info, sizeof info, cudaMemcpyHostToDevice));
    ELEC__CUDA_TRY(cudaMemset(L->cell_count, 0,
                              (size_t)L->tile_count * ELEC__LIST_TILE_CELLS * sizeof(int)));
    ELEC__CUDA_TRY(cudaMemcpy(L->ref + L->slots, &far, sizeof far, cudaMemcpyHostToDevice));
    ELEC__CUDA_TRY(cudaMemcpy(L->pos + L->slots, &far, sizeof far, cudaMemcpyHostToDevice));
cleanup:
    return status;
}

/* ELEC_ERR_UNSUPPORTED, by name, where a list's device words (info, as
   downloaded) say its build overflowed its room, or lacked an image copy
   (ELEC__LIST_OVERFLOW 2: a fault of elec's, said so). */
static elec_status elec__list_overflow_check(const int *info, elec_error *err) {
    if (!info[ELEC__LIST_OVERFLOW]) return ELEC_OK;
    if (info[ELEC__LIST_OVERFLOW] == 2)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "the real-space neighbour list lacks an image copy that a pair "
                          "needs (a fault in elec, please report it); nothing was evaluated");
    return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                      "the real-space neighbour list overflowed (atoms far denser "
                      "somewhere than at create, or positions that are NaN or inf, which "
                      "the handle does not check on the device and which crowd into one "
                      "cell): make a handle for these positions, or check them");
}

static size_t elec__spme_layout(elec_cuda_spme_handle *h, char *base) {
    const size_t atoms = h->max_atoms, grid = (size_t)h->grid_points;
    const size_t spectrum = (size_t)h->spectrum_points;
    size_t at = 0;
#define ELEC__SPME_PLACE(field, type, count) ELEC__PLACE(h, field, type, count)
    ELEC__SPME_PLACE(grid, float, grid);
    ELEC__SPME_PLACE(spectrum, cufftComplex, spectrum);
    ELEC__SPME_PLACE(theta, float, spectrum);
    ELEC__SPME_PLACE(sums, double, ELEC__SPME_SUMS);
    ELEC__SPME_PLACE(real, float4, atoms);
    ELEC__SPME_PLACE(excl_start, int, atoms + 1);
    ELEC__SPME_PLACE(excl_list, int, 2 * h->p.excluded_pair_count + 1);
    if (h->p.spread == ELEC_SPME_SPREAD_GATHER) {
        /* one more counter after the cells': the overflow count */
        ELEC__SPME_PLACE(grid_cell_count, int, grid + 1);
        ELEC__SPME_PLACE(grid_cell_atoms, int, grid * ELEC__SPME_CELL_CAPACITY);
        ELEC__SPME_PLACE(overflow_atoms, int, atoms);
        ELEC__SPME_PLACE(weights, float, atoms * 3 * h->p.order);
    }
    at = elec__list_layout(&h->list, atoms, base, at);
    ELEC__SPME_PLACE(fft_work, char, h->fft_work_bytes);
#undef ELEC__SPME_PLACE
    return at;
}

/* The neighbour list's shape for up to max_atoms atoms in this box: cells
   of about 3 atoms at the mean density (at least 1.5 A), in tiles of 8^3;
   room for the atoms and each tile's padding; the tiles each way within
   reach of rlist (one more where the last tile along an axis is short);
   the room for candidates: per cluster, the atoms within rlist of a box
   1.5 times the mean cluster's edge, times 1.5, a tile's padding for
   each of its search shares (each pads its candidates to 32) and one
   more (4 bytes an entry, and 4 more for its lane's mask, near_masks);
   and for the per-atom lists' rows: per cluster, 1.5 times the atoms
   within rlist of an atom, and a part (4 bytes an entry: ~3.0 KB an atom
   for water at 9 A and a 1.5 A skin).  Lists past their room (atoms
   denser somewhere) make the build evaluate the candidates whole,
   slower; candidates past theirs (atoms much denser than at the mean, a
   crowded region of a mostly empty box) make the build mark the list
   overflowed: nothing is evaluated, and elec_cuda_spme_energy reports it.
   Rooms past 2^30 entries or rows are refused by name. */
static elec_status elec__list_plan(elec__list *L, const elec_box *box, size_t max_atoms,
                                   double cutoff, double skin, elec_error *err) {
    const double pi = 3.14159265358979323846, rlist = cutoff + skin;
    const double volume = box->length[0] * box->length[1] * box->length[2];
    const double density = (double)max_atoms / volume;
    double cell = cbrt(3.0 / density), edge, reach_volume, room, rows, longest, reach;
    int n[3], t[3], r[3], axis, copies;
    size_t slots, cells;
    if (cell < 1.5) cell = 1.5;
    for (axis = 0; axis < 3; axis++) {
        double c = floor(box->length[axis] / cell);
        n[axis] = c < 1.0 ? 1 : c > 8192.0 ? 8192 : (int)c;
        t[axis] = (n[axis] + ELEC__LIST_TILE - 1) / ELEC__LIST_TILE;
        edge = ELEC__LIST_TILE * box->length[axis] / n[axis];
        r[axis] = (int)ceil(rlist / edge) + (n[axis] % ELEC__LIST_TILE ? 1 : 0);
    }
    cells = (size_t)t[0] * t[1] * t[2] * ELEC__LIST_TILE_CELLS;
    slots = (max_atoms + ELEC__LIST_CLUSTER - 1) / ELEC__LIST_CLUSTER * ELEC__LIST_CLUSTER +
            (size_t)t[0] * t[1] * t[2] * ELEC__LIST_CLUSTER;
    /* an entry is slot << 5 | image in 32 bits, the padding slot included */
    if (cells > (size_t)INT_MAX / 2 || slots >= ((size_t)1 << 27) - 1)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "%zu atoms in this box: past the neighbour list's limits",
                          max_atoms);
    memset(L, 0, sizeof *L);
    L->length = make_float3((float)box->length[0], (float)box->length[1],
                            (float)box->length[2]);
    L->inv_length = make_float3((float)(1.0 / box->length[0]), (float)(1.0 / box->length[1]),
                                (float)(1.0 / box->length[2]));
    L->cells = make_int3(n[0], n[1], n[2]);
    L->cells_per_length = make_float3((float)(n[0] / box->length[0]),
                                      (float)(n[1] / box->length[1]),
                                      (float)(n[2] / box->length[2]));
    L->tiles = make_int3(t[0], t[1], t[2]);
    L->reach = make_int3(r[0], r[1], r[2]);
    L->tile_count = t[0] * t[1] * t[2];
    L->slots = (int)slots;
    L->clusters = (int)(slots / ELEC__LIST_CLUSTER);
    L->pad = ((unsigned)slots << 5) | 13u;
    L->search_shares = (size_t)L->clusters * ELEC__LIST_SEARCH_SHARES <= ELEC__LIST_SEARCH_ITEMS
                           ? ELEC__LIST_SEARCH_SHARES
                           : 1;
    edge = 1.5 * cbrt(ELEC__LIST_CLUSTER / density);
    reach_volume = edge * edge * edge + 6.0 * edge * edge * rlist +
                   3.0 * pi * edge * rlist * rlist + 4.0 / 3.0 * pi * rlist * rlist * rlist;
    /* each search share pads its candidates to 32 */
    room = L->clusters * (1.5 * reach_volume * density +
                          (1.0 + L->search_shares) * ELEC__LIST_CLUSTER);
    if (room > 27.0 * L->clusters * (double)slots) room = 27.0 * L->clusters * (double)slots;
    rows = 1.5 * 4.0 / 3.0 * pi * rlist * rlist * rlist * density; /* an atom's list */
    if (rows > 27.0 * (double)max_atoms) rows = 27.0 * (double)max_atoms;
    rows = L->clusters * (rows + ELEC__LIST_PART);
    /* entries and rows are counted in int: a room past 2^30 is refused
       here rather than overflowed at every compute (uniform water at 9 A
       and a 1.5 A skin reaches it at about 9.4 million atoms) */
    if (room > (double)(INT_MAX / 2) || rows > (double)(INT_MAX / 2))
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "%zu atoms at this density, cutoff %g A and skin %g A: the "
                          "neighbour list would need %.3g candidates and %.3g rows, past "
                          "its 2^30",
                          max_atoms, cutoff, skin, room, rows);
    L->entry_room = (int)room / ELEC__LIST_CLUSTER * ELEC__LIST_CLUSTER;
    L->row_room = (int)rows / ELEC__LIST_PART * ELEC__LIST_PART;
    /* image copies (elec__list_slot_images): room for the most an atom
       can need, at every slot, so that they never outgrow it (24 bytes a
       copy with its source: 168 bytes a slot where each axis is at least
       2 image_reach long, against ~3 KB an atom of lists).  The margin of
       image_reach: a partner kept at the build lies within rlist of an
       atom in [0, L] (the build's wrapped positions), so its shifted
       position lies
       within rlist of the box to the rounding of the shift and of the
       distance, a few float ulps of 2 L; 1e-3 rlist + 1e-5 L covers that
       many times over, and a copy too many costs only its refresh at each
       check (the room is the most an atom can need anyway). */
    longest = box->length[0];
    for (axis = 1; axis < 3; axis++)
        if (box->length[axis] > longest) longest = box->length[axis];
    reach = rlist * (1.0 + 1e-3) + 1e-5 * longest;
    copies = 1;
    for (axis = 0; axis < 3; axis++) copies *= box->length[axis] < 2.0 * reach ? 3 : 2;
    copies -= 1;
    if ((double)slots * (copies + 1) + 1.0 > (double)INT_MAX)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "%zu atoms in this box: past the neighbour list's limits "
                          "(%zu slots and up to %d image copies each)",
                          max_atoms, slots, copies);
    L->image_reach = (float)reach;
    L->image_base = (int)slots + 1;
    L->image_room = (int)slots * copies;
    L->lane_pad = (unsigned)slots;
    L->compact_room = 65536;
    L->cutoff2 = (float)(cutoff * cutoff);
    L->rlist2 = (float)(rlist * rlist);
    L->half_skin2 = (float)(0.25 * skin * skin);
    return ELEC_OK;
}

/* Whether an evaluation runs its real-space chain beside the reciprocal
   chain (forked onto the handle's side stream) or after it on the
   caller's stream: beside it where the charge grid (4 bytes a point)
   takes at most 60 % of the device's L2 cache.  H100 (50 MB of L2),
   bench_spme --quick, from a graph, beside / after: 600,000 atoms on
   189^3 (27 MB) 1372 / 1422 us, on 216^3 (40 MB) 1599 / 1514, on 240^3
   (55 MB) 1916 / 1916; 1M atoms on 160^3 (16 MB) 2000 / 2132 us, on
   192^3 (28 MB) 2222 / 2234, on 216^3 2521 / 2388; DHFR- and ApoA1-size
   (1 and 4 MB) 81 / 90 and 223 / 243 us.  Past that the two chains only
   slow each other (likely because the grid and the pairs' partner
   positions no longer fit in L2 together; not measured). */
static elec_status elec__spme_overlaps(int device, size_t grid_points, int *overlap,
                                       elec_error *err) {
    elec_status status = ELEC_OK;
    int l2_bytes = 0;
    ELEC__CUDA_TRY(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, device));
    *overlap = (double)grid_points * sizeof(float) <= 0.6 * (double)l2_bytes;
cleanup:
    return status;
}

/* A handle of already resolved parameters for up to max_atoms atoms, but
   for its device buffers: geometry, cells, a stream and events on the first
   device of p.gpus, and the cuFFT plans, made without their work area
   (its size noted for the layout). */
static elec_status elec__spme_handle_plan(const elec_box *box, size_t max_atoms,
                                          const elec_spme_params *resolved,
                                          elec_cuda_spme_handle **out, elec_error *err) {
    elec_status status = ELEC_OK;
    elec_cuda_spme_handle *h = NULL;
    int devices[ELEC__MAX_GPUS], device_count = 0;
    size_t grid_points, spectrum_points, forward_work = 0, backward_work = 0;
    const size_t pairs = resolved->excluded_pair_count;
    *out = NULL;
    if (max_atoms == 0)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "no atoms: the handle needs room for an atom");
    if (max_atoms > ((size_t)1 << 27))
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "%zu atoms: the GPU SPME takes at most %zu atoms",
                          max_atoms, (size_t)1 << 27);
    if (pairs > (size_t)INT_MAX / 2 - 1)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "%zu excluded pairs: at most %d", pairs, INT_MAX / 2 - 1);
    grid_points = (size_t)resolved->grid[0] * resolved->grid[1] * resolved->grid[2];
    spectrum_points =
        (size_t)(resolved->grid[0] / 2 + 1) * resolved->grid[1] * resolved->grid[2];
    if (grid_points > (size_t)INT_MAX)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "grid %d x %d x %d: the GPU SPME takes at most 2^31 "
                          "points", resolved->grid[0], resolved->grid[1],
                          resolved->grid[2]);
    /* the first device of the set (count 0: the calling thread's current one) */
    status = elec__cuda_gpu_list(&resolved->gpus, devices, &device_count, err);
    if (status != ELEC_OK) return status;
    h = (elec_cuda_spme_handle *)ELEC_MALLOC(sizeof *h);
    if (!h) return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory");
    memset(h, 0, sizeof *h);
    h->p = *resolved;
    /* the caller's array is not kept: elec_cuda_spme_params gives NULL with
       the count, and a caller reusing the choice passes its array again */
    h->p.excluded_pairs = NULL;
    h->device = devices[0];
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
    if ((status = elec__list_plan(&h->list, box, max_atoms, h->p.cutoff, h->p.list_skin,
                                  err)) != ELEC_OK)
        goto cleanup;
    ELEC__CUDA_TRY(cudaSetDevice(h->device));
    ELEC__CUDA_TRY(cudaDeviceGetAttribute(&h->sm_count,
                                          cudaDevAttrMultiProcessorCount,
                                          h->device));
    if ((status = elec__spme_overlaps(h->device, grid_points, &h->overlap, err)) != ELEC_OK)
        goto cleanup;
    {
        /* griddepcontrol needs code of ptxVersion 90 or later, which runs
           only on sm_90 or later (elec__chargemap_create_as) */
        cudaFuncAttributes code;
        ELEC__CUDA_TRY(cudaFuncGetAttributes(&code, elec__k_spme_solve));
        h->pdl = ELEC__SPME_PDL && code.ptxVersion >= 90;
    }
    if ((status = elec__list_pair_grid<elec__pair_erfc>(h->sm_count, &h->pair_blocks, err)) !=
        ELEC_OK)
        goto cleanup;
    status = elec__list_update_grid(&h->list, h->device, h->sm_count, &h->update_blocks, err);
    if (status != ELEC_OK) goto cleanup;
    h->pair_blocks = elec__spme_pair_blocks(&h->list, max_atoms, h->overlap, h->pair_blocks,
                                            h->sm_count);
    /* Where the pairs are few (at most 512 atoms an SM) and the two chains
       run side by side, the list's update runs on one block an SM, not
       two (two of 64 registers a thread fill the register file: a
       cooperative launch then waits for every SM to empty).  H100,
       bench_spme --quick, full / graph: DHFR-size 77.5 / 82.2 ->
       76.6-82.7 / 77.0-77.7 us (four runs; the full step, launched from
       the host, varies), its rebuild unchanged (636-649 us); ApoA1-size's
       step unchanged and its rebuild 1482 -> 1840 us, 1M atoms' 13.4 ->
       16.3 ms.  Larger handles keep every resident block. */
    h->update_carveout = ELEC__CARVEOUT_DEFAULT;
    if (h->overlap && elec__spme_few_atoms_an_sm(max_atoms, h->sm_count)) {
        if (h->update_blocks > h->sm_count) h->update_blocks = h->sm_count;
        /* There too, the update asks for the most L1 (its own shared
           memory is 4 KB, and one block an SM fits that split, so the
           cooperative grid stays resident).  It is usually the first
           kernel of a step to reach every SM (the spread is enqueued after
           it; timed, unforked steps ask the same), and an SM seems to keep
           the split of the kernels that reached it first (bench/RESULTS.md,
           2026-11-29, 18:30 UTC on).  Why that helps is not known: the
           pairs timed alone after it are unchanged (30.1 us), so the gain
           comes with the two chains side by side, where the kernels share
           the SMs.  H100, bench_spme (PDL in both; --dhfr five rounds at
           3 %, --quick three at 3 % and at 0 %, alike; steps from a graph,
           us): DHFR-size 59.7-60.1 -> 56.7-57.2 and 59.6-60.1 -> 56.9-57.3;
           with the carveout on every kernel of the step 58.2-59.0, on the
           pairs or the spread alone 59.5-60.4.  Where the atoms are more
           (the update on two blocks an SM) it cost: ApoA1-size
           173.3-174.1 -> 178.4-179.3, 1M atoms 1480-1487 -> 1492-1493
           (bench/RESULTS.md, 2026-12-06, 05:40 UTC on).  Measured on an
           H100 alone; elsewhere a preference the driver may round. */
        h->update_carveout = (int)cudaSharedmemCarveoutMaxL1;
    }
    ELEC__CUDA_TRY(cudaStreamCreateWithFlags(&h->side, cudaStreamNonBlocking));
    ELEC__CUDA_TRY(cudaEventCreateWithFlags(&h->fork, cudaEventDisableTiming));
    ELEC__CUDA_TRY(cudaEventCreateWithFlags(&h->join, cudaEventDisableTiming));
    /* cuFFT takes the slowest dimension first: (Kz, Ky, Kx); its work area
       is the handle's (elec__spme_layout) */
    ELEC__CUFFT_TRY(cufftCreate(&h->forward));
    h->has_forward = 1;
    ELEC__CUFFT_TRY(cufftSetAutoAllocation(h->forward, 0));
    ELEC__CUFFT_TRY(cufftMakePlan3d(h->forward, h->p.grid[2], h->p.grid[1], h->p.grid[0],
                                    CUFFT_R2C, &forward_work));
    ELEC__CUFFT_TRY(cufftCreate(&h->backward));
    h->has_backward = 1;
    ELEC__CUFFT_TRY(cufftSetAutoAllocation(h->backward, 0));
    ELEC__CUFFT_TRY(cufftMakePlan3d(h->backward, h->p.grid[2], h->p.grid[1], h->p.grid[0],
                                    CUFFT_C2R, &backward_work));
    h->fft_work_bytes = forward_work > backward_work ? forward_work : backward_work;
    *out = h;
    h = NULL;
cleanup:
    elec_cuda_spme_destroy(h);
    return status;
}

/* A charge map's handle whose kernels may share the SMs (defined with
   the charge maps, below, where the C API's linkage is). */
extern "C" {
static elec_status elec__chargemap_create(const elec_lattice *lattice, size_t max_atoms,
                                          const elec_chargemap_params *params, int device,
                                          int sharing, elec_cuda_chargemap_handle **out,
                                          elec_error *err);
}

/* A planned handle's buffers in the block at base: the pointers, the plans'
   work area, the default spreading's charge map, the influence function
   and the exclusions (from resolved, whose excluded pairs are the
   caller's) uploaded, the sums zeroed.  The block is the device's. */
static elec_status elec__spme_handle_place(elec_cuda_spme_handle *h, void *base,
                                           const elec_spme_params *resolved,
                                           elec_error *err) {
    elec_status status = ELEC_OK;
    float *host_theta = NULL;
    int *host_excl_start = NULL, *host_excl_list = NULL;
    const size_t pairs = h->p.excluded_pair_count;
    h->workspace = base;
    elec__spme_layout(h, (char *)base);
    ELEC__CUDA_TRY(cudaSetDevice(h->device));
    ELEC__CUFFT_TRY(cufftSetWorkArea(h->forward, h->fft_work));
    ELEC__CUFFT_TRY(cufftSetWorkArea(h->backward, h->fft_work));
    if (h->p.spread == ELEC_SPME_SPREAD_CHARGEMAP) {
        elec_lattice grid_lattice;
        elec_chargemap_params cp;
        memset(&cp, 0, sizeof cp);
        cp.basis = ELEC_CHARGEMAP_BSPLINE;
        cp.order = h->p.order;
        cp.periodic = 1;
        cp.variant = elec__spme_spread_rung(
            h->p.order, h->overlap, elec__spme_few_atoms_an_sm(h->max_atoms, h->sm_count));
        status = elec_chargemap_periodic_lattice(&h->box, h->p.grid, 0.0, &grid_lattice, err);
        if (status == ELEC_OK)
            status = elec__chargemap_create(&grid_lattice, h->max_atoms, &cp, h->device,
                                            h->overlap, &h->chargemap, err);
        /* sum q and sum q^2 side by side in SPME's sums */
        if (status == ELEC_OK)
            status = elec_cuda_chargemap_sums(h->chargemap, h->sums + ELEC__SPME_SUM_CHARGE, err);
        if (status != ELEC_OK) goto cleanup;
    }
    status = elec__spme_exclusions(resolved, h->max_atoms, &host_excl_start,
                                   &host_excl_list, err);
    if (status != ELEC_OK) goto cleanup;
    host_theta = (float *)ELEC_MALLOC((size_t)h->spectrum_points * sizeof(float));
    if (!host_theta) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory");
        goto cleanup;
    }
    if ((status = elec__spme_theta(h, host_theta, err)) != ELEC_OK) goto cleanup;
    ELEC__CUDA_TRY(cudaSetDevice(h->device));
    ELEC__CUDA_TRY(cudaMemcpy(h->theta, host_theta, (size_t)h->spectrum_points * sizeof(float),
                              cudaMemcpyHostToDevice));
    ELEC__CUDA_TRY(cudaMemcpy(h->excl_start, host_excl_start,
                              (h->max_atoms + 1) * sizeof(int), cudaMemcpyHostToDevice));
    ELEC__CUDA_TRY(cudaMemcpy(h->excl_list, host_excl_list, (2 * pairs + 1) * sizeof(int),
                              cudaMemcpyHostToDevice));
    ELEC__CUDA_TRY(cudaMemset(h->sums, 0, ELEC__SPME_SUMS * sizeof(double)));
    if ((status = elec__list_reset(&h->list, err)) != ELEC_OK) goto cleanup;
    ELEC__CUDA_TRY(elec__cuda_setup_landed());
cleanup:
    ELEC_FREE(host_theta);
    ELEC_FREE(host_excl_start);
    ELEC_FREE(host_excl_list);
    return status;
}

/* The handle of already resolved parameters (create, create_in and the
   one-shot call resolve once, then come here).  workspace NULL: the handle
   allocates its block; else the caller's, *bytes long (too short is
   refused).  out NULL: *bytes gets the block's size, and nothing is kept. */
static elec_status elec__cuda_spme_create(const elec_box *box, size_t max_atoms,
                                          const elec_spme_params *resolved, void *workspace,
                                          size_t *bytes, elec_cuda_spme_handle **out,
                                          elec_error *err) {
    elec_status status;
    elec_cuda_spme_handle *h = NULL;
    size_t needed;
    int caller_device = 0;
    if (out) *out = NULL;
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    if ((status = elec__spme_handle_plan(box, max_atoms, resolved, &h, err)) != ELEC_OK)
        goto cleanup;
    needed = elec__spme_layout(h, NULL);
    if (!out) {
        *bytes = needed;
    } else if (workspace) {
        if (*bytes < needed)
            status = elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                "a workspace of %zu bytes: the handle needs %zu", *bytes,
                                needed);
        else
            status = elec__spme_handle_place(h, workspace, resolved, err);
    } else {
        cudaError_t e = elec__cuda_alloc(&h->workspace, needed);
        h->owns_workspace = 1;
        status = e != cudaSuccess ? elec__cuda_fail(err, e, "ELEC_CUDA_MALLOC", __LINE__)
                                  : elec__spme_handle_place(h, h->workspace, resolved, err);
    }
    if (status == ELEC_OK && out) {
        *out = h;
        h = NULL;
        elec__ok(err);
    }
cleanup:
    elec_cuda_spme_destroy(h);
    cudaSetDevice(caller_device);
    return status;
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
        status = elec__chargemap_enqueue(h->chargemap, xyzq, n, h->grid, stream, NULL, err);
    }
cleanup:
    return status;
}

/* The real space's finish arguments for handle h. */
static elec__spme_finish_args elec__spme_finishing(const elec_cuda_spme_handle *h) {
    elec__spme_finish_args f;
    f.excl_start = h->excl_start;
    f.excl_list = h->excl_list;
    f.alpha = (float)h->p.alpha;
    f.gauss = (float)(2.0 * h->p.alpha / sqrt(3.14159265358979323846));
    f.alpha_exact = h->p.alpha;
    return f;
}

/* The gather.  real: the real space's per-atom results to add (written
   by its finish), NULL for none; or finish_real: the real space just
   ran on this stream without its finish, which the gather does
   (elec__k_spme_gather_finish).  With the real space, the list was
   brought up to date for these atoms before it: the atoms are taken in
   its slots' order. */
template <int ORDER>
static elec_status elec__spme_gather(elec_cuda_spme_handle *h, const float4 *xyzq,
                                     int n, const float4 *real, int finish_real,
                                     float *forces, float *potential, cudaStream_t stream,
                                     int pdl, elec_error *err) {
    elec_status status = ELEC_OK;
    const int block = ELEC__SPME_BLOCK, lanes = elec__spme_lanes<ORDER>::value;
    const int in_list_order = real || finish_real;
    const size_t items = in_list_order ? (size_t)h->list.slots : (size_t)n;
    const unsigned blocks = (unsigned)((items * lanes + block - 1) / block);
    if (finish_real)
        elec__k_spme_gather_finish<ORDER><<<blocks, block, 0, stream>>>(
            h->grid, xyzq, n, h->list, h->g, elec__spme_finishing(h), (float)h->p.scale,
            forces, potential, h->sums);
    else
        ELEC__CUDA_TRY(elec__launch(
            elec__k_spme_gather<ORDER>, dim3(blocks), dim3(block), 0, stream, pdl,
            (const float *)h->grid, xyzq, n,
            (const int *)(in_list_order ? h->list.order : NULL),
            (const int *)(h->list.tile_start + h->list.tile_count), h->g, real,
            (float)h->p.scale, forces, potential));
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

/* The neighbour list brought up to date on one stream, for the atoms of
   this compute (indexed as the exclusions are): one cooperative launch of
   elec__k_list_update on a grid from elec__list_update_grid, which checks
   and builds only where the check (or a new n, or elec_cuda_spme_rebuild)
   raised the flag; the kernel after the pairs lowers it
   (elec__list_done).  A compute of another n than the last build's
   rebuilds: the kernel compares n with the list's ELEC__LIST_BUILT_N on
   the device, where a graph's replay sees it (a host-side count, read at
   capture, let a graph captured for one n evaluate a list built since
   for another). */
static elec_status elec__list_update(elec__list *L, const float4 *xyzq, int n,
                                     const int *excl_start, const int *excl_list, int blocks,
                                     int carveout, double *sums, unsigned zero_sums,
                                     cudaStream_t stream, elec_error *err) {
    elec_status status = ELEC_OK;
    const dim3 grid((unsigned)blocks), block(ELEC__LIST_UPDATE_THREADS);
    if (L->search_shares > 1)
        ELEC__CUDA_TRY(elec__launch_carved(elec__k_list_update<true>, grid, block, 0, stream,
                                           ELEC__LAUNCH_COOPERATIVE, carveout, *L, xyzq, n,
                                           excl_start, excl_list, sums, zero_sums));
    else
        ELEC__CUDA_TRY(elec__launch_carved(elec__k_list_update<false>, grid, block, 0, stream,
                                           ELEC__LAUNCH_COOPERATIVE, carveout, *L, xyzq, n,
                                           excl_start, excl_list, sums, zero_sums));
cleanup:
    return status;
}

/* The list's pairs evaluated with a pair function into L->acc, on a grid
   of `blocks` (elec__list_pair_grid's resident blocks, or the method's
   choice: elec__spme_pair_blocks).  coincident_sum: where the count
   of coincident pairs (2 per pair) is added.  It must follow
   elec__list_update on the same stream in every compute: the update
   zeroes acc and the counter a dealt pair function takes its parts
   from.  how: ELEC__LAUNCH_PLAIN, or ELEC__LAUNCH_PDL where nothing is
   enqueued between the update and it (its wait covers the update
   alone). */
template <class Pair>
static elec_status elec__list_evaluate(const elec__list *L, Pair pair, const int *excl_start,
                                       const int *excl_list, int n, double *coincident_sum,
                                       int blocks, int how, cudaStream_t stream,
                                       elec_error *err) {
    elec_status status = ELEC_OK;
    ELEC__CUDA_TRY(elec__launch(elec__k_list_pairs<Pair>, dim3((unsigned)blocks),
                                dim3(ELEC__SPME_BLOCK), 0, stream, how, *L, pair, excl_start,
                                excl_list, n, coincident_sum));
    ELEC__CUDA_TRY(cudaGetLastError());
cleanup:
    return status;
}

/* The real-space chain on one stream: the list brought up to date (its
   kernel zeroing the compute's sums of the bits of zero_sums first; then
   after_list recorded, where given), its pairs, and, with finish, the
   exclusions and the per-atom results (elec__k_spme_real_finish; out:
   where they go, NULL for the energies alone); without it the gather
   that follows on this stream finishes the real space
   (elec__k_spme_gather_finish). */
static elec_status elec__spme_real(elec_cuda_spme_handle *h, const float4 *xyzq, int n,
                                   int finish, float4 *out, unsigned zero_sums,
                                   cudaStream_t stream, cudaEvent_t after_list,
                                   elec_error *err) {
    elec_status status = ELEC_OK;
    /* The pairs and the finish by PDL where the handle's kernels have it
       (h->pdl, decided from the solve's code: every kernel of this file is
       compiled alike; timed stages, after_list, in plain order): each
       waits for the kernel before it (elec__wait_prior_grid) before its
       first read, and is scheduled as that kernel's blocks leave rather
       than after its completion is processed.  H100, bench_spme, rounds
       alternating with plain launches (bench/RESULTS.md, 2026-12-06, 08:36
       UTC on): the DHFR-size real space alone from a graph 38.7-39.7 ->
       37.0-37.2 us, its step from a graph 57.1 -> 56.0-56.3; ApoA1-size
       and 1M-atom steps unchanged.  The update releasing the pairs
       explicitly (griddepcontrol.launch_dependents) just before its blocks
       return gained nothing over their exit; at its start, the pair blocks
       sat resident beside the check and the spread: 41.9-42.2 and
       61.2-61.4 us. */
    const int pdl = h->pdl && !after_list ? ELEC__LAUNCH_PDL : ELEC__LAUNCH_PLAIN;
    const int block = ELEC__SPME_BLOCK;
    elec__pair_erfc pair;
    pair.half_alpha = (float)(0.5 * h->p.alpha);
    pair.alpha2_log2e = (float)(h->p.alpha * h->p.alpha * 1.4426950408889634);
    pair.gauss = (float)(2.0 * h->p.alpha / sqrt(3.14159265358979323846));
    status = elec__list_update(&h->list, xyzq, n, h->excl_start, h->excl_list,
                               h->update_blocks, h->update_carveout, h->sums, zero_sums,
                               stream, err);
    if (status != ELEC_OK) goto cleanup;
    if (after_list) ELEC__CUDA_TRY(cudaEventRecord(after_list, stream));
    status = elec__list_evaluate(&h->list, pair, h->excl_start, h->excl_list, n,
                                 h->sums + ELEC__SPME_SUM_COINCIDENT, h->pair_blocks, pdl,
                                 stream, err);
    if (status != ELEC_OK) goto cleanup;
    if (finish) {
        ELEC__CUDA_TRY(elec__launch(elec__k_spme_real_finish,
                                    dim3((unsigned)((h->list.slots + block - 1) / block)),
                                    dim3(block), 0, stream, pdl, h->list, xyzq, n, h->g,
                                    elec__spme_finishing(h), out, h->sums));
        ELEC__CUDA_TRY(cudaGetLastError());
    }
cleanup:
    return status;
}

/* The compute's sums of each chain, as bits of their indices: the real
   space's (zeroed by the list's update, elec__zero_sums) and all. */
#define ELEC__SPME_REAL_SUMS                                                   \
    (1u << ELEC__SPME_SUM_REAL | 1u << ELEC__SPME_SUM_EXCLUDED |               \
     1u << ELEC__SPME_SUM_COINCIDENT)
#define ELEC__SPME_ALL_SUMS ((1u << ELEC__SPME_SUMS) - 1u)

/* The reciprocal chain's sums zeroed (RECIPROCAL, CHARGE and CHARGE2 lie
   together). */
static cudaError_t elec__spme_zero_reciprocal_sums(elec_cuda_spme_handle *h,
                                                   cudaStream_t stream) {
    return cudaMemsetAsync(h->sums + ELEC__SPME_SUM_RECIPROCAL, 0, 3 * sizeof(double), stream);
}

/* One evaluation.  what: ELEC_SPME_RECIPROCAL | ELEC_SPME_REAL, or
   ELEC_SPME_FFT_ONLY (the two transforms alone, nothing else).
   marks NULL: with both parts, the real-space chain runs on the side
   stream, forked from and joined back into `stream` by events (graph
   capture follows both), or, where the handle's grid is large
   (elec__spme_overlaps), after the reciprocal chain's transforms on
   `stream`; the real space alone runs on `stream`.
   marks given: everything in order on `stream`, with an event recorded
   before and after each stage (ELEC__SPME_MARKS), for the bench.
   The real-space chain ends with its finish (elec__k_spme_real_finish),
   whose per-atom results the gather adds, except where it runs just
   before the gather on `stream` (not forked, both parts, forces or
   potentials asked for): there
   the gather finishes it (elec__k_spme_gather_finish), one kernel
   fewer in the series.
   potential: unscaled mesh + real + excluded parts (host API). */
static elec_status elec__spme_enqueue(elec_cuda_spme_handle *h, const float4 *xyzq,
                                      size_t n, float *forces, float *potential,
                                      cudaStream_t stream, int what,
                                      cudaEvent_t *marks, elec_error *err) {
    elec_status status = ELEC_OK;
    const int count = (int)n;
    const int do_real = (what & ELEC_SPME_REAL) != 0;
    const int do_reciprocal = (what & ELEC_SPME_RECIPROCAL) != 0;
    const int want_atoms = forces != NULL || potential != NULL;
    /* the real space alone runs on `stream`: a fork and join around it
       would only add their events' latency */
    const int forked = do_real && do_reciprocal && !marks && h->overlap;
    const int gather = do_reciprocal && want_atoms;
    const int gather_finishes = gather && do_real && !forked;
    /* timed stages (marks) in plain order */
    const int pdl = h->pdl && !marks ? ELEC__LAUNCH_PDL : ELEC__LAUNCH_PLAIN;
    float4 *real_out = gather && do_real && forked ? h->real : NULL;
    if (what & ELEC_SPME_FFT_ONLY) {
        ELEC__CUFFT_TRY(cufftSetStream(h->forward, stream));
        ELEC__CUFFT_TRY(cufftSetStream(h->backward, stream));
        ELEC__CUFFT_TRY(cufftExecR2C(h->forward, h->grid, h->spectrum));
        ELEC__CUFFT_TRY(cufftExecC2R(h->backward, h->spectrum, h->grid));
        goto cleanup;
    }
    /* The sums: the real space's zeroed by its first kernel (the list's
       update, all of them where it runs alone), the reciprocal chain's by
       a memset at its head, after the fork, so that the real space does
       not wait for it.  A memset of them all before the fork put a memset
       node (and, for the real space alone, a fork and join) between two
       computes: the DHFR-size real space alone had 3.1-3.8 us from its
       finish's end to the next compute's update, 2.3-3.1 without them,
       and took 36.6-36.8 -> 36.0-36.2 us from a graph, 37.3-37.4 ->
       35.9-36.1 back to back; the step from a graph unchanged (H100, three
       rounds alternating; bench/RESULTS.md, 2026-12-07, 12:48 UTC on). */
    if (!do_real || n == 0)
        ELEC__CUDA_TRY(cudaMemsetAsync(h->sums, 0, ELEC__SPME_SUMS * sizeof(double), stream));
    else if (do_reciprocal && !forked)
        ELEC__CUDA_TRY(elec__spme_zero_reciprocal_sums(h, stream));
    if (n == 0) goto cleanup;
    if (marks) ELEC__CUDA_TRY(cudaEventRecord(marks[0], stream));
    if (forked) {
        ELEC__CUDA_TRY(cudaEventRecord(h->fork, stream));
        ELEC__CUDA_TRY(cudaStreamWaitEvent(h->side, h->fork, 0));
        status = elec__spme_real(h, xyzq, count, 1, real_out, ELEC__SPME_REAL_SUMS, h->side,
                                 NULL, err);
        if (status != ELEC_OK) goto cleanup;
        ELEC__CUDA_TRY(cudaEventRecord(h->join, h->side));
        ELEC__CUDA_TRY(elec__spme_zero_reciprocal_sums(h, stream));
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
        ELEC__CUDA_TRY(elec__launch(elec__k_spme_solve,
                                    dim3(elec__spme_blocks(h, (size_t)h->spectrum_points)),
                                    dim3(ELEC__SPME_BLOCK), 0, stream, pdl, h->spectrum,
                                    (const float *)h->theta, h->g.K.x, h->spectrum_points,
                                    h->sums));
        ELEC__CUDA_TRY(cudaGetLastError());
        if (marks) ELEC__CUDA_TRY(cudaEventRecord(marks[3], stream));
        ELEC__CUFFT_TRY(cufftExecC2R(h->backward, h->spectrum, h->grid));
        if (marks) ELEC__CUDA_TRY(cudaEventRecord(marks[4], stream));
    } else if (marks) { /* stages not asked for take no time */
        for (int m = 1; m <= 4; m++) ELEC__CUDA_TRY(cudaEventRecord(marks[m], stream));
    }
    if (forked) {
        ELEC__CUDA_TRY(cudaStreamWaitEvent(stream, h->join, 0));
    } else if (do_real) {
        status = elec__spme_real(h, xyzq, count, !gather_finishes, NULL,
                                 do_reciprocal ? ELEC__SPME_REAL_SUMS : ELEC__SPME_ALL_SUMS,
                                 stream, marks ? marks[5] : NULL, err);
        if (status != ELEC_OK) goto cleanup;
        if (marks) ELEC__CUDA_TRY(cudaEventRecord(marks[6], stream));
    } else if (marks) {
        ELEC__CUDA_TRY(cudaEventRecord(marks[5], stream));
        ELEC__CUDA_TRY(cudaEventRecord(marks[6], stream));
    }
    if (gather) {
#define ELEC__SPME_GATHER_CALL(order) \
    elec__spme_gather<order>(h, xyzq, count, real_out, gather_finishes, forces, potential, \
                             stream, pdl, err)
        ELEC__SPME_BY_ORDER(ELEC__SPME_GATHER_CALL)
#undef ELEC__SPME_GATHER_CALL
        if (status != ELEC_OK) goto cleanup;
    }
    if (marks) ELEC__CUDA_TRY(cudaEventRecord(marks[7], stream));
cleanup:
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

/* ---- SPME entry points */

ELEC_DEF void elec_cuda_spme_destroy(elec_cuda_spme_handle *h) {
    int caller_device = 0;
    if (!h) return;
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    cudaSetDevice(h->device);
    cudaDeviceSynchronize(); /* computes in flight read the buffers */
    if (h->has_forward) cufftDestroy(h->forward);
    if (h->has_backward) cufftDestroy(h->backward);
    elec_cuda_chargemap_destroy(h->chargemap);
    cudaSetDevice(h->device);
    if (h->side) cudaStreamDestroy(h->side);
    if (h->fork) cudaEventDestroy(h->fork);
    if (h->join) cudaEventDestroy(h->join);
    if (h->owns_workspace) elec__cuda_free(h->workspace, 0);
    (void)cudaGetLastError();
    cudaSetDevice(caller_device);
    ELEC_FREE(h);
}

ELEC_DEF elec_status elec_cuda_spme_create(const elec_box *box,
                                           const elec_atoms *atoms,
                                           const elec_spme_params *params,
                                           elec_cuda_spme_handle **out, elec_error *err) {
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    return elec_cuda_spme_create_in(box, atoms, params, NULL, NULL, out, err);
}

ELEC_DEF elec_status elec_cuda_spme_create_in(const elec_box *box, const elec_atoms *atoms,
                                              const elec_spme_params *params,
                                              void *workspace, size_t *bytes,
                                              elec_cuda_spme_handle **out, elec_error *err) {
    elec_spme_params resolved;
    elec_status status;
    if (out) *out = NULL;
    if (!out && !bytes)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out and bytes are NULL");
    if (workspace && (!out || !bytes))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "a workspace needs its size and a handle to make");
    /* the buffers are placed at aligned offsets from it: a misaligned base
       made the first compute's float4 and double loads fault, which ends
       the process's CUDA context */
    if (workspace && (uintptr_t)workspace % ELEC__SPME_ALIGN != 0)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "workspace %p is not %d-byte aligned (cudaMalloc's are)", workspace,
                          ELEC__SPME_ALIGN);
    if ((status = elec__cuda_spme_resolve(params, box, atoms, 0, &resolved, err)) != ELEC_OK)
        return status;
    return elec__cuda_spme_create(box, atoms->count, &resolved, workspace, bytes, out, err);
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

ELEC_DEF elec_status elec_cuda_spme_compute(elec_cuda_spme_handle *h,
                                            const float4 *d_xyzq, size_t n,
                                            float *d_forces,
                                            cudaStream_t stream,
                                            elec_error *err) {
    return elec_cuda_spme_compute_timed(h, d_xyzq, n, d_forces, 0, NULL, stream, err);
}

/* The names of a timed evaluation's stages, between its events. */
static const char *const elec__spme_stage_names[ELEC__SPME_MARKS - 1] = {
    "spread", "forward FFT", "solve", "backward FFT", "list build", "real space", "gather"};

ELEC_DEF elec_status elec_cuda_spme_compute_timed(elec_cuda_spme_handle *h,
                                                  const float4 *d_xyzq, size_t n,
                                                  float *d_forces, int parts,
                                                  elec_stage_times *times,
                                                  cudaStream_t stream, elec_error *err) {
    elec_status status = ELEC_OK;
    cudaEvent_t marks[ELEC__SPME_MARKS];
    int caller_device = 0, made = 0, timed;
    if (!h) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "handle is NULL");
    if (n > h->max_atoms)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "%zu atoms: the handle was created for at most %zu",
                          n, h->max_atoms);
    if (n > 0 && !d_xyzq)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "d_xyzq is NULL");
    if (parts < 0 || parts > (ELEC_SPME_RECIPROCAL | ELEC_SPME_REAL | ELEC_SPME_FFT_ONLY))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "unknown SPME parts %d", parts);
    if (parts == 0) parts = ELEC_SPME_RECIPROCAL | ELEC_SPME_REAL;
    /* the forces are written by the gather, the reciprocal chain's end: a
       part without it left d_forces as it was, with ELEC_OK */
    if (d_forces && !(parts & ELEC_SPME_RECIPROCAL))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "SPME parts %d write no forces (the gather that writes them ends "
                          "the reciprocal part): pass d_forces NULL",
                          parts);
    if (times) memset(times, 0, sizeof *times);
    /* timed: every stage in order on stream, an event between each two */
    timed = times && n > 0 && !(parts & ELEC_SPME_FFT_ONLY);
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    ELEC__CUDA_TRY(cudaSetDevice(h->device));
    if (timed) {
        /* its events are waited for on the host, which a stream being
           captured refuses, and the capture was then invalidated: refused
           first, the capture left as it was.  The legacy stream reads as
           cudaErrorStreamCaptureImplicit while another stream of the
           device captures (cleared here: not a launch's error). */
        cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
        const cudaError_t asked = cudaStreamIsCapturing(stream, &capture);
        if (asked != cudaSuccess) (void)cudaGetLastError();
        if (asked == cudaErrorStreamCaptureImplicit ||
            (asked == cudaSuccess && capture != cudaStreamCaptureStatusNone)) {
            status = elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                "elec_cuda_spme_compute_timed with times waits for its events "
                                "on the host, which a stream being captured cannot do: "
                                "capture elec_cuda_spme_compute, or pass times NULL");
            goto cleanup;
        }
    }
    for (; timed && made < ELEC__SPME_MARKS; made++)
        ELEC__CUDA_TRY(cudaEventCreate(&marks[made]));
    status = elec__spme_enqueue(h, d_xyzq, n, d_forces, NULL, stream, parts,
                                timed ? marks : NULL, err);
    if (status != ELEC_OK) goto cleanup;
    if (timed) {
        float ms;
        ELEC__CUDA_TRY(cudaEventSynchronize(marks[ELEC__SPME_MARKS - 1]));
        for (int m = 0; m + 1 < ELEC__SPME_MARKS; m++) {
            ELEC__CUDA_TRY(cudaEventElapsedTime(&ms, marks[m], marks[m + 1]));
            times->name[m] = elec__spme_stage_names[m];
            times->seconds[m] = 1e-3 * ms;
        }
        ELEC__CUDA_TRY(cudaEventElapsedTime(&ms, marks[0], marks[ELEC__SPME_MARKS - 1]));
        times->total = 1e-3 * ms;
        times->count = ELEC__SPME_MARKS - 1;
    }
    elec__ok(err);
cleanup:
    for (int m = 0; m < made; m++) cudaEventDestroy(marks[m]);
    cudaSetDevice(caller_device);
    return status;
}

/* The pair kernel counts coincident pairs (elec__spme_coincident) but
   cannot say which they are.  On that failure the one-shot call, which
   has the positions the device saw (wrapped, in float), finds one on the
   host and names its atoms as the CPU does; where it finds none (a pair
   at the limit that float and double see apart), err stays as it was.
   Called only where the kernel counted such pairs. */
static void elec__cuda_name_coincident(const float4 *xyzq, size_t n, const elec_box *box,
                                       const elec_spme_params *p, elec_error *err) {
    double *x = (double *)ELEC_MALLOC((3 * n + 1) * sizeof *x);
    size_t *keys = (size_t *)ELEC_MALLOC((p->excluded_pair_count + 1) * sizeof *keys);
    elec_error found;
    if (x && keys && err) {
        for (size_t i = 0; i < n; i++) {
            x[3 * i] = xyzq[i].x;
            x[3 * i + 1] = xyzq[i].y;
            x[3 * i + 2] = xyzq[i].z;
        }
        elec__exclusion_keys(p->excluded_pairs, p->excluded_pair_count, n, keys);
        if (elec__periodic_coincident(x, n, box->length, p->excluded_pair_count, keys,
                                      &found) == ELEC_ERR_INVALID_ARG)
            *err = found;
    }
    ELEC_FREE(x);
    ELEC_FREE(keys);
}

/* A handle reads positions and charges from device memory unchecked
   (they must be finite): where its energy came out inf or NaN, the
   message says that a non-finite input is the other cause (a NaN position
   read as charges past float's range). */
static void elec__cuda_unchecked_inputs(elec_error *err) {
    char was[sizeof err->message];
    if (!err) return;
    memcpy(was, err->message, sizeof was);
    was[sizeof was - 1] = '\0';
    elec__fail(err, err->status, 0, "%s; or a position or charge the handle read is not finite",
               was);
}

/* elec_cuda_spme_energy's body; unchecked: the atoms came from device
   memory no one checked (a handle's caller), not from the one-shot call,
   which checked them on the host, so that a non-finite energy names them
   as a cause only where they can be one.  coincident (when not NULL): the
   pairs the last compute counted closer than ELEC_COINCIDENT_DISTANCE. */
static elec_status elec__spme_energy(elec_cuda_spme_handle *h, elec_ewald_terms *terms,
                                     cudaStream_t stream, int unchecked, double *coincident,
                                     elec_error *err) {
    elec_status status = ELEC_OK;
    double sums[ELEC__SPME_SUMS];
    int info[ELEC__LIST_INFO];
    int caller_device = 0;
    if (!h || !terms)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "handle or terms is NULL");
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    ELEC__CUDA_TRY(cudaSetDevice(h->device));
    ELEC__CUDA_TRY(cudaMemcpyAsync(sums, h->sums, sizeof sums,
                                   cudaMemcpyDeviceToHost, stream));
    ELEC__CUDA_TRY(cudaMemcpyAsync(info, h->list.info, sizeof info,
                                   cudaMemcpyDeviceToHost, stream));
    ELEC__CUDA_TRY(cudaStreamSynchronize(stream));
    if ((status = elec__list_overflow_check(info, err)) != ELEC_OK) goto cleanup;
    if (coincident) *coincident = 0.5 * sums[ELEC__SPME_SUM_COINCIDENT];
    if (sums[ELEC__SPME_SUM_COINCIDENT] > 0.0) {
        status = elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                            "%.0f pair(s) of atoms closer than %g A and not excluded: "
                            "their energy is infinite (the last compute left them out)",
                            0.5 * sums[ELEC__SPME_SUM_COINCIDENT], ELEC_COINCIDENT_DISTANCE);
        goto cleanup;
    }
    elec__spme_terms(h, sums, terms);
    /* charges whose float terms overflow (about 1e19 e) reach here as inf
       or NaN: refused by name, as on the CPU */
    if ((status = elec__terms_finite("GPU SPME", terms, "float", err)) != ELEC_OK) {
        if (unchecked) elec__cuda_unchecked_inputs(err);
        goto cleanup;
    }
    elec__ok(err);
cleanup:
    cudaSetDevice(caller_device);
    return status;
}

ELEC_DEF elec_status elec_cuda_spme_energy(elec_cuda_spme_handle *h,
                                           elec_ewald_terms *terms,
                                           cudaStream_t stream,
                                           elec_error *err) {
    return elec__spme_energy(h, terms, stream, 1, NULL, err);
}

/* A neighbour list's counters, as of the computes enqueued so far on
   stream (synchronises it), on the list's device; skin: its buffer. */
static elec_status elec__list_stats(const elec__list *L, double skin, int device,
                                    elec_spme_list_stats *stats, cudaStream_t stream,
                                    elec_error *err) {
    elec_status status = ELEC_OK;
    int info[ELEC__LIST_INFO], caller_device = 0;
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    ELEC__CUDA_TRY(cudaSetDevice(device));
    ELEC__CUDA_TRY(cudaMemcpyAsync(info, L->info, sizeof info, cudaMemcpyDeviceToHost, stream));
    ELEC__CUDA_TRY(cudaStreamSynchronize(stream));
    memset(stats, 0, sizeof *stats);
    stats->rebuilds = info[ELEC__LIST_REBUILDS];
    stats->tiles = info[ELEC__LIST_TILES];
    stats->whole = info[ELEC__LIST_WHOLE] != 0;
    stats->overflow = info[ELEC__LIST_OVERFLOW] != 0;
    /* an overflowed list is not evaluated */
    stats->evaluated = stats->overflow ? 0
                                       : (long long)(stats->whole
                                                         ? info[ELEC__LIST_TILES] *
                                                               ELEC__LIST_CLUSTER
                                                         : info[ELEC__LIST_ROWS]) *
                                             ELEC__LIST_CLUSTER;
    stats->clusters = info[ELEC__LIST_SLOTS] / ELEC__LIST_CLUSTER;
    stats->skin = skin;
    elec__ok(err);
cleanup:
    cudaSetDevice(caller_device);
    return status;
}

ELEC_DEF elec_status elec_cuda_spme_list_stats(elec_cuda_spme_handle *h,
                                               elec_spme_list_stats *stats,
                                               cudaStream_t stream, elec_error *err) {
    if (!h || !stats)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "handle or stats is NULL");
    return elec__list_stats(&h->list, h->p.list_skin, h->device, stats, stream, err);
}

ELEC_DEF elec_status elec_cuda_spme_rebuild(elec_cuda_spme_handle *h, cudaStream_t stream,
                                            elec_error *err) {
    elec_status status = ELEC_OK;
    int caller_device = 0;
    if (!h) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "handle is NULL");
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    ELEC__CUDA_TRY(cudaSetDevice(h->device));
    ELEC__CUDA_TRY(cudaMemsetAsync(h->list.info + ELEC__LIST_BUILD, 1, sizeof(int), stream));
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
    if ((status = elec__cuda_spme_resolve(params, box, atoms, 1, &p, err)) != ELEC_OK)
        return status;
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
    {
        elec__pack to;
        memset(&to, 0, sizeof to);
        to.box = box;
        elec__pack_float4(&to, &host_xyzq[0].x);
        if ((status = elec__atoms_pack(atoms, &to, err)) != ELEC_OK) goto cleanup;
    }
    for (i = 0; i < n; i++) charge += (double)host_xyzq[i].w;
    status = elec__cuda_spme_create(box, n ? n : 1, &p, NULL, NULL, &h, err);
    if (status != ELEC_OK) goto cleanup;
    ELEC__CUDA_TRY(cudaSetDevice(h->device));
    ELEC__CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    ELEC__CUDA_ALLOC(d_xyzq, (n + 1) * sizeof(float4), stream);
    ELEC__CUDA_ALLOC(d_forces, (3 * n + 1) * sizeof(float), stream);
    ELEC__CUDA_ALLOC(d_potential, (n + 1) * sizeof(float), stream);
    ELEC__CUDA_TRY(cudaMemcpyAsync(d_xyzq, host_xyzq, n * sizeof(float4),
                                   cudaMemcpyHostToDevice, stream));
    status = elec__spme_enqueue(h, d_xyzq, n, forces ? d_forces : NULL,
                                potential ? d_potential : NULL, stream,
                                ELEC_SPME_RECIPROCAL | ELEC_SPME_REAL,
                                NULL, err);
    if (status != ELEC_OK) goto cleanup;
    {
        double coincident = 0.0;
        if ((status = elec__spme_energy(h, energy, stream, 0, &coincident, err)) != ELEC_OK) {
            if (coincident > 0.0) elec__cuda_name_coincident(host_xyzq, n, box, &p, err);
            goto cleanup;
        }
    }
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
    if ((status = elec__results_finite("GPU SPME", "force component", NULL, forces, 3 * n,
                                       "float", err)) != ELEC_OK ||
        (status = elec__results_finite("GPU SPME", "potential", NULL, potential, n, "float",
                                       err)) != ELEC_OK)
        goto cleanup;
    elec__ok(err);
cleanup:
    elec__cuda_free(d_xyzq, stream); /* on the stream, before it goes */
    elec__cuda_free(d_forces, stream);
    elec__cuda_free(d_potential, stream);
    if (stream) cudaStreamDestroy(stream);
    elec_cuda_spme_destroy(h);
    ELEC_FREE(host_xyzq);
    ELEC_FREE(host_out);
    cudaSetDevice(caller_device);
    return status;
}

/* ------------------------------------------- >>msm periodic MSM: the MD handle */

/* Periodic multilevel summation on the GPU: elec_cpu_msm_periodic_energy's
   method (elec.h, elec__pmsm_shape: the hierarchy, its stencils and the
   top's constant are the CPU's very functions), every stage on the
   device, in float with energies summed in double, behind a handle with
   the SPME handle's shape.  One compute, all on the caller's stream:
     short range      where cutoff + 1.5 A is within half the box
                      (elec__pmsm_list_fits), SPME's neighbour list with
                      MSM's pair function (elec__pair_msm), kept across
                      computes and rebuilt on the device when due; else
                      a cell list of the wrapped atoms (count, scan and
                      scatter kernels below), then one thread per atom over
                      the cells within the cutoff, each neighbour cell
                      offset past the box edge an image (every (atom,
                      image) within a exactly once, however small the box):
                      q_j (1/r - gamma(r/a)/a) and its force; excluded
                      pairs left out at their nearest image and their
                      smooth part g_0(r) taken back out
     anterpolation    the charge map (Skeel's C1 basis of the
                      interpolation's order) on the periodic finest lattice,
                      then its mean taken out (elec__pmsm_center_charges)
     restriction      a few threads per coarse point, fine indices wrapped
     lattice cutoff   every level (no top sum): the circular convolution
                      with the level's folded stencil, by cuFFT with the
                      stencil's spectrum made at create (elec__pmsm_fft);
                      one thread per point where an axis has one point
                      or the level is past 128^3 or so
     prolongation     a few threads per fine point, coarse indices wrapped
     at atoms         one thread per atom: potential and gradient
                      interpolated from the finest lattice, added to the
                      short range; forces written once, energy
                      1/2 sum q_i phi_i summed in double
   The top (all axes down to one point) is a constant of the zero-mean
   convention; with the charges' mean out of the lattices it is the whole
   mean, C(a_0) of the finest splitting (elec__pmsm_top_constant; the CPU's
   elec__pmsm_constant is it less what its lattices pass on): C Q^2 / 2,
   added by elec_cuda_msm_periodic_energy on the host from the compute's
   total charge. */

/* ---- >>msm periodic MSM: the short range's cell list, for boxes shorter
   than twice cutoff + skin (elec__pmsm_list_fits; longer ones take the
   neighbour list): n cells per axis, each at least cutoff / reach long,
   atoms wrapped into the box and sorted by cell (count, scan, scatter). */
typedef struct elec__pmsm_cells {
    int3 n;
    float3 per_length;     /* n / L */
    int reach;             /* neighbour cells each way */
} elec__pmsm_cells;

/* x wrapped into [0, length), in float (a value rounding up to length
   goes to 0's side of the cell list: clamped). */
__device__ __forceinline__ float elec__pmsm_wrap_coordinate(float x, float length, float inv_length) {
    float w = x - length * floorf(x * inv_length);
    if (w >= length) w -= length;
    return w < 0.0f ? 0.0f : w;
}

__device__ __forceinline__ float4 elec__pmsm_wrapped(float4 a, elec__spme_geometry g) {
    return make_float4(elec__pmsm_wrap_coordinate(a.x, g.length.x, g.inv_length.x),
                       elec__pmsm_wrap_coordinate(a.y, g.length.y, g.inv_length.y),
                       elec__pmsm_wrap_coordinate(a.z, g.length.z, g.inv_length.z), a.w);
}

__device__ __forceinline__ int elec__pmsm_cell_index(float4 w, elec__pmsm_cells c) {
    int cx = min((int)(w.x * c.per_length.x), c.n.x - 1);
    int cy = min((int)(w.y * c.per_length.y), c.n.y - 1);
    int cz = min((int)(w.z * c.per_length.z), c.n.z - 1);
    return cx + c.n.x * (cy + c.n.y * cz);
}

/* Step 1: each atom's cell and its slot in it (atomics on the per-cell
   counters, zeroed first). */
__global__ void __launch_bounds__(ELEC__SPME_BLOCK)
elec__k_pmsm_cells_count(const float4 *xyzq, int n, elec__spme_geometry g,
                         elec__pmsm_cells c, int *cell_count, int *atom_cell,
                         int *atom_slot) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int cell = elec__pmsm_cell_index(elec__pmsm_wrapped(xyzq[i], g), c);
    atom_cell[i] = cell;
    atom_slot[i] = atomicAdd(&cell_count[cell], 1);
}

/* Step 2: exclusive prefix sum of the counts into start[0 .. cells] in one
   block (elec__list_scan_block). */
#define ELEC__PMSM_SCAN_THREADS 1024
__global__ void __launch_bounds__(ELEC__PMSM_SCAN_THREADS)
elec__k_pmsm_cells_scan(const int *count, int *start, int cells) {
    __shared__ int run_sums[ELEC__PMSM_SCAN_THREADS];
    elec__list_scan_block(count, start, cells, run_sums);
}

/* Step 3: atoms in cell order, wrapped, with their original index. */
__global__ void __launch_bounds__(ELEC__SPME_BLOCK)
elec__k_pmsm_cells_scatter(const float4 *xyzq, int n, elec__spme_geometry g,
                           const int *start, const int *atom_cell, const int *atom_slot,
                           float4 *sorted, int *sorted_index) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    int p = start[atom_cell[i]] + atom_slot[i];
    sorted[p] = elec__pmsm_wrapped(xyzq[i], g);
    sorted_index[p] = i;
}

/* Whether j is on atom i's exclusion list list[begin .. end) (a few
   entries: a linear scan). */
__device__ __forceinline__ bool elec__pmsm_excluded(const int *list, int begin, int end, int j) {
    for (int k = begin; k < end; k++)
        if (list[k] == j) return true;
    return false;
}

#define ELEC__PMSM_SUM_ENERGY 0     /* 1/2 sum q_i phi_i, self part out */
#define ELEC__PMSM_SUM_CHARGE 1     /* sum q                              */
#define ELEC__PMSM_SUM_COINCIDENT 2 /* pairs closer than the coincident
                                       distance, seen from both atoms    */
#define ELEC__PMSM_SUMS 4

/* A lattice of the periodic hierarchy as the kernels take it. */
typedef struct elec__pmsm_grid_args {
    int n[3];
} elec__pmsm_grid_args;

__device__ __forceinline__ int elec__pmsm_wrap_device(int i, int n) {
    const int r = i % n;
    return r < 0 ? r + n : r;
}

/* The fine points a coarse point gathers along one axis (restriction), or
   the coarse points a fine point gathers (prolongation), wrapped, with
   their weights Phi(d/2); the identity along an axis already at one point
   (fine and coarse the same).  Returns how many. */
template <int S>
__device__ __forceinline__ int elec__pmsm_restrict_axis(int M, int fine_n, int coarse_n,
                                                        const elec__msm_basis_args &b,
                                                        int index[4 * S], float w[4 * S]) {
    if (fine_n == coarse_n) {
        index[0] = M;
        w[0] = 1.0f;
        return 1;
    }
#pragma unroll
    for (int d = -(2 * S - 1); d <= 2 * S - 1; d++) {
        index[d + 2 * S - 1] = elec__pmsm_wrap_device(2 * M + d, fine_n);
        w[d + 2 * S - 1] = b.half[d + 2 * S - 1];
    }
    return 4 * S - 1;
}

template <int S>
__device__ __forceinline__ int elec__pmsm_prolong_axis(int m, int fine_n, int coarse_n,
                                                       const elec__msm_basis_args &b,
                                                       int index[4 * S], float w[4 * S]) {
    int count = 0;
    if (fine_n == coarse_n) {
        index[0] = m;
        w[0] = 1.0f;
        return 1;
    }
    /* 2K within m -+ (2S - 1) */
    for (int K = -((2 * S - 1 - m) >> 1); K <= (m + 2 * S - 1) >> 1; K++, count++) {
        index[count] = elec__pmsm_wrap_device(K, coarse_n);
        w[count] = b.half[m - 2 * K + 2 * S - 1];
    }
    return count;
}

/* Stages 2 and 4: `lanes` threads per output point (a power of two up to
   32, elec__pmsm_transfer_lanes), sharing the gather over the per-axis
   lists above (up to (4S - 1)^3 terms) and summing across the group;
   restriction writes q_{l+1}, prolongation adds to e_l. */
template <int S, bool RESTRICT>
__global__ void __launch_bounds__(ELEC__MSM_BLOCK)
elec__k_pmsm_transfer(float *out, elec__pmsm_grid_args og, const float *in,
                      elec__pmsm_grid_args ig, elec__pmsm_grid_args fine,
                      elec__pmsm_grid_args coarse, elec__msm_basis_args b, int lanes) {
    const size_t thread = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t points = (size_t)og.n[0] * og.n[1] * og.n[2];
    const int lane = (int)(thread % lanes);
    /* a group past the end sums nothing but stays for the shuffles */
    const size_t at = thread / lanes < points ? thread / lanes : points - 1;
    const bool valid = thread / lanes < points;
    const int p[3] = {(int)(at % og.n[0]), (int)(at / og.n[0] % og.n[1]),
                      (int)(at / og.n[0] / og.n[1])};
    int index[3][4 * S], count[3];
    float w[3][4 * S], sum = 0.0f;
    for (int axis = 0; axis < 3; axis++)
        count[axis] = RESTRICT ? elec__pmsm_restrict_axis<S>(p[axis], fine.n[axis],
                                                             coarse.n[axis], b, index[axis],
                                                             w[axis])
                               : elec__pmsm_prolong_axis<S>(p[axis], fine.n[axis],
                                                            coarse.n[axis], b, index[axis],
                                                            w[axis]);
    for (int t = valid ? lane : INT_MAX; t < count[0] * count[1] * count[2]; t += lanes) {
        const int a = t % count[0], bb = t / count[0] % count[1], c = t / count[0] / count[1];
        const float weight = w[2][c] * w[1][bb] * w[0][a];
        if (weight != 0.0f)
            sum = fmaf(weight,
                       in[index[0][a] + (size_t)ig.n[0] * (index[1][bb] +
                                                           (size_t)ig.n[1] * index[2][c])],
                       sum);
    }
    for (int offset = lanes >> 1; offset > 0; offset >>= 1)
        sum += __shfl_down_sync(0xffffffffu, sum, offset, lanes);
    if (lane != 0 || !valid) return;
    if (RESTRICT) out[at] = sum;
    else out[at] += sum;
}

/* Stage 3 at every level: e(m) = sum_k K_l(k) q(m + k), the level's
   folded stencil (first, width per axis), indices wrapped; one thread per
   point, the stencil read by the whole warp at once. */
__global__ void __launch_bounds__(ELEC__MSM_BLOCK)
elec__k_pmsm_lattice_cutoff(float *e, const float *q, elec__pmsm_grid_args g,
                            const float *stencil, int3 first, int3 width) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int j = blockIdx.y, k = blockIdx.z;
    if (i >= g.n[0]) return;
    const int start = elec__pmsm_wrap_device(i + first.x, g.n[0]);
    float sum = 0.0f;
    for (int c = 0; c < width.z; c++) {
        const int kk = elec__pmsm_wrap_device(k + first.z + c, g.n[2]);
        for (int b = 0; b < width.y; b++) {
            const int jj = elec__pmsm_wrap_device(j + first.y + b, g.n[1]);
            const float *row = stencil + (size_t)width.x * (b + (size_t)width.y * c);
            const float *qrow = q + (size_t)g.n[0] * (jj + (size_t)g.n[1] * kk);
            int ii = start;
            for (int a = 0; a < width.x; a++) {
                sum = fmaf(__ldg(row + a), __ldg(qrow + ii), sum);
                if (++ii == g.n[0]) ii = 0;
            }
        }
    }
    e[i + (size_t)g.n[0] * (j + (size_t)g.n[1] * k)] = sum;
}

/* The short range's constants. */
typedef struct elec__pmsm_short_args {
    float coeff[ELEC__CUTOFF_MAX_ORDER + 1]; /* gamma(rho)/a = sum coeff_k (rho^2-1)^k */
    int order;                               /* the splitting                         */
    float cutoff2, inv_cutoff2;
    int3 reach;                              /* neighbour cells each way per axis     */
} elec__pmsm_short_args;

/* G(t) = gamma(rho)/a at t = rho^2 - 1 < 0 and its slope dG/dt. */
__device__ __forceinline__ float elec__pmsm_smooth(const elec__pmsm_short_args &s, float t,
                                                   float *slope) {
    float g = s.coeff[s.order], d = 0.0f;
    for (int k = s.order - 1; k >= 0; k--) {
        d = fmaf(d, t, g);
        g = fmaf(g, t, s.coeff[k]);
    }
    *slope = d;
    return g;
}

/* The excluded partners' smooth parts g_0(r) (nearest image) taken back
   out of atom a's sums (the pair sums leave the partners out, but the
   lattices carry their smooth parts): returns (sum q_j g_0'(r) d / r,
   -sum q_j g_0), to be added to (F_i / q_i, phi_i).  Both atoms wrapped
   as the cell list's scatter wraps them (elec__pmsm_wrapped), so that a
   pair half a box apart takes the very image the cell kernel left out
   (elec__pmsm_nearest_copies): min_image's rounding of a tie depends on
   the whole box lengths between the positions it is given. */
__device__ __forceinline__ float4 elec__pmsm_excluded_smooth(
    float4 a_given, const float4 *xyzq, int n, const int *excl_list, int eb, int ee,
    const elec__spme_geometry &g, const elec__pmsm_short_args &s) {
    float4 out = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    const float4 a = elec__pmsm_wrapped(a_given, g);
    for (int e = eb; e < ee; e++) {
        const int j = excl_list[e];
        if (j >= n) continue; /* a partner past this compute's n atoms */
        const float4 b = elec__pmsm_wrapped(xyzq[j], g);
        float dx = a.x - b.x, dy = a.y - b.y, dz = a.z - b.z;
        elec__min_image(&dx, &dy, &dz, g.length, g.inv_length);
        const float r2 = fmaf(dx, dx, fmaf(dy, dy, dz * dz));
        float smooth, f;
        if (r2 < s.cutoff2) { /* g_0 = G(t), grad g_0 = 2 G'(t) d / a^2 */
            float slope;
            smooth = elec__pmsm_smooth(s, fmaf(r2, s.inv_cutoff2, -1.0f), &slope);
            f = 2.0f * slope * s.inv_cutoff2;
        } else { /* g_0 = 1/r */
            const float rinv = rsqrtf(r2);
            smooth = rinv;
            f = -rinv * rinv * rinv;
        }
        out.w -= b.w * smooth;
        out.x = fmaf(b.w * f, dx, out.x);
        out.y = fmaf(b.w * f, dy, out.y);
        out.z = fmaf(b.w * f, dz, out.z);
    }
    return out;
}

/* The short range on the neighbour list (>>spme): MSM's pair function,
   g = 1/r - G(t), f = -g'(r)/r = 1/r^3 + 2 G'(t) / a^2, t = r^2/a^2 - 1. */
struct elec__pair_msm {
    /* 6 blocks an SM until 2026-11-29, as SPME's kept until 2026-11-27
       (it keeps 5 since its loop went without a branch), though its
       registers then spill
       (12 bytes with the branch, 28 without, 44 since the lists' two forms
       have loops of their own: ptxas, nvcc 13.0): at 2 and
       4 blocks DHFR-size's step took 274.3 and 279.3 us from a graph
       against 268.5, ApoA1-size's 732.2 and 738.8 against 688.0 (H100,
       with the branch); without it, at 5 against 6, DHFR-size 246.5-249.3
       against 253.3-257.2 us, ApoA1-size 663.4-666.8 against 657.0-660.4
       (bench/RESULTS.md, 2026-11-27, 20:13 UTC on).
       Since 2026-11-29 its parts are dealt four at a time (dealt, in
       elec__k_list_pairs) on 5 blocks an SM (8 bytes spilled, 47
       registers).  Steps from a graph, H200, bench_spme --quick, the
       ranges of three rounds alternating with the code before, measured
       on an experiment copy that took the chunk as a run-time argument:
       DHFR size 245.3-246.2 -> 234.3-234.8 us, ApoA1 size 625.3-632.1 ->
       589.0-591.9 (dealt on 6 blocks an SM 243.7-243.9 and 607.3-608.9,
       two at a time on 5 234.8-235.3 and 599.5-600.6).  As committed
       (the chunk fixed here) one make bench gave 237.1 and 590.6.  Five
       blocks with even shares were not timed on the H200, so how the gain
       splits between the two is not known (bench/RESULTS.md, 2026-11-29,
       11:48 UTC on).  SPME's pairs dealt were slower at every size:
       dealt = 0 there. */
    enum { min_blocks = 5, dealt = 4 };
    elec__pmsm_short_args s;
    __device__ __forceinline__ void operator()(float r2, float *g, float *f) const {
        const float rinv = elec_rsqrt_sfu(r2);
        float slope;
        const float smooth = elec__pmsm_smooth(s, fmaf(r2, s.inv_cutoff2, -1.0f), &slope);
        *g = rinv - smooth;
        *f = fmaf(2.0f * slope, s.inv_cutoff2, rinv * rinv * rinv);
    }
};

/* After the list's pairs, one thread per slot: the atom's pair sums from
   acc with its excluded partners' smooth parts taken out, written by
   original index as elec__k_pmsm_short writes them (out[i] = (q_i F,
   phi)); slot 0 lowers the build flag (elec__list_done). */
__global__ void __launch_bounds__(ELEC__MSM_BLOCK)
elec__k_pmsm_short_finish(elec__list L, const float4 *xyzq, int n, elec__spme_geometry g,
                          const int *excl_start, const int *excl_list,
                          elec__pmsm_short_args s, float4 *out) {
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = p < L.tile_start[L.tile_count] ? L.order[p] : -1;
    if (p == 0) elec__list_done(L, n);
    if (i < 0) return;
    const float4 acc = L.acc[p], a = xyzq[i];
    const float4 excluded = elec__pmsm_excluded_smooth(a, xyzq, n, excl_list, excl_start[i],
                                                       excl_start[i + 1], g, s);
    out[i] = make_float4(fmaf(a.w, excluded.x, acc.x), fmaf(a.w, excluded.y, acc.y),
                         fmaf(a.w, excluded.z, acc.z), acc.w + excluded.w);
}

/* Whether copies (box lengths an axis) is the image elec__min_image takes
   for a - b, whose smooth part elec__pmsm_excluded_smooth takes back out:
   an excluded pair is left out of the short range there alone (|d| <=
   L/2 on each axis took both images of a pair half a box apart, as the
   CPU's did: an audit). */
__device__ __forceinline__ bool elec__pmsm_nearest_copies(float4 a, float4 b,
                                                          const elec__spme_geometry &g,
                                                          const int copies[3]) {
    return (int)rintf((a.x - b.x) * g.inv_length.x) == copies[0] &&
           (int)rintf((a.y - b.y) * g.inv_length.y) == copies[1] &&
           (int)rintf((a.z - b.z) * g.inv_length.z) == copies[2];
}

/* One thread per atom in cell order: over the cells home + offset,
   |offset| <= reach, a cell past the box edge being an image shifted by a
   box length.  phi_i += q_j (1/r - G), F_i / q_i += q_j (1/r^3 + 2 G'(t)/a^2) d
   (an atom's own images add to phi only: their forces cancel); excluded
   partners are left out at their nearest image (elec__pmsm_nearest_copies),
   then each excluded pair's smooth part g_0(r) (nearest image) taken back
   out: phi_i -= q_j g_0, F_i / q_i += q_j g_0'(r) d / r.  out[i] = (q_i F,
   phi) by original index. */
__global__ void __launch_bounds__(ELEC__MSM_BLOCK)
elec__k_pmsm_short(const float4 *sorted, const int *sorted_index, const int *start,
                   const float4 *xyzq, int n, elec__spme_geometry g, elec__pmsm_cells c,
                   const int *excl_start, const int *excl_list, elec__pmsm_short_args s,
                   float4 *out, double *sums) {
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    int coincident = 0;
    if (p < n) {
        const float4 a = sorted[p];
        const int i = sorted_index[p], eb = excl_start[i], ee = excl_start[i + 1];
        const int home[3] = {min((int)(a.x * c.per_length.x), c.n.x - 1),
                             min((int)(a.y * c.per_length.y), c.n.y - 1),
                             min((int)(a.z * c.per_length.z), c.n.z - 1)};
        const int reach[3] = {s.reach.x, s.reach.y, s.reach.z}, cells[3] = {c.n.x, c.n.y, c.n.z};
        const float length[3] = {g.length.x, g.length.y, g.length.z};
        float phi = 0.0f, fx = 0.0f, fy = 0.0f, fz = 0.0f;
        for (int oz = -reach[2]; oz <= reach[2]; oz++)
            for (int oy = -reach[1]; oy <= reach[1]; oy++)
                for (int ox = -reach[0]; ox <= reach[0]; ox++) {
                    const int offset[3] = {ox, oy, oz};
                    int cell[3], copies[3];
                    float shift[3];
                    bool image = false;
                    for (int axis = 0; axis < 3; axis++) {
                        const int raw = home[axis] + offset[axis];
                        const int wrapped = elec__pmsm_wrap_device(raw, cells[axis]);
                        copies[axis] = (raw - wrapped) / cells[axis];
                        cell[axis] = wrapped;
                        shift[axis] = (float)copies[axis] * length[axis];
                        image |= copies[axis] != 0;
                    }
                    const int ci = cell[0] + cells[0] * (cell[1] + cells[1] * cell[2]);
                    const float ax = a.x - shift[0], ay = a.y - shift[1], az = a.z - shift[2];
                    for (int k = start[ci]; k < start[ci + 1]; k++) {
                        const float4 b = sorted[k];
                        const float dx = ax - b.x, dy = ay - b.y, dz = az - b.z;
                        const float r2 = fmaf(dx, dx, fmaf(dy, dy, dz * dz));
                        const bool self = k == p;
                        if (r2 >= s.cutoff2 || (self && !image)) continue;
                        if (ee > eb && !self &&
                            elec__pmsm_excluded(excl_list, eb, ee, sorted_index[k]) &&
                            elec__pmsm_nearest_copies(a, b, g, copies))
                            continue;
                        if (elec__spme_coincident(r2)) { coincident++; continue; }
                        const float rinv = rsqrtf(r2);
                        float slope;
                        const float smooth = elec__pmsm_smooth(s, fmaf(r2, s.inv_cutoff2, -1.0f),
                                                               &slope);
                        phi = fmaf(b.w, rinv - smooth, phi);
                        if (self) continue; /* an atom's images: +n and -n cancel */
                        const float f = b.w * (rinv * rinv * rinv + 2.0f * slope * s.inv_cutoff2);
                        fx = fmaf(f, dx, fx);
                        fy = fmaf(f, dy, fy);
                        fz = fmaf(f, dz, fz);
                    }
                }
        float4 excluded = elec__pmsm_excluded_smooth(xyzq[i], xyzq, n, excl_list, eb, ee, g, s);
        out[i] = make_float4(a.w * (fx + excluded.x), a.w * (fy + excluded.y),
                             a.w * (fz + excluded.z), phi + excluded.w);
    }
    if (__syncthreads_or(coincident != 0) && coincident)
        atomicAdd(sums + ELEC__PMSM_SUM_COINCIDENT, (double)coincident);
}

/* Stage 5 and the finish: phi and grad phi from e_0 at each atom (its
   position wrapped, weights and slopes per axis, indices wrapped), added
   to the short range; forces -dE/dr = scale (q_i F_short - q_i grad phi)
   written once, E_i = 1/2 q_i phi_i - 1/2 q_i^2 gamma(0)/a (each atom's
   own smooth part, which the lattices carry) summed in double. */
template <int S>
__global__ void __launch_bounds__(ELEC__MSM_BLOCK)
elec__k_pmsm_at_atoms(const float4 *xyzq, int n, const float *e0, elec__pmsm_grid_args g,
                      float3 inv_h, elec__spme_geometry geometry, elec__msm_basis_args b,
                      const float4 *short_range, double self, float scale, float *forces,
                      double *sums) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    double energy = 0.0, charge = 0.0;
    if (i < n) {
        const float4 a = elec__pmsm_wrapped(xyzq[i], geometry);
        float w[3][2 * S], dw[3][2 * S], sum = 0.0f, gx = 0.0f, gy = 0.0f, gz = 0.0f;
        int first[3];
        first[0] = elec__msm_slopes_device<S>(a.x * inv_h.x, b, w[0], dw[0]);
        first[1] = elec__msm_slopes_device<S>(a.y * inv_h.y, b, w[1], dw[1]);
        first[2] = elec__msm_slopes_device<S>(a.z * inv_h.z, b, w[2], dw[2]);
        for (int c = 0; c < 2 * S; c++) {
            const int kk = elec__pmsm_wrap_device(first[2] + c, g.n[2]);
            for (int bb = 0; bb < 2 * S; bb++) {
                const int jj = elec__pmsm_wrap_device(first[1] + bb, g.n[1]);
                const float *row = e0 + (size_t)g.n[0] * (jj + (size_t)g.n[1] * kk);
                float v = 0.0f, vx = 0.0f;
#pragma unroll
                for (int ii = 0; ii < 2 * S; ii++) {
                    const float e = __ldg(row + elec__pmsm_wrap_device(first[0] + ii, g.n[0]));
                    v = fmaf(w[0][ii], e, v);
                    vx = fmaf(dw[0][ii], e, vx);
                }
                sum = fmaf(w[1][bb] * w[2][c], v, sum);
                gx = fmaf(w[1][bb] * w[2][c], vx, gx);
                gy = fmaf(dw[1][bb] * w[2][c], v, gy);
                gz = fmaf(w[1][bb] * dw[2][c], v, gz);
            }
        }
        const float4 sr = short_range[i];
        if (forces) {
            forces[3 * i] = scale * (sr.x - a.w * gx * inv_h.x);
            forces[3 * i + 1] = scale * (sr.y - a.w * gy * inv_h.y);
            forces[3 * i + 2] = scale * (sr.z - a.w * gz * inv_h.z);
        }
        energy = 0.5 * (double)a.w * ((double)sr.w + (double)sum - (double)a.w * self);
        charge = a.w;
    }
    elec__spme_block_add(sums + ELEC__PMSM_SUM_ENERGY, energy);
    elec__spme_block_add(sums + ELEC__PMSM_SUM_CHARGE, charge);
}

/* The lattice cutoff by FFT.  Level l's sum e(m) = sum_k K_l(k) q(m + k),
   k over the folded stencil with indices wrapped, is a circular
   convolution of q with the stencil wrapped onto the lattice (K_l(k) =
   K_l(-k) on each axis): e = F^-1(F(q) F(K_l)), the same sum in another
   order.  F(K_l) is real (K_l even) and computed once, in double on the
   host, at create (elec__pmsm_stencil_spectrum).  One thread a point over
   the whole stencil took 1.1 ms at DHFR-size's finest level (32^3 points, a 27^3 stencil) on an H100;
   a cuFFT round trip of 32^3 takes microseconds.  Levels with an axis of
   one point, or past ELEC__PMSM_FFT_HOST_COST for the transform at
   create (a 256^3 level), keep the direct kernel. */
typedef struct elec__pmsm_fft {
    int used[ELEC_MSM_MAX_LEVELS];
    cufftHandle forward[ELEC_MSM_MAX_LEVELS], backward[ELEC_MSM_MAX_LEVELS];
    int made[ELEC_MSM_MAX_LEVELS];   /* plans made (2 bits: forward, backward) */
    float *kernel[ELEC_MSM_MAX_LEVELS]; /* F(K_l) / points, (n_x/2+1) n_y n_z  */
    int spectrum_points[ELEC_MSM_MAX_LEVELS];
    cufftComplex *spectrum;          /* scratch, the largest level's           */
    void *block;
} elec__pmsm_fft;

struct elec_cuda_msm_periodic_handle {
    elec__msm_device plan;   /* resolved params, the periodic hierarchy, the
                                anterpolation's charge map                  */
    elec_box box;
    size_t max_atoms;
    elec__spme_geometry g;
    elec__pmsm_cells cells;  /* the short range's cell list                 */
    elec__pmsm_short_args s;
    int cell_count;
    double top;              /* C (elec__pmsm_constant): energy C Q^2 / 2  */
    void *block;             /* one device allocation for what follows      */
    int *cell_counts, *cell_start, *atom_cell, *atom_slot, *sorted_index;
    int *excl_start, *excl_list;
    float4 *sorted, *short_range;
    double *sums;            /* ELEC__PMSM_SUMS raw sums                    */
    elec__pmsm_fft fft;      /* the lattice cutoff by FFT                   */
    /* the short range on SPME's neighbour list where the box allows
       (elec__pmsm_list_fits) and the list was made (list_block not NULL);
       else the cell list above */
    elec__list list;
    void *list_block;        /* the list's buffers                          */
    int pair_blocks, update_blocks;
};

/* The list's Verlet buffer for periodic MSM (SPME's default). */
#define ELEC__PMSM_LIST_SKIN 1.5

/* Whether the short range can run on the neighbour list (where the list
   cannot be made, e.g. without cooperative launch, the handle keeps the
   cell kernel): cutoff + skin within half the shortest edge, so that only
   each pair's nearest image is ever within the list's reach.  There the list's rules (an atom's own
   images out of reach, an excluded pair skipped at whatever image the
   list holds) are the cell kernel's (own images summed, exclusions at the
   nearest image only); a longer cutoff takes the cell kernel. */
static int elec__pmsm_list_fits(const elec_box *box, double cutoff) {
    double shortest = box->length[0];
    if (box->length[1] < shortest) shortest = box->length[1];
    if (box->length[2] < shortest) shortest = box->length[2];
    return cutoff + ELEC__PMSM_LIST_SKIN <= 0.5 * shortest;
}

/* The periodic handle's neighbour list: its shape, grids and buffers, made
   ready for a first compute (which builds it). */
static elec_status elec__pmsm_list_setup(elec_cuda_msm_periodic_handle *h, double cutoff,
                                         elec_error *err) {
    elec_status status = ELEC_OK;
    int sm_count = 0;
    size_t bytes;
    status = elec__list_plan(&h->list, &h->box, h->max_atoms, cutoff, ELEC__PMSM_LIST_SKIN,
                             err);
    if (status != ELEC_OK) return status;
    ELEC__CUDA_TRY(cudaDeviceGetAttribute(&sm_count, cudaDevAttrMultiProcessorCount,
                                          h->plan.device));
    if ((status = elec__list_pair_grid<elec__pair_msm>(sm_count, &h->pair_blocks, err)) !=
        ELEC_OK)
        goto cleanup;
    status = elec__list_update_grid(&h->list, h->plan.device, sm_count, &h->update_blocks,
                                    err);
    if (status != ELEC_OK) goto cleanup;
    bytes = elec__list_layout(&h->list, h->max_atoms, NULL, 0);
    ELEC__CUDA_TRY(elec__cuda_alloc(&h->list_block, bytes));
    elec__list_layout(&h->list, h->max_atoms, (char *)h->list_block, 0);
    if ((status = elec__list_reset(&h->list, err)) != ELEC_OK) goto cleanup;
cleanup:
    return status;
}

/* The short range on the neighbour list: update (check, rebuild when due),
   MSM's pairs, the finish into h->short_range. */
static elec_status elec__pmsm_list_short(elec_cuda_msm_periodic_handle *h, const float4 *xyzq,
                                         int n, cudaStream_t stream, elec_error *err) {
    elec_status status = ELEC_OK;
    elec__pair_msm pair;
    pair.s = h->s;
    status = elec__list_update(&h->list, xyzq, n, h->excl_start, h->excl_list,
                               h->update_blocks, ELEC__CARVEOUT_DEFAULT, NULL, 0u, stream, err);
    if (status != ELEC_OK) return status;
    status = elec__list_evaluate(&h->list, pair, h->excl_start, h->excl_list, n,
                                 h->sums + ELEC__PMSM_SUM_COINCIDENT, h->pair_blocks,
                                 ELEC__LAUNCH_PLAIN, stream, err);
    if (status != ELEC_OK) return status;
    elec__k_pmsm_short_finish<<<(unsigned)((h->list.slots + ELEC__MSM_BLOCK - 1) /
                                           ELEC__MSM_BLOCK),
                                ELEC__MSM_BLOCK, 0, stream>>>(
        h->list, xyzq, n, h->g, h->excl_start, h->excl_list, h->s, h->short_range);
    ELEC__CUDA_TRY(cudaGetLastError());
cleanup:
    return status;
}

/* Taking q_0's mean out (elec__pmsm_center_charges): each thread reads
   ELEC__PMSM_CENTER_LOADS points at once, in at most
   ELEC__PMSM_CENTER_BLOCKS blocks, whose partial sums, the mean and a
   count of the blocks done lie in md->charge_partials. */
#define ELEC__PMSM_CENTER_BLOCKS 1024
#define ELEC__PMSM_CENTER_LOADS 4

/* The plan of a periodic hierarchy (elec__pmsm_shape_of) for resolved p on
   `device`: lattices and every level's folded stencil in one device block,
   the charge map of the finest lattice (periodic) for max_atoms atoms. */
static elec_status elec__msm_device_setup_periodic(elec__msm_device *md,
                                                   const elec_msm_params *p,
                                                   const elec__pmsm_shape *shape,
                                                   size_t max_atoms, int device,
                                                   elec_error *err) {
    elec_status status = ELEC_OK;
    size_t stencil_points = 0, at = 0, biggest = 0;
    double *host = NULL;
    float *host_float = NULL;
    memset(md, 0, sizeof *md);
    if (shape->levels > 0 && (status = elec__msm_finest_fits_grid(shape->n[0], err)) != ELEC_OK)
        return status;
    md->p = *p;
    md->periodic = 1;
    md->pshape = *shape;
    md->device = device;
    md->max_atoms = max_atoms;
    md->shape.levels = shape->levels;
    for (int l = 0; l < shape->levels; l++) {
        size_t sp = elec__pmsm_stencil_points(shape, l);
        for (int axis = 0; axis < 3; axis++) md->shape.n[l][axis] = shape->n[l][axis];
        md->points += elec__pmsm_shape_points(shape, l);
        stencil_points += sp;
        if (sp > biggest) biggest = sp;
    }
    host = (double *)ELEC_MALLOC((biggest + 1) * sizeof *host);
    host_float = (float *)ELEC_MALLOC((stencil_points + 1) * sizeof *host_float);
    if (!host || !host_float) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory for MSM stencils");
        goto cleanup;
    }
    for (int l = 0; l < shape->levels; l++) {
        const size_t sp = elec__pmsm_stencil_points(shape, l);
        elec__pmsm_stencil_fill(p, shape, l, host);
        for (size_t k = 0; k < sp; k++) host_float[at + k] = (float)host[k];
        at += sp;
    }
    ELEC__CUDA_TRY(cudaSetDevice(device));
    {
        elec_lattice finest;
        elec_chargemap_params cp;
        memset(&cp, 0, sizeof cp);
        for (int axis = 0; axis < 3; axis++) {
            finest.dims[axis] = shape->n[0][axis];
            finest.spacing[axis] = shape->h[0][axis];
            finest.origin[axis] = 0.0;
        }
        cp.basis = ELEC_CHARGEMAP_SKEEL;
        cp.order = 2 * elec_msm_support((int)p->interpolation);
        cp.periodic = 1;
        cp.variant = ELEC__MSM_CHARGEMAP_VARIANT;
        status = elec_cuda_chargemap_create(&finest, max_atoms, &cp, device, &md->anterpolation,
                                            err);
        if (status != ELEC_OK) goto cleanup;
    }
    ELEC__CUDA_TRY(cudaStreamCreateWithFlags(&md->stream, cudaStreamNonBlocking));
    ELEC__CUDA_TRY(elec__cuda_alloc(&md->block,
                                    ELEC__MSM_ALIGN(2 * md->points * sizeof(float)) +
                                        ELEC__MSM_ALIGN(stencil_points * sizeof(float)) +
                                        (ELEC__PMSM_CENTER_BLOCKS + 2) * sizeof(double)));
    md->lattices = (float *)md->block;
    md->stencil = (float *)((char *)md->block + ELEC__MSM_ALIGN(2 * md->points * sizeof(float)));
    md->charge_partials =
        (double *)((char *)md->stencil + ELEC__MSM_ALIGN(stencil_points * sizeof(float)));
    {
        float *next = md->lattices;
        const float *stencil = md->stencil;
        for (int l = 0; l < shape->levels; l++) {
            md->q[l] = next;
            md->e[l] = next + elec__pmsm_shape_points(shape, l);
            next = md->e[l] + elec__pmsm_shape_points(shape, l);
            md->stencil_of[l] = stencil;
            stencil += elec__pmsm_stencil_points(shape, l);
            md->factor_of[l] = 1.0f;
        }
    }
    ELEC__CUDA_TRY(cudaMemset(md->lattices, 0, 2 * md->points * sizeof(float)));
    /* the count of blocks done (elec__k_pmsm_charge_mean) starts at 0 */
    ELEC__CUDA_TRY(cudaMemset(md->charge_partials, 0,
                              (ELEC__PMSM_CENTER_BLOCKS + 2) * sizeof(double)));
    ELEC__CUDA_TRY(cudaMemcpy(md->stencil, host_float, stencil_points * sizeof(float),
                              cudaMemcpyHostToDevice));
    ELEC__CUDA_TRY(elec__cuda_setup_landed());
cleanup:
    if (status != ELEC_OK) elec__msm_device_free(md);
    ELEC_FREE(host);
    ELEC_FREE(host_float);
    return status;
}

/* spectrum *= kernel (real), point by point. */
__global__ void __launch_bounds__(ELEC__MSM_BLOCK)
elec__k_pmsm_spectrum_scale(cufftComplex *spectrum, const float *kernel, int count) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    const float k = kernel[i];
    spectrum[i].x *= k;
    spectrum[i].y *= k;
}

static void elec__pmsm_fft_free(elec__pmsm_fft *fft) {
    for (int l = 0; l < ELEC_MSM_MAX_LEVELS; l++) {
        if (fft->made[l] & 1) cufftDestroy(fft->forward[l]);
        if (fft->made[l] & 2) cufftDestroy(fft->backward[l]);
    }
    elec__cuda_free_sync(fft->block);
    memset(fft, 0, sizeof *fft);
}

/* The DFT of a wrapped stencil, x fastest over (n_x/2 + 1) n_y n_z
   frequencies, in double on the host.  The stencil is even along each
   axis (K_l depends on |k_x|, |k_y|, |k_z|; wrapping keeps that), so its
   DFT is real and separable: sum_m w(m) cos(2 pi k_x m_x / n_x) cos(..y)
   cos(..z), one axis at a time: points (n_x + n_y + n_z) / 2 multiply-adds
   (for 128^3, 4e8; an O(n log n) transform is the better way for larger
   lattices, not done yet).
   work: (n_x/2 + 1) n_y n_z doubles; cosines: n_x^2 + n_y^2 + n_z^2. */
static void elec__pmsm_stencil_spectrum(const double *wrapped, const int *n, double *out,
                                        double *work, double *cosines) {
    const double two_pi = 6.283185307179586476925;
    const int half = n[0] / 2 + 1;
    double *c[3];
    c[0] = cosines;
    c[1] = c[0] + (size_t)n[0] * n[0];
    c[2] = c[1] + (size_t)n[1] * n[1];
    for (int axis = 0; axis < 3; axis++)
        for (int k = 0; k < n[axis]; k++)
            for (int m = 0; m < n[axis]; m++) /* k m mod n keeps the angle exact */
                c[axis][(size_t)k * n[axis] + m] =
                    cos(two_pi * (double)(((long)k * m) % n[axis]) / n[axis]);
    for (int mz = 0; mz < n[2]; mz++) /* along x: work(kx, my, mz) */
        for (int my = 0; my < n[1]; my++) {
            const double *row = wrapped + (size_t)n[0] * (my + (size_t)n[1] * mz);
            for (int kx = 0; kx < half; kx++) {
                double sum = 0.0;
                for (int mx = 0; mx < n[0]; mx++) sum += row[mx] * c[0][(size_t)kx * n[0] + mx];
                work[kx + (size_t)half * (my + (size_t)n[1] * mz)] = sum;
            }
        }
    for (int mz = 0; mz < n[2]; mz++) /* along y: out(kx, ky, mz) */
        for (int ky = 0; ky < n[1]; ky++)
            for (int kx = 0; kx < half; kx++) {
                double sum = 0.0;
                for (int my = 0; my < n[1]; my++)
                    sum += work[kx + (size_t)half * (my + (size_t)n[1] * mz)] *
                           c[1][(size_t)ky * n[1] + my];
                out[kx + (size_t)half * (ky + (size_t)n[1] * mz)] = sum;
            }
    for (int ky = 0; ky < n[1]; ky++) /* along z: work(kx, ky, kz), copied to out */
        for (int kx = 0; kx < half; kx++)
            for (int kz = 0; kz < n[2]; kz++) {
                double sum = 0.0;
                for (int mz = 0; mz < n[2]; mz++)
                    sum += out[kx + (size_t)half * (ky + (size_t)n[1] * mz)] *
                           c[2][(size_t)kz * n[2] + mz];
                work[kx + (size_t)half * (ky + (size_t)n[1] * kz)] = sum;
            }
    memcpy(out, work, (size_t)half * n[1] * n[2] * sizeof *out);
}

/* The most multiply-adds the host transform may take for one level: about
   a second on one core (a 256^3 level takes 6.4e9 and stays direct). */
#define ELEC__PMSM_FFT_HOST_COST 2.5e9

/* The FFT plans and stencil spectra of a periodic plan's levels, on its
   device (current). */
static elec_status elec__pmsm_fft_setup(elec__pmsm_fft *fft, const elec_msm_params *p,
                                        const elec__pmsm_shape *shape, elec_error *err) {
    elec_status status = ELEC_OK;
    size_t at = 0, largest_points = 0, largest_spectrum = 0, largest_stencil = 0;
    size_t largest_cosines = 0;
    double *stencil = NULL, *wrapped = NULL, *spectrum = NULL, *work = NULL, *cosines = NULL;
    float *host_kernel = NULL;
    memset(fft, 0, sizeof *fft);
    for (int l = 0; l < shape->levels; l++) {
        const int *n = shape->n[l];
        /* the host transform costs points (n_x + n_y + n_z) / 2: at most
           ELEC__PMSM_FFT_HOST_COST, else the direct kernel */
        fft->used[l] = n[0] > 1 && n[1] > 1 && n[2] > 1 &&
                       (double)elec__pmsm_shape_points(shape, l) * (n[0] + n[1] + n[2]) / 2.0 <=
                           ELEC__PMSM_FFT_HOST_COST;
        if (!fft->used[l]) continue;
        fft->spectrum_points[l] = (n[0] / 2 + 1) * n[1] * n[2];
        at += ELEC__MSM_ALIGN((size_t)fft->spectrum_points[l] * sizeof(float));
        if ((size_t)fft->spectrum_points[l] > largest_spectrum)
            largest_spectrum = (size_t)fft->spectrum_points[l];
        if (elec__pmsm_shape_points(shape, l) > largest_points)
            largest_points = elec__pmsm_shape_points(shape, l);
        if (elec__pmsm_stencil_points(shape, l) > largest_stencil)
            largest_stencil = elec__pmsm_stencil_points(shape, l);
        if ((size_t)n[0] * n[0] + (size_t)n[1] * n[1] + (size_t)n[2] * n[2] > largest_cosines)
            largest_cosines = (size_t)n[0] * n[0] + (size_t)n[1] * n[1] + (size_t)n[2] * n[2];
    }
    if (largest_points == 0) return ELEC_OK;
    stencil = (double *)ELEC_MALLOC(largest_stencil * sizeof *stencil);
    wrapped = (double *)ELEC_MALLOC(largest_points * sizeof *wrapped);
    spectrum = (double *)ELEC_MALLOC(largest_spectrum * sizeof *spectrum);
    work = (double *)ELEC_MALLOC(largest_spectrum * sizeof *work);
    cosines = (double *)ELEC_MALLOC(largest_cosines * sizeof *cosines);
    host_kernel = (float *)ELEC_MALLOC(largest_spectrum * sizeof *host_kernel);
    if (!stencil || !wrapped || !spectrum || !work || !cosines || !host_kernel) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory for MSM's FFTs");
        goto cleanup;
    }
    ELEC__CUDA_TRY(elec__cuda_alloc(&fft->block, at + largest_spectrum * sizeof(cufftComplex)));
    at = 0;
    for (int l = 0; l < shape->levels; l++) {
        const int *n = shape->n[l];
        const size_t points = elec__pmsm_shape_points(shape, l);
        if (!fft->used[l]) continue;
        fft->kernel[l] = (float *)((char *)fft->block + at);
        at += ELEC__MSM_ALIGN((size_t)fft->spectrum_points[l] * sizeof(float));
        ELEC__CUFFT_TRY(cufftPlan3d(&fft->forward[l], n[2], n[1], n[0], CUFFT_R2C));
        fft->made[l] |= 1;
        ELEC__CUFFT_TRY(cufftPlan3d(&fft->backward[l], n[2], n[1], n[0], CUFFT_C2R));
        fft->made[l] |= 2;
        elec__pmsm_stencil_fill(p, shape, l, stencil);
        elec__pmsm_wrap_stencil(shape, l, stencil, wrapped);
        elec__pmsm_stencil_spectrum(wrapped, n, spectrum, work, cosines);
        /* 1/points: cuFFT's inverse is unnormalised */
        for (int k = 0; k < fft->spectrum_points[l]; k++)
            host_kernel[k] = (float)(spectrum[k] / (double)points);
        ELEC__CUDA_TRY(cudaMemcpy(fft->kernel[l], host_kernel,
                                  (size_t)fft->spectrum_points[l] * sizeof *host_kernel,
                                  cudaMemcpyHostToDevice));
    }
    fft->spectrum = (cufftComplex *)((char *)fft->block + at);
cleanup:
    ELEC_FREE(stencil);
    ELEC_FREE(wrapped);
    ELEC_FREE(spectrum);
    ELEC_FREE(work);
    ELEC_FREE(cosines);
    ELEC_FREE(host_kernel);
    if (status != ELEC_OK) elec__pmsm_fft_free(fft);
    return status;
}

/* Level l's lattice cutoff by FFT (elec__pmsm_fft) on `stream`. */
static elec_status elec__pmsm_fft_level(const elec__pmsm_fft *fft, int l, float *q, float *e,
                                        cudaStream_t stream, elec_error *err) {
    elec_status status = ELEC_OK;
    const int count = fft->spectrum_points[l];
    ELEC__CUFFT_TRY(cufftSetStream(fft->forward[l], stream));
    ELEC__CUFFT_TRY(cufftSetStream(fft->backward[l], stream));
    ELEC__CUFFT_TRY(cufftExecR2C(fft->forward[l], q, fft->spectrum));
    elec__k_pmsm_spectrum_scale<<<(unsigned)((count + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK),
                                  ELEC__MSM_BLOCK, 0, stream>>>(fft->spectrum, fft->kernel[l],
                                                                count);
    ELEC__CUDA_TRY(cudaGetLastError());
    ELEC__CUFFT_TRY(cufftExecC2R(fft->backward[l], fft->spectrum, e));
cleanup:
    return status;
}

/* ---- >>msm periodic MSM: the finest charges' mean taken out.  A net
   charge Q puts Q / N_l on every point of level l, and its stencil
   (all K_l > 0) turns that into a potential far larger than the rest:
   float lattices then round the rest at the mean's scale (600 charges of
   +1 in a 21 A box: forces 1.2e-4 from the CPU's double, energy 4.6e-5).
   With q_0's mean taken out every level's total is zero (restriction keeps
   it), the lattices pass on no mean, and the handle's constant carries it
   whole (C(a_0), elec_cuda_msm_periodic_create). */
/* The sum of v over the block, in every thread; blockDim.x a multiple of
   32, at most 1024. */
__device__ static double elec__pmsm_block_sum(double v) {
    __shared__ double warp_sums[32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? warp_sums[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* The blocks of the mean's sum (elec__k_pmsm_charge_mean) for `points`
   points: a thread's ELEC__PMSM_CENTER_LOADS loads each, at most
   ELEC__PMSM_CENTER_BLOCKS blocks. */
static unsigned elec__pmsm_center_blocks(size_t points) {
    const size_t per_block = (size_t)ELEC__MSM_BLOCK * ELEC__PMSM_CENTER_LOADS;
    const size_t blocks = (points + per_block - 1) / per_block;
    return (unsigned)(blocks < ELEC__PMSM_CENTER_BLOCKS ? (blocks > 0 ? blocks : 1)
                                                        : ELEC__PMSM_CENTER_BLOCKS);
}

/* The mean of q in sums[ELEC__PMSM_CENTER_BLOCKS]: each block's
   grid-stride share summed in double into sums[block], the last block to
   finish (a count in sums[ELEC__PMSM_CENTER_BLOCKS + 1], zeroed again by
   it) adding the partials in a fixed order (each thread a stride of
   them, then the block's shuffle tree): the same sum every compute,
   whichever block comes last.  A thread's ELEC__PMSM_CENTER_LOADS loads
   are issued together.  With 128 blocks, each thread's loads one after
   another, and every block of the subtraction summing the 128 partials
   again, the two kernels added 2.9 us to the DHFR-size step from a graph
   and 8.6 us at ApoA1 size (262,144 points; H200).  This form, side by
   side with that one on an H100: a compute called directly 4-12 us
   faster, a step from a graph the same within 1.5 us (bench/RESULTS.md,
   2026-12-05). */
__global__ void __launch_bounds__(ELEC__MSM_BLOCK)
elec__k_pmsm_charge_mean(const float *q, size_t points, double *sums) {
    __shared__ bool last;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    unsigned *done = (unsigned *)(sums + ELEC__PMSM_CENTER_BLOCKS + 1);
    double v = 0.0;
    for (size_t m = blockIdx.x * (size_t)blockDim.x + threadIdx.x; m < points;
         m += ELEC__PMSM_CENTER_LOADS * stride) {
        float x[ELEC__PMSM_CENTER_LOADS];
#pragma unroll
        for (int k = 0; k < ELEC__PMSM_CENTER_LOADS; k++)
            x[k] = m + k * stride < points ? q[m + k * stride] : 0.0f;
#pragma unroll
        for (int k = 0; k < ELEC__PMSM_CENTER_LOADS; k++) v += x[k];
    }
    v = elec__pmsm_block_sum(v);
    if (threadIdx.x == 0) {
        sums[blockIdx.x] = v;
        __threadfence(); /* the partial before the count that says it is there */
        last = atomicAdd(done, 1u) == gridDim.x - 1;
    }
    __syncthreads(); /* also: every warp has read warp_sums before the next sum */
    if (!last) return;
    __threadfence();
    double total = 0.0;
    for (unsigned b = threadIdx.x; b < gridDim.x; b += blockDim.x) total += __ldcg(sums + b);
    total = elec__pmsm_block_sum(total);
    if (threadIdx.x == 0) {
        sums[ELEC__PMSM_CENTER_BLOCKS] = total / (double)points;
        *done = 0u;
    }
}

/* q -= the mean (sums[ELEC__PMSM_CENTER_BLOCKS], in float). */
__global__ void __launch_bounds__(ELEC__MSM_BLOCK)
elec__k_pmsm_charge_center(float *q, size_t points, const double *sums) {
    const float mean = (float)sums[ELEC__PMSM_CENTER_BLOCKS];
    for (size_t m = blockIdx.x * (size_t)blockDim.x + threadIdx.x; m < points;
         m += (size_t)gridDim.x * blockDim.x)
        q[m] -= mean;
}

/* Takes q_0's mean out on `stream` (the comment above). */
static elec_status elec__pmsm_center_charges(elec__msm_device *md, cudaStream_t stream,
                                             elec_error *err) {
    elec_status status = ELEC_OK;
    const size_t points = elec__pmsm_shape_points(&md->pshape, 0);
    const size_t blocks = (points + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK;
    elec__k_pmsm_charge_mean<<<elec__pmsm_center_blocks(points), ELEC__MSM_BLOCK, 0, stream>>>(
        md->q[0], points, md->charge_partials);
    ELEC__CUDA_TRY(cudaGetLastError());
    elec__k_pmsm_charge_center<<<(unsigned)(blocks < 4096 ? blocks : 4096), ELEC__MSM_BLOCK, 0,
                                 stream>>>(md->q[0], points, md->charge_partials);
    ELEC__CUDA_TRY(cudaGetLastError());
cleanup:
    return status;
}

/* Threads per output point of a transfer over `points` points: enough to
   keep ~131,072 threads busy, at most a warp.  Measured on an H100 side by
   side (bench_spme --quick, full / graph us): DHFR-size 302-312 / 265-266,
   ApoA1-size 743-754 / 698-699; a warp only below 4096 points 338-349 /
   299-301 and 796-806 / 751; always a warp 330-334 / 286-287 and 975-978
   / 921-922; always one thread (this kernel) 471-480 / 428-432 and
   920-939 / 878-886. */
static int elec__pmsm_transfer_lanes(size_t points) {
    int lanes = 1;
    while (lanes < 32 && points * (size_t)lanes < ((size_t)1 << 17)) lanes <<= 1;
    return lanes;
}

/* Stages 1 to 4 of a periodic plan on `stream`: charges in, e_0 out; the
   lattice cutoff by FFT on the levels fft says (NULL: none). */
template <int S>
static elec_status elec__pmsm_device_stages(elec__msm_device *md, const elec__pmsm_fft *fft,
                                            const float4 *d_atoms, int n, cudaStream_t stream,
                                            elec_error *err) {
    elec_status status = ELEC_OK;
    const elec__pmsm_shape &shape = md->pshape;
    const elec__msm_basis_args b = elec__msm_basis_of((int)md->p.interpolation);
    const int levels = shape.levels;
    elec__pmsm_grid_args g[ELEC_MSM_MAX_LEVELS];
    for (int l = 0; l < levels; l++)
        for (int axis = 0; axis < 3; axis++) g[l].n[axis] = shape.n[l][axis];
    if (n > 0) {
        status = elec__chargemap_enqueue(md->anterpolation, d_atoms, n, md->q[0], stream, NULL,
                                         err);
        if (status != ELEC_OK) goto cleanup;
        if ((status = elec__pmsm_center_charges(md, stream, err)) != ELEC_OK) goto cleanup;
    } else {
        ELEC__CUDA_TRY(cudaMemsetAsync(md->q[0], 0,
                                       elec__pmsm_shape_points(&shape, 0) * sizeof(float),
                                       stream));
    }
    for (int l = 0; l + 1 < levels; l++) {
        const size_t count = elec__pmsm_shape_points(&shape, l + 1);
        const int lanes = elec__pmsm_transfer_lanes(count);
        elec__k_pmsm_transfer<S, true>
            <<<(unsigned)((lanes * count + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK),
               ELEC__MSM_BLOCK, 0, stream>>>(md->q[l + 1], g[l + 1], md->q[l], g[l], g[l],
                                             g[l + 1], b, lanes);
        ELEC__CUDA_TRY(cudaGetLastError());
    }
    for (int l = 0; l < levels; l++) {
        if (fft && fft->used[l]) {
            status = elec__pmsm_fft_level(fft, l, md->q[l], md->e[l], stream, err);
            if (status != ELEC_OK) goto cleanup;
            continue;
        }
        dim3 grid((g[l].n[0] + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK, g[l].n[1], g[l].n[2]);
        elec__k_pmsm_lattice_cutoff<<<grid, ELEC__MSM_BLOCK, 0, stream>>>(
            md->e[l], md->q[l], g[l], md->stencil_of[l],
            make_int3((int)shape.stencil_first[l][0], (int)shape.stencil_first[l][1],
                      (int)shape.stencil_first[l][2]),
            make_int3(shape.stencil_width[l][0], shape.stencil_width[l][1],
                      shape.stencil_width[l][2]));
        ELEC__CUDA_TRY(cudaGetLastError());
    }
    for (int l = levels - 2; l >= 0; l--) {
        const size_t count = elec__pmsm_shape_points(&shape, l);
        const int lanes = elec__pmsm_transfer_lanes(count);
        elec__k_pmsm_transfer<S, false>
            <<<(unsigned)((lanes * count + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK),
               ELEC__MSM_BLOCK, 0, stream>>>(md->e[l], g[l], md->e[l + 1], g[l + 1], g[l],
                                             g[l + 1], b, lanes);
        ELEC__CUDA_TRY(cudaGetLastError());
    }
cleanup:
    return status;
}

/* The interpolation at the atoms and the finish, for the support S. */
template <int S>
static elec_status elec__pmsm_device_finish(elec_cuda_msm_periodic_handle *h,
                                            const float4 *d_xyzq, int n, float *d_forces,
                                            cudaStream_t stream, elec_error *err) {
    elec_status status = ELEC_OK;
    const elec__msm_device *md = &h->plan;
    elec__pmsm_grid_args g;
    const float3 inv_h = make_float3((float)(1.0 / md->pshape.h[0][0]),
                                     (float)(1.0 / md->pshape.h[0][1]),
                                     (float)(1.0 / md->pshape.h[0][2]));
    for (int axis = 0; axis < 3; axis++) g.n[axis] = md->pshape.n[0][axis];
    elec__k_pmsm_at_atoms<S><<<(unsigned)((n + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK),
                               ELEC__MSM_BLOCK, 0, stream>>>(
        d_xyzq, n, md->e[0], g, inv_h, h->g, elec__msm_basis_of((int)md->p.interpolation),
        h->short_range, elec_msm_gamma(0.0, md->p.splitting) / md->p.cutoff,
        (float)md->p.scale, d_forces, h->sums);
    ELEC__CUDA_TRY(cudaGetLastError());
cleanup:
    return status;
}

/* The short range over the cell list (boxes the list does not take):
   count, scan, scatter, then the cell kernel into h->short_range. */
static elec_status elec__pmsm_cell_short(elec_cuda_msm_periodic_handle *h, const float4 *xyzq,
                                         int n, cudaStream_t stream, elec_error *err) {
    elec_status status = ELEC_OK;
    const unsigned atom_blocks = (unsigned)((n + ELEC__MSM_BLOCK - 1) / ELEC__MSM_BLOCK);
    ELEC__CUDA_TRY(cudaMemsetAsync(h->cell_counts, 0, (size_t)h->cell_count * sizeof(int),
                                   stream));
    elec__k_pmsm_cells_count<<<atom_blocks, ELEC__MSM_BLOCK, 0, stream>>>(
        xyzq, n, h->g, h->cells, h->cell_counts, h->atom_cell, h->atom_slot);
    ELEC__CUDA_TRY(cudaGetLastError());
    elec__k_pmsm_cells_scan<<<1, ELEC__PMSM_SCAN_THREADS, 0, stream>>>(
        h->cell_counts, h->cell_start, h->cell_count);
    ELEC__CUDA_TRY(cudaGetLastError());
    elec__k_pmsm_cells_scatter<<<atom_blocks, ELEC__MSM_BLOCK, 0, stream>>>(
        xyzq, n, h->g, h->cell_start, h->atom_cell, h->atom_slot, h->sorted, h->sorted_index);
    ELEC__CUDA_TRY(cudaGetLastError());
    elec__k_pmsm_short<<<atom_blocks, ELEC__MSM_BLOCK, 0, stream>>>(
        h->sorted, h->sorted_index, h->cell_start, xyzq, n, h->g, h->cells, h->excl_start,
        h->excl_list, h->s, h->short_range, h->sums);
    ELEC__CUDA_TRY(cudaGetLastError());
cleanup:
    return status;
}

/* One evaluation on `stream`: the short range, the hierarchy, the finish. */
static elec_status elec__pmsm_enqueue(elec_cuda_msm_periodic_handle *h, const float4 *xyzq,
                                      int n, float *forces, cudaStream_t stream,
                                      elec_error *err) {
    elec_status status = ELEC_OK;
    ELEC__CUDA_TRY(cudaMemsetAsync(h->sums, 0, ELEC__PMSM_SUMS * sizeof(double), stream));
    if (n == 0) goto cleanup;
    status = h->list_block ? elec__pmsm_list_short(h, xyzq, n, stream, err)
                           : elec__pmsm_cell_short(h, xyzq, n, stream, err);
    if (status != ELEC_OK) goto cleanup;
    switch (elec_msm_support((int)h->plan.p.interpolation)) {
    case 2: status = elec__pmsm_device_stages<2>(&h->plan, &h->fft, xyzq, n, stream, err); break;
    case 3: status = elec__pmsm_device_stages<3>(&h->plan, &h->fft, xyzq, n, stream, err); break;
    case 4: status = elec__pmsm_device_stages<4>(&h->plan, &h->fft, xyzq, n, stream, err); break;
    default: status = elec__pmsm_device_stages<5>(&h->plan, &h->fft, xyzq, n, stream, err);
    }
    if (status != ELEC_OK) goto cleanup;
    switch (elec_msm_support((int)h->plan.p.interpolation)) {
    case 2: status = elec__pmsm_device_finish<2>(h, xyzq, n, forces, stream, err); break;
    case 3: status = elec__pmsm_device_finish<3>(h, xyzq, n, forces, stream, err); break;
    case 4: status = elec__pmsm_device_finish<4>(h, xyzq, n, forces, stream, err); break;
    default: status = elec__pmsm_device_finish<5>(h, xyzq, n, forces, stream, err); break;
    }
cleanup:
    return status;
}

ELEC_DEF elec_status elec_cuda_msm_periodic_list_stats(elec_cuda_msm_periodic_handle *h,
                                                       elec_spme_list_stats *stats,
                                                       cudaStream_t stream, elec_error *err) {
    if (!h || !stats)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "handle or stats is NULL");
    if (!h->list_block)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "this handle's short range runs on its cell list (the cutoff and "
                          "the list's skin exceed half the box, or the list could not be "
                          "made): there is no neighbour list to report");
    return elec__list_stats(&h->list, ELEC__PMSM_LIST_SKIN, h->plan.device, stats, stream, err);
}

ELEC_DEF void elec_cuda_msm_periodic_destroy(elec_cuda_msm_periodic_handle *h) {
    int caller_device = 0;
    if (!h) return;
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    cudaSetDevice(h->plan.device);
    cudaDeviceSynchronize(); /* computes in flight read the buffers */
    elec__cuda_free_sync(h->block);
    elec__cuda_free_sync(h->list_block);
    elec__pmsm_fft_free(&h->fft);
    elec__msm_device_free(&h->plan);
    (void)cudaGetLastError();
    cudaSetDevice(caller_device);
    ELEC_FREE(h);
}

/* Periodic MSM's parameters on the GPU, as elec__cuda_spme_resolve makes
   SPME's for the handle (positions in float): float arithmetic's floor for
   these atoms, and the choice made again where its share leaves less of
   the tolerance. */
static elec_status elec__cuda_msm_periodic_resolve(const elec_msm_params *params,
                                                   const elec_box *box, const elec_atoms *atoms,
                                                   elec_msm_params *out, elec_error *err) {
    elec_msm_params aimed;
    elec_status status;
    double share, tolerance, left;
    if ((status = elec_msm_periodic_params_resolve(params, box, atoms, out, err)) != ELEC_OK)
        return status;
    share = out->estimate.float_arithmetic;
    tolerance = out->tolerance;
    if ((status = elec__cuda_float_share("MSM", tolerance, share, 0, &out->estimate, &left,
                                         err)) != ELEC_OK ||
        left == tolerance || !params)
        return status;
    aimed = *params;
    aimed.tolerance = left;
    if ((status = elec_msm_periodic_params_resolve(&aimed, box, atoms, out, err)) != ELEC_OK)
        return elec__cuda_beside_float_failed("MSM", tolerance, share, left, status, err);
    out->tolerance = tolerance;
    return ELEC_OK;
}

ELEC_DEF elec_status elec_cuda_msm_periodic_create(const elec_box *box, const elec_atoms *atoms,
                                                   const elec_msm_params *params,
                                                   elec_cuda_msm_periodic_handle **out,
                                                   elec_error *err) {
    elec_status status = ELEC_OK;
    elec_cuda_msm_periodic_handle *h = NULL;
    elec_msm_params p;
    elec__pmsm_shape shape;
    int devices[ELEC__MAX_GPUS], device_count = 0, caller_device = 0, n_cells[3];
    int *host_excl_start = NULL, *host_excl_list = NULL;
    const size_t *caller_pairs;
    size_t max_atoms, pairs, at = 0, bytes;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    *out = NULL;
    if ((status = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return status;
    if ((status = elec__box_check(box, err)) != ELEC_OK) return status;
    /* the float floor first: the choice's own refusal would hide it */
    if ((status = elec__cuda_msm_float_floor(params, err)) != ELEC_OK) return status;
    if ((status = elec__cuda_msm_periodic_resolve(params, box, atoms, &p, err)) != ELEC_OK)
        return status;
    max_atoms = atoms->count;
    pairs = p.excluded_pair_count;
    if (max_atoms == 0)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "no atoms: the handle needs room for an atom");
    if (max_atoms > ((size_t)1 << 27))
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "%zu atoms: the GPU periodic MSM takes at most %zu", max_atoms,
                          (size_t)1 << 27);
    if (pairs > (size_t)INT_MAX / 2 - 1)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0, "%zu excluded pairs: at most %d",
                          pairs, INT_MAX / 2 - 1);
    if ((status = elec__exclusions_check(p.excluded_pairs, pairs, max_atoms, err)) != ELEC_OK)
        return status;
    if ((status = elec__pmsm_shape_of(&p, box, &shape, err)) != ELEC_OK) return status;
    if (shape.levels == 0)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "box %g x %g x %g A within one MSM spacing (%g A): no lattice; "
                          "use the CPU (elec_cpu_msm_periodic_energy)", box->length[0],
                          box->length[1], box->length[2], p.spacing);
    status = elec__cuda_gpu_list(&p.gpus, devices, &device_count, err);
    if (status != ELEC_OK) return status;
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    h = (elec_cuda_msm_periodic_handle *)ELEC_MALLOC(sizeof *h);
    if (!h) return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory");
    memset(h, 0, sizeof *h);
    h->box = *box;
    h->max_atoms = max_atoms;
    caller_pairs = p.excluded_pairs;
    p.excluded_pairs = NULL; /* the caller's array: not kept (the lists below are) */
    status = elec__msm_device_setup_periodic(&h->plan, &p, &shape, max_atoms, devices[0], err);
    if (status != ELEC_OK) goto cleanup;
    h->plan.p.excluded_pair_count = pairs;
    /* the lattices pass on no mean (elec__pmsm_center_charges): the
       whole k = 0 part is the finest splitting's constant C(a_0) */
    h->top = elec__pmsm_top_constant(p.cutoff, box->length[0] * box->length[1] * box->length[2],
                                     p.splitting);
    h->g.length = make_float3((float)box->length[0], (float)box->length[1],
                              (float)box->length[2]);
    h->g.inv_length = make_float3((float)(1.0 / box->length[0]), (float)(1.0 / box->length[1]),
                                  (float)(1.0 / box->length[2]));
    /* cells at least a long (one where the box is shorter), at most 128 per
       axis; reach ceil(a / cell edge) cells each way */
    for (int axis = 0; axis < 3; axis++) {
        double cells = floor(box->length[axis] / p.cutoff);
        n_cells[axis] = cells < 1.0 ? 1 : cells > 128.0 ? 128 : (int)cells;
    }
    h->cells.n = make_int3(n_cells[0], n_cells[1], n_cells[2]);
    h->cells.per_length = make_float3((float)(n_cells[0] / box->length[0]),
                                      (float)(n_cells[1] / box->length[1]),
                                      (float)(n_cells[2] / box->length[2]));
    h->cells.reach = 1;
    h->s.reach = make_int3((int)ceil(p.cutoff / (box->length[0] / n_cells[0])),
                           (int)ceil(p.cutoff / (box->length[1] / n_cells[1])),
                           (int)ceil(p.cutoff / (box->length[2] / n_cells[2])));
    h->cell_count = n_cells[0] * n_cells[1] * n_cells[2];
    elec__cutoff_coefficients(p.cutoff, p.splitting, h->s.coeff);
    h->s.order = p.splitting;
    h->s.cutoff2 = (float)(p.cutoff * p.cutoff);
    h->s.inv_cutoff2 = (float)(1.0 / (p.cutoff * p.cutoff));
    {
        elec_spme_params lists; /* the SPME handle's exclusion lists */
        memset(&lists, 0, sizeof lists);
        lists.excluded_pairs = caller_pairs;
        lists.excluded_pair_count = pairs;
        status = elec__spme_exclusions(&lists, max_atoms, &host_excl_start, &host_excl_list,
                                       err);
        if (status != ELEC_OK) goto cleanup;
    }
    /* one block: ints, then float4s, then doubles, each part 256-aligned */
    bytes = ELEC__MSM_ALIGN(((size_t)h->cell_count + 1 + (size_t)h->cell_count + 1 +
                             4 * max_atoms + max_atoms + 2 + 2 * pairs + 1) * sizeof(int)) +
            ELEC__MSM_ALIGN(2 * max_atoms * sizeof(float4)) +
            ELEC__PMSM_SUMS * sizeof(double);
    ELEC__CUDA_TRY(cudaSetDevice(h->plan.device));
    ELEC__CUDA_TRY(elec__cuda_alloc(&h->block, bytes));
    {
        char *base = (char *)h->block;
        int *ints = (int *)base;
        h->cell_counts = ints;
        h->cell_start = h->cell_counts + h->cell_count + 1;
        h->atom_cell = h->cell_start + h->cell_count + 1;
        h->atom_slot = h->atom_cell + max_atoms;
        h->sorted_index = h->atom_slot + max_atoms;
        h->excl_start = h->sorted_index + 2 * max_atoms;
        h->excl_list = h->excl_start + max_atoms + 2;
        at = ELEC__MSM_ALIGN(((size_t)(h->excl_list - ints) + 2 * pairs + 1) * sizeof(int));
        h->sorted = (float4 *)(base + at);
        h->short_range = h->sorted + max_atoms;
        at += ELEC__MSM_ALIGN(2 * max_atoms * sizeof(float4));
        h->sums = (double *)(base + at);
    }
    ELEC__CUDA_TRY(cudaMemcpy(h->excl_start, host_excl_start, (max_atoms + 1) * sizeof(int),
                              cudaMemcpyHostToDevice));
    ELEC__CUDA_TRY(cudaMemcpy(h->excl_list, host_excl_list, (2 * pairs + 1) * sizeof(int),
                              cudaMemcpyHostToDevice));
    ELEC__CUDA_TRY(cudaMemset(h->sums, 0, ELEC__PMSM_SUMS * sizeof(double)));
    if (elec__pmsm_list_fits(box, p.cutoff)) {
        status = elec__pmsm_list_setup(h, p.cutoff, err);
        if (status == ELEC_ERR_UNSUPPORTED || status == ELEC_ERR_NO_MEMORY) {
            /* no cooperative launch, past the list's limits, or no room on
               the device for its lists: the cell kernel */
            elec__cuda_free_sync(h->list_block);
            h->list_block = NULL;
            status = ELEC_OK;
        }
        if (status != ELEC_OK) goto cleanup;
    }
    if ((status = elec__pmsm_fft_setup(&h->fft, &p, &shape, err)) != ELEC_OK) goto cleanup;
    ELEC__CUDA_TRY(elec__cuda_setup_landed());
    *out = h;
    h = NULL;
    elec__ok(err);
cleanup:
    ELEC_FREE(host_excl_start);
    ELEC_FREE(host_excl_list);
    elec_cuda_msm_periodic_destroy(h);
    cudaSetDevice(caller_device);
    return status;
}

ELEC_DEF elec_status elec_cuda_msm_periodic_params(const elec_cuda_msm_periodic_handle *h,
                                                   elec_msm_params *resolved,
                                                   elec_error *err) {
    if (!h || !resolved)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "handle or resolved is NULL");
    *resolved = h->plan.p;
    resolved->excluded_pairs = NULL;
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_cuda_msm_periodic_compute(elec_cuda_msm_periodic_handle *h,
                                                    const float4 *d_xyzq, size_t n,
                                                    float *d_forces, cudaStream_t stream,
                                                    elec_error *err) {
    elec_status status = ELEC_OK;
    int caller_device = 0;
    if (!h) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "handle is NULL");
    if (n > h->max_atoms)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "%zu atoms: the handle was created for at most %zu", n,
                          h->max_atoms);
    if (n > 0 && !d_xyzq) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "d_xyzq is NULL");
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    ELEC__CUDA_TRY(cudaSetDevice(h->plan.device));
    status = elec__pmsm_enqueue(h, d_xyzq, (int)n, d_forces, stream, err);
    if (status == ELEC_OK) elec__ok(err);
cleanup:
    cudaSetDevice(caller_device);
    return status;
}

ELEC_DEF elec_status elec_cuda_msm_periodic_energy(elec_cuda_msm_periodic_handle *h,
                                                   double *energy, cudaStream_t stream,
                                                   elec_error *err) {
    elec_status status = ELEC_OK;
    double sums[ELEC__PMSM_SUMS];
    int info[ELEC__LIST_INFO] = {0};
    int caller_device = 0;
    if (!h || !energy)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "handle or energy is NULL");
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    ELEC__CUDA_TRY(cudaSetDevice(h->plan.device));
    ELEC__CUDA_TRY(cudaMemcpyAsync(sums, h->sums, sizeof sums, cudaMemcpyDeviceToHost, stream));
    if (h->list_block)
        ELEC__CUDA_TRY(cudaMemcpyAsync(info, h->list.info, sizeof info, cudaMemcpyDeviceToHost,
                                       stream));
    ELEC__CUDA_TRY(cudaStreamSynchronize(stream));
    if ((status = elec__list_overflow_check(info, err)) != ELEC_OK) goto cleanup;
    if (sums[ELEC__PMSM_SUM_COINCIDENT] > 0.0) {
        status = elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                            "%.0f pair(s) of atoms (or an atom and an image) closer than "
                            "%g A and not excluded: their energy is infinite (the last "
                            "compute left them out)",
                            0.5 * sums[ELEC__PMSM_SUM_COINCIDENT], ELEC_COINCIDENT_DISTANCE);
        goto cleanup;
    }
    *energy = h->plan.p.scale * (sums[ELEC__PMSM_SUM_ENERGY] +
                                 0.5 * h->top * sums[ELEC__PMSM_SUM_CHARGE] *
                                     sums[ELEC__PMSM_SUM_CHARGE]);
    if ((status = elec__results_finite("GPU periodic MSM", "energy", NULL, energy, 1, "float",
                                       err)) != ELEC_OK) {
        elec__cuda_unchecked_inputs(err);
        goto cleanup;
    }
    elec__ok(err);
cleanup:
    cudaSetDevice(caller_device);
    return status;
}

/* ============================================================ >>charges charge mapping */
/* Charge mapping on the GPU (elec.h; seed 004, Sanaullah et al. 2016):
   rho(g) = sum_a q_a phi phi phi, e per lattice point.  Every rung below
   computes the same grid from the same per-axis weights
   (elec__chargemap_weights: Skeel's C1 family through MSM's
   elec__msm_weights_device, B-splines through elec_bspline_weights_float,
   the functions of the CPU paths) and the same grid coordinates (periodic:
   SPME's elec__spme_grid_coordinate).

   What bounds each rung on an H100 (ApoA1-size: 92,224 atoms, 112 x 112 x
   80 = 1.0e6 points, 5.9e6 atom-point terms at order 4; the grid is 4 MB
   and stays in the 50 MB L2; bench/bench_chargemap.cu measures it).  The
   figures below are the first measurements, 2026-11-23, as the design
   was chosen; the README gives what make bench prints now (the launch
   floor 2.6-2.7 us on 2026-12-06, pc-lanes 35.9 us):
   - the host: a launch from the host costs 4.3 us (an empty kernel back
     to back), a CUDA graph of three kernels 5.0 us; a call of several
     launches is bounded by their sum, however little the GPU does.
   - every rung that adds with global atomics (the PC rungs, the binned
     rungs' overflow) makes 64 atomics per atom, and the L2's atomic units
     bound it.  PC_LANES (the default for fewer atoms) sets neighbouring
     lanes on an atom's neighbouring x points, so a warp's atomics fall in
     few sectors:
     5.9e6 atomics in 33.8 us, 1.75e11 a second, in any atom order, and no
     sort to pay for: 35.4 us end to end (2,600 PPUS).  Zeroing the grid
     first costs another 4 MB write.
   - the seed's binned rungs add a placement pass (one atomic per atom on
     the bin counters) and, for the bin structs, zeroing the whole bin
     array (80 B a bin at 4 slots: 80 MB for 1e6 bins): the seed's "reads
     ghost particles" cost, here as writes.
   - the GC rungs need no atomics and store each point once, but each
     point reads the order^3 = 64 bins that reach it: 64 counters plus
     their slots per point (1e6 points x 64 x 16 B: ~1 GB through L1/L2),
     the read traffic Table III of the seed shows.
   - sorting by tile with atomics on the tiles' counters (PC_SORTED_LANES,
     TILE_OWNER, PC_FIXED_POINT) serialises: hundreds of same-address
     atomics per counter, 33 to 85 us for ApoA1 however the kernels are
     chained (PDL measured slower: 11.6 us for three empty kernels).
   - the tile-binned rungs (TILE_BINNED, TILE_FUSED, TILE_FUSED_FIXED)
     bin with shared-memory atomics only (stage 1: 9 to 11 us for ApoA1,
     two passes over the atoms and a (start, count) for every tile and
     group) and sum each tile once.  sm_90 has no shared-memory add for
     float or 64-bit integers (a compare-and-swap loop a term), and even
     one native 32-bit add a term leaves a bare tile sum at 14.5 us for
     ApoA1 (bench/RESULTS.md): the shared-memory atomic unit bounds it.
     So the float rungs sum in registers, no atomics
     (elec__chargemap_sum_tile_registers: stage 2 20 us, where their
     shared tile took 31-33; under Nsight Compute its first version waited
     most at block barriers and on its staged copies, not on its FMAs),
     and where a tile fits, by columns that visit only the copies reaching
     them (elec__chargemap_sum_tile_columns: 17.8 us);
     TILE_FUSED_FIXED keeps its integers in shared memory, as two native
     32-bit halves where a tile's range allows
     (elec__chargemap_split_fits).  One cooperative kernel saves a launch
     (a grid barrier costs 0.6 us) but not the stages.
   bench/bench_chargemap.cu measures these bounds on the device (atomic
   rates random and sorted, a bare tile kernel, the launch floor, the grid
   barrier). */

#ifndef ELEC__CHARGEMAP_MAX_ORDER
#define ELEC__CHARGEMAP_MAX_ORDER 10
#endif
#define ELEC__CHARGEMAP_BLOCK 256
#define ELEC__CHARGEMAP_MAX_SLOTS 16 /* elec_chargemap_params_resolve's limit */
#define ELEC__CHARGEMAP_STATIC_SHARED 2048 /* room for the kernels' __shared__ arrays */

/* The plan's status words (device ints). */
#define ELEC__CM_OVERFLOW 0     /* records on the overflow list (binned rungs)  */
#define ELEC__CM_OUTSIDE 1      /* atoms whose stencil left a map, being counted */
#define ELEC__CM_TICKET 2       /* blocks of the tile count kernel finished      */
#define ELEC__CM_OUTSIDE_SEEN 3 /* OUTSIDE of the last tile sort (its last block
                                   moves it here and clears OUTSIDE)            */
#define ELEC__CM_BARRIER 4      /* TILE_FUSED's grid barrier: arrivals, then
                                   the generation (5)                           */
#define ELEC__CM_PREPARED 6 /* 1: the tile rungs' stage 1 ran since the last
                               hand-over (elec__chargemap_hand_over)        */
#define ELEC__CM_STATUS 7

/* Lattice and basis as the kernels take them.  u, an atom's grid
   coordinate along an axis, is computed three ways:
     maps (device API)        u = x inv_spacing + base, base = -origin/h;
     periodic (device API)    u = elec__spme_grid_coordinate(x - origin,
                              inv_period, K): SPME's wrap, u in [0, K);
     host API (grid_units)    u = x: the host converted in double.
   An atom in cell k0 = (int)u, t = u - k0, puts w[m](t) on the point
   k0 + offset + m, m = 0 .. width-1 (wrapped on a periodic grid). */
typedef struct elec__chargemap_geometry {
    int K[3];
    float inv_spacing[3], base[3];   /* maps                        */
    float inv_period[3], origin[3];  /* periodic                    */
    int periodic, grid_units;
    int width, offset;
} elec__chargemap_geometry;

/* Tiles of the sorted rungs: T points per axis, n tiles per axis, the last
   one taking the rest (T to 2T - 1 points); L the longest per axis. */
typedef struct elec__chargemap_tiling {
    int T[3], n[3], L[3];
    int count;
} elec__chargemap_tiling;

/* Bins of the seed's rungs: M = K0 K1 K2 bins (the grid's cells), S slots
   each; records (u, q).  BIN_STRUCT: bin b is (S + 1) float4 from b (S + 1),
   the first holding the count (int bits of .x), empty slots zero (ghosts,
   q = 0).  Slot-major: counts apart, slot s of bin b at s M + b, as float4
   records (AOS) or four float arrays (SOA: x, y, z, q one after another). */
typedef struct elec__chargemap_bins {
    float4 *bins;
    int *count;
    float4 *rec;
    float *soa;
    float4 *overflow;
    int S, M;
} elec__chargemap_bins;

/* An atom's record (u_x, u_y, u_z, q); *outside set when its stencil
   leaves a map.  Explicit _rn operations: no contraction may differ
   between the kernels that recompute it. */
__device__ __forceinline__ float4 elec__chargemap_record(const elec__chargemap_geometry &g,
                                                        float4 a, int *outside) {
    const float x[3] = {a.x, a.y, a.z};
    float u[3];
#pragma unroll
    for (int axis = 0; axis < 3; axis++) {
        if (g.periodic && !g.grid_units) {
            u[axis] = elec__spme_grid_coordinate(__fsub_rn(x[axis], g.origin[axis]),
                                                 g.inv_period[axis], g.K[axis]);
            continue;
        }
        u[axis] = g.grid_units ? x[axis]
                               : __fadd_rn(__fmul_rn(x[axis], g.inv_spacing[axis]), g.base[axis]);
        if (!g.periodic) {
            /* written so that NaN is outside */
            const float first = floorf(u[axis]) + (float)g.offset;
            if (!(first >= 0.0f && first + (float)g.width <= (float)g.K[axis])) *outside = 1;
        }
    }
    return make_float4(u[0], u[1], u[2], a.w);
}

/* Atom a's record, its charge in *q; 0 (and the atom counted) where it
   lies outside a map. */
__device__ __forceinline__ int elec__chargemap_take_atom(float4 a,
                                                         const elec__chargemap_geometry &g,
                                                         int *status, float4 *r, float *q) {
    int outside = 0;
    *r = elec__chargemap_record(g, a, &outside);
    *q = a.w;
    if (outside) atomicAdd(status + ELEC__CM_OUTSIDE, 1);
    return !outside;
}

/* The same for atom i of xyzq. */
__device__ __forceinline__ int elec__chargemap_take(const float4 *xyzq, int i,
                                                    const elec__chargemap_geometry &g,
                                                    int *status, float4 *r, float *q) {
    return elec__chargemap_take_atom(xyzq[i], g, status, r, q);
}

/* A point index k0 + offset + m on the grid: wrapped where periodic (a
   map's indices are in range: the atom was inside). */
__device__ __forceinline__ int elec__chargemap_wrap(int p, int K) {
    return p < 0 ? p + K : p >= K ? p - K : p;
}

/* The weights w[m] of the points k0 + offset + m for t in [0, 1).  Skeel:
   MSM's device pieces (offset -(W/2 - 1)); B-spline: point k0 - j gets
   M_n(t + j) (offset -(W - 1)), reversed into ascending order. */
template <int BASIS, int W>
__device__ __forceinline__ void elec__chargemap_weights(float t, const elec__msm_basis_args &b,
                                                        float w[W]) {
    if constexpr (BASIS == ELEC_CHARGEMAP_SKEEL) {
        (void)elec__msm_weights_device<W / 2>(t, b, w);
    } else {
        float r[W];
        (void)b;
        elec_bspline_weights_float(W, t, r, NULL);
#pragma unroll
        for (int m = 0; m < W; m++) w[m] = r[W - 1 - m];
    }
}

/* The one weight w[m](t) alone, as the seed's Alg. 5 evaluates it for a
   bin that reaches the point by piece m: Skeel by Horner on row m (a
   row chosen at run time), the B-spline by the recursion and an indexed
   pick (a local array). */
template <int BASIS, int W>
__device__ __forceinline__ float elec__chargemap_piece(int m, float t,
                                                       const elec__msm_basis_args &b) {
    if constexpr (BASIS == ELEC_CHARGEMAP_SKEEL) {
        float v = b.coeff[m][W - 1];
        for (int p = W - 2; p >= 0; p--) v = fmaf(v, t, b.coeff[m][p]);
        return v;
    } else {
        float r[W];
        (void)b;
        elec_bspline_weights_float(W, t, r, NULL);
        return r[W - 1 - m];
    }
}

/* The sums of q and q^2 (sums[0], sums[1]: SPME's self and background
   terms), where the caller asked for them: every thread of the block calls
   it. */
__device__ __forceinline__ void elec__chargemap_sums(double *sums, float q) {
    if (!sums) return;
    elec__spme_block_add(sums, q);
    elec__spme_block_add(sums + 1, (double)q * q);
}

/* One record's order^3 terms by global atomics, loops z, y, x as the
   seed's Alg. 3: the per-axis indices and weights first. */
template <int BASIS, int W>
__device__ __forceinline__ void elec__chargemap_add_record(float *grid, float4 r,
                                                           const elec__chargemap_geometry &g,
                                                           const elec__msm_basis_args &b) {
    const float u[3] = {r.x, r.y, r.z};
    float w[3][W];
    int index[3][W];
#pragma unroll
    for (int axis = 0; axis < 3; axis++) {
        const int k0 = (int)u[axis];
        elec__chargemap_weights<BASIS, W>(u[axis] - (float)k0, b, w[axis]);
#pragma unroll
        for (int m = 0; m < W; m++)
            index[axis][m] = elec__chargemap_wrap(k0 + g.offset + m, g.K[axis]);
    }
#pragma unroll
    for (int c = 0; c < W; c++)
#pragma unroll
        for (int bb = 0; bb < W; bb++) {
            const float qzy = r.w * w[2][c] * w[1][bb];
            float *row = grid + g.K[0] * (index[1][bb] + g.K[1] * index[2][c]);
#pragma unroll
            for (int a = 0; a < W; a++) atomicAdd(row + index[0][a], qzy * w[0][a]);
        }
}

/* The bin of a record (the cell of its point k0). */
__device__ __forceinline__ int elec__chargemap_bin_of(float4 r, const elec__chargemap_geometry &g) {
    return (int)r.x + g.K[0] * ((int)r.y + g.K[1] * (int)r.z);
}

/* ------------------------------------------------ PC: the seed's Alg. 3 */

/* PC_BASELINE: a thread per atom in the caller's order, 64 atomics (on a
   zeroed grid).  Neighbouring threads write far-apart points. */
template <int BASIS, int W>
__global__ void __launch_bounds__(ELEC__CHARGEMAP_BLOCK)
elec__k_chargemap_pc_baseline(float *grid, const float4 *xyzq, int n, elec__chargemap_geometry g,
                              elec__msm_basis_args b, int *status, double *sums) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float q = 0.0f;
    float4 r;
    if (i < n && elec__chargemap_take(xyzq, i, g, status, &r, &q))
        elec__chargemap_add_record<BASIS, W>(grid, r, g, b);
    elec__chargemap_sums(sums, q);
}

/* ------------------------------------------- placement into the bins */

enum { ELEC__CM_BIN_STRUCT = 0, ELEC__CM_SLOT_AOS, ELEC__CM_SLOT_SOA };

/* Each atom takes a slot of its bin (an atomic on the bin's counter);
   past S slots its record goes to the overflow list. */
template <int LAYOUT>
__global__ void __launch_bounds__(ELEC__CHARGEMAP_BLOCK)
elec__k_chargemap_place(const float4 *xyzq, int n, elec__chargemap_geometry g,
                        elec__chargemap_bins bins, int *status, double *sums) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float q = 0.0f;
    float4 r;
    if (i < n && elec__chargemap_take(xyzq, i, g, status, &r, &q)) {
        const int bin = elec__chargemap_bin_of(r, g);
        int *counter = LAYOUT == ELEC__CM_BIN_STRUCT
                           ? (int *)(bins.bins + (size_t)bin * (bins.S + 1))
                           : bins.count + bin;
        const int slot = atomicAdd(counter, 1);
        if (slot >= bins.S) {
            bins.overflow[atomicAdd(status + ELEC__CM_OVERFLOW, 1)] = r;
        } else if (LAYOUT == ELEC__CM_BIN_STRUCT) {
            bins.bins[(size_t)bin * (bins.S + 1) + 1 + slot] = r;
        } else if (LAYOUT == ELEC__CM_SLOT_AOS) {
            bins.rec[(size_t)slot * bins.M + bin] = r;
        } else {
            const size_t at = (size_t)slot * bins.M + bin, plane = (size_t)bins.S * bins.M;
            bins.soa[at] = r.x;
            bins.soa[plane + at] = r.y;
            bins.soa[2 * plane + at] = r.z;
            bins.soa[3 * plane + at] = r.w;
        }
    }
    elec__chargemap_sums(sums, q);
}

/* The overflow list by atomics, after the rung's kernel (its length is
   known on the device only: a fixed grid strides over it). */
template <int BASIS, int W>
__global__ void __launch_bounds__(ELEC__CHARGEMAP_BLOCK)
elec__k_chargemap_overflow(float *grid, const float4 *overflow, const int *status,
                           elec__chargemap_geometry g, elec__msm_basis_args b) {
    const int total = status[ELEC__CM_OVERFLOW];
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < total; i += gridDim.x * blockDim.x)
        elec__chargemap_add_record<BASIS, W>(grid, overflow[i], g, b);
}

/* ------------------------------------------ PC: the seed's Alg. 4, Fig. 4 */

/* A bin's cell and the wrapped indices of the points it reaches, once per
   bin (seed Alg. 4, lines 3-6). */
template <int W>
__device__ __forceinline__ void elec__chargemap_bin_points(int bin, const elec__chargemap_geometry &g,
                                                           int cell[3], int index[3][W]) {
    cell[0] = bin % g.K[0];
    cell[1] = bin / g.K[0] % g.K[1];
    cell[2] = bin / g.K[0] / g.K[1];
#pragma unroll
    for (int axis = 0; axis < 3; axis++)
#pragma unroll
        for (int m = 0; m < W; m++)
            index[axis][m] = elec__chargemap_wrap(cell[axis] + g.offset + m, g.K[axis]);
}

/* A record of the bin at `cell`: its weights from t = u - cell, 64
   atomics on the bin's points. */
template <int BASIS, int W>
__device__ __forceinline__ void elec__chargemap_add_binned(float *grid, float4 r, const int cell[3],
                                                           const int index[3][W], int K0, int K1,
                                                           const elec__msm_basis_args &b) {
    float wx[W], wy[W], wz[W];
    elec__chargemap_weights<BASIS, W>(r.x - (float)cell[0], b, wx);
    elec__chargemap_weights<BASIS, W>(r.y - (float)cell[1], b, wy);
    elec__chargemap_weights<BASIS, W>(r.z - (float)cell[2], b, wz);
#pragma unroll
    for (int c = 0; c < W; c++)
#pragma unroll
        for (int bb = 0; bb < W; bb++) {
            const float qzy = r.w * wz[c] * wy[bb];
            float *row = grid + K0 * (index[1][bb] + K1 * index[2][c]);
#pragma unroll
            for (int a = 0; a < W; a++) atomicAdd(row + index[0][a], qzy * wx[a]);
        }
}

/* PC_BINNED (Alg. 4): a thread per bin copies its whole struct, counter,
   slots and ghosts (the thread cannot start before all of it arrives),
   then adds its atoms.  Neighbouring threads are neighbouring bins: their
   points overlap 75 %, so their atomics meet in L2. */
template <int BASIS, int W>
__global__ void __launch_bounds__(ELEC__CHARGEMAP_BLOCK)
elec__k_chargemap_pc_binned(float *grid, const float4 *bins, int S, elec__chargemap_geometry g,
                            elec__msm_basis_args b) {
    const int bin = blockIdx.x * blockDim.x + threadIdx.x;
    float4 mine[ELEC__CHARGEMAP_MAX_SLOTS + 1];
    int cell[3], index[3][W];
    if (bin >= g.K[0] * g.K[1] * g.K[2]) return;
#pragma unroll
    for (int s = 0; s <= ELEC__CHARGEMAP_MAX_SLOTS; s++)
        if (s <= S) mine[s] = bins[(size_t)bin * (S + 1) + s];
    const int count = min(__float_as_int(mine[0].x), S);
    elec__chargemap_bin_points<W>(bin, g, cell, index);
#pragma unroll
    for (int s = 1; s <= ELEC__CHARGEMAP_MAX_SLOTS; s++)
        if (s <= count) elec__chargemap_add_binned<BASIS, W>(grid, mine[s], cell, index, g.K[0],
                                                              g.K[1], b);
}

/* PC_REDUCED_READS (Fig. 4a): counts apart, records slot-major: a thread
   reads its count, then only its valid records, each one 16-byte load
   that the warp's neighbouring bins make contiguous. */
template <int BASIS, int W>
__global__ void __launch_bounds__(ELEC__CHARGEMAP_BLOCK)
elec__k_chargemap_pc_reduced(float *grid, const int *counts, const float4 *rec, int S,
                             elec__chargemap_geometry g, elec__msm_basis_args b) {
    const int bin = blockIdx.x * blockDim.x + threadIdx.x;
    const int M = g.K[0] * g.K[1] * g.K[2];
    int cell[3], index[3][W];
    if (bin >= M) return;
    const int count = min(counts[bin], S);
    elec__chargemap_bin_points<W>(bin, g, cell, index);
    for (int s = 0; s < count; s++)
        elec__chargemap_add_binned<BASIS, W>(grid, rec[(size_t)s * M + bin], cell, index, g.K[0],
                                             g.K[1], b);
}

/* PC_COALESCED (Fig. 4b): the same records as four slot-major arrays,
   each field one coalesced 4-byte load. */
template <int BASIS, int W>
__global__ void __launch_bounds__(ELEC__CHARGEMAP_BLOCK)
elec__k_chargemap_pc_coalesced(float *grid, const int *counts, const float *soa, int S,
                               elec__chargemap_geometry g, elec__msm_basis_args b) {
    const int bin = blockIdx.x * blockDim.x + threadIdx.x;
    const int M = g.K[0] * g.K[1] * g.K[2];
    const size_t plane = (size_t)S * M;
    int cell[3], index[3][W];
    if (bin >= M) return;
    const int count = min(counts[bin], S);
    elec__chargemap_bin_points<W>(bin, g, cell, index);
    for (int s = 0; s < count; s++) {
        const size_t at = (size_t)s * M + bin;
        const float4 r = make_float4(soa[at], soa[plane + at], soa[2 * plane + at],
                                     soa[3 * plane + at]);
        elec__chargemap_add_binned<BASIS, W>(grid, r, cell, index, g.K[0], g.K[1], b);
    }
}

/* ------------------------------------------ GC: the seed's Alg. 5, 6 */

/* The cell from which a point p is reached by piece m (p = c + offset + m),
   or -1 off a map. */
__device__ __forceinline__ int elec__chargemap_remote(int p, int m, int offset, int K, int periodic) {
    const int c = p - offset - m;
    if (periodic) return elec__chargemap_wrap(c, K);
    return c >= 0 && c < K ? c : -1;
}

/* The weight of piece m for a record in cell c along one axis: the piece
   alone (GC_BASELINE) or all pieces and a select (the others). */
template <int BASIS, int W, int ONE_PIECE>
__device__ __forceinline__ float elec__chargemap_gc_weight(float u, int c, int m,
                                                           const elec__msm_basis_args &b) {
    const float t = u - (float)c;
    if constexpr (ONE_PIECE) {
        return elec__chargemap_piece<BASIS, W>(m, t, b);
    } else {
        float w[W];
        elec__chargemap_weights<BASIS, W>(t, b, w);
        return elec__spme_pick<W>(w, m);
    }
}

/* A record's term at the point it reaches by pieces (mx, my, mz) from
   its cell (cx, cy, cz). */
template <int BASIS, int W, int ONE_PIECE>
__device__ __forceinline__ float elec__chargemap_gc_term(float4 r, int cx, int cy, int cz, int mx,
                                                         int my, int mz,
                                                         const elec__msm_basis_args &b) {
    return r.w * elec__chargemap_gc_weight<BASIS, W, ONE_PIECE>(r.x, cx, mx, b) *
           elec__chargemap_gc_weight<BASIS, W, ONE_PIECE>(r.y, cy, my, b) *
           elec__chargemap_gc_weight<BASIS, W, ONE_PIECE>(r.z, cz, mz, b);
}

/* A thread per point visits the 64 bins that reach it and sums their
   atoms' terms in a register; one store, no atomics, no zeroing.
     GC_BASELINE (Alg. 5)    bin structs, each copied whole (counter,
                             slots, ghosts), one basis piece per axis;
     GC_COMPUTE_EFFICIENT    the same with every piece and a select;
     GC_REDUCED_READS        (Alg. 6) slot-major records: the count, then
                             the valid records only (LAYOUT SLOT_AOS). */
template <int BASIS, int W, int ONE_PIECE, int LAYOUT>
__global__ void __launch_bounds__(ELEC__CHARGEMAP_BLOCK)
elec__k_chargemap_gc(float *grid, const float4 *bins, const int *counts, const float4 *rec,
                     int S, elec__chargemap_geometry g, elec__msm_basis_args b) {
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    const int M = g.K[0] * g.K[1] * g.K[2];
    if (p >= M) return;
    const int point[3] = {p % g.K[0], p / g.K[0] % g.K[1], p / g.K[0] / g.K[1]};
    float sum = 0.0f;
    for (int mz = 0; mz < W; mz++) {
        const int cz = elec__chargemap_remote(point[2], mz, g.offset, g.K[2], g.periodic);
        if (cz < 0) continue;
        for (int my = 0; my < W; my++) {
            const int cy = elec__chargemap_remote(point[1], my, g.offset, g.K[1], g.periodic);
            if (cy < 0) continue;
            for (int mx = 0; mx < W; mx++) {
                const int cx = elec__chargemap_remote(point[0], mx, g.offset, g.K[0], g.periodic);
                if (cx < 0) continue;
                const int bin = cx + g.K[0] * (cy + g.K[1] * cz);
                if constexpr (LAYOUT == ELEC__CM_BIN_STRUCT) {
                    float4 mine[ELEC__CHARGEMAP_MAX_SLOTS + 1];
#pragma unroll
                    for (int s = 0; s <= ELEC__CHARGEMAP_MAX_SLOTS; s++)
                        if (s <= S) mine[s] = bins[(size_t)bin * (S + 1) + s];
                    const int count = min(__float_as_int(mine[0].x), S);
#pragma unroll
                    for (int s = 1; s <= ELEC__CHARGEMAP_MAX_SLOTS; s++)
                        if (s <= count)
                            sum += elec__chargemap_gc_term<BASIS, W, ONE_PIECE>(mine[s], cx, cy,
                                                                               cz, mx, my, mz, b);
                } else {
                    const int count = min(counts[bin], S);
                    for (int s = 0; s < count; s++)
                        sum += elec__chargemap_gc_term<BASIS, W, ONE_PIECE>(
                            rec[(size_t)s * M + bin], cx, cy, cz, mx, my, mz, b);
                }
            }
        }
    }
    grid[p] = sum;
}

/* GC_SHARED: a block of points (blockDim = its tile) loads the bin structs
   that reach any of its points, (T + W - 1) per axis, into shared memory
   together, then each thread runs GC_COMPUTE_EFFICIENT's loop from there.
   Bins off a map are loaded empty. */
template <int BASIS, int W>
__global__ void elec__k_chargemap_gc_shared(float *grid, const float4 *bins, int S,
                                            elec__chargemap_geometry g, elec__msm_basis_args b) {
    extern __shared__ float4 region[];
    const int side[3] = {(int)blockDim.x + W - 1, (int)blockDim.y + W - 1,
                         (int)blockDim.z + W - 1};
    const int origin[3] = {(int)(blockIdx.x * blockDim.x), (int)(blockIdx.y * blockDim.y),
                           (int)(blockIdx.z * blockDim.z)};
    const int regions = side[0] * side[1] * side[2];
    const int thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    const int threads = blockDim.x * blockDim.y * blockDim.z;
    /* region cell r along an axis is the cell origin - offset - (W - 1) + r */
    for (int k = thread; k < regions * (S + 1); k += threads) {
        const int r = k / (S + 1), s = k % (S + 1);
        const int rc[3] = {r % side[0], r / side[0] % side[1], r / side[0] / side[1]};
        int cell[3], inside = 1;
        for (int axis = 0; axis < 3; axis++) {
            cell[axis] = elec__chargemap_remote(origin[axis] + rc[axis], W - 1, g.offset,
                                                g.K[axis], g.periodic);
            if (cell[axis] < 0) inside = 0;
        }
        region[k] = inside ? bins[(size_t)(cell[0] + g.K[0] * (cell[1] + g.K[1] * cell[2])) *
                                      (S + 1) + s]
                           : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    __syncthreads();
    const int point[3] = {origin[0] + (int)threadIdx.x, origin[1] + (int)threadIdx.y,
                          origin[2] + (int)threadIdx.z};
    if (point[0] >= g.K[0] || point[1] >= g.K[1] || point[2] >= g.K[2]) return;
    float sum = 0.0f;
    for (int mz = 0; mz < W; mz++)
        for (int my = 0; my < W; my++)
            for (int mx = 0; mx < W; mx++) {
                /* the region cell of point - offset - m */
                const int r = ((int)threadIdx.x + W - 1 - mx) +
                              side[0] * (((int)threadIdx.y + W - 1 - my) +
                                         side[1] * ((int)threadIdx.z + W - 1 - mz));
                const float4 *bin = region + (size_t)r * (S + 1);
                const int count = min(__float_as_int(bin[0].x), S);
                const int cx = elec__chargemap_remote(point[0], mx, g.offset, g.K[0], g.periodic);
                const int cy = elec__chargemap_remote(point[1], my, g.offset, g.K[1], g.periodic);
                const int cz = elec__chargemap_remote(point[2], mz, g.offset, g.K[2], g.periodic);
                for (int s = 1; s <= count; s++)
                    sum += elec__chargemap_gc_term<BASIS, W, 0>(bin[s], cx, cy, cz, mx, my, mz, b);
            }
    grid[point[0] + g.K[0] * (point[1] + g.K[1] * point[2])] = sum;
}

/* ----------------------------------------- beyond the seed: the tile sort */

/* The tiles an atom adds to along one axis: with halo, those of its
   stencil's first and last points (at most two, as tiles are at least
   order - 1 long); without, the tile of its cell.  Returns how many. */
__device__ __forceinline__ int elec__chargemap_tiles_of(float u, int axis, int halo,
                                                        const elec__chargemap_geometry &g,
                                                        const elec__chargemap_tiling &tl,
                                                        int tiles[2]) {
    const int k0 = (int)u, T = tl.T[axis], n = tl.n[axis];
    if (!halo) {
        tiles[0] = min(k0 / T, n - 1);
        return 1;
    }
    const int first = elec__chargemap_wrap(k0 + g.offset, g.K[axis]);
    const int last = elec__chargemap_wrap(k0 + g.offset + g.width - 1, g.K[axis]);
    tiles[0] = min(first / T, n - 1);
    tiles[1] = min(last / T, n - 1);
    return tiles[0] == tiles[1] ? 1 : 2;
}

/* The last block of the count kernel: an exclusive scan of the tile counts
   into start[0 .. tiles] (and the scatter's cursors), counts and the
   ticket cleared for the next call, the outside count handed over.  One
   block: fine for thousands of tiles (each thread sums a contiguous run,
   the block scans the runs' sums). */
__device__ void elec__chargemap_scan_tiles(int *count, int *start, int *cursor, int tiles,
                                           int *status) {
    __shared__ int run[ELEC__CHARGEMAP_BLOCK];
    const int t = threadIdx.x, threads = blockDim.x;
    const int per = (tiles + threads - 1) / threads;
    const int first = min(t * per, tiles), last = min(first + per, tiles);
    int s = 0;
    for (int k = first; k < last; k++) s += __ldcg(count + k); /* the atomics' sums, in L2 */
    run[t] = s;
    __syncthreads();
    for (int offset = 1; offset < threads; offset <<= 1) {
        const int v = t >= offset ? run[t - offset] : 0;
        __syncthreads();
        run[t] += v;
        __syncthreads();
    }
    s = t > 0 ? run[t - 1] : 0;
    for (int k = first; k < last; k++) {
        const int c = __ldcg(count + k);
        start[k] = s;
        cursor[k] = s;
        count[k] = 0;
        s += c;
    }
    if (t == threads - 1) start[tiles] = run[t];
    if (t == 0) {
        status[ELEC__CM_OUTSIDE_SEEN] = atomicExch(status + ELEC__CM_OUTSIDE, 0);
        status[ELEC__CM_TICKET] = 0;
    }
}

/* Sort, pass 1: each atom's record (u, q; u.x = -1 outside a map) and one
   atomic per copy on the counters of the tiles it adds to; the last block
   to finish (a ticket after a fence: every block's atomics are done)
   scans the counts.  Triggers the scatter's launch at once. */
template <int HALO>
__global__ void __launch_bounds__(ELEC__CHARGEMAP_BLOCK)
elec__k_chargemap_tile_count(const float4 *xyzq, int n, elec__chargemap_geometry g,
                             elec__chargemap_tiling tl, float4 *records, int *tile_count,
                             int *tile_start, int *tile_cursor, int *status, double *sums) {
    __shared__ int last_block;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    float q = 0.0f;
    elec__release_next_grid();
    if (i < n) {
        float4 r;
        if (!elec__chargemap_take(xyzq, i, g, status, &r, &q)) {
            r.x = -1.0f;
        } else {
            int tx[2], ty[2], tz[2];
            const int nx = elec__chargemap_tiles_of(r.x, 0, HALO, g, tl, tx);
            const int ny = elec__chargemap_tiles_of(r.y, 1, HALO, g, tl, ty);
            const int nz = elec__chargemap_tiles_of(r.z, 2, HALO, g, tl, tz);
            for (int c = 0; c < nz; c++)
                for (int bb = 0; bb < ny; bb++)
                    for (int a2 = 0; a2 < nx; a2++)
                        atomicAdd(tile_count + tx[a2] + tl.n[0] * (ty[bb] + tl.n[1] * tz[c]), 1);
        }
        records[i] = r;
    }
    elec__chargemap_sums(sums, q);
    /* every thread's atomics ordered before the block's ticket */
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        last_block = atomicAdd(status + ELEC__CM_TICKET, 1) == (int)gridDim.x - 1;
    __syncthreads();
    if (!last_block) return;
    __threadfence();
    elec__chargemap_scan_tiles(tile_count, tile_start, tile_cursor, tl.count, status);
}

/* Sort, pass 2: each copy to the next place of its tile's segment (an
   atomic on the tile's cursor: the order within a tile is arbitrary). */
template <int HALO>
__global__ void __launch_bounds__(ELEC__CHARGEMAP_BLOCK)
elec__k_chargemap_tile_scatter(const float4 *records, int n, elec__chargemap_geometry g,
                               elec__chargemap_tiling tl, int *tile_cursor, float4 *copies) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    elec__wait_prior_grid();
    elec__release_next_grid();
    if (i >= n) return;
    const float4 r = records[i];
    if (r.x < 0.0f) return; /* outside a map */
    int tx[2], ty[2], tz[2];
    const int nx = elec__chargemap_tiles_of(r.x, 0, HALO, g, tl, tx);
    const int ny = elec__chargemap_tiles_of(r.y, 1, HALO, g, tl, ty);
    const int nz = elec__chargemap_tiles_of(r.z, 2, HALO, g, tl, tz);
    for (int c = 0; c < nz; c++)
        for (int bb = 0; bb < ny; bb++)
            for (int a = 0; a < nx; a++)
                copies[atomicAdd(tile_cursor + tx[a] + tl.n[0] * (ty[bb] + tl.n[1] * tz[c]), 1)] = r;
}

/* ------------------------------------------ beyond the seed: the rungs */

/* TILE_OWNER: a block per tile.  Its copies (every atom that reaches the
   tile) add their in-tile terms into the tile in shared memory, a group
   of lanes per copy, lane jx owning the copy's x plane (neighbouring
   lanes, neighbouring banks); then each point is stored once, rows of the
   tile as contiguous runs.  No zeroing of the grid, no global atomics. */
template <int BASIS, int W>
__global__ void __launch_bounds__(ELEC__CHARGEMAP_BLOCK)
elec__k_chargemap_tile_owner(float *grid, const float4 *copies, const int *tile_start,
                             elec__chargemap_geometry g, elec__chargemap_tiling tl,
                             elec__msm_basis_args b) {
    extern __shared__ float tile[];
    const int lanes = elec__spme_lanes<W>::value;
    const int id = blockIdx.x;
    const int at[3] = {id % tl.n[0], id / tl.n[0] % tl.n[1], id / tl.n[0] / tl.n[1]};
    int t0[3], len[3];
#pragma unroll
    for (int axis = 0; axis < 3; axis++) {
        t0[axis] = at[axis] * tl.T[axis];
        len[axis] = at[axis] == tl.n[axis] - 1 ? g.K[axis] - t0[axis] : tl.T[axis];
    }
    const int points = len[0] * len[1] * len[2];
    elec__wait_prior_grid();
    for (int k = threadIdx.x; k < points; k += blockDim.x) tile[k] = 0.0f;
    __syncthreads();
    const int first = tile_start[id], last = tile_start[id + 1];
    const int jx = threadIdx.x % lanes, groups = blockDim.x / lanes;
    for (int c = first + (int)threadIdx.x / lanes; c < last; c += groups) {
        const float4 r = copies[c];
        if (jx >= W) continue;
        const int kx = (int)r.x, ky = (int)r.y, kz = (int)r.z;
        const int x = elec__chargemap_wrap(kx + g.offset + jx, g.K[0]) - t0[0];
        if (x < 0 || x >= len[0]) continue; /* this lane's plane is another tile's */
        float wx[W], wy[W], wz[W];
        elec__chargemap_weights<BASIS, W>(r.x - (float)kx, b, wx);
        elec__chargemap_weights<BASIS, W>(r.y - (float)ky, b, wy);
        elec__chargemap_weights<BASIS, W>(r.z - (float)kz, b, wz);
        const float qx = r.w * elec__spme_pick<W>(wx, jx);
#pragma unroll
        for (int mz = 0; mz < W; mz++) {
            const int z = elec__chargemap_wrap(kz + g.offset + mz, g.K[2]) - t0[2];
            if (z < 0 || z >= len[2]) continue;
            const float qxz = qx * wz[mz];
#pragma unroll
            for (int my = 0; my < W; my++) {
                const int y = elec__chargemap_wrap(ky + g.offset + my, g.K[1]) - t0[1];
                if (y < 0 || y >= len[1]) continue;
                atomicAdd(tile + x + len[0] * (y + len[1] * z), qxz * wy[my]);
            }
        }
    }
    __syncthreads();
    /* rows: warp w stores rows w, w + warps, ... */
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    for (int row = warp; row < len[1] * len[2]; row += warps) {
        const int y = row % len[1], z = row / len[1];
        float *out = grid + t0[0] + g.K[0] * ((t0[1] + y) + g.K[1] * (t0[2] + z));
        for (int x = lane; x < len[0]; x += 32) out[x] = tile[x + len[0] * row];
    }
}

/* PC_SORTED_LANES (FIXED 0): the tile-sorted atoms (no halo copies) with
   a group of lanes per atom, lane jx adding its x plane by global atomics
   (GROMACS's layout): sorted atoms and neighbouring lanes keep a warp's
   atomics in few L2 sectors; the grid is zeroed first.
   PC_FIXED_POINT (FIXED 1): the same terms rounded to 2^-32 e and added as
   64-bit integers (OpenMM): integer addition is associative, so the grid
   is bit-identical whatever the order of the atoms and of the atomics.
   Each term is a float computed from its own atom alone; |term| <= |q|,
   so a point can hold up to 2^31 e.  The 64-bit atomics are native
   (RED.E.ADD.64). */
/* Lane jx of a record's group: the stencil's x plane jx by global atomics
   (FIXED: in units of 2^-32 e on the 64-bit grid). */
template <int BASIS, int W, int FIXED>
__device__ __forceinline__ void elec__chargemap_add_plane(float *grid, long long *fixed, float4 r,
                                                          int jx, const elec__chargemap_geometry &g,
                                                          const elec__msm_basis_args &b) {
    const int kx = (int)r.x, ky = (int)r.y, kz = (int)r.z;
    float wx[W], wy[W], wz[W];
    elec__chargemap_weights<BASIS, W>(r.x - (float)kx, b, wx);
    elec__chargemap_weights<BASIS, W>(r.y - (float)ky, b, wy);
    elec__chargemap_weights<BASIS, W>(r.z - (float)kz, b, wz);
    const int x = elec__chargemap_wrap(kx + g.offset + jx, g.K[0]);
    const float qx = r.w * elec__spme_pick<W>(wx, jx);
#pragma unroll
    for (int mz = 0; mz < W; mz++) {
        const int z = elec__chargemap_wrap(kz + g.offset + mz, g.K[2]);
        const float qxz = qx * wz[mz];
#pragma unroll
        for (int my = 0; my < W; my++) {
            const int y = elec__chargemap_wrap(ky + g.offset + my, g.K[1]);
            const int point = x + g.K[0] * (y + g.K[1] * z);
            if constexpr (FIXED) {
                /* exact scaling by 2^32, then the nearest integer */
                const long long v = __float2ll_rn(qxz * wy[my] * 4294967296.0f);
                atomicAdd((unsigned long long *)(fixed + point), (unsigned long long)v);
            } else {
                atomicAdd(grid + point, qxz * wy[my]);
            }
        }
    }
}

template <int BASIS, int W, int FIXED>
__global__ void __launch_bounds__(ELEC__CHARGEMAP_BLOCK)
elec__k_chargemap_lanes(float *grid, long long *fixed, const float4 *sorted,
                        const int *tile_start, int tiles, elec__chargemap_geometry g,
                        elec__msm_basis_args b) {
    const int lanes = elec__spme_lanes<W>::value;
    const long thread = (long)blockIdx.x * blockDim.x + threadIdx.x;
    elec__wait_prior_grid();
    const int total = tile_start[tiles];
    const long atom = thread / lanes;
    const int jx = (int)(thread % lanes);
    if (atom >= total || jx >= W) return;
    elec__chargemap_add_plane<BASIS, W, FIXED>(grid, fixed, sorted[atom], jx, g, b);
}

/* PC_LANES: the same lanes in the caller's order, each group reading its
   atom (SPME's spreading before the charge map): a group's four atomics
   of a step fall in one or two sectors whatever the order of the atoms,
   and there is no sort to pay for; the grid is zeroed first.  (A row's
   four points as float4 vector atomics, one or two a row, were no faster:
   bench/RESULTS.md, 2026-11-28, 16:16 UTC on.) */
template <int BASIS, int W>
__global__ void __launch_bounds__(ELEC__CHARGEMAP_BLOCK)
elec__k_chargemap_pc_lanes(float *grid, const float4 *xyzq, int n, elec__chargemap_geometry g,
                           elec__msm_basis_args b, int *status, double *sums) {
    const int lanes = elec__spme_lanes<W>::value;
    const long thread = (long)blockIdx.x * blockDim.x + threadIdx.x;
    const long atom = thread / lanes;
    const int jx = (int)(thread % lanes);
    float q = 0.0f;
    if (atom < n && jx < W) {
        const float4 a = xyzq[atom];
        int outside = 0;
        const float4 r = elec__chargemap_record(g, a, &outside);
        if (jx == 0) {
            q = a.w;
            if (outside) atomicAdd(status + ELEC__CM_OUTSIDE, 1);
        }
        if (!outside) elec__chargemap_add_plane<BASIS, W, 0>(grid, NULL, r, jx, g, b);
    }
    elec__chargemap_sums(sums, q);
}

/* The fixed-point grid to floats (times 2^-32, in double: exact), and
   cleared for the next call. */
__global__ void __launch_bounds__(ELEC__CHARGEMAP_BLOCK)
elec__k_chargemap_fixed_convert(float *grid, long long *fixed, int points) {
    const int p = blockIdx.x * blockDim.x + threadIdx.x;
    elec__wait_prior_grid();
    if (p >= points) return;
    grid[p] = (float)((double)fixed[p] * (1.0 / 4294967296.0));
    fixed[p] = 0;
}

/* -------------------- beyond the seed: tiles binned without global atomics */

/* Unsigned division of a < 2^31 by an invariant d (1 <= d < 2^31) as a
   multiply-high, an add and a shift: magic = floor(2^32 (2^l - d) / d) + 1
   with l = ceil(log2 d), then a / d = (umulhi(a, magic) + a) >> l
   (Granlund and Montgomery, PLDI 1994, fig. 4.1, simplified: its halving
   of a - umulhi keeps the add within 32 bits for any a, which a < 2^31
   does already).  The GPU has no integer divide: a division
   by a value known only at run time is compiled to a float reciprocal,
   conversions and corrections, and every thread of every tile's block
   took two (elec__chargemap_tile_extent). */
typedef struct elec__divisor {
    unsigned magic;
    int shift;
} elec__divisor;
static inline elec__divisor elec__divisor_of(unsigned d) {
    elec__divisor v;
    v.shift = 0;
    while ((1ull << v.shift) < d) v.shift++;
    v.magic = (unsigned)((((1ull << v.shift) - d) << 32) / d + 1);
    return v;
}
__host__ __device__ __forceinline__ unsigned elec__divide(unsigned a, elec__divisor d) {
#ifdef __CUDA_ARCH__
    const unsigned high = __umulhi(a, d.magic);
#else /* the host's twin, which the tests check without a GPU */
    const unsigned high = (unsigned)(((unsigned long long)a * d.magic) >> 32);
#endif
    return (high + a) >> d.shift;
}

/* TILE_BINNED, TILE_FUSED, TILE_FUSED_FIXED (what bounds them: the comment
   at the top of this section).  Tiles of 2^s points per axis, the last one
   taking the rest (a rest shorter than order - 1 joins the tile before
   it): a stencil then spans at most two tiles per axis, and a point's tile
   is a shift.  groups blocks bin the atoms: block j takes atoms
   [j c, (j + 1) c), c = ceil(n / groups), counts their copies per tile in
   shared memory, scans the counts and writes its copies sorted by tile into
   its own run of 8 c records, and (start, count) of each tile at
   runs[tile groups + j]: no global atomics, no capacity, no prefix kernel.
   A tile's block then scans the groups' counts and gathers its copies. */
typedef struct elec__chargemap_bands {
    int shift[3], n[3], L[3]; /* 2^shift points a tile; n tiles; L the
                                 longest (the pitch of the tile in shared
                                 memory)                                    */
    int count, groups;
    int chunk;                /* atoms a group takes, set by each prepare   */
    elec__divisor n0, n1;     /* n[0] and n[1] as divisors (a tile's place) */
    int prefetch;             /* stage 2's tensor sum prefetches into L1
                                 the copies its block gathers, set by each
                                 prepare (elec__chargemap_prefetch_atoms)   */
    int gather;               /* its warps try to gather a tile's copies,
                                 set by each prepare
                                 (elec__chargemap_gather_atoms)             */
} elec__chargemap_bands;

#define ELEC__CHARGEMAP_TILE_THREADS 256
#define ELEC__CHARGEMAP_TILE_WINDOW 1024 /* copies staged in shared memory */
#define ELEC__CHARGEMAP_MAGIC 6755399441055744.0        /* 1.5 2^52 */
#define ELEC__CHARGEMAP_MAGIC_BITS 0x4338000000000000LL /* its bits */

/* ceil(n / groups): an unsigned division, half the instructions of a
   signed one by a value known only at run time.  The atoms a binning
   group takes (the last group fewer) are bands.chunk, set on the host by
   each prepare, so that no thread of stages 1 and 2 divides for it. */
__host__ __device__ __forceinline__ int elec__chargemap_chunk(int n, int groups) {
    return (int)(((unsigned)n + (unsigned)groups - 1u) / (unsigned)groups);
}

__device__ __forceinline__ int elec__chargemap_band(int p, int axis,
                                                    const elec__chargemap_bands &bd) {
    return min(p >> bd.shift[axis], bd.n[axis] - 1);
}

/* f(tile) for each tile a record's stencil reaches: those of its first
   and last point per axis (one or two each). */
template <typename F>
__device__ __forceinline__ void elec__chargemap_for_tiles(float4 r, const elec__chargemap_geometry &g,
                                                          const elec__chargemap_bands &bd, F f) {
    const float u[3] = {r.x, r.y, r.z};
    int lo[3], hi[3];
#pragma unroll
    for (int axis = 0; axis < 3; axis++) {
        const int k0 = (int)u[axis];
        lo[axis] = elec__chargemap_band(elec__chargemap_wrap(k0 + g.offset, g.K[axis]), axis, bd);
        hi[axis] = elec__chargemap_band(
            elec__chargemap_wrap(k0 + g.offset + g.width - 1, g.K[axis]), axis, bd);
    }
#pragma unroll
    for (int c = 0; c < 2; c++) {
        if (c == 1 && hi[2] == lo[2]) continue;
#pragma unroll
        for (int bb = 0; bb < 2; bb++) {
            if (bb == 1 && hi[1] == lo[1]) continue;
#pragma unroll
            for (int a = 0; a < 2; a++) {
                if (a == 1 && hi[0] == lo[0]) continue;
                f((a ? hi[0] : lo[0]) +
                  bd.n[0] * ((bb ? hi[1] : lo[1]) + bd.n[1] * (c ? hi[2] : lo[2])));
            }
        }
    }
}

/* Exclusive scan of one int a thread over the block (blockDim.x a
   multiple of 32, at most 1024): warp shuffles, then the warps' sums.
   Every thread calls it; scratch (32 ints of shared memory) is free again
   when it returns. */
__device__ __forceinline__ int elec__chargemap_scan(int v, int *scratch, int *total) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int x = elec__warp_inclusive_sum(v);
    if (lane == 31) scratch[warp] = x;
    __syncthreads();
    if (warp == 0) {
        const int w = elec__warp_inclusive_sum(lane < warps ? scratch[lane] : 0);
        if (lane < warps) scratch[lane] = w;
    }
    __syncthreads();
    *total = scratch[warps - 1];
    const int before = (warp > 0 ? scratch[warp - 1] : 0) + x - v;
    __syncthreads();
    return before;
}

/* Exclusive scan in place of v[0, count) by one warp (the whole warp,
   converged, calls it; readers wait at a barrier after it), each lane a
   contiguous run; v[count] becomes the total, which every lane gets back.
   Where the block waits for the scan anyway, one warp scanning up to a
   thousand counts spares the block scan's barriers: the column sum's
   corner bins (361 a tile at ApoA1 size, at most 1,024) so scanned took
   16.03 -> 15.63 us at ApoA1 size and 137.3 -> 131.0 at 1M atoms, and
   its groups' runs 15.9 -> 15.7 and 133.5 -> 131.6 (at 528 groups, 17 a
   lane, up to 1 % slower with small tiles; H200, --knobs,
   bench/RESULTS.md). */
__device__ __forceinline__ int elec__chargemap_warp_scan(int *v, int count) {
    const int lane = threadIdx.x & 31, per = (count + 31) >> 5;
    const int lo = min(lane * per, count), hi = min(lo + per, count);
    int sum = 0;
    for (int k = lo; k < hi; k++) sum += v[k];
    const int x = elec__warp_inclusive_sum(sum);
    const int total = __shfl_sync(0xffffffffu, x, 31);
    int run = x - sum;
    for (int k = lo; k < hi; k++) {
        const int c = v[k];
        v[k] = run;
        run += c;
    }
    if (lane == 0) v[count] = total;
    return total;
}

/* The largest of the block's values v >= 0 (every thread calls it;
   scratch: 32 ints of shared memory, free before and after).  A
   non-negative float's bits order as integers. */
__device__ __forceinline__ float elec__chargemap_block_max(float v, int *scratch) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (lane == 0) scratch[warp] = __float_as_int(v);
    __syncthreads();
    int most = 0;
    for (int k = 0; k < warps; k++) most = max(most, scratch[k]);
    __syncthreads();
    return __int_as_float(most);
}

/* Where group j's copies start in the copies buffer: room for 8 of each
   of its chunk atoms (an atom has a copy in at most 2 x 2 x 2 tiles),
   runs per tile from there. */
__device__ __forceinline__ size_t elec__chargemap_group_first(int j, int chunk) {
    return (size_t)j * 8 * chunk;
}
template <class Copy>
__device__ __forceinline__ Copy *elec__chargemap_group_copies(Copy *copies, int j, int chunk) {
    return copies + elec__chargemap_group_first(j, chunk);
}

/* Stage 2's view of a tile's copies: group j's run of them (stage 1's
   runs[tile][j], scanned) starts at start[j] in the group's copies and at
   offset[j] in the tile's order; returns the index in `copies` of the
   tile's copy pos of that run. */
__device__ __forceinline__ size_t elec__chargemap_run_place(int j, int chunk, const int *start,
                                                            const int *offset, int pos) {
    return elec__chargemap_group_first(j, chunk) + (size_t)(start[j] + (pos - offset[j]));
}

/* This thread's share of a tile's groups, [*a, *e): contiguous, as even as
   the block's threads (stage 2's ELEC__CHARGEMAP_TILE_THREADS, a constant,
   so that no thread divides by blockDim.x) make it. */
__device__ __forceinline__ void elec__chargemap_group_share(int groups, int *a, int *e) {
    const int per = (groups + ELEC__CHARGEMAP_TILE_THREADS - 1) / ELEC__CHARGEMAP_TILE_THREADS;
    *a = min((int)threadIdx.x * per, groups);
    *e = min(*a + per, groups);
}

/* visit(pos, place) for each of the tile's copies pos in [base, end) that
   lies in groups [a, e), place its index in `copies`.  A run's first
   place is taken before its loop: visit's shared stores may alias start
   and offset, which the loop would otherwise read again at every copy
   (the column sum 0.4-4 % slower; H200, bench/RESULTS.md). */
template <class Visit>
__device__ __forceinline__ void elec__chargemap_runs_in_window(int chunk, const int *start,
                                                               const int *offset, int a, int e,
                                                               int base, int end, Visit visit) {
    for (int j = a; j < e; j++) {
        const int lo = max(offset[j], base), hi = min(offset[j + 1], end);
        if (lo >= hi) continue;
        const size_t first = elec__chargemap_run_place(j, chunk, start, offset, lo);
        for (int pos = lo; pos < hi; pos++) visit(pos, first + (size_t)(pos - lo));
    }
}

/* Atoms a thread of stage 1 keeps in registers between its two passes,
   where the group has at most this many a thread (elec__chargemap_bin_group). */
#define ELEC__CHARGEMAP_BIN_KEEP 4

/* Stage 1 for group j (every thread of the block calls it; hist: shared
   memory for bd.count ints).  Two passes over the group's atoms: count the
   copies per tile (shared-memory atomics), scan, then place them.  A
   group of at most ELEC__CHARGEMAP_BIN_KEEP atoms a thread loads them all
   at once and keeps their records in registers for the second pass;
   others read the atoms again (from L1 where the stage leaves it room).
   Kept, ApoA1-size's binning took 6.64-6.75 -> 6.48-6.51 us (H200,
   bench/RESULTS.md, 2026-12-02, 08:37 UTC).  q and q^2 summed for SPME.
   Placed straight into global memory, each copy is a scattered 16-byte
   store; where the group's copies fit in `stage` (stage_room of them;
   NULL and 0 in the one-kernel rungs' cooperative kernel, whose blocks
   keep their shared memory for stage 2), their atoms' indices are placed
   there and the copies then stored in order, coalesced, each record
   computed again from its atom (L1 or L2 holds the group's atoms).
   Staging copies whole took 16 bytes a copy, and at 1M atoms on 216^3 a
   group an SM did not fit: at two groups an SM binning took 50.4 us and
   the map 125-126; with indices, one group an SM: 40.1 and 117 (H200,
   bench/RESULTS.md, 2026-12-02, 08:37 UTC).  Before either (H200,
   bench/RESULTS.md, 2026-11-28, 11:14 UTC): ApoA1-size's binning
   7.6-7.8 -> 6.4-6.6 us, 1M atoms at four groups an SM 110 -> 76 us. */
__device__ void elec__chargemap_bin_group(int j, const float4 *xyzq, int n,
                                          const elec__chargemap_geometry &g,
                                          const elec__chargemap_bands &bd, int2 *runs,
                                          float4 *copies, int *status, double *sums,
                                          int *hist, int *stage, int stage_room) {
    constexpr int KEEP = ELEC__CHARGEMAP_BIN_KEEP;
    __shared__ int scratch[32];
    const int t = threadIdx.x, threads = blockDim.x, tiles = bd.count, groups = bd.groups;
    const int chunk = bd.chunk;
    const int first = min(j * chunk, n), last = min(first + chunk, n);
    const bool keep = last - first <= KEEP * threads;
    float4 *out = elec__chargemap_group_copies(copies, j, chunk);
    float4 kept[KEEP];
    unsigned inside = 0; /* bit u: kept[u] is a record in the map */
    double q1 = 0.0, q2 = 0.0;
    const auto count_copies = [&](float4 r) {
        elec__chargemap_for_tiles(r, g, bd, [&](int tile) { atomicAdd(hist + tile, 1); });
    };
    if (j == 0 && t == 0) status[ELEC__CM_PREPARED] = 1; /* for elec__chargemap_hand_over */
    for (int k = t; k < tiles; k += threads) hist[k] = 0;
    __syncthreads();
    if (keep) {
        /* every load in flight before the first is used */
#pragma unroll
        for (int u = 0; u < KEEP; u++) {
            const int i = first + t + u * threads;
            kept[u] = i < last ? xyzq[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int u = 0; u < KEEP; u++) {
            float q = 0.0f;
            if (first + t + u * threads < last &&
                elec__chargemap_take_atom(kept[u], g, status, &kept[u], &q)) {
                inside |= 1u << u;
                count_copies(kept[u]);
            }
            q1 += q;
            q2 += (double)q * q;
        }
    } else {
        for (int i = first + t; i < last; i += threads) {
            float4 r;
            float q;
            if (elec__chargemap_take(xyzq, i, g, status, &r, &q)) count_copies(r);
            q1 += q;
            q2 += (double)q * q;
        }
    }
    if (sums) { /* the same for every thread */
        elec__spme_block_add(sums, q1);
        elec__spme_block_add(sums + 1, q2);
    }
    __syncthreads();
    int total;
    {
        /* each thread a contiguous run of tiles */
        const int per = elec__chargemap_chunk(tiles, threads);
        const int a = min(t * per, tiles), e = min(a + per, tiles);
        int s = 0;
        for (int k = a; k < e; k++) s += hist[k];
        s = elec__chargemap_scan(s, scratch, &total);
        for (int k = a; k < e; k++) {
            const int c = hist[k];
            runs[(size_t)k * groups + j] = make_int2(s, c);
            hist[k] = s; /* the tile's cursor */
            s += c;
        }
    }
    __syncthreads();
    /* atom i's copies, of record r, to their places: in order in the
       stage where the copies fit it, else straight to global memory */
    const bool staged = stage && total <= stage_room;
    const auto place = [&](int i, float4 r) {
        elec__chargemap_for_tiles(r, g, bd, [&](int tile) {
            const int c = atomicAdd(hist + tile, 1);
            if (staged) stage[c] = i;
            else out[c] = r;
        });
    };
    if (keep) {
#pragma unroll
        for (int u = 0; u < KEEP; u++)
            if (inside & (1u << u)) place(first + t + u * threads, kept[u]);
    } else {
        for (int i = first + t; i < last; i += threads) {
            int outside = 0;
            const float4 r = elec__chargemap_record(g, xyzq[i], &outside);
            if (!outside) place(i, r);
        }
    }
    if (staged) {
        __syncthreads();
        for (int c = t; c < total; c += threads) {
            int outside = 0; /* staged atoms are inside */
            out[c] = elec__chargemap_record(g, xyzq[stage[c]], &outside);
        }
    }
}

/* TILE_FUSED_FIXED's shared-memory tile: 64-bit integers in units of
   2^-32 e (integer addition: any order gives the same bits).  sm_90 has
   no shared-memory add for them (nor for float, which is why the float
   rungs sum in registers: elec__chargemap_sum_tile_registers): nvcc 13.0
   compiles atomicAdd to a compare-and-swap loop (LDS, add,
   ATOMS.CAST.SPIN.64 or ATOMS.CAST.SPIN for float, in cuobjdump's SASS
   on the H100), two shared-memory operations a term.
   Batching a lane's loads and swaps by hand (atomicCAS: ATOMS.CAS, the
   results checked after) measured 3.3x slower on ApoA1 (145.8 against
   43.6 us): the hardware's spin loop stays.  32-bit integers it adds
   natively (ATOMS.ADD), so the 64-bit sums go as two 32-bit halves
   where a tile's range allows (elec__chargemap_split_fits): the same
   integers, TILE_FUSED_FIXED on ApoA1-size 49.7 -> 38.8 us and on 1M
   atoms 465 -> 346 us (H100, one run of each, bench/RESULTS.md). */

/* The split form of a term v (an integer in units of 2^-32 e): v = hi
   2^16 + lo with lo in [0, 2^16), summed apart in 32-bit words, lo
   unsigned and hi modulo 2^32, and joined at the store.  Exact where the
   tile's copies number c < 2^16 and c max|q| <= 2^14 e: a term is at
   most |q| (every weight is at most 1), so the terms' |v| sum to at most
   c max|q| 2^32 <= 2^46, the highs' to at most 2^30 + c < 2^31 (each
   high is v / 2^16 rounded down), and the lows' sum stays under
   c 2^16 < 2^32. */
__device__ __forceinline__ bool elec__chargemap_split_fits(int copies, float max_abs_q) {
    return copies < 65536 && (float)copies * max_abs_q <= 16384.0f;
}

__device__ __forceinline__ void elec__chargemap_split_add(unsigned *lo, unsigned *hi, long long v) {
    atomicAdd(lo, (unsigned)v & 0xFFFFu);
    atomicAdd(hi, (unsigned)(v >> 16));
}

__device__ __forceinline__ long long elec__chargemap_split_join(unsigned lo, unsigned hi) {
    return (long long)(int)hi * 65536 + (long long)lo;
}

/* One copy's terms inside the tile at t0 (len points per axis; pitch and
   plane: the shared tile's strides), lane jx taking the stencil's x plane
   jx.  The term is q w_x w_z (a float, as PC_FIXED_POINT's) times w_y and
   2^32, rounded once to an integer: the double FMA with 1.5 2^52 leaves
   round(v) in the low bits (|v| < 2^51: |q| < 2^19 e). */
template <int BASIS, int W, bool SPLIT>
__device__ __forceinline__ void elec__chargemap_add_in_tile(
    unsigned long long *acc, float4 r, int jx, const int t0[3],
    const int len[3], int pitch, int plane, int volume, const elec__chargemap_geometry &g,
    const elec__msm_basis_args &b) {
    const int kx = (int)r.x, ky = (int)r.y, kz = (int)r.z;
    const int x = elec__chargemap_wrap(kx + g.offset + jx, g.K[0]) - t0[0];
    if ((unsigned)x >= (unsigned)len[0]) return; /* this plane is another tile's */
    float wx[W], wy[W], wz[W];
    int row[W], slab[W];
    elec__chargemap_weights<BASIS, W>(r.x - (float)kx, b, wx);
    elec__chargemap_weights<BASIS, W>(r.y - (float)ky, b, wy);
    elec__chargemap_weights<BASIS, W>(r.z - (float)kz, b, wz);
#pragma unroll
    for (int m = 0; m < W; m++) {
        const int y = elec__chargemap_wrap(ky + g.offset + m, g.K[1]) - t0[1];
        const int z = elec__chargemap_wrap(kz + g.offset + m, g.K[2]) - t0[2];
        row[m] = (unsigned)y < (unsigned)len[1] ? y * pitch : -1;
        slab[m] = (unsigned)z < (unsigned)len[2] ? z * plane : -1;
    }
    const float qx = r.w * elec__spme_pick<W>(wx, jx);
#pragma unroll
    for (int mz = 0; mz < W; mz++) {
        if (slab[mz] < 0) continue;
        const double scaled = (double)(qx * wz[mz]) * 4294967296.0; /* exact */
#pragma unroll
        for (int my = 0; my < W; my++)
            if (row[my] >= 0) {
                const long long v =
                    __double_as_longlong(fma(scaled, (double)wy[my], ELEC__CHARGEMAP_MAGIC)) -
                    ELEC__CHARGEMAP_MAGIC_BITS;
                const int at = x + slab[mz] + row[my];
                if constexpr (SPLIT) /* lows, then highs: volume words on */
                    elec__chargemap_split_add((unsigned *)acc + at,
                                              (unsigned *)acc + volume + at, v);
                else
                    atomicAdd(acc + at, (unsigned long long)v);
            }
    }
}

/* The largest |q| of a tile's copies (every thread of the block calls
   it): from the staged window where the copies fit one, else read from
   every group's run first (thread-owned groups a to e, as the staging). */
__device__ float elec__chargemap_tile_max_q(const float4 *window, const float4 *copies,
                                            int chunk, const int *start, const int *offset,
                                            int a, int e, int total, int *scratch) {
    float most = 0.0f;
    if (total <= ELEC__CHARGEMAP_TILE_WINDOW) {
        for (int c = threadIdx.x; c < total; c += blockDim.x)
            most = fmaxf(most, fabsf(window[c].w));
    } else {
        elec__chargemap_runs_in_window(chunk, start, offset, a, e, 0, total,
                                       [&](int, size_t place) {
                                           most = fmaxf(most, fabsf(__ldcg(&copies[place].w)));
                                       });
    }
    return elec__chargemap_block_max(most, scratch);
}

/* Stage 2's common steps.  A tile's first point and extent per axis. */
__device__ __forceinline__ void elec__chargemap_tile_extent(int id,
                                                            const elec__chargemap_geometry &g,
                                                            const elec__chargemap_bands &bd,
                                                            int t0[3], int len[3]) {
    /* by the divisors' multiplies: every thread of the tile's block takes
       these, and at 1M atoms the two divisions and the rest of the tile's
       setup were 6.5 % of stage 2's instructions (Nsight Compute, H200,
       bench/RESULTS.md, 2026-12-02, 08:24 UTC on).  These multiplies,
       bands.chunk from the host and the groups' share by a constant
       (elec__chargemap_group_share) took the tensor sum from 12.46-12.63
       to 12.36-12.44 us at ApoA1 size and from 113.9-115.2 to 111.4-111.9
       at 1M atoms (H200, four rounds alternating over two calls;
       bench/RESULTS.md, 2026-12-02, 12:07 UTC on) */
    const unsigned u = (unsigned)id, row = elec__divide(u, bd.n0);
    const unsigned plane = elec__divide(row, bd.n1);
    const int at[3] = {(int)(u - row * (unsigned)bd.n[0]), (int)(row - plane * (unsigned)bd.n[1]),
                       (int)plane};
#pragma unroll
    for (int axis = 0; axis < 3; axis++) {
        t0[axis] = at[axis] << bd.shift[axis];
        len[axis] = at[axis] == bd.n[axis] - 1 ? g.K[axis] - t0[axis] : 1 << bd.shift[axis];
    }
}

/* Group j's (start, count) in tile id, written by stage 1 on other SMs:
   read past L1. */
__device__ __forceinline__ int2 elec__chargemap_tile_run(const int2 *runs, int id, int groups,
                                                         int j) {
    return __ldcg(runs + (size_t)id * groups + j);
}

/* The groups' (start, count) for tile id scanned into offsets (groups +
   1) and starts, each thread taking groups [*a, *e); returns the tile's
   copies.  Every thread calls it; offsets are ready after a barrier. */
__device__ int elec__chargemap_tile_runs(int id, const int2 *runs, int groups, int *offset,
                                         int *start, int *a, int *e, int *scratch) {
    elec__chargemap_group_share(groups, a, e);
    int s = 0, total;
    for (int j = *a; j < *e; j++) {
        const int2 run = elec__chargemap_tile_run(runs, id, groups, j);
        start[j] = run.x;
        offset[j] = run.y;
        s += run.y;
    }
    s = elec__chargemap_scan(s, scratch, &total);
    for (int j = *a; j < *e; j++) {
        const int c = offset[j];
        offset[j] = s;
        s += c;
    }
    if (threadIdx.x == 0) offset[groups] = total;
    return total;
}

/* Copies [base, end) of the tile into window: each thread the part of its
   groups' runs [a, e) that falls there. */
__device__ __forceinline__ void elec__chargemap_stage_window(float4 *window, const float4 *copies,
                                                             int chunk, const int *start,
                                                             const int *offset, int a, int e,
                                                             int base, int end) {
    elec__chargemap_runs_in_window(chunk, start, offset, a, e, base, end,
                                   [&](int pos, size_t place) {
                                       window[pos - base] = __ldcg(copies + place);
                                   });
}

/* TILE_FUSED_FIXED's stage 2 for tile `id` (every thread of the block
   calls it; smem: the window of staged copies, the tile, the groups'
   offsets and starts): the copies staged in windows of
   ELEC__CHARGEMAP_TILE_WINDOW, summed into the shared tile by groups of
   lanes; then each point stored once, rows as contiguous runs. */
template <int BASIS, int W>
__device__ void elec__chargemap_sum_tile_fixed(int id, float *grid, const int2 *runs,
                                               const float4 *copies,
                                               const elec__chargemap_geometry &g,
                                               const elec__chargemap_bands &bd,
                                               const elec__msm_basis_args &b,
                                               unsigned char *smem) {
    __shared__ int scratch[32];
    const int t = threadIdx.x, threads = blockDim.x, groups = bd.groups;
    const int chunk = bd.chunk;
    const int pitch = bd.L[0], plane = bd.L[0] * bd.L[1];
    float4 *window = (float4 *)smem;
    unsigned long long *acc = (unsigned long long *)(smem + 16 * ELEC__CHARGEMAP_TILE_WINDOW);
    int *offset = (int *)(acc + (size_t)plane * bd.L[2]); /* groups + 1 */
    int *start = offset + groups + 1;                     /* groups */
    int t0[3], len[3], a, e;
    elec__chargemap_tile_extent(id, g, bd, t0, len);
    const int total = elec__chargemap_tile_runs(id, runs, groups, offset, start, &a, &e, scratch);
    const int volume = plane * len[2];
    for (int k = t; k < volume; k += threads) acc[k] = 0;
    __syncthreads();
    const int lanes = elec__spme_lanes<W>::value, jx = t % lanes;
    bool split = false; /* the sums as 32-bit halves */
    for (int base = 0; base < total; base += ELEC__CHARGEMAP_TILE_WINDOW) {
        const int end = min(base + ELEC__CHARGEMAP_TILE_WINDOW, total);
        elec__chargemap_stage_window(window, copies, chunk, start, offset, a, e, base, end);
        __syncthreads();
        if (base == 0) /* the tile's range before its first term */
            split = elec__chargemap_split_fits(
                total, elec__chargemap_tile_max_q(window, copies, chunk, start, offset, a, e,
                                                  total, scratch));
        if (jx < W)
            for (int c = t / lanes; c < end - base; c += threads / lanes) {
                if (split)
                    elec__chargemap_add_in_tile<BASIS, W, true>(acc, window[c], jx, t0, len,
                                                                pitch, plane, volume, g, b);
                else
                    elec__chargemap_add_in_tile<BASIS, W, false>(acc, window[c], jx, t0, len,
                                                                 pitch, plane, volume, g, b);
            }
        __syncthreads();
    }
    {
        /* rows of up to 16 points: two a warp */
        const int lane = t & 31, warp = t >> 5, warps = threads >> 5;
        const int halves = len[0] <= 16 ? 2 : 1, xs = 32 / halves;
        const int x0 = lane % xs, rows = len[1] * len[2];
        for (int row = warp * halves + lane / xs; row < rows; row += warps * halves) {
            const int z = row / len[1], y = row - z * len[1];
            float *out = grid + t0[0] + g.K[0] * ((t0[1] + y) + g.K[1] * (t0[2] + z));
            const int at = y * pitch + z * plane;
            for (int x = x0; x < len[0]; x += xs) { /* exact in double, then rounded once */
                const unsigned *lo = (const unsigned *)acc + at + x;
                const long long v = split ? elec__chargemap_split_join(lo[0], lo[volume])
                                          : (long long)acc[at + x];
                out[x] = (float)((double)v * (1.0 / 4294967296.0));
            }
        }
    }
    __syncthreads(); /* the shared memory is the next tile's */
}

/* TILE_BINNED's and TILE_FUSED's stage 2: the tile summed in registers,
   no atomics (the float rungs' tile in shared memory, a compare-and-swap
   loop a term, took 31-33 us on ApoA1-size, this 20 us; H100,
   bench/RESULTS.md).  The tile is cut into sub-tiles of 4 x 4 x 4 points,
   8 threads a sub-tile, a thread keeping 4 x 2 x 1 of them (x, y, z), and
   32 sub-tiles summed at once (a batch; a tile of more takes the copies
   again for each).  The copies are taken in windows of up to 256, a
   thread loading one (elec__chargemap_tile_copy); each copy's weights
   are written out over the tile's extent, zeros where its
   stencil is not (x, y, and z times q: a record of `stride` floats), so
   that a thread reads its 4 x weights as one 16-byte load, its 2 y
   weights as one 8-byte load and its z weight, and adds q w_z w_y w_x to
   its 8 points by FMA, each copy's once per sub-tile it reaches: a list
   of the window's copies a sub-tile (byte indices, filled by a
   shared-memory counter a sub-tile). */
#define ELEC__CHARGEMAP_BATCH 32 /* sub-tiles summed at once: 8 threads each */

/* A copy's record: the tile's longest extents rounded up to 4, x, y, z;
   not a multiple of 32 floats (the bank of a record's word then differs
   from its neighbours'). */
__host__ __device__ inline int elec__chargemap_record_stride(const elec__chargemap_bands &bd) {
    const int r = ((bd.L[0] + 3) & ~3) + ((bd.L[1] + 3) & ~3) + ((bd.L[2] + 3) & ~3);
    return (r & 31) == 0 ? r + 4 : r;
}

/* Copies taken at once: 256 where their records take at most 48 KB, else
   128 (a list entry is one byte).  With the lists and the groups' runs a
   block takes 54 KB at ApoA1-size with one group an SM (four blocks an SM
   on an H100) and 57 KB with four (three). */
__host__ __device__ inline int elec__chargemap_register_window(const elec__chargemap_bands &bd) {
    return 256 * elec__chargemap_record_stride(bd) * 4 <= 48 * 1024 ? 256 : 128;
}

/* Copy pos of the tile (0 .. total - 1): the group whose run holds it
   found by bisection of the offsets (the last j with offset[j] <= pos),
   so that each thread loads its own copy and the block's loads are all
   in flight at once. */
__device__ __forceinline__ float4 elec__chargemap_tile_copy(const float4 *copies, int chunk,
                                                            const int *start, const int *offset,
                                                            int groups, int pos) {
    int lo = 0, hi = groups - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (offset[mid] <= pos) lo = mid;
        else hi = mid - 1;
    }
    return __ldcg(copies + elec__chargemap_run_place(lo, chunk, start, offset, pos));
}

/* Where each of the window's copies [base, end) lies in `copies`:
   source[pos - base], each thread filling the part of its share of the
   groups' runs that falls there (about (end - base) / groups places a
   group), so that a copy's load is one shared load away.
   elec__chargemap_tile_copy's binary search over the groups' offsets
   takes eight in turn at 132 groups: the column sum with it took 16.4 us
   at ApoA1 size and 138.2 at 1M atoms, with the places 16.05 and 136.6
   (H200, --knobs, atoms at random, bench/RESULTS.md).  Atoms sorted by
   grid cell bring a tile's copies from a few groups, and a few threads
   fill most of the places: the gain is then about half (16.3-16.7 ->
   16.2-16.4 us, 135.7 -> 132.6; H200, 2026-11-29), and tile-fused at
   order 7 (528 groups) lost 2-3 % (62.5 -> 64.0 us at random).
   The index is an int: 8 copies an atom, at most 2^27 atoms. */
__device__ __forceinline__ void elec__chargemap_window_sources(int *source, int chunk, int groups,
                                                              const int *start, const int *offset,
                                                              int base, int end) {
    int a, e;
    elec__chargemap_group_share(groups, &a, &e);
    elec__chargemap_runs_in_window(chunk, start, offset, a, e, base, end,
                                   [&](int pos, size_t place) { source[pos - base] = (int)place; });
}

/* One copy r, window slot c: its record written (over zeros), and c appended
   to the list of each sub-tile of the batch from `first` that its
   stencil reaches (ns sub-tiles per axis). */
template <int BASIS, int W>
__device__ __forceinline__ void elec__chargemap_record_copy(
    float4 r, int c, float *record, int stride, unsigned char *list, int *listed, int win,
    int first, const int t0[3], const int len[3], const int ns[3], const int part[3],
    const elec__chargemap_geometry &g, const elec__msm_basis_args &b) {
    float *out = record + (size_t)c * stride; /* zeroed by the block */
    const float u[3] = {r.x, r.y, r.z};
    unsigned reach[3]; /* bit s: sub-tile s along the axis */
#pragma unroll
    for (int axis = 0; axis < 3; axis++) {
        const int k0 = (int)u[axis];
        float w[W];
        elec__chargemap_weights<BASIS, W>(u[axis] - (float)k0, b, w);
        reach[axis] = 0;
#pragma unroll
        for (int m = 0; m < W; m++) {
            const int p = elec__chargemap_wrap(k0 + g.offset + m, g.K[axis]) - t0[axis];
            if ((unsigned)p < (unsigned)len[axis]) {
                out[part[axis] + p] = axis == 2 ? r.w * w[m] : w[m];
                reach[axis] |= 1u << (p >> 2); /* p < 128: a tile edge is at most 127 */
            }
        }
    }
    for (unsigned mz = reach[2]; mz; mz &= mz - 1)
        for (unsigned my = reach[1]; my; my &= my - 1)
            for (unsigned mx = reach[0]; mx; mx &= mx - 1) {
                const int k =
                    (__ffs(mx) - 1) + ns[0] * ((__ffs(my) - 1) + ns[1] * (__ffs(mz) - 1)) - first;
                if ((unsigned)k < ELEC__CHARGEMAP_BATCH)
                    list[k * win + atomicAdd(listed + k, 1)] = (unsigned char)c;
            }
}

/* The register sum for tile `id` (every thread of the block, 8 a
   sub-tile of the batch, calls it; smem: the records, the lists, the
   groups' offsets and starts): for each batch, each window's records
   zeroed, its copies loaded, recorded and listed, then summed; each
   thread's points stored once after the last window. */
static_assert(ELEC__CHARGEMAP_TILE_THREADS == 8 * ELEC__CHARGEMAP_BATCH,
              "the register sum takes 8 threads a sub-tile of a batch");
template <int BASIS, int W>
__device__ void elec__chargemap_sum_tile_registers(int id, float *grid, const int2 *runs,
                                                   const float4 *copies,
                                                   const elec__chargemap_geometry &g,
                                                   const elec__chargemap_bands &bd,
                                                   const elec__msm_basis_args &b,
                                                   unsigned char *smem) {
    __shared__ int scratch[32];
    __shared__ int listed[ELEC__CHARGEMAP_BATCH];
    const int t = threadIdx.x, groups = bd.groups;
    const int chunk = bd.chunk;
    const int stride = elec__chargemap_record_stride(bd);
    const int win = elec__chargemap_register_window(bd);
    const int part[3] = {0, (bd.L[0] + 3) & ~3, ((bd.L[0] + 3) & ~3) + ((bd.L[1] + 3) & ~3)};
    float *record = (float *)smem;                                  /* win x stride */
    unsigned char *list = (unsigned char *)(record + (size_t)win * stride); /* BATCH x win */
    int *offset = (int *)(list + ELEC__CHARGEMAP_BATCH * win);      /* groups + 1   */
    int *start = offset + groups + 1;                               /* groups       */
    int t0[3], len[3], ns[3], a, e; /* a, e: this thread's groups in the scan */
    elec__chargemap_tile_extent(id, g, bd, t0, len);
    for (int axis = 0; axis < 3; axis++) ns[axis] = (len[axis] + 3) >> 2;
    const int total = elec__chargemap_tile_runs(id, runs, groups, offset, start, &a, &e, scratch);
    __syncthreads();
    const int subtiles = ns[0] * ns[1] * ns[2], mine = t >> 3, r = t & 7;
    for (int first = 0; first < subtiles; first += ELEC__CHARGEMAP_BATCH) {
        const int sub = first + mine;
        const int sx = sub % ns[0], sy = sub / ns[0] % ns[1], sz = sub / ns[0] / ns[1];
        const int x = 4 * sx, y = 4 * sy + 2 * (r & 1), z = 4 * sz + (r >> 1);
        float sum[8] = {0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f}; /* y: 0-3, y + 1: 4-7 */
        for (int base = 0; base < total; base += win) {
            const int count = min(win, total - base);
            if (t < ELEC__CHARGEMAP_BATCH) listed[t] = 0;
            for (int k = t; k < count * stride / 4; k += blockDim.x)
                ((float4 *)record)[k] = make_float4(0.f, 0.f, 0.f, 0.f);
            __syncthreads();
            if (t < count)
                elec__chargemap_record_copy<BASIS, W>(
                    elec__chargemap_tile_copy(copies, chunk, start, offset, groups, base + t), t,
                    record, stride, list, listed, win, first, t0, len, ns, part, g, b);
            __syncthreads();
            if (sub < subtiles) {
                const unsigned char *mine_list = list + mine * win;
                for (int k = 0; k < listed[mine]; k++) {
                    const float *w = record + (size_t)mine_list[k] * stride;
                    const float4 wx = *(const float4 *)(w + x);
                    const float2 wy = *(const float2 *)(w + part[1] + y);
                    const float wz = w[part[2] + z];
                    const float a0 = wy.x * wz, a1 = wy.y * wz;
                    sum[0] = fmaf(a0, wx.x, sum[0]);
                    sum[1] = fmaf(a0, wx.y, sum[1]);
                    sum[2] = fmaf(a0, wx.z, sum[2]);
                    sum[3] = fmaf(a0, wx.w, sum[3]);
                    sum[4] = fmaf(a1, wx.x, sum[4]);
                    sum[5] = fmaf(a1, wx.y, sum[5]);
                    sum[6] = fmaf(a1, wx.z, sum[6]);
                    sum[7] = fmaf(a1, wx.w, sum[7]);
                }
            }
            __syncthreads();
        }
        if (sub < subtiles && z < len[2])
#pragma unroll
            for (int j = 0; j < 2; j++) {
                if (y + j >= len[1]) continue;
                float *row = grid + t0[0] + (size_t)g.K[0] * ((t0[1] + y + j) +
                                                              (size_t)g.K[1] * (t0[2] + z));
#pragma unroll
                for (int i = 0; i < 4; i++)
                    if (x + i < len[0]) row[x + i] = sum[4 * j + i];
            }
    }
    __syncthreads(); /* the shared memory is the next tile's */
}

/* TILE_BINNED's and TILE_FUSED's stage 2 by columns, where it fits (the
   register sum above otherwise): a thread owns an (x, y) column of the
   tile and keeps ELEC__CHARGEMAP_COLUMN_Z of its z points in registers.
   The window's copies are counting-sorted in shared memory by their
   stencil's (x, y) corner relative to the tile, so that the copies that
   reach column (X, Y) from corner row Y - dy (dy = 0 .. W - 1, corners
   x0 = X - W + 1 .. X) are one contiguous run of the sorted order: a
   thread walks its W runs and adds q w_z w_y w_x to its z points,
   visiting only the copies that reach it (the register sum visits
   whole 4 x 4 x 4 sub-tiles, most terms zeros: 21,000 warp instructions a
   16 x 16 x 8 tile at ApoA1 size under Nsight Compute, this 16,000, and
   ApoA1-size's stage 2 20.5 -> 17.8 us, 1M atoms' 175 -> 142 us; H100,
   bench/RESULTS.md).  A copy's record is q w_z over the z chunk (zeros
   outside its stencil), w_x, w_y and its corner x0, kept as arrays over
   the sorted index (an array of records, 20 floats apart, put the lanes'
   loads on 8 banks: 3-way conflicts and 18.7 us).  The runs are walked
   in turn, two copies at a time, so that two visits' shared loads are in
   flight together; walked as one loop, each lane that came to the end of
   a run took a turn of the warp of its own to start the next (5 lanes
   busy on average, under Nsight Compute), and a visit's loads waited one
   after the other: ApoA1-size's stage 2 17.6 -> 16.5 us, 1M atoms' 147.5
   -> 138.2 us (one copy at a time 17.1 and 141.1, four 17.2 and 143.1;
   H200, bench/RESULTS.md).  It takes one image of a stencil reaching the
   tile, so every axis needs K >= L + W - 1, and (L0 + W - 1)(L1 + W - 1)
   corner bins at most ELEC__CHARGEMAP_COLUMN_BINS. */
#define ELEC__CHARGEMAP_COLUMN_PER_THREAD 2 /* copies a thread records a window */
#define ELEC__CHARGEMAP_COLUMN_WINDOW                                        \
    (ELEC__CHARGEMAP_COLUMN_PER_THREAD * ELEC__CHARGEMAP_TILE_THREADS) /* copies a window */
#define ELEC__CHARGEMAP_COLUMN_Z 8       /* z points a thread keeps at once */
#define ELEC__CHARGEMAP_COLUMN_BINS 1024 /* corner bins at most            */

static inline bool elec__chargemap_columns_fit(const elec__chargemap_bands &bd, const int K[3],
                                               int W) {
    for (int axis = 0; axis < 3; axis++)
        if (K[axis] < bd.L[axis] + W - 1) return false;
    return (bd.L[0] + W - 1) * (bd.L[1] + W - 1) <= ELEC__CHARGEMAP_COLUMN_BINS;
}

/* Its shared memory: the window's records, the corner bins' offsets and
   the groups' runs.  The copies' places share the corners' array (x0s):
   they are read before the bins are scanned, the corners written after.
   Apart, their 2 KB left room for three blocks an SM, not four, at order
   8 (and at order 7 in tile-fused's 528 groups) on a 228 KB SM. */
static inline size_t elec__chargemap_column_bytes(int W, int groups) {
    const int floats = ELEC__CHARGEMAP_COLUMN_Z + 2 * W + 1; /* a copy's record */
    return (size_t)ELEC__CHARGEMAP_COLUMN_WINDOW * floats * 4 +
           (size_t)(ELEC__CHARGEMAP_COLUMN_BINS + 1) * 4 + sizeof(int) * (2 * (size_t)groups + 1);
}

/* A copy's stencil corner along one axis relative to the tile's first
   point t0: the image whose W points overlap [0, len). */
__device__ __forceinline__ int elec__chargemap_corner(int k0, int offset, int t0, int len, int K,
                                                      int W) {
    int c = k0 + offset - t0;
    if (c > len - 1) c -= K;
    else if (c < -(W - 1)) c += K;
    return c;
}

/* The column and tensor sums' shared steps.  The groups' (start, count)
   runs of tile id, their offsets scanned by one warp (which, filling the
   first window's places as well, made every block wait for it: 15.8 ->
   16.7 us at ApoA1 size; bench/RESULTS.md); returns the tile's copies.
   Every thread of the block (ELEC__CHARGEMAP_TILE_THREADS) calls it.
   In the tensor sum's gather by the block (PREFETCH; its warps' gather
   loads each copy as its run is read) and where bd.prefetch is set, the
   thread that reads a group's run asks for the run's copies in L1 at
   once (a line of 128 bytes a step of eight copies, and the last copy's),
   and the window's sort then reads them through L1
   (elec__chargemap_sort_window).
   Not in the column sum: the one-kernel rungs share it, and there its
   code took registers that spilled (elec__chargemap_prefetch_atoms). */
__device__ __forceinline__ void elec__prefetch_l1(const void *p) {
    asm volatile("prefetch.global.L1 [%0];" ::"l"(p));
}
template <bool PREFETCH>
__device__ __forceinline__ int elec__chargemap_warp_runs(int id, const int2 *runs,
                                                         const float4 *copies,
                                                         const elec__chargemap_bands &bd,
                                                         int *start, int *offset) {
    const int groups = bd.groups;
    for (int j = threadIdx.x; j < groups; j += ELEC__CHARGEMAP_TILE_THREADS) {
        const int2 run = elec__chargemap_tile_run(runs, id, groups, j);
        start[j] = run.x;
        offset[j] = run.y;
        if (PREFETCH && bd.prefetch) {
            const float4 *first = elec__chargemap_group_copies(copies, j, bd.chunk) + run.x;
            for (int c = 0; c < run.y; c += 8) elec__prefetch_l1(first + c);
            if (run.y > 0) elec__prefetch_l1(first + run.y - 1);
        }
    }
    __syncthreads();
    if (threadIdx.x < 32) elec__chargemap_warp_scan(offset, groups);
    __syncthreads();
    return offset[groups];
}

/* A copy's weights w[axis][m] over its stencil and its stencil's corner
   relative to the tile, per axis. */
template <int BASIS, int W>
__device__ __forceinline__ void elec__chargemap_copy_stencil(float4 r, const int t0[3],
                                                             const int len[3],
                                                             const elec__chargemap_geometry &g,
                                                             const elec__msm_basis_args &b,
                                                             float w[3][W], int corner[3]) {
    const float u[3] = {r.x, r.y, r.z};
#pragma unroll
    for (int axis = 0; axis < 3; axis++) {
        const int k0 = (int)u[axis];
        elec__chargemap_weights<BASIS, W>(u[axis] - (float)k0, b, w[axis]);
        corner[axis] = elec__chargemap_corner(k0, g.offset, t0[axis], len[axis], g.K[axis], W);
    }
}

/* A window of the tile's copies [base, base + count) counting-sorted by a
   key in [0, bins): each thread loads its PER copies r[i] (zeros past the
   window), keys them by key_of(copy) and takes a rank in its key's bin; the
   bins' counts, scanned by one warp, become offsets (bin[bins] the
   window's count), so that copy i's sorted place is bin[key[i]] + rank[i].
   Only a copy, its key and rank live across the scan: the weights come
   after it.  Every thread of the block (ELEC__CHARGEMAP_TILE_THREADS)
   calls it; source holds the copies' places until the scan.  The copies
   are read past L1 (written by stage 1 on other SMs) unless they were
   prefetched into it (cached; elec__chargemap_warp_runs): a read after
   stage 2's wait for stage 1 (griddepcontrol.wait, whose writes it makes
   visible to the grid) or after the kernel boundary. */
template <int PER, typename KeyOf>
__device__ __forceinline__ void elec__chargemap_sort_window(
    const float4 *copies, int chunk, int groups, const int *start, const int *offset, int base,
    int count, int *source, int *bin, int bins, KeyOf key_of, float4 r[PER], int key[PER],
    int rank[PER], bool cached) {
    const int t = threadIdx.x;
    for (int k = t; k <= bins; k += ELEC__CHARGEMAP_TILE_THREADS) bin[k] = 0;
    elec__chargemap_window_sources(source, chunk, groups, start, offset, base, base + count);
    __syncthreads();
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int s = t + i * ELEC__CHARGEMAP_TILE_THREADS;
        key[i] = rank[i] = 0;
        r[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (s < count) {
            r[i] = cached ? copies[source[s]] : __ldcg(copies + source[s]);
            key[i] = key_of(r[i]);
            rank[i] = atomicAdd(bin + key[i], 1);
        }
    }
    __syncthreads();
    if (t < 32) elec__chargemap_warp_scan(bin, bins);
    __syncthreads();
}

template <int BASIS, int W>
__device__ void elec__chargemap_sum_tile_columns(int id, float *grid, const int2 *runs,
                                                 const float4 *copies,
                                                 const elec__chargemap_geometry &g,
                                                 const elec__chargemap_bands &bd,
                                                 const elec__msm_basis_args &b,
                                                 unsigned char *smem) {
    constexpr int ZC = ELEC__CHARGEMAP_COLUMN_Z, PER = ELEC__CHARGEMAP_COLUMN_PER_THREAD;
    constexpr int WIN = ELEC__CHARGEMAP_COLUMN_WINDOW;
    constexpr int threads = ELEC__CHARGEMAP_TILE_THREADS; /* the launch's block */
    static_assert(ZC % 4 == 0, "the z chunk is read as float4");
    const int t = threadIdx.x, groups = bd.groups;
    const int chunk = bd.chunk;
    /* the window's records as arrays over the sorted copy k, so that the
       lanes of a warp, reading neighbouring k, hit distinct banks */
    float4 *qz = (float4 *)smem;                       /* ZC / 4 x WIN: q w_z */
    float *wxs = (float *)(qz + (ZC / 4) * WIN);       /* W x WIN: w_x        */
    float *wys = wxs + W * WIN;                        /* W x WIN: w_y        */
    int *x0s = (int *)(wys + W * WIN);                 /* WIN: corner x0      */
    int *source = x0s;                                 /* WIN: copies' places */
    int *bin = x0s + WIN;                              /* BINS + 1            */
    int *offset = bin + ELEC__CHARGEMAP_COLUMN_BINS + 1; /* groups + 1     */
    int *start = offset + groups + 1;                    /* groups         */
    int t0[3], len[3];
    elec__chargemap_tile_extent(id, g, bd, t0, len);
    const int total = elec__chargemap_warp_runs<false>(id, runs, copies, bd, start, offset);
    const int BX = len[0] + W - 1, bins = BX * (len[1] + W - 1), columns = len[0] * len[1];
    for (int zc0 = 0; zc0 < len[2]; zc0 += ZC)
        for (int cc0 = 0; cc0 < columns; cc0 += threads) {
            const int c = cc0 + t, X = c % len[0], Y = c / len[0];
            const bool mine = c < columns;
            float acc[ZC];
#pragma unroll
            for (int j = 0; j < ZC; j++) acc[j] = 0.0f;
            for (int base = 0; base < total; base += WIN) {
                const int count = min(WIN, total - base);
                /* keyed by the stencil's (x, y) corner */
                int key[PER], rank[PER];
                float4 r[PER];
                elec__chargemap_sort_window<PER>(
                    copies, chunk, groups, start, offset, base, count, source, bin, bins,
                    [&](float4 c) {
                        const int cx = elec__chargemap_corner((int)c.x, g.offset, t0[0], len[0],
                                                              g.K[0], W);
                        const int cy = elec__chargemap_corner((int)c.y, g.offset, t0[1], len[1],
                                                              g.K[1], W);
                        return (cx + W - 1) + (cy + W - 1) * BX;
                    },
                    r, key, rank, false);
#pragma unroll
                for (int i = 0; i < PER; i++)
                    if (t + i * threads < count) { /* the record at its sorted place */
                        const int at = bin[key[i]] + rank[i];
                        int corner[3];
                        float w[3][W];
                        elec__chargemap_copy_stencil<BASIS, W>(r[i], t0, len, g, b, w, corner);
#pragma unroll
                        for (int j = 0; j < ZC; j += 4)
                            qz[(j / 4) * WIN + at] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                        /* then the stencil's points in the chunk, each
                           stored where it falls (a select for every
                           pair of z and stencil point took 6 % of stage
                           2's instructions) */
#pragma unroll
                        for (int mm = 0; mm < W; mm++) {
                            const int j = corner[2] + mm - zc0;
                            if ((unsigned)j < (unsigned)ZC)
                                ((float *)(qz + (j >> 2) * WIN + at))[j & 3] = r[i].w * w[2][mm];
                        }
#pragma unroll
                        for (int m = 0; m < W; m++) {
                            wxs[m * WIN + at] = w[0][m];
                            wys[m * WIN + at] = w[1][m];
                        }
                        x0s[at] = corner[0];
                    }
                __syncthreads();
                if (mine) {
                    /* the W runs (one a corner row) in turn, two visits
                       at a time: their shared loads in flight together */
                    const auto visit = [&](int k, int dy) {
                        const int dx = X - x0s[k];
                        const float wxy = wxs[dx * WIN + k] * wys[dy * WIN + k];
#pragma unroll
                        for (int j = 0; j < ZC; j += 4) {
                            const float4 q = qz[(j / 4) * WIN + k];
                            acc[j] = fmaf(wxy, q.x, acc[j]);
                            acc[j + 1] = fmaf(wxy, q.y, acc[j + 1]);
                            acc[j + 2] = fmaf(wxy, q.z, acc[j + 2]);
                            acc[j + 3] = fmaf(wxy, q.w, acc[j + 3]);
                        }
                    };
#pragma unroll
                    for (int dy = 0; dy < W; dy++) {
                        const int row = (Y + W - 1 - dy) * BX + X;
                        const int last = bin[row + W];
                        int k = bin[row];
                        for (; k + 1 < last; k += 2) {
                            visit(k, dy);
                            visit(k + 1, dy);
                        }
                        if (k < last) visit(k, dy);
                    }
                }
                __syncthreads();
            }
            if (mine) {
                /* the column's first point, then a plane a step (the
                   64-bit index of each point apart took 9 %) */
                const size_t plane = (size_t)g.K[0] * g.K[1];
                float *out = grid + (t0[0] + X) + (size_t)g.K[0] * (t0[1] + Y) +
                             plane * (size_t)(t0[2] + zc0);
#pragma unroll
                for (int j = 0; j < ZC; j++, out += plane)
                    if (zc0 + j < len[2]) *out = acc[j];
            }
        }
    __syncthreads(); /* the shared memory is the next tile's */
}

/* TILE_BINNED's stage 2 on the tensor cores, where the tile fits (x and y
   at most 16 points, z at most 8; one image of a stencil, as the column
   sum) and the device has them (sm_80 on): a y row of the tile is a 16 x 8
   (x by z) product,
     G_y[x][z] = sum over copies c of wx_c[x] (wy_c[y - cy_c] q wz_c[z]),
   a sum over the copies that reach row y (cy_c <= y < cy_c + W), which
   the window's copies sorted by their stencil's y corner cy make one
   contiguous run.  Each warp keeps two rows' sums in the fragments of
   mma.m16n8k8 (TF32: A = wx over x and eight copies, B = the copies' wy q
   wz over z) and steps through the run eight copies at a time, so no lane
   waits for another: the column sum's lanes each walk runs of their own,
   15 of 32 busy on average (Nsight Compute, H200).  Most products are
   zeros (4 of 16 x, 4 of 8 z at order 4), which cost the tensor cores
   nothing.  ApoA1-size's stage 2 14.7 -> 12.7 us, 1M atoms' 128.6 ->
   123.8 (H200, bench/RESULTS.md, 2026-12-02).
   Accuracy: TF32 reads 10 of a float's 23 significand bits, so each
   operand is split, v = hi + lo (elec__tf32_split), and three products
   are summed, hi hi + hi lo + lo hi (hi hi in sums apart from the other
   two, added at the store): each term q wx wy wz is then off by less
   than 3 2^-20 of itself (the lo lo term and the bits of lo the
   tensor cores drop), where float arithmetic is off by a few 2^-24; the
   tensor cores' products are exact and their sums are float's, rounded
   toward zero (Fasi et al., PeerJ Comput. Sci. 7:e330, 2021, measured
   that on the V100, T4 and A100; assumed here for sm_90).  The split by a
   mask relies on the tensor cores reading a TF32 operand's top 19 bits
   and ignoring the low 13, which PTX leaves to the implementation: the
   tests' maps would show a departure.  tests/gpu.h's gpu_chargemap_bound
   states the resulting bound; the tests found the sum within a quarter
   of the float rungs' own. */
/* Copies a window, 4 blocks an SM: 444 fills the slots that 416 took
   with its padding (elec__chargemap_tensor_stride: 452 either way), and
   a tile whose copies pass the window takes a second one.  At 1M atoms
   on 216^3 (a whole tile's copies 394 on average, by the arithmetic)
   about 11 % of the tiles took two (Nsight Compute's instruction
   counts); ApoA1-size's tiles hold 365 on average, and a few of its 490
   are expected past 416.  416 -> 444 took ApoA1-size's map from
   12.62-12.65 to 12.44-12.46 us and end to end from 20.13-20.21 to
   19.30-19.36; 1M atoms 117.3 -> 114.4-115.0 and 157.2-157.5 ->
   154.2-154.7 (H200, bench/RESULTS.md, 2026-12-02, 09:10 UTC). */
#define ELEC__CHARGEMAP_TENSOR_WINDOW 444
/* A handle whose kernels share the SMs (SPME's spread beside its real
   space) sums in windows of 288 copies, 39 KB a block against 53 at order
   4 (40 and 56 at order 5): four blocks of 53 KB leave the pair kernel
   beside them about 28 KB of an SM's 256 KB for its L1, and ApoA1-size's
   step at order 5, launched plainly, took 249.5 us against 215 by columns
   and 193.0 with this window; the map alone is slower in it (14.2 against
   12.6 us), so a handle alone keeps the wider window (416 then, 444
   now; H200, bench/RESULTS.md, 2026-12-02).  Each window is a kernel of
   its own: chosen at run time, the window seemed to cost the map alone
   about 7 % (13.99 us in a --quick run against make bench's 13.10, not
   side by side). */
#define ELEC__CHARGEMAP_TENSOR_WINDOW_SHARING 288
/* a window, its eight padding slots, and 4 mod 32 (lanes' loads on distinct banks) */
__host__ __device__ constexpr int elec__chargemap_tensor_stride(int window) {
    return (window + 8 + 27) / 32 * 32 + 4;
}

static inline bool elec__chargemap_tensor_fits(const elec__chargemap_bands &bd, const int K[3],
                                               int W) {
    for (int axis = 0; axis < 3; axis++)
        if (K[axis] < bd.L[axis] + W - 1) return false;
    return bd.L[0] <= 16 && bd.L[1] <= 16 && bd.L[2] <= 8 && W <= 8;
}

/* Its shared memory in windows of `window` copies: per window slot, wx
   over 16 x, q wz over 8 z, wy over W, cy; the corner rows' offsets; the
   groups' runs. */
static inline size_t elec__chargemap_tensor_bytes(int W, int groups, int window) {
    return (size_t)elec__chargemap_tensor_stride(window) * (16 + 8 + W + 1) * 4 + 64 * 4 +
           sizeof(int) * (2 * (size_t)groups + 1);
}

/* v as TF32 and the rest: hi keeps the sign, the exponent and the top 10
   bits of the significand (the bits the tensor cores read), lo = v - hi
   (exact in float: the 13 bits dropped), of which the tensor cores read
   the top 11, dropping less than 2^-10 |lo| < 2^-20 |v|.  Two
   instructions, and the compiler passes v itself as hi: the conversion
   with rounding (cvt.rna.tf32) is four on sm_90 (a carry, a test for inf,
   a select and the mask; nvcc 13.0's SASS), and with it ApoA1-size's stage
   2 took 16.5 us, against 13.6 (H200, bench/RESULTS.md, 2026-12-02). */
__device__ __forceinline__ void elec__tf32_split(float v, unsigned *hi, unsigned *lo) {
    *hi = __float_as_uint(v) & 0xffffe000u;
    *lo = __float_as_uint(v - __uint_as_float(*hi));
}

/* c += a b for one m16n8k8 TF32 tile (sm_80 on; the plan keeps older
   devices on the column sum). */
__device__ __forceinline__ void elec__mma_tf32(float c[4], const unsigned a[4],
                                               const unsigned b[2]) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    (void)c;
    (void)a;
    (void)b;
    __trap();
#endif
}

/* ldmatrix (sm_75 on; compiled from sm_80 on, as elec__mma_tf32, the
   only sum that calls it running there): N (4: .x4, 2: .x2) 8 x 4
   matrices of 32-bit words from rows of 16 bytes in shared memory
   (16-byte aligned), each lane's address one row's; lane l gets row
   l / 4, word l % 4 of each. */
__device__ __forceinline__ unsigned elec__smem_address(const void *p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
template <int N>
__device__ __forceinline__ void elec__ldmatrix(unsigned (&v)[N], unsigned at) {
    static_assert(N == 2 || N == 4, "ldmatrix .x2 or .x4");
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (N == 4)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(v[0]), "=r"(v[1]), "=r"(v[2]), "=r"(v[3])
                     : "r"(at));
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];"
                     : "=r"(v[0]), "=r"(v[1])
                     : "r"(at));
#else
    (void)v;
    (void)at;
    __trap();
#endif
}

/* Copies a lane holds in the tensor sum's gather by warps: 96 a warp,
   where a warp's share of a tile (an eighth of its groups) averages 46 at
   ApoA1 size and 49 at 1M atoms (16 x 16 x 8 tiles, 132 groups). */
#define ELEC__CHARGEMAP_GATHERED 3

/* A warp's share of tile id's copies, gathered without waiting for the
   block: warp w takes groups [w G / 8, (w + 1) G / 8) (a lane each: G at
   most 256), scans their runs' counts by shuffles, lists the places of
   its copies in its own 32 PER ints of `list`, and loads them, lane l the
   copies l, l + 32, ... of the list into r (zeros past them).  Returns
   the warp's count; past 32 PER it lists and loads none. */
template <int PER>
__device__ __forceinline__ int elec__chargemap_gather_warp(int id, const int2 *runs,
                                                           const float4 *copies,
                                                           const elec__chargemap_bands &bd,
                                                           int *list, float4 r[PER]) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, groups = bd.groups;
    const int j = (warp * groups >> 3) + lane, end = (warp + 1) * groups >> 3;
    int2 run = make_int2(0, 0); /* (start, count) */
    if (j < end) run = elec__chargemap_tile_run(runs, id, groups, j);
    const int through = elec__warp_inclusive_sum(run.y); /* copies of lanes 0 to this one */
    const int count = __shfl_sync(0xffffffffu, through, 31);
    int *own = list + warp * 32 * PER;
    if (count <= 32 * PER) {
        const int first = (int)elec__chargemap_group_first(j, bd.chunk) + run.x;
        for (int c = 0, at = through - run.y; c < run.y; c++) own[at + c] = first + c;
    }
    __syncwarp();
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int k = lane + 32 * i;
        r[i] = k < count && count <= 32 * PER ? __ldcg(copies + own[k])
                                              : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    return count;
}

/* A and B of the tensor sum in a window of WIN copies, zeroed: the sum
   reads them so on entry (elec__k_chargemap_tile_sum, a block a tile). */
template <int WIN>
__device__ __forceinline__ void elec__chargemap_tensor_zero(unsigned char *smem) {
    constexpr int S = elec__chargemap_tensor_stride(WIN);
    static_assert(S % 4 == 0, "A and B zeroed as float4");
    for (int c = threadIdx.x; c < 24 * S / 4; c += ELEC__CHARGEMAP_TILE_THREADS)
        ((float4 *)smem)[c] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
}

/* A and B come zeroed (elec__chargemap_tensor_zero). */
template <int BASIS, int W, int WIN>
__device__ void elec__chargemap_sum_tile_tensor(int id, float *grid, const int2 *runs,
                                                const float4 *copies,
                                                const elec__chargemap_geometry &g,
                                                const elec__chargemap_bands &bd,
                                                const elec__msm_basis_args &b,
                                                unsigned char *smem) {
    constexpr int S = elec__chargemap_tensor_stride(WIN);
    static_assert(S >= WIN + 8, "a window and its eight padding slots");
    constexpr int threads = ELEC__CHARGEMAP_TILE_THREADS, PER = (WIN + threads - 1) / threads;
    constexpr int GATHERED = ELEC__CHARGEMAP_GATHERED;
    static_assert(threads == 256, "eight warps, two y rows each");
    static_assert(S / 4 <= threads, "a thread zeroes a column of four of A and B");
    static_assert(8 * 32 * GATHERED <= W * S, "the warps' lists fit wy");
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5, gq = lane >> 2, tq = lane & 3;
    const int groups = bd.groups, chunk = bd.chunk;
    float *ax = (float *)smem;     /* 16 x S: wx at x          */
    float *bz = ax + 16 * S;       /* 8 x S: q wz at z         */
    float *wy = bz + 8 * S;        /* W x S: wy; first, the warps' lists */
    int *cy = (int *)(wy + W * S); /* S: the y corner          */
    int *source = cy;              /* the copies' places, first */
    int *bin = cy + S;             /* 64: corner rows' offsets  */
    int *offset = bin + 64;        /* groups + 1                */
    int *start = offset + groups + 1;
    int *overfull = bin + 63; /* past the rows' bins */
    static_assert(16 + W - 1 < 32, "a tile's corner rows, a lane each and below bin[63]");
    int t0[3], len[3];
    elec__chargemap_tile_extent(id, g, bd, t0, len);
    const int rows = len[1] + W - 1; /* corner rows */
    /* a copy's key: its stencil's y corner row */
    const auto key_of = [&](float4 c) {
        return elec__chargemap_corner((int)c.y, g.offset, t0[1], len[1], g.K[1], W) + W - 1;
    };
    const int y0 = 2 * warp;                                 /* this warp's rows y0, y0 + 1 */
    float acc[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
    /* hi lo + lo hi, in sums of their own up to order 5; at 6 to 8 the
       eight registers more spilled 12 to 76 bytes a thread (B-spline;
       ptxas -v, nvcc 13.0), and those orders add all three in acc */
    constexpr bool CROSS_APART = W <= 5;
    float cross[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
    /* copy r's record at its sorted place: wx over A's x rows, q wz over
       B's z rows (the rest stay zero), wy and the y corner */
    const auto record = [&](float4 r, int key, int at) {
        int corner[3];
        float w[3][W];
        elec__chargemap_copy_stencil<BASIS, W>(r, t0, len, g, b, w, corner);
#pragma unroll
        for (int m = 0; m < W; m++) {
            const int x = corner[0] + m, z = corner[2] + m;
            if ((unsigned)x < 16u) ax[x * S + at] = w[0][m];
            if ((unsigned)z < 8u) bz[z * S + at] = r.w * w[2][m];
            wy[m * S + at] = w[1][m];
        }
        cy[at] = key - (W - 1);
    };
    /* the window's products, its records written and a barrier passed:
       the copies that reach row y0 or y0 + 1 (corner rows y0 - W + 1 to
       y0 + 1, keys y0 to y0 + W) lie at sorted places [lo, hi) */
    const auto multiply = [&](int lo, int hi) {
        if (y0 >= len[1]) return;
        /* A (x by eight copies) in one ldmatrix.x4, the copies' q wz
           (B's factor) in one .x2, where four and two loads a lane
           took: ApoA1-size's map 11.30-11.37 -> 11.18-11.23 us, with
           the two sums below 11.07-11.13 (H200, three rounds
           alternating; bench/RESULTS.md, 2026-12-02, 16:14 UTC on).
           Rows are 16 bytes, so the run is read from the multiple of
           4 at or below lo: the copies before lo (corner rows above
           this warp's) have d >= W, and B zero.  Lane l gives the
           address of row l % 8 of matrix l / 8: A's x is that row, + 8
           in matrices 1 and 3, its copies kb, + 4 in matrices 2 and
           3; B's z is the row, its copies kb, + 4 in matrix 1 (lanes
           16-31 repeat 0-15, unread).  Past the run (other rows'
           copies, the padding) d leaves [0, W) and B is zero. */
        const int k0 = lo & ~3, mat = lane >> 3, r8 = lane & 7;
        unsigned a_at = elec__smem_address(ax + (r8 + 8 * (mat & 1)) * S + 4 * (mat >> 1) +
                                           k0);
        unsigned b_at = elec__smem_address(bz + r8 * S + 4 * (mat & 1) + k0);
        const float *wyk = wy + k0 + tq;
        const int *cyk = cy + k0 + tq;
        for (int kb = k0; kb < hi; kb += 8, a_at += 32, b_at += 32, wyk += 8, cyk += 8) {
            unsigned a[4], qz[2], a_hi[4], a_lo[4], b_hi[2][2], b_lo[2][2];
            elec__ldmatrix(a, a_at);
            elec__ldmatrix(qz, b_at);
#pragma unroll
            for (int i = 0; i < 4; i++)
                elec__tf32_split(__uint_as_float(a[i]), &a_hi[i], &a_lo[i]);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int c = cyk[4 * h];
#pragma unroll
                for (int row = 0; row < 2; row++) {
                    const int d = y0 + row - c;
                    const float v = (unsigned)d < (unsigned)W
                                        ? wyk[d * S + 4 * h] * __uint_as_float(qz[h])
                                        : 0.0f;
                    elec__tf32_split(v, &b_hi[row][h], &b_lo[row][h]);
                }
            }
            /* the cross products in sums of their own: a chain of two
               dependent products a row, not three (1M atoms' map
               100.2-100.5 -> 99.2 us with ldmatrix, H200, the same
               rounds) */
#pragma unroll
            for (int row = 0; row < 2; row++) {
                float *into = CROSS_APART ? cross[row] : acc[row];
                elec__mma_tf32(into, a_lo, b_hi[row]);
                elec__mma_tf32(into, a_hi, b_lo[row]);
                elec__mma_tf32(acc[row], a_hi, b_hi[row]);
            }
        }
    };
    /* The window's copies gathered warp by warp, where the tile's groups
       number at most 256 (elec__chargemap_gather_warp): a warp scans its
       groups' runs and loads its copies without waiting for the others, and
       scans the corner rows' counts (at most 23, a lane each) in its own
       lanes, so the block passes three barriers before the products; the
       block's gather below passes six (the runs stored, then scanned by one
       warp; the window's places; the copies' ranks; the rows scanned by one
       warp; the records).  ApoA1-size's map 10.91-11.03 -> 10.28-10.33 us and
       end to end 16.61-16.76 -> 15.24-15.33; B-spline 11.97-12.12 ->
       11.76-11.96 and 17.46-17.56 -> 16.74-16.96; DMPC-size 9.97-10.04 ->
       9.28-9.33 and 15.39-15.45 -> 14.10-14.24; 1M atoms 94.5-95.1 ->
       91.9-92.5 and 134.0-134.6 -> 130.4-131.0 (H200, four rounds
       alternating; bench/RESULTS.md, 2026-12-03, 07:35 UTC on).  A tile whose
       copies pass the window, or whose copies come to one warp from more than
       32 GATHERED (few groups hold them: atoms in space order, or few groups
       asked for), takes the block's gather; where the tiles' copies pass
       the window on average (elec__chargemap_gather_atoms) the block
       gathers from the start. */
    bool gathered = false;
    if (bd.gather && groups <= 8 * 32) {
        if (t < 64) bin[t] = 0; /* seen by every warp after the barrier */
        float4 r[GATHERED];
        const int mine = elec__chargemap_gather_warp<GATHERED>(id, runs, copies, bd, (int *)wy, r);
        __syncthreads();
        int key[GATHERED], rank[GATHERED];
#pragma unroll
        for (int i = 0; i < GATHERED; i++) {
            key[i] = rank[i] = 0;
            if (lane + 32 * i < mine && mine <= 32 * GATHERED) {
                key[i] = key_of(r[i]);
                rank[i] = atomicAdd(bin + key[i], 1);
            }
        }
        if (lane == 0 && mine > 32 * GATHERED) *overfull = 1; /* its copies not ranked */
        __syncthreads();
        const int n = lane <= rows ? bin[lane] : 0; /* row `lane`'s copies */
        const int through = elec__warp_inclusive_sum(n);
        const int count = __shfl_sync(0xffffffffu, through, 31); /* the ranked copies */
        if (!*overfull && count <= WIN) {
            const int before = through - n; /* row `lane`'s first sorted place */
#pragma unroll
            for (int i = 0; i < GATHERED; i++) {
                const int at = __shfl_sync(0xffffffffu, before, key[i]) + rank[i];
                if (lane + 32 * i < mine) record(r[i], key[i], at);
            }
            /* eight slots past the copies (zeros): a corner no row takes */
            if (warp == 0 && lane < 8) cy[count + lane] = 1 << 20;
            const int lo = __shfl_sync(0xffffffffu, before, min(y0, rows));
            const int hi = __shfl_sync(0xffffffffu, before, min(y0 + W + 1, rows));
            __syncthreads();
            multiply(lo, hi);
            gathered = true;
        }
    }
    if (!gathered) {
        const int total = elec__chargemap_warp_runs<true>(id, runs, copies, bd, start, offset);
        for (int base = 0; base < total; base += WIN) {
            const int count = min(WIN, total - base);
            /* A and B zeroed again from the second window on, 16 bytes a
               store, before the sort (whose barriers come before the
               records are written).  Zeroed a copy at a time, its 24 slots
               stored at its sorted place (the lanes' places scattered over
               the banks), stage 2 took 12.31-12.38 us at ApoA1 size and
               110.9-111.2 at 1M atoms; zeroed whole, 11.27-11.32 and
               100.4-100.6 (H200, two rounds alternating in one call;
               bench/RESULTS.md, 2026-12-02, 12:07 UTC on).  Only the
               columns the loop reads are zeroed (the window's copies and
               the eight padding slots, a thread a column of 4):
               ApoA1-size 10.95-11.03 -> 10.81-10.91 us, 1M atoms
               97.98-98.78 -> 97.10-97.79 (H200, six rounds alternating in
               two calls; bench/RESULTS.md, 2026-12-02, 23:28 UTC on). */
            if (base > 0 && t < (count + 8 + 3) / 4)
                for (int row = 0; row < 24; row++)
                    ((float4 *)(ax + row * S))[t] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            /* keyed by the stencil's y corner */
            int key[PER], rank[PER];
            float4 r[PER];
            elec__chargemap_sort_window<PER>(copies, chunk, groups, start, offset, base, count,
                                             source, bin, rows, key_of, r, key, rank,
                                             bd.prefetch != 0);
#pragma unroll
            for (int i = 0; i < PER; i++)
                if (t + i * threads < count) record(r[i], key[i], bin[key[i]] + rank[i]);
            if (t < 8) cy[count + t] = 1 << 20;
            __syncthreads();
            multiply(bin[min(y0, rows)], bin[min(y0 + W + 1, rows)]);
            __syncthreads();
        }
    }
    /* the fragments: c0 (x gq, z 2 tq), c1 (x gq, z 2 tq + 1), c2 and c3 at
       x gq + 8 */
    const size_t plane = (size_t)g.K[0] * g.K[1];
#pragma unroll
    for (int row = 0; row < 2; row++) {
        const int y = y0 + row;
        if (y >= len[1]) continue;
        float *out = grid + t0[0] + (size_t)g.K[0] * (t0[1] + y) + plane * t0[2];
#pragma unroll
        for (int c = 0; c < 4; c++) {
            const int x = gq + 8 * (c >> 1), z = 2 * tq + (c & 1);
            if (x < len[0] && z < len[2])
                out[x + plane * z] = CROSS_APART ? acc[row][c] + cross[row][c] : acc[row][c];
        }
    }
    __syncthreads(); /* the shared memory is the next tile's */
}

/* Stage 2's sums, a template argument of its kernels (SUM below), chosen
   on the host once a handle's tiles are planned (elec__chargemap_sum_of):
   each kernel holds one sum, so that its registers are that sum's alone.
   Chosen inside one kernel at run time, the register sum spilled 204-268
   bytes a thread at order 8 and the one-kernel rungs 72-80 at order 4,
   where they spilled none before the column sum came (nvcc 13.0,
   ptxas -v). */
enum {
    ELEC__CHARGEMAP_SUM_REGISTERS = 0, /* float sub-tiles in registers     */
    ELEC__CHARGEMAP_SUM_FIXED = 1,     /* 64-bit integers in shared memory
                                          (TILE_FUSED_FIXED)               */
    ELEC__CHARGEMAP_SUM_COLUMNS = 2,   /* float columns in registers, where
                                          the tile fits them               */
    ELEC__CHARGEMAP_SUM_TENSOR = 3,    /* y rows on the tensor cores       */
    ELEC__CHARGEMAP_SUM_TENSOR_SHARING = 4 /* the same in narrower windows,
                                              beside others' kernels      */
};

/* The tensor sums, and the window of copies each takes (on the host, and
   at compile time in the kernels). */
__host__ __device__ constexpr bool elec__chargemap_is_tensor(int sum) {
    return sum == ELEC__CHARGEMAP_SUM_TENSOR || sum == ELEC__CHARGEMAP_SUM_TENSOR_SHARING;
}
__host__ __device__ constexpr int elec__chargemap_tensor_window(int sum) {
    return sum == ELEC__CHARGEMAP_SUM_TENSOR ? ELEC__CHARGEMAP_TENSOR_WINDOW
                                             : ELEC__CHARGEMAP_TENSOR_WINDOW_SHARING;
}

template <int BASIS, int W, int SUM>
__device__ void elec__chargemap_sum_tile(int id, float *grid, const int2 *runs,
                                         const float4 *copies,
                                         const elec__chargemap_geometry &g,
                                         const elec__chargemap_bands &bd,
                                         const elec__msm_basis_args &b, unsigned char *smem) {
    if constexpr (SUM == ELEC__CHARGEMAP_SUM_FIXED)
        elec__chargemap_sum_tile_fixed<BASIS, W>(id, grid, runs, copies, g, bd, b, smem);
    else if constexpr (SUM == ELEC__CHARGEMAP_SUM_COLUMNS)
        elec__chargemap_sum_tile_columns<BASIS, W>(id, grid, runs, copies, g, bd, b, smem);
    else if constexpr (elec__chargemap_is_tensor(SUM))
        elec__chargemap_sum_tile_tensor<BASIS, W, elec__chargemap_tensor_window(SUM)>(
            id, grid, runs, copies, g, bd, b, smem);
    else
        elec__chargemap_sum_tile_registers<BASIS, W>(id, grid, runs, copies, g, bd, b, smem);
}

/* TILE_FUSED's grid barrier (elec__grid_barrier) on its status words. */
__device__ __forceinline__ void elec__chargemap_grid_barrier(int *status) {
    elec__grid_barrier((unsigned *)(status + ELEC__CM_BARRIER));
}

/* The outside count of the last stage 1 handed to finish (a block after
   every atom was seen), once: a second map of the same prepared atoms
   leaves it as it was, so that finish reports it again. */
__device__ __forceinline__ void elec__chargemap_hand_over(int *status) {
    if (blockIdx.x == 0 && threadIdx.x == 0 && status[ELEC__CM_PREPARED]) {
        status[ELEC__CM_OUTSIDE_SEEN] = atomicExch(status + ELEC__CM_OUTSIDE, 0);
        status[ELEC__CM_PREPARED] = 0;
    }
}

/* Stage 1's counters, in bytes, rounded up to 16 (its copies' stage
   follows them). */
__host__ __device__ inline size_t elec__chargemap_hist_bytes(int tiles) {
    return ((size_t)tiles * sizeof(int) + 15) / 16 * 16;
}

/* TILE_BINNED's stage 1 (and TILE_FUSED's and TILE_FUSED_FIXED's where
   the device has no cooperative launch): a block per group, of
   elec__chargemap_bin_threads threads; stage_room copies fit in shared
   memory after its counters.  Each block releases stage 2 (launched with
   PDL where the handle uses it) as it starts, so that stage 2 may be
   scheduled once every stage-1 block has started; stage 2's blocks wait
   for stage 1 to finish before they read anything
   (elec__k_chargemap_tile_sum).  Stage 1 is itself launched with PDL
   and waits, before it touches memory, for the kernel before it (the
   last map's stage 2, or whatever wrote the atoms): its blocks are then
   scheduled as that kernel's blocks end, not once its completion has been
   processed.  ApoA1-size end to end 17.95-18.04 -> 17.01 us, the binning
   alone 6.2-6.4 -> 5.2-5.3, 1M atoms 139.6-140.0 -> 138.8-138.9 (H200,
   two rounds alternating; bench/RESULTS.md, 2026-12-02, 16:14 UTC on). */
#define ELEC__CHARGEMAP_BIN_THREADS_MOST 1024
__global__ void __launch_bounds__(ELEC__CHARGEMAP_BIN_THREADS_MOST)
elec__k_chargemap_tile_bin(const float4 *xyzq, int n, elec__chargemap_geometry g,
                           elec__chargemap_bands bd, int2 *runs, float4 *copies, int *status,
                           double *sums, int stage_room) {
    extern __shared__ __align__(16) unsigned char elec__chargemap_bin_smem[];
    int *stage = (int *)(elec__chargemap_bin_smem + elec__chargemap_hist_bytes(bd.count));
    elec__release_next_grid();
    elec__wait_prior_grid();
    elec__chargemap_bin_group(blockIdx.x, xyzq, n, g, bd, runs, copies, status, sums,
                              (int *)elec__chargemap_bin_smem, stage, stage_room);
}

/* TILE_BINNED's stage 2, and the one-kernel rungs' where the device has
   no cooperative launch: a block per tile.  Launched with PDL, its blocks
   may start while stage 1 runs, and wait for it first.  The tensor sums'
   A and B are zeroed before that wait, under the kernel before: zeroed
   after the gather's loads were issued instead, ApoA1-size's end to end
   took 15.78-16.03 us against 15.24-15.33, DMPC-size's 14.75-14.85
   against 14.10-14.24; 1M atoms' 129.4-129.9 against 130.4-131.0, whose
   later waves of blocks zero on their path either way (H200, four rounds
   alternating; bench/RESULTS.md, 2026-12-03, 07:35 UTC on). */
template <int BASIS, int W, int SUM>
__global__ void __launch_bounds__(ELEC__CHARGEMAP_TILE_THREADS, 4)
elec__k_chargemap_tile_sum(float *grid, const int2 *runs, const float4 *copies,
                           elec__chargemap_geometry g, elec__chargemap_bands bd,
                           elec__msm_basis_args b, int *status) {
    extern __shared__ __align__(16) unsigned char elec__chargemap_sum_smem[];
    if constexpr (elec__chargemap_is_tensor(SUM))
        elec__chargemap_tensor_zero<elec__chargemap_tensor_window(SUM)>(elec__chargemap_sum_smem);
    elec__wait_prior_grid();
    elec__chargemap_hand_over(status);
    elec__chargemap_sum_tile<BASIS, W, SUM>(blockIdx.x, grid, runs, copies, g, bd, b,
                                            elec__chargemap_sum_smem);
}

/* TILE_FUSED (SUM_REGISTERS or SUM_COLUMNS) and TILE_FUSED_FIXED
   (SUM_FIXED): the first bd.groups blocks bin, every block waits at the
   grid barrier, then the blocks take the tiles in turn. */
template <int BASIS, int W, int SUM>
__global__ void __launch_bounds__(ELEC__CHARGEMAP_TILE_THREADS, 4)
elec__k_chargemap_tile_fused(float *grid, const float4 *xyzq, int n, elec__chargemap_geometry g,
                             elec__chargemap_bands bd, elec__msm_basis_args b, int2 *runs,
                             float4 *copies, int *status, double *sums) {
    extern __shared__ __align__(16) unsigned char elec__chargemap_fused_smem[];
    static_assert(!elec__chargemap_is_tensor(SUM),
                  "the tensor sums take A and B zeroed: one tile a block");
    if ((int)blockIdx.x < bd.groups)
        elec__chargemap_bin_group(blockIdx.x, xyzq, n, g, bd, runs, copies, status, sums,
                                  (int *)elec__chargemap_fused_smem, NULL, 0);
    elec__chargemap_grid_barrier(status);
    elec__chargemap_hand_over(status);
    for (int id = blockIdx.x; id < bd.count; id += gridDim.x)
        elec__chargemap_sum_tile<BASIS, W, SUM>(id, grid, runs, copies, g, bd, b,
                                                elec__chargemap_fused_smem);
}

/* ---------------------------------------------------- host side: plans */

/* Programmatic dependent launch between the sort's and the map's kernels,
   and between the kernel before a call and tile-binned's stage 1 (sm_90,
   with kernels compiled for compute_90 or later: the handle's
   use_pdl, elec__chargemap_create_as): 1 on, 0 off (every launch then
   waits for the one before; or -DELEC__CHARGEMAP_PDL=0). */
#ifndef ELEC__CHARGEMAP_PDL
#define ELEC__CHARGEMAP_PDL 1
#endif

struct elec_cuda_chargemap_handle {
    int device, sm_count, max_shared;
    elec_chargemap_params p;   /* resolved                                    */
    elec_lattice lattice;
    size_t max_atoms;
    int points;                /* K0 K1 K2                                    */
    elec__chargemap_geometry g;
    elec__msm_basis_args basis;
    elec__chargemap_tiling tiles;
    int use_pdl;
    int tensor_cores;          /* stage 2 may sum on the tensor cores (mma
                                  TF32: sm_80 on, and the kernels' code)   */
    int sharing;               /* its kernels run beside others' (SPME's
                                  spread beside its real space): the tensor
                                  sum in narrower windows
                                  (elec__chargemap_create)                 */
    double *sums;              /* sum q, sum q^2 (device), or NULL            */
    int *status;               /* ELEC__CM_STATUS ints                        */
    elec__chargemap_bins bins; /* the seed's binned rungs                     */
    int gc_block[3];           /* GC_SHARED's block of points                 */
    size_t gc_shared_bytes, tile_shared_bytes;
    float4 *records, *copies;  /* the sorted rungs                            */
    int *tile_count, *tile_start, *tile_cursor;
    long long *fixed;          /* PC_FIXED_POINT                              */
    elec__chargemap_bands bands; /* the tile-binned rungs: tiles and groups   */
    int2 *runs;                /* their (start, count) per tile and group     */
    int sum;                   /* stage 2's sum: ELEC__CHARGEMAP_SUM_*        */
    int fused_blocks;          /* TILE_FUSED's cooperative grid (0: the device
                                  has no cooperative launch: two kernels)     */
    size_t bin_shared_bytes, sum_shared_bytes, fused_shared_bytes;
    int bin_stage_room;        /* copies stage 1 sorts in shared memory      */
    size_t gather_atoms;       /* a call of at most this many atoms sets
                                  bands.gather (0: never;
                                  elec__chargemap_gather_atoms)            */
    size_t prefetch_atoms;     /* a call of at least this many atoms sets
                                  bands.prefetch (SIZE_MAX: never;
                                  elec__chargemap_prefetch_atoms)          */
    const float4 *xyzq;        /* the current call's atoms (PC_BASELINE, the
                                  fused rungs)                                */
    int n;
};

static int elec__chargemap_is_binned(elec_chargemap_variant v) {
    return v >= ELEC_CHARGEMAP_PC_BINNED && v <= ELEC_CHARGEMAP_GC_REDUCED_READS;
}

static int elec__chargemap_is_sorted(elec_chargemap_variant v) {
    return v == ELEC_CHARGEMAP_PC_SORTED_LANES || v == ELEC_CHARGEMAP_TILE_OWNER ||
           v == ELEC_CHARGEMAP_PC_FIXED_POINT;
}

static int elec__chargemap_is_tiled(elec_chargemap_variant v) {
    return v == ELEC_CHARGEMAP_TILE_BINNED || v == ELEC_CHARGEMAP_TILE_FUSED ||
           v == ELEC_CHARGEMAP_TILE_FUSED_FIXED;
}

static int elec__chargemap_layout(elec_chargemap_variant v) {
    switch (v) {
    case ELEC_CHARGEMAP_PC_REDUCED_READS:
    case ELEC_CHARGEMAP_GC_REDUCED_READS: return ELEC__CM_SLOT_AOS;
    case ELEC_CHARGEMAP_PC_COALESCED: return ELEC__CM_SLOT_SOA;
    default: return ELEC__CM_BIN_STRUCT;
    }
}

/* Tiles of T points per axis over K: floor(K / T) of them, the last one
   taking the rest. */
static elec__chargemap_tiling elec__chargemap_tiling_of(const int K[3], const int T[3]) {
    elec__chargemap_tiling tl;
    tl.count = 1;
    for (int axis = 0; axis < 3; axis++) {
        tl.T[axis] = T[axis];
        tl.n[axis] = K[axis] / T[axis] < 1 ? 1 : K[axis] / T[axis];
        tl.L[axis] = K[axis] - (tl.n[axis] - 1) * T[axis];
        tl.count *= tl.n[axis];
    }
    return tl;
}

/* TILE_OWNER's tile: the caller's, or the largest of 16^3, 16^2 x 8,
   16 x 8^2, 8^3 that still gives every SM a tile (fewer halo copies: 1.7
   per atom at 16^3 against 2.6 at 8^3) and fits in shared memory; a basis
   wider than 9 points needs tiles of at least its width - 1: 16. */
static elec__chargemap_tiling elec__chargemap_choose_tiles(const elec_cuda_chargemap_handle *h) {
    static const int candidates[4][3] = {{16, 16, 16}, {16, 16, 8}, {16, 8, 8}, {8, 8, 8}};
    elec__chargemap_tiling best;
    int found = 0;
    if (h->p.tile[0] > 0) return elec__chargemap_tiling_of(h->g.K, h->p.tile);
    for (int c = 0; c < 4; c++) {
        elec__chargemap_tiling tl = elec__chargemap_tiling_of(h->g.K, candidates[c]);
        const size_t bytes = (size_t)tl.L[0] * tl.L[1] * tl.L[2] * sizeof(float);
        if (candidates[c][2] < h->g.width - 1 || bytes > (size_t)h->max_shared) continue;
        best = tl;
        found = 1;
        if (tl.count >= h->sm_count) break;
    }
    if (!found) { /* width 10 on a grid that tiles of 16 do not fit: 16^3 anyway */
        const int sixteen[3] = {16, 16, 16};
        best = elec__chargemap_tiling_of(h->g.K, sixteen);
    }
    return best;
}

/* Tiles of 2^shift points per axis over K (elec__chargemap_bands). */
static elec__chargemap_bands elec__chargemap_bands_of(const int K[3], const int shift[3],
                                                      int width) {
    elec__chargemap_bands bd;
    memset(&bd, 0, sizeof bd);
    bd.count = 1;
    for (int axis = 0; axis < 3; axis++) {
        const int T = 1 << shift[axis];
        int n = (K[axis] + T - 1) / T;
        if (n > 1 && K[axis] - (n - 1) * T < width - 1) n--; /* the rest joins */
        bd.shift[axis] = shift[axis];
        bd.n[axis] = n;
        bd.L[axis] = n == 1 ? K[axis] : K[axis] - (n - 1) * T > T ? K[axis] - (n - 1) * T : T;
        bd.count *= n;
    }
    bd.n0 = elec__divisor_of((unsigned)bd.n[0]);
    bd.n1 = elec__divisor_of((unsigned)bd.n[1]);
    return bd;
}

/* Stage 2's sum for tiles bd: TILE_FUSED_FIXED's integers (fixed), else
   TILE_BINNED's tensor cores where the device and the kernels' code have
   them (tensor) and the tile fits, in narrower windows for a handle that
   shares the SMs (sharing), else the float rungs' columns where the tile
   fits them, else their register sum.  The one-kernel rungs keep the
   columns: the tensor sum's 53 KB a block would leave their cooperative
   grid three blocks an SM, and it was measured in TILE_BINNED alone. */
static int elec__chargemap_sum_of(const elec__chargemap_bands *bd, int fixed, int tensor,
                                  int sharing, const int K[3], int width) {
    if (fixed) return ELEC__CHARGEMAP_SUM_FIXED;
    if (tensor && elec__chargemap_tensor_fits(*bd, K, width))
        return sharing ? ELEC__CHARGEMAP_SUM_TENSOR_SHARING : ELEC__CHARGEMAP_SUM_TENSOR;
    return elec__chargemap_columns_fit(*bd, K, width) ? ELEC__CHARGEMAP_SUM_COLUMNS
                                                      : ELEC__CHARGEMAP_SUM_REGISTERS;
}

/* Shared memory of the tile-binned rungs' stage 2 by `sum`, with the
   groups' offsets and starts: the integer sum's window of copies and tile
   (8 bytes a point); the column sum's (elec__chargemap_column_bytes); the
   register sum's records, window and lists. */
static size_t elec__chargemap_sum_bytes(const elec__chargemap_bands *bd, int groups, int sum,
                                        int width) {
    const size_t runs = sizeof(int) * (2 * (size_t)groups + 1);
    if (sum == ELEC__CHARGEMAP_SUM_FIXED)
        return (size_t)16 * ELEC__CHARGEMAP_TILE_WINDOW +
               (size_t)bd->L[0] * bd->L[1] * bd->L[2] * 8 + runs;
    if (sum == ELEC__CHARGEMAP_SUM_COLUMNS) return elec__chargemap_column_bytes(width, groups);
    if (elec__chargemap_is_tensor(sum))
        return elec__chargemap_tensor_bytes(width, groups, elec__chargemap_tensor_window(sum));
    const size_t win = (size_t)elec__chargemap_register_window(*bd);
    return win * elec__chargemap_record_stride(*bd) * 4 + (size_t)ELEC__CHARGEMAP_BATCH * win +
           runs;
}

/* The tile-binned rungs' tiles: the caller's edges rounded up to powers
   of two, or whichever of 16^3, 16^2 x 8, 16 x 8^2, 8^3 costs least by
   stage 2's measured shape on an H100: the resident blocks (four an SM)
   take the tiles in rounds, and a round lasts as long as a tile's copies,
   max_atoms / tiles times the halo factor prod (1 + (order - 1) / T).
   The float sums (TILE_BINNED, TILE_FUSED) leave 16^3 out where the
   order allows smaller edges: by sub-tiles its 64 take the copies twice
   (ApoA1-size's stage 2 35 us, against 20 at 16^2 x 8), and a caller's
   larger tile more often still (a batch of 32 sub-tiles at a time); by
   columns its two z chunks of 8 take them twice (stage 2 32.0 us
   against 17.8 at 16^2 x 8 for ApoA1-size, 239 against 142 for 1M).
   At least order - 1 points an edge (16 for order 10);
   stage 1's counters and stage 2's shared memory within the device's.
   groups: one block an SM for TILE_BINNED (where neither stages, its
   binning the fastest there and its sum the same at two and four),
   raised later to two or four where only those let stage 1 sort a
   group's copies in shared memory (elec__chargemap_configure_tiles_t;
   the copies staged whole, 1M atoms took two: binning 69-71 -> 49.5 us
   and both stages 237 -> 195 on an H200 in --knobs runs, 2026-11-28;
   staged as their atoms' indices, one fits again: 50.4 -> 40.1 us and
   173 -> 157 on an H200 in runs of a driver kept outside the tree,
   2026-12-02), four for the one-kernel
   rungs (ApoA1-size, H100: TILE_FUSED 32.8 us at four, 35.3 at one;
   TILE_FUSED_FIXED 39.1 at four, 41.5 at one; bench/RESULTS.md).  0 where
   no tiling fits. */
static int elec__chargemap_plan_bands(elec_cuda_chargemap_handle *h) {
    static const int candidates[4][3] = {{4, 4, 4}, {4, 4, 3}, {4, 3, 3}, {3, 3, 3}};
    const int fixed = h->p.variant == ELEC_CHARGEMAP_TILE_FUSED_FIXED;
    const int most = 4 * h->sm_count;
    const int groups = h->p.tile_groups > 0 ? (h->p.tile_groups < most ? h->p.tile_groups : most)
                       : h->p.variant == ELEC_CHARGEMAP_TILE_BINNED ? h->sm_count
                                                                     : most;
    int least = 0, found = 0;
    double best = 0.0;
    while ((1 << least) < h->g.width - 1) least++;
    for (int c = 0; c < 5; c++) {
        int shift[3];
        if (c == 4 && found) break;
        if (c == 0 && !fixed && h->p.tile[0] == 0) continue;
        for (int axis = 0; axis < 3; axis++) {
            if (h->p.tile[0] > 0) {
                shift[axis] = 0;
                while ((1 << shift[axis]) < h->p.tile[axis]) shift[axis]++;
            } else {
                shift[axis] = c < 4 ? candidates[c][axis] : least;
            }
            if (shift[axis] < least) shift[axis] = least;
        }
        const elec__chargemap_bands bd = elec__chargemap_bands_of(h->g.K, shift, h->g.width);
        const int sum = elec__chargemap_sum_of(
            &bd, fixed,
            h->tensor_cores && h->p.variant == ELEC_CHARGEMAP_TILE_BINNED, h->sharing, h->g.K,
            h->g.width);
        if (elec__chargemap_hist_bytes(bd.count) > (size_t)h->max_shared ||
            elec__chargemap_sum_bytes(&bd, groups, sum, h->g.width) > (size_t)h->max_shared)
            continue;
        const double rounds = ceil((double)bd.count / (4.0 * h->sm_count));
        double cost = rounds * (double)h->max_atoms / bd.count;
        for (int axis = 0; axis < 3; axis++)
            if (bd.n[axis] > 1) cost *= 1.0 + (h->g.width - 1.0) / (1 << shift[axis]);
        if (!found || cost < best) {
            h->bands = bd;
            h->bands.groups = groups;
            h->sum = sum;
            best = cost;
        }
        found = 1;
        if (h->p.tile[0] > 0) break;
    }
    return found;
}

/* Lets kernel take `bytes` of dynamic shared memory.  Without the
   attribute a launch may take 48 KB less the kernel's static arrays, so it
   is set wherever bytes come within ELEC__CHARGEMAP_STATIC_SHARED of 48
   KB; and set to the handle's whole limit, the same for every handle on a
   device, so that one handle never lowers what another's launches need. */
template <typename Kernel>
static cudaError_t elec__chargemap_allow_shared(Kernel *kernel, size_t bytes, int max_shared) {
    if (bytes + ELEC__CHARGEMAP_STATIC_SHARED <= 48 * 1024) return cudaSuccess;
    return cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, max_shared);
}

/* Stage 2's kernels with the handle's sum (h->sum): TILE_BINNED's, and
   the one-kernel rungs'. */
typedef void (*elec__chargemap_sum_kernel)(float *, const int2 *, const float4 *,
                                           elec__chargemap_geometry, elec__chargemap_bands,
                                           elec__msm_basis_args, int *);
typedef void (*elec__chargemap_fused_kernel)(float *, const float4 *, int,
                                             elec__chargemap_geometry, elec__chargemap_bands,
                                             elec__msm_basis_args, int2 *, float4 *, int *,
                                             double *);
template <int BASIS, int W>
static elec__chargemap_sum_kernel elec__chargemap_sum_kernel_of(int sum) {
    switch (sum) {
    case ELEC__CHARGEMAP_SUM_FIXED:
        return elec__k_chargemap_tile_sum<BASIS, W, ELEC__CHARGEMAP_SUM_FIXED>;
    case ELEC__CHARGEMAP_SUM_COLUMNS:
        return elec__k_chargemap_tile_sum<BASIS, W, ELEC__CHARGEMAP_SUM_COLUMNS>;
    case ELEC__CHARGEMAP_SUM_TENSOR:
        return elec__k_chargemap_tile_sum<BASIS, W, ELEC__CHARGEMAP_SUM_TENSOR>;
    case ELEC__CHARGEMAP_SUM_TENSOR_SHARING:
        return elec__k_chargemap_tile_sum<BASIS, W, ELEC__CHARGEMAP_SUM_TENSOR_SHARING>;
    default: return elec__k_chargemap_tile_sum<BASIS, W, ELEC__CHARGEMAP_SUM_REGISTERS>;
    }
}
template <int BASIS, int W>
static elec__chargemap_fused_kernel elec__chargemap_fused_kernel_of(int sum) {
    switch (sum) {
    case ELEC__CHARGEMAP_SUM_FIXED:
        return elec__k_chargemap_tile_fused<BASIS, W, ELEC__CHARGEMAP_SUM_FIXED>;
    case ELEC__CHARGEMAP_SUM_COLUMNS:
        return elec__k_chargemap_tile_fused<BASIS, W, ELEC__CHARGEMAP_SUM_COLUMNS>;
    default: return elec__k_chargemap_tile_fused<BASIS, W, ELEC__CHARGEMAP_SUM_REGISTERS>;
    }
}

/* Stage 1's room for a group's copies when the atoms are taken in
   `groups` chunks: one and a half times their mean plus 64 (the mean: a
   chunk of atoms times 1 + (W - 1) / L along each tiled axis, L the
   longest tile edge), where that fits beside the counters; 0 where it
   does not, so that L1 keeps the atoms its second pass reads again (the
   kernel stages a group only where its copies fit the room; a chunk's
   copies stay near the mean, an atom taking at most 2^3 of them).  The
   stage holds an atom index a copy (elec__chargemap_bin_group).  At 1M
   atoms on 216^3 (16^2 x 8 tiles) one and a half lets one group an SM
   stage (88 KB); when the stage held whole copies, 16 bytes each, it
   let two groups an SM stage, twice only four, and both stages took
   195 us at two against 224 at four (H200, --knobs, 2026-11-28). */
static int elec__chargemap_stage_room(const elec_cuda_chargemap_handle *h, int groups) {
    const size_t hist = elec__chargemap_hist_bytes(h->bands.count);
    const size_t most =
        ((size_t)h->max_shared > hist ? (size_t)h->max_shared - hist : 0) / sizeof(int);
    double mean = ceil((double)h->max_atoms / groups);
    for (int axis = 0; axis < 3; axis++)
        if (h->bands.n[axis] > 1) mean *= 1.0 + (h->g.width - 1.0) / h->bands.L[axis];
    return 1.5 * mean + 64.0 <= (double)most ? (int)(1.5 * mean + 64.0) : 0;
}

/* The fewest atoms at which TILE_BINNED's stage 2 prefetches a tile's
   copies into L1 (elec__chargemap_warp_runs): those whose copies (the
   atoms times the tiles' halo, 16 bytes each) and the grid outgrow L2, so
   that the copies come from DRAM; 0 where the grid alone does.  There the
   prefetch hid that latency: 1M atoms on 216^3 (about 31 + 40 MB by this
   estimate) took 93.67-93.90 us against 97.10-97.39 without it, and 3 %
   less with tiles of 16 x 8 x 8 and 8 x 8 x 8 as well.  Where they stay in
   L2 the prefetch's loop only lengthens a block's path: ApoA1-size (about
   3 + 4 MB) 2-3 % slower in one, two or four waves of tiles, DMPC-size up
   to 3 %.  So gated, 1M atoms' map 96.65-96.97 -> 93.65-93.83 us,
   ApoA1-size's and DMPC-size's within 1 % of before (H200, three rounds
   alternating a call; bench/RESULTS.md, 2026-12-02, 23:28 UTC on).  Sizes
   between the two were not measured.  Each prepare compares its own atoms
   with this count, so a handle sized for more atoms than a call maps
   prefetches only where that call's copies outgrow L2.  Not for the
   one-kernel rungs, whose stage 1 writes the copies in the same kernel,
   before a grid barrier, and whose column sum spilled with the
   prefetch's code (the fused B-spline kernels up to 136 bytes; ptxas).
   Since 2026-12-03 the tensor sum's warps gather most tiles' copies,
   loading each as its run is read; only the tiles left to the block's
   gather (past a window, or whose copies come from few groups) prefetch. */
/* An atom's copies on average: the tiles' halo, 1 + (W - 1) / L along
   each tiled axis. */
static double elec__chargemap_halo(const elec__chargemap_bands *bd, int width) {
    double halo = 1.0;
    for (int axis = 0; axis < 3; axis++)
        if (bd->n[axis] > 1) halo *= 1.0 + (width - 1.0) / (double)(1 << bd->shift[axis]);
    return halo;
}

static size_t elec__chargemap_prefetch_atoms(const elec__chargemap_bands *bd, const int K[3],
                                             int width, int l2_bytes) {
    const double copy_bytes = 16.0 * elec__chargemap_halo(bd, width); /* an atom's copies */
    double grid = 4.0;                                                 /* the grid's bytes */
    for (int axis = 0; axis < 3; axis++) grid *= (double)K[axis];
    if (grid >= (double)l2_bytes) return 0;
    return (size_t)floor(((double)l2_bytes - grid) / copy_bytes) + 1;
}

/* The most atoms at which TILE_BINNED's tensor sum tries its warps'
   gather (elec__chargemap_sum_tile_tensor): those whose copies (the atoms
   times the tiles' halo) come to at most a window a tile on average.
   Where the tiles pass the window, every block would try the warps'
   gather and then gather again: ApoA1-size on 56 x 56 x 40 (8^3 tiles,
   about 980 copies a tile) took 15.55 us for the map in `make bench`,
   against 14.91 before the warps' gather (H200, bench/RESULTS.md,
   2026-12-03).  ApoA1-size on 112 x 112 x 80 (365 copies a tile on
   average), DMPC-size on 64^3 (348) and 1M atoms on 216^3 (367; 394 a
   whole tile) gain from it; sizes between were not measured. */
static size_t elec__chargemap_gather_atoms(const elec__chargemap_bands *bd, int width,
                                           int window) {
    return (size_t)floor((double)window * bd->count / elec__chargemap_halo(bd, width));
}

/* The tile-binned rungs' kernels for the plan: TILE_BINNED's groups (one
   an SM, or the fewest of two and four an SM at which stage 1's room
   fits, where the caller left them to the handle), shared-memory limits,
   and TILE_FUSED's cooperative grid (as many blocks as can be resident, at
   most four an SM; 0 without cooperative launch: stage 1 and 2 as
   TILE_BINNED's kernels); groups no more than the grid. */
template <int BASIS, int W>
static elec_status elec__chargemap_configure_tiles_t(elec_cuda_chargemap_handle *h,
                                                     elec_error *err) {
    elec_status status = ELEC_OK;
    const elec__chargemap_sum_kernel sum = elec__chargemap_sum_kernel_of<BASIS, W>(h->sum);
    const elec__chargemap_fused_kernel fused = elec__chargemap_fused_kernel_of<BASIS, W>(h->sum);
    int cooperative = 0, per_sm = 0;
    const size_t hist = elec__chargemap_hist_bytes(h->bands.count);
    int l2_bytes = 0;
    ELEC__CUDA_TRY(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, h->device));
    if (h->p.variant == ELEC_CHARGEMAP_TILE_BINNED) /* the others keep SIZE_MAX */
        h->prefetch_atoms =
            elec__chargemap_prefetch_atoms(&h->bands, h->g.K, h->g.width, l2_bytes);
    if (elec__chargemap_is_tensor(h->sum))
        h->gather_atoms = elec__chargemap_gather_atoms(&h->bands, h->g.width,
                                                       elec__chargemap_tensor_window(h->sum));
    h->bin_stage_room = elec__chargemap_stage_room(h, h->bands.groups);
    for (int blocks = 2; blocks <= 4 && h->bin_stage_room == 0 && h->p.tile_groups <= 0 &&
                         h->p.variant == ELEC_CHARGEMAP_TILE_BINNED;
         blocks *= 2) {
        const int groups = blocks * h->sm_count;
        if (elec__chargemap_sum_bytes(&h->bands, groups, h->sum, h->g.width) >
            (size_t)h->max_shared)
            break;
        h->bin_stage_room = elec__chargemap_stage_room(h, groups);
        if (h->bin_stage_room > 0) h->bands.groups = groups;
    }
    h->bin_shared_bytes = hist + sizeof(int) * (size_t)h->bin_stage_room;
    h->sum_shared_bytes = elec__chargemap_sum_bytes(&h->bands, h->bands.groups, h->sum, h->g.width);
    h->fused_shared_bytes = hist > h->sum_shared_bytes ? hist : h->sum_shared_bytes;
    ELEC__CUDA_TRY(elec__chargemap_allow_shared(elec__k_chargemap_tile_bin, h->bin_shared_bytes,
                                                h->max_shared));
    ELEC__CUDA_TRY(elec__chargemap_allow_shared(sum, h->sum_shared_bytes, h->max_shared));
    ELEC__CUDA_TRY(elec__chargemap_allow_shared(fused, h->fused_shared_bytes, h->max_shared));
    ELEC__CUDA_TRY(cudaDeviceGetAttribute(&cooperative, cudaDevAttrCooperativeLaunch, h->device));
    h->fused_blocks = 0;
    if (h->p.variant != ELEC_CHARGEMAP_TILE_BINNED && cooperative) {
        ELEC__CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
            &per_sm, fused, ELEC__CHARGEMAP_TILE_THREADS, h->fused_shared_bytes));
        if (per_sm > 4) per_sm = 4;
        h->fused_blocks = per_sm * h->sm_count;
        if (h->fused_blocks > 0 && h->bands.groups > h->fused_blocks)
            h->bands.groups = h->fused_blocks;
    }
cleanup:
    return status;
}

static unsigned elec__chargemap_blocks(size_t threads) {
    return (unsigned)((threads + ELEC__CHARGEMAP_BLOCK - 1) / ELEC__CHARGEMAP_BLOCK);
}

/* Shared-memory limits of the templated kernels that use more than the
   default 48 KB. */
template <int BASIS, int W>
static elec_status elec__chargemap_configure_t(elec_cuda_chargemap_handle *h, elec_error *err) {
    elec_status status = ELEC_OK;
    if (h->p.variant == ELEC_CHARGEMAP_TILE_OWNER)
        ELEC__CUDA_TRY(elec__chargemap_allow_shared(elec__k_chargemap_tile_owner<BASIS, W>,
                                                    h->tile_shared_bytes, h->max_shared));
    if constexpr (W == 4) {
        if (h->p.variant == ELEC_CHARGEMAP_GC_SHARED)
            ELEC__CUDA_TRY(elec__chargemap_allow_shared(elec__k_chargemap_gc_shared<BASIS, W>,
                                                        h->gc_shared_bytes, h->max_shared));
    }
cleanup:
    return status;
}

/* Stage 1's block apart from stage 2's: 1024 threads where a group has
   at least 512 atoms, else 256.  With the groups one an SM (TILE_BINNED's
   default) a block's own warps are all that hide the binning's latency
   (Nsight Compute, 1M atoms: a warp issued once in 58 cycles, waiting on
   its global loads and shared-memory atomics); with a few hundred atoms
   a group, 1024 threads mostly idle.  H100, stage 1 alone, us, 256 /
   1024 threads (atoms a group): ApoA1-size 132 groups (699) 8.77-9.03 /
   8.02, 264 (349) 9.90-9.99 / 11.02, 528 (175) 11.52-11.56 / 16.05; 1M
   atoms 132 (7576) 116.3-123.1 / 106.3, 264 (3788) 138.3-139.7 / 122.8,
   528 (1894) 194.6-195.2 / 136.6 (bench/RESULTS.md, 2026-11-28, 03:20 UTC
   on).  Loading four atoms a thread before using any, or two blocks an
   SM at 32 registers, gained nothing at one group an SM (1M atoms: seven
   or eight a thread); where a group has at most four a thread,
   elec__chargemap_bin_group now keeps them in registers, which gains a
   little (ApoA1-size, 2026-12-02). */
#define ELEC__CHARGEMAP_BIN_WIDE_ATOMS 512
static unsigned elec__chargemap_bin_threads(const elec_cuda_chargemap_handle *h) {
    return h->bands.chunk >= ELEC__CHARGEMAP_BIN_WIDE_ATOMS ? ELEC__CHARGEMAP_BIN_THREADS_MOST
                                                            : ELEC__CHARGEMAP_TILE_THREADS;
}

/* Stage 1: the atoms into the rung's layout (bins, or the tile sort); the
   status words the rung counts in, zeroed where the rung does not clear
   them itself. */
template <int BASIS, int W>
static elec_status elec__chargemap_prepare_t(elec_cuda_chargemap_handle *h, const float4 *xyzq,
                                             int n, cudaStream_t stream, int pdl,
                                             elec_error *err) {
    elec_status status = ELEC_OK;
    const elec_chargemap_variant v = h->p.variant;
    const dim3 block(ELEC__CHARGEMAP_BLOCK), atoms(elec__chargemap_blocks((size_t)n));
    h->xyzq = xyzq;
    h->n = n;
    if (elec__chargemap_is_tiled(v)) {
        h->bands.chunk = elec__chargemap_chunk(n, h->bands.groups);
        h->bands.prefetch = (size_t)n >= h->prefetch_atoms;
        h->bands.gather = (size_t)n <= h->gather_atoms;
        /* stage 1 apart, unless TILE_FUSED's one kernel does it */
        if (v == ELEC_CHARGEMAP_TILE_BINNED || !h->fused_blocks)
            ELEC__CUDA_TRY(elec__launch(
                elec__k_chargemap_tile_bin, dim3(h->bands.groups),
                dim3(elec__chargemap_bin_threads(h)), h->bin_shared_bytes, stream, pdl, xyzq, n,
                h->g, h->bands, h->runs, h->copies, h->status, h->sums, h->bin_stage_room));
        goto cleanup;
    }
    if (elec__chargemap_is_sorted(v)) {
        const int halo = v == ELEC_CHARGEMAP_TILE_OWNER;
        /* the first kernel waits for everything before it in the stream (no
           PDL: the previous call's map may still read the sort's arrays) */
        if (halo) {
            ELEC__CUDA_TRY(elec__launch(
                elec__k_chargemap_tile_count<1>, atoms, block, 0, stream, 0, xyzq, n, h->g,
                h->tiles, h->records, h->tile_count, h->tile_start, h->tile_cursor, h->status,
                h->sums));
            ELEC__CUDA_TRY(elec__launch(
                elec__k_chargemap_tile_scatter<1>, atoms, block, 0, stream, pdl,
                (const float4 *)h->records, n, h->g, h->tiles, h->tile_cursor, h->copies));
        } else {
            ELEC__CUDA_TRY(elec__launch(
                elec__k_chargemap_tile_count<0>, atoms, block, 0, stream, 0, xyzq, n, h->g,
                h->tiles, h->records, h->tile_count, h->tile_start, h->tile_cursor, h->status,
                h->sums));
            ELEC__CUDA_TRY(elec__launch(
                elec__k_chargemap_tile_scatter<0>, atoms, block, 0, stream, pdl,
                (const float4 *)h->records, n, h->g, h->tiles, h->tile_cursor, h->copies));
        }
        goto cleanup;
    }
    /* pc-baseline and pc-lanes count in map, which zeroes their words */
    if (v == ELEC_CHARGEMAP_PC_BASELINE || v == ELEC_CHARGEMAP_PC_LANES) goto cleanup;
    ELEC__CUDA_TRY(cudaMemsetAsync(h->status, 0, 2 * sizeof(int), stream)); /* overflow, outside */
    switch (elec__chargemap_layout(v)) {
    case ELEC__CM_BIN_STRUCT:
        /* counters and ghosts: the whole array */
        ELEC__CUDA_TRY(cudaMemsetAsync(h->bins.bins, 0,
                                       (size_t)h->points * (h->bins.S + 1) * sizeof(float4),
                                       stream));
        ELEC__CUDA_TRY(elec__launch(elec__k_chargemap_place<ELEC__CM_BIN_STRUCT>, atoms,
                                              block, 0, stream, 0, xyzq, n, h->g, h->bins,
                                              h->status, h->sums));
        break;
    case ELEC__CM_SLOT_AOS:
        ELEC__CUDA_TRY(cudaMemsetAsync(h->bins.count, 0, (size_t)h->points * sizeof(int), stream));
        ELEC__CUDA_TRY(elec__launch(elec__k_chargemap_place<ELEC__CM_SLOT_AOS>, atoms,
                                              block, 0, stream, 0, xyzq, n, h->g, h->bins,
                                              h->status, h->sums));
        break;
    default:
        ELEC__CUDA_TRY(cudaMemsetAsync(h->bins.count, 0, (size_t)h->points * sizeof(int), stream));
        ELEC__CUDA_TRY(elec__launch(elec__k_chargemap_place<ELEC__CM_SLOT_SOA>, atoms,
                                              block, 0, stream, 0, xyzq, n, h->g, h->bins,
                                              h->status, h->sums));
        break;
    }
cleanup:
    return status;
}

#define ELEC__CHARGEMAP_MARK(index)                                          \
    do {                                                                     \
        if (marks) ELEC__CUDA_TRY(cudaEventRecord(marks[index], stream));    \
    } while (0)

/* Stage 2: the grid from the prepared layout: zeroing (atomic rungs, and
   the status words of those that count in map), the rung's kernel, the
   overflow (binned rungs).  Marks 2, 3, 4 after each, where given. */
template <int BASIS, int W>
static elec_status elec__chargemap_map_t(elec_cuda_chargemap_handle *h, float *grid,
                                         cudaStream_t stream, int pdl, cudaEvent_t *marks,
                                         elec_error *err) {
    elec_status status = ELEC_OK;
    const elec_chargemap_variant v = h->p.variant;
    const dim3 block(ELEC__CHARGEMAP_BLOCK), points(elec__chargemap_blocks((size_t)h->points));
    const int lanes = elec__spme_lanes<W>::value;
    const int zero = v == ELEC_CHARGEMAP_PC_BASELINE || v == ELEC_CHARGEMAP_PC_LANES ||
                     v == ELEC_CHARGEMAP_PC_BINNED ||
                     v == ELEC_CHARGEMAP_PC_REDUCED_READS || v == ELEC_CHARGEMAP_PC_COALESCED ||
                     v == ELEC_CHARGEMAP_PC_SORTED_LANES;
    if (zero)
        ELEC__CUDA_TRY(cudaMemsetAsync(grid, 0, (size_t)h->points * sizeof(float), stream));
    /* the rungs that count outside atoms here count each map's alone (a
       second map of one prepare reports the same count, not twice it) */
    if (v == ELEC_CHARGEMAP_PC_BASELINE || v == ELEC_CHARGEMAP_PC_LANES)
        ELEC__CUDA_TRY(cudaMemsetAsync(h->status, 0, 2 * sizeof(int), stream));
    ELEC__CHARGEMAP_MARK(2);
    switch (v) {
    case ELEC_CHARGEMAP_PC_BASELINE:
        ELEC__CUDA_TRY(elec__launch(
            elec__k_chargemap_pc_baseline<BASIS, W>, dim3(elec__chargemap_blocks((size_t)h->n)),
            block, 0, stream, 0, grid, h->xyzq, h->n, h->g, h->basis, h->status, h->sums));
        break;
    case ELEC_CHARGEMAP_TILE_OWNER:
        ELEC__CUDA_TRY(elec__launch(
            elec__k_chargemap_tile_owner<BASIS, W>, dim3(h->tiles.count), block,
            h->tile_shared_bytes, stream, pdl, grid, (const float4 *)h->copies,
            (const int *)h->tile_start, h->g, h->tiles, h->basis));
        break;
    case ELEC_CHARGEMAP_PC_LANES:
        ELEC__CUDA_TRY(elec__launch(
            elec__k_chargemap_pc_lanes<BASIS, W>,
            dim3(elec__chargemap_blocks((size_t)h->n * lanes)), block, 0, stream, 0, grid, h->xyzq,
            h->n, h->g, h->basis, h->status, h->sums));
        break;
    case ELEC_CHARGEMAP_PC_SORTED_LANES:
        ELEC__CUDA_TRY(elec__launch(
            elec__k_chargemap_lanes<BASIS, W, 0>,
            dim3(elec__chargemap_blocks((size_t)h->n * lanes)), block, 0, stream, 0, grid,
            (long long *)NULL, (const float4 *)h->copies, (const int *)h->tile_start,
            h->tiles.count, h->g, h->basis));
        break;
    case ELEC_CHARGEMAP_TILE_BINNED:
    case ELEC_CHARGEMAP_TILE_FUSED:
    case ELEC_CHARGEMAP_TILE_FUSED_FIXED: {
        if (v != ELEC_CHARGEMAP_TILE_BINNED && h->fused_blocks) {
            ELEC__CUDA_TRY(elec__launch(
                elec__chargemap_fused_kernel_of<BASIS, W>(h->sum), dim3(h->fused_blocks),
                dim3(ELEC__CHARGEMAP_TILE_THREADS), h->fused_shared_bytes, stream,
                ELEC__LAUNCH_COOPERATIVE, grid, h->xyzq, h->n, h->g, h->bands, h->basis, h->runs,
                h->copies, h->status, h->sums));
        } else {
            ELEC__CUDA_TRY(elec__launch(
                elec__chargemap_sum_kernel_of<BASIS, W>(h->sum), dim3(h->bands.count),
                dim3(ELEC__CHARGEMAP_TILE_THREADS), h->sum_shared_bytes, stream, pdl, grid,
                (const int2 *)h->runs, (const float4 *)h->copies, h->g, h->bands, h->basis,
                h->status));
        }
        break;
    }
    case ELEC_CHARGEMAP_PC_FIXED_POINT:
        ELEC__CUDA_TRY(elec__launch(
            elec__k_chargemap_lanes<BASIS, W, 1>,
            dim3(elec__chargemap_blocks((size_t)h->n * lanes)), block, 0, stream, pdl,
            (float *)NULL, h->fixed, (const float4 *)h->copies, (const int *)h->tile_start,
            h->tiles.count, h->g, h->basis));
        ELEC__CUDA_TRY(elec__launch(elec__k_chargemap_fixed_convert, points, block, 0,
                                              stream, pdl, grid, h->fixed, h->points));
        break;
    default:
        if constexpr (W == 4) {
            const int S = h->bins.S;
            const float4 *bins = h->bins.bins, *rec = h->bins.rec;
            const int *counts = h->bins.count;
            switch (v) {
            case ELEC_CHARGEMAP_PC_BINNED:
                ELEC__CUDA_TRY(elec__launch(elec__k_chargemap_pc_binned<BASIS, W>,
                                                      points, block, 0, stream, 0, grid, bins, S,
                                                      h->g, h->basis));
                break;
            case ELEC_CHARGEMAP_PC_REDUCED_READS:
                ELEC__CUDA_TRY(elec__launch(elec__k_chargemap_pc_reduced<BASIS, W>,
                                                      points, block, 0, stream, 0, grid, counts,
                                                      rec, S, h->g, h->basis));
                break;
            case ELEC_CHARGEMAP_PC_COALESCED:
                ELEC__CUDA_TRY(elec__launch(
                    elec__k_chargemap_pc_coalesced<BASIS, W>, points, block, 0, stream, 0, grid,
                    counts, (const float *)h->bins.soa, S, h->g, h->basis));
                break;
            case ELEC_CHARGEMAP_GC_BASELINE:
                ELEC__CUDA_TRY(elec__launch(
                    elec__k_chargemap_gc<BASIS, W, 1, ELEC__CM_BIN_STRUCT>, points, block, 0,
                    stream, 0, grid, bins, counts, rec, S, h->g, h->basis));
                break;
            case ELEC_CHARGEMAP_GC_COMPUTE_EFFICIENT:
                ELEC__CUDA_TRY(elec__launch(
                    elec__k_chargemap_gc<BASIS, W, 0, ELEC__CM_BIN_STRUCT>, points, block, 0,
                    stream, 0, grid, bins, counts, rec, S, h->g, h->basis));
                break;
            case ELEC_CHARGEMAP_GC_SHARED: {
                const dim3 b3(h->gc_block[0], h->gc_block[1], h->gc_block[2]);
                const dim3 g3((h->g.K[0] + b3.x - 1) / b3.x, (h->g.K[1] + b3.y - 1) / b3.y,
                              (h->g.K[2] + b3.z - 1) / b3.z);
                ELEC__CUDA_TRY(elec__launch(elec__k_chargemap_gc_shared<BASIS, W>, g3,
                                                      b3, h->gc_shared_bytes, stream, 0, grid,
                                                      bins, S, h->g, h->basis));
                break;
            }
            default: /* GC_REDUCED_READS */
                ELEC__CUDA_TRY(elec__launch(
                    elec__k_chargemap_gc<BASIS, W, 0, ELEC__CM_SLOT_AOS>, points, block, 0,
                    stream, 0, grid, bins, counts, rec, S, h->g, h->basis));
                break;
            }
            ELEC__CHARGEMAP_MARK(3);
            ELEC__CUDA_TRY(elec__launch(elec__k_chargemap_overflow<BASIS, W>,
                                                  dim3(2 * h->sm_count), block, 0, stream, 0,
                                                  grid, (const float4 *)h->bins.overflow,
                                                  (const int *)h->status, h->g, h->basis));
            ELEC__CHARGEMAP_MARK(4);
            goto cleanup;
        } else {
            /* create refuses it; a handle never gets here */
            status = elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                                "%s is written for order 4", elec_chargemap_variant_name(v));
            goto cleanup;
        }
    }
    ELEC__CHARGEMAP_MARK(3);
    ELEC__CHARGEMAP_MARK(4);
cleanup:
    return status;
}

/* A call of a templated stage for the plan's basis and order. */
#define ELEC__CHARGEMAP_DISPATCH(h, CALL)                                      \
    do {                                                                       \
        if ((h)->p.basis == ELEC_CHARGEMAP_SKEEL) {                            \
            switch ((h)->p.order) {                                            \
            case 4: status = CALL(ELEC_CHARGEMAP_SKEEL, 4); break;             \
            case 6: status = CALL(ELEC_CHARGEMAP_SKEEL, 6); break;             \
            case 8: status = CALL(ELEC_CHARGEMAP_SKEEL, 8); break;             \
            default: status = CALL(ELEC_CHARGEMAP_SKEEL, 10); break;           \
            }                                                                  \
        } else {                                                               \
            switch ((h)->p.order) {                                            \
            case 4: status = CALL(ELEC_CHARGEMAP_BSPLINE, 4); break;           \
            case 5: status = CALL(ELEC_CHARGEMAP_BSPLINE, 5); break;           \
            case 6: status = CALL(ELEC_CHARGEMAP_BSPLINE, 6); break;           \
            case 7: status = CALL(ELEC_CHARGEMAP_BSPLINE, 7); break;           \
            default: status = CALL(ELEC_CHARGEMAP_BSPLINE, 8); break;          \
            }                                                                  \
        }                                                                      \
    } while (0)

extern "C" {

/* The two stages apart (the bench times the map alone). */
static elec_status elec__chargemap_prepare(elec_cuda_chargemap_handle *h, const float4 *xyzq,
                                           int n, cudaStream_t stream, elec_error *err) {
    elec_status status = ELEC_OK;
#define ELEC__CHARGEMAP_PREPARE_CALL(B, W)                                     \
    elec__chargemap_prepare_t<B, W>(h, xyzq, n, stream, h->use_pdl, err)
    ELEC__CHARGEMAP_DISPATCH(h, ELEC__CHARGEMAP_PREPARE_CALL);
#undef ELEC__CHARGEMAP_PREPARE_CALL
    return status;
}

static elec_status elec__chargemap_map(elec_cuda_chargemap_handle *h, float *grid,
                                       cudaStream_t stream, cudaEvent_t *marks,
                                       elec_error *err) {
    elec_status status = ELEC_OK;
    const int pdl = marks ? 0 : h->use_pdl; /* timed stages: plain order */
#define ELEC__CHARGEMAP_MAP_CALL(B, W) elec__chargemap_map_t<B, W>(h, grid, stream, pdl, marks, err)
    ELEC__CHARGEMAP_DISPATCH(h, ELEC__CHARGEMAP_MAP_CALL);
#undef ELEC__CHARGEMAP_MAP_CALL
    return status;
}

/* One mapping, enqueued on `stream`: marks (5 events, or NULL) are
   recorded at the start and after the binning, the zeroing, the map and
   the overflow. */
static elec_status elec__chargemap_enqueue(elec_cuda_chargemap_handle *h, const float4 *xyzq,
                                           int n, float *grid, cudaStream_t stream,
                                           cudaEvent_t *marks, elec_error *err) {
    elec_status status = ELEC_OK;
    ELEC__CHARGEMAP_MARK(0);
    if (n == 0) {
        /* nothing to sort: a zero grid, and no atom left out */
        ELEC__CUDA_TRY(cudaMemsetAsync(h->status, 0, ELEC__CM_STATUS * sizeof(int), stream));
        ELEC__CHARGEMAP_MARK(1);
        ELEC__CUDA_TRY(cudaMemsetAsync(grid, 0, (size_t)h->points * sizeof(float), stream));
        for (int m = 2; m < 5; m++) ELEC__CHARGEMAP_MARK(m);
        goto cleanup;
    }
    if (marks) {
        /* the sort's kernels in plain order too */
        const int pdl = h->use_pdl;
        h->use_pdl = 0;
        status = elec__chargemap_prepare(h, xyzq, n, stream, err);
        h->use_pdl = pdl;
    } else {
        status = elec__chargemap_prepare(h, xyzq, n, stream, err);
    }
    if (status != ELEC_OK) goto cleanup;
    ELEC__CHARGEMAP_MARK(1);
    status = elec__chargemap_map(h, grid, stream, marks, err);
cleanup:
    return status;
}

ELEC_DEF elec_status elec_cuda_chargemap_sums(elec_cuda_chargemap_handle *h, double *d_sums,
                                              elec_error *err) {
    if (!h) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "handle is NULL");
    h->sums = d_sums;
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_cuda_chargemap_describe(const elec_cuda_chargemap_handle *h,
                                                  elec_cuda_chargemap_info *out,
                                                  elec_error *err) {
    if (!h || !out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "handle or out is NULL");
    memset(out, 0, sizeof *out);
    out->variant = h->p.variant;
    if (elec__chargemap_is_binned(h->p.variant)) out->bin_slots = h->bins.S;
    if (elec__chargemap_is_sorted(h->p.variant)) {
        for (int axis = 0; axis < 3; axis++) out->sorted_tile[axis] = h->tiles.T[axis];
        out->sorted_tiles = h->tiles.count;
    }
    if (elec__chargemap_is_tiled(h->p.variant)) {
        for (int axis = 0; axis < 3; axis++) {
            out->band_tile[axis] = 1 << h->bands.shift[axis];
            out->band_tiles_along[axis] = h->bands.n[axis];
        }
        out->band_tiles = h->bands.count;
        out->band_groups = h->bands.groups;
        out->band_columns = h->sum == ELEC__CHARGEMAP_SUM_COLUMNS;
        out->band_tensor = elec__chargemap_is_tensor(h->sum);
        out->one_kernel = h->p.variant != ELEC_CHARGEMAP_TILE_BINNED && h->fused_blocks > 0;
        out->band_staged = h->bin_stage_room > 0 && !out->one_kernel;
        out->band_prefetch = h->bands.prefetch && out->band_tensor;
    }
    out->pdl = h->use_pdl;
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF void elec_cuda_chargemap_destroy(elec_cuda_chargemap_handle *h) {
    int caller_device = 0;
    if (!h) return;
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    cudaSetDevice(h->device);
    elec__cuda_free_sync(h->status);
    elec__cuda_free_sync(h->bins.bins);
    elec__cuda_free_sync(h->bins.count);
    elec__cuda_free_sync(h->bins.rec);
    elec__cuda_free_sync(h->bins.soa);
    elec__cuda_free_sync(h->bins.overflow);
    elec__cuda_free_sync(h->records);
    elec__cuda_free_sync(h->copies);
    elec__cuda_free_sync(h->tile_count);
    elec__cuda_free_sync(h->tile_start);
    elec__cuda_free_sync(h->tile_cursor);
    elec__cuda_free_sync(h->fixed);
    elec__cuda_free_sync(h->runs);
    (void)cudaGetLastError();
    cudaSetDevice(caller_device);
    ELEC_FREE(h);
}

/* The kernels' geometry of a lattice (elec__chargemap_geometry). */
static elec__chargemap_geometry elec__chargemap_geometry_of(const elec_lattice *l,
                                                            const elec_chargemap_params *p) {
    elec__chargemap_geometry g;
    memset(&g, 0, sizeof g);
    for (int axis = 0; axis < 3; axis++) {
        g.K[axis] = l->dims[axis];
        g.inv_spacing[axis] = (float)(1.0 / l->spacing[axis]);
        g.base[axis] = (float)(-l->origin[axis] / l->spacing[axis]);
        g.inv_period[axis] = (float)(1.0 / (l->dims[axis] * l->spacing[axis]));
        g.origin[axis] = (float)l->origin[axis];
    }
    g.periodic = p->periodic;
    g.width = p->order;
    g.offset = p->basis == ELEC_CHARGEMAP_SKEEL ? -(p->order / 2 - 1) : -(p->order - 1);
    return g;
}

/* The handle of params' rung (elec_cuda_chargemap_create chooses it). */
static elec_status elec__chargemap_create_as(const elec_lattice *lattice, size_t max_atoms,
                                             const elec_chargemap_params *params, int device,
                                             int sharing, elec_cuda_chargemap_handle **out,
                                             elec_error *err) {
    elec_status status = ELEC_OK;
    elec_cuda_chargemap_handle *h = NULL;
    elec_chargemap_params resolved;
    int caller_device = 0, devices;
    size_t M;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    *out = NULL;
    if (max_atoms == 0)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "max_atoms is 0: the handle needs room for an atom");
    /* 8 halo copies an atom at most, indexed by int */
    if (max_atoms > ((size_t)1 << 27))
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "max_atoms %zu: the GPU charge map takes at most %zu atoms", max_atoms,
                          (size_t)1 << 27);
    if ((status = elec_chargemap_params_resolve(params, lattice, max_atoms, &resolved, err)) !=
        ELEC_OK)
        return status;
    if (elec__chargemap_is_binned(resolved.variant) && resolved.order != 4)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "%s is the seed's rung, written for order 4 (its cubic): order %d "
                          "runs on pc-baseline and on the rungs beyond the seed",
                          elec_chargemap_variant_name(resolved.variant), resolved.order);
    devices = elec_cuda_device_count();
    if (devices == 0)
        return elec__fail(err, ELEC_ERR_NO_DEVICE, 0, "no CUDA device is present (or no driver)");
    if (device < -1 || device >= devices)
        return elec__fail(err, ELEC_ERR_NO_DEVICE, 0, "GPU %d asked for; %d present", device,
                          devices);
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    h = (elec_cuda_chargemap_handle *)ELEC_MALLOC(sizeof *h);
    if (!h) return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory");
    memset(h, 0, sizeof *h);
    h->prefetch_atoms = SIZE_MAX; /* never; TILE_BINNED's set by its plan */
    h->gather_atoms = 0;          /* never; the tensor sums' set by their plan */
    h->device = device == -1 ? caller_device : device;
    h->p = resolved;
    h->lattice = *lattice;
    h->max_atoms = max_atoms;
    h->points = (int)elec_lattice_size(lattice);
    h->g = elec__chargemap_geometry_of(lattice, &resolved);
    if (resolved.basis == ELEC_CHARGEMAP_SKEEL)
        h->basis = elec__msm_basis_of((resolved.order - 4) / 2);
    else
        memset(&h->basis, 0, sizeof h->basis);
    h->use_pdl = ELEC__CHARGEMAP_PDL && !resolved.no_pdl;
    h->sharing = sharing;
    M = (size_t)h->points;

    ELEC__CUDA_TRY(cudaSetDevice(h->device));
    ELEC__CUDA_TRY(cudaDeviceGetAttribute(&h->sm_count, cudaDevAttrMultiProcessorCount,
                                          h->device));
    ELEC__CUDA_TRY(cudaDeviceGetAttribute(&h->max_shared, cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                          h->device));
    /* the limit holds static and dynamic shared memory together: the
       dynamic sizes below are checked against what the kernels' own
       declarations leave (1,296 bytes at most, ptxas -v on sm_90) */
    h->max_shared -= ELEC__CHARGEMAP_STATIC_SHARED;
    {
        /* griddepcontrol is sm_90's, and the kernels' code must have it:
           code compiled for an older virtual architecture has none
           (__CUDA_ARCH__ < 900 in elec__wait_prior_grid), even where
           the driver compiles its PTX for sm_90, as it does for a build
           for sm_80 alone (binaryVersion 90, ptxVersion 80).  Code of
           ptxVersion 90 or later runs only on sm_90 or later, so this one
           check also covers the device. */
        cudaFuncAttributes code;
        ELEC__CUDA_TRY(cudaFuncGetAttributes(&code, elec__k_chargemap_tile_bin));
        if (code.ptxVersion < 90) h->use_pdl = 0;
        /* mma's TF32 shapes are sm_80's: code of ptxVersion 80 or later
           has them (elec__mma_tf32) and runs only on sm_80 or later */
        h->tensor_cores = code.ptxVersion >= 80;
    }
    ELEC__CUDA_TRY(elec__cuda_alloc((void **)&h->status, ELEC__CM_STATUS * sizeof(int)));
    ELEC__CUDA_TRY(cudaMemset(h->status, 0, ELEC__CM_STATUS * sizeof(int)));
    if (elec__chargemap_is_binned(resolved.variant)) {
        const int S = resolved.bin_capacity;
        h->bins.S = S;
        h->bins.M = h->points;
        ELEC__CUDA_TRY(elec__cuda_alloc((void **)&h->bins.overflow, max_atoms * sizeof(float4)));
        switch (elec__chargemap_layout(resolved.variant)) {
        case ELEC__CM_BIN_STRUCT:
            ELEC__CUDA_TRY(elec__cuda_alloc((void **)&h->bins.bins, M * (S + 1) * sizeof(float4)));
            break;
        case ELEC__CM_SLOT_AOS:
            ELEC__CUDA_TRY(elec__cuda_alloc((void **)&h->bins.count, M * sizeof(int)));
            ELEC__CUDA_TRY(elec__cuda_alloc((void **)&h->bins.rec, M * S * sizeof(float4)));
            break;
        default:
            ELEC__CUDA_TRY(elec__cuda_alloc((void **)&h->bins.count, M * sizeof(int)));
            ELEC__CUDA_TRY(elec__cuda_alloc((void **)&h->bins.soa, 4 * M * S * sizeof(float)));
            break;
        }
        if (resolved.variant == ELEC_CHARGEMAP_GC_SHARED) {
            /* 8 x 4 x 4 points a block, halved (z, y, x) until the bins that
               reach them fit in shared memory */
            static const int shapes[5][3] = {{8, 4, 4}, {8, 4, 2}, {8, 2, 2}, {4, 2, 2},
                                             {2, 2, 2}};
            int k;
            for (k = 0; k < 5; k++) {
                h->gc_shared_bytes = (size_t)(shapes[k][0] + 3) * (shapes[k][1] + 3) *
                                     (shapes[k][2] + 3) * (S + 1) * sizeof(float4);
                if (h->gc_shared_bytes <= (size_t)h->max_shared) break;
            }
            if (k == 5) {
                status = elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                                    "gc-shared: %d slots a bin do not fit in shared memory",
                                    S);
                goto cleanup;
            }
            for (int axis = 0; axis < 3; axis++) h->gc_block[axis] = shapes[k][axis];
            /* its grid of blocks has CUDA's limit of 65535 along y and z */
            if ((h->g.K[1] + h->gc_block[1] - 1) / h->gc_block[1] > 65535 ||
                (h->g.K[2] + h->gc_block[2] - 1) / h->gc_block[2] > 65535) {
                status = elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                                    "gc-shared: %d x %d x %d points take more than CUDA's "
                                    "65535 blocks along y or z (%d x %d x %d points a "
                                    "block): use another rung", h->g.K[0], h->g.K[1],
                                    h->g.K[2], h->gc_block[0], h->gc_block[1],
                                    h->gc_block[2]);
                goto cleanup;
            }
        }
    }
    if (elec__chargemap_is_tiled(resolved.variant) && !elec__chargemap_plan_bands(h)) {
        status = elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                            "%s: no tiling of %d x %d x %d points fits in shared memory "
                            "(%d bytes): give larger tiles, or use pc-lanes",
                            elec_chargemap_variant_name(resolved.variant), h->g.K[0], h->g.K[1],
                            h->g.K[2], h->max_shared);
        goto cleanup;
    }
    if (elec__chargemap_is_tiled(resolved.variant)) {
#define ELEC__CHARGEMAP_TILES_CALL(B, W) elec__chargemap_configure_tiles_t<B, W>(h, err)
        ELEC__CHARGEMAP_DISPATCH(h, ELEC__CHARGEMAP_TILES_CALL);
#undef ELEC__CHARGEMAP_TILES_CALL
        if (status != ELEC_OK) goto cleanup;
        /* a group's run holds 8 copies for each of its ceil(n / groups) atoms */
        ELEC__CUDA_TRY(elec__cuda_alloc((void **)&h->runs, (size_t)h->bands.count *
                                                         h->bands.groups * sizeof(int2)));
        ELEC__CUDA_TRY(elec__cuda_alloc((void **)&h->copies,
                                  8 * (max_atoms + h->bands.groups) * sizeof(float4)));
    }
    if (elec__chargemap_is_sorted(resolved.variant)) {
        const int halo = resolved.variant == ELEC_CHARGEMAP_TILE_OWNER;
        h->tiles = elec__chargemap_choose_tiles(h);
        h->tile_shared_bytes = (size_t)h->tiles.L[0] * h->tiles.L[1] * h->tiles.L[2] * sizeof(float);
        if (halo && h->tile_shared_bytes > (size_t)h->max_shared) {
            status = elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                                "tile-owner: a tile of up to %d x %d x %d points needs %zu "
                                "bytes of shared memory, over the device's %d: smaller tiles",
                                h->tiles.L[0], h->tiles.L[1], h->tiles.L[2],
                                h->tile_shared_bytes, h->max_shared);
            goto cleanup;
        }
        ELEC__CUDA_TRY(elec__cuda_alloc((void **)&h->records, max_atoms * sizeof(float4)));
        ELEC__CUDA_TRY(elec__cuda_alloc((void **)&h->copies, (halo ? 8 : 1) * max_atoms * sizeof(float4)));
        ELEC__CUDA_TRY(elec__cuda_alloc((void **)&h->tile_count, (size_t)h->tiles.count * sizeof(int)));
        ELEC__CUDA_TRY(cudaMemset(h->tile_count, 0, (size_t)h->tiles.count * sizeof(int)));
        ELEC__CUDA_TRY(elec__cuda_alloc((void **)&h->tile_start,
                                  ((size_t)h->tiles.count + 1) * sizeof(int)));
        ELEC__CUDA_TRY(cudaMemset(h->tile_start, 0, ((size_t)h->tiles.count + 1) * sizeof(int)));
        ELEC__CUDA_TRY(elec__cuda_alloc((void **)&h->tile_cursor, (size_t)h->tiles.count * sizeof(int)));
    }
    if (resolved.variant == ELEC_CHARGEMAP_PC_FIXED_POINT) {
        ELEC__CUDA_TRY(elec__cuda_alloc((void **)&h->fixed, M * sizeof(long long)));
        ELEC__CUDA_TRY(cudaMemset(h->fixed, 0, M * sizeof(long long)));
    }
#define ELEC__CHARGEMAP_CONFIGURE_CALL(B, W) elec__chargemap_configure_t<B, W>(h, err)
    ELEC__CHARGEMAP_DISPATCH(h, ELEC__CHARGEMAP_CONFIGURE_CALL);
#undef ELEC__CHARGEMAP_CONFIGURE_CALL
    if (status != ELEC_OK) goto cleanup;
    ELEC__CUDA_TRY(elec__cuda_setup_landed());
    *out = h;
    h = NULL;
    elec__ok(err);
cleanup:
    if (h) {
        cudaSetDevice(caller_device);
        elec_cuda_chargemap_destroy(h);
    }
    cudaSetDevice(caller_device);
    return status;
}

/* The default rung (ELEC_CHARGEMAP_FASTEST) is the one the rule names
   (elec_chargemap_params_resolve) where it fits, and else pc-lanes: where
   the rule's tiled rung is refused (ELEC_ERR_UNSUPPORTED: no tiling fits
   shared memory) or its buffers (mostly its copies, eight an atom) cannot
   be allocated (pc-lanes keeps none).  A rung asked for by name is never
   swapped.  sharing: the handle's kernels will run beside others' (SPME's
   spread beside its real space), and tile-binned's tensor sum then takes
   windows of 288 copies, not 444 (ELEC__CHARGEMAP_TENSOR_WINDOW_SHARING
   says why). */
static elec_status elec__chargemap_create(const elec_lattice *lattice, size_t max_atoms,
                                          const elec_chargemap_params *params, int device,
                                          int sharing, elec_cuda_chargemap_handle **out,
                                          elec_error *err) {
    elec_chargemap_params lanes, rule;
    elec_status status =
        elec__chargemap_create_as(lattice, max_atoms, params, device, sharing, out, err);
    const int by_default = !params || params->variant == ELEC_CHARGEMAP_FASTEST;
    if ((status != ELEC_ERR_NO_MEMORY && status != ELEC_ERR_UNSUPPORTED) || !by_default ||
        elec_chargemap_params_resolve(params, lattice, max_atoms, &rule, NULL) != ELEC_OK ||
        !elec__chargemap_is_tiled(rule.variant))
        return status;
    if (params) lanes = *params;
    else memset(&lanes, 0, sizeof lanes);
    lanes.variant = ELEC_CHARGEMAP_PC_LANES;
    return elec__chargemap_create_as(lattice, max_atoms, &lanes, device, sharing, out, err);
}

ELEC_DEF elec_status elec_cuda_chargemap_create(const elec_lattice *lattice, size_t max_atoms,
                                                const elec_chargemap_params *params, int device,
                                                elec_cuda_chargemap_handle **out,
                                                elec_error *err) {
    return elec__chargemap_create(lattice, max_atoms, params, device, 0, out, err);
}

/* The refusals of a compute's or a prepare's atoms. */
static elec_status elec__chargemap_atoms_check(const elec_cuda_chargemap_handle *h,
                                               const float4 *d_xyzq, size_t n,
                                               elec_error *err) {
    if (!h) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "handle is NULL");
    if (n > h->max_atoms)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "%zu atoms: the handle was created for at most %zu", n, h->max_atoms);
    if (n > 0 && !d_xyzq) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "d_xyzq is NULL");
    return ELEC_OK;
}

ELEC_DEF elec_status elec_cuda_chargemap_compute(elec_cuda_chargemap_handle *h,
                                                 const float4 *d_xyzq, size_t n, float *d_grid,
                                                 cudaStream_t stream, elec_error *err) {
    elec_status status = elec__chargemap_atoms_check(h, d_xyzq, n, err);
    int caller_device = 0;
    if (status != ELEC_OK) return status;
    if (!d_grid) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "d_grid is NULL");
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    ELEC__CUDA_TRY(cudaSetDevice(h->device));
    status = elec__chargemap_enqueue(h, d_xyzq, (int)n, d_grid, stream, NULL, err);
    if (status == ELEC_OK) elec__ok(err);
cleanup:
    cudaSetDevice(caller_device);
    return status;
}

ELEC_DEF elec_status elec_cuda_chargemap_prepare(elec_cuda_chargemap_handle *h,
                                                 const float4 *d_xyzq, size_t n,
                                                 cudaStream_t stream, elec_error *err) {
    elec_status status = elec__chargemap_atoms_check(h, d_xyzq, n, err);
    int caller_device = 0;
    if (status != ELEC_OK) return status;
    if (n == 0)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "prepare takes at least one atom (compute maps none to a zero grid)");
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    ELEC__CUDA_TRY(cudaSetDevice(h->device));
    status = elec__chargemap_prepare(h, d_xyzq, (int)n, stream, err);
    if (status == ELEC_OK) elec__ok(err);
cleanup:
    cudaSetDevice(caller_device);
    return status;
}

ELEC_DEF elec_status elec_cuda_chargemap_map(elec_cuda_chargemap_handle *h, float *d_grid,
                                             cudaStream_t stream, elec_error *err) {
    elec_status status = ELEC_OK;
    int caller_device = 0;
    if (!h || !d_grid) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "handle or d_grid is NULL");
    if (h->n == 0)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "map before any prepare");
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    ELEC__CUDA_TRY(cudaSetDevice(h->device));
    status = elec__chargemap_map(h, d_grid, stream, NULL, err);
    if (status == ELEC_OK) elec__ok(err);
cleanup:
    cudaSetDevice(caller_device);
    return status;
}

ELEC_DEF elec_status elec_cuda_chargemap_finish(elec_cuda_chargemap_handle *h,
                                                size_t *overflow_atoms, cudaStream_t stream,
                                                elec_error *err) {
    elec_status status = ELEC_OK;
    int caller_device = 0, words[ELEC__CM_STATUS], outside;
    if (!h) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "handle is NULL");
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    ELEC__CUDA_TRY(cudaSetDevice(h->device));
    ELEC__CUDA_TRY(cudaMemcpyAsync(words, h->status, sizeof words, cudaMemcpyDeviceToHost, stream));
    ELEC__CUDA_TRY(cudaStreamSynchronize(stream));
    outside = elec__chargemap_is_sorted(h->p.variant) || elec__chargemap_is_tiled(h->p.variant)
                  ? words[ELEC__CM_OUTSIDE_SEEN]
                  : words[ELEC__CM_OUTSIDE];
    if (overflow_atoms)
        *overflow_atoms = elec__chargemap_is_binned(h->p.variant) ? (size_t)words[ELEC__CM_OVERFLOW]
                                                                  : 0;
    if (outside > 0) {
        status = elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                            "%d atom(s) of the last compute lie where their %d-point stencils "
                            "leave the lattice: they were left out (pad the lattice)",
                            outside, h->p.order);
        goto cleanup;
    }
    elec__ok(err);
cleanup:
    cudaSetDevice(caller_device);
    return status;
}

ELEC_DEF elec_status elec_cuda_chargemap(const elec_atoms *atoms, const elec_lattice *lattice,
                                         const elec_chargemap_params *params, float *grid,
                                         elec_error *err) {
    return elec_cuda_chargemap_timed(atoms, lattice, params, grid, NULL, NULL, err);
}

ELEC_DEF elec_status elec_cuda_chargemap_timed(const elec_atoms *atoms,
                                               const elec_lattice *lattice,
                                               const elec_chargemap_params *params,
                                               float *grid, elec_stage_times *times,
                                               size_t *overflow_atoms, elec_error *err) {
    static const char axis_name[3] = {'x', 'y', 'z'};
    static const char *const stage_names[4] = {"bin", "zero", "map", "overflow"};
    elec_status status;
    elec_chargemap_params p;
    elec_cuda_chargemap_handle *h = NULL;
    float4 *host = NULL, *d_xyzq = NULL;
    float *d_grid = NULL;
    cudaStream_t stream = NULL;
    cudaEvent_t marks[5];
    int marks_made = 0, caller_device = 0;
    double abs_charge = 0.0, max_charge = 0.0;
    size_t n, overflow = 0;
    if (times) memset(times, 0, sizeof *times);
    if (overflow_atoms) *overflow_atoms = 0;
    if ((status = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return status;
    if (!grid) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "grid is NULL");
    if ((status = elec_chargemap_params_resolve(params, lattice, atoms->count, &p, err)) !=
        ELEC_OK)
        return status;
    n = atoms->count;
    if (n > ((size_t)1 << 27))
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "%zu atoms: the GPU charge map takes at most %zu", n, (size_t)1 << 27);
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    host = (float4 *)ELEC_MALLOC((n + 1) * sizeof *host);
    if (!host) return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory for %zu atoms", n);
    /* Grid units in double (x - origin) / h, periodic ones wrapped into
       [0, K), then rounded once to float; a map's atoms checked with the
       float the device will see. */
    for (size_t i = 0; i < n; i++) {
        double x[3], q;
        float u[3];
        elec_atoms_get(atoms, i, x, &q, NULL);
        for (int axis = 0; axis < 3; axis++) {
            double d = x[axis] - lattice->origin[axis];
            const double period = lattice->dims[axis] * lattice->spacing[axis];
            if (p.periodic && !elec__wrap(&d, period)) {
                status = elec__name_atoms(
                    elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                               "atom %zu lies over 1000 periods from the grid along %c", i,
                               axis_name[axis]),
                    err, i, ELEC_NO_ATOM);
                goto cleanup;
            }
            u[axis] = (float)(d / lattice->spacing[axis]);
            if (p.periodic) {
                if (u[axis] >= (float)lattice->dims[axis]) u[axis] = 0.0f; /* K is point 0 */
            } else {
                const float first = floorf(u[axis]) + (float)(p.basis == ELEC_CHARGEMAP_SKEEL
                                                                  ? -(p.order / 2 - 1)
                                                                  : -(p.order - 1));
                if (!(first >= 0.0f && first + p.order <= (float)lattice->dims[axis])) {
                    status = elec__name_atoms(
                        elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                   "atom %zu at %g A along %c: its %d-point stencil leaves the "
                                   "lattice (points 0 to %d); pad the lattice, or map "
                                   "periodically", i, x[axis], axis_name[axis], p.order,
                                   lattice->dims[axis] - 1),
                        err, i, ELEC_NO_ATOM);
                    goto cleanup;
                }
            }
        }
        host[i] = make_float4(u[0], u[1], u[2], (float)q);
        abs_charge += fabs(q);
        if (fabs(q) > max_charge) max_charge = fabs(q);
    }
    if ((p.variant == ELEC_CHARGEMAP_PC_FIXED_POINT ||
         p.variant == ELEC_CHARGEMAP_TILE_FUSED_FIXED) &&
        abs_charge >= 2147483648.0) {
        status = elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                            "%s holds up to 2^31 e a point: sum |q| = %g e",
                            elec_chargemap_variant_name(p.variant), abs_charge);
        goto cleanup;
    }
    if (p.variant == ELEC_CHARGEMAP_TILE_FUSED_FIXED && max_charge >= 524288.0) {
        status = elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                            "tile-fused-fixed rounds terms under 2^19 e: an atom carries %g e",
                            max_charge);
        goto cleanup;
    }
    if (!params || params->variant == ELEC_CHARGEMAP_FASTEST)
        p.variant = ELEC_CHARGEMAP_FASTEST; /* the handle chooses again, with its fallback */
    status = elec_cuda_chargemap_create(lattice, n ? n : 1, &p, -1, &h, err);
    if (status != ELEC_OK) goto cleanup;
    h->g.grid_units = 1;
    ELEC__CUDA_TRY(cudaSetDevice(h->device));
    ELEC__CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    ELEC__CUDA_ALLOC(d_xyzq, (n + 1) * sizeof(float4), stream);
    ELEC__CUDA_ALLOC(d_grid, (size_t)h->points * sizeof(float), stream);
    ELEC__CUDA_TRY(cudaMemcpyAsync(d_xyzq, host, n * sizeof(float4), cudaMemcpyHostToDevice,
                                   stream));
    if (times)
        for (; marks_made < 5; marks_made++) ELEC__CUDA_TRY(cudaEventCreate(&marks[marks_made]));
    status = elec__chargemap_enqueue(h, d_xyzq, (int)n, d_grid, stream, times ? marks : NULL,
                                     err);
    if (status != ELEC_OK) goto cleanup;
    ELEC__CUDA_TRY(cudaMemcpyAsync(grid, d_grid, (size_t)h->points * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream));
    if ((status = elec_cuda_chargemap_finish(h, &overflow, stream, err)) != ELEC_OK) goto cleanup;
    /* finish waited for the stream: the grid is on the host */
    if ((status = elec__results_finite("GPU charge map", "point", grid, NULL,
                                       (size_t)h->points, "float", err)) != ELEC_OK)
        goto cleanup;
    if (overflow_atoms) *overflow_atoms = overflow;
    if (times) {
        float ms;
        for (int m = 0; m < 4; m++) {
            ELEC__CUDA_TRY(cudaEventElapsedTime(&ms, marks[m], marks[m + 1]));
            times->name[m] = stage_names[m];
            times->seconds[m] = 1e-3 * ms;
        }
        ELEC__CUDA_TRY(cudaEventElapsedTime(&ms, marks[0], marks[4]));
        times->total = 1e-3 * ms;
        times->count = 4;
    }
    elec__ok(err);
cleanup:
    if (stream) { /* the buffers were made on it, after it */
        elec__cuda_free(d_xyzq, stream);
        elec__cuda_free(d_grid, stream);
        cudaStreamSynchronize(stream);
        cudaStreamDestroy(stream);
    }
    for (int m = 0; m < marks_made; m++) cudaEventDestroy(marks[m]);
    (void)cudaGetLastError();
    elec_cuda_chargemap_destroy(h);
    ELEC_FREE(host);
    cudaSetDevice(caller_device);
    return status;
}

} /* extern "C" */

/* ------------------------------------------------- >>alpb ALPB surface potentials, HCP */
/* ALPB at surface vertices (elec.h, elec_alpb_params, elec_hcp), after
   seed 003 (Daga and Feng 2012): each thread computes one vertex's
   potential by HCP's top-down walk over complexes, chains, residues and
   atoms (research notes 3.3), a component far where the squared distance
   to its centre exceeds its reach squared (elec__hcp_reach: the level's
   threshold, or farther where 1.5 times its extent or its error test
   asks; +infinity for the exact sum).  The ladder (params.variant), each rung a kernel or a change
   of input beside the one before:
     simple     the seed's kernel before its shared-memory step: the arrays
                flattened to one array per field (the seed's SoA), the
                vertex read again from global memory at every level
                (complex, chain, residue, the atoms of a residue)
     registers  the vertex read once and kept in registers: the seed's
                step (it copied the vertex to shared memory, which on its
                GT200 had no cache behind it)
     sorted     the registers kernel over vertices sorted along a Morton
                curve (10 bits per axis, CUB's radix sort on the device),
                so that the 32 threads of a warp are neighbours, open the
                same components and read the same records in step (one
                broadcast load instead of up to 32); results are written
                back in the caller's order
     packed     sorted, and each component one 64-byte record of four
                float4 (centre with its reach squared, its one or two
                charges, its children's range), atoms float4: one vector
                load where the SoA rungs issue three or four; the
                complexes' and chains' records staged in shared memory per
                block
     pairs      packed, two neighbouring vertices per thread: each record
                and atom read once for both (half the loads and the loop
                overhead per vertex, twice the independent arithmetic per
                load); a pair takes the union of its vertices' branches,
                each vertex keeping its own decisions
   The default (ELEC_ALPB_FASTEST) runs the exact sum without salt on the
   DCS points kernel (E1 is a Coulomb sum plus a constant), everything else
   on pairs.  Kernels compute in float: a term is q rsqrt(d^2) (no salt,
   the Coulomb form of E1 and of GEM's regions 2 and 3) or
   q elec_alpb_term_float (salt, region 1); a residue's atoms are summed
   apart before joining the vertex's sum.

   The call: the params and the vertices checked (before any CUDA call),
   the hierarchy laid out on the host in the rung's layout with every
   component's reach and uploaded in one copy into one device allocation,
   then the points in chunks on two streams: chunk c converted to float4
   (host, OpenMP) and uploaded, sorted and walked, while chunk c - 1's
   potential comes back, so that the host's conversions and copies hide
   behind the GPU's work (as the MDH points call).  elec_cuda_alpb_timed
   runs the stages one after another, in one chunk, and times each. */
#include <cub/device/device_radix_sort.cuh>

#define ELEC__ALPB_BLOCK 128
#define ELEC__ALPB_COULOMB 0 /* term q / d: E1 without salt (front applied after) */
#define ELEC__ALPB_GENERAL 1 /* term q elec_alpb_term_float(d, d')               */
/* shared memory for the complexes' and chains' records of the packed
   rungs: 750 records of 64 bytes (48 KB, what a block gets without
   opting in); past that they are read from global memory */
#define ELEC__ALPB_TOP_RECORDS 750
/* the points' chunks: so that the host's conversion and copies of one
   can hide behind the walk of another.  On an H100 (bench_alpb, 1e6
   points, the defaults) the pipelined call took 11.0-12.8 ms against the
   11.2 ms of the same stages one after another: no gain measured yet (a
   chunk's walk is about one wave of blocks; pageable copies overlap
   little) */
#define ELEC__ALPB_CHUNKS 4
/* vertices per thread of the pairs rung: on an H100 its walk took 5.39 ms
   with 2 (packed, one: 5.47 ms) and 6.18 ms with 4 */
#ifndef ELEC__ALPB_PER_THREAD
#define ELEC__ALPB_PER_THREAD 2
#endif
#define ELEC__ALPB_MIN_CHUNK ELEC_CUDA_ALPB_MIN_CHUNK

/* One level of the hierarchy as the seed flattened it: one array a field. */
typedef struct elec__alpb_soa_level {
    const float *cx, *cy, *cz, *reach2; /* centre (the distance test), reach^2 */
    const float *ax, *ay, *az, *aq;    /* first charge: the one-charge
                                          approximation or the positive one  */
    const float *bx, *by, *bz, *bq;    /* second charge: the negative one (0
                                          with one charge)                   */
    const int *first;                  /* children of c: first[c] .. first[c+1]-1 */
} elec__alpb_soa_level;

typedef struct elec__alpb_soa {
    elec__alpb_soa_level level[ELEC_HCP_LEVELS]; /* residues, chains, complexes */
    const float *x, *y, *z, *q;                   /* atoms                       */
    int complexes;
} elec__alpb_soa;

/* The same as records: per component four float4, centre (w: its reach
   squared), first charge, second charge, children (x and y: the first
   child's index and one past the last's, as int bits). */
typedef struct elec__alpb_packed {
    const float4 *level[ELEC_HCP_LEVELS];
    const float4 *atoms;
    int complexes, chains;
} elec__alpb_packed;

/* What every vertex's sum shares. */
typedef struct elec__alpb_call {
    elec_alpb_kernel_float k;
    float coincident2;
    float factor, shift, scale; /* phi = scale (factor sum + shift)          */
} elec__alpb_call;

/* The int whose bits a float holds (records keep indices in floats). */
ELEC_HD inline int elec__float_bits(float f) {
#ifdef __CUDA_ARCH__
    return __float_as_int(f);
#else
    int i;
    memcpy(&i, &f, sizeof i);
    return i;
#endif
}

/* The walks below are written for host and device (ELEC_HD): each kernel
   is one of them per thread, and tests run them on the CPU over the very
   layout a call uploads (no GPU needed to check the layout and the walk). */

/* A charge c (x, y, z, q) seen from P (and P' = v + s n for salt). */
template <int MODE>
ELEC_HD inline float elec__alpb_charge(const elec__alpb_call &a, float4 c, float4 P,
                                       float4 P_ion) {
    float dx = P.x - c.x, dy = P.y - c.y, dz = P.z - c.z;
    float d2 = fmaf(dx, dx, fmaf(dy, dy, dz * dz));
    if (MODE == ELEC__ALPB_COULOMB) {
#ifdef __CUDA_ARCH__
        return c.w * (d2 >= a.coincident2 ? elec_rsqrt_sfu(d2) : 0.0f);
#else
        return c.w * (d2 >= a.coincident2 ? 1.0f / sqrtf(d2) : 0.0f);
#endif
    }
    if (!(d2 >= a.coincident2) || c.w == 0.0f) return 0.0f;
    float d_ion = 0.0f;
    if (a.k.kappa > 0.0f) {
        float ex = P_ion.x - c.x, ey = P_ion.y - c.y, ez = P_ion.z - c.z;
        d_ion = sqrtf(fmaf(ex, ex, fmaf(ey, ey, ez * ez)));
    }
    return c.w * elec_alpb_term_float(&a.k, sqrtf(d2), d_ion);
}

/* Is P beyond the reach (reach2 its square) of a component centred at x? */
ELEC_HD inline bool elec__alpb_far(float4 P, float x, float y, float z, float reach2) {
    float dx = P.x - x, dy = P.y - y, dz = P.z - z;
    return fmaf(dx, dx, fmaf(dy, dy, dz * dz)) > reach2; /* strict, as NAB and GEM */
}

/* The vertex again from global memory (simple rung): volatile, so that the
   compiler keeps each read where the seed's kernel had it. */
ELEC_HD inline float4 elec__alpb_reread(const float4 *p) {
    const volatile float *f = (const volatile float *)p;
    return make_float4(f[0], f[1], f[2], f[3]);
}

template <int MODE, int CHARGES>
ELEC_HD inline float elec__alpb_soa_approx(const elec__alpb_call &a,
                                           const elec__alpb_soa_level &l, int c, float4 P,
                                           float4 P_ion) {
    float t = elec__alpb_charge<MODE>(a, make_float4(l.ax[c], l.ay[c], l.az[c], l.aq[c]), P,
                                      P_ion);
    if (CHARGES == 2)
        t += elec__alpb_charge<MODE>(a, make_float4(l.bx[c], l.by[c], l.bz[c], l.bq[c]), P,
                                     P_ion);
    return t;
}

/* Is P beyond the reach of component c of an SoA level? */
ELEC_HD inline bool elec__alpb_soa_far(float4 P, const elec__alpb_soa_level &l, int c) {
    return elec__alpb_far(P, l.cx[c], l.cy[c], l.cz[c], l.reach2[c]);
}

/* One vertex over the flattened arrays: point mine (and P_ion), the vertex
   read again at every level when REREAD.  Returns the potential. */
template <int MODE, int CHARGES, int REREAD>
ELEC_HD inline float elec__alpb_soa_walk(const elec__alpb_soa &s, const elec__alpb_call &a,
                                         const float4 *mine, float4 P_ion) {
    const elec__alpb_soa_level &residues = s.level[0], &chains = s.level[1],
                               &complexes = s.level[2];
    float4 P = *mine;
    float sum = 0.0f;
    for (int c = 0; c < s.complexes; c++) {
        if (REREAD) P = elec__alpb_reread(mine);
        if (elec__alpb_soa_far(P, complexes, c)) {
            sum += elec__alpb_soa_approx<MODE, CHARGES>(a, complexes, c, P, P_ion);
            continue;
        }
        for (int ch = complexes.first[c]; ch < complexes.first[c + 1]; ch++) {
            if (REREAD) P = elec__alpb_reread(mine);
            if (elec__alpb_soa_far(P, chains, ch)) {
                sum += elec__alpb_soa_approx<MODE, CHARGES>(a, chains, ch, P, P_ion);
                continue;
            }
            for (int r = chains.first[ch]; r < chains.first[ch + 1]; r++) {
                if (REREAD) P = elec__alpb_reread(mine);
                if (elec__alpb_soa_far(P, residues, r)) {
                    sum += elec__alpb_soa_approx<MODE, CHARGES>(a, residues, r, P, P_ion);
                    continue;
                }
                float part = 0.0f;
                if (REREAD) P = elec__alpb_reread(mine);
                for (int at = residues.first[r]; at < residues.first[r + 1]; at++)
                    part += elec__alpb_charge<MODE>(
                        a, make_float4(s.x[at], s.y[at], s.z[at], s.q[at]), P, P_ion);
                sum += part;
            }
        }
    }
    return a.scale * fmaf(a.factor, sum, a.shift);
}

/* Rungs simple (REREAD 1) and registers (0; with order, sorted): thread i
   computes point i and writes it to phi[order ? order[i] : i]. */
template <int MODE, int CHARGES, int REREAD>
__global__ void __launch_bounds__(ELEC__ALPB_BLOCK)
elec__k_alpb_soa(float *phi, const float4 *points, const float4 *points_ion,
                 const int *order, int count, elec__alpb_soa s, elec__alpb_call a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    phi[order ? order[i] : i] = elec__alpb_soa_walk<MODE, CHARGES, REREAD>(
        s, a, points + i, points_ion ? points_ion[i] : points[i]);
}

/* A packed component's charges (record[1], record[2]) seen from P. */
template <int MODE, int CHARGES>
ELEC_HD inline float elec__alpb_record_approx(const elec__alpb_call &a, const float4 *record,
                                              float4 P, float4 P_ion) {
    float t = elec__alpb_charge<MODE>(a, record[1], P, P_ion);
    if (CHARGES == 2) t += elec__alpb_charge<MODE>(a, record[2], P, P_ion);
    return t;
}

ELEC_HD inline bool elec__alpb_record_far(float4 P, float4 centre) {
    return elec__alpb_far(P, centre.x, centre.y, centre.z, centre.w);
}

/* One vertex over the records (complexes' and chains' from wherever the
   caller has them). */
template <int MODE, int CHARGES>
ELEC_HD inline float elec__alpb_packed_walk(const elec__alpb_packed &s, const float4 *complexes,
                                            const float4 *chains, const elec__alpb_call &a,
                                            float4 P, float4 P_ion) {
    const float4 *residues = s.level[0];
    float sum = 0.0f;
    for (int c = 0; c < s.complexes; c++) {
        const float4 *complex_record = complexes + 4 * c;
        if (elec__alpb_record_far(P, complex_record[0])) {
            sum += elec__alpb_record_approx<MODE, CHARGES>(a, complex_record, P, P_ion);
            continue;
        }
        const float4 chain_range = complex_record[3];
        const int ch_end = elec__float_bits(chain_range.y);
        for (int ch = elec__float_bits(chain_range.x); ch < ch_end; ch++) {
            const float4 *chain = chains + 4 * ch;
            if (elec__alpb_record_far(P, chain[0])) {
                sum += elec__alpb_record_approx<MODE, CHARGES>(a, chain, P, P_ion);
                continue;
            }
            const float4 residue_range = chain[3];
            const int r_end = elec__float_bits(residue_range.y);
            for (int r = elec__float_bits(residue_range.x); r < r_end; r++) {
                const float4 *residue = residues + 4 * r;
                if (elec__alpb_record_far(P, residue[0])) {
                    sum += elec__alpb_record_approx<MODE, CHARGES>(a, residue, P, P_ion);
                } else {
                    const float4 atom_range = residue[3];
                    const int end = elec__float_bits(atom_range.y);
                    float part = 0.0f;
                    for (int at = elec__float_bits(atom_range.x); at < end; at++)
                        part += elec__alpb_charge<MODE>(a, s.atoms[at], P, P_ion);
                    sum += part;
                }
            }
        }
    }
    return a.scale * fmaf(a.factor, sum, a.shift);
}

/* The complexes' and chains' records of the packed rungs, staged in shared
   memory (TOP_SHARED) when they fit, else left in global memory. */
template <int TOP_SHARED>
__device__ __forceinline__ void elec__alpb_stage_top(const elec__alpb_packed &s,
                                                     float4 *top, const float4 **complexes,
                                                     const float4 **chains) {
    *complexes = s.level[2];
    *chains = s.level[1];
    if (TOP_SHARED) {
        const int upper = 4 * s.complexes, middle = 4 * s.chains;
        for (int k = threadIdx.x; k < upper + middle; k += blockDim.x)
            top[k] = k < upper ? s.level[2][k] : s.level[1][k - upper];
        __syncthreads();
        *complexes = top;
        *chains = top + upper;
    }
}

/* Rung packed: thread i walks sorted point i into phi[order[i]]. */
template <int MODE, int CHARGES, int TOP_SHARED>
__global__ void __launch_bounds__(ELEC__ALPB_BLOCK)
elec__k_alpb_packed(float *phi, const float4 *points, const float4 *points_ion,
                    const int *order, int count, elec__alpb_packed s, elec__alpb_call a) {
    extern __shared__ float4 elec__alpb_top[];
    const float4 *complexes, *chains;
    elec__alpb_stage_top<TOP_SHARED>(s, elec__alpb_top, &complexes, &chains);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    phi[order[i]] = elec__alpb_packed_walk<MODE, CHARGES>(
        s, complexes, chains, a, points[i], points_ion ? points_ion[i] : points[i]);
}

/* N neighbouring vertices P[0..N-1] over the records (the pairs rung: N
   = ELEC__ALPB_PER_THREAD, 2): each record and atom read once for all.
   open[k] says whether vertex k is inside the component being walked (it
   takes the component's children); a component far for one vertex and
   near for another adds its charges to the first and opens its children
   for the second, so every vertex keeps its own decisions.  The sums go
   to phi[0..N-1]. */
template <int MODE, int CHARGES, int N>
ELEC_HD inline void elec__alpb_group_walk(const elec__alpb_packed &s, const float4 *complexes,
                                          const float4 *chains, const elec__alpb_call &a,
                                          const float4 P[N], const float4 P_ion[N],
                                          float phi[N]) {
    const float4 *residues = s.level[0];
    float sum[N];
    for (int k = 0; k < N; k++) sum[k] = 0.0f;
    for (int c = 0; c < s.complexes; c++) {
        const float4 *complex_record = complexes + 4 * c;
        bool open[N], any = false;
        for (int k = 0; k < N; k++) {
            open[k] = !elec__alpb_record_far(P[k], complex_record[0]);
            any |= open[k];
            if (!open[k])
                sum[k] += elec__alpb_record_approx<MODE, CHARGES>(a, complex_record, P[k],
                                                                  P_ion[k]);
        }
        if (!any) continue;
        const float4 chain_range = complex_record[3];
        const int ch_end = elec__float_bits(chain_range.y);
        for (int ch = elec__float_bits(chain_range.x); ch < ch_end; ch++) {
            const float4 *chain = chains + 4 * ch;
            bool near[N], any_near = false;
            for (int k = 0; k < N; k++) {
                const bool far = elec__alpb_record_far(P[k], chain[0]);
                near[k] = open[k] && !far;
                any_near |= near[k];
                if (open[k] && far)
                    sum[k] += elec__alpb_record_approx<MODE, CHARGES>(a, chain, P[k], P_ion[k]);
            }
            if (!any_near) continue;
            const float4 residue_range = chain[3];
            const int r_end = elec__float_bits(residue_range.y);
            for (int r = elec__float_bits(residue_range.x); r < r_end; r++) {
                const float4 *residue = residues + 4 * r;
                bool close[N], any_far = false, any_close = false;
                for (int k = 0; k < N; k++) {
                    close[k] = near[k] && !elec__alpb_record_far(P[k], residue[0]);
                    any_far |= near[k] && !close[k];
                    any_close |= close[k];
                }
                if (any_far) {
                    const float4 one = residue[1], two = residue[2];
                    for (int k = 0; k < N; k++) {
                        float t = elec__alpb_charge<MODE>(a, one, P[k], P_ion[k]);
                        if (CHARGES == 2) t += elec__alpb_charge<MODE>(a, two, P[k], P_ion[k]);
                        sum[k] += near[k] && !close[k] ? t : 0.0f;
                    }
                }
                if (any_close) {
                    const float4 atom_range = residue[3];
                    const int end = elec__float_bits(atom_range.y);
                    float part[N];
                    for (int k = 0; k < N; k++) part[k] = 0.0f;
                    for (int at = elec__float_bits(atom_range.x); at < end; at++) {
                        const float4 atom = s.atoms[at];
                        for (int k = 0; k < N; k++)
                            part[k] += elec__alpb_charge<MODE>(a, atom, P[k], P_ion[k]);
                    }
                    for (int k = 0; k < N; k++) sum[k] += close[k] ? part[k] : 0.0f;
                }
            }
        }
    }
    for (int k = 0; k < N; k++) phi[k] = a.scale * fmaf(a.factor, sum[k], a.shift);
}

/* Rung pairs: thread i walks sorted points N i .. N i + N - 1 (past the
   last point, the last point again, written once). */
template <int MODE, int CHARGES, int TOP_SHARED>
__global__ void __launch_bounds__(ELEC__ALPB_BLOCK)
elec__k_alpb_pairs(float *phi, const float4 *points, const float4 *points_ion,
                   const int *order, int count, elec__alpb_packed s, elec__alpb_call a) {
    enum { N = ELEC__ALPB_PER_THREAD };
    extern __shared__ float4 elec__alpb_top[];
    const float4 *complexes, *chains;
    elec__alpb_stage_top<TOP_SHARED>(s, elec__alpb_top, &complexes, &chains);
    const int i = N * (blockIdx.x * blockDim.x + threadIdx.x);
    if (i >= count) return;
    float4 P[N], P_ion[N];
    float out[N];
    for (int k = 0; k < N; k++) {
        const int j = i + k < count ? i + k : count - 1;
        P[k] = points[j];
        P_ion[k] = points_ion ? points_ion[j] : P[k];
    }
    elec__alpb_group_walk<MODE, CHARGES, N>(s, complexes, chains, a, P, P_ion, out);
    for (int k = 0; k < N && i + k < count; k++) phi[order[i + k]] = out[k];
}

/* Interleaves the low 10 bits of v with two zero bits each. */
__device__ __forceinline__ unsigned elec__spread_bits(unsigned v) {
    v &= 0x3ffu;
    v = (v | (v << 16)) & 0x030000ffu;
    v = (v | (v << 8)) & 0x0300f00fu;
    v = (v | (v << 4)) & 0x030c30c3u;
    v = (v | (v << 2)) & 0x09249249u;
    return v;
}

/* Morton code of each point over the box lo .. lo + 1023 / scale. */
__global__ void elec__k_alpb_morton(unsigned *code, int *index, const float4 *points,
                                    int count, float3 lo, float scale) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= count) return;
    float4 p = points[i];
    unsigned x = (unsigned)fminf(fmaxf((p.x - lo.x) * scale, 0.0f), 1023.0f);
    unsigned y = (unsigned)fminf(fmaxf((p.y - lo.y) * scale, 0.0f), 1023.0f);
    unsigned z = (unsigned)fminf(fmaxf((p.z - lo.z) * scale, 0.0f), 1023.0f);
    code[i] = elec__spread_bits(x) | elec__spread_bits(y) << 1 | elec__spread_bits(z) << 2;
    index[i] = i;
}

/* The points in sorted order: out[i] = in[order[i]]. */
__global__ void elec__k_alpb_gather(float4 *out, const float4 *in, const int *order,
                                    int count) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < count) out[i] = in[order[i]];
}

/* ---------------------------------------------------- ALPB launchers */

/* The hierarchy on the device, in the layout the rung reads. */
typedef struct elec__alpb_device {
    elec__alpb_soa soa;
    elec__alpb_packed packed;
} elec__alpb_device;

/* One charge of an approximation as (x, y, z, q) relative to centre: the
   one-charge approximation or the positive charge (which 0), the negative
   one (which 1; zero with one charge). */
static void elec__alpb_host_charge(const elec_hcp *h, int level, size_t c, int charges,
                                   int which, const double centre[3], float out[4]) {
    const double *a = h->approx[level] + 12 * c;
    const double *q = charges == 1 ? a : a + 4 + 4 * which;
    int k;
    if (charges == 1 && which == 1) {
        out[0] = out[1] = out[2] = out[3] = 0.0f;
        return;
    }
    for (k = 0; k < 3; k++) out[k] = (float)(q[k] - centre[k]);
    out[3] = (float)q[3];
}

static int elec__alpb_is_packed(elec_alpb_variant v) {
    return v == ELEC_ALPB_PACKED || v == ELEC_ALPB_PAIRS;
}

/* The layout of the hierarchy a rung reads, in float-sized words: the
   atoms first (4 per atom: float4 x y z q for the packed rungs, four
   arrays x, y, z, q for the others), then the levels (the packed rungs:
   16 per component, its record; the others: 12 arrays of one float per
   component, then the first-child arrays, count + 1 ints per level). */
static size_t elec__alpb_levels_words(const elec_hcp *h, int packed) {
    size_t words = 0;
    for (int level = 0; level < ELEC_HCP_LEVELS; level++)
        words += packed ? 16 * h->count[level + 1] : 13 * h->count[level + 1] + 1;
    return words;
}

static size_t elec__alpb_layout_bytes(const elec_hcp *h, int packed) {
    return (4 * h->count[0] + elec__alpb_levels_words(h, packed)) * sizeof(float);
}

/* Atoms first .. first + n - 1 relative to centre, into out as the
   layout holds them: n float4 (packed), or n x, then n y, n z, n q (each
   to go count[0] floats after the one before). */
static void elec__alpb_layout_atoms(const elec_hcp *h, int packed, const double centre[3],
                                    size_t first, size_t n, float *out) {
#ifdef _OPENMP
#pragma omp parallel for
#endif
    for (long i = 0; i < (long)n; i++) {
        const double *x = h->xyz + 3 * (first + (size_t)i);
        for (int k = 0; k < 3; k++) out[packed ? 4 * i + k : k * n + i] = (float)(x[k] - centre[k]);
        out[packed ? 4 * i + 3 : 3 * n + i] = (float)h->charge[first + (size_t)i];
    }
}

/* The levels into host (elec__alpb_levels_words of it), positions
   relative to centre, every component with its reach for the resolved
   params r (and their kernel), and layout's pointers set as if the
   whole layout (atoms, then these) sat at base: the device buffer it is
   copied to, or the host's own for the walks on the CPU. */
static void elec__alpb_layout_levels(const elec_hcp *h, const elec_alpb_params *r,
                                     const elec_alpb_kernel *kernel, int packed,
                                     const double centre[3],
                                     float *host, const void *base,
                                     elec__alpb_device *layout) {
    const size_t n = h->count[0];
    const int charges = r->hcp_charges;
    const float *df = (const float *)base, *dlevels = df + 4 * n;
    size_t at = 0;
    if (packed) {
        layout->packed.atoms = (const float4 *)df;
        for (int level = 0; level < ELEC_HCP_LEVELS; level++) {
            const size_t m = h->count[level + 1];
            float *record = host + at;
            layout->packed.level[level] = (const float4 *)(dlevels + at);
#ifdef _OPENMP
#pragma omp parallel for
#endif
            for (long c = 0; c < (long)m; c++) {
                float *out = record + 16 * c;
                const double reach = elec__hcp_reach(h, level, (size_t)c, r, kernel);
                const int range[2] = {(int)h->first[level][c], (int)h->first[level][c + 1]};
                for (int k = 0; k < 3; k++) out[k] = (float)(h->centre[level][3 * c + k] - centre[k]);
                out[3] = (float)(reach * reach);
                elec__alpb_host_charge(h, level, (size_t)c, charges, 0, centre, out + 4);
                elec__alpb_host_charge(h, level, (size_t)c, charges, 1, centre, out + 8);
                memcpy(out + 12, range, sizeof range);
                out[14] = out[15] = 0.0f;
            }
            at += 16 * m;
        }
        layout->packed.complexes = (int)h->count[3];
        layout->packed.chains = (int)h->count[2];
        return;
    }
    size_t int_at = 0, floats = 0;
    for (int level = 0; level < ELEC_HCP_LEVELS; level++) floats += 12 * h->count[level + 1];
    int *ints = (int *)(host + floats);
    const int *di = (const int *)(dlevels + floats);
    layout->soa.x = df;
    layout->soa.y = df + n;
    layout->soa.z = df + 2 * n;
    layout->soa.q = df + 3 * n;
    for (int level = 0; level < ELEC_HCP_LEVELS; level++) {
        const size_t m = h->count[level + 1];
        elec__alpb_soa_level *l = &layout->soa.level[level];
        const float **field[12] = {&l->cx, &l->cy, &l->cz, &l->reach2, &l->ax, &l->ay,
                                   &l->az, &l->aq, &l->bx, &l->by, &l->bz, &l->bq};
        for (int k = 0; k < 12; k++) *field[k] = dlevels + at + (size_t)k * m;
#ifdef _OPENMP
#pragma omp parallel for
#endif
        for (long c = 0; c < (long)m; c++) {
            const double reach = elec__hcp_reach(h, level, (size_t)c, r, kernel);
            float charge[8];
            for (int k = 0; k < 3; k++)
                host[at + (size_t)k * m + c] = (float)(h->centre[level][3 * c + k] - centre[k]);
            host[at + 3 * m + c] = (float)(reach * reach);
            elec__alpb_host_charge(h, level, (size_t)c, charges, 0, centre, charge);
            elec__alpb_host_charge(h, level, (size_t)c, charges, 1, centre, charge + 4);
            for (int k = 0; k < 8; k++) host[at + (size_t)(4 + k) * m + c] = charge[k];
        }
        at += 12 * m;
        l->first = di + int_at;
        for (size_t c = 0; c <= m; c++) ints[int_at++] = (int)h->first[level][c];
    }
    layout->soa.complexes = (int)h->count[3];
}

/* The whole layout in host (elec__alpb_layout_bytes of it), pointers as
   if it sat at base (the walks on the CPU: base = host). */
static void elec__alpb_layout(const elec_hcp *h, const elec_alpb_params *r,
                              const elec_alpb_kernel *kernel,
                              int packed, const double centre[3], void *host,
                              const void *base, elec__alpb_device *layout) {
    elec__alpb_layout_atoms(h, packed, centre, 0, h->count[0], (float *)host);
    elec__alpb_layout_levels(h, r, kernel, packed, centre, (float *)host + 4 * h->count[0],
                             base, layout);
}

/* Launches the rung's kernel template for the call's mode and charges
   over count sorted (or, unsorted rungs, given-order) points. */
template <int MODE, int CHARGES>
static void elec__alpb_launch(elec_alpb_variant variant, size_t shared, cudaStream_t stream,
                              float *phi, const float4 *P, const float4 *P_ion,
                              const int *order, int count, const elec__alpb_device &dev,
                              const elec__alpb_call &a) {
    const unsigned per_thread = variant == ELEC_ALPB_PAIRS ? ELEC__ALPB_PER_THREAD : 1;
    const unsigned blocks = (unsigned)(((unsigned)count + per_thread * ELEC__ALPB_BLOCK - 1) /
                                       (per_thread * ELEC__ALPB_BLOCK));
    switch (variant) {
    case ELEC_ALPB_SIMPLE:
        elec__k_alpb_soa<MODE, CHARGES, 1><<<blocks, ELEC__ALPB_BLOCK, 0, stream>>>(
            phi, P, P_ion, NULL, count, dev.soa, a);
        break;
    case ELEC_ALPB_REGISTERS:
    case ELEC_ALPB_SORTED:
        elec__k_alpb_soa<MODE, CHARGES, 0><<<blocks, ELEC__ALPB_BLOCK, 0, stream>>>(
            phi, P, P_ion, order, count, dev.soa, a);
        break;
    case ELEC_ALPB_PACKED:
        if (shared)
            elec__k_alpb_packed<MODE, CHARGES, 1><<<blocks, ELEC__ALPB_BLOCK, shared, stream>>>(
                phi, P, P_ion, order, count, dev.packed, a);
        else
            elec__k_alpb_packed<MODE, CHARGES, 0><<<blocks, ELEC__ALPB_BLOCK, 0, stream>>>(
                phi, P, P_ion, order, count, dev.packed, a);
        break;
    default:
        if (shared)
            elec__k_alpb_pairs<MODE, CHARGES, 1><<<blocks, ELEC__ALPB_BLOCK, shared, stream>>>(
                phi, P, P_ion, order, count, dev.packed, a);
        else
            elec__k_alpb_pairs<MODE, CHARGES, 0><<<blocks, ELEC__ALPB_BLOCK, 0, stream>>>(
                phi, P, P_ion, order, count, dev.packed, a);
        break;
    }
}

/* The call's mode (which term the kernels use). */
static int elec__alpb_mode(const elec_alpb_kernel *k) {
    return k->kappa > 0.0 || k->region == 1 ? ELEC__ALPB_GENERAL : ELEC__ALPB_COULOMB;
}

/* The mode and charges as template arguments. */
static void elec__alpb_dispatch(int mode, int charges, elec_alpb_variant variant, size_t shared,
                                cudaStream_t stream, float *phi, const float4 *P,
                                const float4 *P_ion, const int *order, int count,
                                const elec__alpb_device &dev, const elec__alpb_call &a) {
    if (mode == ELEC__ALPB_GENERAL && charges == 1)
        elec__alpb_launch<ELEC__ALPB_GENERAL, 1>(variant, shared, stream, phi, P, P_ion, order,
                                                 count, dev, a);
    else if (mode == ELEC__ALPB_GENERAL)
        elec__alpb_launch<ELEC__ALPB_GENERAL, 2>(variant, shared, stream, phi, P, P_ion, order,
                                                 count, dev, a);
    else if (charges == 1)
        elec__alpb_launch<ELEC__ALPB_COULOMB, 1>(variant, shared, stream, phi, P, P_ion, order,
                                                 count, dev, a);
    else
        elec__alpb_launch<ELEC__ALPB_COULOMB, 2>(variant, shared, stream, phi, P, P_ion, order,
                                                 count, dev, a);
}

/* The call's constants in float. */
static void elec__alpb_call_setup(const elec_alpb_params *r, const elec_alpb_kernel *k,
                                  double net_charge, elec__alpb_call *a) {
    memset(a, 0, sizeof *a);
    a->k.region = k->region;
    a->k.front = (float)k->front;
    a->k.kappa = (float)k->kappa;
    a->k.inv_eps_in = (float)k->inv_eps_in;
    a->k.born = (float)k->born;
    a->k.born_offset = (float)k->born_offset;
    a->k.size2 = (float)k->size2;
    a->k.constant = (float)k->constant;
    a->coincident2 = (float)(ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE);
    a->scale = (float)r->scale;
    /* the Coulomb form sums q / d and multiplies by front once */
    a->factor = elec__alpb_mode(k) == ELEC__ALPB_COULOMB ? (float)k->front : 1.0f;
    a->shift = (float)(net_charge * k->constant);
}

/* The evaluation points v + shift n relative to centre, as float4, of
   vertices first .. first + count - 1, into out[0 .. count - 1]. */
static void elec__alpb_points(const double *vertices, const double *normals, size_t first,
                              size_t count, double shift, const double centre[3],
                              float4 *out) {
#ifdef _OPENMP
#pragma omp parallel for
#endif
    for (long i = 0; i < (long)count; i++) {
        double P[3];
        elec__alpb_point(vertices, normals, first + (size_t)i, shift, P);
        out[i] = make_float4((float)(P[0] - centre[0]), (float)(P[1] - centre[1]),
                             (float)(P[2] - centre[2]), 0.0f);
    }
}

static double elec__alpb_clock(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The exact sum without salt on the DCS points path: scale (front sum q/d
   + Q constant). */
static elec_status elec__alpb_on_dcs(int device, const elec_hcp *h, const double *vertices,
                                     const double *normals, size_t count,
                                     const elec_alpb_params *r, const elec_alpb_kernel *k,
                                     float *potential, elec_error *err) {
    elec_atoms atoms = elec_atoms_from_xyz(h->count[0], h->xyz, h->charge, NULL);
    double *points = (double *)ELEC_MALLOC(3 * count * sizeof(double)), centre[3];
    const double factor = r->scale * k->front, shift = r->scale * h->net_charge * k->constant;
    elec_status status;
    if (!points) return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory for %zu points", count);
#ifdef _OPENMP
#pragma omp parallel for
#endif
    for (long i = 0; i < (long)count; i++)
        elec__alpb_point(vertices, normals, (size_t)i, r->proj, points + 3 * i);
    elec__points_reference(points, NULL, count, centre);
    status = elec__cuda_points_on(device, &atoms, points, count, centre, potential, err);
    ELEC_FREE(points);
    if (status != ELEC_OK) return status;
#ifdef _OPENMP
#pragma omp parallel for
#endif
    for (long i = 0; i < (long)count; i++)
        potential[i] = (float)(factor * potential[i] + shift);
    return ELEC_OK;
}

/* Bytes rounded up to 256 (each piece of the one device allocation). */
static size_t elec__alpb_aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

/* Host conversions go through one staging slice of this many float4 (1
   MB), reused at once: a copy from pageable memory returns once the
   driver has taken the data, and a slice that small stays in cache and
   costs no page faults (a fresh 16 MB buffer costs ~4,000 each call). */
#define ELEC__ALPB_SLICE ((size_t)1 << 16)

/* The atoms into the layout at d_layout (elec__alpb_layout_atoms), slice
   by slice through staging (ELEC__ALPB_SLICE float4). */
static elec_status elec__alpb_upload_atoms(const elec_hcp *h, int packed, const double centre[3],
                                           float *staging, float *d_layout,
                                           cudaStream_t stream, elec_error *err) {
    elec_status status = ELEC_OK;
    const size_t n = h->count[0];
    for (size_t first = 0; first < n; first += ELEC__ALPB_SLICE) {
        const size_t m = n - first < ELEC__ALPB_SLICE ? n - first : ELEC__ALPB_SLICE;
        elec__alpb_layout_atoms(h, packed, centre, first, m, staging);
        if (packed)
            ELEC__CUDA_TRY(cudaMemcpyAsync(d_layout + 4 * first, staging, m * sizeof(float4),
                                           cudaMemcpyHostToDevice, stream));
        else
            for (int k = 0; k < 4; k++) /* x, y, z, q: arrays n floats apart */
                ELEC__CUDA_TRY(cudaMemcpyAsync(d_layout + k * n + first, staging + k * m,
                                               m * sizeof(float), cudaMemcpyHostToDevice,
                                               stream));
    }
cleanup:
    return status;
}

/* The points v + shift n of vertices first .. first + n - 1 into d_out,
   slice by slice through staging. */
static elec_status elec__alpb_upload_points(const double *vertices, const double *normals,
                                            size_t first, size_t n, double shift,
                                            const double centre[3], float4 *staging,
                                            float4 *d_out, cudaStream_t stream,
                                            elec_error *err) {
    elec_status status = ELEC_OK;
    for (size_t done = 0; done < n; done += ELEC__ALPB_SLICE) {
        const size_t m = n - done < ELEC__ALPB_SLICE ? n - done : ELEC__ALPB_SLICE;
        elec__alpb_points(vertices, normals, first + done, m, shift, centre, staging);
        ELEC__CUDA_TRY(cudaMemcpyAsync(d_out + done, staging, m * sizeof(float4),
                                       cudaMemcpyHostToDevice, stream));
    }
cleanup:
    return status;
}

/* The stages of one call, as elec_cuda_alpb_timed names them. */
typedef struct elec__alpb_times {
    double prepare, allocate, upload, points, sort, kernel, copy_back, total;
} elec__alpb_times;

static elec_status elec__cuda_alpb_parted(const elec_hcp *hcp, const double *vertices,
                                          const double *normals, size_t count,
                                          const elec_alpb_params *params, float *potential,
                                          elec__alpb_times *times, int host,
                                          elec_error *err);

static elec_status elec__cuda_alpb_region_run(const elec_hcp *hcp, const double *vertices,
                                              const double *normals, size_t count,
                                       const elec_alpb_params *params, float *potential,
                                       elec__alpb_times *times, elec_error *err) {
    const double started = elec__alpb_clock();
    elec_status status;
    elec_alpb_params r;
    elec_alpb_kernel k;
    elec__alpb_call a;
    elec__alpb_device dev;
    elec_alpb_variant variant;
    int devices[ELEC__MAX_GPUS], device_count = 0, caller_device = 0, mode, sorted, packed;
    double lo[3] = {0.0, 0.0, 0.0}, hi[3] = {0.0, 0.0, 0.0}, centre[3], mark = 0.0;
    float *host_levels = NULL;
    float4 *staging = NULL;
    char *d_block = NULL;
    float4 *d_points = NULL, *d_points_ion = NULL, *d_sorted = NULL, *d_sorted_ion = NULL;
    float *d_phi = NULL;
    int *d_order = NULL, *d_index = NULL;
    unsigned *d_code = NULL, *d_code_sorted = NULL;
    void *d_scratch[2] = {NULL, NULL};
    size_t scratch_bytes = 0, shared = 0, chunk, chunks;
    cudaStream_t streams[2] = {NULL, NULL};
    cudaEvent_t ready = NULL, marks[3] = {NULL, NULL, NULL};
    float3 box_lo = make_float3(0.0f, 0.0f, 0.0f);
    float box_scale = 1.0f;

    memset(&dev, 0, sizeof dev);
    if (times) memset(times, 0, sizeof *times);
    status = elec__alpb_prepare(hcp, vertices, normals, count, potential, params, &r, &k, lo,
                                hi, err);
    if (status != ELEC_OK) return status;
    if (count > (size_t)INT_MAX / 2 || hcp->count[0] > (size_t)INT_MAX / 2)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "the GPU ALPB takes at most %d vertices and atoms", INT_MAX / 2);
    if ((status = elec__cuda_gpu_list(&r.gpus, devices, &device_count, err)) != ELEC_OK)
        return status;
    if (count == 0) {
        elec__ok(err);
        return ELEC_OK;
    }
    if (elec__box_wide(lo, hi)) /* checked whole above; floats want it in regions */
        return elec__cuda_alpb_parted(hcp, vertices, normals, count, params, potential, times,
                                      0, err);
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    variant = r.variant;
    if (variant == ELEC_ALPB_FASTEST) {
        if (elec__alpb_is_coulomb(&r, &k)) {
            if (times) times->prepare = elec__alpb_clock() - started;
            status = elec__alpb_on_dcs(devices[0], hcp, vertices, normals, count, &r, &k,
                                       potential, err);
            cudaSetDevice(caller_device);
            if (status == ELEC_OK) elec__ok(err);
            if (times) times->total = elec__alpb_clock() - started;
            return status;
        }
        variant = ELEC_ALPB_FASTEST_WALK;
    }
    sorted = variant != ELEC_ALPB_SIMPLE && variant != ELEC_ALPB_REGISTERS;
    packed = elec__alpb_is_packed(variant);
    elec__alpb_call_setup(&r, &k, hcp->net_charge, &a);
    mode = elec__alpb_mode(&k);

    /* Host: the reference point (the vertices' box centre; floats keep
       their precision relative to it), the Morton box, the levels' layout
       (the atoms and the points are converted slice by slice on the way
       to the device), the staging slice. */
    for (int axis = 0; axis < 3; axis++) centre[axis] = 0.5 * (lo[axis] + hi[axis]);
    {
        const double extent = fmax(fmax(hi[0] - lo[0], hi[1] - lo[1]), hi[2] - lo[2]);
        const double margin = fabs(r.proj) + 1e-3; /* points move by |p| along normals */
        box_lo = make_float3((float)(lo[0] - centre[0] - margin),
                             (float)(lo[1] - centre[1] - margin),
                             (float)(lo[2] - centre[2] - margin));
        box_scale = (float)(1023.0 / (extent + 2.0 * margin));
    }
    host_levels = (float *)ELEC_MALLOC(elec__alpb_levels_words(hcp, packed) * sizeof(float));
    staging = (float4 *)ELEC_MALLOC(ELEC__ALPB_SLICE * sizeof(float4));
    if (!host_levels || !staging) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory for the hierarchy");
        goto cleanup;
    }

    if (times) {
        times->prepare = elec__alpb_clock() - started;
        mark = elec__alpb_clock();
    }

    /* Device: one allocation for the hierarchy, the points (sorted too),
       the potential, the sort's keys and scratch (one per stream). */
    chunk = times ? count : (count + ELEC__ALPB_CHUNKS - 1) / ELEC__ALPB_CHUNKS;
    if (chunk < ELEC__ALPB_MIN_CHUNK) chunk = ELEC__ALPB_MIN_CHUNK;
    if (chunk > count) chunk = count;
    chunks = (count + chunk - 1) / chunk;
    ELEC__CUDA_TRY(cudaSetDevice(devices[0]));
    if (sorted)
        ELEC__CUDA_TRY(cub::DeviceRadixSort::SortPairs(NULL, scratch_bytes, (unsigned *)NULL,
                                                       (unsigned *)NULL, (int *)NULL,
                                                       (int *)NULL, (int)chunk, 0, 30));
    {
        const size_t layout_bytes = elec__alpb_aligned(elec__alpb_layout_bytes(hcp, packed));
        const size_t point_bytes = elec__alpb_aligned(count * sizeof(float4));
        const size_t key_bytes = elec__alpb_aligned(count * sizeof(unsigned));
        const size_t sets = k.kappa > 0.0 ? 2 : 1; /* P, and P' = v + s n for salt */
        size_t bytes = layout_bytes + sets * point_bytes +
                       elec__alpb_aligned(count * sizeof(float));
        char *next;
        if (sorted)
            bytes += sets * point_bytes + 4 * key_bytes + 2 * elec__alpb_aligned(scratch_bytes);
        /* both streams use it: made and freed device-wide */
        ELEC__CUDA_TRY(elec__cuda_alloc((void **)&d_block, bytes));
        next = d_block + layout_bytes;
        d_points = (float4 *)next;
        d_points_ion = sets == 2 ? d_points + point_bytes / sizeof(float4) : NULL;
        next += sets * point_bytes;
        d_phi = (float *)next;
        next += elec__alpb_aligned(count * sizeof(float));
        if (sorted) {
            d_sorted = (float4 *)next;
            d_sorted_ion = sets == 2 ? d_sorted + point_bytes / sizeof(float4) : NULL;
            next += sets * point_bytes;
            d_code = (unsigned *)next;
            d_code_sorted = (unsigned *)(next + key_bytes);
            d_index = (int *)(next + 2 * key_bytes);
            d_order = (int *)(next + 3 * key_bytes);
            next += 4 * key_bytes;
            d_scratch[0] = next;
            d_scratch[1] = next + elec__alpb_aligned(scratch_bytes);
        }
    }
    ELEC__CUDA_TRY(cudaStreamCreateWithFlags(&streams[0], cudaStreamNonBlocking));
    ELEC__CUDA_TRY(cudaStreamCreateWithFlags(&streams[1], cudaStreamNonBlocking));
    ELEC__CUDA_TRY(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
    if (times) {
        for (int m = 0; m < 3; m++) ELEC__CUDA_TRY(cudaEventCreate(&marks[m]));
        times->allocate = elec__alpb_clock() - mark;
        mark = elec__alpb_clock();
    }

    /* The hierarchy: its levels laid out on the host, its atoms converted
       slice by slice on their way, in one stream; the other waits. */
    elec__alpb_layout_levels(hcp, &r, &k, packed, centre, host_levels, d_block, &dev);
    if (packed && hcp->count[3] + hcp->count[2] <= ELEC__ALPB_TOP_RECORDS)
        shared = 4 * (hcp->count[3] + hcp->count[2]) * sizeof(float4);
    status = elec__alpb_upload_atoms(hcp, packed, centre, (float *)staging, (float *)d_block,
                                     streams[0], err);
    if (status != ELEC_OK) goto cleanup;
    ELEC__CUDA_TRY(cudaMemcpyAsync((float *)d_block + 4 * hcp->count[0], host_levels,
                                   elec__alpb_levels_words(hcp, packed) * sizeof(float),
                                   cudaMemcpyHostToDevice, streams[0]));
    ELEC__CUDA_TRY(cudaEventRecord(ready, streams[0]));
    ELEC__CUDA_TRY(cudaStreamWaitEvent(streams[1], ready, 0));
    if (times) {
        ELEC__CUDA_TRY(cudaStreamSynchronize(streams[0]));
        times->upload = elec__alpb_clock() - mark;
    }

    /* The chunks: c converted, uploaded, sorted and walked on stream c % 2
       while c - 1 comes back (the copy to pageable memory returns once it
       is done). */
    for (size_t c = 0; c <= chunks; c++) {
        if (c < chunks) {
            const size_t first = c * chunk, n = first + chunk <= count ? chunk : count - first;
            const unsigned blocks = (unsigned)((n + ELEC__ALPB_BLOCK - 1) / ELEC__ALPB_BLOCK);
            cudaStream_t stream = streams[c % 2];
            const float4 *P = d_points + first, *P_ion = d_points_ion ? d_points_ion + first : NULL;
            if (times) mark = elec__alpb_clock();
            status = elec__alpb_upload_points(vertices, normals, first, n, r.proj, centre,
                                              staging, d_points + first, stream, err);
            if (status == ELEC_OK && P_ion)
                status = elec__alpb_upload_points(vertices, normals, first, n, r.ion_exclusion,
                                                  centre, staging, d_points_ion + first, stream,
                                                  err);
            if (status != ELEC_OK) goto cleanup;
            if (times) {
                ELEC__CUDA_TRY(cudaStreamSynchronize(stream));
                times->points += elec__alpb_clock() - mark;
                ELEC__CUDA_TRY(cudaEventRecord(marks[0], stream));
            }
            if (sorted) {
                /* Morton order of the chunk's points: codes, CUB's radix
                   sort, then the points (and P') gathered in that order */
                elec__k_alpb_morton<<<blocks, ELEC__ALPB_BLOCK, 0, stream>>>(
                    d_code + first, d_index + first, P, (int)n, box_lo, box_scale);
                ELEC__CUDA_TRY(cudaGetLastError());
                ELEC__CUDA_TRY(cub::DeviceRadixSort::SortPairs(
                    d_scratch[c % 2], scratch_bytes, d_code + first, d_code_sorted + first,
                    d_index + first, d_order + first, (int)n, 0, 30, stream));
                elec__k_alpb_gather<<<blocks, ELEC__ALPB_BLOCK, 0, stream>>>(
                    d_sorted + first, P, d_order + first, (int)n);
                ELEC__CUDA_TRY(cudaGetLastError());
                P = d_sorted + first;
                if (P_ion) {
                    elec__k_alpb_gather<<<blocks, ELEC__ALPB_BLOCK, 0, stream>>>(
                        d_sorted_ion + first, P_ion, d_order + first, (int)n);
                    ELEC__CUDA_TRY(cudaGetLastError());
                    P_ion = d_sorted_ion + first;
                }
            }
            if (times) ELEC__CUDA_TRY(cudaEventRecord(marks[1], stream));
            elec__alpb_dispatch(mode, r.hcp_charges, variant, shared, stream, d_phi + first, P,
                                P_ion, sorted ? d_order + first : NULL, (int)n, dev, a);
            ELEC__CUDA_TRY(cudaGetLastError());
            if (times) {
                float ms;
                ELEC__CUDA_TRY(cudaEventRecord(marks[2], stream));
                ELEC__CUDA_TRY(cudaEventSynchronize(marks[2]));
                ELEC__CUDA_TRY(cudaEventElapsedTime(&ms, marks[0], marks[1]));
                times->sort += 1e-3 * ms;
                ELEC__CUDA_TRY(cudaEventElapsedTime(&ms, marks[1], marks[2]));
                times->kernel += 1e-3 * ms;
            }
        }
        if (c > 0) {
            const size_t first = (c - 1) * chunk;
            const size_t n = first + chunk <= count ? chunk : count - first;
            if (times) mark = elec__alpb_clock();
            ELEC__CUDA_TRY(cudaMemcpyAsync(potential + first, d_phi + first, n * sizeof(float),
                                           cudaMemcpyDeviceToHost, streams[(c - 1) % 2]));
            ELEC__CUDA_TRY(cudaStreamSynchronize(streams[(c - 1) % 2]));
            if (times) times->copy_back += elec__alpb_clock() - mark;
        }
    }
    elec__ok(err);
cleanup:
    if (times) mark = elec__alpb_clock();
    for (int s = 0; s < 2; s++)
        if (streams[s]) {
            cudaStreamSynchronize(streams[s]);
            cudaStreamDestroy(streams[s]);
        }
    if (ready) cudaEventDestroy(ready);
    for (int m = 0; m < 3; m++)
        if (marks[m]) cudaEventDestroy(marks[m]);
    elec__cuda_free_sync(d_block);
    ELEC_FREE(host_levels);
    ELEC_FREE(staging);
    cudaSetDevice(caller_device);
    if (times) {
        times->copy_back += elec__alpb_clock() - mark;
        times->total = elec__alpb_clock() - started;
    }
    return status;
}

/* One region's vertices (elec__points_by_region): the run above, each
   stage's time added to the call's. */
typedef struct elec__cuda_alpb_call {
    const elec_hcp *hcp;
    const elec_alpb_params *params;
    elec__alpb_times *times; /* NULL: not timed */
    int host;                /* the walk on the host (elec_cuda_alpb_host) */
} elec__cuda_alpb_call;

static elec_status elec__cuda_alpb_host_run(const elec_hcp *hcp, const double *vertices,
                                            const double *normals, size_t count,
                                            const elec_alpb_params *params, float *potential,
                                            elec_error *err);

static elec_status elec__cuda_alpb_region(void *call, const double *vertices,
                                          const double *normals, size_t count, float *out,
                                          elec_error *err) {
    const elec__cuda_alpb_call *c = (const elec__cuda_alpb_call *)call;
    elec__alpb_times t, *sum = c->times;
    elec_status status;
    if (c->host)
        return elec__cuda_alpb_host_run(c->hcp, vertices, normals, count, c->params, out, err);
    status = elec__cuda_alpb_region_run(c->hcp, vertices, normals, count, c->params, out,
                                        sum ? &t : NULL, err);
    if (sum) {
        sum->prepare += t.prepare;
        sum->allocate += t.allocate;
        sum->upload += t.upload;
        sum->points += t.points;
        sum->sort += t.sort;
        sum->kernel += t.kernel;
        sum->copy_back += t.copy_back;
        sum->total += t.total;
    }
    return status;
}

/* The GPU's ALPB (host: its walk on the host) for a call whose vertices
   spread wider than one region (elec__box_wide of the box its prepare
   found, the whole call's input checked there): a region at a time, each
   region a call of its own (its atoms and levels uploaded again: fine for a
   few regions, slow for vertices scattered one to a region).  The stage
   times add up the regions' calls; the whole call's prepare and the
   parting are in none of them. */
static elec_status elec__cuda_alpb_parted(const elec_hcp *hcp, const double *vertices,
                                          const double *normals, size_t count,
                                          const elec_alpb_params *params, float *potential,
                                          elec__alpb_times *times, int host,
                                          elec_error *err) {
    elec__cuda_alpb_call call;
    call.hcp = hcp;
    call.params = params;
    call.times = times;
    call.host = host;
    return elec__points_by_region(vertices, normals, count, potential, elec__cuda_alpb_region,
                                  &call, err);
}

/* ALPB over several GPUs (elec__cuda_parts): the vertices in contiguous
   parts, each part's on its device as a call of its own (its regions,
   sort and walks); the first part's stage times where asked. */
typedef struct elec__alpb_parts {
    const elec_hcp *hcp;
    const double *vertices, *normals;
    size_t count;
    const elec_alpb_params *params;
    float *potential;
    elec__alpb_times *times;
} elec__alpb_parts;

static elec_status elec__cuda_alpb_part(void *job, int part, int parts, int device,
                                        elec_error *err) {
    const elec__alpb_parts *j = (const elec__alpb_parts *)job;
    elec_alpb_params on_device = *j->params;
    size_t first, n;
    elec__part_range(j->count, part, parts, &first, &n);
    if (n == 0) return ELEC_OK;
    on_device.gpus.count = 1;
    on_device.gpus.devices = &device;
    return elec__cuda_alpb_region_run(j->hcp, j->vertices + 3 * first,
                                      j->normals ? j->normals + 3 * first : NULL, n, &on_device,
                                      j->potential + first, part == 0 ? j->times : NULL, err);
}

/* The device call where params->gpus may name several GPUs: the whole
   input checked first (a refusal names a vertex by the caller's index),
   then the parts, or the one GPU's call where the set has one. */
static elec_status elec__cuda_alpb_spread(const elec_hcp *hcp, const double *vertices,
                                          const double *normals, size_t count,
                                          const elec_alpb_params *params, float *potential,
                                          elec__alpb_times *times, elec_error *err) {
    elec_alpb_params r;
    elec_alpb_kernel k;
    elec__alpb_parts job;
    double lo[3] = {0.0, 0.0, 0.0}, hi[3] = {0.0, 0.0, 0.0};
    int devices[ELEC__MAX_GPUS], device_count = 0, caller_device = 0;
    const double started = elec__alpb_clock();
    elec_status status = elec__alpb_prepare(hcp, vertices, normals, count, potential, params,
                                            &r, &k, lo, hi, err);
    if (status == ELEC_OK)
        status = elec__cuda_gpu_list(&r.gpus, devices, &device_count, err);
    if (status != ELEC_OK || count == 0) { /* refused, or nothing to do */
        if (status == ELEC_OK) elec__ok(err);
        return status;
    }
    if (device_count < 2)
        return elec__cuda_alpb_region_run(hcp, vertices, normals, count, params, potential,
                                          times, err);
    job.hcp = hcp;
    job.vertices = vertices;
    job.normals = normals;
    job.count = count;
    job.params = params;
    job.potential = potential;
    job.times = times;
    if (cudaGetDevice(&caller_device) != cudaSuccess) caller_device = 0;
    status = elec__cuda_parts(devices, device_count, elec__cuda_alpb_part, &job, err);
    cudaSetDevice(caller_device);
    if (times) times->total = elec__alpb_clock() - started;
    if (status == ELEC_OK) elec__ok(err);
    return status;
}

static elec_status elec__cuda_alpb_run(const elec_hcp *hcp, const double *vertices,
                                       const double *normals, size_t count,
                                       const elec_alpb_params *params, float *potential,
                                       elec__alpb_times *times, int host, elec_error *err) {
    if (host)
        return elec__cuda_alpb_host_run(hcp, vertices, normals, count, params, potential, err);
    if (params && (params->gpus.count > 1 || params->gpus.count == ELEC_ALL_GPUS))
        return elec__cuda_alpb_spread(hcp, vertices, normals, count, params, potential, times,
                                      err);
    return elec__cuda_alpb_region_run(hcp, vertices, normals, count, params, potential, times,
                                      err);
}

/* One vertex's walk by the rung, on the host: P and P_ion the vertex
   (projected, and moved out by the ion-exclusion radius), partner the
   vertex the pairs rung holds beside it. */
template <int MODE, int CHARGES>
static float elec__alpb_host_walk(elec_alpb_variant variant, const elec__alpb_device &layout,
                                  const elec__alpb_call &a, const float4 &P, const float4 &P_ion,
                                  const float4 &partner, const float4 &partner_ion) {
    if (variant == ELEC_ALPB_SIMPLE)
        return elec__alpb_soa_walk<MODE, CHARGES, 1>(layout.soa, a, &P, P_ion);
    if (variant == ELEC_ALPB_PACKED)
        return elec__alpb_packed_walk<MODE, CHARGES>(layout.packed, layout.packed.level[2],
                                                     layout.packed.level[1], a, P, P_ion);
    if (variant == ELEC_ALPB_PAIRS) {
        const float4 pair[2] = {P, partner}, pair_ion[2] = {P_ion, partner_ion};
        float out[2];
        elec__alpb_group_walk<MODE, CHARGES, 2>(layout.packed, layout.packed.level[2],
                                                layout.packed.level[1], a, pair, pair_ion, out);
        return out[0];
    }
    return elec__alpb_soa_walk<MODE, CHARGES, 0>(layout.soa, a, &P, P_ion);
}

/* elec_cuda_alpb_host for one region: the walks of the rung on the host. */
static elec_status elec__cuda_alpb_host_run(const elec_hcp *hcp, const double *vertices,
                                            const double *normals, size_t count,
                                            const elec_alpb_params *params, float *potential,
                                            elec_error *err) {
    elec_status status;
    elec_alpb_params r;
    elec_alpb_kernel k;
    elec__alpb_call a;
    elec__alpb_device layout;
    double lo[3] = {0.0, 0.0, 0.0}, hi[3] = {0.0, 0.0, 0.0}, centre[3];
    float4 *P = NULL, *P_ion = NULL;
    void *host = NULL;
    int packed, general;
    /* the GPU call's checks and reference point (elec.h) */
    status = elec__alpb_prepare(hcp, vertices, normals, count, potential, params, &r, &k, lo,
                                hi, err);
    if (status != ELEC_OK) return status;
    if (count == 0) {
        elec__ok(err);
        return ELEC_OK;
    }
    if (elec__box_wide(lo, hi)) /* checked whole above; floats want it in regions */
        return elec__cuda_alpb_parted(hcp, vertices, normals, count, params, potential, NULL,
                                      1, err);
    packed = elec__alpb_is_packed(r.variant);
    P = (float4 *)ELEC_MALLOC(count * sizeof(float4));
    P_ion = (float4 *)ELEC_MALLOC(count * sizeof(float4));
    host = ELEC_MALLOC(elec__alpb_layout_bytes(hcp, packed));
    if (!P || !P_ion || !host) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no host memory");
        goto cleanup;
    }
    elec__alpb_call_setup(&r, &k, hcp->net_charge, &a);
    for (int axis = 0; axis < 3; axis++) centre[axis] = 0.5 * (lo[axis] + hi[axis]);
    elec__alpb_points(vertices, normals, 0, count, r.proj, centre, P);
    elec__alpb_points(vertices, normals, 0, count, r.ion_exclusion, centre, P_ion);
    memset(&layout, 0, sizeof layout);
    elec__alpb_layout(hcp, &r, &k, packed, centre, host, host, &layout);
    general = elec__alpb_mode(&k) == ELEC__ALPB_GENERAL;
    for (size_t i = 0; i < count; i++) {
        const size_t j = i + 1 < count ? i + 1 : 0;
        potential[i] =
            general ? (r.hcp_charges == 1
                           ? elec__alpb_host_walk<ELEC__ALPB_GENERAL, 1>(
                                 r.variant, layout, a, P[i], P_ion[i], P[j], P_ion[j])
                           : elec__alpb_host_walk<ELEC__ALPB_GENERAL, 2>(
                                 r.variant, layout, a, P[i], P_ion[i], P[j], P_ion[j]))
                    : (r.hcp_charges == 1
                           ? elec__alpb_host_walk<ELEC__ALPB_COULOMB, 1>(
                                 r.variant, layout, a, P[i], P_ion[i], P[j], P_ion[j])
                           : elec__alpb_host_walk<ELEC__ALPB_COULOMB, 2>(
                                 r.variant, layout, a, P[i], P_ion[i], P[j], P_ion[j]));
    }
    elec__ok(err);
cleanup:
    ELEC_FREE(host);
    ELEC_FREE(P);
    ELEC_FREE(P_ion);
    return status;
}

#ifdef __cplusplus
extern "C" {
#endif

ELEC_DEF elec_status elec_cuda_alpb(const elec_hcp *hcp, const double *vertices,
                                    const double *normals, size_t count,
                                    const elec_alpb_params *params, float *potential,
                                    elec_error *err) {
    const elec_status status =
        elec__cuda_alpb_run(hcp, vertices, normals, count, params, potential, NULL, 0, err);
    return status == ELEC_OK ? elec__results_finite("ALPB", "potential at point", potential,
                                                    NULL, count, "float", err)
                             : status;
}

ELEC_DEF elec_status elec_cuda_alpb_host(const elec_hcp *hcp, const double *vertices,
                                         const double *normals, size_t count,
                                         const elec_alpb_params *params, float *potential,
                                         elec_error *err) {
    elec_status status =
        elec__cuda_alpb_run(hcp, vertices, normals, count, params, potential, NULL, 1, err);
    /* as the device calls: finite charges can still sum past float's range
       (1e39 e), which returned inf with ELEC_OK */
    if (status == ELEC_OK)
        status = elec__results_finite("ALPB", "potential at point", potential, NULL, count,
                                      "float", err);
    if (status == ELEC_OK) elec__ok(err);
    return status;
}

ELEC_DEF elec_status elec_cuda_alpb_timed(const elec_hcp *hcp, const double *vertices,
                                          const double *normals, size_t count,
                                          const elec_alpb_params *params, float *potential,
                                          elec_stage_times *times, elec_error *err) {
    static const char *const names[7] = {"prepare", "allocate", "upload",   "points",
                                         "sort",    "kernel",   "copy_back"};
    elec__alpb_times t;
    elec_status status;
    memset(&t, 0, sizeof t);
    status = elec__cuda_alpb_run(hcp, vertices, normals, count, params, potential,
                                 times ? &t : NULL, 0, err);
    if (times) {
        const double seconds[7] = {t.prepare, t.allocate, t.upload,   t.points,
                                   t.sort,    t.kernel,   t.copy_back};
        memset(times, 0, sizeof *times);
        for (int m = 0; m < 7; m++) {
            times->name[m] = names[m];
            times->seconds[m] = seconds[m];
        }
        times->count = 7;
        times->total = t.total;
    }
    return status == ELEC_OK ? elec__results_finite("ALPB", "potential at point", potential,
                                                    NULL, count, "float", err)
                             : status;
}

#ifdef __cplusplus
}
#endif


#endif /* ELEC_CUDA_IMPLEMENTATION_DONE */
#endif /* ELEC_CUDA_IMPLEMENTATION */
