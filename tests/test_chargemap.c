/* Charge mapping on the CPU (elec_cpu_chargemap, seed 004): the double
   reference against what the bases must do by theory (total charge kept;
   Skeel's C1 family interpolates and reproduces the first and second
   moments; B-splines shift the charge by order/2 points with variance
   order/12; integer translations roll the grid; periodic images map
   alike), the float CPU ladder against the double reference per point,
   and refusals of what cannot be mapped. */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "tests/test.h"
#include "tests/systems.h"

#ifdef _OPENMP
#include <omp.h>
#endif

/* A float map against the double reference, point by point:
   |f - d| <= (m_g + c) 2^-24 A_g + m_g (2^-50 q_max + 2^-149), A_g = sum
   |q w w w| and m_g the terms at g.  Recursive summation in any order errs
   by at most (m_g - 1) u A_g; c covers the weights' and the three
   products' roundings (c ulps of each term) and, for the binned rung, the
   adds of its slabs' partial sums.  The absolute part: a weight near its
   basis piece's zero carries double's rounding of the piece, not of
   itself (the baseline rung evaluates each piece at u - g: up to 2 ulps
   of the charge for the nonic pieces, so four are allowed), and a term
   under float's least normal number keeps no relative precision (an
   audit: an atom 1e-13 from a point erred 9e5 times the relative bound
   alone, 4.9e-27 mapped as 0).  Returns the worst |f - d| / bound. */
static double worst_against_double(const char *what, const float *got, const double *want,
                                   const double *abs_sum, const int *terms, size_t points,
                                   double c, double largest_charge) {
    const double absolute = ldexp(largest_charge, -50) + ldexp(1.0, -149);
    double worst = 0.0;
    size_t g, at = 0;
    for (g = 0; g < points; g++) {
        double bound = (terms[g] + c) * ldexp(1.0, -24) * abs_sum[g] + terms[g] * absolute;
        double r = bound > 0.0 ? fabs((double)got[g] - want[g]) / bound
                               : (got[g] == 0.0f && want[g] == 0.0 ? 0.0 : HUGE_VAL);
        if (!(r <= worst)) {
            worst = r;
            at = g;
        }
    }
    EXPECT(worst <= 1.0, "%s: point %zu: %.9g vs %.17g (%.2f of the float bound, %d terms)",
           what, at, (double)got[at], want[at], worst, terms[at]);
    return worst;
}

/* Skeel's C1 cubic (seed 004, eqs. 2-3), written out here rather than
   taken from the kit: (1 - |t|)(1 + |t| - 3/2 t^2) within 1, -1/2 (|t| -
   1)(2 - |t|)^2 from 1 to 2. */
static double skeel_cubic(double t) {
    t = fabs(t);
    return t <= 1.0 ? (1.0 - t) * (1.0 + t - 1.5 * t * t)
           : t <= 2.0 ? -0.5 * (t - 1.0) * (2.0 - t) * (2.0 - t)
                      : 0.0;
}

/* worst_against_double's bound rests on the reference's abs_sum and terms;
   they are checked here on their own: every atom adds order^3 terms, and
   abs_sum sums to sum_a |q_a| prod_axis sum_k |phi(u - k)| (B-splines:
   non-negative weights summing to 1, so sum_a |q_a|; Skeel's cubic at
   order 4: its four weights' magnitudes, by skeel_cubic).  A reference
   that overstated abs_sum would widen every bound it feeds. */
static void check_bound_inputs(const char *what, const test_system *s, const elec_lattice *l,
                               const elec_chargemap_params *p, const double *abs_sum,
                               const int *terms, size_t points) {
    double want = 0.0, got = 0.0;
    long long want_terms = (long long)s->count * p->order * p->order * p->order, got_terms = 0;
    size_t g, i;
    int axis, k;
    for (g = 0; g < points; g++) {
        got += abs_sum[g];
        got_terms += terms[g];
    }
    for (i = 0; i < s->count; i++) {
        double magnitude = fabs(s->charge[i]);
        if (p->basis == ELEC_CHARGEMAP_SKEEL)
            for (axis = 0; axis < 3; axis++) {
                const double u = (s->xyz[3 * i + axis] - l->origin[axis]) / l->spacing[axis];
                const double first = floor(u) - 1.0;
                double sum = 0.0;
                for (k = 0; k < 4; k++) sum += fabs(skeel_cubic(u - (first + k)));
                magnitude *= sum;
            }
        want += magnitude;
    }
    EXPECT(p->basis != ELEC_CHARGEMAP_SKEEL || p->order == 4, "%s: skeel_cubic is order 4's",
           what);
    EXPECT(got_terms == want_terms, "%s: %lld terms, want %lld", what, got_terms, want_terms);
    EXPECT(fabs(got - want) <= 1e-12 * want, "%s: abs_sum totals %.17g, want %.17g", what, got,
           want);
}

static double total(const double *v, size_t n) {
    double s = 0.0;
    size_t i;
    for (i = 0; i < n; i++) s += v[i];
    return s;
}

