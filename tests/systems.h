/* tests/systems.h - seeded test systems shared by the tests, the benchmark
   and the examples: random charges, a box of SPC/E water, a rock-salt
   crystal.  Header of static inline functions; C99, and C++ under nvcc.

       test_system s = test_system_water(3000, 7);
       elec_atoms atoms = test_system_atoms(&s);
       ...
       test_system_free(&s);

   The same seed gives the same system on every machine (a xorshift64*
   generator of its own, so it does not depend on tests/test.h). */
#ifndef ELEC_TEST_SYSTEMS_H
#define ELEC_TEST_SYSTEMS_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "elec.h"

/* Atoms owned by the system: xyz[3*i + axis] (A), charge (e), radius (A);
   box the edge lengths of the region the atoms fill. */
typedef struct test_system {
    size_t count;
    double *xyz;
    double *charge;
    double *radius;
    double box[3];
} test_system;

/* -DTEST_SMALL shrinks the large systems ~10x for runs under valgrind;
   the tolerances stand as they are. */
#ifdef TEST_SMALL
#define TEST_RANDOM_ATOMS 1000
#define TEST_WATER_MOLECULES 300
#else
#define TEST_RANDOM_ATOMS 10000
#define TEST_WATER_MOLECULES 3000
#endif

/* ----------------------------------- generator (seeded: tests print seeds) */

typedef struct test_rng { unsigned long long state; } test_rng;

static inline test_rng test_rng_seeded(unsigned long long seed) {
    test_rng r;
    r.state = seed * 2685821657736338717ULL + 1442695040888963407ULL;
    if (r.state == 0) r.state = 1;
    return r;
}

/* Uniform in [0, 1), 53 random bits. */
static inline double test_uniform(test_rng *r) {
    unsigned long long x = r->state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    r->state = x;
    return (double)((x * 2685821657736338717ULL) >> 11) / 9007199254740992.0;
}

/* Arrays for n atoms, zeroed; count 0 and NULL arrays when n is 0 or the
   allocation fails (callers check count). */
static inline test_system sys__alloc(size_t n) {
    test_system s;
    memset(&s, 0, sizeof s);
    if (n == 0) return s;
    s.xyz = (double *)calloc(3 * n, sizeof(double));
    s.charge = (double *)calloc(n, sizeof(double));
    s.radius = (double *)calloc(n, sizeof(double));
    if (!s.xyz || !s.charge || !s.radius) {
        free(s.xyz);
        free(s.charge);
        free(s.radius);
        memset(&s, 0, sizeof s);
        return s;
    }
    s.count = n;
    return s;
}

/* Shifts every charge by the mean, so that the system is neutral. */
static inline void test_system_make_neutral(test_system *s) {
    double total = 0.0;
    size_t i;
    for (i = 0; i < s->count; i++) total += s->charge[i];
    for (i = 0; i < s->count; i++) s->charge[i] -= total / (double)s->count;
}

/* A lattice of dims points per axis over the box [0, box] widened by
   `margin` on every side, shifted by a quarter spacing so that no atom on
   a grid of the box (a crystal's ions) sits on a point; tests choose dims
   that are no multiple of a kernel's block. */
static inline elec_lattice test_lattice_around(const double box[3], const int dims[3],
                                               double margin) {
    elec_lattice l;
    int axis;
    for (axis = 0; axis < 3; axis++) {
        l.dims[axis] = dims[axis];
        l.spacing[axis] = (box[axis] + 2.0 * margin) / (dims[axis] - 1);
        l.origin[axis] = -margin + 0.25 * l.spacing[axis];
    }
    return l;
}

/* n points per axis from origin at spacing, on every axis. */
static inline elec_lattice test_lattice_cube(int n, double origin, double spacing) {
    elec_lattice l;
    int axis;
    for (axis = 0; axis < 3; axis++) {
        l.dims[axis] = n;
        l.origin[axis] = origin;
        l.spacing[axis] = spacing;
    }
    return l;
}

/* A lattice of awkward counts (37 x 29 x 23: no dimension a multiple of
   any tile) over the region of a cube of the given edge, 1 to 2 A past
   it. */
