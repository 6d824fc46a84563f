/* tests/test_slab.c - the sub-lattice API (elec.h, ">>slab") against brute
   force: the partition tiles every plane once in balanced slabs, a slab's
   lattice has the whole lattice's points, the halo holds every atom within
   the cutoff of a slab point and none farther than the cutoff plus half a
   cell's diagonal, the gather copies what elec_atoms_get reads, the MRC
   header is elec_write_mrc's; and slabs put together are the whole map:
   MSM bit for bit, cutoff maps (halo atoms only) and DCS to float rounding. */
#define _XOPEN_SOURCE 700 /* mkdtemp, for tests/files.h */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "tests/test.h"
#include "tests/systems.h"
#include "tests/files.h"

#include <float.h>
#include <limits.h>

TEST(partition_tiles_the_planes_in_balanced_slabs) {
    int planes, ranks, rank;
    for (planes = 1; planes <= 40; planes++)
        for (ranks = 1; ranks <= 12; ranks++) {
            int next = 0, lo = planes / ranks, hi = (planes + ranks - 1) / ranks;
            for (rank = 0; rank < ranks; rank++) {
                int k0 = -1, k1 = -1;
                elec_status s = elec_slab_partition(planes, ranks, rank, &k0, &k1, NULL);
                EXPECT(s == ELEC_OK, "%d planes, %d ranks, rank %d: status %d", planes, ranks,
                       rank, (int)s);
                EXPECT(k0 == next, "%d planes, %d ranks: rank %d starts at %d, not %d",
                       planes, ranks, rank, k0, next);
                EXPECT(k1 - k0 >= lo && k1 - k0 <= hi,
                       "%d planes, %d ranks: rank %d has %d planes, not %d or %d", planes,
                       ranks, rank, k1 - k0, lo, hi);
                next = k1;
            }
            EXPECT(next == planes, "%d planes, %d ranks: the slabs end at %d", planes, ranks,
                   next);
        }
}

TEST(partition_refuses_what_is_no_partition) {
    int k0, k1;
    elec_error err;
    EXPECT(elec_slab_partition(0, 2, 0, &k0, &k1, &err) == ELEC_ERR_INVALID_ARG,
           "0 planes accepted");
    EXPECT(elec_slab_partition(10, 0, 0, &k0, &k1, &err) == ELEC_ERR_INVALID_ARG,
           "0 ranks accepted");
    EXPECT(elec_slab_partition(10, 4, 4, &k0, &k1, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "rank 4"), "rank 4 of 4: %s", err.message);
    EXPECT(elec_slab_partition(10, 4, -1, &k0, &k1, &err) == ELEC_ERR_INVALID_ARG,
           "rank -1 accepted");
    EXPECT(elec_slab_partition(10, 4, 0, NULL, &k1, &err) == ELEC_ERR_INVALID_ARG,
           "NULL k0 accepted");
}

TEST(slab_lattice_has_the_whole_lattices_points) {
    elec_lattice l = {{7, 5, 11}, {-3.25, 1.5, 20.125}, {0.7, 0.45, 1.1}}, slab;
    elec_error err;
    int i, j, k;
    EXPECT(elec_lattice_slab(&l, 3, 8, &slab, &err) == ELEC_OK, "%s", err.message);
    EXPECT(slab.dims[0] == 7 && slab.dims[1] == 5 && slab.dims[2] == 5, "dims %d %d %d",
           slab.dims[0], slab.dims[1], slab.dims[2]);
    /* the same positions up to the rounding of origin + k0 h + k h against
       origin + (k0 + k) h: a few ulp of the coordinates */
    for (k = 0; k < slab.dims[2]; k++)
        for (j = 0; j < 5; j++)
            for (i = 0; i < 7; i++) {
                double a[3], b[3];
                elec_lattice_point(&slab, i, j, k, a);
                elec_lattice_point(&l, i, j, k + 3, b);
                EXPECT(a[0] == b[0] && a[1] == b[1] && fabs(a[2] - b[2]) <= 4 * DBL_EPSILON * 40,
                       "point %d %d %d: %g %g %g against %g %g %g", i, j, k, a[0], a[1], a[2],
                       b[0], b[1], b[2]);
            }
    EXPECT(elec_lattice_slab(&l, 3, 3, &slab, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "slab"), "an empty slab: %s", err.message);
    EXPECT(elec_lattice_slab(&l, 5, 12, &slab, &err) == ELEC_ERR_INVALID_ARG,
           "planes past the lattice accepted");
    EXPECT(elec_lattice_slab(&l, -1, 2, &slab, &err) == ELEC_ERR_INVALID_ARG,
           "plane -1 accepted");
    /* the message names k0 and k1 as given: it printed k1 - 1, which
       overflowed at INT_MIN (UBSan) and read as a valid range for k1 one
       past the planes (an audit) */
    EXPECT(elec_lattice_slab(&l, 0, INT_MIN, &slab, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "k1 = -2147483648"), "k1 INT_MIN: %s", err.message);
    EXPECT(elec_lattice_slab(&l, 0, l.dims[2] + 1, &slab, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "k0 = 0, k1 = "), "k1 one past: %s", err.message);
    l.spacing[1] = 0.0;
    EXPECT(elec_lattice_slab(&l, 0, 2, &slab, &err) == ELEC_ERR_INVALID_ARG,
           "a bad lattice accepted");
}

