/* elec.h - molecular electrostatics, core.  C99, also compiles as C++.

   elec is a header-only kit: elec.h (this file, no CUDA), elec_cpu.h (CPU
   methods and double-precision references) and elec_cuda.cuh (CUDA kernels).

   Do this in exactly one C or C++ file:
       #define ELEC_IMPLEMENTATION
       #include "elec.h"
   (or define ELEC_ALL_IMPLEMENTATION before including all three headers).
   Everywhere else just include it.

   Quick start: the potential of a PQR structure on a lattice, as an OpenDX map.

       elec_structure mol;
       elec_error err;
       if (elec_read_pqr("protein.pqr", &mol, &err) != ELEC_OK) {
           fprintf(stderr, "%s\n", err.message); return 1;
       }
       elec_atoms atoms = elec_structure_atoms(&mol);
       elec_lattice lat;
       elec_lattice_around(&atoms, 0.5, 10.0, &lat, &err);   spacing, padding (A)
       float *map = malloc(elec_lattice_size(&lat) * sizeof *map);
       elec_dcs_params p = {0};                  every zero field is a default
       p.scale = ELEC_COULOMB;                   kcal/(mol e) instead of e/A
       elec_cpu_dcs_map(&atoms, &lat, &p, map, &err);         (elec_cpu.h)
       elec_write_dx("phi.dx", &lat, map, "elec DCS", &err);
       elec_structure_free(&mol);

   Options (define before including):
       ELEC_STATIC           every function static: a private copy per file
       ELEC_MALLOC(size)     your allocator (default malloc) ...
       ELEC_FREE(ptr)        ... and its free (default free)

   Conventions
       Lengths in A, charges in e.  Potentials are sums of q/r (e/A) times a
       caller-chosen scale: ELEC_COULOMB gives kcal/(mol e), elec_kT_scale(T)
       gives kT/e.  Lattices store x fastest: index = i + nx*(j + ny*k).
       Every function that can fail returns elec_status and fills the
       optional elec_error (line number and a sentence).  No global state,
       no printing, no exit().

   Contents, in reading order: status codes, units, atoms, lattices and
   boxes, shared inline math (ELEC_HD), method parameters, PQR and OpenDX
   I/O.  Version and licence at the bottom. */
#ifndef ELEC_H
#define ELEC_H

#include <math.h>
#include <stddef.h>

#ifdef ELEC_ALL_IMPLEMENTATION
#ifndef ELEC_IMPLEMENTATION
#define ELEC_IMPLEMENTATION
#endif
#endif

#define ELEC_VERSION_MAJOR 0
#define ELEC_VERSION_MINOR 1
#define ELEC_VERSION_PATCH 0

#ifdef ELEC_STATIC
#define ELEC_API static
#else
#define ELEC_API extern
#endif

/* ELEC_HD marks math that host loops and CUDA kernels share: the very same
   function runs in both, so the GPU cannot drift from the CPU reference. */
#ifdef __CUDACC__
#define ELEC_HD __host__ __device__
#else
#define ELEC_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- status */

typedef enum elec_status {
    ELEC_OK = 0,
    ELEC_ERR_INVALID_ARG, /* a parameter is out of range; message says which   */
    ELEC_ERR_NO_MEMORY,   /* an allocation failed (host or device)             */
    ELEC_ERR_IO,          /* a file could not be opened, read or written       */
    ELEC_ERR_PARSE,       /* input malformed; message gives line and field     */
    ELEC_ERR_UNSUPPORTED, /* valid request this build or input cannot serve    */
    ELEC_ERR_NO_DEVICE,   /* a GPU path was asked for and no GPU is usable     */
    ELEC_ERR_CUDA,        /* a CUDA call failed; message gives call and error  */
    ELEC_ERR_CANCELLED,   /* the caller's progress callback asked to stop      */
    ELEC_STATUS_COUNT
} elec_status;

/* Detail for a failure: which line of a file, and a sentence a person can
   act on.  Pass NULL where the detail is not wanted. */
typedef struct elec_error {
    elec_status status;
    long line; /* 1-based line of an input file, 0 when not about a file */
    char message[256];
} elec_error;

ELEC_API const char *elec_status_string(elec_status status);

