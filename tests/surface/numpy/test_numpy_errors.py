"""Errors of funcgrad.numpy: NumPy's exception types and messages, raised before anything is bound
(so nothing malformed reaches XLA), eagerly and under jit."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.api import jit
from funcgrad.kernel import core

AxisError = np.exceptions.AxisError


@pytest.mark.parametrize(
    "name",
    ["numpy.floor_divide", "numpy.fmod", "numpy.hypot", "numpy.logaddexp", "numpy.fmax", "numpy.isclose",
     "numpy.copysign", "numpy.nextafter", "numpy.vdot",
     "numpy.heaviside", "scipy.special.xlogy", "scipy.special.betaln", "scipy.special.expn"],
)  # fmt: skip
def test_broadcast_mismatch_of_composed_functions_raises_jax_type(name):
    # (the fuzzer's random programs) shapes of one rank that do not fit: JAX's functions that reach a
    # lax primitive raise its TypeError, those that broadcast first (copysign, heaviside, expn) a
    # ValueError; funcgrad broadcast first everywhere (ValueError)
    jax = pytest.importorskip("jax")
    import importlib

    mod, fn = name.rsplit(".", 1)
    ours = getattr(importlib.import_module(f"funcgrad.{mod}"), fn)
    theirs = getattr(importlib.import_module(f"jax.{mod}"), fn)
    a, b = np.ones((2, 3), np.float32), np.ones((2, 2), np.float32)
    if fn == "expn":
        a = a.astype(np.int32)
    with pytest.raises((TypeError, ValueError)) as want:
        theirs(a, b)
    with pytest.raises(type(want.value)):
        ours(a, b)
    del jax


@pytest.mark.parametrize("transform", [lambda f: f, jit], ids=["eager", "jit"])
def test_broadcast_mismatch(transform):
    # As JAX's: operands of one rank that do not fit are the primitive's TypeError; of several
    # ranks, the broadcasting ValueError.
    with pytest.raises(TypeError, match=r"^add got incompatible shapes for broadcasting: \(3,\), \(4,\)"):
        transform(lambda x: fnp.add(x, np.ones(4)))(np.ones(3))
    with pytest.raises(TypeError, match=r"^mul got incompatible shapes for broadcasting: \(2, 3\), \(2, 4\)"):
        transform(lambda x: fnp.asarray(x) * np.ones((2, 4)))(np.ones((2, 3)))
    with pytest.raises(
        ValueError, match=r"Incompatible shapes for broadcasting: shapes=\[\(2, 3\), \(4,\)\]"
    ):
        transform(lambda x: fnp.asarray(x) * np.ones(4))(np.ones((2, 3)))
    with pytest.raises(  # (JAX 0.10's words)
        ValueError,
        match=r"^Incompatible types for broadcasting: input type=float64\[3\] and requested "
        r"type=float64\[2,4\]",
    ):
        transform(lambda x: fnp.broadcast_to(x, (2, 4)))(np.ones(3))


@pytest.mark.parametrize("transform", [lambda f: f, jit], ids=["eager", "jit"])
def test_bad_axis(transform):
    x = np.ones((2, 3))
    for f in (fnp.sum, fnp.mean, fnp.max, fnp.argmax, fnp.cumsum, fnp.sort, fnp.flip, fnp.squeeze):
        with pytest.raises(AxisError, match="axis 2 is out of bounds for array of dimension 2"):
            transform(lambda v, f=f: f(v, axis=2))(x)
    with pytest.raises(ValueError, match=r"duplicate value in 'axis': \(0, 0\)"):  # (JAX's words)
        fnp.sum(x, axis=(0, 0))
    with pytest.raises(ValueError, match="non-scalar to take a cumulative sum"):
        fnp.cumulative_sum(fnp.asarray(1.0))
    with pytest.raises(ValueError, match="has rank 2, however axis was not set"):
        fnp.cumulative_sum(x)
    with pytest.raises(AxisError):
        fnp.expand_dims(x, 5)
    with pytest.raises(AxisError):
        fnp.moveaxis(x, 0, 3)


def test_shape_errors():
    # TypeError as jax.numpy raises (NumPy: ValueError); tests/surface/api/test_exception_types.py
    # (JAX's words: the array's shape and both sizes)
    with pytest.raises(
        TypeError, match=re.escape("cannot reshape array of shape (6,) (size 6) into shape (4,) (size 4)")
    ):
        fnp.reshape(np.ones(6), (4,))
    with pytest.raises(
        TypeError, match=re.escape("the product of specified axis sizes (4) does not evenly divide 6")
    ):
        fnp.reshape(np.ones(6), (-1, 4))
    with pytest.raises(TypeError, match="can only specify one unknown axis size with a `-1` value"):
        fnp.reshape(np.ones(6), (-1, -1))
    with pytest.raises(
        TypeError, match=r"contracting dimensions to have the same shape, got \(3,\) and \(4,\)"
    ):
        fnp.matmul(np.ones((2, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="scalars are not allowed"):
        fnp.matmul(np.ones(2), 2.0)
    with pytest.raises(TypeError, match="along dimension 1"):  # jax.numpy's type (NumPy: ValueError)
        fnp.concatenate([np.ones((2, 3)), np.ones((2, 4))])
    with pytest.raises(TypeError, match="same number of dimensions"):
        fnp.concatenate([np.ones((2, 3)), np.ones(3)])
    with pytest.raises(ValueError, match="same shape"):
        fnp.stack([np.ones(2), np.ones(3)])
    with pytest.raises(ValueError, match="equal division"):
        fnp.split(np.ones(5), 2)
    with pytest.raises(ValueError, match="size not equal to one"):
        fnp.squeeze(np.ones((2, 1)), axis=0)
    # JAX's exception type and words (TypeError: code written for JAX catches that)
    with pytest.raises(
        TypeError, match=r"contracting dimensions to have the same shape, got \(3,\) and \(4,\)"
    ):
        fnp.dot(np.ones(3), np.ones(4))
    for contraction in (fnp.matmul, fnp.inner, lambda a, b: fnp.tensordot(a, b, 1)):
        with pytest.raises(TypeError, match="contracting dimensions"):
            contraction(np.ones(3), np.ones(4))
    with pytest.raises(ValueError, match="zero-size array"):
        fnp.max(np.ones((0, 2)), axis=0)
    with pytest.raises(ValueError, match="empty"):
        fnp.argmax(np.ones(0))


def test_type_errors():
    with pytest.raises(TypeError, match="boolean subtract"):
        fnp.subtract(np.ones(2, bool), np.ones(2, bool))
    with pytest.raises(TypeError, match="integer and boolean"):
        fnp.bitwise_and(np.ones(2), np.ones(2))
    with pytest.raises(TypeError, match="immutable"):
        x = fnp.ones(3)
        x[0] = 1.0
    with pytest.raises(TypeError, match="nonnegative"):  # (JAX's type: an invalid shape is a TypeError)
        fnp.zeros((-1, 2))


def test_static_arguments_must_be_concrete():
    with pytest.raises(TypeError, match="static"):
        jit(lambda n: fnp.arange(n))(3)
    with pytest.raises(core.ConcretizationTypeError, match="size"):
        jit(lambda x: fnp.nonzero(x))(np.ones(3))
    # a traced axis (jax.errors.ConcretizationTypeError's docstring example)
    with pytest.raises(core.ConcretizationTypeError, match="axis"):
        jit(lambda x, axis: x.min(axis))(fnp.arange(4), 0)
    # With size=, nonzero works under jit.
    out = jit(lambda x: fnp.nonzero(x, size=2)[0])(np.array([0.0, 1.0, 2.0]))
    np.testing.assert_array_equal(np.asarray(out), [1, 2])


def test_errors_are_raised_before_binding():
    # make_jaxpr reaches the error during tracing: no equation is recorded for a malformed call.
    with pytest.raises(TypeError, match="add got incompatible shapes for broadcasting"):
        funcgrad.make_jaxpr(lambda x: x + np.ones(5))(np.ones(3))


@pytest.mark.parametrize("transform", [lambda f: f, jit], ids=["eager", "jit"])
def test_list_and_tuple_operands_of_operators_raise_as_jax(transform):
    jax = pytest.importorskip("jax")
    ops = {
        "+": lambda x: x + [1.0, 2.0],
        "r+": lambda x: [1.0, 2.0] + x,
        "*": lambda x: x * (1.0, 2.0),
        "==": lambda x: x == [1.0, 2.0],
        "<": lambda x: x < [1.0, 2.0],
        "r-": lambda x: (1.0, 2.0) - x,
        "@": lambda x: x @ [1.0, 2.0],
    }
    for name, op in ops.items():
        with pytest.raises(TypeError) as theirs:
            (jax.jit(op) if transform is jit else op)(jax.numpy.ones(2))
        with pytest.raises(TypeError, match="convert it with jax.numpy.asarray") as ours:
            transform(op)(fnp.ones(2))
        # JAX's words, with the Array's own class name
        assert str(ours.value).split(" (")[0] == str(theirs.value).replace("ArrayImpl", "Array").replace(
            "DynamicJaxprTracer", "StagingTracer"
        ).replace("jaxlib._jax.", ""), name


def test_clip_and_hypot_of_complex_raise_jaxs_value_error():
    # (JAX's lax_numpy_test and array_api_test) JAX's error type and words
    z = fnp.ones(3, fnp.complex64)
    with pytest.raises(ValueError, match="Complex values have no ordering and cannot be clipped"):
        fnp.clip(z, max=z)
    with pytest.raises(ValueError, match="jnp.hypot is not well defined for complex-valued inputs"):
        fnp.hypot(z, 1.0)


def test_size_along_a_repeated_axis_is_an_error_as_jax():
    # (JAX's lax_numpy_test) size(x, (1, -2)) names axis 1 twice
    with pytest.raises(ValueError, match="repeated axis"):
        fnp.size(fnp.zeros((2, 3, 4)), (1, -2))


def test_argmin_argmax_of_complex_and_derivative_of_at_apply_raise_as_jax():
    # (the fuzzer's random programs) JAX's argmin/argmax compare with lax.lt/gt, which refuse
    # complex (funcgrad ordered them lexicographically); .at[].apply has no JVP rule in JAX
    jax = pytest.importorskip("jax")
    z = np.array([1 + 2j, 1 + 1j], np.complex64)
    x = np.array([1.0, 2.0], np.float32)
    calls = [
        (TypeError, lambda m, np_: np_.argmin(z)),
        (TypeError, lambda m, np_: np_.nanargmax(z[None], axis=1)),
        (NotImplementedError, lambda m, np_: m.jvp(lambda b: b.at[0].apply(np_.sin), (x,), (x,))),
        (NotImplementedError, lambda m, np_: m.grad(lambda b: np_.sum(b.at[1].apply(np_.cos)))(x)),
    ]
    for error, call in calls:
        with pytest.raises(error):
            call(jax, jax.numpy)
        with pytest.raises(error):
            call(funcgrad, fnp)
    empty = np.zeros((2, 0), np.float32)  # (an empty slice: no scatter in JAX, nothing to refuse)
    ours = funcgrad.jvp(lambda b: b.at[0].apply(fnp.sin), (empty,), (empty,))
    assert [v.shape for v in ours] == [(2, 0), (2, 0)]
    got = funcgrad.vmap(lambda b: b.at[0].apply(fnp.sin))(x[None])
    np.testing.assert_allclose(np.asarray(got), [[np.sin(1.0), 2.0]], rtol=1e-6)


def test_complex_fill_value_for_a_real_array_is_a_type_error_as_jax():
    # (the fuzzer's random programs) JAX converts fill_value to the array's dtype, refusing a
    # complex one; funcgrad dropped the imaginary part
    jnp = pytest.importorskip("jax.numpy")
    x, idx = np.array([1.0, 2.0], np.float32), np.array([1, 4])
    for np_ in (jnp, fnp):
        with pytest.raises(TypeError):
            np_.asarray(x).at[idx].get(mode="fill", fill_value=1j)
    got = fnp.asarray(x.astype(np.complex64)).at[idx].get(mode="fill", fill_value=1j)
    np.testing.assert_array_equal(np.asarray(got), [2.0, 1j])
    # a weak array's dtype takes it by NumPy's astype, the real part (seed 15003: xlogy(-1.5, ints))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        want, got = (
            np_.broadcast_to(np_.asarray(1.5), (2,)).at[idx].get(mode="fill", fill_value=2 + 1j)
            for np_ in (jnp, fnp)
        )
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_at_update_of_an_empty_slice_skips_the_update_as_jax():
    # (the fuzzer's random programs) JAX returns x before broadcasting the update when the indexed
    # slice is empty, so an update of any shape passes; funcgrad raised its broadcast ValueError
    jnp = pytest.importorskip("jax.numpy")
    for x, idx, y in (
        (np.zeros((2, 1, 0, 0), np.float32), Ellipsis, np.ones((0, 0, 0), np.float32)),
        (np.zeros((2, 3), np.float32), (slice(None), slice(3, None)), np.ones((5, 7), np.float32)),
    ):
        got, want = fnp.asarray(x).at[idx].set(y), jnp.asarray(x).at[idx].set(y)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


def test_unused_nextafter_of_a_differentiated_value_refuses_under_jit_and_checkpoint_as_jax():
    # JAX removes nothing while tracing: jvp/vjp of a jit or checkpoint holding an unused nextafter
    # of a differentiated value raises its NotImplementedError (funcgrad's tracing dropped the dead
    # equation and computed; the fuzzer's leftovers); of a constant, it computes
    jax = pytest.importorskip("jax")
    x = np.ones(2)
    for T, np_ in ((jax, jax.numpy), (funcgrad, fnp)):
        for wrap in (T.jit, T.checkpoint):
            with pytest.raises(NotImplementedError, match="nextafter"):
                T.jvp(wrap(lambda v, np_=np_: (np_.nextafter(v, v), v * 2)[1]), (x,), (x,))
            T.vjp(wrap(lambda v, np_=np_: (np_.nextafter(np_.ones(2), 2.0), v * 2)[1]), x)


def test_unused_scatter_apply_and_scatter_mul_refuse_under_jit_and_checkpoint_as_jax():
    # The same for .at[].apply (JAX's scatter_apply has no JVP) and .at[].multiply/power with
    # repeated indices (scatter_mul's JVP refuses differentiated updates): funcgrad dropped the
    # unused update and computed (the fuzzer's leftovers, seed 17002); with unique_indices, or
    # not differentiated, both compute
    jax = pytest.importorskip("jax")
    x, idx = np.array([1.5, 2.0, 0.5]), np.array([1, 1])
    for T, np_ in ((jax, jax.numpy), (funcgrad, fnp)):
        for wrap in (T.jit, T.checkpoint):
            with pytest.raises(NotImplementedError, match="scatter_apply JVP not implemented"):
                T.grad(wrap(lambda v, np_=np_: (v.at[idx].apply(np_.sin), np_.sin(v).sum())[1]))(x)
            with pytest.raises(NotImplementedError, match="scatter_mul gradients are only implemented if"):
                T.grad(wrap(lambda v: (v.at[idx].power(v[:2]), v.sum())[1]))(x)
            T.grad(wrap(lambda v: (v.at[idx].multiply(v[:2], unique_indices=True), v.sum())[1]))(x)
            T.grad(wrap(lambda v, np_=np_: np_.ones(3).at[idx].apply(np_.sin).sum() + v.sum()))(x)


def test_at_apply_of_an_empty_array_with_array_indices_is_the_array_as_jax():
    # (the random programs, seed 15002) funcgrad gathered func's operand from the empty array with
    # mode='clip': "Slice size ... out of range"; JAX's scatter gives x; an int index into the
    # empty axis stays JAX's IndexError
    jax = pytest.importorskip("jax")
    for T, np_ in ((jax, jax.numpy), (funcgrad, fnp)):
        x = np_.zeros((0,), np.float32)
        for f in (
            lambda v, np_=np_: v.at[np_.array([0, 0, -1])].apply(np_.sin, mode="drop"),
            lambda v, np_=np_: v.at[1:].apply(np_.sin),
        ):
            assert T.jit(f)(x).shape == f(x).shape == (0,)
        with pytest.raises(IndexError):
            x.at[0].apply(np_.sin)


@pytest.mark.parametrize("method", ["max", "set", "add", "multiply", "apply"])
def test_derivatives_of_an_update_of_an_empty_array_refuse_as_jax(method):
    # (the random programs, seed 17014) an empty x updated at 3 indices is x, but JAX still binds
    # its scatter, whose derivatives gather the updated slice from the empty axis: its gather
    # refuses ('Slice size at index 0 ... out of range'), scatter_mul's and scatter_apply's rules
    # raise NotImplementedError. funcgrad returned x before the scatter and differentiated it.
    jax = pytest.importorskip("jax")
    idx = np.array([0, 0, -1])

    def outcomes(T, np_):
        x = np.zeros((0, 3), np.float32)

        def f(x, y):
            ref = np_.asarray(x).at[idx]
            return ref.apply(np_.sin, mode="clip") if method == "apply" else getattr(ref, method)(y)

        out = [np.asarray(T.jit(f)(x, 2.0)).shape]
        for g in (lambda: T.grad(lambda x: f(x, 2.0).sum())(x), lambda: T.grad(lambda y: f(x, y).sum())(2.0)):
            try:
                out.append(np.shape(g()))
            except (TypeError, NotImplementedError) as e:
                out.append((type(e).__name__, str(e)[:40]))
        return out

    assert outcomes(funcgrad, fnp) == outcomes(jax, jax.numpy)
