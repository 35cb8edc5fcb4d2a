"""The n-ary elementwise primitives broadcast size-1 dimensions themselves, as jax 0.10's
(NOTE: [elementwise operand contract]): printed jaxprs, derivatives, batching and compiled values
against the jax oracle."""

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import lax as flax

jax = pytest.importorskip("jax")
jnp = jax.numpy
jlax = jax.lax

COL, ROW = (
    np.arange(1.0, 3.0, dtype=np.float32).reshape(2, 1),
    np.arange(1.0, 4.0, dtype=np.float32).reshape(1, 3),
)
ICOL, IROW = COL.astype(np.int32), ROW.astype(np.int32)

# (name, function of (lax, numpy), operands): each stages one equation on jax, no broadcast_in_dim.
CASES = [
    ("mul", lambda l, n: l.mul, (COL, ROW)),
    ("sub", lambda l, n: l.sub, (COL, ROW)),
    ("max", lambda l, n: l.max, (COL, ROW)),
    ("lt", lambda l, n: l.lt, (COL, ROW)),
    ("pow", lambda l, n: l.pow, (COL, ROW)),
    ("atan2", lambda l, n: l.atan2, (COL, ROW)),
    ("nextafter", lambda l, n: l.nextafter, (COL, ROW)),
    ("rem", lambda l, n: l.rem, (COL, ROW)),
    ("complex", lambda l, n: l.complex, (COL, ROW)),
    ("and", lambda l, n: l.bitwise_and, (ICOL > 1, IROW > 1)),
    ("shift_left", lambda l, n: l.shift_left, (ICOL, IROW)),
    ("jnp.multiply", lambda l, n: n.multiply, (np.ones((2, 3), np.float32), ROW)),
    ("jnp rank promotion", lambda l, n: n.add, (np.ones((2, 3), np.float32), ROW[0])),
    ("jnp.maximum", lambda l, n: n.maximum, (COL, ROW)),
    ("jnp.less", lambda l, n: n.less, (COL, ROW)),
    ("jnp.arctan2", lambda l, n: n.arctan2, (COL, ROW)),
    ("jnp.power", lambda l, n: n.power, (COL, ROW)),
    ("grad of add", lambda l, n: jax_or_fg(l).grad(lambda x, y: (x + y).sum(), argnums=(0, 1)), (COL, ROW)),
    ("grad of mul", lambda l, n: jax_or_fg(l).grad(lambda x, y: (x * y).sum(), argnums=(0, 1)), (COL, ROW)),
    # (div's JVP is jax's term for term: -t * x * y**-2)
    ("grad of div", lambda l, n: jax_or_fg(l).grad(lambda x, y: (x / y).sum(), argnums=(0, 1)), (COL, ROW)),
    # (max's JVP is jax's balanced_eq, op for op)
    (
        "grad of max",
        lambda l, n: jax_or_fg(l).grad(lambda x, y: n.maximum(x, y).sum(), argnums=(0, 1)),
        (COL, ROW),
    ),
    ("jvp of mul", lambda l, n: lambda x, y: jax_or_fg(l).jvp(l.mul, (x, y), (x, y)), (COL, ROW)),
]


def jax_or_fg(lax_module):
    return jax if lax_module is jlax else funcgrad


@pytest.mark.parametrize("name,make,args", CASES, ids=[c[0] for c in CASES])
def test_size_one_dimensions_stage_as_jax(name, make, args):
    want = str(jax.make_jaxpr(make(jlax, jnp))(*args))
    got = str(funcgrad.make_jaxpr(make(flax, fnp))(*args))
    assert got == want
    if not name.startswith(("grad", "jvp")):
        # Compiled (the lowering broadcasts each operand) and eager (NumPy broadcasts) values
        # (eager atan2 is NumPy's, within an ulp of XLA's).
        expect = np.asarray(make(jlax, jnp)(*args))
        np.testing.assert_allclose(np.asarray(funcgrad.jit(make(flax, fnp))(*args)), expect, rtol=2e-7)
        np.testing.assert_allclose(np.asarray(make(flax, fnp)(*args)), expect, rtol=2e-7)