/* Progress of a long computation, as a fraction in [0, 1].  Return 0 to go
   on; anything else stops the computation with ELEC_ERR_CANCELLED. */
typedef int (*elec_progress_fn)(double fraction_done, void *user);

/* ----------------------------------------------------------------- units */

/* Coulomb constant e^2/(4 pi eps0) in kcal A/(mol e^2), the value AMBER and
   CHARMM use.  A sum of q/r in e/A times ELEC_COULOMB is in kcal/(mol e). */
#define ELEC_COULOMB 332.0636
/* Molar gas constant in kcal/(mol K): kT = ELEC_GAS_CONSTANT * T. */
#define ELEC_GAS_CONSTANT 1.987204259e-3
#define ELEC_ROOM_TEMPERATURE 298.15

/* Scale that turns a sum of q/r (e/A) into kT/e at temperature T (K), the
   unit APBS writes: ELEC_COULOMB / (R T).  560.46 at 298.15 K.  Returns 0
   for a temperature that is not positive and finite. */
ELEC_API double elec_kT_scale(double temperature);

/* ----------------------------------------------------------------- atoms */

typedef enum elec_scalar_type {
    ELEC_FLOAT64 = 0, /* double */
    ELEC_FLOAT32      /* float  */
} elec_scalar_type;

/* A read-only view of the caller's atom arrays: nothing is copied.  Each
   array has its own byte stride, so separate arrays, interleaved xyz,
   xyzq float4 records and arrays of structs all fit.  Build one with the
   elec_atoms_from_* helpers below, or fill it directly. */
typedef struct elec_atoms {
    size_t count;
    elec_scalar_type type;    /* of every array below */
    const void *x, *y, *z;    /* positions (A) */
    const void *charge;       /* e */
    const void *radius;       /* A; optional (NULL), needed by MDH */
    size_t position_stride;   /* bytes from one atom's x to the next; 0 = packed */
    size_t charge_stride;     /* 0 = packed */
    size_t radius_stride;     /* 0 = packed */
} elec_atoms;

/* xyz interleaved (xyz[3*i + axis]), separate charges, optional radii. */
ELEC_API elec_atoms elec_atoms_from_xyz(size_t count, const double *xyz,
                                        const double *charge,
                                        const double *radius);
ELEC_API elec_atoms elec_atoms_from_xyz_float(size_t count, const float *xyz,
                                              const float *charge,
                                              const float *radius);
/* float4 records x, y, z, q as GPU MD codes keep them. */
ELEC_API elec_atoms elec_atoms_from_xyzq_float(size_t count, const float *xyzq);

/* Atom i's position, charge and radius (radius 0 when absent), in double. */
ELEC_API void elec_atoms_get(const elec_atoms *atoms, size_t i,
                             double position[3], double *charge,
                             double *radius);

/* Checks the view: arrays present, every coordinate, charge and radius
   finite, radii non-negative.  The methods call it before any work. */
ELEC_API elec_status elec_atoms_check(const elec_atoms *atoms,
                                      int need_radius, elec_error *err);

/* Axis-aligned bounding box of the atoms' positions. */
ELEC_API void elec_atoms_bounds(const elec_atoms *atoms, double lo[3],
                                double hi[3]);

/* ------------------------------------------------------ lattices, boxes */

/* A regular lattice of points: point (i,j,k) sits at
   origin + (i*spacing[0], j*spacing[1], k*spacing[2]); maps over it store
   x fastest, index = i + dims[0]*(j + dims[1]*k). */
typedef struct elec_lattice {
    int dims[3];
    double origin[3];
    double spacing[3];
} elec_lattice;

/* An orthorhombic periodic box with edge lengths in A (all > 0).  The
   later periodic methods (MSM, Ewald, SPME) take it. */
typedef struct elec_box {
    double length[3];
} elec_box;

ELEC_API size_t elec_lattice_size(const elec_lattice *lattice);
ELEC_API elec_status elec_lattice_check(const elec_lattice *lattice,
                                        elec_error *err);
/* The lattice of the given spacing that covers the atoms' bounding box plus
   padding on every side, centred on it. */
ELEC_API elec_status elec_lattice_around(const elec_atoms *atoms,
                                         double spacing, double padding,
                                         elec_lattice *out, elec_error *err);
