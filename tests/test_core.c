/* tests/test_core.c - the core header: status strings, units, atom views,
   lattices and their faces, parameter defaults and checks. */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "tests/test.h"
#include "tests/systems.h"

TEST(status_strings_name_every_code) {
    int s;
    for (s = 0; s < ELEC_STATUS_COUNT; s++) {
        const char *name = elec_status_string((elec_status)s);
        EXPECT(name && name[0] && strcmp(name, "unknown status") != 0,
               "status %d has no name", s);
    }
    EXPECT(strcmp(elec_status_string(ELEC_OK), "ok") == 0, "ELEC_OK is '%s'",
           elec_status_string(ELEC_OK));
    EXPECT(strcmp(elec_status_string(ELEC_STATUS_COUNT), "unknown status") == 0,
           "out of range status named '%s'",
           elec_status_string(ELEC_STATUS_COUNT));
}

TEST(kT_scale_at_room_temperature) {
    /* By hand: R T = 1.987204259e-3 kcal/(mol K) * 298.15 K = 0.592484 kcal/mol,
       332.0636 / 0.592484 = 560.46.  4 digits is what the value is quoted to. */
    double scale = elec_kT_scale(298.15);
    double by_hand = 332.0636 / (1.987204259e-3 * 298.15);
    EXPECT(fabs(scale - 560.46) < 0.005, "kT scale %.4f, want 560.46", scale);
    EXPECT(fabs(scale - by_hand) <= 1e-12 * by_hand, "kT scale %.10g vs %.10g",
           scale, by_hand);
    EXPECT(elec_kT_scale(0.0) == 0.0 && elec_kT_scale(-1.0) == 0.0,
           "non-positive temperature should give 0");
}

TEST(kappa_of_a_tenth_molar_salt) {
    /* 0.1040 /A is the textbook value (Debye length 9.6 A) quoted to 4
       digits; 0.5 % allows for the rounding of the constants behind it. */
    double kappa = elec_kappa_from_ionic_strength(0.1, 78.54, 298.15);
    EXPECT(fabs(kappa - 0.1040) <= 0.005 * 0.1040, "kappa %.5f /A, want 0.1040",
           kappa);
    /* kappa grows as sqrt(I): exact up to double rounding. */
    EXPECT(fabs(elec_kappa_from_ionic_strength(0.4, 78.54, 298.15) - 2 * kappa)
               <= 1e-12,
           "kappa(0.4 M) is not twice kappa(0.1 M)");
    EXPECT(elec_kappa_from_ionic_strength(0.0, 78.54, 298.15) == 0.0,
           "no salt should give kappa 0");
}

/* An atom record as a host code might keep it: the view reads it through
   strides. */
typedef struct host_atom {
    int id;
    double position[3];
    double mass;
    double charge;
    double radius;
} host_atom;

TEST(atom_views_agree) {
    enum { N = 5 };
    double xyz[3 * N], q[N], r[N];
    float xyz_f[3 * N], q_f[N], r_f[N], xyzq[4 * N];
    host_atom records[N];
    elec_atoms views[4];
    size_t i;
    int v, axis;
    for (i = 0; i < N; i++) {
        /* values exact in float, so every view reads the same doubles */
        for (axis = 0; axis < 3; axis++) {
            xyz[3 * i + axis] = 0.25 * (double)(i * 3 + axis) - 1.5;
            xyz_f[3 * i + axis] = (float)xyz[3 * i + axis];
            xyzq[4 * i + axis] = (float)xyz[3 * i + axis];
            records[i].position[axis] = xyz[3 * i + axis];
        }
        q[i] = (i % 2 ? 0.5 : -0.75);
        r[i] = 1.0 + 0.125 * (double)i;
        q_f[i] = (float)q[i];
        r_f[i] = (float)r[i];
        xyzq[4 * i + 3] = (float)q[i];
        records[i].id = (int)i;
        records[i].mass = 12.0;
        records[i].charge = q[i];
        records[i].radius = r[i];
    }
    views[0] = elec_atoms_from_xyz(N, xyz, q, r);
    views[1] = elec_atoms_from_xyz_float(N, xyz_f, q_f, r_f);
    views[2] = elec_atoms_from_xyzq_float(N, xyzq);
    memset(&views[3], 0, sizeof views[3]);
    views[3].count = N;
    views[3].type = ELEC_FLOAT64;
    views[3].x = &records[0].position[0];
    views[3].y = &records[0].position[1];
    views[3].z = &records[0].position[2];
    views[3].charge = &records[0].charge;
    views[3].radius = &records[0].radius;
    views[3].position_stride = views[3].charge_stride =
        views[3].radius_stride = sizeof(host_atom);
    for (v = 0; v < 4; v++) {
        EXPECT(elec_atoms_check(&views[v], v != 2, NULL) == ELEC_OK,
               "view %d does not check", v);
        for (i = 0; i < N; i++) {
            double p[3], charge, radius;
            elec_atoms_get(&views[v], i, p, &charge, &radius);
            for (axis = 0; axis < 3; axis++)
                EXPECT(p[axis] == xyz[3 * i + axis],
                       "view %d atom %zu axis %d: %g vs %g", v, i, axis,
                       p[axis], xyz[3 * i + axis]);
            EXPECT(charge == q[i], "view %d atom %zu charge %g vs %g", v, i,
                   charge, q[i]);
            EXPECT(radius == (v == 2 ? 0.0 : r[i]),
                   "view %d atom %zu radius %g", v, i, radius);
        }
    }
}

