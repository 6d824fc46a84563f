/* msm_error_table - MSM's map error against the exact sum for several
   finest spacings h, cutoffs a and interpolation orders: the table the
   README keeps, to choose MSM parameters from an accuracy target.

   3000 random atoms with charges in [-1, 1] (made neutral) in a 40 A cube,
   and a 33^3 map over it; error = relative RMS against the double DCS
   sum.  Runs on the CPU (make msm-table).  After the table, the least
   squares fit log10(error) = c0 + c1 log10(h) + c2 log10(a) per
   interpolation: the model elec.h's tolerance chooses by
   (elec__msm_error_fit).  It calls nothing private, only names that fit:
   the fit is written once, in elec.h ("math written once"), and this
   program is where its numbers come from, so it stays a private table of
   the header with its generator beside it here. */
#define _POSIX_C_SOURCE 200809L
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "tests/systems.h"

#include <time.h>

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
                {
                    double row[3], y = log10(sqrt(num / den));
                    int u, v;
                    row[0] = 1.0;
                    row[1] = log10(spacings[h]);
                    row[2] = log10(cutoffs[c]);
                    for (u = 0; u < 3; u++) {
                        for (v = 0; v < 3; v++) normal[order][u][v] += row[u] * row[v];
                        normal[order][u][3] += row[u] * y;
                    }
                }
            }
            printf("\n");
        }
    printf("\nfit (elec.h, elec__msm_error_fit): log10(error) = c0 + c1 log10(h) + "
           "c2 log10(a)\n");
    for (order = ELEC_MSM_CUBIC; order <= ELEC_MSM_NONIC; order++) {
        double (*m)[4] = normal[order];
        int u, v, w;
        for (u = 0; u < 3; u++) /* Gauss-Jordan on the 3 x 3 system */
            for (v = 0; v < 3; v++) {
                double f;
                if (v == u) continue;
                f = m[v][u] / m[u][u];
                for (w = 0; w < 4; w++) m[v][w] -= f * m[u][w];
            }
        printf("    {%.4f, %.4f, %.4f}, /* %s */\n", m[0][3] / m[0][0], m[1][3] / m[1][1],
               m[2][3] / m[2][2], names[order]);
    }
    free(ref);
    free(map);
    test_system_free(&s);
    return 0;
}
