/* tests/header_only_a.c - the implementation file of the header-only check:
   it defines ELEC_ALL_IMPLEMENTATION, header_only_b.c includes the same
   headers without it, and the two link into one program without duplicate
   symbols (and, with -DELEC_STATIC, each with its own private copy).  The
   Makefile also compiles this file as C++, and both files under nvcc with
   -DELEC_TEST_CUDA, which adds elec_cuda.cuh to the headers (no GPU is
   needed: the calls across the files ask how many there are).  With
   -DELEC_TEST_SPLIT this file implements elec.h alone and header_only_b.c
   elec_cpu.h alone, as the headers allow (elec_cpu.h once called a helper
   only elec.h's implementation had; an audit).  With -DELEC_TEST_LATE it
   includes the headers once before it defines the macro, as a project's
   own header would, and again after (the macro was read inside the
   include guards, and such a file then implemented nothing and failed to
   link; an audit). */
#ifdef ELEC_TEST_LATE
#include "elec.h"
#include "elec_cpu.h"
#ifdef ELEC_TEST_CUDA
#include "elec_cuda.cuh"
#endif
#endif
#ifdef ELEC_TEST_SPLIT
#define ELEC_IMPLEMENTATION
#else
#define ELEC_ALL_IMPLEMENTATION
#endif
#include "elec.h"
#include "elec_cpu.h"
#ifdef ELEC_TEST_CUDA
#include "elec_cuda.cuh"
#endif
#include "tests/test.h"

#ifdef __cplusplus
extern "C" {
#endif
int header_only_b_compute(double phi[2]);
#ifdef ELEC_TEST_CUDA
int header_only_b_devices(void);
#endif
#ifdef __cplusplus
}
#endif

TEST(other_file_calls_the_library) {
    double xyz[6] = {0.0, 0.0, 0.0, 3.0, 0.0, 0.0}, q[2] = {1.0, -1.0},
           r[2] = {1.5, 2.0}, point[3] = {1.0, 2.0, 2.0};
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, r);
    elec_dcs_params dcs;
    elec_mdh_params mdh;
    double phi_b[2] = {0.0, 0.0}, phi_dcs, phi_mdh;
    memset(&dcs, 0, sizeof dcs);
    memset(&mdh, 0, sizeof mdh);
    mdh.kappa = 0.2;
    EXPECT(header_only_b_compute(phi_b) == 0, "header_only_b.c failed");
    EXPECT(elec_cpu_dcs_points_double(&atoms, point, 1, &dcs, &phi_dcs,
                                      NULL) == ELEC_OK,
           "DCS in this file failed");
    EXPECT(elec_cpu_mdh_points_double(&atoms, point, 1, &mdh, &phi_mdh,
                                      NULL) == ELEC_OK,
           "MDH in this file failed");
    /* b's DCS value is the float path: one float rounding of ~0.05 plus
       float terms, 1e-6 relative covers it; MDH is the same double code. */
    EXPECT(fabs(phi_b[0] - phi_dcs) <= 1e-6 * fabs(phi_dcs),
           "DCS from b %.9g, from a %.9g", phi_b[0], phi_dcs);
    EXPECT(phi_b[1] == phi_mdh, "MDH from b %.17g, from a %.17g", phi_b[1],
           phi_mdh);
}

#ifdef ELEC_TEST_CUDA
TEST(other_file_calls_the_cuda_header) {
    /* the count of devices through b's copy of the declarations (no GPU
       here gives 0 in both) */
    EXPECT(header_only_b_devices() == elec_cuda_device_count(),
           "b counts %d devices, a %d", header_only_b_devices(), elec_cuda_device_count());
}
#endif

int main(void) {
    RUN(other_file_calls_the_library);
#ifdef ELEC_TEST_CUDA
    RUN(other_file_calls_the_cuda_header);
#endif
    return test_summary();
}
