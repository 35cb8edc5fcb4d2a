"""A custom_vjp called in a checked shard_map body, against jax 0.10.2 on 4 of 8 devices (NOTE:
[custom_vjp in a checked body]): its bwd gets JAX's typed cotangents (the whole cotangent of an
invariant result, not each device's share) and must return cotangents of its arguments' types,
else JAX's ValueError ("... so the manual axis types do not match"). Each program is
differentiated outside the body and inside it, eagerly and under ``jit``; the gradients, or the
error's type and message.

One program runs in jax (a subprocess: ``_jax_oracle``) and here on funcgrad, its names bound to
funcgrad's modules (this process must not import jax)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from _jax_oracle import run_jax

import funcgrad.numpy as fnp

PROGRAM = """
mesh = jax.sharding.Mesh(np.array(jax.devices()[:4]), ("i",))
pvary = lambda x, a: jax.lax.pcast(x, a, to="varying")


def run(f, bwd, in_specs, out_specs, args, inside, jit):
    f = jax.custom_vjp(f)
    f.defvjp(lambda *a: (f(*a), a), bwd)
    argnums = tuple(range(len(args)))
    if inside:
        body = lambda *a: jax.grad(lambda *a: f(*a).sum(), argnums=argnums)(*a)
        h = jax.shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=in_specs)
    else:
        g = jax.shard_map(f, mesh=mesh, in_specs=in_specs, out_specs=out_specs)
        h = jax.grad(lambda *a: g(*a).sum(), argnums=argnums)
    h = jax.jit(h) if jit else h
    try:
        return [np.asarray(r).tolist() for r in h(*args)]
    except ValueError as e:
        return ["ValueError", str(e)]


x = jnp.arange(4.0, dtype=np.float32)
w = jnp.arange(1.0, 2.0, dtype=np.float32)
programs = {
    # (valid: bwd returns cotangents of its arguments' types)
    "scale": (lambda x: x * 2, lambda r, g: (g * 2,), P("i"), P("i"), (x,)),
    "psum fwd, pvary bwd": (lambda x: jax.lax.psum(x, "i"), lambda r, g: (pvary(g, "i"),), P("i"), P(), (x,)),
    "invariant w times x": (
        lambda w, x: w * x,
        lambda r, g: (jax.lax.psum(g * r[1], "i"), g * r[0]),
        (P(), P("i")),
        P("i"),
        (w, x),
    ),
    "residual psum": (
        lambda x: x * jax.lax.psum(x, "i"), lambda r, g: (g * jax.lax.psum(r[0], "i"),), P("i"), P("i"), (x,)
    ),
    # (ones_like of a varying cotangent varies: test_rewrite_process_custom_vjp_call_match_more_replicated)
    "ones_like in bwd": (lambda x: 2.0 * x, lambda r, g: (jnp.ones_like(g),), P("i"), P("i"), (x,)),
    # (refused: JAX's test_custom_vjp_replication_error_message_hint and its mirror images)
    "psum in bwd": (lambda x: jax.lax.psum(x, "i"), lambda r, g: (jax.lax.psum(g, "i"),), P("i"), P(), (x,)),
    "varying cotangent of w": (
        lambda w, x: w * x, lambda r, g: (g * r[1], g * r[0]), (P(), P("i")), P("i"), (w, x)
    ),
    "invariant cotangent of x": (lambda x: x * 2, lambda r, g: (jax.lax.psum(g, "i"),), P("i"), P("i"), (x,)),
}
cases = {}
for name, prog in programs.items():
    for inside in (False, True):
        for jit in (False, True):
            where = ("inside" if inside else "outside") + (" jit" if jit else "")
            cases[f"{name} {where}"] = run(*prog, inside, jit)


# The *_like of a varying value, and eval_shape's result, vary as it does (JAX's full_like's pvary)
def typed(x):
    y = jax.eval_shape(lambda x: x * 2, x)
    likes = [y, jax.lax.full_like(y, 1), jnp.ones_like(x), jnp.zeros_like(x), jnp.full_like(x, 3.0)]
    seen.append([sorted(jax.typeof(v).mat.varying) for v in likes])
    return x + likes[1] + likes[2]


def mapped(x):
    def step(r):
        y = jax.eval_shape(lambda r: r * 2, r)
        types = [r, y, jax.lax.full_like(y, 1)]
        seen.append([sorted(jax.typeof(v).mat.varying) for v in types])
        return r

    return jax.lax.map(step, x)


