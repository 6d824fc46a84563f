/* tests/test_maps.c - maps in MRC2014 and gzipped OpenDX: round trips, the
   MRC header word by word against the MRC2014 specification, MRC and DX
   holding the same values at the same coordinates, the variants other
   writers produce (NXSTART set, axes permuted, big endian, an extended
   header), gzip's round trips and what is refused (truncated files,
   headers claiming more than the file holds, other modes, gzip bombs).

   The files other writers produce are made here by this file's own writer
   (mrc_file below), and gzip data by zlib's gzopen/gzwrite (not the
   library's deflate stage); gzip(1) reads elecmap's .dx.gz in
   tests/test_cli.sh.  Built with and without zlib (make HAVE_ZLIB=): the
   gzip tests skip, saying so, and the refusal without zlib runs instead.
   Run from the repository root: temporary files go to build/. */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include "tests/counted_malloc.h"
/* 4 MiB: small enough that a gzip bomb reaches it in a test, large
   enough for every map below */
#define ELEC_MAX_INPUT_BYTES ((size_t)1 << 22)
#define ELEC_IMPLEMENTATION
#include "elec.h"
#include "tests/test.h"
#include "tests/files.h" /* scratch_dir, write_file, names_in */

#include <stdint.h>
#ifdef ELEC_WITH_ZLIB
#include <zlib.h>
#endif

/* ------------------------------------------------------------- helpers */

/* The whole file (caller frees), its length in *length; NULL on failure. */
static unsigned char *read_bytes(const char *path, size_t *length) {
    FILE *f = fopen(path, "rb");
    unsigned char *data = NULL;
    long size;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        data = (unsigned char *)malloc((size_t)size + 1);
        if (data && fread(data, 1, (size_t)size, f) != (size_t)size) {
            free(data);
            data = NULL;
        }
        *length = (size_t)size;
    }
    fclose(f);
    return data;
}

/* Word w (counted from 1, as the specification counts) of a
   little-endian header, as an integer and as a float. */
static long word_int(const unsigned char *h, int w) {
    const unsigned char *p = h + 4 * (w - 1);
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                 (uint32_t)p[3] << 24;
    return (long)(int32_t)v;
}
static float word_float(const unsigned char *h, int w) {
    const unsigned char *p = h + 4 * (w - 1);
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                 (uint32_t)p[3] << 24;
    float f;
    memcpy(&f, &v, 4);
    return f;
}

/* An MRC file as another writer makes it, byte order big or little: the
   header's words given as 56 (int or float) values, then the extended
   header's nsymbt bytes, then values (count of them) in the order given. */
typedef struct mrc_words {
    int is_float[57];
    long i[57];
    float f[57];
} mrc_words;

static void put32(unsigned char *p, uint32_t v, int big) {
    int b;
    for (b = 0; b < 4; b++) p[big ? 3 - b : b] = (unsigned char)(v >> (8 * b) & 0xff);
}

static void set_int(mrc_words *w, int word, long v) {
    w->is_float[word] = 0;
    w->i[word] = v;
}
static void set_float(mrc_words *w, int word, float v) {
    w->is_float[word] = 1;
    w->f[word] = v;
}

static unsigned char *mrc_file(const mrc_words *w, int big, const unsigned char stamp[4],
                               size_t nsymbt, const float *values, size_t count,
                               size_t *length) {
    unsigned char *data;
    int word;
    size_t k;
    *length = 1024 + nsymbt + 4 * count;
    data = (unsigned char *)calloc(*length, 1);
    if (!data) return NULL;
    for (word = 1; word <= 56; word++) {
        uint32_t v;
        if (word == 53 || word == 54) continue;
        if (w->is_float[word]) memcpy(&v, &w->f[word], 4);
        else v = (uint32_t)w->i[word];
        put32(data + 4 * (word - 1), v, big);
    }
    memcpy(data + 208, "MAP ", 4);
    memcpy(data + 212, stamp, 4);
    for (k = 0; k < nsymbt; k++) data[1024 + k] = (unsigned char)(k * 7 + 3);
    for (k = 0; k < count; k++) {
        uint32_t v;
        memcpy(&v, &values[k], 4);
        put32(data + 1024 + nsymbt + 4 * k, v, big);
    }
    return data;
}

/* The words of a plain mode 2 map of counts n, spacing 1, angles 90,
   axes 1 2 3, origin and starts zero. */
static mrc_words mrc_plain(const int n[3]) {
    mrc_words w;
    int a;
    memset(&w, 0, sizeof w);
    for (a = 0; a < 3; a++) {
        set_int(&w, 1 + a, n[a]);
        set_int(&w, 8 + a, n[a]);
        set_float(&w, 11 + a, (float)n[a]);
        set_float(&w, 14 + a, 90.0f);
        set_int(&w, 17 + a, 1 + a);
        set_float(&w, 50 + a, 0.0f);
    }
    set_int(&w, 4, 2);
    set_int(&w, 23, 1);
    set_int(&w, 28, 20140);
    return w;
}

static const unsigned char little_stamp[4] = {0x44, 0x44, 0, 0};
static const unsigned char big_stamp[4] = {0x11, 0x11, 0, 0};

/* A map with a distinct value at every point: 100 i + 10 j + k - 55.5 */
static float point_value(int i, int j, int k) {
    return (float)(100 * i + 10 * j + k) - 55.5f;
}

static elec_lattice lattice_of(int nx, int ny, int nz, double h0, double h1, double h2,
                               double o0, double o1, double o2) {
    elec_lattice l;
    l.dims[0] = nx;
    l.dims[1] = ny;
    l.dims[2] = nz;
    l.spacing[0] = h0;
    l.spacing[1] = h1;
    l.spacing[2] = h2;
    l.origin[0] = o0;
    l.origin[1] = o1;
    l.origin[2] = o2;
    return l;
}

static float *map_of(const elec_lattice *l) {
    float *map = (float *)malloc(elec_lattice_size(l) * sizeof *map);
    int i, j, k;
    if (!map) return NULL;
    for (k = 0; k < l->dims[2]; k++)
        for (j = 0; j < l->dims[1]; j++)
            for (i = 0; i < l->dims[0]; i++)
                map[i + l->dims[0] * (j + l->dims[1] * k)] = point_value(i, j, k);
    return map;
}

static int same_lattice(const elec_lattice *a, const elec_lattice *b) {
    int axis;
    for (axis = 0; axis < 3; axis++)
        if (a->dims[axis] != b->dims[axis] || a->origin[axis] != b->origin[axis] ||
            a->spacing[axis] != b->spacing[axis])
            return 0;
    return 1;
}

/* -------------------------------------------------------------- MRC */

