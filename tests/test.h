/* tests/test.h - the smallest test harness that reads like a specification.

   TEST(name) { ... EXPECT(cond, "why %d", x); ... }
   int main(void) { RUN(name); ...; return test_summary(); }

   Each program prints one line per test (ok / FAIL / skip) and ends with a
   line "tally: P passed, F failed, S skipped" that tests/run.sh adds up into
   the suite's closing line.  A test fails if any EXPECT in it fails; SKIP()
   ends a test early and says why (no GPU, no reference data). */
#ifndef ELEC_TEST_H
#define ELEC_TEST_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test__passed, test__failed, test__skipped;
static int test__current_failed, test__current_skipped;
static const char *test__current_name;

#define TEST(name) static void name(void)

/* ELEC_TEST_ONLY=text runs only the tests whose name holds text, and
   ELEC_TEST_ONLY==name only the test of that name (the others are not run
   and not counted); ELEC_TEST_LIST=1 prints "test NAME" for each test and
   runs none.  make sanitize-gpu uses them to spread the slow tools over a
   program's tests. */
static int test__selected(const char *name) {
    const char *only = getenv("ELEC_TEST_ONLY");
    if (!only || !*only) return 1;
    return only[0] == '=' ? strcmp(name, only + 1) == 0 : strstr(name, only) != NULL;
}

static int test__listed(const char *name) {
    const char *list = getenv("ELEC_TEST_LIST");
    if (!list || !*list) return 0;
    printf("test %s\n", name);
    return 1;
}

#define RUN(name)                                                            \
    do {                                                                     \
        if (!test__selected(#name) || test__listed(#name)) break;            \
        test__current_name = #name;                                          \
        test__current_failed = test__current_skipped = 0;                    \
        name();                                                              \
        if (test__current_failed) { /* a failure before a skip stands */     \
            test__failed++;                                                  \
            printf("FAIL %s\n", #name);                                      \
        } else if (test__current_skipped) {                                  \
            test__skipped++;                                                 \
        } else {                                                             \
            test__passed++;                                                  \
            printf("ok   %s\n", #name);                                      \
        }                                                                    \
        fflush(stdout);                                                      \
    } while (0)

static void test__report(const char *file, int line, const char *format, ...) {
    va_list args;
    printf("     %s:%d: ", file, line);
    va_start(args, format);
    vprintf(format, args);
    va_end(args);
    printf("\n");
}

/* EXPECT(condition, printf-style explanation of what was seen) */
#define EXPECT(cond, ...)                                                    \
    do {                                                                     \
        if (!(cond)) {                                                       \
            test__current_failed = 1;                                        \
            test__report(__FILE__, __LINE__, __VA_ARGS__);                   \
        }                                                                    \
    } while (0)

/* Ends the current test as skipped; the reason is printed. */
#define SKIP(...)                                                            \
    do {                                                                     \
        test__current_skipped = 1;                                           \
        printf("skip %s: ", test__current_name);                             \
        printf(__VA_ARGS__);                                                 \
        printf("\n");                                                        \
        return;                                                              \
    } while (0)

static int test_summary(void) {
    printf("tally: %d passed, %d failed, %d skipped\n", test__passed,
           test__failed, test__skipped);
    return test__failed ? 1 : 0;
}

/* ------------------------------------------------------ comparison helpers */

/* Float-path tolerance of the CPU's float sums (DCS, MDH).  Each float term q/r carries a relative error of a
   few float roundings (coordinates ~1e-7 relative, then the difference, the
   square root and the division: ~4 x 6e-8), and the terms are summed in
   double, so no error grows with the number of atoms.  For a sum of N
   terms with independent errors the RMS error is ~2.4e-7 * sqrt(sum t^2),
   which is below 2.4e-7 * sum |t|; measured against the map's RMS value
   (test_rel_rms_float: ||got - want|| / ||want||) that is 1e-7..1e-6 for
   net-charged random systems, more where a neutral system's terms cancel
   (water: |phi| is ~10x smaller than sum |t|).  1e-5 is the project's
   target and leaves that margin. */
#define TEST_FLOAT_REL_RMS 1e-5

/* Relative RMS error ||got - want|| / ||want|| over n values. */
static inline double test_rel_rms_float(const float *got, const double *want, size_t n) {
    double num = 0.0, den = 0.0;
    size_t i;
    for (i = 0; i < n; i++) {
        double d = (double)got[i] - want[i];
        num += d * d;
        den += want[i] * want[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* The same of doubles (double paths against a double reference). */
static inline double test_rel_rms(const double *got, const double *want, size_t n) {
    double num = 0.0, den = 0.0;
    size_t i;
    for (i = 0; i < n; i++) {
        double d = got[i] - want[i];
        num += d * d;
        den += want[i] * want[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

static inline double test_max_abs_diff_float(const float *got, const double *want,
                                      size_t n) {
    double worst = 0.0;
    size_t i;
    for (i = 0; i < n; i++) {
        double d = fabs((double)got[i] - want[i]);
        if (!(d <= worst)) worst = d; /* NaN propagates as the worst */
    }
    return worst;
}

/* A progress callback's record (elec_progress_fn, user = the record): how
   many calls, whether the fractions stayed rising within [0, 1], the last
   one; it asks to stop at call cancel_after (0: never). */
typedef struct test_progress_log {
    int calls, increasing, cancel_after;
    double last;
} test_progress_log;

static inline int test_log_progress(double fraction, void *user) {
    test_progress_log *log = (test_progress_log *)user;
    if (fraction < log->last || fraction < 0.0 || fraction > 1.0) log->increasing = 0;
    log->last = fraction;
    log->calls++;
    return log->cancel_after > 0 && log->calls >= log->cancel_after;
}

/* Whether each of got is scale times unit's, to a few roundings, where
   unit's are not all zero (what scale must do to every output). */
static inline int test_scaled_alike(const double *got, const double *unit, size_t n,
                                    double scale) {
    size_t i, nonzero = 0;
    for (i = 0; i < n; i++) {
        if (fabs(got[i] - scale * unit[i]) > 1e-12 * fabs(scale * unit[i])) return 0;
        nonzero += unit[i] != 0.0;
    }
    return nonzero > 0;
}

static inline int test_all_finite_float(const float *v, size_t n) {
    size_t i;
    for (i = 0; i < n; i++)
        if (!isfinite(v[i])) return 0;
    return 1;
}

#endif