static inline elec_lattice test_lattice_awkward(double edge) {
    elec_lattice l;
    l.dims[0] = 37;
    l.dims[1] = 29;
    l.dims[2] = 23;
    l.origin[0] = -2.0;
    l.origin[1] = -1.5;
    l.origin[2] = -1.0;
    l.spacing[0] = (edge + 4.0) / 36.0;
    l.spacing[1] = (edge + 3.0) / 28.0;
    l.spacing[2] = (edge + 2.0) / 22.0;
    return l;
}

static inline void test_system_free(test_system *s) {
    free(s->xyz);
    free(s->charge);
    free(s->radius);
    memset(s, 0, sizeof *s);
}

static inline elec_atoms test_system_atoms(const test_system *s) {
    return elec_atoms_from_xyz(s->count, s->xyz, s->charge, s->radius);
}

/* An orthorhombic periodic box of edges x, y, z (A). */
static inline elec_box test_box(double x, double y, double z) {
    elec_box b;
    b.length[0] = x;
    b.length[1] = y;
    b.length[2] = z;
    return b;
}

/* The periodic box of a system: its edges. */
static inline elec_box test_system_box(const test_system *s) {
    return test_box(s->box[0], s->box[1], s->box[2]);
}

/* ------------------------------------------------------------- systems */

/* n atoms uniform in [0, edge)^3, charges uniform in [-1, 1], radii
   uniform in [1, 2]. */
static inline test_system test_system_random(size_t n, double edge,
                                             unsigned long long seed) {
    test_system s = sys__alloc(n);
    test_rng rng = test_rng_seeded(seed);
    size_t i;
    int axis;
    for (i = 0; i < s.count; i++) {
        for (axis = 0; axis < 3; axis++)
            s.xyz[3 * i + axis] = edge * test_uniform(&rng);
        s.charge[i] = 2.0 * test_uniform(&rng) - 1.0;
        s.radius[i] = 1.0 + test_uniform(&rng);
    }
    s.box[0] = s.box[1] = s.box[2] = edge;
    return s;
}

/* A box of SPC/E water: O-H 1.0 A, H-O-H 109.47 degrees, charges O -0.8476
   and H +0.4238 (neutral molecules), radii O 1.77 and H 1.0 A.  Molecules
   sit on a cubic grid at liquid density (0.0334 molecules / A^3), each
   oxygen jittered by up to 0.3 A, each molecule turned at random; the box
   edge is the grid's cube edge. */
static inline test_system test_system_water(size_t molecules,
                                            unsigned long long seed) {
    const double density = 0.0334, oh = 1.0;
    const double half_angle = 0.5 * 109.47 * 3.14159265358979323846 / 180.0;
    test_system s = sys__alloc(3 * molecules);
    test_rng rng = test_rng_seeded(seed);
    size_t m, per_side = 1;
    double cell, edge;
    while (per_side * per_side * per_side < molecules) per_side++;
    edge = cbrt((double)molecules / density);
    cell = edge / (double)per_side;
    if (s.count == 0) return s;
    for (m = 0; m < molecules; m++) {
        size_t gx = m % per_side, gy = (m / per_side) % per_side,
               gz = m / (per_side * per_side);
        double o[3], u[3], v[3], w[3], len;
        double *xyz = s.xyz + 9 * m;
        int axis;
        o[0] = (gx + 0.5) * cell + 0.6 * (test_uniform(&rng) - 0.5);
        o[1] = (gy + 0.5) * cell + 0.6 * (test_uniform(&rng) - 0.5);
        o[2] = (gz + 0.5) * cell + 0.6 * (test_uniform(&rng) - 0.5);
        /* A random unit vector u (the molecule's bisector) by rejection,
           and a unit vector v perpendicular to it (the H-H direction). */
        do {
            for (axis = 0; axis < 3; axis++)
                u[axis] = 2.0 * test_uniform(&rng) - 1.0;
            len = sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2]);
        } while (len < 0.1 || len > 1.0);
        for (axis = 0; axis < 3; axis++) u[axis] /= len;
        do {
            double dot;
            for (axis = 0; axis < 3; axis++)
                w[axis] = 2.0 * test_uniform(&rng) - 1.0;
            dot = w[0] * u[0] + w[1] * u[1] + w[2] * u[2];
            for (axis = 0; axis < 3; axis++) v[axis] = w[axis] - dot * u[axis];
            len = sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
        } while (len < 0.1);
        for (axis = 0; axis < 3; axis++) v[axis] /= len;
        for (axis = 0; axis < 3; axis++) {
            double along = oh * cos(half_angle) * u[axis];
            double across = oh * sin(half_angle) * v[axis];
            xyz[axis] = o[axis];
            xyz[3 + axis] = o[axis] + along + across;
            xyz[6 + axis] = o[axis] + along - across;
        }
        s.charge[3 * m] = -0.8476;
        s.charge[3 * m + 1] = s.charge[3 * m + 2] = 0.4238;
        s.radius[3 * m] = 1.77;
        s.radius[3 * m + 1] = s.radius[3 * m + 2] = 1.0;
    }
    s.box[0] = s.box[1] = s.box[2] = edge;
    return s;
}

