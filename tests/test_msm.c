/* Multilevel summation on the CPU: its building blocks (the interpolating
   bases, the softened 1/r), then maps, energies and forces against the
   exact direct sums, at VMD msmpot's defaults and at higher order; and
   periodic MSM against the exact Ewald sum and Madelung constants. */
#define ELEC_ALL_IMPLEMENTATION
#include <limits.h>

#include "elec.h"
#include "elec_cpu.h"
#include "tests/test.h"
#include "tests/systems.h"

/* msmpot's own accuracy target at its defaults (h = 2 A, a = 12 A, C1
   cubic, C2 splitting): 0.5 % relative RMS error in the map. */
#define MSMPOT_TARGET 5e-3

/* MSM map error (relative RMS against the double-precision direct sum). */
static double map_error(const test_system *s, const elec_lattice *l,
                        const elec_msm_params *p) {
    elec_atoms atoms = test_system_atoms(s);
    size_t n = elec_lattice_size(l);
    double *ref = (double *)malloc(n * sizeof *ref), e;
    float *map = (float *)malloc(n * sizeof *map);
    elec_error err;
    EXPECT(elec_cpu_dcs_map_double(&atoms, l, NULL, ref, &err) == ELEC_OK, "%s", err.message);
    EXPECT(elec_cpu_msm_map(&atoms, l, p, map, &err) == ELEC_OK, "%s", err.message);
    e = test_rel_rms_float(map, ref, n);
    free(ref);
    free(map);
    return e;
}

static elec_lattice lattice_over(double edge) {
    elec_lattice l;
    int axis;
    for (axis = 0; axis < 3; axis++) {
        l.dims[axis] = 33;
        l.origin[axis] = -4.0;
        l.spacing[axis] = (edge + 8.0) / 32.0;
    }
    l.origin[1] += 0.37; /* not on the atoms' grid of the crystal */
    return l;
}

static const char *const ORDER_NAMES[] = {"cubic", "quintic", "septic", "nonic"};

TEST(bases_interpolate_and_reproduce_polynomials) {
    /* For s = 2 .. 5 points a side: Phi(0) = 1, Phi(k) = 0 at the other
       integers, sum_k Phi(t - k) k^d = t^d for d up to 2s - 2 (exact in
       exact arithmetic; the error is taken relative to 7^d, the size of the
       largest term, and held to 1e-13). */
    int order, degree, k;
    for (order = ELEC_MSM_CUBIC; order <= ELEC_MSM_NONIC; order++) {
        const int s = elec_msm_support(order);
        EXPECT(fabs(elec_msm_basis(0.0, order) - 1.0) < 1e-15, "%s: Phi(0)", ORDER_NAMES[order]);
        for (k = 1; k <= s + 1; k++)
            EXPECT(fabs(elec_msm_basis((double)k, order)) < 1e-15 &&
                       fabs(elec_msm_basis(-(double)k, order)) < 1e-15,
                   "%s: Phi(%d) = %.3e", ORDER_NAMES[order], k, elec_msm_basis(k, order));
        for (degree = 0; degree <= 2 * s - 2; degree++) {
            double worst = 0.0, t;
            for (t = 0.0; t <= 1.0; t += 1.0 / 64.0) {
                double sum = 0.0, error;
                for (k = -6; k <= 7; k++) sum += elec_msm_basis(t - k, order) * pow(k, degree);
                error = fabs(sum - pow(t, degree)) / pow(7.0, degree);
                if (error > worst) worst = error;
            }
            EXPECT(worst <= 1e-13, "%s, degree %d: relative error %.3e", ORDER_NAMES[order],
                   degree, worst);
        }
    }
}

TEST(bases_are_c1_and_match_their_derivatives) {
    /* Value and slope agree from both sides of every knot (C1: a Lagrange
       basis would jump in slope), and Phi' is the derivative of Phi (a
       central difference of step 1e-5 is good to ~1e-9). */
    int order, knot;
    for (order = ELEC_MSM_CUBIC; order <= ELEC_MSM_NONIC; order++) {
        const int s = elec_msm_support(order);
        double worst_jump = 0.0, worst_slope = 0.0, t;
        for (knot = -s; knot <= s; knot++) {
            double left = knot - 1e-12, right = knot + 1e-12;
            double jump = fabs(elec_msm_basis(left, order) - elec_msm_basis(right, order));
            double kink = fabs(elec_msm_basis_derivative(left, order) -
                               elec_msm_basis_derivative(right, order));
            if (jump > worst_jump) worst_jump = jump;
            if (kink > worst_jump) worst_jump = kink;
        }
        for (t = -s - 0.5; t <= s + 0.5; t += 0.0371) {
            double d = 1e-5;
            double numeric = (elec_msm_basis(t + d, order) - elec_msm_basis(t - d, order)) / (2 * d);
            double slope_error = fabs(numeric - elec_msm_basis_derivative(t, order));
            if (slope_error > worst_slope) worst_slope = slope_error;
        }
        EXPECT(worst_jump < 1e-9, "%s: value or slope jumps by %.3e at a knot",
               ORDER_NAMES[order], worst_jump);
        EXPECT(worst_slope < 1e-7, "%s: Phi' off by %.3e", ORDER_NAMES[order], worst_slope);
    }
}

TEST(softened_one_over_r_joins_smoothly) {
    /* gamma = 1/rho from rho = 1 on, and below it a polynomial matching
       value and first derivative at rho = 1 (C1 at least for every p). */
    int p;
    for (p = 1; p <= 6; p++) {
        double below = elec_msm_gamma(1.0 - 1e-9, p), slope = elec_msm_gamma_derivative(1.0 - 1e-9, p);
        EXPECT(fabs(below - 1.0) < 1e-8 && fabs(slope + 1.0) < 1e-8,
               "p = %d: gamma(1-) = %.12f, gamma'(1-) = %.12f", p, below, slope);
        EXPECT(elec_msm_gamma(2.0, p) == 0.5, "gamma(2) = 1/2");
        EXPECT(elec_msm_gamma(0.0, p) > 1.0, "gamma(0) is finite and above 1");
    }
}

TEST(map_meets_msmpot_target_and_quintic_improves_it) {
    test_system s = test_system_random(3000, 40.0, 41);
    elec_lattice l = lattice_over(40.0);
    elec_msm_params cubic = {0}, quintic = {0}, fine = {0};
    double e_cubic, e_quintic, e_fine;
    test_system_make_neutral(&s);
    quintic.interpolation = ELEC_MSM_QUINTIC;
    fine.interpolation = ELEC_MSM_QUINTIC;
    fine.spacing = 1.5;
    fine.splitting = 3;
    e_cubic = map_error(&s, &l, &cubic);
    e_quintic = map_error(&s, &l, &quintic);
    e_fine = map_error(&s, &l, &fine);
    printf("     random 3000 atoms: cubic %.2e, quintic %.2e, quintic h=1.5 C3 %.2e\n",
           e_cubic, e_quintic, e_fine);
    EXPECT(e_cubic <= MSMPOT_TARGET, "defaults: %.3e", e_cubic);
    /* measured 2.4x better; hold it to 1.5x */
    EXPECT(e_quintic <= e_cubic / 1.5, "quintic %.3e vs cubic %.3e", e_quintic, e_cubic);
    EXPECT(e_fine <= 2e-4, "quintic, h = 1.5 A, C3: %.3e", e_fine);
    test_system_free(&s);
}

TEST(orders_eight_and_ten_go_below_1e_5) {
    /* At a = 12 A, h = 1.5 A (bench/msm_error_table: quintic C3 4.4e-5,
       septic C4 1.3e-5, nonic C5 5.3e-6): each order beats the one below
       and nonic reaches 1e-5, twice its measured error. */
    test_system s = test_system_random(3000, 40.0, 41);
    elec_lattice l = lattice_over(40.0);
    double errors[4];
    int order;
    test_system_make_neutral(&s);
    for (order = ELEC_MSM_QUINTIC; order <= ELEC_MSM_NONIC; order++) {
        elec_msm_params p = {0};
        p.interpolation = (elec_msm_interpolation)order;
        p.splitting = order + 2;
        p.spacing = 1.5;
        errors[order] = map_error(&s, &l, &p);
    }
    printf("     h = 1.5 A: quintic C3 %.2e, septic C4 %.2e, nonic C5 %.2e\n",
           errors[1], errors[2], errors[3]);
    EXPECT(errors[2] < errors[1] / 2, "septic %.3e vs quintic %.3e", errors[2], errors[1]);
    EXPECT(errors[3] < errors[2], "nonic %.3e vs septic %.3e", errors[3], errors[2]);
    EXPECT(errors[3] <= 1e-5, "nonic: %.3e", errors[3]);
    test_system_free(&s);
}

TEST(map_of_water_and_a_crystal_meets_the_target) {
    test_system water = test_system_water(1000, 42);
    test_system salt = test_system_nacl(3, 5.64);
    elec_lattice lw = lattice_over(water.box[0]), ls = lattice_over(salt.box[0]);
    double ew = map_error(&water, &lw, NULL), es = map_error(&salt, &ls, NULL);
    printf("     water %.2e, NaCl %.2e\n", ew, es);
    EXPECT(ew <= MSMPOT_TARGET, "water: %.3e", ew);
    EXPECT(es <= MSMPOT_TARGET, "NaCl: %.3e", es);
    test_system_free(&water);
    test_system_free(&salt);
}

