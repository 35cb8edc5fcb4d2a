"""``funcgrad.experimental.serialize_executable`` and ``topologies`` against jax's: a compiled
function serialized and loaded again computes what it did (and what jax's does), with its
constants, keyword arguments and pytrees; loading neither traces nor compiles; the errors and the
CPU topologies are JAX's (funcgrad/experimental/serialize_executable.py, xla_bridge/serialization.py)."""

import jax
import jax.experimental.serialize_executable as jse
import jax.experimental.topologies as jtopo
import numpy as np
import pytest

import funcgrad
import funcgrad.experimental.serialize_executable as fse
import funcgrad.experimental.topologies as ftopo
import funcgrad.numpy as fnp
from funcgrad.kernel import monitoring

BIG = np.arange(5000.0)  # (a constant funcgrad passes to the program as an argument)


def _f(lib):
    def f(x, scale, *, shift):
        return {"y": lib.numpy.sin(x) * scale + shift, "n": x.sum() + lib.numpy.asarray(BIG)[::1000].sum()}

    return f


def _roundtrip(lib, se):
    x = np.linspace(0.0, 1.0, 6).reshape(2, 3).astype(np.float32)
    compiled = lib.jit(_f(lib)).lower(x, np.float32(2), shift=np.float32(1)).compile()
    payload, in_tree, out_tree = se.serialize(compiled)
    loaded = se.deserialize_and_load(payload, in_tree, out_tree)
    return compiled, loaded, x


def test_roundtrip_as_jax():
    j_compiled, j_loaded, x = _roundtrip(jax, jse)
    f_compiled, f_loaded, _ = _roundtrip(funcgrad, fse)
    compiles = []
    listen = lambda event, *a, **k: compiles.append(event)  # noqa: E731
    monitoring.register_event_duration_secs_listener(listen)
    try:
        got = f_loaded(x, np.float32(3), shift=np.float32(0.5))
    finally:
        monitoring.unregister_event_duration_listener(listen)
    assert not [e for e in compiles if "compile" in e or "trace" in e]
    want = j_loaded(x, np.float32(3), shift=np.float32(0.5))
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-6)
    np.testing.assert_allclose(got["n"], want["n"], rtol=1e-6)
    assert got["y"].dtype == want["y"].dtype
    assert f_loaded.as_text() == f_compiled.as_text()
    assert len(f_compiled._compiled.const_buffers) == 1  # (the hoisted constant travelled)
    assert funcgrad.tree.structure(f_loaded.args_info) == funcgrad.tree.structure(f_compiled.args_info)
    with pytest.raises(TypeError):
        f_loaded(x, np.float32(3))  # (the keyword is missing: another input tree)


def test_errors_as_jax():
    x = fnp.ones(3)
    payload, in_tree, out_tree = fse.serialize(funcgrad.jit(lambda a: a * 2).lower(x).compile())
    with pytest.raises(ValueError, match="Execution devices belong to a client other than `backend`"):
        fse.deserialize_and_load(
            payload, in_tree, out_tree, backend=_OtherClient(), execution_devices=funcgrad.devices()
        )
    r = funcgrad.new_ref(fnp.zeros(()))

    def g(a):
        r[...] += a.sum()
        return a

    with pytest.raises(ValueError, match="serialize with a closed-over"):
        fse.serialize(funcgrad.jit(g).lower(x).compile())


class _OtherClient:
    platform, platform_version = "other", "0"

    def devices(self):
        return []


def test_topologies_as_jax():
    for lib in (jtopo, ftopo):
        with pytest.raises(NotImplementedError, match="topology not implemented for cpu"):
            lib.get_topology_desc(platform="cpu")
    jt, ft = jtopo.get_attached_topology(), ftopo.get_attached_topology()
    assert [d.id for d in ft.devices] == [d.id for d in jt.devices]
    jm = jtopo.make_mesh(jt, (len(jt.devices),), ("x",))
    fm = ftopo.make_mesh(ft, (len(ft.devices),), ("x",))
    assert dict(fm.shape) == dict(jm.shape)
    assert [d.id for d in fm.devices.flat] == [d.id for d in jm.devices.flat]
