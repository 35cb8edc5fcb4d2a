"""Runtime checks: ``check_p``, the assertion that ``funcgrad.experimental.checkify`` functionalizes.

Layer: primitives. Imports the funcgrad kernel and numpy.

``check_p.bind(pred, *fmt_leaves, msg, fmt_tree, debug, batch_ndim)`` asserts that every element
of the boolean ``pred`` is true; when one is not, the message is ``msg.format(*args, **kwargs)``
with ``(args, kwargs) = tree_unflatten(fmt_tree, fmt_leaves)`` at runtime values. ``batch_ndim``
counts the leading axes that ``vmap`` added (every operand has them; the message is the first
failing element's). The equation has no results and side effects, so dead-code elimination keeps it.

# NOTE: [functionalized checks]
# A check is an effect that only ``checkify`` can carry out of compiled code: its interpreter
# (``funcgrad/experimental/_checkify_rules.py``) replaces each ``check_p`` equation by updates of an
# error value the checkified function returns. What remains of the primitive:
# - eagerly (no staging) the impl raises ``JaxRuntimeError`` at once, as ``jax``'s check does;
# - differentiation passes it through (it sees the primal values and has no tangents);
# - ``vmap`` keeps it, with ``batch_ndim`` one higher;
# - lowering a non-debug check (``jit(f)`` without ``checkify``) refuses with the functionalization
#   error (``xla_bridge/rules/checks.py``); a ``debug_check`` (``debug=True``) is dropped instead.
"""

from __future__ import annotations

import numpy as np

from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.core import Primitive
from funcgrad.kernel.hooks import hooks

__all__ = ["FUNCTIONALIZATION_ERROR", "JaxRuntimeError", "check_p", "format_check"]

FUNCTIONALIZATION_ERROR = (
    "Cannot abstractly evaluate a checkify.check which was not functionalized. This probably means "
    "you tried to stage (jit/scan/pmap/...) a `check` without functionalizing it through "
    "`checkify.checkify`: write jit(checkify(f)) and call err.throw() on the error it returns."
)


class JaxRuntimeError(ValueError):
    """A failed runtime check (``checkify``'s ``Error.throw()``, or an eager ``check``)."""


def format_check(msg: str, fmt_tree, leaves) -> str:
    """The message of a failed check: ``msg`` formatted with the runtime values (``checkify.check``
    ends its ``msg`` in jax's `` (`check` failed)``).

    >>> tree = tu.tree_structure(((np.float64(2.0),), {}))
    >>> format_check("got {}", tree, [np.float64(-2.0)])
    'got -2.0'
    """
    args, kwargs = tu.tree_unflatten(fmt_tree, [np.asarray(v) for v in leaves])
    return msg.format(*args, **kwargs)


def _first_failure(pred, leaves, batch_ndim: int):
    """The payload of the first element where ``pred`` is false (row-major over the batch axes)."""
    fail = ~np.asarray(pred, bool).reshape(-1)
    i = int(np.argmax(fail))
    batch = np.shape(pred)[:batch_ndim]
    return [np.asarray(v).reshape(-1, *np.shape(v)[len(batch) :])[i] for v in leaves]


check_p = Primitive("check", multiple_results=True)
check_p.def_traits(has_side_effects=True)


@check_p.def_impl
def _check_impl(pred, *leaves, msg, fmt_tree, debug, batch_ndim):
    if debug or bool(np.all(pred)):
        return []
    raise JaxRuntimeError(format_check(msg, fmt_tree, _first_failure(pred, leaves, batch_ndim)))


@check_p.def_abstract_eval
def _check_abstract_eval(pred, *leaves, msg, fmt_tree, debug, batch_ndim):
    if pred.dtype != np.bool_:
        raise TypeError(f"check: the predicate must be a boolean array, got {pred.str_short()}")
    batch = pred.shape[:batch_ndim]
    for v in leaves:
        if v.shape[:batch_ndim] != batch:
            raise TypeError(f"check: a formatting argument {v.str_short()} lacks the batch axes {batch}")
    return []


@check_p.def_jvp
def _check_jvp(primals, tangents, **params):
    # The check asserts a fact about primal values; it has no results, so no tangents.
    return check_p.bind(*primals, **params), []


check_p.def_taylor(lambda primals, series, **params: (check_p.bind(*primals, **params), []))


@check_p.def_batch
def _check_batch(axis_size, vals, dims, *, batch_ndim, **params):
    # Every operand gets the new batch axis in front (unbatched ones are broadcast), before the
    # axes earlier vmaps added: the batch axes stay a leading block.
    moved = [
        hooks.broadcast_batch(v, axis_size, 0) if d is None else hooks.moveaxis(v, d, 0)
        for v, d in zip(vals, dims)
    ]
    check_p.bind(*moved, batch_ndim=batch_ndim + 1, **params)
    return [], []
