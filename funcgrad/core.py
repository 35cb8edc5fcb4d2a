"""``funcgrad.core``: the IR and trace types that users of ``jax.core`` reach for.

Layer: surface. Re-exports names of the kernel (``funcgrad/kernel/ir.py`` and ``core.py``), where
they are defined and documented, and ``ensure_compile_time_eval`` (``funcgrad/_utilities.py``);
defines JAX's ``AbstractValue`` as the abstract base class of funcgrad's avals.

>>> import funcgrad, funcgrad.numpy as fnp
>>> closed = funcgrad.make_jaxpr(fnp.sin)(1.0)
>>> isinstance(closed, ClosedJaxpr), [e.primitive.name for e in closed.eqns]
(True, ['sin'])
"""

from __future__ import annotations

import abc
import contextlib
import operator
import warnings
from typing import Any

import numpy as np

import funcgrad as _funcgrad_package
from funcgrad._utilities import ensure_compile_time_eval
from funcgrad.kernel import core as _core
from funcgrad.kernel import dtypes as _dt
from funcgrad.kernel.array import Array as _Array
from funcgrad.kernel.core import (
    ConcretizationTypeError,
    EvalTrace,
    InconclusiveDimensionOperation,  # noqa: F401 - jax.core.InconclusiveDimensionOperation
    Primitive,
    Trace,
    Tracer,
    TracerBoolConversionError,
    UnexpectedTracerError,
    eval_jaxpr,
    get_aval,
)
from funcgrad.kernel.ir import AbstractToken as _AbstractToken
from funcgrad.kernel.ir import (
    ClosedJaxpr,
    Jaxpr,
    JaxprEqn,
    Literal,
    ShapedArray,
    Var,
    jaxprs_in_params,
    pp_jaxpr,
    typecheck_jaxpr,
)

__all__ = [
    "AbstractValue",
    "Atom",
    "ClosedJaxpr",
    "ConcretizationTypeError",
    "EvalTrace",
    "Jaxpr",
    "JaxprEqn",
    "Literal",
    "ParamDict",
    "Primitive",
    "ShapedArray",
    "Trace",
    "Tracer",
    "TracerBoolConversionError",
    "UnexpectedTracerError",
    "Value",
    "Var",
    "ensure_compile_time_eval",
    "eval_context",
    "eval_jaxpr",
    "get_aval",
    "jaxprs_in_params",
    "max_dim",
    "min_dim",
    "pp_jaxpr",
    "typecheck_jaxpr",
]


class AbstractValue(abc.ABC):  # noqa: B024 - a marker base: avals share no abstract method
    """The type of every abstract value: ``isinstance(aval, AbstractValue)`` holds for funcgrad's
    ``ShapedArray`` (registered as a virtual subclass, so the kernel's aval stays a plain class).

    >>> isinstance(ShapedArray((2,), "float32"), AbstractValue), isinstance(1.0, AbstractValue)
    (True, False)
    """


AbstractValue.register(ShapedArray)
AbstractValue.register(_AbstractToken)  # (a token's type is one too, as JAX's)

ParamDict = dict[str, Any]  # an equation's parameters
Value = Any  # a concrete value bound to a variable
Atom = Var | Literal  # an operand of an equation


@contextlib.contextmanager
def eval_context():
    """Inside the block, primitives are evaluated at once on concrete values, whatever
    transformation is active outside (JAX's ``eval_context``; ``ensure_compile_time_eval`` is the
    same with an error message for traced values).

    >>> import funcgrad, funcgrad.numpy as fnp
    >>> @funcgrad.jit
    ... def f(x):
    ...     with eval_context():
    ...         n = int(fnp.sum(fnp.ones(3)))
    ...     return x * n
    >>> float(f(2.0))
    6.0
    """
    with _core.set_current_trace(_core.EvalTrace(None)):
        yield


