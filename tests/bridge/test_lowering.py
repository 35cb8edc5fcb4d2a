"""XLA lowering against the NumPy impls, primitive by primitive, plus the module text itself.

Each case binds one primitive on sample operands, lowers the one-equation jaxpr to StableHLO,
compiles and runs it through ``xla_bridge.runtime``, and compares with the primitive's NumPy impl
within the dtype's tolerance (float32 and float64). ``tests/primitives/op_db/`` adds its
``sample_inputs`` for every primitive in the catalog.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import inspect
import os
import subprocess
import sys

import funcgrad.xla_bridge.rules  # noqa: F401 - registers every lowering rule
import numpy as np
import op_db  # the operator table (tests/primitives/op_db/) drives the jit-vs-eager check of every primitive
import pytest
from funcgrad.primitives import dot as dt
from funcgrad.primitives import elementwise as ew
from funcgrad.primitives import reductions as red
from funcgrad.primitives import structure as st
from funcgrad.xla_bridge.lowering import lower_jaxpr, lowering_rules, rule_modules

import funcgrad
import funcgrad.numpy as fnp
from funcgrad import primitives, xla_bridge
from funcgrad import xla_bridge as xb
from funcgrad._remat import checkpoint_p
from funcgrad.kernel import core
from funcgrad.kernel import custom_derivatives as _custom_derivatives
from funcgrad.kernel.custom_derivatives import custom_jvp_call_p, custom_lin_p, custom_vjp_call_p

TOL = {np.dtype(np.float32): dict(rtol=2e-5, atol=2e-6), np.dtype(np.float64): dict(rtol=1e-12, atol=1e-13)}


# What these tests check is the lowering's meaning (the numbers XLA computes from our StableHLO),
# not the code XLA optimises it into, so they compile without XLA CPU's fusion emitters and with
# LLVM's cheapest pipeline: about a fifth of the compile time of the default options (a few hundred
# programs here; the suite's other jit tests keep XLA's defaults, the code users run).
CHECK_COMPILE_OPTIONS = {
    "xla_cpu_use_fusion_emitters": False,
    "xla_backend_optimization_level": 0,
    "xla_llvm_disable_expensive_passes": True,
    "xla_cpu_parallel_codegen_split_count": 1,
}


def run_xla(closed, args):
    low = lower_jaxpr(closed, "test", platform=xb.default_platform())  # the device xb.compile uses
    exe = xb.compile(
        low.text,
        low.in_avals,
        low.out_avals,
        host_callbacks=low.host_callbacks,
        compiler_options=CHECK_COMPILE_OPTIONS,
    )
    bufs = [xb.device_put(c) for c in low.const_args]
    bufs += [
        xb.device_put(np.asarray(a), weak_type=v.aval.weak_type) for a, v in zip(args, closed.jaxpr.invars)
    ]
    return [xb.to_numpy(o) for o in exe(bufs)]


_pending: list = []


def check_primitive(prim, args, params, dtype=None, tol=None):
    """XLA against the impl for one binding (deferred inside ``one_program()``)."""
    if _pending:
        _pending[-1].append((prim, list(args), params, tol))
    else:
        check_all([(prim, list(args), params, tol)])


@contextlib.contextmanager
def one_program():
    """Collect the ``check_primitive`` calls of a block into one program: one XLA compile."""
    _pending.append([])
    try:
        yield
    finally:
        cases = _pending.pop()
    check_all(cases)


def batched(test):
    """Run a test's ``check_primitive`` calls as one program (see ``one_program``)."""

    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        with one_program():
            return test(*args, **kwargs)

    return wrapper


def check_all(cases):
    flat = [a for _, args, _, _ in cases for a in args]

    def program(*xs):
        outs, i = [], 0
        for prim, args, params, _ in cases:
            r = prim.bind(*xs[i : i + len(args)], **params)
            outs.extend(r if prim.multiple_results else [r])
            i += len(args)
        return outs

    got = iter(run_xla(funcgrad.make_jaxpr(program)(*flat), flat))
    for prim, args, params, tol in cases:
        with core.set_current_trace(core.EvalTrace(None)):
            want = prim.impl(*[np.asarray(a) for a in args], **params)
        for w in list(want) if prim.multiple_results else [want]:
            g, w = next(got), np.asarray(w)
            assert g.shape == w.shape, (prim, params, g.shape, w.shape)
            assert g.dtype == w.dtype, (prim, params, g.dtype, w.dtype)
            kw = tol or TOL.get(np.dtype(g.dtype), dict(rtol=0, atol=0))
            np.testing.assert_allclose(g, w, err_msg=f"{prim} {params}", equal_nan=True, **kw)


def _u(rng, shape, dtype, lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape).astype(dtype)


FLOATS = [np.float32, np.float64]


