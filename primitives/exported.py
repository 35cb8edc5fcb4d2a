"""Calling an exported module: ``call_exported_p`` runs a StableHLO module serialized by
``funcgrad.export`` or ``jax.export`` as one operation of a program.

Layer: primitives. Imports the funcgrad kernel and the sibling family ``structure``.

The equation carries the callee as its ``callee`` parameter: an ``ExportedCallee``, the module
prepared for these argument shapes (its functions already renamed and, for a shape-polymorphic
module, refined: NOTE: [embedding an exported module] in xla_bridge/portable.py) with the
declared result avals. The surface (``funcgrad/export``) prepares it and binds the primitive;
the lowering (``xla_bridge/rules/exported.py``) appends the functions to the caller's module and
emits a ``func.call``. Evaluated eagerly, the one equation is compiled and run through the
compiler the bridge registers with the kernel (``hooks.eager_compiled``, as ``rng_bit_generator``
does, NOTE: [kernel registration]): a module has no NumPy implementation.

As in JAX, the primitive itself is not differentiable (its JVP raises the error that says how):
``Exported.call`` differentiates through the exported VJP function (a ``custom_vjp``). Under
``vmap`` the module runs once per batch element (unrolled: an exported module has fixed shapes,
or shapes refined for one call).
"""

from __future__ import annotations

import numpy as np
from funcgrad.primitives._rules import move_to_front
from funcgrad.primitives.structure import concatenate, expand_dims, index_in_dim

from funcgrad.kernel.core import Primitive
from funcgrad.kernel.hooks import hooks

__all__ = ["ExportedCallee", "call_exported_p"]


class ExportedCallee:
    """An exported module prepared for one call signature.

    ``name`` (the exported function's name, for errors), ``in_avals``/``out_avals`` (the concrete
    avals of the call), ``embedded`` (the bridge's prepared module: functions to append and the
    symbol to call), ``platform_index`` (None, or the value of the leading platform-index
    argument the module's ``@main`` takes when it was exported for several platforms) and
    ``kept`` (the indices of the arguments the module's ``@main`` takes: JAX drops unused ones);
    ``global_constants``: whether the exported module uses global constants (dimension variables,
    a platform index), which makes an export calling it say ``uses_global_constants`` too.
    Hashable by identity: a prepared module is cached by the surface and reused.
    """

    __slots__ = ("name", "in_avals", "out_avals", "embedded", "platform_index", "kept", "global_constants")

    def __init__(
        self, name, in_avals, out_avals, embedded, platform_index=None, kept=None, global_constants=False
    ):
        self.global_constants = bool(global_constants)
        self.name = name
        self.in_avals = tuple(in_avals)
        self.out_avals = tuple(out_avals)
        self.embedded = embedded
        self.platform_index = platform_index
        self.kept = tuple(range(len(self.in_avals))) if kept is None else tuple(kept)

    def __repr__(self):
        return f"exported {self.name}"


call_exported_p = Primitive("call_exported", multiple_results=True)
call_exported_p.def_traits(
    taylor_from_jvp="an opaque compiled module: its JVP rule raises the error that says to "
    "differentiate through Exported.call (the exported VJP)"
)


@call_exported_p.def_impl
def _impl(*args, callee):
    if hooks.eager_compiled is None:
        raise RuntimeError(
            f"calling {callee.name}: an exported module runs only through the compiler; import "
            "xla_bridge (`import funcgrad` does) before calling it"
        )
    return hooks.eager_compiled(call_exported_p, list(args), {"callee": callee})


@call_exported_p.def_abstract_eval
def _abstract_eval(*avals, callee):
    if len(avals) != len(callee.in_avals):
        raise TypeError(f"{callee.name}: called with {len(avals)} arguments, it takes {len(callee.in_avals)}")
    for i, (a, want) in enumerate(zip(avals, callee.in_avals)):
        if tuple(a.shape) != tuple(want.shape) or a.dtype != want.dtype:
            raise TypeError(
                f"{callee.name}: argument {i} is {a.str_short()}, the prepared module takes "
                f"{want.str_short()}"
            )
    return list(callee.out_avals)


@call_exported_p.def_jvp
def _jvp(primals, tangents, *, callee):
    raise ValueError(
        f"call_exported: the exported module {callee.name} is differentiated through its exported "
        "VJP: call it with Exported.call (which uses Exported.vjp()); an Exported deserialized without a VJP "
        "(serialize(vjp_order=0)) cannot be differentiated -- serialize with vjp_order >= 1"
    )


@call_exported_p.def_batch
def _batch(axis_size, vals, dims, *, callee):
    n = len(callee.out_avals)
    if axis_size == 0:
        return [np.zeros((0, *a.shape), a.dtype) for a in callee.out_avals], [0] * n
    vals = [move_to_front(v, d) for v, d in zip(vals, dims)]
    outs = [
        call_exported_p.bind(
            *[v if d is None else index_in_dim(v, i, 0, False) for v, d in zip(vals, dims)], callee=callee
        )
        for i in range(axis_size)
    ]
    return [concatenate([expand_dims(o[j], (0,)) for o in outs], 0) for j in range(n)], [0] * n
