/* The accuracy knob keeps its promise.  SPME's tolerance is the relative
   RMS force error against the exact Ewald sum; for T = 1e-3 .. 1e-7 on
   five kinds of system the measured error lies in [T/50, T], never grows
   as T tightens, and the resolve's estimate is within a factor of 3 of it.
   Exact Ewald's tolerance bounds its own truncation; MSM's tolerance bounds
   maps and forces; bad tolerances are refused by name, and the exact sum's
   runaway work is refused before it starts.

   The systems are small (216 to 1500 atoms) so that the exact references
   take a second: what the estimates depend on (charge density and
   structure, box shape, net charge) is what varies among them, and the
   same code chooses parameters for a million atoms.  The references are
   the exact sum at tolerance 1e-13, 1e-6 of the tightest T tested. */
#if defined(__unix__) || defined(__APPLE__)
#define _XOPEN_SOURCE 700 /* alarm: a hang ends the program */
#include <unistd.h>
#define TEST_HAS_ALARM 1
#endif
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "tests/test.h"
#include "tests/systems.h"
#include "tests/fftw.h"

/* ------------------------------------------------------------- systems */

/* test_knob_system (tests/systems.h): the five systems. */

/* The exact forces and energy: Ewald at tolerance 1e-13. */
static int exact_ewald(const test_knob_system *c, double *forces, elec_ewald_terms *t) {
    elec_atoms atoms = test_system_atoms(&c->s);
    elec_box box = test_system_box(&c->s);
    elec_ewald_params e = {0};
    elec_error err;
    elec_status s;
    e.tolerance = 1e-13;
    e.excluded_pairs = c->pairs;
    e.excluded_pair_count = c->pair_count;
    s = elec_cpu_ewald(&atoms, &box, &e, t, forces, NULL, &err);
    EXPECT(s == ELEC_OK, "%s: Ewald reference: %s", c->name, err.message);
    return s == ELEC_OK;
}

/* ----------------------------------------------------------------- SPME */

TEST(spme_tolerance_holds_on_five_systems) {
    /* T/50 <= error <= T: the choice aims at 0.4 T and its estimates held
       to a factor of about 2 when it was made; FFT-friendly grid sizes and
       three orders step the error by up to ~1.5.  The error never grows
       as T tightens.  The estimate within a factor of 3 of the measured
       force error; the energy's estimate is an upper-side one (measured
       at most 3 times it: it reads the charges as random, and neutral
       molecules and crystals err less). */
    static const double tolerances[5] = {1e-3, 1e-4, 1e-5, 1e-6, 1e-7};
    int which, k;
    REQUIRE_FFTW();
    for (which = 0; which < 5; which++) {
        test_knob_system c = test_knob_system_make(which);
        elec_atoms atoms = test_system_atoms(&c.s);
        elec_box box = test_system_box(&c.s);
        size_t n = c.s.count;
        double *exact = (double *)malloc(3 * n * sizeof *exact);
        double *f = (double *)malloc(3 * n * sizeof *f), previous = 1.0;
        elec_ewald_terms te, ts;
        memset(&ts, 0, sizeof ts);
        if (!exact_ewald(&c, exact, &te)) {
            free(exact);
            free(f);
            test_knob_system_free(&c);
            continue;
        }
        for (k = 0; k < 5; k++) {
            const double t = tolerances[k];
            elec_spme_params p = {0}, r;
            elec_error err;
            double measured, energy;
            p.tolerance = t;
            p.excluded_pairs = c.pairs;
            p.excluded_pair_count = c.pair_count;
            if (elec_spme_params_resolve(&p, &box, &atoms, &r, &err) != ELEC_OK ||
                elec_cpu_spme(&atoms, &box, &r, &ts, f, NULL, &err) != ELEC_OK) {
                EXPECT(0, "%s at %g: %s", c.name, t, err.message);
                continue;
            }
            measured = test_rel_rms(f, exact, 3 * n);
            energy = fabs(ts.total - te.total);
            printf("     %-14s T %.0e: cutoff %4.1f alpha %.3f order %d grid %3dx%3dx%3d"
                   " | force %.2e (estimate %.2e) energy %.1e (estimate %.1e)\n",
                   c.name, t, r.cutoff, r.alpha, r.order, r.grid[0], r.grid[1], r.grid[2],
                   measured, r.estimate.force, energy, r.estimate.energy);
            EXPECT(measured <= t, "%s: tolerance %g, measured %.3e", c.name, t, measured);
            EXPECT(measured >= t / 50.0, "%s: tolerance %g, measured %.3e: wastefully tight",
                   c.name, t, measured);
            EXPECT(measured <= previous, "%s: tolerance %g measured %.3e, larger than the "
                   "looser tolerance's %.3e", c.name, t, measured, previous);
            EXPECT(r.estimate.force <= 3.0 * measured && measured <= 3.0 * r.estimate.force,
                   "%s at %g: estimate %.3e, measured %.3e", c.name, t, r.estimate.force,
                   measured);
            EXPECT(energy <= 3.0 * r.estimate.energy,
                   "%s at %g: energy error %.3e, estimate %.3e", c.name, t, energy,
                   r.estimate.energy);
            /* the call resolves the same parameters again (to float
               rounding of the thread sums in the statistics) */
            EXPECT(fabs(ts.error - r.estimate.energy) <= 1e-6 * r.estimate.energy,
                   "%s: terms.error %g, estimate %g", c.name, ts.error, r.estimate.energy);
            previous = measured;
        }
        free(exact);
        free(f);
        test_knob_system_free(&c);
    }
}

TEST(spme_odd_orders_count_the_modes_at_the_mesh_edge) {
    /* Odd orders' spline transform vanishes at the zone's edge and their
       error there grows with the grid, an odd grid size's several times an
       even one's (elec__spme_odd_edge).  At alpha h 0.7 to 1, where those
       modes carry nearly all of it, the estimate without them read 0.13 to
       0.49 of the measured error (and order 7 at 5e-4 measured 1.74 times
       the tolerance on 40,000 random charges); with them 0.89 to 1.13,
       held here to [0.7, 1.6].  Then the choice at fixed odd orders, T =
       1e-2 to 5e-4 on the five systems: the error within the tolerance,
       and the estimate from 0.8 to 3 times it (measured 0.96 to 1.9; the
       geometric mean counts the edge modes again where they are small, so
       it errs high; without the edge it read down to 0.41). */
    static const int grids[3] = {24, 25, 21}, orders[2] = {5, 7};
    static const double alphas[3] = {1.0, 1.0, 0.6}, tolerances[3] = {1e-2, 2e-3, 5e-4};
    int which, g, o, k;
    REQUIRE_FFTW();
    for (which = 0; which < 5; which++) {
        test_knob_system c = test_knob_system_make(which);
        elec_atoms atoms = test_system_atoms(&c.s);
        elec_box box = test_system_box(&c.s);
        size_t n = c.s.count;
        double *exact = (double *)malloc(3 * n * sizeof *exact);
        double *f = (double *)malloc(3 * n * sizeof *f);
        elec_ewald_terms te, ts;
        if (!exact_ewald(&c, exact, &te)) {
            free(exact);
            free(f);
            test_knob_system_free(&c);
            continue;
        }
        for (o = 0; o < 2; o++) {
            for (g = 0; which == 0 && g < 3; g++) { /* the edge's own regime */
                elec_spme_params p = {0}, r;
                elec_error err;
                double measured;
                p.order = orders[o];
                p.alpha = alphas[g];
                p.cutoff = 10.0;
                p.grid[0] = p.grid[1] = p.grid[2] = grids[g];
                if (elec_spme_params_resolve(&p, &box, &atoms, &r, &err) != ELEC_OK ||
                    elec_cpu_spme(&atoms, &box, &r, &ts, f, NULL, &err) != ELEC_OK) {
                    EXPECT(0, "order %d grid %d: %s", orders[o], grids[g], err.message);
                    continue;
                }
                measured = test_rel_rms(f, exact, 3 * n);
                printf("     order %d, grid %d, alpha %.1f: measured %.3e, estimate %.3e\n",
                       orders[o], grids[g], alphas[g], measured, r.estimate.force);
                EXPECT(r.estimate.force >= 0.7 * measured && r.estimate.force <= 1.6 * measured,
                       "order %d grid %d alpha %g: estimate %.3e, measured %.3e", orders[o],
                       grids[g], alphas[g], r.estimate.force, measured);
            }
            for (k = 0; k < 3; k++) {
                elec_spme_params p = {0}, r;
                elec_error err;
                double measured;
                p.order = orders[o];
                p.tolerance = tolerances[k];
                p.excluded_pairs = c.pairs;
                p.excluded_pair_count = c.pair_count;
                if (elec_spme_params_resolve(&p, &box, &atoms, &r, &err) != ELEC_OK ||
                    elec_cpu_spme(&atoms, &box, &r, &ts, f, NULL, &err) != ELEC_OK) {
                    EXPECT(0, "%s order %d at %g: %s", c.name, orders[o], tolerances[k],
                           err.message);
                    continue;
                }
                measured = test_rel_rms(f, exact, 3 * n);
                EXPECT(measured <= tolerances[k], "%s order %d: tolerance %g, measured %.3e",
                       c.name, orders[o], tolerances[k], measured);
                EXPECT(r.estimate.force <= 3.0 * measured && r.estimate.force >= 0.8 * measured,
                       "%s order %d at %g: estimate %.3e, measured %.3e", c.name, orders[o],
                       tolerances[k], r.estimate.force, measured);
            }
        }
        free(exact);
        free(f);
        test_knob_system_free(&c);
    }
}

/* The energy's error within [1/3, 1.5] of its estimate, printed. */
static void expect_energy_near_its_estimate(const char *method, double tolerance,
                                            double error, double estimate) {
    printf("     %s at %.0e: energy error %.3e, estimate %.3e\n", method, tolerance, error,
           estimate);
    EXPECT(error <= 1.5 * estimate && error >= estimate / 3.0,
           "%s at %g: energy error %.3e, estimate %.3e", method, tolerance, error, estimate);
}

TEST(energy_estimates_count_a_net_charges_coherent_tail) {
    /* With a net charge Qnet the pairs beyond the cutoff add coherently, a
       mean of (Qnet^2 - sum q^2) pi / (2 V alpha^2) [...]
       (elec__real_energy_error) beside Kolafa and Perram's random part.  1,000 charges of +1
       in a 24 A box: without it the energy erred 2.2 times SPME's
       estimate at 5e-4 and 306 times exact Ewald's at 1e-4; with it 0.98
       to 1.08 and 1.00, held here to at most 1.5 (and not under a third:
       the estimate says how large, not only that it is an upper side). */
    static const double spme_t[2] = {5e-4, 1e-5}, ewald_t[2] = {1e-3, 1e-4};
    test_system s = test_system_random(1000, 24.0, 54);
    elec_atoms atoms;
    elec_box box = test_system_box(&s);
    elec_ewald_params e = {0};
    elec_ewald_terms exact, t;
    elec_error err;
    size_t i;
    int k;
    REQUIRE_FFTW();
    for (i = 0; i < s.count; i++) s.charge[i] = 1.0;
    atoms = test_system_atoms(&s);
    e.tolerance = 1e-12;
    EXPECT(elec_cpu_ewald(&atoms, &box, &e, &exact, NULL, NULL, &err) == ELEC_OK, "%s",
           err.message);
    for (k = 0; k < 2; k++) {
        elec_spme_params p = {0}, r;
        elec_ewald_params q = {0}, rq;
        p.tolerance = spme_t[k];
        if (elec_spme_params_resolve(&p, &box, &atoms, &r, &err) != ELEC_OK ||
            elec_cpu_spme(&atoms, &box, &r, &t, NULL, NULL, &err) != ELEC_OK) {
            EXPECT(0, "SPME at %g: %s", spme_t[k], err.message);
            continue;
        }
        expect_energy_near_its_estimate("SPME", spme_t[k], fabs(t.total - exact.total),
                                        r.estimate.energy);
        q.tolerance = ewald_t[k];
        if (elec_ewald_params_resolve(&q, &box, &atoms, &rq, &err) != ELEC_OK ||
            elec_cpu_ewald(&atoms, &box, &rq, &t, NULL, NULL, &err) != ELEC_OK) {
            EXPECT(0, "Ewald at %g: %s", ewald_t[k], err.message);
            continue;
        }
        expect_energy_near_its_estimate("Ewald", ewald_t[k], fabs(t.total - exact.total),
                                        rq.estimate.energy);
    }
    test_system_free(&s);
}