TEST(params_resolve_fills_defaults_and_refuses_what_cannot_map) {
    elec_lattice l = test_lattice_cube(32, 0.0, 1.0);
    elec_chargemap_params p = {0}, r;
    elec_error err;
    EXPECT(elec_chargemap_params_resolve(&p, &l, 3277, &r, &err) == ELEC_OK, "%s", err.message);
    EXPECT(r.basis == ELEC_CHARGEMAP_SKEEL && r.order == 4, "default basis %d order %d",
           (int)r.basis, r.order);
    EXPECT(r.variant == ELEC_CHARGEMAP_PC_LANES, "default GPU rung %s",
           elec_chargemap_variant_name(r.variant));
    EXPECT(r.cpu_variant == ELEC_CHARGEMAP_CPU_BINNED, "default CPU rung %s",
           elec_chargemap_cpu_variant_name(r.cpu_variant));
    /* 0.1 atoms per cell: 0.1 + 4 sqrt(0.1) + 2 = 3.36, a power of two: 4 */
    EXPECT(r.bin_capacity == 4, "bin capacity %d at 0.1 atoms per cell", r.bin_capacity);
    p.bin_capacity = 3;
    EXPECT(elec_chargemap_params_resolve(&p, &l, 0, &r, &err) == ELEC_OK && r.bin_capacity == 4,
           "capacity 3 -> %d, not the next power of two", r.bin_capacity);
    p.bin_capacity = 17;
    EXPECT(elec_chargemap_params_resolve(&p, &l, 0, &r, &err) == ELEC_ERR_INVALID_ARG,
           "capacity 17 accepted");
    p.bin_capacity = 0;
    p.order = 5;
    EXPECT(elec_chargemap_params_resolve(&p, &l, 0, &r, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "Skeel"), "Skeel order 5: %s", err.message);
    p.basis = ELEC_CHARGEMAP_BSPLINE;
    EXPECT(elec_chargemap_params_resolve(&p, &l, 0, &r, &err) == ELEC_OK, "B-spline 5: %s",
           err.message);
    p.order = 9;
    EXPECT(elec_chargemap_params_resolve(&p, &l, 0, &r, &err) == ELEC_ERR_INVALID_ARG,
           "B-spline order 9 accepted");
    p.order = 8;
    l.dims[1] = 7;
    EXPECT(elec_chargemap_params_resolve(&p, &l, 0, &r, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "along y"), "7 points for order 8: %s", err.message);
    l.dims[1] = 32;
    p.tile[0] = p.tile[1] = p.tile[2] = 6;
    EXPECT(elec_chargemap_params_resolve(&p, &l, 0, &r, &err) == ELEC_ERR_INVALID_ARG,
           "a 6-point tile for order 8 accepted (a stencil would span 3 tiles)");
    p.tile[2] = 0;
    EXPECT(elec_chargemap_params_resolve(&p, &l, 0, &r, &err) == ELEC_ERR_INVALID_ARG,
           "a tile with one edge left out accepted");
    p.tile[0] = p.tile[1] = p.tile[2] = 0;
    p.variant = ELEC_CHARGEMAP_VARIANT_COUNT;
    EXPECT(elec_chargemap_params_resolve(&p, &l, 0, &r, &err) == ELEC_ERR_INVALID_ARG,
           "unknown variant accepted");
    p.variant = ELEC_CHARGEMAP_FASTEST;
    p.periodic = 2;
    EXPECT(elec_chargemap_params_resolve(&p, &l, 0, &r, &err) == ELEC_ERR_INVALID_ARG,
           "periodic = 2 accepted");
    EXPECT(strcmp(elec_chargemap_variant_name(ELEC_CHARGEMAP_GC_SHARED), "gc-shared") == 0,
           "name %s", elec_chargemap_variant_name(ELEC_CHARGEMAP_GC_SHARED));
}

/* The GPU rung the default stands for (elec__chargemap_fastest): at
   order 4 tile-binned for 65,536 to 2^22 atoms at no more than an atom a
   point (ApoA1-size on 112 x 112 x 80 and 56 x 56 x 40, 1M atoms on
   216^3), pc-lanes for fewer (DHFR-size's 23,558) or more atoms, or more
   than an atom a point; at orders 5 to 8 tile-binned from 16,384 atoms at
   one atom for 16 points to one a point (DHFR-size on 64^3), pc-lanes on
   sparser grids (DHFR-size on 84^3); at order 10 pc-lanes; a rung asked
   for is kept. */
TEST(the_default_gpu_rung_follows_the_size) {
    static const struct {
        int dims[3];
        size_t atoms;
        int basis, order;
        elec_chargemap_variant want;
    } cases[] = {
        {{112, 112, 80}, 92224, 0, 4, ELEC_CHARGEMAP_TILE_BINNED},
        {{112, 112, 80}, 92224, 1, 4, ELEC_CHARGEMAP_TILE_BINNED},
        {{216, 216, 216}, 1000000, 0, 4, ELEC_CHARGEMAP_TILE_BINNED},
        {{64, 64, 64}, 65536, 0, 4, ELEC_CHARGEMAP_TILE_BINNED},
        {{64, 64, 64}, 65535, 0, 4, ELEC_CHARGEMAP_PC_LANES},
        {{64, 64, 64}, 262144, 0, 4, ELEC_CHARGEMAP_TILE_BINNED},
        {{64, 64, 64}, 262145, 0, 4, ELEC_CHARGEMAP_PC_LANES},
        {{64, 64, 64}, 23558, 1, 4, ELEC_CHARGEMAP_PC_LANES},
        {{56, 56, 40}, 92224, 0, 4, ELEC_CHARGEMAP_TILE_BINNED},
        {{112, 112, 80}, 92224, 0, 6, ELEC_CHARGEMAP_TILE_BINNED},
        {{112, 112, 80}, 92224, 1, 8, ELEC_CHARGEMAP_TILE_BINNED},
        {{112, 112, 80}, 92224, 0, 10, ELEC_CHARGEMAP_PC_LANES},
        {{64, 64, 64}, 23558, 1, 5, ELEC_CHARGEMAP_TILE_BINNED},
        {{64, 64, 64}, 23558, 0, 8, ELEC_CHARGEMAP_TILE_BINNED},
        {{64, 64, 64}, 16384, 1, 6, ELEC_CHARGEMAP_TILE_BINNED},
        {{64, 64, 64}, 16383, 1, 6, ELEC_CHARGEMAP_PC_LANES},
        {{32, 32, 32}, 16383, 1, 6, ELEC_CHARGEMAP_PC_LANES},
        {{64, 64, 65}, 16384, 1, 6, ELEC_CHARGEMAP_PC_LANES},
        {{64, 64, 64}, 262144, 1, 6, ELEC_CHARGEMAP_TILE_BINNED},
        {{112, 112, 80}, 92224, 1, 7, ELEC_CHARGEMAP_TILE_BINNED},
        {{84, 84, 84}, 23558, 1, 6, ELEC_CHARGEMAP_PC_LANES},
        {{64, 64, 64}, 262145, 1, 6, ELEC_CHARGEMAP_PC_LANES},
        {{256, 256, 256}, 4194304, 0, 4, ELEC_CHARGEMAP_TILE_BINNED},
        {{256, 256, 256}, 4194305, 0, 4, ELEC_CHARGEMAP_PC_LANES},
        {{256, 256, 256}, 4194305, 1, 6, ELEC_CHARGEMAP_PC_LANES},
    };
    size_t c;
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        elec_lattice l = test_lattice_cube(8, 0.0, 1.0);
        elec_chargemap_params p = {0}, r;
        elec_error err;
        int axis;
        memset(&err, 0, sizeof err);
        memset(&r, 0, sizeof r);
        for (axis = 0; axis < 3; axis++) l.dims[axis] = cases[c].dims[axis];
        p.basis = (elec_chargemap_basis)cases[c].basis;
        p.order = cases[c].order;
        EXPECT(elec_chargemap_params_resolve(&p, &l, cases[c].atoms, &r, &err) == ELEC_OK &&
                   r.variant == cases[c].want,
               "%zu atoms on %d x %d x %d, order %d: %s, want %s (%s)", cases[c].atoms,
               l.dims[0], l.dims[1], l.dims[2], p.order, elec_chargemap_variant_name(r.variant),
               elec_chargemap_variant_name(cases[c].want), err.message);
        p.variant = ELEC_CHARGEMAP_PC_BASELINE;
        EXPECT(elec_chargemap_params_resolve(&p, &l, cases[c].atoms, &r, &err) == ELEC_OK &&
                   r.variant == ELEC_CHARGEMAP_PC_BASELINE,
               "pc-baseline asked, %s given", elec_chargemap_variant_name(r.variant));
    }
}

