/* libFuzzer harness: the point-list reader (elec_parse_points, what
   elec_read_points and elecsurf --surface FILE run on a file's text) on
   arbitrary bytes.  A list it accepts has at least one point, no more than
   the text could hold (two bytes a point), finite coordinates, and, where
   it has normals, unit ones (they are renormalised); a refusal says why
   and leaves the surface empty. */
#define ELEC_IMPLEMENTATION
#include "elec.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    elec_surface s;
    elec_error err;
    size_t i;
    int axis;
    if (elec_parse_points((const char *)data, size, &s, &err) != ELEC_OK) {
        if (s.count != 0 || s.xyz || s.normal || err.message[0] == '\0') abort();
        return 0;
    }
    if (s.count == 0 || s.count > size / 2 + 1 || !s.xyz || s.triangle_count != 0) abort();
    for (i = 0; i < s.count; i++) {
        double norm2 = 0.0;
        for (axis = 0; axis < 3; axis++) {
            if (!isfinite(s.xyz[3 * i + axis])) abort();
            if (s.normal) norm2 += s.normal[3 * i + axis] * s.normal[3 * i + axis];
        }
        if (s.normal && !(fabs(norm2 - 1.0) < 1e-9)) abort();
    }
    elec_surface_free(&s);
    return 0;
}
