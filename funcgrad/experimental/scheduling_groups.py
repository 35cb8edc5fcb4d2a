"""``funcgrad.experimental.scheduling_groups``: a function called as one XLA call operation that
carries frontend attributes (``jax.experimental.scheduling_groups``).

Layer: surface. Imports the kernel (tracing, pytrees) and the primitive ``xla_metadata_call_p``.

``xla_metadata_call(f, **meta)`` stages ``f`` into a call of its own whose ``func.call`` holds
``meta`` (strings) as ``mhlo.frontend_attributes``; ``scheduling_group(name)`` is
``xla_metadata_call(scheduling_group=name)``. Derivatives and batches of the call are calls with
the same attributes.

>>> import funcgrad, funcgrad.numpy as fnp
>>> f = xla_metadata_call(fnp.sin, inlineable="false")
>>> 'inlineable = "false"' in funcgrad.jit(f).lower(1.0).as_text()
True
"""

from __future__ import annotations

import functools

from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.partial_eval import close_over_tracers, trace_to_jaxpr
from funcgrad.primitives.call import xla_metadata_call_p

__all__ = ["scheduling_group", "xla_metadata_call"]


def scheduling_group(name):
    """``xla_metadata_call(scheduling_group=name)``: a decorator.

    >>> import funcgrad.numpy as fnp
    >>> float(scheduling_group("g")(fnp.cos)(0.0))
    1.0
    """
    return xla_metadata_call(scheduling_group=name)


def xla_metadata_call(f=None, **meta):
    """``f`` called as one call operation carrying ``meta`` as frontend attributes; without
    ``f``, a decorator.

    >>> import funcgrad.numpy as fnp
    >>> float(xla_metadata_call(fnp.sin, inlineable="false")(0.0))
    0.0
    """
    if f is None:
        return lambda g: _xla_metadata_call(g, **meta)
    return _xla_metadata_call(f, **meta)


def _xla_metadata_call(fun, **meta):
    @functools.wraps(fun)
    def wrapped(*args, **kwargs):
        flat, in_tree = tu.tree_flatten((args, kwargs))
        out_trees = []

        def flat_fun(*leaves):
            a, kw = tu.tree_unflatten(in_tree, leaves)
            out, out_tree = tu.tree_flatten(fun(*a, **kw))
            out_trees.append(out_tree)
            return out

        closed = trace_to_jaxpr(flat_fun, [core.get_aval(x) for x in flat])
        closed, hoisted = close_over_tracers(closed)
        outs = xla_metadata_call_p.bind(*hoisted, *flat, jaxpr=closed, **meta)
        return tu.tree_unflatten(out_trees[0], outs)

    return wrapped
