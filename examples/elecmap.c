/* elecmap - the electrostatic potential of a PQR structure as a map:
   OpenDX (.dx, .dx.gz) or MRC2014 (.mrc, .map, .ccp4), by the output's
   extension, with a comment that says how it was made (elec's version,
   the input and its REMARK and CRYST1 lines, the method, its parameters).

   elecmap [options] input.pqr output.dx|output.mrc
   elecmap --demo output.dx          a built-in input, no file needed

   Built as C for the CPU alone, or by nvcc (-x cu -DELEC_WITH_CUDA) with the
   GPU path, which is then the default when a GPU is present.  Run with
   --help for the options and their defaults.

   Before any work it checks that the output can be written (and is not
   the input), that the lattice is within --max-points, and what the map
   will cost: a direct sum past --max-work atom-point pairs is refused, and
   without --method it chooses between the direct sum and MSM from their
   estimated times, refusing inputs where neither is quick (atoms all at
   one point, a box far larger than the atoms need).

   elecmap_parse reads the command line and does nothing else (no file is
   touched), so that tests/fuzz/fuzz_elecmap_options.c can call it; define
   ELECMAP_NO_MAIN to include this file without its main. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#define ELEC_ALL_IMPLEMENTATION
/* The name messages start with: elecmap_mpi, which includes this file,
   names itself. */
#ifndef TOOL
#define TOOL "elecmap"
#endif

#include "elec.h"
#include "elec_cpu.h"
#ifdef ELEC_WITH_CUDA
#include "elec_cuda.cuh"
#endif
#include "examples/cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef enum { METHOD_DCS, METHOD_MDH, METHOD_MSM, METHOD_CUTOFF, METHOD_CHARGES } map_method;
typedef enum { UNITS_KT, UNITS_KCAL, UNITS_VOLT } map_units;
typedef enum { DEVICE_AUTO, DEVICE_CPU, DEVICE_GPU } map_device;

typedef struct options {
    const char *input, *output;
    int demo;
    map_method method;
    map_device device;
    double spacing, padding;
    int explicit_dims;
    int dims[3];
    int explicit_origin;
    double origin[3];
    map_units units;
    double temperature;
    double ionic_strength, kappa;
    double msm_cutoff, msm_spacing;
    double tolerance; /* MSM's relative RMS error target; 0 = its defaults */
    int msm_order, shifted; /* msm_order: 4, 6, 8 or 10 (0 = 4) */
    int method_given; /* --method on the command line */
    unsigned given;   /* OPTION_* bits: the method-bound options given */
    double msm_above; /* seconds of direct sum past which MSM is chosen;
                         0 = 30 on the CPU, 1 on the GPU */
    elec_dcs_variant variant;
    elec_chargemap_basis charge_basis;     /* --method charges */
    int charge_order;                      /* 0 = the basis's default */
    elec_chargemap_variant charge_variant; /* GPU rung; 0 = fastest */
    int gpus;         /* --gpus: a count, ELEC_ALL_GPUS, or 0 when not given */
    int quiet;
    size_t max_points; /* lattice points; ELEC_DEFAULT_MAX_LATTICE_POINTS */
    double max_work;   /* atom-point pairs of a direct sum; 0 = per device */
} options;

/* Options that only some methods read (elecmap_parse refuses them with
   another: a map without the screening --kappa asked for was a silent
   wrong answer), and the methods each is for: bits of map_method, and
   AUTO_METHOD for the choice made without --method (DCS or MSM). */
enum {
    OPTION_KAPPA = 1u << 0, OPTION_IONIC = 1u << 1, OPTION_SHIFTED = 1u << 2,
    OPTION_CUTOFF = 1u << 3, OPTION_MSM_SPACING = 1u << 4, OPTION_TOLERANCE = 1u << 5,
    OPTION_MSM_ORDER = 1u << 6, OPTION_BASIS = 1u << 7, OPTION_ORDER = 1u << 8,
    OPTION_MSM_ABOVE = 1u << 9, OPTION_UNITS = 1u << 10, OPTION_DCS_VARIANT = 1u << 11,
    OPTION_CHARGE_VARIANT = 1u << 12, OPTION_MAX_WORK = 1u << 13, OPTION_GPUS = 1u << 14
};
#define METHOD_BIT(m) (1u << (m))
#define AUTO_METHOD (1u << 5)
static const struct {
    unsigned bit;
    const char *name, *for_whom;
    unsigned methods;
} method_options[] = {
    {OPTION_KAPPA, "--kappa", "for mdh", METHOD_BIT(METHOD_MDH)},
    {OPTION_IONIC, "--ionic-strength", "for mdh", METHOD_BIT(METHOD_MDH)},
    {OPTION_SHIFTED, "--shifted", "for the cutoff map", METHOD_BIT(METHOD_CUTOFF)},
    {OPTION_CUTOFF, "--cutoff", "for msm and the cutoff map",
     METHOD_BIT(METHOD_MSM) | METHOD_BIT(METHOD_CUTOFF) | AUTO_METHOD},
    {OPTION_MSM_SPACING, "--msm-spacing", "for msm", METHOD_BIT(METHOD_MSM) | AUTO_METHOD},
    {OPTION_TOLERANCE, "--tolerance", "for msm", METHOD_BIT(METHOD_MSM) | AUTO_METHOD},
    {OPTION_MSM_ORDER, "--msm-order", "for msm", METHOD_BIT(METHOD_MSM) | AUTO_METHOD},
    {OPTION_BASIS, "--basis", "for the charges map", METHOD_BIT(METHOD_CHARGES)},
    {OPTION_ORDER, "--order", "for the charges map", METHOD_BIT(METHOD_CHARGES)},
    {OPTION_MSM_ABOVE, "--msm-above", "for the choice made without --method", AUTO_METHOD},
    {OPTION_UNITS, "--units", "for potentials (the charges map is in e)",
     METHOD_BIT(METHOD_DCS) | METHOD_BIT(METHOD_MDH) | METHOD_BIT(METHOD_MSM) |
         METHOD_BIT(METHOD_CUTOFF) | AUTO_METHOD},
    {OPTION_DCS_VARIANT, "--variant (a DCS kernel)", "for dcs",
     METHOD_BIT(METHOD_DCS) | AUTO_METHOD},
    {OPTION_CHARGE_VARIANT, "--variant (a charge-mapping rung)", "for the charges map",
     METHOD_BIT(METHOD_CHARGES)},
    {OPTION_MAX_WORK, "--max-work", "for the direct sums (dcs, mdh)",
     METHOD_BIT(METHOD_DCS) | METHOD_BIT(METHOD_MDH) | AUTO_METHOD},
    /* the charge map runs on one GPU (README: "Several GPUs") */
    {OPTION_GPUS, "--gpus", "for dcs, mdh, cutoff and msm (the charge map runs on one GPU)",
     METHOD_BIT(METHOD_DCS) | METHOD_BIT(METHOD_MDH) | METHOD_BIT(METHOD_CUTOFF) |
         METHOD_BIT(METHOD_MSM) | AUTO_METHOD},
};

/* The first option given that the method will not read: refused, naming
   it (0), or 1 where every one counts. */
static int method_options_fit(const options *o, FILE *messages) {
    static const char *const names[] = {"dcs", "mdh", "msm", "cutoff", "charges"};
    const unsigned method = o->method_given ? METHOD_BIT(o->method) : AUTO_METHOD;
    size_t k;
    for (k = 0; k < sizeof method_options / sizeof method_options[0]; k++)
        if ((o->given & method_options[k].bit) && !(method_options[k].methods & method)) {
            if (o->method_given)
                fprintf(messages, TOOL ": %s is %s: --method %s would ignore it (leave it "
                                  "out, or choose the method it is for)\n",
                        method_options[k].name, method_options[k].for_whom,
                        names[o->method]);
            else
                fprintf(messages, TOOL ": %s is %s: without --method the map is DCS or "
                                  "MSM, which would ignore it (give the --method it is for)\n",
                        method_options[k].name, method_options[k].for_whom);
            return 0;
        }
    return 1;
}

/* What elecmap_parse found: run, print the help or the version, or a
   usage error (its message already written). */
enum { PARSE_RUN, PARSE_HELP, PARSE_ERROR, PARSE_VERSION };

