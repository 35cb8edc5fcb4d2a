"""Pickling as JAX's (its tests/pickle_test.py): an Array loads in the loading process's dtype mode,
a jitted function pickles as its function and options, and a traced value refuses to pickle with
JAX's ConcretizationTypeError (``copy.copy`` of one still works)."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.core import ConcretizationTypeError


def _scaled(x, n):
    return x * n


def test_an_array_pickled_in_64_bit_mode_loads_canonical_in_32_bit_mode():
    with funcgrad.enable_x64(True):
        x = fnp.array(4.0, dtype="float64")
        s = pickle.dumps(x)
    with funcgrad.enable_x64(False):
        y = pickle.loads(s)
    assert x.dtype == np.float64
    assert y.dtype == np.float32 and y.aval.dtype == np.float32 and type(y) is type(x)
    assert float(y) == 4.0
    w = pickle.loads(pickle.dumps(fnp.asarray(2.0) * 1))  # weak types survive
    assert w.weak_type


def test_a_jitted_function_pickles_after_use_with_its_options():
    f = funcgrad.jit(_scaled, static_argnums=1)
    assert float(f(2.0, 3)) == 6.0  # its cache now holds a compiled program
    g = pickle.loads(pickle.dumps(f))
    assert float(g(5.0, 3)) == 15.0
    with pytest.raises(ValueError, match="[Nn]on-hashable static"):
        g(1.0, np.ones(2))  # argument 1 is still static


def test_pickling_a_tracer_is_a_concretization_error_but_copy_works():
    with pytest.raises(ConcretizationTypeError, match="__reduce__"):
        funcgrad.jit(pickle.dumps)(0)
    out = funcgrad.jit(lambda x: copy.copy(x) + copy.deepcopy(x))(1.0)
    assert float(out) == 2.0
    assert float(funcgrad.grad(lambda x: copy.copy(x) * x)(3.0)) == 6.0


@pytest.mark.parametrize("name", ["zeros_like", "concatenate", "sin", "sum", "linalg.inv", "fft.fft"])
def test_numpy_functions_pickle_by_reference(name):
    # jax's jnp functions pickle (by module and name); funcgrad.numpy's public functions are the
    # checking wrappers of NOTE: [array-like arguments], which must be what their name leads to.
    fn = fnp
    for part in name.split("."):
        fn = getattr(fn, part)
    assert pickle.loads(pickle.dumps(fn)) is fn
