/* tests/failing_malloc.h - included before elec.h: every allocation of
   the library goes through test_malloc, which counts the calls and fails
   the one numbered test_fail_at (1, 2, ...; 0 fails none), and keeps the
   blocks live, so that a test can fail each allocation of a call in turn
   and see what the call does: refuse with ELEC_ERR_NO_MEMORY, leave
   nothing allocated, crash nowhere. */
#ifndef TESTS_FAILING_MALLOC_H
#define TESTS_FAILING_MALLOC_H
#include <stddef.h>
#include <stdlib.h>

static long test_fail_at, test_allocations, test_live_blocks;
/* The counters under one lock: the library allocates from OpenMP threads
   too (the charge map's slabs). */
static void *test_malloc(size_t size) {
    void *p = NULL;
#ifdef _OPENMP
#pragma omp critical(test_failing_malloc)
#endif
    {
        test_allocations++;
        if (!(test_fail_at > 0 && test_allocations == test_fail_at)) {
            p = malloc(size);
            if (p) test_live_blocks++;
        }
    }
    return p;
}
static void test_free(void *p) {
    if (!p) return;
#ifdef _OPENMP
#pragma omp critical(test_failing_malloc)
#endif
    test_live_blocks--;
    free(p);
}
#define ELEC_MALLOC(size) test_malloc(size)
#define ELEC_FREE(ptr) test_free(ptr)
#endif