/* e / (4 pi eps0 x 1 A) in volts: a sum of q/r in e/A times this is the
   potential in V.  From the SI's exact e = 1.602176634e-19 C and CODATA
   2018's 1/(4 pi eps0) = 8.9875517923e9 N m^2/C^2: 1.602176634e-19 x
   8.9875517923e9 / 1e-10 m = 14.3996455 V (ELEC_COULOMB, 332.0636
   kcal/(mol e) per e/A, over 23.0605478 kcal/mol per eV gives the same to
   its 7 digits). */
#define VOLT_SCALE 14.3996454785

/* --max-work's defaults: about an hour of DCS at the rates below (the
   CPU's read 2e12 until the DCS rate was measured again, 2026-12-06:
   eight minutes at 4e9 pairs a second). */
#define MAX_WORK_CPU 1.4e13
#define MAX_WORK_GPU 1e16

static void usage(FILE *out) {
    fprintf(out,
"usage: elecmap [options] input.pqr output.dx|output.mrc\n"
"       elecmap [options] --demo output.dx|output.mrc\n"
"\n"
"The electrostatic potential of the atoms of a PQR file on a lattice, as a\n"
"map that APBS, VMD, PyMOL, Chimera, ChimeraX and Coot read; the output's\n"
"extension picks the format: .dx (OpenDX), .dx.gz (OpenDX, gzip-compressed\n"
"as APBS writes it; needs zlib), .mrc, .map or .ccp4 (MRC2014, 32-bit\n"
"floats; .mrc.gz too); any other name is OpenDX, but a structure's (.pqr,\n"
".pdb, .ent, .cif), refused.  The map's comment (DX) or labels (MRC) say\n"
"how it was made: elec's version, the input and its REMARK and CRYST1\n"
"lines, the method and its parameters.\n"
"\n"
"  --method dcs|mdh|msm|cutoff|charges\n"
"                        direct Coulomb sum (default), multiple\n"
"                        Debye-Hueckel (in water as APBS's, with radii),\n"
"                        multilevel summation (cost atoms + points), or\n"
"                        the short-range part alone within a cutoff; or the\n"
"                        charge on each lattice point (e), mapped by a basis;\n"
"                        all on\n"
"                        the GPU where there is one.  Without --method, MSM\n"
"                        is chosen when the direct sum would take over 30 s\n"
"                        (CPU) or 1 s (GPU)\n"
"  --msm-above S         choose MSM past S seconds of estimated direct sum\n"
"                        instead (without --method)\n"
"  --shifted             cutoff map: shifted Coulomb (1-r^2/a^2)^2/r\n"
"                        instead of MSM's short range\n"
"  --cutoff A            MSM's and the cutoff map's cutoff in A (default 12;\n"
"                        --msm-cutoff is the same)\n"
"  --msm-spacing H       MSM finest lattice spacing in A (default 2)\n"
"  --tolerance T         MSM's relative RMS error against the direct sum (with\n"
"                        --method msm, or when MSM is chosen): picks the\n"
"                        spacing, cutoff and order not given, the cheapest\n"
"                        that meets T by the measured error table (2e-7 to\n"
"                        below 1); refused where --cutoff and --msm-spacing,\n"
"                        both given, are estimated to err more than T/3 (what\n"
"                        the choice aims at)\n"
"  --msm-order P         MSM interpolation order: 4 (C1 cubic, default), 6\n"
"                        (quintic), 8 (septic) or 10 (nonic); the splitting\n"
"                        is made smoother with it (C2, C3, C4, C5)\n"
"  --max-work N          refuse a direct sum (DCS, MDH) of more than N\n"
"                        atom-point pairs (default 1.4e13 on the CPU, 1e16 on\n"
"                        the GPU: about an hour of DCS)\n"
"  --max-points N        refuse lattices of more than N points (default\n"
"                        268435456 = 2^28, a 1 GiB map)\n"
    );
    fprintf(out, /* in two parts: C99 promises string literals of 4095 bytes */
"  --spacing H           lattice spacing in A (default 0.5)\n"
"  --padding P           margin around the molecule in A (default 10; for\n"
"                        charges at least order x spacing, the stencil)\n"
"  --dims NX NY NZ       explicit point counts (instead of padding)\n"
"  --origin X Y Z        explicit origin (with --dims; default: centred)\n"
"  --gpu | --cpu         where to compute (default: the GPU when present)\n"
"  --gpus N|all          GPUs to spread the map over (default 1): DCS by\n"
"                        planes in turn, cutoff and MSM by slabs of planes,\n"
"                        MDH by runs of points\n"
"  --variant NAME        DCS GPU kernel: simple, const, unroll4,\n"
"                        unroll8-coalesced, volume, hybrid-rsqrt (default);\n"
"                        charges: a rung of the charge-mapping ladder\n"
"                        (pc-baseline ... tile-fused-fixed; default: by size)\n"
"  --basis skeel|bspline charges: Skeel's C1 cubic (default; orders 6, 8, 10:\n"
"                        MSM's C1 family) or a B-spline (SPME's: the charge\n"
"                        sits order/2 points below each atom)\n"
"  --order N             charges: the basis's order (stencil width)\n"
"  --units kT|kcal|V     kT/e (default, as APBS writes), kcal/(mol e) or\n"
"                        volts (V = 14.3996 x e/A)\n"
"  --temperature T       K, for kT/e and the Debye length (default 298.15)\n"
"  --ionic-strength I    mol/L, MDH screening (default 0.15)\n"
"  --kappa K             inverse Debye length in 1/A, 0 for none (instead of\n"
"                        the above)\n"
"  --demo                use the built-in input (an ion pair in water)\n"
"  --quiet               no progress and no summary\n"
"  --version             elec's version and what this build has\n"
"  --help                this text\n");
}

/* --msm-order's interpolation. */
static elec_msm_interpolation msm_interpolation(const options *o) {
    switch (o->msm_order) {
    case 6: return ELEC_MSM_QUINTIC;
    case 8: return ELEC_MSM_SEPTIC;
    case 10: return ELEC_MSM_NONIC;
    default: return ELEC_MSM_CUBIC;
    }
}

/* The MSM params the options give (the caller sets the map's scale,
   progress and limits).  --msm-order 4 given is the cubic fixed: the
   interpolation's zero reads as "choose" under a tolerance, so it goes
   to the library as its paired splitting, C2 (elec_msm_params), which
   fixes it; it once ran septic under --tolerance 1e-5 (an audit). */
static elec_msm_params msm_params_of(const options *o) {
    elec_msm_params p;
    memset(&p, 0, sizeof p);
    p.cutoff = o->msm_cutoff;
    p.spacing = o->msm_spacing;
    p.interpolation = msm_interpolation(o);
    if (o->msm_order == 4) p.splitting = 2;
    p.tolerance = o->tolerance;
    return p;
}

/* The interpolation's name with its paired splitting. */
static const char *msm_order_name(elec_msm_interpolation interpolation) {
    static const char *const names[] = {"C1 cubic, C2 splitting", "C1 quintic, C3 splitting",
                                        "C1 septic, C4 splitting", "C1 nonic, C5 splitting"};
    return names[interpolation];
}

/* Parses argv into o, writing any complaint to messages; touches no file
   and never exits. */
