/* examples/cli.h - what elecmap, elecenergy and elecsurf share: numbers
   and counts from the command line, checked whole and in range before any
   conversion (so that "--order 1e10" is an error, never an undefined
   cast), JSON strings, --version, the check of a map's output, and the
   clock and progress line of long runs.  Each tool includes it once,
   after elec.h. */
#ifndef ELEC_EXAMPLES_CLI_H
#define ELEC_EXAMPLES_CLI_H

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Where a tool's summary goes: stderr where its output is what stdout
   holds (/dev/stdout, or any other name of the file stdout is redirected
   to, or of its pipe: the same device and inode), so that the summary
   does not land among the output's data; else stdout. */
static inline FILE *cli_report_stream(const char *output) {
    struct stat named, held;
    if (output && stat(output, &named) == 0 && fstat(1, &held) == 0 &&
        named.st_dev == held.st_dev && named.st_ino == held.st_ino)
        return stderr;
    return stdout;
}

/* Seconds on a clock that only moves forward, for times and progress. */
static inline double cli_seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Progress of a long run on stderr (an elec_progress_fn, user a
   cli_progress): nothing for a run done within a second, then, on a
   terminal, a line rewritten as the whole percentage changes; into a file
   or a pipe (a batch job's log), a line of its own at each tenth, where
   the rewritten line left a hundred carriage returns on one line.  base +
   share x fraction is the fraction of the whole run, where a call is one
   part of it. */
typedef struct cli_progress {
    const char *tool;
    double start;
    int shown;
    int percent; /* last shown */
    int terminal; /* stderr is one */
    double base, share;
} cli_progress;

static inline cli_progress cli_progress_start(const char *tool) {
    cli_progress p;
    p.tool = tool;
    p.start = cli_seconds_now();
    p.shown = 0;
    p.percent = -1;
    p.terminal = isatty(2);
    p.base = 0.0;
    p.share = 1.0;
    return p;
}

static inline int cli_show_progress(double fraction, void *user) {
    cli_progress *p = (cli_progress *)user;
    const int step = p->terminal ? 1 : 10;
    const int percent = (int)(100.0 * (p->base + p->share * fraction)) / step * step;
    if (cli_seconds_now() - p->start < 1.0 && !p->shown) return 0;
    if (p->shown && percent == p->percent) return 0;
    if (p->terminal) fprintf(stderr, "\r%s: %3d%% done", p->tool, percent);
    else fprintf(stderr, "%s: %3d%% done\n", p->tool, percent);
    fflush(stderr);
    p->shown = 1;
    p->percent = percent;
    return 0;
}

/* The line progress left open ends before anything else is written. */
static inline void cli_progress_end(const cli_progress *p) {
    if (p->shown && p->terminal) fprintf(stderr, "\n");
}

/* That what a tool printed reached its standard output: registered at the
   start of main, checked as the tool exits.  Where it did not (a full disk,
   a closed stdout), the tool says so and exits 1, whatever main returned:
   elecenergy's energy, printed to a full disk, was lost with status 0. */
static const char *cli__stdout_tool = "elec";
static inline void cli__stdout_check(void) {
    const int e = fflush(stdout) != 0 ? errno : 0;
    if (e || ferror(stdout)) {
        fprintf(stderr, "%s: writing to standard output: %s\n", cli__stdout_tool,
                e ? strerror(e) : "a write failed");
        _Exit(1);
    }
}
static inline void cli_check_stdout_at_exit(const char *tool) {
    cli__stdout_tool = tool;
    atexit(cli__stdout_check);
}

/* An interrupted run leaves no temporary file behind.  The library writes
   an output to a temporary file beside it (elec.h, elec__output_temp_name:
   the PID is in its name) and renames it at the end; a tool stopped by
   SIGINT, SIGTERM, SIGHUP or SIGXFSZ (a file-size limit) before then
   removes those names, then dies of the signal as before (a stopped write
   once left 110 MB behind, which no later run found).  The names are made
   here, before the run: a signal handler may call unlink, not snprintf.
   The library's attempt N counts names already taken (left by another
   process of the same PID); the first few attempts are named, in both
   forms. */
#define CLI_TEMP_ATTEMPTS 4
#define CLI_TEMP_NAMES (4 * 2 * CLI_TEMP_ATTEMPTS)
static char cli__temp_name[CLI_TEMP_NAMES][4200];
static int cli__temp_count;
static inline void cli__remove_temps(int signal_number) {
    int k;
    for (k = 0; k < cli__temp_count; k++) (void)unlink(cli__temp_name[k]);
    signal(signal_number, SIG_DFL);
    raise(signal_number);
}
static inline void cli_remove_temps_on_signal(const char *path) {
#ifdef SIGXFSZ
    static const int signals[4] = {SIGINT, SIGTERM, SIGHUP, SIGXFSZ};
#else
    static const int signals[3] = {SIGINT, SIGTERM, SIGHUP};
#endif
    struct sigaction action;
    int attempt, k;
    for (attempt = 0; attempt < CLI_TEMP_ATTEMPTS; attempt++)
        for (k = 0; k < 2 && cli__temp_count < CLI_TEMP_NAMES; k++) {
            char *name = elec__output_temp_name(path, attempt, k);
            if (name && strlen(name) < sizeof cli__temp_name[0])
                strcpy(cli__temp_name[cli__temp_count++], name);
            elec_free(name);
        }
    memset(&action, 0, sizeof action);
    action.sa_handler = cli__remove_temps;
    sigemptyset(&action.sa_mask);
    for (k = 0; k < (int)(sizeof signals / sizeof signals[0]); k++) {
        struct sigaction previous;
        /* a signal the caller's shell ignores (nohup) stays ignored */
        if (sigaction(signals[k], NULL, &previous) == 0 && previous.sa_handler != SIG_IGN)
            sigaction(signals[k], &action, NULL);
    }
}

/* A library failure names atoms by their index in the arrays it was given
   (err->atom, counted from 0); the tools give it a file's atoms in the
   file's order, so this says which of the file's records each one is:
     elecenergy: x.pqr: atom 2 (counted from 0) is ATOM 7 NA NA 3, the
     file's atom record 3
   (the record number is the index elecenergy's --forces file gives). */
static inline void cli_name_atoms(const char *tool, const char *input,
                                  const elec_structure *mol, const elec_error *err) {
    int k;
    for (k = 0; k < 2; k++) {
        const size_t i = err->atom[k];
        const elec_atom_label *l;
        if (i == ELEC_NO_ATOM || i >= mol->count || !mol->label) continue;
        if (k == 1 && i == err->atom[0]) continue;
        l = &mol->label[i];
        fprintf(stderr, "%s: %s: atom %zu (counted from 0) is %s %d %s %s ", tool, input, i,
                l->is_hetatm ? "HETATM" : "ATOM", l->serial, l->name, l->residue_name);
        if (l->chain != ' ') fprintf(stderr, "%c ", l->chain);
        fprintf(stderr, "%d", l->residue_number);
        if (l->insertion_code != ' ') fputc(l->insertion_code, stderr);
        fprintf(stderr, ", the file's atom record %zu\n", i + 1);
    }
}

/* A file name as the tools take it: "-" is the standard stream, as most
   Unix tools read it (it made a file named "-"). */
static inline const char *cli_input_name(const char *name) {
    return name && !strcmp(name, "-") ? "/dev/stdin" : name;
}
static inline const char *cli_output_name(const char *name) {
    return name && !strcmp(name, "-") ? "/dev/stdout" : name;
}

/* Whether name ends in suffix, letters in either case. */
static inline int cli_ends_with(const char *name, const char *suffix) {
    size_t n = name ? strlen(name) : 0, k = strlen(suffix), i;
    if (k > n) return 0;
    for (i = 0; i < k; i++) {
        char a = name[n - k + i], b = suffix[i];
        if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
        if (a != b) return 0;
    }
    return 1;
}

/* The structure format a file name says (".pqr", ".pdb", ".ent" or
   ".cif", gzipped or not), or NULL: the inputs a map must not be written
   over, and the PDB names of cli_warn_if_pdb. */
static inline const char *cli_structure_suffix(const char *name) {
    static const char *const suffixes[8] = {".pqr", ".pdb", ".ent", ".cif",
                                            ".pqr.gz", ".pdb.gz", ".ent.gz", ".cif.gz"};
    int k;
    for (k = 0; k < 8; k++)
        if (cli_ends_with(name, suffixes[k])) return suffixes[k];
    return NULL;
}

/* A PDB file whose records stop at the B-factor (older writers, no
   element or charge columns) has the shape of a PQR file, its occupancy
   and B-factor where PQR keeps the charge and the radius, and reads
   without an error; its map or energy would be wrong.  Warns on stderr
   (whatever --quiet says) where the input is named as a PDB file or every
   charge lies in [0, 1] in steps of 0.01, as occupancies do, and one is
   not zero; returns 1 where it warned.  A PQR of unit cations alone is
   warned about too: the warning says what was read, and the run goes on. */
static inline int cli_warn_if_pdb(const char *tool, const char *input,
                                  const elec_structure *mol) {
    const char *suffix = cli_structure_suffix(input);
    const int named = suffix && (!strncmp(suffix, ".pdb", 4) || !strncmp(suffix, ".ent", 4));
    int occupancies = mol->count > 0, nonzero = 0;
    size_t i;
    for (i = 0; i < mol->count && occupancies; i++) {
        const double q = mol->charge[i], hundredths = 100.0 * q;
        occupancies = q >= 0.0 && q <= 1.0 && fabs(hundredths - floor(hundredths + 0.5)) < 1e-6;
        nonzero |= q != 0.0;
    }
    occupancies &= nonzero;
    if (!named && !occupancies) return 0;
    fprintf(stderr, "%s: warning: %s %s: elec reads PQR, the last two numbers of an atom "
                    "record as its charge (e) and radius (A), where a PDB file has its "
                    "occupancy and B-factor; if this is a PDB file, give it charges and "
                    "radii first (pdb2pqr --ff=AMBER in.pdb out.pqr)\n",
            tool, input,
            occupancies ? "has every charge between 0 and 1 in steps of 0.01, as a PDB "
                          "file's occupancies are"
                        : "is named as a PDB file");
    return 1;
}

/* A finite number spelled by the whole of text. */
static inline int cli_number(const char *text, double *value) {
    char *end;
    *value = strtod(text, &end);
    return end != text && *end == '\0' && isfinite(*value);
}

/* A whole number in [lo, hi], checked as a double before it becomes an
   int; lo and hi must themselves fit in an int. */
static inline int cli_count(const char *text, double lo, double hi, int *value) {
    double v;
    if (!cli_number(text, &v) || v != floor(v) || v < lo || v > hi) return 0;
    *value = (int)v;
    return 1;
}

/* The same for a size_t (hi at most 2^53, where doubles still count
   exactly). */
static inline int cli_size(const char *text, double lo, double hi, size_t *value) {
    double v;
    if (!cli_number(text, &v) || v != floor(v) || v < lo || v > hi) return 0;
    *value = (size_t)v;
    return 1;
}

/* The length of the UTF-8 sequence at s (1 to 4 bytes) if it is a valid
   one, else 0. */
static inline size_t cli_utf8_length(const unsigned char *s) {
    size_t n, i;
    unsigned long c;
    if (s[0] < 0x80) return 1;
    if (s[0] >= 0xc2 && s[0] <= 0xdf) n = 2, c = s[0] & 0x1f;
    else if (s[0] >= 0xe0 && s[0] <= 0xef) n = 3, c = s[0] & 0x0f;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4) n = 4, c = s[0] & 0x07;
    else return 0;
    for (i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0; /* also stops at the '\0' */
        c = (c << 6) | (s[i] & 0x3f);
    }
    if ((n == 3 && c < 0x800) || (n == 4 && (c < 0x10000 || c > 0x10ffff)) ||
        (c >= 0xd800 && c <= 0xdfff))
        return 0; /* overlong, past Unicode, or a surrogate */
    return n;
}