# name -> (primitive, domain low, domain high)
@batched
def test_unary_special_values():
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e300], np.float64)
    for prim in (ew.is_finite_p, ew.sign_p, ew.abs_p, ew.floor_p, ew.neg_p):
        check_primitive(prim, [x], {})


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint8, np.uint32])
@batched
def test_integer_ops(dtype, rng):
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -100), min(info.max, 100)
    x = rng.integers(lo, hi, (4, 5)).astype(dtype)
    y = rng.integers(1, min(hi, 7), (4, 5)).astype(dtype)
    if info.min < 0:
        y[::2] = -y[::2]  # negative divisors: truncation toward zero, remainder sign of dividend
    for prim in (
        ew.add_p,
        ew.sub_p,
        ew.mul_p,
        ew.div_p,
        ew.rem_p,
        ew.max_p,
        ew.min_p,
        ew.and_p,
        ew.or_p,
        ew.xor_p,
        ew.eq_p,
        ew.lt_p,
        ew.ge_p,
    ):
        check_primitive(prim, [x, y], {})
    for prim in (ew.neg_p, ew.sign_p, ew.abs_p, ew.not_p, ew.square_p):
        check_primitive(prim, [x], {})
    bits = np.dtype(dtype).itemsize * 8
    s = np.array([0, 1, 3, bits - 1, bits, bits + 3], dtype)
    if info.min < 0:
        s = np.concatenate([s, np.array([-1], dtype)])
    xs = rng.integers(lo, hi, s.shape).astype(dtype)
    for prim in (ew.shift_left_p, ew.shift_right_arithmetic_p, ew.shift_right_logical_p):
        check_primitive(prim, [xs, s], {})


@batched
@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.uint64])
def test_integer_division_by_constant_zero_computes_xlas_values(dtype):
    # NOTE: [integer division by a constant zero]: XLA's constant folder would die of SIGFPE on
    # these (jax does); compiled, they give XLA's run-time values, those of eager evaluation.
    info = np.iinfo(dtype)
    x = np.array([5, 0, info.max, info.min], dtype)
    y = np.array([0, 0, 0, -1 if info.min < 0 else 3], dtype)
    div = funcgrad.jit(lambda: (funcgrad.lax.div(fnp.asarray(x), fnp.asarray(y)), fnp.asarray(x) % 0))()
    eager = (funcgrad.lax.div(x, y), fnp.asarray(x) % 0)
    np.testing.assert_array_equal(div[0], eager[0])
    np.testing.assert_array_equal(div[1], eager[1])
    np.testing.assert_array_equal(div[0][:3], np.array([-1, -1, -1]).astype(dtype))  # x / 0: all bits set
    rem = funcgrad.jit(lambda: funcgrad.lax.rem(fnp.asarray(x), fnp.zeros(4, dtype)))()
    np.testing.assert_array_equal(rem, x)  # lax.rem(x, 0): x (jnp's % by 0 gives 0, as jax's)
    mean = funcgrad.jit(lambda: fnp.mean(fnp.zeros((0, 2), dtype), axis=0, dtype=dtype))()
    np.testing.assert_array_equal(mean, np.array([-1, -1]).astype(dtype))  # the sum 0 / count 0


def test_unsigned_compare_and_bool_ops():
    a = np.array([0, 1, 200, 255], np.uint8)
    b = np.array([255, 1, 100, 0], np.uint8)
    for prim in (ew.lt_p, ew.gt_p, ew.le_p):
        check_primitive(prim, [a, b], {})
    p, q = np.array([True, False, True, False]), np.array([True, True, False, False])
    for prim in (ew.and_p, ew.or_p, ew.xor_p, ew.eq_p, ew.lt_p):
        check_primitive(prim, [p, q], {})
    check_primitive(ew.not_p, [p], {})


@pytest.mark.parametrize("y", [0, 1, 2, 3, 7, -1, -2])
@batched
def test_integer_pow(y, rng):
    check_primitive(ew.integer_pow_p, [_u(rng, (5,), np.float64, 0.5, 2.0)], {"y": y})


@batched
def test_round_both_methods():
    x = np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.3, -0.7], np.float32)
    check_primitive(ew.round_p, [x], {"rounding_method": 0})
    check_primitive(ew.round_p, [x], {"rounding_method": 1})


@batched
def test_select_n_and_clamp(rng):
    x, y, z = (_u(rng, (3, 4), np.float32) for _ in range(3))
    pred = rng.random((3, 4)) > 0.5
    check_primitive(ew.select_n_p, [pred, x, y], {})
    check_primitive(ew.select_n_p, [np.bool_(True), x, y], {})
    check_primitive(ew.select_n_p, [pred, x], {})
    which = rng.integers(0, 3, (3, 4)).astype(np.int32)
    check_primitive(ew.select_n_p, [which, x, y, z], {})
    which5 = rng.integers(0, 5, (3, 4)).astype(np.int32)
    check_primitive(ew.select_n_p, [which5, x, y, z, x * 2, y * 2], {})
    check_primitive(ew.clamp_p, [np.float32(-0.5), x, np.float32(0.5)], {})
    check_primitive(ew.clamp_p, [x - 1, x * 2, x + 1], {})


CONVERT_DTYPES = [np.bool_, np.int8, np.int32, np.int64, np.uint8, np.float32, np.float64, np.complex64]


@pytest.mark.slow
@pytest.mark.parametrize("src", CONVERT_DTYPES, ids=lambda d: np.dtype(d).name)
@batched
def test_convert_element_type(src):
    vals = np.array([0, 1, 2, 3, 0, 5], np.float64) if src != np.bool_ else np.array([0, 1, 1, 0, 0, 1])
    if np.dtype(src).kind in "fc":
        vals = np.array([0.0, -0.0, 1.5, -2.75, np.nan, 3.0])
    x = vals.astype(src)
    for dst in CONVERT_DTYPES:
        if np.dtype(src).kind in "fc" and np.dtype(dst).kind in "iu":
            x_ok = np.nan_to_num(np.abs(x))  # float -> int of nan/negatives is undefined
        else:
            x_ok = x
        check_primitive(ew.convert_element_type_p, [x_ok], {"new_dtype": np.dtype(dst), "weak_type": False})


