/* Exact Ewald sum: against the Madelung constant of rock salt, the NIST
   SPC/E reference energies, its own invariances (the total does not depend
   on the splitting parameter alpha), finite differences of the energy, and
   the bare Coulomb energy of excluded pairs. */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "tests/test.h"
#include "tests/systems.h"
#ifdef _OPENMP
#include <omp.h>
#endif

/* Rock salt, exact (../shared/data/nist_spce/README.md): per ion pair
   E = -M / r0 with r0 the cation-anion distance. */
#define NACL_MADELUNG 1.747564594633182

static double relative(double got, double want) {
    return fabs(got - want) / fabs(want);
}

static test_system random_neutral(size_t n, double edge, unsigned long long seed) {
    test_system s = test_system_random(n, edge, seed);
    double total = 0.0;
    size_t i;
    for (i = 0; i < n; i++) total += s.charge[i];
    for (i = 0; i < n; i++) s.charge[i] -= total / (double)n;
    return s;
}

static elec_box cube(double edge) { return test_box(edge, edge, edge); }

TEST(rock_salt_gives_the_madelung_constant) {
    /* 2 x 2 x 2 conventional cells, 64 ions.  Tolerance 1e-11: the sum's
       truncation at tolerance 1e-14 is far below it; what remains is double
       rounding over ~1e5 terms, at most ~1e5 x 1.1e-16 (measured 3e-15).
       The forces vanish by symmetry, to the same rounding of terms of size
       1/r0^2. */
    const double a = 5.64, r0 = a / 2.0;
    test_system salt = test_system_nacl(2, a);
    elec_atoms atoms = test_system_atoms(&salt);
    elec_box box = cube(2.0 * a);
    elec_ewald_params p = {0};
    elec_ewald_terms e;
    elec_error err;
    double phi[64], forces[192], worst_phi = 0.0, worst_force = 0.0;
    size_t i;
    p.tolerance = 1e-14;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &e, forces, phi, &err) == ELEC_OK,
           "%s", err.message);
    printf("     E/pair = %.15f, -M/r0 = %.15f\n", e.total / 32.0, -NACL_MADELUNG / r0);
    EXPECT(relative(e.total / 32.0, -NACL_MADELUNG / r0) <= 1e-11,
           "energy per pair %.15g, want %.15g", e.total / 32.0, -NACL_MADELUNG / r0);
    for (i = 0; i < 64; i++) {
        /* The potential at an ion is -q M / r0; forces vanish by symmetry. */
        double want = -salt.charge[i] * NACL_MADELUNG / r0;
        if (relative(phi[i], want) > worst_phi) worst_phi = relative(phi[i], want);
        const double *f = forces + 3 * i;
        const double size = sqrt(f[0] * f[0] + f[1] * f[1] + f[2] * f[2]);
        if (size > worst_force) worst_force = size;
    }
    EXPECT(worst_phi <= 1e-11, "potential at an ion off by %.3e relative", worst_phi);
    EXPECT(worst_force <= 1e-11 / (r0 * r0), "largest force %.3e", worst_force);
    /* a cutoff past the box (1.5 box lengths, a small alpha): each ion then
       meets its own images in real space, a pair counted half (both of
       its ends are the one ion); the constant is the same */
    p.cutoff = 1.5 * 2.0 * a;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &e, forces, phi, &err) == ELEC_OK,
           "%s", err.message);
    printf("     cutoff 1.5 box lengths: E/pair = %.15f\n", e.total / 32.0);
    EXPECT(relative(e.total / 32.0, -NACL_MADELUNG / r0) <= 1e-11 &&
               relative(phi[0], -salt.charge[0] * NACL_MADELUNG / r0) <= 1e-11,
           "cutoff past the box: energy per pair %.15g, want %.15g", e.total / 32.0,
           -NACL_MADELUNG / r0);
    test_system_free(&salt);
}

/* The split between real and reciprocal space is arbitrary: converged
   totals at different alpha (and cutoffs past half the box, which need more
   images) must agree. */
static void check_alpha_independence(const test_system *s, double edge,
                                     const char *what) {
    elec_atoms atoms = test_system_atoms(s);
    elec_box box = cube(edge);
    const double cutoffs[3] = {0.5 * edge, 0.3 * edge, 0.8 * edge};
    double totals[3];
    elec_error err;
    int c;
    for (c = 0; c < 3; c++) {
        elec_ewald_params p = {0};
        elec_ewald_terms e;
        p.cutoff = cutoffs[c];
        p.tolerance = 1e-13;
        EXPECT(elec_cpu_ewald(&atoms, &box, &p, &e, NULL, NULL, &err) == ELEC_OK,
               "%s", err.message);
        totals[c] = e.total;
    }
    printf("     %s: %.12f %.12f %.12f\n", what, totals[0], totals[1], totals[2]);
    /* Each total's truncation is held to 1e-13 of the RMS force (its share
       of the tolerance); the energy's error, of the same order relative to
       the terms it is a difference of (self and reciprocal, up to ~1e2 times
       the total here), is ~1e-11 of the total: 1e-10 leaves a margin of ten
       (measured 3e-13). */
    EXPECT(relative(totals[1], totals[0]) <= 1e-10 && relative(totals[2], totals[0]) <= 1e-10,
           "%s: totals %.15g %.15g %.15g", what, totals[0], totals[1], totals[2]);
}

TEST(total_does_not_depend_on_alpha) {
    test_system neutral = random_neutral(150, 14.0, 3);
    test_system charged = test_system_random(120, 13.0, 4); /* net charge */
    check_alpha_independence(&neutral, 14.0, "neutral");
    check_alpha_independence(&charged, 13.0, "charged");
    test_system_free(&neutral);
    test_system_free(&charged);
}

/* The total energy at the atoms' current positions, for
   test_forces_vs_gradient. */
