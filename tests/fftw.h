/* tests/fftw.h - REQUIRE_FFTW() at the top of a TEST that needs the CPU
   SPME: skips it, saying why, where elec was built without FFTW3 (the
   Makefile finds it and defines ELEC_WITH_FFTW; without it elec_cpu_spme
   returns ELEC_ERR_UNSUPPORTED).  Include after elec_cpu.h and test.h. */
#ifndef ELEC_TESTS_FFTW_H
#define ELEC_TESTS_FFTW_H

#define REQUIRE_FFTW()                                                        \
    do {                                                                      \
        double x0[3] = {1, 1, 1}, q0 = 0.0;                                   \
        elec_atoms one = elec_atoms_from_xyz(1, x0, &q0, NULL);               \
        elec_box b0 = {{10, 10, 10}};                                         \
        elec_ewald_terms t0;                                                  \
        if (elec_cpu_spme(&one, &b0, NULL, &t0, NULL, NULL, NULL) ==          \
            ELEC_ERR_UNSUPPORTED)                                             \
            SKIP("built without FFTW3 (the Makefile finds it; "               \
                 "apt-get install libfftw3-dev)");                            \
    } while (0)

#endif
