/* libFuzzer harness: elecsurf's command line.  The input is split at
   newlines into arguments; elecsurf_parse must accept or refuse them
   without undefined behaviour, and what it accepts must hold: two file
   names, an output kind and a surface chosen, every number in its range,
   no salt, projection or GEM with a map; and the ALPB parameters the run
   would make of it resolved, or refused with a reason, for two ions.
   Built without libpng (as make fuzz builds it) .png is refused, and with
   it --size and --view, so their ranges see only their defaults. */
#define ELECSURF_NO_MAIN
#include "examples/elecsurf.c"

#include "tests/fuzz/fuzz_args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts where an accepted option is out of the range elecsurf_parse
   promises. */
static void check_ranges(const options *o) {
    int level;
    if (!o->input || !o->output || o->surface == SURFACE_DEFAULT) abort();
    if (o->surface == SURFACE_FILE && !o->surface_file) abort();
    if (!(o->density == 0.0 || (o->density > 0.0 && o->density <= 1e4))) abort();
    if (!(o->probe == 0.0 || (o->probe > 0.0 && o->probe <= 1e4))) abort();
    if (!(o->alpb.eps_in >= 0.0 && o->alpb.eps_out >= 0.0 && o->alpb.salt >= 0.0 &&
          o->alpb.electrostatic_size >= 0.0 && isfinite(o->alpb.proj)))
        abort();
    if (!(o->temperature > 0.0 && isfinite(o->temperature))) abort();
    if (o->size < 64 || o->size > 8192 || o->view_axis < 0 || o->view_axis > 2) abort();
    if (o->view_sign != 1 && o->view_sign != -1) abort();
    if (!(o->map_spacing > 0.0) || !(o->map_padding >= 0.0) || o->max_points < 1) abort();
    if (!(o->range >= 0.0) || !(o->hcp_tolerance >= 0.0)) abort();
    for (level = 0; level < ELEC_HCP_LEVELS; level++)
        if (!(o->alpb.hcp_h[level] >= 0.0)) abort();
    if (o->kind == OUTPUT_MAP && (o->alpb.salt > 0.0 || o->alpb.proj != 0.0 ||
                                  o->alpb.gem_compat))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char two_ions[] =
        "ATOM      1  NA  NA      1       0.000   0.000   0.000  1.0000 1.8680\n"
        "ATOM      2  CL  CL      2       4.000   0.000   0.000 -1.0000 2.2700\n";
    char *text, *argv[FUZZ_MAX_ARGS + 2];
    int argc = fuzz_args(data, size, "elecsurf", &text, argv);
    options o;
    (void)elecsurf_run; /* the tool's main path, not fuzzed here */
    if (elecsurf_parse(argc, argv, &o, fuzz_quiet()) == PARSE_RUN) {
        elec_structure mol;
        elec_hcp hcp;
        elec_alpb_params resolved;
        elec_error err;
        check_ranges(&o);
        alpb_units_of(&o); /* as elecsurf_run makes them */
        if (elec_parse_pqr(two_ions, sizeof two_ions - 1, &mol, &err) != ELEC_OK ||
            elec_hcp_from_structure(&mol, &hcp, &err) != ELEC_OK)
            abort();
        if (elec_alpb_params_resolve(&o.alpb, &hcp, &resolved, &err) == ELEC_OK) {
            if (!isfinite(resolved.scale) || !isfinite(resolved.kappa) ||
                !(resolved.eps_in > 0.0) || !(resolved.eps_out > 0.0))
                abort();
        } else if (err.message[0] == '\0') {
            abort();
        }
        elec_hcp_free(&hcp);
        elec_structure_free(&mol);
    }
    free(text);
    return 0;
}
