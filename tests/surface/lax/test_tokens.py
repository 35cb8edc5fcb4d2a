"""Tokens (``lax.create_token``, ``lax.after_all``; NOTE: [tokens] in funcgrad/kernel/ir.py) against
jax 0.10.2 in-process: printed jaxprs, the lowered StableHLO, jitted calls that take and return
tokens, transformations that pass them through, and JAX's errors for misuse."""

from __future__ import annotations

import re

import numpy as np
import pytest

import funcgrad
import funcgrad.lax as flax
import funcgrad.numpy as fnp
from funcgrad.core import AbstractValue

jax = pytest.importorskip("jax", reason="jax (the oracle) comes with the test extra")
import jax.numpy as jnp  # noqa: E402

jax.config.update("jax_enable_x64", True)

# (id, program of (lax, numpy), arguments of (lax, numpy)): traced by make_jaxpr and lowered by jit
PROGRAMS = [
    ("create", lambda lax, np_: lambda x: lax.create_token(x), lambda lax, np_: (np_.float32(1.0),)),
    (
        "merge_two",
        lambda lax, np_: lambda x: lax.after_all(lax.create_token(x), lax.create_token()),
        lambda lax, np_: (1.0,),
    ),
    (
        "merge_arg",
        lambda lax, np_: lambda t: lax.after_all(t, lax.create_token()),
        lambda lax, np_: (lax.create_token(),),
    ),
    ("merge_none", lambda lax, np_: lambda: lax.after_all(), lambda lax, np_: ()),
    (
        "beside_values",
        lambda lax, np_: lambda t, x: (lax.after_all(t, t), x * 2.0),
        lambda lax, np_: (lax.create_token(), np_.ones(3)),
    ),
]  # fmt: skip


