"""JAX's checks of the mesh in scope against values' types, against jax 0.10.2 in the same process
(pjit_test's ShardingInTypesTest: test_broadcasting_nary_error, test_user_auto_mix_error,
test_abstract_mesh_changing_names_sizes_grad): an operand typed
over another mesh than the one in scope is refused; a jaxpr staged under ``use_abstract_mesh`` is
differentiated as it computes."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import sharding as fs

jax = pytest.importorskip("jax")
jnp = jax.numpy
js = jax.sharding

X = np.arange(16.0, dtype=np.float32).reshape(8, 2)


def _explicit(lib, sh, shape, names):
    if lib is jax:
        return jax.make_mesh(shape, names, axis_types=(js.AxisType.Explicit,) * len(shape))
    return fs.make_mesh(shape, names)


@pytest.mark.parametrize("lib,np_,sh", [(funcgrad, fnp, fs), (jax, jnp, js)], ids=["funcgrad", "jax"])
def test_an_operand_typed_over_another_mesh_is_refused(lib, np_, sh):
    mesh = _explicit(lib, sh, (2, 1), ("x", "y"))
    P = sh.PartitionSpec
    with sh.set_mesh(mesh):
        arr = lib.device_put(X, P("x", "y"))

        @lib.jit
        def f(x, y):
            x = x * 2
            with sh.use_abstract_mesh(mesh.abstract_mesh.update_axis_types({"x": sh.AxisType.Auto})):
                return x @ y

        with pytest.raises(ValueError, match="For primitive dot_general, context mesh.*aval mesh"):
            f(arr, arr.T)
    one = _explicit(lib, sh, (1,), ("x",))
    other = sh.Mesh(np.asarray(lib.devices()[:1]), ("y",), axis_types=(sh.AxisType.Explicit,))
    with sh.set_mesh(one):
        a = lib.device_put(np.arange(8), sh.NamedSharding(one, P()))
        b = lib.device_put(np.arange(8), sh.NamedSharding(other, P()))
        with pytest.raises(ValueError, match="For primitive add, context mesh.*aval mesh"):
            lib.jit(lambda x, y: x + y)(a, b)


def test_gradient_through_a_renamed_abstract_mesh():
    def run(lib, np_, sh):
        mesh = _explicit(lib, sh, (2, 2), ("x", "y"))
        P = sh.PartitionSpec
        with sh.set_mesh(mesh):
            am = mesh.abstract_mesh

            @lib.jit
            def f(x):
                x = np_.sin(x)
                with sh.use_abstract_mesh(am.update(axis_sizes=(4, 1), axis_names=("a", "b"))):
                    out = sh.reshard(x, P(("a", "b"), None)) * 2
                return sh.reshard(out, P("y", None))

            arr = lib.device_put(X, P("x", "y"))
            g = lib.jit(lib.grad(lambda x: f(x).sum()))(arr)
            return tuple(g.sharding.spec), np.asarray(g)

    ours, theirs = run(funcgrad, fnp, fs), run(jax, jnp, js)
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-6)
    np.testing.assert_allclose(ours[1], 2 * np.cos(X), rtol=1e-6)
