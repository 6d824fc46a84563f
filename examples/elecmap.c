/* elecmap - the electrostatic potential of a PQR structure as an OpenDX map.

   elecmap [options] input.pqr output.dx
   elecmap --demo output.dx          a built-in input, no file needed

   Built as C for the CPU alone, or by nvcc (-x cu -DELEC_WITH_CUDA) with the
   GPU path, which is then the default when a GPU is present.  Run with
   --help for the options and their defaults. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#define ELEC_ALL_IMPLEMENTATION
#include "elec.h"
#include "elec_cpu.h"
#ifdef ELEC_WITH_CUDA
#include "elec_cuda.cuh"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef enum { METHOD_DCS, METHOD_MDH, METHOD_MSM, METHOD_CUTOFF } map_method;
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
    int units_kT;
    double temperature;
    double ionic_strength, kappa;
    double msm_cutoff, msm_spacing;
    double tolerance; /* MSM's relative RMS error target; 0 = its defaults */
    int msm_order, shifted; /* msm_order: 4, 6, 8 or 10 (0 = 4) */
    int method_given; /* --method on the command line */
    double msm_above; /* seconds of direct sum past which MSM is chosen;
                         0 = 30 on the CPU, 1 on the GPU */
    elec_dcs_variant variant;
    int gpus;
    int quiet;
} options;

static void usage(FILE *out) {
    fprintf(out,
"usage: elecmap [options] input.pqr output.dx\n"
"       elecmap [options] --demo output.dx\n"
"\n"
"The electrostatic potential of the atoms of a PQR file on a lattice, as an\n"
"OpenDX map (APBS, VMD, PyMOL and Chimera read it).\n"
"\n"
"  --method dcs|mdh|msm|cutoff\n"
"                        direct Coulomb sum (default), multiple\n"
"                        Debye-Hueckel (screened, with atom radii),\n"
"                        multilevel summation (cost atoms + points), or\n"
"                        the short-range part alone within a cutoff; all on\n"
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
"                        that meets T by the measured error table (1e-7 to 1)\n"
"  --msm-order P         MSM interpolation order: 4 (C1 cubic, default), 6\n"
"                        (quintic), 8 (septic) or 10 (nonic); the splitting\n"
"                        is made smoother with it (C2, C3, C4, C5)\n"
"  --spacing H           lattice spacing in A (default 0.5)\n"
"  --padding P           margin around the molecule in A (default 10)\n"
"  --dims NX NY NZ       explicit point counts (instead of padding)\n"
"  --origin X Y Z        explicit origin (with --dims; default: centred)\n"
"  --gpu | --cpu         where to compute (default: the GPU when present)\n"
"  --gpus N|all          GPUs to spread DCS slices over (default 1)\n"
"  --variant NAME        DCS GPU kernel: simple, const, unroll4,\n"
"                        unroll8-coalesced, volume, hybrid-rsqrt (default)\n"
"  --units kT|kcal       kT/e (default, as APBS writes) or kcal/(mol e)\n"
"  --temperature T       K, for kT/e and the Debye length (default 298.15)\n"
"  --ionic-strength I    mol/L, MDH screening (default 0.15)\n"
"  --kappa K             inverse Debye length in 1/A (overrides the above)\n"
"  --demo                use the built-in input (an ion pair in water)\n"
"  --quiet               no progress and no summary\n"
"  --help                this text\n");
}

static int parse_double(const char *text, double *value) {
    char *end;
    *value = strtod(text, &end);
    return end != text && *end == '\0' && elec__finite(*value);
}

static int parse_int(const char *text, int *value) {
    char *end;
    long v = strtol(text, &end, 10);
    if (end == text || *end != '\0' || v < 1 || v > 100000) return 0;
    *value = (int)v;
    return 1;
}