TEST(atoms_check_rejects_bad_input) {
    double xyz[6] = {0, 0, 0, 1, 1, 1}, q[2] = {1, -1}, r[2] = {1, 1};
    elec_atoms a = elec_atoms_from_xyz(2, xyz, q, r);
    elec_error err;
    EXPECT(elec_atoms_check(&a, 1, &err) == ELEC_OK, "good atoms: %s",
           err.message);
    xyz[4] = NAN;
    EXPECT(elec_atoms_check(&a, 0, &err) == ELEC_ERR_INVALID_ARG &&
               err.message[0],
           "NaN position accepted");
    xyz[4] = 1;
    { /* every axis, each refused here by name (x once went unchecked) */
        int axis;
        for (axis = 0; axis < 3; axis++) {
            xyz[3 + axis] = axis == 1 ? -INFINITY : NAN;
            EXPECT(elec_atoms_check(&a, 0, &err) == ELEC_ERR_INVALID_ARG &&
                       err.atom[0] == 1,
                   "atom 1's coordinate %d not finite: accepted or not named (%s)", axis,
                   err.message);
            xyz[3 + axis] = 1;
        }
    }
    q[1] = NAN;
    EXPECT(elec_atoms_check(&a, 0, &err) == ELEC_ERR_INVALID_ARG &&
               err.message[0],
           "NaN charge accepted");
    q[1] = INFINITY;
    EXPECT(elec_atoms_check(&a, 0, &err) == ELEC_ERR_INVALID_ARG,
           "infinite charge accepted");
    q[1] = -1;
    r[0] = -0.5;
    EXPECT(elec_atoms_check(&a, 1, &err) == ELEC_ERR_INVALID_ARG &&
               err.message[0],
           "negative radius accepted");
    r[0] = 1;
    a = elec_atoms_from_xyz(2, NULL, q, r);
    EXPECT(elec_atoms_check(&a, 0, &err) == ELEC_ERR_INVALID_ARG &&
               err.message[0],
           "NULL positions accepted");
    a = elec_atoms_from_xyz(2, xyz, NULL, r);
    EXPECT(elec_atoms_check(&a, 0, &err) == ELEC_ERR_INVALID_ARG,
           "NULL charges accepted");
    a = elec_atoms_from_xyz(2, xyz, q, NULL);
    EXPECT(elec_atoms_check(&a, 1, &err) == ELEC_ERR_INVALID_ARG,
           "missing radii accepted where needed");
    EXPECT(elec_atoms_check(&a, 0, &err) == ELEC_OK,
           "missing radii rejected where not needed");
    EXPECT(elec_atoms_check(NULL, 0, &err) == ELEC_ERR_INVALID_ARG,
           "NULL view accepted");
    a = elec_atoms_from_xyz(0, NULL, NULL, NULL);
    EXPECT(elec_atoms_check(&a, 1, &err) == ELEC_OK,
           "zero atoms rejected: %s", err.message);
    /* strides under one value overlap the atoms (they read as garbage
       positions); a float's 4 bytes is enough for float atoms */
    a = elec_atoms_from_xyz(2, xyz, q, r);
    a.position_stride = 5;
    EXPECT(elec_atoms_check(&a, 0, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "position stride 5"), "stride 5 of doubles: %s", err.message);
    a.position_stride = 0;
    a.radius_stride = 1;
    EXPECT(elec_atoms_check(&a, 0, &err) == ELEC_ERR_INVALID_ARG, "radius stride 1 accepted");
    {
        const float f[8] = {0, 0, 0, 1, 1, 1, 1, -1};
        a = elec_atoms_from_xyzq_float(2, f);
        EXPECT(elec_atoms_check(&a, 0, &err) == ELEC_OK, "float4 records: %s", err.message);
        a.position_stride = 3;
        EXPECT(elec_atoms_check(&a, 0, &err) == ELEC_ERR_INVALID_ARG, "stride 3 of floats");
    }
}

