/* spme_error_table - the a-priori error of SPME's reciprocal part, for
   random uncorrelated charges, as the table elec.h interpolates
   (elec__spme_error_table; make spme-table prints it again).  It calls
   nothing private: it prints the table's C source, which is written once,
   in elec.h ("math written once"), and stays private there, with its
   generator beside it here.

   Theory (Hockney and Eastwood's error functional, extended by Deserno and
   Holm to P3M; here for SPME's B-splines of order p, Essmann's influence
   function theta = phi(k) / prod_a |D_a|^2 and forces by analytic
   differentiation).  Along each axis a of mesh spacing h the charge
   assignment has the Fourier transform U_n(kappa) = (sin(kappa/2) /
   (kappa/2 + pi n))^p (kappa = k h, n the alias; a common phase dropped),
   D = sum_n U_n (Euler's exponential spline, Essmann's b-moduli), and with
   e_n = U_n / U_0 = (kappa / (kappa + 2 pi n))^p everything below is a
   rational function of the e_n.  For charges at independent uniform
   positions the mean square force error on an atom is

       dF^2 = (sum q^2)^2 / (N V) * I_int  +  (sum q^4 / N) * I_self,

       I_int = int_BZ d3k/(2pi)^3 sum_m |k_m|^2 [G^2 U_m^2 S2 - 2 G U_m^2
               phi(k_m) + phi(k_m)^2],    S2 = sum_m U_m^2, G = theta,
       I_self = sum_{s != 0} |A_s|^2,  A_s = int_BZ d3k/(2pi)^3 G sum_m
               k_{m+s} U_{m+s} U_m            (the force of an atom on
               itself through the mesh, which depends on where it sits in
               its cell and vanishes for odd p at leading order),

   phi(k) = 4 pi exp(-k^2 / (4 alpha^2)) / k^2 and k_m = k + 2 pi m / h.
   The energy's error has a mean part (each charge's self energy through
   the mesh differs from the exact one by the same amount),

       E_bias = Q2 / 2 * int_BZ [G S2 - sum_m phi(k_m)],

   and a random part from the pairs, dE^2 = (Q2)^2 / (2 V) * I_pot, with
   I_pot the integral of I_int without the |k_m|^2.  In units of alpha the
   integrals depend only on x = alpha h per axis; along one axis they are
   one third of the cubic value (checked below against the direct
   anisotropic integral: the cross terms are of higher order).  The table
   holds, for p = 4, 6, 8 and x = 0.025 * 2^(j/4):
       log10(I_int / alpha), log10(I_self / alpha^4),
       log10(-E_bias * 2 / (Q2 alpha)), log10(I_pot * alpha).
   Odd orders are not tabulated: their spline's transform D vanishes at the
   edge of the zone, the influence function phi / |D|^2 blows up there and
   the continuum integral diverges (the mesh's point at the edge, where K
   is even, takes its neighbours' moduli).  elec.h takes the geometric mean
   of the neighbouring even orders over the whole zone and adds the modes
   next to the edge, summed as the mesh has them (elec__spme_odd_edge):
   their error grows with K, and an odd K errs several times more than an
   even one.

   Checked against measurement (CPU SPME against exact Ewald at the same
   alpha, 1000 random charges in a 24 A cube, 600 charged in 21 A, 1500 in
   a 31.7 x 27.3 x 35.9 A box; alpha 0.25 to 0.5, x 0.1 to 0.9, p 4, 6, 8):
   the force error within 0.93 to 1.09 of the prediction, the energy's
   reciprocal error within 10 % of E_bias.  Odd orders with their edge
   modes, random charges (alpha 0.3 to 1, x 0.2 to 1.4, K 10 to 48): 0.8
   to 1.6, the low end at odd K past x = 0.9 (water, weighed by its
   structure factor as the even orders are: 0.57 to 1.5). */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PI 3.14159265358979323846
#define ALIASES 6 /* n = -6..6 along each axis */
#define NODES 40  /* Gauss-Legendre nodes per axis */