/* Atoms atom and atom + 1 as a cation (+1, of the given radius) and a
   chloride (-1, 1.8 A). */
static inline void sys__ion_pair(test_system *s, size_t atom, double cation_radius) {
    s->charge[atom] = 1.0;
    s->radius[atom] = cation_radius;
    s->charge[atom + 1] = -1.0;
    s->radius[atom + 1] = 1.8;
}

/* Rock salt: cells^3 conventional cubic cells of lattice constant a, 8 ions
   each (4 Na+ at the fcc sites, 4 Cl- shifted by a/2 along x and wrapped
   into the box, so the crystal is also a periodic one), charges +1 and -1,
   radii 1.0 (Na) and 1.8 (Cl); box = cells * a, positions in [0, box). */
static inline test_system test_system_nacl(int cells, double a) {
    static const double fcc[4][3] = {
        {0.0, 0.0, 0.0}, {0.0, 0.5, 0.5}, {0.5, 0.0, 0.5}, {0.5, 0.5, 0.0}};
    size_t n = cells > 0 ? 8 * (size_t)cells * (size_t)cells * (size_t)cells
                         : 0;
    test_system s = sys__alloc(n);
    size_t atom = 0;
    int cx, cy, cz, site, axis;
    if (s.count == 0) return s;
    for (cz = 0; cz < cells; cz++)
        for (cy = 0; cy < cells; cy++)
            for (cx = 0; cx < cells; cx++)
                for (site = 0; site < 4; site++) {
                    int cell[3];
                    cell[0] = cx;
                    cell[1] = cy;
                    cell[2] = cz;
                    for (axis = 0; axis < 3; axis++) {
                        double f = cell[axis] + fcc[site][axis];
                        s.xyz[3 * atom + axis] = f * a;
                        /* the Cl- of the pair: half a cell along x */
                        double g = f + (axis == 0 ? 0.5 : 0.0);
                        if (g >= cells) g -= cells; /* wrapped into the box */
                        s.xyz[3 * (atom + 1) + axis] = g * a;
                    }
                    sys__ion_pair(&s, atom, 1.0);
                    atom += 2;
                }
    s.box[0] = s.box[1] = s.box[2] = cells * a;
    return s;
}

/* An ionic double layer: n ions (alternately -1 and +1) uniform over a
   side x side square, the cations in the slab 0 <= z < thickness and the
   anions in the next one, thickness <= z < 2 thickness, in a box of
   height `height`: the pairs beyond a cutoff add coherently (the field
   between the sheets), which random charges never do. */
static inline test_system test_system_double_layer(size_t n, double side, double height,
                                                   double thickness,
                                                   unsigned long long seed) {
    test_system s = sys__alloc(n);
    test_rng rng = test_rng_seeded(seed);
    size_t i;
    for (i = 0; i < s.count; i++) {
        s.charge[i] = i % 2 ? 1.0 : -1.0;
        s.radius[i] = 1.5;
        s.xyz[3 * i] = side * test_uniform(&rng);
        s.xyz[3 * i + 1] = side * test_uniform(&rng);
        s.xyz[3 * i + 2] = (s.charge[i] > 0.0 ? 0.0 : thickness) + thickness * test_uniform(&rng);
    }
    s.box[0] = s.box[1] = side;
    s.box[2] = height;
    return s;
}