@batched
def test_shape_primitives(rng):
    x = _u(rng, (2, 3, 1), np.float64)
    check_primitive(st.broadcast_in_dim_p, [x], {"shape": (4, 2, 3, 5), "broadcast_dimensions": (1, 2, 3)})
    check_primitive(st.broadcast_in_dim_p, [np.float64(2.0)], {"shape": (2, 2), "broadcast_dimensions": ()})
    check_primitive(st.reshape_p, [x], {"new_sizes": (3, 2)})
    check_primitive(st.transpose_p, [x], {"permutation": (2, 0, 1)})
    check_primitive(st.squeeze_p, [x], {"dimensions": (2,)})


@pytest.mark.slow
@pytest.mark.parametrize(
    "dtype", [np.float32, np.float64, np.int32, np.uint8, np.bool_], ids=lambda d: np.dtype(d).name
)
@batched
def test_reductions(dtype, rng):
    x = (rng.uniform(0.5, 1.5, (3, 4, 5)) * (3 if np.dtype(dtype).kind in "iu" else 1)).astype(dtype)
    if dtype == np.bool_:
        x = rng.random((3, 4, 5)) > 0.5
        prims = [red.reduce_and_p, red.reduce_or_p, red.reduce_max_p, red.reduce_min_p]
    else:
        prims = [red.reduce_sum_p, red.reduce_max_p, red.reduce_min_p, red.reduce_prod_p]
    for prim in prims:
        for axes in [(0,), (1, 2), (0, 1, 2)]:
            check_primitive(prim, [x], {"axes": axes})


@batched
def test_reductions_of_operands_with_unit_dimensions(rng):
    # NOTE: [reductions without unit dimensions]: reshaped without them, the same values; over
    # unit axes only the reduce keeps its form (it is no reshape: 0 + -0.0 is +0.0).
    x = _u(rng, (4, 1, 6, 1, 5), np.float32)
    for prim in (red.reduce_sum_p, red.reduce_max_p, red.reduce_min_p, red.reduce_prod_p):
        for axes in [(4,), (2,), (0, 1), (1, 2, 3), (0, 1, 2, 3, 4), (1, 3)]:
            check_primitive(prim, [x], {"axes": axes})
    check_primitive(red.reduce_sum_p, [np.full((2, 1), -0.0, np.float32)], {"axes": (1,)})
    check_primitive(red.reduce_or_p, [x > 0.5], {"axes": (2,)})
    check_primitive(red.reduce_sum_p, [np.arange(6, dtype=np.int32).reshape(1, 6, 1)], {"axes": (1,)})


@batched
def test_empty_reductions_give_identity():
    for dtype in (np.float32, np.int32):
        x = np.zeros((0, 3), dtype)
        for prim in (red.reduce_sum_p, red.reduce_max_p, red.reduce_min_p, red.reduce_prod_p):
            check_primitive(prim, [x], {"axes": (0,)})


@pytest.mark.parametrize("prim", [red.argmax_p, red.argmin_p], ids=["argmax", "argmin"])
@batched
def test_arg_reductions_first_index_like_numpy(prim, rng):
    x = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, np.nan, 5.0, np.nan], [-np.inf] * 4, [7.0, 7.0, 7.0, 7.0]])
    for dtype in (np.float32, np.float64):
        check_primitive(prim, [x.astype(dtype)], {"axes": (1,), "index_dtype": np.dtype(np.int32)})
        check_primitive(prim, [x.astype(dtype)], {"axes": (0,), "index_dtype": np.dtype(np.int64)})
    ints = rng.integers(0, 3, (6, 7)).astype(np.int32)
    check_primitive(prim, [ints], {"axes": (1,), "index_dtype": np.dtype(np.int32)})
    check_primitive(prim, [ints > 1], {"axes": (0,), "index_dtype": np.dtype(np.int32)})


@pytest.mark.parametrize(
    "dtype", [np.float32, np.float64, np.int32, np.bool_], ids=lambda d: np.dtype(d).name
)
@batched
def test_dot_general(dtype, rng):
    def arr(shape):
        a = rng.uniform(-1, 1, shape)
        return (a > 0) if dtype == np.bool_ else (a * (4 if dtype == np.int32 else 1)).astype(dtype)

    check_primitive(
        dt.dot_general_p,
        [arr((3, 4)), arr((4, 5))],
        {"dimension_numbers": (((1,), (0,)), ((), ())), "preferred_element_type": None},
    )
    check_primitive(
        dt.dot_general_p,
        [arr((2, 3, 4)), arr((2, 5, 4))],
        {"dimension_numbers": (((2,), (2,)), ((0,), (0,))), "preferred_element_type": None},
    )
    check_primitive(
        dt.dot_general_p,
        [arr((4,)), arr((4,))],
        {"dimension_numbers": (((0,), (0,)), ((), ())), "preferred_element_type": None},
    )