/* The smallest distance from atom i to a point of the slab, by every point. */
static double nearest_point(const elec_lattice *l, int k0, int k1, const double x[3]) {
    double best = HUGE_VAL;
    int i, j, k;
    for (k = k0; k < k1; k++)
        for (j = 0; j < l->dims[1]; j++)
            for (i = 0; i < l->dims[0]; i++) {
                double p[3], d;
                elec_lattice_point(l, i, j, k, p);
                d = sqrt(elec_distance2(p, x));
                if (d < best) best = d;
            }
    return best;
}

TEST(halo_holds_every_atom_within_the_cutoff_and_no_far_one) {
    const unsigned long long seed = 16;
    test_system sys = test_system_random(600, 40.0, seed);
    elec_atoms atoms = test_system_atoms(&sys);
    /* the lattice covers part of the atoms' box: atoms beyond it in x and
       y, and below and above the slabs in z, are in some halos and not
       others */
    elec_lattice l = {{9, 8, 13}, {8.0, 6.0, 4.0}, {2.5, 3.0, 2.7}};
    const double cutoffs[2] = {5.0, 9.5};
    const double half_diagonal = 0.5 * sqrt(2.5 * 2.5 + 3.0 * 3.0 + 2.7 * 2.7);
    size_t *index = (size_t *)malloc(sys.count * sizeof *index), n, i, m;
    int c, rank;
    for (c = 0; c < 2; c++)
        for (rank = 0; rank < 3; rank++) {
            int k0, k1;
            elec_error err;
            elec_slab_partition(l.dims[2], 3, rank, &k0, &k1, NULL);
            EXPECT(elec_atoms_halo(&atoms, &l, k0, k1, cutoffs[c], index, &n, &err) == ELEC_OK,
                   "%s", err.message);
            EXPECT(n > 0 && n < sys.count, "seed %llu: halo of %zu of %zu atoms tests nothing",
                   seed, n, sys.count);
            for (i = 0, m = 0; i < sys.count; i++) {
                double x[3], d;
                int in = m < n && index[m] == i;
                elec_atoms_get(&atoms, i, x, NULL, NULL);
                d = nearest_point(&l, k0, k1, x);
                if (in) m++;
                EXPECT(in || d >= cutoffs[c],
                       "seed %llu, cutoff %g, slab %d..%d: atom %zu at %g A of a point left "
                       "out", seed, cutoffs[c], k0, k1 - 1, i, d);
                EXPECT(!in || d < cutoffs[c] + half_diagonal,
                       "seed %llu, cutoff %g, slab %d..%d: atom %zu at %g A of every point "
                       "taken", seed, cutoffs[c], k0, k1 - 1, i, d);
            }
            EXPECT(m == n, "the halo's indices are not increasing");
        }
    /* cutoff 0: every atom */
    EXPECT(elec_atoms_halo(&atoms, &l, 0, 2, 0.0, index, &n, NULL) == ELEC_OK &&
               n == sys.count && index[0] == 0 && index[n - 1] == n - 1,
           "cutoff 0 gave %zu atoms", n);
    EXPECT(elec_atoms_halo(&atoms, &l, 0, 2, -1.0, index, &n, NULL) == ELEC_ERR_INVALID_ARG,
           "a negative cutoff accepted");
    EXPECT(elec_atoms_halo(&atoms, &l, 2, 2, 5.0, index, &n, NULL) == ELEC_ERR_INVALID_ARG,
           "an empty slab accepted");
    free(index);
    test_system_free(&sys);
}

