"""The table-driven harness of the funcgrad.numpy / funcgrad.nn compatibility tests (PyTorch's
OpInfo and JAX's lax_numpy_test, in small).

A ``Case`` names a funcgrad function, its reference (NumPy or SciPy), how to draw its inputs and
what to check. Hypothesis draws the *structure* (shapes, including 0-d and size-0 ones, dtypes,
a seed); values come from a NumPy generator seeded by the draw, uniform in the case's domain, so
gradient checks never sit on ties or kinks. Generic checks:

- ``check_values``: value and dtype against the reference (NumPy 2 dtypes, NEP 50).
- ``check_grads``: forward and reverse derivatives against central finite differences in float64.
- ``check_vmap``: ``vmap`` against a Python loop.
- ``check_jit``: ``jit`` (XLA) against eager evaluation.
- ``check_zero_grad``: integer/bool-valued functions have zero derivatives and do not break grad.

A test module under tests/surface/ names its table ``CASES``; tests/surface/test_surface_cases.py
finds every such table and runs the first four checks on it.
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import funcgrad
import funcgrad.numpy as fnp
from funcgrad.api import jit
from funcgrad.kernel import tree_util as tu
from funcgrad.testing import check_grads as _check_grads

F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
I32, I64, U8, B = np.dtype(np.int32), np.dtype(np.int64), np.dtype(np.uint8), np.dtype(np.bool_)
FLOATS = (F32, F64)
NUMERIC = (F32, F64, I32)
ALL = (F32, F64, I32, B)
INTS = (I32, I64)

TOL = {F16: (1e-2, 1e-2), F32: (2e-5, 1e-5), F64: (1e-11, 1e-12)}


def shapes(n: int = 1, *, min_dims=0, max_dims=3, min_side=0, max_side=4, broadcast=True):
    """A strategy for ``n`` shapes: mutually broadcastable (by default) or all equal."""
    if n == 1 or not broadcast:
        return hnp.array_shapes(
            min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
        ).map(lambda s: (s,) * n)
    return hnp.mutually_broadcastable_shapes(
        num_shapes=n, min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side
    ).map(lambda bs: bs.input_shapes)


def arr(rng, shape, dtype, lo=-3.0, hi=3.0):
    """Uniform values in ``[lo, hi)`` (integers: ``lo..hi``; bools: fair coins) of ``dtype``."""
    dtype = np.dtype(dtype)
    if dtype == B:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(int(np.ceil(lo)), int(np.floor(hi)) + 1, size=shape).astype(dtype)
    return rng.uniform(lo, hi, size=shape).astype(dtype)


@dataclasses.dataclass(repr=False)
class Case:
    """One function under test. ``make(rng, dtype, shapes) -> (args, kwargs)`` builds the inputs:
    ``args`` are arrays (differentiated and batched), ``kwargs`` static parameters."""

    name: str
    fn: Callable
    ref: Callable
    make: Callable
    shapes: Any = dataclasses.field(default_factory=shapes)
    dtypes: tuple = FLOATS
    grad: bool = True
    order: int = 2
    vmap: bool = True
    jit: bool = True
    check_dtype: bool = True
    expected_dtype: Callable | None = None
    rtol: float | None = None
    atol: float | None = None
    grad_rtol: float = 1e-4
    grad_atol: float = 1e-5
    grad_argnums: tuple | None = None
    id: str | None = None

    def __post_init__(self):
        self.id = self.id or self.name

    def __repr__(self):
        return self.id


def draw_inputs(case: Case, data, dtypes=None):
    dtype = data.draw(st.sampled_from(dtypes or case.dtypes), label="dtype")
    shp = data.draw(case.shapes, label="shapes")
    seed = data.draw(st.integers(0, 2**16), label="seed")
    args, kwargs = case.make(np.random.default_rng(seed), dtype, shp)
    return dtype, list(args), dict(kwargs), shp


def _leaves(x):
    return tu.tree_leaves(x) if isinstance(x, tuple | list) else [x]


def _for_dtype(tol, dtype):
    """A case's tolerance: one number, or a ``{dtype: number}`` dict (other dtypes: the default)."""
    return tol.get(np.dtype(dtype)) if isinstance(tol, dict) else tol