typedef struct ewald_call {
    const elec_atoms *atoms;
    const elec_box *box;
    const elec_ewald_params *params;
    elec_error *err;
} ewald_call;

static elec_status ewald_energy(void *user, double *total) {
    const ewald_call *c = (const ewald_call *)user;
    elec_ewald_terms e = {0}; /* total stays 0 when the call fails */
    elec_status s = elec_cpu_ewald(c->atoms, c->box, c->params, &e, NULL, NULL, c->err);
    *total = e.total;
    return s;
}

TEST(forces_are_minus_the_gradient_and_potentials_the_charge_derivative) {
    /* Central differences, h = 1e-5 A: error ~ h^2 |E'''| ~ 1e-9 of a
       force (measured 3.3e-9), held to 1e-8; with exclusions in play. */
    test_system s = random_neutral(24, 9.0, 8);
    elec_atoms atoms = test_system_atoms(&s);
    elec_box box = cube(9.0);
    const size_t excluded[6] = {0, 1, 1, 2, 5, 9};
    elec_ewald_params p = {0}, fixed = {0};
    elec_ewald_terms e;
    elec_error err;
    ewald_call call;
    double forces[72], phi[24], rms, half_q_phi = 0.0, worst_phi = 0.0, phi_scale = 0.0;
    size_t i, failed = 0;
    p.tolerance = 1e-13;
    p.excluded_pairs = excluded;
    p.excluded_pair_count = 3;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &e, forces, phi, &err) == ELEC_OK, "%s", err.message);
    call.atoms = &atoms;
    call.box = &box;
    call.params = &p;
    call.err = &err;
    rms = test_forces_vs_gradient(&s, forces, 1e-5, ewald_energy, &call, &failed);
    EXPECT(rms >= 0.0, "coordinate %zu moved: %s", failed, err.message);
    printf("     force vs -dE/dx relative RMS %.2e\n", rms);
    EXPECT(rms <= 1e-8, "forces differ from -grad E by %.3e", rms);
    for (i = 0; i < 24; i++) half_q_phi += 0.5 * s.charge[i] * phi[i];
    EXPECT(relative(half_q_phi, e.total) <= 1e-12, "sum q phi / 2 = %.15g, E = %.15g",
           half_q_phi, e.total);
    /* phi_i = dE/dq_i: E is a quadratic form in the charges (the neutralising
       background's -pi Q^2 / (2 V alpha^2) among its terms), so central
       differences are exact but for the rounding of E's largest terms (the
       self and reciprocal energies, ~1e3) over h = 1e-3 e: ~1e-16 x 1e3 /
       1e-3 = 1e-10 of a potential; 1e-9 of the largest |phi|.  alpha and
       the vectors are resolved once, as the choice reads the charges: the
       three energies are one function of q. */
    EXPECT(elec_ewald_params_resolve(&p, &box, &atoms, &fixed, &err) == ELEC_OK, "%s",
           err.message);
    call.params = &fixed;
    for (i = 0; i < 24; i++) {
        const double h = 1e-3, keep = s.charge[i];
        double up = 0.0, down = 0.0, derivative;
        s.charge[i] = keep + h;
        EXPECT(ewald_energy(&call, &up) == ELEC_OK, "%s", err.message);
        s.charge[i] = keep - h;
        EXPECT(ewald_energy(&call, &down) == ELEC_OK, "%s", err.message);
        s.charge[i] = keep;
        derivative = (up - down) / (2.0 * h);
        if (fabs(derivative - phi[i]) > worst_phi) worst_phi = fabs(derivative - phi[i]);
        phi_scale = fmax(phi_scale, fabs(phi[i]));
    }
    printf("     phi vs dE/dq largest difference %.2e of the largest |phi| %.3f\n", worst_phi,
           phi_scale);
    EXPECT(worst_phi <= 1e-9 * phi_scale, "phi differs from dE/dq by %.3e (|phi| up to %.3f)",
           worst_phi, phi_scale);
    test_system_free(&s);
}

TEST(excluding_a_pair_removes_its_bare_coulomb_energy) {
    /* Excluding (i, j) takes q_i q_j / r (nearest image) out of the total. */
    test_system s = random_neutral(40, 10.0, 12);
    elec_atoms atoms = test_system_atoms(&s);
    elec_box box = cube(10.0);
    const size_t excluded[4] = {3, 7, 20, 11};
    elec_ewald_params p = {0};
    elec_ewald_terms all, without;
    elec_error err;
    double bare = 0.0;
    int e;
    p.tolerance = 1e-13;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &all, NULL, NULL, &err) == ELEC_OK, "%s", err.message);
    p.excluded_pairs = excluded;
    p.excluded_pair_count = 2;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &without, NULL, NULL, &err) == ELEC_OK, "%s", err.message);
    for (e = 0; e < 2; e++) {
        size_t i = excluded[2 * e], j = excluded[2 * e + 1];
        double d2 = 0.0;
        int axis;
        for (axis = 0; axis < 3; axis++) {
            double d = s.xyz[3 * i + axis] - s.xyz[3 * j + axis];
            d -= 10.0 * floor(d / 10.0 + 0.5);
            d2 += d * d;
        }
        bare += s.charge[i] * s.charge[j] / sqrt(d2);
    }
    EXPECT(fabs((all.total - without.total) - bare) <= 1e-10 * fabs(all.total),
           "exclusion removed %.15g, bare Coulomb %.15g", all.total - without.total, bare);
    test_system_free(&s);
}