/* s as a JSON string, quotes included: '"' and '\' escaped, control
   characters as \uXXXX, and bytes that are not UTF-8 (a file name may be
   any bytes) as U+FFFD, so that the output is always valid JSON. */
static inline void cli_json_string(FILE *out, const char *s) {
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', out);
    while (*p) {
        size_t n = cli_utf8_length(p);
        if (n == 0) {
            fputs("\\ufffd", out);
            p++;
        } else if (*p == '"' || *p == '\\') {
            fputc('\\', out);
            fputc(*p++, out);
        } else if (*p < 0x20 || *p == 0x7f) {
            fprintf(out, "\\u%04x", *p++);
        } else {
            fwrite(p, 1, n, out);
            p += n;
        }
    }
    fputc('"', out);
}

/* --version: the kit's version and what this build has. */
static inline void cli_version(FILE *out, const char *tool, const char *extra,
                               int extra_built) {
    const char *with[6], *without[6];
    int nw = 0, nwo = 0, i;
#ifdef ELEC_WITH_CUDA
    with[nw++] = "CUDA";
#else
    without[nwo++] = "CUDA";
#endif
#ifdef _OPENMP
    with[nw++] = "OpenMP";
#else
    without[nwo++] = "OpenMP";
#endif
#ifdef ELEC_WITH_FFTW
    with[nw++] = "FFTW3";
#else
    without[nwo++] = "FFTW3";
#endif
#ifdef ELEC_WITH_ZLIB
    with[nw++] = "zlib";
#else
    without[nwo++] = "zlib";
#endif
    if (extra) {
        if (extra_built) with[nw++] = extra;
        else without[nwo++] = extra;
    }
    fprintf(out, "%s (elec) %s\n", tool, ELEC_VERSION_STRING);
    fprintf(out, "built with:");
    for (i = 0; i < nw; i++) fprintf(out, "%s %s", i ? "," : "", with[i]);
    fprintf(out, "%s\nbuilt without:", nw ? "" : " -");
    for (i = 0; i < nwo; i++) fprintf(out, "%s %s", i ? "," : "", without[i]);
    fprintf(out, "%s\n", nwo ? "" : " -");
}

