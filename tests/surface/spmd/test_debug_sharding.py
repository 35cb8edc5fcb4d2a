"""The sharding helpers of ``funcgrad.debug`` against jax's: ``visualize_array_sharding`` and
``visualize_sharding`` print jax's table (the same text as jax 0.10.2 prints, run in a subprocess:
``_jax_oracle``) and return None; ``inspect_array_sharding`` reports shardings eagerly and under
jit."""

from __future__ import annotations

import numpy as np
import pytest
from _jax_oracle import run_jax

import funcgrad
from funcgrad.sharding import AxisType, NamedSharding, P, make_mesh

MESH = make_mesh((4, 2), ("x", "y"), (AxisType.Auto,) * 2)
MESH1 = make_mesh((8,), ("x",), (AxisType.Auto,))

CASES = [
    ((8, 4), "2d", P("x", "y")),
    ((8, 4), "2d", P("x")),
    ((8, 4), "2d", P(None, "y")),
    ((8, 4), "2d", P()),
    ((8, 4), "1d", P("x")),
    ((8, 4), "2d", P(("x", "y"))),
    ((8, 4), "2d", P("y", "x")),
    ((16, 2), "2d", P("x", "y")),
    ((8,), "1d", P("x")),
    ((6, 6), "2d", P(None, "y")),
    # wider than max_width: rich narrows the columns (flax's FSDP example prints such a table)
    ((4, 256), "2d", P("x", "y")),
    ((32, 64), "2d", P(None, ("x", "y"))),
]


ORACLE = """
import contextlib, io, json, numpy as np, jax
from jax.sharding import PartitionSpec as P, AxisType
mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
mesh1 = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))
out = []
for shape, which, spec in CASES:
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    a = jax.device_put(x, jax.NamedSharding(mesh if which == "2d" else mesh1, P(*spec)))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        ret = jax.debug.visualize_array_sharding(a)
    out.append([buf.getvalue(), ret])
buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    jax.debug.visualize_sharding((8, 4), jax.NamedSharding(mesh, P("x", "y")))
out.append([buf.getvalue(), None])
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def jax_tables():
    cases = [(shape, which, tuple(spec)) for shape, which, spec in CASES]
    return run_jax(f"CASES = {cases!r}\n" + ORACLE)


@pytest.mark.parametrize("k", range(len(CASES)))
def test_visualize_array_sharding_prints_jax_table(capsys, jax_tables, k):
    shape, which, spec = CASES[k]
    want, want_ret = jax_tables[k]
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    mesh = MESH if which == "2d" else MESH1
    got_ret = funcgrad.debug.visualize_array_sharding(funcgrad.device_put(x, NamedSharding(mesh, spec)))
    assert got_ret is None and want_ret is None
    assert capsys.readouterr().out == want


def test_visualize_sharding_of_a_shape(capsys, jax_tables):
    funcgrad.debug.visualize_sharding((8, 4), NamedSharding(MESH, P("x", "y")))
    assert capsys.readouterr().out == jax_tables[-1][0]
    with pytest.raises(ValueError, match="1 and 2 dimensions"):
        funcgrad.debug.visualize_sharding((2, 2, 2), NamedSharding(MESH, P()))


def test_visualize_array_sharding_of_a_traced_value_prints_as_jax(capsys):
    # As JAX's (jax 0.10.2's debugging_primitives_test test_visualize_sharding_shard_map): inside
    # jit the table of the sharding inspect_array_sharding reports; a one-device program's is CPU 0,
    # the table jax.debug.visualize_array_sharding prints for an array on device 0.
    def f(x):
        assert funcgrad.debug.visualize_array_sharding(x) is None
        return x

    funcgrad.debug.visualize_array_sharding(funcgrad.device_put(np.ones(4), funcgrad.devices()[0]))
    eager = capsys.readouterr().out
    assert "CPU 0" in eager
    funcgrad.jit(f)(np.ones(4))
    assert capsys.readouterr().out == eager


def test_inspect_array_sharding_eagerly_and_under_jit():
    s = NamedSharding(MESH, P("x", "y"))
    x = funcgrad.device_put(np.ones((8, 4)), s)
    seen = []
    funcgrad.debug.inspect_array_sharding({"a": x}, callback=seen.append)
    assert seen == [s]

    def f(a):
        funcgrad.debug.inspect_array_sharding(a * 2, callback=seen.append)
        return a + 1

    with funcgrad.sharding.use_mesh(MESH):
        out = funcgrad.jit(f)(x)
    np.testing.assert_allclose(out, 2.0)
    assert len(seen) == 2 and isinstance(seen[1], funcgrad.sharding.Sharding)
    # On Explicit axes the compiled program's sharding, as jax 0.10.2 reports it (its mesh's axes
    # Auto). (The same f, called with the same layout typed over an Explicit mesh, is traced again:
    # the sharding is part of the argument's type, also on jaxlib's C++ fast path.)
    explicit = funcgrad.sharding.make_mesh((4, 2), ("x", "y"))
    with funcgrad.sharding.use_mesh(explicit):
        funcgrad.jit(f)(funcgrad.device_put(np.ones((8, 4)), P("x", "y")))
    assert repr(seen[-1]) == (
        "NamedSharding(mesh=Mesh('x': 4, 'y': 2, axis_types=(Auto, Auto)), spec=P('x', 'y'), "
        "memory_kind=device)"
    )


COLOUR_ORACLE = """
import contextlib, io, json, os, numpy as np, jax
from jax.sharding import PartitionSpec as P, AxisType
os.environ.update(FORCE_COLOR="1", COLORTERM="truecolor")  # as a notebook or a colour terminal shows it
mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
out = []
for spec in (P("x", "y"), P(("x", "y"))):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        jax.debug.visualize_sharding((8, 4), jax.NamedSharding(mesh, spec))
    out.append(buf.getvalue())