typedef struct axis_terms {
    double k, w0, c, t1, c2, t2, log_w0, log_s;
    double e[2 * ALIASES + 1]; /* U_n / U_0 */
    double inv_d;              /* U_0 / D = 1 / (1 + E) */
} axis_terms;

static void gauss_legendre(int n, double *x, double *w) {
    int i, j;
    for (i = 0; i < (n + 1) / 2; i++) {
        double z = cos(PI * (i + 0.75) / (n + 0.5)), z1, dp;
        do {
            double p1 = 1.0, p2 = 0.0;
            for (j = 0; j < n; j++) {
                double p3 = p2;
                p2 = p1;
                p1 = ((2.0 * j + 1.0) * z * p2 - j * p3) / (j + 1.0);
            }
            dp = n * (z * p1 - p2) / (z * z - 1.0);
            z1 = z;
            z = z1 - p1 / dp;
        } while (fabs(z - z1) > 1e-15);
        x[i] = -z;
        x[n - 1 - i] = z;
        w[i] = w[n - 1 - i] = 2.0 / ((1.0 - z * z) * dp * dp);
    }
}

static void axis_eval(double k, double h, int p, axis_terms *a) {
    double kappa = k * h, big_e = 0.0, sq = 0.0;
    int n;
    memset(a, 0, sizeof *a);
    a->k = k;
    for (n = -ALIASES; n <= ALIASES; n++) {
        double e = n == 0 ? 1.0 : pow(kappa / (kappa + 2.0 * PI * n), p);
        a->e[n + ALIASES] = e;
        if (n != 0) {
            big_e += e;
            sq += e * e;
        }
    }
    a->inv_d = 1.0 / (1.0 + big_e);
    a->w0 = a->inv_d * a->inv_d;
    for (n = -ALIASES; n <= ALIASES; n++) {
        double w, kn;
        if (n == 0) continue;
        w = a->e[n + ALIASES] * a->e[n + ALIASES] * a->w0;
        kn = k + 2.0 * PI * n / h;
        a->c += w;
        a->t1 += kn * kn * w;
        a->c2 += w * w;
        a->t2 += kn * kn * w * w;
    }
    a->log_w0 = -2.0 * log1p(big_e);
    a->log_s = log1p(sq) - 2.0 * log1p(big_e);
}

static double phi_hat(double k2, double alpha) {
    return 4.0 * PI / k2 * exp(-k2 / (4.0 * alpha * alpha));
}

typedef struct theory { double i_int, i_self, bias, i_pot; } theory;

/* prod_a (x_a + y_a) - prod_a x_a, term by term (no cancellation) */
static double excess3(const double x[3], const double y[3]) {
    return y[0] * (x[1] + y[1]) * (x[2] + y[2]) + x[0] * y[1] * (x[2] + y[2]) +
           x[0] * x[1] * y[2];
}