TEST(spme_perfect_crystals_give_their_madelung_energy_at_the_default) {
    /* At the default tolerance (5e-4) the energies of perfect rock salt
       and caesium chloride: their forces vanish, so the choice rests on
       the floor of the force scale (a tenth of the force between two ions
       at the mean spacing), and the Madelung energy comes out within three
       times the energy estimate (an RMS size, not a bound: CsCl's error is
       1.3 times it) and within 1e-5 of itself. */
    int crystal;
    REQUIRE_FFTW();
    for (crystal = 0; crystal < 2; crystal++) {
        test_system s;
        double madelung, r0;
        elec_atoms atoms;
        elec_box box;
        elec_spme_params r;
        elec_ewald_terms t;
        elec_error err;
        memset(&t, 0, sizeof t);
        if (crystal == 0) {
            s = test_system_nacl(3, 5.64);
            madelung = 1.747564594633182;
            r0 = 2.82;
        } else {
            /* CsCl: Cs+ on a simple cubic lattice of 4.12 A, Cl- at the
               cube centres; 4^3 cells */
            const int cells = 4;
            const double a = 4.12;
            int x, y, z;
            size_t i = 0;
            s = test_system_random(2 * cells * cells * cells, 1.0, 1);
            for (z = 0; z < cells; z++)
                for (y = 0; y < cells; y++)
                    for (x = 0; x < cells; x++) {
                        s.xyz[3 * i] = x * a;
                        s.xyz[3 * i + 1] = y * a;
                        s.xyz[3 * i + 2] = z * a;
                        s.charge[i++] = 1.0;
                        s.xyz[3 * i] = (x + 0.5) * a;
                        s.xyz[3 * i + 1] = (y + 0.5) * a;
                        s.xyz[3 * i + 2] = (z + 0.5) * a;
                        s.charge[i++] = -1.0;
                    }
            s.box[0] = s.box[1] = s.box[2] = cells * a;
            madelung = 1.762674773070988;
            r0 = 0.5 * sqrt(3.0) * a;
        }
        atoms = test_system_atoms(&s);
        box = test_system_box(&s);
        EXPECT(elec_spme_params_resolve(NULL, &box, &atoms, &r, &err) == ELEC_OK, "%s",
               err.message);
        EXPECT(elec_cpu_spme(&atoms, &box, &r, &t, NULL, NULL, &err) == ELEC_OK, "%s",
               err.message);
        {
            double want = -madelung / r0 * (double)(s.count / 2);
            printf("     %s: energy %.10f vs Madelung %.10f, error %.1e (estimate %.1e)\n",
                   crystal ? "CsCl" : "NaCl", t.total, want, fabs(t.total - want),
                   t.error);
            EXPECT(fabs(t.total - want) <= 3.0 * t.error, "%s: %.3e off, estimate %.3e",
                   crystal ? "CsCl" : "NaCl", fabs(t.total - want), t.error);
            EXPECT(fabs(t.total - want) <= 1e-5 * fabs(want), "%s: %.3e relative",
                   crystal ? "CsCl" : "NaCl", fabs(t.total - want) / fabs(want));
        }
        test_system_free(&s);
    }
}

TEST(spme_explicit_settings_override_the_choice) {
    /* alpha, cutoff, order and grid given: kept as they are, the estimate
       still filled; cutoff alone: the rest chosen around it */
    test_system s = test_system_random(300, 20.0, 41);
    elec_atoms atoms = test_system_atoms(&s);
    elec_box box = test_system_box(&s);
    elec_spme_params p = {0}, r;
    elec_error err;
    test_system_make_neutral(&s);
    p.alpha = 0.3;
    p.cutoff = 8.0;
    p.order = 5;
    p.grid[0] = 20;
    p.grid[1] = 21;
    p.grid[2] = 24;
    EXPECT(elec_spme_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_OK, "%s", err.message);
    EXPECT(r.alpha == 0.3 && r.cutoff == 8.0 && r.order == 5 && r.grid[0] == 20 &&
               r.grid[1] == 21 && r.grid[2] == 24,
           "overrides changed: alpha %g cutoff %g order %d grid %d %d %d", r.alpha, r.cutoff,
           r.order, r.grid[0], r.grid[1], r.grid[2]);
    EXPECT(r.estimate.force > 0.0 && r.estimate.force_rms > 0.0, "no estimate");
    memset(&p, 0, sizeof p);
    p.cutoff = 7.0;
    p.tolerance = 1e-6;
    EXPECT(elec_spme_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_OK, "%s", err.message);
    EXPECT(r.cutoff == 7.0 && r.estimate.force <= 0.4e-6 * 1.0001,
           "cutoff %g, estimate %g", r.cutoff, r.estimate.force);
    test_system_free(&s);
}

TEST(spme_refuses_tolerances_it_cannot_meet) {
    test_system s = test_system_random(200, 16.0, 42);
    elec_atoms atoms = test_system_atoms(&s);
    elec_box box = test_system_box(&s);
    elec_spme_params p = {0}, r;
    elec_error err;
    static const double bad[4] = {-1e-4, 1.0, 2.0, 1e-13};
    int k;
    test_system_make_neutral(&s);
    for (k = 0; k < 4; k++) {
        p.tolerance = bad[k];
        EXPECT(elec_spme_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_ERR_INVALID_ARG,
               "tolerance %g accepted", bad[k]);
        printf("     tolerance %g: %s\n", bad[k], err.message);
    }
    p.tolerance = nan("");
    EXPECT(elec_spme_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_ERR_INVALID_ARG,
           "tolerance NaN accepted");
    /* a box 4 A across limits the cutoff to 2 A: 1e-10 needs alpha ~ 2.5
       /A and so a spacing of ~0.1 A, past ELEC_SPME_MAX_GRID_AXIS along a
       2000 A edge */
    p.tolerance = 1e-10;
    {
        double xyz[6] = {0.5, 0.5, 0.5, 2.5, 2.0, 1500.0}, q[2] = {1.0, -1.0};
        elec_atoms pair = elec_atoms_from_xyz(2, xyz, q, NULL);
        elec_box slab = {{4.0, 4.0, 2000.0}};
        EXPECT(elec_spme_params_resolve(&p, &slab, &pair, &r, &err) == ELEC_ERR_UNSUPPORTED,
               "1e-10 in a 4 x 4 x 2000 A box accepted (grid %d %d %d)", r.grid[0], r.grid[1],
               r.grid[2]);
        printf("     %s\n", err.message);
    }
    test_system_free(&s);
}

TEST(estimates_refuse_charges_too_small_for_their_sums) {
    /* The estimates' sums go as the charges' fourth power: below about
       1e-77 e they fell under double's normal range, and SPME's choice
       took 4 grid points and order 4 for charges of 1e-90 e, its forces
       42 % off with ELEC_OK (an audit).  200 random charges scaled by
       1e-70 (taken, the choice the same as at 1) and by 1e-80 and 1e-90
       (refused by name, SPME and Ewald alike). */
    static const double scales[3] = {1e-70, 1e-80, 1e-90};
    test_system s = test_system_random(200, 16.0, 43);
    elec_box box = test_system_box(&s);
    elec_atoms atoms;
    elec_spme_params p = {0}, unit, r;
    elec_ewald_params e = {0}, er;
    elec_error err;
    size_t i;
    int k;
    test_system_make_neutral(&s);
    atoms = test_system_atoms(&s);
    p.tolerance = e.tolerance = 1e-4;
    EXPECT(elec_spme_params_resolve(&p, &box, &atoms, &unit, &err) == ELEC_OK, "%s",
           err.message);
    for (k = 0; k < 3; k++) {
        elec_status sp, ew;
        for (i = 0; i < s.count; i++) s.charge[i] *= k == 0 ? scales[0] : scales[k] / scales[k - 1];
        atoms = test_system_atoms(&s);
        sp = elec_spme_params_resolve(&p, &box, &atoms, &r, &err);
        printf("     charges x %.0e: SPME %s", scales[k], elec_status_string(sp));
        if (sp != ELEC_OK) printf(" (%s)", err.message);
        ew = elec_ewald_params_resolve(&e, &box, &atoms, &er, &err);
        printf(", Ewald %s\n", elec_status_string(ew));
        if (k == 0)
            EXPECT(sp == ELEC_OK && ew == ELEC_OK && r.grid[0] == unit.grid[0] &&
                       r.order == unit.order && r.alpha == unit.alpha,
                   "1e-70 e: SPME %d (grid %d, order %d), Ewald %d", (int)sp, r.grid[0],
                   r.order, (int)ew);
        else
            EXPECT(sp == ELEC_ERR_INVALID_ARG && ew == ELEC_ERR_INVALID_ARG &&
                       strstr(err.message, "below double's range"),
                   "%.0e e: SPME %d (grid %d, order %d), Ewald %d", scales[k], (int)sp,
                   r.grid[0], r.order, (int)ew);
    }
    {
        /* Ewald with alpha and kmax given chooses nothing: the sum takes
           such charges, the unit charges' energy times 1e-180 (a review:
           the refusal first hit these too) */
        elec_ewald_params fixed = {0};
        elec_ewald_terms tiny, unit_terms;
        fixed.alpha = 0.3;
        fixed.cutoff = 7.9;
        fixed.kmax[0] = fixed.kmax[1] = fixed.kmax[2] = 8;
        EXPECT(elec_cpu_ewald(&atoms, &box, &fixed, &tiny, NULL, NULL, &err) == ELEC_OK,
               "1e-90 e, alpha and kmax given: %s", err.message);
        for (i = 0; i < s.count; i++) s.charge[i] /= scales[2];
        atoms = test_system_atoms(&s);
        EXPECT(elec_cpu_ewald(&atoms, &box, &fixed, &unit_terms, NULL, NULL, &err) == ELEC_OK,
               "%s", err.message);
        printf("     Ewald, alpha and kmax given: %.6e at 1e-90 e, %.6e x 1e-180 at 1 e\n",
               tiny.total, unit_terms.total);
        EXPECT(fabs(tiny.total - 1e-180 * unit_terms.total) <= 1e-12 * fabs(1e-180 * unit_terms.total),
               "1e-90 e: %.9e, want %.9e", tiny.total, 1e-180 * unit_terms.total);
    }
    test_system_free(&s);
}

/* ---------------------------------------------------------------- Ewald */

TEST(ewald_tolerance_bounds_its_truncation) {
    /* The exact sum at T against itself at 1e-13: the truncation error at
       most T (it runs well under: kmax is a box around the sphere the
       estimate needs, and alpha meets its half of T in quadrature). */
    static const double tolerances[4] = {1e-4, 1e-6, 1e-8, 1e-10};
    test_knob_system c = test_knob_system_make(2);
    elec_atoms atoms = test_system_atoms(&c.s);
    elec_box box = test_system_box(&c.s);
    size_t n = c.s.count;
    double *exact = (double *)malloc(3 * n * sizeof *exact);
    double *f = (double *)malloc(3 * n * sizeof *f);
    elec_ewald_terms te, t;
    int k;
    if (exact_ewald(&c, exact, &te))
        for (k = 0; k < 4; k++) {
            elec_ewald_params p = {0}, r;
            elec_error err;
            double measured;
            p.tolerance = tolerances[k];
            p.excluded_pairs = c.pairs;
            p.excluded_pair_count = c.pair_count;
            EXPECT(elec_ewald_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_OK, "%s",
                   err.message);
            EXPECT(elec_cpu_ewald(&atoms, &box, &p, &t, f, NULL, &err) == ELEC_OK, "%s",
                   err.message);
            measured = test_rel_rms(f, exact, 3 * n);
            printf("     water, Ewald T %.0e: alpha %.3f kmax %d %d %d: force %.2e "
                   "(estimate %.2e), energy %.1e (estimate %.1e)\n",
                   tolerances[k], r.alpha, r.kmax[0], r.kmax[1], r.kmax[2], measured,
                   r.estimate.force, fabs(t.total - te.total), r.estimate.energy);
            EXPECT(measured <= tolerances[k], "T %g: measured %.3e", tolerances[k], measured);
            EXPECT(r.estimate.force <= tolerances[k], "T %g: estimate %.3e", tolerances[k],
                   r.estimate.force);
        }
    free(exact);
    free(f);
    test_knob_system_free(&c);
}

