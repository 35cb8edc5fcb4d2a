"""Eager random numbers against JAX (eager) and NumPy's ``Generator``.

Run: python bench/bench_random.py [--sizes 1000 1000000] [--rounds N]
(jax comes from the `bench` extra: pip install -e ".[bench]"). On a shared machine, prefix
``OMP_NUM_THREADS=1`` and compare the ratios, not the absolute times.

Cases: ``normal``, ``uniform`` (float64) and ``bits`` (uint32) of one key, without jit, each call
waiting for its result. JAX runs with ``jax_enable_x64`` so both draw the same float64 values
from the same threefry bits (funcgrad's draws equal jax's bit for bit); NumPy's ``Generator``
(PCG64) draws other numbers and is the floor for code that needs random numbers, not JAX's.
The last column is funcgrad's time divided by the peer's (below 1: funcgrad is faster).

Why no host generator for small draws (issue 30 asked whether one would be honest): an eager draw
is one compiled program call (NOTE: [eager sampler programs] in funcgrad/random/_eager.py), and
at 1000 draws that call's fixed cost -- jaxlib's dispatch and XLA:CPU's executable launch, about
8 us on an idle core, against 3-4 us for all of NumPy's ``Generator.random`` -- is the whole gap.
NumPy's bit generators could close it only for key implementations whose bits need not match
JAX's (``rbg``, ``unsafe_rbg``: JAX documents their streams as backend-dependent), and only if
``jit(f)(key) == f(key)`` still held: the compiled path would then have to produce NumPy's bits
too. XLA's ``RngBitGenerator`` (what ``rbg`` draws with, JAX's bits on CPU) is Philox4x32 in
XLA's own layout and NumPy's ``Philox`` is Philox4x64, so the two paths would differ; making the
compiled path call back into NumPy instead would turn ``rbg`` -- the fast device generator --
into a host round trip under ``jit`` and give up JAX's ``rbg`` bits. So eager draws stay
threefry's (or the key implementation's) bits on XLA, as JAX's do, and the small-size floor is
the dispatch cost, not the generator.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # this checkout
from _timing import block, median_time, print_table  # noqa: E402


def _funcgrad_cases(n):
    from funcgrad import random

    key = random.key(0)
    return {
        "normal": lambda: random.normal(key, (n,)),
        "uniform": lambda: random.uniform(key, (n,)),
        "bits": lambda: random.bits(key, (n,)),
    }


def _jax_cases(n):
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    key = jax.random.key(0)
    return {
        "normal": lambda: jax.random.normal(key, (n,)),
        "uniform": lambda: jax.random.uniform(key, (n,)),
        "bits": lambda: jax.random.bits(key, (n,)),
    }


def _numpy_cases(n):
    rng = np.random.default_rng(0)
    return {
        "normal": lambda: rng.standard_normal(n),
        "uniform": lambda: rng.random(n),
        "bits": lambda: rng.integers(0, 2**32, n, dtype=np.uint32),
    }


_CASES = {"funcgrad": _funcgrad_cases, "jax (eager, x64)": _jax_cases, "numpy Generator": _numpy_cases}


def _worker(lib: str, sizes) -> None:
    """One library's medians (seconds) per (case, size), as JSON on stdout. Each library runs in its
    own process: importing jax in funcgrad's process switches funcgrad's native dispatch route off
    (NOTE: [native dispatch]), which would time funcgrad's slower fallback route."""
    out = {}
    for n in sizes:
        cases = _CASES[lib](n)
        if cases is None:
            continue
        repeats = 200 if n <= 10_000 else 20
        for case in ("normal", "uniform", "bits"):
            fn = cases[case]
            out[f"{case} ({n:,})"] = median_time(lambda fn=fn: block(fn()), warmup=5, repeats=repeats)
    print(json.dumps(out))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 1_000_000])
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="round-robin rounds (a process per library each); the best median is kept",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return _worker(args.worker, args.sizes)
    best: dict = {}
    for _ in range(args.rounds):
        for lib in _CASES:
            cmd = [
                sys.executable,
                os.path.abspath(__file__),
                "--worker",
                lib,
                "--sizes",
                *map(str, args.sizes),
            ]
            res = subprocess.run(cmd, capture_output=True, text=True, check=True)
            for case, t in json.loads(res.stdout.strip().splitlines()[-1]).items():
                best[(case, lib)] = min(best.get((case, lib), t), t)
    rows = []
    for n in args.sizes:
        for case in ("normal", "uniform", "bits"):
            key = f"{case} ({n:,})"
            rows.extend((key, lib, best.get((key, lib))) for lib in _CASES)
    print_table(f"Eager random numbers (best of {args.rounds} medians per call, a process per library)", rows)


if __name__ == "__main__":
    main()
