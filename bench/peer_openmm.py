#!/usr/bin/env python3
"""Peer benchmark: OpenMM's PME beside elec, on the same GPU, atoms and charges.

elec's own benchmark writes the systems (bench_spme --peer DIR, which `make
bench-peer` runs first): the DHFR-size (23,558 atoms, 62.23 A cube, grid 64^3)
and ApoA1-size (92,224 atoms, 108.86 x 108.86 x 77.76 A, grid at 1 A) random
neutral systems of bench/bench_spme.cu, as the float coordinates and charges
elec's GPU takes, with the alpha (0.3077 /A), grid and cutoff (9 A) elec uses;
the exact Ewald forces of 1000 DHFR atoms at those positions (elec's CPU
exact sum, tolerance 1e-9); and elec's rows (SPME at orders 4 and 5, periodic
MSM: microseconds per evaluation, plain and from a CUDA graph, and the force
error against the exact sum).

OpenMM side: a NonbondedForce with PME, cutoff 9 A, setPMEParameters with
elec's alpha and grid (OpenMM's PME interpolates at order 5), every
Lennard-Jones term zero (sigma 1 A, epsilon 0), no dispersion correction, the
CUDA platform in single precision.  Timed, after a warm-up:
  step   an MD step: VerletIntegrator with a tiny step (1e-6 ps, masses 1000
         amu, so that the random atoms barely move), forces only, 200 steps
         between two synchronisations, per step;
  eval   forces and energy: context.getState(getForces=True, getEnergy=True),
         which also copies the forces to the host (as elec's rows do not).
Printed per system: both sides' times, the ratio OpenMM / elec (elec SPME
order 5 graph against OpenMM's step; above 1 means elec is faster), and for
DHFR each side's relative RMS force error against the exact sum on the 1000
atoms.

Usage (the GPU machine, wheels in .whl/; make bench-peer does all of it):
  pip install --no-deps --target /tmp/pyd .whl/openmm*.whl
  export PYTHONPATH=/tmp/pyd LD_LIBRARY_PATH=/usr/local/cuda/lib64
  build/bench_spme --peer build/peer && python3 bench/peer_openmm.py build/peer
"""

import math
import os
import statistics
import sys
import time

KCAL_PER_KJ = 1.0 / 4.184
NM_PER_A = 0.1


def read_system(path):
    with open(path) as f:
        head = f.readline().split()
        n = int(head[0])
        box = [float(v) for v in head[1:4]]
        alpha = float(head[4])
        grid = [int(v) for v in head[5:8]]
        cutoff = float(head[8])
        xyz, q = [], []
        for _ in range(n):
            x, y, z, c = (float(v) for v in f.readline().split())
            xyz.append((x, y, z))
            q.append(c)
    return {"n": n, "box": box, "alpha": alpha, "grid": grid, "cutoff": cutoff,
            "xyz": xyz, "q": q}


def read_rows(path):
    rows = {}
    with open(path) as f:
        for line in f:
            name, method, order, full, graph, error = line.split()
            rows[(name, method, int(order))] = (float(full), float(graph), float(error))
    return rows


def read_exact(path):
    exact = []
    with open(path) as f:
        for line in f:
            i, fx, fy, fz = line.split()
            exact.append((int(i), float(fx), float(fy), float(fz)))
    return exact


def openmm_context(system_data, mm, unit):
    n = system_data["n"]
    lx, ly, lz = (v * NM_PER_A for v in system_data["box"])
    system = mm.System()
    system.setDefaultPeriodicBoxVectors(mm.Vec3(lx, 0, 0), mm.Vec3(0, ly, 0), mm.Vec3(0, 0, lz))
    nb = mm.NonbondedForce()
    nb.setNonbondedMethod(mm.NonbondedForce.PME)
    nb.setCutoffDistance(system_data["cutoff"] * NM_PER_A)
    nb.setUseDispersionCorrection(False)
    gx, gy, gz = system_data["grid"]
    nb.setPMEParameters(system_data["alpha"] / NM_PER_A, gx, gy, gz)  # alpha in 1/nm
    for i in range(n):
        system.addParticle(1000.0)
        nb.addParticle(system_data["q"][i], 0.1, 0.0)  # sigma 1 A, epsilon 0
    system.addForce(nb)
    integrator = mm.VerletIntegrator(1e-6)
    platform = mm.Platform.getPlatformByName("CUDA")
    context = mm.Context(system, integrator, platform,
                         {"Precision": "single", "DeviceIndex": "0"})
    context.setPositions([mm.Vec3(x * NM_PER_A, y * NM_PER_A, z * NM_PER_A)
                          for (x, y, z) in system_data["xyz"]])
    return context, integrator, nb