/* Parses argv into o; returns 0 with a message on stderr when it cannot. */
static int parse_options(int argc, char **argv, options *o) {
    int i, positional = 0;
    const char *files[2] = {NULL, NULL};
    memset(o, 0, sizeof *o);
    o->spacing = 0.5;
    o->padding = 10.0;
    o->units_kT = 1;
    o->temperature = ELEC_ROOM_TEMPERATURE;
    o->ionic_strength = 0.15;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = argc - i - 1;
#define NEED(n)                                                               \
    if (more < (n)) {                                                         \
        fprintf(stderr, "elecmap: %s needs %d value(s)\n", a, (n));           \
        return 0;                                                             \
    }
#define DOUBLE_ARG(target, what)                                              \
    do {                                                                      \
        NEED(1);                                                              \
        if (!parse_double(argv[++i], &(target))) {                            \
            fprintf(stderr, "elecmap: %s: '%s' is not a %s\n", a, argv[i],    \
                    what);                                                    \
            return 0;                                                         \
        }                                                                     \
    } while (0)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--method")) {
            NEED(1);
            o->method_given = 1;
            a = argv[++i];
            if (!strcmp(a, "dcs")) o->method = METHOD_DCS;
            else if (!strcmp(a, "mdh")) o->method = METHOD_MDH;
            else if (!strcmp(a, "msm")) o->method = METHOD_MSM;
            else if (!strcmp(a, "cutoff")) o->method = METHOD_CUTOFF;
            else {
                fprintf(stderr, "elecmap: unknown method '%s' (dcs, mdh, msm or cutoff)\n", a);
                return 0;
            }
        } else if (!strcmp(a, "--msm-above")) {
            DOUBLE_ARG(o->msm_above, "time in seconds");
            if (!(o->msm_above > 0.0)) {
                fprintf(stderr, "elecmap: --msm-above %g: give a time above 0 s\n",
                        o->msm_above);
                return 0;
            }
        } else if (!strcmp(a, "--cutoff") || !strcmp(a, "--msm-cutoff")) {
            DOUBLE_ARG(o->msm_cutoff, "cutoff in A");
        } else if (!strcmp(a, "--msm-spacing")) {
            DOUBLE_ARG(o->msm_spacing, "spacing in A");
        } else if (!strcmp(a, "--tolerance")) {
            DOUBLE_ARG(o->tolerance, "relative error");
            if (!(o->tolerance > 0.0 && o->tolerance < 1.0)) {
                fprintf(stderr, "elecmap: --tolerance %g: give a relative error in (0, 1)\n",
                        o->tolerance);
                return 0;
            }
        } else if (!strcmp(a, "--msm-order")) {
            double order;
            DOUBLE_ARG(order, "order 4, 6, 8 or 10");
            if (order != 4 && order != 6 && order != 8 && order != 10) {
                fprintf(stderr, "elecmap: --msm-order %g: use 4, 6, 8 or 10\n", order);
                return 0;
            }
            o->msm_order = (int)order;
        } else if (!strcmp(a, "--shifted")) {
            o->shifted = 1;
        } else if (!strcmp(a, "--spacing")) {
            DOUBLE_ARG(o->spacing, "spacing in A");
        } else if (!strcmp(a, "--padding")) {
            DOUBLE_ARG(o->padding, "padding in A");
        } else if (!strcmp(a, "--dims")) {
            int axis;
            NEED(3);
            for (axis = 0; axis < 3; axis++)
                if (!parse_int(argv[++i], &o->dims[axis])) {
                    fprintf(stderr, "elecmap: --dims: '%s' is not a count of 1 to 100000\n",
                            argv[i]);
                    return 0;
                }
            o->explicit_dims = 1;
        } else if (!strcmp(a, "--origin")) {
            int axis;
            NEED(3);
            for (axis = 0; axis < 3; axis++)
                if (!parse_double(argv[++i], &o->origin[axis])) {
                    fprintf(stderr, "elecmap: --origin: '%s' is not a number\n", argv[i]);
                    return 0;
                }
            o->explicit_origin = 1;
        } else if (!strcmp(a, "--gpu")) {
            o->device = DEVICE_GPU;
        } else if (!strcmp(a, "--cpu")) {
            o->device = DEVICE_CPU;
        } else if (!strcmp(a, "--gpus")) {
            NEED(1);
            if (!strcmp(argv[++i], "all")) o->gpus = ELEC_ALL_GPUS;
            else if (!parse_int(argv[i], &o->gpus)) {
                fprintf(stderr, "elecmap: --gpus: '%s' is not a count or 'all'\n", argv[i]);
                return 0;
            }
        } else if (!strcmp(a, "--variant")) {
            int v, found = 0;
            NEED(1);
            a = argv[++i];
            for (v = 0; v < ELEC_DCS_VARIANT_COUNT; v++)
                if (!strcmp(a, elec_dcs_variant_name((elec_dcs_variant)v))) {
                    o->variant = (elec_dcs_variant)v;
                    found = 1;
                }
            if (!found) {
                fprintf(stderr, "elecmap: unknown DCS variant '%s'\n", a);
                return 0;
            }
        } else if (!strcmp(a, "--units")) {
            NEED(1);
            a = argv[++i];
            if (!strcmp(a, "kT")) o->units_kT = 1;
            else if (!strcmp(a, "kcal")) o->units_kT = 0;
            else {
                fprintf(stderr, "elecmap: unknown units '%s' (kT or kcal)\n", a);
                return 0;
            }
        } else if (!strcmp(a, "--temperature")) {
            DOUBLE_ARG(o->temperature, "temperature in K");
        } else if (!strcmp(a, "--ionic-strength")) {
            DOUBLE_ARG(o->ionic_strength, "concentration in mol/L");
        } else if (!strcmp(a, "--kappa")) {
            DOUBLE_ARG(o->kappa, "inverse length in 1/A");
        } else if (!strcmp(a, "--demo")) {
            o->demo = 1;
        } else if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(stderr, "elecmap: unknown option '%s' (see --help)\n", a);
            return 0;
        } else {
            if (positional == 2) {
                fprintf(stderr, "elecmap: too many file names ('%s')\n", a);
                return 0;
            }
            files[positional++] = a;
        }
