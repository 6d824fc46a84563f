/* Spatial bins and cutoff maps on the CPU: bins hold every atom once (slot,
   overflow or outside), neighbourhoods miss no bin within reach, and the
   cell-list cutoff map equals the direct double sum with the same S(r). */
#define ELEC_ALL_IMPLEMENTATION
#include <limits.h>

#include "elec.h"
#include "elec_cpu.h"
#include "tests/test.h"
#include "tests/systems.h"

static size_t bins_count(const elec_bins *b) {
    return (size_t)b->dims[0] * b->dims[1] * b->dims[2];
}

static size_t occupied_slots(const elec_bins *b) {
    size_t i, n = 0;
    for (i = 0; i < bins_count(b) * ELEC_BIN_DEPTH; i++)
        if (b->slots[4 * i + 3] != 0.0f) n++;
    return n;
}

TEST(bin_length_follows_density_and_fill) {
    /* cbrt(0.75 * 8 / 0.1) = cbrt(60) */
    EXPECT(fabs(elec_bin_length(0.1, 0.75) - cbrt(60.0)) < 1e-12, "%g",
           elec_bin_length(0.1, 0.75));
    EXPECT(elec_bin_length(0.0, 0.75) == 0.0, "zero density has no bin length");
}

TEST(every_atom_lands_in_a_slot_the_overflow_or_outside) {
    test_system s = test_system_random(5000, 30.0, 51);
    elec_atoms atoms = test_system_atoms(&s);
    const double origin[3] = {2.0, 2.0, 2.0}, extent[3] = {24.0, 24.0, 24.0};
    elec_bins b;
    elec_error err;
    size_t outside = 0, i;
    EXPECT(elec_bins_build(&atoms, origin, extent, 4.0, &b, &err) == ELEC_OK, "%s", err.message);
    for (i = 0; i < s.count; i++) {
        int axis, in = 1;
        for (axis = 0; axis < 3; axis++)
            if (s.xyz[3 * i + axis] < 2.0 || s.xyz[3 * i + axis] >= 26.0) in = 0;
        outside += !in;
    }
    printf("     %zu in slots, %zu overflow, %zu outside\n", occupied_slots(&b),
           b.overflow_count, b.outside_count);
    EXPECT(b.outside_count == outside, "outside %zu, want %zu", b.outside_count, outside);
    EXPECT(occupied_slots(&b) + b.overflow_count + b.outside_count == s.count,
           "atoms lost or doubled");
    EXPECT(b.dims[0] == 6 && b.dims[1] == 6 && b.dims[2] == 6, "dims %d", b.dims[0]);
    elec_bins_free(&b);
    test_system_free(&s);
}

