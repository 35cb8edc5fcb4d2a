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
import sys
names = lambda cls: f"{{cls.__module__}}.{{cls.__qualname__}}:{{cls.__repr__ is object.__repr__}}"
SCALARS = (jnp.float32, jnp.bool_, jnp.bfloat16, jnp.float8_e4m3fn, jnp.int4, jnp.float_, jnp.ufunc)
if "jax" in sys.modules:  # (the alias: JAX's class names, which code written for JAX prints)
    jax = sys.modules["jax"]
    print(names(type(jnp.zeros(2))), names(jax.Array), names(jax.set_mesh), *map(repr, SCALARS))
import funcgrad
print("flags", funcgrad.config.read("jax_check_tracer_leaks"), funcgrad.config.read("jax_debug_nans"))
print(jnp.sin(np.zeros(2)).dtype, jnp.zeros(2).dtype, jnp.asarray(np.arange(2)).dtype)
"""


def _jax_class_names():
    import jax

    def names(cls):
        return f"{cls.__module__}.{cls.__qualname__}:{cls.__repr__ is object.__repr__}"

    jnp = jax.numpy
    scalars = (jnp.float32, jnp.bool_, jnp.bfloat16, jnp.float8_e4m3fn, jnp.int4, jnp.float_, jnp.ufunc)
    return " ".join([*(names(c) for c in (type(jnp.zeros(2)), jax.Array, jax.set_mesh)), *map(repr, scalars)])


@pytest.mark.parametrize(
    "imports, flag, want",
    [
        ("import funcgrad.numpy as jnp", "0", "float32 float32 int32"),
        ("import funcgrad.as_jax, jax.numpy as jnp", "0", "float32 float32 int32"),
        ("import funcgrad.as_jax, jax.numpy as jnp", "1", "float64 float64 int64"),
    ],
)
def test_jax_enable_x64_variable_is_read_at_import(imports, flag, want):
    # (JAX_CHECK_TRACER_LEAKS and JAX_DEBUG_NANS, others of JAX's flags read from the environment,
    # ride along: "1" and "true" are true, "0" false, as JAX's bool_env)
    on = {"0": "0", "1": "true"}[flag]
    env = dict(
        os.environ,
        JAX_ENABLE_X64=flag,
        JAX_CHECK_TRACER_LEAKS=flag,
        JAX_DEBUG_NANS=on,
        FUNCGRAD_PLATFORM="cpu",
    )
    proc = subprocess.run(
        [sys.executable, "-c", PROGRAM.format(imports=imports)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[-1] == want
    assert lines[-2] == f"flags {flag == '1'} {flag == '1'}"
    if "as_jax" in imports:
        # type(x) prints jaxlib._jax.ArrayImpl, jax.Array and a bare set_mesh(...) as JAX's
        # (thinking_in_jax.md, parallel.md; funcgrad.as_jax._name_classes_as_jax), and jnp's
        # scalar types (<class 'jax.numpy.float32'>: flax's key_concepts.ipynb prints one in a treedef)
        assert lines[-3] == _jax_class_names()


@pytest.mark.parametrize("text", ["1", "0", "True", "OFF", "y", "N", "t", "f", "", "2", " 1", "maybe"])
def test_environment_truth_values_are_jax_s_bool_env(text, monkeypatch):
    # JAX_ENABLE_X64, JAX_CHECK_TRACER_LEAKS, JAX_DISABLE_MOST_OPTIMIZATIONS and the configuration's
    # start from the environment read one set of words, JAX's (funcgrad/kernel/environment.py)
    from jax._src.config import bool_env as jax_bool_env

    from funcgrad.kernel.environment import bool_env

    monkeypatch.setenv("FUNCGRAD_TEST_TRUTH", text)

    def outcome(read):
        try:
            return read("FUNCGRAD_TEST_TRUTH", False)
        except ValueError as e:
            return str(e)

    assert outcome(bool_env) == outcome(jax_bool_env)