/* NIST's configuration file: count, "1 Lx Ly Lz", then index x y z element. */
static int read_nist(const char *path, size_t *count, double **xyz, double **q,
                     double box[3]) {
    FILE *f = fopen(path, "r");
    int one;
    size_t i;
    if (!f) return 0;
    if (fscanf(f, "%zu %d %lf %lf %lf", count, &one, &box[0], &box[1], &box[2]) != 5) {
        fclose(f);
        return 0;
    }
    *xyz = (double *)malloc(3 * *count * sizeof **xyz);
    *q = (double *)malloc(*count * sizeof **q);
    for (i = 0; i < *count; i++) {
        int index;
        char element[8];
        if (fscanf(f, "%d %lf %lf %lf %7s", &index, &(*xyz)[3 * i], &(*xyz)[3 * i + 1],
                   &(*xyz)[3 * i + 2], element) != 5) {
            fclose(f);
            return 0;
        }
        (*q)[i] = element[0] == 'O' ? -0.8476 : 0.4238; /* SPC/E */
    }
    fclose(f);
    return 1;
}

/* |got - want| within half a unit of the last of the 6 published digits. */
static int matches_published(double got, double want) {
    double unit = pow(10.0, floor(log10(fabs(want))) - 5.0);
    return fabs(got - want) <= 0.5 * unit;
}

TEST(nist_spce_configuration_1_reproduces_every_published_term) {
    const char *path = "../shared/data/nist_spce/spce_sample_config_periodic1.xyz";
    /* e^2 / (4 pi eps0 k_B A), with NIST's constants: energies in K */
    const double e = 1.602176634e-19, eps0 = 8.854187817e-12, kB = 1.3806488e-23;
    const double kelvin = e * e / (4.0 * 3.14159265358979323846 * eps0 * kB * 1e-10);
    size_t count, m, *pairs;
    double *xyz = NULL, *q = NULL, length[3];
    elec_atoms atoms;
    elec_box box;
    elec_ewald_params p = {0};
    elec_ewald_terms t;
    elec_error err;
    if (!read_nist(path, &count, &xyz, &q, length)) {
        free(xyz);
        free(q);
        SKIP("%s not readable: the NIST reference data are absent", path);
    }
    /* Exclusions: the three pairs inside each molecule (O H H). */
    pairs = (size_t *)malloc(2 * count * sizeof *pairs);
    for (m = 0; m < count / 3; m++) {
        size_t o = 3 * m;
        size_t list[6] = {o, o + 1, o, o + 2, o + 1, o + 2};
        memcpy(pairs + 6 * m, list, sizeof list);
    }
    atoms = elec_atoms_from_xyz(count, xyz, q, NULL);
    memcpy(box.length, length, sizeof length);
    p.scale = kelvin;
    p.alpha = 5.6 / length[0];
    p.cutoff = 10.0;
    p.kmax[0] = p.kmax[1] = p.kmax[2] = 5;
    p.n2_limit = 27;
    p.excluded_pairs = pairs;
    p.excluded_pair_count = count; /* 3 pairs per 3 atoms */
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &t, NULL, NULL, &err) == ELEC_OK, "%s", err.message);
    printf("     E_real %.6e  E_fourier %.6e  E_self %.6e  E_intra %.6e (K)\n", t.real,
           t.reciprocal, t.self, t.excluded);
    EXPECT(matches_published(t.real, -5.58889e5), "E_real %.6e", t.real);
    EXPECT(matches_published(t.reciprocal, 6.27009e3), "E_fourier %.6e", t.reciprocal);
    EXPECT(matches_published(t.self, -2.84469e6), "E_self %.6e", t.self);
    EXPECT(matches_published(t.excluded, 2.80999e6), "E_intra %.6e", t.excluded);
    EXPECT(fabs(t.background) < 1e-6, "a neutral box has no background term: %g", t.background);
    free(pairs);
    free(xyz);
    free(q);
}

TEST(bad_input_is_refused_with_a_reason) {
    double xyz[6] = {0, 0, 0, 1, 1, 1}, q[2] = {1, -1};
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL);
    elec_box box = cube(10.0), flat = cube(10.0);
    elec_ewald_params p = {0};
    elec_ewald_terms e;
    elec_error err;
    const size_t outside[2] = {0, 5}, self_pair[2] = {1, 1};
    flat.length[2] = 0.0;
    EXPECT(elec_cpu_ewald(&atoms, &flat, &p, &e, NULL, NULL, &err) == ELEC_ERR_INVALID_ARG,
           "zero box edge");
    flat.length[2] = -3.0;
    EXPECT(elec_cpu_ewald(&atoms, &flat, &p, &e, NULL, NULL, &err) == ELEC_ERR_INVALID_ARG,
           "negative box edge");
    /* a volume under double's range, named as the box's (the estimate's
       sums blamed the charges) */
    flat.length[0] = flat.length[1] = flat.length[2] = 1e-300;
    EXPECT(elec_cpu_ewald(&atoms, &flat, &p, &e, NULL, NULL, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "volume is under double's range"),
           "a 1e-300 A box: %s", err.message);
    flat = cube(10.0);
    flat.length[2] = 0.0;
    EXPECT(elec_cpu_ewald(&atoms, NULL, &p, &e, NULL, NULL, &err) == ELEC_ERR_INVALID_ARG, "NULL box");
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, NULL, NULL, NULL, &err) == ELEC_ERR_INVALID_ARG, "NULL energy");
    p.tolerance = 2.0;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &e, NULL, NULL, &err) == ELEC_ERR_INVALID_ARG,
           "tolerance 2: %s", err.message);
    p.tolerance = 0.0;
    p.excluded_pairs = outside;
    p.excluded_pair_count = 1;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &e, NULL, NULL, &err) == ELEC_ERR_INVALID_ARG,
           "exclusion of atom 5: %s", err.message);
    p.excluded_pairs = self_pair;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &e, NULL, NULL, &err) == ELEC_ERR_INVALID_ARG,
           "atom excluded from itself: %s", err.message);
    p.excluded_pair_count = 0;
    {
        /* an edge of 9e19 A with a 9 A cutoff: kmax would be ~1e19, past
           int; refused before the conversion (found by make fuzz; UBSan
           in make sanitize reports the cast if it comes back) */
        elec_box huge = cube(60.0);
        elec_ewald_params r;
        huge.length[0] = 9e19;
        p.cutoff = 9.0;
        EXPECT(elec_ewald_params_resolve(&p, &huge, &atoms, &r, &err) == ELEC_ERR_UNSUPPORTED &&
                   strstr(err.message, "reciprocal vectors"),
               "a 9e19 A edge: %s", err.message);
        p.cutoff = 0.0;
    }
    xyz[4] = NAN;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &e, NULL, NULL, &err) == ELEC_ERR_INVALID_ARG,
           "NaN coordinate");
}

