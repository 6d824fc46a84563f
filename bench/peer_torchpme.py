#!/usr/bin/env python3
"""Peer benchmark: torch-pme's mesh (reciprocal-space) Ewald on the GPU.

Times torch-pme's PMECalculator (and its P3MCalculator) on the synthetic systems
that elec's own SPME benchmark uses, so the two can be read side by side:

  dhfr   23,558 atoms, 62.23 A cube,                    grid 64^3
  apoa1  92,224 atoms, 108.86 x 108.86 x 77.76 A box,   grid 112 x 112 x 80
  1m     1,000,000 atoms, (1e6 / 0.1)^(1/3) A cube,     grid 216^3

All at 0.1 atoms/A^3, positions uniform in the box, charges uniform in [-1, 1]
made neutral by subtracting their mean, fixed seed.  The ApoA1-size and 1M grids
follow elec's own rule (ceil(edge / 1 A), raised to the next size whose only
prime factors are 2, 3, 5, 7: elec_fft_friendly_size); DHFR uses the classic
64^3.  Interpolation order 4 (4 nodes per axis, cubic) throughout.

What is timed: one evaluation of the mesh part only (charge spreading, FFT,
influence function, inverse FFT, back-interpolation, torch-pme's self term),
energy, and energy + forces (forces = -dE/dr by autograd, the way torch-pme
provides them).

Two torch-pme methods are run, both with 4 nodes per axis:
  pme  PMECalculator: classic particle mesh Ewald with Lagrange interpolation
       and the bare Ewald kernel (no B-spline moduli), i.e. not smooth PME;
  p3m  P3MCalculator: B-spline charge assignment of order 4 with an optimised
       influence function, the closer analogue of elec's SPME in accuracy.
For the DHFR-size system the energy and forces of each are compared with a
direct (structure-factor) reciprocal sum in float64 at the same alpha, so that
times can be read together with the accuracy they buy.  Data stay on the device; warm-up iterations first, then each
iteration is bracketed by CUDA events and the median is reported in
microseconds.  No real-space (pair) part: the neighbour list passed in is empty.

Usage on the GPU machine (torch present, torch-pme wheel in .whl/):

  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \\
      --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
  python3 bench/peer_torchpme.py

Local smoke test without a GPU:  python3 bench/peer_torchpme.py --device cpu --small
"""

import argparse
import math
import platform
import statistics
import sys
import time

# ---------------------------------------------------------------------------
# Parameter conventions
#
# elec (like most MD codes) splits 1/r with the Ewald coefficient alpha:
#   1/r = erfc(alpha r)/r + erf(alpha r)/r,
#   reciprocal kernel 4 pi exp(-k^2 / (4 alpha^2)) / k^2.
# torch-pme's CoulombPotential takes a "smearing" sigma instead (the width of
# the Gaussian charge clouds); in its source the long-range part is
#   erf(r / (sqrt(2) sigma)) / r,  kernel 4 pi exp(-sigma^2 k^2 / 2) / k^2.
# Matching the two:  alpha = 1 / (sqrt(2) sigma),  i.e.  sigma = 1 / (sqrt(2) alpha).
#
# torch-pme's calculators return a per-atom potential V_i already halved for
# double counting, so the energy is E = sum_i q_i V_i.  With prefactor 1.0 the
# units are e^2 / A (Gaussian units); torchpme.prefactors.kcalmol_A = 332.06...
# converts to kcal/mol.  Its mesh part also subtracts the Gaussian self
# interaction (sqrt(2/pi)/sigma per unit charge, halved: -alpha/sqrt(pi) sum q^2)
# and a neutralising-background term proportional to the net charge (zero here
# up to rounding).  So "torch-pme k-space energy" = E_recip + E_self of the
# usual Ewald split.
# ---------------------------------------------------------------------------

CUTOFF = 9.0        # real-space cutoff that alpha is chosen for (A)
TOLERANCE = 1e-5    # erfc(alpha rc) / rc <= TOLERANCE
DENSITY = 0.1       # atoms / A^3
ORDER = 4           # interpolation nodes per axis (cubic)
SEED = 20261122
MADELUNG_NACL = 1.747564594633182


