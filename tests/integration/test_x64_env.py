"""JAX_ENABLE_X64 in the environment sets funcgrad's mode before any value is made, with and without
the ``import jax`` alias (funcgrad._config, which reads it, used to be imported only on the first
use of funcgrad.config: JAX_ENABLE_X64=0 gave float64 results until then). Found running JAX's own
test files through funcgrad.as_jax (tests/integration/suites/jax_tests)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROGRAM = """
import numpy as np
{imports}
print(jnp.sin(np.zeros(2)).dtype, jnp.zeros(2).dtype, jnp.asarray(np.arange(2)).dtype)
"""


@pytest.mark.parametrize(
    "imports, flag, want",
    [
        ("import funcgrad.numpy as jnp", "0", "float32 float32 int32"),
        ("import funcgrad.as_jax, jax.numpy as jnp", "0", "float32 float32 int32"),
        ("import funcgrad.as_jax, jax.numpy as jnp", "1", "float64 float64 int64"),
    ],
)
def test_jax_enable_x64_variable_is_read_at_import(imports, flag, want):
    env = dict(os.environ, JAX_ENABLE_X64=flag, FUNCGRAD_PLATFORM="cpu")
    proc = subprocess.run(
        [sys.executable, "-c", PROGRAM.format(imports=imports)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == want