TEST(gather_copies_the_atoms_it_is_given) {
    test_system sys = test_system_random(50, 20.0, 3);
    elec_atoms atoms = test_system_atoms(&sys);
    const size_t index[4] = {0, 7, 8, 49};
    double xyz[12], q[4], r[4];
    elec_error err;
    size_t i, bad = 50;
    EXPECT(elec_atoms_gather(&atoms, index, 4, xyz, q, r, &err) == ELEC_OK, "%s", err.message);
    for (i = 0; i < 4; i++) {
        size_t j = index[i];
        EXPECT(xyz[3 * i] == sys.xyz[3 * j] && xyz[3 * i + 2] == sys.xyz[3 * j + 2] &&
                   q[i] == sys.charge[j] && r[i] == sys.radius[j],
               "atom %zu not copied", j);
    }
    EXPECT(elec_atoms_gather(&atoms, &bad, 1, xyz, q, r, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "past"), "index 50 of 50: %s", err.message);
    atoms.charge = NULL; /* a view without charges was read through */
    EXPECT(elec_atoms_gather(&atoms, index, 4, xyz, q, r, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "no positions or charges"), "no charges: %s", err.message);
    test_system_free(&sys);
}

TEST(mrc_header_is_the_writers) {
    elec_lattice l = {{6, 4, 5}, {-1.5, 2.0, 3.25}, {0.5, 0.75, 1.0}};
    float map[120];
    unsigned char header[1024], file[1024];
    elec_map_stats st;
    double sum = 0.0, squares = 0.0;
    char *dir = scratch_dir(), path[256];
    FILE *f;
    elec_error err;
    size_t i;
    if (!dir) SKIP("no scratch directory under build/");
    for (i = 0; i < 120; i++) map[i] = (float)sin(0.37 * (double)i) * 3.0f;
    st.min = st.max = map[0];
    for (i = 0; i < 120; i++) {
        st.min = map[i] < st.min ? map[i] : st.min;
        st.max = map[i] > st.max ? map[i] : st.max;
        sum += map[i];
    }
    st.mean = sum / 120.0;
    for (i = 0; i < 120; i++) squares += (map[i] - st.mean) * (map[i] - st.mean);
    st.rms = sqrt(squares / 120.0);
    snprintf(path, sizeof path, "%s/m.mrc", dir);
    EXPECT(elec_write_mrc(path, &l, map, "a comment\nof two lines", &err) == ELEC_OK, "%s",
           err.message);
    EXPECT(elec_mrc_header(&l, &st, "a comment\nof two lines", header, &err) == ELEC_OK, "%s",
           err.message);
    f = fopen(path, "rb");
    EXPECT(f && fread(file, 1, 1024, f) == 1024, "cannot read back %s", path);
    if (f) fclose(f);
    EXPECT(memcmp(header, file, 1024) == 0, "the header differs from elec_write_mrc's");
    EXPECT(elec_mrc_header(&l, NULL, NULL, header, &err) == ELEC_ERR_INVALID_ARG,
           "NULL stats accepted");
    scratch_remove(dir);
}

/* The test system and lattice of the map tests: water around an ion pair,
   the lattice wider than the atoms. */
typedef struct slab_case {
    test_system sys;
    elec_atoms atoms;
    elec_lattice lattice;
    size_t plane, total;
} slab_case;

static slab_case slab_case_make(void) {
    slab_case c;
    int dims[3] = {17, 15, 23};
    c.sys = test_system_water(120, 11);
    c.atoms = test_system_atoms(&c.sys);
    c.lattice = test_lattice_around(c.sys.box, dims, 6.0);
    c.plane = (size_t)dims[0] * dims[1];
    c.total = elec_lattice_size(&c.lattice);
    return c;
}

/* Whether the MSM map of c's lattice in `ranks` slabs is the whole map,
   bit for bit, with parameters p. */
static int msm_slabs_are_the_whole(const slab_case *c, const elec_msm_params *p, int ranks,
                                   float *whole, float *parts) {
    elec_error err;
    int rank;
    EXPECT(elec_cpu_msm_map(&c->atoms, &c->lattice, p, whole, &err) == ELEC_OK, "%s",
           err.message);
    for (rank = 0; rank < ranks; rank++) {
        int k0, k1;
        elec_slab_partition(c->lattice.dims[2], ranks, rank, &k0, &k1, NULL);
        EXPECT(elec_cpu_msm_map_slab(&c->atoms, &c->lattice, k0, k1, p,
                                     parts + (size_t)k0 * c->plane, &err) == ELEC_OK,
               "%s", err.message);
    }
    return memcmp(whole, parts, c->total * sizeof *whole) == 0;
}

