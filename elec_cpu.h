/* elec_cpu.h - molecular electrostatics on the CPU.  C99, also C++.

   Every method in two precisions: a double-precision reference (the truth
   the tests hold every other path to) and a fast float path (float terms,
   double accumulation, OpenMP threads when the compiler has -fopenmp).

   Do this in exactly one C or C++ file (with ELEC_IMPLEMENTATION, or define
   ELEC_ALL_IMPLEMENTATION for all headers at once):
       #define ELEC_CPU_IMPLEMENTATION
       #include "elec_cpu.h"

   Quick start: the potential of two charges on a 33^3 lattice, in
   kcal/(mol e) (tests/test_docs.sh compiles it).

       double xyz[6] = {0, 0, 0,  3, 0, 0}, q[2] = {1, -1};
       elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL);
       elec_lattice lat = {{33, 33, 33}, {-8, -8, -8}, {0.5, 0.5, 0.5}};
       elec_dcs_params p = {0};
       float *map = (float *)malloc(elec_lattice_size(&lat) * sizeof *map);
       elec_error err;
       p.scale = ELEC_COULOMB;
       if (elec_cpu_dcs_map(&atoms, &lat, &p, map, &err) != ELEC_OK)
           fprintf(stderr, "%s\n", err.message);
       free(map);

   Atoms closer than ELEC_COINCIDENT_DISTANCE to a point are left out of that
   point's sum (elec.h).  Outputs are caller-owned arrays of
   elec_lattice_size() values for maps, of point_count values for points.

   Contents (tools/contents.sh; ">>tag" finds a section in all three headers):
     >>common   what every method shares
     >>dcs      DCS: direct Coulomb summation
                elec_cpu_dcs_map elec_cpu_dcs_map_double elec_cpu_dcs_points
                elec_cpu_dcs_points_double elec_cpu_coulomb_energy
     >>mdh      MDH: multiple Debye-Hueckel
                elec_cpu_mdh_points elec_cpu_mdh_points_double
     >>cutoff   cutoff maps
                elec_cpu_cutoff_map elec_cpu_cutoff_map_double
     >>msm      MSM: multilevel summation
                elec_cpu_msm_map elec_cpu_msm_points elec_cpu_msm_energy
                elec_cpu_msm_lattices elec_cpu_msm_periodic_energy
     >>ewald    Ewald: the exact periodic sum
                elec_cpu_ewald elec_cpu_ewald_forces_at
     >>spme     SPME: smooth particle mesh Ewald
                elec_cpu_spme
     >>charges  charge mapping
                elec_cpu_chargemap elec_cpu_chargemap_double
     >>alpb     ALPB surface potentials, HCP
                elec_cpu_alpb elec_cpu_alpb_double
     >>slab     sub-lattices for distributed maps
                elec_cpu_msm_map_slab
   (end of contents) */
#ifndef ELEC_CPU_H
#define ELEC_CPU_H

#include "elec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* --------------------------------------------------- >>common what every method shares */

/* Atoms are checked (elec_atoms_check) and copied from the caller's view,
   relative to a reference point (the centre of the lattice or of the
   points, or of each 1024 A box of either where they span more; wrapped
   into the box for the periodic methods); long calls
   report progress between blocks of work and may be cancelled.  What a
   call wrote is checked last: a value past its type's range fails it
   (elec.h, elec_error). */

/* ------------------------------------------------- >>dcs DCS: direct Coulomb summation */

/* DCS: phi(p) = scale * sum_j q_j / |p - r_j| at every lattice point. */
ELEC_API elec_status elec_cpu_dcs_map(const elec_atoms *atoms,
                                      const elec_lattice *lattice,
                                      const elec_dcs_params *params,
                                      float *map, elec_error *err);
ELEC_API elec_status elec_cpu_dcs_map_double(const elec_atoms *atoms,
                                             const elec_lattice *lattice,
                                             const elec_dcs_params *params,
                                             double *map, elec_error *err);

/* DCS at arbitrary points (xyz interleaved, point_count of them). */
ELEC_API elec_status elec_cpu_dcs_points(const elec_atoms *atoms,
                                         const double *points,
                                         size_t point_count,
                                         const elec_dcs_params *params,
                                         float *potential, elec_error *err);
ELEC_API elec_status elec_cpu_dcs_points_double(const elec_atoms *atoms,
                                                const double *points,
                                                size_t point_count,
                                                const elec_dcs_params *params,
                                                double *potential,
                                                elec_error *err);

/* The plain (non-periodic) Coulomb energy scale * sum_{i<j} q_i q_j / r_ij
   in double, and where forces is not NULL the forces -dE/dr (3 per atom).
   Pairs closer than ELEC_COINCIDENT_DISTANCE are an error (the energy of
   two charges at one point is infinite), not a silent infinity.  Its
   rows run in parallel (OpenMP), each atom's over every other: the same
   sums whatever the threads, at twice the arithmetic of a half triangle
   (15,000 atoms on one thread took 0.91 s, where the half triangle took
   0.44 without forces and 0.80 with them).  Work estimated past
   ELEC_EWALD_MAX_SECONDS, at ELEC_COULOMB_PAIR_SECONDS a pair and
   direction shared by the OpenMP threads, is refused with
   ELEC_ERR_UNSUPPORTED, saying how long it would take (past about
   270,000 atoms on one thread; serially, from 40,000 atoms' 4.6 s by the
   square of the count, a million would have run for most of an hour with
   no word, the 13 million a PQR file may hold for days).  4 ns a pair and
   direction, measured on 20,000 atoms on one thread. */
#define ELEC_COULOMB_PAIR_SECONDS 4e-9
ELEC_API elec_status elec_cpu_coulomb_energy(const elec_atoms *atoms,
                                             double scale, double *energy,
                                             double *forces, elec_error *err);

/* --------------------------------------------------- >>mdh MDH: multiple Debye-Hueckel */

/* MDH at arbitrary points: atoms need radii (sigma_j). */
ELEC_API elec_status elec_cpu_mdh_points(const elec_atoms *atoms,
                                         const double *points,
                                         size_t point_count,
                                         const elec_mdh_params *params,
                                         float *potential, elec_error *err);
ELEC_API elec_status elec_cpu_mdh_points_double(const elec_atoms *atoms,
                                                const double *points,
                                                size_t point_count,
                                                const elec_mdh_params *params,
                                                double *potential,
                                                elec_error *err);

/* ---------------------------------------------------------------- >>cutoff cutoff maps */

/* Cutoff maps (elec.h, elec_cutoff_params): phi(p) = scale * sum over
   atoms within the cutoff of q S(r), S the chosen smoothed short-range
   potential.  The float path sums over a cell list; the double reference
   over every atom. */
ELEC_API elec_status elec_cpu_cutoff_map(const elec_atoms *atoms,
                                         const elec_lattice *lattice,
                                         const elec_cutoff_params *params,
                                         float *map, elec_error *err);
ELEC_API elec_status elec_cpu_cutoff_map_double(const elec_atoms *atoms,
                                                const elec_lattice *lattice,
                                                const elec_cutoff_params *params,
                                                double *map, elec_error *err);

/* ----------------------------------------------------- >>msm MSM: multilevel summation */

/* Multilevel summation (elec.h, elec_msm_params), non-periodic, in double
   precision: the potential on a lattice (float map, like DCS), at points,
   and the energy scale * sum_{i<j} q_i q_j / r_ij with its forces.  Costs
   grow with atoms + points (the lattice stencils are fixed), not their
   product.  The coincident rule of elec.h applies to maps and points.
   With a tolerance and forces, elec_cpu_msm_energy checks the forces on
   up to 64 atoms against their direct sums (64 pair terms an atom) and
   evaluates again, aiming lower, where they miss it (its progress then
   reported again from 0); where no choice meets it, ELEC_ERR_UNSUPPORTED
   names what the sample measured (and the forces are zeroed). */
ELEC_API elec_status elec_cpu_msm_map(const elec_atoms *atoms,
                                      const elec_lattice *lattice,
                                      const elec_msm_params *params,
                                      float *map, elec_error *err);
ELEC_API elec_status elec_cpu_msm_points(const elec_atoms *atoms,
                                         const double *points,
                                         size_t point_count,
                                         const elec_msm_params *params,
                                         double *potential, elec_error *err);
ELEC_API elec_status elec_cpu_msm_energy(const elec_atoms *atoms,
                                         const elec_msm_params *params,
                                         double *energy, double *forces,
                                         elec_error *err);
/* The lattices of elec_cpu_msm_energy's hierarchy stage by stage (elec.h,
   elec_msm_lattices), in double, the atoms taken relative to reference
   (NULL: elec_cpu_msm_energy's, the centre of their bounding box moved to
   the nearest multiple of the top level's spacing). */
ELEC_API elec_status elec_cpu_msm_lattices(const elec_atoms *atoms, const double reference[3],
                                           const elec_msm_params *params,
                                           elec_msm_lattices *out, elec_error *err);

/* Periodic multilevel summation in an orthorhombic box, double precision:
   the energy scale * E of the infinite periodic system with the Ewald
   (tinfoil) convention of elec_cpu_ewald, background term of a net charge
   included, so the two agree to MSM's accuracy.  forces (-dE/dr, 3 per
   atom) and potential (dE/dq_i, so that sum q_i phi_i / 2 = E) may be
   NULL.  Atoms anywhere within 1000 box lengths (as elec_cpu_ewald):
   positions are wrapped into the box.  The finest lattice has 2^k points
   per axis at spacing L/2^k <= params->spacing; the cutoff may exceed
   half the box (every image within it is summed).  progress and
   max_top_points are not used (the top is always one point).
   Two atoms (or an atom and another's image) at one place are an error;
   ELEC_ERR_UNSUPPORTED where the lattices or stencils would be too big.
   Built with FFTW3 (-DELEC_WITH_FFTW), a level's lattice cutoff whose
   stencil is large for its lattice is summed by FFT (the same sum, to
   rounding): then, as for elec_cpu_spme, FFTW's planner is in play (elec
   plans inside one OpenMP critical section where this file is compiled
   with OpenMP; from other threads call fftw_make_planner_thread_safe()
   once first, -lfftw3_threads). */
ELEC_API elec_status elec_cpu_msm_periodic_energy(const elec_atoms *atoms,
                                                  const elec_box *box,
                                                  const elec_msm_params *params,
                                                  double *energy, double *forces,
                                                  double *potential,
                                                  elec_error *err);

/* ----------------------------------------------- >>ewald Ewald: the exact periodic sum */

/* Exact Ewald sum (elec.h, elec_ewald_params) in an orthorhombic box, in
   double precision: the energy terms, and where the arrays are given the
   forces (3 per atom, -dE/dr, interleaved) and the potential at each atom
   (dE/dq_i, so that sum q_i phi_i / 2 = E).  forces and potential may be
   NULL.  Atoms anywhere: positions are wrapped into the box.  Cost: pairs
   times images plus atoms times reciprocal vectors (over OpenMP threads);
   a reference, not an MD engine.  Work past ELEC_EWALD_MAX_SECONDS is
   refused (ELEC_ERR_UNSUPPORTED, saying how long it would take);
   params->progress hears of the rest about every 1 % and may cancel
   (ELEC_ERR_CANCELLED).  energy->error is the estimate's energy. */
ELEC_API elec_status elec_cpu_ewald(const elec_atoms *atoms,
                                    const elec_box *box,
                                    const elec_ewald_params *params,
                                    elec_ewald_terms *energy, double *forces,
                                    double *potential, elec_error *err);
/* The exact forces on some atoms only (every atom acting on them): the
   reference for systems too large for the all-pairs sum.  forces[3 c ..
   3 c + 2] is the force on atom which[c]; the work is count x atoms x
   images plus atoms x vectors (ELEC_EWALD_MAX_SECONDS applies).  Two
   atoms at one place that are not an excluded pair are refused
   (ELEC_ERR_INVALID_ARG), as elec_cpu_ewald refuses them. */
ELEC_API elec_status elec_cpu_ewald_forces_at(const elec_atoms *atoms,
                                              const elec_box *box,
                                              const elec_ewald_params *params,
                                              const size_t *which, size_t count,
                                              double *forces, elec_error *err);

/* --------------------------------------------- >>spme SPME: smooth particle mesh Ewald */

/* Smooth particle mesh Ewald (elec.h, elec_spme_params), double precision,
   FFTs by FFTW3: the same terms, forces and potentials as elec_cpu_ewald,
   the reciprocal sum interpolated (Essmann et al. 1995, eqs. 4.7-4.9) and
   the real-space sum over a cell list.  Needs FFTW3 at build time
   (-DELEC_WITH_FFTW, -lfftw3); without it returns ELEC_ERR_UNSUPPORTED.
   FFTW's planner is global state: elec plans inside one OpenMP critical
   section, so calls from OpenMP threads are safe where the file that
   implements elec is compiled with OpenMP (without it there is no
   section: a caller's OpenMP threads crashed FFTW's planner, an audit);
   from other threads, from such a file, or beside your own FFTW planning,
   call fftw_make_planner_thread_safe() once first (link
   -lfftw3_threads).  Two atoms at one place that are not an excluded
   pair are an error (ELEC_ERR_INVALID_ARG), here and in elec_cpu_ewald. */
ELEC_API elec_status elec_cpu_spme(const elec_atoms *atoms,
                                   const elec_box *box,
                                   const elec_spme_params *params,
                                   elec_ewald_terms *energy, double *forces,
                                   double *potential, elec_error *err);


/* ------------------------------------------------------------ >>charges charge mapping */

/* Charge mapping (elec.h, elec_chargemap_params): rho(g) = sum_a q_a
   phi phi phi on the lattice, e per point, x fastest.  params.cpu_variant
   picks the rung of the seed's CPU ladder (float grid; CPU_BINNED, the
   default, in OpenMP threads).  ELEC_ERR_INVALID_ARG for an atom whose
   stencil leaves a non-periodic lattice, naming it; a periodic lattice
   wraps atoms within 1000 periods of it. */
ELEC_API elec_status elec_cpu_chargemap(const elec_atoms *atoms,
                                        const elec_lattice *lattice,
                                        const elec_chargemap_params *params,
                                        float *grid, elec_error *err);
/* The double-precision reference (Alg. 2, serial): the truth of the tests.
   Where given, abs_sum[g] = sum_a |q_a phi phi phi| and contributions[g] =
   the number of terms added to point g: a float path's error at g is at
   most (contributions + c) 2^-24 abs_sum + contributions (2^-50 max|q| +
   2^-149) (recursive summation in any order, c ulps for the weights and
   products; the absolute part, four ulps of the largest charge, for
   weights near a basis piece's zero, which carry the piece's rounding (2
   ulps measured on the nonic pieces), and terms under float's least
   normal number). */
ELEC_API elec_status elec_cpu_chargemap_double(const elec_atoms *atoms,
                                               const elec_lattice *lattice,
                                               const elec_chargemap_params *params,
                                               double *grid, double *abs_sum,
                                               int *contributions, elec_error *err);

/* ------------------------------------------------- >>alpb ALPB surface potentials, HCP */

/* ALPB at surface vertices (elec.h: elec_alpb_params, elec_hcp): the
   potential at v + p n of every vertex (xyz interleaved, count of them),
   exact (params->exact) or by HCP's top-down walk (research notes 3.3:
   complexes, chains, residues, atoms; a component farther than its reach
   from the point (elec_hcp_reach: its level's threshold, 1.5 times its
   extent, its error test), squared distances compared strictly, adds its
   one or two charges).  normals (outward, 3 per vertex, of any finite
   non-zero length: scaled to unit) may be NULL where p = 0 and there is
   no salt.  The exact sum without salt
   runs on elec_cpu_dcs_points (float terms in the float call, double in
   the double one); everything else is summed in double.  potential gets
   count values; it is not touched when the call is refused, and where a
   value comes out past the output type's range (absurd charges) the call
   fails (ELEC_ERR_INVALID_ARG, naming the point) after writing them. */
ELEC_API elec_status elec_cpu_alpb(const elec_hcp *hcp, const double *vertices,
                                   const double *normals, size_t count,
                                   const elec_alpb_params *params, float *potential,
                                   elec_error *err);
ELEC_API elec_status elec_cpu_alpb_double(const elec_hcp *hcp, const double *vertices,
                                          const double *normals, size_t count,
                                          const elec_alpb_params *params,
                                          double *potential, elec_error *err);

/* ------------------------------------------------ >>slab sub-lattices for distributed maps */

/* The planes k0 .. k1 - 1 of elec_cpu_msm_map's map of the whole lattice
   (elec.h, ">>slab"), bit for bit: every atom, the whole lattice hierarchy
   (each slab builds it again: MSM's long range needs every charge), the
   short range and the interpolation at the slab's points alone, all in
   the whole lattice's frame.  map holds (k1 - k0) nx ny values; the
   points' positions take 24 bytes each of scratch memory while it runs. */
ELEC_API elec_status elec_cpu_msm_map_slab(const elec_atoms *atoms,
                                           const elec_lattice *lattice, int k0, int k1,
                                           const elec_msm_params *params, float *map,
                                           elec_error *err);

#ifdef __cplusplus
}
#endif
#endif /* ELEC_CPU_H */

/* ELEC_ALL_IMPLEMENTATION read outside the include guard, so that it
   works where this header was included before it was defined (by a
   project's own header, say): inside, such a second include compiled no
   implementation (undefined references, an audit).  elec.h again: its
   implementation too, where its first include came before. */
#ifdef ELEC_ALL_IMPLEMENTATION
#ifndef ELEC_CPU_IMPLEMENTATION
#define ELEC_CPU_IMPLEMENTATION
#endif
#include "elec.h"
#endif

/* ====================================================== implementation */
#ifdef ELEC_CPU_IMPLEMENTATION
#ifndef ELEC_CPU_IMPLEMENTATION_DONE
#define ELEC_CPU_IMPLEMENTATION_DONE

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef ELEC_WITH_FFTW
#include <fftw3.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#ifdef ELEC_WITH_FFTW
/* FFTW's planner is global state, not safe to call from two threads at
   once (FFTW's manual, "Thread safety"); executing a plan is.  elec plans
   and destroys its transforms (the CPU SPME's, the CPU periodic MSM's)
   only here, inside one named OpenMP critical section, so that its own
   calls from OpenMP threads never plan at once, where this file is
   compiled with OpenMP (without it the section is not there).  Other
   threads, or a caller's own FFTW planning beside elec's, need FFTW's
   rule: call fftw_make_planner_thread_safe() once first (link
   -lfftw3_threads). */

/* The real-to-complex transform of an x-fastest n[0] x n[1] x n[2]
   lattice `real` into `spectrum` ((n[0]/2 + 1) n[1] n[2] values) and the
   complex-to-real one back into `out` (FFTW's unnormalised pair), planned
   FFTW_ESTIMATE (the arrays untouched).  0, with both NULL, where FFTW
   could not plan. */
static int elec__fftw_plan_pair(const int n[3], double *real, fftw_complex *spectrum,
                                double *out, fftw_plan *forward, fftw_plan *backward) {
    int planned;
#ifdef _OPENMP
#pragma omp critical(elec__fftw_planner)
#endif
    {
        /* FFTW's row-major dims are (z, y, x): x varies fastest, as here */
        *forward = fftw_plan_dft_r2c_3d(n[2], n[1], n[0], real, spectrum, FFTW_ESTIMATE);
        *backward = fftw_plan_dft_c2r_3d(n[2], n[1], n[0], spectrum, out, FFTW_ESTIMATE);
        planned = *forward != NULL && *backward != NULL;
        if (!planned) {
            if (*forward) fftw_destroy_plan(*forward);
            if (*backward) fftw_destroy_plan(*backward);
            *forward = *backward = NULL;
        }
    }
    return planned;
}

static void elec__fftw_destroy_pair(fftw_plan forward, fftw_plan backward) {
#ifdef _OPENMP
#pragma omp critical(elec__fftw_planner)
#endif
    {
        if (forward) fftw_destroy_plan(forward);
        if (backward) fftw_destroy_plan(backward);
    }
}
#endif

/* ----------------------------------------------------------- >>common progress, points */

/* Points blocked together between two progress calls: about 1/64 of the
   work, so the caller hears at least every 1.6 %. */
#define ELEC__CPU_PROGRESS_STEPS 64
/* Atoms whose float terms are computed at once before the double sum. */
#define ELEC__CPU_TILE 256

/* Tells the caller how far we are; nonzero when the caller wants to stop. */
static int elec__cpu_cancelled(elec_progress_fn progress, void *user,
                               size_t done, size_t total) {
    if (!progress) return 0;
    return progress(total ? (double)done / (double)total : 1.0, user) != 0;
}

static size_t elec__cpu_block(size_t total) {
    size_t block = (total + ELEC__CPU_PROGRESS_STEPS - 1) /
                   ELEC__CPU_PROGRESS_STEPS;
    return block ? block : 1;
}

#define ELEC__PI 3.14159265358979323846

/* Atoms gathered from the view, relative to reference (NULL: the
   origin) and wrapped into [0, L) along each axis (elec__atoms_pack, which
   refuses an atom more than 1000 box lengths away): interleaved positions
   x, charges q. */
static elec_status elec__periodic_gather(const elec_atoms *atoms,
                                         const elec_box *box, const double *reference,
                                         double *x, double *q, elec_error *err) {
    elec__pack to;
    memset(&to, 0, sizeof to);
    to.reference = reference;
    to.box = box;
    elec__pack_xyz(&to, x, q);
    return elec__atoms_pack(atoms, &to, err);
}

/* Atoms relative to reference (elec__atoms_pack) into new arrays: *x
   interleaved positions, *q charges; where lo and hi are given, they are
   widened to hold the atoms. */
static elec_status elec__cpu_gather(const elec_atoms *atoms, const double reference[3],
                                    double **x, double **q, double lo[3], double hi[3],
                                    elec_error *err) {
    elec__pack to;
    size_t i;
    int axis;
    *x = (double *)ELEC_MALLOC((3 * atoms->count + 3) * sizeof **x);
    *q = (double *)ELEC_MALLOC((atoms->count + 1) * sizeof **q);
    if (!*x || !*q)
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for atoms");
    memset(&to, 0, sizeof to);
    to.reference = reference;
    elec__pack_xyz(&to, *x, *q);
    elec__atoms_pack(atoms, &to, NULL); /* relative: nothing to refuse */
    for (i = 0; lo && hi && i < atoms->count; i++)
        for (axis = 0; axis < 3; axis++) {
            if ((*x)[3 * i + axis] < lo[axis]) lo[axis] = (*x)[3 * i + axis];
            if ((*x)[3 * i + axis] > hi[axis]) hi[axis] = (*x)[3 * i + axis];
        }
    return ELEC_OK;
}

/* Sums the float terms t[0..m) in eight double lanes (m a multiple of 8):
   independent additions the compiler can vectorise, in an order that does
   not depend on the build. */
static void elec__cpu_lanes_add(double lane[8], const float *t, size_t m) {
    size_t j;
    int l;
    for (j = 0; j < m; j += 8)
        for (l = 0; l < 8; l++) lane[l] += t[j + l];
}

static double elec__cpu_lanes_sum(const double lane[8]) {
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
           ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

typedef double (*elec__cpu_point_fn)(const elec__packed_atoms *a,
                                     const double pt[3], double kappa);

static elec_status elec__cpu_points_check(const double *points, size_t count,
                                          const void *out, elec_error *err) {
    size_t i;
    if (count == 0) return ELEC_OK;
    if (!points)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "points is NULL");
    if (!out)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "potential (the output) is NULL");
    /* 3 count doubles must be an array's (and 3 count not wrap) */
    if (count > (size_t)PTRDIFF_MAX / (3 * sizeof(double)))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "%zu points: more than an array can hold", count);
    for (i = 0; i < 3 * count; i++)
        if (!elec__finite(points[i]))
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "point %zu: position is not finite", i / 3);
    return ELEC_OK;
}