def test_dot_preferred_element_type(rng):
    a = rng.integers(-100, 100, (3, 4)).astype(np.int8)
    b = rng.integers(-100, 100, (4, 2)).astype(np.int8)
    check_primitive(
        dt.dot_general_p,
        [a, b],
        {"dimension_numbers": (((1,), (0,)), ((), ())), "preferred_element_type": np.dtype(np.int32)},
    )


# ----------------------------------------------------------------------------------------------
# Module structure


def test_module_text_shape():
    inner = funcgrad.jit(lambda x: fnp.sin(x) + 1.0)
    closed = funcgrad.make_jaxpr(lambda x: inner(x) * inner(x * 2.0))(np.ones(3, np.float32))
    text = lower_jaxpr(closed, "outer").text
    assert text.startswith("module @jit_outer")
    assert "func.func public @main(%arg0: tensor<3xf32>) -> (tensor<3xf32>)" in text
    # One private function for the two calls of the same jitted function (same jaxpr object).
    assert text.count("func.func private") == 1 and text.count("func.call @") == 2
    np.testing.assert_allclose(
        run_xla(closed, [np.ones(3, np.float32)])[0], (np.sin(1) + 1) * (np.sin(2) + 1), rtol=1e-6
    )


def test_big_constants_are_arguments_small_ones_embedded():
    big = np.arange(10000, dtype=np.float32)
    small = np.arange(4, dtype=np.float32)
    closed = funcgrad.make_jaxpr(lambda x: (x * big).sum() + (x.sum() * small).sum())(
        np.ones(10000, np.float32)
    )
    low = lower_jaxpr(closed)
    assert len(low.const_args) == 1 and low.const_args[0].shape == (10000,)
    assert len(low.text) < 4000  # the big array is not in the text
    assert len(low.in_avals) == 2
    np.testing.assert_allclose(
        run_xla(closed, [np.ones(10000, np.float32)])[0], big.sum() + 1e4 * small.sum(), rtol=1e-6
    )


def test_donation_attributes():
    # As JAX's lowering: x is aliased to the output of its type, y donated to XLA for the output
    # with as many elements, z (no output left to reuse it) not donated, with JAX's warning.
    f = lambda x, y, z: (x + y, (y > z).astype(np.int32), x.sum())  # noqa: E731
    closed = funcgrad.make_jaxpr(f)(np.ones(3), np.ones(3), np.ones(3))
    with pytest.warns(UserWarning, match=r"Some donated buffers were not usable: float64\[3\]"):
        low = lower_jaxpr(closed, donated_invars=(True, True, True))
    assert "%arg0: tensor<3xf64> {tf.aliasing_output = 0 : i32}" in low.text
    assert "%arg1: tensor<3xf64> {jax.buffer_donor = true}" in low.text
    assert "%arg2: tensor<3xf64>)" in low.text and low.donate_argnums == (0, 1)


def test_missing_rule_is_a_clear_error():
    from funcgrad.kernel.core import Primitive

    p = Primitive("no_lowering_here")
    p.def_impl(lambda x: x)
    p.def_abstract_eval(lambda x: x)
    closed = funcgrad.make_jaxpr(lambda x: p.bind(x))(1.0)
    with pytest.raises(NotImplementedError, match="no_lowering_here.*no XLA lowering rule"):
        lower_jaxpr(closed)


def test_custom_lin_lowering_raises_forward_mode_error():
    rule = lowering_rules[custom_lin_p]
    with pytest.raises(TypeError, match="forward-mode"):
        rule(None, num_res=0, bwd=None, out_avals=(), name="f")


def test_every_catalog_primitive_has_a_lowering():
    missing = [p.name for p in primitives.all_primitives() if p not in lowering_rules]
    assert not missing, missing
    for p in (custom_jvp_call_p, custom_vjp_call_p, checkpoint_p, custom_lin_p):
        assert p in lowering_rules