TEST(atoms_outside_the_box_are_wrapped) {
    /* Moving an atom by whole box lengths changes nothing. */
    test_system s = random_neutral(30, 8.0, 21);
    elec_atoms atoms = test_system_atoms(&s);
    elec_box box = cube(8.0);
    elec_ewald_params p = {0};
    elec_ewald_terms inside, outside;
    elec_error err;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &inside, NULL, NULL, &err) == ELEC_OK, "%s", err.message);
    s.xyz[0] += 3 * 8.0;
    s.xyz[4] -= 2 * 8.0;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &outside, NULL, NULL, &err) == ELEC_OK, "%s", err.message);
    EXPECT(relative(outside.total, inside.total) <= 1e-12, "%.15g vs %.15g", outside.total,
           inside.total);
    test_system_free(&s);
}

TEST(direct_coulomb_energy_of_a_few_charges) {
    /* Three charges by hand: E = sum q_i q_j / r_ij; forces -dE/dr. */
    double xyz[9] = {0, 0, 0, 3, 0, 0, 0, 4, 0}, q[3] = {1, -1, 2}, f[9], e;
    elec_atoms atoms = elec_atoms_from_xyz(3, xyz, q, NULL);
    elec_error err;
    double want = (1 * -1) / 3.0 + (1 * 2) / 4.0 + (-1 * 2) / 5.0;
    EXPECT(elec_cpu_coulomb_energy(&atoms, 0.0, &e, f, &err) == ELEC_OK, "%s", err.message);
    EXPECT(fabs(e - want) <= 1e-15, "energy %.17g, want %.17g", e, want);
    /* force on atom 1 along x: from atom 0, q0 q1 / 9 pushes +x; from atom
       2 at (0,4,0), distance 5: q1 q2 / 25 along (3,-4,0)/5 */
    EXPECT(fabs(f[3] - (-1.0 / 9.0 + (-2.0 / 25.0) * 0.6)) <= 1e-15, "f1x %.17g", f[3]);
    EXPECT(elec_cpu_coulomb_energy(&atoms, ELEC_COULOMB, &e, NULL, &err) == ELEC_OK, "%s",
           err.message);
    EXPECT(fabs(e - ELEC_COULOMB * want) <= 1e-12, "scaled energy %.17g", e);
    xyz[3] = 0.0; /* atom 1 onto atom 0 */
    EXPECT(elec_cpu_coulomb_energy(&atoms, 0.0, &e, NULL, &err) == ELEC_ERR_INVALID_ARG,
           "coincident charges must be an error");
    /* the error names them for a tool to describe (err.atom) */
    EXPECT(err.atom[0] == 0 && err.atom[1] == 1, "named atoms %zu and %zu, want 0 and 1",
           err.atom[0], err.atom[1]);
    q[2] = NAN; /* one atom named; then a failure naming none clears them */
    EXPECT(elec_cpu_coulomb_energy(&atoms, 0.0, &e, NULL, &err) == ELEC_ERR_INVALID_ARG &&
               err.atom[0] == 2 && err.atom[1] == ELEC_NO_ATOM,
           "a NaN charge: atoms %zu, %zu named (%s)", err.atom[0], err.atom[1], err.message);
    q[2] = 2.0;
    EXPECT(elec_cpu_coulomb_energy(&atoms, 0.0, NULL, NULL, &err) == ELEC_ERR_INVALID_ARG &&
               err.atom[0] == ELEC_NO_ATOM && err.atom[1] == ELEC_NO_ATOM,
           "energy NULL: atoms %zu, %zu named (%s)", err.atom[0], err.atom[1], err.message);
}

/* The direct sum on 2,000 random charges: the pair sum written out here
   (each pair once, Newton's third law) to 1e-13, the same bits on one
   thread and on two; the first coincident pair (in the order i < j, i
   first) named among several; a sum of days refused before it starts. */