static theory spme_theory(int p, double alpha, const double h[3]) {
    double node[NODES], weight[NODES], kmax[3];
    axis_terms *terms[3];
    double self[3][2 * ALIASES + 1];
    theory t = {0.0, 0.0, 0.0, 0.0};
    int axis, i, j, l, n;
    gauss_legendre(NODES, node, weight);
    memset(self, 0, sizeof self);
    for (axis = 0; axis < 3; axis++) {
        kmax[axis] = PI / h[axis];
        if (kmax[axis] > 12.0 * alpha) kmax[axis] = 12.0 * alpha;
        terms[axis] = (axis_terms *)malloc(NODES * sizeof(axis_terms));
        for (i = 0; i < NODES; i++)
            axis_eval(0.5 * kmax[axis] * (node[i] + 1.0), h[axis], p, &terms[axis][i]);
    }
    for (i = 0; i < NODES; i++)
        for (j = 0; j < NODES; j++)
            for (l = 0; l < NODES; l++) {
                const axis_terms *v[3];
                double w0[3], c[3], s[3], w02[3], c2[3], k2, ph, wt, d0, ps, xm, ym;
                double pw0, t1, t2, bias, pot, k_a2[3];
                int mx, my, mz, b;
                v[0] = &terms[0][i];
                v[1] = &terms[1][j];
                v[2] = &terms[2][l];
                /* the octant, times 8 (everything is even in each k_a) */
                wt = weight[i] * weight[j] * weight[l] * kmax[0] * kmax[1] * kmax[2] /
                     (8.0 * PI * PI * PI);
                k2 = 0.0;
                for (axis = 0; axis < 3; axis++) {
                    k_a2[axis] = v[axis]->k * v[axis]->k;
                    k2 += k_a2[axis];
                    w0[axis] = v[axis]->w0;
                    c[axis] = v[axis]->c;
                    s[axis] = w0[axis] + c[axis];
                    w02[axis] = w0[axis] * w0[axis];
                    c2[axis] = v[axis]->c2;
                }
                ph = phi_hat(k2, alpha);
                pw0 = expm1(v[0]->log_w0 + v[1]->log_w0 + v[2]->log_w0);
                d0 = excess3(w0, c);  /* sum_{m != 0} prod w_m       */
                ps = s[0] * s[1] * s[2];
                /* sum_{m != 0} |k_m|^2 prod w_m and the same with w^2 */
                xm = ym = 0.0;
                for (axis = 0; axis < 3; axis++) {
                    int b1 = (axis + 1) % 3, b2 = (axis + 2) % 3;
                    xm += v[axis]->t1 * s[b1] * s[b2] +
                          k_a2[axis] * w0[axis] * (c[b1] * s[b2] + w0[b1] * c[b2]);
                    ym += v[axis]->t2 * (w02[b1] + c2[b1]) * (w02[b2] + c2[b2]) +
                          k_a2[axis] * w02[axis] *
                              (c2[b1] * (w02[b2] + c2[b2]) + w02[b1] * c2[b2]);
                }
                t1 = k2 * ph * ph * pw0 * pw0;
                t2 = ph * ph * (k2 * w0[0] * w0[1] * w0[2] * d0 + ps * xm - ym);
                bias = ph * expm1(v[0]->log_s + v[1]->log_s + v[2]->log_s);
                pot = ph * ph * pw0 * pw0 +
                      ph * ph * (w0[0] * w0[1] * w0[2] * d0 + ps * d0 -
                                 excess3(w02, c2));
                for (mx = -2; mx <= 2; mx++)
                    for (my = -2; my <= 2; my++)
                        for (mz = -2; mz <= 2; mz++) {
                            double km[3], km2, mesh, g;
                            if (!mx && !my && !mz) continue;
                            km[0] = v[0]->k + 2.0 * PI * mx / h[0];
                            km[1] = v[1]->k + 2.0 * PI * my / h[1];
                            km[2] = v[2]->k + 2.0 * PI * mz / h[2];
                            km2 = km[0] * km[0] + km[1] * km[1] + km[2] * km[2];
                            mesh = ph * (v[0]->e[mx + ALIASES] * v[0]->e[mx + ALIASES] * v[0]->w0) *
                                   (v[1]->e[my + ALIASES] * v[1]->e[my + ALIASES] * v[1]->w0) *
                                   (v[2]->e[mz + ALIASES] * v[2]->e[mz + ALIASES] * v[2]->w0);
                            g = mesh - phi_hat(km2, alpha);
                            t1 += km2 * g * g;
                            pot += g * g;
                            bias -= phi_hat(km2, alpha);
                        }
                t.i_int += wt * (t1 + t2);
                t.bias += wt * bias;
                t.i_pot += wt * pot;
                /* self force along each axis: f_n(k_a) - f_-n(k_a) covers
                   k_a < 0; the other two axes' octants count twice each */
                for (axis = 0; axis < 3; axis++) {
                    const axis_terms *va = v[axis];
                    double others = 1.0;
                    for (b = 0; b < 3; b++)
                        if (b != axis) others *= s[b];
                    for (n = -ALIASES; n <= ALIASES; n++) {
                        double f = 0.0;
                        int m;
                        if (n == 0) continue;
                        for (m = -ALIASES; m <= ALIASES; m++) {
                            int mn = m + n;
                            if (mn < -ALIASES || mn > ALIASES) continue;
                            f += (va->k + 2.0 * PI * mn / h[axis]) * va->e[mn + ALIASES] *
                                 va->e[m + ALIASES] * va->w0;
                        }
                        self[axis][n + ALIASES] += 0.5 * wt * ph * f * others;
                    }
                }
            }
    for (axis = 0; axis < 3; axis++) {
        for (n = 1; n <= ALIASES; n++) {
            double a = self[axis][n + ALIASES] - self[axis][-n + ALIASES];
            t.i_self += 2.0 * a * a;
        }
        free(terms[axis]);
    }
    return t;
}

