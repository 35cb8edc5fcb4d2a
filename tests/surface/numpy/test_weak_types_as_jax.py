"""Weak types of results of Python-scalar (weakly typed) inputs equal jax 0.10.2's (the differential
fuzzer compares them): a formula's constants keep a weak operand weak (``deg2rad(2.0)``,
``logaddexp``, ``sinc``, ``heaviside``, ``logical_not``, ``nn.relu``), while functions JAX computes
with strong constants or conversions give strong results (``angle``, ``rint`` of an int,
``nn.gelu``)."""

from __future__ import annotations

import numpy as onp
import pytest

import funcgrad
import funcgrad.numpy as fnp
import funcgrad.scipy.special  # noqa: F401

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402
import jax.scipy.special  # noqa: E402,F401,F811
from jax._src import config as _jax_config  # noqa: E402

CASES = {
    "deg2rad": lambda T, np: np.deg2rad(2.0),
    "rad2deg": lambda T, np: np.rad2deg(2),
    "logaddexp": lambda T, np: np.logaddexp(0.5, 3),
    "heaviside": lambda T, np: np.heaviside(0.5, 0.25),
    # JAX's 0 and 1 are strong beside a weak array (an int array promoted): a strong step
    "heaviside_array": lambda T, np: (
        np.heaviside(np.arange(3) - 1, 0.5),
        np.heaviside(np.asarray(0.0), 0.5),
        np.heaviside(T.lax.broadcast(np.asarray(2.0), (2,)), 0.5),
    ),
    "logical_not": lambda T, np: np.logical_not(2.0),
    # JAX's lax._const constants: weak beside a weak 0-d x only, so a weak array's sinc (and its
    # derivatives) is strong (the fuzzer's progq table, seed 23006, 32-bit: a scan's ys were weak)
    "sinc_weak_array": lambda T, np: (
        np.sinc(np.arange(3) + 0.5),
        np.sinc(np.asarray(0.0) + 0.5),
        T.grad(lambda x: np.sinc(x).sum())(np.arange(3) * 0.5),
        T.lax.scan(lambda c, x: (c, np.sinc(x * 0.5)), 0.0, np.arange(3))[1],
    ),
    # the values promoted with the spacings (JAX's promote_dtypes_inexact(f, *varargs)): weak for
    # bool/int values with a Python float, float32 for float16 values with float32 coordinates
    "gradient_spacings": lambda T, np: (
        np.gradient(onp.array([True, False, True]), 0.5),
        np.gradient(onp.array([1, 2, 4], onp.int32), 2.0),
        np.gradient(onp.array([1, 2, 4], onp.float16), onp.array([0.0, 0.5, 2.0], onp.float32)),
    ),
    "logical_and": lambda T, np: np.logical_and(2.0, 0),
    "angle": lambda T, np: np.angle(0.5),
    # a multiple-result step (sort's) keeps each operand's weak type eagerly, as staged
    "sort_weak": lambda T, np: (
        np.sort(T.lax.broadcast(np.asarray(2.0), (3,))),
        np.sort(onp.array([2.0, 1.0])),
    ),
    # a weak complex's parts stay weak through atan2 (jnp.angle's docstring: 2+3j is weak)
    "angle_complex": lambda T, np: (np.angle(2 + 3j), np.angle(np.asarray(1 + 1j)), np.angle(onp.int8([1]))),
    "rint_int": lambda T, np: np.rint(2),
    # JAX's select(mask, m, zeros_like(m)): a weak array's triangle is weak (was strong)
    "triangle_weak_array": lambda T, np: (
        np.triu(T.lax.broadcast(np.asarray(2.0), (2, 2))),
        T.grad(lambda x: np.tril(x).sum())(T.lax.broadcast(np.asarray(2.0), (2, 2))),
    ),
    "relu": lambda T, np: T.nn.relu(0.5),
    "relu6": lambda T, np: T.nn.relu6(0.5),
    "softplus": lambda T, np: T.nn.softplus(0.5),
    "log_sigmoid": lambda T, np: T.nn.log_sigmoid(0.5),
    "gelu": lambda T, np: T.nn.gelu(0.5),
    "sinc": lambda T, np: np.sinc(0.5),
    "logaddexp2": lambda T, np: np.logaddexp2(0.5, 3),
    "ndtr": lambda T, np: T.scipy.special.ndtr(0.5),
    "log_ndtr": lambda T, np: T.scipy.special.log_ndtr(0.5),
    "lax_conj": lambda T, np: T.lax.conj(0.5),
    "lax_bit_counts": lambda T, np: (T.lax.population_count(7), T.lax.clz(7)),
    "round_decimals": lambda T, np: np.round(0.25, 1),
    "power_0": lambda T, np: np.power(0.5, 0),
    # a NumPy int array with a Python float is a weak float, as in JAX
    "numpy_int_plus_float": lambda T, np: np.add(onp.int32([2]), 6.0),
    "relu6_int": lambda T, np: T.nn.relu6(onp.int32([2, -3])),
    "hard_tanh_bool": lambda T, np: T.nn.hard_tanh(onp.array([True, False])),
    "hard_tanh_int": lambda T, np: T.nn.hard_tanh(2),
    # jax.nn's formulas with Python float constants make an int array a weak float
    "nn_of_ints": lambda T, np: tuple(
        getattr(T.nn, f)(onp.array([1, -2]))
        for f in [
            "elu",
            "selu",
            "celu",
            "hard_sigmoid",
            "leaky_relu",
            "sparse_plus",
            "sparse_sigmoid",
            "hard_swish",
        ]
    ),
    # formulas meeting a Python int first (logaddexp(x, 0), abs(x) + 1): a bool array is a weak
    # float (the fuzzer's sweep; an int array's float is strong, of 64-bit mode's NumPy-2 dtype)
    "nn_of_bools": lambda T, np: tuple(
        getattr(T.nn, f)(x)
        for f in ["softplus", "mish", "soft_sign", "hard_swish"]
        for x in (onp.array([True]), True)
    ),
    # JAX's hypot selects inf through lax._const: weak only for a 0-d result (the fuzzer's uint32)
    "hypot_weak_arrays": lambda T, np: (
        np.hypot(1e3, onp.array([2], onp.uint32)),
        np.hypot(np.full((2,), 3.0), 4.0),
        np.hypot(3.0, 4.0),
        np.hypot(np.asarray(3.0) * 1.0, 4),
    ),
    # A strong cotangent of a weak output makes strong cotangents through a scan or jit (JAX traces
    # the transposed call on the cotangents it gets); add_any takes its first operand's weak type; a
    # scan's const its body never reads gets no cotangent (the fuzzer's grad of grad). (Not
    # checkpoint: jax's jitted weak type there differs from its eager one.)
    "grad_of_grad_weak": lambda T, np: tuple(
        h(np.full((3,), -0.93) * 1.0)
        for g in (
            lambda a: np.sum(T.lax.scan(lambda c, x: (c * np.cos(x) + x, c * x), 1.0, a)[1]),
            lambda a: np.sum(T.lax.scan(lambda c, x: (c, np.sin(x)), a[0], a, reverse=True)[1]),
            lambda a: np.sum(T.jit(lambda b: np.sin(b) * 2.0)(a)),
        )
        for h in (T.grad(g), T.grad(lambda a, g=g: np.sum(T.grad(g)(a) ** 2)))
    ),
    # .at[].divide/power divide by ones_like(x) with the values scattered in, keeping a weak x weak
    # whatever the values (the wide random programs, seed 15004)
    "at_divide_power_weak": lambda T, np: tuple(
        getattr(x.at[i], m)(v)
        for x in (T.lax.broadcast(np.asarray(1.5), (3,)), T.lax.broadcast(np.asarray(3), (3,)))
        for m in ("divide", "power")
        for i, v in ((1, -2), (5, onp.float32(2)))
    ),
    # roll is JAX's slices and concatenate, a shift of 0 included: its transpose pads with a strong
    # zero (pad is weak only where its padding value is too), so a weak value's gradient through
    # roll is strong (the fuzzer's cond wrappers roll a 0-d weak input, seed 15004)
    "roll_grad_weak": lambda T, np: (
        tuple(
            T.grad(f)(0.0)
            for f in (
                lambda a: np.cos(np.roll(a, 1)),
                lambda a: T.lax.cond(a > 0, np.cos, lambda a: np.cos(np.roll(a, 1)), a),
                lambda a: np.sum(np.roll(T.lax.broadcast(a, (3,)), 3, axis=0)),
            )
        )
        + (
            T.lax.pad(
                T.lax.broadcast(np.asarray(1.0), (2,)), np.zeros((), np.asarray(1.0).dtype), ((0, 1, 0),)
            ),
        )
    ),
    # jnp.pad's padding value takes the array's weak type (JAX's _pad_constant), so padding a weak
    # array gives a weak result (scipy's gmres pads its Krylov basis: lax_scipy_sparse_test's weak
    # types), a strong array a strong one
    "pad_keeps_weak": lambda T, np: tuple(
        np.pad(x, w, **kw)
        for x in (T.lax.broadcast(np.asarray(1.5), (2,)), T.lax.broadcast(np.asarray(2), (2,)), np.ones(2))
        for w, kw in ((1, {}), ((1, 2), {"constant_values": (3, 4)}))
    ),
    # A boolean is never weak once promoted with another value (JAX's lattice_result_type): two
    # weakly typed booleans (x == 1.0 of a bool x) add, compare, select to a strong one; alone (~x,
    # isnan(x), reshape) it stays weak (the sharded-program fuzzer, seed 17008)
    "weak_bools_promoted": lambda T, np: (
        lambda w: (
            w + w,
            w * w,
            w | w,
            np.logical_or(w, w),
            np.maximum(w, w),
            np.where(w, w, w),
            w == w,
            w + True,
            ~w,
            np.logical_not(w),
            np.isnan(w),
            # (JAX's full_like(x, False, dtype=bool) for a non-float x: strong, weak x or not)
            np.isinf(w),
            np.isfinite(w),
            np.isposinf(5),
            np.isreal(5),
            np.iscomplex(5.0),
            np.isreal(w + 1.0),
            w.reshape(2, 1),
            w + 1.0,
        )
    )(np.zeros(2, bool) == 1.0),
}


def _describe(*outs):
    leaves = [x for out in outs for x in (out if isinstance(out, tuple) else (out,))]
    return [(x.dtype, x.weak_type) for x in leaves]


@pytest.mark.parametrize("name", sorted(CASES))
def test_weak_type_as_jax(name):
    case = CASES[name]
    ours = _describe(case(funcgrad, fnp), funcgrad.jit(lambda: case(funcgrad, fnp))())
    with _jax_config.enable_x64(True):
        # (jax's jit side is its traced output types -- eval_shape is jit(f).trace().out_info, the
        # avals its compiled results take -- without an XLA compile per case)
        theirs = _describe(case(jax, jnp), jax.eval_shape(lambda: case(jax, jnp)))
    assert ours == theirs