def _declared(module) -> list:
    """The primitives ``module`` declares: ``primitives_of(module)`` less those it only binds
    through an import (``from funcgrad.primitives.gather import gather_p`` re-exports, not declares)."""
    imported = {
        alias.asname or alias.name
        for node in ast.walk(ast.parse(inspect.getsource(module)))
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    return [
        p
        for p in primitives.primitives_of(module)
        if any(v is p and n not in imported for n, v in vars(module).items())
    ]


def test_rule_modules_mirror_the_catalog_families():
    # rules/<family>.py registers exactly the primitives declared in primitives/<family>.py (and
    # rules/custom_derivatives.py those of the kernel's custom_derivatives.py).
    owners = {name: module for name, module in primitives.families().items()}
    owners["custom_derivatives"] = _custom_derivatives
    expected = {}
    for family, module in owners.items():
        for p in _declared(module):
            assert p not in expected, f"{p.name} is declared in two families"
            expected[p] = f"funcgrad.xla_bridge.rules.{family}"
    wrong = {
        p.name: (rule_modules.get(p), want) for p, want in expected.items() if rule_modules.get(p) != want
    }
    assert not wrong, f"primitive: (registered by, expected): {wrong}"
    stray = sorted(p.name for p in rule_modules if p not in expected)
    assert not stray, f"rules registered for primitives no family declares: {stray}"
    assert set(xla_bridge.rules.FAMILIES) == {f for f, m in owners.items() if _declared(m)}


@pytest.mark.slow
def test_an_import_error_in_a_rule_module_is_not_swallowed():
    # A rule module that fails to import makes the bridge fail loudly, not lose a family.
    code = (
        "import sys, funcgrad.primitives; sys.modules['funcgrad.primitives.bitcast'] = None\n"
        "try:\n    import funcgrad.xla_bridge.lowering\n"
        "except ImportError as e:\n    print('raised', e.name)\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=root,
        env={**os.environ, "PYTHONPATH": root},
        timeout=120,
    )
    assert proc.stdout.strip() == "raised funcgrad.primitives.bitcast", proc.stdout + proc.stderr


def test_dot_general_impl_scalar_result_and_preferred_accumulation():
    # Regression (primitives/dot.py impl): a vector . vector contraction has shape (), and
    # preferred_element_type accumulates in that type instead of wrapping in int8.
    v = np.arange(3.0)
    out = dt.dot_general_p.impl(v, v, dimension_numbers=(((0,), (0,)), ((), ())))
    assert np.shape(out) == () and float(out) == 5.0
    a = np.full((1, 4), 100, np.int8)
    out = dt.dot_general_p.impl(
        a, a.T, dimension_numbers=(((1,), (0,)), ((), ())), preferred_element_type=np.dtype(np.int32)
    )
    assert out.dtype == np.int32 and int(out[0, 0]) == 40000


# ----------------------------------------------------------------------------------------------
# The operator table (tests/primitives/op_db/): XLA against eager for every entry and dtype


_OPS = list(op_db.OPS)


def _tolerance(dtype):
    dtype = np.dtype(dtype)
    if dtype in (np.float32, np.complex64):
        return dict(rtol=2e-4, atol=2e-5)
    if dtype in (np.float64, np.complex128):
        return dict(rtol=1e-9, atol=1e-11)
    return dict(rtol=0, atol=0)


def _entry_program(entry):
    """Every sample of every dtype of ``entry``: (a function of the flat arguments returning each
    sample's outputs, the flat arguments)."""
    rng = np.random.default_rng(0)
    samples = [s for dt in entry.dtypes for s in op_db.sample_inputs(entry, dt, rng)]
    flat_args = [a for s in samples for a in s.args]
    # A collective runs under the vmap that binds its axis (its lowering over devices is tested
    # on 8 devices by tests/integration/test_spmd.py).
    op = entry.op if entry.named_axis is None else funcgrad.vmap(entry.op, axis_name=entry.named_axis)

    def all_samples(*flat):
        outs, i = [], 0
        for s in samples:
            n = len(s.args)
            outs.append(op(*flat[i : i + n], **s.params))
            i += n
        return outs

    return all_samples, flat_args


def _xla_outputs(entries):
    """XLA's outputs of each of ``entries``' programs, all in one compiled program."""
    programs = [_entry_program(e) for e in entries]
    flat_args = [a for _, args in programs for a in args]

    def all_entries(*flat):
        outs, i = [], 0
        for f, args in programs:
            outs.append(f(*flat[i : i + len(args)]))
            i += len(args)
        return outs

    closed, shapes = funcgrad.make_jaxpr(all_entries, return_shape=True)(*flat_args)
    got = iter(run_xla(closed, flat_args))
    return [[next(got) for _ in funcgrad.tree_util.tree_leaves(shape)] for shape in shapes]


# A dozen entries per program (their equations independent): a compile and a lowering per entry
# were most of the family's CPU (14.5 -> 11.7 s with 23 programs for 265 entries).
_CHUNK = 12
_CHUNK_OF = {e.name: i // _CHUNK for i, e in enumerate(_OPS)}


@functools.cache
def _chunk_outputs(index):
    """``{entry name: XLA's outputs}`` for the ``index``-th chunk of ``_OPS``, or ``None`` where the
    chunk's program fails to build, compile or run (each entry then compiles alone, so the failure
    names its entry)."""
    entries = _OPS[index * _CHUNK : (index + 1) * _CHUNK]
    try:
        return dict(zip([e.name for e in entries], _xla_outputs(entries)))
    except Exception:  # noqa: BLE001 - the entries' own programs say which one and why
        return None


@pytest.mark.slow
@pytest.mark.parametrize("entry", _OPS, ids=[e.name for e in _OPS])
def test_op_db_xla_matches_eager(entry):
    chunk = _chunk_outputs(_CHUNK_OF[entry.name])
    got = chunk[entry.name] if chunk is not None else _xla_outputs([entry])[0]
    all_samples, flat_args = _entry_program(entry)
    want = [np.asarray(w) for w in funcgrad.tree_util.tree_leaves(all_samples(*flat_args))]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (entry.name, g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, err_msg=entry.name, equal_nan=True, **_tolerance(g.dtype))


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 13])
@batched
def test_cumulative_scan_lengths(n, rng, monkeypatch):
    from funcgrad.primitives import sorting
    from funcgrad.xla_bridge.rules import sorting as rules

    monkeypatch.setattr(rules, "_FORCE", "scan")  # (small operands would take the window)
    x = rng.uniform(0.5, 1.5, (2, n)).astype(np.float64)
    for prim in (sorting.cumsum_p, sorting.cumprod_p, sorting.cummax_p, sorting.cummin_p):
        for reverse in (False, True):
            check_primitive(prim, [x], {"axis": 1, "reverse": reverse})
    check_primitive(
        sorting.cumsum_p, [rng.integers(0, 5, (n, 3)).astype(np.int32)], {"axis": 0, "reverse": False}
    )


