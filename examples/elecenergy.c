/* elecenergy - the electrostatic energy of a PQR structure, in kcal/mol.

   elecenergy [options] input.pqr

     --method direct|ewald|spme   the plain non-periodic pair sum, the exact
                                  Ewald sum, or SPME (default spme)
     --box LX LY LZ               periodic box in A (default: CRYST1)
     --cutoff RC                  real-space cutoff (A)
     --tolerance T                the accuracy knob: relative RMS force error
                                  against exact Ewald (SPME 5e-4, Ewald 1e-12)
     --order N                    SPME B-spline order 4..8 (default: chosen)
     --grid K1 K2 K3              SPME grid (default: chosen, FFT sizes)
     --gpu | --cpu                where SPME runs (default: GPU when present)
     --forces FILE                write the forces, kcal/(mol A), one atom a line
     --json                       one JSON object (field "total" = the energy)

   Built as C for the CPU, or by nvcc (-x cu -DELEC_WITH_CUDA) with the GPU
   SPME, which is then the default where a GPU is present.

   elecenergy_parse reads the command line and does nothing else (no file
   is touched), so that tests/fuzz/fuzz_elecenergy_options.c can call it;
   define ELECENERGY_NO_MAIN to include this file without its main.  The
   forces file is checked before the computation (writable, not the input)
   and written whole or not at all (elec_output_open). */
#define _POSIX_C_SOURCE 200809L
#define ELEC_ALL_IMPLEMENTATION
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

typedef enum { METHOD_DIRECT, METHOD_EWALD, METHOD_SPME } energy_method;

typedef struct options {
    const char *input, *forces_path;
    energy_method method;
    int has_box, gpu, cpu, json, order, grid[3];
    double box[3], cutoff, tolerance;
} options;

static void usage(FILE *out) {
    fprintf(out,
"usage: elecenergy [options] input.pqr\n"
"  --method direct|ewald|spme   plain pair sum, exact Ewald, or SPME (default)\n"
"  --box LX LY LZ               periodic box in A (default: the CRYST1 record)\n"
"  --cutoff RC                  real-space cutoff in A (default: chosen; SPME at most half the box)\n"
"  --tolerance T                relative RMS force error against exact Ewald (SPME 5e-4, Ewald 1e-12):\n"
"                               chooses what is not given (alpha, cutoff, order, grid)\n"
"  --order N                    SPME B-spline order, 4 to 8 (default: chosen)\n"
"  --grid K1 K2 K3              SPME grid (default: chosen, sizes 2^a 3^b 5^c 7^d)\n"
"  --gpu | --cpu                SPME on the GPU (default when present) or the CPU\n"
"  --forces FILE                write forces in kcal/(mol A): record fx fy fz, where\n"
"                               record counts the input's atom records from 1 (the\n"
"                               summary goes to stderr where FILE is stdout)\n"
"  --json                       print one JSON object; \"total\" is the energy\n"
"  --version                    elec's version and what this build has\n"
"Energies are in kcal/mol (Coulomb constant 332.0636 kcal A/(mol e^2)).\n");
}

/* What elecenergy_parse found: run, print the help or the version, or a
   usage error (its message already written). */
enum { PARSE_RUN, PARSE_HELP, PARSE_ERROR, PARSE_VERSION };

/* Parses argv into o, writing any complaint to messages; touches no file
   and never exits.  Integer options are checked as numbers in range before
   they become ints. */