TEST(the_cell_list_finds_every_neighbour_once) {
    /* 3000 atoms in a 30 A cube (some outside the 24 A region: they fall
       in the nearest cell), cells of at least 5 A: every atom listed once,
       in its own cell, and for a sample of points every atom within 5 A
       is in the 27 cells around the point's cell; periodic wrapping and
       falling off a non-periodic region; bad input refused. */
    test_system s = test_system_random(3000, 30.0, 52);
    const double origin[3] = {3.0, 3.0, 3.0}, length[3] = {24.0, 24.0, 21.0};
    elec_cells c;
    elec_error err;
    size_t i, j, listed = 0, missed = 0, *seen = (size_t *)calloc(s.count, sizeof *seen);
    long cell;
    int home[3] = {0, 0, 0};
    EXPECT(elec_cells_build(s.xyz, s.count, origin, length, 5.0, &c, &err) == ELEC_OK, "%s",
           err.message);
    EXPECT(c.n[0] == 4 && c.n[1] == 4 && c.n[2] == 4, "cells %d %d %d", c.n[0], c.n[1], c.n[2]);
    for (cell = 0; cell < 64; cell++)
        for (i = c.start[cell]; i < c.start[cell + 1]; i++) {
            int ijk[3];
            elec_cells_ijk(&c, s.xyz + 3 * c.atom[i], ijk);
            EXPECT(ijk[0] + 4 * (ijk[1] + 4 * ijk[2]) == cell, "atom %zu in cell %ld",
                   c.atom[i], cell);
            seen[c.atom[i]]++;
            listed++;
        }
    for (i = 0; i < s.count; i++) EXPECT(seen[i] == 1, "atom %zu listed %zu times", i, seen[i]);
    EXPECT(listed == s.count, "%zu listed of %zu", listed, s.count);
    for (j = 0; j < s.count; j += 37) { /* points: every 37th atom's place */
        int dx, dy, dz;
        size_t near = 0, found = 0;
        elec_cells_ijk(&c, s.xyz + 3 * j, home);
        for (i = 0; i < s.count; i++) {
            const double *a = s.xyz + 3 * i, *b = s.xyz + 3 * j;
            near += (a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                        (a[2] - b[2]) * (a[2] - b[2]) < 25.0 &&
                    a[0] >= 3.0 && a[0] < 27.0 && a[1] >= 3.0 && a[1] < 27.0 &&
                    a[2] >= 3.0 && a[2] < 24.0 && b[0] >= 3.0 && b[0] < 27.0 &&
                    b[1] >= 3.0 && b[1] < 27.0 && b[2] >= 3.0 && b[2] < 24.0;
        }
        for (dz = -1; dz <= 1; dz++)
            for (dy = -1; dy <= 1; dy++)
                for (dx = -1; dx <= 1; dx++) {
                    long nb = elec_cells_neighbour(&c, home, dx, dy, dz, 0);
                    if (nb < 0) continue;
                    for (i = c.start[nb]; i < c.start[nb + 1]; i++) {
                        const double *a = s.xyz + 3 * c.atom[i], *b = s.xyz + 3 * j;
                        found += (a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]) +
                                         (a[2] - b[2]) * (a[2] - b[2]) < 25.0 &&
                                 a[0] >= 3.0 && a[0] < 27.0 && a[1] >= 3.0 && a[1] < 27.0 &&
                                 a[2] >= 3.0 && a[2] < 24.0 && b[0] >= 3.0 && b[0] < 27.0 &&
                                 b[1] >= 3.0 && b[1] < 27.0 && b[2] >= 3.0 && b[2] < 24.0;
                    }
                }
        missed += near - found;
    }
    EXPECT(missed == 0, "%zu neighbours within 5 A missed", missed);
    home[0] = 0;
    home[1] = 3;
    home[2] = 2;
    EXPECT(elec_cells_neighbour(&c, home, -1, 1, 0, 1) == 3 + 4 * (0 + 4 * 2), "periodic wrap");
    EXPECT(elec_cells_neighbour(&c, home, -1, 0, 0, 0) == -1, "off the region");
    /* home + d past int's range (it overflowed an int) */
    EXPECT(elec_cells_neighbour(&c, home, INT_MAX, 0, 0, 0) == -1, "INT_MAX cells away");
    EXPECT(elec_cells_neighbour(&c, home, 0, INT_MAX, 0, 1) >= 0, "INT_MAX cells, wrapped");
    elec_cells_free(&c);
    EXPECT(elec_cells_build(s.xyz, s.count, origin, length, 0.0, &c, &err) ==
               ELEC_ERR_INVALID_ARG, "zero cell length");
    EXPECT(elec_cells_build(s.xyz, s.count, NULL, length, 5.0, &c, &err) ==
               ELEC_ERR_INVALID_ARG, "NULL origin");
    s.xyz[7] = NAN;
    EXPECT(elec_cells_build(s.xyz, s.count, origin, length, 5.0, &c, &err) ==
               ELEC_ERR_INVALID_ARG, "a position that is not a number");
    EXPECT(elec_cells_build(NULL, 0, origin, length, 5.0, &c, &err) == ELEC_OK,
           "no atoms: %s", err.message);
    elec_cells_free(&c);
    free(seen);
    test_system_free(&s);
}

