/* tests/gpu.h - what the GPU tests and benchmarks share.

   REQUIRE_GPU() at the top of a TEST: skips it, saying why, where no CUDA
   device is present, and fails it instead when ELEC_REQUIRE_GPU is set
   (make test-gpu sets it).  CUDA_CHECK(call): a CUDA runtime call in a
   benchmark or example, which prints the call and exits on failure;
   CHECK_ELEC(call) the same for an elec call. */
#ifndef ELEC_TESTS_GPU_H
#define ELEC_TESTS_GPU_H

#include <stdio.h>
#include <stdlib.h>

#define REQUIRE_GPU()                                                         \
    do {                                                                      \
        if (elec_cuda_device_count() == 0) {                                  \
            if (getenv("ELEC_REQUIRE_GPU")) {                                 \
                EXPECT(0, "no CUDA device, and ELEC_REQUIRE_GPU is set");     \
                return;                                                       \
            }                                                                 \
            SKIP("no CUDA device here (run make test-gpu on a GPU machine)"); \
        }                                                                     \
    } while (0)

#define CUDA_CHECK(call)                                                     \
    do {                                                                     \
        cudaError_t e_ = (call);                                             \
        if (e_ != cudaSuccess) {                                             \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,    \
                    cudaGetErrorString(e_));                                 \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

/* CHECK_ELEC(call): an elec call in a benchmark or example, with `err`
   (an elec_error *) in scope for the call; prints its message and exits on
   failure. */
#define CHECK_ELEC(call)                                                     \
    do {                                                                     \
        elec_error err_;                                                     \
        elec_error *err = &err_;                                             \
        elec_status s_ = (call);                                             \
        if (s_ != ELEC_OK) {                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,    \
                    err_.message);                                           \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

#endif