static int elecenergy_parse(int argc, char **argv, options *o, FILE *messages) {
    int i, axis;
    memset(o, 0, sizeof *o);
    o->method = METHOD_SPME;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        int more = argc - i - 1;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            return PARSE_HELP;
        } else if (!strcmp(a, "--version")) {
            return PARSE_VERSION;
        } else if (!strcmp(a, "--method") && more >= 1) {
            a = argv[++i];
            if (!strcmp(a, "direct")) o->method = METHOD_DIRECT;
            else if (!strcmp(a, "ewald")) o->method = METHOD_EWALD;
            else if (!strcmp(a, "spme")) o->method = METHOD_SPME;
            else {
                fprintf(messages, "elecenergy: unknown method '%s'\n", a);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--box") && more >= 3) {
            for (axis = 0; axis < 3; axis++)
                if (!cli_number(argv[++i], &o->box[axis]) || !(o->box[axis] > 0.0)) {
                    fprintf(messages, "elecenergy: --box: '%s' is not a positive length\n",
                            argv[i]);
                    return PARSE_ERROR;
                }
            o->has_box = 1;
        } else if (!strcmp(a, "--cutoff") && more >= 1) {
            if (!cli_number(argv[++i], &o->cutoff) || o->cutoff <= 0) {
                fprintf(messages, "elecenergy: --cutoff: '%s' is not a positive length\n",
                        argv[i]);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--tolerance") && more >= 1) {
            if (!cli_number(argv[++i], &o->tolerance) ||
                !(o->tolerance > 0 && o->tolerance < 1)) {
                fprintf(messages, "elecenergy: --tolerance: '%s' must lie in (0, 1)\n",
                        argv[i]);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--order") && more >= 1) {
            if (!cli_count(argv[++i], 4, ELEC_MAX_SPLINE_ORDER, &o->order)) {
                fprintf(messages, "elecenergy: --order: '%s' is not an order of 4 to %d\n",
                        argv[i], ELEC_MAX_SPLINE_ORDER);
                return PARSE_ERROR;
            }
        } else if (!strcmp(a, "--grid") && more >= 3) {
            for (axis = 0; axis < 3; axis++)
                if (!cli_count(argv[++i], 1, 1e6, &o->grid[axis])) {
                    fprintf(messages, "elecenergy: --grid: '%s' is not a count of 1 to "
                                      "1000000\n", argv[i]);
                    return PARSE_ERROR;
                }
        } else if (!strcmp(a, "--gpu")) {
            o->gpu = 1;
        } else if (!strcmp(a, "--cpu")) {
            o->cpu = 1;
        } else if (!strcmp(a, "--forces") && more >= 1) {
            o->forces_path = cli_output_name(argv[++i]);
        } else if (!strcmp(a, "--json")) {
            o->json = 1;
        } else if (a[0] == '-' && a[1] != '\0') {
            fprintf(messages, "elecenergy: unknown option '%s', or it lacks its value(s)\n", a);
            return PARSE_ERROR;
        } else if (!o->input) {
            o->input = cli_input_name(a);
        } else {
            fprintf(messages, "elecenergy: one input file only ('%s')\n", a);
            return PARSE_ERROR;
        }
    }
    if (!o->input) {
        usage(messages);
        return PARSE_ERROR;
    }
    if (o->gpu && o->cpu) {
        fprintf(messages, "elecenergy: --gpu and --cpu exclude each other\n");
        return PARSE_ERROR;
    }
    if (o->gpu && o->method != METHOD_SPME) {
        fprintf(messages, "elecenergy: --gpu: only SPME runs on the GPU (the direct sum and "
                          "exact Ewald are the CPU's references)\n");
        return PARSE_ERROR;
    }
    /* an option the method would not read is refused, not ignored (the
       direct sum once printed its non-periodic total beside --box) */
    if (o->method == METHOD_DIRECT && (o->has_box || o->cutoff > 0 || o->tolerance > 0)) {
        fprintf(messages, "elecenergy: %s is for ewald and spme: --method direct, the plain "
                          "non-periodic pair sum, would ignore it\n",
                o->has_box ? "--box" : o->cutoff > 0 ? "--cutoff" : "--tolerance");
        return PARSE_ERROR;
    }
    if (o->method != METHOD_SPME && (o->order || o->grid[0])) {
        fprintf(messages, "elecenergy: %s is SPME's mesh: --method %s would ignore it\n",
                o->order ? "--order" : "--grid",
                o->method == METHOD_EWALD ? "ewald (the exact sum)" : "direct");
        return PARSE_ERROR;
    }
    return PARSE_RUN;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The forces, one atom a line, whole or not at all.  Each line starts with the
   atom's record in the input counted from 1, as messages name "the file's atom
   record N" (their "atom N (counted from 0)" is the library's index). */
static elec_status write_forces(const char *path, const double *f, size_t n,
                                elec_error *err) {
    elec_output *out;
    size_t i;
    elec_status s = elec_output_open(path, &out, err);
    if (s != ELEC_OK) return s;
    elec_output_printf(out, "# record fx fy fz (kcal/(mol A)); record: the input's atom "
                            "records from 1\n");
    for (i = 0; i < n; i++)
        elec_output_printf(out, "%zu %.10e %.10e %.10e\n", i + 1, f[3 * i], f[3 * i + 1],
                           f[3 * i + 2]);
    return elec_output_commit(out, err);
}

static int elecenergy_run(const options *opt) {
    options o = *opt;
    elec_structure mol;
    elec_atoms atoms;
    elec_box box;
    elec_ewald_terms t;
    elec_error err;
    elec_status s = ELEC_OK;
    double *forces = NULL, seconds, alpha = 0.0, cutoff = 0.0, tolerance = 0.0;
    elec_error_estimate estimate;
    int grid[3] = {0, 0, 0}, order = 0, kmax[3] = {0, 0, 0};
    const char *device = "CPU", *method_name;
    FILE *report;

    if (o.forces_path && (s = elec_output_check(o.forces_path, o.input, &err)) != ELEC_OK) {
        fprintf(stderr, "elecenergy: --forces: %s\n", err.message);
        return s == ELEC_ERR_INVALID_ARG ? 2 : 1;
    }
    if (o.forces_path) cli_remove_temps_on_signal(o.forces_path);
    /* JSON among the forces' lines would be neither */
    if (o.json && o.forces_path && cli_report_stream(o.forces_path) == stderr) {
        fprintf(stderr, "elecenergy: --json prints to stdout, where --forces '%s' writes: "
                        "give --forces a file\n", o.forces_path);
        return 2;
    }
    if ((s = elec_read_pqr(o.input, &mol, &err)) != ELEC_OK) {
        fprintf(stderr, "elecenergy: %s: %s\n", o.input, err.message);
        return 1;
    }
    cli_warn_if_pdb("elecenergy", o.input, &mol);
    atoms = elec_structure_atoms(&mol);
    memset(&t, 0, sizeof t);
    memset(&estimate, 0, sizeof estimate);
    if (o.method != METHOD_DIRECT) {
        if (o.has_box) {
            memcpy(box.length, o.box, sizeof box.length);
        } else if (elec_structure_box(&mol, &box, &err) != ELEC_OK) {
            fprintf(stderr, "elecenergy: %s: no periodic box (%s); give one with --box, "
                            "or --method direct for a molecule alone in space\n",
                    o.input, err.message);
            elec_structure_free(&mol);
            return 1;
        }
    }
    if (o.forces_path) {
        forces = (double *)malloc((3 * mol.count + 1) * sizeof *forces);
        if (!forces) {
            fprintf(stderr, "elecenergy: out of memory\n");
            elec_structure_free(&mol);
            return 1;
        }
    }

    seconds = now();
    if (o.method == METHOD_DIRECT) {
        method_name = "direct";
        s = elec_cpu_coulomb_energy(&atoms, ELEC_COULOMB, &t.total, forces, &err);
        t.real = t.total;
    } else if (o.method == METHOD_EWALD) {
        elec_ewald_params p = {0}, r;
        method_name = "ewald";
        p.scale = ELEC_COULOMB;
        p.cutoff = o.cutoff;
        p.tolerance = o.tolerance;
        s = elec_ewald_params_resolve(&p, &box, &atoms, &r, &err);
        if (s == ELEC_OK) s = elec_cpu_ewald(&atoms, &box, &r, &t, forces, NULL, &err);
        estimate = r.estimate;
        tolerance = r.tolerance;
        alpha = r.alpha;
        cutoff = r.cutoff;
        memcpy(kmax, r.kmax, sizeof kmax);
    } else {
        elec_spme_params p = {0}, r;
        int use_gpu = 0;
        method_name = "spme";
        p.scale = ELEC_COULOMB;
        p.cutoff = o.cutoff;
        p.tolerance = o.tolerance;
        p.order = o.order;
        memcpy(p.grid, o.grid, sizeof p.grid);
        s = elec_spme_params_resolve(&p, &box, &atoms, &r, &err);
#ifdef ELEC_WITH_CUDA
        use_gpu = !o.cpu && elec_cuda_device_count() > 0;
#endif
        if (o.gpu && !use_gpu) {
            fprintf(stderr, "elecenergy: --gpu: %s\n",
#ifdef ELEC_WITH_CUDA
                    "no CUDA device is present"
#else
                    "this elecenergy was built without CUDA (leave --gpu out to compute "
                    "on the CPU)"
#endif
            );
            free(forces);
            elec_structure_free(&mol);
            return 1;
        }
        if (s == ELEC_OK) {
#ifdef ELEC_WITH_CUDA
            if (use_gpu) {
                device = "GPU";
                s = elec_cuda_spme(&atoms, &box, &r, &t, forces, NULL, &err);
            } else
#endif
                s = elec_cpu_spme(&atoms, &box, &r, &t, forces, NULL, &err);
        }
        estimate = r.estimate;
        tolerance = r.tolerance;
        alpha = r.alpha;
        cutoff = r.cutoff;
        order = r.order;
        memcpy(grid, r.grid, sizeof grid);
    }
    seconds = now() - seconds;
    if (s != ELEC_OK) {
        fprintf(stderr, "elecenergy: %s\n", err.message);
        cli_name_atoms("elecenergy", o.input, &mol, &err);
        free(forces);
        elec_structure_free(&mol);
        return 1;
    }
    if (forces && write_forces(o.forces_path, forces, mol.count, &err) != ELEC_OK) {
        fprintf(stderr, "elecenergy: --forces: %s\n", err.message);
        free(forces);
        elec_structure_free(&mol);
        return 1;
    }

    /* the summary goes to stderr where the forces take stdout (--json is
       refused there: elecenergy_run's start) */
    report = o.forces_path ? cli_report_stream(o.forces_path) : stdout;
    if (o.json) {
        /* the file name is the one string not ours: escaped */
        fprintf(report, "{\"input\": ");
        cli_json_string(report, o.input);
        fprintf(report, ", \"atoms\": %zu, \"method\": \"%s\", \"device\": \"%s\", "
                "\"units\": \"kcal/mol\", \"total\": %.10f, \"terms\": {\"real\": %.10f, "
                "\"reciprocal\": %.10f, \"self\": %.10f, \"excluded\": %.10f, "
                "\"background\": %.10f}, \"parameters\": {",
                mol.count, method_name, device, t.total, t.real, t.reciprocal,
                t.self, t.excluded, t.background);
        if (o.method == METHOD_DIRECT)
            fprintf(report, "\"coulomb_constant\": %.4f", ELEC_COULOMB);
        else
            fprintf(report, "\"box\": [%.6f, %.6f, %.6f], \"cutoff\": %.6f, \"alpha\": %.10f",
                    box.length[0], box.length[1], box.length[2], cutoff, alpha);
        if (o.method == METHOD_EWALD)
            fprintf(report, ", \"kmax\": [%d, %d, %d]", kmax[0], kmax[1], kmax[2]);
        if (o.method == METHOD_SPME)
            fprintf(report, ", \"order\": %d, \"grid\": [%d, %d, %d]", order, grid[0],
                    grid[1], grid[2]);
        if (o.method != METHOD_DIRECT)
            /* what the tolerance promised and what the choice should give */
            fprintf(report, ", \"tolerance\": %.3e}, \"estimate\": {\"force_error\": %.3e, "
                    "\"force_error_real\": %.3e, \"force_error_reciprocal\": %.3e, "
                    "\"force_rms\": %.6e, \"energy_error\": %.3e, "
                    "\"energy_error_relative\": %.3e, \"gpu_float_floor\": %.3e",
                    tolerance, estimate.force, estimate.force_real,
                    estimate.force_reciprocal, estimate.force_rms, estimate.energy,
                    t.total != 0.0 ? estimate.energy / fabs(t.total) : 0.0,
                    estimate.float_floor);
        fprintf(report, "}, \"seconds\": %.6f}\n", seconds);
    } else {
        fprintf(report, "elecenergy: %s, %zu atoms, method %s on the %s\n", o.input, mol.count,
                method_name, device);
        if (o.method != METHOD_DIRECT) {
            fprintf(report, "  box %.4f x %.4f x %.4f A (%s), cutoff %.4f A, alpha %.6f /A",
                    box.length[0], box.length[1], box.length[2],
                    o.has_box ? "--box" : "the CRYST1 cell", cutoff, alpha);
            if (o.method == METHOD_SPME)
                fprintf(report, ", order %d, grid %d x %d x %d", order, grid[0], grid[1], grid[2]);
            if (o.method == METHOD_EWALD)
                fprintf(report, ", kmax %d %d %d", kmax[0], kmax[1], kmax[2]);
            fprintf(report, "\n  real %.6f  reciprocal %.6f  self %.6f  excluded %.6f  "
                    "background %.6f\n", t.real, t.reciprocal, t.self, t.excluded,
                    t.background);
            fprintf(report, "  tolerance %.2e: estimated force error %.2e (relative RMS), energy "
                    "error %.2e kcal/mol (%.1e relative)\n", tolerance, estimate.force,
                    estimate.energy, t.total != 0.0 ? estimate.energy / fabs(t.total) : 0.0);
        }
        fprintf(report, "  total %.6f kcal/mol (%.3f s)\n", t.total, seconds);
    }
    free(forces);
    elec_structure_free(&mol);
    return 0;
}

#ifndef ELECENERGY_NO_MAIN
int main(int argc, char **argv) {
    options o;
    cli_check_stdout_at_exit("elecenergy");
    switch (elecenergy_parse(argc, argv, &o, stderr)) {
    case PARSE_HELP: usage(stdout); return 0;
    case PARSE_VERSION: cli_version(stdout, "elecenergy", NULL, 0); return 0;
    case PARSE_ERROR: return 2;
    default: return elecenergy_run(&o);
    }
}
#endif