/* Caesium chloride: cells^3 cubic cells of edge a, Cs+ at each corner
   and Cl- at each centre (a = 4.12 A). */
static inline test_system test_system_cscl(int cells, double a) {
    size_t n = cells > 0 ? 2 * (size_t)cells * (size_t)cells * (size_t)cells : 0;
    test_system s = sys__alloc(n);
    size_t atom = 0;
    int cx, cy, cz, axis;
    for (cz = 0; cz < cells; cz++)
        for (cy = 0; cy < cells; cy++)
            for (cx = 0; cx < cells; cx++) {
                const int cell[3] = {cx, cy, cz};
                for (axis = 0; axis < 3; axis++) {
                    s.xyz[3 * atom + axis] = cell[axis] * a;
                    s.xyz[3 * (atom + 1) + axis] = (cell[axis] + 0.5) * a;
                }
                sys__ion_pair(&s, atom, 1.7);
                atom += 2;
            }
    s.box[0] = s.box[1] = s.box[2] = cells * a;
    return s;
}

/* n points on a sphere of the given radius about centre, spread by the
   Fibonacci spiral, with their outward unit normals (3 n values each):
   the surfaces of the ALPB tests. */
static inline void test_sphere_points(size_t n, const double centre[3], double radius,
                                      double *xyz, double *normal) {
    const double turn = 3.14159265358979323846 * (1.0 + sqrt(5.0));
    size_t k;
    for (k = 0; k < n; k++) {
        double z = 1.0 - 2.0 * ((double)k + 0.5) / (double)n, s = sqrt(1.0 - z * z);
        double t = turn * ((double)k + 0.5), u[3];
        int axis;
        u[0] = s * cos(t);
        u[1] = s * sin(t);
        u[2] = z;
        for (axis = 0; axis < 3; axis++) {
            xyz[3 * k + axis] = centre[axis] + radius * u[axis];
            if (normal) normal[3 * k + axis] = u[axis];
        }
    }
}

/* Points spread far apart, where the float paths at points once lost
   their precision (elec.h, ELEC__FLOAT_REGION): their positions were taken
   relative to the centre of the points' box, which one point 1e10 A away
   put 5e9 A from the rest, and a point 3 A from an ion came out as if the
   ion were not there.  40 atoms of charge +-1 and radius 1.5 in a 10 A
   cube about the origin (test_system_random, moved), TEST_SPREAD_NEAR
   points on a sphere of 8 A about the origin with their outward normals
   (among the atoms' corners), and three far away: 2e3 A along x, -3e6 A
   along y, 1e10 A along z. */
#define TEST_SPREAD_NEAR 24
#define TEST_SPREAD_POINTS (TEST_SPREAD_NEAR + 3)
static inline test_system test_spread_points(double points[3 * TEST_SPREAD_POINTS],
                                             double normals[3 * TEST_SPREAD_POINTS]) {
    static const double far[9] = {2e3, 0, 0, 0, -3e6, 0, 0, 0, 1e10};
    const double origin[3] = {0.0, 0.0, 0.0};
    test_system s = test_system_random(40, 10.0, 41);
    size_t i;
    int k;
    for (i = 0; i < s.count; i++) {
        for (k = 0; k < 3; k++) s.xyz[3 * i + k] -= 5.0;
        s.charge[i] = s.charge[i] < 0.0 ? -1.0 : 1.0;
        s.radius[i] = 1.5;
    }
    test_sphere_points(TEST_SPREAD_NEAR, origin, 8.0, points, normals);
    for (i = 0; i < 3; i++)
        for (k = 0; k < 3; k++) {
            points[3 * (TEST_SPREAD_NEAR + i) + k] = far[3 * i + k];
            normals[3 * (TEST_SPREAD_NEAR + i) + k] = far[3 * i + k] > 0.0   ? 1.0
                                                      : far[3 * i + k] < 0.0 ? -1.0
                                                                             : 0.0;
        }
    return s;
}

/* The largest error of float potentials against double ones at the
   points, each over what float rounding scales with at its point: its
   terms' sizes, scale sum_j |q_j| / d_j, plus |want|. */