TEST(spme_tolerance_holds_for_a_droplet_in_a_large_box) {
    /* 125 SPC/E waters (15.5 A across) in the corner of a 45 A box: 4 % of
       it.  The estimates that took the box's mean density read 3 times too
       low there, and SPME missed T = 1e-3 .. 1e-6 by 1.5 to 3.1 times; they
       now divide by the volume the charges crowd into (elec.h,
       elec__charge_stats_of).  The truth: exact Ewald at 1e-13. */
    static const double tolerances[4] = {1e-3, 1e-4, 1e-5, 1e-6};
    test_system s;
    size_t *pairs, i, n;
    double *exact, *f;
    elec_atoms atoms;
    elec_box box;
    elec_ewald_params e = {0};
    elec_ewald_terms t;
    elec_error err;
    int k;
    REQUIRE_FFTW();
    s = test_system_water(125, 113);
    pairs = test_water_exclusions(125);
    n = s.count;
    exact = (double *)malloc(3 * n * sizeof *exact);
    f = (double *)malloc(3 * n * sizeof *f);
    for (i = 0; i < 3 * n; i++) s.xyz[i] += 1.0;
    s.box[0] = s.box[1] = s.box[2] = 45.0;
    atoms = test_system_atoms(&s);
    box = test_system_box(&s);
    e.tolerance = 1e-13;
    e.excluded_pairs = pairs;
    e.excluded_pair_count = 125 * 3;
    EXPECT(elec_cpu_ewald(&atoms, &box, &e, &t, exact, NULL, &err) == ELEC_OK, "%s",
           err.message);
    for (k = 0; k < 4 && !test__current_failed; k++) {
        elec_spme_params p = {0}, r;
        double measured;
        p.tolerance = tolerances[k];
        p.excluded_pairs = pairs;
        p.excluded_pair_count = 125 * 3;
        EXPECT(elec_spme_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_OK, "%s",
               err.message);
        EXPECT(elec_cpu_spme(&atoms, &box, &r, &t, f, NULL, &err) == ELEC_OK, "%s",
               err.message);
        measured = test_rel_rms(f, exact, 3 * n);
        printf("     droplet T %.0e: cutoff %4.1f alpha %.3f order %d grid %d | force %.2e "
               "(estimate %.2e)\n", tolerances[k], r.cutoff, r.alpha, r.order, r.grid[0],
               measured, r.estimate.force);
        EXPECT(measured <= tolerances[k], "T %g: measured %.3e", tolerances[k], measured);
    }
    free(exact);
    free(f);
    free(pairs);
    test_system_free(&s);
}

TEST(ewald_tolerance_holds_for_a_crystal_near_its_sites) {
    /* Rock salt (4^3 cells) with its ions displaced 0.01 A RMS: RMS force
       3.2e-3 e^2/A^2, a fortieth of the force between two RMS charges at
       the mean spacing.  With the force scale floored at a tenth of that,
       relative errors read 3.9 times low and exact Ewald missed T = 1e-3 ..
       1e-7 by 1.13 to 1.55 times; at a hundredth the forces' own scale
       counts.  The truth: exact Ewald at 1e-14 with an 18 A cutoff. */
    test_system s = test_system_nacl(4, 5.64);
    size_t n;
    double *exact, *f;
    elec_atoms atoms;
    elec_box box;
    elec_ewald_params e = {0};
    elec_ewald_terms t;
    elec_error err;
    int k;
    test_system_displace(&s, 0.01, 110);
    n = s.count;
    atoms = test_system_atoms(&s);
    box = test_system_box(&s);
    exact = (double *)malloc(3 * n * sizeof *exact);
    f = (double *)malloc(3 * n * sizeof *f);
    e.tolerance = 1e-14;
    e.cutoff = 18.0;
    EXPECT(elec_cpu_ewald(&atoms, &box, &e, &t, exact, NULL, &err) == ELEC_OK, "%s",
           err.message);
    for (k = 0; k < 5 && !test__current_failed; k++) {
        const double tolerance = pow(10.0, -3 - k);
        elec_ewald_params p = {0}, r;
        double measured;
        p.tolerance = tolerance;
        EXPECT(elec_ewald_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_OK, "%s",
               err.message);
        EXPECT(elec_cpu_ewald(&atoms, &box, &p, &t, f, NULL, &err) == ELEC_OK, "%s",
               err.message);
        measured = test_rel_rms(f, exact, 3 * n);
        printf("     rock salt 0.01 A, Ewald T %.0e: alpha %.3f kmax %d | force %.2e "
               "(estimate %.2e, force scale %.2e)\n", tolerance, r.alpha, r.kmax[0], measured,
               r.estimate.force, r.estimate.force_rms);
        EXPECT(measured <= tolerance, "T %g: measured %.3e", tolerance, measured);
    }
    free(exact);
    free(f);
    test_system_free(&s);
}

TEST(ewald_and_spme_measure_a_coherent_real_space_tail) {
    /* An ionic double layer (400 ions, sheets of +1 and -1 each 6 A thick,
       20 x 20 x 60 A): the pairs beyond the cutoff add coherently, and
       Kolafa and Perram's estimate, which takes them as random, read the
       real-space error 1.8 to 4 times low; exact Ewald's forces erred 2.99
       times the tolerance at 1e-2 and 1.27 at 1e-6 (an audit, 2026-12-05).
       The resolves measure the tail now (elec__real_tail_measure): both
       methods within T.  The truth: exact Ewald at 1e-13, 18 A cutoff. */
    static const double tolerances[3] = {1e-2, 1e-4, 1e-6};
    test_system s = test_system_double_layer(400, 20.0, 60.0, 6.0, 12);
    elec_atoms atoms = test_system_atoms(&s);
    elec_box box = test_system_box(&s);
    size_t n = s.count;
    double *exact = (double *)malloc(3 * n * sizeof *exact);
    double *f = (double *)malloc(3 * n * sizeof *f);
    elec_ewald_params e = {0};
    elec_ewald_terms t;
    elec_error err;
    int k;
    REQUIRE_FFTW();
    e.tolerance = 1e-13;
    e.cutoff = 18.0;
    EXPECT(elec_cpu_ewald(&atoms, &box, &e, &t, exact, NULL, &err) == ELEC_OK, "%s",
           err.message);
    for (k = 0; k < 3 && !test__current_failed; k++) {
        elec_ewald_params p = {0}, r;
        elec_spme_params q = {0}, rq;
        double ewald, spme;
        p.tolerance = q.tolerance = tolerances[k];
        EXPECT(elec_ewald_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_OK &&
                   elec_cpu_ewald(&atoms, &box, &r, &t, f, NULL, &err) == ELEC_OK,
               "Ewald at %g: %s", tolerances[k], err.message);
        ewald = test_rel_rms(f, exact, 3 * n);
        EXPECT(elec_spme_params_resolve(&q, &box, &atoms, &rq, &err) == ELEC_OK &&
                   elec_cpu_spme(&atoms, &box, &rq, &t, f, NULL, &err) == ELEC_OK,
               "SPME at %g: %s", tolerances[k], err.message);
        spme = test_rel_rms(f, exact, 3 * n);
        printf("     double layer, T %.0e: Ewald alpha %.3f force %.2e (estimate %.2e, real "
               "%.2e); SPME alpha %.3f cutoff %.0f force %.2e (estimate %.2e)\n",
               tolerances[k], r.alpha, ewald, r.estimate.force, r.estimate.force_real,
               rq.alpha, rq.cutoff, spme, rq.estimate.force);
        EXPECT(ewald <= tolerances[k], "Ewald at %g: %.3e", tolerances[k], ewald);
        EXPECT(spme <= tolerances[k], "SPME at %g: %.3e", tolerances[k], spme);
    }
    free(exact);
    free(f);
    test_system_free(&s);
}

TEST(ewald_energy_estimate_measures_a_crystals_tail) {
    /* Rock salt (3^3 cells) with its ions displaced 0.1 A: the energy's
       real-space tail is the Madelung sum's, coherent, and exact Ewald's
       energy erred 16 to 27 times its estimate at 1e-2 to 1e-6 (an audit,
       2026-12-05); with the tail measured (every atom: 216), within 1.5
       times it and not under a third.  The truth: exact Ewald at 1e-14,
       18 A cutoff. */
    test_system s = test_system_nacl(3, 5.64);
    elec_atoms atoms;
    elec_box box;
    elec_ewald_params e = {0};
    elec_ewald_terms exact, t;
    elec_error err;
    int k;
    test_system_displace(&s, 0.1, 111);
    atoms = test_system_atoms(&s);
    box = test_system_box(&s);
    e.tolerance = 1e-14;
    e.cutoff = 18.0;
    EXPECT(elec_cpu_ewald(&atoms, &box, &e, &exact, NULL, NULL, &err) == ELEC_OK, "%s",
           err.message);
    for (k = 0; k < 3 && !test__current_failed; k++) {
        const double tolerance = pow(10.0, -2 - 2 * k);
        elec_ewald_params p = {0}, r;
        p.tolerance = tolerance;
        EXPECT(elec_ewald_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_OK &&
                   elec_cpu_ewald(&atoms, &box, &r, &t, NULL, NULL, &err) == ELEC_OK,
               "Ewald at %g: %s", tolerance, err.message);
        expect_energy_near_its_estimate("Ewald, rock salt 0.1 A", tolerance,
                                        fabs(t.total - exact.total), r.estimate.energy);
    }
    test_system_free(&s);
}

TEST(ewald_energy_estimate_of_sampled_random_charges_is_their_rms_size) {
    /* Past 512 atoms the tail is measured on a sample.  Its energy, n
       times the sample's mean plus two standard errors, read n times the
       sample's error: no measure of a sum whose terms cancel (random
       charges' tail grows as sqrt(n)): 3,000 random charges' exact Ewald
       energies erred 0.19 and 0.18 of it (RMS over four sets, 5e-4 and
       1e-5), 12,000 charges' 1/650 (a review).  Where the mean does not
       stand out of its error the estimate is Kolafa and Perram's, an RMS
       size: the RMS error over three sets within a factor of 3 of the RMS
       estimate either way (measured 1.1 to 1.2 over four).  Three
       thousand atoms, as a sample of 512 must be a small part of them
       (not under valgrind's -DTEST_SMALL: about 7 s here). */
    static const double tolerances[2] = {5e-4, 1e-5};
    const size_t n = 3000;
    int k, seed;
#ifdef TEST_SMALL
    SKIP("3,000 atoms' exact Ewald sums, three times (not in the -DTEST_SMALL build)");
#endif
    for (k = 0; k < 2 && !test__current_failed; k++) {
        double errors2 = 0.0, estimates2 = 0.0, ratio;
        for (seed = 0; seed < 3; seed++) {
            test_system s = test_system_random(n, cbrt((double)n / 0.1), 100 + seed);
            elec_atoms atoms = test_system_atoms(&s);
            elec_box box = test_system_box(&s);
            elec_ewald_params e = {0}, p = {0}, r;
            elec_ewald_terms exact, t;
            elec_error err;
            e.tolerance = 1e-10;
            p.tolerance = tolerances[k];
            EXPECT(elec_cpu_ewald(&atoms, &box, &e, &exact, NULL, NULL, &err) == ELEC_OK &&
                       elec_ewald_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_OK &&
                       elec_cpu_ewald(&atoms, &box, &r, &t, NULL, NULL, &err) == ELEC_OK,
                   "seed %d at %g: %s", 100 + seed, tolerances[k], err.message);
            errors2 += (t.total - exact.total) * (t.total - exact.total);
            estimates2 += r.estimate.energy * r.estimate.energy;
            test_system_free(&s);
        }
        ratio = sqrt(errors2 / estimates2);
        printf("     %zu random charges, Ewald at %.0e: RMS energy error %.3e over three sets, "
               "%.2f of the RMS estimate\n", n, tolerances[k], sqrt(errors2 / 3.0), ratio);
        EXPECT(ratio <= 3.0 && ratio >= 1.0 / 3.0, "at %g: RMS error %.2f of the RMS estimate",
               tolerances[k], ratio);
    }
}

static int count_and_cancel(double fraction, void *user) {
    int *calls = (int *)user;
    (*calls)++;
    return fraction >= 0.5; /* stop halfway */
}

static int count_only(double fraction, void *user) {
    double *last = (double *)user;
    if (fraction < last[0]) last[1] = 1.0; /* went backwards */
    last[0] = fraction;
    last[2] += 1.0;
    return 0;
}

