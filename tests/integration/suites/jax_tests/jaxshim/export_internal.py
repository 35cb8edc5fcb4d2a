"""``jax._src.export.shape_poly`` and ``shape_poly_decision`` for JAX's test files (shape_poly_test,
export_test): funcgrad's symbolic dimensions under JAX's private names (``_DimExpr``,
``DimSize``, ``symbolic_shape``, ``SymbolicScope``, ...); the decision procedure's internals
(``_bounds_decision``, ``BoundsPrecision``, ``_DecisionByElimination``, ``_DimTerm``) are not
funcgrad's and fail only the tests that use them."""

from __future__ import annotations

import sys

import funcgrad.core
import funcgrad.errors
import funcgrad.export
from funcgrad.export import _safety, _shape_poly
from funcgrad.kernel import errors as _errors

from . import stubs

shape_poly = stubs.Internal("jax._src.export.shape_poly")
shape_poly.__path__ = []
shape_poly.__dict__.update(
    {
        "_DimExpr": _shape_poly.DimExpr,
        "DimSize": int | _shape_poly.DimExpr,
        "symbolic_shape": _shape_poly.symbolic_shape,
        "symbolic_args_specs": _shape_poly.symbolic_args_specs,
        "SymbolicScope": _shape_poly.SymbolicScope,
        "is_symbolic_dim": _shape_poly.is_symbolic_dim,
        "InconclusiveDimensionOperation": _shape_poly.InconclusiveDimensionOperation,
        "UnexpectedDimVar": _shape_poly.UnexpectedDimVar,
    }
)
shape_poly_decision = stubs.Internal("jax._src.export.shape_poly_decision")

# JAX's private Exported fields (its named shardings: funcgrad keeps the HLO shardings it is given)
# that JAX's export_back_compat harness passes to the constructor.
_PRIVATE_FIELDS = ("_has_named_shardings", "_in_named_shardings", "_out_named_shardings")


def _exported(**fields):
    for name in _PRIVATE_FIELDS:
        fields.pop(name, None)
    return funcgrad.export.Exported(**fields)


_export = stubs.Internal("jax._src.export._export")
_export.__dict__.update(
    {
        "Exported": _exported,
        "export": funcgrad.export.export,
        "DisabledSafetyCheck": funcgrad.export.DisabledSafetyCheck,
        "_CUSTOM_CALL_TARGETS_GUARANTEED_STABLE": _safety._STABLE_TARGETS,
    }
)

MODULES = {
    "jax._src.export.shape_poly": shape_poly,
    "jax._src.export.shape_poly_decision": shape_poly_decision,
    "jax._src.export._export": _export,
}


def _dimension_as_value(d):
    """JAX's ``core.dimension_as_value``: funcgrad traces at concrete sizes, so a dimension is
    already an integer there (or a symbolic one, returned as is)."""
    return d


def _definitely_equal(x, y) -> bool:
    if x is y:
        return True
    try:
        return bool(x == y)
    except _shape_poly.InconclusiveDimensionOperation:
        return False


def _dilate_dim(d, dilation):
    """JAX's ``core.dilate_dim``: ``max(0, 1 + dilation * (d - 1))``."""
    if _definitely_equal(dilation, 1):
        return d
    return funcgrad.core.max_dim(1 + dilation * (d - 1), 0)


def _stride_dim(d, window_size, window_stride):
    """JAX's ``core.stride_dim``: ``max(0, (d - window_size) // window_stride + 1)``."""
    return funcgrad.core.max_dim((d - window_size) // window_stride + 1, 0)


CORE = {
    "dimension_as_value": _dimension_as_value,
    "definitely_equal": _definitely_equal,
    "definitely_equal_one_of_dim": lambda d1, dlist: any(_definitely_equal(d1, d) for d in dlist),
    "dilate_dim": _dilate_dim,
    "stride_dim": _stride_dim,
    "is_symbolic_dim": _shape_poly.is_symbolic_dim,
    "Shape": tuple,
    "InconclusiveDimensionOperation": _errors.InconclusiveDimensionOperation,
    "ConcretizationTypeError": funcgrad.errors.ConcretizationTypeError,
}


def install() -> None:
    import jax._src.core as jcore  # the alias's

    for name, value in CORE.items():
        if not hasattr(jcore, name):
            setattr(jcore, name, value)
    package = sys.modules.get("jax._src.export")
    if package is None:
        package = stubs.Internal("jax._src.export")
        package.__path__ = []
        sys.modules["jax._src.export"] = package
    for name, module in MODULES.items():
        sys.modules.setdefault(name, module)
        setattr(package, name.rpartition(".")[2], sys.modules[name])