TEST(mrc_round_trip_is_exact_where_the_lattice_is_in_floats) {
    /* counts x spacing and the origin are floats exactly: the lattice and
       every value come back bit for bit */
    char *dir = scratch_dir(), path[256];
    elec_lattice lat = lattice_of(5, 4, 3, 0.5, 0.75, 1.25, -3.25, 2.5, 10.125), back;
    float *map = map_of(&lat), *read = NULL;
    elec_error err;
    int status;
    EXPECT(dir && map, "setup");
    if (!dir || !map) return;
    snprintf(path, sizeof path, "%s/round.mrc", dir);
    status = (int)elec_write_mrc(path, &lat, map, "a test map\nline two", &err);
    EXPECT(status == ELEC_OK, "write: %d %s", status, err.message);
    status = (int)elec_read_mrc(path, &back, &read, &err);
    EXPECT(status == ELEC_OK && read, "read: %d %s", status, err.message);
    if (read) {
        EXPECT(same_lattice(&lat, &back), "lattice %d %d %d, %.17g %.17g %.17g, %.17g ...",
               back.dims[0], back.dims[1], back.dims[2], back.spacing[0], back.spacing[1],
               back.spacing[2], back.origin[0]);
        EXPECT(memcmp(read, map, elec_lattice_size(&lat) * sizeof *map) == 0,
               "values differ");
        elec_free(read);
    }
    free(map);
    scratch_remove(dir);
}

TEST(mrc_round_trip_holds_a_lattice_within_float_rounding) {
    /* origin and cell are floats in the header: each coordinate comes
       back within one float rounding of it (relative 2^-24), the spacing
       within two (the cell's rounding, then the division by MX) */
    char *dir = scratch_dir(), path[256];
    elec_lattice lat = lattice_of(7, 9, 11, 0.37, 1.0 / 3.0, 0.123456789, -12.3456789,
                                  98.7654321, 0.1), back;
    float *map = map_of(&lat), *read = NULL;
    elec_error err;
    int status, axis;
    EXPECT(dir && map, "setup");
    if (!dir || !map) return;
    snprintf(path, sizeof path, "%s/round.map", dir);
    status = (int)elec_write_map(path, &lat, map, NULL, &err); /* .map: MRC */
    EXPECT(status == ELEC_OK, "write: %d %s", status, err.message);
    status = (int)elec_read_map(path, &back, &read, &err);
    EXPECT(status == ELEC_OK && read, "read: %d %s", status, err.message);
    if (read) {
        for (axis = 0; axis < 3; axis++) {
            double h = lat.spacing[axis], o = lat.origin[axis];
            EXPECT(back.dims[axis] == lat.dims[axis], "dims");
            EXPECT(fabs(back.spacing[axis] - h) <= 2.0 * 0x1p-24 * h,
                   "spacing %c: %.17g for %.17g", 'x' + axis, back.spacing[axis], h);
            EXPECT(fabs(back.origin[axis] - o) <= 0x1p-24 * fabs(o),
                   "origin %c: %.17g for %.17g", 'x' + axis, back.origin[axis], o);
        }
        EXPECT(memcmp(read, map, elec_lattice_size(&lat) * sizeof *map) == 0,
               "values differ");
        elec_free(read);
    }
    free(map);
    scratch_remove(dir);
}

TEST(mrc_refuses_lattices_past_its_headers_floats) {
    /* an origin of 1e39 or a cell of 1e300 A wrote infinities that the
       reader refused; a cell of 2e-45 A, subnormal in float, read back 30 %
       off (an API audit's): each is refused, no file left, and the header
       helper refuses them and statistics past float's range too */
    char *dir = scratch_dir(), path[256];
    static const double spacing[3] = {1e300, 1e-45, 1.0}, origin[3] = {0.0, 0.0, 1e39};
    unsigned char header[1024];
    elec_map_stats stats = {0.0, 1.0, 0.5, 0.1};
    elec_error err;
    int k;
    EXPECT(dir != NULL, "setup");
    if (!dir) return;
    snprintf(path, sizeof path, "%s/far.mrc", dir);
    for (k = 0; k < 3; k++) {
        elec_lattice lat = lattice_of(2, 1, 1, spacing[k], 1.0, 1.0, origin[k], 0.0, 0.0);
        const float map[2] = {1.0f, 2.0f};
        int status = (int)elec_write_mrc(path, &lat, map, NULL, &err);
        EXPECT(status == ELEC_ERR_INVALID_ARG && strstr(err.message, "header's floats") &&
                   access(path, F_OK) != 0,
               "spacing %g origin %g: status %d: %s", spacing[k], origin[k], status,
               err.message);
        EXPECT(elec_mrc_header(&lat, &stats, NULL, header, &err) == ELEC_ERR_INVALID_ARG,
               "header helper: spacing %g origin %g accepted", spacing[k], origin[k]);
    }
    {
        elec_lattice lat = lattice_of(2, 1, 1, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0);
        EXPECT(elec_mrc_header(&lat, &stats, NULL, header, &err) == ELEC_OK, "%s",
               err.message);
        stats.rms = NAN;
        EXPECT(elec_mrc_header(&lat, &stats, NULL, header, &err) == ELEC_ERR_INVALID_ARG,
               "NaN rms accepted");
        stats.rms = 0.1;
        stats.max = 1e39;
        EXPECT(elec_mrc_header(&lat, &stats, NULL, header, &err) == ELEC_ERR_INVALID_ARG,
               "a maximum past float accepted");
    }
    scratch_remove(dir);
}

