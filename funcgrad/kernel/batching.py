"""Vectorisation: the batching interpreter behind ``vmap``.

Layer: kernel. Imports ``core``, ``ir``, ``partial_eval`` and ``hooks`` (the array operations the
catalog registers, NOTE: [kernel registration]).

A ``BatchTracer`` holds a value with one extra dimension, ``batch_dim``, or ``None`` when the value
is the same for every lane (then it is not a tracer at all: unbatched values pass through
untouched, so a function of unbatched inputs runs once, not ``axis_size`` times). Each primitive
has a batch rule ``batch(axis_size, values, dims, **params) -> (out, out_dim)`` that computes the
whole batch with primitives — never a Python loop over lanes.

# NOTE: [named axes]
# ``vmap(f, axis_name=name)`` binds ``name`` for the dynamic extent of ``f``: ``axis_env`` holds
# the (name, size) frames in scope (shard_map and pmap push theirs while tracing their bodies),
# so a staging trace can type a collective (all_gather's output has the axis size) and an unbound
# name is reported where it is used (``axis_size`` raises a NameError naming the axis and the
# names in scope). The BatchTrace of that vmap gives every collective over ``name`` its meaning
# through its ``traits.collective_batch(axis_size, axis_name, values, dims, **params)``, also
# when the operand is unbatched (``psum(1, 'i')`` is the axis size) or absent (``axis_index``).
# A call or control-flow primitive whose jaxprs name the axis is batched even when no operand
# is, so the collectives inside meet the rule; batch rules that batch a jaxpr read the name of
# the vmap being processed from ``current_axis_name()`` (``batch_jaxpr``'s default).
# Collectives name their axes in the ``axis_name`` parameter (a tuple of names).
"""

from __future__ import annotations

import operator
import threading
from collections.abc import Callable, Sequence
from typing import Any

from funcgrad.kernel import core
from funcgrad.kernel.core import Tracer
from funcgrad.kernel.hooks import hooks
from funcgrad.kernel.ir import ClosedJaxpr, ShapedArray, jaxprs_in_params
from funcgrad.kernel.partial_eval import trace_to_jaxpr

_value_and_dim = operator.attrgetter("val", "batch_dim")


# ----------------------------------------------------------------------------------------------
# Named axes (NOTE: [named axes])


class _AxisState(threading.local):
    def __init__(self):
        self.frames: list[tuple[Any, int]] = []  # (name, size), innermost last
        self.batching: Any = None  # the axis name of the vmap whose batch rule is running


_axes = _AxisState()


class extend_axis_env:
    """Bind named axes ``[(name, size), ...]`` for the dynamic extent of a ``with`` block."""

    __slots__ = ("frames", "n")

    def __init__(self, frames):
        self.frames = list(frames)

    def __enter__(self):
        self.n = len(_axes.frames)
        _axes.frames.extend(self.frames)

    def __exit__(self, *exc):
        del _axes.frames[self.n :]


class cleared_axis_env:
    """No named axes in scope for the dynamic extent of a ``with`` block (an eager shard_map runs
    each primitive of its body as a program of its own, outside the body's axes), restored after."""

    __slots__ = ("saved",)

    def __enter__(self):
        self.saved = list(_axes.frames)
        del _axes.frames[:]

    def __exit__(self, *exc):
        _axes.frames[:] = self.saved


def axis_env() -> tuple:
    """The named axes in scope, outermost first: ``((name, size), ...)``."""
    return tuple(_axes.frames)


def trace_state_clean() -> bool:
    """JAX's ``core.trace_state_clean()``: no transformation is running (the current trace is the
    eager one -- also under ``debug_nans``'s checking evaluator, as in JAX, where it is a dispatch
    mode -- and no named axis is bound).

    >>> trace_state_clean()
    True
    >>> with extend_axis_env([("i", 2)]):
    ...     trace_state_clean()
    False
    """
    return isinstance(core.current_trace(), core.EvalTrace) and not _axes.frames


def axis_size(name, what: str = "a collective") -> int:
    """The size of the named axis ``name`` (a tuple of names: the product of their sizes).

    >>> with extend_axis_env([("i", 3)]):
    ...     axis_size("i")
    3
    >>> axis_size("j", "psum")
    Traceback (most recent call last):
    ...
    NameError: unbound axis name: j. psum: No named axis is in scope. ...
    """
    if isinstance(name, tuple):
        size = 1
        for n in name:
            size *= axis_size(n, what)
        return size
    for n, size in reversed(_axes.frames):
        if n == name:
            return size
    raise unbound_axis_error(name, what)


def unbound_axis_error(name, what: str) -> NameError:
    names = [n for n, _ in _axes.frames]
    scope = f"The names in scope are {names}." if names else "No named axis is in scope."
    # (JAX's words first: inside a transformation or a trace (jit), and for axis_index always, it
    # names the collective; an eager collective outside any is its plain 'unbound axis name')
    traced = names or what == "axis_index" or not isinstance(core.current_trace(), core.EvalTrace)
    first = f"Found an unbound axis name: {name}. To fix this, please call {what} under `jax.shard_map`."
    return NameError(
        f"{first if traced else f'unbound axis name: {name}.'} {what}: {scope} An axis name is bound by "
        "vmap(f, axis_name=...), shard_map(f, mesh=...) (the mesh's axis names) or "
        "pmap(f, axis_name=...), and a collective must run inside the function it transforms."
    )