TEST(direct_coulomb_energy_of_many_charges) {
    test_system s = test_system_random(2000, 40.0, 61);
    elec_atoms atoms = test_system_atoms(&s);
    elec_error err;
    double *f = (double *)calloc(3 * s.count, sizeof *f);
    double *want_f = (double *)calloc(3 * s.count, sizeof *want_f);
    double *f1 = (double *)calloc(3 * s.count, sizeof *f1), e = 0.0, want = 0.0, worst = 0.0;
    double *huge_xyz, *huge_q;
    size_t i, j, huge = 290000; /* past the limit on one thread; on T, sqrt(T) times it */
    int axis;
    for (i = 0; i < s.count; i++)
        for (j = i + 1; j < s.count; j++) {
            double d[3], r;
            for (axis = 0; axis < 3; axis++) d[axis] = s.xyz[3 * i + axis] - s.xyz[3 * j + axis];
            r = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
            want += s.charge[i] * s.charge[j] / r;
            for (axis = 0; axis < 3; axis++) {
                double g = s.charge[i] * s.charge[j] / (r * r * r) * d[axis];
                want_f[3 * i + axis] += g;
                want_f[3 * j + axis] -= g;
            }
        }
    EXPECT(elec_cpu_coulomb_energy(&atoms, 0.0, &e, f, &err) == ELEC_OK, "%s", err.message);
    for (i = 0; i < 3 * s.count; i++)
        if (fabs(f[i] - want_f[i]) > worst) worst = fabs(f[i] - want_f[i]);
    EXPECT(fabs(e - want) <= 1e-13 * fabs(want) && worst <= 1e-12,
           "energy %.17g, want %.17g; worst force component off by %.3g", e, want, worst);
#ifdef _OPENMP
    {
        const int threads = omp_get_max_threads();
        double e1 = 0.0;
        omp_set_num_threads(threads > 1 ? 1 : 2);
        EXPECT(elec_cpu_coulomb_energy(&atoms, 0.0, &e1, f1, &err) == ELEC_OK, "%s",
               err.message);
        omp_set_num_threads(threads);
        EXPECT(e1 == e && memcmp(f1, f, 3 * s.count * sizeof *f) == 0,
               "another thread count: energy %.17g against %.17g", e1, e);
    }
#endif
    memcpy(s.xyz + 3 * 1500, s.xyz + 3 * 700, 3 * sizeof *s.xyz);
    memcpy(s.xyz + 3 * 901, s.xyz + 3 * 900, 3 * sizeof *s.xyz);
    EXPECT(elec_cpu_coulomb_energy(&atoms, 0.0, &e, f, &err) == ELEC_ERR_INVALID_ARG &&
               err.atom[0] == 700 && err.atom[1] == 1500,
           "coincident: atoms %zu and %zu named (%s)", err.atom[0], err.atom[1], err.message);
#ifdef _OPENMP
    huge = (size_t)(290000.0 * sqrt((double)omp_get_max_threads()));
#endif
    huge_xyz = (double *)calloc(3 * huge, sizeof *huge_xyz);
    huge_q = (double *)calloc(huge, sizeof *huge_q);
    atoms = elec_atoms_from_xyz(huge, huge_xyz, huge_q, NULL);
    EXPECT(elec_cpu_coulomb_energy(&atoms, 0.0, &e, NULL, &err) == ELEC_ERR_UNSUPPORTED &&
               strstr(err.message, "would take about"),
           "%zu atoms: %s", huge, err.message);
    free(huge_xyz);
    free(huge_q);
    free(f);
    free(f1);
    free(want_f);
    test_system_free(&s);
}

/* Exact Ewald is a reference: two calls on the same atoms give the same
   bits (the threads' sums were added in the runtime's order, and two
   calls on 600 atoms of water differed in the twelfth digit). */
TEST(exact_ewald_gives_the_same_bits_on_every_call) {
    test_system w = test_system_water(200, 3);
    size_t *ex = test_water_exclusions(200);
    elec_atoms atoms = test_system_atoms(&w);
    elec_box box = test_system_box(&w);
    elec_ewald_params p = {0};
    elec_ewald_terms first, again;
    elec_error err;
    double *f0 = (double *)malloc(3 * w.count * sizeof *f0);
    double *f1 = (double *)malloc(3 * w.count * sizeof *f1);
    double *phi0 = (double *)malloc(w.count * sizeof *phi0);
    double *phi1 = (double *)malloc(w.count * sizeof *phi1);
    const size_t which[3] = {0, 7, 301};
    int call;
    p.excluded_pairs = ex;
    p.excluded_pair_count = 600;
    p.tolerance = 1e-8;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &first, f0, phi0, &err) == ELEC_OK, "%s",
           err.message);
    for (call = 0; call < 3; call++) {
        EXPECT(elec_cpu_ewald(&atoms, &box, &p, &again, f1, phi1, &err) == ELEC_OK, "%s",
               err.message);
        EXPECT(again.real == first.real && again.reciprocal == first.reciprocal &&
                   again.total == first.total &&
                   memcmp(f0, f1, 3 * w.count * sizeof *f0) == 0 &&
                   memcmp(phi0, phi1, w.count * sizeof *phi0) == 0,
               "call %d: total %a against %a", call + 2, again.total, first.total);
    }
    EXPECT(elec_cpu_ewald_forces_at(&atoms, &box, &p, which, 3, f0, &err) == ELEC_OK &&
               elec_cpu_ewald_forces_at(&atoms, &box, &p, which, 3, f1, &err) == ELEC_OK &&
               memcmp(f0, f1, 9 * sizeof *f0) == 0,
           "forces at chosen atoms differ between calls (%s)", err.message);
    free(f0);
    free(f1);
    free(phi0);
    free(phi1);
    free(ex);
    test_system_free(&w);
}

/* scale multiplies energies, forces and potentials alike: each call at
   scale 1 and at ELEC_COULOMB (kcal/mol) gives ELEC_COULOMB times every
   output (the forces of the direct sum and the potentials of Ewald and
   SPME once came back in e^2/A whatever the scale, unnoticed). */