def _dim(d, fn: str, which: str):
    """``d`` as a dimension: an integer, or a symbolic one (``funcgrad.export``'s), else JAX's
    errors (a ConcretizationTypeError for a traced value, operator.index's TypeError)."""
    if hasattr(d, "rmax"):  # a symbolic dimension (funcgrad.export.symbolic_shape)
        return d
    if isinstance(d, _core.Tracer):
        raise _core.ConcretizationTypeError(
            f"argument `{which}` of `core.{fn}`: a concrete value is required, but got the traced value "
            f"{d.aval.str_short()}"
        )
    return operator.index(d)


def _extremum(d1, d2, fn: str):
    # (a size traced by a symbolic export computes it with its expression: max(b - 5, 0))
    op = "max" if fn == "max_dim" else "min"
    if hasattr(d1, "extremum"):
        return d1.extremum(d2, op)
    if hasattr(d2, "extremum"):
        return d2.extremum(d1, op, reverse=True)
    d1, d2 = _dim(d1, fn, "d1"), _dim(d2, fn, "d2")
    if hasattr(d1, "rmax"):
        return d1.max(d2) if fn == "max_dim" else d1.min(d2)
    if hasattr(d2, "rmax"):
        return d2.rmax(d1) if fn == "max_dim" else d2.rmin(d1)
    return max(d1, d2) if fn == "max_dim" else min(d1, d2)


def max_dim(d1, d2) -> int:
    """``max(d1, d2)`` of two dimension sizes, integers or symbolic ones (``funcgrad.export``'s):
    the larger where the comparison is decided for every value of the variables, else a symbolic
    ``max(...)``.

    >>> from funcgrad import export
    >>> a, b = export.symbolic_shape("a, b")
    >>> max_dim(3, 5), min_dim(3, 5), max_dim(a, a + 2), max_dim(a, b)
    (5, 3, a + 2, max(a, b))
    """
    return _extremum(d1, d2, "max_dim")


def min_dim(d1, d2) -> int:
    """``min(d1, d2)`` of two dimension sizes (see ``max_dim``)."""
    return _extremum(d1, d2, "min_dim")


# JAX's (deprecated) registry of how a Python type becomes an aval, which libraries extend for
# their own array proxies (TensorFlow Probability's JAX substrate maps its NumpyVariable to
# ndarray's entry at import). funcgrad's ``get_aval`` reads any value with ``__array__`` itself, so
# such a proxy works without its entry; the mapping holds the built-in types' entries, like
# ``interpreters.xla.canonicalize_dtype_handlers``.
pytype_aval_mappings: dict = {
    t: get_aval for t in (np.ndarray, _Array, *_dt.python_scalar_types, *set(np.sctypeDict.values()))
}


# Names JAX 0.10 still serves from ``jax.core`` with a DeprecationWarning ("Use
# jax.extend.core.X"): the same objects as ``funcgrad.extend.core``'s, resolved on first use
# (``funcgrad.extend.core`` imports this module). Libraries written for older JAX versions read
# them here: kfac-jax annotates its primitives' rules with ``jax.core.Effects``.
_EXTEND_CORE_NAMES = frozenset({
    "CallPrimitive", "DebugInfo", "DropVar", "Effect", "Effects", "JaxprTypeError", "check_jaxpr",
    "concrete_or_error", "find_top_trace", "gensym", "get_opaque_trace_state", "new_jaxpr_eqn",
    "no_effects", "nonempty_axis_env_DO_NOT_USE", "primal_dtype_to_tangent_dtype",
    "unsafe_am_i_under_a_jit_DO_NOT_USE", "unsafe_am_i_under_a_vmap_DO_NOT_USE",
    "unsafe_get_axis_names_DO_NOT_USE", "valid_jaxtype",
})  # fmt: skip


def __getattr__(name):
    if name in _EXTEND_CORE_NAMES:  # (JAX's warning, once a name: JAX's deprecation getattr is cached)
        message = f"jax.core.{name} is deprecated. Use jax.extend.core.{name}."
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        # funcgrad.extend.core sits above this module (it imports it): reach it through the packages'
        # own lazy loaders, the one lazy-loading route the layers allow.
        value = globals()[name] = getattr(_funcgrad_package.extend.core, name)
        return value
    raise AttributeError(f"module 'funcgrad.core' has no attribute '{name}'")


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