/* A cell list over atoms with a few far outliers (a misplaced ion at
   1e5 A, a pair of them 3 A apart at 1e4 A along a diagonal, one at
   -3e3 A): the region its cells span is the window of at most
   ELEC_CELLS_MAX_PER_AXIS cells that holds the bulk, so a cell holds
   tens of atoms, not the whole system; and every pair within a cell
   length, the outliers' too, is still in the 27 cells around each. */
TEST(a_cell_list_spans_the_bulk_and_still_finds_the_outliers_pairs) {
    test_system s = test_system_random(3000, 30.0, 56);
    const double outliers[5][3] = {{1e5, 15.0, 15.0}, {1e4, 1e4, 1e4}, {1e4 + 3.0, 1e4, 1e4},
                                   {15.0, -3e3, 15.0}, {30.5, 30.5, 30.5}};
    const size_t n = s.count + 5;
    double *xyz = (double *)malloc(3 * n * sizeof *xyz), lo[3], hi[3], length[3];
    elec_cells c;
    elec_error err;
    size_t i, j, most = 0, missed = 0, pairs = 0;
    long cell, cells;
    int axis;
    memcpy(xyz, s.xyz, 3 * s.count * sizeof *xyz);
    memcpy(xyz + 3 * s.count, outliers, sizeof outliers);
    for (axis = 0; axis < 3; axis++) lo[axis] = hi[axis] = xyz[axis];
    for (i = 0; i < n; i++)
        for (axis = 0; axis < 3; axis++) {
            if (xyz[3 * i + axis] < lo[axis]) lo[axis] = xyz[3 * i + axis];
            if (xyz[3 * i + axis] > hi[axis]) hi[axis] = xyz[3 * i + axis];
        }
    for (axis = 0; axis < 3; axis++) length[axis] = hi[axis] - lo[axis] + 1e-9;
    EXPECT(elec__cells_build_windowed(xyz, n, lo, length, 5.0, &c, &err) == ELEC_OK, "%s",
           err.message);
    cells = (long)c.n[0] * c.n[1] * c.n[2];
    for (cell = 0; cell < cells; cell++)
        if (c.start[cell + 1] - c.start[cell] > most) most = c.start[cell + 1] - c.start[cell];
    printf("     %d x %d x %d cells, at most %zu atoms in one\n", c.n[0], c.n[1], c.n[2],
           most);
    EXPECT(most <= 100, "a cell holds %zu atoms: the cells span the outliers", most);
    for (i = 0; i < n; i++) {
        int home[3], dx, dy, dz;
        size_t near = 0, found = 0;
        for (j = 0; j < n; j++)
            near += j != i && elec_distance2(xyz + 3 * i, xyz + 3 * j) < 25.0;
        elec_cells_ijk(&c, xyz + 3 * i, home);
        for (dz = -1; dz <= 1; dz++)
            for (dy = -1; dy <= 1; dy++)
                for (dx = -1; dx <= 1; dx++) {
                    long nb = elec_cells_neighbour(&c, home, dx, dy, dz, 0);
                    size_t k;
                    if (nb < 0) continue;
                    for (k = c.start[nb]; k < c.start[nb + 1]; k++)
                        found += c.atom[k] != i &&
                                 elec_distance2(xyz + 3 * i, xyz + 3 * c.atom[k]) < 25.0;
                }
        pairs += near;
        missed += near - found;
    }
    EXPECT(missed == 0 && pairs > 0, "%zu of %zu neighbours within 5 A missed", missed, pairs);
    elec_cells_free(&c);
    /* a rod 20,000 A long, evenly filled: a window would leave most atoms
       out, crowding its end cells (a review: its surface took 59 s, not
       1), so the cells span the rod (256 of them, 78 A long) */
    for (i = 0; i < s.count; i++) {
        xyz[3 * i] = 20000.0 * (double)i / (double)s.count;
        xyz[3 * i + 1] = s.xyz[3 * i + 1] / 3.0;
        xyz[3 * i + 2] = s.xyz[3 * i + 2] / 3.0;
    }
    lo[0] = lo[1] = lo[2] = 0.0;
    length[0] = 20000.0;
    length[1] = length[2] = 10.0;
    EXPECT(elec__cells_build_windowed(xyz, s.count, lo, length, 5.0, &c, &err) == ELEC_OK,
           "%s", err.message);
    cells = (long)c.n[0] * c.n[1] * c.n[2];
    most = 0;
    for (cell = 0; cell < cells; cell++)
        if (c.start[cell + 1] - c.start[cell] > most) most = c.start[cell + 1] - c.start[cell];
    printf("     a rod: %d x %d x %d cells, at most %zu atoms in one\n", c.n[0], c.n[1],
           c.n[2], most);
    EXPECT(c.n[0] == ELEC_CELLS_MAX_PER_AXIS && most <= 100, "a rod: %d cells, %zu in one",
           c.n[0], most);
    elec_cells_free(&c);
    free(xyz);
    test_system_free(&s);
}