def current_axis_name():
    """The axis name of the vmap whose batch rule is running (``None``: an anonymous vmap)."""
    return _axes.batching


def mentions_axis(jaxpr, name) -> bool:
    """Whether a collective in ``jaxpr`` (or in a jaxpr it carries) names the axis ``name``."""
    for eqn in jaxpr.eqns:
        if eqn.primitive.traits.collective_batch is not None and name in eqn.params["axis_name"]:
            return True
        if eqn.primitive.traits.jaxpr_params and any(
            mentions_axis(j, name) for j in jaxprs_in_params(eqn.params)
        ):
            return True
    return False


def _lane_aval(x, dim) -> ShapedArray:
    aval = core.get_aval(x)
    if dim is None:
        return aval
    return _keep_mat(ShapedArray(aval.shape[:dim] + aval.shape[dim + 1 :], aval.dtype, aval.weak_type), aval)


def _keep_mat(out: ShapedArray, aval) -> ShapedArray:
    """One example's type varies along the manual axes the batch does (NOTE: [varying axes in
    staged types]: jacrev's results in a checked shard_map body)."""
    mat = getattr(aval, "mat", None)
    return out if mat is None or mat.empty else out.with_manual_axis_type(mat)


def _jaxprs_mention(primitive, params, name) -> bool:
    return any(
        mentions_axis(j, name)
        for j in jaxprs_in_params({k: params[k] for k in primitive.traits.jaxpr_params})
    )


class BatchTracer(Tracer):
    __slots__ = ("val", "batch_dim")

    def __init__(self, trace, val, batch_dim: int):
        self._trace = trace
        self.val = val
        self.batch_dim = batch_dim

    def _jax_repr(self):  # (Tracer.__repr__)
        return f"VmapTracer(aval={self.aval}, batched={core.get_aval(self.val)})"

    @property
    def aval(self):
        aval = core.get_aval(self.val)
        bd = self.batch_dim
        shape = aval.shape[:bd] + aval.shape[bd + 1 :]
        s = aval._sharding
        if s is not None:
            # One example's type keeps the other dimensions' shardings (NOTE: [sharding in types]).
            spec = (*s.spec, *([None] * (aval.ndim - len(s.spec))))
            s = s.with_spec(type(s.spec)(*spec[:bd], *spec[bd + 1 :]))
        return _keep_mat(ShapedArray(shape, aval.dtype, aval.weak_type, s), aval)


class BatchTrace(core.Trace):
    def __init__(self, parent, axis_size: int, axis_name=None):
        super().__init__(parent)
        self.axis_size = axis_size
        self.axis_name = axis_name

    def process_primitive(self, primitive, args, params):
        vals, dims, batched = self.unpack(args, BatchTracer, _value_and_dim)
        name = self.axis_name
        if name is not None:
            return self._process_named(primitive, vals, dims, batched, params)
        with core.set_current_trace(self.parent):
            if not batched:
                return primitive.bind(*vals, **params)
            rule = primitive.batch
            if rule is None:
                raise NotImplementedError(f"Batching rule for '{primitive.name}' not implemented.")
            out, out_dim = rule(self.axis_size, vals, dims, **params)
        return self._lift_all(primitive, out, out_dim)

    def _process_named(self, primitive, vals, dims, batched, params):
        # NOTE: [named axes]
        name = self.axis_name
        collective = primitive.traits.collective_batch
        with core.set_current_trace(self.parent):
            if collective is not None and name in params["axis_name"]:
                # The instance's operands are checked as a staged collective's would be.
                primitive.abstract_eval(*map(_lane_aval, vals, dims), **params)
                out, out_dim = collective(self.axis_size, name, vals, dims, **params)
                return self._lift_all(primitive, out, out_dim)
            if not batched and not (
                primitive.traits.jaxpr_params and _jaxprs_mention(primitive, params, name)
            ):
                return primitive.bind(*vals, **params)
            rule = primitive.batch
            if rule is None:
                raise NotImplementedError(f"Batching rule for '{primitive.name}' not implemented.")
            prev, _axes.batching = _axes.batching, name
            try:
                out, out_dim = rule(self.axis_size, vals, dims, **params)
            finally:
                _axes.batching = prev
        return self._lift_all(primitive, out, out_dim)

    def _lift_all(self, primitive, out, out_dim):
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
    out_paths: Callable | None = None,
) -> list:
    """Batch ``f(*args) -> list`` along ``in_dims``; outputs get their batch dim at ``out_dims``
    (``None``: the output must be unbatched, else it is an error naming the output by its key
    path in ``out_paths()``, e.g. ``"[1]['a']"``)."""
    vals, dims = vmap_with_dims(f, axis_size, in_dims, args, axis_name)
    out_dims = out_dims() if callable(out_dims) else out_dims
    if any(od is None and d is not None for d, od in zip(dims, out_dims)):
        if axis_name is not None:  # (JAX's words for a named axis)
            raise ValueError(f"vmap has mapped output (axis_name={axis_name}) but out_axes is None")
        paths = out_paths() if out_paths is not None else [""] * len(vals)
        return [move_batch_dim(v, axis_size, d, od, p) for v, d, od, p in zip(vals, dims, out_dims, paths)]
    return [move_batch_dim(v, axis_size, d, od) for v, d, od in zip(vals, dims, out_dims)]


