"""The exception types of traced shapes and sizes and of mixed-dtype lax operands are jax's
(issue 30): a traced dimension is a TypeError, a traced arange bound a ConcretizationTypeError,
a Python float into an integer lax operation a TypeError."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax as flax


def _cases(lib, np_mod, lax):
    key = lib.random.key(0) if hasattr(lib.random, "key") else lib.random.PRNGKey(0)
    return {
        "zeros": lambda: lib.jit(lambda n: np_mod.zeros(n))(3),
        "ones tuple": lambda: lib.jit(lambda n: np_mod.ones((n, 2)))(3),
        "reshape": lambda: lib.jit(lambda x, n: x.reshape(n))(np_mod.ones(4), 4),
        "broadcast_to": lambda: lib.jit(lambda x, n: np_mod.broadcast_to(x, (n,)))(1.0, 3),
        "full": lambda: lib.jit(lambda n: np_mod.full((n,), 1.0))(3),
        "eye": lambda: lib.jit(lambda n: np_mod.eye(n))(3),
        "tile": lambda: lib.jit(lambda n: np_mod.tile(np_mod.ones(2), n))(2),
        "arange": lambda: lib.jit(lambda n: np_mod.arange(n))(3),
        "random shape": lambda: lib.jit(lambda n: lib.random.normal(key, (n,)))(3),
        "lax int + float": lambda: lax.add(np_mod.arange(3), 1.0),
        "lax f32 + f64": lambda: lax.add(np_mod.ones(3, np_mod.float32), np_mod.ones(3)),
        "lax i32 + int": lambda: lax.mul(np_mod.ones(3, np_mod.int32), 2),
        "take float indices": lambda: np_mod.take(np_mod.ones(3), np_mod.ones(2)),
        "device_put a string": lambda: lib.device_put(np_mod.ones(2), "cpu"),
    }


@pytest.mark.slow
@pytest.mark.parametrize("name", list(_cases(funcgrad, fnp, flax)))
def test_exception_type_matches_jax(name):
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    with pytest.raises(Exception) as theirs:
        _cases(jax, jnp, jax.lax)[name]()
    with pytest.raises(Exception) as ours:
        _cases(funcgrad, fnp, flax)[name]()
    assert type(ours.value).__name__ == type(theirs.value).__name__


def test_a_traced_dimension_names_the_fix():
    with pytest.raises(TypeError, match="static_argnums") as info:
        funcgrad.jit(lambda n: fnp.zeros((n, 2)))(3)
    assert type(info.value) is TypeError
    assert funcgrad.jit(lambda n: fnp.zeros((n, 2)), static_argnums=0)(3).shape == (3, 2)
    assert np.asarray(flax.add(fnp.arange(3), 1)).tolist() == [1, 2, 3]