/* What a tool checks of a map's output before computing the map: that the
   path is not named as a structure (a map written over "b.pqr" in
   `elecmap a.pqr b.pqr` lost the structure: DX goes to any name but
   these), that it can be written and is not the input
   (elec_output_check), and that a ".gz" name has zlib to write it.
   Returns 0 to go on, else the exit status (2 for a structure's name or
   the input named as output), the reason on stderr. */
static inline int cli_map_output_check(const char *tool, const char *output,
                                       const char *input) {
    const char *structure = cli_structure_suffix(output);
    elec_error err;
    elec_status s;
    int gzip;
    if (structure) {
        fprintf(stderr, "%s: the output %s is named as a structure (%s): a map goes to "
                        ".dx, .dx.gz, .mrc, .map or .ccp4\n",
                tool, output, structure);
        return 2;
    }
    s = elec_output_check(output, input, &err);
    elec_map_format_of(output, &gzip);
#ifndef ELEC_WITH_ZLIB
    if (s == ELEC_OK && gzip) {
        elec_output *out; /* refused before anything is opened, saying why */
        s = elec_output_open_gzip(output, &out, &err);
        elec_output_abort(out);
    }
#else
    (void)gzip;
#endif
    if (s == ELEC_OK) return 0;
    fprintf(stderr, "%s: %s\n", tool, err.message);
    return s == ELEC_ERR_INVALID_ARG ? 2 : 1;
}

