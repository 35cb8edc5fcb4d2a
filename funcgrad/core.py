"""``funcgrad.core``: the IR and trace types that users of ``jax.core`` reach for.

Layer: surface. Re-exports names of the kernel (``funcgrad/kernel/ir.py`` and ``core.py``), where
they are defined and documented.

>>> import funcgrad, funcgrad.numpy as fnp
>>> closed = funcgrad.make_jaxpr(fnp.sin)(1.0)
>>> isinstance(closed, ClosedJaxpr), [e.primitive.name for e in closed.eqns]
(True, ['sin'])
"""

from __future__ import annotations

from funcgrad.kernel.core import (
    ConcretizationTypeError,
    EvalTrace,
    Primitive,
    Trace,
    Tracer,
    TracerBoolConversionError,
    UnexpectedTracerError,
    eval_jaxpr,
    get_aval,
)
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
    "ClosedJaxpr",
    "ConcretizationTypeError",
    "EvalTrace",
    "Jaxpr",
    "JaxprEqn",
    "Literal",
    "Primitive",
    "ShapedArray",
    "Trace",
    "Tracer",
    "TracerBoolConversionError",
    "UnexpectedTracerError",
    "Var",
    "eval_jaxpr",
    "get_aval",
    "jaxprs_in_params",
    "pp_jaxpr",
    "typecheck_jaxpr",
]


def __dir__():  # the public names only, not this module's imports and helpers
    return list(__all__)
