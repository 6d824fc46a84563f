/* tests/test_alloc_fail.c - every CPU entry point under a failed
   allocation: each of a call's allocations (ELEC_MALLOC) failed in turn,
   the call must refuse with ELEC_ERR_NO_MEMORY (or another named error)
   and a message, leave no block allocated, and crash nowhere.  An audit
   found the default CPU charge map freeing uninitialised pointers where
   its second or third array failed (a segfault). */
#include "tests/failing_malloc.h" /* before elec.h: the library's allocator */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#include "tests/test.h"

#define ATOMS 120
#define POINTS 200

/* One small system every call shares: 120 atoms of +-0.5 e in a 15 A
   cube (radii 1.5 A, residues of 8), a 20^3 lattice over it, 200 points. */
typedef struct alloc_case {
    double xyz[3 * ATOMS], charge[ATOMS], radius[ATOMS], points[3 * POINTS];
    double normals[3 * POINTS], phi[POINTS], forces[3 * ATOMS], potential[ATOMS];
    double map_double[8000], weights[8000];
    float map[8000], phi_float[POINTS];
    int residue[ATOMS], counts[8000];
    elec_atoms atoms;
    elec_box box;
    elec_lattice lattice;
} alloc_case;

static alloc_case *alloc_case_make(void) {
    alloc_case *c = (alloc_case *)calloc(1, sizeof *c);
    unsigned seed = 5u;
    int i;
    if (!c) return NULL;
    for (i = 0; i < 3 * ATOMS; i++) {
        seed = seed * 1103515245u + 12345u;
        c->xyz[i] = 15.0 * (seed >> 8) / 16777216.0;
    }
    for (i = 0; i < ATOMS; i++) {
        c->charge[i] = i % 2 ? 0.5 : -0.5;
        c->radius[i] = 1.5;
        c->residue[i] = i / 8;
    }
    for (i = 0; i < 3 * POINTS; i++) {
        c->points[i] = c->xyz[i % (3 * ATOMS)] + 0.6;
        c->normals[i] = i % 3 == 2 ? 1.0 : 0.0;
    }
    c->atoms = elec_atoms_from_xyz(ATOMS, c->xyz, c->charge, c->radius);
    for (i = 0; i < 3; i++) {
        c->box.length[i] = 15.0;
        c->lattice.dims[i] = 20;
        c->lattice.origin[i] = -2.0;
        c->lattice.spacing[i] = 1.0;
    }
    return c;
}

/* The calls, each with the default parameters but where a method needs
   one (a tolerance, a periodic map, a screening length). */
static elec_status call_dcs_map(alloc_case *c, elec_error *err) {
    elec_dcs_params p = {0};
    return elec_cpu_dcs_map(&c->atoms, &c->lattice, &p, c->map, err);
}
static elec_status call_dcs_map_double(alloc_case *c, elec_error *err) {
    elec_dcs_params p = {0};
    return elec_cpu_dcs_map_double(&c->atoms, &c->lattice, &p, c->map_double, err);
}
static elec_status call_dcs_points(alloc_case *c, elec_error *err) {
    elec_dcs_params p = {0};
    return elec_cpu_dcs_points(&c->atoms, c->points, POINTS, &p, c->phi_float, err);
}
static elec_status call_mdh_points(alloc_case *c, elec_error *err) {
    elec_mdh_params p = {0};
    p.kappa = 0.1;
    return elec_cpu_mdh_points(&c->atoms, c->points, POINTS, &p, c->phi_float, err);
}
static elec_status call_cutoff_map(alloc_case *c, elec_error *err) {
    elec_cutoff_params p = {0};
    return elec_cpu_cutoff_map(&c->atoms, &c->lattice, &p, c->map, err);
}
static elec_status call_cutoff_map_double(alloc_case *c, elec_error *err) {
    elec_cutoff_params p = {0};
    return elec_cpu_cutoff_map_double(&c->atoms, &c->lattice, &p, c->map_double, err);
}
static elec_status call_msm_map(alloc_case *c, elec_error *err) {
    elec_msm_params p = {0};
    return elec_cpu_msm_map(&c->atoms, &c->lattice, &p, c->map, err);
}
static elec_status call_msm_map_slab(alloc_case *c, elec_error *err) {
    elec_msm_params p = {0};
    return elec_cpu_msm_map_slab(&c->atoms, &c->lattice, 4, 9, &p, c->map, err);
}
static elec_status call_msm_points(alloc_case *c, elec_error *err) {
    elec_msm_params p = {0};
    return elec_cpu_msm_points(&c->atoms, c->points, POINTS, &p, c->phi, err);
}
static elec_status call_msm_energy(alloc_case *c, elec_error *err) {
    elec_msm_params p = {0};
    double energy;
    return elec_cpu_msm_energy(&c->atoms, &p, &energy, c->forces, err);
}
/* a tolerance with forces: the forces checked against direct sums
   (elec__msm_energy_checked packs the atoms), and a refusal leaves them
   zeroed, not the last try's */
