"""Errors as a user meets them (design.md, "Errors are part of the design"): NumPy called on a
traced value names the transformation and the fix, a traced size suggests ``static_argnums``, and
funcgrad.errors / funcgrad.typing / funcgrad.dlpack are the modules JAX has. (Each subject's own
errors are tested with the subject: tests/surface/numpy/test_numpy_errors.py, tests/kernel/test_ir.py,
tests/surface/api/test_jit.py, ...)"""

from __future__ import annotations

import functools
import re

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
    with pytest.raises(TypeError, match="static_argnums") as info:
        funcgrad.jit(f)(np.ones(3), 3)
    assert type(info.value) is TypeError  # (jax's type for a traced shape)
    # (JAX's words)
    assert "not available in Python because it depends on the value of the argument n" in str(info.value)
    assert funcgrad.jit(f, static_argnums=1)(np.ones(3), 3).shape[0] == 3


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

    # As in JAX: checkify's is a ValueError of its own, errors' is the runtime one (jaxlib's).
    assert issubclass(checkify.JaxRuntimeError, ValueError)
    assert issubclass(funcgrad.xla_bridge.XlaBridgeError, errors.JaxRuntimeError)
    assert ArrayLike is not None and DTypeLike is not None
    x = funcgrad.dlpack.from_dlpack(np.arange(3.0))
    assert isinstance(x, funcgrad.Array) and x.tolist() == [0.0, 1.0, 2.0]
    assert funcgrad.dlpack.is_supported_dtype(np.float32) and not funcgrad.dlpack.is_supported_dtype(
        "float8_e4m3fn"
    )


def test_non_array_arguments_are_named_in_jax_words():
    # JAX's api_test test_bad_input / test_grad_bad_input / test_grad_object_array_error
    with pytest.raises(TypeError, match=r".* 'foo' of type <.*'str'> is not a valid JAX type"):
        funcgrad.grad(lambda x: x)("foo")
    with pytest.raises(TypeError, match=r".*is not a valid JAX type"):
        funcgrad.grad(lambda x: x)(np.array([1, 2, 3], dtype=object))
    with pytest.raises(
        TypeError,
        match="Error interpreting argument to .* as an abstract array. The problematic value is of "
        "type .* and was passed to the function at path x.",
    ):
        funcgrad.jit(lambda x: x)("foo")

    # jit names the function by its repr, as JAX's (equinox's FAQ prints this error)
    def loss_fn(model, x):
        return x

    import jax

    texts = []
    for jit in (funcgrad.jit, jax.jit):
        with pytest.raises(TypeError) as err:
            jit(loss_fn)({"activation": np.sin}, 1.0)
        texts.append(str(err.value))
    assert texts[0] == texts[1] and "<function test_non_array" in texts[0]


def test_escaped_tracer_is_named_in_jax_words():
    # JAX's api_test test_escaped_tracer_shape_dtype / test_escaped_tracer_remat ("global state")
    box = []

    @funcgrad.jit
    def leak(x):
        box.append(x * 2)
        return x

    leak(fnp.ones((4, 3), "int32"))
    with pytest.raises(funcgrad.errors.UnexpectedTracerError, match=r"int32\[4,3\][\s\S]*global state"):
        funcgrad.jit(lambda y: y + box[0])(1)
    # (test_escaped_tracer_omnistaging: JAX names the line that made the leaked value)
    with pytest.raises(
        funcgrad.errors.UnexpectedTracerError, match=r"was created on line .*test_errors\.py:\d+"
    ):
        funcgrad.jit(lambda y: y + box[0])(1)


def test_vjp_linearize_and_shape_dtype_struct_errors_as_jax():
    # JAX's api_test test_vjp_too_many_args / _multiple_arguments_error_message /
    # _bad_cotangent_shape, test_issue_871 / test_linearize_aval_error, test_grad_and_aux_error,
    # test_shape_dtype_struct / _scalar / _dtype_none
    def foo(x):
        return (x, x)

    _, f_vjp = funcgrad.vjp(foo, 1.0)
    with pytest.raises(TypeError, match="applied to foo was called with 2 arguments"):
        f_vjp(1.0, 1.0)
    _, pullback = funcgrad.vjp(lambda a, b: a @ b, np.ones((2, 5)), np.ones((5, 3)))
    with pytest.raises(ValueError, match="unexpected JAX type"):
        pullback(np.ones((2, 4)))
    _, f_jvp = funcgrad.linearize(fnp.sum, fnp.array([1, 2, 3]))
    with pytest.raises(ValueError, match="tangent values inconsistent with the original primal values"):
        f_jvp(fnp.ones((3, 2)))
    _, f_jvp = funcgrad.linearize(lambda x: x, 1.0)
    assert float(f_jvp(1.0)) == 1.0
    with pytest.raises(ValueError, match="tangent values inconsistent"):
        f_jvp(1)
    with pytest.raises(TypeError, match="two-element tuple"):
        funcgrad.grad(lambda x: (x, 2.0, 3.0), has_aux=True)(1.0)
    jax = pytest.importorskip("jax")
    for lib in (jax, funcgrad):  # (JAX's words first)
        msg = "^expected function with aux output to return a two-element tuple, but got type"
        with pytest.raises(TypeError, match=msg):
            lib.grad(lambda x: x, has_aux=True)(1.0)
        with pytest.raises(TypeError, match=msg):
            lib.value_and_grad(lambda x: [x, x, x], has_aux=True)(1.0)
    s = funcgrad.ShapeDtypeStruct((4, 2), np.float32)
    assert len(s) == 4
    with pytest.raises(TypeError, match="len\\(\\) of unsized object"):
        len(funcgrad.ShapeDtypeStruct((), np.float32))
    with pytest.raises(ValueError, match="dtype must be specified"):
        funcgrad.ShapeDtypeStruct((), None)