TEST(an_overfull_bin_spills_into_the_overflow) {
    /* 30 atoms in one bin: 8 slots, 22 overflow; the rest empty */
    double xyz[90], q[30];
    elec_atoms atoms;
    const double origin[3] = {0, 0, 0}, extent[3] = {8, 8, 8};
    elec_bins b;
    elec_error err;
    int i;
    for (i = 0; i < 30; i++) {
        xyz[3 * i] = 1.0 + 0.01 * i;
        xyz[3 * i + 1] = 1.5;
        xyz[3 * i + 2] = 2.5;
        q[i] = i % 2 ? 0.5 : -0.5;
    }
    atoms = elec_atoms_from_xyz(30, xyz, q, NULL);
    EXPECT(elec_bins_build(&atoms, origin, extent, 4.0, &b, &err) == ELEC_OK, "%s", err.message);
    EXPECT(occupied_slots(&b) == ELEC_BIN_DEPTH, "slots %zu", occupied_slots(&b));
    EXPECT(b.overflow_count == 30 - ELEC_BIN_DEPTH, "overflow %zu", b.overflow_count);
    elec_bins_free(&b);
    atoms.count = 0; /* and an empty system */
    EXPECT(elec_bins_build(&atoms, origin, extent, 4.0, &b, &err) == ELEC_OK, "%s", err.message);
    EXPECT(occupied_slots(&b) == 0 && b.overflow_count == 0, "empty system");
    elec_bins_free(&b);
}

/* Arguments out of range give no offsets (the helper has no error
   channel): lengths that are not finite or positive, and a reach past
   ELEC_BIN_MAX_REACH bins (bins of 1e-3 A for a 12 A cutoff ran for
   hours); NULL offsets with room is only counted. */
TEST(neighbourhood_of_arguments_out_of_range_is_empty) {
    int offsets[3 * 8];
    EXPECT(elec_bin_neighbourhood(1e-3, 10.0, 12.0, offsets, 8) == 0, "1e-3 A bins");
    EXPECT(elec_bin_neighbourhood(0.0, 10.0, 12.0, offsets, 8) == 0, "0 A bins");
    EXPECT(elec_bin_neighbourhood(NAN, 10.0, 12.0, offsets, 8) == 0, "NaN bins");
    EXPECT(elec_bin_neighbourhood(-4.0, 10.0, 12.0, offsets, 8) == 0, "negative bins");
    EXPECT(elec_bin_neighbourhood(4.0, 10.0, INFINITY, offsets, 8) == 0, "infinite cutoff");
    EXPECT(elec_bin_neighbourhood(4.0, 4.0, 12.0, NULL, 8) ==
               elec_bin_neighbourhood(4.0, 4.0, 12.0, NULL, 0),
           "NULL offsets");
}

