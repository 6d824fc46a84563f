/* elec_cpu.h - molecular electrostatics on the CPU.  C99, also C++.

   Every method in two precisions: a double-precision reference (the truth
   the tests hold every other path to) and a fast float path (float terms,
   double accumulation, OpenMP threads when the compiler has -fopenmp).

   Do this in exactly one C or C++ file (with ELEC_IMPLEMENTATION, or define
   ELEC_ALL_IMPLEMENTATION for all headers at once):
       #define ELEC_CPU_IMPLEMENTATION
       #include "elec_cpu.h"

   Example: the potential of two charges on a 33^3 lattice, in kcal/(mol e).
       double xyz[6] = {0, 0, 0,  3, 0, 0}, q[2] = {1, -1};
       elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL);
       elec_lattice lat = {{33, 33, 33}, {-8, -8, -8}, {0.5, 0.5, 0.5}};
       elec_dcs_params p = {0};
       p.scale = ELEC_COULOMB;
       float *map = malloc(elec_lattice_size(&lat) * sizeof *map);
       elec_error err;
       if (elec_cpu_dcs_map(&atoms, &lat, &p, map, &err) != ELEC_OK) ...

   Atoms closer than ELEC_COINCIDENT_DISTANCE to a point are left out of that
   point's sum (elec.h).  Outputs are caller-owned arrays of
   elec_lattice_size() values for maps, of point_count values for points. */
#ifndef ELEC_CPU_H
#define ELEC_CPU_H

#include "elec.h"

#ifdef ELEC_ALL_IMPLEMENTATION
#ifndef ELEC_CPU_IMPLEMENTATION
#define ELEC_CPU_IMPLEMENTATION
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif
#endif /* ELEC_CPU_H */

/* ====================================================== implementation */
#ifdef ELEC_CPU_IMPLEMENTATION
#ifndef ELEC_CPU_IMPLEMENTATION_DONE
#define ELEC_CPU_IMPLEMENTATION_DONE

/* ELEC_CPU_BEGIN */

/* ELEC_CPU_END */

#endif /* ELEC_CPU_IMPLEMENTATION_DONE */
#endif /* ELEC_CPU_IMPLEMENTATION */