TEST(scale_multiplies_energies_forces_and_potentials) {
    test_system w = test_system_water(64, 9);
    elec_atoms atoms = test_system_atoms(&w);
    elec_box box = test_system_box(&w);
    const size_t n = w.count;
    double *f1 = (double *)malloc(3 * n * sizeof *f1), *fk = (double *)malloc(3 * n * sizeof *fk);
    double *p1 = (double *)malloc(n * sizeof *p1), *pk = (double *)malloc(n * sizeof *pk);
    double e1 = 0.0, ek = 0.0;
    elec_ewald_params ep = {0};
    elec_ewald_terms t1, tk;
    elec_error err;
    EXPECT(elec_cpu_coulomb_energy(&atoms, 1.0, &e1, f1, &err) == ELEC_OK &&
               elec_cpu_coulomb_energy(&atoms, ELEC_COULOMB, &ek, fk, &err) == ELEC_OK,
           "%s", err.message);
    EXPECT(fabs(ek - ELEC_COULOMB * e1) <= 1e-13 * fabs(ek) &&
               test_scaled_alike(fk, f1, 3 * n, ELEC_COULOMB),
           "direct sum: energy or forces not scaled");
    ep.tolerance = 1e-8;
    EXPECT(elec_cpu_ewald(&atoms, &box, &ep, &t1, f1, p1, &err) == ELEC_OK, "%s", err.message);
    ep.scale = ELEC_COULOMB;
    EXPECT(elec_cpu_ewald(&atoms, &box, &ep, &tk, fk, pk, &err) == ELEC_OK, "%s", err.message);
    EXPECT(fabs(tk.total - ELEC_COULOMB * t1.total) <= 1e-12 * fabs(tk.total) &&
               test_scaled_alike(fk, f1, 3 * n, ELEC_COULOMB) &&
               test_scaled_alike(pk, p1, n, ELEC_COULOMB),
           "Ewald: energy, forces or potentials not scaled");
#ifdef ELEC_WITH_FFTW
    {
        elec_spme_params sp = {0};
        sp.tolerance = 1e-5;
        EXPECT(elec_cpu_spme(&atoms, &box, &sp, &t1, f1, p1, &err) == ELEC_OK, "%s",
               err.message);
        sp.scale = ELEC_COULOMB;
        EXPECT(elec_cpu_spme(&atoms, &box, &sp, &tk, fk, pk, &err) == ELEC_OK, "%s",
               err.message);
        EXPECT(fabs(tk.total - ELEC_COULOMB * t1.total) <= 1e-12 * fabs(tk.total) &&
                   test_scaled_alike(fk, f1, 3 * n, ELEC_COULOMB) &&
                   test_scaled_alike(pk, p1, n, ELEC_COULOMB),
               "SPME: energy, forces or potentials not scaled");
    }
#endif
    free(f1);
    free(fk);
    free(p1);
    free(pk);
    test_system_free(&w);
}

TEST(sums_past_doubles_range_are_refused_not_returned) {
    /* Finite inputs whose sums overflow: charges of 1e200 e (the Coulomb
       energy was -inf, the Ewald energy NaN, both returned as ELEC_OK) and
       a box whose volume overflows (NaN energies).  Each an error naming
       what overflowed; a box of 1e100 A still sums. */
    double xyz[6] = {0, 0, 0, 3, 0, 0}, q[2] = {1e200, -1e200}, e, f[6];
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL);
    elec_box box = cube(20.0);
    elec_ewald_params p = {0};
    elec_ewald_terms t;
    elec_error err;
    EXPECT(elec_cpu_coulomb_energy(&atoms, 0.0, &e, f, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "double's range"),
           "Coulomb of 1e200 e: %s", err.message);
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &t, f, NULL, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "double's range"),
           "Ewald of 1e200 e: %s", err.message);
    {   /* the other energy calls, each refusing by name */
        const size_t which[1] = {0};
        elec_msm_params mp = {0};
        elec_spme_params sp = {0};
        elec_status got;
        EXPECT(elec_cpu_ewald_forces_at(&atoms, &box, &p, which, 1, f, &err) ==
                       ELEC_ERR_INVALID_ARG &&
                   strstr(err.message, "double's range"),
               "Ewald forces at atom 0 of 1e200 e: %s", err.message);
        EXPECT(elec_cpu_msm_energy(&atoms, &mp, &e, f, &err) == ELEC_ERR_INVALID_ARG &&
                   strstr(err.message, "double's range"),
               "MSM of 1e200 e: %s", err.message);
        EXPECT(elec_cpu_msm_periodic_energy(&atoms, &box, &mp, &e, f, NULL, &err) ==
                       ELEC_ERR_INVALID_ARG &&
                   strstr(err.message, "double's range"),
               "periodic MSM of 1e200 e: %s", err.message);
        sp.cutoff = 9.0; /* explicit, so that the resolve does not choose */
        sp.alpha = 0.3;
        sp.order = 4;
        sp.grid[0] = sp.grid[1] = sp.grid[2] = 20;
        got = elec_cpu_spme(&atoms, &box, &sp, &t, f, NULL, &err);
#ifdef ELEC_WITH_FFTW /* built with it, a refusal as unsupported is a failure (tests/fftw.h) */
        EXPECT(got == ELEC_ERR_INVALID_ARG && strstr(err.message, "double's range"),
               "SPME of 1e200 e: %s", err.message);
#else
        EXPECT(got == ELEC_ERR_UNSUPPORTED, "SPME of 1e200 e without FFTW3: %s", err.message);
#endif
        /* the parameters left to the resolve: its error estimates overflow
           (it said no cutoff, order and grid met the tolerance) */
        memset(&sp, 0, sizeof sp);
        EXPECT(elec_spme_params_resolve(&sp, &box, &atoms, &sp, &err) == ELEC_ERR_INVALID_ARG &&
                   strstr(err.message, "charges of up to 1e+200 e") &&
                   strstr(err.message, "double's range"),
               "SPME's resolve at 1e200 e: %s", err.message);
    }
    q[0] = 1.0;
    q[1] = -1.0;
    box = cube(1e150);
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &t, NULL, NULL, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "volume"),
           "a box of 1e150 A: %s", err.message);
    box = cube(1e100);
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &t, NULL, NULL, &err) == ELEC_OK &&
               isfinite(t.total),
           "a box of 1e100 A: %s", err.message);
}

/* With alpha and kmax fixed by the caller the call never refuses, and its
   estimate reports what the result comes to: within 1 to 3 times the
   actual energy error from alpha 0.5 to 50 /A at kmax 3 (an audit's: at 50
   the energy erred 54.7 where the estimate said 1.6, the asymptotic form
   alone; each charge's own Gaussian left out past kc is now counted). */