TEST(msm_slabs_are_the_whole_map_bit_for_bit) {
    slab_case c = slab_case_make();
    float *whole = (float *)malloc(c.total * sizeof *whole);
    float *parts = (float *)malloc(c.total * sizeof *parts);
    elec_msm_params p = {0};
    elec_error err;
    p.spacing = 1.5;
    p.cutoff = 8.0;
    EXPECT(msm_slabs_are_the_whole(&c, &p, 4, whole, parts),
           "the slabs differ from the whole map");
    EXPECT(elec_cpu_msm_map_slab(&c.atoms, &c.lattice, 5, 5, &p, parts, &err) ==
               ELEC_ERR_INVALID_ARG, "an empty slab accepted");
    /* with a tolerance the choice counts the points per atom: each slab
       must choose as the whole map does, from the whole lattice's points
       (one that counted its own slab's passed while spacing and cutoff
       were fixed) */
    memset(&p, 0, sizeof p);
    p.tolerance = 1e-4;
    EXPECT(msm_slabs_are_the_whole(&c, &p, 4, whole, parts),
           "with a tolerance, the slabs differ from the whole map");
    free(whole);
    free(parts);
    test_system_free(&c.sys);
}

TEST(an_msm_slab_past_floats_range_is_refused) {
    /* Charges of 1e308 e (test_huge_charges): the slab of planes 1 and 2
       fails, naming the call and its first point, as the whole map does. */
    elec_atoms atoms = test_huge_charges();
    elec_lattice l = test_lattice_cube(6, 0.0, 1.0);
    float map[72];
    elec_msm_params p = {0};
    elec_error err;
    elec_status s = elec_cpu_msm_map_slab(&atoms, &l, 1, 3, &p, map, &err);
    EXPECT(test_refused_past_range(s, &err, "MSM slab", "float"), "status %d, %s", (int)s,
           err.message);
}

TEST(cutoff_slabs_of_their_halo_are_the_whole_map) {
    slab_case c = slab_case_make();
    float *whole = (float *)malloc(c.total * sizeof *whole);
    float *parts = (float *)malloc(c.total * sizeof *parts);
    size_t *index = (size_t *)malloc(c.sys.count * sizeof *index), i;
    double *xyz = (double *)malloc(3 * c.sys.count * sizeof *xyz);
    double *q = (double *)malloc(c.sys.count * sizeof *q), worst = 0.0, largest = 0.0;
    elec_cutoff_params p = {0};
    elec_error err;
    size_t smallest = c.sys.count;
    int rank, ranks = 4;
    p.cutoff = 7.0;
    EXPECT(elec_cpu_cutoff_map(&c.atoms, &c.lattice, &p, whole, &err) == ELEC_OK, "%s",
           err.message);
    for (rank = 0; rank < ranks; rank++) {
        int k0, k1;
        size_t n;
        elec_lattice slab;
        elec_atoms halo;
        EXPECT(elec_slab_partition(c.lattice.dims[2], ranks, rank, &k0, &k1, NULL) == ELEC_OK,
               "rank %d: partition", rank);
        EXPECT(elec_lattice_slab(&c.lattice, k0, k1, &slab, NULL) == ELEC_OK, "rank %d: slab",
               rank);
        EXPECT(elec_atoms_halo(&c.atoms, &c.lattice, k0, k1, p.cutoff, index, &n, NULL) ==
                   ELEC_OK,
               "rank %d: halo", rank);
        smallest = n < smallest ? n : smallest;
        EXPECT(elec_atoms_gather(&c.atoms, index, n, xyz, q, NULL, NULL) == ELEC_OK,
               "rank %d: gather", rank);
        halo = elec_atoms_from_xyz(n, xyz, q, NULL);
        EXPECT(elec_cpu_cutoff_map(&halo, &slab, &p, parts + (size_t)k0 * c.plane, &err) ==
                   ELEC_OK, "%s", err.message);
    }
    /* The float path sums in double: the slab's frame (positions relative
       to its own centre) moves each term by double rounding, ~1e-16 of the
       sum of |terms|; after the cast to float two values differ by at most
       an ulp of the value, or by that double rounding where they cancel to
       near zero (1e-13 of the largest value bounds it with room). */
    for (i = 0; i < c.total; i++) largest = fabs(whole[i]) > largest ? fabs(whole[i]) : largest;
    for (i = 0; i < c.total; i++) {
        double d = fabs((double)whole[i] - parts[i]);
        double allowed = FLT_EPSILON * fabs(whole[i]) + 1e-13 * largest;
        if (d > allowed && d - allowed > worst) worst = d - allowed;
    }
    EXPECT(smallest < c.sys.count, "every halo holds every atom: the test tests nothing");
    EXPECT(worst == 0.0, "a slab's value differs by %g past float rounding", worst);
    free(whole);
    free(parts);
    free(index);
    free(xyz);
    free(q);
    test_system_free(&c.sys);
}