def assert_matches(actual, expected, dtype, case: Case, what="value"):
    a_leaves, e_leaves = _leaves(actual), _leaves(expected)
    assert len(a_leaves) == len(e_leaves), f"{case.name}: {len(a_leaves)} outputs, expected {len(e_leaves)}"
    rtol, atol = TOL.get(np.dtype(dtype), TOL[F64]) if np.dtype(dtype).kind == "f" else TOL[F64]
    rtol, atol = _for_dtype(case.rtol, dtype) or rtol, _for_dtype(case.atol, dtype) or atol
    for a, e in zip(a_leaves, e_leaves):
        a_np, e_np = np.asarray(a), np.asarray(e)
        assert a_np.shape == e_np.shape, f"{case.name} {what}: shape {a_np.shape} != expected {e_np.shape}"
        if case.check_dtype and what == "value":
            want = case.expected_dtype(dtype) if case.expected_dtype else e_np.dtype
            assert a_np.dtype == want, f"{case.name}: dtype {a_np.dtype} != expected {want}"
        if e_np.dtype.kind in "biu" and a_np.dtype.kind in "biu":
            np.testing.assert_array_equal(a_np, e_np, err_msg=f"{case.name} {what}")
        else:
            np.testing.assert_allclose(
                a_np.astype(np.float64),
                e_np.astype(np.float64),
                rtol=rtol,
                atol=atol,
                equal_nan=True,
                err_msg=f"{case.name} {what}",
            )


def check_values(case: Case, data):
    dtype, args, kwargs, _ = draw_inputs(case, data)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the reference's own warnings (empty slices, ddof)
        expected = case.ref(*args, **kwargs)
        actual = case.fn(*args, **kwargs)
    assert_matches(actual, expected, dtype, case)


def _diff_argnums(case, args):
    if case.grad_argnums is not None:
        return case.grad_argnums
    return tuple(i for i, a in enumerate(args) if np.asarray(a).dtype.kind == "f")


def check_grads(case: Case, data):
    _, args, kwargs, _ = draw_inputs(case, data, dtypes=(F64,))
    argnums = _diff_argnums(case, args)
    if not argnums or all(np.size(args[i]) == 0 for i in argnums):
        return

    def f(*diff_args):
        full = list(args)
        for i, v in zip(argnums, diff_args):
            full[i] = v
        return case.fn(*full, **kwargs)

    diff_args = [args[i] for i in argnums]
    with np.errstate(all="ignore"):
        out = _leaves(f(*diff_args))
    if any(np.isnan(np.asarray(o)).any() for o in out):
        return  # a NaN value (e.g. var with ddof >= n) has no meaningful finite difference
    _check_grads(f, diff_args, order=case.order, rtol=case.grad_rtol, atol=case.grad_atol)


def check_vmap(case: Case, data, lanes: int = 2):
    dtype, args0, kwargs, _ = draw_inputs(case, data)
    if not args0:
        return  # nothing to batch (creation from static arguments)
    seed = data.draw(st.integers(0, 2**16), label="lane seed")
    rng = np.random.default_rng(seed)
    lanes_args = [args0]
    for k in range(1, lanes):
        # Same shapes and static parameters, new values: floats scaled (signs and domains kept),
        # integers and bools permuted (index arguments stay valid).
        lane = []
        for a in args0:
            a = np.asarray(a)
            if a.dtype.kind == "f":
                lane.append((a * (1 + 0.05 * k)).astype(a.dtype))
            else:
                lane.append(rng.permutation(a.ravel()).reshape(a.shape).astype(a.dtype))
        lanes_args.append(lane)
    batched = [np.stack([la[i] for la in lanes_args]) for i in range(len(args0))]
    with np.errstate(all="ignore"):
        out = funcgrad.vmap(lambda *xs: case.fn(*xs, **kwargs))(*batched)
        expected = [case.fn(*la, **kwargs) for la in lanes_args]
    for i, exp in enumerate(expected):
        got = tu.tree_map(lambda o, i=i: np.asarray(o)[i], out)
        assert_matches(got, exp, dtype, case, what=f"vmap lane {i}")