TEST(lattice_size_and_bounds_take_null_and_overflow) {
    /* dims of INT_MAX wrapped the count to a small number (a buffer sized
       by it too small); a NULL lattice or view crashed */
    elec_lattice big = {{INT_MAX, INT_MAX, INT_MAX}, {0, 0, 0}, {1, 1, 1}};
    elec_lattice fine = {{3, 4, 5}, {0, 0, 0}, {1, 1, 1}};
    double lo[3] = {1, 1, 1}, hi[3] = {1, 1, 1};
    EXPECT(elec_lattice_size(&fine) == 60, "3 x 4 x 5: %zu", elec_lattice_size(&fine));
    EXPECT(elec_lattice_size(&big) == 0 || (double)elec_lattice_size(&big) ==
                                               (double)INT_MAX * INT_MAX * (double)INT_MAX,
           "INT_MAX^3 points: %zu", elec_lattice_size(&big));
    EXPECT(elec_lattice_size(NULL) == 0 && elec_lattice_face_count(NULL) == 0, "NULL lattice");
    elec_atoms_bounds(NULL, lo, hi);
    EXPECT(lo[0] == 0.0 && hi[2] == 0.0, "NULL view: bounds not zeroed");
}

TEST(lattice_check_rejects_bad_lattices) {
    elec_lattice good = {{4, 5, 6}, {0, 0, 0}, {0.5, 0.5, 0.5}}, l;
    elec_error err;
    int axis;
    EXPECT(elec_lattice_check(&good, &err) == ELEC_OK, "good lattice: %s",
           err.message);
    EXPECT(elec_lattice_size(&good) == 120, "size %zu",
           elec_lattice_size(&good));
    for (axis = 0; axis < 3; axis++) {
        l = good;
        l.dims[axis] = 0;
        EXPECT(elec_lattice_check(&l, &err) == ELEC_ERR_INVALID_ARG &&
                   err.message[0],
               "zero count on axis %d accepted", axis);
        l.dims[axis] = -3;
        EXPECT(elec_lattice_check(&l, &err) == ELEC_ERR_INVALID_ARG,
               "negative count on axis %d accepted", axis);
        l = good;
        l.spacing[axis] = 0.0;
        EXPECT(elec_lattice_check(&l, &err) == ELEC_ERR_INVALID_ARG,
               "zero spacing on axis %d accepted", axis);
        l.spacing[axis] = -0.5;
        EXPECT(elec_lattice_check(&l, &err) == ELEC_ERR_INVALID_ARG,
               "negative spacing on axis %d accepted", axis);
        l.spacing[axis] = NAN;
        EXPECT(elec_lattice_check(&l, &err) == ELEC_ERR_INVALID_ARG,
               "NaN spacing on axis %d accepted", axis);
        l.spacing[axis] = 1e308; /* finite, but the last point is not */
        EXPECT(elec_lattice_check(&l, &err) == ELEC_ERR_INVALID_ARG &&
                   strstr(err.message, "double's range"),
               "a last point past double's range on axis %d: %s", axis, err.message);
    }
    EXPECT(elec_lattice_check(NULL, &err) == ELEC_ERR_INVALID_ARG,
           "NULL lattice accepted");
}