/* MSM energy and forces against the direct sum sum_{i<j} q_i q_j / r:
   relative energy error and relative RMS force error. */
static void msm_vs_direct(const test_system *s, const elec_msm_params *p, double *energy_error,
                          double *force_error) {
    elec_atoms atoms = test_system_atoms(s);
    double *f = (double *)malloc(3 * s->count * sizeof *f);
    double *fd = (double *)malloc(3 * s->count * sizeof *fd);
    double e_direct = 0.0, e_msm = 0.0, num = 0.0, den = 0.0;
    elec_error err;
    size_t i;
    EXPECT(elec_cpu_coulomb_energy(&atoms, 1.0, &e_direct, fd, &err) == ELEC_OK, "%s",
           err.message);
    EXPECT(elec_cpu_msm_energy(&atoms, p, &e_msm, f, &err) == ELEC_OK, "%s", err.message);
    for (i = 0; i < 3 * s->count; i++) {
        num += (f[i] - fd[i]) * (f[i] - fd[i]);
        den += fd[i] * fd[i];
    }
    *energy_error = fabs(e_msm - e_direct) / fabs(e_direct);
    *force_error = sqrt(num / den);
    free(f);
    free(fd);
}

/* The RMS of the direct sum's forces (per coordinate). */
static double direct_force_rms(const test_system *s) {
    elec_atoms atoms = test_system_atoms(s);
    double *f = (double *)malloc(3 * s->count * sizeof *f), e, sum = 0.0;
    elec_error err;
    size_t i;
    EXPECT(elec_cpu_coulomb_energy(&atoms, 1.0, &e, f, &err) == ELEC_OK, "%s", err.message);
    for (i = 0; i < 3 * s->count; i++) sum += f[i] * f[i];
    free(f);
    return sqrt(sum / (double)(3 * s->count));
}

TEST(energy_and_forces_match_the_direct_sum) {
    /* Random charges, a water box and a rock-salt crystal (non-periodic:
       every pair once) at the defaults.  Energies measure 6e-6 to 2.4e-4
       (relative): held to 5e-4.  Forces (relative RMS) measure 6.6e-4
       (random) and 7.3e-4 (water); in the crystal the net forces are what
       is left of nearly cancelling pair forces (zero inside by symmetry),
       so its error is taken against the nearest-neighbour pair force
       1/r0^2 instead: 9.0e-4 (5.4e-3 of its small net RMS force).  Held to
       2e-3, about twice the largest, well inside msmpot's 5e-3 for maps.
       The quintic's C3 splitting gains a factor 2.0 to 5.2 in forces;
       held to 1.5. */
    test_system random = test_system_random(2000, 35.0, 43);
    test_system water = test_system_water(1500, 45);
    test_system salt = test_system_nacl(4, 5.64);
    const test_system *systems[3] = {&random, &water, &salt};
    const char *names[3] = {"random", "water", "NaCl"};
    int k, q;
    test_system_make_neutral(&random);
    for (k = 0; k < 3; k++) {
        double energy[2], forces[2];
        for (q = 0; q <= 1; q++) {
            elec_msm_params p = {0};
            p.interpolation = (elec_msm_interpolation)q;
            msm_vs_direct(systems[k], &p, &energy[q], &forces[q]);
            if (systems[k] == &salt) {
                const double r0 = 5.64 / 2.0; /* force RMS / (1/r0^2) */
                forces[q] *= direct_force_rms(&salt) * r0 * r0;
            }
        }
        printf("     %-6s energy: cubic %.2e, quintic %.2e; forces%s: cubic %.2e, "
               "quintic %.2e\n",
               names[k], energy[0], energy[1], systems[k] == &salt ? " (of 1/r0^2)" : "",
               forces[0], forces[1]);
        EXPECT(energy[0] <= 5e-4 && forces[0] <= 2e-3,
               "%s at the defaults: energy %.3e, forces %.3e", names[k], energy[0], forces[0]);
        EXPECT(forces[1] * 1.5 <= forces[0], "%s: quintic forces %.3e against cubic %.3e",
               names[k], forces[1], forces[0]);
    }
    test_system_free(&random);
    test_system_free(&water);
    test_system_free(&salt);
}

TEST(forces_are_the_gradient_of_the_energy) {
    /* Forces are -dE/dr of the MSM energy itself (continuous forces for
       MD): central differences, step 1e-5 A, on a few coordinates of 60
       atoms in a 15 A cube, cubic and nonic, the outermost atom's
       coordinate on each side among them (the lattices once moved with
       those: their forces missed -dE/dr by 1e-3 of the largest force).
       Held to 1e-8 of the largest force (the basis is only C1, so a
       lattice line inside the step would make the difference O(step)
       there). */
    test_system s = test_system_random(60, 15.0, 23);
    elec_atoms atoms = test_system_atoms(&s);
    const double step = 1e-5;
    size_t checked[17 + 6], count = 0, i; /* every 11th of 180, the 6 outermost */
    int order, axis;
    test_system_make_neutral(&s);
    for (i = 0; i < 180; i += 11) checked[count++] = i;
    for (axis = 0; axis < 3; axis++) {
        size_t low = (size_t)axis, high = (size_t)axis;
        for (i = (size_t)axis; i < 180; i += 3) {
            if (s.xyz[i] < s.xyz[low]) low = i;
            if (s.xyz[i] > s.xyz[high]) high = i;
        }
        checked[count++] = low;
        checked[count++] = high;
    }
    for (order = ELEC_MSM_CUBIC; order <= ELEC_MSM_NONIC; order += 3) {
        elec_msm_params p = {0};
        double f[180], e, e_plus, e_minus, scale = 0.0, worst = 0.0;
        elec_error err;
        size_t k;
        p.interpolation = (elec_msm_interpolation)order;
        EXPECT(elec_cpu_msm_energy(&atoms, &p, &e, f, &err) == ELEC_OK, "%s", err.message);
        for (i = 0; i < 180; i++) scale = fabs(f[i]) > scale ? fabs(f[i]) : scale;
        for (k = 0; k < count; k++) {
            const size_t c = checked[k];
            const double keep = s.xyz[c];
            s.xyz[c] = keep + step;
            EXPECT(elec_cpu_msm_energy(&atoms, &p, &e_plus, NULL, &err) == ELEC_OK, "%s",
                   err.message);
            s.xyz[c] = keep - step;
            EXPECT(elec_cpu_msm_energy(&atoms, &p, &e_minus, NULL, &err) == ELEC_OK, "%s",
                   err.message);
            s.xyz[c] = keep;
            if (fabs(-(e_plus - e_minus) / (2.0 * step) - f[c]) > worst)
                worst = fabs(-(e_plus - e_minus) / (2.0 * step) - f[c]);
        }
        printf("     %s: largest difference %.2e of the largest force %.2e\n",
               ORDER_NAMES[order], worst, scale);
        EXPECT(worst <= 1e-8 * scale, "%s: forces differ from -dE/dr by %.3e",
               ORDER_NAMES[order], worst);
    }
    test_system_free(&s);
}

TEST(energy_lattices_keep_their_levels_as_the_atoms_move) {
    /* The energy's hierarchy (elec_cpu_msm_lattices with no reference) is
       laid from a point that moves only by whole top-level spacings, with
       levels counted from the atoms' extent alone (elec__msm_anchor): 40
       ions in a 35 A cube (three seeds) moved rigidly by 0 to 4 A in 41
       steps along a skew direction keep their levels (counted over the
       atoms' own box about that point, they went 2 to 3 for a move of 0.01
       A: a review); and moved by one top-level spacing along an axis the
       ions sit where they sat on the lattices, so the energy is the same to
       rounding (1e-12 of it: a check of the moved reference, which laid from
       the centre itself kept it too; forces_are_the_gradient_of_the_energy
       is the one the centre fails). */
    static const double direction[3] = {0.48, 0.6, 0.64}; /* |d| = 1 */
    int seed, changed = 0;
    for (seed = 0; seed < 3; seed++) {
        test_system s = test_system_random(40, 35.0, 71 + (unsigned)seed);
        elec_atoms atoms = test_system_atoms(&s);
        double before, after, top;
        elec_msm_lattices now;
        elec_msm_params p = {0}, r;
        elec_error err;
        int k, axis, levels = 0;
        size_t i;
        test_system_make_neutral(&s);
        EXPECT(elec_msm_params_resolve(&p, 0.0, &r, &err) == ELEC_OK, "%s", err.message);
        for (k = 0; k <= 40; k++) {
            const double step = k == 0 ? 0.0 : 0.1;
            for (i = 0; i < s.count; i++)
                for (axis = 0; axis < 3; axis++) s.xyz[3 * i + axis] += step * direction[axis];
            EXPECT(elec_cpu_msm_lattices(&atoms, NULL, &p, &now, &err) == ELEC_OK, "%s",
                   err.message);
            if (k == 0) levels = now.levels;
            if (now.levels != levels) {
                printf("     seed %d, move %d: %d levels against %d\n", seed, k, now.levels,
                       levels);
                changed++;
            }
            elec_msm_lattices_free(&now);
        }
        top = r.spacing * ldexp(1.0, levels - 1);
        for (axis = 0; axis < 3; axis++) {
            EXPECT(elec_cpu_msm_energy(&atoms, &p, &before, NULL, &err) == ELEC_OK, "%s",
                   err.message);
            for (i = 0; i < s.count; i++) s.xyz[3 * i + axis] += top;
            EXPECT(elec_cpu_msm_energy(&atoms, &p, &after, NULL, &err) == ELEC_OK, "%s",
                   err.message);
            EXPECT(fabs(after - before) <= 1e-12 * fabs(before),
                   "seed %d, moved %.1f A along axis %d: %.15f then %.15f", seed, top, axis,
                   before, after);
        }
        printf("     seed %d: %d levels; moved by %.1f A, the energy %.15f\n", seed, levels, top,
               after);
        test_system_free(&s);
    }
    EXPECT(changed == 0, "the levels changed under %d rigid moves", changed);
}