TEST(mrc_header_is_mrc2014_word_by_word) {
    char *dir = scratch_dir(), path[256];
    elec_lattice lat = lattice_of(6, 5, 4, 0.5, 0.25, 2.0, -1.5, 3.0, 4.25);
    float *map = map_of(&lat);
    const size_t n = elec_lattice_size(&lat);
    /* a first line longer than a label: it continues on the second */
    const char *comment = "elec test map, potential in kT/e: this first line is longer "
                          "than one label of eighty characters\nREMARK second line\r\n\n"
                          "CRYST1 a line with a\ttab";
    unsigned char *h;
    size_t length = 0, i;
    double lo = 0, hi = 0, sum = 0, mean, squares = 0;
    elec_error err;
    int status, axis;
    EXPECT(dir && map, "setup");
    if (!dir || !map) return;
    snprintf(path, sizeof path, "%s/header.mrc", dir);
    status = (int)elec_write_mrc(path, &lat, map, comment, &err);
    EXPECT(status == ELEC_OK, "write: %d %s", status, err.message);
    h = read_bytes(path, &length);
    EXPECT(h && length == 1024 + 4 * n, "file length %zu, want 1024 + 4 x %zu", length, n);
    if (!h || length != 1024 + 4 * n) {
        free(h);
        free(map);
        scratch_remove(dir);
        return;
    }
    for (i = 0; i < n; i++) {
        if (i == 0 || map[i] < lo) lo = map[i];
        if (i == 0 || map[i] > hi) hi = map[i];
        sum += map[i];
    }
    mean = sum / (double)n;
    for (i = 0; i < n; i++) squares += (map[i] - mean) * (map[i] - mean);
    for (axis = 0; axis < 3; axis++) {
        /* words 1-3 NX NY NZ; 5-7 NXSTART... 0; 8-10 MX MY MZ = counts;
           11-13 cell = counts x spacing (A); 14-16 angles 90; 17-19 MAPC
           MAPR MAPS 1 2 3; 50-52 ORIGIN (A) */
        EXPECT(word_int(h, 1 + axis) == lat.dims[axis], "N%c %ld", 'X' + axis,
               word_int(h, 1 + axis));
        EXPECT(word_int(h, 5 + axis) == 0, "N%cSTART %ld", 'X' + axis, word_int(h, 5 + axis));
        EXPECT(word_int(h, 8 + axis) == lat.dims[axis], "M%c %ld", 'X' + axis,
               word_int(h, 8 + axis));
        EXPECT(word_float(h, 11 + axis) == (float)(lat.dims[axis] * lat.spacing[axis]),
               "cell %c %g", 'a' + axis, word_float(h, 11 + axis));
        EXPECT(word_float(h, 14 + axis) == 90.0f, "angle %g", word_float(h, 14 + axis));
        EXPECT(word_int(h, 17 + axis) == 1 + axis, "MAP%c %ld", "CRS"[axis],
               word_int(h, 17 + axis));
        EXPECT(word_float(h, 50 + axis) == (float)lat.origin[axis], "origin %c %g",
               'x' + axis, word_float(h, 50 + axis));
    }
    EXPECT(word_int(h, 4) == 2, "MODE %ld, want 2 (32-bit real)", word_int(h, 4));
    /* DMIN DMAX DMEAN, RMS deviation from the mean: floats of the double
       statistics (one float rounding each) */
    EXPECT(word_float(h, 20) == (float)lo && word_float(h, 21) == (float)hi,
           "DMIN %g DMAX %g, want %g %g", word_float(h, 20), word_float(h, 21), lo, hi);
    EXPECT(fabs(word_float(h, 22) - mean) <= 0x1p-24 * fabs(mean), "DMEAN %g, want %g",
           word_float(h, 22), mean);
    EXPECT(fabs(word_float(h, 55) - sqrt(squares / n)) <= 0x1p-24 * sqrt(squares / n),
           "RMS %g, want %g", word_float(h, 55), sqrt(squares / n));
    EXPECT(word_int(h, 23) == 1, "ISPG %ld, want 1 (one volume)", word_int(h, 23));
    EXPECT(word_int(h, 24) == 0, "NSYMBT %ld", word_int(h, 24));
    EXPECT(word_int(h, 27) == 0, "EXTTYP without an extended header: %ld", word_int(h, 27));
    EXPECT(word_int(h, 28) == 20140, "NVERSION %ld, want 20140", word_int(h, 28));
    EXPECT(memcmp(h + 208, "MAP ", 4) == 0, "MAP stamp '%.4s'", (const char *)h + 208);
    EXPECT(h[212] == 0x44 && h[213] == 0x44 && h[214] == 0 && h[215] == 0,
           "MACHST %02x %02x %02x %02x, want 44 44 00 00", h[212], h[213], h[214], h[215]);
    /* labels: the long line over two, the others as they are (CR gone,
       the tab a space, the empty line an empty label), padded with spaces */
    EXPECT(word_int(h, 56) == 5, "NLABL %ld, want 5", word_int(h, 56));
    EXPECT(memcmp(h + 224, comment, 80) == 0, "label 1 '%.80s'", (const char *)h + 224);
    i = strcspn(comment, "\n") - 80; /* the rest of the first line */
    EXPECT(memcmp(h + 304, comment + 80, i) == 0 && h[304 + i] == ' ' && h[383] == ' ',
           "label 2 '%.80s'", (const char *)h + 304);
    EXPECT(memcmp(h + 384, "REMARK second line ", 19) == 0, "label 3 '%.80s'",
           (const char *)h + 384);
    for (i = 464; i < 544 && h[i] == ' '; i++) continue;
    EXPECT(i == 544, "label 4 is not empty: '%.80s'", (const char *)h + 464);
    EXPECT(memcmp(h + 544, "CRYST1 a line with a tab ", 25) == 0, "label 5 '%.80s'",
           (const char *)h + 544);
    for (i = 624; i < 1024 && h[i] == ' '; i++) continue;
    EXPECT(i == 1024, "unused labels are not spaces (byte %zu)", i);
    /* the values: little-endian floats, x fastest */
    for (i = 0; i < n; i++)
        if (word_float(h + 1024, (int)i + 1) != map[i]) break;
    EXPECT(i == n, "value %zu is %g, want %g", i, i < n ? word_float(h + 1024, (int)i + 1) : 0.0,
           i < n ? map[i] : 0.0);
    free(h);
    free(map);
    scratch_remove(dir);
}

TEST(mrc_and_dx_hold_the_same_values_at_the_same_coordinates) {
    /* one lattice and map written both ways: each point's coordinates from
       either file agree within the MRC header's float rounding (origin and
       cell, relative 2^-24 each, so |origin| 2^-24 + index x spacing 2^-23),
       its value bit for bit */
    char *dir = scratch_dir(), dx[256], mrc[256];
    elec_lattice lat = lattice_of(9, 7, 8, 0.45, 0.6, 0.35, -7.77, 1.234567, 33.3), a, b;
    float *map = map_of(&lat), *from_dx = NULL, *from_mrc = NULL;
    elec_error err;
    int status, i, j, k;
    EXPECT(dir && map, "setup");
    if (!dir || !map) return;
    snprintf(dx, sizeof dx, "%s/same.dx", dir);
    snprintf(mrc, sizeof mrc, "%s/same.mrc", dir);
    status = (int)elec_write_map(dx, &lat, map, "same", &err);
    EXPECT(status == ELEC_OK, "write dx: %s", err.message);
    status = (int)elec_write_map(mrc, &lat, map, "same", &err);
    EXPECT(status == ELEC_OK, "write mrc: %s", err.message);
    status = (int)elec_read_map(dx, &a, &from_dx, &err);
    EXPECT(status == ELEC_OK, "read dx: %s", err.message);
    status = (int)elec_read_map(mrc, &b, &from_mrc, &err);
    EXPECT(status == ELEC_OK, "read mrc: %s", err.message);
    if (from_dx && from_mrc) {
        int bad = 0;
        EXPECT(a.dims[0] == b.dims[0] && a.dims[1] == b.dims[1] && a.dims[2] == b.dims[2],
               "counts differ");
        for (k = 0; k < a.dims[2] && !bad; k++)
            for (j = 0; j < a.dims[1] && !bad; j++)
                for (i = 0; i < a.dims[0] && !bad; i++) {
                    int index[3] = {i, j, k}, axis;
                    size_t p = (size_t)i + (size_t)a.dims[0] * ((size_t)j + (size_t)a.dims[1] * k);
                    for (axis = 0; axis < 3; axis++) {
                        double xa = a.origin[axis] + index[axis] * a.spacing[axis];
                        double xb = b.origin[axis] + index[axis] * b.spacing[axis];
                        double tol = 0x1p-24 * fabs(lat.origin[axis]) +
                                     0x1p-23 * index[axis] * lat.spacing[axis] + 1e-15;
                        if (fabs(xa - xb) > tol) {
                            EXPECT(0, "point %d %d %d: %c %.17g (DX) and %.17g (MRC)", i,
                                   j, k, 'x' + axis, xa, xb);
                            bad = 1;
                        }
                    }
                    if (from_dx[p] != from_mrc[p] || from_dx[p] != point_value(i, j, k)) {
                        EXPECT(0, "point %d %d %d: %g (DX), %g (MRC), want %g", i, j, k,
                               from_dx[p], from_mrc[p], point_value(i, j, k));
                        bad = 1;
                    }
                }
    }
    elec_free(from_dx);
    elec_free(from_mrc);
    free(map);
    scratch_remove(dir);
}

