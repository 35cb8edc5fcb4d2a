"""Control flow under ``disable_jit``, as JAX runs it: Python's own branches and loops.

Layer: surface. Imports the kernel and the structure primitives (the setting itself is
``funcgrad._disable_jit``'s: NOTE: [disable_jit]).

With ``disable_jit()`` JAX does not stage ``cond``/``switch`` of a concrete predicate, nor
``while_loop``/``scan``/``fori_loop``: the chosen branch is called, and the loop bodies run once
per iteration on concrete values, so that a ``print`` or a debugger inside them sees each step
(what ``disable_jit`` is for). ``lax.cond``, ``lax.switch``, ``lax.while_loop``, ``lax.scan`` and
``lax.fori_loop`` (``funcgrad/_control_flow.py``) call these first. As JAX's:

- a ``while_loop`` whose predicate is a traced value (under ``vmap``, say) falls back to the
  staged loop (the ``ConcretizationTypeError`` of ``bool()`` is caught);
- a ``scan`` runs its Python loop whatever the trace (its body sees the slices), and a scan of
  length 0 is JAX's ValueError (its output type is unknown); ``fori_loop`` of no step returns
  ``init_val`` as it is.

>>> import funcgrad, numpy as np
>>> seen = []
>>> with funcgrad.disable_jit():
...     _ = scan_loop(lambda c, x: (seen.append(float(x)) or c + x, None), 0.0, np.arange(3.0), 3, False)
>>> seen
[0.0, 1.0, 2.0]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from funcgrad.kernel import core
from funcgrad.kernel import tree_util as tu
from funcgrad.kernel.array import Array
from funcgrad.kernel.dtypes import canonical_value, python_scalar_types
from funcgrad.primitives import structure as st

NO_RESULT = object()  # (while_loop: the predicate is traced, stage the loop)


def asarray(x):
    """``x`` as an Array (a Python scalar weakly typed), as JAX's ``lax.asarray``."""
    if isinstance(x, Array | core.Tracer):
        return x
    return Array._from_owned(canonical_value(np.asarray(x)), type(x) in python_scalar_types)


def while_loop(cond_fun: Callable, body_fun: Callable, init_val):
    """JAX's ``while_loop`` under ``disable_jit``: the loop in Python on concrete values, or
    ``NO_RESULT`` when the predicate is traced (the caller then stages the loop)."""
    try:
        val = tu.tree_map(asarray, init_val)
        while cond_fun(val):
            val = tu.tree_map(asarray, body_fun(val))
        return val
    except core.ConcretizationTypeError:
        return NO_RESULT


def scan_loop(f: Callable, init, xs, length: int, reverse: bool):
    """JAX's ``scan`` under ``disable_jit``: ``f`` called once per slice of ``xs`` (last to first
    with ``reverse``), its ``ys`` stacked along a new leading axis."""
    if length == 0:  # (JAX's words)
        raise ValueError(
            "zero-length scan is not supported in disable_jit() mode because the output type is unknown."
        )
    xs_flat, xs_tree = tu.tree_flatten(xs)
    xs_flat = [asarray(x) for x in xs_flat]
    steps = range(length)
    carry, ys = init, []
    for i in reversed(steps) if reverse else steps:
        x = tu.tree_unflatten(xs_tree, [st.index_in_dim(v, i, 0, False) for v in xs_flat])
        carry, y = f(carry, x)
        ys.append(y)
    if reverse:
        ys.reverse()

    def stack(*leaves):
        return st.concatenate([st.expand_dims(asarray(y), (0,)) for y in leaves], 0)

    return carry, tu.tree_map(stack, *ys)
