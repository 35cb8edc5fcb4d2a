"""custom_vjp as flax's nnx.custom_vjp uses it: a bwd cotangent may be one value for a pytree node
around one leaf (JAX takes the cotangent tree as a prefix), and fwd runs on the trace holding its
primals (under eager grad too: what fwd makes belongs to the caller's trace, as in JAX)."""

import numpy as np

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.extend.core import get_opaque_trace_state


class Box:
    def __init__(self, v):
        self.v = v


funcgrad.tree_util.register_pytree_node(Box, lambda b: ((b.v,), None), lambda _, c: Box(*c))


def _make(lib):
    @lib.custom_vjp
    def f(box, y):
        return lib.numpy.sin(box.v) * y

    def fwd(box, y):
        return f(box, y), (box.v, y)

    def bwd(res, g):
        v, y = res
        return (lib.numpy.cos(v) * y * g, lib.numpy.sin(v) * g)  # a bare value for Box(v)

    f.defvjp(fwd, bwd)
    return f


def test_a_value_for_a_node_around_one_leaf_and_jax_agrees():
    import jax

    jax.tree_util.register_pytree_node(Box, lambda b: ((b.v,), None), lambda _, c: Box(*c))
    got = funcgrad.grad(lambda v, y: _make(funcgrad)(Box(v), y), argnums=(0, 1))(1.0, 2.0)
    want = jax.grad(lambda v, y: _make(jax)(Box(v), y), argnums=(0, 1))(1.0, 2.0)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    np.testing.assert_allclose(np.asarray(got), [np.cos(1.0) * 2.0, np.sin(1.0)], rtol=1e-6)


def test_fwd_runs_on_the_trace_of_its_primals_under_eager_grad():
    seen = []

    @funcgrad.custom_vjp
    def f(x):
        return fnp.sin(x)

    def fwd(x):
        seen.append(get_opaque_trace_state())
        y = f(x)  # the function itself, called inside its fwd (flax's nnx does)
        seen.append(get_opaque_trace_state())
        return y, x

    f.defvjp(fwd, lambda x, g: (fnp.cos(x) * g,))
    outside = get_opaque_trace_state()
    assert float(funcgrad.grad(f)(0.5)) == np.cos(0.5)
    assert seen and all(s == outside for s in seen)


def _passes_state(lib):
    @lib.custom_vjp
    def f(x, h):
        return x * 2.0

    f.defvjp(lambda x, h: (x * 2.0, h), lambda h, g: (g * 2.0, h + 1.0))  # not linear in g

    @lib.custom_vjp
    def block(y):
        return y

    block.defvjp(lambda y: (y, None), lambda _, g: (None,))  # no cotangent flows back
    return lambda p: lib.numpy.sum(block(f(p["x"], p["h"])))


def test_bwd_runs_when_no_cotangent_reaches_it_as_in_jax():
    import jax

    p = {"x": np.ones(3, np.float32), "h": np.zeros(2, np.float32)}
    for wrap in (lambda g: g, lambda g: funcgrad.jit(g)):
        got = wrap(funcgrad.grad(_passes_state(funcgrad)))(p)
        want = jax.grad(_passes_state(jax))(p)
        for k in p:
            np.testing.assert_array_equal(np.asarray(got[k]), np.asarray(want[k]))
    np.testing.assert_array_equal(np.asarray(want["h"]), [1.0, 1.0])
