"""Creation functions with static arguments under a staging trace stage JAX's equations: ``arange``,
``eye``, ``identity`` and ``tri`` are ``iota`` equations (XLA folds them after its algebraic rewrites,
so a float32 division by ``1.5 + arange(4)`` keeps jax's bits where a constant array was rewritten to
a multiplication by reciprocals), with the eager values, dtypes and weak types."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _oracle import XLA_DEFAULT_OPTIONS, xla_default_compiles

import funcgrad
import funcgrad.numpy as fnp

F32 = np.float32

CASES = [
    ("arange", (4,), {}),
    ("arange", (4,), {"dtype": F32}),
    ("arange", (1, 9, 2), {}),
    ("arange", (0.5, 3.0, 0.5), {"dtype": F32}),
    ("arange", (0.5, 3.0, 0.5), {"dtype": np.float16}),
    ("arange", (-3, 3, 0.5), {"dtype": np.int32}),
    ("arange", (2.5, 7), {"dtype": F32}),
    ("arange", (5, 1), {}),
    ("arange", (0.5, 3.2, 0.7), {"dtype": np.complex64}),  # (a complex dtype: iota refused it staged)
    ("arange", (4,), {"dtype": np.complex128}),
    ("eye", (3, 4), {"k": 1, "dtype": F32}),
    ("eye", (3, 5), {"k": -2, "dtype": np.int32}),
    ("eye", (4, 3), {"k": 2**100, "dtype": F32}),  # (clipped to int32's range: OverflowError before)
    ("eye", (4, 3), {"k": -(2**100)}),
    ("identity", (3,), {"dtype": F32}),
    ("tri", (3, 5), {"k": -1, "dtype": F32}),
    ("tri", (3, 4), {"k": 2, "dtype": bool}),
    ("linspace", (0.3, 2.7, 9), {"dtype": F32}),
    ("linspace", (np.array([0.0, 1.0], F32), 2.0, 4), {"endpoint": False, "axis": 1}),
    ("linspace", (1.0, 5.0, 5), {"dtype": np.int32}),
]


@pytest.mark.parametrize("name, args, kwargs", CASES)
def test_staged_creation_is_jaxs_iota_with_the_eager_values(name, args, kwargs):
    make = lambda: getattr(fnp, name)(*args, **kwargs)  # noqa: E731
    eager, jitted = make(), funcgrad.jit(make)()
    ref = getattr(jnp, name)(*args, **kwargs)
    assert (jitted.dtype, jitted.weak_type) == (eager.dtype, eager.weak_type)
    for ours in (eager, jitted):  # (the dtype is the suite's mode's; the values are jax's)
        np.testing.assert_array_equal(np.asarray(ours), np.asarray(ref).astype(ours.dtype))
    prims = [e.primitive.name for e in funcgrad.make_jaxpr(make)().jaxpr.eqns]
    assert "iota" in prims or eager.size == 0


@pytest.mark.parametrize(
    "make",
    [
        lambda np_: lambda x: x / (1.5 + np_.arange(4, dtype=F32)),
        lambda np_: lambda x: x / np_.linspace(1.0, 2.0, 7, dtype=F32),
        lambda np_: lambda x: x * np_.linspace(0.3, 2.7, 9, endpoint=False, dtype=F32),
    ],
)
def test_float32_bits_of_staged_creation_are_jaxs(make):
    # A constant array was folded before XLA's rewrites (a division became a multiplication by
    # reciprocals); JAX's iota is folded after them.
    xs = np.linspace(0.1, 7.0, 32, dtype=F32)
    with xla_default_compiles():
        ours = np.stack([np.asarray(funcgrad.jit(make(fnp))(x)) for x in xs])
    theirs = jax.jit(make(jnp), compiler_options=XLA_DEFAULT_OPTIONS)
    np.testing.assert_array_equal(ours, np.stack([np.asarray(theirs(x)) for x in xs]))


@pytest.mark.parametrize("endpoint", [True, False])
def test_eager_linspace_is_jaxs_compiled_linspace(endpoint):
    # One compiled program, as JAX's jitted _linspace (start and stop its operands): XLA's last bits,
    # where NumPy's arithmetic gave others.
    with xla_default_compiles():
        ours = np.asarray(fnp.linspace(0.3, 2.7, 9, endpoint=endpoint, dtype=F32))
    theirs = jax.jit(
        lambda a, b: jnp.linspace(a, b, 9, endpoint=endpoint, dtype=F32), compiler_options=XLA_DEFAULT_OPTIONS
    )
    np.testing.assert_array_equal(ours, np.asarray(theirs(0.3, 2.7)))


def test_linspace_and_jitted_special_functions_under_disable_jit():
    # The compiled linspace (and the special functions JAX jits) run op by op there, not recursing.
    import funcgrad.scipy.special as fs

    with funcgrad.disable_jit():
        np.testing.assert_array_equal(np.asarray(fnp.linspace(0.0, 1.0, 3)), [0.0, 0.5, 1.0])
        np.testing.assert_allclose(float(fs.expn(2, 1.0)), 0.14849550677592205, rtol=1e-6)
        np.testing.assert_allclose(np.asarray(fs.bessel_jn(1.0, v=1))[1], 0.44005058574493355, rtol=1e-6)


def test_creation_with_a_device_is_strongly_typed_as_jax():
    # JAX builds a creation function's value for a concrete device/sharding with
    # make_array_from_callback, which is strongly typed: full(3, 2.0, device=d) and
    # zeros_like(weak, device=d) are not weak there (they were in funcgrad); jnp.array/asarray
    # with device= keep the weak type, and under jit nothing changes
    def outcomes(lib, np_):
        d = lib.devices()[0]
        w = np_.asarray(2.0)
        calls = [
            lambda: np_.full(3, 2.0, device=d),
            lambda: np_.full((2,), w, device=d),
            lambda: np_.full_like(w, 3.0, device=d),
            lambda: np_.zeros_like(w, device=d),
            lambda: np_.ones_like(w, shape=(2,), device=d),
            lambda: np_.empty_like(w, device=d),
            lambda: np_.full_like(w, 3.0),
            lambda: np_.array(2.0, device=d),
            lambda: np_.asarray(w, device=d),
            lambda: lib.jit(lambda: np_.full(3, 2.0, device=d))(),
            lambda: lib.lax.full((2,), 2.0, sharding=lib.sharding.SingleDeviceSharding(d)),
            lambda: lib.jit(lambda: lib.lax.full((2,), 2.0, sharding=lib.sharding.SingleDeviceSharding(d)))(),
        ]
        return [(r.weak_type, r.committed) for r in (c() for c in calls)]

    with funcgrad.enable_x64(False):
        got = outcomes(funcgrad, fnp)
    assert got == outcomes(jax, jnp)
