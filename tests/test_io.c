/* tests/test_io.c - the PQR reader and the OpenDX writer and reader.

   Run from the repository root (make test does): temporary files go to
   build/, the real structures are read from ../shared/data/structures when
   that directory exists.  ELEC_TEST_QUICK=1 leaves out the 2,000,000-atom
   read (for valgrind, where it takes minutes). */
#define _XOPEN_SOURCE 700 /* mkdtemp, setrlimit, mknod, fork: the
                             output tests below */
#define ELEC_IMPLEMENTATION
#include "elec.h"
#include "tests/test.h"
#include "tests/systems.h" /* test_rng */
#include "tests/files.h"   /* scratch_dir, write_file */

#include <fcntl.h>
#include <float.h>
#include <locale.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/sysmacros.h> /* makedev */
#endif

/* ------------------------------------------------------------- helpers */

/* The whole file as a '\0'-terminated string (caller frees), or NULL. */
static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    char *text = NULL;
    long size;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 &&
        fseek(f, 0, SEEK_SET) == 0) {
        text = (char *)malloc((size_t)size + 1);
        if (text && fread(text, 1, (size_t)size, f) != (size_t)size) {
            free(text);
            text = NULL;
        }
        if (text) text[size] = '\0';
    }
    fclose(f);
    return text;
}

static int structure_is_empty(const elec_structure *s) {
    return s->count == 0 && !s->xyz && !s->charge && !s->radius && !s->label &&
           !s->has_cell;
}

static int parse(const char *text, elec_structure *s, elec_error *err) {
    memset(s, 0xab, sizeof *s); /* garbage the reader must overwrite */
    return (int)elec_parse_pqr(text, strlen(text), s, err);
}

/* ----------------------------------------------------------------- PQR */

static const char *const whitespace_pqr =
    "REMARK   1 whitespace dialect, with and without chain identifiers\n"
    "ATOM      1  N   NTER    4     -36.576 -12.088 -13.641  0.185 1.824\n"
    "ATOM      2  CA  GLY A   5       1.000   2.000   3.000 -0.100 1.900\n"
    "HETATM12345  O   HOH B  52A      4.5  5.5  6.5  -0.834 1.52\n"
    "ATOM 7 HB2 LYS 10 1 2 3 0.5 0\n"
    "TER\n"
    "END\n";

static void check_whitespace_atoms(const elec_structure *s) {
    const elec_atom_label *l = s->label;
    EXPECT(s->count == 4, "count %zu, want 4", s->count);
    if (s->count != 4) return;
    EXPECT(l[0].serial == 1 && strcmp(l[0].name, "N") == 0 &&
               strcmp(l[0].residue_name, "NTER") == 0 && l[0].chain == ' ' &&
               l[0].residue_number == 4 && l[0].insertion_code == ' ' &&
               !l[0].is_hetatm,
           "atom 1 label: %d '%s' '%s' '%c' %d", l[0].serial, l[0].name,
           l[0].residue_name, l[0].chain, l[0].residue_number);
    EXPECT(s->xyz[0] == -36.576 && s->xyz[1] == -12.088 &&
               s->xyz[2] == -13.641 && s->charge[0] == 0.185 &&
               s->radius[0] == 1.824,
           "atom 1 numbers: %g %g %g %g %g", s->xyz[0], s->xyz[1], s->xyz[2],
           s->charge[0], s->radius[0]);
    EXPECT(l[1].chain == 'A' && l[1].residue_number == 5 &&
               strcmp(l[1].residue_name, "GLY") == 0 && s->charge[1] == -0.1,
           "atom 2: chain '%c' residue %d '%s' charge %g", l[1].chain,
           l[1].residue_number, l[1].residue_name, s->charge[1]);
    EXPECT(l[2].is_hetatm && l[2].serial == 12345 && l[2].chain == 'B' &&
               l[2].residue_number == 52 && l[2].insertion_code == 'A' &&
               strcmp(l[2].name, "O") == 0 && s->xyz[6] == 4.5 &&
               s->xyz[8] == 6.5 && s->charge[2] == -0.834,
           "HETATM: het %d serial %d chain '%c' residue %d%c x %g",
           l[2].is_hetatm, l[2].serial, l[2].chain, l[2].residue_number,
           l[2].insertion_code, s->xyz[6]);
    EXPECT(l[3].serial == 7 && strcmp(l[3].name, "HB2") == 0 &&
               l[3].residue_number == 10 && s->radius[3] == 0.0,
           "atom 4: serial %d name '%s' residue %d radius %g", l[3].serial,
           l[3].name, l[3].residue_number, s->radius[3]);
}

TEST(pqr_whitespace_dialect_fills_the_right_labels) {
    elec_structure s;
    elec_error err;
    int status = parse(whitespace_pqr, &s, &err);
    EXPECT(status == ELEC_OK, "status %d: %s", status, err.message);
    if (status != ELEC_OK) return;
    check_whitespace_atoms(&s);
    EXPECT(!s.has_cell, "no CRYST1, yet has_cell is %d", s.has_cell);
    elec_structure_free(&s);
    EXPECT(structure_is_empty(&s), "elec_structure_free leaves it zeroed");
}

TEST(pqr_crlf_file_reads_like_lf) {
    /* the same records with CRLF line ends, through elec_read_pqr */
    const char *path = "build/test_io_crlf.pqr";
    char text[1024];
    size_t n = 0;
    const char *p;
    elec_structure s;
    elec_error err;
    int status;
    for (p = whitespace_pqr; *p; p++) {
        if (*p == '\n') text[n++] = '\r';
        text[n++] = *p;
    }
    EXPECT(write_file(path, text, n), "cannot write %s", path);
    status = (int)elec_read_pqr(path, &s, &err);
    EXPECT(status == ELEC_OK, "status %d: %s", status, err.message);
    if (status != ELEC_OK) return;
    check_whitespace_atoms(&s);
    elec_structure_free(&s);
    remove(path);
}

TEST(pqr_refuses_atoms_after_end_or_endmdl) {
    /* atoms after END (files run together: pdb2pqr ends each with END)
       or after ENDMDL (a trajectory's next model) are refused, naming both
       lines, where merging them was a wrong structure with status 0 */
    const char *ended = "ATOM      1 NA    NA     1       0.000   0.000   0.000  1.0000 1.8680\n"
                        "END\n"
                        "ATOM      2 CL    CL     2       3.000   0.000   0.000 -1.0000 2.2700\n";
    const char *models = "MODEL        1\n"
                         "ATOM      1 NA    NA     1       0.000   0.000   0.000  1.0000 1.8680\n"
                         "ENDMDL\n"
                         "MODEL        2\n"
                         "ATOM      1 NA    NA     1       0.100   0.000   0.000  1.0000 1.8680\n"
                         "ENDMDL\n";
    const char *one_model = "MODEL        1\n"
                            "ATOM      1 NA    NA     1       0.000   0.000   0.000  1.0000 1.8680\n"
                            "ENDMDL\nCONECT    1\nEND\nCRYST1 not read past END\n";
    elec_structure s;
    elec_error err;
    int status = parse(ended, &s, &err);
    EXPECT(status == ELEC_ERR_PARSE && err.line == 3 && strstr(err.message, "END of line 2"),
           "an atom after END: status %d, line %ld: %s", status, err.line, err.message);
    EXPECT(structure_is_empty(&s), "a refused read returns nothing");
    status = parse(models, &s, &err);
    EXPECT(status == ELEC_ERR_PARSE && err.line == 5 && strstr(err.message, "ENDMDL of line 3") &&
               strstr(err.message, "second structure or model"),
           "two models: status %d, line %ld: %s", status, err.line, err.message);
    EXPECT(structure_is_empty(&s), "a refused read returns nothing");
    status = parse(one_model, &s, &err); /* past END nothing but atoms is looked at */
    EXPECT(status == ELEC_OK && s.count == 1 && !s.has_cell, "one model: status %d: %s", status,
           err.message);
    elec_structure_free(&s);
}

TEST(pqr_fixed_columns_with_run_together_numbers) {
    /* PDB columns: serial 7-11, name 13-16, resName 18-21, chain 22,
       resSeq 23-26, iCode 27, x 31-38, y 39-46, z 47-54.  Wide values run
       into each other and blanks alone cannot split them. */
    char text[1024];
    elec_structure s;
    elec_error err;
    int status;
    const elec_atom_label *l;
    snprintf(text, sizeof text,
             "%-6s%5d %-4s %-4s%c%4d%c   %8.3f%8.3f%8.3f %.4f %.4f\n"
             "%-6s%5d %-4s %-4s%c%4d%c   %8.3f%8.3f%8.3f %.4f %.4f\n"
             "%-6s%5d %-4s %-4s%c%4d%c   %8.3f%8.3f%8.3f %.4f %.4f\n"
             "%-6s%5d %-4s %-4s%c%4d%c   %8.3f%8.3f%8.3f %.4f %.4f\n"
             "%-6s%5d %-4s %-4s%c%4d%c   %8.3f%8.3f%8.3f %.4f %.4f\n",
             "ATOM", 1, "N", "NTER", 'A', 1234, ' ', -100.123, -200.456,
             -300.789, 0.185, 1.824,
             "HETATM", 99999, "ZN", "ZN", 'B', 7, 'C', 10.0, 20.0, 30.0, 2.0,
             1.39,
             /* 9 blank-separated fields, "A1000" is chain + residue */
             "ATOM", 3, "CA", "GLY", 'A', 1000, ' ', 1.0, 2.0, 3.0, -0.1, 1.9,
             /* 9 fields, "NTERA" is a 4-character residue + chain */
             "ATOM", 4, "HT1", "NTER", 'A', 1, ' ', 4.0, 5.0, 6.0, 0.19, 1.0,
             /* columns (the coordinates run together) with an insertion
                code: residue 52A, not 52 */
             "ATOM", 5, "CB", "ALA", 'A', 52, 'A', -100.5, -200.25, -300.125, -0.18, 1.9);
    status = parse(text, &s, &err);
    EXPECT(status == ELEC_OK, "status %d: %s\n%s", status, err.message, text);
    if (status != ELEC_OK) return;
    l = s.label;
    EXPECT(s.count == 5, "count %zu, want 5", s.count);
    EXPECT(s.count == 5 && l[4].residue_number == 52 && l[4].insertion_code == 'A' &&
               s.xyz[12] == -100.5 && s.xyz[14] == -300.125,
           "atom 5 (columns): residue %d insertion '%c' x %g", l[4].residue_number,
           l[4].insertion_code, s.xyz[12]);
    EXPECT(s.xyz[0] == -100.123 && s.xyz[1] == -200.456 &&
               s.xyz[2] == -300.789 && s.charge[0] == 0.185 &&
               s.radius[0] == 1.824,
           "atom 1: %g %g %g q %g r %g", s.xyz[0], s.xyz[1], s.xyz[2],
           s.charge[0], s.radius[0]);
    EXPECT(strcmp(l[0].residue_name, "NTER") == 0 && l[0].chain == 'A' &&
               l[0].residue_number == 1234 && strcmp(l[0].name, "N") == 0,
           "atom 1: '%s' '%c' %d '%s'", l[0].residue_name, l[0].chain,
           l[0].residue_number, l[0].name);
    EXPECT(l[1].is_hetatm && l[1].serial == 99999 &&
               strcmp(l[1].name, "ZN") == 0 && l[1].chain == 'B' &&
               l[1].residue_number == 7 && l[1].insertion_code == 'C' &&
               s.xyz[5] == 30.0 && s.charge[1] == 2.0,
           "HETATM: %d %d '%s' '%c' %d%c z %g", l[1].is_hetatm, l[1].serial,
           l[1].name, l[1].chain, l[1].residue_number, l[1].insertion_code,
           s.xyz[5]);
    EXPECT(l[2].chain == 'A' && l[2].residue_number == 1000 &&
               strcmp(l[2].residue_name, "GLY") == 0 && s.xyz[6] == 1.0,
           "atom 3: '%c' %d '%s' x %g", l[2].chain, l[2].residue_number,
           l[2].residue_name, s.xyz[6]);
    EXPECT(l[3].chain == 'A' && strcmp(l[3].residue_name, "NTER") == 0 &&
               strcmp(l[3].name, "HT1") == 0 && s.radius[3] == 1.0,
           "atom 4: '%c' '%s' '%s'", l[3].chain, l[3].residue_name, l[3].name);
    elec_structure_free(&s);
}

