/* tests/header_only_b.c - the second translation unit of the header-only
   check: it includes the headers as a user's other files would, without
   the implementation macro, and calls the library implemented in
   header_only_a.c.  Built with -DELEC_STATIC every file needs its own
   private copy, so this file then implements the headers too. */
#ifdef ELEC_STATIC
#define ELEC_ALL_IMPLEMENTATION
#endif
#ifdef ELEC_TEST_SPLIT
#define ELEC_CPU_IMPLEMENTATION
#endif
#include "elec.h"
#include "elec_cpu.h"
#ifdef ELEC_TEST_CUDA
#include "elec_cuda.cuh"
#endif

#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif
/* The potential of two charges at one point, DCS and MDH, from this file. */
int header_only_b_compute(double phi[2]);
#ifdef ELEC_TEST_CUDA
/* The GPUs this file sees. */
int header_only_b_devices(void);
int header_only_b_devices(void) { return elec_cuda_device_count(); }
#endif
#ifdef __cplusplus
}
#endif

int header_only_b_compute(double phi[2]) {
    double xyz[6] = {0.0, 0.0, 0.0, 3.0, 0.0, 0.0}, q[2] = {1.0, -1.0},
           r[2] = {1.5, 2.0}, point[3] = {1.0, 2.0, 2.0};
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, r);
    elec_dcs_params dcs;
    elec_mdh_params mdh;
    elec_error err;
    float phi_dcs;
    memset(&dcs, 0, sizeof dcs); /* every zero field is a default */
    memset(&mdh, 0, sizeof mdh);
    mdh.kappa = 0.2;
    if (elec_cpu_dcs_points(&atoms, point, 1, &dcs, &phi_dcs, &err) != ELEC_OK)
        return 1;
    if (elec_cpu_mdh_points_double(&atoms, point, 1, &mdh, &phi[1], &err) !=
        ELEC_OK)
        return 1;
    phi[0] = phi_dcs;
    return 0;
}
