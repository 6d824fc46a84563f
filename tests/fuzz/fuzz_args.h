/* tests/fuzz/fuzz_args.h - what the command-line harnesses share: the
   fuzzer's bytes as an argument vector (split at newlines, at most
   FUZZ_MAX_ARGS arguments after the program name) and a stream for the
   tools' complaints that goes nowhere. */
#ifndef ELEC_FUZZ_ARGS_H
#define ELEC_FUZZ_ARGS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_MAX_ARGS 64

/* Fills argv (FUZZ_MAX_ARGS + 2 entries) from a '\0'-terminated copy of
   the data, returned in *text for the caller to free; returns argc. */
static int fuzz_args(const uint8_t *data, size_t size, const char *program,
                     char **text, char **argv) {
    int argc = 1;
    size_t i, start = 0;
    *text = (char *)malloc(size + 1);
    if (!*text) abort();
    memcpy(*text, data, size);
    (*text)[size] = '\0';
    argv[0] = (char *)program;
    for (i = 0; i <= size && argc <= FUZZ_MAX_ARGS; i++)
        if (i == size || (*text)[i] == '\n') {
            (*text)[i] = '\0';
            argv[argc++] = *text + start;
            start = i + 1;
        }
    argv[argc] = NULL;
    return argc;
}

/* /dev/null, opened once: the parsers' messages are not what is fuzzed. */
static FILE *fuzz_quiet(void) {
    static FILE *quiet;
    if (!quiet) quiet = fopen("/dev/null", "w");
    if (!quiet) abort();
    return quiet;
}

#endif