print(json.dumps(out))
"""


@pytest.mark.slow  # (a jax subprocess of its own)
def test_the_table_in_colour_is_jaxs(capsys, monkeypatch):
    pytest.importorskip("rich")
    pytest.importorskip("matplotlib")
    want = run_jax(COLOUR_ORACLE)
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("COLORTERM", "truecolor")
    for spec, text in zip((P("x", "y"), P(("x", "y"))), want):
        funcgrad.debug.visualize_sharding((8, 4), NamedSharding(MESH, spec))
        got = capsys.readouterr().out
        assert "\x1b[" in got and got == text


ORDERED_ORACLE = """
import json, jax, jax.numpy as jnp
from jax.sharding import NamedSharding, PartitionSpec as P
mesh = jax.make_mesh((8,), ("i",))
out = []
for f in (
    jax.pmap(lambda x: jax.debug.print("{}", x, ordered=True) or x),
    jax.jit(lambda x: jax.debug.print("{}", x, ordered=True) or x, in_shardings=NamedSharding(mesh, P("i"))),
):
    try:
        f(jnp.arange(8.0))
        out.append(None)
    except Exception as e:
        out.append([type(e).__name__, str(e).split(":")[0]])
print(json.dumps(out))
"""


def test_an_ordered_debug_print_over_several_devices_is_refused_as_jax():
    # (JAX's debugging_primitives_test test_ordered_print_not_supported_in_pmap: an ordered print
    # has no one order over several devices, under pmap and a jit over a mesh alike)
    mesh = make_mesh((8,), ("i",), (AxisType.Auto,))
    got = []
    for f in (
        funcgrad.pmap(lambda x: funcgrad.debug.print("{}", x, ordered=True) or x),
        funcgrad.jit(
            lambda x: funcgrad.debug.print("{}", x, ordered=True) or x,
            in_shardings=NamedSharding(mesh, P("i")),
        ),
    ):
        try:
            f(np.arange(8.0))
            got.append(None)
        except Exception as e:  # noqa: BLE001 - the type and words are the result
            got.append([type(e).__name__, str(e).split(":")[0]])
    assert got == run_jax(ORDERED_ORACLE)
    assert got[0] == ["ValueError", "The following ordered effects are not supported for more than 1 device"]


PARTITIONED_ORACLE = """
import json, numpy as np, jax
seen = []
keep = lambda tag: (lambda v: seen.append([tag, np.asarray(v).tolist()]))
mesh = jax.make_mesh((2,), ("x",), axis_types=(jax.sharding.AxisType.Auto,))
arr = jax.device_put(np.arange(8), jax.NamedSharding(mesh, jax.P("x")))
jax.jit(lambda x: jax.debug.callback(keep("jit"), x, partitioned=True))(arr)
jax.debug.callback(keep("eager"), arr, partitioned=True)
jax.jit(lambda x: jax.debug.callback(keep("sum"), x.sum(), partitioned=True))(arr)
mesh3 = jax.make_mesh((1, 1, 2), ("a", "b", "c"), axis_types=(jax.sharding.AxisType.Auto,) * 3)
a3 = jax.device_put(np.arange(24).reshape(2, 3, 4), jax.NamedSharding(mesh3, jax.P("a", "b", "c")))
jax.jit(jax.vmap(lambda x: jax.debug.callback(keep("vmap"), x, partitioned=True)))(a3)
jax.effects_barrier()
print(json.dumps(sorted(seen)))
"""


def test_partitioned_debug_callbacks_run_on_each_device_as_jax():
    # (JAX's debugging_primitives_test PartitionedDebugCallbackTest: partitioned=True calls the
    # callback on each device's block inside a compiled program -- XLA's partitioned callback
    # target -- and on the whole value eagerly; funcgrad refused partitioned=True)
    seen = []
    keep = lambda tag: lambda v: seen.append([tag, np.asarray(v).tolist()])  # noqa: E731
    mesh = make_mesh((2,), ("x",), (AxisType.Auto,))
    arr = funcgrad.device_put(np.arange(8), NamedSharding(mesh, P("x")))
    funcgrad.jit(lambda x: funcgrad.debug.callback(keep("jit"), x, partitioned=True))(arr)
    funcgrad.debug.callback(keep("eager"), arr, partitioned=True)
    funcgrad.jit(lambda x: funcgrad.debug.callback(keep("sum"), x.sum(), partitioned=True))(arr)
    mesh3 = make_mesh((1, 1, 2), ("a", "b", "c"), (AxisType.Auto,) * 3)
    a3 = funcgrad.device_put(np.arange(24).reshape(2, 3, 4), NamedSharding(mesh3, P("a", "b", "c")))
    funcgrad.jit(funcgrad.vmap(lambda x: funcgrad.debug.callback(keep("vmap"), x, partitioned=True)))(a3)
    funcgrad.effects_barrier()
    assert sorted(seen) == run_jax(PARTITIONED_ORACLE)


STAND_INS = """
import contextlib, io, json, numpy as np, jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
class D:
    def __init__(self, platform, id):
        self.platform, self.id = platform, id