TEST(pqr_cryst1_gives_a_box_only_when_orthorhombic_in_p1) {
    const char *atom = "ATOM 1 C ALA 1 0 0 0 0 1.7\n";
    char text[512];
    elec_structure s;
    elec_error err;
    elec_box box;
    int status;

    snprintf(text, sizeof text, "%s%s",
             "CRYST1   40.000   50.500   60.250  90.00  90.00  90.00 P 1           1\n",
             atom);
    status = parse(text, &s, &err);
    EXPECT(status == ELEC_OK, "status %d: %s", status, err.message);
    if (status != ELEC_OK) return;
    EXPECT(s.has_cell && s.cell_length[0] == 40.0 && s.cell_length[1] == 50.5 &&
               s.cell_length[2] == 60.25 && s.cell_angle[1] == 90.0,
           "cell %d: %g %g %g / %g", s.has_cell, s.cell_length[0],
           s.cell_length[1], s.cell_length[2], s.cell_angle[1]);
    status = (int)elec_structure_box(&s, &box, &err);
    EXPECT(status == ELEC_OK && box.length[0] == 40.0 &&
               box.length[1] == 50.5 && box.length[2] == 60.25,
           "box status %d: %g %g %g", status, box.length[0], box.length[1],
           box.length[2]);
    elec_structure_free(&s);

    /* a crystal's cell (lysozyme's, as pdb2pqr keeps it): the file holds
       the asymmetric unit, so its lengths are no box of these atoms; the
       same cell in P 1 is one */
    snprintf(text, sizeof text, "%s%s",
             "CRYST1   79.100   79.100   37.900  90.00  90.00  90.00 P 43 21 2     8\n",
             atom);
    status = parse(text, &s, &err);
    EXPECT(status == ELEC_OK && strcmp(s.cell_space_group, "P 43 21 2") == 0 && s.cell_z == 8,
           "status %d (%s): space group '%s', Z %d", status, err.message, s.cell_space_group,
           s.cell_z);
    if (status != ELEC_OK) return;
    status = (int)elec_structure_box(&s, &box, &err);
    EXPECT(status == ELEC_ERR_UNSUPPORTED && strstr(err.message, "P 43 21 2, not P 1") &&
               strstr(err.message, "asymmetric unit"),
           "P 43 21 2: status %d, %s", status, err.message);
    elec_structure_free(&s);
    {
        /* P 1 however written, and a record that stops before column 56 */
        static const char *const p1[3] = {
            "CRYST1   79.100   79.100   37.900  90.00  90.00  90.00 P1          1\n",
            "CRYST1   79.100   79.100   37.900  90.00  90.00  90.00 P 1         \n",
            "CRYST1   79.100   79.100   37.900  90.00  90.00  90.00\n"};
        int k;
        for (k = 0; k < 3; k++) {
            snprintf(text, sizeof text, "%s%s", p1[k], atom);
            status = parse(text, &s, &err);
            EXPECT(status == ELEC_OK, "status %d: %s", status, err.message);
            if (status != ELEC_OK) return;
            status = (int)elec_structure_box(&s, &box, &err);
            EXPECT(status == ELEC_OK && box.length[2] == 37.9, "cell %d ('%s', Z %d): status %d, %s",
                   k, s.cell_space_group, s.cell_z, status, err.message);
            elec_structure_free(&s);
        }
    }

    /* monoclinic: a cell, but not a box the periodic methods can take */
    snprintf(text, sizeof text, "%s%s",
             "CRYST1   40.000   50.000   60.000  90.00 100.00  90.00 P 1 21 1      2\n",
             atom);
    status = parse(text, &s, &err);
    EXPECT(status == ELEC_OK && s.has_cell && s.cell_angle[1] == 100.0,
           "status %d: %s", status, err.message);
    if (status != ELEC_OK) return;
    status = (int)elec_structure_box(&s, &box, &err);
    EXPECT(status == ELEC_ERR_UNSUPPORTED, "monoclinic box: status %d", status);
    elec_structure_free(&s);

    /* lengths that fill their columns (%9.3f past 9,999 A) run together:
       read by the PDB's columns, a 7-15, b 16-24, c 25-33 */
    snprintf(text, sizeof text, "CRYST1%9.3f%9.3f%9.3f%7.2f%7.2f%7.2f P 1           1\n%s",
             12345.678, 23456.789, 34567.891, 90.0, 90.0, 90.0, atom);
    status = parse(text, &s, &err);
    EXPECT(status == ELEC_OK && s.has_cell && s.cell_length[0] == 12345.678 &&
               s.cell_length[1] == 23456.789 && s.cell_length[2] == 34567.891 &&
               s.cell_angle[2] == 90.0,
           "run together: status %d (%s), cell %.3f %.3f %.3f", status, err.message,
           s.cell_length[0], s.cell_length[1], s.cell_length[2]);
    if (status == ELEC_OK) elec_structure_free(&s);

    /* the same cell twice is one cell */
    snprintf(text, sizeof text, "%s%s%s",
             "CRYST1   40.000   50.500   60.250  90.00  90.00  90.00 P 1           1\n",
             "CRYST1   40.000   50.500   60.250  90.00  90.00  90.00 P 1           1\n", atom);
    status = parse(text, &s, &err);
    EXPECT(status == ELEC_OK && s.has_cell && s.cell_length[2] == 60.25, "status %d: %s",
           status, err.message);
    if (status == ELEC_OK) elec_structure_free(&s);

    /* the PDB's unit cell, 1 x 1 x 1 A, marks a structure with no crystal
       (NMR, models): a cell read, but no box (as a 1 A box it once gave
       SPME energies of a lattice of copies 1 A apart) */
    snprintf(text, sizeof text, "%s%s",
             "CRYST1    1.000    1.000    1.000  90.00  90.00  90.00 P 1           1\n", atom);
    status = parse(text, &s, &err);
    EXPECT(status == ELEC_OK && s.has_cell && s.cell_length[0] == 1.0, "status %d: %s",
           status, err.message);
    if (status != ELEC_OK) return;
    status = (int)elec_structure_box(&s, &box, &err);
    EXPECT(status == ELEC_ERR_UNSUPPORTED && strstr(err.message, "no crystal cell"),
           "unit cell: status %d, %s", status, err.message);
    elec_structure_free(&s);

    /* no CRYST1 at all */
    status = parse(atom, &s, &err);
    EXPECT(status == ELEC_OK, "status %d: %s", status, err.message);
    status = (int)elec_structure_box(&s, &box, &err);
    EXPECT(status == ELEC_ERR_UNSUPPORTED, "no cell: status %d", status);
    /* a cell filled by the caller with lengths no method takes (they came
       back as a box) */
    {
        static const double bad[4] = {-1.0, 0.0, NAN, 1e300};
        int k;
        s.has_cell = 1;
        s.cell_angle[0] = s.cell_angle[1] = s.cell_angle[2] = 90.0;
        for (k = 0; k < 4; k++) {
            s.cell_length[0] = bad[k];
            s.cell_length[1] = s.cell_length[2] = k == 3 ? 1e300 : 10.0;
            status = (int)elec_structure_box(&s, &box, &err);
            EXPECT(status == ELEC_ERR_INVALID_ARG, "cell length %g: status %d", bad[k], status);
        }
    }
    elec_structure_free(&s);
}