TEST(periodic_lattice_covers_the_box) {
    elec_box box = {{108.86, 108.86, 77.76}};
    int grid[3] = {112, 112, 80};
    elec_lattice l;
    elec_error err;
    EXPECT(elec_chargemap_periodic_lattice(&box, grid, 0.0, &l, &err) == ELEC_OK, "%s",
           err.message);
    EXPECT(l.dims[0] == 112 && l.dims[2] == 80 && fabs(l.spacing[2] * 80 - 77.76) < 1e-12 &&
               l.origin[0] == 0.0, "dims %d %d spacing %g", l.dims[0], l.dims[2], l.spacing[2]);
    EXPECT(elec_chargemap_periodic_lattice(&box, NULL, 1.0, &l, &err) == ELEC_OK &&
               l.dims[0] == 109 && l.dims[2] == 78, "from 1 A: %d %d", l.dims[0], l.dims[2]);
    /* a spacing past the edge: one point (it said "-0 grid points") */
    EXPECT(elec_chargemap_periodic_lattice(&box, NULL, 1e300, &l, &err) == ELEC_OK &&
               l.dims[0] == 1 && l.dims[2] == 1, "from 1e300 A: %d %d: %s", l.dims[0],
           l.dims[2], err.message);
    box.length[1] = -1.0;
    EXPECT(elec_chargemap_periodic_lattice(&box, NULL, 1.0, &l, &err) == ELEC_ERR_INVALID_ARG,
           "negative box accepted");
}

/* Total charge, both bases, periodic and not, neutral and not.  Double
   sums of N order^3 terms: 1e-12 of sum |q|. */
TEST(double_reference_keeps_the_total_charge) {
    static const int orders[2][4] = {{4, 6, 8, 10}, {4, 5, 6, 8}};
    test_system s = test_system_random(500, 20.0, 3);
    elec_atoms atoms = test_system_atoms(&s);
    elec_lattice map = test_lattice_cube(44, -6.5, 0.75), period = test_lattice_cube(25, 0.0, 0.8);
    size_t points = 44 * 44 * 44, i;
    double *grid = (double *)malloc(points * sizeof *grid), want = 0.0, abs_q = 0.0;
    elec_error err;
    int basis, k, periodic;
    for (i = 0; i < s.count; i++) {
        s.charge[i] = 0.1 + 0.9 * fabs(s.charge[i]); /* non-neutral: a large sum */
        want += s.charge[i];
        abs_q += fabs(s.charge[i]);
    }
    for (basis = 0; basis < 2; basis++)
        for (k = 0; k < 4; k++)
            for (periodic = 0; periodic < 2; periodic++) {
                elec_chargemap_params p = {0};
                const elec_lattice *l = periodic ? &period : &map;
                p.basis = (elec_chargemap_basis)basis;
                p.order = orders[basis][k];
                p.periodic = periodic;
                EXPECT(elec_cpu_chargemap_double(&atoms, l, &p, grid, NULL, NULL, &err) ==
                           ELEC_OK, "basis %d order %d: %s", basis, p.order, err.message);
                EXPECT(fabs(total(grid, elec_lattice_size(l)) - want) <= 1e-12 * abs_q,
                       "basis %d order %d periodic %d: total %.15g, want %.15g", basis,
                       p.order, periodic, total(grid, elec_lattice_size(l)), want);
            }
    free(grid);
    test_system_free(&s);
}

/* Moments sum_g rho(g) gx^a gy^b gz^c, a, b, c in {0, 1, 2}, on a map the
   stencils do not leave (so the point indices are not wrapped). */
static void moments(const double *grid, const elec_lattice *l, double m[3][3][3]) {
    int i, j, k, a, b, c;
    memset(m, 0, 27 * sizeof(double));
    for (k = 0; k < l->dims[2]; k++)
        for (j = 0; j < l->dims[1]; j++)
            for (i = 0; i < l->dims[0]; i++) {
                double v = grid[i + (size_t)l->dims[0] * (j + (size_t)l->dims[1] * k)];
                if (v == 0.0) continue;
                for (c = 0; c < 3; c++)
                    for (b = 0; b < 3; b++)
                        for (a = 0; a < 3; a++)
                            m[a][b][c] += v * pow(i, a) * pow(j, b) * pow(k, c);
            }
}

/* The 27 moments of a map against the point charges' (want), to 1e-10
   of the moments of |q| (scale): double sums of N order^3 terms. */
static void expect_moments(const char *basis, int order, double got[3][3][3],
                           double want[3][3][3], double scale[3][3][3]) {
    int a, b, c;
    for (c = 0; c < 3; c++)
        for (b = 0; b < 3; b++)
            for (a = 0; a < 3; a++)
                EXPECT(fabs(got[a][b][c] - want[a][b][c]) <= 1e-10 * scale[a][b][c],
                       "%s order %d moment x^%d y^%d z^%d: %.12g, want %.12g", basis, order, a,
                       b, c, got[a][b][c], want[a][b][c]);
}

/* Skeel's C1 family reproduces polynomials of degree order - 2 >= 2:
   sum_g Phi(u - g) g^d = u^d for d <= 2 along each axis, so the 27 mixed
   moments of the map are those of the point charges (in grid units).
   Double sums: 1e-10 of the moments of |q|. */