static inline double test_spread_error(const test_system *s, const double *points, size_t n,
                                       const float *got, const double *want, double scale) {
    double worst = 0.0;
    size_t i, j;
    for (i = 0; i < n; i++) {
        double terms = 0.0, e;
        for (j = 0; j < s->count; j++) {
            const double dx = points[3 * i] - s->xyz[3 * j],
                         dy = points[3 * i + 1] - s->xyz[3 * j + 1],
                         dz = points[3 * i + 2] - s->xyz[3 * j + 2];
            terms += fabs(s->charge[j]) / sqrt(dx * dx + dy * dy + dz * dz);
        }
        e = fabs((double)got[i] - want[i]) / (fabs(scale) * terms + fabs(want[i]));
        if (e != e) return HUGE_VAL; /* NaN: the worst */
        if (e > worst) worst = e;
    }
    return worst;
}

/* Two ions of +-1e150 e (radii 1.9 and 2.5 A, 3 A apart) in a hierarchy,
   and two points 6 A above them with upward normals: charges every check
   passes, whose ALPB potentials pass float's range (tests/test_alpb.c,
   tests/test_gpu_alpb.cu).  The caller frees h where this returns
   ELEC_OK. */
static inline elec_status test_huge_ions(elec_hcp *h, double points[6], double normals[6],
                                         elec_error *err) {
    const double xyz[6] = {0, 0, 0, 3, 0, 0}, q[2] = {1e150, -1e150}, r[2] = {1.9, 2.5};
    const double p[6] = {0, 0, 6, 3, 0, 6}, n[6] = {0, 0, 1, 0, 0, 1};
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, r);
    memcpy(points, p, sizeof p);
    memcpy(normals, n, sizeof n);
    return elec_hcp_build(&atoms, NULL, NULL, NULL, h, err);
}

/* Two charges of 1e308 e, which every check passes (a double holds them, a
   float does not), each a quarter of an angstrom from a point of
   test_lattice_cube(6, 0.0, 1.0): (1.25, 1, 1) by point 43 = (1, 1, 1), the
   first whose double sum passes double's range (4e308 e/A), and (3, 3,
   2.25) by (3, 3, 2).  Their potentials pass float's range everywhere.
   The maps and the potentials at points must refuse them, naming the
   method (tests/test_dcs.c, test_cutoff.c, test_msm.c, test_slab.c,
   test_chargemap.c and the GPU tests). */
static inline elec_atoms test_huge_charges(void) {
    static const double xyz[6] = {1.25, 1.0, 1.0, 3.0, 3.0, 2.25};
    static const double q[2] = {1e308, 1e308};
    return elec_atoms_from_xyz(2, xyz, q, NULL);
}

/* Whether a call was refused as test_huge_charges must be: status
   ELEC_ERR_INVALID_ARG, the message opening with the method ("DCS map: ")
   and naming the type whose range the sums passed ("float"). */
static inline int test_refused_past_range(elec_status s, const elec_error *err,
                                          const char *method, const char *type) {
    char range[32];
    snprintf(range, sizeof range, "past %s's range", type);
    return s == ELEC_ERR_INVALID_ARG && strncmp(err->message, method, strlen(method)) == 0 &&
           strncmp(err->message + strlen(method), ": ", 2) == 0 &&
           strstr(err->message, range) != NULL;
}

/* The three pairs of each water molecule of test_system_water (O, H1, H2
   consecutive), flattened as the excluded pairs of Ewald and SPME take them;
   NULL when the allocation fails.  The caller frees. */
static inline size_t *test_water_exclusions(size_t molecules) {
    size_t *pairs = (size_t *)malloc((6 * molecules + 1) * sizeof *pairs), m;
    if (!pairs) return NULL;
    for (m = 0; m < molecules; m++) {
        size_t o = 3 * m;
        pairs[6 * m] = o;
        pairs[6 * m + 1] = o + 1;
        pairs[6 * m + 2] = o;
        pairs[6 * m + 3] = o + 2;
        pairs[6 * m + 4] = o + 1;
        pairs[6 * m + 5] = o + 2;
    }
    return pairs;
}