TEST(pqr_malformed_input_fails_with_line_and_field) {
    static const char nul_line[] = "ATOM 2 C\0A GLY 1 1 2 3 0.5 1\n";
    static const char good[] = "ATOM      1  N   GLY     1      21.421   3.562  16.781   0.294   1.821\n";
    struct {
        const char *what, *text;
        size_t length; /* 0: strlen(text) */
        long line;     /* 0: not about one line */
        const char *says;
    } cases[] = { /* a table of cases: its rows are alike by design */
        {"missing field", "ATOM 2 CA GLY 1 1.0 2.0 3.0 0.5\n", 0, 2, "truncated"},
        {"truncated line", "ATOM      2  CA  GLY     1      21.421   3.56", 0, 2,
         "truncated"},
        {"bare record name", "HETATM\n", 0, 2, "truncated"},
        {"nan coordinate", "ATOM 2 CA GLY 1 nan 2.0 3.0 0.5 1.0\n", 0, 2,
         "x coordinate 'nan' is not a finite number"},
        {"inf coordinate", "ATOM 2 CA GLY 1 1.0 -inf 3.0 0.5 1.0\n", 0, 2,
         "y coordinate '-inf' is not a finite number"},
        {"overflowing charge", "ATOM 2 CA GLY 1 1.0 2.0 3.0 1e999 1.0\n", 0, 2,
         "charge '1e999' is not a finite number"},
        {"non-numeric charge", "ATOM 2 CA GLY 1 1.0 2.0 3.0 abc 1.0\n", 0, 2,
         "charge 'abc' is not a number"},
        {"hex float radius", "ATOM 2 CA GLY 1 1.0 2.0 3.0 0.5 0x1p0\n", 0, 2,
         "radius '0x1p0' is not a number"},
        {"bad radius, columns run together",
         "ATOM      2  N   MET A   1     -14.359-115.437  10.981  0.1592 x\n", 0,
         2, "radius 'x' is not a number"},
        {"negative radius", "ATOM 2 CA GLY 1 1.0 2.0 3.0 0.5 -1.5\n", 0, 2,
         "radius -1.5 is negative"},
        {"serial out of range", "ATOM 99999999999 CA GLY 1 1 2 3 0.5 1\n", 0, 2,
         "serial number '99999999999' is out of range"},
        {"atom name too long", "ATOM 2 ABCDEFGHIJ GLY 1 1 2 3 0.5 1\n", 0, 2,
         "atom name 'ABCDEFGHIJ' is longer than 7 characters"},
        {"residue name too long", "ATOM 2 CA GLYCINE 1 1 2 3 0.5 1\n", 0, 2,
         "residue name 'GLYCINE' is longer than 4 characters"},
        {"two-letter chain", "ATOM 2 CA GLY AB 1 1 2 3 0.5 1\n", 0, 2,
         "chain identifier 'AB'"},
        {"embedded NUL", nul_line, sizeof nul_line - 1, 2, "binary data"},
        {"control character", "REMARK \001\n", 0, 2, "binary data"},
        {"garbled CRYST1", "CRYST1   40.000   abc   60.000  90.00  90.00  90.00\n",
         0, 2, "CRYST1 b"},
        {"two cells unlike", "CRYST1   10.000   10.000   10.000  90.00  90.00  90.00\n"
                             "CRYST1   20.000   20.000   20.000  90.00  90.00  90.00\n",
         0, 3, "a second CRYST1 cell (20 20 20, 90 90 90) unlike line 2's"},
        /* read as no atom at all, once, without a word */
        {"indented atom", "  ATOM 2 CA GLY 1 1 2 3 0.5 1\n", 0, 2, "indented by 2 column(s)"},
        {"lines ended by CR alone", "ATOM 2 CA GLY 1 1 2 3 0.5 1\rATOM 3 CA GLY 1 4 2 3 0.5 1\r",
         0, 2, "CR alone"},
        {"an atom after a CR and blanks", "REMARK x\r  ATOM 3 CA GLY 1 4 2 3 0.5 1\n", 0, 2,
         "CR alone"},
    };
    size_t c;
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char text[512];
        size_t length = cases[c].length ? cases[c].length : strlen(cases[c].text);
        elec_structure s;
        elec_error err;
        int status;
        /* a good first line, so the bad one is line 2 */
        memcpy(text, good, sizeof good - 1);
        memcpy(text + sizeof good - 1, cases[c].text, length);
        memset(&s, 0xab, sizeof s);
        status = (int)elec_parse_pqr(text, sizeof good - 1 + length, &s, &err);
        EXPECT(status == ELEC_ERR_PARSE && err.status == ELEC_ERR_PARSE,
               "%s: status %d, want ELEC_ERR_PARSE", cases[c].what, status);
        EXPECT(err.line == cases[c].line, "%s: line %ld, want %ld (%s)",
               cases[c].what, err.line, cases[c].line, err.message);
        EXPECT(strstr(err.message, cases[c].says) != NULL,
               "%s: message '%s' does not say '%s'", cases[c].what,
               err.message, cases[c].says);
        EXPECT(structure_is_empty(&s), "%s: *out is not zeroed", cases[c].what);
    }
}

TEST(pqr_after_a_byte_order_mark_reads_its_first_atom) {
    /* a UTF-8 byte-order mark before the first record once hid it */
    elec_structure s;
    elec_error err;
    int status = parse("\xEF\xBB\xBF"
                       "ATOM 1 N GLY 1 1 2 3 0.5 1\nATOM 2 CA GLY 1 4 5 6 -0.5 1\n", &s, &err);
    EXPECT(status == ELEC_OK && s.count == 2 && s.charge[0] == 0.5, "status %d, %zu atoms: %s",
           status, status == ELEC_OK ? s.count : 0, err.message);
    if (status == ELEC_OK) elec_structure_free(&s);
    /* a carriage return inside a REMARK hides no atom: read as before (an
       atom after one is refused: pqr_malformed_input_fails_with_line_and_field),
       and an indented word that only starts like a keyword is no record */
    status = parse("REMARK a\rb\n  ATOMS ARE HERE\nATOM 1 N GLY 1 1 2 3 0.5 1\n", &s, &err);
    EXPECT(status == ELEC_OK && s.count == 1, "status %d: %s", status, err.message);
    if (status == ELEC_OK) elec_structure_free(&s);
}

TEST(pqr_reads_numbers_past_their_columns_as_their_writers_meant) {
    /* Past 99,999 atoms and 9,999 residues the PDB's columns overflow:
       hybrid-36 (Phenix, ChimeraX) counts on from "A0000" (serial) and
       "A000" (residue) in base 36, upper case, then lower case; VMD writes
       asterisks past 1,048,575.  The values below are the convention's own
       boundaries, counted from its definition: 10^w, then 26 * 36^(w-1)
       upper-case numbers, then as many lower-case ones.  VMD writes
       serials past 99,999 in hexadecimal ("186a0"): a label, read as -1. */
    static const char fixed[] =
        "ATOM  99999  O   HOH W9999      10.000  10.000  10.000 -0.8476 1.7700\n"
        "ATOM  A0000  H1  HOH WA000      10.800  10.600  10.000  0.4238 1.0000\n"
        "ATOM  ZZZZZ  H2  HOH WZZZZ       9.200  10.600  10.000  0.4238 1.0000\n"
        "ATOM  a0000  O   HOH Wa000      20.000  10.000  10.000 -0.8476 1.7700\n"
        "ATOM  *****  H1  HOH Wa001      20.800  10.600  10.000  0.4238 1.0000\n";
    static const char whitespace[] = "ATOM A0001 O HOH A001 1 2 3 -0.8 1.7\n"
                                     "ATOM ***** H1 HOH A001 2 2 3 0.4 1.0\n"
                                     "ATOM 186a0 H2 HOH A001 3 2 3 0.4 1.0\n";
    static const struct {
        int serial, residue;
    } want[5] = {{99999, 9999},
                 {100000, 10000},
                 {100000 + 26 * 36 * 36 * 36 * 36 - 1, 10000 + 26 * 36 * 36 * 36 - 1},
                 {100000 + 26 * 36 * 36 * 36 * 36, 10000 + 26 * 36 * 36 * 36},
                 {-1, 10000 + 26 * 36 * 36 * 36 + 1}};
    static const char *const refused[][2] = {
        {"ATOM  A0000  O   HOH  ****      10.000  10.000  10.000 -0.8476 1.7700\n",
         "residue number '****' overflowed its columns"},
        {"ATOM  Aa000  O   HOH  Aa00      10.000  10.000  10.000 -0.8476 1.7700\n",
         "residue number 'Aa00' is not an integer"}}; /* mixed case */
    elec_structure s;
    elec_error err;
    size_t i, residues[3];
    int status = parse(fixed, &s, &err);
    EXPECT(status == ELEC_OK && s.count == 5, "status %d: %s", status, err.message);
    if (status != ELEC_OK) return;
    for (i = 0; i < 5; i++)
        EXPECT(s.label[i].serial == want[i].serial &&
                   s.label[i].residue_number == want[i].residue && s.label[i].chain == 'W',
               "atom %zu: serial %d residue %d chain '%c', want %d %d 'W'", i + 1,
               s.label[i].serial, s.label[i].residue_number, s.label[i].chain, want[i].serial,
               want[i].residue);
    /* the numbers rise, so the residues are those of one chain */
    status = (int)elec_structure_components(&s, NULL, NULL, NULL, residues, &err);
    EXPECT(status == ELEC_OK && residues[0] == 5 && residues[1] == 1,
           "%zu residues in %zu chains, want 5 in 1", residues[0], residues[1]);
    elec_structure_free(&s);
    status = parse(whitespace, &s, &err);
    EXPECT(status == ELEC_OK && s.count == 3 && s.label[0].serial == 100001 &&
               s.label[0].residue_number == 10001 && s.label[1].serial == -1 &&
               s.label[2].serial == -1,
           "whitespace dialect (VMD's hexadecimal serial last): status %d: %s", status,
           err.message);
    if (status == ELEC_OK) elec_structure_free(&s);
    for (i = 0; i < 2; i++) {
        status = parse(refused[i][0], &s, &err);
        EXPECT(status == ELEC_ERR_PARSE && strstr(err.message, refused[i][1]) != NULL,
               "case %zu: status %d: '%s' does not say '%s'", i, status, err.message,
               refused[i][1]);
    }
}

TEST(pqr_without_atoms_or_file_fails) {
    elec_structure s;
    elec_error err;
    int status;

    memset(&s, 0xab, sizeof s);
    status = (int)elec_parse_pqr("", 0, &s, &err);
    EXPECT(status == ELEC_ERR_PARSE && err.line == 0 &&
               strstr(err.message, "no ATOM or HETATM records"),
           "empty text: status %d line %ld '%s'", status, err.line, err.message);
    EXPECT(structure_is_empty(&s), "empty text: *out is not zeroed");

    status = parse("REMARK nothing here\r\nTER\r\nEND\r\n", &s, &err);
    EXPECT(status == ELEC_ERR_PARSE && err.line == 0 &&
               strstr(err.message, "no ATOM or HETATM records"),
           "no atoms: status %d line %ld '%s'", status, err.line, err.message);
    EXPECT(structure_is_empty(&s), "no atoms: *out is not zeroed");

    memset(&s, 0xab, sizeof s);
    status = (int)elec_read_pqr("build/no_such_file.pqr", &s, &err);
    EXPECT(status == ELEC_ERR_IO && strstr(err.message, "cannot open"),
           "missing file: status %d '%s'", status, err.message);
    EXPECT(structure_is_empty(&s), "missing file: *out is not zeroed");
}