TEST(neighbourhood_holds_every_bin_within_the_cutoff) {
    /* Brute force: for points of a 4 A region and atoms around it, the
       bin of every atom within the cutoff of some point is listed. */
    const double length = 4.0, region = 4.0, cutoff = 12.0;
    int offsets[3 * 2000];
    size_t count = elec_bin_neighbourhood(length, region, cutoff, offsets, 2000), k;
    test_rng rng = test_rng_seeded(52);
    int missed = 0, trial;
    printf("     %zu bins in the neighbourhood\n", count);
    EXPECT(count <= 2000, "%zu offsets", count);
    for (trial = 0; trial < 20000; trial++) {
        double p[3], a[3], d2 = 0.0;
        int bin[3], axis, found = 0;
        for (axis = 0; axis < 3; axis++) {
            p[axis] = region * test_uniform(&rng);
            a[axis] = -cutoff - 2.0 + (region + 2 * cutoff + 4.0) * test_uniform(&rng);
            d2 += (p[axis] - a[axis]) * (p[axis] - a[axis]);
            bin[axis] = (int)floor(a[axis] / length);
        }
        if (d2 >= cutoff * cutoff) continue;
        for (k = 0; k < count && !found; k++)
            found = offsets[3 * k] == bin[0] && offsets[3 * k + 1] == bin[1] &&
                    offsets[3 * k + 2] == bin[2];
        missed += !found;
    }
    EXPECT(missed == 0, "%d atoms within the cutoff in bins not listed", missed);
}

/* Cutoff map (cell list) against the direct double sum.  Both sum the
   same double terms; the map is stored in float: 1e-6 relative RMS. */
static void check_cutoff_map(const test_system *s, elec_cutoff_kind kind, const char *what) {
    elec_atoms atoms = test_system_atoms(s);
    elec_lattice l;
    elec_cutoff_params p = {0};
    elec_error err;
    size_t n;
    float *map;
    double *ref, e;
    int axis;
    for (axis = 0; axis < 3; axis++) {
        l.dims[axis] = 29;
        l.origin[axis] = -3.0 + 0.31 * axis;
        l.spacing[axis] = (s->box[axis] + 6.0) / 28.0;
    }
    n = elec_lattice_size(&l);
    map = (float *)malloc(n * sizeof *map);
    ref = (double *)malloc(n * sizeof *ref);
    p.kind = kind;
    p.cutoff = 10.0;
    EXPECT(elec_cpu_cutoff_map(&atoms, &l, &p, map, &err) == ELEC_OK, "%s", err.message);
    EXPECT(elec_cpu_cutoff_map_double(&atoms, &l, &p, ref, &err) == ELEC_OK, "%s", err.message);
    e = test_rel_rms_float(map, ref, n);
    printf("     %-8s %-7s relative RMS %.2e\n", what, kind == ELEC_CUTOFF_MSM ? "msm" : "shifted", e);
    EXPECT(e <= 1e-6, "%s: %.3e", what, e);
    free(map);
    free(ref);
}

TEST(cutoff_map_equals_the_direct_cutoff_sum) {
    test_system random = test_system_random(3000, 30.0, 53);
    test_system water = test_system_water(800, 54);
    test_system salt = test_system_nacl(3, 5.64);
    int kind;
    for (kind = 0; kind <= 1; kind++) {
        check_cutoff_map(&random, (elec_cutoff_kind)kind, "random");
        check_cutoff_map(&water, (elec_cutoff_kind)kind, "water");
        check_cutoff_map(&salt, (elec_cutoff_kind)kind, "NaCl");
    }
    test_system_free(&random);
    test_system_free(&water);
    test_system_free(&salt);
}