/* What the points entry points share once their checks passed. */
typedef struct elec__cpu_points_job {
    const double *points;
    size_t count;
    elec__cpu_point_fn point;
    double scale, kappa;
    elec_progress_fn progress;
    void *user;
    float *outf;  /* one of the two outputs is used */
    double *outd;
    const char *what; /* the method, as messages name it */
} elec__cpu_points_job;

/* Packs the atoms relative to the centre of the points' bounding box,
   then runs the points in blocks (progress between blocks, on the calling
   thread) over the threads; points spread wider than one region a region
   at a time, the atoms packed again for each (elec__regions_find). */
static elec_status elec__cpu_points_run(const elec_atoms *atoms,
                                        const elec__cpu_points_job *job,
                                        elec_error *err) {
    const double *points = job->points;
    const size_t count = job->count, block = elec__cpu_block(count);
    elec__packed_atoms a;
    elec__regions regions;
    double centre[3];
    size_t start, done = 0, g;
    elec_status s = elec__regions_find(points, count, &regions, err);
    if (s != ELEC_OK) return s;
    for (g = 0; g < regions.count; g++) {
        const size_t *order = regions.order ? regions.order + regions.start[g] : NULL;
        const size_t region_count = regions.order ? regions.start[g + 1] - regions.start[g]
                                                  : count;
        elec__points_reference(points, order, region_count, centre);
        if ((s = elec__packed_atoms_pack(atoms, centre, job->kappa, &a, err)) != ELEC_OK) break;
        for (start = 0; start < region_count; start += block) {
            long first = (long)start, n;
            long end = (long)(start + block < region_count ? start + block : region_count);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 16)
#endif
            for (n = first; n < end; n++) {
                const size_t i = order ? order[n] : (size_t)n;
                const double *p = points + 3 * i;
                double rel[3], phi;
                rel[0] = p[0] - centre[0];
                rel[1] = p[1] - centre[1];
                rel[2] = p[2] - centre[2];
                phi = job->scale * job->point(&a, rel, job->kappa);
                if (job->outf) job->outf[i] = (float)phi;
                else job->outd[i] = phi;
            }
            done += (size_t)(end - first);
            if (elec__cpu_cancelled(job->progress, job->user, done, count)) {
                s = elec__fail(err, ELEC_ERR_CANCELLED, 0,
                               "%s cancelled by the progress callback after "
                               "%zu of %zu points",
                               job->what, done, count);
                break;
            }
        }
        elec__packed_atoms_free(&a);
        if (s != ELEC_OK) break;
    }
    elec__regions_free(&regions);
    if (s != ELEC_OK) return s;
    if (elec__cpu_cancelled(job->progress, job->user, 1, 1))
        return elec__fail(err, ELEC_ERR_CANCELLED, 0,
                          "%s cancelled by the progress callback", job->what);
    if ((s = elec__results_finite(job->what, "potential at point", job->outf, job->outd,
                                  count, job->outf ? "float" : "double", err)) != ELEC_OK)
        return s;
    elec__ok(err);
    return ELEC_OK;
}

/* --------------------------------------------------------------------------- >>dcs DCS */

/* ------------------------------------------------------------ DCS rows */

/* Double reference for one lattice row: acc[i] = sum_j q_j / r_ij over the
   points x = x0 + i * hx of the row at (y, z), relative to the centre. */
static void elec__cpu_dcs_row_double(const elec__packed_atoms *a, int nx,
                                     double x0, double hx, double y, double z,
                                     double *acc) {
    const double c2 = ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE;
    size_t j;
    int i;
    for (i = 0; i < nx; i++) acc[i] = 0.0;
    for (j = 0; j < a->count; j++) {
        double dy = y - a->y[j], dz = z - a->z[j];
        double dyz2 = dy * dy + dz * dz, q = a->charge[j], ax = a->x[j];
        for (i = 0; i < nx; i++) {
            double dx = (x0 + i * hx) - ax;
            double r2 = dx * dx + dyz2;
            if (r2 >= c2) acc[i] += q / sqrt(r2);
        }
    }
}

/* Fast path for one row: dy^2 + dz^2 once per atom, then a loop over the
   row that the compiler vectorises: float distance and term, a double sum
   per point.  The coincident rule is arithmetic, not a branch: keep is 1
   or 0, a coincident atom's r2 gets 1 added (so no infinity is formed) and
   its term is multiplied by 0; a far atom's r2 + 0 and 1 * term are exact.
   (A select such as r2 < c2 ? 0 : q / sqrtf(r2) is turned back into a
   branch around the division by gcc, and a branch stops vectorisation
   under the default -ftrapping-math.) */
static void elec__cpu_dcs_row_float(const elec__packed_atoms *a, int nx,
                                    const float *xs, float y, float z,
                                    double *acc) {
    const float c2 =
        (float)(ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE);
    size_t j;
    int i;
    for (i = 0; i < nx; i++) acc[i] = 0.0;
    for (j = 0; j < a->count; j++) {
        float dy = y - a->fy[j], dz = z - a->fz[j];
        float dyz2 = dy * dy + dz * dz, q = a->fcharge[j], ax = a->fx[j];
        /* omp simd only where the loop can be vectorised: without
           -fno-math-errno (__NO_MATH_ERRNO__, which gcc and clang define
           with it) sqrtf may set errno, a call no compiler vectorises;
           gcc then leaves the loop scalar silently, clang warns that the
           vectorisation asked for failed (-Wpass-failed).  Scalar either
           way: the README says which flags help. */
#if defined(_OPENMP) && defined(__NO_MATH_ERRNO__)
#pragma omp simd
#endif
        for (i = 0; i < nx; i++) {
            float dx = xs[i] - ax;
            float r2 = dx * dx + dyz2;
            float keep = (float)(r2 >= c2); /* 0 for a coincident atom */
            float term = q / sqrtf(r2 + (1.0f - keep));
            acc[i] += keep * term;
        }
    }
}

/* The doubles between two threads' row sums in the DCS map's buffer: the
   row rounded up to whole 64-byte cache lines, and one line more, so that
   no two threads' rows share a line wherever the buffer starts.  Each
   thread adds to its row once an atom and point; packed end to end, two
   threads' rows shared a line, and every atom's pass over the row moved
   it between the cores: the demo map (1,394 atoms, 94 x 92 x 94 points)
   took 0.53-0.60 s on two threads, about its 0.57 s on one; padded, 0.29 s
   (gcc 12 -O2 -fno-math-errno -fopenmp, two cores; bench/RESULTS.md,
   2026-12-06, 18:10 UTC on). */
static size_t elec__dcs_row_stride(int nx) {
    const size_t line = 64 / sizeof(double);
    return ((size_t)nx + line - 1) / line * line + line;
}

/* The rows (j, k) of box b of lattice l, relative to the box's centre (the
   atoms a packed about it, xs its x offsets): a serial loop over blocks of
   rows (progress between them, on the calling thread: `done` of the
   map's `all_rows` before this box), rows of a block over the threads.  Each
   thread sums into its own row of doubles in sums (threads rows,
   elec__dcs_row_stride(nx) apart). */
static elec_status elec__cpu_dcs_map_rows(const elec__packed_atoms *a, const elec_lattice *l,
                                          const elec__lattice_box *b,
                                          const elec_dcs_params *p, const float *xs,
                                          double *sums, size_t threads, float *mapf,
                                          double *mapd, size_t done, size_t all_rows,
                                          elec_error *err) {
    const int nx = b->count[0], ny = b->count[1];
    /* point (i, j, k) of the box relative to its centre: -half + index * spacing */
    const double half[3] = {0.5 * (b->count[0] - 1) * l->spacing[0],
                            0.5 * (b->count[1] - 1) * l->spacing[1],
                            0.5 * (b->count[2] - 1) * l->spacing[2]};
    const size_t rows = (size_t)ny * (size_t)b->count[2];
    const size_t block = elec__cpu_block(rows);
    size_t start;
#ifndef _OPENMP
    (void)threads; /* one: sums holds one row */
#endif
    for (start = 0; start < rows; start += block) {
        long first = (long)start, row;
        long end = (long)(start + block < rows ? start + block : rows);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic) num_threads((int)threads) /* sums' rows */
#endif
        for (row = first; row < end; row++) {
            int j = (int)(row % ny), k = (int)(row / ny), i;
            size_t base = (size_t)b->first[0] +
                          (size_t)l->dims[0] * ((size_t)(b->first[1] + j) +
                                                (size_t)l->dims[1] * (size_t)(b->first[2] + k));
            double y = j * l->spacing[1] - half[1];
            double z = k * l->spacing[2] - half[2];
#ifdef _OPENMP
            double *acc = sums + (size_t)omp_get_thread_num() * elec__dcs_row_stride(nx);
#else
            double *acc = sums;
#endif
            if (mapf) {
                elec__cpu_dcs_row_float(a, nx, xs, (float)y, (float)z, acc);
                for (i = 0; i < nx; i++)
                    mapf[base + i] = (float)(p->scale * acc[i]);
            } else {
                elec__cpu_dcs_row_double(a, nx, -half[0], l->spacing[0], y, z,
                                         acc);
                for (i = 0; i < nx; i++) mapd[base + i] = p->scale * acc[i];
            }
        }
        if (elec__cpu_cancelled(p->progress, p->progress_user, done + (size_t)end, all_rows))
            return elec__fail(err, ELEC_ERR_CANCELLED, 0,
                              "DCS map cancelled by the progress callback "
                              "after %zu of %zu rows",
                              done + (size_t)end, all_rows);
    }
    return ELEC_OK;
}

/* Box b of the map, its atoms packed about its centre: the rows. */
static elec_status elec__cpu_dcs_map_box(const elec_atoms *atoms, const elec_lattice *l,
                                         const elec__lattice_box *b,
                                         const elec_dcs_params *p, float *xs, double *sums,
                                         size_t threads, float *mapf, double *mapd, size_t done,
                                         size_t all_rows, elec_error *err) {
    elec__packed_atoms a;
    double centre[3];
    elec_status s;
    int i, axis;
    for (axis = 0; axis < 3; axis++)
        centre[axis] = l->origin[axis] +
                       (b->first[axis] + 0.5 * (b->count[axis] - 1)) * l->spacing[axis];
    if ((s = elec__packed_atoms_pack(atoms, centre, 0.0, &a, err)) != ELEC_OK) return s;
    for (i = 0; i < b->count[0]; i++)
        xs[i] = (float)(i * l->spacing[0] - 0.5 * (b->count[0] - 1) * l->spacing[0]);
    s = elec__cpu_dcs_map_rows(&a, l, b, p, xs, sums, threads, mapf, mapd, done, all_rows, err);
    elec__packed_atoms_free(&a);
    return s;
}

/* The longest row of a box the CPU's DCS map sums at once (doubles, one
   row a thread). */
#define ELEC__DCS_ROW_POINTS 65536

/* Both map entry points: checks, then the map a box at a time (one box
   unless the lattice spans more than ELEC__FLOAT_REGION along an axis, or
   more than ELEC__DCS_ROW_POINTS points along x:
   three points 1e9 A apart once took one reference 1e9 A from the first,
   and an atom 3 A from it rounded onto it and was left out; an audit).
   Each box packs the atoms again: on a lattice of spacings past 1024 A,
   a point a box, that costs as much as the point's sum (a review measured
   5 times the one-box time on one thread, 100 x 100 x 10 points 1100 A
   apart), the price of every point's potential in float. */
static elec_status elec__cpu_dcs_map(const elec_atoms *atoms,
                                     const elec_lattice *lattice,
                                     const elec_dcs_params *params,
                                     float *mapf, double *mapd,
                                     elec_error *err) {
    elec_status s;
    elec_dcs_params p;
    elec__lattice_box b;
    size_t threads = 1, bytes, stride, done = 0, all_rows = 0;
    int nx, step[3], axis;
    long x, y, z;
    double *sums;
    float *xs;
    if ((s = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return s;
    s = elec_lattice_check_points(lattice, params ? params->max_points : 0, err);
    if (s != ELEC_OK) return s;
    if ((s = elec_dcs_params_resolve(params, &p, err)) != ELEC_OK) return s;
    if (!mapf && !mapd)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "map is NULL");
    for (axis = 0; axis < 3; axis++) {
        step[axis] = elec__map_box_points(lattice->spacing[axis]);
        if (step[axis] > lattice->dims[axis]) step[axis] = lattice->dims[axis];
    }
    /* each thread sums a row of the box in doubles: at most
       ELEC__DCS_ROW_POINTS of them, 512 KB a thread (an audit: 2^28
       points along x at 1e-6 A asked 16 threads for 32 GiB and was
       refused "no memory", a lattice within the documented cap) */
    if (step[0] > ELEC__DCS_ROW_POINTS) step[0] = ELEC__DCS_ROW_POINTS;
    nx = step[0];
    stride = elec__dcs_row_stride(nx);
#ifdef _OPENMP
    threads = (size_t)omp_get_max_threads();
#endif
    if (stride > SIZE_MAX / sizeof(double) / (threads + 1))
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                          "no memory for %d-point rows", nx);
    bytes = stride * threads * sizeof(double) + (size_t)nx * sizeof(float);
    sums = (double *)ELEC_MALLOC(bytes);
    if (!sums)
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                          "no memory for %zu row sums", threads);
    xs = (float *)(sums + threads * stride);
    /* the map's rows, every x box counting each row again; the boxes'
       first indices in long (an axis near INT_MAX points would overflow
       an int's first + step) */
    all_rows = (size_t)lattice->dims[1] * (size_t)lattice->dims[2] *
               (((size_t)lattice->dims[0] + (size_t)step[0] - 1) / (size_t)step[0]);
    for (z = 0; s == ELEC_OK && z < lattice->dims[2]; z += step[2])
        for (y = 0; s == ELEC_OK && y < lattice->dims[1]; y += step[1])
            for (x = 0; s == ELEC_OK && x < lattice->dims[0]; x += step[0]) {
                const long first[3] = {x, y, z};
                for (axis = 0; axis < 3; axis++) {
                    const long left = lattice->dims[axis] - first[axis];
                    b.first[axis] = (int)first[axis];
                    b.count[axis] = left < step[axis] ? (int)left : step[axis];
                }
                s = elec__cpu_dcs_map_box(atoms, lattice, &b, &p, xs, sums, threads, mapf,
                                          mapd, done, all_rows, err);
                done += (size_t)b.count[1] * (size_t)b.count[2];
            }
    ELEC_FREE(sums);
    if (s != ELEC_OK) return s;
    if (elec__cpu_cancelled(p.progress, p.progress_user, 1, 1))
        return elec__fail(err, ELEC_ERR_CANCELLED, 0,
                          "DCS map cancelled by the progress callback");
    if ((s = elec__results_finite("DCS map", "point", mapf, mapd, elec_lattice_size(lattice),
                                  mapf ? "float" : "double", err)) != ELEC_OK)
        return s;
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_cpu_dcs_map(const elec_atoms *atoms,
                                      const elec_lattice *lattice,
                                      const elec_dcs_params *params,
                                      float *map, elec_error *err) {
    return elec__cpu_dcs_map(atoms, lattice, params, map, NULL, err);
}

ELEC_DEF elec_status elec_cpu_dcs_map_double(const elec_atoms *atoms,
                                             const elec_lattice *lattice,
                                             const elec_dcs_params *params,
                                             double *map, elec_error *err) {
    return elec__cpu_dcs_map(atoms, lattice, params, NULL, map, err);
}

static double elec__cpu_dcs_point_double(const elec__packed_atoms *a,
                                         const double pt[3], double kappa) {
    const double c2 = ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE;
    double sum = 0.0;
    size_t j;
    (void)kappa;
    for (j = 0; j < a->count; j++) {
        double dx = pt[0] - a->x[j], dy = pt[1] - a->y[j],
               dz = pt[2] - a->z[j];
        double r2 = dx * dx + dy * dy + dz * dz;
        if (r2 >= c2) sum += a->charge[j] / sqrt(r2);
    }
    return sum;
}

static double elec__cpu_dcs_point_float(const elec__packed_atoms *a,
                                        const double pt[3], double kappa) {
    const float c2 =
        (float)(ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE);
    const float px = (float)pt[0], py = (float)pt[1], pz = (float)pt[2];
    float t[ELEC__CPU_TILE];
    double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t start, j, m;
    (void)kappa;
    for (start = 0; start < a->count; start += m) {
        const float *x = a->fx + start, *y = a->fy + start, *z = a->fz + start;
        const float *q = a->fcharge + start;
        m = a->count - start < ELEC__CPU_TILE ? a->count - start
                                               : ELEC__CPU_TILE;
#if defined(_OPENMP) && defined(__NO_MATH_ERRNO__) /* see elec__cpu_dcs_row_float */
#pragma omp simd
#endif
        for (j = 0; j < m; j++) {
            float dx = px - x[j], dy = py - y[j], dz = pz - z[j];
            float r2 = dx * dx + (dy * dy + dz * dz); /* as in the rows */
            float keep = (float)(r2 >= c2);
            t[j] = keep * (q[j] / sqrtf(r2 + (1.0f - keep)));
        }
        for (j = m; j % 8; j++) t[j] = 0.0f;
        elec__cpu_lanes_add(lane, t, j);
    }
    return elec__cpu_lanes_sum(lane);
}

/* MDH, float: (q / (1 + kappa sigma)) * expf(kappa (sigma - r)) / r, the
   same seed 000 eq. 2 as elec_mdh_term with its r-independent factor
   computed once per atom (in double, when the atoms were packed). */
static elec_status elec__cpu_dcs_points(const elec_atoms *atoms,
                                        const double *points, size_t count,
                                        const elec_dcs_params *params,
                                        float *outf, double *outd,
                                        const void *out, const char *method,
                                        elec_error *err) {
    elec_status s;
    elec_dcs_params p;
    elec__cpu_points_job job;
    if ((s = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return s;
    if ((s = elec__cpu_points_check(points, count, out, err)) != ELEC_OK)
        return s;
    if ((s = elec_dcs_params_resolve(params, &p, err)) != ELEC_OK) return s;
    job.points = points;
    job.count = count;
    job.point = outf ? elec__cpu_dcs_point_float : elec__cpu_dcs_point_double;
    job.scale = p.scale;
    job.kappa = 0.0;
    job.progress = p.progress;
    job.user = p.progress_user;
    job.outf = outf;
    job.outd = outd;
    job.what = method;
    return elec__cpu_points_run(atoms, &job, err);
}

/* The float and double entry points here and MDH's below are deliberate
   wrapper pairs (the same shape, a scan for repeated blocks lists them):
   one body each (elec__cpu_dcs_points, elec__cpu_mdh_points), the public
   faces differing only in the output's type. */
ELEC_DEF elec_status elec_cpu_dcs_points(const elec_atoms *atoms,
                                         const double *points,
                                         size_t point_count,
                                         const elec_dcs_params *params,
                                         float *potential, elec_error *err) {
    float none;
    return elec__cpu_dcs_points(atoms, points, point_count, params,
                                potential ? potential : &none, NULL,
                                potential, "DCS at points", err);
}

ELEC_DEF elec_status elec_cpu_dcs_points_double(const elec_atoms *atoms,
                                                const double *points,
                                                size_t point_count,
                                                const elec_dcs_params *params,
                                                double *potential,
                                                elec_error *err) {
    return elec__cpu_dcs_points(atoms, points, point_count, params, NULL,
                                potential, potential, "DCS at points", err);
}

/* ------------------------------------------------------- direct energy */

/* The OpenMP threads a parallel loop here may take. */
static int elec__cpu_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

ELEC_DEF elec_status elec_cpu_coulomb_energy(const elec_atoms *atoms,
                                             double scale, double *energy,
                                             double *forces, elec_error *err) {
    elec__packed_atoms a;
    elec_status s;
    double sum = 0.0, *row = NULL, pairs, seconds;
    size_t *coincident = NULL, i;
    long li;
    if ((s = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return s;
    if (!energy)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "energy is NULL");
    if (scale == 0.0) scale = 1.0;
    if (!elec__finite(scale))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "scale is not finite");
    pairs = 0.5 * (double)atoms->count * ((double)atoms->count - 1.0);
    seconds = 2.0 * pairs * ELEC_COULOMB_PAIR_SECONDS / (double)elec__cpu_threads();
    if (seconds > ELEC_EWALD_MAX_SECONDS)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "the direct sum over %zu atoms (%.3g pairs) would take about %.0f s "
                          "on %d thread(s), more than %.0f (ELEC_EWALD_MAX_SECONDS): MSM's "
                          "energy (elec_cpu_msm_energy) scales, and for a periodic system "
                          "SPME (elecenergy --method spme)", atoms->count, pairs, seconds,
                          elec__cpu_threads(), ELEC_EWALD_MAX_SECONDS);
    {
        const double origin[3] = {0.0, 0.0, 0.0};
        if ((s = elec__packed_atoms_pack(atoms, origin, 0.0, &a, err)) != ELEC_OK)
            return s;
    }
    row = (double *)ELEC_MALLOC((a.count + 1) * sizeof *row);
    coincident = (size_t *)ELEC_MALLOC((a.count + 1) * sizeof *coincident);
    if (!row || !coincident) {
        s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for %zu atoms", a.count);
        goto cleanup;
    }
    /* each atom its whole row (every pair taken twice): the rows run in
       parallel with no shared sums, and the total adds them in one order
       whatever the threads */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 16)
#endif
    for (li = 0; li < (long)a.count; li++)
        row[li] = elec__coulomb_row(&a, (size_t)li, scale, forces ? forces + 3 * li : NULL,
                                    coincident + li);
    for (i = 0; i < a.count; i++)
        if (coincident[i] != i) {
            s = elec__name_atoms(elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                            "atoms %zu and %zu coincide: their energy "
                                            "is infinite", i, coincident[i]),
                                 err, i, coincident[i]);
            if (forces) memset(forces, 0, 3 * a.count * sizeof *forces);
            goto cleanup;
        }
    for (i = 0; i < a.count; i++) sum += row[i];
    *energy = 0.5 * scale * sum;
    if ((s = elec__results_finite("Coulomb", "energy", NULL, energy, 1, "double", err)) !=
            ELEC_OK ||
        (s = elec__results_finite("Coulomb", "force component", NULL, forces,
                                  3 * atoms->count, "double", err)) != ELEC_OK)
        goto cleanup;
    elec__ok(err);
cleanup:
    elec__packed_atoms_free(&a);
    ELEC_FREE(row);
    ELEC_FREE(coincident);
    return s;
}

/* --------------------------------------------------------------------------- >>mdh MDH */

static double elec__cpu_mdh_point_double(const elec__packed_atoms *a,
                                         const double pt[3], double kappa) {
    const double c2 = ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE;
    double sum = 0.0;
    size_t j;
    for (j = 0; j < a->count; j++) {
        double dx = pt[0] - a->x[j], dy = pt[1] - a->y[j],
               dz = pt[2] - a->z[j];
        double r2 = dx * dx + dy * dy + dz * dz;
        if (r2 >= c2)
            sum += elec_mdh_term(a->charge[j], a->radius[j], kappa, sqrt(r2));
    }
    return sum;
}

/* Float terms a tile of atoms at a time (the loop the compiler vectorises),
   summed in double lanes; the coincident rule is arithmetic as in the
   rows. */