TEST(pqr_two_million_atoms) {
    /* No fixed limit: arrays grow geometrically.  Charges +0.5 and -0.25
       alternate; both are powers of two, so every partial sum is exact and
       the net charge must be exactly 250000. */
    const size_t n = 2000000;
    size_t i, used = 0, cap = n * 64;
    char *text;
    elec_structure s;
    elec_error err;
    int status;
    double net = 0.0;
    const char *quick = getenv("ELEC_TEST_QUICK");
    if (quick && *quick && strcmp(quick, "0") != 0)
        SKIP("ELEC_TEST_QUICK is set");
    text = (char *)malloc(cap);
    EXPECT(text != NULL, "no memory for the text");
    if (!text) return;
    for (i = 0; i < n; i++)
        used += (size_t)snprintf(text + used, cap - used,
                                 "ATOM %zu C ALA %zu %d.%03d %d.5 -%d.25 %s 1.7\n",
                                 i + 1, i / 10 + 1, (int)(i % 1000),
                                 (int)(i % 997), (int)(i % 89), (int)(i % 7),
                                 i % 2 ? "-0.25" : "0.5");
    status = (int)elec_parse_pqr(text, used, &s, &err);
    free(text);
    EXPECT(status == ELEC_OK, "status %d: %s", status, err.message);
    if (status != ELEC_OK) return;
    EXPECT(s.count == n, "count %zu, want %zu", s.count, n);
    for (i = 0; i < s.count; i++) net += s.charge[i];
    EXPECT(net == 250000.0, "net charge %.6f, want 250000", net);
    EXPECT(s.label[n - 1].serial == (int)n &&
               s.label[n - 1].residue_number == (int)((n - 1) / 10 + 1) &&
               s.xyz[3 * (n - 1)] == (double)((n - 1) % 1000) +
                                         ((n - 1) % 997) / 1000.0,
           "last atom: serial %d residue %d x %g", s.label[n - 1].serial,
           s.label[n - 1].residue_number, s.xyz[3 * (n - 1)]);
    elec_structure_free(&s);
}

TEST(pqr_reads_every_real_structure) {
    /* Atom counts and net charges from ../shared/data/structures/README.md.
       The README rounds net charge to 2 decimals: 0.005 e, plus 0.001 e
       for the sum of up to 16,090 charges of 3-4 decimals. */
    static const struct {
        const char *name;
        size_t atoms;
        double net_charge;
    } files[] = {{"fas2", 906, 4.05},          {"1d7h-min", 1663, 0.99},
                 {"2LZT-ASP66", 1960, 8.00},   {"mache", 8279, -10.00},
                 {"actin-dimer", 11754, -24.00}, {"achbp", 16090, -49.67}};
    size_t f;
    FILE *probe = fopen("../shared/data/structures/README.md", "r");
    if (!probe) SKIP("../shared/data/structures is absent");
    fclose(probe);
    for (f = 0; f < sizeof files / sizeof files[0]; f++) {
        char path[256];
        elec_structure s;
        elec_error err;
        elec_atoms atoms;
        double net = 0.0;
        size_t i;
        int status;
        snprintf(path, sizeof path, "../shared/data/structures/%s.pqr",
                 files[f].name);
        status = (int)elec_read_pqr(path, &s, &err);
        EXPECT(status == ELEC_OK, "%s: status %d: %s", path, status,
               err.message);
        if (status != ELEC_OK) continue;
        for (i = 0; i < s.count; i++) net += s.charge[i];
        printf("     %-12s %6zu atoms, net charge %+.4f e\n", files[f].name,
               s.count, net);
        EXPECT(s.count == files[f].atoms, "%s: %zu atoms, want %zu",
               files[f].name, s.count, files[f].atoms);
        EXPECT(fabs(net - files[f].net_charge) <= 0.006,
               "%s: net charge %.4f, want %.2f", files[f].name, net,
               files[f].net_charge);
        atoms = elec_structure_atoms(&s);
        status = (int)elec_atoms_check(&atoms, 1, &err);
        EXPECT(status == ELEC_OK && atoms.count == s.count,
               "%s: atoms view check %d: %s", files[f].name, status,
               err.message);
        elec_structure_free(&s);
    }
}

/* -------------------------------------------------------------- OpenDX */

/* A value distinct at every point of the lattice, of both signs and of
   magnitudes far apart, none exactly a short decimal. */
static float dx_value(int i, int j, int k, size_t index) {
    double v = (100 * i + 10 * j + k) + 0.123456789 * (k + 1);
    return (float)(index % 2 ? -1e-3 * v : 1e3 * v);
}

TEST(dx_round_trip_is_exact_and_z_fastest_on_disk) {
    const char *path = "build/test_io_roundtrip.dx";
    elec_lattice lat, back;
    float *map, *read_map = NULL;
    size_t n, index, mismatches = 0;
    int i, j, k, status;
    elec_error err;
    char *text, *data;
    lat.dims[0] = 5;
    lat.dims[1] = 4;
    lat.dims[2] = 3;
    lat.origin[0] = -12.3;
    lat.origin[1] = 0.1;
    lat.origin[2] = 7.0 / 3.0; /* needs 17 digits to read back */
    lat.spacing[0] = 0.5;
    lat.spacing[1] = 0.37;
    lat.spacing[2] = 1.0 / 3.0;
    n = elec_lattice_size(&lat);
    map = (float *)malloc(n * sizeof *map);
    if (!map) return;
    for (k = 0; k < 3; k++)
        for (j = 0; j < 4; j++)
            for (i = 0; i < 5; i++) {
                index = (size_t)i + 5 * ((size_t)j + 4 * (size_t)k);
                map[index] = dx_value(i, j, k, index);
            }
    status = (int)elec_write_dx(path, &lat, map, "first line\nsecond line", &err);
    EXPECT(status == ELEC_OK, "write status %d: %s", status, err.message);
    status = (int)elec_read_dx(path, &back, &read_map, &err);
    EXPECT(status == ELEC_OK && read_map, "read status %d: %s", status,
           err.message);
    if (status == ELEC_OK) {
        /* exact: 9 significant digits are enough for any float, and the
           header writes each double in as many digits as it needs */
        for (i = 0; i < 3; i++)
            EXPECT(back.dims[i] == lat.dims[i] &&
                       back.origin[i] == lat.origin[i] &&
                       back.spacing[i] == lat.spacing[i],
                   "axis %d: dims %d origin %.17g spacing %.17g", i,
                   back.dims[i], back.origin[i], back.spacing[i]);
        for (index = 0; index < n; index++)
            if (read_map[index] != map[index]) mismatches++;
        EXPECT(mismatches == 0, "%zu of %zu values differ", mismatches, n);
    }
    elec_free(read_map);

    /* On disk: comments, then z varying fastest, three values a line. */
    text = read_text(path);
    EXPECT(text != NULL, "cannot read %s back", path);
    if (text) {
        float first, second, third, fourth;
        EXPECT(strncmp(text, "# first line\n# second line\n", 27) == 0,
               "comment lines: %.40s", text);
        EXPECT(strstr(text, "object 1 class gridpositions counts 5 4 3\n") &&
                   strstr(text, "object 2 class gridconnections counts 5 4 3\n") &&
                   strstr(text, "items 60 data follows\n") &&
                   strstr(text, "component \"data\" value 3\n"),
               "header or trailer lines missing:\n%s", text);
        data = strstr(text, "data follows\n");
        if (data) {
            data += strlen("data follows\n");
            EXPECT(sscanf(data, "%g %g %g\n%g", &first, &second, &third,
                          &fourth) == 4,
                   "data lines: %.80s", data);
            EXPECT(first == map[0], "first value %g is point (0,0,0) %g",
                   first, map[0]);
            EXPECT(second == map[5 * 4 * 1], "second value %g is point (0,0,1) %g",
                   second, map[20]);
            EXPECT(third == map[5 * 4 * 2], "third value %g is point (0,0,2) %g",
                   third, map[40]);
            EXPECT(fourth == map[5 * 1], "fourth value %g is point (0,1,0) %g",
                   fourth, map[5]);
        }
        free(text);
    }
    free(map);
    remove(path);
}

TEST(dx_round_trip_keeps_arbitrary_floats_bit_for_bit) {
    /* Seeded random floats over 12 decades and both signs, and the
       extremes: %.8e writes 9 significant digits, which read back to the
       same float (FLT_DECIMAL_DIG is 9), so the tolerance is zero. */
    const unsigned long long seed = 20260311;
    const char *path = "build/test_io_random.dx";
    test_rng rng = test_rng_seeded(seed);
    elec_lattice lat;
    float *map, *back = NULL;
    double *want;
    size_t n, i;
    int status;
    elec_error err;
    lat.dims[0] = 7;
    lat.dims[1] = 6;
    lat.dims[2] = 5;
    for (i = 0; i < 3; i++) {
        lat.origin[i] = -10.0 * test_uniform(&rng);
        lat.spacing[i] = 0.1 + test_uniform(&rng);
    }
    n = elec_lattice_size(&lat);
    map = (float *)malloc(n * sizeof *map);
    want = (double *)malloc(n * sizeof *want);
    if (!map || !want) {
        free(map);
        free(want);
        return;
    }
    for (i = 0; i < n; i++) {
        double magnitude = pow(10.0, -6.0 + 12.0 * test_uniform(&rng));
        map[i] = (float)(test_uniform(&rng) < 0.5 ? -magnitude : magnitude);
    }
    /* the extremes: FLT_MAX's 9 digits are a little past it as a double
       (its round trip was once refused as not finite; an audit), the least
       normal and subnormal floats, and a negative zero */
    map[0] = FLT_MAX;
    map[1] = -FLT_MAX;
    map[2] = FLT_MIN;
    map[3] = -1.40129846e-45f;
    map[4] = -0.0f;
    for (i = 0; i < n; i++) want[i] = map[i];
    status = (int)elec_write_dx(path, &lat, map, NULL, &err);
    EXPECT(status == ELEC_OK, "seed %llu: write status %d: %s", seed, status,
           err.message);
    status = (int)elec_read_dx(path, &lat, &back, &err);
    EXPECT(status == ELEC_OK, "seed %llu: read status %d: %s", seed, status,
           err.message);
    if (status == ELEC_OK) {
        EXPECT(test_all_finite_float(back, n), "seed %llu: non-finite value",
               seed);
        EXPECT(test_max_abs_diff_float(back, want, n) == 0.0 &&
                   test_rel_rms_float(back, want, n) == 0.0 && signbit(back[4]),
               "seed %llu: max difference %g (or -0 read as +0)", seed,
               test_max_abs_diff_float(back, want, n));
    }
    elec_free(back);
    free(map);
    free(want);
    remove(path);
}