TEST(ewald_runaway_work_is_refused_and_long_sums_report_progress) {
    test_system s = test_system_random(2000, 30.0, 43);
    elec_atoms atoms = test_system_atoms(&s);
    elec_box box = test_system_box(&s);
    elec_ewald_params p = {0};
    elec_ewald_terms t;
    elec_error err;
    double track[3] = {0.0, 0.0, 0.0};
    int calls = 0;
    test_system_make_neutral(&s);
    /* below the floor: refused at once */
    p.tolerance = 1e-300;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &t, NULL, NULL, &err) == ELEC_ERR_INVALID_ARG,
           "tolerance 1e-300 accepted");
    printf("     1e-300: %s\n", err.message);
    /* a sum past ELEC_EWALD_MAX_WORK: refused before it starts, saying how
       long it would take (here the real-space images of a long cutoff) */
    p.tolerance = 1e-12;
    p.cutoff = 1000.0;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &t, NULL, NULL, &err) == ELEC_ERR_UNSUPPORTED &&
               strstr(err.message, "s on one core") != NULL,
           "cutoff 1000 A accepted: %s", err.message);
    printf("     cutoff 1000 A: %s\n", err.message);
    p.cutoff = 0.0;
    p.kmax[0] = p.kmax[1] = p.kmax[2] = 1000;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &t, NULL, NULL, &err) == ELEC_ERR_UNSUPPORTED,
           "2001^3 vectors accepted");
    printf("     kmax 1000: %s\n", err.message);
    /* progress: increasing fractions up to 1, and a cancel honoured */
    memset(p.kmax, 0, sizeof p.kmax);
    p.tolerance = 1e-8;
    p.progress = count_only;
    p.progress_user = track;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &t, NULL, NULL, &err) == ELEC_OK, "%s",
           err.message);
    printf("     progress: %.0f reports, last %.3f\n", track[2], track[0]);
    EXPECT(track[2] >= 10.0 && track[1] == 0.0 && track[0] == 1.0,
           "reports %.0f, last %g, backwards %g", track[2], track[0], track[1]);
    p.progress = count_and_cancel;
    p.progress_user = &calls;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &t, NULL, NULL, &err) == ELEC_ERR_CANCELLED,
           "cancel not honoured");
    printf("     cancelled: %s\n", err.message);
    test_system_free(&s);
}

/* At its first report, a rock-salt cell's Ewald energy computed inside
   the callback (elec_cpu_ewald within elec_cpu_ewald). */
typedef struct nested_ewald {
    int reports;
    elec_status inner;
    double madelung;
} nested_ewald;

static int ewald_inside_progress(double fraction, void *user) {
    nested_ewald *nest = (nested_ewald *)user;
    (void)fraction;
    if (nest->reports++ == 0) {
        test_system salt = test_system_nacl(1, 2.0);
        elec_atoms atoms = test_system_atoms(&salt);
        elec_box box = test_system_box(&salt);
        elec_ewald_params p = {0};
        elec_ewald_terms t;
        elec_error err;
        p.tolerance = 1e-10;
        nest->inner = elec_cpu_ewald(&atoms, &box, &p, &t, NULL, NULL, &err);
        nest->madelung = -t.total / 4.0; /* 4 ion pairs, r0 = 1 A */
        test_system_free(&salt);
    }
    return 0;
}

static int stop_at_the_last_report(double fraction, void *user) {
    (void)user;
    return fraction >= 1.0;
}

TEST(ewald_progress_may_call_ewald_and_stop_at_its_last_report) {
    /* The callback ran inside a named critical section: an Ewald sum in
       the callback waited on it for ever (an audit), and a stop asked at
       the last report (1.0) was ignored, unlike every other method's.
       Where a hang would come back, SIGALRM ends the program (60 s; the
       sums take well under a second). */
    test_system s = test_system_random(300, 15.0, 44);
    elec_atoms atoms = test_system_atoms(&s);
    elec_box box = test_system_box(&s);
    elec_ewald_params p = {0};
    elec_ewald_terms t;
    elec_error err;
    nested_ewald nest = {0, ELEC_ERR_INVALID_ARG, 0.0};
    double forces[3];
    const size_t which[1] = {7};
    test_system_make_neutral(&s);
#ifdef TEST_HAS_ALARM
    alarm(60);
#endif
    p.tolerance = 1e-6;
    p.progress = ewald_inside_progress;
    p.progress_user = &nest;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &t, NULL, NULL, &err) == ELEC_OK, "%s",
           err.message);
    printf("     an Ewald sum inside the callback: status %d, Madelung %.10f; %d reports\n",
           (int)nest.inner, nest.madelung, nest.reports);
    EXPECT(nest.inner == ELEC_OK && fabs(nest.madelung - 1.747564594633) <= 1e-8,
           "inner sum: status %d, Madelung %.12f", (int)nest.inner, nest.madelung);
    p.progress = stop_at_the_last_report;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &t, NULL, NULL, &err) == ELEC_ERR_CANCELLED &&
               err.status == ELEC_ERR_CANCELLED,
           "a stop at 1.0: status %d (%s)", (int)err.status, err.message);
    EXPECT(elec_cpu_ewald_forces_at(&atoms, &box, &p, which, 1, forces, &err) ==
               ELEC_ERR_CANCELLED,
           "forces at an atom, a stop at 1.0: %s", err.message);
#ifdef TEST_HAS_ALARM
    alarm(0);
#endif
    test_system_free(&s);
}

TEST(ewald_forces_at_chosen_atoms_match_the_whole_sum) {
    /* elec_cpu_ewald_forces_at (the large systems' reference): the same
       forces as the whole sum at the chosen atoms, exclusions included;
       the sums differ in order only (1e-12). */
    test_knob_system c = test_knob_system_make(2);
    elec_atoms atoms = test_system_atoms(&c.s);
    elec_box box = test_system_box(&c.s);
    size_t n = c.s.count, which[5] = {0, 1, 2, 500, 1028}, k;
    double *all = (double *)malloc(3 * n * sizeof *all), some[15], want[15];
    elec_ewald_params p = {0};
    elec_ewald_terms t;
    elec_error err;
    p.tolerance = 1e-10;
    p.scale = ELEC_COULOMB;
    p.excluded_pairs = c.pairs;
    p.excluded_pair_count = c.pair_count;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &t, all, NULL, &err) == ELEC_OK, "%s", err.message);
    EXPECT(elec_cpu_ewald_forces_at(&atoms, &box, &p, which, 5, some, &err) == ELEC_OK, "%s",
           err.message);
    for (k = 0; k < 5; k++) memcpy(want + 3 * k, all + 3 * which[k], 3 * sizeof *want);
    printf("     forces at 5 atoms vs the whole sum: %.1e relative\n",
           test_rel_rms(some, want, 15));
    EXPECT(test_rel_rms(some, want, 15) <= 1e-12, "relative %.3e", test_rel_rms(some, want, 15));
    which[0] = n;
    EXPECT(elec_cpu_ewald_forces_at(&atoms, &box, &p, which, 5, some, &err) ==
               ELEC_ERR_INVALID_ARG, "atom %zu of %zu accepted", n, n);
    {
        /* two atoms at one place, as elec_cpu_ewald refuses them (it left
           the pair out and gave finite forces: an audit), and an atom a
           box length from another (its image coincides) */
        double xyz[9] = {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 4.0, 5.0, 6.0}, q[3] = {1.0, -1.0, 0.5};
        const size_t first = 0;
        elec_atoms three = elec_atoms_from_xyz(3, xyz, q, NULL);
        elec_box ten = {{10.0, 10.0, 10.0}};
        elec_ewald_params e = {0};
        int k;
        for (k = 0; k < 2; k++) {
            const elec_status got = elec_cpu_ewald_forces_at(&three, &ten, &e, &first, 1, some, &err);
            EXPECT(got == ELEC_ERR_INVALID_ARG && strstr(err.message, "coincide"),
                   "atoms %s accepted: %d %s", k ? "an image apart" : "at one place", (int)got,
                   err.message);
            xyz[3] = 11.0;
        }
    }
    free(all);
    test_knob_system_free(&c);
}

TEST(ewald_refuses_bad_tolerances) {
    double xyz[6] = {1, 1, 1, 3, 3, 3}, q[2] = {1, -1};
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL);
    elec_box box = {{10, 10, 10}};
    elec_ewald_params p = {0}, r;
    elec_error err;
    static const double bad[4] = {-1.0, 1.0, 1e-15, 5.0};
    int k;
    EXPECT(elec_ewald_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_OK &&
               r.tolerance == 1e-12, "default tolerance %g", r.tolerance);
    for (k = 0; k < 4; k++) {
        p.tolerance = bad[k];
        EXPECT(elec_ewald_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_ERR_INVALID_ARG,
               "tolerance %g accepted", bad[k]);
    }
    p.tolerance = nan("");
    EXPECT(elec_ewald_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_ERR_INVALID_ARG,
           "NaN accepted");
}

/* ------------------------------------------------------------------ MSM */

static const char *msm_name(elec_msm_interpolation i) {
    return i == ELEC_MSM_CUBIC ? "cubic" : i == ELEC_MSM_QUINTIC ? "quintic"
                                : i == ELEC_MSM_SEPTIC ? "septic" : "nonic";
}

TEST(msm_tolerance_holds_for_maps_and_forces) {
    /* T = 1e-3, 1e-4, 1e-5: maps of 600 random charges (neutral, 24 A
       cube) and of 300 water molecules against the double direct sum; the
       forces of the same atoms against the direct pair forces, and the
       water's periodic forces against exact Ewald; each at most T (the
       choice aims at a third of T by a fit that held the measured table
       within 0.87 to 1.2; water's maps err 2.4 times more than the
       table's random charges).  Maps count their points per atom in the
       cost, so they choose otherwise than forces do. */
    static const double tolerances[3] = {1e-3, 1e-4, 1e-5};
    test_system random = test_system_random(600, 24.0, 51);
    test_system water = test_system_water(300, 52);
    elec_atoms ra, wa = test_system_atoms(&water);
    elec_box wbox = test_system_box(&water);
    const int dims[3] = {21, 23, 22};
    elec_lattice rl, wl;
    double *ref_r, *ref_w, *rf = (double *)malloc(3 * random.count * sizeof *rf);
    double *wf = (double *)malloc(3 * water.count * sizeof *wf);
    double *pf = (double *)malloc(3 * water.count * sizeof *pf);
    double *got = (double *)malloc(3 * water.count * sizeof *got);
    double *got_r = (double *)malloc(3 * random.count * sizeof *got_r);
    float *map;
    elec_ewald_terms te;
    elec_error err;
    double energy;
    size_t points;
    int k;
    test_system_make_neutral(&random);
    ra = test_system_atoms(&random);
    rl = test_lattice_around(random.box, dims, 2.0);
    wl = test_lattice_around(water.box, dims, 2.0);
    points = elec_lattice_size(&rl);
    ref_r = (double *)malloc(points * sizeof *ref_r);
    ref_w = (double *)malloc(points * sizeof *ref_w);
    map = (float *)malloc(points * sizeof *map);
    EXPECT(elec_cpu_dcs_map_double(&ra, &rl, NULL, ref_r, &err) == ELEC_OK, "%s", err.message);
    EXPECT(elec_cpu_dcs_map_double(&wa, &wl, NULL, ref_w, &err) == ELEC_OK, "%s", err.message);
    EXPECT(elec_cpu_coulomb_energy(&ra, 1.0, &energy, rf, &err) == ELEC_OK, "%s", err.message);
    EXPECT(elec_cpu_coulomb_energy(&wa, 1.0, &energy, wf, &err) == ELEC_OK, "%s", err.message);
    {
        elec_ewald_params e = {0};
        e.tolerance = 1e-12;
        EXPECT(elec_cpu_ewald(&wa, &wbox, &e, &te, pf, NULL, &err) == ELEC_OK, "%s",
               err.message);
    }
    for (k = 0; k < 3; k++) {
        elec_msm_params p = {0}, r, m, w;
        double e_rmap, e_wmap, e_rf, e_wf, e_pf;
        p.tolerance = tolerances[k];
        EXPECT(elec_msm_params_resolve(&p, 1.0, &r, &err) == ELEC_OK, "%s", err.message);
        EXPECT(elec_msm_periodic_params_resolve(&p, &wbox, &wa, &w, &err) == ELEC_OK, "%s",
               err.message);
        EXPECT(elec_msm_params_resolve(&p, (double)points / (double)random.count, &m, &err) ==
                   ELEC_OK, "%s", err.message);
        EXPECT(elec_cpu_msm_map(&ra, &rl, &p, map, &err) == ELEC_OK, "%s", err.message);
        e_rmap = test_rel_rms_float(map, ref_r, points);
        EXPECT(elec_cpu_msm_map(&wa, &wl, &p, map, &err) == ELEC_OK, "%s", err.message);
        e_wmap = test_rel_rms_float(map, ref_w, points);
        EXPECT(elec_cpu_msm_energy(&ra, &p, &energy, got_r, &err) == ELEC_OK, "%s",
               err.message);
        e_rf = test_rel_rms(got_r, rf, 3 * random.count);
        EXPECT(elec_cpu_msm_energy(&wa, &p, &energy, got, &err) == ELEC_OK, "%s", err.message);
        e_wf = test_rel_rms(got, wf, 3 * water.count);
        EXPECT(elec_cpu_msm_periodic_energy(&wa, &wbox, &p, &energy, got, NULL, &err) ==
                   ELEC_OK, "%s", err.message);
        e_pf = test_rel_rms(got, pf, 3 * water.count);
        printf("     MSM T %.0e: maps %s h %.2f a %.1f (fit %.1e): random %.1e, water %.1e | "
               "forces %s h %.2f a %.1f (fit %.1e): random %.1e, water %.1e | periodic %s "
               "h %.2f a %.1f (fit %.1e): water %.1e\n", tolerances[k],
               msm_name(m.interpolation), m.spacing, m.cutoff, m.estimate.force, e_rmap,
               e_wmap, msm_name(r.interpolation), r.spacing, r.cutoff, r.estimate.force, e_rf,
               e_wf, msm_name(w.interpolation), w.spacing, w.cutoff, w.estimate.force, e_pf);
        EXPECT(e_rmap <= tolerances[k], "random map %.3e > %g", e_rmap, tolerances[k]);
        EXPECT(e_wmap <= tolerances[k], "water map %.3e > %g", e_wmap, tolerances[k]);
        EXPECT(e_rf <= tolerances[k], "random forces %.3e > %g", e_rf, tolerances[k]);
        EXPECT(e_wf <= tolerances[k], "water forces %.3e > %g", e_wf, tolerances[k]);
        EXPECT(e_pf <= tolerances[k], "periodic water forces %.3e > %g", e_pf, tolerances[k]);
    }
    free(ref_r);
    free(ref_w);
    free(map);
    free(rf);
    free(wf);
    free(pf);
    free(got);
    free(got_r);
    test_system_free(&random);
    test_system_free(&water);
}

