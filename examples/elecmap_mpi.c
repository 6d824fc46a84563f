/* elecmap_mpi - elecmap over MPI ranks: the map cut into slabs of z planes
   (elec.h, ">>slab"), one slab a rank, written as one map.

   mpirun -np N elecmap_mpi [elecmap's options] input.pqr output.mrc|output.dx
   mpirun -np N elecmap_mpi [options] --demo output.mrc

   The options are elecmap's (this file includes examples/elecmap.c for its
   parser, lattice, method choice and the map's comment); --method charges
   and --gpus are refused.  Each rank computes its slab on the CPU (with
   OpenMP threads where built with them) or, built by nvcc with
   -DELEC_WITH_CUDA (make elecmap_mpi_cuda), on one GPU: device rank mod
   the node's device count, the default where there is one (--cpu to stay
   on the CPU); MSM slabs stay on the CPU there (elec_cpu_msm_map_slab:
   the GPU MSM has no slab call yet).  Every rank reads the input
   (a file system all ranks see) and builds the same lattice; rank r maps
   the planes elec_slab_partition gives it:
     dcs     every atom, on the slab's own lattice (elec_lattice_slab);
     cutoff  the slab's halo (elec_atoms_halo: the atoms within the cutoff
             of its points), on the slab's lattice;
     mdh     every atom, at the slab's points;
     msm     every atom, elec_cpu_msm_map_slab: the whole lattice hierarchy
             on every rank (MSM's long range needs every charge), the short
             range and the interpolation by slabs.
   MSM slabs are the whole map's values bit for bit; DCS, cutoff and MDH
   slabs sum relative to the slab's own frame and agree with elecmap's map
   to float rounding (tests/test_mpi.sh says how closely).

   Output by the name, as elecmap's:
     .mrc .map .ccp4  MPI-IO: rank 0 writes the header (elec_mrc_header,
                      with the minimum, maximum, mean and RMS reduced over
                      the ranks), every rank its slab's floats at
                      1024 + 4 k0 nx ny, little endian, into a new file
                      beside the output, renamed over it by rank 0 once
                      every slab is in (mpi_target): whole or not at all,
                      as elecmap's outputs are.
     anything else    (.dx, .dx.gz, .mrc.gz) the slabs gathered to rank 0,
                      which writes the map with elec_write_map (whole or not
                      at all); the map must fit rank 0's memory and hold
                      fewer than 2^31 points (MPI's counts).
   Frames (--frames): the input is a trajectory, frames ended by ENDMDL
   records (multi-model PQR) or by END records (files run together, as
   VMD writes a trajectory); frame f goes to rank f mod N, which maps it
   whole (the slab of every plane: elecmap's map bit for bit) and writes
   it alone, whole or not at all, as output with "_f" and the frame number
   (from 0, four digits) before the extension: phi.mrc -> phi_f0000.mrc.
   Every frame's map is on the first frame's lattice (or --dims/--origin's),
   so that the maps line up.

   Rank 0 prints elecmap's summary and a line per rank: its planes, the
   atoms it summed, its seconds (and, on the CPU, the processor seconds:
   its work, whatever else shares the cores). */
#define ELECMAP_NO_MAIN
#define TOOL "elecmap_mpi"
#include "examples/elecmap.c"

#include <errno.h>
#include <mpi.h>
#include <unistd.h>

/* The run's outcome on every rank: the worst status of any, and its
   message from the first rank that had it. */