TEST(lattices_keep_the_charge_level_by_level) {
    /* elec_cpu_msm_lattices, the stage-by-stage form tests and teaching
       read (tests/test_gpu_msm.cu holds the device's stages to it):
       anterpolation and every restriction keep the total charge (the bases
       reproduce constants, so each atom's and each point's weights sum to
       1: to 1e-12 of the charges' size), on a hierarchy made three levels
       deep or more by a small top; the top's potential is its direct sum,
       untouched by prolongation. */
    test_system s = test_system_random(300, 18.0, 27);
    elec_atoms atoms = test_system_atoms(&s);
    elec_msm_params p = {0};
    elec_msm_lattices m;
    elec_error err;
    double total = 0.0, size = 0.0;
    p.max_top_points = 64;
    size_t i;
    int l;
    for (i = 0; i < s.count; i++) {
        total += s.charge[i];
        size += fabs(s.charge[i]);
    }
    EXPECT(elec_cpu_msm_lattices(&atoms, NULL, &p, &m, &err) == ELEC_OK, "%s", err.message);
    EXPECT(m.levels >= 3 && m.atom_count == s.count, "%d levels, %zu atoms", m.levels,
           m.atom_count);
    for (l = 0; l < m.levels; l++) {
        double sum = 0.0;
        for (i = m.first[l]; i < m.first[l + 1]; i++) sum += m.q[i];
        EXPECT(fabs(sum - total) <= 1e-12 * size, "level %d holds %.15g e of %.15g", l, sum,
               total);
    }
    for (i = m.first[m.levels - 1]; i < m.first[m.levels]; i++)
        EXPECT(m.e[i] == m.cutoff[i], "top point %zu: prolongation changed it", i);
    EXPECT(elec_cpu_msm_lattices(&atoms, NULL, NULL, NULL, &err) == ELEC_ERR_INVALID_ARG,
           "NULL out accepted");
    {   /* a reference that is not a number: refused (it went through every
           range test, as NaN compares false, into undefined casts) */
        const double nan_reference[3] = {0.0, NAN, 0.0};
        elec_msm_lattices none;
        EXPECT(elec_cpu_msm_lattices(&atoms, nan_reference, NULL, &none, &err) ==
                       ELEC_ERR_INVALID_ARG &&
                   strstr(err.message, "reference[1] nan is not finite"),
               "NaN reference: %s", err.message);
    }
    elec_msm_lattices_free(&m);
    test_system_free(&s);
}

TEST(points_and_the_map_leave_a_coincident_atom_out) {
    /* An atom exactly on a lattice point: the map stays finite and that
       point holds the other atoms' potential (the DCS reference's rule). */
    test_system s = test_system_random(500, 20.0, 44);
    elec_atoms atoms = test_system_atoms(&s);
    elec_lattice l = {{21, 21, 21}, {0.0, 0.0, 0.0}, {1.0, 1.0, 1.0}};
    size_t n = elec_lattice_size(&l), at = 5 + 21 * (6 + 21 * 7);
    float *map = (float *)malloc(n * sizeof *map);
    double *ref = (double *)malloc(n * sizeof *ref), xyz[3], phi;
    elec_error err;
    s.xyz[0] = 5.0;
    s.xyz[1] = 6.0;
    s.xyz[2] = 7.0;
    EXPECT(elec_cpu_msm_map(&atoms, &l, NULL, map, &err) == ELEC_OK, "%s", err.message);
    EXPECT(elec_cpu_dcs_map_double(&atoms, &l, NULL, ref, &err) == ELEC_OK, "%s", err.message);
    EXPECT(test_all_finite_float(map, n), "map not finite");
    EXPECT(fabs(map[at] - ref[at]) <= 1e-2 * fabs(ref[at]) + 1e-3,
           "at the atom %.6f, want %.6f", map[at], ref[at]);
    elec_lattice_point(&l, 5, 6, 7, xyz);
    EXPECT(elec_cpu_msm_points(&atoms, xyz, 1, NULL, &phi, &err) == ELEC_OK, "%s", err.message);
    /* the points path builds its own lattices around its one point: same
       method, different lattice placement, so within the method's error */
    EXPECT(fabs(phi - ref[at]) <= 1e-2 * fabs(ref[at]) + 1e-3, "points %.6f vs %.6f", phi,
           ref[at]);
    free(map);
    free(ref);
    test_system_free(&s);
}

TEST(bad_parameters_are_refused) {
    double xyz[3] = {0, 0, 0}, q[1] = {1}, e;
    elec_atoms atoms = elec_atoms_from_xyz(1, xyz, q, NULL);
    elec_msm_params p = {0};
    elec_error err;
    p.spacing = 20.0; /* more than the 12 A cutoff */
    EXPECT(elec_cpu_msm_energy(&atoms, &p, &e, NULL, &err) == ELEC_ERR_INVALID_ARG, "spacing > cutoff");
    p.spacing = 0.0;
    p.splitting = 9;
    EXPECT(elec_cpu_msm_energy(&atoms, &p, &e, NULL, &err) == ELEC_ERR_INVALID_ARG, "splitting 9");
    p.splitting = 0;
    p.cutoff = -1.0;
    EXPECT(elec_cpu_msm_energy(&atoms, &p, &e, NULL, &err) == ELEC_ERR_INVALID_ARG, "negative cutoff");
    p.cutoff = 0.0;
    EXPECT(elec_cpu_msm_energy(&atoms, &p, NULL, NULL, &err) == ELEC_ERR_INVALID_ARG, "NULL energy");
    EXPECT(elec_cpu_msm_energy(&atoms, &p, &e, NULL, &err) == ELEC_OK && e == 0.0,
           "one charge has no energy: %g", e);
}

/* Lattice sums of hours refused before any work (an audit's: a / h = 64
   with the nonic basis ran past two minutes for two atoms 20 A apart, and
   max_top_points = INT_MAX summed a top of millions of points pair by
   pair), each naming what to change; the defaults on the same atoms run. */
TEST(lattice_sums_of_hours_are_refused) {
    double xyz[6] = {0, 0, 0, 60, 60, 60}, q[2] = {1, -1}, e;
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL);
    elec_msm_params p = {0};
    elec_error err;
    p.spacing = 0.25;
    p.cutoff = 16.0;
    p.interpolation = ELEC_MSM_NONIC;
    EXPECT(elec_cpu_msm_energy(&atoms, &p, &e, NULL, &err) == ELEC_ERR_UNSUPPORTED &&
               strstr(err.message, "kernel values") && strstr(err.message, "a coarser spacing"),
           "a / h = 64, nonic, 104 A apart: %s", err.message);
    printf("     %s\n", err.message);
    memset(&p, 0, sizeof p);
    xyz[3] = xyz[4] = xyz[5] = 300.0; /* 520 A apart */
    p.max_top_points = INT_MAX;
    EXPECT(elec_cpu_msm_energy(&atoms, &p, &e, NULL, &err) == ELEC_ERR_UNSUPPORTED &&
               strstr(err.message, "max_top_points"),
           "max_top_points INT_MAX, 520 A apart: %s", err.message);
    printf("     %s\n", err.message);
    p.max_top_points = 0;
    EXPECT(elec_cpu_msm_energy(&atoms, &p, &e, NULL, &err) == ELEC_OK, "defaults: %s",
           err.message);
    /* a tolerance whose choice is over the limit: the tolerance named as the
       thing to change (the caller set no spacing or cutoff) */
    xyz[3] = xyz[4] = xyz[5] = 400.0; /* 400 A along each axis */
    p.tolerance = 2e-7;
    EXPECT(elec_cpu_msm_energy(&atoms, &p, &e, NULL, &err) == ELEC_ERR_UNSUPPORTED &&
               strstr(err.message, "a looser tolerance than 2e-07"),
           "tolerance 2e-7, 400 A along each axis: %s", err.message);
    printf("     %s\n", err.message);
}

TEST(maps_and_points_past_their_range_are_refused) {
    /* Charges of 1e308 e (test_huge_charges): the float map passes float's
       range, the double potential at (1, 1, 1) double's; both calls fail,
       naming the method and the point, where the map once returned ELEC_OK
       full of inf. */
    elec_atoms atoms = test_huge_charges();
    elec_lattice l = test_lattice_cube(6, 0.0, 1.0);
    double pts[6] = {0.0, 0.0, 5.0, 1.0, 1.0, 1.0}, phi[2];
    float map[216];
    elec_msm_params p = {0};
    elec_error err;
    elec_status s = elec_cpu_msm_map(&atoms, &l, &p, map, &err);
    EXPECT(test_refused_past_range(s, &err, "MSM map", "float"), "map: status %d, %s", (int)s,
           err.message);
    s = elec_cpu_msm_points(&atoms, pts, 2, &p, phi, &err);
    EXPECT(test_refused_past_range(s, &err, "MSM at points", "double") &&
               strstr(err.message, "point 1 came out"),
           "points: status %d, %s", (int)s, err.message);
}