static elec_status call_msm_energy_checked(alloc_case *c, elec_error *err) {
    elec_msm_params p = {0};
    double energy;
    size_t i, left = 0;
    elec_status s;
    p.tolerance = 1e-4;
    for (i = 0; i < 3 * ATOMS; i++) c->forces[i] = 1.0;
    s = elec_cpu_msm_energy(&c->atoms, &p, &energy, c->forces, err);
    for (i = 0; s != ELEC_OK && i < 3 * ATOMS; i++) left += c->forces[i] != 0.0;
    EXPECT(left == 0, "elec_cpu_msm_energy with a tolerance refused (%d) but left %zu force "
                      "components unzeroed", (int)s, left);
    return s;
}
static elec_status call_msm_lattices(alloc_case *c, elec_error *err) {
    elec_msm_params p = {0};
    elec_msm_lattices lattices;
    elec_status s = elec_cpu_msm_lattices(&c->atoms, NULL, &p, &lattices, err);
    if (s == ELEC_OK) elec_msm_lattices_free(&lattices);
    return s;
}
static elec_status call_msm_periodic(alloc_case *c, elec_error *err) {
    elec_msm_params p = {0};
    double energy;
    return elec_cpu_msm_periodic_energy(&c->atoms, &c->box, &p, &energy, c->forces,
                                        c->potential, err);
}
static elec_status call_ewald(alloc_case *c, elec_error *err) {
    elec_ewald_params p = {0};
    elec_ewald_terms terms;
    p.tolerance = 1e-5;
    return elec_cpu_ewald(&c->atoms, &c->box, &p, &terms, c->forces, c->potential, err);
}
static elec_status call_ewald_forces_at(alloc_case *c, elec_error *err) {
    elec_ewald_params p = {0};
    const size_t which[3] = {1, 5, 9};
    p.tolerance = 1e-5;
    return elec_cpu_ewald_forces_at(&c->atoms, &c->box, &p, which, 3, c->forces, err);
}
#ifdef ELEC_WITH_FFTW
static elec_status call_spme(alloc_case *c, elec_error *err) {
    elec_spme_params p = {0};
    elec_ewald_terms terms;
    return elec_cpu_spme(&c->atoms, &c->box, &p, &terms, c->forces, c->potential, err);
}
#endif
static elec_status call_chargemap(alloc_case *c, elec_error *err) {
    elec_chargemap_params p = {0};
    p.periodic = 1;
    return elec_cpu_chargemap(&c->atoms, &c->lattice, &p, c->map, err);
}
static elec_status call_chargemap_double(alloc_case *c, elec_error *err) {
    elec_chargemap_params p = {0};
    p.periodic = 1;
    return elec_cpu_chargemap_double(&c->atoms, &c->lattice, &p, c->map_double, c->weights,
                                     c->counts, err);
}
static elec_status call_coulomb(alloc_case *c, elec_error *err) {
    double energy;
    return elec_cpu_coulomb_energy(&c->atoms, 1, &energy, c->forces, err);
}
/* the hierarchy and the ALPB sum over it: salt and HCP, or exact */
static elec_status call_alpb(alloc_case *c, int exact, elec_error *err) {
    elec_alpb_params p = {0};
    elec_hcp hcp;
    elec_status s = elec_hcp_build(&c->atoms, c->residue, NULL, NULL, &hcp, err);
    if (s != ELEC_OK) return s;
    p.salt = exact ? 0.0 : 0.1;
    p.exact = exact;
    s = elec_cpu_alpb_double(&hcp, c->points, c->normals, POINTS, &p, c->phi, err);
    elec_hcp_free(&hcp);
    return s;
}
static elec_status call_alpb_hcp(alloc_case *c, elec_error *err) { return call_alpb(c, 0, err); }
static elec_status call_alpb_exact(alloc_case *c, elec_error *err) { return call_alpb(c, 1, err); }
static elec_status call_surface_contact(alloc_case *c, elec_error *err) {
    elec_surface surface;
    elec_status s = elec_surface_contact(&c->atoms, 1.0, 1.4, &surface, err);
    if (s == ELEC_OK) elec_surface_free(&surface);
    return s;
}
static elec_status call_surface_mesh(alloc_case *c, elec_error *err) {
    elec_surface surface;
    elec_status s = elec_surface_mesh(&c->atoms, 0.7, 2.0, &surface, err);
    if (s == ELEC_OK) elec_surface_free(&surface);
    return s;
}