static double elec__cpu_mdh_point_float(const elec__packed_atoms *a,
                                        const double pt[3], double kappa) {
    const float c2 =
        (float)(ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE);
    const float px = (float)pt[0], py = (float)pt[1], pz = (float)pt[2];
    const float k = (float)kappa;
    float t[ELEC__CPU_TILE];
    double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    size_t start, j, m;
    for (start = 0; start < a->count; start += m) {
        const float *x = a->fx + start, *y = a->fy + start, *z = a->fz + start;
        const float *qs = a->fscreened + start, *sigma = a->fradius + start;
        m = a->count - start < ELEC__CPU_TILE ? a->count - start
                                               : ELEC__CPU_TILE;
#if defined(_OPENMP) && defined(__NO_MATH_ERRNO__) /* see elec__cpu_dcs_row_float */
#pragma omp simd
#endif
        for (j = 0; j < m; j++) {
            float dx = px - x[j], dy = py - y[j], dz = pz - z[j];
            float r2 = dx * dx + (dy * dy + dz * dz); /* as in the rows */
            float keep = (float)(r2 >= c2);
            float r = sqrtf(r2 + (1.0f - keep));
            /* kappa 0: no exponential (an atom far enough that r2
               overflows made expf(0 * -inf) NaN; an audit) */
            float screen = k != 0.0f ? expf(k * (sigma[j] - r)) : 1.0f;
            t[j] = keep * (qs[j] * screen / r);
        }
        for (j = m; j % 8; j++) t[j] = 0.0f;
        elec__cpu_lanes_add(lane, t, j);
    }
    return elec__cpu_lanes_sum(lane);
}

static elec_status elec__cpu_mdh_points(const elec_atoms *atoms,
                                        const double *points, size_t count,
                                        const elec_mdh_params *params,
                                        float *outf, double *outd,
                                        const void *out, elec_error *err) {
    elec_status s;
    elec_mdh_params p;
    elec__cpu_points_job job;
    if ((s = elec_atoms_check(atoms, 1, err)) != ELEC_OK) return s;
    if ((s = elec__cpu_points_check(points, count, out, err)) != ELEC_OK)
        return s;
    if ((s = elec_mdh_params_resolve(params, &p, err)) != ELEC_OK) return s;
    s = elec__mdh_range_check(atoms, &p, outf ? (double)FLT_MAX : DBL_MAX, err);
    if (s != ELEC_OK) return s;
    job.points = points;
    job.count = count;
    job.point = outf ? elec__cpu_mdh_point_float : elec__cpu_mdh_point_double;
    job.scale = p.scale;
    job.kappa = p.kappa;
    job.progress = p.progress;
    job.user = p.progress_user;
    job.outf = outf;
    job.outd = outd;
    job.what = "MDH at points";
    return elec__cpu_points_run(atoms, &job, err);
}

/* The float entry points pass a non-NULL outf even for zero points (a
   dummy), so the float kernel is chosen; out is what the caller gave. */
ELEC_DEF elec_status elec_cpu_mdh_points(const elec_atoms *atoms,
                                         const double *points,
                                         size_t point_count,
                                         const elec_mdh_params *params,
                                         float *potential, elec_error *err) {
    float none;
    return elec__cpu_mdh_points(atoms, points, point_count, params,
                                potential ? potential : &none, NULL,
                                potential, err);
}

ELEC_DEF elec_status elec_cpu_mdh_points_double(const elec_atoms *atoms,
                                                const double *points,
                                                size_t point_count,
                                                const elec_mdh_params *params,
                                                double *potential,
                                                elec_error *err) {
    return elec__cpu_mdh_points(atoms, points, point_count, params, NULL,
                                potential, potential, err);
}

/* ---------------------------------------------------------------- >>cutoff cutoff maps */

/* The short-range part at a point: sum over atoms within the cutoff a of
   q S(r).  An atom closer than ELEC_COINCIDENT_DISTANCE is left out; with
   take_back_smooth (MSM, whose lattices carry every atom's smooth part)
   its smooth part gamma(r/a)/a is taken back out too. */
static double elec__short_range_at(const elec_cells *cells, const double *x,
                                   const double *q, const double *point,
                                   double a, elec_cutoff_kind kind,
                                   int splitting, int take_back_smooth) {
    const double a2 = a * a;
    const double c2 = ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE;
    double sum = 0.0;
    int home[3], dx, dy, dz;
    elec_cells_ijk(cells, point, home);
    for (dz = -1; dz <= 1; dz++)
        for (dy = -1; dy <= 1; dy++)
            for (dx = -1; dx <= 1; dx++) {
                long cell = elec_cells_neighbour(cells, home, dx, dy, dz, 0);
                size_t k;
                if (cell < 0) continue;
                for (k = cells->start[cell]; k < cells->start[cell + 1]; k++) {
                    size_t j = cells->atom[k];
                    double r2 = elec_distance2(point, x + 3 * j), r;
                    if (r2 >= a2) continue;
                    r = sqrt(r2);
                    if (r2 >= c2)
                        sum += q[j] * elec_cutoff_term(r, a, kind, splitting);
                    else if (take_back_smooth)
                        sum -= q[j] * elec_msm_gamma(r / a, splitting) / a;
                }
            }
    return sum;
}

/* Keeps the atoms (x and q, compacted in their order) inside
   [lo, lo + extent] along every axis, widened by a millionth of the
   extent against rounding; returns how many.  Where only points at least
   a cutoff inside that box are summed, an atom outside it adds nothing;
   a cell list over the box would clamp it into a boundary cell, where
   every point near that face would read it (a small map in a large
   system then cost time in proportion to all the atoms: an audit,
   11 s for 200,000 atoms where 6,000 took 1.8). */
static size_t elec__cpu_keep_inside(double *x, double *q, size_t n, const double lo[3],
                                    const double extent[3]) {
    size_t i, kept = 0;
    for (i = 0; i < n; i++) {
        int axis, inside = 1;
        for (axis = 0; axis < 3; axis++) {
            const double slack = 1e-6 * extent[axis], v = x[3 * i + axis];
            if (!(v >= lo[axis] - slack && v <= lo[axis] + extent[axis] + slack)) inside = 0;
        }
        if (!inside) continue;
        memmove(x + 3 * kept, x + 3 * i, 3 * sizeof *x);
        q[kept++] = q[i];
    }
    return kept;
}

ELEC_DEF elec_status elec_cpu_cutoff_map(const elec_atoms *atoms,
                                         const elec_lattice *lattice,
                                         const elec_cutoff_params *params,
                                         float *map, elec_error *err) {
    elec_cutoff_params p;
    elec_cells cells;
    double *x = NULL, *q = NULL, lo[3], hi[3], extent[3], centre[3];
    elec_status s;
    size_t count, done = 0, block, kept;
    int axis;
    if ((s = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return s;
    s = elec_lattice_check_points(lattice, params ? params->max_points : 0, err);
    if (s != ELEC_OK) return s;
    if ((s = elec_cutoff_params_resolve(params, &p, err)) != ELEC_OK) return s;
    if (!map) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "map is NULL");
    memset(&cells, 0, sizeof cells);
    for (axis = 0; axis < 3; axis++) {
        double half = 0.5 * (lattice->dims[axis] - 1) * lattice->spacing[axis];
        centre[axis] = lattice->origin[axis] + half;
        lo[axis] = -half;
        hi[axis] = half;
    }
    if ((s = elec__cpu_gather(atoms, centre, &x, &q, NULL, NULL, err)) != ELEC_OK)
        goto cleanup;
    /* cells over the lattice and a cutoff around it, holding only the
       atoms there: atoms beyond add nothing, and a point's cell is then
       never clamped */
    for (axis = 0; axis < 3; axis++) {
        lo[axis] -= p.cutoff;
        extent[axis] = hi[axis] + p.cutoff - lo[axis];
        if (!elec__finite(extent[axis])) { /* named here, not by the cells */
            s = elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                           "cutoff %g A: the lattice and twice the cutoff around it pass "
                           "double's range",
                           p.cutoff);
            goto cleanup;
        }
    }
    kept = elec__cpu_keep_inside(x, q, atoms->count, lo, extent);
    if ((s = elec_cells_build(x, kept, lo, extent, p.cutoff, &cells, err)) != ELEC_OK)
        goto cleanup;
    count = elec_lattice_size(lattice);
    block = count / 64 + 1;
    while (done < count) {
        long k, end = (long)(done + block < count ? done + block : count);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 256)
#endif
        for (k = (long)done; k < end; k++) {
            size_t ii = (size_t)k % (size_t)lattice->dims[0];
            size_t jj = (size_t)k / (size_t)lattice->dims[0] % (size_t)lattice->dims[1];
            size_t kk = (size_t)k / (size_t)lattice->dims[0] / (size_t)lattice->dims[1];
            double point[3];
            point[0] = ii * lattice->spacing[0] - 0.5 * (lattice->dims[0] - 1) * lattice->spacing[0];
            point[1] = jj * lattice->spacing[1] - 0.5 * (lattice->dims[1] - 1) * lattice->spacing[1];
            point[2] = kk * lattice->spacing[2] - 0.5 * (lattice->dims[2] - 1) * lattice->spacing[2];
            map[k] = (float)(p.scale * elec__short_range_at(&cells, x, q, point, p.cutoff,
                                                            p.kind, p.splitting, 0));
        }
        done = (size_t)end;
        if (p.progress && p.progress((double)done / (double)count, p.progress_user)) {
            s = elec__fail(err, ELEC_ERR_CANCELLED, 0,
                           "cutoff map cancelled by the progress callback");
            goto cleanup;
        }
    }
    if ((s = elec__results_finite("cutoff map", "point", map, NULL, count, "float", err)) !=
        ELEC_OK)
        goto cleanup;
    elec__ok(err);
cleanup:
    elec_cells_free(&cells);
    ELEC_FREE(x);
    ELEC_FREE(q);
    return s;
}

ELEC_DEF elec_status elec_cpu_cutoff_map_double(const elec_atoms *atoms,
                                                const elec_lattice *lattice,
                                                const elec_cutoff_params *params,
                                                double *map, elec_error *err) {
    const double c2 = ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE;
    elec_cutoff_params p;
    elec_status s;
    long k, count, first, block;
    if ((s = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return s;
    s = elec_lattice_check_points(lattice, params ? params->max_points : 0, err);
    if (s != ELEC_OK) return s;
    if ((s = elec_cutoff_params_resolve(params, &p, err)) != ELEC_OK) return s;
    if (!map) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "map is NULL");
    count = (long)elec_lattice_size(lattice);
    block = (long)elec__cpu_block((size_t)count);
    /* the reference: every atom at every point, through the view; blocks
       of points with progress between them (the callback was not called
       and the call could not be cancelled: an audit) */
    for (first = 0; first < count; first += block) {
        const long last = count - first < block ? count : first + block;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 64)
#endif
        for (k = first; k < last; k++) {
            double point[3], sum = 0.0;
            size_t j;
            elec_lattice_point(lattice, (int)(k % lattice->dims[0]),
                               (int)(k / lattice->dims[0] % lattice->dims[1]),
                               (int)(k / lattice->dims[0] / lattice->dims[1]), point);
            for (j = 0; j < atoms->count; j++) {
                double at[3], q, r2;
                elec_atoms_get(atoms, j, at, &q, NULL);
                r2 = elec_distance2(point, at);
                if (r2 >= c2)
                    sum += q * elec_cutoff_term(sqrt(r2), p.cutoff, p.kind, p.splitting);
            }
            map[k] = p.scale * sum;
        }
        if (elec__cpu_cancelled(p.progress, p.progress_user, (size_t)last, (size_t)count))
            return elec__fail(err, ELEC_ERR_CANCELLED, 0,
                              "cutoff map (double) cancelled by the progress callback after "
                              "%ld of %ld points",
                              last, count);
    }
    if ((s = elec__results_finite("cutoff map", "point", NULL, map, (size_t)count, "double",
                                  err)) != ELEC_OK)
        return s;
    elec__ok(err);
    return ELEC_OK;
}

/* --------------------------------------------------------------------------- >>msm MSM */


/* One lattice of the hierarchy: points lo .. lo + n - 1 along each axis at
   spacing h 2^level, indices absolute (point m sits at m * spacing from
   the reference point), x fastest. */
typedef struct elec__msm_grid {
    long lo[3];
    int n[3];
    double *q, *e; /* charges and potentials */
} elec__msm_grid;

typedef struct elec__msm {
    elec_msm_params p;
    int interpolation, support; /* the basis is nonzero for |t| < support */
    int levels;           /* lattices 0 .. levels-1; the last is the top */
    elec__msm_grid grid[ELEC_MSM_MAX_LEVELS];
    int radius;           /* lattice-cutoff stencil radius, in points */
    double *stencil;      /* g_0 at k h for |k_axis| <= radius */
} elec__msm;

static size_t elec__msm_points(const elec__msm_grid *g) {
    return (size_t)g->n[0] * g->n[1] * g->n[2];
}

static size_t elec__msm_at(const elec__msm_grid *g, long i, long j, long k) {
    return (size_t)(i - g->lo[0]) +
           (size_t)g->n[0] * ((size_t)(j - g->lo[1]) +
                              (size_t)g->n[1] * (size_t)(k - g->lo[2]));
}

static void elec__msm_free(elec__msm *m) {
    int l;
    for (l = 0; l < m->levels; l++) {
        ELEC_FREE(m->grid[l].q);
        ELEC_FREE(m->grid[l].e);
    }
    ELEC_FREE(m->stencil);
}

/* The lattice kernel of level 0 between points r apart:
   g_0(r) = gamma(r/a)/a - gamma(r/2a)/(2a), zero from r = 2a on; level l's
   is g_0 / 2^l at the same offset in points (spacing and cutoff both
   double from level to level). */
static double elec__msm_g0(const elec__msm *m, double r) {
    const double a = m->p.cutoff;
    return elec_msm_gamma(r / a, m->p.splitting) / a -
           elec_msm_gamma(r / (2.0 * a), m->p.splitting) / (2.0 * a);
}

/* The lattices of elec__msm_shape_of (elec.h), allocated, and the
   lattice-cutoff stencil. */
static elec_status elec__msm_setup(elec__msm *m, const elec_msm_params *p,
                                   const double lo[3], const double hi[3], int levels,
                                   elec_error *err) {
    elec__msm_shape shape;
    elec_status status;
    int axis, l;
    size_t side, k;
    memset(m, 0, sizeof *m);
    m->p = *p;
    m->interpolation = (int)p->interpolation;
    m->support = elec_msm_support(m->interpolation);
    status = elec__msm_shape_of(p, lo, hi, levels, ELEC__MSM_MAX_WORK_CPU, &shape, err);
    if (status != ELEC_OK) return status;
    for (l = 0; l < shape.levels; l++) {
        elec__msm_grid *g = &m->grid[l];
        size_t count = elec__msm_shape_points(&shape, l);
        for (axis = 0; axis < 3; axis++) {
            g->lo[axis] = shape.lo[l][axis];
            g->n[axis] = shape.n[l][axis];
        }
        g->q = (double *)ELEC_MALLOC(count * sizeof *g->q);
        g->e = (double *)ELEC_MALLOC(count * sizeof *g->e);
        m->levels = l + 1;
        if (!g->q || !g->e)
            return elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                              "no memory for an MSM lattice of %zu points", count);
        memset(g->q, 0, count * sizeof *g->q);
        memset(g->e, 0, count * sizeof *g->e);
    }
    m->radius = (int)ceil(2.0 * p->cutoff / p->spacing);
    side = 2 * (size_t)m->radius + 1;
    m->stencil = (double *)ELEC_MALLOC(side * side * side * sizeof *m->stencil);
    if (!m->stencil)
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for stencils");
    for (k = 0; k < side * side * side; k++) {
        double dx = (double)((long)(k % side) - m->radius);
        double dy = (double)((long)(k / side % side) - m->radius);
        double dz = (double)((long)(k / side / side) - m->radius);
        m->stencil[k] = elec__msm_g0(m, p->spacing * sqrt(dx * dx + dy * dy + dz * dz));
    }
    return ELEC_OK;
}

/* The 2 * support basis weights along one axis for a position t (in
   lattice units): points first .. first + 2s - 1, weight Phi(t - m). */
#define ELEC__MSM_MAX_WIDTH 10
static long elec__msm_weights(const elec__msm *m, double t, double *w,
                              double *dw) {
    return elec_msm_axis_weights(t, m->interpolation, w, dw);
}

/* Stage 1, anterpolation: q_0(m) = sum_j q_j Phi(x_j/h - m) (per axis). */
static void elec__msm_anterpolate(elec__msm *m, const double *x,
                                  const double *q, size_t n) {
    elec__msm_grid *g = &m->grid[0];
    const int width = 2 * m->support;
    size_t j;
    for (j = 0; j < n; j++) {
        double w[3][ELEC__MSM_MAX_WIDTH];
        long first[3];
        int a, b, c, axis;
        for (axis = 0; axis < 3; axis++)
            first[axis] = elec__msm_weights(m, x[3 * j + axis] / m->p.spacing,
                                            w[axis], NULL);
        for (c = 0; c < width; c++)
            for (b = 0; b < width; b++)
                for (a = 0; a < width; a++)
                    g->q[elec__msm_at(g, first[0] + a, first[1] + b, first[2] + c)] +=
                        q[j] * w[0][a] * w[1][b] * w[2][c];
    }
}

/* Stages 2 and 4: restriction q_{l+1}(M) += Phi(m/2 - M) q_l(m) and its
   transpose, prolongation e_l(m) += sum_M Phi(m/2 - M) e_{l+1}(M). */
static void elec__msm_transfer(elec__msm *m, int fine_level, int restrict_up) {
    elec__msm_grid *f = &m->grid[fine_level], *c = &m->grid[fine_level + 1];
    const int width = 2 * m->support;
    long i, j, k;
    for (k = f->lo[2]; k < f->lo[2] + f->n[2]; k++)
        for (j = f->lo[1]; j < f->lo[1] + f->n[1]; j++)
            for (i = f->lo[0]; i < f->lo[0] + f->n[0]; i++) {
                double w[3][ELEC__MSM_MAX_WIDTH], sum = 0.0;
                long first[3], fine[3];
                int a, b, cc, axis;
                size_t at = elec__msm_at(f, i, j, k);
                fine[0] = i;
                fine[1] = j;
                fine[2] = k;
                if (restrict_up && f->q[at] == 0.0) continue;
                for (axis = 0; axis < 3; axis++)
                    first[axis] = elec__msm_weights(m, 0.5 * (double)fine[axis],
                                                    w[axis], NULL);
                for (cc = 0; cc < width; cc++)
                    for (b = 0; b < width; b++)
                        for (a = 0; a < width; a++) {
                            double weight = w[0][a] * w[1][b] * w[2][cc];
                            size_t to;
                            if (weight == 0.0) continue;
                            to = elec__msm_at(c, first[0] + a, first[1] + b,
                                              first[2] + cc);
                            if (restrict_up) c->q[to] += weight * f->q[at];
                            else sum += weight * c->e[to];
                        }
                if (!restrict_up) f->e[at] += sum;
            }
}

/* Stage 3 below the top: e_l(m) = 2^-l sum_k g_0(|k| h) q_l(m + k), for
   the points first .. last - 1 of level `level` (in blocks, so that a long
   sum reports progress and can be cancelled between them). */
static void elec__msm_lattice_cutoff(elec__msm *m, int level, long first, long last) {
    elec__msm_grid *g = &m->grid[level];
    const long r = m->radius, side = 2 * r + 1;
    const double factor = 1.0 / (double)(1L << level);
    long at;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic)
#endif
    for (at = first; at < last; at++) {
        long i = at % g->n[0], j = at / g->n[0] % g->n[1], k = at / g->n[0] / g->n[1];
        long di, dj, dk;
        double sum = 0.0;
        for (dk = -r; dk <= r; dk++) {
            if (k + dk < 0 || k + dk >= g->n[2]) continue;
            for (dj = -r; dj <= r; dj++) {
                const double *row, *q;
                long lo, hi;
                if (j + dj < 0 || j + dj >= g->n[1]) continue;
                row = m->stencil + ((dk + r) * side + (dj + r)) * side + r;
                q = g->q + (size_t)g->n[0] * ((size_t)(j + dj) +
                                              (size_t)g->n[1] * (size_t)(k + dk));
                lo = i - r < 0 ? -i : -r;
                hi = i + r >= g->n[0] ? g->n[0] - 1 - i : r;
                for (di = lo; di <= hi; di++) sum += row[di] * q[i + di];
            }
        }
        g->e[at] = factor * sum;
    }
}

/* Stage 3 at the top: the remaining smooth part gamma(r/a_L)/a_L summed
   directly between all of the top lattice's points. */
static void elec__msm_top(elec__msm *m) {
    const int top = m->levels - 1;
    elec__msm_grid *g = &m->grid[top];
    const double scale = (double)(1L << top);
    const double h = m->p.spacing * scale, a = m->p.cutoff * scale;
    const long count = (long)elec__msm_points(g);
    long at;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic)
#endif
    for (at = 0; at < count; at++) {
        long i = at % g->n[0], j = at / g->n[0] % g->n[1], k = at / g->n[0] / g->n[1];
        long other;
        double sum = 0.0;
        for (other = 0; other < count; other++) {
            double dx, dy, dz, r;
            if (g->q[other] == 0.0) continue;
            dx = (double)(other % g->n[0] - i);
            dy = (double)(other / g->n[0] % g->n[1] - j);
            dz = (double)(other / g->n[0] / g->n[1] - k);
            r = h * sqrt(dx * dx + dy * dy + dz * dz);
            sum += g->q[other] * elec_msm_gamma(r / a, m->p.splitting) / a;
        }
        g->e[at] += sum;
    }
}

/* The progress callback of a call, and the span [from, to] of its
   fraction that a stage reports over. */
typedef struct elec__msm_progress {
    elec_progress_fn fn;
    void *user;
    double from, to;
} elec__msm_progress;

/* Points of the levels below the top: what the lattice cutoff sums over. */
static double elec__msm_points_below_top(const elec__msm *m) {
    double points = 0.0;
    int l;
    for (l = 0; l + 1 < m->levels; l++) points += (double)elec__msm_points(&m->grid[l]);
    return points;
}

/* Reports `done` of the stage; ELEC_ERR_CANCELLED where the callback asks. */
static elec_status elec__msm_report(const elec__msm_progress *pr, double done,
                                    elec_error *err) {
    if (pr && pr->fn && pr->fn(pr->from + done * (pr->to - pr->from), pr->user))
        return elec__fail(err, ELEC_ERR_CANCELLED, 0, "MSM cancelled by the progress callback");
    return ELEC_OK;
}

/* Stages 1 to 4 in three steps: up (anterpolation, restriction), across
   (every level's lattice cutoff, the top), down (prolongation).  Across
   holds the work where atoms spread far apart (lattices of millions of
   mostly empty points, each with a stencil of thousands: eight ions 160
   and 200 A apart once ran 4 and 7.7 s here with no word, growing as the
   span cubed), so it runs in blocks of a 64th of the points,
   reporting progress between them and stopping where it is cancelled. */
static void elec__msm_up(elec__msm *m, const double *x, const double *q, size_t n) {
    int l;
    elec__msm_anterpolate(m, x, q, n);
    for (l = 0; l + 1 < m->levels; l++) elec__msm_transfer(m, l, 1);
}
static elec_status elec__msm_across(elec__msm *m, const elec__msm_progress *pr,
                                    elec_error *err) {
    const double total = elec__msm_points_below_top(m);
    double done = 0.0;
    elec_status s;
    int l;
    for (l = 0; l + 1 < m->levels; l++) {
        const long points = (long)elec__msm_points(&m->grid[l]);
        const long block = (long)(total / 64.0) + 1;
        long first;
        for (first = 0; first < points; first += block) {
            const long last = first + block < points ? first + block : points;
            elec__msm_lattice_cutoff(m, l, first, last);
            done += (double)(last - first);
            if ((s = elec__msm_report(pr, done / total, err)) != ELEC_OK) return s;
        }
    }
    elec__msm_top(m);
    return elec__msm_report(pr, 1.0, err); /* (once at least: one level has no blocks) */
}
static void elec__msm_down(elec__msm *m) {
    int l;
    for (l = m->levels - 2; l >= 0; l--) elec__msm_transfer(m, l, 0);
}

