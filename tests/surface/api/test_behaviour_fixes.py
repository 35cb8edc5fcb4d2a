"""The behaviour fixes of issue 15, checked as a user meets them: errors that name the
transformation the user called and the fix, and JAX's derivative of abs at 0."""

from __future__ import annotations

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.core import ConcretizationTypeError


def loss(x):
    return np.sin(x)  # NumPy, not funcgrad.numpy


@pytest.mark.parametrize(
    "name, call",
    [
        ("grad(loss)", lambda: funcgrad.grad(loss)(1.0)),
        ("value_and_grad(loss)", lambda: funcgrad.value_and_grad(loss)(1.0)),
        ("vmap(loss)", lambda: funcgrad.vmap(loss)(np.ones(2))),
        ("jacrev(loss)", lambda: funcgrad.jacrev(loss)(1.0)),
        ("jacfwd(loss)", lambda: funcgrad.jacfwd(loss)(1.0)),
        ("hessian(loss)", lambda: funcgrad.hessian(loss)(1.0)),
        ("jvp(loss)", lambda: funcgrad.jvp(loss, (1.0,), (1.0,))),
        ("vjp(loss)", lambda: funcgrad.vjp(loss, 1.0)),
        ("jit(loss)", lambda: funcgrad.jit(loss)(1.0)),
        ("jit(loss)", lambda: funcgrad.grad(funcgrad.jit(loss))(1.0)),  # the innermost one
    ],
)
def test_numpy_on_a_tracer_names_the_transformation_and_the_fix(name, call):
    with pytest.raises(ConcretizationTypeError) as info:
        call()
    msg = str(info.value)
    assert f"inside {name}" in msg
    assert "use funcgrad.numpy" in msg and "numpy.asarray()" in msg


@pytest.mark.parametrize(
    "f",
    [
        lambda x, n: fnp.zeros(n),
        lambda x, n: fnp.ones((n, 2)),
        lambda x, n: fnp.reshape(x, (n,)),
        lambda x, n: fnp.broadcast_to(x, (n, 3)),
    ],
)
def test_a_traced_size_suggests_static_argnums(f):
    with pytest.raises(ConcretizationTypeError, match="static_argnums") as info:
        funcgrad.jit(f)(np.ones(3), 3)
    assert "depends on the argument n" in str(info.value)
    assert funcgrad.jit(f, static_argnums=1)(np.ones(3), 3).shape[0] == 3


def test_grad_abs_at_zero_is_one_as_in_jax():
    assert float(funcgrad.grad(fnp.abs)(0.0)) == 1.0
    assert float(funcgrad.grad(funcgrad.lax.abs)(0.0)) == 1.0
    assert float(funcgrad.jit(funcgrad.grad(fnp.abs))(0.0)) == 1.0
    x = np.array([-2.0, -0.0, 0.0, 3.0])
    np.testing.assert_array_equal(funcgrad.vmap(funcgrad.grad(fnp.abs))(x), [-1.0, 1.0, 1.0, 1.0])
    assert float(funcgrad.grad(lambda x: fnp.abs(x) ** 2)(-1.5)) == -3.0
    # complex: d|z| = Re(conj(z) dz) / |z|, 0 at 0, as in JAX
    g = funcgrad.grad(fnp.abs)(3.0 + 4.0j)
    np.testing.assert_allclose(complex(g), (3.0 - 4.0j) / 5.0)
    assert complex(funcgrad.grad(fnp.abs)(0j)) == 0


# -- Found by running JAX's documentation snippets on funcgrad (this session) -----------------


def _with_metrics(x):
    return fnp.sum(x**2), {"name": "l2", "count": 3, "v": x[0], "note": None, "tag": ("a", 1.5)}


