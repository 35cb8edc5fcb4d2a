"""What ``jvp``, ``vjp`` and ``linearize`` return for outputs the function did not compute, as
jax 0.10.2 returns them (NOTE: [outputs jvp and vjp return as they are], NOTE: [primals as the
caller gave them]): an input passed through is the caller's own object, a constant the function
returned (a Python scalar, a NumPy value) is that constant, ``has_aux`` constants stay as they are,
and a custom or user JVP rule gets the caller's Python floats as primals and tangents."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp


def _kind(x):
    # A Python number (jax's TypedFloat is a float), a NumPy value, or either library's array.
    for t in (bool, int, float, np.ndarray, np.generic):
        if isinstance(x, t):
            return t.__name__
    return "array"


def _cases(lib, np_lib):
    def custom(x):
        return x

    custom = lib.custom_jvp(custom)
    custom.defjvp(lambda p, t: (5.0 if type(p[0]) is float else -1.0, 3.0))

    def cvjp(x):
        return x

    cvjp = lib.custom_vjp(cvjp)
    # fwd gets the caller's float (jax: its TypedFloat, a float); bwd's constant is returned as is
    cvjp.defvjp(lambda x: (x, 5.0 if isinstance(x, float) else -1.0), lambda r, g: (r,))
    return {
        "vjp cotangents": lambda: lib.vjp(lambda x, y: (x, y * 2), 2.0, 1.0)[1]((3.0, 4.0)),
        "custom vjp": lambda: lib.vjp(cvjp, 2.0)[1](1.0),
        "identity": lambda: lib.jvp(lambda x: x, (1.0,), (2.0,)),
        "constants": lambda: lib.jvp(lambda x: (x * 2, 2.0, np.float32(1), np.ones(2)), (1.0,), (1.0,)),
        "computed tangent": lambda: lib.jvp(lambda x: x + 1, (1.0,), (1.0,)),
        "numpy passthrough": lambda: lib.jvp(lambda x: x, (np.ones(2),), (np.ones(2),)),
        "custom rule": lambda: lib.jvp(custom, (2.0,), (1.0,)),
        "vjp": lambda: lib.vjp(lambda x: (x * 2, 2.0, x), 1.0)[0],
        "vjp aux": lambda: lib.vjp(lambda x: (x, (2.0, 3, np.ones(2))), 1.0, has_aux=True)[2],
        "grad aux": lambda: lib.grad(lambda x: (x, (2.0, np.float32(1))), has_aux=True)(1.0)[1],
        "linearize": lambda: lib.linearize(lambda x: (x, 2.0), 1.0)[0],
        "array input": lambda: lib.jvp(lambda x: x, (np_lib.asarray(1.0),), (np_lib.asarray(1.0),)),
        # jnp.asarray/array of an input is a conversion JAX computes: Arrays, not the caller's float
        "asarray of a float": lambda: lib.jvp(np_lib.asarray, (1.0,), (1.0,)),
        "array of numpy": lambda: lib.jvp(np_lib.array, (np.ones(2),), (np.ones(2),)),
        "vjp of asarray": lambda: lib.vjp(np_lib.asarray, 1.0)[0],
    }


@pytest.mark.parametrize("case", sorted(_cases(funcgrad, fnp)))
def test_outputs_returned_as_jax_returns_them(case):
    import jax
    import jax.numpy as jnp

    want = _cases(jax, jnp)[case]()
    got = _cases(funcgrad, fnp)[case]()
    w_leaves, w_tree = jax.tree_util.tree_flatten(want)
    g_leaves, g_tree = funcgrad.tree_util.tree_flatten(got)
    assert str(g_tree) == str(w_tree)
    assert [_kind(g) for g in g_leaves] == [_kind(w) for w in w_leaves]
    for g, w in zip(g_leaves, w_leaves):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w))


def test_vjp_with_refs_sends_each_cotangent_where_asked_as_jax():
    # jax 0.10's f_vjp.with_refs: a Ref gets its primal's cotangent added into it (GradRef() in the
    # result), DontWant() drops it (DidntWant()), GradValue() returns it; a Ref of another shape is
    # a ValueError.
    import jax

    from funcgrad._autodiff import DontWant, GradValue
    from funcgrad.ref import new_ref

    a = np.array([1.0, 2.0], np.float32)
    b = (np.array([3.0, 4.0], np.float32), np.array([0.5, 1.5], np.float32))
    ct = (np.ones(2, np.float32), np.full(2, 2.0, np.float32))
    results = []
    for lib, ad, ref in ((funcgrad, None, new_ref), (jax, jax.ad, jax.new_ref)):
        grad_value, dont_want = (GradValue(), DontWant()) if ad is None else (ad.GradValue(), ad.DontWant())
        _, f_vjp = lib.vjp(lambda x, y, lib=lib: (x * y[0], x + lib.numpy.sin(y[1])), a, b)
        r = ref(np.full(2, 10.0, np.float32))
        got_ref, (dropped, value) = f_vjp.with_refs(r, (dont_want, grad_value))(ct)
        results.append(
            (type(got_ref).__name__, type(dropped).__name__, np.asarray(value), np.asarray(r[...]))
        )
        with pytest.raises(ValueError):
            f_vjp.with_refs(ref(np.zeros(3, np.float32)), (grad_value, grad_value))(ct)
        # any other leaf is a GradValue() (JAX's ValAccum; mutable_array_test test_slicing_with_vjp3
        # passes object() for an integer argument)
        _, g_vjp = lib.vjp(lib.jit(lambda x, i: x[i] ** 2), a, 1)
        r2 = ref(np.zeros(2, np.float32))
        got_ref2, int_ct = g_vjp.with_refs(r2, object())(np.float32(1.0))
        results[-1] += (type(got_ref2).__name__, int_ct.dtype.name, np.asarray(r2[...]).tolist())
    (g_ref, g_drop, g_val, g_r, *g_int), (w_ref, w_drop, w_val, w_r, *w_int) = results
    assert g_int == w_int
    assert (g_ref, g_drop) == (w_ref, w_drop) == ("GradRef", "DidntWant")
    np.testing.assert_allclose(g_val, w_val, rtol=1e-6)  # 2 cos(b1)
    np.testing.assert_allclose(g_r, w_r, rtol=1e-6)  # 10 + b0 + 2


def test_linearize_f_jvp_func_args_hold_the_linear_jaxpr_as_jax():
    # JAX's api_test remat tests print f_jvp.func.args[0] (the linear jaxpr) to see what is saved:
    # with a policy saving cos, neither sin nor cos is recomputed in it (jax's text has neither).
    f = funcgrad.checkpoint(lambda x: fnp.sin(fnp.sin(x)), policy=lambda prim, *_, **__: str(prim) == "cos")
    _, f_lin = funcgrad.linearize(f, 1.0)
    text = str(f_lin.func.args[0])
    assert " mul " in text and " sin " not in text and " cos " not in text
