"""The control-flow trace cache (NOTE: [control-flow trace cache]): a scan body, cond branch or loop
function traced again for the same types runs its Python once, as in jax 0.10.2 (counted on both),
and values stay right where nothing may be reused (a closure over a jit tracer, a Ref)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

F32 = np.float32


def _counts(lib, jnp):
    n = {"scan": 0, "cond": 0, "while": 0, "fori": 0}

    def body(c, x):
        n["scan"] += 1
        return c + x, c

    def branch(x):
        n["cond"] += 1
        return x + 1

    def step(c):
        n["while"] += 1
        return c + 1

    def fori_body(i, c):
        n["fori"] += 1
        return c + i

    xs = jnp.arange(3, dtype=F32)
    for _ in range(2):
        lib.lax.scan(body, F32(0), xs)
        lib.lax.cond(True, branch, branch, F32(1))
        lib.lax.while_loop(lambda c: c < 3, step, F32(0))
        lib.lax.fori_loop(0, 3, fori_body, F32(0))
    lib.jit(lambda x: lib.lax.scan(body, x, xs))(F32(1))  # inside a new jit trace: still cached
    return n


def test_trace_counts_match_jax():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    assert _counts(funcgrad, fnp) == _counts(jax, jnp)


def test_nothing_stale_is_reused():
    @funcgrad.jit
    def g(x):  # the body closes over a jit tracer: traced anew each time
        return funcgrad.lax.scan(lambda c, _: (c + x, None), F32(0), None, length=2)[0]

    assert float(g(F32(1))) == 2.0 and float(g(F32(2))) == 4.0
    r = funcgrad.new_ref(F32(1))

    def read(c, _):  # reads a Ref: its value at each call
        return c + r[...], None

    assert float(funcgrad.lax.scan(read, F32(0), None, length=2)[0]) == 2.0
    r[...] = F32(5)
    assert float(funcgrad.lax.scan(read, F32(0), None, length=2)[0]) == 10.0


def test_cond_forwards_unchanged_operands_as_jax():
    """An operand every branch returns unchanged is not a cond output (JAX's forwarding): the
    printed jaxprs agree, and vmap keeps it unbatched under a batched predicate."""
    jax = pytest.importorskip("jax")

    def f(lax, x, b):
        return lax.cond(x > 0, lambda x, b: (x + 1, b), lambda x, b: (x - 1, b), x, b)

    x, b = np.float32(1), np.ones(3, F32)
    ours = str(funcgrad.make_jaxpr(lambda x, b: f(funcgrad.lax, x, b))(x, b))
    theirs = str(jax.make_jaxpr(lambda x, b: f(jax.lax, x, b))(x, b))
    assert ours == theirs
    ys, kept = funcgrad.vmap(lambda x, b: f(funcgrad.lax, x, b), in_axes=(0, None), out_axes=(0, None))(
        fnp.arange(-2.0, 2.0, dtype=F32), b
    )
    np.testing.assert_array_equal(ys, [-3, -2, -1, 2])
    np.testing.assert_array_equal(kept, b)


def test_cond_without_outputs():
    # A cond whose branches return nothing (optax's linesearch prints from one): still bound.
    seen = []
    funcgrad.lax.cond(True, lambda: funcgrad.debug.callback(lambda: seen.append(1)), lambda: None)
    assert seen == [1]