ELEC_API void elec_lattice_point(const elec_lattice *lattice, int i, int j,
                                 int k, double position[3]);

/* The points on the six faces of a lattice, where APBS sets its boundary
   potential (bcfl mdh): every point with i, j or k at 0 or at its maximum,
   each once, in increasing lattice index.  elec_lattice_face_count gives
   how many; elec_lattice_face_points writes their positions (xyz
   interleaved) and, if index is not NULL, their lattice indices, so values
   computed at the points can be stored back into a map. */
ELEC_API size_t elec_lattice_face_count(const elec_lattice *lattice);
ELEC_API void elec_lattice_face_points(const elec_lattice *lattice,
                                       double *xyz, size_t *index);

/* ------------------------------------------------------ shared inline math */

/* An atom closer than this to a point where the potential is asked for is
   left out of that point's sum: the potential of a point charge at its own
   position is undefined, and the map must stay finite.  Every method, CPU
   and GPU, applies the same rule. */
#define ELEC_COINCIDENT_DISTANCE 1e-4

ELEC_HD static inline double elec_distance2(const double a[3],
                                            const double b[3]) {
    double dx = a[0] - b[0], dy = a[1] - b[1], dz = a[2] - b[2];
    return dx * dx + dy * dy + dz * dz;
}

/* Screened Coulomb kernel of multiple Debye-Hueckel, seed 000 eq. 2: an
   atom of charge q and radius sigma in a solvent of inverse Debye length
   kappa contributes q * exp(-kappa (r - sigma)) / ((1 + kappa sigma) r) at
   distance r.  kappa = 0 gives the plain Coulomb q/r. */
ELEC_HD static inline double elec_mdh_term(double q, double sigma,
                                           double kappa, double r) {
    return q * exp(-kappa * (r - sigma)) / ((1.0 + kappa * sigma) * r);
}

/* ----------------------------------------------------------- parameters */

/* DCS variants: the GPU optimisation ladder of seeds 000/003, each step a
   short kernel beside its neighbour (elec_cuda.cuh).  The CPU ignores it. */
typedef enum elec_dcs_variant {
    ELEC_DCS_FASTEST = 0,       /* default: the fastest kernel below           */
    ELEC_DCS_SIMPLE,            /* one point per thread, atoms in global memory */
    ELEC_DCS_CONST,             /* atoms in constant memory, dz^2 precomputed   */
    ELEC_DCS_UNROLL4,           /* unroll-and-jam x4: dy^2+dz^2 reused 4 times  */
    ELEC_DCS_UNROLL8_COALESCED, /* x8, points a warp apart: coalesced stores    */
    ELEC_DCS_HYBRID_RSQRT,      /* x8, 1 in 8 rsqrt on the FMA pipe (Hopper)    */
    ELEC_DCS_VARIANT_COUNT
} elec_dcs_variant;

ELEC_API const char *elec_dcs_variant_name(elec_dcs_variant variant);

/* Spreading a GPU computation over several devices. */
typedef struct elec_gpu_set {
    int count;          /* 0 = one GPU: the calling thread's current device;
                           ELEC_ALL_GPUS = every visible device             */
    const int *devices; /* device ordinals; NULL = 0 .. count-1             */
} elec_gpu_set;
#define ELEC_ALL_GPUS (-1)

/* Direct Coulomb summation: phi(p) = scale * sum_j q_j / |p - r_j|. */
typedef struct elec_dcs_params {
    double scale;             /* 0 = 1: e/A.  ELEC_COULOMB: kcal/(mol e)     */
    elec_dcs_variant variant; /* GPU kernel; 0 = ELEC_DCS_FASTEST            */
    elec_gpu_set gpus;        /* GPU map slices go round-robin over these    */
    elec_progress_fn progress;
    void *progress_user;
} elec_dcs_params;

/* Multiple Debye-Hueckel: phi(p) = scale * sum_j elec_mdh_term(q_j, sigma_j,
   kappa, |p - r_j|), sigma_j the atom's radius. */