TEST(skeel_basis_keeps_first_and_second_moments) {
    test_system s = test_system_random(300, 14.0, 5);
    elec_atoms atoms = test_system_atoms(&s);
    elec_lattice l = test_lattice_cube(44, -4.5, 0.5); /* atoms 9 to 37 points in */
    double *grid = (double *)malloc(44 * 44 * 44 * sizeof *grid);
    int order;
    for (order = 4; order <= 10; order += 2) {
        elec_chargemap_params p = {0};
        elec_error err;
        double got[3][3][3], want[3][3][3], scale[3][3][3];
        int a, b, c;
        size_t i;
        p.order = order;
        EXPECT(elec_cpu_chargemap_double(&atoms, &l, &p, grid, NULL, NULL, &err) == ELEC_OK,
               "order %d: %s", order, err.message);
        moments(grid, &l, got);
        memset(want, 0, sizeof want);
        memset(scale, 0, sizeof scale);
        for (i = 0; i < s.count; i++) {
            double u[3];
            int axis;
            for (axis = 0; axis < 3; axis++) u[axis] = (s.xyz[3 * i + axis] + 4.5) / 0.5;
            for (c = 0; c < 3; c++)
                for (b = 0; b < 3; b++)
                    for (a = 0; a < 3; a++) {
                        double mono = pow(u[0], a) * pow(u[1], b) * pow(u[2], c);
                        want[a][b][c] += s.charge[i] * mono;
                        scale[a][b][c] += fabs(s.charge[i]) * mono;
                    }
        }
        expect_moments(p.basis == ELEC_CHARGEMAP_SKEEL ? "Skeel" : "B-spline", order, got,
                       want, scale);
    }
    free(grid);
    test_system_free(&s);
}

/* B-splines of order n (SPME's convention, point k0 - j gets M_n(t + j)):
   along an axis the weights have mean u - n/2 and variance n/12, so the
   moments factorise into E[g] = u - n/2, E[g^2] = (u - n/2)^2 + n/12. */
/* Deliberate pair (a scan for repeated blocks lists it): the Skeel moments test above
   for the other basis, side by side: tests read like specifications. */
TEST(bspline_basis_has_known_shift_and_variance) {
    test_system s = test_system_random(300, 14.0, 6);
    elec_atoms atoms = test_system_atoms(&s);
    elec_lattice l = test_lattice_cube(40, -4.0, 0.5);
    double *grid = (double *)malloc(40 * 40 * 40 * sizeof *grid);
    int order;
    for (order = 4; order <= 8; order++) {
        elec_chargemap_params p = {0};
        elec_error err;
        double got[3][3][3], want[3][3][3], scale[3][3][3];
        int a, b, c;
        size_t i;
        p.basis = ELEC_CHARGEMAP_BSPLINE;
        p.order = order;
        EXPECT(elec_cpu_chargemap_double(&atoms, &l, &p, grid, NULL, NULL, &err) == ELEC_OK,
               "order %d: %s", order, err.message);
        moments(grid, &l, got);
        memset(want, 0, sizeof want);
        memset(scale, 0, sizeof scale);
        for (i = 0; i < s.count; i++) {
            double e[3][3];
            int axis;
            for (axis = 0; axis < 3; axis++) {
                double mean = (s.xyz[3 * i + axis] + 4.0) / 0.5 - 0.5 * order;
                e[axis][0] = 1.0;
                e[axis][1] = mean;
                e[axis][2] = mean * mean + order / 12.0;
            }
            for (c = 0; c < 3; c++)
                for (b = 0; b < 3; b++)
                    for (a = 0; a < 3; a++) {
                        want[a][b][c] += s.charge[i] * e[0][a] * e[1][b] * e[2][c];
                        /* grid indices are below 40 */
                        scale[a][b][c] += fabs(s.charge[i]) * pow(40.0, a + b + c);
                    }
        }
        expect_moments(p.basis == ELEC_CHARGEMAP_SKEEL ? "Skeel" : "B-spline", order, got,
                       want, scale);
    }
    free(grid);
    test_system_free(&s);
}

/* An atom exactly on a point: Skeel's basis is interpolating (Phi(0) = 1,
   0 at the other integers), so the whole charge lands on that point; a
   B-spline of order 4 puts 1/6, 2/3, 1/6 on the points 1, 2, 3 below. */
TEST(atom_on_a_point_puts_its_whole_charge_there) {
    double xyz[3] = {5.0, 6.0, 7.0}, q = -0.75;
    elec_atoms atoms = elec_atoms_from_xyz(1, xyz, &q, NULL);
    elec_lattice l = test_lattice_cube(16, 0.0, 1.0);
    size_t points = 16 * 16 * 16, g, at = 5 + 16 * (6 + 16 * 7);
    double *grid = (double *)malloc(points * sizeof *grid);
    elec_error err;
    int order;
    for (order = 4; order <= 10; order += 2) {
        elec_chargemap_params p = {0};
        p.order = order;
        EXPECT(elec_cpu_chargemap_double(&atoms, &l, &p, grid, NULL, NULL, &err) == ELEC_OK,
               "%s", err.message);
        for (g = 0; g < points; g++)
            EXPECT(grid[g] == (g == at ? q : 0.0), "order %d: point %zu holds %.17g", order, g,
                   grid[g]);
    }
    {
        elec_chargemap_params p = {0};
        const double want[3] = {1.0 / 6.0, 2.0 / 3.0, 1.0 / 6.0};
        int k;
        p.basis = ELEC_CHARGEMAP_BSPLINE;
        EXPECT(elec_cpu_chargemap_double(&atoms, &l, &p, grid, NULL, NULL, &err) == ELEC_OK,
               "%s", err.message);
        for (k = 1; k <= 3; k++) {
            /* along x only: y and z give 2/3 at points 5, 6 below their k0 - 1 */
            double got = grid[(5 - k) + 16 * ((6 - 2) + 16 * (7 - 2))];
            double expect = q * want[k - 1] * (2.0 / 3.0) * (2.0 / 3.0);
            EXPECT(fabs(got - expect) <= 1e-15, "B-spline 4, point k0 - %d: %.17g, want %.17g",
                   k, got, expect);
        }
        EXPECT(grid[5 + 16 * (4 + 16 * 5)] == 0.0, "B-spline 4 gives M_4(0) = 0 to the atom's "
               "own point: %.17g", grid[5 + 16 * (4 + 16 * 5)]);
    }
    free(grid);
}

/* A map: an atom whose stencil leaves it is refused, by index and axis;
   on a periodic grid the same atom wraps. */