def ewald_alpha(cutoff, tolerance):
    """Smallest alpha with erfc(alpha * cutoff) / cutoff <= tolerance (bisection)."""
    lo, hi = 0.0, 1.0
    while math.erfc(hi * cutoff) / cutoff > tolerance:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if math.erfc(mid * cutoff) / cutoff > tolerance:
            lo = mid
        else:
            hi = mid
    return hi


def fft_friendly(minimum):
    """Smallest n >= minimum whose prime factors are all in {2, 3, 5, 7}."""
    n = max(1, minimum)
    while True:
        rest = n
        for f in (2, 3, 5, 7):
            while rest % f == 0:
                rest //= f
        if rest == 1:
            return n
        n += 1


def grid_for(box, spacing=1.0):
    return tuple(fft_friendly(math.ceil(edge / spacing - 1e-9)) for edge in box)


def systems(small):
    cube_1m = (1e6 / DENSITY) ** (1.0 / 3.0)
    out = [
        ("dhfr", 23558, (62.23, 62.23, 62.23), (64, 64, 64)),
        ("apoa1", 92224, (108.86, 108.86, 77.76), None),
        ("1m", 1000000, (cube_1m, cube_1m, cube_1m), None),
    ]
    out = [(n, a, b, g if g else grid_for(b)) for n, a, b, g in out]
    return out[:1] if small else out


# ---------------------------------------------------------------------------
# Forcing a given mesh.  torch-pme picks its mesh itself from `mesh_spacing`:
# n = 2^ceil(log2(2 L / mesh_spacing + 1)) along each axis (powers of two only,
# torchpme.lib.kvectors.get_ns_mesh).  To run on exactly elec's grids we replace
# the name `get_ns_mesh` that torchpme.calculators.pme looks up (P3M inherits the
# same _compute_kspace) with one returning the wanted sizes.  The rest of
# torch-pme (spreading, FFT, kernel, interpolation) works for any sizes.
# With --native-grid this is skipped and torch-pme's own power-of-two choice
# for mesh_spacing = 2 x (1 A) is used instead.
# ---------------------------------------------------------------------------
_FORCED = {"ns": None}


