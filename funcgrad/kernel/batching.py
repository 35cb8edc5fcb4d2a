"""Vectorisation: the batching interpreter behind ``vmap``.

Layer: kernel. Imports ``core``, ``ir``, ``partial_eval`` and ``hooks`` (the array operations the
catalog registers, NOTE: [kernel registration]).

A ``BatchTracer`` holds a value with one extra dimension, ``batch_dim``, or ``None`` when the value
is the same for every lane (then it is not a tracer at all: unbatched values pass through
untouched, so a function of unbatched inputs runs once, not ``axis_size`` times). Each primitive
has a batch rule ``batch(axis_size, values, dims, **params) -> (out, out_dim)`` that computes the
whole batch with primitives — never a Python loop over lanes.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from funcgrad.kernel import core
from funcgrad.kernel.core import Tracer
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ClosedJaxpr, ShapedArray
from funcgrad.kernel.partial_eval import trace_to_jaxpr

_value_and_dim = operator.attrgetter("val", "batch_dim")


class BatchTracer(Tracer):
    __slots__ = ("val", "batch_dim")

    def __init__(self, trace, val, batch_dim: int):
        self._trace = trace
        self.val = val
        self.batch_dim = batch_dim

    @property
    def aval(self):
        aval = core.get_aval(self.val)
        shape = aval.shape[: self.batch_dim] + aval.shape[self.batch_dim + 1 :]
        return ShapedArray(shape, aval.dtype, aval.weak_type)


class BatchTrace(core.Trace):
    def __init__(self, parent, axis_size: int, axis_name=None):
        super().__init__(parent)
        self.axis_size = axis_size
        self.axis_name = axis_name

    def process_primitive(self, primitive, args, params):
        vals, dims, batched = self.unpack(args, BatchTracer, _value_and_dim)
        with core.set_current_trace(self.parent):
            if not batched:
                return primitive.bind(*vals, **params)
            rule = primitive.batch
            if rule is None:
                raise NotImplementedError(f"Batching rule for '{primitive.name}' not implemented.")
            out, out_dim = rule(self.axis_size, vals, dims, **params)
        if primitive.multiple_results:
            return [self.lift(o, d) for o, d in zip(out, out_dim)]
        return self.lift(out, out_dim)

    def lift(self, val, dim):
        return val if dim is None else BatchTracer(self, val, dim)

    def describe(self):
        return "a vectorised function (vmap)"


def vmap_flat(
    f: Callable,
    axis_size: int,
    in_dims: Sequence[int | None],
    out_dims: Sequence[int | None] | Callable,
    args: Sequence[Any],
    axis_name=None,
) -> list:
    """Batch ``f(*args) -> list`` along ``in_dims``; outputs get their batch dim at ``out_dims``
    (``None``: the output must be unbatched, else it is an error)."""
    with core.new_trace(BatchTrace, axis_size, axis_name) as trace:
        tracers = [a if d is None else BatchTracer(trace, a, d) for a, d in zip(args, in_dims)]
        vals, dims = _unpack_batch_outputs(trace, f(*tracers))
    out_dims = out_dims() if callable(out_dims) else out_dims
    return [move_batch_dim(v, axis_size, d, od) for v, d, od in zip(vals, dims, out_dims)]


def _unpack_batch_outputs(trace: BatchTrace, outs) -> tuple[list, list]:
    """Values and batch dims (``None``: unbatched) of outputs of a function run on ``trace``."""
    vals, dims, _ = trace.unpack(outs, BatchTracer, _value_and_dim)
    return vals, dims


def move_batch_dim(x, axis_size: int, src: int | None, dst: int | None):
    """Put the batch dimension of ``x`` (``src``, possibly ``None``) at ``dst``."""
    if dst is None:
        if src is None:
            return x
        raise ValueError(
            "vmap: out_axes=None requires the output to be the same for every element of the "
            "batch, but this output depends on the mapped inputs."
        )
    ndim = core.get_aval(x).ndim + (src is None)
    if not -ndim <= dst < ndim:
        raise ValueError(f"vmap: out_axes={dst} is out of range for an output of rank {ndim}")
    dst = dst % ndim
    if src is None:
        return hooks.broadcast_batch(x, axis_size, dst)
    return x if src == dst else hooks.moveaxis(x, src, dst)


def batch_jaxpr(
    closed: ClosedJaxpr, axis_size: int, in_dims: Sequence[int | None], instantiate: bool | Sequence[bool]
) -> tuple[ClosedJaxpr, list[int | None]]:
    """Batch a jaxpr: returns a jaxpr over batched inputs (batch dims as given) and the batch dim
    of each output (0, or ``None`` when unbatched and not instantiated)."""
    n_out = len(closed.out_avals)
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * n_out
    in_avals = []
    for aval, d in zip(closed.in_avals, in_dims):
        if d is None:
            in_avals.append(aval)
        else:
            shape = list(aval.shape)
            shape.insert(d, axis_size)
            in_avals.append(ShapedArray(shape, aval.dtype, aval.weak_type))
    out_dims_box: list = []

    def traced(*args):
        with core.new_trace(BatchTrace, axis_size) as trace:
            tracers = [a if d is None else BatchTracer(trace, a, d) for a, d in zip(args, in_dims)]
            vals, dims = _unpack_batch_outputs(trace, core.eval_jaxpr(closed.jaxpr, closed.consts, *tracers))
        final_dims = [0 if (d is not None or inst) else None for d, inst in zip(dims, instantiate)]
        out_dims_box.append(final_dims)
        return [move_batch_dim(v, axis_size, d, fd) for v, d, fd in zip(vals, dims, final_dims)]

    batched = trace_to_jaxpr(traced, in_avals)
    return batched, out_dims_box[0]