TEST(atoms_outside_a_map_are_refused_and_a_period_wraps_them) {
    double xyz[6] = {5.0, 5.0, 5.0, 5.0, 0.4, 5.0}, q[2] = {1.0, -1.0};
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL);
    elec_lattice l = test_lattice_cube(12, 0.0, 1.0);
    double *grid = (double *)malloc(12 * 12 * 12 * sizeof *grid);
    float *f = (float *)malloc(12 * 12 * 12 * sizeof *f);
    elec_chargemap_params p = {0};
    elec_error err;
    int v;
    EXPECT(elec_cpu_chargemap_double(&atoms, &l, &p, grid, NULL, NULL, &err) ==
               ELEC_ERR_INVALID_ARG && strstr(err.message, "atom 1") &&
               strstr(err.message, "along y"), "refusal: %s", err.message);
    for (v = 1; v < ELEC_CHARGEMAP_CPU_VARIANT_COUNT; v++) {
        p.cpu_variant = (elec_chargemap_cpu_variant)v;
        EXPECT(elec_cpu_chargemap(&atoms, &l, &p, f, &err) == ELEC_ERR_INVALID_ARG,
               "%s accepted an atom outside", elec_chargemap_cpu_variant_name(p.cpu_variant));
    }
    p.periodic = 1;
    EXPECT(elec_cpu_chargemap_double(&atoms, &l, &p, grid, NULL, NULL, &err) == ELEC_OK,
           "periodic: %s", err.message);
    EXPECT(fabs(total(grid, 12 * 12 * 12)) <= 1e-15, "periodic total %g", total(grid, 1728));
    /* Skeel: the atom at y = 0.4 reaches y = -1 -> 11 */
    EXPECT(grid[5 + 12 * (11 + 12 * 5)] != 0.0, "nothing wrapped to y = 11");
    free(grid);
    free(f);
}

/* A periodic grid sees an atom and its images alike: atoms moved by whole
   periods (positive, negative, many), and one just below L (whose grid
   coordinate wraps to point 0).  The positions differ in their rounding
   after the shift: 1e-12 of sum |q|. */
TEST(periodic_images_map_alike) {
    test_system s = test_system_random(200, 18.0, 9), t;
    elec_atoms a, b;
    elec_lattice l = test_lattice_cube(24, 0.0, 0.75); /* period 18 */
    size_t points = 24 * 24 * 24, i;
    double *g1 = (double *)malloc(points * sizeof *g1), *g2 = (double *)malloc(points * sizeof *g2);
    double worst = 0.0, abs_q = 0.0;
    elec_chargemap_params p = {0};
    elec_error err;
    int basis;
    t = test_system_random(200, 18.0, 9);
    s.xyz[0] = 18.0 - 1e-13; /* just below L */
    t.xyz[0] = -1e-13;
    for (i = 1; i < s.count; i++) {
        int axis;
        for (axis = 0; axis < 3; axis++)
            t.xyz[3 * i + axis] = s.xyz[3 * i + axis] + 18.0 * (double)((int)(i % 7) - 3);
    }
    for (i = 0; i < s.count; i++) abs_q += fabs(s.charge[i]);
    a = test_system_atoms(&s);
    b = test_system_atoms(&t);
    p.periodic = 1;
    for (basis = 0; basis < 2; basis++) {
        p.basis = (elec_chargemap_basis)basis;
        EXPECT(elec_cpu_chargemap_double(&a, &l, &p, g1, NULL, NULL, &err) == ELEC_OK, "%s",
               err.message);
        EXPECT(elec_cpu_chargemap_double(&b, &l, &p, g2, NULL, NULL, &err) == ELEC_OK, "%s",
               err.message);
        for (i = 0; i < points; i++)
            if (fabs(g1[i] - g2[i]) > worst) worst = fabs(g1[i] - g2[i]);
        EXPECT(worst <= 1e-12 * abs_q, "basis %d: images differ by %.3e", basis, worst);
    }
    free(g1);
    free(g2);
    test_system_free(&s);
    test_system_free(&t);
}

/* A periodic lattice of unequal spacings (0.5, 0.7, 0.9 A) maps atoms
   well inside its period as the map of the same lattice does (both
   bases, in double): the periodic gather once divided every axis by
   the first spacing, and only a comparison with its own double reference
   covered it. */
TEST(a_periodic_grid_of_unequal_spacings_maps_as_a_map_does) {
    const double spacing[3] = {0.5, 0.7, 0.9};
    elec_lattice l;
    test_system s = test_system_random(150, 1.0, 12);
    elec_atoms a = test_system_atoms(&s);
    size_t points, i;
    double *periodic, *map, worst = 0.0, abs_q = 0.0;
    elec_chargemap_params p = {0};
    elec_error err;
    int axis, basis;
    for (axis = 0; axis < 3; axis++) {
        l.dims[axis] = 20 + 4 * axis;
        l.spacing[axis] = spacing[axis];
        l.origin[axis] = -1.0 - axis;
    }
    for (i = 0; i < s.count; i++) /* inside, at least 5 points from each face */
        for (axis = 0; axis < 3; axis++)
            s.xyz[3 * i + axis] = l.origin[axis] + l.spacing[axis] *
                                  (5.0 + (l.dims[axis] - 10) * s.xyz[3 * i + axis]);
    for (i = 0; i < s.count; i++) abs_q += fabs(s.charge[i]);
    points = elec_lattice_size(&l);
    periodic = (double *)malloc(points * sizeof *periodic);
    map = (double *)malloc(points * sizeof *map);
    for (basis = 0; basis < 2; basis++) {
        p.basis = (elec_chargemap_basis)basis;
        p.periodic = 1;
        EXPECT(elec_cpu_chargemap_double(&a, &l, &p, periodic, NULL, NULL, &err) == ELEC_OK,
               "%s", err.message);
        p.periodic = 0;
        EXPECT(elec_cpu_chargemap_double(&a, &l, &p, map, NULL, NULL, &err) == ELEC_OK, "%s",
               err.message);
        for (i = 0; i < points; i++)
            if (fabs(periodic[i] - map[i]) > worst) worst = fabs(periodic[i] - map[i]);
        EXPECT(worst <= 1e-12 * abs_q, "basis %d: the periodic grid differs by %.3e", basis,
               worst);
    }
    free(periodic);
    free(map);
    test_system_free(&s);
}

/* A periodic lattice's period is [origin, origin + L): an origin a whole
   number of periods from 0 maps alike (atoms wrapped about 0 first then
   lost their place to the origin's rounding: 0.89 e apart at 1e17 A), atoms
   near an origin of 1e6 A map as near 0 (once refused as 125,000 box
   lengths away), and atoms 1.25e16 periods from the lattice are refused by
   name. */
