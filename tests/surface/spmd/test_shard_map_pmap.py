"""pmap on the shard_map machinery against jax 0.10.2 (subprocess oracle): nested with vmap either
way, in_axes/out_axes, static arguments, keyword arguments (mapped), axis_index, a gradient
through it, under disable_jit; a pmap inside a
shard_map or pmap body is refused with a clear error (jax 0.10 refuses it too)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _jax_oracle import run_jax

import funcgrad
from funcgrad.sharding import AxisType, P, make_mesh

CASES_SRC = """
X = np.arange(8.0).reshape(2, 4)


def under_disable_jit(L):  # (chex's fake_jit runs pmaps so)
    with L.disable_jit():
        return L.pmap(lambda v: L.lax.psum(v, "i") * v, axis_name="i")(np.arange(4.0))


CASES = {
    "kwargs_mapped": lambda L: L.pmap(lambda a, b: a * b.sum(), in_axes=None)(3.0, b=X.T),
    "disable_jit": under_disable_jit,
    "pmap_vmap": lambda L: L.pmap(L.vmap(lambda v: L.lax.psum(v, "j"), axis_name="j"), axis_name="i")(X),
    "vmap_pmap": lambda L: L.vmap(L.pmap(lambda v: L.lax.psum(v, "i"), axis_name="i"), axis_name="j")(X),
    "out_axes_none": lambda L: L.pmap(lambda v: L.lax.psum(v, "i"), axis_name="i", out_axes=None)(
        np.arange(4.0)
    ),
    "in_axes": lambda L: L.pmap(lambda a, b: a + b, in_axes=(0, None))(np.arange(4.0), 10.0),
    "grad": lambda L: L.grad(
        lambda w: L.pmap(lambda v: L.lax.psum(v * w, "i"), axis_name="i")(np.arange(4.0)).sum()
    )(2.0),
    "static": lambda L: L.pmap(lambda a, n: a * n, static_broadcasted_argnums=1)(np.arange(4.0), 3),
    "axis_index": lambda L: L.pmap(lambda v: v + L.lax.axis_index("i"), axis_name="i")(np.zeros(4)),
    "vmap_pmap_same_name": lambda L: L.vmap(  # (psum's 'i' is the vmap's, in jax too)
        L.pmap(lambda v: v - L.lax.psum(v, "i"), axis_name="i"), axis_name="i"
    )(X[:, :3]),
    "psum_uneven_groups": lambda L: L.pmap(
        lambda v: v - L.lax.psum(v, "i", axis_index_groups=[[0, 1], [2, 3, 4, 5, 6, 7]]), "i"
    )(np.arange(8.0)),
    "pmean_uneven_groups": lambda L: L.pmap(  # (divided by the first group's size, in jax too)
        lambda v: L.lax.pmean(v, "i", axis_index_groups=[[0, 1, 2], [3, 4, 5, 6, 7]]), "i"
    )(np.arange(8.0)),
    "out_axes_none_per_device": lambda L: [  # (each device keeps its own value, unchecked)
        np.asarray(b.data) for b in L.pmap(lambda v: v * 2, out_axes=None)(X.T).addressable_shards[:4]
    ],
    "out_axes_none_grad": lambda L: L.grad(
        lambda w: L.pmap(lambda v: v * w, out_axes=None)(np.arange(8.0)).sum()
    )(2.0),
    "compiler_options": lambda L: L.pmap(lambda v: v - L.lax.pmean(v, "i"), "i")
    .lower(X.reshape(8, 1))
    .compile(compiler_options={"xla_embed_ir_in_executable": True})(X.reshape(8, 1)),
}

Y = np.array([3.14])


def last_line(f):  # (the line of a multi-line message that names the argument)
    try:
        f()
    except TypeError as e:
        raise TypeError(str(e).splitlines()[-1]) from None


ERRORS = {  # each raises: the exception's type and message as jax's
    "in_axes_prefix": lambda L: L.pmap(lambda x, y: x, in_axes=((0, 0, 0), 0))((Y, Y), Y),
    "in_axes_prefix_kwargs": lambda L: L.pmap(lambda x, y: x, in_axes=((0, 0), 0))(x=(Y, Y), y=Y),
    "out_axes_prefix": lambda L: L.pmap(lambda x, y: ((x, x), x), out_axes=((0, 0, 0), 0))(Y, Y),
    "no_devices": lambda L: L.pmap(lambda x: x, devices=[]),
    "unbound_name": lambda L: L.pmap(lambda x: L.lax.psum(x, "batch"))(Y),
    "pshuffle_perm": lambda L: L.pmap(lambda x: L.lax.pshuffle(x, "i", [1, 1, 0]), "i")(np.ones(3)),
    "compiled_argument_name": lambda L: last_line(
        lambda: L.pmap(lambda x: x - L.lax.pmean(x, "i"), "i")
        .lower(np.ones((8, 4), np.float32))
        .compile()(np.ones((8, 4), np.int32))
    ),
    "compiler_option_unknown": lambda L: L.pmap(lambda x: L.lax.psum(x, "i"), "i")
    .lower(np.ones(8))
    .compile(compiler_options={"invalid_key": "invalid_value"}),
    "compiler_option_bad_value": lambda L: L.pmap(lambda x: L.lax.psum(x, "i"), "i")
    .lower(np.ones(8))
    .compile(compiler_options={"xla_embed_ir_in_executable": "invalid_value"}),
}