typedef struct elec_mdh_params {
    double scale;  /* 0 = 1: e/A */
    double kappa;  /* inverse Debye length (1/A); 0 = no screening, or ...  */
    double ionic_strength; /* ... from this (mol/L) if kappa is 0: see
                              elec_kappa_from_ionic_strength                 */
    double temperature;    /* K, for kappa from ionic strength; 0 = 298.15  */
    double dielectric;     /* solvent relative permittivity; 0 = 78.54      */
    elec_gpu_set gpus;     /* the first device is used                       */
    elec_progress_fn progress;
    void *progress_user;
} elec_mdh_params;

/* Inverse Debye length kappa (1/A) of a 1:1 electrolyte of ionic strength I
   (mol/L) in a solvent of relative permittivity eps at temperature T (K):
   kappa^2 = 2 N_A e^2 I 1000 / (eps eps0 k T).  0.1 M, 78.54, 298.15 K
   gives 0.1040 /A (a Debye length of 9.6 A). */
ELEC_API double elec_kappa_from_ionic_strength(double ionic_strength,
                                               double dielectric,
                                               double temperature);

/* The parameters with every zero field replaced by its default; methods
   call these once, and tests and tools print them. */
ELEC_API elec_dcs_params elec_dcs_params_resolved(const elec_dcs_params *p);
ELEC_API elec_mdh_params elec_mdh_params_resolved(const elec_mdh_params *p);
ELEC_API elec_status elec_dcs_params_check(const elec_dcs_params *p,
                                           elec_error *err);
ELEC_API elec_status elec_mdh_params_check(const elec_mdh_params *p,
                                           elec_error *err);

/* ------------------------------------------------------ structures, I/O */

/* Per-atom labels from a PQR file, kept for selections and for the HCP
   hierarchy (atoms -> residues -> chains). */
typedef struct elec_atom_label {
    char name[8];         /* atom name, e.g. "CA"                          */
    char residue_name[8]; /* up to 4 characters in PQR ("NTER")            */
    char chain;           /* chain identifier; ' ' when the file has none  */
    char insertion_code;  /* ' ' when none                                 */
    char is_hetatm;       /* 1 for HETATM records                          */
    int serial;           /* atom serial number as written                 */
    int residue_number;
} elec_atom_label;

/* A structure read from a file: arrays owned by the structure, freed by
   elec_structure_free. */
typedef struct elec_structure {
    size_t count;
    double *xyz;     /* 3*count, interleaved */
    double *charge;  /* count */
    double *radius;  /* count */
    elec_atom_label *label; /* count */
    int has_cell;    /* 1 when a CRYST1 record was read */
    double cell_length[3];  /* a, b, c (A) from CRYST1 */
    double cell_angle[3];   /* alpha, beta, gamma (degrees) from CRYST1 */
} elec_structure;

/* Reads a PQR file: ATOM/HETATM records as pdb2pqr writes them (PDB
   columns) or whitespace-separated, with or without chain identifiers,
   residue names of up to 4 characters, and a CRYST1 cell when present.
   Any malformed record fails the whole read with ELEC_ERR_PARSE, the line
   number and the field; nothing partial is returned. */
ELEC_API elec_status elec_read_pqr(const char *path, elec_structure *out,
                                   elec_error *err);
/* The same from text in memory (length bytes; need not end in '\0'). */
ELEC_API elec_status elec_parse_pqr(const char *text, size_t length,
                                    elec_structure *out, elec_error *err);
ELEC_API void elec_structure_free(elec_structure *structure);
/* A view of the structure's atoms for the methods (no copy). */
ELEC_API elec_atoms elec_structure_atoms(const elec_structure *structure);
/* The periodic box of an orthorhombic CRYST1 cell; ELEC_ERR_UNSUPPORTED
   when the file had none or its angles are not 90 degrees. */
ELEC_API elec_status elec_structure_box(const elec_structure *structure,
                                        elec_box *box, elec_error *err);

/* Writes a map as OpenDX, the dialect APBS writes and VMD, PyMOL and
   Chimera read (gridpositions, gridconnections, array; three values a
   line; z fastest in the file, so the writer transposes).  comment may be
   NULL. */
ELEC_API elec_status elec_write_dx(const char *path,
                                   const elec_lattice *lattice,
                                   const float *map, const char *comment,
                                   elec_error *err);
/* Reads an OpenDX map into a new array (x fastest), allocated with
   ELEC_MALLOC: release it with elec_free. */