# A collective of an invariant operand: JAX casts it to varying first (pvary in the jaxpr); the
# result's type (all_gather's varies)
collectives = {
    "psum": (lambda v: jax.lax.psum(v, "i"), P()),
    "pmax": (lambda v: jax.lax.pmax(v, "i"), P()),
    "all_gather": (lambda v: jax.lax.all_gather(v, "i"), P("i")),
    "ppermute": (lambda v: jax.lax.ppermute(v, "i", [(0, 1), (1, 2), (2, 3), (3, 0)]), P("i")),
    "psum_scatter": (lambda v: jax.lax.psum_scatter(v, "i", tiled=True), P("i")),
}
v8 = jnp.arange(8.0, dtype=np.float32)
for name, (op, spec) in collectives.items():
    seen = []

    def body(v, op=op):
        out = op(v)
        seen.append(sorted(jax.typeof(out).mat.varying))
        return out

    f = jax.jit(jax.shard_map(body, mesh=mesh, in_specs=P(), out_specs=spec))
    text = str(f.trace(v8).jaxpr)
    cases[f"collective {name}"] = [np.asarray(f(v8)).tolist(), seen[-1], "pvary[axes=('i',)" in text]


# jacrev's results in a body vary as its inputs (test_jacrev_explicit_complex)
m22 = jax.sharding.Mesh(np.array(jax.devices()[:4]).reshape(2, 2), ("x", "y"))
w68 = jnp.arange(48.0, dtype=np.float32).reshape(6, 8)
x20 = jnp.arange(120.0, dtype=np.float32).reshape(20, 6)


def jac_body(w, a, b):
    ret = jax.jacrev(lambda w, xs: [jnp.sum(z @ w, axis=-1) for z in xs], argnums=1)(w, (a, b))
    outs = [ret[0][0], ret[0][1], ret[1][0], ret[1][1]]
    seen.append([sorted(jax.typeof(o).mat.varying) for o in outs])
    return tuple(outs)


seen = []
specs = (P("x"), P("y"), P("x"), P("y"))
jac = jax.jit(jax.shard_map(jac_body, mesh=m22, in_specs=(P(), P("x"), P("y")), out_specs=specs))
cases["jacrev types"] = [[float(np.asarray(o).sum()) for o in jac(w68, x20, x20)], seen[-1]]


# A debug callback in a partially manual body under jit runs once per manual block, on the first
# device along the automatic axes (test_debug_print_jit_partial_auto: XLA refused the program)
calls = []


def partial_body(v):
    note = lambda i, b: calls.append([int(i), np.asarray(b).tolist()])  # noqa: E731
    jax.debug.callback(note, jax.lax.axis_index("x"), v)
    return jnp.cos(v)


pf = jax.shard_map(partial_body, mesh=m22, in_specs=P("x"), out_specs=P("x"), axis_names=frozenset({"x"}))
pf = jax.jit(pf)
out = pf(jnp.arange(8.0, dtype=np.float32))
jax.effects_barrier()
cases["callback in a partial body"] = [np.round(np.asarray(out), 5).tolist(), sorted(calls)]


for where, wrap in (("eager", lambda f: f), ("jit", jax.jit)):
    seen = []
    out = wrap(jax.shard_map(typed, mesh=mesh, in_specs=P("i"), out_specs=P("i")))(x)
    cases[f"likes vary {where}"] = [np.asarray(out).tolist(), seen[-1]]
    # (a lax.map step of a varying value varies: test_eval_shape_vma)
    seen = []
    wrap(jax.shard_map(mapped, mesh=mesh, in_specs=P("i"), out_specs=P("i")))(x)
    cases[f"map step types {where}"] = seen[-1]
"""

ORACLE = (
    "import json, numpy as np, jax, jax.numpy as jnp\n"
    "from jax.sharding import PartitionSpec as P\n" + PROGRAM + "print(json.dumps(cases))\n"
)

NAMES = [
    "scale",
    "psum fwd, pvary bwd",
    "invariant w times x",
    "residual psum",
    "psum in bwd",
    "varying cotangent of w",
    "invariant cotangent of x",
    "ones_like in bwd",
]


@pytest.fixture(scope="module")
def results():
    import funcgrad
    from funcgrad.sharding import PartitionSpec

    names = {"np": np, "jax": funcgrad, "jnp": fnp, "P": PartitionSpec}
    exec(PROGRAM, names)
    return json.loads(json.dumps(names["cases"])), run_jax(ORACLE)


@pytest.mark.parametrize("name", NAMES)
def test_as_jax(results, name):
    got, want = results
    for where in ("outside", "outside jit", "inside", "inside jit"):
        case = f"{name} {where}"
        assert got[case] == want[case], case


TYPES = [f"{k} {w}" for k in ("likes vary", "map step types") for w in ("eager", "jit")]
TYPES += [f"collective {k}" for k in ("psum", "pmax", "all_gather", "ppermute", "psum_scatter")]
TYPES += ["jacrev types", "callback in a partial body"]


@pytest.mark.parametrize("case", TYPES)
def test_types_vary(results, case):
    got, want = results
    assert got[case] == want[case]


pytestmark = pytest.mark.slow  # (the jax oracle's process, shared with the other spmd files)
