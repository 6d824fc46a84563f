/* elec.h - molecular electrostatics, core.  C99, also compiles as C++.

   elec is a header-only kit: elec.h (this file, no CUDA), elec_cpu.h (CPU
   methods and double-precision references) and elec_cuda.cuh (CUDA kernels).

   Do this in exactly one C or C++ file:
       #define ELEC_IMPLEMENTATION
       #include "elec.h"
   (or define ELEC_ALL_IMPLEMENTATION before including all three headers).
   Everywhere else just include it.

   Quick start: the potential of a PQR structure on a lattice, as an OpenDX
   map (tests/test_docs.sh compiles it).

       elec_structure mol;
       elec_error err;
       elec_atoms atoms;
       elec_lattice lat;
       elec_dcs_params p = {0};            // every zero field is a default
       float *map;
       if (elec_read_pqr("protein.pqr", &mol, &err) != ELEC_OK) {
           fprintf(stderr, "%s\n", err.message);
           return 1;
       }
       atoms = elec_structure_atoms(&mol);
       elec_lattice_around(&atoms, 0.5, 10.0, &lat, &err); // spacing, padding (A)
       map = (float *)malloc(elec_lattice_size(&lat) * sizeof *map);
       p.scale = ELEC_COULOMB;             // kcal/(mol e) instead of e/A
       elec_cpu_dcs_map(&atoms, &lat, &p, map, &err);      // elec_cpu.h
       elec_write_dx("phi.dx", &lat, map, "elec DCS", &err);
       free(map);
       elec_structure_free(&mol);

   Options (define before including):
       ELEC_STATIC           every function static: a private copy per file
       ELEC_API              the public declarations' storage (default
                             extern, static with ELEC_STATIC)
       ELEC_MALLOC(size)     your allocator (default malloc) ...
       ELEC_FREE(ptr)        ... and its free (default free)
       ELEC_CUDA_MALLOC, ELEC_CUDA_FREE   the same for device memory
                             (elec_cuda.cuh)

   Conventions
       Lengths in A, charges in e.  Potentials are sums of q/r (e/A) times a
       caller-chosen scale: ELEC_COULOMB gives kcal/(mol e), elec_kT_scale(T)
       gives kT/e.  Lattices store x fastest: index = i + nx*(j + ny*k).
       Every function that can fail returns elec_status and fills the
       optional elec_error (line number and a sentence).  No global state,
       no printing, no exit().

   Contents (tools/contents.sh; ">>tag" finds a section in all three headers):
     >>common   atoms, lattices, shared math, bins
                elec_status_string elec_fail elec_kT_scale elec_atoms_from_xyz
                elec_atoms_from_xyz_float elec_atoms_from_xyzq_float
                elec_atoms_get elec_atoms_check elec_atoms_bounds
                elec_lattice_size elec_lattice_check elec_lattice_check_points
                elec_lattice_around elec_lattice_point elec_lattice_face_count
                elec_lattice_face_points elec_distance2 elec_bspline_weights
                elec_bspline_weights_float elec_erfc_scaled_float
                elec_msm_gamma elec_msm_gamma_derivative elec_bin_length
                elec_bins_build elec_bins_free elec_cells_build elec_cells_free
                elec_cells_ijk elec_cells_neighbour elec_bin_neighbourhood
                elec_malloc elec_free elec_stage_seconds
     >>io       I/O: PQR, OpenDX, output files
                elec_read_pqr elec_parse_pqr elec_structure_free
                elec_structure_atoms elec_structure_box elec_write_dx
                elec_read_dx elec_parse_dx elec_read_text elec_output_open
                elec_output_write elec_output_printf elec_output_commit
                elec_output_abort elec_output_check
     >>mrc      MRC/CCP4 and gzipped OpenDX maps
                elec_write_mrc elec_read_mrc elec_parse_mrc
                elec_output_open_gzip elec_map_format_of elec_map_format_name
                elec_write_map elec_read_map
     >>dcs      DCS: direct Coulomb summation
                elec_dcs_variant_name elec_dcs_params_resolve
     >>mdh      MDH: multiple Debye-Hueckel
                elec_mdh_term elec_kappa_from_ionic_strength
                elec_mdh_params_resolve
     >>cutoff   cutoff maps: smoothed short-range sums over spatial bins
                elec_cutoff_params_resolve elec_cutoff_term
     >>msm      MSM: multilevel summation
                elec_msm_params_resolve elec_msm_periodic_params_resolve
                elec_msm_lattices_free elec_msm_support elec_msm_axis_weights
                elec_msm_axis_weights_float elec_msm_basis
                elec_msm_basis_derivative
     >>ewald    Ewald: the exact periodic sum
                elec_ewald_params_resolve
     >>spme     SPME: smooth particle mesh Ewald
                elec_spme_params_resolve elec_fft_friendly_size
                elec_spme_bspline_moduli
     >>charges  charge mapping
                elec_chargemap_variant_name elec_chargemap_cpu_variant_name
                elec_chargemap_params_resolve elec_chargemap_periodic_lattice
     >>alpb     ALPB surface potentials, HCP
                elec_structure_components elec_hcp_build
                elec_hcp_from_structure elec_hcp_free elec_alpb_size
                elec_alpb_variant_name elec_alpb_params_resolve
                elec_alpb_kernel_setup elec_hcp_reach elec_alpb_term
                elec_alpb_term_float elec_read_msms elec_parse_msms
                elec_read_points elec_parse_points elec_surface_contact
                elec_surface_mesh elec_surface_free
     >>slab     sub-lattices for distributed maps
                elec_slab_partition elec_lattice_slab elec_atoms_halo
                elec_atoms_gather elec_mrc_header
   (end of contents)
   The version at the top (">>version"), the licence at the bottom. */
#ifndef ELEC_H
#define ELEC_H

/* ------------------------------------------------------------- >>version */
/* The kit's version.  The Makefile reads these three lines into what
   `make install` writes (elec.pc, elecConfigVersion.cmake), and the tools
   print them (--version): change them here and nowhere else. */
#define ELEC_VERSION_MAJOR 0
#define ELEC_VERSION_MINOR 1
#define ELEC_VERSION_PATCH 0
/* "0.1.0", spelled from the three numbers above */
#define ELEC_VERSION_STRING                                                   \
    ELEC__VERSION_TEXT(ELEC_VERSION_MAJOR, ELEC_VERSION_MINOR, ELEC_VERSION_PATCH)
#define ELEC__VERSION_TEXT(major, minor, patch) ELEC__VERSION_QUOTE(major.minor.patch)
#define ELEC__VERSION_QUOTE(text) #text
/* One number for #if: 10000 major + 100 minor + patch (0.1.0 is 100). */
#define ELEC_VERSION_NUMBER                                                   \
    (ELEC_VERSION_MAJOR * 10000 + ELEC_VERSION_MINOR * 100 + ELEC_VERSION_PATCH)

#include <math.h>
#include <stddef.h>

/* ELEC_API: every public declaration's storage (define it before
   including for, say, a shared library's visibility attribute). */
#ifndef ELEC_API
#ifdef ELEC_STATIC
#define ELEC_API static
#else
#define ELEC_API extern
#endif
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

/* ----------------------------------------- >>common atoms, lattices, shared math, bins */

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
   act on.  Pass NULL where the detail is not wanted.
   Results that finite inputs take past their type's range (charges of
   1e200 e; a box whose volume overflows) are ELEC_ERR_INVALID_ARG, not
   inf or NaN: the energy calls (Coulomb, Ewald, SPME and MSM, CPU and
   GPU: their energies, and the forces and potentials they return on the
   host), the maps and the potentials at points (DCS, MDH, cutoff, MSM,
   charge maps, ALPB, CPU and GPU) check what they wrote and fail, naming
   the method, the first value and its index ("DCS map: point 12 came out
   inf: ..."), with the outputs as the sums left them.  A cancelled or
   failed call keeps its own status.  What the GPU handles write to device
   memory is not checked: reading it back would cost what they exist to
   save. */
typedef struct elec_error {
    elec_status status;
    long line; /* 1-based line of an input file, 0 when not about a file */
    size_t atom[2]; /* the atoms the message names, as indices into the
                       caller's arrays (from 0), ELEC_NO_ATOM past those it
                       names: so that a tool can say which of its input's
                       records they are ("atoms 0 and 2 coincide") */
    char message[256];
} elec_error;
#define ELEC_NO_ATOM ((size_t)-1)

ELEC_API const char *elec_status_string(elec_status status);
/* Fills err (when not NULL) with status, line and a printf-formatted
   message, and returns status: how a tool built on elec reports its own
   failures in the same elec_error, in one line:
       return elec_fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for %d planes", n); */
ELEC_API elec_status elec_fail(elec_error *err, elec_status status, long line,
                               const char *format, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Progress of a long computation, as a fraction in [0, 1].  Return 0 to go
   on; anything else stops the computation with ELEC_ERR_CANCELLED.  One
   computation calls it once at a time, from the calling thread or (the
   exact Ewald sum) from one of its OpenMP threads; it may call elec again
   or change the OpenMP thread count. */
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

/* Checks the view: arrays present, strides 0 or at least one value, every
   coordinate, charge and radius finite, radii non-negative.  The methods
   call it before any work. */
ELEC_API elec_status elec_atoms_check(const elec_atoms *atoms,
                                      int need_radius, elec_error *err);

/* Axis-aligned bounding box of the atoms' positions (zeros for none, or a
   NULL view). */
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

/* Points of the lattice: 0 for NULL, a count not positive, or a product
   past size_t (dims of INT_MAX wrapped to a small number, which sized
   buffers too small). */
ELEC_API size_t elec_lattice_size(const elec_lattice *lattice);
ELEC_API elec_status elec_lattice_check(const elec_lattice *lattice,
                                        elec_error *err);
/* The most points a map may have unless the method's params say otherwise
   (max_points, in elec_dcs_params, elec_cutoff_params and elec_msm_params):
   2^28, a map of 1 GiB in float.  Map methods refuse a larger lattice before
   they allocate or compute anything; raise the cap in the params (elecmap:
   --max-points). */
#define ELEC_DEFAULT_MAX_LATTICE_POINTS ((size_t)1 << 28)
/* elec_lattice_check, and at most max_points points
   (0 = ELEC_DEFAULT_MAX_LATTICE_POINTS). */
ELEC_API elec_status elec_lattice_check_points(const elec_lattice *lattice,
                                               size_t max_points,
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

/* Cardinal B-splines (Essmann et al. 1995, eq. 4.1): M_2(x) = 1 - |x - 1|
   on [0, 2], M_n(x) = (x M_{n-1}(x) + (n - x) M_{n-1}(x - 1)) / (n - 1).
   For a point at grid coordinate u = k0 + t (k0 = floor(u)), the grid
   points k0 - j, j = 0 .. order-1, carry the weights w[j] = M_n(t + j) and
   their derivatives dw[j] = M_n'(t + j) = M_{n-1}(t + j) - M_{n-1}(t + j - 1)
   (d/du); the weights sum to 1.  Orders 2 to ELEC_MAX_SPLINE_ORDER.  One
   body, two precisions: the CPU reference in double, kernels in float.
   DIVIDE(x, m) is x / m in both (elec_cuda.cuh's gather passes a
   multiply by 1/m instead: elec__spme_gather_weights). */
#define ELEC_MAX_SPLINE_ORDER 8
#define ELEC__BSPLINE_WEIGHTS(type, DIVIDE)                                   \
    int m, j;                                                                 \
    w[0] = t;                                                                 \
    w[1] = (type)1 - t;                                                       \
    for (m = 2; m < order; m++) {                                             \
        /* M_m -> M_{m+1}: w[j] = ((t + j) w[j] + (m + 1 - t - j) w[j-1])/m */ \
        if (m == order - 1 && dw) {                                           \
            dw[m] = -w[m - 1];                                                \
            for (j = m - 1; j > 0; j--) dw[j] = w[j] - w[j - 1];              \
            dw[0] = w[0];                                                     \
        }                                                                     \
        w[m] = DIVIDE(((type)1 - t) * w[m - 1], m);                           \
        for (j = m - 1; j > 0; j--)                                           \
            w[j] = DIVIDE((t + (type)j) * w[j] +                              \
                              ((type)(m + 1 - j) - t) * w[j - 1],             \
                          m);                                                 \
        w[0] = DIVIDE(t * w[0], m);                                           \
    }                                                                         \
    if (order == 2 && dw) {                                                   \
        dw[0] = (type)1;                                                      \
        dw[1] = (type)-1;                                                     \
    }
#define ELEC__BSPLINE_DIVIDE(x, m) ((x) / (double)(m))
#define ELEC__BSPLINE_DIVIDE_FLOAT(x, m) ((x) / (float)(m))
ELEC_HD static inline void elec_bspline_weights(int order, double t, double *w,
                                                double *dw) {
    ELEC__BSPLINE_WEIGHTS(double, ELEC__BSPLINE_DIVIDE)
}
ELEC_HD static inline void elec_bspline_weights_float(int order, float t,
                                                      float *w, float *dw) {
    ELEC__BSPLINE_WEIGHTS(float, ELEC__BSPLINE_DIVIDE_FLOAT)
}

/* erfc in float, for the real-space pair functions: erfc(x) = exp(-x^2)
   t P(t) with t = 1/(1 + x/2), P of degree 8 interpolating
   erfc(x) exp(x^2) / t at Chebyshev nodes of t over x in [0, 6] (fitted
   for elec in long double; the form is Numerical Recipes' erfcc, the
   coefficients our own).  Returns t P(t); the caller multiplies by
   exp(-x^2), which the Ewald force needs anyway, so that erfc costs a
   reciprocal and eight FMAs.  Relative error, evaluated in float: 3e-7
   (2.5 ulp) plus erfc's own conditioning, 2 x^2 ulp of a rounded x
   (tests/test_ewald.c holds it to that against the double erfc). */
ELEC_HD static inline float elec_erfc_scaled_float(float t) {
    float p = -5.236785486e-02f;
    p = p * t + 2.511066794e-01f;
    p = p * t - 4.159404039e-01f;
    p = p * t + 1.937662810e-01f;
    p = p * t + 3.384862840e-02f;
    p = p * t + 1.758072227e-01f;
    p = p * t + 2.503185570e-01f;
    p = p * t + 2.813079059e-01f;
    p = p * t + 2.821529806e-01f;
    return t * p;
}

/* The softened 1/rho of MSM splitting: for rho < 1 the Taylor expansion of
   (1 + (rho^2 - 1))^(-1/2) about rho = 1 to order p, sum_k C(-1/2, k)
   (rho^2 - 1)^k, which joins 1/rho with p continuous derivatives
   (p = 2: gamma = 15/8 - 5/4 rho^2 + 3/8 rho^4). */
ELEC_HD static inline double elec_msm_gamma(double rho, int p) {
    double s = rho * rho - 1.0, term = 1.0, sum = 1.0, c = 1.0;
    int k;
    if (rho >= 1.0) return 1.0 / rho;
    for (k = 1; k <= p; k++) {
        c *= -(2.0 * k - 1.0) / (2.0 * k); /* C(-1/2, k) */
        term *= s;
        sum += c * term;
    }
    return sum;
}

/* d gamma / d rho. */
ELEC_HD static inline double elec_msm_gamma_derivative(double rho, int p) {
    double s = rho * rho - 1.0, term = 1.0, sum = 0.0, c = 1.0;
    int k;
    if (rho >= 1.0) return -1.0 / (rho * rho);
    for (k = 1; k <= p; k++) {
        c *= -(2.0 * k - 1.0) / (2.0 * k);
        sum += c * k * term * 2.0 * rho; /* d/drho (rho^2 - 1)^k */
        term *= s;
    }
    return sum;
}

/* Spreading a GPU computation over several devices: DCS maps by planes
   in turn, cutoff and MSM maps by slabs of z planes, DCS and MDH points
   and ALPB vertices by runs, one part a device, the devices side by side
   (a host thread each); a device listed twice runs its parts in turn (DCS
   maps refuse it: constant memory is one a device).  The other GPU calls
   take the first device.  README, Conventions: "Several GPUs". */
typedef struct elec_gpu_set {
    int count;          /* 0 = one GPU: the calling thread's current device;
                           ELEC_ALL_GPUS = every visible device             */
    const int *devices; /* device ordinals; NULL = 0 .. count-1             */
} elec_gpu_set;
#define ELEC_ALL_GPUS (-1)

/* What a choice of parameters is expected to give, filled by the resolve
   functions (ignored on input) from a-priori error estimates:
     Ewald and SPME real space: Kolafa and Perram 1992, per atom
         dF = 2 q_i sqrt(Q2 / (rc V)) exp(-alpha^2 rc^2), Q2 = sum q^2,
         which takes the pairs beyond the cutoff as random; the resolves
         also measure those pairs' forces and energy at a sample of atoms
         (every atom up to 512, fewer where their pairs are many) and take
         the larger, aiming again where
         the measured tail is the larger (ordered charges: a crystal, a
         double layer of ions, where it added coherently, up to 4 times
         Kolafa and Perram's force error and 73 times its energy error);
     exact Ewald's reciprocal truncation at |k| < kc (derived the same
     way): dF = q_i sqrt(8 Q2 / (V kc)) alpha exp(-kc^2 / (4 alpha^2));
     SPME's mesh: the Hockney-Eastwood error functional of B-spline SPME
     with analytic forces, tabulated (bench/spme_error_table.c), times how
     much the system's charge structure factor suppresses it (neutral
     molecules and ionic crystals carry less error than random charges);
     MSM: a fit to the measured table of the README (make msm-table); its
         periodic energy 4 sum q^2 F(h, a) / a, F that fit
         (elec__pmsm_energy_error).
   The relative errors divide by force_rms, the RMS force estimated from a
   shifted-force Coulomb sum over neighbours within 6 A (0.89 to 0.99 of
   the exact RMS force for random charges, water and a displaced rock-salt
   crystal), or a hundredth of the force between two RMS charges at the
   mean spacing where that is larger (forces that cancel, as in a perfect
   crystal, have no relative error to speak of).  Kolafa and Perram's
   estimates and the mesh's divide by the volume the charges crowd into
   (the box's where they fill it; elec__charge_stats_of says how). */
typedef struct elec_error_estimate {
    double force;            /* relative RMS force error: the tolerance's
                                measure (MSM: of potentials or forces)   */
    double force_real;       /* its real-space part (relative)           */
    double force_reciprocal; /* its reciprocal part: the mesh, or the
                                truncated k sum (relative)               */
    double energy;           /* expected absolute error of the total
                                energy, times scale: the RMS size for
                                random charges, not a bound (its real
                                space measured, as above; SPME's 2 for
                                odd orders given odd grids at alpha h
                                near 1, whose edge modes it leaves out;
                                exact Ewald's reciprocal part up to 15
                                times on a double layer of ions, and
                                periodic MSM's 4 to 35 times on ordered
                                charges: README); 0 for non-periodic
                                MSM, whose resolve reads no atoms (its
                                energy errs as the periodic one: README,
                                "MSM's energy")                          */
    double force_rms;        /* the RMS force divided by, times scale     */
    double float_floor;      /* relative RMS force error that rounding the
                                positions to float and float arithmetic
                                alone give (the GPU's floor for double
                                positions)                               */
    double float_arithmetic; /* the part of it float arithmetic gives
                                alone (the floor of the GPU handles,
                                whose positions come in float): more
                                where the forces are what is left of
                                nearly cancelling pair forces, as a
                                crystal's near its sites (periodic MSM:
                                0 where no tolerance was given)          */
} elec_error_estimate;

/* ------------------------------------------------ spatial bins, cutoffs */

/* Fixed-depth bins as a GPU wants them (seed 000): the region cut into
   cubic bins of edge `length`, each holding up to ELEC_BIN_DEPTH atoms as
   (x, y, z, q) floats relative to the bin grid's centre (half the largest
   coordinate of the corner, so half the rounding): 8 x 16 = 128 bytes
   a bin, read by a warp in one go.  Empty slots have q = 0 (and a far-away
   position, so they add nothing whatever the kernel).  Atoms of a bin that
   is already full go to an overflow list (indices into the atoms), summed
   separately; atoms outside the region are counted and left out (the
   caller makes the region cover everything that can contribute). */
#define ELEC_BIN_DEPTH 8
typedef struct elec_bins {
    int dims[3];
    double origin[3];  /* corner of bin (0, 0, 0) */
    double centre[3];  /* middle of the bin grid: records are relative to it */
    double length;     /* bin edge (A) */
    float *slots;      /* dims[0]*dims[1]*dims[2]*ELEC_BIN_DEPTH*4 floats */
    size_t *overflow;  /* atoms that did not fit */
    size_t overflow_count;
    size_t outside_count;
} elec_bins;

/* Bin edge for atoms at `density` (atoms/A^3) filling bins to `fill` of
   ELEC_BIN_DEPTH on average: cbrt(fill * depth / density).  VMD msmpot's
   defaults, 0.1 /A^3 and 0.75, give 3.91 A. */
ELEC_API double elec_bin_length(double density, double fill);
/* Bins over the box origin .. origin + extent (A). */
ELEC_API elec_status elec_bins_build(const elec_atoms *atoms,
                                     const double origin[3],
                                     const double extent[3], double length,
                                     elec_bins *out, elec_error *err);
ELEC_API void elec_bins_free(elec_bins *bins);
/* A cell list for CPU loops over neighbours (counting sort): the region
   origin .. origin + length cut into cells at least min_cell long per axis
   (at most ELEC_CELLS_MAX_PER_AXIS of them, longer past that), the atoms
   sorted by cell: cell c = i + n[0] (j + n[1] k) holds the atoms
   atom[start[c]] .. atom[start[c + 1] - 1].  Positions outside the region
   fall in the nearest cell, so a point just outside still finds its
   neighbours; with cells at least a cutoff long, every atom within the
   cutoff of a point lies in the 27 cells around the point's cell. */
#define ELEC_CELLS_MAX_PER_AXIS 256
typedef struct elec_cells {
    int n[3];                    /* cells per axis                          */
    double origin[3], length[3]; /* the region                              */
    size_t *start;               /* n[0] n[1] n[2] + 1 offsets into atom    */
    size_t *atom;                /* atom indices, sorted by cell            */
} elec_cells;

/* Cell list of `count` positions xyz (x0 y0 z0 x1 ...). */
ELEC_API elec_status elec_cells_build(const double *xyz, size_t count,
                                      const double origin[3], const double length[3],
                                      double min_cell, elec_cells *out, elec_error *err);
ELEC_API void elec_cells_free(elec_cells *cells);
/* The cell of position x, per axis (clamped into the region). */
ELEC_API void elec_cells_ijk(const elec_cells *cells, const double x[3], int ijk[3]);
/* Index of cell home + (dx, dy, dz), wrapped around the region when
   periodic; -1 when it falls off a non-periodic region. */
ELEC_API long elec_cells_neighbour(const elec_cells *cells, const int home[3], int dx,
                                   int dy, int dz, int periodic);

/* Bin offsets (di, dj, dk) whose bins can hold an atom within `cutoff` of
   some point of a block region of `region` A a side starting at a bin
   corner: the neighbourhood a GPU block streams (one table of offsets for
   every block, read through the read-only cache: elec_cuda.cuh says why
   not constant memory).  Writes up to capacity triples, returns how many
   there are; 0 for lengths that are not finite, a length that is not
   positive, and a reach over ELEC_BIN_MAX_REACH bins each way (a bin of
   1e-3 A ran on for hours). */
#define ELEC_BIN_MAX_REACH 1024
ELEC_API size_t elec_bin_neighbourhood(double length, double region,
                                       double cutoff, int *offsets,
                                       size_t capacity);

ELEC_API void *elec_malloc(size_t size);
ELEC_API void elec_free(void *ptr);

/* Where a call's time went: its stages in the order they ran, each named
   by the method (a static string) with its seconds, CUDA events timing the
   device's stages and the host clock the rest.  The GPU calls that take
   one fill it (elec_cuda_msm_map_timed, elec_cuda_spme_compute_timed,
   elec_cuda_chargemap_timed, elec_cuda_alpb_timed; the stage names are
   listed there); elec_stage_seconds reads a stage by name. */
#define ELEC_MAX_STAGES 16
typedef struct elec_stage_times {
    int count;                         /* stages filled                    */
    const char *name[ELEC_MAX_STAGES];
    double seconds[ELEC_MAX_STAGES];
    double total;                      /* the whole call (seconds)         */
} elec_stage_times;

/* Seconds of the stage called name, or -1 when times has none. */
ELEC_API double elec_stage_seconds(const elec_stage_times *times, const char *name);

/* ------------------------------------------------- >>io I/O: PQR, OpenDX, output files */

/* Every number in the text files the kit reads and writes (PQR, PDB,
   OpenDX, MSMS, points) has '.' for its decimal point, whatever
   LC_NUMERIC the host program has set: the files are the same in every
   locale. */

/* Per-atom labels from a PQR file, kept for selections and for the HCP
   hierarchy (atoms -> residues -> chains). */
typedef struct elec_atom_label {
    char name[8];         /* atom name, e.g. "CA"                          */
    char residue_name[8]; /* up to 4 characters in PQR ("NTER")            */
    char chain;           /* chain identifier; ' ' when the file has none  */
    char insertion_code;  /* ' ' when none                                 */
    char is_hetatm;       /* 1 for HETATM records                          */
    char after_ter;       /* 1 when a TER record came since the atom before */
    char after_end_of_complex; /* 1 when a "REMARK END-OF-COMPLEX" came since
                                  the atom before (NAB's convention): the
                                  HCP hierarchy starts a complex there      */
    int serial;           /* atom serial number as written (hybrid-36 read:
                             "A0000" is 100000); -1 where the writer put
                             asterisks or hexadecimal, its columns
                             overflowed                                   */
    int residue_number;   /* as written, hybrid-36 read ("A000" is 10000) */
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
    char cell_space_group[12]; /* CRYST1 columns 56-66 as written, blanks
                                  trimmed ("P 43 21 2"); "" where the
                                  record stops before them            */
    int cell_z;             /* CRYST1 columns 67-70 (Z); 0 where blank */
} elec_structure;

/* Reads a PQR file: ATOM/HETATM records as pdb2pqr writes them (PDB
   columns) or whitespace-separated, with or without chain identifiers,
   residue names of up to 4 characters, and a CRYST1 cell when present.
   Serial and residue numbers past their columns (over 99,999 atoms, 9,999
   residues) are read as hybrid-36, and a serial of asterisks or VMD's
   hexadecimal as -1; a residue number of asterisks is refused, as it hides
   where residues end.
   One structure: past an END or ENDMDL record nothing is read, and an
   atom there (files run together, a trajectory's next frame or model)
   fails the read, naming both lines, as merging them would be a wrong
   structure.  Any malformed record fails the whole read with
   ELEC_ERR_PARSE, the line number and the field; nothing partial is
   returned.  A UTF-8 byte-order mark is read past; an atom record
   indented from column 1, and lines ended by CR alone, are refused (each
   would be read as no atom). */
ELEC_API elec_status elec_read_pqr(const char *path, elec_structure *out,
                                   elec_error *err);
/* The same from text in memory (length bytes; need not end in '\0'). */
ELEC_API elec_status elec_parse_pqr(const char *text, size_t length,
                                    elec_structure *out, elec_error *err);
ELEC_API void elec_structure_free(elec_structure *structure);
/* A view of the structure's atoms for the methods (no copy). */
ELEC_API elec_atoms elec_structure_atoms(const elec_structure *structure);
/* The periodic box of an orthorhombic CRYST1 cell; ELEC_ERR_UNSUPPORTED
   when the file had none, its angles are not 90 degrees, it is the PDB's
   unit cell of 1 x 1 x 1 A, which marks a structure not determined by
   crystallography (NMR, models), or its space group is not P 1: a
   crystal's file (and pdb2pqr's output of it) holds the asymmetric unit,
   whose symmetry mates fill the rest of the cell, so the atoms repeated
   by the cell's lengths alone are no crystal at all.  ELEC_ERR_INVALID_ARG
   for lengths no box takes (not positive or finite, or a volume past
   double's range), as the methods would refuse them. */
ELEC_API elec_status elec_structure_box(const elec_structure *structure,
                                        elec_box *box, elec_error *err);

/* Writes a map as OpenDX, the dialect APBS writes and VMD, PyMOL and
   Chimera read (gridpositions, gridconnections, array; three values a
   line; z fastest in the file, so the writer transposes).  comment may be
   NULL.  A path ending in ".gz" is written gzip-compressed (">>mrc"). */
ELEC_API elec_status elec_write_dx(const char *path,
                                   const elec_lattice *lattice,
                                   const float *map, const char *comment,
                                   elec_error *err);
/* Reads an OpenDX map into a new array (x fastest), allocated with
   ELEC_MALLOC: release it with elec_free.  The header's item count must
   match its counts and fit in the bytes that follow it, or the file is
   refused before the map is allocated.  A gzip-compressed file is
   inflated first (">>mrc"). */
ELEC_API elec_status elec_read_dx(const char *path, elec_lattice *lattice,
                                  float **map, elec_error *err);
/* The same from text in memory (length bytes; need not end in '\0'). */
ELEC_API elec_status elec_parse_dx(const char *text, size_t length,
                                   elec_lattice *lattice, float **map,
                                   elec_error *err);

/* The largest file elec_read_pqr, elec_read_dx and elec_read_mrc read:
   1 GiB and 1 MiB (a PQR file of about 13 million atoms, an OpenDX map of
   about 7 x 10^7 values, an MRC map of ELEC_DEFAULT_MAX_LATTICE_POINTS
   floats with its header: the largest MRC map elec writes reads back; an
   OpenDX one that large is several GiB of text).  A
   larger regular file is refused before it is read, a stream (a pipe, a
   device) once it has given this much; a text file is refused at the
   first byte that no text file has (NUL and other control characters but
   tab, CR and LF), so that /dev/zero or a binary file is refused at once.
   Define it before including elec.h to change it, or read the file
   yourself and call elec_parse_pqr / elec_parse_dx / elec_parse_mrc. */
#ifndef ELEC_MAX_INPUT_BYTES
#define ELEC_MAX_INPUT_BYTES (((size_t)1 << 30) + ((size_t)1 << 20))
#endif

/* Reads a whole text file as elec_read_pqr and elec_read_dx do (the size
   limit above, refusal of binary bytes, gzip inflated) into a new buffer
   ending in '\0', allocated with ELEC_MALLOC: release it with elec_free.
   what names the file's kind in a message ("a PQR").  For a tool that
   keeps the text (its REMARK lines) as well as parsing it. */
ELEC_API elec_status elec_read_text(const char *path, const char *what,
                                    char **text, size_t *length,
                                    elec_error *err);

/* Output files, written whole or not at all, for elec_write_dx and any
   writer of another format:

       elec_output *out;
       if (elec_output_open(path, &out, err) != ELEC_OK) return ...;
       elec_output_printf(out, "%d\n", n);        buffered; a failure is
       elec_output_write(out, bytes, size);       kept for the commit
       return elec_output_commit(out, err);       or elec_output_abort(out)

   elec_output_open creates a temporary file beside path (in the same
   directory, so that the rename stays on one file system; its name starts
   with "." and ends in ".tmp").  elec_output_commit writes what is
   buffered, fsyncs the file and renames it over path; elec_output_abort
   removes it.  Either ends the output and frees it.  Until the rename the
   old file at path is untouched, and after any failure (a full disk, a
   file-size limit, an error from the caller's writer) it is still there,
   whole, or there is none: the library only ever removes the temporary
   file it created.  A path that exists and is not a regular file (a
   device such as /dev/null, a pipe) is written straight through, never
   replaced and never removed; so is a descriptor's name (/dev/stdout,
   /dev/stderr, /dev/fd/N, /proc/self/fd/N, or any name of what stdout or
   stderr holds open), written through a copy of that descriptor, so that
   the output lands where the caller's next writes would (after what it
   wrote, in append mode where it is; flush stdio's buffers first), never
   truncated; a descriptor open only for reading (/dev/stdin) is refused.
   A symbolic link at path is replaced by the new file (the file it named
   is left as it was), and an existing file's permission bits carry over
   to the new one. */
typedef struct elec_output elec_output;

ELEC_API elec_status elec_output_open(const char *path, elec_output **out,
                                      elec_error *err);
ELEC_API void elec_output_write(elec_output *out, const void *data,
                                size_t size);
ELEC_API void elec_output_printf(elec_output *out, const char *format, ...)
#if defined(__GNUC__) || defined(__clang__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
ELEC_API elec_status elec_output_commit(elec_output *out, elec_error *err);
ELEC_API void elec_output_abort(elec_output *out); /* out may be NULL */

/* What a tool checks before a long computation, so that it does not fail
   at the end: that path can be written (for a new or regular file, a
   temporary file is made beside it and removed again; for a descriptor's
   name such as /dev/stdout, the descriptor must be open for writing;
   otherwise the path itself must be writable; nothing at path is opened
   or changed) and, when input is not NULL, that path is not
   the input file itself (the same device and inode, however named). */
ELEC_API elec_status elec_output_check(const char *path, const char *input,
                                       elec_error *err);

/* ------------------------------------------ >>mrc MRC/CCP4 and gzipped OpenDX maps */

/* MRC2014 maps (Cheng et al. 2015, J. Struct. Biol. 192, 146; the
   specification at ccpem.ac.uk/mrc_format/mrc2014.php), the format of
   CCP4 and EMDB that ChimeraX, PyMOL, VMD and Coot read: a 1024-byte
   header of 4-byte words, then the values, x fastest.  elec writes mode 2
   (32-bit floats), little endian (machine stamp 0x44 0x44 0 0), one volume
   (ISPG 1), NX NY NZ = MX MY MZ = the lattice's counts and cell
   CELLA = counts x spacing (the spacing is CELLA / MX), angles 90, axes
   in order (MAPC MAPR MAPS = 1 2 3), the origin in A in words 50-52 with
   NXSTART = NYSTART = NZSTART = 0 (so that viewers reading either field
   place the map alike), DMIN DMAX DMEAN and RMS of the values, "MAP ",
   NVERSION 20140, and comment's lines as up to 10 labels of 80 characters
   (longer lines continue on the next label; what does not fit is left
   out).  The header holds origin and cell as floats: a lattice comes back
   within float rounding (relative 6e-8) of its coordinates.  A path
   ending in ".gz" is written gzip-compressed.  Values that are not finite
   are refused, as by elec_write_dx, and so is a lattice whose origin or
   cell does not stand in those floats (past FLT_MAX, a cell under
   FLT_MIN). */
ELEC_API elec_status elec_write_mrc(const char *path, const elec_lattice *lattice,
                                    const float *map, const char *comment,
                                    elec_error *err);
/* Reads a mode 2 MRC/CCP4 map (either byte order; any axis order MAPC
   MAPR MAPS; an extended header skipped) into a new array, x fastest,
   allocated with ELEC_MALLOC: release it with elec_free.  The origin is
   words 50-52 where the file has its "MAP " stamp and they are not all
   zero, else NXSTART NYSTART NZSTART times the spacing (CCP4's
   convention; ChimeraX reads both so).  Refused with a named error:
   another mode (ELEC_ERR_UNSUPPORTED: 8- and 16-bit integers, float16,
   complex), cell angles other than 90 (a skewed lattice), a header whose
   counts and extended header need more or fewer bytes than the file has
   (checked before the map is allocated), no cell to give the spacing, a
   value that is not finite.  A file larger than ELEC_MAX_INPUT_BYTES is
   refused before it is read, and a stream as soon as its header is; a
   ".gz" name is inflated first. */
ELEC_API elec_status elec_read_mrc(const char *path, elec_lattice *lattice,
                                   float **map, elec_error *err);
/* The same from bytes in memory. */
ELEC_API elec_status elec_parse_mrc(const void *data, size_t length,
                                    elec_lattice *lattice, float **map,
                                    elec_error *err);

/* gzip (RFC 1952) through zlib, where the build has it: define
   ELEC_WITH_ZLIB and link -lz (the Makefile does where zlib is installed,
   as it does FFTW).  Without it, writing a ".gz" file or reading a
   gzip-compressed one is refused with ELEC_ERR_UNSUPPORTED, saying so.
   Readers inflate what they read: elec_read_dx and elec_read_pqr a file
   that starts with gzip's magic bytes, whatever its name (APBS writes
   .dx.gz), elec_read_mrc one whose name ends in ".gz"; the inflated bytes
   are held to ELEC_MAX_INPUT_BYTES and to the format's checks, so that a
   gzip bomb stops at the limit or its first bad byte.  Writers compress
   through an output opened with elec_output_open_gzip: what is written to
   it is deflated on its way to the file, which is otherwise written as
   elec_output_open writes it (whole or not at all). */
ELEC_API elec_status elec_output_open_gzip(const char *path, elec_output **out,
                                           elec_error *err);

/* A map file's format by its name (ASCII case ignored): ".mrc", ".map",
   ".ccp4" are MRC; anything else OpenDX (".dx", and /dev/stdout or a name
   without an extension, as elec_write_dx always wrote them).  A trailing
   ".gz" sets *gzip (may be NULL) and names the format before it:
   ".dx.gz", ".mrc.gz". */
typedef enum elec_map_format {
    ELEC_MAP_DX = 0, /* OpenDX text (elec_write_dx, elec_read_dx) */
    ELEC_MAP_MRC     /* MRC2014 (elec_write_mrc, elec_read_mrc)  */
} elec_map_format;
ELEC_API elec_map_format elec_map_format_of(const char *path, int *gzip);
/* "OpenDX", "MRC2014", with ", gzip-compressed" where the name ends in
   ".gz": for a tool's summary. */
ELEC_API const char *elec_map_format_name(const char *path);
/* Writes or reads a map in the format its name gives (above): the one
   call a tool needs to offer every format. */
ELEC_API elec_status elec_write_map(const char *path, const elec_lattice *lattice,
                                    const float *map, const char *comment,
                                    elec_error *err);
ELEC_API elec_status elec_read_map(const char *path, elec_lattice *lattice,
                                   float **map, elec_error *err);

/* ------------------------------------------------- >>dcs DCS: direct Coulomb summation */

/* DCS variants: the GPU optimisation ladder of seeds 000/003, each step a
   short kernel beside its neighbour (elec_cuda.cuh).  The CPU ignores it. */
typedef enum elec_dcs_variant {
    ELEC_DCS_FASTEST = 0,       /* default: the fastest kernel below           */
    ELEC_DCS_SIMPLE,            /* one point per thread, atoms in global memory */
    ELEC_DCS_CONST,             /* atoms in constant memory, dz^2 precomputed   */
    ELEC_DCS_UNROLL4,           /* unroll-and-jam x4: dy^2+dz^2 reused 4 times  */
    ELEC_DCS_UNROLL8_COALESCED, /* x8, points a warp apart: coalesced stores    */
    ELEC_DCS_VOLUME,            /* x8, whole volume per launch, atoms through
                                   shared-memory tiles                          */
    ELEC_DCS_HYBRID_RSQRT,      /* x32, 4 in 32 rsqrt on the FMA pipe: past the
                                   SFU's rsqrt rate (the default)               */
    ELEC_DCS_VARIANT_COUNT
} elec_dcs_variant;

ELEC_API const char *elec_dcs_variant_name(elec_dcs_variant variant);

/* Direct Coulomb summation: phi(p) = scale * sum_j q_j / |p - r_j|. */
typedef struct elec_dcs_params {
    double scale;             /* 0 = 1: e/A.  ELEC_COULOMB: kcal/(mol e)     */
    elec_dcs_variant variant; /* GPU kernel; 0 = ELEC_DCS_FASTEST            */
    elec_gpu_set gpus;        /* GPU maps: planes in turn; points: runs   */
    elec_progress_fn progress;
    void *progress_user;
    size_t max_points;        /* maps: 0 = ELEC_DEFAULT_MAX_LATTICE_POINTS   */
} elec_dcs_params;

/* Every method's params take this shape: elec_X_params_resolve fills each
   zero field of in (NULL: all of them) with its documented default, checks
   the result (ELEC_ERR_INVALID_ARG names the field) and writes it to out
   (which may be in).  Each call resolves its params once, so tests and
   tools see the very parameters a call computes with.  DCS: scale 1,
   variant ELEC_DCS_HYBRID_RSQRT; the GPU set is checked. */
ELEC_API elec_status elec_dcs_params_resolve(const elec_dcs_params *in,
                                             elec_dcs_params *out, elec_error *err);

/* --------------------------------------------------- >>mdh MDH: multiple Debye-Hueckel */

/* Screened Coulomb kernel of multiple Debye-Hueckel, seed 000 eq. 2: an
   atom of charge q and radius sigma in a solvent of inverse Debye length
   kappa contributes q * exp(-kappa (r - sigma)) / ((1 + kappa sigma) r) at
   distance r.  kappa = 0 gives the plain Coulomb q/r, also where r is
   infinite (an atom far past double's range of r^2: exp(-0 inf) was NaN,
   an audit). */
ELEC_HD static inline double elec_mdh_term(double q, double sigma,
                                           double kappa, double r) {
    const double screen = kappa != 0.0 ? exp(-kappa * (r - sigma)) : 1.0;
    return q * screen / ((1.0 + kappa * sigma) * r);
}

/* Multiple Debye-Hueckel: phi(p) = scale * sum_j elec_mdh_term(q_j, sigma_j,
   kappa, |p - r_j|), sigma_j the atom's radius.  The kernel has no 1/eps:
   scale is seed 000's constant C, and the potential in the solvent
   (APBS's mdh boundary condition) takes scale = the units' scale /
   dielectric (ELEC_COULOMB / 78.54 in kcal/(mol e)), as elecmap does;
   dielectric below sets kappa from the ionic strength and nothing else. */
typedef struct elec_mdh_params {
    double scale;  /* 0 = 1: e/A */
    double kappa;  /* inverse Debye length (1/A); 0 = no screening, or ...  */
    double ionic_strength; /* ... from this (mol/L) if kappa is 0: see
                              elec_kappa_from_ionic_strength                 */
    double temperature;    /* K, for kappa from ionic strength; 0 = 298.15  */
    double dielectric;     /* solvent relative permittivity; 0 = 78.54      */
    elec_gpu_set gpus;     /* GPU points: a run of them a device            */
    elec_progress_fn progress;
    void *progress_user;
} elec_mdh_params;

/* Inverse Debye length kappa (1/A) of a 1:1 electrolyte of ionic strength I
   (mol/L) in a solvent of relative permittivity eps at temperature T (K):
   kappa^2 = 2 N_A e^2 I 1000 / (eps eps0 k T).  0.1 M, 78.54, 298.15 K
   gives 0.1039 /A (a Debye length of 9.6 A). */
ELEC_API double elec_kappa_from_ionic_strength(double ionic_strength,
                                               double dielectric,
                                               double temperature);

/* Defaults and checks (the shape of elec_dcs_params_resolve): scale 1,
   temperature 298.15 K, dielectric 78.54, and kappa from the ionic
   strength where kappa is 0. */
ELEC_API elec_status elec_mdh_params_resolve(const elec_mdh_params *in,
                                             elec_mdh_params *out, elec_error *err);

/* ------------------- >>cutoff cutoff maps: smoothed short-range sums over spatial bins */

/* Smoothed short-range potentials for cutoff maps: q S(r) for r < a. */
typedef enum elec_cutoff_kind {
    ELEC_CUTOFF_MSM = 0, /* default: MSM's short range 1/r - gamma(r/a)/a */
    ELEC_CUTOFF_SHIFTED  /* shifted Coulomb (1 - r^2/a^2)^2 / r           */
} elec_cutoff_kind;

typedef struct elec_cutoff_params {
    double scale;          /* 0 = 1: e/A                                   */
    double cutoff;         /* a (A); 0 = 12                                */
    elec_cutoff_kind kind;
    int splitting;         /* ELEC_CUTOFF_MSM's gamma order; 0 = 2 (C2)    */
    double bin_length;     /* GPU bins (A); 0 = elec_bin_length(0.1, 0.75)  */
    elec_gpu_set gpus;     /* GPU maps: a slab of z planes a device         */
    elec_progress_fn progress;
    void *progress_user;
    size_t max_points;     /* 0 = ELEC_DEFAULT_MAX_LATTICE_POINTS          */
} elec_cutoff_params;

/* Defaults and checks (the shape of elec_dcs_params_resolve): scale 1,
   cutoff 12 A, splitting 2, bin length elec_bin_length(0.1, 0.75). */
ELEC_API elec_status elec_cutoff_params_resolve(const elec_cutoff_params *in,
                                                elec_cutoff_params *out,
                                                elec_error *err);

/* The smoothed short-range potential of a unit charge at distance r
   (r > 0): 0 from the cutoff a on. */
ELEC_HD static inline double elec_cutoff_term(double r, double a,
                                              elec_cutoff_kind kind,
                                              int splitting) {
    double s;
    if (r >= a) return 0.0;
    if (kind == ELEC_CUTOFF_SHIFTED) {
        s = 1.0 - (r * r) / (a * a);
        return s * s / r;
    }
    return 1.0 / r - elec_msm_gamma(r / a, splitting) / a;
}

/* ----------------------------------------------------- >>msm MSM: multilevel summation */

/* Multilevel summation (Hardy, Stone and Schulten 2009; Skeel et al. 2002):
   1/r = [1/r - g_0(r)] + [g_0(r) - g_1(r)] + ... + g_{L-1}(r), with
   g_l(r) = gamma(r / (2^l a)) / (2^l a) smooth and gamma(rho) = 1/rho for
   rho >= 1.  The first bracket (short range, zero beyond the cutoff a) is
   summed exactly over pairs; bracket l, zero beyond 2^(l+1) a, is summed
   between the charges of a lattice of spacing 2^l h, interpolated from and
   to the atoms (anterpolation, restriction, lattice cutoff, prolongation,
   interpolation); the last smooth part is summed directly on the coarsest
   lattice.  Non-periodic, but for elec_cpu_msm_periodic_energy (elec_cpu.h). */
typedef enum elec_msm_interpolation {
    ELEC_MSM_CUBIC = 0, /* default: Skeel's C1 cubic (order 4), exact for
                           quadratics                                      */
    ELEC_MSM_QUINTIC,   /* C1 quintic (order 6), exact for quartics         */
    ELEC_MSM_SEPTIC,    /* C1 septic (order 8), exact for sextics           */
    ELEC_MSM_NONIC      /* C1 nonic (order 10), exact for octics            */
} elec_msm_interpolation;

typedef struct elec_msm_params {
    double scale;   /* 0 = 1: e/A (maps) or e^2/A (energies)                */
    double tolerance; /* relative RMS error of potentials (maps, points) and
                       forces against the exact sum; 0 = no target: the
                       defaults below (msmpot's, ~1e-3).  Set, it chooses
                       a, h and the interpolation (those left at 0; the
                       interpolation's zero, cubic, reads as "choose") as
                       the cheapest whose fitted error (elec.h,
                       elec__msm_error_model: the README's table) is at
                       most a third of it; the periodic hierarchy by its
                       forces' own table, at most a quarter (less for
                       under 128 atoms or 0.01 /A^3, or forces small for
                       their charges), on the power-of-two lattices it
                       takes and the box's density, reading the atoms
                       (elec_msm_periodic_params_resolve).
                       Refused where the table does not reach (below
                       ELEC_MSM_TOLERANCE_FLOOR) and, on the GPU, below
                       ELEC_MSM_GPU_TOLERANCE_FLOOR.  The tables were
                       measured on random charges, and the non-periodic
                       choice reads nothing of the atoms: maps and
                       potentials keep it on every system an audit tried
                       (crystals, droplets, slabs, a few atoms) at points
                       among and around the atoms, but not at points
                       far outside them, where the potential itself is
                       small: the absolute error stays as among the
                       atoms, the relative one grows as the potential
                       falls (measured 4.3 to 59 times the tolerance,
                       60 and 300 neutral ions 25 to 106 A out, more at
                       tighter tolerances; 2.9 with a net charge): far
                       points cost DCS little, exactly.  Forces of few,
                       dilute or nearly cancelling charges erred up to
                       28 times the tolerance, so the energy calls
                       (elec_cpu_msm_energy, elec_cuda_msm_energy) check
                       their forces on a sample of up to 64 atoms
                       against the direct sum and choose again, aiming
                       lower, where they miss (up to five times), or
                       refuse by name.  With
                       both a and h given the tolerance is not enforced
                       (estimate.force says what the table expects); an
                       h outside the table's 1 to 2.5 A is an
                       extrapolation (measured up to 3.7 times its
                       estimate at 0.5 A)                               */
    double cutoff;  /* a (A); 0 = 12, or chosen from the tolerance          */
    double spacing; /* h, the finest lattice spacing (A); 0 = 2, or chosen  */
    elec_msm_interpolation interpolation;
    int splitting;  /* continuity of gamma: Taylor order 1..6; 0 = C2 with
                       the cubic, C3 quintic, C4 septic, C5 nonic.  With a
                       tolerance, a splitting given fixes the interpolation
                       it pairs with (the table's only pairs); C1, C6 or
                       a non-cubic interpolation of another pair are
                       refused there                                      */
    int max_top_points; /* coarsest lattice summed directly once it has at
                           most this many points; 0 = 4096                 */
    elec_gpu_set gpus;  /* GPU maps: slabs; energies: the first device     */
    elec_progress_fn progress;
    void *progress_user;
    elec_error_estimate estimate; /* out: estimate.force is the fitted
                                     relative error of the choice (the
                                     periodic one's: times how much more
                                     these atoms may err, few or dilute
                                     or their forces small for their
                                     charges, elec__pmsm_aim)            */
    size_t max_points;  /* maps: 0 = ELEC_DEFAULT_MAX_LATTICE_POINTS       */
    /* Periodic energies (elec_cpu_msm_periodic_energy, the GPU's periodic
       handle): atom index pairs (i, j), flattened, whose Coulomb term is
       left out at its nearest image (bonded neighbours in a molecule), as
       elec_ewald_params's are; other calls refuse them. */
    const size_t *excluded_pairs;
    size_t excluded_pair_count;
} elec_msm_params;

/* The measured table spans a in [8, 16] A, h in [1, 2.5] A: three times
   the fit's best there (nonic, a 16, h 1: 5.3e-8) is the tightest
   tolerance it can promise.  The GPU computes in float: its lattice sums
   agree with the CPU's double ones to ~1e-6 (tests/test_gpu_msm.cu), so
   tolerances under ten times that are refused there. */
#define ELEC_MSM_TOLERANCE_FLOOR 2e-7
#define ELEC_MSM_GPU_TOLERANCE_FLOOR 1e-5
/* The most levels a hierarchy has, and the most points its finest lattice
   may have (2^28): atoms and points spread wider are refused with the
   reason (ELEC_ERR_UNSUPPORTED). */
#define ELEC_MSM_MAX_LEVELS 32
#define ELEC_MSM_MAX_POINTS 268435456.0

/* Defaults and checks (the shape of elec_dcs_params_resolve): with a
   tolerance, cutoff, spacing and interpolation chosen as its comment says,
   for a cost model that counts points_per_atom, the points the potential
   is wanted at per atom (maps and points calls pass their count over the
   atoms'; 0 = 1, energies and forces), and estimate.force filled; else
   cutoff 12 A, spacing 2 A.  splitting from the interpolation, at most
   4096 points on the top lattice.  ELEC_ERR_UNSUPPORTED for a tolerance
   the measured table does not reach within what was fixed, unless both
   cutoff and spacing were (then the estimate says what it expects). */
ELEC_API elec_status elec_msm_params_resolve(const elec_msm_params *in,
                                             double points_per_atom,
                                             elec_msm_params *out, elec_error *err);

/* The same for the periodic hierarchy (elec_cpu_msm_periodic_energy, the
   GPU's periodic handle), which resolves its params so: its lattices have a
   power of two points along each edge, the edge over the least that makes
   the spacing no coarser than h, so h becomes up to twice as fine.  With a
   tolerance, each candidate is costed on the lattices it would take and
   the box's density (the direct work: every level's stencil sum, the
   short range, the weights) and its error estimated at the spacing they
   take by the periodic forces' own table (make msm-table), at most a
   quarter of the tolerance (less for few or dilute atoms, or for forces
   small for their charges, as a crystal's near its sites:
   elec__pmsm_aim); lattices too narrow for the interpolation are made
   finer (the GPU needs its width of points an edge).  With a tolerance
   the atoms' positions and charges are read (the forces' probe of the
   SPME estimates); the excluded pairs in `in` are checked whenever
   given.  out->spacing is
   the lattice's spacing (the caller's where fixed), out->estimate.force
   the table's error times how much more these atoms err
   (elec__pmsm_arrangement); ELEC_ERR_UNSUPPORTED, naming the reason,
   where nothing meets it, and for one atom alone unless both cutoff and
   spacing are given (its lattice self-force, which no choice bounds). */
ELEC_API elec_status elec_msm_periodic_params_resolve(const elec_msm_params *in,
                                                      const elec_box *box,
                                                      const elec_atoms *atoms,
                                                      elec_msm_params *out, elec_error *err);

/* The lattice hierarchy stage by stage, for tests and teaching
   (elec_cpu_msm_lattices in double, elec_cuda_msm_lattices on the GPU in
   float): the hierarchy of elec_cpu_msm_energy for the atoms, relative to
   a reference point, after each stage, unscaled.  Level l (0 the finest,
   levels - 1 the top) has points lo .. lo + n - 1 per axis, point m at
   m h 2^l from the reference, x fastest; its values are at [first[l],
   first[l + 1]) of q, cutoff and e.  Free with elec_msm_lattices_free. */
typedef struct elec_msm_lattices {
    int levels;
    long lo[ELEC_MSM_MAX_LEVELS][3];
    int n[ELEC_MSM_MAX_LEVELS][3];
    size_t first[ELEC_MSM_MAX_LEVELS + 1];
    double *q;       /* charges after anterpolation (level 0) and restriction */
    double *cutoff;  /* each level's lattice-cutoff sum alone (stage 3); at the
                        top its direct sum                                    */
    double *e;       /* potentials after prolongation (stage 4; e_0 is what
                        interpolation reads)                                  */
    size_t atom_count;
    double *phi;     /* per atom: the potential interpolated from e_0 (stage 5) */
    double *grad;    /* per atom, 3: its gradient                               */
    void *block;     /* the one allocation the arrays live in                   */
} elec_msm_lattices;
ELEC_API void elec_msm_lattices_free(elec_msm_lattices *lattices);

/* Interpolating basis functions of MSM: the C1 piecewise polynomials of
   Hardy's thesis (2006) of odd degree 2s - 1, nonzero for |t| < s, with
   Phi(0) = 1, Phi(k) = 0 at other integers and sum_k k^d Phi(t - k) = t^d
   for d <= 2s - 2.  On the unit interval between lattice points 0 and 1
   the interpolant is the polynomial that takes the data at points
   -(s-2) .. s-1 and, at 0 and 1, the derivative of the degree 2s - 2
   Lagrange polynomial through the 2s - 1 points centred there: s = 2 is
   Skeel's C1 cubic (seed 004 eq. 2, Catmull-Rom), s = 3 the C1 quintic of
   NAMD and VMD, s = 4 and 5 the orders 8 and 10 of NAMD and LAMMPS.

   elec__msm_pieces gives that polynomial's weights: w_j(t) for point
   j - (s - 1), j = 0 .. 2s - 1, t in [0, 1], as integer coefficients of
   t^0 .. t^(2s-1) over a common denominator (derived in exact rational
   arithmetic; tests/test_msm.c checks the properties above). */
static inline const double *elec__msm_pieces(int interpolation,
                                             double *denominator) {
    static const double cubic[] = {
        0, -1, 2, -1,  2, 0, -5, 3,  0, 1, 4, -3,  0, 0, -1, 1};
    static const double quintic[] = {
        0, 2, -3, -1, 3, -1,       0, -16, 26, -1, -14, 5,
        24, 0, -50, 10, 26, -10,   0, 16, 36, -14, -24, 10,
        0, -2, -11, 7, 11, -5,     0, 0, 2, -1, -2, 1};
    static const double septic[] = {
        0, -12, 16, 11, -20, 2, 4, -1,
        0, 108, -138, -92, 165, -23, -27, 7,
        0, -540, 792, 111, -510, 90, 78, -21,
        720, 0, -1400, 140, 805, -175, -125, 35,
        0, 540, 960, -335, -720, 190, 120, -35,
        0, -108, -306, 204, 375, -117, -69, 21,
        0, 12, 88, -43, -110, 38, 22, -7,
        0, 0, -12, 4, 15, -5, -3, 1};
    static const double nonic[] = {
        0, 144, -180, -160, 245, 7, -70, 10, 5, -1,
        0, -1536, 1808, 1692, -2436, -63, 672, -102, -44, 9,
        0, 8064, -9216, -8168, 11788, -308, -2744, 448, 172, -36,
        0, -32256, 44352, 10640, -30128, 2492, 6328, -1120, -392, 84,
        40320, 0, -75544, 4536, 43806, -6174, -9156, 1764, 574, -126,
        0, 32256, 50400, -18200, -38360, 7798, 8680, -1820, -560, 126,
        0, -8064, -16128, 12488, 21196, -5572, -5432, 1232, 364, -84,
        0, 1536, 5696, -3312, -7728, 2268, 2184, -528, -152, 36,
        0, -144, -1332, 520, 1813, -497, -518, 130, 37, -9,
        0, 0, 144, -36, -196, 49, 56, -14, -4, 1};
    switch (interpolation) {
    case 1: *denominator = 24.0; return quintic;
    case 2: *denominator = 720.0; return septic;
    case 3: *denominator = 40320.0; return nonic;
    default: *denominator = 2.0; return cubic;
    }
}

/* Points on each side of a position: s = 2 (cubic) .. 5 (nonic). */
static inline int elec_msm_support(int interpolation) {
    return interpolation + 2;
}

/* Weight (and, where dweight is not NULL, d/dt) of point j - (s - 1) for
   a position t in [0, 1] past point 0: Horner on the piece's row. */
static inline double elec__msm_piece(int interpolation, int j, double t,
                                     double *dweight) {
    double denominator, value = 0.0, slope = 0.0;
    const double *row = elec__msm_pieces(interpolation, &denominator);
    const int width = 2 * elec_msm_support(interpolation);
    int power;
    row += j * width;
    for (power = width - 1; power >= 0; power--) {
        slope = slope * t + value;
        value = value * t + row[power];
    }
    if (dweight) *dweight = slope / denominator;
    return value / denominator;
}

/* The 2s weights along one axis for a position t in lattice units: point
   first + k gets w[k] = Phi(t - first - k) (dw[k] = Phi', where dw is not
   NULL).  Returns first = floor(t) - (s - 1). */
static inline long elec_msm_axis_weights(double t, int interpolation,
                                         double *w, double *dw) {
    const int s = elec_msm_support(interpolation);
    const double cell = floor(t);
    int k;
    for (k = 0; k < 2 * s; k++)
        w[k] = elec__msm_piece(interpolation, k, t - cell, dw ? dw + k : NULL);
    return (long)cell - (s - 1);
}

/* The same weights as the GPU computes them (its MSM stencils and charge
   maps): each piece's polynomial coefficients rounded to float, summed by
   Horner's rule in float with fused multiply-adds, at u = t - floor(t).
   For tests that bound the float path's error against the double weights
   above.  Returns first as elec_msm_axis_weights does. */
static inline long elec_msm_axis_weights_float(float t, int interpolation, float *w) {
    double denominator;
    const double *rows = elec__msm_pieces(interpolation, &denominator);
    const int s = elec_msm_support(interpolation);
    const float cell = floorf(t), u = t - cell;
    int j, p;
    for (j = 0; j < 2 * s; j++) {
        float v = (float)(rows[j * 2 * s + 2 * s - 1] / denominator);
        for (p = 2 * s - 2; p >= 0; p--)
            v = fmaf(v, u, (float)(rows[j * 2 * s + p] / denominator));
        w[j] = v;
    }
    return (long)cell - (s - 1);
}

/* Phi(t) itself (and d Phi / dt): the piece of the interval holding |t|. */
static inline double elec_msm_basis(double t, int interpolation) {
    const double a = t < 0 ? -t : t;
    const int s = elec_msm_support(interpolation);
    const double cell = floor(a);
    if (cell >= s) return 0.0;
    /* t - j = a on [cell, cell + 1] for the point j = -cell */
    return elec__msm_piece(interpolation, s - 1 - (int)cell, a - cell, NULL);
}

static inline double elec_msm_basis_derivative(double t, int interpolation) {
    const double a = t < 0 ? -t : t;
    const int s = elec_msm_support(interpolation);
    const double cell = floor(a);
    double slope;
    if (cell >= s) return 0.0;
    elec__msm_piece(interpolation, s - 1 - (int)cell, a - cell, &slope);
    return t < 0 ? -slope : slope;
}

/* ----------------------------------------------- >>ewald Ewald: the exact periodic sum */

/* Exact Ewald summation of a periodic orthorhombic box (Essmann et al.
   1995, eqs. 2.1-2.5): the double-precision truth of every periodic method.
   E = E_real + E_reciprocal + E_self + E_excluded + E_background, with
     E_real       = sum over pairs and images within the cutoff of
                    q_i q_j erfc(alpha r)/r, excluded pairs' nearest image
                    left out;
     E_reciprocal = 1/(2V) sum_{k != 0} 4 pi/k^2 exp(-k^2/(4 alpha^2)) |S(k)|^2,
                    S(k) = sum_j q_j exp(i k.r_j), k = 2 pi (nx/Lx, ny/Ly, nz/Lz);
     E_self       = -alpha/sqrt(pi) sum_i q_i^2;
     E_excluded   = -sum over excluded pairs q_i q_j erf(alpha r)/r (their
                    smooth interaction, which the reciprocal sum includes);
     E_background = -pi Q^2 / (2 alpha^2 V) for a net charge Q (a uniform
                    neutralising background);
   conducting ("tin-foil") boundary.  All terms are times scale.

   The accuracy knob of the exact sum and of SPME is one number with one
   meaning: `tolerance`, the relative RMS force error against the exact
   (converged) Ewald sum,
       sqrt(sum_i |F_i - F_i,exact|^2 / sum_i |F_i,exact|^2),
   the quantity OpenMM's ewaldErrorTolerance approximates.  The resolve
   functions choose the free parameters from a-priori estimates of that
   error (elec_error_estimate says what they expect), which read the atoms:
   their charges, the density they crowd to (a droplet in a large box
   counts as dense), the charge structure factor, the RMS force and the
   real-space tail itself, measured at the choice.  Where
   the forces nearly vanish (a crystal's ions at or within a few
   thousandths of an A of their sites) the error is measured against a
   hundredth of the force between two RMS charges at the mean spacing
   instead, as the exact forces carry too little to be relative to; the
   GPU's float floor (estimate.float_floor) is relative to the same, so
   that on a crystal at its sites, whose forces are the float rounding of
   its positions, the GPU refuses tolerances under about 4e-4 (its
   handles, given float positions, under 2e-4: float arithmetic's share,
   estimate.float_arithmetic).  What the
   caller fixes is taken as given: exact Ewald then meets the tolerance
   with what is left free (alpha the real-space half, kmax the reciprocal
   half) and says in the estimate what the whole comes to, never refusing
   for the tolerance (its limits on vectors and work still hold); SPME
   refuses where no choice
   of what is left meets it, but for a fixed mesh (grid and order), for
   which it keeps the least error and the estimate says what it is. */

/* Tightest tolerances: the exact sum's (double rounding of its terms) and
   CPU SPME's (double rounding of grids and FFTs, ~1e-15 relative, well
   below; grids past ELEC_SPME_MAX_GRID_POINTS come first on most boxes). */
#define ELEC_EWALD_TOLERANCE_FLOOR 1e-14
#define ELEC_SPME_TOLERANCE_FLOOR 1e-12
/* Work limit of the exact sum, as its estimated time on one core: 20 ns
   per atom and reciprocal vector, 2 ns per atom pair and image looked at,
   100 ns per pair within the cutoff (erfc and exp), measured on 2000
   atoms.  Past it elec_cpu_ewald refuses with ELEC_ERR_UNSUPPORTED and
   says how long it would take (elec_cpu_coulomb_energy too, by its own
   estimate).  Define it before including elec.h to change it. */
#ifndef ELEC_EWALD_MAX_SECONDS
#define ELEC_EWALD_MAX_SECONDS 300.0
#endif

typedef struct elec_ewald_params {
    double scale;      /* 0 = 1: e^2/A.  ELEC_COULOMB: kcal/mol            */
    double cutoff;     /* real-space cutoff (A); 0 = half the shortest edge;
                          may exceed it (more images are summed)          */
    double tolerance;  /* relative RMS force error of the truncations
                          (above); 0 = 1e-12.  alpha is the smallest that
                          meets half of it in real space and at least
                          1/cutoff, kmax the smallest that meets the
                          other half; below ELEC_EWALD_TOLERANCE_FLOOR
                          refused                                         */
    double alpha;      /* Ewald coefficient (1/A); 0 = from tolerance      */
    int kmax[3];       /* reciprocal vectors |n_axis| <= kmax[axis];
                          0 = from alpha and tolerance                    */
    int n2_limit;      /* if > 0 keep only |n|^2 < n2_limit (NIST: 27)     */
    const size_t *excluded_pairs; /* atom index pairs (i, j), flattened   */
    size_t excluded_pair_count;
    elec_progress_fn progress;    /* long sums report (and may cancel)    */
    void *progress_user;
    elec_error_estimate estimate; /* out: filled by the resolve           */
} elec_ewald_params;

typedef struct elec_ewald_terms {
    double real, reciprocal, self, excluded, background, total;
    double error; /* expected absolute error of total (the estimate's
                     energy; Ewald and SPME fill it)                      */
} elec_ewald_terms;

/* The parameters with every zero field resolved for a box and its atoms
   (alpha and kmax from the tolerance, the estimate filled);
   ELEC_ERR_INVALID_ARG for out-of-range values (elec_cpu_ewald refuses
   work past ELEC_EWALD_MAX_SECONDS, saying how long it would take). */
ELEC_API elec_status elec_ewald_params_resolve(const elec_ewald_params *p,
                                               const elec_box *box,
                                               const elec_atoms *atoms,
                                               elec_ewald_params *resolved,
                                               elec_error *err);

/* --------------------------------------------- >>spme SPME: smooth particle mesh Ewald */

/* Smooth particle mesh Ewald (Essmann et al. 1995; on GPUs after Harvey
   and De Fabritiis 2009): the terms of elec_ewald_terms with the
   reciprocal sum interpolated on a grid by B-splines and done by FFT; the
   real-space sum over pairs within the cutoff (minimum image, so the cutoff
   is at most half the shortest box edge).  One accuracy knob: tolerance. */
/* GPU charge spreading (the CPU ignores it). */
typedef enum elec_spme_spread {
    ELEC_SPME_SPREAD_CHARGEMAP = 0, /* default: the charge map's B-splines
                                       (elec_cuda.cuh's charge-mapping rung
                                       ELEC__SPME_CHARGEMAP_VARIANT)         */
    ELEC_SPME_SPREAD_GATHER,        /* seed 001: atoms placed in per-cell
                                       slots, each grid point gathers from
                                       its neighbourhood; overflow by
                                       atomics                               */
    ELEC_SPME_SPREAD_ATOMIC = ELEC_SPME_SPREAD_CHARGEMAP /* its former name */
} elec_spme_spread;

/* The GPU SPME computes in float.  Its arithmetic alone (float pair terms
   of erfcf and __expf, a few ulp each, summed ~40 to a warp lane; grid
   values summed by float atomics and transformed by cuFFT, eps log2 K ~
   1e-6 of the spectrum, little of it in the low modes that carry the
   force) leaves a relative RMS force error that tests/test_gpu_spme.cu
   measures against the CPU's double SPME at the same parameters: on an
   H100, 1.5e-7 to 1.9e-7 for random charges and 2.2e-6 to 2.65e-6 for
   rock salt with its ions displaced 0.1 A (whose net forces are what is
   left of nearly cancelling pair forces, so float's share of each pair
   term counts ten times over).  The floor is the worst of those, rounded
   up, where the forces do not nearly cancel (ELEC_GPU_FLOAT_CANCELLATION
   below raises it where they do: estimate.float_arithmetic); positions
   rounded to float add estimate.float_floor's share (for double input).
   The GPU refuses tolerances under 1.5 times the floor that applies. */
#define ELEC_SPME_GPU_FLOAT_FLOOR 2e-6
/* Where the forces nearly cancel, float arithmetic's error is not relative
   to them but to the pair forces they are the sum of: its absolute RMS per
   atom measured 1.9e-7 to 5.7e-7 (3 to 10 float epsilons) of the pair
   forces within 6 A in quadrature (pair_rms, elec__charge_stats_of's
   probe), for rock salt (3^3 and 5^3 cells) and CsCl (5^3) at 0 to 0.3 A
   RMS from their sites and for water, in SPME and periodic MSM alike
   (positions given in float, against the CPU's double at the same
   parameters; H200, 2026-12-04): relative 3.5e-6 at 0.1 A, 3.4e-5 at
   0.01 A, up to 1.0e-4 at the sites, where the forces are floored.
   estimate.float_arithmetic is the larger of ELEC_SPME_GPU_FLOAT_FLOOR
   and ELEC_GPU_FLOAT_CANCELLATION pair_rms / force_rms (the floored RMS
   force): atoms too far apart for the probe to see pairs (a dilute
   electrolyte) keep the former. */
#define ELEC_GPU_FLOAT_CANCELLATION 6e-7
/* Grids past these are refused (a tolerance that needs one is refused
   with the size it would need). */
#define ELEC_SPME_MAX_GRID_AXIS 4096
#define ELEC_SPME_MAX_GRID_POINTS 268435456.0 /* 2^28: 2 GB a double grid */

typedef struct elec_spme_params {
    double scale;        /* 0 = 1: e^2/A.  ELEC_COULOMB: kcal/mol            */
    double tolerance;    /* relative RMS force error against the exact
                            Ewald sum (elec_ewald_params says how it is
                            measured); 0 = 5e-4, OpenMM's default.  Chooses
                            whichever of cutoff, alpha, order and grid are
                            left at 0: the cheapest choice whose estimated
                            error is at most 0.4 of it.  Refused below
                            ELEC_SPME_TOLERANCE_FLOOR (and, on the GPU,
                            below 1.5 times the float floor of the atoms
                            given: estimate.float_floor)                  */
    double cutoff;       /* real-space cutoff (A), at most half the shortest
                            box edge; 0 = chosen (4 to 16 A)              */
    double alpha;        /* Ewald coefficient (1/A); 0 = chosen             */
    int order;           /* B-spline order 4 to 8; 0 = chosen (4, 6 or 8)  */
    int grid[3];         /* grid points per axis; 0 = chosen, or from
                            grid_spacing: sizes with factors 2, 3, 5, 7   */
    double grid_spacing; /* A; 0 = chosen (set it to fix the grid by
                            spacing: the smallest FFT-friendly sizes with
                            a spacing no larger)                          */
    const size_t *excluded_pairs; /* atom index pairs (i, j), flattened     */
    size_t excluded_pair_count;
    elec_spme_spread spread;      /* GPU spreading scheme; 0 = the charge
                                     map's (ELEC_SPME_SPREAD_CHARGEMAP)     */
    elec_gpu_set gpus;            /* GPU calls: the first device is used     */
    double list_skin;    /* GPU handle's neighbour list: its Verlet buffer
                            (A); pairs are listed out to cutoff + skin and
                            the list is rebuilt once an atom has moved more
                            than half of it.  0 = 1.5; at most a quarter of
                            the shortest box edge.  The CPU ignores it.   */
    elec_error_estimate estimate; /* out: filled by the resolve             */
} elec_spme_params;

/* Resolves every zero field for a box and the atoms (their count, charges
   and positions: the estimates read Q2, sum q^4, the RMS force, the
   charge structure factor and the real-space tail from them) and fills
   the estimate.  The choice
   minimises an estimated cost per evaluation, calibrated on an H100 (ps:
   22 per atom pair within the cutoff, 17 per atom and B-spline point,
   (18 + 5.1 log2 K) per grid point for the two FFTs and the solve); CPU
   and GPU paths call this one function and so compute with the same
   parameters.  ELEC_ERR_INVALID_ARG for values out of range,
   ELEC_ERR_UNSUPPORTED for a tolerance that needs a grid past the limits
   above. */
ELEC_API elec_status elec_spme_params_resolve(const elec_spme_params *p,
                                              const elec_box *box,
                                              const elec_atoms *atoms,
                                              elec_spme_params *resolved,
                                              elec_error *err);
/* The smallest n >= minimum whose only prime factors are 2, 3, 5, 7; 0
   where none fits in an int (minimum past 2,144,153,025 = 3^6 5^2 7^6). */
ELEC_API int elec_fft_friendly_size(int minimum);
/* |sum_{k=0}^{order-2} M_n(k+1) exp(2 pi i m k / K)|^2 for m = 0..K-1:
   1/|b(m)|^2 of Essmann eq. 4.4, the factor the influence function
   divides by.  Where it vanishes (odd orders at m = K/2) it takes the mean
   of its neighbours, as MD codes do.  ELEC_ERR_INVALID_ARG, with nothing
   written, for an order outside 2..ELEC_MAX_SPLINE_ORDER, a grid under 1
   or NULL moduli (an order of 20 once overflowed the stack). */
ELEC_API elec_status elec_spme_bspline_moduli(int order, int grid, double *moduli);

/* ------------------------------------------------------------ >>charges charge mapping */

/* Charge mapping (seed 004, Sanaullah et al. 2016): each atom's charge
   spread on the points of a lattice by a separable basis,
       rho(g) = sum_a q_a phi(u_a,x - g_x) phi(u_a,y - g_y) phi(u_a,z - g_z),
   u = (x - origin) / spacing the atom's position in grid units (seed eq. 1).
   rho is in e per point: sum_g rho(g) = sum_a q_a.  The first step of
   SPME (its Q grid) and of MSM (anterpolation).

   Bases (params.basis, params.order = the stencil width per axis):
     ELEC_CHARGEMAP_SKEEL    Skeel's C1 cubic (order 4, the default; seed
                             eqs. 2-3, MSM's cubic): an atom in cell
                             k0 = floor(u) puts phi_j(t), t = u - k0, on the
                             points k0 - 1 + j, j = 0..3.  Interpolating
                             (an atom on a point puts its whole charge
                             there) and exact for quadratics: the first and
                             second moments of the charge are kept.  Orders
                             6, 8 and 10 are MSM's C1 quintic, septic and
                             nonic (elec_msm_interpolation), exact to
                             degree order - 2.
     ELEC_CHARGEMAP_BSPLINE  cardinal B-spline M_n of order n = 4..8 (SPME's
                             convention, elec_bspline_weights): point
                             k0 - j gets M_n(t + j), j = 0..n-1.  Positive
                             weights, smooth to degree n - 2, not
                             interpolating: the mapped charge is centred
                             n/2 points below the atom (mean g = u - n/2 per
                             axis) with variance n/12 point^2.
   Lattices: an elec_lattice, x fastest as every elec map.  params.periodic
   0: a map; an atom whose stencil leaves the lattice is refused
   (ELEC_ERR_INVALID_ARG, naming it), as NAMD and LAMMPS refuse.  1: one
   period of a periodic grid, box = dims * spacing from the origin
   (elec_chargemap_periodic_lattice builds it from an elec_box); atoms
   anywhere are wrapped.

   The GPU ladder (params.variant; elec_cuda.cuh; examples/chargemap_tour.cu
   prints it as a table).  The seed's rungs, PC = particle-centric (atomics
   on the grid), GC = grid-centric (each point gathers, no atomics); bins
   are grid cells with bin_capacity slots, atoms past it go to an overflow
   list mapped by atomics afterwards: */
typedef enum elec_chargemap_variant {
    ELEC_CHARGEMAP_FASTEST = 0,          /* default: TILE_BINNED or PC_LANES
                                            by the atoms, the points and the
                                            order, as measured (README;
                                            elec__chargemap_fastest); a GPU
                                            handle takes PC_LANES where
                                            TILE_BINNED does not fit
                                            (describe names the rung)         */
    ELEC_CHARGEMAP_PC_BASELINE,          /* seed Alg. 3: a thread per atom in
                                            the caller's order, order^3 global
                                            atomics                           */
    ELEC_CHARGEMAP_PC_BINNED,            /* Alg. 4: atoms placed in bin
                                            structs {count, slots} (ghosts:
                                            q = 0), a thread per bin          */
    ELEC_CHARGEMAP_PC_REDUCED_READS,     /* Fig. 4a: counts apart, records
                                            slot-major (slot s of bin b at
                                            s M + b): valid slots only        */
    ELEC_CHARGEMAP_PC_COALESCED,         /* Fig. 4b: the records as four
                                            slot-major arrays (x, y, z, q)    */
    ELEC_CHARGEMAP_GC_BASELINE,          /* Alg. 5: a thread per point reads
                                            the order^3 bins that reach it,
                                            one basis piece per axis chosen by
                                            branches                          */
    ELEC_CHARGEMAP_GC_COMPUTE_EFFICIENT, /* every piece, then selects         */
    ELEC_CHARGEMAP_GC_SHARED,            /* a block's bins through shared
                                            memory                            */
    ELEC_CHARGEMAP_GC_REDUCED_READS,     /* Alg. 6: slot-major bins, valid
                                            slots only                        */
    /* beyond the seed, for today's GPUs: */
    ELEC_CHARGEMAP_PC_LANES,             /* order lanes per atom in the caller's
                                            order, lane jx adding its x plane
                                            by global atomics (SPME's spread
                                            before the charge map): no sort to
                                            pay for, neighbouring atomics in
                                            any atom order                    */
    ELEC_CHARGEMAP_PC_SORTED_LANES,      /* atoms sorted by tile on the GPU,
                                            order lanes per atom (GROMACS):
                                            neighbouring atomics             */
    ELEC_CHARGEMAP_TILE_OWNER,           /* atoms sorted by tile with a copy
                                            in each tile they reach; a block
                                            sums its tile in shared memory and
                                            stores each point once: no global
                                            atomics, no zeroing, no capacity */
    ELEC_CHARGEMAP_PC_FIXED_POINT,       /* sorted lanes adding q w w w 2^32
                                            as 64-bit integers (OpenMM): the
                                            grid is bit-identical whatever the
                                            atom order                        */
    ELEC_CHARGEMAP_TILE_BINNED,          /* TILE_OWNER's tiles, the copies
                                            binned without global atomics:
                                            each block counting-sorts its
                                            share of the atoms by tile in
                                            shared memory; then a block per
                                            tile gathers its copies from every
                                            block's run and sums the tile on
                                            the tensor cores (3xTF32) where it
                                            fits, else by columns in
                                            registers, no atomics (two
                                            kernels)                          */
    ELEC_CHARGEMAP_TILE_FUSED,           /* TILE_BINNED's two stages in one
                                            cooperative kernel, a grid barrier
                                            between them: one launch          */
    ELEC_CHARGEMAP_TILE_FUSED_FIXED,     /* TILE_FUSED adding q w w w 2^32 as
                                            64-bit integers in shared memory
                                            (as two 32-bit halves where a
                                            tile's range allows): bit-identical
                                            whatever the atom order (units of
                                            2^-32 e, as PC_FIXED_POINT's)     */
    ELEC_CHARGEMAP_VARIANT_COUNT
} elec_chargemap_variant;

/* The CPU ladder (seed section III; elec_cpu_chargemap, float grid). */
typedef enum elec_chargemap_cpu_variant {
    ELEC_CHARGEMAP_CPU_FASTEST = 0, /* default: CPU_BINNED                  */
    ELEC_CHARGEMAP_CPU_BASELINE,    /* Alg. 1: the wrap and the basis
                                       function (branches on |xi|) at each
                                       of the order^3 points                */
    ELEC_CHARGEMAP_CPU_PRECOMPUTED, /* Alg. 2: weights and wrapped indices
                                       per axis first, then multiply-adds  */
    ELEC_CHARGEMAP_CPU_BINNED,      /* Alg. 2 over atoms sorted by cell,
                                       OpenMP threads owning z-slabs of the
                                       grid (a private slab with a halo,
                                       halos added after)                   */
    ELEC_CHARGEMAP_CPU_VARIANT_COUNT
} elec_chargemap_cpu_variant;

typedef enum elec_chargemap_basis {
    ELEC_CHARGEMAP_SKEEL = 0, /* default: Skeel's C1 cubic (orders 6-10: MSM's
                                 C1 family)                                */
    ELEC_CHARGEMAP_BSPLINE    /* cardinal B-spline (SPME)                   */
} elec_chargemap_basis;


typedef struct elec_chargemap_params {
    int order;         /* stencil width: Skeel 4 (default), 6, 8 or 10;
                          B-spline 4 (default) to 8                         */
    elec_chargemap_basis basis; /* 0 = Skeel (C++ takes {0} for a struct
                                   whose first field is not an enum)        */
    int periodic;      /* 0: the lattice is a map; 1: one period of a grid  */
    int bin_capacity;  /* slots per bin of the seed's rungs, 1 to 16, made
                          a power of two; 0 = the smallest power of two
                          >= l + 4 sqrt(l) + 2, l the mean atoms per cell  */
    int tile[3];       /* the sorted rungs' tile (points per axis, each at
                          least order - 1; the tile-binned rungs round it
                          up to a power of two); 0 = chosen by the GPU
                          call (16 or 8 per axis)                          */
    elec_chargemap_variant variant;         /* GPU; 0 = fastest             */
    elec_chargemap_cpu_variant cpu_variant; /* CPU; 0 = fastest             */
    elec_gpu_set gpus; /* the first device is used                         */
    int tile_groups;   /* GPU tile-binned rungs: blocks that bin the atoms
                          (each writes its own counts per tile), more
                          taken as four per SM; 0 = one per SM
                          (TILE_BINNED; two or four where only those
                          let it sort a group's copies in shared
                          memory) or four (TILE_FUSED,
                          TILE_FUSED_FIXED)                                */
    int no_pdl;        /* GPU: 1 launches every kernel in plain stream
                          order; 0 = programmatic dependent launch between
                          the sort's and the map's kernels, and between the
                          kernel before a call and tile-binned's first,
                          where the device has it (sm_90) and the kernels
                          were compiled for compute_90 or later (each
                          waits for the kernel before it to finish before
                          it touches memory)                                */
} elec_chargemap_params;

ELEC_API const char *elec_chargemap_variant_name(elec_chargemap_variant variant);
ELEC_API const char *elec_chargemap_cpu_variant_name(elec_chargemap_cpu_variant variant);
/* Defaults and checks in one place: every zero field resolved (variants
   FASTEST made concrete, the GPU rung from atom_count, the lattice's
   points and the order; bin_capacity from atom_count and the lattice),
   ELEC_ERR_INVALID_ARG naming what is out of range (order for the basis,
   dims below the order, a lattice or periodic grid of 2^31 points or more,
   a tile shorter than order - 1, unknown variants).  The methods call it
   once. */
ELEC_API elec_status elec_chargemap_params_resolve(const elec_chargemap_params *in,
                                                   const elec_lattice *lattice,
                                                   size_t atom_count,
                                                   elec_chargemap_params *out,
                                                   elec_error *err);
/* One period of a periodic grid over a box: dims = grid, or where grid is
   NULL or zero ceil(L / spacing) points per axis (spacing 0 = 1 A);
   spacing L / dims, origin 0. */
ELEC_API elec_status elec_chargemap_periodic_lattice(const elec_box *box,
                                                     const int grid[3], double spacing,
                                                     elec_lattice *out, elec_error *err);

/* ------------------------------------------------- >>alpb ALPB surface potentials, HCP */

/* ALPB, the analytical linearized Poisson-Boltzmann potential (Sigalov,
   Fenley and Onufriev 2006; GEM: Gordon, Fenley and Onufriev 2008), at
   points on or outside a molecule's surface, summed over every atom or
   through the hierarchical charge partitioning (HCP) of Anandakrishnan and
   Onufriev (2010), as seed 003 (Daga and Feng 2012) does on a GPU.

   At P = v + p n (a surface vertex v moved p A along its outward unit
   normal n), with beta = eps_in / eps_out, alpha = ELEC_ALPB_ALPHA and
   r = A + p, A the molecule's electrostatic size:
       phi(P) = scale sum_i q_i / (eps_out (1 + alpha beta))
                      [(1 + alpha) / d_i - alpha (1 - beta) / r]            (E1)
   d_i = |P - x_i|.  Seed 003's eq. 1 prints the prefactor 1/eps_in: it is
   1/eps_out (a central charge must give q / (eps_out r) outside, and the
   potential must vanish as eps_out grows), as in GEM's code.  E1 keeps the
   monopole of the sphere's exact (Kirkwood) solution and replaces its
   higher coefficients by one constant: exact for a central charge and for
   eps_in = eps_out.  Since r is the same for every vertex, E1 is a Coulomb
   sum at the points, scaled, plus a constant: the exact sum without salt
   runs on the DCS points path.

   Salt (inverse Debye length kappa, ion-exclusion radius s; P' = v + s n,
   d'_i = |P' - x_i|, r' = A + s) follows GEM's regions, which are E1 at
   kappa = 0 and the exact Debye-Hueckel potential of a central ion outside
   an exclusion sphere of radius A + s (research notes on seed 003, 2.3):
     p > s (region 3):       q (1+alpha)/(eps_out (1+alpha beta))
                               exp(-kappa (d - d')) / (d (1 + kappa d'))
                             - Q alpha (1-beta)/(eps_out (1+alpha beta))
                               exp(-kappa (r - r')) / (r (1 + kappa r'))
     0 <= p <= s (region 2): q (1+alpha)/(eps_out (1+alpha beta))
                               (1/d - kappa / (1 + kappa d'))
                             - Q alpha (1-beta)/(eps_out (1+alpha beta))
                               (1/r - kappa / (1 + kappa r'))
   (Q the net charge), continuous at p = 0 and at p = s.  gem_compat
   reproduces GEM 2.x as coded: at p <= 0 its region 1, the ALPB "inside"
   form with every atom's Born radius 3A/4 and without the alpha beta / A
   term, which at p = 0 is E1 without its constant term (GEM's default
   output is shifted by + scale alpha (1-beta) Q / (eps_out (1+alpha beta)
   A) from E1's), and kappa = 0.316 sqrt(salt) as GEM computes it.

   HCP: atoms < residues < chains < complexes.  A component far from P
   (the distance from P to the mean of its atom positions above the
   level's threshold: residues h[0], chains h[1], complexes h[2]) is
   represented by one charge (its net charge at its centre of charge) or
   two (its positive charges at their centre, its negative charges at
   theirs), each taken through the same kernel as an atom; a near one by
   its children, down to the atoms.  Both keep the monopole and the dipole
   (2 charges: of every component, neutral ones included), so the error of
   a far component falls as R^-3; every level keeps the net charge, so
   E1's constant term is exact under HCP too.

   The distance test alone (the seed's, NAB's) lets a large, charged
   component err more than its level's threshold suggests: a pentamer of
   the bench's capsid (net -50 e spread on a ring 104 A across, its two
   charges on the ring's axis) leaves a quadrupole residual 23 times a
   chain's, and the errors of the ~10 pentamers a vertex sees add up with
   one sign (1.08 % relative RMS at 20/70/150; 0.40 % when complexes are
   never approximated).  So a far component must also pass an error test
   (hcp_tolerance): its approximation's leading error, estimated by
       front (|dp| / d^2 + |dQ| / d^3)
   (the Taylor series' first two orders; GEM's region 1 takes its
   kernel's own; a residue's adds the series' remainder past them,
   front sum |q| u^3 / (d^3 (d - u_max)): elec__hcp_bound),
   dp the dipole and dQ the quadrupole residual (max |eigenvalue| / 2 <=
   sqrt(2/3) |dQ|_F / 2 of the traceless tensor) of the component minus
   its one or two charges about its centre, front E1's (1 + alpha) /
   (eps_out (1 + alpha beta)), must be at most the tolerance.  The
   distance that passes it is solved once per component and call, so a
   component's test stays one comparison of squared distances (its
   "reach": the largest of the level's threshold, 1.5 times its extent
   where the tolerance is finite, and that distance). */
#define ELEC_ALPB_ALPHA 0.571412 /* GEM's ALPHA_OF, Sigalov et al. 2005 */
#define ELEC_HCP_LEVELS 3        /* residues, chains, complexes */
#define ELEC_HCP_TOLERANCE 1.5e-4 /* e/A: elec_alpb_params.hcp_tolerance's default */

/* The hierarchy, built once from a structure or from component indices a
   host code passes, shared by the CPU and GPU paths.  Atoms are copied in
   hierarchy order: the atoms of a residue are contiguous, the residues of
   a chain, the chains of a complex.  Level l = 1 (residues), 2 (chains),
   3 (complexes) is stored at index l - 1. */
typedef struct elec_hcp {
    size_t count[ELEC_HCP_LEVELS + 1]; /* atoms, residues, chains, complexes */
    double *xyz;        /* 3 per atom, interleaved                           */
    double *charge;     /* per atom (e)                                      */
    double *radius;     /* per atom (A; 0 where the atoms had none)          */
    size_t *atom_index; /* per atom: its index in the caller's atoms         */
    /* count[l] + 1 per level: component c of level l holds the components
       first[l-1][c] .. first[l-1][c+1] - 1 of level l - 1 (level 0: atoms) */
    size_t *first[ELEC_HCP_LEVELS];
    /* 3 per component: the mean of its atom positions (the distance test) */
    double *centre[ELEC_HCP_LEVELS];
    /* 12 per component: x y z q of the one-charge approximation (the net
       charge at the centre of charge; at the centre when |Q| <= 1e-5 e,
       where the centre of charge is undefined), then of the two-charge one
       (the positive charges at their centre; the negative ones at theirs;
       an empty side is a zero charge at the centre) */
    double *approx[ELEC_HCP_LEVELS];
    /* 8 per component: what the approximations leave out, about the
       centre: |dipole residual| (e A), the bound of the quadrupole
       residual's potential, sqrt(2/3) |dQ|_F / 2 (e A^2), |sum q u^2|'s
       residual (e A^2, the second moment's trace: it counts only for a
       kernel that is not harmonic, GEM's region 1), and sum |q| |u|^3
       over its atoms and the approximation's charges (e A^3, the series'
       remainder past the quadrupole), of the one-charge approximation,
       then of the two-charge one (the error test above) */
    double *residual[ELEC_HCP_LEVELS];
    /* 2 per component: the farthest of its atoms and of the one-charge
       approximation's charge from its centre (A), then of its atoms and
       the two-charge one's (1.5 times it is the reach's floor,
       elec_hcp_reach) */
    double *extent[ELEC_HCP_LEVELS];
    double net_charge;  /* sum of the charges (e)                            */
    double size;        /* A_det of the atoms (elec_alpb_size); 0 when it is
                           undefined (no radii, every radius zero, or a
                           singular or overflowing inertia tensor)        */
    void *block;        /* the allocation the arrays live in                 */
} elec_hcp;

/* Component indices of every atom of a PQR structure (arrays of
   structure->count ints, any may be NULL), per the research notes' 3.1:
   a residue starts where (chain, residue number, insertion code, residue
   name) changes or after a TER record; a chain at a new chain identifier,
   after TER, or where the residue number decreases (APBS's files without
   chain identifiers); a complex after "REMARK END-OF-COMPLEX" (else the
   structure is one complex).  Indices count from 0 in file order; counts
   (may be NULL) gets the number of residues, chains and complexes. */
ELEC_API elec_status elec_structure_components(const elec_structure *structure,
                                               int *residue_of, int *chain_of,
                                               int *complex_of, size_t counts[3],
                                               elec_error *err);
/* The hierarchy of atoms whose residue, chain and complex are given per
   atom as indices >= 0 (NULL residue: every atom is its own residue; NULL
   chain: one chain per complex; NULL complex: one complex).  Atoms with
   one residue index must share their chain, and atoms of one chain their
   complex (ELEC_ERR_INVALID_ARG names the first that does not).  Indices
   need not be contiguous nor sorted: components are ordered by index. */
ELEC_API elec_status elec_hcp_build(const elec_atoms *atoms, const int *residue_of,
                                    const int *chain_of, const int *complex_of,
                                    elec_hcp *out, elec_error *err);
/* elec_structure_components, then elec_hcp_build. */
ELEC_API elec_status elec_hcp_from_structure(const elec_structure *structure,
                                             elec_hcp *out, elec_error *err);
ELEC_API void elec_hcp_free(elec_hcp *hcp);

/* A_det = sqrt(5 / (2 M)) det(I)^(1/6) (GEM's estimate_A, Amber's
   gb_elsize): each atom a uniform sphere of its radius r_i and mass r_i^3,
   M their sum, I the inertia tensor about the centre of mass with each
   atom's own 2/5 m r^2 added.  Exact for a sphere; one atom gives its
   radius.  ELEC_ERR_INVALID_ARG without atoms or radii, or when every
   radius is zero. */
ELEC_API elec_status elec_alpb_size(const elec_atoms *atoms, double *size,
                                    elec_error *err);

/* The GPU ladder of ALPB (elec_cuda.cuh), after seed 003; every rung takes
   the exact sum (every component opened) and HCP.  The CPU ignores it. */
typedef enum elec_alpb_variant {
    ELEC_ALPB_FASTEST = 0, /* default: the exact sum without salt on the DCS
                              points kernel, else ELEC_ALPB_PAIRS          */
    ELEC_ALPB_SIMPLE,      /* one thread per vertex walks the hierarchy, the
                              seed's kernel before its shared-memory step:
                              the vertex re-read from global memory at
                              every level                                 */
    ELEC_ALPB_REGISTERS,   /* the vertex read once, kept in registers (the
                              seed's shared-memory step)                  */
    ELEC_ALPB_SORTED,      /* vertices sorted along a Morton curve, so the
                              32 threads of a warp are neighbours and take
                              the same branches                           */
    ELEC_ALPB_PACKED,      /* sorted, complexes and chains staged in shared
                              memory, a component's centre, reach, charges
                              and children one 64-byte record             */
    ELEC_ALPB_PAIRS,       /* packed, two neighbouring vertices a thread:
                              each record read once for both              */
    ELEC_ALPB_VARIANT_COUNT
} elec_alpb_variant;

/* The rung ELEC_ALPB_FASTEST takes for HCP, salt and GEM's region 1. */
#define ELEC_ALPB_FASTEST_WALK ELEC_ALPB_PAIRS

ELEC_API const char *elec_alpb_variant_name(elec_alpb_variant variant);

typedef struct elec_alpb_params {
    double scale;         /* 0 = 1: e/A.  ELEC_COULOMB: kcal/(mol e)          */
    double eps_in;        /* solute dielectric; 0 = 1                         */
    double eps_out;       /* solvent dielectric; 0 = 80                       */
    double electrostatic_size; /* A (A); 0 = the hierarchy's A_det          */
    double proj;          /* p (A): the potential at v + p n; 0 = on the
                             vertex; negative only with gem_compat          */
    double salt;          /* 1:1 salt (mol/L); 0 = none                       */
    double kappa;         /* 1/A; 0 = from salt: elec_kappa_from_ionic_strength
                             (salt, eps_out, temperature), with gem_compat
                             GEM's 0.316 sqrt(salt)                          */
    double temperature;   /* K, for kappa from salt; 0 = 298.15               */
    double ion_exclusion; /* s (A); 0 = 2, GEM's                              */
    int gem_compat;       /* 1: GEM's formulas, region 1 at p <= 0 included   */
    int exact;            /* 1: every atom, no HCP                            */
    int hcp_charges;      /* charges per far component, 1 or 2; 0 = 2         */
    double hcp_h[ELEC_HCP_LEVELS]; /* thresholds (A) of residues, chains,
                             complexes; 0 = 20, 70, 150 (the research notes'
                             measurements: <= 1 % relative RMS; the seed
                             used 10, 70 with 1 charge)                     */
    double hcp_tolerance; /* e/A, before scale: a far component's
                             estimated error (above); 0 = 1.5e-4 (0.05 kcal/(mol e),
                             0.084 kT/e at 298 K, about ALPB's own RMS error
                             against Kirkwood's sphere, 0.041 kcal/(mol e));
                             +infinity: the distance test alone (the
                             seed's and NAB's; the research notes' tables) */
    elec_alpb_variant variant; /* GPU kernel; 0 = ELEC_ALPB_FASTEST          */
    elec_gpu_set gpus;    /* GPU calls: a run of the vertices a device      */
} elec_alpb_params;

/* Fills every zero field of in with its default and checks the result for
   this hierarchy: ELEC_ERR_INVALID_ARG names the field (and a zero
   electrostatic_size where the hierarchy's A_det is undefined, a
   negative proj without gem_compat).  kappa comes back resolved. */
ELEC_API elec_status elec_alpb_params_resolve(const elec_alpb_params *in,
                                              const elec_hcp *hcp,
                                              elec_alpb_params *out,
                                              elec_error *err);

/* The constants of one call's kernel, from resolved params: what an atom
   or an HCP charge q at distances d (from P) and d_ion (from P') adds is
   q * elec_alpb_term(k, d, d_ion); the call then adds Q * k.constant and
   multiplies by scale. */
typedef struct elec_alpb_kernel {
    int region;          /* 1 (gem_compat, p <= 0), 2 (p <= s), 3 (p > s)   */
    double front;        /* (1 + alpha) / (eps_out (1 + alpha beta))        */
    double kappa;        /* 1/A                                             */
    double inv_eps_in;   /* region 1: 1 / eps_in                            */
    double born;         /* region 1: (1/eps_in - 1/eps_out) A / (1 + alpha beta) */
    double born_offset;  /* region 1: (A^2 - r0^2)(A^2 - r^2), r0 = A/2     */
    double size2;        /* region 1: A^2                                   */
    double constant;     /* per e of net charge                             */
} elec_alpb_kernel;
ELEC_API void elec_alpb_kernel_setup(const elec_alpb_params *resolved,
                                     elec_alpb_kernel *kernel);
/* The reach of component c of an HCP level (0 residues, 1 chains, 2
   complexes) under resolved params and their kernel
   (elec_alpb_kernel_setup): the distance beyond which a point sees the
   component by its charges alone, the largest of the level's threshold
   hcp_h, 1.5 times its extent (elec_hcp.extent: no multipole series
   converges within it; not with the tolerance +infinity, the seed's
   distance test alone) and the distance where the error test's bound
   (front (|dp| / d^2 + |dQ| / d^3) for E1; more near the molecule in
   GEM's region 1) falls to hcp_tolerance; +infinity for the exact sum
   (and for a tolerance so small the bound's root is past double's range).
   (What the CPU and GPU walks compare squared distances against.)  NaN
   for a NULL hcp, params or kernel, a level outside 0..2 or a component
   past the level's count (they were read past the arrays). */
ELEC_API double elec_hcp_reach(const elec_hcp *hcp, int level, size_t c,
                               const elec_alpb_params *resolved,
                               const elec_alpb_kernel *kernel);
/* The same constants in float, for the GPU's kernels. */
typedef struct elec_alpb_kernel_float {
    int region;
    float front, kappa, inv_eps_in, born, born_offset, size2, constant;
} elec_alpb_kernel_float;

/* One charge's term (see elec_alpb_kernel), written once for the CPU
   reference (double) and the GPU (float). */
#define ELEC__ALPB_TERM(type, SQRT, EXP)                                      \
    if (k->region == 1) {                                                     \
        type t = k->inv_eps_in / d - k->born / SQRT(k->born_offset + k->size2 * d * d); \
        if (k->kappa > 0) t -= k->front * k->kappa / (1 + k->kappa * d_ion);  \
        return t;                                                             \
    }                                                                         \
    if (k->kappa == 0) return k->front / d;                                   \
    if (k->region == 3)                                                       \
        return k->front * EXP(-k->kappa * (d - d_ion)) /                      \
               (d * (1 + k->kappa * d_ion));                                  \
    return k->front * (1 / d - k->kappa / (1 + k->kappa * d_ion));
ELEC_HD static inline double elec_alpb_term(const elec_alpb_kernel *k, double d,
                                            double d_ion) {
    ELEC__ALPB_TERM(double, sqrt, exp)
}
ELEC_HD static inline float elec_alpb_term_float(const elec_alpb_kernel_float *k,
                                                 float d, float d_ion) {
    ELEC__ALPB_TERM(float, sqrtf, expf)
}

/* Surface points: vertices with outward unit normals (normal may be NULL:
   points without), and triangles where the surface is a mesh. */
typedef struct elec_surface {
    size_t count;
    double *xyz;            /* 3 per vertex                                */
    double *normal;         /* 3 per vertex, unit and outward, or NULL     */
    size_t triangle_count;
    size_t *triangles;      /* 3 vertex indices per triangle, counter-
                               clockwise seen from outside; NULL if none   */
    size_t *atom;           /* per vertex: the atom whose sphere it lies
                               on (elec_surface_contact), else NULL        */
} elec_surface;

/* An MSMS surface: the .vert file (two '#' lines, a count line, then
   x y z nx ny nz and three integers per vertex; normals renormalised) and,
   where face_path is not NULL, the .face file (two '#' lines, a count
   line, then three 1-based vertex numbers and two integers per triangle). */
ELEC_API elec_status elec_read_msms(const char *vert_path, const char *face_path,
                                    elec_surface *out, elec_error *err);
/* The same from texts in memory (face_text NULL: no triangles); messages
   name "MSMS .vert" and "MSMS .face" where elec_read_msms names files. */
ELEC_API elec_status elec_parse_msms(const char *vert_text, size_t vert_length,
                                     const char *face_text, size_t face_length,
                                     elec_surface *out, elec_error *err);
/* A point list: one point a line, x y z or x y z nx ny nz (every line the
   same; normals renormalised), blank lines and '#' comments allowed. */
ELEC_API elec_status elec_read_points(const char *path, elec_surface *out,
                                      elec_error *err);
ELEC_API elec_status elec_parse_points(const char *text, size_t length,
                                       elec_surface *out, elec_error *err);
/* The contact surface of the research notes' 2.6: atom i carries
   round(density 4 pi r_i^2) Fibonacci directions u, its vertex
   x_i + r_i u with normal u kept where the probe sphere touching it,
   centred at x_i + (r_i + probe) u, keeps at least r_j + probe from every
   other atom j (re-entrant patches are left out).  density 0 = 3 per A^2
   (at most 1e4), probe 0 = 1.5 A (at most 1e4 A).  Needs radii: an atom
   whose sphere holds under half a point (radius 0, or under 0.12 A at 3
   per A^2) has none (it still buries others' points); every radius zero,
   or no point at all, is refused (ELEC_ERR_INVALID_ARG).  out->atom names
   each vertex's atom (so a point's height over the surface can be taken
   over that atom's sphere: elecsurf's maps). */
ELEC_API elec_status elec_surface_contact(const elec_atoms *atoms, double density,
                                          double probe, elec_surface *out,
                                          elec_error *err);
/* A closed triangulated surface for viewing: the level 1 of the Gaussian
   (blobby) density sum_i exp(-blobbiness (|x - x_i|^2 / r_i^2 - 1)),
   which passes through an isolated atom's sphere, by marching tetrahedra
   (each cube of a lattice of the given spacing cut into six tetrahedra
   around its diagonal: no case table, no ambiguous case, the mesh closed
   by construction), with normals from the density's gradient.  spacing 0
   = 0.6 A, blobbiness 0 = 2.  Needs radii. */
ELEC_API elec_status elec_surface_mesh(const elec_atoms *atoms, double spacing,
                                       double blobbiness, elec_surface *out,
                                       elec_error *err);
ELEC_API void elec_surface_free(elec_surface *surface);

/* ------------------------------------------------ >>slab sub-lattices for distributed maps */

/* A map cut into slabs of z planes, one per rank of a distributed code
   (examples/elecmap_mpi.c, MPI): the slab k0..k1 of a lattice is its
   planes k = k0 .. k1 - 1, whose values are the map's
   map[k0 nx ny .. k1 nx ny - 1] (x fastest, z slowest, as every elec map),
   so each rank's part of the file is one contiguous run.

   What each method needs to map a slab:
     DCS, MDH   every atom (their sums have no cutoff);
     cutoff     the atoms within the cutoff of the slab's points
                (elec_atoms_halo): a shell of the cutoff around the slab;
     MSM        every atom: its long-range part interpolates from a lattice
                hierarchy that every charge feeds, so each rank builds the
                whole hierarchy (replicated, not divided) and only the
                short range and the interpolation are split by slabs;
                elec_cpu_msm_map_slab (elec_cpu.h) does this in the whole
                lattice's frame, so that the slabs put together are the
                whole map bit for bit.
   Slabs of DCS and cutoff maps computed on their own lattice (the
   elec_lattice_slab below) sum relative to the slab's centre instead of
   the whole map's: the same values to float rounding, not bit for bit. */

/* Rank rank's planes of a map of `planes` planes over `ranks` ranks:
   k0 = floor(rank planes / ranks), k1 that of rank + 1, so that every
   rank has floor or ceil of planes / ranks planes and the slabs tile
   0 .. planes in rank order.  Where ranks > planes some slabs are empty
   (k0 == k1): such a rank has nothing to map.  ELEC_ERR_INVALID_ARG for
   planes < 1, ranks < 1, rank outside 0 .. ranks - 1. */
ELEC_API elec_status elec_slab_partition(int planes, int ranks, int rank, int *k0,
                                         int *k1, elec_error *err);

/* The sub-lattice of the planes k0 .. k1 - 1 of lattice: the same x and y
   counts, spacing, origin in x and y; k1 - k0 planes from
   origin z + k0 spacing z.  ELEC_ERR_INVALID_ARG for an empty or
   out-of-range slab (0 <= k0 < k1 <= dims[2]) or a bad lattice. */
ELEC_API elec_status elec_lattice_slab(const elec_lattice *lattice, int k0, int k1,
                                       elec_lattice *slab, elec_error *err);

/* The halo of a slab: the atoms a cutoff map of the planes k0 .. k1 - 1
   needs, those within cutoff of the box that the slab's points span
   (closer than cutoff (1 + 1e-9): the margin covers rounding, and an atom
   past the cutoff adds exactly nothing, so a few extra cost nothing but
   their distance test).  Their indices, increasing (the atoms' order
   kept, so that a method's sums meet them in the same order), go to index
   (room for atoms->count), their number to *count.  cutoff 0 asks for
   every atom (DCS, MDH, MSM).  ELEC_ERR_INVALID_ARG for a bad view,
   lattice or slab, a negative or non-finite cutoff. */
ELEC_API elec_status elec_atoms_halo(const elec_atoms *atoms, const elec_lattice *lattice,
                                     int k0, int k1, double cutoff, size_t *index,
                                     size_t *count, elec_error *err);

/* A packed copy of the atoms index[0 .. count - 1] (a halo): positions
   into xyz (3 count, interleaved), charges into charge (count) and, where
   radius is not NULL, radii (count; 0 where the view has none).  View
   them with elec_atoms_from_xyz.  ELEC_ERR_INVALID_ARG for an index past
   the atoms or a NULL array (the view's too).  The arrays must have room
   for count atoms: C cannot check that. */
ELEC_API elec_status elec_atoms_gather(const elec_atoms *atoms, const size_t *index,
                                       size_t count, double *xyz, double *charge,
                                       double *radius, elec_error *err);

/* The statistics an MRC header carries of the whole map (elec_write_mrc
   computes them from the values; a distributed writer reduces them over
   its ranks): the smallest and largest value, the mean, and the RMS
   deviation from the mean. */
typedef struct elec_map_stats {
    double min, max, mean, rms;
} elec_map_stats;

/* The 1024 bytes of the MRC2014 header that elec_write_mrc writes for
   lattice, stats and comment (">>mrc" says what each word holds), so that
   a writer of its own (MPI-IO: rank 0 the header, each rank its slab's
   floats, little endian, at 1024 + 4 k0 nx ny) makes the same file.
   ELEC_ERR_INVALID_ARG for a bad lattice or one past the header's floats
   (as elec_write_mrc), NULL stats or header, statistics not finite in
   float. */
ELEC_API elec_status elec_mrc_header(const elec_lattice *lattice,
                                     const elec_map_stats *stats, const char *comment,
                                     unsigned char header[1024], elec_error *err);

#ifdef __cplusplus
}
#endif
#endif /* ELEC_H */

/* ELEC_ALL_IMPLEMENTATION read outside the include guard, so that it
   works where this header was included before it was defined (by a
   project's own header, say): inside, such a second include compiled no
   implementation (undefined references, an audit). */
#ifdef ELEC_ALL_IMPLEMENTATION
#ifndef ELEC_IMPLEMENTATION
#define ELEC_IMPLEMENTATION
#endif
#endif

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

#ifdef _OPENMP
#include <omp.h>
#endif

/* File I/O uses POSIX where there is one (the size of a file before
   reading it, fsync and an atomic rename for outputs); elsewhere, or with
   ELEC_NO_POSIX defined, ISO C stdio alone (see elec_output_open). */
#if (defined(__unix__) || defined(__APPLE__)) && !defined(ELEC_NO_POSIX)
#define ELEC__POSIX 1
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#endif

#ifndef ELEC_MALLOC
#define ELEC_MALLOC(size) malloc(size)
#define ELEC_FREE(ptr) free(ptr)
#endif

#ifdef ELEC_STATIC
#define ELEC_DEF static inline /* inline: no warning for what a file leaves unused */
#else
#define ELEC_DEF
#endif

/* Fills err (when given) and returns the status, so that a failure is one
   line: return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "...", ...).  Both
   marked as printf's kind, so that the compiler checks every message's
   arguments (and clang's -Wformat-nonliteral takes the va_list form). */
#if defined(__GNUC__) || defined(__clang__)
#define ELEC__PRINTF(format_at, first) __attribute__((format(printf, format_at, first)))
#else
#define ELEC__PRINTF(format_at, first)
#endif
static inline elec_status elec__vfail(elec_error *err, elec_status status, long line,
                                      const char *format, va_list args) ELEC__PRINTF(4, 0);
static inline elec_status elec__fail(elec_error *err, elec_status status, long line,
                                     const char *format, ...) ELEC__PRINTF(4, 5);
static inline elec_status elec__vfail(elec_error *err, elec_status status,
                                      long line, const char *format, va_list args) {
    if (err) {
        err->status = status;
        err->line = line;
        err->atom[0] = err->atom[1] = ELEC_NO_ATOM;
        vsnprintf(err->message, sizeof err->message, format, args);
    }
    return status;
}

static inline elec_status elec__fail(elec_error *err, elec_status status,
                                     long line, const char *format, ...) {
    va_list args;
    va_start(args, format);
    status = elec__vfail(err, status, line, format, args);
    va_end(args);
    return status;
}

static inline void elec__ok(elec_error *err) {
    if (err) {
        err->status = ELEC_OK;
        err->line = 0;
        err->atom[0] = err->atom[1] = ELEC_NO_ATOM;
        err->message[0] = '\0';
    }
}

/* Records in err the atoms a failure's message names (ELEC_NO_ATOM for
   none) and returns its status: return elec__name_atoms(elec__fail(err,
   ..., "atoms %zu and %zu coincide", i, j), err, i, j). */
static inline elec_status elec__name_atoms(elec_status status, elec_error *err, size_t first,
                                           size_t second) {
    if (err) {
        err->atom[0] = first;
        err->atom[1] = second;
    }
    return status;
}

/* qsort/bsearch order of size_t keys. */
static inline int elec__size_order(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* Excluded pairs as sorted keys min * n + max, for a binary search
   (elec__size_order); the nearest image; the coincident pair search.
   Shared by the CPU's periodic sums and the GPU's one-shot SPME, whose
   pair kernel counts such pairs and the host then names one. */
static inline size_t elec__ewald_key(size_t i, size_t j, size_t n) {
    return i < j ? i * n + j : j * n + i;
}

/* The sorted keys of count excluded pairs (flattened) of n atoms. */
static inline void elec__exclusion_keys(const size_t *pairs, size_t count, size_t n,
                                        size_t *keys) {
    size_t e;
    for (e = 0; e < count; e++) keys[e] = elec__ewald_key(pairs[2 * e], pairs[2 * e + 1], n);
    qsort(keys, count, sizeof *keys, elec__size_order);
}

static inline int elec__ewald_excluded(const size_t *keys, size_t count, size_t i,
                                       size_t j, size_t n) {
    size_t key = elec__ewald_key(i, j, n);
    return count > 0 &&
           bsearch(&key, keys, count, sizeof key, elec__size_order) != NULL;
}

/* d = a - b, shifted to the nearest image: by round(d / L) box lengths,
   halves away from zero, so that b - a takes -d even where the pair is
   exactly half a box apart (floor(d / L + 0.5) took -L/2 both ways, and
   periodic MSM, which leaves an excluded pair's image out from each
   atom's side, then left out different images for the two: forces that
   did not sum to zero).  elec__nearest_count: that count. */
static inline double elec__nearest_count(double d, double length) { return round(d / length); }
static inline void elec__ewald_nearest(const double *a, const double *b,
                                       const double length[3], double d[3]) {
    int axis;
    for (axis = 0; axis < 3; axis++) {
        d[axis] = a[axis] - b[axis];
        d[axis] -= length[axis] * elec__nearest_count(d[axis], length[axis]);
    }
}

/* Two atoms at one place (nearest image closer than
   ELEC_COINCIDENT_DISTANCE) that are not an excluded pair: their energy is
   infinite, an error to report, not a number.  The search hashes the atoms
   into periodic cells of side s, about 16 times the distance (n_d = L_d / s
   cells along axis d), so such a pair lies in one cell or in two next to
   each other (modulo n_d), and then only where the atom lies within the
   distance of the face between them: 1.4 cells an atom at random, at most
   8.  O(n) expected, however the atoms line up: sorting by x alone (the
   search before) visits every pair that shares an x, about n^(5/3) in a
   perfect crystal (a million atoms: 93 s there, 0.5 s here; at random 0.25
   and 0.28 s on one core of the dev machine). */
typedef struct elec__coincident_cells {
    long long count[3];     /* cells along each axis                    */
    double side[3];         /* s_d = L_d / count[d]                      */
    long long *cell;        /* 3 per atom                                */
    size_t *head, *next, mask; /* chains of atoms by hashed cell; n = end */
} elec__coincident_cells;

static inline size_t elec__coincident_hash(const elec__coincident_cells *c,
                                           const long long *cell) {
    const unsigned long long h = (unsigned long long)cell[0] * 73856093ULL ^
                                 (unsigned long long)cell[1] * 19349663ULL ^
                                 (unsigned long long)cell[2] * 83492791ULL;
    return (size_t)(h ^ (h >> 29)) & c->mask;
}

/* A position anywhere wrapped into [0, L] (L where the wrap rounds up),
   and its cell along an axis (the last cell for L, next to the first). */
static inline double elec__coincident_wrap(double x, double length) {
    const double u = x - length * floor(x / length);
    return u > 0.0 ? u : 0.0; /* NaN too: callers pass finite positions */
}

static inline long long elec__coincident_cell(const elec__coincident_cells *c, int axis,
                                              double u) {
    const long long k = (long long)(u / c->side[axis]);
    return k < 0 ? 0 : k >= c->count[axis] ? c->count[axis] - 1 : k;
}

static inline void elec__coincident_cells_free(elec__coincident_cells *c) {
    ELEC_FREE(c->cell);
    ELEC_FREE(c->head);
    ELEC_FREE(c->next);
}

static inline elec_status elec__coincident_cells_build(elec__coincident_cells *c,
                                                       const double *x, size_t n,
                                                       const double length[3],
                                                       elec_error *err) {
    size_t slots = 1, i, s;
    int axis;
    memset(c, 0, sizeof *c);
    for (axis = 0; axis < 3; axis++) {
        /* at most 2^40 cells an axis: past that s grows */
        const double cells = floor(length[axis] / (16.0 * ELEC_COINCIDENT_DISTANCE));
        c->count[axis] = cells < 1.0 ? 1 : cells > 1099511627776.0 ? 1099511627776LL
                                                                      : (long long)cells;
        c->side[axis] = length[axis] / (double)c->count[axis];
    }
    while (slots < 2 * n) slots *= 2;
    c->mask = slots - 1;
    c->cell = (long long *)ELEC_MALLOC(3 * n * sizeof *c->cell);
    c->head = (size_t *)ELEC_MALLOC(slots * sizeof *c->head);
    c->next = (size_t *)ELEC_MALLOC(n * sizeof *c->next);
    if (!c->cell || !c->head || !c->next) {
        elec__coincident_cells_free(c);
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                          "no memory for the coincident search of %zu atoms", n);
    }
    for (s = 0; s < slots; s++) c->head[s] = n;
    for (i = 0; i < n; i++) {
        size_t slot;
        for (axis = 0; axis < 3; axis++)
            c->cell[3 * i + axis] = elec__coincident_cell(
                c, axis, elec__coincident_wrap(x[3 * i + axis], length[axis]));
        slot = elec__coincident_hash(c, c->cell + 3 * i);
        c->next[i] = c->head[slot];
        c->head[slot] = i;
    }
    return ELEC_OK;
}

/* The distinct cells along an axis that may hold a partner of an atom at u
   in cell k: k, and k - 1 or k + 1 (modulo the count) where u lies within
   the distance (and a rounding margin) of the face it shares with k. */
static inline int elec__coincident_neighbours(const elec__coincident_cells *c, int axis,
                                              long long k, double u, long long out[3]) {
    const double reach = 1.001 * ELEC_COINCIDENT_DISTANCE, side = c->side[axis];
    const long long count = c->count[axis];
    int used = 1, d, e;
    out[0] = k;
    for (d = -1; d <= 1; d += 2) {
        long long m = k + d;
        int seen = 0;
        if (d < 0 ? u - (double)k * side >= reach : (double)(k + 1) * side - u >= reach)
            continue;
        m = m < 0 ? m + count : m >= count ? m - count : m;
        for (e = 0; e < used; e++) seen |= out[e] == m;
        if (!seen) out[used++] = m;
    }
    return used;
}

static inline elec_status elec__periodic_coincident(const double *x, size_t n,
                                                    const double length[3], size_t count,
                                                    const size_t *keys, elec_error *err) {
    const double limit = ELEC_COINCIDENT_DISTANCE;
    elec__coincident_cells c;
    size_t i;
    elec_status s;
    if (n < 2) return ELEC_OK;
    if ((s = elec__coincident_cells_build(&c, x, n, length, err)) != ELEC_OK) return s;
    for (i = 0; i < n; i++) {
        long long around[3][3], cell[3];
        int used[3], a, b, d, axis;
        for (axis = 0; axis < 3; axis++)
            used[axis] = elec__coincident_neighbours(
                &c, axis, c.cell[3 * i + axis],
                elec__coincident_wrap(x[3 * i + axis], length[axis]), around[axis]);
        for (d = 0; d < used[2]; d++)
            for (b = 0; b < used[1]; b++)
                for (a = 0; a < used[0]; a++) {
                    size_t j;
                    cell[0] = around[0][a];
                    cell[1] = around[1][b];
                    cell[2] = around[2][d];
                    for (j = c.head[elec__coincident_hash(&c, cell)]; j < n; j = c.next[j]) {
                        double r[3];
                        /* each pair once (j > i), and only atoms of this cell */
                        if (j <= i || c.cell[3 * j] != cell[0] ||
                            c.cell[3 * j + 1] != cell[1] || c.cell[3 * j + 2] != cell[2])
                            continue;
                        elec__ewald_nearest(x + 3 * i, x + 3 * j, length, r);
                        if (r[0] * r[0] + r[1] * r[1] + r[2] * r[2] < limit * limit &&
                            !elec__ewald_excluded(keys, count, i, j, n)) {
                            elec__coincident_cells_free(&c);
                            return elec__name_atoms(
                                elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                           "atoms %zu and %zu coincide (closer than %g A) "
                                           "and are not an excluded pair: their energy is "
                                           "infinite", i, j, limit),
                                err, i, j);
                        }
                    }
                }
    }
    elec__coincident_cells_free(&c);
    return ELEC_OK;
}



/* Whether v is finite, read from its bits (an exponent of all ones is
   inf or NaN): under -ffast-math or -ffinite-math-only the compiler may
   take v == v and v <= DBL_MAX as true, and the overflow checks then let
   charges of 1e200 e through as a DCS map of inf and a Coulomb energy of
   inf with ELEC_OK (an audit, gcc and clang); the bits hold under any
   flags.  elec__finite_float: the same for a float. */
static inline int elec__finite(double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return (bits & UINT64_C(0x7ff0000000000000)) != UINT64_C(0x7ff0000000000000);
}
static inline int elec__finite_float(float v) {
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    return (bits & UINT32_C(0x7f800000)) != UINT32_C(0x7f800000);
}

/* x wrapped into [0, period), as the periodic methods take positions; 0
   (x untouched) when it lies more than 1000 periods away, where wrapping
   starts to cost it its precision: such an atom is refused. */
static inline int elec__wrap(double *x, double period) {
    const double f = floor(*x / period);
    if (fabs(f) > 1000.0) return 0;
    *x -= period * f;
    if (*x >= period) *x -= period; /* rounding */
    return 1;
}

/* Where elec__atoms_pack writes the atoms: positions relative to a
   reference point (the centre of a lattice or of points: the float copies
   keep their precision there) or wrapped into a periodic box, in double
   and/or float, each array of its own stride (0 = packed): interleaved xyz
   has stride 3, float4 records x y z q stride 4 (elec__pack_float4).  A
   NULL array is not written. */
typedef struct elec__pack {
    const double *reference; /* subtracted from each position, or NULL    */
    const elec_box *box;     /* then: positions wrapped into [0, L)        */
    double *x, *y, *z, *charge, *radius;
    size_t stride, charge_stride, radius_stride;
    float *fx, *fy, *fz, *fcharge, *fradius;
    size_t fstride, fcharge_stride, fradius_stride;
} elec__pack;

/* Float4 records (x, y, z, q) at xyzq. */
static inline void elec__pack_float4(elec__pack *to, float *xyzq) {
    to->fx = xyzq;
    to->fy = xyzq + 1;
    to->fz = xyzq + 2;
    to->fcharge = xyzq + 3;
    to->fstride = to->fcharge_stride = 4;
}

/* Interleaved double positions xyz (3 per atom) and charges q (either may
   be NULL). */
static inline void elec__pack_xyz(elec__pack *to, double *xyz, double *q) {
    to->x = xyz;
    to->y = xyz ? xyz + 1 : NULL;
    to->z = xyz ? xyz + 2 : NULL;
    to->stride = 3;
    to->charge = q;
}

/* The one packer of atoms: every path copies the caller's view through it
   (in double; the float copies are rounded from the doubles), so that a
   wrap and its refusal are written once.  ELEC_ERR_INVALID_ARG names an
   atom more than 1000 box lengths outside the box. */
static inline elec_status elec__atoms_pack(const elec_atoms *atoms, const elec__pack *to,
                                           elec_error *err) {
    const size_t s = to->stride ? to->stride : 1;
    const size_t cs = to->charge_stride ? to->charge_stride : 1;
    const size_t rs = to->radius_stride ? to->radius_stride : 1;
    const size_t fs = to->fstride ? to->fstride : 1;
    const size_t fcs = to->fcharge_stride ? to->fcharge_stride : 1;
    const size_t frs = to->fradius_stride ? to->fradius_stride : 1;
    size_t i;
    int axis;
    for (i = 0; i < atoms->count; i++) {
        double p[3], q, r;
        elec_atoms_get(atoms, i, p, &q, &r);
        for (axis = 0; axis < 3; axis++) {
            if (to->reference) p[axis] -= to->reference[axis];
            if (to->box) {
                if (!elec__wrap(&p[axis], to->box->length[axis]))
                    return elec__name_atoms(
                        elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                   "atom %zu lies %.15g box lengths outside the box along axis "
                                   "%d", i, fabs(floor(p[axis] / to->box->length[axis])), axis),
                        err, i, ELEC_NO_ATOM);
            }
        }
        if (to->x) to->x[s * i] = p[0];
        if (to->y) to->y[s * i] = p[1];
        if (to->z) to->z[s * i] = p[2];
        if (to->charge) to->charge[cs * i] = q;
        if (to->radius) to->radius[rs * i] = r;
        if (to->fx) to->fx[fs * i] = (float)p[0];
        if (to->fy) to->fy[fs * i] = (float)p[1];
        if (to->fz) to->fz[fs * i] = (float)p[2];
        if (to->fcharge) to->fcharge[fcs * i] = (float)q;
        if (to->fradius) to->fradius[frs * i] = (float)r;
    }
    return ELEC_OK;
}

/* The atoms, gathered from the caller's strided view into packed arrays,
   translated so that coordinates are relative to a reference point (the
   centre of the lattice, or of the points' bounding box; of each box of
   them where they span more than ELEC__FLOAT_REGION).  Float copies are made from the
   translated doubles: the float coordinates stay small, so a float keeps
   about 1e-6 A of precision across an ordinary map.  (The centre rather
   than the origin halves the largest coordinate, and with it the rounding
   error of a float distance to a nearby atom, the float path's largest.)
   The CPU's maps work on them, and so do the direct sums in double
   (elec_cpu_coulomb_energy, and the MSM force check of both sides:
   elec__msm_energy_checked), relative to the origin. */
typedef struct elec__packed_atoms {
    size_t count;
    double *x, *y, *z, *charge, *radius;
    float *fx, *fy, *fz, *fcharge, *fradius;
    /* MDH: charge / (1 + kappa sigma), the factor of seed 000 eq. 2 that
       does not depend on the distance (float path only). */
    float *fscreened;
    void *block; /* the one allocation all arrays above live in */
} elec__packed_atoms;

static inline void elec__packed_atoms_free(elec__packed_atoms *p) {
    ELEC_FREE(p->block);
    p->block = NULL;
}

static inline elec_status elec__packed_atoms_pack(const elec_atoms *atoms,
                                                  const double reference[3], double kappa,
                                                  elec__packed_atoms *p, elec_error *err) {
    size_t n = atoms->count, i;
    char *mem;
    memset(p, 0, sizeof *p);
    p->count = n;
    if (n == 0) return ELEC_OK;
    if (n > SIZE_MAX / (5 * sizeof(double) + 6 * sizeof(float)))
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                          "%zu atoms do not fit in memory", n);
    p->block = ELEC_MALLOC(n * (5 * sizeof(double) + 6 * sizeof(float)));
    if (!p->block)
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                          "no memory for %zu packed atoms", n);
    mem = (char *)p->block;
    p->x = (double *)mem;
    p->y = p->x + n;
    p->z = p->y + n;
    p->charge = p->z + n;
    p->radius = p->charge + n;
    p->fx = (float *)(p->radius + n);
    p->fy = p->fx + n;
    p->fz = p->fy + n;
    p->fcharge = p->fz + n;
    p->fradius = p->fcharge + n;
    p->fscreened = p->fradius + n;
    {
        elec__pack to;
        memset(&to, 0, sizeof to);
        to.reference = reference;
        to.x = p->x;
        to.y = p->y;
        to.z = p->z;
        to.charge = p->charge;
        to.radius = p->radius;
        to.fx = p->fx;
        to.fy = p->fy;
        to.fz = p->fz;
        to.fcharge = p->fcharge;
        to.fradius = p->fradius;
        elec__atoms_pack(atoms, &to, NULL); /* relative: nothing to refuse */
    }
    for (i = 0; i < n; i++)
        p->fscreened[i] = (float)(p->charge[i] / (1.0 + kappa * p->radius[i]));
    return ELEC_OK;
}

/* Atom i's row of the direct sum: its energy with every other atom,
   q_i sum_{j != i} q_j / r_ij, and where f is not NULL its force
   scale q_i sum_j q_j (x_i - x_j) / r_ij^3.  *coincident is the first
   j > i closer than ELEC_COINCIDENT_DISTANCE, or i where none is.  The
   loop has no branch (atom i itself, at r = 0, and any coincident atom
   weigh 0). */
static inline double elec__coulomb_row(const elec__packed_atoms *a, size_t i, double scale,
                                       double *f, size_t *coincident) {
    const double limit2 = ELEC_COINCIDENT_DISTANCE * ELEC_COINCIDENT_DISTANCE;
    const double xi = a->x[i], yi = a->y[i], zi = a->z[i];
    double sum = 0.0, gx = 0.0, gy = 0.0, gz = 0.0;
    size_t j, near = 0;
    for (j = 0; j < a->count; j++) {
        const double dx = xi - a->x[j], dy = yi - a->y[j], dz = zi - a->z[j];
        const double r2 = dx * dx + dy * dy + dz * dz;
        const double inv = r2 >= limit2 ? 1.0 / sqrt(r2) : 0.0;
        const double qinv = a->charge[j] * inv, qinv3 = qinv * inv * inv;
        near += r2 < limit2;
        sum += qinv;
        gx += qinv3 * dx;
        gy += qinv3 * dy;
        gz += qinv3 * dz;
    }
    *coincident = i;
    for (j = i + 1; near > 1 && j < a->count; j++) { /* atom i itself is one */
        const double dx = xi - a->x[j], dy = yi - a->y[j], dz = zi - a->z[j];
        if (dx * dx + dy * dy + dz * dz < limit2) {
            *coincident = j;
            break;
        }
    }
    if (f) {
        f[0] = scale * a->charge[i] * gx;
        f[1] = scale * a->charge[i] * gy;
        f[2] = scale * a->charge[i] * gz;
    }
    return a->charge[i] * sum;
}

/* ---- >>mdh */

/* Whether an MDH sum stays finite in a type whose largest value is
   max_value (FLT_MAX for the float paths, CPU and GPU; DBL_MAX for the
   double reference), checked before any work.  A term is q e^(kappa
   (sigma - r)) / ((1 + kappa sigma) r) (seed 000 eq. 2) and the coincident
   rule keeps r >= ELEC_COINCIDENT_DISTANCE, so |term| <= |q| e^(kappa
   sigma) / ((1 + kappa sigma) ELEC_COINCIDENT_DISTANCE); the exponential is
   formed first, so e^(kappa sigma) itself must be finite too.  Refused,
   with the atom that breaks it, when the exponential, the sum of these
   bounds (as the kernels add it, before the scale) or scale times it could
   pass max_value / 2 (room for the float rounding of the kernels).  In log space, so that the check
   cannot overflow itself.  Only absurd screening trips it: at 10 M salt
   (kappa ~1 /A) and radii of 3 A a sum of 10^9 unit charges stays 10^20
   below float's range. */
static inline elec_status elec__mdh_range_check(const elec_atoms *atoms,
                                                const elec_mdh_params *resolved,
                                                double max_value,
                                                elec_error *err) {
    const double kappa = resolved->kappa, room = log(max_value / 2.0);
    const double log_r = log(ELEC_COINCIDENT_DISTANCE);
    double largest = -HUGE_VAL, sum = 0.0; /* sum of e^(L_j - largest) */
    size_t j, worst = 0;
    for (j = 0; j < atoms->count; j++) {
        double q, sigma, ks, term;
        elec_atoms_get(atoms, j, NULL, &q, &sigma);
        ks = kappa * sigma;
        if (ks > room)
            return elec__name_atoms(
                elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                           "MDH: kappa %g /A times atom %zu's radius %g A is %g: e^%g is "
                           "beyond the range of the result (the Debye length would be %.3g A)",
                           kappa, j, sigma, ks, ks, 1.0 / kappa),
                err, j, ELEC_NO_ATOM);
        if (q == 0.0) continue;
        term = log(fabs(q)) + ks - log1p(ks) - log_r;
        if (term > largest) {
            sum = sum * exp(largest - term) + 1.0;
            largest = term;
            worst = j;
        } else {
            sum += exp(term - largest);
        }
    }
    if (sum > 0.0) {
        /* the sum as the kernels add it (unscaled, in float on the GPU),
           and scaled */
        double unscaled = largest + log(sum);
        double bound = unscaled + log(fabs(resolved->scale));
        if (unscaled > bound) bound = unscaled;
        if (bound > room) {
            double q, sigma;
            elec_atoms_get(atoms, worst, NULL, &q, &sigma);
            return elec__name_atoms(
                elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                           "MDH: with kappa %g /A the potential could reach e^%.0f, beyond "
                           "the range of the result (atom %zu: charge %g, radius %g A)",
                           kappa, bound, worst, q, sigma),
                err, worst, ELEC_NO_ATOM);
        }
    }
    return ELEC_OK;
}

/* ---- >>msm */

/* The lattices of a non-periodic MSM hierarchy (elec_cpu.h, elec_cuda.cuh)
   over the region lo..hi (coordinates relative to a reference point) that
   holds every atom and every point the potential is wanted at: level l has
   points lo[l] .. lo[l] + n[l] - 1 per axis at spacing h 2^l, point m at
   m h 2^l from the reference.  Level 0 covers each position's basis
   support with a point to spare each way (a position that rounds across a
   lattice line still finds its points), each coarser level the restriction
   stencils of the one below, until a lattice has at most max_top_points
   points or stops shrinking: that one is the top, summed directly (or,
   given levels > 0, until there are that many: elec__msm_anchor). */
typedef struct elec__msm_shape {
    long lo[ELEC_MSM_MAX_LEVELS][3];
    int n[ELEC_MSM_MAX_LEVELS][3];
    int levels;
} elec__msm_shape;

static inline size_t elec__msm_shape_points(const elec__msm_shape *s, int level) {
    return (size_t)s->n[level][0] * (size_t)s->n[level][1] * (size_t)s->n[level][2];
}

static inline long elec__floor_div(long a, long b) {
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* The lattice sums' work, refused past max_work kernel values
   (ELEC__MSM_MAX_WORK_CPU, hours on a CPU; ELEC__MSM_MAX_WORK_GPU, minutes
   on an H200, which sums about 2.6e12 a second): below the top each point
   sums the points within 2a/h of it on its level (the stencil clipped to
   the lattice), and the top sums every pair of its points.  Each limit
   alone let such work through: a / h = 64 with the nonic basis took 39 s
   for two atoms 10 A apart and ran past two minutes at 20 A, and
   max_top_points = INT_MAX summed a top of millions of points pair by
   pair. */
#define ELEC__MSM_MAX_WORK_CPU 1e13
#define ELEC__MSM_MAX_WORK_GPU 1e15
static inline elec_status elec__msm_work_check(const elec_msm_params *p,
                                               const elec__msm_shape *shape, double max_work,
                                               elec_error *err) {
    const double side = 2.0 * ceil(2.0 * p->cutoff / p->spacing) + 1.0;
    const int top = shape->levels - 1;
    const double top_points = (double)elec__msm_shape_points(shape, top);
    double below = 0.0;
    int l, axis;
    for (l = 0; l < top; l++) {
        double values = (double)elec__msm_shape_points(shape, l);
        for (axis = 0; axis < 3; axis++) values *= fmin(side, (double)shape->n[l][axis]);
        below += values;
    }
    if (below + top_points * top_points > max_work) {
        char remedy[96];
        /* a choice the tolerance made: the tolerance is what to change */
        if (p->tolerance > 0.0)
            snprintf(remedy, sizeof remedy, "a looser tolerance than %g (it chose h %g, a %g)",
                     p->tolerance, p->spacing, p->cutoff);
        else
            snprintf(remedy, sizeof remedy, "a coarser spacing, a smaller cutoff or "
                                            "max_top_points");
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "MSM's lattice sums would take %.3g kernel values (%.3g below the "
                          "top, %.3g at its %.0f points), over %.0e: %s",
                          below + top_points * top_points, below, top_points * top_points,
                          top_points, max_work, remedy);
    }
    return ELEC_OK;
}

static inline elec_status elec__msm_shape_of(const elec_msm_params *p,
                                             const double lo[3],
                                             const double hi[3], int levels,
                                             double max_work, elec__msm_shape *shape,
                                             elec_error *err) {
    const int s = elec_msm_support((int)p->interpolation);
    long first[3], last[3];
    int axis, l;
    memset(shape, 0, sizeof *shape);
    for (axis = 0; axis < 3; axis++) {
        /* the region in lattice points, bounded before any cast (NaN too:
           each test is written to hold only for a number in range) */
        if (!((hi[axis] - lo[axis]) / p->spacing <= 1048576.0) ||
            !(fabs(lo[axis]) / p->spacing <= 1e9) || !(fabs(hi[axis]) / p->spacing <= 1e9))
            return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                              "atoms and points span %g A along axis %d: over "
                              "2^20 MSM lattice points at %g A", hi[axis] - lo[axis],
                              axis, p->spacing);
        first[axis] = (long)floor(lo[axis] / p->spacing) - s;
        last[axis] = (long)floor(hi[axis] / p->spacing) + s + 1;
    }
    /* A few atoms far from the rest would stretch the finest lattice over
       empty space (and a lattice-cutoff pass over it): refused with the
       reason rather than attempted with gigabytes. */
    if ((double)(last[0] - first[0] + 1) * (double)(last[1] - first[1] + 1) *
            (double)(last[2] - first[2] + 1) > ELEC_MSM_MAX_POINTS)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "atoms and points span %g x %g x %g A: over %.0f MSM "
                          "lattice points at %g A (far-away atoms? use DCS, or a "
                          "coarser spacing)", hi[0] - lo[0], hi[1] - lo[1],
                          hi[2] - lo[2], ELEC_MSM_MAX_POINTS, p->spacing);
    for (l = 0; l < ELEC_MSM_MAX_LEVELS; l++) {
        size_t count;
        for (axis = 0; axis < 3; axis++) {
            shape->lo[l][axis] = first[axis];
            shape->n[l][axis] = (int)(last[axis] - first[axis] + 1);
        }
        shape->levels = l + 1;
        count = elec__msm_shape_points(shape, l);
        if (levels > 0 ? shape->levels == levels : count <= (size_t)p->max_top_points) break;
        for (axis = 0; axis < 3; axis++) {
            first[axis] = elec__floor_div(first[axis], 2) - s;
            last[axis] = -elec__floor_div(-last[axis], 2) + s;
        }
        if (levels == 0 && (size_t)(last[0] - first[0] + 1) * (size_t)(last[1] - first[1] + 1) *
                                   (size_t)(last[2] - first[2] + 1) >= count)
            break; /* no longer shrinking: this one is the top */
    }
    return elec__msm_work_check(p, shape, max_work, err);
}

/* Where a non-periodic hierarchy for atoms within lo .. hi is laid: the
   reference its level l points stand from (reference + m 2^l h), and how
   many levels it has (returned; 0 where the atoms' extent is refused, the
   call then saying why).  The levels are those the atoms' box would have
   about its own centre, so that they depend on the atoms' extent alone;
   the reference is that centre moved to the nearest multiple of the top
   level's spacing.  The lattices themselves cover the atoms' box and the
   reference (points beyond the box hold no charge and change nothing).
   With the levels fixed, as the atoms move the lattices stand still in
   space (the reference moves only by whole top-level spacings, which lays
   every level onto itself): the energy is a smooth function of the
   positions, and the forces its gradient, until the extent passes a
   threshold of max_top_points.  Laid from the centre itself, the lattices
   moved with the outermost atoms, whose forces then missed -dE/dr by up to
   12 times their error against the exact sum (an audit: 200 ions, the
   defaults); with the levels counted over the atoms' box about the moved
   reference, a translation could change them (a review: 2 to 3 for 40
   ions moved 0.01 A); over a region widened by half the top spacing each
   way, ApoA1-size's top level grew from 13 x 13 x 13 points to 15 x 15 x 13
   (its direct sum 1.8 times the pairs). */
static inline int elec__msm_anchor(const elec_msm_params *p, const double lo[3],
                                   const double hi[3], double reference[3]) {
    elec__msm_shape shape;
    elec_error ignored;
    double half_lo[3], half_hi[3], top;
    int axis;
    for (axis = 0; axis < 3; axis++) {
        reference[axis] = 0.5 * (lo[axis] + hi[axis]);
        half_hi[axis] = 0.5 * (hi[axis] - lo[axis]);
        half_lo[axis] = -half_hi[axis];
    }
    if (elec__msm_shape_of(p, half_lo, half_hi, 0, HUGE_VAL, &shape, &ignored) != ELEC_OK)
        return 0;
    top = p->spacing * ldexp(1.0, shape.levels - 1);
    for (axis = 0; axis < 3; axis++) reference[axis] = top * floor(reference[axis] / top + 0.5);
    return shape.levels;
}

/* The arrays of an elec_msm_lattices for a shape and count atoms (its
   levels, lo, n and first filled, the values zeroed). */
static inline elec_status elec__msm_lattices_alloc(const elec__msm_shape *shape, size_t count,
                                                   elec_msm_lattices *out, elec_error *err) {
    size_t points = 0, doubles;
    int l, axis;
    memset(out, 0, sizeof *out);
    out->levels = shape->levels;
    for (l = 0; l < shape->levels; l++) {
        for (axis = 0; axis < 3; axis++) {
            out->lo[l][axis] = shape->lo[l][axis];
            out->n[l][axis] = shape->n[l][axis];
        }
        out->first[l] = points;
        points += elec__msm_shape_points(shape, l);
    }
    out->first[shape->levels] = points;
    out->atom_count = count;
    doubles = 3 * points + 4 * count;
    out->block = ELEC_MALLOC((doubles + 1) * sizeof(double));
    if (!out->block)
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                          "no memory for the lattices of %zu points", points);
    memset(out->block, 0, (doubles + 1) * sizeof(double));
    out->q = (double *)out->block;
    out->cutoff = out->q + points;
    out->e = out->cutoff + points;
    out->phi = out->e + points;
    out->grad = out->phi + count;
    return ELEC_OK;
}

/* Excluded pairs are for the periodic energies: the other MSM calls
   refuse them rather than leave them in. */
static inline elec_status elec__msm_no_exclusions(const elec_msm_params *p, elec_error *err) {
    if (p->excluded_pair_count == 0) return ELEC_OK;
    return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                      "%zu excluded pairs: only the periodic MSM energies take them "
                      "(elec_cpu_msm_periodic_energy, elec_cuda_msm_periodic_create)",
                      p->excluded_pair_count);
}

/* Non-periodic MSM forces under a tolerance, checked on the atoms.  The
   choice reads no atoms (elec_msm_params_resolve: the measured table, of
   random charges and water), and forces it does not speak for err more:
   few or dilute ions, whose forces come from the lattices alone, and
   forces that nearly cancel.  Two ions 80 A apart erred 28 times the
   tolerance at 1e-3 (9 at 1e-4, 6 at 1e-5), eight ions in a 60 A cube up
   to 8 times, 32 in it 3, 128 in a 100 A cube 1.4, a line of 100
   alternating ions 10 A apart 15 to 20 (CPU, bench/RESULTS.md,
   2026-12-06, 08:36 UTC on).  So where a tolerance chooses (a and h not
   both given) and forces are asked for, the call's forces on a sample of
   the atoms (ELEC__MSM_FORCE_SAMPLE of them, spread evenly through the
   list; every atom where there are no more) are compared with their
   direct sums (elec__msm_sample_force_error): where their relative RMS
   error passes the tolerance (half of it where the sample is not every
   atom, for the sample's own spread) the call is made again aiming
   lower by that much and half again (down to the least the call takes),
   at most ELEC__MSM_FORCE_TRIES more times.  On the cases above every
   call then met its tolerance (0.13 to 0.7 of it), after one to five more
   calls; random charges at the table's density (1,000 in a 24 A cube)
   met it the first time (a sample's error 0.24 to 0.38 of the
   tolerance).  The direct sums cost 64 pair terms an atom (the sample's
   rows of elec_cpu_coulomb_energy, a sample atom a thread) and a packed
   copy of the atoms: 21 ms for 92,224 atoms on one core of the build
   machine (against 12 ms for the GPU's whole evaluation at that size,
   1.5 s for the CPU's). */
#define ELEC__MSM_FORCE_SAMPLE 64
#define ELEC__MSM_FORCE_TRIES 5
typedef elec_status (*elec__msm_energy_call)(const elec_atoms *atoms,
                                             const elec_msm_params *params, double *energy,
                                             double *forces, elec_error *err);

/* The relative RMS error of forces (3 a atom, scale applied) against the
   direct Coulomb sum, over a sample of at most ELEC__MSM_FORCE_SAMPLE of
   the packed atoms (atom k n / m for k < m): sqrt(sum |F - F_exact|^2 /
   sum |F_exact|^2); 0 where their exact forces all vanish (a relative
   error then means nothing).  Each sample atom's exact force is its row
   of the direct sum (elec__coulomb_row, as elec_cpu_coulomb_energy sums
   it: pairs closer than ELEC_COINCIDENT_DISTANCE weigh 0, as the MSM
   calls leave them). */
static inline double elec__msm_sample_force_error(const elec__packed_atoms *packed,
                                                  double scale, const double *forces) {
    const size_t n = packed->count, m = n < ELEC__MSM_FORCE_SAMPLE ? n : ELEC__MSM_FORCE_SAMPLE;
    double num_of[ELEC__MSM_FORCE_SAMPLE], den_of[ELEC__MSM_FORCE_SAMPLE];
    double num = 0.0, den = 0.0;
    long long kk;
    size_t k;
    /* a sample atom a thread, and the atoms' shares added in sample
       order: the same bits at any thread count */
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic)
#endif
    for (kk = 0; kk < (long long)m; kk++) {
        const size_t i = (size_t)kk * n / m;
        double exact[3];
        size_t coincident;
        int axis;
        elec__coulomb_row(packed, i, scale, exact, &coincident);
        num_of[kk] = den_of[kk] = 0.0;
        for (axis = 0; axis < 3; axis++) {
            const double e = forces[3 * i + axis] - exact[axis];
            num_of[kk] += e * e;
            den_of[kk] += exact[axis] * exact[axis];
        }
    }
    for (k = 0; k < m; k++) {
        num += num_of[k];
        den += den_of[k];
    }
    return den > 0.0 ? sqrt(num / den) : 0.0;
}

/* An MSM energy call (call: one evaluation, elec_cpu.h's or
   elec_cuda.cuh's) with its forces checked against the tolerance as
   above; floor: the least tolerance the call takes (the table's, or the
   GPU's float floor).  ELEC_ERR_UNSUPPORTED, naming what the sample
   measured, where no call brought the forces under the tolerance;
   ELEC_ERR_NO_MEMORY where the atoms cannot be packed for the direct
   sums (packed once, relative to the origin, for every try).  A
   refusal leaves the forces zeroed. */
static inline elec_status elec__msm_energy_checked(elec__msm_energy_call call,
                                                   const elec_atoms *atoms,
                                                   const elec_msm_params *params,
                                                   double *energy, double *forces, double floor,
                                                   elec_error *err) {
    const double origin[3] = {0.0, 0.0, 0.0};
    elec_msm_params resolved, ask, last;
    elec__packed_atoms packed;
    double error = 0.0, target;
    elec_status s = call(atoms, params, energy, forces, err);
    int tries;
    if (s != ELEC_OK || !forces || !params || !(params->tolerance > 0.0) ||
        (params->cutoff > 0.0 && params->spacing > 0.0) || atoms->count < 2)
        return s;
    if ((s = elec_msm_params_resolve(params, 1.0, &resolved, err)) != ELEC_OK) return s;
    if ((s = elec__packed_atoms_pack(atoms, origin, 0.0, &packed, err)) != ELEC_OK) {
        memset(forces, 0, 3 * atoms->count * sizeof *forces);
        return s;
    }
    target = params->tolerance * (atoms->count > ELEC__MSM_FORCE_SAMPLE ? 0.5 : 1.0);
    ask = last = *params; /* last: the choice the forces are now from */
    for (tries = 0;; tries++) {
        error = elec__msm_sample_force_error(&packed, resolved.scale, forces);
        if (error <= target) goto done; /* s == ELEC_OK */
        if (tries == ELEC__MSM_FORCE_TRIES || ask.tolerance <= floor) break;
        /* lower by the excess and half again; the floor itself once */
        ask.tolerance *= 0.5 * target / error;
        if (ask.tolerance < floor) ask.tolerance = floor;
        /* out of the table's reach (refused by name for the asked
           tolerance, its forces zeroed): the last choice's forces again
           where they met the tolerance, else this function's refusal */
        if ((s = call(atoms, &ask, energy, forces, err)) == ELEC_ERR_UNSUPPORTED) {
            if (error <= params->tolerance) {
                s = call(atoms, &last, energy, forces, err);
                goto done;
            }
            break;
        }
        if (s != ELEC_OK) goto done;
        last = ask;
    }
    if (error <= params->tolerance) goto done; /* met, if without the sample's margin */
    memset(forces, 0, 3 * atoms->count * sizeof *forces); /* a refusal leaves none */
    s = elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                   "MSM tolerance %g: these atoms' forces erred %.3g times it on %zu of "
                   "them against their direct sums, and no choice aimed down to %g (the "
                   "least this call takes: %g) brought them under it; few, dilute or "
                   "nearly cancelling forces: DCS or Ewald",
                   params->tolerance, error / params->tolerance,
                   atoms->count < ELEC__MSM_FORCE_SAMPLE ? atoms->count
                                                         : (size_t)ELEC__MSM_FORCE_SAMPLE,
                   ask.tolerance, floor);
done:
    elec__packed_atoms_free(&packed);
    return s;
}

/* The periodic hierarchy (elec_cpu_msm_periodic_energy, the GPU's periodic
   MSM handle): 1/r = [1/r - g_0] + K_0 + ... + K_{L-1} + g_L summed over
   every image, g_l(r) = gamma(r/a_l)/a_l, a_l = 2^l a, and the lattice
   kernel K_l = g_l - g_{l+1}, zero from 2 a_l on.  The finest lattice has
   2^k_d points along axis d (the smallest with L_d / 2^k_d <= h); level l
   has n_d >> l (at least 1) points at spacing L_d / n, indices modulo n;
   levels = the largest k_d, the lattice after the last being one point:
   the top, the constant elec__pmsm_top_constant.  Level l's stencil of K_l
   covers offsets first .. first + width - 1 per axis; along an axis where
   the kernel's reach is wider than the lattice the offsets are folded
   modulo n (first 0, width n), which sums the periodic images. */
typedef struct elec__pmsm_shape {
    int levels;
    int n[ELEC_MSM_MAX_LEVELS][3];
    double h[ELEC_MSM_MAX_LEVELS][3];
    long stencil_first[ELEC_MSM_MAX_LEVELS][3];
    int stencil_width[ELEC_MSM_MAX_LEVELS][3];
} elec__pmsm_shape;

/* The most points one axis of the finest lattice may have, the most one
   lattice may have, and the most kernel values all stencils together may
   take (a cube at cutoff / spacing 64 takes 2e7; only a box far longer
   along one axis than the others, whose short axes' stencils widen with
   the cutoff level after level, comes near). */
#define ELEC__PMSM_MAX_AXIS_POINTS 65536.0
#define ELEC__PMSM_MAX_POINTS ((size_t)1 << 27)
#define ELEC__PMSM_MAX_STENCIL 1e8
/* The largest cutoff in box lengths: 33^3 images an atom at most. */
#define ELEC__PMSM_MAX_CUTOFF_BOXES 16.0

static inline long elec__pmsm_wrap(long i, long n) {
    long r = i % n;
    return r < 0 ? r + n : r;
}

static inline size_t elec__pmsm_shape_points(const elec__pmsm_shape *s, int level) {
    return (size_t)s->n[level][0] * (size_t)s->n[level][1] * (size_t)s->n[level][2];
}

static inline size_t elec__pmsm_stencil_points(const elec__pmsm_shape *s, int level) {
    return (size_t)s->stencil_width[level][0] * (size_t)s->stencil_width[level][1] *
           (size_t)s->stencil_width[level][2];
}

/* K_l(r) = gamma(r/a_l)/a_l - gamma(r/2a_l)/(2a_l), zero from r = 2 a_l
   on (there both terms are 1/r; taking the zero avoids their rounding). */
static inline double elec__pmsm_kernel(const elec_msm_params *p, int level, double r) {
    const double a = p->cutoff * (double)(1L << level);
    if (r >= 2.0 * a) return 0.0;
    return elec_msm_gamma(r / a, p->splitting) / a -
           elec_msm_gamma(r / (2.0 * a), p->splitting) / (2.0 * a);
}

/* The hierarchy's shape for resolved params in a checked box, refused
   (ELEC_ERR_UNSUPPORTED, with the reason) where its lattices or stencils
   would be too big. */
static inline elec_status elec__pmsm_shape_of(const elec_msm_params *p, const elec_box *box,
                                              elec__pmsm_shape *s, elec_error *err) {
    int finest[3], axis, l, most = 1;
    double evaluations = 0.0;
    memset(s, 0, sizeof *s);
    /* what the resolve's checks refuse (the tolerance's choice and its
       estimate call this before them) */
    if (!(p->spacing > 0.0) || !(p->cutoff > 0.0) || !elec__finite(p->cutoff) ||
        !(p->cutoff / p->spacing <= 64.0))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "MSM cutoff %g A and spacing %g A: both positive, a / h at most 64",
                          p->cutoff, p->spacing);
    for (axis = 0; axis < 3; axis++) {
        int n = 1;
        /* The short range sums every image within a of each atom: past a few
           box lengths that is (2 a / L + 1)^3 images an atom (a cutoff of
           64,000 A in a 10 A box ran for hours, 2e12 cells an atom). */
        if (!(p->cutoff <= ELEC__PMSM_MAX_CUTOFF_BOXES * box->length[axis]))
            return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                              "MSM cutoff %g A is over %g times box edge %d (%g A): the "
                              "short range would sum (2 a / L + 1)^3 images of each atom; "
                              "a smaller cutoff", p->cutoff, ELEC__PMSM_MAX_CUTOFF_BOXES, axis,
                              box->length[axis]);
        if (box->length[axis] / p->spacing > ELEC__PMSM_MAX_AXIS_POINTS)
            return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                              "box edge %d is %g A: over 2^16 periodic MSM lattice "
                              "points at %g A", axis, box->length[axis], p->spacing);
        while (box->length[axis] / n > p->spacing) n *= 2;
        finest[axis] = n;
        if (n > most) most = n;
    }
    if ((size_t)finest[0] * (size_t)finest[1] * (size_t)finest[2] > ELEC__PMSM_MAX_POINTS)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "periodic MSM lattice %d x %d x %d: over 2^27 points",
                          finest[0], finest[1], finest[2]);
    while ((1 << s->levels) < most) s->levels++;
    for (l = 0; l < s->levels; l++) {
        const double a = p->cutoff * (double)(1L << l);
        double kernel_values = 1.0;
        for (axis = 0; axis < 3; axis++) {
            double reach; /* in double: a box edge of 1e-200 A made it past long's range */
            s->n[l][axis] = finest[axis] >> l > 1 ? finest[axis] >> l : 1;
            s->h[l][axis] = box->length[axis] / s->n[l][axis];
            reach = ceil(2.0 * a / s->h[l][axis]);
            kernel_values *= 2.0 * reach + 1.0;
            if (!(2.0 * reach + 1.0 <= (double)s->n[l][axis])) {
                s->stencil_first[l][axis] = 0;
                s->stencil_width[l][axis] = s->n[l][axis];
            } else {
                s->stencil_first[l][axis] = -(int)reach;
                s->stencil_width[l][axis] = (int)(2.0 * reach + 1.0);
            }
        }
        evaluations += kernel_values;
    }
    if (evaluations > ELEC__PMSM_MAX_STENCIL) {
        const int levels = s->levels;
        s->levels = 0;
        /* the stencils' reach grows with cutoff x 2^level (past the box
           they wrap) and with the box's elongation (more levels): either
           can be the cause, so both are named */
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "periodic MSM: cutoff %g A in the box %g x %g x %g A makes "
                          "stencils of %.2g points over %d levels, past %.2g: a shorter "
                          "cutoff, or a less elongated box",
                          p->cutoff, box->length[0], box->length[1], box->length[2],
                          evaluations, levels, (double)ELEC__PMSM_MAX_STENCIL);
    }
    return ELEC_OK;
}

/* Level l's stencil K_l(|(dx h_x, dy h_y, dz h_z)|) for |d_axis| <= the
   reach ceil(2 a_l / h_axis), folded modulo n where the shape says so,
   into stencil (elec__pmsm_stencil_points values, x fastest, zeroed
   here); returns the values' total (the level's mean, for
   elec__pmsm_constant). */
static inline double elec__pmsm_stencil_fill(const elec_msm_params *p, const elec__pmsm_shape *s,
                                             int l, double *stencil) {
    const double a = p->cutoff * (double)(1L << l);
    const int *width = s->stencil_width[l];
    long reach[3], dx, dy, dz;
    double total = 0.0;
    int axis;
    memset(stencil, 0, elec__pmsm_stencil_points(s, l) * sizeof *stencil);
    for (axis = 0; axis < 3; axis++) reach[axis] = (long)ceil(2.0 * a / s->h[l][axis]);
    for (dz = -reach[2]; dz <= reach[2]; dz++)
        for (dy = -reach[1]; dy <= reach[1]; dy++)
            for (dx = -reach[0]; dx <= reach[0]; dx++) {
                const long d[3] = {dx, dy, dz};
                double r2 = 0.0, value;
                long slot[3];
                for (axis = 0; axis < 3; axis++) {
                    double along = (double)d[axis] * s->h[l][axis];
                    r2 += along * along;
                    /* a folded axis (first 0) adds image offsets together */
                    slot[axis] = s->stencil_first[l][axis] == 0
                                     ? elec__pmsm_wrap(d[axis], s->n[l][axis])
                                     : d[axis] - s->stencil_first[l][axis];
                }
                value = elec__pmsm_kernel(p, l, sqrt(r2));
                stencil[slot[0] + width[0] * (slot[1] + (long)width[1] * slot[2])] += value;
                total += value;
            }
    return total;
}

/* Level l's folded stencil (elec__pmsm_stencil_fill) wrapped onto its
   lattice, x fastest: wrapped[m] = the sum of the stencil at every offset
   congruent to m modulo n, so that the lattice cutoff is the circular
   convolution of the charges with it (the FFTs of the GPU handle and, with
   FFTW, of elec_cpu_msm_periodic_energy). */
static inline void elec__pmsm_wrap_stencil(const elec__pmsm_shape *s, int l,
                                           const double *stencil, double *wrapped) {
    const int *width = s->stencil_width[l], *n = s->n[l];
    long sx, sy, sz;
    memset(wrapped, 0, elec__pmsm_shape_points(s, l) * sizeof *wrapped);
    for (sz = 0; sz < width[2]; sz++)
        for (sy = 0; sy < width[1]; sy++)
            for (sx = 0; sx < width[0]; sx++) {
                const long mx = elec__pmsm_wrap(s->stencil_first[l][0] + sx, n[0]);
                const long my = elec__pmsm_wrap(s->stencil_first[l][1] + sy, n[1]);
                const long mz = elec__pmsm_wrap(s->stencil_first[l][2] + sz, n[2]);
                wrapped[mx + n[0] * (my + (long)n[1] * mz)] +=
                    stencil[sx + width[0] * (sy + (long)width[1] * sz)];
            }
}

/* The top: the smooth rest g_L(r) = gamma(r/a_L)/a_L summed over all
   images is, in the zero-mean (Ewald) convention, the constant
   C_L = -(1/V) int (1/r - g_L) d^3r = -(4 pi a_L^2 / V) int_0^1 (rho -
   rho^2 gamma(rho)) d rho, the integrand vanishing from rho = 1 on.
   gamma is a polynomial below 1: composite Simpson with 2000 intervals
   is exact to rounding for the low orders and far below MSM's error for
   the rest.  (Ewald's background term is this constant's erfc analogue.)
   The top's share of the energy is C_L Q^2 / 2 for a total charge Q. */
static inline double elec__pmsm_top_constant(double a_top, double volume, int splitting) {
    const int intervals = 2000;
    const double step = 1.0 / intervals;
    double sum = 0.0;
    int k;
    for (k = 0; k <= intervals; k++) {
        const double rho = k * step;
        const double weight = (k == 0 || k == intervals) ? 1.0 : (k % 2 ? 4.0 : 2.0);
        sum += weight * (rho - rho * rho * elec_msm_gamma(rho, splitting));
    }
    return -4.0 * 3.14159265358979323846 * a_top * a_top * (sum * step / 3.0) / volume;
}

/* The constant the periodic hierarchy adds to every atom's potential per
   unit of total charge: the top's C_L (elec__pmsm_top_constant), less each
   level's error in the mean (level_sums: each level's stencil total, as
   elec__pmsm_stencil_fill returns it). A lattice
   passes on its kernel's k = 0 part as h_x h_y h_z sum_d K_l(d h), where
   the exact part is int K_l d^3r = V (C(a_l) - C(2 a_l)) (K_l = g_l -
   g_{l+1}, C as the top's); the anterpolation keeps the total charge and
   the interpolation reproduces a constant, so a net charge Qnet shifts
   every potential by Qnet / V times the difference. Without it, 2,000
   charges of +1 in a 40 A box at tolerance 1e-3 erred 9.1 times the
   energy's estimate, and their potentials 1.28 times a tolerance of 1e-2
   (an audit). */
static inline double elec__pmsm_constant(const elec_msm_params *p, const elec__pmsm_shape *s,
                                         const double *level_sums, double volume) {
    double constant =
        elec__pmsm_top_constant(p->cutoff * (double)(1L << s->levels), volume, p->splitting);
    int l;
    for (l = 0; l < s->levels; l++) {
        const double a = p->cutoff * (double)(1L << l);
        const double cell = s->h[l][0] * s->h[l][1] * s->h[l][2];
        const double exact = volume * (elec__pmsm_top_constant(a, volume, p->splitting) -
                                       elec__pmsm_top_constant(2.0 * a, volume, p->splitting));
        constant -= (cell * level_sums[l] - exact) / volume;
    }
    return constant;
}

/* ---- >>alpb what the CPU and GPU ALPB calls share */

/* v's direction as a unit vector, v scaled by its largest component
   first, so that a finite normal of any length has one (an audit found
   1e200 and 1e-170 refused as "zero or not finite", their squares past
   double's range, and 1e-310 turned into an infinite point by a shift
   over its length); 0 where v is zero or not finite. */
static inline int elec__direction3(const double *v, double unit[3]) {
    double largest = 0.0, length;
    int a;
    for (a = 0; a < 3; a++) {
        if (!elec__finite(v[a])) return 0;
        if (fabs(v[a]) > largest) largest = fabs(v[a]);
    }
    if (largest == 0.0) return 0;
    for (a = 0; a < 3; a++) unit[a] = v[a] / largest;
    length = sqrt(unit[0] * unit[0] + unit[1] * unit[1] + unit[2] * unit[2]);
    for (a = 0; a < 3; a++) unit[a] /= length;
    return 1;
}

/* Resolves the params and checks the vertices (finite) and normals
   (finite and not zero, scaled to unit length where used; required where
   the potential is taken off the vertex, p != 0, or where salt needs
   P' = v + s n).  Where lo is not NULL, the vertices' box comes back in
   lo and hi from the same pass (the GPU's reference point). */
static inline elec_status elec__alpb_prepare(const elec_hcp *hcp, const double *vertices,
                                             const double *normals, size_t count,
                                             const void *potential,
                                             const elec_alpb_params *params,
                                             elec_alpb_params *resolved,
                                             elec_alpb_kernel *kernel, double lo[3],
                                             double hi[3], elec_error *err) {
    elec_status s = elec_alpb_params_resolve(params, hcp, resolved, err);
    long i, bad_vertex = LONG_MAX, bad_normal = LONG_MAX; /* the first of each */
    double x0 = HUGE_VAL, y0 = HUGE_VAL, z0 = HUGE_VAL, x1 = -HUGE_VAL, y1 = -HUGE_VAL,
           z1 = -HUGE_VAL;
    if (s != ELEC_OK) return s;
    if (count > 0 && (!vertices || !potential))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "vertices or potential is NULL");
    /* as the points' calls: a count no array can hold checked no vertex
       (the loop's index is a long) and wrapped the exact sum's allocation */
    if (count > (size_t)PTRDIFF_MAX / (3 * sizeof(double)))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "%zu vertices: more than an array of them can hold", count);
    if (count > 0 && !normals && (resolved->proj != 0.0 || resolved->kappa > 0.0))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "the vertices have no normals, and %s needs them (the "
                          "potential is taken at v + %s n)",
                          resolved->proj != 0.0 ? "proj != 0" : "salt",
                          resolved->proj != 0.0 ? "p" : "s");
    /* one parallel pass (a million vertices: the GPU call's budget) */
#ifdef _OPENMP
#pragma omp parallel for reduction(min : bad_vertex, bad_normal, x0, y0, z0) \
    reduction(max : x1, y1, z1)
#endif
    for (i = 0; i < (long)count; i++) {
        const double *v = vertices + 3 * i;
        if (!elec__finite(v[0]) || !elec__finite(v[1]) || !elec__finite(v[2]))
            bad_vertex = i < bad_vertex ? i : bad_vertex;
        if (normals) {
            double unit[3];
            if (!elec__direction3(normals + 3 * i, unit))
                bad_normal = i < bad_normal ? i : bad_normal;
        }
        x0 = v[0] < x0 ? v[0] : x0;
        y0 = v[1] < y0 ? v[1] : y0;
        z0 = v[2] < z0 ? v[2] : z0;
        x1 = v[0] > x1 ? v[0] : x1;
        y1 = v[1] > y1 ? v[1] : y1;
        z1 = v[2] > z1 ? v[2] : z1;
    }
    if (bad_vertex != LONG_MAX)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "vertex %ld is not finite", bad_vertex);
    if (bad_normal != LONG_MAX)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "normal %ld is zero or not finite",
                          bad_normal);
    if (lo) {
        lo[0] = x0;
        lo[1] = y0;
        lo[2] = z0;
        hi[0] = x1;
        hi[1] = y1;
        hi[2] = z1;
    }
    elec_alpb_kernel_setup(resolved, kernel);
    return ELEC_OK;
}

/* What component c's charges miss at distance d from its centre, as the
   error test bounds it (e/A, before scale), e its residuals
   (elec_hcp.residual): the Taylor terms of the kernel f about the centre,
   |dp| |f'| + |dQ| |f'' - f'/d| / 3 + |dT| |f'' + 2 f'/d| / 6 (the last
   f's Laplacian).  For E1's front / d this is front (|dp| / d^2 + |dQ| /
   d^3).  GEM's region 1 (p <= 0) is front / d + (born / A) g(d), g = 1/d
   - 1/s, s^2 = d^2 + e^2, e^2 = born_offset / A^2: near the molecule g's
   terms |g'| = 1/d^2 - d/s^3, |g'' - g'/d| / 3 = 1/d^3 - d^2/s^5 and |g''
   + 2 g'/d| / 6 = e^2 / (2 s^5) outweigh front's (fas2 at p = -1 erred
   11 times the E1 form, 2.3 times the tolerance; an audit), and each falls
   with d, so the sum does (born < 0, a solute's dielectric past the
   solvent's, counts as |born|: the triangle inequality).  g's first two
   orders count 1.5 times (the next added up to 32 %: 60 and 200 residues
   of 10 charges, p = -1 to -4).
   Past the quadrupole, front / d's series' remainder: each charge q_j at
   u_j (its atoms', and the approximation's with their signs turned) adds
   q_j sum_{l >= 3} |u_j|^l P_l(cos) / d^(l+1), at most |q_j| |u_j|^3 /
   (d^3 (d - |u_j|)) (|P_l| <= 1), so in all at most e[3] / (d^3 (d -
   rho)), rho the farthest of them (`extent`), times front.  Without it
   the first two orders were an estimate, not a bound, and a residue whose
   reach came to its floor of 1.5 times its extent, where the orders fall
   by 2/3 each, erred up to 10 times the tolerance there (thresholds far
   under the defaults, h1 = 1e-3 A: 2LZT's VAL 92; an audit, 2026-12-05).
   Region 1's g stays the estimate above: its two parts' remainders cancel
   as g's terms do (g falls as e^2 / (2 d^3)), and bounding each alone
   took the reach of every residue of the test's past the molecule.
   Salt's term, front kappa / (1 + kappa d_ion), varies more slowly than
   front / d and is left to it (measured: 0.87 of the bound at 0.15 M). */
static inline double elec__hcp_bound(const elec_alpb_kernel *k, const double e[4], double rho,
                                     double d) {
    double bound = k->front * (e[0] / (d * d) + e[1] / (d * d * d));
    if (!(d > rho)) return HUGE_VAL; /* no series about the centre converges */
    if (k->region == 1) {
        const double e2 = k->born_offset > 0.0 ? k->born_offset / k->size2 : 0.0;
        const double s2 = d * d + e2, s = sqrt(s2), s5 = s2 * s2 * s;
        bound += 1.5 * fabs(k->born) / sqrt(k->size2) *
                 (e[0] * (1.0 / (d * d) - d / (s2 * s)) + e[1] * (1.0 / (d * d * d) - d * d / s5) +
                  e[2] * e2 / (2.0 * s5));
    }
    return bound + k->front * e[3] / (d * d * d * (d - rho));
}

/* How far past its extent a component must be to be seen by its charges:
   d >= ELEC__HCP_EXTENT_FACTOR r_c (r_c its atoms' and its charges'
   farthest distance from its centre, elec_hcp.extent).  Within r_c no
   multipole series about the centre converges, and the error test's
   leading terms bound nothing: a 50-residue beta strand (167 A, one
   chain, its dipole and quadrupole residuals cancelling) kept the 70 A
   threshold while its atoms reach 84 A from its centre, and its own end
   saw it as two charges, 46 % relative RMS at the defaults; a residue of
   net charge -0.029 e put its one charge 20.5 A from its centre, 0.16 A
   from a vertex (an audit).  Factors 1, 1.5, 1.75, 2, 2.5 (r_c/d at most
   1, 0.67, 0.57, 0.5, 0.4) left the strand 19 % and then 0.27 % from 1.5
   on; on the capsid stand-in and the APBS structures 1.5 changes no
   term with two charges (1.75 adds 2 % of the terms, 2 33 %); with one,
   a nearly neutral residue's charge, 500 to 1,700 A out, has it summed
   whole (mache 72 -> 101 ms; a review). */
#define ELEC__HCP_EXTENT_FACTOR 1.5

/* The reach of component c of level `level` (0 residues, 1 chains, 2
   complexes): the distance beyond which a point sees it by its charges
   (the distance test compares squared distances strictly, as NAB and GEM).
   The largest of the level's threshold, ELEC__HCP_EXTENT_FACTOR times its
   extent (where the tolerance is finite: +infinity asks for the seed's
   distance test alone), and the distance where the error test's bound
   (elec__hcp_bound) falls to the tolerance.  For E1's bound that is the
   positive root of tol d^3 - front |dp| d - front |dQ|, by Newton's method
   from an upper bound (the cubic is convex there, so the iterates fall
   monotonically onto the root); the whole bound (the series' remainder,
   region 1's terms) is larger and falls with d, so from that root (or
   least, where no dipole or quadrupole is left) it doubles and bisects.
   +infinity for the exact sum, and where a tolerance near double's least
   puts the root past its range. */
static inline double elec__hcp_reach(const elec_hcp *hcp, int level, size_t c,
                                     const elec_alpb_params *r, const elec_alpb_kernel *k) {
    const int scheme = r->hcp_charges == 2 ? 1 : 0;
    const double *residual = hcp->residual[level] + 8 * c + 4 * scheme;
    /* the series' remainder for residues alone: a chain's sum of |q| over
       thousands of partial charges ignores all the cancellation its
       charges rely on (elec__hcp_bound) */
    const double e[4] = {residual[0], residual[1], residual[2], level == 0 ? residual[3] : 0.0};
    const double a = k->front * e[0], b = k->front * e[1], tol = r->hcp_tolerance;
    const double rho = hcp->extent[level][2 * c + scheme];
    /* tolerance +infinity: the seed's distance test alone, as asked */
    const double far = tol < HUGE_VAL ? ELEC__HCP_EXTENT_FACTOR * rho : 0.0;
    const double least = r->hcp_h[level] > far ? r->hcp_h[level] : far;
    double d, below;
    int i;
    if (r->exact) return HUGE_VAL;
    /* most components pass at the least reach itself (+infinity passes) */
    if (elec__hcp_bound(k, e, rho, least) <= tol) return least;
    d = sqrt(a / tol) + cbrt(b / tol); /* each term alone reaches tol there */
    /* no dipole or quadrupole left: the remainder and region 1's trace
       term alone, from least */
    if (d == 0.0) d = least;
    for (i = 0; i < 100 && d < HUGE_VAL && (a > 0.0 || b > 0.0); i++) {
        const double f = tol * d * d * d - a * d - b, step = f / (3.0 * tol * d * d - a);
        d -= step;
        if (!(step > 1e-12 * d)) break;
    }
    /* a tolerance near double's least (1e-310) overflows the cubic: the
       root is past any distance, so the sum is exact (it once fell back
       to the threshold alone) */
    if (!(d < HUGE_VAL)) return HUGE_VAL;
    if (d < least) d = least;
    if (elec__hcp_bound(k, e, rho, d) <= tol) return d;
    do { /* bound(below) > tol >= bound(d) */
        below = d;
        d *= 2.0;
        if (!(d < HUGE_VAL)) return HUGE_VAL;
    } while (elec__hcp_bound(k, e, rho, d) > tol);
    for (i = 0; i < 100 && d - below > 1e-12 * d; i++) {
        const double middle = 0.5 * (below + d);
        if (elec__hcp_bound(k, e, rho, middle) > tol) below = middle;
        else d = middle;
    }
    return d;
}

/* v + shift n / |n| of vertex i (v itself where there are no normals;
   the normals were checked, elec__alpb_prepare). */
static inline void elec__alpb_point(const double *vertices, const double *normals,
                                    size_t i, double shift, double out[3]) {
    double unit[3] = {0.0, 0.0, 0.0};
    int a;
    if (normals && shift != 0.0) elec__direction3(normals + 3 * i, unit);
    for (a = 0; a < 3; a++) out[a] = vertices[3 * i + a] + shift * unit[a];
}

/* The exact sum without salt is a Coulomb sum at the points times
   kernel->front plus a constant (E1; also GEM's region 1 at p = 0, whose
   constant is zero): the DCS points path computes it. */
static inline int elec__alpb_is_coulomb(const elec_alpb_params *r,
                                        const elec_alpb_kernel *k) {
    return r->exact && k->kappa == 0.0 && (k->region != 1 || r->proj == 0.0);
}

/* A periodic box: every edge positive and finite, and its volume too (the
   reciprocal sums divide by it: edges of 1e150 A made the Ewald energy
   NaN). */
static inline elec_status elec__box_check(const elec_box *box, elec_error *err) {
    int axis;
    if (!box) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "box is NULL");
    for (axis = 0; axis < 3; axis++)
        if (!(box->length[axis] > 0.0) || !elec__finite(box->length[axis]))
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "box edge %d is %g: it must be positive", axis,
                              box->length[axis]);
    {
        /* its volume, and 1 / volume, within double's range (1e-300 A edges
           made the volume 0, and the Ewald estimate's sums blamed the
           charges) */
        const double volume = box->length[0] * box->length[1] * box->length[2];
        if (!elec__finite(volume) || !(volume >= DBL_MIN))
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "box %g x %g x %g A: its volume is %s double's range",
                              box->length[0], box->length[1], box->length[2],
                              elec__finite(volume) ? "under" : "past");
    }
    return ELEC_OK;
}

/* The first of v[0, n) that is not finite (n where all are), by its bits
   (elec__finite, elec__finite_float: x - x == 0, the test before, held
   under no -ffast-math), tested without a branch a value so that the
   compiler can vectorize it, a block at a time, the blocks spread over
   OpenMP's threads where there are many.  Scanning a value at a time with
   a branch took seed 000's GPU cutoff map (497^3 points, scanned on the
   host) from 0.19 to 0.42 s (make bench, H200, bench/RESULTS.md,
   2026-12-02); from cache this form took 0.15 ms for a million floats
   where that one took 0.92 (gcc -O3), and by bits 0.10 ms where x - x
   took 0.11 (2^20 floats, gcc -O3, three runs each, 2026-12-05). */
#define ELEC__SCAN_BLOCK 4096
#ifdef _OPENMP
#define ELEC__SCAN_PARALLEL \
    _Pragma("omp parallel for schedule(static) reduction(min : first) if (blocks > 64)")
#else
#define ELEC__SCAN_PARALLEL
#endif
#define ELEC__SCAN_FIRST_BAD(TYPE, name, is_finite)                             \
    static inline size_t name(const TYPE *v, size_t n) {                       \
        const long blocks = (long)((n + ELEC__SCAN_BLOCK - 1) / ELEC__SCAN_BLOCK); \
        size_t first = n;                                                      \
        long k;                                                                \
        ELEC__SCAN_PARALLEL                                                    \
        for (k = 0; k < blocks; k++) {                                         \
            const size_t lo = (size_t)k * ELEC__SCAN_BLOCK;                    \
            const size_t hi = n - lo < ELEC__SCAN_BLOCK ? n : lo + ELEC__SCAN_BLOCK; \
            size_t i;                                                          \
            int bad = 0;                                                       \
            for (i = lo; i < hi; i++) bad |= !is_finite(v[i]);                 \
            for (i = lo; bad && i < hi; i++)                                   \
                if (!is_finite(v[i])) {                                        \
                    if (i < first) first = i;                                  \
                    break;                                                     \
                }                                                              \
        }                                                                      \
        return first;                                                          \
    }
ELEC__SCAN_FIRST_BAD(float, elec__first_bad_float, elec__finite_float)
ELEC__SCAN_FIRST_BAD(double, elec__first_bad_double, elec__finite)

/* Results that finite inputs did not keep finite: charges, positions (a
   lattice 1e300 A wide), a box or parameters so large that a sum
   overflowed (charges of 1e200 e gave a Coulomb energy of -inf, an Ewald
   energy of NaN; of 1e300 e a DCS map of inf, ALPB's float potentials
   inf).  Refused, naming the first such value,
   rather than returned as a number; the outputs then hold what the sums
   gave.  The values are float (outf) or double (outd, read where outf is
   NULL; both NULL: nothing to check); type names the arithmetic whose
   range was passed ("float" or "double").  elec__result_past_range: the
   refusal of value i, where a caller found it by a scan of its own. */
static inline elec_status elec__result_past_range(const char *method, const char *what,
                                                  size_t i, double value, const char *type,
                                                  elec_error *err) {
    return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                      "%s: %s %zu came out %g: the charges, the positions (the atoms', "
                      "the points' or the lattice's), the box or the parameters take the "
                      "sums past %s's range", method, what, i, value, type);
}
static inline elec_status elec__results_finite(const char *method, const char *what,
                                               const float *outf, const double *outd,
                                               size_t count, const char *type,
                                               elec_error *err) {
    const size_t i = outf   ? elec__first_bad_float(outf, count)
                     : outd ? elec__first_bad_double(outd, count)
                            : count;
    if (i < count)
        return elec__result_past_range(method, what, i, outf ? (double)outf[i] : outd[i], type,
                                       err);
    return ELEC_OK;
}

/* Float paths at points take every position relative to a reference (the
   centre of the points' box), so that floats keep their precision: a
   float coordinate of magnitude X rounds by up to 6e-8 X.  Points spread
   far apart made that reference far from most of them: with one point
   1e10 A away, a point 3 A from an atom sat 5e9 A from the reference, the
   two rounded to one place, and its potential came out as if the atom were
   not there (ALPB's constant alone), with no error.  So points whose box is
   wider than ELEC__FLOAT_REGION along an axis are evaluated a region at a
   time (cubes of that side, each about its own points' centre): every
   point lies within sqrt(3) x 512 A of its reference, as in one region,
   and so do the atoms near it, the only ones whose terms its rounding can
   spoil (a term's error is about 6e-8 (|p - c| + |a - c|) / |p - a| of
   it).  1024 A: a call on any molecule up to that size (a capsid) stays
   one region, as before.  The DCS maps box a lattice so too
   (elec__map_box_points; elec_cpu.h's elec__cpu_dcs_map, elec_cuda.cuh's
   elec_cuda_dcs_map). */
#define ELEC__FLOAT_REGION 1024.0

/* A box of a lattice's points: the first index and the count per axis. */
typedef struct elec__lattice_box {
    int first[3], count[3];
} elec__lattice_box;

/* Points a map's box spans along an axis of spacing h: at most
   ELEC__FLOAT_REGION A from its first to its last, so that every point and
   every atom near it lies within about 890 A of the box's centre, where
   float rounds a coordinate by under 6e-5 A (as the points calls'
   regions).  The DCS maps, CPU and GPU, sum a lattice a box at a time. */
static inline int elec__map_box_points(double h) {
    const double points = floor(ELEC__FLOAT_REGION / h) + 1.0;
    return points > (double)INT_MAX ? INT_MAX : (int)points;
}

typedef struct elec__region_key {
    double cell[3]; /* the region's cube along each axis (floor((x - lo) / side)) */
    size_t index;   /* the point */
} elec__region_key;

static int elec__region_key_order(const void *a, const void *b) {
    const elec__region_key *x = (const elec__region_key *)a, *y = (const elec__region_key *)b;
    int k;
    for (k = 0; k < 3; k++)
        if (x->cell[k] != y->cell[k]) return x->cell[k] < y->cell[k] ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* The regions of count points: *regions of them, region r the points
   order[start[r] .. start[r + 1]).  One region (order and start NULL, the
   points in their own order) where the points' box is at most
   ELEC__FLOAT_REGION wide, or holds a coordinate that is not finite (the
   caller's checks refuse it by name).  Release with elec__regions_free. */
typedef struct elec__regions {
    size_t count;
    size_t *order, *start;
} elec__regions;

static inline void elec__regions_free(elec__regions *r) {
    ELEC_FREE(r->order);
    ELEC_FREE(r->start);
    r->order = r->start = NULL;
}

/* Is a box lo..hi wider than one region along an axis? */
static inline int elec__box_wide(const double lo[3], const double hi[3]) {
    return hi[0] - lo[0] > ELEC__FLOAT_REGION || hi[1] - lo[1] > ELEC__FLOAT_REGION ||
           hi[2] - lo[2] > ELEC__FLOAT_REGION;
}

/* The box lo..hi of points order[0 .. count) (order NULL: the points in
   their own order), in one pass over OpenMP's threads (a million surface
   vertices on every ALPB call); 0 where a coordinate is not finite. */
static inline int elec__points_bounds(const double *points, const size_t *order, size_t count,
                                      double lo[3], double hi[3]) {
    double x0 = HUGE_VAL, y0 = HUGE_VAL, z0 = HUGE_VAL, x1 = -HUGE_VAL, y1 = -HUGE_VAL,
           z1 = -HUGE_VAL;
    long n;
    int bad = 0;
#ifdef _OPENMP
#pragma omp parallel for reduction(min : x0, y0, z0) reduction(max : x1, y1, z1) \
    reduction(|| : bad) /* not max: its private copies start at INT_MIN, which is true */
#endif
    for (n = 0; n < (long)count; n++) {
        const double *p = points + 3 * (order ? order[n] : (size_t)n);
        bad = bad || !elec__finite(p[0]) || !elec__finite(p[1]) || !elec__finite(p[2]);
        x0 = p[0] < x0 ? p[0] : x0;
        y0 = p[1] < y0 ? p[1] : y0;
        z0 = p[2] < z0 ? p[2] : z0;
        x1 = p[0] > x1 ? p[0] : x1;
        y1 = p[1] > y1 ? p[1] : y1;
        z1 = p[2] > z1 ? p[2] : z1;
    }
    lo[0] = x0;
    lo[1] = y0;
    lo[2] = z0;
    hi[0] = x1;
    hi[1] = y1;
    hi[2] = z1;
    return !bad;
}

/* The centre of the box of points order[0 .. count) (count > 0): the
   reference the float paths at points take positions relative to. */
static inline void elec__points_reference(const double *points, const size_t *order,
                                          size_t count, double centre[3]) {
    double lo[3], hi[3];
    int k;
    elec__points_bounds(points, order, count, lo, hi);
    for (k = 0; k < 3; k++) centre[k] = 0.5 * (lo[k] + hi[k]);
}

static inline elec_status elec__regions_find(const double *points, size_t count,
                                             elec__regions *r, elec_error *err) {
    double lo[3], hi[3];
    elec__region_key *key;
    size_t n, regions;
    int k;
    r->count = count > 0;
    r->order = r->start = NULL;
    /* the caller's checks refuse these */
    if (!points || count > (size_t)PTRDIFF_MAX / (3 * sizeof(double))) return ELEC_OK;
    if (!elec__points_bounds(points, NULL, count, lo, hi) || !elec__box_wide(lo, hi))
        return ELEC_OK;
    key = (elec__region_key *)ELEC_MALLOC(count * sizeof *key);
    if (!key) return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory to part %zu points", count);
    for (n = 0; n < count; n++) {
        for (k = 0; k < 3; k++)
            key[n].cell[k] = floor((points[3 * n + k] - lo[k]) / ELEC__FLOAT_REGION);
        key[n].index = n;
    }
    qsort(key, count, sizeof *key, elec__region_key_order);
    for (regions = 1, n = 1; n < count; n++)
        regions += memcmp(key[n - 1].cell, key[n].cell, sizeof key[n].cell) != 0;
    r->order = (size_t *)ELEC_MALLOC(count * sizeof *r->order);
    r->start = (size_t *)ELEC_MALLOC((regions + 1) * sizeof *r->start);
    if (!r->order || !r->start) {
        ELEC_FREE(key);
        elec__regions_free(r);
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory to part %zu points", count);
    }
    r->count = 0;
    for (n = 0; n < count; n++) {
        if (n == 0 || memcmp(key[n - 1].cell, key[n].cell, sizeof key[n].cell) != 0)
            r->start[r->count++] = n;
        r->order[n] = key[n].index;
    }
    r->start[r->count] = count;
    ELEC_FREE(key);
    return ELEC_OK;
}

/* A float path's evaluation of count points (normals beside them, or NULL)
   into out, its reference the centre of their box: what
   elec__points_by_region calls for each region. */
typedef elec_status (*elec__region_call)(void *call, const double *points,
                                         const double *normals, size_t count, float *out,
                                         elec_error *err);

/* fn over the points' regions: the whole call where there is one region,
   else each region's points (and normals) copied apart, evaluated, and
   their results put back in place.  The caller checks the whole call's
   input first, so that a refusal names a point by the caller's index. */
static inline elec_status elec__points_by_region(const double *points, const double *normals,
                                                 size_t count, float *out,
                                                 elec__region_call fn, void *call,
                                                 elec_error *err) {
    elec__regions r;
    double *xyz = NULL, *nxyz = NULL;
    float *value = NULL;
    size_t g, n;
    elec_status s = elec__regions_find(points, count, &r, err);
    if (s != ELEC_OK) return s;
    if (!r.order) return fn(call, points, normals, count, out, err);
    xyz = (double *)ELEC_MALLOC(3 * count * sizeof *xyz);
    nxyz = normals ? (double *)ELEC_MALLOC(3 * count * sizeof *nxyz) : NULL;
    value = (float *)ELEC_MALLOC(count * sizeof *value);
    if (!xyz || (normals && !nxyz) || !value) {
        s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory to part %zu points", count);
        goto cleanup;
    }
    for (n = 0; n < count; n++) {
        memcpy(xyz + 3 * n, points + 3 * r.order[n], 3 * sizeof *xyz);
        if (normals) memcpy(nxyz + 3 * n, normals + 3 * r.order[n], 3 * sizeof *nxyz);
    }
    for (g = 0; g < r.count && s == ELEC_OK; g++) {
        const size_t first = r.start[g], m = r.start[g + 1] - first;
        s = fn(call, xyz + 3 * first, normals ? nxyz + 3 * first : NULL, m, value + first, err);
    }
    if (s == ELEC_OK)
        for (n = 0; n < count; n++) out[r.order[n]] = value[n];
cleanup:
    ELEC_FREE(xyz);
    ELEC_FREE(nxyz);
    ELEC_FREE(value);
    elec__regions_free(&r);
    return s;
}

/* The same for an energy's terms (elec_ewald_terms), each by name; type:
   the arithmetic of the sums ("double" on the CPU, "float" on the GPU). */
static inline elec_status elec__terms_finite(const char *method, const elec_ewald_terms *t,
                                             const char *type, elec_error *err) {
    static const char *const name[6] = {"real", "reciprocal", "self",
                                        "excluded", "background", "total"};
    const double value[6] = {t->real, t->reciprocal, t->self,
                             t->excluded, t->background, t->total};
    int k;
    for (k = 0; k < 6; k++)
        if (!elec__finite(value[k]))
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "%s: the %s energy came out %g: the charges, the box or "
                              "the parameters take the sums past %s's range",
                              method, name[k], value[k], type);
    return ELEC_OK;
}

/* Excluded pairs name two different atoms that exist, each pair once,
   among atoms few enough that a pair's key (elec__ewald_key) stands in a
   size_t (past 2^32 atoms two pairs could share one, and a pair be left
   out that was not excluded). */
static inline elec_status elec__exclusions_check(const size_t *pairs, size_t count,
                                          size_t atom_count, elec_error *err) {
    size_t e;
    if (count > 0 && !pairs)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "%zu excluded pairs but no array", count);
    if (count > 0 && atom_count > 1 &&
        atom_count - 1 > ((size_t)-1 - (atom_count - 1)) / atom_count)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "excluded pairs among %zu atoms: a pair's key (i n + j) would pass "
                          "size_t", atom_count);
    for (e = 0; e < count; e++) {
        if (pairs[2 * e] >= atom_count || pairs[2 * e + 1] >= atom_count)
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "excluded pair %zu (%zu, %zu): there are %zu atoms",
                              e, pairs[2 * e], pairs[2 * e + 1], atom_count);
        if (pairs[2 * e] == pairs[2 * e + 1])
            return elec__name_atoms(elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                               "excluded pair %zu pairs atom %zu with itself",
                                               e, pairs[2 * e]),
                                    err, pairs[2 * e], ELEC_NO_ATOM);
    }
    if (count > 1) { /* a pair listed twice would be corrected twice */
        size_t *keys = (size_t *)ELEC_MALLOC(count * sizeof *keys);
        if (!keys) return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory");
        for (e = 0; e < count; e++) {
            keys[e] = elec__ewald_key(pairs[2 * e], pairs[2 * e + 1], atom_count);
        }
        qsort(keys, count, sizeof *keys, elec__size_order);
        for (e = 1; e < count; e++)
            if (keys[e] == keys[e - 1]) {
                size_t i = keys[e] / atom_count, j = keys[e] % atom_count;
                ELEC_FREE(keys);
                return elec__name_atoms(elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                                   "the pair (%zu, %zu) is excluded twice",
                                                   i, j),
                                        err, i, j);
            }
        ELEC_FREE(keys);
    }
    return ELEC_OK;
}

/* ---- cell lists' windows (elec.h's and elec_cpu.h's cell lists) */

/* qsort's ascending order of doubles. */
static inline int elec__double_order(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The region of a cell list for neighbour searches that are not periodic:
   the caller's origin and length, but along an axis that would take more
   than ELEC_CELLS_MAX_PER_AXIS cells of min_cell, and where the window of
   that many cells holding the most of the count positions xyz leaves out
   at most one in a hundred, the span of the positions in that window.
   Positions outside the region fall in its boundary cells, and a pair
   within min_cell still lies in the 27 cells around either (clamping only
   brings cells closer); but one far atom (a misplaced ion, coordinates of
   9999) stretched the cells over the whole span until each held
   thousands and a search read them all: 20,001 atoms' contact surface
   with one atom 1e5 A away took 7 s, 20,000 without it 1.2 (an audit).
   Where more are left out (a long rod, complexes far apart) they would
   crowd the boundary cells instead, so the caller's region stays (a
   review: a 20,000 A rod's surface went from 1 s to 59).  Returns 0 where
   there is no memory for the sort. */
static inline int elec__cells_window(const double *xyz, size_t count, double min_cell,
                                     double origin[3], double length[3]) {
    const double width = ELEC_CELLS_MAX_PER_AXIS * min_cell;
    double *v = NULL;
    size_t i, first, best = 0, most = 0;
    int axis;
    for (axis = 0; axis < 3; axis++) {
        if (count == 0 || !(floor(length[axis] / min_cell) > ELEC_CELLS_MAX_PER_AXIS)) continue;
        if (!v && !(v = (double *)ELEC_MALLOC(count * sizeof *v))) return 0;
        for (i = 0; i < count; i++) v[i] = xyz[3 * i + axis];
        qsort(v, count, sizeof *v, elec__double_order);
        most = 0;
        for (first = 0, i = 0; i < count; i++) { /* the window ending at v[i] */
            while (v[i] - v[first] > width) first++;
            if (i - first + 1 > most) {
                most = i - first + 1;
                best = first;
            }
        }
        if (count - most > count / 100) continue; /* the span stays */
        /* from its first position to its last (a cell at least) */
        origin[axis] = v[best];
        length[axis] = v[best + most - 1] - v[best];
        if (length[axis] < min_cell) length[axis] = min_cell;
    }
    ELEC_FREE(v);
    return 1;
}

/* elec_cells_build over the region elec__cells_window makes of the
   caller's (which is left as it was).  Here with the shared helpers:
   elec_cpu.h's cutoff map and MSM call it, and may be implemented in a
   file of their own (they once could not: an audit). */
static inline elec_status elec__cells_build_windowed(const double *xyz, size_t count,
                                                     const double origin[3],
                                                     const double length[3], double min_cell,
                                                     elec_cells *c, elec_error *err) {
    double o[3], l[3];
    int axis;
    for (axis = 0; axis < 3; axis++) {
        o[axis] = origin[axis];
        l[axis] = length[axis];
    }
    if (min_cell > 0.0 && !elec__cells_window(xyz, count, min_cell, o, l)) {
        if (c) memset(c, 0, sizeof *c);
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for a cell list of %zu atoms",
                          count);
    }
    return elec_cells_build(xyz, count, o, l, min_cell, c, err);
}

/* The bins' shape over the region origin .. origin + extent (dims,
   origin, length, centre), refused past 65,536 bins an axis or 2^31 in
   all; *bins their count.  Shared: elec_bins_build, and the GPU cutoff
   map's checks before it looks for a GPU. */
static inline elec_status elec__bins_shape(const double origin[3], const double extent[3],
                                    double length, elec_bins *out, size_t *bins,
                                    elec_error *err) {
    int axis;
    if (!origin || !extent)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "bin region: origin or extent is NULL");
    if (!(length > 0.0) || !elec__finite(length))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "bin length %g A must be positive", length);
    *bins = 1;
    for (axis = 0; axis < 3; axis++) {
        double n = ceil(extent[axis] / length);
        if (!(extent[axis] >= 0.0) || !elec__finite(origin[axis]) || n > 65536.0)
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "bin region along axis %d: origin %g, extent %g A",
                              axis, origin[axis], extent[axis]);
        out->dims[axis] = n < 1.0 ? 1 : (int)n;
        /* the records hold positions as floats relative to the region's
           centre: a region past float's range stored an atom at -inf with
           ELEC_OK (an audit) */
        if (!(0.5 * out->dims[axis] * length <= FLT_MAX))
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "bin region along axis %d spans %g A: past float's range, in "
                              "which the bins hold positions", axis, out->dims[axis] * length);
        out->origin[axis] = origin[axis];
        *bins *= (size_t)out->dims[axis];
    }
    if (*bins > (size_t)1 << 31)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "%zu bins are too many", *bins);
    out->length = length;
    for (axis = 0; axis < 3; axis++)
        out->centre[axis] = origin[axis] + 0.5 * out->dims[axis] * length;
    return ELEC_OK;
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

/* --------------------------------------------------- >>common what every method shares */

ELEC_DEF void *elec_malloc(size_t size) { return ELEC_MALLOC(size); }
ELEC_DEF void elec_free(void *ptr) { ELEC_FREE(ptr); }

ELEC_DEF double elec_stage_seconds(const elec_stage_times *times, const char *name) {
    int i;
    for (i = 0; times && name && i < times->count && i < ELEC_MAX_STAGES; i++)
        if (times->name[i] && strcmp(times->name[i], name) == 0) return times->seconds[i];
    return -1.0;
}

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

ELEC_DEF elec_status elec_fail(elec_error *err, elec_status status, long line,
                               const char *format, ...) {
    va_list args;
    va_start(args, format);
    status = elec__vfail(err, status, line, format, args);
    va_end(args);
    return status;
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
    {
        /* a stride under one value makes the atoms overlap: every method
           read positions made of two atoms' bytes */
        const size_t width = a->type == ELEC_FLOAT32 ? sizeof(float) : sizeof(double);
        const size_t strides[3] = {a->position_stride, a->charge_stride, a->radius_stride};
        static const char *const names[3] = {"position", "charge", "radius"};
        int k;
        for (k = 0; k < 3; k++)
            if (strides[k] != 0 && strides[k] < width)
                return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                  "atoms: %s stride %zu bytes is under one value's %zu",
                                  names[k], strides[k], width);
    }
    for (i = 0; i < a->count; i++) {
        double p[3], q, r;
        elec_atoms_get(a, i, p, &q, &r);
        if (!elec__finite(p[0]) || !elec__finite(p[1]) || !elec__finite(p[2]))
            return elec__name_atoms(elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                               "atom %zu: position is not finite", i),
                                    err, i, ELEC_NO_ATOM);
        if (!elec__finite(q))
            return elec__name_atoms(elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                               "atom %zu: charge is not finite", i),
                                    err, i, ELEC_NO_ATOM);
        if (!elec__finite(r) || r < 0.0)
            return elec__name_atoms(elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                               "atom %zu: radius %g is negative or not finite",
                                               i, r),
                                    err, i, ELEC_NO_ATOM);
    }
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF void elec_atoms_bounds(const elec_atoms *a, double lo[3],
                                double hi[3]) {
    size_t i;
    int axis;
    for (axis = 0; axis < 3; axis++) lo[axis] = hi[axis] = 0.0;
    if (!a || !a->x || !a->y || !a->z) return;
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
    size_t plane;
    if (!l || l->dims[0] <= 0 || l->dims[1] <= 0 || l->dims[2] <= 0) return 0;
    if ((size_t)l->dims[1] > SIZE_MAX / (size_t)l->dims[0]) return 0;
    plane = (size_t)l->dims[0] * (size_t)l->dims[1];
    if ((size_t)l->dims[2] > SIZE_MAX / plane) return 0;
    return plane * (size_t)l->dims[2];
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
        /* every point a number: spacing 1e308 on three points passes the
           tests above and puts the last one at infinity */
        if (!elec__finite(l->origin[axis] + (l->dims[axis] - 1.0) * l->spacing[axis]))
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "lattice: the last %c point, %g + %d x %g A, is past "
                              "double's range", axis_name[axis], l->origin[axis],
                              l->dims[axis] - 1, l->spacing[axis]);
    }
    if ((double)l->dims[0] * l->dims[1] * l->dims[2] > (double)(SIZE_MAX / 8))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "lattice: %d x %d x %d points is too many",
                          l->dims[0], l->dims[1], l->dims[2]);
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_lattice_check_points(const elec_lattice *l,
                                               size_t max_points,
                                               elec_error *err) {
    elec_status s = elec_lattice_check(l, err);
    if (s != ELEC_OK) return s;
    if (max_points == 0) max_points = ELEC_DEFAULT_MAX_LATTICE_POINTS;
    if (elec_lattice_size(l) > max_points)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "lattice: %d x %d x %d = %zu points, over the limit of "
                          "%zu (max_points%s)", l->dims[0], l->dims[1], l->dims[2],
                          elec_lattice_size(l), max_points,
                          max_points == ELEC_DEFAULT_MAX_LATTICE_POINTS
                              ? "; by default 2^28, a 1 GiB float map" : "");
    return ELEC_OK;
}

ELEC_DEF elec_status elec_lattice_around(const elec_atoms *atoms,
                                         double spacing, double padding,
                                         elec_lattice *out, elec_error *err) {
    double lo[3], hi[3];
    int axis;
    elec_status s = elec_atoms_check(atoms, 0, err);
    if (s != ELEC_OK) return s;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
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
        if (!elec__finite(extent))
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "the atoms' extent (%g A) plus twice the padding (%g A) is "
                              "past double's range along axis %d", hi[axis] - lo[axis],
                              padding, axis);
        if (!(points <= INT_MAX / 4))
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


ELEC_DEF double elec_bin_length(double density, double fill) {
    if (!(density > 0.0) || !(fill > 0.0)) return 0.0;
    return cbrt(fill * ELEC_BIN_DEPTH / density);
}

ELEC_DEF void elec_cells_ijk(const elec_cells *c, const double x[3], int ijk[3]) {
    int axis;
    for (axis = 0; axis < 3; axis++) {
        double f = (x[axis] - c->origin[axis]) / c->length[axis] * c->n[axis];
        /* written so that NaN lands in cell 0 rather than in (int)NaN */
        ijk[axis] = !(f >= 0.0) ? 0 : f >= c->n[axis] ? c->n[axis] - 1 : (int)f;
    }
}

static size_t elec__cells_index(const elec_cells *c, const double *x) {
    int ijk[3];
    elec_cells_ijk(c, x, ijk);
    return (size_t)ijk[0] + (size_t)c->n[0] * (ijk[1] + (size_t)c->n[1] * ijk[2]);
}

ELEC_DEF elec_status elec_cells_build(const double *xyz, size_t count,
                                      const double origin[3], const double length[3],
                                      double min_cell, elec_cells *c, elec_error *err) {
    size_t cells = 1, i;
    int axis;
    if (!c) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "cells is NULL");
    memset(c, 0, sizeof *c);
    if ((!xyz && count > 0) || !origin || !length)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "cell list: positions, origin or length is NULL");
    if (count > (size_t)PTRDIFF_MAX / (3 * sizeof(double)))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "cell list: %zu positions, more than an array can hold", count);
    if (!(min_cell > 0.0) || !elec__finite(min_cell))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "cell length %g A must be positive",
                          min_cell);
    for (axis = 0; axis < 3; axis++) {
        double n = floor(length[axis] / min_cell);
        if (!(length[axis] > 0.0) || !elec__finite(length[axis]) ||
            !elec__finite(origin[axis]))
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "cell region along axis %d: origin %g, length %g A", axis,
                              origin[axis], length[axis]);
        c->origin[axis] = origin[axis];
        c->length[axis] = length[axis];
        c->n[axis] = n > ELEC_CELLS_MAX_PER_AXIS ? ELEC_CELLS_MAX_PER_AXIS
                     : n < 1.0                   ? 1
                                                 : (int)n;
        cells *= (size_t)c->n[axis];
    }
    for (i = 0; i < 3 * count; i++)
        if (!elec__finite(xyz[i]))
            return elec__name_atoms(elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                               "cell list: position of atom %zu is not "
                                               "finite", i / 3),
                                    err, i / 3, ELEC_NO_ATOM);
    c->start = (size_t *)ELEC_MALLOC((cells + 1) * sizeof *c->start);
    c->atom = (size_t *)ELEC_MALLOC((count + 1) * sizeof *c->atom);
    if (!c->start || !c->atom) {
        elec_cells_free(c);
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for a cell list of %zu atoms",
                          count);
    }
    memset(c->start, 0, (cells + 1) * sizeof *c->start);
    for (i = 0; i < count; i++) c->start[elec__cells_index(c, xyz + 3 * i) + 1]++;
    for (i = 0; i < cells; i++) c->start[i + 1] += c->start[i];
    for (i = 0; i < count; i++) {
        /* start[cell] serves as the fill cursor, restored below */
        size_t cell = elec__cells_index(c, xyz + 3 * i);
        c->atom[c->start[cell]++] = i;
    }
    for (i = cells; i > 0; i--) c->start[i] = c->start[i - 1];
    c->start[0] = 0;
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF void elec_cells_free(elec_cells *c) {
    if (!c) return;
    ELEC_FREE(c->start);
    ELEC_FREE(c->atom);
    c->start = NULL;
    c->atom = NULL;
}

ELEC_DEF long elec_cells_neighbour(const elec_cells *c, const int home[3], int dx, int dy,
                                   int dz, int periodic) {
    long ijk[3]; /* in long: home + d of two ints passed int's range */
    int axis;
    ijk[0] = (long)home[0] + dx;
    ijk[1] = (long)home[1] + dy;
    ijk[2] = (long)home[2] + dz;
    for (axis = 0; axis < 3; axis++) {
        if (periodic) ijk[axis] = ((ijk[axis] % c->n[axis]) + c->n[axis]) % c->n[axis];
        else if (ijk[axis] < 0 || ijk[axis] >= c->n[axis]) return -1;
    }
    return ijk[0] + (long)c->n[0] * (ijk[1] + (long)c->n[1] * ijk[2]);
}

ELEC_DEF void elec_bins_free(elec_bins *bins) {
    if (!bins) return;
    ELEC_FREE(bins->slots);
    ELEC_FREE(bins->overflow);
    memset(bins, 0, sizeof *bins);
}


/* Each atom's bin: -1 outside the region, -2 uncharged (it adds nothing
   anywhere). */
static void elec__bins_of(const elec_atoms *atoms, const elec_bins *b, long *bin_of) {
    long atom;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (atom = 0; atom < (long)atoms->count; atom++) {
        double p[3], q;
        long ijk[3];
        int inside = 1, axis;
        elec_atoms_get(atoms, (size_t)atom, p, &q, NULL);
        for (axis = 0; axis < 3; axis++) {
            double t = floor((p[axis] - b->origin[axis]) / b->length);
            if (!(t >= 0.0 && t < b->dims[axis])) inside = 0;
            ijk[axis] = inside ? (long)t : 0;
        }
        bin_of[atom] = !inside ? -1
                       : q == 0.0 ? -2
                                  : ijk[0] + (long)b->dims[0] *
                                                 (ijk[1] + (long)b->dims[1] * ijk[2]);
    }
}

/* The slots of each bin, in atom order, relative to the bins' centre;
   empty slots hold no charge, far enough that any kernel adds nothing.
   An atom past its bin's ELEC_BIN_DEPTH slots is spilled.  Each thread
   fills the bins of its own slab of z layers, taking atoms in index
   order, so that every bin comes out as a serial pass would leave it. */
static void elec__bins_fill(const elec_atoms *atoms, elec_bins *b, size_t bins,
                            const long *bin_of, unsigned char *filled,
                            unsigned char *spilled) {
    long slot;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (slot = 0; slot < (long)(bins * ELEC_BIN_DEPTH); slot++) {
        float *f = b->slots + 4 * slot;
        f[0] = f[1] = f[2] = -1e30f;
        f[3] = 0.0f;
    }
#ifdef _OPENMP
#pragma omp parallel
#endif
    {
        long layer = (long)b->dims[0] * b->dims[1], first = 0, last = b->dims[2];
        size_t k;
#ifdef _OPENMP
        {
            long threads = omp_get_num_threads(), me = omp_get_thread_num();
            first = b->dims[2] * me / threads;
            last = b->dims[2] * (me + 1) / threads;
        }
#endif
        for (k = 0; k < atoms->count; k++) {
            long bin = bin_of[k], z;
            if (bin < 0) continue;
            z = bin / layer;
            if (z < first || z >= last) continue;
            if (filled[bin] < ELEC_BIN_DEPTH) {
                double p[3], q;
                float *f = b->slots + 4 * ((size_t)bin * ELEC_BIN_DEPTH + filled[bin]);
                elec_atoms_get(atoms, k, p, &q, NULL);
                filled[bin]++;
                f[0] = (float)(p[0] - b->centre[0]);
                f[1] = (float)(p[1] - b->centre[1]);
                f[2] = (float)(p[2] - b->centre[2]);
                f[3] = (float)q;
            } else {
                spilled[k] = 1; /* the bin is full */
            }
        }
    }
}

/* The spilled atoms into the overflow list (in atom order, grown by
   doubling) and the atoms outside counted; 0 where there is no memory. */
static int elec__bins_overflow(size_t count, const long *bin_of, const unsigned char *spilled,
                               elec_bins *b) {
    size_t capacity = 16, i;
    if (!(b->overflow = (size_t *)ELEC_MALLOC(capacity * sizeof(size_t)))) return 0;
    for (i = 0; i < count; i++) {
        if (bin_of[i] == -1) b->outside_count++;
        if (!spilled[i]) continue;
        if (b->overflow_count == capacity) {
            size_t *grown = (size_t *)ELEC_MALLOC(2 * capacity * sizeof(size_t));
            if (!grown) return 0;
            memcpy(grown, b->overflow, capacity * sizeof(size_t));
            ELEC_FREE(b->overflow);
            b->overflow = grown;
            capacity *= 2;
        }
        b->overflow[b->overflow_count++] = i;
    }
    return 1;
}

ELEC_DEF elec_status elec_bins_build(const elec_atoms *atoms,
                                     const double origin[3],
                                     const double extent[3], double length,
                                     elec_bins *out, elec_error *err) {
    size_t bins = 0;
    unsigned char *filled = NULL;  /* atoms in each bin so far */
    unsigned char *spilled = NULL; /* atoms whose bin was full */
    long *bin_of = NULL;
    elec_status s;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "bins is NULL");
    memset(out, 0, sizeof *out);
    if ((s = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return s;
    if ((s = elec__bins_shape(origin, extent, length, out, &bins, err)) != ELEC_OK) {
        memset(out, 0, sizeof *out);
        return s;
    }
    out->slots = (float *)ELEC_MALLOC(bins * ELEC_BIN_DEPTH * 4 * sizeof(float));
    filled = (unsigned char *)ELEC_MALLOC(bins);
    bin_of = (long *)ELEC_MALLOC((atoms->count + 1) * sizeof *bin_of);
    spilled = (unsigned char *)ELEC_MALLOC(atoms->count + 1);
    if (!out->slots || !filled || !bin_of || !spilled) {
        s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory to bin %zu atoms in %zu bins",
                       atoms->count, bins);
        goto cleanup;
    }
    memset(filled, 0, bins);
    memset(spilled, 0, atoms->count + 1);
    elec__bins_of(atoms, out, bin_of);
    elec__bins_fill(atoms, out, bins, bin_of, filled, spilled);
    if (!elec__bins_overflow(atoms->count, bin_of, spilled, out)) {
        s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for overflow");
        goto cleanup;
    }
    elec__ok(err);
    s = ELEC_OK;
cleanup:
    if (s != ELEC_OK) elec_bins_free(out);
    ELEC_FREE(bin_of);
    ELEC_FREE(spilled);
    ELEC_FREE(filled);
    return s;
}

ELEC_DEF size_t elec_bin_neighbourhood(double length, double region,
                                       double cutoff, int *offsets,
                                       size_t capacity) {
    /* A bin (di, dj, dk) away from the region's first bin is needed when the
       shortest distance between the bin's box and the region's box is under
       the cutoff. */
    const double span = ceil((cutoff + region) / length) + 1.0;
    size_t count = 0;
    int di, dj, dk, axis, reach;
    if (!(length > 0.0) || !elec__finite(length) || !(region >= 0.0) ||
        !elec__finite(region) || !(cutoff >= 0.0) || !elec__finite(cutoff) ||
        !(span <= ELEC_BIN_MAX_REACH))
        return 0;
    reach = (int)span;
    for (dk = -reach; dk <= reach; dk++)
        for (dj = -reach; dj <= reach; dj++)
            for (di = -reach; di <= reach; di++) {
                int d[3];
                double gap2 = 0.0;
                d[0] = di;
                d[1] = dj;
                d[2] = dk;
                for (axis = 0; axis < 3; axis++) {
                    /* bin spans [d L, (d+1) L); the region [0, region] */
                    double lo = d[axis] * length, hi = lo + length, gap = 0.0;
                    if (hi < 0.0) gap = -hi;
                    else if (lo > region) gap = lo - region;
                    gap2 += gap * gap;
                }
                if (gap2 >= cutoff * cutoff) continue;
                if (count < capacity && offsets) {
                    offsets[3 * count] = di;
                    offsets[3 * count + 1] = dj;
                    offsets[3 * count + 2] = dk;
                }
                count++;
            }
    return count;
}

/* ---------------------------------------------------------------------------- >>io I/O */

/* ======================================================= PQR and OpenDX */
/* ELEC_IO_BEGIN (the PQR reader and the DX writer/reader live here) */
/* Text helpers shared by the PQR and DX readers.  Both read the whole file
   into memory, walk it line by line (so errors carry a line number) and
   convert numbers only after checking their spelling, so that strtod's
   extensions (nan, inf, hex floats) never slip into a structure or a map. */

typedef struct elec__pqr_token {
    const char *p;
    size_t n;
} elec__pqr_token;

static int elec__pqr_space(char c) { return c == ' ' || c == '\t' || c == '\r'; }

/* Splits [p, end) at blanks; stores at most max tokens and returns how
   many there are. */
static size_t elec__pqr_split(const char *p, const char *end,
                              elec__pqr_token *token, size_t max) {
    size_t n = 0;
    while (p < end) {
        const char *start;
        while (p < end && elec__pqr_space(*p)) p++;
        if (p == end) break;
        start = p;
        while (p < end && !elec__pqr_space(*p)) p++;
        if (n < max) {
            token[n].p = start;
            token[n].n = (size_t)(p - start);
        }
        n++;
    }
    return n;
}

static int elec__pqr_is(const elec__pqr_token *t, const char *word) {
    size_t n = strlen(word);
    return t->n == n && memcmp(t->p, word, n) == 0;
}

static int elec__pqr_digit(char c) { return c >= '0' && c <= '9'; }
static int elec__pqr_letter(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Numbers in the files' spelling, whatever LC_NUMERIC says.  snprintf and
   strtod spell the decimal point as the host program's locale does (","
   after setlocale(LC_NUMERIC, "de_DE.UTF-8")), but PQR, PDB, MSMS and
   OpenDX always write '.': a German host must neither write maps that
   viewers cannot read nor have ordinary structures refused.  uselocale
   would pin the "C" locale, but it is POSIX 2008, not C99, so the two
   helpers below translate the point instead: every number the kit writes
   to a file goes through elec__number_text, every one it reads through
   elec__number_value. */

#define ELEC__POINT_MAX 8    /* bytes of a decimal point, with its '\0' */
#define ELEC__NUMBER_MAX 128 /* bytes of a number's text, with its '\0' */

/* The decimal point snprintf writes now (one byte or more), found by
   writing 0.5 rather than asked of localeconv, whose answer any thread's
   next call may overwrite; its length, 0 when it is not ELEC__POINT_MAX - 1
   bytes or fewer. */
static size_t elec__decimal_point(char point[ELEC__POINT_MAX]) {
    char probe[2 * ELEC__POINT_MAX];
    int n = snprintf(probe, sizeof probe, "%.1f", 0.5);
    size_t length;
    if (n < 3 || (size_t)n >= sizeof probe || probe[0] != '0' || probe[n - 1] != '5')
        return 0;
    length = (size_t)n - 2;
    if (length >= ELEC__POINT_MAX) return 0;
    memcpy(point, probe + 1, length);
    point[length] = '\0';
    return length;
}

/* Writes v with snprintf's %.<precision>e (conversion 'e') or %g ('g')
   into buf (32 bytes: room for any double at precision 17), with '.' for
   the decimal point; returns the text's length.  In the "C" locale the
   bytes are snprintf's, unchanged. */
static size_t elec__number_text(char buf[32], double v, char conversion, int precision) {
    size_t at, length;
    int n = conversion == 'e' ? snprintf(buf, 32, "%.*e", precision, v)
                              : snprintf(buf, 32, "%.*g", precision, v);
    if (n < 0) n = 0, buf[0] = '\0';
    if (n > 31) n = 31; /* cut by snprintf; no caller asks that much */
    if (memchr(buf, '.', (size_t)n)) return (size_t)n; /* the "C" point */
    /* a number's text is digits, signs, letters (e, inf, nan) and its
       point: the first other byte starts a point that is not '.' */
    for (at = 0; at < (size_t)n; at++) {
        char c = buf[at];
        if (!(elec__pqr_digit(c) || elec__pqr_letter(c) || c == '+' || c == '-' || c == '.'))
            break;
    }
    if (at == (size_t)n) return (size_t)n;
    /* the point: its bytes up to the next digit (a point always has
       digits after it in %e and %g), found without asking the locale
       again for every number of a map */
    for (length = 1; at + length < (size_t)n && !elec__pqr_digit(buf[at + length]); length++)
        continue;
    buf[at] = '.';
    memmove(buf + at + 1, buf + at + length, (size_t)n - at - length + 1);
    return (size_t)n - length + 1;
}

/* strtod of the n bytes at p, which spell a number with '.' for its
   decimal point, whatever LC_NUMERIC says: sets *out and returns how many
   of the n bytes it read (as strtod's end pointer would say of p itself),
   0 for text of ELEC__NUMBER_MAX bytes or more, refused whole rather than
   cut.  In the "C" locale one strtod reads it; elsewhere strtod stops at
   the '.', which is replaced by the locale's point for a second try. */
static size_t elec__number_value(const char *p, size_t n, double *out) {
    char buf[ELEC__NUMBER_MAX + ELEC__POINT_MAX], point[ELEC__POINT_MAX];
    const char *dot = (const char *)memchr(p, '.', n);
    size_t at, length, read;
    char *stop;
    *out = 0.0;
    if (n >= ELEC__NUMBER_MAX) return 0;
    memcpy(buf, p, n);
    buf[n] = '\0';
    *out = strtod(buf, &stop);
    read = (size_t)(stop - buf);
    /* past the '.': read whole.  Else strtod stopped at or before it, as
       it does at "-.5" too (nothing read): a second try */
    if (!dot || read > (size_t)(dot - p)) return read;
    at = (size_t)(dot - p);
    length = elec__decimal_point(point);
    if (length == 0 || (length == 1 && point[0] == '.')) return read;
    memcpy(buf + at, point, length);
    memcpy(buf + at + length, dot + 1, n - at - 1);
    buf[n - 1 + length] = '\0';
    *out = strtod(buf, &stop);
    read = (size_t)(stop - buf);
    /* back to p's bytes: the point's length bytes were one '.' there */
    return read <= at ? read : read < at + length ? at : read - length + 1;
}

/* What a number's text turned out to be. */
enum {
    ELEC__PQR_NUMBER_OK = 0,
    ELEC__PQR_NUMBER_GARBLED,   /* not a decimal number */
    ELEC__PQR_NUMBER_INFINITE,  /* nan, inf, or beyond the type's range */
    ELEC__PQR_NUMBER_UNREAD     /* spelled right, but strtod did not take it
                                   whole (a decimal point of over
                                   ELEC__POINT_MAX - 1 bytes) */
};

/* A decimal number: [+-] digits [. digits] [(e|E) [+-] digits], at least
   one mantissa digit, nothing else. */
static int elec__pqr_number(const char *p, size_t n, double *out) {
    size_t i = 0, digits = 0;
    double v;
    if (i < n && (p[i] == '+' || p[i] == '-')) i++;
    if (n - i >= 3) { /* nan, inf, infinity: spelled, but not finite */
        char word[4];
        size_t c;
        for (c = 0; c < 3; c++) word[c] = (char)(p[i + c] | 0x20);
        word[3] = '\0';
        if (strcmp(word, "nan") == 0 || strcmp(word, "inf") == 0)
            return ELEC__PQR_NUMBER_INFINITE;
    }
    while (i < n && elec__pqr_digit(p[i])) i++, digits++;
    if (i < n && p[i] == '.') {
        i++;
        while (i < n && elec__pqr_digit(p[i])) i++, digits++;
    }
    if (digits == 0) return ELEC__PQR_NUMBER_GARBLED;
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        size_t exponent_digits = 0;
        i++;
        if (i < n && (p[i] == '+' || p[i] == '-')) i++;
        while (i < n && elec__pqr_digit(p[i])) i++, exponent_digits++;
        if (exponent_digits == 0) return ELEC__PQR_NUMBER_GARBLED;
    }
    if (i != n || n >= ELEC__NUMBER_MAX) return ELEC__PQR_NUMBER_GARBLED;
    if (elec__number_value(p, n, &v) != n) return ELEC__PQR_NUMBER_UNREAD;
    if (!elec__finite(v)) return ELEC__PQR_NUMBER_INFINITE;
    *out = v;
    return ELEC__PQR_NUMBER_OK;
}

/* A decimal integer with optional sign that fits in long long, and is at
   most limit in magnitude. */
static int elec__pqr_integer(const char *p, size_t n, long long limit,
                             long long *out) {
    size_t i = 0;
    int negative = 0;
    long long v = 0;
    if (i < n && (p[i] == '+' || p[i] == '-')) negative = p[i++] == '-';
    if (i == n) return ELEC__PQR_NUMBER_GARBLED;
    for (; i < n; i++) {
        if (!elec__pqr_digit(p[i])) return ELEC__PQR_NUMBER_GARBLED;
        if (v > (limit - (p[i] - '0')) / 10) return ELEC__PQR_NUMBER_INFINITE;
        v = 10 * v + (p[i] - '0');
    }
    *out = negative ? -v : v;
    return ELEC__PQR_NUMBER_OK;
}

/* Quotes at most 40 characters of a field in a message. */
#define ELEC__PQR_QUOTE(p, n) (int)((n) > 40 ? 40 : (n)), (p), ((n) > 40 ? "..." : "")

static int elec__pqr_real(const char *p, size_t n, const char *field,
                          double *out, char *why, size_t why_size) {
    int r = elec__pqr_number(p, n, out);
    if (r == ELEC__PQR_NUMBER_OK) return 1;
    if (n == 0)
        snprintf(why, why_size, "%s is missing", field);
    else
        snprintf(why, why_size, "%s '%.*s%s' %s", field, ELEC__PQR_QUOTE(p, n),
                 r == ELEC__PQR_NUMBER_INFINITE ? "is not a finite number"
                 : r == ELEC__PQR_NUMBER_UNREAD ? "could not be converted"
                                                : "is not a number");
    return 0;
}

static int elec__pqr_int(const char *p, size_t n, const char *field, int *out,
                         char *why, size_t why_size) {
    long long v;
    int r = elec__pqr_integer(p, n, INT_MAX, &v);
    if (r == ELEC__PQR_NUMBER_OK) {
        *out = (int)v;
        return 1;
    }
    if (n == 0)
        snprintf(why, why_size, "%s is missing", field);
    else
        snprintf(why, why_size, "%s '%.*s%s' %s", field, ELEC__PQR_QUOTE(p, n),
                 r == ELEC__PQR_NUMBER_INFINITE ? "is out of range"
                                                : "is not an integer");
    return 0;
}

/* A hybrid-36 number of `width` characters (the PDB convention for serial
   numbers past 99,999 and residue numbers past 9,999, width 5 and 4, which
   Phenix, ChimeraX and cctbx write): decimal up to 10^width - 1, then
   "A000" onwards counts on in base 36 with upper-case letters, then "a000"
   onwards with lower-case ones.  "A0000" is 100,000, "a0000" 100,000 +
   26 * 36^4.  Returns 1 and sets *out where p is one. */
static int elec__pqr_hybrid36(const char *p, size_t n, size_t width, int *out) {
    long long value = 0, block = 1, decimal = 1;
    int upper, i;
    if (n != width || width < 1 || width > 5 || !elec__pqr_letter(p[0])) return 0;
    upper = p[0] >= 'A' && p[0] <= 'Z';
    for (i = 0; i < (int)n; i++) {
        char c = p[i];
        int digit;
        if (elec__pqr_digit(c)) digit = c - '0';
        else if (upper && c >= 'A' && c <= 'Z') digit = 10 + (c - 'A');
        else if (!upper && c >= 'a' && c <= 'z') digit = 10 + (c - 'a');
        else return 0; /* mixed case, or not a base-36 digit */
        value = 36 * value + digit;
    }
    for (i = 1; i < (int)width; i++) block *= 36;
    for (i = 0; i < (int)width; i++) decimal *= 10;
    /* value - 10 * block counts from the first letter's "A000" */
    *out = (int)(decimal + (value - 10 * block) + (upper ? 0 : 26 * block));
    return 1;
}

/* A label's number (serial `width` 5, residue number 4): decimal, or
   hybrid-36 (elec__pqr_hybrid36).  What writers put where a serial
   overflows its columns otherwise, asterisks or VMD's hexadecimal (100,000
   to 1,048,575 as "%05x": "186a0"), is read as serial -1, as a serial
   labels an atom and nothing more (VMD's from "a0000" on read as the
   hybrid-36 they look like).  Asterisks are refused as a residue number,
   which says where one residue ends and the next begins. */
static int elec__pqr_label_number(const char *p, size_t n, size_t width, const char *field,
                                  int *out, char *why, size_t why_size) {
    size_t stars = 0, alphanumeric = 0;
    long long decimal;
    if (elec__pqr_hybrid36(p, n, width, out)) return 1;
    while (stars < n && p[stars] == '*') stars++;
    while (alphanumeric < n &&
           (elec__pqr_digit(p[alphanumeric]) || elec__pqr_letter(p[alphanumeric])))
        alphanumeric++;
    if (width == 5 && n == 5 && alphanumeric == n &&
        elec__pqr_integer(p, n, INT_MAX, &decimal) != ELEC__PQR_NUMBER_OK) {
        *out = -1; /* five letters and digits, neither decimal nor hybrid-36 */
        return 1;
    }
    if (n > 0 && stars == n) {
        if (width == 5) {
            *out = -1;
            return 1;
        }
        snprintf(why, why_size,
                 "%s '%.*s%s' overflowed its columns and so does not say where one residue "
                 "ends: write the file with hybrid-36 (\"A000\") or wrapped residue numbers",
                 field, ELEC__PQR_QUOTE(p, n));
        return 0;
    }
    return elec__pqr_int(p, n, field, out, why, why_size);
}

/* Copies a name into a fixed label field, refusing one that does not fit. */
static int elec__pqr_name(const char *p, size_t n, const char *field,
                          char *dst, size_t dst_size, char *why,
                          size_t why_size) {
    if (n == 0) {
        snprintf(why, why_size, "%s is missing", field);
        return 0;
    }
    if (n >= dst_size) {
        snprintf(why, why_size, "%s '%.*s%s' is longer than %d characters",
                 field, ELEC__PQR_QUOTE(p, n), (int)dst_size - 1);
        return 0;
    }
    memcpy(dst, p, n);
    dst[n] = '\0';
    return 1;
}

/* Residue number with an optional insertion code touching it ("52A"). */
static int elec__pqr_residue(const char *p, size_t n, elec_atom_label *label,
                             char *why, size_t why_size) {
    label->insertion_code = ' ';
    /* a letter leads a hybrid-36 number ("A000"), a digit or sign a decimal
       one, whose insertion code follows it */
    if (n > 1 && elec__pqr_letter(p[n - 1]) && !elec__pqr_letter(p[0])) {
        label->insertion_code = p[n - 1];
        n--;
    }
    return elec__pqr_label_number(p, n, 4, "residue number", &label->residue_number, why,
                                  why_size);
}

/* Whether a byte can stand in a text file (PQR, OpenDX): not NUL or
   another control character, but tab, carriage return and line feed. */
static int elec__text_byte(unsigned char b) {
    return !((b < 0x20 && b != '\t' && b != '\r' && b != '\n') || b == 0x7f);
}

/* Refuses text[from, to) at its first byte that no text file has, naming
   its line and column (counted from the start of the text). */
static elec_status elec__text_check(const char *path, const char *text,
                                    size_t from, size_t to, const char *what,
                                    elec_error *err) {
    size_t i, line_start = 0;
    long line = 1;
    for (i = from; i < to; i++)
        if (!elec__text_byte((unsigned char)text[i])) break;
    if (i == to) return ELEC_OK;
    for (to = 0; to < i; to++)
        if (text[to] == '\n') {
            line++;
            line_start = to + 1;
        }
    (void)path;
    return elec__fail(err, ELEC_ERR_PARSE, line,
                      "line %ld: binary data (byte 0x%02x at column %zu): not "
                      "%s text file", line, (unsigned char)text[i],
                      i - line_start + 1, what);
}

static elec_status elec__text_too_large(const char *path, const char *what,
                                        elec_error *err) {
    return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                      "'%s' is larger than %zu bytes, the limit for %s input "
                      "(ELEC_MAX_INPUT_BYTES)", path, (size_t)ELEC_MAX_INPUT_BYTES,
                      what);
}

/* What a reader of a binary format checks in a file's first bytes (n of
   them: ELEC__HEAD_BYTES, or fewer when that is the whole file): ELEC_OK
   and the length the header gives the whole file, or the refusal.  It
   stops a stream (a pipe, /dev/zero, a gzip bomb) at its header, as the
   text check stops one at its first binary byte. */
#define ELEC__HEAD_BYTES ((size_t)1024)
typedef elec_status (*elec__head_check)(const char *path, const char *head, size_t n,
                                        size_t *whole, elec_error *err);

/* The gzip stream that *data holds, inflated into a new buffer that
   replaces it (">>mrc", beside the gzip writer). */
static elec_status elec__gunzip(const char *path, const char *what, int text,
                                elec__head_check head, char **data, size_t *length,
                                elec_error *err);

/* Whether path ends in suffix, ASCII case ignored. */
static int elec__path_ends(const char *path, const char *suffix) {
    size_t n = strlen(path), m = strlen(suffix), i;
    if (n < m) return 0;
    for (i = 0; i < m; i++) {
        char c = path[n - m + i];
        if (c >= 'A' && c <= 'Z') c = (char)(c - 'A' + 'a');
        if (c != suffix[i]) return 0;
    }
    return 1;
}

/* Reads a whole file into a new '\0'-terminated buffer: refused when
   larger than ELEC_MAX_INPUT_BYTES (a regular file before any of it is
   read), for a text file at its first byte that no text file has, for a
   binary one (head not NULL) as soon as its header is refused or it has
   more bytes than the header gives it, so that neither a huge file nor
   /dev/zero is read to the end.  A file that starts with gzip's magic
   bytes is inflated (a text file whatever its name, a binary one when its
   name ends in ".gz"), within the same limit.  what names the format in
   messages ("a PQR"). */
static elec_status elec__read_file(const char *path, const char *what, int text,
                                   elec__head_check head, char **data, size_t *length,
                                   elec_error *err) {
    const size_t limit = (size_t)ELEC_MAX_INPUT_BYTES;
    char *buf = NULL;
    size_t cap = (size_t)1 << 16, len = 0, whole = 0;
    int gzip = 0, headed = 0;
    elec_status s = ELEC_OK;
#ifdef ELEC__POSIX
    struct stat st;
    int fd;
#else
    FILE *f;
#endif
    *data = NULL;
    *length = 0;
    if (!path) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "path is NULL");
#ifdef ELEC__POSIX
    fd = open(path, O_RDONLY | O_NOCTTY);
    if (fd < 0)
        return elec__fail(err, ELEC_ERR_IO, 0, "cannot open '%s': %s", path,
                          strerror(errno));
    if (fstat(fd, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            close(fd);
            return elec__fail(err, ELEC_ERR_IO, 0,
                              "cannot read '%s': it is a directory", path);
        }
        if (S_ISREG(st.st_mode)) {
            if ((unsigned long long)st.st_size > (unsigned long long)limit) {
                close(fd);
                return elec__text_too_large(path, what, err);
            }
            cap = (size_t)st.st_size + 1; /* one read, and one to see the end */
        }
    }
#else
    f = fopen(path, "rb");
    if (!f)
        return elec__fail(err, ELEC_ERR_IO, 0, "cannot open '%s': %s", path,
                          strerror(errno));
#endif
    buf = (char *)ELEC_MALLOC(cap + 1);
    if (!buf) s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                             "no memory for %zu bytes of '%s'", cap, path);
    while (s == ELEC_OK) {
        size_t got;
        if (len == cap) { /* a stream, or a file that grew: double, to the limit */
            size_t new_cap = cap < limit / 2 ? 2 * cap : limit + 1;
            char *grown;
            if (len > limit) {
                s = elec__text_too_large(path, what, err);
                break;
            }
            grown = (char *)ELEC_MALLOC(new_cap + 1);
            if (!grown) {
                s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                               "no memory for %zu bytes of '%s'", new_cap, path);
                break;
            }
            memcpy(grown, buf, len);
            ELEC_FREE(buf);
            buf = grown;
            cap = new_cap;
        }
#ifdef ELEC__POSIX
        {
            ssize_t r = read(fd, buf + len, cap - len);
            if (r < 0 && errno == EINTR) continue;
            if (r < 0) {
                s = elec__fail(err, ELEC_ERR_IO, 0, "error reading '%s': %s",
                               path, strerror(errno));
                break;
            }
            got = (size_t)r;
        }
#else
        got = fread(buf + len, 1, cap - len, f);
        if (got == 0 && ferror(f)) {
            s = elec__fail(err, ELEC_ERR_IO, 0, "error reading '%s'", path);
            break;
        }
#endif
        if (got == 0) break; /* the end */
        if (len == 0)
            gzip = got >= 2 && (unsigned char)buf[0] == 0x1f &&
                   (unsigned char)buf[1] == 0x8b &&
                   (text || elec__path_ends(path, ".gz")); /* as the writer names it */
        if (text && !gzip) s = elec__text_check(path, buf, len, len + got, what, err);
        len += got;
        if (s == ELEC_OK && head && !gzip && !headed && len >= ELEC__HEAD_BYTES) {
            s = head(path, buf, len, &whole, err);
            headed = 1;
        }
        if (s == ELEC_OK && headed && len > whole)
            s = elec__fail(err, ELEC_ERR_PARSE, 0,
                           "'%s' has more than the %zu bytes its header gives it",
                           path, whole);
        if (s == ELEC_OK && len > limit) s = elec__text_too_large(path, what, err);
    }
#ifdef ELEC__POSIX
    close(fd);
#else
    fclose(f);
#endif
    if (s == ELEC_OK && gzip) s = elec__gunzip(path, what, text, head, &buf, &len, err);
    if (s != ELEC_OK) {
        ELEC_FREE(buf);
        return s;
    }
    buf[len] = '\0';
    *data = buf;
    *length = len;
    return ELEC_OK;
}

ELEC_DEF elec_status elec_read_text(const char *path, const char *what,
                                    char **text, size_t *length,
                                    elec_error *err) {
    return elec__read_file(path, what, 1, NULL, text, length, err);
}

/* --------------------------------------------------------------- outputs */

#define ELEC__OUTPUT_BUFFER ((size_t)1 << 16)

struct elec_output {
    char *path;   /* where the file goes */
    char *temp;   /* the temporary file written, renamed over path; NULL
                     when path is written straight through */
    int replaces; /* a file was at path: it is kept until the rename */
    int error;    /* errno of the first failed write, -1 for one without
                     an errno; 0 while all is well */
    size_t used;  /* bytes in buffer */
#ifdef ELEC__POSIX
    int fd;
#else
    FILE *file;
#endif
    /* a stage the buffered bytes pass through on their way to the file
       (gzip: elec_output_open_gzip); NULL writes them as they are.  Called
       with 0 to take the buffer, 1 at the commit (the end of the stream),
       -1 at an abort (free what it holds). */
    void (*stage)(elec_output *out, int end);
    void *stage_state;
    char buffer[ELEC__OUTPUT_BUFFER];
};

static void elec__output_free(elec_output *out) {
    ELEC_FREE(out->path);
    ELEC_FREE(out->temp);
    ELEC_FREE(out);
}

/* A copy of the n bytes at p followed by the strings a and b. */
static char *elec__concat(const char *p, size_t n, const char *a,
                          const char *b) {
    size_t na = strlen(a), nb = strlen(b);
    char *s = (char *)ELEC_MALLOC(n + na + nb + 1);
    if (!s) return NULL;
    memcpy(s, p, n);
    memcpy(s + n, a, na);
    memcpy(s + n + na, b, nb + 1);
    return s;
}

/* The name of the temporary file for path at a given attempt:
   ".NAME.elec-PID-N.tmp" in path's directory, or ".elec-PID-N.tmp" there
   (short_name, where the first is too long); allocated, NULL without
   memory.  The tools make the same names ahead of a signal
   (examples/cli.h, cli_remove_temps_on_signal). */
#ifdef ELEC__POSIX
static char *elec__output_temp_name(const char *path, int attempt, int short_name) {
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
    char suffix[64];
    char *temp;
    snprintf(suffix, sizeof suffix, ".elec-%ld-%d.tmp", (long)getpid(), attempt);
    temp = short_name ? elec__concat(path, dir, suffix, "")
                      : elec__concat(path, dir, ".", path + dir);
    if (temp && !short_name) {
        char *whole = elec__concat(temp, strlen(temp), suffix, "");
        ELEC_FREE(temp);
        temp = whole;
    }
    return temp;
}

/* The temporary file for path (elec__output_temp_name), created
   exclusively, so that it is new and no one else's.  Returns its name, or
   NULL with errno set. */
static char *elec__output_temp(const char *path, unsigned mode, int *fd) {
    int attempt, short_name = 0;
    for (attempt = 0; attempt < 100; attempt++) {
        char *temp = elec__output_temp_name(path, attempt, short_name);
        if (!temp) {
            errno = ENOMEM;
            return NULL;
        }
        *fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOCTTY, (mode_t)mode);
        if (*fd >= 0) return temp;
        ELEC_FREE(temp);
        if (errno == ENAMETOOLONG && !short_name) short_name = 1;
        else if (errno != EEXIST) return NULL;
    }
    errno = EEXIST;
    return NULL;
}
#endif

#ifdef ELEC__POSIX
/* The descriptor a path names, or -1: 0, 1 and 2 for /dev/stdin,
   /dev/stdout and /dev/stderr, N for /dev/fd/N and /proc/self/fd/N (as the
   kernel spells them: digits, no leading zero), and 1 or 2 for any other
   name of what stdout or stderr holds open, found by device and inode
   (/dev//stdout, /proc/<pid>/fd/1, or the file stdout is redirected to):
   a name's spelling alone let /dev//stdout be renamed over, as root. */
static int elec__output_descriptor(const char *path) {
    const char *digits = NULL;
    long long n = 0;
    struct stat named, held;
    int fd;
    if (!strcmp(path, "/dev/stdin")) return 0;
    if (!strcmp(path, "/dev/stdout")) return 1;
    if (!strcmp(path, "/dev/stderr")) return 2;
    if (!strncmp(path, "/dev/fd/", 8)) digits = path + 8;
    else if (!strncmp(path, "/proc/self/fd/", 14)) digits = path + 14;
    if (digits && *digits && !(digits[0] == '0' && digits[1])) {
        for (; *digits >= '0' && *digits <= '9' && n <= INT_MAX; digits++)
            n = 10 * n + (*digits - '0');
        if (!*digits && n <= INT_MAX) return (int)n;
    }
    if (stat(path, &named) != 0) return -1;
    for (fd = 1; fd <= 2; fd++)
        if (fstat(fd, &held) == 0 && held.st_dev == named.st_dev &&
            held.st_ino == named.st_ino)
            return fd;
    return -1;
}

/* Whether descriptor fd is open for writing: 0, or errno's value (EBADF
   for none; EACCES where it is open only for reading). */
static int elec__output_writable(int fd) {
    int flags = fcntl(fd, F_GETFL);
    if (flags < 0) return errno ? errno : EBADF;
    return (flags & O_ACCMODE) == O_RDONLY ? EACCES : 0;
}
#endif

ELEC_DEF elec_status elec_output_open(const char *path, elec_output **out,
                                      elec_error *err) {
    elec_output *o;
    size_t n;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    *out = NULL;
    if (!path || !*path)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "path is NULL or empty");
    n = strlen(path);
    if (path[n - 1] == '/')
        return elec__fail(err, ELEC_ERR_IO, 0,
                          "cannot write '%s': it names a directory", path);
    o = (elec_output *)ELEC_MALLOC(sizeof *o);
    if (!o) return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory to write '%s'", path);
    o->temp = NULL;
    o->replaces = 0;
    o->error = 0;
    o->used = 0;
    o->stage = NULL;
    o->stage_state = NULL;
    o->path = elec__concat(path, n, "", "");
    if (!o->path) {
        elec__output_free(o);
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory to write '%s'", path);
    }
#ifdef ELEC__POSIX
    {
        struct stat st;
        int exists = stat(path, &st) == 0;
        if (exists && S_ISDIR(st.st_mode)) {
            elec__output_free(o);
            return elec__fail(err, ELEC_ERR_IO, 0,
                              "cannot write '%s': it is a directory", path);
        }
        const int descriptor = elec__output_descriptor(path);
        if (descriptor >= 0) {
            /* the caller's own descriptor, shared (its offset, its append
               mode): /dev/stdout is a regular file where stdout is
               redirected to one, and a rename replaced the link itself (as
               root) where the file was meant; opened by name, it would
               start again at offset 0 under what the caller writes next */
            int e = elec__output_writable(descriptor);
            o->fd = e ? -1 : dup(descriptor);
            if (o->fd < 0) {
                if (!e) e = errno;
                elec__output_free(o);
                return elec__fail(err, ELEC_ERR_IO, 0, "cannot write '%s': %s", path,
                                  e == EACCES ? "its descriptor is open only for reading"
                                              : strerror(e));
            }
        } else if (exists && !S_ISREG(st.st_mode)) {
            /* a device or a pipe: written where it is, never replaced */
            o->fd = open(path, O_WRONLY | O_NOCTTY);
            if (o->fd < 0) {
                int e = errno;
                elec__output_free(o);
                return elec__fail(err, ELEC_ERR_IO, 0,
                                  "cannot open '%s' for writing: %s", path,
                                  strerror(e));
            }
        } else {
            /* as fopen(path, "w") would: a file there must be writable */
            if (exists && access(path, W_OK) != 0) {
                int e = errno;
                elec__output_free(o);
                return elec__fail(err, ELEC_ERR_IO, 0,
                                  "cannot open '%s' for writing: %s", path,
                                  strerror(e));
            }
            o->replaces = exists;
            /* 0666 as fopen gives a new file (less the umask), or the
               permission bits of the file it replaces */
            o->temp = elec__output_temp(path, exists ? (unsigned)(st.st_mode & 0777)
                                                     : 0666u, &o->fd);
            if (!o->temp) {
                int e = errno;
                elec__output_free(o);
                return elec__fail(err, ELEC_ERR_IO, 0,
                                  "cannot create a file beside '%s' to write "
                                  "it: %s", path, strerror(e));
            }
            /* open() applied the umask; an existing file's bits are kept whole */
            if (exists) (void)chmod(o->temp, st.st_mode & 0777);
        }
    }
#else
    {
        /* ISO C alone: a temporary name beside path, checked by opening it
           for reading (not atomic), no fsync, and no way to tell a device
           from a file. */
        int attempt;
        o->file = NULL;
        for (attempt = 0; attempt < 100 && !o->file; attempt++) {
            char suffix[32];
            FILE *probe;
            snprintf(suffix, sizeof suffix, ".elec-%d.tmp", attempt);
            ELEC_FREE(o->temp);
            o->temp = elec__concat(path, n, suffix, "");
            if (!o->temp) break;
            probe = fopen(o->temp, "rb");
            if (probe) {
                fclose(probe);
                continue;
            }
            o->file = fopen(o->temp, "wb");
            if (!o->file) break;
        }
        if (!o->file) {
            int e = errno;
            elec__output_free(o);
            return elec__fail(err, ELEC_ERR_IO, 0,
                              "cannot create a file beside '%s' to write it: %s",
                              path, strerror(e));
        }
    }
#endif
    *out = o;
    elec__ok(err);
    return ELEC_OK;
}

/* Writes size bytes to the file; a failure is kept in out->error. */
static void elec__output_raw(elec_output *out, const char *data, size_t size) {
    size_t done = 0;
    while (!out->error && done < size) {
#ifdef ELEC__POSIX
        ssize_t r = write(out->fd, data + done, size - done);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            out->error = r < 0 ? errno : -1;
            break;
        }
        done += (size_t)r;
#else
        size_t r = fwrite(data + done, 1, size - done, out->file);
        if (r == 0) {
            out->error = errno ? errno : -1;
            break;
        }
        done += r;
#endif
    }
}

/* Writes what is buffered, through the stage when there is one. */
static void elec__output_flush(elec_output *out) {
    if (!out->error) {
        if (out->stage) out->stage(out, 0);
        else elec__output_raw(out, out->buffer, out->used);
    }
    out->used = 0;
}

ELEC_DEF void elec_output_write(elec_output *out, const void *data,
                                size_t size) {
    const char *p = (const char *)data;
    if (!out || out->error) return;
    while (size) {
        size_t room = ELEC__OUTPUT_BUFFER - out->used;
        size_t n = size < room ? size : room;
        memcpy(out->buffer + out->used, p, n);
        out->used += n;
        p += n;
        size -= n;
        if (out->used == ELEC__OUTPUT_BUFFER) elec__output_flush(out);
        if (out->error) return;
    }
}

ELEC_DEF void elec_output_printf(elec_output *out, const char *format, ...) {
    va_list args;
    int n;
    size_t room;
    if (!out || out->error) return;
    room = ELEC__OUTPUT_BUFFER - out->used;
    va_start(args, format);
    n = vsnprintf(out->buffer + out->used, room, format, args);
    va_end(args);
    if (n < 0) {
        out->error = -1;
        return;
    }
    if ((size_t)n < room) { /* it fitted */
        out->used += (size_t)n;
        return;
    }
    /* flush and format again: into the buffer, or a block of its own */
    elec__output_flush(out);
    if (out->error) return;
    if ((size_t)n < ELEC__OUTPUT_BUFFER) {
        va_start(args, format);
        vsnprintf(out->buffer, ELEC__OUTPUT_BUFFER, format, args);
        va_end(args);
        out->used = (size_t)n;
    } else {
        char *big = (char *)ELEC_MALLOC((size_t)n + 1);
        if (!big) {
            out->error = ENOMEM;
            return;
        }
        va_start(args, format);
        vsnprintf(big, (size_t)n + 1, format, args);
        va_end(args);
        elec_output_write(out, big, (size_t)n);
        ELEC_FREE(big);
    }
}

ELEC_DEF void elec_output_abort(elec_output *out) {
    if (!out) return;
    if (out->stage) out->stage(out, -1);
#ifdef ELEC__POSIX
    close(out->fd);
#else
    fclose(out->file);
#endif
    if (out->temp) remove(out->temp); /* ours: created exclusively */
    elec__output_free(out);
}

ELEC_DEF elec_status elec_output_commit(elec_output *out, elec_error *err) {
    int e;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    elec__output_flush(out);
    if (out->stage) out->stage(out, 1); /* the stream's end (and frees it) */
#ifdef ELEC__POSIX
    /* A regular file's data must be on disk before the rename makes it the
       file at path; a device or pipe may not support fsync at all. */
    if (!out->error && out->temp && fsync(out->fd) != 0) out->error = errno;
    if (close(out->fd) != 0 && !out->error) out->error = errno;
    out->fd = -1;
#else
    if (fflush(out->file) != 0 && !out->error) out->error = errno ? errno : -1;
    if (fclose(out->file) != 0 && !out->error) out->error = errno ? errno : -1;
    out->file = NULL;
#endif
    if (!out->error && out->temp && rename(out->temp, out->path) != 0) {
#ifdef ELEC__POSIX
        out->error = errno ? errno : -1;
#else
        /* ISO C leaves rename over an existing file to the system (Windows
           refuses it): there, the old file goes just before the rename */
        if (remove(out->path) != 0 || rename(out->temp, out->path) != 0)
            out->error = errno ? errno : -1;
#endif
    }
    e = out->error;
    if (e) {
        elec__fail(err, ELEC_ERR_IO, 0, "error writing '%s': %s%s", out->path,
                   e > 0 ? strerror(e) : "write failed",
                   !out->temp     ? ""
                   : out->replaces ? " (the file that was there is unchanged)"
                                   : " (no file was left)");
        if (out->temp) remove(out->temp);
        elec__output_free(out);
        return ELEC_ERR_IO;
    }
#ifdef ELEC__POSIX
    if (out->temp) {
        /* the rename itself on disk: fsync the directory (best effort) */
        const char *slash = strrchr(out->path, '/');
        char *dir = slash ? elec__concat(out->path, (size_t)(slash - out->path) + 1, ".", "")
                          : elec__concat(".", 1, "", "");
        int fd = dir ? open(dir, O_RDONLY | O_NOCTTY) : -1;
        if (fd >= 0) {
            (void)fsync(fd);
            close(fd);
        }
        ELEC_FREE(dir);
    }
#endif
    elec__output_free(out);
    elec__ok(err);
    return ELEC_OK;
}

#ifdef ELEC__POSIX
#ifdef S_ISVTX
#define ELEC__STICKY_BIT S_ISVTX
#else
#define ELEC__STICKY_BIT 01000 /* S_ISVTX is XSI: strict C99 headers leave it out */
#endif
/* The entry at a path itself, a symbolic link where one stands there:
   lstat where the headers declare it (POSIX.1-2001 and later, which the
   tools ask for; strict C99 headers do not), else the file it names. */
#if (defined(_POSIX_C_SOURCE) && _POSIX_C_SOURCE >= 200112L) || defined(_XOPEN_SOURCE) ||      \
    defined(_DEFAULT_SOURCE) || defined(_BSD_SOURCE) || defined(_GNU_SOURCE) ||               \
    defined(__APPLE__)
#define ELEC__ENTRY_STAT(path, st) lstat(path, st)
#else
#define ELEC__ENTRY_STAT(path, st) stat(path, st)
#endif
/* Whether the caller may replace what stands at path (st: the file it
   names) by a rename: in a directory with the sticky bit (such as /tmp)
   only the entry's owner, the directory's or root may, whatever the
   file's mode.  elec_output_check found a world-writable file of another
   user's there writable, and the tools ran their whole computation before
   the rename failed (an audit); the rename replaces a symbolic link
   itself, so the link's owner counts, not its target's (a review: an own
   link to another's file was refused, another's link to an own file
   passed).  1 where it may, and where the directory cannot be read (the
   rename then says why); 0 where it may not. */
static int elec__output_replaceable(const char *path, const struct stat *st) {
    const char *slash = strrchr(path, '/');
    const uid_t me = geteuid();
    struct stat dir, entry;
    char *name;
    size_t length;
    int replaceable = 1;
    if (ELEC__ENTRY_STAT(path, &entry) == 0) st = &entry;
    if (me == 0 || st->st_uid == me) return 1;
    length = slash ? (slash == path ? 1 : (size_t)(slash - path)) : 1;
    name = (char *)ELEC_MALLOC(length + 1);
    if (!name) return 1;
    if (slash) memcpy(name, path, length);
    else name[0] = '.';
    name[length] = '\0';
    if (stat(name, &dir) == 0 && (dir.st_mode & ELEC__STICKY_BIT) && dir.st_uid != me)
        replaceable = 0;
    ELEC_FREE(name);
    return replaceable;
}
#endif

ELEC_DEF elec_status elec_output_check(const char *path, const char *input,
                                       elec_error *err) {
    elec_output *out;
    elec_status s;
    if (!path || !*path)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "path is NULL or empty");
#ifdef ELEC__POSIX
    {
        struct stat st, in;
        if (stat(path, &st) == 0) {
            if (input && stat(input, &in) == 0 && in.st_dev == st.st_dev &&
                in.st_ino == st.st_ino)
                return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                  "'%s' is the input file '%s': writing it would "
                                  "destroy the input", path, input);
            if (S_ISDIR(st.st_mode))
                return elec__fail(err, ELEC_ERR_IO, 0,
                                  "cannot write '%s': it is a directory", path);
            const int descriptor = elec__output_descriptor(path);
            if (descriptor >= 0) {
                /* the caller's descriptor: open for writing, and left as it
                   is (opening it by name would truncate its file now) */
                int e = elec__output_writable(descriptor);
                if (e)
                    return elec__fail(err, ELEC_ERR_IO, 0, "cannot write '%s': %s", path,
                                      e == EACCES ? "its descriptor is open only for reading"
                                                  : strerror(e));
                elec__ok(err);
                return ELEC_OK;
            }
            if (!S_ISREG(st.st_mode)) {
                /* opening a pipe could wait for a reader: ask instead */
                if (access(path, W_OK) != 0)
                    return elec__fail(err, ELEC_ERR_IO, 0,
                                      "cannot write '%s': %s", path,
                                      strerror(errno));
                elec__ok(err);
                return ELEC_OK;
            }
            if (!elec__output_replaceable(path, &st))
                return elec__fail(err, ELEC_ERR_IO, 0,
                                  "cannot replace '%s': it is another user's file in a "
                                  "directory with the sticky bit (such as /tmp), where only "
                                  "its owner may replace it, and elec writes a new file and "
                                  "renames it over the old; write to another path", path);
        } else if (errno != ENOENT) {
            return elec__fail(err, ELEC_ERR_IO, 0, "cannot write '%s': %s", path,
                              strerror(errno));
        }
    }
#else
    if (input && strcmp(path, input) == 0)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "'%s' is the input file: writing it would destroy "
                          "the input", path);
#endif
    /* a new or regular file: make the temporary file it would be written to */
    s = elec_output_open(path, &out, err);
    if (s != ELEC_OK) return s;
    elec_output_abort(out);
    elec__ok(err);
    return ELEC_OK;
}

/* ------------------------------------------------------------------ PQR */

typedef struct elec__pqr_atom {
    double xyz[3], charge, radius;
    elec_atom_label label;
} elec__pqr_atom;

/* The whitespace dialect: serial name resName [chain] resSeq[iCode] x y z
   q r, the tokens after the record name (9 or 10 of them). */
static int elec__pqr_fields(const elec__pqr_token *t, size_t n,
                            elec__pqr_atom *a, int *fields_read, char *why,
                            size_t why_size) {
    static const char *const coordinate[3] = {"x coordinate", "y coordinate",
                                              "z coordinate"};
    size_t base, axis;
    *fields_read = 0;
    if (n != 9 && n != 10) {
        snprintf(why, why_size, "%zu fields where 10 or 11 are expected",
                 n + 1);
        return 0;
    }
    a->label.chain = ' ';
    if (n == 10) {
        if (t[3].n != 1) {
            snprintf(why, why_size,
                     "chain identifier '%.*s%s' is not one character",
                     ELEC__PQR_QUOTE(t[3].p, t[3].n));
            return 0;
        }
        a->label.chain = t[3].p[0];
    }
    base = n == 10 ? 4 : 3;
    if (!elec__pqr_label_number(t[0].p, t[0].n, 5, "serial number", &a->label.serial, why,
                                why_size))
        return 0;
    ++*fields_read;
    if (!elec__pqr_name(t[1].p, t[1].n, "atom name", a->label.name,
                        sizeof a->label.name, why, why_size))
        return 0;
    ++*fields_read;
    /* at most 4 characters, as in PDB columns 18-21: a longer one is a
       residue name that touches its chain identifier ("NTERA") */
    if (!elec__pqr_name(t[2].p, t[2].n, "residue name", a->label.residue_name,
                        5, why, why_size))
        return 0;
    ++*fields_read;
    if (!elec__pqr_residue(t[base].p, t[base].n, &a->label, why, why_size))
        return 0;
    ++*fields_read;
    for (axis = 0; axis < 3; axis++, ++*fields_read)
        if (!elec__pqr_real(t[base + 1 + axis].p, t[base + 1 + axis].n,
                            coordinate[axis], &a->xyz[axis], why, why_size))
            return 0;
    if (!elec__pqr_real(t[base + 4].p, t[base + 4].n, "charge", &a->charge,
                        why, why_size))
        return 0;
    ++*fields_read;
    return elec__pqr_real(t[base + 5].p, t[base + 5].n, "radius", &a->radius,
                          why, why_size);
}

/* Columns [first, last] (1-based, inclusive, as the PDB format names them)
   of a line, without surrounding blanks. */
static elec__pqr_token elec__pqr_columns(const char *line, size_t length,
                                         size_t first, size_t last) {
    elec__pqr_token t;
    size_t a = first - 1, b = last < length ? last : length;
    if (a > b) a = b;
    while (a < b && elec__pqr_space(line[a])) a++;
    while (b > a && elec__pqr_space(line[b - 1])) b--;
    t.p = line + a;
    t.n = b - a;
    return t;
}

/* The PDB-column dialect pdb2pqr writes, where wide numbers may run
   together: serial 7-11, name 13-16, resName 18-21, chain 22, resSeq
   23-26, iCode 27, x 31-38, y 39-46, z 47-54, then charge and radius
   separated by blanks. */
static int elec__pqr_fixed(const char *line, size_t length, elec__pqr_atom *a,
                           int *fields_read, char *why, size_t why_size) {
    static const char *const coordinate[3] = {
        "x coordinate (columns 31-38)", "y coordinate (columns 39-46)",
        "z coordinate (columns 47-54)"};
    elec__pqr_token t, rest[3];
    size_t axis, n;
    *fields_read = 0;
    if (length < 54) {
        snprintf(why, why_size,
                 "the line ends at column %zu, before the z coordinate "
                 "(columns 47-54)", length);
        return 0;
    }
    t = elec__pqr_columns(line, length, 7, 11);
    if (!elec__pqr_label_number(t.p, t.n, 5, "serial number (columns 7-11)",
                                &a->label.serial, why, why_size))
        return 0;
    ++*fields_read;
    t = elec__pqr_columns(line, length, 13, 16);
    if (!elec__pqr_name(t.p, t.n, "atom name (columns 13-16)", a->label.name,
                        sizeof a->label.name, why, why_size))
        return 0;
    ++*fields_read;
    t = elec__pqr_columns(line, length, 18, 21);
    if (!elec__pqr_name(t.p, t.n, "residue name (columns 18-21)",
                        a->label.residue_name, sizeof a->label.residue_name,
                        why, why_size))
        return 0;
    ++*fields_read;
    a->label.chain = elec__pqr_space(line[21]) ? ' ' : line[21];
    t = elec__pqr_columns(line, length, 23, 26);
    if (!elec__pqr_label_number(t.p, t.n, 4, "residue number (columns 23-26)",
                                &a->label.residue_number, why, why_size))
        return 0;
    ++*fields_read;
    a->label.insertion_code = elec__pqr_space(line[26]) ? ' ' : line[26];
    for (axis = 0; axis < 3; axis++) {
        t = elec__pqr_columns(line, length, 31 + 8 * axis, 38 + 8 * axis);
        if (!elec__pqr_real(t.p, t.n, coordinate[axis], &a->xyz[axis], why,
                            why_size))
            return 0;
        ++*fields_read;
    }
    n = elec__pqr_split(line + 54, line + length, rest, 3);
    if (n != 2) {
        snprintf(why, why_size,
                 "%zu fields after column 54 where charge and radius are "
                 "expected", n);
        return 0;
    }
    if (!elec__pqr_real(rest[0].p, rest[0].n, "charge", &a->charge, why,
                        why_size))
        return 0;
    ++*fields_read;
    return elec__pqr_real(rest[1].p, rest[1].n, "radius", &a->radius, why,
                          why_size);
}

/* One ATOM/HETATM line: the whitespace dialect when it has 10 or 11 fields
   that all read, else PDB columns.  When neither reads, the message is
   that of the dialect that got further into the line. */
static int elec__pqr_record(const char *line, size_t length, size_t keyword,
                            elec__pqr_atom *a, char *why, size_t why_size) {
    elec__pqr_token t[10];
    char fixed_why[160];
    int blank_read, fixed_read;
    size_t n = elec__pqr_split(line + keyword, line + length, t, 10);
    memset(a, 0, sizeof *a);
    a->label.is_hetatm = (char)(keyword == 6);
    if (n == 9 || n == 10) {
        if (elec__pqr_fields(t, n, a, &blank_read, why, why_size)) return 1;
        memset(a, 0, sizeof *a);
        a->label.is_hetatm = (char)(keyword == 6);
        if (elec__pqr_fixed(line, length, a, &fixed_read, fixed_why,
                            sizeof fixed_why))
            return 1;
        if (fixed_read > blank_read)
            snprintf(why, why_size, "%s", fixed_why);
        return 0;
    }
    if (elec__pqr_fixed(line, length, a, &fixed_read, fixed_why,
                        sizeof fixed_why))
        return 1;
    if (length < 54)
        snprintf(why, why_size,
                 "record is truncated: %zu fields where 10 or 11 are expected",
                 n + 1);
    else
        snprintf(why, why_size,
                 "%zu fields where 10 or 11 are expected, and as PDB columns: %s",
                 n + 1, fixed_why);
    return 0;
}

/* CRYST1 a b c alpha beta gamma [space group, z]: the cell blank-separated,
   else PDB columns 7-15, 16-24, 25-33, 34-40, 41-47, 48-54; the space
   group (columns 56-66, trimmed, into group[12]) and Z (67-70, 0 where
   blank or not a count) by their columns alone, as the PDB format and
   pdb2pqr place them. */
static int elec__pqr_cryst1(const char *line, size_t length, double cell[6], char group[12],
                            int *z, char *why, size_t why_size) {
    static const char *const field[6] = {"CRYST1 a", "CRYST1 b", "CRYST1 c",
                                         "CRYST1 alpha", "CRYST1 beta",
                                         "CRYST1 gamma"};
    static const size_t first[6] = {7, 16, 25, 34, 41, 48};
    static const size_t last[6] = {15, 24, 33, 40, 47, 54};
    elec__pqr_token t[6];
    size_t n = elec__pqr_split(line + 6, line + length, t, 6), i;
    int ok = n >= 6;
    for (i = 0; ok && i < 6; i++)
        ok = elec__pqr_number(t[i].p, t[i].n, &cell[i]) == ELEC__PQR_NUMBER_OK;
    if (!ok) {
        for (i = 0; i < 6; i++) {
            elec__pqr_token c = elec__pqr_columns(line, length, first[i], last[i]);
            if (!elec__pqr_real(c.p, c.n, field[i], &cell[i], why, why_size))
                return 0;
        }
    }
    for (i = 0; i < 6; i++) {
        if (!(cell[i] > 0.0) || (i >= 3 && !(cell[i] < 180.0))) {
            snprintf(why, why_size, "%s %g is out of range", field[i], cell[i]);
            return 0;
        }
    }
    {
        const elec__pqr_token g = elec__pqr_columns(line, length, 56, 66);
        const elec__pqr_token count = elec__pqr_columns(line, length, 67, 70);
        memcpy(group, g.p, g.n); /* at most 11 columns */
        group[g.n] = '\0';
        *z = 0;
        for (i = 0; i < count.n && count.p[i] >= '0' && count.p[i] <= '9'; i++)
            *z = 10 * *z + (count.p[i] - '0');
        if (i < count.n) *z = 0;
    }
    return 1;
}

static void elec__pqr_release(elec_structure *s) {
    ELEC_FREE(s->xyz);
    ELEC_FREE(s->charge);
    ELEC_FREE(s->radius);
    ELEC_FREE(s->label);
    memset(s, 0, sizeof *s);
}

/* Room for one more atom: capacities double, so n atoms cost O(n) copies. */
static int elec__pqr_grow(elec_structure *s, size_t *capacity) {
    size_t cap = *capacity ? 2 * *capacity : 1024;
    double *xyz, *charge, *radius;
    elec_atom_label *label;
    if (cap <= *capacity || cap > SIZE_MAX / (3 * sizeof(double)) ||
        cap > SIZE_MAX / sizeof(elec_atom_label))
        return 0;
    xyz = (double *)ELEC_MALLOC(3 * cap * sizeof(double));
    charge = (double *)ELEC_MALLOC(cap * sizeof(double));
    radius = (double *)ELEC_MALLOC(cap * sizeof(double));
    label = (elec_atom_label *)ELEC_MALLOC(cap * sizeof(elec_atom_label));
    if (!xyz || !charge || !radius || !label) {
        ELEC_FREE(xyz);
        ELEC_FREE(charge);
        ELEC_FREE(radius);
        ELEC_FREE(label);
        return 0;
    }
    if (s->count) {
        memcpy(xyz, s->xyz, 3 * s->count * sizeof(double));
        memcpy(charge, s->charge, s->count * sizeof(double));
        memcpy(radius, s->radius, s->count * sizeof(double));
        memcpy(label, s->label, s->count * sizeof(elec_atom_label));
    }
    ELEC_FREE(s->xyz);
    ELEC_FREE(s->charge);
    ELEC_FREE(s->radius);
    ELEC_FREE(s->label);
    s->xyz = xyz;
    s->charge = charge;
    s->radius = radius;
    s->label = label;
    *capacity = cap;
    return 1;
}

/* The length of the ATOM or HETATM keyword that starts the n characters
   at p (followed by a blank, a digit or the line's end), else 0. */
static size_t elec__pqr_atom_keyword(const char *p, size_t n) {
    const size_t keyword = n >= 6 && memcmp(p, "HETATM", 6) == 0 ? 6
                           : n >= 4 && memcmp(p, "ATOM", 4) == 0  ? 4
                                                                  : 0;
    return keyword && (n == keyword || elec__pqr_space(p[keyword]) ||
                       elec__pqr_digit(p[keyword]))
               ? keyword
               : 0;
}

/* Whether the n characters at p start an ATOM or HETATM record. */
static int elec__pqr_starts_atom(const char *p, size_t n) {
    return elec__pqr_atom_keyword(p, n) != 0;
}

/* Whether the n characters at p are the record `name` (then a blank or
   the line's end). */
static int elec__pqr_is_record(const char *p, size_t n, const char *name) {
    const size_t k = strlen(name);
    return n >= k && memcmp(p, name, k) == 0 && (n == k || elec__pqr_space(p[k]));
}

/* elec_parse_pqr's state between lines. */
typedef struct elec__pqr_reader {
    elec_structure s;
    size_t capacity;
    long line;                 /* the line being read, from 1 */
    char after_ter;            /* a TER since the last atom */
    char after_end_of_complex; /* a REMARK END-OF-COMPLEX since the last atom */
    long model_end;            /* the line of an END or ENDMDL, after which
                                  no atom may come (0: none yet) */
    const char *end_record;    /* which of the two it was */
    long cell_line;            /* the line of the CRYST1 read */
} elec__pqr_reader;

/* The n characters at p as a line of text: refused where they hold binary
   data, an atom record after a carriage return within the line (lines
   ended by CR alone, old Mac files, read as one) or an indented atom
   record (either would be read as no atom at all, silently).  *trimmed is
   n less the carriage returns that end the line. */
static elec_status elec__pqr_text_line(const char *p, size_t n, long line, size_t *trimmed,
                                       elec_error *err) {
    const char *c;
    size_t blanks = 0;
    for (c = p; c < p + n; c++) {
        unsigned char b = (unsigned char)*c;
        if ((b < 0x20 && b != '\t' && b != '\r') || b == 0x7f)
            return elec__fail(err, ELEC_ERR_PARSE, line,
                              "line %ld: binary data (byte 0x%02x at "
                              "column %zu): not a PQR text file",
                              line, b, (size_t)(c - p) + 1);
    }
    while (n && p[n - 1] == '\r') n--;
    for (c = p; c < p + n; c++) {
        const char *next = c + 1;
        if (*c != '\r') continue;
        /* past the blanks once (a line of them stays one pass) */
        while (next < p + n && elec__pqr_space(*next)) next++;
        if (elec__pqr_starts_atom(next, (size_t)(p + n - next)))
            return elec__fail(err, ELEC_ERR_PARSE, line,
                              "line %ld: an atom record after a carriage return within the "
                              "line: lines ended by CR alone? (convert them to LF)",
                              line);
        c = next - 1;
    }
    while (blanks < n && elec__pqr_space(p[blanks])) blanks++;
    if (blanks > 0 && elec__pqr_starts_atom(p + blanks, n - blanks))
        return elec__fail(err, ELEC_ERR_PARSE, line,
                          "line %ld: an atom record indented by %zu column(s): a PDB or "
                          "PQR record starts in column 1", line, blanks);
    *trimmed = n;
    return ELEC_OK;
}

/* An ATOM or HETATM record (its keyword `keyword` characters long) added
   to the structure, with the TER and END-OF-COMPLEX marks since the atom
   before. */
static elec_status elec__pqr_add_atom(elec__pqr_reader *r, const char *p, size_t n,
                                      size_t keyword, elec_error *err) {
    elec__pqr_atom a;
    char why[224];
    elec_structure *s = &r->s;
    int ok = elec__pqr_record(p, n, keyword, &a, why, sizeof why);
    if (ok && !(a.radius >= 0.0)) {
        snprintf(why, sizeof why, "radius %g is negative", a.radius);
        ok = 0;
    }
    if (!ok) return elec__fail(err, ELEC_ERR_PARSE, r->line, "line %ld: %s", r->line, why);
    if (s->count == r->capacity && !elec__pqr_grow(s, &r->capacity))
        return elec__fail(err, ELEC_ERR_NO_MEMORY, r->line,
                          "line %ld: no memory for more than %zu atoms", r->line,
                          r->capacity);
    memcpy(s->xyz + 3 * s->count, a.xyz, sizeof a.xyz);
    s->charge[s->count] = a.charge;
    s->radius[s->count] = a.radius;
    a.label.after_ter = r->after_ter;
    a.label.after_end_of_complex = r->after_end_of_complex;
    r->after_ter = r->after_end_of_complex = 0;
    s->label[s->count] = a.label;
    s->count++;
    return ELEC_OK;
}

/* A CRYST1 record's cell: one a structure, since a second that differs
   would leave the box to whichever reader took the first or the last
   (elecmap's map comment and elecenergy's box once disagreed). */
static elec_status elec__pqr_take_cell(elec__pqr_reader *r, const char *p, size_t n,
                                       elec_error *err) {
    elec_structure *s = &r->s;
    double cell[6];
    char why[224], group[12];
    int z;
    if (!elec__pqr_cryst1(p, n, cell, group, &z, why, sizeof why))
        return elec__fail(err, ELEC_ERR_PARSE, r->line, "line %ld: %s", r->line, why);
    if (s->has_cell && (memcmp(s->cell_length, cell, sizeof s->cell_length) != 0 ||
                        memcmp(s->cell_angle, cell + 3, sizeof s->cell_angle) != 0))
        return elec__fail(err, ELEC_ERR_PARSE, r->line,
                          "line %ld: a second CRYST1 cell (%g %g %g, %g %g %g) "
                          "unlike line %ld's: one cell a structure", r->line,
                          cell[0], cell[1], cell[2], cell[3], cell[4], cell[5],
                          r->cell_line);
    s->has_cell = 1;
    r->cell_line = r->line;
    memcpy(s->cell_length, cell, sizeof s->cell_length);
    memcpy(s->cell_angle, cell + 3, sizeof s->cell_angle);
    memcpy(s->cell_space_group, group, sizeof s->cell_space_group);
    s->cell_z = z;
    return ELEC_OK;
}

/* One line of n characters at p (the line's end not included). */
static elec_status elec__pqr_line(elec__pqr_reader *r, const char *p, size_t n,
                                  elec_error *err) {
    size_t keyword;
    elec_status status;
    if (r->model_end) {
        /* past END or ENDMDL nothing is read but an atom, refused (files
           run together, a trajectory's next frame or model) */
        if ((n >= 4 && memcmp(p, "ATOM", 4) == 0) || (n >= 6 && memcmp(p, "HETATM", 6) == 0))
            return elec__fail(err, ELEC_ERR_PARSE, r->line,
                              "line %ld: an atom after the %s of line %ld: a second "
                              "structure or model (one is read; split the file, or "
                              "elecmap_mpi --frames)",
                              r->line, r->end_record, r->model_end);
        return ELEC_OK;
    }
    if ((status = elec__pqr_text_line(p, n, r->line, &n, err)) != ELEC_OK) return status;
    if ((keyword = elec__pqr_atom_keyword(p, n)) != 0)
        return elec__pqr_add_atom(r, p, n, keyword, err);
    if (elec__pqr_is_record(p, n, "TER")) {
        r->after_ter = 1;
    } else if (elec__pqr_is_record(p, n, "ENDMDL")) {
        r->model_end = r->line, r->end_record = "ENDMDL";
    } else if (elec__pqr_is_record(p, n, "END")) {
        /* the file's end, as PDB has it: atoms after it are another
           file's (cat a.pqr b.pqr, or a trajectory's next frame) */
        r->model_end = r->line, r->end_record = "END";
    } else if (n >= 6 && memcmp(p, "REMARK", 6) == 0) {
        elec__pqr_token t[4];
        size_t k, words = elec__pqr_split(p + 6, p + n, t, 4);
        for (k = 0; k < words && k < 4; k++)
            if (elec__pqr_is(&t[k], "END-OF-COMPLEX")) r->after_end_of_complex = 1;
    } else if (n >= 6 && memcmp(p, "CRYST1", 6) == 0) {
        return elec__pqr_take_cell(r, p, n, err);
    }
    return ELEC_OK;
}

ELEC_DEF elec_status elec_parse_pqr(const char *text, size_t length,
                                    elec_structure *out, elec_error *err) {
    elec__pqr_reader r;
    const char *p = text, *end = text + length;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    memset(out, 0, sizeof *out);
    if (!text && length)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "text is NULL");
    memset(&r, 0, sizeof r);
    r.end_record = "ENDMDL";
    /* a UTF-8 byte-order mark (some editors write one) is no part of the
       first record: read past it, that record was lost */
    if (length >= 3 && !memcmp(p, "\xEF\xBB\xBF", 3)) p += 3;
    while (p < end) {
        const char *newline = (const char *)memchr(p, '\n', (size_t)(end - p));
        const char *line_end = newline ? newline : end;
        elec_status status;
        r.line++;
        if ((status = elec__pqr_line(&r, p, (size_t)(line_end - p), err)) != ELEC_OK) {
            elec__pqr_release(&r.s);
            return status;
        }
        p = newline ? newline + 1 : end;
    }
    if (r.s.count == 0) {
        elec__pqr_release(&r.s);
        return elec__fail(err, ELEC_ERR_PARSE, 0,
                          "no ATOM or HETATM records in %ld lines", r.line);
    }
    *out = r.s;
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_read_pqr(const char *path, elec_structure *out,
                                   elec_error *err) {
    char *text;
    size_t length;
    elec_status s;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    memset(out, 0, sizeof *out);
    s = elec_read_text(path, "a PQR", &text, &length, err);
    if (s != ELEC_OK) return s;
    s = elec_parse_pqr(text, length, out, err);
    ELEC_FREE(text);
    return s;
}

ELEC_DEF void elec_structure_free(elec_structure *structure) {
    if (structure) elec__pqr_release(structure);
}

ELEC_DEF elec_atoms elec_structure_atoms(const elec_structure *structure) {
    return elec_atoms_from_xyz(structure->count, structure->xyz,
                               structure->charge, structure->radius);
}

/* Whether a CRYST1 space group (as elec_structure keeps it) is P 1, or
   absent: its letters and digits, blanks left out, are "P1" or none. */
static int elec__space_group_is_p1(const char *group) {
    char compact[12];
    size_t n = 0, i;
    for (i = 0; group[i] && i < 11; i++)
        if (group[i] != ' ' && group[i] != '\t') compact[n++] = group[i];
    compact[n] = '\0';
    return n == 0 || strcmp(compact, "P1") == 0;
}

ELEC_DEF elec_status elec_structure_box(const elec_structure *structure,
                                        elec_box *box, elec_error *err) {
    int axis;
    if (!structure || !box)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "structure or box is NULL");
    if (!structure->has_cell)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "the structure has no CRYST1 cell");
    for (axis = 0; axis < 3; axis++)
        if (!(fabs(structure->cell_angle[axis] - 90.0) <= 1e-6))
            return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                              "the CRYST1 cell is not orthorhombic "
                              "(angles %g %g %g)",
                              structure->cell_angle[0],
                              structure->cell_angle[1],
                              structure->cell_angle[2]);
    /* as a 1 A box it gave 4 atoms spanning 3 A an SPME energy of -264.7
       kcal/mol where their direct sum is -34.2 (an audit) */
    if (structure->cell_length[0] == 1.0 && structure->cell_length[1] == 1.0 &&
        structure->cell_length[2] == 1.0)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "the CRYST1 cell is 1 x 1 x 1 A, the PDB's mark of a structure "
                          "with no crystal cell (NMR, models), not a periodic box");
    if (!elec__space_group_is_p1(structure->cell_space_group))
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "the CRYST1 cell's space group is %.11s, not P 1: a crystal's "
                          "file holds its asymmetric unit, and the symmetry mates that "
                          "fill the rest of the cell are not among the atoms, so the "
                          "cell is no periodic box of them",
                          structure->cell_space_group);
    {
        /* lengths the methods would refuse, refused here (the struct is
           the caller's to fill, unlike the reader's checked CRYST1) */
        elec_box cell;
        elec_status s;
        for (axis = 0; axis < 3; axis++) cell.length[axis] = structure->cell_length[axis];
        if ((s = elec__box_check(&cell, err)) != ELEC_OK) return s;
        *box = cell;
    }
    elec__ok(err);
    return ELEC_OK;
}

/* --------------------------------------------------------------- OpenDX */

/* The shortest of %.15g and %.17g that reads back as the same double. */
static void elec__dx_double(double v, char buf[32]) {
    double back;
    size_t n = elec__number_text(buf, v, 'g', 15);
    if (elec__number_value(buf, n, &back) != n || back != v)
        elec__number_text(buf, v, 'g', 17);
}

ELEC_DEF elec_status elec_write_dx(const char *path,
                                   const elec_lattice *lattice,
                                   const float *map, const char *comment,
                                   elec_error *err) {
    elec_output *f;
    size_t total, index, on_line = 0;
    int i, j, k, axis, gzip;
    char number[3][32];
    elec_status s;
    if (!path) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "path is NULL");
    s = elec_lattice_check(lattice, err);
    if (s != ELEC_OK) return s;
    if (!map) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "map is NULL");
    total = elec_lattice_size(lattice);
    for (index = 0; index < total; index++)
        if (!elec__finite(map[index])) {
            size_t nx = (size_t)lattice->dims[0], ny = (size_t)lattice->dims[1];
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "map[%zu] (point %zu,%zu,%zu) is %g: OpenDX "
                              "viewers cannot show a value that is not finite",
                              index, index % nx, index / nx % ny,
                              index / (nx * ny), (double)map[index]);
        }
    elec_map_format_of(path, &gzip); /* ".gz": compressed (">>mrc") */
    s = gzip ? elec_output_open_gzip(path, &f, err) : elec_output_open(path, &f, err);
    if (s != ELEC_OK) return s;
    while (comment && *comment) {
        const char *newline = strchr(comment, '\n');
        size_t n = newline ? (size_t)(newline - comment) : strlen(comment);
        while (n && comment[n - 1] == '\r') n--;
        elec_output_printf(f, "# %.*s\n", (int)n, comment);
        if (!newline) break;
        comment = newline + 1;
    }
    elec_output_printf(f, "object 1 class gridpositions counts %d %d %d\n",
                       lattice->dims[0], lattice->dims[1], lattice->dims[2]);
    for (axis = 0; axis < 3; axis++) elec__dx_double(lattice->origin[axis], number[axis]);
    elec_output_printf(f, "origin %s %s %s\n", number[0], number[1], number[2]);
    for (axis = 0; axis < 3; axis++) {
        int other;
        for (other = 0; other < 3; other++) {
            if (other == axis) elec__dx_double(lattice->spacing[axis], number[other]);
            else strcpy(number[other], "0.000000e+00");
        }
        elec_output_printf(f, "delta %s %s %s\n", number[0], number[1], number[2]);
    }
    elec_output_printf(f, "object 2 class gridconnections counts %d %d %d\n",
                       lattice->dims[0], lattice->dims[1], lattice->dims[2]);
    elec_output_printf(f, "object 3 class array type double rank 0 items %zu data "
                          "follows\n", total);
    /* The file lists z fastest; the map stores x fastest.  %.8e keeps 9
       significant digits, enough for every float to read back exactly. */
    for (i = 0; i < lattice->dims[0]; i++)
        for (j = 0; j < lattice->dims[1]; j++)
            for (k = 0; k < lattice->dims[2]; k++) {
                char value[32];
                size_t n;
                index = (size_t)i + (size_t)lattice->dims[0] *
                                        ((size_t)j + (size_t)lattice->dims[1] * (size_t)k);
                n = elec__number_text(value, (double)map[index], 'e', 8);
                value[n++] = on_line == 2 ? '\n' : ' '; /* n <= 15: "-3.40282347e+38" */
                elec_output_write(f, value, n);
                on_line = on_line == 2 ? 0 : on_line + 1;
            }
    if (on_line) elec_output_write(f, "\n", 1);
    elec_output_printf(f, "%s",
                       "attribute \"dep\" string \"positions\"\n"
                       "object \"regular positions regular connections\" class field\n"
                       "component \"positions\" value 1\n"
                       "component \"connections\" value 2\n"
                       "component \"data\" value 3\n");
    return elec_output_commit(f, err);
}

/* A cursor over a file's text that hands out lines and counts them. */
typedef struct elec__dx_cursor {
    const char *p, *end;
    long line;
} elec__dx_cursor;

/* The next line that is not blank and not a '#' comment, split into at
   most max tokens; returns the token count, 0 at the end of the text. */
static size_t elec__dx_line(elec__dx_cursor *c, elec__pqr_token *t,
                            size_t max) {
    while (c->p < c->end) {
        const char *newline = (const char *)memchr(c->p, '\n', (size_t)(c->end - c->p));
        const char *line_end = newline ? newline : c->end;
        size_t n = elec__pqr_split(c->p, line_end, t, max);
        c->line++;
        c->p = newline ? newline + 1 : c->end;
        if (n && t[0].p[0] != '#') return n;
    }
    return 0;
}

/* "object ID class gridpositions|gridconnections counts nx ny nz" */
static int elec__dx_counts(const elec__pqr_token *t, size_t n,
                           const char *kind, int counts[3], char *why,
                           size_t why_size) {
    int axis;
    if (n != 8 || !elec__pqr_is(&t[0], "object") ||
        !elec__pqr_is(&t[2], "class") || !elec__pqr_is(&t[3], kind) ||
        !elec__pqr_is(&t[4], "counts")) {
        snprintf(why, why_size,
                 "expected 'object N class %s counts nx ny nz'", kind);
        return 0;
    }
    for (axis = 0; axis < 3; axis++) {
        if (!elec__pqr_int(t[5 + axis].p, t[5 + axis].n, "count",
                           &counts[axis], why, why_size))
            return 0;
        if (counts[axis] <= 0) {
            snprintf(why, why_size, "count %d must be positive", counts[axis]);
            return 0;
        }
    }
    return 1;
}

/* The header's origin and three delta lines, in any order, up to the next
   object line, which is left in t (its n tokens; 0 at the end of the
   text). */
static elec_status elec__dx_geometry(elec__dx_cursor *c, elec__pqr_token *t, size_t *n,
                                     elec_lattice *lattice, elec_error *err) {
    char why[200];
    size_t deltas = 0;
    int has_origin = 0, axis;
    for (;;) {
        double v[3];
        *n = elec__dx_line(c, t, 16);
        if (*n == 0 || elec__pqr_is(&t[0], "object")) break;
        if (*n != 4 || (!elec__pqr_is(&t[0], "origin") && !elec__pqr_is(&t[0], "delta")))
            return elec__fail(err, ELEC_ERR_PARSE, c->line,
                              "line %ld: expected 'origin x y z' or "
                              "'delta dx dy dz'", c->line);
        for (axis = 0; axis < 3; axis++)
            if (!elec__pqr_real(t[1 + axis].p, t[1 + axis].n, t[0].p[0] == 'o'
                                ? "origin" : "delta", &v[axis], why, sizeof why))
                return elec__fail(err, ELEC_ERR_PARSE, c->line, "line %ld: %s",
                                  c->line, why);
        if (t[0].p[0] == 'o') {
            has_origin = 1;
            for (axis = 0; axis < 3; axis++) lattice->origin[axis] = v[axis];
            continue;
        }
        if (deltas == 3)
            return elec__fail(err, ELEC_ERR_PARSE, c->line,
                              "line %ld: more than three delta lines", c->line);
        for (axis = 0; axis < 3; axis++)
            if ((size_t)axis != deltas && v[axis] != 0.0)
                return elec__fail(err, ELEC_ERR_UNSUPPORTED, c->line,
                                  "line %ld: delta %zu is not along axis %zu: "
                                  "only axis-aligned lattices are supported",
                                  c->line, deltas + 1, deltas + 1);
        if (!(v[deltas] > 0.0))
            return elec__fail(err, v[deltas] == 0.0 ? ELEC_ERR_PARSE
                                                    : ELEC_ERR_UNSUPPORTED,
                              c->line, "line %ld: spacing %g along axis %zu "
                              "must be positive", c->line, v[deltas], deltas + 1);
        lattice->spacing[deltas] = v[deltas];
        deltas++;
    }
    if (!has_origin || deltas != 3)
        return elec__fail(err, ELEC_ERR_PARSE, c->line,
                          "line %ld: the header has %s before its next object",
                          c->line, has_origin ? "fewer than three delta lines"
                                              : "no origin line");
    return ELEC_OK;
}

/* An optional "object N class gridconnections counts ..." line in t (n
   tokens), whose counts must be the lattice's; where it is there, the
   line after it is read into t. */
static elec_status elec__dx_connections(elec__dx_cursor *c, elec__pqr_token *t, size_t *n,
                                        const elec_lattice *lattice, elec_error *err) {
    char why[200];
    int counts[3], axis;
    if (*n < 4 || !elec__pqr_is(&t[3], "gridconnections")) return ELEC_OK;
    if (!elec__dx_counts(t, *n, "gridconnections", counts, why, sizeof why))
        return elec__fail(err, ELEC_ERR_PARSE, c->line, "line %ld: %s", c->line, why);
    for (axis = 0; axis < 3; axis++)
        if (counts[axis] != lattice->dims[axis])
            return elec__fail(err, ELEC_ERR_PARSE, c->line,
                              "line %ld: gridconnections counts %d %d %d "
                              "differ from gridpositions counts %d %d %d",
                              c->line, counts[0], counts[1], counts[2],
                              lattice->dims[0], lattice->dims[1], lattice->dims[2]);
    *n = elec__dx_line(c, t, 16);
    return ELEC_OK;
}

/* "object ID class array type double|float rank 0 items N data follows"
   (its keys in any order, type and rank optional) in t (n tokens): items
   its N. */
static elec_status elec__dx_array_header(const elec__dx_cursor *c, const elec__pqr_token *t,
                                         size_t n, long long *items, elec_error *err) {
    size_t i;
    int follows = 0;
    *items = -1;
    if (n < 4 || n > 16 || !elec__pqr_is(&t[0], "object") ||
        !elec__pqr_is(&t[2], "class") || !elec__pqr_is(&t[3], "array"))
        return elec__fail(err, ELEC_ERR_PARSE, c->line,
                          "line %ld: expected 'object N class array ... data "
                          "follows'", c->line);
    for (i = 4; i + 1 < n; i += 2) {
        const elec__pqr_token *key = &t[i], *value = &t[i + 1];
        if (elec__pqr_is(key, "type")) {
            if (!elec__pqr_is(value, "double") && !elec__pqr_is(value, "float"))
                return elec__fail(err, ELEC_ERR_UNSUPPORTED, c->line,
                                  "line %ld: array type '%.*s%s' (only "
                                  "float and double are read)", c->line,
                                  ELEC__PQR_QUOTE(value->p, value->n));
        } else if (elec__pqr_is(key, "rank")) {
            if (!elec__pqr_is(value, "0"))
                return elec__fail(err, ELEC_ERR_UNSUPPORTED, c->line,
                                  "line %ld: array rank '%.*s%s' (only "
                                  "scalar maps, rank 0, are read)", c->line,
                                  ELEC__PQR_QUOTE(value->p, value->n));
        } else if (elec__pqr_is(key, "items")) {
            if (elec__pqr_integer(value->p, value->n, LLONG_MAX, items) !=
                    ELEC__PQR_NUMBER_OK || *items < 0)
                return elec__fail(err, ELEC_ERR_PARSE, c->line,
                                  "line %ld: items '%.*s%s' is not a count",
                                  c->line, ELEC__PQR_QUOTE(value->p, value->n));
        } else if (elec__pqr_is(key, "data")) {
            if (!elec__pqr_is(value, "follows"))
                return elec__fail(err, ELEC_ERR_UNSUPPORTED, c->line,
                                  "line %ld: data '%.*s%s': only data "
                                  "that follows in the file is read",
                                  c->line, ELEC__PQR_QUOTE(value->p, value->n));
            follows = 1;
        } else {
            return elec__fail(err, ELEC_ERR_PARSE, c->line,
                              "line %ld: unexpected '%.*s%s' in the array "
                              "header", c->line, ELEC__PQR_QUOTE(key->p, key->n));
        }
    }
    if (i != n || *items < 0 || !follows)
        return elec__fail(err, ELEC_ERR_PARSE, c->line,
                          "line %ld: the array header needs 'items N' and "
                          "'data follows'", c->line);
    return ELEC_OK;
}

/* The lattice's `total` values after the array header into values (x
   fastest; the file lists z fastest, so (i, j, k) walks k innermost),
   then at most a trailer that does not start with a number. */
static elec_status elec__dx_values(elec__dx_cursor *c, const elec_lattice *lattice,
                                   size_t total, float *values, elec_error *err) {
    const size_t nx = (size_t)lattice->dims[0], ny = (size_t)lattice->dims[1],
                 nz = (size_t)lattice->dims[2];
    size_t got, i = 0, j = 0, k = 0;
    long last_line = c->line; /* of the last value read, for "the file ends" */
    c->line++;                /* the data start on the line after the array header */
    for (got = 0; got <= total; got++) {
        const char *start;
        double v;
        int r;
        while (c->p < c->end && (elec__pqr_space(*c->p) || *c->p == '\n'))
            if (*c->p++ == '\n') c->line++;
        if (c->p == c->end) {
            if (got == total) break;
            return elec__fail(err, ELEC_ERR_PARSE, last_line,
                              "line %ld: the file ends after %zu of %zu values",
                              last_line, got, total);
        }
        start = c->p;
        while (c->p < c->end && !elec__pqr_space(*c->p) && *c->p != '\n') c->p++;
        r = elec__pqr_number(start, (size_t)(c->p - start), &v);
        if (got == total) {
            if (r == ELEC__PQR_NUMBER_GARBLED) break; /* the trailer */
            return elec__fail(err, ELEC_ERR_PARSE, c->line,
                              "line %ld: more values than the %zu items", c->line, total);
        }
        /* a float: what rounds to one, FLT_MAX's 9 digits (3.40282347e+38,
           a little past it as a double) too, taken as FLT_MAX; from
           FLT_MAX + 2^103 on it rounds to infinity (an audit found the
           map elec_write_dx wrote of FLT_MAX refused) */
        if (r == ELEC__PQR_NUMBER_OK && !(fabs(v) < (double)FLT_MAX + ldexp(1.0, 103)))
            r = ELEC__PQR_NUMBER_INFINITE;
        if (fabs(v) > FLT_MAX) v = v > 0.0 ? FLT_MAX : -FLT_MAX;
        if (r != ELEC__PQR_NUMBER_OK)
            return elec__fail(err, ELEC_ERR_PARSE, c->line,
                              "line %ld: value %zu '%.*s%s' is not a %snumber",
                              c->line, got + 1,
                              ELEC__PQR_QUOTE(start, (size_t)(c->p - start)),
                              r == ELEC__PQR_NUMBER_INFINITE ? "finite float " : "");
        values[i + nx * (j + ny * k)] = (float)v;
        last_line = c->line;
        if (++k == nz) {
            k = 0;
            if (++j == ny) {
                j = 0;
                i++;
            }
        }
    }
    return ELEC_OK;
}

static elec_status elec__dx_parse(const char *text, size_t length,
                                  elec_lattice *lattice, float **map,
                                  elec_error *err) {
    elec__dx_cursor c;
    elec__pqr_token t[16];
    elec_error lattice_err;
    elec_status s;
    char why[200];
    size_t n, total;
    long long items;
    float *values;
    c.p = text;
    c.end = text + length;
    c.line = 0;
    n = elec__dx_line(&c, t, 16);
    if (n == 0)
        return elec__fail(err, ELEC_ERR_PARSE, c.line,
                          "line %ld: no OpenDX header (the file is empty)",
                          c.line);
    if (!elec__dx_counts(t, n, "gridpositions", lattice->dims, why, sizeof why))
        return elec__fail(err, ELEC_ERR_PARSE, c.line, "line %ld: %s", c.line,
                          why);
    if ((s = elec__dx_geometry(&c, t, &n, lattice, err)) != ELEC_OK ||
        (s = elec__dx_connections(&c, t, &n, lattice, err)) != ELEC_OK ||
        (s = elec__dx_array_header(&c, t, n, &items, err)) != ELEC_OK)
        return s;
    if (elec_lattice_check(lattice, &lattice_err) != ELEC_OK)
        return elec__fail(err, ELEC_ERR_PARSE, c.line, "line %ld: %s",
                          c.line, lattice_err.message);
    total = elec_lattice_size(lattice);
    if ((unsigned long long)items != (unsigned long long)total)
        return elec__fail(err, ELEC_ERR_PARSE, c.line,
                          "line %ld: items %lld differs from counts %d x %d x "
                          "%d = %zu", c.line, items, lattice->dims[0],
                          lattice->dims[1], lattice->dims[2], total);
    /* Each value takes a character and a separator (the last no
       separator): a header that claims more than the rest of the file can
       hold is refused before the map is allocated. */
    if (total - 1 > (size_t)(c.end - c.p) / 2)
        return elec__fail(err, ELEC_ERR_PARSE, c.line,
                          "line %ld: items %zu need at least %zu bytes of "
                          "values, and %zu bytes follow the header", c.line,
                          total, 2 * total - 1, (size_t)(c.end - c.p));
    values = (float *)ELEC_MALLOC(total * sizeof(float));
    if (!values)
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                          "no memory for a map of %zu values", total);
    if ((s = elec__dx_values(&c, lattice, total, values, err)) != ELEC_OK) {
        ELEC_FREE(values);
        return s;
    }
    *map = values;
    return ELEC_OK;
}

ELEC_DEF elec_status elec_parse_dx(const char *text, size_t length,
                                   elec_lattice *lattice, float **map,
                                   elec_error *err) {
    elec_lattice l;
    elec_status s;
    if (!lattice || !map)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "lattice or map is NULL");
    *map = NULL;
    if (!text && length)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "text is NULL");
    memset(&l, 0, sizeof l);
    s = elec__dx_parse(text ? text : "", length, &l, map, err);
    if (s != ELEC_OK) return s;
    *lattice = l;
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_read_dx(const char *path, elec_lattice *lattice,
                                  float **map, elec_error *err) {
    char *text;
    size_t length;
    elec_status s;
    if (!lattice || !map)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "lattice or map is NULL");
    *map = NULL;
    s = elec_read_text(path, "an OpenDX", &text, &length, err);
    if (s != ELEC_OK) return s;
    s = elec_parse_dx(text, length, lattice, map, err);
    ELEC_FREE(text);
    return s;
}

/* ELEC_IO_END */

/* ------------------------------------------ >>mrc MRC/CCP4 and gzipped OpenDX maps */

#ifdef ELEC_WITH_ZLIB
#ifdef __cplusplus
} /* zlib.h outside the implementation's extern "C" */
#endif
#include <zlib.h>
#ifdef __cplusplus
extern "C" {
#endif
#endif

ELEC_DEF elec_map_format elec_map_format_of(const char *path, int *gzip) {
    static const char *const mrc[] = {".mrc", ".map", ".ccp4", ".mrc.gz", ".map.gz",
                                      ".ccp4.gz"};
    int gz = path && elec__path_ends(path, ".gz"), k;
    if (gzip) *gzip = gz;
    for (k = 0; path && k < 6; k++)
        if (elec__path_ends(path, mrc[k])) return ELEC_MAP_MRC;
    return ELEC_MAP_DX;
}

ELEC_DEF const char *elec_map_format_name(const char *path) {
    int gz;
    elec_map_format f = elec_map_format_of(path, &gz);
    if (f == ELEC_MAP_MRC) return gz ? "MRC2014, gzip-compressed" : "MRC2014";
    return gz ? "OpenDX, gzip-compressed" : "OpenDX";
}

/* ---- >>mrc gzip: the output stage and the inflater of elec__read_file */

#ifdef ELEC_WITH_ZLIB
/* zlib's allocations through ELEC_MALLOC and ELEC_FREE */
static voidpf elec__zalloc(voidpf opaque, uInt items, uInt size) {
    (void)opaque;
    if (size != 0 && items > (size_t)-1 / size) return Z_NULL;
    return ELEC_MALLOC((size_t)items * size);
}
static void elec__zfree(voidpf opaque, voidpf p) {
    (void)opaque;
    ELEC_FREE(p);
}

typedef struct elec__gzip_stage {
    z_stream z;
    unsigned char out[ELEC__OUTPUT_BUFFER];
} elec__gzip_stage;

/* elec_output's stage (see struct elec_output): deflates the buffer into
   the file, ends the stream (its trailer: CRC-32 and length), or frees. */
static void elec__gzip_stage_run(elec_output *out, int end) {
    elec__gzip_stage *g = (elec__gzip_stage *)out->stage_state;
    if (end >= 0 && !out->error) {
        int r;
        g->z.next_in = (Bytef *)out->buffer;
        g->z.avail_in = (uInt)out->used;
        do {
            g->z.next_out = g->out;
            g->z.avail_out = (uInt)sizeof g->out;
            r = deflate(&g->z, end ? Z_FINISH : Z_NO_FLUSH);
            if (r == Z_STREAM_ERROR) {
                out->error = -1;
                break;
            }
            elec__output_raw(out, (const char *)g->out, sizeof g->out - g->z.avail_out);
        } while (!out->error && (end ? r != Z_STREAM_END : g->z.avail_out == 0));
    }
    if (end != 0) {
        deflateEnd(&g->z);
        ELEC_FREE(g);
        out->stage = NULL;
        out->stage_state = NULL;
    }
}
#endif

ELEC_DEF elec_status elec_output_open_gzip(const char *path, elec_output **out,
                                           elec_error *err) {
#ifdef ELEC_WITH_ZLIB
    elec__gzip_stage *g;
    elec_status s;
    if (out) *out = NULL;
    g = (elec__gzip_stage *)ELEC_MALLOC(sizeof *g);
    if (!g) return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory to compress '%s'",
                              path ? path : "(null)");
    memset(&g->z, 0, sizeof g->z);
    g->z.zalloc = elec__zalloc;
    g->z.zfree = elec__zfree;
    /* window 15 + 16: the deflate stream inside gzip's header and trailer,
       as gzip(1) and APBS write it.  Level 1: a map's digits compress
       little better at gzip's default 6 (a 2.1e6-point DX map here: 14.4 MB
       at level 1 in 2.1 s, 12.5 MB at 6 in 6.4 s; 33 MB and 1.5 s plain) */
    if (deflateInit2(&g->z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        ELEC_FREE(g);
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory to compress '%s'",
                          path ? path : "(null)");
    }
    s = elec_output_open(path, out, err);
    if (s != ELEC_OK) {
        deflateEnd(&g->z);
        ELEC_FREE(g);
        return s;
    }
    (*out)->stage = elec__gzip_stage_run;
    (*out)->stage_state = g;
    return ELEC_OK;
#else
    if (out) *out = NULL;
    return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                      "cannot write '%s' gzip-compressed: this build has no zlib "
                      "(define ELEC_WITH_ZLIB and link -lz; the Makefile does where "
                      "zlib is installed)", path ? path : "(null)");
#endif
}

static elec_status elec__gunzip(const char *path, const char *what, int text,
                                elec__head_check head, char **data, size_t *length,
                                elec_error *err) {
#ifdef ELEC_WITH_ZLIB
    const size_t limit = (size_t)ELEC_MAX_INPUT_BYTES;
    const unsigned char *in = (const unsigned char *)*data;
    size_t in_left = *length, len = 0, whole = 0;
    /* DX text deflates 2.3 to 2.7 times (levels 1 to 6): room for 4,
       doubled as needed, to the limit and no further */
    size_t cap = *length < limit / 4 ? 4 * *length + 4096 : limit + 1;
    char *out;
    int headed = 0;
    z_stream z;
    elec_status s = ELEC_OK;
    if (cap > limit + 1) cap = limit + 1;
    out = (char *)ELEC_MALLOC(cap + 1);
    if (!out)
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                          "no memory for %zu bytes to inflate '%s' into", cap, path);
    memset(&z, 0, sizeof z);
    z.zalloc = elec__zalloc;
    z.zfree = elec__zfree;
    if (inflateInit2(&z, 15 + 16) != Z_OK) { /* gzip's wrapper alone */
        ELEC_FREE(out);
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory to inflate '%s'", path);
    }
    for (;;) {
        size_t produced, consumed;
        int r;
        if (len == cap) {
            size_t new_cap = cap < limit / 2 ? 2 * cap : limit + 1;
            char *grown;
            if (cap > limit) {
                s = elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                               "'%s' inflates to more than %zu bytes, the limit for %s "
                               "input (ELEC_MAX_INPUT_BYTES)", path, limit, what);
                break;
            }
            grown = (char *)ELEC_MALLOC(new_cap + 1);
            if (!grown) {
                s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                               "no memory for %zu bytes of '%s' inflated", new_cap, path);
                break;
            }
            memcpy(grown, out, len);
            ELEC_FREE(out);
            out = grown;
            cap = new_cap;
        }
        /* zlib counts in uInt (32 bits): larger buffers go a piece at a time */
        z.next_in = (Bytef *)(uintptr_t)in;
        z.avail_in = in_left > 0x40000000u ? 0x40000000u : (uInt)in_left;
        z.next_out = (Bytef *)out + len;
        z.avail_out = cap - len > 0x40000000u ? 0x40000000u : (uInt)(cap - len);
        produced = z.avail_out;
        consumed = z.avail_in;
        r = inflate(&z, Z_NO_FLUSH);
        produced -= z.avail_out;
        consumed -= z.avail_in;
        in += consumed;
        in_left -= consumed;
        if (text) s = elec__text_check(path, out, len, len + produced, what, err);
        len += produced;
        if (s == ELEC_OK && head && !headed && len >= ELEC__HEAD_BYTES) {
            s = head(path, out, len, &whole, err);
            headed = 1;
        }
        if (s == ELEC_OK && headed && len > whole)
            s = elec__fail(err, ELEC_ERR_PARSE, 0,
                           "'%s' inflates to more than the %zu bytes its header gives it",
                           path, whole);
        if (s != ELEC_OK) break;
        if (r == Z_STREAM_END) {
            if (in_left == 0) break;
            if (in_left >= 2 && in[0] == 0x1f && in[1] == 0x8b) {
                inflateReset(&z); /* another member follows (gzip -c a b) */
                continue;
            }
            s = elec__fail(err, ELEC_ERR_PARSE, 0,
                           "'%s': %zu bytes after the end of its gzip stream are not "
                           "gzip data", path, in_left);
            break;
        }
        if (r == Z_MEM_ERROR) {
            s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory to inflate '%s'", path);
            break;
        }
        if (r == Z_DATA_ERROR || r == Z_NEED_DICT || r == Z_STREAM_ERROR) {
            s = elec__fail(err, ELEC_ERR_PARSE, 0, "'%s' is not valid gzip data (%s)", path,
                           z.msg ? z.msg : "zlib could not inflate it");
            break;
        }
        if (in_left == 0 && len < cap) { /* all read, room left, no end */
            s = elec__fail(err, ELEC_ERR_PARSE, 0,
                           "'%s': its gzip stream ends early (after %zu bytes inflated): "
                           "a truncated file?", path, len);
            break;
        }
    }
    inflateEnd(&z);
    if (s != ELEC_OK) {
        ELEC_FREE(out);
        return s;
    }
    ELEC_FREE(*data);
    *data = out;
    *length = len;
    return ELEC_OK;
#else
    (void)what;
    (void)text;
    (void)head;
    (void)data;
    (void)length;
    return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                      "'%s' is gzip-compressed, and this build has no zlib (define "
                      "ELEC_WITH_ZLIB and link -lz; the Makefile does where zlib is "
                      "installed), or inflate it first: gzip -d", path);
#endif
}

/* ---- >>mrc MRC2014: the writer, the header's checks, the reader */

#define ELEC__MRC_HEADER 1024 /* bytes: 56 words, then 10 labels of 80 */

/* The float the file holds, bit for bit: IEEE 754 binary32 is assumed
   (as every platform elec runs on has it). */
typedef char elec__float_is_32_bits[sizeof(float) == 4 ? 1 : -1];

static void elec__mrc_put_word(unsigned char *h, int word, uint32_t v) {
    unsigned char *p = h + 4 * (word - 1); /* words count from 1, as in the spec */
    p[0] = (unsigned char)(v & 0xff);
    p[1] = (unsigned char)(v >> 8 & 0xff);
    p[2] = (unsigned char)(v >> 16 & 0xff);
    p[3] = (unsigned char)(v >> 24 & 0xff);
}
static void elec__mrc_put_int(unsigned char *h, int word, long v) {
    elec__mrc_put_word(h, word, (uint32_t)(v & 0xffffffffL));
}
static void elec__mrc_put_float(unsigned char *h, int word, float f) {
    uint32_t v;
    memcpy(&v, &f, 4);
    elec__mrc_put_word(h, word, v);
}
/* Word word of the header, or the value at p, in the file's byte order. */
static uint32_t elec__mrc_bits(const unsigned char *p, int big) {
    return big ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
               : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}
static long elec__mrc_int(const unsigned char *h, int word, int big) {
    uint32_t v = elec__mrc_bits(h + 4 * (word - 1), big);
    return v < 0x80000000u ? (long)v : -(long)(0xffffffffu - v) - 1;
}
static float elec__mrc_float_at(const unsigned char *p, int big) {
    uint32_t v = elec__mrc_bits(p, big);
    float f;
    memcpy(&f, &v, 4);
    return f;
}

/* Refuses a map with a value that is not finite, naming its point. */
static elec_status elec__map_finite(const elec_lattice *lattice, const float *map,
                                    const char *format, elec_error *err) {
    size_t total = elec_lattice_size(lattice), index;
    for (index = 0; index < total; index++)
        if (!elec__finite(map[index])) {
            size_t nx = (size_t)lattice->dims[0], ny = (size_t)lattice->dims[1];
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "map[%zu] (point %zu,%zu,%zu) is %g: %s viewers cannot "
                              "show a value that is not finite", index, index % nx,
                              index / nx % ny, index / (nx * ny), (double)map[index],
                              format);
        }
    return ELEC_OK;
}

/* Whether the lattice's origin and cell (dims x spacing) stand in the MRC
   header's floats: finite, the cell no smaller than FLT_MIN (a subnormal
   cell read back 30 % off).  The writers refuse what does not: an origin
   of 1e39 or a spacing of 1e300 wrote infinities the reader then refused,
   a spacing of 1e-45 a cell that read back wrong. */
static elec_status elec__mrc_lattice_fits(const elec_lattice *lattice, elec_error *err) {
    int axis;
    for (axis = 0; axis < 3; axis++) {
        const double cell = lattice->dims[axis] * lattice->spacing[axis];
        const double origin = lattice->origin[axis];
        if (!(fabs(cell) <= FLT_MAX) || !(fabs(cell) >= FLT_MIN) || !(fabs(origin) <= FLT_MAX))
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "MRC: along %c the cell %g A or the origin %g A is past the "
                              "header's floats (%g to %g A): write OpenDX (.dx), whose "
                              "numbers are doubles", 'x' + axis, cell, origin, FLT_MIN,
                              FLT_MAX);
    }
    return ELEC_OK;
}

/* The header of a map of the lattice with the values' statistics stats
   (elec_write_mrc's, and elec_mrc_header's for writers of their own). */
static void elec__mrc_header_bytes(unsigned char h[ELEC__MRC_HEADER],
                                   const elec_lattice *lattice, const elec_map_stats *stats,
                                   const char *comment) {
    int axis, label = 0;
    memset(h, 0, ELEC__MRC_HEADER);
    for (axis = 0; axis < 3; axis++) {
        elec__mrc_put_int(h, 1 + axis, lattice->dims[axis]);  /* NX NY NZ */
        elec__mrc_put_int(h, 5 + axis, 0);                    /* NXSTART ... */
        elec__mrc_put_int(h, 8 + axis, lattice->dims[axis]);  /* MX MY MZ */
        /* CELLA: MX intervals of the spacing (the spec's "sampling along X
           of the unit cell"; a viewer's step is CELLA / MX) */
        elec__mrc_put_float(h, 11 + axis,
                            (float)(lattice->dims[axis] * lattice->spacing[axis]));
        elec__mrc_put_float(h, 14 + axis, 90.0f);             /* CELLB */
        elec__mrc_put_int(h, 17 + axis, 1 + axis);            /* MAPC MAPR MAPS */
        elec__mrc_put_float(h, 50 + axis, (float)lattice->origin[axis]); /* ORIGIN */
    }
    elec__mrc_put_int(h, 4, 2); /* MODE 2: 32-bit real */
    elec__mrc_put_float(h, 20, (float)stats->min);
    elec__mrc_put_float(h, 21, (float)stats->max);
    elec__mrc_put_float(h, 22, (float)stats->mean);
    elec__mrc_put_int(h, 23, 1);     /* ISPG 1: one volume (0 is an image stack) */
    elec__mrc_put_int(h, 24, 0);     /* NSYMBT: no extended header, so EXTTYP (word 27) is left 0 */
    elec__mrc_put_int(h, 28, 20140); /* NVERSION: MRC2014, version 0 */
    memcpy(h + 208, "MAP ", 4);      /* word 53 */
    h[212] = 0x44;                   /* word 54, MACHST: little endian */
    h[213] = 0x44;
    elec__mrc_put_float(h, 55, (float)stats->rms);
    /* labels (word 57 on): comment's lines, 80 characters each, spaces after */
    memset(h + 224, ' ', 800);
    while (comment && *comment && label < 10) {
        size_t n = strcspn(comment, "\n"), k, take = n;
        while (take && comment[take - 1] == '\r') take--;
        if (take > 80) take = n = 80; /* the rest of the line on the next label */
        for (k = 0; k < take; k++) {
            unsigned char c = (unsigned char)comment[k];
            h[224 + 80 * label + k] = c < 0x20 || c == 0x7f ? ' ' : c;
        }
        label++;
        comment += n;
        if (*comment == '\n') comment++;
    }
    elec__mrc_put_int(h, 56, label); /* NLABL */
}

ELEC_DEF elec_status elec_write_mrc(const char *path, const elec_lattice *lattice,
                                    const float *map, const char *comment,
                                    elec_error *err) {
    unsigned char h[ELEC__MRC_HEADER];
    unsigned char block[4096];
    double lo = 0.0, hi = 0.0, sum = 0.0, mean, squares = 0.0;
    size_t total, i, used = 0;
    int gz;
    elec_map_stats stats;
    elec_output *f;
    elec_status s;
    if (!path) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "path is NULL");
    s = elec_lattice_check(lattice, err);
    if (s != ELEC_OK) return s;
    if (!map) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "map is NULL");
    if (elec__mrc_lattice_fits(lattice, err) != ELEC_OK) return ELEC_ERR_INVALID_ARG;
    if (elec__map_finite(lattice, map, "MRC", err) != ELEC_OK) return ELEC_ERR_INVALID_ARG;
    total = elec_lattice_size(lattice);
    /* DMIN, DMAX, DMEAN and RMS (the deviation from the mean), in double */
    for (i = 0; i < total; i++) {
        double v = map[i];
        if (i == 0 || v < lo) lo = v;
        if (i == 0 || v > hi) hi = v;
        sum += v;
    }
    mean = sum / (double)total;
    for (i = 0; i < total; i++) squares += ((double)map[i] - mean) * ((double)map[i] - mean);
    stats.min = lo;
    stats.max = hi;
    stats.mean = mean;
    stats.rms = sqrt(squares / (double)total);
    elec__mrc_header_bytes(h, lattice, &stats, comment);
    gz = elec__path_ends(path, ".gz");
    s = gz ? elec_output_open_gzip(path, &f, err) : elec_output_open(path, &f, err);
    if (s != ELEC_OK) return s;
    elec_output_write(f, h, sizeof h);
    for (i = 0; i < total; i++) { /* the values, x fastest, as the map holds them */
        uint32_t v;
        memcpy(&v, &map[i], 4);
        block[used++] = (unsigned char)(v & 0xff);
        block[used++] = (unsigned char)(v >> 8 & 0xff);
        block[used++] = (unsigned char)(v >> 16 & 0xff);
        block[used++] = (unsigned char)(v >> 24 & 0xff);
        if (used == sizeof block || i + 1 == total) {
            elec_output_write(f, block, used);
            used = 0;
        }
    }
    return elec_output_commit(f, err);
}

/* What the header says, checked. */
typedef struct elec__mrc_header {
    int big;             /* the file's byte order */
    size_t count;        /* values */
    size_t data;         /* where they start: 1024 + NSYMBT */
    size_t whole;        /* the file's length by its header */
    int crs[3];          /* NC NR NS: columns, rows, sections */
    int axis_of[3];      /* the spatial axis (0 x, 1 y, 2 z) of each */
    elec_lattice lattice;
} elec__mrc_header;

static const char *elec__mrc_mode_name(long mode) {
    switch (mode) {
    case 0: return "8-bit integers";
    case 1: return "16-bit integers";
    case 3: return "complex 16-bit integers";
    case 4: return "complex 32-bit floats";
    case 6: return "unsigned 16-bit integers";
    case 12: return "16-bit floats";
    case 101: return "4-bit integers";
    default: return "not an MRC mode";
    }
}

/* The header of the n bytes at h (n >= 1024), checked against itself and
   the limits; not yet against the file's length (the caller's). */
static elec_status elec__mrc_read_header(const char *name, const unsigned char *h, size_t n,
                                         elec__mrc_header *m, elec_error *err) {
    static const char axis_name[3] = {'x', 'y', 'z'};
    long mode, map_axis[3], start[3], sampling[3], nsymbt;
    double cell[3], angle[3];
    int axis, has_stamp, any_origin = 0;
    if (n < ELEC__MRC_HEADER)
        return elec__fail(err, ELEC_ERR_PARSE, 0,
                          "%s has %zu bytes, fewer than the %d of an MRC header", name, n,
                          ELEC__MRC_HEADER);
    has_stamp = memcmp(h + 208, "MAP", 3) == 0;
    /* Byte order by the machine stamp (MRC2014: 0x44 0x44 little endian,
       0x11 0x11 big; 0x44 0x41 from some writers), else by which order
       gives a known mode. */
    if (h[212] == 0x44) m->big = 0;
    else if (h[212] == 0x11) m->big = 1;
    else {
        long le = elec__mrc_int(h, 4, 0), be = elec__mrc_int(h, 4, 1);
        int known_le = le >= 0 && (le <= 4 || le == 6 || le == 12 || le == 101);
        int known_be = be >= 0 && (be <= 4 || be == 6 || be == 12 || be == 101);
        if (!known_le && !known_be)
            return elec__fail(err, ELEC_ERR_PARSE, 0,
                              "%s is not an MRC map: no machine stamp, and its mode word "
                              "is no mode in either byte order", name);
        m->big = !known_le;
    }
    mode = elec__mrc_int(h, 4, m->big);
    if (mode != 2)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "%s has mode %ld (%s): only mode 2 maps, 32-bit floats, are "
                          "read", name, mode, elec__mrc_mode_name(mode));
    for (axis = 0; axis < 3; axis++) {
        long count = elec__mrc_int(h, 1 + axis, m->big);
        if (count < 1 || count > INT_MAX)
            return elec__fail(err, ELEC_ERR_PARSE, 0,
                              "%s: its %s count %ld must be positive", name,
                              axis == 0 ? "column" : axis == 1 ? "row" : "section", count);
        m->crs[axis] = (int)count;
        start[axis] = elec__mrc_int(h, 5 + axis, m->big);
        sampling[axis] = elec__mrc_int(h, 8 + axis, m->big);
        cell[axis] = elec__mrc_float_at(h + 4 * (10 + axis), m->big);
        angle[axis] = elec__mrc_float_at(h + 4 * (13 + axis), m->big);
        map_axis[axis] = elec__mrc_int(h, 17 + axis, m->big);
    }
    /* MAPC MAPR MAPS: which of x, y, z the columns, rows and sections are */
    for (axis = 0; axis < 3; axis++) {
        int other;
        if (map_axis[axis] < 1 || map_axis[axis] > 3)
            break;
        for (other = 0; other < axis; other++)
            if (map_axis[other] == map_axis[axis]) break;
        if (other < axis) break;
        m->axis_of[axis] = (int)map_axis[axis] - 1;
    }
    if (axis < 3)
        return elec__fail(err, ELEC_ERR_PARSE, 0,
                          "%s: MAPC MAPR MAPS %ld %ld %ld is not an order of the axes 1 2 3",
                          name, map_axis[0], map_axis[1], map_axis[2]);
    nsymbt = elec__mrc_int(h, 24, m->big);
    if (nsymbt < 0)
        return elec__fail(err, ELEC_ERR_PARSE, 0,
                          "%s: its extended header size NSYMBT %ld is negative", name, nsymbt);
    /* the counts' product and the file's length, without overflow */
    m->count = (size_t)m->crs[0];
    for (axis = 1; axis < 3; axis++) {
        if (m->count > ((size_t)-1 / 8) / (size_t)m->crs[axis])
            return elec__fail(err, ELEC_ERR_PARSE, 0,
                              "%s: its counts %d x %d x %d are more values than memory holds",
                              name, m->crs[0], m->crs[1], m->crs[2]);
        m->count *= (size_t)m->crs[axis];
    }
    m->data = (size_t)ELEC__MRC_HEADER + (size_t)nsymbt;
    m->whole = 4 * m->count <= (size_t)-1 - m->data ? m->data + 4 * m->count : (size_t)-1;
    /* cell angles: 90 (or all 0, as some writers leave them) */
    if (!(angle[0] == 0.0 && angle[1] == 0.0 && angle[2] == 0.0))
        for (axis = 0; axis < 3; axis++)
            if (!(fabs(angle[axis] - 90.0) <= 1e-3))
                return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                                  "%s: cell angles %g %g %g: only orthogonal lattices "
                                  "(90 90 90) are read", name, angle[0], angle[1], angle[2]);
    for (axis = 0; axis < 3; axis++) {
        int c = 0; /* the file axis of spatial axis `axis` */
        while (m->axis_of[c] != axis) c++;
        m->lattice.dims[axis] = m->crs[c];
        if (!(sampling[axis] > 0) || !(cell[axis] > 0.0) || !elec__finite(cell[axis]))
            return elec__fail(err, ELEC_ERR_PARSE, 0,
                              "%s: cell %g A over %ld intervals along %c gives no spacing",
                              name, cell[axis], sampling[axis], axis_name[axis]);
        m->lattice.spacing[axis] = cell[axis] / (double)sampling[axis];
        m->lattice.origin[axis] = elec__mrc_float_at(h + 4 * (49 + axis), m->big);
        if (!elec__finite(m->lattice.origin[axis]))
            return elec__fail(err, ELEC_ERR_PARSE, 0, "%s: its origin along %c is %g",
                              name, axis_name[axis], m->lattice.origin[axis]);
        if (m->lattice.origin[axis] != 0.0) any_origin = 1;
    }
    /* The origin: words 50-52 where the file is MRC2000 or later (its
       stamp) and sets them, else the first column, row and section's
       index (NXSTART ...) times the spacing, CCP4's convention. */
    if (!has_stamp || !any_origin)
        for (axis = 0; axis < 3; axis++) {
            int c = 0;
            while (m->axis_of[c] != axis) c++;
            m->lattice.origin[axis] = (double)start[c] * m->lattice.spacing[axis];
        }
    {
        elec_error lattice_err;
        if (elec_lattice_check(&m->lattice, &lattice_err) != ELEC_OK)
            return elec__fail(err, ELEC_ERR_PARSE, 0, "%s: %s", name, lattice_err.message);
    }
    return ELEC_OK;
}

/* elec__read_file's head check: a stream stops at a refused header or
   past the length its header gives, and a header that gives more than
   ELEC_MAX_INPUT_BYTES is refused before the rest is read (a buffer of
   the caller's, elec_parse_mrc's, is held to its own length alone). */
static elec_status elec__mrc_head(const char *path, const char *head, size_t n,
                                  size_t *whole, elec_error *err) {
    elec__mrc_header m;
    char name[300];
    elec_status s;
    snprintf(name, sizeof name, "'%s'", path);
    s = elec__mrc_read_header(name, (const unsigned char *)head, n, &m, err);
    if (s != ELEC_OK) return s;
    if (m.whole > (size_t)ELEC_MAX_INPUT_BYTES)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "%s: its header gives %d x %d x %d values, %zu bytes, more than "
                          "%zu, the limit for input (ELEC_MAX_INPUT_BYTES)", name,
                          m.crs[0], m.crs[1], m.crs[2], m.whole,
                          (size_t)ELEC_MAX_INPUT_BYTES);
    *whole = m.whole;
    return ELEC_OK;
}

static elec_status elec__mrc_parse(const char *name, const unsigned char *data,
                                   size_t length, elec_lattice *lattice, float **map,
                                   elec_error *err) {
    elec__mrc_header m;
    elec_status s = elec__mrc_read_header(name, data, length, &m, err);
    size_t stride[3], index = 0, c, r, k;
    float *values;
    if (s != ELEC_OK) return s;
    if (length != m.whole)
        return elec__fail(err, ELEC_ERR_PARSE, 0,
                          "%s has %zu bytes; its header (%d x %d x %d floats after %zu "
                          "bytes of header) gives it %zu%s", name, length, m.crs[0],
                          m.crs[1], m.crs[2], m.data, m.whole,
                          length < m.whole ? ": a truncated file?" : "");
    values = (float *)ELEC_MALLOC(m.count * sizeof(float));
    if (!values)
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for a map of %zu values",
                          m.count);
    /* the step in the map (x fastest) of one column, row and section */
    for (c = 0; c < 3; c++) {
        int axis = m.axis_of[c];
        stride[c] = axis == 0 ? 1
                  : axis == 1 ? (size_t)m.lattice.dims[0]
                              : (size_t)m.lattice.dims[0] * (size_t)m.lattice.dims[1];
    }
    data += m.data;
    for (k = 0; k < (size_t)m.crs[2]; k++)
        for (r = 0; r < (size_t)m.crs[1]; r++)
            for (c = 0; c < (size_t)m.crs[0]; c++, data += 4) {
                float v = elec__mrc_float_at(data, m.big);
                if (!elec__finite(v)) {
                    ELEC_FREE(values);
                    return elec__fail(err, ELEC_ERR_PARSE, 0,
                                      "%s: value %zu (column %zu, row %zu, section %zu) is "
                                      "%g, not a finite float", name, index, c, r, k,
                                      (double)v);
                }
                values[c * stride[0] + r * stride[1] + k * stride[2]] = v;
                index++;
            }
    *lattice = m.lattice;
    *map = values;
    return ELEC_OK;
}

ELEC_DEF elec_status elec_parse_mrc(const void *data, size_t length, elec_lattice *lattice,
                                    float **map, elec_error *err) {
    elec_status s;
    if (!lattice || !map)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "lattice or map is NULL");
    *map = NULL;
    if (!data && length)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "data is NULL");
    s = elec__mrc_parse("the MRC data", (const unsigned char *)(data ? data : ""), length,
                        lattice, map, err);
    if (s == ELEC_OK) elec__ok(err);
    return s;
}

ELEC_DEF elec_status elec_read_mrc(const char *path, elec_lattice *lattice, float **map,
                                   elec_error *err) {
    char *data, name[300];
    size_t length;
    elec_status s;
    if (!lattice || !map)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "lattice or map is NULL");
    *map = NULL;
    s = elec__read_file(path, "an MRC", 0, elec__mrc_head, &data, &length, err);
    if (s != ELEC_OK) return s;
    snprintf(name, sizeof name, "'%s'", path);
    s = elec__mrc_parse(name, (const unsigned char *)data, length, lattice, map, err);
    ELEC_FREE(data);
    if (s == ELEC_OK) elec__ok(err);
    return s;
}

/* ---- >>mrc one call for every format */

ELEC_DEF elec_status elec_write_map(const char *path, const elec_lattice *lattice,
                                    const float *map, const char *comment,
                                    elec_error *err) {
    if (elec_map_format_of(path, NULL) == ELEC_MAP_MRC)
        return elec_write_mrc(path, lattice, map, comment, err);
    return elec_write_dx(path, lattice, map, comment, err);
}

ELEC_DEF elec_status elec_read_map(const char *path, elec_lattice *lattice, float **map,
                                   elec_error *err) {
    if (elec_map_format_of(path, NULL) == ELEC_MAP_MRC)
        return elec_read_mrc(path, lattice, map, err);
    return elec_read_dx(path, lattice, map, err);
}


/* --------------------------------------------------------------------------- >>dcs DCS */

ELEC_DEF const char *elec_dcs_variant_name(elec_dcs_variant v) {
    switch (v) {
    case ELEC_DCS_FASTEST: return "fastest";
    case ELEC_DCS_SIMPLE: return "simple";
    case ELEC_DCS_CONST: return "const";
    case ELEC_DCS_UNROLL4: return "unroll4";
    case ELEC_DCS_UNROLL8_COALESCED: return "unroll8-coalesced";
    case ELEC_DCS_VOLUME: return "volume";
    case ELEC_DCS_HYBRID_RSQRT: return "hybrid-rsqrt";
    case ELEC_DCS_VARIANT_COUNT: break;
    }
    return "unknown";
}

ELEC_DEF elec_status elec_dcs_params_resolve(const elec_dcs_params *in,
                                             elec_dcs_params *out, elec_error *err) {
    elec_dcs_params r;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    if (in) r = *in;
    else memset(&r, 0, sizeof r);
    if (r.scale == 0.0) r.scale = 1.0;
    if (r.variant == ELEC_DCS_FASTEST) r.variant = ELEC_DCS_HYBRID_RSQRT;
    if (!elec__finite(r.scale))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "scale is not finite");
    if ((int)r.variant < 0 || r.variant >= ELEC_DCS_VARIANT_COUNT)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "unknown DCS variant %d", (int)r.variant);
    if (elec__gpu_set_check(&r.gpus, err) != ELEC_OK) return ELEC_ERR_INVALID_ARG;
    *out = r;
    elec__ok(err);
    return ELEC_OK;
}

/* --------------------------------------------------------------------------- >>mdh MDH */

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

ELEC_DEF elec_status elec_mdh_params_resolve(const elec_mdh_params *in,
                                             elec_mdh_params *out, elec_error *err) {
    elec_mdh_params r;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    if (in) r = *in;
    else memset(&r, 0, sizeof r);
    if (r.scale == 0.0) r.scale = 1.0;
    if (r.temperature == 0.0) r.temperature = ELEC_ROOM_TEMPERATURE;
    if (r.dielectric == 0.0) r.dielectric = 78.54;
    if (r.kappa == 0.0 && r.ionic_strength > 0.0)
        r.kappa = elec_kappa_from_ionic_strength(r.ionic_strength,
                                                 r.dielectric, r.temperature);
    if (!elec__finite(r.scale))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "scale is not finite");
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
    /* the inputs finite and in range, an overflowing kappa: ionic strength
       1e300 M, or a temperature of 1e-300 K */
    if (!elec__finite(r.kappa) && (in ? in->kappa : 0.0) == 0.0)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "ionic strength %g M at dielectric %g and %g K gives kappa %g /A: "
                          "past double's range", r.ionic_strength, r.dielectric,
                          r.temperature, r.kappa);
    if (!elec__finite(r.kappa))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "kappa %g is not finite", r.kappa);
    if (!(r.kappa >= 0.0))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "kappa %g must be zero or positive", r.kappa);
    if (elec__gpu_set_check(&r.gpus, err) != ELEC_OK) return ELEC_ERR_INVALID_ARG;
    *out = r;
    elec__ok(err);
    return ELEC_OK;
}

/* ---------------------------------------------------------------- >>cutoff cutoff maps */

ELEC_DEF elec_status elec_cutoff_params_resolve(const elec_cutoff_params *in,
                                                elec_cutoff_params *out,
                                                elec_error *err) {
    elec_cutoff_params r;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    if (in) r = *in;
    else memset(&r, 0, sizeof r);
    if (r.scale == 0.0) r.scale = 1.0;
    if (r.cutoff == 0.0) r.cutoff = 12.0;
    if (r.splitting == 0) r.splitting = 2;
    if (r.bin_length == 0.0) r.bin_length = elec_bin_length(0.1, 0.75);
    if (!elec__finite(r.scale))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "scale is not finite");
    if (!(r.cutoff > 0.0) || !elec__finite(r.cutoff))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "cutoff %g A must be positive", r.cutoff);
    if ((int)r.kind < 0 || r.kind > ELEC_CUTOFF_SHIFTED)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "unknown cutoff kind %d",
                          (int)r.kind);
    if (r.splitting < 1 || r.splitting > 6)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "splitting order %d: use 1 to 6", r.splitting);
    if (!(r.bin_length > 0.0) || !elec__finite(r.bin_length))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "bin length %g A must be positive", r.bin_length);
    if (elec__gpu_set_check(&r.gpus, err) != ELEC_OK) return ELEC_ERR_INVALID_ARG;
    *out = r;
    elec__ok(err);
    return ELEC_OK;
}

/* --------------------------------------------------------------------------- >>msm MSM */

/* MSM's error model: log10(relative RMS error) = c0 + c1 log10(h) +
   c2 log10(a), per interpolation (cubic C2, quintic C3, septic C4, nonic
   C5), least squares on the README's table (make msm-table: 3000 random
   charges in a 40 A cube, maps against the exact sum, a = 8 to 16 A, h = 1
   to 2.5 A); the table's twelve values per order lie within 0.87 to 1.20
   of the fit.  Other systems err more, relative to their potential: a
   water box's map 2.4 times the table at the defaults (README), the demo
   droplet's 2.3 times at 1e-4; forces within 1.5.  Hence the choice aims
   at a third of the tolerance. */
static const double elec__msm_error_fit[4][3] = { /* make msm-table prints it */
    {-0.3775, 3.4625, -3.4806}, /* cubic   */
    {0.0245, 4.5880, -4.7709},  /* quintic */
    {0.4660, 5.6522, -5.8436},  /* septic  */
    {1.1095, 6.7094, -6.9636}}; /* nonic   */

/* The same fit to the periodic forces against exact Ewald (make
   msm-table's second table: random charges at the maps' density in cubes
   of 32 h, so that the power-of-two lattice takes h itself; a = 8 to 16
   A, h = 1 to 2.5 A; the table within 0.80 to 1.27 of it), which the
   periodic choice reads: at h = 1 A the forces err 1.7 to 5.2 times the
   maps, less steeply in h (cubic h^2.1 where its maps go as h^3.5). */
static const double elec__msm_periodic_force_fit[4][3] = { /* make msm-table */
    {-0.8392, 2.0671, -2.5284}, /* cubic   */
    {-0.3498, 3.4883, -4.0231}, /* quintic */
    {0.0626, 4.6085, -5.1001},  /* septic  */
    {0.5497, 5.6396, -6.0934}}; /* nonic   */

/* The fitted error at (h, a): the maps' fit, or the periodic forces' where
   periodic is set. */
static double elec__msm_error_model(int periodic, int interpolation, double h, double a) {
    const double *c = periodic ? elec__msm_periodic_force_fit[interpolation]
                               : elec__msm_error_fit[interpolation];
    return pow(10.0, c[0] + c[1] * log10(h) + c[2] * log10(a));
}

/* Estimated work per atom (arbitrary units, each a multiply-add) at 0.1
   atoms/A^3, for `targets` points (or atoms) per atom the potential is
   wanted at: anterpolation's p^3 points per atom, and per target the
   interpolation's p^3 and the short-range pairs within a; the lattice
   cutoff over every level (a sphere of radius 2a/h points per lattice
   point, 8/7 for the coarser levels).  On seed 000's map the GPU's
   short-range and lattice times stand as these counts do (0.13 s and 19
   ms; 8.9e10 and 1.4e10 terms). */
static double elec__msm_cost(int interpolation, double h, double a, double targets) {
    const double density = 0.1, p = 4.0 + 2.0 * interpolation;
    const double stencil = 4.18879 * pow(2.0 * a / h, 3.0);
    return p * p * p + targets * (p * p * p + density * 4.18879 * a * a * a) +
           stencil * 8.0 / 7.0 / (h * h * h) / density;
}

/* Work of one periodic evaluation (multiply-adds) in its direct form for
   atoms in box on lattices of shape s: anterpolation and interpolation,
   p^3 each an atom; the short range's partners within a at the box's
   density; restriction and prolongation, p^3 each a finer point (as the
   GPU does them); and each level's stencil sum over its lattice, the
   stencil folded where it outreaches the box (as the CPU without FFTW
   does it).  Unlike elec__msm_cost it knows the power-of-two lattices (up
   to twice as fine as h) and the density (a dilute box's lattices
   outweigh its atoms).  The CPU's transfers run axis by axis and, with
   FFTW, like the GPU's, its larger stencils by FFT (elec_cpu.h), so the
   figure bounds their work from above; one figure keeps one choice for
   CPU and GPU, with or without FFTW. */
static double elec__pmsm_cost(const elec__pmsm_shape *s, int interpolation, double a,
                              const elec_box *box, size_t atoms) {
    const double p = 2.0 * elec_msm_support(interpolation), p3 = p * p * p;
    const double n = (double)atoms;
    const double density = n / (box->length[0] * box->length[1] * box->length[2]);
    double work = n * (2.0 * p3 + density * 4.18879 * a * a * a);
    int l;
    for (l = 0; l < s->levels; l++) {
        const double points = (double)elec__pmsm_shape_points(s, l);
        work += points * (double)elec__pmsm_stencil_points(s, l);
        if (l + 1 < s->levels) work += 2.0 * points * p3;
    }
    return work;
}

/* Whether the finest periodic lattice has as many points along each edge
   as the interpolation's width (2 elec_msm_support): the GPU's anterpolation, a
   periodic charge map, needs them, so a choice makes narrower lattices
   finer (the CPU would wrap the weights; both take one choice). */
static int elec__pmsm_fits_order(const elec__pmsm_shape *s, int interpolation) {
    const int width = 2 * elec_msm_support(interpolation);
    return s->levels > 0 && s->n[0][0] >= width && s->n[0][1] >= width &&
           s->n[0][2] >= width;
}

/* The coarsest spacing at most h whose lattice fits the interpolation: h,
   or the shortest edge over the least power of two >= the width (every
   edge then has at least that many points). */
static double elec__pmsm_fitting_spacing(const elec_box *box, int interpolation, double h) {
    const int width = 2 * elec_msm_support(interpolation);
    double points = 1.0, shortest = box->length[0];
    int axis;
    while (points < (double)width) points *= 2.0;
    for (axis = 1; axis < 3; axis++)
        if (box->length[axis] < shortest) shortest = box->length[axis];
    return shortest / points < h ? shortest / points : h;
}

/* The finest periodic lattice's coarsest spacing: the h its error has
   (a shape of no levels has none: callers pass such over). */
static double elec__pmsm_spacing(const elec__pmsm_shape *s) {
    double h = s->h[0][0];
    if (s->h[0][1] > h) h = s->h[0][1];
    if (s->h[0][2] > h) h = s->h[0][2];
    return h;
}

/* The levels of a periodic hierarchy past the one where its shortest
   axis's lattice is one point: log2 of the finest lattice's most over
   fewest points an edge.  From there on only the long axes coarsen, and
   each level's kernel, summed over the short axes' images, grows with a_l
   where a cube's falls, so that its error adds up level by level.  Random
   charges at 0.0475 /A^3 in boxes of one long axis (10 and 16 A across,
   2 to 16 times as long; three seeds, neutral and charged, against exact
   Ewald) erred up to 1.4 times the tolerance in their potentials at its
   choices and their energies up to 6.5 times estimate.energy (an audit;
   at fixed h 1.5 A, a 12 A, septic, the potentials' error grew 3.8, 10
   and 28 times from the cube's at 2, 3 and 4 levels past, and the
   energy's ratio to its estimate 1.3, 1.9 and 4.6 times).
   elec__pmsm_elongation: the forces' and potentials' factor on the
   table's fit, 2^(0.6 past), in the choice and its estimates; with it the
   elongated runs came to at most 0.45 of the tolerance in the potentials
   and 0.28 in the forces (0.5 for the exponent: 0.51 and 0.32; the cubes,
   unchanged, 0.58 and 0.39).  The energy's error grows faster, and
   estimate.energy takes 2^past (elec__pmsm_energy_error): the energies
   at those choices then came to at most 1.5 times it, at the fixed
   settings 0.63 (bench/RESULTS.md, 2026-12-05, 18:26 UTC on). */
static int elec__pmsm_levels_past(const elec__pmsm_shape *s) {
    int fewest = s->n[0][0], axis, past = 0;
    for (axis = 1; axis < 3; axis++)
        if (s->n[0][axis] < fewest) fewest = s->n[0][axis];
    while (((long)fewest << past) < (1L << s->levels)) past++;
    return past;
}
static double elec__pmsm_elongation(const elec__pmsm_shape *s) {
    return pow(2.0, 0.6 * elec__pmsm_levels_past(s));
}

/* The periodic forces' fitted error on the lattices of shape s: the
   table's at their spacing, times the elongation's factor. */
static double elec__pmsm_error(const elec__pmsm_shape *s, int order, double a) {
    return elec__msm_error_model(1, order, elec__pmsm_spacing(s), a) * elec__pmsm_elongation(s);
}

/* The cheapest (h, a, interpolation) in the table's span whose fitted error
   is at most target; fixed values kept.  For the periodic hierarchy (box
   not NULL, with its atom count) each candidate's h is the spacing its
   power-of-two lattice takes (made finer where too narrow for the
   interpolation: elec__pmsm_fits_order), and elec__pmsm_cost its cost; a
   candidate whose lattices elec__pmsm_shape_of refuses, or that does not
   fit with h fixed, is passed over.  Returns the
   fitted error (or -1 when none meets it). */
static double elec__msm_choose(elec_msm_params *r, double target, double points_per_atom,
                               const elec_box *box, size_t atoms) {
    /* an interpolation is given where it is not cubic, the zero, or where
       a splitting is (elec__msm_paired_order set the order it pairs with) */
    const int given_order = r->interpolation != ELEC_MSM_CUBIC || r->splitting != 0,
              periodic = box != NULL;
    double best_cost = -1.0, best_error = -1.0, best_h = 0.0, best_a = 0.0;
    int best_order = 0, order;
    for (order = given_order ? (int)r->interpolation : 0;
         order <= (given_order ? (int)r->interpolation : (int)ELEC_MSM_NONIC); order++) {
        double a;
        for (a = 8.0; a <= 16.0 + 1e-9; a += 0.5) {
            double aa = r->cutoff > 0.0 ? r->cutoff : a, h, lo, hi, cost, error;
            int i;
            if (r->spacing > 0.0) {
                h = r->spacing;
            } else {
                /* the coarsest h in [1, 2.5] that meets the target */
                lo = 1.0;
                hi = 2.5;
                if (elec__msm_error_model(periodic, order, hi, aa) <= target) h = hi;
                else if (elec__msm_error_model(periodic, order, lo, aa) > target) h = lo;
                else {
                    for (i = 0; i < 40; i++) {
                        double mid = 0.5 * (lo + hi);
                        if (elec__msm_error_model(periodic, order, mid, aa) <= target)
                            lo = mid;
                        else hi = mid;
                    }
                    h = lo;
                }
            }
            if (box) {
                elec_msm_params trial = *r;
                elec__pmsm_shape shape;
                /* a finer h where the lattice is too narrow for the order
                   (it only lowers the error); a fixed h is kept */
                trial.spacing = r->spacing > 0.0 ? h : elec__pmsm_fitting_spacing(box, order, h);
                trial.cutoff = aa;
                if (elec__pmsm_shape_of(&trial, box, &shape, NULL) != ELEC_OK ||
                    !elec__pmsm_fits_order(&shape, order)) {
                    if (r->cutoff > 0.0) break;
                    continue;
                }
                if (r->spacing <= 0.0) h = elec__pmsm_spacing(&shape);
                error = elec__pmsm_error(&shape, order, aa);
                cost = elec__pmsm_cost(&shape, order, aa, box, atoms);
            } else {
                error = elec__msm_error_model(0, order, h, aa);
                cost = elec__msm_cost(order, h, aa, points_per_atom);
            }
            if (error <= target && (best_cost < 0.0 || cost < best_cost)) {
                best_cost = cost;
                best_error = error;
                best_h = h;
                best_a = aa;
                best_order = order;
            }
            if (r->cutoff > 0.0) break;
        }
    }
    if (best_cost < 0.0) return -1.0;
    r->spacing = best_h;
    r->cutoff = best_a;
    r->interpolation = (elec_msm_interpolation)best_order;
    return best_error;
}

ELEC_DEF void elec_msm_lattices_free(elec_msm_lattices *lattices) {
    if (!lattices) return;
    ELEC_FREE(lattices->block);
    memset(lattices, 0, sizeof *lattices);
}

static elec_status elec__pmsm_arrangement(const elec_atoms *atoms, const elec_box *box,
                                          const elec_msm_params *in, double *factor,
                                          elec_error_estimate *floors, elec_error *err);

/* The periodic choice's aim: the fitted error at most the tolerance over
   this.  A quarter (water's forces err up to 2.6 times the periodic table,
   whose random charges are at 0.047 /A^3, thousands of them); less for
   fewer than 128 atoms, in proportion (the relative RMS of so few forces
   is as uneven as their closest pairs: 20 to 30 seeds of 8 to 64 random
   charges erred up to 24 times the table), and for atoms under 0.01 /A^3,
   as the cube root of the dilution (100 to 300 random charges at 0.003 to
   0.005 /A^3 erred 3.6 to 5.2 times the table); and for forces small for
   their charges, as a crystal's near its sites, by how much more they err
   (elec__pmsm_arrangement): the largest of the three, as each stands for
   forces smaller than the table's (few or dilute atoms have few close
   pairs).
   Dilute boxes at tight tolerances can so take fine lattices: 8 atoms
   in a 100 A box at 1e-5 take 128 points an edge, 0.21 s on the CPU with
   FFTW; without it about 7e11 stencil terms, some 6 minutes at the pace
   the 60 A box of tests/test_tolerance.c measured (3.2e10 in 16 s). */
static double elec__pmsm_aim(const elec_box *box, size_t atoms, double arrangement) {
    const double n = (double)atoms;
    const double density = n / (box->length[0] * box->length[1] * box->length[2]);
    double aim = arrangement > 1.0 ? arrangement : 1.0;
    /* no pair to err on; one atom's lattice self-force no aim bounds, and
       a tolerance that would choose for it is refused (elec__msm_resolve) */
    if (atoms < 2) return 4.0;
    if (128.0 / n > aim) aim = 128.0 / n;
    if (density < 0.01 && cbrt(0.01 / density) > aim) aim = cbrt(0.01 / density);
    return 4.0 * aim;
}

/* What the choice left at 0: cutoff 12 A, spacing 2 A, the splitting C2
   with the cubic and one order more per step up in interpolation (the
   pairs of the README's error table: a smoother gamma than the basis can
   follow gains nothing, a rougher one spoils the higher order), 4096
   points on the top lattice. */
static void elec__msm_defaults(elec_msm_params *r) {
    if (r->cutoff == 0.0) r->cutoff = 12.0;
    if (r->spacing == 0.0) r->spacing = 2.0;
    if (r->splitting == 0)
        r->splitting = (int)r->interpolation >= 0 && r->interpolation <= ELEC_MSM_NONIC
                           ? 2 + (int)r->interpolation
                           : 2;
    if (r->max_top_points == 0) r->max_top_points = 4096;
}

/* Where the choice left no estimate and r is a choice the table has (the
   matched splitting): the table's error, periodic at the spacing its
   power-of-two lattice takes, times these_atoms. */
static void elec__msm_estimate_of(elec_msm_params *r, const elec_box *box,
                                  double these_atoms) {
    elec__pmsm_shape shape;
    double h = r->spacing, elongation = 1.0;
    if (!(r->estimate.force == 0.0 && (int)r->interpolation >= 0 &&
          r->interpolation <= ELEC_MSM_NONIC && r->spacing > 0.0 && r->cutoff > 0.0 &&
          r->splitting == 2 + (int)r->interpolation))
        return;
    if (box && elec__pmsm_shape_of(r, box, &shape, NULL) == ELEC_OK && shape.levels > 0) {
        h = elec__pmsm_spacing(&shape);
        elongation = elec__pmsm_elongation(&shape);
    }
    r->estimate.force = these_atoms * elongation *
                        elec__msm_error_model(box != NULL, (int)r->interpolation, h, r->cutoff);
}

/* The resolved fields' checks: scale, tolerance, cutoff, spacing and
   their ratio, interpolation, splitting, the top lattice. */
static elec_status elec__msm_fields_check(const elec_msm_params *r, elec_error *err) {
    if (!elec__finite(r->scale))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "scale is not finite");
    if (!(r->tolerance >= 0.0) || !(r->tolerance < 1.0))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "MSM tolerance %g must lie in (0, 1) (0 = the defaults)",
                          r->tolerance);
    if (r->tolerance > 0.0 && r->tolerance < ELEC_MSM_TOLERANCE_FLOOR)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "MSM tolerance %g is below what its measured error table "
                          "reaches (%g: nonic, a 16 A, h 1 A, with room)", r->tolerance,
                          ELEC_MSM_TOLERANCE_FLOOR);
    if (!(r->cutoff > 0.0) || !elec__finite(r->cutoff))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "MSM cutoff %g A must be positive", r->cutoff);
    if (!(r->spacing > 0.0) || !(r->spacing <= r->cutoff))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "MSM spacing %g A must be positive and at most the "
                          "cutoff (%g A)", r->spacing, r->cutoff);
    if (r->cutoff / r->spacing > 64.0)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "MSM cutoff / spacing = %g: at most 64 (the lattice "
                          "stencils grow as its cube)", r->cutoff / r->spacing);
    if ((int)r->interpolation < 0 || r->interpolation > ELEC_MSM_NONIC)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "unknown MSM interpolation %d", (int)r->interpolation);
    if (r->splitting < 1 || r->splitting > 6)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "MSM splitting order %d: use 1 to 6", r->splitting);
    if (r->max_top_points < 8)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "max_top_points %d: at least 8", r->max_top_points);
    return ELEC_OK;
}

/* A tolerance out of reach is refused, unless the caller fixed both
   spacing and cutoff (then the estimate says what they give); the
   periodic one where its choice found nothing (chosen 0: the defaults'
   lattice may be too narrow for the interpolation).  aim and these_atoms
   as elec__msm_resolve has them. */
static elec_status elec__msm_reach_check(const elec_msm_params *in, const elec_msm_params *r,
                                         const elec_box *box, size_t atoms,
                                         double arrangement, double aim, double these_atoms,
                                         int chosen, elec_error *err) {
    const int both_fixed = in && in->spacing > 0.0 && in->cutoff > 0.0;
    if (box && r->tolerance > 0.0 && !both_fixed && !chosen)
        return arrangement > 1.0
                   ? elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                                "periodic MSM tolerance %g: no power-of-two lattice, a and "
                                "order in their limits meets 1/%.3g of it (%zu atoms, forces "
                                "small for their charges: %.3g times its error; a crystal near "
                                "its sites, molecules far apart?); Ewald or SPME",
                                r->tolerance, aim, atoms, arrangement)
                   : elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                                "periodic MSM tolerance %g: no power-of-two lattice within the "
                                "lattice and stencil limits and the interpolation's width, a "
                                "and order meets 1/%.3g of it (%zu atoms) by the periodic "
                                "forces' table; Ewald or SPME",
                                r->tolerance, aim, atoms);
    if (r->tolerance > 0.0 && !both_fixed &&
        !(r->estimate.force > 0.0 &&
          r->estimate.force / these_atoms <= r->tolerance / aim * 1.000001))
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "MSM tolerance %g: no h in [1, 2.5] A, a in [8, 16] A and "
                          "interpolation (within what was fixed) meets it by the "
                          "measured table (fitted error %.2g)", r->tolerance,
                          r->estimate.force);
    return ELEC_OK;
}

/* Under a tolerance a given splitting fixes the interpolation the error
   table pairs it with (C2 cubic, C3 quintic, C4 septic, C5 nonic; the
   only pairs measured): the choice then picks h and a for that order (an
   interpolation left at its zero, cubic, reads as "choose", so cubic with
   C3 is quintic).  A splitting the table has no pair for, or a non-cubic
   interpolation given with another's splitting, is refused: the choice once took the matched
   pair's h and a for C1 to C3 with nonic and erred 2.9 to 130 times the
   tolerance, its estimate up to 391 times low (an audit). */
static elec_status elec__msm_paired_order(elec_msm_params *r, elec_error *err) {
    static const char *const names[4] = {"cubic", "quintic", "septic", "nonic"};
    /* out of range, elec__msm_fields_check refuses it by name */
    if (!(r->tolerance > 0.0) || r->splitting < 1 || r->splitting > 6 ||
        (int)r->interpolation < 0 || r->interpolation > ELEC_MSM_NONIC)
        return ELEC_OK;
    if (r->splitting < 2 || r->splitting > 5)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "MSM splitting C%d with a tolerance: the error table measures C2 "
                          "to C5, each with its interpolation (cubic C2, quintic C3, septic "
                          "C4, nonic C5); leave splitting 0, or give no tolerance",
                          r->splitting);
    if (r->interpolation != ELEC_MSM_CUBIC && (int)r->interpolation != r->splitting - 2)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "MSM splitting C%d with the %s interpolation and a tolerance: the "
                          "error table pairs C%d with %s and %s with C%d; give one of them",
                          r->splitting, names[r->interpolation], r->splitting,
                          names[r->splitting - 2], names[r->interpolation],
                          2 + (int)r->interpolation);
    r->interpolation = (elec_msm_interpolation)(r->splitting - 2);
    return ELEC_OK;
}

/* elec_msm_params_resolve, and for the periodic hierarchy (box not NULL)
   elec_msm_periodic_params_resolve, whose atoms' forces err `arrangement`
   times as much as the table's random charges (elec__pmsm_arrangement; 1
   for the non-periodic calls, which read no atoms). */
static elec_status elec__msm_resolve(const elec_msm_params *in, double points_per_atom,
                                     const elec_box *box, size_t atoms, double arrangement,
                                     elec_msm_params *out, elec_error *err) {
    /* the choice aims at a third of the tolerance (a water box's maps err
       2.4 times the table's random charges); the periodic one at a quarter
       (water's forces err up to 2.6 times its table) and lower for few or
       dilute atoms (elec__pmsm_aim) */
    const double aim = box ? elec__pmsm_aim(box, atoms, arrangement) : 3.0;
    /* how many times the table these atoms err, at most, for the estimate:
       the periodic aim's factor (few or dilute atoms, or forces small for
       their charges); with the arrangement's alone, 2 to 6 ions in a 57 A
       box reported estimates 13 to 45 times below their errors (an audit),
       up to 75 on tests/test_tolerance.c's seeds (the tolerance was met) */
    const double these_atoms = box ? aim / 4.0 : arrangement;
    int chosen = 0;
    elec_msm_params r;
    elec_status s;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    if (!(points_per_atom >= 0.0) || !elec__finite(points_per_atom))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "points per atom %g must be zero (1) or positive",
                          points_per_atom);
    if (points_per_atom == 0.0) points_per_atom = 1.0;
    if (in) r = *in;
    else memset(&r, 0, sizeof r);
    memset(&r.estimate, 0, sizeof r.estimate);
    if (r.scale == 0.0) r.scale = 1.0;
    if (r.excluded_pair_count > 0 && !r.excluded_pairs)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "%zu excluded pairs but no array", r.excluded_pair_count);
    if (r.tolerance >= ELEC_MSM_TOLERANCE_FLOOR && r.tolerance < 1.0 &&
        (s = elec__msm_paired_order(&r, err)) != ELEC_OK)
        return s;
    /* One atom in a periodic box: its force is zero, but the lattices
       give it a self-force that no choice from the table bounds (an
       audit: 250 to 2,300 times the tolerance of the probe's floor,
       0.01 q^2 / L^2; aiming 4 to 128 times lower left 3 to 185 times) */
    if (box && atoms == 1 && r.tolerance >= ELEC_MSM_TOLERANCE_FLOOR && r.tolerance < 1.0 &&
        !(r.cutoff > 0.0 && r.spacing > 0.0))
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "periodic MSM tolerance %g with one atom: the lattices give it a "
                          "self-force the tolerance does not bound (its exact force is zero); "
                          "Ewald or SPME, or give both the cutoff and the spacing (the "
                          "tolerance is then not enforced)",
                          r.tolerance);
    /* a tolerance chooses what is left at 0 (a valid one; the checks below
       refuse the rest); out of reach, the defaults stay and the checks say
       so */
    if (r.tolerance >= ELEC_MSM_TOLERANCE_FLOOR && r.tolerance < 1.0 &&
        (int)r.interpolation >= 0 && r.interpolation <= ELEC_MSM_NONIC &&
        r.cutoff >= 0.0 && r.spacing >= 0.0 && elec__finite(r.cutoff) &&
        elec__finite(r.spacing)) {
        elec_msm_params choice = r;
        double error =
            elec__msm_choose(&choice, r.tolerance / aim, points_per_atom, box, atoms);
        if (error >= 0.0) {
            r = choice;
            r.estimate.force = error * these_atoms;
            chosen = 1;
        }
    }
    elec__msm_defaults(&r);
    elec__msm_estimate_of(&r, box, these_atoms);
    if ((s = elec__msm_fields_check(&r, err)) != ELEC_OK ||
        (s = elec__msm_reach_check(in, &r, box, atoms, arrangement, aim, these_atoms, chosen,
                                   err)) != ELEC_OK)
        return s;
    if (elec__gpu_set_check(&r.gpus, err) != ELEC_OK) return ELEC_ERR_INVALID_ARG;
    *out = r;
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_msm_params_resolve(const elec_msm_params *in,
                                             double points_per_atom,
                                             elec_msm_params *out, elec_error *err) {
    return elec__msm_resolve(in, points_per_atom, NULL, 0, 1.0, out, err);
}

/* The periodic energy's error, an estimate (upper-side on random charges,
   water and the crystals tests/test_tolerance.c holds; 4 to 5 times low
   on CsCl 0.1 A from its sites and up to 35 times on a double layer of
   ions, an audit, 2026-12-05): ERR_E = 4 sum q^2
   F(h, a) / a, F the periodic forces' fit (elec__msm_error_model) at the
   spacing the lattice takes.  An atom's interaction with itself through
   the lattices, and with its close neighbours, misses its exact value by
   about the forces' relative error times the smooth kernel's size at 0,
   gamma(0) / a, and with one sign: so the error grows as sum q^2, not as
   its square root.  The fit is the table's (h 1 to 2.5 A): the power-of-
   two lattices take h down to half that, where the fit extrapolated fell
   too steeply (rock salt at h 0.53 A erred 5 times it, a review), so h
   counts as 1 A at least.  Measured against exact Ewald (8, 30, 200 and
   6400 random charges in a 40 A box, 600 charged ones in 21 A, 343 and
   1000 SPC/E waters, CsCl and rock salt displaced by 0.1 A; cubic to
   nonic, a 8, 12 and 16 A, h asked 1, 1.6 and 2.5 A: 324 cases) the
   error came to 1/7000 to 1.74 times it, and on the SPME knob's five
   systems at the choices of tolerances 1e-3 to 1e-6, at most 1.31.  0
   where no table speaks for the choice (a splitting not the
   interpolation's).  In a box of one long axis, times 2^past
   (elec__pmsm_levels_past: its error grows faster there). */
static double elec__pmsm_energy_error(const elec_msm_params *p, const elec_box *box,
                                      const elec_atoms *atoms) {
    elec__pmsm_shape shape;
    double q2 = 0.0, q, h;
    size_t i;
    if (p->splitting != 2 + (int)p->interpolation ||
        elec__pmsm_shape_of(p, box, &shape, NULL) != ELEC_OK || shape.levels == 0)
        return 0.0;
    for (i = 0; i < atoms->count; i++) {
        elec_atoms_get(atoms, i, NULL, &q, NULL);
        q2 += q * q;
    }
    /* below the table's h of 1 A its fit is extrapolated and falls too
       steeply: there the coarser levels, which do not refine with h, are
       left (rock salt at h 0.53 erred 5 times the extrapolated figure) */
    h = elec__pmsm_spacing(&shape);
    if (h < 1.0) h = 1.0;
    return 4.0 * q2 * fabs(p->scale) * pow(2.0, elec__pmsm_levels_past(&shape)) *
           elec__msm_error_model(1, (int)p->interpolation, h, p->cutoff) / p->cutoff;
}

ELEC_DEF elec_status elec_msm_periodic_params_resolve(const elec_msm_params *in,
                                                      const elec_box *box,
                                                      const elec_atoms *atoms,
                                                      elec_msm_params *out, elec_error *err) {
    elec_status s;
    double arrangement = 1.0;
    elec_error_estimate floors;
    memset(&floors, 0, sizeof floors);
    if ((s = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return s;
    if ((s = elec__box_check(box, err)) != ELEC_OK) return s;
    if (in && in->excluded_pair_count > 0 &&
        (s = elec__exclusions_check(in->excluded_pairs, in->excluded_pair_count, atoms->count,
                                    err)) != ELEC_OK)
        return s;
    /* the probe where a tolerance is to be met (it costs a pass over the
       pairs within 6 A) */
    if (in && in->tolerance > 0.0 &&
        (s = elec__pmsm_arrangement(atoms, box, in, &arrangement, &floors, err)) != ELEC_OK)
        return s;
    if ((s = elec__msm_resolve(in, 1.0, box, atoms->count, arrangement, out, err)) != ELEC_OK)
        return s;
    out->estimate.energy = elec__pmsm_energy_error(out, box, atoms);
    out->estimate.float_floor = floors.float_floor;
    out->estimate.float_arithmetic = floors.float_arithmetic;
    return ELEC_OK;
}




/* ---------------------------------------------- >>ewald Ewald, and the a-priori errors */

/* ---------------------------------------- a-priori errors of Ewald and SPME */

#define ELEC__PI_ 3.14159265358979323846

static double elec__shortest_edge(const elec_box *box) {
    double shortest = box->length[0];
    if (box->length[1] < shortest) shortest = box->length[1];
    if (box->length[2] < shortest) shortest = box->length[2];
    return shortest;
}

/* What the estimates need of the atoms (elec__charge_stats_of):
   - count, sum q^2, sum q^4, sum q;
   - force_rms: the RMS force of a shifted-force Coulomb sum, pairs within
     `reach` (ELEC__PROBE_REACH, 6 A; more where periodic MSM's probe
     found too few pairs, elec__pmsm_arrangement; at most half the box's
     shortest edge) of q_i q_j (1/r^2 - 1/reach^2),
     excluded pairs left out.  Shifting the force to zero at the reach
     keeps a sphere's shell of cut molecules from adding noise; measured
     against the exact Ewald forces it gives 0.96 (1000 random charges),
     0.99 (600, charged), 0.91 (SPC/E water, exclusions), 0.89 (rock salt
     displaced by 0.1 A RMS), 0.99 (1500 random, non-cubic box): slightly
     low, so that relative errors read slightly high (8 A gave 0.94 to
     0.995 at 2.4 times the pairs).  Floored at a hundredth of the force
     between two RMS charges at the mean spacing, so that a perfect
     crystal's vanishing forces do not make every error infinite (a tenth
     was too much: rock salt with its ions displaced 0.01 A RMS has forces
     of a fortieth of it, and exact Ewald missed tolerances of 1e-3 to
     1e-7 by up to 1.55 times; an audit, 2026-12-03);
   - float_floor: the relative force change when every coordinate is
     rounded to float (RMS ulp/sqrt(12) each), through the pair forces'
     derivatives 6 (q_i q_j)^2 / r^6 (Frobenius), with float arithmetic's
     own share (float_arithmetic) added; relative to the same floored
     force scale (a crystal at its sites would give rounding over
     rounding: 1e9 for rock salt);
   - float_arithmetic: float arithmetic's share, ELEC_SPME_GPU_FLOAT_FLOOR
     or, where the net forces are small beside the pair forces they sum
     (pair_rms: per atom the pair forces within the reach in quadrature,
     excluded pairs left out, RMS over the atoms), the larger
     ELEC_GPU_FLOAT_CANCELLATION pair_rms / force_rms;
   - error_volume: Kolafa and Perram's estimates (and the mesh's) count
     the charges within reach of each atom as the box's mean density,
     Q2 / V; where the charges crowd (a droplet or a cluster in vacuum,
     a slab) each atom has more of them in reach, and the error with
     them.  The RMS error over the atoms goes with sum_i q_i^2 rho_i,
     rho_i the Q2 per volume of the 27 cells around atom i's (cells of
     at least the reach, so about the cutoff's scale): the volume the
     estimates divide by is Q2^2 / sum_c Q2_c rho_c, the box's for
     uniform charges, less where they crowd, and held to at most the
     box's (charges alternating cell by cell would make it more).  A
     droplet of 125 waters in a 45 A box (4 % of it) made the estimate
     3 times too low, and SPME missed tolerances of 1e-3 to 1e-6 by 1.5
     to 3.1 times (an audit, 2026-12-03);
   - s[b]: the charge structure factor |S(k)|^2 / Q2 at k = (b + 1/2)
     ELEC__SK_STEP, from pairs within the reach weighted by (1 - r^2 /
     reach^2)^2: s = 1 + sum_{i != j} q_i q_j W(r) sin(kr)/(kr) / Q2 (over
     about 512 atoms i, a hashed sample, scaled up), at least 1e-3.  Random charges have
     s = 1; neutral molecules and ionic crystals much less at small k,
     which is where SPME's mesh error lives for fine grids. */
#define ELEC__SK_BINS 24
#define ELEC__SK_STEP 0.15
#define ELEC__PROBE_REACH 6.0
#define ELEC__SK_SAMPLE 512
typedef struct elec__charge_stats {
    size_t count;
    double q2, q4, charge;
    double force_rms, float_floor, float_arithmetic;
    int force_floored;   /* force_rms is the floor: the probe found less */
    double tiny;         /* the largest |q| where the sums fell under double's
                            normal range (elec__charge_stats_of), else 0 */
    double error_volume; /* the volume the error estimates divide by */
    double s[ELEC__SK_BINS];
    /* the real-space tail as measured (elec__real_tail_measure): how many
       times Kolafa and Perram's force error it came to at the last choice
       (at least 1; the factor the next choice aims with), and where and
       what it measured (tail_alpha 0: not measured) */
    double real_coherence;
    double tail_cutoff, tail_alpha, tail_force, tail_energy;
} elec__charge_stats;

/* Float arithmetic's relative RMS force error (float_arithmetic above)
   for atoms whose pair forces within the probe's reach have the RMS
   pair_rms (per atom, over its pairs in quadrature) and whose net forces
   the RMS force_rms (floored). */
static double elec__float_arithmetic(double pair_rms, double force_rms) {
    const double cancelled =
        force_rms > 0.0 ? ELEC_GPU_FLOAT_CANCELLATION * pair_rms / force_rms : 0.0;
    return cancelled > ELEC_SPME_GPU_FLOAT_FLOOR ? cancelled : ELEC_SPME_GPU_FLOAT_FLOOR;
}

/* Variance of a coordinate's rounding to float: (ulp / 2)^2 / 3. */
static double elec__float_rounding2(double x) {
    int e;
    double ulp;
    if (x == 0.0) return 0.0;
    frexp(x, &e);
    ulp = ldexp(1.0, e - 24);
    return ulp * ulp / 12.0;
}

/* Distinct neighbour cells of a cell list along one axis: -1, 0, 1 where
   there are three or more cells, else every cell once. */
static int elec__cells_offsets(const elec_cells *c, int axis, int *from) {
    if (c->n[axis] >= 3) {
        *from = -1;
        return 3;
    }
    *from = 0;
    return c->n[axis];
}

/* error_volume (above) from a periodic cell list of the atoms and their
   charges in its order: Q2^2 / sum_c Q2_c rho_c, at most the box's. */
static double elec__error_volume(const elec_cells *cells, const double *q, double q2,
                                 double volume) {
    const long count = (long)cells->n[0] * cells->n[1] * cells->n[2];
    const double cell_volume = volume / (double)count;
    double crowding = 0.0; /* sum_c Q2_c rho_c */
    long c;
    if (!(q2 > 0.0)) return volume;
    for (c = 0; c < count; c++) {
        int home[3], from[3], reach[3], axis, dx, dy, dz;
        double own = 0.0, around = 0.0;
        size_t k;
        for (k = cells->start[c]; k < cells->start[c + 1]; k++) own += q[k] * q[k];
        if (own == 0.0) continue;
        home[0] = (int)(c % cells->n[0]);
        home[1] = (int)(c / cells->n[0] % cells->n[1]);
        home[2] = (int)(c / ((long)cells->n[0] * cells->n[1]));
        for (axis = 0; axis < 3; axis++)
            reach[axis] = elec__cells_offsets(cells, axis, &from[axis]);
        for (dz = 0; dz < reach[2]; dz++)
            for (dy = 0; dy < reach[1]; dy++)
                for (dx = 0; dx < reach[0]; dx++) {
                    int at[3];
                    long neighbour;
                    at[0] = cells->n[0] < 3 ? dx : home[0] + from[0] + dx;
                    at[1] = cells->n[1] < 3 ? dy : home[1] + from[1] + dy;
                    at[2] = cells->n[2] < 3 ? dz : home[2] + from[2] + dz;
                    neighbour = elec_cells_neighbour(cells, at, 0, 0, 0, 1);
                    for (k = cells->start[neighbour]; k < cells->start[neighbour + 1]; k++)
                        around += q[k] * q[k];
                }
        crowding += own * around / ((double)(reach[0] * reach[1] * reach[2]) * cell_volume);
    }
    return crowding > q2 * q2 / volume ? q2 * q2 / crowding : volume;
}

/* What elec__charge_stats_of's probe reads, its atoms in the cells' order
   (cells->atom maps back to the caller's indices). */
typedef struct elec__probe {
    const elec_cells *cells;
    const elec_box *box;
    const double *x, *q, *round2;         /* positions, charges, rounding   */
    const size_t *excl_start, *excl_list; /* excluded partners, the
                                             caller's indices            */
    double reach2;                        /* the reach squared            */
    double inverse_bin[ELEC__SK_BINS];    /* 1 / (b + 1/2)                */
} elec__probe;

/* The atoms wrapped into the box (x, three a atom), their charges, and
   each one's rounding variance (the mean over its coordinates of
   elec__float_rounding2); the count's sums of q^2, q^4 and q into st. */
static void elec__probe_gather(const elec_atoms *atoms, const elec_box *box, double *x,
                               double *q, double *round2, elec__charge_stats *st) {
    size_t i;
    int axis;
    for (i = 0; i < atoms->count; i++) {
        elec_atoms_get(atoms, i, x + 3 * i, q + i, NULL);
        round2[i] = 0.0;
        for (axis = 0; axis < 3; axis++) {
            double l = box->length[axis], *v = x + 3 * i + axis;
            *v -= l * floor(*v / l);
            if (*v >= l) *v -= l;
            round2[i] += elec__float_rounding2(*v);
        }
        round2[i] /= 3.0;
        st->q2 += q[i] * q[i];
        st->q4 += q[i] * q[i] * q[i] * q[i];
        st->charge += q[i];
    }
}

/* Each atom's excluded partners (the pairs were checked) as compressed
   rows: atom a's are list[start[a]] .. list[start[a + 1] - 1]. */
static void elec__exclusions_by_atom(const size_t *pairs, size_t pair_count, size_t n,
                                     size_t *start, size_t *list) {
    size_t i;
    memset(start, 0, (n + 1) * sizeof *start);
    for (i = 0; i < pair_count; i++) {
        start[pairs[2 * i] + 1]++;
        start[pairs[2 * i + 1] + 1]++;
    }
    for (i = 0; i < n; i++) start[i + 1] += start[i];
    for (i = 0; i < pair_count; i++) { /* start[a] as the fill cursor */
        size_t a = pairs[2 * i], c = pairs[2 * i + 1];
        list[start[a]++] = c;
        list[start[c]++] = a;
    }
    for (i = n; i > 0; i--) start[i] = start[i - 1];
    start[0] = 0;
}

/* x, q and round2 put in the cells' order, so that a cell's atoms are
   read contiguously; 0 where there is no memory for it. */
static int elec__probe_cell_order(const elec_cells *cells, size_t n, double *x, double *q,
                                  double *round2) {
    double *sorted = (double *)ELEC_MALLOC(5 * n * sizeof *sorted);
    size_t i;
    if (!sorted) return 0;
    for (i = 0; i < n; i++) {
        size_t a = cells->atom[i];
        memcpy(sorted + 3 * i, x + 3 * a, 3 * sizeof *sorted);
        sorted[3 * n + i] = q[a];
        sorted[4 * n + i] = round2[a];
    }
    memcpy(x, sorted, 3 * n * sizeof *x);
    memcpy(q, sorted + 3 * n, n * sizeof *q);
    memcpy(round2, sorted + 4 * n, n * sizeof *round2);
    ELEC_FREE(sorted);
    return 1;
}

/* Whether the caller's atom `index` is among a sample of about one in
   `stride` (every atom at 1): chosen by a hash of the index, not a stride,
   which would alias with the molecules' atom order (every third atom of
   water is an oxygen). */
static int elec__hashed_in(size_t index, size_t stride) {
    return (unsigned long)((index * 2654435761UL) & 0xffffffffUL) < 0x100000000UL / stride;
}

/* The atoms that sample s(k), about ELEC__SK_SAMPLE: row[i] (i in the
   cells' order) is atom i's row of sums, or -1.  Chosen by a hash of the
   caller's index, not a stride, which would alias with the molecules'
   atom order (every third atom of water is an oxygen).  Returns how many
   rows. */
static long elec__sk_sample(const elec_cells *cells, size_t n, long *row) {
    const size_t stride =
        n > ELEC__SK_SAMPLE ? (n + ELEC__SK_SAMPLE - 1) / ELEC__SK_SAMPLE : 1;
    long rows = 0;
    size_t i;
    for (i = 0; i < n; i++) row[i] = elec__hashed_in(cells->atom[i], stride) ? rows++ : -1;
    return rows;
}

/* One pair's terms of s(k) added to a sampled atom's row: q_i q_j W(r)
   sin(k r) / (k r) at k = (b + 1/2) ELEC__SK_STEP, the sines by their
   three-term recurrence in t = ELEC__SK_STEP r. */
static void elec__sk_add(const elec__probe *p, double *row, double qq, double r,
                         double r2) {
    const double t = ELEC__SK_STEP * r, c2 = 2.0 * cos(t);
    const double w = qq * (1.0 - r2 / p->reach2) * (1.0 - r2 / p->reach2) / t;
    double prev = -sin(0.5 * t), cur = -prev;
    int b;
    for (b = 0; b < ELEC__SK_BINS; b++) {
        double next = c2 * cur - prev;
        row[b] += w * cur * p->inverse_bin[b];
        prev = cur;
        cur = next;
    }
}

/* Whether atoms a and b (the caller's indices) are an excluded pair. */
static int elec__probe_excluded(const elec__probe *p, size_t a, size_t b) {
    size_t e;
    for (e = p->excl_start[a]; e < p->excl_start[a + 1]; e++)
        if (p->excl_list[e] == b) return 1;
    return 0;
}

/* The neighbour cell home + off, and the shift that brings its atoms
   next to home: a box length where its index wraps.  Along an axis of
   fewer than three cells every cell is visited once, unshifted (wrap 0
   there), and each pair takes its nearest image. */
static long elec__probe_neighbour(const elec__probe *p, const int home[3], const int off[3],
                                  double shift[3], int wrap[3]) {
    const elec_cells *cells = p->cells;
    int axis, cell[3];
    for (axis = 0; axis < 3; axis++) {
        const int at = home[axis] + off[axis], n = cells->n[axis];
        const double length = p->box->length[axis];
        wrap[axis] = n >= 3;
        cell[axis] = at < 0 ? at + n : at >= n ? at - n : at;
        shift[axis] = !wrap[axis] ? 0.0 : at < 0 ? length : at >= n ? -length : 0.0;
    }
    return elec_cells_neighbour(cells, cell, 0, 0, 0, 1);
}

/* Atom ai's probe (in the cells' order) over its pairs within the reach:
   sums[0] its shifted-force Coulomb force squared, sums[1] the change
   that rounding the coordinates to float makes in it, squared, sums[2]
   its pair forces in quadrature; excluded pairs left out of all three.
   Where it samples s(k) (row not NULL), every pair adds its terms. */
static void elec__probe_atom(const elec__probe *p, size_t ai, double *row, double sums[3]) {
    const elec_cells *cells = p->cells;
    const double *xi = p->x + 3 * ai, shift_force = 1.0 / p->reach2;
    double f[3] = {0.0, 0.0, 0.0}, change = 0.0, pair2 = 0.0;
    int home[3], from[3], count[3], axis, cx, cy, cz;
    elec_cells_ijk(cells, xi, home);
    for (axis = 0; axis < 3; axis++) {
        count[axis] = elec__cells_offsets(cells, axis, &from[axis]);
        if (cells->n[axis] < 3) home[axis] = 0;
    }
    for (cz = 0; cz < count[2]; cz++)
        for (cy = 0; cy < count[1]; cy++)
            for (cx = 0; cx < count[0]; cx++) {
                const int off[3] = {from[0] + cx, from[1] + cy, from[2] + cz};
                double shift[3];
                int wrap[3];
                const long cell = elec__probe_neighbour(p, home, off, shift, wrap);
                size_t j;
                for (j = cells->start[cell]; j < cells->start[cell + 1]; j++) {
                    double d[3], r2, r, qq, g;
                    if (j == ai) continue;
                    for (axis = 0; axis < 3; axis++) {
                        const double length = p->box->length[axis];
                        d[axis] = xi[axis] - p->x[3 * j + axis] + shift[axis];
                        if (!wrap[axis]) d[axis] -= length * floor(d[axis] / length + 0.5);
                    }
                    r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                    if (r2 >= p->reach2 || r2 == 0.0) continue;
                    qq = p->q[ai] * p->q[j];
                    r = sqrt(r2);
                    if (row) elec__sk_add(p, row, qq, r, r2);
                    if (elec__probe_excluded(p, cells->atom[ai], cells->atom[j])) continue;
                    g = qq * (1.0 / r2 - shift_force) / r;
                    for (axis = 0; axis < 3; axis++) f[axis] += g * d[axis];
                    pair2 += g * g * r2;
                    change += 6.0 * qq * qq / (r2 * r2 * r2) * (p->round2[ai] + p->round2[j]);
                }
            }
    sums[0] = f[0] * f[0] + f[1] * f[1] + f[2] * f[2];
    sums[1] = change;
    sums[2] = pair2;
}

/* The probe over every atom, each its own sums (three an atom) and, where
   sampled, its own row: the totals are then added in one order whatever
   the threads, so that two calls on the same atoms (the CPU's and the
   GPU's) choose alike. */
static void elec__probe_atoms(const elec__probe *p, size_t n, const long *row, double *rows,
                              double *sums) {
    long i;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 64)
#endif
    for (i = 0; i < (long)n; i++)
        elec__probe_atom(p, (size_t)i,
                         row[i] >= 0 ? rows + (size_t)row[i] * ELEC__SK_BINS : NULL,
                         sums + 3 * i);
}

/* st's force_rms (floored), float_arithmetic, float_floor and s(k) from
   the probe's totals over n atoms in `volume`: force2, change2 and pairs2
   (sums[0..2] summed), sk over the `sampled` atoms' rows. */
static void elec__probe_finish(elec__charge_stats *st, size_t n, double volume, double force2,
                               double change2, double pairs2,
                               const double sk[ELEC__SK_BINS], long sampled) {
    const double samples = sampled > 0 ? (double)sampled : 1.0;
    const double mean_q2 = st->q2 / (double)n;
    const double floor_force = 0.01 * mean_q2 * pow((double)n / volume, 2.0 / 3.0);
    int b;
    st->force_rms = sqrt(force2 / (double)n);
    /* Relative to the forces, or to the typical force where they nearly
       vanish (ions at a crystal's sites feel none: the ratio would be
       rounding over rounding). */
    force2 = force2 > (double)n * floor_force * floor_force
                 ? force2 : (double)n * floor_force * floor_force;
    st->force_floored = st->force_rms < floor_force;
    if (st->force_floored) st->force_rms = floor_force;
    st->float_arithmetic = elec__float_arithmetic(sqrt(pairs2 / (double)n), st->force_rms);
    st->float_floor = force2 > 0.0 ? sqrt(change2 / force2) : 0.0;
    st->float_floor = sqrt(st->float_floor * st->float_floor +
                           st->float_arithmetic * st->float_arithmetic);
    for (b = 0; b < ELEC__SK_BINS; b++) {
        double s = st->q2 > 0.0 ? 1.0 + (double)n / samples * sk[b] / st->q2 : 1.0;
        st->s[b] = s > 1e-3 ? s : 1e-3;
    }
}

/* The largest charge's magnitude. */
static double elec__largest_charge(const double *q, size_t n) {
    double largest = 0.0;
    size_t i;
    for (i = 0; i < n; i++)
        if (fabs(q[i]) > largest) largest = fabs(q[i]);
    return largest;
}

static elec_status elec__charge_stats_of(const elec_atoms *atoms, const elec_box *box,
                                         const size_t *pairs, size_t pair_count,
                                         double reach, elec__charge_stats *st,
                                         elec_error *err) {
    const size_t n = atoms->count;
    const double volume = box->length[0] * box->length[1] * box->length[2];
    const double zero[3] = {0.0, 0.0, 0.0};
    double *x = NULL, *q = NULL, *round2 = NULL, *sums = NULL, *rows = NULL;
    double force2 = 0.0, change2 = 0.0, pairs2 = 0.0, sk[ELEC__SK_BINS];
    size_t *excl_start = NULL, *excl_list = NULL, i;
    long *row = NULL, sampled = 0;
    elec_cells cells;
    elec__probe probe;
    elec_status status;
    int have_cells = 0, b;
    memset(st, 0, sizeof *st);
    memset(sk, 0, sizeof sk);
    for (b = 0; b < ELEC__SK_BINS; b++) st->s[b] = 1.0;
    st->real_coherence = 1.0;
    st->count = n;
    st->error_volume = volume;
    if (n == 0) return ELEC_OK;
    if (0.5 * elec__shortest_edge(box) < reach) reach = 0.5 * elec__shortest_edge(box);
    x = (double *)ELEC_MALLOC(3 * n * sizeof *x);
    q = (double *)ELEC_MALLOC(n * sizeof *q);
    round2 = (double *)ELEC_MALLOC(n * sizeof *round2);
    excl_start = (size_t *)ELEC_MALLOC((n + 1) * sizeof *excl_start);
    excl_list = (size_t *)ELEC_MALLOC((2 * pair_count + 1) * sizeof *excl_list);
    row = (long *)ELEC_MALLOC(n * sizeof *row);
    sums = (double *)ELEC_MALLOC(3 * n * sizeof *sums);
    if (!x || !q || !round2 || !excl_start || !excl_list || !row || !sums)
        goto no_memory;
    elec__probe_gather(atoms, box, x, q, round2, st);
    elec__exclusions_by_atom(pairs, pair_count, n, excl_start, excl_list);
    if ((status = elec_cells_build(x, n, zero, box->length, reach, &cells, err)) != ELEC_OK)
        goto cleanup;
    have_cells = 1;
    if (!elec__probe_cell_order(&cells, n, x, q, round2)) goto no_memory;
    st->error_volume = elec__error_volume(&cells, q, st->q2, volume);
    sampled = elec__sk_sample(&cells, n, row);
    rows = (double *)ELEC_MALLOC(((size_t)sampled * ELEC__SK_BINS + 1) * sizeof *rows);
    if (!rows) goto no_memory;
    memset(rows, 0, (size_t)sampled * ELEC__SK_BINS * sizeof *rows);
    probe.cells = &cells;
    probe.box = box;
    probe.x = x;
    probe.q = q;
    probe.round2 = round2;
    probe.excl_start = excl_start;
    probe.excl_list = excl_list;
    probe.reach2 = reach * reach;
    for (b = 0; b < ELEC__SK_BINS; b++) probe.inverse_bin[b] = 1.0 / (b + 0.5);
    elec__probe_atoms(&probe, n, row, rows, sums);
    for (i = 0; i < n; i++) {
        force2 += sums[3 * i];
        change2 += sums[3 * i + 1];
        pairs2 += sums[3 * i + 2];
    }
    for (i = 0; i < (size_t)sampled; i++)
        for (b = 0; b < ELEC__SK_BINS; b++) sk[b] += rows[i * ELEC__SK_BINS + b];
    elec__probe_finish(st, n, volume, force2, change2, pairs2, sk, sampled);
    /* charges near 1e150 e: the forces squared pass double's range, every
       estimate is inf or NaN and no choice would ever meet a tolerance
       (which was the message) */
    if (!elec__finite(st->q2) || !elec__finite(st->force_rms) ||
        !elec__finite(st->float_floor)) {
        status = elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                            "charges of up to %g e: the error estimate's sums (the charges "
                            "squared, the forces squared) pass double's range",
                            elec__largest_charge(q, n));
        goto cleanup;
    }
    /* charges near 1e-77 e and below: their fourth powers (and the forces
       squared) fall under double's normal range, and the estimates with
       them (elec__estimates_underflow says what a caller does) */
    if (st->q2 > 0.0 && !(st->q4 >= DBL_MIN)) st->tiny = elec__largest_charge(q, n);
    status = ELEC_OK;
    goto cleanup;
no_memory:
    status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                        "no memory for the error estimate of %zu atoms", n);
cleanup:
    if (have_cells) elec_cells_free(&cells);
    ELEC_FREE(x);
    ELEC_FREE(q);
    ELEC_FREE(round2);
    ELEC_FREE(excl_start);
    ELEC_FREE(excl_list);
    ELEC_FREE(row);
    ELEC_FREE(sums);
    ELEC_FREE(rows);
    return status;
}

/* A choice made from estimates whose sums fell under double's normal
   range (st->tiny: charges near 1e-77 e and below) is refused by name:
   SPME's took 4 grid points and order 4 for charges of 1e-90 e, forces 42
   % off with ELEC_OK (an audit).  `method` names the call. */
static elec_status elec__estimates_underflow(const elec__charge_stats *st, const char *method,
                                             const char *otherwise, elec_error *err) {
    return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                      "%s: charges of at most %g e: the error estimate's sums (the charges to "
                      "the fourth power, the forces squared) fall below double's range; "
                      "scale the charges up (the energies by the square)%s", method, st->tiny,
                      otherwise);
}

/* How many times the table's relative error periodic MSM's forces err for
   these atoms, at least 1.  Its absolute force error goes with the force
   F = <q^2> rho^(2/3) between two RMS charges at their mean spacing (rho
   the atoms over the probe's error_volume: the box's density, more where
   they crowd, as a slab in vacuum), whatever their arrangement; its
   relative error divides that by the atoms' RMS force (elec__charge_stats'
   probe, at least F / 100).  That ratio, kappa = force_rms / F, is 7.6 to
   67 for random charges (their close pairs, which the short range sums
   exactly), 4.4 for water (0.6 with its excluded pairs), and 0.74, 0.22,
   0.065 and 0.022 for rock salt displaced 0.3, 0.1, 0.03 and 0.01 A RMS
   from its sites, whose forces then erred up to 3.1, 6.3, 17 and 50 times
   the tolerance (2026-12-04).  Over rock salt (3^3 to 5^3 cells, 0.01 to
   1 A), CsCl (5^3, 0.01 to 0.3 A) and water, the error times kappa over
   the fit, C, was up to 17 (CsCl at 0.3 A), and CsCl's grew at the finer
   choices this factor makes.  The factor is ELEC__PMSM_KAPPA_REFERENCE /
   kappa: with it every error came to at most 0.86 of the tolerance (an
   ionic-liquid-like mix at 1e-5, a review's), or the tolerance was
   refused.  Water takes 2.3, with its excluded pairs 17 (it missed by
   1.45 to 4 times before); random charges at 0.01 /A^3 and more mostly
   none.  Where the forces are under the probe's floor (a perfect
   crystal's vanish) the factor is 1000 (more where the atoms crowd: the
   floor is a hundredth of F at the box's mean density) and the tolerance
   is met relative to that floor, as SPME's and Ewald's estimates take
   it.  Under
   0.01 /A^3 (rho) the mean spacing nears the probe's 6 A reach and its
   sum may see few pairs or none: where the forces it found came under
   its floor there, it looks again as far as it would see as many
   neighbours at 0.01 /A^3, 6 A (0.01 / rho)^(1/3); where they still do
   (8 random charges in a 20 A box), the factor is 1 (1000 would refuse
   what the dilution's aim meets) and elec__pmsm_aim's dilution factor
   stands.
   Where it found forces, they count at any density: 100 waters (their
   pairs excluded) as a vapour in a 33 to 70 A box (0.0083 to 0.0009
   /A^3) have kappa about 0.3, and with a factor of 1 their forces erred
   1.8 to 7.8 times the tolerance (quadrupoles and dipoles as well, up to
   11; an audit, 2026-12-04).  The same probe gives the
   GPU's float floors (floors->float_floor and float_arithmetic, as
   SPME's estimate has them). */
#define ELEC__PMSM_KAPPA_REFERENCE 10.0
static elec_status elec__pmsm_arrangement(const elec_atoms *atoms, const elec_box *box,
                                          const elec_msm_params *in, double *factor,
                                          elec_error_estimate *floors, elec_error *err) {
    const double n = (double)atoms->count;
    elec__charge_stats st;
    double density, typical, kappa;
    elec_status s;
    *factor = 1.0;
    floors->float_floor = floors->float_arithmetic = ELEC_SPME_GPU_FLOAT_FLOOR;
    if (atoms->count < 2) return ELEC_OK;
    if ((s = elec__charge_stats_of(atoms, box, in->excluded_pairs, in->excluded_pair_count,
                                   ELEC__PROBE_REACH, &st, err)) != ELEC_OK)
        return s;
    if (st.tiny > 0.0) return elec__estimates_underflow(&st, "periodic MSM", "", err);
    density = st.error_volume > 0.0 ? n / st.error_volume : 0.0;
    if (density > 0.0 && density < 0.01 && st.force_floored) {
        if ((s = elec__charge_stats_of(atoms, box, in->excluded_pairs, in->excluded_pair_count,
                                       ELEC__PROBE_REACH * cbrt(0.01 / density), &st, err)) !=
            ELEC_OK)
            return s;
        density = st.error_volume > 0.0 ? n / st.error_volume : 0.0; /* its cells' */
    }
    floors->float_floor = st.float_floor;
    floors->float_arithmetic = st.float_arithmetic;
    if (density < 0.01 && st.force_floored) return ELEC_OK;
    typical = st.q2 / n * pow(density, 2.0 / 3.0);
    if (!(typical > 0.0) || !(st.force_rms > 0.0)) return ELEC_OK; /* no charge */
    kappa = st.force_rms / typical;
    if (kappa < ELEC__PMSM_KAPPA_REFERENCE) *factor = ELEC__PMSM_KAPPA_REFERENCE / kappa;
    return ELEC_OK;
}

/* Kolafa and Perram's real-space errors (absolute, unscaled): the RMS force
   error per atom and the total energy's, of pairs beyond the cutoff.  The
   energy's is the random part of the pairs beyond the cutoff; with a net
   charge Qnet they also add coherently (the Ewald sum keeps the
   neutralising background exactly, not the pairs' tail): for uniformly
   placed atoms their mean is (Qnet^2 - sum q^2) / (2V) 4 pi int_rc^inf r
   erfc(alpha r) dr = (Qnet^2 - sum q^2) pi / (2 V alpha^2) [erfc(alpha rc)
   (1 - 2 alpha^2 rc^2) + 2 alpha rc e^(-alpha^2 rc^2) / sqrt(pi)], added
   in quadrature where Qnet^2 passes sum q^2 (neutral systems screen it:
   their errors lie under the random part alone).  Without it, 1,000 charges of +1 in a 24
   A box erred 2.2 times SPME's estimate at 5e-4 and 306 times exact
   Ewald's at 1e-4. */
static double elec__kolafa_perram_force(const elec__charge_stats *st, double volume,
                                        double rc, double alpha) {
    if (st->count == 0) return 0.0;
    return 2.0 * st->q2 / sqrt((double)st->count * rc * volume) * exp(-alpha * alpha * rc * rc);
}
static double elec__kolafa_perram_energy(const elec__charge_stats *st, double volume,
                                         double rc, double alpha) {
    const double ar = alpha * rc, coherent = st->charge * st->charge - st->q2;
    double random = st->q2 * sqrt(rc / (2.0 * volume)) / (ar * ar) * exp(-ar * ar), mean = 0.0;
    if (coherent > 0.0)
        mean = coherent * ELEC__PI_ / (2.0 * volume * alpha * alpha) *
               (erfc(ar) * (1.0 - 2.0 * ar * ar) + 2.0 * ar * exp(-ar * ar) / sqrt(ELEC__PI_));
    return sqrt(random * random + mean * mean);
}

/* The real-space errors the choices use: Kolafa and Perram's, but where
   the pairs beyond the cutoff add coherently (an ionic double layer, a
   crystal) the tail as measured (elec__real_tail_measure): at the cutoff
   and alpha it measured, the larger of the two; elsewhere the force's
   times real_coherence, how many times it the measured tail came to. */
static int elec__tail_measured_at(const elec__charge_stats *st, double rc, double alpha) {
    return st->tail_alpha > 0.0 && alpha == st->tail_alpha && rc == st->tail_cutoff;
}
static double elec__real_force_error(const elec__charge_stats *st, double volume,
                                     double rc, double alpha) {
    const double kp = elec__kolafa_perram_force(st, volume, rc, alpha);
    if (elec__tail_measured_at(st, rc, alpha)) return st->tail_force > kp ? st->tail_force : kp;
    return st->real_coherence * kp;
}
static double elec__real_energy_error(const elec__charge_stats *st, double volume,
                                      double rc, double alpha) {
    const double kp = elec__kolafa_perram_energy(st, volume, rc, alpha);
    if (elec__tail_measured_at(st, rc, alpha) && st->tail_energy > kp) return st->tail_energy;
    return kp;
}

/* ------------------------------------------- the real-space tail, measured */

/* Kolafa and Perram's real-space error takes the pairs beyond the cutoff
   as random: their forces add in quadrature.  Where charges are ordered
   (an ionic double layer: sheets of +1 and -1 ions; a crystal) they add
   coherently, and exact Ewald's forces erred 1.8 to 4 times the estimate
   (a double layer of 400 ions, 20 x 20 x 60 A, tolerances 1e-2 to 1e-6:
   2.99 times the tolerance at 1e-2; rock salt's energies 4 to 73 times;
   an audit, 2026-12-05), all of it the real space's.  So the resolves
   measure the tail itself: for a sample of atoms the force and energy of
   every pair and image at rc <= r < R,
       F_i = q_i sum_j q_j [erfc(alpha r) / r + 2 alpha / sqrt(pi)
             exp(-alpha^2 r^2)] d / r^2,   E_i = q_i sum_j q_j erfc(alpha r) / (2 r),
   exactly the terms the real-space sum leaves out, to R^2 = rc^2 +
   ELEC__TAIL_DECAY / alpha^2, past which they are e^-9 = 1.2e-4 of those
   at the cutoff (of the same pairs' density).  Every atom where there
   are at most ELEC__TAIL_SAMPLE, else a hashed sample of them, and fewer
   where each one's pairs are many (ELEC__TAIL_VISITS pair visits in all:
   exact Ewald's cutoffs of half the box make them many; at 2e7 its
   resolve took 0.3 s more for 3,000 atoms, a review); the force as the
   RMS of the sample's, with two standard errors of the sample added
   (none where every atom is measured), and the energy as the sample's
   mean times n with two standard errors, where the mean is that far
   from zero.  Excluded pairs lie within the cutoff and are not looked
   for. */
#define ELEC__TAIL_SAMPLE 512
#define ELEC__TAIL_VISITS 5e6
#define ELEC__TAIL_DECAY 9.0
#define ELEC__TAIL_ROUNDS 6

typedef struct elec__tail {
    const elec_cells *cells;
    const double *x, *q, *length; /* wrapped positions, charges (the
                                     caller's order), the box          */
    double rc2, reach2, alpha;
    int offsets[3];               /* cells each way that reach R       */
} elec__tail;

/* Atom i's tail: out[0..2] its force, out[3] its energy. */
static void elec__tail_atom(const elec__tail *t, size_t i, double out[4]) {
    const elec_cells *c = t->cells;
    const double *xi = t->x + 3 * i, two_over_root_pi = 2.0 / sqrt(ELEC__PI_);
    double f[3] = {0.0, 0.0, 0.0}, e = 0.0;
    int home[3], o[3], axis;
    elec_cells_ijk(c, xi, home);
    for (o[2] = -t->offsets[2]; o[2] <= t->offsets[2]; o[2]++)
        for (o[1] = -t->offsets[1]; o[1] <= t->offsets[1]; o[1]++)
            for (o[0] = -t->offsets[0]; o[0] <= t->offsets[0]; o[0]++) {
                /* the cell home + o, and the box lengths its atoms are
                   shifted by: one image of one cell for each o */
                double shift[3];
                int cell[3];
                long index;
                size_t k;
                for (axis = 0; axis < 3; axis++) {
                    const int at = home[axis] + o[axis], n = c->n[axis];
                    const int images = at >= 0 ? at / n : -((n - 1 - at) / n);
                    cell[axis] = at - images * n;
                    shift[axis] = images * t->length[axis];
                }
                index = elec_cells_neighbour(c, cell, 0, 0, 0, 1);
                for (k = c->start[index]; k < c->start[index + 1]; k++) {
                    const size_t j = c->atom[k];
                    double d[3], r2, r, qq, erfc_r;
                    for (axis = 0; axis < 3; axis++)
                        d[axis] = xi[axis] - (t->x[3 * j + axis] + shift[axis]);
                    r2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
                    if (r2 < t->rc2 || r2 >= t->reach2) continue;
                    r = sqrt(r2);
                    qq = t->q[i] * t->q[j];
                    erfc_r = erfc(t->alpha * r) / r;
                    for (axis = 0; axis < 3; axis++)
                        f[axis] += qq *
                                   (erfc_r + two_over_root_pi * t->alpha *
                                                 exp(-t->alpha * t->alpha * r2)) /
                                   r2 * d[axis];
                    e += 0.5 * qq * erfc_r;
                }
            }
    for (axis = 0; axis < 3; axis++) out[axis] = f[axis];
    out[3] = e;
}

/* The sampled atoms' indices into `sample` (at most n): about one in
   `stride` (elec__hashed_in).  Returns how many. */
static size_t elec__tail_sample(size_t n, size_t stride, size_t *sample) {
    size_t i, m = 0;
    for (i = 0; i < n; i++)
        if (elec__hashed_in(i, stride)) sample[m++] = i;
    return m;
}

/* Measures the tail at (rc, alpha) into st (tail_* above); leaves it
   unmeasured where one atom's pairs alone pass ELEC__TAIL_VISITS (a
   cutoff of many box lengths: Kolafa and Perram's estimate stands). */
static elec_status elec__real_tail_measure(const elec_atoms *atoms, const elec_box *box,
                                           double rc, double alpha, elec__charge_stats *st,
                                           elec_error *err) {
    const size_t n = atoms->count;
    const double volume = box->length[0] * box->length[1] * box->length[2];
    const double zero[3] = {0.0, 0.0, 0.0};
    const double reach = sqrt(rc * rc + ELEC__TAIL_DECAY / (alpha * alpha));
    double *x = NULL, *q = NULL, *terms = NULL, visits = (double)n / volume, cell;
    double force2 = 0.0, energy = 0.0, energy2 = 0.0, share, mean, spread;
    size_t *sample = NULL, m = 0, i, stride;
    elec_cells cells;
    elec__pack pack;
    elec__tail t;
    elec_status status = ELEC_OK;
    int have_cells = 0, axis;
    st->tail_alpha = 0.0;
    if (n == 0 || !(alpha > 0.0) || !elec__finite(reach)) return ELEC_OK;
    /* cells of reach / 2, and at least the volume an atom has (dilute
       boxes would otherwise have far more cells than atoms) */
    cell = 0.5 * reach;
    if (cbrt(volume / (double)n) > cell) cell = cbrt(volume / (double)n);
    x = (double *)ELEC_MALLOC(3 * n * sizeof *x);
    q = (double *)ELEC_MALLOC(n * sizeof *q);
    sample = (size_t *)ELEC_MALLOC(n * sizeof *sample);
    if (!x || !q || !sample) goto no_memory;
    memset(&pack, 0, sizeof pack);
    pack.box = box;
    elec__pack_xyz(&pack, x, q);
    if ((status = elec__atoms_pack(atoms, &pack, err)) != ELEC_OK ||
        (status = elec_cells_build(x, n, zero, box->length, cell, &cells, err)) != ELEC_OK)
        goto cleanup;
    have_cells = 1;
    for (axis = 0; axis < 3; axis++) {
        const double width = box->length[axis] / cells.n[axis];
        const double offsets = floor(reach / width) + 1.0;
        /* a tiny alpha given (1e-12 /A: 1.5e11 cells) passes int's range:
           the visits' test first, in double */
        visits *= (2.0 * offsets + 1.0) * width;
        if (!(visits <= ELEC__TAIL_VISITS)) goto cleanup; /* unmeasured */
        t.offsets[axis] = (int)offsets;
    }
    stride = (size_t)ceil((double)n / (ELEC__TAIL_VISITS / (visits > 1.0 ? visits : 1.0)));
    if (n > ELEC__TAIL_SAMPLE && stride < (n + ELEC__TAIL_SAMPLE - 1) / ELEC__TAIL_SAMPLE)
        stride = (n + ELEC__TAIL_SAMPLE - 1) / ELEC__TAIL_SAMPLE;
    m = elec__tail_sample(n, stride, sample);
    if (m == 0) goto cleanup;
    terms = (double *)ELEC_MALLOC(4 * m * sizeof *terms);
    if (!terms) goto no_memory;
    t.cells = &cells;
    t.x = x;
    t.q = q;
    t.length = box->length;
    t.rc2 = rc * rc;
    t.reach2 = reach * reach;
    t.alpha = alpha;
    {
        long k;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 8)
#endif
        for (k = 0; k < (long)m; k++) elec__tail_atom(&t, sample[k], terms + 4 * k);
    }
    for (i = 0; i < m; i++) { /* in one order whatever the threads */
        const double *v = terms + 4 * i;
        force2 += v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
        energy += v[3];
        energy2 += v[3] * v[3];
    }
    /* two standard errors of the sample's means, none where it is every
       atom (the finite population's correction); the RMS force's from
       its mean square, a chi-square of 3 degrees per atom */
    share = m < n ? sqrt((1.0 - (double)m / (double)n) / (double)m) : 0.0;
    mean = energy / (double)m;
    spread = sqrt(energy2 / (double)m - mean * mean > 0.0 ? energy2 / (double)m - mean * mean
                                                           : 0.0);
    st->tail_force = sqrt(force2 / (double)m) * (1.0 + 2.0 * sqrt(1.0 / 6.0) * share);
    /* the energy: n times the mean, where the sample tells it from zero
       (two standard errors); a sample's n times its standard error is no
       measure of a sum whose terms cancel (random charges: their tail
       grows as sqrt(n)), and it read 10 to 650 times the error of 12,000
       random charges' exact Ewald energy (a review): there Kolafa and
       Perram's estimate stands (0) */
    st->tail_energy = fabs(mean) > 2.0 * spread * share
                          ? (double)n * (fabs(mean) + 2.0 * spread * share) : 0.0;
    st->tail_cutoff = rc;
    st->tail_alpha = alpha;
    goto cleanup;
no_memory:
    status = elec__fail(err, ELEC_ERR_NO_MEMORY, 0,
                        "no memory for the real-space tail's measure over %zu atoms", n);
cleanup:
    if (have_cells) elec_cells_free(&cells);
    ELEC_FREE(x);
    ELEC_FREE(q);
    ELEC_FREE(sample);
    ELEC_FREE(terms);
    return status;
}

/* The estimate struct of a choice (relative force errors, scaled energy). */
static void elec__estimate_fill(const elec__charge_stats *st, double real, double reciprocal,
                                double energy, double scale, elec_error_estimate *out) {
    double f = st->force_rms > 0.0 ? st->force_rms : 1.0;
    out->force_real = real / f;
    out->force_reciprocal = reciprocal / f;
    out->force = sqrt(real * real + reciprocal * reciprocal) / f;
    out->energy = fabs(scale) * energy;
    out->force_rms = fabs(scale) * st->force_rms;
    out->float_floor = st->float_floor;
    out->float_arithmetic = st->float_arithmetic;
}

/* The tolerance shared by Ewald and SPME: 0 = the default, else finite in
   [floor, 1). */
static elec_status elec__tolerance_check(double *tolerance, double fallback,
                                         double floor_value, const char *what,
                                         elec_error *err) {
    if (*tolerance == 0.0) *tolerance = fallback;
    if (!(*tolerance > 0.0) || !(*tolerance < 1.0))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "%s tolerance %g must lie in (0, 1) (0 = the default %g)",
                          what, *tolerance, fallback);
    if (*tolerance < floor_value)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "%s tolerance %g is below what it can meet (%g: "
                          "double rounding of its sums)", what, *tolerance, floor_value);
    return ELEC_OK;
}

static elec_status elec__splitting_check(double *scale, double cutoff, double max_cutoff,
                                         double alpha, elec_error *err) {
    if (*scale == 0.0) *scale = 1.0;
    if (!elec__finite(*scale))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "scale is not finite");
    if (!(cutoff >= 0.0) || !(cutoff <= max_cutoff))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "cutoff %g A must be positive and at most %g A (0 = chosen)",
                          cutoff, max_cutoff);
    if (!(alpha >= 0.0) || !elec__finite(alpha))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "alpha %g must be zero (automatic) or positive", alpha);
    return ELEC_OK;
}

/* Exact Ewald's reciprocal truncation: RMS force error per atom of leaving
   out |k| >= kc (derived as Kolafa and Perram's real-space one). */
static double elec__kspace_force_error(const elec__charge_stats *st, double volume,
                                       double alpha, double kc) {
    if (st->count == 0) return 0.0;
    return st->q2 * sqrt(8.0 / ((double)st->count * volume * kc)) * alpha *
           exp(-kc * kc / (4.0 * alpha * alpha));
}
/* The energy's: Kolafa and Perram's fluctuation, and beside it the bias
   of each charge's own Gaussian left out past kc.  The self term removes
   sum q^2 alpha / sqrt(pi) whole, while the sum over k keeps only the part
   of it within kc: the energy misses sum q^2 (alpha / sqrt(pi)) erfc(kc /
   (2 alpha)) (the integral of (1 / pi) exp(-k^2 / (4 alpha^2)) past kc),
   which the asymptotic form leaves out where kc is not well past 2 alpha:
   at alpha 50 /A and kmax 3 in a 10 A box the energy erred 54.7 where the
   estimate said 1.6 (an audit's); with this term it says 54.8. */
static double elec__kspace_energy_error(const elec__charge_stats *st, double volume,
                                        double alpha, double kc) {
    const double fluctuation = st->q2 * sqrt(4.0 / volume) * alpha *
                               exp(-kc * kc / (4.0 * alpha * alpha)) / pow(kc, 1.5);
    const double bias = st->q2 * alpha / sqrt(ELEC__PI_) * erfc(kc / (2.0 * alpha));
    return sqrt(fluctuation * fluctuation + bias * bias);
}

/* What the Ewald and SPME resolves read of the atoms: their excluded
   pairs checked (refused with the check's own status), then the
   statistics the estimates need at the probe's reach. */
static elec_status elec__resolve_stats(const elec_atoms *atoms, const elec_box *box,
                                       const size_t *pairs, size_t pair_count,
                                       elec__charge_stats *st, elec_error *err) {
    elec_status s = elec__exclusions_check(pairs, pair_count, atoms->count, err);
    if (s != ELEC_OK) return s;
    return elec__charge_stats_of(atoms, box, pairs, pair_count, ELEC__PROBE_REACH, st, err);
}

/* The checks of elec_ewald_params_resolve on the caller's fields (r, the
   cutoff filled in: half the shortest edge, where longer ones are fine,
   summing more images): scale, cutoff and alpha, tolerance, kmax and
   n2_limit. */
static elec_status elec__ewald_fields_check(elec_ewald_params *r, double shortest,
                                            elec_error *err) {
    int axis;
    if (r->cutoff == 0.0) r->cutoff = 0.5 * shortest;
    if (elec__splitting_check(&r->scale, r->cutoff, 1e3 * shortest, r->alpha, err) != ELEC_OK ||
        elec__tolerance_check(&r->tolerance, 1e-12, ELEC_EWALD_TOLERANCE_FLOOR,
                              "Ewald", err) != ELEC_OK)
        return ELEC_ERR_INVALID_ARG;
    if (!(r->cutoff > 0.0))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "cutoff %g A must be positive",
                          r->cutoff);
    for (axis = 0; axis < 3; axis++)
        if (r->kmax[axis] < 0 || r->kmax[axis] > 1000)
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "kmax[%d] = %d: use 0 (automatic) to 1000", axis,
                              r->kmax[axis]);
    if (r->n2_limit < 0)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "n2_limit %d must be zero (none) or positive", r->n2_limit);
    return ELEC_OK;
}

/* The smallest alpha whose real-space error at the cutoff meets target,
   and at least 1 / cutoff: below alpha rc = 1 Kolafa and Perram's
   asymptotic estimates lose their meaning (the energy's grows as
   1 / alpha^2: at tolerance 0.9 alpha came out 8e-32 /A and the energy's
   expected error 2.7e61 kcal/mol), and a smaller alpha saves only
   reciprocal vectors that are already few.  Bisected. */
static double elec__ewald_alpha_for(const elec__charge_stats *st, double volume,
                                    double cutoff, double target) {
    double lo = 1.0 / cutoff, hi = lo;
    int i;
    while (elec__real_force_error(st, volume, cutoff, hi) > target && hi < 1e6) hi *= 2.0;
    for (i = 0; i < 100; i++) {
        double mid = 0.5 * (lo + hi);
        if (elec__real_force_error(st, volume, cutoff, mid) > target) lo = mid;
        else hi = mid;
    }
    return hi;
}

/* alpha where the caller left it 0: the smallest that meets target in
   real space, aimed again while the tail measured there misses it, with
   Kolafa and Perram's estimate times how many times it the tail came to
   (elec__real_tail_measure; a few rounds: the ratio moves with alpha);
   the tail measured at the alpha kept, for the estimate. */
static elec_status elec__ewald_alpha_measured(const elec_atoms *atoms, const elec_box *box,
                                              elec__charge_stats *st, double volume,
                                              elec_ewald_params *r, double target,
                                              elec_error *err) {
    const int choose = r->alpha == 0.0;
    int round;
    if (choose) r->alpha = elec__ewald_alpha_for(st, volume, r->cutoff, target);
    for (round = 0;; round++) {
        elec_status s = elec__real_tail_measure(atoms, box, r->cutoff, r->alpha, st, err);
        double kp;
        if (s != ELEC_OK) return s;
        if (!choose || st->tail_alpha == 0.0 || st->tail_force <= target ||
            round == ELEC__TAIL_ROUNDS)
            return ELEC_OK;
        kp = elec__kolafa_perram_force(st, volume, r->cutoff, r->alpha);
        if (st->tail_force / kp > st->real_coherence) st->real_coherence = st->tail_force / kp;
        r->alpha = elec__ewald_alpha_for(st, volume, r->cutoff, target);
    }
}

/* The smallest reciprocal cutoff kc whose truncation meets target at
   alpha.  Bisected. */
static double elec__ewald_kc_for(const elec__charge_stats *st, double volume, double alpha,
                                 double target) {
    double lo = 0.0, hi = 2.0 * alpha;
    int i;
    while (elec__kspace_force_error(st, volume, alpha, hi) > target && hi < 1e6) hi *= 2.0;
    for (i = 0; i < 100; i++) {
        double mid = 0.5 * (lo + hi);
        if (mid > 0.0 && elec__kspace_force_error(st, volume, alpha, mid) > target) lo = mid;
        else hi = mid;
    }
    return hi;
}

/* The |k| below which every vector is summed: the box of vectors' inscribed
   sphere, and below sqrt(n2_limit) of the shortest unit where that
   applies (what the estimate counts as left out). */
static double elec__ewald_kc_kept(const elec_ewald_params *r, const elec_box *box) {
    double kc = 1e300;
    int axis;
    for (axis = 0; axis < 3; axis++) {
        double edge = 2.0 * ELEC__PI_ * (r->kmax[axis] + 1) / box->length[axis];
        if (edge < kc) kc = edge;
    }
    if (r->n2_limit > 0) {
        double longest = box->length[0];
        for (axis = 1; axis < 3; axis++)
            if (box->length[axis] > longest) longest = box->length[axis];
        if (2.0 * ELEC__PI_ * sqrt((double)r->n2_limit) / longest < kc)
            kc = 2.0 * ELEC__PI_ * sqrt((double)r->n2_limit) / longest;
    }
    return kc;
}

ELEC_DEF elec_status elec_ewald_params_resolve(const elec_ewald_params *p,
                                               const elec_box *box,
                                               const elec_atoms *atoms,
                                               elec_ewald_params *resolved,
                                               elec_error *err) {
    elec_ewald_params r;
    elec__charge_stats st;
    elec_status status;
    double volume, target, kc;
    int axis;
    if (elec__box_check(box, err) != ELEC_OK) return ELEC_ERR_INVALID_ARG;
    if ((status = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return status;
    if (!resolved) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "resolved is NULL");
    if (p) r = *p;
    else memset(&r, 0, sizeof r);
    memset(&r.estimate, 0, sizeof r.estimate);
    if ((status = elec__ewald_fields_check(&r, elec__shortest_edge(box), err)) != ELEC_OK)
        return status;
    if ((status = elec__resolve_stats(atoms, box, r.excluded_pairs, r.excluded_pair_count,
                                      &st, err)) != ELEC_OK)
        return status;
    /* with alpha and kmax given nothing is chosen, and the sum itself
       takes such charges (1e-80 e: -2.128e-161, the unit charges' times
       1e-160) */
    if (st.tiny > 0.0 && (r.alpha == 0.0 || r.kmax[0] == 0 || r.kmax[1] == 0 || r.kmax[2] == 0))
        return elec__estimates_underflow(&st, "Ewald", ", or give alpha and kmax", err);
    volume = st.error_volume; /* the box's, or less where the charges crowd */
    /* half the tolerance (in quadrature) to each truncation */
    target = r.tolerance * st.force_rms / sqrt(2.0);
    if ((status = elec__ewald_alpha_measured(atoms, box, &st, volume, &r, target, err)) !=
        ELEC_OK)
        return status;
    /* the box of vectors holding the sphere that meets the other half */
    kc = elec__ewald_kc_for(&st, volume, r.alpha, target);
    for (axis = 0; axis < 3; axis++)
        if (r.kmax[axis] == 0) {
            double n = ceil(kc * box->length[axis] / (2.0 * ELEC__PI_));
            if (!(n <= 1000.0)) /* NaN too, before the cast */
                return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                                  "Ewald tolerance %g with alpha %g needs more than "
                                  "1000 reciprocal vectors along axis %d", r.tolerance,
                                  r.alpha, axis);
            r.kmax[axis] = n < 1.0 ? 1 : (int)n;
        }
    kc = elec__ewald_kc_kept(&r, box);
    {
        double real = elec__real_force_error(&st, volume, r.cutoff, r.alpha);
        double k_part = elec__kspace_force_error(&st, volume, r.alpha, kc);
        double e_real = elec__real_energy_error(&st, volume, r.cutoff, r.alpha);
        double e_k = elec__kspace_energy_error(&st, volume, r.alpha, kc);
        elec__estimate_fill(&st, real, k_part, sqrt(e_real * e_real + e_k * e_k), r.scale,
                            &r.estimate);
    }
    *resolved = r;
    elec__ok(err);
    return ELEC_OK;
}

/* ------------------------------------------------------------------------- >>spme SPME */

/* (Data, not code written twice: its rows are alike by construction.)
   generated by bench/spme_error_table.c (make spme-table): for p = 4, 6, 8
   and x = alpha h = 0.025 * 2^(j/4), j = 0..26: log10 of I_int / alpha,
   I_self / alpha^4, -2 E_bias / (Q2 alpha), I_pot alpha */
static const float elec__spme_error_table[3][4][27] = {
    { /* p = 4 */
        {-12.3914f, -11.9393f, -11.4870f, -11.0343f, -10.5811f, -10.1273f, -9.6725f,
         -9.2163f, -8.7583f, -8.2977f, -7.8333f, -7.3637f, -6.8868f, -6.3998f,
         -5.8988f, -5.3787f, -4.8328f, -4.2535f, -3.6358f, -2.9884f, -2.3459f,
         -1.7524f, -1.2320f, -0.7899f, -0.4242f, -0.1284f, 0.1067f},
        {-12.7495f, -12.2976f, -11.8455f, -11.3931f, -10.9404f, -10.4873f, -10.0335f,
         -9.5787f, -9.1226f, -8.6647f, -8.2041f, -7.7397f, -7.2701f, -6.7931f,
         -6.3059f, -5.8047f, -5.2856f, -4.7468f, -4.1969f, -3.6658f, -3.2008f,
         -2.8414f, -2.6032f, -2.4814f, -2.4605f, -2.5214f, -2.6462f},
        {-7.7537f, -7.4525f, -7.1512f, -6.8498f, -6.5482f, -6.2464f, -5.9443f,
         -5.6418f, -5.3386f, -5.0345f, -4.7291f, -4.4220f, -4.1123f, -3.7991f,
         -3.4810f, -3.1561f, -2.8225f, -2.4791f, -2.1282f, -1.7773f, -1.4378f,
         -1.1235f, -0.8462f, -0.6118f, -0.4198f, -0.2655f, -0.1430f},
        {-16.0873f, -15.4849f, -14.8824f, -14.2796f, -13.6766f, -13.0733f, -12.4693f,
         -11.8646f, -11.2587f, -10.6514f, -10.0417f, -9.4290f, -8.8118f, -8.1884f,
         -7.5561f, -6.9114f, -6.2495f, -5.5645f, -4.8525f, -4.1192f, -3.3915f,
         -2.7081f, -2.0952f, -1.5606f, -1.1017f, -0.7114f, -0.3805f}
    },
    { /* p = 6 */
        {-20.3568f, -19.6025f, -18.8474f, -18.0912f, -17.3336f, -16.5740f, -15.8115f,
         -15.0449f, -14.2729f, -13.4932f, -12.7030f, -11.8988f, -11.0755f, -10.2269f,
         -9.3443f, -8.4159f, -7.4247f, -6.3516f, -5.2046f, -4.0715f, -3.0620f,
         -2.2169f, -1.5297f, -0.9808f, -0.5484f, -0.2112f, 0.0498f},
        {-20.6476f, -19.8937f, -19.1393f, -18.3841f, -17.6279f, -16.8701f, -16.1102f,
         -15.3473f, -14.5802f, -13.8071f, -13.0257f, -12.2326f, -11.4234f, -10.5918f,
         -9.7293f, -8.8246f, -7.8653f, -6.8507f, -5.8288f, -4.8999f, -4.1466f,
         -3.5941f, -3.2294f, -3.0240f, -2.9471f, -2.9701f, -3.0687f},
        {-11.7257f, -11.2735f, -10.8210f, -10.3682f, -9.9149f, -9.4607f, -9.0056f,
         -8.5489f, -8.0902f, -7.6285f, -7.1627f, -6.6912f, -6.2116f, -5.7209f,
         -5.2149f, -4.6879f, -4.1337f, -3.5506f, -2.9539f, -2.3765f, -1.8535f,
         -1.4062f, -1.0391f, -0.7456f, -0.5146f, -0.3342f, -0.1937f},
        {-24.1321f, -23.2277f, -22.3228f, -21.4171f, -20.5104f, -19.6021f, -18.6918f,
         -17.7784f, -16.8609f, -15.9376f, -15.0061f, -14.0632f, -13.1047f, -12.1247f,
         -11.1152f, -10.0655f, -8.9612f, -7.7868f, -6.5492f, -5.3233f, -4.2127f,
         -3.2638f, -2.4733f, -1.8217f, -1.2865f, -0.8464f, -0.4825f}
    },
    { /* p = 8 */
        {-27.9131f, -26.8552f, -25.7954f, -24.7332f, -23.6676f, -22.5972f, -21.5204f,
         -20.4347f, -19.3373f, -18.2244f, -17.0913f, -15.9324f, -14.7401f, -13.5046f,
         -12.2117f, -10.8393f, -9.3538f, -7.7308f, -6.0729f, -4.5890f, -3.3697f,
         -2.4003f, -1.6404f, -1.0495f, -0.5927f, -0.2409f, 0.0293f},
        {-28.1709f, -27.1142f, -26.0564f, -24.9968f, -23.9347f, -22.8692f, -21.7989f,
         -20.7218f, -19.6353f, -18.5359f, -17.4187f, -16.2775f, -15.1040f, -13.8872f,
         -12.6128f, -11.2611f, -9.8122f, -8.2937f, -6.8478f, -5.6331f, -4.7064f,
         -4.0493f, -3.6189f, -3.3710f, -3.2657f, -3.2693f, -3.3546f},
        {-15.4928f, -14.8892f, -14.2851f, -13.6800f, -13.0737f, -12.4657f, -11.8553f,
         -11.2415f, -10.6231f, -9.9982f, -9.3644f, -8.7187f, -8.0568f, -7.3733f,
         -6.6610f, -5.9101f, -5.1103f, -4.2697f, -3.4397f, -2.6871f, -2.0498f,
         -1.5328f, -1.1233f, -0.8035f, -0.5556f, -0.3639f, -0.2157f},
        {-31.7099f, -30.5026f, -29.2939f, -28.0834f, -26.8704f, -25.6536f, -24.4319f,
         -23.2030f, -21.9645f, -20.7128f, -19.4432f, -18.1496f, -16.8243f, -15.4573f,
         -14.0355f, -12.5402f, -10.9447f, -9.2297f, -7.4813f, -5.8934f, -4.5636f,
         -3.4838f, -2.6148f, -1.9160f, -1.3519f, -0.8937f, -0.5182f}
    }
};

/* One row of the table at x (linear in log x between points; the power law
   of the first two points below them, the last value above). */
static double elec__spme_table_at(int order_index, int row, double x) {
    const float *t = elec__spme_error_table[order_index][row];
    double j = 4.0 * log(x / 0.025) / log(2.0), f;
    int i;
    if (!(j < 26.0)) return pow(10.0, (double)t[26]);
    if (j < 0.0) return pow(10.0, (double)t[0] + j * ((double)t[1] - (double)t[0]));
    i = (int)j;
    f = j - i;
    return pow(10.0, (1.0 - f) * (double)t[i] + f * (double)t[i + 1]);
}

/* The four integrals of the mesh error for random charges, summed over the
   axes (a third of the cubic value each: within 5 % of the anisotropic
   integral, bench/spme_error_table.c --check).  Odd orders: the geometric
   mean of the even neighbours (the modes at the zone's edge, where the
   odd orders' error gathers, are added by elec__spme_odd_edge). */
typedef struct elec__mesh_error {
    double force_int, force_self, bias, pot; /* I_int, I_self, -2 E_bias/Q2, I_pot */
} elec__mesh_error;
static elec__mesh_error elec__mesh_integrals(int order, double alpha, const double h[3]) {
    elec__mesh_error m = {0.0, 0.0, 0.0, 0.0};
    if (order % 2) {
        elec__mesh_error lo = elec__mesh_integrals(order - 1, alpha, h);
        elec__mesh_error hi = elec__mesh_integrals(order + 1, alpha, h);
        m.force_int = sqrt(lo.force_int * hi.force_int);
        m.force_self = sqrt(lo.force_self * hi.force_self);
        m.bias = sqrt(lo.bias * hi.bias);
        m.pot = sqrt(lo.pot * hi.pot);
        return m;
    } else {
        int axis, o = (order - 4) / 2;
        for (axis = 0; axis < 3; axis++) {
            double x = alpha * h[axis];
            m.force_int += alpha * elec__spme_table_at(o, 0, x) / 3.0;
            m.force_self += alpha * alpha * alpha * alpha * elec__spme_table_at(o, 1, x) / 3.0;
            m.bias += alpha * elec__spme_table_at(o, 2, x) / 3.0;
            m.pot += elec__spme_table_at(o, 3, x) / (3.0 * alpha);
        }
    }
    return m;
}

/* The system's charge structure factor s(k) (1 past the probe's reach) */
static double elec__structure_at(const elec__charge_stats *st, double k) {
    double u = k / ELEC__SK_STEP - 0.5;
    int j;
    if (u <= 0.0) return st->s[0];
    if (u >= ELEC__SK_BINS - 1) return 1.0;
    j = (int)u;
    return (1.0 - (u - j)) * st->s[j] + (u - j) * st->s[j + 1];
}

/* How much of the random-charge mesh error a system keeps: its structure
   factor s(k) averaged over the error's spectrum.  Along each axis the
   error of a wave k comes from its aliases, ratio (kappa / (2 pi -
   kappa))^(2p) + (kappa / (2 pi + kappa))^(2p) (kappa = k_a h) times the
   force (2 pi / h - k_a)^2, on phi(k)^2 k^2 (forces); ratio^(1/2) on
   phi(k) k^2 (the energy's mean part).  Checked with the exact s(k) of
   SPC/E water and a displaced rock-salt crystal: the corrected estimate
   within 0.8 to 2 (water) and 0.15 to 1.7 (crystal) of the measured force
   error, where the random-charge one was within 0.1 to 1.1. */
static void elec__structure_factors(const elec__charge_stats *st, int order,
                                    double alpha, const double h[3], double *force,
                                    double *energy) {
    /* counts as doubles: C++20 deprecates an enum's arithmetic with a
       double (-Wdeprecated-enum-float-conversion, on by default) */
    const double BINS = 40.0, ANGLES = 6.0;
    double top = 10.0 * alpha, sf = 0.0, wf = 0.0, se = 0.0, we = 0.0;
    int b, axis, a, i;
    for (axis = 0; axis < 3; axis++)
        if (1.7320508 * ELEC__PI_ / h[axis] < top) top = 1.7320508 * ELEC__PI_ / h[axis];
    for (b = 0; b < (int)BINS; b++) {
        double k = (b + 0.5) * top / BINS, k2 = k * k;
        double phi = 4.0 * ELEC__PI_ / k2 * exp(-k2 / (4.0 * alpha * alpha));
        double af = 0.0, ae = 0.0, s;
        for (axis = 0; axis < 3; axis++)
            for (a = 0; a < (int)ANGLES; a++) {
                double kappa = k * (a + 0.5) / ANGLES * h[axis], r1, r2, p1 = 1.0, p2 = 1.0;
                if (kappa > ELEC__PI_) continue;
                r1 = kappa / (2.0 * ELEC__PI_ - kappa);
                r2 = kappa / (2.0 * ELEC__PI_ + kappa);
                for (i = 0; i < order; i++) {
                    p1 *= r1;
                    p2 *= r2;
                }
                ae += p1 + p2;
                af += (2.0 * ELEC__PI_ / h[axis] - k * (a + 0.5) / ANGLES) *
                      (2.0 * ELEC__PI_ / h[axis] - k * (a + 0.5) / ANGLES) *
                      (p1 * p1 + p2 * p2);
            }
        s = elec__structure_at(st, k);
        sf += k2 * phi * phi * af * s;
        wf += k2 * phi * phi * af;
        se += k2 * phi * ae * s;
        we += k2 * phi * ae;
    }
    *force = wf > 0.0 ? sf / wf : 1.0;
    *energy = we > 0.0 ? se / we : 1.0;
}

/* |sum_{k=0}^{order-2} M_n(k+1) exp(2 pi i m k / grid)|^2, the B-spline's
   values at the integers w (w[j] = M_n(j): elec_bspline_weights at t = 0),
   for mode m of a grid (elec_spme_bspline_moduli, without its floor). */
static double elec__spline_modulus(int order, const double *w, int m, int grid) {
    const double two_pi = 6.28318530717958647692;
    double re = 0.0, im = 0.0;
    int k;
    for (k = 0; k < order - 1; k++) {
        re += w[k + 1] * cos(two_pi * m * k / grid);
        im += w[k + 1] * sin(two_pi * m * k / grid);
    }
    return re * re + im * im;
}

/* e^z E1(z) = int_0^inf e^-t / (z + t) dt for z > 0 (E1 the exponential
   integral): its series below 1, its continued fraction 1 / (z + 1 - 1 /
   (z + 3 - 4 / (z + 5 - ...))) from 1 on (60 levels: 1e-12 at z = 1). */
static double elec__scaled_e1(double z) {
    double t;
    int k, levels;
    if (z < 1.0) {
        double sum = 0.0, term = 1.0;
        for (k = 1; k < 30; k++) {
            term *= -z / k;
            sum += term / k;
        }
        return exp(z) * (-0.57721566490153286 - log(z) - sum);
    }
    levels = 10 + (int)(50.0 / z);
    t = z + 2.0 * levels + 1.0;
    for (k = levels; k >= 1; k--) t = z + 2.0 * k - 1.0 - (double)k * k / t;
    return 1.0 / t;
}

/* Odd orders' error at the mesh's edge.  For odd p, Euler's spline D(kappa)
   = sum_n U_n vanishes at kappa = pi (U_n and U_-1-n cancel), so the
   influence function G = phi / |D|^2 blows up there and the continuum
   integrals the table holds diverge: the error comes from the modes next
   to the edge and grows with the grid, and an odd K, whose modes come
   within pi / K of the edge, errs far more than an even one (2 pi / K; its
   mode at pi takes its neighbours' moduli).  So these modes are summed as
   the mesh has them: along axis a, each mode kappa = pi - eps with eps <
   pi / 2 (at most 8 a side: 32 moved the estimates of the test systems'
   grids, K 20 to 48, by under 2 %) is a plane of transverse wavenumbers q
   weighing 1 / L_a of the integral over d2q / (2 pi)^2.  With g = U_0^2 /
   |D|^2 (D from the B-spline's values at the integers, without
   elec_spme_bspline_moduli's floor of 1e-7, which only grids past ~1500
   points meet, erring high), e_n = U_n / U_0, k_n = (kappa + 2 pi n) /
   h_a, a2 = sum_n e_n^2, b2 = sum_n k_n^2 e_n^2 and phi(k) = 4 pi
   e^(-k^2 / 4 alpha^2) / k^2, a mode's terms in I_int and in the self
   force's A_t (shift t along a) read
     I_int: g^2 a2 (b2 + q^2 a2) phi_0^2
            + sum_{n = 0, -1} |k_n|^2 (phi_n^2 - 2 g e_n^2 phi_0 phi_n)
              (phi_n negligible past n = 0, -1),
     A_t:   g (sum_n k_{n+t} e_{n+t} e_n) phi_0, from both edges.
   Summed over every mode of the mesh, this functional matched the
   measured error within 3 % where the edge modes carried 96 to 100 % of
   it (p = 5 and 7, K = 20 to 25).  The geometric mean of the even orders
   covers the whole zone, so where these modes matter little they are
   counted twice: the estimate errs high there (to 1.6 on random
   charges), not low. */
enum { ELEC__EDGE_ALIASES = 6, ELEC__EDGE_SHIFTS = 3, ELEC__EDGE_MODES = 8 };
typedef struct elec__edge_mode {
    double kappa;  /* pi - eps */
    int mirrored;  /* a mode at -pi + eps mirrors it (all but K/2) */
    double g;      /* U_0^2 / |D|^2 */
    double e[2 * ELEC__EDGE_ALIASES + 1]; /* U_n / U_0, n = -6..6 */
} elec__edge_mode;

/* The j-th mode from the edge of an axis of k_grid points, the mesh's
   mode K/2 - j (integer division: kappa = pi - 2 pi j / K for even K, pi
   - pi (2j + 1) / K for odd K), for the B-spline values w at the integers
   (w[k + 1] = M_p(k + 1)); 0 where j passes eps < pi / 2. */
static int elec__edge_mode_at(int order, const double *w, int k_grid, int j,
                              elec__edge_mode *m) {
    const double pi = ELEC__PI_;
    const int even = k_grid % 2 == 0, mode = k_grid / 2 - j;
    double u0;
    int n;
    m->kappa = 2.0 * pi * mode / k_grid;
    if (!(2.0 * m->kappa > pi)) return 0;
    m->mirrored = !(even && j == 0);
    u0 = pow(sin(0.5 * m->kappa) / (0.5 * m->kappa), order);
    /* the mode at pi itself takes its neighbour's moduli */
    m->g = u0 * u0 / elec__spline_modulus(order, w, m->mirrored ? mode : mode - 1, k_grid);
    for (n = -ELEC__EDGE_ALIASES; n <= ELEC__EDGE_ALIASES; n++)
        m->e[n + ELEC__EDGE_ALIASES] = pow(m->kappa / (m->kappa + 2.0 * pi * n), order);
    return 1;
}

/* A mode's I_int term integrated over its plane (1/A^2; times 2 for its
   mirror).  The integrals over q are exponential integrals (z = k_0^2 / 2
   alpha^2, X = elec__scaled_e1):  int phi_0^2 = 4 pi e^-z (1 - z X(z)) /
   k_0^2,  int q^2 phi_0^2 = 4 pi e^-z ((1 + z) X(z) - 1),  int |k_n|^2
   phi_n^2 = 4 pi e^-z_n X(z_n),  int |k_n|^2 phi_0 phi_n = 4 pi e^(-(z +
   z_n) / 2) X(z), each over d2q / (2 pi)^2. */
static double elec__edge_mode_pairs(const elec__edge_mode *m, double h, double alpha) {
    const double pi = ELEC__PI_, k0 = m->kappa / h, z = k0 * k0 / (2.0 * alpha * alpha);
    const double xz = elec__scaled_e1(z);
    double a2 = 0.0, b2 = 0.0, sum;
    int n;
    for (n = -ELEC__EDGE_ALIASES; n <= ELEC__EDGE_ALIASES; n++) {
        double kn = (m->kappa + 2.0 * pi * n) / h, e2 = m->e[n + ELEC__EDGE_ALIASES];
        e2 *= e2;
        a2 += e2;
        b2 += kn * kn * e2;
    }
    sum = m->g * m->g * a2 * 4.0 * pi * exp(-z) *
          (b2 * (1.0 - z * xz) / (k0 * k0) + a2 * ((1.0 + z) * xz - 1.0));
    for (n = -1; n <= 0; n++) { /* the aliases phi reaches */
        double kn = (m->kappa + 2.0 * pi * n) / h, zn = kn * kn / (2.0 * alpha * alpha);
        double e2 = m->e[n + ELEC__EDGE_ALIASES] * m->e[n + ELEC__EDGE_ALIASES];
        sum += 4.0 * pi * (exp(-zn) * elec__scaled_e1(zn) -
                           2.0 * m->g * e2 * exp(-0.5 * (z + zn)) * xz);
    }
    return sum;
}

/* Adds a mode's (and its mirror's) share to the self force's amplitudes
   A_t, t = -3..3 (amplitude[t + 3]; 1/A^2 times L_a): g (sum_n k_{n+t}
   e_{n+t} e_n) int phi_0, int phi_0 = E1(k_0^2 / 4 alpha^2) over d2q /
   (2 pi)^2.  The mirror at -kappa has k_n -> -k_-n and e_n -> e_-n. */
static void elec__edge_mode_shifts(const elec__edge_mode *m, double h, double alpha,
                                   double *amplitude) {
    const double pi = ELEC__PI_, k0 = m->kappa / h, z = k0 * k0 / (4.0 * alpha * alpha);
    const double plane = m->g * exp(-z) * elec__scaled_e1(z);
    const int A = ELEC__EDGE_ALIASES;
    int side, t, n;
    for (side = 1; side >= (m->mirrored ? -1 : 1); side -= 2)
        for (t = -ELEC__EDGE_SHIFTS; t <= ELEC__EDGE_SHIFTS; t++) {
            double sum = 0.0;
            if (!t) continue;
            for (n = -A; n <= A; n++)
                if (n + t >= -A && n + t <= A)
                    sum += (side * m->kappa + 2.0 * pi * (n + t)) / h *
                           m->e[side * (n + t) + A] * m->e[side * n + A];
            amplitude[t + ELEC__EDGE_SHIFTS] += plane * sum;
        }
}

/* Odd orders' edge modes (above): the squared RMS force error per atom
   they add (e^4/A^4), the pairs' part weighed by the system's structure
   factor at the edge, over the pairs' volume as the table's. */
static double elec__spme_odd_edge(const elec__charge_stats *st, int order, double alpha,
                                  const elec_box *box, const int grid[3]) {
    const double n_atoms = (double)st->count, volume = st->error_volume;
    double w[ELEC_MAX_SPLINE_ORDER], total = 0.0;
    int axis, j, t;
    if (order % 2 == 0 || st->count == 0) return 0.0;
    elec_bspline_weights(order, 0.0, w, NULL);
    for (axis = 0; axis < 3; axis++) {
        const double length = box->length[axis], h = length / grid[axis];
        double amplitude[2 * ELEC__EDGE_SHIFTS + 1], pairs = 0.0, self = 0.0;
        elec__edge_mode m;
        memset(amplitude, 0, sizeof amplitude);
        for (j = 0; j < ELEC__EDGE_MODES && elec__edge_mode_at(order, w, grid[axis], j, &m);
             j++) {
            pairs += (m.mirrored ? 2.0 : 1.0) * elec__edge_mode_pairs(&m, h, alpha) / length;
            elec__edge_mode_shifts(&m, h, alpha, amplitude);
        }
        for (t = 0; t < 2 * ELEC__EDGE_SHIFTS + 1; t++)
            self += amplitude[t] * amplitude[t] / (length * length);
        total += elec__structure_at(st, ELEC__PI_ / h) * st->q2 * st->q2 /
                     (n_atoms * volume) * pairs + st->q4 / n_atoms * self;
    }
    return total;
}

/* The SPME estimate of a full choice, errors unscaled except energy. */
typedef struct elec__spme_errors {
    double real, mesh; /* absolute RMS force errors per atom (e^2/A^2) */
    double energy;     /* absolute, e^2/A */
} elec__spme_errors;

static void elec__spme_mesh_spacing(const elec_box *box, const int grid[3], double h[3]) {
    int axis;
    for (axis = 0; axis < 3; axis++) h[axis] = box->length[axis] / grid[axis];
}

static elec__spme_errors elec__spme_errors_of(const elec__charge_stats *st,
                                              const elec_box *box, double rc,
                                              double alpha, int order, const int grid[3],
                                              const double structure[2]) {
    const double volume = st->error_volume;
    elec__spme_errors e = {0.0, 0.0, 0.0};
    elec__mesh_error m;
    double h[3], n = (double)st->count, mesh2, bias, pair2, real_e;
    if (st->count == 0) return e;
    elec__spme_mesh_spacing(box, grid, h);
    m = elec__mesh_integrals(order, alpha, h);
    mesh2 = st->q2 * st->q2 / (n * volume) * m.force_int + st->q4 / n * m.force_self;
    e.real = elec__real_force_error(st, volume, rc, alpha);
    e.mesh = sqrt(structure[0] * mesh2 + elec__spme_odd_edge(st, order, alpha, box, grid));
    bias = 0.5 * st->q2 * m.bias * structure[1];
    pair2 = 0.5 * st->q2 * st->q2 / volume * m.pot * structure[0];
    real_e = elec__real_energy_error(st, volume, rc, alpha);
    e.energy = sqrt(bias * bias + pair2 + real_e * real_e);
    return e;
}

ELEC_DEF int elec_fft_friendly_size(int minimum) {
    int n = minimum < 1 ? 1 : minimum;
    for (;; n++) {
        int rest = n, f;
        static const int factors[4] = {2, 3, 5, 7};
        for (f = 0; f < 4; f++)
            while (rest % factors[f] == 0) rest /= factors[f];
        if (rest == 1) return n;
        if (n == INT_MAX) return 0; /* n++ overflowed, and the loop ran on forever */
    }
}

ELEC_DEF elec_status elec_spme_bspline_moduli(int order, int grid, double *moduli) {
    double w[ELEC_MAX_SPLINE_ORDER];
    int m;
    if (order < 2 || order > ELEC_MAX_SPLINE_ORDER || grid < 1 || !moduli)
        return ELEC_ERR_INVALID_ARG;
    elec_bspline_weights(order, 0.0, w, NULL);
    for (m = 0; m < grid; m++) moduli[m] = elec__spline_modulus(order, w, m, grid);
    for (m = 0; m < grid; m++)
        if (moduli[m] < 1e-7)
            moduli[m] = 0.5 * (moduli[(m - 1 + grid) % grid] +
                               moduli[(m + 1) % grid]);
    return ELEC_OK;
}

/* --------------------------------------------------------- SPME's choice */

/* Estimated cost of one evaluation (ps), calibrated on an H100 at DHFR
   size (bench/RESULTS.md: real space 161 us for 23,558 atoms x 305 pairs
   within 9 A; spreading and gathering 26 us for 23,558 x 4^3 points; the
   64^3 FFT pair 24 us and the solve 4.6 us). */
static double elec__spme_cost(const elec__charge_stats *st, double volume, double rc,
                              int order, const int grid[3]) {
    const double n = (double)st->count;
    const double points = (double)grid[0] * grid[1] * grid[2];
    return n * (22.0 * n / volume * 4.18879 * rc * rc * rc + 17.2 * order * order * order) +
           points * (18.0 + 5.1 * log(points) / log(2.0));
}

/* The grid of spacing at most h: the smallest FFT-friendly sizes, at least
   the order, and even for odd orders (an even K's modes keep 2 pi / K from
   the zone's edge, where odd orders' error gathers; an odd K's come within
   pi / K and err several times more: elec__spme_odd_edge); 0 when it
   passes the limits. */
static int elec__spme_grid_of(const elec_box *box, double h, int order, int grid[3]) {
    double points = 1.0;
    int axis;
    for (axis = 0; axis < 3; axis++) {
        double minimum = ceil(box->length[axis] / h - 1e-9);
        if (minimum > ELEC_SPME_MAX_GRID_AXIS) return 0;
        grid[axis] = elec_fft_friendly_size((int)minimum < order ? order : (int)minimum);
        while (order % 2 && grid[axis] % 2 && grid[axis] < ELEC_SPME_MAX_GRID_AXIS)
            grid[axis] = elec_fft_friendly_size(grid[axis] + 1);
        if (grid[axis] > ELEC_SPME_MAX_GRID_AXIS) return 0;
        points *= grid[axis];
    }
    return points <= ELEC_SPME_MAX_GRID_POINTS;
}

/* The mesh's force error alone (the search needs nothing else): RMS per
   atom, unscaled, for a structure factor weight. */
static double elec__spme_mesh_force(const elec__charge_stats *st, const elec_box *box,
                                    double volume, int order, double alpha,
                                    const int grid[3], const double h[3], double structure) {
    elec__mesh_error m;
    double n = (double)st->count;
    if (order % 2) {
        double lower = elec__spme_mesh_force(st, box, volume, order - 1, alpha, grid, h, structure);
        double upper = elec__spme_mesh_force(st, box, volume, order + 1, alpha, grid, h, structure);
        return sqrt(lower * upper + elec__spme_odd_edge(st, order, alpha, box, grid));
    }
    {
        int axis, o = (order - 4) / 2;
        m.force_int = m.force_self = 0.0;
        for (axis = 0; axis < 3; axis++) {
            double x = alpha * h[axis];
            m.force_int += elec__spme_table_at(o, 0, x);
            m.force_self += elec__spme_table_at(o, 1, x);
        }
    }
    return sqrt(structure * (st->q2 * st->q2 / (n * volume) * alpha * m.force_int +
                             st->q4 / n * alpha * alpha * alpha * alpha * m.force_self) /
                3.0);
}

/* The least estimated force error over alpha for a cutoff, order and grid
   (or at the alpha given): golden section on log alpha, with the
   structure factor's weight held at its value for the last best alpha and
   refreshed once. */
static double elec__spme_best_alpha(const elec__charge_stats *st, const elec_box *box,
                                    double rc, int order, const int grid[3],
                                    double fixed_alpha, double *alpha_out) {
    const double volume = st->error_volume;
    const double g = 0.6180339887498949;
    double h[3], best = fixed_alpha > 0.0 ? fixed_alpha : 3.0 / rc, sf = 1.0, se, real, mesh;
    int pass, i;
    if (st->count == 0) {
        *alpha_out = best;
        return 0.0;
    }
    elec__spme_mesh_spacing(box, grid, h);
    for (pass = 0; pass < 2; pass++) {
        double lo = log(0.5 / rc), hi = log(9.0 / rc), a, b, fa, fb;
        elec__structure_factors(st, order, best, h, &sf, &se);
        if (fixed_alpha > 0.0) break;
#define ELEC__SPME_ERR2(la)                                                         \
    (real = elec__real_force_error(st, volume, rc, exp(la)),                        \
     mesh = elec__spme_mesh_force(st, box, volume, order, exp(la), grid, h, sf),               \
     real * real + mesh * mesh)
        a = hi - g * (hi - lo);
        b = lo + g * (hi - lo);
        fa = ELEC__SPME_ERR2(a);
        fb = ELEC__SPME_ERR2(b);
        for (i = 0; i < 28; i++) {
            if (fa < fb) {
                hi = b;
                b = a;
                fb = fa;
                a = hi - g * (hi - lo);
                fa = ELEC__SPME_ERR2(a);
            } else {
                lo = a;
                a = b;
                fa = fb;
                b = lo + g * (hi - lo);
                fb = ELEC__SPME_ERR2(b);
            }
        }
#undef ELEC__SPME_ERR2
        best = exp(0.5 * (lo + hi));
    }
    real = elec__real_force_error(st, volume, rc, best);
    mesh = elec__spme_mesh_force(st, box, volume, order, best, grid, h, sf);
    *alpha_out = best;
    return sqrt(real * real + mesh * mesh);
}

/* One cutoff and order: the coarsest grid (or the given one) and its best
   alpha; returns the estimated force error, and the cost. */
static double elec__spme_try(const elec__charge_stats *st, const elec_box *box, double rc,
                             int order, const int *fixed_grid, double fixed_alpha,
                             double target, int grid[3], double *alpha, double *cost) {
    const double volume = box->length[0] * box->length[1] * box->length[2];
    double error;
    if (fixed_grid) {
        memcpy(grid, fixed_grid, 3 * sizeof *grid);
        error = elec__spme_best_alpha(st, box, rc, order, grid, fixed_alpha, alpha);
    } else {
        /* halve the spacing from a coarse start until the target is met,
           then bisect (the error grows with the spacing) */
        double fine = 0.0, coarse = 0.0, h, a;
        int i, g[3];
        for (h = 4.0 / (fixed_alpha > 0.0 ? fixed_alpha : 3.0 / rc); h > 1e-3; h *= 0.5) {
            if (!elec__spme_grid_of(box, h, order, g)) break;
            if (elec__spme_best_alpha(st, box, rc, order, g, fixed_alpha, &a) <= target) {
                fine = h;
                break;
            }
            coarse = h;
        }
        if (fine == 0.0) return -1.0; /* past the grid limits */
        for (i = 0; i < 8 && coarse > 0.0; i++) {
            double mid = sqrt(fine * coarse);
            if (elec__spme_grid_of(box, mid, order, g) &&
                elec__spme_best_alpha(st, box, rc, order, g, fixed_alpha, &a) <= target)
                fine = mid;
            else
                coarse = mid;
        }
        elec__spme_grid_of(box, fine, order, grid);
        error = elec__spme_best_alpha(st, box, rc, order, grid, fixed_alpha, alpha);
    }
    *cost = elec__spme_cost(st, volume, rc, order, grid);
    return error;
}

/* The checks of elec_spme_params_resolve on the caller's fields (r, with
   the list's skin filled in): scale, cutoff and alpha, tolerance,
   spreading, GPUs, skin, order and grid spacing. */
static elec_status elec__spme_fields_check(elec_spme_params *r, double shortest,
                                           elec_error *err) {
    /* minimum image in real space: the cutoff is at most half the box */
    if (elec__splitting_check(&r->scale, r->cutoff, 0.5 * shortest, r->alpha, err) != ELEC_OK ||
        elec__tolerance_check(&r->tolerance, 5e-4, ELEC_SPME_TOLERANCE_FLOOR, "SPME",
                              err) != ELEC_OK)
        return ELEC_ERR_INVALID_ARG;
    if ((int)r->spread < 0 || r->spread > ELEC_SPME_SPREAD_GATHER)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "unknown SPME spreading scheme %d", (int)r->spread);
    if (elec__gpu_set_check(&r->gpus, err) != ELEC_OK) return ELEC_ERR_INVALID_ARG;
    if (!(r->list_skin >= 0.0) || !elec__finite(r->list_skin) ||
        r->list_skin > 0.25 * shortest)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "neighbour-list skin %g A: use 0 (= 1.5 A) up to a quarter of the "
                          "shortest box edge (%g A)", r->list_skin, 0.25 * shortest);
    if (r->list_skin == 0.0) r->list_skin = 1.5 < 0.25 * shortest ? 1.5 : 0.25 * shortest;
    if (r->order != 0 && (r->order < 4 || r->order > ELEC_MAX_SPLINE_ORDER))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "B-spline order %d: use 4 to %d (0 = chosen)", r->order,
                          ELEC_MAX_SPLINE_ORDER);
    if (!(r->grid_spacing >= 0.0) || !elec__finite(r->grid_spacing))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "grid spacing %g A must be positive (0 = chosen)", r->grid_spacing);
    return ELEC_OK;
}

/* The grid the caller gave, by sizes or by spacing (a size left 0 beside
   given ones is the spacing's, or 1 A's), into fixed_grid; *given 0 where
   none was. */
static elec_status elec__spme_given_grid(const elec_spme_params *r, const elec_box *box,
                                         int fixed_grid[3], int *given, elec_error *err) {
    int axis;
    *given = r->grid[0] || r->grid[1] || r->grid[2] || r->grid_spacing > 0.0;
    for (axis = 0; axis < 3 && *given; axis++) {
        int least = r->order ? r->order : 4;
        fixed_grid[axis] = r->grid[axis];
        if (fixed_grid[axis] == 0) {
            double spacing = r->grid_spacing > 0.0 ? r->grid_spacing : 1.0;
            double minimum = ceil(box->length[axis] / spacing - 1e-9);
            if (minimum > ELEC_SPME_MAX_GRID_AXIS)
                return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                                  "a %g A edge at %g A spacing needs over %d grid points",
                                  box->length[axis], spacing, ELEC_SPME_MAX_GRID_AXIS);
            fixed_grid[axis] =
                elec_fft_friendly_size((int)minimum < least ? least : (int)minimum);
        }
        if (fixed_grid[axis] > ELEC_SPME_MAX_GRID_AXIS)
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "grid size %d along axis %d: at most %d points an axis "
                              "(0 = chosen)", fixed_grid[axis], axis, ELEC_SPME_MAX_GRID_AXIS);
        if (fixed_grid[axis] < least)
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "grid size %d along axis %d: order %d needs at least %d "
                              "points (and at most %d; 0 = chosen)", fixed_grid[axis],
                              axis, least, least, ELEC_SPME_MAX_GRID_AXIS);
    }
    if (*given && (double)fixed_grid[0] * fixed_grid[1] * fixed_grid[2] >
                      ELEC_SPME_MAX_GRID_POINTS)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "grid %d x %d x %d: past ELEC_SPME_MAX_GRID_POINTS (%.0f)",
                          fixed_grid[0], fixed_grid[1], fixed_grid[2],
                          ELEC_SPME_MAX_GRID_POINTS);
    return ELEC_OK;
}

/* A candidate of the search: its mesh, cutoff and alpha, its estimated
   error and cost (order 0: none yet). */
typedef struct elec__spme_choice {
    int order, grid[3];
    double cutoff, alpha, error, cost;
} elec__spme_choice;

/* The cheapest (cutoff, order, grid) whose estimate, at its best alpha, is
   at most target (the tolerance times the RMS force, times 0.4: the
   estimates held to about a factor of 2 on the systems measured, random
   charges, water, rock salt, so the error stays under the tolerance
   without running far below it), else the least error.  Orders 4, 6, 8
   (the odd ones are interpolated) unless r fixes one; cutoffs 4 to 16 A
   (at most half the shortest edge) in steps of 1 A unless it fixes one;
   the grid given (fixed_grid, where given) or chosen.  *rc_hi the longest
   cutoff tried. */
static elec__spme_choice elec__spme_search(const elec__charge_stats *st, const elec_box *box,
                                           const elec_spme_params *r, int grid_given,
                                           const int fixed_grid[3], double target,
                                           double *rc_hi) {
    const double shortest = elec__shortest_edge(box);
    const double volume = box->length[0] * box->length[1] * box->length[2];
    const int order_lo = r->order ? r->order : 4, order_hi = r->order ? r->order : 8;
    const int order_step = r->order ? 1 : 2;
    elec__spme_choice best;
    double rc_lo, rc;
    int order;
    memset(&best, 0, sizeof best);
    best.error = -1.0;
    if (r->cutoff > 0.0) {
        rc_lo = *rc_hi = r->cutoff;
    } else {
        *rc_hi = 0.5 * shortest < 16.0 ? 0.5 * shortest : 16.0;
        rc_lo = *rc_hi < 4.0 ? *rc_hi : 4.0;
    }
    for (order = order_lo; order <= order_hi; order += order_step)
        for (rc = rc_lo; rc <= *rc_hi + 1e-9; rc += 1.0) {
            int grid[3], none[3] = {0, 0, 0};
            double alpha, error, cost;
            /* no grid at all would still cost this: nothing to gain */
            if (best.error >= 0.0 && best.error <= target &&
                elec__spme_cost(st, volume, rc, order, none) >= best.cost)
                continue;
            if (grid_given &&
                (fixed_grid[0] < order || fixed_grid[1] < order || fixed_grid[2] < order))
                continue;
            error = elec__spme_try(st, box, rc, order, grid_given ? fixed_grid : NULL,
                                   r->alpha, target, grid, &alpha, &cost);
            if (error < 0.0) continue;
            if (best.error < 0.0 ||
                (error <= target ? best.error > target || cost < best.cost
                                 : best.error > target && error < best.error)) {
                best.cost = cost;
                best.error = error;
                best.order = order;
                best.cutoff = rc;
                best.alpha = alpha;
                memcpy(best.grid, grid, sizeof best.grid);
            }
        }
    return best;
}

/* The real-space tail measured at the choice (elec__real_tail_measure);
   where it passes what the search took Kolafa and Perram's estimate to
   be there (times real_coherence), the search again with the new ratio,
   a few rounds (the ratio moves with the cutoff and alpha).  The tail is
   left measured at the choice kept, for the estimate. */
static elec_status elec__spme_tail_measured(const elec_atoms *atoms, const elec_box *box,
                                            elec__charge_stats *st,
                                            const elec_spme_params *r, int grid_given,
                                            const int fixed_grid[3], double target,
                                            elec__spme_choice *best, double *rc_hi,
                                            elec_error *err) {
    int round;
    for (round = 0; best->order != 0; round++) {
        const double kp =
            elec__kolafa_perram_force(st, st->error_volume, best->cutoff, best->alpha);
        elec_status s =
            elec__real_tail_measure(atoms, box, best->cutoff, best->alpha, st, err);
        if (s != ELEC_OK) return s;
        if (st->tail_alpha == 0.0 || st->tail_force <= st->real_coherence * kp ||
            round == ELEC__TAIL_ROUNDS)
            break;
        st->real_coherence = st->tail_force / kp;
        *best = elec__spme_search(st, box, r, grid_given, fixed_grid, target, rc_hi);
    }
    return ELEC_OK;
}

ELEC_DEF elec_status elec_spme_params_resolve(const elec_spme_params *p,
                                              const elec_box *box,
                                              const elec_atoms *atoms,
                                              elec_spme_params *resolved,
                                              elec_error *err) {
    elec_spme_params r;
    elec__charge_stats st;
    elec__spme_choice best;
    elec_status status;
    double target, rc_hi;
    int grid_given, fixed_grid[3] = {0, 0, 0};
    if (elec__box_check(box, err) != ELEC_OK) return ELEC_ERR_INVALID_ARG;
    if ((status = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return status;
    if (!resolved) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "resolved is NULL");
    if (p) r = *p;
    else memset(&r, 0, sizeof r);
    memset(&r.estimate, 0, sizeof r.estimate);
    if ((status = elec__spme_fields_check(&r, elec__shortest_edge(box), err)) != ELEC_OK ||
        (status = elec__spme_given_grid(&r, box, fixed_grid, &grid_given, err)) != ELEC_OK)
        return status;
    if ((status = elec__resolve_stats(atoms, box, r.excluded_pairs, r.excluded_pair_count,
                                      &st, err)) != ELEC_OK)
        return status;
    /* refused whatever is given: its sums took such charges to 0 even with
       every setting fixed (a review) */
    if (st.tiny > 0.0) return elec__estimates_underflow(&st, "SPME", "", err);
    target = 0.4 * r.tolerance * st.force_rms;
    best = elec__spme_search(&st, box, &r, grid_given, fixed_grid, target, &rc_hi);
    if ((status = elec__spme_tail_measured(atoms, box, &st, &r, grid_given, fixed_grid,
                                           target, &best, &rc_hi, err)) != ELEC_OK)
        return status;
    /* Out of reach: refused, unless the caller fixed the mesh (grid and
       order) and so asked for it; then the least error, and the estimate
       says what it is. */
    if (best.order == 0 || (best.error > target && !(grid_given && r.order != 0)))
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "SPME tolerance %g: no cutoff up to %g A, order and grid within "
                          "%d per axis and %.0f points meets it%s",
                          r.tolerance, rc_hi, ELEC_SPME_MAX_GRID_AXIS,
                          ELEC_SPME_MAX_GRID_POINTS,
                          r.alpha > 0.0 || r.cutoff > 0.0 ? " at the given alpha and cutoff"
                                                          : "");
    r.order = best.order;
    r.cutoff = best.cutoff;
    r.alpha = best.alpha;
    memcpy(r.grid, best.grid, sizeof r.grid);
    {
        double h[3], structure[2];
        elec__spme_errors e;
        elec__spme_mesh_spacing(box, r.grid, h);
        elec__structure_factors(&st, r.order, r.alpha, h, &structure[0], &structure[1]);
        e = elec__spme_errors_of(&st, box, r.cutoff, r.alpha, r.order, r.grid, structure);
        elec__estimate_fill(&st, e.real, e.mesh, e.energy, r.scale, &r.estimate);
    }
    *resolved = r;
    elec__ok(err);
    return ELEC_OK;
}

/* ------------------------------------------------------------ >>charges charge mapping */

ELEC_DEF const char *elec_chargemap_variant_name(elec_chargemap_variant v) {
    switch (v) {
    case ELEC_CHARGEMAP_FASTEST: return "fastest";
    case ELEC_CHARGEMAP_PC_BASELINE: return "pc-baseline";
    case ELEC_CHARGEMAP_PC_BINNED: return "pc-binned";
    case ELEC_CHARGEMAP_PC_REDUCED_READS: return "pc-reduced-reads";
    case ELEC_CHARGEMAP_PC_COALESCED: return "pc-coalesced";
    case ELEC_CHARGEMAP_GC_BASELINE: return "gc-baseline";
    case ELEC_CHARGEMAP_GC_COMPUTE_EFFICIENT: return "gc-compute-efficient";
    case ELEC_CHARGEMAP_GC_SHARED: return "gc-shared";
    case ELEC_CHARGEMAP_GC_REDUCED_READS: return "gc-reduced-reads";
    case ELEC_CHARGEMAP_PC_LANES: return "pc-lanes";
    case ELEC_CHARGEMAP_PC_SORTED_LANES: return "pc-sorted-lanes";
    case ELEC_CHARGEMAP_TILE_OWNER: return "tile-owner";
    case ELEC_CHARGEMAP_PC_FIXED_POINT: return "pc-fixed-point";
    case ELEC_CHARGEMAP_TILE_BINNED: return "tile-binned";
    case ELEC_CHARGEMAP_TILE_FUSED: return "tile-fused";
    case ELEC_CHARGEMAP_TILE_FUSED_FIXED: return "tile-fused-fixed";
    case ELEC_CHARGEMAP_VARIANT_COUNT: break;
    }
    return "unknown";
}

ELEC_DEF const char *elec_chargemap_cpu_variant_name(elec_chargemap_cpu_variant v) {
    switch (v) {
    case ELEC_CHARGEMAP_CPU_FASTEST: return "fastest";
    case ELEC_CHARGEMAP_CPU_BASELINE: return "baseline";
    case ELEC_CHARGEMAP_CPU_PRECOMPUTED: return "precomputed";
    case ELEC_CHARGEMAP_CPU_BINNED: return "binned";
    case ELEC_CHARGEMAP_CPU_VARIANT_COUNT: break;
    }
    return "unknown";
}

/* The GPU rung ELEC_CHARGEMAP_FASTEST stands for: tile-binned where it
   mapped faster end to end than pc-lanes in a run of both on an H200
   (2026-11-29, bench/RESULTS.md; atoms at random and sorted by cell, us),
   pc-lanes elsewhere:
   - order 4: tile-binned for 65,536 to 2^22 atoms at no more than an atom
     a point (ApoA1-size on 112 x 112 x 80, 22.9 against 31.8; on 56 x 56
     x 40, 0.74 atoms a point, 29.5 against 34.2; DMPC-size on 64^3, 21.1
     against 24.2; 1M atoms on 216^3, 178.9 against 279.8; with atoms
     sorted by cell, B-splines on the 56 x 56 x 40 and DMPC grids were 3
     to 5 % slower); pc-lanes for fewer (DHFR-size, 23,558 atoms on 64^3:
     14.9 against 12.7);
   - orders 5 to 8: tile-binned for 16,384 to 2^22 atoms at one atom for
     16 points to one a point, 1.00 to 2.4 times faster in every system
     measured there (DHFR-size on 64^3, B-spline 5 16.8 against 17.3, 8
     33.1 against 42.6; ApoA1-size, 8: 70.0 against 132.0); pc-lanes on
     sparser grids, where it was the faster at most orders (DHFR-size on
     84^3 and 90^3, one atom for 25 and 31 points: B-spline 6 28.8
     against 24.6; not Skeel's 8, by 16-34 %, nor B-spline 5 on 84^3 and
     8 on 90^3, by 2-3 %);
   - order 10: pc-lanes.  A stencil of 10 needs tiles of 16 points an
     edge: tile-binned was slower on five of the seven grids, and 68
     times slower on 56 x 56 x 40 (18 tiles, by the arithmetic).
   The edges (16,384 and 65,536 atoms, the densities) lie between the
   measured systems and were not measured themselves.  atoms is the
   handle's max_atoms, whose copies tile-binned keeps (128 bytes each: 512
   MB at 2^22, past which pc-lanes, which keeps none).  The GPU handle
   takes pc-lanes instead where tile-binned has no tiling that fits shared
   memory or cannot allocate its buffers (elec_cuda_chargemap_create). */
static elec_chargemap_variant elec__chargemap_fastest(size_t atoms, double points, int order) {
    const double per_point = (double)atoms / points;
    const size_t fewest = order == 4 ? 65536 : 16384;
    if (order > 8 || atoms < fewest || atoms > ((size_t)1 << 22) || per_point > 1.0)
        return ELEC_CHARGEMAP_PC_LANES;
    if (order > 4 && 16.0 * per_point < 1.0) return ELEC_CHARGEMAP_PC_LANES;
    return ELEC_CHARGEMAP_TILE_BINNED;
}

ELEC_DEF elec_status elec_chargemap_params_resolve(const elec_chargemap_params *in,
                                                   const elec_lattice *lattice,
                                                   size_t atom_count,
                                                   elec_chargemap_params *out,
                                                   elec_error *err) {
    static const char axis_name[3] = {'x', 'y', 'z'};
    elec_chargemap_params r;
    double points;
    int axis, tiles_given = 0;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "params out is NULL");
    if (elec_lattice_check(lattice, err) != ELEC_OK) return ELEC_ERR_INVALID_ARG;
    if (in) r = *in;
    else memset(&r, 0, sizeof r);
    if ((int)r.basis < 0 || r.basis > ELEC_CHARGEMAP_BSPLINE)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "unknown charge-mapping basis %d",
                          (int)r.basis);
    if (r.order == 0) r.order = 4;
    if (r.basis == ELEC_CHARGEMAP_SKEEL &&
        (r.order < 4 || r.order > 10 || r.order % 2 != 0))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "Skeel basis order %d: use 4 (C1 cubic), 6, 8 or 10", r.order);
    if (r.basis == ELEC_CHARGEMAP_BSPLINE &&
        (r.order < 4 || r.order > ELEC_MAX_SPLINE_ORDER))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "B-spline order %d: use 4 to %d",
                          r.order, ELEC_MAX_SPLINE_ORDER);
    if (r.periodic != 0 && r.periodic != 1)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "periodic is %d: use 0 or 1",
                          r.periodic);
    for (axis = 0; axis < 3; axis++)
        if (lattice->dims[axis] < r.order)
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "lattice has %d points along %c: order %d needs at least %d",
                              lattice->dims[axis], axis_name[axis], r.order, r.order);
    /* kernels index points with int */
    points = (double)lattice->dims[0] * lattice->dims[1] * lattice->dims[2];
    if (points >= 2147483648.0)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "lattice %d x %d x %d: charge maps take under 2^31 points",
                          lattice->dims[0], lattice->dims[1], lattice->dims[2]);
    if ((int)r.variant < 0 || r.variant >= ELEC_CHARGEMAP_VARIANT_COUNT)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "unknown charge-mapping variant %d",
                          (int)r.variant);
    if (r.variant == ELEC_CHARGEMAP_FASTEST)
        r.variant = elec__chargemap_fastest(atom_count, points, r.order);
    if ((int)r.cpu_variant < 0 || r.cpu_variant >= ELEC_CHARGEMAP_CPU_VARIANT_COUNT)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "unknown CPU charge-mapping variant %d", (int)r.cpu_variant);
    if (r.cpu_variant == ELEC_CHARGEMAP_CPU_FASTEST) r.cpu_variant = ELEC_CHARGEMAP_CPU_BINNED;
    if (r.bin_capacity < 0 || r.bin_capacity > 16)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "bin capacity %d: use 0 (automatic) or 1 to 16", r.bin_capacity);
    if (r.bin_capacity == 0) {
        /* mean atoms per cell l, and 4 standard deviations of a Poisson
           count past it: overflow stays rare where the density is even */
        double l = (double)atom_count / points, want = l + 4.0 * sqrt(l) + 2.0;
        r.bin_capacity = want > 16.0 ? 16 : (int)ceil(want);
    }
    {
        int s = 1;
        while (s < r.bin_capacity) s *= 2;
        r.bin_capacity = s;
    }
    for (axis = 0; axis < 3; axis++) {
        if (r.tile[axis] != 0) tiles_given++;
        if (r.tile[axis] < 0)
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "tile[%d] = %d is negative", axis,
                              r.tile[axis]);
    }
    if (tiles_given != 0 && tiles_given != 3)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "tile: give all three edges or none (%d, %d, %d)", r.tile[0],
                          r.tile[1], r.tile[2]);
    for (axis = 0; axis < 3 && tiles_given; axis++) {
        /* a stencil of `order` points then spans at most two tiles */
        if (r.tile[axis] < r.order - 1 || r.tile[axis] > lattice->dims[axis] ||
            r.tile[axis] > 64)
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "tile %d along %c: use %d (order - 1) to %d points",
                              r.tile[axis], axis_name[axis], r.order - 1,
                              lattice->dims[axis] < 64 ? lattice->dims[axis] : 64);
    }
    if (r.tile_groups < 0)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "tile_groups %d is negative",
                          r.tile_groups);
    if (r.no_pdl != 0 && r.no_pdl != 1)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "no_pdl is %d: use 0 or 1", r.no_pdl);
    if (elec__gpu_set_check(&r.gpus, err) != ELEC_OK) return ELEC_ERR_INVALID_ARG;
    *out = r;
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_chargemap_periodic_lattice(const elec_box *box,
                                                     const int grid[3], double spacing,
                                                     elec_lattice *out, elec_error *err) {
    int axis;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "lattice out is NULL");
    if (elec__box_check(box, err) != ELEC_OK) return ELEC_ERR_INVALID_ARG;
    if (spacing == 0.0) spacing = 1.0;
    if (!(spacing > 0.0) || !elec__finite(spacing))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "grid spacing %g A must be positive",
                          spacing);
    for (axis = 0; axis < 3; axis++) {
        /* at least one point: a spacing past the edge gave ceil(1e-10 - 1e-9),
           "-0 grid points" */
        double n = grid && grid[axis] ? (double)grid[axis]
                                      : fmax(1.0, ceil(box->length[axis] / spacing - 1e-9));
        if (!(n >= 1.0) || n > 1048576.0)
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "%g grid points along axis %d: use 1 to 2^20", n, axis);
        out->dims[axis] = (int)n;
        out->spacing[axis] = box->length[axis] / n;
        out->origin[axis] = 0.0;
    }
    elec__ok(err);
    return ELEC_OK;
}

/* ------------------------------------------------- >>alpb ALPB surface potentials, HCP */

ELEC_DEF elec_status elec_structure_components(const elec_structure *s,
                                               int *residue_of, int *chain_of,
                                               int *complex_of, size_t counts[3],
                                               elec_error *err) {
    size_t i;
    int residue = -1, chain = -1, complex_index = 0;
    if (!s || (s->count > 0 && !s->label))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "the structure is NULL or has no atom labels");
    if (s->count > (size_t)INT_MAX)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "%zu atoms: at most %d", s->count, INT_MAX);
    for (i = 0; i < s->count; i++) {
        const elec_atom_label *a = &s->label[i], *b = i ? &s->label[i - 1] : NULL;
        int new_complex = b && a->after_end_of_complex;
        int new_chain = !b || new_complex || a->after_ter || a->chain != b->chain ||
                        a->residue_number < b->residue_number;
        int new_residue = new_chain || a->residue_number != b->residue_number ||
                          a->insertion_code != b->insertion_code ||
                          strcmp(a->residue_name, b->residue_name) != 0;
        complex_index += new_complex;
        chain += new_chain;
        residue += new_residue;
        if (residue_of) residue_of[i] = residue;
        if (chain_of) chain_of[i] = chain;
        if (complex_of) complex_of[i] = complex_index;
    }
    if (counts) {
        counts[0] = (size_t)(residue + 1);
        counts[1] = (size_t)(chain + 1);
        counts[2] = s->count ? (size_t)complex_index + 1 : 0;
    }
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_alpb_size(const elec_atoms *atoms, double *size,
                                    elec_error *err) {
    double mass = 0.0, centre[3] = {0.0, 0.0, 0.0}, I[3][3], det, largest = 0.0;
    size_t i;
    int a, b;
    elec_status s;
    if (!size) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "size is NULL");
    *size = 0.0;
    if ((s = elec_atoms_check(atoms, 1, err)) != ELEC_OK) return s;
    if (atoms->count == 0)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "A_det of no atoms");
    for (i = 0; i < atoms->count; i++) {
        double r;
        elec_atoms_get(atoms, i, NULL, NULL, &r);
        if (r > largest) largest = r;
    }
    if (!(largest > 0.0))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "A_det is undefined: every radius is zero (give the size)");
    /* masses (r / largest)^3: A_det does not change when every mass is
       scaled (I and M scale alike), and r^3 past 1e102 A no longer
       overflows */
    for (i = 0; i < atoms->count; i++) {
        double x[3], r, m;
        elec_atoms_get(atoms, i, x, NULL, &r);
        m = (r / largest) * (r / largest) * (r / largest);
        mass += m;
        for (a = 0; a < 3; a++) centre[a] += m * x[a];
    }
    for (a = 0; a < 3; a++) centre[a] /= mass;
    memset(I, 0, sizeof I);
    for (i = 0; i < atoms->count; i++) {
        double x[3], r, m;
        elec_atoms_get(atoms, i, x, NULL, &r);
        m = (r / largest) * (r / largest) * (r / largest);
        for (a = 0; a < 3; a++) x[a] -= centre[a];
        /* the diagonal as the other two axes' squares: |x|^2 - x_a^2 lost
           the small term to rounding (two atoms 1e10 A apart along x gave
           I_xx = 0, a singular tensor) */
        for (a = 0; a < 3; a++)
            for (b = 0; b < 3; b++)
                I[a][b] += m * (a == b ? x[(a + 1) % 3] * x[(a + 1) % 3] +
                                             x[(a + 2) % 3] * x[(a + 2) % 3] + 0.4 * r * r
                                       : -x[a] * x[b]);
    }
    det = I[0][0] * (I[1][1] * I[2][2] - I[1][2] * I[2][1]) -
          I[0][1] * (I[1][0] * I[2][2] - I[1][2] * I[2][0]) +
          I[0][2] * (I[1][0] * I[2][1] - I[1][1] * I[2][0]);
    if (!elec__finite(det))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "A_det is undefined: the inertia tensor is past double's range "
                          "(an extent or radius near 1e100 A; give the size)");
    if (!(det > 0.0))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "A_det is undefined: the inertia tensor is singular (give the "
                          "size)");
    *size = sqrt(2.5 / mass) * pow(det, 1.0 / 6.0);
    if (!(*size > 0.0) || !elec__finite(*size)) {
        *size = 0.0;
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "A_det is undefined: it came out %g (give the size)",
                          sqrt(2.5 / mass) * pow(det, 1.0 / 6.0));
    }
    elec__ok(err);
    return ELEC_OK;
}

/* One atom's keys for ordering atoms into the hierarchy. */
typedef struct elec__hcp_key {
    int complex_index, chain, residue;
    size_t atom;
} elec__hcp_key;

static int elec__hcp_key_order(const void *pa, const void *pb) {
    const elec__hcp_key *a = (const elec__hcp_key *)pa, *b = (const elec__hcp_key *)pb;
    if (a->complex_index != b->complex_index) return a->complex_index < b->complex_index ? -1 : 1;
    if (a->chain != b->chain) return a->chain < b->chain ? -1 : 1;
    if (a->residue != b->residue) return a->residue < b->residue ? -1 : 1;
    return a->atom < b->atom ? -1 : a->atom > b->atom;
}

static int elec__int_order(const void *pa, const void *pb) {
    int a = *(const int *)pa, b = *(const int *)pb;
    return a < b ? -1 : a > b;
}

/* An index that names two components (after the atoms were ordered, each
   residue or chain value must make one run); -1 when every one is unique. */
static long elec__hcp_repeated(int *values, size_t n) {
    size_t i;
    qsort(values, n, sizeof *values, elec__int_order);
    for (i = 1; i < n; i++)
        if (values[i] == values[i - 1]) return values[i];
    return -1;
}

/* The first atom of component c of level l (l = 0: atom c itself). */
static size_t elec__hcp_first_atom(const elec_hcp *h, int level, size_t c) {
    while (level > 0) {
        c = h->first[level - 1][c];
        level--;
    }
    return c;
}

/* Centre and both approximations of one component from its atoms
   [begin, end): research notes 3.2 (NAB's hcp.c). */
static void elec__hcp_represent(const elec_hcp *h, size_t begin, size_t end,
                                double centre[3], double approx[12]) {
    double q = 0.0, qx[3] = {0, 0, 0}, plus = 0.0, px[3] = {0, 0, 0};
    double minus = 0.0, mx[3] = {0, 0, 0};
    size_t i;
    int a;
    for (a = 0; a < 3; a++) centre[a] = 0.0;
    for (i = begin; i < end; i++) {
        const double *x = h->xyz + 3 * i, c = h->charge[i];
        q += c;
        if (c > 0.0) plus += c;
        else minus += c;
        for (a = 0; a < 3; a++) {
            centre[a] += x[a];
            qx[a] += c * x[a];
            if (c > 0.0) px[a] += c * x[a];
            else mx[a] += c * x[a];
        }
    }
    for (a = 0; a < 3; a++) {
        centre[a] /= (double)(end - begin);
        /* the centre of charge is undefined for a neutral component */
        approx[a] = fabs(q) > 1e-5 ? qx[a] / q : centre[a];
        approx[4 + a] = plus > 0.0 ? px[a] / plus : centre[a];
        approx[8 + a] = minus < 0.0 ? mx[a] / minus : centre[a];
    }
    approx[3] = q;
    approx[7] = plus;
    approx[11] = minus;
}

/* What the one- and two-charge approximations of the component [begin,
   end) leave out (elec_hcp.residual): the dipole and quadrupole of its
   atoms minus those of the approximation's charges, about its centre, and
   the residual of sum q u^2 (the second moment's trace); and how far from
   the centre its atoms and each approximation's charges lie
   (elec_hcp.extent). */
static void elec__hcp_residual(const elec_hcp *h, size_t begin, size_t end,
                               const double centre[3], const double approx[12],
                               double residual[8], double extent[2]) {
    double p[3] = {0, 0, 0}, Q[3][3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}}, atoms2 = 0.0;
    double trace = 0.0, cubes = 0.0;
    size_t i;
    int a, b, scheme, k;
    for (i = begin; i < end; i++) {
        double u[3], u2;
        for (a = 0; a < 3; a++) u[a] = h->xyz[3 * i + a] - centre[a];
        u2 = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
        if (u2 > atoms2) atoms2 = u2;
        trace += h->charge[i] * u2;
        cubes += fabs(h->charge[i]) * u2 * sqrt(u2);
        for (a = 0; a < 3; a++) {
            p[a] += h->charge[i] * u[a];
            for (b = 0; b < 3; b++)
                Q[a][b] += h->charge[i] * (3.0 * u[a] * u[b] - (a == b ? u2 : 0.0));
        }
    }
    for (scheme = 0; scheme < 2; scheme++) { /* one charge, two charges */
        double dp[3], dQ[3][3], dp2 = 0.0, dQ2 = 0.0, extent2 = atoms2, dT = trace;
        double charge_cubes = 0.0;
        memcpy(dp, p, sizeof dp);
        memcpy(dQ, Q, sizeof dQ);
        for (k = 0; k < scheme + 1; k++) {
            const double *c = scheme == 0 ? approx : approx + 4 + 4 * k, q = c[3];
            double u[3], u2;
            for (a = 0; a < 3; a++) u[a] = c[a] - centre[a];
            u2 = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
            if (q != 0.0 && u2 > extent2) extent2 = u2;
            dT -= q * u2;
            charge_cubes += fabs(q) * u2 * sqrt(u2);
            for (a = 0; a < 3; a++) {
                dp[a] -= q * u[a];
                for (b = 0; b < 3; b++) dQ[a][b] -= q * (3.0 * u[a] * u[b] - (a == b ? u2 : 0.0));
            }
        }
        for (a = 0; a < 3; a++) {
            dp2 += dp[a] * dp[a];
            for (b = 0; b < 3; b++) dQ2 += dQ[a][b] * dQ[a][b];
        }
        /* a traceless symmetric tensor's largest |eigenvalue| is at most
           sqrt(2/3) of its Frobenius norm; its potential is
           (1/2) n.dQ.n / d^3 */
        residual[4 * scheme] = sqrt(dp2);
        residual[4 * scheme + 1] = 0.5 * sqrt(2.0 / 3.0) * sqrt(dQ2);
        residual[4 * scheme + 2] = fabs(dT);
        residual[4 * scheme + 3] = cubes + charge_cubes;
        extent[scheme] = sqrt(extent2);
    }
}

ELEC_DEF void elec_hcp_free(elec_hcp *h) {
    if (!h) return;
    ELEC_FREE(h->block);
    memset(h, 0, sizeof *h);
}

/* Each atom's keys (residue, chain, complex, its index; an absent array
   gives each atom its own residue, one chain a complex, one complex),
   refused where an index is negative. */
static elec_status elec__hcp_keys(size_t n, const int *residue_of, const int *chain_of,
                                  const int *complex_of, elec__hcp_key *key,
                                  elec_error *err) {
    size_t i;
    for (i = 0; i < n; i++) {
        key[i].residue = residue_of ? residue_of[i] : (int)i;
        key[i].complex_index = complex_of ? complex_of[i] : 0;
        key[i].chain = chain_of ? chain_of[i] : key[i].complex_index;
        key[i].atom = i;
        if (key[i].residue < 0 || key[i].chain < 0 || key[i].complex_index < 0)
            return elec__name_atoms(elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                               "atom %zu: component indices must be >= 0 "
                                               "(residue %d, chain %d, complex %d)",
                                               i, key[i].residue, key[i].chain,
                                               key[i].complex_index),
                                    err, i, ELEC_NO_ATOM);
    }
    return ELEC_OK;
}

/* The components of each level in the sorted keys, counted into
   count[1..]: runs of equal keys.  A residue (chain) index in two runs
   spans two chains (complexes): the levels do not nest, refused naming an
   atom of it.  values: room for n ints. */
static elec_status elec__hcp_components(const elec__hcp_key *key, size_t n, int *values,
                                        size_t count[ELEC_HCP_LEVELS + 1], elec_error *err) {
    static const char *const level_name[ELEC_HCP_LEVELS + 1] = {"atom", "residue",
                                                                "chain", "complex"};
    static const char *const level_plural[ELEC_HCP_LEVELS + 1] = {"atoms", "residues",
                                                                  "chains", "complexes"};
    size_t i;
    int level;
    for (level = 1; level <= ELEC_HCP_LEVELS; level++) {
        size_t runs = 0;
        long repeated;
        for (i = 0; i < n; i++) {
            int starts = i == 0 || key[i].complex_index != key[i - 1].complex_index ||
                         (level <= 2 && key[i].chain != key[i - 1].chain) ||
                         (level == 1 && key[i].residue != key[i - 1].residue);
            if (starts)
                values[runs++] = level == 1 ? key[i].residue
                                 : level == 2 ? key[i].chain : key[i].complex_index;
        }
        count[level] = runs;
        repeated = level < ELEC_HCP_LEVELS ? elec__hcp_repeated(values, runs) : -1;
        if (repeated >= 0) {
            for (i = 0; i < n; i++) /* name an atom of it for the message */
                if ((level == 1 ? key[i].residue : key[i].chain) == (int)repeated) break;
            return elec__name_atoms(
                elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                           "%s %ld spans two %s (atom %zu is in %s %d): the levels must nest",
                           level_name[level], repeated, level_plural[level + 1], key[i].atom,
                           level_name[level + 1],
                           level == 1 ? key[i].chain : key[i].complex_index),
                err, key[i].atom, ELEC_NO_ATOM);
        }
    }
    count[0] = n;
    return ELEC_OK;
}

/* h's arrays carved from one block for its counts (h->count filled);
   0 where there is no memory. */
static int elec__hcp_allocate(elec_hcp *h) {
    const size_t n = h->count[0];
    size_t bytes = n * (5 * sizeof(double) + sizeof(size_t));
    char *mem;
    int level;
    for (level = 1; level <= ELEC_HCP_LEVELS; level++)
        bytes += (h->count[level] + 1) * sizeof(size_t) + h->count[level] * 25 * sizeof(double);
    h->block = ELEC_MALLOC(bytes);
    if (!h->block) return 0;
    mem = (char *)h->block;
    h->xyz = (double *)mem;
    h->charge = h->xyz + 3 * n;
    h->radius = h->charge + n;
    mem = (char *)(h->radius + n);
    for (level = 0; level < ELEC_HCP_LEVELS; level++) {
        const size_t components = h->count[level + 1];
        h->centre[level] = (double *)mem;
        h->approx[level] = h->centre[level] + 3 * components;
        h->residual[level] = h->approx[level] + 12 * components;
        h->extent[level] = h->residual[level] + 8 * components;
        mem = (char *)(h->extent[level] + 2 * components);
    }
    h->atom_index = (size_t *)mem;
    mem = (char *)(h->atom_index + n);
    for (level = 0; level < ELEC_HCP_LEVELS; level++) {
        h->first[level] = (size_t *)mem;
        mem = (char *)(h->first[level] + h->count[level + 1] + 1);
    }
    return 1;
}

/* The atoms in the sorted keys' order (positions, charges, radii, their
   indices and the net charge) and each level's first members. */
static void elec__hcp_fill(elec_hcp *h, const elec_atoms *atoms, const elec__hcp_key *key) {
    const size_t n = h->count[0];
    size_t c[ELEC_HCP_LEVELS] = {0, 0, 0}, i;
    for (i = 0; i < n; i++) {
        double r;
        int new_complex = i == 0 || key[i].complex_index != key[i - 1].complex_index;
        int new_chain = new_complex || key[i].chain != key[i - 1].chain;
        int new_residue = new_chain || key[i].residue != key[i - 1].residue;
        if (new_complex) h->first[2][c[2]++] = c[1];
        if (new_chain) h->first[1][c[1]++] = c[0];
        if (new_residue) h->first[0][c[0]++] = i;
        h->atom_index[i] = key[i].atom;
        elec_atoms_get(atoms, key[i].atom, h->xyz + 3 * i, h->charge + i, &r);
        h->radius[i] = r;
        h->net_charge += h->charge[i];
    }
    h->first[0][h->count[1]] = n;
    h->first[1][h->count[2]] = h->count[1];
    h->first[2][h->count[3]] = h->count[2];
}

/* Every component's centre, approximations and residuals. */
static void elec__hcp_summarise(elec_hcp *h) {
    int level;
    for (level = 1; level <= ELEC_HCP_LEVELS; level++) {
        long c;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 64)
#endif
        for (c = 0; c < (long)h->count[level]; c++) {
            const size_t begin = elec__hcp_first_atom(h, level, (size_t)c),
                         end = elec__hcp_first_atom(h, level, (size_t)c + 1);
            double *centre = h->centre[level - 1] + 3 * c;
            double *approx = h->approx[level - 1] + 12 * c;
            elec__hcp_represent(h, begin, end, centre, approx);
            elec__hcp_residual(h, begin, end, centre, approx, h->residual[level - 1] + 8 * c,
                               h->extent[level - 1] + 2 * c);
        }
    }
}

ELEC_DEF elec_status elec_hcp_build(const elec_atoms *atoms, const int *residue_of,
                                    const int *chain_of, const int *complex_of,
                                    elec_hcp *out, elec_error *err) {
    elec__hcp_key *key = NULL;
    int *values = NULL;
    size_t n;
    elec_hcp h;
    elec_status s;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    memset(out, 0, sizeof *out);
    if ((s = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return s;
    n = atoms->count;
    if (n == 0)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "no atoms: the hierarchy needs at least one");
    if (n > (size_t)INT_MAX)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0, "%zu atoms: at most %d", n,
                          INT_MAX);
    memset(&h, 0, sizeof h);
    key = (elec__hcp_key *)ELEC_MALLOC(n * sizeof *key);
    values = (int *)ELEC_MALLOC(n * sizeof *values);
    if (!key || !values) {
        s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for %zu atoms", n);
        goto cleanup;
    }
    if ((s = elec__hcp_keys(n, residue_of, chain_of, complex_of, key, err)) != ELEC_OK)
        goto cleanup;
    qsort(key, n, sizeof *key, elec__hcp_key_order);
    if ((s = elec__hcp_components(key, n, values, h.count, err)) != ELEC_OK) goto cleanup;
    if (!elec__hcp_allocate(&h)) {
        s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for the hierarchy of %zu atoms",
                       n);
        goto cleanup;
    }
    elec__hcp_fill(&h, atoms, key);
    elec__hcp_summarise(&h);
    if (atoms->radius) {
        elec_atoms view = elec_atoms_from_xyz(n, h.xyz, h.charge, h.radius);
        if (elec_alpb_size(&view, &h.size, NULL) != ELEC_OK) h.size = 0.0;
    }
    *out = h;
    elec__ok(err);
    s = ELEC_OK;
cleanup:
    ELEC_FREE(key);
    ELEC_FREE(values);
    return s;
}

ELEC_DEF elec_status elec_hcp_from_structure(const elec_structure *structure,
                                             elec_hcp *out, elec_error *err) {
    int *index = NULL;
    elec_atoms atoms;
    elec_status s;
    size_t n;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    memset(out, 0, sizeof *out);
    if (!structure) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "structure is NULL");
    n = structure->count;
    if (n == 0)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "no atoms: the hierarchy needs at least one");
    index = (int *)ELEC_MALLOC(3 * n * sizeof *index);
    if (!index) return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for %zu atoms", n);
    s = elec_structure_components(structure, index, index + n, index + 2 * n, NULL, err);
    if (s == ELEC_OK) {
        atoms = elec_structure_atoms(structure);
        s = elec_hcp_build(&atoms, index, index + n, index + 2 * n, out, err);
    }
    ELEC_FREE(index);
    return s;
}

ELEC_DEF const char *elec_alpb_variant_name(elec_alpb_variant v) {
    switch (v) {
    case ELEC_ALPB_FASTEST: return "fastest";
    case ELEC_ALPB_SIMPLE: return "simple";
    case ELEC_ALPB_REGISTERS: return "registers";
    case ELEC_ALPB_SORTED: return "sorted";
    case ELEC_ALPB_PACKED: return "packed";
    case ELEC_ALPB_PAIRS: return "pairs";
    case ELEC_ALPB_VARIANT_COUNT: break;
    }
    return "unknown";
}

/* A value that must be finite and positive (allow_zero: or zero). */
static elec_status elec__positive(double v, int allow_zero, const char *what,
                                  elec_error *err) {
    if (elec__finite(v) && (v > 0.0 || (allow_zero && v == 0.0))) return ELEC_OK;
    if (!elec__finite(v))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "%s %g is not finite", what, v);
    return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "%s %g must be %s", what, v,
                      allow_zero ? "zero or positive" : "positive");
}

ELEC_DEF elec_status elec_alpb_params_resolve(const elec_alpb_params *in,
                                              const elec_hcp *hcp,
                                              elec_alpb_params *out,
                                              elec_error *err) {
    static const double default_h[ELEC_HCP_LEVELS] = {20.0, 70.0, 150.0};
    static const char *const h_name[ELEC_HCP_LEVELS] = {
        "hcp_h[0] (residues)", "hcp_h[1] (chains)", "hcp_h[2] (complexes)"};
    elec_alpb_params r;
    int level;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    if (!hcp || hcp->count[0] == 0)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "no atoms: the hierarchy is NULL or empty");
    if (in) r = *in;
    else memset(&r, 0, sizeof r);
    if (r.scale == 0.0) r.scale = 1.0;
    if (r.eps_in == 0.0) r.eps_in = 1.0;
    if (r.eps_out == 0.0) r.eps_out = 80.0;
    if (r.temperature == 0.0) r.temperature = ELEC_ROOM_TEMPERATURE;
    if (r.ion_exclusion == 0.0) r.ion_exclusion = 2.0;
    if (r.hcp_charges == 0) r.hcp_charges = 2;
    if (r.hcp_tolerance == 0.0) r.hcp_tolerance = ELEC_HCP_TOLERANCE;
    for (level = 0; level < ELEC_HCP_LEVELS; level++)
        if (r.hcp_h[level] == 0.0) r.hcp_h[level] = default_h[level];
    if (!elec__finite(r.scale))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "scale is not finite");
    if (elec__positive(r.eps_in, 0, "eps_in", err) ||
        elec__positive(r.eps_out, 0, "eps_out", err) ||
        elec__positive(r.electrostatic_size, 1, "electrostatic_size (A)", err) ||
        elec__positive(r.salt, 1, "salt (mol/L)", err) ||
        elec__positive(r.kappa, 1, "kappa (1/A)", err) ||
        elec__positive(r.temperature, 0, "temperature (K)", err) ||
        elec__positive(r.ion_exclusion, 0, "ion_exclusion (A)", err))
        return ELEC_ERR_INVALID_ARG;
    if (r.electrostatic_size == 0.0) {
        if (!(hcp->size > 0.0)) {
            /* elec_alpb_size again, for its reason (the build keeps only 0,
               and zero radii where the atoms had none) */
            elec_error why;
            double size = 0.0;
            elec_atoms view = elec_atoms_from_xyz(hcp->count[0], hcp->xyz, hcp->charge,
                                                  hcp->radius);
            size_t i;
            int any_radius = 0;
            for (i = 0; hcp->radius && i < hcp->count[0]; i++) any_radius |= hcp->radius[i] > 0.0;
            if (!any_radius)
                snprintf(why.message, sizeof why.message,
                         "A_det is undefined: the atoms have no radii, or every radius is "
                         "zero (give the size)");
            else if (elec_alpb_size(&view, &size, &why) == ELEC_OK)
                snprintf(why.message, sizeof why.message, "the hierarchy holds no A_det");
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "electrostatic_size is 0 (A_det), and %s", why.message);
        }
        r.electrostatic_size = hcp->size;
    }
    if (!elec__finite(r.proj))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "proj is not finite");
    if (r.proj < 0.0 && !r.gem_compat)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "proj %g < 0: ALPB's surface formula holds on and outside the "
                          "surface (negative projections only with gem_compat)", r.proj);
    if (!(r.electrostatic_size + r.proj > 0.0))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "proj %g reaches past the centre of the equivalent sphere "
                          "(A = %g)", r.proj, r.electrostatic_size);
    if (r.gem_compat != 0 && r.gem_compat != 1)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "gem_compat %d: use 0 or 1",
                          r.gem_compat);
    if (r.exact != 0 && r.exact != 1)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "exact %d: use 0 or 1", r.exact);
    if (r.hcp_charges != 1 && r.hcp_charges != 2)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "hcp_charges %d: use 1 or 2 (0 = 2)", r.hcp_charges);
    if (!(r.hcp_tolerance > 0.0)) /* +infinity: the distance test alone */
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "hcp_tolerance %g must be positive (0 = %g e/A)", r.hcp_tolerance,
                          ELEC_HCP_TOLERANCE);
    for (level = 0; level < ELEC_HCP_LEVELS; level++)
        if (!(r.hcp_h[level] > 0.0)) /* +infinity is allowed: never approximated */
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "%s %g must be positive",
                              h_name[level], r.hcp_h[level]);
    if ((int)r.variant < 0 || r.variant >= ELEC_ALPB_VARIANT_COUNT)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "unknown ALPB variant %d",
                          (int)r.variant);
    if (elec__gpu_set_check(&r.gpus, err) != ELEC_OK) return ELEC_ERR_INVALID_ARG;
    if (r.kappa == 0.0 && r.salt > 0.0)
        r.kappa = r.gem_compat ? 0.316 * sqrt(r.salt) /* GEM's defines.h */
                               : elec_kappa_from_ionic_strength(r.salt, r.eps_out,
                                                                r.temperature);
    /* finite inputs, an overflowing kappa: salt 1e300 mol/L, or a tiny
       temperature (then kappa/(1 + kappa r) is NaN at every point) */
    if (!elec__finite(r.kappa))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "salt %g mol/L at eps_out %g and %g K gives kappa %g /A: past "
                          "double's range", r.salt, r.eps_out, r.temperature, r.kappa);
    *out = r;
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF double elec_hcp_reach(const elec_hcp *hcp, int level, size_t c,
                               const elec_alpb_params *resolved,
                               const elec_alpb_kernel *kernel) {
    if (!hcp || !resolved || !kernel || level < 0 || level >= ELEC_HCP_LEVELS ||
        c >= hcp->count[level + 1] || !hcp->residual[level])
        return NAN;
    return elec__hcp_reach(hcp, level, c, resolved, kernel);
}

ELEC_DEF void elec_alpb_kernel_setup(const elec_alpb_params *r, elec_alpb_kernel *k) {
    const double a = ELEC_ALPB_ALPHA, b = r->eps_in / r->eps_out;
    const double A = r->electrostatic_size, kappa = r->kappa;
    const double inv = 1.0 / ((1.0 + a * b) * r->eps_out);
    const double radius = A + r->proj, radius_ion = A + r->ion_exclusion;
    const double outer = a * (1.0 - b) * inv; /* E1's second term per e */
    memset(k, 0, sizeof *k);
    k->front = (1.0 + a) * inv;
    k->kappa = kappa;
    /* GEM's regions (research notes 2.3); E1 mode takes region 2 at p = 0 */
    if (r->proj > r->ion_exclusion) {
        k->region = 3;
        k->constant = -outer * exp(-kappa * (radius - radius_ion)) /
                      (radius * (1.0 + kappa * radius_ion));
    } else if (r->proj > 0.0 || !r->gem_compat) {
        k->region = 2;
        k->constant = outer * (-1.0 / radius + kappa / (1.0 + kappa * radius_ion));
    } else {
        k->region = 1;
        k->inv_eps_in = 1.0 / r->eps_in;
        k->born = (1.0 / r->eps_in - 1.0 / r->eps_out) * A / (1.0 + a * b);
        k->born_offset = 0.75 * A * A * (A * A - radius * radius); /* r0 = A/2 */
        k->size2 = A * A;
        k->constant = outer * kappa / (1.0 + kappa * radius_ion);
    }
}

/* ---- >>alpb surfaces: readers, the contact surface, the viewing mesh */

ELEC_DEF void elec_surface_free(elec_surface *s) {
    if (!s) return;
    ELEC_FREE(s->xyz);
    ELEC_FREE(s->normal);
    ELEC_FREE(s->triangles);
    ELEC_FREE(s->atom);
    memset(s, 0, sizeof *s);
}

/* Room for count vertices (with normals when asked) in a new surface. */
static elec_status elec__surface_alloc(elec_surface *s, size_t count, int normals,
                                       elec_error *err) {
    memset(s, 0, sizeof *s);
    if (count > SIZE_MAX / (3 * sizeof(double)))
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "%zu vertices do not fit", count);
    s->xyz = (double *)ELEC_MALLOC((3 * count + 1) * sizeof(double));
    s->normal = normals ? (double *)ELEC_MALLOC((3 * count + 1) * sizeof(double)) : NULL;
    if (!s->xyz || (normals && !s->normal)) {
        elec_surface_free(s);
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for %zu vertices", count);
    }
    s->count = count;
    return ELEC_OK;
}

/* Scales a normal to unit length; 0 when it is zero.  Divided first by
   its largest component, so that the squares neither overflow (a
   component of 6e256 made the length inf and the normal zero, found by
   tests/fuzz/fuzz_points.c) nor underflow (1e-200). */
static int elec__unit(double *n) {
    return elec__direction3(n, n);
}

/* Reads the numbers of tokens t[0..n) into v; on failure writes why. */
static int elec__surface_numbers(const elec__pqr_token *t, size_t n, double *v,
                                 char *why, size_t why_size) {
    static const char *const field[6] = {"x", "y", "z", "normal x", "normal y",
                                         "normal z"};
    size_t i;
    for (i = 0; i < n; i++)
        if (!elec__pqr_real(t[i].p, t[i].n, i < 6 ? field[i] : "value", &v[i], why,
                            why_size))
            return 0;
    return 1;
}

/* Lines of a text in memory, with their numbers (1-based). */
typedef struct elec__lines {
    const char *p, *end;
    long number;
} elec__lines;

/* The next line's tokens (at most max); -1 at the end of the text. */
static long elec__next_line(elec__lines *c, elec__pqr_token *t, size_t max) {
    const char *newline, *line_end;
    long n;
    if (c->p >= c->end) return -1;
    newline = (const char *)memchr(c->p, '\n', (size_t)(c->end - c->p));
    line_end = newline ? newline : c->end;
    n = (long)elec__pqr_split(c->p, line_end, t, max);
    c->p = newline ? newline + 1 : c->end;
    c->number++;
    return n;
}

ELEC_DEF elec_status elec_parse_points(const char *text, size_t length,
                                       elec_surface *out, elec_error *err) {
    elec__lines c;
    elec__pqr_token t[8];
    size_t capacity = 0, count = 0, width = 0;
    double *xyz = NULL, *normal = NULL;
    char why[200];
    long n;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    memset(out, 0, sizeof *out);
    if (!text && length) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "text is NULL");
    c.p = text;
    c.end = text + length;
    c.number = 0;
    while ((n = elec__next_line(&c, t, 8)) >= 0) {
        double v[6];
        if (n == 0 || t[0].p[0] == '#') continue;
        if ((n != 3 && n != 6) || (width && (size_t)n != width)) {
            ELEC_FREE(xyz);
            ELEC_FREE(normal);
            if (n != 3 && n != 6)
                return elec__fail(err, ELEC_ERR_PARSE, c.number,
                                  "line %ld: %ld fields where x y z or x y z nx ny nz "
                                  "are expected", c.number, n);
            return elec__fail(err, ELEC_ERR_PARSE, c.number,
                              "line %ld: %ld fields where the lines before have %zu "
                              "(every point with a normal, or none)", c.number, n, width);
        }
        if (!elec__surface_numbers(t, (size_t)n, v, why, sizeof why) ||
            (n == 6 && !elec__unit(v + 3))) {
            ELEC_FREE(xyz);
            ELEC_FREE(normal);
            return elec__fail(err, ELEC_ERR_PARSE, c.number, "line %ld: %s", c.number,
                              n == 6 && elec__surface_numbers(t, 6, v, why, sizeof why)
                                  ? "the normal is zero" : why);
        }
        width = (size_t)n;
        if (count == capacity) {
            size_t grown = capacity ? 2 * capacity : 1024;
            double *x2 = (double *)ELEC_MALLOC(3 * grown * sizeof(double));
            double *n2 = width == 6 ? (double *)ELEC_MALLOC(3 * grown * sizeof(double)) : NULL;
            if (!x2 || (width == 6 && !n2)) {
                ELEC_FREE(x2);
                ELEC_FREE(n2);
                ELEC_FREE(xyz);
                ELEC_FREE(normal);
                return elec__fail(err, ELEC_ERR_NO_MEMORY, c.number,
                                  "no memory for %zu points", grown);
            }
            if (count) memcpy(x2, xyz, 3 * count * sizeof(double));
            if (count && n2) memcpy(n2, normal, 3 * count * sizeof(double));
            ELEC_FREE(xyz);
            ELEC_FREE(normal);
            xyz = x2;
            normal = n2;
            capacity = grown;
        }
        memcpy(xyz + 3 * count, v, 3 * sizeof(double));
        if (width == 6) memcpy(normal + 3 * count, v + 3, 3 * sizeof(double));
        count++;
    }
    if (count == 0)
        return elec__fail(err, ELEC_ERR_PARSE, 0, "no points in %ld lines", c.number);
    out->count = count;
    out->xyz = xyz;
    out->normal = normal;
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_read_points(const char *path, elec_surface *out,
                                      elec_error *err) {
    char *text;
    size_t length;
    elec_status s;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    memset(out, 0, sizeof *out);
    if ((s = elec_read_text(path, "a point list", &text, &length, err)) != ELEC_OK) return s;
    s = elec_parse_points(text, length, out, err);
    ELEC_FREE(text);
    return s;
}

/* MSMS's header: '#' lines, then a line whose first field is the count,
   at most the records the rest of the file can hold (each at least a
   character and its newline): a count of 2^31 - 1 in a 30-byte file once
   asked for 51 GB before reading a record. */
static elec_status elec__msms_count(elec__lines *c, const char *path, size_t *count,
                                    elec_error *err) {
    elec__pqr_token t[4];
    long n;
    while ((n = elec__next_line(c, t, 4)) >= 0) {
        long long v;
        const size_t room = (size_t)(c->end - c->p) / 2 + 1;
        if (n == 0 || t[0].p[0] == '#') continue;
        if (elec__pqr_integer(t[0].p, t[0].n, (long long)INT_MAX, &v) !=
                ELEC__PQR_NUMBER_OK || v < 1)
            return elec__fail(err, ELEC_ERR_PARSE, c->number,
                              "%s: line %ld: '%.*s%s' is not a count", path, c->number,
                              ELEC__PQR_QUOTE(t[0].p, t[0].n));
        if ((size_t)v > room)
            return elec__fail(err, ELEC_ERR_PARSE, c->number,
                              "%s: line %ld: a count of %lld, but the %zu bytes after it "
                              "hold at most %zu records", path, c->number, v,
                              (size_t)(c->end - c->p), room);
        *count = (size_t)v;
        return ELEC_OK;
    }
    return elec__fail(err, ELEC_ERR_PARSE, c->number, "%s: no count line", path);
}

/* The .face text's triangles (1-based vertex numbers, each one of s's
   vertices) into s; `name` leads every message. */
static elec_status elec__msms_faces(const char *text, size_t length, const char *name,
                                    elec_surface *s, elec_error *err) {
    elec__lines c;
    elec__pqr_token t[6];
    size_t count = 0, f = 0;
    elec_status st;
    c.p = text ? text : "";
    c.end = c.p + length;
    c.number = 0;
    if ((st = elec__msms_count(&c, name, &count, err)) != ELEC_OK) return st;
    s->triangles = (size_t *)ELEC_MALLOC(3 * count * sizeof(size_t));
    if (!s->triangles)
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for %zu triangles", count);
    while (f < count) {
        long n = elec__next_line(&c, t, 6), k;
        if (n < 0) break;
        if (n == 0 || t[0].p[0] == '#') continue;
        if (n < 3)
            return elec__fail(err, ELEC_ERR_PARSE, c.number,
                              "%s: line %ld: %ld fields where three vertex numbers are "
                              "expected", name, c.number, n);
        for (k = 0; k < 3; k++) {
            long long v;
            if (elec__pqr_integer(t[k].p, t[k].n, (long long)INT_MAX, &v) !=
                    ELEC__PQR_NUMBER_OK || v < 1 || (size_t)v > s->count)
                return elec__fail(err, ELEC_ERR_PARSE, c.number,
                                  "%s: line %ld: vertex number '%.*s%s' is not one of the "
                                  "%zu vertices", name, c.number,
                                  ELEC__PQR_QUOTE(t[k].p, t[k].n), s->count);
            s->triangles[3 * f + (size_t)k] = (size_t)v - 1;
        }
        f++;
    }
    if (f < count)
        return elec__fail(err, ELEC_ERR_PARSE, c.number,
                          "%s: the file ends after %zu of %zu triangles", name, f, count);
    s->triangle_count = count;
    return ELEC_OK;
}

/* The .vert text's vertices and unit normals into s (allocated here). */
static elec_status elec__msms_vertices(const char *text, size_t length, const char *name,
                                       elec_surface *s, elec_error *err) {
    elec__lines c;
    elec__pqr_token t[10];
    char why[200];
    size_t count = 0, v = 0;
    elec_status st;
    c.p = text ? text : "";
    c.end = c.p + length;
    c.number = 0;
    if ((st = elec__msms_count(&c, name, &count, err)) != ELEC_OK) return st;
    if ((st = elec__surface_alloc(s, count, 1, err)) != ELEC_OK) return st;
    while (v < count) {
        double values[6];
        long n = elec__next_line(&c, t, 10);
        if (n < 0) break;
        if (n == 0 || t[0].p[0] == '#') continue;
        if (n < 6)
            return elec__fail(err, ELEC_ERR_PARSE, c.number,
                              "%s: line %ld: %ld fields where x y z nx ny nz are expected",
                              name, c.number, n);
        if (!elec__surface_numbers(t, 6, values, why, sizeof why))
            return elec__fail(err, ELEC_ERR_PARSE, c.number, "%s: line %ld: %s", name,
                              c.number, why);
        if (!elec__unit(values + 3))
            return elec__fail(err, ELEC_ERR_PARSE, c.number, "%s: line %ld: the normal is zero",
                              name, c.number);
        memcpy(s->xyz + 3 * v, values, 3 * sizeof(double));
        memcpy(s->normal + 3 * v, values + 3, 3 * sizeof(double));
        v++;
    }
    if (v < count)
        return elec__fail(err, ELEC_ERR_PARSE, c.number,
                          "%s: the file ends after %zu of %zu vertices", name, v, count);
    return ELEC_OK;
}

/* Both texts into out (face_text NULL: no triangles), each message led
   by its text's name. */
static elec_status elec__msms_parse(const char *vert_text, size_t vert_length,
                                    const char *vert_name, const char *face_text,
                                    size_t face_length, const char *face_name,
                                    elec_surface *out, elec_error *err) {
    elec_surface s;
    elec_status st;
    memset(&s, 0, sizeof s);
    st = elec__msms_vertices(vert_text, vert_length, vert_name, &s, err);
    if (st == ELEC_OK && face_text)
        st = elec__msms_faces(face_text, face_length, face_name, &s, err);
    if (st != ELEC_OK) {
        elec_surface_free(&s);
        return st;
    }
    *out = s;
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_parse_msms(const char *vert_text, size_t vert_length,
                                     const char *face_text, size_t face_length,
                                     elec_surface *out, elec_error *err) {
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    memset(out, 0, sizeof *out);
    if (!vert_text && vert_length)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "vert_text is NULL with a length of %zu", vert_length);
    if (!face_text && face_length)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "face_text is NULL with a length of %zu", face_length);
    return elec__msms_parse(vert_text, vert_length, "MSMS .vert", face_text, face_length,
                            "MSMS .face", out, err);
}

ELEC_DEF elec_status elec_read_msms(const char *vert_path, const char *face_path,
                                    elec_surface *out, elec_error *err) {
    char *vert = NULL, *face = NULL;
    size_t vert_length = 0, face_length = 0;
    elec_status st;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    memset(out, 0, sizeof *out);
    st = elec_read_text(vert_path, "an MSMS .vert", &vert, &vert_length, err);
    if (st == ELEC_OK && face_path)
        st = elec_read_text(face_path, "an MSMS .face", &face, &face_length, err);
    if (st == ELEC_OK)
        st = elec__msms_parse(vert, vert_length, vert_path, face, face_length, face_path, out,
                              err);
    ELEC_FREE(vert);
    ELEC_FREE(face);
    return st;
}

/* The atoms' positions and radii gathered once, for the surface builders;
   the largest radius comes back. */
static elec_status elec__surface_atoms(const elec_atoms *atoms, double **xyz,
                                       double **radius, double *largest,
                                       elec_error *err) {
    size_t i;
    elec_status s;
    *xyz = *radius = NULL;
    *largest = 0.0;
    if ((s = elec_atoms_check(atoms, 1, err)) != ELEC_OK) return s;
    if (atoms->count == 0)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "no atoms: no surface");
    *xyz = (double *)ELEC_MALLOC(3 * atoms->count * sizeof(double));
    *radius = (double *)ELEC_MALLOC(atoms->count * sizeof(double));
    if (!*xyz || !*radius) {
        ELEC_FREE(*xyz);
        ELEC_FREE(*radius);
        *xyz = *radius = NULL;
        return elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for %zu atoms",
                          atoms->count);
    }
    for (i = 0; i < atoms->count; i++) {
        const double *x = *xyz + 3 * i;
        double far;
        elec_atoms_get(atoms, i, *xyz + 3 * i, NULL, *radius + i);
        if ((*radius)[i] > *largest) *largest = (*radius)[i];
        /* a surface point x + r u keeps r to the rounding of x: past 1e-6
           of r (|x| about 4.5e9 r) the points and their heights drift
           (an audit: an ion of 2 A at 1e16 A came back 0.62 to 1.24 of
           its potential, at 1e17 A 14 times it, with ELEC_OK) */
        far = fabs(x[0]) > fabs(x[1]) ? fabs(x[0]) : fabs(x[1]);
        if (fabs(x[2]) > far) far = fabs(x[2]);
        if ((*radius)[i] > 0.0 && far * DBL_EPSILON > 1e-6 * (*radius)[i]) {
            elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                       "atom %zu lies %g A from the origin with radius %g A: its surface "
                       "points would keep its radius to worse than 1e-6 (double's rounding "
                       "there); move the atoms nearer the origin",
                       i, far, (*radius)[i]);
            ELEC_FREE(*xyz);
            ELEC_FREE(*radius);
            *xyz = *radius = NULL;
            return ELEC_ERR_INVALID_ARG;
        }
    }
    return ELEC_OK;
}

/* A cell list of the atoms over their bounding box widened by pad. */
static elec_status elec__surface_cells(const double *xyz, size_t n, double pad,
                                       double cell, elec_cells *cells, elec_error *err) {
    double lo[3], hi[3], length[3];
    size_t i;
    int a;
    for (a = 0; a < 3; a++) lo[a] = hi[a] = xyz[a];
    for (i = 1; i < n; i++)
        for (a = 0; a < 3; a++) {
            if (xyz[3 * i + a] < lo[a]) lo[a] = xyz[3 * i + a];
            if (xyz[3 * i + a] > hi[a]) hi[a] = xyz[3 * i + a];
        }
    for (a = 0; a < 3; a++) {
        lo[a] -= pad;
        length[a] = hi[a] - lo[a] + pad;
        if (length[a] < cell) length[a] = cell; /* flat or one atom */
    }
    return elec__cells_build_windowed(xyz, n, lo, length, cell, cells, err);
}

/* Fibonacci direction k of n on the unit sphere (research notes 2.6). */
static void elec__fibonacci(size_t k, size_t n, double u[3]) {
    const double golden_turn = 3.14159265358979323846 * (1.0 + sqrt(5.0));
    double z = 1.0 - 2.0 * ((double)k + 0.5) / (double)n;
    double t = golden_turn * ((double)k + 0.5), s = sqrt(1.0 - z * z);
    u[0] = s * cos(t);
    u[1] = s * sin(t);
    u[2] = z;
}

/* How many points each atom's sphere holds at `density` per A^2 (first[i]
   to first[i + 1] are atom i's), refused past 1e7 an atom; an atom whose
   sphere holds under half a point has none (one point at a radius-0
   atom's centre, where its own potential is left out, once gave a finite
   value where there is none). */
static elec_status elec__contact_counts(const double *radius, size_t n, double density,
                                        size_t *first, elec_error *err) {
    const double four_pi = 4.0 * 3.14159265358979323846;
    size_t i;
    first[0] = 0;
    for (i = 0; i < n; i++) {
        double points = floor(density * four_pi * radius[i] * radius[i] + 0.5);
        if (points > 1e7)
            return elec__name_atoms(elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                                               "atom %zu: radius %g A at %g per A^2 is over "
                                               "1e7 points", i, radius[i], density),
                                    err, i, ELEC_NO_ATOM);
        first[i + 1] = first[i] + (size_t)points;
    }
    return ELEC_OK;
}

/* Whether atoms a and b are one sphere: the same centre and radius. */
static int elec__same_sphere(const double *xyz, const double *radius, size_t a, size_t b) {
    return radius[a] == radius[b] && xyz[3 * a] == xyz[3 * b] &&
           xyz[3 * a + 1] == xyz[3 * b + 1] && xyz[3 * a + 2] == xyz[3 * b + 2];
}

/* Whether a probe centred at c, beside atom me, overlaps another atom (of
   the cells around home): the point it touches is then buried. */
static int elec__contact_buried(const elec_cells *cells, const double *xyz,
                                const double *radius, double probe, size_t me,
                                const int home[3], const double c[3]) {
    int dx, dy, dz;
    for (dz = -1; dz <= 1; dz++)
        for (dy = -1; dy <= 1; dy++)
            for (dx = -1; dx <= 1; dx++) {
                long cell = elec_cells_neighbour(cells, home, dx, dy, dz, 0);
                size_t j;
                if (cell < 0) continue;
                for (j = cells->start[cell]; j < cells->start[cell + 1]; j++) {
                    size_t other = cells->atom[j];
                    double reach = radius[other] + probe;
                    /* a copy of me buries none of its twin's points (at
                       r + probe from it, rounding buried some) */
                    if (other != me && elec_distance2(c, xyz + 3 * other) < reach * reach &&
                        !elec__same_sphere(xyz, radius, other, me))
                        return 1;
                }
            }
    return 0;
}

/* Whether an atom before `me` is its sphere (elec__same_sphere): a copy,
   whose points are me's too (two coincident atoms once gave most points
   twice, 130 for 85; an audit).  The first copy keeps them.  A copy has
   me's position, so it lies in me's own cell. */
static int elec__contact_copy(const elec_cells *cells, const double *xyz, const double *radius,
                              size_t me, const int home[3]) {
    const long cell = elec_cells_neighbour(cells, home, 0, 0, 0, 0);
    size_t j;
    if (cell < 0) return 0;
    for (j = cells->start[cell]; j < cells->start[cell + 1]; j++)
        if (cells->atom[j] < me && elec__same_sphere(xyz, radius, cells->atom[j], me)) return 1;
    return 0;
}

/* keep[first[i] + k]: whether atom i's Fibonacci point k of its
   first[i + 1] - first[i] is on the contact surface (a probe touching it
   there overlaps no other atom, and no earlier copy of the atom holds
   it). */
static void elec__contact_keep(const elec_cells *cells, const double *xyz,
                               const double *radius, size_t n, double probe,
                               const size_t *first, unsigned char *keep) {
    long atom;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 64)
#endif
    for (atom = 0; atom < (long)n; atom++) {
        const size_t me = (size_t)atom, m = first[me + 1] - first[me];
        int home[3];
        size_t k;
        elec_cells_ijk(cells, xyz + 3 * me, home);
        if (elec__contact_copy(cells, xyz, radius, me, home)) {
            memset(keep + first[me], 0, m);
            continue;
        }
        for (k = 0; k < m; k++) {
            double u[3], c[3];
            int a;
            elec__fibonacci(k, m, u);
            for (a = 0; a < 3; a++) c[a] = xyz[3 * me + a] + (radius[me] + probe) * u[a];
            keep[first[me] + k] =
                (unsigned char)!elec__contact_buried(cells, xyz, radius, probe, me, home, c);
        }
    }
}

ELEC_DEF elec_status elec_surface_contact(const elec_atoms *atoms, double density,
                                          double probe, elec_surface *out,
                                          elec_error *err) {
    double *xyz = NULL, *radius = NULL, largest;
    size_t *first = NULL, n, i, total, kept = 0;
    unsigned char *keep = NULL;
    elec_cells cells;
    elec_status s;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    memset(out, 0, sizeof *out);
    memset(&cells, 0, sizeof cells);
    if (density == 0.0) density = 3.0;
    if (probe == 0.0) probe = 1.5;
    if (!(density > 0.0) || !(density <= 1e4))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "density %g per A^2: use a value in (0, 1e4]", density);
    /* a probe past 1e4 A makes the atoms' hull, no more (water's is 1.4
       A); past ~1e15 A the burial test x_i + (r_i + probe) u - x_j loses
       the atoms' separation to rounding and buried points came back */
    if (!(probe > 0.0) || !(probe <= 1e4))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "probe %g A: use a value in (0, 1e4]",
                          probe);
    if ((s = elec__surface_atoms(atoms, &xyz, &radius, &largest, err)) != ELEC_OK)
        return s;
    if (!(largest > 0.0)) {
        s = elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                       "every atom radius is zero: no contact surface");
        goto cleanup;
    }
    n = atoms->count;
    first = (size_t *)ELEC_MALLOC((n + 1) * sizeof *first);
    if (!first) {
        s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory");
        goto cleanup;
    }
    if ((s = elec__contact_counts(radius, n, density, first, err)) != ELEC_OK) goto cleanup;
    total = first[n];
    if (total == 0) {
        s = elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                       "no atom's sphere holds a point at %g per A^2 (radii up to %g A)",
                       density, largest);
        goto cleanup;
    }
    keep = (unsigned char *)ELEC_MALLOC(total + 1);
    if (!keep) {
        s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for %zu candidate points",
                       total);
        goto cleanup;
    }
    /* every atom that can hold a probe touching atom i lies within
       r_i + r_j + 2 probe <= 2 (largest + probe) of it */
    if ((s = elec__surface_cells(xyz, n, 0.0, 2.0 * (largest + probe), &cells, err)) !=
        ELEC_OK)
        goto cleanup;
    elec__contact_keep(&cells, xyz, radius, n, probe, first, keep);
    for (i = 0; i < total; i++) kept += keep[i];
    if ((s = elec__surface_alloc(out, kept, 1, err)) != ELEC_OK) goto cleanup;
    out->atom = (size_t *)ELEC_MALLOC((kept + 1) * sizeof *out->atom);
    if (!out->atom) {
        elec_surface_free(out);
        s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for %zu points' atoms", kept);
        goto cleanup;
    }
    kept = 0;
    for (i = 0; i < n; i++) { /* the kept points and their normals, atom by atom */
        size_t k, m = first[i + 1] - first[i];
        for (k = 0; k < m; k++) {
            int a;
            if (!keep[first[i] + k]) continue;
            elec__fibonacci(k, m, out->normal + 3 * kept);
            for (a = 0; a < 3; a++)
                out->xyz[3 * kept + a] = xyz[3 * i + a] + radius[i] * out->normal[3 * kept + a];
            out->atom[kept] = i;
            kept++;
        }
    }
    elec__ok(err);
cleanup:
    elec_cells_free(&cells);
    ELEC_FREE(xyz);
    ELEC_FREE(radius);
    ELEC_FREE(first);
    ELEC_FREE(keep);
    return s;
}

/* The viewing mesh.  Cube corner c (bits: x 1, y 2, z 4) of cube (i, j, k)
   is lattice point (i + (c & 1), j + (c >> 1 & 1), k + (c >> 2 & 1)).  The
   six tetrahedra of a cube (Kuhn's) follow the monotone paths from corner 0
   to corner 7, so every two corners of one are ordered and an edge is
   named by its lower lattice point and its offset (1..7): neighbouring
   cubes cut their shared faces alike and share the vertices of them. */
static const unsigned char elec__kuhn[6][4] = {{0, 1, 3, 7}, {0, 1, 5, 7}, {0, 2, 3, 7},
                                               {0, 2, 6, 7}, {0, 4, 5, 7}, {0, 4, 6, 7}};

/* Vertices by edge: open addressing, keys stored + 1 (0 = empty). */
typedef struct elec__edge_map {
    unsigned long long *key;
    size_t *vertex;
    size_t capacity, used;
} elec__edge_map;

static int elec__edge_map_grow(elec__edge_map *m) {
    size_t capacity = m->capacity ? 2 * m->capacity : 4096, i;
    unsigned long long *key = (unsigned long long *)ELEC_MALLOC(capacity * sizeof *key);
    size_t *vertex = (size_t *)ELEC_MALLOC(capacity * sizeof *vertex);
    if (!key || !vertex) {
        ELEC_FREE(key);
        ELEC_FREE(vertex);
        return 0;
    }
    memset(key, 0, capacity * sizeof *key);
    for (i = 0; i < m->capacity; i++) {
        size_t slot;
        if (!m->key[i]) continue;
        slot = (size_t)(m->key[i] * 0x9E3779B97F4A7C15ULL >> 17) & (capacity - 1);
        while (key[slot]) slot = (slot + 1) & (capacity - 1);
        key[slot] = m->key[i];
        vertex[slot] = m->vertex[i];
    }
    ELEC_FREE(m->key);
    ELEC_FREE(m->vertex);
    m->key = key;
    m->vertex = vertex;
    m->capacity = capacity;
    return 1;
}

/* The slot of edge e: where it is, or the empty one where it goes. */
static size_t elec__edge_map_slot(const elec__edge_map *m, unsigned long long e) {
    size_t slot = (size_t)((e + 1) * 0x9E3779B97F4A7C15ULL >> 17) & (m->capacity - 1);
    while (m->key[slot] && m->key[slot] != e + 1) slot = (slot + 1) & (m->capacity - 1);
    return slot;
}

/* A growing array of vertices and triangles. */
typedef struct elec__mesh_build {
    elec__edge_map edges;
    double *xyz;
    size_t *triangles;
    size_t vertices, vertex_capacity, triangle_count, triangle_capacity;
} elec__mesh_build;

static int elec__grow_array(void **p, size_t *capacity, size_t needed, size_t unit) {
    size_t grown;
    void *q;
    if (needed <= *capacity) return 1;
    grown = *capacity ? 2 * *capacity : 4096;
    while (grown < needed) grown *= 2;
    q = ELEC_MALLOC(grown * unit);
    if (!q) return 0;
    if (*capacity) memcpy(q, *p, *capacity * unit);
    ELEC_FREE(*p);
    *p = q;
    *capacity = grown;
    return 1;
}

/* The lattice of the mesh and its values. */
typedef struct elec__mesh_grid {
    int n[3];
    double origin[3], h;
    const float *f;
} elec__mesh_grid;

static size_t elec__mesh_point(const elec__mesh_grid *g, int i, int j, int k) {
    return (size_t)i + (size_t)g->n[0] * ((size_t)j + (size_t)g->n[1] * (size_t)k);
}

/* The vertex where the level 1 crosses the edge from lattice point p (of
   cube corner bits lower) by offset bits: made once, found after. */
static long elec__mesh_vertex(elec__mesh_build *b, const elec__mesh_grid *g, int i,
                              int j, int k, int lower, int offset) {
    int a[3], c[3], axis;
    size_t p, q, slot;
    unsigned long long e;
    double fp, fq, t;
    for (axis = 0; axis < 3; axis++) {
        a[axis] = (lower >> axis & 1);
        c[axis] = a[axis] + (offset >> axis & 1);
    }
    p = elec__mesh_point(g, i + a[0], j + a[1], k + a[2]);
    q = elec__mesh_point(g, i + c[0], j + c[1], k + c[2]);
    e = 7ULL * (unsigned long long)p + (unsigned long long)(offset - 1);
    if (2 * (b->edges.used + 1) > b->edges.capacity && !elec__edge_map_grow(&b->edges))
        return -1;
    slot = elec__edge_map_slot(&b->edges, e);
    if (b->edges.key[slot]) return (long)b->edges.vertex[slot];
    if (!elec__grow_array((void **)&b->xyz, &b->vertex_capacity, 3 * (b->vertices + 1),
                          sizeof(double)))
        return -1;
    /* the crossing by linear interpolation of ln F (an atom's ln F is
       quadratic along the edge, F itself Gaussian: 6 times closer at
       0.2 A), kept off the end points so that two edges never give one
       position */
    fp = log(g->f[p] > 1e-30f ? (double)g->f[p] : 1e-30);
    fq = log(g->f[q] > 1e-30f ? (double)g->f[q] : 1e-30);
    t = (0.0 - fp) / (fq - fp);
    t = t < 1e-3 ? 1e-3 : t > 1.0 - 1e-3 ? 1.0 - 1e-3 : t;
    for (axis = 0; axis < 3; axis++)
        b->xyz[3 * b->vertices + (size_t)axis] =
            g->origin[axis] + g->h * ((double)((axis == 0 ? i : axis == 1 ? j : k) +
                                               a[axis]) + t * (c[axis] - a[axis]));
    b->edges.key[slot] = e + 1;
    b->edges.vertex[slot] = b->vertices;
    b->edges.used++;
    return (long)b->vertices++;
}

/* The vertex on the edge between cube corners u and v (ordered by the
   Kuhn path, so one is a subset of the other). */
static long elec__mesh_edge(elec__mesh_build *b, const elec__mesh_grid *g, int i, int j,
                            int k, int u, int v) {
    int lower = (u & v) == u ? u : v, upper = lower == u ? v : u;
    return elec__mesh_vertex(b, g, i, j, k, lower, upper ^ lower);
}

/* Adds triangle (a, b, c), turned so that it faces `outward`. */
static int elec__mesh_triangle(elec__mesh_build *b, long v0, long v1, long v2,
                               const double outward[3]) {
    const double *p = b->xyz + 3 * v0, *q = b->xyz + 3 * v1, *r = b->xyz + 3 * v2;
    double u[3], w[3], n[3];
    int a;
    if (v0 < 0 || v1 < 0 || v2 < 0) return 0;
    for (a = 0; a < 3; a++) {
        u[a] = q[a] - p[a];
        w[a] = r[a] - p[a];
    }
    n[0] = u[1] * w[2] - u[2] * w[1];
    n[1] = u[2] * w[0] - u[0] * w[2];
    n[2] = u[0] * w[1] - u[1] * w[0];
    if (!elec__grow_array((void **)&b->triangles, &b->triangle_capacity,
                          3 * (b->triangle_count + 1), sizeof(size_t)))
        return 0;
    if (n[0] * outward[0] + n[1] * outward[1] + n[2] * outward[2] < 0.0) {
        long swap = v1;
        v1 = v2;
        v2 = swap;
    }
    b->triangles[3 * b->triangle_count] = (size_t)v0;
    b->triangles[3 * b->triangle_count + 1] = (size_t)v1;
    b->triangles[3 * b->triangle_count + 2] = (size_t)v2;
    b->triangle_count++;
    return 1;
}

/* The triangles of one tetrahedron (cube corners t[0..3]); 0 when out of
   memory. */
static int elec__mesh_tetrahedron(elec__mesh_build *b, const elec__mesh_grid *g, int i,
                                  int j, int k, const unsigned char t[4]) {
    int in[4], inside = 0, m, a;
    double outward[3] = {0, 0, 0};
    for (m = 0; m < 4; m++) {
        int c = t[m];
        in[m] = g->f[elec__mesh_point(g, i + (c & 1), j + (c >> 1 & 1),
                                      k + (c >> 2 & 1))] >= 1.0f;
        inside += in[m];
    }
    if (inside == 0 || inside == 4) return 1;
    /* outward: from the inside corners' mean to the outside corners' */
    for (m = 0; m < 4; m++)
        for (a = 0; a < 3; a++)
            outward[a] += (t[m] >> a & 1) * (in[m] ? -1.0 / inside : 1.0 / (4 - inside));
    if (inside == 1 || inside == 3) {
        int odd = 0, o[3], n = 0;
        for (m = 0; m < 4; m++)
            if (in[m] == (inside == 1)) odd = m;
        for (m = 0; m < 4; m++)
            if (m != odd) o[n++] = t[m];
        return elec__mesh_triangle(b, elec__mesh_edge(b, g, i, j, k, t[odd], o[0]),
                                   elec__mesh_edge(b, g, i, j, k, t[odd], o[1]),
                                   elec__mesh_edge(b, g, i, j, k, t[odd], o[2]), outward);
    } else {
        int p[2], q[2], np = 0, nq = 0;
        long ac, ad, bd, bc;
        for (m = 0; m < 4; m++) {
            if (in[m]) p[np++] = t[m];
            else q[nq++] = t[m];
        }
        /* the quadrilateral (p0 q0) (p0 q1) (p1 q1) (p1 q0), in two */
        ac = elec__mesh_edge(b, g, i, j, k, p[0], q[0]);
        ad = elec__mesh_edge(b, g, i, j, k, p[0], q[1]);
        bd = elec__mesh_edge(b, g, i, j, k, p[1], q[1]);
        bc = elec__mesh_edge(b, g, i, j, k, p[1], q[0]);
        return elec__mesh_triangle(b, ac, ad, bd, outward) &&
               elec__mesh_triangle(b, ac, bd, bc, outward);
    }
}

/* The density's gradient at x over the cell list's atoms (d/dx of
   exp(-s (d^2/r^2 - 1)) is -2 s (x - x_i)/r^2 times it). */
static void elec__mesh_gradient(const elec_cells *cells, const double *xyz,
                                const double *radius, double blobbiness, double reach2,
                                const double *x, double g[3]) {
    int home[3], dx, dy, dz, a;
    g[0] = g[1] = g[2] = 0.0;
    elec_cells_ijk(cells, x, home);
    for (dz = -1; dz <= 1; dz++)
        for (dy = -1; dy <= 1; dy++)
            for (dx = -1; dx <= 1; dx++) {
                long cell = elec_cells_neighbour(cells, home, dx, dy, dz, 0);
                size_t m;
                if (cell < 0) continue;
                for (m = cells->start[cell]; m < cells->start[cell + 1]; m++) {
                    size_t atom = cells->atom[m];
                    double r2 = radius[atom] * radius[atom], d2, w;
                    if (r2 == 0.0) continue;
                    d2 = elec_distance2(x, xyz + 3 * atom) / r2;
                    if (d2 > reach2) continue;
                    w = -2.0 * blobbiness / r2 * exp(-blobbiness * (d2 - 1.0));
                    for (a = 0; a < 3; a++) g[a] += w * (x[a] - xyz[3 * atom + a]);
                }
            }
}

#define ELEC__MESH_MAX_POINTS 134217728.0 /* 2^27 lattice points: 512 MB of floats */

/* The mesh's lattice (g's shape, origin and spacing) over the atoms' span
   padded by their largest reach and two spacings; refused where the
   spacing is coarser than the whole blob or the lattice would have more
   than ELEC__MESH_MAX_POINTS points. */
static elec_status elec__mesh_lattice(const double *xyz, size_t n, double largest,
                                      double reach2, double spacing, elec__mesh_grid *g,
                                      elec_error *err) {
    const double pad = largest * sqrt(reach2) + 2.0 * spacing;
    double lo[3], hi[3], across = 0.0, total = 1.0;
    size_t i;
    int axis;
    for (axis = 0; axis < 3; axis++) lo[axis] = hi[axis] = xyz[axis];
    for (i = 1; i < n; i++)
        for (axis = 0; axis < 3; axis++) {
            if (xyz[3 * i + axis] < lo[axis]) lo[axis] = xyz[3 * i + axis];
            if (xyz[3 * i + axis] > hi[axis]) hi[axis] = xyz[3 * i + axis];
        }
    /* a lattice coarser than the whole blob (the atoms' span and the
       largest reach) resolves nothing: at 1e20 A a point could still land
       on an atom's centre (the origin's offset cancelling to the bit) and
       make a "surface" 1e20 A wide.  Coarse meshes of a molecule (10-25 A
       for a protein) stay allowed. */
    for (axis = 0; axis < 3; axis++)
        if (hi[axis] - lo[axis] > across) across = hi[axis] - lo[axis];
    across += 2.0 * largest * sqrt(reach2);
    if (spacing > across)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "mesh spacing %g A is coarser than the atoms' whole extent (%g A "
                          "across, their reach included): no surface to mesh", spacing,
                          across);
    for (axis = 0; axis < 3; axis++) {
        double count = ceil((hi[axis] - lo[axis] + 2.0 * pad) / spacing) + 1.0;
        total *= count;
        g->n[axis] = count > 1e6 ? 1000000 : (int)count;
        g->origin[axis] = lo[axis] - pad;
    }
    if (total > ELEC__MESH_MAX_POINTS)
        return elec__fail(err, ELEC_ERR_UNSUPPORTED, 0,
                          "a mesh at %g A spacing over %g x %g x %g A needs %.3g lattice "
                          "points (at most %.3g): use a larger spacing%s", spacing,
                          hi[0] - lo[0] + 2 * pad, hi[1] - lo[1] + 2 * pad,
                          hi[2] - lo[2] + 2 * pad, total, ELEC__MESH_MAX_POINTS,
                          /* a small blobbiness widens each atom's reach
                             past what any spacing can cover */
                          reach2 > 100.0 ? ", or a larger blobbiness (each atom reaches "
                                           "sqrt(1 + 9.21 / blobbiness) radii)"
                                         : "");
    g->h = spacing;
    return ELEC_OK;
}

/* The density sum_i exp(-s (d_i^2 / r_i^2 - 1)) on g's points, f zeroed
   before, atom by atom over the points within its reach (reach2 radii
   squared); each thread owns a slab of z layers and takes the atoms in
   order, so every sum comes out the same whatever the thread count. */
static void elec__mesh_density(const elec__mesh_grid *g, float *f, const double *xyz,
                               const double *radius, size_t n, double blobbiness,
                               double reach2) {
#ifdef _OPENMP
#pragma omp parallel
#endif
    {
        int first = 0, last = g->n[2];
        size_t atom;
#ifdef _OPENMP
        {
            int threads = omp_get_num_threads(), me = omp_get_thread_num();
            first = (int)((long)g->n[2] * me / threads);
            last = (int)((long)g->n[2] * (me + 1) / threads);
        }
#endif
        for (atom = 0; atom < n; atom++) {
            const double *x = xyz + 3 * atom, r2 = radius[atom] * radius[atom];
            int lo[3], hi[3], i, j, k, axis;
            if (r2 == 0.0) continue;
            for (axis = 0; axis < 3; axis++) {
                double reach = radius[atom] * sqrt(reach2);
                lo[axis] = (int)ceil((x[axis] - reach - g->origin[axis]) / g->h);
                hi[axis] = (int)floor((x[axis] + reach - g->origin[axis]) / g->h);
                if (lo[axis] < 0) lo[axis] = 0;
                if (hi[axis] > g->n[axis] - 1) hi[axis] = g->n[axis] - 1;
            }
            if (lo[2] < first) lo[2] = first;
            if (hi[2] > last - 1) hi[2] = last - 1;
            for (k = lo[2]; k <= hi[2]; k++)
                for (j = lo[1]; j <= hi[1]; j++)
                    for (i = lo[0]; i <= hi[0]; i++) {
                        double p[3], d2;
                        p[0] = g->origin[0] + g->h * i;
                        p[1] = g->origin[1] + g->h * j;
                        p[2] = g->origin[2] + g->h * k;
                        d2 = elec_distance2(p, x) / r2;
                        if (d2 <= reach2)
                            f[elec__mesh_point(g, i, j, k)] +=
                                (float)exp(-blobbiness * (d2 - 1.0));
                    }
        }
    }
}

/* The surface where g's density is 1, by marching tetrahedra: each cube
   the surface crosses (corners on both sides) as Kuhn's six.  0 where
   there is no memory for it. */
static int elec__mesh_march(elec__mesh_build *b, const elec__mesh_grid *g) {
    int i, j, k, t;
    for (k = 0; k + 1 < g->n[2]; k++)
        for (j = 0; j + 1 < g->n[1]; j++)
            for (i = 0; i + 1 < g->n[0]; i++) {
                int corner, inside = 0;
                for (corner = 0; corner < 8; corner++)
                    inside += g->f[elec__mesh_point(g, i + (corner & 1), j + (corner >> 1 & 1),
                                                    k + (corner >> 2 & 1))] >= 1.0f;
                if (inside == 0 || inside == 8) continue;
                for (t = 0; t < 6; t++)
                    if (!elec__mesh_tetrahedron(b, g, i, j, k, elec__kuhn[t])) return 0;
            }
    return 1;
}

/* The outward unit normal at each of count vertices: minus the density's
   gradient, from the atoms (up where the density is flat and gives no
   direction). */
static void elec__mesh_normals(const elec_cells *cells, const double *xyz,
                               const double *radius, double blobbiness, double reach2,
                               const double *vertex, size_t count, double *normal) {
    long v;
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 256)
#endif
    for (v = 0; v < (long)count; v++) {
        double *nv = normal + 3 * v;
        elec__mesh_gradient(cells, xyz, radius, blobbiness, reach2, vertex + 3 * v, nv);
        nv[0] = -nv[0];
        nv[1] = -nv[1];
        nv[2] = -nv[2];
        if (!elec__unit(nv)) {
            nv[0] = nv[1] = 0.0;
            nv[2] = 1.0;
        }
    }
}

ELEC_DEF elec_status elec_surface_mesh(const elec_atoms *atoms, double spacing,
                                       double blobbiness, elec_surface *out,
                                       elec_error *err) {
    double *xyz = NULL, *radius = NULL, largest, reach2;
    float *f = NULL;
    elec__mesh_build b;
    elec__mesh_grid g;
    elec_cells cells;
    elec_status s;
    size_t points;
    if (!out) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "out is NULL");
    memset(out, 0, sizeof *out);
    memset(&b, 0, sizeof b);
    memset(&cells, 0, sizeof cells);
    if (spacing == 0.0) spacing = 0.6;
    if (blobbiness == 0.0) blobbiness = 2.0;
    if (!(spacing > 0.0) || !elec__finite(spacing))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "mesh spacing %g A must be positive",
                          spacing);
    if (!(blobbiness > 0.0) || !(blobbiness <= 100.0))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "blobbiness %g: use (0, 100]",
                          blobbiness);
    if ((s = elec__surface_atoms(atoms, &xyz, &radius, &largest, err)) != ELEC_OK) return s;
    if (!(largest > 0.0)) {
        s = elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                       "every atom radius is zero: no surface to mesh");
        goto cleanup;
    }
    /* an atom adds under 1e-4 beyond sqrt(1 + ln(1e4) / s) radii */
    reach2 = 1.0 + 9.21034 / blobbiness;
    if ((s = elec__mesh_lattice(xyz, atoms->count, largest, reach2, spacing, &g, err)) !=
        ELEC_OK)
        goto cleanup;
    points = (size_t)g.n[0] * (size_t)g.n[1] * (size_t)g.n[2];
    f = (float *)ELEC_MALLOC(points * sizeof *f);
    if (!f) {
        s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for %zu lattice points", points);
        goto cleanup;
    }
    g.f = f;
    memset(f, 0, points * sizeof *f);
    elec__mesh_density(&g, f, xyz, radius, atoms->count, blobbiness, reach2);
    if (!elec__mesh_march(&b, &g)) {
        s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for the mesh (%zu vertices)",
                       b.vertices);
        goto cleanup;
    }
    if (b.triangle_count == 0) {
        s = elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                       "the mesh is empty: spacing %g A is too coarse for these atoms",
                       spacing);
        goto cleanup;
    }
    if ((s = elec__surface_cells(xyz, atoms->count, 0.0, largest * sqrt(reach2), &cells,
                                 err)) != ELEC_OK)
        goto cleanup;
    out->normal = (double *)ELEC_MALLOC((3 * b.vertices + 1) * sizeof(double));
    if (!out->normal) {
        s = elec__fail(err, ELEC_ERR_NO_MEMORY, 0, "no memory for %zu normals", b.vertices);
        goto cleanup;
    }
    elec__mesh_normals(&cells, xyz, radius, blobbiness, reach2, b.xyz, b.vertices,
                       out->normal);
    out->count = b.vertices;
    out->xyz = b.xyz;
    out->triangle_count = b.triangle_count;
    out->triangles = b.triangles;
    b.xyz = NULL;
    b.triangles = NULL;
    elec__ok(err);
cleanup:
    if (s != ELEC_OK) elec_surface_free(out);
    elec_cells_free(&cells);
    ELEC_FREE(b.edges.key);
    ELEC_FREE(b.edges.vertex);
    ELEC_FREE(b.xyz);
    ELEC_FREE(b.triangles);
    ELEC_FREE(xyz);
    ELEC_FREE(radius);
    ELEC_FREE(f);
    return s;
}


/* ------------------------------------------------ >>slab sub-lattices for distributed maps */

ELEC_DEF elec_status elec_slab_partition(int planes, int ranks, int rank, int *k0,
                                         int *k1, elec_error *err) {
    if (!k0 || !k1) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "k0 or k1 is NULL");
    if (planes < 1)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "%d planes: a map has at least 1",
                          planes);
    if (ranks < 1)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "%d ranks: at least 1", ranks);
    if (rank < 0 || rank >= ranks)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "rank %d is not one of 0 .. %d",
                          rank, ranks - 1);
    /* in long long: planes x ranks may pass an int */
    *k0 = (int)((long long)rank * planes / ranks);
    *k1 = (int)((long long)(rank + 1) * planes / ranks);
    elec__ok(err);
    return ELEC_OK;
}

/* The lattice checked and the slab 0 <= k0 < k1 <= nz of it. */
static elec_status elec__slab_check(const elec_lattice *lattice, int k0, int k1,
                                    elec_error *err) {
    elec_status s = elec_lattice_check(lattice, err);
    if (s != ELEC_OK) return s;
    if (k0 < 0 || k1 <= k0 || k1 > lattice->dims[2])
        /* k0 and k1 as given (k1 - 1 overflowed at INT_MIN, and read 0 ..
           6 for k1 = 7 on 6 planes, a valid-looking range: an audit) */
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "slab k0 = %d, k1 = %d: a slab is 0 <= k0 < k1 <= %d, the "
                          "lattice's z count (planes k0 .. k1 - 1)", k0, k1, lattice->dims[2]);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_lattice_slab(const elec_lattice *lattice, int k0, int k1,
                                       elec_lattice *slab, elec_error *err) {
    elec_status s;
    if (!slab) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "slab is NULL");
    if ((s = elec__slab_check(lattice, k0, k1, err)) != ELEC_OK) return s;
    *slab = *lattice;
    slab->dims[2] = k1 - k0;
    slab->origin[2] = lattice->origin[2] + k0 * lattice->spacing[2];
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_atoms_halo(const elec_atoms *atoms, const elec_lattice *lattice,
                                     int k0, int k1, double cutoff, size_t *index,
                                     size_t *count, elec_error *err) {
    double lo[3], hi[3], reach2;
    size_t i, n = 0;
    int axis;
    elec_status s;
    if (!index || !count)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "index or count is NULL");
    if ((s = elec_atoms_check(atoms, 0, err)) != ELEC_OK) return s;
    if ((s = elec__slab_check(lattice, k0, k1, err)) != ELEC_OK) return s;
    if (!(cutoff >= 0.0) || !elec__finite(cutoff))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "halo cutoff %g A must be finite and not negative (0: every atom)",
                          cutoff);
    /* the box of the slab's points, the corner points as elec_lattice_point
       places them */
    for (axis = 0; axis < 3; axis++) {
        int first = axis == 2 ? k0 : 0, last = axis == 2 ? k1 - 1 : lattice->dims[axis] - 1;
        lo[axis] = lattice->origin[axis] + first * lattice->spacing[axis];
        hi[axis] = lattice->origin[axis] + last * lattice->spacing[axis];
    }
    reach2 = cutoff * (1.0 + 1e-9) * cutoff * (1.0 + 1e-9);
    for (i = 0; i < atoms->count; i++) {
        double x[3], d2 = 0.0;
        if (cutoff > 0.0) {
            elec_atoms_get(atoms, i, x, NULL, NULL);
            for (axis = 0; axis < 3; axis++) {
                double d = x[axis] < lo[axis] ? lo[axis] - x[axis]
                         : x[axis] > hi[axis] ? x[axis] - hi[axis]
                                              : 0.0;
                d2 += d * d;
            }
            if (d2 >= reach2) continue;
        }
        index[n++] = i;
    }
    *count = n;
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_atoms_gather(const elec_atoms *atoms, const size_t *index,
                                       size_t count, double *xyz, double *charge,
                                       double *radius, elec_error *err) {
    size_t i;
    if (!atoms) return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "atoms is NULL");
    if (count && (!index || !xyz || !charge))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "index, xyz or charge is NULL");
    /* the view's arrays (elec_atoms_check would read every atom: the halo
       it gathers from has) */
    if (count && (!atoms->x || !atoms->y || !atoms->z || !atoms->charge))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "the atoms' view has no positions or charges");
    for (i = 0; i < count; i++)
        if (index[i] >= atoms->count)
            return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                              "index[%zu] = %zu is past the %zu atoms", i, index[i],
                              atoms->count);
    for (i = 0; i < count; i++) {
        double r;
        elec_atoms_get(atoms, index[i], xyz + 3 * i, charge + i, &r);
        if (radius) radius[i] = r;
    }
    elec__ok(err);
    return ELEC_OK;
}

ELEC_DEF elec_status elec_mrc_header(const elec_lattice *lattice,
                                     const elec_map_stats *stats, const char *comment,
                                     unsigned char header[1024], elec_error *err) {
    elec_status s = elec_lattice_check(lattice, err);
    if (s != ELEC_OK) return s;
    if (!stats || !header)
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0, "stats or header is NULL");
    if ((s = elec__mrc_lattice_fits(lattice, err)) != ELEC_OK) return s;
    if (!(fabs(stats->min) <= FLT_MAX) || !(fabs(stats->max) <= FLT_MAX) ||
        !(fabs(stats->mean) <= FLT_MAX) || !(stats->rms >= 0.0 && stats->rms <= FLT_MAX))
        return elec__fail(err, ELEC_ERR_INVALID_ARG, 0,
                          "MRC statistics min %g max %g mean %g rms %g: each finite within "
                          "float's range (rms not negative)", stats->min, stats->max,
                          stats->mean, stats->rms);
    elec__mrc_header_bytes(header, lattice, stats, comment);
    elec__ok(err);
    return ELEC_OK;
}

#ifdef __cplusplus
}
#endif
#endif /* ELEC_IMPLEMENTATION_DONE */
#endif /* ELEC_IMPLEMENTATION */

/*
   elec, the version in ELEC_VERSION_MAJOR/MINOR/PATCH (">>version" at the
   top).  MIT licence (see LICENSE):
   Copyright (c) 2026 the elec developers.
*/
