"""Regression: a jitted function whose program holds a constant larger than
``xla_bridge.lowering.HOIST_CONST_ELEMENTS`` (a closed-over array, or ``jacfwd``'s identity
basis) passes it as a leading executable argument. jaxlib's native dispatch needs its per-parameter
lists (shardings, layouts) to cover those arguments too; they did not, and the *second* call
failed with ``std::bad_cast`` or a segmentation fault. Run in a subprocess so a crash is a
failure, not the end of the test session."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# every test here starts processes or runs a whole program: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

SCRIPT = textwrap.dedent(
    """
    import numpy as np
    import funcgrad, funcgrad.numpy as fnp
    from funcgrad.xla_bridge.lowering import HOIST_CONST_ELEMENTS

    n = 2 * HOIST_CONST_ELEMENTS
    A = np.arange(n, dtype=np.float64) / n
    f = funcgrad.jit(lambda x: fnp.sum(A * x))
    for _ in range(3):
        assert float(f(np.ones(n))) == float(np.sum(A))

    m = 100  # hessian's identity basis: m * m > HOIST_CONST_ELEMENTS
    h = funcgrad.jit(funcgrad.hessian(lambda x: fnp.sum(x**3)))
    x = np.linspace(0.0, 1.0, m)
    for _ in range(3):
        np.testing.assert_allclose(h(x), np.diag(6 * x))
    print("ok")
    """
)


def test_jit_with_hoisted_constants_runs_repeatedly():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("ok"), (
        f"exit code {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr[-3000:]}"
    )