ELEC_API elec_status elec_read_dx(const char *path, elec_lattice *lattice,
                                  float **map, elec_error *err);

ELEC_API void *elec_malloc(size_t size);
ELEC_API void elec_free(void *ptr);

#ifdef __cplusplus
}
#endif
#endif /* ELEC_H */

/* ================================================ private shared helpers */
/* Compiled wherever any of the three headers is implemented, so that
   elec_cpu.h and elec_cuda.cuh can be implemented in a file of their own. */
#if defined(ELEC_IMPLEMENTATION) || defined(ELEC_CPU_IMPLEMENTATION) ||       \
    defined(ELEC_CUDA_IMPLEMENTATION)
#ifndef ELEC__PRIVATE_DONE
#define ELEC__PRIVATE_DONE

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ELEC_MALLOC
#define ELEC_MALLOC(size) malloc(size)
#define ELEC_FREE(ptr) free(ptr)
#endif

#ifdef ELEC_STATIC
#define ELEC_DEF static
#else
#define ELEC_DEF
#endif

/* Fills err (when given) and returns the status, so that a failure is one
   line: return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "...", ...). */
static inline elec_status elec__fail(elec_error *err, elec_status status,
                                     long line, const char *format, ...) {
    if (err) {
        va_list args;
        err->status = status;
        err->line = line;
        va_start(args, format);
        vsnprintf(err->message, sizeof err->message, format, args);
        va_end(args);
    }
    return status;
}

static inline void elec__ok(elec_error *err) {
    if (err) {
        err->status = ELEC_OK;
        err->line = 0;
        err->message[0] = '\0';
    }
}

static inline int elec__finite(double v) {
    return v == v && v <= DBL_MAX && v >= -DBL_MAX;
}

#endif /* ELEC__PRIVATE_DONE */
#endif

/* ====================================================== implementation */
#ifdef ELEC_IMPLEMENTATION
#ifndef ELEC_IMPLEMENTATION_DONE
#define ELEC_IMPLEMENTATION_DONE