TEST(mrc_reads_what_other_writers_write) {
    /* the map of counts (4, 3, 2), value point_value(x, y, z), as files
       other programs write: starts instead of an origin, axes permuted,
       big endian, an extended header, no machine stamp, angles 0 */
    const int n[3] = {4, 3, 2};
    float values[24];
    elec_lattice lat;
    float *map = NULL;
    elec_error err;
    unsigned char *file;
    size_t length;
    mrc_words w;
    int status, x, y, z;
    for (z = 0; z < 2; z++)
        for (y = 0; y < 3; y++)
            for (x = 0; x < 4; x++) values[x + 4 * (y + 3 * z)] = point_value(x, y, z);

    /* CCP4's convention: origin words zero, NXSTART NYSTART NZSTART set;
       spacing 0.5 from cell 2 over MX 4 (1.5 over 3, 1 over 2) */
    w = mrc_plain(n);
    set_int(&w, 5, 2);
    set_int(&w, 6, -3);
    set_int(&w, 7, 5);
    set_float(&w, 11, 2.0f);
    set_float(&w, 12, 1.5f);
    set_float(&w, 13, 1.0f);
    file = mrc_file(&w, 0, little_stamp, 0, values, 24, &length);
    status = (int)elec_parse_mrc(file, length, &lat, &map, &err);
    EXPECT(status == ELEC_OK && map, "starts: %d %s", status, err.message);
    if (map) {
        EXPECT(lat.spacing[0] == 0.5 && lat.spacing[1] == 0.5 && lat.spacing[2] == 0.5 &&
                   lat.origin[0] == 1.0 && lat.origin[1] == -1.5 && lat.origin[2] == 2.5,
               "starts: origin %g %g %g spacing %g", lat.origin[0], lat.origin[1],
               lat.origin[2], lat.spacing[0]);
        EXPECT(memcmp(map, values, sizeof values) == 0, "starts: values");
        elec_free(map);
    }
    free(file);
    /* both set: the origin words win (MRC2000 and later; ChimeraX's rule) */
    set_float(&w, 50, 7.0f);
    file = mrc_file(&w, 0, little_stamp, 0, values, 24, &length);
    status = (int)elec_parse_mrc(file, length, &lat, &map, &err);
    EXPECT(status == ELEC_OK && lat.origin[0] == 7.0 && lat.origin[1] == 0.0,
           "origin and starts: %d origin %g %g", status, lat.origin[0], lat.origin[1]);
    elec_free(map);
    free(file);

    /* axes permuted, MAPC MAPR MAPS = 3 1 2: the file's columns run along
       z, rows along x, sections along y; its counts NC NR NS = 2 4 3 and
       its starts refer to those axes (MRC2014 update 20141), so NCSTART 1
       is z's: origin z = 1 x spacing */
    {
        float file_order[24];
        int c, r, s, m = 0;
        for (s = 0; s < 3; s++)          /* y */
            for (r = 0; r < 4; r++)      /* x */
                for (c = 0; c < 2; c++)  /* z */
                    file_order[m++] = point_value(r, s, c);
        w = mrc_plain(n);
        set_int(&w, 1, 2);
        set_int(&w, 2, 4);
        set_int(&w, 3, 3);
        set_int(&w, 5, 1);
        set_int(&w, 17, 3);
        set_int(&w, 18, 1);
        set_int(&w, 19, 2);
        file = mrc_file(&w, 0, little_stamp, 0, file_order, 24, &length);
        status = (int)elec_parse_mrc(file, length, &lat, &map, &err);
        EXPECT(status == ELEC_OK && map, "permuted: %d %s", status, err.message);
        if (map) {
            EXPECT(lat.dims[0] == 4 && lat.dims[1] == 3 && lat.dims[2] == 2,
                   "permuted: counts %d %d %d", lat.dims[0], lat.dims[1], lat.dims[2]);
            EXPECT(lat.origin[0] == 0.0 && lat.origin[1] == 0.0 && lat.origin[2] == 1.0,
                   "permuted: origin %g %g %g", lat.origin[0], lat.origin[1], lat.origin[2]);
            EXPECT(memcmp(map, values, sizeof values) == 0,
                   "permuted: values not back in x-fastest order");
            elec_free(map);
        }
        free(file);
    }

    /* big endian, by its stamp; and by its mode word alone (no stamp) */
    w = mrc_plain(n);
    file = mrc_file(&w, 1, big_stamp, 0, values, 24, &length);
    status = (int)elec_parse_mrc(file, length, &lat, &map, &err);
    EXPECT(status == ELEC_OK && map && memcmp(map, values, sizeof values) == 0,
           "big endian: %d %s", status, err.message);
    elec_free(map);
    free(file);
    {
        static const unsigned char none[4] = {0, 0, 0, 0};
        file = mrc_file(&w, 1, none, 0, values, 24, &length);
        status = (int)elec_parse_mrc(file, length, &lat, &map, &err);
        EXPECT(status == ELEC_OK && map && memcmp(map, values, sizeof values) == 0,
               "big endian without a stamp: %d %s", status, err.message);
        elec_free(map);
        free(file);
        file = mrc_file(&w, 0, none, 0, values, 24, &length);
        status = (int)elec_parse_mrc(file, length, &lat, &map, &err);
        EXPECT(status == ELEC_OK && map && memcmp(map, values, sizeof values) == 0,
               "little endian without a stamp: %d %s", status, err.message);
        elec_free(map);
        free(file);
    }
    /* an extended header of 160 bytes (NSYMBT), skipped; angles 0 0 0 */
    w = mrc_plain(n);
    set_int(&w, 24, 160);
    set_float(&w, 14, 0.0f);
    set_float(&w, 15, 0.0f);
    set_float(&w, 16, 0.0f);
    file = mrc_file(&w, 0, little_stamp, 160, values, 24, &length);
    status = (int)elec_parse_mrc(file, length, &lat, &map, &err);
    EXPECT(status == ELEC_OK && map && memcmp(map, values, sizeof values) == 0,
           "extended header, angles 0: %d %s", status, err.message);
    elec_free(map);
    free(file);
}

/* parse_refused(file, length, status, words): the call fails with that
   status, a message holding words, no map, and no allocation as large as
   the map the header claims (claimed bytes) */