/* A small map inside a large system: the map leaves out the atoms beyond
   its cutoff before its cell list (which would clamp them into its
   boundary cells).  Atoms of 20 e just inside the cutoff off each face
   and corner of the lattice (at 0.6, 0.9 and 0.99 of it), 20,000 more in
   a 200 A box around: the map equals the direct double sum over every
   atom, as above. */
TEST(a_small_map_in_a_large_system_keeps_the_atoms_within_its_cutoff) {
    const double cutoff = 10.0, reach[3] = {0.6, 0.9, 0.99};
    test_system s = test_system_random(20000, 200.0, 55);
    elec_lattice l;
    elec_cutoff_params p = {0};
    elec_error err;
    size_t n, edge = 0, i;
    float *map;
    double *ref, e, *xyz, *q;
    int axis, kind, r, d[3];
    elec_atoms atoms;
    for (axis = 0; axis < 3; axis++) {
        l.dims[axis] = 9 + 2 * axis;
        l.origin[axis] = 95.0 + 0.37 * axis;
        l.spacing[axis] = 0.8;
    }
    xyz = (double *)malloc(3 * (s.count + 3 * 27) * sizeof *xyz);
    q = (double *)malloc((s.count + 3 * 27) * sizeof *q);
    memcpy(xyz, s.xyz, 3 * s.count * sizeof *xyz);
    memcpy(q, s.charge, s.count * sizeof *q);
    for (r = 0; r < 3; r++) /* off each face, edge and corner: 26 directions */
        for (d[2] = -1; d[2] <= 1; d[2]++)
            for (d[1] = -1; d[1] <= 1; d[1]++)
                for (d[0] = -1; d[0] <= 1; d[0]++) {
                    double len = sqrt((double)(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]));
                    double *at = xyz + 3 * (s.count + edge);
                    if (len == 0.0) continue;
                    for (axis = 0; axis < 3; axis++) {
                        double last = l.origin[axis] + (l.dims[axis] - 1) * l.spacing[axis];
                        at[axis] = d[axis] < 0   ? l.origin[axis]
                                   : d[axis] > 0 ? last
                                                 : 0.5 * (l.origin[axis] + last);
                        at[axis] += d[axis] * reach[r] * cutoff / len;
                    }
                    q[s.count + edge] = (edge % 2 ? 20.0 : -20.0);
                    edge++;
                }
    atoms = elec_atoms_from_xyz(s.count + edge, xyz, q, NULL);
    n = elec_lattice_size(&l);
    map = (float *)malloc(n * sizeof *map);
    ref = (double *)malloc(n * sizeof *ref);
    p.cutoff = cutoff;
    for (kind = 0; kind <= 1; kind++) {
        p.kind = (elec_cutoff_kind)kind;
        EXPECT(elec_cpu_cutoff_map(&atoms, &l, &p, map, &err) == ELEC_OK, "%s", err.message);
        EXPECT(elec_cpu_cutoff_map_double(&atoms, &l, &p, ref, &err) == ELEC_OK, "%s",
               err.message);
        e = test_rel_rms_float(map, ref, n);
        for (i = 0; i < n; i++) /* a reference that is not all zero */
            if (ref[i] != 0.0) break;
        printf("     %-7s relative RMS %.2e (%zu atoms at the edge)\n",
               kind == ELEC_CUTOFF_MSM ? "msm" : "shifted", e, edge);
        EXPECT(i < n && e <= 1e-6, "%.3e", e);
    }
    free(map);
    free(ref);
    free(xyz);
    free(q);
    test_system_free(&s);
}

/* The cutoff map reports its progress in blocks of a 64th, ending at 1,
   and stops where the callback says so (no test gave it a callback: a
   mutation ignoring the cancel passed); so does the double reference,
   which never called it (an audit). */