def test_cumulative_window_lowering(rng, monkeypatch):
    # NOTE: [two lowerings of cumulative reductions]: JAX's n-wide reduce_window is chosen for
    # large 64-bit sums/products along a short minor axis, the prefix scan elsewhere; both agree.
    from funcgrad.primitives import sorting
    from funcgrad.xla_bridge.rules import sorting as rules

    f64, i64, f32 = np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.float32)
    add, mul, mx = "stablehlo.add", "stablehlo.multiply", "stablehlo.maximum"
    assert rules._use_window(add, (8192, 128), f64, 1) and rules._use_window(mul, (16, 1024, 64), i64, 2)
    assert not rules._use_window(add, (8192, 128), f32, 1)  # float32: the scan is faster
    assert not rules._use_window(add, (128, 8192), f64, 0)  # a leading axis
    assert not rules._use_window(mx, (8192, 128), f64, 1)  # cummax/cummin
    assert not rules._use_window(add, (1024, 128), f64, 1)  # within the caches
    assert not rules._use_window(add, (400000, 4), f64, 1)  # a short axis
    # small operands: the window for every op, dtype and axis (the scan compiles 3-5x slower)
    assert rules._use_window(mx, (64, 64), f32, 0) and not rules._use_window(add, (64, 65), f32, 0)
    assert not rules._use_window(add, (0, 3), f64, 0)  # (no window over an empty axis)
    lowered = funcgrad.jit(lambda a: fnp.cumprod(a, axis=1)).lower(np.ones((6000, 128))).as_text()
    assert "reduce_window" in lowered
    monkeypatch.setattr(rules, "_FORCE", "window")
    with one_program():
        for n in (1, 2, 5, 33):
            x = rng.uniform(0.5, 1.5, (3, n))
            for prim in (sorting.cumsum_p, sorting.cumprod_p, sorting.cummax_p, sorting.cummin_p):
                for reverse in (False, True):
                    check_primitive(prim, [x], {"axis": 1, "reverse": reverse})
        check_primitive(
            sorting.cumsum_p, [rng.integers(0, 5, (7, 3)).astype(np.int32)], {"axis": 0, "reverse": False}
        )
        check_primitive(sorting.cummax_p, [rng.uniform(size=(4, 6)) > 0.7], {"axis": 1, "reverse": True})


@batched
def test_gather_modes_out_of_bounds():
    from funcgrad.primitives.gather import (
        GatherDimensionNumbers,
        GatherScatterMode,
        ScatterDimensionNumbers,
        gather_p,
    )
    from funcgrad.primitives.scatter import scatter_p

    x = np.arange(12.0).reshape(4, 3)
    idx = np.array([[0], [3], [5], [-2]], np.int32)
    dn = GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
    for mode in GatherScatterMode:
        params = dict(
            dimension_numbers=dn,
            slice_sizes=(1, 3),
            mode=mode,
            fill_value=None,
            indices_are_sorted=False,
            unique_indices=False,
        )
        check_primitive(gather_p, [x, idx], params)
    sdn = ScatterDimensionNumbers(
        update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,)
    )
    upd = -np.ones((4, 3))
    for mode in GatherScatterMode:
        check_primitive(
            scatter_p,
            [x, idx, upd],
            dict(dimension_numbers=sdn, mode=mode, indices_are_sorted=False, unique_indices=False),
        )


@batched
def test_dot_general_merges_adjacent_contracting_dimensions(rng):
    # NOTE: [one contracting dimension on the CPU]: runs adjacent and in order in both operands
    # become one dimension; anything else (another order, a small result) is left as it is.
    cases = [
        ((2, 3, 128), (2, 3, 128), (((0, 1), (0, 1)), ((), ())), 1),
        ((2, 3, 128), (3, 2, 128), (((0, 1), (1, 0)), ((), ())), 2),
        ((2, 2, 3, 128), (2, 128, 2, 3), (((1, 2), (2, 3)), ((0,), (0,))), 1),
        ((2, 3, 4, 5, 128), (4, 5, 2, 3, 128), (((0, 1, 2, 3), (2, 3, 0, 1)), ((), ())), 2),
        ((2, 3, 4), (2, 3, 5), (((0, 1), (0, 1)), ((), ())), 2),
        ((2, 0, 128), (2, 0, 128), (((0, 1), (0, 1)), ((), ())), 1),
    ]
    for ls, rs, dn, n_contracting in cases:
        params = {"dimension_numbers": dn, "preferred_element_type": None}
        check_primitive(dt.dot_general_p, [rng.standard_normal(ls), rng.standard_normal(rs)], params)
        bind = functools.partial(dt.dot_general_p.bind, **params)
        closed = funcgrad.make_jaxpr(bind)(np.zeros(ls), np.zeros(rs))
        (line,) = [ln for ln in lower_jaxpr(closed).text.splitlines() if "stablehlo.dot_general" in ln]
        lhs_dims = line.split("contracting_dims = [")[1].split("]")[0]
        assert len(lhs_dims.split(",")) == n_contracting, line