def raised(f, L):
    try:
        f(L)
    except Exception as e:  # noqa: BLE001 - the oracle's record of what was raised
        runtime = isinstance(e, L.errors.JaxRuntimeError)  # (funcgrad's is a subclass of it)
        return ["JaxRuntimeError" if runtime else type(e).__name__, str(e).splitlines()[:3]]
    return None
"""
_ns = {"np": np}
exec(CASES_SRC, _ns)  # noqa: S102 - the cases above, shared with the oracle's script
CASES = _ns["CASES"]
ORACLE = (
    "import json, numpy as np, jax\n"
    + CASES_SRC
    + "out = {k: np.asarray(f(jax)).tolist() for k, f in CASES.items()}\n"
    + "out.update({'error ' + k: raised(f, jax) for k, f in ERRORS.items()})\n"
    + "print(json.dumps(out))\n"
)


@pytest.fixture(scope="module")
def jax_out():
    return run_jax(ORACLE)


@pytest.mark.parametrize("name", sorted(CASES))
def test_pmap_equals_jax(jax_out, name):
    np.testing.assert_allclose(CASES[name](funcgrad), jax_out[name])


@pytest.mark.parametrize("name", sorted(_ns["ERRORS"]))
def test_pmap_errors_as_jax(jax_out, name):
    got = _ns["raised"](_ns["ERRORS"][name], funcgrad)
    kind, lines = jax_out[f"error {name}"]
    assert got is not None and got[0] == kind, got
    # (JAX's words first; XLA's own words come on the line after funcgrad's context line)
    assert lines[0] in got[1][0] or (kind == "JaxRuntimeError" and lines[0] in got[1][1]), (got, lines)


def test_pmap_inside_a_shard_map_or_pmap_body_is_refused():
    mesh = make_mesh((8,), ("x",), (AxisType.Auto,))
    inner = funcgrad.pmap(lambda v: v * 2)
    f = funcgrad.shard_map(lambda a: inner(a), mesh=mesh, in_specs=P("x"), out_specs=P("x"))
    for g in (f, funcgrad.jit(f)):
        with pytest.raises(ValueError, match="cannot be nested"):
            g(np.ones((8, 1)))
    with pytest.raises(ValueError, match="cannot be nested"):
        funcgrad.pmap(funcgrad.pmap(lambda v: v, axis_name="j"), axis_name="i")(np.ones((2, 4)))


PMAP_DONATION = """
import json, jax, jax.numpy as jnp
def cases(lib, np_):
    move = lib.pmap(lambda x: x + x - x, donate_argnums=0)
    out = []
    for n in (8, 1):  # a pmap's result, on the map's devices: donated itself, deleted
        x = lib.pmap(lambda x: x)(np_.ones([n]))
        y = move(x)
        out.append([x.is_deleted(), [float(v) for v in y]])
    for n in (8, 2):  # one device's array spread over several: a copy is donated, it stays
        a = np_.ones([n])
        out.append([float(move(a)[0]), a.is_deleted()])
    two = lib.pmap(lambda a, b: a * b, donate_argnums=(1,))
    a, b = np_.ones([2]), np_.ones([2]) * 2
    out.append([[float(v) for v in two(a, b)], a.is_deleted(), b.is_deleted()])
    return out
"""


def test_pmap_donation_as_jax():
    # api_test's BufferDonationTest test_pmap_donate_argnums_invalidates_input: donate_argnums=0 was
    # dropped (`0 or None`); now donated as JAX's pmap does, a copy where the map moves the value
    want = run_jax(PMAP_DONATION + "print(json.dumps(cases(jax, jnp)))")
    scope: dict = {}
    exec(PMAP_DONATION.replace("import json, jax, jax.numpy as jnp", ""), scope)
    assert json.loads(json.dumps(scope["cases"](funcgrad, funcgrad.numpy))) == want
