"""``lax.split``/``jnp.split``/``array_split`` and the unravelling of ``jacfwd``/``jacrev`` are one
``split`` equation (JAX 0.10's ``split_p``), whose transpose concatenates the cotangents: a Python
scalar's derivative through a piece stays weakly typed, as in JAX (they were slices, whose
transpose pads with a strong zero: ``grad`` over a ``jacfwd(argnums=(0, 1))`` block of a Python
scalar was strong; the composition fuzzer's session-20 leftover). ``jnp.split`` at indices out of
order or negative raises JAX's ValueError (NumPy clamps them)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
jax.config.update("jax_enable_x64", True)  # (the oracle in funcgrad's default mode)

_A = np.array([0.2, -0.3], np.float32)


def _programs(T, np_):
    f = lambda a, b: np_.sum(np_.sin(b) + a * 0)  # noqa: E731
    h = lambda a, b: T.grad(f, argnums=1)(a, b)  # noqa: E731
    return {
        "jacfwd_block": lambda b: T.jacfwd(h, argnums=(0, 1))(_A, b)[1],
        "jacrev_block": lambda b: T.jacrev(lambda a, b: (a * b, np_.sin(b)), argnums=1)(_A, b)[1],
        "jnp_split": lambda b: np_.sum(np_.split(np_.broadcast_to(b, (3,)) * b, [1])[1]),
        "array_split": lambda b: np_.sum(np_.array_split(np_.broadcast_to(b, (5,)) * b, 2)[0]),
        "lax_split": lambda b: np_.sum(T.lax.split(np_.broadcast_to(b, (4,)) * b, (1, 0, 3))[2]),
    }


@pytest.mark.parametrize("name", sorted(_programs(jax, jnp)))
@pytest.mark.parametrize("jit", [False, True])
def test_gradient_of_a_python_scalar_through_a_split_is_weak_as_jax(name, jit):
    def run(T, np_):
        g = T.grad(_programs(T, np_)[name])
        return (T.jit(g) if jit else g)(0.5)

    got, want = run(funcgrad, fnp), run(jax, jnp)
    assert want.weak_type, "the oracle changed"
    assert got.weak_type == want.weak_type
    assert got.dtype == want.dtype
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_split_is_one_equation_and_its_transpose_a_concatenation_as_jax():
    def prims(T, np_):
        jaxpr = T.make_jaxpr(T.grad(lambda x: np_.sum(np_.split(x, [2])[1] * 2.0)))(np.arange(5.0))
        return [e.primitive.name for e in jaxpr.jaxpr.eqns]

    got, want = prims(funcgrad, fnp), prims(jax, jnp)
    assert "split" in want and "split" in got
    assert ("concatenate" in got) == ("concatenate" in want)
    fwd = funcgrad.make_jaxpr(lambda x: fnp.array_split(x, 2, axis=1))(np.ones((2, 5)))
    assert [v.aval.shape for v in fwd.jaxpr.outvars] == [(2, 3), (2, 2)]


@pytest.mark.parametrize("indices", [[-1], [3, 1], [2, 9], [0], [5], 1])
def test_split_indices_as_jax(indices):
    x = np.arange(5.0)

    def run(np_):
        try:
            return [np.asarray(p) for p in np_.split(x, indices)]
        except Exception as e:
            return type(e)

    got, want = run(fnp), run(jnp)
    if isinstance(want, type):
        assert got is want
        with pytest.raises(want, match="Sizes passed to split must be nonnegative"):
            fnp.split(x, indices)
    else:
        assert [p.tolist() for p in got] == [p.tolist() for p in want]


def test_split_under_vmap_jvp_and_jit_matches_jax():
    x = np.arange(24.0).reshape(2, 3, 4)

    def run(T, np_):
        f = lambda v: [p * p for p in np_.split(v, [1, 3], axis=-1)]  # noqa: E731
        batched = T.vmap(f, in_axes=1)(x)
        tangents = T.jvp(f, (x,), (np.ones_like(x),))[1]
        return [*batched, *tangents, *T.jit(f)(x)]

    for g, w in zip(run(funcgrad, fnp), run(jax, jnp), strict=True):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
