/* msm_error_table - MSM's map error against the exact sum for several
   finest spacings h, cutoffs a and interpolation orders: the table the
   README keeps, to choose MSM parameters from an accuracy target.

   3000 random atoms with charges in [-1, 1] (made neutral) in a 40 A cube,
   and a 33^3 map over it; error = relative RMS against the double DCS
   sum.  Runs on the CPU (make msm-table).  After the table, the least
   squares fit log10(error) = c0 + c1 log10(h) + c2 log10(a) per
   interpolation: the model elec.h's tolerance chooses by
   (elec__msm_error_fit).

   Then the periodic forces (elec_cpu_msm_periodic_energy) against exact
   Ewald: random atoms at the same density (0.047 /A^3, made neutral) in
   cubes of 32 h, so that the power-of-two lattice takes h itself, and
   their fit, elec__msm_periodic_force_fit, which the periodic choice
   (elec_msm_periodic_params_resolve) reads: its forces err several times
   the maps' at the lower orders.  It calls nothing private, only names
   that fit:
   the fit is written once, in elec.h ("math written once"), and this
   program is where its numbers come from, so it stays a private table of
   the header with its generator beside it here. */
#define _POSIX_C_SOURCE 200809L
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "tests/systems.h"

#include <time.h>

/* The normal equations of the least squares fit log10(error) = c0 +
   c1 log10(h) + c2 log10(a), one per interpolation. */
static void fit_add(double normal[3][4], double h, double a, double error) {
    const double row[3] = {1.0, log10(h), log10(a)}, y = log10(error);
    int u, v;
    for (u = 0; u < 3; u++) {
        for (v = 0; v < 3; v++) normal[u][v] += row[u] * row[v];
        normal[u][3] += row[u] * y;
    }
}

static void fit_print(double normal[3][4], const char *name) {
    int u, v, w;
    for (u = 0; u < 3; u++) /* Gauss-Jordan on the 3 x 3 system */
        for (v = 0; v < 3; v++) {
            double f;
            if (v == u) continue;
            f = normal[v][u] / normal[u][u];
            for (w = 0; w < 4; w++) normal[v][w] -= f * normal[u][w];
        }
    printf("    {%.4f, %.4f, %.4f}, /* %s */\n", normal[0][3] / normal[0][0],
           normal[1][3] / normal[1][1], normal[2][3] / normal[2][2], name);
}

static double relative_rms(const double *got, const double *want, size_t n) {
    double num = 0.0, den = 0.0;
    size_t i;
    for (i = 0; i < n; i++) {
        num += (got[i] - want[i]) * (got[i] - want[i]);
        den += want[i] * want[i];
    }
    return sqrt(num / den);
}

/* The periodic table: forces against Ewald at 1e-10 in cubes of 32 h. */
static int periodic_table(const double *spacings, int spacing_count, const double *cutoffs,
                          int cutoff_count, const char *const *names) {
    static double normal[4][3][4];
    static double errors[4][8][8];
    int h, c, order;
    for (h = 0; h < spacing_count; h++) {
        const double edge = 32.0 * spacings[h];
        const size_t count = (size_t)(0.046875 * edge * edge * edge + 0.5);
        test_system s = test_system_random(count, edge, 43);
        elec_box box = test_box(edge, edge, edge);
        elec_atoms atoms;
        elec_ewald_params ewald = {0};
        elec_ewald_terms terms;
        elec_error err;
        double *want = (double *)malloc(3 * count * sizeof *want);
        double *got = (double *)malloc(3 * count * sizeof *got), energy;
        test_system_make_neutral(&s);
        atoms = test_system_atoms(&s);
        ewald.tolerance = 1e-10;
        if (!want || !got ||
            elec_cpu_ewald(&atoms, &box, &ewald, &terms, want, NULL, &err) != ELEC_OK) {
            fprintf(stderr, "msm_error_table: Ewald reference failed\n");
            return 1;
        }
        for (order = ELEC_MSM_CUBIC; order <= ELEC_MSM_NONIC; order++)
            for (c = 0; c < cutoff_count; c++) {
                elec_msm_params p = {0};
                p.interpolation = (elec_msm_interpolation)order;
                p.splitting = order + 2;
                p.cutoff = cutoffs[c];
                p.spacing = spacings[h];
                if (elec_cpu_msm_periodic_energy(&atoms, &box, &p, &energy, got, NULL, &err) !=
                    ELEC_OK) {
                    fprintf(stderr, "msm_error_table: %s\n", err.message);
                    return 1;
                }
                errors[order][c][h] = relative_rms(got, want, 3 * count);
                fit_add(normal[order], spacings[h], cutoffs[c], errors[order][c][h]);
            }
        free(want);
        free(got);
        test_system_free(&s);
    }
    printf("\nMSM periodic force error (relative RMS vs exact Ewald), random atoms at 0.047 "
           "/A^3 in cubes of 32 h\n\n");
    printf("| interpolation, splitting | a (A) |");
    for (h = 0; h < spacing_count; h++) printf(" h = %.1f |", spacings[h]);
    printf("\n|---|---|");
    for (h = 0; h < spacing_count; h++) printf("---|");
    printf("\n");
    for (order = ELEC_MSM_CUBIC; order <= ELEC_MSM_NONIC; order++)
        for (c = 0; c < cutoff_count; c++) {
            printf("| %s, C%d | %.0f |", names[order], order + 2, cutoffs[c]);
            for (h = 0; h < spacing_count; h++) printf(" %.1e |", errors[order][c][h]);
            printf("\n");
        }
    printf("\nfit (elec.h, elec__msm_periodic_force_fit): log10(error) = c0 + c1 log10(h) + "
           "c2 log10(a)\n");
    for (order = ELEC_MSM_CUBIC; order <= ELEC_MSM_NONIC; order++)
        fit_print(normal[order], names[order]);
    return 0;
}