/* Stages 1 to 4: charges in, lattice potentials e_0 out. */
static elec_status elec__msm_long_range(elec__msm *m, const double *x, const double *q,
                                        size_t n, const elec__msm_progress *pr,
                                        elec_error *err) {
    elec_status s;
    elec__msm_up(m, x, q, n);
    if ((s = elec__msm_across(m, pr, err)) != ELEC_OK) return s;
    elec__msm_down(m);
    return ELEC_OK;
}

/* The share of a call's progress the hierarchy takes beside `targets`
   points or atoms: its lattice cutoff's multiply-adds (each point below
   the top times the stencil) against the targets', each an interpolation
   (width^3) and its short-range partners (about 0.1 /A^3 within a). */
static double elec__msm_hierarchy_share(const elec__msm *m, size_t targets) {
    const double side = 2.0 * (double)m->radius + 1.0, width = 2.0 * m->support;
    const double a = m->p.cutoff;
    const double across = elec__msm_points_below_top(m) * side * side * side;
    const double rest = (double)targets * (width * width * width + 0.1 * 4.18879 * a * a * a);
    return across + rest > 0.0 ? across / (across + rest) : 0.0;
}

/* Stage 5, interpolation: phi(x) = sum_m Phi(x/h - m) e_0(m), and its
   gradient when grad is not NULL. */
static double elec__msm_interpolate(const elec__msm *m, const double *x,
                                    double *grad) {
    const elec__msm_grid *g = &m->grid[0];
    const int width = 2 * m->support;
    double w[3][ELEC__MSM_MAX_WIDTH], dw[3][ELEC__MSM_MAX_WIDTH], phi = 0.0;
    long first[3];
    int a, b, c, axis;
    for (axis = 0; axis < 3; axis++)
        first[axis] = elec__msm_weights(m, x[axis] / m->p.spacing, w[axis],
                                        grad ? dw[axis] : NULL);
    if (grad) grad[0] = grad[1] = grad[2] = 0.0;
    for (c = 0; c < width; c++)
        for (b = 0; b < width; b++)
            for (a = 0; a < width; a++) {
                double e = g->e[elec__msm_at(g, first[0] + a, first[1] + b, first[2] + c)];
                phi += w[0][a] * w[1][b] * w[2][c] * e;
                if (grad) {
                    grad[0] += dw[0][a] * w[1][b] * w[2][c] * e / m->p.spacing;
                    grad[1] += w[0][a] * dw[1][b] * w[2][c] * e / m->p.spacing;
                    grad[2] += w[0][a] * w[1][b] * dw[2][c] * e / m->p.spacing;
                }
            }
    return phi;
}

/* Where the potential is wanted: point index -> position relative to the
   reference.  Lattice points and plain arrays. */
typedef struct elec__msm_points_of {
    const elec_lattice *lattice; /* or NULL: points */
    const double *points;
    double reference[3];
} elec__msm_points_of;

static void elec__msm_point(const elec__msm_points_of *s, size_t index,
                            double *point) {
    int axis;
    if (s->lattice) {
        const elec_lattice *l = s->lattice;
        size_t i = index % (size_t)l->dims[0];
        size_t j = index / (size_t)l->dims[0] % (size_t)l->dims[1];
        size_t k = index / (size_t)l->dims[0] / (size_t)l->dims[1];
        elec_lattice_point(l, (int)i, (int)j, (int)k, point);
    } else {
        for (axis = 0; axis < 3; axis++) point[axis] = s->points[3 * index + axis];
    }
    for (axis = 0; axis < 3; axis++) point[axis] -= s->reference[axis];
}

/* The potential at count points spanning lo..hi (relative coordinates):
   the lattice hierarchy once, then per point interpolation plus the
   short-range sum, in blocks with progress between them.  method names
   the call in the message about a value past its output's range. */
static elec_status elec__msm_potential(const elec_atoms *atoms,
                                       const elec_msm_params *resolved,
                                       const elec__msm_points_of *where,
                                       const double lo_points[3],
                                       const double hi_points[3], size_t count,
                                       double *out_double, float *out_float,
                                       const char *method, elec_error *err) {
    const elec_msm_params p = *resolved;
    elec__msm m;
    elec_cells cells;
    elec__msm_progress pr;
    double *x = NULL, *q = NULL, lo[3], hi[3], extent[3], share;
    elec_status s;
    size_t done = 0, block = count / 64 + 1;
    int axis;
    memset(&m, 0, sizeof m);
    memset(&cells, 0, sizeof cells);
    for (axis = 0; axis < 3; axis++) {
        lo[axis] = lo_points[axis];
        hi[axis] = hi_points[axis];
    }
    if ((s = elec__cpu_gather(atoms, where->reference, &x, &q, lo, hi, err)) != ELEC_OK)
        goto cleanup;
    if ((s = elec__msm_setup(&m, &p, lo, hi, 0, err)) != ELEC_OK) goto cleanup;
    pr.fn = p.progress;
    pr.user = p.progress_user;
    pr.from = 0.0;
    pr.to = share = elec__msm_hierarchy_share(&m, count);
    if ((s = elec__msm_long_range(&m, x, q, atoms->count, &pr, err)) != ELEC_OK) goto cleanup;
    for (axis = 0; axis < 3; axis++) extent[axis] = hi[axis] - lo[axis] + 1e-9;
    if ((s = elec__cells_build_windowed(x, atoms->count, lo, extent, p.cutoff, &cells, err)) !=
        ELEC_OK)
        goto cleanup;
    while (done < count) {
        long i, end = (long)(done + block < count ? done + block : count);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 64)
#endif
        for (i = (long)done; i < end; i++) {
            double point[3], phi;
            elec__msm_point(where, (size_t)i, point);
            phi = p.scale * (elec__msm_interpolate(&m, point, NULL) +
                             elec__short_range_at(&cells, x, q, point, p.cutoff,
                                                  ELEC_CUTOFF_MSM, p.splitting, 1));
            if (out_double) out_double[i] = phi;
            else out_float[i] = (float)phi;
        }
        done = (size_t)end;
        if (p.progress &&
            p.progress(share + (1.0 - share) * (double)done / (double)count, p.progress_user)) {
            s = elec__fail(err, ELEC_ERR_CANCELLED, 0,
                           "MSM cancelled by the progress callback");
            goto cleanup;
        }
    }
    if ((s = elec__results_finite(method, out_double ? "potential at point" : "point",
                                  out_float, out_double, count,
                                  out_double ? "double" : "float", err)) != ELEC_OK)
        goto cleanup;
    elec__ok(err);
cleanup:
    elec_cells_free(&cells);
    elec__msm_free(&m);
    ELEC_FREE(x);
    ELEC_FREE(q);
    return s;
}

ELEC_DEF elec_status elec_cpu_msm_map(const elec_atoms *atoms,
                                      const elec_lattice *lattice,
                                      const elec_msm_params *params,
                                      float *map, elec_error *err) {
    elec__msm_points_of where;
    double lo[3], hi[3];
    elec_status s;
    int axis;
    elec_msm_params p;
    if ((s = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return s;
    s = elec_lattice_check_points(lattice, params ? params->max_points : 0, err);
    if (s != ELEC_OK) return s;
    s = elec_msm_params_resolve(params, (double)elec_lattice_size(lattice) /
                                            (double)(atoms->count ? atoms->count : 1),
                                &p, err);
    if (s != ELEC_OK) return s;
    if ((s = elec__msm_no_exclusions(&p, err)) != ELEC_OK) return s;
    if (!map) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "map is NULL");
    where.lattice = lattice;
    where.points = NULL;
    for (axis = 0; axis < 3; axis++) {
        double half = 0.5 * (lattice->dims[axis] - 1) * lattice->spacing[axis];
        where.reference[axis] = lattice->origin[axis] + half;
        lo[axis] = -half;
        hi[axis] = half;
    }
    return elec__msm_potential(atoms, &p, &where, lo, hi, elec_lattice_size(lattice), NULL,
                               map, "MSM map", err);
}

ELEC_DEF elec_status elec_cpu_msm_points(const elec_atoms *atoms,
                                         const double *points,
                                         size_t point_count,
                                         const elec_msm_params *params,
                                         double *potential, elec_error *err) {
    elec__msm_points_of where;
    double lo[3], hi[3];
    elec_status s;
    size_t i;
    int axis;
    elec_msm_params p;
    if ((s = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return s;
    s = elec_msm_params_resolve(params, (double)point_count /
                                            (double)(atoms->count ? atoms->count : 1),
                                &p, err);
    if (s != ELEC_OK) return s;
    if ((s = elec__msm_no_exclusions(&p, err)) != ELEC_OK) return s;
    if ((s = elec__cpu_points_check(points, point_count, potential, err)) != ELEC_OK)
        return s;
    if (point_count == 0) {
        elec__ok(err);
        return ELEC_OK;
    }
    where.lattice = NULL;
    where.points = points;
    for (axis = 0; axis < 3; axis++) {
        lo[axis] = hi[axis] = points[axis];
        for (i = 1; i < point_count; i++) {
            double v = points[3 * i + axis];
            lo[axis] = v < lo[axis] ? v : lo[axis];
            hi[axis] = v > hi[axis] ? v : hi[axis];
        }
        where.reference[axis] = 0.5 * (lo[axis] + hi[axis]);
        lo[axis] -= where.reference[axis];
        hi[axis] -= where.reference[axis];
    }
    return elec__msm_potential(atoms, &p, &where, lo, hi, point_count, potential, NULL,
                               "MSM at points", err);
}

/* One evaluation of elec_cpu_msm_energy (which checks its forces against
   the tolerance: elec__msm_energy_checked). */
static elec_status elec__cpu_msm_energy_once(const elec_atoms *atoms,
                                             const elec_msm_params *params, double *energy,
                                             double *forces, elec_error *err) {
    const double c2 = ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE;
    elec_msm_params p;
    elec__msm m;
    elec_cells cells;
    elec__msm_progress pr;
    double *x = NULL, *q = NULL, lo[3], hi[3], reference[3], extent[3];
    double long_range = 0.0, short_range = 0.0, self = 0.0;
    elec_status s;
    size_t i, n;
    int axis, levels;
    if ((s = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return s;
    if ((s = elec_msm_params_resolve(params, 1.0, &p, err)) != ELEC_OK) return s;
    if (!energy) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "energy is NULL");
    if ((s = elec__msm_no_exclusions(&p, err)) != ELEC_OK) return s;
    n = atoms->count;
    memset(&m, 0, sizeof m);
    memset(&cells, 0, sizeof cells);
    elec_atoms_bounds(atoms, lo, hi);
    levels = elec__msm_anchor(&p, lo, hi, reference);
    for (axis = 0; axis < 3; axis++) lo[axis] = hi[axis] = 0.0;
    if ((s = elec__cpu_gather(atoms, reference, &x, &q, lo, hi, err)) != ELEC_OK)
        goto cleanup;
    if ((s = elec__msm_setup(&m, &p, lo, hi, levels, err)) != ELEC_OK) goto cleanup;
    /* progress: the hierarchy, then the short range's atoms */
    pr.fn = p.progress;
    pr.user = p.progress_user;
    pr.from = 0.0;
    pr.to = elec__msm_hierarchy_share(&m, n);
    if ((s = elec__msm_long_range(&m, x, q, n, &pr, err)) != ELEC_OK) goto cleanup;
    pr.from = pr.to;
    pr.to = 1.0;
    if (forces) memset(forces, 0, 3 * n * sizeof *forces);
    for (i = 0; i < n; i++) {
        double grad[3];
        long_range += q[i] * elec__msm_interpolate(&m, x + 3 * i, forces ? grad : NULL);
        self += q[i] * q[i];
        if (forces)
            for (axis = 0; axis < 3; axis++) forces[3 * i + axis] -= q[i] * grad[axis];
    }
    /* each atom's own smooth part, gamma(0)/a, is no interaction */
    long_range = 0.5 * long_range -
                 0.5 * self * elec_msm_gamma(0.0, p.splitting) / p.cutoff;
    for (axis = 0; axis < 3; axis++) extent[axis] = hi[axis] - lo[axis] + 1e-9;
    if ((s = elec__cells_build_windowed(x, n, lo, extent, p.cutoff, &cells, err)) != ELEC_OK)
        goto cleanup;
    for (i = 0; i < n; i++) {
        int home[3], dx, dy, dz;
        if (i % (n / 64 + 1) == 0 && i > 0 &&
            (s = elec__msm_report(&pr, (double)i / (double)n, err)) != ELEC_OK)
            goto cleanup;
        elec_cells_ijk(&cells, x + 3 * i, home);
        for (dz = -1; dz <= 1; dz++)
            for (dy = -1; dy <= 1; dy++)
                for (dx = -1; dx <= 1; dx++) {
                    long cell = elec_cells_neighbour(&cells, home, dx, dy, dz, 0);
                    size_t k;
                    if (cell < 0) continue;
                    for (k = cells.start[cell]; k < cells.start[cell + 1]; k++) {
                        size_t j = cells.atom[k];
                        double d[3], r2, r, rho, f;
                        if (j <= i) continue;
                        for (axis = 0; axis < 3; axis++)
                            d[axis] = x[3 * i + axis] - x[3 * j + axis];
                        r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                        if (r2 >= p.cutoff * p.cutoff) continue;
                        if (r2 < c2) {
                            s = elec__name_atoms(
                                elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                           "atoms %zu and %zu coincide: their energy is "
                                           "infinite", i, j),
                                err, i, j);
                            goto cleanup;
                        }
                        r = sqrt(r2);
                        rho = r / p.cutoff;
                        short_range += q[i] * q[j] *
                                       (1.0 / r - elec_msm_gamma(rho, p.splitting) / p.cutoff);
                        if (!forces) continue;
                        /* -d/dr [1/r - gamma(r/a)/a] = 1/r^2 + gamma'(r/a)/a^2 */
                        f = q[i] * q[j] *
                            (1.0 / r2 + elec_msm_gamma_derivative(rho, p.splitting) /
                                            (p.cutoff * p.cutoff)) / r;
                        for (axis = 0; axis < 3; axis++) {
                            forces[3 * i + axis] += f * d[axis];
                            forces[3 * j + axis] -= f * d[axis];
                        }
                    }
                }
    }
    if ((s = elec__msm_report(&pr, 1.0, err)) != ELEC_OK) goto cleanup;
    *energy = p.scale * (long_range + short_range);
    for (i = 0; i < 3 * n && forces; i++) forces[i] *= p.scale;
    if ((s = elec__results_finite("MSM", "energy", NULL, energy, 1, "double", err)) != ELEC_OK ||
        (s = elec__results_finite("MSM", "force component", NULL, forces, 3 * n,
                                  "double", err)) != ELEC_OK)
        goto cleanup;
    elec__ok(err);
    s = ELEC_OK;
cleanup:
    /* a refusal leaves no partial forces (coincident atoms once left some) */
    if (s != ELEC_OK && forces) memset(forces, 0, 3 * n * sizeof *forces);
    elec_cells_free(&cells);
    elec__msm_free(&m);
    ELEC_FREE(x);
    ELEC_FREE(q);
    return s;
}

ELEC_DEF elec_status elec_cpu_msm_energy(const elec_atoms *atoms,
                                         const elec_msm_params *params,
                                         double *energy, double *forces,
                                         elec_error *err) {
    return elec__msm_energy_checked(elec__cpu_msm_energy_once, atoms, params, energy, forces,
                                    ELEC_MSM_TOLERANCE_FLOOR, err);
}

/* Level l's values of the hierarchy (q or e) into the lattices' array. */
static void elec__msm_copy_level(const elec__msm *m, int l, int potentials,
                                 const elec_msm_lattices *out, double *to) {
    const elec__msm_grid *g = &m->grid[l];
    memcpy(to + out->first[l], potentials ? g->e : g->q,
           elec__msm_points(g) * sizeof(double));
}

ELEC_DEF elec_status elec_cpu_msm_lattices(const elec_atoms *atoms, const double reference[3],
                                           const elec_msm_params *params,
                                           elec_msm_lattices *out, elec_error *err) {
    elec_msm_params p;
    elec__msm m;
    elec__msm_shape shape;
    elec__msm_progress pr;
    double *x = NULL, *q = NULL, lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0}, ref[3];
    elec_status s;
    size_t i;
    int l, axis, levels = 0;
    if ((s = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return s;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    memset(out, 0, sizeof *out);
    if ((s = elec_msm_params_resolve(params, 1.0, &p, err)) != ELEC_OK) return s;
    if ((s = elec__msm_no_exclusions(&p, err)) != ELEC_OK) return s;
    memset(&m, 0, sizeof m);
    if (reference) {
        for (axis = 0; axis < 3; axis++) {
            if (!elec__finite(reference[axis]))
                return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                  "reference[%d] %g is not finite", axis, reference[axis]);
            ref[axis] = reference[axis];
        }
    } else {
        elec_atoms_bounds(atoms, lo, hi);
        levels = elec__msm_anchor(&p, lo, hi, ref); /* the energy's */
        for (axis = 0; axis < 3; axis++) lo[axis] = hi[axis] = 0.0;
    }
    if ((s = elec__cpu_gather(atoms, ref, &x, &q, lo, hi, err)) != ELEC_OK) goto cleanup;
    if ((s = elec__msm_shape_of(&p, lo, hi, levels, ELEC__MSM_MAX_WORK_CPU, &shape, err)) !=
            ELEC_OK ||
        (s = elec__msm_setup(&m, &p, lo, hi, levels, err)) != ELEC_OK ||
        (s = elec__msm_lattices_alloc(&shape, atoms->count, out, err)) != ELEC_OK)
        goto cleanup;
    elec__msm_up(&m, x, q, atoms->count);
    for (l = 0; l < m.levels; l++) elec__msm_copy_level(&m, l, 0, out, out->q);
    pr.fn = p.progress;
    pr.user = p.progress_user;
    pr.from = 0.0;
    pr.to = 1.0;
    if ((s = elec__msm_across(&m, &pr, err)) != ELEC_OK) goto cleanup;
    for (l = 0; l < m.levels; l++) elec__msm_copy_level(&m, l, 1, out, out->cutoff);
    elec__msm_down(&m);
    for (l = 0; l < m.levels; l++) elec__msm_copy_level(&m, l, 1, out, out->e);
    for (i = 0; i < atoms->count; i++)
        out->phi[i] = elec__msm_interpolate(&m, x + 3 * i, out->grad + 3 * i);
    elec__ok(err);
    s = ELEC_OK;
cleanup:
    if (s != ELEC_OK) elec_msm_lattices_free(out);
    elec__msm_free(&m);
    ELEC_FREE(x);
    ELEC_FREE(q);
    return s;
}

/* --------------------------------------------------------- periodic MSM */

/* Periodic MSM: the hierarchy of elec.h's elec__pmsm_shape (its comment
   gives the splitting), in double.  Once all axes are down to one point
   the smooth rest g_L is (to far below the method's error, as a_L >=
   (a/h) L_d) the constant that gives the periodic potential zero mean:
   Ewald's convention, whose background term it reproduces for a net
   charge. */

/* A lattice of the periodic hierarchy: the shape's n, h and stencil
   extent of its level, with its charges, potentials and stencil. */
typedef struct elec__pmsm_level {
    int n[3];
    double h[3];
    long stencil_first[3];
    int stencil_width[3];
    double *q, *e, *stencil;
    double stencil_total; /* its stencil's values summed (elec__pmsm_constant) */
} elec__pmsm_level;

typedef struct elec__pmsm {
    elec_msm_params p;
    int interpolation, support;
    int levels; /* lattices 0 .. levels-1 carry K_0 .. K_{levels-1} */
    double length[3];
    elec__pmsm_shape shape;
    elec__pmsm_level level[ELEC_MSM_MAX_LEVELS];
    double *scratch; /* the transfers' partial lattices (elec__pmsm_transfer) */
} elec__pmsm;

static size_t elec__pmsm_points(const elec__pmsm_level *g) {
    return (size_t)g->n[0] * (size_t)g->n[1] * (size_t)g->n[2];
}

static void elec__pmsm_free(elec__pmsm *m) {
    int l;
    for (l = 0; l < m->levels; l++) {
        ELEC_FREE(m->level[l].q);
        ELEC_FREE(m->level[l].e);
        ELEC_FREE(m->level[l].stencil);
    }
    ELEC_FREE(m->scratch);
}

/* Lattices 0 .. levels-1 of elec__pmsm_shape_of, each with zeroed charges
   and potentials and its stencil (elec__pmsm_stencil_fill), and the
   transfers' scratch. */
static elec_status elec__pmsm_setup(elec__pmsm *m, const elec_msm_params *p,
                                    const elec_box *box, elec_error *err) {
    elec__pmsm_shape shape;
    size_t scratch = 0;
    int axis, l;
    elec_status s;
    memset(m, 0, sizeof *m);
    m->p = *p;
    m->interpolation = (int)p->interpolation;
    m->support = elec_msm_support(m->interpolation);
    for (axis = 0; axis < 3; axis++) m->length[axis] = box->length[axis];
    if ((s = elec__pmsm_shape_of(p, box, &shape, err)) != ELEC_OK) return s;
    m->shape = shape;
    m->levels = shape.levels;
    for (l = 0; l < m->levels; l++) {
        elec__pmsm_level *g = &m->level[l];
        size_t count = elec__pmsm_shape_points(&shape, l);
        size_t stencil = elec__pmsm_stencil_points(&shape, l);
        for (axis = 0; axis < 3; axis++) {
            g->n[axis] = shape.n[l][axis];
            g->h[axis] = shape.h[l][axis];
            g->stencil_first[axis] = shape.stencil_first[l][axis];
            g->stencil_width[axis] = shape.stencil_width[l][axis];
        }
        g->q = (double *)ELEC_MALLOC(count * sizeof *g->q);
        g->e = (double *)ELEC_MALLOC(count * sizeof *g->e);
        g->stencil = (double *)ELEC_MALLOC(stencil * sizeof *g->stencil);
        if (!g->q || !g->e || !g->stencil)
            return elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                              "no memory for a periodic MSM lattice of %zu points "
                              "and its stencil of %zu", count, stencil);
        memset(g->q, 0, count * sizeof *g->q);
        memset(g->e, 0, count * sizeof *g->e);
        g->stencil_total = elec__pmsm_stencil_fill(p, &shape, l, g->stencil);
    }
    for (l = 0; l + 1 < m->levels; l++) {
        const int *f = shape.n[l], *c = shape.n[l + 1];
        const size_t partial = (size_t)c[0] * (size_t)f[1] * (size_t)f[2] +
                               (size_t)c[0] * (size_t)c[1] * (size_t)f[2];
        if (partial > scratch) scratch = partial;
    }
    m->scratch = (double *)ELEC_MALLOC((scratch + 1) * sizeof *m->scratch);
    if (!m->scratch)
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                          "no memory for periodic MSM's transfers (%zu points)", scratch);
    return ELEC_OK;
}

/* The finest lattice's points around a position, wrapped: per axis the
   2s weights Phi(x/h - m) (and d/dx where dw is not NULL) and indices. */
static void elec__pmsm_atom_weights(const elec__pmsm *m, const double *x,
                                    double w[3][ELEC__MSM_MAX_WIDTH],
                                    double dw[3][ELEC__MSM_MAX_WIDTH],
                                    long index[3][ELEC__MSM_MAX_WIDTH]) {
    const elec__pmsm_level *g = &m->level[0];
    int axis, k;
    for (axis = 0; axis < 3; axis++) {
        long first = elec_msm_axis_weights(x[axis] / g->h[axis], m->interpolation,
                                           w[axis], dw ? dw[axis] : NULL);
        for (k = 0; k < 2 * m->support; k++) {
            index[axis][k] = elec__pmsm_wrap(first + k, g->n[axis]);
            if (dw) dw[axis][k] /= g->h[axis];
        }
    }
}

/* Stage 1, anterpolation: q_0(m) = sum_j q_j Phi(x_j/h - m), m modulo n. */
static void elec__pmsm_anterpolate(elec__pmsm *m, const double *x,
                                   const double *q, size_t count) {
    elec__pmsm_level *g = &m->level[0];
    const int width = 2 * m->support;
    size_t j;
    for (j = 0; j < count; j++) {
        double w[3][ELEC__MSM_MAX_WIDTH];
        long index[3][ELEC__MSM_MAX_WIDTH];
        int a, b, c;
        elec__pmsm_atom_weights(m, x + 3 * j, w, NULL, index);
        for (c = 0; c < width; c++)
            for (b = 0; b < width; b++)
                for (a = 0; a < width; a++)
                    g->q[index[0][a] + g->n[0] * (index[1][b] + g->n[1] * index[2][c])] +=
                        q[j] * w[0][a] * w[1][b] * w[2][c];
    }
}

/* The transfer between a fine level and the next along one axis: fine
   point i feeds coarse points first[i % 2] + i / 2 + k (k < width, modulo
   the coarse count) with weights w[i % 2][k] = Phi(i/2 - M), which depend
   on i only through its parity and i / 2.  Along an axis already at one
   point it is the identity (width 1, weight 1, first i). */
typedef struct elec__pmsm_axis_transfer {
    int width, identity;
    long first[2], coarse_n;
    double w[2][ELEC__MSM_MAX_WIDTH];
} elec__pmsm_axis_transfer;

static elec__pmsm_axis_transfer elec__pmsm_axis_transfer_of(const elec__pmsm *m, int fine_level,
                                                            int axis) {
    elec__pmsm_axis_transfer t;
    int parity;
    memset(&t, 0, sizeof t);
    t.coarse_n = m->level[fine_level + 1].n[axis];
    t.identity = m->level[fine_level].n[axis] == t.coarse_n;
    t.width = t.identity ? 1 : 2 * m->support;
    t.w[0][0] = t.w[1][0] = 1.0;
    for (parity = 0; parity < 2 && !t.identity; parity++)
        t.first[parity] = elec_msm_axis_weights(0.5 * parity, m->interpolation, t.w[parity],
                                                NULL);
    return t;
}

/* One axis of stage 2 or 4 over an array of dims[3] points, x fastest, in
   place of dims[axis] fine or coarse points: restriction (restrict_up)
   adds each fine point's value times its weights to out's coarse points,
   prolongation adds to each fine point of out its coarse points of in
   times their weights.  Lines along the axis are independent (one
   thread each). */
static void elec__pmsm_transfer_axis(const elec__pmsm *m, int fine_level, int axis,
                                     int restrict_up, const double *in, double *out,
                                     const long dims[3]) {
    const elec__pmsm_axis_transfer t = elec__pmsm_axis_transfer_of(m, fine_level, axis);
    const long fine_n = m->level[fine_level].n[axis];
    const long in_n = restrict_up ? fine_n : t.coarse_n;
    const long out_n = restrict_up ? t.coarse_n : fine_n;
    const int u = axis == 0 ? 1 : 0, v = axis == 2 ? 1 : 2; /* the other two axes */
    long in_stride[3], out_stride[3], line;
    int d;
    for (d = 0; d < 3; d++) {
        in_stride[d] = d == 0 ? 1 : in_stride[d - 1] * (d - 1 == axis ? in_n : dims[d - 1]);
        out_stride[d] = d == 0 ? 1 : out_stride[d - 1] * (d - 1 == axis ? out_n : dims[d - 1]);
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (line = 0; line < dims[u] * dims[v]; line++) {
        const long at_u = line % dims[u], at_v = line / dims[u];
        const double *from = in + at_u * in_stride[u] + at_v * in_stride[v];
        double *to = out + at_u * out_stride[u] + at_v * out_stride[v];
        const long step_in = in_stride[axis], step_out = out_stride[axis];
        long i;
        for (i = 0; i < fine_n; i++) {
            const double *w = t.w[i % 2];
            long at = t.identity ? i : elec__pmsm_wrap(t.first[i % 2] + i / 2, t.coarse_n);
            double sum = 0.0;
            int k;
            if (restrict_up) {
                const double value = from[i * step_in];
                if (value == 0.0) continue;
                for (k = 0; k < t.width; k++) {
                    to[at * step_out] += w[k] * value;
                    if (++at == t.coarse_n) at = 0;
                }
            } else {
                for (k = 0; k < t.width; k++) {
                    sum += w[k] * from[at * step_in];
                    if (++at == t.coarse_n) at = 0;
                }
                to[i * step_out] += sum;
            }
        }
    }
}

/* Stages 2 and 4: restriction q_{l+1}(M) += sum_m Phi(m/2 - M) q_l(m) and
   its transpose, prolongation e_l(m) += sum_M Phi(m/2 - M) e_{l+1}(M), M
   modulo the coarse lattice.  Phi(m/2 - M) is a product over the axes, so
   each is one axis at a time (x, y, z up; z, y, x down): about 2 s (1 +
   1/2 + 1/4) multiply-adds a fine point where the 3-D stencil takes
   (2s)^3 (nonic: 18 against 1,000).  scratch holds two partial lattices
   (elec__pmsm_setup sizes it). */
static void elec__pmsm_transfer(elec__pmsm *m, int fine_level, int restrict_up) {
    const elec__pmsm_level *f = &m->level[fine_level], *c = &m->level[fine_level + 1];
    const long fine[3] = {f->n[0], f->n[1], f->n[2]}, coarse[3] = {c->n[0], c->n[1], c->n[2]};
    /* dims along the way: (C, f, f) and (C, C, f), C the coarse counts */
    const long after_x[3] = {coarse[0], fine[1], fine[2]};
    const long after_y[3] = {coarse[0], coarse[1], fine[2]};
    double *x_done = m->scratch, *xy_done = m->scratch + coarse[0] * fine[1] * fine[2];
    memset(m->scratch, 0, (size_t)(coarse[0] * fine[1] * fine[2] +
                                   coarse[0] * coarse[1] * fine[2]) * sizeof *m->scratch);
    if (restrict_up) {
        elec__pmsm_transfer_axis(m, fine_level, 0, 1, f->q, x_done, fine);
        elec__pmsm_transfer_axis(m, fine_level, 1, 1, x_done, xy_done, after_x);
        elec__pmsm_transfer_axis(m, fine_level, 2, 1, xy_done, c->q, after_y);
    } else {
        elec__pmsm_transfer_axis(m, fine_level, 2, 0, c->e, xy_done, after_y);
        elec__pmsm_transfer_axis(m, fine_level, 1, 0, xy_done, x_done, after_x);
        elec__pmsm_transfer_axis(m, fine_level, 0, 0, x_done, f->e, fine);
    }
}

/* Stage 3: e_l(m) = sum_k K_l(|k h_l|) q_l(m + k), indices modulo n (the
   folded stencil already holds the images along short axes). */
static void elec__pmsm_lattice_cutoff(elec__pmsm *m, int level) {
    elec__pmsm_level *g = &m->level[level];
    const int *w = g->stencil_width;
    long at;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic)
#endif
    for (at = 0; at < (long)elec__pmsm_points(g); at++) {
        const long i = at % g->n[0], j = at / g->n[0] % g->n[1],
                   k = at / g->n[0] / g->n[1];
        const long start = elec__pmsm_wrap(i + g->stencil_first[0], g->n[0]);
        double sum = 0.0;
        long c, b, a;
        for (c = 0; c < w[2]; c++) {
            const long kk = elec__pmsm_wrap(k + g->stencil_first[2] + c, g->n[2]);
            for (b = 0; b < w[1]; b++) {
                const long jj = elec__pmsm_wrap(j + g->stencil_first[1] + b, g->n[1]);
                const double *row = g->stencil + w[0] * (b + (long)w[1] * c);
                const double *q = g->q + g->n[0] * (jj + (long)g->n[1] * kk);
                long ii = start;
                for (a = 0; a < w[0]; a++) {
                    sum += row[a] * q[ii];
                    if (++ii == g->n[0]) ii = 0;
                }
            }
        }
        g->e[at] = sum;
    }
}

#ifdef ELEC_WITH_FFTW
/* Stage 3 by FFT: the stencil sum is the circular convolution of q with
   the stencil wrapped onto the lattice (K_l even along each axis, so
   correlation and convolution agree): e = F^-1(F(q) F(K)) / points, F(K)
   real up to rounding.  The same sum in another order, to rounding; the
   GPU handle does it with cuFFT.  Three transforms, O(points log points),
   where the direct sum takes points x stencil points (a 64^3 lattice with
   a 49^3 stencil: 3e10 multiply-adds). */
static elec_status elec__pmsm_lattice_cutoff_fft(elec__pmsm *m, int level, elec_error *err) {
    elec__pmsm_level *g = &m->level[level];
    const size_t points = elec__pmsm_points(g);
    const size_t half = (size_t)(g->n[0] / 2 + 1) * (size_t)g->n[1] * (size_t)g->n[2];
    double *lattice = (double *)fftw_malloc(points * sizeof *lattice);
    double *kernel = (double *)ELEC_MALLOC(half * sizeof *kernel);
    fftw_complex *spectrum = (fftw_complex *)fftw_malloc(half * sizeof *spectrum);
    fftw_plan forward = NULL, backward = NULL;
    elec_status status = ELEC_OK;
    size_t k;
    if (!lattice || !kernel || !spectrum) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                            "no memory for the FFT of a %d x %d x %d MSM lattice", g->n[0],
                            g->n[1], g->n[2]);
        goto cleanup;
    }
    if (!elec__fftw_plan_pair(g->n, lattice, spectrum, lattice, &forward, &backward)) {
        /* the direct sum gives the same, only slower */
        elec__pmsm_lattice_cutoff(m, level);
        goto cleanup;
    }
    elec__pmsm_wrap_stencil(&m->shape, level, g->stencil, lattice);
    fftw_execute(forward);
    for (k = 0; k < half; k++) kernel[k] = spectrum[k][0] / (double)points;
    memcpy(lattice, g->q, points * sizeof *lattice);
    fftw_execute(forward);
    for (k = 0; k < half; k++) {
        spectrum[k][0] *= kernel[k];
        spectrum[k][1] *= kernel[k];
    }
    fftw_execute(backward); /* destroys the spectrum; lattice = K * q */
    memcpy(g->e, lattice, points * sizeof *g->e);