TEST(lattice_around_covers_atoms_with_padding) {
    test_system s = test_system_random(200, 17.0, 11);
    elec_atoms atoms = test_system_atoms(&s);
    elec_lattice l;
    elec_error err;
    double lo[3], hi[3];
    const double spacing = 0.7, padding = 5.0;
    int axis;
    EXPECT(elec_lattice_around(&atoms, spacing, padding, &l, &err) == ELEC_OK,
           "lattice_around: %s", err.message);
    elec_atoms_bounds(&atoms, lo, hi);
    for (axis = 0; axis < 3; axis++) {
        double first = l.origin[axis];
        double last = first + (l.dims[axis] - 1) * l.spacing[axis];
        /* 1e-9 A: rounding of the origin arithmetic, far below a spacing */
        EXPECT(first <= lo[axis] - padding + 1e-9,
               "axis %d starts at %g, atoms from %g", axis, first, lo[axis]);
        EXPECT(last >= hi[axis] + padding - 1e-9,
               "axis %d ends at %g, atoms to %g", axis, last, hi[axis]);
        /* no more than one spacing to spare in all */
        EXPECT(last - first <= hi[axis] - lo[axis] + 2 * padding + spacing,
               "axis %d is wider than needed", axis);
        EXPECT(l.spacing[axis] == spacing, "spacing %g", l.spacing[axis]);
    }
    EXPECT(elec_lattice_around(&atoms, 0.0, padding, &l, &err) ==
               ELEC_ERR_INVALID_ARG,
           "zero spacing accepted");
    EXPECT(elec_lattice_around(&atoms, spacing, -1.0, &l, &err) ==
               ELEC_ERR_INVALID_ARG,
           "negative padding accepted");
    /* an extent past double's range named as such (it said "too many
       points" of an inf A extent) */
    EXPECT(elec_lattice_around(&atoms, 1e308, 1e308, &l, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "past double's range"),
           "padding 1e308: %s", err.message);
    EXPECT(elec_lattice_around(&atoms, spacing, padding, NULL, &err) == ELEC_ERR_INVALID_ARG,
           "NULL out accepted");
    test_system_free(&s);
}

/* The face points of an nx x ny x nz lattice against a brute-force scan. */
static void check_faces(int nx, int ny, int nz) {
    elec_lattice l;
    size_t count, brute = 0, n, all;
    double *xyz;
    size_t *index;
    int i, j, k;
    l.dims[0] = nx;
    l.dims[1] = ny;
    l.dims[2] = nz;
    l.origin[0] = -1.0;
    l.origin[1] = 2.0;
    l.origin[2] = 0.5;
    l.spacing[0] = 0.5;
    l.spacing[1] = 0.25;
    l.spacing[2] = 1.0;
    all = elec_lattice_size(&l);
    for (k = 0; k < nz; k++)
        for (j = 0; j < ny; j++)
            for (i = 0; i < nx; i++)
                if (i == 0 || i == nx - 1 || j == 0 || j == ny - 1 || k == 0 ||
                    k == nz - 1)
                    brute++;
    count = elec_lattice_face_count(&l);
    EXPECT(count == brute, "%dx%dx%d: %zu face points, brute force %zu", nx,
           ny, nz, count, brute);
    xyz = (double *)malloc(3 * (count + 1) * sizeof *xyz);
    index = (size_t *)malloc((count + 1) * sizeof *index);
    elec_lattice_face_points(&l, xyz, index);
    for (n = 0; n < count; n++) {
        size_t id = index[n];
        int pi = (int)(id % (size_t)nx), pj = (int)(id / (size_t)nx % (size_t)ny),
            pk = (int)(id / ((size_t)nx * (size_t)ny));
        double p[3];
        EXPECT(id < all, "%dx%dx%d: index %zu out of range", nx, ny, nz, id);
        EXPECT(n == 0 || id > index[n - 1],
               "%dx%dx%d: indices not increasing at %zu", nx, ny, nz, n);
        EXPECT(pi == 0 || pi == nx - 1 || pj == 0 || pj == ny - 1 || pk == 0 ||
                   pk == nz - 1,
               "%dx%dx%d: point %zu (%d,%d,%d) is inside", nx, ny, nz, n, pi,
               pj, pk);
        elec_lattice_point(&l, pi, pj, pk, p);
        EXPECT(p[0] == xyz[3 * n] && p[1] == xyz[3 * n + 1] &&
                   p[2] == xyz[3 * n + 2],
               "%dx%dx%d: point %zu position does not match its index", nx, ny,
               nz, n);
    }
    free(xyz);
    free(index);
}