static void expect_refused(const char *what, const unsigned char *file, size_t length,
                           int want, const char *words, size_t claimed) {
    elec_lattice lat;
    float *map = (float *)&lat;
    elec_error err;
    int status;
    test_largest_allocation = 0;
    status = (int)elec_parse_mrc(file, length, &lat, &map, &err);
    EXPECT(status == want && map == NULL && strstr(err.message, words),
           "%s: status %d (want %d), '%s' (want '%s')", what, status, want, err.message, words);
    EXPECT(claimed == 0 || test_largest_allocation < claimed,
           "%s: allocated %zu bytes, the header's claim", what, test_largest_allocation);
}

TEST(mrc_refuses_truncated_huge_and_foreign_files) {
    const int n[3] = {4, 3, 2};
    float values[24] = {0};
    unsigned char *file, *edited;
    size_t length;
    mrc_words w = mrc_plain(n);
    int k;
    file = mrc_file(&w, 0, little_stamp, 0, values, 24, &length);
    if (!file) return;
    expect_refused("empty", file, 0, ELEC_ERR_PARSE, "fewer than the 1024", 0);
    edited = (unsigned char *)malloc(100); /* its own 100 bytes: ASan sees past them */
    if (edited) {
        memcpy(edited, file, 100);
        expect_refused("100 bytes", edited, 100, ELEC_ERR_PARSE, "fewer than the 1024", 0);
        free(edited);
    }
    expect_refused("one byte short", file, length - 1, ELEC_ERR_PARSE, "a truncated file?", 0);
    edited = (unsigned char *)calloc(length + 4, 1);
    if (edited) {
        memcpy(edited, file, length);
        expect_refused("four bytes long", edited, length + 4, ELEC_ERR_PARSE, "gives it", 0);
        free(edited);
    }
    free(file);
    /* 2^10 x 2^10 x 2^10 floats (4 GiB) claimed by a header alone: refused
       from the counts against the buffer's length, before any allocation;
       from a file, against ELEC_MAX_INPUT_BYTES before the rest is read */
    w = mrc_plain(n);
    for (k = 1; k <= 3; k++) set_int(&w, k, 1024);
    file = mrc_file(&w, 0, little_stamp, 0, values, 24, &length);
    expect_refused("4 GiB claimed", file, length, ELEC_ERR_PARSE, "a truncated file?",
                   (size_t)1 << 30);
    {
        FILE *f = fopen("build/claims_4_gib.mrc", "wb");
        elec_lattice lat;
        float *map = NULL;
        elec_error err;
        int status;
        EXPECT(f && fwrite(file, 1, length, f) == length && fclose(f) == 0,
               "build/claims_4_gib.mrc not written");
        test_largest_allocation = 0;
        status = (int)elec_read_mrc("build/claims_4_gib.mrc", &lat, &map, &err);
        EXPECT(status == ELEC_ERR_UNSUPPORTED && map == NULL &&
                   strstr(err.message, "ELEC_MAX_INPUT_BYTES") &&
                   test_largest_allocation < ELEC_MAX_INPUT_BYTES,
               "4 GiB claimed by a file: %d %s", status, err.message);
        remove("build/claims_4_gib.mrc");
    }
    free(file);
    /* a buffer past ELEC_MAX_INPUT_BYTES (4 MiB here) read by
       elec_parse_mrc: the limit is the files', and a caller's own buffer
       is read whole, as the README says (128 x 128 x 72 floats, 4.5 MiB) */
    {
        const size_t count = (size_t)128 * 128 * 72;
        float *big = (float *)calloc(count, sizeof *big);
        elec_lattice lat;
        float *map = NULL;
        elec_error err;
        int status;
        w = mrc_plain(n);
        set_int(&w, 1, 128);
        set_int(&w, 2, 128);
        set_int(&w, 3, 72);
        file = big ? mrc_file(&w, 0, little_stamp, 0, big, count, &length) : NULL;
        EXPECT(file && length > ELEC_MAX_INPUT_BYTES, "%zu bytes", length);
        status = file ? (int)elec_parse_mrc(file, length, &lat, &map, &err) : -1;
        EXPECT(status == ELEC_OK && map != NULL && lat.dims[2] == 72,
               "a 4.5 MiB buffer: %d %s", status, err.message);
        free(map);
        free(file);
        free(big);
    }
    /* counts whose product overflows */
    for (k = 1; k <= 3; k++) set_int(&w, k, 2147483647L);
    file = mrc_file(&w, 0, little_stamp, 0, values, 24, &length);
    expect_refused("2^93 values claimed", file, length, ELEC_ERR_PARSE, "more values", 4096);
    free(file);
    /* within the limit but more than the file: 128^3 floats, 8 MiB claimed
       where the limit is 4 MiB; 64 x 64 x 32 (512 KiB) in a 1120-byte file */
    w = mrc_plain(n);
    set_int(&w, 1, 64);
    set_int(&w, 2, 64);
    set_int(&w, 3, 32);
    file = mrc_file(&w, 0, little_stamp, 0, values, 24, &length);
    expect_refused("512 KiB claimed", file, length, ELEC_ERR_PARSE, "a truncated file?",
                   (size_t)1 << 19);
    free(file);
    /* other modes: named, ELEC_ERR_UNSUPPORTED */
    {
        static const long modes[] = {0, 1, 6, 12};
        static const char *names[] = {"mode 0 (8-bit integers)", "mode 1 (16-bit integers)",
                                      "mode 6 (unsigned 16-bit", "mode 12 (16-bit floats)"};
        for (k = 0; k < 4; k++) {
            w = mrc_plain(n);
            set_int(&w, 4, modes[k]);
            file = mrc_file(&w, 0, little_stamp, 0, values, 24, &length);
            expect_refused(names[k], file, length, ELEC_ERR_UNSUPPORTED, names[k], 0);
            free(file);
        }
    }
    /* a skewed cell, axes that are no order, no spacing, a bad extended
       header, a NaN */
    w = mrc_plain(n);
    set_float(&w, 16, 120.0f);
    file = mrc_file(&w, 0, little_stamp, 0, values, 24, &length);
    expect_refused("gamma 120", file, length, ELEC_ERR_UNSUPPORTED, "only orthogonal", 0);
    free(file);
    w = mrc_plain(n);
    set_int(&w, 18, 1);
    file = mrc_file(&w, 0, little_stamp, 0, values, 24, &length);
    expect_refused("MAPR 1", file, length, ELEC_ERR_PARSE, "not an order of the axes", 0);
    free(file);
    w = mrc_plain(n);
    set_float(&w, 12, 0.0f);
    file = mrc_file(&w, 0, little_stamp, 0, values, 24, &length);
    expect_refused("cell b 0", file, length, ELEC_ERR_PARSE, "gives no spacing", 0);
    free(file);
    w = mrc_plain(n);
    set_int(&w, 24, -4);
    file = mrc_file(&w, 0, little_stamp, 0, values, 24, &length);
    expect_refused("NSYMBT -4", file, length, ELEC_ERR_PARSE, "is negative", 0);
    free(file);
    w = mrc_plain(n);
    set_int(&w, 24, 4096);
    file = mrc_file(&w, 0, little_stamp, 0, values, 24, &length);
    expect_refused("NSYMBT past the end", file, length, ELEC_ERR_PARSE, "a truncated file?", 0);
    free(file);
    values[13] = (float)NAN;
    w = mrc_plain(n);
    file = mrc_file(&w, 0, little_stamp, 0, values, 24, &length);
    expect_refused("a NaN", file, length, ELEC_ERR_PARSE, "value 13 (column 1, row 0, section 1)",
                   0);
    free(file);
    /* no stamp and a mode word that is no mode in either order: not MRC */
    {
        static const unsigned char none[4] = {0, 0, 0, 0};
        w = mrc_plain(n);
        set_int(&w, 4, 0x12345678L);
        file = mrc_file(&w, 0, none, 0, values, 24, &length);
        expect_refused("a PNG, say", file, length, ELEC_ERR_PARSE, "not an MRC map", 0);
        free(file);
    }
}

