"""``set_mesh`` places computations on uncommitted values (NOTE: [placement in context] in
funcgrad/_meshes.py) against jax 0.10.2 on 8 devices: eager operations, creation functions, jitted
calls (traced again when the mesh set changes), ``grad``/``vmap``/``scan`` and random draws give
results replicated over the mesh and committed (``P()`` on Auto axes, ``P(None, ...)`` on Explicit
ones, one device for a one-device mesh); ``device_put(x)`` and ``with mesh:`` place nothing; a
committed argument on other devices meets JAX's "jit's context mesh" error.

One program runs here on funcgrad, its names bound to funcgrad's modules (this process must not
import jax); jax 0.10.2's output of the same program is ``set_mesh_placement_jax.json`` (written by
``python tests/surface/spmd/test_set_mesh_placement.py``, which runs it in a subprocess: jax's
import and compiles cost ~20 s that the suite need not pay)."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest
from _jax_oracle import run_jax

import funcgrad
import funcgrad.numpy as fnp

PROGRAM = """
d = jax.devices()
u = jax.device_put(np.arange(4.0, dtype=np.float32))
c = jax.device_put(np.ones(4, np.float32), d[3])
f = jax.jit(lambda a, b: a * b + 1.0)
g = jax.jit(lambda a: a - 1.0)
cases = [
    ("ones", lambda: jnp.ones(4, dtype=np.float32)), ("zeros 2-d", lambda: jnp.zeros((2, 3), np.float32)),
    ("arange", lambda: jnp.arange(3)), ("full_like np", lambda: jnp.full_like(np.ones(3, np.float32), 2.0)),
    ("device_put", lambda: jax.device_put(np.ones(2, np.float32))),
    ("u + 1", lambda: u + 1.0), ("sin", lambda: jnp.sin(u)), ("sum", lambda: u.sum()),
    ("u[1:3]", lambda: u[1:3]),
    ("u @ u", lambda: u @ u), ("f(u, u)", lambda: f(u, u)), ("f(np, np)", lambda: f(np.ones(2), np.ones(2))),
    ("g(u)", lambda: g(u)), ("jit()", lambda: jax.jit(lambda: jnp.zeros(2, np.float32))()),
    ("grad", lambda: jax.grad(lambda a: jnp.sum(a**2))(u)), ("vmap", lambda: jax.vmap(jnp.cos)(u)),
    ("scan", lambda: jax.lax.scan(lambda s, a: (s + a, 2 * a), np.float32(0), u)),
    ("random", lambda: jax.random.uniform(jax.random.key(0), (3,)).shape),
    ("bare P", lambda: jax.device_put(np.ones(8, np.float32), P("x")) * 2.0),
]
meshes = [
    ("explicit", jax.make_mesh((2, 4), ("x", "y"))),
    ("auto", jax.make_mesh((2, 4), ("x", "y"), axis_types=(AxisType.Auto,) * 2)),
    ("one device", jax.make_mesh((1,), ("x",))),
]


def leaves(v):
    out = []
    for a in jax.tree_util.tree_leaves(v):
        if not hasattr(a, "sharding"):
            out.append(a)
            continue
        s = a.sharding
        spec = str(s.spec) if isinstance(s, NamedSharding) else None
        out.append([type(s).__name__, spec, bool(a.committed), sorted(e.id for e in a.devices()),
                    np.asarray(a).tolist()])
    return out


out = {"g(u) before": leaves(g(u))}
for mname, mesh in meshes:
    with jax.set_mesh(mesh):
        for name, fn in cases:
            if name == "bare P" and mesh.size == 1:
                continue
            out[f"{mname}: {name}"] = leaves(fn())
    out[f"{mname}: g(u) after"] = leaves(g(u))
with jax.set_mesh(meshes[0][1]):  # on Explicit axes a resharded result's spec is its type's
    two = np.ones((8, 2), np.float32)
    out["explicit: reshard"] = leaves(jax.sharding.reshard(jnp.asarray(two), P("x")))
    out["explicit: out_sharding"] = leaves(jnp.ones((8, 2), out_sharding=P("x")))
    out["explicit: device_put spec"] = leaves(jax.device_put(two, P("x")))
with meshes[0][1]:
    out["with mesh: u + 1"] = leaves(u + 1.0)
    out["with mesh: g(u)"] = leaves(g(u))
jax.set_mesh(meshes[1][1])
out["set_mesh(m): u * 2"] = leaves(u * 2.0)
jax.set_mesh(None)
out["set_mesh(None): u * 2"] = leaves(u * 2.0)
with jax.set_mesh(meshes[2][1]):  # a committed value on the one-device mesh's device meets it
    out["one device: committed + 1"] = leaves(jax.device_put(u, d[0]) + 1.0)
    out["one device: .device"] = [(u * 2.0).device.id]  # (a Device: orbax reads its memories)
