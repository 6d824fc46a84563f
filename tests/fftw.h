/* tests/fftw.h - REQUIRE_FFTW() at the top of a TEST that needs the CPU
   SPME.  Whether the CPU SPME can run is a property of the build: without
   FFTW3 (the Makefile finds it and defines ELEC_WITH_FFTW) the test skips,
   saying why; with it, an ELEC_ERR_UNSUPPORTED is a failure, not a skip. */
#ifndef ELEC_TESTS_FFTW_H
#define ELEC_TESTS_FFTW_H

#ifdef ELEC_WITH_FFTW
#define REQUIRE_FFTW() ((void)0)
#else
#define REQUIRE_FFTW()                                                        \
    SKIP("built without FFTW3 (the Makefile finds it; "                       \
         "apt-get install libfftw3-dev)")
#endif

#endif
