"""NOTE: [one eager step]: EvalTrace and the interpreter of cached eager programs evaluate an
equation through the same host step, so a program of narrow dtypes gives the same values and
dtypes through either (the interpreter once left such programs out after it drifted: a repeated
eager grad through a bfloat16 matmul returned float32)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.kernel import core, numpy_plan
from funcgrad.kernel.array import Array


def _both(f, *args):
    closed = funcgrad.make_jaxpr(f)(*args)
    plan = numpy_plan._numpy_plan(closed)
    assert plan is not None  # the program interpreter takes narrow programs too
    by_plan = numpy_plan.eager_call_impl(*args, jaxpr=closed)
    by_eval = core.eval_jaxpr(closed.jaxpr, closed.consts, *args)
    return by_plan, by_eval


@pytest.mark.parametrize(
    "f, dtype",
    [
        (lambda a, b: fnp.tanh(a @ b) * 2 + a.sum(), ml_dtypes.bfloat16),  # NumPy's matmul: float32
        (lambda a, b: -(a * b) + b, ml_dtypes.uint4),  # computed by XLA (NOTE: [narrow dtypes on the host])
        (lambda a, b: a @ b + 1.5, np.float32),  # the plain impls
    ],
)
def test_the_program_interpreter_and_evaltrace_agree(f, dtype):
    a = np.arange(1, 5).reshape(2, 2).astype(dtype)
    by_plan, by_eval = _both(f, a, a)
    for p, e in zip(by_plan, by_eval, strict=True):
        assert type(p) is Array and p.dtype == e.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(np.asarray(p).astype(np.float64), np.asarray(e).astype(np.float64))


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_half_floats_compiled_by_trait_in_every_interpreter_as_jax(dtype):
    # A primitive whose traits say half_floats_compiled (exp2, asin, cumsum, ...) takes the compiled
    # narrow step for float16/bfloat16 in EvalTrace, the cached-program interpreter and the eager
    # loops' NumPy interpreter alike: XLA's rounded half steps, jax's bits
    jax = pytest.importorskip("jax")
    from funcgrad.primitives import control_flow

    x = np.random.default_rng(1).uniform(-0.99, 0.99, 200).astype(dtype)

    def f(lax, v):
        return lax.cumsum(lax.asin(v)) + lax.exp2(v)

    want = np.asarray(f(jax.lax, x))
    closed = funcgrad.make_jaxpr(lambda v: f(funcgrad.lax, v))(x)
    by_plan, by_eval = _both(lambda v: f(funcgrad.lax, v), x)
    (by_loop,) = control_flow.eval_jaxpr_numpy(closed.jaxpr, closed.consts, [x])
    assert numpy_plan._numpy_plan(closed).steps[0][1].func is core._narrow_impl
    for got in (by_plan[0], by_eval[0], by_loop):
        assert np.asarray(got).dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), want)


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_more_half_float_functions_eagerly_give_jax_bits(dtype):
    # (the lax-parameter fuzzer's half-precision sweep: eager exp/erfc/digamma/pow/atan/bessel_i1e/
    # zeta of float16 or bfloat16 differed from jax in the last bit: NumPy's one rounding of its
    # float32 value is not XLA's)
    jax = pytest.importorskip("jax")
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.standard_normal(300) * 3, rng.standard_normal(100) * 50]).astype(dtype)
    y = np.roll(np.abs(x), 3) + dtype(0.5)

    def f(lax, v, w):
        return [lax.exp(v), lax.erfc(v), lax.digamma(v), lax.pow(w, v), lax.atan(v), lax.bessel_i1e(v)]

    for got, want in zip(f(funcgrad.lax, x, y), f(jax.lax, x, y), strict=True):
        assert np.asarray(got).dtype == np.asarray(want).dtype
        # (as float64: NumPy's comparison does not see bfloat16's NaNs as NaNs)
        np.testing.assert_array_equal(np.asarray(got).astype(np.float64), np.asarray(want).astype(np.float64))


def test_both_interpreters_take_one_host_step_per_primitive():
    from funcgrad.primitives.dot import dot_general_p
    from funcgrad.primitives.elementwise import add_p

    a = np.ones((2, 2), ml_dtypes.bfloat16)
    closed = funcgrad.make_jaxpr(lambda x: x @ x + x)(a)
    steps = [step[1] for step in numpy_plan._numpy_plan(closed).steps]
    names = [getattr(s, "func", None) for s in steps]
    assert names == [core._narrow_impl, core._narrow_impl]  # core.narrow_step, as EvalTrace takes
    assert [s.args[0] for s in steps] == [dot_general_p, add_p]
    plain = funcgrad.make_jaxpr(lambda x: x + x)(np.ones(2))
    assert numpy_plan._numpy_plan(plain).steps[0][1] is add_p.impl  # the impl itself: no wrapper


def test_repeated_eager_grads_of_narrow_programs_keep_their_dtype():
    w = np.full((3, 2), 0.5, ml_dtypes.bfloat16)

    def loss(x):
        return fnp.sum(fnp.tanh(x @ w)).astype(np.float32)

    x = np.ones((2, 3), ml_dtypes.bfloat16)
    grads = [funcgrad.grad(loss)(x) for _ in range(3)]  # the 2nd and 3rd: the cached program
    for g in grads:
        assert g.dtype == ml_dtypes.bfloat16
        np.testing.assert_array_equal(
            np.asarray(g).astype(np.float32), np.asarray(grads[0]).astype(np.float32)
        )