int main(void) {
    const double spacings[4] = {2.5, 2.0, 1.5, 1.0}, cutoffs[3] = {8.0, 12.0, 16.0};
    const char *const names[4] = {"C1 cubic", "C1 quintic", "C1 septic", "C1 nonic"};
    test_system s = test_system_random(3000, 40.0, 41);
    elec_atoms atoms;
    elec_lattice l;
    elec_error err;
    double *ref, total = 0.0;
    float *map;
    size_t n, i;
    int axis, h, c, order;
    static double normal[4][3][4];
    for (i = 0; i < s.count; i++) total += s.charge[i];
    for (i = 0; i < s.count; i++) s.charge[i] -= total / (double)s.count;
    atoms = test_system_atoms(&s);
    for (axis = 0; axis < 3; axis++) {
        l.dims[axis] = 33;
        l.origin[axis] = -4.0;
        l.spacing[axis] = 48.0 / 32.0;
    }
    n = elec_lattice_size(&l);
    ref = (double *)malloc(n * sizeof *ref);
    map = (float *)malloc(n * sizeof *map);
    if (!ref || !map || elec_cpu_dcs_map_double(&atoms, &l, NULL, ref, &err) != ELEC_OK) {
        fprintf(stderr, "msm_error_table: reference failed\n");
        return 1;
    }
    printf("MSM map error (relative RMS vs the exact sum), 3000 random atoms, 40 A cube\n\n");
    printf("| interpolation, splitting | a (A) | h = 2.5 | h = 2.0 | h = 1.5 | h = 1.0 |\n");
    printf("|---|---|---|---|---|---|\n");
    for (order = ELEC_MSM_CUBIC; order <= ELEC_MSM_NONIC; order++)
        for (c = 0; c < 3; c++) {
            /* the normal equations of the fit, per interpolation */
            printf("| %s, C%d | %.0f |", names[order], order + 2, cutoffs[c]);
            for (h = 0; h < 4; h++) {
                elec_msm_params p = {0};
                double num = 0.0, den = 0.0;
                p.interpolation = (elec_msm_interpolation)order;
                p.splitting = order + 2; /* smoother splitting for higher orders */
                p.cutoff = cutoffs[c];
                p.spacing = spacings[h];
                if (elec_cpu_msm_map(&atoms, &l, &p, map, &err) != ELEC_OK) {
                    printf(" %s |", err.message);
                    continue;
                }
                for (i = 0; i < n; i++) {
                    num += (map[i] - ref[i]) * (map[i] - ref[i]);
                    den += ref[i] * ref[i];
                }
                printf(" %.1e |", sqrt(num / den));
                fflush(stdout);
                fit_add(normal[order], spacings[h], cutoffs[c], sqrt(num / den));
            }
            printf("\n");
        }
    printf("\nfit (elec.h, elec__msm_error_fit): log10(error) = c0 + c1 log10(h) + "
           "c2 log10(a)\n");
    for (order = ELEC_MSM_CUBIC; order <= ELEC_MSM_NONIC; order++)
        fit_print(normal[order], names[order]);
    free(ref);
    free(map);
    test_system_free(&s);
    fflush(stdout);
    return periodic_table(spacings, 4, cutoffs, 3, names);
}