TEST(dx_reader_takes_float_type_one_value_a_line_no_trailer) {
    /* 2 x 1 x 2, "type float", comments between header lines, one value a
       line, no trailer.  File order is z fastest: (0,0,0) (0,0,1) (1,0,0)
       (1,0,1); the map is x fastest: (0,0,0) (1,0,0) (0,0,1) (1,0,1). */
    const char *path = "build/test_io_float.dx";
    const char *text =
        "# made by hand\n"
        "object 1 class gridpositions counts 2 1 2\n"
        "# comment inside the header\n"
        "origin 0 0 0\n"
        "delta 1.5 0 0\n"
        "\n"
        "delta 0 2 0\n"
        "delta 0 0 0.25\n"
        "object 2 class gridconnections counts 2 1 2\n"
        "object 3 class array type float rank 0 items 4 data follows\n"
        "1\n2\n"
        "  3.5e0\n"
        "-4\n";
    elec_lattice lat;
    float *map = NULL;
    elec_error err;
    int status;
    EXPECT(write_file(path, text, strlen(text)), "cannot write %s", path);
    status = (int)elec_read_dx(path, &lat, &map, &err);
    EXPECT(status == ELEC_OK, "status %d: %s", status, err.message);
    if (status == ELEC_OK) {
        EXPECT(lat.dims[0] == 2 && lat.dims[1] == 1 && lat.dims[2] == 2 &&
                   lat.spacing[0] == 1.5 && lat.spacing[1] == 2.0 &&
                   lat.spacing[2] == 0.25,
               "lattice %d %d %d, spacing %g %g %g", lat.dims[0], lat.dims[1],
               lat.dims[2], lat.spacing[0], lat.spacing[1], lat.spacing[2]);
        EXPECT(map[0] == 1.0f && map[1] == 3.5f && map[2] == 2.0f &&
                   map[3] == -4.0f,
               "map %g %g %g %g, want 1 3.5 2 -4", map[0], map[1], map[2],
               map[3]);
    }
    elec_free(map);
    remove(path);
}

TEST(dx_malformed_input_fails_with_line) {
    static const char header[] =
        "object 1 class gridpositions counts 2 2 2\n"
        "origin 0 0 0\n"
        "delta 1 0 0\n"
        "delta 0 1 0\n"
        "delta 0 0 1\n"
        "object 2 class gridconnections counts 2 2 2\n";
    struct {
        const char *what, *text;
        int with_header, status;
        long line;
        const char *says;
    } cases[] = { /* a table of cases: its rows are alike by design */
        {"wrong item count",
         "object 3 class array type double rank 0 items 7 data follows\n"
         "1 2 3\n4 5 6\n7\n", 1, ELEC_ERR_PARSE, 7, "items 7"},
        {"too few values",
         "object 3 class array type double rank 0 items 8 data follows\n"
         "1 2 3\n4 5 6\n7\n", 1, ELEC_ERR_PARSE, 10, "7 of 8"},
        {"garbage value",
         "object 3 class array type double rank 0 items 8 data follows\n"
         "1 2 3\n4 abc 6\n7 8\n", 1, ELEC_ERR_PARSE, 9, "'abc' is not a number"},
        {"non-finite value",
         "object 3 class array type double rank 0 items 8 data follows\n"
         "1 2 3\n4 5 6\nnan 8\n", 1, ELEC_ERR_PARSE, 10, "'nan'"},
        {"value beyond float range",
         "object 3 class array type double rank 0 items 8 data follows\n"
         "1 2 3\n4 5 1e39\n7 8\n", 1, ELEC_ERR_PARSE, 9, "'1e39'"},
        {"too many values",
         "object 3 class array type double rank 0 items 8 data follows\n"
         "1 2 3\n4 5 6\n7 8 9\n", 1, ELEC_ERR_PARSE, 10, "more values"},
        {"missing header", "1 2 3\n4 5 6\n7 8\n", 0, ELEC_ERR_PARSE, 1,
         "gridpositions"},
        {"empty file", "", 0, ELEC_ERR_PARSE, 0, "no OpenDX header"},
        {"counts differ",
         "object 1 class gridpositions counts 2 2 2\norigin 0 0 0\n"
         "delta 1 0 0\ndelta 0 1 0\ndelta 0 0 1\n"
         "object 2 class gridconnections counts 2 2 3\n", 0, ELEC_ERR_PARSE, 6,
         "differ"},
        {"non-positive count",
         "object 1 class gridpositions counts 2 0 2\n", 0, ELEC_ERR_PARSE, 1,
         "must be positive"},
        {"missing delta",
         "object 1 class gridpositions counts 2 2 2\norigin 0 0 0\n"
         "delta 1 0 0\ndelta 0 1 0\n"
         "object 2 class gridconnections counts 2 2 2\n", 0, ELEC_ERR_PARSE, 5,
         "fewer than three delta"},
        {"skewed delta",
         "object 1 class gridpositions counts 2 2 2\norigin 0 0 0\n"
         "delta 1 0.5 0\n", 0, ELEC_ERR_UNSUPPORTED, 3, "axis-aligned"},
    };
    const char *path = "build/test_io_bad.dx";
    size_t c;
    for (c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        char text[1024];
        elec_lattice lat;
        float *map = (float *)&lat; /* any non-NULL value: must become NULL */
        elec_error err;
        int status;
        snprintf(text, sizeof text, "%s%s", cases[c].with_header ? header : "",
                 cases[c].text);
        EXPECT(write_file(path, text, strlen(text)), "cannot write %s", path);
        status = (int)elec_read_dx(path, &lat, &map, &err);
        EXPECT(status == cases[c].status, "%s: status %d, want %d (%s)",
               cases[c].what, status, cases[c].status, err.message);
        EXPECT(err.line == cases[c].line, "%s: line %ld, want %ld (%s)",
               cases[c].what, err.line, cases[c].line, err.message);
        EXPECT(strstr(err.message, cases[c].says) != NULL,
               "%s: message '%s' does not say '%s'", cases[c].what,
               err.message, cases[c].says);
        EXPECT(map == NULL, "%s: *map is not NULL", cases[c].what);
        if (status == ELEC_OK) elec_free(map);
    }
    remove(path);
}

TEST(dx_writer_refuses_non_finite_values_and_bad_paths) {
    const char *path = "build/test_io_nan.dx";
    elec_lattice lat;
    float map[8];
    elec_error err;
    FILE *f;
    int i, status;
    memset(&lat, 0, sizeof lat);
    for (i = 0; i < 3; i++) {
        lat.dims[i] = 2;
        lat.spacing[i] = 1.0;
    }
    for (i = 0; i < 8; i++) map[i] = (float)i;
    map[5] = (float)NAN;
    remove(path);
    status = (int)elec_write_dx(path, &lat, map, NULL, &err);
    EXPECT(status == ELEC_ERR_INVALID_ARG && strstr(err.message, "map[5]"),
           "NaN: status %d '%s'", status, err.message);
    f = fopen(path, "r");
    EXPECT(f == NULL, "a refused map still left %s behind", path);
    if (f) fclose(f);

    map[5] = (float)HUGE_VAL;
    status = (int)elec_write_dx(path, &lat, map, NULL, &err);
    EXPECT(status == ELEC_ERR_INVALID_ARG && strstr(err.message, "map[5]"),
           "infinity: status %d '%s'", status, err.message);

    map[5] = 5.0f;
    status = (int)elec_write_dx("build/no_such_dir/x.dx", &lat, map, NULL, &err);
    EXPECT(status == ELEC_ERR_IO, "unwritable path: status %d '%s'", status,
           err.message);
    status = (int)elec_read_dx("build/no_such_file.dx", &lat, (float **)&f, &err);
    EXPECT(status == ELEC_ERR_IO && f == NULL, "missing file: status %d '%s'",
           status, err.message);
}

/* ------------------------------------------------- inputs and outputs */

static elec_lattice small_lattice(float *map) {
    elec_lattice lat;
    int i;
    memset(&lat, 0, sizeof lat);
    for (i = 0; i < 3; i++) {
        lat.dims[i] = 2;
        lat.spacing[i] = 1.0;
    }
    for (i = 0; i < 8; i++) map[i] = (float)(i - 3.5);
    return lat;
}

TEST(output_is_renamed_into_place_whole_or_not_at_all) {
    char *dir = scratch_dir(), path[256], *text;
    elec_output *out;
    elec_error err;
    struct stat st;
    int hidden, status;
    EXPECT(dir != NULL, "mkdtemp failed");
    if (!dir) return;
    snprintf(path, sizeof path, "%s/map.dx", dir);
    EXPECT(write_file(path, "old contents\n", 13), "cannot write %s", path);
    chmod(path, 0640);

    /* before the commit the old file is untouched; abort leaves it whole
       and removes only the temporary file */
    status = (int)elec_output_open(path, &out, &err);
    EXPECT(status == ELEC_OK, "open: %s", err.message);
    if (status != ELEC_OK) {
        scratch_remove(dir);
        return;
    }
    elec_output_printf(out, "new %s %d\n", "contents", 42);
    EXPECT(names_in(dir, &hidden) == 2 && hidden == 1,
           "while writing: the file and one temporary file (%d hidden)", hidden);
    text = read_text(path);
    EXPECT(text && !strcmp(text, "old contents\n"), "before the commit: '%s'", text);
    free(text);
    elec_output_abort(out);
    text = read_text(path);
    EXPECT(text && !strcmp(text, "old contents\n"), "after abort: '%s'", text);
    free(text);
    EXPECT(names_in(dir, &hidden) == 1 && hidden == 0, "abort left %d hidden files",
           hidden);

    /* a commit replaces it whole, keeping its permission bits */
    status = (int)elec_output_open(path, &out, &err);
    EXPECT(status == ELEC_OK, "open: %s", err.message);
    if (status == ELEC_OK) {
        size_t i;
        for (i = 0; i < 20000; i++) elec_output_printf(out, "%08zu\n", i); /* > buffer */
        status = (int)elec_output_commit(out, &err);
        EXPECT(status == ELEC_OK, "commit: %s", err.message);
    }
    text = read_text(path);
    EXPECT(text && strlen(text) == 20000 * 9 && !strncmp(text, "00000000\n", 9) &&
               !strcmp(text + 19999 * 9, "00019999\n"),
           "after the commit: %zu bytes", text ? strlen(text) : 0);
    free(text);
    EXPECT(stat(path, &st) == 0 && (st.st_mode & 0777) == 0640,
           "mode %o after the commit, want 640", (unsigned)(st.st_mode & 0777));
    EXPECT(names_in(dir, &hidden) == 1 && hidden == 0, "commit left %d hidden files",
           hidden);
    /* a name of 250 bytes has no room for the temporary file's longer
       name: the shorter one is used */
    {
        char longname[512];
        size_t n = (size_t)snprintf(longname, sizeof longname, "%s/", dir);
        memset(longname + n, 'a', 250);
        longname[n + 250] = '\0';
        status = (int)elec_output_open(longname, &out, &err);
        EXPECT(status == ELEC_OK, "a 250-byte name: %s", err.message);
        if (status == ELEC_OK) {
            elec_output_write(out, "x\n", 2);
            EXPECT(elec_output_commit(out, &err) == ELEC_OK, "%s", err.message);
        }
        text = read_text(longname);
        EXPECT(text && !strcmp(text, "x\n"), "the 250-byte name holds '%s'", text);
        free(text);
        EXPECT(names_in(dir, &hidden) == 2 && hidden == 0, "%d hidden files", hidden);
    }
    scratch_remove(dir);
}

