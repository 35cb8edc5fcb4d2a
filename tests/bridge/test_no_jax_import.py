"""funcgrad never imports jax: jit-compiling and running programs (with jax installed) leaves
``jax`` out of ``sys.modules``; and jit still computes correctly once jax *is* imported (its
config takes over jaxlib's process-wide dispatch state, see NOTE: [native dispatch]).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

# every test here starts processes or runs a whole program: slow tier (pyproject's marker).
pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_py(code: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_jit_programs_do_not_import_jax():
    out = run_py(
        """
        import json, sys
        import numpy as np
        import funcgrad, funcgrad.numpy as fnp

        def loss(w, x):
            return fnp.sum(fnp.tanh(x @ w) ** 2)

        w, x = np.ones((3, 2), np.float32), np.ones((4, 3), np.float32)
        f = funcgrad.jit(funcgrad.value_and_grad(loss))
        v, g = f(w, x)
        v, g = f(w, x)  # the dispatch fast path
        h = funcgrad.jit(lambda a: fnp.sort(a)[::-1].cumsum())(np.array([3.0, 1.0, 2.0]))
        print(json.dumps({"jax": sorted(m for m in sys.modules if m == "jax" or m.startswith("jax.")),
                          "v": float(v), "g": np.asarray(g).shape, "h": np.asarray(h).tolist()}))
        """
    )
    assert out["jax"] == []
    assert out["g"] == [3, 2] and out["h"] == [3.0, 5.0, 6.0]


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="jax not installed")
def test_jit_stays_correct_after_jax_is_imported():
    out = run_py(
        """
        import json
        import numpy as np
        import funcgrad, funcgrad.numpy as fnp
        f = funcgrad.jit(lambda a, b: a * b + 1)
        before = np.asarray(f(np.arange(3.0), np.ones(3))).tolist()
        import jax  # x64 stays off in jax: funcgrad must not follow its dtype canonicalization
        r = f(np.arange(3.0), np.ones(3))
        chained = [np.asarray(f(r, r)).tolist() for _ in range(2)]  # device Arrays, miss then hit
        g = funcgrad.jit(lambda a: a + 1)
        s = g(np.int64(2**40))
        print(json.dumps({"before": before, "after": np.asarray(r).tolist(), "dtype": str(r.dtype),
                          "chained": chained,
                          "int": int(s), "int_dtype": str(s.dtype),
                          "jax_x64": bool(jax.config.jax_enable_x64)}))
        """
    )
    assert out["before"] == out["after"] == [1.0, 2.0, 3.0]
    assert out["chained"] == [[2.0, 5.0, 10.0]] * 2
    assert out["dtype"] == "float64" and out["int"] == 2**40 + 1 and out["int_dtype"] == "int64"
    assert out["jax_x64"] is False