cleanup:
    elec__fftw_destroy_pair(forward, backward);
    fftw_free(lattice);
    fftw_free(spectrum);
    ELEC_FREE(kernel);
    return status;
}

/* Whether level's stencil sum is cheaper by FFT: its stencil has more
   points than ELEC__PMSM_FFT_PER_LOG times log2 of the lattice's (the
   direct sum costs points x stencil multiply-adds on every thread, the
   three transforms some 8 points log2 points on one). */
#define ELEC__PMSM_FFT_PER_LOG 32.0
static int elec__pmsm_fft_pays(const elec__pmsm *m, int level) {
    const double points = (double)elec__pmsm_shape_points(&m->shape, level);
    const double stencil = (double)elec__pmsm_stencil_points(&m->shape, level);
    return points > 1.0 && stencil > ELEC__PMSM_FFT_PER_LOG * log2(points);
}
#endif

/* Stage 3 at one level: with FFTW by FFT where that pays
   (elec__pmsm_fft_pays), else the direct stencil sum. */
static elec_status elec__pmsm_level_cutoff(elec__pmsm *m, int level, elec_error *err) {
#ifdef ELEC_WITH_FFTW
    if (elec__pmsm_fft_pays(m, level)) return elec__pmsm_lattice_cutoff_fft(m, level, err);
#endif
    (void)err;
    elec__pmsm_lattice_cutoff(m, level);
    return ELEC_OK;
}

/* The constant added to every atom's potential per unit of total charge
   (elec__pmsm_constant), from the levels' stencil totals. */
static double elec__pmsm_constant_of(const elec__pmsm *m) {
    double totals[ELEC_MSM_MAX_LEVELS];
    int l;
    for (l = 0; l < m->levels; l++) totals[l] = m->level[l].stencil_total;
    return elec__pmsm_constant(&m->p, &m->shape, totals,
                               m->length[0] * m->length[1] * m->length[2]);
}

/* Stages 1 to 4: charges in, finest lattice potentials e_0 out (the top's
   constant, with each level's mean made exact, is added at the atoms:
   elec__pmsm_constant). */
static elec_status elec__pmsm_long_range(elec__pmsm *m, const double *x, const double *q,
                                         size_t count, elec_error *err) {
    elec_status s;
    int l;
    if (m->levels == 0) return ELEC_OK;
    elec__pmsm_anterpolate(m, x, q, count);
    for (l = 0; l + 1 < m->levels; l++) elec__pmsm_transfer(m, l, 1);
    for (l = 0; l < m->levels; l++)
        if ((s = elec__pmsm_level_cutoff(m, l, err)) != ELEC_OK) return s;
    for (l = m->levels - 2; l >= 0; l--) elec__pmsm_transfer(m, l, 0);
    return ELEC_OK;
}

/* Stage 5, interpolation: phi(x) = sum_m Phi(x/h - m) e_0(m) and, where
   grad is not NULL, its gradient. */
static double elec__pmsm_interpolate(const elec__pmsm *m, const double *x,
                                     double *grad) {
    const elec__pmsm_level *g = &m->level[0];
    const int width = 2 * m->support;
    double w[3][ELEC__MSM_MAX_WIDTH], dw[3][ELEC__MSM_MAX_WIDTH], phi = 0.0;
    long index[3][ELEC__MSM_MAX_WIDTH];
    int a, b, c;
    if (grad) grad[0] = grad[1] = grad[2] = 0.0;
    if (m->levels == 0) return 0.0;
    elec__pmsm_atom_weights(m, x, w, dw, index);
    for (c = 0; c < width; c++)
        for (b = 0; b < width; b++)
            for (a = 0; a < width; a++) {
                const double e =
                    g->e[index[0][a] + g->n[0] * (index[1][b] + g->n[1] * index[2][c])];
                phi += w[0][a] * w[1][b] * w[2][c] * e;
                if (grad) {
                    grad[0] += dw[0][a] * w[1][b] * w[2][c] * e;
                    grad[1] += w[0][a] * dw[1][b] * w[2][c] * e;
                    grad[2] += w[0][a] * w[1][b] * dw[2][c] * e;
                }
            }
    return phi;
}

/* Short range: at each atom i, phi_i = sum over atoms j and images n,
   (j, n) != (i, 0), with |r_i - r_j - nL| < a of q_j (1/r - gamma(r/a)/a),
   and the force on i from them.  A cell list of the wrapped atoms, each
   cell at least a long (one cell where the box is shorter); a neighbour
   cell offset past the box edge is an image, so looping over offsets up
   to ceil(a / cell edge) visits every (atom, image) within a exactly once,
   however small the box.  Each atom sums all its own partners (no i < j
   halving), which keeps the threads apart; the caller halves the energy.
   An excluded pair (keys: elec__ewald_key, sorted) is left out at its
   nearest image (|d| <= L/2 along every axis), as Ewald leaves it out;
   elec__pmsm_excluded takes its smooth part back out of the lattices'.
   The first coincident pair found goes to bad (i, j). */
/* Whether image (a count of box lengths an axis) is the one
   elec__ewald_nearest takes for a - b, whose smooth part
   elec__pmsm_excluded takes back out: an excluded pair is left out of the
   short range there alone, and from j's side the image of -d (the count
   rounds halves away from zero).  The test before, |d| <= L/2 on each
   axis, took both images of a pair exactly half a box apart, and the
   pair's short-range term went out twice (an audit: -0.0433 for Ewald's
   -0.1042 in a 10 A box at the default a of 12 A). */
static int elec__pmsm_nearest_image(const double *a, const double *b, const double length[3],
                                    const long image[3]) {
    int axis;
    for (axis = 0; axis < 3; axis++)
        if (elec__nearest_count(a[axis] - b[axis], length[axis]) != (double)image[axis]) return 0;
    return 1;
}

static int elec__pmsm_short_range(const double *x, const double *q, size_t n,
                                  const double length[3], const elec_msm_params *p,
                                  const size_t *keys, double *phi, double *forces,
                                  size_t bad[2]) {
    const double a = p->cutoff, a2 = a * a;
    const double c2 = ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE;
    const double zero[3] = {0.0, 0.0, 0.0};
    elec_cells cells;
    long reach[3], i;
    int coincident = 0, k;
    if (elec_cells_build(x, n, zero, length, a, &cells, NULL) != ELEC_OK) return -1;
    for (k = 0; k < 3; k++) reach[k] = (long)ceil(a / (length[k] / cells.n[k]));
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 16)
#endif
    for (i = 0; i < (long)n; i++) {
        const double *xi = x + 3 * i;
        double sum = 0.0, force[3] = {0.0, 0.0, 0.0};
        long offset[3];
        int home[3], axis; /* each thread's own (one at function scope was shared: a race) */
        elec_cells_ijk(&cells, xi, home);
        for (offset[2] = -reach[2]; offset[2] <= reach[2]; offset[2]++)
            for (offset[1] = -reach[1]; offset[1] <= reach[1]; offset[1]++)
                for (offset[0] = -reach[0]; offset[0] <= reach[0]; offset[0]++) {
                    double shift[3];
                    long cell[3], image[3];
                    int is_image = 0;
                    size_t k, c;
                    for (axis = 0; axis < 3; axis++) {
                        const long raw = home[axis] + offset[axis];
                        image[axis] = elec__floor_div(raw, cells.n[axis]);
                        cell[axis] = raw - image[axis] * cells.n[axis];
                        shift[axis] = (double)image[axis] * length[axis];
                        is_image |= image[axis] != 0;
                    }
                    c = (size_t)cell[0] +
                        (size_t)cells.n[0] * ((size_t)cell[1] + (size_t)cells.n[1] * (size_t)cell[2]);
                    for (k = cells.start[c]; k < cells.start[c + 1]; k++) {
                        const size_t j = cells.atom[k];
                        double d[3], r2, r, rho, f;
                        if (j == (size_t)i && !is_image) continue;
                        for (axis = 0; axis < 3; axis++)
                            d[axis] = xi[axis] - x[3 * j + axis] - shift[axis];
                        r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                        if (r2 >= a2) continue;
                        /* the image test only for an excluded pair (rare) */
                        if (p->excluded_pair_count > 0 && j != (size_t)i &&
                            elec__ewald_excluded(keys, p->excluded_pair_count, (size_t)i, j, n) &&
                            elec__pmsm_nearest_image(xi, x + 3 * j, length, image))
                            continue;
                        if (r2 < c2) {
#ifdef _OPENMP
#pragma omp critical(elec__pmsm_coincident)
#endif
                            if (!coincident) {
                                coincident = 1;
                                bad[0] = (size_t)i;
                                bad[1] = j;
                            }
                            continue;
                        }
                        r = sqrt(r2);
                        rho = r / a;
                        sum += q[j] * (1.0 / r - elec_msm_gamma(rho, p->splitting) / a);
                        if (!forces || j == (size_t)i) continue; /* images: +n, -n cancel */
                        /* -d/dr [1/r - gamma(r/a)/a] = 1/r^2 + gamma'(r/a)/a^2 */
                        f = q[i] * q[j] *
                            (1.0 / r2 + elec_msm_gamma_derivative(rho, p->splitting) / a2) / r;
                        for (axis = 0; axis < 3; axis++) force[axis] += f * d[axis];
                    }
                }
        phi[i] += sum;
        if (forces)
            for (axis = 0; axis < 3; axis++) forces[3 * i + axis] += force[axis];
    }
    elec_cells_free(&cells);
    return coincident;
}

/* Excluded pairs: the lattices carry every pair's smooth part g_0(r) =
   gamma(r/a)/a, the nearest image's of an excluded pair too; it comes back
   out here (the short range left the pair out), so that the pair's whole
   Coulomb term is gone: phi_i -= q_j g_0(r), phi_j -= q_i g_0(r), and the
   force of E = -q_i q_j g_0(r), F_i = q_i q_j g_0'(r) d / r. */
static void elec__pmsm_excluded(const double *x, const double *q, const double length[3],
                                const elec_msm_params *p, double *phi, double *forces) {
    size_t e;
    for (e = 0; e < p->excluded_pair_count; e++) {
        const size_t i = p->excluded_pairs[2 * e], j = p->excluded_pairs[2 * e + 1];
        double d[3], r, smooth, slope;
        int axis;
        elec__ewald_nearest(x + 3 * i, x + 3 * j, length, d);
        r = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
        smooth = elec_msm_gamma(r / p->cutoff, p->splitting) / p->cutoff;
        phi[i] -= q[j] * smooth;
        phi[j] -= q[i] * smooth;
        if (!forces || r == 0.0) continue; /* gamma'(0) = 0 */
        slope = elec_msm_gamma_derivative(r / p->cutoff, p->splitting) /
                (p->cutoff * p->cutoff);
        for (axis = 0; axis < 3; axis++) {
            forces[3 * i + axis] += q[i] * q[j] * slope * d[axis] / r;
            forces[3 * j + axis] -= q[i] * q[j] * slope * d[axis] / r;
        }
    }
}

ELEC_DEF elec_status elec_cpu_msm_periodic_energy(const elec_atoms *atoms,
                                                  const elec_box *box,
                                                  const elec_msm_params *params,
                                                  double *energy, double *forces,
                                                  double *potential,
                                                  elec_error *err) {
    elec_msm_params p;
    elec__pmsm m;
    double *x = NULL, *q = NULL, *phi = NULL;
    double total_charge = 0.0, top, self, sum = 0.0;
    size_t i, n, bad[2] = {0, 0}, *keys = NULL;
    elec_status s;
    int axis, found;
    if ((s = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return s;
    if ((s = elec__box_check(box, err)) != ELEC_OK) return s;
    if ((s = elec_msm_periodic_params_resolve(params, box, atoms, &p, err)) != ELEC_OK) return s;
    if (!energy) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "energy is NULL");
    n = atoms->count;
    if ((s = elec__exclusions_check(p.excluded_pairs, p.excluded_pair_count, n, err)) !=
        ELEC_OK)
        return s;
    memset(&m, 0, sizeof m);
    x = (double *)ELEC_MALLOC((3 * n + 3) * sizeof *x);
    q = (double *)ELEC_MALLOC((n + 1) * sizeof *q);
    phi = (double *)ELEC_MALLOC((n + 1) * sizeof *phi);
    keys = (size_t *)ELEC_MALLOC((p.excluded_pair_count + 1) * sizeof *keys);
    if (!x || !q || !phi || !keys) {
        s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for %zu atoms", n);
        goto cleanup;
    }
    if ((s = elec__periodic_gather(atoms, box, NULL, x, q, err)) != ELEC_OK) goto cleanup;
    if ((s = elec__pmsm_setup(&m, &p, box, err)) != ELEC_OK) goto cleanup;
    elec__exclusion_keys(p.excluded_pairs, p.excluded_pair_count, n, keys);
    if ((s = elec__pmsm_long_range(&m, x, q, n, err)) != ELEC_OK) goto cleanup;
    memset(phi, 0, (n + 1) * sizeof *phi);
    if (forces) memset(forces, 0, 3 * n * sizeof *forces);
    found = elec__pmsm_short_range(x, q, n, box->length, &p, keys, phi, forces, bad);
    if (found < 0) {
        s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for cells");
        goto cleanup;
    }
    if (found) {
        s = elec__name_atoms(elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                        "atom %zu and atom %zu (or an image) coincide: their "
                                        "energy is infinite", bad[0], bad[1]),
                             err, bad[0], bad[1]);
        goto cleanup;
    }
    elec__pmsm_excluded(x, q, box->length, &p, phi, forces);
    for (i = 0; i < n; i++) total_charge += q[i];
    top = total_charge == 0.0 ? 0.0 : total_charge * elec__pmsm_constant_of(&m);
    /* the lattices and the top carry each atom's own smooth part,
       sum_l K_l(0) + g_L(0) = g_0(0) = gamma(0)/a: no interaction */
    self = elec_msm_gamma(0.0, p.splitting) / p.cutoff;
    for (i = 0; i < n; i++) {
        double grad[3];
        phi[i] += elec__pmsm_interpolate(&m, x + 3 * i, forces ? grad : NULL) + top -
                  q[i] * self;
        sum += q[i] * phi[i];
        if (forces)
            for (axis = 0; axis < 3; axis++) forces[3 * i + axis] -= q[i] * grad[axis];
    }
    /* E = 1/2 sum_i q_i phi_i: phi is linear in the charges */
    *energy = p.scale * 0.5 * sum;
    for (i = 0; i < 3 * n && forces; i++) forces[i] *= p.scale;
    for (i = 0; i < n && potential; i++) potential[i] = p.scale * phi[i];
    if ((s = elec__results_finite("periodic MSM", "energy", NULL, energy, 1, "double",
                                  err)) != ELEC_OK ||
        (s = elec__results_finite("periodic MSM", "force component", NULL, forces, 3 * n,
                                  "double", err)) != ELEC_OK ||
        (s = elec__results_finite("periodic MSM", "potential", NULL, potential, n, "double",
                                  err)) != ELEC_OK)
        goto cleanup;
    elec__ok(err);
    s = ELEC_OK;
cleanup:
    elec__pmsm_free(&m);
    ELEC_FREE(x);
    ELEC_FREE(q);
    ELEC_FREE(phi);
    ELEC_FREE(keys);
    return s;
}

