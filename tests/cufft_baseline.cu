/* tests/cufft_baseline.cu - what cuFFT itself keeps on the device.

   One plan made and destroyed, then the context reset, as the GPU tests
   end.  Under compute-sanitizer's memcheck with --leak-check full this
   reports the device memory that cuFFT holds for the process after its
   last plan is destroyed (6,967,984 bytes in one allocation with CUDA 13.0
   on an H100, whatever the plan's size).  tests/sanitize_gpu.sh measures
   it first and charges a test no more than that to cuFFT. */
#include <cuda_runtime.h>
#include <cufft.h>
#include <stdio.h>

int main(void) {
    cufftHandle plan;
    size_t work = 0;
    if (cufftCreate(&plan) != CUFFT_SUCCESS) {
        fprintf(stderr, "cufft_baseline: cufftCreate failed\n");
        return 1;
    }
    if (cufftSetAutoAllocation(plan, 0) != CUFFT_SUCCESS ||
        cufftMakePlan3d(plan, 32, 32, 32, CUFFT_R2C, &work) != CUFFT_SUCCESS) {
        fprintf(stderr, "cufft_baseline: no 32^3 plan\n");
        cufftDestroy(plan);
        return 1;
    }
    if (cufftDestroy(plan) != CUFFT_SUCCESS || cudaDeviceReset() != cudaSuccess) {
        fprintf(stderr, "cufft_baseline: cleanup failed\n");
        return 1;
    }
    printf("cufft_baseline: a 32^3 plan made and destroyed\n");
    return 0;
}