#undef NEED
#undef DOUBLE_ARG
    }
    if (o->demo ? positional != 1 : positional != 2) {
        fprintf(stderr, o->demo ? "elecmap: --demo takes one file name, the output map\n"
                                : "elecmap: need an input PQR file and an output DX file\n");
        usage(stderr);
        return 0;
    }
    o->input = o->demo ? NULL : files[0];
    o->output = o->demo ? files[0] : files[1];
    if (!(o->spacing > 0.0) || !(o->padding >= 0.0) || !(o->temperature > 0.0) ||
        !(o->msm_cutoff >= 0.0) || !(o->msm_spacing >= 0.0) ||
        !(o->ionic_strength >= 0.0) || !(o->kappa >= 0.0)) {
        fprintf(stderr, "elecmap: spacing and temperature must be positive; padding, "
                        "ionic strength and kappa zero or positive\n");
        return 0;
    }
    if (o->explicit_origin && !o->explicit_dims) {
        fprintf(stderr, "elecmap: --origin needs --dims\n");
        return 0;
    }
    return 1;
}

/* The built-in input: a Na+ Cl- pair 6 A apart in a droplet of SPC/E-like
   waters (one on each point of a 3.1 A grid within 15 A, none closer than
   2.8 A to an ion, orientations varied by grid position), written as PQR
   text and read back through the same reader a file goes through. */
/* --msm-order's interpolation, and its name with the splitting it gets. */
static elec_msm_interpolation msm_interpolation(const options *o) {
    switch (o->msm_order) {
    case 6: return ELEC_MSM_QUINTIC;
    case 8: return ELEC_MSM_SEPTIC;
    case 10: return ELEC_MSM_NONIC;
    default: return ELEC_MSM_CUBIC;
    }
}

static const char *msm_order_name(elec_msm_interpolation interpolation) {
    static const char *const names[] = {"C1 cubic, C2 splitting", "C1 quintic, C3 splitting",
                                        "C1 septic, C4 splitting", "C1 nonic, C5 splitting"};
    return names[interpolation];
}

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

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