TEST(awkward_lattices_and_far_points_are_safe) {
    /* A lattice whose first point rounds across a lattice line (found by
       review under AddressSanitizer), and points 2^33 A away. */
    double xyz[3] = {0.0, 0.0, 0.0}, q[1] = {1.0}, far[6] = {0, 0, 0, 8589934592.0, 0, 0}, phi[2];
    elec_atoms atoms = elec_atoms_from_xyz(1, xyz, q, NULL);
    elec_lattice l = {{49, 12, 44}, {-268.74243907928468, 4.8047236442565922, -420.10829191207887},
                      {0.6, 0.3, 0.1}};
    elec_msm_params p = {0};
    elec_error err;
    size_t n = elec_lattice_size(&l);
    float *map = (float *)malloc(n * sizeof *map);
    int axis;
    for (axis = 0; axis < 3; axis++)
        xyz[axis] = l.origin[axis] + 0.5 * (l.dims[axis] - 1) * l.spacing[axis];
    p.spacing = 1.2;
    p.cutoff = 3.0;
    p.interpolation = ELEC_MSM_QUINTIC;
    EXPECT(elec_cpu_msm_map(&atoms, &l, &p, map, &err) == ELEC_OK, "%s", err.message);
    EXPECT(test_all_finite_float(map, n), "map not finite");
    xyz[0] = xyz[1] = xyz[2] = 0.0;
    EXPECT(elec_cpu_msm_points(&atoms, far, 2, NULL, phi, &err) == ELEC_ERR_UNSUPPORTED,
           "points 2^33 A apart: %s", err.message);
    /* 1e4 A apart: fine as coordinates, but 10^11 lattice points */
    far[3] = 1e4;
    far[4] = 1e4;
    far[5] = 1e4;
    EXPECT(elec_cpu_msm_points(&atoms, far, 2, NULL, phi, &err) == ELEC_ERR_UNSUPPORTED,
           "points 1e4 A apart: %s", err.message);
    free(map);
}

/* ------------------------------------------------------- periodic MSM */

/* Rock salt, exact (as in tests/test_ewald.c): per ion pair E = -M / r0,
   r0 the cation-anion distance. */
#define NACL_MADELUNG 1.747564594633182
/* One charge per cube of edge L in a neutralising background (the Ewald
   convention): E = -xi / (2 L) per charge, xi the Wigner-lattice constant
   of the simple cubic lattice (Nijboer and De Wette 1957). */
#define SIMPLE_CUBIC_WIGNER 2.837297479480620

/* Periodic MSM against the exact Ewald sum (tolerance 1e-10, far below
   MSM's errors): energy relative to |E|, forces and potentials relative
   RMS, and the forces' plain RMS difference (for a crystal, whose exact
   forces vanish). */
typedef struct periodic_errors {
    double energy, forces, potential, force_rms, msm_energy, ewald_energy;
} periodic_errors;

static periodic_errors periodic_vs_ewald(const test_system *s, const elec_box *box,
                                         const elec_msm_params *p, const char *what) {
    elec_atoms atoms = test_system_atoms(s);
    elec_ewald_params ewald = {0};
    elec_ewald_terms truth;
    elec_error err;
    periodic_errors out;
    size_t n = s->count, i;
    double *f = (double *)malloc(3 * n * sizeof *f), *fe = (double *)malloc(3 * n * sizeof *fe);
    double *phi = (double *)malloc(n * sizeof *phi), *phie = (double *)malloc(n * sizeof *phie);
    double num = 0.0, den = 0.0, pnum = 0.0, pden = 0.0;
    ewald.tolerance = 1e-10;
    if (p) { /* the same excluded pairs on both sides */
        ewald.excluded_pairs = p->excluded_pairs;
        ewald.excluded_pair_count = p->excluded_pair_count;
    }
    EXPECT(elec_cpu_ewald(&atoms, box, &ewald, &truth, fe, phie, &err) == ELEC_OK, "%s", err.message);
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, box, p, &out.msm_energy, f, phi, &err) == ELEC_OK,
           "%s: %s", what, err.message);
    for (i = 0; i < 3 * n; i++) {
        num += (f[i] - fe[i]) * (f[i] - fe[i]);
        den += fe[i] * fe[i];
    }
    for (i = 0; i < n; i++) {
        pnum += (phi[i] - phie[i]) * (phi[i] - phie[i]);
        pden += phie[i] * phie[i];
    }
    out.ewald_energy = truth.total;
    out.energy = fabs(out.msm_energy - truth.total) / fabs(truth.total);
    out.forces = sqrt(num / den);
    out.force_rms = sqrt(num / (3.0 * (double)n));
    out.potential = sqrt(pnum / pden);
    printf("     %s: E %.10f vs Ewald %.10f: energy %.2e, forces %.2e, potentials %.2e\n", what,
           out.msm_energy, truth.total, out.energy, out.forces, out.potential);
    free(f);
    free(fe);
    free(phi);
    free(phie);
    return out;
}

/* Progress: each call reports fractions that rise to 1 and stops where
   the callback asks.  Eight ions at the corners of a 160 A cube lay
   lattices of millions of empty points whose stencil sums once ran 4 s
   with no callback (and 7.7 s at 200 A, growing as the span cubed), and
   the energy and lattice calls never called it: now the first call comes
   within a 64th of that sum. */
TEST(msm_calls_report_progress_and_stop_when_cancelled) {
    test_system far = test_system_random(8, 1.0, 71), near = test_system_random(200, 20.0, 72);
    double point[3] = {0.0, 0.0, 0.0}, phi, energy, *forces;
    elec_msm_lattices lat;
    elec_error err;
    int k, call;
    for (k = 0; k < 8; k++) { /* the corners of a 160 A cube, +1 and -1 */
        far.xyz[3 * k] = k & 1 ? 80.0 : -80.0;
        far.xyz[3 * k + 1] = k & 2 ? 80.0 : -80.0;
        far.xyz[3 * k + 2] = k & 4 ? 80.0 : -80.0;
        far.charge[k] = (k & 1) ^ ((k >> 1) & 1) ^ ((k >> 2) & 1) ? 1.0 : -1.0;
    }
    forces = (double *)malloc(3 * near.count * sizeof *forces);
    for (call = 0; call < 3; call++) {
        elec_atoms atoms = test_system_atoms(&far);
        elec_msm_params p = {0};
        test_progress_log log = {0, 1, 1, 0.0}; /* stops at the first call */
        elec_status s;
        p.progress = test_log_progress;
        p.progress_user = &log;
        s = call == 0   ? elec_cpu_msm_points(&atoms, point, 1, &p, &phi, &err)
            : call == 1 ? elec_cpu_msm_energy(&atoms, &p, &energy, NULL, &err)
                        : elec_cpu_msm_lattices(&atoms, NULL, &p, &lat, &err);
        EXPECT(s == ELEC_ERR_CANCELLED && log.calls == 1 && log.last < 0.1,
               "call %d: status %d after %d callbacks (last %g): %s", call, (int)s, log.calls,
               log.last, err.message);
    }
    for (call = 0; call < 3; call++) { /* uncancelled: rising to 1 */
        elec_atoms atoms = test_system_atoms(&near);
        elec_msm_params p = {0};
        test_progress_log log = {0, 1, 0, 0.0}; /* never stops */
        elec_status s;
        p.progress = test_log_progress;
        p.progress_user = &log;
        s = call == 0   ? elec_cpu_msm_points(&atoms, near.xyz, near.count, &p, forces, &err)
            : call == 1 ? elec_cpu_msm_energy(&atoms, &p, &energy, forces, &err)
                        : elec_cpu_msm_lattices(&atoms, NULL, &p, &lat, &err);
        EXPECT(s == ELEC_OK && log.calls >= 1 && log.increasing &&
                   fabs(log.last - 1.0) < 1e-12,
               "call %d: status %d, %d callbacks, last %g, rising %d: %s", call, (int)s,
               log.calls, log.last, log.increasing, err.message);
        if (call == 2 && s == ELEC_OK) elec_msm_lattices_free(&lat);
    }
    free(forces);
    test_system_free(&far);
    test_system_free(&near);
}

TEST(periodic_msm_matches_ewald_for_random_charges_and_water) {
    /* At the defaults (h = 2, a = 12, C1 cubic, C2 splitting) MSM's map
       error is 8.2e-4 relative RMS (README's table, make msm-table); the
       periodic lattices here are a little finer (h = 1.56 and 1.16).  The
       potentials
       at the atoms measure 9.2e-4 (random) and 3.4e-4 (water), forces 1.2e-3
       and 3.5e-4, and each is held to about twice that.  The energy of
       random charges in [-1, 1] is a small difference of large terms
       (|E| = 3.5 against sum |q phi| / 2 = 53), so its relative error,
       3.2e-3, is the potential error magnified; water's is 6.9e-5. */
    test_system random = test_system_random(400, 25.0, 7);
    test_system water = test_system_water(216, 3);
    elec_box random_box = test_box(25.0, 25.0, 25.0);
    elec_box water_box = test_box(water.box[0], water.box[1], water.box[2]);
    periodic_errors e;
    test_system_make_neutral(&random);
    e = periodic_vs_ewald(&random, &random_box, NULL, "random, seed 7");
    EXPECT(e.energy <= 7e-3, "random: energy %.3e", e.energy);
    EXPECT(e.forces <= 2.5e-3, "random: forces %.3e", e.forces);
    EXPECT(e.potential <= 2e-3, "random: potentials %.3e", e.potential);
    e = periodic_vs_ewald(&water, &water_box, NULL, "water, 216 molecules, seed 3");
    EXPECT(e.energy <= 1.5e-4, "water: energy %.3e", e.energy);
    EXPECT(e.forces <= 7e-4, "water: forces %.3e", e.forces);
    EXPECT(e.potential <= 7e-4, "water: potentials %.3e", e.potential);
    test_system_free(&random);
    test_system_free(&water);
}

