/* libFuzzer harness: the MRC reader (elec_parse_mrc, what elec_read_mrc
   runs on a file's bytes) on arbitrary bytes.  A map it accepts must have
   a valid lattice, exactly the values its bytes hold (a 1024-byte header,
   then four bytes a value: the check that keeps a header's counts from
   allocating gigabytes), and only finite floats. */
#define ELEC_IMPLEMENTATION
#include "elec.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    elec_lattice lattice;
    float *map = (float *)&lattice; /* must become NULL on failure */
    elec_error err;
    size_t n, i;
    if (elec_parse_mrc(data, size, &lattice, &map, &err) != ELEC_OK) {
        if (map != NULL || err.message[0] == '\0') abort();
        return 0;
    }
    if (!map || elec_lattice_check(&lattice, &err) != ELEC_OK) abort();
    n = elec_lattice_size(&lattice);
    if (n == 0 || size < 1024 || n > (size - 1024) / 4) abort();
    for (i = 0; i < n; i++)
        if (!isfinite(map[i])) abort();
    elec_free(map);
    return 0;
}