/* The first `crowded` molecules of water (test_system_water) moved
   whole, each one's oxygen to a point at random in a cube of `edge` A at
   the box's centre: atoms far denser there than at the mean, so that a
   neighbour list sized from the mean density outgrows its room (the GPU
   tests' whole-form cases). */
static inline void test_water_crowd(test_system *water, size_t crowded, double edge,
                                    unsigned long long seed) {
    test_rng rng = test_rng_seeded(seed);
    size_t m, k;
    int a;
    for (m = 0; m < crowded; m++) {
        double shift[3];
        for (a = 0; a < 3; a++)
            shift[a] = 0.5 * water->box[a] + edge * (test_uniform(&rng) - 0.5) -
                       water->xyz[9 * m + a];
        for (k = 3 * m; k < 3 * m + 3; k++)
            for (a = 0; a < 3; a++) water->xyz[3 * k + a] += shift[a];
    }
}

/* Every coordinate moved by a uniform amount in +-rms sqrt(3): rms A RMS
   per axis (a crystal at room temperature: 0.1 A). */
static inline void test_system_displace(test_system *s, double rms,
                                        unsigned long long seed) {
    test_rng rng = test_rng_seeded(seed);
    size_t i;
    for (i = 0; i < 3 * s->count; i++)
        s->xyz[i] += rms * sqrt(3.0) * (2.0 * test_uniform(&rng) - 1.0);
}

/* The force between two RMS charges at the mean spacing of s in box:
   F = <q^2> (n / V)^(2/3), the scale the error estimates floor the RMS
   force at (a hundredth of it) where the forces nearly vanish. */
static inline double test_pair_force(const test_system *s, const elec_box *box) {
    const double n = (double)s->count;
    double q2 = 0.0;
    size_t i;
    for (i = 0; i < s->count; i++) q2 += s->charge[i] * s->charge[i];
    return q2 / n * pow(n / (box->length[0] * box->length[1] * box->length[2]), 2.0 / 3.0);
}

/* The tolerance's measure where forces may nearly vanish: the RMS force
   error over the exact RMS force or, where that is smaller, a hundredth
   of test_pair_force (elec.h: what a relative error is measured
   against). */
static inline double test_floored_rel_rms(const double *got, const double *exact,
                                          const test_system *s, const elec_box *box) {
    const double floor_force = 0.01 * test_pair_force(s, box);
    double d2 = 0.0, f2 = 0.0;
    size_t i;
    for (i = 0; i < 3 * s->count; i++) {
        d2 += (got[i] - exact[i]) * (got[i] - exact[i]);
        f2 += exact[i] * exact[i];
    }
    f2 /= (double)s->count;
    return sqrt(d2 / (double)s->count / (f2 > floor_force * floor_force
                                             ? f2 : floor_force * floor_force));
}

/* Every coordinate of s rounded to float (positions as a GPU handle
   takes them, so that its truth is the exact sum at the same). */
static inline void test_system_round_to_float(test_system *s) {
    size_t i;
    for (i = 0; i < 3 * s->count; i++) s->xyz[i] = (double)(float)s->xyz[i];
}

/* The check that a method's forces are minus the gradient of its energy:
   the relative RMS over every coordinate of s of F + dE/dx, dE/dx by
   central differences of step h (error ~ h^2 |E'''| of a force).
   energy(user, &total) recomputes the total at s's current positions; a
   failure stops the check and returns -1 with the coordinate in *failed.
   Shared by test_ewald.c and test_spme.c. */
typedef elec_status (*test_energy_fn)(void *user, double *total);
static inline double test_forces_vs_gradient(test_system *s, const double *forces,
                                             double h, test_energy_fn energy,
                                             void *user, size_t *failed) {
    double num = 0.0, den = 0.0;
    size_t i;
    for (i = 0; i < 3 * s->count; i++) {
        double keep = s->xyz[i], up, down, grad;
        elec_status su, sd;
        s->xyz[i] = keep + h;
        su = energy(user, &up);
        s->xyz[i] = keep - h;
        sd = energy(user, &down);
        s->xyz[i] = keep;
        if (su != ELEC_OK || sd != ELEC_OK) {
            *failed = i;
            return -1.0;
        }
        grad = (up - down) / (2.0 * h);
        num += (forces[i] + grad) * (forces[i] + grad);
        den += forces[i] * forces[i];
    }
    return sqrt(num / den);
}