/* ----------------------------------------------------------------------- >>ewald Ewald */

/* The real-space pair force's magnitude over r: -dE/dr_i = f r, r = r_i -
   r_j, f = q_i q_j (erfc(alpha r)/r + 2 alpha/sqrt(pi) exp(-alpha^2 r^2))
   / r^2; the screened potential erfc(alpha r)/r in *screened. */
static double elec__ewald_pair_force(double qq, double r2, double alpha,
                                     double *screened) {
    const double gauss = 2.0 * alpha / sqrt(ELEC__PI);
    double dist = sqrt(r2);
    *screened = erfc(alpha * dist) / dist;
    return qq * (*screened + gauss * exp(-alpha * alpha * r2)) / r2;
}

/* One real-space pair at separation r = r_i - r_j (r2 = |r|^2 > 0): adds
   weight * q_i q_j erfc(alpha r)/r to the returned energy, the potentials
   q_j erfc/r at i and q_i erfc/r at j (one of them when i == j, an atom and
   its own image), and the force -dE/dr (none for i == j: an atom's images
   pull it equally both ways). */
static double elec__ewald_pair(const double *q, size_t i, size_t j,
                               const double r[3], double r2, double alpha,
                               double weight, double *forces,
                               double *potential) {
    double screened, f = elec__ewald_pair_force(q[i] * q[j], r2, alpha, &screened);
    int axis;
    if (potential) {
        potential[i] += q[j] * screened;
        if (i != j) potential[j] += q[i] * screened;
    }
    if (forces && i != j)
        for (axis = 0; axis < 3; axis++) {
            forces[3 * i + axis] += f * r[axis];
            forces[3 * j + axis] -= f * r[axis];
        }
    return weight * q[i] * q[j] * screened;
}

/* Progress of the exact sum over its work (atom-pair-image and
   atom-vector terms), reported about every 1 % from the thread that gets
   there; the caller's callback may stop it.  The callback runs outside the
   critical section, one report at a time (reporting): run inside it, a
   callback that called elec_cpu_ewald again waited on the section its
   caller held, for ever, and one call's callback held up every other
   Ewald sum in the process, the section being named (an audit). */
typedef struct elec__ewald_progress {
    elec_progress_fn fn;
    void *user;
    double done, total, next;
    int cancelled, reporting;
} elec__ewald_progress;

static int elec__ewald_step(elec__ewald_progress *g, double work) {
    int stop, report = 0;
    double fraction = 0.0;
#ifdef _OPENMP
#pragma omp critical(elec__ewald_progress)
#endif
    {
        g->done += work;
        if (g->fn && !g->cancelled && !g->reporting && g->done >= g->next) {
            g->next = g->done + 0.01 * g->total;
            g->reporting = 1; /* one report at a time per call */
            report = 1;
            fraction = g->total > g->done ? g->done / g->total : 1.0;
        }
        stop = g->cancelled;
    }
    if (report) { /* the callback outside the critical section */
        int asked = g->fn(fraction, g->user) != 0;
#ifdef _OPENMP
#pragma omp critical(elec__ewald_progress)
#endif
        {
            if (asked) g->cancelled = 1;
            g->reporting = 0;
            stop = g->cancelled;
        }
    }
    return stop;
}

/* Images per axis within the cutoff, and their count. */
static double elec__ewald_images(const double length[3], double cutoff, int images[3]) {
    double count = 1.0;
    int axis;
    for (axis = 0; axis < 3; axis++) {
        images[axis] = (int)ceil(cutoff / length[axis]);
        count *= 2.0 * images[axis] + 1.0;
    }
    return count;
}

/* Estimated seconds per atom pair of the real-space sum (its images looked
   at, 2 ns each, and the share within the cutoff, 100 ns each) and per
   atom and reciprocal vector (20 ns): ELEC_EWALD_MAX_SECONDS's rates, the
   units of the progress reports. */
#define ELEC__EWALD_VECTOR_SECONDS 20e-9
static double elec__ewald_pair_seconds(const double length[3], double cutoff) {
    int images[3];
    double volume = length[0] * length[1] * length[2];
    return 2e-9 * elec__ewald_images(length, cutoff, images) +
           100e-9 * 4.18879 * cutoff * cutoff * cutoff / volume;
}

/* The calling thread's index in its team (0 without OpenMP). */
static int elec__ewald_thread(void) {
#ifdef _OPENMP
    return omp_get_thread_num();
#else
    return 0;
#endif
}
/* *total += part, the team's threads in turn (0, 1, 2, ...), so that the
   sum comes out the same on every call (a reduction's order is the
   runtime's: two calls on the same atoms differed in the twelfth digit).
   Every thread of the team calls it. */
static void elec__ewald_add_in_turn(double *total, double part) {
#ifdef _OPENMP
    int t, team = omp_get_num_threads();
#pragma omp for ordered schedule(static, 1)
    for (t = 0; t < team; t++) {
#pragma omp ordered
        *total += part;
    }
#else
    *total += part;
#endif
}

/* Per-thread accumulators of `count` forces and potentials, one block of
   4 count doubles per thread (NULL when neither is wanted), merged into
   the caller's arrays at the end, thread by thread in order. */
static void elec__ewald_merge(double *forces, double *potential, const double *block,
                              size_t count, int threads) {
    size_t i;
    int t;
    for (t = 0; t < threads && block; t++) {
        const double *f = block + (size_t)t * 4 * count, *phi = f + 3 * count;
        for (i = 0; i < 3 * count && forces; i++) forces[i] += f[i];
        for (i = 0; i < count && potential; i++) potential[i] += phi[i];
    }
}

/* Real-space sum over pairs (i <= j) and every image within the cutoff,
   the nearest image of an excluded pair left out; a pair of an atom with
   its own images counts half.  Forces and potentials are unscaled; block
   holds the threads' accumulators (elec__ewald_merge).  Rows of i dealt
   to the threads in a fixed order, so that each call sums alike. */
static double elec__ewald_real(const double *x, const double *q, size_t n,
                               const double length[3], const elec_ewald_params *p,
                               const size_t *keys, double *block, int threads,
                               elec__ewald_progress *g) {
    const double rc2 = p->cutoff * p->cutoff;
    int images[3];
    double energy = 0.0, per_pair = elec__ewald_pair_seconds(length, p->cutoff);
    long li;
    (void)threads; /* without OpenMP */
    elec__ewald_images(length, p->cutoff, images);
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
    {
        double *f = block ? block + (size_t)elec__ewald_thread() * 4 * n : NULL, mine = 0.0;
        int stop = 0;
#ifdef _OPENMP
#pragma omp for schedule(static, 8)
#endif
        for (li = 0; li < (long)n; li++) {
            size_t i = (size_t)li, j;
            if (stop) continue;
            for (j = i; j < n; j++) {
                double d[3];
                int sx, sy, sz;
                int excluded = i != j && elec__ewald_excluded(keys, p->excluded_pair_count,
                                                              i, j, n);
                elec__ewald_nearest(x + 3 * i, x + 3 * j, length, d);
                for (sx = -images[0]; sx <= images[0]; sx++)
                    for (sy = -images[1]; sy <= images[1]; sy++)
                        for (sz = -images[2]; sz <= images[2]; sz++) {
                            double r[3], r2;
                            int nearest = sx == 0 && sy == 0 && sz == 0;
                            if (nearest && (i == j || excluded)) continue;
                            r[0] = d[0] + sx * length[0];
                            r[1] = d[1] + sy * length[1];
                            r[2] = d[2] + sz * length[2];
                            r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
                            if (r2 >= rc2) continue;
                            mine += elec__ewald_pair(q, i, j, r, r2, p->alpha,
                                                     i == j ? 0.5 : 1.0, f,
                                                     f ? f + 3 * n : NULL);
                        }
            }
            stop = elec__ewald_step(g, (double)(n - i) * per_pair);
        }
        elec__ewald_add_in_turn(&energy, mine);
    }
    return energy;
}

/* The smooth part erf(alpha r)/r of excluded pairs, subtracted: the
   reciprocal sum contains it for every pair. */
static double elec__ewald_excluded_term(const double *x, const double *q,
                                        const double length[3], double alpha,
                                        const size_t *pairs, size_t count,
                                        double *forces, double *potential) {
    const double beta = alpha, gauss = 2.0 * beta / sqrt(ELEC__PI);
    double energy = 0.0;
    size_t e;
    for (e = 0; e < count; e++) {
        size_t i = pairs[2 * e], j = pairs[2 * e + 1];
        double d[3], r2, dist, smooth, f = 0.0;
        int axis;
        elec__ewald_nearest(x + 3 * i, x + 3 * j, length, d);
        r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
        dist = sqrt(r2);
        if (dist > 1e-8) {
            smooth = erf(beta * dist) / dist;
            /* E = -qi qj erf(b r)/r; -dE/dr along d = r_i - r_j */
            f = q[i] * q[j] * (gauss * exp(-beta * beta * r2) - smooth) / r2;
        } else {
            smooth = gauss; /* the limit of erf(b r)/r at r = 0 */
        }
        energy -= q[i] * q[j] * smooth;
        if (potential) {
            potential[i] -= q[j] * smooth;
            potential[j] -= q[i] * smooth;
        }
        if (forces)
            for (axis = 0; axis < 3; axis++) {
                forces[3 * i + axis] += f * d[axis];
                forces[3 * j + axis] -= f * d[axis];
            }
    }
    return energy;
}

/* exp(i 2 pi m x / L) for m = 0..kmax of every atom along one axis,
   table[m * n + atom] as (cos, sin), by exact cos/sin of the first power
   and complex multiplication after it. */
static void elec__ewald_phases(const double *x, size_t n, int axis,
                               double length, int kmax, double *re,
                               double *im) {
    size_t a;
    int m;
    for (a = 0; a < n; a++) {
        double angle = 2.0 * ELEC__PI * x[3 * a + axis] / length;
        double c = cos(angle), s = sin(angle);
        re[a] = 1.0;
        im[a] = 0.0;
        for (m = 1; m <= kmax; m++) {
            double pr = re[(m - 1) * n + a], pi = im[(m - 1) * n + a];
            re[m * n + a] = pr * c - pi * s;
            im[m * n + a] = pr * s + pi * c;
        }
    }
}

/* Reciprocal sum over half the k vectors (k and -k give the same term):
   E = sum_half A(k) |S(k)|^2 with A = 4 pi exp(-k^2/(4 alpha^2)) / (k^2 V).
   S(k) is summed over every atom; forces and potentials go to the atoms of
   `which` (NULL: all n), into the threads' accumulators of block (by
   position in which).  Rows (nx, ny) shared among the threads; tables of
   exp(i k.r) per axis built once. */
static elec_status elec__ewald_reciprocal(const double *x, const double *q, size_t n,
                                          const double length[3],
                                          const elec_ewald_params *p,
                                          const size_t *which, size_t count,
                                          double *block, int threads,
                                          elec__ewald_progress *g, double *energy_out) {
    const double volume = length[0] * length[1] * length[2];
    const int *kmax = p->kmax;
    const long rows = (long)(kmax[0] + 1) * (2 * kmax[1] + 1);
    double *tables, *re[3], *im[3], *scratch, energy = 0.0;
    size_t size = 0;
    int axis;
    long row;
    for (axis = 0; axis < 3; axis++) size += 2 * (size_t)(kmax[axis] + 1) * n;
    tables = (double *)ELEC_MALLOC((size + 1) * sizeof *tables);
    scratch = (double *)ELEC_MALLOC((2 * n * (size_t)threads + 1) * sizeof *scratch);
    if (!tables || !scratch) {
        ELEC_FREE(tables);
        ELEC_FREE(scratch);
        return ELEC_ERR_NO_MEMORY;
    }
    size = 0;
    for (axis = 0; axis < 3; axis++) {
        re[axis] = tables + size;
        im[axis] = tables + size + (size_t)(kmax[axis] + 1) * n;
        size += 2 * (size_t)(kmax[axis] + 1) * n;
        elec__ewald_phases(x, n, axis, length[axis], kmax[axis], re[axis], im[axis]);
    }
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
    {
        const int t = elec__ewald_thread();
        double *phase_re = scratch + 2 * n * (size_t)t, *phase_im = phase_re + n;
        double *f = block ? block + (size_t)t * 4 * count : NULL, mine = 0.0;
        int stop = 0;
        /* rows dealt in a fixed order, so that each call sums alike */
#ifdef _OPENMP
#pragma omp for schedule(static, 1)
#endif
        for (row = 0; row < rows; row++) {
            const int nx = (int)(row / (2 * kmax[1] + 1));
            const int ny = (int)(row % (2 * kmax[1] + 1)) - kmax[1];
            int nz;
            if (stop) continue;
            for (nz = -kmax[2]; nz <= kmax[2]; nz++) {
                double k[3], k2, weight, s_re = 0.0, s_im = 0.0;
                int n2 = nx * nx + ny * ny + nz * nz;
                size_t a, c;
                if (nx == 0 && (ny < 0 || (ny == 0 && nz <= 0))) continue;
                if (p->n2_limit > 0 && n2 >= p->n2_limit) continue;
                k[0] = 2.0 * ELEC__PI * nx / length[0];
                k[1] = 2.0 * ELEC__PI * ny / length[1];
                k[2] = 2.0 * ELEC__PI * nz / length[2];
                k2 = k[0] * k[0] + k[1] * k[1] + k[2] * k[2];
                weight = 4.0 * ELEC__PI * exp(-k2 / (4.0 * p->alpha * p->alpha)) /
                         (k2 * volume);
                for (a = 0; a < n; a++) {
                    /* exp(i k.r) = product over axes; negative n: conjugate */
                    size_t iy = (size_t)(ny < 0 ? -ny : ny) * n + a;
                    size_t iz = (size_t)(nz < 0 ? -nz : nz) * n + a;
                    double xr = re[0][(size_t)nx * n + a], xi = im[0][(size_t)nx * n + a];
                    double yr = re[1][iy], yi = ny < 0 ? -im[1][iy] : im[1][iy];
                    double zr = re[2][iz], zi = nz < 0 ? -im[2][iz] : im[2][iz];
                    double xyr = xr * yr - xi * yi, xyi = xr * yi + xi * yr;
                    phase_re[a] = xyr * zr - xyi * zi;
                    phase_im[a] = xyr * zi + xyi * zr;
                    s_re += q[a] * phase_re[a];
                    s_im += q[a] * phase_im[a];
                }
                mine += weight * (s_re * s_re + s_im * s_im);
                if (!f) continue;
                for (c = 0; c < count; c++) {
                    a = which ? which[c] : c;
                    f[3 * count + c] +=
                        2.0 * weight * (phase_re[a] * s_re + phase_im[a] * s_im);
                    {
                        /* F = 2 q A k Im(exp(i k.r) S*) for the pair k, -k */
                        double force = 2.0 * weight * q[a] *
                                       (phase_im[a] * s_re - phase_re[a] * s_im);
                        f[3 * c] += force * k[0];
                        f[3 * c + 1] += force * k[1];
                        f[3 * c + 2] += force * k[2];
                    }
                }
            }
            stop = elec__ewald_step(g, ELEC__EWALD_VECTOR_SECONDS * (2 * kmax[2] + 1) *
                                           (double)n);
        }
        elec__ewald_add_in_turn(&energy, mine);
    }
    ELEC_FREE(tables);
    ELEC_FREE(scratch);
    *energy_out = energy;
    return g->cancelled ? ELEC_ERR_CANCELLED : ELEC_OK;
}

/* The terms that need no pair sum, then everything times scale: self
   -alpha/sqrt(pi) sum q^2 and background -pi Q^2/(2 alpha^2 V), with their
   potentials -2 alpha q_i/sqrt(pi) and -pi Q/(alpha^2 V). */
static void elec__ewald_finish(const double *q, size_t n,
                               const double length[3], double alpha,
                               double scale, elec_ewald_terms *t,
                               double *forces, double *potential) {
    const double volume = length[0] * length[1] * length[2];
    double charge = 0.0, square = 0.0;
    size_t i;
    for (i = 0; i < n; i++) {
        charge += q[i];
        square += q[i] * q[i];
    }
    t->self = -alpha / sqrt(ELEC__PI) * square;
    /* none for a neutral system, whatever alpha (at 1e-300 the quotient was
       0 times infinity, NaN, and a neutral sum was refused) */
    t->background = charge == 0.0 ? 0.0
                                   : -ELEC__PI * charge * charge / (2.0 * alpha * alpha * volume);
    for (i = 0; i < n && potential; i++)
        potential[i] += -2.0 * alpha / sqrt(ELEC__PI) * q[i] -
                        (charge == 0.0 ? 0.0 : ELEC__PI * charge / (alpha * alpha * volume));
    t->real *= scale;
    t->reciprocal *= scale;
    t->excluded *= scale;
    t->self *= scale;
    t->background *= scale;
    t->total = t->real + t->reciprocal + t->excluded + t->self + t->background;
    for (i = 0; i < 3 * n && forces; i++) forces[i] *= scale;
    for (i = 0; i < n && potential; i++) potential[i] *= scale;
}

/* The reciprocal pass after the real-space one (unless that was
   cancelled), failures turned into messages. */
static elec_status elec__ewald_reciprocal_pass(const double *x, const double *q, size_t n,
                                               const double length[3],
                                               const elec_ewald_params *p,
                                               const size_t *which, size_t count,
                                               double *block, int threads,
                                               elec__ewald_progress *g, double *energy,
                                               elec_error *err) {
    *energy = 0.0;
    if (!g->cancelled &&
        elec__ewald_reciprocal(x, q, n, length, p, which, count, block, threads, g,
                               energy) == ELEC_ERR_NO_MEMORY)
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                          "no memory for the reciprocal sum of %zu atoms", n);
    if (g->cancelled)
        return elec__fail(err, ELEC_ERR_CANCELLED, 0,
                          "the Ewald sum was cancelled at %.0f %%",
                          100.0 * g->done / g->total);
    /* done: a stop asked here is honoured as at any other report (it was
       ignored, unlike every other method's) */
    if (g->fn && g->fn(1.0, g->user) != 0)
        return elec__fail(err, ELEC_ERR_CANCELLED, 0,
                          "the Ewald sum was cancelled at 100 %%");
    return ELEC_OK;
}

/* The exact sum's estimated time on one core (ELEC_EWALD_MAX_SECONDS says
   the rates) for `pairs` atom pairs (forces on some atoms: those atoms
   times all), refused past the limit; the progress callback counts in
   the same units. */
static elec_status elec__ewald_work(const elec_ewald_params *p, const elec_box *box,
                                    size_t n, double pairs, double *seconds,
                                    elec_error *err) {
    /* the rows the reciprocal pass loops over: nx >= 0, all ny, nz */
    double vectors = (p->kmax[0] + 1.0) * (2.0 * p->kmax[1] + 1.0) * (2.0 * p->kmax[2] + 1.0);
    *seconds = ELEC__EWALD_VECTOR_SECONDS * (double)n * vectors +
               pairs * elec__ewald_pair_seconds(box->length, p->cutoff);
    if (*seconds > ELEC_EWALD_MAX_SECONDS)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "exact Ewald of %zu atoms at tolerance %g (%.0f reciprocal "
                          "vectors, cutoff %g A) would take about %.0f s on one core, past "
                          "ELEC_EWALD_MAX_SECONDS (%.0f): loosen the tolerance, or use SPME",
                          n, p->tolerance, vectors, p->cutoff, *seconds,
                          ELEC_EWALD_MAX_SECONDS);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_cpu_ewald(const elec_atoms *atoms,
                                    const elec_box *box,
                                    const elec_ewald_params *params,
                                    elec_ewald_terms *energy, double *forces,
                                    double *potential, elec_error *err) {
    elec_ewald_params p;
    elec_ewald_terms t;
    elec__ewald_progress g;
    elec_status s;
    size_t n, keys_count;
    double *x = NULL, *q = NULL, *block = NULL, work;
    size_t *keys = NULL;
    int threads = elec__cpu_threads();
    if ((s = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return s;
    if (!energy)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "energy is NULL");
    n = atoms->count;
    if (n > (size_t)1 << 26)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "%zu atoms: the exact Ewald reference is O(N^2)", n);
    if ((s = elec_ewald_params_resolve(params, box, atoms, &p, err)) != ELEC_OK)
        return s;
    if ((s = elec__ewald_work(&p, box, n, 0.5 * (double)n * ((double)n + 1.0), &work,
                              err)) != ELEC_OK)
        return s;
    memset(&g, 0, sizeof g);
    g.fn = p.progress;
    g.user = p.progress_user;
    g.total = work;
    keys_count = p.excluded_pair_count;
    x = (double *)ELEC_MALLOC((3 * n + 1) * sizeof *x);
    q = (double *)ELEC_MALLOC((n + 1) * sizeof *q);
    keys = (size_t *)ELEC_MALLOC((keys_count + 1) * sizeof *keys);
    if (forces || potential)
        block = (double *)ELEC_MALLOC((4 * n * (size_t)threads + 1) * sizeof *block);
    if (!x || !q || !keys || ((forces || potential) && !block)) {
        s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                       "no memory for the Ewald sum of %zu atoms", n);
        goto cleanup;
    }
    if ((s = elec__periodic_gather(atoms, box, NULL, x, q, err)) != ELEC_OK)
        goto cleanup;
    elec__exclusion_keys(p.excluded_pairs, keys_count, n, keys);
    if (forces) memset(forces, 0, 3 * n * sizeof *forces);
    if (potential) memset(potential, 0, n * sizeof *potential);
    if (block) memset(block, 0, 4 * n * (size_t)threads * sizeof *block);

    if ((s = elec__periodic_coincident(x, n, box->length, p.excluded_pair_count,
                                       keys, err)) != ELEC_OK)
        goto cleanup;
    t.real = elec__ewald_real(x, q, n, box->length, &p, keys, block, threads, &g);
    s = elec__ewald_reciprocal_pass(x, q, n, box->length, &p, NULL, n, block, threads, &g,
                                    &t.reciprocal, err);
    if (s != ELEC_OK) goto cleanup;
    elec__ewald_merge(forces, potential, block, n, threads);
    t.excluded = elec__ewald_excluded_term(x, q, box->length, p.alpha,
                                           p.excluded_pairs,
                                           p.excluded_pair_count, forces,
                                           potential);
    elec__ewald_finish(q, n, box->length, p.alpha, p.scale, &t, forces,
                       potential);
    t.error = p.estimate.energy;
    *energy = t;
    if ((s = elec__terms_finite("Ewald", &t, "double", err)) != ELEC_OK ||
        (s = elec__results_finite("Ewald", "force component", NULL, forces, 3 * n,
                                  "double", err)) != ELEC_OK ||
        (s = elec__results_finite("Ewald", "potential", NULL, potential, n, "double",
                                  err)) != ELEC_OK)
        goto cleanup;
    elec__ok(err);
    s = ELEC_OK;