@batched
def test_dot_general_with_a_transposed_wide_left_operand_swaps(rng):
    # NOTE: [transposed left operand on the CPU]: [K, M] x [K, N] with a long K and M >= 2N (here
    # after merging (8, 128) into K=1024) is emitted as dot(rhs, lhs) transposed back; float64,
    # or a left operand not much wider than the right, keeps the plain dot.
    dn = (((0, 1), (0, 1)), ((), ()))
    cases = [
        ((8, 128, 256), (8, 128, 64), np.float32, True),
        ((8, 128, 256), (8, 128, 160), np.float32, False),
    ]
    cases.append(((8, 128, 256), (8, 128, 64), np.float64, False))
    for ls, rs, dtype, swapped in cases:
        params = {"dimension_numbers": dn, "preferred_element_type": None}
        args = [rng.standard_normal(ls).astype(dtype), rng.standard_normal(rs).astype(dtype)]
        # K=1024 float32 sums, in another order than NumPy's: roundoff of a few ulps of ~30.
        check_primitive(dt.dot_general_p, args, params, tol=dict(rtol=1e-5, atol=1e-4))
        closed = funcgrad.make_jaxpr(functools.partial(dt.dot_general_p.bind, **params))(*args)
        text = lower_jaxpr(closed).text
        (line,) = [ln for ln in text.splitlines() if "stablehlo.dot_general" in ln]
        assert (
            line.split(" loc(")[0].endswith(
                f"-> tensor<{rs[-1]}x{ls[-1]}x{'f32' if dtype == np.float32 else 'f64'}>"
            )
            == swapped
        )
        assert ("stablehlo.optimization_barrier" in text) == swapped
    # The operands' precisions follow them.
    highest_lhs = (dt.Precision.HIGHEST, dt.Precision.DEFAULT)
    params = {"dimension_numbers": dn, "preferred_element_type": None, "precision": highest_lhs}
    bind = functools.partial(dt.dot_general_p.bind, **params)
    text = lower_jaxpr(funcgrad.make_jaxpr(bind)(*[np.zeros(s, np.float32) for s in cases[0][:2]])).text
    assert "precision = [DEFAULT, HIGHEST]" in text, text


@batched
def test_dot_general_pads_transposed_rows_of_a_page(rng):
    # NOTE: [rows of 4 KiB read transposed on the CPU]: a batched [B, K, M] x [B, K, N] with M
    # float32 rows of 4 KiB and M >= 2N is emitted on a left operand padded to M + 16, the extra
    # result rows sliced off; a narrower M, M < 2N or float64 keeps the plain dot.
    dn = (((1,), (1,)), ((0,), (0,)))
    cases = [
        ((2, 8, 1024), (2, 8, 256), np.float32, True),
        ((2, 8, 1000), (2, 8, 256), np.float32, False),
        ((2, 8, 1024), (2, 8, 1024), np.float32, False),
        ((2, 8, 1024), (2, 8, 256), np.float64, False),
    ]
    for ls, rs, dtype, padded in cases:
        params = {"dimension_numbers": dn, "preferred_element_type": None}
        args = [rng.standard_normal(ls).astype(dtype), rng.standard_normal(rs).astype(dtype)]
        check_primitive(dt.dot_general_p, args, params, tol=dict(rtol=1e-5, atol=1e-5))
        closed = funcgrad.make_jaxpr(functools.partial(dt.dot_general_p.bind, **params))(*args)
        text = lower_jaxpr(closed).text
        assert ("stablehlo.pad" in text and "stablehlo.slice" in text) == padded, text


@batched
def test_dot_general_copies_a_short_transposed_left_operand(rng):
    # NOTE: [short transposed left operands copied on the CPU]: a 2-D float32 [K, M] x [K, N] (or
    # [N, K]) with K <= 256 and M >= 512 is emitted on the left operand transposed to [M, K] behind
    # a barrier, which the dot then reads as [M, K]; a longer K, a narrower M, float64, batched
    # dots and results under 2**14 elements keep the plain dot.
    cases = [
        ((128, 512), (128, 96), (((0,), (0,)), ((), ())), np.float32, True),
        ((128, 512), (96, 128), (((0,), (1,)), ((), ())), np.float32, True),  # rhs as [N, K]
        ((512, 128), (128, 96), (((1,), (0,)), ((), ())), np.float32, False),  # already [M, K]
        ((128, 512), (128, 96), (((0,), (0,)), ((), ())), np.float64, False),
        ((300, 512), (300, 96), (((0,), (0,)), ((), ())), np.float32, False),  # K > 256
        ((128, 256), (128, 128), (((0,), (0,)), ((), ())), np.float32, False),  # M < 512
        ((16, 512), (16, 16), (((0,), (0,)), ((), ())), np.float32, False),  # 8192 results
        ((2, 64, 512), (2, 64, 96), (((1,), (1,)), ((0,), (0,))), np.float32, False),  # batched
    ]
    for ls, rs, dn, dtype, copied in cases:
        params = {"dimension_numbers": dn, "preferred_element_type": None}
        args = [rng.standard_normal(ls).astype(dtype), rng.standard_normal(rs).astype(dtype)]
        check_primitive(dt.dot_general_p, args, params, tol=dict(rtol=1e-5, atol=1e-4))
        closed = funcgrad.make_jaxpr(functools.partial(dt.dot_general_p.bind, **params))(*args)
        text = lower_jaxpr(closed).text
        (line,) = [ln for ln in text.splitlines() if "stablehlo.dot_general" in ln]
        t = "f32" if dtype == np.float32 else "f64"
        assert (f"(tensor<{ls[1]}x{ls[0]}x{t}>, tensor<{rs[0]}x{rs[1]}x{t}>)" in line) == copied, line
        assert ("stablehlo.transpose" in text and "stablehlo.optimization_barrier" in text) == copied, text