TEST(mrc_reader_stops_streams_and_refuses_bad_writes) {
    elec_lattice lat = lattice_of(2, 2, 2, 1, 1, 1, 0, 0, 0), back;
    float map[8] = {1, 2, 3, 4, 5, 6, 7, (float)INFINITY}, *read = (float *)&back;
    elec_error err;
    int status;
    /* /dev/zero: its header (mode 0) refused after the first read */
    if (access("/dev/zero", R_OK) == 0) {
        status = (int)elec_read_mrc("/dev/zero", &back, &read, &err);
        EXPECT(status == ELEC_ERR_UNSUPPORTED && read == NULL && strstr(err.message, "mode 0"),
               "/dev/zero: %d %s", status, err.message);
    }
    status = (int)elec_read_mrc("build/no_such_file.mrc", &back, &read, &err);
    EXPECT(status == ELEC_ERR_IO && read == NULL, "missing file: %d %s", status, err.message);
    status = (int)elec_write_mrc("build/x.mrc", &lat, map, NULL, &err);
    EXPECT(status == ELEC_ERR_INVALID_ARG && strstr(err.message, "point 1,1,1"),
           "infinity: %d %s", status, err.message);
    map[7] = 8;
    status = (int)elec_write_mrc("build/no_such_dir/x.mrc", &lat, map, NULL, &err);
    EXPECT(status == ELEC_ERR_IO, "no directory: %d %s", status, err.message);
    if (access("/dev/null", W_OK) == 0) {
        status = (int)elec_write_map("/dev/null", &lat, map, NULL, &err);
        EXPECT(status == ELEC_OK, "/dev/null (as DX): %d %s", status, err.message);
    }
}

TEST(map_format_follows_the_name) {
    static const struct {
        const char *path;
        elec_map_format format;
        int gzip;
        const char *name;
    } cases[] = {
        {"phi.dx", ELEC_MAP_DX, 0, "OpenDX"},
        {"PHI.DX", ELEC_MAP_DX, 0, "OpenDX"},
        {"phi.dx.gz", ELEC_MAP_DX, 1, "OpenDX, gzip-compressed"},
        {"phi.mrc", ELEC_MAP_MRC, 0, "MRC2014"},
        {"dir/phi.MAP", ELEC_MAP_MRC, 0, "MRC2014"},
        {"phi.ccp4", ELEC_MAP_MRC, 0, "MRC2014"},
        {"phi.mrc.gz", ELEC_MAP_MRC, 1, "MRC2014, gzip-compressed"},
        {"phi.gz", ELEC_MAP_DX, 1, "OpenDX, gzip-compressed"},
        {"/dev/stdout", ELEC_MAP_DX, 0, "OpenDX"},
        {"maps.mrc/phi", ELEC_MAP_DX, 0, "OpenDX"},
        {"phi.mrcs", ELEC_MAP_DX, 0, "OpenDX"},
        {"phi.txt", ELEC_MAP_DX, 0, "OpenDX"},
    };
    size_t c;
    int gz;
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        elec_map_format f = elec_map_format_of(cases[c].path, &gz);
        EXPECT(f == cases[c].format && gz == cases[c].gzip &&
                   !strcmp(elec_map_format_name(cases[c].path), cases[c].name),
               "%s: format %d gzip %d '%s'", cases[c].path, (int)f, gz,
               elec_map_format_name(cases[c].path));
    }
    EXPECT(elec_map_format_of(NULL, &gz) == ELEC_MAP_DX && gz == 0, "NULL path");
}

/* ------------------------------------------------------------- gzip */

#ifdef ELEC_WITH_ZLIB
/* The file inflated by zlib's gzread (caller frees), or NULL. */
static unsigned char *gunzip_file(const char *path, size_t *length) {
    gzFile f = gzopen(path, "rb");
    size_t cap = 1 << 16, len = 0;
    unsigned char *data = (unsigned char *)malloc(cap);
    int got;
    if (!f || !data) {
        if (f) gzclose(f);
        free(data);
        return NULL;
    }
    while ((got = gzread(f, data + len, (unsigned)(cap - len))) > 0) {
        len += (size_t)got;
        if (len == cap) {
            unsigned char *grown = (unsigned char *)realloc(data, 2 * cap);
            if (!grown) break;
            data = grown;
            cap *= 2;
        }
    }
    gzclose(f);
    *length = len;
    return data;
}

/* bytes compressed by zlib's gzwrite into path */
static int gzip_file(const char *path, const void *data, size_t length) {
    gzFile f = gzopen(path, "wb");
    int ok;
    if (!f) return 0;
    ok = length == 0 || gzwrite(f, data, (unsigned)length) == (int)length;
    return gzclose(f) == Z_OK && ok;
}
#endif