@pytest.mark.parametrize("name,program,args", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_jaxprs_and_lowering_as_jax(name, program, args):
    want = jax.make_jaxpr(program(jax.lax, jnp))(*args(jax.lax, jnp))
    got = funcgrad.make_jaxpr(program(flax, fnp))(*args(flax, fnp))
    assert str(got) == str(want)
    assert got.out_avals[0] is funcgrad.core.get_aval(flax.create_token())
    # The lowered module: the same operations and @main types (SSA names and attributes differ).
    want_text = jax.jit(program(jax.lax, jnp)).lower(*args(jax.lax, jnp)).as_text()
    got_text = funcgrad.jit(program(flax, fnp)).lower(*args(flax, fnp)).as_text()
    ops = re.compile(r"stablehlo\.\w+")
    assert ops.findall(got_text) == ops.findall(want_text)
    types = re.compile(r"!stablehlo\.token|tensor<[^>]*>")

    def signature(text):  # @main's result types and token parameters (jax drops unused arrays)
        (line,) = [ln for ln in text.splitlines() if "@main(" in ln]
        params, results = line.split(") -> ")
        return params.count("!stablehlo.token"), types.findall(results)

    assert signature(got_text) == signature(want_text)


def test_jitted_functions_take_and_return_tokens():
    tok = flax.create_token()
    f = funcgrad.jit(lambda t, x: (flax.after_all(t), x * 2.0))
    for _ in range(2):  # (a cache hit too)
        t2, y = f(tok, fnp.arange(3.0))
        assert type(t2) is type(tok) and t2.block_until_ready() is None
        np.testing.assert_array_equal(y, [0.0, 2.0, 4.0])
    assert type(funcgrad.jit(lambda t: t)(tok)) is type(tok)
    # The same token twice (jax 0.10.2's CPU runtime aborts the process here: "Unexpected duplicate").
    a, b = funcgrad.jit(lambda t: (t, t))(tok)
    assert type(a) is type(b) is type(tok)
    # Nested and under control flow.
    nested = funcgrad.jit(lambda x: funcgrad.jit(flax.after_all)(flax.create_token(x)))
    assert type(nested(1.0)) is type(tok)
    branch = funcgrad.jit(lambda p, t: flax.cond(p, flax.after_all, lambda t: t, t))
    assert type(branch(True, tok)) is type(tok)


def test_tokens_as_jaxs_api_tests():
    # (jax's tests/api_test.py: a captured token, a user primitive that consumes one, the buffer)
    tok = flax.create_token()
    _, y = funcgrad.jit(lambda x: (x + 2, tok))(7)
    assert type(y) is type(tok)
    with pytest.raises(RuntimeError, match="Cannot convert a token-shape buffer to a numpy array."):
        _ = tok._buf._value
    from funcgrad.extend.core import Primitive
    from funcgrad.interpreters import ad, mlir

    tokentest_p = Primitive("tokentest")
    tokentest_p.def_impl(lambda x, y: x)
    tokentest_p.def_abstract_eval(lambda x, y: x)
    mlir.register_lowering(tokentest_p, lambda ctx, x, y: [x])
    ad.defjvp(tokentest_p, (lambda g, x, token: x), None)
    arr = fnp.ones((3, 2))
    _, vjp_fun = funcgrad.vjp(lambda x: tokentest_p.bind(x, tok), arr)
    assert vjp_fun(arr)[0].shape == arr.shape  # (jax's test: it does not crash)
    np.testing.assert_array_equal(funcgrad.jit(lambda x, t: tokentest_p.bind(x, t))(arr, tok), arr)


@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_loops_carry_tokens(jit):
    # (jax 0.10.2 refuses a token carry with an AttributeError; XLA's loops carry tokens)
    tok = flax.create_token()
    wrap = funcgrad.jit if jit else (lambda f: f)
    t2, ys = wrap(lambda t: flax.scan(lambda c, x: (flax.after_all(c), x * 2.0), t, fnp.ones(3)))(tok)
    assert type(t2) is type(tok)
    np.testing.assert_array_equal(ys, [2.0, 2.0, 2.0])
    assert type(wrap(lambda t: flax.fori_loop(0, 3, lambda i, c: flax.after_all(c), t))(tok)) is type(tok)
    with pytest.raises(TypeError, match="cannot be stacked"):  # (never XLA's parse error)
        wrap(lambda t: flax.scan(lambda c, x: (c, flax.create_token()), t, fnp.ones(3)))(tok)


def test_token_types_as_jax():
    tok, jtok = flax.create_token(), jax.lax.create_token()
    assert repr(funcgrad.typeof(tok)) == repr(jax.typeof(jtok)) == "AbstractToken()"
    assert funcgrad.typeof(tok).str_short() == jax.typeof(jtok).str_short() == "Tok"
    assert isinstance(funcgrad.typeof(tok), AbstractValue)
    assert funcgrad.eval_shape(flax.after_all, tok) is funcgrad.typeof(tok)
    assert repr(jax.eval_shape(jax.lax.after_all, jtok)) == "AbstractToken()"
    assert funcgrad.tree_util.tree_leaves(tok) == [tok]
    assert type(funcgrad.device_put(tok)) is type(tok) and type(jax.device_put(jtok)) is type(jtok)
    assert funcgrad.block_until_ready(tok) is tok
    assert type(flax.after_all(tok, flax.create_token())) is type(tok)


def _inner(lax):
    return lambda x: (lax.after_all(lax.create_token()), x * 2.0)[1]


def test_transformations_pass_tokens_through():
    x = np.arange(3.0)
    np.testing.assert_array_equal(funcgrad.vmap(_inner(flax))(x), jax.vmap(_inner(jax.lax))(x))
    assert str(funcgrad.make_jaxpr(funcgrad.vmap(_inner(flax)))(x)) == str(
        jax.make_jaxpr(jax.vmap(_inner(jax.lax)))(x)
    )
    assert float(funcgrad.grad(_inner(flax))(1.0)) == float(jax.grad(_inner(jax.lax))(1.0)) == 2.0
    assert float(funcgrad.grad(funcgrad.jit(_inner(flax)))(1.0)) == 2.0
    tok = flax.create_token()
    batched = funcgrad.vmap(lambda x, t: (flax.after_all(t), x * 2.0)[1], in_axes=(0, None))(x, tok)
    np.testing.assert_array_equal(batched, x * 2.0)
    (value, aux), g = funcgrad.value_and_grad(lambda x, t: (x * 2.0, flax.after_all(t)), has_aux=True)(
        1.0, tok
    )
    assert (float(value), float(g), type(aux)) == (2.0, 2.0, type(tok))
    # A token result of vmap leaves it unbatched (jax 0.10.2 raises an AttributeError there).
    t2, y = funcgrad.vmap(lambda x: (flax.create_token(), x))(x)
    assert type(t2) is type(tok) and y.shape == (3,)


@pytest.mark.parametrize(
    "call",
    [
        lambda lax, np_: lax.after_all(1.0),
        lambda lax, np_: lax.after_all(lax.create_token(), np_.ones(2)),
        lambda lax, np_: jax_or_funcgrad(lax).jit(lambda x: lax.after_all(x))(1.0),
    ],
    ids=["scalar", "array", "jit"],
)
def test_after_all_refuses_non_tokens_as_jax(call):
    with pytest.raises(TypeError, match="^Arguments to after_all must be tokens"):
        call(jax.lax, jnp)
    with pytest.raises(TypeError, match="^Arguments to after_all must be tokens"):
        call(flax, fnp)


@pytest.mark.parametrize(
    "call",
    [
        lambda lax, np_: jax_or_funcgrad(lax).jit(lambda t: lax.add(t, t))(lax.create_token()),
        lambda lax, np_: jax_or_funcgrad(lax).jit(lambda t: np_.add(t, 1))(lax.create_token()),
        lambda lax, np_: jax_or_funcgrad(lax).vmap(lax.after_all)(lax.create_token()),
    ],
    ids=["lax_add", "numpy_add", "vmap_axis"],
)
def test_tokens_are_no_arrays_as_jax(call):
    # (no token reaches XLA as an array operand; the exception types are jax's)
    with pytest.raises((TypeError, ValueError)) as want:
        call(jax.lax, jnp)
    with pytest.raises(want.type):
        call(flax, fnp)


def jax_or_funcgrad(lax):
    return jax if lax is jax.lax else funcgrad
