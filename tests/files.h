/* tests/files.h - files for the I/O tests (test_io.c, test_maps.c): a
   fresh directory under build/ per test and its removal, a file written
   whole, the names a directory holds.  POSIX: define _XOPEN_SOURCE 700
   (mkdtemp) before any include, as those files do. */
#ifndef ELEC_TEST_FILES_H
#define ELEC_TEST_FILES_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A fresh directory under build/ for one test, and its removal with
   whatever the test left in it (only plain names: the tests make no
   subdirectories). */
static inline char *scratch_dir(void) {
    static char name[64];
    strcpy(name, "build/test_files_XXXXXX");
    return mkdtemp(name);
}

static inline void scratch_remove(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];
    if (!d) return;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        remove(path);
    }
    closedir(d);
    rmdir(dir);
}

static inline int write_file(const char *path, const void *data, size_t length) {
    FILE *f = fopen(path, "wb");
    int ok;
    if (!f) return 0;
    ok = fwrite(data, 1, length, f) == length;
    return fclose(f) == 0 && ok;
}

/* How many names in dir, and how many of them start with '.' (the
   temporary files of elec_output_open). */
static inline int names_in(const char *dir, int *hidden) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    *hidden = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        n++;
        if (e->d_name[0] == '.') ++*hidden;
    }
    closedir(d);
    return n;
}

#endif
