"""``jnp.array``/``jnp.asarray(x, device=sharding)`` of a traced value inside ``jit``, against jax
0.10.2 (pjit_test's test_jnp_array_inside_jit_sharding): the value is laid out as the sharding says
(JAX's conversion to a sharding), where funcgrad refused ("a traced value has no placement"); of a
NumPy constant too, and ``with_sharding_constraint`` of one (staged, as JAX's: funcgrad placed the
constant eagerly and the jit's result lost its placement)."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp

jax = pytest.importorskip("jax")

INP = np.arange(16).reshape(8, 2)


def _sharding(lib):
    sh = lib.sharding
    mesh = lib.make_mesh((2, 2), ("x", "y"), axis_types=(sh.AxisType.Auto,) * 2)
    return sh.NamedSharding(mesh, sh.PartitionSpec("x", "y"))


@pytest.mark.parametrize("lib,np_", [(funcgrad, fnp), (jax, jax.numpy)], ids=["funcgrad", "jax"])
@pytest.mark.parametrize("how", ["array", "asarray", "grad", "const", "wsc_const"])
def test_array_device_sharding_of_a_traced_value(lib, np_, how):
    s = _sharding(lib)
    if how == "array":
        f = lambda x: np_.array(x, dtype=np.float32, device=s)  # noqa: E731
    elif how == "asarray":
        f = lambda x: np_.asarray(x * 2, device=s)  # noqa: E731
    elif how == "const":
        f = lambda x: np_.array(INP, dtype=np.float32, device=s)  # noqa: E731
    elif how == "wsc_const":
        f = lambda x: lib.lax.with_sharding_constraint(INP * 2, s)  # noqa: E731
    else:
        f = lambda x: lib.grad(lambda y: (np_.asarray(y, device=s) ** 2).sum())(x * 1.0)  # noqa: E731
    out = lib.jit(f)(INP)
    assert out.sharding == s
    assert out.committed
    want = {"array": INP, "asarray": INP * 2, "grad": 2.0 * INP, "const": INP, "wsc_const": INP * 2}[how]
    np.testing.assert_allclose(np.asarray(out), want)
    assert out.dtype == (np.float32 if how in ("array", "const") else np_.asarray(want).dtype)
    # the shards hold the blocks the sharding says
    for shard in out.addressable_shards:
        np.testing.assert_allclose(np.asarray(shard.data), want[shard.index])


@pytest.mark.parametrize("lib,np_", [(funcgrad, fnp), (jax, jax.numpy)], ids=["funcgrad", "jax"])
def test_fill_device_is_ignored_inside_jit(lib, np_):
    # JAX's fills (lax.full: zeros, ones, full, *_like) ignore a concrete device or sharding inside
    # jit (the fill is traced; full places only a concrete one): funcgrad honoured it (and refused
    # a Device as "a traced value has no placement")
    s = _sharding(lib)
    for f in (lambda: np_.zeros((8, 2), device=s), lambda: lib.lax.full((8, 2), 1.0, sharding=s)):
        out = lib.jit(f)()
        assert out.sharding == lib.sharding.SingleDeviceSharding(lib.devices()[0]) and not out.committed
    out = lib.jit(lambda x: np_.full_like(x, 2.0, device=lib.devices()[1]))(INP)
    assert out.devices() == {lib.devices()[0]} and not out.committed
    np.testing.assert_array_equal(np.asarray(out), np.full_like(INP, 2))


@pytest.mark.parametrize("lib,np_", [(funcgrad, fnp), (jax, jax.numpy)], ids=["funcgrad", "jax"])
def test_device_put_inside_jit_says_where_the_program_runs(lib, np_):
    # JAX's device_put inside jit (Auto axes) lowers to nothing: the program runs on the
    # sharding's devices and XLA lays the result out (replicated here); funcgrad constrained it to
    # the sharding, and placed a constant eagerly (the jit's result then on one device)
    s = _sharding(lib)
    replicated = lib.sharding.NamedSharding(s.mesh, lib.sharding.PartitionSpec())
    for f in (
        lambda x: lib.device_put(x * 2, s),
        lambda x: lib.device_put(INP * 2, s),
        lambda x: np_.eye(8, device=s) + x[0, 0] * 0,
    ):
        out = lib.jit(f)(INP)
        assert out.sharding == replicated and out.committed
    np.testing.assert_array_equal(np.asarray(out), np.eye(8))