TEST(lattice_faces_match_brute_force) {
    check_faces(5, 4, 3);
    check_faces(3, 4, 5);
    check_faces(1, 6, 7);
    check_faces(6, 1, 7);
    check_faces(6, 7, 1);
    check_faces(2, 2, 2);
    check_faces(1, 1, 1);
    check_faces(9, 9, 9);
}

TEST(params_resolve_defaults) {
    elec_dcs_params dcs;
    elec_mdh_params mdh;
    memset(&dcs, 0, sizeof dcs);
    memset(&mdh, 0, sizeof mdh);
    EXPECT(elec_dcs_params_resolve(&dcs, &dcs, NULL) == ELEC_OK, "zero DCS params refused");
    EXPECT(elec_mdh_params_resolve(&mdh, &mdh, NULL) == ELEC_OK, "zero MDH params refused");
    EXPECT(dcs.scale == 1.0, "DCS scale default %g", dcs.scale);
    EXPECT(dcs.variant == ELEC_DCS_HYBRID_RSQRT, "DCS variant default %s",
           elec_dcs_variant_name(dcs.variant));
    EXPECT(mdh.scale == 1.0, "MDH scale default %g", mdh.scale);
    EXPECT(mdh.temperature == 298.15, "temperature default %g",
           mdh.temperature);
    EXPECT(mdh.dielectric == 78.54, "dielectric default %g", mdh.dielectric);
    EXPECT(mdh.kappa == 0.0, "kappa default %g", mdh.kappa);
    { /* the cutoff map's documented defaults: 12 A, splitting 2 */
        elec_cutoff_params cp;
        memset(&cp, 0, sizeof cp);
        EXPECT(elec_cutoff_params_resolve(&cp, &cp, NULL) == ELEC_OK && cp.cutoff == 12.0 &&
                   cp.splitting == 2 && cp.bin_length == elec_bin_length(0.1, 0.75),
               "cutoff defaults: %g A, splitting %d, bins %g A", cp.cutoff, cp.splitting,
               cp.bin_length);
    }
    memset(&dcs, 0, sizeof dcs);
    EXPECT(elec_dcs_params_resolve(NULL, &dcs, NULL) == ELEC_OK, "NULL DCS params refused");
    EXPECT(dcs.scale == 1.0, "NULL DCS params do not resolve to defaults");
    memset(&mdh, 0, sizeof mdh);
    mdh.ionic_strength = 0.1;
    EXPECT(elec_mdh_params_resolve(&mdh, &mdh, NULL) == ELEC_OK, "0.1 M refused");
    EXPECT(mdh.kappa == elec_kappa_from_ionic_strength(0.1, 78.54, 298.15),
           "kappa from ionic strength %g", mdh.kappa);
}

/* The finiteness scan (elec.h, elec__results_finite) names the first
   value that is not finite, wherever it lies among the blocks that OpenMP's
   threads share out, in float and in double. */
TEST(results_scan_names_the_first_value_past_range) {
    const size_t n = 1000003; /* 245 blocks of 4,096 and a rest */
    float *f = (float *)malloc(n * sizeof *f);
    double *d = (double *)malloc(n * sizeof *d);
    const size_t at[3] = {999999, 600001, 4095};
    size_t i, k;
    elec_error err;
    EXPECT(f && d, "no memory");
    if (!f || !d) {
        free(f);
        free(d);
        return;
    }
    for (i = 0; i < n; i++) f[i] = (float)(d[i] = 1e30 * ((double)i - 5e5));
    EXPECT(elec__results_finite("scan", "point", f, NULL, n, "float", &err) == ELEC_OK &&
               elec__results_finite("scan", "point", NULL, d, n, "double", &err) == ELEC_OK,
           "finite values refused: %s", err.message);
    for (k = 0; k < 3; k++) { /* the last, then earlier ones: the first named */
        char want[32];
        f[at[k]] = k == 1 ? NAN : INFINITY;
        d[at[k]] = k == 1 ? NAN : -INFINITY;
        snprintf(want, sizeof want, "point %lu came out", (unsigned long)at[k]);
        EXPECT(elec__results_finite("scan", "point", f, NULL, n, "float", &err) ==
                       ELEC_ERR_INVALID_ARG &&
                   strstr(err.message, want),
               "float, bad value at %lu: %s", (unsigned long)at[k], err.message);
        EXPECT(elec__results_finite("scan", "point", NULL, d, n, "double", &err) ==
                       ELEC_ERR_INVALID_ARG &&
                   strstr(err.message, want),
               "double, bad value at %lu: %s", (unsigned long)at[k], err.message);
    }
    free(f);
    free(d);
}