TEST(a_neutral_system_has_no_background_at_any_alpha) {
    /* -pi Q^2 / (2 alpha^2 V) with Q = 0 at alpha 1e-300 was 0 times
       infinity, NaN, and the neutral pair was refused as past double's
       range (an API audit's); at that alpha the sum is the bare pair
       within the cutoff, -1 / sqrt(12) */
    double xyz[6] = {1, 1, 1, 3, 3, 3}, q[2] = {1, -1}, phi[2];
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL);
    elec_box box = cube(10.0);
    elec_ewald_params p = {0};
    elec_ewald_terms t;
    elec_error err;
    p.alpha = 1e-300;
    p.cutoff = 5.0;
    p.kmax[0] = p.kmax[1] = p.kmax[2] = 2;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &t, NULL, phi, &err) == ELEC_OK &&
               t.background == 0.0 && fabs(t.total + 1.0 / sqrt(12.0)) < 1e-12 &&
               fabs(phi[0] + 1.0 / sqrt(12.0)) < 1e-12,
           "status %s: total %.15g background %g", err.message, t.total, t.background);
}

TEST(fixed_alpha_and_kmax_report_the_energy_error_they_make) {
    double xyz[6] = {1, 1, 1, 3, 2, 2}, q[2] = {1.0, -1.0};
    static const double alpha[3] = {0.5, 2.0, 50.0};
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL);
    elec_box box = cube(10.0);
    elec_ewald_terms exact, fixed;
    elec_error err;
    int k;
    EXPECT(elec_cpu_ewald(&atoms, &box, NULL, &exact, NULL, NULL, &err) == ELEC_OK, "%s",
           err.message);
    for (k = 0; k < 3; k++) {
        elec_ewald_params p = {0};
        double actual;
        p.alpha = alpha[k];
        p.kmax[0] = p.kmax[1] = p.kmax[2] = 3;
        EXPECT(elec_cpu_ewald(&atoms, &box, &p, &fixed, NULL, NULL, &err) == ELEC_OK, "%s",
               err.message);
        actual = fabs(fixed.total - exact.total);
        printf("     alpha %4g, kmax 3: energy error %.3g, expected %.3g\n", alpha[k], actual,
               fixed.error);
        EXPECT(fixed.error >= actual && fixed.error <= 3.0 * actual,
               "alpha %g: error %.3g, expected %.3g", alpha[k], actual, fixed.error);
    }
}

TEST(a_loose_tolerance_keeps_alpha_where_its_estimates_hold) {
    /* At tolerance 0.9 the real-space share alone would let alpha fall to
       8e-32 /A, where the energy's asymptotic estimate grows as 1/alpha^2
       (2.7e61 kcal/mol for two ions).  alpha stays at 1/cutoff or more,
       and the expected error bounds the actual one. */
    double xyz[6] = {0, 0, 0, 3, 0, 0}, q[2] = {1.0, -1.0};
    elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL);
    elec_box box = cube(20.0);
    elec_ewald_params p = {0}, r;
    elec_ewald_terms loose, exact;
    elec_error err;
    p.scale = ELEC_COULOMB;
    p.tolerance = 0.9;
    EXPECT(elec_ewald_params_resolve(&p, &box, &atoms, &r, &err) == ELEC_OK &&
               r.alpha * r.cutoff >= 1.0 - 1e-12 && isfinite(r.estimate.energy),
           "alpha %g at cutoff %g, energy estimate %g: %s", r.alpha, r.cutoff,
           r.estimate.energy, err.message);
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &loose, NULL, NULL, &err) == ELEC_OK, "%s",
           err.message);
    p.tolerance = 1e-10;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &exact, NULL, NULL, &err) == ELEC_OK, "%s",
           err.message);
    printf("     tolerance 0.9: alpha %.4f, error %.3g kcal/mol, expected %.3g\n", r.alpha,
           fabs(loose.total - exact.total), loose.error);
    EXPECT(fabs(loose.total - exact.total) <= loose.error && loose.error < 100.0,
           "error %g, expected %g", fabs(loose.total - exact.total), loose.error);
}

TEST(coincident_atoms_and_doubled_exclusions_are_refused) {
    /* Two atoms at one place (here through the periodic wrap) that are not
       excluded have infinite energy: an error, not a number.  A pair
       excluded twice would be corrected twice. */
    double xyz[9] = {0, 1, 1, 10, 1, 1, 5, 5, 5}, q[3] = {1, -1, 0.5};
    elec_atoms atoms = elec_atoms_from_xyz(3, xyz, q, NULL);
    elec_box box = cube(10.0);
    elec_ewald_params p = {0};
    elec_ewald_terms e;
    elec_error err;
    const size_t pair[2] = {0, 1}, twice[4] = {0, 2, 2, 0};
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &e, NULL, NULL, &err) == ELEC_ERR_INVALID_ARG,
           "coincident atoms: %s", err.message);
    EXPECT(err.atom[0] == 0 && err.atom[1] == 1, "named atoms %zu and %zu, want 0 and 1",
           err.atom[0], err.atom[1]);
    p.excluded_pairs = pair;
    p.excluded_pair_count = 1;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &e, NULL, NULL, &err) == ELEC_OK,
           "an excluded coincident pair is fine: %s", err.message);
    EXPECT(isfinite(e.total), "finite energy: %g", e.total);
    xyz[3] = 3.0;
    p.excluded_pairs = twice;
    p.excluded_pair_count = 2;
    EXPECT(elec_cpu_ewald(&atoms, &box, &p, &e, NULL, NULL, &err) == ELEC_ERR_INVALID_ARG,
           "a pair excluded twice: %s", err.message);
    /* past 2^32 atoms a pair's key i n + j passes size_t (two pairs could
       share one): the check refuses before a pair is read (the atoms are
       only counted here, not made) */
    if (sizeof(size_t) >= 8) {
        const size_t many = (size_t)1 << 33, far[2] = {0, ((size_t)1 << 33) - 1};
        EXPECT(elec__exclusions_check(far, 1, many, &err) == ELEC_ERR_UNSUPPORTED &&
                   strstr(err.message, "size_t"),
               "2^33 atoms: %s", err.message);
        EXPECT(elec__exclusions_check(far, 0, many, &err) == ELEC_OK, "no pairs: %s",
               err.message);
        EXPECT(elec__exclusions_check(pair, 1, (size_t)1 << 32, &err) == ELEC_OK,
               "2^32 atoms: %s", err.message);
    }
}