errors = []
with jax.set_mesh(meshes[0][1]):
    for fn in (lambda: c + 1.0, lambda: f(u, c)):
        try:
            fn()
            errors.append("no error")
        except ValueError as e:
            errors.append(str(e))
out["errors"] = errors
"""

ORACLE = (
    "import json, numpy as np, jax, jax.numpy as jnp\n"
    "from jax.sharding import AxisType, NamedSharding, PartitionSpec as P\n"
    + PROGRAM
    + "print(json.dumps(out))\n"
)


EXPECTED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "set_mesh_placement_jax.json")

pytestmark = pytest.mark.slow  # (a compile on 8 devices per eager step: ~3-8 s)


@pytest.fixture(scope="module")
def results():
    from funcgrad.sharding import AxisType, NamedSharding, PartitionSpec

    names = {"np": np, "jax": funcgrad, "jnp": fnp, "AxisType": AxisType, "NamedSharding": NamedSharding}
    names["P"] = PartitionSpec
    exec(PROGRAM, names)
    with open(EXPECTED) as f:
        return names["out"], json.load(f)


def _replicated_as_p(leaves):
    # On Explicit axes JAX writes a replicated result's spec P() when its type came from
    # uncommitted operands alone (jnp.sin(u)) and P(None, ...) when the mesh set typed it
    # (jnp.ones, u + 1.0); funcgrad writes P(None, ...) for both: compared as one.
    same = re.compile(r"^P\((None, )*(None,?)?\)$")
    return [[v[0], same.sub("P()", v[1] or ""), *v[2:]] if isinstance(v, list) else v for v in leaves]


def test_placement_under_set_mesh_as_jax(results):
    got, want = results
    got, want = ({k: v for k, v in r.items() if k != "errors"} for r in (got, want))
    assert got.keys() == want.keys()
    for k in want:
        if k.startswith("explicit:") or k.startswith("one device:"):
            assert _replicated_as_p(got[k]) == _replicated_as_p(want[k]), k
        else:
            assert got[k] == want[k], k


def test_context_mesh_error_as_jax(results):
    got, want = results
    assert len(got["errors"]) == 2
    assert got["errors"][1] == want["errors"][1]  # a jitted call: the parameter's name
    # An eager operation names the primitive's operand (args[0]; jax's jnp.add is a jitted
    # function of x, y), so that case is compared without the name.
    unnamed = [re.sub(r"argument \S+ of", "argument _ of", e) for e in (got["errors"][0], want["errors"][0])]
    assert unnamed[0] == unnamed[1]


def test_set_mesh_refusals_as_jax():
    from funcgrad.sharding import AxisType, make_mesh, set_mesh

    mesh = make_mesh((2,), ("x",))
    with pytest.raises(ValueError, match=r"(?m)^`set_mesh` can only be used outside of `jax.jit`.$"):
        funcgrad.jit(lambda v: (set_mesh(mesh), v)[1])(1.0)
    manual = make_mesh((2,), ("x",), (AxisType.Manual,))
    with pytest.raises(
        ValueError, match="contains manual axes which is not allowed when using `jax.set_mesh`"
    ):
        set_mesh(manual)
    assert fnp.ones(2).sharding.device_set == {funcgrad.devices()[0]}  # (neither left a mesh set)


def test_set_mesh_of_an_empty_mesh_sets_none():
    # (JAX's empty_concrete_mesh, Mesh(np.empty((), object), ()): set_mesh of it clears the mesh
    # for the block, as set_mesh(None); placing a value on it aborted XLA ("Devices given to
    # GSPMDSharding must not be empty"))
    from funcgrad.sharding import Mesh, get_abstract_mesh, make_mesh, set_mesh

    outer = make_mesh((2,), ("x",))
    with set_mesh(outer):
        with set_mesh(Mesh(np.empty((), dtype=object), ())):
            assert get_abstract_mesh().empty
            y = fnp.ones(3) * 2
            assert y.sharding.device_set == {funcgrad.devices()[0]}
            np.testing.assert_array_equal(y, [2.0, 2.0, 2.0])
        assert get_abstract_mesh() == outer.abstract_mesh


def test_host_callbacks_run_once_in_a_program_over_several_devices(capsys):
    # (as JAX's: on the program's first device, a maximal sharding; XLA refused the program, and
    # an eager debug.print under set_mesh is such a program)
    from funcgrad.sharding import NamedSharding, PartitionSpec, make_mesh, set_mesh

    mesh = make_mesh((8,), ("x",))
    x = funcgrad.device_put(np.arange(8.0, dtype=np.float32), NamedSharding(mesh, PartitionSpec("x")))
    calls = []

    def double(v):
        calls.append(v.shape)
        return np.asarray(v) * 2

    out = funcgrad.ShapeDtypeStruct((8,), np.float32)
    y = funcgrad.jit(lambda a: funcgrad.pure_callback(double, out, a))(x)
    np.testing.assert_array_equal(np.asarray(y), np.arange(8.0) * 2)
    assert calls == [(8,)]
    funcgrad.jit(lambda a: funcgrad.debug.print("sum {}", a.sum()))(x)
    with set_mesh(mesh):
        funcgrad.debug.print("eager {}", fnp.arange(2))
    # Over 8 devices dispatch is asynchronous and a print-only program has no result to wait on:
    # effects_barrier waits on the runtime tokens of programs with host callbacks, as JAX's.
    funcgrad.effects_barrier()
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["sum 28.0", "eager [0 1]"]


def test_a_callback_runs_on_the_device_its_sharding_names_as_jax():
    # (JAX's python_callback_test: a maximal sharding on that device's position in the program)
    from funcgrad.experimental import io_callback
    from funcgrad.sharding import NamedSharding, PartitionSpec, SingleDeviceSharding, make_mesh

    mesh = make_mesh((8,), ("x",))
    spread = NamedSharding(mesh, PartitionSpec("x"))
    last = SingleDeviceSharding(funcgrad.devices()[-1])
    out = funcgrad.ShapeDtypeStruct((8,), np.float32)
    f = funcgrad.jit(
        lambda a: funcgrad.pure_callback(lambda v: v * 2, out, a, sharding=last), out_shardings=spread
    )
    x = funcgrad.device_put(np.arange(8.0, dtype=np.float32), spread)
    np.testing.assert_array_equal(np.asarray(f(x)), np.arange(8.0) * 2)
    text = f.lower(x).as_text()
    assert "#sdy.sharding_per_value<[<@maximal_mesh_7, []>]>" in text
    seen = []
    g = funcgrad.jit(
        lambda a: io_callback(lambda v: seen.append(int(v.sum())), None, a, sharding=last, ordered=True)
    )
    g(x)
    funcgrad.effects_barrier()
    assert seen == [28]
    with pytest.raises(NotImplementedError, match="do not support specifying sharding inside spmd"):
        funcgrad.jit(
            funcgrad.shard_map(
                lambda a: funcgrad.pure_callback(
                    np.sin, funcgrad.ShapeDtypeStruct((1,), np.float32), a, sharding=last
                ),
                mesh=mesh,
                in_specs=PartitionSpec("x"),
                out_specs=PartitionSpec("x"),
            )
        )(x)


def test_lapack_kernels_in_a_program_over_several_devices():
    # (the SPMD route did not register jaxlib's LAPACK kernels as the one-device route does: XLA
    # found no handler for lapack_sgeqrf_ffi; under set_mesh every eager qr is such a program, as in
    # flax's orthogonal initializer)
    from funcgrad.sharding import NamedSharding, PartitionSpec, make_mesh, set_mesh

    a = np.random.default_rng(0).normal(size=(8, 8)).astype(np.float32)
    x = funcgrad.device_put(a, NamedSharding(make_mesh((8,), ("x",)), PartitionSpec("x")))
    q, r = funcgrad.jit(fnp.linalg.qr)(x)
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, rtol=1e-4, atol=1e-4)
    with set_mesh(make_mesh((1,), ("x",))):
        q, r = fnp.linalg.qr(fnp.asarray(a))
    assert len(r.sharding.device_set) == 1 and r.committed
    np.testing.assert_allclose(np.asarray(q) @ np.asarray(r), a, rtol=1e-4, atol=1e-4)


def test_tokens_in_a_program_over_several_devices():
    # (a token argument is a bool[0] buffer on every device, as JAX passes it; NOTE: [tokens])
    from funcgrad import lax
    from funcgrad.sharding import NamedSharding, PartitionSpec, make_mesh, set_mesh

    mesh = make_mesh((8,), ("x",))
    x = funcgrad.device_put(np.arange(8.0), NamedSharding(mesh, PartitionSpec("x")))
    tok = lax.create_token()
    t2, y = funcgrad.jit(lambda t, v: (lax.after_all(t), v * 2.0))(tok, x)
    assert type(t2) is type(tok)
    np.testing.assert_array_equal(np.asarray(y), np.arange(8.0) * 2)
    with set_mesh(mesh):
        assert type(funcgrad.jit(lax.after_all)(tok)) is type(tok)


if __name__ == "__main__":  # jax's side, written out (see the module docstring)
    with open(EXPECTED, "w") as f:
        json.dump(run_jax(ORACLE), f, separators=(",", ":"))
        f.write("\n")
