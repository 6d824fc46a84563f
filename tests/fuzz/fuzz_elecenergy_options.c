/* libFuzzer harness: elecenergy's command line.  The input is split at
   newlines into arguments; elecenergy_parse must accept or refuse them
   without undefined behaviour (--order and --grid are range-checked as
   doubles before they become ints), and what it accepts must hold: orders
   4 to 8, grids of 1 to 10^6, and the Ewald and SPME parameters it gives
   resolved, or refused with a reason, for a box of its --box or 30 A. */
#define ELECENERGY_NO_MAIN
#include "examples/elecenergy.c"

#include "tests/fuzz/fuzz_args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text, *argv[FUZZ_MAX_ARGS + 2];
    int argc = fuzz_args(data, size, "elecenergy", &text, argv), axis;
    options o;
    (void)elecenergy_run; /* the tool's main path, not fuzzed here */
    if (elecenergy_parse(argc, argv, &o, fuzz_quiet()) == PARSE_RUN) {
        elec_box box = {{30.0, 30.0, 30.0}};
        double xyz[6] = {1.0, 2.0, 3.0, 4.0, 5.0, 6.5}, q[2] = {1.0, -1.0};
        elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL); /* two ions */
        elec_spme_params sp = {0}, sr;
        elec_ewald_params ep = {0}, er;
        elec_error err;
        if (!o.input || (o.gpu && o.cpu)) abort();
        if (o.order != 0 && (o.order < 4 || o.order > ELEC_MAX_SPLINE_ORDER)) abort();
        for (axis = 0; axis < 3; axis++)
            if (o.grid[axis] < 0 || o.grid[axis] > 1000000) abort();
        if (o.cutoff < 0.0 || o.tolerance < 0.0 || o.tolerance >= 1.0) abort();
        if (o.has_box) memcpy(box.length, o.box, sizeof box.length);
        sp.cutoff = ep.cutoff = o.cutoff;
        sp.tolerance = ep.tolerance = o.tolerance;
        sp.order = o.order;
        memcpy(sp.grid, o.grid, sizeof sp.grid);
        if (elec_spme_params_resolve(&sp, &box, &atoms, &sr, &err) != ELEC_OK &&
            err.message[0] == '\0')
            abort();
        if (elec_ewald_params_resolve(&ep, &box, &atoms, &er, &err) != ELEC_OK &&
            err.message[0] == '\0')
            abort();
    }
    free(text);
    return 0;
}