/* The points a lattice around the atoms takes at spacing h with padding
   pad (each axis ceil(extent / h) + 1, as elec_lattice_around counts
   them), in double so that no count overflows.  A refused lattice is
   mended by a coarser spacing only where this passes the limit; else the
   refusal is about something else (a point past double's range). */
static inline double cli_points_around(const elec_atoms *atoms, double h, double pad) {
    double lo[3], hi[3], points = 1.0;
    int axis;
    elec_atoms_bounds(atoms, lo, hi);
    for (axis = 0; axis < 3; axis++) points *= ceil((hi[axis] - lo[axis] + 2.0 * pad) / h) + 1.0;
    return points;
}

/* The most REMARK lines of an input that a map's comment repeats. */
#define CLI_INPUT_REMARKS 32

/* A PQR input's CRYST1 and REMARK lines as they stand (at most 80
   characters of each, CLI_INPUT_REMARKS REMARK lines), CRYST1 first, one
   a line, for a map's comment (so that a map says where it came from);
   NULL without memory. */
static inline char *cli_input_records(const char *text, size_t length) {
    size_t size = (CLI_INPUT_REMARKS + 4) * 84, used = 0;
    char *c = (char *)malloc(size);
    int pass, remarks = 0;
    if (!c) return NULL;
    c[0] = '\0';
    if (length >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) { /* a byte-order mark */
        text += 3;
        length -= 3;
    }
    for (pass = 0; pass < 2; pass++) {
        const char *p = text, *end = text + length;
        const char *record = pass == 0 ? "CRYST1" : "REMARK";
        int kept = 0;
        while (p < end) {
            const char *newline = (const char *)memchr(p, '\n', (size_t)(end - p));
            size_t n = (size_t)((newline ? newline : end) - p);
            while (n && p[n - 1] == '\r') n--;
            if (n >= 6 && !memcmp(p, record, 6) && kept < (pass == 0 ? 1 : CLI_INPUT_REMARKS)) {
                used += (size_t)snprintf(c + used, size - used, "%.*s\n",
                                         (int)(n > 80 ? 80 : n), p);
                kept++;
            } else if (n >= 6 && !memcmp(p, record, 6) && pass == 1) {
                remarks++; /* past the limit: counted, not kept */
            }
            p = newline ? newline + 1 : end;
        }
    }
    if (remarks > 0)
        snprintf(c + used, size - used, "(and %d more REMARK lines)\n", remarks);
    return c;
}

#endif