#ifdef __cplusplus
extern "C" {
#endif

ELEC_DEF void *elec_malloc(size_t size) { return ELEC_MALLOC(size); }
ELEC_DEF void elec_free(void *ptr) { ELEC_FREE(ptr); }

ELEC_DEF const char *elec_status_string(elec_status status) {
    switch (status) {
    case ELEC_OK: return "ok";
    case ELEC_ERR_INVALID_ARG: return "invalid argument";
    case ELEC_ERR_NO_MEMORY: return "out of memory";
    case ELEC_ERR_IO: return "input/output error";
    case ELEC_ERR_PARSE: return "malformed input";
    case ELEC_ERR_UNSUPPORTED: return "not supported";
    case ELEC_ERR_NO_DEVICE: return "no usable GPU";
    case ELEC_ERR_CUDA: return "CUDA error";
    case ELEC_ERR_CANCELLED: return "cancelled";
    case ELEC_STATUS_COUNT: break;
    }
    return "unknown status";
}

ELEC_DEF double elec_kT_scale(double temperature) {
    if (!(temperature > 0.0) || !(temperature < DBL_MAX)) return 0.0;
    return ELEC_COULOMB / (ELEC_GAS_CONSTANT * temperature);
}

/* ----------------------------------------------------------------- atoms */

ELEC_DEF elec_atoms elec_atoms_from_xyz(size_t count, const double *xyz,
                                        const double *charge,
                                        const double *radius) {
    elec_atoms a;
    memset(&a, 0, sizeof a);
    a.count = count;
    a.type = ELEC_FLOAT64;
    a.x = xyz;
    a.y = xyz ? xyz + 1 : NULL;
    a.z = xyz ? xyz + 2 : NULL;
    a.charge = charge;
    a.radius = radius;
    a.position_stride = 3 * sizeof(double);
    return a;
}

ELEC_DEF elec_atoms elec_atoms_from_xyz_float(size_t count, const float *xyz,
                                              const float *charge,
                                              const float *radius) {
    elec_atoms a;
    memset(&a, 0, sizeof a);
    a.count = count;
    a.type = ELEC_FLOAT32;
    a.x = xyz;
    a.y = xyz ? xyz + 1 : NULL;
    a.z = xyz ? xyz + 2 : NULL;
    a.charge = charge;
    a.radius = radius;
    a.position_stride = 3 * sizeof(float);
    return a;
}

ELEC_DEF elec_atoms elec_atoms_from_xyzq_float(size_t count, const float *xyzq) {
    elec_atoms a;
    memset(&a, 0, sizeof a);
    a.count = count;
    a.type = ELEC_FLOAT32;
    a.x = xyzq;
    a.y = xyzq ? xyzq + 1 : NULL;
    a.z = xyzq ? xyzq + 2 : NULL;
    a.charge = xyzq ? xyzq + 3 : NULL;
    a.position_stride = 4 * sizeof(float);
    a.charge_stride = 4 * sizeof(float);
    return a;
}

/* Element i of a strided array of the view's scalar type. */
static double elec__atoms_value(const elec_atoms *a, const void *base,
                                size_t stride, size_t i) {
    size_t width = a->type == ELEC_FLOAT32 ? sizeof(float) : sizeof(double);
    const char *p = (const char *)base + i * (stride ? stride : width);
    if (a->type == ELEC_FLOAT32) {
        float f;
        memcpy(&f, p, sizeof f);
        return f;
    } else {
        double d;
        memcpy(&d, p, sizeof d);
        return d;
    }
}

ELEC_DEF void elec_atoms_get(const elec_atoms *a, size_t i, double position[3],
                             double *charge, double *radius) {
    if (position) {
        position[0] = elec__atoms_value(a, a->x, a->position_stride, i);
        position[1] = elec__atoms_value(a, a->y, a->position_stride, i);
        position[2] = elec__atoms_value(a, a->z, a->position_stride, i);
    }
    if (charge) *charge = elec__atoms_value(a, a->charge, a->charge_stride, i);
    if (radius)
        *radius = a->radius
                      ? elec__atoms_value(a, a->radius, a->radius_stride, i)
                      : 0.0;
}

ELEC_DEF elec_status elec_atoms_check(const elec_atoms *a, int need_radius,
                                      elec_error *err) {
    size_t i;
    if (!a) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "atoms is NULL");
    if (a->type != ELEC_FLOAT64 && a->type != ELEC_FLOAT32)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "atoms: unknown scalar type %d", (int)a->type);
    if (a->count == 0) {
        elec__ok(err);
        return ELEC_OK;
    }
    if (!a->x || !a->y || !a->z || !a->charge)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "atoms: position or charge array is NULL");
    if (need_radius && !a->radius)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "atoms: this method needs radii and none were given");
    for (i = 0; i < a->count; i++) {
        double p[3], q, r;
        elec_atoms_get(a, i, p, &q, &r);
        if (!elec__finite(p[0]) || !elec__finite(p[1]) || !elec__finite(p[2]))
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "atom %zu: position is not finite", i);
        if (!elec__finite(q))
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "atom %zu: charge is not finite", i);
        if (!elec__finite(r) || r < 0.0)
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "atom %zu: radius %g is negative or not finite",
                              i, r);
    }
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF void elec_atoms_bounds(const elec_atoms *a, double lo[3],
                                double hi[3]) {
    size_t i;
    int axis;
    for (axis = 0; axis < 3; axis++) lo[axis] = hi[axis] = 0.0;
    for (i = 0; i < a->count; i++) {
        double p[3];
        elec_atoms_get(a, i, p, NULL, NULL);
        for (axis = 0; axis < 3; axis++) {
            if (i == 0 || p[axis] < lo[axis]) lo[axis] = p[axis];
            if (i == 0 || p[axis] > hi[axis]) hi[axis] = p[axis];
        }
    }
}

/* ------------------------------------------------------ lattices, boxes */

ELEC_DEF size_t elec_lattice_size(const elec_lattice *l) {
    if (l->dims[0] <= 0 || l->dims[1] <= 0 || l->dims[2] <= 0) return 0;
    return (size_t)l->dims[0] * (size_t)l->dims[1] * (size_t)l->dims[2];
}