/* Deliberate pair (a scan for repeated blocks lists it): MSM's and cutoff's slab tests
   above for DCS, one per method: tests read like specifications. */
TEST(dcs_slabs_are_the_whole_map_to_float_rounding) {
    slab_case c = slab_case_make();
    float *whole = (float *)malloc(c.total * sizeof *whole);
    float *parts = (float *)malloc(c.total * sizeof *parts);
    elec_dcs_params p = {0};
    elec_error err;
    double reach = 0.0, worst = 0.0;
    size_t i, j, where = 0;
    int rank, ranks = 4, axis;
    EXPECT(elec_cpu_dcs_map(&c.atoms, &c.lattice, &p, whole, &err) == ELEC_OK, "%s",
           err.message);
    for (rank = 0; rank < ranks; rank++) {
        int k0, k1;
        elec_lattice slab;
        elec_slab_partition(c.lattice.dims[2], ranks, rank, &k0, &k1, NULL);
        elec_lattice_slab(&c.lattice, k0, k1, &slab, NULL);
        EXPECT(elec_cpu_dcs_map(&c.atoms, &slab, &p, parts + (size_t)k0 * c.plane, &err) ==
                   ELEC_OK, "%s", err.message);
    }
    /* R: the farthest any atom or point is from either frame's centre (the
       whole lattice's box holds the atoms, so its diagonal bounds it). */
    for (axis = 0; axis < 3; axis++)
        reach += pow((c.lattice.dims[axis] - 1) * c.lattice.spacing[axis], 2.0);
    reach = sqrt(reach);
    /* The float path's error at a point, in each frame: positions rounded
       to float relative to the centre (|dx| <= 2^-24 R per coordinate, so
       |dr| <= 2 sqrt(3) 2^-24 R between an atom and a point), and the
       float arithmetic of dx, r^2, sqrtf and q/r (4 roundings of 2^-24
       each, relative) on each term q/r: sum_j |q_j| / r_j (4 + 2 sqrt(3) R
       / r_j) 2^-24, plus the final rounding to float.  The two maps differ
       by at most the sum of their errors: twice that. */
    for (i = 0; i < c.total; i++) {
        double point[3], bound = 0.0, d;
        elec_lattice_point(&c.lattice, (int)(i % (size_t)c.lattice.dims[0]),
                           (int)(i / (size_t)c.lattice.dims[0] % (size_t)c.lattice.dims[1]),
                           (int)(i / c.plane), point);
        for (j = 0; j < c.sys.count; j++) {
            double r = sqrt(elec_distance2(point, c.sys.xyz + 3 * j));
            bound += fabs(c.sys.charge[j]) / r * (4.0 + 2.0 * sqrt(3.0) * reach / r);
        }
        bound = 2.0 * (bound * 0x1p-24 + 0x1p-24 * fabs(whole[i]));
        d = fabs((double)whole[i] - parts[i]);
        if (d / bound > worst) {
            worst = d / bound;
            where = i;
        }
    }
    EXPECT(worst <= 1.0, "point %zu differs by %g of its float-rounding bound", where, worst);
    free(whole);
    free(parts);
    test_system_free(&c.sys);
}

int main(void) {
    RUN(partition_tiles_the_planes_in_balanced_slabs);
    RUN(partition_refuses_what_is_no_partition);
    RUN(slab_lattice_has_the_whole_lattices_points);
    RUN(halo_holds_every_atom_within_the_cutoff_and_no_far_one);
    RUN(gather_copies_the_atoms_it_is_given);
    RUN(mrc_header_is_the_writers);
    RUN(msm_slabs_are_the_whole_map_bit_for_bit);
    RUN(an_msm_slab_past_floats_range_is_refused);
    RUN(cutoff_slabs_of_their_halo_are_the_whole_map);
    RUN(dcs_slabs_are_the_whole_map_to_float_rounding);
    return test_summary();
}