static elec_status mpi_agree(elec_status s, elec_error *err, int rank) {
    int mine = (int)s, worst, from, candidate = s != ELEC_OK ? rank : INT_MAX;
    MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (worst == ELEC_OK) return ELEC_OK;
    MPI_Allreduce(&candidate, &from, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Bcast(err->message, (int)sizeof err->message, MPI_CHAR, from, MPI_COMM_WORLD);
    return (elec_status)worst;
}

/* One rank's slab: its planes, the atoms it needs, its map. */
typedef struct slab_job {
    int k0, k1;
    size_t atoms; /* summed by this rank: all, or the cutoff's halo */
    double seconds;
    double cpu;   /* processor seconds of the map (clock(): every thread's), the
                     work whatever else shares the cores */
    float *map;   /* (k1 - k0) nx ny values */
} slab_job;

static elec_status map_slab(const options *o, const elec_atoms *atoms,
                            const elec_lattice *lattice, double scale, int device,
                            slab_job *job, elec_error *err) {
    elec_gpu_set gpu; /* device >= 0: this rank's GPU */
    const size_t plane = (size_t)lattice->dims[0] * (size_t)lattice->dims[1];
    elec_lattice slab;
    elec_status s;
    job->atoms = 0;
    if (job->k0 == job->k1) return ELEC_OK; /* more ranks than planes */
    job->atoms = atoms->count;
    gpu.count = 1;
    gpu.devices = &device;
    if ((s = elec_lattice_slab(lattice, job->k0, job->k1, &slab, err)) != ELEC_OK) return s;
    job->map = (float *)malloc((size_t)(job->k1 - job->k0) * plane * sizeof *job->map);
    if (!job->map)
        return elec_fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for a slab of %d planes",
                         job->k1 - job->k0);
    if (o->method == METHOD_DCS) {
        elec_dcs_params dp = {0};
        dp.scale = scale;
        dp.max_points = o->max_points;
        dp.variant = o->variant;
#ifdef ELEC_WITH_CUDA
        if (device >= 0) {
            dp.gpus = gpu; /* (the CPU calls check any set they are given) */
            return elec_cuda_dcs_map(atoms, &slab, &dp, job->map, err);
        }
#endif
        return elec_cpu_dcs_map(atoms, &slab, &dp, job->map, err);
    } else if (o->method == METHOD_MSM) {
        elec_msm_params sp = msm_params_of(o); /* elecmap's: its summary's choice */
        sp.scale = scale;
        sp.max_points = o->max_points;
        return elec_cpu_msm_map_slab(atoms, lattice, job->k0, job->k1, &sp, job->map, err);
    } else if (o->method == METHOD_CUTOFF) {
        elec_cutoff_params cp = {0}, resolved;
        size_t *index = (size_t *)malloc((atoms->count + 1) * sizeof *index), n = 0;
        double *xyz = NULL, *q = NULL;
        elec_atoms halo;
        cp.scale = scale;
        cp.cutoff = o->msm_cutoff;
        cp.kind = o->shifted ? ELEC_CUTOFF_SHIFTED : ELEC_CUTOFF_MSM;
        cp.max_points = o->max_points;
        s = elec_cutoff_params_resolve(&cp, &resolved, err);
        if (s == ELEC_OK)
            s = index ? elec_atoms_halo(atoms, lattice, job->k0, job->k1, resolved.cutoff,
                                        index, &n, err)
                      : elec_fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for the halo");
        if (s == ELEC_OK) {
            xyz = (double *)malloc((3 * n + 3) * sizeof *xyz);
            q = (double *)malloc((n + 1) * sizeof *q);
            s = xyz && q ? elec_atoms_gather(atoms, index, n, xyz, q, NULL, err)
                         : elec_fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for the halo");
        }
        if (s == ELEC_OK) {
            job->atoms = n;
            halo = elec_atoms_from_xyz(n, xyz, q, NULL);
#ifdef ELEC_WITH_CUDA
            if (device >= 0) {
                cp.gpus = gpu;
                s = elec_cuda_cutoff_map(&halo, &slab, &cp, job->map, err);
            } else
#endif
                s = elec_cpu_cutoff_map(&halo, &slab, &cp, job->map, err);
        }
        free(index);
        free(xyz);
        free(q);
        return s;
    } else {
        elec_mdh_params mp = {0};
        cli_progress quiet = cli_progress_start(TOOL);
        mp.scale = scale;
        mp.kappa = o->kappa;
        mp.ionic_strength = o->ionic_strength;
        mp.temperature = o->temperature;
        if (device >= 0) mp.gpus = gpu;
        return mdh_map(atoms, &slab, &mp, &quiet, device >= 0, job->map, err);
    }
}

/* The map's statistics over every rank, as elec_write_mrc computes them
   (the mean first, then the deviations from it). */
