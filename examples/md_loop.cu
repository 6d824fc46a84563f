/* md_loop - GPU electrostatics in an MD loop, integrated by velocity Verlet.

   Two systems, either periodic method, the forces computed every step by
   the device-pointer handles: coordinates, velocities and forces never
   leave the GPU inside the loop.

     nacl   1000 ions (Na+, Cl-) in a periodic cube at about the density of
            molten NaCl, a short-range repulsion B/r^12 that puts the Na-Cl
            minimum near 2.8 A; 1 fs steps.  The first tenth of the steps
            lets the stretched crystal melt and relax.
     water  1000 SPC/E molecules (3000 atoms, charges -0.8476 / +0.4238),
            flexible: harmonic O-H bonds and H-O-H angles about SPC/E's
            geometry (1 A, 109.47 degrees) with SPC/Fw's force constants
            (Wu, Tepper and Voth 2006), Lennard-Jones between oxygens
            (SPC/E's sigma and epsilon, shifted so that force and energy
            vanish at 9 A); each molecule's three pairs are the handle's
            excluded pairs (their Coulomb term left out, as bonded
            neighbours are in MD codes); 0.5 fs steps.  The first tenth of
            the steps rescales velocities to 300 K every 10 steps.
     --method spme  smooth particle mesh Ewald (elec_cuda_spme_*): cutoff
                    9 A, alpha, order and grid from a tolerance of 1e-5
                    (order 4 cannot reach it for molten salt at 9 A)
     --method msm   periodic multilevel summation
                    (elec_cuda_msm_periodic_*): MSM's defaults (a 12 A,
                    h 2 A, C1 cubic, C2 splitting)

   After the first tenth the total energy is sampled every 10 steps and its
   drift is the slope of a least-squares line through the samples (printed
   every 100 steps).  Small drift over thousands of steps shows that the
   forces are the gradient of the energy.

   md_loop [--system nacl|water] [--method spme|msm] [--steps N] [--dt fs]
   (defaults: nacl, spme, 4000 steps, 1 fs for nacl and 0.5 fs for water;
   the older md_loop [steps] [timestep_fs] still works) */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cuda.cuh"
#include "tests/systems.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Water's Lennard-Jones between oxygens (atoms 0, 3, 6, ...), minimum
   image, shifted so that energy and force vanish at the cutoff:
   E(r) = V(r) - V(rc) - (r - rc) V'(rc), V = 4 eps ((s/r)^12 - (s/r)^6). */
/* Deliberate pair (a scan for repeated blocks lists it): repulsion's loop above
   with the shifted-force Lennard-Jones of SPC/E's oxygens: each kernel short and whole. */
__global__ void oxygens_lj(const float4 *xyzq, float *forces, double *energy, int molecules,
                           float3 box, float sigma, float epsilon, float cutoff) {
    int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= molecules) return;
    float4 a = xyzq[3 * m];
    float fx = 0.0f, fy = 0.0f, fz = 0.0f, e = 0.0f;
    float s2 = sigma * sigma, rc2 = cutoff * cutoff;
    float sc6 = s2 * s2 * s2 / (rc2 * rc2 * rc2), sc12 = sc6 * sc6;
    float v_rc = 4.0f * epsilon * (sc12 - sc6);
    float dv_rc = -4.0f * epsilon * (12.0f * sc12 - 6.0f * sc6) / cutoff; /* V'(rc) */
    for (int k = 0; k < molecules; k++) {
        if (k == m) continue;
        float4 c = xyzq[3 * k];
        float dx = a.x - c.x, dy = a.y - c.y, dz = a.z - c.z;
        dx -= box.x * rintf(dx / box.x);
        dy -= box.y * rintf(dy / box.y);
        dz -= box.z * rintf(dz / box.z);
        float r2 = dx * dx + dy * dy + dz * dz;
        if (r2 >= rc2) continue;
        float r = sqrtf(r2), q6 = s2 * s2 * s2 / (r2 * r2 * r2), q12 = q6 * q6;
        e += 4.0f * epsilon * (q12 - q6) - v_rc - (r - cutoff) * dv_rc;
        float f = (4.0f * epsilon * (12.0f * q12 - 6.0f * q6) / r + dv_rc) / r; /* -dE/dr / r */
        fx += f * dx;
        fy += f * dy;
        fz += f * dz;
    }
    forces[9 * m] += fx;
    forces[9 * m + 1] += fy;
    forces[9 * m + 2] += fz;
    atomicAdd(energy, 0.5 * (double)e);
}

