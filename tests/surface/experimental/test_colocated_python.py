"""``funcgrad.experimental.colocated_python`` against jax 0.10.2's on the CPU: the colocated devices
of devices and meshes, functions and objects run on them (results, devices), specialisation, and
the refusals (no devices, a traced call, outputs that break the given specs)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.experimental import colocated_python as cp


def _run(lib, jnp, cp_mod):
    out = []
    devs = lib.devices()[:1]
    out.append([d.id for d in cp_mod.colocated_cpu_devices(devs)])
    f = cp_mod.colocated_python(lambda x, scale=1.0: {"y": x * scale, "n": x.sum()})
    x = lib.device_put(jnp.arange(4.0, dtype=np.float32), devs[0])
    res = f(x, scale=lib.device_put(jnp.float32(3.0), devs[0]))
    out += [np.asarray(res["y"]), np.asarray(res["n"]), sorted(d.id for d in res["y"].sharding.device_set)]
    g = cp_mod.colocated_python(lambda: jnp.ones(2, np.float32)).specialize(devices=devs)
    out.append(np.asarray(g()))
    return out


def test_colocated_calls_match_jax():
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax.experimental import colocated_python as jcp

    ours, theirs = _run(funcgrad, fnp, cp), _run(jax, jnp, jcp)
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(a, b)


def test_meshes_objects_and_refusals():
    mesh = funcgrad.sharding.Mesh(np.array(funcgrad.devices()[:1]), ("x",))
    cpu_mesh = cp.colocated_cpu_devices(mesh)
    assert cpu_mesh.axis_names == ("x",) and cpu_mesh.devices.shape == (1,)

    @cp.colocated_python_class
    class Counter:
        def __init__(self, start):
            self.n = start

        def add(self, x):
            self.n += int(x.sum())
            return fnp.full((), self.n)

    c = Counter(10)
    one = funcgrad.device_put(fnp.ones(2), funcgrad.devices()[0])
    c.add(one)
    assert int(c.add(one)) == 14

    with pytest.raises(ValueError, match="must be first specialized with devices"):
        cp.colocated_python(lambda: fnp.ones(2))()
    f = cp.colocated_python(lambda x: x * 2)
    with pytest.raises(TypeError, match="traced values"):
        funcgrad.jit(f)(one)
    bad = f.specialize(out_specs_fn=lambda x: funcgrad.ShapeDtypeStruct((3,), x.dtype))
    with pytest.raises(ValueError, match="does not match the specified"):
        bad(one)
    with pytest.raises(ValueError, match="already specified"):
        bad.specialize(out_specs_fn=lambda x: x)
