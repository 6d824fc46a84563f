/* libFuzzer harness: elecmap's command line.  The input is split at
   newlines into arguments; elecmap_parse must accept or refuse them
   without undefined behaviour (every integer option is range-checked as a
   double before it becomes an int), and what it accepts must be usable:
   the lattice it describes around two atoms is built and checked against
   --max-points, and the cost estimate of the map is a number. */
#define ELECMAP_NO_MAIN
#include "examples/elecmap.c"

#include "tests/fuzz/fuzz_args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text, *argv[FUZZ_MAX_ARGS + 2];
    int argc = fuzz_args(data, size, "elecmap", &text, argv);
    size_t i;
    options o;
    (void)elecmap_run; /* the tool's main path, not fuzzed here */
    if (elecmap_parse(argc, argv, &o, fuzz_quiet()) == PARSE_RUN) {
        double xyz[6] = {-3.0, 0.5, 1.0, 4.0, -2.0, 2.5}, q[2] = {1.0, -1.0};
        elec_atoms atoms = elec_atoms_from_xyz(2, xyz, q, NULL);
        elec_lattice lattice;
        elec_error err;
        if (!o.output || (o.demo ? o.input != NULL : o.input == NULL)) abort();
        if (!(o.spacing > 0.0) || !isfinite(o.spacing) || !(o.padding >= 0.0) ||
            !isfinite(o.padding) || !(o.temperature > 0.0) || o.max_points < 1 ||
            (o.max_work != 0.0 && !(o.max_work >= 1.0)))
            abort();
        if (o.msm_order != 0 && o.msm_order != 4 && o.msm_order != 6 &&
            o.msm_order != 8 && o.msm_order != 10)
            abort();
        if (o.gpus < ELEC_ALL_GPUS || o.gpus > 64 ||
            (int)o.variant >= (int)ELEC_DCS_VARIANT_COUNT)
            abort();
        if (o.explicit_dims)
            for (i = 0; i < 3; i++)
                if (o.dims[i] < 1 || o.dims[i] > 100000) abort();
        if (build_lattice(&o, &atoms, &lattice, &err) == ELEC_OK) {
            map_cost c = estimate_cost(&atoms, &lattice, &o, &cpu_rates);
            if (elec_lattice_size(&lattice) > o.max_points) abort();
            /* an absurd --cutoff may make MSM's estimate infinite: never NaN */
            if (!(c.direct >= 0.0) || !(c.msm >= 0.0)) abort();
        }
    }
    free(text);
    return 0;
}