TEST(periodic_msm_with_excluded_pairs_matches_ewald_with_them) {
    /* SPC/E-like water with each molecule's three pairs excluded (as an MD
       code with rigid or bonded water passes them), against exact Ewald
       with the same exclusions: the short range leaves each pair's nearest
       image out and its smooth part g_0(r) comes back out of the
       lattices', so the method's absolute error is the one without
       exclusions on the same atoms (energy 9.1e-3, force RMS measured
       equal to 3 digits), held to 1.5 times it; a pair left in, or
       its smooth part left in the lattices, would be off by its 1/r or
       g_0 term (~0.3 e/A at an H, a thousand times more).  Relative
       errors mean little here: this unrelaxed water's intermolecular
       energy, -0.04, is three thousandths of its total.  Then the
       non-periodic energy refuses the pairs, saying why. */
    test_system water = test_system_water(216, 3);
    elec_box box = test_box(water.box[0], water.box[1], water.box[2]);
    size_t *pairs = test_water_exclusions(216);
    elec_msm_params p = {0};
    elec_atoms atoms = test_system_atoms(&water);
    elec_error err;
    double energy;
    periodic_errors all, excluded;
    all = periodic_vs_ewald(&water, &box, NULL, "water, every pair");
    p.excluded_pairs = pairs;
    p.excluded_pair_count = 3 * 216;
    excluded = periodic_vs_ewald(&water, &box, &p, "water with its 648 excluded pairs");
    printf("     absolute: energy %.3e vs %.3e, force RMS %.3e vs %.3e\n",
           fabs(excluded.msm_energy - excluded.ewald_energy), fabs(all.msm_energy - all.ewald_energy),
           excluded.force_rms, all.force_rms);
    EXPECT(fabs(excluded.msm_energy - excluded.ewald_energy) <=
               1.5 * fabs(all.msm_energy - all.ewald_energy),
           "energy off by %.3e", fabs(excluded.msm_energy - excluded.ewald_energy));
    EXPECT(excluded.force_rms <= 1.5 * all.force_rms, "force RMS %.3e", excluded.force_rms);
    EXPECT(elec_cpu_msm_energy(&atoms, &p, &energy, NULL, &err) == ELEC_ERR_UNSUPPORTED,
           "the non-periodic energy took excluded pairs");
    printf("     refused: %s\n", err.message);
    free(pairs);
    test_system_free(&water);
}

TEST(periodic_msm_leaves_out_one_image_of_a_pair_half_a_box_apart) {
    /* An excluded pair exactly half a box apart has two nearest images;
       the short range left out every image with |d| <= L/2 on each axis,
       so both went, while its smooth part came back out of the lattices
       once: in a 10 A box at the default a of 12 A the energy came to
       -0.0433 for Ewald's -0.1042 (an audit).  Now the one image
       elec__ewald_nearest takes is left out.  The pair half a box apart
       along x, then along x and y, and with the partner given a box length
       away (wrapped: the tie falls the other way before the wrap), against
       exact Ewald with the same exclusion to the method's error at these
       settings (6.8e-4 measured, 1e-3 allowed; the defect's 6.1e-2); and as
       good as the pair moved 1e-9 A off the tie. */
    static const double partner[3][3] = {{6.0, 1.0, 1.0}, {6.0, 6.0, 1.0}, {-4.0, 1.0, 1.0}};
    const size_t pair[2] = {0, 1};
    elec_box box = test_box(10.0, 10.0, 10.0);
    int c;
    for (c = 0; c < 3; c++) {
        test_system s = test_system_random(3, 10.0, 5);
        elec_msm_params p = {0};
        periodic_errors tie, off;
        char what[96];
        int axis;
        for (axis = 0; axis < 3; axis++) {
            s.xyz[axis] = 1.0;
            s.xyz[3 + axis] = partner[c][axis];
        }
        s.xyz[6] = 3.0, s.xyz[7] = 7.0, s.xyz[8] = 4.0;
        s.charge[0] = 1.0, s.charge[1] = -1.0, s.charge[2] = 0.5;
        p.excluded_pairs = pair;
        p.excluded_pair_count = 1;
        snprintf(what, sizeof what, "pair at (%g, %g, %g) from (1, 1, 1)", partner[c][0],
                 partner[c][1], partner[c][2]);
        tie = periodic_vs_ewald(&s, &box, &p, what);
        s.xyz[3] += 1e-9;
        off = periodic_vs_ewald(&s, &box, &p, "  the partner 1e-9 A further along x");
        EXPECT(fabs(tie.msm_energy - tie.ewald_energy) <= 1e-3,
               "%s: energy %.6f, Ewald's %.6f", what, tie.msm_energy, tie.ewald_energy);
        EXPECT(fabs(tie.msm_energy - off.msm_energy) <= 1e-6,
               "%s: energy %.9f, 1e-9 A off the tie %.9f", what, tie.msm_energy, off.msm_energy);
        /* at the tie both atoms take one image (Ewald's): the forces as
           good as off it (from each side its own image left out, they did
           not sum to zero) */
        EXPECT(tie.forces <= 2.0 * off.forces + 1e-3, "%s: forces %.3e at the tie, %.3e off it",
               what, tie.forces, off.forces);
        test_system_free(&s);
    }
}

TEST(periodic_msm_gives_the_madelung_energy_of_rock_salt) {
    /* 3 x 3 x 3 cells, 216 ions; the exact truth is the Madelung constant
       (energy per pair -M/r0, potential at an ion -q M/r0, no forces).
       Measured at the defaults: energy 1.3e-4 and potentials 1.5e-4
       relative, forces 1.0e-3 of the nearest-neighbour force 1/r0^2 (the
       lattice, 1.06 A apart, does not share the crystal's symmetry);
       held to about twice that. */
    const double a = 5.64, r0 = a / 2.0;
    test_system salt = test_system_nacl(3, a);
    elec_box box = test_box(3.0 * a, 3.0 * a, 3.0 * a);
    periodic_errors e = periodic_vs_ewald(&salt, &box, NULL, "rock salt, 3^3 cells");
    const double pairs = (double)salt.count / 2.0, want = -NACL_MADELUNG / r0;
    const double energy_error = fabs(e.msm_energy / pairs - want) / fabs(want);
    printf("     E/pair %.8f, -M/r0 %.8f: %.2e; force RMS %.2e of 1/r0^2\n", e.msm_energy / pairs,
           want, energy_error, e.force_rms * r0 * r0);
    EXPECT(energy_error <= 3e-4, "energy per pair off by %.3e", energy_error);
    EXPECT(e.potential <= 3e-4, "potentials off by %.3e", e.potential);
    EXPECT(e.force_rms * r0 * r0 <= 2e-3, "forces %.3e of 1/r0^2", e.force_rms * r0 * r0);
    test_system_free(&salt);
}

TEST(periodic_msm_quintic_at_finer_spacing_improves_the_error) {
    /* README's table: C1 quintic with C3 splitting at h = 1.5 has a map
       error of 4.4e-5 against 8.2e-4 at the defaults.  On the random
       system of the test above, measured: energy 3.2e-3 -> 5.0e-5, forces
       1.2e-3 -> 1.1e-5, potentials 9.2e-4 -> 1.2e-5; held to about twice
       those, and to a gain of at least 20 in forces and potentials. */
    test_system s = test_system_random(400, 25.0, 7);
    elec_box box = test_box(25.0, 25.0, 25.0);
    elec_msm_params p = {0};
    periodic_errors cubic, quintic;
    test_system_make_neutral(&s);
    cubic = periodic_vs_ewald(&s, &box, NULL, "cubic C2, h = 2");
    p.interpolation = ELEC_MSM_QUINTIC;
    p.splitting = 3;
    p.spacing = 1.5;
    quintic = periodic_vs_ewald(&s, &box, &p, "quintic C3, h = 1.5");
    EXPECT(quintic.energy <= 1e-4, "quintic: energy %.3e", quintic.energy);
    EXPECT(quintic.forces <= 2.2e-5, "quintic: forces %.3e", quintic.forces);
    EXPECT(quintic.potential <= 2.5e-5, "quintic: potentials %.3e", quintic.potential);
    EXPECT(quintic.forces * 20.0 <= cubic.forces && quintic.potential * 20.0 <= cubic.potential,
           "quintic forces %.3e, potentials %.3e against cubic %.3e, %.3e", quintic.forces,
           quintic.potential, cubic.forces, cubic.potential);
    test_system_free(&s);
}