/* Relative RMS error of forces f (3 n) against the direct pair sum of the
   n atoms at xyz with charges q. */
static double direct_force_error(size_t n, const double *xyz, const double *q,
                                 const double *f) {
    elec_atoms atoms = elec_atoms_from_xyz(n, xyz, q, NULL);
    double *exact = (double *)malloc(3 * n * sizeof *exact), energy, e;
    elec_error err;
    EXPECT(elec_cpu_coulomb_energy(&atoms, 1.0, &energy, exact, &err) == ELEC_OK, "%s",
           err.message);
    e = test_rel_rms(f, exact, 3 * n);
    free(exact);
    return e;
}

/* A stand-in for an MSM evaluation (elec__msm_energy_call), for
   msm_force_check_keeps_or_refuses_as_its_retries_allow: forces the exact
   ones (mock_exact) scaled by 1 + mock_excess times the tolerance asked,
   every call counted; a tolerance under mock_floor refused as the
   table's out-of-reach choice is (ELEC_ERR_UNSUPPORTED, forces zeroed). */
static const double *mock_exact;
static double mock_excess, mock_floor;
static int mock_calls;
static elec_status mock_msm_call(const elec_atoms *atoms, const elec_msm_params *params,
                                 double *energy, double *forces, elec_error *err) {
    size_t i;
    mock_calls++;
    *energy = 0.0;
    if (params->tolerance < mock_floor) {
        memset(forces, 0, 3 * atoms->count * sizeof *forces);
        return elec_fail(err, ELEC_ERR_UNSUPPORTED, 0, "out of reach");
    }
    for (i = 0; i < 3 * atoms->count; i++)
        forces[i] = mock_exact[i] * (1.0 + mock_excess * params->tolerance);
    return ELEC_OK;
}

TEST(msm_force_check_keeps_or_refuses_as_its_retries_allow) {
    /* elec__msm_energy_checked with a stand-in evaluation on 100 atoms
       (a sample of 64, so the check aims at half the tolerance): forces
       0.7 of the tolerance off, and a lower tolerance out of reach, keep
       the first call's forces (not the refused call's zeros); 2 times
       off, and nothing lower in reach, refuse by name with the forces
       zeroed; 2 times off and reachable, a second call meets it. */
    test_system sys = test_system_random(100, 20.0, 62);
    elec_atoms atoms = test_system_atoms(&sys);
    double *exact = (double *)malloc(3 * sys.count * sizeof *exact);
    double *f = (double *)malloc(3 * sys.count * sizeof *f), energy;
    elec_msm_params p = {0};
    elec_error err;
    elec_status s;
    EXPECT(elec_cpu_coulomb_energy(&atoms, 1.0, &energy, exact, &err) == ELEC_OK, "%s",
           err.message);
    mock_exact = exact;
    p.tolerance = 1e-3;
    mock_floor = p.tolerance; /* nothing lower in reach */
    mock_excess = 0.7;
    mock_calls = 0;
    s = elec__msm_energy_checked(mock_msm_call, &atoms, &p, &energy, f,
                                 ELEC_MSM_TOLERANCE_FLOOR, &err);
    EXPECT(s == ELEC_OK && test_rel_rms(f, exact, 3 * sys.count) > 0.5e-3 &&
               test_rel_rms(f, exact, 3 * sys.count) <= 1e-3,
           "0.7 off, nothing lower: status %d, forces %.3e off (%s)", (int)s,
           test_rel_rms(f, exact, 3 * sys.count), err.message);
    printf("     0.7 of T off, nothing lower in reach: kept after %d calls\n", mock_calls);
    mock_excess = 2.0;
    mock_calls = 0;
    s = elec__msm_energy_checked(mock_msm_call, &atoms, &p, &energy, f,
                                 ELEC_MSM_TOLERANCE_FLOOR, &err);
    EXPECT(s == ELEC_ERR_UNSUPPORTED && strstr(err.message, "direct sums") != NULL &&
               f[0] == 0.0 && f[3 * sys.count - 1] == 0.0,
           "2 off, nothing lower: status %d (%s)", (int)s, err.message);
    printf("     2 T off, nothing lower in reach: refused after %d calls (%s)\n", mock_calls,
           err.message);
    mock_floor = 0.0;
    mock_calls = 0;
    s = elec__msm_energy_checked(mock_msm_call, &atoms, &p, &energy, f,
                                 ELEC_MSM_TOLERANCE_FLOOR, &err);
    EXPECT(s == ELEC_OK && test_rel_rms(f, exact, 3 * sys.count) <= 0.5e-3 && mock_calls == 2,
           "2 off, reachable: status %d, forces %.3e off, %d calls (%s)", (int)s,
           test_rel_rms(f, exact, 3 * sys.count), mock_calls, err.message);
    free(exact);
    free(f);
    test_system_free(&sys);
}

TEST(msm_forces_meet_the_tolerance_for_few_dilute_or_cancelling_ions) {
    /* The non-periodic choice reads no atoms, and forces its table does
       not speak for erred more (before elec__msm_energy_checked, at 1e-3
       and 1e-4): two ions 80 A apart 28 and 9 times the tolerance; a line
       of 20 alternating ions 10 A apart, whose forces nearly cancel, 10.8
       and 10.6; eight ions in a 60 A cube 4.1 and 2.2.  The energy
       calls now check their forces on a sample of the atoms against the
       direct sum and aim lower where they miss: each must come within its
       tolerance, against the direct sum of every atom, on the CPU (the
       GPU's calls do the same: test_gpu_msm). */
    static const double tolerances[2] = {1e-3, 1e-4};
    test_sparse_ions cases[3];
    int k, c;
    test_sparse_ion_cases(cases);
    for (c = 0; c < 3; c++) {
        const char *name = cases[c].name;
        const size_t n = cases[c].n;
        const double *xyz = cases[c].xyz, *q = cases[c].q;
        elec_atoms atoms = elec_atoms_from_xyz(n, xyz, q, NULL);
        double f[60], energy, e;
        elec_error err;
        for (k = 0; k < 2; k++) {
            elec_msm_params p = {0};
            p.tolerance = tolerances[k];
            EXPECT(elec_cpu_msm_energy(&atoms, &p, &energy, f, &err) == ELEC_OK, "%s: %s",
                   name, err.message);
            e = direct_force_error(n, xyz, q, f);
            printf("     %s, T %.0e: forces %.2f of it\n", name, tolerances[k],
                   e / tolerances[k]);
            EXPECT(e <= tolerances[k], "%s: forces %.3e > %g", name, e, tolerances[k]);
        }
    }
}

/* Exact Ewald forces (tolerance 1e-12, far below MSM's errors) of atoms
   in box, the pair_count excluded pairs left out: 3 n values, malloc'd. */
static double *exact_forces(const elec_atoms *atoms, const elec_box *box,
                            const size_t *pairs, size_t pair_count) {
    double *forces = (double *)malloc(3 * atoms->count * sizeof *forces);
    elec_ewald_params e = {0};
    elec_ewald_terms terms;
    elec_error err;
    e.tolerance = 1e-12;
    e.excluded_pairs = pairs;
    e.excluded_pair_count = pair_count;
    EXPECT(elec_cpu_ewald(atoms, box, &e, &terms, forces, NULL, &err) == ELEC_OK, "%s",
           err.message);
    return forces;
}

TEST(periodic_msm_chooses_on_its_power_of_two_lattices) {
    /* The periodic hierarchy's lattices have a power of two points an
       edge, so a chosen h becomes up to twice as fine; its choice
       (elec_msm_periodic_params_resolve) costs each candidate on the
       lattices it takes and the box's density, and estimates its error
       there by the periodic forces' own fit.  At T = 1e-3, 1e-4, 1e-5, for
       200 random charges in a 60 A box (dilute: 0.001 /A^3, where the
       choice aims lower), 400 in a 25 A box, 16 in a 16 A box (few: it
       aims lower) and 216 water molecules in their 18.6 A box: the spacing
       reported is the lattice's, L / 2^k, with at least the
       interpolation's width of points an edge (the GPU's anterpolation
       needs them: the small water box once took nonic on 8); the fit at
       most the aim's share of T (elec__pmsm_aim: a quarter, less for few
       or dilute atoms or small forces) and the estimate, the fit times
       how much more these atoms err (elec__pmsm_arrangement), at most a
       quarter; the forces against exact Ewald at most T. */
    static const double tolerances[3] = {1e-3, 1e-4, 1e-5};
    static const double edges[4] = {60.0, 25.0, 16.0, 0.0};
    static const size_t counts[4] = {200, 400, 16, 216};
    int s, k;
    for (s = 0; s < 4; s++) {
        test_system sys = s < 3 ? test_system_random(counts[s], edges[s], 61 + (unsigned)s)
                                : test_system_water(counts[s], 3);
        elec_box box = test_system_box(&sys);
        elec_atoms atoms;
        elec_error err;
        double *want, *got = (double *)malloc(3 * sys.count * sizeof *got), energy;
        if (s < 3) {
            test_system_make_neutral(&sys);
            box = test_box(edges[s], edges[s], edges[s]);
        }
        atoms = test_system_atoms(&sys);
        want = exact_forces(&atoms, &box, NULL, 0);
        for (k = 0; k < 3; k++) {
            elec_msm_params p = {0}, r;
            elec_error_estimate floors;
            double points, error, arrangement, aim;
            p.tolerance = tolerances[k];
            EXPECT(elec_msm_periodic_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_OK,
                   "%s", err.message);
            points = box.length[0] / r.spacing;
            EXPECT(fabs(points - pow(2.0, floor(log2(points) + 0.5))) < 1e-9 &&
                       points >= 4.0 + 2.0 * (double)r.interpolation - 1e-9,
                   "spacing %.6f A: %g points an edge, not a power of two of at least the "
                   "interpolation's width %d", r.spacing, points, 4 + 2 * (int)r.interpolation);
            EXPECT(elec__pmsm_arrangement(&atoms, &box, &p, &arrangement, &floors, &err) == ELEC_OK,
                   "%s", err.message);
            aim = elec__pmsm_aim(&box, sys.count, arrangement);
            EXPECT(r.estimate.force / (aim / 4.0) <= tolerances[k] / aim * 1.000001 &&
                       r.estimate.force <= tolerances[k] / 4.0 * 1.000001,
                   "estimate %.3e (the fit times %.3g) over the aim 1/%g or a quarter",
                   r.estimate.force, aim / 4.0, aim);
            EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &energy, got, NULL, &err) ==
                       ELEC_OK, "%s", err.message);
            error = test_rel_rms(got, want, 3 * sys.count);
            printf("     %zu atoms, %.1f A box, T %.0e: %s h %.4f a %.1f (estimate %.1e): forces "
                   "%.2e\n", sys.count, box.length[0], tolerances[k], msm_name(r.interpolation),
                   r.spacing, r.cutoff, r.estimate.force, error);
            EXPECT(error <= tolerances[k], "forces %.3e > %g", error, tolerances[k]);
        }
        free(want);
        free(got);
        test_system_free(&sys);
    }
}