def time_steps(context, integrator, steps=200, repeats=7):
    integrator.step(50)
    context.getState(getPositions=True)  # a copy back: waits for the steps
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        integrator.step(steps)
        context.getState(getPositions=True)
        times.append((time.perf_counter() - t0) / steps * 1e6)
    return statistics.median(times)


def time_evaluations(context, repeats=50):
    for _ in range(5):
        context.getState(getForces=True, getEnergy=True)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        context.getState(getForces=True, getEnergy=True)
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else "build/peer"
    try:
        import openmm as mm
        import openmm.unit as unit
    except ImportError as e:
        print("peer_openmm: OpenMM is not importable (%s): install the wheels of .whl/ "
              "(make bench-peer does); skipped" % e)
        return 0
    rows = read_rows(os.path.join(directory, "elec.txt"))
    print("OpenMM %s beside elec (times in us; elec from bench_spme --peer, OpenMM's CUDA "
          "platform, single precision)" % mm.__version__)
    print("%-6s %7s | %9s %9s %9s %9s %9s | %9s %9s | %7s %7s" % (
        "system", "atoms", "SPME4", "SPME4 gr", "SPME5", "SPME5 gr", "MSM gr",
        "OMM step", "OMM eval", "ratio", "ratio e"))
    errors = None
    for name in ("dhfr", "apoa1"):
        data = read_system(os.path.join(directory, name + ".xyzq"))
        context, integrator, nb = openmm_context(data, mm, unit)
        step = time_steps(context, integrator)
        context.setPositions([mm.Vec3(x * NM_PER_A, y * NM_PER_A, z * NM_PER_A)
                              for (x, y, z) in data["xyz"]])
        evaluation = time_evaluations(context)
        s4, s5, msm = rows[(name, "spme", 4)], rows[(name, "spme", 5)], rows[(name, "msm", 4)]
        print("%-6s %7d | %9.1f %9.1f %9.1f %9.1f %9.1f | %9.1f %9.1f | %7.2f %7.2f" % (
            name, data["n"], s4[0], s4[1], s5[0], s5[1], msm[1], step, evaluation,
            step / s5[1], evaluation / s5[0]))
        if name == "dhfr":
            exact = read_exact(os.path.join(directory, "dhfr_exact.txt"))
            state = context.getState(getForces=True)
            forces = state.getForces().value_in_unit(unit.kilojoule_per_mole / unit.nanometer)
            num = den = 0.0
            for i, fx, fy, fz in exact:
                got = [float(forces[i][a]) * KCAL_PER_KJ * NM_PER_A for a in range(3)]
                for g, e in zip(got, (fx, fy, fz)):
                    num += (g - e) ** 2
                    den += e * e
            errors = (math.sqrt(num / den), s4[2], s5[2], msm[2])
        del context, integrator
    print("ratio: OpenMM's MD step / elec SPME order 5 from a graph; ratio e: OpenMM's "
          "forces+energy evaluation (with the copy to the host) / elec SPME order 5 plain")
    if errors:
        print("DHFR force error against exact Ewald (relative RMS over 1000 atoms, the same "
              "float positions): OpenMM PME %.2e, elec SPME order 4 %.2e, order 5 %.2e, "
              "MSM %.2e" % errors)
    return 0


if __name__ == "__main__":
    sys.exit(main())