TEST(periodic_msm_with_a_net_charge_matches_ewald_with_its_background) {
    /* One extra +1 e on a neutral random system: the total charge's smooth
       part on the one-point top is the zero-mean constant, 0.5 Q^2 C_L =
       -1.55 e^2/A here (a_L = 192 A), which Ewald's background term
       mirrors; without it the energy would be off by 45 %.  Measured:
       energy 2.2e-3, forces 1.2e-3, potentials 9.3e-4 (as for the neutral
       system); held to about twice that. */
    test_system s = test_system_random(300, 22.0, 11);
    elec_box box = test_box(22.0, 22.0, 22.0);
    periodic_errors e;
    test_system_make_neutral(&s);
    s.charge[0] += 1.0;
    e = periodic_vs_ewald(&s, &box, NULL, "net charge +1");
    EXPECT(e.energy <= 5e-3, "energy %.3e", e.energy);
    EXPECT(e.forces <= 2.5e-3, "forces %.3e", e.forces);
    EXPECT(e.potential <= 2e-3, "potentials %.3e", e.potential);
    test_system_free(&s);
}

TEST(periodic_msm_sums_images_beyond_the_minimum_image) {
    /* Boxes shorter than the cutoff a = 12 A, whose short-range sums reach
       several images and whose stencils fold over the lattice more than
       once: a 10 A cube; an 8 x 30 x 12 A box, atoms put 17 A beyond its
       x edge (wrapped back); one ion in a 1.8 A cube, smaller than the
       spacing, so no lattice at all: all the smooth part is the top, and
       the truth is the Wigner constant.  Measured energy, forces,
       potentials: 4.7e-4, 6.9e-4, 5.0e-4 (cube) and 5.8e-4, 4.3e-4,
       1.3e-3 (box); the lone ion 1.0e-4 (the top's constant leaves out
       g_L's variation over the box, which falls with smoother splitting:
       1.4e-5 at C3).  Held to about twice those. */
    test_system cube = test_system_random(60, 10.0, 9);
    test_system slab = test_system_random(200, 1.0, 12);
    elec_box cube_box = test_box(10.0, 10.0, 10.0), slab_box = test_box(8.0, 30.0, 12.0);
    elec_box tiny = test_box(1.8, 1.8, 1.8);
    double xyz[3] = {0.3, 0.5, 0.7}, q[1] = {1.0}, e, want = -SIMPLE_CUBIC_WIGNER / (2.0 * 1.8);
    elec_atoms ion = elec_atoms_from_xyz(1, xyz, q, NULL);
    elec_error err;
    periodic_errors c;
    size_t i;
    test_system_make_neutral(&cube);
    test_system_make_neutral(&slab);
    for (i = 0; i < slab.count; i++) {
        slab.xyz[3 * i] = 8.0 * slab.xyz[3 * i] + 17.0;
        slab.xyz[3 * i + 1] *= 30.0;
        slab.xyz[3 * i + 2] *= 12.0;
    }
    c = periodic_vs_ewald(&cube, &cube_box, NULL, "10 A cube");
    EXPECT(c.energy <= 1e-3 && c.forces <= 1.4e-3 && c.potential <= 1e-3,
           "cube: energy %.3e, forces %.3e, potentials %.3e", c.energy, c.forces, c.potential);
    c = periodic_vs_ewald(&slab, &slab_box, NULL, "8 x 30 x 12 A box, atoms outside");
    EXPECT(c.energy <= 1.2e-3 && c.forces <= 1e-3 && c.potential <= 2.7e-3,
           "box: energy %.3e, forces %.3e, potentials %.3e", c.energy, c.forces, c.potential);
    EXPECT(elec_cpu_msm_periodic_energy(&ion, &tiny, NULL, &e, NULL, NULL, &err) == ELEC_OK,
           "%s", err.message);
    printf("     one ion, 1.8 A cube: %.10f, -xi/2L %.10f: %.2e\n", e, want, fabs(e - want) / -want);
    EXPECT(fabs(e - want) <= 2e-4 * -want, "one ion: %.10f, want %.10f", e, want);
    test_system_free(&cube);
    test_system_free(&slab);
}

TEST(periodic_msm_forces_are_the_gradient_of_its_energy) {
    /* Forces are -dE/dr of the MSM energy itself (not only close to
       Ewald's): central differences, step 1e-5 A, on a few coordinates of
       a 40-atom system in a 12 A cube.  Measured 7e-10 of the largest
       force; held to 1e-8 (the basis is only C1, so a lattice line inside
       the step would make the difference O(step) there). */
    test_system s = test_system_random(40, 12.0, 21);
    elec_atoms atoms = test_system_atoms(&s);
    elec_box box = test_box(12.0, 12.0, 12.0);
    double f[120], e_plus, e_minus, scale = 0.0, worst = 0.0, e;
    const double step = 1e-5;
    elec_error err;
    size_t i, c;
    test_system_make_neutral(&s);
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, NULL, &e, f, NULL, &err) == ELEC_OK, "%s",
           err.message);
    for (i = 0; i < 120; i++) scale = fabs(f[i]) > scale ? fabs(f[i]) : scale;
    for (c = 0; c < 120; c += 13) {
        const double keep = s.xyz[c];
        double numeric;
        s.xyz[c] = keep + step;
        EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, NULL, &e_plus, NULL, NULL, &err) ==
                   ELEC_OK,
               "%s", err.message);
        s.xyz[c] = keep - step;
        EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, NULL, &e_minus, NULL, NULL, &err) ==
                   ELEC_OK,
               "%s", err.message);
        s.xyz[c] = keep;
        numeric = -(e_plus - e_minus) / (2.0 * step);
        if (fabs(numeric - f[c]) > worst) worst = fabs(numeric - f[c]);
    }
    printf("     largest difference %.2e of the largest force %.2e\n", worst, scale);
    EXPECT(worst <= 1e-8 * scale, "forces differ from -dE/dr by %.3e", worst);
    test_system_free(&s);
}

TEST(periodic_msm_refuses_bad_input) {
    double xyz[6] = {1.0, 1.0, 1.0, 3.0, 1.0, 1.0}, q[2] = {1.0, -1.0}, e, f[6], phi[2];
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL);
    elec_box box = test_box(10.0, 10.0, 10.0);
    elec_msm_params p = {0};
    elec_error err;
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, NULL, NULL, f, phi, &err) ==
               ELEC_ERR_INVALID_ARG, "NULL energy");
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, NULL, NULL, &e, f, phi, &err) ==
               ELEC_ERR_INVALID_ARG, "NULL box");
    EXPECT(elec_cpu_msm_periodic_energy(NULL, &box, NULL, &e, f, phi, &err) ==
               ELEC_ERR_INVALID_ARG, "NULL atoms");
    box.length[1] = 0.0;
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, NULL, &e, f, phi, &err) ==
               ELEC_ERR_INVALID_ARG, "zero box edge");
    box.length[1] = -10.0;
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, NULL, &e, f, phi, &err) ==
               ELEC_ERR_INVALID_ARG, "negative box edge");
    box.length[1] = NAN;
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, NULL, &e, f, phi, &err) ==
               ELEC_ERR_INVALID_ARG, "NaN box edge");
    box.length[1] = 10.0;
    p.spacing = 20.0;
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &e, f, phi, &err) ==
               ELEC_ERR_INVALID_ARG, "spacing over the cutoff");
    p.spacing = 0.0;
    p.splitting = 9;
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &e, f, phi, &err) ==
               ELEC_ERR_INVALID_ARG, "splitting 9");
    p.splitting = 0;
    box.length[0] = 1e6; /* 2^19 points along x */
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &e, f, phi, &err) ==
               ELEC_ERR_UNSUPPORTED, "a 1e6 A edge: %s", err.message);
    box.length[0] = 1e5; /* 2^16 points, and stencils widening along y, z */
    box.length[1] = box.length[2] = 1.0;
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &e, f, phi, &err) ==
               ELEC_ERR_UNSUPPORTED, "a 1e5 x 1 x 1 A box: %s", err.message);
    printf("     %s\n", err.message);
    /* a cube and a cutoff of ten edges: refused naming the cutoff too (it
       said a cube was too elongated) */
    box.length[0] = box.length[1] = box.length[2] = 20.0;
    p.cutoff = 100.0;
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &e, f, phi, &err) ==
                   ELEC_ERR_UNSUPPORTED &&
               strstr(err.message, "cutoff 100 A in the box 20 x 20 x 20 A") &&
               strstr(err.message, "a shorter cutoff"),
           "a cutoff of 100 A in a 20 A cube: %s", err.message);
    /* a cutoff of 6,400 box lengths (an audit's: 2e12 cells an atom, hours)
       and a box edge of 1e-200 A (its stencil's reach overflowed a long):
       refused, naming the cutoff */
    box.length[0] = box.length[1] = box.length[2] = 10.0;
    p.spacing = 1000.0;
    p.cutoff = 64000.0;
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &e, f, phi, &err) ==
                   ELEC_ERR_UNSUPPORTED && strstr(err.message, "over 16 times box edge 0"),
           "a cutoff of 6,400 box lengths: %s", err.message);
    printf("     %s\n", err.message);
    p.spacing = p.cutoff = 0.0;
    box.length[0] = 1e-200;
    xyz[0] = xyz[3] = 0.0; /* in the box */
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &e, f, phi, &err) ==
                   ELEC_ERR_UNSUPPORTED && strstr(err.message, "over 16 times box edge 0"),
           "a box edge of 1e-200 A: %s", err.message);
    xyz[0] = 1.0;
    p.cutoff = 0.0;
    box.length[0] = box.length[1] = box.length[2] = 10.0;
    xyz[3] = 11.0; /* the other atom's image */
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &e, f, phi, &err) ==
               ELEC_ERR_INVALID_ARG, "an atom on another's image");
    printf("     %s\n", err.message);
    xyz[3] = 1e5; /* 10^4 boxes away */
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &e, f, phi, &err) ==
               ELEC_ERR_INVALID_ARG, "an atom 10^4 boxes away");
    xyz[3] = 3.0;
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &e, NULL, NULL, &err) == ELEC_OK &&
               e < 0.0, "forces and potentials are optional: %s", err.message);
    atoms.count = 0;
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &e, NULL, NULL, &err) == ELEC_OK &&
               e == 0.0, "no atoms, no energy: %g", e);
}