def test_dot_general_reads_a_transposed_operand_in_place(rng):
    # NOTE: [transposes folded into batched dots]: a transpose feeding a batched dot is folded into
    # its dimension numbers when the dot then reads [B, M, K] x [B, K, N] or [B, N, K] (also
    # through vmap's unit-dimension squeezes); other forms keep the transpose. Values and
    # gradients are those of the eager path (NumPy), which lowers nothing.
    q = rng.standard_normal((2, 3, 5, 4)).astype(np.float32)
    k = rng.standard_normal((2, 3, 6, 4)).astype(np.float32)
    kt = np.ascontiguousarray(np.transpose(k, (1, 0, 2, 3)))  # batch dimensions swapped

    def scores(q, k):
        return q @ fnp.swapaxes(k, -1, -2)

    def scores_per_example(q, k):
        return funcgrad.vmap(lambda a, b: a[None] @ fnp.swapaxes(b[None], -1, -2))(q, k)

    def left_transposed(q, k):
        return fnp.swapaxes(q, -1, -2) @ k[..., :5, :]  # [B, K, M] read transposed: kept

    def batch_swapped(q, kt):
        return q @ fnp.transpose(kt, (1, 0, 3, 2))  # the batch dimensions out of order: kept

    def types(lhs, rhs):
        return f"(tensor<{lhs}xf32>, tensor<{rhs}xf32>)"

    for f, args, operands in (
        (scores, (q, k), types("2x3x5x4", "2x3x6x4")),  # k read in place
        (scores_per_example, (q, k), types("2x3x5x4", "2x3x6x4")),
        (left_transposed, (q, k), types("2x3x4x5", "2x3x5x4")),  # q^T stays a transpose
        (batch_swapped, (q, kt), types("2x3x5x4", "2x3x4x6")),
    ):
        text = funcgrad.jit(f).lower(*args).as_text()
        (dot,) = [ln for ln in text.splitlines() if "stablehlo.dot_general" in ln]
        assert operands in dot, dot
        np.testing.assert_allclose(
            np.asarray(funcgrad.jit(f)(*args)), np.asarray(f(*args)), rtol=1e-5, atol=1e-5
        )

    def loss(q, k):
        return fnp.sum(fnp.sin(scores_per_example(q, k)) * fnp.arange(6.0, dtype=np.float32))

    grads = funcgrad.jit(funcgrad.grad(loss, argnums=(0, 1)))(q, k)
    for g, e in zip(grads, funcgrad.grad(loss, argnums=(0, 1))(q, k)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-5, atol=1e-5)


@batched
def test_dot_general_without_contraction_is_a_broadcast_multiply(rng):
    a, b = rng.standard_normal((2, 1, 3)), rng.standard_normal((2, 1, 4))
    dn = (((1,), (1,)), ((0,), (0,)))
    params = {"dimension_numbers": dn, "preferred_element_type": None}
    check_primitive(dt.dot_general_p, [a, b], params)
    closed = funcgrad.make_jaxpr(lambda x, y: dt.dot_general_p.bind(x, y, **params))(a, b)
    assert "stablehlo.dot_general" not in lower_jaxpr(closed).text
    # Batch dimension not in front, free dims on both sides, a pure outer product.
    check_primitive(
        dt.dot_general_p,
        [rng.standard_normal((3, 2)), rng.standard_normal((2, 4))],
        {"dimension_numbers": (((), ()), ((1,), (0,))), "preferred_element_type": None},
    )
    check_primitive(
        dt.dot_general_p,
        [rng.standard_normal((3,)), rng.standard_normal((4,))],
        {"dimension_numbers": (((), ()), ((), ())), "preferred_element_type": None},
    )
    check_primitive(
        dt.dot_general_p,
        [rng.standard_normal((1, 3)).astype(np.float32), rng.standard_normal((1, 4)).astype(np.float32)],
        {"dimension_numbers": (((0,), (0,)), ((), ())), "preferred_element_type": np.dtype(np.float64)},
    )


def test_one_broadcast_per_operand():
    # NOTE: [one broadcast per operand]: a size-1 operand used by several elementwise primitives
    # is broadcast once in the module (XLA materialised one copy per use), and values are kept.
    x = np.arange(6.0).reshape(2, 3) + 1.0
    y = np.array([[2.0], [4.0]])

    def f(x, y):
        return (x / y) * (x - y) + y

    text = funcgrad.jit(f).lower(x, y).as_text()
    assert text.count("stablehlo.broadcast_in_dim %arg1") == 1
    np.testing.assert_allclose(np.asarray(funcgrad.jit(f)(x, y)), (x / y) * (x - y) + y)
