"""``checking_leaks()`` (``jax_check_tracer_leaks``) as JAX's (jax 0.10.2 is the oracle): a tracer
that outlives the jit or vmap that made it raises ``Exception("Leaked trace ...")`` (JAX's
errors.py example), grad's tracers are not checked (as in JAX), and programs that leak nothing
run unchanged under it (NOTE: [leak checking]).
"""

from __future__ import annotations

import gc
import re

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
import jax.numpy as jnp  # noqa: E402


@pytest.fixture(autouse=True)
def _checkers_see_this_tests_objects():
    """Both leak checkers scan the heap: jax's collects all generations and lists a trace's
    referrers for every trace that ends, funcgrad's when a trace outlives a young collection. In a
    worker that ran a thousand tests before this one that took 40 s, against 1.5 s alone. The
    objects made before the test are frozen (``gc.freeze``: no collection or referrer scan visits
    them) while it runs; every tracer, trace and list that a case makes is made inside the test, so
    each checker still finds (or rules out) each leak as it would on an empty heap."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def _leak_jit(lib, np_):
    outs = []

    @lib.jit
    def side_effecting(x):
        y = x + 1
        outs.append(y)

    side_effecting(1)


def _leak_vmap(lib, np_):
    outs = []
    lib.vmap(lambda x: outs.append(x) or x)(np_.ones(2))


def _leak_grad(lib, np_):
    outs = []
    lib.grad(lambda x: outs.append(x) or x)(1.0)


def _leak_jit_grad(lib, np_):
    # (grad's trace under jit is not checked, as JAX's: the staging trace is named)
    outs = []
    lib.jit(lib.grad(lambda x: outs.append(x) or x))(1.0)


def _leak_scan_under_grad(lib, np_):
    outs = []
    body = lambda c, x: (outs.append(c) or c * 2, None)  # noqa: E731
    lib.grad(lambda y: lib.lax.scan(body, y, np_.ones(2))[0])(1.0)


def _clean(lib, np_):
    f = lib.jit(lib.grad(lambda x: np_.sum(np_.sin(x) * x)))
    v = lib.vmap(lambda x: lib.lax.fori_loop(0, 3, lambda i, c: c * 2, x))(np_.ones(3))
    s = lib.lax.scan(lambda c, x: (c + x, c), 0.0, np_.arange(3.0))
    c = lib.lax.cond(True, lambda x: x + 1, lambda x: x, 1.0)
    r = lib.grad(lib.checkpoint(lambda x: np_.sin(np_.sin(x))))(1.0)

    @lib.custom_vjp
    def g(x):
        return x * 2

    g.defvjp(lambda x: (x * 2, None), lambda _, ct: (ct * 3,))
    cv = lib.jit(lambda x: lib.lax.cond(x > 0, g, np_.sin, x) + lib.grad(g)(x))(1.0)
    return [f(np_.ones(2)), v, s[0], c, r, cv]


@pytest.mark.parametrize(
    "case",
    [_leak_jit, _leak_vmap, _leak_grad, _leak_jit_grad, _leak_scan_under_grad, _clean],
    ids=lambda f: f.__name__,
)
def test_checking_leaks_as_jax(case):
    def run(lib, np_):
        try:
            with lib.checking_leaks():
                out = case(lib, np_)
            return out, None
        except Exception as e:  # the type is the result
            return None, (type(e).__name__, str(e).split(".")[0])  # (JAX's trace named: "Leaked trace X")

    want, want_exc = run(jax, jnp)
    got, got_exc = run(funcgrad, fnp)
    assert got_exc == want_exc
    if want is not None:
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
    # the flag is off again: a leak is no longer reported
    case(funcgrad, fnp)
    funcgrad.jit(lambda x: x)(1.0)


class _Holder:
    def __init__(self, dct):
        self.dct = dct


def test_leak_message_names_the_line_and_the_reference_chain_as_jax():
    # (JAX's api_test test_leak_checker_reference_chain: where the leaked tracer was made, then the
    # referrers that keep it alive, one a line)
    def leak_message(lib, np_):
        holder = _Holder({})

        def sketch(x):
            def foo():
                return x

            holder.dct["hi"] = [foo]
            return x

        with lib.check_tracer_leaks(), pytest.raises(Exception) as info:
            lib.vmap(sketch)(np_.arange(3))
        return str(info.value)

    texts = [leak_message(jax, jnp), leak_message(funcgrad, fnp)]
    chain = (
        r"This BatchTracer with object id [0-9]+ was created on line:\n  .*test_checking_leaks\.py:\d+.*\n"
        r"<BatchTracer [0-9]+> is referred to by <function [0-9]+> \(foo\) closed-over variable x\n"
        r"<function [0-9]+> is referred to by <list [0-9]+>\[0\]\n"
        r"<list [0-9]+> is referred to by <dict [0-9]+>\['hi'\]\n"
        r"<dict [0-9]+> is referred to by <_Holder [0-9]+>\.dct\n"
    )
    for text in texts:
        assert re.search(chain, text), text