/* The hierarchy of a box at spacing h and cutoff a (both given, taken as
   given), with its lattices and stencils (elec_cpu.h's private setup). */
static int periodic_hierarchy(double lx, double ly, double lz, double h, double a,
                              elec_msm_interpolation order, elec__pmsm *m) {
    const elec_box box = test_box(lx, ly, lz);
    test_system one = test_system_random(2, lx < ly ? lx : ly, 5);
    elec_atoms atoms = test_system_atoms(&one);
    elec_msm_params p = {0}, r;
    elec_error err;
    int ok;
    p.spacing = h;
    p.cutoff = a;
    p.interpolation = order;
    ok = elec_msm_periodic_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_OK &&
         elec__pmsm_setup(m, &r, &box, &err) == ELEC_OK;
    EXPECT(ok, "%g x %g x %g A, h %g, a %g: %s", lx, ly, lz, h, a, err.message);
    if (!ok) elec__pmsm_free(m);
    test_system_free(&one);
    return ok;
}

static void fill_random(double *v, size_t n, unsigned long long seed) {
    test_rng rng = test_rng_seeded(seed);
    size_t i;
    for (i = 0; i < n; i++) v[i] = 2.0 * test_uniform(&rng) - 1.0;
}

/* One axis of a transfer from fine point i, written out as the method
   states it (independent of elec_cpu.h's parity tables): coarse points M
   = floor(i/2) - (s - 1) + k modulo the coarse count, weights Phi(i/2 -
   M); the identity where the axis has as many coarse points as fine. */
static int reference_transfer_axis(long i, int fine_n, int coarse_n, int order, double *w,
                                   long *index) {
    const int s = elec_msm_support(order);
    int k;
    if (fine_n == coarse_n) {
        w[0] = 1.0;
        index[0] = i;
        return 1;
    }
    for (k = 0; k < 2 * s; k++) {
        const long M = i / 2 - (s - 1) + k;
        w[k] = elec_msm_basis(0.5 * (double)i - (double)M, order);
        index[k] = ((M % coarse_n) + coarse_n) % coarse_n;
    }
    return 2 * s;
}

/* Restriction q_c(M) = sum_m Phi(m/2 - M) q_f(m) and prolongation e_f(m) =
   sum_M Phi(m/2 - M) e_c(M) over the three axes at once. */
static void reference_transfer(const elec__pmsm_level *f, const elec__pmsm_level *c, int order,
                               int restrict_up, const double *in, double *out) {
    long i, j, k;
    memset(out, 0, (restrict_up ? elec__pmsm_points(c) : elec__pmsm_points(f)) * sizeof *out);
    for (k = 0; k < f->n[2]; k++)
        for (j = 0; j < f->n[1]; j++)
            for (i = 0; i < f->n[0]; i++) {
                const long fine[3] = {i, j, k};
                const size_t at = (size_t)(i + f->n[0] * (j + f->n[1] * k));
                double w[3][ELEC__MSM_MAX_WIDTH];
                long index[3][ELEC__MSM_MAX_WIDTH];
                int width[3], axis, a, b, cc;
                for (axis = 0; axis < 3; axis++)
                    width[axis] = reference_transfer_axis(fine[axis], f->n[axis], c->n[axis],
                                                          order, w[axis], index[axis]);
                for (cc = 0; cc < width[2]; cc++)
                    for (b = 0; b < width[1]; b++)
                        for (a = 0; a < width[0]; a++) {
                            const double weight = w[0][a] * w[1][b] * w[2][cc];
                            const size_t to = (size_t)(index[0][a] +
                                                       c->n[0] * (index[1][b] +
                                                                  c->n[1] * index[2][cc]));
                            if (restrict_up) out[to] += weight * in[at];
                            else out[at] += weight * in[to];
                        }
            }
}

static double max_abs(const double *v, size_t n) {
    double most = 0.0;
    size_t i;
    for (i = 0; i < n; i++)
        if (fabs(v[i]) > most) most = fabs(v[i]);
    return most;
}

static double max_difference(const double *a, const double *b, size_t n) {
    double most = 0.0;
    size_t i;
    for (i = 0; i < n; i++)
        if (fabs(a[i] - b[i]) > most) most = fabs(a[i] - b[i]);
    return most;
}

/* Four hierarchies for the lattice tests: a cube whose finest stencil
   fits its lattice (32^3 points, a 21^3 stencil) and folds further up; a
   smaller cube at septic whose stencils fold from the start; an elongated
   box whose short axes fold and come down to one point (the identity
   transfer) while the long one still halves; nonic, the widest weights,
   whose coarse lattices have fewer points than its width (the wrap goes
   round more than once). */
typedef struct hierarchy_case {
    double length[3], h, a;
    elec_msm_interpolation order;
} hierarchy_case;

#define HIERARCHY_COUNT 4
static const hierarchy_case HIERARCHIES[HIERARCHY_COUNT] = {
    {{40.0, 40.0, 40.0}, 1.25, 6.0, ELEC_MSM_CUBIC},
    {{24.0, 24.0, 24.0}, 1.5, 9.0, ELEC_MSM_SEPTIC},
    {{8.0, 30.0, 12.0}, 1.0, 12.0, ELEC_MSM_QUINTIC},
    {{16.0, 16.0, 16.0}, 1.0, 8.0, ELEC_MSM_NONIC},
};

/* One transfer between level l and the next from a random input (seed),
   against the 3-D sums: restriction (restrict_up) from the fine charges
   to the coarse, prolongation from the coarse potentials to the fine;
   input and output keep copies of both sides for the transpose test. */
static void check_transfer(elec__pmsm *m, int l, int order, int restrict_up,
                           unsigned long long seed, int which, double *input, double *output) {
    elec__pmsm_level *f = &m->level[l], *c = &m->level[l + 1];
    const size_t nf = elec__pmsm_points(f), nc = elec__pmsm_points(c);
    const size_t n_in = restrict_up ? nf : nc, n_out = restrict_up ? nc : nf;
    double *in = restrict_up ? f->q : c->e, *out = restrict_up ? c->q : f->e;
    double *want = (double *)malloc(n_out * sizeof *want), scale, off;
    fill_random(in, n_in, seed);
    memcpy(input, in, n_in * sizeof *input);
    memset(out, 0, n_out * sizeof *out);
    elec__pmsm_transfer(m, l, restrict_up);
    reference_transfer(f, c, order, restrict_up, in, want);
    scale = max_abs(want, n_out);
    off = max_difference(out, want, n_out);
    EXPECT(off <= 1e-13 * scale, "case %d, levels %d and %d: %s off by %.2e of %.2e", which, l,
           l + 1, restrict_up ? "restriction" : "prolongation", off, scale);
    memcpy(output, out, n_out * sizeof *output);
    free(want);
}

TEST(periodic_msm_transfers_axis_by_axis_equal_the_3d_sums) {
    /* Restriction and prolongation run one axis at a time (each weight
       Phi(m/2 - M) a product over the axes); against the 3-D sums written
       out, from random lattices, at every level: the same sums in another
       order, so rounding only (held to 1e-13 of the largest value; 2 s
       terms an axis of weights below 1). And the two are each other's
       transpose: <R q, e> = <q, P e>. */
    int c, l;
    for (c = 0; c < HIERARCHY_COUNT; c++) {
        const hierarchy_case *hc = &HIERARCHIES[c];
        elec__pmsm m;
        if (!periodic_hierarchy(hc->length[0], hc->length[1], hc->length[2], hc->h, hc->a,
                                hc->order, &m))
            continue;
        for (l = 0; l + 1 < m.levels; l++) {
            const size_t nf = elec__pmsm_points(&m.level[l]);
            const size_t nc = elec__pmsm_points(&m.level[l + 1]);
            double *q = (double *)malloc(nf * sizeof *q), *rq = (double *)malloc(nc * sizeof *rq);
            double *e = (double *)malloc(nc * sizeof *e), *pe = (double *)malloc(nf * sizeof *pe);
            double restricted = 0.0, prolonged = 0.0;
            size_t i;
            check_transfer(&m, l, (int)hc->order, 1, 11 + (unsigned)l, c, q, rq);
            check_transfer(&m, l, (int)hc->order, 0, 23 + (unsigned)l, c, e, pe);
            for (i = 0; i < nc; i++) restricted += rq[i] * e[i];
            for (i = 0; i < nf; i++) prolonged += q[i] * pe[i];
            EXPECT(fabs(restricted - prolonged) <= 1e-12 * fabs(restricted),
                   "case %d, level %d: <Rq, e> %.15e, <q, Pe> %.15e", c, l, restricted,
                   prolonged);
            free(q);
            free(rq);
            free(e);
            free(pe);
        }
        printf("     %g x %g x %g A, h %g, a %g: %d levels, finest %d x %d x %d\n",
               hc->length[0], hc->length[1], hc->length[2], hc->h, hc->a, m.levels,
               m.level[0].n[0], m.level[0].n[1], m.level[0].n[2]);
        elec__pmsm_free(&m);
    }
}

