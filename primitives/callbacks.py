"""Host callbacks: Python functions called from inside a program, eagerly or from compiled code.

Layer: primitives. Imports the funcgrad kernel, numpy and its sibling ``structure``.

- ``pure_callback_p``: results computed by a Python function of the operands, treated as pure
  (it may be removed when unused, or called again). Not differentiable (as in JAX: wrap it in a
  ``custom_jvp``/``custom_vjp``). Under ``vmap`` the ``vmap_method`` parameter says how the
  function sees the batch: ``"sequential"``/``"sequential_unrolled"`` (once per element, in
  order), ``"expand_dims"`` (batched operands with the batch axis first, unbatched ones with a
  leading axis of size 1), ``"broadcast_all"`` (every operand with the full batch axis),
  ``"legacy_vectorized"`` (batched operands with the batch axis first, others unchanged); None
  refuses to be batched.
- ``debug_callback_p``: a side effect (printing, recording) with no results. Equations of it
  are never removed as dead code (``Primitive.traits.has_side_effects``); differentiation calls it on
  the primal values; ``vmap`` calls it once per batch element. ``ordered=True`` keeps the order
  of ordered callbacks within a compiled function body (a token chain).

- ``io_callback_p``: results computed by a Python function *with* side effects (reading a file,
  drawing from a host generator, appending to a log): never removed as dead code, never
  differentiated (its JVP raises), and under ``vmap`` called once per element in order
  (``ordered=True`` refuses ``vmap``, as in JAX, since a batch has no order to keep). ``ordered``
  chains it with the other ordered callbacks under ``jit``.

``pure_callback_p`` and ``io_callback_p`` carry JAX's ``sharding`` parameter: None or the
``SingleDeviceSharding`` of the device that runs the callback in a program over several devices.

All three carry the function as the ``callback`` parameter: a ``HostCallback``, called with NumPy
arrays (one per operand) and returning one array per result. The surface
(``funcgrad/_callbacks.py``) wraps the user's function (pytrees, funcgrad Arrays, checks of the
returned shapes and dtypes). Compiled programs call it through XLA's Python host-callback custom
call (``xla_bridge/rules/callbacks.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from funcgrad.primitives.structure import index_in_dim

from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.ir import ShapedArray, jaxprs_in_params

__all__ = [
    "HostCallback",
    "VMAP_METHODS",
    "check_results",
    "debug_callback_p",
    "io_callback_in",
    "io_callback_p",
    "ordered_callback_in",
    "pure_callback_p",
]

VMAP_METHODS = ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized")


class HostCallback:
    """A Python function of NumPy arrays returning a sequence of arrays; hashable by identity
    (equal only to itself, so a cached compiled program never calls another function)."""

    __slots__ = ("fn", "name")

    def __init__(self, fn: Callable, name: str):
        self.fn = fn
        self.name = name

    def __call__(self, *arrays):
        return self.fn(*arrays)

    def __repr__(self):
        return self.name


def check_results(name: str, outs, result_avals: Sequence[ShapedArray]) -> list[np.ndarray]:
    """``outs`` as NumPy arrays, checked against the declared result shapes and dtypes."""
    outs = list(outs)
    if len(outs) != len(result_avals):
        raise RuntimeError(
            f"{name}: Mismatched number of outputs from callback. Expected: {len(result_avals)}, "
            f"Actual: {len(outs)}"
        )
    checked = []
    for i, (o, aval) in enumerate(zip(outs, result_avals)):
        # (JAX's conversion: Python literals and other arrays through NumPy, at the mode's
        # canonical dtype -- a Python float is a float32 in 32-bit mode -- and JAX's words)
        o = _dt.canonical_value(np.asarray(o))
        if o.shape != tuple(aval.shape):
            raise RuntimeError(
                f"{name}: Incorrect output shape for return value #{i}: Expected: {tuple(aval.shape)}, "
                f"Actual: {o.shape}"
            )
        if o.dtype != aval.dtype:
            raise RuntimeError(
                f"{name}: Incorrect output dtype for return value #{i}: Expected: {aval.dtype}, "
                f"Actual: {o.dtype}"
            )
        checked.append(o)
    return checked


def _batched(callback: HostCallback, dims, axis_size: int, method: str, result_avals) -> HostCallback:
    """The host function of a batched call: it receives the batched operands as they are (batch
    axes where ``dims`` say) and gives ``callback`` the view ``method`` asks for."""

    def host(*arrays):
        # (operands at the mode's dtypes: an unbatched Python float is a float32 in 32-bit mode)
        arrays = [_dt.canonical_value(np.asarray(a)) for a in arrays]
        moved = [a if d is None else np.moveaxis(a, d, 0) for a, d in zip(arrays, dims)]
        if method in ("sequential", "sequential_unrolled"):
            per = [
                list(callback(*[a if d is None else a[i] for a, d in zip(moved, dims)]))
                for i in range(axis_size)
            ]
            return [
                np.stack([np.asarray(p[j]) for p in per]) if per else np.zeros((0, *aval.shape), aval.dtype)
                for j, aval in enumerate(result_avals)
            ]
        if method == "expand_dims":
            moved = [a if d is not None else np.asarray(a)[None] for a, d in zip(moved, dims)]
        elif method == "broadcast_all":
            moved = [
                a if d is not None else np.broadcast_to(np.asarray(a)[None], (axis_size, *np.shape(a)))
                for a, d in zip(moved, dims)
            ]
        return callback(*moved)

    return HostCallback(host, callback.name)


# ----------------------------------------------------------------------------------------------
# pure_callback


pure_callback_p = Primitive("pure_callback", multiple_results=True)
pure_callback_p.def_traits(
    taylor_from_jvp="a host function: its JVP rule raises the error that says to use custom_jvp",
    kept_when_dead=True,  # (jvp of a jit whose callback's result is unused refuses, as JAX's)
)


def _results_impl(name: str):
    """The eager rule of a callback with declared results (pure_callback, io_callback)."""

    def impl(*args, callback, result_avals, **params):
        return check_results(name, callback(*[np.asarray(a) for a in args]), result_avals)

    return impl


def _declared_results(*avals, result_avals, **params):
    return list(result_avals)


def _bind_batched(primitive, axis_size, vals, dims, callback, result_avals, method: str, **params):
    """``primitive`` bound on the batched operands with the host function ``method`` asks for;
    every result batched along axis 0."""
    batched_avals = tuple(ShapedArray((axis_size, *a.shape), a.dtype) for a in result_avals)
    outs = primitive.bind(
        *vals,
        callback=_batched(callback, dims, axis_size, method, result_avals),
        result_avals=batched_avals,
        **params,
    )
    return outs, [0] * len(outs)


pure_callback_p.def_impl(_results_impl("pure_callback"))
pure_callback_p.def_abstract_eval(_declared_results)


@pure_callback_p.def_jvp
def _pure_jvp(primals, tangents, **params):
    raise ValueError(
        "Pure callbacks do not support JVP. Please use `jax.custom_jvp` to use callbacks while "
        "taking gradients. (pure_callback cannot be differentiated: funcgrad cannot see inside the "
        "Python function.) "
        "Give it a derivative with funcgrad.custom_jvp or funcgrad.custom_vjp (which may call "
        "pure_callback again for the derivative)."
    )


@pure_callback_p.def_batch
def _pure_batch(axis_size, vals, dims, *, callback, result_avals, vmap_method, sharding=None):
    if vmap_method is None:
        raise NotImplementedError(  # (JAX's words first)
            "vmap is only supported for the pure_callback primitive when vmap_method is one of "
            "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or "
            "'legacy_vectorized'. Got vmap_method=None: pass vmap_method= to pure_callback to say "
            "how the callback handles a batch."
        )
    return _bind_batched(
        pure_callback_p,
        axis_size,
        vals,
        dims,
        callback,
        result_avals,
        vmap_method,
        vmap_method=vmap_method,
        sharding=sharding,
    )


# ----------------------------------------------------------------------------------------------
# debug_callback


debug_callback_p = Primitive("debug_callback", multiple_results=True)
debug_callback_p.def_traits(has_side_effects=True)
# A side effect with no results: it happens once, on the primal values (the rule from the JVP
# rule would run it once per order).
debug_callback_p.def_taylor(lambda primals, series, **params: (debug_callback_p.bind(*primals, **params), []))


@debug_callback_p.def_impl
def _debug_impl(*args, callback, ordered, partitioned=False):
    callback(*[np.asarray(a) for a in args])
    return []


@debug_callback_p.def_abstract_eval
def _debug_abstract_eval(*avals, callback, ordered, partitioned=False):
    return []


@debug_callback_p.def_jvp
def _debug_jvp(primals, tangents, **params):
    # The callback sees the primal values; it has no results, so no tangents.
    return debug_callback_p.bind(*primals, **params), []


@debug_callback_p.def_batch
def _debug_batch(axis_size, vals, dims, *, callback, ordered, **params):
    # Unrolled over the mapped axis, one call per index, as JAX's rule: under nested vmaps the
    # innermost vmap's axis is the outer loop (JAX's print order), and the calls are equations.
    for i in range(axis_size):
        args = [v if d is None else index_in_dim(v, i, d, keepdims=False) for v, d in zip(vals, dims)]
        debug_callback_p.bind(*args, callback=callback, ordered=ordered, **params)
    return [], []


# ----------------------------------------------------------------------------------------------
# io_callback


io_callback_p = Primitive("io_callback", multiple_results=True)
io_callback_p.def_traits(
    has_side_effects=True,
    taylor_from_jvp="a host function with side effects: its JVP rule raises the error that explains why",
)


io_callback_p.def_impl(_results_impl("io_callback"))
io_callback_p.def_abstract_eval(_declared_results)


@io_callback_p.def_jvp
def _io_jvp(primals, tangents, **params):
    raise ValueError(
        "IO callbacks do not support JVP. (io_callback cannot be differentiated: its Python "
        "function has side effects and funcgrad cannot see inside it.) Differentiate only the "
        "values that do not flow through it (wrap its operands in funcgrad.lax.stop_gradient), or "
        "give the computation a derivative with funcgrad.custom_vjp."
    )


def io_callback_in(jaxpr, unordered_only: bool = False) -> bool:
    """Whether ``jaxpr`` (or a closed one) holds an ``io_callback``, in inner jaxprs too (with
    ``unordered_only``, an unordered one): JAX's IO effect, which some transformations refuse
    (vmap of a cond, a while loop whose predicate is batched, partial evaluation of checkpoint)."""
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    for eqn in jaxpr.eqns:
        if eqn.primitive is io_callback_p and not (unordered_only and eqn.params["ordered"]):
            return True
        names = eqn.primitive.traits.jaxpr_params
        if names and any(
            io_callback_in(j, unordered_only)
            for j in jaxprs_in_params({k: eqn.params[k] for k in names if k in eqn.params})
        ):
            return True
    return False


def ordered_callback_in(jaxpr, kinds=None) -> bool:
    """Whether ``jaxpr`` (or a closed one) holds an ordered callback (``debug.print(...,
    ordered=True)``, ``io_callback(..., ordered=True)``), in inner jaxprs too: the lowering then
    threads the body's token through the control flow that holds it (NOTE: [ordered effects in
    control flow], xla_bridge/rules/control_flow.py). ``kinds``: the callback primitives to look
    for (default: both)."""
    kinds = kinds or (debug_callback_p, io_callback_p)
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    for eqn in jaxpr.eqns:
        if eqn.primitive in kinds and eqn.params["ordered"]:
            return True
        names = eqn.primitive.traits.jaxpr_params
        if names and any(
            ordered_callback_in(j, kinds)
            for j in jaxprs_in_params({k: eqn.params[k] for k in names if k in eqn.params})
        ):
            return True
    return False


@io_callback_p.def_transpose
def _io_transpose(cts, *args, **params):
    # (reached by linear_transpose of a function calling it: JAX's words)
    raise ValueError(
        "IO callbacks do not support transpose. (io_callback's Python function has side effects; "
        "funcgrad cannot see inside it.)"
    )


@io_callback_p.def_batch
def _io_batch(axis_size, vals, dims, *, callback, result_avals, ordered, sharding=None):
    if ordered:
        raise ValueError(
            "Cannot `vmap` ordered IO callback. (The elements of a batch have no order to keep.) Use "
            "ordered=False (each element is then called in turn), or a Python loop."
        )
    return _bind_batched(
        io_callback_p,
        axis_size,
        vals,
        dims,
        callback,
        result_avals,
        "sequential",
        ordered=False,
        sharding=sharding,
    )