#define POINTS 27

int main(int argc, char **argv) {
    const int orders[3] = {4, 6, 8};
    const double alpha = 1.0;
    int o, j;
    if (argc > 1 && !strcmp(argv[1], "--check")) {
        /* one axis at a time: the anisotropic integral against the sum of
           one third of the cubic ones */
        const double xs[3][3] = {{0.2, 0.3, 0.4}, {0.3, 0.45, 0.6}, {0.5, 0.5, 0.8}};
        for (o = 0; o < 3; o++)
            for (j = 0; j < 3; j++) {
                theory direct = spme_theory(orders[o], alpha, xs[j]), sum = {0, 0, 0, 0};
                int axis;
                for (axis = 0; axis < 3; axis++) {
                    double h[3];
                    theory t;
                    h[0] = h[1] = h[2] = xs[j][axis];
                    t = spme_theory(orders[o], alpha, h);
                    sum.i_int += t.i_int / 3.0;
                    sum.i_self += t.i_self / 3.0;
                    sum.bias += t.bias / 3.0;
                    sum.i_pot += t.i_pot / 3.0;
                }
                printf("p %d  x %.2f %.2f %.2f: direct/per-axis  int %.3f  self %.3f  "
                       "bias %.3f  pot %.3f\n",
                       orders[o], xs[j][0], xs[j][1], xs[j][2], direct.i_int / sum.i_int,
                       direct.i_self / sum.i_self, direct.bias / sum.bias,
                       direct.i_pot / sum.i_pot);
            }
        return 0;
    }
    printf("/* generated by bench/spme_error_table.c (make spme-table): for p = 4, 6, 8\n"
           "   and x = alpha h = 0.025 * 2^(j/4), j = 0..%d: log10 of I_int / alpha,\n"
           "   I_self / alpha^4, -2 E_bias / (Q2 alpha), I_pot alpha */\n", POINTS - 1);
    printf("static const float elec__spme_error_table[3][4][%d] = {\n", POINTS);
    for (o = 0; o < 3; o++) {
        double v[4][POINTS];
        int q;
        for (j = 0; j < POINTS; j++) {
            double x = 0.025 * pow(2.0, j / 4.0), h[3];
            theory t;
            h[0] = h[1] = h[2] = x / alpha;
            t = spme_theory(orders[o], alpha, h);
            v[0][j] = log10(t.i_int / alpha);
            v[1][j] = log10(t.i_self / pow(alpha, 4));
            v[2][j] = log10(-2.0 * t.bias / alpha);
            v[3][j] = log10(t.i_pot * alpha);
        }
        printf("    { /* p = %d */\n", orders[o]);
        for (q = 0; q < 4; q++) {
            printf("        {");
            for (j = 0; j < POINTS; j++)
                printf("%s%.4ff", j ? (j % 7 ? ", " : ",\n         ") : "", v[q][j]);
            printf("}%s\n", q < 3 ? "," : "");
        }
        printf("    }%s\n", o < 2 ? "," : "");
    }
    printf("};\n");
    return 0;
}