TEST(a_crystal_s_coincident_atoms_are_found_across_every_seam) {
    /* The coincident search hashes atoms into cells of about the distance
       (1e-4 A), periodic: a perfect crystal, whose atoms share their x,
       y and z by the hundred, plus one uncharged atom by atom 0 (at the
       origin) through the x seam, through the corner where all three meet,
       and just past the distance through that corner; then the first case
       with the probe first (index 0, atom 0 then index 1), so that the
       search runs from the atom by the seam's far side. */
    const double a = 4.0, edge = 20.0, d = ELEC_COINCIDENT_DISTANCE;
    const double where[3][3] = {{edge - 0.4 * d, 0.0, 0.0},
                                {edge - 0.3 * d, edge - 0.3 * d, edge - 0.3 * d},
                                {edge - 0.6 * d, edge - 0.6 * d, edge - 0.6 * d}};
    test_system salt = test_system_nacl(5, a);
    size_t n = salt.count;
    double *xyz = (double *)malloc(3 * (n + 1) * sizeof *xyz);
    double *q = (double *)malloc((n + 1) * sizeof *q);
    elec_box box = cube(edge);
    elec_ewald_terms e;
    elec_error err;
    int k;
    memcpy(xyz, salt.xyz, 3 * n * sizeof *xyz);
    memcpy(q, salt.charge, n * sizeof *q);
    q[n] = 0.0;
    for (k = 0; k < 3; k++) {
        elec_atoms atoms = elec_atoms_from_xyz(n + 1, xyz, q, NULL);
        elec_status s;
        memcpy(xyz + 3 * n, where[k], sizeof where[k]);
        s = elec_cpu_ewald(&atoms, &box, NULL, &e, NULL, NULL, &err);
        if (k < 2)
            EXPECT(s == ELEC_ERR_INVALID_ARG && err.atom[0] == 0 && err.atom[1] == n,
                   "case %d: status %d, atoms %zu and %zu (want 0 and %zu): %s", k, (int)s,
                   err.atom[0], err.atom[1], n, err.message);
        else
            EXPECT(s == ELEC_OK, "1.04 times the distance apart: %s", err.message);
    }
    memmove(xyz + 3, xyz, 3 * n * sizeof *xyz);
    memmove(q + 1, q, n * sizeof *q);
    memcpy(xyz, where[0], sizeof where[0]);
    q[0] = 0.0;
    {
        elec_atoms atoms = elec_atoms_from_xyz(n + 1, xyz, q, NULL);
        elec_status s = elec_cpu_ewald(&atoms, &box, NULL, &e, NULL, NULL, &err);
        EXPECT(s == ELEC_ERR_INVALID_ARG && err.atom[0] == 0 && err.atom[1] == 1,
               "probe first: status %d, atoms %zu and %zu (want 0 and 1): %s", (int)s,
               err.atom[0], err.atom[1], err.message);
    }
    free(xyz);
    free(q);
    test_system_free(&salt);
}

TEST(float_erfc_of_the_gpu_pair_function_is_accurate_to_float_rounding) {
    /* elec_erfc_scaled_float (elec.h), as the GPU real space uses it:
       erfc(x) = expf(-x^2) t P(t), t = 1/(1 + x/2), all in float, against
       the double erfc at the same float x, for x in [0, 6] (alpha r up to
       the tightest tolerances' alpha rc ~ 4.5, and beyond).  Allowed: 5e-7
       (a few ulp of the reciprocal, the polynomial and the product) plus
       2.4e-7 x^2: erfc's own condition number 2 x^2 times the ulp
       (6e-8) that rounding x^2 and expf's argument cost, twice. */
    double worst = 0.0, worst_x = 0.0;
    int i;
    for (i = 0; i <= 60000; i++) {
        float x = (float)(6.0 * i / 60000.0);
        float t = 1.0f / (1.0f + 0.5f * x);
        float got = expf(-x * x) * elec_erfc_scaled_float(t);
        double want = erfc((double)x);
        double ratio = fabs(got - want) / want / (5e-7 + 2.4e-7 * (double)x * x);
        if (ratio > worst) {
            worst = ratio;
            worst_x = x;
        }
    }
    printf("     worst error / allowed: %.3f at x = %.4f\n", worst, worst_x);
    EXPECT(worst <= 1.0, "float erfc error %.3f of its allowance at x = %g", worst, worst_x);
}

int main(void) {
    RUN(coincident_atoms_and_doubled_exclusions_are_refused);
    RUN(a_crystal_s_coincident_atoms_are_found_across_every_seam);
    RUN(sums_past_doubles_range_are_refused_not_returned);
    RUN(a_loose_tolerance_keeps_alpha_where_its_estimates_hold);
    RUN(a_neutral_system_has_no_background_at_any_alpha);
    RUN(fixed_alpha_and_kmax_report_the_energy_error_they_make);
    RUN(float_erfc_of_the_gpu_pair_function_is_accurate_to_float_rounding);
    RUN(direct_coulomb_energy_of_a_few_charges);
    RUN(direct_coulomb_energy_of_many_charges);
    RUN(exact_ewald_gives_the_same_bits_on_every_call);
    RUN(scale_multiplies_energies_forces_and_potentials);
    RUN(rock_salt_gives_the_madelung_constant);
    RUN(total_does_not_depend_on_alpha);
    RUN(forces_are_minus_the_gradient_and_potentials_the_charge_derivative);
    RUN(excluding_a_pair_removes_its_bare_coulomb_energy);
    RUN(nist_spce_configuration_1_reproduces_every_published_term);
    RUN(bad_input_is_refused_with_a_reason);
    RUN(atoms_outside_the_box_are_wrapped);
    return test_summary();
}
