/* tests/test_fast_math.c - the refusals of non-finite input and of results
   past their type's range, in a program built with -ffast-math (the
   Makefile's rule), where the compiler may take x == x and x <= DBL_MAX as
   true: the checks read the values' bits (elec__finite), and before they
   did, charges of 1e200 e came back as a DCS map of inf and a Coulomb
   energy of inf with ELEC_OK (an audit, gcc and clang). */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "test.h"

#include <stdint.h>

/* A double or float of the given bits: NaN and inf made so that no
   arithmetic the compiler may fold under -ffast-math makes them. */
static double double_of_bits(uint64_t bits) {
    double v;
    memcpy(&v, &bits, sizeof v);
    return v;
}
static float float_of_bits(uint32_t bits) {
    float v;
    memcpy(&v, &bits, sizeof v);
    return v;
}
#define QUIET_NAN_BITS UINT64_C(0x7ff8000000000000)
#define INF_BITS UINT64_C(0x7ff0000000000000)

/* Every test here is meant to run under -ffast-math (the Makefile's rules,
   the sanitizers' too, add it): built without it, they would pass without
   testing what they are for. */
TEST(built_with_fast_math) {
#ifndef __FAST_MATH__
    EXPECT(0, "this build was not made with -ffast-math (the Makefile's rules add it)");
#endif
}

TEST(dcs_map_past_float_range_is_refused) {
    double xyz[6] = {0, 0, 0, 3, 0, 0}, q[2] = {1e200, 1e200};
    static float map[512];
    elec_lattice lattice = {{8, 8, 8}, {-2, -2, -2}, {1, 1, 1}};
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL);
    elec_dcs_params p;
    elec_error err;
    memset(&p, 0, sizeof p);
    EXPECT(elec_cpu_dcs_map(&atoms, &lattice, &p, map, &err) == ELEC_ERR_INVALID_ARG,
           "charges of 1e200 e: a map of inf taken as ELEC_OK");
}

TEST(coulomb_energy_past_double_range_is_refused) {
    double xyz[6] = {0, 0, 0, 3, 0, 0}, q[2] = {1e200, 1e200}, energy = 0.0;
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL);
    elec_error err;
    EXPECT(elec_cpu_coulomb_energy(&atoms, 0.0, &energy, NULL, &err) == ELEC_ERR_INVALID_ARG,
           "charges of 1e200 e: an energy of inf taken as ELEC_OK");
}

TEST(nan_and_inf_inputs_are_refused) {
    double xyz[6] = {0, 0, 0, 3, 0, 0}, q[2] = {1, -1};
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL);
    elec_error err;
    xyz[4] = double_of_bits(QUIET_NAN_BITS);
    EXPECT(elec_atoms_check(&atoms, 0, &err) == ELEC_ERR_INVALID_ARG, "a NaN y taken");
    xyz[4] = 0.0;
    q[1] = -double_of_bits(INF_BITS);
    EXPECT(elec_atoms_check(&atoms, 0, &err) == ELEC_ERR_INVALID_ARG, "a charge of -inf taken");
}

TEST(results_scan_finds_each_non_finite_value) {
    static float f[10000];
    static double d[10000];
    const uint32_t fbits[3] = {UINT32_C(0x7f800000), UINT32_C(0xff800000), UINT32_C(0x7fc00000)};
    const uint64_t dbits[3] = {INF_BITS, INF_BITS | UINT64_C(0x8000000000000000), QUIET_NAN_BITS};
    int k;
    for (k = 0; k < 3; k++) {
        const size_t at = 4097 + 1000 * (size_t)k;
        memset(f, 0, sizeof f);
        memset(d, 0, sizeof d);
        f[at] = float_of_bits(fbits[k]);
        d[at] = double_of_bits(dbits[k]);
        f[9999] = FLT_MAX;
        d[9999] = DBL_MAX;
        EXPECT(elec__first_bad_float(f, 10000) == at, "float %d not found at %zu", k, at);
        EXPECT(elec__first_bad_double(d, 10000) == at, "double %d not found at %zu", k, at);
        f[at] = 0.0f;
        d[at] = 0.0;
        EXPECT(elec__first_bad_float(f, 10000) == 10000 && elec__first_bad_double(d, 10000) == 10000,
               "FLT_MAX or DBL_MAX taken for past range");
    }
}

int main(void) {
    RUN(built_with_fast_math);
    RUN(dcs_map_past_float_range_is_refused);
    RUN(coulomb_energy_past_double_range_is_refused);
    RUN(nan_and_inf_inputs_are_refused);
    RUN(results_scan_finds_each_non_finite_value);
    return test_summary();
}