TEST(dx_gz_round_trip_is_the_dx_text_compressed) {
#ifndef ELEC_WITH_ZLIB
    SKIP("built without zlib (HAVE_ZLIB=): gz_is_refused_by_name_without_zlib runs instead");
#else
    char *dir = scratch_dir(), dx[256], gz[256];
    elec_lattice lat = lattice_of(6, 5, 7, 0.5, 0.4, 0.3, -1.0, -2.0, -3.0), back;
    float *map = map_of(&lat), *read = NULL;
    unsigned char *plain, *inflated, *raw;
    size_t plain_length = 0, inflated_length = 0, raw_length = 0;
    elec_error err;
    int status;
    EXPECT(dir && map, "setup");
    if (!dir || !map) return;
    snprintf(dx, sizeof dx, "%s/m.dx", dir);
    snprintf(gz, sizeof gz, "%s/m.dx.gz", dir);
    status = (int)elec_write_map(dx, &lat, map, "gz test", &err);
    EXPECT(status == ELEC_OK, "write dx: %s", err.message);
    status = (int)elec_write_map(gz, &lat, map, "gz test", &err);
    EXPECT(status == ELEC_OK, "write dx.gz: %s", err.message);
    raw = read_bytes(gz, &raw_length);
    plain = read_bytes(dx, &plain_length);
    inflated = gunzip_file(gz, &inflated_length);
    EXPECT(raw && raw_length > 18 && raw[0] == 0x1f && raw[1] == 0x8b && raw[2] == 8,
           "not gzip: %zu bytes", raw_length);
    EXPECT(raw && plain && raw_length < plain_length / 2,
           "%zu bytes compressed for %zu of text", raw_length, plain_length);
    EXPECT(plain && inflated && inflated_length == plain_length &&
               memcmp(plain, inflated, plain_length) == 0,
           "gzread gives %zu bytes, the .dx has %zu", inflated_length, plain_length);
    status = (int)elec_read_map(gz, &back, &read, &err);
    EXPECT(status == ELEC_OK && read && same_lattice(&lat, &back) &&
               memcmp(read, map, elec_lattice_size(&lat) * sizeof *map) == 0,
           "read dx.gz: %d %s", status, err.message);
    elec_free(read);
    /* a gzip file that is not named .gz is read by its magic bytes too */
    if (raw) {
        char renamed[256];
        snprintf(renamed, sizeof renamed, "%s/renamed.dx", dir);
        EXPECT(write_file(renamed, raw, raw_length), "write");
        read = NULL;
        status = (int)elec_read_dx(renamed, &back, &read, &err);
        EXPECT(status == ELEC_OK && read, "gzip named .dx: %d %s", status, err.message);
        elec_free(read);
    }
    /* two members, as gzip -c a b > ab.gz writes: the text of both */
    if (plain && raw) {
        char two[256];
        unsigned char *both = (unsigned char *)malloc(2 * raw_length);
        snprintf(two, sizeof two, "%s/two.dx.gz", dir);
        if (both) {
            size_t half = plain_length / 2, first_length = 0;
            unsigned char *first;
            char part[256];
            /* the .dx text split in two, each half gzipped by zlib */
            snprintf(part, sizeof part, "%s/part.gz", dir);
            EXPECT(gzip_file(part, plain, half), "gzwrite");
            first = read_bytes(part, &first_length);
            EXPECT(gzip_file(part, plain + half, plain_length - half), "gzwrite");
            free(raw);
            raw = read_bytes(part, &raw_length);
            if (first && raw) {
                memcpy(both, first, first_length);
                memcpy(both + first_length, raw, raw_length);
                EXPECT(write_file(two, both, first_length + raw_length), "write");
                read = NULL;
                status = (int)elec_read_map(two, &back, &read, &err);
                EXPECT(status == ELEC_OK && read &&
                           memcmp(read, map, elec_lattice_size(&lat) * sizeof *map) == 0,
                       "two members: %d %s", status, err.message);
                elec_free(read);
            }
            free(first);
            free(both);
        }
    }
    free(raw);
    free(plain);
    free(inflated);
    free(map);
    scratch_remove(dir);
#endif
}

TEST(mrc_gz_and_pqr_gz_read_back) {
#ifndef ELEC_WITH_ZLIB
    SKIP("built without zlib (HAVE_ZLIB=)");
#else
    char *dir = scratch_dir(), path[256], plain_path[256];
    elec_lattice lat = lattice_of(5, 6, 7, 0.5, 0.5, 0.5, 1.0, 2.0, 3.0), back;
    float *map = map_of(&lat), *read = NULL;
    unsigned char *plain, *inflated;
    size_t plain_length = 0, inflated_length = 0;
    static const char pqr[] =
        "REMARK a gzipped PQR\n"
        "ATOM      1  N   ALA A   1       1.000   2.000   3.000 -0.3000 1.8240\n"
        "ATOM      2  CA  ALA A   1       2.500   2.000   3.000  0.3000 1.9080\n";
    elec_structure s;
    elec_error err;
    int status;
    EXPECT(dir && map, "setup");
    if (!dir || !map) return;
    snprintf(path, sizeof path, "%s/m.mrc.gz", dir);
    snprintf(plain_path, sizeof plain_path, "%s/m.mrc", dir);
    status = (int)elec_write_map(path, &lat, map, "gz", &err);
    EXPECT(status == ELEC_OK, "write mrc.gz: %s", err.message);
    status = (int)elec_write_map(plain_path, &lat, map, "gz", &err);
    EXPECT(status == ELEC_OK, "write mrc: %s", err.message);
    plain = read_bytes(plain_path, &plain_length);
    inflated = gunzip_file(path, &inflated_length);
    EXPECT(plain && inflated && plain_length == inflated_length &&
               memcmp(plain, inflated, plain_length) == 0,
           "the .mrc.gz inflates to %zu bytes, the .mrc has %zu", inflated_length,
           plain_length);
    status = (int)elec_read_map(path, &back, &read, &err);
    EXPECT(status == ELEC_OK && read && same_lattice(&lat, &back) &&
               memcmp(read, map, elec_lattice_size(&lat) * sizeof *map) == 0,
           "read mrc.gz: %d %s", status, err.message);
    elec_free(read);
    read = NULL;
    /* the writer compresses ".GZ" as ".gz" (case ignored): the reader
       inflates it too (it once took the gzip stream for the MRC header) */
    snprintf(path, sizeof path, "%s/M.MRC.GZ", dir);
    status = (int)elec_write_map(path, &lat, map, "gz", &err);
    EXPECT(status == ELEC_OK, "write MRC.GZ: %s", err.message);
    status = (int)elec_read_map(path, &back, &read, &err);
    EXPECT(status == ELEC_OK && read && same_lattice(&lat, &back) &&
               memcmp(read, map, elec_lattice_size(&lat) * sizeof *map) == 0,
           "read MRC.GZ: %d %s", status, err.message);
    elec_free(read);
    snprintf(path, sizeof path, "%s/a.pqr.gz", dir);
    EXPECT(gzip_file(path, pqr, sizeof pqr - 1), "gzwrite");
    status = (int)elec_read_pqr(path, &s, &err);
    EXPECT(status == ELEC_OK && s.count == 2 && s.xyz[3] == 2.5 && s.charge[1] == 0.3,
           "read pqr.gz: %d %s", status, err.message);
    if (status == ELEC_OK) elec_structure_free(&s);
    free(plain);
    free(inflated);
    free(map);
    scratch_remove(dir);
#endif
}

