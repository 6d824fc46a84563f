/* tests/counted_malloc.h - included before elec.h: every allocation of
   the library goes through test_malloc, which keeps the largest size
   asked for since test_largest_allocation was last zeroed, so that a test
   can see what a call asks of memory (a header claiming gigabytes
   refused before the allocation, not by it; a scratch row's size). */
#ifndef TESTS_COUNTED_MALLOC_H
#define TESTS_COUNTED_MALLOC_H
#include <stddef.h>
#include <stdlib.h>

static size_t test_largest_allocation;
static void *test_malloc(size_t size) {
    if (size > test_largest_allocation) test_largest_allocation = size;
    return malloc(size);
}
#define ELEC_MALLOC(size) test_malloc(size)
#define ELEC_FREE(ptr) free(ptr)
#endif