TEST(params_resolve_rejects_bad_values) {
    elec_dcs_params dcs, out_dcs;
    elec_mdh_params mdh, out_mdh;
    elec_error err;
    memset(&dcs, 0, sizeof dcs);
    memset(&mdh, 0, sizeof mdh);
    EXPECT(elec_dcs_params_resolve(&dcs, &out_dcs, &err) == ELEC_OK, "zero DCS params: %s",
           err.message);
    EXPECT(elec_mdh_params_resolve(&mdh, &out_mdh, &err) == ELEC_OK, "zero MDH params: %s",
           err.message);
    dcs.variant = ELEC_DCS_VARIANT_COUNT;
    EXPECT(elec_dcs_params_resolve(&dcs, &out_dcs, &err) == ELEC_ERR_INVALID_ARG &&
               err.message[0],
           "bad variant accepted");
    dcs.variant = (elec_dcs_variant)-2;
    EXPECT(elec_dcs_params_resolve(&dcs, &out_dcs, &err) == ELEC_ERR_INVALID_ARG,
           "negative variant accepted");
    dcs.variant = ELEC_DCS_SIMPLE;
    dcs.gpus.count = -5;
    EXPECT(elec_dcs_params_resolve(&dcs, &out_dcs, &err) == ELEC_ERR_INVALID_ARG &&
               err.message[0],
           "gpus.count -5 accepted");
    dcs.gpus.count = ELEC_ALL_GPUS;
    EXPECT(elec_dcs_params_resolve(&dcs, &out_dcs, &err) == ELEC_OK, "ELEC_ALL_GPUS: %s",
           err.message);
    dcs.scale = NAN;
    EXPECT(elec_dcs_params_resolve(&dcs, &out_dcs, &err) == ELEC_ERR_INVALID_ARG,
           "NaN scale accepted");
    mdh.kappa = -0.1;
    EXPECT(elec_mdh_params_resolve(&mdh, &out_mdh, &err) == ELEC_ERR_INVALID_ARG &&
               err.message[0],
           "negative kappa accepted");
    mdh.kappa = 0.0;
    mdh.ionic_strength = -1.0;
    EXPECT(elec_mdh_params_resolve(&mdh, &out_mdh, &err) == ELEC_ERR_INVALID_ARG,
           "negative ionic strength accepted");
    mdh.ionic_strength = 0.0;
    mdh.temperature = -300.0;
    EXPECT(elec_mdh_params_resolve(&mdh, &out_mdh, &err) == ELEC_ERR_INVALID_ARG,
           "negative temperature accepted");
    mdh.temperature = 0.0;
    mdh.dielectric = -2.0;
    EXPECT(elec_mdh_params_resolve(&mdh, &out_mdh, &err) == ELEC_ERR_INVALID_ARG,
           "negative dielectric accepted");
    mdh.dielectric = 0.0;
    mdh.gpus.count = -5;
    EXPECT(elec_mdh_params_resolve(&mdh, &out_mdh, &err) == ELEC_ERR_INVALID_ARG,
           "MDH gpus.count -5 accepted");
}

int main(void) {
    /* tests/test.h's comparison helpers are plain static functions; naming
       them keeps -Werror=unused-function quiet in a file that needs none. */
    RUN(status_strings_name_every_code);
    RUN(kT_scale_at_room_temperature);
    RUN(kappa_of_a_tenth_molar_salt);
    RUN(atom_views_agree);
    RUN(atoms_check_rejects_bad_input);
    RUN(lattice_size_and_bounds_take_null_and_overflow);
    RUN(lattice_check_rejects_bad_lattices);
    RUN(lattice_around_covers_atoms_with_padding);
    RUN(lattice_faces_match_brute_force);
    RUN(params_resolve_defaults);
    RUN(params_resolve_rejects_bad_values);
    RUN(results_scan_names_the_first_value_past_range);
    return test_summary();
}