def install_grid_override(torchpme_pme_module):
    original = torchpme_pme_module.get_ns_mesh

    def get_ns_mesh(cell, mesh_spacing):
        if _FORCED["ns"] is not None:
            return _FORCED["ns"]
        return original(cell, mesh_spacing)

    torchpme_pme_module.get_ns_mesh = get_ns_mesh
    return original


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    ap.add_argument("--small", action="store_true",
                    help="only the rock-salt check and the DHFR-size system, few iterations")
    ap.add_argument("--dtypes", default="float32,float64",
                    help="comma list of float32,float64 (default both)")
    ap.add_argument("--methods", default="pme,p3m",
                    help="comma list of pme,p3m (default both; pme is torch-pme's "
                         "PMECalculator, Lagrange interpolation)")
    ap.add_argument("--warmup", type=int, default=None, help="warm-up iterations (default 5; 1 with --small)")
    ap.add_argument("--iters", type=int, default=None, help="timed iterations (default 30; 3 with --small)")
    ap.add_argument("--native-grid", action="store_true",
                    help="let torch-pme choose its own power-of-two mesh (mesh_spacing 2 A)")
    ap.add_argument("--no-accuracy", action="store_true",
                    help="skip the force-accuracy check against a direct reciprocal sum (DHFR size)")
    args = ap.parse_args()

    warmup = args.warmup if args.warmup is not None else (1 if args.small else 5)
    iters = args.iters if args.iters is not None else (3 if args.small else 30)

    try:
        import numpy as np
        import torch
        import torchpme
        import torchpme.calculators.pme as tp_pme
    except ImportError as e:
        print(f"error: cannot import a needed package: {e}", file=sys.stderr)
        print("install torch-pme with: python3 -m pip install -q --no-index --no-deps "
              "--no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl "
              "&& export PYTHONPATH=/tmp/site", file=sys.stderr)
        return 1

    if args.device.startswith("cuda"):
        if not torch.cuda.is_available():
            print("error: CUDA is not available to torch "
                  f"(torch {torch.__version__}, built for CUDA {torch.version.cuda}); "
                  "use --device cpu --small for a CPU smoke test", file=sys.stderr)
            return 1
        device = torch.device(args.device)
        dev_name = torch.cuda.get_device_name(device)
    elif args.device == "cpu":
        device = torch.device("cpu")
        dev_name = f"CPU ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"
    else:
        print(f"error: unknown device {args.device!r}", file=sys.stderr)
        return 1

    dtypes = []
    for name in args.dtypes.split(","):
        name = name.strip()
        if name not in ("float32", "float64"):
            print(f"error: unknown dtype {name!r}", file=sys.stderr)
            return 1
        dtypes.append(getattr(torch, name))
    methods = [m.strip() for m in args.methods.split(",")]
    for m in methods:
        if m not in ("pme", "p3m"):
            print(f"error: unknown method {m!r}", file=sys.stderr)
            return 1

    install_grid_override(tp_pme)

    alpha = ewald_alpha(CUTOFF, TOLERANCE)
    sigma = 1.0 / (math.sqrt(2.0) * alpha)
    header = (f"torch-pme {torchpme.__version__} | torch {torch.__version__} "
              f"(CUDA {torch.version.cuda}) | numpy {np.__version__} | Python "
              f"{platform.python_version()} | device: {dev_name}")
    print(header)
    print(f"alpha = {alpha:.10f} 1/A (erfc(alpha*{CUTOFF:g})/{CUTOFF:g} <= {TOLERANCE:g}, "
          f"bisection); torch-pme smearing sigma = 1/(sqrt(2) alpha) = {sigma:.10f} A")
    print(f"interpolation order {ORDER}; grids forced to elec's sizes"
          if not args.native_grid else
          f"interpolation order {ORDER}; torch-pme native power-of-two grids (mesh_spacing 2 A)")
    print()

    def make_calc(method, smearing, dtype, spacing=2.0):
        pot = torchpme.CoulombPotential(smearing=smearing)
        if method == "pme":
            calc = torchpme.PMECalculator(pot, mesh_spacing=spacing, interpolation_nodes=ORDER)
        else:
            calc = torchpme.P3MCalculator(pot, mesh_spacing=spacing, interpolation_nodes=ORDER)
        return calc.to(device=device, dtype=dtype)

    def empty_nl(dtype):
        return (torch.zeros((0, 2), dtype=torch.long, device=device),
                torch.zeros((0,), dtype=dtype, device=device))

    def kspace_energy(calc, q, cell, pos, nl):
        pot = calc(charges=q, cell=cell, positions=pos,
                   neighbor_indices=nl[0], neighbor_distances=nl[1])
        return (q * pot).sum()

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    # ---------------------------------------------------------------- sanity
    ok = sanity_rock_salt(torch, np, torchpme, device, make_calc, empty_nl, kspace_energy)

    # -------------------------------------------------------------- timings
    rows = []
    acc_lines = []
    for name, natoms, box, grid in systems(args.small):
        rng = np.random.default_rng(SEED)
        pos_np = rng.random((natoms, 3)) * np.asarray(box)
        q_np = rng.uniform(-1.0, 1.0, natoms)
        q_np -= q_np.mean()
        if args.native_grid:
            _FORCED["ns"] = None
        ref = None
        for dtype in dtypes:
            pos = torch.tensor(pos_np, dtype=dtype, device=device)
            q = torch.tensor(q_np, dtype=dtype, device=device).reshape(-1, 1)
            cell = torch.diag(torch.tensor(box, dtype=dtype, device=device))
            nl = empty_nl(dtype)
            if not args.native_grid:
                _FORCED["ns"] = torch.tensor(grid, dtype=torch.long, device=device)
            used_grid = tuple(int(n) for n in tp_pme.get_ns_mesh(cell, 2.0))
            for method in methods:
                try:
                    calc = make_calc(method, sigma, dtype)
                    pos_g = pos.clone().requires_grad_(True)

                    def step_energy():
                        with torch.no_grad():
                            return kspace_energy(calc, q, cell, pos, nl)

                    def step_forces():
                        e = kspace_energy(calc, q, cell, pos_g, nl)
                        (g,) = torch.autograd.grad(e, pos_g)
                        return e, -g

                    t_e = time_it(torch, device, step_energy, warmup, iters)
                    t_f = time_it(torch, device, step_forces, warmup, iters)
                    e, f = step_forces()
                    sync()
                    energy = float(e.detach())
                    if not args.no_accuracy and name == "dhfr":
                        if ref is None:
                            t0 = time.perf_counter()
                            ref = direct_reciprocal(torch, pos_np, q_np, box, alpha, device)
                            acc_lines.append(
                                f"reference (direct reciprocal sum, float64, {ref[2]} k-vectors, "
                                f"{time.perf_counter() - t0:.1f} s): E_recip + E_self = {ref[0]:.8f} e^2/A")
                        fe = f.detach().to(torch.float64).cpu().numpy()
                        rms_ref = math.sqrt(float(np.mean(np.sum(ref[1] ** 2, axis=1))))
                        rms_err = math.sqrt(float(np.mean(np.sum((fe - ref[1]) ** 2, axis=1))))
                        acc_lines.append(
                            f"  {method:4s} {str(dtype).replace('torch.', ''):8s} E = {energy:.8f} "
                            f"(rel. err {abs(energy - ref[0]) / abs(ref[0]):.2e}), "
                            f"RMS force err / RMS force = {rms_err / rms_ref:.2e}")
                    rows.append((name, natoms, "x".join(map(str, used_grid)), ORDER, alpha,
                                 method, str(dtype).replace("torch.", ""), t_e, t_f, energy))
                    print(f"{name:6s} {method:4s} {str(dtype).replace('torch.', ''):8s} grid "
                          f"{'x'.join(map(str, used_grid))}: energy {energy:.6f} e^2/A, "
                          f"E {t_e:.1f} us, E+F {t_f:.1f} us (median of {iters})", flush=True)
                    del calc, pos_g, e, f
                except torch.cuda.OutOfMemoryError as exc:  # type: ignore[attr-defined]
                    print(f"{name} {method} {dtype}: out of GPU memory ({exc})", flush=True)
                    rows.append((name, natoms, "x".join(map(str, used_grid)), ORDER, alpha,
                                 method, str(dtype).replace("torch.", ""), float("nan"),
                                 float("nan"), float("nan")))
                if device.type == "cuda":
                    torch.cuda.empty_cache()
        _FORCED["ns"] = None

    if acc_lines:
        print()
        print("Accuracy, DHFR-size system (mesh part vs direct reciprocal sum at the same alpha):")
        for line in acc_lines:
            print(line)

    print()
    print(header)
    print(f"alpha = {alpha:.6f} 1/A (rc {CUTOFF:g} A, tol {TOLERANCE:g}); sigma = {sigma:.6f} A; "
          f"times: median per evaluation, mesh part only, {warmup} warm-up + {iters} timed; "
          "E = energy, E+F = energy + autograd forces")
    fmt = "{:<6} {:>8} {:>12} {:>5} {:>9} {:>6} {:>8} {:>12} {:>12}"
    print(fmt.format("system", "atoms", "grid", "order", "alpha", "method", "dtype",
                     "E (us)", "E+F (us)"))
    for r in rows:
        print(fmt.format(r[0], r[1], r[2], r[3], f"{r[4]:.6f}", r[5], r[6],
                         f"{r[7]:.1f}", f"{r[8]:.1f}"))
    return 0 if ok else 2


