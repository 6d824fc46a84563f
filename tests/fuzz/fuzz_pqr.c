/* libFuzzer harness: the PQR parser (elec_parse_pqr, what elec_read_pqr
   runs on a file's text) on arbitrary bytes.  Besides the sanitizers'
   reports, a structure it accepts must hold what the reader promises:
   atoms, finite coordinates and charges, radii zero or positive, and a
   CRYST1 box only when orthorhombic and positive. */
#define ELEC_IMPLEMENTATION
#include "elec.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    elec_structure s;
    elec_error err;
    elec_box box;
    size_t i;
    if (elec_parse_pqr((const char *)data, size, &s, &err) != ELEC_OK) {
        if (err.message[0] == '\0' || s.count != 0 || s.xyz) abort();
        return 0;
    }
    if (s.count == 0 || !s.xyz || !s.charge || !s.radius || !s.label) abort();
    for (i = 0; i < s.count; i++) {
        if (!isfinite(s.xyz[3 * i]) || !isfinite(s.xyz[3 * i + 1]) ||
            !isfinite(s.xyz[3 * i + 2]) || !isfinite(s.charge[i]) ||
            !(s.radius[i] >= 0.0) || !isfinite(s.radius[i]))
            abort();
        if (s.label[i].name[sizeof s.label[i].name - 1] != '\0' ||
            s.label[i].residue_name[sizeof s.label[i].residue_name - 1] != '\0')
            abort();
    }
    if (elec_structure_box(&s, &box, &err) == ELEC_OK)
        for (i = 0; i < 3; i++)
            if (!(box.length[i] > 0.0)) abort();
    {
        /* the atoms as the methods see them pass the methods' check */
        elec_atoms atoms = elec_structure_atoms(&s);
        if (elec_atoms_check(&atoms, 1, &err) != ELEC_OK) abort();
    }
    elec_structure_free(&s);
    return 0;
}
