/* md_loop - molten salt with GPU SPME forces, integrated by velocity Verlet.

   1000 ions (Na+, Cl-) in a periodic cube at about the density of molten
   NaCl, a short-range repulsion B/r^12 that puts the Na-Cl minimum near
   2.8 A, and SPME electrostatics computed every step by the device-pointer
   API: coordinates, velocities and forces never leave the GPU inside the
   loop.  The first tenth of the steps lets the stretched crystal melt and
   relax; after it, the total energy is sampled every 10 steps and its drift
   is the slope of a least-squares line through the samples (printed every
   100 steps).  Small drift over thousands of steps shows that the forces
   are the gradient of the energy.

   md_loop [steps] [timestep_fs]     (default 4000 steps of 1 fs) */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cuda.cuh"

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                          \
    do {                                                                     \
        cudaError_t e_ = (call);                                             \
        if (e_ != cudaSuccess) {                                             \
            fprintf(stderr, "md_loop: %s: %s\n", #call, cudaGetErrorString(e_)); \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

#define ELEC_CHECK(call)                                                     \
    do {                                                                     \
        if ((call) != ELEC_OK) {                                             \
            fprintf(stderr, "md_loop: %s: %s\n", #call, err.message);        \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* kcal/(mol A amu) in A/fs^2: 4184 J/kcal / (1e-3 kg/mol) * 1e-20 A^2/m^2 ... */
#define ACCEL_UNIT 4.184e-4
/* Boltzmann constant in kcal/(mol K) */
#define KB 1.987204259e-3

/* Repulsion B/r^12 between every pair within the cutoff (minimum image),
   shifted to zero at the cutoff; one thread per atom, each pair seen from
   both sides, so the energy counts half. */
__global__ void repulsion(const float4 *xyzq, float *forces, double *energy,
                          int n, float3 box, float b, float cutoff) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float4 a = xyzq[i];
    float fx = 0.0f, fy = 0.0f, fz = 0.0f, e = 0.0f;
    float rc2 = cutoff * cutoff, shift = b / (rc2 * rc2 * rc2 * rc2 * rc2 * rc2);
    for (int j = 0; j < n; j++) {
        if (j == i) continue;
        float4 c = xyzq[j];
        float dx = a.x - c.x, dy = a.y - c.y, dz = a.z - c.z;
        dx -= box.x * rintf(dx / box.x);
        dy -= box.y * rintf(dy / box.y);
        dz -= box.z * rintf(dz / box.z);
        float r2 = dx * dx + dy * dy + dz * dz;
        if (r2 >= rc2) continue;
        float inv2 = 1.0f / r2, inv6 = inv2 * inv2 * inv2, inv12 = inv6 * inv6;
        e += b * inv12 - shift;
        float f = 12.0f * b * inv12 * inv2; /* -dE/dr / r */
        fx += f * dx;
        fy += f * dy;
        fz += f * dz;
    }
    forces[3 * i] += fx;
    forces[3 * i + 1] += fy;
    forces[3 * i + 2] += fz;
    atomicAdd(energy, 0.5 * (double)e);
}

/* Half a kick and, when drift is set, a full drift: v += a dt/2; x += v dt. */
__global__ void verlet(float4 *xyzq, float3 *velocity, const float *forces,
                       const float *inverse_mass, int n, float dt, int drift) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float s = 0.5f * dt * (float)ACCEL_UNIT * inverse_mass[i];
    float3 v = velocity[i];
    v.x += s * forces[3 * i];
    v.y += s * forces[3 * i + 1];
    v.z += s * forces[3 * i + 2];
    velocity[i] = v;
    if (drift) {
        xyzq[i].x += v.x * dt;
        xyzq[i].y += v.y * dt;
        xyzq[i].z += v.z * dt;
    }
}

__global__ void kinetic(const float3 *velocity, const float *inverse_mass,
                        double *energy, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float3 v = velocity[i];
    /* (1/2) m v^2 in amu A^2/fs^2, to kcal/mol */
    atomicAdd(energy, 0.5 * (double)(v.x * v.x + v.y * v.y + v.z * v.z) /
                          inverse_mass[i] / ACCEL_UNIT);
}

static double gaussian(unsigned long long *state) {
    double u1, u2;
    do {
        *state ^= *state >> 12; *state ^= *state << 25; *state ^= *state >> 27;
        u1 = (double)((*state * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
    } while (u1 <= 0.0);
    *state ^= *state >> 12; *state ^= *state << 25; *state ^= *state >> 27;
    u2 = (double)((*state * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

int main(int argc, char **argv) {
    const int cells = 5, n = 8 * cells * cells * cells;       /* 1000 ions */
    const double temperature = 1300.0, r0 = 2.8;              /* K, A */
    const double edge = 31.5, a = edge / cells;               /* ~molten density */
    const double b = ELEC_COULOMB * pow(r0, 11.0) / 12.0;     /* minimum at r0 */
    const int steps = argc > 1 ? atoi(argv[1]) : 4000;
    const float dt = argc > 2 ? (float)atof(argv[2]) : 1.0f;  /* fs */
    const double masses[2] = {22.98977, 35.453};
    static const double fcc[4][3] = {{0, 0, 0}, {0, .5, .5}, {.5, 0, .5}, {.5, .5, 0}};
    float4 *xyzq = (float4 *)malloc(n * sizeof *xyzq);
    float3 *vel = (float3 *)malloc(n * sizeof *vel);
    float *inverse_mass = (float *)malloc(n * sizeof *inverse_mass);
    float4 *d_xyzq;
    float3 *d_vel;
    float *d_forces, *d_inverse_mass;
    double *d_energy, sum_t = 0.0, sum_e = 0.0, sum_tt = 0.0, sum_te = 0.0, sum_ee = 0.0, momentum[3] = {0, 0, 0}, total_mass = 0.0;
    elec_box box = {{edge, edge, edge}};
    elec_spme_params p = {0};
    elec_cuda_spme_handle *spme = NULL;
    elec_error err;
    cudaStream_t stream;
    unsigned long long rng = 7;
    int i = 0, step, samples = 0;

    const int equilibration = steps / 10;
    if (steps < 100 || !(dt > 0.0f)) {
        fprintf(stderr, "usage: md_loop [steps >= 100] [timestep_fs > 0]\n");
        return 2;
    }
    if (elec_cuda_device_count() == 0) {
        fprintf(stderr, "md_loop: no CUDA device\n");
        return 1;
    }
    /* Rock salt with a stretched lattice constant, melted by the heat. */
    for (int cz = 0; cz < cells; cz++)
        for (int cy = 0; cy < cells; cy++)
            for (int cx = 0; cx < cells; cx++)
                for (int site = 0; site < 4; site++)
                    for (int kind = 0; kind < 2; kind++, i++) {
                        xyzq[i].x = (float)((cx + fcc[site][0] + 0.5 * kind) * a);
                        xyzq[i].y = (float)((cy + fcc[site][1]) * a);
                        xyzq[i].z = (float)((cz + fcc[site][2]) * a);
                        xyzq[i].w = kind == 0 ? 1.0f : -1.0f;
                        inverse_mass[i] = (float)(1.0 / masses[kind]);
                    }
    /* Maxwell-Boltzmann velocities (A/fs), net momentum removed. */
    for (i = 0; i < n; i++) {
        double m = 1.0 / inverse_mass[i];
        double sigma = sqrt(KB * temperature / m * ACCEL_UNIT);
        vel[i] = make_float3((float)(sigma * gaussian(&rng)), (float)(sigma * gaussian(&rng)),
                             (float)(sigma * gaussian(&rng)));
        momentum[0] += m * vel[i].x;
        momentum[1] += m * vel[i].y;
        momentum[2] += m * vel[i].z;
        total_mass += m;
    }
    for (i = 0; i < n; i++) {
        vel[i].x -= (float)(momentum[0] / total_mass);
        vel[i].y -= (float)(momentum[1] / total_mass);
        vel[i].z -= (float)(momentum[2] / total_mass);
    }

    CHECK(cudaStreamCreate(&stream));
    CHECK(cudaMalloc(&d_xyzq, n * sizeof *d_xyzq));
    CHECK(cudaMalloc(&d_vel, n * sizeof *d_vel));
    CHECK(cudaMalloc(&d_forces, 3 * n * sizeof *d_forces));
    CHECK(cudaMalloc(&d_inverse_mass, n * sizeof *d_inverse_mass));
    CHECK(cudaMalloc(&d_energy, 2 * sizeof *d_energy));
    CHECK(cudaMemcpy(d_xyzq, xyzq, n * sizeof *xyzq, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_vel, vel, n * sizeof *vel, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_inverse_mass, inverse_mass, n * sizeof *inverse_mass,
                     cudaMemcpyHostToDevice));

    p.scale = ELEC_COULOMB;   /* kcal/mol and kcal/(mol A) */
    p.cutoff = 9.0;
    p.tolerance = 1e-5;
    p.order = 4;
    {
        /* the tolerance chooses alpha and the grid from the starting ions */
        elec_atoms start = elec_atoms_from_xyzq_float((size_t)n, (const float *)xyzq);
        elec_spme_params chosen;
        ELEC_CHECK(elec_cuda_spme_create(&box, &start, &p, &spme, &err));
        ELEC_CHECK(elec_cuda_spme_params(spme, &chosen, &err));
        printf("md_loop: SPME tolerance %.0e (relative RMS force error): alpha %.4f /A, "
               "grid %d x %d x %d, estimated error %.1e\n", chosen.tolerance, chosen.alpha,
               chosen.grid[0], chosen.grid[1], chosen.grid[2], chosen.estimate.force);
    }

    const int threads = 128, blocks = (n + threads - 1) / threads;
    const float3 box3 = make_float3((float)edge, (float)edge, (float)edge);
    printf("md_loop: %d ions (Na+ Cl-), %.1f A box, %d steps of %.2f fs, SPME order 4, "
           "cutoff 9 A\n", n, edge, steps, dt);
    printf("%8s %14s %14s %14s %9s\n", "step", "potential", "kinetic", "total", "T (K)");

    /* Forces at the start. */
    CHECK(cudaMemsetAsync(d_energy, 0, 2 * sizeof *d_energy, stream));
    ELEC_CHECK(elec_cuda_spme_compute(spme, d_xyzq, n, d_forces, stream, &err));
    repulsion<<<blocks, threads, 0, stream>>>(d_xyzq, d_forces, d_energy, n, box3, (float)b, 9.0f);
    CHECK(cudaGetLastError());
    for (step = 0; step <= steps; step++) {
        if (step % 10 == 0 || step == steps) {
            elec_ewald_terms t;
            double e[2];
            kinetic<<<blocks, threads, 0, stream>>>(d_vel, d_inverse_mass, d_energy + 1, n);
            CHECK(cudaGetLastError());
            ELEC_CHECK(elec_cuda_spme_energy(spme, &t, stream, &err));
            CHECK(cudaMemcpy(e, d_energy, sizeof e, cudaMemcpyDeviceToHost));
            double potential = t.total + e[0], total = potential + e[1];
            if (step >= equilibration) { /* least-squares sums over (time, E) */
                double time = step * dt * 1e-6; /* ns */
                samples++;
                sum_t += time;
                sum_e += total;
                sum_tt += time * time;
                sum_te += time * total;
                sum_ee += total * total;
            }
            if (step % 100 == 0 || step == steps) {
                printf("%8d %14.4f %14.4f %14.4f %9.1f%s\n", step, potential, e[1], total,
                       2.0 * e[1] / (3.0 * n * KB), step < equilibration ? "  (melting)" : "");
                fflush(stdout);
            }
        }
        if (step == steps) break;
        /* velocity Verlet: kick, drift, new forces, kick */
        verlet<<<blocks, threads, 0, stream>>>(d_xyzq, d_vel, d_forces, d_inverse_mass, n, dt, 1);
        CHECK(cudaGetLastError());
        CHECK(cudaMemsetAsync(d_energy, 0, 2 * sizeof *d_energy, stream));
        ELEC_CHECK(elec_cuda_spme_compute(spme, d_xyzq, n, d_forces, stream, &err));
        repulsion<<<blocks, threads, 0, stream>>>(d_xyzq, d_forces, d_energy, n, box3, (float)b, 9.0f);
        CHECK(cudaGetLastError());
        verlet<<<blocks, threads, 0, stream>>>(d_xyzq, d_vel, d_forces, d_inverse_mass, n, dt, 0);
        CHECK(cudaGetLastError());
    }
    {
        double mean = sum_e / samples;
        double slope = (samples * sum_te - sum_t * sum_e) / (samples * sum_tt - sum_t * sum_t);
        double spread = sqrt(fmax(sum_ee / samples - mean * mean, 0.0));
        printf("after %d steps of melting, over %.1f ps: total energy %.4f kcal/mol, "
               "fluctuation %.4f (RMS, %.1e relative), drift %+.3f kcal/mol/ns "
               "(%+.2e kcal/mol per atom per ns)\n",
               equilibration, (steps - equilibration) * dt * 1e-3, mean, spread,
               spread / fabs(mean), slope, slope / n);
    }
    elec_cuda_spme_destroy(spme);
    cudaFree(d_xyzq);
    cudaFree(d_vel);
    cudaFree(d_forces);
    cudaFree(d_inverse_mass);
    cudaFree(d_energy);
    cudaStreamDestroy(stream);
    free(xyzq);
    free(vel);
    free(inverse_mass);
    return 0;
}