def mesh(shape, names):
    return Mesh(np.array([D("CPU", i) for i in range(int(np.prod(shape)))]).reshape(shape), names)
out = []
for shape, (mshape, names), spec in CASES:
    s = NamedSharding(mesh(mshape, names), P(*spec))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        jax.debug.visualize_sharding(shape, s)
    index = {d.id: [[sl.start, sl.stop] for sl in idx] for d, idx in s.devices_indices_map(shape).items()}
    out.append([buf.getvalue(), index])
print(json.dumps(out))
"""

STAND_IN_CASES = [
    ((5,), ((1,), ("x",)), ("x",)),
    ((8,), ((4,), ("x",)), ("x",)),
    ((4, 4), ((2, 2), ("x", "y")), ("x",)),
    ((8, 8), ((2, 2), ("x", "y")), ("y", "x")),
    ((8,), ((2, 2), ("x", "y")), (("y", "x"),)),
    ((4, 8), ((2, 2), ("x", "y")), (None, "y")),
]


def test_meshes_of_duck_typed_stand_in_devices_draw_as_jax(capsys):
    # debugging_primitives_test's VisualizeShardingTest: JAX's Mesh keeps objects with a device's
    # id and platform; visualize_sharding and devices_indices_map read them (funcgrad refused them)
    from funcgrad.sharding import Mesh

    cases = [(shape, m, tuple(spec)) for shape, m, spec in STAND_IN_CASES]
    want = run_jax(f"CASES = {cases!r}\n" + STAND_INS)

    class D:
        def __init__(self, platform, id):
            self.platform, self.id = platform, id

    for (shape, (mshape, names), spec), (table, index) in zip(STAND_IN_CASES, want, strict=True):
        devices = np.array([D("CPU", i) for i in range(int(np.prod(mshape)))]).reshape(mshape)
        s = NamedSharding(Mesh(devices, names), P(*spec))
        funcgrad.debug.visualize_sharding(shape, s)
        assert capsys.readouterr().out == table
        got = {d.id: [[sl.start, sl.stop] for sl in idx] for d, idx in s.devices_indices_map(shape).items()}
        assert got == {int(k): v for k, v in index.items()}
    with pytest.raises(TypeError, match=r"devices must be elements of funcgrad.devices\(\)"):
        Mesh(np.array([1, 2]), ("x",))  # (not even a stand-in: JAX keeps it, funcgrad says what is wrong)