def test_size_one_transpose_batching_and_errors_as_jax():
    # linear_transpose sums the cotangent over the stretched dimension (unbroadcast), as jax's.
    f_j = lambda x, y: jax.linear_transpose(lambda u: u * y, x)(jnp.ones((2, 3), jnp.float32))  # noqa: E731
    f_g = lambda x, y: funcgrad.linear_transpose(lambda u: u * y, x)(fnp.ones((2, 3), np.float32))  # noqa: E731
    assert str(funcgrad.make_jaxpr(f_g)(COL, ROW)) == str(jax.make_jaxpr(f_j)(COL, ROW))
    # vmap: an unbatched operand gets a size-1 batch dimension, a batched scalar trailing ones.
    e = np.arange(24.0, dtype=np.float32).reshape(4, 2, 3)
    s = np.arange(4.0, dtype=np.float32)
    for f_args in [
        ((0, None), (e, ROW)),
        ((None, 0), (ROW, e)),
        ((0, None), (s, np.ones((2, 3), np.float32))),
    ]:
        axes, xs = f_args
        want = jax.vmap(jlax.mul, in_axes=axes)(*xs)
        got = funcgrad.vmap(flax.mul, in_axes=axes)(*xs)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        jaxpr = funcgrad.make_jaxpr(funcgrad.vmap(flax.mul, in_axes=axes))(*xs)
        assert [q.primitive.name for q in jaxpr.eqns][-1] == "mul" and jaxpr.out_avals[0].shape == want.shape
    # Gradients through vmap and jit: a size-1 operand's cotangent is summed back to its shape.
    g_j = jax.jit(jax.grad(lambda x, y: (jnp.sin(x) * y - x / y).sum(), argnums=(0, 1)))(COL, ROW)
    g_g = funcgrad.jit(funcgrad.grad(lambda x, y: (fnp.sin(x) * y - x / y).sum(), argnums=(0, 1)))(COL, ROW)
    for a, b in zip(g_g, g_j):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)
    # lax's errors are jax's (and say how to fix them).
    for x, y, start in [
        (np.ones((2, 3)), np.ones(2), "add: arrays must have the same number of dimensions, got {1, 2}"),
        (np.ones((2, 3)), np.ones((3, 2)), "add got incompatible shapes for broadcasting: (2, 3), (3, 2)."),
    ]:
        with pytest.raises(TypeError) as jax_error:
            jlax.add(x, y)
        with pytest.raises(TypeError) as fg_error:
            flax.add(x, y)
        assert str(jax_error.value).startswith(start) and str(fg_error.value).startswith(start)


INDEXING = [
    lambda m: m[None],
    lambda m: m[:, None, 1],
    lambda m: m[::2, None],
    lambda m: m[-1],
    lambda m: m[::-2, None],
    lambda m: m[3:1],
    lambda m: m[None, 1:] * m[:, None, :1],  # (equinox's test_make_jaxpr::test_struct: one mul)
]


def test_basic_indexing_stages_as_jax():
    # Static ints, slices and None: slice, rev, squeeze, then expand_dims (a broadcast_in_dim).
    m = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    for f in INDEXING:
        assert str(funcgrad.make_jaxpr(f)(m)) == str(jax.make_jaxpr(f)(m))
        np.testing.assert_array_equal(np.asarray(f(fnp.asarray(m))), np.asarray(f(jnp.asarray(m))))


def test_max_min_tangents_are_weak_as_jax():
    # balanced_eq's ones and twos are weak where the answer is (JAX's full_like).
    for f, args in [(jnp.maximum, (1.0, 2.0)), (jnp.minimum, (1.0, 1.0))]:
        want = jax.jvp(f, args, (1.0, 1.0))[1]
        got = funcgrad.jvp(getattr(fnp, f.__name__), args, (1.0, 1.0))[1]
        assert (float(got), got.weak_type) == (float(want), want.weak_type)