cleanup:
    ELEC_FREE(x);
    ELEC_FREE(q);
    ELEC_FREE(block);
    ELEC_FREE(keys);
    return s;
}

/* Atom ai's real-space Ewald force (unscaled, added to f) from every
   other atom and image within the cutoff, its excluded partners' nearest
   images left out (their smooth parts come apart). */
static void elec__ewald_real_force_on(const double *x, const double *q, size_t n,
                                      const elec_box *box, const elec_ewald_params *p,
                                      const size_t *keys, const int images[3], size_t ai,
                                      double f[3]) {
    const double rc2 = p->cutoff * p->cutoff;
    size_t j;
    for (j = 0; j < n; j++) {
        double d[3];
        int sx, sy, sz, excluded;
        if (j == ai) continue; /* its own images pull both ways */
        excluded = elec__ewald_excluded(keys, p->excluded_pair_count, ai, j, n);
        elec__ewald_nearest(x + 3 * ai, x + 3 * j, box->length, d);
        for (sx = -images[0]; sx <= images[0]; sx++)
            for (sy = -images[1]; sy <= images[1]; sy++)
                for (sz = -images[2]; sz <= images[2]; sz++) {
                    double r[3], r2, force, screened;
                    if (excluded && sx == 0 && sy == 0 && sz == 0) continue;
                    r[0] = d[0] + sx * box->length[0];
                    r[1] = d[1] + sy * box->length[1];
                    r[2] = d[2] + sz * box->length[2];
                    r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
                    if (r2 >= rc2 || r2 == 0.0) continue;
                    force = elec__ewald_pair_force(q[ai] * q[j], r2, p->alpha, &screened);
                    f[0] += force * r[0];
                    f[1] += force * r[1];
                    f[2] += force * r[2];
                }
    }
}

/* The excluded pairs' smooth parts added to the forces (unscaled) of the
   chosen atoms which[0 .. count - 1], each pair through a two-atom
   scratch. */
static void elec__ewald_excluded_forces_at(const double *x, const double *q,
                                           const elec_box *box, const elec_ewald_params *p,
                                           const size_t *which, size_t count,
                                           double *forces) {
    size_t i, c;
    for (i = 0; i < p->excluded_pair_count; i++) {
        const size_t pi = p->excluded_pairs[2 * i], pj = p->excluded_pairs[2 * i + 1];
        for (c = 0; c < count; c++)
            if (which[c] == pi || which[c] == pj) {
                const size_t other = which[c] == pi ? pj : pi, local[2] = {0, 1};
                double two[6] = {0, 0, 0, 0, 0, 0}, xs[6], qs[2];
                memcpy(xs, x + 3 * which[c], 3 * sizeof *xs);
                memcpy(xs + 3, x + 3 * other, 3 * sizeof *xs);
                qs[0] = q[which[c]];
                qs[1] = q[other];
                elec__ewald_excluded_term(xs, qs, box->length, p->alpha, local, 1, two, NULL);
                forces[3 * c] += two[0];
                forces[3 * c + 1] += two[1];
                forces[3 * c + 2] += two[2];
            }
    }
}

ELEC_DEF elec_status elec_cpu_ewald_forces_at(const elec_atoms *atoms, const elec_box *box,
                                              const elec_ewald_params *params,
                                              const size_t *which, size_t count,
                                              double *forces, elec_error *err) {
    elec_ewald_params p;
    elec__ewald_progress g;
    elec_status s;
    size_t n, i, *keys = NULL;
    double *x = NULL, *q = NULL, *block = NULL, work, unused, per_pair;
    int threads = elec__cpu_threads(), images[3];
    long li;
    if ((s = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return s;
    if (!forces || (count > 0 && !which))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "forces or which is NULL");
    n = atoms->count;
    for (i = 0; i < count; i++)
        if (which[i] >= n)
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "which[%zu] = %zu: there are %zu atoms", i, which[i], n);
    if ((s = elec_ewald_params_resolve(params, box, atoms, &p, err)) != ELEC_OK)
        return s;
    if ((s = elec__ewald_work(&p, box, n, (double)count * (double)n, &work, err)) != ELEC_OK)
        return s;
    memset(&g, 0, sizeof g);
    g.fn = p.progress;
    g.user = p.progress_user;
    g.total = work;
    x = (double *)ELEC_MALLOC((3 * n + 1) * sizeof *x);
    q = (double *)ELEC_MALLOC((n + 1) * sizeof *q);
    keys = (size_t *)ELEC_MALLOC((p.excluded_pair_count + 1) * sizeof *keys);
    block = (double *)ELEC_MALLOC((4 * count * (size_t)threads + 1) * sizeof *block);
    if (!x || !q || !keys || !block) {
        s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for the Ewald forces of %zu atoms",
                       n);
        goto cleanup;
    }
    if ((s = elec__periodic_gather(atoms, box, NULL, x, q, err)) != ELEC_OK) goto cleanup;
    elec__exclusion_keys(p.excluded_pairs, p.excluded_pair_count, n, keys);
    /* refused as elec_cpu_ewald refuses it (the pair's term is infinite):
       leaving it out gave finite forces with ELEC_OK (an audit) */
    if ((s = elec__periodic_coincident(x, n, box->length, p.excluded_pair_count, keys, err)) !=
        ELEC_OK)
        goto cleanup;
    memset(block, 0, 4 * count * (size_t)threads * sizeof *block);
    memset(forces, 0, 3 * count * sizeof *forces);
    /* real space: each chosen atom against every atom and image */
    elec__ewald_images(box->length, p.cutoff, images);
    per_pair = elec__ewald_pair_seconds(box->length, p.cutoff);
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
    {
        double *f = block + (size_t)elec__ewald_thread() * 4 * count;
        int stop = 0;
#ifdef _OPENMP
#pragma omp for schedule(static, 4) /* a fixed order: each call sums alike */
#endif
        for (li = 0; li < (long)count; li++) {
            if (stop) continue;
            elec__ewald_real_force_on(x, q, n, box, &p, keys, images, which[li], f + 3 * li);
            stop = elec__ewald_step(&g, (double)n * per_pair);
        }
    }
    s = elec__ewald_reciprocal_pass(x, q, n, box->length, &p, which, count, block, threads,
                                    &g, &unused, err);
    if (s != ELEC_OK) goto cleanup;
    elec__ewald_merge(forces, NULL, block, count, threads);
    elec__ewald_excluded_forces_at(x, q, box, &p, which, count, forces);
    for (i = 0; i < 3 * count; i++) forces[i] *= p.scale;
    if ((s = elec__results_finite("Ewald", "force component", NULL, forces, 3 * count,
                                  "double", err)) != ELEC_OK)
        goto cleanup;
    elec__ok(err);
    s = ELEC_OK;
cleanup:
    ELEC_FREE(x);
    ELEC_FREE(q);
    ELEC_FREE(keys);
    ELEC_FREE(block);
    return s;
}

/* ------------------------------------------------------------------------- >>spme SPME */

#ifdef ELEC_WITH_FFTW
/* Real space of SPME: pairs i < j at minimum-image distance under the
   cutoff (the cutoff is at most half the box), excluded pairs left out. */
static elec_status elec__spme_real(const double *x, const double *q, size_t n,
                                   const double length[3],
                                   const elec_spme_params *p,
                                   const size_t *keys, double *energy,
                                   double *forces, double *potential,
                                   elec_error *err) {
    const double rc2 = p->cutoff * p->cutoff;
    const size_t key_count = p->excluded_pair_count;
    elec_cells c;
    double sum = 0.0;
    size_t i, j;
    const double zero[3] = {0.0, 0.0, 0.0};
    elec_status status = elec_cells_build(x, n, zero, length, p->cutoff, &c, err);
    /* fewer than 3 cells along an axis: the 27 neighbours would repeat
       cells (and count pairs twice), so all pairs instead */
    int built = status == ELEC_OK && c.n[0] >= 3 && c.n[1] >= 3 && c.n[2] >= 3;
    if (status != ELEC_OK) return status;
    for (i = 0; i < n; i++) {
        int cx, cy, cz, home[3];
        if (!built) { /* all pairs */
            for (j = i + 1; j < n; j++) {
                double d[3], r2;
                elec__ewald_nearest(x + 3 * i, x + 3 * j, length, d);
                r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                if (r2 >= rc2 || r2 == 0.0 ||
                    elec__ewald_excluded(keys, key_count, i, j, n))
                    continue;
                sum += elec__ewald_pair(q, i, j, d, r2, p->alpha, 1.0, forces,
                                        potential);
            }
            continue;
        }
        elec_cells_ijk(&c, x + 3 * i, home);
        for (cz = -1; cz <= 1; cz++)
            for (cy = -1; cy <= 1; cy++)
                for (cx = -1; cx <= 1; cx++) {
                    size_t cell = (size_t)elec_cells_neighbour(&c, home, cx, cy,
                                                               cz, 1), a;
                    for (a = c.start[cell]; a < c.start[cell + 1]; a++) {
                        double d[3], r2;
                        j = c.atom[a];
                        if (j <= i) continue; /* each pair once */
                        elec__ewald_nearest(x + 3 * i, x + 3 * j, length, d);
                        r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                        if (r2 >= rc2 || r2 == 0.0 ||
                            elec__ewald_excluded(keys, key_count, i, j, n))
                            continue;
                        sum += elec__ewald_pair(q, i, j, d, r2, p->alpha, 1.0,
                                                forces, potential);
                    }
                }
    }
    elec_cells_free(&c);
    *energy = sum;
    return ELEC_OK;
}

/* One atom's B-spline stencil: first grid index along each axis and the
   weights (and d/du) of the order points k0, k0 - 1, ... (elec.h). */
typedef struct elec__stencil {
    int k0[3];
    double w[3][ELEC_MAX_SPLINE_ORDER], dw[3][ELEC_MAX_SPLINE_ORDER];
} elec__stencil;

static void elec__spme_stencil(const double *x, const double length[3],
                               const int grid[3], int order, elec__stencil *s) {
    int axis;
    for (axis = 0; axis < 3; axis++) {
        double u = grid[axis] * x[axis] / length[axis];
        double k0 = floor(u);
        s->k0[axis] = (int)k0 % grid[axis];
        elec_bspline_weights(order, u - k0, s->w[axis], s->dw[axis]);
    }
}

/* Grid index of stencil point (a, b, c): (k0 - a, k0 - b, k0 - c) wrapped. */
static size_t elec__spme_index(const elec__stencil *s, const int grid[3], int a,
                               int b, int c) {
    size_t ix = (size_t)((s->k0[0] - a + grid[0]) % grid[0]);
    size_t iy = (size_t)((s->k0[1] - b + grid[1]) % grid[1]);
    size_t iz = (size_t)((s->k0[2] - c + grid[2]) % grid[2]);
    return ix + (size_t)grid[0] * (iy + (size_t)grid[1] * iz);
}

/* The influence function of Essmann eq. 4.7 on the r2c half spectrum
   (kx = 0..Kx/2): theta(m) = exp(-pi^2 m^2/alpha^2) / (pi V m^2 B(m)),
   m = (mx/Lx, my/Ly, mz/Lz) folded to |m_a| <= K_a/2, theta(0) = 0. */
static void elec__spme_influence(const elec_spme_params *p,
                                 const double length[3], const double *moduli[3],
                                 double *theta) {
    const int *K = p->grid, half = K[0] / 2 + 1;
    const double volume = length[0] * length[1] * length[2];
    int mx, my, mz;
    for (mz = 0; mz < K[2]; mz++)
        for (my = 0; my < K[1]; my++)
            for (mx = 0; mx < half; mx++) {
                double fx = mx / length[0];
                double fy = (my <= K[1] / 2 ? my : my - K[1]) / length[1];
                double fz = (mz <= K[2] / 2 ? mz : mz - K[2]) / length[2];
                double m2 = fx * fx + fy * fy + fz * fz;
                size_t at = (size_t)mx + (size_t)half * (my + (size_t)K[1] * mz);
                theta[at] = m2 == 0.0
                    ? 0.0
                    : exp(-ELEC__PI * ELEC__PI * m2 / (p->alpha * p->alpha)) /
                          (ELEC__PI * volume * m2 * moduli[0][mx] *
                           moduli[1][my] * moduli[2][mz]);
            }
}

/* Reciprocal part: spread Q, FFT, multiply by theta, inverse FFT to the
   convolution theta * Q, then E = Q . (theta * Q) / 2, the potential
   phi_i = sum M_i (theta * Q) and the force -q_i sum grad M_i (theta * Q)
   (Essmann eqs. 4.7-4.9). */
static elec_status elec__spme_reciprocal(const double *x, const double *q,
                                         size_t n, const double length[3],
                                         const elec_spme_params *p,
                                         double *energy, double *forces,
                                         double *potential, elec_error *err) {
    const int *K = p->grid, order = p->order;
    const size_t points = (size_t)K[0] * K[1] * K[2];
    const size_t half = (size_t)(K[0] / 2 + 1) * K[1] * K[2];
    double *grid = NULL, *conv = NULL, *theta = NULL, *moduli_store = NULL;
    const double *moduli[3];
    fftw_complex *spectrum = NULL;
    fftw_plan forward = NULL, backward = NULL;
    elec_status status = ELEC_OK;
    double sum = 0.0;
    size_t i, k;
    int axis, a, b, c;

    grid = (double *)fftw_malloc(points * sizeof *grid);
    conv = (double *)fftw_malloc(points * sizeof *conv);
    spectrum = (fftw_complex *)fftw_malloc(half * sizeof *spectrum);
    theta = (double *)ELEC_MALLOC(half * sizeof *theta);
    moduli_store = (double *)ELEC_MALLOC((size_t)(K[0] + K[1] + K[2]) *
                                         sizeof *moduli_store);
    if (!grid || !conv || !spectrum || !theta || !moduli_store) {
        status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                            "no memory for a %d x %d x %d SPME grid", K[0],
                            K[1], K[2]);
        goto cleanup;
    }
    if (!elec__fftw_plan_pair(K, grid, spectrum, conv, &forward, &backward)) {
        status = elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                            "FFTW could not plan a %d x %d x %d transform",
                            K[0], K[1], K[2]);
        goto cleanup;
    }
    moduli[0] = moduli_store;
    moduli[1] = moduli_store + K[0];
    moduli[2] = moduli_store + K[0] + K[1];
    for (axis = 0; axis < 3; axis++)
        elec_spme_bspline_moduli(order, K[axis], (double *)moduli[axis]);
    elec__spme_influence(p, length, moduli, theta);

    memset(grid, 0, points * sizeof *grid);
    for (i = 0; i < n; i++) {
        elec__stencil s;
        elec__spme_stencil(x + 3 * i, length, K, order, &s);
        for (c = 0; c < order; c++)
            for (b = 0; b < order; b++)
                for (a = 0; a < order; a++)
                    grid[elec__spme_index(&s, K, a, b, c)] +=
                        q[i] * s.w[0][a] * s.w[1][b] * s.w[2][c];
    }
    fftw_execute(forward); /* out of place: grid (Q) is kept */
    for (k = 0; k < half; k++) {
        spectrum[k][0] *= theta[k];
        spectrum[k][1] *= theta[k];
    }
    fftw_execute(backward); /* conv = theta * Q (FFTW: unnormalised) */
    for (k = 0; k < points; k++) sum += grid[k] * conv[k];
    *energy = 0.5 * sum;

    for (i = 0; i < n && (forces || potential); i++) {
        elec__stencil s;
        double phi = 0.0, du[3] = {0.0, 0.0, 0.0};
        elec__spme_stencil(x + 3 * i, length, K, order, &s);
        for (c = 0; c < order; c++)
            for (b = 0; b < order; b++)
                for (a = 0; a < order; a++) {
                    double v = conv[elec__spme_index(&s, K, a, b, c)];
                    phi += s.w[0][a] * s.w[1][b] * s.w[2][c] * v;
                    du[0] += s.dw[0][a] * s.w[1][b] * s.w[2][c] * v;
                    du[1] += s.w[0][a] * s.dw[1][b] * s.w[2][c] * v;
                    du[2] += s.w[0][a] * s.w[1][b] * s.dw[2][c] * v;
                }
        if (potential) potential[i] += phi;
        if (forces) /* d/dx = (K/L) d/du */
            for (axis = 0; axis < 3; axis++)
                forces[3 * i + axis] -= q[i] * du[axis] * K[axis] / length[axis];
    }
cleanup:
    elec__fftw_destroy_pair(forward, backward);
    fftw_free(grid);
    fftw_free(conv);
    fftw_free(spectrum);
    ELEC_FREE(theta);
    ELEC_FREE(moduli_store);
    return status;
}
#endif /* ELEC_WITH_FFTW */

ELEC_DEF elec_status elec_cpu_spme(const elec_atoms *atoms,
                                   const elec_box *box,
                                   const elec_spme_params *params,
                                   elec_ewald_terms *energy, double *forces,
                                   double *potential, elec_error *err) {
#ifndef ELEC_WITH_FFTW
    (void)atoms;
    (void)box;
    (void)params;
    (void)energy;
    (void)forces;
    (void)potential;
    return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                      "the CPU SPME needs FFTW3: build with -DELEC_WITH_FFTW "
                      "and link -lfftw3");
#else
    elec_spme_params p;
    elec_ewald_terms t;
    elec_status s;
    size_t n, *keys = NULL;
    double *x = NULL, *q = NULL;
    if ((s = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return s;
    if (!energy)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "energy is NULL");
    n = atoms->count;
    if ((s = elec_spme_params_resolve(params, box, atoms, &p, err)) != ELEC_OK)
        return s;
    x = (double *)ELEC_MALLOC((3 * n + 1) * sizeof *x);
    q = (double *)ELEC_MALLOC((n + 1) * sizeof *q);
    keys = (size_t *)ELEC_MALLOC((p.excluded_pair_count + 1) * sizeof *keys);
    if (!x || !q || !keys) {
        s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                       "no memory for the SPME of %zu atoms", n);
        goto cleanup;
    }
    if ((s = elec__periodic_gather(atoms, box, NULL, x, q, err)) != ELEC_OK)
        goto cleanup;
    elec__exclusion_keys(p.excluded_pairs, p.excluded_pair_count, n, keys);
    if (forces) memset(forces, 0, 3 * n * sizeof *forces);
    if (potential) memset(potential, 0, n * sizeof *potential);

    if ((s = elec__periodic_coincident(x, n, box->length, p.excluded_pair_count,
                                       keys, err)) != ELEC_OK)
        goto cleanup;
    s = elec__spme_real(x, q, n, box->length, &p, keys, &t.real, forces,
                        potential, err);
    if (s != ELEC_OK) goto cleanup;
    s = elec__spme_reciprocal(x, q, n, box->length, &p, &t.reciprocal, forces,
                              potential, err);
    if (s != ELEC_OK) goto cleanup;
    t.excluded = elec__ewald_excluded_term(x, q, box->length, p.alpha,
                                           p.excluded_pairs,
                                           p.excluded_pair_count, forces,
                                           potential);
    elec__ewald_finish(q, n, box->length, p.alpha, p.scale, &t, forces,
                       potential);
    t.error = p.estimate.energy;
    *energy = t;
    if ((s = elec__terms_finite("SPME", &t, "double", err)) != ELEC_OK ||
        (s = elec__results_finite("SPME", "force component", NULL, forces, 3 * n,
                                  "double", err)) != ELEC_OK ||
        (s = elec__results_finite("SPME", "potential", NULL, potential, n, "double",
                                  err)) != ELEC_OK)
        goto cleanup;
    elec__ok(err);
cleanup:
    ELEC_FREE(x);
    ELEC_FREE(q);
    ELEC_FREE(keys);
    return s;
#endif
}


/* ------------------------------------------------------------ >>charges charge mapping */

#define ELEC__CHARGEMAP_MAX_ORDER 10

/* An atom in cell k0 = floor(u) reaches the points k0 + offset ..
   k0 + offset + order - 1: Skeel's C1 family is centred (offset
   -(order/2 - 1)), the B-spline sits below the atom (offset -(order - 1)). */
static int elec__chargemap_offset(const elec_chargemap_params *p) {
    return p->basis == ELEC_CHARGEMAP_SKEEL ? -(p->order / 2 - 1) : -(p->order - 1);
}

/* One axis of an atom's stencil at grid coordinate u: the weights of the
   points first .. first + order - 1 in ascending order; returns first.
   Skeel: elec_msm_axis_weights (point first + k gets Phi(u - first - k));
   B-spline: point k0 - j gets M_n(t + j) (elec_bspline_weights). */
static long elec__chargemap_axis(const elec_chargemap_params *p, double u, double *w) {
    double k0, b[ELEC_MAX_SPLINE_ORDER];
    int m;
    if (p->basis == ELEC_CHARGEMAP_SKEEL)
        return elec_msm_axis_weights(u, (p->order - 4) / 2, w, NULL);
    k0 = floor(u);
    elec_bspline_weights(p->order, u - k0, b, NULL);
    for (m = 0; m < p->order; m++) w[m] = b[p->order - 1 - m];
    return (long)k0 - (p->order - 1);
}

/* The weight an atom at u gives the point g, from the signed distance
   xi = u - g alone, as the seed's Alg. 1 evaluates it: Skeel's Phi by its
   pieces (elec_msm_basis, branches on |xi|, eq. 2), the B-spline M_n(xi). */
static double elec__chargemap_basis_at(const elec_chargemap_params *p, double xi) {
    double k, b[ELEC_MAX_SPLINE_ORDER];
    if (p->basis == ELEC_CHARGEMAP_SKEEL) return elec_msm_basis(xi, (p->order - 4) / 2);
    if (!(xi > 0.0 && xi < p->order)) return 0.0;
    k = floor(xi);
    elec_bspline_weights(p->order, xi - k, b, NULL); /* b[j] = M_n(t + j) */
    return b[(int)k];
}

/* A point index along one axis: wrapped on a periodic grid. */
static long elec__chargemap_point(const elec_chargemap_params *p, long i, int n) {
    return p->periodic ? elec__pmsm_wrap(i, n) : i;
}

/* The atoms in grid units, u = (x - origin) / spacing (3 per atom), and
   their charges.  Periodic: positions wrapped into the period first
   (elec__periodic_gather).  Non-periodic: an atom whose stencil leaves the
   lattice is refused, by name. */
static elec_status elec__chargemap_gather(const elec_atoms *atoms, const elec_lattice *l,
                                          const elec_chargemap_params *p, double *u,
                                          double *q, elec_error *err) {
    static const char axis_name[3] = {'x', 'y', 'z'};
    const int offset = elec__chargemap_offset(p);
    size_t i;
    int axis;
    if (p->periodic) {
        /* about the lattice's origin: its period is [origin, origin + L),
           and an atom within 1000 periods of it keeps its place (wrapped
           about 0, the origin's own rounding cost 1e17 A's lattice its
           atoms, and one at 1e6 A was refused beside its atoms) */
        elec_box period;
        elec_status s;
        for (axis = 0; axis < 3; axis++)
            period.length[axis] = l->dims[axis] * l->spacing[axis];
        if ((s = elec__periodic_gather(atoms, &period, l->origin, u, q, err)) != ELEC_OK)
            return s;
        for (i = 0; i < 3 * atoms->count; i++) u[i] /= l->spacing[i % 3];
        return ELEC_OK;
    }
    for (i = 0; i < atoms->count; i++) elec_atoms_get(atoms, i, u + 3 * i, q + i, NULL);
    for (i = 0; i < atoms->count; i++)
        for (axis = 0; axis < 3; axis++) {
            double x = u[3 * i + axis], first;
            u[3 * i + axis] = (x - l->origin[axis]) / l->spacing[axis];
            first = floor(u[3 * i + axis]) + offset;
            if (!(first >= 0.0 && first + p->order <= l->dims[axis]))
                return elec__name_atoms(
                    elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                               "atom %zu at %g A along %c: its %d-point stencil (points %.15g "
                               "to %.15g) leaves the lattice (points 0 to %d); pad the "
                               "lattice, or map periodically", i, x, axis_name[axis], p->order,
                               first, first + p->order - 1, l->dims[axis] - 1),
                    err, i, ELEC_NO_ATOM);
        }
    return ELEC_OK;
}

