/* libFuzzer harness: the MSMS reader (elec_parse_msms, what elec_read_msms
   and elecsurf --surface FILE.vert run on the files' texts) on arbitrary
   bytes: the .vert text up to the first form feed, the .face text after
   it (no form feed: no .face).  A surface it accepts has at least one
   vertex, no more than the .vert text could hold (two bytes a record),
   finite positions and unit normals, and triangles (no more than the .face
   text could hold) whose indices are its vertices; a refusal says why and
   leaves the surface empty. */
#define ELEC_IMPLEMENTATION
#include "elec.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_accepted(const elec_surface *s, size_t vert_size, size_t face_size,
                           int has_face) {
    size_t i;
    int axis;
    if (s->count == 0 || s->count > vert_size / 2 + 1 || !s->xyz || !s->normal) abort();
    for (i = 0; i < s->count; i++) {
        double norm2 = 0.0;
        for (axis = 0; axis < 3; axis++) {
            if (!isfinite(s->xyz[3 * i + axis])) abort();
            norm2 += s->normal[3 * i + axis] * s->normal[3 * i + axis];
        }
        if (!(fabs(norm2 - 1.0) < 1e-9)) abort();
    }
    if (!has_face) {
        if (s->triangle_count != 0 || s->triangles) abort();
        return;
    }
    if (s->triangle_count == 0 || s->triangle_count > face_size / 2 + 1 || !s->triangles)
        abort();
    for (i = 0; i < 3 * s->triangle_count; i++)
        if (s->triangles[i] >= s->count) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    const char *feed = size ? (const char *)memchr(text, '\f', size) : NULL;
    const size_t vert_size = feed ? (size_t)(feed - text) : size;
    const char *face = feed ? feed + 1 : NULL;
    const size_t face_size = feed ? size - vert_size - 1 : 0;
    elec_surface s;
    elec_error err;
    if (elec_parse_msms(text, vert_size, face, face_size, &s, &err) != ELEC_OK) {
        if (s.count != 0 || s.xyz || s.normal || s.triangles || err.message[0] == '\0')
            abort();
        return 0;
    }
    check_accepted(&s, vert_size, face_size, face != NULL);
    elec_surface_free(&s);
    return 0;
}
