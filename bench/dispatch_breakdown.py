"""Where a jitted call's microseconds go: funcgrad's jitted function against jaxlib's C++
dispatcher it drives, and against jax, in-process (``timeit``, best of 7 repeats).

Run: ``python bench/dispatch_breakdown.py [--rounds N]``. Each library runs in its own subprocess
(importing jax takes over jaxlib's dispatch state, NOTE: [native dispatch]), the libraries taking
turns for ``--rounds`` rounds (default 3); each figure is the minimum over rounds, which a shared,
loaded machine disturbs least. Printed per library, for
``jit(lambda a, b: a * b + 1)`` on 3-element float32 NumPy arrays:

- ``call``: ``f(a, b)``;
- ``call+asarray``: ``np.asarray(f(a, b))``, what ``bench_jit.py``'s dispatch case times;
- funcgrad only: ``native``, the C++ dispatcher alone (no Python wrapper, no Array result), and
  ``native+asarray``, ``np.asarray`` of its raw result (jaxlib's C++ array, read through the buffer
  protocol). The gap between it and ``call+asarray`` is what funcgrad adds per call: its hot path
  and the ``Array`` around the result (both in C where built, NOTE: [array in C]; run with
  ``FUNCGRAD_PURE_PYTHON=1`` to time the Python versions).

Then other call shapes, cache hits of each library's jit: ``static`` (``static_argnums=1``),
``keyword`` (a keyword argument), ``dict`` (a dict argument), ``device-args`` (two device arrays
from an earlier call). The ratio lines divide funcgrad's time by jax's, ``call+asarray`` last.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

_WORKER = """
import json, sys, timeit
import numpy as np
a, b = np.arange(3, dtype=np.float32), np.ones(3, np.float32)
def t(fn, n=20000):
    fn()
    return min(timeit.repeat(fn, number=n, repeat=7)) / n * 1e6
out = {}
if sys.argv[1] == "jax":
    import jax
    jax.config.update("jax_enable_x64", True)
    f = jax.jit(lambda a, b: a * b + 1)
else:
    import funcgrad
    f = funcgrad.jit(lambda a, b: a * b + 1)
    f(a, b)
    native = f._native_plain
    out["native"] = t(lambda: native(a, b))
    out["native+asarray"] = t(lambda: np.asarray(native(a, b)))
out["call"] = t(lambda: f(a, b))
out["call+asarray"] = t(lambda: np.asarray(f(a, b)))
# Other call shapes (cache hits): a static argument, a keyword argument, a dict, device arrays.
jit = jax.jit if sys.argv[1] == "jax" else funcgrad.jit
fs = jit(lambda a, n: a * n, static_argnums=1)
fk = jit(lambda a, b=1.0: a * b)
fd = jit(lambda d: d["x"] * 2)
x = f(a, b)
out["static"] = t(lambda: fs(a, 3))
out["keyword"] = t(lambda: fk(a, b=2.0))
out["dict"] = t(lambda: fd({"x": a}))
out["device-args"] = t(lambda: f(x, x))
print(json.dumps(out))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="turns of each library (minimum taken)")
    rounds = ap.parse_args().rounds
    res: dict = {}
    for _ in range(rounds):
        for lib in ("funcgrad", "jax"):
            proc = subprocess.run([sys.executable, "-c", _WORKER, lib], capture_output=True, text=True)
            if proc.returncode:
                print(f"{lib}: failed\n{proc.stderr[-2000:]}")
                continue
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            best = res.setdefault(lib, got)
            for k, v in got.items():
                best[k] = min(best[k], v)
    for lib, figures in res.items():
        print(lib, "  ".join(f"{k} {v:.2f} us" for k, v in figures.items()))
    if len(res) == 2:
        for case in ("static", "keyword", "dict", "device-args", "call+asarray"):
            print(f"{case} funcgrad/jax: {res['funcgrad'][case] / res['jax'][case]:.2f}x")


if __name__ == "__main__":
    main()