static elec_map_stats reduce_stats(const slab_job *job, size_t plane, size_t total) {
    const size_t n = (size_t)(job->k1 - job->k0) * plane;
    double lo = HUGE_VAL, hi = -HUGE_VAL, sum = 0.0, squares = 0.0;
    elec_map_stats st;
    size_t i;
    for (i = 0; i < n; i++) {
        double v = job->map[i];
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        sum += v;
    }
    MPI_Allreduce(&lo, &st.min, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&hi, &st.max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(&sum, &st.mean, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    st.mean /= (double)total;
    for (i = 0; i < n; i++)
        squares += ((double)job->map[i] - st.mean) * ((double)job->map[i] - st.mean);
    MPI_Allreduce(&squares, &st.rms, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    st.rms = sqrt(st.rms / (double)total);
    return st;
}

/* Where MPI-IO writes path's map, chosen by rank 0 and sent to every rank:
   a new file beside path (elec_output_open's, created exclusively, with
   the permission bits of the file it will replace), so that a run
   that fails leaves the old map as it was, as elecmap's outputs are; or
   path itself where it is a device (/dev/null), written through.  A pipe
   is refused: MPI-IO writes at offsets.  *temp says which. */
#define MPI_TARGET_SIZE 4200
static elec_status mpi_target(const char *path, int rank, char target[MPI_TARGET_SIZE],
                              int *temp, elec_error *err) {
    elec_status s = ELEC_OK;
    int e = 0, flags[2] = {0, 0};
    if (rank == 0) {
        struct stat st;
        const int exists = stat(path, &st) == 0;
        int fd = -1;
        if (exists && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
            s = elec_fail(err, ELEC_ERR_IO, 0, "'%s' is a pipe: MPI-IO writes at offsets (name "
                          "a file, or a .dx map, which rank 0 writes whole)", path);
        } else if (exists && !S_ISREG(st.st_mode)) {
            snprintf(target, MPI_TARGET_SIZE, "%s", path);
        } else {
            /* the library's own temporary file (elec_output_open's) */
            char *temp = elec__output_temp(path, exists ? (unsigned)(st.st_mode & 0777) : 0666u,
                                           &fd);
            if (!temp) {
                e = errno;
            } else if (strlen(temp) >= MPI_TARGET_SIZE) {
                e = ENAMETOOLONG;
                close(fd);
                remove(temp);
            } else {
                strcpy(target, temp);
                close(fd);
                /* open() applied the umask; an existing file's bits are kept whole */
                if (exists) (void)chmod(target, st.st_mode & 0777);
                flags[1] = 1;
            }
            elec_free(temp);
        }
        if (e)
            s = elec_fail(err, ELEC_ERR_IO, 0, "cannot create a file beside '%s' to write it: %s",
                          path, strerror(e));
        if (s != ELEC_OK) target[0] = '\0';
        flags[0] = (int)s;
    }
    MPI_Bcast(flags, 2, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Bcast(target, MPI_TARGET_SIZE, MPI_CHAR, 0, MPI_COMM_WORLD);
    *temp = flags[1];
    return mpi_agree(s, err, rank);
}

/* One write at offset, counted: MPI_SUCCESS from a short write (a full
   disk) is an error here. */
static int mpi_write_at(MPI_File fh, MPI_Offset offset, const void *data, int count,
                        MPI_Datatype type) {
    MPI_Status status;
    int written = 0;
    int rc = MPI_File_write_at(fh, offset, (void *)data, count, type, &status);
    if (rc == MPI_SUCCESS && (MPI_Get_count(&status, type, &written) != MPI_SUCCESS ||
                              written != count))
        rc = MPI_ERR_IO;
    return rc;
}

/* MRC through MPI-IO: the header from rank 0, each slab at its offset,
   into mpi_target's file; synced, closed and (a new file) renamed over
   path by rank 0 once every rank has written its slab, else removed. */
static elec_status write_mrc_mpi(const char *path, const elec_lattice *lattice,
                                 const slab_job *job, const char *comment, int rank,
                                 elec_error *err) {
    const size_t plane = (size_t)lattice->dims[0] * (size_t)lattice->dims[1];
    const size_t total = elec_lattice_size(lattice), n = (size_t)(job->k1 - job->k0) * plane;
    const unsigned probe = 1;
    const int little = *(const unsigned char *)&probe == 1;
    elec_map_stats stats = reduce_stats(job, plane, total);
    unsigned char header[1024];
    elec_status s = ELEC_OK;
    MPI_File fh;
    int rc;
    char text[MPI_MAX_ERROR_STRING];
    int length;
    char target[MPI_TARGET_SIZE];
    int temp = 0, rc_sync, rc_close;
    if (rank == 0) s = elec_mrc_header(lattice, &stats, comment, header, err);
    if ((s = mpi_agree(s, err, rank)) != ELEC_OK) return s;
    if ((s = mpi_target(path, rank, target, &temp, err)) != ELEC_OK) return s;
    rc = MPI_File_open(MPI_COMM_WORLD, target, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                       MPI_INFO_NULL, &fh);
    if (rc != MPI_SUCCESS) {
        MPI_Error_string(rc, text, &length);
        s = elec_fail(err, ELEC_ERR_IO, 0, "cannot open '%s' with MPI-IO: %s", path, text);
    }
    /* (the open is collective: it fails on every rank or on none) */
    if ((s = mpi_agree(s, err, rank)) != ELEC_OK) {
        if (rank == 0 && temp) remove(target);
        return s;
    }
    /* (a new file: nothing longer to cut; a device: nothing to cut) */
    rc = rank == 0 ? mpi_write_at(fh, 0, header, 1024, MPI_BYTE) : MPI_SUCCESS;
    if (rc == MPI_SUCCESS && n > 0) {
        /* little endian, in runs that MPI's int counts hold */
        const size_t run = (size_t)1 << 24;
        float *swapped = little ? NULL : (float *)malloc((n < run ? n : run) * sizeof *swapped);
        size_t done;
        if (!little && !swapped) rc = MPI_ERR_NO_MEM;
        for (done = 0; done < n && rc == MPI_SUCCESS; done += run) {
            size_t m = n - done < run ? n - done : run, i;
            const float *values = job->map + done;
            if (!little) {
                for (i = 0; i < m; i++) {
                    unsigned char *b = (unsigned char *)&swapped[i], t;
                    memcpy(b, &values[i], 4);
                    t = b[0]; b[0] = b[3]; b[3] = t;
                    t = b[1]; b[1] = b[2]; b[2] = t;
                }
                values = swapped;
            }
            rc = mpi_write_at(fh, (MPI_Offset)(1024 + 4 * ((size_t)job->k0 * plane + done)),
                              values, (int)m, MPI_FLOAT);
        }
        free(swapped);
    }
    /* the data on disk before the rename makes it the map at path (both
       collective: every rank calls them, whatever its writes did) */
    rc_sync = temp ? MPI_File_sync(fh) : MPI_SUCCESS;
    rc_close = MPI_File_close(&fh);
    if (rc == MPI_SUCCESS) rc = rc_sync != MPI_SUCCESS ? rc_sync : rc_close;
    if (rc != MPI_SUCCESS) {
        MPI_Error_string(rc, text, &length);
        s = elec_fail(err, ELEC_ERR_IO, 0, "writing '%s' with MPI-IO: %s", path, text);
    }
    s = mpi_agree(s, err, rank);
    if (rank == 0 && temp) {
        if (s == ELEC_OK && rename(target, path) != 0)
            s = elec_fail(err, ELEC_ERR_IO, 0, "writing '%s': %s", path, strerror(errno));
        if (s != ELEC_OK) {
            remove(target);
            snprintf(err->message + strlen(err->message),
                     sizeof err->message - strlen(err->message), " (%s)",
                     access(path, F_OK) == 0 ? "the file that was there is unchanged"
                                              : "no file was left");
        }
    }
    return mpi_agree(s, err, rank);
}

/* Any other format: the slabs gathered to rank 0, written there. */
static elec_status write_gathered(const char *path, const elec_lattice *lattice,
                                  const slab_job *job, const char *comment, int rank,
                                  int ranks, elec_error *err) {
    const size_t plane = (size_t)lattice->dims[0] * (size_t)lattice->dims[1];
    const size_t total = elec_lattice_size(lattice);
    int *counts = NULL, *offsets = NULL, r, mine = (int)((size_t)(job->k1 - job->k0) * plane);
    float *map = NULL;
    elec_status s = ELEC_OK;
    if (total > (size_t)INT_MAX)
        return elec_fail(err, ELEC_ERR_UNSUPPORTED, 0,
                         "a map of %zu points is too large to gather to one rank: write "
                          "it as .mrc (MPI-IO)", total);
    if (rank == 0) {
        counts = (int *)malloc((size_t)ranks * sizeof *counts);
        offsets = (int *)malloc((size_t)ranks * sizeof *offsets);
        map = (float *)malloc(total * sizeof *map);
        if (!counts || !offsets || !map)
            s = elec_fail(err, ELEC_ERR_NO_MEMORY, 0, "rank 0: no memory for the map");
        for (r = 0; r < ranks && s == ELEC_OK; r++) {
            int k0, k1;
            elec_slab_partition(lattice->dims[2], ranks, r, &k0, &k1, NULL);
            counts[r] = (int)((size_t)(k1 - k0) * plane);
            offsets[r] = (int)((size_t)k0 * plane);
        }
    }
    if ((s = mpi_agree(s, err, rank)) == ELEC_OK) {
        MPI_Gatherv(job->map, mine, MPI_FLOAT, map, counts, offsets, MPI_FLOAT, 0,
                    MPI_COMM_WORLD);
        if (rank == 0) s = elec_write_map(path, lattice, map, comment, err);
        s = mpi_agree(s, err, rank);
    }
    free(counts);
    free(offsets);
    free(map);
    return s;
}

/* The frames of a trajectory's text: where each starts and ends, a frame
   ending with the first ENDMDL or END line after its atoms (MODEL, atoms,
   END, ENDMDL, as a loop of cat over pdb2pqr's files makes: the ENDMDL,
   with no atoms before it, ends no frame and is left out; text after the
   last end, if it holds an atom, is a last frame).  Returns the count;
   start and end (room for max) are filled up to max. */
static size_t split_frames(const char *text, size_t length, size_t *start, size_t *end,
                           size_t max) {
    size_t n = 0, at = 0, from = 0;
    int atoms = 0;
    while (at < length) {
        const char *newline = (const char *)memchr(text + at, '\n', length - at);
        size_t next = newline ? (size_t)(newline - text) + 1 : length;
        const int end_record = next - at >= 3 && !memcmp(text + at, "END", 3) &&
                               (next - at == 3 || text[at + 3] == ' ' || text[at + 3] == '\t' ||
                                text[at + 3] == '\r' || text[at + 3] == '\n');
        if (end_record || (next - at >= 6 && !memcmp(text + at, "ENDMDL", 6))) {
            if (atoms) {
                if (n < max) start[n] = from, end[n] = next;
                n++;
            }
            from = next; /* an end with no atoms before it ends no frame */
            atoms = 0;
        } else if (next - at >= 4 && (!memcmp(text + at, "ATOM", 4) ||
                                      (next - at >= 6 && !memcmp(text + at, "HETATM", 6)))) {
            atoms = 1;
        }
        at = next;
    }
    if (atoms) {
        if (n < max) start[n] = from, end[n] = length;
        n++;
    }
    return n;
}

/* Where the file's header ends: its first MODEL line, where one comes
   before any atom (the CRYST1 and REMARK lines above it describe every
   frame); else 0, no header (frames ended by END alone, files run together,
   each with its own records). */
static size_t header_length(const char *text, size_t length) {
    size_t at = 0;
    while (at < length) {
        const char *newline = (const char *)memchr(text + at, '\n', length - at);
        size_t next = newline ? (size_t)(newline - text) + 1 : length;
        if (next - at >= 5 && !memcmp(text + at, "MODEL", 5)) return at;
        if ((next - at >= 4 && !memcmp(text + at, "ATOM", 4)) ||
            (next - at >= 6 && !memcmp(text + at, "HETATM", 6)))
            return 0;
        at = next;
    }
    return 0;
}

/* A frame's records for its map (cli_input_records): the file's header,
   then the frame's own lines, so that frame f's map carries its own REMARKs
   and no other frame's.  Frame 0's text starts with the header.  NULL
   without memory. */
static char *frame_records(const char *text, size_t header, size_t start, size_t end) {
    char *joined, *records;
    if (start < header) return cli_input_records(text + start, end - start);
    joined = (char *)malloc(header + (end - start) + 1);
    if (!joined) return NULL;
    memcpy(joined, text, header);
    memcpy(joined + header, text + start, end - start);
    records = cli_input_records(joined, header + (end - start));
    free(joined);
    return records;
}

/* output with "_f" and four digits of frame before its extension (the
   last '.' after the last '/', and before a ".gz") */
static void frame_name(const char *output, size_t frame, char *name, size_t size) {
    const char *slash = strrchr(output, '/'), *dot;
    size_t stem, total = strlen(output);
    if (total > 3 && !strcmp(output + total - 3, ".gz")) total -= 3;
    dot = output + total;
    while (dot > output && *(dot - 1) != '.' && *(dot - 1) != '/') dot--;
    stem = dot > output && *(dot - 1) == '.' && (!slash || dot - 1 > slash)
               ? (size_t)(dot - 1 - output)
               : strlen(output);
    snprintf(name, size, "%.*s_f%04zu%s", (int)stem, output, frame, output + stem);
}

/* --frames: frame f on rank f mod ranks, each mapped whole and written by
   its rank. */
static int elecmap_mpi_frames(options *o, int rank, int ranks) {
    elec_error err;
    elec_status s;
    char *text = NULL, *records = NULL, name[1100], method[256];
    size_t length = 0, frames, f, *start = NULL, *end = NULL, mine = 0, header = 0;
    elec_lattice lattice;
    double scale, t0;
    int status = 0, have_lattice = 0;
    if (o->demo || o->method == METHOD_CHARGES || o->gpus || o->device == DEVICE_GPU) {
        if (rank == 0)
            fprintf(stderr, "elecmap_mpi: --frames maps a trajectory file's potentials on "
                            "the CPU (no --demo, --method charges, --gpu, --gpus)\n");
        return 2;
    }
    if (!o->method_given) { /* one method for every frame: DCS, not the choice by time */
        o->method = METHOD_DCS;
        o->method_given = 1;
        FILE *quiet = rank == 0 ? stderr : fopen("/dev/null", "w");
        const int fits = method_options_fit(o, quiet ? quiet : stderr);
        if (quiet && quiet != stderr) fclose(quiet);
        if (!fits) {
            if (rank == 0)
                fprintf(stderr, "elecmap_mpi: --frames without --method maps every frame by "
                                "DCS\n");
            return 2;
        }
    }
    err.message[0] = '\0';
    frame_name(o->output, 0, name, sizeof name); /* the first output as a sample */
    if (rank == 0) status = cli_map_output_check("elecmap_mpi", name, o->input);
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (status != 0) return status;
    s = elec_read_text(o->input, "a PQR", &text, &length, &err);
    if (s == ELEC_OK && length >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) {
        /* a UTF-8 byte-order mark, read past as elec_parse_pqr does, so
           that a MODEL or CRYST1 on the first line is seen as one */
        memmove(text, text + 3, length - 3 + 1);
        length -= 3;
    }
    frames = s == ELEC_OK ? split_frames(text, length, NULL, NULL, 0) : 0;
    if (s == ELEC_OK && frames == 0)
        s = elec_fail(&err, ELEC_ERR_PARSE, 0, "no frame with atoms");
    if (s == ELEC_OK) {
        start = (size_t *)malloc(frames * sizeof *start);
        end = (size_t *)malloc(frames * sizeof *end);
        if (!start || !end)
            s = elec_fail(&err, ELEC_ERR_NO_MEMORY, 0, "out of memory");
        else
            split_frames(text, length, start, end, frames);
        header = header_length(text, length);
    }
    scale = o->units == UNITS_KT     ? elec_kT_scale(o->temperature)
            : o->units == UNITS_KCAL ? ELEC_COULOMB
                                     : VOLT_SCALE;
    t0 = MPI_Wtime();
    /* the first frame's lattice for all (every rank builds it) */
    if (s == ELEC_OK) {
        elec_structure first;
        s = elec_parse_pqr(text + start[0], end[0] - start[0], &first, &err);
        if (s == ELEC_OK) {
            elec_atoms atoms = elec_structure_atoms(&first);
            if (rank == 0) cli_warn_if_pdb("elecmap_mpi", o->input, &first);
            s = build_lattice(o, &atoms, &lattice, &err);
            have_lattice = s == ELEC_OK;
            elec_structure_free(&first);
        }
    }
    for (f = (size_t)rank; s == ELEC_OK && f < frames; f += (size_t)ranks) {
        elec_structure mol;
        elec_atoms atoms;
        slab_job job;
        char *comment;
        memset(&job, 0, sizeof job);
        s = elec_parse_pqr(text + start[f], end[f] - start[f], &mol, &err);
        if (s != ELEC_OK) {
            /* the reader counts the frame's lines: say the file's too */
            char why[256];
            long first = 1;
            size_t at;
            for (at = 0; at < start[f]; at++) first += text[at] == '\n';
            const char *rest = err.message;
            if (err.line > 0 && !strncmp(rest, "line ", 5)) { /* "line N: why" */
                rest += 5;
                while (*rest >= '0' && *rest <= '9') rest++;
                if (*rest == ':') rest += *(rest + 1) == ' ' ? 2 : 1;
            }
            snprintf(why, sizeof why, "%s", rest);
            if (err.line > 0)
                s = elec_fail(&err, s, first + err.line - 1, "frame %zu: line %ld: %s", f,
                              first + err.line - 1, why);
            else
                s = elec_fail(&err, s, 0, "frame %zu: %s", f, why);
            break;
        }
        atoms = elec_structure_atoms(&mol);
        job.k0 = 0;
        job.k1 = lattice.dims[2];
        s = map_slab(o, &atoms, &lattice, scale, -1, &job, &err);
        describe_method(o, &atoms, &lattice, 0, method, sizeof method);
        snprintf(method + strlen(method), sizeof method - strlen(method),
                 ", frame %zu of %zu (elecmap_mpi --frames)", f, frames);
        records = s == ELEC_OK ? frame_records(text, header, start[f], end[f]) : NULL;
        comment = records ? provenance(o, records, &mol, &lattice, method) : NULL;
        free(records);
        frame_name(o->output, f, name, sizeof name);
        if (s == ELEC_OK)
            s = comment ? elec_write_map(name, &lattice, job.map, comment, &err)
                        : elec_fail(&err, ELEC_ERR_NO_MEMORY, 0, "out of memory");
        free(comment);
        free(job.map);
        elec_structure_free(&mol);
        mine++;
    }
    s = mpi_agree(s, &err, rank);
    if (rank == 0) {
        if (s != ELEC_OK) {
            fail(o->input, &err);
            status = 1;
        } else if (!o->quiet && have_lattice) {
            frame_name(o->output, 0, name, sizeof name);
            printf("elecmap_mpi: %s -> %s ... (%zu frames over %d ranks, %.3f s)\n", o->input,
                   name, frames, ranks, MPI_Wtime() - t0);
        }
    }
    (void)mine;
    elec_free(text);
    free(start);
    free(end);
    return s == ELEC_OK ? 0 : (status ? status : 1);
}

static int mpi_usage(FILE *out) {
    fprintf(out, "elecmap_mpi: elecmap over MPI ranks (mpirun -np N elecmap_mpi ...), one\n"
                 "slab of z planes a rank; .mrc/.map/.ccp4 written with MPI-IO, other\n"
                 "formats gathered to rank 0.  elecmap's options, but --method charges\n"
                 "and --gpus (one device a rank: with CUDA, GPU rank mod the node's count;\n"
                 "MSM on the CPU).  --frames: the input is a trajectory (frames ended by\n"
                 "ENDMDL or END); frame f maps on rank f mod N to output_fNNNN.ext, all on the\n"
                 "first frame's lattice (on the CPU; DCS unless --method says):\n\n");
    usage(out);
    return 0;
}

static int elecmap_mpi_run(options *o, int rank, int ranks) {
    elec_structure mol;
    elec_atoms atoms;
    elec_lattice lattice;
    elec_error err;
    elec_status s;
    slab_job job;
    double scale, start, seconds, *all_seconds = NULL, *all_cpu = NULL, lo = 0.0, hi = 0.0;
    clock_t cpu_start;
    unsigned long long *all_atoms = NULL, my_atoms;
    size_t length = 0;
    int status = 0, r, mrc, gzip, device = -1, *all_devices = NULL;
    char method[256], *text = NULL, *records = NULL, *comment = NULL;

    memset(&job, 0, sizeof job);
    err.message[0] = '\0';
    if (o->method == METHOD_CHARGES || o->gpus) {
        if (rank == 0)
            fprintf(stderr, "elecmap_mpi: %s: elecmap_mpi maps potentials, one device a "
                            "rank\n", o->method == METHOD_CHARGES ? "--method charges" : "--gpus");
        return 2;
    }
    /* this rank's GPU: rank mod the devices this node has */
#ifdef ELEC_WITH_CUDA
    if (o->device != DEVICE_CPU && elec_cuda_device_count() > 0)
        device = rank % elec_cuda_device_count();
#endif
    /* --gpu, or a GPU kernel's name (--variant), where a rank computes on
       the CPU */
    status = (o->device == DEVICE_GPU || (o->given & OPTION_DCS_VARIANT)) && device < 0;
    MPI_Allreduce(MPI_IN_PLACE, &status, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (status) {
        if (rank == 0)
#ifdef ELEC_WITH_CUDA
            fprintf(stderr, "elecmap_mpi: %s: a rank has no CUDA device (%s)\n",
                    o->device == DEVICE_GPU ? "--gpu" : "--variant",
                    o->device == DEVICE_GPU ? "--cpu to compute on the CPU"
                                            : "leave --variant out to compute on the CPU");
#else
            fprintf(stderr, "elecmap_mpi: %s: this elecmap_mpi was built without CUDA "
                            "(make elecmap_mpi_cuda)\n",
                    o->device == DEVICE_GPU ? "--gpu" : "--variant");
#endif
        return 1;
    }
    if (rank == 0) status = cli_map_output_check("elecmap_mpi", o->output, o->input);
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (status != 0) return status;

    /* every rank reads the input and builds the same lattice */
    if (o->demo) {
        text = demo_pqr(&length);
        s = text ? ELEC_OK : elec_fail(&err, ELEC_ERR_NO_MEMORY, 0, "out of memory");
    } else {
        s = elec_read_text(o->input, "a PQR", &text, &length, &err);
    }
    if (s == ELEC_OK) s = elec_parse_pqr(text, length, &mol, &err);
    if (s == ELEC_OK) {
        records = cli_input_records(text, length);
        if (!records) {
            elec_structure_free(&mol);
            s = elec_fail(&err, ELEC_ERR_NO_MEMORY, 0, "out of memory");
        }
    }
    if (o->demo) free(text);
    else elec_free(text);
    if ((s = mpi_agree(s, &err, rank)) != ELEC_OK) {
        if (rank == 0) fail(o->demo ? "demo input" : o->input, &err);
        return 1;
    }
    if (rank == 0 && !o->demo) cli_warn_if_pdb("elecmap_mpi", o->input, &mol);
    atoms = elec_structure_atoms(&mol);
    s = mpi_agree(build_lattice(o, &atoms, &lattice, &err), &err, rank);
    /* the method without --method: rank 0 chooses (and says so), the
       others follow */
    if (s == ELEC_OK && rank == 0) status = choose_method(o, &atoms, &lattice, device >= 0);
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    {
        int m = (int)o->method;
        MPI_Bcast(&m, 1, MPI_INT, 0, MPI_COMM_WORLD);
        o->method = (map_method)m;
    }
    if (s != ELEC_OK || status != 0) {
        if (s != ELEC_OK && rank == 0) fail(NULL, &err);
        elec_structure_free(&mol);
        free(records);
        return s != ELEC_OK ? 1 : status;
    }

    scale = o->units == UNITS_KT     ? elec_kT_scale(o->temperature)
            : o->units == UNITS_KCAL ? ELEC_COULOMB
                                     : VOLT_SCALE;
    elec_slab_partition(lattice.dims[2], ranks, rank, &job.k0, &job.k1, NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    start = MPI_Wtime();
    cpu_start = clock();
    s = map_slab(o, &atoms, &lattice, scale, o->method == METHOD_MSM ? -1 : device, &job,
                 &err);
    job.seconds = MPI_Wtime() - start;
    job.cpu = (double)(clock() - cpu_start) / CLOCKS_PER_SEC;
    /* the map calls refuse a value past float's range, naming it: every slab
       that reaches the writers below is finite */
    s = mpi_agree(s, &err, rank);
    seconds = MPI_Wtime() - start;

    describe_method(o, &atoms, &lattice, device >= 0 && o->method != METHOD_MSM, method,
                    sizeof method);
    snprintf(method + strlen(method), sizeof method - strlen(method),
             ", over %d MPI rank%s (elecmap_mpi)", ranks, ranks == 1 ? "" : "s");
    if (s == ELEC_OK) {
        comment = provenance(o, records, &mol, &lattice, method);
        s = mpi_agree(comment ? ELEC_OK
                              : elec_fail(&err, ELEC_ERR_NO_MEMORY, 0,
                                          "no memory for the map's comment"),
                      &err, rank);
    }
    mrc = elec_map_format_of(o->output, &gzip) == ELEC_MAP_MRC && !gzip;
    if (s == ELEC_OK)
        s = mrc ? write_mrc_mpi(o->output, &lattice, &job, comment, rank, &err)
                : write_gathered(o->output, &lattice, &job, comment, rank, ranks, &err);
    free(comment);
    free(records);

    /* the summary: rank 0 hears every rank's planes, atoms and time */
    my_atoms = (unsigned long long)job.atoms;
    if (rank == 0) {
        all_seconds = (double *)malloc((size_t)ranks * sizeof *all_seconds);
        all_atoms = (unsigned long long *)malloc((size_t)ranks * sizeof *all_atoms);
        all_devices = (int *)malloc((size_t)ranks * sizeof *all_devices);
        all_cpu = (double *)malloc((size_t)ranks * sizeof *all_cpu);
    }
    MPI_Gather(&job.cpu, 1, MPI_DOUBLE, all_cpu, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (o->method == METHOD_MSM) device = -1;
    MPI_Gather(&device, 1, MPI_INT, all_devices, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Gather(&job.seconds, 1, MPI_DOUBLE, all_seconds, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    MPI_Gather(&my_atoms, 1, MPI_UNSIGNED_LONG_LONG, all_atoms, 1, MPI_UNSIGNED_LONG_LONG, 0,
               MPI_COMM_WORLD);
    if (s == ELEC_OK) { /* the smallest value and the smallest negated: min and max */
        size_t i, n = job.map ? (size_t)(job.k1 - job.k0) * (size_t)lattice.dims[0] *
                                    (size_t)lattice.dims[1]
                              : 0;
        double mine[2] = {HUGE_VAL, HUGE_VAL}, both[2];
        for (i = 0; i < n; i++) {
            mine[0] = job.map[i] < mine[0] ? job.map[i] : mine[0];
            mine[1] = -job.map[i] < mine[1] ? -job.map[i] : mine[1];
        }
        MPI_Reduce(mine, both, 2, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        lo = both[0];
        hi = -both[1];
    }
    if (rank == 0) {
        if (s != ELEC_OK) {
            fail(NULL, &err);
        } else if (!o->quiet && all_seconds && all_atoms && all_devices && all_cpu) {
            FILE *report = cli_report_stream(o->output); /* not among the map's data */
            fprintf(report, "elecmap_mpi: %s -> %s\n", o->demo ? "(built-in demo)" : o->input,
                    o->output);
            fprintf(report, "  atoms      %zu\n", atoms.count);
            fprintf(report,
                    "  lattice    %d x %d x %d = %zu points, spacing %g A, origin (%.3f, %.3f, "
                    "%.3f)\n", lattice.dims[0], lattice.dims[1], lattice.dims[2],
                    elec_lattice_size(&lattice), lattice.spacing[0], lattice.origin[0],
                    lattice.origin[1], lattice.origin[2]);
            fprintf(report, "  method     %s\n", method);
            fprintf(report, "  output     %s, %s\n", elec_map_format_name(o->output),
                    mrc ? "MPI-IO" : "gathered to rank 0");
            fprintf(report,
                    "  time       %.3f s (the slowest rank's map, with the ranks' agreement)\n",
                    seconds);
            fprintf(report, "  potential  min %.4g, max %.4g %s\n", lo, hi, units_name(o));
            for (r = 0; r < ranks; r++) {
                int k0, k1;
                elec_slab_partition(lattice.dims[2], ranks, r, &k0, &k1, NULL);
                if (k0 == k1)
                    fprintf(report, "  rank %-4d  no planes (more ranks than planes)\n", r);
                else if (all_devices[r] < 0)
                    fprintf(report,
                            "  rank %-4d  planes %d..%d (%d), %llu atoms, %.3f s (%.3f s of "
                            "processor), CPU\n", r, k0, k1 - 1, k1 - k0, all_atoms[r],
                            all_seconds[r], all_cpu[r]);
                else
                    fprintf(report, "  rank %-4d  planes %d..%d (%d), %llu atoms, %.3f s, GPU %d\n",
                            r, k0, k1 - 1, k1 - k0, all_atoms[r], all_seconds[r],
                            all_devices[r]);
            }
        }
    }
    free(all_seconds);
    free(all_atoms);
    free(all_devices);
    free(all_cpu);
    free(job.map);
    elec_structure_free(&mol);
    return s == ELEC_OK ? 0 : 1;
}

int main(int argc, char **argv) {
    options o;
    int rank, ranks, status, i, kept, frames = 0;
    FILE *messages;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    (void)elecmap_run; /* elecmap's own main path: not this tool's */
    if (rank == 0) cli_check_stdout_at_exit(TOOL); /* rank 0 prints the summary */
    /* every rank parses; rank 0 alone says what is wrong */
    messages = rank == 0 ? stderr : fopen("/dev/null", "w");
    /* --frames is this tool's own: taken out before elecmap's parser */
    for (i = 1, kept = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--frames")) frames = 1;
        else argv[kept++] = argv[i];
    }
    argc = kept;
    switch (elecmap_parse(argc, argv, &o, messages ? messages : stderr)) {
    case PARSE_HELP: status = rank == 0 ? mpi_usage(stdout) : 0; break;
    case PARSE_VERSION:
        if (rank == 0) cli_version(stdout, "elecmap_mpi", "MPI", 1);
        status = 0;
        break;
    case PARSE_ERROR: status = 2; break;
    default:
        status = frames ? elecmap_mpi_frames(&o, rank, ranks) : elecmap_mpi_run(&o, rank, ranks);
        break;
    }
    if (messages && messages != stderr) fclose(messages);
    MPI_Finalize();
    return status;
}