static int elecmap_parse(int argc, char **argv, options *o, FILE *messages) {
    int i, positional = 0, temperature_given = 0, padding_given = 0;
    const char *files[2] = {NULL, NULL};
    memset(o, 0, sizeof *o);
    o->spacing = 0.5;
    o->padding = 10.0;
    o->units = UNITS_KT;
    o->temperature = ELEC_ROOM_TEMPERATURE;
    o->ionic_strength = 0.15;
    o->max_points = ELEC_DEFAULT_MAX_LATTICE_POINTS;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = argc - i - 1;
#define NEED(n)                                                               \
    if (more < (n)) {                                                         \
        fprintf(messages, TOOL ": %s needs %d value(s)\n", a, (n));         \
        return PARSE_ERROR;                                                   \
    }
#define DOUBLE_ARG(target, what)                                              \
    do {                                                                      \
        NEED(1);                                                              \
        if (!cli_number(argv[++i], &(target))) {                              \
            fprintf(messages, TOOL ": %s: '%s' is not a %s\n", a, argv[i],  \
                    what);                                                    \
            return PARSE_ERROR;                                               \
        }                                                                     \
    } while (0)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            return PARSE_HELP;
        } else if (!strcmp(a, "--version")) {
            return PARSE_VERSION;
        } else if (!strcmp(a, "--method")) {
            NEED(1);
            o->method_given = 1;
            a = argv[++i];
            if (!strcmp(a, "dcs")) o->method = METHOD_DCS;
            else if (!strcmp(a, "mdh")) o->method = METHOD_MDH;
            else if (!strcmp(a, "msm")) o->method = METHOD_MSM;
            else if (!strcmp(a, "cutoff")) o->method = METHOD_CUTOFF;
            else if (!strcmp(a, "charges")) o->method = METHOD_CHARGES;
            else {
                fprintf(messages, TOOL ": unknown method '%s' (dcs, mdh, msm, cutoff or "
                                  "charges)\n", a);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--msm-above")) {
            DOUBLE_ARG(o->msm_above, "time in seconds");
            o->given |= OPTION_MSM_ABOVE;
            if (!(o->msm_above > 0.0)) {
                fprintf(messages, TOOL ": --msm-above %g: give a time above 0 s\n",
                        o->msm_above);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--max-work")) {
            DOUBLE_ARG(o->max_work, "number of atom-point pairs");
            o->given |= OPTION_MAX_WORK;
            if (!(o->max_work >= 1.0)) {
                fprintf(messages, TOOL ": --max-work %g: give at least 1\n", o->max_work);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--max-points")) {
            NEED(1);
            /* up to 2^53, where a double still counts every point */
            if (!cli_size(argv[++i], 1.0, 9007199254740992.0, &o->max_points)) {
                fprintf(messages, TOOL ": --max-points: '%s' is not a count of 1 to 2^53\n",
                        argv[i]);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--cutoff") || !strcmp(a, "--msm-cutoff")) {
            DOUBLE_ARG(o->msm_cutoff, "cutoff in A");
            o->given |= OPTION_CUTOFF;
            /* the library reads 0 as its default: a 0 typed here is not */
            if (!(o->msm_cutoff > 0.0)) {
                fprintf(messages, TOOL ": %s %g: give a cutoff above 0 A (leave it out for "
                                  "the default, 12 A)\n", a, o->msm_cutoff);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--msm-spacing")) {
            DOUBLE_ARG(o->msm_spacing, "spacing in A");
            o->given |= OPTION_MSM_SPACING;
            if (!(o->msm_spacing > 0.0)) {
                fprintf(messages, TOOL ": --msm-spacing %g: give a spacing above 0 A (leave "
                                  "it out for the default, 2 A)\n", o->msm_spacing);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--tolerance")) {
            DOUBLE_ARG(o->tolerance, "relative error");
            o->given |= OPTION_TOLERANCE;
            if (!(o->tolerance > 0.0 && o->tolerance < 1.0)) {
                fprintf(messages, TOOL ": --tolerance %g: give a relative error in (0, 1)\n",
                        o->tolerance);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--msm-order")) {
            double order;
            DOUBLE_ARG(order, "order 4, 6, 8 or 10");
            if (order != 4 && order != 6 && order != 8 && order != 10) {
                fprintf(messages, TOOL ": --msm-order %g: use 4, 6, 8 or 10\n", order);
                return PARSE_ERROR;
            }
            o->msm_order = (int)order;
            o->given |= OPTION_MSM_ORDER;
        } else if (!strcmp(a, "--shifted")) {
            o->shifted = 1;
            o->given |= OPTION_SHIFTED;
        } else if (!strcmp(a, "--spacing")) {
            DOUBLE_ARG(o->spacing, "spacing in A");
        } else if (!strcmp(a, "--padding")) {
            DOUBLE_ARG(o->padding, "padding in A");
            padding_given = 1;
        } else if (!strcmp(a, "--dims")) {
            int axis;
            NEED(3);
            for (axis = 0; axis < 3; axis++)
                if (!cli_count(argv[++i], 1, 100000, &o->dims[axis])) {
                    fprintf(messages, TOOL ": --dims: '%s' is not a count of 1 to 100000\n",
                            argv[i]);
                    return PARSE_ERROR;
                }
            o->explicit_dims = 1;
        } else if (!strcmp(a, "--origin")) {
            int axis;
            NEED(3);
            for (axis = 0; axis < 3; axis++)
                if (!cli_number(argv[++i], &o->origin[axis])) {
                    fprintf(messages, TOOL ": --origin: '%s' is not a number\n", argv[i]);
                    return PARSE_ERROR;
                }
            o->explicit_origin = 1;
        } else if (!strcmp(a, "--gpu") || !strcmp(a, "--cpu")) {
            const map_device device = !strcmp(a, "--gpu") ? DEVICE_GPU : DEVICE_CPU;
            if (o->device != DEVICE_AUTO && o->device != device) {
                fprintf(messages, TOOL ": --gpu and --cpu exclude each other\n");
                return PARSE_ERROR;
            }
            o->device = device;
        } else if (!strcmp(a, "--gpus")) {
            NEED(1);
            o->given |= OPTION_GPUS;
            if (!strcmp(argv[++i], "all")) o->gpus = ELEC_ALL_GPUS;
            else if (!cli_count(argv[i], 1, 64, &o->gpus)) {
                fprintf(messages, TOOL ": --gpus: '%s' is not a count of 1 to 64 or 'all'\n",
                        argv[i]);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--variant")) {
            int v, found = 0;
            NEED(1);
            a = argv[++i];
            for (v = 0; v < ELEC_DCS_VARIANT_COUNT; v++)
                if (!strcmp(a, elec_dcs_variant_name((elec_dcs_variant)v))) {
                    o->variant = (elec_dcs_variant)v;
                    found |= 1;
                }
            for (v = 0; v < ELEC_CHARGEMAP_VARIANT_COUNT; v++)
                if (!strcmp(a, elec_chargemap_variant_name((elec_chargemap_variant)v))) {
                    o->charge_variant = (elec_chargemap_variant)v;
                    found |= 2;
                }
            /* a name of one ladder binds the option to its method; one of
               both ("fastest") fits either */
            if (found == 1) o->given |= OPTION_DCS_VARIANT;
            if (found == 2) o->given |= OPTION_CHARGE_VARIANT;
            if (!found) {
                fprintf(messages, TOOL ": unknown variant '%s': a DCS kernel (", a);
                for (v = 0; v < ELEC_DCS_VARIANT_COUNT; v++)
                    fprintf(messages, "%s%s", v ? ", " : "",
                            elec_dcs_variant_name((elec_dcs_variant)v));
                fprintf(messages, ") or a charge-mapping rung (");
                for (v = 0; v < ELEC_CHARGEMAP_VARIANT_COUNT; v++)
                    fprintf(messages, "%s%s", v ? ", " : "",
                            elec_chargemap_variant_name((elec_chargemap_variant)v));
                fprintf(messages, ")\n");
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--basis")) {
            NEED(1);
            o->given |= OPTION_BASIS;
            a = argv[++i];
            if (!strcmp(a, "skeel")) o->charge_basis = ELEC_CHARGEMAP_SKEEL;
            else if (!strcmp(a, "bspline")) o->charge_basis = ELEC_CHARGEMAP_BSPLINE;
            else {
                fprintf(messages, TOOL ": unknown basis '%s' (skeel or bspline)\n", a);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--order")) {
            NEED(1);
            o->given |= OPTION_ORDER;
            if (!cli_count(argv[++i], 1, 64, &o->charge_order)) {
                fprintf(messages, TOOL ": --order: '%s' is not a count of 1 to 64\n", argv[i]);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--units")) {
            NEED(1);
            o->given |= OPTION_UNITS;
            a = argv[++i];
            if (!strcmp(a, "kT")) o->units = UNITS_KT;
            else if (!strcmp(a, "kcal")) o->units = UNITS_KCAL;
            else if (!strcmp(a, "V")) o->units = UNITS_VOLT;
            else {
                fprintf(messages, TOOL ": unknown units '%s' (kT, kcal or V)\n", a);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--temperature")) {
            DOUBLE_ARG(o->temperature, "temperature in K");
            temperature_given = 1;
        } else if (!strcmp(a, "--ionic-strength")) {
            DOUBLE_ARG(o->ionic_strength, "concentration in mol/L");
            o->given |= OPTION_IONIC;
        } else if (!strcmp(a, "--kappa")) {
            DOUBLE_ARG(o->kappa, "inverse length in 1/A");
            o->given |= OPTION_KAPPA;
        } else if (!strcmp(a, "--demo")) {
            o->demo = 1;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(messages, TOOL ": unknown option '%s' (see --help)\n", a);
            return PARSE_ERROR;
        } else {
            if (positional == 2) {
                fprintf(messages, TOOL ": too many file names ('%s')\n", a);
                return PARSE_ERROR;
            }
            files[positional++] = a;
        }
#undef NEED
#undef DOUBLE_ARG
    }
    if (o->demo ? positional != 1 : positional != 2) {
        fprintf(messages, o->demo ? TOOL ": --demo takes one file name, the output map\n"
                                  : TOOL ": need an input PQR file and an output map\n");
        usage(messages);
        return PARSE_ERROR;
    }
    o->input = o->demo ? NULL : cli_input_name(files[0]);
    o->output = cli_output_name(o->demo ? files[0] : files[1]);
    {
        /* each value out of range by its option's name (one sentence for
           them all said which were wrong only by listing them; --cutoff
           and --msm-spacing are refused as they are read) */
        const struct {
            const char *name;
            double value;
            int positive; /* 1: > 0; 0: >= 0 */
        } ranged[] = {{"--spacing", o->spacing, 1},
                      {"--temperature", o->temperature, 1},
                      {"--padding", o->padding, 0},
                      {"--ionic-strength", o->ionic_strength, 0},
                      {"--kappa", o->kappa, 0}};
        size_t k;
        for (k = 0; k < sizeof ranged / sizeof ranged[0]; k++)
            if (ranged[k].positive ? !(ranged[k].value > 0.0) : !(ranged[k].value >= 0.0)) {
                fprintf(messages, TOOL ": %s %g: give a %s value\n", ranged[k].name,
                        ranged[k].value, ranged[k].positive ? "positive" : "zero or positive");
                return PARSE_ERROR;
            }
    }
    /* options the map would not read (each once went by without a word) */
    if (padding_given && o->explicit_dims) {
        fprintf(messages, TOOL ": --padding sizes the lattice around the atoms, and --dims "
                          "fixes it: give one of them\n");
        return PARSE_ERROR;
    }
    if (temperature_given) {
        /* read by kT units and by MDH's Debye length (from the ionic
           strength, given or its default, where --kappa does not set it) */
        const int charges = o->method_given && o->method == METHOD_CHARGES;
        const int debye = o->method_given && o->method == METHOD_MDH &&
                          !(o->given & OPTION_KAPPA);
        if (!(o->units == UNITS_KT && !charges) && !debye) {
            fprintf(messages, TOOL ": --temperature is for kT units and for MDH's "
                              "Debye length: this map would not read it\n");
            return PARSE_ERROR;
        }
    }
    if (o->device == DEVICE_CPU && (o->given & (OPTION_DCS_VARIANT | OPTION_CHARGE_VARIANT))) {
        fprintf(messages, TOOL ": --variant picks a GPU kernel, and --cpu computes on "
                          "the CPU: give one of them\n");
        return PARSE_ERROR;
    }
    if (o->explicit_origin && !o->explicit_dims) {
        fprintf(messages, TOOL ": --origin needs --dims\n");
        return PARSE_ERROR;
    }
    if (o->device == DEVICE_CPU && o->gpus) {
        fprintf(messages, TOOL ": --gpus and --cpu exclude each other\n");
        return PARSE_ERROR;
    }
    if (!method_options_fit(o, messages)) return PARSE_ERROR;
    /* below the measured table's reach: a usage error as the range is, not
       a refusal after the input was read (after the method's fit, which
       names the option's method where it is another's) */
    if ((o->given & OPTION_TOLERANCE) && o->tolerance < ELEC_MSM_TOLERANCE_FLOOR) {
        fprintf(messages, TOOL ": --tolerance %g: MSM reaches %g at the tightest (its "
                          "measured table)\n", o->tolerance, ELEC_MSM_TOLERANCE_FLOOR);
        return PARSE_ERROR;
    }
    if ((o->given & OPTION_TOLERANCE) && o->msm_cutoff > 0.0 && o->msm_spacing > 0.0) {
        /* both fixed, the library leaves the tolerance to the caller (its
           estimate says what they give): refused here where they miss the
           library's own aim, a third of it (real systems err up to 2.4
           times the table), as the run's "relative error <= T" would say
           otherwise (an audit: --cutoff 8 --msm-spacing 2.5 at 1e-5 erred
           1.9e-2; a review: an estimate of 8.1e-4 at 1e-3 erred 1.1e-3) */
        elec_msm_params given = msm_params_of(o), resolved;
        elec_error err;
        if (elec_msm_params_resolve(&given, 1.0, &resolved, &err) != ELEC_OK) {
            fprintf(messages, TOOL ": %s\n", err.message);
            return PARSE_ERROR;
        }
        if (resolved.estimate.force > o->tolerance / 3.0) {
            fprintf(messages, TOOL ": --cutoff %g and --msm-spacing %g give MSM an expected "
                              "relative error of %.1e (%s%s), over a third of --tolerance %g "
                              "(what the choice aims at: systems err up to 2.4 times its "
                              "table): leave one of them for the tolerance to choose\n",
                    o->msm_cutoff, o->msm_spacing, resolved.estimate.force,
                    msm_order_name(resolved.interpolation),
                    o->given & OPTION_MSM_ORDER ? "" : "; no --msm-order meets it there",
                    o->tolerance);
            return PARSE_ERROR;
        }
    }
    if (o->given & OPTION_ORDER) {
        /* the orders each basis has, by the library's own check, on a
           lattice wide enough for any of them: a usage error, not a
           refusal after the input was read */
        const elec_lattice probe = {{16, 16, 16}, {0.0, 0.0, 0.0}, {1.0, 1.0, 1.0}};
        elec_chargemap_params chosen, resolved;
        elec_error err;
        memset(&chosen, 0, sizeof chosen);
        chosen.basis = o->charge_basis;
        chosen.order = o->charge_order;
        if (elec_chargemap_params_resolve(&chosen, &probe, 1, &resolved, &err) != ELEC_OK) {
            fprintf(messages, TOOL ": --order %d: %s\n", o->charge_order, err.message);
            return PARSE_ERROR;
        }
    }
    /* --kappa sets the screening alone, 0 too (the library reads kappa 0
       as "from the ionic strength": --kappa 0 once mapped the default
       0.15 M's screening) */
    if ((o->given & OPTION_KAPPA) && (o->given & OPTION_IONIC)) {
        fprintf(messages, TOOL ": --kappa sets the screening, and --ionic-strength sets it "
                          "from a concentration: give one of them\n");
        return PARSE_ERROR;
    }
    if (o->given & OPTION_KAPPA) o->ionic_strength = 0.0;
    /* a charge map's lattice holds every atom's stencil: a B-spline's
       reaches up to order - 1 points below its atom, Skeel's order / 2
       either side, so the default padding grows to order points where
       that is wider (order 8 at 2 A once left an atom's stencil out) */
    if (o->method_given && o->method == METHOD_CHARGES && !padding_given && !o->explicit_dims) {
        const double reach = (o->charge_order > 0 ? o->charge_order : 4) * o->spacing;
        if (reach > o->padding) o->padding = reach;
    }
    return PARSE_RUN;
}

/* The built-in input: a Na+ Cl- pair 6 A apart in a droplet of SPC/E-like
   waters (one on each point of a 3.1 A grid within 15 A, none closer than
   2.8 A to an ion, orientations varied by grid position), written as PQR
   text and read back through the same reader a file goes through. */
static char *demo_pqr(size_t *length) {
    const double grid = 3.1, droplet = 15.0;
    const int half = 5; /* grid points -5..5 per axis */
    size_t capacity = 96 * (3 * 11 * 11 * 11 + 3), used = 0;
    char *text = (char *)malloc(capacity);
    int i, j, k, serial = 3, residue = 3;
    if (!text) return NULL;
    used += (size_t)sprintf(text + used, "REMARK elecmap demo: Na+ and Cl- in water\n");
    used += (size_t)sprintf(text + used, "ATOM      1 NA   NA      1      -3.000   0.000   0.000  1.0000 1.8680\n");
    used += (size_t)sprintf(text + used, "ATOM      2 CL   CL      2       3.000   0.000   0.000 -1.0000 2.4700\n");
    for (k = -half; k <= half; k++)
        for (j = -half; j <= half; j++)
            for (i = -half; i <= half; i++) {
                double o[3] = {grid * i + 0.35, grid * j + 0.25, grid * k + 0.15};
                double na = (o[0] + 3) * (o[0] + 3) + o[1] * o[1] + o[2] * o[2];
                double cl = (o[0] - 3) * (o[0] - 3) + o[1] * o[1] + o[2] * o[2];
                /* H-O-H of 109.47 degrees, O-H 1 A, in a plane that turns
                   with the grid position. */
                double angle = 0.7 * i + 1.3 * j + 2.1 * k;
                double c = cos(angle), sn = sin(angle);
                double h1[3] = {0.8165 * c, 0.5774, 0.8165 * sn};
                double h2[3] = {-0.8165 * c, 0.5774, -0.8165 * sn};
                if (o[0] * o[0] + o[1] * o[1] + o[2] * o[2] > droplet * droplet) continue;
                if (na < 2.8 * 2.8 || cl < 2.8 * 2.8) continue;
                used += (size_t)sprintf(text + used,
                    "ATOM  %5d  OW  HOH  %4d    %8.3f%8.3f%8.3f -0.8476 1.7683\n",
                    serial, residue, o[0], o[1], o[2]);
                used += (size_t)sprintf(text + used,
                    "ATOM  %5d  HW1 HOH  %4d    %8.3f%8.3f%8.3f  0.4238 0.0000\n",
                    serial + 1, residue, o[0] + h1[0], o[1] + h1[1], o[2] + h1[2]);
                used += (size_t)sprintf(text + used,
                    "ATOM  %5d  HW2 HOH  %4d    %8.3f%8.3f%8.3f  0.4238 0.0000\n",
                    serial + 2, residue, o[0] + h2[0], o[1] + h2[1], o[2] + h2[2]);
                serial += 3;
                residue++;
            }
    *length = used;
    return text;
}

/* ------------------------------------------------------------ estimates */

/* Rates that turn work into estimated seconds: DCS atom-point pairs on
   the CPU (this machine's OpenMP float path: 3.8-4.2e9 a second on two
   cores, gcc 12 with the Makefile's flags, 2026-12-06) and on an H100
   (bench/RESULTS.md); MDH pairs (an exponential each: 4.1e8 a second on
   those two cores, ten times the CPU's DCS cost, 2.4 times the GPU's);
   MSM short-range pairs within the cutoff, and lattice operations (the
   lattice-cutoff stencil, anterpolation, interpolation), measured with
   elecmap's defaults on concentrated and on sparse inputs (on uniform
   charges they come out 1.7-2.1 times the measured MSM time).  Rough,
   within a factor of 2-3: enough to tell seconds from hours.  The CPU's
   DCS rate read 5e8 until 2026-12-06, when the map ran at 2e9 a second
   here with its threads sharing cache lines, and at 3.9e9 once they did
   not (elec__dcs_row_stride): MSM had been chosen for maps the direct
   sum ran faster. */
typedef struct device_rates {
    double dcs, mdh, msm_short, msm_lattice;
} device_rates;
static const device_rates cpu_rates = {4e9, 4e8, 1.5e8, 6e8};
static const device_rates gpu_rates = {3.9e12, 1.6e12, 6e11, 8e11};

/* What a map will cost, in estimated seconds, before it is computed. */
typedef struct map_cost {
    double direct;          /* the direct sum (DCS, or MDH when chosen) */
    double msm, msm_short, msm_lattice;
    double msm_finest;      /* points of MSM's finest lattice */
    double short_pairs;     /* atom-point pairs within MSM's cutoff */
    double span[3];         /* of the atoms and the map together (A) */
    double atom_span[3];    /* of the atoms alone */
} map_cost;

static map_cost estimate_cost(const elec_atoms *atoms, const elec_lattice *l,
                              const options *o, const device_rates *rate) {
    elec_msm_params chosen = {0}, r;
    map_cost c;
    double lo[3], hi[3], box_lo[3], box_hi[3], sphere, stencil, support;
    const double points = (double)elec_lattice_size(l);
    size_t j;
    int axis;
    memset(&c, 0, sizeof c);
    chosen = msm_params_of(o);
    /* the cutoff, spacing and order MSM would use (the defaults' where the
       options are refused: the caller says why) */
    if (elec_msm_params_resolve(&chosen, points / (double)(atoms->count ? atoms->count : 1),
                                &r, NULL) != ELEC_OK) {
        memset(&chosen, 0, sizeof chosen);
        elec_msm_params_resolve(&chosen, 1.0, &r, NULL);
    }
    support = (double)elec_msm_support((int)r.interpolation);
    c.direct = (double)atoms->count * points /
               (o->method_given && o->method == METHOD_MDH ? rate->mdh : rate->dcs);
    elec_atoms_bounds(atoms, lo, hi);
    for (axis = 0; axis < 3; axis++) {
        c.atom_span[axis] = hi[axis] - lo[axis];
        box_lo[axis] = l->origin[axis];
        box_hi[axis] = l->origin[axis] + (l->dims[axis] - 1) * l->spacing[axis];
        if (lo[axis] > box_lo[axis]) lo[axis] = box_lo[axis];
        if (hi[axis] < box_hi[axis]) hi[axis] = box_hi[axis];
        c.span[axis] = hi[axis] - lo[axis];
    }
    /* The short range: each atom meets the map points within the cutoff of
       it, the sphere's points or, near the map's edges, the part of its
       bounding cube inside the map if that is fewer. */
    sphere = 4.0 / 3.0 * 3.141592653589793 * r.cutoff * r.cutoff * r.cutoff /
             (l->spacing[0] * l->spacing[1] * l->spacing[2]);
    for (j = 0; j < atoms->count; j++) {
        double x[3], q, in_box = 1.0;
        elec_atoms_get(atoms, j, x, &q, NULL);
        for (axis = 0; axis < 3; axis++) {
            double a = x[axis] - r.cutoff > box_lo[axis] ? x[axis] - r.cutoff : box_lo[axis];
            double b = x[axis] + r.cutoff < box_hi[axis] ? x[axis] + r.cutoff : box_hi[axis];
            in_box *= b >= a ? floor((b - a) / l->spacing[axis]) + 1.0 : 0.0;
        }
        c.short_pairs += in_box < sphere ? in_box : sphere;
    }
    /* The lattices: the finest covers atoms and map with the basis's
       support to spare, the coarser ones add 1/8 + 1/64 + ... of it; each
       point sums a stencil of the points within 2a at its level's spacing
       (the cutoff and the spacing double together). */
    c.msm_finest = 1.0;
    for (axis = 0; axis < 3; axis++)
        c.msm_finest *= floor(c.span[axis] / r.spacing) + 2.0 * support + 2.0;
    stencil = 4.0 / 3.0 * 3.141592653589793 * pow(2.0 * r.cutoff / r.spacing, 3.0);
    c.msm_short = c.short_pairs / rate->msm_short;
    c.msm_lattice = (8.0 / 7.0 * c.msm_finest * stencil +
                     (points + (double)atoms->count) * pow(2.0 * support, 3.0)) /
                    rate->msm_lattice;
    c.msm = c.msm_short + c.msm_lattice;
    return c;
}

/* ---------------------------------------------------------------- run */

static int fail(const char *what, const elec_error *err) {
    /* the library's remedy for a stencil off the lattice names a mapping
       elecmap does not offer: its own is the padding */
    const char *hint = strstr(err->message, "or map periodically")
                           ? " (" TOOL ": a larger --padding, or --dims and --origin)"
                           : "";
    fprintf(stderr, TOOL ": %s%s%s%s\n", what ? what : "", what ? ": " : "",
            err->message, hint);
    return 1;
}

/* Chooses the method (when --method did not) and refuses what would take
   too long; returns 0 to go on, else the exit status. */
static int choose_method(options *o, const elec_atoms *atoms,
                         const elec_lattice *l, int use_gpu) {
    const device_rates *rate = use_gpu ? &gpu_rates : &cpu_rates;
    const char *device = use_gpu ? "GPU" : "CPU";
    const size_t points = elec_lattice_size(l);
    const double pairs = (double)atoms->count * (double)points;
    const double limit = o->msm_above > 0.0 ? o->msm_above : use_gpu ? 1.0 : 30.0;
    const double max_work = o->max_work > 0.0 ? o->max_work
                            : use_gpu         ? MAX_WORK_GPU
                                              : MAX_WORK_CPU;
    map_cost c = estimate_cost(atoms, l, o, rate);
    elec_msm_params msm = msm_params_of(o);
    elec_error msm_err;
    /* The direct sum costs atoms x points; MSM costs its short range (atoms
       times the points within the cutoff) and its lattices.  Past half a
       minute on the CPU, or a second on the GPU, MSM (relative error ~1e-3
       at its defaults) is the default where it is estimated faster.  Where
       it is not, the atoms sit within the cutoff of most points (all at
       one point, say) or the lattices span far more than the atoms need:
       refused, with both estimates, rather than left to run for minutes. */
    if (!o->method_given && c.direct > limit) {
        elec_msm_params resolved;
        int invalid = elec_msm_params_resolve(&msm, (double)points /
                                                        (double)(atoms->count ? atoms->count : 1),
                                              &resolved, &msm_err) != ELEC_OK;
        int impossible = !invalid && c.msm_finest > ELEC_MSM_MAX_POINTS; /* its own cap */
        if (!invalid && !impossible && c.msm < c.direct) {
            o->method = METHOD_MSM;
            if (!o->quiet)
                fprintf(stderr, TOOL ": %zu atoms x %zu points would take about %.2g s "
                                "by the direct sum on the %s: using MSM (about %.2g s, "
                                "relative error %s%.0e; --method dcs to insist)\n",
                        atoms->count, points, c.direct, device, c.msm,
                        o->tolerance > 0.0 ? "<= " : "~",
                        o->tolerance > 0.0 ? o->tolerance : 1e-3);
            return 0;
        }
        fprintf(stderr, TOOL ": %zu atoms x %zu points would take about %.2g s by the "
                        "direct sum on the %s, and MSM ", atoms->count, points,
                c.direct, device);
        if (invalid)
            fprintf(stderr, "cannot run with these options: %s", msm_err.message);
        else if (impossible)
            fprintf(stderr, "cannot help: its finest lattice would need %.3g points at "
                            "%g A to span the %.4g x %.4g x %.4g A of the atoms and the "
                            "map", c.msm_finest, o->msm_spacing > 0 ? o->msm_spacing : 2.0,
                    c.span[0], c.span[1], c.span[2]);
        else if (c.msm_short >= c.msm_lattice)
            fprintf(stderr, "about %.2g s: it gains nothing here, each atom being within "
                            "its cutoff of %.0f%% of the points on average (the %zu atoms "
                            "span only %.3g x %.3g x %.3g A)", c.msm,
                    100.0 * c.short_pairs / (pairs > 0 ? pairs : 1), atoms->count,
                    c.atom_span[0], c.atom_span[1], c.atom_span[2]);
        else
            fprintf(stderr, "about %.2g s: its lattices (%.3g points) must fill the %.4g x "
                            "%.4g x %.4g A of the atoms and the map, far more than %zu "
                            "atoms need", c.msm, c.msm_finest, c.span[0], c.span[1],
                    c.span[2], atoms->count);
        fprintf(stderr, ".\n" TOOL ": refused: give --method dcs or --method msm to run "
                        "one anyway, or a coarser --spacing\n");
        return 1;
    }
    if (o->method == METHOD_DCS || o->method == METHOD_MDH) {
        if (pairs > max_work) {
            /* MSM sums the unscreened potential: no stand-in for MDH (an
               audit) */
            fprintf(stderr, TOOL ": %zu atoms x %zu points = %.3g pairs by the direct "
                            "sum (%s), about %.2g s on the %s: over --max-work %.3g; raise "
                            "it, %s\n", atoms->count, points, pairs,
                    o->method == METHOD_DCS ? "DCS" : "MDH", c.direct, device, max_work,
                    o->method == METHOD_DCS ? "or use --method msm"
                                            : "or map fewer points (a coarser --spacing)");
            return 1;
        }
    }
    return 0;
}

/* MDH at every lattice point: the points API over runs of at most 2^23
   points (x fastest, as the map), so that their coordinates (24 bytes a
   point) and the library's own work on them (about 40 more where the
   points span more than 1024 A: elec.h's regions) come to 2^23 x 64
   bytes, about 540 MB (counted, not measured), whatever the lattice.  Runs
   of whole z-planes, at least one, peaked at 16.8 GB for a plane of 2^28
   points (an audit measured it). */
static elec_status mdh_map(const elec_atoms *atoms, const elec_lattice *l,
                           elec_mdh_params *mp, cli_progress *progress,
                           int use_gpu, float *map, elec_error *err) {
    const size_t nx = (size_t)l->dims[0], ny = (size_t)l->dims[1];
    const size_t points = elec_lattice_size(l), run = (size_t)1 << 23;
    size_t first, n;
    double *xyz;
    elec_mdh_params solvent;
    elec_status s;
    /* The potential in the solvent, as APBS's mdh boundary condition has
       it: seed 000 eq. 1's constant C is the units' scale over the
       solvent's relative permittivity, the one that sets kappa from the
       ionic strength (the library's default, 78.54).  The library's kernel
       leaves C to the caller (kappa = 0 is plain q/r there); without it
       the map was 78.54 times APBS's (an audit). */
    if ((s = elec_mdh_params_resolve(mp, &solvent, err)) != ELEC_OK) return s;
    solvent.scale /= solvent.dielectric;
    xyz = (double *)malloc(3 * (points < run ? points : run) * sizeof *xyz);
    if (!xyz) {
        return elec_fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for %zu points",
                         points < run ? points : run);
    }
    for (first = 0; first < points && s == ELEC_OK; first += n) {
        size_t p;
        n = points - first < run ? points - first : run;
        for (p = 0; p < n; p++) {
            const size_t g = first + p;
            elec_lattice_point(l, (int)(g % nx), (int)(g / nx % ny), (int)(g / nx / ny),
                               xyz + 3 * p);
        }
        progress->base = (double)first / (double)points;
        progress->share = (double)n / (double)points;
#ifdef ELEC_WITH_CUDA
        if (use_gpu) s = elec_cuda_mdh_points(atoms, xyz, n, &solvent, map + first, err);
        else
#endif
            s = elec_cpu_mdh_points(atoms, xyz, n, &solvent, map + first, err);
    }
    (void)use_gpu;
    free(xyz);
    return s;
}

/* The lattice the options describe around the atoms, within
   --max-points. */
static elec_status build_lattice(const options *o, const elec_atoms *atoms,
                                 elec_lattice *lattice, elec_error *err) {
    elec_status s;
    if (o->explicit_dims) {
        int axis;
        double lo[3], hi[3];
        elec_atoms_bounds(atoms, lo, hi);
        for (axis = 0; axis < 3; axis++) {
            lattice->dims[axis] = o->dims[axis];
            lattice->spacing[axis] = o->spacing;
            lattice->origin[axis] = o->explicit_origin
                ? o->origin[axis]
                : 0.5 * (lo[axis] + hi[axis]) - 0.5 * (o->dims[axis] - 1) * o->spacing;
        }
        s = ELEC_OK;
    } else {
        s = elec_lattice_around(atoms, o->spacing, o->padding, lattice, err);
    }
    if (s != ELEC_OK) return s;
    return elec_lattice_check_points(lattice, o->max_points, err);
}

/* Why the lattice was refused and, where the count of points is the
   reason, what lowers it: a coarser --spacing, or fewer --dims where they
   were given (the spacing does not change their count), and a smaller
   --padding where twice it passes the atoms' span (a padding of 1e308 A
   was once answered with "a coarser --spacing", which cannot mend it;
   an audit). */
static void lattice_refused(const options *o, const elec_atoms *atoms, elec_status s,
                            const elec_error *err) {
    const double limit = (double)o->max_points;
    double lo[3], hi[3], points, span = 0.0;
    int axis;
    elec_atoms_bounds(atoms, lo, hi);
    for (axis = 0; axis < 3; axis++)
        if (hi[axis] - lo[axis] > span) span = hi[axis] - lo[axis];
    points = o->explicit_dims ? (double)o->dims[0] * o->dims[1] * o->dims[2]
                              : cli_points_around(atoms, o->spacing, o->padding);
    if (!(points > limit) && s != ELEC_ERR_UNSUPPORTED) {
        fprintf(stderr, TOOL ": %s\n", err->message);
        return;
    }
    /* the padding is the cause where the atoms alone would fit */
    if (!o->explicit_dims && 2.0 * o->padding > span &&
        cli_points_around(atoms, o->spacing, 0.0) <= limit) {
        fprintf(stderr, TOOL ": %s: the atoms span %.4g x %.4g x %.4g A and the padding adds "
                        "%g A to each side; a smaller --padding%s%s\n", err->message,
                hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2], o->padding,
                /* past double's range, the extent itself: no spacing mends it */
                isfinite(span + 2.0 * o->padding) ? ", a coarser --spacing" : "",
                s == ELEC_ERR_UNSUPPORTED ? ", or --max-points" : "");
        return;
    }
    fprintf(stderr, TOOL ": %s: the atoms span %.4g x %.4g x %.4g A; %s%s\n", err->message,
            hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2],
            o->explicit_dims ? "fewer --dims" : "a coarser --spacing",
            s == ELEC_ERR_UNSUPPORTED ? ", or --max-points" : "");
}

/* ----------------------------------------------------- what the map says */

/* The unit of the map's values. */
static const char *units_name(const options *o) {
    if (o->method == METHOD_CHARGES) return "e";
    return o->units == UNITS_KT ? "kT/e" : o->units == UNITS_KCAL ? "kcal/(mol e)" : "V";
}

/* The method and the parameters it ran with, as the summary and the
   map's comment give them. */
static void describe_method(const options *o, const elec_atoms *atoms,
                            const elec_lattice *lattice, int use_gpu, char *text,
                            size_t size) {
    const size_t points = elec_lattice_size(lattice);
    if (o->method == METHOD_DCS) {
        elec_dcs_params chosen = {0}, r;
        chosen.variant = o->variant;
        if (elec_dcs_params_resolve(&chosen, &r, NULL) != ELEC_OK) r = chosen;
        snprintf(text, size, "DCS (direct Coulomb sum)%s%s", use_gpu ? ", GPU kernel " : "",
                 use_gpu ? elec_dcs_variant_name(r.variant) : "");
    } else if (o->method == METHOD_MSM) {
        elec_msm_params chosen = msm_params_of(o), r;
        /* what the map call chose */
        if (elec_msm_params_resolve(&chosen, (double)points /
                                                 (double)(atoms->count ? atoms->count : 1),
                                    &r, NULL) != ELEC_OK)
            r = chosen;
        snprintf(text, size, "MSM (multilevel summation), cutoff %g A, spacing %g A, %s, "
                             "expected relative error %.1e", r.cutoff, r.spacing,
                 msm_order_name(r.interpolation), r.estimate.force);
    } else if (o->method == METHOD_CHARGES) {
        elec_chargemap_params chosen = {0}, r;
        chosen.basis = o->charge_basis;
        chosen.order = o->charge_order;
        chosen.variant = o->charge_variant;
        /* the default's tile-binned gives way to pc-lanes where it does
           not fit the GPU (elec_cuda_chargemap_create) */
        const int may_yield = use_gpu && chosen.variant == ELEC_CHARGEMAP_FASTEST;
        if (elec_chargemap_params_resolve(&chosen, lattice, atoms->count, &r, NULL) == ELEC_OK)
            snprintf(text, size, "charge mapping, %s order %d%s%s%s",
                     r.basis == ELEC_CHARGEMAP_SKEEL ? "Skeel C1" : "B-spline", r.order,
                     use_gpu ? ", GPU rung " : "",
                     use_gpu ? elec_chargemap_variant_name(r.variant) : "",
                     may_yield && r.variant == ELEC_CHARGEMAP_TILE_BINNED
                         ? " (pc-lanes where it does not fit)"
                         : "");
        else
            snprintf(text, size, "charge mapping");
    } else if (o->method == METHOD_CUTOFF) {
        snprintf(text, size, "cutoff map, %s within %g A",
                 o->shifted ? "shifted Coulomb" : "MSM short range",
                 o->msm_cutoff > 0 ? o->msm_cutoff : 12.0);
    } else {
        snprintf(text, size, "MDH (multiple Debye-Hueckel) in water (eps 78.54), kappa %.4f /A",
                 o->kappa > 0 ? o->kappa
                              : elec_kappa_from_ionic_strength(o->ionic_strength, 78.54,
                                                               o->temperature));
    }
}

/* The map's comment: what its values are, then where they came from
   (elec's version, the input, the method and its parameters, the
   lattice), then the input's records (cli_input_records), so that a map says
   how it was made.  A DX file holds it as '#' lines; an MRC file as its
   labels, the first 10 lines of 80 characters.  NULL without memory. */
static char *provenance(const options *o, const char *records, const elec_structure *mol,
                        const elec_lattice *l, const char *method) {
    size_t size = 1024 + strlen(o->input ? o->input : "") + strlen(method) + strlen(records),
           used = 0, i;
    char *c = (char *)malloc(size);
    double net = 0.0;
    if (!c) return NULL;
    for (i = 0; i < mol->count; i++) net += mol->charge[i];
    if (o->method == METHOD_CHARGES)
        used += (size_t)snprintf(c + used, size - used, "elecmap charge per point in e\n");
    else if (o->units == UNITS_KT)
        used += (size_t)snprintf(c + used, size - used, "elecmap potential in kT/e at %g K\n",
                                 o->temperature);
    else
        used += (size_t)snprintf(c + used, size - used, "elecmap potential in %s\n",
                                 units_name(o));
    used += (size_t)snprintf(c + used, size - used,
                             "elec %s elecmap, input %s: %zu atoms, net charge %+.4f e\n",
                             ELEC_VERSION_STRING, o->demo ? "(the built-in demo)" : o->input,
                             mol->count, net);
    used += (size_t)snprintf(c + used, size - used, "method %s\n", method);
    used += (size_t)snprintf(c + used, size - used,
                             "lattice %d x %d x %d, spacing %.10g %.10g %.10g A, origin %.10g "
                             "%.10g %.10g A\n", l->dims[0], l->dims[1], l->dims[2], l->spacing[0],
                             l->spacing[1], l->spacing[2], l->origin[0], l->origin[1],
                             l->origin[2]);
    snprintf(c + used, size - used, "%s", records);
    return c;
}

static int elecmap_run(options *o) {
    elec_structure mol;
    elec_atoms atoms;
    elec_lattice lattice;
    elec_error err;
    elec_status s;
    float *map = NULL;
    double scale, start, seconds, lo = 0.0, hi = 0.0;
    size_t points, p, length = 0;
    int use_gpu = 0, status;
    char device_name[128] = "CPU", method[256], *text = NULL, *records, *comment;
    cli_progress progress = cli_progress_start(TOOL);

    /* Everything that needs no computing first: the output, the device. */
    if ((status = cli_map_output_check(TOOL, o->output, o->input)) != 0) return status;
    cli_remove_temps_on_signal(o->output);
#ifdef ELEC_WITH_CUDA
    if (o->device != DEVICE_CPU && elec_cuda_device_count() > 0) use_gpu = 1;
#endif
    if ((o->device == DEVICE_GPU || o->gpus) && !use_gpu) {
#ifdef ELEC_WITH_CUDA
        fprintf(stderr, TOOL ": %s: no CUDA device is present (--cpu to compute on "
                        "the CPU)\n", o->gpus ? "--gpus" : "--gpu");
#else
        fprintf(stderr, TOOL ": %s: this elecmap was built without CUDA (leave it out to "
                        "compute on the CPU)\n", o->gpus ? "--gpus" : "--gpu");
#endif
        return 1;
    }
    if (!use_gpu && (o->given & (OPTION_DCS_VARIANT | OPTION_CHARGE_VARIANT))) {
        /* a GPU kernel's name, on a run the CPU computes (it went by
           without a word) */
#ifdef ELEC_WITH_CUDA
        fprintf(stderr, TOOL ": --variant picks a GPU kernel, and no CUDA device is present\n");
#else
        fprintf(stderr, TOOL ": --variant picks a GPU kernel, and this elecmap was built "
                        "without CUDA\n");
#endif
        return 1;
    }

    /* the input's text, kept for the map's comment (its REMARK and CRYST1
       lines), read as elec_read_pqr reads it (limits, gzip) */
    if (o->demo) {
        text = demo_pqr(&length);
        if (!text) { fprintf(stderr, TOOL ": out of memory\n"); return 1; }
        s = ELEC_OK;
    } else {
        s = elec_read_text(o->input, "a PQR", &text, &length, &err);
    }
    if (s == ELEC_OK) s = elec_parse_pqr(text, length, &mol, &err);
    records = s == ELEC_OK ? cli_input_records(text, length) : NULL;
    if (o->demo) free(text);
    else elec_free(text);
    if (s != ELEC_OK) return fail(o->demo ? "demo input" : o->input, &err);
    if (!records) {
        fprintf(stderr, TOOL ": out of memory\n");
        elec_structure_free(&mol);
        return 1;
    }
    if (!o->demo) cli_warn_if_pdb(TOOL, o->input, &mol);
    atoms = elec_structure_atoms(&mol);

    s = build_lattice(o, &atoms, &lattice, &err);
    if (s != ELEC_OK) {
        lattice_refused(o, &atoms, s, &err);
        elec_structure_free(&mol);
        free(records);
        return 1;
    }
    points = elec_lattice_size(&lattice);

#ifdef ELEC_WITH_CUDA
    if (use_gpu) {
        char name[96] = "GPU";
        const int spread = o->method != METHOD_CHARGES;
        int gpus = o->gpus == ELEC_ALL_GPUS ? elec_cuda_device_count()
                                            : (o->gpus > 1 && spread ? o->gpus : 1);
        elec_cuda_device_name(0, name, sizeof name, NULL);
        if (gpus > 1 && spread)
            snprintf(device_name, sizeof device_name, "%d x %s", gpus, name);
        else
            snprintf(device_name, sizeof device_name, "%s", name);
    }
#endif
    if ((status = choose_method(o, &atoms, &lattice, use_gpu)) != 0) {
        elec_structure_free(&mol);
        free(records);
        return status;
    }
    map = (float *)malloc(points * sizeof *map);
    if (!map) {
        fprintf(stderr, TOOL ": no memory for a map of %zu points\n", points);
        elec_structure_free(&mol);
        free(records);
        return 1;
    }

    scale = o->units == UNITS_KT     ? elec_kT_scale(o->temperature)
            : o->units == UNITS_KCAL ? ELEC_COULOMB
                                     : VOLT_SCALE;
    progress.start = start = cli_seconds_now();
    if (o->method == METHOD_DCS) {
        elec_dcs_params dp = {0};
        dp.scale = scale;
        dp.variant = o->variant;
        dp.gpus.count = o->gpus;
        dp.max_points = o->max_points;
        if (!o->quiet) {
            dp.progress = cli_show_progress;
            dp.progress_user = &progress;
        }
#ifdef ELEC_WITH_CUDA
        if (use_gpu) s = elec_cuda_dcs_map(&atoms, &lattice, &dp, map, &err);
        else
#endif
            s = elec_cpu_dcs_map(&atoms, &lattice, &dp, map, &err);
    } else if (o->method == METHOD_MSM) {
        elec_msm_params sp = msm_params_of(o);
        sp.scale = scale;
        sp.max_points = o->max_points;
        sp.gpus.count = o->gpus;
        if (!o->quiet) {
            sp.progress = cli_show_progress;
            sp.progress_user = &progress;
        }
#ifdef ELEC_WITH_CUDA
        if (use_gpu) s = elec_cuda_msm_map(&atoms, &lattice, &sp, map, &err);
        else
#endif
            s = elec_cpu_msm_map(&atoms, &lattice, &sp, map, &err);
    } else if (o->method == METHOD_CHARGES) {
        /* the charge on each lattice point, e (no scale, no units) */
        elec_chargemap_params hp = {0};
        hp.basis = o->charge_basis;
        hp.order = o->charge_order;
        hp.variant = o->charge_variant;
#ifdef ELEC_WITH_CUDA
        if (use_gpu) s = elec_cuda_chargemap(&atoms, &lattice, &hp, map, &err);
        else
#endif
            s = elec_cpu_chargemap(&atoms, &lattice, &hp, map, &err);
    } else if (o->method == METHOD_CUTOFF) {
        elec_cutoff_params cp = {0};
        cp.scale = scale;
        cp.cutoff = o->msm_cutoff;
        cp.kind = o->shifted ? ELEC_CUTOFF_SHIFTED : ELEC_CUTOFF_MSM;
        cp.max_points = o->max_points;
        cp.gpus.count = o->gpus;
        if (!o->quiet) {
            cp.progress = cli_show_progress;
            cp.progress_user = &progress;
        }
#ifdef ELEC_WITH_CUDA
        if (use_gpu) s = elec_cuda_cutoff_map(&atoms, &lattice, &cp, map, &err);
        else
#endif
            s = elec_cpu_cutoff_map(&atoms, &lattice, &cp, map, &err);
    } else {
        elec_mdh_params mp = {0};
        mp.scale = scale;
        mp.kappa = o->kappa;
        mp.ionic_strength = o->ionic_strength;
        mp.temperature = o->temperature;
        mp.gpus.count = o->gpus;
        if (!o->quiet) {
            mp.progress = cli_show_progress;
            mp.progress_user = &progress;
        }
        s = mdh_map(&atoms, &lattice, &mp, &progress, use_gpu, map, &err);
    }
    seconds = cli_seconds_now() - start;
    cli_progress_end(&progress);
    describe_method(o, &atoms, &lattice, use_gpu, method, sizeof method);
    if (s == ELEC_OK) {
        comment = provenance(o, records, &mol, &lattice, method);
        s = comment ? elec_write_map(o->output, &lattice, map, comment, &err)
                    : elec_fail(&err, ELEC_ERR_NO_MEMORY, 0, "no memory for the map's comment");
        free(comment);
    }
    free(records);
    if (s != ELEC_OK) {
        fail(NULL, &err);
        cli_name_atoms(TOOL, o->demo ? "demo input" : o->input, &mol, &err);
        free(map);
        elec_structure_free(&mol);
        return 1;
    }
    for (p = 0; p < points; p++) {
        if (p == 0 || map[p] < lo) lo = map[p];
        if (p == 0 || map[p] > hi) hi = map[p];
    }
    if (!o->quiet) {
        double evals = (double)points * (double)atoms.count;
        double net = 0.0;
        /* stderr where the map goes to stdout: not among its data */
        FILE *report = cli_report_stream(o->output);
        fprintf(report, TOOL ": %s -> %s\n", o->demo ? "(built-in demo)" : o->input,
                o->output);
        for (p = 0; p < mol.count; p++) net += mol.charge[p];
        fprintf(report, "  atoms      %zu (net charge %+.4f e)\n", atoms.count, net);
        fprintf(report,
                "  lattice    %d x %d x %d = %zu points, spacing %g A, origin (%.3f, %.3f, "
                "%.3f)\n",
                lattice.dims[0], lattice.dims[1], lattice.dims[2], points, lattice.spacing[0],
                lattice.origin[0], lattice.origin[1], lattice.origin[2]);
        fprintf(report, "  method     %s\n", method);
        fprintf(report, "  output     %s\n", elec_map_format_name(o->output));
        fprintf(report, "  device     %s\n", device_name);
        if (o->method == METHOD_CHARGES) {
            double total = 0.0;
            for (p = 0; p < points; p++) total += map[p];
            fprintf(report, "  time       %.3f s, %.3g atoms mapped per us\n", seconds,
                    atoms.count / (seconds > 0 ? seconds * 1e6 : 1e-3));
            fprintf(report, "  charge     min %.4g, max %.4g, total %+.4f e\n", lo, hi, total);
        } else {
            fprintf(report, "  time       %.3f s, %.3e atom evaluations/s%s\n", seconds,
                    evals / (seconds > 0 ? seconds : 1e-9),
                    o->method == METHOD_MSM ? " (the direct sum's count; MSM does fewer)" : "");
            fprintf(report, "  potential  min %.4g, max %.4g %s\n", lo, hi, units_name(o));
        }
    }
    free(map);
    elec_structure_free(&mol);
    return 0;
}

#ifndef ELECMAP_NO_MAIN
int main(int argc, char **argv) {
    options o;
    cli_check_stdout_at_exit(TOOL);
    switch (elecmap_parse(argc, argv, &o, stderr)) {
    case PARSE_HELP: usage(stdout); return 0;
    case PARSE_VERSION: cli_version(stdout, TOOL, NULL, 0); return 0;
    case PARSE_ERROR: return 2;
    default: return elecmap_run(&o);
    }
}
#endif