typedef struct alloc_call {
    const char *name;
    elec_status (*call)(alloc_case *, elec_error *);
} alloc_call;

static const alloc_call calls[] = {
    {"elec_cpu_dcs_map", call_dcs_map},
    {"elec_cpu_dcs_map_double", call_dcs_map_double},
    {"elec_cpu_dcs_points", call_dcs_points},
    {"elec_cpu_mdh_points", call_mdh_points},
    {"elec_cpu_cutoff_map", call_cutoff_map},
    {"elec_cpu_cutoff_map_double", call_cutoff_map_double},
    {"elec_cpu_msm_map", call_msm_map},
    {"elec_cpu_msm_map_slab", call_msm_map_slab},
    {"elec_cpu_msm_points", call_msm_points},
    {"elec_cpu_msm_energy", call_msm_energy},
    {"elec_cpu_msm_energy (a tolerance, forces checked)", call_msm_energy_checked},
    {"elec_cpu_msm_lattices", call_msm_lattices},
    {"elec_cpu_msm_periodic_energy", call_msm_periodic},
    {"elec_cpu_ewald", call_ewald},
    {"elec_cpu_ewald_forces_at", call_ewald_forces_at},
#ifdef ELEC_WITH_FFTW
    {"elec_cpu_spme", call_spme},
#endif
    {"elec_cpu_chargemap", call_chargemap},
    {"elec_cpu_chargemap_double", call_chargemap_double},
    {"elec_cpu_coulomb_energy", call_coulomb},
    {"elec_hcp_build + elec_cpu_alpb_double (HCP, salt)", call_alpb_hcp},
    {"elec_hcp_build + elec_cpu_alpb_double (exact)", call_alpb_exact},
    {"elec_surface_contact", call_surface_contact},
    {"elec_surface_mesh", call_surface_mesh},
};

/* Call k of each entry point failed, for every k its plain run makes. */
TEST(each_failed_allocation_is_refused_by_name_and_frees_the_rest) {
    alloc_case *c = alloc_case_make();
    size_t which;
    if (!c) {
        EXPECT(0, "no memory for the case");
        return;
    }
    for (which = 0; which < sizeof calls / sizeof calls[0]; which++) {
        long total, k, problems = 0;
        elec_error err;
        elec_status s;
        test_fail_at = 0;
        test_allocations = 0;
        s = calls[which].call(c, &err);
        total = test_allocations;
        EXPECT(s == ELEC_OK && test_live_blocks == 0, "%s: plain run %d (%s), %ld blocks left",
               calls[which].name, (int)s, s == ELEC_OK ? "" : err.message, test_live_blocks);
        for (k = 1; k <= total; k++) {
            const long live = test_live_blocks;
            test_fail_at = k;
            test_allocations = 0;
            memset(&err, 0, sizeof err);
            s = calls[which].call(c, &err);
            if (s == ELEC_OK || err.status != s || !err.message[0] ||
                test_live_blocks != live) {
                problems++;
                EXPECT(0, "%s, allocation %ld of %ld failed: status %d, err.status %d, "
                       "\"%s\", %ld blocks left", calls[which].name, k, total, (int)s,
                       (int)err.status, err.message, test_live_blocks - live);
            }
        }
        printf("     %-50s %3ld allocations, each failed in turn: %ld problems\n",
               calls[which].name, total, problems);
    }
    test_fail_at = 0;
    free(c);
}

int main(void) {
    RUN(each_failed_allocation_is_refused_by_name_and_frees_the_rest);
    return test_summary();
}