ELEC_DEF elec_status elec_lattice_check(const elec_lattice *l,
                                        elec_error *err) {
    int axis;
    static const char axis_name[3] = {'x', 'y', 'z'};
    if (!l) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "lattice is NULL");
    for (axis = 0; axis < 3; axis++) {
        if (l->dims[axis] <= 0)
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "lattice: %c count %d must be positive",
                              axis_name[axis], l->dims[axis]);
        if (!(l->spacing[axis] > 0.0) || !elec__finite(l->spacing[axis]))
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "lattice: %c spacing %g must be positive",
                              axis_name[axis], l->spacing[axis]);
        if (!elec__finite(l->origin[axis]))
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "lattice: %c origin is not finite",
                              axis_name[axis]);
    }
    if ((double)l->dims[0] * l->dims[1] * l->dims[2] > (double)(SIZE_MAX / 8))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "lattice: %d x %d x %d points is too many",
                          l->dims[0], l->dims[1], l->dims[2]);
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_lattice_around(const elec_atoms *atoms,
                                         double spacing, double padding,
                                         elec_lattice *out, elec_error *err) {
    double lo[3], hi[3];
    int axis;
    elec_status s = elec_atoms_check(atoms, 0, err);
    if (s != ELEC_OK) return s;
    if (!(spacing > 0.0) || !elec__finite(spacing))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "spacing %g must be positive", spacing);
    if (!(padding >= 0.0) || !elec__finite(padding))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "padding %g must be zero or positive", padding);
    elec_atoms_bounds(atoms, lo, hi);
    for (axis = 0; axis < 3; axis++) {
        double extent = hi[axis] - lo[axis] + 2.0 * padding;
        double points = ceil(extent / spacing - 1e-9) + 1.0;
        double centre = 0.5 * (lo[axis] + hi[axis]);
        if (points > INT_MAX / 4)
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "a %g A extent at %g A spacing is too many points",
                              extent, spacing);
        out->dims[axis] = (int)points;
        out->spacing[axis] = spacing;
        out->origin[axis] = centre - 0.5 * (points - 1.0) * spacing;
    }
    return elec_lattice_check(out, err);
}

ELEC_DEF void elec_lattice_point(const elec_lattice *l, int i, int j, int k,
                                 double position[3]) {
    position[0] = l->origin[0] + i * l->spacing[0];
    position[1] = l->origin[1] + j * l->spacing[1];
    position[2] = l->origin[2] + k * l->spacing[2];
}

static size_t elec__interior(int n) { return n > 2 ? (size_t)(n - 2) : 0; }

ELEC_DEF size_t elec_lattice_face_count(const elec_lattice *l) {
    size_t all = elec_lattice_size(l);
    if (all == 0) return 0;
    return all - elec__interior(l->dims[0]) * elec__interior(l->dims[1]) *
                     elec__interior(l->dims[2]);
}

ELEC_DEF void elec_lattice_face_points(const elec_lattice *l, double *xyz,
                                       size_t *index) {
    int i, j, k;
    size_t n = 0;
    if (elec_lattice_size(l) == 0) return;
    for (k = 0; k < l->dims[2]; k++) {
        int k_face = k == 0 || k == l->dims[2] - 1;
        for (j = 0; j < l->dims[1]; j++) {
            int jk_face = k_face || j == 0 || j == l->dims[1] - 1;
            for (i = 0; i < l->dims[0]; i++) {
                if (!jk_face && i != 0 && i != l->dims[0] - 1) continue;
                if (xyz) elec_lattice_point(l, i, j, k, xyz + 3 * n);
                if (index)
                    index[n] = (size_t)i +
                               (size_t)l->dims[0] *
                                   ((size_t)j + (size_t)l->dims[1] * k);
                n++;
            }
        }
    }
}

/* ----------------------------------------------------------- parameters */

ELEC_DEF const char *elec_dcs_variant_name(elec_dcs_variant v) {
    switch (v) {
    case ELEC_DCS_FASTEST: return "fastest";
    case ELEC_DCS_SIMPLE: return "simple";
    case ELEC_DCS_CONST: return "const";
    case ELEC_DCS_UNROLL4: return "unroll4";
    case ELEC_DCS_UNROLL8_COALESCED: return "unroll8-coalesced";
    case ELEC_DCS_HYBRID_RSQRT: return "hybrid-rsqrt";
    case ELEC_DCS_VARIANT_COUNT: break;
    }
    return "unknown";
}