TEST(a_write_that_fails_midway_leaves_the_old_file_whole) {
    /* A file-size limit (ulimit -f) stops the write part way, as a full
       disk would: the DX writer reports it and the old map stays, whole;
       the temporary file is gone.  SIGXFSZ is ignored, so that the write
       fails with EFBIG instead of the signal ending the test. */
    char *dir = scratch_dir(), path[256], *text;
    struct rlimit old_limit, limit;
    void (*old_handler)(int);
    elec_lattice lat;
    float *map;
    elec_error err;
    size_t i, n = 40 * 40 * 40;
    int hidden, status;
    EXPECT(dir != NULL, "mkdtemp failed");
    if (!dir) return;
    snprintf(path, sizeof path, "%s/map.dx", dir);
    EXPECT(write_file(path, "the old map\n", 12), "cannot write %s", path);
    map = (float *)malloc(n * sizeof *map);
    memset(&lat, 0, sizeof lat);
    for (i = 0; i < 3; i++) {
        lat.dims[i] = 40;
        lat.spacing[i] = 0.5;
    }
    for (i = 0; i < n; i++) map[i] = (float)i; /* ~1 MB of text */
    if (getrlimit(RLIMIT_FSIZE, &old_limit) != 0) {
        free(map);
        scratch_remove(dir);
        SKIP("getrlimit(RLIMIT_FSIZE) failed");
    }
    limit = old_limit;
    limit.rlim_cur = 100000; /* bytes */
    old_handler = signal(SIGXFSZ, SIG_IGN);
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) {
        signal(SIGXFSZ, old_handler);
        free(map);
        scratch_remove(dir);
        SKIP("setrlimit(RLIMIT_FSIZE) failed");
    }
    status = (int)elec_write_dx(path, &lat, map, NULL, &err);
    setrlimit(RLIMIT_FSIZE, &old_limit);
    signal(SIGXFSZ, old_handler);
    EXPECT(status == ELEC_ERR_IO && strstr(err.message, "unchanged"),
           "status %d: %s", status, err.message);
    text = read_text(path);
    EXPECT(text && !strcmp(text, "the old map\n"), "the old file now: %.40s", text);
    free(text);
    EXPECT(names_in(dir, &hidden) == 1 && hidden == 0,
           "%d temporary files left behind", hidden);
    /* and a new path: no file at all afterwards */
    snprintf(path, sizeof path, "%s/new.dx", dir);
    setrlimit(RLIMIT_FSIZE, &limit);
    signal(SIGXFSZ, SIG_IGN);
    status = (int)elec_write_dx(path, &lat, map, NULL, &err);
    setrlimit(RLIMIT_FSIZE, &old_limit);
    signal(SIGXFSZ, old_handler);
    EXPECT(status == ELEC_ERR_IO && strstr(err.message, "no file was left"),
           "new path: status %d: %s", status, err.message);
    EXPECT(names_in(dir, &hidden) == 1 && hidden == 0, "new path left %d names",
           names_in(dir, &hidden));
    free(map);
    scratch_remove(dir);
}

/* Writes the small map to a device node: a full one must fail with the
   node left in place, a null one succeed with it still a device. */
static void check_device_outputs(const char *full, const char *null_device) {
    float map[8];
    elec_lattice lat = small_lattice(map);
    elec_error err;
    struct stat st;
    int status = (int)elec_write_dx(full, &lat, map, NULL, &err);
    EXPECT(status == ELEC_ERR_IO && strstr(err.message, "No space"),
           "%s: status %d: %s", full, status, err.message);
    EXPECT(stat(full, &st) == 0 && S_ISCHR(st.st_mode),
           "%s is no longer a character device", full);
    status = (int)elec_write_dx(null_device, &lat, map, NULL, &err);
    EXPECT(status == ELEC_OK, "%s: %s", null_device, err.message);
    EXPECT(stat(null_device, &st) == 0 && S_ISCHR(st.st_mode),
           "%s is no longer a character device", null_device);
    EXPECT(elec_output_check(full, NULL, &err) == ELEC_OK, "check %s: %s", full,
           err.message);
}

TEST(device_outputs_are_written_in_place_and_never_removed) {
    /* As root, nodes made by mknod in a scratch directory (the real /dev
       is not put at risk); otherwise /dev/full and /dev/null themselves,
       which only root could remove. */
    if (geteuid() == 0) {
#ifdef __linux__
        char *dir = scratch_dir(), full[256], null_device[256];
        EXPECT(dir != NULL, "mkdtemp failed");
        if (!dir) return;
        snprintf(full, sizeof full, "%s/full", dir);
        snprintf(null_device, sizeof null_device, "%s/null", dir);
        if (mknod(full, S_IFCHR | 0666, makedev(1, 7)) != 0 ||
            mknod(null_device, S_IFCHR | 0666, makedev(1, 3)) != 0) {
            int e = errno;
            scratch_remove(dir);
            SKIP("running as root, but mknod failed (%s): no node to write to",
                 strerror(e));
        }
        printf("     device nodes made by mknod in %s\n", dir);
        check_device_outputs(full, null_device);
        scratch_remove(dir);
#else
        SKIP("running as root, and mknod's device numbers are Linux's");
#endif
    } else {
        printf("     not root: no mknod; /dev/full and /dev/null themselves\n");
        check_device_outputs("/dev/full", "/dev/null");
    }
}

TEST(a_pipe_output_is_written_through_and_kept) {
    char *dir = scratch_dir(), fifo[256];
    float map[8];
    elec_lattice lat = small_lattice(map);
    elec_error err;
    struct stat st;
    pid_t child;
    int status, child_status = 0;
    EXPECT(dir != NULL, "mkdtemp failed");
    if (!dir) return;
    snprintf(fifo, sizeof fifo, "%s/pipe", dir);
    if (mkfifo(fifo, 0600) != 0) {
        scratch_remove(dir);
        SKIP("mkfifo failed: %s", strerror(errno));
    }
    /* the check must not wait for a reader */
    EXPECT(elec_output_check(fifo, NULL, &err) == ELEC_OK, "check: %s", err.message);
    fflush(stdout);
    child = fork();
    if (child == 0) { /* the reader: exits 0 when it read a DX header */
        char buf[4096];
        FILE *f = fopen(fifo, "r");
        size_t got = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        buf[got] = '\0';
        _exit(strstr(buf, "object 3 class array") ? 0 : 1);
    }
    EXPECT(child > 0, "fork failed");
    if (child <= 0) {
        scratch_remove(dir);
        return;
    }
    status = (int)elec_write_dx(fifo, &lat, map, NULL, &err);
    EXPECT(status == ELEC_OK, "writing to the pipe: %s", err.message);
    waitpid(child, &child_status, 0);
    EXPECT(WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0,
           "the reader did not get the map");
    EXPECT(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "the pipe is gone");
    scratch_remove(dir);
}

TEST(dev_stdout_redirected_to_a_file_is_written_through) {
    /* /dev/stdout leads to fd 1; where that is a regular file (a shell's
       > out.dx, or >> log) the map goes into it after what the program
       wrote, before what it writes next, and /dev/stdout stays what it was
       (a rename replaced the link itself, as root; opened by name, the map
       was truncated under the program's next line) */
    char *dir = scratch_dir(), path[256], target[256], *text;
    float map[8];
    elec_lattice lat = small_lattice(map);
    struct stat before, after;
    ssize_t target_length;
    int append;
    EXPECT(dir != NULL, "mkdtemp failed");
    if (!dir) return;
    if (lstat("/dev/stdout", &before) != 0) {
        scratch_remove(dir);
        SKIP("this system has no /dev/stdout");
    }
    target_length = readlink("/dev/stdout", target, sizeof target - 1);
    target[target_length > 0 ? target_length : 0] = '\0';
    snprintf(path, sizeof path, "%s/out.dx", dir);
    for (append = 0; append <= 1; append++) {
        pid_t child;
        int child_status = 0;
        const char *map_at, *after_at;
        EXPECT(write_file(path, "old\n", 4), "cannot write %s", path);
        fflush(stdout);
        child = fork();
        if (child == 0) { /* stdout to the file; a line, the map, a line */
            elec_error err;
            int fd = open(path, O_WRONLY | (append ? O_APPEND : O_TRUNC));
            int ok;
            if (fd < 0 || dup2(fd, 1) < 0) _exit(2);
            printf("before\n");
            fflush(stdout);
            ok = elec_output_check("/dev/stdout", NULL, &err) == ELEC_OK &&
                 elec_write_dx("/dev/stdout", &lat, map, NULL, &err) == ELEC_OK;
            printf("after\n");
            fflush(stdout);
            _exit(ok ? 0 : 1);
        }
        EXPECT(child > 0, "fork failed");
        if (child > 0) waitpid(child, &child_status, 0);
        EXPECT(child > 0 && WIFEXITED(child_status) && WEXITSTATUS(child_status) == 0,
               "append %d: writing to /dev/stdout failed (child status %d)", append,
               child_status);
        text = read_text(path);
        map_at = text ? strstr(text, "object 3 class array") : NULL;
        after_at = map_at ? strstr(map_at, "after\n") : NULL;
        EXPECT(text && !strncmp(text, append ? "old\nbefore\n" : "before\n",
                                append ? 11 : 7) &&
                   map_at && after_at && after_at[6] == '\0',
               "append %d: the file holds '%.80s'", append, text ? text : "(none)");
        free(text);
    }
    if (!(lstat("/dev/stdout", &after) == 0 && after.st_mode == before.st_mode &&
          after.st_ino == before.st_ino)) {
        EXPECT(0, "/dev/stdout changed: mode %o -> %o", (unsigned)before.st_mode,
               (unsigned)after.st_mode);
        /* put the link back for the tests after this one */
        if (S_ISLNK(before.st_mode) && target_length > 0 && unlink("/dev/stdout") == 0 &&
            symlink(target, "/dev/stdout") != 0)
            printf("     /dev/stdout could not be restored: %s\n", strerror(errno));
    }
    scratch_remove(dir);
}