def time_it(torch, device, fn, warmup, iters):
    """Median wall time per call in microseconds (CUDA events on the GPU)."""
    for _ in range(warmup):
        fn()
    times = []
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        for _ in range(iters):
            start = torch.cuda.Event(enable_timing=True)
            stop = torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(start.elapsed_time(stop) * 1e3)
    else:
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def direct_reciprocal(torch, pos_np, q_np, box, alpha, device, cutoff_factor=1e-9):
    """E_recip + E_self and reciprocal forces by the plain structure-factor sum.

    Orthorhombic box, float64, all k with exp(-k^2/(4 alpha^2)) > cutoff_factor,
    summed over half of k-space (k and -k give the same terms).  Returns
    (energy, forces[N, 3] as numpy, number of k-vectors used).
    """
    dt = torch.float64
    L = torch.tensor(box, dtype=dt, device=device)
    V = float(box[0] * box[1] * box[2])
    kmax = 2.0 * alpha * math.sqrt(-math.log(cutoff_factor))
    nmax = [int(math.ceil(kmax * b / (2.0 * math.pi))) for b in box]
    axes = [torch.arange(-n, n + 1, device=device, dtype=dt) for n in nmax]
    mx, my, mz = torch.meshgrid(*axes, indexing="ij")
    m = torch.stack([mx.flatten(), my.flatten(), mz.flatten()], dim=1)
    # half space: mx > 0, or mx == 0 and my > 0, or mx == my == 0 and mz > 0
    half = (m[:, 0] > 0) | ((m[:, 0] == 0) & (m[:, 1] > 0)) | \
           ((m[:, 0] == 0) & (m[:, 1] == 0) & (m[:, 2] > 0))
    k = (2.0 * math.pi) * m[half] / L
    k2 = (k * k).sum(dim=1)
    keep = k2 <= kmax * kmax
    k, k2 = k[keep], k2[keep]
    green = 4.0 * math.pi * torch.exp(-k2 / (4.0 * alpha * alpha)) / k2
    pos = torch.tensor(pos_np, dtype=dt, device=device)
    q = torch.tensor(q_np, dtype=dt, device=device)
    forces = torch.zeros_like(pos)
    energy = 0.0
    chunk = max(1, int(2e8 // max(1, len(q_np))))
    for s in range(0, k.shape[0], chunk):
        kc, gc = k[s:s + chunk], green[s:s + chunk]
        arg = kc @ pos.T                       # [K, N]
        c, sn = torch.cos(arg), torch.sin(arg)
        C, S = c @ q, sn @ q                   # structure factor, [K]
        # full sphere: E = (1/(2V)) sum_k G |S(k)|^2 = (1/V) sum_half G |S|^2
        energy += float((gc * (C * C + S * S)).sum()) / V
        # F_i = (2 q_i / V) sum_half G k (sin(k.r_i) C - cos(k.r_i) S)
        w = gc[:, None] * (sn * C[:, None] - c * S[:, None])   # [K, N]
        forces += (w.T @ kc) * (2.0 / V) * q[:, None]
        del arg, c, sn, w
    energy -= alpha / math.sqrt(math.pi) * float((q * q).sum())
    return energy, forces.cpu().numpy(), int(k.shape[0])


def sanity_rock_salt(torch, np, torchpme, device, make_calc, empty_nl, kspace_energy):
    """Rock salt, 2x2x2 conventional cells (64 ions), a = 5.64 A.

    The total Ewald energy must be -M / r0 per ion pair (32 pairs), r0 = a/2.
    torch-pme gives the mesh part (E_recip + E_self); the real-space part is
    added here by a direct image sum, and torch-pme's exact EwaldCalculator is
    shown as a second opinion.
    """
    a = 5.64
    L = 2 * a
    base = [(0, 0, 0), (0.5, 0.5, 0), (0.5, 0, 0.5), (0, 0.5, 0.5)]
    pos, q = [], []
    for i in range(2):
        for j in range(2):
            for kk in range(2):
                for b in base:
                    for shift, charge in ((0.0, 1.0), (0.5, -1.0)):  # Na at b, Cl at b + a/2 x
                        p = ((i + b[0] + shift) * a, (j + b[1]) * a, (kk + b[2]) * a)
                        pos.append(tuple(c % L for c in p))
                        q.append(charge)
    pos_np, q_np = np.asarray(pos), np.asarray(q)
    n = len(q)
    r0 = a / 2
    expected = -(n // 2) * MADELUNG_NACL / r0
    rc = 0.5 * L                            # cutoff at most half the box
    alpha = ewald_alpha(rc, TOLERANCE)
    sigma = 1.0 / (math.sqrt(2.0) * alpha)

    # real space by a direct sum over images (converged: erfc(alpha * 2L) ~ 0)
    real = 0.0
    rng = range(-2, 3)
    for nx in rng:
        for ny in rng:
            for nz in rng:
                shift = np.array([nx, ny, nz]) * L
                d = pos_np[:, None, :] - pos_np[None, :, :] + shift
                r = np.sqrt((d * d).sum(-1))
                mask = r > 1e-9
                rr = np.where(mask, r, 1.0)
                erfc_v = np.vectorize(math.erfc)(alpha * rr)
                real += 0.5 * float((q_np[:, None] * q_np[None, :] * np.where(mask, erfc_v / rr, 0.0)).sum())
    self_term = -alpha / math.sqrt(math.pi) * float((q_np ** 2).sum())

    print(f"Sanity check: rock salt 2x2x2 conventional cells, a = {a} A, {n} ions (+-1 e), "
          f"box {L} A; alpha = {alpha:.6f} 1/A (rc {rc} A, tol {TOLERANCE:g}), sigma = {sigma:.6f} A")
    print(f"  expected total Ewald energy  -(N/2) M / r0 = {expected:.8f} e^2/A "
          f"(M = {MADELUNG_NACL}, r0 = a/2 = {r0} A)")
    print(f"  real-space part (direct image sum, this script) = {real:.8f}")
    print(f"  self term -alpha/sqrt(pi) sum q^2 (this script) = {self_term:.8f}")
    dtype = torch.float64
    posd = torch.tensor(pos_np, dtype=dtype, device=device)
    qd = torch.tensor(q_np, dtype=dtype, device=device).reshape(-1, 1)
    cell = torch.eye(3, dtype=dtype, device=device) * L
    nl = empty_nl(dtype)
    good = True
    grid = (32, 32, 32)
    _FORCED["ns"] = torch.tensor(grid, dtype=torch.long, device=device)
    for method in ("pme", "p3m"):
        calc = make_calc(method, sigma, dtype)
        with torch.no_grad():
            ek = float(kspace_energy(calc, qd, cell, posd, nl))
        total = ek + real
        rel = abs(total - expected) / abs(expected)
        good &= rel < 1e-4
        print(f"  torch-pme {method.upper()} k-space energy (grid {'x'.join(map(str, grid))}, order {ORDER}) "
              f"= {ek:.8f}  [= E_recip + E_self; E_recip alone = {ek - self_term:.8f}]")
        print(f"    + real = {total:.8f}; relative error vs expected {rel:.2e} "
              f"{'OK' if rel < 1e-4 else 'MISMATCH'}")
    _FORCED["ns"] = None
    try:
        ew = torchpme.EwaldCalculator(torchpme.CoulombPotential(smearing=sigma),
                                      lr_wavelength=0.5 * sigma).to(device=device, dtype=dtype)
        with torch.no_grad():
            ee = float(kspace_energy(ew, qd, cell, posd, nl))
        print(f"  torch-pme EwaldCalculator k-space energy (exact sum) = {ee:.8f}; "
              f"+ real = {ee + real:.8f} (rel. err {abs(ee + real - expected) / abs(expected):.2e})")
    except Exception as exc:  # a second opinion only
        print(f"  torch-pme EwaldCalculator failed: {exc}")
    print("  Units: e^2/A (prefactor 1.0; multiply by torchpme.prefactors.kcalmol_A = 332.0637 "
          "for kcal/mol). The k-space energy includes the self term; the background term is "
          "zero for a neutral cell.")
    print()
    return good


if __name__ == "__main__":
    sys.exit(main())
