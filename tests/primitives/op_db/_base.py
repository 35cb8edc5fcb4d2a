"""The machinery of the operator table: ``OpInfo``, ``Sample``, shape strategies and value generators.

Family modules (``tests/primitives/op_db/<family>.py``, named like ``primitives/<family>.py``) build their
entries from these.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from hypothesis.extra import numpy as hnp

from funcgrad.kernel.core import Primitive

F32, F64, I32, BOOL = (np.dtype(d) for d in ("float32", "float64", "int32", "bool"))
C64, C128 = np.dtype("complex64"), np.dtype("complex128")
FLOATS = (F64, F32)
COMPLEX = (C128, C64)
INEXACT = (*FLOATS, *COMPLEX)  # where an op's math is defined for complex numbers too
ALL3 = (F64, F32, I32)
# The dtypes in which derivatives are checked against finite differences (the precision of the
# differences): float64, and complex128 for the entries that list complex dtypes.
DERIVATIVE_DTYPES = (F64, C128)


class Sample(NamedTuple):
    args: tuple
    params: dict


@dataclasses.dataclass(frozen=True)
class OpInfo:
    name: str
    primitive: Primitive
    op: Callable
    ref: Callable | None
    sampler: Callable[[Any, np.dtype, np.random.Generator], Sample]
    shapes: Any = None  # hypothesis strategy of the ``shape`` handed to the sampler
    sample_shapes: tuple = ((3, 4), ())  # fixed shapes: derivative/vmap checks and sample_inputs
    dtypes: tuple = FLOATS
    differentiable: bool = True
    diff_argnums: tuple | None = None  # None: every inexact argument
    linear_argnums: tuple = ()  # groups of arguments the op is (jointly) linear in
    rtol: float = 1e-12  # value check in float64 (float32: max(rtol, 2e-5))
    atol: float = 1e-12
    grad_rtol: float = 1e-4
    grad_atol: float = 1e-5
    order: int = 2
    check_fd: bool = True  # False where finite differences cannot resolve the derivative
    # The exception a JVP raises where the primitive has no derivative by design (as in JAX: the
    # Schur form, Hessenberg reduction); such entries are ``differentiable=False``.
    derivative_error: type[Exception] | None = None
    # A collective over this named axis: each argument's leading dimension holds the axis's
    # instances and the checks run ``op`` under ``vmap(op, axis_name=named_axis)`` (its jaxpr is
    # made with that axis in ``make_jaxpr``'s ``axis_env``); see tests/primitives/op_db/collectives.py.
    named_axis: str | None = None
    # False where vmap is by design not a loop over the lanes (rng_bit_generator: JAX's rule draws
    # the batch from the first key); such entries are checked against jax's vmap in their tests.
    vmap_is_loop: bool = True


def _shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def _arr(rng, shape, dtype, lo=-2.0, hi=2.0):
    """Uniform values in ``[lo, hi]``; complex values have both parts there (so a range of positive
    numbers keeps them away from the branch cuts on the negative real axis)."""
    dtype = np.dtype(dtype)
    if dtype == BOOL:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind in "iu":
        return np.asarray(rng.integers(int(lo), int(hi) + 1, shape), dtype)
    if dtype.kind == "c":
        return np.asarray(rng.uniform(lo, hi, shape) + 1j * rng.uniform(lo, hi, shape), dtype)
    return np.asarray(rng.uniform(lo, hi, shape), dtype)


def _away(rng, shape, dtype, lo=0.3, hi=2.0):
    """Values with ``lo <= |x| <= hi`` (away from a kink or pole at 0); complex ones at a random
    angle."""
    if np.dtype(dtype).kind == "c":
        angle = rng.uniform(-np.pi, np.pi, shape)
        return np.asarray(rng.uniform(lo, hi, shape) * np.exp(1j * angle), dtype)
    return np.asarray(rng.uniform(lo, hi, shape) * rng.choice([-1.0, 1.0], shape), dtype)


def _distinct(rng, shape, dtype):
    """Distinct values at least 0.3 apart (no ties: max/min/sort stay smooth under perturbation)."""
    n = int(np.prod(shape, dtype=np.int64))
    vals = (rng.permutation(n) - n / 2) * 0.5 + rng.uniform(0, 0.2, n)
    return np.asarray(vals.reshape(shape), dtype)


def _comparable(rng, shape, dtype):
    # Small integers (in both parts of complex values): ties happen.
    wide = np.complex128 if np.dtype(dtype).kind == "c" else np.float64
    x = _arr(rng, shape, wide)
    return np.asarray(x.real.round() + 1j * x.imag.round() if x.dtype.kind == "c" else x.round(), dtype)


def _one(gen=None, **params_of_shape):
    """A sampler of one array argument; ``params_of_shape[k](shape)`` gives each static param."""
    gen = gen or (lambda rng, shape, dtype: _arr(rng, shape, dtype))

    def sampler(shape, dtype, rng):
        return Sample((gen(rng, shape, dtype),), {k: f(shape) for k, f in params_of_shape.items()})

    return sampler


def sample_inputs(entry: OpInfo, dtype, rng: np.random.Generator) -> list[Sample]:
    """Concrete samples of ``entry`` for ``dtype``: one per ``entry.sample_shapes`` (the jit-vs-eager
    tests of the XLA bridge call ``entry.op(*s.args, **s.params)`` on each)."""
    return [entry.sampler(shape, np.dtype(dtype), rng) for shape in entry.sample_shapes]


def in_axes_combinations(sample: Sample):
    """Every in_axes: each argument unbatched, batched at axis 0, or batched at its last axis."""
    choices = [[None, 0] if np.ndim(a) == 0 else [None, 0, -1] for a in sample.args]
    return [axes for axes in itertools.product(*choices) if any(a is not None for a in axes)]


def carries_jaxprs(primitive) -> bool:
    """Primitives that take jaxprs, not arrays, as parameters (``Primitive.traits.jaxpr_params``: jit,
    checkpoint, the custom-derivative calls, control flow) are exercised from real programs by the
    kernel, custom-derivative and control-flow tests instead of this table."""
    return bool(primitive.traits.jaxpr_params)