TEST(cutoff_map_reports_progress_and_cancels) {
    test_system s = test_system_random(300, 12.0, 57);
    elec_atoms atoms = test_system_atoms(&s);
    elec_lattice l = test_lattice_cube(24, 0.0, 0.5);
    float *map = (float *)malloc(elec_lattice_size(&l) * sizeof *map);
    test_progress_log log;
    elec_cutoff_params p = {0};
    elec_error err;
    memset(&log, 0, sizeof log);
    log.increasing = 1;
    p.progress = test_log_progress;
    p.progress_user = &log;
    EXPECT(elec_cpu_cutoff_map(&atoms, &l, &p, map, &err) == ELEC_OK, "%s", err.message);
    EXPECT(log.calls >= 60 && log.increasing && log.last == 1.0,
           "%d calls, increasing %d, last %g", log.calls, log.increasing, log.last);
    memset(&log, 0, sizeof log);
    log.increasing = 1;
    log.cancel_after = 3;
    EXPECT(elec_cpu_cutoff_map(&atoms, &l, &p, map, &err) == ELEC_ERR_CANCELLED &&
               log.calls == 3,
           "cancelled at the third call: %d calls (%s)", log.calls, err.message);
    {
        double *exact = (double *)malloc(elec_lattice_size(&l) * sizeof *exact);
        memset(&log, 0, sizeof log);
        log.increasing = 1;
        EXPECT(elec_cpu_cutoff_map_double(&atoms, &l, &p, exact, &err) == ELEC_OK, "%s",
               err.message);
        EXPECT(log.calls >= 60 && log.increasing && log.last == 1.0,
               "double: %d calls, increasing %d, last %g", log.calls, log.increasing, log.last);
        memset(&log, 0, sizeof log);
        log.increasing = 1;
        log.cancel_after = 3;
        EXPECT(elec_cpu_cutoff_map_double(&atoms, &l, &p, exact, &err) == ELEC_ERR_CANCELLED &&
                   log.calls == 3,
               "double, cancelled at the third call: %d calls (%s)", log.calls, err.message);
        free(exact);
    }
    free(map);
    test_system_free(&s);
}

TEST(smoothed_potentials_vanish_at_the_cutoff) {
    /* Both S(r) reach 0 at r = a and are 0 beyond; MSM's equals
       1/r - gamma(r/a)/a below it. */
    EXPECT(fabs(elec_cutoff_term(12.0 - 1e-9, 12.0, ELEC_CUTOFF_MSM, 2)) < 1e-9, "msm at a");
    EXPECT(fabs(elec_cutoff_term(12.0 - 1e-9, 12.0, ELEC_CUTOFF_SHIFTED, 2)) < 1e-9, "shifted at a");
    EXPECT(elec_cutoff_term(13.0, 12.0, ELEC_CUTOFF_MSM, 2) == 0.0, "msm beyond a");
    EXPECT(fabs(elec_cutoff_term(3.0, 12.0, ELEC_CUTOFF_MSM, 2) -
                (1.0 / 3.0 - elec_msm_gamma(0.25, 2) / 12.0)) < 1e-15, "msm formula");
    EXPECT(fabs(elec_cutoff_term(3.0, 12.0, ELEC_CUTOFF_SHIFTED, 2) -
                (1.0 - 9.0 / 144.0) * (1.0 - 9.0 / 144.0) / 3.0) < 1e-15, "shifted formula");
}