ELEC_DEF double elec_kappa_from_ionic_strength(double ionic_strength,
                                               double dielectric,
                                               double temperature) {
    /* SI: kappa^2 = 2 N_A e^2 (1000 I) / (eps eps0 kB T), in 1/m^2. */
    const double avogadro = 6.02214076e23, charge = 1.602176634e-19;
    const double eps0 = 8.8541878128e-12, boltzmann = 1.380649e-23;
    double kappa2;
    if (!(ionic_strength > 0.0) || !(dielectric > 0.0) || !(temperature > 0.0))
        return 0.0;
    kappa2 = 2.0 * avogadro * charge * charge * 1000.0 * ionic_strength /
             (dielectric * eps0 * boltzmann * temperature);
    return sqrt(kappa2) * 1e-10; /* 1/m -> 1/A */
}

ELEC_DEF elec_dcs_params elec_dcs_params_resolved(const elec_dcs_params *p) {
    elec_dcs_params r;
    if (p) r = *p;
    else memset(&r, 0, sizeof r);
    if (r.scale == 0.0) r.scale = 1.0;
    if (r.variant == ELEC_DCS_FASTEST) r.variant = ELEC_DCS_HYBRID_RSQRT;
    return r;
}

ELEC_DEF elec_mdh_params elec_mdh_params_resolved(const elec_mdh_params *p) {
    elec_mdh_params r;
    if (p) r = *p;
    else memset(&r, 0, sizeof r);
    if (r.scale == 0.0) r.scale = 1.0;
    if (r.temperature == 0.0) r.temperature = ELEC_ROOM_TEMPERATURE;
    if (r.dielectric == 0.0) r.dielectric = 78.54;
    if (r.kappa == 0.0 && r.ionic_strength > 0.0)
        r.kappa = elec_kappa_from_ionic_strength(r.ionic_strength,
                                                 r.dielectric, r.temperature);
    return r;
}

static elec_status elec__gpu_set_check(const elec_gpu_set *g, elec_error *err) {
    int i;
    if (g->count < ELEC_ALL_GPUS)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "gpus.count %d: use a device count, 0 or ELEC_ALL_GPUS",
                          g->count);
    if (g->devices)
        for (i = 0; i < g->count; i++)
            if (g->devices[i] < 0)
                return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                  "gpus.devices[%d] = %d is not a device",
                                  i, g->devices[i]);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_dcs_params_check(const elec_dcs_params *p,
                                           elec_error *err) {
    elec_dcs_params r = elec_dcs_params_resolved(p);
    if (!elec__finite(r.scale))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "scale is not finite");
    if ((int)r.variant < 0 || r.variant >= ELEC_DCS_VARIANT_COUNT)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "unknown DCS variant %d", (int)r.variant);
    if (elec__gpu_set_check(&r.gpus, err) != ELEC_OK) return ELEC_ERR_INVALID_ARG;
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_mdh_params_check(const elec_mdh_params *p,
                                           elec_error *err) {
    elec_mdh_params r = elec_mdh_params_resolved(p);
    if (!elec__finite(r.scale))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "scale is not finite");
    if (!(r.kappa >= 0.0) || !elec__finite(r.kappa))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "kappa %g must be zero or positive", r.kappa);
    if (!(r.ionic_strength >= 0.0) || !elec__finite(r.ionic_strength))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "ionic strength %g must be zero or positive",
                          r.ionic_strength);
    if (!(r.temperature > 0.0) || !elec__finite(r.temperature))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "temperature %g K must be positive", r.temperature);
    if (!(r.dielectric > 0.0) || !elec__finite(r.dielectric))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "dielectric %g must be positive", r.dielectric);
    if (elec__gpu_set_check(&r.gpus, err) != ELEC_OK) return ELEC_ERR_INVALID_ARG;
    elec__ok(err);
    return ELEC_OK;
}

/* ======================================================= PQR and OpenDX */
/* ELEC_IO_BEGIN (the PQR reader and the DX writer/reader live here) */

/* ELEC_IO_END */

#ifdef __cplusplus
}
#endif
#endif /* ELEC_IMPLEMENTATION_DONE */
#endif /* ELEC_IMPLEMENTATION */

/*
   elec 0.1.0.  MIT licence (see LICENSE):
   Copyright (c) 2026 the elec developers.
*/