TEST(a_periodic_lattice_wraps_about_its_origin) {
    test_system s = test_system_random(50, 8.0, 21), t = test_system_random(50, 8.0, 21);
    elec_atoms a = test_system_atoms(&s), b = test_system_atoms(&t);
    elec_lattice l = test_lattice_cube(8, 0.0, 1.0), moved = l; /* period 8 */
    double g0[512], g1[512], worst = 0.0;
    elec_chargemap_params p = {0};
    elec_error err;
    size_t i;
    p.periodic = 1;
    EXPECT(elec_cpu_chargemap_double(&a, &l, &p, g0, NULL, NULL, &err) == ELEC_OK, "%s",
           err.message);
    moved.origin[0] = 800.0; /* 100 periods */
    EXPECT(elec_cpu_chargemap_double(&a, &moved, &p, g1, NULL, NULL, &err) == ELEC_OK, "%s",
           err.message);
    for (i = 0; i < 512; i++) worst = fmax(worst, fabs(g1[i] - g0[i]));
    EXPECT(worst <= 1e-12, "origin 800 A: %.3e apart", worst);
    moved.origin[0] = moved.origin[1] = moved.origin[2] = 1e6;
    for (i = 0; i < 3 * t.count; i++) t.xyz[i] += 1e6;
    EXPECT(elec_cpu_chargemap_double(&b, &moved, &p, g1, NULL, NULL, &err) == ELEC_OK, "%s",
           err.message);
    for (worst = 0.0, i = 0; i < 512; i++) worst = fmax(worst, fabs(g1[i] - g0[i]));
    EXPECT(worst <= 1e-8, "atoms and origin at 1e6 A: %.3e apart", worst); /* 1e6 x 1e-16 */
    moved.origin[0] = 1e17;
    EXPECT(elec_cpu_chargemap_double(&a, &moved, &p, g1, NULL, NULL, &err) ==
                   ELEC_ERR_INVALID_ARG && strstr(err.message, "box lengths outside"),
           "origin 1e17 A: %s", err.message);
    test_system_free(&s);
    test_system_free(&t);
}

/* With a spacing of exactly 1 A, moving every atom by whole cells rolls
   the periodic grid by as many points. */
TEST(translation_by_whole_cells_rolls_the_grid) {
    test_system s = test_system_random(300, 16.0, 11);
    elec_atoms atoms;
    elec_lattice l = test_lattice_cube(16, 0.0, 1.0);
    size_t points = 16 * 16 * 16, i;
    double *g1 = (double *)malloc(points * sizeof *g1), *g2 = (double *)malloc(points * sizeof *g2);
    double worst = 0.0;
    const int shift[3] = {3, -5, 7};
    elec_chargemap_params p = {0};
    elec_error err;
    int x, y, z;
    p.periodic = 1;
    atoms = test_system_atoms(&s);
    EXPECT(elec_cpu_chargemap_double(&atoms, &l, &p, g1, NULL, NULL, &err) == ELEC_OK, "%s",
           err.message);
    for (i = 0; i < s.count; i++) {
        int axis;
        for (axis = 0; axis < 3; axis++) s.xyz[3 * i + axis] += shift[axis];
    }
    EXPECT(elec_cpu_chargemap_double(&atoms, &l, &p, g2, NULL, NULL, &err) == ELEC_OK, "%s",
           err.message);
    for (z = 0; z < 16; z++)
        for (y = 0; y < 16; y++)
            for (x = 0; x < 16; x++) {
                size_t from = (size_t)x + 16 * (y + 16 * z);
                size_t to = (size_t)((x + shift[0] + 16) % 16) +
                            16 * ((size_t)((y + shift[1] + 16) % 16) +
                                  16 * (size_t)((z + shift[2] + 16) % 16));
                if (fabs(g1[from] - g2[to]) > worst) worst = fabs(g1[from] - g2[to]);
            }
    /* positions after the shift round differently: ~1e-15 A, weights 1e-14 */
    EXPECT(worst <= 1e-12, "rolled grids differ by %.3e", worst);
    free(g1);
    free(g2);
    test_system_free(&s);
}

/* Every CPU rung, both bases, periodic and not, on random atoms, a water
   box and a rock-salt crystal whose ions sit exactly on grid points,
   against the double reference point by point. */
TEST(cpu_ladder_matches_the_double_reference) {
    test_system systems[3];
    const char *names[3] = {"random", "water", "NaCl on points"};
    int k, threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    systems[0] = test_system_random(2000, 24.0, 13);
    systems[1] = test_system_water(700, 14);
    systems[2] = test_system_nacl(3, 5.64);
    for (k = 0; k < 3; k++) {
        elec_atoms atoms = test_system_atoms(&systems[k]);
        int basis, periodic, v;
        for (basis = 0; basis < 2; basis++)
            for (periodic = 0; periodic < 2; periodic++) {
                elec_chargemap_params p = {0};
                elec_lattice l;
                size_t points;
                double *want, *abs_sum;
                int *terms;
                float *got;
                elec_error err;
                int axis;
                p.basis = (elec_chargemap_basis)basis;
                p.order = basis ? 6 : 4;
                p.periodic = periodic;
                for (axis = 0; axis < 3; axis++) {
                    /* periodic: the box, at a/2 for the crystal (ions on
                       points) and an odd count otherwise; a map: padded */
                    double box = systems[k].box[axis];
                    l.dims[axis] = k == 2 ? 6 * 2 : 27 + axis;
                    if (periodic) {
                        l.spacing[axis] = box / l.dims[axis];
                        l.origin[axis] = 0.0;
                    } else {
                        /* water's hydrogens stick out of the box by ~1.3 A */
                        l.dims[axis] += 16;
                        l.spacing[axis] = (box + 12.0) / l.dims[axis];
                        l.origin[axis] = -6.0 - 0.37 * l.spacing[axis];
                    }
                }
                if (k == 2 && periodic)
                    for (axis = 0; axis < 3; axis++) l.dims[axis] = 6, l.spacing[axis] = 2.82;
                points = elec_lattice_size(&l);
                want = (double *)malloc(points * sizeof *want);
                abs_sum = (double *)malloc(points * sizeof *abs_sum);
                terms = (int *)malloc(points * sizeof *terms);
                got = (float *)malloc(points * sizeof *got);
                EXPECT(elec_cpu_chargemap_double(&atoms, &l, &p, want, abs_sum, terms, &err) ==
                           ELEC_OK, "%s: %s", names[k], err.message);
                check_bound_inputs(names[k], &systems[k], &l, &p, abs_sum, terms, points);
                for (v = 1; v < ELEC_CHARGEMAP_CPU_VARIANT_COUNT; v++) {
                    char what[160];
                    p.cpu_variant = (elec_chargemap_cpu_variant)v;
                    snprintf(what, sizeof what, "%s, %s order %d, %s, %s", names[k],
                             basis ? "B-spline" : "Skeel", p.order,
                             periodic ? "periodic" : "map",
                             elec_chargemap_cpu_variant_name(p.cpu_variant));
                    EXPECT(elec_cpu_chargemap(&atoms, &l, &p, got, &err) == ELEC_OK, "%s: %s",
                           what, err.message);
                    worst_against_double(what, got, want, abs_sum, terms, points,
                                         (p.order * 2 > 8 ? p.order * 2 : 8) + threads,
                                         elec__largest_charge(systems[k].charge, systems[k].count));
                }
                free(want);
                free(abs_sum);
                free(terms);
                free(got);
            }
        test_system_free(&systems[k]);
    }
}