TEST(periodic_msm_estimates_honestly_for_a_few_ions) {
    /* 2 to 6 ions in a 57 A box (five seeds each), T = 1e-3: the forces
       against exact Ewald at most T, and at most twice the estimate the
       choice reports.  Its estimate once counted only how small the forces
       are for their charges, not how few and dilute the ions are (what the
       choice aims lower for, elec__pmsm_aim): an audit measured errors 13
       to 45 times the estimates on such boxes, these seeds up to 75. */
    static const size_t counts[4] = {2, 3, 4, 6};
    double worst = 0.0;
    int c, seed;
    for (c = 0; c < 4; c++)
        for (seed = 0; seed < 5; seed++) {
            test_system sys = test_system_random(counts[c], 57.0, 400 + 10 * (unsigned)c +
                                                                      (unsigned)seed);
            elec_box box = test_box(57.0, 57.0, 57.0);
            elec_atoms atoms;
            elec_msm_params p = {0}, r;
            elec_error err;
            double *want, got[18], energy, error;
            test_system_make_neutral(&sys);
            atoms = test_system_atoms(&sys);
            want = exact_forces(&atoms, &box, NULL, 0);
            p.tolerance = 1e-3;
            EXPECT(elec_msm_periodic_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_OK &&
                       elec_cpu_msm_periodic_energy(&atoms, &box, &p, &energy, got, NULL,
                                                    &err) == ELEC_OK,
                   "%s", err.message);
            error = test_rel_rms(got, want, 3 * sys.count);
            if (error / r.estimate.force > worst) worst = error / r.estimate.force;
            EXPECT(error <= p.tolerance && error <= 2.0 * r.estimate.force,
                   "%zu ions, seed %d: forces %.3e, estimate %.3e", sys.count, seed, error,
                   r.estimate.force);
            free(want);
            test_system_free(&sys);
        }
    printf("     the forces' error at most %.2f times the estimate\n", worst);
}

TEST(periodic_msm_refuses_a_tolerance_for_a_lone_ion) {
    /* One ion in its box: its exact force is zero, and the lattices give
       it a self-force that the tolerance, relative to the probe's floor
       (a hundredth of q^2 over the mean spacing squared, here the box
       edge), should bound.  The choice aimed at a quarter of the table
       for fewer than two atoms and the force came to 250 to 2,300 times
       that (an audit); aiming 4 to 128 times lower still left 3 to 185
       times (the self-force is not what the table fits), so a tolerance
       with one atom is refused by name; SPME meets it (0.3 to 0.5). */
    static const double edges[2] = {10.0, 30.0}, tolerances[2] = {1e-2, 1e-4};
    double x[3] = {0.3, 0.7, 1.1}, q = 1.0, f[3], energy, worst = 0.0;
    elec_atoms atoms = elec_atoms_from_xyz(1, x, &q, NULL);
    int e, t;
    for (e = 0; e < 2; e++)
        for (t = 0; t < 2; t++) {
            elec_box box = test_box(edges[e], edges[e], edges[e]);
            elec_msm_params p = {0};
            elec_error err;
            p.tolerance = tolerances[t];
            EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &energy, f, NULL, &err) ==
                           ELEC_ERR_UNSUPPORTED &&
                       strstr(err.message, "one atom"),
                   "%g A box, T %g: %s", edges[e], tolerances[t], err.message);
#ifdef ELEC_WITH_FFTW
            {
                elec_spme_params s = {0};
                elec_ewald_terms terms;
                double ratio;
                s.tolerance = tolerances[t];
                EXPECT(elec_cpu_spme(&atoms, &box, &s, &terms, f, NULL, &err) == ELEC_OK, "%s",
                       err.message);
                ratio = sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]) /
                        (tolerances[t] * 0.01 / (edges[e] * edges[e]));
                if (ratio > worst) worst = ratio;
                EXPECT(ratio <= 1.0, "SPME, %g A, T %g: %.2f", edges[e], tolerances[t], ratio);
            }
#endif
        }
    {
        /* with both the cutoff and the spacing given the tolerance is not
           enforced (elec_msm_params_resolve): taken, as for more atoms */
        elec_box box = test_box(30.0, 30.0, 30.0);
        elec_msm_params p = {0};
        elec_error err;
        p.tolerance = 1e-4;
        p.cutoff = 12.0;
        p.spacing = 2.0;
        EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &energy, f, NULL, &err) ==
                   ELEC_OK,
               "cutoff and spacing given: %s", err.message);
    }
    printf("     refused by name; SPME's self-force at most %.2f times T x floor\n", worst);
}

TEST(periodic_msm_energy_estimate_is_an_upper_side_one) {
    /* estimate.energy, 4 sum q^2 F(h, a) / a (elec__pmsm_energy_error, h
       at least 1 A), against exact Ewald's energy on the five systems of
       the SPME knob (water with its exclusions) and four ions in a 30 A
       box, at five settings from cubic at a 8 A, h 2.5 A to nonic at a 16,
       h 1, and at tolerances of 1e-3 and 1e-5 (the choice takes h down to
       0.53 A there, where the fit extrapolated to h read rock salt's error
       5 times low: a review's): the error at most 1.2 times it (0.83 at
       most here when it was made; 1.74 over 324 cases then, the README
       says so), so that an estimate halved shows (a mutation of its 4 to 2
       passed the 3 this test first allowed).  It was 0, which read as no
       error: the defaults err 8.6e-3 e^2/A on 600 random charges.  With
       scale, the estimate scales. */
    static const struct {
        elec_msm_interpolation order;
        double cutoff, spacing, tolerance;
    } settings[7] = {{ELEC_MSM_CUBIC, 8.0, 2.5, 0.0},  {ELEC_MSM_CUBIC, 0.0, 0.0, 0.0},
                     {ELEC_MSM_QUINTIC, 12.0, 1.5, 0.0}, {ELEC_MSM_SEPTIC, 10.0, 1.25, 0.0},
                     {ELEC_MSM_NONIC, 16.0, 1.0, 0.0},  {ELEC_MSM_CUBIC, 0.0, 0.0, 1e-3},
                     {ELEC_MSM_CUBIC, 0.0, 0.0, 1e-5}};
    double worst = 0.0, least = 1e300;
    int which, k;
    for (which = 0; which < 6; which++) {
        test_knob_system c;
        elec_atoms atoms;
        elec_box box;
        elec_ewald_terms te;
        if (which < 5) {
            c = test_knob_system_make(which);
        } else {
            memset(&c, 0, sizeof c);
            c.name = "four ions";
            c.s = test_system_random(4, 30.0, 402);
            test_system_make_neutral(&c.s);
        }
        atoms = test_system_atoms(&c.s);
        box = test_system_box(&c.s);
        if (!exact_ewald(&c, NULL, &te)) {
            test_knob_system_free(&c);
            continue;
        }
        for (k = 0; k < 7; k++) {
            elec_msm_params p = {0}, r, scaled;
            elec_error err;
            elec_status s;
            double energy, error;
            p.interpolation = settings[k].order;
            p.cutoff = settings[k].cutoff;
            p.spacing = settings[k].spacing;
            p.tolerance = settings[k].tolerance;
            p.excluded_pairs = c.pairs;
            p.excluded_pair_count = c.pair_count;
            s = elec_msm_periodic_params_resolve(&p, &box, &atoms, &r, &err);
            if (s == ELEC_ERR_UNSUPPORTED && p.tolerance > 0.0) { /* out of reach: said so */
                printf("     %-14s T %.0e refused: %s\n", c.name, p.tolerance, err.message);
                continue;
            }
            if (s != ELEC_OK ||
                elec_cpu_msm_periodic_energy(&atoms, &box, &p, &energy, NULL, NULL, &err) !=
                    ELEC_OK) {
                EXPECT(0, "%s, setting %d: %s", c.name, k, err.message);
                continue;
            }
            error = fabs(energy - te.total);
            printf("     %-14s %s a %4.1f h %.3f: energy error %.2e, estimate %.2e (%.3f)\n",
                   c.name, msm_name(r.interpolation), r.cutoff, r.spacing, error,
                   r.estimate.energy, error / r.estimate.energy);
            EXPECT(r.estimate.energy > 0.0 && error <= 1.2 * r.estimate.energy,
                   "%s, setting %d: energy error %.3e, estimate %.3e", c.name, k, error,
                   r.estimate.energy);
            if (error / r.estimate.energy > worst) worst = error / r.estimate.energy;
            if (error / r.estimate.energy < least) least = error / r.estimate.energy;
            p.scale = -332.0637;
            EXPECT(elec_msm_periodic_params_resolve(&p, &box, &atoms, &scaled, &err) == ELEC_OK &&
                       fabs(scaled.estimate.energy - 332.0637 * r.estimate.energy) <=
                           1e-12 * scaled.estimate.energy,
                   "%s: scaled estimate %.6e, want 332.0637 x %.6e", c.name,
                   scaled.estimate.energy, r.estimate.energy);
        }
        test_knob_system_free(&c);
    }
    printf("     the energy's error %.4f to %.2f times its estimate\n", least, worst);
}

TEST(periodic_msm_holds_in_a_box_of_one_long_axis) {
    /* Past the level where the short axes' lattices are one point only the
       long axis coarsens, and each level's kernel, summed over the short
       axes' images, grows with a_l: the error adds up level by level
       (elec__pmsm_elongation).  Random charges at 0.0475 /A^3 in a 10 x 10
       x 160 A box, neutral and charged, at 1e-3 and 1e-4, against exact
       Ewald: potentials and forces at most T, the energy at most twice
       estimate.energy.  Before the choice counted the elongation these
       atoms' potentials erred 1.24 times T at 1e-4 and their energies 11.7
       and 7.7 times the estimate (an audit found 1.4 and 6.5 on its own). */
    static const double tolerances[2] = {1e-3, 1e-4};
    const double edge = 10.0, length = 160.0;
    const size_t n = 760;
    int charged, k;
    for (charged = 0; charged < 2; charged++) {
        test_system s = test_system_random(n, 1.0, 91 + (unsigned)charged);
        elec_box box = test_box(edge, edge, length);
        elec_atoms atoms;
        elec_ewald_params e = {0};
        elec_ewald_terms exact;
        elec_error err;
        double *want_f = (double *)malloc(3 * n * sizeof *want_f);
        double *want_phi = (double *)malloc(n * sizeof *want_phi);
        double *got_f = (double *)malloc(3 * n * sizeof *got_f);
        double *got_phi = (double *)malloc(n * sizeof *got_phi);
        size_t i;
        for (i = 0; i < n; i++) {
            s.xyz[3 * i] *= edge;
            s.xyz[3 * i + 1] *= edge;
            s.xyz[3 * i + 2] *= length;
            if (charged) s.charge[i] = 0.5 * (s.charge[i] + 1.0); /* in [0, 1] */
        }
        if (!charged) test_system_make_neutral(&s);
        atoms = test_system_atoms(&s);
        e.tolerance = 1e-12;
        EXPECT(elec_cpu_ewald(&atoms, &box, &e, &exact, want_f, want_phi, &err) == ELEC_OK,
               "%s", err.message);
        for (k = 0; k < 2; k++) {
            elec_msm_params p = {0}, r;
            double energy, error, forces, potentials;
            p.tolerance = tolerances[k];
            if (elec_msm_periodic_params_resolve(&p, &box, &atoms, &r, &err) != ELEC_OK ||
                elec_cpu_msm_periodic_energy(&atoms, &box, &p, &energy, got_f, got_phi,
                                             &err) != ELEC_OK) {
                EXPECT(0, "%s, T %g: %s", charged ? "charged" : "neutral", tolerances[k],
                       err.message);
                continue;
            }
            error = fabs(energy - exact.total);
            forces = test_rel_rms(got_f, want_f, 3 * n);
            potentials = test_rel_rms(got_phi, want_phi, n);
            printf("     %s, T %.0e: %s h %.3f a %.1f: potentials %.2e, forces %.2e, energy "
                   "%.2e (%.2f times its estimate)\n", charged ? "charged" : "neutral",
                   tolerances[k], msm_name(r.interpolation), r.spacing, r.cutoff, potentials,
                   forces, error, error / r.estimate.energy);
            EXPECT(potentials <= tolerances[k] && forces <= tolerances[k],
                   "T %g: potentials %.3e, forces %.3e", tolerances[k], potentials, forces);
            EXPECT(error <= 2.0 * r.estimate.energy, "T %g: energy error %.3e, estimate %.3e",
                   tolerances[k], error, r.estimate.energy);
        }
        free(want_f);
        free(want_phi);
        free(got_f);
        free(got_phi);
        test_system_free(&s);
    }
}

