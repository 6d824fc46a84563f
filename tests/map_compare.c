/* tests/map_compare.c - two maps side by side, for tests/test_mpi.sh:
       map_compare A.mrc|A.dx B.mrc|B.dx
   reads both (any format elec_read_map reads), refuses maps of different
   lattices (status 1), and prints one line
       points N differ D max_ulp U max_abs E max_ref M rel_rms R
   D the points whose floats differ, U the largest distance between them in
   units in the last place (floats of one sign counted in order; 0 when the
   maps are bit for bit the same), E the largest |a - b|, M the largest
   |b|, R the RMS of a - b over that of b (B the reference). */
#define ELEC_IMPLEMENTATION
#include "elec.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* A float's place in the order of all floats (negative ones below zero). */
static int64_t float_order(float f) {
    int32_t bits;
    memcpy(&bits, &f, 4);
    return bits < 0 ? -(int64_t)(bits & 0x7fffffff) : (int64_t)bits;
}

int main(int argc, char **argv) {
    elec_lattice la, lb;
    float *a = NULL, *b = NULL;
    elec_error err;
    size_t n, i, differ = 0;
    int64_t max_ulp = 0;
    double max_abs = 0.0, max_ref = 0.0, d2 = 0.0, r2 = 0.0;
    int axis;
    if (argc != 3) {
        fprintf(stderr, "usage: map_compare A B\n");
        return 2;
    }
    if (elec_read_map(argv[1], &la, &a, &err) != ELEC_OK ||
        elec_read_map(argv[2], &lb, &b, &err) != ELEC_OK) {
        fprintf(stderr, "map_compare: %s\n", err.message);
        elec_free(a);
        return 1;
    }
    for (axis = 0; axis < 3; axis++)
        if (la.dims[axis] != lb.dims[axis] ||
            fabs(la.origin[axis] - lb.origin[axis]) > 1e-4 * la.spacing[axis] ||
            fabs(la.spacing[axis] - lb.spacing[axis]) > 1e-6 * la.spacing[axis]) {
            fprintf(stderr, "map_compare: the lattices differ along axis %d\n", axis);
            elec_free(a);
            elec_free(b);
            return 1;
        }
    n = elec_lattice_size(&la);
    for (i = 0; i < n; i++) {
        double d = (double)a[i] - (double)b[i];
        int64_t u = float_order(a[i]) - float_order(b[i]);
        if (u < 0) u = -u;
        if (u) differ++;
        if (u > max_ulp) max_ulp = u;
        if (fabs(d) > max_abs) max_abs = fabs(d);
        if (fabs(b[i]) > max_ref) max_ref = fabs(b[i]);
        d2 += d * d;
        r2 += (double)b[i] * b[i];
    }
    printf("points %zu differ %zu max_ulp %lld max_abs %.3e max_ref %.3e rel_rms %.3e\n", n,
           differ, (long long)max_ulp, max_abs, max_ref, r2 > 0 ? sqrt(d2 / r2) : sqrt(d2));
    elec_free(a);
    elec_free(b);
    return 0;
}