@pytest.mark.parametrize(
    "how",
    [
        lambda: funcgrad.grad(_with_metrics, has_aux=True)(fnp.arange(3.0))[1],
        lambda: funcgrad.value_and_grad(_with_metrics, has_aux=True)(fnp.arange(3.0))[0][1],
        lambda: funcgrad.vjp(_with_metrics, fnp.arange(3.0), has_aux=True)[2],
        lambda: funcgrad.jvp(_with_metrics, (fnp.arange(3.0),), (fnp.ones(3),), has_aux=True)[2],
        lambda: funcgrad.linearize(_with_metrics, fnp.arange(3.0), has_aux=True)[2],
        lambda: funcgrad.jacfwd(_with_metrics, has_aux=True)(fnp.arange(3.0))[1],
        lambda: funcgrad.jacrev(_with_metrics, has_aux=True)(fnp.arange(3.0))[1],
    ],
)
def test_aux_may_hold_non_array_leaves(how):
    # As in JAX: strings and other Python objects in aux come back as they are; arrays and
    # numbers come back as arrays.
    aux = how()
    assert aux["name"] == "l2" and aux["note"] is None and aux["tag"][0] == "a"
    assert float(aux["v"]) == 0.0 and int(aux["count"]) == 3 and float(aux["tag"][1]) == 1.5


def test_remat_is_the_function_not_a_module():
    assert funcgrad.remat is funcgrad.checkpoint
    g = funcgrad.grad(funcgrad.remat(lambda x: fnp.sin(x) ** 2))(1.0)
    assert float(g) == pytest.approx(np.sin(2.0), rel=1e-15)


@pytest.mark.parametrize(
    "transform",
    [funcgrad.jit, funcgrad.grad, funcgrad.vmap, lambda f: lambda x: funcgrad.jvp(f, (x,), (x,))[1]],
)
def test_isinstance_array_is_true_for_traced_values(transform):
    # As jax.Array: user code may check isinstance(x, funcgrad.Array) inside transformations.
    seen = []

    def f(x):
        seen.append((isinstance(x, funcgrad.Array), isinstance(x, fnp.ndarray)))
        return fnp.sum(x * 2.0)

    transform(f)(fnp.ones(3) if transform is funcgrad.vmap else fnp.float64(1.5))
    assert seen and all(a and b for a, b in seen)
    assert isinstance(fnp.ones(2), funcgrad.Array) and fnp.ndarray is funcgrad.Array
    assert not isinstance(np.ones(2), funcgrad.Array) and not isinstance(1.0, funcgrad.Array)
    assert funcgrad.Array.__name__ == "Array" and funcgrad.Array(np.arange(2.0)).tolist() == [0.0, 1.0]


def test_errors_typing_and_dlpack_modules_as_in_jax():
    import funcgrad.dlpack  # noqa: PLC0415
    from funcgrad import errors  # noqa: PLC0415
    from funcgrad.typing import ArrayLike, DTypeLike  # noqa: PLC0415

    cases = [
        (errors.TracerArrayConversionError, lambda x: np.asarray(x)),
        (errors.TracerIntegerConversionError, lambda x: list(range(x))),
        (errors.TracerBoolConversionError, lambda x: 1 if x > 0 else 0),
        (errors.ConcretizationTypeError, lambda x: float(x)),
    ]
    for cls, f in cases:
        with pytest.raises(cls):
            funcgrad.jit(f)(3)
        assert issubclass(cls, errors.ConcretizationTypeError) and issubclass(cls, TypeError)
    with pytest.raises(errors.NonConcreteBooleanIndexError):
        funcgrad.jit(lambda x: x[x > 0])(fnp.arange(3.0))
    from funcgrad.experimental import checkify  # noqa: PLC0415

    assert checkify.JaxRuntimeError is errors.JaxRuntimeError
    assert ArrayLike is not None and DTypeLike is not None
    x = funcgrad.dlpack.from_dlpack(np.arange(3.0))
    assert isinstance(x, funcgrad.Array) and x.tolist() == [0.0, 1.0, 2.0]
    assert funcgrad.dlpack.is_supported_dtype(np.float32) and not funcgrad.dlpack.is_supported_dtype(
        "float8_e4m3fn"
    )