TEST(bad_input_is_refused) {
    double xyz[3] = {0, 0, 0}, q[1] = {1};
    elec_atoms atoms = elec_atoms_from_xyz(1, xyz, q, NULL);
    elec_lattice l = {{4, 4, 4}, {0, 0, 0}, {1, 1, 1}};
    const double origin[3] = {0, 0, 0}, extent[3] = {4, 4, 4};
    elec_cutoff_params p = {0};
    elec_bins b;
    elec_error err;
    float map[64];
    EXPECT(elec_bins_build(&atoms, origin, extent, 0.0, &b, &err) == ELEC_ERR_INVALID_ARG, "zero bin");
    EXPECT(elec_bins_build(&atoms, NULL, extent, 4.0, &b, &err) == ELEC_ERR_INVALID_ARG,
           "NULL origin");
    EXPECT(elec_bins_build(&atoms, origin, NULL, 4.0, &b, &err) == ELEC_ERR_INVALID_ARG,
           "NULL extent");
    {
        /* a region past float's range, in which the bins hold positions
           (an atom was stored at -inf with ELEC_OK: an audit) */
        const double wide[3] = {1e39, 1.0, 1.0};
        EXPECT(elec_bins_build(&atoms, origin, wide, 1e38, &b, &err) == ELEC_ERR_INVALID_ARG &&
                   strstr(err.message, "float"),
               "a region 1e39 A long: %s", err.message);
    }
    p.cutoff = -2.0;
    EXPECT(elec_cpu_cutoff_map(&atoms, &l, &p, map, &err) == ELEC_ERR_INVALID_ARG, "negative cutoff");
    p.cutoff = 1e308; /* the lattice and twice it pass double's range: named (an audit) */
    EXPECT(elec_cpu_cutoff_map(&atoms, &l, &p, map, &err) == ELEC_ERR_INVALID_ARG &&
               strstr(err.message, "cutoff 1e+308"),
           "cutoff 1e308: %s", err.message);
    p.cutoff = 0.0;
    p.kind = (elec_cutoff_kind)7;
    EXPECT(elec_cpu_cutoff_map(&atoms, &l, &p, map, &err) == ELEC_ERR_INVALID_ARG, "unknown kind");
    p.kind = ELEC_CUTOFF_MSM;
    EXPECT(elec_cpu_cutoff_map(&atoms, &l, &p, NULL, &err) == ELEC_ERR_INVALID_ARG, "NULL map");
    EXPECT(elec_cpu_cutoff_map(&atoms, &l, &p, map, &err) == ELEC_OK, "%s", err.message);
    EXPECT(test_all_finite_float(map, 64), "an atom on a lattice point leaves the map finite");
}

TEST(maps_past_their_range_are_refused) {
    /* Charges of 1e308 e (test_huge_charges): both maps fail, naming the
       method and the first point past their type's range (the float map's
       first, the double map's point 43), where they once returned ELEC_OK
       full of inf. */
    elec_atoms atoms = test_huge_charges();
    elec_lattice l = test_lattice_cube(6, 0.0, 1.0);
    elec_cutoff_params p = {0};
    elec_error err;
    float mapf[216];
    double mapd[216];
    elec_status s = elec_cpu_cutoff_map(&atoms, &l, &p, mapf, &err);
    EXPECT(test_refused_past_range(s, &err, "cutoff map", "float") &&
               strstr(err.message, "point 0 came out inf"),
           "float: status %d, %s", (int)s, err.message);
    s = elec_cpu_cutoff_map_double(&atoms, &l, &p, mapd, &err);
    EXPECT(test_refused_past_range(s, &err, "cutoff map", "double") &&
               strstr(err.message, "point 43 came out inf"),
           "double: status %d, %s", (int)s, err.message);
}

int main(void) {
    RUN(bin_length_follows_density_and_fill);
    RUN(every_atom_lands_in_a_slot_the_overflow_or_outside);
    RUN(the_cell_list_finds_every_neighbour_once);
    RUN(a_cell_list_spans_the_bulk_and_still_finds_the_outliers_pairs);
    RUN(an_overfull_bin_spills_into_the_overflow);
    RUN(neighbourhood_holds_every_bin_within_the_cutoff);
    RUN(neighbourhood_of_arguments_out_of_range_is_empty);
    RUN(cutoff_map_equals_the_direct_cutoff_sum);
    RUN(a_small_map_in_a_large_system_keeps_the_atoms_within_its_cutoff);
    RUN(cutoff_map_reports_progress_and_cancels);
    RUN(smoothed_potentials_vanish_at_the_cutoff);
    RUN(bad_input_is_refused);
    RUN(maps_past_their_range_are_refused);
    return test_summary();
}