TEST(output_check_refuses_the_input_and_what_cannot_be_written) {
    char *dir = scratch_dir(), input[256], same[256], other[256], missing[256];
    elec_error err;
    int status, hidden;
    EXPECT(dir != NULL, "mkdtemp failed");
    if (!dir) return;
    snprintf(input, sizeof input, "%s/in.pqr", dir);
    snprintf(same, sizeof same, "%s/./in.pqr", dir); /* another name, same file */
    snprintf(other, sizeof other, "%s/out.dx", dir);
    snprintf(missing, sizeof missing, "%s/no_such_dir/out.dx", dir);
    EXPECT(write_file(input, "ATOM 1 N ALA 1 0 0 0 1 1.5\n", 27), "write");
    status = (int)elec_output_check(same, input, &err);
    EXPECT(status == ELEC_ERR_INVALID_ARG && strstr(err.message, "input"),
           "the input under another name: %d %s", status, err.message);
    status = (int)elec_output_check(other, input, &err);
    EXPECT(status == ELEC_OK, "a new file beside it: %s", err.message);
    status = (int)elec_output_check(missing, input, &err);
    EXPECT(status == ELEC_ERR_IO, "a missing directory: %d %s", status, err.message);
    status = (int)elec_output_check(dir, NULL, &err);
    EXPECT(status == ELEC_ERR_IO && strstr(err.message, "directory"),
           "a directory: %d %s", status, err.message);
    EXPECT(names_in(dir, &hidden) == 1 && hidden == 0,
           "the checks left %d temporary files", hidden);
    if (geteuid() != 0) {
        /* an unwritable directory (root writes anywhere: not tested there) */
        chmod(dir, 0555);
        status = (int)elec_output_check(other, NULL, &err);
        EXPECT(status == ELEC_ERR_IO, "read-only directory: %d %s", status, err.message);
        chmod(dir, 0755);
    }
    scratch_remove(dir);
}

/* In a child under uid: exit 0 where elec_output_check refuses taken
   (ELEC_ERR_IO, naming the sticky bit) and takes fresh (ELEC_OK), both
   by their full paths and, from within dir, by their bare names; 4 where
   the child cannot reach dir. */
static int sticky_check_as(uid_t uid, const char *dir, const char *taken, const char *fresh,
                           int taken_refused) {
    pid_t child = fork();
    int w = 0;
    if (child == 0) {
        elec_error err;
        const char *bare_taken = strrchr(taken, '/') + 1, *bare_fresh = strrchr(fresh, '/') + 1;
        int k;
        if (setgid((gid_t)uid) != 0 || setuid(uid) != 0) _exit(3);
        if (access(dir, X_OK | W_OK) != 0) _exit(4);
        for (k = 0; k < 2; k++) {
            const elec_status s = elec_output_check(k ? bare_taken : taken, NULL, &err);
            if (taken_refused ? !(s == ELEC_ERR_IO && strstr(err.message, "sticky")) : s != ELEC_OK)
                _exit(1);
            if (elec_output_check(k ? bare_fresh : fresh, NULL, &err) != ELEC_OK) _exit(2);
            if (k == 0 && chdir(dir) != 0) _exit(4);
        }
        _exit(0);
    }
    if (child < 0 || waitpid(child, &w, 0) != child || !WIFEXITED(w)) return -1;
    return WEXITSTATUS(w);
}

TEST(output_check_refuses_another_users_file_in_a_sticky_directory) {
    /* In a directory with the sticky bit (such as /tmp) only a file's
       owner, the directory's or root may replace it, whatever its mode;
       elec writes a temporary file and renames it over the output, so a
       world-writable file of another user's there passed the check, and
       the tools ran their whole computation before the rename failed (an
       audit).  Root makes the directory (mode 1777) and a file of uid
       65534 (mode 666) in it; uid 65533 is refused it and may write a new
       file beside it; its owner may replace it. */
    char dir[512], taken[600], fresh[600];
    const char *tmp = getenv("TMPDIR");
    int got;
    if (geteuid() != 0) SKIP("needs root, to give a file to another user");
    snprintf(dir, sizeof dir, "%s/elec_sticky_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    EXPECT(mkdtemp(dir) != NULL, "mkdtemp failed");
    snprintf(taken, sizeof taken, "%s/phi.dx", dir);
    snprintf(fresh, sizeof fresh, "%s/new.dx", dir);
    EXPECT(chmod(dir, 01777) == 0 && write_file(taken, "old\n", 4) && chmod(taken, 0666) == 0 &&
               chown(taken, 65534, 65534) == 0,
           "could not set the directory and file up");
    got = sticky_check_as(65533, dir, taken, fresh, 1);
    if (got == 4) {
        remove(taken);
        rmdir(dir);
        SKIP("uid 65533 cannot reach %s", dir);
    }
    EXPECT(got == 0, "another user: %s (child exit %d: 1 taken not refused, 2 fresh refused)",
           got == 1 ? "another user's file in a sticky directory passed the check" : "failed",
           got);
    got = sticky_check_as(65534, dir, taken, fresh, 0);
    EXPECT(got == 0, "its owner: child exit %d", got);
    {
        /* a symbolic link is replaced itself: its owner decides, not its
           target's (a review) -- uid 65533's own link to root's file is
           taken, root's link to uid 65533's file refused */
        char own_link[700], root_file[700], root_link[700], user_file[700];
        snprintf(own_link, sizeof own_link, "%s/own_link.dx", dir);
        snprintf(root_file, sizeof root_file, "%s/root_file.dx", dir);
        snprintf(root_link, sizeof root_link, "%s/root_link.dx", dir);
        snprintf(user_file, sizeof user_file, "%s/user_file.dx", dir);
        EXPECT(write_file(root_file, "old\n", 4) && chmod(root_file, 0666) == 0 &&
                   symlink(root_file, own_link) == 0 && lchown(own_link, 65533, 65533) == 0 &&
                   write_file(user_file, "old\n", 4) && chown(user_file, 65533, 65533) == 0 &&
                   symlink(user_file, root_link) == 0,
               "could not set the links up");
        got = sticky_check_as(65533, dir, root_link, own_link, 1);
        EXPECT(got == 0, "links: child exit %d (1: root's link passed, 2: its own refused)", got);
        remove(own_link);
        remove(root_file);
        remove(root_link);
        remove(user_file);
    }
    remove(taken);
    remove(fresh);
    rmdir(dir);
}

TEST(inputs_too_large_or_binary_are_refused_before_reading_them) {
    char *dir = scratch_dir(), path[256];
    elec_structure s;
    elec_lattice lat;
    float *map = NULL;
    elec_error err;
    FILE *f;
    int status;
    EXPECT(dir != NULL, "mkdtemp failed");
    if (!dir) return;
    /* a sparse file one byte past the limit: refused from its size, at
       once, without a byte read */
    snprintf(path, sizeof path, "%s/huge.pqr", dir);
    f = fopen(path, "wb");
    if (f && fseek(f, (long)ELEC_MAX_INPUT_BYTES, SEEK_SET) == 0) fputc('\n', f);
    if (f) fclose(f);
    status = (int)elec_read_pqr(path, &s, &err);
    EXPECT(status == ELEC_ERR_UNSUPPORTED && strstr(err.message, "ELEC_MAX_INPUT_BYTES"),
           "the limit + 1 byte, PQR: %d %s", status, err.message);
    status = (int)elec_read_dx(path, &lat, &map, &err);
    EXPECT(status == ELEC_ERR_UNSUPPORTED && map == NULL,
           "the limit + 1 byte, DX: %d %s", status, err.message);
    remove(path);
    /* the largest map elec writes (ELEC_DEFAULT_MAX_LATTICE_POINTS floats
       and MRC's header) is a file the readers take (it was 1 KiB over) */
    EXPECT(ELEC_MAX_INPUT_BYTES >= 1024 + 4 * ELEC_DEFAULT_MAX_LATTICE_POINTS,
           "ELEC_MAX_INPUT_BYTES %zu is short of the largest map",
           (size_t)ELEC_MAX_INPUT_BYTES);
    /* /dev/zero: binary at its first byte, refused after one read */
    status = (int)elec_read_pqr("/dev/zero", &s, &err);
    EXPECT(status == ELEC_ERR_PARSE && err.line == 1 && strstr(err.message, "binary"),
           "/dev/zero as PQR: %d %s", status, err.message);
    status = (int)elec_read_dx("/dev/zero", &lat, &map, &err);
    EXPECT(status == ELEC_ERR_PARSE && strstr(err.message, "binary"),
           "/dev/zero as DX: %d %s", status, err.message);
    /* a NUL on line 3 */
    snprintf(path, sizeof path, "%s/nul.pqr", dir);
    EXPECT(write_file(path, "REMARK a\nREMARK b\nATOM\0 1\n", 26), "write");
    status = (int)elec_read_pqr(path, &s, &err);
    EXPECT(status == ELEC_ERR_PARSE && err.line == 3 && strstr(err.message, "column 5"),
           "NUL on line 3: %d line %ld %s", status, err.line, err.message);
    status = (int)elec_read_pqr(dir, &s, &err);
    EXPECT(status == ELEC_ERR_IO && strstr(err.message, "directory"),
           "a directory as input: %d %s", status, err.message);
    scratch_remove(dir);
}

TEST(dx_header_claiming_more_values_than_its_file_holds_is_refused) {
    /* 1000^3 items in a 229-byte file: refused before a 4 GB allocation,
       from the bytes that follow the header (2 a value at least) */
    static const char text[] =
        "object 1 class gridpositions counts 1000 1000 1000\n"
        "origin 0 0 0\ndelta 1 0 0\ndelta 0 1 0\ndelta 0 0 1\n"
        "object 2 class gridconnections counts 1000 1000 1000\n"
        "object 3 class array type double rank 0 items 1000000000 data follows\n"
        "1 2 3\n";
    elec_lattice lat;
    float *map = (float *)&lat;
    elec_error err;
    int status = (int)elec_parse_dx(text, sizeof text - 1, &lat, &map, &err);
    EXPECT(status == ELEC_ERR_PARSE && err.line == 7 && strstr(err.message, "items") &&
               map == NULL,
           "status %d line %ld: %s", status, err.line, err.message);
    /* the same counts with the values there would be read: the limit is
       the file, not a number (a 2 x 2 x 2 map from memory reads fine) */
    {
        static const char ok[] =
            "object 1 class gridpositions counts 2 2 2\n"
            "origin 0 0 0\ndelta 1 0 0\ndelta 0 1 0\ndelta 0 0 1\n"
            "object 3 class array type float rank 0 items 8 data follows\n"
            "1 2 3 4 5 6 7 8";
        status = (int)elec_parse_dx(ok, sizeof ok - 1, &lat, &map, &err);
        EXPECT(status == ELEC_OK && map && map[1] == 5.0f, "%d %s", status, err.message);
        if (status == ELEC_OK) elec_free(map);
    }
}

/* ------------------------------------------------------ the C locale */

/* Sets LC_NUMERIC to the first locale of a few whose decimal point is
   not '.' and returns its name; NULL, with "C" set, where the system has
   none of them (a container without locales: make one with
   "localedef -i de_DE -f UTF-8 DIR/de_DE.UTF-8" and run with LOCPATH=DIR,
   as .ci/run does). */
static const char *comma_locale(void) {
    static const char *const names[] = {"de_DE.UTF-8", "de_DE.utf8",  "fr_FR.UTF-8",
                                        "fr_FR.utf8",  "de_DE",       "fr_FR",
                                        "de_DE.ISO8859-1", "German_Germany.1252"};
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++)
        if (setlocale(LC_NUMERIC, names[i]) && strcmp(localeconv()->decimal_point, ".") != 0)
            return names[i];
    setlocale(LC_NUMERIC, "C");
    return NULL;
}