TEST(gz_refuses_truncated_corrupt_binary_and_bombs) {
#ifndef ELEC_WITH_ZLIB
    SKIP("built without zlib (HAVE_ZLIB=)");
#else
    char *dir = scratch_dir(), path[256], bad[256];
    elec_lattice lat = lattice_of(8, 8, 8, 0.5, 0.5, 0.5, 0, 0, 0), back;
    float *map = map_of(&lat), *read = (float *)&back;
    unsigned char *raw;
    size_t raw_length = 0;
    elec_error err;
    int status;
    EXPECT(dir && map, "setup");
    if (!dir || !map) return;
    snprintf(path, sizeof path, "%s/m.dx.gz", dir);
    snprintf(bad, sizeof bad, "%s/bad.dx.gz", dir);
    EXPECT(elec_write_map(path, &lat, map, NULL, &err) == ELEC_OK, "write: %s", err.message);
    raw = read_bytes(path, &raw_length);
    if (!raw || raw_length < 64) {
        EXPECT(0, "no gzip file");
        free(raw);
        free(map);
        scratch_remove(dir);
        return;
    }
    /* cut short: the stream ends before its end (or its trailer) */
    EXPECT(write_file(bad, raw, raw_length - 12), "write");
    status = (int)elec_read_map(bad, &back, &read, &err);
    EXPECT(status == ELEC_ERR_PARSE && read == NULL && strstr(err.message, "ends early"),
           "truncated: %d %s", status, err.message);
    /* a byte changed in the compressed data (or the CRC catches it) */
    raw[raw_length / 2] ^= 0x55;
    EXPECT(write_file(bad, raw, raw_length), "write");
    status = (int)elec_read_map(bad, &back, &read, &err);
    EXPECT(status == ELEC_ERR_PARSE && read == NULL && strstr(err.message, "not valid gzip"),
           "corrupt: %d %s", status, err.message);
    raw[raw_length / 2] ^= 0x55;
    /* bytes after the stream that are not another member */
    {
        unsigned char *longer = (unsigned char *)malloc(raw_length + 5);
        if (longer) {
            memcpy(longer, raw, raw_length);
            memcpy(longer + raw_length, "junk\n", 5);
            EXPECT(write_file(bad, longer, raw_length + 5), "write");
            status = (int)elec_read_map(bad, &back, &read, &err);
            EXPECT(status == ELEC_ERR_PARSE && strstr(err.message, "not gzip data"),
                   "trailing junk: %d %s", status, err.message);
            free(longer);
        }
    }
    /* binary inside: refused at its first byte, with its line */
    {
        static const char text[] = "# a comment\nobject 1 class\001 gridpositions\n";
        EXPECT(gzip_file(bad, text, sizeof text - 1), "gzwrite");
        status = (int)elec_read_map(bad, &back, &read, &err);
        EXPECT(status == ELEC_ERR_PARSE && err.line == 2 && strstr(err.message, "binary"),
               "binary inside: %d line %ld %s", status, err.line, err.message);
    }
    /* a bomb: 8 MiB of blanks in a few KiB, past this test's 4 MiB limit,
       refused there, with no allocation much past the limit */
    {
        size_t big = (size_t)1 << 23;
        char *blanks = (char *)malloc(big);
        if (blanks) {
            memset(blanks, ' ', big);
            EXPECT(gzip_file(bad, blanks, big), "gzwrite");
            free(blanks);
            test_largest_allocation = 0;
            status = (int)elec_read_map(bad, &back, &read, &err);
            EXPECT(status == ELEC_ERR_UNSUPPORTED && strstr(err.message, "inflates to more"),
                   "bomb: %d %s", status, err.message);
            EXPECT(test_largest_allocation <= ELEC_MAX_INPUT_BYTES + 2,
                   "bomb: an allocation of %zu bytes", test_largest_allocation);
        }
    }
    /* an .mrc.gz whose header is refused stops there: a gzipped /dev/zero */
    {
        size_t zeros = (size_t)1 << 22;
        char *z = (char *)calloc(zeros, 1);
        if (z) {
            snprintf(bad, sizeof bad, "%s/zero.mrc.gz", dir);
            EXPECT(gzip_file(bad, z, zeros), "gzwrite");
            free(z);
            test_largest_allocation = 0;
            status = (int)elec_read_map(bad, &back, &read, &err);
            EXPECT(status == ELEC_ERR_UNSUPPORTED && strstr(err.message, "mode 0"),
                   "zeros: %d %s", status, err.message);
        }
    }
    free(raw);
    free(map);
    scratch_remove(dir);
#endif
}

TEST(gz_is_refused_by_name_without_zlib) {
#ifdef ELEC_WITH_ZLIB
    SKIP("built with zlib: the gzip round trips run instead");
#else
    /* the magic bytes, a header's worth: enough to be known as gzip */
    static const unsigned char gz[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 1, 2, 3, 4};
    char *dir = scratch_dir(), path[256];
    elec_lattice lat = lattice_of(2, 2, 2, 1, 1, 1, 0, 0, 0), back;
    float map[8] = {1, 2, 3, 4, 5, 6, 7, 8}, *read = (float *)&back;
    elec_structure s;
    elec_error err;
    int status, hidden = 0;
    EXPECT(dir != NULL, "mkdtemp");
    if (!dir) return;
    snprintf(path, sizeof path, "%s/m.dx.gz", dir);
    status = (int)elec_write_map(path, &lat, map, NULL, &err);
    EXPECT(status == ELEC_ERR_UNSUPPORTED && strstr(err.message, "no zlib"),
           "write dx.gz: %d %s", status, err.message);
    snprintf(path, sizeof path, "%s/m.mrc.gz", dir);
    status = (int)elec_write_map(path, &lat, map, NULL, &err);
    EXPECT(status == ELEC_ERR_UNSUPPORTED && strstr(err.message, "no zlib"),
           "write mrc.gz: %d %s", status, err.message);
    /* nothing left behind, not even a temporary file */
    EXPECT(names_in(dir, &hidden) == 0, "files left in %s (%d hidden)", dir, hidden);
    snprintf(path, sizeof path, "%s/in.dx.gz", dir);
    EXPECT(write_file(path, gz, sizeof gz), "write");
    status = (int)elec_read_map(path, &back, &read, &err);
    EXPECT(status == ELEC_ERR_UNSUPPORTED && read == NULL && strstr(err.message, "no zlib") &&
               strstr(err.message, "gzip -d"),
           "read dx.gz: %d %s", status, err.message);
    status = (int)elec_read_pqr(path, &s, &err);
    EXPECT(status == ELEC_ERR_UNSUPPORTED && strstr(err.message, "gzip-compressed"),
           "read pqr.gz: %d %s", status, err.message);
    scratch_remove(dir);
#endif
}

int main(void) {
    RUN(mrc_round_trip_is_exact_where_the_lattice_is_in_floats);
    RUN(mrc_round_trip_holds_a_lattice_within_float_rounding);
    RUN(mrc_refuses_lattices_past_its_headers_floats);
    RUN(mrc_header_is_mrc2014_word_by_word);
    RUN(mrc_and_dx_hold_the_same_values_at_the_same_coordinates);
    RUN(mrc_reads_what_other_writers_write);
    RUN(mrc_refuses_truncated_huge_and_foreign_files);
    RUN(mrc_reader_stops_streams_and_refuses_bad_writes);
    RUN(map_format_follows_the_name);
    RUN(dx_gz_round_trip_is_the_dx_text_compressed);
    RUN(mrc_gz_and_pqr_gz_read_back);
    RUN(gz_refuses_truncated_corrupt_binary_and_bombs);
    RUN(gz_is_refused_by_name_without_zlib);
    return test_summary();
}