/* A grid long along z, periodic and not: the binned rung's slabs land on
   their planes as the reference's (each slab plane found from its grid
   plane; an audit found the reduction testing every slab plane at every
   grid plane, quadratic in the planes: 8 x 8 x 65536 points took 5.9 s
   against the precomputed rung's 0.017). */
TEST(a_long_grid_maps_within_the_float_bound) {
    const int planes = 6000;
    test_system s = test_system_random(600, 8.0, 23);
    elec_atoms atoms;
    int periodic, threads = 1;
    size_t i;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    for (i = 0; i < s.count; i++) s.xyz[3 * i + 2] *= planes / 8.0; /* along the line */
    atoms = test_system_atoms(&s);
    for (periodic = 0; periodic < 2; periodic++) {
        /* periodic: 8 x 8 x planes; a map: room for every stencil */
        const elec_lattice l = periodic ? (elec_lattice){{8, 8, planes}, {0.0, 0.0, 0.0},
                                                         {1.0, 1.0, 1.0}}
                                        : (elec_lattice){{12, 12, planes + 4},
                                                         {-2.0, -2.0, -2.0}, {1.0, 1.0, 1.0}};
        elec_chargemap_params p = {0};
        const size_t points = elec_lattice_size(&l);
        double *want = (double *)malloc(points * sizeof *want);
        double *abs_sum = (double *)malloc(points * sizeof *abs_sum);
        int *terms = (int *)malloc(points * sizeof *terms);
        float *got = (float *)malloc(points * sizeof *got);
        elec_error err;
        p.periodic = periodic;
        p.cpu_variant = ELEC_CHARGEMAP_CPU_BINNED;
        EXPECT(elec_cpu_chargemap_double(&atoms, &l, &p, want, abs_sum, terms, &err) == ELEC_OK,
               "%s", err.message);
        EXPECT(elec_cpu_chargemap(&atoms, &l, &p, got, &err) == ELEC_OK, "%s", err.message);
        worst_against_double(periodic ? "8 x 8 x 6000, periodic" : "12 x 12 x 6004, a map", got,
                             want, abs_sum, terms, points, 8 + threads,
                             elec__largest_charge(s.charge, s.count));
        free(want);
        free(abs_sum);
        free(terms);
        free(got);
    }
    test_system_free(&s);
}

/* The atoms' order changes the float sums' rounding only: a shuffled
   system stays within the float bound of the same double reference. */
TEST(shuffled_atoms_map_alike) {
    test_system s = test_system_random(1500, 20.0, 17);
    elec_atoms atoms = test_system_atoms(&s);
    elec_lattice l = test_lattice_cube(25, 0.0, 0.8);
    size_t points = 25 * 25 * 25, i;
    double *want = (double *)malloc(points * sizeof *want);
    double *again = (double *)malloc(points * sizeof *again);
    double *abs_sum = (double *)malloc(points * sizeof *abs_sum), worst = 0.0;
    int *terms = (int *)malloc(points * sizeof *terms);
    float *got = (float *)malloc(points * sizeof *got);
    elec_chargemap_params p = {0};
    elec_error err;
    test_rng rng = test_rng_seeded(99);
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    p.periodic = 1;
    EXPECT(elec_cpu_chargemap_double(&atoms, &l, &p, want, abs_sum, terms, &err) == ELEC_OK,
           "%s", err.message);
    for (i = s.count - 1; i > 0; i--) { /* Fisher-Yates */
        size_t j = (size_t)(test_uniform(&rng) * (double)(i + 1)), axis;
        double t;
        for (axis = 0; axis < 3; axis++) {
            t = s.xyz[3 * i + axis];
            s.xyz[3 * i + axis] = s.xyz[3 * j + axis];
            s.xyz[3 * j + axis] = t;
        }
        t = s.charge[i];
        s.charge[i] = s.charge[j];
        s.charge[j] = t;
    }
    EXPECT(elec_cpu_chargemap_double(&atoms, &l, &p, again, NULL, NULL, &err) == ELEC_OK, "%s",
           err.message);
    for (i = 0; i < points; i++)
        if (fabs(again[i] - want[i]) > worst) worst = fabs(again[i] - want[i]);
    EXPECT(worst <= 1e-13, "double reference moved by %.3e under shuffling", worst);
    EXPECT(elec_cpu_chargemap(&atoms, &l, &p, got, &err) == ELEC_OK, "%s", err.message);
    worst_against_double("shuffled, binned", got, want, abs_sum, terms, points, 8 + threads,
                         elec__largest_charge(s.charge, s.count));
    free(want);
    free(again);
    free(abs_sum);
    free(terms);
    free(got);
    test_system_free(&s);
}

/* Charges past a grid's range: 1e308 e (test_huge_charges) is inf in
   float, for every rung; two of them on one point give it 2e308 in
   double, and two of opposite sign 2e308 in abs_sum.  Each call fails,
   naming the charge map and the point, where it once returned ELEC_OK and
   a grid of inf. */
TEST(charges_past_the_grids_range_are_refused) {
    double xyz[6] = {3.0, 3.0, 3.0, 3.0, 3.0, 3.0}, q[2] = {1e308, 1e308};
    elec_atoms huge = test_huge_charges(), pair = elec_atoms_from_xyz(2, xyz, q, NULL);
    elec_lattice l = test_lattice_cube(6, 0.0, 1.0), l8 = test_lattice_cube(8, 0.0, 1.0);
    float got[216];
    double want[512], abs_sum[512];
    elec_chargemap_params p = {0};
    elec_error err;
    elec_status s;
    int v;
    for (v = 0; v < ELEC_CHARGEMAP_CPU_VARIANT_COUNT; v++) {
        p.cpu_variant = (elec_chargemap_cpu_variant)v;
        s = elec_cpu_chargemap(&huge, &l, &p, got, &err);
        EXPECT(test_refused_past_range(s, &err, "charge map", "float"), "%s: status %d, %s",
               elec_chargemap_cpu_variant_name(p.cpu_variant), (int)s, err.message);
    }
    /* Skeel's basis puts each whole charge on the point (3, 3, 3) */
    s = elec_cpu_chargemap_double(&pair, &l8, &p, want, NULL, NULL, &err);
    EXPECT(test_refused_past_range(s, &err, "charge map", "double") &&
               strstr(err.message, "point 219 came out inf"),
           "double: status %d, %s", (int)s, err.message);
    /* +-1e308 e: the charges cancel, their sum of |q w w w| does not */
    q[1] = -1e308;
    s = elec_cpu_chargemap_double(&pair, &l8, &p, want, NULL, NULL, &err);
    EXPECT(s == ELEC_OK && want[219] == 0.0, "opposite charges: status %d, %s", (int)s,
           err.message);
    s = elec_cpu_chargemap_double(&pair, &l8, &p, want, abs_sum, NULL, &err);
    EXPECT(test_refused_past_range(s, &err, "charge map", "double") &&
               strstr(err.message, "abs_sum at point 219"),
           "abs_sum: status %d, %s", (int)s, err.message);
}