TEST(periodic_msm_lattice_cutoff_by_fft_equals_the_stencil_sum) {
    /* With FFTW each level's stencil sum e(m) = sum_k K(k) q(m + k) is the
       circular convolution of q with the stencil wrapped onto the lattice,
       taken by FFT where it pays (elec__pmsm_fft_pays).  Against the direct
       sum from random charges, at every level of the four hierarchies
       (stencils inside the lattice, folded, and axes of one point), the FFT
       forced at each: rounding only, O(eps log2 points) of the sum of
       |K| |q| over the stencil (a potential can be far smaller: a nearly
       constant folded stencil on 1 x 2 x 4 points); held to 1e-13 of
       that bound, sum |K| times the largest |q| (measured within 1e-14
       of the largest potential). */
#ifndef ELEC_WITH_FFTW
    SKIP("built without FFTW3: the lattice cutoff is the direct sum only "
         "(apt-get install libfftw3-dev)");
#else
    int c, l;
    for (c = 0; c < HIERARCHY_COUNT; c++) {
        const hierarchy_case *hc = &HIERARCHIES[c];
        elec__pmsm m;
        double worst = 0.0;
        int by_fft = 0;
        elec_error err;
        if (!periodic_hierarchy(hc->length[0], hc->length[1], hc->length[2], hc->h, hc->a,
                                hc->order, &m))
            continue;
        for (l = 0; l < m.levels; l++) {
            elec__pmsm_level *g = &m.level[l];
            const size_t n = elec__pmsm_points(g);
            const size_t stencil = elec__pmsm_stencil_points(&m.shape, l);
            double *direct = (double *)malloc(n * sizeof *direct), off, scale, bound = 0.0;
            size_t k;
            fill_random(g->q, n, 31 + (unsigned)l);
            for (k = 0; k < stencil; k++) bound += fabs(g->stencil[k]);
            bound *= max_abs(g->q, n);
            elec__pmsm_lattice_cutoff(&m, l);
            memcpy(direct, g->e, n * sizeof *direct);
            memset(g->e, 0, n * sizeof *g->e);
            EXPECT(elec__pmsm_lattice_cutoff_fft(&m, l, &err) == ELEC_OK, "%s", err.message);
            off = max_difference(g->e, direct, n);
            scale = max_abs(direct, n);
            EXPECT(off <= 1e-13 * bound,
                   "case %d, level %d (%d x %d x %d): off by %.2e (sum |K| max |q| %.2e)", c, l,
                   g->n[0], g->n[1], g->n[2], off, bound);
            if (off / scale > worst) worst = off / scale;
            by_fft += elec__pmsm_fft_pays(&m, l);
            free(direct);
        }
        printf("     %g x %g x %g A: %d levels (%d by FFT in a call), worst %.1e\n",
               hc->length[0], hc->length[1], hc->length[2], m.levels, by_fft, worst);
        EXPECT(by_fft > 0, "case %d: no level pays for the FFT", c);
        elec__pmsm_free(&m);
    }
#endif
}

TEST(periodic_msm_from_openmp_threads_equals_the_serial_call) {
    /* With FFTW the lattice sums plan transforms, and FFTW's planner is
       global state: elec plans inside one OpenMP critical section
       (elec__fftw_plan_pair; without FFTW the direct sums, the same
       check).  400 calls from four OpenMP threads (20
       charges in a 16 A box, h 0.5, a 4: a 32^3 lattice whose folded
       stencil goes by FFT) each give the serial call's energy, bit for
       bit (without the lock the program crashed in 3 runs of 3). */
#ifndef _OPENMP
    SKIP("built without OpenMP: no threads to call from");
#else
    test_system s = test_system_random(20, 16.0, 29);
    const elec_box box = test_box(16.0, 16.0, 16.0);
    const elec_atoms atoms = test_system_atoms(&s);
    elec_msm_params p = {0};
    elec_error err;
    double serial = 0.0;
    int call, differ = 0, failed = 0;
    test_system_make_neutral(&s);
    p.spacing = 0.5;
    p.cutoff = 4.0;
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &serial, NULL, NULL, &err) == ELEC_OK,
           "%s", err.message);
#pragma omp parallel for num_threads(4) reduction(+ : differ, failed)
    for (call = 0; call < 400; call++) {
        elec_error mine;
        double energy = 0.0;
        if (elec_cpu_msm_periodic_energy(&atoms, &box, &p, &energy, NULL, NULL, &mine) != ELEC_OK)
            failed++;
        else if (energy != serial)
            differ++;
    }
    printf("     400 calls on 4 threads: %d failed, %d differ from %.15e\n", failed, differ,
           serial);
    EXPECT(failed == 0 && differ == 0, "%d failed, %d differ", failed, differ);
    test_system_free(&s);
#endif
}

/* scale multiplies the MSM energy's forces and the periodic MSM's forces
   and potentials as it does the energies (each once came back in e^2/A
   whatever the scale, unnoticed): each call at 1 and at ELEC_COULOMB. */
TEST(scale_multiplies_forces_and_potentials) {
    test_system w = test_system_water(64, 10);
    elec_atoms atoms = test_system_atoms(&w);
    elec_box box = test_system_box(&w);
    const size_t n = w.count;
    double *f1 = (double *)malloc(3 * n * sizeof *f1), *fk = (double *)malloc(3 * n * sizeof *fk);
    double *p1 = (double *)malloc(n * sizeof *p1), *pk = (double *)malloc(n * sizeof *pk);
    double e1 = 0.0, ek = 0.0;
    elec_msm_params p = {0};
    elec_error err;
    EXPECT(elec_cpu_msm_energy(&atoms, &p, &e1, f1, &err) == ELEC_OK, "%s", err.message);
    p.scale = ELEC_COULOMB;
    EXPECT(elec_cpu_msm_energy(&atoms, &p, &ek, fk, &err) == ELEC_OK, "%s", err.message);
    EXPECT(fabs(ek - ELEC_COULOMB * e1) <= 1e-12 * fabs(ek) &&
               test_scaled_alike(fk, f1, 3 * n, ELEC_COULOMB),
           "MSM energy: energy or forces not scaled");
    p.scale = 0.0;
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &e1, f1, p1, &err) == ELEC_OK, "%s",
           err.message);
    p.scale = ELEC_COULOMB;
    EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &ek, fk, pk, &err) == ELEC_OK, "%s",
           err.message);
    EXPECT(fabs(ek - ELEC_COULOMB * e1) <= 1e-12 * fabs(ek) &&
               test_scaled_alike(fk, f1, 3 * n, ELEC_COULOMB) &&
               test_scaled_alike(pk, p1, n, ELEC_COULOMB),
           "periodic MSM: energy, forces or potentials not scaled");
    free(f1);
    free(fk);
    free(p1);
    free(pk);
    test_system_free(&w);
}

int main(void) {
    RUN(scale_multiplies_forces_and_potentials);
    RUN(awkward_lattices_and_far_points_are_safe);
    RUN(bases_interpolate_and_reproduce_polynomials);
    RUN(bases_are_c1_and_match_their_derivatives);
    RUN(softened_one_over_r_joins_smoothly);
    RUN(map_meets_msmpot_target_and_quintic_improves_it);
    RUN(orders_eight_and_ten_go_below_1e_5);
    RUN(map_of_water_and_a_crystal_meets_the_target);
    RUN(energy_and_forces_match_the_direct_sum);
    RUN(forces_are_the_gradient_of_the_energy);
    RUN(energy_lattices_keep_their_levels_as_the_atoms_move);
    RUN(lattices_keep_the_charge_level_by_level);
    RUN(points_and_the_map_leave_a_coincident_atom_out);
    RUN(bad_parameters_are_refused);
    RUN(lattice_sums_of_hours_are_refused);
    RUN(maps_and_points_past_their_range_are_refused);
    RUN(periodic_msm_matches_ewald_for_random_charges_and_water);
    RUN(periodic_msm_with_excluded_pairs_matches_ewald_with_them);
    RUN(periodic_msm_leaves_out_one_image_of_a_pair_half_a_box_apart);
    RUN(periodic_msm_gives_the_madelung_energy_of_rock_salt);
    RUN(periodic_msm_quintic_at_finer_spacing_improves_the_error);
    RUN(periodic_msm_with_a_net_charge_matches_ewald_with_its_background);
    RUN(periodic_msm_sums_images_beyond_the_minimum_image);
    RUN(periodic_msm_forces_are_the_gradient_of_its_energy);
    RUN(periodic_msm_refuses_bad_input);
    RUN(msm_calls_report_progress_and_stop_when_cancelled);
    RUN(periodic_msm_transfers_axis_by_axis_equal_the_3d_sums);
    RUN(periodic_msm_lattice_cutoff_by_fft_equals_the_stencil_sum);
    RUN(periodic_msm_from_openmp_threads_equals_the_serial_call);
    return test_summary();
}
