/* elecsurf - the ALPB electrostatic potential on a molecule's surface.

   elecsurf [options] input.pqr output.ply|output.txt|output.png
   elecsurf [options] input.pqr output.dx|output.mrc     (a map; see below)

   The potential of the analytical linearized Poisson-Boltzmann model at
   the vertices of a surface (a closed mesh, the contact surface, or an
   MSMS .vert file or point list given), exact or by hierarchical charge
   partitioning; written as a coloured PLY mesh, a text table, or a PNG
   picture with a colour bar.  Built as C for the CPU alone, or by nvcc
   (-x cu -DELEC_WITH_CUDA) with the GPU path, which is then the default
   when a GPU is present; PNG output needs libpng (-DELECSURF_WITH_PNG
   -lpng, which the Makefile adds where libpng is installed).  Run with
   --help for the options and their defaults.

   A map output (.dx, .dx.gz, .mrc, .map, .ccp4) holds ALPB's potential on
   a lattice around the molecule, for a viewer to colour its own surface
   by: at a point P outside the surface E1 with r = A + p, p the distance
   from P to the surface (its nearest vertex), the potential a vertex
   there would have at that projection; inside, E1 at p = 0 (ALPB's
   interior form needs Born radii elec does not compute).

   elecsurf_parse reads the command line and does nothing else (no file is
   touched), so that tests/fuzz/fuzz_elecsurf_options.c can call it; define
   ELECSURF_NO_MAIN to include this file without its main. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#ifdef ELEC_WITH_CUDA
#include "elec_cuda.cuh"
#endif
#include "examples/cli.h"
#ifdef ELECSURF_WITH_PNG
#include <png.h>
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef enum { SURFACE_DEFAULT, SURFACE_MESH, SURFACE_CONTACT, SURFACE_FILE } surface_kind;
typedef enum { OUTPUT_PLY, OUTPUT_TXT, OUTPUT_PNG, OUTPUT_MAP } output_kind;
typedef enum { DEVICE_AUTO, DEVICE_CPU, DEVICE_GPU } run_device;

typedef struct options {
    const char *input, *output, *surface_file;
    surface_kind surface;
    output_kind kind;
    run_device device;
    double density, probe, temperature, range, hcp_tolerance; /* output units */
    double map_spacing, map_padding; /* a map's lattice (A) */
    size_t max_points;               /* a map's lattice points at most */
    elec_alpb_params alpb;
    int units_kT, quiet, size, view_axis, view_sign;
    unsigned given; /* GIVEN_* bits: options only some outputs or surfaces read */
} options;

enum {
    GIVEN_DENSITY = 1u << 0, GIVEN_PROBE = 1u << 1,
    GIVEN_HCP_CHARGES = 1u << 3, GIVEN_HCP = 1u << 4, GIVEN_HCP_TOLERANCE = 1u << 5,
    GIVEN_RANGE = 1u << 6, GIVEN_SIZE = 1u << 7, GIVEN_SPACING = 1u << 8,
    GIVEN_MAX_POINTS = 1u << 9, GIVEN_PADDING = 1u << 10, GIVEN_VIEW = 1u << 11,
    GIVEN_VARIANT = 1u << 12, GIVEN_TEMPERATURE = 1u << 13
};

/* A map's points at most by default: each holds its position (three
   doubles) and potential (a float) while the sums run, 28 bytes, so 2^25
   points take 0.9 GiB, about what elecmap's 2^28 float points take. */
#define ELECSURF_MAX_MAP_POINTS ((size_t)1 << 25)

static void usage(FILE *out) {
    fprintf(out,
"usage: elecsurf [options] input.pqr output.ply|output.txt|output.png\n"
"       elecsurf [options] input.pqr output.dx|output.mrc\n"
"\n"
"The ALPB electrostatic potential (analytical linearized Poisson-Boltzmann)\n"
"on the surface of the atoms of a PQR file, exact or by hierarchical charge\n"
"partitioning (HCP).  The output's extension picks its kind: .ply (the\n"
"surface with a per-vertex potential and red-white-blue colours), .txt\n"
"(x y z [nx ny nz] potential, one line per point, in order), .png (a\n"
"picture of the coloured surface with a colour bar), or a map (.dx, .dx.gz,\n"
"as elecmap writes them; .mrc, .map, .ccp4: MRC2014): the potential on a\n"
"lattice around the molecule, for a viewer to colour its own surface by;\n"
"outside the surface E1 at r = A + p, p the height over the nearest\n"
"vertex's atom's sphere (contact) or tangent plane (other surfaces), inside\n"
"E1 at p = 0 (no salt, --proj or --gem with a map).\n"
"\n"
"  --surface mesh|contact|FILE\n"
"                        a closed triangulated surface (marching tetrahedra\n"
"                        over a Gaussian density; default for .ply and .png),\n"
"                        the contact surface (default for .txt), or a file:\n"
"                        MSMS .vert (with its .face beside it, if there) or\n"
"                        a point list, x y z [nx ny nz] a line\n"
"  --density D           surface points per A^2 (default 3; the mesh's\n"
"                        lattice spacing is 1/sqrt(D), coarser where its\n"
"                        lattice would pass 2e7 points)\n"
"  --probe R             contact surface probe radius in A (default 1.5)\n"
"  --proj P              the potential at P A along each normal (default 0)\n"
"  --eps-in E            solute dielectric (default 1)\n"
"  --eps-out E           solvent dielectric (default 80)\n"
"  --salt M              1:1 salt in mol/L (default 0)\n"
"  --A A                 electrostatic size in A (default: A_det, computed)\n"
"  --exact               every atom, no HCP\n"
"  --hcp-charges 1|2     charges per far component (default 2)\n"
"  --hcp H1[,H2[,H3]]    HCP thresholds of residues, chains, complexes in A\n"
"                        (default 20,70,150; 'inf' never approximates)\n"
"  --hcp-tolerance T     a far component's estimated error at most T in the\n"
"                        output's units (default 0.05 kcal/(mol e), 0.084\n"
"                        kT/e; 'inf': the distance test alone, the seed's)\n"
"  --gem                 GEM's formulas (its region 1 at p <= 0, its kappa\n"
"                        0.316 sqrt(M), its 332.0 with --units kcal)\n"
"  --gpu | --cpu         where to compute (default: the GPU when present)\n"
"  --variant NAME        GPU kernel: simple, registers, sorted, packed,\n"
"                        pairs, or fastest (default)\n"
"  --units kT|kcal       kT/e (default) or kcal/(mol e)\n"
"  --temperature T       K, for kT/e and the Debye length (default 298.15)\n"
"  --range R             .ply and .png colours saturate at +-R (default: the\n"
"                        95th percentile of |potential|)\n"
"  --size N              .png picture of N x N pixels (default 480)\n"
"  --spacing H           a map's lattice spacing in A (default 1)\n"
"  --padding P           a map's margin around the atoms in A (default 10)\n"
"  --max-points N        refuse maps of more than N points (default 2^25: a\n"
"                        map holds 28 bytes a point, 0.9 GiB at 2^25)\n"
"  --view [-]x|y|z       .png: look along this axis (default -z: from +z)\n"
"  --quiet               no summary and no progress\n"
"  --version             elec's version and what this build has\n"
"  --help                this text\n");
}

static int parse_double(const char *text, double *value) {
    char *end;
    *value = strtod(text, &end);
    return end != text && *end == '\0' && isfinite(*value);
}

/* An option this output and surface would not read is refused, naming
   what it is for, not ignored (an audit found --exact beside
   --hcp-charges, --spacing beside a .ply and --probe beside the mesh all
   taken in silence).  1 where every option given counts. */
static int options_all_read(const options *o, FILE *messages) {
    static const struct {
        unsigned bit;
        const char *name, *for_what;
    } only[] = {
        {GIVEN_HCP_CHARGES, "--hcp-charges", "for HCP (--exact sums every atom)"},
        {GIVEN_HCP, "--hcp", "for HCP (--exact sums every atom)"},
        {GIVEN_HCP_TOLERANCE, "--hcp-tolerance", "for HCP (--exact sums every atom)"},
        {GIVEN_PROBE, "--probe", "for the contact surface (--surface contact)"},
        {GIVEN_DENSITY, "--density", "for the mesh and the contact surface, not a file's points"},
        {GIVEN_RANGE, "--range", "for the colours of .ply and .png"},
        {GIVEN_SIZE, "--size", "for .png"},
        {GIVEN_VIEW, "--view", "for .png"},
        {GIVEN_SPACING, "--spacing", "for a map (.dx, .mrc)"},
        {GIVEN_PADDING, "--padding", "for a map (.dx, .mrc)"},
        {GIVEN_MAX_POINTS, "--max-points", "for a map (.dx, .mrc)"},
        {GIVEN_VARIANT, "--variant", "a GPU kernel's name (--cpu computes on the CPU)"},
        {GIVEN_TEMPERATURE, "--temperature",
         "for kT/e (--units kT) and salt's Debye length (--salt, not GEM's)"},
    };
    const int png = o->kind == OUTPUT_PNG;
    unsigned unread = 0;
    size_t k;
    if (o->alpb.exact) unread |= GIVEN_HCP_CHARGES | GIVEN_HCP | GIVEN_HCP_TOLERANCE;
    if (o->surface != SURFACE_CONTACT) unread |= GIVEN_PROBE;
    if (o->surface == SURFACE_FILE) unread |= GIVEN_DENSITY;
    if (o->kind != OUTPUT_PLY && !png) unread |= GIVEN_RANGE;
    if (!png) unread |= GIVEN_SIZE | GIVEN_VIEW;
    if (o->kind != OUTPUT_MAP) unread |= GIVEN_SPACING | GIVEN_PADDING | GIVEN_MAX_POINTS;
    if (o->device == DEVICE_CPU) unread |= GIVEN_VARIANT;
    /* GEM's kappa is 0.316 sqrt(M) at any temperature */
    if (!o->units_kT && (!(o->alpb.salt > 0.0) || o->alpb.gem_compat))
        unread |= GIVEN_TEMPERATURE;
    for (k = 0; k < sizeof only / sizeof only[0]; k++)
        if (o->given & unread & only[k].bit) {
            fprintf(messages, "elecsurf: %s is %s: here it would be ignored (leave it out)\n",
                    only[k].name, only[k].for_what);
            return 0;
        }
    return 1;
}