TEST(periodic_msm_keeps_a_net_charges_mean_exact) {
    /* Each lattice passes on its kernel's mean as h^3 sum K_l, not the
       integral; a net charge Qnet shifts every potential by Qnet / V times
       the difference (elec__pmsm_constant takes it out).  2,000 charges of
       +1 in a 40 A box: before, the energy erred 7.4 and 9.1 times its
       estimate at 1e-2 and 1e-3 and the potentials 1.28 and 0.96 of the
       tolerance; now 0.49 and 0.10 times, 0.78 and 0.46 of it, held here to
       the energy estimate's 1.2 (as the neutral systems' test) and the
       tolerance. */
    static const double tolerances[2] = {1e-2, 1e-3};
    const size_t n = 2000;
    test_system s = test_system_random(n, 40.0, 7);
    elec_box box = test_system_box(&s);
    elec_atoms atoms;
    elec_ewald_params e = {0};
    elec_ewald_terms exact;
    elec_error err;
    double *phi_exact = (double *)malloc(n * sizeof *phi_exact);
    double *phi = (double *)malloc(n * sizeof *phi);
    size_t i;
    int k;
    for (i = 0; i < n; i++) s.charge[i] = 1.0;
    atoms = test_system_atoms(&s);
    e.tolerance = 1e-12;
    EXPECT(elec_cpu_ewald(&atoms, &box, &e, &exact, NULL, phi_exact, &err) == ELEC_OK, "%s",
           err.message);
    for (k = 0; k < 2; k++) {
        elec_msm_params p = {0}, r;
        double energy, error, potentials;
        p.tolerance = tolerances[k];
        if (elec_msm_periodic_params_resolve(&p, &box, &atoms, &r, &err) != ELEC_OK ||
            elec_cpu_msm_periodic_energy(&atoms, &box, &p, &energy, NULL, phi, &err) !=
                ELEC_OK) {
            EXPECT(0, "at %g: %s", tolerances[k], err.message);
            continue;
        }
        error = fabs(energy - exact.total);
        potentials = test_rel_rms(phi, phi_exact, n);
        printf("     T %.0e: energy error %.3e (estimate %.3e), potentials %.3e\n",
               tolerances[k], error, r.estimate.energy, potentials);
        EXPECT(error <= 1.2 * r.estimate.energy, "at %g: energy error %.3e, estimate %.3e",
               tolerances[k], error, r.estimate.energy);
        EXPECT(potentials <= tolerances[k], "at %g: potentials %.3e", tolerances[k],
               potentials);
    }
    free(phi_exact);
    free(phi);
    test_system_free(&s);
}

TEST(periodic_msm_reads_how_small_the_forces_are) {
    /* Periodic MSM's absolute force error goes with the charges and their
       density, not with the forces: ions near their crystal sites feel
       small forces, so the relative error grows as they come closer (rock
       salt displaced 0.1 A RMS erred 6.3 times a tolerance of 1e-4, 0.01 A
       50 times, before the choice read the atoms).  The choice scales its
       estimate by the probe's forces (elec__pmsm_arrangement): rock salt
       3^3 displaced 0.1 and 0.01 A, CsCl 5^3 displaced 0.1 A, and the
       first as a slab in a box 8 times as tall (0.0056 /A^3 on average:
       the probe reads the density where the ions are; a review found it
       missing 1e-4 5.6 times when the box's mean decided), at 1e-3 and
       1e-4, forces against exact Ewald at most T and the estimate at least
       ten times the table's fit; rock salt 4^3 at 0.01 A at 1e-5 out of
       reach, refused with the reason. */
    static const double tolerances[2] = {1e-3, 1e-4};
    static const double displaced[4] = {0.1, 0.01, 0.1, 0.1};
    static const char *const names[4] = {"NaCl 3^3", "NaCl 3^3", "CsCl 5^3",
                                         "NaCl 3^3 slab, z x 8"};
    int c, k;
    for (c = 0; c < 4; c++) {
        test_system sys = c == 2 ? test_system_cscl(5, 4.12) : test_system_nacl(3, 5.64);
        elec_box box = test_system_box(&sys);
        elec_atoms atoms;
        elec_error err;
        double *want, *got = (double *)malloc(3 * sys.count * sizeof *got), energy;
        test_system_displace(&sys, displaced[c], 7 + (unsigned)c);
        if (c == 3) box.length[2] *= 8.0;
        atoms = test_system_atoms(&sys);
        want = exact_forces(&atoms, &box, NULL, 0);
        for (k = 0; k < 2; k++) {
            elec_msm_params p = {0}, r;
            double error, fit;
            p.tolerance = tolerances[k];
            EXPECT(elec_msm_periodic_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_OK,
                   "%s", err.message);
            fit = elec__msm_error_model(1, (int)r.interpolation, r.spacing, r.cutoff);
            EXPECT(r.estimate.force >= 10.0 * fit, "estimate %.2e, the table's fit %.2e",
                   r.estimate.force, fit);
            EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &energy, got, NULL, &err) ==
                       ELEC_OK, "%s", err.message);
            error = test_rel_rms(got, want, 3 * sys.count);
            printf("     %s, %.2f A RMS from its sites, T %.0e: %s h %.3f a %.1f (estimate "
                   "%.1e, the fit %.1e): forces %.2e\n", names[c], displaced[c], tolerances[k],
                   msm_name(r.interpolation), r.spacing, r.cutoff, r.estimate.force, fit, error);
            EXPECT(error <= tolerances[k], "forces %.3e > %g", error, tolerances[k]);
        }
        free(want);
        free(got);
        test_system_free(&sys);
    }
    {
        test_system salt = test_system_nacl(4, 5.64);
        const elec_box box = test_system_box(&salt);
        elec_atoms atoms;
        elec_msm_params p = {0}, r;
        elec_error err;
        test_system_displace(&salt, 0.01, 3);
        atoms = test_system_atoms(&salt);
        p.tolerance = 1e-5;
        EXPECT(elec_msm_periodic_params_resolve(&p, &box, &atoms, &r, &err) ==
                       ELEC_ERR_UNSUPPORTED &&
                   strstr(err.message, "crystal near its sites"),
               "rock salt 0.01 A from its sites at 1e-5: %s", err.message);
        printf("     %s\n", err.message);
        test_system_free(&salt);
    }
}

/* Water as a vapour: test_system_water's molecules moved whole, each
   oxygen's place scaled to a box of `edge` A (the molecules' shapes and
   orientations kept). */
static test_system water_vapour(size_t molecules, double edge, unsigned long long seed) {
    test_system s = test_system_water(molecules, seed);
    size_t m, k;
    int a;
    for (m = 0; m < molecules; m++)
        for (a = 0; a < 3; a++) {
            const double shift = s.xyz[9 * m + a] * (edge / s.box[a] - 1.0);
            for (k = 3 * m; k < 3 * m + 3; k++) s.xyz[3 * k + a] += shift;
        }
    for (a = 0; a < 3; a++) s.box[a] = edge;
    return s;
}

TEST(periodic_msm_holds_for_a_vapour_of_molecules) {
    /* Neutral molecules far apart, their own pairs excluded, feel small
       forces for their charges, as ions near their sites do: 100 waters
       in a 33 A box (0.0083 /A^3) erred 2.6 to 7.0 times T, and in a 60 A
       one (0.0014 /A^3) 7.8 times at 1e-3, while the choice passed over
       the probe's forces under 0.01 /A^3 (an audit, 2026-12-04); the
       second takes the probe's wider look (elec__pmsm_arrangement), as
       its 6 A find no pairs there.  At 1e-3, 1e-4 and 1e-5: forces
       against exact Ewald at most T, or, at 1e-5 only, the tolerance
       refused as out of the table's reach for such small forces. */
    static const double edges[2] = {33.0, 60.0};
    int c, k;
    for (c = 0; c < 2; c++) {
        test_system sys = water_vapour(100, edges[c], 140 + (unsigned)c);
        const elec_box box = test_system_box(&sys);
        size_t *pairs = test_water_exclusions(100);
        elec_atoms atoms = test_system_atoms(&sys);
        double *want = exact_forces(&atoms, &box, pairs, 300), energy;
        double *got = (double *)malloc(3 * sys.count * sizeof *got);
        elec_error err;
        for (k = 0; k < 3 && !test__current_failed; k++) {
            const double tolerance = pow(10.0, -3 - k);
            elec_msm_params p = {0}, r;
            double error;
            p.tolerance = tolerance;
            p.excluded_pairs = pairs;
            p.excluded_pair_count = 300;
            if (elec_msm_periodic_params_resolve(&p, &box, &atoms, &r, &err) != ELEC_OK) {
                printf("     100 waters in %.0f A, T %.0e: %s\n", edges[c], tolerance,
                       err.message);
                EXPECT(k == 2 && err.status == ELEC_ERR_UNSUPPORTED &&
                           strstr(err.message, "molecules far apart"),
                       "T %g refused: %s", tolerance, err.message);
                continue;
            }
            EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &p, &energy, got, NULL, &err) ==
                       ELEC_OK, "%s", err.message);
            error = test_rel_rms(got, want, 3 * sys.count);
            printf("     100 waters in %.0f A, T %.0e: %s h %.3f a %.1f (estimate %.1e): "
                   "forces %.2e\n", edges[c], tolerance, msm_name(r.interpolation),
                   r.spacing, r.cutoff, r.estimate.force, error);
            EXPECT(error <= tolerance, "forces %.3e > %g", error, tolerance);
        }
        free(want);
        free(got);
        free(pairs);
        test_system_free(&sys);
    }
}

/* The RMS over the atoms of each one's pair forces within 6 A in
   quadrature, the probe's shifted-force terms q_i q_j (1/r^2 - 1/36),
   nearest images (boxes over 12 A). */
static double pair_force_rms(const test_system *s, const elec_box *box) {
    const double reach2 = 36.0;
    double sum = 0.0;
    size_t i, j;
    int a;
    for (i = 0; i < s->count; i++)
        for (j = 0; j < s->count; j++) {
            double r2 = 0.0, g;
            if (i == j) continue;
            for (a = 0; a < 3; a++) {
                double d = s->xyz[3 * i + a] - s->xyz[3 * j + a];
                d -= box->length[a] * floor(d / box->length[a] + 0.5);
                r2 += d * d;
            }
            if (r2 >= reach2) continue;
            g = s->charge[i] * s->charge[j] * (1.0 / r2 - 1.0 / reach2);
            sum += g * g;
        }
    return sqrt(sum / (double)s->count);
}

TEST(the_gpu_float_floor_follows_forces_that_nearly_cancel) {
    /* Float arithmetic errs relative to the pair forces a net force is
       the sum of, not to the net force: estimate.float_arithmetic is
       ELEC_SPME_GPU_FLOAT_FLOOR, or ELEC_GPU_FLOAT_CANCELLATION times the
       RMS pair force within 6 A over the RMS force where that is larger
       (measured on the device: tests/test_gpu_spme.cu and
       test_gpu_msm.cu).  Here the estimate against that model with the
       pairs summed here and the exact RMS force (Ewald): random charges
       keep the constant; rock salt 3^3 displaced 0.1 and 0.01 A RMS takes
       the ratio within the probe's accuracy (0.89 to 0.99 of the exact
       RMS force, elec.h, so 1 to 1.15 times the model), at its sites
       with the force floored at a hundredth of the pair force at the mean
       spacing; 64 ions 10 A apart (a review found a dilute electrolyte,
       whose probe sees no pairs and floors its forces, given a floor of
       1e-4 by the first model, F / force_rms) keep the constant.
       float_floor (rounding the positions as well) is at least
       float_arithmetic, and periodic MSM's resolve reads the same floors
       as SPME's where a tolerance is given and its probe looks no
       further (none where no tolerance is given). */
    static const double displaced[5] = {-1.0, 0.1, 0.01, 0.0, 0.5};
    static const char *const names[5] = {"random", "rock salt 0.1 A", "rock salt 0.01 A",
                                         "rock salt at its sites", "64 ions 10 A apart"};
    int c;
    for (c = 0; c < 5; c++) {
        test_system s = c == 0 ? test_system_random(1000, 24.0, 31)
                        : c < 4 ? test_system_nacl(3, 5.64) : test_system_nacl(2, 20.0);
        elec_box box;
        elec_atoms atoms;
        elec_spme_params p = {0}, r;
        elec_msm_params m = {0}, mr;
        elec_error err;
        double *exact, rms = 0.0, model, floor_force, pairs;
        size_t i;
        if (c == 0) test_system_make_neutral(&s);
        if (displaced[c] > 0.0) test_system_displace(&s, displaced[c], 120 + (unsigned)c);
        box = c == 0 ? test_box(24.0, 24.0, 24.0) : test_system_box(&s);
        atoms = test_system_atoms(&s);
        exact = exact_forces(&atoms, &box, NULL, 0);
        for (i = 0; i < 3 * s.count; i++) rms += exact[i] * exact[i];
        rms = sqrt(rms / (double)s.count);
        floor_force = 0.01 * test_pair_force(&s, &box);
        if (rms < floor_force) rms = floor_force;
        pairs = pair_force_rms(&s, &box);
        model = ELEC_GPU_FLOAT_CANCELLATION * pairs / rms;
        if (model < ELEC_SPME_GPU_FLOAT_FLOOR) model = ELEC_SPME_GPU_FLOAT_FLOOR;
        p.tolerance = m.tolerance = 1e-3;
        EXPECT(elec_spme_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_OK, "%s",
               err.message);
        EXPECT(elec_msm_periodic_params_resolve(&m, &box, &atoms, &mr, &err) == ELEC_OK, "%s",
               err.message);
        printf("     %s: pair forces / force_rms %.3g | float_arithmetic %.3e (model %.3e), "
               "float_floor %.3e\n", names[c], pairs / rms, r.estimate.float_arithmetic, model,
               r.estimate.float_floor);
        EXPECT(r.estimate.float_arithmetic >= model * 0.999 &&
                   r.estimate.float_arithmetic <= model * 1.15,
               "float_arithmetic %.3e against the model's %.3e", r.estimate.float_arithmetic,
               model);
        EXPECT(r.estimate.float_floor >= r.estimate.float_arithmetic, "float_floor %.3e < %.3e",
               r.estimate.float_floor, r.estimate.float_arithmetic);
        EXPECT(c == 4 || (mr.estimate.float_arithmetic == r.estimate.float_arithmetic &&
                          mr.estimate.float_floor == r.estimate.float_floor),
               "MSM's floors %.3e / %.3e, SPME's %.3e / %.3e", mr.estimate.float_arithmetic,
               mr.estimate.float_floor, r.estimate.float_arithmetic, r.estimate.float_floor);
        m.tolerance = 0.0;
        EXPECT(elec_msm_periodic_params_resolve(&m, &box, &atoms, &mr, &err) == ELEC_OK &&
                   mr.estimate.float_arithmetic == 0.0 && mr.estimate.float_floor == 0.0,
               "no tolerance, no probe: floors %.3e / %.3e", mr.estimate.float_arithmetic,
               mr.estimate.float_floor);
        free(exact);
        test_system_free(&s);
    }
}

