"""The closed primitive catalog: every operation funcgrad programs are made of, with its rules.

Layer: primitives. Imports only the funcgrad kernel (and numpy/scipy for impls).

One module per family (elementwise, structure, reductions, dot, call, ...). Importing this package
registers the few array operations the kernel's transformations need (``funcgrad.kernel_ops``).
"""

from __future__ import annotations

import os

import numpy as np

from funcgrad import custom_derivatives as _custom_derivatives
from funcgrad import dtypes as _dt
from funcgrad import partial_eval as _pe
from funcgrad.core import Primitive
from funcgrad.kernel_ops import ops as _ops
from primitives import (
    bitcast,
    call,
    control_flow,
    dot,
    elementwise,
    gather,
    indexing,
    reductions,
    remat,
    scatter,
    sorting,
    structure,
)

_pe.register_library_dir(os.path.dirname(os.path.abspath(__file__)))


def _zeros(aval):
    if aval.dtype == _dt.float0:
        return np.zeros(aval.shape, _dt.float0)
    return structure.broadcast_in_dim(np.zeros((), aval.dtype), aval.shape, ())


def _full_like(x, value):
    aval = elementwise.aval_of(x)
    return structure.broadcast_in_dim(np.asarray(value, aval.dtype), aval.shape, ())


def _broadcast_batch(x, axis_size, dim):
    aval = elementwise.aval_of(x)
    shape = list(aval.shape)
    shape.insert(dim, axis_size)
    dims = [d for d in range(len(shape)) if d != dim]
    return structure.broadcast_in_dim(x, shape, dims)


_ops.add_any = lambda x, y: elementwise.add_any_p.bind(x, y)
_ops.zeros = _zeros
_ops.full_like = _full_like
_ops.moveaxis = structure.moveaxis
_ops.broadcast_batch = _broadcast_batch
_ops.broadcast_in_dim = structure.broadcast_in_dim
_ops.reduce_sum = reductions.reduce_sum
_ops.sum_to_scalar = lambda x: reductions.reduce_sum(x, tuple(range(elementwise.aval_of(x).ndim)))


def all_primitives() -> list[Primitive]:
    """Every primitive of the catalog (for completeness tests and the lowering table)."""
    found = []
    # The kernel declares the custom-derivative primitives; they belong to the catalog too.
    for module in (
        elementwise,
        bitcast,
        structure,
        gather,
        scatter,
        indexing,
        sorting,
        reductions,
        dot,
        call,
        remat,
        control_flow,
        _custom_derivatives,
    ):
        for value in vars(module).values():
            if isinstance(value, Primitive) and value not in found:
                found.append(value)
    return found