/* What elecsurf_parse found: run, print the help or the version, or a
   usage error (its message already written). */
enum { PARSE_RUN, PARSE_HELP, PARSE_ERROR, PARSE_VERSION };

/* Parses argv into o and does nothing else (no file is opened: the
   fuzzer of tests/fuzz runs it); a usage error's message goes to
   `messages`. */
static int elecsurf_parse(int argc, char **argv, options *o, FILE *messages) {
    int i, positional = 0;
    const char *files[2] = {NULL, NULL};
    memset(o, 0, sizeof *o);
    o->units_kT = 1;
    o->temperature = ELEC_ROOM_TEMPERATURE;
    o->size = 480;
    o->map_spacing = 1.0;
    o->map_padding = 10.0;
    o->max_points = ELECSURF_MAX_MAP_POINTS;
    o->view_axis = 2;
    o->view_sign = -1;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = argc - i - 1;
#define NEED(n)                                                               \
    if (more < (n)) {                                                         \
        fprintf(messages, "elecsurf: %s needs a value\n", a);                   \
        return PARSE_ERROR;                                                   \
    }
#define DOUBLE_ARG(target, what)                                              \
    do {                                                                      \
        NEED(1);                                                              \
        if (!parse_double(argv[++i], &(target))) {                            \
            fprintf(messages, "elecsurf: %s: '%s' is not a %s\n", a, argv[i],   \
                    what);                                                    \
            return PARSE_ERROR;                                               \
        }                                                                     \
    } while (0)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            return PARSE_HELP;
        } else if (!strcmp(a, "--version")) {
            return PARSE_VERSION;
        } else if (!strcmp(a, "--surface")) {
            NEED(1);
            a = argv[++i];
            if (!strcmp(a, "mesh")) o->surface = SURFACE_MESH;
            else if (!strcmp(a, "contact")) o->surface = SURFACE_CONTACT;
            else {
                o->surface = SURFACE_FILE;
                o->surface_file = a;
            }
        } else if (!strcmp(a, "--density")) {
            o->given |= GIVEN_DENSITY;
            DOUBLE_ARG(o->density, "density per A^2");
            if (!(o->density > 0.0) || !(o->density <= 1e4)) {
                fprintf(messages, "elecsurf: --density %g: give a density in (0, 1e4]\n",
                        o->density);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--probe")) {
            o->given |= GIVEN_PROBE;
            DOUBLE_ARG(o->probe, "radius in A");
            if (!(o->probe > 0.0) || !(o->probe <= 1e4)) {
                fprintf(messages, "elecsurf: --probe %g: give a radius in (0, 1e4] A\n",
                        o->probe);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--proj")) {
            DOUBLE_ARG(o->alpb.proj, "length in A");
        } else if (!strcmp(a, "--eps-in") || !strcmp(a, "--eps-out")) {
            /* 0 is the library's "default": given here, it is refused */
            double *eps = !strcmp(a, "--eps-in") ? &o->alpb.eps_in : &o->alpb.eps_out;
            DOUBLE_ARG(*eps, "dielectric constant");
            if (!(*eps > 0.0)) {
                fprintf(messages, "elecsurf: %s %g: give a positive dielectric constant\n", a,
                        *eps);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--salt")) {
            DOUBLE_ARG(o->alpb.salt, "concentration in mol/L");
            if (!(o->alpb.salt >= 0.0)) {
                fprintf(messages, "elecsurf: --salt %g: give a concentration of 0 or more\n",
                        o->alpb.salt);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--A")) {
            DOUBLE_ARG(o->alpb.electrostatic_size, "size in A");
            if (!(o->alpb.electrostatic_size > 0.0)) {
                fprintf(messages, "elecsurf: --A %g: give a positive size\n",
                        o->alpb.electrostatic_size);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--exact")) {
            o->alpb.exact = 1;
        } else if (!strcmp(a, "--hcp-charges")) {
            o->given |= GIVEN_HCP_CHARGES;
            NEED(1);
            a = argv[++i];
            if (strcmp(a, "1") && strcmp(a, "2")) {
                fprintf(messages, "elecsurf: --hcp-charges '%s': use 1 or 2\n", a);
                return PARSE_ERROR;
            }
            o->alpb.hcp_charges = a[0] - '0';
        } else if (!strcmp(a, "--hcp")) {
            o->given |= GIVEN_HCP;
            char copy[256], *token, *rest;
            int level = 0;
            NEED(1);
            if (strlen(argv[i + 1]) >= sizeof copy) { /* not cut short in silence */
                fprintf(messages, "elecsurf: --hcp '%.40s...': give 1 to 3 thresholds in A, "
                                "comma-separated, in under %zu characters\n",
                        argv[i + 1], sizeof copy);
                return PARSE_ERROR;
            }
            snprintf(copy, sizeof copy, "%s", argv[++i]);
            /* strtok_r passes over an empty field: "20,,70" would be 20,70 */
            if (copy[0] == ',' || strstr(copy, ",,") ||
                (copy[0] && copy[strlen(copy) - 1] == ',')) {
                fprintf(messages, "elecsurf: --hcp '%s': an empty threshold; give 1 to 3 "
                                "positive thresholds in A (or inf), comma-separated\n",
                        argv[i]);
                return PARSE_ERROR;
            }
            for (token = strtok_r(copy, ",", &rest); token; token = strtok_r(NULL, ",", &rest)) {
                double h;
                if (level == ELEC_HCP_LEVELS ||
                    (!parse_double(token, &h) && strcmp(token, "inf")) ||
                    (strcmp(token, "inf") && !(h > 0.0))) {
                    fprintf(messages, "elecsurf: --hcp '%s': give 1 to 3 positive thresholds "
                                    "in A (or inf), comma-separated\n", argv[i]);
                    return PARSE_ERROR;
                }
                o->alpb.hcp_h[level++] = strcmp(token, "inf") ? h : HUGE_VAL;
            }
            if (level == 0) {
                fprintf(messages, "elecsurf: --hcp needs thresholds\n");
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--hcp-tolerance")) {
            o->given |= GIVEN_HCP_TOLERANCE;
            NEED(1);
            if (!strcmp(argv[i + 1], "inf")) {
                o->hcp_tolerance = HUGE_VAL;
                i++;
            } else {
                DOUBLE_ARG(o->hcp_tolerance, "potential");
                if (!(o->hcp_tolerance > 0.0)) {
                    fprintf(messages, "elecsurf: --hcp-tolerance %g: give a positive potential "
                                    "(or inf)\n", o->hcp_tolerance);
                    return PARSE_ERROR;
                }
            }
        } else if (!strcmp(a, "--gem")) {
            o->alpb.gem_compat = 1;
        } else if (!strcmp(a, "--gpu") || !strcmp(a, "--cpu")) {
            const run_device device = !strcmp(a, "--gpu") ? DEVICE_GPU : DEVICE_CPU;
            if (o->device != DEVICE_AUTO && o->device != device) {
                fprintf(messages, "elecsurf: --gpu and --cpu exclude each other\n");
                return PARSE_ERROR;
            }
            o->device = device;
        } else if (!strcmp(a, "--variant")) {
            int v, found = 0;
            o->given |= GIVEN_VARIANT;
            NEED(1);
            a = argv[++i];
            for (v = 0; v < ELEC_ALPB_VARIANT_COUNT; v++)
                if (!strcmp(a, elec_alpb_variant_name((elec_alpb_variant)v))) {
                    o->alpb.variant = (elec_alpb_variant)v;
                    found = 1;
                }
            if (!found) { /* the names from the library, so that none is left out */
                fprintf(messages, "elecsurf: unknown GPU kernel '%s' (", a);
                for (v = 0; v < ELEC_ALPB_VARIANT_COUNT; v++)
                    fprintf(messages, "%s%s", v ? ", " : "",
                            elec_alpb_variant_name((elec_alpb_variant)v));
                fprintf(messages, ")\n");
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--units")) {
            NEED(1);
            a = argv[++i];
            if (!strcmp(a, "kT")) o->units_kT = 1;
            else if (!strcmp(a, "kcal")) o->units_kT = 0;
            else {
                fprintf(messages, "elecsurf: unknown units '%s' (kT or kcal)\n", a);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--temperature")) {
            o->given |= GIVEN_TEMPERATURE;
            DOUBLE_ARG(o->temperature, "temperature in K");
            if (!(o->temperature > 0.0)) {
                fprintf(messages, "elecsurf: --temperature %g: give a positive temperature\n",
                        o->temperature);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--range")) {
            o->given |= GIVEN_RANGE;
            DOUBLE_ARG(o->range, "potential");
            if (!(o->range > 0.0)) {
                fprintf(messages, "elecsurf: --range %g: give a positive range\n", o->range);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--size")) {
            o->given |= GIVEN_SIZE;
            double size;
            DOUBLE_ARG(size, "size in pixels");
            if (!(size >= 64 && size <= 8192) || size != (int)size) {
                fprintf(messages, "elecsurf: --size %g: use 64 to 8192 pixels\n", size);
                return PARSE_ERROR;
            }
            o->size = (int)size;
        } else if (!strcmp(a, "--spacing")) {
            o->given |= GIVEN_SPACING;
            DOUBLE_ARG(o->map_spacing, "spacing in A");
            if (!(o->map_spacing > 0.0)) {
                fprintf(messages, "elecsurf: --spacing %g: give a positive spacing\n",
                        o->map_spacing);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--max-points")) {
            o->given |= GIVEN_MAX_POINTS;
            NEED(1);
            if (!cli_size(argv[++i], 1.0, 9007199254740992.0, &o->max_points)) {
                fprintf(messages, "elecsurf: --max-points: '%s' is not a count of 1 to 2^53\n",
                        argv[i]);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--padding")) {
            o->given |= GIVEN_PADDING;
            DOUBLE_ARG(o->map_padding, "padding in A");
            if (!(o->map_padding >= 0.0)) {
                fprintf(messages, "elecsurf: --padding %g: give a padding of 0 or more\n",
                        o->map_padding);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--view")) {
            o->given |= GIVEN_VIEW;
            NEED(1);
            a = argv[++i];
            o->view_sign = a[0] == '-' ? -1 : 1; /* -z: along -z, from +z */
            if (a[0] == '-' || a[0] == '+') a++;
            if (strlen(a) != 1 || a[0] < 'x' || a[0] > 'z') {
                fprintf(messages, "elecsurf: --view '%s': use x, y, z or -x, -y, -z\n", argv[i]);
                return PARSE_ERROR;
            }
            o->view_axis = a[0] - 'x';
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(messages, "elecsurf: unknown option '%s' (see --help)\n", a);
            return PARSE_ERROR;
        } else {
            if (positional == 2) {
                fprintf(messages, "elecsurf: too many file names ('%s')\n", a);
                return PARSE_ERROR;
            }
            files[positional++] = a;
        }
#undef NEED
#undef DOUBLE_ARG
    }
    if (positional != 2) {
        fprintf(messages, "elecsurf: need an input PQR file and an output file\n");
        usage(messages);
        return PARSE_ERROR;
    }
    o->input = cli_input_name(files[0]);
    o->output = cli_output_name(files[1]);
    if (cli_ends_with(o->output, ".ply")) o->kind = OUTPUT_PLY;
    else if (cli_ends_with(o->output, ".txt")) o->kind = OUTPUT_TXT;
    else if (cli_ends_with(o->output, ".png")) o->kind = OUTPUT_PNG;
    else if (cli_ends_with(o->output, ".dx") || cli_ends_with(o->output, ".dx.gz") ||
             elec_map_format_of(o->output, NULL) == ELEC_MAP_MRC)
        o->kind = OUTPUT_MAP;
    else {
        fprintf(messages, "elecsurf: '%s': the output must end in .ply, .txt, .png, or a map's "
                        ".dx, .dx.gz, .mrc, .map, .ccp4\n", o->output);
        return PARSE_ERROR;
    }
    if (o->kind == OUTPUT_MAP && (o->alpb.salt > 0.0 || o->alpb.kappa > 0.0 ||
                                  o->alpb.proj != 0.0 || o->alpb.gem_compat)) {
        fprintf(messages, "elecsurf: %s with a map: a lattice point has no normal and no "
                        "ion-exclusion layer of its own, so a map holds E1 without salt at "
                        "each point's own distance from the surface (write a surface, .ply, "
                        ".txt or .png, for this)\n",
                o->alpb.gem_compat ? "--gem" : o->alpb.proj != 0.0 ? "--proj" : "--salt");
        return PARSE_ERROR;
    }
#ifndef ELECSURF_WITH_PNG
    if (o->kind == OUTPUT_PNG) {
        fprintf(messages, "elecsurf: '%s': this elecsurf was built without libpng, so it "
                        "cannot write PNG (install libpng-dev and rebuild, or write .ply "
                        "or .txt)\n", o->output);
        return PARSE_ERROR;
    }
#endif
    if (o->surface == SURFACE_DEFAULT)
        o->surface = o->kind == OUTPUT_TXT ? SURFACE_CONTACT : SURFACE_MESH;
    return options_all_read(o, messages) ? PARSE_RUN : PARSE_ERROR;
}

/* The summary's size line: A to the thousandth of an A, or in %g form
   past 1e6 A (--A 1e300 once printed a 300-digit number). */
static void report_size(FILE *report, double size, const char *how) {
    if (fabs(size) < 1e6) fprintf(report, "  size       A = %.3f A (%s)\n", size, how);
    else fprintf(report, "  size       A = %.6g A (%s)\n", size, how);
}

/* ----------------------------------------------------------- surfaces */

/* The surface the options name; err says why not. */
static elec_status make_surface(const options *o, const elec_atoms *atoms, elec_surface *s,
                                double *mesh_spacing, elec_error *err) {
    const double density = o->density > 0.0 ? o->density : 3.0;
    if (o->surface == SURFACE_CONTACT)
        return elec_surface_contact(atoms, density, o->probe, s, err);
    if (o->surface == SURFACE_MESH) {
        /* 1/sqrt(density), coarser where the lattice would pass 2e7 points:
           the lattice spans the atoms and, each side, 2.37 times the
           largest radius and two spacings (elec_surface_mesh's reach at
           its default blobbiness; from the centres alone a large atom's
           mesh was refused, not coarsened) */
        double lo[3], hi[3], largest = 0.0, spacing = 1.0 / sqrt(density);
        size_t i;
        int axis, attempt;
        elec_atoms_bounds(atoms, lo, hi);
        for (i = 0; i < atoms->count; i++) {
            double x[3], q, r;
            elec_atoms_get(atoms, i, x, &q, &r);
            if (r > largest) largest = r;
        }
        for (attempt = 0; attempt < 4; attempt++) {
            double volume = 1.0;
            for (axis = 0; axis < 3; axis++)
                volume *= hi[axis] - lo[axis] + 2.0 * (2.37 * largest + 2.0 * spacing);
            if (volume / (spacing * spacing * spacing) <= 2e7) break;
            spacing = 1.01 * cbrt(volume / 2e7);
        }
        if (spacing > 1.0 / sqrt(density)) /* whatever --quiet says: not what was asked */
            fprintf(stderr, "elecsurf: warning: the mesh at %g points per A^2 (spacing %.3g "
                            "A) would pass 2e7 lattice points: spacing %.3g A instead\n",
                    density, 1.0 / sqrt(density), spacing);
        *mesh_spacing = spacing;
        return elec_surface_mesh(atoms, spacing, 0.0, s, err);
    }
    if (cli_ends_with(o->surface_file, ".vert")) {
        /* the .face file beside it, where there is one */
        size_t n = strlen(o->surface_file);
        char *face = (char *)malloc(n + 1);
        FILE *f;
        elec_status st;
        if (!face) return elec_fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory");
        memcpy(face, o->surface_file, n - 5);
        strcpy(face + n - 5, ".face");
        f = fopen(face, "r");
        if (f) fclose(f);
        st = elec_read_msms(o->surface_file, f ? face : NULL, s, err);
        free(face);
        return st;
    }
    return elec_read_points(o->surface_file, s, err);
}

/* -------------------------------------------------------------- colours */

/* Red (negative) - white - blue (positive) over -range .. range. */
static void colour_of(double phi, double range, unsigned char rgb[3]) {
    double t = phi / range;
    t = t < -1.0 ? -1.0 : t > 1.0 ? 1.0 : t;
    if (t < 0.0) {
        rgb[0] = 255;
        rgb[1] = rgb[2] = (unsigned char)(255.0 * (1.0 + t) + 0.5);
    } else {
        rgb[0] = rgb[1] = (unsigned char)(255.0 * (1.0 - t) + 0.5);
        rgb[2] = 255;
    }
}

static int abs_order(const void *a, const void *b) {
    double x = fabs(*(const float *)a), y = fabs(*(const float *)b);
    return (x > y) - (x < y);
}

/* The colour range: --range, else the 95th percentile of |phi| (a few
   exposed charges would otherwise wash the rest out to white). */
static double colour_range(const options *o, const float *phi, size_t n) {
    float *sorted;
    double r;
    if (o->range > 0.0) return o->range;
    sorted = (float *)malloc(n * sizeof *sorted);
    if (!sorted) return 1.0;
    memcpy(sorted, phi, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, abs_order);
    r = fabs(sorted[(size_t)(0.95 * (double)(n - 1))]);
    free(sorted);
    return r > 0.0 ? r : 1.0;
}

/* -------------------------------------------------------------- output */

/* A point's coordinates: four decimals (0.1 pm) where that is short,
   else seven significant digits in e-form (%.4f wrote 1e308 A as 309
   digits). */
static void write_coordinates(elec_output *f, const double *x) {
    int k;
    for (k = 0; k < 3; k++)
        elec_output_printf(f, fabs(x[k]) < 1e6 ? "%s%.4f" : "%s%.6e", k ? " " : "", x[k]);
}

/* The option that sets a parameter the library's refusal names by its
   field (elecsurf's users know the options, not elec_alpb_params). */
static const char *option_of(const char *message) {
    if (strstr(message, "gem_compat")) return " (gem_compat: elecsurf's --gem)";
    if (strstr(message, "electrostatic_size")) return " (electrostatic_size: elecsurf's --A)";
    return "";
}

/* Output goes through elec_output_open (elec.h): a temporary file of a
   name of its own beside path, renamed over it once whole, so that a
   failure leaves the old file (a fixed "<path>.tmp" overwrote a user's
   file of that name, the input itself among them). */
static int write_txt(elec_output *f, const options *o, const elec_surface *s, const float *phi) {
    size_t i;
    elec_output_printf(f,
                       "# elecsurf: ALPB potential in %s at each point moved %g A along its "
                       "normal\n",
                       o->units_kT ? "kT/e" : "kcal/(mol e)", o->alpb.proj);
    elec_output_printf(f, s->normal ? "# x y z nx ny nz potential\n" : "# x y z potential\n");
    for (i = 0; i < s->count; i++) {
        write_coordinates(f, s->xyz + 3 * i);
        if (s->normal)
            elec_output_printf(f, " %.5f %.5f %.5f", s->normal[3 * i], s->normal[3 * i + 1],
                               s->normal[3 * i + 2]);
        elec_output_printf(f, " %.6g\n", (double)phi[i]);
    }
    return 1;
}

static int write_ply(elec_output *f, const options *o, const elec_surface *s, const float *phi,
                     double range) {
    size_t i;
    elec_output_printf(f, "ply\nformat ascii 1.0\n");
    elec_output_printf(f,
                       "comment elecsurf: ALPB potential in %s; colours red (-%g) white blue "
                       "(+%g)\n",
                       o->units_kT ? "kT/e" : "kcal/(mol e)", range, range);
    elec_output_printf(f,
                       "element vertex %zu\nproperty float x\nproperty float y\n"
                       "property float z\n",
                       s->count);
    if (s->normal)
        elec_output_printf(f, "property float nx\nproperty float ny\nproperty float nz\n");
    elec_output_printf(f, "property uchar red\nproperty uchar green\nproperty uchar blue\n"
                          "property float potential\n");
    if (s->triangle_count)
        elec_output_printf(f, "element face %zu\nproperty list uchar int vertex_indices\n",
                           s->triangle_count);
    elec_output_printf(f, "end_header\n");
    for (i = 0; i < s->count; i++) {
        unsigned char rgb[3];
        colour_of(phi[i], range, rgb);
        write_coordinates(f, s->xyz + 3 * i);
        if (s->normal)
            elec_output_printf(f, " %.5f %.5f %.5f", s->normal[3 * i], s->normal[3 * i + 1],
                               s->normal[3 * i + 2]);
        elec_output_printf(f, " %d %d %d %.6g\n", rgb[0], rgb[1], rgb[2], (double)phi[i]);
    }
    for (i = 0; i < s->triangle_count; i++)
        elec_output_printf(f, "3 %zu %zu %zu\n", s->triangles[3 * i], s->triangles[3 * i + 1],
                           s->triangles[3 * i + 2]);
    return 1;
}

/* ------------------------------------------------------------ the picture */

#ifdef ELECSURF_WITH_PNG
/* A 5 x 7 font for the colour bar's labels: rows top to bottom, 5 bits
   each, the leftmost pixel the highest bit. */
static const struct glyph {
    char c;
    unsigned char row[7];
} font[] = {
    {'0', {14, 17, 19, 21, 25, 17, 14}}, {'1', {4, 12, 4, 4, 4, 4, 14}},
    {'2', {14, 17, 1, 2, 4, 8, 31}},     {'3', {30, 1, 1, 14, 1, 1, 30}},
    {'4', {2, 6, 10, 18, 31, 2, 2}},     {'5', {31, 16, 30, 1, 1, 17, 14}},
    {'6', {6, 8, 16, 30, 17, 17, 14}},   {'7', {31, 1, 2, 4, 8, 8, 8}},
    {'8', {14, 17, 17, 14, 17, 17, 14}}, {'9', {14, 17, 17, 15, 1, 2, 12}},
    {'.', {0, 0, 0, 0, 0, 12, 12}},      {'-', {0, 0, 0, 31, 0, 0, 0}},
    {'+', {0, 4, 4, 31, 4, 4, 0}},       {'e', {0, 0, 14, 17, 31, 16, 14}},
    {'k', {16, 16, 18, 20, 24, 20, 18}}, {'T', {31, 4, 4, 4, 4, 4, 4}},
    {'/', {1, 2, 2, 4, 8, 8, 16}},       {'c', {0, 0, 14, 16, 16, 17, 14}},
    {'a', {0, 0, 14, 1, 15, 17, 15}},    {'l', {12, 4, 4, 4, 4, 4, 14}},
    {'m', {0, 0, 26, 21, 21, 17, 17}},   {'o', {0, 0, 14, 17, 17, 17, 14}},
    {'(', {2, 4, 8, 8, 8, 4, 2}},        {')', {8, 4, 2, 2, 2, 4, 8}},
};

typedef struct picture {
    int w, h;
    unsigned char *rgb;
    float *depth;
} picture;

static void put_pixel(picture *p, int x, int y, const unsigned char c[3]) {
    if (x < 0 || y < 0 || x >= p->w || y >= p->h) return;
    memcpy(p->rgb + 3 * ((size_t)y * p->w + x), c, 3);
}

/* Text at (x, y) (top left), each font pixel a scale x scale square. */
static void draw_text(picture *p, int x, int y, int scale, const char *text,
                      const unsigned char c[3]) {
    for (; *text; text++, x += 6 * scale) {
        size_t g;
        for (g = 0; g < sizeof font / sizeof font[0]; g++)
            if (font[g].c == *text) break;
        if (g == sizeof font / sizeof font[0]) continue; /* a blank */
        for (int row = 0; row < 7; row++)
            for (int col = 0; col < 5; col++)
                if (font[g].row[row] >> (4 - col) & 1)
                    for (int dy = 0; dy < scale; dy++)
                        for (int dx = 0; dx < scale; dx++)
                            put_pixel(p, x + col * scale + dx, y + row * scale + dy, c);
    }
}

/* What the renderer needs of a vertex: screen x, y, depth (larger is
   nearer), the normal in view space, the potential. */
typedef struct screen_vertex {
    double x, y, z, n[3], phi;
} screen_vertex;

/* Lambert shading of the potential's colour: ambient 0.35, diffuse 0.65
   from a light above left of the viewer. */
static void shade(double phi, const double n[3], double range, unsigned char out[3]) {
    static const double light[3] = {-0.3939, 0.3939, 0.8305}; /* unit */
    unsigned char base[3];
    double len = sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2]), lambert;
    int k;
    colour_of(phi, range, base);
    lambert = len > 0.0 ? (n[0] * light[0] + n[1] * light[1] + n[2] * light[2]) / len : 1.0;
    if (lambert < 0.0) lambert = 0.0;
    for (k = 0; k < 3; k++) out[k] = (unsigned char)(base[k] * (0.35 + 0.65 * lambert) + 0.5);
}

/* One triangle by its edge functions, potential and normal interpolated
   per pixel, through the depth buffer. */
static void draw_triangle(picture *p, const screen_vertex *a, const screen_vertex *b,
                          const screen_vertex *c, double range) {
    double area = (b->x - a->x) * (c->y - a->y) - (b->y - a->y) * (c->x - a->x);
    /* the bounding box clamped to the picture in double, then made int (a
       corner far outside, or not finite, left int's range: undefined) */
    const double x0 = fmax(floor(fmin(a->x, fmin(b->x, c->x))), 0.0);
    const double x1 = fmin(ceil(fmax(a->x, fmax(b->x, c->x))), p->w - 1.0);
    const double y0 = fmax(floor(fmin(a->y, fmin(b->y, c->y))), 0.0);
    const double y1 = fmin(ceil(fmax(a->y, fmax(b->y, c->y))), p->h - 1.0);
    int x, y;
    if (!(fabs(area) >= 1e-12) || !isfinite(area) || !(x0 <= x1 && y0 <= y1))
        return; /* no area, not a place, or outside the picture */
    for (y = (int)y0; y <= (int)y1; y++)
        for (x = (int)x0; x <= (int)x1; x++) {
            double px = x + 0.5, py = y + 0.5;
            double wa = ((b->x - px) * (c->y - py) - (b->y - py) * (c->x - px)) / area;
            double wb = ((c->x - px) * (a->y - py) - (c->y - py) * (a->x - px)) / area;
            double wc = 1.0 - wa - wb, z, n[3];
            size_t at = (size_t)y * p->w + x;
            unsigned char rgb[3];
            int k;
            if (wa < 0.0 || wb < 0.0 || wc < 0.0) continue;
            z = wa * a->z + wb * b->z + wc * c->z;
            if (z <= p->depth[at]) continue;
            p->depth[at] = (float)z;
            for (k = 0; k < 3; k++) n[k] = wa * a->n[k] + wb * b->n[k] + wc * c->n[k];
            shade(wa * a->phi + wb * b->phi + wc * c->phi, n, range, rgb);
            memcpy(p->rgb + 3 * at, rgb, 3);
        }
}

/* A point of a surface without triangles: a shaded disc, over the pixels
   of its square that lie in the picture (a disc far larger than the
   picture once looped over its whole square, and its corners left int's
   range). */
static void draw_disc(picture *p, const screen_vertex *v, double radius, double range) {
    const double x0 = fmax(floor(v->x - radius), 0.0), x1 = fmin(ceil(v->x + radius), p->w - 1.0);
    const double y0 = fmax(floor(v->y - radius), 0.0), y1 = fmin(ceil(v->y + radius), p->h - 1.0);
    unsigned char rgb[3];
    int x, y;
    if (!isfinite(v->x) || !isfinite(v->y) || !(x0 <= x1 && y0 <= y1))
        return; /* not a place, or outside the picture */
    shade(v->phi, v->n, range, rgb);
    for (y = (int)y0; y <= (int)y1; y++)
        for (x = (int)x0; x <= (int)x1; x++) {
            double dx = x + 0.5 - v->x, dy = y + 0.5 - v->y;
            size_t at;
            if (dx * dx + dy * dy > radius * radius) continue;
            at = (size_t)y * p->w + x;
            if (v->z <= p->depth[at]) continue;
            p->depth[at] = (float)v->z;
            memcpy(p->rgb + 3 * at, rgb, 3);
        }
}

/* Renders the surface (orthographic, looking along the --view axis) into
   the left part of the picture and a colour bar with its labels into the
   right part. */
static int render(picture *p, const options *o, const elec_surface *s, const float *phi,
                  double range, double point_spacing) {
    const unsigned char background[3] = {28, 30, 38}, ink[3] = {235, 235, 235};
    const int bar_room = 12 * o->size / 80 + 40; /* the bar and its labels */
    const int view_w = o->size - bar_room, text = o->size >= 400 ? 2 : 1;
    screen_vertex *v = (screen_vertex *)malloc((s->count + 1) * sizeof *v);
    double lo[2] = {0, 0}, hi[2] = {0, 0}, scale;
    int right, up, axis = o->view_axis, k;
    size_t i;
    if (!v) return 0;
    p->w = p->h = o->size;
    p->rgb = (unsigned char *)malloc((size_t)p->w * p->h * 3);
    p->depth = (float *)malloc((size_t)p->w * p->h * sizeof(float));
    if (!p->rgb || !p->depth) {
        free(v);
        return 0;
    }
    for (i = 0; i < (size_t)p->w * p->h; i++) {
        memcpy(p->rgb + 3 * i, background, 3);
        p->depth[i] = -1e30f;
    }
    /* view space: right, up, toward the viewer (a right-handed frame) */
    right = (axis + 1) % 3;
    up = (axis + 2) % 3;
    for (i = 0; i < s->count; i++) {
        const double *x = s->xyz + 3 * i;
        double sx = o->view_sign < 0 ? x[right] : -x[right];
        for (k = 0; k < 2; k++) {
            double c = k == 0 ? sx : x[up];
            if (i == 0 || c < lo[k]) lo[k] = c;
            if (i == 0 || c > hi[k]) hi[k] = c;
        }
    }
    /* at least 1 A across: points on one spot would otherwise scale by
       1e9 and more */
    scale = 0.92 * fmin(view_w / fmax(hi[0] - lo[0], 1.0), p->h / fmax(hi[1] - lo[1], 1.0));
    for (i = 0; i < s->count; i++) {
        const double *x = s->xyz + 3 * i, *n = s->normal ? s->normal + 3 * i : NULL;
        double flip = o->view_sign < 0 ? 1.0 : -1.0;
        v[i].x = view_w / 2.0 + scale * (flip * x[right] - 0.5 * (lo[0] + hi[0]));
        v[i].y = p->h / 2.0 - scale * (x[up] - 0.5 * (lo[1] + hi[1]));
        v[i].z = flip * x[axis];
        v[i].n[0] = n ? flip * n[right] : 0.0;
        v[i].n[1] = n ? n[up] : 0.0;
        v[i].n[2] = n ? flip * n[axis] : 1.0;
        v[i].phi = phi[i];
    }
    if (s->triangle_count)
        for (i = 0; i < s->triangle_count; i++)
            draw_triangle(p, &v[s->triangles[3 * i]], &v[s->triangles[3 * i + 1]],
                          &v[s->triangles[3 * i + 2]], range);
    else
        for (i = 0; i < s->count; i++) draw_disc(p, &v[i], fmax(1.0, scale * point_spacing), range);
    free(v);
    {   /* the colour bar: +range at the top, -range at the bottom */
        const int bx = view_w + 8, bw = o->size / 40 + 6, top = p->h / 8, bottom = p->h - p->h / 8;
        char label[32];
        for (int y = top; y <= bottom; y++) {
            unsigned char c[3];
            colour_of(range * (1.0 - 2.0 * (y - top) / (double)(bottom - top)), range, c);
            for (int x = bx; x < bx + bw; x++) put_pixel(p, x, y, c);
        }
        snprintf(label, sizeof label, "%+.3g", range);
        draw_text(p, bx + bw + 4, top - 3 * text, text, label, ink);
        draw_text(p, bx + bw + 4, (top + bottom) / 2 - 3 * text, text, "0", ink);
        snprintf(label, sizeof label, "%+.3g", -range);
        draw_text(p, bx + bw + 4, bottom - 3 * text, text, label, ink);
        draw_text(p, bx - 2, bottom + 6 * text, text, o->units_kT ? "kT/e" : "kcal/mol/e", ink);
    }
    return 1;
}

/* libpng's writes into an elec_output (its flushes: the commit's) */
static void png_write_output(png_structp png, png_bytep data, png_size_t size) {
    elec_output_write((elec_output *)png_get_io_ptr(png), data, size);
}
static void png_flush_output(png_structp png) { (void)png; }

static int write_png(elec_output *f, const picture *p) {
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    int y;
    if (!png || !info) {
        png_destroy_write_struct(&png, &info);
        return 0;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_write_struct(&png, &info);
        return 0;
    }
    png_set_write_fn(png, f, png_write_output, png_flush_output);
    png_set_IHDR(png, info, (png_uint_32)p->w, (png_uint_32)p->h, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (y = 0; y < p->h; y++) png_write_row(png, p->rgb + 3 * (size_t)y * p->w);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return 1;
}
#endif

/* ----------------------------------------------------------------- maps */

/* The surface's vertices in a k-d tree, for the map's nearest-vertex
   queries.  A run order[lo, hi) of more than VERTEX_LEAF vertices is split
   at its middle element m = (lo + hi) / 2 along the axis its vertices
   spread widest: those before m lie at or below it along that axis, those
   after at or above; box[6m, 6m + 6) bounds the run (low x, y, z, high x,
   y, z; float, rounded outward).  A query opens a run only where its box
   is no farther than the nearest vertex found so far.  A cell list
   searched ring by ring took a time that grew with a point's distance
   from the surface (its rings reached through the whole region for
   points far outside it): a README audit's map of 33 million points 160
   A around one ion ran for more than 9 CPU-minutes; split planes alone,
   without the boxes, left points off to one side opening half the tree. */
#define VERTEX_LEAF 8
typedef struct vertex_tree {
    const double *xyz; /* the surface's vertices */
    size_t *order;     /* their indices, each run a subtree */
    float *box;        /* each split run's bounds, at its middle element */
    size_t count;
} vertex_tree;

static double vertex_coordinate(const vertex_tree *t, size_t at, int axis) {
    return t->xyz[3 * t->order[at] + axis];
}

static void vertex_swap(size_t *order, size_t a, size_t b) {
    const size_t keep = order[a];
    order[a] = order[b];
    order[b] = keep;
}

/* order[lo, hi) rearranged so that order[m] holds the vertex that sorted
   order along `axis` puts there, none after it below it, none before it
   above it (Hoare's selection, the middle of three as pivot). */
static void vertex_select(vertex_tree *t, size_t lo, size_t hi, size_t m, int axis) {
    while (hi - lo > 2) {
        const size_t mid = lo + (hi - lo) / 2;
        size_t i = lo, j = hi - 1;
        double pivot;
        /* the middle of order[lo], order[mid], order[hi - 1] to order[mid] */
        if (vertex_coordinate(t, mid, axis) < vertex_coordinate(t, lo, axis))
            vertex_swap(t->order, mid, lo);
        if (vertex_coordinate(t, hi - 1, axis) < vertex_coordinate(t, lo, axis))
            vertex_swap(t->order, hi - 1, lo);
        if (vertex_coordinate(t, hi - 1, axis) < vertex_coordinate(t, mid, axis))
            vertex_swap(t->order, hi - 1, mid);
        pivot = vertex_coordinate(t, mid, axis);
        for (;;) { /* [lo, i) <= pivot <= (j, hi): equal keys split evenly */
            while (vertex_coordinate(t, i, axis) < pivot) i++;
            while (vertex_coordinate(t, j, axis) > pivot) j--;
            if (i >= j) break;
            vertex_swap(t->order, i++, j--);
        }
        if (m <= j) hi = j + 1;
        else lo = j + 1;
    }
    if (hi - lo == 2 && vertex_coordinate(t, lo + 1, axis) < vertex_coordinate(t, lo, axis))
        vertex_swap(t->order, lo, lo + 1);
}

/* A float at or below (down) or above (up) the double c (past float's
   range: its largest, or an infinity). */
static float vertex_float_bound(double c, int up) {
    float f;
    if (c > FLT_MAX) return up ? HUGE_VALF : FLT_MAX;
    if (c < -FLT_MAX) return up ? -FLT_MAX : -HUGE_VALF;
    f = (float)c;
    if (up ? (double)f < c : (double)f > c) return nextafterf(f, up ? HUGE_VALF : -HUGE_VALF);
    return f;
}

static void vertex_tree_split(vertex_tree *t, size_t lo, size_t hi) {
    double low[3], high[3];
    size_t i, m;
    int axis, widest = 0;
    if (hi - lo <= VERTEX_LEAF) return;
    for (axis = 0; axis < 3; axis++) low[axis] = high[axis] = vertex_coordinate(t, lo, axis);
    for (i = lo + 1; i < hi; i++)
        for (axis = 0; axis < 3; axis++) {
            const double c = vertex_coordinate(t, i, axis);
            if (c < low[axis]) low[axis] = c;
            if (c > high[axis]) high[axis] = c;
        }
    for (axis = 1; axis < 3; axis++)
        if (high[axis] - low[axis] > high[widest] - low[widest]) widest = axis;
    m = lo + (hi - lo) / 2;
    for (axis = 0; axis < 3; axis++) {
        t->box[6 * m + axis] = vertex_float_bound(low[axis], 0);
        t->box[6 * m + 3 + axis] = vertex_float_bound(high[axis], 1);
    }
    vertex_select(t, lo, hi, m, widest);
    vertex_tree_split(t, lo, m);
    vertex_tree_split(t, m + 1, hi);
}

/* The tree over surf's vertices; 0 where there is no memory for it. */
static int vertex_tree_build(const elec_surface *surf, vertex_tree *t) {
    const size_t n = surf->count ? surf->count : 1;
    size_t i;
    t->xyz = surf->xyz;
    t->count = surf->count;
    t->order = (size_t *)malloc(n * sizeof *t->order);
    t->box = n <= SIZE_MAX / (6 * sizeof *t->box) ? (float *)malloc(6 * n * sizeof *t->box)
                                                   : NULL;
    if (!t->order || !t->box) {
        free(t->order);
        free(t->box);
        return 0;
    }
    for (i = 0; i < surf->count; i++) t->order[i] = i;
    vertex_tree_split(t, 0, surf->count);
    return 1;
}

static void vertex_tree_free(vertex_tree *t) {
    free(t->order);
    free(t->box);
}

/* The squared distance from x to run [lo, hi)'s box; 0 for a leaf's run,
   which has none (it is read whole). */
static double vertex_run_distance2(const vertex_tree *t, size_t lo, size_t hi,
                                   const double x[3]) {
    const float *b = t->box + 6 * (lo + (hi - lo) / 2);
    double d2 = 0.0;
    int axis;
    if (hi - lo <= VERTEX_LEAF) return 0.0;
    for (axis = 0; axis < 3; axis++) {
        const double below = (double)b[axis] - x[axis], above = x[axis] - (double)b[3 + axis];
        if (below > 0.0) d2 += below * below;
        else if (above > 0.0) d2 += above * above;
    }
    return d2;
}

/* Vertex v of the surface, if nearer x than *best (a squared distance),
   becomes the nearest; of two at the same distance, the lower index (the
   same answer whatever the tree's order). */
static void vertex_consider(const vertex_tree *t, size_t v, const double x[3], double *best,
                            size_t *nearest) {
    const double *c = t->xyz + 3 * v;
    const double d2 = (x[0] - c[0]) * (x[0] - c[0]) + (x[1] - c[1]) * (x[1] - c[1]) +
                      (x[2] - c[2]) * (x[2] - c[2]);
    if (d2 < *best || (d2 == *best && v < *nearest)) {
        *best = d2;
        *nearest = v;
    }
}

/* The nearest vertex to x within order[lo, hi), where nearer than *best:
   the nearer half's run first, the other's where its box is not farther
   than the best found by then. */
static void vertex_tree_near(const vertex_tree *t, size_t lo, size_t hi, const double x[3],
                             double *best, size_t *nearest) {
    size_t m;
    double to_low, to_high;
    if (hi - lo <= VERTEX_LEAF) {
        for (; lo < hi; lo++) vertex_consider(t, t->order[lo], x, best, nearest);
        return;
    }
    m = lo + (hi - lo) / 2;
    vertex_consider(t, t->order[m], x, best, nearest);
    to_low = vertex_run_distance2(t, lo, m, x);
    to_high = vertex_run_distance2(t, m + 1, hi, x);
    if (to_low <= to_high) {
        if (to_low <= *best) vertex_tree_near(t, lo, m, x, best, nearest);
        if (to_high <= *best) vertex_tree_near(t, m + 1, hi, x, best, nearest);
    } else {
        if (to_high <= *best) vertex_tree_near(t, m + 1, hi, x, best, nearest);
        if (to_low <= *best) vertex_tree_near(t, lo, m, x, best, nearest);
    }
}

/* The squared distance from x to the nearest vertex (its index in
   *nearest); the surface has at least one. */
static double nearest_vertex(const vertex_tree *t, const double x[3], size_t *nearest) {
    double best = HUGE_VAL;
    *nearest = 0;
    vertex_tree_near(t, 0, t->count, x, &best, nearest);
    return best;
}

/* The map's lattice around the atoms, refused past --max-points (or
   double's range) before the surface is made: the refusal once came after
   it (3 s and 290 MB for mache at --density 20).  Returns 0, or 1 with the
   reason on stderr. */
static int map_lattice_of(const options *o, const elec_atoms *atoms, elec_lattice *lattice) {
    elec_error err;
    elec_status s;
    if ((s = elec_lattice_around(atoms, o->map_spacing, o->map_padding, lattice, &err)) !=
            ELEC_OK ||
        (s = elec_lattice_check_points(lattice, o->max_points, &err)) != ELEC_OK) {
        /* a coarser --spacing mends a count of points, not a point past
           double's range */
        const int too_many = s == ELEC_ERR_UNSUPPORTED ||
                             cli_points_around(atoms, o->map_spacing, o->map_padding) >
                                 (double)o->max_points;
        /* some of the library's messages name the lattice already */
        const char *why = strncmp(err.message, "lattice: ", 9) ? err.message : err.message + 9;
        fprintf(stderr, "elecsurf: map lattice: %s%s\n", why,
                too_many ? " (a coarser --spacing, or --max-points: a map holds 28 bytes a "
                           "point)"
                         : "");
        return 1;
    }
    return 0;
}

/* Runs of a map's points between progress reports: each an ALPB call
   (on the GPU a few ms of uploads each). */
#define MAP_RUN_POINTS ((size_t)1 << 19)

/* E1's constant term at the n points x outside the surface (on the side
   the nearest vertex's outward normal points to), added to phi: scale Q
   (c(p) - c(0)), c the constant elec_alpb_kernel_setup gives for the
   projection p, the point's height over that vertex (map_run).  Returns
   how many points were outside. */
static size_t off_the_surface(const vertex_tree *tree, const elec_surface *surf,
                              const elec_structure *mol, const elec_hcp *hcp,
                              const elec_alpb_params *resolved,
                              const elec_alpb_kernel *at_surface, const double *xyz,
                              size_t n, float *phi) {
    long p;
    size_t outside = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 256) reduction(+ : outside)
#endif
    for (p = 0; p < (long)n; p++) {
        const double *x = xyz + 3 * p;
        const double *normal, *at;
        double height;
        size_t v;
        nearest_vertex(tree, x, &v);
        normal = surf->normal + 3 * v;
        at = surf->xyz + 3 * v;
        /* p: x's height over the nearest vertex's tangent plane, as if
           x = v + p n for a vertex right under it (the distance to the
           vertex would err by the vertices' spacing squared over 2p; this
           errs by that over 2 radii of curvature) */
        height = (x[0] - at[0]) * normal[0] + (x[1] - at[1]) * normal[1] +
                 (x[2] - at[2]) * normal[2];
        if (height > 0.0 && surf->atom && surf->atom[v] < mol->count) {
            /* a contact surface's vertex lies on its atom's sphere: the
               height over that sphere, not over the tangent plane, which
               put points around an atom of 1.5 A 2.5e-2 too low
               (relatively) at any distance (an audit) */
            const double *c = mol->xyz + 3 * surf->atom[v];
            const double d[3] = {x[0] - c[0], x[1] - c[1], x[2] - c[2]};
            height = sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]) - mol->radius[surf->atom[v]];
        }
        if (height > 0.0) {
            elec_alpb_params there = *resolved;
            elec_alpb_kernel k;
            there.proj = height;
            elec_alpb_kernel_setup(&there, &k);
            phi[p] += (float)(resolved->scale * hcp->net_charge *
                              (k.constant - at_surface->constant));
            outside++;
        }
    }
    return outside;
}

/* The map: ALPB at the lattice's points as surface points (E1 at p = 0,
   the library's call without normals), then at each point outside the
   surface (on the side its nearest vertex's outward normal points to) E1's
   constant term for r = A + p instead of r = A, p the distance to that
   vertex: scale Q (c(p) - c(0)), c the constant elec_alpb_kernel_setup
   gives for projection p.  Returns 0, or 1 with the reason on stderr. */
static int map_run(const options *o, const elec_structure *mol, const char *records,
                   const elec_lattice *map_lattice, const elec_hcp *hcp,
                   const elec_alpb_params *resolved, const elec_surface *surf,
                   double surface_seconds, int use_gpu, const char *device_name) {
    const elec_lattice lattice = *map_lattice;
    vertex_tree tree;
    cli_progress progress;
    elec_alpb_kernel at_surface;
    elec_error err;
    elec_status s;
    double *xyz = NULL, start, seconds;
    double low = 0.0, high = 0.0, net = 0.0;
    float *phi = NULL;
    size_t points, i, first, outside = 0;
    char *comment = NULL;
    int status = 1;
    (void)use_gpu; /* with CUDA: the GPU's ALPB */
    if (!surf->normal) {
        fprintf(stderr, "elecsurf: the surface has no normals, and a map needs them to tell "
                        "its points outside the surface from those inside\n");
        return 1;
    }
    points = elec_lattice_size(&lattice);
    xyz = (double *)malloc(3 * points * sizeof *xyz);
    phi = (float *)malloc(points * sizeof *phi);
    if (!xyz || !phi) {
        fprintf(stderr, "elecsurf: no memory for a map of %zu points\n", points);
        goto done;
    }
    for (i = 0; i < points; i++)
        elec_lattice_point(&lattice, (int)(i % (size_t)lattice.dims[0]),
                           (int)(i / (size_t)lattice.dims[0] % (size_t)lattice.dims[1]),
                           (int)(i / ((size_t)lattice.dims[0] * (size_t)lattice.dims[1])),
                           xyz + 3 * i);
    if (!vertex_tree_build(surf, &tree)) {
        fprintf(stderr, "elecsurf: no memory for the surface's %zu vertices' tree\n",
                surf->count);
        goto done;
    }
    elec_alpb_kernel_setup(resolved, &at_surface);
    progress = cli_progress_start("elecsurf");
    start = progress.start;
    /* in runs of MAP_RUN_POINTS, each summed and then adjusted off the
       surface, with progress between them */
    for (first = 0; first < points; first += MAP_RUN_POINTS) {
        const size_t n = points - first < MAP_RUN_POINTS ? points - first : MAP_RUN_POINTS;
#ifdef ELEC_WITH_CUDA
        if (use_gpu)
            s = elec_cuda_alpb(hcp, xyz + 3 * first, NULL, n, &o->alpb, phi + first, &err);
        else
#endif
            s = elec_cpu_alpb(hcp, xyz + 3 * first, NULL, n, &o->alpb, phi + first, &err);
        if (s != ELEC_OK) {
            cli_progress_end(&progress);
            fprintf(stderr, "elecsurf: %s\n", err.message);
            vertex_tree_free(&tree);
            goto done;
        }
        outside += off_the_surface(&tree, surf, mol, hcp, resolved, &at_surface,
                                   xyz + 3 * first, n, phi + first);
        if (!o->quiet) cli_show_progress((double)(first + n) / (double)points, &progress);
    }
    cli_progress_end(&progress);
    vertex_tree_free(&tree);
    seconds = cli_seconds_now() - start;
    for (i = 0; i < points; i++) {
        if (i == 0 || phi[i] < low) low = phi[i];
        if (i == 0 || phi[i] > high) high = phi[i];
    }
    for (i = 0; i < mol->count; i++) net += mol->charge[i];
    {
        size_t size = 2048 + strlen(o->input) + strlen(records);
        char unit[64];
        if (o->units_kT) snprintf(unit, sizeof unit, "kT/e at %g K", o->temperature);
        else snprintf(unit, sizeof unit, "kcal/(mol e)");
        comment = (char *)malloc(size);
        if (!comment) {
            fprintf(stderr, "elecsurf: no memory\n");
            goto done;
        }
        snprintf(comment, size,
                 "elecsurf ALPB potential in %s\n"
                 "elec %s elecsurf, input %s: %zu atoms, net charge %+.4f e\n"
                 "method ALPB E1, eps %g/%g, A %.4f A, %s; outside the surface r = A + p, "
                 "p the height over its nearest vertex's %s; inside, p = 0\n"
                 "lattice %d x %d x %d, spacing %.10g A, origin %.10g %.10g %.10g A\n%s",
                 unit, ELEC_VERSION_STRING, o->input, mol->count, net,
                 resolved->eps_in, resolved->eps_out, resolved->electrostatic_size,
                 resolved->exact ? "exact" : "HCP",
                 surf->atom ? "atom's sphere" : "tangent plane", lattice.dims[0],
                 lattice.dims[1],
                 lattice.dims[2], lattice.spacing[0], lattice.origin[0], lattice.origin[1],
                 lattice.origin[2], records);
    }
    if ((s = elec_write_map(o->output, &lattice, phi, comment, &err)) != ELEC_OK) {
        fprintf(stderr, "elecsurf: %s\n", err.message);
        goto done;
    }
    status = 0;
    if (!o->quiet) {
        FILE *report = cli_report_stream(o->output); /* not among the map's data */
        fprintf(report, "elecsurf: %s -> %s\n", o->input, o->output);
        fprintf(report, "  atoms      %zu (net charge %+.4f e)\n", mol->count, net);
        report_size(report, resolved->electrostatic_size,
                    o->alpb.electrostatic_size > 0.0 ? "given" : "A_det");
        fprintf(report, "  surface    %zu vertices, %.3f s (for the points' distances)\n",
                surf->count, surface_seconds);
        fprintf(report,
                "  lattice    %d x %d x %d = %zu points, spacing %g A, %zu outside the surface\n",
                lattice.dims[0], lattice.dims[1], lattice.dims[2], points, lattice.spacing[0],
                outside);
        fprintf(report, "  method     ALPB E1, eps %g/%g, %s\n", resolved->eps_in,
                resolved->eps_out, resolved->exact ? "exact" : "HCP");
        fprintf(report, "  output     %s\n", elec_map_format_name(o->output));
        fprintf(report, "  device     %s\n", device_name);
        fprintf(report, "  time       %.3f s\n", seconds);
        fprintf(report, "  potential  min %.4g, max %.4g %s\n", low, high,
                o->units_kT ? "kT/e" : "kcal/(mol e)");
    }
done:
    free(comment);
    free(xyz);
    free(phi);
    return status;
}

/* The output may replace neither input (the structure, a surface file),
   by name, symlink or hard link: a map as elecmap checks it, the table,
   PLY and PNG by elec_output_check (they once overwrote the input).
   0 when it may be written, else the exit status. */
static int output_check(const options *o) {
    const char *inputs[2] = {o->input, o->surface_file};
    elec_error err;
    int k;
    for (k = 0; k < 2; k++) {
        if (!inputs[k]) continue;
        if (o->kind == OUTPUT_MAP) {
            const int status = cli_map_output_check("elecsurf", o->output, inputs[k]);
            if (status != 0) return status;
        } else if (elec_output_check(o->output, inputs[k], &err) != ELEC_OK) {
            fprintf(stderr, "elecsurf: %s\n", err.message);
            return err.status == ELEC_ERR_INVALID_ARG ? 2 : 1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- main */

/* The ALPB params take the output's units: scale (kT/e at the
   temperature, GEM's 332.0 or kcal/(mol e)), the temperature for salt's
   kappa, and the HCP tolerance in e/A.  (The options fuzzer runs it too.) */
static void alpb_units_of(options *o) {
    o->alpb.scale = o->units_kT ? elec_kT_scale(o->temperature)
                   : o->alpb.gem_compat ? 332.0 /* GEM's constant */ : ELEC_COULOMB;
    o->alpb.temperature = o->temperature;
    if (o->hcp_tolerance > 0.0) /* the output's units to e/A */
        o->alpb.hcp_tolerance = o->hcp_tolerance / fabs(o->alpb.scale);
}

/* Runs what the options say: the PQR read, the surface made or read, the
   potential summed on it and written (o->alpb takes the units and the
   temperature here); the exit status. */
static int elecsurf_run(options *o) {
    elec_structure mol;
    elec_lattice map_lattice;
    elec_surface surf;
    elec_hcp hcp;
    elec_atoms atoms;
    elec_alpb_params resolved;
    elec_error err;
    elec_status s;
    float *phi = NULL;
    double surface_seconds, seconds, start, lo = 0.0, hi = 0.0, sum = 0.0, sum2 = 0.0;
    double mesh_spacing = 0.0, range = 1.0;
    char device_name[128] = "CPU", *text = NULL, *records = NULL;
    int use_gpu = 0, ok = 0;
    size_t i, length = 0;
    elec_output *out;

    if ((ok = output_check(o)) != 0) return ok;
#ifdef ELEC_WITH_CUDA
    if (o->device != DEVICE_CPU && elec_cuda_device_count() > 0) {
        use_gpu = 1;
        elec_cuda_device_name(0, device_name, sizeof device_name, NULL);
    }
#endif
    /* before any input is read: --gpu, or a GPU kernel's name, on a run
       the CPU would compute (--variant once went by without a word) */
    if ((o->device == DEVICE_GPU || (o->given & GIVEN_VARIANT)) && !use_gpu) {
        fprintf(stderr, "elecsurf: %s, and %s\n",
                o->device == DEVICE_GPU ? "--gpu asks for the GPU" : "--variant picks a GPU kernel",
#ifdef ELEC_WITH_CUDA
                "no CUDA device is present");
#else
                "this elecsurf was built without CUDA (leave it out to compute on "
                "the CPU)");
#endif
        return 1;
    }
    cli_remove_temps_on_signal(o->output);
    memset(&surf, 0, sizeof surf);
    memset(&hcp, 0, sizeof hcp);
    /* the input's text: its REMARK and CRYST1 lines go into a map's comment */
    if ((s = elec_read_text(o->input, "a PQR", &text, &length, &err)) != ELEC_OK ||
        (s = elec_parse_pqr(text, length, &mol, &err)) != ELEC_OK) {
        fprintf(stderr, "elecsurf: %s: %s\n", o->input, err.message);
        elec_free(text);
        return 1;
    }
    records = cli_input_records(text, length);
    elec_free(text);
    cli_warn_if_pdb("elecsurf", o->input, &mol);
    atoms = elec_structure_atoms(&mol);
    if (o->kind == OUTPUT_MAP && map_lattice_of(o, &atoms, &map_lattice) != 0) goto done;
    alpb_units_of(o);
    if ((s = elec_hcp_from_structure(&mol, &hcp, &err)) != ELEC_OK ||
        (s = elec_alpb_params_resolve(&o->alpb, &hcp, &resolved, &err)) != ELEC_OK) {
        fprintf(stderr, "elecsurf: %s: %s%s\n", o->input, err.message, option_of(err.message));
        cli_name_atoms("elecsurf", o->input, &mol, &err);
        goto done;
    }
    start = cli_seconds_now();
    if ((s = make_surface(o, &atoms, &surf, &mesh_spacing, &err)) != ELEC_OK) {
        if (o->surface == SURFACE_FILE && err.line > 0) { /* a point list's line */
            /* the MSMS reader's messages name their file (.vert or .face)
               already: once it stood there twice.  Named: the message
               starts with the file's name up to its extension's dot */
            const char *dot = strrchr(o->surface_file, '.');
            const size_t stem = dot ? (size_t)(dot - o->surface_file) + 1
                                    : strlen(o->surface_file);
            const int unnamed = strncmp(err.message, o->surface_file, stem) != 0;
            fprintf(stderr, "elecsurf: %s%s%s\n", unnamed ? o->surface_file : "",
                    unnamed ? ": " : "", err.message);
        } else
            fprintf(stderr, "elecsurf: surface: %s%s\n", err.message,
                    /* the mesh coarsened to fit atoms spread far apart */
                    o->surface == SURFACE_MESH && strstr(err.message, "too coarse")
                        ? " (the mesh's lattice grew coarse to span the atoms: --surface "
                          "contact puts points on each atom's sphere at any span)"
                        : "");
        cli_name_atoms("elecsurf", o->input, &mol, &err);
        goto done;
    }
    surface_seconds = cli_seconds_now() - start;
    if (surf.count == 0) {
        fprintf(stderr, "elecsurf: the surface has no points\n");
        goto done;
    }
    if (o->kind == OUTPUT_PNG && surf.count > 0 && !surf.triangle_count && !surf.normal)
        fprintf(stderr, "elecsurf: the points have no normals: the picture is unshaded\n");
    if (o->kind == OUTPUT_MAP) {
        if (!records) fprintf(stderr, "elecsurf: out of memory\n");
        ok = records && map_run(o, &mol, records, &map_lattice, &hcp, &resolved, &surf,
                                surface_seconds, use_gpu, device_name) == 0;
        goto done;
    }
    phi = (float *)malloc(surf.count * sizeof *phi);
    if (!phi) {
        fprintf(stderr, "elecsurf: no memory for %zu potentials\n", surf.count);
        goto done;
    }
    start = cli_seconds_now();
#ifdef ELEC_WITH_CUDA
    if (use_gpu)
        s = elec_cuda_alpb(&hcp, surf.xyz, surf.normal, surf.count, &o->alpb, phi, &err);
    else
#endif
        s = elec_cpu_alpb(&hcp, surf.xyz, surf.normal, surf.count, &o->alpb, phi, &err);
    seconds = cli_seconds_now() - start;
    if (s != ELEC_OK) {
        fprintf(stderr, "elecsurf: %s\n", err.message);
        goto done;
    }
    for (i = 0; i < surf.count; i++) {
        if (i == 0 || phi[i] < lo) lo = phi[i];
        if (i == 0 || phi[i] > hi) hi = phi[i];
        sum += phi[i];
        sum2 += (double)phi[i] * phi[i];
    }
    if (o->kind != OUTPUT_TXT) range = colour_range(o, phi, surf.count);
    if (elec_output_open(o->output, &out, &err) != ELEC_OK) {
        fprintf(stderr, "elecsurf: %s\n", err.message);
        goto done;
    }
    if (o->kind == OUTPUT_TXT) ok = write_txt(out, o, &surf, phi);
    else if (o->kind == OUTPUT_PLY) ok = write_ply(out, o, &surf, phi, range);
#ifdef ELECSURF_WITH_PNG
    else {
        picture pic;
        memset(&pic, 0, sizeof pic);
        ok = render(&pic, o, &surf, phi, range,
                    1.0 / sqrt(o->density > 0.0 ? o->density : 3.0)) &&
             write_png(out, &pic);
        free(pic.rgb);
        free(pic.depth);
    }
#endif
    if (!ok) {
        elec_output_abort(out);
        fprintf(stderr, "elecsurf: error writing '%s'\n", o->output);
        goto done;
    }
    if (elec_output_commit(out, &err) != ELEC_OK) {
        fprintf(stderr, "elecsurf: %s\n", err.message);
        ok = 0;
        goto done;
    }
    if (!o->quiet) {
        const char *unit = o->units_kT ? "kT/e" : "kcal/(mol e)";
        FILE *report = cli_report_stream(o->output); /* not among the output's data */
        fprintf(report, "elecsurf: %s -> %s\n", o->input, o->output);
        fprintf(report,
                "  atoms      %zu (net charge %+.4f e), %zu residues, %zu chains, %zu complexes\n",
                hcp.count[0], hcp.net_charge, hcp.count[1], hcp.count[2], hcp.count[3]);
        report_size(report, resolved.electrostatic_size,
                    o->alpb.electrostatic_size > 0.0 ? "given" : "A_det");
        if (o->surface == SURFACE_MESH)
            fprintf(report,
                    "  surface    mesh, %zu vertices, %zu triangles (spacing %.3g A), %.3f s\n",
                    surf.count, surf.triangle_count, mesh_spacing, surface_seconds);
        else if (o->surface == SURFACE_CONTACT)
            fprintf(report,
                    "  surface    contact, %zu points (density %g per A^2, probe %g A), %.3f s\n",
                    surf.count, o->density > 0.0 ? o->density : 3.0,
                    o->probe > 0.0 ? o->probe : 1.5, surface_seconds);
        else
            fprintf(report, "  surface    %s, %zu points%s%s\n", o->surface_file, surf.count,
                    surf.normal ? " with normals" : "",
                    surf.triangle_count ? " and triangles" : "");
        fprintf(report, "  method     ALPB%s, eps %g/%g, p %g A, ",
                resolved.gem_compat ? " (GEM's formulas)" : "", resolved.eps_in, resolved.eps_out,
                resolved.proj);
        if (resolved.kappa > 0.0)
            fprintf(report, "salt %g M (kappa %.4f /A), ", resolved.salt, resolved.kappa);
        else
            fprintf(report, "no salt, ");
        if (resolved.exact)
            fprintf(report, "exact\n");
        else
            fprintf(report, "HCP %d charge%s, thresholds %g/%g/%g A, tolerance %.3g %s\n",
                    resolved.hcp_charges, resolved.hcp_charges == 1 ? "" : "s", resolved.hcp_h[0],
                    resolved.hcp_h[1], resolved.hcp_h[2],
                    resolved.hcp_tolerance * fabs(resolved.scale),
                    o->units_kT ? "kT/e" : "kcal/(mol e)");
#ifdef ELEC_WITH_CUDA
        if (use_gpu) {
            elec_alpb_variant v = o->alpb.variant;
            const char *kernel = v != ELEC_ALPB_FASTEST ? elec_alpb_variant_name(v)
                                 : resolved.exact && resolved.kappa == 0.0 &&
                                         (!resolved.gem_compat || resolved.proj >= 0.0)
                                     ? "DCS points"
                                     : elec_alpb_variant_name(ELEC_ALPB_FASTEST_WALK);
            fprintf(report, "  device     %s, kernel %s\n", device_name, kernel);
        } else
#endif
            fprintf(report, "  device     %s\n", device_name);
        fprintf(report, "  time       %.4f s, %.3e atom evaluations/s (the exact sum's count)\n",
                seconds,
                (double)surf.count * (double)hcp.count[0] / (seconds > 0 ? seconds : 1e-9));
        fprintf(report,
                "  potential  min %.4g, max %.4g, RMS %.4g %s; sum over the %zu points %.6g\n", lo,
                hi, sqrt(sum2 / (double)surf.count), unit, surf.count, sum);
    }
done:
    free(phi);
    free(records);
    elec_surface_free(&surf);
    elec_hcp_free(&hcp);
    elec_structure_free(&mol);
    return ok ? 0 : 1;
}

#ifndef ELECSURF_NO_MAIN
int main(int argc, char **argv) {
    options o;
    cli_check_stdout_at_exit("elecsurf");
    switch (elecsurf_parse(argc, argv, &o, stderr)) {
    case PARSE_HELP: usage(stdout); return 0;
    case PARSE_VERSION:
#ifdef ELECSURF_WITH_PNG
        cli_version(stdout, "elecsurf", "libpng", 1);
#else
        cli_version(stdout, "elecsurf", "libpng", 0);
#endif
        return 0;
    case PARSE_ERROR: return 2;
    default: return elecsurf_run(&o);
    }
}
#endif