/* Water's bonded terms, one thread per molecule (O, H1, H2): bonds
   kb/2 (r - r0)^2 and the angle ka/2 (theta - theta0)^2, with
   d theta / d u = -(v/(|u||v|) - cos theta u/|u|^2) / sin theta for
   u = H1 - O, v = H2 - O. */
__global__ void water_bonded(const float4 *xyzq, float *forces, double *energy, int molecules,
                             float kb, float r0, float ka, float theta0) {
    int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= molecules) return;
    float4 o = xyzq[3 * m], h1 = xyzq[3 * m + 1], h2 = xyzq[3 * m + 2];
    float u[3] = {h1.x - o.x, h1.y - o.y, h1.z - o.z};
    float v[3] = {h2.x - o.x, h2.y - o.y, h2.z - o.z};
    float lu = sqrtf(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
    float lv = sqrtf(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    float cosine = (u[0] * v[0] + u[1] * v[1] + u[2] * v[2]) / (lu * lv);
    cosine = fminf(1.0f, fmaxf(-1.0f, cosine));
    float theta = acosf(cosine), sine = fmaxf(sqrtf(1.0f - cosine * cosine), 1e-6f);
    float fu = -kb * (lu - r0) / lu, fv = -kb * (lv - r0) / lv; /* bond forces / length */
    float g = ka * (theta - theta0) / sine;                      /* -dE/dtheta / -sin */
    float f1[3], f2[3];
    for (int k = 0; k < 3; k++) {
        f1[k] = fu * u[k] + g * (v[k] / (lu * lv) - cosine * u[k] / (lu * lu));
        f2[k] = fv * v[k] + g * (u[k] / (lu * lv) - cosine * v[k] / (lv * lv));
        forces[9 * m + 3 + k] += f1[k];
        forces[9 * m + 6 + k] += f2[k];
        forces[9 * m + k] -= f1[k] + f2[k];
    }
    atomicAdd(energy, (double)(0.5f * kb * ((lu - r0) * (lu - r0) + (lv - r0) * (lv - r0)) +
                               0.5f * ka * (theta - theta0) * (theta - theta0)));
}

/* v *= factor (velocity rescaling while equilibrating). */
__global__ void rescale(float3 *velocity, int n, float factor) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    velocity[i].x *= factor;
    velocity[i].y *= factor;
    velocity[i].z *= factor;
}

/* The electrostatics of the loop: one handle of either method. */
typedef struct electrostatics {
    int msm;
    elec_cuda_spme_handle *spme;
    elec_cuda_msm_periodic_handle *pmsm;
} electrostatics;

static void electrostatics_compute(electrostatics *e, const float4 *d_xyzq, int n,
                                   float *d_forces, cudaStream_t stream) {
    elec_error err;
    if (e->msm)
        ELEC_CHECK(elec_cuda_msm_periodic_compute(e->pmsm, d_xyzq, (size_t)n, d_forces, stream,
                                                  &err));
    else
        ELEC_CHECK(elec_cuda_spme_compute(e->spme, d_xyzq, (size_t)n, d_forces, stream, &err));
}

static double electrostatics_energy(electrostatics *e, cudaStream_t stream) {
    elec_error err;
    double energy = 0.0;
    if (e->msm) {
        ELEC_CHECK(elec_cuda_msm_periodic_energy(e->pmsm, &energy, stream, &err));
    } else {
        elec_ewald_terms t;
        ELEC_CHECK(elec_cuda_spme_energy(e->spme, &t, stream, &err));
        energy = t.total;
    }
    return energy;
}