def check_jit(case: Case, data):
    dtype, args, kwargs, _ = draw_inputs(case, data)
    with np.errstate(all="ignore"):
        expected = case.fn(*args, **kwargs)
        actual = jit(lambda *xs: case.fn(*xs, **kwargs))(*args)
    assert_matches(actual, expected, dtype, case, what="jit")


def check_jit_grad(case: Case, data):
    """``jit(grad(sum(f)))`` against eager ``grad``: stages the derivative rules (custom JVPs)."""
    _, args, kwargs, _ = draw_inputs(case, data, dtypes=(F64,))
    argnums = _diff_argnums(case, args)
    if not argnums:
        return

    def loss(*diff_args):
        full = list(args)
        for i, v in zip(argnums, diff_args):
            full[i] = v
        outs = _leaves(case.fn(*full, **kwargs))
        return sum(fnp.sum(o) for o in outs)

    diff_args = [args[i] for i in argnums]
    g = funcgrad.grad(loss, argnums=tuple(range(len(argnums))))
    expected = g(*diff_args)
    actual = jit(g)(*diff_args)
    for a, e in zip(actual, expected):
        np.testing.assert_allclose(np.asarray(a), np.asarray(e), rtol=1e-10, atol=1e-12, err_msg=case.name)


def check_zero_grad(case: Case, data):
    """``grad`` through an integer/bool-valued function is zero (and does not raise)."""
    _, args, kwargs, _ = draw_inputs(case, data, dtypes=(F64,))
    argnums = _diff_argnums(case, args)
    if not argnums:
        return

    def f(*diff_args):
        full = list(args)
        for i, v in zip(argnums, diff_args):
            full[i] = v
        outs = _leaves(case.fn(*full, **kwargs))
        total = 0.0
        for o in outs:
            total = total + fnp.sum(fnp.asarray(o).astype(np.float64))
        return total

    grads = funcgrad.grad(f, argnums=tuple(range(len(argnums))))(*[args[i] for i in argnums])
    for g in grads:
        np.testing.assert_array_equal(np.asarray(g), 0.0)


# ----------------------------------------------------------------------------------------------
# Input builders shared by the function tables


def pick_axis(rng, ndim, allow_none=True, allow_tuple=True):
    """A random valid ``axis`` argument: None, an int (negative too) or a pair of axes."""
    choices = [None] if allow_none else []
    choices += list(range(-ndim, ndim))
    if allow_tuple and ndim >= 2:
        choices.append((0, ndim - 1))
    if not choices:
        return None
    return choices[rng.integers(len(choices))]


def reduction(lo=-3.0, hi=3.0, extra=None, nan=False, allow_tuple=True):
    """Inputs of a reduction: one array, a random ``axis`` and ``keepdims`` (and ``extra`` kwargs)."""

    def make(rng, dtype, shp):
        x = arr(rng, shp[0], dtype, lo, hi)
        if nan and x.dtype.kind == "f":
            x[rng.random(x.shape) < 0.2] = np.nan
        kwargs = {"axis": pick_axis(rng, x.ndim, allow_tuple=allow_tuple), "keepdims": bool(rng.integers(2))}
        if extra:
            kwargs.update(extra(rng, x))
        return [x], kwargs

    return make


def const(**kwargs):
    """No array inputs, only static keyword arguments."""
    return lambda rng, dt, shp: ([], kwargs)


def one(lo=-3.0, hi=3.0, **kwargs):
    """One array input of the drawn shape, and static keyword arguments."""
    return lambda rng, dt, shp: ([arr(rng, shp[0], dt, lo, hi)], dict(kwargs))


def numpy_case(name, make=None, dtypes=FLOATS, ref=None, fn=None, **kw):
    """A ``Case`` for ``funcgrad.numpy.<name>`` against ``numpy.<name>``."""
    return Case(
        name, fn or getattr(fnp, name), ref or getattr(np, name), make or reduction(), dtypes=dtypes, **kw
    )