typedef struct progress_state {
    double start;
    int shown;
    int percent; /* last shown */
} progress_state;

/* Progress on stderr, only for maps that take more than a second, and only
   when the whole percentage changes. */
static int show_progress(double fraction, void *user) {
    progress_state *p = (progress_state *)user;
    int percent = (int)(100.0 * fraction);
    if (seconds_now() - p->start < 1.0 && !p->shown) return 0;
    if (p->shown && percent == p->percent) return 0;
    fprintf(stderr, "\relecmap: %3d%% done", percent);
    fflush(stderr);
    p->shown = 1;
    p->percent = percent;
    return 0;
}

int main(int argc, char **argv) {
    options o;
    elec_structure mol;
    elec_atoms atoms;
    elec_lattice lattice;
    elec_error err;
    elec_status s;
    float *map = NULL;
    double scale, start, seconds, lo = 0.0, hi = 0.0;
    size_t points, p;
    int use_gpu = 0;
    char device_name[128] = "CPU";
    progress_state progress = {0.0, 0, -1};

    if (!parse_options(argc, argv, &o)) return 2;

    if (o.demo) {
        size_t length = 0;
        char *text = demo_pqr(&length);
        if (!text) { fprintf(stderr, "elecmap: out of memory\n"); return 1; }
        s = elec_parse_pqr(text, length, &mol, &err);
        free(text);
    } else {
        s = elec_read_pqr(o.input, &mol, &err);
    }
    if (s != ELEC_OK) {
        fprintf(stderr, "elecmap: %s: %s\n", o.demo ? "demo input" : o.input, err.message);
        return 1;
    }
    atoms = elec_structure_atoms(&mol);

    if (o.explicit_dims) {
        int axis;
        double lo3[3], hi3[3];
        elec_atoms_bounds(&atoms, lo3, hi3);
        for (axis = 0; axis < 3; axis++) {
            lattice.dims[axis] = o.dims[axis];
            lattice.spacing[axis] = o.spacing;
            lattice.origin[axis] = o.explicit_origin
                ? o.origin[axis]
                : 0.5 * (lo3[axis] + hi3[axis]) - 0.5 * (o.dims[axis] - 1) * o.spacing;
        }
        s = elec_lattice_check(&lattice, &err);
    } else {
        s = elec_lattice_around(&atoms, o.spacing, o.padding, &lattice, &err);
    }
    if (s != ELEC_OK) {
        fprintf(stderr, "elecmap: lattice: %s\n", err.message);
        elec_structure_free(&mol);
        return 1;
    }
    points = elec_lattice_size(&lattice);
    map = (float *)malloc(points * sizeof *map);
    if (!map) {
        fprintf(stderr, "elecmap: no memory for a map of %zu points\n", points);
        elec_structure_free(&mol);
        return 1;
    }

#ifdef ELEC_WITH_CUDA
    if (o.device != DEVICE_CPU && elec_cuda_device_count() > 0) use_gpu = 1;
    if (use_gpu) {
        char name[96] = "GPU";
        int gpus = o.gpus == ELEC_ALL_GPUS ? elec_cuda_device_count()
                                           : (o.gpus > 1 && o.method == METHOD_DCS ? o.gpus : 1);
        elec_cuda_device_name(0, name, sizeof name, NULL);
        if (gpus > 1 && o.method == METHOD_DCS)
            snprintf(device_name, sizeof device_name, "%d x %s", gpus, name);
        else
            snprintf(device_name, sizeof device_name, "%s", name);
    }
#endif
    /* The direct sum costs atoms x points evaluations: about 5e8 a second
       on the CPU, 3.9e12 on an H100 (bench/RESULTS.md).  Past half a
       minute on the CPU, or a second on the GPU, MSM (cost atoms + points,
       relative error ~1e-3 at its defaults) is the default, and elecmap
       says so. */
    {
        const double rate = use_gpu ? 3.9e12 : 5e8;
        const double limit = o.msm_above > 0.0 ? o.msm_above : use_gpu ? 1.0 : 30.0;
        const double seconds = (double)atoms.count * (double)points / rate;
        if (!o.method_given && seconds > limit) {
            o.method = METHOD_MSM;
            if (!o.quiet)
                fprintf(stderr, "elecmap: %zu atoms x %zu points would take about %.2g s "
                                "by the direct sum on the %s: using MSM (relative error "
                                "%s%.0e; --method dcs to insist)\n", atoms.count, points,
                        seconds, use_gpu ? "GPU" : "CPU", o.tolerance > 0.0 ? "<= " : "~",
                        o.tolerance > 0.0 ? o.tolerance : 1e-3);
        }
    }
    if (o.device == DEVICE_GPU && !use_gpu) {
#ifdef ELEC_WITH_CUDA
        fprintf(stderr, "elecmap: --gpu: no CUDA device is present\n");
#else
        fprintf(stderr, "elecmap: --gpu: this elecmap was built without CUDA\n");
#endif
        free(map);
        elec_structure_free(&mol);
        return 1;
    }

    scale = o.units_kT ? elec_kT_scale(o.temperature) : ELEC_COULOMB;
    progress.start = start = seconds_now();
    if (o.method == METHOD_DCS) {
        elec_dcs_params dp = {0};
        dp.scale = scale;
        dp.variant = o.variant;
        dp.gpus.count = o.gpus;
        if (!o.quiet) {
            dp.progress = show_progress;
            dp.progress_user = &progress;
        }
#ifdef ELEC_WITH_CUDA
        if (use_gpu) s = elec_cuda_dcs_map(&atoms, &lattice, &dp, map, &err);
        else
#endif
            s = elec_cpu_dcs_map(&atoms, &lattice, &dp, map, &err);
    } else if (o.method == METHOD_MSM) {
        elec_msm_params sp = {0};
        sp.scale = scale;
        sp.cutoff = o.msm_cutoff;
        sp.spacing = o.msm_spacing;
        sp.interpolation = msm_interpolation(&o); /* splitting: its default pair */
        sp.tolerance = o.tolerance;
        if (!o.quiet) {
            sp.progress = show_progress;
            sp.progress_user = &progress;
        }
#ifdef ELEC_WITH_CUDA
        if (use_gpu) s = elec_cuda_msm_map(&atoms, &lattice, &sp, map, &err);
        else
#endif
            s = elec_cpu_msm_map(&atoms, &lattice, &sp, map, &err);
    } else if (o.method == METHOD_CUTOFF) {
        elec_cutoff_params cp = {0};
        cp.scale = scale;
        cp.cutoff = o.msm_cutoff;
        cp.kind = o.shifted ? ELEC_CUTOFF_SHIFTED : ELEC_CUTOFF_MSM;
        if (!o.quiet) {
            cp.progress = show_progress;
            cp.progress_user = &progress;
        }
#ifdef ELEC_WITH_CUDA
        if (use_gpu) s = elec_cuda_cutoff_map(&atoms, &lattice, &cp, map, &err);
        else
#endif
            s = elec_cpu_cutoff_map(&atoms, &lattice, &cp, map, &err);
    } else {
        /* MDH at every lattice point: the points API over the lattice. */
        elec_mdh_params mp = {0};
        double *xyz = (double *)malloc(3 * points * sizeof *xyz);
        int i, j, k;
        mp.scale = scale;
        mp.kappa = o.kappa;
        mp.ionic_strength = o.ionic_strength;
        mp.temperature = o.temperature;
        if (!o.quiet) {
            mp.progress = show_progress;
            mp.progress_user = &progress;
        }
        if (!xyz) {
            s = ELEC_ERR_NO_MEMORY;
            snprintf(err.message, sizeof err.message, "no memory for %zu points", points);
        } else {
            p = 0;
            for (k = 0; k < lattice.dims[2]; k++)
                for (j = 0; j < lattice.dims[1]; j++)
                    for (i = 0; i < lattice.dims[0]; i++, p++)
                        elec_lattice_point(&lattice, i, j, k, xyz + 3 * p);
#ifdef ELEC_WITH_CUDA
            if (use_gpu) s = elec_cuda_mdh_points(&atoms, xyz, points, &mp, map, &err);
            else
#endif
                s = elec_cpu_mdh_points(&atoms, xyz, points, &mp, map, &err);
            free(xyz);
        }
    }
    seconds = seconds_now() - start;
    if (progress.shown) fprintf(stderr, "\n");
    if (s != ELEC_OK) {
        fprintf(stderr, "elecmap: %s\n", err.message);
        free(map);
        elec_structure_free(&mol);
        return 1;
    }
    for (p = 0; p < points; p++) {
        if (p == 0 || map[p] < lo) lo = map[p];
        if (p == 0 || map[p] > hi) hi = map[p];
    }
    s = elec_write_dx(o.output, &lattice, map,
                      o.units_kT ? "elecmap potential in kT/e" : "elecmap potential in kcal/(mol e)",
                      &err);
    if (s != ELEC_OK) {
        fprintf(stderr, "elecmap: %s: %s\n", o.output, err.message);
        free(map);
        elec_structure_free(&mol);
        return 1;
    }
    if (!o.quiet) {
        double evals = (double)points * (double)atoms.count;
        printf("elecmap: %s -> %s\n", o.demo ? "(built-in demo)" : o.input, o.output);
        double net = 0.0;
        for (p = 0; p < mol.count; p++) net += mol.charge[p];
        printf("  atoms      %zu (net charge %+.4f e)\n", atoms.count, net);
        printf("  lattice    %d x %d x %d = %zu points, spacing %g A, origin (%.3f, %.3f, %.3f)\n",
               lattice.dims[0], lattice.dims[1], lattice.dims[2], points,
               lattice.spacing[0], lattice.origin[0], lattice.origin[1], lattice.origin[2]);
        if (o.method == METHOD_DCS)
        {
            elec_dcs_params chosen = {0};
            chosen.variant = o.variant;
            printf("  method     DCS (direct Coulomb sum)%s%s\n", use_gpu ? ", GPU kernel " : "",
                   use_gpu ? elec_dcs_variant_name(elec_dcs_params_resolved(&chosen).variant) : "");
        }
        else if (o.method == METHOD_MSM) {
            elec_msm_params chosen = {0}, r;
            chosen.cutoff = o.msm_cutoff;
            chosen.spacing = o.msm_spacing;
            chosen.interpolation = msm_interpolation(&o);
            chosen.tolerance = o.tolerance;
            chosen.points_per_atom = (double)points / (double)(atoms.count ? atoms.count : 1);
            r = elec_msm_params_resolved(&chosen); /* what the map call chose */
            printf("  method     MSM (multilevel summation), cutoff %g A, spacing %g A, %s, "
                   "expected relative error %.1e\n", r.cutoff, r.spacing,
                   msm_order_name(r.interpolation), r.estimate.force);
        } else if (o.method == METHOD_CUTOFF) {
            printf("  method     cutoff map, %s within %g A\n",
                   o.shifted ? "shifted Coulomb" : "MSM short range",
                   o.msm_cutoff > 0 ? o.msm_cutoff : 12.0);
        } else
            printf("  method     MDH (multiple Debye-Hueckel), kappa %.4f /A\n",
                   o.kappa > 0 ? o.kappa
                               : elec_kappa_from_ionic_strength(o.ionic_strength, 78.54, o.temperature));
        printf("  device     %s\n", device_name);
        printf("  time       %.3f s, %.3e atom evaluations/s%s\n", seconds,
               evals / (seconds > 0 ? seconds : 1e-9),
               o.method == METHOD_MSM ? " (the direct sum's count; MSM does fewer)" : "");
        printf("  potential  min %.4g, max %.4g %s\n", lo, hi, o.units_kT ? "kT/e" : "kcal/(mol e)");
    }
    free(map);
    elec_structure_free(&mol);
    return 0;
}