/* An atom 1e-13 A from a grid point (on every axis), and 7.33e-13 and
   1.7e-14 A along x alone: weights near a basis piece's zero and terms
   under float's least normal number, on every rung of the CPU ladder,
   both bases, Skeel's order 4 and 10 and B-splines of order 8, within the
   bound's absolute part (the relative part alone: 9e5 times over, an
   audit; the baseline rung's nonic piece at 7.33e-13 erred 1.92 times an
   absolute part of one ulp of the charge, another audit: it is four). */
TEST(an_atom_beside_a_point_maps_within_the_float_bound) {
    static const double near[3][3] = {
        {1e-13, 1e-13, 1e-13}, {7.33043e-13, 0.0, 0.0}, {1.7e-14, 0.0, 0.0}};
    const double q = 1.0;
    const elec_lattice l = test_lattice_cube(16, 0.0, 1.0);
    const size_t points = elec_lattice_size(&l);
    static const int basis[3] = {ELEC_CHARGEMAP_SKEEL, ELEC_CHARGEMAP_SKEEL,
                                 ELEC_CHARGEMAP_BSPLINE};
    static const int order[3] = {4, 10, 8};
    double *want = (double *)malloc(points * sizeof *want);
    double *abs_sum = (double *)malloc(points * sizeof *abs_sum);
    int *terms = (int *)malloc(points * sizeof *terms), k, v;
    float *got = (float *)malloc(points * sizeof *got);
    elec_error err;
    if (!want || !abs_sum || !terms || !got) {
        EXPECT(0, "no memory");
        k = 9;
    } else {
        k = 0;
    }
    for (; k < 9; k++) {
        const double xyz[3] = {8.0 + near[k / 3][0], 8.0 + near[k / 3][1], 8.0 + near[k / 3][2]};
        const elec_atoms atoms = elec_atoms_from_xyz(1, xyz, &q, NULL);
        elec_chargemap_params p = {0};
        p.basis = (elec_chargemap_basis)basis[k % 3];
        p.order = order[k % 3];
        EXPECT(elec_cpu_chargemap_double(&atoms, &l, &p, want, abs_sum, terms, &err) == ELEC_OK,
               "%s", err.message);
        for (v = 1; v < ELEC_CHARGEMAP_CPU_VARIANT_COUNT; v++) {
            char what[96];
            p.cpu_variant = (elec_chargemap_cpu_variant)v;
            snprintf(what, sizeof what, "%s order %d, %s, %g A off", k % 3 < 2 ? "Skeel" : "B-spline",
                     order[k % 3], elec_chargemap_cpu_variant_name(p.cpu_variant),
                     near[k / 3][0]);
            EXPECT(elec_cpu_chargemap(&atoms, &l, &p, got, &err) == ELEC_OK, "%s: %s", what,
                   err.message);
            worst_against_double(what, got, want, abs_sum, terms, points,
                                 2.0 * order[k % 3] + 1.0, 1.0);
        }
    }
    free(want);
    free(abs_sum);
    free(terms);
    free(got);
}

/* No atoms: a zero grid (and the float paths overwrite what was there). */
TEST(no_atoms_give_a_zero_grid) {
    elec_atoms atoms = elec_atoms_from_xyz(0, NULL, NULL, NULL);
    elec_lattice l = test_lattice_cube(8, 0.0, 1.0);
    float got[512];
    double want[512];
    elec_chargemap_params p = {0};
    elec_error err;
    int v, g, bad = 0;
    EXPECT(elec_cpu_chargemap_double(&atoms, &l, &p, want, NULL, NULL, &err) == ELEC_OK, "%s",
           err.message);
    for (v = 1; v < ELEC_CHARGEMAP_CPU_VARIANT_COUNT; v++) {
        for (g = 0; g < 512; g++) got[g] = 1.0f;
        p.cpu_variant = (elec_chargemap_cpu_variant)v;
        EXPECT(elec_cpu_chargemap(&atoms, &l, &p, got, &err) == ELEC_OK, "%s", err.message);
        for (g = 0; g < 512; g++) bad += got[g] != 0.0f || want[g] != 0.0;
    }
    EXPECT(bad == 0, "%d nonzero points", bad);
    EXPECT(elec_cpu_chargemap(&atoms, &l, &p, NULL, &err) == ELEC_ERR_INVALID_ARG,
           "NULL grid accepted");
}

int main(void) {
    RUN(params_resolve_fills_defaults_and_refuses_what_cannot_map);
    RUN(the_default_gpu_rung_follows_the_size);
    RUN(periodic_lattice_covers_the_box);
    RUN(double_reference_keeps_the_total_charge);
    RUN(skeel_basis_keeps_first_and_second_moments);
    RUN(bspline_basis_has_known_shift_and_variance);
    RUN(atom_on_a_point_puts_its_whole_charge_there);
    RUN(atoms_outside_a_map_are_refused_and_a_period_wraps_them);
    RUN(periodic_images_map_alike);
    RUN(a_periodic_grid_of_unequal_spacings_maps_as_a_map_does);
    RUN(a_periodic_lattice_wraps_about_its_origin);
    RUN(translation_by_whole_cells_rolls_the_grid);
    RUN(cpu_ladder_matches_the_double_reference);
    RUN(a_long_grid_maps_within_the_float_bound);
    RUN(shuffled_atoms_map_alike);
    RUN(an_atom_beside_a_point_maps_within_the_float_bound);
    RUN(no_atoms_give_a_zero_grid);
    RUN(charges_past_the_grids_range_are_refused);
    return test_summary();
}
