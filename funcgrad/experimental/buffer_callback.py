"""Callbacks on device buffers (``jax.experimental.buffer_callback``): a Python function that XLA
calls with its execution context and the program's buffers, reading the operands and writing the
results in place.

Layer: surface. Imports the kernel (``Primitive``, avals, pytrees), ``funcgrad.ffi`` (the
batching rule of foreign calls, ``_batch_by_method``), the catalog's ``HostCallback`` and
``VMAP_METHODS``, and the bridge's ``execute`` (an eager call runs compiled), ``ffi`` (jaxlib's
``Buffer``, ``ExecutionContext``, ``ExecutionStage``) and ``rules.callbacks.lower_buffer_callback``.

As JAX defines it, ``buffer_callback`` binds a primitive of its own, outside the catalog of
built-in primitives (as ``funcgrad.ffi``'s ``ffi_call``): two, ``buffer_callback`` and, for
``has_side_effect=True``, ``buffer_callback_effect``, which is never removed as dead code. It
lowers to XLA's buffer-callback custom call (``xla_buffer_python_cpu_callback``, the GPU's with
the CUDA extension); an eager call runs as a compiled program of its own, since only XLA makes the
buffers. It has no derivative (JAX's error) and batches as ``ffi_call`` does (``vmap_method``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from funcgrad.ffi import _batch_by_method, _foreign_call_primitive
from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import ShapedArray
from funcgrad.primitives.callbacks import VMAP_METHODS, HostCallback
from funcgrad.xla_bridge import execute as _execute
from funcgrad.xla_bridge.ffi import Buffer, ExecutionContext, ExecutionStage
from funcgrad.xla_bridge.rules.callbacks import lower_buffer_callback

__all__ = ["Buffer", "ExecutionContext", "ExecutionStage", "buffer_callback"]

for _cls in (Buffer, ExecutionContext, ExecutionStage):
    try:
        _cls.__module__ = __name__  # (JAX's module name for jaxlib's classes)
    except (AttributeError, TypeError):
        pass


def buffer_callback(
    callback: Callable[..., None],
    result_shape_dtypes: object,
    *,
    has_side_effect: bool = False,
    vmap_method: str | None = None,
    input_output_aliases: dict[int, int] | None = None,
    command_buffer_compatible: bool = False,
):
    """A function calling ``callback(ctx, out, *args, **kwargs)`` on device buffers.

    ``ctx`` is XLA's ``ExecutionContext`` (its ``stage``; its ``stream`` on a GPU), ``out`` the
    results as mutable ``Buffer`` objects in the structure of ``result_shape_dtypes`` (leaves with
    ``shape`` and ``dtype``), ``args``/``kwargs`` the operands as read-only ``Buffer`` objects. A
    ``Buffer`` is an array for NumPy (``np.asarray``), DLPack and, on a GPU, CUDA's array
    interface. The callback writes the results in place and returns None. ``has_side_effect``: the
    call is kept even when its results are unused; ``vmap_method``: how it is batched, as
    ``pure_callback``'s; ``input_output_aliases``: ``{input index: output index}`` of flattened
    operands and results sharing a buffer; ``command_buffer_compatible``: on a GPU, the call may be
    recorded into a CUDA graph (its Python runs once).

    >>> import numpy as np
    >>> import funcgrad
    >>> def add_one(ctx, out, x):
    ...     np.asarray(out)[...] = np.asarray(x) + 1
    >>> x = funcgrad.numpy.array(41, dtype="int32")
    >>> buffer_callback(add_one, funcgrad.ShapeDtypeStruct(x.shape, x.dtype))(x)
    Array(42, dtype=int32)
    """
    flat_shape_dtypes, out_tree = tu.tree_flatten(result_shape_dtypes)
    result_avals = tuple(ShapedArray(tuple(x.shape), np.dtype(x.dtype)) for x in flat_shape_dtypes)

    def wrapped_callback(*args, **kwargs):
        flat_args, in_tree = tu.tree_flatten((args, kwargs))
        in_avals = [core.get_aval(x) for x in flat_args]
        aliases = []
        for i, o in sorted((input_output_aliases or {}).items()):
            i, o = int(i), int(o)
            if i >= len(args):
                raise ValueError(
                    f"input_output_aliases contains the mapping '{i}:{o}' with input index {i} outside the "
                    f"range [0, {len(args)})."
                )
            if o >= len(result_avals):
                raise ValueError(
                    f"input_output_aliases contains the mapping '{i}:{o}' with output index {o} outside the "
                    f"range [0, {len(result_avals)})."
                )
            ins, outs = in_avals[i], result_avals[o]
            if (ins.shape, ins.dtype) != (outs.shape, outs.dtype):
                raise ValueError(
                    f"input_output_aliases contains the mapping '{i}:{o}' referring to an input with "
                    f"abstract value {ins} and an output with a different abstract value {outs}."
                )
            aliases.append((i, o))
        primitive = buffer_callback_effect_p if has_side_effect else buffer_callback_p
        out_flat = primitive.bind(
            *flat_args,
            callback=_host(callback, in_tree, out_tree),
            result_avals=result_avals,
            vmap_method=vmap_method,
            has_side_effect=has_side_effect,
            input_output_aliases=tuple(aliases),
            command_buffer_compatible=command_buffer_compatible,
        )
        return tu.tree_unflatten(out_tree, out_flat)

    return wrapped_callback


def _host(callback, in_tree, out_tree) -> HostCallback:
    """What XLA calls: the execution context and the flat operand then result buffers, given to
    ``callback`` in the user's structures."""
    n_in = in_tree.num_leaves

    def host(exec_ctx, *buffers):
        args, kwargs = tu.tree_unflatten(in_tree, list(buffers[:n_in]))
        out = tu.tree_unflatten(out_tree, list(buffers[n_in:]))
        if callback(exec_ctx, out, *args, **kwargs) is not None:
            raise ValueError("buffer_callback callback must not return any values.")
        return ()

    return HostCallback(host, getattr(callback, "__name__", "buffer_callback"))


def _impl(primitive):
    def impl(*args, **params):  # (only XLA makes the buffers: a compiled program of its own)
        return _execute.eager_compiled(primitive, list(args), params)

    return impl


def _not_differentiable(primals, tangents, **params):
    raise ValueError(
        "Buffer callbacks do not support JVP. Please use `jax.custom_jvp` to use callbacks while taking "
        "gradients."
    )


def _batch(primitive):
    def batch(axis_size, vals, dims, *, vmap_method, result_avals, **params):
        if vmap_method not in VMAP_METHODS:
            raise NotImplementedError(
                "vmap is only supported for the buffer_callback primitive when vmap_method is one of "
                f"{', '.join(repr(m) for m in VMAP_METHODS)}. Got vmap_method={vmap_method!r}."
            )
        return _batch_by_method(primitive, axis_size, vals, dims, vmap_method, result_avals, params)

    return batch


def _make_primitive(name: str, side_effect: bool) -> Primitive:
    return _foreign_call_primitive(
        name,
        side_effect,
        impl=_impl,
        jvp=_not_differentiable,
        batch=_batch,
        lowering=lower_buffer_callback,
        why="a host function on buffers: its JVP rule raises the error that says so",
    )


buffer_callback_p = _make_primitive("buffer_callback", side_effect=False)
buffer_callback_effect_p = _make_primitive("buffer_callback_effect", side_effect=True)