def vmap_with_dims(f: Callable, axis_size: int, in_dims, args, axis_name=None) -> tuple[list, list]:
    """``f(*args) -> list`` batched along ``in_dims``: its outputs and the batch dim each has
    (``None``: unbatched), as ``f`` left them.

    >>> import numpy as np
    >>> vals, dims = vmap_with_dims(lambda x, y: [x, y], 2, [0, None], [np.zeros(2), 1.0])
    >>> dims
    [0, None]
    """
    frames = () if axis_name is None else [(axis_name, axis_size)]
    with core.new_trace(BatchTrace, axis_size, axis_name) as trace, extend_axis_env(frames):
        tracers = [a if d is None else BatchTracer(trace, a, d) for a, d in zip(args, in_dims)]
        return _unpack_batch_outputs(trace, f(*tracers))


def _unpack_batch_outputs(trace: BatchTrace, outs) -> tuple[list, list]:
    """Values and batch dims (``None``: unbatched) of outputs of a function run on ``trace``."""
    vals, dims, _ = trace.unpack(outs, BatchTracer, _value_and_dim)
    return vals, dims


def move_batch_dim(x, axis_size: int, src: int | None, dst: int | None, path: str = ""):
    """Put the batch dimension of ``x`` (``src``, possibly ``None``) at ``dst``; ``dst=None`` on a
    batched ``x`` is JAX's error, naming the output by its key ``path``."""
    if dst is None:
        if src is None:
            return x
        raise ValueError(f"at vmap out_axes{path}, got axis spec None but output was batched on axis {src}")
    if src is None and (type(x) is core.Token or getattr(x, "aval", None) is core.abstract_token):
        return x  # a token has no batch axis: it leaves vmap as it is (NOTE: [tokens])
    try:
        ndim = core.get_aval(x).ndim + (src is None)
    except TypeError:  # (JAX's words)
        raise TypeError(
            f"Output from batched function {x!r} with type {type(x)} is not a valid JAX type"
        ) from None
    if not -ndim <= dst < ndim:
        raise ValueError(f"axis {dst} is out of bounds for array of dimension {ndim} (vmap out_axes={dst})")
    dst = dst % ndim
    if src is None:
        return hooks.broadcast_batch(x, axis_size, dst)
    return x if src == dst else hooks.moveaxis(x, src, dst)


_CURRENT = object()


def batch_jaxpr(
    closed: ClosedJaxpr,
    axis_size: int,
    in_dims: Sequence[int | None],
    instantiate: bool | Sequence[bool],
    axis_name=_CURRENT,
    batched_avals: Sequence | None = None,
) -> tuple[ClosedJaxpr, list[int | None]]:
    """Batch a jaxpr: returns a jaxpr over batched inputs (batch dims as given) and the batch dim
    of each output (0, or ``None`` when unbatched and not instantiated). ``axis_name`` names the
    batched axis for the collectives inside (default: the vmap being processed, NOTE: [named
    axes]). ``batched_avals`` may give a batched input's type (``None`` entries: the jaxpr's, with
    the mapped dimension inserted by ``hooks.batched_aval``)."""
    if axis_name is _CURRENT:
        axis_name = _axes.batching
    n_out = len(closed.out_avals)
    if isinstance(instantiate, bool):
        instantiate = [instantiate] * n_out
    in_avals = []
    for i, (aval, d) in enumerate(zip(closed.in_avals, in_dims)):
        if d is None:
            in_avals.append(aval)
        elif batched_avals is not None and batched_avals[i] is not None:
            in_avals.append(batched_avals[i])
        else:
            in_avals.append(hooks.batched_aval(aval, axis_size, d))
    out_dims_box: list = []

    frames = () if axis_name is None else [(axis_name, axis_size)]

    def traced(*args):
        with core.new_trace(BatchTrace, axis_size, axis_name) as trace, extend_axis_env(frames):
            tracers = [a if d is None else BatchTracer(trace, a, d) for a, d in zip(args, in_dims)]
            vals, dims = _unpack_batch_outputs(trace, core.eval_jaxpr(closed.jaxpr, closed.consts, *tracers))
        final_dims = [0 if (d is not None or inst) else None for d, inst in zip(dims, instantiate)]
        out_dims_box.append(final_dims)
        return [move_batch_dim(v, axis_size, d, fd) for v, d, fd in zip(vals, dims, final_dims)]

    batched = trace_to_jaxpr(traced, in_avals)
    return batched, out_dims_box[0]