/* The real-space neighbour list's builds so far; -1 where the handle has
   none (periodic MSM's short range on its cell list, in a small box). */
static long long electrostatics_builds(electrostatics *e, cudaStream_t stream) {
    elec_error err;
    elec_spme_list_stats stats;
    elec_status status = e->msm ? elec_cuda_msm_periodic_list_stats(e->pmsm, &stats, stream, &err)
                                : elec_cuda_spme_list_stats(e->spme, &stats, stream, &err);
    if (e->msm && status == ELEC_ERR_UNSUPPORTED) return -1;
    ELEC_CHECK(status);
    return stats.rebuilds;
}

static void usage(void) {
    fprintf(stderr, "usage: md_loop [--system nacl|water] [--method spme|msm] [--steps N >= 100] "
                    "[--dt fs > 0]\n");
    exit(2);
}

int main(int argc, char **argv) {
    const int cells = 5;                                      /* NaCl: 1000 ions */
    const double r0 = 2.8, edge_nacl = 31.5;                  /* A */
    const double b = ELEC_COULOMB * pow(r0, 11.0) / 12.0;     /* minimum at r0 */
    const double masses[2] = {22.98977, 35.453};
    const int molecules = 1000;                               /* water */
    static const double fcc[4][3] = {{0, 0, 0}, {0, .5, .5}, {.5, 0, .5}, {.5, .5, 0}};
    int water = 0, steps = 4000, positional = 0, n;
    float dt = 0.0f;
    double temperature, edge;
    electrostatics es = {0, NULL, NULL};
    for (int k = 1; k < argc; k++) {
        if (!strcmp(argv[k], "--system") && k + 1 < argc) {
            k++;
            if (!strcmp(argv[k], "water")) water = 1;
            else if (strcmp(argv[k], "nacl")) usage();
        } else if (!strcmp(argv[k], "--method") && k + 1 < argc) {
            k++;
            if (!strcmp(argv[k], "msm")) es.msm = 1;
            else if (strcmp(argv[k], "spme")) usage();
        } else if (!strcmp(argv[k], "--steps") && k + 1 < argc) {
            steps = atoi(argv[++k]);
        } else if (!strcmp(argv[k], "--dt") && k + 1 < argc) {
            dt = (float)atof(argv[++k]);
        } else if (argv[k][0] != '-' && positional == 0) {
            steps = atoi(argv[k]);
            positional++;
        } else if (argv[k][0] != '-' && positional == 1) {
            dt = (float)atof(argv[k]);
            positional++;
        } else {
            usage();
        }
    }
    if (dt == 0.0f) dt = water ? 0.5f : 1.0f;
    if (steps < 100 || !(dt > 0.0f)) usage();
    if (elec_cuda_device_count() == 0) {
        fprintf(stderr, "md_loop: no CUDA device\n");
        return 1;
    }
    n = water ? 3 * molecules : 8 * cells * cells * cells;
    temperature = water ? 300.0 : 1300.0;
    float4 *xyzq = (float4 *)malloc(n * sizeof *xyzq);
    float3 *vel = (float3 *)malloc(n * sizeof *vel);
    float *inverse_mass = (float *)malloc(n * sizeof *inverse_mass);
    size_t *pairs = NULL, pair_count = 0;
    float4 *d_xyzq;
    float3 *d_vel;
    float *d_forces, *d_inverse_mass;
    double *d_energy, sum_t = 0.0, sum_e = 0.0, sum_tt = 0.0, sum_te = 0.0, sum_ee = 0.0,
                      momentum[3] = {0, 0, 0}, total_mass = 0.0;
    elec_error err;
    cudaStream_t stream;
    unsigned long long rng = 7;
    int i = 0, step, samples = 0;
    const int equilibration = steps / 10;

    if (water) {
        /* SPC/E molecules on a jittered grid at liquid density, turned at
           random (tests/systems.h), O H H consecutive */
        test_system w = test_system_water((size_t)molecules, 11);
        edge = w.box[0];
        for (i = 0; i < n; i++) {
            xyzq[i] = make_float4((float)w.xyz[3 * i], (float)w.xyz[3 * i + 1],
                                  (float)w.xyz[3 * i + 2], (float)w.charge[i]);
            inverse_mass[i] = (float)(1.0 / (i % 3 == 0 ? 15.9994 : 1.00794));
        }
        test_system_free(&w);
        pairs = test_water_exclusions((size_t)molecules);
        pair_count = 3 * (size_t)molecules;
    } else {
        /* Rock salt with a stretched lattice constant, melted by the heat. */
        const double a = edge_nacl / cells;
        edge = edge_nacl;
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

    elec_box box = {{edge, edge, edge}};
    {
        elec_atoms start = elec_atoms_from_xyzq_float((size_t)n, (const float *)xyzq);
        if (es.msm) {
            elec_msm_params p = {0}, chosen;
            p.scale = ELEC_COULOMB; /* kcal/mol and kcal/(mol A) */
            p.excluded_pairs = pairs;
            p.excluded_pair_count = pair_count;
            ELEC_CHECK(elec_cuda_msm_periodic_create(&box, &start, &p, &es.pmsm, &err));
            ELEC_CHECK(elec_cuda_msm_periodic_params(es.pmsm, &chosen, &err));
            printf("md_loop: periodic MSM: cutoff %.1f A, spacing %.1f A, interpolation order "
                   "%d, splitting C%d\n", chosen.cutoff, chosen.spacing,
                   2 * elec_msm_support((int)chosen.interpolation), chosen.splitting);
        } else {
            elec_spme_params p = {0}, chosen;
            p.scale = ELEC_COULOMB;
            p.cutoff = 9.0;
            p.tolerance = 1e-5;
            p.excluded_pairs = pairs;
            p.excluded_pair_count = pair_count;
            /* the tolerance chooses alpha, the order and the grid from the
               starting atoms */
            ELEC_CHECK(elec_cuda_spme_create(&box, &start, &p, &es.spme, &err));
            ELEC_CHECK(elec_cuda_spme_params(es.spme, &chosen, &err));
            printf("md_loop: SPME tolerance %.0e (relative RMS force error): alpha %.4f /A, "
                   "grid %d x %d x %d, cutoff 9 A, order %d, estimated error %.1e\n",
                   chosen.tolerance, chosen.alpha, chosen.grid[0], chosen.grid[1],
                   chosen.grid[2], chosen.order, chosen.estimate.force);
        }
    }

    const int threads = 128, blocks = (n + threads - 1) / threads;
    const int molecule_blocks = (molecules + threads - 1) / threads;
    const float3 box3 = make_float3((float)edge, (float)edge, (float)edge);
    const double pi = 3.14159265358979323846;
    if (water)
        printf("md_loop: %d flexible SPC/E waters (%d atoms, %zu excluded pairs), %.2f A box, "
               "%d steps of %.2f fs, %s\n", molecules, n, pair_count, edge, steps, dt,
               es.msm ? "periodic MSM" : "SPME");
    else
        printf("md_loop: %d ions (Na+ Cl-), %.1f A box, %d steps of %.2f fs, %s\n", n, edge,
               steps, dt, es.msm ? "periodic MSM" : "SPME");
    printf("%8s %14s %14s %14s %9s\n", "step", "potential", "kinetic", "total", "T (K)");

#define FORCES()                                                                              \
    do {                                                                                      \
        CHECK(cudaMemsetAsync(d_energy, 0, 2 * sizeof *d_energy, stream));                    \
        electrostatics_compute(&es, d_xyzq, n, d_forces, stream);                             \
        if (water) {                                                                          \
            oxygens_lj<<<molecule_blocks, threads, 0, stream>>>(d_xyzq, d_forces, d_energy,   \
                                                                molecules, box3, 3.166f,      \
                                                                0.1553f, 9.0f);               \
            CHECK(cudaGetLastError());                                                        \
            water_bonded<<<molecule_blocks, threads, 0, stream>>>(                            \
                d_xyzq, d_forces, d_energy, molecules, 1059.162f, 1.0f, 75.90f,               \
                (float)(109.47 * pi / 180.0));                                                \
        } else {                                                                              \
            repulsion<<<blocks, threads, 0, stream>>>(d_xyzq, d_forces, d_energy, n, box3,    \
                                                      (float)b, 9.0f);                        \
        }                                                                                     \
        CHECK(cudaGetLastError());                                                            \
    } while (0)

    FORCES(); /* at the start */
    for (step = 0; step <= steps; step++) {
        if (step % 10 == 0 || step == steps) {
            double e[2];
            kinetic<<<blocks, threads, 0, stream>>>(d_vel, d_inverse_mass, d_energy + 1, n);
            CHECK(cudaGetLastError());
            double electrostatic = electrostatics_energy(&es, stream);
            CHECK(cudaMemcpy(e, d_energy, sizeof e, cudaMemcpyDeviceToHost));
            double potential = electrostatic + e[0], total = potential + e[1];
            double kelvin = 2.0 * e[1] / (3.0 * n * KB);
            if (step >= equilibration) { /* least-squares sums over (time, E) */
                double time = step * dt * 1e-6; /* ns */
                samples++;
                sum_t += time;
                sum_e += total;
                sum_tt += time * time;
                sum_te += time * total;
                sum_ee += total * total;
            } else if (water && kelvin > 0.0) { /* to 300 K while equilibrating */
                rescale<<<blocks, threads, 0, stream>>>(d_vel, n,
                                                        (float)sqrt(temperature / kelvin));
                CHECK(cudaGetLastError());
            }
            if (step % 100 == 0 || step == steps) {
                printf("%8d %14.4f %14.4f %14.4f %9.1f%s\n", step, potential, e[1], total,
                       kelvin, step < equilibration ? (water ? "  (to 300 K)" : "  (melting)")
                                                    : "");
                fflush(stdout);
            }
        }
        if (step == steps) break;
        /* velocity Verlet: kick, drift, new forces, kick */
        verlet<<<blocks, threads, 0, stream>>>(d_xyzq, d_vel, d_forces, d_inverse_mass, n, dt, 1);
        CHECK(cudaGetLastError());
        FORCES();
        verlet<<<blocks, threads, 0, stream>>>(d_xyzq, d_vel, d_forces, d_inverse_mass, n, dt, 0);
        CHECK(cudaGetLastError());
    }
    {
        double mean = sum_e / samples;
        double slope = (samples * sum_te - sum_t * sum_e) / (samples * sum_tt - sum_t * sum_t);
        double spread = sqrt(fmax(sum_ee / samples - mean * mean, 0.0));
        printf("%s, %s: after %d steps of %s, over %.1f ps: total energy %.4f kcal/mol, "
               "fluctuation %.4f (RMS, %.1e relative), drift %+.3f kcal/mol/ns "
               "(%+.2e kcal/mol per atom per ns)\n",
               water ? "water" : "NaCl", es.msm ? "MSM" : "SPME", equilibration,
               water ? "equilibration" : "melting", (steps - equilibration) * dt * 1e-3, mean,
               spread, spread / fabs(mean), slope, slope / n);
    }
    {
        /* the list is rebuilt once an atom has moved half its skin: how
           often that came in this run */
        long long builds = electrostatics_builds(&es, stream);
        if (builds < 0)
            printf("real space: periodic MSM's cell list (the box is too small for the "
                   "neighbour list)\n");
        else
            printf("real space: the neighbour list built %lld times over %d steps (one build "
                   "every %.1f steps)\n", builds, steps, builds > 0 ? (double)steps / builds : 0.0);
    }
    elec_cuda_spme_destroy(es.spme);
    elec_cuda_msm_periodic_destroy(es.pmsm);
    cudaFree(d_xyzq);
    cudaFree(d_vel);
    cudaFree(d_forces);
    cudaFree(d_inverse_mass);
    cudaFree(d_energy);
    cudaStreamDestroy(stream);
    free(xyzq);
    free(vel);
    free(inverse_mass);
    free(pairs);
    return 0;
}
