"""The operator table: one ``OpInfo`` entry per primitive variant, in the spirit of PyTorch's OpInfo.

Every generic check in ``tests/primitives/test_op_db.py`` (values against NumPy/SciPy, abstract evaluation,
derivatives to second order against finite differences, vmap against a loop for every ``in_axes``,
the dot-product test of transpose rules, type checks of derived jaxprs) is driven from ``OPS``; the
XLA tests reuse it through ``sample_inputs(entry, dtype, rng)`` (jit against eager).

An entry's ``sampler(shape, dtype, rng) -> Sample`` builds concrete arguments; the *structure*
(shapes, static ``params``) depends only on ``shape`` (drawn from ``entry.shapes``, a hypothesis
strategy), the *values* on ``rng``, so batched lanes of one sample share their structure.
``op(*args, **params)`` calls the public wrapper (or ``primitive.bind``); ``ref(*numpy_args,
**params)`` is the NumPy/SciPy reference (index-heavy ops use explicit loops, independent of the
vectorised impls).

Entries live in one module per family (``tests/primitives/op_db/<family>.py``, each with a list ``OPS``);
``OPS`` here is all of them, found by listing the package. Adding a primitive: add an entry to its
family's module (the coverage test fails until every primitive of ``primitives.all_primitives()``
has one, unless it ``carries_jaxprs``).
"""

from __future__ import annotations

import importlib
import pkgutil

from op_db._base import (
    DERIVATIVE_DTYPES,
    FLOATS,
    OpInfo,
    Sample,
    carries_jaxprs,
    in_axes_combinations,
    sample_inputs,
)

__all__ = [
    "DERIVATIVE_DTYPES",
    "FLOATS",
    "OPS",
    "OpInfo",
    "Sample",
    "carries_jaxprs",
    "in_axes_combinations",
    "sample_inputs",
]

OPS: list[OpInfo] = [
    entry
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    for entry in importlib.import_module(f"{__name__}.{module}").OPS
]