/* One atom's stencil: per axis the wrapped point indices and the weights
   (float for the float paths). */
typedef struct elec__chargemap_stencil {
    long index[3][ELEC__CHARGEMAP_MAX_ORDER];
    double w[3][ELEC__CHARGEMAP_MAX_ORDER];
    float wf[3][ELEC__CHARGEMAP_MAX_ORDER];
} elec__chargemap_stencil;

static void elec__chargemap_stencil_of(const elec_chargemap_params *p, const elec_lattice *l,
                                       const double *u, elec__chargemap_stencil *s) {
    int axis, k;
    for (axis = 0; axis < 3; axis++) {
        long first = elec__chargemap_axis(p, u[axis], s->w[axis]);
        for (k = 0; k < p->order; k++) {
            s->index[axis][k] = elec__chargemap_point(p, first + k, l->dims[axis]);
            s->wf[axis][k] = (float)s->w[axis][k];
        }
    }
}

/* Alg. 1, the seed's baseline: at each of the order^3 points the wrap and
   three basis-function calls (192 for the cubic), float sums. */
static void elec__chargemap_cpu_baseline(const elec_chargemap_params *p,
                                         const elec_lattice *l, const double *u,
                                         const double *q, size_t n, float *grid) {
    const int offset = elec__chargemap_offset(p);
    const size_t nx = (size_t)l->dims[0], ny = (size_t)l->dims[1];
    size_t i;
    for (i = 0; i < n; i++) {
        const double *x = u + 3 * i;
        const long z0 = (long)floor(x[2]) + offset, y0 = (long)floor(x[1]) + offset,
                   x0 = (long)floor(x[0]) + offset;
        const float charge = (float)q[i];
        long z, y, xx;
        for (z = z0; z < z0 + p->order; z++)
            for (y = y0; y < y0 + p->order; y++)
                for (xx = x0; xx < x0 + p->order; xx++) {
                    const size_t gz = (size_t)elec__chargemap_point(p, z, l->dims[2]);
                    const size_t gy = (size_t)elec__chargemap_point(p, y, l->dims[1]);
                    const size_t gx = (size_t)elec__chargemap_point(p, xx, l->dims[0]);
                    const float wz = (float)elec__chargemap_basis_at(p, x[2] - (double)z);
                    const float wy = (float)elec__chargemap_basis_at(p, x[1] - (double)y);
                    const float wx = (float)elec__chargemap_basis_at(p, x[0] - (double)xx);
                    grid[gx + nx * (gy + ny * gz)] += charge * wz * wy * wx;
                }
    }
}

/* Alg. 2: the weights and wrapped indices of each axis once per atom, then
   only multiply-adds; into the whole grid (z_first LONG_MIN), or into a
   slab of unwrapped planes stored from plane z_first on (the binned
   rung's private slab). */
static void elec__chargemap_cpu_atoms(const elec_chargemap_params *p, const elec_lattice *l,
                                      const double *u, const double *q, const size_t *order,
                                      size_t first, size_t last, long z_first, float *out) {
    const size_t nx = (size_t)l->dims[0], ny = (size_t)l->dims[1];
    const int width = p->order;
    size_t k;
    /* zeroed once: gcc -Os cannot see that elec__chargemap_stencil_of
       fills every entry the loops read (-Wmaybe-uninitialized) */
    elec__chargemap_stencil s;
    memset(&s, 0, sizeof s);
    for (k = first; k < last; k++) {
        const size_t i = order ? order[k] : k;
        long zz;
        int a, b, c;
        elec__chargemap_stencil_of(p, l, u + 3 * i, &s);
        /* a slab's planes are unwrapped: the stencil's first plane less
           the slab's, then one after another */
        zz = z_first == LONG_MIN ? 0
                                 : (long)floor(u[3 * i + 2]) + elec__chargemap_offset(p) - z_first;
        for (c = 0; c < width; c++) {
            const size_t plane = (size_t)(z_first == LONG_MIN ? s.index[2][c] : zz + c);
            const float qz = (float)q[i] * s.wf[2][c];
            for (b = 0; b < width; b++) {
                float *row = out + nx * ((size_t)s.index[1][b] + ny * plane);
                const float qzy = qz * s.wf[1][b];
                for (a = 0; a < width; a++) row[s.index[0][a]] += qzy * s.wf[0][a];
            }
        }
    }
}

/* The first of a slab's unwrapped planes lo .. hi that lands on grid
   plane z (elec__chargemap_point), or a plane past hi where none does: z
   itself (hi + 1 where z is not in the slab), or on a periodic grid of n
   planes lo + ((z - lo) mod n), the rest n apart. */
static long elec__chargemap_first_landing(const elec_chargemap_params *p, long z, long lo,
                                          long hi, int n) {
    if (!p->periodic) return z >= lo && z <= hi ? z : hi + 1;
    return lo + elec__pmsm_wrap(z - lo, n);
}

/* CPU_BINNED: atoms sorted by cell (elec_cells_build over the grid in
   grid units), OpenMP threads each taking a run of cell layers along z and
   adding its atoms into a private slab of the planes they reach (its
   layers plus order - 1 planes of halo); the slabs are then summed plane
   by plane into the grid, in parallel over planes, in a fixed order. */
static elec_status elec__chargemap_cpu_binned(const elec_chargemap_params *p,
                                              const elec_lattice *l, const double *u,
                                              const double *q, size_t n, float *grid,
                                              elec_error *err) {
    const double zero[3] = {0.0, 0.0, 0.0};
    const double extent[3] = {(double)l->dims[0], (double)l->dims[1], (double)l->dims[2]};
    const size_t plane_points = (size_t)l->dims[0] * l->dims[1];
    const int offset = elec__chargemap_offset(p);
    elec_cells cells;
    elec_status s;
    int threads = 1, t, failed = 0;
    float **slab = NULL;
    long *z_lo = NULL, *z_hi = NULL, z;
    if ((s = elec_cells_build(u, n, zero, extent, 1.0, &cells, err)) != ELEC_OK) return s;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    if (threads > cells.n[2]) threads = cells.n[2];
    if (threads < 1) threads = 1;
    slab = (float **)ELEC_MALLOC((size_t)threads * sizeof *slab);
    z_lo = (long *)ELEC_MALLOC((size_t)threads * sizeof *z_lo);
    z_hi = (long *)ELEC_MALLOC((size_t)threads * sizeof *z_hi);
    if (slab) /* the cleanup frees every slab[t]: none yet */
        for (t = 0; t < threads; t++) slab[t] = NULL;
    if (!slab || !z_lo || !z_hi) {
        failed = 1;
        goto done;
    }
    for (t = 0; t < threads; t++) slab[t] = NULL;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static, 1) reduction(|| : failed)
#endif
    for (t = 0; t < threads; t++) {
        const size_t layer = (size_t)cells.n[0] * cells.n[1];
        const size_t first = cells.start[layer * (size_t)(cells.n[2] * t / threads)];
        const size_t last = cells.start[layer * (size_t)(cells.n[2] * (t + 1) / threads)];
        long lo = LONG_MAX, hi = LONG_MIN;
        size_t k;
        for (k = first; k < last; k++) {
            long k0 = (long)floor(u[3 * cells.atom[k] + 2]);
            if (k0 < lo) lo = k0;
            if (k0 > hi) hi = k0;
        }
        z_lo[t] = 0;
        z_hi[t] = -1;
        if (first == last) continue; /* no atoms: no slab */
        z_lo[t] = lo + offset;
        z_hi[t] = hi + offset + p->order - 1;
        slab[t] = (float *)ELEC_MALLOC((size_t)(z_hi[t] - z_lo[t] + 1) * plane_points *
                                       sizeof(float));
        if (!slab[t]) {
            failed = 1;
            continue;
        }
        memset(slab[t], 0, (size_t)(z_hi[t] - z_lo[t] + 1) * plane_points * sizeof(float));
        elec__chargemap_cpu_atoms(p, l, u, q, cells.atom, first, last, z_lo[t], slab[t]);
    }
    if (failed) goto done;
    /* each grid plane: the sum of the slab planes that land on it (a slab
       longer than the period lands on some twice), found directly: a
       test of every slab plane at every grid plane made the reduction
       quadratic in the planes (an audit: 8 x 8 x 65536 points, 1000
       atoms, 5.9 s against the precomputed rung's 0.017) */
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static)
#endif
    for (z = 0; z < l->dims[2]; z++) {
        float *out = grid + (size_t)z * plane_points;
        int th;
        memset(out, 0, plane_points * sizeof(float));
        for (th = 0; th < threads; th++) {
            const long step = p->periodic ? (long)l->dims[2] : z_hi[th] - z_lo[th] + 1;
            long zz;
            if (!slab[th]) continue;
            for (zz = elec__chargemap_first_landing(p, z, z_lo[th], z_hi[th], l->dims[2]);
                 zz <= z_hi[th]; zz += step) {
                const float *in = slab[th] + (size_t)(zz - z_lo[th]) * plane_points;
                size_t g;
                for (g = 0; g < plane_points; g++) out[g] += in[g];
            }
        }
    }
done:
    if (slab)
        for (t = 0; t < threads; t++) ELEC_FREE(slab[t]);
    ELEC_FREE(slab);
    ELEC_FREE(z_lo);
    ELEC_FREE(z_hi);
    elec_cells_free(&cells);
    if (failed)
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for %d grid slabs", threads);
    return ELEC_OK;
}

/* Checks, resolved params and the atoms in grid units (u, q allocated). */
static elec_status elec__chargemap_cpu_setup(const elec_atoms *atoms, const elec_lattice *l,
                                             const elec_chargemap_params *params,
                                             const void *grid, elec_chargemap_params *p,
                                             double **u, double **q, elec_error *err) {
    elec_status s;
    size_t n;
    *u = *q = NULL;
    if ((s = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return s;
    if (!grid) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "grid is NULL");
    if ((s = elec_chargemap_params_resolve(params, l, atoms->count, p, err)) != ELEC_OK)
        return s;
    n = atoms->count;
    *u = (double *)ELEC_MALLOC((3 * n + 1) * sizeof **u);
    *q = (double *)ELEC_MALLOC((n + 1) * sizeof **q);
    if (!*u || !*q) {
        ELEC_FREE(*u);
        ELEC_FREE(*q);
        *u = *q = NULL;
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for %zu atoms", n);
    }
    if ((s = elec__chargemap_gather(atoms, l, p, *u, *q, err)) != ELEC_OK) {
        ELEC_FREE(*u);
        ELEC_FREE(*q);
        *u = *q = NULL;
    }
    return s;
}

ELEC_DEF elec_status elec_cpu_chargemap_double(const elec_atoms *atoms,
                                               const elec_lattice *lattice,
                                               const elec_chargemap_params *params,
                                               double *grid, double *abs_sum,
                                               int *contributions, elec_error *err) {
    elec_chargemap_params p;
    double *u, *q;
    size_t i, points;
    elec__chargemap_stencil st;
    elec_status s = elec__chargemap_cpu_setup(atoms, lattice, params, grid, &p, &u, &q, err);
    if (s != ELEC_OK) return s;
    points = elec_lattice_size(lattice);
    memset(grid, 0, points * sizeof *grid);
    if (abs_sum) memset(abs_sum, 0, points * sizeof *abs_sum);
    if (contributions) memset(contributions, 0, points * sizeof *contributions);
    memset(&st, 0, sizeof st); /* as elec__chargemap_cpu_atoms's, for gcc -Os */
    for (i = 0; i < atoms->count; i++) {
        const size_t nx = (size_t)lattice->dims[0], ny = (size_t)lattice->dims[1];
        int a, b, c;
        elec__chargemap_stencil_of(&p, lattice, u + 3 * i, &st);
        for (c = 0; c < p.order; c++)
            for (b = 0; b < p.order; b++)
                for (a = 0; a < p.order; a++) {
                    const size_t g = (size_t)st.index[0][a] +
                                     nx * ((size_t)st.index[1][b] + ny * (size_t)st.index[2][c]);
                    const double v = q[i] * st.w[0][a] * st.w[1][b] * st.w[2][c];
                    grid[g] += v;
                    if (abs_sum) abs_sum[g] += fabs(v);
                    if (contributions) contributions[g]++;
                }
    }
    ELEC_FREE(u);
    ELEC_FREE(q);
    if ((s = elec__results_finite("charge map", "point", NULL, grid, points, "double",
                                  err)) != ELEC_OK ||
        (s = elec__results_finite("charge map", "abs_sum at point", NULL, abs_sum, points,
                                  "double", err)) != ELEC_OK)
        return s;
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_cpu_chargemap(const elec_atoms *atoms, const elec_lattice *lattice,
                                        const elec_chargemap_params *params, float *grid,
                                        elec_error *err) {
    elec_chargemap_params p;
    double *u, *q;
    elec_status s = elec__chargemap_cpu_setup(atoms, lattice, params, grid, &p, &u, &q, err);
    if (s != ELEC_OK) return s;
    switch (p.cpu_variant) {
    case ELEC_CHARGEMAP_CPU_BASELINE:
        memset(grid, 0, elec_lattice_size(lattice) * sizeof *grid);
        elec__chargemap_cpu_baseline(&p, lattice, u, q, atoms->count, grid);
        break;
    case ELEC_CHARGEMAP_CPU_PRECOMPUTED:
        memset(grid, 0, elec_lattice_size(lattice) * sizeof *grid);
        elec__chargemap_cpu_atoms(&p, lattice, u, q, NULL, 0, atoms->count, LONG_MIN, grid);
        break;
    default:
        s = elec__chargemap_cpu_binned(&p, lattice, u, q, atoms->count, grid, err);
        break;
    }
    ELEC_FREE(u);
    ELEC_FREE(q);
    if (s == ELEC_OK)
        s = elec__results_finite("charge map", "point", grid, NULL, elec_lattice_size(lattice),
                                 "float", err);
    if (s == ELEC_OK) elec__ok(err);
    return s;
}

/* ------------------------------------------------- >>alpb ALPB surface potentials, HCP */

/* What one vertex's sum needs: the hierarchy, the kernel, every
   component's squared reach (elec__hcp_reach; +infinity: always opened)
   and the charges per component. */
typedef struct elec__alpb_walk {
    const elec_hcp *h;
    elec_alpb_kernel k;
    const double *reach2[ELEC_HCP_LEVELS];
    int charges;
} elec__alpb_walk;

/* q times the kernel of a charge at x, seen from P (and P' for salt). */
static double elec__alpb_charge(const elec__alpb_walk *w, const double *x, double q,
                                const double P[3], const double P_ion[3]) {
    const double c2 = ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE;
    double d2 = elec_distance2(P, x);
    if (d2 < c2 || q == 0.0) return 0.0;
    return q * elec_alpb_term(&w->k, sqrt(d2),
                              w->k.kappa > 0.0 ? sqrt(elec_distance2(P_ion, x)) : 0.0);
}

/* The one or two charges of component c of level l (1..3). */
static double elec__alpb_approx(const elec__alpb_walk *w, int level, size_t c,
                                const double P[3], const double P_ion[3]) {
    const double *a = w->h->approx[level - 1] + 12 * c;
    if (w->charges == 1) return elec__alpb_charge(w, a, a[3], P, P_ion);
    return elec__alpb_charge(w, a + 4, a[7], P, P_ion) +
           elec__alpb_charge(w, a + 8, a[11], P, P_ion);
}

/* Component c of level l seen from P: its charges when it is far, else its
   children (research notes 3.3, NAB's nbond_hcp). */
static double elec__alpb_component(const elec__alpb_walk *w, int level, size_t c,
                                   const double P[3], const double P_ion[3]) {
    const elec_hcp *h = w->h;
    double sum = 0.0;
    size_t child;
    if (elec_distance2(P, h->centre[level - 1] + 3 * c) > w->reach2[level - 1][c])
        return elec__alpb_approx(w, level, c, P, P_ion);
    for (child = h->first[level - 1][c]; child < h->first[level - 1][c + 1]; child++)
        sum += level == 1 ? elec__alpb_charge(w, h->xyz + 3 * child, h->charge[child], P,
                                              P_ion)
                          : elec__alpb_component(w, level - 1, child, P, P_ion);
    return sum;
}

static elec_status elec__cpu_alpb(const elec_hcp *hcp, const double *vertices,
                                  const double *normals, size_t count,
                                  const elec_alpb_params *params, float *outf,
                                  double *outd, elec_error *err) {
    elec_alpb_params r;
    elec__alpb_walk w;
    elec_status s;
    double *reach2;
    long v;
    int level;
    s = elec__alpb_prepare(hcp, vertices, normals, count,
                           outf ? (const void *)outf : (const void *)outd, params, &r,
                           &w.k, NULL, NULL, err);
    if (s != ELEC_OK || count == 0) return s;
    if (elec__alpb_is_coulomb(&r, &w.k)) {
        /* E1 = scale front sum q / d + scale Q constant: the DCS points path */
        elec_atoms atoms = elec_atoms_from_xyz(hcp->count[0], hcp->xyz, hcp->charge, NULL);
        elec_dcs_params dp;
        const double shift = r.scale * hcp->net_charge * w.k.constant;
        double *points = (double *)ELEC_MALLOC(3 * count * sizeof(double));
        size_t i;
        if (!points) return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for %zu points", count);
        for (i = 0; i < count; i++) elec__alpb_point(vertices, normals, i, r.proj, points + 3 * i);
        memset(&dp, 0, sizeof dp);
        dp.scale = r.scale * w.k.front;
        /* the points call checks its sums, naming ALPB; below, the shifted
           values are checked too (the shift can take a sum past float) */
        s = elec__cpu_dcs_points(&atoms, points, count, &dp, outf, outd,
                                 outf ? (const void *)outf : (const void *)outd, "ALPB", err);
        ELEC_FREE(points);
        if (s != ELEC_OK) return s;
        for (i = 0; i < count; i++) {
            if (outf) outf[i] = (float)(outf[i] + shift);
            else outd[i] += shift;
        }
        if ((s = elec__results_finite("ALPB", "potential at point", outf, outd, count,
                                      outf ? "float" : "double", err)) != ELEC_OK)
            return s;
        elec__ok(err);
        return ELEC_OK;
    }
    w.h = hcp;
    w.charges = r.hcp_charges;
    reach2 = (double *)ELEC_MALLOC((hcp->count[1] + hcp->count[2] + hcp->count[3]) *
                                   sizeof(double));
    if (!reach2) return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for the reaches");
    for (level = 0; level < ELEC_HCP_LEVELS; level++) {
        double *out = reach2 + (level > 0 ? hcp->count[1] : 0) + (level > 1 ? hcp->count[2] : 0);
        for (v = 0; v < (long)hcp->count[level + 1]; v++) {
            const double d = elec__hcp_reach(hcp, level, (size_t)v, &r, &w.k);
            out[v] = d * d;
        }
        w.reach2[level] = out;
    }
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 64)
#endif
    for (v = 0; v < (long)count; v++) {
        double P[3], P_ion[3], sum = 0.0, phi;
        size_t c;
        elec__alpb_point(vertices, normals, (size_t)v, r.proj, P);
        elec__alpb_point(vertices, normals, (size_t)v, r.ion_exclusion, P_ion);
        for (c = 0; c < hcp->count[ELEC_HCP_LEVELS]; c++)
            sum += elec__alpb_component(&w, ELEC_HCP_LEVELS, c, P, P_ion);
        phi = r.scale * (sum + hcp->net_charge * w.k.constant);
        if (outf) outf[v] = (float)phi;
        else outd[v] = phi;
    }
    ELEC_FREE(reach2);
    /* charges of 1e150 e passed every check and came out inf in float */
    if ((s = elec__results_finite("ALPB", "potential at point", outf, outd, count,
                                  outf ? "float" : "double", err)) != ELEC_OK)
        return s;
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_cpu_alpb(const elec_hcp *hcp, const double *vertices,
                                   const double *normals, size_t count,
                                   const elec_alpb_params *params, float *potential,
                                   elec_error *err) {
    float none;
    if (count > 0 && !potential)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "potential (the output) is NULL");
    return elec__cpu_alpb(hcp, vertices, normals, count, params,
                          potential ? potential : &none, NULL, err);
}

ELEC_DEF elec_status elec_cpu_alpb_double(const elec_hcp *hcp, const double *vertices,
                                          const double *normals, size_t count,
                                          const elec_alpb_params *params,
                                          double *potential, elec_error *err) {
    double none;
    if (count > 0 && !potential)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "potential (the output) is NULL");
    (void)none;
    return elec__cpu_alpb(hcp, vertices, normals, count, params, NULL,
                          potential ? potential : &none, err);
}

/* ------------------------------------------------ >>slab sub-lattices for distributed maps */

ELEC_DEF elec_status elec_cpu_msm_map_slab(const elec_atoms *atoms,
                                           const elec_lattice *lattice, int k0, int k1,
                                           const elec_msm_params *params, float *map,
                                           elec_error *err) {
    elec__msm_points_of where;
    elec_lattice slab;
    double lo[3], hi[3], *xyz;
    elec_status s;
    size_t count, p = 0;
    int axis, i, j, k;
    elec_msm_params resolved;
    if ((s = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return s;
    s = elec_lattice_check_points(lattice, params ? params->max_points : 0, err);
    if (s != ELEC_OK) return s;
    if ((s = elec_lattice_slab(lattice, k0, k1, &slab, err)) != ELEC_OK) return s;
    /* the whole map's choices: its point count, its frame, its extent */
    s = elec_msm_params_resolve(params, (double)elec_lattice_size(lattice) /
                                            (double)(atoms->count ? atoms->count : 1),
                                &resolved, err);
    if (s != ELEC_OK) return s;
    if ((s = elec__msm_no_exclusions(&resolved, err)) != ELEC_OK) return s;
    if (!map) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "map is NULL");
    count = elec_lattice_size(&slab);
    if (count > SIZE_MAX / (3 * sizeof *xyz))
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for %zu points", count);
    xyz = (double *)ELEC_MALLOC(3 * count * sizeof *xyz);
    if (!xyz)
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for %zu points", count);
    /* the whole lattice's points, as elec__msm_point places them */
    for (k = k0; k < k1; k++)
        for (j = 0; j < lattice->dims[1]; j++)
            for (i = 0; i < lattice->dims[0]; i++, p++)
                elec_lattice_point(lattice, i, j, k, xyz + 3 * p);
    where.lattice = NULL;
    where.points = xyz;
    for (axis = 0; axis < 3; axis++) {
        double half = 0.5 * (lattice->dims[axis] - 1) * lattice->spacing[axis];
        where.reference[axis] = lattice->origin[axis] + half;
        lo[axis] = -half;
        hi[axis] = half;
    }
    s = elec__msm_potential(atoms, &resolved, &where, lo, hi, count, NULL, map, "MSM slab",
                            err);
    ELEC_FREE(xyz);
    return s;
}

#ifdef __cplusplus
}
#endif

#endif /* ELEC_CPU_IMPLEMENTATION_DONE */
#endif /* ELEC_CPU_IMPLEMENTATION */
