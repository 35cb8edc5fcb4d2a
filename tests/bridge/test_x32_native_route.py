"""In 32-bit mode (JAX's default, the ``funcgrad.as_jax`` alias's) jitted calls keep the native
route: jaxlib's x64 state follows funcgrad's mode (``native.follow_x64``, NOTE: [x64 mode]), so
the C++ dispatcher canonicalises NumPy and Python-scalar arguments to 32 bits and keys its
signatures on the mode, as under jax's default. (Every call took the staged route in this mode:
JAX's higher-order guide's per-example gradients, 143 us a call against jax's 25.) The dtypes,
weak types and values below are jax 0.10.2's in its default mode (jax is not imported here: it
would take the native route away)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import funcgrad

ROOT = Path(__file__).resolve().parents[2]

RUNS_IN_X32 = True


_CHECK = """
import warnings
import numpy as np
import funcgrad
funcgrad.config.update("jax_enable_x64", False)
f = funcgrad.jit(lambda a, b: a * b + 1)
cases = [
    # (arguments, result dtype, weak type): jax 0.10.2 with jax_enable_x64=False
    ((np.arange(3.0), np.ones(3)), np.float32, False),  # float64 NumPy -> float32
    ((np.arange(3), np.int64(2)), np.int32, False),  # int64 NumPy -> int32
    ((np.arange(3, dtype=np.float32), 2.0), np.float32, False),  # a weak Python float
    ((3.0, 2), np.float32, True),  # Python scalars: weak float32
    ((funcgrad.numpy.arange(3.0), np.float64(0.5)), np.float32, False),
]
for args, dtype, weak in cases:
    before = f._native_calls
    for _ in range(3):  # a miss, then cached calls
        out = f(*args)
        assert out.dtype == dtype and out.weak_type == weak, (args, out.dtype, out.weak_type)
        want = np.asarray(args[0], np.float64) * np.asarray(args[1], np.float64) + 1
        np.testing.assert_allclose(out, want, rtol=1e-6)
    assert f._native_calls == before + 3, ("the native route was not taken", args)
with warnings.catch_warnings():
    warnings.simplefilter("ignore", RuntimeWarning)  # (the cast's overflow, as NumPy's)
    assert np.isinf(np.asarray(f(np.array([1e300]), np.ones(1)))).all()  # canonicalised, as jax
print("ok")
"""


def test_32_bit_calls_take_the_native_route_with_jaxs_argument_types():
    # (a fresh process: jax's config, which takes the native route away, is loaded in this one
    # once any oracle test module is collected)
    proc = subprocess.run(
        [sys.executable, "-c", _CHECK],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), proc.stderr[-3000:]


def test_switching_the_mode_back_gives_64_bit_results_again(x32):
    f = funcgrad.jit(lambda a: a + 1)
    assert f(np.arange(2.0)).dtype == np.float32
    funcgrad.config.update("jax_enable_x64", True)
    try:
        assert f(np.arange(2.0)).dtype == np.float64
        assert f(np.arange(2)).dtype == np.int64
    finally:
        funcgrad.config.update("jax_enable_x64", False)
    assert f(np.arange(2.0)).dtype == np.float32