/* The systems the accuracy knob is held to (tests/test_tolerance.c and
   tests/test_gpu_spme.cu): 0 random neutral charges (1000, 24 A cube);
   1 random charges with a net charge (600, 21 A: +11.6 e); 2 SPC/E water
   with its exclusions (343 molecules); 3 rock salt (3^3 cells) with every
   ion displaced by 0.1 A RMS (at the perfect sites the exact forces
   vanish and a relative force error means nothing); 4 random neutral
   charges in a box of three different edges (1500, 31.7 x 27.3 x 35.9). */
typedef struct test_knob_system {
    const char *name;
    test_system s;
    size_t *pairs; /* excluded pairs (water), or NULL */
    size_t pair_count;
} test_knob_system;

static inline test_knob_system test_knob_system_make(int which) {
    test_knob_system c;
    memset(&c, 0, sizeof c);
    if (which == 0) {
        c.name = "random neutral";
        c.s = test_system_random(1000, 24.0, 31);
        test_system_make_neutral(&c.s);
    } else if (which == 1) {
        c.name = "random charged";
        c.s = test_system_random(600, 21.0, 32);
    } else if (which == 2) {
        c.name = "water";
        c.s = test_system_water(343, 33);
        c.pairs = test_water_exclusions(343);
        c.pair_count = c.pairs ? 3 * 343 : 0;
    } else if (which == 3) {
        c.name = "rock salt";
        c.s = test_system_nacl(3, 5.64);
        test_system_displace(&c.s, 0.1, 35);
    } else {
        const double edges[3] = {31.7, 27.3, 35.9};
        size_t i;
        c.name = "non-cubic";
        c.s = test_system_random(1500, 1.0, 36);
        for (i = 0; i < 3 * c.s.count; i++) c.s.xyz[i] *= edges[i % 3];
        memcpy(c.s.box, edges, sizeof edges);
        test_system_make_neutral(&c.s);
    }
    return c;
}

static inline void test_knob_system_free(test_knob_system *c) {
    free(c->pairs);
    test_system_free(&c->s);
}

/* Three systems whose non-periodic MSM forces its error table does not
   speak for (tests/test_tolerance.c and test_gpu_msm.cu check them): two
   ions 80 A apart, a line of 20 alternating ions 10 A apart (their forces
   nearly cancel), eight ions in a 60 A cube. */
typedef struct test_sparse_ions {
    const char *name;
    size_t n;
    double xyz[60], q[20];
} test_sparse_ions;
static inline void test_sparse_ion_cases(test_sparse_ions cases[3]) {
    test_rng rng = test_rng_seeded(61);
    size_t i;
    int k;
    memset(cases, 0, 3 * sizeof *cases);
    cases[0].name = "two ions 80 A apart";
    cases[0].n = 2;
    cases[0].xyz[3] = 48.0;
    cases[0].xyz[4] = 51.2;
    cases[0].xyz[5] = 38.4;
    cases[0].q[0] = 1.0;
    cases[0].q[1] = -1.0;
    cases[1].name = "a line of 20 ions";
    cases[1].n = 20;
    for (i = 0; i < 20; i++) {
        cases[1].xyz[3 * i] = 10.0 * (double)i + 0.5 * test_uniform(&rng);
        cases[1].xyz[3 * i + 1] = 0.5 * test_uniform(&rng);
        cases[1].xyz[3 * i + 2] = 0.5 * test_uniform(&rng);
        cases[1].q[i] = i % 2 ? 1.0 : -1.0;
    }
    cases[2].name = "8 ions in a 60 A cube";
    cases[2].n = 8;
    for (i = 0; i < 8; i++) {
        for (k = 0; k < 3; k++) cases[2].xyz[3 * i + k] = 60.0 * test_uniform(&rng);
        cases[2].q[i] = i % 2 ? 1.0 : -1.0;
    }
}

#endif /* ELEC_TEST_SYSTEMS_H */