/* Under a tolerance a given splitting fixes the interpolation the table
   pairs with it: C2 (cubic's own) on 600 neutral random charges at 1e-5
   once kept the matched choice's nonic, h and a and erred 5.3 times the
   tolerance with an estimate of 3.3e-6 (an audit; C1 130 times).  Now
   C2 takes the cubic: at 1e-4 its map meets the tolerance, and 1e-5,
   past the cubic's table, is refused; a splitting the table has no pair
   for (C1, C6), or one given with another's interpolation, is refused by
   name. */
TEST(msm_tolerance_with_a_splitting_takes_its_paired_order) {
    test_system random = test_system_random(600, 24.0, 51);
    const int dims[3] = {21, 21, 21};
    elec_lattice l;
    elec_atoms atoms;
    elec_msm_params p = {0}, r;
    elec_error err;
    double *ref, e;
    float *map;
    size_t points;
    int splitting;
    test_system_make_neutral(&random);
    atoms = test_system_atoms(&random);
    l = test_lattice_around(random.box, dims, 2.0);
    points = elec_lattice_size(&l);
    ref = (double *)malloc(points * sizeof *ref);
    map = (float *)malloc(points * sizeof *map);
    EXPECT(elec_cpu_dcs_map_double(&atoms, &l, NULL, ref, &err) == ELEC_OK, "%s", err.message);
    p.tolerance = 1e-4;
    for (splitting = 2; splitting <= 5; splitting++) {
        p.splitting = splitting;
        EXPECT(elec_msm_params_resolve(&p, (double)points / (double)random.count, &r, &err) ==
                       ELEC_OK &&
                   (int)r.interpolation == splitting - 2 && r.splitting == splitting,
               "C%d: %s (interpolation %d)", splitting, err.message, (int)r.interpolation);
    }
    p.splitting = 2;
    EXPECT(elec_cpu_msm_map(&atoms, &l, &p, map, &err) == ELEC_OK, "%s", err.message);
    e = test_rel_rms_float(map, ref, points);
    elec_msm_params_resolve(&p, (double)points / (double)random.count, &r, &err);
    printf("     tolerance 1e-4 with C2: %s h %.2f a %.1f (fit %.1e), error %.2e\n",
           msm_name(r.interpolation), r.spacing, r.cutoff, r.estimate.force, e);
    EXPECT(e <= p.tolerance && r.interpolation == ELEC_MSM_CUBIC,
           "C2 at 1e-4: error %.2e (%s)", e, msm_name(r.interpolation));
    p.tolerance = 1e-5; /* beyond the cubic's table: refused, not nonic's h and a */
    EXPECT(elec_msm_params_resolve(&p, 1.0, &r, &err) == ELEC_ERR_UNSUPPORTED,
           "C2 at 1e-5 accepted (%s h %.2f a %.1f)", msm_name(r.interpolation), r.spacing,
           r.cutoff);
    for (splitting = 1; splitting <= 6; splitting += 5) {
        p.splitting = splitting;
        EXPECT(elec_msm_params_resolve(&p, 1.0, &r, &err) == ELEC_ERR_INVALID_ARG &&
                   strstr(err.message, "measures C2 to C5"),
               "C%d with a tolerance: %s", splitting, err.message);
    }
    p.splitting = 3;
    p.interpolation = ELEC_MSM_NONIC;
    EXPECT(elec_msm_params_resolve(&p, 1.0, &r, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "pairs C3 with quintic"),
           "C3 with nonic and a tolerance: %s", err.message);
    /* out of range stays refused by name (an interpolation of 17 was once
       taken as the splitting's pair; a review) */
    p.interpolation = (elec_msm_interpolation)17;
    EXPECT(elec_msm_params_resolve(&p, 1.0, &r, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "unknown MSM interpolation 17"),
           "interpolation 17 with C3: %s", err.message);
    p.interpolation = ELEC_MSM_NONIC;
    p.splitting = -1;
    EXPECT(elec_msm_params_resolve(&p, 1.0, &r, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "use 1 to 6"),
           "splitting -1: %s", err.message);
    p.splitting = 3;
    p.tolerance = 0.0; /* without a tolerance any pair is the caller's */
    EXPECT(elec_msm_params_resolve(&p, 1.0, &r, &err) == ELEC_OK && r.splitting == 3 &&
               r.interpolation == ELEC_MSM_NONIC, "C3 with nonic: %s", err.message);
    free(ref);
    free(map);
    test_system_free(&random);
}

TEST(msm_refuses_bad_tolerances) {
    elec_msm_params p = {0}, r;
    elec_error err;
    static const double bad[4] = {-1e-3, 1.0, 1e-9, 3.0};
    int k;
    EXPECT(elec_msm_params_resolve(&p, 0.0, &r, &err) == ELEC_OK && r.spacing == 2.0 &&
               r.cutoff == 12.0 && r.interpolation == ELEC_MSM_CUBIC,
           "no tolerance: not the defaults (h %g, a %g)", r.spacing, r.cutoff);
    printf("     defaults: fitted error %.1e\n", r.estimate.force);
    for (k = 0; k < 4; k++) {
        p.tolerance = bad[k];
        EXPECT(elec_msm_params_resolve(&p, 0.0, &r, &err) == ELEC_ERR_INVALID_ARG,
               "tolerance %g accepted", bad[k]);
    }
    p.tolerance = nan("");
    EXPECT(elec_msm_params_resolve(&p, 0.0, &r, &err) == ELEC_ERR_INVALID_ARG, "NaN accepted");
    /* cubic fixed by a spacing of 2.5 A and cutoff 8 A: 7e-3 cannot meet
       1e-4, and says so... unless both are fixed, when it is the caller's
       choice */
    p.tolerance = 1e-4;
    p.spacing = 2.5;
    EXPECT(elec_msm_params_resolve(&p, 0.0, &r, &err) == ELEC_OK && r.spacing == 2.5,
           "spacing 2.5 with 1e-4: %s", err.message);
    p.cutoff = 8.0;
    p.interpolation = ELEC_MSM_CUBIC;
    EXPECT(elec_msm_params_resolve(&p, 0.0, &r, &err) == ELEC_OK && r.estimate.force > 1e-3,
           "both fixed: %s (fit %g)", err.message, r.estimate.force);
    p.cutoff = 0.0;
    p.tolerance = 3e-7;
    EXPECT(elec_msm_params_resolve(&p, 0.0, &r, &err) == ELEC_ERR_UNSUPPORTED,
           "3e-7 at h 2.5 accepted (fit %g)", r.estimate.force);
    printf("     %s\n", err.message);
    {
        /* periodic: nonic fixed in a 1.5 A box needs 16 points an edge, and
           a / h then passes 64 at every a: refused by name, not the
           defaults' lattice (8 points, too narrow) taken instead (the
           message names the small forces: the two atoms' probe sees no
           pair within its 0.75 A reach, at its floor, a factor of 1000;
           with the factor 1 it refuses for the width alone); an infinite
           cutoff refused, not overflowed */
        double xyz[6] = {0.2, 0.2, 0.2, 1.0, 1.0, 1.0}, q[2] = {1.0, -1.0};
        elec_atoms two = elec_atoms_from_xyz(2, xyz, q, NULL);
        elec_box tiny = {{1.5, 1.5, 1.5}};
        elec_msm_params n = {0};
        n.tolerance = 1e-3;
        n.interpolation = ELEC_MSM_NONIC;
        EXPECT(elec_msm_periodic_params_resolve(&n, &tiny, &two, &r, &err) ==
                       ELEC_ERR_UNSUPPORTED &&
                   strstr(err.message, "periodic MSM tolerance") != NULL,
               "nonic in a 1.5 A box: %s", err.message);
        printf("     %s\n", err.message);
        {
            /* one atom has no pair to err on, but a lattice self-force
               no choice bounds: refused by name
               (periodic_msm_refuses_a_tolerance_for_a_lone_ion) */
            elec_box box30 = {{30.0, 30.0, 30.0}};
            elec_atoms one = elec_atoms_from_xyz(1, xyz, q, NULL);
            elec_msm_params o = {0};
            o.tolerance = 1e-5;
            EXPECT(elec_msm_periodic_params_resolve(&o, &box30, &one, &r, &err) ==
                           ELEC_ERR_UNSUPPORTED &&
                       strstr(err.message, "one atom"),
                   "one atom at 1e-5: %s", err.message);
        }
        n.interpolation = ELEC_MSM_CUBIC;
        n.cutoff = HUGE_VAL;
        EXPECT(elec_msm_periodic_params_resolve(&n, &tiny, &two, &r, &err) ==
                   ELEC_ERR_INVALID_ARG,
               "an infinite cutoff: %s", err.message);
    }
}

int main(void) {
    RUN(spme_tolerance_holds_on_five_systems);
    RUN(spme_odd_orders_count_the_modes_at_the_mesh_edge);
    RUN(energy_estimates_count_a_net_charges_coherent_tail);
    RUN(spme_perfect_crystals_give_their_madelung_energy_at_the_default);
    RUN(spme_explicit_settings_override_the_choice);
    RUN(spme_refuses_tolerances_it_cannot_meet);
    RUN(estimates_refuse_charges_too_small_for_their_sums);
    RUN(ewald_tolerance_bounds_its_truncation);
    RUN(spme_tolerance_holds_for_a_droplet_in_a_large_box);
    RUN(ewald_tolerance_holds_for_a_crystal_near_its_sites);
    RUN(ewald_and_spme_measure_a_coherent_real_space_tail);
    RUN(ewald_energy_estimate_measures_a_crystals_tail);
    RUN(ewald_energy_estimate_of_sampled_random_charges_is_their_rms_size);
    RUN(ewald_runaway_work_is_refused_and_long_sums_report_progress);
    RUN(ewald_progress_may_call_ewald_and_stop_at_its_last_report);
    RUN(ewald_forces_at_chosen_atoms_match_the_whole_sum);
    RUN(ewald_refuses_bad_tolerances);
    RUN(msm_tolerance_holds_for_maps_and_forces);
    RUN(msm_forces_meet_the_tolerance_for_few_dilute_or_cancelling_ions);
    RUN(msm_force_check_keeps_or_refuses_as_its_retries_allow);
    RUN(periodic_msm_chooses_on_its_power_of_two_lattices);
    RUN(periodic_msm_estimates_honestly_for_a_few_ions);
    RUN(periodic_msm_refuses_a_tolerance_for_a_lone_ion);
    RUN(periodic_msm_energy_estimate_is_an_upper_side_one);
    RUN(periodic_msm_holds_in_a_box_of_one_long_axis);
    RUN(periodic_msm_keeps_a_net_charges_mean_exact);
    RUN(periodic_msm_reads_how_small_the_forces_are);
    RUN(periodic_msm_holds_for_a_vapour_of_molecules);
    RUN(the_gpu_float_floor_follows_forces_that_nearly_cancel);
    RUN(msm_tolerance_with_a_splitting_takes_its_paired_order);
    RUN(msm_refuses_bad_tolerances);
    return test_summary();
}