/* A host program that sets a German LC_NUMERIC gets the same files as
   one in "C", and reads ordinary files: before, elec_write_dx wrote
   "origin 0,5 ..." and "1,23456787e+02" (which viewers cannot read)
   while saying ELEC_OK, and the readers refused every "1.500". */
TEST(numbers_keep_their_decimal_point_whatever_lc_numeric_says) {
    const char *c_path = "build/test_io_locale_c.dx", *path = "build/test_io_locale.dx";
    static const char pqr[] =
        "CRYST1   40.500   50.250   60.125  90.00  90.00  90.00 P 1           1\n"
        "ATOM      1  N   GLY A   1       1.500  -2.250   0.125 -0.300 1.8240\n"
        "ATOM 2 CA GLY 1 .5 1e1 -3.75E-1 0.25 2.\n"
        "ATOM 3 CB GLY 1 -.5 +.25 -.125 -.834 1.5\n"; /* a sign, then the point */
    static const char points[] = "1.25 -2.5 3.0e2\n";
    const char *locale;
    elec_lattice lat, back;
    elec_structure s;
    elec_surface surface;
    elec_error err;
    float *map, *read_map = NULL;
    char *c_text, *text;
    size_t n, index, mismatches = 0;
    int status, axis;
    lat.dims[0] = 3;
    lat.dims[1] = 2;
    lat.dims[2] = 4;
    lat.origin[0] = 0.5;
    lat.origin[1] = -12.3;
    lat.origin[2] = 7.0 / 3.0; /* 17 digits: the %.15g read-back check */
    lat.spacing[0] = 1.5;
    lat.spacing[1] = 0.37;
    lat.spacing[2] = 1.0 / 3.0;
    n = elec_lattice_size(&lat);
    map = (float *)malloc(n * sizeof *map);
    if (!map) return;
    for (index = 0; index < n; index++)
        map[index] = dx_value((int)(index % 3), (int)(index / 3 % 2), (int)(index / 6), index);
    /* the file as the "C" locale writes it, to compare with */
    setlocale(LC_NUMERIC, "C");
    status = (int)elec_write_dx(c_path, &lat, map, "C locale", &err);
    EXPECT(status == ELEC_OK, "write in \"C\": %d %s", status, err.message);
    locale = comma_locale();
    if (!locale) {
        free(map);
        remove(c_path);
        SKIP("no locale with a comma for its decimal point (de_DE.UTF-8, fr_FR.UTF-8, ...) "
             "is installed: make one with localedef and set LOCPATH");
    }

    status = (int)elec_write_dx(path, &lat, map, "C locale", &err);
    EXPECT(status == ELEC_OK, "write in %s: %d %s", locale, status, err.message);
    c_text = read_text(c_path);
    text = read_text(path);
    EXPECT(c_text && text && strcmp(c_text, text) == 0,
           "in %s the file differs from \"C\"'s:\n%.300s\nand not\n%.300s", locale,
           text ? text : "(none)", c_text ? c_text : "(none)");
    EXPECT(text && strstr(text, "origin 0.5 -12.3 2.3333333333333335\n") &&
               strstr(text, "delta 1.5 0.000000e+00 0.000000e+00\n") &&
               strstr(text, "data follows\n1.23456787e+02 ") && !strchr(text, ','),
           "in %s:\n%.300s", locale, text ? text : "(none)");
    free(c_text);
    free(text);
    status = (int)elec_read_dx(path, &back, &read_map, &err);
    EXPECT(status == ELEC_OK, "read in %s: %d %s", locale, status, err.message);
    if (status == ELEC_OK) {
        for (axis = 0; axis < 3; axis++)
            EXPECT(back.dims[axis] == lat.dims[axis] && back.origin[axis] == lat.origin[axis] &&
                       back.spacing[axis] == lat.spacing[axis],
                   "axis %d: origin %.17g spacing %.17g", axis, back.origin[axis],
                   back.spacing[axis]);
        for (index = 0; index < n; index++)
            if (read_map[index] != map[index]) mismatches++;
        EXPECT(mismatches == 0, "%zu of %zu values differ", mismatches, n);
        elec_free(read_map);
    }

    /* PQR (fixed columns and whitespace, CRYST1) and a point list */
    status = (int)elec_parse_pqr(pqr, sizeof pqr - 1, &s, &err);
    EXPECT(status == ELEC_OK, "PQR in %s: %d %s", locale, status, err.message);
    if (status == ELEC_OK) {
        EXPECT(s.count == 3 && s.has_cell && s.cell_length[0] == 40.5 &&
                   s.cell_length[1] == 50.25 && s.cell_length[2] == 60.125 &&
                   s.cell_angle[0] == 90.0,
               "CRYST1: %zu atoms, cell %d %g %g %g", s.count, s.has_cell,
               s.cell_length[0], s.cell_length[1], s.cell_length[2]);
        EXPECT(s.count == 3 && s.xyz[0] == 1.5 && s.xyz[1] == -2.25 && s.xyz[2] == 0.125 &&
                   s.charge[0] == -0.3 && s.radius[0] == 1.824,
               "atom 1: %g %g %g %g %g", s.xyz[0], s.xyz[1], s.xyz[2], s.charge[0],
               s.radius[0]);
        EXPECT(s.count == 3 && s.xyz[3] == 0.5 && s.xyz[4] == 10.0 && s.xyz[5] == -0.375 &&
                   s.charge[1] == 0.25 && s.radius[1] == 2.0,
               "atom 2: %g %g %g %g %g", s.xyz[3], s.xyz[4], s.xyz[5], s.charge[1],
               s.radius[1]);
        EXPECT(s.count == 3 && s.xyz[6] == -0.5 && s.xyz[7] == 0.25 && s.xyz[8] == -0.125 &&
                   s.charge[2] == -0.834 && s.radius[2] == 1.5,
               "atom 3: %g %g %g %g %g", s.xyz[6], s.xyz[7], s.xyz[8], s.charge[2],
               s.radius[2]);
        elec_structure_free(&s);
    }
    status = (int)elec_parse_points(points, sizeof points - 1, &surface, &err);
    EXPECT(status == ELEC_OK && surface.count == 1 && surface.xyz[0] == 1.25 &&
               surface.xyz[1] == -2.5 && surface.xyz[2] == 300.0,
           "points in %s: %d %s", locale, status, err.message);
    if (status == ELEC_OK) elec_surface_free(&surface);

    /* and a number that is not one is still refused */
    {
        static const char bad[] = "ATOM 1 N GLY 1 1,5 0 0 0 1\n";
        status = (int)elec_parse_pqr(bad, sizeof bad - 1, &s, &err);
        EXPECT(status == ELEC_ERR_PARSE && strstr(err.message, "'1,5' is not a number"),
               "\"1,5\" in %s: %d %s", locale, status, err.message);
    }
    setlocale(LC_NUMERIC, "C");
    free(map);
    remove(path);
    remove(c_path);
}

TEST(status_string_names_every_code) {
    int s;
    for (s = 0; s < ELEC_STATUS_COUNT; s++) {
        const char *name = elec_status_string((elec_status)s);
        EXPECT(name && *name && strcmp(name, "unknown status") != 0,
               "status %d has no name", s);
    }
}

int main(void) {
    RUN(pqr_whitespace_dialect_fills_the_right_labels);
    RUN(pqr_crlf_file_reads_like_lf);
    RUN(pqr_refuses_atoms_after_end_or_endmdl);
    RUN(pqr_fixed_columns_with_run_together_numbers);
    RUN(pqr_cryst1_gives_a_box_only_when_orthorhombic_in_p1);
    RUN(pqr_malformed_input_fails_with_line_and_field);
    RUN(pqr_after_a_byte_order_mark_reads_its_first_atom);
    RUN(pqr_reads_numbers_past_their_columns_as_their_writers_meant);
    RUN(pqr_without_atoms_or_file_fails);
    RUN(pqr_two_million_atoms);
    RUN(pqr_reads_every_real_structure);
    RUN(dx_round_trip_is_exact_and_z_fastest_on_disk);
    RUN(dx_round_trip_keeps_arbitrary_floats_bit_for_bit);
    RUN(dx_reader_takes_float_type_one_value_a_line_no_trailer);
    RUN(dx_malformed_input_fails_with_line);
    RUN(dx_writer_refuses_non_finite_values_and_bad_paths);
    RUN(output_is_renamed_into_place_whole_or_not_at_all);
    RUN(a_write_that_fails_midway_leaves_the_old_file_whole);
    RUN(device_outputs_are_written_in_place_and_never_removed);
    RUN(a_pipe_output_is_written_through_and_kept);
    RUN(dev_stdout_redirected_to_a_file_is_written_through);
    RUN(output_check_refuses_the_input_and_what_cannot_be_written);
    RUN(output_check_refuses_another_users_file_in_a_sticky_directory);
    RUN(inputs_too_large_or_binary_are_refused_before_reading_them);
    RUN(dx_header_claiming_more_values_than_its_file_holds_is_refused);
    RUN(numbers_keep_their_decimal_point_whatever_lc_numeric_says);
    RUN(status_string_names_every_code);
    return test_summary();
}