def test_jvp_argument_errors_in_jax_words():
    # JAX's api_test test_jvp_non_tuple_arguments / test_jvp_mismatched_arguments
    with pytest.raises(
        TypeError,
        match="primal and tangent arguments to jax.jvp must be tuples or lists; found float and tuple.",
    ):
        funcgrad.jvp(lambda x: -x, 1.0, (3.0,))
    with pytest.raises(
        TypeError, match="primal and tangent arguments to jax.jvp must have the same tree structure"
    ):
        funcgrad.jvp(lambda x, y: x * y, (np.float32(2),), (np.float32(3), np.float32(4)))


def _leakers(lib, np_):
    """A tracer escaping each kind of transformation, stored in a list or an attribute (JAX's
    Common Gotchas, "tracer leaks"): ``{name: () -> leaked tracer}``."""
    lax = lib.lax

    def custom_jvp_rule(box):
        f = lib.custom_jvp(np_.sin)
        f.defjvp(lambda p, t: box.append(t[0]) or (f(p[0]), t[0]))
        lib.grad(lambda x: f(x).sum())(np_.ones(3))

    class Module:
        def __call__(self, x):
            self.h = x * 2
            return self.h.sum()

    def attribute(box):
        m = Module()
        lib.grad(m)(np_.ones(3))
        box.append(m.h)

    return {
        "jit": lambda box: lib.jit(lambda x: box.append(x) or x)(np_.ones(3)),
        "grad": lambda box: lib.grad(lambda x: box.append(x * 2) or x.sum())(np_.ones(3)),
        "vmap": lambda box: lib.vmap(lambda x: box.append(x) or x)(np_.ones((2, 3))),
        "scan body": lambda box: lax.scan(
            lambda c, x: (box.append(c) or c + x, None), np_.zeros(3), np_.ones((2, 3))
        ),
        "while cond": lambda box: lax.while_loop(
            lambda c: box.append(c) or c[0] < 2, lambda c: c + 1, np_.zeros(3)
        ),
        "custom_jvp rule": custom_jvp_rule,
        "self attribute": attribute,
    }


def _binary_operator(name, np_, lib, t):
    return getattr(t, name)(np_.eye(3) if "matmul" in name else 1)


# Uses of a leaked tracer whose result would be the tracer itself (a 1-d ravel, a real value's
# real part, a sum over no axes, ...): JAX's jitted functions refuse each; funcgrad handed the
# leaked tracer back, to fail later or to be returned as a value.
_SHORTCUTS = {
    "ravel": lambda np_, lib, t: np_.ravel(t),
    "x.flatten()": lambda np_, lib, t: t.flatten(),
    "sum(axis=())": lambda np_, lib, t: np_.sum(t, axis=()),
    "real": lambda np_, lib, t: np_.real(t),
    "x.conj()": lambda np_, lib, t: t.conj(),
    "squeeze": lambda np_, lib, t: np_.squeeze(t),
    "+x": lambda np_, lib, t: +t,
    "clip": lambda np_, lib, t: np_.clip(t),
    "atleast_1d": lambda np_, lib, t: np_.atleast_1d(t),
    "max(axis=())": lambda np_, lib, t: np_.max(t, axis=()),
    "x ** 1": lambda np_, lib, t: t**1,
    # (the operators funcgrad's tracers leave unchecked: each binds, and so refuses the tracer)
    **{
        name: functools.partial(_binary_operator, name)
        for name in sorted(funcgrad.kernel._BINDING_OPERATORS)
        if name not in ("__neg__", "__abs__")
    },
    "-x": lambda np_, lib, t: -t,
    "abs": lambda np_, lib, t: abs(t),
}


@pytest.mark.parametrize("leaker", list(_leakers(funcgrad, fnp)))
def test_a_leaked_tracer_is_refused_where_its_use_would_return_it(leaker):
    import jax
    import jax.numpy as jnp

    heads = []
    for lib, np_ in ((jax, jnp), (funcgrad, fnp)):
        box = []
        _leakers(lib, np_)[leaker](box)
        for use in _SHORTCUTS.values():
            with pytest.raises(lib.errors.UnexpectedTracerError, match="unexpected tracer") as info:
                use(np_, lib, box[0])
        # JAX's first line (the value's type, the tracer named as JAX's) and its hint
        heads.append(re.sub(r"type \w+\[", "type [", str(info.value).splitlines()[0]))  # (x64 modes)
        assert "try setting the environment variable JAX_CHECK_TRACER_LEAKS" in str(info.value)
    assert heads[1] == heads[0]
    # a tracer of a transformation still running is not refused: the same uses inside it
    got = funcgrad.make_jaxpr(lambda x: [use(fnp, funcgrad, x) for use in _SHORTCUTS.values()])(fnp.ones(3))
    assert len(got.out_avals) == len(_SHORTCUTS)
